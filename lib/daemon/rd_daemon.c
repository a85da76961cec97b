// SPDX-License-Identifier: MIT
#include "lib/daemon/rd_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/daemon/rd_access.h"
#include "lib/daemon/rd_ops.h"
#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"
#include "lib/xport/rd_xport_dev.h"

/*
 * One session thread. Workers are joinable and listed in rd_daemon_run's
 * frame, which never returns before it joined every one of them: no
 * worker ever touches a dead stack (issue 7 item 10).
 */
struct worker {
	/* The configuration as it was when the connection came: a reload
	 * changes what new connections get, never a session in flight. */
	struct rd_daemon_cfg snap;
	struct rd_server_cfg server_snap; /* snap.server with the abort flag */
	const struct rd_daemon_cfg *cfg;
	const struct rd_server_cfg *server;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct timespec t0;	  /* when the connection request came */
	struct rd_conf_net addr; /* the peer's address (max_per_host) */
	int has_addr;
	pthread_t th;
	/*
	 * proven: the peer proved a user (a secret or a client certificate);
	 * from then on it no longer counts against its host (max_per_host is
	 * for those who proved nothing yet, or never will: anonymous peers).
	 * ended: the session's work is over (its engine returned, or it was
	 * refused); it no longer counts against its host even while the close
	 * still flushes its last messages (up to a second or so when the peer
	 * is gone). done: the thread is finished and may be joined.
	 */
	volatile int proven;
	volatile int ended;
	volatile int done;
	struct worker *next;
};

static long ms_since(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (long)(n.tv_sec - t->tv_sec) * 1000 + (n.tv_nsec - t->tv_nsec) / 1000000;
}

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

/* One session's view for rd_server_serve's authorize callback. */
struct session_auth {
	const struct rd_daemon_cfg *cfg;
	struct rd_peer_id peer;
	const struct rd_conf_module *entered; /* whose uid/gid the files get */
	struct rd_fsid *fsid;		      /* its identity executor, if any */
	int counted[RD_OPEN_PATHS_MAX];	      /* module slots this session holds */
	const struct rd_conf_module *cmods[RD_OPEN_PATHS_MAX]; /* ... of these modules */
	int ncounted;
	int user_counted; /* holds a slot of its user's (max connections per user) */
	struct rd_pace pace; /* its share of max rate (session_rate) */
};

/*
 * Sessions per module, for a module's "max connections": by name, so the
 * count survives a reload. One table for the daemon (one daemon per process).
 */
static struct {
	char name[RD_CONF_MODNAME_MAX];
	int n;
} mod_use[RD_CONF_MODULES_MAX];
static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
/* Sessions holding at least one module slot: they share the global max rate. */
static int sessions_in;

/* Take a slot of module m, or refuse when it has max connections already. */
static int module_slot(struct session_auth *a, const struct rd_conf_module *m,
		       struct rd_err *err)
{
	int i, k, ret = 0;

	for (k = 0; k < a->ncounted; k++)
		if (!strcmp(mod_use[a->counted[k]].name, m->name))
			return 0; /* one slot per session and module */
	pthread_mutex_lock(&mod_lock);
	for (i = 0; i < RD_CONF_MODULES_MAX && mod_use[i].name[0]; i++)
		if (!strcmp(mod_use[i].name, m->name))
			break;
	if (i == RD_CONF_MODULES_MAX) {
		ret = rd_err_set(err, RD_EPERM, 0, "module %s: too many modules in use", m->name);
	} else if (m->max_conns > 0 && mod_use[i].n >= m->max_conns) {
		ret = rd_err_set(err, RD_EBUSY, 0,
				 "module %s is busy: %d connections already (max connections); "
				 "try again later",
				 m->name, mod_use[i].n);
	} else {
		snprintf(mod_use[i].name, sizeof(mod_use[i].name), "%s", m->name);
		mod_use[i].n++;
		if (!a->ncounted)
			sessions_in++;
		a->cmods[a->ncounted] = m;
		a->counted[a->ncounted++] = i;
	}
	pthread_mutex_unlock(&mod_lock);
	return ret;
}

static void module_release(struct session_auth *a)
{
	int k;

	pthread_mutex_lock(&mod_lock);
	for (k = 0; k < a->ncounted; k++)
		mod_use[a->counted[k]].n--;
	if (a->ncounted)
		sessions_in--;
	a->ncounted = 0;
	pthread_mutex_unlock(&mod_lock);
}

/*
 * Sessions per proven user, for "max connections per user": a list under
 * its lock, an entry while its user has a session (at most one per session).
 */
struct user_use {
	char name[RD_TLS_USER_MAX + 1];
	int n;
	struct user_use *next;
};
static struct user_use *user_use;
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;

/* Take a slot of the session's user, or refuse when it has max of them already. */
static int user_slot(struct session_auth *a, int max, struct rd_err *err)
{
	struct user_use *u;
	int ret = 0;

	if (a->user_counted || max <= 0 || !a->peer.user[0] ||
	    (a->peer.auth != RD_AUTH_USER && a->peer.auth != RD_AUTH_CERT))
		return 0;
	pthread_mutex_lock(&user_lock);
	for (u = user_use; u && strcmp(u->name, a->peer.user); u = u->next)
		;
	if (!u && (u = calloc(1, sizeof(*u)))) {
		snprintf(u->name, sizeof(u->name), "%s", a->peer.user);
		u->next = user_use;
		user_use = u;
	}
	if (!u)
		ret = rd_err_set(err, RD_EBUSY, ENOMEM,
				 "server busy (out of memory); try again later");
	else if (u->n >= max)
		ret = rd_err_set(err, RD_EBUSY, 0,
				 "user %s has %d sessions already (the server's max connections "
				 "per user); try again later",
				 u->name, u->n);
	else
		u->n++;
	pthread_mutex_unlock(&user_lock);
	a->user_counted = !ret;
	return ret;
}

static void user_release(struct session_auth *a)
{
	struct user_use **pp, *u;

	if (!a->user_counted)
		return;
	pthread_mutex_lock(&user_lock);
	for (pp = &user_use; (u = *pp); pp = &u->next) {
		if (strcmp(u->name, a->peer.user))
			continue;
		if (--u->n <= 0) {
			*pp = u->next;
			free(u);
		}
		break;
	}
	pthread_mutex_unlock(&user_lock);
	a->user_counted = 0;
}

static uint64_t min_rate(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/*
 * This session's share of max rate (rd_pace.rate_fn, asked every 100 ms):
 * the global limit over the sessions in modules, and each of its modules'
 * limits over that module's sessions; the smallest wins. 0: no limit.
 */
static uint64_t session_rate(void *ctx)
{
	struct session_auth *a = ctx;
	uint64_t r = 0;
	int k, n;

	pthread_mutex_lock(&mod_lock);
	if (a->ncounted && a->cfg->conf->max_rate && sessions_in > 0)
		r = a->cfg->conf->max_rate / (uint64_t)sessions_in;
	for (k = 0; k < a->ncounted; k++) {
		n = mod_use[a->counted[k]].n;
		if (a->cmods[k]->max_rate && n > 0)
			r = min_rate(r, a->cmods[k]->max_rate / (uint64_t)n);
	}
	pthread_mutex_unlock(&mod_lock);
	return r;
}

/*
 * The largest chunk for this session (rd_server_cfg.chunk_limit): what
 * moves in a quarter second at its share now, and in a quarter of the
 * idle timeout at the least share it could fall to (each limit over as
 * many sessions as may use it at once).
 */
static uint32_t session_chunk_limit(void *ctx)
{
	struct session_auth *a = ctx;
	const struct rd_conf *c = a->cfg->conf;
	uint64_t now = session_rate(a), worst = 0, idle_bytes;
	uint32_t chunk;
	int k, n;

	if (!now)
		return 0;
	if (c->max_rate)
		worst = c->max_rate / (uint64_t)(c->max_conns > 0 ? c->max_conns : 1);
	for (k = 0; k < a->ncounted; k++) {
		n = a->cmods[k]->max_conns > 0 ? a->cmods[k]->max_conns : c->max_conns;
		if (a->cmods[k]->max_rate)
			worst = min_rate(worst, a->cmods[k]->max_rate / (uint64_t)(n > 0 ? n : 1));
	}
	chunk = rd_pace_chunk_max(now);
	idle_bytes = worst * (uint64_t)(c->idle_timeout_s > 0 ? c->idle_timeout_s : 30) / 4;
	while (chunk > RD_CHUNK_MIN && chunk > idle_bytes)
		chunk >>= 1;
	return chunk;
}

/* Does this configuration limit any rate? Then sessions are paced. */
static int conf_paces(const struct rd_conf *c)
{
	int i;

	if (c->max_rate)
		return 1;
	for (i = 0; i < c->nmods; i++)
		if (c->mods[i]->max_rate)
			return 1;
	return 0;
}

static int authorize(void *ctx, const struct rd_module *mod, int push, char *digest, size_t cap,
		     struct rd_err *err)
{
	struct session_auth *a = ctx;
	const struct rd_conf_module *m = rd_conf_module_find(a->cfg->conf, mod->name);
	int ret;

	if (!m)
		return rd_err_set(err, RD_ENOENT, 0, "unknown module '%s'", mod->name);
	if (!digest[0])
		snprintf(digest, cap, "%s", m->checksum);
	ret = rd_access_check(a->cfg->conf, m, &a->peer, push, digest, err);
	if (!ret)
		ret = user_slot(a, a->cfg->max_per_user, err);
	if (!ret && a->ncounted < RD_OPEN_PATHS_MAX)
		ret = module_slot(a, m, err);
	if (ret)
		return ret;
	/* One identity per session: the files are opened later, by the engine. */
	if (a->entered && (strcmp(rd_access_default_uid(a->entered), rd_access_default_uid(m)) ||
			   strcmp(a->entered->gid, m->gid)))
		return rd_err_set(err, RD_EPERM, 0,
				  "modules %s and %s act as different users (uid/gid): copy from "
				  "them in separate sessions",
				  a->entered->name, m->name);
	if (a->entered)
		return 0;
	ret = rd_access_enter(m, &a->fsid, err);
	if (!ret)
		a->entered = m;
	return ret;
}

/* rd_server_cfg.may_delete: the module's delete, the user's +delete/-delete. */
static int may_delete(void *ctx, const struct rd_module *mod)
{
	struct session_auth *a = ctx;
	const struct rd_conf_module *m = rd_conf_module_find(a->cfg->conf, mod->name);

	return m && rd_access_may_delete(a->cfg->conf, m, &a->peer);
}

/* rd_server_cfg.listable: list = yes and this peer may come in (rd_access_listed). */
static int listable(void *ctx, const struct rd_module *mod, char *comment, size_t cap)
{
	struct session_auth *a = ctx;
	const struct rd_conf_module *m = rd_conf_module_find(a->cfg->conf, mod->name);

	if (!m || !rd_access_listed(a->cfg->conf, m, &a->peer))
		return 0;
	snprintf(comment, cap, "%s", m->comment);
	return 1;
}

/* "addr:port" or "[v6addr]:port" -> the address alone. */
static int peer_addr(const char *peer, struct rd_conf_net *out)
{
	memset(out, 0, sizeof(*out));
	out->prefix = 128;
	return rd_peer_addr(peer, out->addr);
}

/* "2 lanes (RC queue pairs)", and the devices when over several rails. */
static void log_lanes(const struct rd_daemon_cfg *cfg, const char *peer, const struct rd_conn *c)
{
	const struct rd_conn_info *i = rd_conn_info(c);
	char devs[RD_RAILS_MAX * 34];

	logf_(cfg, RD_LOG_INFO, "%s: %u lanes (RC queue pairs)%s%s", peer, i->lanes,
	      i->rails > 1 ? " over rails " : "",
	      i->rails > 1 ? rd_conn_rail_names(i, devs, sizeof(devs)) : "");
}

/* What each lane wrote from here, and over which device. */
static void log_lane_bytes(const struct rd_daemon_cfg *cfg, const char *peer,
			   const struct rd_conn *c)
{
	const struct rd_conn_info *i = rd_conn_info(c);
	char line[RD_LANES_MAX * 64] = "";
	unsigned k;

	for (k = 0; k < i->lanes && k < RD_LANES_MAX; k++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%u on %s: %llu",
			 k ? ", " : "", k, i->rail_dev[rd_conn_lane_rail(c, k) % RD_RAILS_MAX],
			 (unsigned long long)rd_conn_lane_bytes(c, k));
	logf_(cfg, RD_LOG_INFO, "%s: bytes written from here per lane: %s", peer, line);
}

static const char *auth_name(enum rd_auth_kind k)
{
	switch (k) {
	case RD_AUTH_USER:
		return "secret";
	case RD_AUTH_CERT:
		return "certificate";
	case RD_AUTH_ANON:
		return "nothing (anonymous)";
	default:
		return "?";
	}
}

/*
 * The newest protocol version we agree to. Test builds only: the
 * environment's RDCP_TEST_PROTO_MAX (RD_PROTO_MIN..RD_PROTO_MAX - 1) makes
 * this rdcpd answer as an older one would, to test what clients do then.
 */
static unsigned proto_max(void)
{
#ifdef RDCP_TEST_HOOKS
	const char *v = getenv("RDCP_TEST_PROTO_MAX");
	int n = v ? atoi(v) : 0;

	if (n >= RD_PROTO_MIN && n < RD_PROTO_MAX)
		return (unsigned)n;
#endif
	return RD_PROTO_MAX;
}

/*
 * What is left of the auth timeout since the connection request came (at
 * least 1 ms; INT_MAX without one): every step before the peer proved who
 * it is (the RDMA connection completing, TLS) shares this one deadline.
 */
static int auth_left_ms(const struct worker *w)
{
	long left = w->cfg->auth_timeout_ms - ms_since(&w->t0);

	if (w->cfg->auth_timeout_ms <= 0)
		return INT_MAX;
	return left < 1 ? 1 : (int)left;
}

static void *serve_one(void *arg)
{
	struct worker *w = arg;
	const struct rd_daemon_cfg *cfg = w->cfg;
	struct rd_cm_rep rep = {.version = 0};
	struct rd_conn *c = NULL;
	struct rd_server_cfg scfg = *w->server;
	struct rd_conn_opts co = cfg->co;
	struct session_auth sa;
	struct rd_ops_sess ops;
	const struct rd_tls_peer *tp;
	struct rd_err err;
	char peer[96], summary[1536];
	int ret;

	rd_err_clear(&err);
	memset(&sa, 0, sizeof(sa));
	memset(&ops, 0, sizeof(ops));
	snprintf(peer, sizeof(peer), "%s", rd_conn_req_peer(w->req));
	rep.version = proto_max();
	if (w->creq.ver_max < rep.version)
		rep.version = w->creq.ver_max;
	if (cfg->conf)
		co.accept_timeout_ms = auth_left_ms(w);
	ret = rd_conn_accept(w->req, &co, &rep, &c, &err);
	if (ret) {
		logf_(cfg, RD_LOG_WARN, "%s: accept failed: %s", peer, err.msg);
		goto out;
	}
	/* the session's record, lines and counters (metrics, status, transfer log) */
	rd_ops_begin(&ops, cfg, peer, rd_conn_info(c)->transport);
	if (!strcmp(rd_conn_info(c)->transport, "rdma"))
		logf_(cfg, RD_LOG_INFO, "%s: connected via %s port %u (%s), protocol %u", peer,
		      rd_conn_info(c)->device, rd_conn_info(c)->port, rd_conn_info(c)->link,
		      rep.version);
	else
		logf_(cfg, RD_LOG_INFO, "%s: connected over %s, protocol %u", peer,
		      rd_conn_info(c)->link, rep.version);
	/* Authentication first: nothing is opened or pinned for a stranger. */
	if (cfg->conf) {
		ret = rd_conn_start_tls(&c, &cfg->tls, auth_left_ms(w), &err);
		if (ret) {
			rd_ops_tls_failed(&ops, ret, err.msg);
			goto out;
		}
		tp = rd_tls_peer(rd_conn_tls(c));
		sa.cfg = cfg;
		sa.peer.auth = tp->auth;
		snprintf(sa.peer.user, sizeof(sa.peer.user), "%s", tp->user);
		snprintf(sa.peer.name, sizeof(sa.peer.name), "%s", peer);
		if (peer_addr(peer, &sa.peer.addr))
			memset(&sa.peer.addr, 0, sizeof(sa.peer.addr));
		logf_(cfg, RD_LOG_INFO, "%s: authenticated%s%s by %s, %s", peer,
		      tp->user[0] ? " as " : "", tp->user, auth_name(tp->auth), tp->cipher);
		/* a proven user no longer counts against its address */
		if (tp->auth == RD_AUTH_USER || tp->auth == RD_AUTH_CERT)
			__atomic_store_n(&w->proven, 1, __ATOMIC_RELEASE);
		if (rd_conn_info(c)->lanes > 1)
			log_lanes(cfg, peer, c);
		scfg.authorize = authorize;
		scfg.may_delete = may_delete;
		scfg.listable = listable;
		scfg.auth_ctx = &sa;
		if (conf_paces(cfg->conf)) {
			/* max rate: this session's share, asked as it changes */
			rd_pace_init(&sa.pace, 0);
			sa.pace.rate_fn = session_rate;
			sa.pace.rate_ctx = &sa;
			scfg.eo.pace = &sa.pace;
			scfg.chunk_limit = session_chunk_limit;
		}
		rd_ops_user(&ops, sa.peer.user);
	}
	scfg.on_job = rd_ops_on_job;
	scfg.on_entry = rd_ops_on_entry;
	scfg.on_deleted = rd_ops_on_deleted;
	scfg.job_ctx = &ops;
	/*
	 * The request must come within the same deadline as authentication,
	 * counted from the connection request (at least 1 s after TLS): a
	 * client that proves nothing or asks nothing holds its slot no longer,
	 * whatever else it sends (issue 7 item 5).
	 */
	if (cfg->auth_timeout_ms > 0) {
		long left = cfg->auth_timeout_ms - ms_since(&w->t0);

		scfg.open_timeout_ms = left < 1000 ? 1000 : (int)left;
	}
	ret = rd_server_serve(&scfg, c, summary, sizeof(summary), &err);
	rd_ops_end(&ops, ret, err.msg, summary);
	if (rd_conn_info(c)->lanes > 1 && rd_conn_lane_bytes(c, 0) + rd_conn_lane_bytes(c, 1))
		log_lane_bytes(cfg, peer, c);
	if (rd_conn_info(c)->failovers)
		logf_(cfg, RD_LOG_WARN, "%s: %s", peer, rd_conn_info(c)->rails_note);
out:
	rd_ops_end(&ops, ret, NULL, NULL); /* a session that ended early: its record */
	__atomic_store_n(&w->ended, 1, __ATOMIC_RELEASE);
	rd_conn_close(c);
	rd_access_leave(sa.fsid);
	module_release(&sa);
	user_release(&sa);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Sessions from addr that have not proven a user and whose work is not
 * over (closing ones do not count): what max_per_host bounds.
 */
static int from_host(const struct worker *w, const struct rd_conf_net *addr)
{
	int n = 0;

	for (; w; w = w->next)
		if (w->has_addr && !__atomic_load_n(&w->ended, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&w->proven, __ATOMIC_ACQUIRE) &&
		    !memcmp(w->addr.addr, addr->addr, sizeof(addr->addr)))
			n++;
	return n;
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

/*
 * The accepting thread's view, for the listeners' gate (called from inside
 * rd_listener_next, on this thread) and the refusals of the loop.
 */
struct acceptor {
	const struct rd_daemon_cfg *cfg;
	struct worker *workers;
	struct rd_listener **ls;
	int nls;
	int probe;	       /* a descriptor to dup: are there any left? (-1: none) */
	int starved;	       /* said that no descriptor was left */
	unsigned long refused; /* turned away as busy meanwhile (by the probe) */
	/* refusals logged this second, and those only counted (a flood) */
	time_t log_sec;
	unsigned log_n;
	unsigned long quiet;
};

#define REFUSALS_PER_SEC 10

/* Refusals said in the last second beyond REFUSALS_PER_SEC: one line for them. */
static void refusals_flush(struct acceptor *a)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec == a->log_sec)
		return;
	if (a->quiet)
		logf_(a->cfg, RD_LOG_WARN,
		      "%lu more connections refused in the last second (not logged one by one)",
		      a->quiet);
	a->log_sec = now.tv_sec;
	a->log_n = 0;
	a->quiet = 0;
}

/*
 * A refusal before the peer proved anything: counted and logged
 * (rd_ops_refused), but a flood of them is summed up in the log.
 */
static void refusal(struct acceptor *a, const char *peer, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void refusal(struct acceptor *a, const char *peer, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	refusals_flush(a);
	if (a->log_n >= REFUSALS_PER_SEC) {
		rd_act_refused(a->cfg->act);
		a->quiet++;
		return;
	}
	a->log_n++;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	rd_ops_refused(a->cfg, peer, "%s", why);
}

/*
 * Peers from addr that have not proven a user: waiting to send their
 * request (in every listener) or in a session.
 */
static int preauth_from(const struct acceptor *a, const struct rd_conf_net *addr)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
	int i, n = from_host(a->workers, addr);

	memcpy(&sa.sin6_addr, addr->addr, sizeof(addr->addr));
	for (i = 0; i < a->nls; i++)
		n += (int)rd_listener_pending_from(a->ls[i], (struct sockaddr *)&sa);
	return n;
}

/*
 * What the address may do before it proved anything: 0, or the reason it
 * is refused (logged). For a TCP connection this runs as it is accepted,
 * before anything is read from it; for an RDMA request, as it comes.
 */
static int admit(struct acceptor *a, const struct rd_conf_net *addr, int known, const char *peer)
{
	const struct rd_daemon_cfg *cfg = a->cfg;
	int n;

	if (cfg->conf && !(known && (!cfg->conf->nmods || rd_access_host_any(cfg->conf, addr)))) {
		refusal(a, peer, "no module's hosts allow/deny lets this address in");
		return RD_REJ_AUTH;
	}
	if (cfg->max_per_host > 0 && known && (n = preauth_from(a, addr)) >= cfg->max_per_host) {
		refusal(a, peer,
			"%d connections from this address have not authenticated (max connections "
			"per host)",
			n);
		return RD_REJ_HOST_BUSY;
	}
	return 0;
}

static int gate(void *ctx, const struct sockaddr *sa, const char *peer)
{
	struct acceptor *a = ctx;
	struct rd_conf_net addr;
	int known = !rd_conf_addr_from_sockaddr(&addr, sa);

	return admit(a, &addr, known, peer);
}

/*
 * Out of file descriptors (issue 27 item 2): said once when it begins,
 * once when it ends; meanwhile new sessions are refused as busy (the
 * listeners turn TCP connections away themselves).
 */
static void watch_descriptors(struct acceptor *a)
{
	const char *why = "";
	unsigned long refused = a->refused;
	int i;

	for (i = 0; i < a->nls && !*why; i++)
		why = rd_listener_trouble(a->ls[i]);
	for (i = 0; i < a->nls; i++)
		refused += rd_listener_refused(a->ls[i]);
	if (*why && !a->starved) {
		logf_(a->cfg, RD_LOG_ERR, "%s", why);
		a->starved = 1;
	} else if (!*why && a->starved == 1) {
		logf_(a->cfg, RD_LOG_WARN,
		      "accepting connections again (%lu turned away as busy meanwhile)", refused);
		a->starved = 0;
	}
}

/* Is a descriptor left for one more session? 0 when not (said once). */
static int descriptors_left(struct acceptor *a)
{
	int fd = a->probe >= 0 ? fcntl(a->probe, F_DUPFD_CLOEXEC, 0) : 0;

	if (fd > 0)
		close(fd);
	if (fd >= 0) {
		if (a->starved == 2) {
			logf_(a->cfg, RD_LOG_WARN,
			      "accepting connections again (%lu turned away as busy meanwhile)",
			      a->refused);
			a->starved = 0;
		}
		return 1;
	}
	if (errno != EMFILE && errno != ENFILE)
		return 1;
	if (!a->starved)
		logf_(a->cfg, RD_LOG_ERR,
		      "no file descriptor left for a new session (%s): refusing new sessions "
		      "as busy until some free up",
		      strerror(errno));
	if (!a->starved)
		a->starved = 2;
	a->refused++;
	return 0;
}

/* *stop or *reload, set by a signal handler on any thread. */
static int flag(volatile int *p)
{
	return p && __atomic_load_n(p, __ATOMIC_RELAXED);
}

int rd_daemon_run(struct rd_daemon *d, const struct rd_daemon_cfg *cfg)
{
	struct rd_listener *ls[RD_DAEMON_LISTEN_MAX] = {NULL};
	struct acceptor a = {.cfg = cfg, .ls = ls, .probe = -1};
	struct rd_listener_pre pre = {.gate = gate, .ctx = &a};
	struct worker *w;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rej rej;
	struct rd_conf_net addr;
	volatile int abort_sessions = 0;
	char where[RD_DAEMON_LISTEN_MAX * 100];
	int ret, n, waited, nls = 0, which = 0, i, known, why;
	int grace_ms = cfg->grace_ms > 0 ? cfg->grace_ms : RD_DAEMON_GRACE_MS;

	rd_err_clear(&d->err);
	ret = open_listeners(d, cfg, ls, &nls, where, sizeof(where));
	if (ret)
		goto out;
	a.nls = nls;
	a.probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/*
	 * A TCP peer has the auth timeout (at most RD_LISTENER_HELLO_MS) to
	 * send its request; the listeners share RD_LISTENER_PENDING places
	 * for those who have not yet (the daemon's reserve of descriptors).
	 */
	pre.pending_max = RD_LISTENER_PENDING / (unsigned)nls;
	if (cfg->on_ready)
		cfg->on_ready(cfg->log_ctx, rd_listener_port(ls[0]), where);
	while (!flag(cfg->stop)) {
		if (flag(cfg->reload)) {
			__atomic_store_n(cfg->reload, 0, __ATOMIC_RELAXED);
			if (cfg->on_reload)
				cfg->on_reload(cfg->log_ctx);
		}
		/* (the auth timeout may change with a reload) */
		n = cfg->auth_timeout_ms > 0 && cfg->auth_timeout_ms < RD_LISTENER_HELLO_MS
			? cfg->auth_timeout_ms
			: RD_LISTENER_HELLO_MS;
		if (n != pre.hello_ms) {
			pre.hello_ms = n;
			for (i = 0; i < nls; i++)
				rd_listener_set_pre(ls[i], &pre);
		}
		ret = next_request(ls, nls, 500, &which, &req, &creq);
		n = reap(&a.workers, 0);
		watch_descriptors(&a);
		refusals_flush(&a);
		if (ret == 1)
			continue;
		if (ret < 0) {
			rd_err_copy(&d->err, rd_listener_err(ls[which]));
			goto out;
		}
		memset(&rej, 0, sizeof(rej));
		rej.ver_min = RD_PROTO_MIN;
		rej.ver_max = RD_PROTO_MAX;
		if (flag(cfg->stop)) {
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			break;
		}
		if (!rd_proto_versions_overlap(creq.ver_min, creq.ver_max)) {
			refusal(&a, rd_conn_req_peer(req), "speaks protocol %u..%u, this server %u..%u",
				creq.ver_min, creq.ver_max, RD_PROTO_MIN, RD_PROTO_MAX);
			rej.reason = RD_REJ_VERSION;
			rd_conn_reject(req, &rej);
			continue;
		}
		memset(&addr, 0, sizeof(addr));
		known = !peer_addr(rd_conn_req_peer(req), &addr);
		why = admit(&a, &addr, known, rd_conn_req_peer(req));
		if (why) {
			rej.reason = (uint16_t)why;
			rd_conn_reject(req, &rej);
			continue;
		}
		if (cfg->max_conns > 0 && n >= cfg->max_conns) {
			refusal(&a, rd_conn_req_peer(req), "%d connections already", n);
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			continue;
		}
		if (!descriptors_left(&a)) {
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
		w->snap = *cfg;
		w->cfg = &w->snap;
		/* a handshake still running when the sessions are stopped gives up */
		w->snap.co.stop = &abort_sessions;
		w->server_snap = cfg->server;
		w->server_snap.eo.stop = &abort_sessions;
		w->server = &w->server_snap;
		w->req = req;
		w->creq = creq;
		w->addr = addr;
		w->has_addr = known;
		/* the auth timeout counts from the connection, not from its request */
		clock_gettime(CLOCK_MONOTONIC, &w->t0);
		w->t0.tv_sec -= rd_conn_req_age_ms(req) / 1000;
		w->t0.tv_nsec -= (rd_conn_req_age_ms(req) % 1000) * 1000000L;
		if (w->t0.tv_nsec < 0) {
			w->t0.tv_nsec += 1000000000L;
			w->t0.tv_sec--;
		}
		if (pthread_create(&w->th, NULL, serve_one, w)) {
			free(w);
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			continue;
		}
		w->next = a.workers;
		a.workers = w;
	}
	ret = 0;
out:
	/* Stop accepting first: new clients are refused by the kernel. */
	for (i = 0; i < nls; i++)
		rd_listener_close(ls[i]);
	if (a.probe >= 0)
		close(a.probe);
	if (nls && cfg->on_stopping)
		cfg->on_stopping(cfg->log_ctx);
	/* Let running sessions end within the grace period ... */
	for (waited = 0; reap(&a.workers, 0) && waited < grace_ms; waited += 100) {
		struct timespec ts = {0, 100 * 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	/* ... then abort the rest (their temporaries are removed) and join. */
	n = reap(&a.workers, 0);
	if (n)
		logf_(cfg, RD_LOG_WARN, "stopping %d session%s still running after %d s", n,
		      n == 1 ? "" : "s", grace_ms / 1000);
	__atomic_store_n(&abort_sessions, 1, __ATOMIC_RELEASE);
	reap(&a.workers, 1);
	return ret;
}

uint64_t rd_daemon_session_pin(uint64_t pool, unsigned lanes, int wild, uint64_t *charged,
			       unsigned *rails)
{
	unsigned r = 1, ndev;

	if (!lanes)
		lanes = RD_LANES_DEFAULT_CAP;
	if (lanes > 1 && wild) {
		ndev = rd_rdma_device_count();
		r = lanes < RD_RAILS_MAX ? lanes : RD_RAILS_MAX;
		if (ndev < r) /* no device at all: no RDMA session either */
			r = ndev ? ndev : 1;
	}
	if (rails)
		*rails = r;
	return rd_xport_session_pin(pool, 0, r, charged);
}

int rd_daemon_memlock_sessions(uint64_t charged)
{
	struct rd_memlock m;
	uint64_t n;

	if (rd_memlock_query(&m) || m.cap_ipc_lock || m.soft == UINT64_MAX || !charged)
		return INT_MAX;
	n = m.soft / charged;
	return n < INT_MAX ? (int)n : INT_MAX;
}
