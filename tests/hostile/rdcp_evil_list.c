// SPDX-License-Identifier: MIT
/*
 * rdcp_evil list-paths HOST PORT MODULE: a client that asks rdcpd for
 * listings it must refuse (rd_proto.h section 3, Listings): "MODULE/../",
 * "../", a name rdcp keeps for itself, a LIST with a payload. Each case on
 * a connection of its own; a case passes when the server answers ERROR and
 * sends no entry. A control case (MODULE itself) must be listed, so a
 * harness that sees nothing cannot pass. Exit 0 when every case went as it
 * must.
 */
#include <stdio.h>
#include <string.h>

#include "lib/engine/rd_engine.h"
#include "lib/proto/rd_proto.h"
#include "tests/hostile/rdcp_evil.h"

enum { WANT_REFUSED = 0, WANT_LISTED = 1 };

/* Raw OPEN(PULL, RD_OF_LIST) of one path, unchecked: what a hostile client can send. */
static size_t raw_open(uint8_t *b, const char *path)
{
	static const char digest[] = "sha256";
	size_t n = 8, pl = strlen(path), dl = strlen(digest);
	uint32_t flags = RD_OF_LIST, chunk = RD_CHUNK_MIN;

	memset(b, 0, 8);
	b[0] = RD_MSG_OPEN;
	b[n++] = RD_MODE_PULL;
	b[n++] = (uint8_t)(flags >> 24), b[n++] = (uint8_t)(flags >> 16);
	b[n++] = (uint8_t)(flags >> 8), b[n++] = (uint8_t)flags;
	b[n++] = (uint8_t)(chunk >> 24), b[n++] = (uint8_t)(chunk >> 16);
	b[n++] = (uint8_t)(chunk >> 8), b[n++] = (uint8_t)chunk;
	b[n++] = 0, b[n++] = (uint8_t)dl;
	memcpy(b + n, digest, dl);
	n += dl;
	b[n++] = 0, b[n++] = 1; /* npaths */
	b[n++] = (uint8_t)(pl >> 8), b[n++] = (uint8_t)pl;
	memcpy(b + n, path, pl);
	n += pl;
	b[7] = (uint8_t)(n - 8);
	b[6] = (uint8_t)((n - 8) >> 8);
	return n;
}

/* One case: 1 if the server did what it must. */
static int list_case(const char *host, const char *port, const char *name, const uint8_t *msg,
		     size_t len, int want)
{
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_conn *c = NULL;
	struct rd_err err;
	struct rd_msg m;
	const uint8_t *buf;
	size_t blen;
	const char *why;
	double deadline = now_s() + CASE_TIMEOUT_S;
	int refused = 0, entries = 0, opened = 0, done = 0, ok;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	co.timeout_ms = CASE_TIMEOUT_S * 1000;
	if (rd_conn_connect(&c, host, port, &co, &req, &rep, &err) || client_tls(&c, &err)) {
		printf("list case %s: cannot connect: %s\n", name, err.msg);
		rd_conn_close(c);
		return 0;
	}
	while (rd_conn_send(c, msg, len) == RD_XPORT_BUSY && now_s() < deadline)
		rd_conn_poll(c, 100);
	while (!done && now_s() < deadline) {
		if (rd_conn_recv(c, &buf, &blen) != 1) {
			if (rd_conn_poll(c, 200) < 0 && rd_conn_err(c)->status != RD_ETIMEOUT)
				done = 1; /* the server closed */
			continue;
		}
		if (rd_msg_decode(buf, blen, &m, &why)) {
			printf("list case %s: undecodable answer: %s\n", name, why);
		} else if (m.hdr.type == RD_MSG_ERROR) {
			printf("list case %s: refused: %.*s\n", name, (int)m.u.error.text.len,
			       m.u.error.text.ptr);
			refused = done = 1;
		} else if (m.hdr.type == RD_MSG_OPEN_OK) {
			opened = 1;
		} else if (m.hdr.type == RD_MSG_FILE || m.hdr.type == RD_MSG_FILES) {
			entries++;
			done = want == WANT_LISTED;
		}
		rd_conn_recv_done(c);
	}
	rd_conn_close(c);
	ok = want == WANT_LISTED ? opened && entries > 0 : refused && !entries;
	printf("list case %s: %s (opened %d, entries %d, refused %d)\n", name,
	       ok ? "as it must" : "WRONG", opened, entries, refused);
	return ok;
}

int evil_list_paths(const char *host, const char *port, const char *module)
{
	uint8_t b[RD_MSG_MAX];
	char path[512];
	size_t n;
	unsigned nok = 0, ncases = 0;

	snprintf(path, sizeof(path), "%s/../", module);
	n = raw_open(b, path);
	nok += (unsigned)list_case(host, port, "module-dotdot", b, n, WANT_REFUSED), ncases++;
	n = raw_open(b, "../");
	nok += (unsigned)list_case(host, port, "dotdot", b, n, WANT_REFUSED), ncases++;
	snprintf(path, sizeof(path), "%s/..", module);
	n = raw_open(b, path);
	nok += (unsigned)list_case(host, port, "module-dotdot-noslash", b, n, WANT_REFUSED),
	    ncases++;
	snprintf(path, sizeof(path), "%s/.rdcp-partial.x", module);
	n = raw_open(b, path);
	nok += (unsigned)list_case(host, port, "reserved-name", b, n, WANT_REFUSED), ncases++;
	snprintf(path, sizeof(path), "%s/.rdcp.f.0123456789abcdef", module);
	n = raw_open(b, path);
	nok += (unsigned)list_case(host, port, "reserved-temporary", b, n, WANT_REFUSED), ncases++;
	memset(b, 0, 9);
	b[0] = RD_MSG_LIST;
	b[7] = 1; /* LIST is empty: one byte too many */
	nok += (unsigned)list_case(host, port, "list-with-payload", b, 9, WANT_REFUSED), ncases++;
	/* the control: the module itself is listed, so the harness sees entries */
	n = raw_open(b, module);
	nok += (unsigned)list_case(host, port, "control-module", b, n, WANT_LISTED), ncases++;
	printf("list-paths: %u of %u cases as they must be\n", nok, ncases);
	return nok == ncases ? 0 : 1;
}
