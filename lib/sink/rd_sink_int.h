/* SPDX-License-Identifier: MIT */
/*
 * Private to rd_sink.c and rd_sink_place.c (the sink's state is in
 * rd_sink_priv.h): where a wire path lands (rd_sink_place.c: checked,
 * mapped by the destination rules, its parent opened beneath the
 * destination).
 */
#ifndef RDCP_SINK_RD_SINK_INT_H
#define RDCP_SINK_RD_SINK_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_priv.h"

/* resolve()'s how, beside RD_SINK_ROOT and RD_SINK_CONTENTS */
#define HOW_DIR	   0x100u	   /* the entry is a directory */
#define HOW_TARGET RD_SINK__TARGET /* a hard link's target: an earlier entry */

/* Where a wire path lands: parent dir fd (borrowed) + final name. */
struct place {
	int pfd;
	const char *name;
	size_t depth; /* components */
};

const char *sink_esc(struct rd_sink *s, const char *p, size_t len);
/* errno -> RD_E* */
int sink_status(int e);
/* "what path in label": errnum's status */
int sink_fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what);
int sink_open_dir(struct rd_sink *s, int dirfd, const char *path, int allow_links);
void sink_cache_drop(struct rd_sink *s);
int sink_resolve(struct rd_sink *s, const char *path, size_t len, unsigned how, struct place *pl);
/* rd_sink.c: remember a directory this sink made, until its dir_post */
void sink_dir_note(struct rd_sink *s, int pfd, const char *name);

#endif
