/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/daemon: what one session tells the operator's tools --
 * the lines of rd_daemon_ev_kind (journal fields, a module's log file),
 * the transfer log (lib/xferlog, the module's log format), the counters
 * and the session record (rd_activity.h). rd_daemon.c calls these at the
 * few points of a session's life; the server's hooks (on_job, on_entry)
 * call the rest.
 */
#ifndef RDCP_DAEMON_RD_OPS_H
#define RDCP_DAEMON_RD_OPS_H

#include "lib/daemon/rd_activity.h"
#include "lib/daemon/rd_daemon.h"

struct rd_ops_sess {
	const struct rd_daemon_cfg *cfg;
	struct rd_act_sess *act;
	char peer[96];	   /* "addr:port" */
	char addr[80];	   /* the address alone (%a, %h) */
	char transport[8]; /* "rdma", "tcp" */
	const char *user;  /* the authenticated user ("" anonymous), or NULL before */
	const struct rd_conf_module *mod; /* the job's (first) module */
	const struct rd_server_job *job;  /* while it runs */
	int started, ended, status;
	int authfail, closed;
	uint64_t files;	    /* regular files moved */
	uint64_t job_bytes; /* when the job ended: data bytes moved */
	double job_seconds; /* ... and how long it ran */
};

/* Accepted: a session record (metrics, status) for peer over c. */
void rd_ops_begin(struct rd_ops_sess *o, const struct rd_daemon_cfg *cfg, const char *peer,
		  const char *transport);
/* Authenticated as user (points into the caller's, valid for the session). */
void rd_ops_user(struct rd_ops_sess *o, const char *user);
/* TLS failed (status, message): an authentication failure or a refusal. */
void rd_ops_tls_failed(struct rd_ops_sess *o, int status, const char *msg);
/* rd_server_cfg hooks; ctx is the rd_ops_sess. */
void rd_ops_on_job(void *ctx, const struct rd_server_job *job);
void rd_ops_on_entry(void *ctx, const struct rd_engine_entry *en);
/* --delete on a push: rsyncd's "del." line for each entry deleted (not -n). */
void rd_ops_on_deleted(void *ctx, unsigned flags, const char *path, size_t len,
		       const char *text);
/*
 * rd_server_serve returned ret with err's message and summary: the
 * refusal or failure line, the session's end line, the counters; the
 * record goes away.
 */
void rd_ops_end(struct rd_ops_sess *o, int ret, const char *why, const char *summary);
/* A connection the accept loop turned away: the line and the count. */
void rd_ops_refused(const struct rd_daemon_cfg *cfg, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Emit one line: to cfg->event with ev (when set), else to cfg->log. */
void rd_ops_emit(const struct rd_daemon_cfg *cfg, int level, const struct rd_daemon_event *ev,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
