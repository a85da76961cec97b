// SPDX-License-Identifier: MIT
/*
 * A walk's view of the filter rules: the list, with the per-directory
 * merge files (':' rules) of every directory the walk is in stacked where
 * their ':' rule stands (rsync.1, MERGE-FILE FILTER RULES): the deepest
 * directory's rules first, then its parents' that are inherited (not 'n'),
 * up to a file that cleared them ('!'). An anchored rule of a merge file
 * ("/foo") is anchored at the file's directory.
 *
 * Merge files are opened beneath the directory's descriptor by one name,
 * never following a symlink, and read whole up to RD_FILTER_MERGE_MAX
 * bytes; a walk holds at most RD_FILTER_WALK_RULES of their rules. Inside
 * a merge file, rules that name files ('.', ':') are refused: on a server
 * the file's author is not the client.
 */
#include "lib/filter/rd_filter_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/base/rd_fsid.h"

#define MERGES_MAX 32 /* ':' rules in one list */

struct lrule {
	struct rd_rule r;
	unsigned merge; /* its ':' rule: the walk's k-th (merges[k] in the list) */
};

struct level {
	struct lrule *rules;
	unsigned n;
	uint32_t cleared; /* bit k: its file for the k-th ':' rule said '!' */
	size_t path_len;  /* this directory's transfer path ("": the root, 0) */
	char *below;	  /* a parent of the transfer root: the path from it down, else NULL */
};

struct rd_filter_walk {
	const struct rd_filter *f;
	struct level *lv;
	unsigned depth, cap;
	unsigned held; /* rules of all levels */
	unsigned merges[MERGES_MAX];
	unsigned nmerges;
	char rel[2 * RD_FILTER_RULE_LEN + 8];
};

int rd_filter_walk_new(struct rd_filter_walk **out, const struct rd_filter *f, struct rd_err *err)
{
	struct rd_filter_walk *w = calloc(1, sizeof(*w));
	unsigned i;

	*out = NULL;
	if (!w)
		return rd_err_set(err, RD_ENOMEM, 0, "filter walk");
	w->f = f;
	for (i = 0; f && i < f->n; i++) {
		if (!(f->rules[i].flags & R_DIR_MERGE))
			continue;
		if (w->nmerges == MERGES_MAX) {
			free(w);
			return rd_err_set(err, RD_EUSAGE, 0,
					  "more than %d per-directory merge rules", MERGES_MAX);
		}
		w->merges[w->nmerges++] = i;
	}
	*out = w;
	return 0;
}

static void level_free(struct rd_filter_walk *w, struct level *l)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		rd_rule_free(&l->rules[i].r);
	w->held -= l->n;
	free(l->rules);
	free(l->below);
	memset(l, 0, sizeof(*l));
}

void rd_filter_walk_free(struct rd_filter_walk *w)
{
	if (!w)
		return;
	while (w->depth)
		rd_filter_leave(w);
	free(w->lv);
	free(w);
}

/* The merge file name beneath fd, whole (bounded): 0, 1 when there is none, or < 0. */
static int read_merge(int fd, const char *name, char **buf, size_t *len, struct rd_err *err)
{
	struct stat st;
	ssize_t r;
	size_t got = 0;
	int mf, ret = 0;

	*buf = NULL;
	mf = rd_openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
	if (mf < 0)
		return errno == ENOENT ? 1 : rd_err_set(err, RD_ESYS, errno, "merge file %s", name);
	if (fstat(mf, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = rd_err_set(err, RD_ESYS, 0, "merge file %s: not a regular file", name);
		goto out;
	}
	if ((uint64_t)st.st_size > RD_FILTER_MERGE_MAX) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "merge file %s: larger than %u bytes", name,
				 RD_FILTER_MERGE_MAX);
		goto out;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		ret = rd_err_set(err, RD_ENOMEM, 0, "merge file %s", name);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		r = read(mf, *buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	*len = got;
out:
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	close(mf);
	return ret;
}

static int level_add(struct rd_filter_walk *w, struct level *l, unsigned merge, const char *s,
		     size_t n, unsigned dflt, const char *file, struct rd_err *err)
{
	struct lrule x;
	int ret = rd_rule_parse(&x.r, s, n, dflt, 0, err);
	char e[128];
	unsigned k;

	if (ret)
		return ret > 0 ? 0 : ret;
	if (x.r.flags & R_CLEAR) {
		/* clears what this file said so far and what its parents' say */
		for (k = 0; k < l->n;) {
			if (l->rules[k].merge == merge) {
				rd_rule_free(&l->rules[k].r);
				memmove(&l->rules[k], &l->rules[k + 1],
					(l->n - k - 1) * sizeof(l->rules[0]));
				l->n--;
				w->held--;
			} else {
				k++;
			}
		}
		rd_rule_free(&x.r);
		l->cleared |= 1u << merge;
		return 0;
	}
	if (x.r.flags & (R_MERGE | R_DIR_MERGE)) {
		rd_rule_free(&x.r);
		rd_escape(e, sizeof(e), file, strlen(file));
		return rd_err_set(err, RD_EUSAGE, 0,
				  "merge file %s: merge rules inside a per-directory file are not "
				  "supported",
				  e);
	}
	if (w->held >= RD_FILTER_WALK_RULES) {
		rd_rule_free(&x.r);
		return rd_err_set(err, RD_EUSAGE, 0,
				  "more than %d rules from per-directory merge files at once",
				  RD_FILTER_WALK_RULES);
	}
	x.merge = merge;
	l->rules[l->n++] = x;
	w->held++;
	return 0;
}

/* The k-th ':' rule's file in the directory fd, into level l. */
static int load(struct rd_filter_walk *w, struct level *l, int fd, unsigned k, struct rd_err *err)
{
	const struct rd_rule *d = &w->f->rules[w->merges[k]];
	unsigned dflt = d->flags & (R_M_EXCLUDES | R_M_INCLUDES | R_SENDER | R_RECEIVER | R_PERISH);
	const char *p, *end, *e;
	char *buf;
	size_t len = 0, n, room;
	struct lrule *more;
	int ret = read_merge(fd, d->pattern, &buf, &len, err);

	if (ret)
		return ret > 0 ? 0 : ret;
	/* a rule takes two bytes at least (and the walk holds a bounded number) */
	room = len / 2 + 2;
	if (room > RD_FILTER_WALK_RULES - w->held + 1)
		room = RD_FILTER_WALK_RULES - w->held + 1;
	more = realloc(l->rules, (l->n + room) * sizeof(*more));
	if (!more) {
		free(buf);
		return rd_err_set(err, RD_ENOMEM, 0, "merge file %s", d->pattern);
	}
	l->rules = more;
	for (p = buf, end = buf + len; p < end && !ret; p = e + 1) {
		if (d->flags & R_M_WORDS) {
			while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
				p++;
			for (e = p; e < end && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r';)
				e++;
			n = (size_t)(e - p);
		} else {
			e = memchr(p, '\n', (size_t)(end - p));
			if (!e)
				e = end;
			n = (size_t)(e - p);
			if (n && p[n - 1] == '\r')
				n--;
			if (n && *p == '#')
				continue; /* a whole-line comment */
		}
		if (n)
			ret = level_add(w, l, k, p, n, dflt, d->pattern, err);
	}
	free(buf);
	return ret;
}

static int push(struct rd_filter_walk *w, int fd, size_t path_len, const char *below, size_t blen,
		struct rd_err *err)
{
	struct level *l;
	unsigned k;
	int ret = 0;

	if (w->depth == w->cap) {
		unsigned cap = w->cap ? w->cap * 2 : 16;
		struct level *n = realloc(w->lv, cap * sizeof(*n));

		if (!n)
			return rd_err_set(err, RD_ENOMEM, 0, "filter walk");
		w->lv = n;
		w->cap = cap;
	}
	l = &w->lv[w->depth++];
	memset(l, 0, sizeof(*l));
	l->path_len = path_len;
	if (below) {
		l->below = strndup(below, blen);
		if (!l->below) {
			w->depth--;
			return rd_err_set(err, RD_ENOMEM, 0, "filter walk");
		}
	}
	for (k = 0; k < w->nmerges && !ret; k++)
		ret = load(w, l, fd, k, err);
	if (ret)
		rd_filter_leave(w); /* a failed enter leaves nothing behind */
	return ret;
}

int rd_filter_enter(struct rd_filter_walk *w, int fd, const char *path, size_t len,
		    struct rd_err *err)
{
	(void)path;
	return push(w, fd, len, NULL, 0, err);
}

int rd_filter_wants_parents(const struct rd_filter *f)
{
	unsigned i;

	for (i = 0; f && i < f->n; i++)
		if ((f->rules[i].flags & (R_DIR_MERGE | R_M_PARENTS)) ==
		    (R_DIR_MERGE | R_M_PARENTS))
			return 1;
	return 0;
}

int rd_filter_enter_parent(struct rd_filter_walk *w, int fd, const char *below, size_t blen,
			   struct rd_err *err)
{
	return push(w, fd, 0, below, blen, err);
}

int rd_filter_enter_parents(struct rd_filter_walk *w, int top, const char *rel, int contents,
			    unsigned *entered, struct rd_err *err)
{
	const char *p = rel, *slash, *troot_end;
	int fd, nfd, ret = 0;

	if (!rd_filter_wants_parents(w->f))
		return 0;
	while (*p == '/')
		p++;
	troot_end = contents ? p + strlen(p) : strrchr(p, '/');
	if (!troot_end)
		troot_end = p; /* a name right beneath top: top is the transfer root */
	fd = top >= 0 ? fcntl(top, F_DUPFD_CLOEXEC, 0)
		      : open("/", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_DIRECTORY);
	while (fd >= 0 && !ret) {
		ret = rd_filter_enter_parent(w, fd, p, p < troot_end ? (size_t)(troot_end - p) : 0,
					     err);
		if (!ret)
			(*entered)++;
		/*
		 * the next is the source itself: stop (a source named by itself
		 * lies in its transfer root, which is read too, as rsync does)
		 */
		slash = strchr(p, '/');
		if (!slash || (contents && !*(slash + 1)))
			break;
		{
			char comp[NAME_MAX + 1];
			size_t n = (size_t)(slash - p);

			if (n > NAME_MAX)
				break;
			memcpy(comp, p, n);
			comp[n] = '\0';
			nfd = rd_openat(fd, comp,
					O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_DIRECTORY |
					    O_NOFOLLOW,
					0);
			close(fd);
			fd = nfd;
		}
		p = slash + 1;
		while (*p == '/')
			p++;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

void rd_filter_leave(struct rd_filter_walk *w)
{
	if (w->depth)
		level_free(w, &w->lv[--w->depth]);
}

/* path as the level's anchored rules see it: from its directory */
static const char *level_rel(struct rd_filter_walk *w, const struct level *l, const char *path,
			     size_t len, size_t *rlen)
{
	size_t bl;

	if (l->below && l->below[0]) {
		bl = strlen(l->below);
		if (bl + 1 + len >= sizeof(w->rel))
			return NULL;
		memcpy(w->rel, l->below, bl);
		w->rel[bl] = '/';
		memcpy(w->rel + bl + 1, path, len);
		*rlen = bl + 1 + len;
		return w->rel;
	}
	if (!l->path_len) {
		*rlen = len;
		return path;
	}
	if (len <= l->path_len + 1)
		return NULL;
	*rlen = len - l->path_len - 1;
	return path + l->path_len + 1;
}

/* The k-th ':' rule's files, deepest first: 1 excluded, 0 included, -1 no rule matched. */
static int check_merge(struct rd_filter_walk *w, unsigned k, const char *path, size_t len,
		       int is_dir, unsigned side)
{
	const struct rd_rule *d = &w->f->rules[w->merges[k]];
	unsigned lvl, i;
	const char *p;
	size_t n;

	for (lvl = w->depth; lvl-- > 0;) {
		struct level *l = &w->lv[lvl];

		/* 'n': the file's rules are for its own directory's entries */
		if ((d->flags & R_M_NOINHERIT) && lvl != w->depth - 1)
			continue;
		for (i = 0; i < l->n; i++) {
			const struct rd_rule *r = &l->rules[i].r;

			if (l->rules[i].merge != k || !rd_rule_on_side(r, w->f->flags, side))
				continue;
			p = path;
			n = len;
			if (r->pattern[0] == '/') {
				p = level_rel(w, l, path, len, &n);
				if (!p)
					continue;
			}
			if (rd_rule_matches(r, p, n, is_dir))
				return (r->flags & R_INCLUDE) ? 0 : 1;
		}
		if (l->cleared & (1u << k))
			break; /* "!" there: what its parents said does not reach below it */
	}
	return -1;
}

int rd_filter_excluded(struct rd_filter_walk *w, const char *path, size_t len, int is_dir,
		       unsigned side)
{
	const struct rd_filter *f = w->f;
	unsigned i, k = 0;
	int m;

	for (i = 0; f && i < f->n; i++) {
		const struct rd_rule *r = &f->rules[i];

		if (r->flags & R_DIR_MERGE) {
			m = check_merge(w, k++, path, len, is_dir, side);
			if (m >= 0)
				return m;
			continue;
		}
		if (!rd_rule_on_side(r, f->flags, side))
			continue;
		if (rd_rule_matches(r, path, len, is_dir))
			return (r->flags & R_INCLUDE) ? 0 : 1;
	}
	return 0;
}
