/* SPDX-License-Identifier: MIT */
/*
 * Removing partials nobody came back for (rdcpd's "partial max age").
 * A partial is the pair rd_sink_partial.h describes: ".rdcp-partial.NAME"
 * and ".rdcp-partial.NAME.rec". Only pairs that are rdcp's are touched:
 * both names, regular files, a record of rdcp's format (magic, length,
 * checksum); a data file without its record is left alone. A pair goes
 * when neither file changed for the age given and no session holds it
 * (the flock a receiving session keeps on the data file).
 *
 * The walk starts at a directory descriptor and goes on with *at() calls
 * and O_NOFOLLOW only: no symbolic link is ever followed, no other file
 * system is entered (like find -xdev), and it goes at most
 * RD_SWEEP_DEPTH_MAX directories deep (one descriptor per level).
 */
#ifndef RDCP_SINK_RD_SINK_SWEEP_H
#define RDCP_SINK_RD_SINK_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/base/rd_err.h"

#define RD_SWEEP_DEPTH_MAX 64

struct rd_sweep_stats {
	uint64_t removed;    /* pairs removed */
	uint64_t bytes;	     /* their data files' sizes */
	uint64_t young;	     /* pairs younger than the age */
	uint64_t busy;	     /* pairs a session holds */
	uint64_t foreign;    /* rdcp's names, but not rdcp's files (left alone) */
	uint64_t dirs;	     /* directories walked */
	uint64_t too_deep;   /* directories not entered: deeper than the bound */
	uint64_t unreadable; /* directories that could not be opened or read */
};

/*
 * Told of each removal: the data file's path below the walk's start (raw
 * bytes), its size, and how long it had rested (seconds).
 */
typedef void (*rd_sweep_fn)(void *ctx, const char *path, size_t len, uint64_t bytes,
			    uint64_t idle_s);

/*
 * Remove the partials beneath root_fd untouched since before cutoff (a
 * CLOCK_REALTIME second). stop (may be NULL): set to end the walk early.
 * Returns 0 (st counts what was found), or a negative status with err
 * when root_fd itself cannot be read.
 */
int rd_sink_sweep(int root_fd, time_t cutoff, volatile int *stop, rd_sweep_fn fn, void *ctx,
		  struct rd_sweep_stats *st, struct rd_err *err);

#endif
