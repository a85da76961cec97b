// SPDX-License-Identifier: MIT
/*
 * The engine's end-to-end test harness (engine_loop_harness.h): moved
 * here from engine_loop_test.c so that more than one test file runs both
 * engines the same way.
 */
#include <dirent.h>
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

#include "lib/engine/engine_loop_harness.h"

char g_root[256];
char g_src[300], g_dst[300];

/* --- files --- */

/* The bytes put_file() writes for size and seed (malloc'd). */
uint8_t *made_bytes(size_t size, unsigned seed)
{
	uint8_t *b = malloc(size ? size : 1);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < size; i++)
		b[i] = (uint8_t)((i * 2654435761u + seed * 40503u) >> 7);
	return b;
}

void put_file(const char *dir, const char *name, size_t size, unsigned seed)
{
	char path[600];
	uint8_t *b = made_bytes(size, seed);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, size), (ssize_t)size);
	close(fd);
	free(b);
}

uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	fstat(fd, &st);
	b = malloc((size_t)st.st_size + 1);
	*len = (size_t)read(fd, b, (size_t)st.st_size);
	close(fd);
	return b;
}

/* Files a and b hold the same bytes. */
int same_paths(const char *a, const char *b)
{
	size_t la = 0, lb = 0;
	uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = x && y && la == lb && !memcmp(x, y, la);

	free(x);
	free(y);
	return same;
}

/* dst/<top>/name equals src/name byte for byte */
int same_file(const char *name)
{
	char a[700], b[700];

	snprintf(a, sizeof(a), "%s/%s", g_src, name);
	snprintf(b, sizeof(b), "%s/src/%s", g_dst, name);
	return same_paths(a, b);
}

/* The received file holds what put_file(size, seed) made: a version of the source. */
int same_as_made(const char *name, size_t size, unsigned seed)
{
	char b[700];
	size_t lb = 0;
	uint8_t *x = made_bytes(size, seed), *y;
	int same;

	snprintf(b, sizeof(b), "%s/src/%s", g_dst, name);
	y = slurp(b, &lb);
	same = y && lb == size && !memcmp(x, y, size);
	free(x);
	free(y);
	return same;
}

int exists_in_dst(const char *name)
{
	char b[700];

	snprintf(b, sizeof(b), "%s/src/%s", g_dst, name);
	return access(b, F_OK) == 0;
}

void rm_rf(const char *path)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

int setup(void **state)
{
	const char *t = getenv("TEST_TMPDIR");

	snprintf(g_root, sizeof(g_root), "%s/engXXXXXX", t ? t : "/tmp");
	assert_non_null(mkdtemp(g_root));
	snprintf(g_src, sizeof(g_src), "%s/src", g_root);
	snprintf(g_dst, sizeof(g_dst), "%s/dst", g_root);
	assert_int_equal(mkdir(g_src, 0755), 0);
	assert_int_equal(mkdir(g_dst, 0755), 0);
	return 0;
}

int teardown(void **state)
{
	rm_rf(g_root);
	return 0;
}

/* --- running both engines --- */

static void report(void *ctx, const char *path, size_t len, int status, const char *msg)
{
	struct run *r = ctx;

	if (status < 0) {
		r->nfailed_reports++;
		r->last_report_status = status;
	} else if (msg) {
		snprintf(r->last_note, sizeof(r->last_note), "%s", msg);
	}
}

static void record_item(struct run *r, int side, const struct rd_item *it)
{
	unsigned n = r->nitems[side];

	if (n >= 64)
		return;
	snprintf(r->item[side][n].path, sizeof(r->item[side][n].path), "%.*s", (int)it->len,
		 it->path);
	r->item[side][n].items = it->items;
	r->item[side][n].type = it->type;
	r->nitems[side]++;
}

static void send_item(void *ctx, const struct rd_item *it)
{
	record_item(ctx, 0, it);
}

static void recv_item(void *ctx, const struct rd_item *it)
{
	record_item(ctx, 1, it);
}

static void *sender_main(void *arg)
{
	struct run *r = arg;

	r->sret = rd_engine_send(&r->se, r->a, r->t);
	rd_conn_close(r->a);
	return NULL;
}

struct tcp_connect {
	const char *port;
	struct rd_conn_opts co;
	struct rd_conn *c;
	int ret;
};

static void *tcp_connect_main(void *arg)
{
	struct tcp_connect *t = arg;
	struct rd_cm_req req = {.ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX};
	struct rd_cm_rep rep;
	struct rd_err err;

	t->ret = rd_conn_connect(&t->c, "127.0.0.1", t->port, &t->co, &req, &rep, &err);
	return NULL;
}

/* Both ends of one TCP connection through the real listener and connect. */
static void tcp_pair(struct rd_conn **a, struct rd_conn **b, const struct rd_conn_opts *co)
{
	struct rd_listener *l = NULL;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rep rep = {.version = RD_PROTO_MAX};
	struct tcp_connect t = {.co = *co};
	struct rd_err err;
	char port[16];
	pthread_t th;

	t.co.transport = RD_XPORT_TCP;
	assert_int_equal(rd_listener_open(&l, "127.0.0.1", "0", 4, RD_XPORT_TCP, &err), 0);
	snprintf(port, sizeof(port), "%u", rd_listener_port(l));
	t.port = port;
	assert_int_equal(pthread_create(&th, NULL, tcp_connect_main, &t), 0);
	assert_int_equal(rd_listener_next(l, 5000, &req, &creq), 0);
	assert_int_equal(rd_conn_accept(req, &t.co, &rep, b, &err), 0);
	pthread_join(th, NULL);
	assert_int_equal(t.ret, 0);
	assert_string_equal(rd_conn_transport(*b), "tcp");
	*a = t.c;
	rd_listener_close(l);
}

void run_copy(struct run *r)
{
	struct rd_conn_opts co = {.ctrl_depth = 16,
				  .timeout_ms = r->timeout_ms ? r->timeout_ms : 5000};
	const char *srcs[2] = {g_src, r->extra_src};
	struct rd_conn *b = NULL;
	struct rd_sink *sink = NULL;
	struct rd_err err;
	pthread_t th;
	int dfd;

	if (!r->eo.chunk_size)
		r->eo.chunk_size = CH;
	if (!r->eo.pool_bytes)
		r->eo.pool_bytes = 8 * CH;
	if (!r->eo.depth)
		r->eo.depth = 4;
	assert_int_equal(rd_engine_init(&r->se, &r->eo), 0);
	assert_int_equal(rd_engine_init(&r->re, &r->eo), 0);
	if (r->send_no_pack)
		r->se.o.pack = 0;
	if (r->send_no_batch)
		r->se.o.batch = 0;
	if (r->recv_no_batch)
		r->re.o.batch = 0;
	if (r->send_no_wide)
		r->se.o.wide = 0;
	if (r->recv_no_wide)
		r->re.o.wide = 0;
	r->se.o.pace = r->send_pace;
	r->re.o.pace = r->recv_pace;
	if (r->send_no_items)
		r->se.o.items = 0;
	r->se.item = send_item;
	r->re.item = recv_item;
	r->re.report_ctx = r;
	if (r->key) {
		assert_int_equal(rd_engine_set_key(&r->se, r->key), 0);
		assert_int_equal(rd_engine_set_key(&r->re, r->key), 0);
	}
	r->se.report = report;
	r->se.report_ctx = r;
	assert_int_equal(
	    rd_tree_open_paths(&r->t, srcs, r->extra_src ? 2 : 1, RD_TREE_RECURSIVE, &err), 0);
	dfd = open(g_dst, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(rd_sink_open(&sink, dfd, "",
				      r->sink_flags | (r->sel ? RD_SINK_PRESERVE_TIMES : 0), 022,
				      &err),
			 0);
	close(dfd);
	if (r->sel)
		rd_sink_set_select(sink, r->sel);
	/* with workers, TCP payloads move on the transport's bulk threads as in rdcp */
	co.bulk_thread = r->eo.threads > 1;
	if (r->tcp)
		tcp_pair(&r->a, &b, &co);
	else
		assert_int_equal(rd_loop_pair(&r->a, &b, &co, r->hook, r->hctx, &err), 0);
	assert_int_equal(pthread_create(&th, NULL, sender_main, r), 0);
	r->rret = rd_engine_recv(&r->re, b, sink);
	rd_conn_close(b);
	pthread_join(th, NULL);
	rd_sink_close(sink);
	rd_tree_close(r->t);
	rd_engine_fini(&r->se);
	rd_engine_fini(&r->re);
}

/* Nothing but final names under dst/src (no partial, record or temp). */
int no_litter(void)
{
	char b[700];
	struct dirent *de;
	DIR *d;
	int clean = 1;

	snprintf(b, sizeof(b), "%s/src", g_dst);
	d = opendir(b);
	if (!d)
		return 1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".rdcp", 5))
			clean = 0;
	closedir(d);
	return clean;
}

/* NSMALL files of 1..3000 bytes, an empty one and a large one among them */
void make_small_set(void)
{
	char name[32];
	int i;

	for (i = 0; i < NSMALL; i++) {
		snprintf(name, sizeof(name), "s%03d", i);
		put_file(g_src, name, (size_t)(i * 997) % 3000 + 1, (unsigned)i + 100);
	}
	put_file(g_src, "s_empty", 0, 1);
	put_file(g_src, "s_large", 5 * PCH + 17, 2);
}

int small_set_copied(void)
{
	char name[32];
	int i, ok = same_file("s_empty") && same_file("s_large");

	for (i = 0; i < NSMALL; i++) {
		snprintf(name, sizeof(name), "s%03d", i);
		ok = ok && same_file(name);
	}
	return ok;
}

/* --- batches (RD_OF_BATCH, issue 13): many entries per FILES / DONES --- */

enum rd_loop_action watch_batches(void *ctx, struct rd_loop_event *ev)
{
	struct batch_watch *w = ctx;
	unsigned n = 0;
	int first;

	/* FILES, FILEZ and DONES: the payload starts with u16 n */
	if (ev->len >= RD_HDR_LEN + 2)
		n = (unsigned)ev->msg[RD_HDR_LEN] << 8 | ev->msg[RD_HDR_LEN + 1];
	if (ev->side == 0 && ev->type == RD_MSG_FILE)
		w->file++;
	if (ev->side == 0 && (ev->type == RD_MSG_FILES || ev->type == RD_MSG_FILEZ)) {
		first = !w->files && !w->filez;
		if (ev->type == RD_MSG_FILES)
			w->files++;
		else
			w->filez++;
		w->max_files_n = n > w->max_files_n ? n : w->max_files_n;
		if (first && w->delay_first) {
			ev->delay_ms = w->delay_first;
			return RD_LOOP_DELAY;
		}
	}
	if (ev->side == 1 && ev->type == RD_MSG_DONE)
		w->done++;
	if (ev->side == 1 && ev->type == RD_MSG_DONES) {
		w->dones++;
		w->max_dones_n = n > w->max_dones_n ? n : w->max_dones_n;
	}
	return RD_LOOP_PASS;
}

void batch_run(struct run *r, struct batch_watch *w)
{
	r->hook = watch_batches;
	r->hctx = w;
	r->eo.pack = 1;
	r->eo.batch = 1;
	r->eo.chunk_size = PCH;
	r->eo.pool_bytes = 8 * PCH;
	r->eo.depth = 4;
	run_copy(r);
}
