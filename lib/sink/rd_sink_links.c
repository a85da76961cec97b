// SPDX-License-Identifier: MIT
/*
 * Hard links on the receiver (-H; issue 13, issue 27 item 11).
 *
 * An HLINK names its target by wire path, and a path can name anything
 * under the destination: a file that was there before the copy (a
 * hostile sender would give it a second name where it likes), one whose
 * copy failed (a stale old file), a file another entry replaced since.
 * So the sink remembers the inodes of the files this session placed that
 * start a link group (rd_sink_file_link_first, remembered at commit) and
 * makes a link only to such an inode, the one it opened (O_PATH) and
 * checked, never a name looked up again. The last link of a group
 * (RD_FF_LINK_LAST) forgets it.
 *
 * The table is an open-addressing hash of (device, inode), 16 bytes a
 * slot, grown by doubling while at most half full, up to the sink's
 * budget (rd_sink_set_link_table: the slots, the old ones counted while
 * they are rehashed). A group that does not fit is not remembered and its
 * links fail, saying so. Inode numbers are the file system's, not the
 * peer's: nothing a peer sends chooses where a key lands.
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

#include "lib/proto/rd_proto.h" /* RD_IT_*: what the link changed */

#define LINKS_DEFAULT	(32ull << 20) /* RD_ENGINE_LINK_TABLE_DEFAULT */
#define LINKS_MIN_SLOTS 64u

struct lslot {
	uint64_t dev, ino; /* ino 0: empty (no file system hands out inode 0) */
};

struct rd_sink_links {
	struct lslot *slot;
	size_t cap, n;	/* cap: a power of two, or 0 before the first */
	size_t max_cap; /* the most slots the budget allows */
	uint64_t max_bytes;
	unsigned long dropped; /* groups not remembered: no room */
};

static size_t cap_for(uint64_t max_bytes)
{
	size_t cap = LINKS_MIN_SLOTS;

	/* growing from cap to 2 cap holds both arrays at once: 3 cap slots */
	while ((uint64_t)cap * 2 * 3 * sizeof(struct lslot) <= max_bytes)
		cap *= 2;
	return cap;
}

static struct rd_sink_links *links_of(struct rd_sink *s)
{
	if (!s->links) {
		s->links = calloc(1, sizeof(*s->links));
		if (s->links) {
			s->links->max_bytes = LINKS_DEFAULT;
			s->links->max_cap = cap_for(LINKS_DEFAULT);
		}
	}
	return s->links;
}

void rd_sink_set_link_table(struct rd_sink *s, uint64_t max_bytes)
{
	struct rd_sink_links *l = links_of(s);

	if (!l)
		return;
	l->max_bytes = max_bytes ? max_bytes : LINKS_DEFAULT;
	l->max_cap = cap_for(l->max_bytes);
	if (l->max_cap < l->cap)
		l->max_cap = l->cap; /* what is held stays */
}

void rd_sink__links_free(struct rd_sink *s)
{
	if (s->links)
		free(s->links->slot);
	free(s->links);
	s->links = NULL;
}

static size_t slot_of(const struct rd_sink_links *l, uint64_t dev, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ dev * 0xc2b2ae3d27d4eb4full;

	h ^= h >> 29;
	return (size_t)h & (l->cap - 1);
}

/* The slot holding (dev, ino), or the empty one where it would go. */
static size_t probe(const struct rd_sink_links *l, uint64_t dev, uint64_t ino)
{
	size_t i = slot_of(l, dev, ino);

	while (l->slot[i].ino && (l->slot[i].ino != ino || l->slot[i].dev != dev))
		i = (i + 1) & (l->cap - 1);
	return i;
}

static int grow(struct rd_sink_links *l)
{
	size_t cap = l->cap ? l->cap * 2 : LINKS_MIN_SLOTS, old = l->cap, i;
	struct lslot *o = l->slot, *n;

	if (cap > l->max_cap)
		return -1;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -1;
	l->slot = n;
	l->cap = cap;
	for (i = 0; i < old; i++)
		if (o[i].ino)
			l->slot[probe(l, o[i].dev, o[i].ino)] = o[i];
	free(o);
	return 0;
}

void rd_sink_file_link_first(struct rd_sink_file *f)
{
	f->link_first = 1;
}

/* Remember st's (dev, ino): 0, or -1 when the table has no room (counted). */
static int links_add(struct rd_sink *s, const struct stat *st)
{
	struct rd_sink_links *l = links_of(s);
	size_t i;

	if (!l || !st->st_ino)
		return -1;
	if ((l->n + 1) * 2 > l->cap && grow(l) < 0) {
		l->dropped++;
		return -1;
	}
	i = probe(l, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	if (!l->slot[i].ino) {
		l->slot[i].dev = (uint64_t)st->st_dev;
		l->slot[i].ino = (uint64_t)st->st_ino;
		l->n++;
	}
	return 0;
}

int rd_sink_link_adopt(struct rd_sink *s, const char *path, size_t len,
		       const struct rd_sink_meta *m)
{
	char name[NAME_MAX + 1];
	int pfd = -1, ret;
	struct stat st;

	ret = rd_sink__place(s, path, len, 0, &pfd, name);
	if (ret < 0)
		goto out;
	if (rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != m->size || st.st_mtim.tv_sec != m->mtime_sec ||
	    (uint32_t)st.st_mtim.tv_nsec != m->mtime_nsec) {
		ret = rd_err_set(rd_sink__err(s), RD_ESYS, 0,
				 "%s: hard link target is not the file this copy placed "
				 "(changed since, or its own copy failed)",
				 rd_sink__esc(s, path, len));
		goto out;
	}
	if (links_add(s, &st) < 0)
		ret = rd_err_set(rd_sink__err(s), RD_ENOMEM, 0,
				 "%s: no room in the link table for its group",
				 rd_sink__esc(s, path, len));
out:
	if (pfd >= 0)
		close(pfd);
	return ret;
}

void rd_sink__link_record(struct rd_sink_file *f, int fd)
{
	struct stat st;

	if (!f->link_first || fd < 0 || fstat(fd, &st) < 0)
		return;
	links_add(f->s, &st);
}

void rd_sink_link_kept(struct rd_sink *s, const char *path, size_t len, int root)
{
	const char *name;
	struct stat st;
	int pfd, fd;

	if (rd_sink__dry(s) || rd_sink__resolve(s, path, len, root, &pfd, &name) < 0) {
		rd_err_clear(rd_sink__err(s));
		return;
	}
	/* the inode under the name now, opened (never followed) and checked */
	fd = rd_openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		links_add(s, &st);
	close(fd);
}

static int links_has(const struct rd_sink_links *l, const struct stat *st)
{
	return l && l->cap && l->slot[probe(l, (uint64_t)st->st_dev, (uint64_t)st->st_ino)].ino;
}

/* Forget (dev, ino): linear probing's backward shift keeps every chain whole. */
static void links_forget(struct rd_sink_links *l, const struct stat *st)
{
	size_t i, j, k;

	if (!links_has(l, st))
		return;
	i = probe(l, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	l->slot[i].ino = 0;
	l->n--;
	for (j = (i + 1) & (l->cap - 1); l->slot[j].ino; j = (j + 1) & (l->cap - 1)) {
		k = slot_of(l, l->slot[j].dev, l->slot[j].ino);
		/* leave j where it is if its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		l->slot[i] = l->slot[j];
		l->slot[j].ino = 0;
		i = j;
	}
}

/* Link the file open as fd (O_PATH) as name in pfd: 0 or -errno. */
static int link_fd(int fd, int pfd, const char *name)
{
	char proc[64];
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = rd_linkat(AT_FDCWD, proc, pfd, name, AT_SYMLINK_FOLLOW);
	if (r < 0 && errno == ENOENT)
		r = rd_linkat(fd, "", pfd, name, AT_EMPTY_PATH);
	return r < 0 ? -errno : 0;
}

/* A dry run: is path a link of target's file already (no items), or would it be made? */
static int dry_hardlink(struct rd_sink *s, const char *path, size_t len, int root,
			const char *target, size_t tlen)
{
	char tname[NAME_MAX + 1], name[NAME_MAX + 1];
	int tfd = -1, pfd = -1, ret, same = 0;
	struct stat st, cur;

	ret = rd_sink__place(s, path, len, root, &pfd, name);
	if (ret < 0) {
		ret = rd_sink__dry_new(s, ret);
		if (!ret)
			rd_sink__set_items(s, RD_IT_NEW | RD_IT_HLINK);
		return ret;
	}
	if (rd_fstatat(pfd, name, &cur, AT_SYMLINK_NOFOLLOW) < 0) {
		rd_sink__set_items(s, RD_IT_NEW | RD_IT_HLINK);
	} else {
		if (rd_sink__place(s, target, tlen, RD_SINK__TARGET, &tfd, tname) == 0 &&
		    rd_fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) == 0)
			same = cur.st_dev == st.st_dev && cur.st_ino == st.st_ino;
		rd_err_clear(rd_sink__err(s));
		rd_sink__set_items(s, same ? 0 : RD_IT_HLINK);
	}
	if (tfd >= 0)
		close(tfd);
	close(pfd);
	return 0;
}

/*
 * A link a transfer rule leaves (--existing, --ignore-existing): its
 * group's file is forgotten all the same at the group's last link.
 */
static void forget_target(struct rd_sink *s, const char *target, size_t tlen)
{
	char tname[NAME_MAX + 1];
	struct stat st;
	int tdir = -1;

	if (!s->links || !s->links->n)
		return;
	if (rd_sink__place(s, target, tlen, RD_SINK__TARGET, &tdir, tname) == 0 &&
	    rd_fstatat(tdir, tname, &st, AT_SYMLINK_NOFOLLOW) == 0)
		links_forget(s->links, &st);
	rd_err_clear(rd_sink__err(s));
	if (tdir >= 0)
		close(tdir);
}

int rd_sink_hardlink(struct rd_sink *s, const char *path, size_t len, int root, const char *target,
		     size_t tlen, int last)
{
	char tname[NAME_MAX + 1], name[NAME_MAX + 1], tmp[NAME_MAX + 1];
	int tdir = -1, tfd = -1, pfd = -1, ret, tries = 0;
	struct stat st, cur;
	struct rd_sink_meta tm;
	unsigned items;

	rd_sink__set_items(s, 0);
	if (rd_sink__sel_leave(s, path, len, root)) {
		if (last)
			forget_target(s, target, tlen);
		return 0;
	}
	if (rd_sink__dry(s))
		return dry_hardlink(s, path, len, root, target, tlen);
	/* The target: an earlier entry, resolved under the same rules. */
	ret = rd_sink__place(s, target, tlen, RD_SINK__TARGET, &tdir, tname);
	if (ret < 0)
		goto out;
	tfd = rd_openat(tdir, tname, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (tfd < 0 || fstat(tfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = rd_err_set(rd_sink__err(s), RD_ESYS, tfd < 0 ? errno : 0,
				 "%s: hard link target is not a regular file here",
				 rd_sink__esc(s, path, len));
		goto out;
	}
	if (!links_has(s->links, &st)) {
		ret = rd_err_set(rd_sink__err(s), RD_ESYS, 0,
				 "%s: hard link target is not a file this copy placed "
				 "(it was there before, or its own copy failed)%s",
				 rd_sink__esc(s, path, len),
				 s->links && s->links->dropped
				     ? "; or its group was not remembered: more link groups "
				       "were open at once than the link table holds"
				     : "");
		goto out;
	}
	ret = rd_sink__place(s, path, len, root, &pfd, name);
	if (ret < 0)
		goto out;
	/* Already a link of the group (a copy made again over the last one): done. */
	ret = rd_fstatat(pfd, name, &cur, AT_SYMLINK_NOFOLLOW);
	if (!ret && cur.st_dev == st.st_dev && cur.st_ino == st.st_ino)
		goto done;
	/* rsync's 'h': new, or what the link changes from the file that was there */
	memset(&tm, 0, sizeof(tm));
	tm.mode = st.st_mode;
	tm.uid = st.st_uid;
	tm.gid = st.st_gid;
	tm.size = (uint64_t)st.st_size;
	tm.mtime_sec = st.st_mtim.tv_sec;
	tm.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	items = RD_IT_HLINK | rd_sink__made_items(s, ret, &cur, S_IFREG, &tm);
	items &= ~RD_IT_LOCAL;
	ret = 0;
	do {
		rd_sink__tmp_name(tmp, name);
		ret = link_fd(tfd, pfd, tmp); /* the inode checked above, not a name again */
	} while (ret == -EEXIST && ++tries < 8);
	if (ret < 0) {
		ret = rd_sink__fail(s, -ret, path, len, "hard link");
		goto out;
	}
	if (rd_renameat(pfd, tmp, pfd, name) < 0)
		ret = rd_sink__fail(s, errno, path, len, "rename into place");
	else
		rd_sink__set_items(s, items);
	/*
	 * Gone after a rename, unless name had become a link of the same
	 * file meanwhile: then rename() succeeds and does nothing (POSIX),
	 * and the temporary name would stay.
	 */
	rd_unlinkat(pfd, tmp, 0);
done:
	if (!ret && last)
		links_forget(s->links, &st);
out:
	if (tfd >= 0)
		close(tfd);
	if (tdir >= 0)
		close(tdir);
	if (pfd >= 0)
		close(pfd);
	return ret;
}
