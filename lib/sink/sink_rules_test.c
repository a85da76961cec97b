// SPDX-License-Identifier: MIT
/*
 * rsync's rules at the receiver (issue 28): where entries land
 * (RD_SINK_RSYNC), what is compared and what is left (quick check and the
 * transfer rules), and a dry run that changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_mirror.h"
#include "lib/sink/sink_testutil.h"

#define R  RD_SINK_ROOT
#define RC (RD_SINK_ROOT | RD_SINK_CONTENTS)
#define C  RD_SINK_CONTENTS

static struct rd_sink *sopen_err(struct fx *x, const char *dest, unsigned flags, int want,
				 const char *msg)
{
	struct rd_sink *s = NULL;
	struct rd_err err;

	rd_err_clear(&err);
	assert_int_equal(rd_sink_open(&s, x->top_fd, dest, flags | x->extra, 022, &err), want);
	if (msg)
		assert_non_null(strstr(err.msg, msg));
	return s;
}

static mode_t mode_of(const char *p)
{
	struct stat st;

	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode;
}

/* "rdcp -r dir DEST": DEST is made and the directory goes inside; again: no nesting. */
static void test_dir_into_new_dest(void **state)
{
	struct fx *x = *state;
	int i;

	for (i = 0; i < 2; i++) {
		struct rd_sink *s = sopen(x, "dest/new", RD_SINK_RSYNC);

		assert_int_equal(mk(s, "dir", R), 0);
		assert_int_equal(put_file(s, "dir/f", 0, "abc", 0644), 0);
		assert_int_equal(post(s, "dir", 0), 0);
		assert_int_equal(rd_sink_fatal(s), 0);
		rd_sink_close(s);
		expect_listing(tp(x, "dest/new"), "dir");
		expect_listing(tp(x, "dest/new/dir"), "f");
	}
}

/* "rdcp -r dir/ DEST": DEST is the directory (its mode and time at POST). */
static void test_contents(void **state)
{
	struct fx *x = *state;
	int i;

	for (i = 0; i < 2; i++) {
		struct rd_sink *s = sopen(
		    x, "dest/new", RD_SINK_RSYNC | RD_SINK_PRESERVE_MODE | RD_SINK_PRESERVE_TIMES);
		struct stat st;

		assert_int_equal(mk(s, "dir", RC), 0);
		assert_int_equal(mk(s, "dir/sub", C), 0);
		assert_int_equal(put_file(s, "dir/sub/f", C, "abc", 0644), 0);
		assert_int_equal(put_file(s, "dir/g", C, "g", 0600), 0);
		assert_int_equal(post(s, "dir/sub", C), 0);
		assert_int_equal(post(s, "dir", C), 0);
		rd_sink_close(s);
		expect_listing(tp(x, "dest/new"), "g|sub");
		expect_content(tp(x, "dest/new/sub/f"), "abc");
		assert_int_equal(mode_of(tp(x, "dest/new")) & 07777, 0750);
		assert_int_equal(stat(tp(x, "dest/new"), &st), 0);
		assert_int_equal(st.st_mtim.tv_sec, 1234567890);
		assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	}
	/* two contents sources merge into one DEST */
	{
		struct rd_sink *s = sopen(x, "dest/new", RD_SINK_RSYNC | RD_SINK_DEST_DIR);

		assert_int_equal(mk(s, "other", RC), 0);
		assert_int_equal(put_file(s, "other/h", C, "h", 0644), 0);
		rd_sink_close(s);
		expect_listing(tp(x, "dest/new"), "g|h|sub");
	}
}

/* One file: DEST takes its name; with DEST_DIR ("dest/", several sources) it goes inside. */
static void test_file_rename_or_into(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest/f2", RD_SINK_RSYNC);

	assert_int_equal(put_file(s, "f", R, "one", 0644), 0);
	/* a second source after a rename: DEST is no directory */
	assert_int_equal(put_file(s, "g", R, "two", 0644), -RD_EUSAGE);
	rd_sink_close(s);
	expect_content(tp(x, "dest/f2"), "one");
	s = sopen(x, "dest/newdir", RD_SINK_RSYNC | RD_SINK_DEST_DIR);
	assert_int_equal(put_file(s, "f", R, "one", 0644), 0);
	assert_int_equal(put_file(s, "g", R, "two", 0644), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest/newdir"), "f|g");
	/* a trailing slash on DEST says the same */
	s = sopen(x, "dest/slash/", RD_SINK_RSYNC);
	assert_int_equal(put_file(s, "f", R, "one", 0644), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest/slash"), "f");
}

/* A non-directory DEST cannot take a directory: the whole transfer fails once. */
static void test_not_a_directory(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;

	put(tp(x, "dest/file"), "keep");
	s = sopen(x, "dest/file", RD_SINK_RSYNC);
	assert_int_equal(mk(s, "dir", R), -RD_EUSAGE);
	assert_int_equal(rd_sink_fatal(s), -RD_EUSAGE);
	assert_non_null(strstr(rd_sink_err(s)->msg, "not a directory"));
	assert_int_equal(put_file(s, "dir/f", 0, "x", 0644), -RD_EUSAGE);
	assert_int_equal(put_file(s, "g", R, "x", 0644), -RD_EUSAGE);
	rd_sink_close(s);
	expect_content(tp(x, "dest/file"), "keep");
	/* a file over it is fine (rename) */
	s = sopen(x, "dest/file", RD_SINK_RSYNC);
	assert_int_equal(put_file(s, "f", R, "new", 0644), 0);
	rd_sink_close(s);
	expect_content(tp(x, "dest/file"), "new");
	/* told it is a directory: refused at open */
	sopen_err(x, "dest/file", RD_SINK_RSYNC | RD_SINK_DEST_DIR, -RD_EUSAGE,
		  "is not a directory");
}

/* Only the last component is made; --mkpath makes the rest (beneath the root only). */
static void test_mkpath(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;

	sopen_err(x, "dest/a/b/c", RD_SINK_RSYNC, -RD_ENOENT, "dest/a/b/c");
	expect_listing(tp(x, "dest"), "");
	s = sopen(x, "dest/a/b/c", RD_SINK_RSYNC | RD_SINK_MKPATH);
	assert_int_equal(mk(s, "dir", R), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest/a/b/c"), "dir");
	/* a single file: the parents are made, the file takes the last name */
	s = sopen(x, "dest/p/q/file", RD_SINK_RSYNC | RD_SINK_MKPATH);
	assert_int_equal(put_file(s, "f", R, "x", 0644), 0);
	rd_sink_close(s);
	expect_content(tp(x, "dest/p/q/file"), "x");
	/* nothing is made for a transfer that never sends an entry */
	s = sopen(x, "dest/never/made", RD_SINK_RSYNC | RD_SINK_MKPATH);
	rd_sink_close(s);
	assert_int_equal(access(tp(x, "dest/never"), F_OK), -1);
	/* never through a symlink that leaves the root: refused at open */
	assert_int_equal(symlink(tp(x, "outside"), tp(x, "dest/out")), 0);
	{
		struct rd_err err;

		assert_true(rd_sink_open(&s, x->top_fd, "dest/out/x/y",
					 RD_SINK_RSYNC | RD_SINK_MKPATH | x->extra, 022, &err) < 0);
	}
	expect_listing(tp(x, "outside"), "");
}

/* A pull: contents only where asked for, whatever the server flags. */
static void test_pull_expect_contents(void **state)
{
	struct fx *x = *state;
	const char *names[] = {"want", "asis"};
	const unsigned char contents[] = {1, 0};
	struct rd_sink *s = sopen(x, "dest", RD_SINK_RSYNC);

	assert_int_equal(rd_sink_expect_roots(s, names, contents, 2), 0);
	/* asked "want/": placed as contents even with no flag (an older server) */
	assert_int_equal(mk(s, "want", R), 0);
	assert_int_equal(put_file(s, "want/a", 0, "a", 0644), 0);
	/* asked "asis": a CONTENTS flag on it is refused */
	assert_int_equal(mk(s, "asis", RC), -RD_EPROTO);
	assert_int_equal(mk(s, "asis", R), 0);
	assert_int_equal(put_file(s, "asis/.bashrc", C, "evil", 0644), -RD_EPROTO);
	assert_int_equal(put_file(s, "asis/b", 0, "b", 0644), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "a|asis");
	expect_listing(tp(x, "dest/asis"), "b");
	/* contents asked of something that is a file: refused */
	s = sopen(x, "dest", RD_SINK_RSYNC);
	assert_int_equal(rd_sink_expect_roots(s, names, contents, 1), 0);
	assert_int_equal(put_file(s, "want", RC, "x", 0644), -RD_EUSAGE);
	rd_sink_close(s);
	/* a nameless request ("." over ssh) for contents: any name, placed in DEST */
	{
		const char *nameless[] = {""};
		const unsigned char yes[] = {1};

		s = sopen(x, "dest", RD_SINK_RSYNC);
		assert_int_equal(rd_sink_expect_roots(s, nameless, yes, 1), 0);
		assert_int_equal(mk(s, "home", R), 0);
		assert_int_equal(put_file(s, "home/c", 0, "c", 0644), 0);
		assert_int_equal(put_file(s, "other", R, "x", 0644), -RD_EPROTO);
		rd_sink_close(s);
		expect_listing(tp(x, "dest"), "a|asis|c");
	}
}

/* -H: a link whose target lies under a contents source finds it. */
static void test_hardlink_under_contents(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest/new", RD_SINK_RSYNC);
	struct stat a, b;

	assert_int_equal(mk(s, "src", RC), 0);
	/* the group's first file, placed by this copy (RD_FF_LINKED) */
	assert_int_equal(put_group_file(s, "src/f", C, "data"), 0);
	assert_int_equal(rd_sink_hardlink(s, "src/l", 5, C, "src/f", 5, 1), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/new/f"), &a), 0);
	assert_int_equal(stat(tp(x, "dest/new/l"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
}

/* --- quick check and transfer rules --- */

static void set_mtime(const char *p, int64_t sec, long nsec)
{
	struct timespec ts[2] = {{(time_t)sec, nsec}, {(time_t)sec, nsec}};

	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static struct rd_sink *sel_open(struct fx *x, unsigned flags, const struct rd_sink_select *sel)
{
	struct rd_sink *s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_PRESERVE_TIMES | flags);

	rd_sink_set_select(s, sel);
	return s;
}

static const struct rd_sink_select quick = {
    .compare = RD_SINK_CMP_QUICK, .modify_window = RD_SINK_WINDOW_NS, .max_size = UINT64_MAX};

static int check(struct rd_sink *s, const char *path, uint64_t size, int64_t sec, uint32_t nsec)
{
	struct rd_sink_meta m = meta(S_IFREG | 0644, size);

	m.mtime_sec = sec;
	m.mtime_nsec = nsec;
	return rd_sink_file_check(s, path, strlen(path), strchr(path, '/') ? 0 : R, &m);
}

/*
 * -H on a rerun: a group's first file the quick check (or a transfer
 * rule) left as it is still takes its links, as rsync's do; a file that
 * was only there, never an entry of the copy, still takes none.
 */
static void test_hardlink_to_kept(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select ign = quick;
	struct rd_sink *s = sel_open(x, 0, &quick);
	struct stat a, b;

	put(tp(x, "dest/f"), "xyz");
	set_mtime(tp(x, "dest/f"), 1234567890, 123456789);
	put(tp(x, "dest/old"), "old");
	assert_int_equal(check(s, "f", 3, 1234567890, 123456789), RD_SINK_SAME);
	rd_sink_link_kept(s, "f", 1, R);
	assert_int_equal(rd_sink_hardlink(s, "l", 1, R, "f", 1, 0), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_HLINK);
	assert_int_equal(stat(tp(x, "dest/f"), &a), 0);
	assert_int_equal(stat(tp(x, "dest/l"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	/* a link of the group already: nothing changes */
	assert_int_equal(rd_sink_hardlink(s, "l", 1, R, "f", 1, 1), 0);
	assert_int_equal(rd_sink_items(s), 0);
	/* "old" was never an entry of this copy: no link to it */
	assert_int_equal(rd_sink_hardlink(s, "m", 1, R, "old", 3, 1), -RD_ESYS);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "f|l|old");
	/* --ignore-existing leaves the file (another size): its links follow it */
	ign.ignore_existing = 1;
	s = sel_open(x, 0, &ign);
	assert_int_equal(check(s, "old", 9, 1, 0), RD_SINK_LEAVE);
	rd_sink_link_kept(s, "old", 3, R);
	assert_int_equal(rd_sink_hardlink(s, "m", 1, R, "old", 3, 1), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/old"), &a), 0);
	assert_int_equal(stat(tp(x, "dest/m"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
}

/* Same size and mtime: the file is there (its data never read); else it is sent. */
static void test_quick_check(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sel_open(x, RD_SINK_PRESERVE_MODE, &quick);
	struct stat st;

	put(tp(x, "dest/f"), "xyz"); /* other bytes, same size: the quick check cannot tell */
	assert_int_equal(chmod(tp(x, "dest/f"), 0644), 0);
	set_mtime(tp(x, "dest/f"), 1234567890, 123456789);
	assert_int_equal(check(s, "f", 3, 1234567890, 123456789), RD_SINK_SAME);
	assert_int_equal(rd_sink_items(s), 0);
	expect_content(tp(x, "dest/f"), "xyz");
	/* the nanoseconds differ: sent */
	assert_int_equal(check(s, "f", 3, 1234567890, 5), RD_SINK_SEND);
	assert_int_equal(rd_sink_items(s), RD_IT_TIME);
	/* one side without nanoseconds: the second decides */
	assert_int_equal(check(s, "f", 3, 1234567890, 0), RD_SINK_SAME);
	/* another size */
	assert_int_equal(check(s, "f", 4, 1234567890, 123456789), RD_SINK_SEND);
	assert_int_equal(rd_sink_items(s), RD_IT_SIZE);
	/* new */
	assert_int_equal(check(s, "g", 4, 1, 0), RD_SINK_SEND);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW);
	/* same data, another mode: only the mode changes (-p) */
	assert_int_equal(chmod(tp(x, "dest/f"), 0600), 0);
	assert_int_equal(check(s, "f", 3, 1234567890, 123456789), RD_SINK_SAME);
	assert_int_equal(rd_sink_items(s), RD_IT_PERMS);
	assert_int_equal(stat(tp(x, "dest/f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	expect_content(tp(x, "dest/f"), "xyz");
	rd_sink_close(s);
	/* without -p the mode of what is there stays */
	assert_int_equal(chmod(tp(x, "dest/f"), 0600), 0);
	s = sel_open(x, 0, &quick);
	assert_int_equal(check(s, "f", 3, 1234567890, 123456789), RD_SINK_SAME);
	assert_int_equal(rd_sink_items(s), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* --modify-window, --size-only, -c */
static void test_compare_modes(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select sel = quick;
	struct rd_sink *s;
	struct stat st;

	put(tp(x, "dest/f"), "abc");
	set_mtime(tp(x, "dest/f"), 1000, 0);
	sel.modify_window = 0; /* rsync's default: whole seconds */
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "f", 3, 1000, 999999999), RD_SINK_SAME);
	assert_int_equal(check(s, "f", 3, 1001, 0), RD_SINK_SEND);
	rd_sink_close(s);
	sel.modify_window = 2;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "f", 3, 1002, 0), RD_SINK_SAME);
	assert_int_equal(check(s, "f", 3, 997, 0), RD_SINK_SEND);
	rd_sink_close(s);
	/* --size-only: another time is no reason to send; the time is set (rsync -t) */
	sel = quick;
	sel.compare = RD_SINK_CMP_SIZE;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "f", 3, 5000, 7), RD_SINK_SAME);
	assert_int_equal(rd_sink_items(s), RD_IT_TIME);
	assert_int_equal(stat(tp(x, "dest/f"), &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 5000);
	assert_int_equal(st.st_mtim.tv_nsec, 7);
	assert_int_equal(check(s, "f", 4, 5000, 7), RD_SINK_SEND);
	rd_sink_close(s);
	/* -c: always compared by contents (the engine's SUMs), never on stat alone */
	sel.compare = RD_SINK_CMP_CHECKSUM;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "f", 3, 5000, 7), RD_SINK_SEND);
	rd_sink_close(s);
	/* no select (an older client): as before, every file is begun */
	s = sopen(x, "dest", RD_SINK_RSYNC);
	assert_int_equal(check(s, "f", 3, 5000, 7), RD_SINK_SEND);
	rd_sink_close(s);
}

/* -u, --ignore-existing, --existing, --max-size, --min-size: left, as rsync's generator. */
static void test_transfer_rules(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select sel = quick;
	struct rd_sink *s;

	put(tp(x, "dest/f"), "abc");
	set_mtime(tp(x, "dest/f"), 2000, 500);
	sel.update = 1;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "f", 9, 1999, 0), RD_SINK_LEAVE); /* newer here */
	assert_int_equal(rd_sink_items(s), RD_IT_SKIPPED);
	assert_int_equal(check(s, "f", 9, 2000, 400), RD_SINK_LEAVE);
	assert_int_equal(check(s, "f", 9, 2000, 500), RD_SINK_SEND); /* same time, other size */
	assert_int_equal(check(s, "f", 3, 2001, 0), RD_SINK_SEND);   /* older here */
	rd_sink_close(s);
	sel = quick;
	sel.ignore_existing = 1;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "f", 9, 3000, 0), RD_SINK_LEAVE);
	assert_int_equal(check(s, "new", 9, 3000, 0), RD_SINK_SEND);
	rd_sink_close(s);
	sel = quick;
	sel.existing = 1;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "new", 9, 3000, 0), RD_SINK_LEAVE);
	assert_int_equal(check(s, "nodir/x", 9, 3000, 0), RD_SINK_LEAVE);
	assert_int_equal(check(s, "f", 9, 3000, 0), RD_SINK_SEND);
	rd_sink_close(s);
	sel = quick;
	sel.max_size = 5;
	sel.min_size = 2;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "new", 6, 3000, 0), RD_SINK_LEAVE);
	assert_int_equal(check(s, "new", 1, 3000, 0), RD_SINK_LEAVE);
	assert_int_equal(check(s, "new", 5, 3000, 0), RD_SINK_SEND);
	assert_int_equal(check(s, "f", 6, 3000, 0), RD_SINK_LEAVE);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "f");
	expect_content(tp(x, "dest/f"), "abc");
}

/* A rerun over what is there changes nothing: symlinks, directories, specials. */
static void test_unchanged_entries(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sel_open(x, RD_SINK_PRESERVE_MODE | RD_SINK_SPECIALS, &quick);
	struct rd_sink_meta lm = meta(S_IFLNK | 0777, 0), dm = meta(S_IFDIR | 0750, 0);
	struct rd_sink_meta fm = meta(S_IFIFO | 0640, 0);
	struct stat a, b;

	assert_int_equal(rd_sink_symlink(s, "l", 1, R, "target", 6, &lm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(lstat(tp(x, "dest/l"), &a), 0);
	assert_int_equal(rd_sink_symlink(s, "l", 1, R, "target", 6, &lm), 0);
	assert_int_equal(rd_sink_items(s), 0);
	assert_int_equal(lstat(tp(x, "dest/l"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino); /* kept, not made again */
	assert_int_equal(rd_sink_symlink(s, "l", 1, R, "other", 5, &lm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_LOCAL | RD_IT_CHANGE);
	assert_int_equal(rd_sink_mkdir(s, "d", 1, R, &dm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(rd_sink_dir_post(s, "d", 1, 0, &dm), 0);
	assert_int_equal(rd_sink_items(s), 0); /* a directory says it all at its mkdir */
	assert_int_equal(rd_sink_mkdir(s, "d", 1, R, &dm), 0);
	assert_int_equal(rd_sink_items(s), 0);
	assert_int_equal(rd_sink_dir_post(s, "d", 1, 0, &dm), 0);
	dm.mtime_sec++;
	assert_int_equal(rd_sink_mkdir(s, "d", 1, R, &dm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_TIME); /* judged before what goes in it */
	assert_int_equal(rd_sink_dir_post(s, "d", 1, 0, &dm), 0);
	assert_int_equal(stat(tp(x, "dest/d"), &a), 0);
	assert_int_equal(a.st_mtim.tv_sec, dm.mtime_sec);
	assert_int_equal(rd_sink_special(s, "p", 1, R, &fm, 0), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(lstat(tp(x, "dest/p"), &a), 0);
	assert_int_equal(rd_sink_special(s, "p", 1, R, &fm, 0), 0);
	assert_int_equal(rd_sink_items(s), 0);
	assert_int_equal(lstat(tp(x, "dest/p"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	rd_sink_close(s);
}

/*
 * rsync's type changes: a file or symlink where a directory goes is
 * replaced, an empty directory where a file or symlink goes too; a full
 * one stays and the entry fails ("cannot delete non-empty directory").
 */
static void test_type_changes(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sel_open(x, 0, &quick);
	struct rd_sink_meta lm = meta(S_IFLNK | 0777, 0);

	put(tp(x, "dest/f2d"), "file");
	assert_int_equal(symlink("../outside", tp(x, "dest/l2d")), 0);
	assert_int_equal(mkdir(tp(x, "dest/e2f"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "dest/e2l"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "dest/full"), 0755), 0);
	put(tp(x, "dest/full/keep"), "k");
	assert_int_equal(mk(s, "f2d", R), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_true(S_ISDIR(mode_of(tp(x, "dest/f2d"))));
	assert_int_equal(mk(s, "l2d", R), 0);
	assert_true(S_ISDIR(mode_of(tp(x, "dest/l2d"))));
	assert_int_equal(put_file(s, "l2d/in", 0, "in", 0644), 0); /* not in ../outside */
	expect_listing(tp(x, "outside"), "");
	assert_int_equal(put_file(s, "e2f", R, "now a file", 0644), 0);
	expect_content(tp(x, "dest/e2f"), "now a file");
	assert_int_equal(rd_sink_symlink(s, "e2l", 3, R, "t", 1, &lm), 0);
	assert_true(S_ISLNK(mode_of(tp(x, "dest/e2l"))));
	assert_int_equal(put_file(s, "full", R, "x", 0644), -RD_ESYS);
	assert_non_null(strstr(rd_sink_err(s)->msg, "non-empty directory"));
	expect_content(tp(x, "dest/full/keep"), "k");
	rd_sink_close(s);
	/* without rsync's rules (an older client): refused as before */
	s = sopen(x, "dest", 0);
	assert_int_equal(mk(s, "e2f", R), -RD_ESYS);
	rd_sink_close(s);
}

/* --existing and --ignore-existing hold for directories, links and nodes too. */
static void test_rules_every_type(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select sel = quick;
	struct rd_sink_meta lm = meta(S_IFLNK | 0777, 0), pm = meta(S_IFIFO | 0644, 0);
	struct rd_sink *s;

	put(tp(x, "dest/f"), "file");
	assert_int_equal(mkdir(tp(x, "dest/d"), 0755), 0);
	sel.existing = 1;
	s = sel_open(x, RD_SINK_SPECIALS, &sel);
	assert_int_equal(mk(s, "nd", R), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_SKIPPED);
	assert_int_equal(mk(s, "nd/sub", 0), 0); /* beneath what was not made: left too */
	assert_int_equal(post(s, "nd/sub", 0), 0);
	assert_int_equal(post(s, "nd", R), 0);
	assert_int_equal(rd_sink_symlink(s, "nl", 2, R, "t", 1, &lm), 0);
	assert_int_equal(rd_sink_special(s, "np", 2, R, &pm, 0), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_SKIPPED);
	assert_int_equal(mk(s, "d", R), 0);
	assert_int_equal(rd_sink_items(s) & (RD_IT_NEW | RD_IT_SKIPPED), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "d|f");
	sel = quick;
	sel.ignore_existing = 1;
	s = sel_open(x, RD_SINK_SPECIALS, &sel);
	assert_int_equal(mk(s, "f", R), 0); /* a directory where a file is: left */
	assert_int_equal(rd_sink_items(s), RD_IT_SKIPPED);
	assert_int_equal(rd_sink_symlink(s, "d", 1, R, "t", 1, &lm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_SKIPPED);
	assert_int_equal(mk(s, "d", R), 0); /* a directory over a directory goes ahead */
	assert_int_equal(rd_sink_items(s) & (RD_IT_NEW | RD_IT_SKIPPED), 0);
	assert_int_equal(rd_sink_symlink(s, "nl", 2, R, "t", 1, &lm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "d|f|nl");
	expect_content(tp(x, "dest/f"), "file");
}

/* -n: each entry says what it would do, and nothing at all changes. */
static void test_dry_run(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select sel = quick;
	struct rd_sink_meta lm = meta(S_IFLNK | 0777, 0), pm = meta(S_IFIFO | 0644, 0);
	struct rd_sink_meta dm = meta(S_IFDIR | 0700, 0);
	struct rd_sink_file *f = NULL;
	struct rd_sink *s;
	struct stat a, b;

	put(tp(x, "dest/f"), "file");
	set_mtime(tp(x, "dest/f"), 1000, 0);
	assert_int_equal(mkdir(tp(x, "dest/d"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "dest/e"), 0755), 0);
	assert_int_equal(symlink("t", tp(x, "dest/l")), 0);
	assert_int_equal(stat(tp(x, "dest"), &a), 0);
	sel.dry_run = 1;
	s = sel_open(x, RD_SINK_SPECIALS | RD_SINK_PRESERVE_MODE, &sel);
	assert_int_equal(mk(s, "nd", R), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(mk(s, "nd/sub", 0), 0); /* beneath a directory that would be made */
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(check(s, "nd/sub/x", 3, 1000, 0), RD_SINK_SEND);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW);
	assert_int_equal(rd_sink_file_begin(s, "nd/sub/x", 8, 0, &lm, &f), -RD_EUSAGE);
	assert_int_equal(post(s, "nd/sub", 0), 0);
	assert_int_equal(rd_sink_items(s), 0);
	assert_int_equal(check(s, "f", 9, 1000, 0), RD_SINK_SEND);
	assert_int_equal(rd_sink_items(s) & (RD_IT_NEW | RD_IT_SIZE), RD_IT_SIZE);
	assert_int_equal(check(s, "f", 4, 1000, 0), RD_SINK_SAME);
	assert_int_equal(mk(s, "f", R), 0); /* a directory would replace the file */
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(rd_sink_mkdir(s, "d", 1, R, &dm), 0); /* judged at mkdir */
	assert_true(rd_sink_items(s) & RD_IT_PERMS);
	assert_int_equal(rd_sink_symlink(s, "l", 1, R, "u", 1, &lm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_LOCAL | RD_IT_CHANGE | RD_IT_TIME);
	assert_int_equal(rd_sink_symlink(s, "e", 1, R, "u", 1, &lm), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL); /* over a directory */
	assert_int_equal(rd_sink_special(s, "p", 1, R, &pm, 0), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(rd_sink_hardlink(s, "h", 1, R, "f", 1, 1), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_HLINK);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "d|e|f|l");
	expect_content(tp(x, "dest/f"), "file");
	assert_int_equal((int)(mode_of(tp(x, "dest/d")) & 07777), 0755);
	assert_int_equal(stat(tp(x, "dest"), &b), 0);
	assert_int_equal(a.st_mtime, b.st_mtime);
	/* a missing destination is not made, nor --mkpath's parents */
	s = sopen(x, "dest/no/such/", RD_SINK_RSYNC | RD_SINK_MKPATH);
	rd_sink_set_select(s, &sel);
	assert_int_equal(mk(s, "top", RC), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	assert_int_equal(mk(s, "top/a", C), 0);
	assert_int_equal(rd_sink_items(s), RD_IT_NEW | RD_IT_LOCAL);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "d|e|f|l");
}

static void said_cb(void *ctx, unsigned flags, const char *rel, size_t len, const char *text)
{
	char *said = ctx;
	size_t n = strlen(said);

	(void)text;
	snprintf(said + n, 256 - n, "%s%.*s|", flags & RD_DLF_FAILED ? "F " : "", (int)len, rel);
}

/* A dry run's sink with deletion on (--delete, max_delete), reports into said[256]. */
static struct rd_sink *dry_del_open(struct fx *x, const struct rd_sink_select *sel, int64_t max,
				    char *said)
{
	struct rd_sink *s = sel_open(x, 0, sel);
	struct rd_mirror_opts o;

	memset(&o, 0, sizeof(o));
	o.delete = o.force = o.dry_run = 1;
	o.max_delete = max;
	o.report = said_cb;
	o.ctx = said;
	said[0] = '\0';
	assert_int_equal(rd_sink_mirror_start(s, &o), 0);
	return s;
}

/*
 * -n, a full directory where a file goes: the entry fails as the real run
 * would (rsync: "could not make way"); with --delete its contents are
 * listed as they would go, the directory itself not (rsync -n -i), unless
 * something inside would stay (here --max-delete=0).
 */
static void test_dry_run_way(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select sel = quick;
	struct rd_sink *s;
	char said[256];

	assert_int_equal(mkdir(tp(x, "dest/full"), 0755), 0);
	put(tp(x, "dest/full/a"), "a");
	assert_int_equal(mkdir(tp(x, "dest/empty"), 0755), 0);
	sel.dry_run = 1;
	s = sel_open(x, 0, &sel);
	assert_int_equal(check(s, "empty", 3, 1000, 0), RD_SINK_SEND);
	assert_int_equal(check(s, "full", 3, 1000, 0), -RD_ESYS);
	assert_non_null(strstr(rd_sink_err(s)->msg, "non-empty directory in its way"));
	rd_sink_close(s);
	s = dry_del_open(x, &sel, -1, said);
	assert_int_equal(check(s, "full", 3, 1000, 0), RD_SINK_SEND);
	assert_string_equal(said, "full/a|");
	rd_sink_close(s);
	s = dry_del_open(x, &sel, 0, said);
	assert_int_equal(check(s, "full", 3, 1000, 0), -RD_ESYS);
	assert_string_equal(said, "F full|"); /* "cannot delete non-empty directory" */
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "empty|full");
	expect_listing(tp(x, "dest/full"), "a");
}

/*
 * -n -c: rd_sink_file_compare() gives a handle that reads the regular
 * file of the same size under the name and nothing else: writes, copies
 * and the commit (keep too: no attribute changes) fail; what is not such
 * a file (another size or type, a symlink, nothing, beneath a directory
 * that would be made) is 1 (it would be sent); only in a dry run.
 */
static void test_dry_run_compare(void **state)
{
	struct fx *x = *state;
	struct rd_sink_select sel = quick;
	struct rd_sink_meta m = meta(S_IFREG | 0600, 4);
	struct rd_sink_file *f = NULL;
	struct rd_sink *s;
	struct stat a, b, fa, fb;
	char buf[8] = "";

	put(tp(x, "dest/f"), "file");
	set_mtime(tp(x, "dest/f"), 1000, 0);
	assert_int_equal(mkdir(tp(x, "dest/d"), 0755), 0);
	assert_int_equal(symlink("f", tp(x, "dest/l")), 0);
	assert_int_equal(mkfifo(tp(x, "dest/p"), 0644), 0);
	assert_int_equal(stat(tp(x, "dest"), &a), 0);
	assert_int_equal(stat(tp(x, "dest/f"), &fa), 0);
	sel.compare = RD_SINK_CMP_CHECKSUM;
	s = sel_open(x, RD_SINK_PRESERVE_MODE, &sel);
	assert_int_equal(rd_sink_file_compare(s, "f", 1, R, &m, &f), -RD_EUSAGE);
	assert_null(f);
	rd_sink_close(s);
	sel.dry_run = 1;
	s = sel_open(x, RD_SINK_PRESERVE_MODE, &sel);
	assert_int_equal(rd_sink_file_compare(s, "f", 1, R, &m, &f), 0);
	assert_non_null(f);
	assert_true(rd_sink_file_has_existing(f));
	assert_int_equal(rd_sink_file_items(f), RD_IT_TIME | RD_IT_PERMS);
	assert_int_equal(rd_sink_file_pread(f, 1, buf, 4, 0), 0);
	assert_memory_equal(buf, "file", 4);
	/* no partial; no chunking set */
	assert_int_equal(rd_sink_file_pread(f, 0, buf, 4, 0), -EBADF);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE);
	assert_true(rd_sink_file_write(f, "FILE", 4, 0) < 0);
	assert_int_equal(rd_sink_file_pwrite(f, "FILE", 4, 0), -EBADF);
	assert_true(rd_sink_file_copy_existing(f, 0, 4) < 0);
	assert_true(rd_sink_file_seal(f) < 0);
	assert_true(rd_sink_file_commit(f, 1) < 0); /* frees it */
	assert_int_equal(rd_sink_file_compare(s, "f", 1, R, &m, &f), 0);
	rd_sink_file_abort(f);
	m.size = 9;
	assert_int_equal(rd_sink_file_compare(s, "f", 1, R, &m, &f), 1);
	m.size = 1;
	assert_int_equal(rd_sink_file_compare(s, "l", 1, R, &m, &f), 1);
	m.size = 0;
	assert_int_equal(rd_sink_file_compare(s, "p", 1, R, &m, &f), 1);
	assert_int_equal(rd_sink_file_compare(s, "d", 1, R, &m, &f), 1);
	assert_int_equal(rd_sink_file_compare(s, "none", 4, R, &m, &f), 1);
	assert_int_equal(mk(s, "nd", R), 0); /* would be made */
	assert_int_equal(rd_sink_file_compare(s, "nd/x", 4, 0, &m, &f), 1);
	assert_null(f);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "d|f|l|p");
	expect_content(tp(x, "dest/f"), "file");
	assert_int_equal(stat(tp(x, "dest"), &b), 0);
	assert_int_equal(stat(tp(x, "dest/f"), &fb), 0);
	assert_memory_equal(&a.st_mtim, &b.st_mtim, sizeof(a.st_mtim));
	assert_memory_equal(&a.st_ctim, &b.st_ctim, sizeof(a.st_ctim));
	assert_memory_equal(&fa.st_ctim, &fb.st_ctim, sizeof(fa.st_ctim));
	assert_int_equal(fb.st_mtime, 1000);
	assert_int_equal((int)(fb.st_mode & 07777), (int)(fa.st_mode & 07777));
}

static const unsigned fallback = RD_SINK_TEST_NO_OPENAT2 | RD_SINK_TEST_NO_TMPFILE;

#define BOTH(t)                                              \
	cmocka_unit_test_setup_teardown(t, setup, teardown), \
	    cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, (void *)&fallback)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    BOTH(test_dir_into_new_dest),
	    BOTH(test_contents),
	    BOTH(test_file_rename_or_into),
	    BOTH(test_not_a_directory),
	    BOTH(test_mkpath),
	    BOTH(test_pull_expect_contents),
	    BOTH(test_hardlink_under_contents),
	    BOTH(test_hardlink_to_kept),
	    BOTH(test_quick_check),
	    BOTH(test_compare_modes),
	    BOTH(test_transfer_rules),
	    BOTH(test_unchanged_entries),
	    BOTH(test_type_changes),
	    BOTH(test_rules_every_type),
	    BOTH(test_dry_run),
	    BOTH(test_dry_run_way),
	    BOTH(test_dry_run_compare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
