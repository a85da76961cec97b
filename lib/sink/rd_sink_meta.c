// SPDX-License-Identifier: MIT
/*
 * Metadata beyond stat on the receiver (issue 13): user.* xattrs, POSIX
 * ACLs, fifos, sockets and devices, all applied through
 * descriptors the sink opened beneath the destination (fsetxattr on the
 * temporary or the directory, mknodat/linkat/renameat on the confined
 * parent; hard links: rd_sink_links.c), each through lib/base/rd_fsid.h:
 * as a module's identity. libarchive's disk writer is not used: it works
 * by path names.
 *
 * ACLs go in as the kernel's own xattr form (system.posix_acl_access /
 * _default: a version word, then tag, perm, id per entry, little-endian,
 * sorted as the kernel requires), so no ACL text is ever parsed and no
 * libacl is needed. What the filesystem or our privileges do not allow
 * becomes a note (RD_SINK_NOTE), never a failed entry.
 */
#include "lib/sink/rd_sink_priv.h"
#include "lib/sink/rd_sink_backup.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"

#define ACL_MAX_ENTRIES 1024 /* RD_ACL_MAX of lib/proto/rd_proto.h */
#define XATTR_VAL_MAX	15360 /* RD_XATTR_VAL_MAX */
#define KACL_VERSION	2

static int note(struct rd_sink *s, const char *path, size_t len, const char *what, int errnum)
{
	rd_err_set(rd_sink__err(s), RD_ESYS, errnum, "%s: %s", rd_sink__esc(s, path, len), what);
	return RD_SINK_NOTE;
}

static const char *why_not(int e)
{
	switch (e) {
	case ENOTSUP:
		return "not supported by the destination filesystem";
	case EPERM:
	case EACCES:
		return "not permitted";
	case ENOSPC:
	case EDQUOT:
	case E2BIG:
	case ERANGE:
		return "no room for it";
	case EINVAL:
		return "refused as invalid";
	default:
		return "could not be applied";
	}
}

/* Does fd hold xattr name with exactly these vlen bytes? */
static int same_xattr(int fd, const char *name, const void *val, size_t vlen)
{
	static __thread uint8_t cur[XATTR_VAL_MAX + 1];
	ssize_t n;

	if (vlen > XATTR_VAL_MAX)
		return 0;
	n = fgetxattr(fd, name, cur, vlen + 1);
	return n == (ssize_t)vlen && !memcmp(cur, val, vlen);
}

static int set_xattr(struct rd_sink *s, int fd, const char *path, size_t len, const char *name,
		     size_t nlen, const void *val, size_t vlen)
{
	char n[256], msg[320];

	if (!(rd_sink__flags(s) & RD_SINK_XATTRS))
		return note(s, path, len, "xattrs are not kept here (no -X)", 0);
	if (nlen < 6 || nlen >= sizeof(n) || memcmp(name, "user.", 5) || memchr(name, '\0', nlen))
		return note(s, path, len, "only user.* xattrs are kept; one skipped", 0);
	memcpy(n, name, nlen);
	n[nlen] = '\0';
	if (same_xattr(fd, n, val, vlen))
		return 0; /* there already: nothing to change */
	if (rd_fsetxattr(fd, n, val, vlen, 0) == 0) {
		rd_sink__set_items(s, rd_sink_items(s) | RD_IT_XATTR);
		return 0;
	}
	snprintf(msg, sizeof(msg), "xattr %s %s", n, why_not(errno));
	return note(s, path, len, msg, errno);
}

static unsigned kernel_tag(uint8_t tag)
{
	static const unsigned k[] = {0, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20};

	return tag < sizeof(k) / sizeof(k[0]) ? k[tag] : 0;
}

static void put_le(uint8_t *p, uint32_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int acl_less(const struct rd_sink_acl *a, const struct rd_sink_acl *b)
{
	return a->tag < b->tag || (a->tag == b->tag && a->id < b->id);
}

static int set_acl(struct rd_sink *s, int fd, const char *path, size_t len, int type,
		   const struct rd_sink_acl *a, unsigned n)
{
	static __thread struct rd_sink_acl sorted[ACL_MAX_ENTRIES];
	static __thread uint8_t blob[4 + 8 * ACL_MAX_ENTRIES];
	struct rd_sink_acl x;
	unsigned i, j;
	char msg[128];

	if (!(rd_sink__flags(s) & RD_SINK_ACLS))
		return note(s, path, len, "ACLs are not kept here (no -A)", 0);
	if (n == 0 || n > ACL_MAX_ENTRIES)
		return note(s, path, len, "ACL with a bad entry count skipped", 0);
	for (i = 0; i < n; i++) { /* insertion sort: the kernel wants tag, then id order */
		x = a[i];
		if (!kernel_tag(x.tag))
			return note(s, path, len, "ACL with an unknown entry skipped", 0);
		for (j = i; j > 0 && acl_less(&x, &sorted[j - 1]); j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = x;
	}
	put_le(blob, KACL_VERSION, 4);
	for (i = 0; i < n; i++) {
		int qual = sorted[i].tag == 2 || sorted[i].tag == 4;

		put_le(blob + 4 + 8 * i, kernel_tag(sorted[i].tag), 2);
		put_le(blob + 6 + 8 * i, sorted[i].perm & 7u, 2);
		put_le(blob + 8 + 8 * i, qual ? sorted[i].id : 0xffffffffu, 4);
	}
	if (same_xattr(fd,
		       type == RD_SINK_ACL_DEFAULT ? "system.posix_acl_default"
						   : "system.posix_acl_access",
		       blob, 4 + 8 * (size_t)n))
		return 0;
	if (rd_fsetxattr(fd,
			 type == RD_SINK_ACL_DEFAULT ? "system.posix_acl_default"
						     : "system.posix_acl_access",
			 blob, 4 + 8 * (size_t)n, 0) == 0) {
		rd_sink__set_items(s, rd_sink_items(s) | RD_IT_ACL);
		return 0;
	}
	snprintf(msg, sizeof(msg), "%sACL %s", type == RD_SINK_ACL_DEFAULT ? "default " : "",
		 why_not(errno));
	return note(s, path, len, msg, errno);
}

int rd_sink_file_xattr(struct rd_sink_file *f, const char *name, size_t nlen, const void *val,
		       size_t vlen)
{
	size_t len;
	const char *p = rd_sink__file_path(f, &len);

	if (rd_sink__dry(rd_sink__file_sink(f)))
		return 0; /* a dry run sets no xattr or ACL */
	return set_xattr(rd_sink__file_sink(f), rd_sink__file_fd(f), p, len, name, nlen, val,
			 vlen);
}

int rd_sink_file_acl(struct rd_sink_file *f, int type, const struct rd_sink_acl *a, unsigned n)
{
	size_t len;
	const char *p = rd_sink__file_path(f, &len);

	if (rd_sink__dry(rd_sink__file_sink(f)))
		return 0; /* a dry run sets no xattr or ACL */
	if (type != RD_SINK_ACL_ACCESS)
		return note(rd_sink__file_sink(f), p, len, "default ACL on a file skipped", 0);
	return set_acl(rd_sink__file_sink(f), rd_sink__file_fd(f), p, len, type, a, n);
}

/* The existing file a SAME entry left (never followed), for its xattrs and ACLs. */
static int open_node(struct rd_sink *s, const char *path, size_t len, int root)
{
	const char *name;
	int pfd, ret, fd;

	ret = rd_sink__resolve(s, path, len, root, &pfd, &name);
	if (ret < 0)
		return ret;
	fd = rd_openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
	if (fd < 0)
		return rd_sink__fail(s, errno, path, len, "open");
	return fd;
}

int rd_sink_node_xattr(struct rd_sink *s, const char *path, size_t len, int root, const char *name,
		       size_t nlen, const void *val, size_t vlen)
{
	int fd, ret;

	rd_sink__set_items(s, 0);
	if (rd_sink__dry(s))
		return 0; /* a dry run sets no xattr or ACL */
	fd = open_node(s, path, len, root);
	if (fd < 0)
		return fd;
	ret = set_xattr(s, fd, path, len, name, nlen, val, vlen);
	close(fd);
	return ret;
}

int rd_sink_node_acl(struct rd_sink *s, const char *path, size_t len, int root, int type,
		     const struct rd_sink_acl *a, unsigned n)
{
	int fd, ret;

	rd_sink__set_items(s, 0);
	if (rd_sink__dry(s))
		return 0; /* a dry run sets no xattr or ACL */
	if (type != RD_SINK_ACL_ACCESS)
		return note(s, path, len, "default ACL on a file skipped", 0);
	fd = open_node(s, path, len, root);
	if (fd < 0)
		return fd;
	ret = set_acl(s, fd, path, len, type, a, n);
	close(fd);
	return ret;
}

int rd_sink_dir_xattr(struct rd_sink *s, const char *path, size_t len, int root, const char *name,
		      size_t nlen, const void *val, size_t vlen)
{
	int fd, ret;

	rd_sink__set_items(s, 0);
	if (rd_sink__dry(s))
		return 0; /* a dry run sets no xattr or ACL */
	fd = rd_sink__open_dir(s, path, len, root);

	if (fd < 0)
		return fd;
	ret = set_xattr(s, fd, path, len, name, nlen, val, vlen);
	close(fd);
	return ret;
}

int rd_sink_dir_acl(struct rd_sink *s, const char *path, size_t len, int root, int type,
		    const struct rd_sink_acl *a, unsigned n)
{
	int fd, ret;

	rd_sink__set_items(s, 0);
	if (rd_sink__dry(s))
		return 0; /* a dry run sets no xattr or ACL */
	fd = rd_sink__open_dir(s, path, len, root);

	if (fd < 0)
		return fd;
	ret = set_acl(s, fd, path, len, type, a, n);
	close(fd);
	return ret;
}

/*
 * rsync's rules: a node of the same type (and device number) is kept, its
 * attributes brought in line: 0. 1: make it (the items say why), < 0.
 * Without them (an older peer) it is always made again.
 */
static int same_node(struct rd_sink *s, int pfd, const char *name, const struct rd_sink_meta *m,
		     uint64_t rdev, const char *path, size_t len)
{
	mode_t type = (mode_t)m->mode & S_IFMT;
	struct stat st;
	unsigned items;
	int ret;

	/* what was there: nothing of this type (new), or a node to compare */
	ret = rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW);
	items = rd_sink__made_items(s, ret, &st, type, m);
	if (!(items & RD_IT_NEW) && (type == S_IFCHR || type == S_IFBLK) &&
	    st.st_rdev != makedev((unsigned)(rdev >> 32), (unsigned)rdev))
		items |= RD_IT_LOCAL | RD_IT_CHANGE;
	rd_sink__set_items(s, items);
	if (!rd_sink__select(s) || (items & (RD_IT_NEW | RD_IT_CHANGE)))
		return 1;
	return rd_sink__fix_attrs(s, pfd, name, rd_sink__attr_diff(s, &st, m, 1), m, path, len);
}

int rd_sink_special(struct rd_sink *s, const char *path, size_t len, int root,
		    const struct rd_sink_meta *m, uint64_t rdev)
{
	mode_t type = (mode_t)m->mode & S_IFMT;
	int dev = type == S_IFCHR || type == S_IFBLK, pfd = -1, ret, tries = 0;
	char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
	unsigned items;

	rd_sink__set_items(s, 0);
	if (!dev && type != S_IFIFO && type != S_IFSOCK)
		return rd_err_set(rd_sink__err(s), RD_EPROTO, 0, "%s: not a special file type",
				  rd_sink__esc(s, path, len));
	if (!(rd_sink__flags(s) & (dev ? RD_SINK_DEVICES : RD_SINK_SPECIALS)))
		return note(s, path, len,
			    dev ? "devices are not made here; skipped"
				: "fifos and sockets are not made here; skipped",
			    0);
	if (dev && geteuid() != 0)
		return note(s, path, len, "only root may make a device; skipped", EPERM);
	if (rd_sink__sel_leave(s, path, len, root))
		return 0;
	ret = rd_sink__place(s, path, len, root, &pfd, name);
	if (ret < 0)
		return rd_sink__dry_new(s, ret);
	ret = same_node(s, pfd, name, m, rdev, path, len);
	items = rd_sink_items(s);
	rd_sink__set_items(s, 0); /* set once it is done */
	if (ret == 1 && (items & RD_IT_NEW)) {
		/* --link-dest, --compare-dest, --copy-dest */
		int alt = rd_sink__alt_node(s, pfd, name, NULL, 0, rdev, m, path, len);

		if (alt < 0 || alt == 1) {
			ret = alt < 0 ? alt : 0;
			goto out;
		}
		if (alt == 2)
			items = 0;
	}
	if (ret == 1 && rd_sink__dry(s))
		ret = 0; /* it would be made */
	if (ret != 1) {
		/* the same node is there already or would be made (0), or an error */
		rd_sink__set_items(s, ret ? 0 : items);
		goto out;
	}
	do {
		rd_sink__tmp_name(tmp, name);
		ret = rd_mknodat(pfd, tmp, type | 0600,
			      dev ? makedev((unsigned)(rdev >> 32), (unsigned)rdev) : 0);
	} while (ret < 0 && errno == EEXIST && ++tries < 8);
	if (ret < 0) {
		ret = rd_sink__fail(s, errno, path, len, "mknod");
		goto out;
	}
	ret = rd_sink__node_meta(s, pfd, tmp, m, path, len);
	if (ret == 0)
		ret = rd_sink__backup(s, pfd, name, rd_sink__eff(s), RD_BACKUP_LINK);
	if (ret == 0 && rd_renameat(pfd, tmp, pfd, name) < 0)
		ret = rd_sink__fail(s, errno, path, len, "rename into place");
	if (ret < 0)
		rd_unlinkat(pfd, tmp, 0);
	else
		rd_sink__set_items(s, items);
out:
	close(pfd);
	return ret;
}
