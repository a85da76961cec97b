// SPDX-License-Identifier: MIT
/* The identity executor: calls bound to it run as its uid/gid, the caller's
 * own credentials never change, and unbound calls are direct. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/base/rd_fsid.h"

#define NOBODY 65534

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/fsid_test.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 01777), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_identity(void **state)
{
	struct rd_fsid *x;
	struct rd_err err;
	struct stat st;
	char buf[8];
	int dfd, fd;

	if (geteuid() != 0) {
		print_message("not root: the identity executor cannot be tested here\n");
		skip();
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	/* a root-only file and directory */
	fd = openat(dfd, "secret", O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "s", 1), 1);
	close(fd);
	assert_int_equal(mkdirat(dfd, "rootdir", 0755), 0);

	memset(&err, 0, sizeof(err));
	if (rd_fsid_start(&x, NOBODY, NOBODY, &err))
		fail_msg("%s", err.msg);
	rd_fsid_bind(x);
	/* as nobody: the root-only file cannot be opened, the 0755 dir not written */
	fd = rd_openat(dfd, "secret", O_RDONLY, 0);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(rd_mkdirat(dfd, "rootdir/sub", 0755), -1);
	assert_int_equal(errno, EACCES);
	/* what it creates belongs to nobody */
	assert_int_equal(rd_mkdirat(dfd, "nobodydir", 0755), 0);
	fd = rd_openat(dfd, "nobodyfile", O_CREAT | O_EXCL | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(rd_fchmod(fd, 0640), 0);
	close(fd);
	assert_int_equal(rd_symlinkat("x", dfd, "nobodylink"), 0);
	assert_int_equal(rd_readlinkat(dfd, "nobodylink", buf, sizeof(buf)), 1);
	assert_int_equal(rd_renameat(dfd, "nobodylink", dfd, "nobodylink2"), 0);
	assert_int_equal(rd_fstatat(dfd, "nobodyfile", &st, 0), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(st.st_gid, NOBODY);
	assert_int_equal(st.st_mode & 07777, 0640);
	/* and it cannot give its file away */
	assert_int_equal(rd_fchownat(dfd, "nobodyfile", 0, 0, 0), -1);
	assert_int_equal(errno, EPERM);
	/* the calling thread kept its own identity all along */
	assert_int_equal(setfsuid((uid_t)-1), 0);
	assert_int_equal(setfsgid((gid_t)-1), 0);
	rd_fsid_bind(NULL);
	rd_fsid_stop(x);

	/* unbound again: direct calls as root */
	fd = rd_openat(dfd, "secret", O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rd_mkdirat(dfd, "rootdir/sub", 0755), 0);
	assert_int_equal(fstatat(dfd, "rootdir/sub", &st, 0), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(fstatat(dfd, "nobodydir", &st, 0), 0);
	assert_int_equal(st.st_uid, NOBODY);
	close(dfd);
}

/* rd_dir_holds: a full directory, an empty one, dirfd itself, what is not one */
static void test_dir_holds(void **state)
{
	char p[128];
	int dfd;

	(void)state;
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(mkdirat(dfd, "empty", 0755), 0);
	assert_int_equal(mkdirat(dfd, "full", 0755), 0);
	snprintf(p, sizeof(p), "%s/full/f", dir);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	assert_int_equal(symlinkat("full", dfd, "link"), 0);
	assert_int_equal(rd_dir_holds(dfd, "empty"), 0);
	assert_int_equal(rd_dir_holds(dfd, "full"), 1);
	assert_int_equal(rd_dir_holds(dfd, NULL), 1);
	assert_int_equal(rd_dir_holds(dfd, "missing"), -ENOENT);
	/* a link to a full directory: never followed (O_DIRECTORY | O_NOFOLLOW: ENOTDIR) */
	assert_int_equal(rd_dir_holds(dfd, "link"), -ENOTDIR);
	assert_int_equal(rd_dir_holds(dfd, "full/f"), -ENOTDIR);
	close(dfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_identity),
	    cmocka_unit_test(test_dir_holds),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
