// SPDX-License-Identifier: MIT
/*
 * Every protocol-error path of the engine: one engine (receiver or
 * sender) runs in a thread on one end of a loopback pair, this test plays
 * a broken peer on the other end with hand-made messages, and checks that
 * the engine ends with -RD_EPROTO naming the fault and tells the peer so
 * with an ERROR message.
 */
#include <errno.h>
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

#define CH 4096u

static char g_root[256];

struct peer {
	struct rd_conn *me;	 /* the scripted end */
	struct rd_conn *engine;	 /* the engine's end */
	struct rd_engine e;
	int send_side;		 /* the engine sends (else it receives) */
	struct rd_tree *t;
	struct rd_sink *sink;
	pthread_t th;
	int ret;
	/* what the engine sent us */
	int got_error;
	uint16_t error_code;
	char error_text[RD_MSG_TEXT_MAX + 1];
	struct rd_msg_get gets[64];
	unsigned ngets;
	uint32_t file_ids[64];
	uint64_t file_sizes[64];
	unsigned nfiles;
};

static void *engine_main(void *arg)
{
	struct peer *p = arg;

	if (p->send_side)
		p->ret = rd_engine_send(&p->e, p->engine, p->t);
	else
		p->ret = rd_engine_recv(&p->e, p->engine, p->sink);
	rd_conn_close(p->engine);
	return NULL;
}

static void put_file(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint8_t b[CH];
	size_t n;

	assert_true(fd >= 0);
	memset(b, 0x42, sizeof(b));
	for (; size; size -= n) {
		n = size < sizeof(b) ? size : sizeof(b);
		assert_int_equal(write(fd, b, n), (ssize_t)n);
	}
	close(fd);
}

static void start(struct peer *p, int engine_sends)
{
	struct rd_engine_opts eo = {.chunk_size = CH, .pool_bytes = 8 * CH, .depth = 4};
	struct rd_conn_opts co = {.ctrl_depth = 32, .timeout_ms = 5000};
	struct rd_err err;
	char path[400];
	const char *srcs[1] = {path};
	int dfd;

	memset(p, 0, sizeof(*p));
	snprintf(g_root, sizeof(g_root), "%s/protoXXXXXX",
		 getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(g_root));
	p->send_side = engine_sends;
	assert_int_equal(rd_engine_init(&p->e, &eo), 0);
	if (engine_sends) {
		snprintf(path, sizeof(path), "%s/f", g_root);
		put_file(path, 3 * CH);
		assert_int_equal(rd_tree_open_paths(&p->t, srcs, 1, 0, &err), 0);
	} else {
		dfd = open(g_root, O_RDONLY | O_DIRECTORY);
		assert_int_equal(rd_sink_open(&p->sink, dfd, "", 0, 022, &err), 0);
		close(dfd);
	}
	assert_int_equal(rd_loop_pair(&p->me, &p->engine, &co, NULL, NULL, &err), 0);
	assert_int_equal(pthread_create(&p->th, NULL, engine_main, p), 0);
}

/* Consume what the engine sent; returns once an ERROR came or it hung up. */
static int pump(struct peer *p, int timeout_ms)
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m;
	const char *why;
	int r = 0;

	for (;;) {
		while (rd_conn_recv(p->me, &buf, &len) == 1) {
			assert_int_equal(rd_msg_decode(buf, len, &m, &why), 0);
			if (m.hdr.type == RD_MSG_ERROR) {
				p->got_error = 1;
				p->error_code = m.u.error.code;
				snprintf(p->error_text, sizeof(p->error_text), "%.*s",
					 (int)m.u.error.text.len, m.u.error.text.ptr);
			} else if (m.hdr.type == RD_MSG_GET && p->ngets < 64) {
				p->gets[p->ngets++] = m.u.get;
			} else if (m.hdr.type == RD_MSG_FILE && p->nfiles < 64) {
				p->file_ids[p->nfiles] = m.u.file.id;
				p->file_sizes[p->nfiles++] = m.u.file.size;
			}
			rd_conn_recv_done(p->me);
		}
		if (p->got_error || r < 0 || timeout_ms <= 0)
			return r;
		r = rd_conn_poll(p->me, 50);
		timeout_ms -= 50;
	}
}

static void say(struct peer *p, struct rd_msg *m)
{
	struct rd_err err;
	int i;

	for (i = 0; i < 200; i++) {
		int r = rd_engine_send_msg(p->me, m, &err);

		if (r != RD_XPORT_BUSY) {
			assert_int_equal(r, 0);
			return;
		}
		pump(p, 20);
	}
	fail_msg("no credit to send a %s", rd_msg_type_name(m->hdr.type));
}

/* The engine must end with -RD_EPROTO, name `what`, and tell us. */
static void expect_proto_err(struct peer *p, const char *what)
{
	pump(p, 5000);
	pthread_join(p->th, NULL);
	rd_conn_close(p->me);
	if (p->ret != -RD_EPROTO || !strstr(p->e.err.msg, what))
		fail_msg("engine returned %d (%s), expected a protocol error naming '%s'", p->ret,
			 p->e.err.msg, what);
	assert_true(p->got_error);
	assert_int_equal(p->error_code, RD_EPROTO);
	assert_non_null(strstr(p->error_text, what));
	rd_engine_fini(&p->e);
	rd_tree_close(p->t);
	rd_sink_close(p->sink);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
		assert_int_equal(system(cmd), 0);
	}
}

static struct rd_msg file_msg(uint32_t id, uint8_t type, uint8_t flags, uint64_t size,
			      const char *name)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_FILE;
	m.u.file.id = id;
	m.u.file.type = type;
	m.u.file.flags = flags;
	m.u.file.mode = (type == RD_FT_DIR ? 040755 : 0100644);
	m.u.file.size = size;
	m.u.file.path.ptr = name;
	m.u.file.path.len = (uint16_t)strlen(name);
	return m;
}

static struct rd_msg simple(uint8_t type)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = type;
	return m;
}

/* --- against the receiver --- */

static void test_recv_file_out_of_order(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(2, RD_FT_REG, RD_FF_ROOT, 10, "x");
	say(&p, &m);
	expect_proto_err(&p, "FILE ids out of order");
}

static void test_recv_file_after_end(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_END);

	start(&p, 0);
	say(&p, &m);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 10, "x");
	say(&p, &m);
	expect_proto_err(&p, "FILE after END");
}

static void test_recv_post_on_file(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT | RD_FF_POST, 10, "x");
	say(&p, &m);
	expect_proto_err(&p, "POST flag on a non-directory");
}

static void test_recv_size_on_dir(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_DIR, RD_FF_ROOT, 10, "d");
	say(&p, &m);
	expect_proto_err(&p, "size on a non-regular entry");
}

static void test_recv_window_overrun(void **state)
{
	struct peer p;
	struct rd_msg m;
	char name[RD_WINDOW_FILES + 1][8];
	unsigned i;

	start(&p, 0);
	for (i = 1; i <= RD_WINDOW_FILES + 1; i++) {
		snprintf(name[i - 1], sizeof(name[0]), "f%u", i);
		/* regular files whose chunks never come: none can finish */
		m = file_msg(i, RD_FT_REG, RD_FF_ROOT, CH, name[i - 1]);
		say(&p, &m);
	}
	expect_proto_err(&p, "more entries outstanding than the window allows");
}

static void test_recv_data_not_requested(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 100, "x");
	say(&p, &m);
	m = simple(RD_MSG_DATA);
	m.u.data.id = 1;
	m.u.data.kind = RD_GET_DATA;
	m.u.data.slot = 999;
	m.u.data.len = 100;
	say(&p, &m);
	expect_proto_err(&p, "DATA for a slot that was not requested");
}

static void wait_gets(struct peer *p, unsigned n)
{
	int i;

	for (i = 0; i < 100 && p->ngets < n; i++)
		pump(p, 50);
	assert_true(p->ngets >= n);
}

static void test_recv_data_digest_length(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 100, "x");
	say(&p, &m);
	wait_gets(&p, 1);
	m = simple(RD_MSG_DATA);
	m.u.data.id = 1;
	m.u.data.kind = p.gets[0].kind;
	m.u.data.slot = p.gets[0].slot;
	m.u.data.chunk = p.gets[0].chunk;
	m.u.data.seq = p.gets[0].seq;
	m.u.data.len = 100;
	m.u.data.dlen = 3;
	say(&p, &m);
	expect_proto_err(&p, "DATA digest of the wrong length");
}

static void test_recv_sum_out_of_order(void **state)
{
	struct peer p;
	struct rd_msg m;
	char path[400];

	start(&p, 0);
	snprintf(path, sizeof(path), "%s/x", g_root);
	put_file(path, 3 * CH); /* same size there: the receiver asks for SUMs */
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 3 * CH, "x");
	say(&p, &m);
	wait_gets(&p, 2);
	assert_int_equal(p.gets[1].kind, RD_GET_SUM);
	m = simple(RD_MSG_DATA);
	m.u.data.id = 1;
	m.u.data.kind = RD_GET_SUM;
	m.u.data.slot = p.gets[1].slot;
	m.u.data.chunk = p.gets[1].chunk; /* chunk 1 before chunk 0 */
	m.u.data.seq = p.gets[1].seq;
	m.u.data.len = CH;
	m.u.data.dlen = (uint8_t)p.e.dg->sum_size;
	say(&p, &m);
	expect_proto_err(&p, "SUM answer out of order");
}

static void test_recv_chunk_err_unknown_file(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_CHUNK_ERR);

	start(&p, 0);
	m.u.chunk_err.id = 7;
	say(&p, &m);
	expect_proto_err(&p, "CHUNK_ERR for an unknown file");
}

static void test_recv_chunk_err_not_requested(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 100, "x");
	say(&p, &m);
	m = simple(RD_MSG_CHUNK_ERR);
	m.u.chunk_err.id = 1;
	m.u.chunk_err.chunk = 5;
	say(&p, &m);
	expect_proto_err(&p, "CHUNK_ERR for a chunk that was not requested");
}

static void test_recv_end_mismatch(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_END);

	start(&p, 0);
	m.u.end.nfiles = 3;
	say(&p, &m);
	expect_proto_err(&p, "END does not match the entries sent");
}

static void test_recv_fin_first(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_FIN);

	start(&p, 0);
	say(&p, &m);
	expect_proto_err(&p, "FIN before ours");
}

static void test_recv_unexpected(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_DONE);

	start(&p, 0);
	say(&p, &m);
	expect_proto_err(&p, "unexpected message from the sender");
}

static void test_recv_undecodable(void **state)
{
	struct peer p;
	uint8_t raw[RD_HDR_LEN] = {99, 0, 0, 0, 0, 0, 0, 0};

	start(&p, 0);
	assert_int_equal(rd_conn_send(p.me, raw, sizeof(raw)), 0);
	expect_proto_err(&p, "broke the protocol");
}

/* --- against the sender --- */

static void wait_file(struct peer *p)
{
	int i;

	for (i = 0; i < 100 && !p->nfiles; i++)
		pump(p, 50);
	assert_true(p->nfiles >= 1);
}

static uint64_t g_seq;

static struct rd_msg get_msg(uint32_t id, uint64_t chunk, uint32_t len)
{
	struct rd_msg m = simple(RD_MSG_GET);

	m.u.get.seq = ++g_seq;
	m.u.get.id = id;
	m.u.get.kind = RD_GET_SUM; /* no write needed to answer */
	m.u.get.chunk = chunk;
	m.u.get.len = len;
	return m;
}

static void test_send_get_unknown(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 1);
	wait_file(&p);
	m = get_msg(99, 0, CH);
	say(&p, &m);
	expect_proto_err(&p, "GET for an entry that is not an open file");
}

static void test_send_get_beyond_end(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 1);
	wait_file(&p);
	m = get_msg(p.file_ids[0], 3, CH);
	say(&p, &m);
	expect_proto_err(&p, "GET beyond the end of the file");
}

static void test_send_get_slot_too_small(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 1);
	wait_file(&p);
	m = get_msg(p.file_ids[0], 0, 10);
	m.u.get.kind = RD_GET_DATA;
	say(&p, &m);
	expect_proto_err(&p, "GET slot smaller than the chunk");
}

static void test_send_get_seq_not_increasing(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 1);
	wait_file(&p);
	m = get_msg(p.file_ids[0], 0, CH);
	m.u.get.seq = 5;
	say(&p, &m);
	m = get_msg(p.file_ids[0], 1, CH);
	m.u.get.seq = 3;
	say(&p, &m);
	expect_proto_err(&p, "GET sequence number not increasing");
}

static void test_send_done_unknown(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_DONE);

	start(&p, 1);
	wait_file(&p);
	m.u.done.id = 77;
	say(&p, &m);
	expect_proto_err(&p, "DONE for an unknown entry");
}

static void test_send_fin_early(void **state)
{
	struct peer p;
	struct rd_msg m = simple(RD_MSG_FIN);

	start(&p, 1);
	wait_file(&p);
	say(&p, &m);
	expect_proto_err(&p, "FIN before every entry was answered");
}

static void test_send_unexpected(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 1);
	wait_file(&p);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 10, "x");
	say(&p, &m);
	expect_proto_err(&p, "unexpected message from the receiver");
}

static void test_send_undecodable(void **state)
{
	struct peer p;
	uint8_t raw[RD_HDR_LEN + 4] = {RD_MSG_GET, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4};

	start(&p, 1);
	wait_file(&p);
	assert_int_equal(rd_conn_send(p.me, raw, sizeof(raw)), 0);
	expect_proto_err(&p, "broke the protocol");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recv_file_out_of_order),
		cmocka_unit_test(test_recv_file_after_end),
		cmocka_unit_test(test_recv_post_on_file),
		cmocka_unit_test(test_recv_size_on_dir),
		cmocka_unit_test(test_recv_window_overrun),
		cmocka_unit_test(test_recv_data_not_requested),
		cmocka_unit_test(test_recv_data_digest_length),
		cmocka_unit_test(test_recv_sum_out_of_order),
		cmocka_unit_test(test_recv_chunk_err_unknown_file),
		cmocka_unit_test(test_recv_chunk_err_not_requested),
		cmocka_unit_test(test_recv_end_mismatch),
		cmocka_unit_test(test_recv_fin_first),
		cmocka_unit_test(test_recv_unexpected),
		cmocka_unit_test(test_recv_undecodable),
		cmocka_unit_test(test_send_get_unknown),
		cmocka_unit_test(test_send_get_beyond_end),
		cmocka_unit_test(test_send_get_slot_too_small),
		cmocka_unit_test(test_send_get_seq_not_increasing),
		cmocka_unit_test(test_send_done_unknown),
		cmocka_unit_test(test_send_fin_early),
		cmocka_unit_test(test_send_unexpected),
		cmocka_unit_test(test_send_undecodable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
