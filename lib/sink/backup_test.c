// SPDX-License-Identifier: MIT
/*
 * rd_sink_backup: the names rsync gives backups (suffix beside, same path
 * under --backup-dir with the destination directory's mode), replacing
 * keeps the final name throughout, a module's backup dir cannot leave the
 * module or go through a symlink, and what --delete must leave alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sink/rd_sink_backup.h"

static char g_top[256];
static int g_top_fd = -1, g_dst_fd = -1;

static void put(const char *rel, const char *text)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", g_top, rel);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0640);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int has(const char *rel, const char *text)
{
	char p[512], buf[64] = "";
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", g_top, rel);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return !strcmp(buf, text);
}

static mode_t mode_of(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", g_top, rel);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode & 07777;
}

static int setup(void **state)
{
	char p[512];

	(void)state;
	snprintf(g_top, sizeof(g_top), "%s/bak.XXXXXX", getenv("TEST_TMPDIR") ?: "/tmp");
	assert_non_null(mkdtemp(g_top));
	snprintf(p, sizeof(p), "%s/dst", g_top);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/dst/sub", g_top);
	assert_int_equal(mkdir(p, 0750), 0);
	assert_int_equal(chmod(p, 0750), 0);
	g_top_fd = open(g_top, O_RDONLY | O_DIRECTORY);
	snprintf(p, sizeof(p), "%s/dst", g_top);
	g_dst_fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(g_top_fd >= 0 && g_dst_fd >= 0);
	put("dst/f", "old f");
	put("dst/sub/g", "old g");
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	close(g_top_fd);
	close(g_dst_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int sub_fd(void)
{
	int fd = openat(g_dst_fd, "sub", O_RDONLY | O_DIRECTORY);

	assert_true(fd >= 0);
	return fd;
}

static void test_checks(void **state)
{
	(void)state;
	assert_null(rd_backup_check(NULL, NULL));
	assert_null(rd_backup_check("../bak", ""));
	assert_string_equal(rd_backup_check(NULL, ""),
			    "--suffix cannot be empty without a --backup-dir");
	assert_string_equal(rd_backup_check(NULL, "a/b"), "--suffix cannot contain slashes");
}

/* --backup: NAME~ beside it; replacing keeps the final name until the rename. */
static void test_beside(void **state)
{
	struct rd_backup *b;
	struct rd_err err;
	int sfd = sub_fd();

	(void)state;
	rd_err_clear(&err);
	assert_int_equal(rd_backup_open(&b, g_dst_fd, -1, "", NULL, NULL, &err), 0);
	assert_int_equal(rd_backup_keep(b, g_dst_fd, "f", "f", RD_BACKUP_LINK, &err), 0);
	assert_true(has("dst/f~", "old f"));
	assert_true(has("dst/f", "old f")); /* still there: the caller renames over it */
	assert_int_equal(rd_backup_keep(b, sfd, "g", "sub/g", RD_BACKUP_MOVE, &err), 0);
	assert_true(has("dst/sub/g~", "old g"));
	assert_false(has("dst/sub/g", "old g"));
	/* nothing there: nothing to keep */
	assert_int_equal(rd_backup_keep(b, sfd, "none", "sub/none", RD_BACKUP_MOVE, &err), 0);
	/* rsync's "P *~" */
	assert_true(rd_backup_protects(b, "sub/g~", 6, 0));
	assert_false(rd_backup_protects(b, "sub/g", 5, 0));
	rd_backup_close(b);
	close(sfd);
}

/* --backup-dir=../bak --suffix=.old: the same path there, made like the destination's. */
static void test_dir(void **state)
{
	struct rd_backup *b;
	struct rd_err err;
	int sfd = sub_fd();

	(void)state;
	rd_err_clear(&err);
	assert_int_equal(rd_backup_open(&b, g_dst_fd, -1, "", "../bak", ".old", &err), 0);
	assert_int_equal(rd_backup_keep(b, sfd, "g", "sub/g", RD_BACKUP_LINK, &err), 0);
	assert_true(has("bak/sub/g.old", "old g"));
	assert_int_equal(mode_of("bak/sub"), 0750); /* as dst/sub */
	assert_int_equal(rd_backup_keep(b, g_dst_fd, "f", "f", RD_BACKUP_MOVE, &err), 0);
	assert_true(has("bak/f.old", "old f"));
	/* a second backup of the same name replaces the first */
	put("dst/f", "newer f");
	assert_int_equal(rd_backup_keep(b, g_dst_fd, "f", "f", RD_BACKUP_MOVE, &err), 0);
	assert_true(has("bak/f.old", "newer f"));
	assert_false(rd_backup_protects(b, "f.old", 5, 0)); /* outside the destination */
	rd_backup_close(b);
	/* inside the destination: --delete leaves the directory alone */
	assert_int_equal(rd_backup_open(&b, g_dst_fd, -1, "", "keep/old", NULL, &err), 0);
	assert_true(rd_backup_protects(b, "keep/old", 8, 1));
	assert_true(rd_backup_protects(b, "keep/old/sub/g", 14, 0));
	assert_false(rd_backup_protects(b, "keep", 4, 1));
	assert_false(rd_backup_protects(b, "keep/oldx", 9, 0));
	rd_backup_close(b);
	close(sfd);
}

/* In a module: relative to the destination, never out of the module, never through a symlink. */
static void test_confined(void **state)
{
	struct rd_backup *b;
	struct rd_err err;
	char p[512];

	(void)state;
	rd_err_clear(&err);
	assert_int_equal(rd_backup_open(&b, g_dst_fd, g_top_fd, "dst", "../../x", NULL, &err),
			 -RD_EPERM);
	assert_non_null(strstr(err.msg, "leaves the module"));
	snprintf(p, sizeof(p), "%s/escape", g_top);
	assert_int_equal(symlink("/tmp", p), 0);
	assert_int_equal(rd_backup_open(&b, g_dst_fd, g_top_fd, "dst", "../escape/bak", NULL, &err),
			 -RD_ESYS);
	/* an absolute one is the module's */
	assert_int_equal(rd_backup_open(&b, g_dst_fd, g_top_fd, "dst", "/mbak", NULL, &err), 0);
	assert_int_equal(rd_backup_keep(b, g_dst_fd, "f", "f", RD_BACKUP_MOVE, &err), 0);
	assert_true(has("mbak/f", "old f"));
	rd_backup_close(b);
	assert_int_equal(rd_backup_open(&b, g_dst_fd, g_top_fd, "dst", "bk", NULL, &err), 0);
	assert_true(rd_backup_protects(b, "bk", 2, 1));
	rd_backup_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_checks),
	    cmocka_unit_test_setup_teardown(test_beside, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_confined, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
