// SPDX-License-Identifier: MIT
/*
 * What the walk reads beyond stat (issue 13): xattrs and POSIX ACLs with
 * libarchive's disk reader (archive_read_disk_entry_from_file() on the
 * descriptor the walk already holds, so nothing is resolved by name
 * again), the data extents of sparse files with SEEK_DATA/SEEK_HOLE, and
 * the table that turns the later members of a hard-link group into HLINK
 * entries.
 *
 * Everything lands in buffers owned here and is handed out as META items
 * (lib/proto/rd_proto.h): valid until the next entry. Memory is fixed
 * except for the link table, which is bounded in bytes (its entries with
 * their paths and the allocator's share: rd_tree_set_link_table, 32 MiB
 * unless set) and forgets a group as soon as all its links were seen.
 */
#include "lib/tree/rd_tree_priv.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINK_BUCKETS  16384
#define LINKS_DEFAULT (32ull << 20) /* RD_ENGINE_LINK_TABLE_DEFAULT */

struct link {
	struct link *next;
	dev_t dev;
	ino_t ino;
	nlink_t left; /* links not seen yet */
	char path[];
};

struct rd_tree_meta {
	struct archive *ard;
	struct archive_entry *ae;
	struct rd_msg_meta items[RD_TREE_META_MAX];
	struct rd_acl_ent acl[2][RD_ACL_MAX];
	struct rd_extent ext[RD_SPARSE_MAX];
	struct link *bucket[LINK_BUCKETS];
	unsigned nlinks;
	uint64_t link_bytes, link_max; /* what the table holds, and may */
	char lpath[RD_PATH_MAX + 1];
};

int rd_tree_meta_new(struct rd_tree_meta **out)
{
	struct rd_tree_meta *m = calloc(1, sizeof(*m));

	if (m)
		m->link_max = LINKS_DEFAULT;
	*out = m;
	return m ? 0 : -RD_ENOMEM;
}

void rd_tree_meta_set_links(struct rd_tree_meta *m, uint64_t max_bytes)
{
	m->link_max = max_bytes ? max_bytes : LINKS_DEFAULT;
}

/* What one group costs the table: the entry, its path, the allocator's share. */
static uint64_t link_cost(size_t len)
{
	return ((sizeof(struct link) + len + 1 + 15) & ~(size_t)15) + 16;
}

void rd_tree_meta_free(struct rd_tree_meta *m)
{
	struct link *l, *n;
	unsigned i;

	if (!m)
		return;
	for (i = 0; i < LINK_BUCKETS; i++)
		for (l = m->bucket[i]; l; l = n) {
			n = l->next;
			free(l);
		}
	if (m->ae)
		archive_entry_free(m->ae);
	if (m->ard)
		archive_read_free(m->ard);
	free(m);
}

static void note(struct rd_tree_entry *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Notes accumulate, "; "-separated, cut to fit. */
static void note(struct rd_tree_entry *e, const char *fmt, ...)
{
	size_t n = strlen(e->note);
	va_list ap;

	if (n && n + 2 < sizeof(e->note)) {
		memcpy(e->note + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(e->note + n, sizeof(e->note) - n, fmt, ap);
	va_end(ap);
}

static struct rd_msg_meta *item(struct rd_tree_meta *m, struct rd_tree_entry *e)
{
	struct rd_msg_meta *it;

	if (e->nmeta >= RD_TREE_META_MAX)
		return NULL;
	it = &m->items[e->nmeta++];
	memset(it, 0, sizeof(*it));
	return it;
}

/* libarchive's tag names to the wire's; 0 for none we know. */
static uint8_t acl_tag(int tag)
{
	switch (tag) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ:
		return RD_ACL_USER_OBJ;
	case ARCHIVE_ENTRY_ACL_USER:
		return RD_ACL_USER;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ:
		return RD_ACL_GROUP_OBJ;
	case ARCHIVE_ENTRY_ACL_GROUP:
		return RD_ACL_GROUP;
	case ARCHIVE_ENTRY_ACL_MASK:
		return RD_ACL_MASK;
	case ARCHIVE_ENTRY_ACL_OTHER:
		return RD_ACL_OTHER;
	default:
		return 0;
	}
}

static void add_acl(struct rd_tree_meta *m, struct rd_tree_entry *e, int which)
{
	int type = which ? ARCHIVE_ENTRY_ACL_TYPE_DEFAULT : ARCHIVE_ENTRY_ACL_TYPE_ACCESS;
	int t, perm, tag, qual;
	const char *name;
	struct rd_msg_meta *it;
	uint16_t n = 0;

	if (archive_entry_acl_reset(m->ae, type) <= 0)
		return; /* none, or only the mode's three entries */
	while (archive_entry_acl_next(m->ae, type, &t, &perm, &tag, &qual, &name) == ARCHIVE_OK) {
		uint8_t wt = acl_tag(tag);

		if (!wt || n >= RD_ACL_MAX) {
			note(e, "ACL entry not sent (unknown kind or too many)");
			continue;
		}
		m->acl[which][n].tag = wt;
		m->acl[which][n].perm = (uint8_t)(perm & 7);
		m->acl[which][n].id = (wt == RD_ACL_USER || wt == RD_ACL_GROUP) ? (uint32_t)qual : 0;
		n++;
	}
	if (!n)
		return;
	it = item(m, e);
	if (!it) {
		note(e, "too much metadata: ACL not sent");
		return;
	}
	it->kind = RD_META_ACL;
	it->acl_type = which ? RD_ACL_DEFAULT : RD_ACL_ACCESS;
	it->n = n;
	it->acl = m->acl[which];
}

static void add_xattrs(struct rd_tree_meta *m, struct rd_tree_entry *e)
{
	struct rd_msg_meta *it;
	const char *name;
	const void *v;
	size_t len;

	archive_entry_xattr_reset(m->ae);
	while (archive_entry_xattr_next(m->ae, &name, &v, &len) == ARCHIVE_OK) {
		size_t nl = strlen(name);

		/* Only the user namespace (see rd_proto.h, META XATTR). */
		if (strncmp(name, "user.", 5))
			continue;
		if (nl > RD_XATTR_NAME_MAX || len > RD_XATTR_VAL_MAX) {
			note(e, "xattr %.64s not sent: over rdcp's limits (%zu bytes)", name, len);
			continue;
		}
		it = item(m, e);
		if (!it) {
			note(e, "more than %d metadata items: the rest not sent", RD_TREE_META_MAX);
			return;
		}
		it->kind = RD_META_XATTR;
		it->name.ptr = name;
		it->name.len = (uint16_t)nl;
		it->value = v;
		it->vlen = (uint32_t)len;
	}
}

/* xattrs and ACLs through libarchive's disk reader, on fd. */
static int read_archive(struct rd_tree_meta *m, int fd, const struct stat *st, unsigned flags,
			struct rd_tree_entry *e)
{
	char proc[64];
	int r;

	if (!m->ard) {
		m->ard = archive_read_disk_new();
		m->ae = archive_entry_new();
		if (!m->ard || !m->ae)
			return -RD_ENOMEM;
	}
	archive_entry_clear(m->ae);
	archive_read_disk_set_behavior(m->ard,
				       ARCHIVE_READDISK_NO_FFLAGS | ARCHIVE_READDISK_NO_SPARSE |
					   ((flags & RD_TREE_XATTRS) ? 0 : ARCHIVE_READDISK_NO_XATTR) |
					   ((flags & RD_TREE_ACLS) ? 0 : ARCHIVE_READDISK_NO_ACL));
	/*
	 * A directory's default ACL is read by name (acl_get_file): give it
	 * the descriptor's /proc name, which is this very directory.
	 */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	archive_entry_copy_sourcepath(m->ae, proc);
	r = archive_read_disk_entry_from_file(m->ard, m->ae, fd, st);
	if (r < ARCHIVE_WARN) {
		note(e, "metadata not read: %s", archive_error_string(m->ard));
		return 0;
	}
	if (r == ARCHIVE_WARN && archive_error_string(m->ard))
		note(e, "metadata: %s", archive_error_string(m->ard));
	if (flags & RD_TREE_XATTRS)
		add_xattrs(m, e);
	if (flags & RD_TREE_ACLS) {
		add_acl(m, e, 0);
		if (S_ISDIR(st->st_mode))
			add_acl(m, e, 1);
	}
	return 0;
}

/* Halve the map: merge neighbours (the hole between them is sent as zeros). */
static unsigned merge_pairs(struct rd_extent *x, unsigned n)
{
	unsigned i, k = 0;

	for (i = 0; i < n; i += 2, k++) {
		if (i + 1 < n)
			x[k] = (struct rd_extent){x[i].off, x[i + 1].off + x[i + 1].len - x[i].off};
		else
			x[k] = x[i];
	}
	return k;
}

/* Data extents with SEEK_DATA/SEEK_HOLE; no item when there is no hole. */
static void read_sparse(struct rd_tree_meta *m, int fd, const struct stat *st,
			struct rd_tree_entry *e)
{
	off_t size = st->st_size, pos = 0, d, h;
	struct rd_msg_meta *it;
	unsigned n = 0;

	while (pos < size) {
		d = lseek(fd, pos, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (d < 0)
			return; /* no SEEK_DATA here: send it whole */
		if (d >= size)
			break;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return;
		if (h > size)
			h = size;
		if (n == RD_SPARSE_MAX)
			n = merge_pairs(m->ext, n);
		m->ext[n++] = (struct rd_extent){(uint64_t)d, (uint64_t)(h - d)};
		pos = h;
	}
	if (n == 1 && m->ext[0].off == 0 && m->ext[0].len == (uint64_t)size)
		return; /* no hole */
	if (n == 0 && size == 0)
		return;
	it = item(m, e);
	if (!it) {
		note(e, "too much metadata: holes sent as zeros");
		return;
	}
	it->kind = RD_META_SPARSE;
	it->n = (uint16_t)n;
	it->ext = m->ext;
}

int rd_tree_meta_read(struct rd_tree_meta *m, int fd, const struct stat *st, unsigned flags,
		      struct rd_tree_entry *e)
{
	int ret = 0;

	e->nmeta = 0;
	e->meta = m->items;
	if (flags & (RD_TREE_XATTRS | RD_TREE_ACLS))
		ret = read_archive(m, fd, st, flags, e);
	/* The map goes last: the sender reads it from the last item. */
	if (!ret && (flags & RD_TREE_SPARSE) && S_ISREG(st->st_mode))
		read_sparse(m, fd, st, e);
	return ret;
}

static unsigned link_hash(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (unsigned)(h >> 40) % LINK_BUCKETS;
}

const char *rd_tree_link_seen(struct rd_tree_meta *m, const struct stat *st, const char *path,
			      size_t len, unsigned *ff)
{
	struct link **pp, *l;

	*ff = 0;
	if (st->st_nlink < 2)
		return NULL;
	for (pp = &m->bucket[link_hash(st->st_dev, st->st_ino)]; (l = *pp); pp = &l->next) {
		if (l->dev != st->st_dev || l->ino != st->st_ino)
			continue;
		memcpy(m->lpath, l->path, strlen(l->path) + 1);
		if (--l->left == 0) {
			*pp = l->next;
			m->link_bytes -= link_cost(strlen(l->path));
			free(l);
			m->nlinks--;
			*ff = RD_FF_LINK_LAST; /* the receiver may forget the group */
		}
		return m->lpath;
	}
	if (len > RD_PATH_MAX || m->link_bytes > m->link_max ||
	    link_cost(len) > m->link_max - m->link_bytes)
		return NULL; /* no room: its other links are sent as copies */
	l = malloc(sizeof(*l) + len + 1);
	if (!l)
		return NULL; /* sent as a copy */
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->left = st->st_nlink - 1;
	memcpy(l->path, path, len);
	l->path[len] = '\0';
	l->next = m->bucket[link_hash(st->st_dev, st->st_ino)];
	m->bucket[link_hash(st->st_dev, st->st_ino)] = l;
	m->nlinks++;
	m->link_bytes += link_cost(len);
	*ff = RD_FF_LINKED; /* its later links name it */
	return NULL;
}
