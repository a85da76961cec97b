// SPDX-License-Identifier: MIT
#include "lib/engine/rd_engine.h"
#include "lib/base/rd_escape.h"
#include "lib/engine/rd_engine_priv.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

unsigned rd_engine_batch(const struct rd_engine *e)
{
	unsigned b = e->o.window / 2;

	if (!e->o.wide || b < RD_BATCH_MAX)
		return RD_BATCH_MAX;
	return b > RD_BATCH_WIDE ? RD_BATCH_WIDE : b;
}

int rd_engine_init(struct rd_engine *e, const struct rd_engine_opts *o)
{
	int ret;

	memset(e, 0, sizeof(*e));
	e->o = *o;
	if (!e->o.chunk_size)
		e->o.chunk_size = RD_CHUNK_DEFAULT;
	if (!e->o.pool_bytes)
		e->o.pool_bytes = RD_ENGINE_POOL_DEFAULT;
	if (!e->o.depth)
		e->o.depth = RD_ENGINE_DEPTH_DEFAULT;
	if (!e->o.max_retries)
		e->o.max_retries = RD_ENGINE_RETRIES_DEFAULT;
	if (!e->o.link_table)
		e->o.link_table = RD_ENGINE_LINK_TABLE_DEFAULT;
	if (!e->o.digest)
		e->o.digest = RD_DIGEST_DEFAULT;
	if (!e->o.threads)
		e->o.threads = rd_engine_default_threads();
	if (e->o.threads > RD_ENGINE_THREADS_MAX)
		e->o.threads = RD_ENGINE_THREADS_MAX;
	if (e->o.window < RD_WINDOW_FILES)
		e->o.window = RD_WINDOW_FILES;
	if (e->o.window > RD_WINDOW_MAX)
		e->o.window = RD_WINDOW_MAX;
	if (e->o.chunk_size < RD_CHUNK_MIN || e->o.chunk_size > RD_CHUNK_MAX)
		return rd_err_set(&e->err, RD_EUSAGE, 0, "chunk size %u is outside %u..%u",
				  e->o.chunk_size, RD_CHUNK_MIN, RD_CHUNK_MAX);
	ret = rd_digest_open(&e->dg, e->o.digest, &e->err);
	if (!ret) {
		snprintf(e->digest_name, sizeof(e->digest_name), "%s", e->dg->name);
		e->o.digest = e->digest_name;
	}
	clock_gettime(CLOCK_MONOTONIC, &e->idle_since);
	return ret;
}

int rd_engine_idle_check(struct rd_engine *e, const char *peer)
{
	struct timespec now;
	long ms;

	if (e->o.idle_ms <= 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (e->progress != e->idle_mark) {
		e->idle_mark = e->progress;
		e->idle_since = now;
		return 0;
	}
	ms = (long)(now.tv_sec - e->idle_since.tv_sec) * 1000 +
	     (now.tv_nsec - e->idle_since.tv_nsec) / 1000000;
	if (ms < e->o.idle_ms)
		return 0;
	return rd_err_set(&e->err, RD_ETIMEOUT, 0,
			  "no progress with %s for %ld s (no data, no new request; idle "
			  "timeout %d s); giving up",
			  peer, ms / 1000, (e->o.idle_ms + 999) / 1000);
}

int rd_engine_set_digest(struct rd_engine *e, const char *name)
{
	struct rd_digest *d = NULL;
	int ret;

	if (!strcmp(e->dg->name, name))
		return 0;
	ret = rd_digest_open(&d, name, &e->err);
	if (ret) {
		rd_digest_close(d);
		return ret;
	}
	rd_digest_close(e->dg);
	e->dg = d;
	snprintf(e->digest_name, sizeof(e->digest_name), "%s", d->name);
	e->o.digest = e->digest_name;
	return 0;
}

int rd_engine_set_key(struct rd_engine *e, const uint8_t key[RD_DIGEST_KEY_LEN])
{
	int ret = rd_digest_set_key(e->dg, key);

	if (ret)
		return rd_err_copy(&e->err, &e->dg->err);
	memcpy(e->key, key, RD_DIGEST_KEY_LEN);
	e->has_key = 1;
	return 0;
}

int rd_engine_check_key(struct rd_engine *e)
{
	if (!e->dg->keyed || e->dg->has_key)
		return 0;
	return rd_err_set(&e->err, RD_EUSAGE, 0,
			  "checksum '%s' is keyed from the session's TLS keys, and this session "
			  "has none; choose another (--checksum-choice sha256)",
			  e->dg->name);
}

void rd_engine_fini(struct rd_engine *e)
{
	if (!e)
		return;
	rd_digest_close(e->dg);
	e->dg = NULL;
	explicit_bzero(e->key, sizeof(e->key));
	e->has_key = 0;
}

int rd_engine_send_msg(struct rd_conn *c, struct rd_msg *m, struct rd_err *err)
{
	uint8_t buf[RD_CTRL_MAX];
	int len, r;

	len = rd_msg_encode(buf, sizeof(buf), m);
	if (len < 0)
		return rd_err_set(err, RD_EUSAGE, 0, "cannot encode a %s message",
				  rd_msg_type_name(m->hdr.type));
	r = rd_conn_send(c, buf, (size_t)len);
	if (r < 0)
		rd_err_copy(err, rd_conn_err(c));
	return r;
}

int rd_engine_send_msg_wait(struct rd_conn *c, struct rd_msg *m, struct rd_err *err,
			    int timeout_ms)
{
	int r, waited = 0;

	for (;;) {
		r = rd_engine_send_msg(c, m, err);
		if (r != RD_XPORT_BUSY)
			return r;
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return rd_err_set(err, RD_ETIMEOUT, 0, "%s gave no credit to send %s for %d ms",
					  rd_conn_info(c)->peer, rd_msg_type_name(m->hdr.type),
					  waited);
		r = rd_conn_poll(c, 20);
		if (r < 0)
			return rd_err_copy(err, rd_conn_err(c));
		waited += 20;
	}
}

/* Send ERROR to the peer, best effort (the session is ending anyway). */
void rd_engine_send_error(struct rd_conn *c, int status, const char *text)
{
	struct rd_msg m;
	struct rd_err ignore;
	size_t n = strlen(text);

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_ERROR;
	m.u.error.code = (uint16_t)(status < 0 ? -status : status);
	m.u.error.text.ptr = text;
	m.u.error.text.len = (uint16_t)(n > RD_MSG_TEXT_MAX ? RD_MSG_TEXT_MAX : n);
	rd_engine_send_msg_wait(c, &m, &ignore, 1000);
}

void rd_engine_stop_peer(struct rd_conn *c, const char *text, int wait_ms)
{
	struct timespec t0, now;
	const uint8_t *buf;
	size_t len;

	rd_engine_send_error(c, RD_ESTOPPED, text);
	rd_conn_flush(c, wait_ms);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		while (rd_conn_recv(c, &buf, &len) == 1)
			rd_conn_recv_done(c); /* its GETs and CREDITs: nothing to answer now */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >=
		    wait_ms)
			return;
		if (rd_conn_poll(c, 50) < 0)
			return; /* it closed: everything before our ERROR was in its hands */
	}
}

/*
 * The peer's text goes into our message escaped: it can never carry a
 * line break or a terminal control sequence into what we print (issue 7
 * item 11: a peer must not forge output lines).
 */
int rd_engine_fail_remote(struct rd_err *err, const struct rd_msg_error *m, const char *peer)
{
	int code = m->code > 0 && m->code < RD_STATUS_MAX ? m->code : RD_EREMOTE;
	char text[RD_ERR_MSG_MAX];

	rd_escape(text, sizeof(text), m->text.ptr, m->text.len);
	return rd_err_set(err, code, 0, "%s: %s", peer, text);
}

/*
 * The connection failed under us (ret): if the peer's ERROR is already
 * queued, its reason is the one worth telling. A stopping rdcpd sends
 * "the server is shutting down" and then drops its buffers, so our
 * writes fail just after that message arrived.
 */
int rd_engine_conn_lost(struct rd_engine *e, struct rd_conn *c, int ret)
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m;
	const char *why;
	int found;

	if (ret != -RD_ECONN && ret != -RD_ETIMEOUT)
		return ret;
	while (rd_conn_recv(c, &buf, &len) == 1) {
		found = !rd_msg_decode(buf, len, &m, &why) && m.hdr.type == RD_MSG_ERROR;
		if (found)
			ret = rd_engine_fail_remote(&e->err, &m.u.error, rd_conn_info(c)->peer);
		rd_conn_recv_done(c);
		if (found)
			break;
	}
	return ret;
}

/*
 * Buffers of a huge page or more are aligned to it and asked for as huge
 * pages (transparent huge pages, where the kernel has them): touching and
 * pinning 4 MiB as two 2 MiB pages instead of 1,024 small ones (rig, 16 x
 * 4 MiB: fault-in 75-194 ms -> 45 ms, ibv_reg_mr 3.8-5.5 ms -> 2.3 ms), and
 * a NIC maps them with fewer translation entries. Where THP is off the
 * advice is ignored and the buffer is an ordinary one.
 */
#define HUGE_PAGE (2u << 20)

void *rd_engine_pool_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, len >= HUGE_PAGE ? HUGE_PAGE : 4096, len))
		return NULL;
	if (len >= HUGE_PAGE)
		madvise(p, len & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE);
	memset(p, 0, len);
	return p;
}

void rd_engine_reg_account(struct rd_engine *e, int64_t delta)
{
	uint64_t now =
	    atomic_fetch_add_explicit(&e->st.reg_bytes, (uint64_t)delta, memory_order_relaxed) +
	    (uint64_t)delta;

	if (now > e->st.reg_peak)
		e->st.reg_peak = now;
}

uint64_t rd_engine_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t rd_nchunks(uint64_t size, uint32_t chunk)
{
	return size / chunk + (size % chunk ? 1 : 0);
}

uint32_t rd_sparse_len(const struct rd_extent *x, unsigned n, uint32_t chunk, uint64_t idx,
		       uint64_t size)
{
	uint64_t total = 0, off;
	unsigned i;

	for (i = 0; i < n; i++)
		total += rd_sparse_piece(&x[i], chunk, idx, size, &off);
	return (uint32_t)total; /* at most one chunk */
}

uint32_t rd_chunk_len(uint64_t size, uint32_t chunk, uint64_t idx)
{
	uint64_t off = idx * chunk;

	if (off >= size)
		return 0;
	return size - off < chunk ? (uint32_t)(size - off) : chunk;
}

/*
 * The name is guarded by a spinlock held only for one copy of at most 256
 * bytes: the engine sets it once per file, the meter copies it once a
 * second. (A sequence lock starved the reader when names changed faster
 * than it could copy one; see progress_test's whole-names case.)
 */
static void name_lock(atomic_flag *lk)
{
	while (atomic_flag_test_and_set_explicit(lk, memory_order_acquire))
		sched_yield();
}

void rd_engine_stats_set_cur(struct rd_engine_stats *st, const char *name, size_t len,
			     uint64_t size)
{
	size_t n = len < sizeof(st->cur_name) - 1 ? len : sizeof(st->cur_name) - 1;

	name_lock(&st->cur_lock);
	memcpy(st->cur_name, name, n);
	st->cur_name[n] = '\0';
	atomic_flag_clear_explicit(&st->cur_lock, memory_order_release);
	atomic_store_explicit(&st->cur_size, size, memory_order_relaxed);
	atomic_store_explicit(&st->cur_done, 0, memory_order_relaxed);
}

int rd_engine_stats_name(struct rd_engine_stats *st, char *out, size_t len)
{
	size_t n;

	if (!len)
		return -1;
	name_lock(&st->cur_lock);
	n = strnlen(st->cur_name, sizeof(st->cur_name));
	if (n > len - 1)
		n = len - 1;
	memcpy(out, st->cur_name, n);
	atomic_flag_clear_explicit(&st->cur_lock, memory_order_release);
	out[n] = '\0';
	return 0;
}

void rd_engine_set_cur(struct rd_engine *e, const char *path, size_t len, uint64_t size)
{
	rd_engine_stats_set_cur(&e->st, path, len, size);
}

int rd_engine_drain(struct rd_engine *e, struct rd_conn *c, void *ctx,
		    int (*on_msg)(void *ctx, const struct rd_msg *m),
		    int (*proto_err)(void *ctx, const char *why))
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m;
	const char *why;
	int r, n = 0;

	while (rd_conn_recv(c, &buf, &len) == 1) {
		r = rd_msg_decode(buf, len, &m, &why);
		if (r) {
			rd_conn_recv_done(c);
			return proto_err(ctx, why);
		}
		r = on_msg(ctx, &m);
		/* the buffer goes back to the NIC only after the handler is done */
		if (rd_conn_recv_done(c) < 0 && !r)
			r = rd_err_copy(&e->err, rd_conn_err(c));
		if (r < 0)
			return r;
		n++;
	}
	return n;
}

void rd_engine_deleted(struct rd_engine *e, unsigned flags, const char *path, size_t len,
		       const char *text)
{
	if (flags & RD_DLF_OFF)
		e->st.del_off = 1;
	else if (flags & RD_DLF_SKIPPED) {
		e->st.del_limited = 1;
		e->st.del_skipped += text ? strtoull(text, NULL, 10) : 0;
	} else if (flags & RD_DLF_UNMADE) {
		/* an entry counted done had no room after all (late room): it failed */
		e->st.files_failed++;
		if (e->st.files_ok)
			e->st.files_ok--;
	} else if (flags & RD_DLF_FAILED)
		e->st.del_failed++;
	else
		e->st.deleted++;
	if (e->deleted)
		e->deleted(e->report_ctx, flags, path, len, text);
}
