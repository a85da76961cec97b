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
#include <unistd.h>
#include <cmocka.h>

#include "lib/sink/rd_sink.h"
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
	struct rd_sink_meta m = meta(S_IFREG | 0644, 4);
	struct rd_sink_file *f;
	struct stat a, b;

	assert_int_equal(mk(s, "src", RC), 0);
	/* the group's first file, placed by this copy (RD_FF_LINKED) */
	assert_int_equal(rd_sink_file_begin(s, "src/f", 5, C, &m, &f), 0);
	rd_sink_file_link_first(f);
	assert_int_equal(rd_sink_file_write(f, "data", 4, 0), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	assert_int_equal(rd_sink_hardlink(s, "src/l", 5, C, "src/f", 5, 1), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/new/f"), &a), 0);
	assert_int_equal(stat(tp(x, "dest/new/l"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
