// SPDX-License-Identifier: MIT
/*
 * rdcp: copy files over RDMA, the scp way, with rsync's options. The
 * command line is parsed in opts.c; the work is in lib/ (see copy.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/rdcp/opts.h"
#include "cmd/rdcp/rdcp.h"
#include "lib/proto/rd_proto.h"
#include "lib/version/rd_version.h"

int main(int argc, char **argv)
{
	struct rdcp_opts o;
	struct rdcp_args a;
	int r;

	rdcp_opts_defaults(&o);
	r = rdcp_parse(argc, argv, &o, &a);
	if (r == -2) {
		fprintf(stderr, "rdcp: out of memory\n");
		return RDCP_EXIT_NOMEM;
	}
	if (r) {
		fprintf(stderr, "rdcp: %s\n", a.msg);
		r = RDCP_EXIT_USAGE;
		goto out;
	}
	rdcp_info_levels(&o);
	if (a.help) {
		rdcp_usage(stdout);
		r = RDCP_EXIT_OK;
	} else if (a.version) {
		printf("rdcp %s (protocol %d..%d)\n", RDCP_VERSION, RD_PROTO_MIN, RD_PROTO_MAX);
		r = RDCP_EXIT_OK;
	} else if (o.list_devices) {
		r = rdcp_list_devices(a.nops ? a.ops[0] : NULL, &o);
	} else if (o.remote_server) {
		r = rdcp_remote_server(&o, a.nops, a.ops);
	} else if (o.list_only && a.nops < 1) {
		fprintf(stderr, "rdcp: --list-only needs a SOURCE to list (try 'rdcp --help')\n");
		r = RDCP_EXIT_USAGE;
	} else if (o.list_only || (a.nops == 1 && rdcp_is_remote(a.ops[0]))) {
		/* rsync's rule: one remote source and no DEST lists it */
		r = rdcp_list(&o, a.nops, a.ops);
	} else if (a.nops < 2) {
		fprintf(stderr, "rdcp: need at least one SOURCE and a DEST (try 'rdcp --help')\n");
		r = RDCP_EXIT_USAGE;
	} else {
		r = rdcp_copy(&o, a.nops, a.ops);
	}
out:
	free(a.ops);
	rd_selopt_free(&o.sel);
	return r;
}
