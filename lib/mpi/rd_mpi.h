/* SPDX-License-Identifier: MIT */
/*
 * rdcp-mpi (issue 32): one copy of a tree by many MPI ranks to many rdcpd
 * servers. The only module that links MPI. What it does, in order:
 *
 *  1. walk: the sources, in parallel, directories handed out by work
 *     stealing (rd_mpi_wq.c: libcircle's algorithm on MPI point to point);
 *  2. plan: hard link groups gathered to one rank each (-H); regular files
 *     dealt so each rank has about the same cost (bytes, plus a fixed cost
 *     per file), large files cut into chunk-aligned ranges moved by several
 *     ranks at once (rd_mpi_plan.c);
 *  3. phases, each a session per rank with its server (rank % servers),
 *     a barrier between them: data (directories first, as each rank needs
 *     them; files and ranges), COMMIT of files moved in ranges, hard links,
 *     directories' metadata (POST) last (rd_mpi_job.c).
 *
 * Rank 0 hears the job's progress (one reduction per tick) and gathers the
 * result; nothing here prints (cmd/rdcp-mpi does).
 */
#ifndef RDCP_MPI_RD_MPI_H
#define RDCP_MPI_RD_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"
#include "lib/mpi/rd_hostlist.h"
#include "lib/session/rd_session.h"

/* What a file costs in the plan beyond its bytes (a round trip, a name). */
#define RD_MPI_FILE_COST (64u << 10)

struct rd_mpi_opts {
	const char *const *sources; /* local paths on a file system every rank sees */
	int nsources;
	const struct rd_mpi_dest *dest; /* a push's destination; a pull's first source */
	/*
	 * A pull: sources are HOSTS::MODULE/PATH operands (all on dest's
	 * servers) and local_dest a directory every rank sees.
	 */
	int pull;
	const char *local_dest;
	unsigned flags; /* RD_OF_* of the copy (RECURSIVE, PRESERVE, HARDLINKS, ...) */
	mode_t umask;
	/* template for each session: engine and connection options, TLS */
	struct rd_engine_opts eo;
	struct rd_conn_opts co;
	struct rd_tls_cfg tls;
	/* password logins without tls.ca_file: the servers' pins (rd_known_hosts_check) */
	const char *known_hosts;
	/*
	 * rsync's selection (as rdcp's, lib/session/rd_selopt.h): the filter
	 * rules (NULL: none) leave entries out of the walk, a push's and a
	 * pull's listing alike (per-directory merge files read through each
	 * directory's descriptor); sel, the quick check and transfer rules,
	 * goes to every receiver (the servers of a push, the ranks' sinks of
	 * a pull); need_select: refuse servers older than the SELECT block.
	 */
	const struct rd_filter *filter;
	struct rd_select sel;
	int need_select;
	uint64_t split_min; /* files at least this large may be cut (0: 2 chunks) */
	uint64_t bwlimit;   /* bytes per second per rank (--bwlimit); 0: none */
	/* rank 0, about every tick_ms: bytes moved by the job so far */
	void (*progress)(void *ctx, uint64_t moved, uint64_t total, double secs);
	void *ctx;
	int tick_ms;
	volatile int *stop;
};

/* One failure, as rank 0 gathers them (at most RD_MPI_ERRORS per rank). */
#define RD_MPI_ERRORS 16
struct rd_mpi_result {
	/* job totals (rank 0) */
	uint64_t files, dirs, links, bytes, bytes_moved, bytes_resumed, failures, split_files;
	double seconds;
	int nranks;
	/* rank 0: the JSON objects of the ranks and of the failures, each joined by ','
	 * (malloc'd; rd_mpi_result_free) */
	char *ranks_json;
	char *errors_json;
	char first_error[512]; /* one failure, for the summary line */
	struct rd_err err;     /* the job could not run at all */
};

/*
 * MPI for the program, which need not include mpi.h: init (threads:
 * only the main thread calls MPI), this rank and the job's size, the end.
 */
int rd_mpi_init(int *argc, char ***argv, int *rank, int *size);
void rd_mpi_finalize(void);

/* Every rank calls it; rd_mpi_init before. 0, -RD_EPARTIAL, or < 0 (err). */
int rd_mpi_run(const struct rd_mpi_opts *o, struct rd_mpi_result *res);
void rd_mpi_result_free(struct rd_mpi_result *res);

#endif
