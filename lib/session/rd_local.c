// SPDX-License-Identifier: MIT
/*
 * A local copy (rdcp SRC... DEST, every operand local; issue 28): the two
 * halves of a session in this process. The receiving half is the one an
 * ssh-started rdcp runs (a server whose job is fixed: receive into DEST),
 * on a thread of its own; the client pushes to it over the loopback
 * transport (memory, lib/xport/rd_xport_loop.c), TLS keyed by a fresh
 * random secret as over ssh. So a local copy runs the very engine, session
 * and sink of a remote one: the same placement rules, quick check,
 * filters, partials and checks, nothing written twice.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "lib/session/rd_session.h"
#include "lib/session/rd_session_priv.h"
#include "lib/xport/rd_xport_loop.h"

#define LOCAL_TLS_MS 30000

struct rd_local {
	pthread_t th;
	int started;
	struct rd_conn *c; /* the server's end */
	struct rd_server_cfg cfg;
	const char *dest[1];
	struct rd_tls_cfg tls;
	int ret;
	struct rd_err err;
	char summary[512];
};

static void *serve(void *arg)
{
	struct rd_local *l = arg;

	l->ret = rd_conn_start_tls(&l->c, &l->tls, LOCAL_TLS_MS, &l->err);
	OPENSSL_cleanse(&l->tls, sizeof(l->tls));
	if (!l->ret)
		l->ret = rd_server_serve(&l->cfg, l->c, l->summary, sizeof(l->summary), &l->err);
	/* our end goes now: a client still waiting sees the connection end */
	rd_conn_close(l->c);
	l->c = NULL;
	return NULL;
}

int rd_local_start(struct rd_local **out, const struct rd_client_opts *o, struct rd_conn **c,
		   struct rd_tls_cfg *tls, struct rd_err *err)
{
	uint8_t secret[RD_SECRET_LEN];
	struct rd_local *l;
	int ret;

	*out = NULL;
	*c = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return rd_err_set(err, RD_ENOMEM, 0, "out of memory");
	ret = rd_loop_pair(c, &l->c, &o->co, NULL, NULL, err);
	if (ret)
		goto fail;
	/* what either half says of the other */
	rd_loop_name_peer(*c, "the receiving side");
	rd_loop_name_peer(l->c, "the sending side");
	if (RAND_bytes(secret, sizeof(secret)) != 1) {
		ret = rd_err_set(err, RD_ESYS, 0, "cannot draw a random secret (OpenSSL RAND)");
		goto fail;
	}
	memset(tls, 0, sizeof(*tls));
	tls->role = RD_TLS_CLIENT;
	tls->auth = RD_AUTH_SSH;
	l->tls.role = RD_TLS_SERVER;
	l->tls.ssh_secret_set = 1;
	if (rd_tls_psk_ssh(secret, sizeof(secret), tls->psk) ||
	    rd_tls_psk_ssh(secret, sizeof(secret), l->tls.psk)) {
		ret = rd_err_set(err, RD_ESYS, 0, "cannot derive the session key");
		goto fail;
	}
	OPENSSL_cleanse(secret, sizeof(secret));
	/* the receiving half: as an ssh-started rdcp's, its job fixed */
	l->dest[0] = o->local_dest;
	l->cfg.fixed_mode = RD_MODE_PUSH;
	l->cfg.fixed_paths = l->dest;
	l->cfg.nfixed = 1;
	l->cfg.eo = o->eo;
	l->cfg.eo.digest = NULL;
	l->cfg.umask = o->umask;
	if (pthread_create(&l->th, NULL, serve, l)) {
		ret =
		    rd_err_set(err, RD_ESYS, 0, "cannot start the receiving half of a local copy");
		goto fail;
	}
	l->started = 1;
	*out = l;
	return 0;
fail:
	OPENSSL_cleanse(secret, sizeof(secret));
	rd_conn_close(*c);
	*c = NULL;
	rd_conn_close(l->c);
	OPENSSL_cleanse(&l->tls, sizeof(l->tls));
	free(l);
	return ret;
}

int rd_local_finish(struct rd_local *l, char *summary, size_t len)
{
	int ret;

	if (!l)
		return 0;
	if (l->started)
		pthread_join(l->th, NULL);
	if (summary && len)
		snprintf(summary, len, "%s", l->summary);
	ret = l->ret;
	free(l);
	return ret;
}
