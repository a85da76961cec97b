// SPDX-License-Identifier: MIT
#include "lib/daemon/rd_daemon.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"

/*
 * One session thread. Workers are joinable and listed in rd_daemon_run's
 * frame, which never returns before it joined every one of them: no
 * worker ever touches a dead stack (issue 7 item 10).
 */
struct worker {
	const struct rd_daemon_cfg *cfg;
	const struct rd_server_cfg *server; /* cfg->server with the abort flag */
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	pthread_t th;
	volatile int done;
	struct worker *next;
};

static void logf_(const struct rd_daemon_cfg *cfg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void logf_(const struct rd_daemon_cfg *cfg, int level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	if (!cfg->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	cfg->log(cfg->log_ctx, level, line);
}

static void *serve_one(void *arg)
{
	struct worker *w = arg;
	const struct rd_daemon_cfg *cfg = w->cfg;
	struct rd_cm_rep rep = {.version = 0};
	struct rd_conn *c = NULL;
	struct rd_err err;
	char peer[96], summary[1536];
	int ret;

	rd_err_clear(&err);
	snprintf(peer, sizeof(peer), "%s", rd_conn_req_peer(w->req));
	rep.version = w->creq.ver_max < RD_PROTO_MAX ? w->creq.ver_max : RD_PROTO_MAX;
	ret = rd_conn_accept(w->req, &cfg->co, &rep, &c, &err);
	if (ret) {
		logf_(cfg, RD_LOG_WARN, "%s: accept failed: %s", peer, err.msg);
		goto out;
	}
	logf_(cfg, RD_LOG_INFO, "%s: connected via %s port %u (%s), protocol %u", peer,
	      rd_conn_info(c)->device, rd_conn_info(c)->port, rd_conn_info(c)->link,
	      rep.version);
	ret = rd_server_serve(w->server, c, summary, sizeof(summary), &err);
	if (ret && ret != -RD_EPARTIAL)
		logf_(cfg, RD_LOG_WARN, "%s: %s", peer, err.msg);
	logf_(cfg, RD_LOG_INFO, "%s: %s", peer, summary);
out:
	rd_conn_close(c);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Join the workers that are done (all of them with wait); count the rest. */
static int reap(struct worker **list, int wait)
{
	struct worker **pp = list, *w;
	int n = 0;

	while ((w = *pp)) {
		if (wait || __atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
			pthread_join(w->th, NULL);
			*pp = w->next;
			free(w);
			continue;
		}
		n++;
		pp = &w->next;
	}
	return n;
}

/*
 * Open one listener per configured address (or one for all), all on one
 * port: with port "0" the first one picks it. where gets "A, B, ...".
 */
static int open_listeners(struct rd_daemon *d, const struct rd_daemon_cfg *cfg,
			  struct rd_listener **ls, int *n, char *where, size_t wlen)
{
	const char *port = cfg->port;
	char pbuf[8];
	size_t used = 0;
	int i, ret = 0, want = cfg->nlisten > 0 ? cfg->nlisten : 1;

	*n = 0;
	where[0] = '\0';
	if (want > RD_DAEMON_LISTEN_MAX)
		return rd_err_set(&d->err, RD_EUSAGE, 0, "at most %d listen addresses, not %d",
				  RD_DAEMON_LISTEN_MAX, want);
	for (i = 0; i < want; i++) {
		ret = rd_listener_open(&ls[i], cfg->nlisten > 0 ? cfg->listen_addrs[i] : NULL,
				       port, 64, cfg->co.transport, &d->err);
		if (ret)
			break;
		(*n)++;
		if (*rd_listener_note(ls[i]))
			logf_(cfg, RD_LOG_WARN, "%s", rd_listener_note(ls[i]));
		if (!i) {
			snprintf(pbuf, sizeof(pbuf), "%u", rd_listener_port(ls[0]));
			port = pbuf;
		}
		if (used < wlen)
			used += (size_t)snprintf(where + used, wlen - used, "%s%s", i ? ", " : "",
						 rd_listener_where(ls[i]));
	}
	return ret;
}

/*
 * The next request on any listener: one listener waits up to timeout_ms
 * itself; several are polled in turn, with short naps while all are idle.
 */
static int next_request(struct rd_listener **ls, int n, int timeout_ms, int *which,
			struct rd_conn_req **req, struct rd_cm_req *creq)
{
	static const struct timespec nap = {0, 20 * 1000 * 1000};
	int i, ret, waited;

	if (n == 1) {
		*which = 0;
		return rd_listener_next(ls[0], timeout_ms, req, creq);
	}
	for (waited = 0; waited <= timeout_ms; waited += 20) {
		for (i = 0; i < n; i++) {
			ret = rd_listener_next(ls[i], 0, req, creq);
			if (ret != 1) {
				*which = i;
				return ret;
			}
		}
		nanosleep(&nap, NULL);
	}
	return 1;
}

int rd_daemon_run(struct rd_daemon *d, const struct rd_daemon_cfg *cfg)
{
	struct rd_listener *ls[RD_DAEMON_LISTEN_MAX] = {NULL};
	struct rd_server_cfg server = cfg->server;
	struct worker *workers = NULL, *w;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rej rej;
	volatile int abort_sessions = 0;
	char where[RD_DAEMON_LISTEN_MAX * 100];
	int ret, n, waited, nls = 0, which = 0, i;
	int grace_ms = cfg->grace_ms > 0 ? cfg->grace_ms : RD_DAEMON_GRACE_MS;

	rd_err_clear(&d->err);
	server.eo.stop = &abort_sessions;
	ret = open_listeners(d, cfg, ls, &nls, where, sizeof(where));
	if (ret)
		goto out;
	if (cfg->on_ready)
		cfg->on_ready(cfg->log_ctx, rd_listener_port(ls[0]), where);
	while (!cfg->stop || !*cfg->stop) {
		ret = next_request(ls, nls, 500, &which, &req, &creq);
		n = reap(&workers, 0);
		if (ret == 1)
			continue;
		if (ret < 0) {
			rd_err_copy(&d->err, rd_listener_err(ls[which]));
			goto out;
		}
		memset(&rej, 0, sizeof(rej));
		rej.ver_min = RD_PROTO_MIN;
		rej.ver_max = RD_PROTO_MAX;
		if (cfg->stop && *cfg->stop) {
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			break;
		}
		if (!rd_proto_versions_overlap(creq.ver_min, creq.ver_max)) {
			logf_(cfg, RD_LOG_WARN,
			      "%s: refused: speaks protocol %u..%u, this server %u..%u",
			      rd_conn_req_peer(req), creq.ver_min, creq.ver_max, RD_PROTO_MIN,
			      RD_PROTO_MAX);
			rej.reason = RD_REJ_VERSION;
			rd_conn_reject(req, &rej);
			continue;
		}
		if (cfg->max_conns > 0 && n >= cfg->max_conns) {
			logf_(cfg, RD_LOG_WARN, "%s: refused: %d connections already",
			      rd_conn_req_peer(req), n);
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			continue;
		}
		w = calloc(1, sizeof(*w));
		if (!w) {
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			continue;
		}
		w->cfg = cfg;
		w->server = &server;
		w->req = req;
		w->creq = creq;
		if (pthread_create(&w->th, NULL, serve_one, w)) {
			free(w);
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			continue;
		}
		w->next = workers;
		workers = w;
	}
	ret = 0;
out:
	/* Stop accepting first: new clients are refused by the kernel. */
	for (i = 0; i < nls; i++)
		rd_listener_close(ls[i]);
	if (nls && cfg->on_stopping)
		cfg->on_stopping(cfg->log_ctx);
	/* Let running sessions end within the grace period ... */
	for (waited = 0; reap(&workers, 0) && waited < grace_ms; waited += 100) {
		struct timespec ts = {0, 100 * 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	/* ... then abort the rest (their temporaries are removed) and join. */
	n = reap(&workers, 0);
	if (n)
		logf_(cfg, RD_LOG_WARN, "stopping %d session%s still running after %d s", n,
		      n == 1 ? "" : "s", grace_ms / 1000);
	abort_sessions = 1;
	reap(&workers, 1);
	return ret;
}
