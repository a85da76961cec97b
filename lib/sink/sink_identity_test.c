// SPDX-License-Identifier: MIT
/*
 * The sink under a module's identity (issue 27 item 8): with an identity
 * executor bound (lib/base/rd_fsid.h, as rdcpd binds one for a module's
 * uid/gid), every call the kernel checks against the caller runs as that
 * identity, none as the daemon's root: an existing partial it may not
 * write is not resumed, a directory it may not write gets no xattr, a node
 * it does not own keeps its mode. Needs root (skipped otherwise).
 */
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
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/base/rd_fsid.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_priv.h"

#define NOBODY 65534
#define PCH    (128u << 10) /* partials are kept only above RD_SINK_SMALL_FILE */

static char top[PATH_MAX];
static int top_fd = -1;

static const char *tp(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", top, rel);
	return buf[i];
}

static int setup(void **state)
{
	/* /tmp: outside Bazel's sandbox (tagged local), with user xattrs on most systems */
	snprintf(top, sizeof(top), "/tmp/sink_identity_test.XXXXXX");
	assert_non_null(mkdtemp(top));
	assert_int_equal(chmod(top, 0755), 0);
	/* dest: anyone may create and remove entries (no sticky bit) */
	assert_int_equal(mkdir(tp("dest"), 0777), 0);
	assert_int_equal(chmod(tp("dest"), 0777), 0);
	top_fd = open(top, O_RDONLY | O_DIRECTORY);
	assert_true(top_fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 32];

	close(top_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static void need_root(void)
{
	if (geteuid() != 0) {
		print_message("not root: a module identity cannot be tested here\n");
		skip();
	}
}

static struct rd_sink *sopen(unsigned flags)
{
	struct rd_sink *s;
	struct rd_err err;

	rd_err_clear(&err);
	assert_int_equal(rd_sink_open(&s, top_fd, "dest", flags, 022, &err), 0);
	return s;
}

static struct rd_fsid *as_nobody(void)
{
	struct rd_fsid *x;
	struct rd_err err;

	rd_err_clear(&err);
	if (rd_fsid_start(&x, NOBODY, NOBODY, &err))
		fail_msg("%s", err.msg);
	rd_fsid_bind(x);
	return x;
}

static void back_to_root(struct rd_fsid *x)
{
	rd_fsid_bind(NULL);
	rd_fsid_stop(x);
}

/*
 * A partial kept by root's session is not resumed (opened for writing) as
 * nobody: the data file is root's, 0600, whatever its record says.
 */
static void test_root_partial_not_resumed(void **state)
{
	struct rd_sink_meta m = {.mode = S_IFREG | 0644, .size = 3 * PCH + 10};
	struct rd_sink_file *f;
	struct rd_fsid *x;
	struct rd_sink *s;
	static char chunk[PCH];
	struct stat st;

	need_root();
	memset(chunk, 'k', sizeof(chunk));
	m.mtime_sec = 12345;
	/* as root: one verified chunk kept in .rdcp-partial.f (root's, 0600) */
	s = sopen(0);
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, PCH), 0);
	rd_sink_file_chunk_done(f, 1, 1);
	rd_sink_file_abort(f);
	rd_sink_close(s);
	assert_int_equal(stat(tp("dest/.rdcp-partial.f"), &st), 0);
	assert_int_equal(st.st_uid, 0);
	/* its record readable by anyone: only the data file (0600) is root's alone */
	assert_int_equal(chmod(tp("dest/.rdcp-partial.f.rec"), 0644), 0);

	/* as nobody: the same source does not resume into root's file */
	x = as_nobody();
	s = sopen(0);
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "f", 1, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	rd_sink_close(s);
	back_to_root(x);
	/* what landed is nobody's, from a partial nobody made */
	assert_int_equal(stat(tp("dest/f"), &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
}

/* No xattr on an existing directory nobody may not write (root's, 0755). */
static void test_dir_xattr_as_identity(void **state)
{
	struct rd_fsid *x;
	struct rd_sink *s;
	char v[8];
	int r;

	need_root();
	assert_int_equal(mkdir(tp("dest/rootdir"), 0755), 0);
	if (setxattr(tp("dest"), "user.probe", "1", 1, 0) < 0) {
		print_message("no user xattrs on %s: %s\n", top, strerror(errno));
		skip();
	}
	x = as_nobody();
	s = sopen(RD_SINK_XATTRS);
	r = rd_sink_dir_xattr(s, "rootdir", 7, 0, "user.evil", 9, "1", 1);
	rd_sink_close(s);
	back_to_root(x);
	assert_int_equal(r, RD_SINK_NOTE); /* "not permitted": a note, not a failure */
	assert_int_equal(getxattr(tp("dest/rootdir"), "user.evil", v, sizeof(v)), -1);
	assert_int_equal(errno, ENODATA);
}

/* A node that is not nobody's (root's fifo, 0600) keeps its mode. */
static void test_node_mode_as_identity(void **state)
{
	struct rd_sink_meta m = {.mode = S_IFIFO | 0666};
	struct rd_fsid *x;
	struct rd_sink *s;
	struct stat st;
	int dfd, r;

	need_root();
	assert_int_equal(mkfifo(tp("dest/rootfifo"), 0600), 0);
	assert_int_equal(chmod(tp("dest/rootfifo"), 0600), 0);
	dfd = open(tp("dest"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	x = as_nobody();
	s = sopen(RD_SINK_PRESERVE_MODE | RD_SINK_SPECIALS);
	r = rd_sink__node_meta(s, dfd, "rootfifo", &m, "rootfifo", 8);
	rd_sink_close(s);
	back_to_root(x);
	close(dfd);
	assert_true(r < 0); /* chmod: not permitted */
	assert_int_equal(stat(tp("dest/rootfifo"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_root_partial_not_resumed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dir_xattr_as_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_node_mode_as_identity, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
