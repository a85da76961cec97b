/* SPDX-License-Identifier: MIT */
/*
 * rdcpd's service loop: RDMA listeners (one per address), one thread per accepted
 * connection (up to max_conns; more are rejected as busy), each serving a
 * session with lib/session. A failing or hostile client ends only its own
 * thread. lib/ never prints: log lines go to the caller's log function.
 */
#ifndef RDCP_DAEMON_RD_DAEMON_H
#define RDCP_DAEMON_RD_DAEMON_H

#include "lib/base/rd_err.h"
#include "lib/conf/rd_conf.h"
#include "lib/session/rd_session.h"
#include "lib/tls/rd_tls.h"

struct rd_act;

#define RD_DAEMON_LISTEN_MAX 16

typedef void (*rd_daemon_log_fn)(void *ctx, int level, const char *line);

enum { RD_LOG_ERR = 3, RD_LOG_WARN = 4, RD_LOG_INFO = 6, RD_LOG_DEBUG = 7 };

/*
 * The lines an operator filters on (rdcpd.conf(5), JOURNAL): each comes
 * with what it is about, so the program can log it with fields (the
 * journal) or route it (a module's log file). Strings are NULL when not
 * known; names are as the peer or the config gave them (raw: escape them).
 */
enum rd_daemon_ev_kind {
	RD_EV_SESSION_START = 1, /* a session's transfer starts */
	RD_EV_SESSION_END,	 /* ... and its summary */
	RD_EV_AUTH_FAILURE,	 /* a client failed to authenticate */
	RD_EV_REFUSED,		 /* a client turned away */
	RD_EV_RELOAD,		 /* the configuration was (or was not) reloaded */
	RD_EV_XFER,		 /* a transfer log line */
	RD_EV_PARTIAL,		 /* an old partial removed */
};

struct rd_daemon_event {
	int kind;
	const char *peer, *user, *module, *transport, *result;
	const struct rd_conf_module *conf_module; /* its log file, if any */
	uint64_t session;
	uint64_t bytes, files;
	double seconds;
	const char *op;	  /* RD_EV_XFER: "send" or "recv" */
	const char *file; /* RD_EV_XFER, RD_EV_PARTIAL: the path (escaped) */
};

typedef void (*rd_daemon_event_fn)(void *ctx, int level, const char *line,
				   const struct rd_daemon_event *ev);

struct rd_daemon_cfg {
	/* Numeric addresses to listen on; none: every address, IPv4 and IPv6. */
	const char *const *listen_addrs;
	int nlisten; /* at most RD_DAEMON_LISTEN_MAX */
	const char *port;
	int max_conns;
	/*
	 * Connections at once from one peer address that have not proven a
	 * user (0: no limit): those still to send their request, in the TLS
	 * handshake, or anonymous. More are rejected (RD_REJ_HOST_BUSY) and
	 * logged as they are accepted, before anything is read from them, so
	 * one address cannot take every slot before it proved anything. A
	 * session whose peer proved a user (secret, client certificate) no
	 * longer counts: those are bounded by max_conns and max_per_user.
	 */
	int max_per_host;
	/*
	 * Sessions at once of one proven user (0: no limit); one more is
	 * refused at its request (OPEN) with RD_EBUSY, "try again later".
	 */
	int max_per_user;
	struct rd_server_cfg server;
	struct rd_conn_opts co;
	rd_daemon_log_fn log;
	void *log_ctx;
	volatile int *stop;	/* set non-zero (e.g. from a signal) to stop */
	/*
	 * Called once listening (e.g. to print the port or write a ready
	 * file); where says on what ("[::]:18710 (IPv6 and IPv4)", ...).
	 */
	void (*on_ready)(void *ctx, unsigned port, const char *where);
	/* Called once when the listeners stop, before sessions are waited for. */
	void (*on_stopping)(void *ctx);
	/*
	 * After *stop: sessions get grace_ms (0: RD_DAEMON_GRACE_MS) to end;
	 * the rest are aborted (files in progress removed), then every session
	 * thread is joined before rd_daemon_run returns.
	 */
	int grace_ms;
	/*
	 * Who may do what (lib/daemon/rd_access.h), and how peers prove who
	 * they are (a server-role lib/tls config: secrets lookup, certificates,
	 * anonymous allowed or not). A peer must finish TLS within
	 * auth_timeout_ms of connecting, and must have sent its request (OPEN)
	 * by then too (at least 1 s after authenticating), or it is dropped:
	 * a client that proves nothing holds its slot for auth_timeout_ms at
	 * most, whatever it sends meanwhile.
	 */
	const struct rd_conf *conf;
	struct rd_tls_cfg tls;
	int auth_timeout_ms;
	/*
	 * SIGHUP: when *reload is set, the accept loop clears it and calls
	 * on_reload, which may change this struct's fields for the
	 * connections that come next (sessions in flight keep a copy of what
	 * they started with; what it replaces must stay allocated).
	 */
	volatile int *reload;
	void (*on_reload)(void *ctx);
	/*
	 * Optional. event: the lines of rd_daemon_ev_kind go here instead of
	 * log (with log_ctx). act: where sessions and counters are kept for
	 * the metrics and the status socket (lib/daemon/rd_activity.h), with
	 * the listeners on_ready is told.
	 */
	rd_daemon_event_fn event;
	struct rd_act *act;
};

#define RD_DAEMON_GRACE_MS 10000

struct rd_daemon {
	struct rd_err err;
};

/* Serve until *cfg->stop. Returns 0 after a clean stop, else negative. */
int rd_daemon_run(struct rd_daemon *d, const struct rd_daemon_cfg *cfg);

/*
 * What one session of this daemon may pin, for its memory budget: a pool
 * of pool bytes and the control buffers (rd_xport_session_pin), over the
 * rails a session may use here: one, unless sessions get lanes (lanes > 1;
 * 0: the default cap) and a listener hears every address (wild), then up
 * to this host's RDMA devices. *charged: what the locked-memory limit is
 * charged for it; *rails (if not NULL): the rails counted.
 */
uint64_t rd_daemon_session_pin(uint64_t pool, unsigned lanes, int wild, uint64_t *charged,
			       unsigned *rails);

/*
 * Sessions charging `charged` bytes each that the locked-memory limit lets
 * this process register: INT_MAX when the limit does not bind it
 * (CAP_IPC_LOCK, or unlimited), else the limit / charged (maybe 0).
 */
int rd_daemon_memlock_sessions(uint64_t charged);

#endif
