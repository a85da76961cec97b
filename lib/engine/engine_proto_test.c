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
	unsigned ndata;		  /* DATA answers */
	uint16_t done_status[64]; /* DONE per entry id (1..63), 0xffff: none yet */
	int fin_seen;
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

/*
 * One engine (engine_sends: a sender of one file f of fsize bytes, else a
 * receiver into the test's directory) with the options eo, and our end.
 */
static void start_with(struct peer *p, int engine_sends, struct rd_engine_opts eo, size_t fsize)
{
	struct rd_conn_opts co = {.ctrl_depth = 32, .timeout_ms = 5000};
	struct rd_err err;
	char path[400];
	const char *srcs[1] = {path};
	int dfd;

	memset(p, 0, sizeof(*p));
	memset(p->done_status, 0xff, sizeof(p->done_status));
	snprintf(g_root, sizeof(g_root), "%s/protoXXXXXX",
		 getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(g_root));
	p->send_side = engine_sends;
	assert_int_equal(rd_engine_init(&p->e, &eo), 0);
	if (engine_sends) {
		snprintf(path, sizeof(path), "%s/f", g_root);
		put_file(path, fsize);
		assert_int_equal(rd_tree_open_paths(&p->t, srcs, 1, 0, &err), 0);
	} else {
		dfd = open(g_root, O_RDONLY | O_DIRECTORY);
		assert_int_equal(rd_sink_open(&p->sink, dfd, "", 0, 022, &err), 0);
		close(dfd);
	}
	assert_int_equal(rd_loop_pair(&p->me, &p->engine, &co, NULL, NULL, &err), 0);
	assert_int_equal(pthread_create(&p->th, NULL, engine_main, p), 0);
}

static void start(struct peer *p, int engine_sends)
{
	struct rd_engine_opts eo = {.chunk_size = CH, .pool_bytes = 8 * CH, .depth = 4};

	start_with(p, engine_sends, eo, 3 * CH);
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
			} else if (m.hdr.type == RD_MSG_DATA) {
				p->ndata++;
			} else if (m.hdr.type == RD_MSG_DONE && m.u.done.id < 64) {
				p->done_status[m.u.done.id] = m.u.done.status;
			} else if (m.hdr.type == RD_MSG_FIN) {
				p->fin_seen = 1;
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
	/* an engine that saw nothing wrong would wait on: hang up, it fails below */
	if (!p->got_error) {
		rd_conn_close(p->me);
		p->me = NULL;
	}
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

/* --- wide batches (protocol 14, RD_OF_WIDE): FILEZ and DONES as agreed --- */

static const struct rd_engine_opts batch_eo = {
    .chunk_size = CH, .pool_bytes = 8 * CH, .depth = 4, .batch = 1};

/* FILES (wide 0) or FILEZ of one entry: file_msg(id 1, a directory, ROOT, "x") */
static struct rd_msg one_entry_batch(int wide, uint8_t *raw, size_t cap)
{
	struct rd_msg m = simple(wide ? RD_MSG_FILEZ : RD_MSG_FILES);
	struct rd_msg f = file_msg(1, RD_FT_DIR, RD_FF_ROOT, 0, "x");
	struct rd_filez z;
	size_t len = 0;

	rd_filez_start(&z);
	if (wide)
		assert_int_equal(rd_filez_put(&z, raw, cap, &len, &f.u.file), 0);
	else
		assert_int_equal(rd_files_put(raw, cap, &len, &f.u.file), 0);
	m.u.files.n = 1;
	m.u.files.id = 1;
	m.u.files.raw = raw;
	m.u.files.rawlen = len;
	return m;
}

static void test_recv_filez_not_agreed(void **state)
{
	uint8_t raw[256];
	struct peer p;
	struct rd_msg m = one_entry_batch(1, raw, sizeof(raw));

	start_with(&p, 0, batch_eo, 0);
	say(&p, &m);
	expect_proto_err(&p, "FILEZ without wide batches agreed");
}

static void test_recv_files_where_filez(void **state)
{
	struct rd_engine_opts eo = batch_eo;
	uint8_t raw[256];
	struct peer p;
	struct rd_msg m = one_entry_batch(0, raw, sizeof(raw));

	eo.wide = 1;
	start_with(&p, 0, eo, 0);
	say(&p, &m);
	expect_proto_err(&p, "FILES where FILEZ was agreed");
}

/* A message by hand: big-endian fields appended (len bytes of v), strings. */
struct bytes {
	uint8_t b[256];
	size_t n;
};

static void be(struct bytes *x, uint64_t v, unsigned len)
{
	while (len--)
		x->b[x->n++] = (uint8_t)(v >> (8 * len));
}

static void be_str(struct bytes *x, const char *s)
{
	be(x, strlen(s), 2);
	memcpy(x->b + x->n, s, strlen(s));
	x->n += strlen(s);
}

/*
 * A FILEZ whose second path, rebuilt from what it keeps of the first
 * ("..b") and its rest ("/x"), is "../x": refused whole, nothing made
 * beside the receiver's directory.
 */
static void test_recv_filez_keep_escapes(void **state)
{
	struct rd_engine_opts eo = batch_eo;
	struct bytes x = {.n = 0};
	char up[600];
	struct peer p;

	be(&x, RD_MSG_FILEZ, 1);
	be(&x, 0, 3); /* 0, credits */
	be(&x, 0, 4); /* the length, below */
	be(&x, 2, 2); /* n */
	be(&x, 1, 4); /* id */
	be(&x, RD_FT_DIR << 16 | RD_FF_ROOT << 8 | RD_FZ_FIRST, 3);
	be(&x, 040755, 4);
	be(&x, 0, 4 + 4 + 8); /* uid, gid, mtime_sec */
	be(&x, 0, 2);	      /* keep */
	be_str(&x, "..b");
	be(&x, RD_FT_DIR << 16, 3); /* no flags, the same fields */
	be(&x, 2, 2);		    /* keep ".." */
	be_str(&x, "/x");
	x.b[7] = (uint8_t)(x.n - RD_HDR_LEN);
	eo.wide = 1;
	start_with(&p, 0, eo, 0);
	/* the receiver's directory's parent, named without it (gone after the test) */
	snprintf(up, sizeof(up), "%.*s/x", (int)(strrchr(g_root, '/') - g_root), g_root);
	assert_int_equal(rd_conn_send(p.me, x.b, x.n), 0);
	expect_proto_err(&p, "'..' path component");
	assert_int_equal(access(up, F_OK), -1);
	assert_int_equal(errno, ENOENT);
}

/* A DONES of n entries, ids 1..n */
static struct rd_msg dones_msg(unsigned n)
{
	struct rd_msg m = simple(RD_MSG_DONES);
	unsigned i;

	m.u.dones.n = (uint16_t)n;
	for (i = 0; i < n; i++)
		m.u.dones.id[i] = i + 1;
	return m;
}

/* More than RD_BATCH_MAX confirmations at once only with RD_OF_WIDE. */
static void test_send_dones_wider_than_agreed(void **state)
{
	struct peer p;
	struct rd_msg m = dones_msg(RD_BATCH_MAX + 1);

	start_with(&p, 1, batch_eo, 3 * CH);
	say(&p, &m);
	expect_proto_err(&p, "DONES wider than agreed");
}

/* With it, the same DONES is read (and refused for what it names: no entry 2). */
static void test_send_dones_wide(void **state)
{
	struct rd_engine_opts eo = batch_eo;
	struct peer p;
	struct rd_msg m = dones_msg(RD_BATCH_MAX + 1);

	eo.wide = 1;
	start_with(&p, 1, eo, 0);
	say(&p, &m);
	expect_proto_err(&p, "DONE for an unknown entry");
}

/* --- issue 27: hard links as agreed, what GETs may make a sender do --- */

/* The test directory and the engine's state, once its thread ended. */
static void cleanup(struct peer *p)
{
	char cmd[300];

	rd_conn_close(p->me);
	rd_engine_fini(&p->e);
	rd_tree_close(p->t);
	rd_sink_close(p->sink);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
	assert_int_equal(system(cmd), 0);
}

static struct rd_msg hlink_msg(uint32_t id, uint8_t flags, const char *name, const char *target)
{
	struct rd_msg m = file_msg(id, RD_FT_HLINK, flags, 0, name);

	m.u.file.target.ptr = target;
	m.u.file.target.len = (uint16_t)strlen(target);
	return m;
}

/* -H is agreed in OPEN: without it an HLINK is a protocol error, not a link. */
static void test_recv_hlink_not_agreed(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT, 0, "f");
	say(&p, &m);
	m = hlink_msg(2, RD_FF_ROOT, "g", "f");
	say(&p, &m);
	expect_proto_err(&p, "hard link without -H agreed");
}

/* Link group flags only with -H on protocol 10. */
static void test_recv_link_flags_not_agreed(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_REG, RD_FF_ROOT | RD_FF_LINKED, 0, "f");
	say(&p, &m);
	expect_proto_err(&p, "link group flags without -H");
}

/* An implied directory (-R, --files-from) is said only with --delete agreed. */
static void test_recv_implied_not_agreed(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 0);
	m = file_msg(1, RD_FT_DIR, RD_FF_ROOT | RD_FF_IMPLIED, 0, "d");
	say(&p, &m);
	expect_proto_err(&p, "implied directory's flag without --delete agreed");
}

static int exists(const char *name)
{
	char p[400];

	snprintf(p, sizeof(p), "%s/%s", g_root, name);
	return access(p, F_OK) == 0;
}

/*
 * With -H: an HLINK may name only a file of this session that starts a
 * link group, until its group's last link; a file that was there before
 * (a planted second name for it), one that started no group, one past
 * its last link fail their entry, and nothing is linked.
 */
static void test_recv_hlink_targets(void **state)
{
	struct rd_engine_opts eo = {
	    .chunk_size = CH, .pool_bytes = 8 * CH, .depth = 4, .hardlinks = 1, .link_marks = 1};
	struct peer p;
	struct rd_msg m;
	char path[400];
	struct stat a, b;
	int i;

	start_with(&p, 0, eo, 0);
	snprintf(path, sizeof(path), "%s/secret", g_root);
	put_file(path, 10);
	m = hlink_msg(1, RD_FF_ROOT, "pub", "secret");
	say(&p, &m);
	m = file_msg(2, RD_FT_REG, RD_FF_ROOT, 0, "plain");
	say(&p, &m);
	m = hlink_msg(3, RD_FF_ROOT, "p2", "plain");
	say(&p, &m);
	m = file_msg(4, RD_FT_REG, RD_FF_ROOT | RD_FF_LINKED, 0, "lead");
	say(&p, &m);
	m = hlink_msg(5, RD_FF_ROOT | RD_FF_LINK_LAST, "l2", "lead");
	say(&p, &m);
	m = hlink_msg(6, RD_FF_ROOT, "l3", "lead");
	say(&p, &m);
	m = simple(RD_MSG_END);
	m.u.end.nfiles = 6;
	say(&p, &m);
	for (i = 0; i < 100 && !p.fin_seen; i++)
		pump(&p, 50);
	assert_true(p.fin_seen);
	m = simple(RD_MSG_FIN);
	say(&p, &m);
	pthread_join(p.th, NULL);
	assert_int_equal(p.ret, -RD_EPARTIAL);
	assert_int_not_equal(p.done_status[1], 0);
	assert_int_equal(p.done_status[2], 0);
	assert_int_not_equal(p.done_status[3], 0);
	assert_int_equal(p.done_status[4], 0);
	assert_int_equal(p.done_status[5], 0);
	assert_int_not_equal(p.done_status[6], 0);
	assert_false(exists("pub"));
	assert_false(exists("p2"));
	assert_false(exists("l3"));
	snprintf(path, sizeof(path), "%s/lead", g_root);
	assert_int_equal(stat(path, &a), 0);
	snprintf(path, sizeof(path), "%s/l2", g_root);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	cleanup(&p);
}

/* A chunk is summed once: a SUM for it again buys no more hashing. */
static void test_send_sum_twice(void **state)
{
	struct peer p;
	struct rd_msg m;

	start(&p, 1);
	wait_file(&p);
	m = get_msg(p.file_ids[0], 0, CH);
	say(&p, &m);
	m = get_msg(p.file_ids[0], 0, CH);
	say(&p, &m);
	expect_proto_err(&p, "SUM asked again for a chunk already summed");
}

/*
 * The same chunk's DATA over and over: at most RD_GET_WORK_X times the
 * bytes announced plus RD_GET_WORK_SLACK chunks are read and sent, then
 * the session ends.
 */
static void test_send_read_budget(void **state)
{
	static uint8_t slot[CH];
	struct peer p;
	struct rd_msg m;
	struct rd_mr mr;
	int i;

	start(&p, 1);
	wait_file(&p);
	assert_int_equal(rd_conn_reg(p.me, slot, sizeof(slot), 1, &mr), 0);
	for (i = 0; i < 120 && !p.got_error; i++) {
		m = get_msg(p.file_ids[0], 0, CH);
		m.u.get.kind = RD_GET_DATA;
		m.u.get.addr = (uint64_t)(uintptr_t)slot;
		m.u.get.rkey = mr.rkey;
		say(&p, &m);
		pump(&p, 5);
	}
	print_message("%u DATA answers to 120 GETs of one 3-chunk file's chunk 0\n", p.ndata);
	assert_true(p.ndata <= 5 * 3 + 64);
	rd_conn_dereg(p.me, &mr);
	expect_proto_err(&p, "asked for more reading than the entries announced allow");
}

/*
 * SUMs are not progress one by one: a SUM every 100 ms, each of another
 * chunk, does not keep a session past its idle timeout (400 ms here).
 */
static void test_send_sum_drip_times_out(void **state)
{
	struct rd_engine_opts eo = {
	    .chunk_size = CH, .pool_bytes = 8 * CH, .depth = 4, .idle_ms = 400};
	struct peer p;
	struct rd_err err;
	struct rd_msg m;
	int i;

	start_with(&p, 1, eo, 64 * CH);
	wait_file(&p);
	for (i = 0; i < 30; i++) {
		m = get_msg(p.file_ids[0], (uint64_t)i, CH);
		if (rd_engine_send_msg(p.me, &m, &err))
			break; /* it hung up: what we wait for */
		pump(&p, 100);
	}
	print_message("the sender answered %u of %d SUMs sent 100 ms apart\n", p.ndata, i);
	rd_conn_close(p.me);
	p.me = NULL;
	pthread_join(p.th, NULL);
	if (p.ret != -RD_ETIMEOUT)
		fail_msg("engine returned %d (%s), expected the idle timeout", p.ret, p.e.err.msg);
	cleanup(&p);
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
	    cmocka_unit_test(test_recv_filez_not_agreed),
	    cmocka_unit_test(test_recv_files_where_filez),
	    cmocka_unit_test(test_recv_filez_keep_escapes),
	    cmocka_unit_test(test_send_dones_wider_than_agreed),
	    cmocka_unit_test(test_send_dones_wide),
	    cmocka_unit_test(test_recv_hlink_not_agreed),
	    cmocka_unit_test(test_recv_link_flags_not_agreed),
	    cmocka_unit_test(test_recv_implied_not_agreed),
	    cmocka_unit_test(test_recv_hlink_targets),
	    cmocka_unit_test(test_send_sum_twice),
	    cmocka_unit_test(test_send_read_budget),
	    cmocka_unit_test(test_send_sum_drip_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
