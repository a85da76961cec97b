/* SPDX-License-Identifier: MIT */
/* Private to lib/session. */
#ifndef RDCP_SESSION_RD_SESSION_PRIV_H
#define RDCP_SESSION_RD_SESSION_PRIV_H

#include "lib/session/rd_session.h"
#include "lib/sink/rd_sink.h"

/* A local destination: confined to its parent, placed by its name. */
int rd_local_sink(const char *dest, unsigned flags, mode_t umask, struct rd_sink **sink,
		  struct rd_err *err);

/*
 * A local copy (rd_client_opts.local_dest): the receiving half runs on a
 * thread of its own, its end of a loopback pair behind TLS with a fresh
 * secret. *c is the client's end, *tls the client's TLS settings.
 * rd_local_finish waits for that half to end (after the client closed its
 * end) and returns its status (0, or < 0), its log line into summary.
 */
struct rd_local;
int rd_local_start(struct rd_local **out, const struct rd_client_opts *o, struct rd_conn **c,
		   struct rd_tls_cfg *tls, struct rd_err *err);
int rd_local_finish(struct rd_local *l, char *summary, size_t len);

/* rsync's quick check and transfer rules (OPEN's SELECT) for a receiving sink. */
void rd_session_sink_select(struct rd_sink *sink, const struct rd_select *sel);

/* Keyed digests: the chunk key from the session's TLS exporter. */
int rd_session_chunk_key(struct rd_conn *c, struct rd_engine *e, struct rd_err *err);

#endif
