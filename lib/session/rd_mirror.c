// SPDX-License-Identifier: MIT
/*
 * --delete for whichever side receives (issue 29): the receiver's
 * settings from OPEN's MIRROR block, its protect rules from the filter,
 * and the checks a sending side makes before anything moves.
 */
#include "lib/session/rd_session.h"
#include "lib/session/rd_session_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/rd_fsid.h"
#include "lib/filter/rd_filter.h"

/* rd_mirror_opts.protect: the receiver's side of the filter rules (P, and - without s) */
static int protect(void *ctx, const char *rel, size_t len, int is_dir)
{
	return rd_filter_excluded(ctx, rel, len, is_dir, RD_FILTER_RECEIVER) == 1;
}

/* rd_mirror_opts.enter/leave: a destination directory's merge files (':' rules) */
static int enter(void *ctx, int fd, const char *rel, size_t len, struct rd_err *err)
{
	return rd_filter_enter(ctx, fd, rel, len, err);
}

static void leave(void *ctx)
{
	rd_filter_leave(ctx);
}

int rd_session_mirror(struct rd_mirror_opts *mo, const struct rd_mirror *mir, int dry_run,
		      const struct rd_filter *f, struct rd_filter_walk **w, struct rd_err *err)
{
	memset(mo, 0, sizeof(*mo));
	*w = NULL;
	mo->delete = !!(mir->flags & RD_MF_DELETE);
	mo->force = !!(mir->flags & (RD_MF_FORCE | RD_MF_DELETE));
	mo->order = (mir->flags & RD_MF_DEL_BEFORE)  ? RD_MIRROR_BEFORE
		    : (mir->flags & RD_MF_DEL_AFTER) ? RD_MIRROR_AFTER
						     : RD_MIRROR_DURING;
	mo->max_delete = mir->max_delete;
	mo->ignore_errors = !!(mir->flags & RD_MF_IGNORE_ERRORS);
	mo->allow_empty = !!(mir->flags & RD_MF_ALLOW_EMPTY);
	mo->late_room = !!(mir->flags & RD_MF_LATE_ROOM);
	mo->dry_run = dry_run;
	if (f && mo->delete) {
		if (rd_filter_walk_new(w, f, err))
			return -RD_ENOMEM;
		mo->protect = protect;
		mo->protect_ctx = *w;
		if (rd_filter_has_dir_merge(f)) {
			mo->enter = enter;
			mo->leave = leave;
		}
	}
	return 0;
}

int rd_session_dir_empty(int dirfd, const char *name)
{
	/* not a directory we can read (< 0): not empty, the walk says what it is */
	return rd_dir_holds(dirfd, name) == 0;
}
