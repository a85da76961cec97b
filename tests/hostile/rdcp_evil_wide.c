// SPDX-License-Identifier: MIT
/*
 * rdcp_evil wide HOST PORT MODULE: protocol 14's wide batches (RD_OF_WIDE:
 * FILEZ, DONES of up to RD_BATCH_WIDE; rd_proto.h "Wide batches") from a
 * hostile client against rdcpd, one session per case.
 *
 * Pushes to MODULE, after an OPEN whose OPEN_OK honoured what the case
 * asked: a FILEZ whose second path, rebuilt from what it keeps of the first
 * and its rest, is "../evil-wide" (the file would land beside the module);
 * one that keeps more of the path than there was; counts over, under, 0
 * and past RD_BATCH_WIDE; a first entry without its fields; a good FILEZ
 * where wide batches were not agreed (protocol 14 without RD_OF_WIDE,
 * protocol 13, RD_OF_WIDE without RD_OF_BATCH) and FILES where they were;
 * RD_OF_WIDE asked on protocol 13. Pulls of MODULE/wide (it must hold more
 * than 128 entries): a DONES of 65 entries without wide batches, on 14 and
 * on 13. Each must end in the server's ERROR naming the reason (printed),
 * before anything of the entries is taken (a DONE or GET back).
 *
 * The control, pull-wide: a pull of MODULE/wide with wide batches and a
 * window of 256 must be answered in FILEZ only, one of more than 64 (and at
 * most 128) entries: the wide path is the one rdcpd takes.
 *
 * Exit 0 only if every case went so, 1 if the server took something it
 * must refuse (or the control failed), 2 if a case went wrong otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rd_err.h"
#include "lib/engine/rd_engine.h"
#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"
#include "tests/hostile/rdcp_evil.h"

#define WIDE_TIMEOUT_MS 10000
#define PULL_WINDOW	256

/* What a case sends once the OPEN was answered. */
enum send {
	S_NONE,	       /* nothing: the OPEN itself must be refused */
	S_ESCAPE,      /* FILEZ: "..evil-wide", then keep 2 + "/evil-wide" */
	S_KEEP_BEYOND, /* FILEZ: "evil-wk", then keep 9 of its 7 bytes */
	S_FIRST_BARE,  /* FILEZ: a first entry without mode, uid, gid, mtime */
	S_COUNT,       /* FILEZ of two good entries, the count n_said */
	S_FILEZ,       /* a good FILEZ of one empty file, "evil-wide-u" */
	S_FILES,       /* the same entry in FILES */
	S_DONES,       /* (pull) a DONES of RD_BATCH_MAX + 1 entries */
	S_READ,	       /* (pull) the control: read FILEZ */
};

struct wcase {
	const char *name;
	uint8_t mode;	/* RD_MODE_PUSH or _PULL */
	unsigned proto; /* the highest version asked */
	uint32_t flags; /* OPEN flags besides RD_OF_RECURSIVE */
	int wide;	/* OPEN_OK must honour RD_OF_WIDE (1) or must not (0) */
	enum send what;
	unsigned n_said;  /* S_COUNT */
	const char *want; /* in the server's ERROR (NULL: the control) */
};

#define BW   (RD_OF_BATCH | RD_OF_WIDE)
#define PUSH RD_MODE_PUSH
#define PULL RD_MODE_PULL

static const struct wcase cases[] = {
    {"filez-keep-escapes", PUSH, 14, BW, 1, S_ESCAPE, 0, "'..' path component"},
    {"filez-keep-beyond", PUSH, 14, BW, 1, S_KEEP_BEYOND, 0, "keeps more than there was"},
    {"filez-first-bare", PUSH, 14, BW, 1, S_FIRST_BARE, 0, "first compact entry without"},
    {"filez-count-over", PUSH, 14, BW, 1, S_COUNT, 3, "message truncated"},
    {"filez-count-under", PUSH, 14, BW, 1, S_COUNT, 1, "trailing bytes after payload"},
    {"filez-count-zero", PUSH, 14, BW, 1, S_COUNT, 0, "bad batch entry count"},
    {"filez-count-257", PUSH, 14, BW, 1, S_COUNT, RD_BATCH_WIDE + 1, "bad batch entry count"},
    {"filez-not-agreed", PUSH, 14, RD_OF_BATCH, 0, S_FILEZ, 0, "FILEZ without wide batches"},
    {"filez-protocol-13", PUSH, 13, RD_OF_BATCH, 0, S_FILEZ, 0, "FILEZ without wide batches"},
    {"filez-wide-no-batch", PUSH, 14, RD_OF_WIDE, 0, S_FILEZ, 0, "without batches agreed"},
    {"files-where-filez", PUSH, 14, BW, 1, S_FILES, 0, "FILES where FILEZ was agreed"},
    {"wide-on-13", PUSH, 13, BW, 0, S_NONE, 0, "asks for wide batches on protocol 13"},
    {"dones-65-not-agreed", PULL, 14, RD_OF_BATCH, 0, S_DONES, 0, "DONES wider than agreed"},
    {"dones-65-protocol-13", PULL, 13, RD_OF_BATCH, 0, S_DONES, 0, "DONES wider than agreed"},
    {"pull-wide", PULL, 14, BW | RD_OF_WINDOW, 1, S_READ, 0, NULL},
};

/* One compact entry (rd_proto.h, FILEZ): have says which fields follow. */
static void z_entry(struct wr *w, uint8_t type, uint8_t flags, uint8_t have, uint16_t keep,
		    const char *rest)
{
	put(w, type, 1);
	put(w, flags, 1);
	put(w, have, 1);
	if (have & RD_FZ_MODE)
		put(w, type == RD_FT_DIR ? 040755 : 0100644, 4);
	if (have & RD_FZ_UID)
		put(w, 0, 4);
	if (have & RD_FZ_GID)
		put(w, 0, 4);
	if (have & RD_FZ_SEC)
		put(w, 1700000000, 8);
	put(w, keep, 2);
	put_bytes(w, rest, strlen(rest));
}

/* The message the case sends into b: its length, or -1. */
static int build(const struct wcase *wc, uint8_t *b, size_t cap)
{
	struct wr w = {.b = b, .cap = cap};
	const uint8_t reg = RD_FT_REG, root = RD_FF_ROOT;
	unsigned i;

	put(&w,
	    wc->what == S_FILES	  ? RD_MSG_FILES
	    : wc->what == S_DONES ? RD_MSG_DONES
				  : RD_MSG_FILEZ,
	    1);
	put(&w, 0, 3);
	put(&w, 0, 4); /* the length, below */
	switch (wc->what) {
	case S_ESCAPE:
		put(&w, 2, 2);
		put(&w, 1, 4);
		z_entry(&w, RD_FT_DIR, root, RD_FZ_FIRST, 0, "..evil-wide");
		z_entry(&w, RD_FT_DIR, root, 0, 2, "/evil-wide");
		break;
	case S_KEEP_BEYOND:
		put(&w, 2, 2);
		put(&w, 1, 4);
		z_entry(&w, reg, root, RD_FZ_FIRST, 0, "evil-wk");
		z_entry(&w, reg, root, 0, 9, "x");
		break;
	case S_FIRST_BARE:
		put(&w, 1, 2);
		put(&w, 1, 4);
		z_entry(&w, reg, root, 0, 0, "evil-wb");
		break;
	case S_COUNT:
		put(&w, wc->n_said, 2);
		put(&w, 1, 4);
		z_entry(&w, reg, root, RD_FZ_FIRST, 0, "evil-wc1");
		z_entry(&w, reg, root, 0, 7, "2");
		break;
	case S_FILEZ:
		put(&w, 1, 2);
		put(&w, 1, 4);
		z_entry(&w, reg, root, RD_FZ_FIRST, 0, "evil-wide-u");
		break;
	case S_FILES: /* FILE's payload (rd_proto.h section 2), one entry */
		put(&w, 1, 2);
		put(&w, 1, 4);
		put(&w, reg, 1);
		put(&w, root, 1);
		put(&w, 0100644, 4);
		put(&w, 0, 4 + 4 + 8); /* uid, gid, size */
		put(&w, 1700000000, 8);
		put(&w, 0, 4);
		put_bytes(&w, "evil-wide-u", 11);
		put_bytes(&w, "", 0);
		break;
	case S_DONES:
		put(&w, RD_BATCH_MAX + 1, 2);
		for (i = 0; i < RD_BATCH_MAX + 1; i++) {
			put(&w, i + 1, 4);
			put(&w, 0, 8);
		}
		break;
	default:
		return -1;
	}
	return wr_end(&w);
}

/* A session at most at version proto, its OPEN sent: 0, or -1 (printed). */
static int open_session(struct rd_conn **c, const char *host, const char *port, const char *path,
			const struct wcase *wc)
{
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;
	struct rd_msg m;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	memset(&err, 0, sizeof(err));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = (uint16_t)wc->proto;
	co.timeout_ms = WIDE_TIMEOUT_MS;
	if (rd_conn_connect(c, host, port, &co, &req, &rep, &err) || client_tls(c, &err)) {
		printf("wide %s: no session: %s\n", wc->name, err.msg);
		return -1;
	}
	if (rd_conn_info(*c)->version != wc->proto) {
		printf("wide %s: protocol %u agreed, not %u\n", wc->name, rd_conn_info(*c)->version,
		       wc->proto);
		return -1;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_OPEN;
	m.u.open.mode = wc->mode;
	m.u.open.flags = RD_OF_RECURSIVE | wc->flags;
	m.u.open.chunk_size = 4096;
	m.u.open.digest.ptr = "sha256";
	m.u.open.digest.len = 6;
	m.u.open.npaths = 1;
	m.u.open.paths[0].ptr = path;
	m.u.open.paths[0].len = (uint16_t)strlen(path);
	if (wc->flags & RD_OF_WINDOW)
		m.u.open.window = PULL_WINDOW;
	if (rd_engine_send_msg_wait(*c, &m, &err, WIDE_TIMEOUT_MS)) {
		printf("wide %s: OPEN not sent: %s\n", wc->name, err.msg);
		return -1;
	}
	return 0;
}

/* The next message into m (its buffer released): 1, 0 (none in time), -1 (gone). */
static int next_msg(struct rd_conn *c, struct rd_msg *m, int *budget_ms)
{
	const uint8_t *buf;
	const char *why;
	size_t len;
	int r;

	for (;;) {
		if (rd_conn_recv(c, &buf, &len) == 1) {
			r = rd_msg_decode(buf, len, m, &why);
			rd_conn_recv_done(c);
			if (!r)
				return 1;
			continue;
		}
		if (*budget_ms <= 0)
			return 0;
		r = rd_conn_poll(c, 100);
		*budget_ms -= 100;
		if (r < 0 && r != -RD_ETIMEOUT)
			return -1;
	}
}

/* The server's ERROR for the case: 0 it names the reason, 2 another one. */
static int refused(const struct wcase *wc, const struct rd_msg *m)
{
	int hit =
	    memmem(m->u.error.text.ptr, m->u.error.text.len, wc->want, strlen(wc->want)) != NULL;

	printf("wide %s: refused: %.*s%s\n", wc->name, (int)m->u.error.text.len,
	       m->u.error.text.ptr, hit ? "" : " (NOT the reason expected)");
	return hit ? 0 : 2;
}

/* The OPEN's answer: 0 OPEN_OK as the case needs, 3 refused as it wants, else 1 or 2. */
static int await_open(struct rd_conn *c, const struct wcase *wc)
{
	int budget = WIDE_TIMEOUT_MS, r, wide;
	struct rd_msg m;

	while ((r = next_msg(c, &m, &budget)) == 1) {
		if (m.hdr.type == RD_MSG_ERROR) {
			if (wc->what != S_NONE) {
				printf("wide %s: OPEN refused: %.*s (nothing tested)\n", wc->name,
				       (int)m.u.error.text.len, m.u.error.text.ptr);
				return 2;
			}
			return refused(wc, &m) ? 2 : 3;
		}
		if (m.hdr.type != RD_MSG_OPEN_OK)
			continue;
		wide = !!(m.u.open_ok.flags & RD_OF_WIDE);
		printf("wide %s: OPEN_OK flags 0x%x\n", wc->name, (unsigned)m.u.open_ok.flags);
		if (wc->what == S_NONE) {
			printf("wide %s: ACCEPTED (OPEN_OK)\n", wc->name);
			return 1;
		}
		if (wide != wc->wide) {
			printf("wide %s: RD_OF_WIDE %s\n", wc->name,
			       wide ? "honoured where it must not be" : "not honoured");
			return wide ? 1 : 2;
		}
		return 0;
	}
	printf("wide %s: no answer to OPEN\n", wc->name);
	return 2;
}

/* After the hostile message: 0 refused with the reason, 1 taken, 2 otherwise. */
static int await_refusal(struct rd_conn *c, const struct wcase *wc)
{
	int budget = WIDE_TIMEOUT_MS, r;
	struct rd_msg m;

	while ((r = next_msg(c, &m, &budget)) == 1) {
		if (m.hdr.type == RD_MSG_ERROR)
			return refused(wc, &m);
		/* a receiver that took the entries asks for them or confirms them */
		if (wc->mode == PUSH && (m.hdr.type == RD_MSG_GET || m.hdr.type == RD_MSG_DONE ||
					 m.hdr.type == RD_MSG_DONES)) {
			printf("wide %s: ACCEPTED (%s back)\n", wc->name,
			       rd_msg_type_name(m.hdr.type));
			return 1;
		}
	}
	printf("wide %s: %s\n", wc->name,
	       r ? "dropped without a reason" : "no answer: the message was taken");
	return r ? 2 : 1;
}

/* The control: FILEZ only, one of more than RD_BATCH_MAX entries. 0, or 1. */
static int read_filez(struct rd_conn *c, const struct wcase *wc)
{
	unsigned nz = 0, nfiles = 0, most = 0;
	int budget = 3000;
	struct rd_msg m;

	/* never confirming: the server sends a window's worth and waits */
	while (next_msg(c, &m, &budget) == 1 && most <= RD_BATCH_MAX) {
		if (m.hdr.type == RD_MSG_FILES || m.hdr.type == RD_MSG_FILE)
			nfiles++;
		if (m.hdr.type == RD_MSG_FILEZ) {
			nz++;
			most = m.u.files.n > most ? m.u.files.n : most;
		}
		if (m.hdr.type == RD_MSG_ERROR)
			printf("wide %s: ERROR %.*s\n", wc->name, (int)m.u.error.text.len,
			       m.u.error.text.ptr);
	}
	printf("wide %s: %u FILEZ, the largest of %u entries; %u FILE or FILES\n", wc->name, nz,
	       most, nfiles);
	return nz && !nfiles && most > RD_BATCH_MAX && most <= PULL_WINDOW / 2 ? 0 : 1;
}

/* Send a message made by hand (credits as they come). 0, or -1. */
static int send_raw(struct rd_conn *c, const uint8_t *b, size_t len)
{
	int i, r;

	for (i = 0; i < WIDE_TIMEOUT_MS / 100; i++) {
		r = rd_conn_send(c, b, len);
		if (r != RD_XPORT_BUSY)
			return r ? -1 : 0;
		rd_conn_poll(c, 100);
	}
	return -1;
}

static int one_case(const char *host, const char *port, const char *module, const struct wcase *wc)
{
	static uint8_t b[RD_MSG_MAX];
	struct rd_conn *c = NULL;
	char path[256];
	int len, ret;

	snprintf(path, sizeof(path), "%s%s", module, wc->mode == PULL ? "/wide" : "");
	if (open_session(&c, host, port, path, wc)) {
		rd_conn_close(c);
		return 2;
	}
	ret = await_open(c, wc);
	if (ret) {
		rd_conn_close(c);
		return ret == 3 ? 0 : ret;
	}
	if (wc->what == S_READ) {
		ret = read_filez(c, wc);
		rd_conn_close(c);
		return ret;
	}
	len = build(wc, b, sizeof(b));
	if (len < 0 || send_raw(c, b, (size_t)len)) {
		printf("wide %s: not sent\n", wc->name);
		rd_conn_close(c);
		return 2;
	}
	ret = await_refusal(c, wc);
	rd_conn_close(c);
	return ret;
}

int evil_wide(const char *host, const char *port, const char *module)
{
	int worst = 0;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		worst = worst_of(worst, one_case(host, port, module, &cases[i]));
	return worst;
}
