// SPDX-License-Identifier: MIT
/*
 * Receiver side placement, confined beneath the destination.
 *
 * Every wire path is re-checked here (defense in depth: a decoder bug must
 * not become a write outside the tree). A path's parent directory is
 * opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) relative to
 * the destination, or, where the kernel has no openat2, by a walk of
 * openat(O_NOFOLLOW | O_DIRECTORY) one checked component at a time. The
 * last parent opened is cached, so a directory of many files is resolved
 * once. Final names are only ever touched with *at() calls on that parent
 * fd and never followed.
 *
 * Mode of directories we create: 0700 while they fill, the real mode at
 * dir_post. The directories we created and whose dir_post has not come yet
 * are remembered by inode (a directory's dir_post may be deferred while
 * siblings are created), so an existing directory keeps its mode unless
 * the mode is preserved. That set is bounded by depth plus the engine's
 * window; past CREATED_MAX a directory simply keeps its 0700 | umask mode.
 */
#include "lib/sink/rd_sink.h"
#include "lib/base/rd_fsid.h"
#include "lib/sink/rd_sink_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink_partial.h"

/* resolve()'s how, beside RD_SINK_ROOT and RD_SINK_CONTENTS */
#define HOW_DIR	   0x100u	   /* the entry is a directory */
#define HOW_TARGET RD_SINK__TARGET /* a hard link's target: an earlier entry */

/* Where a wire path lands: parent dir fd (borrowed) + final name. */
struct place {
	int pfd;
	const char *name;
	size_t depth; /* components */
};

static const char *esc(struct rd_sink *s, const char *p, size_t len)
{
	if (rd_escape(s->esc, sizeof(s->esc), p, len) >= sizeof(s->esc))
		memcpy(s->esc + sizeof(s->esc) - 4, "...", 4);
	return s->esc;
}

static int sys_status(int e)
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

static int fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what)
{
	return rd_err_set(&s->err, sys_status(errnum), errnum, "%s%s%s%s%s", what ? what : "",
			  what ? " " : "", esc(s, p, len), s->label[0] ? " in " : "", s->label);
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
					  esc(s, p, len),
					  c == i ? "empty component or absolute"
						 : "\".\", \"..\" or over-long component");
		i = c + 1;
	}
	/* rdcp's own files are never sent: a sender that does is planting them */
	if (rd_path_reserved(p, len))
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "refused path %s: a name rdcp keeps for its partial and "
				  "temporary files",
				  esc(s, p, len));
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
static int open_dir_beneath(struct rd_sink *s, int dirfd, const char *path, int allow_links)
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

static void cache_drop(struct rd_sink *s)
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
				  esc(s, path, len));
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
		return rd_err_set(&s->err, RD_EPROTO, 0, "refused %s: top-level entry not requested",
				  esc(s, path, len));
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
			  esc(s, path, len));
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

static void dir_note(struct rd_sink *s, int pfd, const char *name);

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
		nfd = open_dir_beneath(s, cur, comp, 1);
		if (nfd < 0 && errno == ENOENT) {
			if (rd_mkdirat(cur, comp, 0777 & ~s->umask) < 0 && errno != EEXIST)
				nfd = -1;
			else
				nfd = open_dir_beneath(s, cur, comp, 0);
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
	if (s->dest_fd < 0) {
		/* --mkpath: the parents first */
		char *parent = strndup(s->dest_rel, slash ? (size_t)(slash - s->dest_rel) : 0);

		if (!parent)
			return rd_err_set(&s->err, RD_ENOMEM, ENOMEM, "destination %s",
					  s->dest_esc);
		s->dest_fd = make_path(s, s->root_fd, parent);
		free(parent);
		if (s->dest_fd < 0)
			return rd_err_set(&s->err, sys_status(errno), errno,
					  "make the parents of destination %s (--mkpath)",
					  s->dest_esc);
	}
	s->pending = 0;
	if (!into)
		return 0;
	if (rd_mkdirat(s->dest_fd, s->dest_base, 0777 & ~s->umask) == 0)
		dir_note(s, s->dest_fd, s->dest_base);
	else if (errno != EEXIST)
		return rd_err_set(&s->err, sys_status(errno), errno, "mkdir destination %s",
				  s->dest_esc);
	fd = open_dir_beneath(s, s->dest_fd, s->dest_base, 0);
	if (fd < 0)
		return rd_err_set(&s->err, sys_status(errno), errno, "destination %s", s->dest_esc);
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
static int resolve(struct rd_sink *s, const char *path, size_t len, unsigned how, struct place *pl)
{
	const char *first_end, *rest, *slash;
	int root = !!(how & RD_SINK_ROOT), contents = !!(how & RD_SINK_CONTENTS), ret, fd;
	size_t flen, elen, plen, i;

	ret = check_path(s, path, len);
	if (ret < 0)
		return ret;
	first_end = memchr(path, '/', len);
	flen = first_end ? (size_t)(first_end - path) : len;
	rest = path + flen;
	if (root && first_end)
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "refused path %s: top-level entry with '/'", esc(s, path, len));
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
					  esc(s, path, len));
		if (s->pending && !root)
			return rd_err_set(&s->err, RD_EPROTO, 0,
					  "refused path %s: outside the transfer's root",
					  esc(s, path, len));
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
					  root ? s->dest_esc : esc(s, path, len));
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
	cache_drop(s);
	s->eff[plen] = '\0';
	fd = open_dir_beneath(s, s->dest_fd, s->eff, 0);
	s->eff[plen] = '/';
	if (fd < 0) {
		int e = errno;

		if (e == ELOOP || e == EXDEV)
			return rd_err_set(&s->err, RD_EPERM, 0,
					  "%s: a parent is a symlink; refusing to follow",
					  esc(s, path, len));
		return rd_err_set(&s->err, sys_status(e), e, "%s: parent directory",
				  esc(s, path, len));
	}
	memcpy(s->cache_path, s->eff, plen);
	s->cache_len = plen;
	s->cache_fd = fd;
	pl->pfd = fd;
	return 0;
}

static int readonly(struct rd_sink *s, const char *path, size_t len)
{
	return rd_err_set(&s->err, RD_EPERM, 0, "%s: read-only", esc(s, path, len));
}

static int want_owner(const struct rd_sink *s)
{
	return (s->flags & RD_SINK_PRESERVE_OWNER) && geteuid() == 0;
}

static int want_group(const struct rd_sink *s)
{
	return (s->flags & RD_SINK_PRESERVE_GROUP) && geteuid() == 0;
}

/*
 * setuid/setgid only together with the owner (issue 7 items 2 and 4): a
 * file must never become setuid to an owner that was not chosen.
 */
static mode_t final_mode(const struct rd_sink *s, const struct rd_sink_meta *m)
{
	if (s->flags & RD_SINK_PRESERVE_MODE)
		return (mode_t)(m->mode & (want_owner(s) ? 07777u : 01777u));
	return (mode_t)(m->mode & 0777u) & ~s->umask;
}

/* chown to what was asked for: uid with OWNER, gid with GROUP (-1: keep) */
static int chown_meta(const struct rd_sink *s, int fd, const char *name,
		      const struct rd_sink_meta *m)
{
	uid_t uid = want_owner(s) ? (uid_t)m->uid : (uid_t)-1;
	gid_t gid = want_group(s) ? (gid_t)m->gid : (gid_t)-1;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	if (name)
		return rd_fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
	return rd_fchown(fd, uid, gid);
}

unsigned rd_sink_items(const struct rd_sink *s)
{
	return s->items;
}

unsigned rd_sink__set_items(struct rd_sink *s, unsigned items)
{
	s->items = items;
	return items;
}

mode_t rd_sink__final_mode(const struct rd_sink *s, const struct rd_sink_meta *m)
{
	return final_mode(s, m);
}

int rd_sink__want_owner(const struct rd_sink *s)
{
	return want_owner(s);
}

int rd_sink__want_group(const struct rd_sink *s)
{
	return want_group(s);
}

static void meta_times(const struct rd_sink_meta *m, struct timespec ts[2])
{
	ts[0].tv_sec = (time_t)m->mtime_sec;
	ts[0].tv_nsec = m->mtime_nsec < 1000000000u ? (long)m->mtime_nsec : 0;
	ts[1] = ts[0];
}

/* Unique temp name ".rdcp.<name>.<random>" (the name cut to fit NAME_MAX). */
static void tmp_name(char *out, const char *name)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)out;
	snprintf(out, NAME_MAX + 1, ".rdcp.%.*s.%016llx", TMP_NAME_KEEP, name,
		 (unsigned long long)r);
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
	fd = open_dir_beneath(s, root_fd, *parent ? parent : ".", 1);
	e = errno;
	free(parent);
	s->pending = 1;
	if (fd < 0 && e == ENOENT && (s->flags & RD_SINK_MKPATH))
		return 0;
	if (fd < 0)
		return rd_err_set(err, sys_status(e), e, "destination %s", s->dest_esc);
	s->dest_fd = fd;
	s->dest_there = rd_fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (s->dest_there && (s->flags & RD_SINK_DEST_DIR))
		return rd_err_set(err, RD_EUSAGE, 0, "destination %s is not a directory",
				  s->dest_esc);
	return 0;
}

int rd_sink_open(struct rd_sink **out, int root_fd, const char *dest, unsigned flags,
		 mode_t um, struct rd_err *err)
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
	fd = open_dir_beneath(s, root_fd, dest, 1);
	if (fd >= 0) {
		s->dest_fd = fd;
		s->into = 1;
		goto out;
	}
	if (errno != ENOENT && errno != ENOTDIR) {
		ret = rd_err_set(err, sys_status(errno), errno, "destination %s", s->dest_esc);
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
	fd = open_dir_beneath(s, root_fd, *parent ? parent : ".", 1);
	if (fd < 0) {
		ret = rd_err_set(err, sys_status(errno), errno, "destination %s", s->dest_esc);
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
	cache_drop(s);
	if (s->dest_fd >= 0)
		close(s->dest_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->dest_rel);
	rd_sink__links_free(s);
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

/* Remember a directory we created (by inode) until its dir_post. */
static void dir_note(struct rd_sink *s, int pfd, const char *name)
{
	struct stat st;

	if (s->ncreated >= CREATED_MAX || rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	s->created[s->ncreated].dev = st.st_dev;
	s->created[s->ncreated].ino = st.st_ino;
	s->ncreated++;
}

/* Was the directory open as fd created by us? Forgets it (dir_post is once). */
static int dir_created(struct rd_sink *s, int fd)
{
	struct stat st;
	unsigned i;

	if (fstat(fd, &st) < 0)
		return 0;
	for (i = s->ncreated; i-- > 0;) {
		if (s->created[i].dev == st.st_dev && s->created[i].ino == st.st_ino) {
			s->created[i] = s->created[--s->ncreated];
			return 1;
		}
	}
	return 0;
}

int rd_sink_mkdir(struct rd_sink *s, const char *path, size_t len, int root,
		  const struct rd_sink_meta *m)
{
	struct place pl;
	struct stat st;
	int ret;

	s->items = 0;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	ret = resolve(s, path, len, (unsigned)root | HOW_DIR, &pl);
	if (ret < 0)
		return ret;
	if (rd_mkdirat(pl.pfd, pl.name, 0700) == 0) {
		dir_note(s, pl.pfd, pl.name);
		s->items = RD_IT_NEW | RD_IT_LOCAL;
		return 0;
	}
	if (errno != EEXIST)
		return fail(s, errno, path, len, "mkdir");
	if (rd_fstatat(pl.pfd, pl.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(s, errno, path, len, "mkdir");
	if (S_ISLNK(st.st_mode))
		return rd_err_set(&s->err, RD_EPERM, 0, "%s: is a symlink; refusing to follow",
				  esc(s, path, len));
	if (!S_ISDIR(st.st_mode))
		return rd_err_set(&s->err, RD_ESYS, 0, "%s: exists and is not a directory",
				  esc(s, path, len));
	/* as rsync: what the directory's own metadata will change, judged now */
	s->items = rd_sink__attr_items(s, &st, m);
	return 0;
}

/*
 * A directory's POST (or its metadata): the root's comes without
 * RD_FF_ROOT in rename mode (only its name is checked); a directory.
 */
static unsigned post_how(const struct rd_sink *s, int root)
{
	unsigned how = ((unsigned)root & RD_SINK_CONTENTS) | HOW_DIR;

	if ((root & (int)RD_SINK_ROOT) && !s->have_root)
		how |= RD_SINK_ROOT;
	return how;
}

int rd_sink_dir_post(struct rd_sink *s, const char *path, size_t len, int root,
		     const struct rd_sink_meta *m)
{
	struct timespec ts[2];
	struct place pl;
	int ret = 0, fd;

	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	ret = resolve(s, path, len, post_how(s, root), &pl);
	if (ret < 0)
		return ret;
	fd = open_dir_beneath(s, pl.pfd, pl.name, 0);
	if (fd < 0)
		return fail(s, errno, path, len, "open directory");
	if (chown_meta(s, fd, NULL, m) < 0) {
		ret = fail(s, errno, path, len, "chown");
		goto out;
	}
	if ((dir_created(s, fd) || (s->flags & RD_SINK_PRESERVE_MODE)) &&
	    rd_fchmod(fd, final_mode(s, m)) < 0) {
		ret = fail(s, errno, path, len, "chmod");
		goto out;
	}
	if (s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(m, ts);
		if (rd_futimens(fd, ts) < 0) {
			ret = fail(s, errno, path, len, "set times of");
			goto out;
		}
	}
out:
	close(fd);
	return ret;
}

/* Refuse to put a non-directory where a directory is. */
static int not_a_dir(struct rd_sink *s, const struct place *pl, const char *path, size_t len)
{
	struct stat st;

	if (rd_fstatat(pl->pfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return rd_err_set(&s->err, RD_ESYS, EISDIR, "%s", esc(s, path, len));
	return 0;
}

int rd_sink_symlink(struct rd_sink *s, const char *path, size_t len, int root, const char *target,
		    size_t tlen, const struct rd_sink_meta *m)
{
	char tmp[NAME_MAX + 1];
	struct timespec ts[2];
	struct place pl;
	char *tgt = NULL;
	unsigned items;
	int ret, tries = 0;

	s->items = 0;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	ret = resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0)
		return ret;
	if (!target || tlen == 0 || tlen > SINK_PATH_MAX || memchr(target, '\0', tlen))
		return rd_err_set(&s->err, RD_EPROTO, 0, "%s: bad symlink target",
				  esc(s, path, len));
	ret = not_a_dir(s, &pl, path, len);
	if (ret < 0)
		return ret;
	tgt = strndup(target, tlen);
	if (!tgt)
		return fail(s, ENOMEM, path, len, "symlink");
	items = rd_sink__link_items(s, pl.pfd, pl.name, tgt, tlen, m);
	do {
		tmp_name(tmp, pl.name);
		ret = rd_symlinkat(tgt, pl.pfd, tmp);
	} while (ret < 0 && errno == EEXIST && ++tries < 8);
	if (ret < 0) {
		ret = fail(s, errno, path, len, "symlink");
		goto out;
	}
	if (chown_meta(s, pl.pfd, tmp, m) < 0) {
		ret = fail(s, errno, path, len, "chown");
		goto unlink;
	}
	if (s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(m, ts);
		if (rd_utimensat(pl.pfd, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = fail(s, errno, path, len, "set times of");
			goto unlink;
		}
	}
	if (rd_renameat(pl.pfd, tmp, pl.pfd, pl.name) < 0) {
		ret = fail(s, errno, path, len, "rename into place");
		goto unlink;
	}
	ret = 0;
	s->items = items;
	goto out;
unlink:
	rd_unlinkat(pl.pfd, tmp, 0);
out:
	free(tgt);
	return ret;
}

static void file_free(struct rd_sink_file *f)
{
	if (!f)
		return;
	if (f->tmpfd >= 0)
		close(f->tmpfd);
	if (f->exfd >= 0)
		close(f->exfd);
	if (f->ppfd >= 0)
		close(f->ppfd);
	rd_sink__part_release(f); /* a partial dir we made goes when left empty */
	if (f->pfd >= 0)
		close(f->pfd);
	free(f);
}

int rd_sink__ffail(struct rd_sink_file *f, int errnum, const char *what)
{
	return fail(f->s, errnum, f->path, f->path_len, what);
}

/* Temporary: O_TMPFILE in the parent, else a named O_EXCL file. */
static int tmp_open(struct rd_sink_file *f)
{
	int tries = 0;

	if (!(f->s->flags & RD_SINK_TEST_NO_TMPFILE)) {
		f->tmpfd = rd_openat(f->pfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (f->tmpfd >= 0)
			return 0;
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return rd_sink__ffail(f, errno, "create temporary for");
	}
	do {
		tmp_name(f->tmpname, f->name);
		f->tmpfd = rd_openat(f->pfd, f->tmpname,
				  O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC, 0600);
	} while (f->tmpfd < 0 && errno == EEXIST && ++tries < 8);
	if (f->tmpfd < 0)
		return rd_sink__ffail(f, errno, "create temporary for");
	f->named = 1;
	return 0;
}

int rd_sink_file_begin(struct rd_sink *s, const char *path, size_t len, int root,
		       const struct rd_sink_meta *m, struct rd_sink_file **out)
{
	struct rd_sink_file *f = NULL;
	struct place pl;
	struct stat st;
	unsigned items;
	int ret, ex;

	*out = NULL;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	ret = resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0)
		return ret;
	/* what is under the final name now: one look serves both checks below */
	ex = rd_fstatat(pl.pfd, pl.name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
	if (!ex && S_ISDIR(st.st_mode))
		return rd_err_set(&s->err, RD_ESYS, EISDIR, "%s", esc(s, path, len));
	items = ex || !S_ISREG(st.st_mode) ? RD_IT_NEW : rd_sink__attr_items(s, &st, m);
	if (m->size > (uint64_t)INT64_MAX)
		return rd_err_set(&s->err, RD_EPROTO, 0, "%s: bad size", esc(s, path, len));
	f = calloc(1, sizeof(*f));
	if (!f)
		return fail(s, ENOMEM, path, len, "open");
	f->s = s;
	f->tmpfd = f->exfd = f->ppfd = -1;
	f->m = *m;
	f->items = items;
	memcpy(f->path, path, len);
	f->path[len] = '\0';
	f->path_len = len;
	strcpy(f->name, pl.name);
	f->pfd = fcntl(pl.pfd, F_DUPFD_CLOEXEC, 0);
	if (f->pfd < 0) {
		ret = rd_sink__ffail(f, errno, "open");
		goto out;
	}
	ret = rd_sink__part_open(f);
	if (ret == 0)
		ret = tmp_open(f);
	if (ret < 0)
		goto out;
	ret = 0;
	/*
	 * An existing regular file under the final name is worth comparing
	 * against: all of it when it has the same size (then it may be kept
	 * as it is), else its chunks that it holds whole ("existing prefix":
	 * appended logs, grown images; only with chunking set). A resumed
	 * partial is newer than it.
	 */
	if (f->resumed) {
		/* a resumed partial is newer than any existing file */
	} else if (ex) {
		f->absent = ex == ENOENT; /* commit may link it straight there */
	} else if (!(s->flags & RD_SINK_FRESH) && S_ISREG(st.st_mode) &&
		   ((uint64_t)st.st_size == m->size || (s->part_chunk && st.st_size > 0))) {
		/* (RD_SINK_FRESH, a write-only module: nothing there is compared) */
		f->exfd = rd_openat(f->pfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
		if (f->exfd >= 0 && (fstat(f->exfd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(f->exfd);
			f->exfd = -1;
		}
		if (f->exfd >= 0)
			f->ex_size = (uint64_t)st.st_size;
	}
	/* a partial has its size from the start (its record says so); commit sizes the others */
	if (f->part && ftruncate(f->tmpfd, (off_t)m->size) < 0) {
		ret = rd_sink__ffail(f, errno, "size");
		goto out;
	}
out:
	if (ret < 0)
		rd_sink_file_abort(f);
	else
		*out = f;
	return ret;
}

unsigned rd_sink_file_items(const struct rd_sink_file *f)
{
	return f ? f->items : 0;
}

int rd_sink_file_has_existing(const struct rd_sink_file *f)
{
	return f && f->exfd >= 0 && f->ex_size == f->m.size;
}

int rd_sink_file_chunk_src(const struct rd_sink_file *f, uint64_t chunk)
{
	uint32_t cs = f->s->part_chunk;
	uint64_t off, end;

	if (f->part && f->resumed && rd_partial_has(f->part, chunk))
		return f->trusted ? RD_SINK_CHUNK_TRUSTED : RD_SINK_CHUNK_PARTIAL;
	if (f->exfd < 0 || !cs)
		return RD_SINK_CHUNK_NONE;
	off = chunk * cs;
	end = off + cs < f->m.size ? off + cs : f->m.size;
	return off < end && end <= f->ex_size ? RD_SINK_CHUNK_EXISTING : RD_SINK_CHUNK_NONE;
}

int rd_sink_file_resumed(const struct rd_sink_file *f)
{
	return f && f->resumed;
}

const char *rd_sink_file_note(const struct rd_sink_file *f)
{
	return f && f->note[0] ? f->note : NULL;
}

void rd_sink_file_chunk_done(struct rd_sink_file *f, uint64_t chunk, int ok)
{
	if (!f->part)
		return;
	rd_partial_mark(f->part, chunk, ok);
	/* Best effort: a record that cannot be written leaves the old one. */
	if (ok)
		rd_partial_flush(f->part, f->tmpfd, 0);
}

/* Is [off, off + len) outside the file's announced size? */
static int past_end(const struct rd_sink_file *f, size_t len, uint64_t off)
{
	return off > f->m.size || len > f->m.size - off;
}

static int range_ok(struct rd_sink_file *f, size_t len, uint64_t off)
{
	if (past_end(f, len, off))
		return rd_err_set(&f->s->err, RD_EPROTO, 0, "%s: range past the end of the file",
				  esc(f->s, f->path, f->path_len));
	return 0;
}

/*
 * Read len bytes at off of the existing file (existing = 1) or of the
 * partial: touches only the file's descriptors, so a worker may call it;
 * 0 or -errno: -ERANGE past the end, -EBADF no existing file, -ENODATA it
 * shrank under us. rd_sink_file_read_error() makes the message.
 */
int rd_sink_file_pread(const struct rd_sink_file *f, int existing, void *buf, size_t len,
		       uint64_t off)
{
	int fd = existing ? f->exfd : f->tmpfd;
	char *p = buf;
	ssize_t r;

	if (existing && fd < 0)
		return -EBADF;
	if (past_end(f, len, off))
		return -ERANGE;
	if (existing && off + len > f->ex_size)
		return -ENODATA;
	while (len) {
		r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int rd_sink_file_read_error(struct rd_sink_file *f, int existing, int errnum)
{
	const char *which = existing ? "existing" : "partial";

	switch (errnum) {
	case 0:
		return 0;
	case EBADF:
		return rd_err_set(&f->s->err, RD_EUSAGE, 0, "%s: no existing file",
				  esc(f->s, f->path, f->path_len));
	case ERANGE:
		return rd_err_set(&f->s->err, RD_EPROTO, 0, "%s: range past the end of the file",
				  esc(f->s, f->path, f->path_len));
	case ENODATA:
		return rd_err_set(&f->s->err, RD_ESYS, 0, "%s: %s file shrank",
				  esc(f->s, f->path, f->path_len), which);
	default:
		return rd_sink__ffail(f, errnum, existing ? "read existing" : "read partial of");
	}
}

int rd_sink_file_read_existing(struct rd_sink_file *f, void *buf, size_t len, uint64_t off)
{
	return rd_sink_file_read_error(f, 1, -rd_sink_file_pread(f, 1, buf, len, off));
}

int rd_sink_file_read_partial(struct rd_sink_file *f, void *buf, size_t len, uint64_t off)
{
	return rd_sink_file_read_error(f, 0, -rd_sink_file_pread(f, 0, buf, len, off));
}

int rd_sink_file_write(struct rd_sink_file *f, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	ssize_t r;

	if (range_ok(f, len, off) < 0)
		return -RD_EPROTO;
	while (len) {
		r = pwrite(f->tmpfd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rd_sink__ffail(f, errno, "write");
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int rd_sink_file_pwrite(struct rd_sink_file *f, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	uint64_t at = off;
	size_t left = len;
	ssize_t r;

	if (past_end(f, len, off))
		return -ERANGE;
	while (left) {
		r = pwrite(f->tmpfd, p, left, (off_t)at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		left -= (size_t)r;
		at += (uint64_t)r;
	}
	/* best effort: a file system without it just writes back later */
	if (len)
		sync_file_range(f->tmpfd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
	return 0;
}

int rd_sink_file_write_error(struct rd_sink_file *f, int errnum)
{
	if (errnum == ERANGE)
		return rd_err_set(&f->s->err, RD_EPROTO, 0, "%s: range past the end of the file",
				  esc(f->s, f->path, f->path_len));
	return rd_sink__ffail(f, errnum, "write");
}

int rd_sink_file_copy_existing(struct rd_sink_file *f, uint64_t off, size_t len)
{
	char buf[16384];
	loff_t in = (loff_t)off, o = (loff_t)off;
	ssize_t r;
	int ret;

	if (f->exfd < 0)
		return rd_err_set(&f->s->err, RD_EUSAGE, 0, "%s: no existing file",
				  esc(f->s, f->path, f->path_len));
	if (range_ok(f, len, off) < 0)
		return -RD_EPROTO;
	while (len) {
		r = copy_file_range(f->exfd, &in, f->tmpfd, &o, len, 0);
		if (r > 0) {
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return rd_err_set(&f->s->err, RD_ESYS, 0, "%s: existing file shrank",
					  esc(f->s, f->path, f->path_len));
		if (errno == EINTR)
			continue;
		if (errno == ENOSPC || errno == EDQUOT || errno == EIO)
			return rd_sink__ffail(f, errno, "copy existing");
		/* EXDEV, EINVAL, ENOSYS, EOPNOTSUPP...: copy through a buffer */
		r = (ssize_t)(len < sizeof(buf) ? len : sizeof(buf));
		ret = rd_sink_file_read_existing(f, buf, (size_t)r, (uint64_t)in);
		if (ret < 0)
			return ret;
		ret = rd_sink_file_write(f, buf, (size_t)r, (uint64_t)o);
		if (ret < 0)
			return ret;
		in += r;
		o += r;
		len -= (size_t)r;
	}
	return 0;
}

/* Owner, mode, times on fd: chown first, it would clear setuid bits. */
static int apply_meta(struct rd_sink_file *f, int fd)
{
	struct timespec ts[2];

	if (chown_meta(f->s, fd, NULL, &f->m) < 0)
		return rd_sink__ffail(f, errno, "chown");
	if (rd_fchmod(fd, final_mode(f->s, &f->m)) < 0)
		return rd_sink__ffail(f, errno, "chmod");
	if (f->s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(&f->m, ts);
		if (rd_futimens(fd, ts) < 0)
			return rd_sink__ffail(f, errno, "set times of");
	}
	return 0;
}

/* Link the O_TMPFILE inode as name in the parent (-errno: EEXIST if taken). */
static int link_tmp(struct rd_sink_file *f, const char *name)
{
	char proc[64];
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->tmpfd);
	r = rd_linkat(AT_FDCWD, proc, f->pfd, name, AT_SYMLINK_FOLLOW);
	if (r < 0 && errno == ENOENT)
		r = rd_linkat(f->tmpfd, "", f->pfd, name, AT_EMPTY_PATH);
	return r < 0 ? -errno : 0;
}

/* Give the O_TMPFILE inode a temporary name (linkat cannot replace). */
static int tmp_link(struct rd_sink_file *f)
{
	int tries = 0, r;

	do {
		tmp_name(f->tmpname, f->name);
		r = link_tmp(f, f->tmpname);
	} while (r == -EEXIST && ++tries < 8);
	if (r < 0)
		return rd_sink__ffail(f, -r, "link temporary of");
	f->named = 1;
	return 0;
}

/* Everything but the name: size, the data to disk (fsync_now: alone), metadata. */
static int seal(struct rd_sink_file *f, int fsync_now)
{
	int ret;

	if (f->sealed)
		return 0;
	if (ftruncate(f->tmpfd, (off_t)f->m.size) < 0)
		return rd_sink__ffail(f, errno, "size");
	if (fsync_now && fsync(f->tmpfd) < 0)
		return rd_sink__ffail(f, errno, "fsync");
	ret = apply_meta(f, f->tmpfd);
	if (ret < 0)
		return ret;
	f->sealed = 1;
	return 0;
}

int rd_sink_file_seal(struct rd_sink_file *f)
{
	return seal(f, 0);
}

int rd_sink_sync(struct rd_sink *s)
{
	if (syncfs(s->dest_fd) < 0)
		return rd_err_set(&s->err, sys_status(errno), errno, "%s: syncfs", s->dest_esc);
	return 0;
}

int rd_sink_wants_sync(const struct rd_sink *s)
{
	return !!(s->flags & RD_SINK_FSYNC);
}

int rd_sink_file_commit(struct rd_sink_file *f, int keep_existing)
{
	struct rd_sink *s = f->s;
	int batched = f->sealed, ret;

	if (keep_existing) {
		if (f->exfd < 0) {
			ret = rd_err_set(&s->err, RD_EUSAGE, 0, "%s: no existing file to keep",
					 esc(s, f->path, f->path_len));
			goto out;
		}
		ret = apply_meta(f, f->exfd);
		if (!ret)
			rd_sink__link_record(f, f->exfd);
		if (!ret && f->part) {
			rd_partial_remove(f->part, 1); /* identical: the partial is litter */
			rd_partial_free(f->part);
			f->part = NULL;
			f->named = 0;
		}
		goto out;
	}
	ret = seal(f, !!(s->flags & RD_SINK_FSYNC));
	if (ret < 0)
		goto out;
	if (!f->named && f->absent) {
		/* nothing was there: the complete file takes its name at once */
		ret = link_tmp(f, f->name);
		if (!ret)
			goto placed;
		if (ret != -EEXIST) {
			ret = rd_sink__ffail(f, -ret, "link into place");
			goto out;
		}
	}
	if (!f->named) {
		ret = tmp_link(f);
		if (ret < 0)
			goto out;
	}
	ret = not_a_dir(s, &(struct place){.pfd = f->pfd, .name = f->name}, f->path, f->path_len);
	if (ret < 0)
		goto out;
	if (rd_renameat(f->part && f->ppfd >= 0 ? f->ppfd : f->pfd, f->tmpname, f->pfd,
			f->name) < 0) {
		ret = rd_sink__ffail(f, errno, "rename into place");
		goto out;
	}
	f->named = 0; /* the temporary name is gone */
placed:
	ret = 0;
	rd_sink__link_record(f, f->tmpfd);
	if (f->part) {
		rd_partial_remove(f->part, 0); /* its data is the final file now */
		rd_partial_free(f->part);
		f->part = NULL;
	}
	/* sealed for a batch: the caller syncs the filesystem once for all */
	if (!batched && (s->flags & RD_SINK_FSYNC) && fsync(f->pfd) < 0)
		ret = rd_sink__ffail(f, errno, "fsync directory of");
out:
	rd_sink_file_abort(f);
	return ret;
}

void rd_sink_file_abort(struct rd_sink_file *f)
{
	if (!f)
		return;
	if (f->part) {
		/* Keep what was verified, and the record that says so. */
		if (f->named && rd_partial_empty(f->part))
			rd_partial_remove(f->part, 1); /* nothing verified: no litter */
		else if (f->named) {
			rd_partial_trim(f->part, f->tmpfd);
			rd_partial_flush(f->part, f->tmpfd, 1);
		}
		rd_partial_free(f->part);
	} else if (f->named && f->pfd >= 0) {
		rd_unlinkat(f->pfd, f->tmpname, 0);
	}
	file_free(f);
}

/* Errors of a handle live on its sink: commit and abort free the handle. */
const struct rd_err *rd_sink_file_err(const struct rd_sink_file *f)
{
	return f ? &f->s->err : NULL;
}

/*
 * Doors for rd_sink_meta.c (declared in rd_sink_priv.h): the confinement
 * and naming rules stay in this file, the metadata code in its own.
 */
struct rd_err *rd_sink__err(struct rd_sink *s)
{
	return &s->err;
}

unsigned rd_sink__flags(const struct rd_sink *s)
{
	return s->flags;
}

const char *rd_sink__esc(struct rd_sink *s, const char *p, size_t len)
{
	return esc(s, p, len);
}

int rd_sink__fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what)
{
	return fail(s, errnum, p, len, what);
}

void rd_sink__tmp_name(char *out, const char *name)
{
	tmp_name(out, name);
}

/* Open the directory path (made by rd_sink_mkdir): fd, or a negative status. */
int rd_sink__open_dir(struct rd_sink *s, const char *path, size_t len, int root)
{
	struct place pl;
	int ret, fd;

	ret = resolve(s, path, len, post_how(s, root), &pl);
	if (ret < 0)
		return ret;
	fd = open_dir_beneath(s, pl.pfd, pl.name, 0);
	if (fd < 0)
		return fail(s, errno, path, len, "open directory");
	return fd;
}

/*
 * Where path lands: *pfd gets a dup of its parent (the caller closes it),
 * name its last component. A directory under that name is refused.
 */
int rd_sink__place(struct rd_sink *s, const char *path, size_t len, int root, int *pfd,
		   char name[NAME_MAX + 1])
{
	struct place pl;
	int ret;

	*pfd = -1;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	ret = resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0)
		return ret;
	ret = not_a_dir(s, &pl, path, len);
	if (ret < 0)
		return ret;
	*pfd = fcntl(pl.pfd, F_DUPFD_CLOEXEC, 0);
	if (*pfd < 0)
		return fail(s, errno, path, len, "open parent of");
	snprintf(name, NAME_MAX + 1, "%s", pl.name);
	return 0;
}

/* Owner, then mode (through an O_PATH descriptor: never a followed name), then times. */
int rd_sink__node_meta(struct rd_sink *s, int pfd, const char *name, const struct rd_sink_meta *m,
		       const char *path, size_t len)
{
	struct timespec ts[2];
	char proc[64];
	int fd, ret = 0;

	if (chown_meta(s, pfd, name, m) < 0)
		return fail(s, errno, path, len, "chown");
	fd = rd_openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fail(s, errno, path, len, "open");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (rd_fchmodat(AT_FDCWD, proc, final_mode(s, m), 0) < 0) {
		ret = fail(s, errno, path, len, "chmod");
		goto out;
	}
	if (s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(m, ts);
		if (rd_utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			ret = fail(s, errno, path, len, "set times of");
	}
out:
	close(fd);
	return ret;
}

int rd_sink__file_fd(const struct rd_sink_file *f)
{
	return f->tmpfd;
}

struct rd_sink *rd_sink__file_sink(struct rd_sink_file *f)
{
	return f->s;
}

const char *rd_sink__file_path(const struct rd_sink_file *f, size_t *len)
{
	*len = f->path_len;
	return f->path;
}
