/* SPDX-License-Identifier: MIT */
/* rdcp_evil's parts (tests/hostile): what one file shares with another. */
#ifndef RDCP_TESTS_HOSTILE_RDCP_EVIL_H
#define RDCP_TESTS_HOSTILE_RDCP_EVIL_H

#include "lib/base/rd_err.h"
#include "lib/xport/rd_xport.h"

#define CASE_TIMEOUT_S 20

/* Monotonic seconds. */
double now_s(void);
/* TLS as a client: $RDCP_EVIL_USER with $RDCP_PASSWORD, else anonymous. */
int client_tls(struct rd_conn **c, struct rd_err *err);

/* rdcp_evil join / flood (rdcp_evil_lanes.c): exit statuses. */
int evil_join(const char *host, const char *port);
int evil_flood(const char *host, const char *port, int n, double secs);

#endif
