// SPDX-License-Identifier: MIT
/*
 * rsync's quick check and transfer rules at the receiver (issue 28): what
 * is under an entry's name decides whether its data moves at all, the way
 * rsync's generator decides, in its order: --existing (nothing new is
 * made), --ignore-existing (whatever is there stays), --max-size and
 * --min-size, -u (a file newer here stays), then the quick check (same
 * size and mtime: the file is there already; --size-only: same size). A
 * file the quick check passes only has its owner, mode and times brought
 * in line. All of it is stat-level: no file data is read on either side,
 * so a rerun over an unchanged tree moves nothing and reads nothing.
 */
#include "lib/sink/rd_sink_priv.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"

/*
 * rsync's same_time(): modify_window seconds apart at most (0: the same
 * second); RD_SINK_WINDOW_NS: to the nanosecond, unless one side has none
 * (a filesystem or peer without nanoseconds: then the second decides).
 */
static int same_time(int32_t window, int64_t a_sec, long a_nsec, int64_t b_sec, long b_nsec)
{
	int64_t d = a_sec > b_sec ? a_sec - b_sec : b_sec - a_sec;

	if (window < 0)
		return a_sec == b_sec && (a_nsec == b_nsec || !a_nsec || !b_nsec);
	return d <= window;
}

static int32_t window_of(const struct rd_sink *s)
{
	const struct rd_sink_select *sel = rd_sink__select(s);

	return sel ? sel->modify_window : RD_SINK_WINDOW_NS;
}

int rd_sink__same_time(const struct rd_sink *s, const struct stat *st, const struct rd_sink_meta *m)
{
	/* without rsync's rules (an older peer): exactly, as before */
	if (!rd_sink__select(s))
		return st->st_mtim.tv_sec == (time_t)m->mtime_sec &&
		       st->st_mtim.tv_nsec == (long)m->mtime_nsec;
	return same_time(window_of(s), st->st_mtim.tv_sec, st->st_mtim.tv_nsec, m->mtime_sec,
			 (long)m->mtime_nsec);
}

/* -u: is what is here newer than the sender's (rsync: modtime - st_mtime < window)? */
static int newer_here(int32_t window, const struct stat *st, const struct rd_sink_meta *m)
{
	if (window >= 0)
		return m->mtime_sec - (int64_t)st->st_mtim.tv_sec < window;
	if (st->st_mtim.tv_sec != (time_t)m->mtime_sec)
		return st->st_mtim.tv_sec > (time_t)m->mtime_sec;
	return m->mtime_nsec && st->st_mtim.tv_nsec &&
	       (uint32_t)st->st_mtim.tv_nsec > m->mtime_nsec;
}

int rd_sink__fix_attrs(struct rd_sink *s, int pfd, const char *name, unsigned diff,
		       const struct rd_sink_meta *m, const char *path, size_t len)
{
	struct timespec ts[2];
	char proc[64];
	int fd;

	if (rd_sink__dry(s))
		return 0; /* what would change is in diff */
	if (diff & (RD_IT_OWNER | RD_IT_GROUP)) {
		uid_t uid = rd_sink__want_owner(s) ? (uid_t)m->uid : (uid_t)-1;
		gid_t gid = rd_sink__want_group(s) ? (gid_t)m->gid : (gid_t)-1;

		if (rd_fchownat(pfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			return rd_sink__fail(s, errno, path, len, "chown");
		/* a chown drops setuid and setgid: the mode goes on again after it */
		if (rd_sink__flags(s) & RD_SINK_PRESERVE_MODE)
			diff |= RD_IT_PERMS;
	}
	if (diff & RD_IT_PERMS) {
		fd = rd_openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd < 0)
			return rd_sink__fail(s, errno, path, len, "open");
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (rd_fchmodat(AT_FDCWD, proc, rd_sink__final_mode(s, m), 0) < 0) {
			int e = errno;

			close(fd);
			return rd_sink__fail(s, e, path, len, "chmod");
		}
		close(fd);
	}
	if (diff & RD_IT_TIME) {
		ts[0].tv_sec = (time_t)m->mtime_sec;
		ts[0].tv_nsec = m->mtime_nsec < 1000000000u ? (long)m->mtime_nsec : 0;
		ts[1] = ts[0];
		if (rd_utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return rd_sink__fail(s, errno, path, len, "set times of");
	}
	return 0;
}

/* A transfer rule left the entry as it is. */
static int leave(struct rd_sink *s)
{
	rd_sink__set_items(s, RD_IT_SKIPPED);
	return RD_SINK_LEAVE;
}

static int send_new(struct rd_sink *s)
{
	rd_sink__set_items(s, RD_IT_NEW);
	return RD_SINK_SEND;
}

static int out_of_size(const struct rd_sink_select *sel, const struct rd_sink_meta *m)
{
	return m->size > sel->max_size || m->size < sel->min_size;
}

int rd_sink_file_check(struct rd_sink *s, const char *path, size_t len, int root,
		       const struct rd_sink_meta *m)
{
	const struct rd_sink_select *sel = rd_sink__select(s);
	const char *name;
	struct stat st;
	unsigned items;
	int pfd, ret;

	rd_sink__set_items(s, 0);
	if (!sel || (rd_sink__flags(s) & RD_SINK_READONLY))
		return RD_SINK_SEND; /* as before; a read-only sink refuses at begin */
	ret = rd_sink__resolve(s, path, len, root, &pfd, &name);
	if (ret == -RD_ENOENT && sel->existing)
		return leave(s);		  /* its directory was not made: nothing new */
	if (ret < 0 && !rd_sink__dry_new(s, ret)) /* a dry run: beneath a new directory */
		return out_of_size(sel, m) ? leave(s) : send_new(s);
	if (ret < 0)
		return ret;
	if (rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return rd_sink__fail(s, errno, path, len, "stat");
		if (sel->existing || out_of_size(sel, m))
			return leave(s);
		send_new(s);
		/* --link-dest, --compare-dest, --copy-dest */
		ret = rd_sink__alt_file(s, pfd, name, NULL, m, path, len);
		return ret == -1 ? RD_SINK_SEND : ret;
	}
	if (sel->ignore_existing || out_of_size(sel, m))
		return leave(s);
	if (!S_ISREG(st.st_mode)) {
		/* a dry run: would a directory there make room? (a real run makes it at the commit) */
		if (S_ISDIR(st.st_mode) && rd_sink__dry(s)) {
			ret = rd_sink__not_a_dir(s, pfd, name, path, len);
			if (ret < 0)
				return ret;
		}
		/* another type: replaced, whatever the dates (-u too); first by --link-dest & co. */
		send_new(s);
		ret = rd_sink__alt_file(s, pfd, name, &st, m, path, len);
		return ret == -1 ? RD_SINK_SEND : ret;
	}
	if (sel->update && newer_here(sel->modify_window, &st, m))
		return leave(s);
	/* rsync tries them before the quick check: an exact match replaces what is here */
	ret = rd_sink__alt_file(s, pfd, name, &st, m, path, len);
	if (ret != -1)
		return ret;
	if (sel->compare != RD_SINK_CMP_CHECKSUM && sel->compare != RD_SINK_CMP_ALL &&
	    (uint64_t)st.st_size == m->size &&
	    (sel->compare == RD_SINK_CMP_SIZE || rd_sink__same_time(s, &st, m))) {
		/* the quick check: it is there already; only its attributes */
		items = rd_sink__set_items(s, rd_sink__attr_items(s, &st, m));
		ret = rd_sink__fix_attrs(s, pfd, name, items, m, path, len);
		return ret < 0 ? ret : RD_SINK_SAME;
	}
	rd_sink__set_items(s, rd_sink__attr_items(s, &st, m));
	return RD_SINK_SEND;
}
