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

/* Keyed digests: the chunk key from the session's TLS exporter. */
int rd_session_chunk_key(struct rd_conn *c, struct rd_engine *e, struct rd_err *err);

/* A ranged pull (rd_client_want.c): the WANTs, and the order entries must come in. */
struct rd_want_state {
	const struct rd_want_item *w;
	size_t n, next;
};
int rd_client__send_wants(struct rd_client *cl, struct rd_conn *c, const struct rd_client_opts *o);
int rd_client__want_accept(void *ctx, const struct rd_msg_file *f);
/* The server of one (rd_server_want.c): read the list, then send it. */
struct rd_want_list;
struct rd_tree;
int rd_server__wants(struct rd_conn *c, int basefd, int timeout_ms, volatile int *stop,
		     struct rd_want_list **out, struct rd_err *err);
int rd_server__want_tree(struct rd_want_list *l, unsigned flags, struct rd_tree **t,
			 struct rd_err *err);
void rd_server__wants_free(struct rd_want_list *l);
/*
 * The modules this peer may see, in MODULES messages (rd_list.c), after a
 * LIST. 0 or a negative status with err; summary for the log.
 */
int rd_server__list_modules(const struct rd_server_cfg *cfg, struct rd_conn *c, char *summary,
			    size_t sumlen, struct rd_err *err);
/* A client's LIST and the MODULES that answer it, to o->module. */
int rd_client__list_modules(struct rd_client *cl, struct rd_conn *c,
			    const struct rd_client_opts *o);

#endif
