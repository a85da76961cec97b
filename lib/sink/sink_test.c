// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/sink/rd_sink.h"
#include "lib/sink/sink_testutil.h"

static void test_sink_into_mode(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_PRESERVE_MODE);
	struct stat st;

	assert_int_equal(mk(s, "d", 1), 0);
	assert_int_equal(mk(s, "d/sub", 0), 0);
	assert_int_equal(put_file(s, "d/sub/x", 0, "abc", 0644), 0);
	assert_int_equal(put_file(s, "d/y z\n\xff", 0, "", 0600), 0);
	assert_int_equal(post(s, "d/sub", 0), 0);
	assert_int_equal(post(s, "d", 0), 0);
	assert_int_equal(put_file(s, "top.txt", 1, "T", 0644), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "d|top.txt");
	expect_listing(tp(x, "dest/d"), "sub|y z\n\xff");
	expect_content(tp(x, "dest/d/sub/x"), "abc");
	expect_content(tp(x, "dest/top.txt"), "T");
	assert_int_equal(stat(tp(x, "dest/d"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
}

static void test_sink_rename_mode(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest/newname", 0);
	struct rd_err err;

	assert_int_equal(mk(s, "d", 1), 0);
	assert_int_equal(put_file(s, "d/x", 0, "abc", 0644), 0);
	/* not under the root that was renamed */
	assert_int_equal(put_file(s, "other/x", 0, "abc", 0644), -RD_EPROTO);
	assert_int_equal(post(s, "d", 0), 0);
	assert_int_equal(mk(s, "e", 1), -RD_EUSAGE);
	assert_non_null(
	    strstr(rd_sink_err(s)->msg, "destination dest/newname: is not a directory"));
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "newname");
	expect_content(tp(x, "dest/newname/x"), "abc");

	/* a single file gets the destination's name */
	s = sopen(x, "dest/f.txt", 0);
	assert_int_equal(put_file(s, "src.txt", 1, "F", 0644), 0);
	assert_int_equal(put_file(s, "second.txt", 1, "F", 0644), -RD_EUSAGE);
	rd_sink_close(s);
	expect_content(tp(x, "dest/f.txt"), "F");
	expect_listing(tp(x, "dest"), "f.txt|newname");

	/* a directory root onto an existing file */
	s = sopen(x, "dest/f.txt", 0);
	assert_true(mk(s, "d", 1) < 0);
	assert_non_null(strstr(rd_sink_err(s)->msg, "not a directory"));
	rd_sink_close(s);
	expect_content(tp(x, "dest/f.txt"), "F");

	/* the parent must exist; ".." and absolute destinations are refused */
	assert_true(rd_sink_open(&s, x->top_fd, "nope/x", 0, 022, &err) < 0);
	assert_null(s);
	assert_non_null(strstr(err.msg, "nope/x"));
	assert_int_equal(rd_sink_open(&s, x->top_fd, "dest/../x", 0, 022, &err), -RD_EUSAGE);
	assert_int_equal(rd_sink_open(&s, x->top_fd, "/etc", 0, 022, &err), -RD_EUSAGE);
	rd_sink_close(NULL);
}

static void test_sink_file_meta(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_PRESERVE_MODE | RD_SINK_PRESERVE_TIMES);
	mode_t um = umask(022);
	struct stat st;

	umask(um);
	assert_int_equal(put_file(s, "p", 1, "12345", 0640), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/p"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, 5);
	assert_int_equal(st.st_mtim.tv_sec, 1234567890);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	assert_int_equal(st.st_atim.tv_sec, 1234567890);

	s = sopen(x, "dest", RD_SINK_FSYNC);
	assert_int_equal(put_file(s, "q", 1, "1", 0666), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/q"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666 & ~um);
	assert_true(st.st_mtim.tv_sec != 1234567890);
}

static void put_owned(struct rd_sink *s, const char *path)
{
	struct rd_sink_meta m = meta(S_IFREG | 06755, 1);
	struct rd_sink_file *f;

	m.uid = 1234;
	m.gid = 2345;
	assert_int_equal(rd_sink_file_begin(s, path, strlen(path), 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "x", 1, 0), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
}

/*
 * Issue 7 items 2 and 4: PRESERVE_MODE keeps permission bits, never
 * setuid/setgid; those need PRESERVE_OWNER (root). Owner and group are
 * kept each only with its own flag.
 */
static void test_sink_owner_policy(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;
	struct stat st;
	int fd;

	/* chown needs root and ids mapped in this namespace (not so in the
	 * Bazel sandbox); tests/hostile runs these cases as root in the rig */
	fd = open(tp(x, "probe"), O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	if (fchown(fd, 1234, 2345) < 0) {
		close(fd);
		unlink(tp(x, "probe"));
		skip();
	}
	close(fd);
	unlink(tp(x, "probe"));
	s = sopen(x, "dest", RD_SINK_PRESERVE_MODE);
	put_owned(s, "p");
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/p"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);

	s = sopen(x, "dest", RD_SINK_PRESERVE_MODE | RD_SINK_PRESERVE_GROUP);
	put_owned(s, "pg");
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/pg"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 2345);

	s = sopen(x, "dest",
		  RD_SINK_PRESERVE_MODE | RD_SINK_PRESERVE_OWNER | RD_SINK_PRESERVE_GROUP);
	put_owned(s, "pog");
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/pog"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 06755);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 2345);

	s = sopen(x, "dest", RD_SINK_PRESERVE_OWNER); /* owner without -p: umask modes */
	put_owned(s, "o");
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/o"), &st), 0);
	assert_int_equal(st.st_mode & 07000, 0);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 0);
}

/*
 * Issue 7 item 9: the umask is the one given to rd_sink_open, read once at
 * start; opening a sink never changes the process umask.
 */
static void test_sink_umask_given(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;
	struct rd_err err;
	struct stat st;
	mode_t before = umask(027), after;

	assert_int_equal(rd_sink_open(&s, x->top_fd, "dest", 0, 077, &err), 0);
	after = umask(before);
	assert_int_equal(after, 027); /* untouched */
	assert_int_equal(put_file(s, "u", 1, "1", 0666), 0);
	assert_int_equal(mk(s, "ud", 1), 0);
	assert_int_equal(post(s, "ud", 0), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/u"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(tp(x, "dest/ud"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
}

/* Offsets past 4 GiB: a sparse 5 GiB file with data at its end. */
static void test_sink_large_offset(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	uint64_t size = (5ull << 30) + 3;
	struct rd_sink_meta m = meta(S_IFREG | 0644, size);
	struct rd_sink_file *f;
	struct stat st;
	char buf[3];
	int fd;

	assert_int_equal(rd_sink_file_begin(s, "big", 3, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "xyz", 3, size - 3), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/big"), &st), 0);
	assert_true((uint64_t)st.st_size == size);
	fd = open(tp(x, "dest/big"), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 3, (off_t)(size - 3)), 3);
	assert_memory_equal(buf, "xyz", 3);
	close(fd);
}

/*
 * A directory's POST can come after siblings were created (the engine
 * defers it until older files are done): it must still get its mode.
 */
static void test_sink_deferred_post(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	mode_t um = umask(022);
	struct stat st;

	umask(um);
	assert_int_equal(mk(s, "r", 1), 0);
	assert_int_equal(mk(s, "r/a", 0), 0);
	assert_int_equal(mk(s, "r/b", 0), 0); /* before r/a's POST */
	assert_int_equal(post(s, "r/a", 0), 0);
	assert_int_equal(post(s, "r/b", 0), 0);
	assert_int_equal(post(s, "r", 0), 0);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/r/a"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0750 & ~um);
	assert_int_equal(stat(tp(x, "dest/r/b"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0750 & ~um);
}

/* A pull accepts only the top-level entries it asked for (CVE-2019-6111). */
static void test_sink_expect_roots(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	const char *names[] = {"want", "any"};
	const char *nameless[] = {"want", ""};

	/* issue 7 item 3: into an existing directory "" is never "any name" */
	assert_int_equal(rd_sink_expect_roots(s, nameless, NULL, 2), -RD_EUSAGE);
	assert_non_null(strstr(rd_sink_err(s)->msg, "names no file"));
	assert_int_equal(rd_sink_expect_roots(s, names, NULL, 2), 0);
	assert_int_equal(put_file(s, "want", 1, "ok", 0644), 0);
	assert_int_equal(mk(s, "any", 1), 0);
	assert_int_equal(put_file(s, "any/x", 0, "ok", 0644), 0);
	assert_int_equal(put_file(s, ".bashrc", 1, "evil", 0644), -RD_EPROTO);
	assert_non_null(strstr(rd_sink_err(s)->msg, "not requested"));
	assert_int_equal(put_file(s, "other/x", 0, "evil", 0644), -RD_EPROTO);
	/* the same asked-for name again is still inside what was asked */
	assert_int_equal(put_file(s, "want", 1, "again", 0644), 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "any|want");
	expect_content(tp(x, "dest/want"), "again");
}

/* Rename mode: the one entry of a nameless request takes DEST's name. */
static void test_sink_expect_nameless_rename(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest/new", 0);
	const char *nameless[] = {""};

	assert_int_equal(rd_sink_expect_roots(s, nameless, NULL, 1), 0);
	assert_int_equal(mk(s, "home", 1), 0);
	assert_int_equal(put_file(s, "home/.bashrc", 0, "ok", 0644), 0);
	assert_int_equal(put_file(s, ".bashrc", 1, "evil", 0644), -RD_EPROTO);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "new");
	expect_content(tp(x, "dest/new/.bashrc"), "ok");
}

static void test_sink_abort_cleans_up(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 10);
	struct rd_sink_file *f;

	assert_int_equal(rd_sink_file_begin(s, "new", 3, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_has_existing(f), 0);
	assert_int_equal(rd_sink_file_write(f, "01234", 5, 0), 0);
	/* past the announced size */
	assert_int_equal(rd_sink_file_write(f, "01234", 5, 8), -RD_EPROTO);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), "");

	put(tp(x, "dest/good"), "old content");
	assert_int_equal(rd_sink_file_begin(s, "good", 4, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "xxxxxxxxxx", 10, 0), 0);
	rd_sink_file_abort(f);
	rd_sink_file_abort(NULL);
	expect_listing(tp(x, "dest"), "good");
	expect_content(tp(x, "dest/good"), "old content");
	rd_sink_close(s);
}

static void test_sink_commit_replaces(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 3);
	struct rd_sink_file *f;
	struct stat before, after;
	int fd;

	put(tp(x, "dest/x"), "old content");
	assert_int_equal(stat(tp(x, "dest/x"), &before), 0);
	fd = open(tp(x, "dest/x"), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(rd_sink_file_begin(s, "x", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "new", 3, 0), 0);
	/* until commit the old file is in place */
	expect_content(tp(x, "dest/x"), "old content");
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_content(tp(x, "dest/x"), "new");
	assert_int_equal(stat(tp(x, "dest/x"), &after), 0);
	assert_true(before.st_ino != after.st_ino); /* renamed over, not rewritten */
	close(fd);
	expect_listing(tp(x, "dest"), "x");

	/* an existing symlink under the final name is replaced, not followed */
	put(tp(x, "outside/victim"), "keep");
	assert_int_equal(symlink(tp(x, "outside/victim"), tp(x, "dest/l")), 0);
	assert_int_equal(put_file(s, "l", 1, "mine", 0644), 0);
	expect_content(tp(x, "dest/l"), "mine");
	expect_content(tp(x, "outside/victim"), "keep");

	/* an existing directory under the final name: error, nothing changed */
	assert_int_equal(mkdir(tp(x, "dest/adir"), 0755), 0);
	assert_true(put_file(s, "adir", 1, "zz", 0644) < 0);
	assert_non_null(strstr(rd_sink_err(s)->msg, "adir"));
	assert_true(rd_sink_symlink(s, "adir", 4, 1, "t", 1, &m) < 0);
	expect_listing(tp(x, "dest"), "adir|l|x");
	expect_listing(tp(x, "dest/adir"), "");
	rd_sink_close(s);
}

static void test_sink_existing(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_PRESERVE_TIMES);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 8);
	struct rd_sink_file *f;
	struct stat st, st2;
	char buf[8];

	put(tp(x, "dest/same"), "abcdefgh");
	assert_int_equal(stat(tp(x, "dest/same"), &st), 0);
	assert_int_equal(rd_sink_file_begin(s, "same", 4, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_has_existing(f), 1);
	assert_int_equal(rd_sink_file_read_existing(f, buf, 4, 4), 0);
	assert_memory_equal(buf, "efgh", 4);
	assert_true(rd_sink_file_read_existing(f, buf, 8, 4) < 0);
	assert_int_equal(rd_sink_file_commit(f, 1), 0);
	assert_int_equal(stat(tp(x, "dest/same"), &st2), 0);
	assert_int_equal(st.st_ino, st2.st_ino);
	assert_int_equal(st2.st_mtim.tv_sec, 1234567890);
	assert_int_equal(st2.st_mtim.tv_nsec, 123456789);
	expect_listing(tp(x, "dest"), "same");

	/* copy part from the existing file, write the rest */
	assert_int_equal(rd_sink_file_begin(s, "same", 4, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_copy_existing(f, 0, 4), 0);
	assert_int_equal(rd_sink_file_write(f, "WXYZ", 4, 4), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_content(tp(x, "dest/same"), "abcdWXYZ");

	/* a different size is not "existing" */
	m.size = 3;
	assert_int_equal(rd_sink_file_begin(s, "same", 4, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_has_existing(f), 0);
	assert_true(rd_sink_file_copy_existing(f, 0, 1) < 0);
	assert_true(rd_sink_file_commit(f, 1) < 0);
	expect_listing(tp(x, "dest"), "same");
	expect_content(tp(x, "dest/same"), "abcdWXYZ");
	rd_sink_close(s);
}

static void test_sink_hostile_paths(void **state)
{
	static const char *const bad[] = {"../x", "/etc/x", "a/../../x", "a//b",  ".",
					  "a/.",  "a/",	    "",		 "x/./y", ".."};
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 1);
	struct rd_sink_file *f;
	size_t i;

	assert_int_equal(mk(s, "a", 1), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p = bad[i];

		assert_int_equal(rd_sink_file_begin(s, p, strlen(p), 0, &m, &f), -RD_EPROTO);
		assert_null(f);
		assert_int_equal(rd_sink_mkdir(s, p, strlen(p), 0, &m), -RD_EPROTO);
		assert_int_equal(rd_sink_symlink(s, p, strlen(p), 0, "t", 1, &m), -RD_EPROTO);
	}
	/* embedded NUL */
	assert_int_equal(rd_sink_mkdir(s, "a/b\0c", 5, 0, &m), -RD_EPROTO);
	/* a symlinked directory inside dest pointing outside */
	assert_int_equal(symlink(tp(x, "outside"), tp(x, "dest/link")), 0);
	assert_true(put_file(s, "link/x", 0, "evil", 0644) < 0);
	assert_non_null(strstr(rd_sink_err(s)->msg, "link/x"));
	assert_true(mk(s, "link/d", 0) < 0);
	assert_true(mk(s, "link", 1) < 0);
	assert_non_null(strstr(rd_sink_err(s)->msg, "is a symlink; refusing to follow"));
	/* a symlink placed by an earlier entry, then used as a parent */
	assert_int_equal(
	    rd_sink_symlink(s, "a/l", 3, 0, tp(x, "outside"), strlen(tp(x, "outside")), &m), 0);
	assert_true(put_file(s, "a/l/x", 0, "evil", 0644) < 0);
	assert_true(mk(s, "a/l/d", 0) < 0);
	assert_true(rd_sink_symlink(s, "a/l/s", 5, 0, "t", 1, &m) < 0);
	/* and one pointing up with a relative target */
	assert_int_equal(rd_sink_symlink(s, "up", 2, 1, "..", 2, &m), 0);
	assert_true(put_file(s, "up/x", 0, "evil", 0644) < 0);
	rd_sink_close(s);
	expect_listing(tp(x, "outside"), "");
	expect_listing(x->top, "dest|outside");
	expect_listing(tp(x, "dest"), "a|link|up");
	expect_listing(tp(x, "dest/a"), "l");
	assert_int_equal(access("/etc/x", F_OK), -1);
}

static void test_sink_symlink(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_PRESERVE_TIMES);
	struct rd_sink_meta m = meta(S_IFLNK | 0777, 0);
	char buf[64];
	ssize_t n;
	struct stat st;

	assert_int_equal(rd_sink_symlink(s, "l", 1, 1, "target one", 10, &m), 0);
	assert_int_equal(rd_sink_symlink(s, "l", 1, 1, "t2", 2, &m), 0); /* replaced */
	n = readlink(tp(x, "dest/l"), buf, sizeof(buf));
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "t2", 2);
	assert_int_equal(lstat(tp(x, "dest/l"), &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1234567890);
	assert_int_equal(rd_sink_symlink(s, "bad", 3, 1, "a\0b", 3, &m), -RD_EPROTO);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "l");
}

/* -H: a link group lands as links; made again over itself, nothing is left behind. */
static void test_sink_hardlink_again(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_PRESERVE_TIMES);
	struct stat a, b;
	int round;

	/* the group's first file, placed by this sink */
	assert_int_equal(put_group_file(s, "f", 1, "group\n"), 0);
	for (round = 0; round < 2; round++) {
		assert_int_equal(rd_sink_hardlink(s, "g", 1, 1, "f", 1, 0), 0);
		assert_int_equal(stat(tp(x, "dest/f"), &a), 0);
		assert_int_equal(stat(tp(x, "dest/g"), &b), 0);
		assert_int_equal(a.st_ino, b.st_ino);
		assert_int_equal(a.st_nlink, 2);
		expect_listing(tp(x, "dest"), "f|g"); /* no .rdcp temporary stays */
	}
	/* a name that is another file is replaced by the link */
	put(tp(x, "dest/h"), "other\n");
	assert_int_equal(rd_sink_hardlink(s, "h", 1, 1, "f", 1, 0), 0);
	expect_content(tp(x, "dest/h"), "group\n");
	expect_listing(tp(x, "dest"), "f|g|h");
	rd_sink_close(s);
}

static void test_sink_readonly(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_READONLY);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 1);
	struct rd_sink_file *f;

	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), -RD_EPERM);
	assert_non_null(strstr(rd_sink_err(s)->msg, "read-only"));
	assert_int_equal(rd_sink_mkdir(s, "d", 1, 1, &m), -RD_EPERM);
	assert_int_equal(rd_sink_dir_post(s, "d", 1, 1, &m), -RD_EPERM);
	assert_int_equal(rd_sink_symlink(s, "l", 1, 1, "t", 1, &m), -RD_EPERM);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "");
}

static void test_sink_mkdir_existing(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct stat st;
	mode_t um;

	assert_int_equal(mkdir(tp(x, "dest/old"), 0711), 0);
	assert_int_equal(chmod(tp(x, "dest/old"), 0711), 0);
	assert_int_equal(mk(s, "old", 1), 0);
	assert_int_equal(post(s, "old", 0), 0);
	assert_int_equal(stat(tp(x, "dest/old"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711); /* existing: mode kept */
	assert_int_equal(mk(s, "new", 1), 0);
	assert_int_equal(stat(tp(x, "dest/new"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700); /* while filling */
	assert_int_equal(post(s, "new", 0), 0);
	assert_int_equal(stat(tp(x, "dest/new"), &st), 0);
	um = umask(022);
	umask(um);
	assert_int_equal(st.st_mode & 07777, 0750 & ~um);
	rd_sink_close(s);
}

static void test_sink_enospc(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;
	struct rd_sink_meta m = meta(S_IFREG | 0644, 1 << 20);
	struct rd_sink_file *f;
	char *buf;
	int ret = 0;
	uint64_t off;

	assert_int_equal(mkdir(tp(x, "small"), 0755), 0);
	if (mount("rdcp-test", tp(x, "small"), "tmpfs", 0, "size=64k") < 0) {
		/* not root, or inside a sandbox without CAP_SYS_ADMIN */
		print_message("mount tmpfs: %s; skipping the ENOSPC test\n", strerror(errno));
		skip();
	}
	buf = calloc(1, 65536);
	assert_non_null(buf);
	s = sopen(x, "small", 0);
	expect_listing(tp(x, "small"), "");
	assert_int_equal(rd_sink_file_begin(s, "big", 3, 1, &m, &f), 0);
	for (off = 0; off < m.size && ret == 0; off += 65536)
		ret = rd_sink_file_write(f, buf, 65536, off);
	assert_int_equal(ret, -RD_ENOSPC);
	assert_non_null(strstr(rd_sink_err(s)->msg, "big"));
	assert_non_null(strstr(rd_sink_err(s)->msg, "No space left on device"));
	rd_sink_file_abort(f);
	expect_listing(tp(x, "small"), "");
	rd_sink_close(s);
	free(buf);
	assert_int_equal(umount(tp(x, "small")), 0);
}


/* --- partials (issue 11) --- */

#define PCH (128u << 10) /* partials are kept only above RD_SINK_SMALL_FILE */

static void test_sink_partial(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 3 * PCH + 10);
	struct rd_sink_file *f;
	char chunk[PCH], back[PCH];

	memset(chunk, 'k', sizeof(chunk));
	m.mtime_sec = 12345;
	rd_sink_set_chunking(s, PCH, "sha256", 1);

	/* Abort before any chunk was verified: nothing is kept. */
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), "");

	/* One verified chunk: the partial and its record stay, no final name. */
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 1), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, PCH), 0);
	rd_sink_file_chunk_done(f, 1, 1);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), ".rdcp-partial.f|.rdcp-partial.f.rec");

	/* The next begin of the same source resumes it. */
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 1);
	assert_null(rd_sink_file_note(f));
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_chunk_src(f, 1), RD_SINK_CHUNK_PARTIAL);
	assert_int_equal(rd_sink_file_read_partial(f, back, PCH, PCH), 0);
	assert_memory_equal(back, chunk, PCH);
	rd_sink_file_abort(f);

	/* A torn or foreign record is not trusted: start over. */
	put(tp(x, "dest/.rdcp-partial.f.rec"), "RDCPPRT1 but not a record");
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 1), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);

	/* The source changed (mtime): start over, with a note. */
	m.mtime_sec++;
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	assert_non_null(rd_sink_file_note(f));
	assert_non_null(strstr(rd_sink_file_note(f), "source changed"));
	/* Commit: the partial becomes the file, the record goes. */
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_listing(tp(x, "dest"), "f");
	rd_sink_close(s);
}

static void test_sink_partial_none_and_off(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0), *t;
	struct rd_sink_meta m = meta(S_IFREG | 0644, 2 * PCH);
	struct rd_sink_file *f;
	char chunk[PCH];

	memset(chunk, 'n', sizeof(chunk));
	rd_sink_set_chunking(s, PCH, "none", 0);
	assert_int_equal(rd_sink_file_begin(s, "g", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	/* checksum none cannot check it: resent, and the user is told */
	assert_int_equal(rd_sink_file_begin(s, "g", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE);
	assert_non_null(strstr(rd_sink_file_note(f), "--trust-partial"));
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	rd_sink_close(s);
	/* --trust-partial: kept on the record's word */
	t = sopen(x, "dest", RD_SINK_TRUST_PARTIAL);
	rd_sink_set_chunking(t, PCH, "none", 0);
	assert_int_equal(rd_sink_file_begin(t, "g", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_TRUSTED);
	assert_int_equal(rd_sink_file_chunk_src(f, 1), RD_SINK_CHUNK_NONE);
	rd_sink_file_abort(f);
	rd_sink_close(t);
	/* --no-partial: today's temporaries, removed on abort */
	t = sopen(x, "dest", RD_SINK_NO_PARTIAL);
	rd_sink_set_chunking(t, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(t, "h", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), ".rdcp-partial.g|.rdcp-partial.g.rec");
	rd_sink_close(t);
}

/*
 * A partial another session still holds (its connection cut, not yet
 * ended) is waited for, not shared: a child process holds the lock for
 * 300 ms, then lets go (the next begin resumes the partial) or first
 * renames it into place as a completed copy would (the next begin starts
 * a fresh partial and the final file is left alone).
 */
static pid_t hold_partial(const char *dir, int rename_after)
{
	char data[PATH_MAX], fin[PATH_MAX];
	pid_t pid;
	int fd;

	snprintf(data, sizeof(data), "%s/.rdcp-partial.f", dir);
	snprintf(fin, sizeof(fin), "%s/f", dir);
	fd = open(data, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(300 * 1000);
		if (rename_after && rename(data, fin) < 0)
			_exit(1);
		_exit(0);
	}
	close(fd); /* the child's copy of the description keeps the lock */
	return pid;
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_sink_partial_held(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 2 * PCH);
	struct rd_sink_file *f;
	char chunk[PCH], back[PCH];
	double t0;
	pid_t pid;
	int st;

	memset(chunk, 'h', sizeof(chunk));
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);

	/* held, then let go: waited for, then resumed */
	pid = hold_partial(tp(x, "dest"), 0);
	t0 = mono_s();
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_true(mono_s() - t0 >= 0.25);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(rd_sink_file_resumed(f), 1);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_PARTIAL);
	rd_sink_file_abort(f);

	/* held, then renamed into place: the final file is not touched */
	pid = hold_partial(tp(x, "dest"), 1);
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	/* (chunk 0 may be compared with the final file: "existing prefix") */
	assert_int_not_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_PARTIAL);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), "f");
	st = open(tp(x, "dest/f"), O_RDONLY);
	assert_true(st >= 0);
	assert_int_equal(pread(st, back, PCH, 0), PCH);
	assert_memory_equal(back, chunk, PCH);
	close(st);
	rd_sink_close(s);
}

/* --partial-dir: partials in a directory inside the destination one. */
static void test_sink_partial_dir(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 2 * PCH);
	struct rd_sink_file *f;
	char chunk[PCH];

	memset(chunk, 'd', sizeof(chunk));
	assert_int_equal(rd_sink_set_partial_dir(s, "a/b"), -RD_EUSAGE);
	assert_int_equal(rd_sink_set_partial_dir(s, ".."), -RD_EUSAGE);
	assert_int_equal(rd_sink_set_partial_dir(s, ""), -RD_EUSAGE);
	assert_int_equal(rd_sink_set_partial_dir(s, ".part"), 0);
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), ".part");
	expect_listing(tp(x, "dest/.part"), ".rdcp-partial.f|.rdcp-partial.f.rec");
	/* resumed from there; the commit leaves no directory behind */
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 1);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_PARTIAL);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, PCH), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_listing(tp(x, "dest"), "f");
	/* a symlink planted under the directory's name is not followed */
	assert_int_equal(symlink(tp(x, "elsewhere"), tp(x, "dest/.part")), 0);
	assert_int_equal(mkdir(tp(x, "elsewhere"), 0700), 0);
	assert_true(rd_sink_file_begin(s, "g", 1, 1, &m, &f) < 0);
	expect_listing(tp(x, "elsewhere"), "");
	rd_sink_close(s);
}

/* Long names: the partial's name is cut, with a hash, within NAME_MAX. */
static void test_sink_partial_long_name(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, PCH);
	struct rd_sink_file *f;
	char name[NAME_MAX + 1], chunk[PCH];

	memset(name, 'L', NAME_MAX);
	name[NAME_MAX] = '\0';
	memset(chunk, 'l', sizeof(chunk));
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, name, NAME_MAX, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	assert_int_equal(rd_sink_file_begin(s, name, NAME_MAX, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_PARTIAL);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_listing(tp(x, "dest"), name);
	rd_sink_close(s);
}


/* Another session cuts chunks otherwise: a chunk is held if all it overlaps were. */
static void test_sink_partial_other_chunk_size(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 5 * PCH);
	struct rd_sink_file *f;
	char chunk[PCH];

	memset(chunk, 'c', sizeof(chunk));
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "r", 1, 1, &m, &f), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_chunk_done(f, 1, 1);
	rd_sink_file_chunk_done(f, 2, 1);
	rd_sink_file_chunk_done(f, 4, 1);
	rd_sink_file_abort(f);
	rd_sink_set_chunking(s, 2 * PCH, "gmac", 1);
	assert_int_equal(rd_sink_file_begin(s, "r", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_PARTIAL); /* 0, 1 */
	assert_int_equal(rd_sink_file_chunk_src(f, 1), RD_SINK_CHUNK_NONE);    /* 2, not 3 */
	assert_int_equal(rd_sink_file_chunk_src(f, 2), RD_SINK_CHUNK_PARTIAL); /* 4 (the end) */
	rd_sink_file_abort(f);
	rd_sink_close(s);
}

/*
 * Small files (issue 13): no partial at any size up to RD_SINK_SMALL_FILE,
 * even with chunking set; an abort leaves nothing; a new name is linked
 * straight into place, an existing one replaced. With RD_SINK_FSYNC, sealed
 * files get no name until commit, and the batch syncs once.
 */
static void test_sink_small_files(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", RD_SINK_FSYNC | RD_SINK_PRESERVE_TIMES);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 5);
	struct rd_sink_file *f, *g;
	struct stat st;

	rd_sink_set_chunking(s, 4096, "sha256", 1);
	assert_int_equal(rd_sink_wants_sync(s), 1);
	assert_int_equal(rd_sink_file_begin(s, "a", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "hello", 5, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), ""); /* no partial, no record */

	/* a batch: sealed files have no name until their commit */
	assert_int_equal(rd_sink_file_begin(s, "a", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "hello", 5, 0), 0);
	assert_int_equal(rd_sink_file_begin(s, "b", 1, 1, &m, &g), 0);
	assert_int_equal(rd_sink_file_write(g, "world", 5, 0), 0);
	assert_int_equal(rd_sink_file_seal(f), 0);
	assert_int_equal(rd_sink_file_seal(g), 0);
	if (!(x->extra & RD_SINK_TEST_NO_TMPFILE))
		expect_listing(tp(x, "dest"), "");
	assert_int_equal(rd_sink_sync(s), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	assert_int_equal(rd_sink_file_commit(g, 0), 0);
	assert_int_equal(rd_sink_sync(s), 0);
	expect_listing(tp(x, "dest"), "a|b");
	expect_content(tp(x, "dest/b"), "world");
	assert_int_equal(stat(tp(x, "dest/a"), &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1234567890);
	assert_int_equal(st.st_size, 5);

	/* an existing name is replaced whole; a sealed abort leaves nothing */
	m.size = 3;
	assert_int_equal(rd_sink_file_begin(s, "a", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "new", 3, 0), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_content(tp(x, "dest/a"), "new");
	assert_int_equal(rd_sink_file_begin(s, "c", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_seal(f), 0);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), "a|b");
	rd_sink_close(s);
}

int main(void)
{
	static const unsigned fallback = RD_SINK_TEST_NO_OPENAT2 | RD_SINK_TEST_NO_TMPFILE;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sink_into_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_rename_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_file_meta, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_abort_cleans_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_commit_replaces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_existing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_hostile_paths, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_symlink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_hardlink_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_readonly, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_mkdir_existing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_enospc, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_large_offset, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_expect_roots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_owner_policy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_umask_given, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_expect_nameless_rename, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_deferred_post, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_partial, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_partial_none_and_off, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_partial_long_name, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_partial_held, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_partial_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_partial_other_chunk_size, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sink_small_files, setup, teardown),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_small_files, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_into_mode, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_rename_mode, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_file_meta, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_abort_cleans_up, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_commit_replaces, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_existing, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_hostile_paths, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_symlink, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_mkdir_existing, setup, teardown,
						     (void *)&fallback),
	    cmocka_unit_test_prestate_setup_teardown(test_sink_enospc, setup, teardown,
						     (void *)&fallback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
