/* SPDX-License-Identifier: MIT */
/* rdcp_evil's parts (tests/hostile): what one file shares with another. */
#ifndef RDCP_TESTS_HOSTILE_RDCP_EVIL_H
#define RDCP_TESTS_HOSTILE_RDCP_EVIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"

#define CASE_TIMEOUT_S 20

/*
 * Messages by hand, as rd_proto.h lays them out (rd_msg_encode refuses what
 * is bad, as it should): big-endian fields of n bytes, strings with their
 * u16 length, into b; full once one did not fit.
 */
struct wr {
	uint8_t *b;
	size_t cap, off;
	int full;
};

static inline void put(struct wr *w, uint64_t v, unsigned n)
{
	unsigned i;

	if (w->full || w->cap - w->off < n) {
		w->full = 1;
		return;
	}
	for (i = 0; i < n; i++)
		w->b[w->off + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	w->off += n;
}

static inline void put_bytes(struct wr *w, const char *p, size_t n)
{
	put(w, n, 2);
	if (w->full || w->cap - w->off < n) {
		w->full = 1;
		return;
	}
	if (n)
		memcpy(w->b + w->off, p, n);
	w->off += n;
}

/* The message in w (from its header on) done: the header's length set. Its length, or -1. */
static inline int wr_end(struct wr *w)
{
	size_t plen = w->off - RD_HDR_LEN;

	if (w->full || w->off < RD_HDR_LEN)
		return -1;
	w->b[4] = (uint8_t)(plen >> 24);
	w->b[5] = (uint8_t)(plen >> 16);
	w->b[6] = (uint8_t)(plen >> 8);
	w->b[7] = (uint8_t)plen;
	return (int)w->off;
}

/*
 * The exit status of cases run one after another (0 as wanted, 1 the server
 * took what it must refuse, 2 a case went wrong): 1 outranks 2, 2 outranks 0.
 */
static inline int worst_of(int worst, int r)
{
	return r == 1 || (r == 2 && worst == 0) ? r : worst;
}

/* Monotonic seconds. */
double now_s(void);
/* TLS as a client: $RDCP_EVIL_USER with $RDCP_PASSWORD, else anonymous. */
int client_tls(struct rd_conn **c, struct rd_err *err);
/* OPEN(PULL) of "module/path" with chunks of 4 KiB and sha256: 0 or < 0 (err). */
int send_pull_open(struct rd_conn *c, const char *path, struct rd_err *err);

/* rdcp_evil join / flood (rdcp_evil_lanes.c): exit statuses. */
int evil_join(const char *host, const char *port);
int evil_flood(const char *host, const char *port, int n, double secs);
/* rdcp_evil rules HOST PORT MODULE/PATH (rdcp_evil_rules.c) */
int evil_rules(const char *host, const char *port, const char *path);
/* rdcp_evil wide HOST PORT MODULE (rdcp_evil_wide.c) */
int evil_wide(const char *host, const char *port, const char *module);

/* rdcp_evil_data.c: a receiver that only asks for SUMs (see rdcp_evil.c's usage). */
int sum_flood(const char *host, const char *port, const char *path, int count);
int sum_drip(const char *host, const char *port, const char *path, double secs);
/* rdcp_evil_data.c: N long-path link groups under dir, linked in outside. */
int link_tree(const char *dir, const char *outside, int n, int depth);

/* rdcp_evil_list.c: listings a daemon must refuse; exit status. */
int evil_list_paths(const char *host, const char *port, const char *module);

#endif
