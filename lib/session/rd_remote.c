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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport_dev.h"

/* How long one connecting client may take to prove the secret. */
#define RD_REMOTE_TLS_MS 10000

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

int rd_remote_serve(struct rd_remote *r, const struct rd_remote_opts *o)
{
	struct rd_listener *l = NULL;
	struct rd_conn_req *req;
	struct rd_conn *c = NULL;
	struct rd_cm_req creq;
	struct rd_cm_rej rej;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_ready ready;
	struct rd_server_cfg cfg;
	struct timespec deadline;
	struct rd_tls_cfg tls;
	struct rd_err err;
	char line[1024], peer[96];
	long left;
	int ret;

	memset(r, 0, sizeof(*r));
	memset(&ready, 0, sizeof(ready));
	ret = rd_rdma_addrs(ready.addrs, RD_REMOTE_MAX_ADDRS, &r->err);
	if (ret < 0 && o->co.transport == RD_XPORT_RDMA)
		goto out;
	/* no RDMA address here: the client comes over TCP */
	ready.naddrs = ret < 0 ? 0 : ret;
	if (RAND_bytes(ready.secret, RD_SECRET_LEN) != 1) {
		ret = rd_err_set(&r->err, RD_ESYS, 0, "cannot draw a random secret (OpenSSL RAND)");
		goto out;
	}
	ret = rd_listener_open(&l, NULL, "0", 4, o->co.transport, &r->err);
	if (ret)
		goto out;
	memset(&tls, 0, sizeof(tls));
	tls.role = RD_TLS_SERVER;
	tls.ssh_secret_set = 1;
	ret = rd_tls_psk_ssh(ready.secret, RD_SECRET_LEN, tls.psk);
	if (ret) {
		rd_err_set(&r->err, RD_ESYS, 0, "cannot derive the session key");
		goto out;
	}
	ready.ver_min = RD_PROTO_MIN;
	ready.ver_max = RD_PROTO_MAX;
	ready.port = rd_listener_port(l);
	rd_ready_format(line, sizeof(line), &ready);
	o->announce(o->ctx, line);
	OPENSSL_cleanse(line, sizeof(line));

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (o->accept_timeout_ms > 0 ? o->accept_timeout_ms : 30000) / 1000;
	for (;;) {
		left = ms_left(&deadline);
		if (left <= 0) {
			ret = rd_err_set(&r->err, RD_ETIMEOUT, 0,
					 "no client proved the secret within %d s; giving up",
					 (o->accept_timeout_ms > 0 ? o->accept_timeout_ms : 30000) /
						 1000);
			goto out;
		}
		ret = rd_listener_next(l, left > 250 ? 250 : (int)left, &req, &creq);
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
			rd_err_copy(&r->err, rd_listener_err(l));
			goto out;
		}
		memset(&rej, 0, sizeof(rej));
		rej.ver_min = RD_PROTO_MIN;
		rej.ver_max = RD_PROTO_MAX;
		if (!rd_proto_versions_overlap(creq.ver_min, creq.ver_max)) {
			rej.reason = RD_REJ_VERSION;
			rd_conn_reject(req, &rej);
			ret = rd_err_set(&r->err, RD_EVERSION, 0,
					 "client speaks protocol %u..%u, this rdcp %u..%u",
					 creq.ver_min, creq.ver_max, RD_PROTO_MIN, RD_PROTO_MAX);
			goto out;
		}
		memset(&rep, 0, sizeof(rep));
		rep.version = creq.ver_max < RD_PROTO_MAX ? creq.ver_max : RD_PROTO_MAX;
		snprintf(peer, sizeof(peer), "%s", rd_conn_req_peer(req));
		/* Nobody else reads l: the extra lanes' JOINs come through it. */
		co = o->co;
		co.lanes_from = l;
		/* a stranger that never completes the connection: the same deadline */
		co.accept_timeout_ms = left < RD_REMOTE_TLS_MS ? (int)left : RD_REMOTE_TLS_MS;
		ret = rd_conn_accept(req, &co, &rep, &c, &r->err);
		if (ret)
			goto out;
		/* Only the client that read our ready line knows the PSK. */
		ret = rd_conn_start_tls(&c, &tls, left < RD_REMOTE_TLS_MS ? (int)left : RD_REMOTE_TLS_MS,
					&err);
		if (!ret)
			break;
		logf_(o, "refused a connection from %s: %s", peer, err.msg);
		rd_conn_close(c);
		c = NULL;
	}
	/* One client only: the listener goes before the session starts. */
	rd_listener_close(l);
	l = NULL;
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
	OPENSSL_cleanse(ready.secret, sizeof(ready.secret));
	OPENSSL_cleanse(&tls, sizeof(tls));
	rd_conn_close(c);
	rd_listener_close(l);
	return ret;
}
