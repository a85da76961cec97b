/* SPDX-License-Identifier: MIT */
/*
 * A Prometheus endpoint (libmicrohttpd): GET /metrics answered from a
 * thread of its own with whatever the owner's render callback writes, and
 * the text exposition format's helpers (version 0.0.4: "# HELP", "# TYPE",
 * samples with escaped label values).
 *
 * The endpoint never makes the owner wait: render runs on the endpoint's
 * thread (the owner copies its counters under its own short lock), the
 * page is built in memory before a byte is sent, and sockets are
 * non-blocking: a scraper that never reads holds one of max_clients
 * connections for timeout_s at most, nothing else. Peers allow() refuses
 * are closed before a byte is read.
 */
#ifndef RDCP_METRICS_RD_METRICS_H
#define RDCP_METRICS_RD_METRICS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "lib/base/rd_err.h"

#define RD_METRICS_CLIENTS_DEFAULT 8
#define RD_METRICS_TIMEOUT_DEFAULT 5 /* seconds */
#define RD_METRICS_CONTENT_TYPE	   "text/plain; version=0.0.4; charset=utf-8"

struct rd_metrics_cfg {
	const struct sockaddr *addr; /* where to listen (port 0: any free one) */
	socklen_t addrlen;
	/* 1 when this peer may scrape; NULL: everyone */
	int (*allow)(void *ctx, const struct sockaddr *peer, socklen_t len);
	/* Write the page into out; 0, or -1 to answer 500. */
	int (*render)(void *ctx, FILE *out);
	void *ctx;
	unsigned max_clients; /* 0: RD_METRICS_CLIENTS_DEFAULT */
	unsigned timeout_s;   /* 0: RD_METRICS_TIMEOUT_DEFAULT */
};

struct rd_metrics_srv;

/* Bind, listen and start the thread. 0, or a negative status with err naming the address. */
int rd_metrics_start(struct rd_metrics_srv **out, const struct rd_metrics_cfg *cfg,
		     struct rd_err *err);
unsigned rd_metrics_port(const struct rd_metrics_srv *s);
/* Stop the thread, close every socket. Accepts NULL. */
void rd_metrics_stop(struct rd_metrics_srv *s);

/* --- the text format --- */

/* "# HELP name help\n# TYPE name type\n" */
void rd_prom_head(FILE *f, const char *name, const char *type, const char *help);
/* A label value between quotes: '\\', '"' and newline escaped. */
void rd_prom_value(FILE *f, const char *v);
/* name{label="v"} n: one sample with at most one label (label NULL: none). */
void rd_prom_sample(FILE *f, const char *name, const char *label, const char *v, uint64_t n);

#endif
