// SPDX-License-Identifier: MIT
/*
 * rdcp --remote-server send|recv [-r] -- PATH...
 * The half of an ssh-started copy that runs on the remote host (hidden
 * mode, like scp -t/-f). stdout carries only the ready line; everything
 * else goes to stderr, which the client shows escaped.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/sink/rd_sink.h"
#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session.h"

static void announce(void *ctx, const char *line)
{
	(void)ctx;
	printf("%s\n", line);
	fflush(stdout);
}

static void log_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "rdcp (remote): %s\n", line);
}

int rdcp_remote_server(const struct rdcp_opts *o, int nargs, char **args)
{
	struct rd_remote_opts ro;
	struct rd_remote r;
	char esc[RD_ERR_MSG_MAX * 4];
	int ret;

	if (nargs < 2 || (strcmp(args[0], "send") && strcmp(args[0], "recv"))) {
		fprintf(stderr, "rdcp: --remote-server needs send|recv and paths\n");
		return RDCP_EXIT_USAGE;
	}
	memset(&ro, 0, sizeof(ro));
	ro.mode = !strcmp(args[0], "recv") ? RD_MODE_PUSH : RD_MODE_PULL;
	ro.umask = rd_sink_process_umask();
	ro.paths = (const char *const *)(args + 1);
	ro.npaths = nargs - 1;
	if (ro.mode == RD_MODE_PUSH && ro.npaths != 1) {
		fprintf(stderr, "rdcp: --remote-server recv takes one destination\n");
		return RDCP_EXIT_USAGE;
	}
	ro.accept_timeout_ms = o->timeout_s * 1000;
	ro.co.timeout_ms = o->timeout_s * 1000;
	ro.eo.pool_bytes = o->pool_size;
	ro.eo.depth = (unsigned)o->depth;
	ro.eo.threads = o->threads;
	ro.co.bulk_thread = (o->threads ? (unsigned)o->threads : rd_engine_default_threads()) > 1;
	ro.eo.window = rdcp_window();
	ro.announce = announce;
	ro.log = log_line;
	memset(&r, 0, sizeof(r));
	ret = rd_remote_serve(&r, &ro);
	/* once a client was served it heard the error itself: said once, there */
	if (ret && ret != -RD_EPARTIAL && !r.served) {
		rd_escape(esc, sizeof(esc), r.err.msg, strlen(r.err.msg));
		fprintf(stderr, "rdcp (remote): %s\n", esc);
	}
	return rdcp_exit_from_status(ret);
}
