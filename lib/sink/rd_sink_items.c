// SPDX-License-Identifier: MIT
/*
 * What placing an entry changes, judged against what was under its name
 * before (rd_sink_items(), rd_sink_file_items()): rsync's itemize letters,
 * RD_IT_* of lib/proto/rd_proto.h.
 */
#include <string.h>
#include <sys/stat.h>

#include "lib/base/rd_fsid.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink_priv.h"

/*
 * What applying m to st, an entry of the same type already there, changes
 * of its attributes (what rd_sink__fix_attrs then sets): times by the
 * select window, the mode when perms, owner and group where kept.
 */
unsigned rd_sink__attr_diff(const struct rd_sink *s, const struct stat *st,
			    const struct rd_sink_meta *m, int perms)
{
	unsigned it = 0;

	if ((rd_sink__flags(s) & RD_SINK_PRESERVE_TIMES) && !rd_sink__same_time(s, st, m))
		it |= RD_IT_TIME;
	if (perms && !S_ISLNK(st->st_mode) && (st->st_mode & 07777) != rd_sink__final_mode(s, m))
		it |= RD_IT_PERMS;
	if (rd_sink__want_owner(s) && st->st_uid != (uid_t)m->uid)
		it |= RD_IT_OWNER;
	if (rd_sink__want_group(s) && st->st_gid != (gid_t)m->gid)
		it |= RD_IT_GROUP;
	return it;
}

/*
 * What applying m (and, for a regular file, its size) to st changes:
 * rsync's itemize letters. Modes count with RD_SINK_PRESERVE_MODE only
 * (rsync's 'p' needs --perms).
 */
unsigned rd_sink__attr_items(const struct rd_sink *s, const struct stat *st,
			     const struct rd_sink_meta *m)
{
	unsigned it = rd_sink__attr_diff(s, st, m, !!(rd_sink__flags(s) & RD_SINK_PRESERVE_MODE));

	if (S_ISREG(st->st_mode) && (uint64_t)st->st_size != m->size)
		it |= RD_IT_SIZE;
	return it;
}

/* The items of an entry of type `type` (S_IFMT) made where st was (ret: fstatat's). */
unsigned rd_sink__made_items(const struct rd_sink *s, int ret, const struct stat *st, mode_t type,
			     const struct rd_sink_meta *m)
{
	if (ret < 0 || (st->st_mode & S_IFMT) != type)
		return RD_IT_NEW | RD_IT_LOCAL;
	return rd_sink__attr_items(s, st, m);
}

/* A symlink about to be made as name in pfd: new, a new target (CHANGE), or attributes. */
unsigned rd_sink__link_items(struct rd_sink *s, int pfd, const char *name, const char *tgt,
			     size_t tlen, const struct rd_sink_meta *m)
{
	char old[RD_PATH_MAX + 1];
	struct stat st;
	ssize_t n;
	unsigned it;

	if (rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
		return RD_IT_NEW | RD_IT_LOCAL;
	it = rd_sink__attr_items(s, &st, m);
	n = rd_readlinkat(pfd, name, old, sizeof(old));
	if (n < 0 || (size_t)n != tlen || memcmp(old, tgt, tlen))
		it |= RD_IT_LOCAL | RD_IT_CHANGE;
	return it;
}
