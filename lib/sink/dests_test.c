// SPDX-License-Identifier: MIT
/*
 * --link-dest, --compare-dest, --copy-dest and backups at the sink (issue
 * 29; rd_sink_dests.c): an unchanged file is hard-linked (left out,
 * copied) from the first directory that matches by the quick check and
 * the attributes kept; a symlink in a file's place, or a symlinked
 * directory on the way, is never followed; in a module nothing leaves it;
 * replaced entries keep a backup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_mirror.h"
#include "lib/sink/sink_testutil.h"

#define R RD_SINK_ROOT

static const struct rd_sink_select quick = {
    .compare = RD_SINK_CMP_QUICK, .modify_window = RD_SINK_WINDOW_NS, .max_size = UINT64_MAX};

/* a file as meta() describes it (mtime 1234567890.123456789), mode 0644 */
static void ref_file(struct fx *x, const char *rel, const char *content)
{
	struct timespec ts[2] = {{1234567890, 123456789}, {1234567890, 123456789}};
	const char *p = tp(x, rel);

	put(p, content);
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static struct rd_sink *dopen(struct fx *x, unsigned flags, int kind, const char *const *dirs,
			     unsigned n, int confined)
{
	struct rd_sink *s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_PRESERVE_TIMES | flags);
	struct rd_sink_dests d = {.kind = kind, .n = n};
	unsigned i;

	for (i = 0; i < n; i++)
		d.dirs[i] = dirs[i];
	rd_sink_set_select(s, &quick);
	if (rd_sink_set_dests(s, &d, confined ? x->top_fd : -1, "dest"))
		fail_msg("rd_sink_set_dests: %s", rd_sink_err(s)->msg);
	return s;
}

static int check(struct rd_sink *s, const char *path, const char *content)
{
	struct rd_sink_meta m = meta(S_IFREG | 0644, strlen(content));

	return rd_sink_file_check(s, path, strlen(path), strchr(path, '/') ? 0 : R, &m);
}

static struct stat st_of(const char *p)
{
	struct stat st;

	assert_int_equal(lstat(p, &st), 0);
	return st;
}

static int exists(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0;
}

static void test_link_dest(void **state)
{
	struct fx *x = *state;
	const char *dirs[] = {"../ref"};
	struct rd_sink *s;
	struct stat a, b;

	assert_int_equal(mkdir(tp(x, "ref"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "ref/sub"), 0755), 0);
	ref_file(x, "ref/same", "hello");
	ref_file(x, "ref/sub/deep", "deep!");
	ref_file(x, "ref/older", "hello");
	put(tp(x, "ref/other"), "hellO"); /* another mtime */
	s = dopen(x, RD_SINK_PRESERVE_MODE, RD_SINK_ALT_LINK, dirs, 1, 0);
	assert_int_equal(check(s, "same", "hello"), RD_SINK_SAME);
	assert_int_equal(rd_sink_items(s), 0); /* rsync -i says nothing of it */
	a = st_of(tp(x, "ref/same"));
	b = st_of(tp(x, "dest/same"));
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(b.st_nlink, 2);
	assert_int_equal(mk(s, "sub", 0), 0);
	assert_int_equal(check(s, "sub/deep", "deep!"), RD_SINK_SAME);
	assert_int_equal(st_of(tp(x, "dest/sub/deep")).st_ino, st_of(tp(x, "ref/sub/deep")).st_ino);
	/* not by the quick check: sent */
	assert_int_equal(check(s, "other", "hellO"), RD_SINK_SEND);
	assert_false(exists(tp(x, "dest/other")));
	/* the quick check, not the mode (-p): copied here, not linked */
	assert_int_equal(chmod(tp(x, "ref/older"), 0600), 0);
	assert_int_equal(check(s, "older", "hello"), RD_SINK_SAME);
	expect_content(tp(x, "dest/older"), "hello");
	assert_true(st_of(tp(x, "dest/older")).st_ino != st_of(tp(x, "ref/older")).st_ino);
	assert_int_equal(st_of(tp(x, "dest/older")).st_mode & 07777, 0644);
	assert_int_equal(st_of(tp(x, "ref/older")).st_nlink, 1);
	/* an existing copy gives way to the link (rsync's find_exact_for_existing) */
	rd_sink_close(s);
	assert_int_equal(unlink(tp(x, "dest/same")), 0);
	ref_file(x, "dest/same", "hello");
	s = dopen(x, RD_SINK_PRESERVE_MODE, RD_SINK_ALT_LINK, dirs, 1, 0);
	assert_int_equal(check(s, "same", "hello"), RD_SINK_SAME);
	assert_int_equal(st_of(tp(x, "dest/same")).st_ino, st_of(tp(x, "ref/same")).st_ino);
	rd_sink_close(s);
}

/* Several directories: the first full match wins, in order. */
/*
 * A full directory where the file goes, its match in the --link-dest
 * directory: with --delete (or --force) it goes first and the file is
 * linked, as rsync does (its contents reported deleted); without, it
 * stays (the file fails later, not linked over it).
 */
static void test_link_dest_full_dir_in_way(void **state)
{
	struct fx *x = *state;
	const char *dirs[] = {"../ref"};
	struct rd_mirror_opts o;
	struct rd_sink *s;

	assert_int_equal(mkdir(tp(x, "ref"), 0755), 0);
	ref_file(x, "ref/f", "hello");
	assert_int_equal(mkdir(tp(x, "dest/f"), 0755), 0);
	put(tp(x, "dest/f/inside"), "old");
	s = dopen(x, RD_SINK_PRESERVE_MODE, RD_SINK_ALT_LINK, dirs, 1, 0);
	assert_int_not_equal(check(s, "f", "hello"), RD_SINK_SAME);
	assert_true(exists(tp(x, "dest/f/inside")));
	rd_sink_close(s);
	s = dopen(x, RD_SINK_PRESERVE_MODE, RD_SINK_ALT_LINK, dirs, 1, 0);
	memset(&o, 0, sizeof(o));
	o.delete = 1;
	o.force = 1;
	o.max_delete = -1;
	assert_int_equal(rd_sink_mirror_start(s, &o), 0);
	assert_int_equal(check(s, "f", "hello"), RD_SINK_SAME);
	assert_int_equal(st_of(tp(x, "dest/f")).st_ino, st_of(tp(x, "ref/f")).st_ino);
	assert_false(exists(tp(x, "dest/f/inside")));
	rd_sink_close(s);
}

static void test_link_dest_order(void **state)
{
	struct fx *x = *state;
	const char *dirs[] = {"../r1", "../r2", "../r3"};
	struct rd_sink *s;

	assert_int_equal(mkdir(tp(x, "r1"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "r2"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "r3"), 0755), 0);
	put(tp(x, "r1/f"), "abc"); /* the type only */
	ref_file(x, "r2/f", "abc");
	ref_file(x, "r3/f", "abc");
	s = dopen(x, 0, RD_SINK_ALT_LINK, dirs, 3, 0);
	assert_int_equal(check(s, "f", "abc"), RD_SINK_SAME);
	assert_int_equal(st_of(tp(x, "dest/f")).st_ino, st_of(tp(x, "r2/f")).st_ino);
	assert_int_equal(st_of(tp(x, "r3/f")).st_nlink, 1);
	rd_sink_close(s);
}

static void test_compare_and_copy_dest(void **state)
{
	struct fx *x = *state;
	const char *dirs[] = {"../ref"};
	struct rd_sink_meta lm = meta(S_IFLNK | 0777, 0);
	struct timespec ts[2] = {{1234567890, 123456789}, {1234567890, 123456789}};
	struct rd_sink *s;

	assert_int_equal(mkdir(tp(x, "ref"), 0755), 0);
	ref_file(x, "ref/same", "hello");
	assert_int_equal(symlink("tgt", tp(x, "ref/ln")), 0);
	assert_int_equal(utimensat(AT_FDCWD, tp(x, "ref/ln"), ts, AT_SYMLINK_NOFOLLOW), 0);
	s = dopen(x, 0, RD_SINK_ALT_COMPARE, dirs, 1, 0);
	assert_int_equal(check(s, "same", "hello"), RD_SINK_SAME);
	assert_false(exists(tp(x, "dest/same"))); /* left out */
	assert_int_equal(rd_sink_symlink(s, "ln", 2, R, "tgt", 3, &lm), 0);
	assert_false(exists(tp(x, "dest/ln")));
	assert_int_equal(rd_sink_symlink(s, "ln2", 3, R, "tgt", 3, &lm), 0);
	assert_true(exists(tp(x, "dest/ln2"))); /* nothing like it there */
	rd_sink_close(s);
	s = dopen(x, 0, RD_SINK_ALT_COPY, dirs, 1, 0);
	assert_int_equal(check(s, "same", "hello"), RD_SINK_SAME);
	expect_content(tp(x, "dest/same"), "hello");
	assert_true(st_of(tp(x, "dest/same")).st_ino != st_of(tp(x, "ref/same")).st_ino);
	assert_int_equal(st_of(tp(x, "dest/same")).st_mtim.tv_nsec, 123456789);
	assert_int_equal(rd_sink_symlink(s, "ln", 2, R, "tgt", 3, &lm), 0);
	assert_true(exists(tp(x, "dest/ln")));
	rd_sink_close(s);
}

/* A planted symlink in a file's place, or on the way, is never followed. */
static void test_hostile_ref(void **state)
{
	struct fx *x = *state;
	const char *dirs[] = {"../ref"};
	struct rd_sink *s;

	assert_int_equal(mkdir(tp(x, "ref"), 0755), 0);
	ref_file(x, "outside/secret", "hello");
	assert_int_equal(mkdir(tp(x, "outside/d"), 0755), 0);
	ref_file(x, "outside/d/secret", "hello");
	assert_int_equal(symlink(tp(x, "outside/secret"), tp(x, "ref/secret")), 0);
	assert_int_equal(symlink(tp(x, "outside/d"), tp(x, "ref/d")), 0);
	s = dopen(x, 0, RD_SINK_ALT_LINK, dirs, 1, 0);
	assert_int_equal(check(s, "secret", "hello"), RD_SINK_SEND);
	assert_false(exists(tp(x, "dest/secret")));
	assert_int_equal(mk(s, "d", R), 0);
	assert_int_equal(check(s, "d/secret", "hello"), RD_SINK_SEND);
	assert_false(exists(tp(x, "dest/d/secret")));
	assert_int_equal(st_of(tp(x, "outside/secret")).st_nlink, 1);
	assert_int_equal(st_of(tp(x, "outside/d/secret")).st_nlink, 1);
	rd_sink_close(s);
}

/* In a module (root_fd): ".." may not leave it, and a symlinked DIR is refused. */
static void test_confined(void **state)
{
	struct fx *x = *state;
	const char *out[] = {"../../elsewhere"};
	const char *via[] = {"../lnk"};
	struct rd_sink_dests d = {.kind = RD_SINK_ALT_LINK, .n = 1, .dirs = {out[0]}};
	struct rd_sink *s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_PRESERVE_TIMES);

	assert_int_equal(rd_sink_set_dests(s, &d, x->top_fd, "dest"), -RD_EPERM);
	assert_non_null(strstr(rd_sink_err(s)->msg, "--link-dest"));
	assert_non_null(strstr(rd_sink_err(s)->msg, "../../elsewhere"));
	d.n = 0;
	d.kind = 0;
	d.backup = 1;
	d.backup_dir = "../../bak";
	assert_int_equal(rd_sink_set_dests(s, &d, x->top_fd, "dest"), -RD_EPERM);
	assert_non_null(strstr(rd_sink_err(s)->msg, "--backup-dir"));
	rd_sink_close(s);
	/* a symlink to outside named as the DIR: not opened, so nothing matches */
	ref_file(x, "outside/f", "hello");
	assert_int_equal(symlink("outside", tp(x, "lnk")), 0);
	s = dopen(x, 0, RD_SINK_ALT_LINK, via, 1, 1);
	assert_int_equal(check(s, "f", "hello"), RD_SINK_SEND);
	assert_false(exists(tp(x, "dest/f")));
	rd_sink_close(s);
	/* the user's own copy follows it, as rsync does */
	s = dopen(x, 0, RD_SINK_ALT_LINK, via, 1, 0);
	assert_int_equal(check(s, "f", "hello"), RD_SINK_SAME);
	assert_int_equal(st_of(tp(x, "dest/f")).st_ino, st_of(tp(x, "outside/f")).st_ino);
	rd_sink_close(s);
}

static void test_backup(void **state)
{
	struct fx *x = *state;
	struct rd_sink_dests d = {.backup = 1};
	struct rd_sink_meta lm = meta(S_IFLNK | 0777, 0);
	struct rd_backup *b;
	struct rd_sink *s;
	struct stat a;

	put(tp(x, "dest/f"), "old");
	assert_int_equal(symlink("t1", tp(x, "dest/ln")), 0);
	a = st_of(tp(x, "dest/f"));
	s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_PRESERVE_TIMES);
	rd_sink_set_select(s, &quick);
	assert_int_equal(rd_sink_set_dests(s, &d, -1, "dest"), 0);
	assert_int_equal(put_file(s, "f", R, "new!", 0644), 0);
	expect_content(tp(x, "dest/f"), "new!");
	expect_content(tp(x, "dest/f~"), "old");
	assert_int_equal(st_of(tp(x, "dest/f~")).st_ino, a.st_ino);
	assert_int_equal(rd_sink_symlink(s, "ln", 2, R, "t2", 2, &lm), 0);
	assert_true(exists(tp(x, "dest/ln~")));
	/* the deletion side's handle, and its ops */
	assert_int_equal(rd_sink_backups(s, &b), 0);
	assert_non_null(b);
	assert_true(rd_sink_backups_on(s));
	assert_true(rd_sink_backup_protects(s, "f~", 2, 0));
	assert_false(rd_sink_backup_protects(s, "f", 1, 0));
	put(tp(x, "dest/gone"), "extra");
	{
		int dfd = open(tp(x, "dest"), O_RDONLY | O_DIRECTORY);

		assert_true(dfd >= 0);
		assert_int_equal(rd_sink_backup_deleted(s, dfd, "gone", "gone"), 0);
		close(dfd);
	}
	assert_false(exists(tp(x, "dest/gone")));
	expect_content(tp(x, "dest/gone~"), "extra");
	rd_sink_close(s);
	/* --backup-dir with a suffix, relative to the destination */
	d.backup_dir = "../bak";
	d.suffix = ".old";
	s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_PRESERVE_TIMES);
	rd_sink_set_select(s, &quick);
	assert_int_equal(rd_sink_set_dests(s, &d, x->top_fd, "dest"), 0);
	assert_int_equal(mk(s, "sub", 0), 0);
	put(tp(x, "dest/sub/g"), "gold");
	assert_int_equal(put_file(s, "sub/g", 0, "gnew", 0644), 0);
	expect_content(tp(x, "bak/sub/g.old"), "gold");
	expect_content(tp(x, "dest/sub/g"), "gnew");
	rd_sink_close(s);
	/* without backups: none */
	s = sopen(x, "dest", RD_SINK_RSYNC);
	assert_int_equal(rd_sink_backups(s, &b), 0);
	assert_null(b);
	assert_false(rd_sink_backups_on(s));
	assert_false(rd_sink_backup_protects(s, "f~", 2, 0));
	rd_sink_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_link_dest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_dest_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_dest_full_dir_in_way, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_and_copy_dest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hostile_ref, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_confined, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_backup, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
