/* SPDX-License-Identifier: MIT */
/*
 * What a running rdcpd is doing and has done: its sessions (peer, user,
 * module, direction, live byte counts) and its counters. The daemon's
 * session threads update it; the metrics endpoint (Prometheus text) and
 * the status socket (rdcpd --status) read it. Every reader and writer
 * holds its one mutex for a short, bounded time (no I/O under it: pages
 * are written into memory streams), except per-file counts, which are
 * atomic. Memory: one record per connection being served (bounded by
 * max connections) and a fixed table of module names.
 */
#ifndef RDCP_DAEMON_RD_ACTIVITY_H
#define RDCP_DAEMON_RD_ACTIVITY_H

#include <stdint.h>
#include <stdio.h>

#include "lib/engine/rd_engine.h"

#define RD_ACT_MODULES_MAX 1024 /* module names counted over the daemon's life */

enum rd_act_result { RD_ACT_OK, RD_ACT_PARTIAL, RD_ACT_FAILED, RD_ACT_REFUSED, RD_ACT_RESULTS };

struct rd_act;
struct rd_act_sess;

/* NULL if out of memory. version: rdcpd_build_info's. */
struct rd_act *rd_act_new(const char *version);
void rd_act_free(struct rd_act *a); /* accepts NULL; no session may be open */

/* The memory budget, what one session may pin, the listeners ("[::]:18710 ..."). */
void rd_act_set_budget(struct rd_act *a, uint64_t budget, uint64_t per_session);
void rd_act_set_listeners(struct rd_act *a, unsigned port, const char *where);

/*
 * A connection accepted (transport "rdma" or "tcp"): a record until
 * rd_act_close. NULL when a is NULL or out of memory (every call below
 * accepts NULL and does nothing).
 */
struct rd_act_sess *rd_act_open(struct rd_act *a, const char *peer, const char *transport);
uint64_t rd_act_id(const struct rd_act_sess *s); /* its session number (1, 2, ...) */
void rd_act_user(struct rd_act_sess *s, const char *user);
/*
 * Its transfer starts (e: live counters until rd_act_job_end) or ends:
 * the module it counts under, push or pull, how long the engine ran.
 */
void rd_act_job_start(struct rd_act_sess *s, const char *module, int push,
		      const struct rd_engine *e);
void rd_act_job_end(struct rd_act_sess *s, double seconds);
/* One regular file moved (rdcpd_files_total): any thread, no lock. */
void rd_act_file(struct rd_act_sess *s);
/* The connection ends with result; the record is freed. */
void rd_act_close(struct rd_act_sess *s, enum rd_act_result result);

/* A client failed to authenticate; one turned away before it had a session. */
void rd_act_auth_failure(struct rd_act *a);
void rd_act_refused(struct rd_act *a);

/* The Prometheus page (rd_metrics render callback). 0, or -1 if out of memory. */
int rd_act_prometheus(struct rd_act *a, FILE *out);
/* rdcpd --status: text for people, or one JSON object. */
int rd_act_status(struct rd_act *a, FILE *out, int json);

#endif
