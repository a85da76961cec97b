/* SPDX-License-Identifier: MIT */
/* Private to lib/mpi: the job's state shared by the walk, the plan and the phases. */
#ifndef RDCP_MPI_RD_MPI_PRIV_H
#define RDCP_MPI_RD_MPI_PRIV_H

#include <mpi.h>
#include <stdint.h>

#include "lib/mpi/rd_mpi.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink.h"

enum { RT_REG = 1, RT_DIR, RT_LNK, RT_SPECIAL, RT_HLINK };
/* what a record becomes in a phase (rd_tree.h RD_TREE_ITEM_*) */

struct rec {
	uint8_t type; /* RT_* */
	uint8_t kind; /* RD_TREE_ITEM_*: NODE, RANGE, COMMIT, HLINK */
	uint8_t devc; /* 0: the source root's file system; 1: another (no -H across) */
	uint8_t ff;   /* -H: RD_FF_LINKED (a first file, again), RD_FF_LINK_LAST */
	uint16_t src;
	uint32_t nlink;
	uint32_t mode, uid, gid; /* pulls: what the server listed (applied here) */
	uint64_t size, ino, off, len;
	int64_t msec;
	uint32_t mnsec;
	char *rel;    /* beneath the source's root descriptor */
	char *target; /* RT_HLINK: its group's first file; pulls: also a symlink's target */
};

struct recs {
	struct rec *r;
	size_t n, cap;
};

struct src {
	int fd;		   /* the source directory, or a file's parent */
	int dir;	   /* a directory (else a file: one record, rel = its name) */
	char name[256];	   /* a file source's name */
	char prefix[4097]; /* wire path of the source's root ("" none) */
	/* filter rules: the source's transfer paths start with tname ("" for
	 * contents and files); real: its path from "/" (-F's parents) */
	int contents;
	char tname[256];
	char *real;
};

struct job {
	const struct rd_mpi_opts *o;
	int pull;	      /* sources on the servers, DEST here (rd_mpi_pull.c) */
	int dest_fd;	      /* pulls: DEST */
	struct rd_sink *sink; /* pulls: this rank's, on DEST */
	MPI_Comm comm;
	int rank, size;
	uint64_t id;	    /* the job number: the same on every rank (META RANGE) */
	uint32_t cs;	    /* chunk size the ranges fall on */
	char pin_name[320]; /* this rank's server as its pin is named ("host", "[host]:port") */
	struct src *src;
	int nsrc;
	char open_path[4097]; /* what every session OPENs: the parent of DEST */
	struct recs mine;     /* the walk's records, then this rank's share */
	struct recs data, commits, links, posts;
	/* counts of the walk (this rank) */
	uint64_t files, dirs, others, bytes, walk_failed;
	uint64_t listed, stolen; /* directories this rank listed; of them, taken from others */
	/* this rank's result */
	uint64_t moved, resumed, ok, failed, ranges;
	unsigned nerr;
	char *errjson; /* failures as JSON objects joined by ',' */
	size_t errlen, errcap;
	char *rangejson; /* the ranges it moved, likewise */
	size_t rlen, rcap;
	unsigned nrange_json;
	char first_error[512];
	struct rd_err err;
	/* the walk's filter state: the levels entered for fw_src's directory fw_rel */
	struct rd_filter_walk *fw;
	int fw_src;	     /* -1: none entered */
	int fw_root;	     /* the source's root is entered (after fw_parents levels) */
	unsigned fw_parents; /* -F: levels of the root's parents */
	char fw_rel[RD_PATH_MAX + 1];
};

int rd_mpi__recs_add(struct recs *v, const struct rec *r);
void rd_mpi__recs_free(struct recs *v);
/* The wire path of r (buf: RD_PATH_MAX + 1); 0, or -1 when it has none (the module root). */
int rd_mpi__wire(const struct job *j, const struct rec *r, char *buf);
/* '/' first: a directory before everything in it, its contents together. */
int rd_mpi__path_cmp(const char *a, const char *b);
void rd_mpi__fail(struct job *j, const char *path, const char *msg);
/* A session's TLS: the job's, to co->host, its key pinned for password logins without a CA. */
struct rd_client_opts;
void rd_mpi__tls(struct job *j, struct rd_client_opts *co);

int rd_mpi__walk(struct job *j);       /* rd_mpi_walk.c */
int rd_mpi__pull_setup(struct job *j); /* rd_mpi_pull.c: DEST, the sources' bases */
int rd_mpi__pull_list(struct job *j);  /* the listing, in the walk's place */
int rd_mpi__pull_phases(struct job *j, double t0, uint64_t total);
void rd_mpi__pull_free(struct job *j);
/* A range this rank moves, for its JSON object (the first 32). */
void rd_mpi__range_json(struct job *j, const char *path, uint64_t off, uint64_t len);

/* One phase: fn(ph) on a thread of its own while this rank takes part in
 * one reduction per tick (rd_mpi_job.c). */
struct phase {
	struct job *j;
	const struct recs *v;
	size_t next;
	size_t anc_at;		     /* bytes of the record's wire path sent as ancestors */
	char chain[RD_PATH_MAX + 1]; /* the directories made so far: a path */
	char wire[RD_PATH_MAX + 1];  /* the current record's */
	char anc[RD_PATH_MAX + 1];
	struct rd_client cl;
	int ret, ok_seen;
	uint64_t entries, moved_before;
	_Atomic int over;
};
int rd_mpi__phase(struct job *j, const struct recs *v, double t0, uint64_t total,
		  void *(*fn)(void *));
void rd_mpi__on_report(void *ctx, const char *path, size_t len, int status, const char *msg);
int rd_mpi__plan(struct job *j);   /* rd_mpi_plan.c */
int rd_mpi__phases(struct job *j); /* rd_mpi_job.c */

#endif
