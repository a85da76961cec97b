// SPDX-License-Identifier: MIT
/*
 * Where a wire path lands (rd_sink.c has the top comment): the path
 * checked again, the destination decided (rsync's rules: at the first
 * top-level entry), the path mapped to the effective one below it and its
 * parent opened beneath the destination, never through a symlink; the
 * sink opened and closed.
 */
#include "lib/sink/rd_sink_int.h"
#include "lib/sink/rd_sink_mirror.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"

const char *sink_esc(struct rd_sink *s, const char *p, size_t len)
{
	if (rd_escape(s->esc, sizeof(s->esc), p, len) >= sizeof(s->esc))
		memcpy(s->esc + sizeof(s->esc) - 4, "...", 4);
	return s->esc;
}

int sink_status(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
		return RD_ENOSPC;
	case EACCES:
	case EPERM:
	case EROFS:
		return RD_EPERM;
	case ENOENT:
		return RD_ENOENT;
	case ENOMEM:
		return RD_ENOMEM;
	default:
		return RD_ESYS;
	}
}

int sink_fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what)
{
	return rd_err_set(&s->err, sink_status(errnum), errnum, "%s%s%s%s%s", what ? what : "",
			  what ? " " : "", sink_esc(s, p, len), s->label[0] ? " in " : "",
			  s->label);
}

const char *rd_sink_renames_to(const struct rd_sink *s)
{
	return s && !s->into ? s->dest_base : NULL;
}

void rd_sink_set_label(struct rd_sink *s, const char *label)
{
	rd_escape(s->label, sizeof(s->label), label, strlen(label));
}

/* Relative, no empty / "." / ".." component, no NUL, no leading '/'. */
static int check_path(struct rd_sink *s, const char *p, size_t len)
{
	size_t i = 0, c;

	if (!p || len == 0 || len > SINK_PATH_MAX || memchr(p, '\0', len))
		return rd_err_set(&s->err, RD_EPROTO, 0, "refused path: empty, too long or NUL");
	while (i <= len) {
		c = i;
		while (c < len && p[c] != '/')
			c++;
		if (c == i || c - i > NAME_MAX || (c - i == 1 && p[i] == '.') ||
		    (c - i == 2 && p[i] == '.' && p[i + 1] == '.'))
			return rd_err_set(&s->err, RD_EPROTO, 0, "refused path %s: %s",
					  sink_esc(s, p, len),
					  c == i ? "empty component or absolute"
						 : "\".\", \"..\" or over-long component");
		i = c + 1;
	}
	/* rdcp's own files are never sent: a sender that does is planting them */
	if (rd_path_reserved(p, len))
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "refused path %s: a name rdcp keeps for its partial, range "
				  "and temporary files",
				  sink_esc(s, p, len));
	return 0;
}

static int open_how(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how;
	long r;

	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)flags;
	how.resolve = resolve;
	do {
		r = rd_openat2(dirfd, path, &how, sizeof(how));
	} while (r < 0 && (errno == EAGAIN || errno == EINTR));
	return (int)r;
}

/*
 * Open directory path beneath dirfd. Symlinks are refused unless
 * allow_links (the destination itself may go through links that stay
 * beneath root_fd); the fallback walk refuses them always. path's ".."
 * components were refused before; "." and empty ones are skipped.
 */
int sink_open_dir(struct rd_sink *s, int dirfd, const char *path, int allow_links)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *slash;
	int fd, nfd, flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

	if (!s->no_openat2) {
		fd = open_how(dirfd, path, flags,
			      RESOLVE_BENEATH |
				  (allow_links ? 0 : RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		s->no_openat2 = 1;
	}
	fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	while (fd >= 0 && *p) {
		size_t n;

		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n > NAME_MAX) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n + (slash ? 1 : 0);
		if (n == 0 || !strcmp(comp, "."))
			continue;
		nfd = rd_openat(fd, comp, flags | O_NOFOLLOW, 0);
		close(fd);
		fd = nfd;
	}
	return fd;
}

void sink_cache_drop(struct rd_sink *s)
{
	if (s->cache_fd >= 0)
		close(s->cache_fd);
	s->cache_fd = -1;
	s->cache_len = 0;
}

/* The accepted top-level entry named p (n bytes): its index + 1, or 0. */
static unsigned root_seen(const struct rd_sink *s, const char *p, size_t n)
{
	unsigned i;

	for (i = 0; i < s->nseen; i++)
		if (strlen(s->seen[i]) == n && !memcmp(s->seen[i], p, n))
			return i + 1;
	return 0;
}

/*
 * First component of path must be a requested top-level entry. Pulls with
 * rsync's rules: *contents becomes what was asked of that entry (the
 * client's word, not the server's), and a flag the request did not ask
 * for is refused.
 */
static int check_expected(struct rd_sink *s, const char *path, size_t len, size_t flen, int root,
			  int *contents)
{
	unsigned i, any = SINK_ROOTS_MAX, k;

	if (!s->expect_on)
		return 0;
	k = root_seen(s, path, flen); /* the same name again is still what was asked */
	if (k) {
		if (*contents && !s->seen_contents[k - 1])
			goto wrong_contents;
		*contents = s->seen_contents[k - 1];
		return 0;
	}
	if (!root)
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "refused path %s: not under a requested top-level entry",
				  sink_esc(s, path, len));
	for (i = 0; i < s->nexpect; i++) {
		if (s->expect_used[i])
			continue;
		if (strlen(s->expect[i]) == flen && !memcmp(s->expect[i], path, flen))
			break;
		if (!s->expect[i][0] && any == SINK_ROOTS_MAX)
			any = i;
	}
	if (i == s->nexpect)
		i = any;
	if (i == SINK_ROOTS_MAX || s->nseen >= SINK_ROOTS_MAX)
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "refused %s: top-level entry not requested",
				  sink_esc(s, path, len));
	if (*contents && !s->expect_contents[i])
		goto wrong_contents;
	s->expect_used[i] = 1;
	*contents = s->expect_contents[i];
	s->seen_contents[s->nseen] = (unsigned char)*contents;
	memcpy(s->seen[s->nseen], path, flen);
	s->seen[s->nseen++][flen] = '\0';
	return 0;
wrong_contents:
	return rd_err_set(&s->err, RD_EPROTO, 0,
			  "refused %s: placed as a directory's contents, which was not asked for",
			  sink_esc(s, path, len));
}

/* Pushes: remember a contents source's top-level name (its hard links' targets). */
static void croot_note(struct rd_sink *s, const char *p, size_t n)
{
	unsigned i;

	for (i = 0; i < s->ncroots; i++)
		if (strlen(s->croots[i]) == n && !memcmp(s->croots[i], p, n))
			return;
	if (s->ncroots < SINK_ROOTS_MAX) {
		memcpy(s->croots[s->ncroots], p, n);
		s->croots[s->ncroots++][n] = '\0';
	}
}

static int croot_is(const struct rd_sink *s, const char *p, size_t n)
{
	unsigned i;

	for (i = 0; i < s->ncroots; i++)
		if (strlen(s->croots[i]) == n && !memcmp(s->croots[i], p, n))
			return 1;
	return 0;
}

int rd_sink_expect_roots(struct rd_sink *s, const char *const *names, const unsigned char *contents,
			 unsigned n)
{
	unsigned i;

	if (n > SINK_ROOTS_MAX)
		return rd_err_set(&s->err, RD_EUSAGE, 0, "too many requested paths");
	for (i = 0; i < n; i++) {
		s->expect_contents[i] = contents && contents[i] && (s->flags & RD_SINK_RSYNC);
		if (strlen(names[i]) > NAME_MAX)
			return rd_err_set(&s->err, RD_EUSAGE, 0, "requested name too long");
		/*
		 * "" is "any one name": safe only where that one entry gets
		 * the destination's name (rename mode, or contents: the
		 * name is dropped), never inside an existing directory (scp
		 * CVE-2019-6111 class).
		 */
		if (!names[i][0] && s->into && !s->expect_contents[i])
			return rd_err_set(&s->err, RD_EUSAGE, 0,
					  "%s is an existing directory and a requested path "
					  "names no file (like \".\" or \"~/\"): name the "
					  "entry to copy, or a destination that does not exist yet",
					  s->dest_esc);
		strcpy(s->expect[i], names[i]);
		s->expect_used[i] = 0;
	}
	s->nexpect = n;
	s->nseen = 0;
	s->expect_on = 1;
	return 0;
}

/*
 * mkdir -p rel beneath fd, one component at a time, never through a
 * symlink made meanwhile: the directory's fd, or -1 with errno set.
 */
static int make_path(struct rd_sink *s, int fd, const char *rel)
{
	char comp[NAME_MAX + 1];
	const char *p = rel, *e;
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0), nfd, err;
	size_t n;

	while (cur >= 0 && *p) {
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (n > NAME_MAX) {
			close(cur);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p = *e ? e + 1 : e;
		if (!n || !strcmp(comp, "."))
			continue;
		nfd = sink_open_dir(s, cur, comp, 1);
		if (nfd < 0 && errno == ENOENT) {
			if (rd_mkdirat(cur, comp, 0777 & ~s->umask) < 0 && errno != EEXIST)
				nfd = -1;
			else
				nfd = sink_open_dir(s, cur, comp, 0);
		}
		err = errno;
		close(cur);
		cur = nfd;
		errno = err;
	}
	return cur;
}

/*
 * RD_SINK_RSYNC: the first top-level entry (a directory: is_dir) decides
 * what the destination is (rd_sink.h). Into: the destination directory is
 * made if missing (0777 & ~umask, as rsync's mkdir; a contents source's
 * metadata comes at its POST) and entered; else its parent is.
 */
static int decide(struct rd_sink *s, int is_dir)
{
	const char *slash = strrchr(s->dest_rel, '/');
	int into = (s->flags & RD_SINK_DEST_DIR) || is_dir, fd;

	if (into && s->dest_there)
		return rd_err_set(&s->err, RD_EUSAGE, 0,
				  "destination %s is not a directory: cannot put a directory "
				  "or several files there",
				  s->dest_esc);
	if (s->dest_fd < 0 && s->sel.dry_run && s->sel_on) {
		/* --mkpath in a dry run: the parents would be made, and all beneath */
		s->pending = 0;
		s->dry_void = 1;
		s->into = into;
		return 0;
	}
	if (s->dest_fd < 0) {
		/* --mkpath: the parents first */
		char *parent = strndup(s->dest_rel, slash ? (size_t)(slash - s->dest_rel) : 0);

		if (!parent)
			return rd_err_set(&s->err, RD_ENOMEM, ENOMEM, "destination %s",
					  s->dest_esc);
		s->dest_fd = make_path(s, s->root_fd, parent);
		free(parent);
		if (s->dest_fd < 0)
			return rd_err_set(&s->err, sink_status(errno), errno,
					  "make the parents of destination %s (--mkpath)",
					  s->dest_esc);
	}
	s->pending = 0;
	if (!into)
		return 0;
	if (s->sel.dry_run && s->sel_on) {
		/* a dry run makes nothing: a missing destination is void */
		fd = sink_open_dir(s, s->dest_fd, s->dest_base, 0);
		if (fd < 0) {
			s->dry_void = 1;
			s->into = 1;
			return 0;
		}
		goto opened;
	}
	if (rd_mkdirat(s->dest_fd, s->dest_base, 0777 & ~s->umask) == 0) {
		sink_dir_note(s, s->dest_fd, s->dest_base);
		s->dest_made = 1;
	} else if (errno != EEXIST)
		return rd_err_set(&s->err, sink_status(errno), errno, "mkdir destination %s",
				  s->dest_esc);
	fd = sink_open_dir(s, s->dest_fd, s->dest_base, 0);
	if (fd < 0)
		return rd_err_set(&s->err, sink_status(errno), errno, "destination %s",
				  s->dest_esc);
opened:
	close(s->dest_fd);
	s->dest_fd = fd;
	s->into = 1;
	return 0;
}

/*
 * Check the wire path, map it to the effective path below dest_fd (rename
 * mode: the root component becomes dest_base; a contents entry, rsync's
 * rules: the root component goes) and open its parent. how: RD_SINK_ROOT,
 * RD_SINK_CONTENTS, HOW_DIR, HOW_TARGET.
 */
/* A dry run: path's parent would be made (or replaced) first. */
static int dry_absent(struct rd_sink *s, const char *path, size_t len)
{
	s->absent = 1;
	return rd_err_set(&s->err, RD_ENOENT, 0, "%s: beneath a directory a copy would make",
			  sink_esc(s, path, len));
}

int sink_resolve(struct rd_sink *s, const char *path, size_t len, unsigned how, struct place *pl)
{
	const char *first_end, *rest, *slash;
	int root = !!(how & RD_SINK_ROOT), contents = !!(how & RD_SINK_CONTENTS), ret, fd;
	size_t flen, elen, plen, i;

	s->absent = 0;
	ret = check_path(s, path, len);
	if (ret < 0)
		return ret;
	first_end = memchr(path, '/', len);
	flen = first_end ? (size_t)(first_end - path) : len;
	rest = path + flen;
	if (root && first_end)
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "refused path %s: top-level entry with '/'",
				  sink_esc(s, path, len));
	if (s->fatal) {
		rd_err_copy(&s->err, &s->fatal_err);
		return s->fatal;
	}
	ret = check_expected(s, path, len, flen, root, &contents);
	if (ret < 0)
		return ret;
	if (s->flags & RD_SINK_RSYNC) {
		if (how & HOW_TARGET)
			contents = s->expect_on ? contents : croot_is(s, path, flen);
		else if (root && contents && !s->expect_on)
			croot_note(s, path, flen);
		if (root && contents && !(how & HOW_DIR))
			return rd_err_set(&s->err, RD_EUSAGE, 0,
					  "%s: not a directory (its contents were asked for)",
					  sink_esc(s, path, len));
		if (s->pending && !root)
			return rd_err_set(&s->err, RD_EPROTO, 0,
					  "refused path %s: outside the transfer's root",
					  sink_esc(s, path, len));
		if (s->pending) {
			ret = decide(s, !!(how & HOW_DIR));
			if (ret < 0) {
				s->fatal = ret;
				rd_err_copy(&s->fatal_err, &s->err);
				return ret;
			}
		}
	}
	if (!s->into) {
		if (root && !s->have_root) {
			memcpy(s->root_name, path, flen);
			s->root_name[flen] = '\0';
			s->have_root = 1;
		} else if (!s->have_root || strlen(s->root_name) != flen ||
			   memcmp(s->root_name, path, flen)) {
			return rd_err_set(&s->err, root ? RD_EUSAGE : RD_EPROTO, 0,
					  root ? "destination %s: is not a directory"
					       : "refused path %s: outside the transfer's root",
					  root ? s->dest_esc : sink_esc(s, path, len));
		}
		elen = strlen(s->dest_base);
		memcpy(s->eff, s->dest_base, elen);
		memcpy(s->eff + elen, rest, len - flen);
		elen += len - flen;
	} else if (contents && (s->flags & RD_SINK_RSYNC)) {
		/* "dir/": its root is the destination itself ("."), the rest below it */
		elen = first_end ? len - flen - 1 : 1;
		memcpy(s->eff, first_end ? first_end + 1 : ".", elen);
	} else {
		memcpy(s->eff, path, len);
		elen = len;
	}
	s->eff[elen] = '\0';
	if (s->dry_void)
		return dry_absent(s, path, len);
	pl->depth = 1;
	for (i = 0; i < elen; i++)
		pl->depth += s->eff[i] == '/';
	slash = strrchr(s->eff, '/');
	if (!slash) {
		pl->pfd = s->dest_fd;
		pl->name = s->eff;
		return 0;
	}
	plen = (size_t)(slash - s->eff);
	pl->name = slash + 1;
	if (s->cache_fd >= 0 && s->cache_len == plen && !memcmp(s->cache_path, s->eff, plen)) {
		pl->pfd = s->cache_fd;
		return 0;
	}
	sink_cache_drop(s);
	s->eff[plen] = '\0';
	fd = sink_open_dir(s, s->dest_fd, s->eff, 0);
	s->eff[plen] = '/';
	if (fd < 0) {
		int e = errno;

		if (s->sel_on && s->sel.dry_run && (e == ENOENT || e == ENOTDIR || e == ELOOP))
			return dry_absent(s, path, len); /* a parent would be made first */
		if (e == ELOOP || e == EXDEV)
			return rd_err_set(&s->err, RD_EPERM, 0,
					  "%s: a parent is a symlink; refusing to follow",
					  sink_esc(s, path, len));
		return rd_err_set(&s->err, sink_status(e), e, "%s: parent directory",
				  sink_esc(s, path, len));
	}
	memcpy(s->cache_path, s->eff, plen);
	s->cache_len = plen;
	s->cache_fd = fd;
	pl->pfd = fd;
	return 0;
}

static int has_dotdot(const char *p)
{
	const char *c = p;

	for (;;) {
		const char *e = strchrnul(c, '/');

		if (e - c == 2 && c[0] == '.' && c[1] == '.')
			return 1;
		if (!*e)
			return 0;
		c = e + 1;
	}
}

mode_t rd_sink_process_umask(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

/*
 * RD_SINK_RSYNC, nothing to enter at dest: the parent is opened now (or,
 * --mkpath, made at decide()), what the destination becomes is decided
 * at the first top-level entry.
 */
static int open_pending(struct rd_sink *s, int root_fd, const char *dest, struct rd_err *err)
{
	size_t n = strlen(dest);
	const char *base;
	struct stat st;
	char *parent;
	int fd, e;

	while (n > 1 && dest[n - 1] == '/') {
		s->flags |= RD_SINK_DEST_DIR; /* "dst/" */
		n--;
	}
	s->dest_rel = strndup(dest, n);
	s->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	if (!s->dest_rel || s->root_fd < 0)
		return rd_err_set(err, RD_ENOMEM, errno, "destination %s", s->dest_esc);
	base = strrchr(s->dest_rel, '/');
	parent = strndup(s->dest_rel, base ? (size_t)(base - s->dest_rel) : 0);
	if (!parent)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "destination %s", s->dest_esc);
	base = base ? base + 1 : s->dest_rel;
	if (strlen(base) > NAME_MAX || !strcmp(base, ".")) {
		free(parent);
		return rd_err_set(err, RD_EUSAGE, 0, "destination %s: bad name", s->dest_esc);
	}
	strcpy(s->dest_base, base);
	fd = sink_open_dir(s, root_fd, *parent ? parent : ".", 1);
	e = errno;
	free(parent);
	s->pending = 1;
	if (fd < 0 && e == ENOENT && (s->flags & RD_SINK_MKPATH))
		return 0;
	if (fd < 0)
		return rd_err_set(err, sink_status(e), e, "destination %s", s->dest_esc);
	s->dest_fd = fd;
	s->dest_there = rd_fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (s->dest_there && (s->flags & RD_SINK_DEST_DIR))
		return rd_err_set(err, RD_EUSAGE, 0, "destination %s is not a directory",
				  s->dest_esc);
	return 0;
}

int rd_sink_open(struct rd_sink **out, int root_fd, const char *dest, unsigned flags, mode_t um,
		 struct rd_err *err)
{
	struct rd_sink *s;
	const char *base;
	char *parent = NULL;
	size_t n;
	int ret = 0, fd;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "destination");
	s->flags = flags;
	s->no_openat2 = !!(flags & RD_SINK_TEST_NO_OPENAT2);
	s->dest_fd = -1;
	s->root_fd = -1;
	s->cache_fd = -1;
	s->umask = um & 0777;
	s->root = geteuid() == 0;
	if (!dest || !*dest)
		dest = ".";
	rd_escape(s->dest_esc, sizeof(s->dest_esc), dest, strlen(dest));
	memcpy(s->label, s->dest_esc, sizeof(s->label));
	n = strlen(dest);
	if (dest[0] == '/' || has_dotdot(dest)) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "destination %s: must be relative, without ..",
				 s->dest_esc);
		goto out;
	}
	/* a push to "module/.rdcp-partial.x" would plant one under its final name */
	if (rd_path_reserved(dest, n)) {
		ret = rd_err_set(err, RD_EUSAGE, 0,
				 "destination %s: a name rdcp keeps for its partial and temporary "
				 "files",
				 s->dest_esc);
		goto out;
	}
	fd = sink_open_dir(s, root_fd, dest, 1);
	if (fd >= 0) {
		s->dest_fd = fd;
		s->into = 1;
		goto out;
	}
	if (errno != ENOENT && errno != ENOTDIR) {
		ret = rd_err_set(err, sink_status(errno), errno, "destination %s", s->dest_esc);
		goto out;
	}
	if (flags & RD_SINK_RSYNC) {
		ret = open_pending(s, root_fd, dest, err);
		goto out;
	}
	/* Rename mode: the parent must exist, the base name is the root's. */
	if (dest[n - 1] == '/') {
		ret = rd_err_set(err, RD_ENOENT, ENOENT, "destination %s", s->dest_esc);
		goto out;
	}
	base = strrchr(dest, '/');
	parent = strndup(dest, base ? (size_t)(base - dest) : 0);
	if (!parent) {
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "destination %s", s->dest_esc);
		goto out;
	}
	base = base ? base + 1 : dest;
	if (strlen(base) > NAME_MAX || !strcmp(base, ".")) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "destination %s: bad name", s->dest_esc);
		goto out;
	}
	strcpy(s->dest_base, base);
	fd = sink_open_dir(s, root_fd, *parent ? parent : ".", 1);
	if (fd < 0) {
		ret = rd_err_set(err, sink_status(errno), errno, "destination %s", s->dest_esc);
		goto out;
	}
	s->dest_fd = fd;
out:
	free(parent);
	if (ret < 0)
		rd_sink_close(s);
	else
		*out = s;
	return ret;
}

void rd_sink_close(struct rd_sink *s)
{
	if (!s)
		return;
	sink_cache_drop(s);
	if (s->dest_fd >= 0)
		close(s->dest_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->dest_rel);
	rd_sink__links_free(s);
	rd_sink__alt_free(s);
	rd_sink__mirror_free(s);
	free(s);
}

const struct rd_err *rd_sink_err(const struct rd_sink *s)
{
	return &s->err;
}

int rd_sink_fatal(const struct rd_sink *s)
{
	return s->fatal;
}
