// SPDX-License-Identifier: MIT
/*
 * rd_sink_delete: what is deleted, in which order, what is never
 * touched (symlinks' targets, protected names, other file systems), and
 * --max-delete's count, against the orders rsync 3.5.0 showed for the same
 * trees (rsync -a --delete -v, --max-delete=N).
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

#include "lib/sink/rd_sink_delete.h"

static char g_dir[256];
static int g_fd = -1;

struct log {
	char lines[64][256];
	int n;
	const char *protect; /* a name (last component) kept */
	int fail_backup;
};

static void deleted_cb(void *ctx, const char *rel, size_t len, int is_dir)
{
	struct log *l = ctx;

	if (l->n < 64)
		snprintf(l->lines[l->n++], sizeof(l->lines[0]), "deleting %.*s%s", (int)len, rel,
			 is_dir ? "/" : "");
}

static void problem_cb(void *ctx, const char *rel, size_t len, int status, const char *msg)
{
	struct log *l = ctx;

	if (l->n < 64)
		snprintf(l->lines[l->n++], sizeof(l->lines[0]), "%s %s: %.*s",
			 status ? "error" : "note", msg, (int)len, rel);
}

static int protect_cb(void *ctx, const char *rel, size_t len, int is_dir)
{
	struct log *l = ctx;
	const char *base = memrchr(rel, '/', len);

	base = base ? base + 1 : rel;
	return l->protect && !strncmp(base, l->protect, len - (size_t)(base - rel)) &&
	       strlen(l->protect) == len - (size_t)(base - rel);
}

static void mk(const char *rel, char type)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", g_dir, rel);
	if (type == 'd') {
		assert_int_equal(mkdir(p, 0755), 0);
	} else if (type == 'l') {
		assert_int_equal(symlink("../outside-target", p), 0);
	} else if (type == 'p') {
		assert_int_equal(mkfifo(p, 0644), 0);
	} else {
		fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "x", 1), 1);
		close(fd);
	}
}

static int exists(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", g_dir, rel);
	return !lstat(p, &st);
}

static int setup(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s/deltest.XXXXXX", getenv("TEST_TMPDIR") ?: "/tmp");
	assert_non_null(mkdtemp(g_dir));
	snprintf(cmd, sizeof(cmd), "%s/dst", g_dir);
	assert_int_equal(mkdir(cmd, 0755), 0);
	strcat(g_dir, "/dst");
	g_fd = open(g_dir, O_RDONLY | O_DIRECTORY);
	assert_true(g_fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	close(g_fd);
	g_dir[strlen(g_dir) - 4] = '\0';
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct rd_del *new_del(struct log *l, int64_t max, unsigned flags)
{
	struct rd_del_opts o = {.flags = flags, .max_delete = max, .ctx = l};
	struct rd_del *d;

	o.ops.deleted = deleted_cb;
	o.ops.problem = problem_cb;
	o.ops.protect = protect_cb;
	assert_int_equal(rd_del_new(&d, &o), 0);
	return d;
}

/* Find and delete the extras of the destination's root, keeping keep[]. */
static int clean(struct rd_del *d, const char *const *keep, int nkeep)
{
	struct rd_del_names k, x;
	struct rd_err err;
	int i, r;

	rd_del_names_init(&k);
	rd_del_names_init(&x);
	for (i = 0; i < nkeep; i++)
		assert_int_equal(rd_del_names_add(d, &k, keep[i], strlen(keep[i]), 0), 0);
	rd_del_names_sort(&k);
	rd_err_clear(&err);
	r = rd_del_find(d, g_fd, "", &k, &x, &err);
	assert_int_equal(r, 0);
	r = rd_del_run(d, g_fd, "", &x);
	rd_del_names_free(d, &x);
	rd_del_names_free(d, &k);
	return r;
}

static void expect_lines(const struct log *l, const char *const *want, int n)
{
	int i;

	for (i = 0; i < l->n; i++)
		print_message("  %s\n", l->lines[i]);
	assert_int_equal(l->n, n);
	for (i = 0; i < n; i++)
		assert_string_equal(l->lines[i], want[i]);
}

/*
 * rsync -a --delete -v of an empty source over this tree said (3.5.0):
 * deleting a/, 0/k, 0/, z, l, f, a0 -- non-directories sorted first, then
 * directories as "name/", each deleted last first, contents before their
 * directory.
 */
static void test_order(void **state)
{
	static const char *const want[] = {"deleting a/", "deleting 0/k", "deleting 0/",
					   "deleting z",  "deleting l",	  "deleting f",
					   "deleting a0"};
	struct log l = {.n = 0};
	struct rd_del *d = new_del(&l, -1, 0);

	(void)state;
	mk("0", 'd');
	mk("a", 'd');
	mk("z", 'f');
	mk("a0", 'f');
	mk("0/k", 'f');
	mk("l", 'l');
	mk("f", 'p');
	assert_int_equal(clean(d, NULL, 0), 0);
	expect_lines(&l, want, 7);
	assert_int_equal(rd_del_stats(d)->deleted, 7);
	assert_false(rd_del_limited(d));
	rd_del_free(d);
}

/* rsync: ab/, a/x, a/, a.d/, b, a0, a.txt, a-b, A: "a.d/" sorts before "a/". */
static void test_order_dirs(void **state)
{
	static const char *const want[] = {"deleting ab/",   "deleting a/x", "deleting a/",
					   "deleting a.d/",  "deleting b",   "deleting a0",
					   "deleting a.txt", "deleting a-b", "deleting A"};
	struct log l = {.n = 0};
	struct rd_del *d = new_del(&l, -1, 0);

	(void)state;
	mk("a", 'd');
	mk("a.d", 'd');
	mk("ab", 'd');
	mk("a/x", 'f');
	mk("a.txt", 'f');
	mk("a-b", 'f');
	mk("a0", 'f');
	mk("A", 'f');
	mk("b", 'f');
	assert_int_equal(clean(d, NULL, 0), 0);
	expect_lines(&l, want, 9);
	rd_del_free(d);
}

/*
 * Names the sender listed stay, whatever their type here; a symlink is
 * removed as a link (its target, outside, stays); a protected name stays
 * and keeps its directory, as rsync says it.
 */
static void test_keep_protect(void **state)
{
	static const char *const keep[] = {"kept", "alsodir"};
	static const char *const want[] = {
	    "deleting x/y", "note cannot delete non-empty directory: x", "deleting link"};
	struct log l = {.n = 0, .protect = "precious"};
	struct rd_del *d = new_del(&l, -1, 0);
	char outside[512];
	int fd;

	(void)state;
	snprintf(outside, sizeof(outside), "%.*s/outside-target", (int)strlen(g_dir) - 4, g_dir);
	fd = open(outside, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	mk("kept", 'f');
	mk("alsodir", 'd'); /* listed as a file by the sender: not deleted either */
	mk("alsodir/in", 'f');
	mk("precious", 'f');
	mk("x", 'd');
	mk("x/y", 'f');
	mk("x/precious", 'f');
	mk("link", 'l');
	assert_int_equal(clean(d, keep, 2), 0);
	expect_lines(&l, want, 3);
	assert_true(exists("kept") && exists("alsodir/in") && exists("precious"));
	assert_true(exists("x/precious") && !exists("x/y") && !exists("link"));
	assert_int_equal(access(outside, F_OK), 0);
	assert_int_equal(rd_del_stats(d)->kept, 2);
	unlink(outside);
	rd_del_free(d);
}

/*
 * --max-delete=2 over m/n/o, m/n/, m/p: rsync deleted m/n/o and m/n/,
 * skipped m/p (1 skipped) and said "cannot delete non-empty directory: m".
 */
static void test_max_delete(void **state)
{
	static const char *const want[] = {"deleting m/n/o", "deleting m/n/",
					   "note cannot delete non-empty directory: m"};
	struct log l = {.n = 0};
	struct rd_del *d = new_del(&l, 2, 0);

	(void)state;
	mk("m", 'd');
	mk("m/n", 'd');
	mk("m/n/o", 'f');
	mk("m/p", 'f');
	assert_int_equal(clean(d, NULL, 0), 0);
	expect_lines(&l, want, 3);
	assert_int_equal(rd_del_stats(d)->deleted, 2);
	assert_int_equal(rd_del_stats(d)->skipped, 1);
	assert_true(rd_del_limited(d));
	assert_true(exists("m/p") && !exists("m/n"));
	rd_del_free(d);

	/* --max-delete=0: everything reported skipped, nothing deleted */
	memset(&l, 0, sizeof(l));
	d = new_del(&l, 0, 0);
	assert_int_equal(clean(d, NULL, 0), 0);
	assert_int_equal(rd_del_stats(d)->deleted, 0);
	assert_int_equal(rd_del_stats(d)->skipped, 1);
	assert_true(exists("m/p"));
	rd_del_free(d);
}

/* A dry run reports what a real one deletes, and changes nothing. */
static void test_dry_run(void **state)
{
	static const char *const want[] = {"deleting d/y", "deleting d/", "deleting c"};
	struct log l = {.n = 0};
	struct rd_del *d = new_del(&l, -1, RD_DEL_DRY_RUN);
	struct stat before, after;

	(void)state;
	mk("c", 'f');
	mk("d", 'd');
	mk("d/y", 'f');
	assert_int_equal(fstat(g_fd, &before), 0);
	assert_int_equal(clean(d, NULL, 0), 0);
	expect_lines(&l, want, 3);
	assert_true(exists("c") && exists("d/y"));
	assert_int_equal(fstat(g_fd, &after), 0);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
	rd_del_free(d);
}

/*
 * Making room (a directory where a file goes): the directory itself is
 * neither counted by --max-delete nor listed, what is inside it is (rsync
 * 3.5.0: "could not make way for new regular file" once the limit is
 * reached; -i lists "*deleting" for the contents only).
 */
static void test_make_room(void **state)
{
	struct log l = {.n = 0};
	struct rd_del *d = new_del(&l, 0, 0);

	(void)state;
	mk("full", 'd');
	mk("full/a", 'f');
	mk("full/b", 'd');
	mk("full/b/c", 'f');
	assert_int_equal(rd_del_entry(d, g_fd, "full", "full"), 0);
	assert_true(exists("full/a") && exists("full/b/c"));
	assert_int_equal(rd_del_stats(d)->skipped, 2); /* a and b/c; b and full stay */
	rd_del_free(d);
	mk("empty", 'd');
	d = new_del(&l, 0, 0);
	assert_int_equal(rd_del_entry(d, g_fd, "empty", "empty"), 0);
	assert_false(exists("empty")); /* an empty one goes whatever the limit */
	rd_del_free(d);
	l.n = 0;
	d = new_del(&l, -1, 0);
	assert_int_equal(rd_del_entry(d, g_fd, "full", "full"), 0);
	assert_false(exists("full"));
	/* what was inside is listed and counted; the directory itself neither (rsync) */
	assert_int_equal(rd_del_stats(d)->deleted, 3);
	{
		const char *want[] = {"deleting full/b/c", "deleting full/b/", "deleting full/a"};

		expect_lines(&l, want, 3);
	}
	rd_del_free(d);
}

/* Deeper than RD_DEL_DEPTH_MAX below the directory: refused, kept. */
static void test_depth(void **state)
{
	struct log l = {.n = 0};
	struct rd_del *d = new_del(&l, -1, 0);
	char rel[4096] = "deep";
	int i;

	(void)state;
	mk("deep", 'd');
	for (i = 0; i < RD_DEL_DEPTH_MAX + 1; i++) {
		strcat(rel, "/d");
		mk(rel, 'd');
	}
	assert_true(clean(d, NULL, 0) < 0);
	assert_true(exists("deep"));
	assert_true(rd_del_stats(d)->failed >= 1);
	rd_del_free(d);
}

/* The memory bound: names past it are refused, not grown into. */
static void test_mem_bound(void **state)
{
	struct rd_del_opts o = {.max_delete = -1, .mem_max = 4096};
	struct rd_del_names n;
	struct rd_del *d;
	char name[64];
	int i, r = 0;

	(void)state;
	assert_int_equal(rd_del_new(&d, &o), 0);
	rd_del_names_init(&n);
	for (i = 0; i < 1000 && !r; i++) {
		snprintf(name, sizeof(name), "name-%d", i);
		r = rd_del_names_add(d, &n, name, strlen(name), 0);
	}
	assert_int_equal(r, -RD_ENOMEM);
	assert_true(i < 1000);
	rd_del_names_sort(&n);
	assert_int_equal(rd_del_names_has(&n, "name-1", 6), 1);
	assert_int_equal(rd_del_names_has(&n, "name-999", 8), 0);
	/* names are one component: '/', NUL and empty ones are refused */
	assert_int_equal(rd_del_names_add(d, &n, "a/b", 3, 0), -RD_EPROTO);
	assert_int_equal(rd_del_names_add(d, &n, "", 0, 0), -RD_EPROTO);
	rd_del_names_free(d, &n);
	rd_del_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_order_dirs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keep_protect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_delete, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_make_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_depth, setup, teardown),
	    cmocka_unit_test(test_mem_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
