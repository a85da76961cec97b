// SPDX-License-Identifier: MIT
/*
 * rdcp_evil: a hostile peer for tests. Never installed.
 *
 *   rdcp_evil list-paths HOST PORT MODULE
 *	Listings rdcpd must refuse (rdcp_evil_list.c): MODULE/../, ../,
 *	reserved names, a LIST with a payload; MODULE itself as a control.
 *
 *   rdcp_evil push-paths HOST PORT MODULE
 *	A malicious pushing client against rdcpd. One session per case (the
 *	daemon ends a session on a protocol error); each case sends FILE
 *	entries whose paths try to leave the module ("../evil", "/etc/evil",
 *	"a/../../evil", "a//b", ".", through a symlink, ...), answers GETs
 *	like a real sender (RDMA WRITE + DATA with a correct digest) and
 *	prints what came back. Exit 0 only if every hostile entry was refused
 *	(DONE with a non-zero status, ERROR, or the connection dropped).
 *
 *   rdcp_evil serve-evil PORT [CASE...]
 *	A malicious server for pulls. Serves one client per case, in order
 *	(default: every case once), answering OPEN(PULL) with OPEN_OK and then
 *	FILE entries with hostile names. Prints "listening on port N" once
 *	ready and one line per case; it judges nothing (the test looks at the
 *	real client's exit status and at the file system). Exit 0 if every
 *	case was served.
 *
 *   rdcp_evil pull-cases
 *	List the serve-evil case names.
 *
 *   rdcp_evil serve-evil-ssh ADDR CASE [SECRET_HEX]
 *	serve-evil as the remote half of an ssh-started pull: what a fake
 *	"ssh" (rdcp -e) runs instead of `rdcp --remote-server send`. Prints
 *	"RDCP-READY <vmin> <vmax> <port> <secret> ADDR" on stdout (the secret
 *	random unless given), then talks on stderr only. Refuses clients that
 *	do not prove the secret (as the TLS PSK), serves CASE to the first
 *	that does, and exits 0 once it was served.
 *
 *   rdcp_evil bad-secret HOST PORT [SECRET_HEX|none]
 *	Connect to an ssh-started listener and try TLS with a random secret
 *	(or the one given, or anonymously with "none"). Exit 0 if refused as
 *	unauthenticated, 1 if accepted, 2 on any other failure.
 *
 * Every session speaks TLS first, as the real programs do (protocol 2):
 * push-paths authenticates as $RDCP_EVIL_USER with $RDCP_PASSWORD when both
 * are set, else anonymously.
 *
 *   rdcp_evil idle HOST PORT SECONDS [STAGE [MODULE/PATH]]
 *	Hold a connection without proving or asking anything, sending an
 *	empty CREDIT every 0.5 s below TLS (each resets the transport's
 *	silence timer, so only a deadline or a progress timer can drop us).
 *	STAGE connect (default): never start TLS; tls: finish TLS (as
 *	push-paths does) and never send OPEN; open: send OPEN(PULL) for
 *	MODULE/PATH and then never ask for a chunk. Prints "holding" once
 *	the stage is reached. Exit 0 if the server
 *	dropped the connection within SECONDS (printing after how long, and
 *	the server's ERROR text if one came), 1 if not, 2 if the stage was
 *	never reached (refused at once: the reason is printed).
 *
 *   RDCP_EVIL_OPEN_FLAGS=0x... rdcp_evil push-paths ...
 *	Send these OPEN flags instead of RD_OF_RECURSIVE; the OPEN_OK flags
 *	(or the refusal) are printed.
 *
 *   rdcp_evil join HOST PORT
 *   rdcp_evil flood HOST PORT N SECONDS
 *	Lanes that do not belong, and connection requests that never
 *	complete, against rdcpd over RDMA: see rdcp_evil_lanes.c.
 *
 *   rdcp_evil rules HOST PORT MODULE/PATH
 *	Hostile filter rules for a pull (rdcp_evil_rules.c): exit 0 only if
 *	rdcpd refused every case with the reason expected.
 *
 *   rdcp_evil wide HOST PORT MODULE
 *	Hostile wide batches (protocol 14: FILEZ, DONES of more than 64;
 *	rdcp_evil_wide.c): exit 0 only if rdcpd refused every case with the
 *	reason expected and answered a wide pull in FILEZ of more than 64.
 *
 *   rdcp_evil swap DIR A B SECONDS
 *	A hostile local user: exchange DIR/A and DIR/B (renameat2
 *	RENAME_EXCHANGE) in a tight loop for SECONDS; prints the count.
 *
 *   rdcp_evil silent ..., rdcp_evil hello ...
 *	Peers that never authenticate: see rdcp_evil_preauth.c.
 *   rdcp_evil push-probe HOST PORT MODULE
 *	Push one file, probe.txt ("probe\n"), answering SUM requests as a
 *	real sender would, and count the GETs: exit 0 if the server asked
 *	for data only, 1 if it asked for a SUM (it compared what it holds:
 *	what a write-only module must never do), 2 if the push went wrong.
 *
 *   rdcp_evil sum-flood HOST PORT MODULE/FILE [COUNT]
 *   rdcp_evil sum-drip HOST PORT MODULE/FILE SECONDS
 *	A receiver that only asks for SUMs (rdcp_evil_data.c): the same chunk
 *	COUNT times (default 1000), or each chunk once, one every 0.5 s.
 *	Exit 0 if the server cut it short (flood: before 10 answers; drip:
 *	within SECONDS), 1 if it kept answering, 2 on anything else.
 *
 *   rdcp_evil link-tree DIR OUTSIDE N [DEPTH]
 *	N empty files DEPTH (default 14) directories of 250-byte names below
 *	DIR, each hard-linked once more in OUTSIDE: a walk of DIR with -H
 *	meets N link groups of 3.5 KiB paths, none of which ever closes.
 *
 * FILE messages are built by a raw encoder here (rd_msg_encode refuses bad
 * paths, as it should); the raw encoder is checked against rd_msg_encode on
 * a valid path before anything is sent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_err.h"
#include "lib/base/rd_escape.h"
#include "lib/digest/rd_digest.h"
#include "lib/tls/rd_tls.h"
#include "lib/engine/rd_engine.h"
#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"
#include "tests/hostile/rdcp_evil.h"
#include "tests/hostile/rdcp_evil_preauth.h"

#define EVIL_CHUNK     4096u
#define EVIL_DIGEST    "sha256"
#define MAX_ENTS       8
#define DATA_STRIDE    64 /* bytes of the registered buffer per entry */
#define OUTQ_MAX       32
#define TEXT_MAX       200

enum expect {
	EXP_REFUSE = 0, /* must not be placed: refused or session ended */
	EXP_OK,		/* setup entry: must succeed, else the case proves nothing */
	EXP_ANY,	/* legitimate, outcome only reported */
};

struct ent {
	uint8_t type, flags;
	const char *path;
	size_t plen;	    /* 0: strlen(path) */
	const char *target; /* SYMLINK and HLINK only */
	const char *data;   /* REG only; NULL: "evil\n" */
	enum expect expect;
};

struct evcase {
	const char *name;
	unsigned n;
	struct ent ents[MAX_ENTS];
};

/* Outcome of one entry. */
struct res {
	int done;
	unsigned status;
	char text[TEXT_MAX];
};

struct outmsg {
	size_t len;
	int write; /* RDMA WRITE [off, off + wlen) of the data buffer first */
	size_t off, wlen;
	uint64_t raddr;
	uint32_t rkey;
	uint8_t buf[RD_CTRL_MAX];
};

struct peer {
	struct rd_conn *c;
	struct rd_digest *dg;
	struct rd_mr mr;
	uint8_t *data;
	uint32_t chunk;
	const struct evcase *cs;
	struct res res[MAX_ENTS];
	struct outmsg *q;
	unsigned qhead, qcount;
	int error_seen;
	unsigned error_code;
	char error_text[TEXT_MAX];
	int lost;
	char lost_text[TEXT_MAX];
	int fin_seen, fin_sent, bad_reply;
	char bad_text[TEXT_MAX];
	unsigned get_sum, get_data; /* the GETs that came, by kind */
};

#define REG_ROOT(p)                                                 \
	{                                                           \
		.type = RD_FT_REG, .flags = RD_FF_ROOT, .path = (p) \
	}
#define REG_SUB(p)                                         \
	{                                                  \
		.type = RD_FT_REG, .flags = 0, .path = (p) \
	}

static const struct evcase push_cases[] = {
    {"dotdot", 1, {REG_ROOT("../evil")}},
    {"abs-etc", 1, {REG_ROOT("/etc/evil")}},
    {"abs-tmp", 1, {REG_ROOT("/tmp/evil")}},
    {"inner-dotdot", 1, {REG_SUB("a/../../evil")}},
    {"empty-component", 1, {REG_SUB("a//b")}},
    {"dot", 1, {REG_ROOT(".")}},
    {"dotdot-only", 1, {REG_ROOT("..")}},
    {"trailing-slash", 1, {REG_ROOT("evil/")}},
    {"empty", 1, {REG_ROOT("")}},
    {"nul-byte", 1, {{.type = RD_FT_REG, .flags = RD_FF_ROOT, .path = "ev\0il", .plen = 5}}},
    {"dir-then-dotdot",
     2,
     {{.type = RD_FT_DIR, .flags = RD_FF_ROOT, .path = "d", .expect = EXP_ANY},
      REG_SUB("d/../../evil")}},
    {"link-through",
     4,
     {{.type = RD_FT_SYMLINK,
       .flags = RD_FF_ROOT,
       .path = "link",
       .target = "/tmp/outside",
       .expect = EXP_OK},
      REG_SUB("link/evil"),
      {.type = RD_FT_DIR, .path = "link/evildir"},
      {.type = RD_FT_SYMLINK, .path = "link/evillink", .target = "x"}}},
    /* The symlink left by the previous case, in a fresh session. */
    {"link-again", 1, {REG_SUB("link/evil")}},
    /* Issue 27 item 11: an HLINK without -H agreed ends the session... */
    {"hlink-unagreed",
     2,
     {{.type = RD_FT_REG, .flags = RD_FF_ROOT, .path = "hl-lead", .expect = EXP_ANY},
      {.type = RD_FT_HLINK, .flags = RD_FF_ROOT, .path = "hl-evil", .target = "hl-lead"}}},
    /* ... and with it, a link to a file this session did not place fails */
    {"hlink-foreign",
     1,
     {{.type = RD_FT_HLINK, .flags = RD_FF_ROOT, .path = "hl-pub-evil", .target = "hl-secret"}}},
    /* Item 16: a partial and a record planted under rdcp's own names */
    {"plant-partial", 2, {REG_ROOT(".rdcp-partial.evil"), REG_ROOT(".rdcp-partial.evil.rec")}},
};

/* Harness self-check (RDCP_EVIL_CONTROL=1): a legit entry marked as one to
 * refuse; the daemon accepts it, so push-paths must report a failure. */
static const struct evcase control_case = {"control-must-fail", 1, {REG_ROOT("control-evil")}};

static const struct evcase pull_cases[] = {
    {"dotdot", 1, {REG_ROOT("../evil")}},
    {"abs-tmp", 1, {REG_ROOT("/tmp/evil")}},
    {"inner-dotdot", 1, {REG_SUB("a/../../evil")}},
    {"dot", 1, {REG_ROOT(".")}},
    {"root-then-outside",
     3,
     {{.type = RD_FT_DIR, .flags = RD_FF_ROOT, .path = "x", .expect = EXP_ANY},
      {.type = RD_FT_REG, .path = "x/ok", .data = "ok\n", .expect = EXP_ANY},
      REG_SUB("x/../../evil")}},
    {"link-through",
     3,
     {{.type = RD_FT_SYMLINK, .flags = RD_FF_ROOT, .path = "x", .target = "/tmp", .expect = EXP_OK},
      REG_SUB("x/evil"),
      {.type = RD_FT_DIR, .path = "x/evildir"}}},
    /* Asked for "x", sent ".bashrc" instead (rsync's CVE-2022-29154). */
    {"plant",
     1,
     {{.type = RD_FT_REG,
       .flags = RD_FF_ROOT,
       .path = ".bashrc",
       .data = "evil\n",
       .expect = EXP_ANY}}},
    /* The same without RD_FF_ROOT: nothing ties these to a requested root. */
    {"plant-noroot",
     2,
     {{.type = RD_FT_DIR, .path = ".ssh", .expect = EXP_ANY},
      {.type = RD_FT_REG, .path = ".ssh/authorized_keys", .expect = EXP_ANY}}},
    /* A window wider than the client offered (protocol 6): refused before
     * any entry. */
    {"wide-window", 1, {REG_ROOT("x")}},
    /* Not asked for, and made to mess with a terminal: refused, and shown
     * escaped. */
    {"escape",
     1,
     {{.type = RD_FT_REG,
       .flags = RD_FF_ROOT,
       .path = "\033[2J\033]0;evil\007\r\n",
       .expect = EXP_ANY}}},
    /* Issue 27 item 16: partials and records planted by name. */
    {"plant-partial",
     3,
     {{.type = RD_FT_DIR, .flags = RD_FF_ROOT, .path = "x", .expect = EXP_ANY},
      REG_SUB("x/.rdcp-partial.evil"),
      REG_SUB("x/.rdcp-partial.evil.rec")}},
    /* Item 11: a hard link the client never agreed to (-H not asked) */
    {"hlink-unasked",
     3,
     {{.type = RD_FT_DIR, .flags = RD_FF_ROOT, .path = "x", .expect = EXP_ANY},
      {.type = RD_FT_REG, .path = "x/ok", .data = "ok\n", .expect = EXP_ANY},
      {.type = RD_FT_HLINK, .path = "x/evil-link", .target = "x/ok"}}},
    /* Item 11: with -H, a link to a file DEST held before (not one sent) */
    {"hlink-foreign",
     2,
     {{.type = RD_FT_DIR, .flags = RD_FF_ROOT, .path = "x", .expect = EXP_ANY},
      {.type = RD_FT_HLINK, .path = "x/evil-pub", .target = "x/secret"}}},
    /* Never asked for, but with harmless names: may land, inside DEST. */
    {"extra",
     2,
     {{.type = RD_FT_REG, .flags = RD_FF_ROOT, .path = "x", .data = "ok\n", .expect = EXP_ANY},
      {.type = RD_FT_REG,
       .flags = RD_FF_ROOT,
       .path = "unasked",
       .data = "ok\n",
       .expect = EXP_ANY}}},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static size_t ent_plen(const struct ent *e)
{
	return e->plen ? e->plen : strlen(e->path);
}

static const char *ent_data(const struct ent *e)
{
	return e->data ? e->data : "evil\n";
}

static uint64_t ent_size(const struct ent *e)
{
	return e->type == RD_FT_REG ? strlen(ent_data(e)) : 0;
}

static const char *show(char *buf, size_t cap, const char *p, size_t len)
{
	if (rd_escape(buf, cap, p, len) >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
	return buf;
}

static const char *type_name(uint8_t t)
{
	return t == RD_FT_REG	    ? "REG"
	       : t == RD_FT_DIR	    ? "DIR"
	       : t == RD_FT_SYMLINK ? "SYMLINK"
	       : t == RD_FT_HLINK   ? "HLINK"
				    : "?";
}

/* --- raw FILE encoder ------------------------------------------------- */

static void fill_file(struct rd_msg *m, uint32_t id, const struct ent *e, int64_t now)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = RD_MSG_FILE;
	m->u.file.id = id;
	m->u.file.type = e->type;
	m->u.file.flags = e->flags;
	m->u.file.mode = e->type == RD_FT_REG || e->type == RD_FT_HLINK ? 0100644
			 : e->type == RD_FT_DIR				? 040755
									: 0120777;
	m->u.file.size = ent_size(e);
	m->u.file.mtime_sec = now;
	m->u.file.path.ptr = e->path;
	m->u.file.path.len = (uint16_t)ent_plen(e);
	if (e->type == RD_FT_SYMLINK || e->type == RD_FT_HLINK) {
		m->u.file.target.ptr = e->target;
		m->u.file.target.len = (uint16_t)strlen(e->target);
	}
}

/* FILE exactly as section 2 of rd_proto.h lays it out, any path. */
static int raw_file(uint8_t *b, size_t cap, const struct rd_msg_file *f)
{
	struct wr w = {.b = b, .cap = cap};

	put(&w, RD_MSG_FILE, 1);
	put(&w, 0, 1);
	put(&w, 0, 2);
	put(&w, 0, 4);
	put(&w, f->id, 4);
	put(&w, f->type, 1);
	put(&w, f->flags, 1);
	put(&w, f->mode, 4);
	put(&w, f->uid, 4);
	put(&w, f->gid, 4);
	put(&w, f->size, 8);
	put(&w, (uint64_t)f->mtime_sec, 8);
	put(&w, f->mtime_nsec, 4);
	put_bytes(&w, f->path.ptr, f->path.len);
	put_bytes(&w, f->target.ptr, f->target.len);
	return wr_end(&w);
}

/* The raw encoder must agree with the real one wherever the real one works. */
static int raw_selftest(void)
{
	static const struct ent samples[] = {
	    {.type = RD_FT_REG, .flags = RD_FF_ROOT, .path = "ok"},
	    {.type = RD_FT_SYMLINK, .path = "dir/link", .target = "../t"},
	    {.type = RD_FT_DIR, .flags = RD_FF_POST, .path = "a/b/c"},
	};
	static uint8_t a[RD_CTRL_MAX], b[RD_CTRL_MAX];
	struct rd_msg m;
	unsigned i;
	int la, lb;

	for (i = 0; i < NELEM(samples); i++) {
		fill_file(&m, i + 7, &samples[i], -12345);
		m.u.file.uid = 1000 + i;
		m.u.file.gid = 2000 + i;
		m.u.file.mtime_nsec = 999999999;
		la = rd_msg_encode(a, sizeof(a), &m);
		lb = raw_file(b, sizeof(b), &m.u.file);
		if (la < 0 || la != lb || memcmp(a, b, (size_t)la)) {
			fprintf(stderr,
				"rdcp_evil: raw FILE encoder disagrees with rd_msg_encode "
				"(sample %u)\n",
				i);
			return -1;
		}
	}
	return 0;
}

/* --- sending ------------------------------------------------------------ */

static struct outmsg *q_add(struct peer *p)
{
	struct outmsg *o;

	if (p->qcount >= OUTQ_MAX) {
		fprintf(stderr, "rdcp_evil: send queue full\n");
		exit(3);
	}
	o = &p->q[(p->qhead + p->qcount++) % OUTQ_MAX];
	memset(o, 0, offsetof(struct outmsg, buf));
	return o;
}

static void q_msg(struct peer *p, const struct rd_msg *m)
{
	struct outmsg *o = q_add(p);
	int len = rd_msg_encode(o->buf, sizeof(o->buf), m);

	if (len < 0) {
		fprintf(stderr, "rdcp_evil: cannot encode %s\n", rd_msg_type_name(m->hdr.type));
		exit(3);
	}
	o->len = (size_t)len;
}

/* Post what can be posted. Returns 0, or -1 when the connection is gone. */
static int q_flush(struct peer *p)
{
	struct outmsg *o;
	int r;

	while (p->qcount) {
		o = &p->q[p->qhead];
		if (o->write) {
			struct rd_rkeys rk = {.n = 1, .k = {o->rkey}};

			r = rd_conn_write_send(p->c, &p->mr, o->off, o->wlen, o->raddr, &rk,
					       o->buf, o->len, 0);
		} else {
			r = rd_conn_send(p->c, o->buf, o->len);
		}
		if (r == RD_XPORT_BUSY)
			return 0;
		if (r < 0) {
			p->lost = 1;
			snprintf(p->lost_text, sizeof(p->lost_text), "%s", rd_conn_err(p->c)->msg);
			return -1;
		}
		p->qhead = (p->qhead + 1) % OUTQ_MAX;
		p->qcount--;
	}
	return 0;
}

static void bad_reply(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad_reply(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	if (p->bad_reply)
		return;
	p->bad_reply = 1;
	va_start(ap, fmt);
	vsnprintf(p->bad_text, sizeof(p->bad_text), fmt, ap);
	va_end(ap);
}

static void on_get(struct peer *p, const struct rd_msg_get *g)
{
	const struct ent *e;
	struct rd_msg m;
	struct outmsg *o;
	uint32_t len;
	int n;

	if (g->id < 1 || g->id > p->cs->n || p->cs->ents[g->id - 1].type != RD_FT_REG) {
		bad_reply(p, "GET for id %u, not a regular file we sent", g->id);
		return;
	}
	e = &p->cs->ents[g->id - 1];
	len = (uint32_t)ent_size(e);
	if (g->chunk != 0 || (g->kind == RD_GET_DATA && g->len < len)) {
		bad_reply(p, "GET chunk %llu len %u for a %u-byte file",
			  (unsigned long long)g->chunk, g->len, len);
		return;
	}
	if (g->kind == RD_GET_SUM)
		p->get_sum++;
	else
		p->get_data++;
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_DATA;
	m.u.data.id = g->id;
	m.u.data.kind = g->kind;
	m.u.data.slot = g->slot;
	m.u.data.chunk = 0;
	m.u.data.len = len;
	m.u.data.seq = g->seq;
	m.u.data.dlen = (uint8_t)p->dg->size;
	if (rd_digest_compute(p->dg, p->data + (size_t)g->id * DATA_STRIDE, len, m.u.data.digest)) {
		fprintf(stderr, "rdcp_evil: digest: %s\n", p->dg->err.msg);
		exit(3);
	}
	o = q_add(p);
	n = rd_msg_encode(o->buf, sizeof(o->buf), &m);
	if (n < 0) {
		fprintf(stderr, "rdcp_evil: cannot encode DATA\n");
		exit(3);
	}
	o->len = (size_t)n;
	if (g->kind == RD_GET_DATA) {
		o->write = 1;
		o->off = (size_t)g->id * DATA_STRIDE;
		o->wlen = len;
		o->raddr = g->addr;
		o->rkey = g->rkey;
	}
}

static void on_msg(struct peer *p, const struct rd_msg *m)
{
	struct rd_msg fin;
	struct res *r;
	unsigned i, ok = 0, failed = 0;

	switch (m->hdr.type) {
	case RD_MSG_GET:
		on_get(p, &m->u.get);
		break;
	case RD_MSG_DONE:
		if (m->u.done.id < 1 || m->u.done.id > p->cs->n) {
			bad_reply(p, "DONE for id %u", m->u.done.id);
			break;
		}
		r = &p->res[m->u.done.id - 1];
		r->done = 1;
		r->status = m->u.done.status;
		show(r->text, sizeof(r->text), m->u.done.text.ptr, m->u.done.text.len);
		break;
	case RD_MSG_DONES: /* a real client batches what went well (OPEN_OK echoes BATCH) */
		for (i = 0; i < m->u.dones.n; i++) {
			if (m->u.dones.id[i] < 1 || m->u.dones.id[i] > p->cs->n) {
				bad_reply(p, "DONES for id %u", m->u.dones.id[i]);
				break;
			}
			r = &p->res[m->u.dones.id[i] - 1];
			r->done = 1;
			r->status = 0;
			r->text[0] = '\0';
		}
		break;
	case RD_MSG_ERROR:
		p->error_seen = 1;
		p->error_code = m->u.error.code;
		show(p->error_text, sizeof(p->error_text), m->u.error.text.ptr,
		     m->u.error.text.len);
		break;
	case RD_MSG_FIN:
		p->fin_seen = 1;
		for (i = 0; i < p->cs->n; i++) {
			if (p->res[i].done && !p->res[i].status)
				ok++;
			else
				failed++;
		}
		memset(&fin, 0, sizeof(fin));
		fin.hdr.type = RD_MSG_FIN;
		fin.u.fin.files_ok = ok;
		fin.u.fin.files_failed = failed;
		q_msg(p, &fin);
		p->fin_sent = 1;
		break;
	default:
		bad_reply(p, "unexpected %s", rd_msg_type_name(m->hdr.type));
		break;
	}
}

static int drain(struct peer *p)
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m;
	const char *why;

	while (rd_conn_recv(p->c, &buf, &len) == 1) {
		if (rd_msg_decode(buf, len, &m, &why))
			bad_reply(p, "undecodable message: %s", why);
		else
			on_msg(p, &m);
		if (rd_conn_recv_done(p->c) < 0)
			return -1;
		if (p->error_seen)
			return 0;
	}
	return 0;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int peer_alloc(struct peer *p)
{
	p->data = calloc(MAX_ENTS + 1, DATA_STRIDE);
	p->q = calloc(OUTQ_MAX, sizeof(*p->q));
	if (!p->data || !p->q) {
		fprintf(stderr, "rdcp_evil: out of memory\n");
		return -1;
	}
	return 0;
}

/* Register the data buffer: each regular entry's bytes at id * DATA_STRIDE. */
static int peer_setup(struct peer *p, const struct evcase *cs)
{
	struct rd_err err;
	unsigned i;

	p->cs = cs;
	for (i = 0; i < cs->n; i++)
		if (cs->ents[i].type == RD_FT_REG)
			memcpy(p->data + (size_t)(i + 1) * DATA_STRIDE, ent_data(&cs->ents[i]),
			       (size_t)ent_size(&cs->ents[i]));
	if (rd_conn_reg(p->c, p->data, (MAX_ENTS + 1) * DATA_STRIDE, 0, &p->mr)) {
		fprintf(stderr, "rdcp_evil: register: %s\n", rd_conn_err(p->c)->msg);
		return -1;
	}
	if (!p->dg && rd_digest_open(&p->dg, EVIL_DIGEST, &err)) {
		fprintf(stderr, "rdcp_evil: digest: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void peer_close(struct peer *p)
{
	if (p->mr.priv)
		rd_conn_dereg(p->c, &p->mr);
	rd_conn_close(p->c);
	rd_digest_close(p->dg);
	free(p->data);
	free(p->q);
	memset(p, 0, sizeof(*p));
}

/*
 * Be the sender: every FILE of the case, END, then answer GETs until FIN,
 * ERROR, a lost connection or the deadline. Returns 1 on timeout, else 0.
 */
static int run_sender(struct peer *p)
{
	static uint8_t raw[RD_CTRL_MAX];
	double deadline = now_s() + CASE_TIMEOUT_S;
	int64_t now = (int64_t)time(NULL);
	struct rd_msg m;
	struct outmsg *o;
	unsigned i;
	int len, r;

	for (i = 0; i < p->cs->n; i++) {
		fill_file(&m, i + 1, &p->cs->ents[i], now);
		len = raw_file(raw, sizeof(raw), &m.u.file);
		if (len < 0) {
			fprintf(stderr, "rdcp_evil: raw FILE does not fit\n");
			exit(3);
		}
		o = q_add(p);
		memcpy(o->buf, raw, (size_t)len);
		o->len = (size_t)len;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_END;
	m.u.end.nfiles = p->cs->n;
	q_msg(p, &m);

	for (;;) {
		if (q_flush(p) < 0)
			return 0;
		if (drain(p) < 0) {
			p->lost = 1;
			snprintf(p->lost_text, sizeof(p->lost_text), "%s", rd_conn_err(p->c)->msg);
			return 0;
		}
		if (p->error_seen || p->bad_reply)
			return 0;
		if (p->fin_sent && !p->qcount) {
			rd_conn_flush(p->c, 2000);
			return 0;
		}
		if (now_s() > deadline)
			return 1;
		r = rd_conn_poll(p->c, 200);
		if (r < 0 && r != -RD_ETIMEOUT) {
			p->lost = 1;
			snprintf(p->lost_text, sizeof(p->lost_text), "%s", rd_conn_err(p->c)->msg);
			return 0;
		}
	}
}

/*
 * Print what came back for each entry. Returns 1 if every EXP_REFUSE entry
 * was refused and every EXP_OK entry placed, else 0.
 */
static int report(const char *side, struct peer *p, int timed_out)
{
	char path[128], tgt[128];
	int session_ended = p->error_seen || p->lost || p->bad_reply || timed_out;
	int ok = 1;
	unsigned i;

	printf("%s case %s:", side, p->cs->name);
	if (p->error_seen)
		printf(" ERROR %u (%s) \"%s\"", p->error_code, rd_status_name(p->error_code),
		       p->error_text);
	if (p->lost)
		printf(" connection lost: %s", p->lost_text);
	if (p->bad_reply)
		printf(" peer misbehaved: %s", p->bad_text);
	if (timed_out)
		printf(" TIMEOUT after %d s", CASE_TIMEOUT_S);
	if (p->fin_seen)
		printf(" FIN");
	if (p->get_sum || p->get_data)
		printf(" GETs: %u SUM, %u DATA", p->get_sum, p->get_data);
	printf("\n");
	for (i = 0; i < p->cs->n; i++) {
		const struct ent *e = &p->cs->ents[i];
		const struct res *r = &p->res[i];
		const char *verdict;
		uint8_t enc[RD_CTRL_MAX];
		struct rd_msg m;
		int refused = (r->done && r->status) || (!r->done && session_ended);

		fill_file(&m, i + 1, e, 0);
		show(path, sizeof(path), e->path, ent_plen(e));
		if (e->type == RD_FT_SYMLINK)
			show(tgt, sizeof(tgt), e->target, strlen(e->target));
		if (timed_out && !r->done) {
			verdict = "FAIL (no answer)";
			ok = 0;
		} else if (e->expect == EXP_REFUSE) {
			verdict = refused ? "refused: ok" : "FAIL (accepted)";
			ok &= refused;
		} else if (e->expect == EXP_OK) {
			verdict = r->done && !r->status ? "placed (setup): ok"
							: "FAIL (setup entry not placed)";
			ok &= r->done && !r->status;
		} else {
			verdict = refused ? "refused (allowed)" : "placed (allowed)";
		}
		printf("  #%u %s \"%s\"%s%s%s%s -> ", i + 1, type_name(e->type), path,
		       e->type == RD_FT_SYMLINK ? " -> \"" : "",
		       e->type == RD_FT_SYMLINK ? tgt : "", e->type == RD_FT_SYMLINK ? "\"" : "",
		       rd_msg_encode(enc, sizeof(enc), &m) < 0 ? " [encoder refuses; raw bytes]"
							       : "");
		if (r->done)
			printf("DONE status %u (%s)%s%s%s", r->status,
			       r->status ? rd_status_name(r->status) : "ok",
			       r->text[0] ? " \"" : "", r->text, r->text[0] ? "\"" : "");
		else
			printf("no DONE");
		printf(": %s\n", verdict);
	}
	fflush(stdout);
	return ok;
}

/* --- push-paths ------------------------------------------------------------ */

static int await_open_ok(struct peer *p)
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m;
	const char *why;
	double deadline = now_s() + CASE_TIMEOUT_S;
	int r, ret = -1;

	for (;;) {
		if (rd_conn_recv(p->c, &buf, &len) == 1) {
			if (rd_msg_decode(buf, len, &m, &why))
				printf("  OPEN answered with an undecodable message: %s\n", why);
			else if (m.hdr.type == RD_MSG_ERROR)
				printf("  OPEN refused: %.*s\n", (int)m.u.error.text.len,
				       m.u.error.text.ptr);
			else if (m.hdr.type != RD_MSG_OPEN_OK)
				printf("  OPEN answered with %s\n", rd_msg_type_name(m.hdr.type));
			else
				ret = 0;
			if (!ret)
				printf("  OPEN_OK flags 0x%x\n", (unsigned)m.u.open_ok.flags);
			rd_conn_recv_done(p->c);
			return ret;
		}
		r = rd_conn_poll(p->c, 200);
		if ((r < 0 && r != -RD_ETIMEOUT) || now_s() > deadline) {
			printf("  no answer to OPEN: %s\n", rd_conn_err(p->c)->msg);
			return -1;
		}
	}
}

static int send_now(struct peer *p, const struct rd_msg *m)
{
	q_msg(p, m);
	while (p->qcount) {
		if (q_flush(p) < 0)
			return -1;
		if (p->qcount && rd_conn_poll(p->c, 100) < 0)
			return -1;
	}
	return 0;
}

/*
 * TLS as the real programs speak it: the client authenticates as
 * RDCP_EVIL_USER with RDCP_PASSWORD when set (a daemon with auth users),
 * else anonymously; the server accepts anonymous clients, or exactly the
 * one with the ssh secret.
 */
/* A hostile client trusts any daemon key: what it attacks is the daemon. */
static int pin_any(void *ctx, const char *fp, struct rd_err *err)
{
	return 0;
}

/* One OPEN(PULL) of path. */
int send_pull_open(struct rd_conn *c, const char *path, struct rd_err *err)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_OPEN;
	m.u.open.mode = RD_MODE_PULL;
	m.u.open.chunk_size = EVIL_CHUNK;
	m.u.open.digest.ptr = EVIL_DIGEST;
	m.u.open.digest.len = (uint16_t)strlen(EVIL_DIGEST);
	m.u.open.npaths = 1;
	m.u.open.paths[0].ptr = path;
	m.u.open.paths[0].len = (uint16_t)strlen(path);
	return rd_engine_send_msg_wait(c, &m, err, 5000);
}

int client_tls(struct rd_conn **c, struct rd_err *err)
{
	const char *user = getenv("RDCP_EVIL_USER"), *pass = getenv("RDCP_PASSWORD");
	struct rd_tls_cfg tc;

	memset(&tc, 0, sizeof(tc));
	tc.role = RD_TLS_CLIENT;
	tc.auth = RD_AUTH_ANON;
	if (user && pass) {
		tc.auth = RD_AUTH_USER;
		tc.user = user;
		tc.pin = pin_any;
		rd_tls_login_key(user, pass, strlen(pass), tc.login_key);
	}
	/* OPEN names sha256: no chunk key needed. */
	return rd_conn_start_tls(c, &tc, CASE_TIMEOUT_S * 1000, err);
}

static int server_tls(struct rd_conn **c, const uint8_t *ssh_secret, struct rd_err *err)
{
	struct rd_tls_cfg tc;

	memset(&tc, 0, sizeof(tc));
	tc.role = RD_TLS_SERVER;
	tc.allow_anon = !ssh_secret;
	if (ssh_secret) {
		tc.ssh_secret_set = 1;
		rd_tls_psk_ssh(ssh_secret, RD_SECRET_LEN, tc.psk);
	}
	return rd_conn_start_tls(c, &tc, CASE_TIMEOUT_S * 1000, err);
}

static int push_one(const char *host, const char *port, const char *module, const struct evcase *cs,
		    unsigned *sums)
{
	struct peer p;
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;
	struct rd_msg m;
	int timed_out;
	int ok;

	memset(&p, 0, sizeof(p));
	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	co.timeout_ms = CASE_TIMEOUT_S * 1000;
	if (rd_conn_connect(&p.c, host, port, &co, &req, &rep, &err)) {
		printf("push case %s: cannot connect: %s\n", cs->name, err.msg);
		return 0;
	}
	if (client_tls(&p.c, &err)) {
		printf("push case %s: TLS: %s\n", cs->name, err.msg);
		rd_conn_close(p.c);
		return 0;
	}
	if (peer_alloc(&p) || peer_setup(&p, cs)) {
		peer_close(&p);
		return 0;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_OPEN;
	m.u.open.mode = RD_MODE_PUSH;
	m.u.open.flags = getenv("RDCP_EVIL_OPEN_FLAGS")
			     ? (uint32_t)strtoul(getenv("RDCP_EVIL_OPEN_FLAGS"), NULL, 0)
			     : RD_OF_RECURSIVE;
	/* the case that needs -H agreed to mean anything */
	if (!strcmp(cs->name, "hlink-foreign"))
		m.u.open.flags |= RD_OF_HARDLINKS;
	m.u.open.chunk_size = EVIL_CHUNK;
	m.u.open.digest.ptr = EVIL_DIGEST;
	m.u.open.digest.len = (uint16_t)strlen(EVIL_DIGEST);
	m.u.open.npaths = 1;
	m.u.open.paths[0].ptr = module;
	m.u.open.paths[0].len = (uint16_t)strlen(module);
	if (send_now(&p, &m) || await_open_ok(&p)) {
		printf("push case %s: OPEN failed, nothing tested\n", cs->name);
		peer_close(&p);
		return 0;
	}
	timed_out = run_sender(&p);
	ok = report("push", &p, timed_out);
	if (sums)
		*sums = p.get_sum;
	peer_close(&p);
	return ok;
}

/* One file pushed: did the server compare it with what it holds (SUM)? */
static int push_probe(const char *host, const char *port, const char *module)
{
	static const struct evcase probe = {"probe",
					    1,
					    {{.type = RD_FT_REG,
					      .flags = RD_FF_ROOT,
					      .path = "probe.txt",
					      .data = "probe\n",
					      .expect = EXP_OK}}};
	unsigned sums = 0;

	if (!push_one(host, port, module, &probe, &sums))
		return 2;
	printf("push-probe: %u SUM requests\n", sums);
	return sums ? 1 : 0;
}

static int push_paths(const char *host, const char *port, const char *module)
{
	unsigned i, nok = 0;

	unsigned n = NELEM(push_cases);

	for (i = 0; i < NELEM(push_cases); i++)
		nok += (unsigned)push_one(host, port, module, &push_cases[i], NULL);
	if (getenv("RDCP_EVIL_CONTROL") && !strcmp(getenv("RDCP_EVIL_CONTROL"), "1")) {
		nok += (unsigned)push_one(host, port, module, &control_case, NULL);
		n++;
	}
	printf("push-paths: %u of %u cases refused as they must be\n", nok, n);
	return nok == n ? 0 : 1;
}

/* --- serve-evil ------------------------------------------------------------ */

static const struct evcase *find_pull_case(const char *name)
{
	unsigned i;

	for (i = 0; i < NELEM(pull_cases); i++)
		if (!strcmp(pull_cases[i].name, name))
			return &pull_cases[i];
	return NULL;
}

/*
 * Wait for OPEN(PULL) and answer OPEN_OK echoing its parameters; case
 * "wide-window" grants RD_WINDOW_MAX whatever the client offered.
 */
static int serve_open(struct peer *p, const struct evcase *cs)
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m, ok;
	const char *why;
	char digest[RD_DIGEST_NAME_MAX + 1], path[128];
	struct rd_err err;
	double deadline = now_s() + CASE_TIMEOUT_S;
	int r;

	for (;;) {
		if (rd_conn_recv(p->c, &buf, &len) == 1)
			break;
		r = rd_conn_poll(p->c, 200);
		if ((r < 0 && r != -RD_ETIMEOUT) || now_s() > deadline) {
			printf("  no OPEN: %s\n", rd_conn_err(p->c)->msg);
			return -1;
		}
	}
	if (rd_msg_decode(buf, len, &m, &why) || m.hdr.type != RD_MSG_OPEN ||
	    m.u.open.mode != RD_MODE_PULL) {
		printf("  first message is not a decodable OPEN(PULL)\n");
		rd_conn_recv_done(p->c);
		return -1;
	}
	snprintf(digest, sizeof(digest), "%.*s", (int)m.u.open.digest.len, m.u.open.digest.ptr);
	if (!digest[0]) /* left to us */
		snprintf(digest, sizeof(digest), "%s", EVIL_DIGEST);
	printf("  OPEN(PULL) \"%s\" flags 0x%x chunk %u digest %s\n",
	       show(path, sizeof(path), m.u.open.paths[0].ptr, m.u.open.paths[0].len),
	       m.u.open.flags, m.u.open.chunk_size, digest);
	memset(&ok, 0, sizeof(ok));
	ok.hdr.type = RD_MSG_OPEN_OK;
	/* everything asked for but packs: this peer answers one file per GET */
	ok.u.open_ok.flags = m.u.open.flags & ~RD_OF_PACK;
	ok.u.open_ok.chunk_size = m.u.open.chunk_size;
	ok.u.open_ok.window = m.u.open.window; /* RD_OF_WINDOW: the client's */
	if (!strcmp(cs->name, "wide-window") && (m.u.open.flags & RD_OF_WINDOW))
		ok.u.open_ok.window = RD_WINDOW_MAX;
	ok.u.open_ok.digest.ptr = digest;
	ok.u.open_ok.digest.len = (uint16_t)strlen(digest);
	p->chunk = m.u.open.chunk_size;
	rd_conn_recv_done(p->c);
	if (rd_digest_open(&p->dg, digest, &err)) {
		printf("  digest %s: %s\n", digest, err.msg);
		return -1;
	}
	return send_now(p, &ok);
}

static int serve_evil(const char *port, int ncases, char **names)
{
	const struct evcase *list[64];
	struct rd_listener *l;
	struct rd_err err;
	int n = 0, i, served = 0;

	if (ncases > 64) {
		fprintf(stderr, "rdcp_evil: at most 64 cases\n");
		return 2;
	}
	for (i = 0; i < ncases; i++) {
		list[n] = find_pull_case(names[i]);
		if (!list[n]) {
			fprintf(stderr, "rdcp_evil: no pull case '%s' (see pull-cases)\n",
				names[i]);
			return 2;
		}
		n++;
	}
	if (!ncases)
		for (n = 0; n < (int)NELEM(pull_cases); n++)
			list[n] = &pull_cases[n];
	if (rd_listener_open(&l, NULL, port, 4, RD_XPORT_AUTO, &err)) {
		fprintf(stderr, "rdcp_evil: %s\n", err.msg);
		return 1;
	}
	printf("listening on port %u\n", rd_listener_port(l));
	fflush(stdout);
	for (i = 0; i < n; i++) {
		struct rd_conn_req *req;
		struct rd_cm_req creq;
		struct rd_cm_rep rep;
		struct rd_conn_opts co;
		struct peer p;
		int r, timed_out;

		printf("pull case %s: waiting for a client\n", list[i]->name);
		fflush(stdout);
		r = rd_listener_next(l, 120000, &req, &creq);
		if (r) {
			printf("pull case %s: no client (%d)\n", list[i]->name, r);
			break;
		}
		memset(&rep, 0, sizeof(rep));
		memset(&co, 0, sizeof(co));
		memset(&p, 0, sizeof(p));
		/* the highest version both speak, as a real server picks */
		rep.version = creq.ver_max < RD_PROTO_MAX ? creq.ver_max : RD_PROTO_MAX;
		co.timeout_ms = CASE_TIMEOUT_S * 1000;
		if (rd_conn_accept(req, &co, &rep, &p.c, &err)) {
			printf("pull case %s: accept: %s\n", list[i]->name, err.msg);
			continue;
		}
		if (server_tls(&p.c, NULL, &err)) {
			printf("pull case %s: TLS: %s\n", list[i]->name, err.msg);
			rd_conn_close(p.c);
			i--;
			continue;
		}
		if (peer_alloc(&p) || serve_open(&p, list[i]) || peer_setup(&p, list[i])) {
			printf("pull case #%d %s: session did not start\n", i + 1, list[i]->name);
			peer_close(&p);
			continue;
		}
		timed_out = run_sender(&p);
		report("pull", &p, timed_out);
		printf("pull case #%d %s: served\n", i + 1, list[i]->name);
		peer_close(&p);
		served++;
	}
	rd_listener_close(l);
	printf("serve-evil: served %d of %d cases\n", served, n);
	return served == n ? 0 : 1;
}

/* --- ssh-started side -------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* SECRET_HEX (32 hex digits) into bytes; NULL or "random": draw one. */
static int get_secret(const char *hex, uint8_t *out)
{
	unsigned i;

	if (!hex || !strcmp(hex, "random"))
		return getrandom(out, RD_SECRET_LEN, 0) == RD_SECRET_LEN ? 0 : -1;
	if (strlen(hex) != 2 * RD_SECRET_LEN)
		return -1;
	for (i = 0; i < RD_SECRET_LEN; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static int serve_evil_ssh(const char *addr, const char *name, const char *hex)
{
	const struct evcase *cs = find_pull_case(name);
	uint8_t secret[RD_SECRET_LEN];
	struct rd_listener *l;
	struct rd_err err;
	unsigned i;
	int r, served = 0;

	if (!cs) {
		fprintf(stderr, "rdcp_evil: no pull case '%s' (see pull-cases)\n", name);
		return 2;
	}
	if (get_secret(hex, secret)) {
		fprintf(stderr, "rdcp_evil: bad secret '%s' (32 hex digits)\n", hex);
		return 2;
	}
	if (rd_listener_open(&l, NULL, "0", 4, RD_XPORT_AUTO, &err)) {
		fprintf(stderr, "rdcp_evil: %s\n", err.msg);
		return 1;
	}
	printf("RDCP-READY %u %u %u ", RD_PROTO_MIN, RD_PROTO_MAX, rd_listener_port(l));
	for (i = 0; i < RD_SECRET_LEN; i++)
		printf("%02x", secret[i]);
	printf(" %s\n", addr);
	fflush(stdout);
	/* From here on, like the real remote half: the channel carries nothing
	 * more; what we say goes to stderr, which the client shows (escaped,
	 * it must be: this line tries to clear the screen and set a title). */
	dup2(2, 1);
	printf("evil stderr: \033[2J\033]0;pwned\007 ring\n");
	for (;;) {
		struct rd_conn_req *req;
		struct rd_cm_req creq;
		struct rd_cm_rep rep;
		struct rd_conn_opts co;
		struct peer p;
		int timed_out;

		r = rd_listener_next(l, 30000, &req, &creq);
		if (r) {
			printf("ssh case %s: no client (%d)\n", cs->name, r);
			break;
		}
		memset(&rep, 0, sizeof(rep));
		memset(&co, 0, sizeof(co));
		memset(&p, 0, sizeof(p));
		/* the highest version both speak, as a real server picks */
		rep.version = creq.ver_max < RD_PROTO_MAX ? creq.ver_max : RD_PROTO_MAX;
		co.timeout_ms = CASE_TIMEOUT_S * 1000;
		if (rd_conn_accept(req, &co, &rep, &p.c, &err)) {
			printf("ssh case %s: accept: %s\n", cs->name, err.msg);
			break;
		}
		if (server_tls(&p.c, secret, &err)) {
			printf("ssh case %s: refused a client without the secret: %s\n", cs->name,
			       err.msg);
			rd_conn_close(p.c);
			continue;
		}
		if (peer_alloc(&p) || serve_open(&p, cs) || peer_setup(&p, cs)) {
			printf("ssh case %s: session did not start\n", cs->name);
			peer_close(&p);
			break;
		}
		timed_out = run_sender(&p);
		report("ssh", &p, timed_out);
		printf("ssh case %s: served\n", cs->name);
		peer_close(&p);
		served = 1;
		break;
	}
	rd_listener_close(l);
	return served ? 0 : 1;
}

static int bad_secret(const char *host, const char *port, const char *hex)
{
	struct rd_conn *c = NULL;
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_tls_cfg tc;
	uint8_t secret[RD_SECRET_LEN];
	struct rd_err err;
	int r;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	memset(&err, 0, sizeof(err));
	memset(&tc, 0, sizeof(tc));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	tc.role = RD_TLS_CLIENT;
	tc.auth = RD_AUTH_ANON;
	if (!hex || strcmp(hex, "none")) {
		if (get_secret(hex, secret)) {
			fprintf(stderr, "rdcp_evil: bad secret '%s' (32 hex digits)\n", hex);
			return 2;
		}
		tc.auth = RD_AUTH_SSH;
		rd_tls_psk_ssh(secret, sizeof(secret), tc.psk);
	}
	co.timeout_ms = CASE_TIMEOUT_S * 1000;
	r = rd_conn_connect(&c, host, port, &co, &req, &rep, &err);
	if (r) {
		printf("bad-secret: no connection: %s (%s)\n", err.msg,
		       rd_status_name(err.status));
		return 2;
	}
	r = rd_conn_start_tls(&c, &tc, co.timeout_ms, &err);
	rd_conn_close(c);
	if (!r) {
		printf("bad-secret: ACCEPTED (protocol %u)\n", rep.version);
		return 1;
	}
	printf("bad-secret: refused: %s (%s)\n", err.msg, rd_status_name(err.status));
	return err.status == RD_EAUTH ? 0 : 2;
}

static void usage(void);

/* An empty CREDIT on the connection under TLS: resets the peer's silence timer. */
static void empty_credit(struct rd_conn *lower)
{
	uint8_t b[RD_HDR_LEN];

	memset(b, 0, sizeof(b));
	b[0] = RD_MSG_CREDIT;
	(void)rd_conn_send(lower, b, sizeof(b)); /* busy: next time */
}

/*
 * Hold a connection without proving or asking anything (see the usage at
 * the top): how long until the server drops us?
 */
static int idle_conn(const char *host, const char *port, const char *secs, const char *stage,
		     const char *path)
{
	struct rd_conn *c = NULL, *lower;
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;
	struct rd_msg m;
	const uint8_t *buf;
	const char *why;
	size_t len;
	double t0 = now_s(), limit = atof(secs), credit_at = 0;
	int r, st = !strcmp(stage, "connect") ? 0 : !strcmp(stage, "tls") ? 1 : 2;

	if (st == 2 && (strcmp(stage, "open") || !path)) {
		usage();
		return 2;
	}
	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	memset(&err, 0, sizeof(err));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	co.timeout_ms = (int)(limit * 1000) + 5000;
	if (rd_conn_connect(&c, host, port, &co, &req, &rep, &err)) {
		printf("idle %s: no connection: %s\n", stage, err.msg);
		return 2;
	}
	lower = c;
	if (st >= 1 && client_tls(&c, &err)) {
		printf("idle %s: TLS failed: %s\n", stage, err.msg);
		rd_conn_close(c);
		return 2;
	}
	if (st == 2) {
		if (send_pull_open(c, path, &err)) {
			printf("idle %s: OPEN not sent: %s\n", stage, err.msg);
			rd_conn_close(c);
			return 2;
		}
	}
	printf("idle %s: holding after %.1f s\n", stage, now_s() - t0);
	while (now_s() - t0 < limit) {
		if (now_s() - credit_at >= 0.5) {
			empty_credit(lower);
			credit_at = now_s();
		}
		r = rd_conn_poll(c, 100);
		while (rd_conn_recv(c, &buf, &len) == 1) {
			if (!rd_msg_decode(buf, len, &m, &why)) {
				if (m.hdr.type == RD_MSG_ERROR)
					printf("idle %s: the server says: %.*s\n", stage,
					       (int)m.u.error.text.len, m.u.error.text.ptr);
				else if (m.hdr.type == RD_MSG_OPEN_OK)
					printf("idle %s: OPEN_OK; asking nothing more\n", stage);
			}
			rd_conn_recv_done(c);
		}
		if (r < 0 && r != -RD_ETIMEOUT) {
			printf("idle %s: dropped after %.1f s: %s\n", stage, now_s() - t0,
			       rd_conn_err(c)->msg);
			rd_conn_close(c);
			return 0;
		}
	}
	printf("idle %s: still connected after %.1f s\n", stage, now_s() - t0);
	rd_conn_close(c);
	return 1;
}

static int swap_loop(const char *dir, const char *a, const char *b, const char *secs)
{
	time_t end = time(NULL) + atoi(secs);
	unsigned long n = 0, failed = 0;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0) {
		perror(dir);
		return 2;
	}
	while (time(NULL) < end) {
		for (int i = 0; i < 1000; i++) {
			if (syscall(SYS_renameat2, dfd, a, dfd, b, 2 /* RENAME_EXCHANGE */))
				failed++;
			n++;
		}
	}
	printf("swap: %lu exchanges, %lu failed\n", n, failed);
	close(dfd);
	return failed == n ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rdcp_evil push-paths HOST PORT MODULE\n"
		"       rdcp_evil serve-evil PORT [CASE...]\n"
		"       rdcp_evil pull-cases\n"
		"       rdcp_evil serve-evil-ssh ADDR CASE [SECRET_HEX]\n"
		"       rdcp_evil bad-secret HOST PORT [SECRET_HEX|none]\n"
		"       rdcp_evil idle HOST PORT SECONDS [connect|tls|open MODULE/PATH]\n"
		"       rdcp_evil join HOST PORT\n"
		"       rdcp_evil flood HOST PORT N SECONDS\n"
		"       rdcp_evil swap DIR A B SECONDS\n"
		"       rdcp_evil push-probe HOST PORT MODULE\n"
		"       rdcp_evil sum-flood HOST PORT MODULE/FILE [COUNT]\n"
		"       rdcp_evil sum-drip HOST PORT MODULE/FILE SECONDS\n"
		"       rdcp_evil link-tree DIR OUTSIDE N [DEPTH]\n"
		"       rdcp_evil rules HOST PORT MODULE/PATH\n"
		"       rdcp_evil wide HOST PORT MODULE\n" RDCP_EVIL_PREAUTH_USAGE);
}

int main(int argc, char **argv)
{
	unsigned i;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (raw_selftest())
		return 3;
	if (argc == 5 && !strcmp(argv[1], "list-paths"))
		return evil_list_paths(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "push-paths"))
		return push_paths(argv[2], argv[3], argv[4]);
	if (argc >= 3 && !strcmp(argv[1], "serve-evil"))
		return serve_evil(argv[2], argc - 3, argv + 3);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "serve-evil-ssh"))
		return serve_evil_ssh(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc >= 5 && argc <= 7 && !strcmp(argv[1], "idle"))
		return idle_conn(argv[2], argv[3], argv[4], argc >= 6 ? argv[5] : "connect",
				 argc == 7 ? argv[6] : NULL);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "bad-secret"))
		return bad_secret(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc == 4 && !strcmp(argv[1], "join"))
		return evil_join(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "flood"))
		return evil_flood(argv[2], argv[3], atoi(argv[4]), atof(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "rules"))
		return evil_rules(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "wide"))
		return evil_wide(argv[2], argv[3], argv[4]);
	if (argc == 6 && !strcmp(argv[1], "swap"))
		return swap_loop(argv[2], argv[3], argv[4], argv[5]);
	r = rdcp_evil_preauth(argc, argv);
	if (r >= 0)
		return r;
	if (argc == 5 && !strcmp(argv[1], "push-probe"))
		return push_probe(argv[2], argv[3], argv[4]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "sum-flood"))
		return sum_flood(argv[2], argv[3], argv[4], argc == 6 ? atoi(argv[5]) : 1000);
	if (argc == 6 && !strcmp(argv[1], "sum-drip"))
		return sum_drip(argv[2], argv[3], argv[4], atof(argv[5]));
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "link-tree"))
		return link_tree(argv[2], argv[3], atoi(argv[4]), argc == 6 ? atoi(argv[5]) : 14);
	if (argc == 2 && !strcmp(argv[1], "pull-cases")) {
		for (i = 0; i < NELEM(pull_cases); i++)
			printf("%s\n", pull_cases[i].name);
		return 0;
	}
	usage();
	return 2;
}
