/* SPDX-License-Identifier: MIT */
/*
 * Sessions: the client half (connect, OPEN, run the engine) and the
 * server half (check OPEN against the modules, confine every path to its
 * module, run the engine with roles chosen by the mode).
 */
#ifndef RDCP_SESSION_RD_SESSION_H
#define RDCP_SESSION_RD_SESSION_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"
#include "lib/engine/rd_engine.h"
#include "lib/xport/rd_xport.h"

#define RD_MODULE_NAME_MAX 64

struct rd_module {
	char name[RD_MODULE_NAME_MAX];
	char path[PATH_MAX];
	int readonly;
};

/* Parse "NAME=DIR[,ro]" (also ",rw"). */
int rd_module_parse(struct rd_module *m, const char *spec, struct rd_err *err);

struct rd_client_opts {
	const char *host;
	const char *port;
	int push;			 /* 1: local -> remote; 0: remote -> local */
	const char *const *remote;	 /* "module/path" operands */
	int nremote;
	const char *const *local;	 /* push: sources; pull: local[0] = destination */
	int nlocal;
	unsigned flags;			 /* RD_OF_* */
	unsigned sink_flags;		 /* RD_SINK_* for pulls */
	struct rd_engine_opts eo;
	struct rd_conn_opts co;
	const uint8_t *secret;		 /* RD_SECRET_LEN bytes, or NULL */
};

struct rd_client {
	struct rd_engine e; /* stats readable while running */
	struct rd_conn_info info;
	struct rd_err err;
	int connected;
	/* Optional: told once the connection is up (for -v output). */
	void (*on_connected)(void *ctx, const struct rd_conn_info *info);
	void *ctx;
};

/*
 * Run one copy. c->e.report/report_ctx may be set before. Returns 0,
 * -RD_EPARTIAL, or a negative status with c->err explaining it.
 */
int rd_client_run(struct rd_client *c, const struct rd_client_opts *o);

struct rd_server_cfg {
	const struct rd_module *mods;
	int nmods;
	struct rd_engine_opts eo; /* pool/depth/retry limits of this server */
	unsigned sink_flags;	  /* extra RD_SINK_* (e.g. FSYNC) */
};

/*
 * Serve one accepted connection to its end. Fills *summary with a
 * one-line description for the log. Returns 0 or a negative status
 * (err says why); the connection is not closed here.
 */
int rd_server_serve(const struct rd_server_cfg *cfg, struct rd_conn *c, char *summary,
		    size_t sumlen, struct rd_err *err);

#endif
