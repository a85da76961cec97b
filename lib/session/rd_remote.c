// SPDX-License-Identifier: MIT
/*
 * The remote half of an ssh-started copy (scp's model): the same binary,
 * started by the client over ssh with a hidden flag. It listens on an
 * ephemeral RDMA port, announces the port, its RDMA addresses and a fresh
 * 128-bit secret on stdout (which only the ssh client reads), and serves
 * exactly one connection that proves the secret: it is the PSK of the TLS
 * handshake (lib/tls), so it never crosses the network. Anything else is
 * refused and logged; no good client in time: give up.
 */
#include "lib/session/rd_session.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport_dev.h"

/* How long one connecting client may take to prove the secret. */
#define RD_REMOTE_TLS_MS 10000
/*
 * Strangers at once: proving themselves (TLS, each on a thread), from one
 * address (with those still to send their request), and waiting to send
 * their request.
 */
#define RD_REMOTE_CANDS	   8
#define RD_REMOTE_PER_HOST 4
#define RD_REMOTE_PENDING  16

int rd_ready_format(char *buf, size_t len, const struct rd_ready *r)
{
	size_t n;
	int i;

	n = (size_t)snprintf(buf, len, "%s %u %u %u ", RD_REMOTE_READY, r->ver_min, r->ver_max,
			     r->port);
	for (i = 0; i < RD_SECRET_LEN && n + 3 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%02x", r->secret[i]);
	for (i = 0; i < r->naddrs && n + 2 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : " ", r->addrs[i]);
	if (!r->naddrs) /* no RDMA address: TCP to the host ssh reached */
		n += (size_t)snprintf(buf + n, len - n, " -");
	return n < len ? 0 : -RD_EUSAGE;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int rd_ready_parse(const char *line, struct rd_ready *r)
{
	char secret[2 * RD_SECRET_LEN + 2], addrs[RD_REMOTE_MAX_ADDRS * 64];
	char *save = NULL, *a;
	int i, n = 0;

	memset(r, 0, sizeof(*r));
	if (strncmp(line, RD_REMOTE_READY " ", sizeof(RD_REMOTE_READY)))
		return -RD_EPROTO;
	if (sscanf(line + sizeof(RD_REMOTE_READY), "%5u %5u %5u %33s %511s%n", &r->ver_min,
		   &r->ver_max, &r->port, secret, addrs, &n) != 5)
		return -RD_EPROTO;
	if (line[sizeof(RD_REMOTE_READY) + (size_t)n] != '\0' &&
	    line[sizeof(RD_REMOTE_READY) + (size_t)n] != '\n')
		return -RD_EPROTO;
	if (!r->port || r->port > 65535 || strlen(secret) != 2 * RD_SECRET_LEN)
		return -RD_EPROTO;
	for (i = 0; i < RD_SECRET_LEN; i++) {
		int hi = hexval(secret[2 * i]), lo = hexval(secret[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -RD_EPROTO;
		r->secret[i] = (uint8_t)(hi << 4 | lo);
	}
	if (!strcmp(addrs, "-"))
		return 0;
	for (a = strtok_r(addrs, ",", &save); a && r->naddrs < RD_REMOTE_MAX_ADDRS;
	     a = strtok_r(NULL, ",", &save)) {
		if (strlen(a) >= sizeof(r->addrs[0]) || strspn(a, "0123456789abcdefABCDEF.:%") !=
								  strlen(a))
			return -RD_EPROTO;
		snprintf(r->addrs[r->naddrs++], sizeof(r->addrs[0]), "%s", a);
	}
	return r->naddrs ? 0 : -RD_EPROTO;
}

static int add_addr(char addrs[][64], int n, int max, const char *a)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(addrs[i], a))
			return n;
	if (n < max)
		snprintf(addrs[n++], 64, "%s", a);
	return n;
}

int rd_rdma_addrs(char addrs[][64], int max, struct rd_err *err)
{
	struct rd_devlist *l = NULL;
	struct ifaddrs *ifa = NULL, *i;
	unsigned d, p, g;
	int n = 0, ret;

	ret = rd_devlist_query(&l);
	if (ret) {
		rd_err_copy(err, &l->err);
		goto out;
	}
	/* RoCE: the addresses in the GID tables; IPv4 first (what most use). */
	for (d = 0; d < l->ndevs; d++)
		for (p = 0; p < l->devs[d].nports; p++)
			for (g = 0; g < l->devs[d].ports[p].ngids; g++) {
				const char *ip = l->devs[d].ports[p].gids[g].ip;

				if (ip[0] && !strchr(ip, ':'))
					n = add_addr(addrs, n, max, ip);
			}
	for (d = 0; d < l->ndevs; d++)
		for (p = 0; p < l->devs[d].nports; p++)
			for (g = 0; g < l->devs[d].ports[p].ngids; g++) {
				const char *ip = l->devs[d].ports[p].gids[g].ip;

				if (ip[0] && strchr(ip, ':') && strncmp(ip, "fe80", 4))
					n = add_addr(addrs, n, max, ip);
			}
	/* InfiniBand: IPoIB interfaces carry the addresses. */
	if (!getifaddrs(&ifa)) {
		for (i = ifa; i; i = i->ifa_next) {
			char buf[64];

			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    strncmp(i->ifa_name, "ib", 2))
				continue;
			inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr,
				  buf, sizeof(buf));
			n = add_addr(addrs, n, max, buf);
		}
		freeifaddrs(ifa);
	}
	if (!n)
		ret = rd_err_set(err, RD_ENODEV, 0,
				 "no RDMA device here has an IP address (RoCE GID or IPoIB); "
				 "see rdcp --list-devices");
	else
		ret = n;
out:
	rd_devlist_free(l);
	return ret;
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (deadline->tv_sec - n.tv_sec) * 1000 + (deadline->tv_nsec - n.tv_nsec) / 1000000;
}

/*
 * The client never writes to our stdin (the ssh channel); it closes it when
 * it gives up (rd_ssh_finish). EOF or a hangup there: nobody will come.
 */
static int client_gone(void)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};
	char c;

	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
		return 1;
	return read(0, &c, 1) == 0;
}

static void logf_(const struct rd_remote_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logf_(const struct rd_remote_opts *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->log(o->ctx, line);
}

/*
 * A connection that has not proven the secret yet: accepted and put
 * through TLS on a thread of its own, so that what it does (nothing, for
 * as long as it likes) never holds up the listener or the client that does
 * know the secret (issue 27 items 1 and 13).
 */
struct cand {
	struct rd_conn_req *req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	const struct rd_tls_cfg *tls;
	int tls_ms;
	uint8_t key[16]; /* the peer's address (per-host cap) */
	char peer[96];
	pthread_t th;
	struct rd_conn *c; /* proved the secret */
	int ret;
	struct rd_err err;
	int done;
	struct cand *next;
};

static void *cand_main(void *arg)
{
	struct cand *k = arg;

	rd_err_clear(&k->err);
	k->ret = rd_conn_accept(k->req, &k->co, &k->rep, &k->c, &k->err);
	if (!k->ret) {
		k->ret = rd_conn_start_tls(&k->c, k->tls, k->tls_ms, &k->err);
		if (k->ret) {
			rd_conn_close(k->c);
			k->c = NULL;
		}
	}
	__atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The peer's address (IPv4 as IPv4-mapped IPv6), all zero if it has none. */
static void peer_key(const char *peer, uint8_t key[16])
{
	if (rd_peer_addr(peer, key))
		memset(key, 0, 16);
}

struct waiting {
	struct rd_listener *l;
	struct cand *cands;
	int ncands;
};

/* Peers from sa's address that have not proven the secret (pending or in a handshake). */
static unsigned unproven_from(const struct waiting *w, const uint8_t key[16])
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
	const struct cand *k;
	unsigned n;

	memcpy(&sa.sin6_addr, key, 16);
	n = rd_listener_pending_from(w->l, (struct sockaddr *)&sa);
	for (k = w->cands; k; k = k->next)
		if (!memcmp(k->key, key, 16))
			n++;
	return n;
}

static int remote_gate(void *ctx, const struct sockaddr *sa, const char *peer)
{
	const struct waiting *w = ctx;
	uint8_t key[16];

	peer_key(peer, key);
	(void)sa;
	return unproven_from(w, key) >= RD_REMOTE_PER_HOST ? RD_REJ_HOST_BUSY : 0;
}

/*
 * Join the candidates that are done: the first that proved the secret
 * comes out in *won (a second one is closed); the others are logged.
 * wait: join them all (stop set: they give up their handshakes).
 */
static void reap_cands(struct waiting *w, const struct rd_remote_opts *o, struct rd_conn **won,
		       int wait)
{
	struct cand **pp = &w->cands, *k;

	while ((k = *pp)) {
		if (!wait && !__atomic_load_n(&k->done, __ATOMIC_ACQUIRE)) {
			pp = &k->next;
			continue;
		}
		pthread_join(k->th, NULL);
		*pp = k->next;
		w->ncands--;
		if (k->c && !*won)
			*won = k->c;
		else if (k->c)
			rd_conn_close(k->c);
		else if (k->ret != -RD_ESTOPPED)
			logf_(o, "refused a connection from %s: %s", k->peer, k->err.msg);
		free(k);
	}
}

int rd_remote_serve(struct rd_remote *r, const struct rd_remote_opts *o)
{
	struct waiting w = {.l = NULL};
	struct rd_listener_pre pre = {
	    .gate = remote_gate, .ctx = &w, .pending_max = RD_REMOTE_PENDING};
	struct rd_conn_req *req;
	struct rd_conn *c = NULL;
	struct rd_cm_req creq;
	struct rd_cm_rej rej;
	struct rd_ready ready;
	struct rd_server_cfg cfg;
	struct timespec deadline;
	struct rd_tls_cfg tls;
	struct cand *k;
	volatile int stop = 0;
	char line[1024];
	long left;
	int ret, wait;

	memset(r, 0, sizeof(*r));
	memset(&ready, 0, sizeof(ready));
	memset(&tls, 0, sizeof(tls));
	ret = rd_rdma_addrs(ready.addrs, RD_REMOTE_MAX_ADDRS, &r->err);
	if (ret < 0 && o->co.transport == RD_XPORT_RDMA)
		goto out;
	/* no RDMA address here: the client comes over TCP */
	ready.naddrs = ret < 0 ? 0 : ret;
	if (RAND_bytes(ready.secret, RD_SECRET_LEN) != 1) {
		ret = rd_err_set(&r->err, RD_ESYS, 0, "cannot draw a random secret (OpenSSL RAND)");
		goto out;
	}
	ret = rd_listener_open(&w.l, NULL, "0", 16, o->co.transport, &r->err);
	if (ret)
		goto out;
	rd_listener_set_pre(w.l, &pre);
	tls.role = RD_TLS_SERVER;
	tls.ssh_secret_set = 1;
	ret = rd_tls_psk_ssh(ready.secret, RD_SECRET_LEN, tls.psk);
	if (ret) {
		rd_err_set(&r->err, RD_ESYS, 0, "cannot derive the session key");
		goto out;
	}
	ready.ver_min = RD_PROTO_MIN;
	ready.ver_max = RD_PROTO_MAX;
	ready.port = rd_listener_port(w.l);
	rd_ready_format(line, sizeof(line), &ready);
	o->announce(o->ctx, line);
	OPENSSL_cleanse(line, sizeof(line));

	/*
	 * Only the client that proves the secret ends this: a stranger's bad
	 * version, garbage, silence or vanishing is refused and logged, and
	 * the wait goes on (issue 27 item 13).
	 */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (o->accept_timeout_ms > 0 ? o->accept_timeout_ms : 30000) / 1000;
	for (;;) {
		reap_cands(&w, o, &c, 0);
		if (c)
			break;
		left = ms_left(&deadline);
		if (left <= 0) {
			ret = rd_err_set(&r->err, RD_ETIMEOUT, 0,
					 "no client proved the secret within %d s; giving up",
					 (o->accept_timeout_ms > 0 ? o->accept_timeout_ms : 30000) /
						 1000);
			goto out;
		}
		/* a handshake under way: look for its end often (it may be the client) */
		wait = w.ncands ? 5 : 100;
		ret = rd_listener_next(w.l, left > wait ? wait : (int)left, &req, &creq);
		if (ret == 1) {
			if (client_gone()) {
				ret = rd_err_set(&r->err, RD_ECONN, 0,
						 "the client went away (ssh channel closed) "
						 "before it connected");
				goto out;
			}
			continue;
		}
		if (ret < 0) {
			rd_err_copy(&r->err, rd_listener_err(w.l));
			goto out;
		}
		memset(&rej, 0, sizeof(rej));
		rej.ver_min = RD_PROTO_MIN;
		rej.ver_max = RD_PROTO_MAX;
		if (!rd_proto_versions_overlap(creq.ver_min, creq.ver_max)) {
			logf_(o,
			      "refused a connection from %s: it speaks protocol %u..%u, this rdcp "
			      "%u..%u",
			      rd_conn_req_peer(req), creq.ver_min, creq.ver_max, RD_PROTO_MIN,
			      RD_PROTO_MAX);
			rej.reason = RD_REJ_VERSION;
			rd_conn_reject(req, &rej);
			continue;
		}
		k = calloc(1, sizeof(*k));
		if (k)
			peer_key(rd_conn_req_peer(req), k->key);
		if (!k || w.ncands >= RD_REMOTE_CANDS) {
			logf_(o, "refused a connection from %s: %d others are proving themselves",
			      rd_conn_req_peer(req), w.ncands);
			rej.reason = RD_REJ_BUSY;
		} else if (unproven_from(&w, k->key) >= RD_REMOTE_PER_HOST) {
			logf_(o,
			      "refused a connection from %s: %u from its address are proving "
			      "themselves",
			      rd_conn_req_peer(req), unproven_from(&w, k->key));
			rej.reason = RD_REJ_HOST_BUSY;
		}
		if (rej.reason) {
			rd_conn_reject(req, &rej);
			free(k);
			continue;
		}
		k->req = req;
		k->rep.version = creq.ver_max < RD_PROTO_MAX ? creq.ver_max : RD_PROTO_MAX;
		snprintf(k->peer, sizeof(k->peer), "%s", rd_conn_req_peer(req));
		/* this thread keeps reading the listener: the extra lanes' JOINs come through it */
		k->co = o->co;
		k->co.lanes_from = NULL;
		k->co.stop = &stop;
		k->tls = &tls;
		k->tls_ms = left < RD_REMOTE_TLS_MS ? (int)left : RD_REMOTE_TLS_MS;
		/* a stranger that never completes the connection: the same deadline */
		k->co.accept_timeout_ms = k->tls_ms;
		if (pthread_create(&k->th, NULL, cand_main, k)) {
			rej.reason = RD_REJ_BUSY;
			rd_conn_reject(req, &rej);
			free(k);
			continue;
		}
		k->next = w.cands;
		w.cands = k;
		w.ncands++;
	}
	/*
	 * One client only: the others give up their handshakes now (joined
	 * after the session: one still waiting for its RDMA connection to be
	 * established must not hold the session up); the listener, which no
	 * one reads any more, goes once they are joined.
	 */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	memset(&cfg, 0, sizeof(cfg));
	cfg.eo = o->eo;
	cfg.sink_flags = o->sink_flags;
	cfg.umask = o->umask;
	cfg.fixed_mode = o->mode;
	cfg.fixed_paths = o->paths;
	cfg.nfixed = o->npaths;
	r->served = 1;
	ret = rd_server_serve(&cfg, c, r->summary, sizeof(r->summary), &r->err);
out:
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	reap_cands(&w, o, &c, 1);
	OPENSSL_cleanse(ready.secret, sizeof(ready.secret));
	OPENSSL_cleanse(&tls, sizeof(tls));
	rd_conn_close(c);
	rd_listener_close(w.l);
	return ret;
}
