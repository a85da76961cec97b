// SPDX-License-Identifier: MIT
/*
 * -S and -H end to end over the loopback transport, both engines real
 * (issue 27 items 10 and 11): a sparse file resumed onto a partial that
 * holds other bytes comes out byte-exact, holes included; link groups
 * land as links with the link-group flags of protocol 10 and without
 * them, and as copies when the sender's link table has no room.
 */
#include <fcntl.h>
#include <pthread.h>
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

#include "lib/engine/rd_engine.h"
#include "lib/xport/rd_xport_loop.h"

#define CH	    4096u
#define SPARSE_SIZE (64 * CH)

static char g_root[256], g_src[300], g_dst[300];

static int setup(void **state)
{
	const char *t = getenv("TEST_TMPDIR");

	snprintf(g_root, sizeof(g_root), "%s/metaXXXXXX", t ? t : "/tmp");
	assert_non_null(mkdtemp(g_root));
	snprintf(g_src, sizeof(g_src), "%s/src", g_root);
	snprintf(g_dst, sizeof(g_dst), "%s/dst", g_root);
	assert_int_equal(mkdir(g_src, 0755), 0);
	assert_int_equal(mkdir(g_dst, 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

struct run {
	struct rd_engine se, re;
	struct rd_conn *a;
	struct rd_tree *t;
	int sret, rret;
};

static void *sender_main(void *arg)
{
	struct run *r = arg;

	r->sret = rd_engine_send(&r->se, r->a, r->t);
	rd_conn_close(r->a);
	return NULL;
}

/* g_src into g_dst (as dst/src/...), the walk reading what tflags ask. */
static void run_copy(struct run *r, unsigned tflags, struct rd_engine_opts eo)
{
	struct rd_conn_opts co = {.ctrl_depth = 16, .timeout_ms = 5000};
	const char *srcs[1] = {g_src};
	struct rd_conn *b = NULL;
	struct rd_sink *sink = NULL;
	struct rd_err err;
	pthread_t th;
	int dfd;

	eo.chunk_size = CH;
	eo.pool_bytes = 8 * CH;
	eo.depth = 4;
	eo.digest = "sha256";
	assert_int_equal(rd_engine_init(&r->se, &eo), 0);
	assert_int_equal(rd_engine_init(&r->re, &eo), 0);
	assert_int_equal(rd_tree_open_paths(&r->t, srcs, 1, tflags, &err), 0);
	dfd = open(g_dst, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(rd_sink_open(&sink, dfd, "", 0, 022, &err), 0);
	close(dfd);
	assert_int_equal(rd_loop_pair(&r->a, &b, &co, NULL, NULL, &err), 0);
	assert_int_equal(pthread_create(&th, NULL, sender_main, r), 0);
	r->rret = rd_engine_recv(&r->re, b, sink);
	rd_conn_close(b);
	pthread_join(th, NULL);
	rd_sink_close(sink);
	rd_tree_close(r->t);
	rd_engine_fini(&r->se);
	rd_engine_fini(&r->re);
}

static void fill(int fd, off_t off, size_t len, uint8_t byte)
{
	uint8_t b[CH];

	memset(b, byte, sizeof(b));
	for (; len; len -= CH, off += CH)
		assert_int_equal(pwrite(fd, b, CH, off), CH);
}

static int same_bytes(const char *a, const char *b, off_t len)
{
	uint8_t x[CH], y[CH];
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY), same = fa >= 0 && fb >= 0;
	off_t off;

	for (off = 0; same && off < len; off += CH)
		same =
		    pread(fa, x, CH, off) == CH && pread(fb, y, CH, off) == CH && !memcmp(x, y, CH);
	close(fa);
	close(fb);
	return same;
}

/*
 * Item 10: the partial of a sparse file, kept by an earlier copy and
 * claimed whole by its record, holds other bytes everywhere (a copy of
 * another version with the same size and mtime, or planted). -S sends
 * only the source's data pieces, which no SUM can vouch for, so nothing
 * of the partial may stay: the file lands byte-exact, its holes zeros
 * (and holes).
 */
static void test_sparse_onto_resumed_partial(void **state)
{
	struct rd_engine_opts eo = {0};
	struct rd_sink_meta m = {.mode = S_IFREG | 0644, .size = SPARSE_SIZE};
	struct rd_sink_file *f;
	struct rd_sink *sink;
	struct run r;
	struct stat st, dst;
	struct rd_err err;
	char src[400], out[400];
	uint64_t c;
	int fd;

	/* the source: data in chunks 0 and 24, holes around them */
	snprintf(src, sizeof(src), "%s/sp", g_src);
	fd = open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, SPARSE_SIZE), 0);
	fill(fd, 0, CH, 0x11);
	fill(fd, 24 * CH, CH, 0x22);
	close(fd);
	assert_int_equal(stat(src, &st), 0);

	/* an earlier copy's partial of it, every chunk verified, all 0xaa */
	snprintf(out, sizeof(out), "%s/src", g_dst);
	assert_int_equal(mkdir(out, 0755), 0);
	fd = open(g_dst, O_RDONLY | O_DIRECTORY);
	assert_int_equal(rd_sink_open(&sink, fd, "", 0, 022, &err), 0);
	close(fd);
	rd_sink_set_chunking(sink, CH, "sha256", 1);
	m.mtime_sec = st.st_mtim.tv_sec;
	m.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	assert_int_equal(rd_sink_file_begin(sink, "src/sp", 6, 0, &m, &f), 0);
	for (c = 0; c < SPARSE_SIZE / CH; c++) {
		uint8_t b[CH];

		memset(b, 0xaa, sizeof(b));
		assert_int_equal(rd_sink_file_write(f, b, CH, c * CH), 0);
		rd_sink_file_chunk_done(f, c, 1);
	}
	rd_sink_file_abort(f);
	rd_sink_close(sink);
	snprintf(out, sizeof(out), "%s/src/.rdcp-partial.sp.rec", g_dst);
	assert_int_equal(access(out, F_OK), 0);

	memset(&r, 0, sizeof(r));
	run_copy(&r, RD_TREE_RECURSIVE | RD_TREE_SPARSE, eo);
	assert_int_equal(r.rret, 0);
	assert_int_equal(r.sret, 0);
	snprintf(out, sizeof(out), "%s/src/sp", g_dst);
	assert_true(same_bytes(src, out, SPARSE_SIZE));
	assert_int_equal(stat(out, &dst), 0);
	assert_int_equal(dst.st_size, SPARSE_SIZE);
	assert_true(dst.st_blocks <= st.st_blocks);		    /* the holes stayed holes */
	assert_int_equal(rd_stat_get(&r.re.st.bytes_data), 2 * CH); /* the data pieces only */
}

static ino_t ino_of(const char *name)
{
	char p[400];
	struct stat st;

	snprintf(p, sizeof(p), "%s/src/%s", g_dst, name);
	assert_int_equal(stat(p, &st), 0);
	return st.st_ino;
}

/* a, b: one group of two; c, d, e: one of three; each file's bytes its name. */
static void make_groups(void)
{
	static const char *const links[][2] = {{"a", "b"}, {"c", "d"}, {"c", "e"}};
	char p[400], q[400];
	unsigned i;
	int fd;

	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", g_src, i ? "c" : "a");
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, i ? "c" : "a", 1), 1);
		close(fd);
	}
	for (i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", g_src, links[i][0]);
		snprintf(q, sizeof(q), "%s/%s", g_src, links[i][1]);
		assert_int_equal(link(p, q), 0);
	}
}

/* Item 11: groups land as links, protocol 10 (flags) or older (every file remembered). */
static void test_links_land_as_links(void **state)
{
	struct rd_engine_opts eo = {.hardlinks = 1, .link_marks = 1};
	struct run r;
	int marks;

	make_groups();
	for (marks = 1; marks >= 0; marks--) {
		memset(&r, 0, sizeof(r));
		eo.link_marks = marks;
		run_copy(&r, RD_TREE_RECURSIVE | RD_TREE_HARDLINKS, eo);
		assert_int_equal(r.rret, 0);
		assert_int_equal(r.sret, 0);
		assert_int_equal(ino_of("a"), ino_of("b"));
		assert_int_equal(ino_of("c"), ino_of("d"));
		assert_int_equal(ino_of("c"), ino_of("e"));
		assert_int_not_equal(ino_of("a"), ino_of("c"));
		teardown(state);
		setup(state);
		make_groups();
	}
}

/* Item 11: a sender whose link table has no room sends the later members as copies. */
static void test_links_past_the_table_are_copies(void **state)
{
	struct rd_engine_opts eo = {.hardlinks = 1, .link_marks = 1, .link_table = 1};
	struct run r;

	make_groups();
	memset(&r, 0, sizeof(r));
	run_copy(&r, RD_TREE_RECURSIVE | RD_TREE_HARDLINKS, eo);
	assert_int_equal(r.rret, 0);
	assert_int_not_equal(ino_of("a"), ino_of("b"));
	assert_int_not_equal(ino_of("c"), ino_of("e"));
	assert_int_equal(r.re.st.files_ok, 7); /* the directory and its POST, five files */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sparse_onto_resumed_partial, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_links_land_as_links, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_links_past_the_table_are_copies, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
