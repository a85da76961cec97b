/* SPDX-License-Identifier: MIT */
/*
 * Slurm-style host lists and rdcp-mpi's destination operands (issue 32).
 * No MPI here: the parser is tested on its own.
 *
 * A host list is comma-separated hosts, each a prefix, an optional
 * bracketed set of ranges and lists of numbers, and a suffix, as Slurm
 * writes them: "dtn[01-08]", "n[1-3,7]", "a,b[2-3]x", "ib-n[9-11]-r2".
 * A range keeps the width of its first number ("01-08": 01 .. 08; "8-10":
 * 8, 9, 10). At most one bracket per host, at most RD_HOSTLIST_MAX hosts.
 */
#ifndef RDCP_MPI_RD_HOSTLIST_H
#define RDCP_MPI_RD_HOSTLIST_H

#include <stddef.h>

#include "lib/base/rd_err.h"

#define RD_HOSTLIST_MAX 4096
#define RD_HOSTNAME_MAX 255

struct rd_hostlist {
	unsigned n;
	char (*host)[RD_HOSTNAME_MAX + 1];
};

/* Expand spec into l (freed with rd_hostlist_free). 0 or -RD_EUSAGE naming what is wrong. */
int rd_hostlist_parse(struct rd_hostlist *l, const char *spec, struct rd_err *err);
void rd_hostlist_free(struct rd_hostlist *l);

/*
 * A destination of many daemons: [USER@]HOSTLIST::MODULE[/PATH] or
 * rdcp://[USER@]HOSTLIST[:PORT]/MODULE[/PATH]. path is "MODULE[/PATH]"
 * without trailing '/'; port "" when not given.
 */
struct rd_mpi_dest {
	char user[64];
	char port[16];
	char path[4097];
	struct rd_hostlist hosts;
};

/* 1 = arg is such an operand and d is filled; 0 = it is not one (a local path); < 0 error. */
int rd_mpi_dest_parse(struct rd_mpi_dest *d, const char *arg, struct rd_err *err);

#endif
