// SPDX-License-Identifier: MIT
/*
 * --delete on the receiving side: which directories are cleaned, when,
 * and what stops it; see rd_sink_mirror.h and docs/DESIGN.md.
 */
#include "lib/sink/rd_sink_mirror.h"
#include "lib/base/rd_fsid.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink_delete.h"
#include "lib/sink/rd_sink_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One directory of the transfer: open (its entry came), or its POST came. */
struct mframe {
	struct mframe *next; /* open: the one around it; POSTs: the next one */
	uint32_t id;	     /* its entry's */
	uint32_t post_id;
	int root;	/* the entry calls' root flags */
	int top;	/* a source's root directory (RD_FF_ROOT), or what -R names */
	int implied;	/* not listed (RD_FF_IMPLIED): nothing deleted in it */
	size_t base;	/* rel's bytes that are its source's root (merge files below) */
	int placed;	/* made or found a directory at its entry: dev, ino */
	int incomplete; /* the sender lost something in it: keep its extras */
	dev_t dev;
	ino_t ino;
	char *wire; /* its wire path */
	size_t wlen;
	char *rel; /* below the destination ("" the destination itself) */
	struct rd_del_names names;
};

/* Extras found, waiting for the end (AFTER, max_delete). */
struct pend {
	char *wire, *rel;
	size_t wlen, base;
	int root;
	dev_t dev;
	ino_t ino;
	struct rd_sink_meta meta;
	struct rd_del_names extras;
};

/*
 * A file verified under its temporary name in a directory of the
 * transfer, waiting for the end (late_room, max_delete) to have the full
 * directory in its way removed in rsync's order.
 */
struct room {
	char *pwire; /* its directory, as placed */
	size_t pwlen;
	int proot;
	dev_t dev;
	ino_t ino;
	size_t base;	    /* its directory's (merge files) */
	char *dirrel, *rel; /* its directory and itself below the destination */
	char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
};

struct rd_sink_mir {
	struct rd_mirror_opts o;
	struct rd_mirror_stats st;
	struct rd_del *d;
	struct rd_sink *s;
	struct mframe *open;	      /* innermost first */
	struct mframe *qhead, *qtail; /* POSTs seen, oldest first */
	unsigned depth;
	struct pend *pend;
	size_t npend, pcap;
	uint32_t last_failed; /* highest id that failed here (0: none) */
	struct room *rooms;
	size_t nrooms, rcap;
	/* the roots of sources that named their contents ("dir/"): they land as "" */
	unsigned ncroots;
	char croots[RD_OPEN_PATHS_MAX][NAME_MAX + 1];
	/* the directories entered for merge files (o.enter), outermost first */
	char **ent;
	size_t nent, ecap;
};

static void off(struct rd_sink_mir *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void off(struct rd_sink_mir *m, const char *fmt, ...)
{
	char text[RD_MSG_TEXT_MAX];
	va_list ap;

	if (m->st.off)
		return;
	m->st.off = 1;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (m->o.report)
		m->o.report(m->o.ctx, RD_DLF_OFF, "", 0, text);
}

static int d_protect(void *ctx, const char *rel, size_t len, int is_dir)
{
	struct rd_sink_mir *m = ctx;
	const char *base = memrchr(rel, '/', len);
	size_t blen;

	base = base ? base + 1 : rel;
	blen = len - (size_t)(base - rel);
	/* rdcp's own: partials, range records, temporaries, the partial dir */
	if (rd_path_reserved(base, blen))
		return 1;
	if (is_dir && m->s->part_dir[0] && strlen(m->s->part_dir) == blen &&
	    !memcmp(base, m->s->part_dir, blen))
		return 1;
	/* what backups own: rsync's "P *SUFFIX", a backup dir inside the destination */
	if (rd_sink_backup_protects(m->s, rel, len, is_dir))
		return 1;
	return m->o.protect ? m->o.protect(m->o.protect_ctx, rel, len, is_dir) : 0;
}

/* A directory being emptied: its merge files too, while it is */
static int d_enter(void *ctx, int fd, const char *rel, size_t len, char *msg, size_t msize)
{
	struct rd_sink_mir *m = ctx;
	struct rd_err err;
	int ret;

	rd_err_clear(&err);
	ret = m->o.enter(m->o.protect_ctx, fd, rel, len, &err);
	if (ret)
		snprintf(msg, msize, "%s", err.msg);
	return ret;
}

static void d_leave(void *ctx)
{
	struct rd_sink_mir *m = ctx;

	m->o.leave(m->o.protect_ctx);
}

/* --backup: a deleted non-directory is kept as its backup (rd_sink_backup_deleted) */
static int d_backup(void *ctx, int dirfd, const char *name, const char *rel, size_t len)
{
	struct rd_sink_mir *m = ctx;
	int ret = rd_sink_backup_deleted(m->s, dirfd, name, rel);

	if (ret < 0 && m->o.report)
		m->o.report(m->o.ctx, RD_DLF_FAILED, rel, len, rd_sink_err(m->s)->msg);
	return ret;
}

static void d_deleted(void *ctx, const char *rel, size_t len, int is_dir)
{
	struct rd_sink_mir *m = ctx;

	m->st.deleted++;
	if (m->o.report)
		m->o.report(m->o.ctx, is_dir ? RD_DLF_DIR : 0, rel, len, NULL);
}

static void d_problem(void *ctx, const char *rel, size_t len, int status, const char *msg)
{
	struct rd_sink_mir *m = ctx;

	if (status < 0)
		m->st.failed++;
	if (m->o.report)
		m->o.report(m->o.ctx, RD_DLF_FAILED, rel, len, msg);
}

int rd_sink_mirror_start(struct rd_sink *s, const struct rd_mirror_opts *o)
{
	struct rd_sink_mir *m;
	struct rd_del_opts d;
	int ret;

	if (s->mir)
		return -RD_EUSAGE;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -RD_ENOMEM;
	m->o = *o;
	m->s = s;
	if (!m->o.delete)
		m->o.max_delete = -1;
	memset(&d, 0, sizeof(d));
	d.flags = o->dry_run ? RD_DEL_DRY_RUN : 0;
	d.max_delete = m->o.max_delete;
	d.mem_max = o->mem_max;
	d.ops.protect = d_protect;
	d.ops.deleted = d_deleted;
	d.ops.problem = d_problem;
	if (rd_sink_backups_on(s))
		d.ops.backup = d_backup;
	if (o->enter && o->leave) {
		d.ops.enter = d_enter;
		d.ops.leave = d_leave;
	}
	d.ctx = m;
	ret = rd_del_new(&m->d, &d);
	if (ret) {
		free(m);
		return ret;
	}
	s->mir = m;
	return 0;
}

int rd_sink_mirror_on(const struct rd_sink *s)
{
	return s->mir && s->mir->o.delete;
}

static void frame_free(struct rd_sink_mir *m, struct mframe *f)
{
	if (!f)
		return;
	rd_del_names_free(m->d, &f->names);
	free(f->wire);
	free(f->rel);
	free(f);
}

static void pend_free(struct rd_sink_mir *m, struct pend *p)
{
	rd_del_names_free(m->d, &p->extras);
	free(p->wire);
	free(p->rel);
}

/* Leave the entered directories down to keep of them. */
static void merge_leave(struct rd_sink_mir *m, size_t keep)
{
	while (m->nent > keep) {
		free(m->ent[--m->nent]);
		if (m->o.leave)
			m->o.leave(m->o.protect_ctx);
	}
}

/*
 * Per-directory merge files: be in every directory of the transfer from
 * the source's root (rel's first base bytes) down to rel, whose
 * descriptor is fd (the others opened again beneath the destination by
 * their wire paths, as reopen does). 0, or < 0 with err set.
 */
static int merge_enter(struct rd_sink_mir *m, const char *wire, size_t wlen, int root,
		       const char *rel, size_t base, int fd, struct rd_err *err)
{
	size_t rlen = strlen(rel), ends[RD_PATH_MAX / 2 + 2], n = 0, k, i, wl, up;
	int dfd, ret = 0;

	if (!m->o.enter)
		return 0;
	/* the chain: rel's prefixes at component ends, from base on */
	ends[n++] = base;
	for (i = base + 1; i < rlen; i++)
		if (rel[i] == '/' && n < RD_PATH_MAX / 2 + 1)
			ends[n++] = i;
	if (rlen > base)
		ends[n++] = rlen;
	/* what is entered already and still on the way */
	for (k = 0; k < m->nent && k < n; k++)
		if (strlen(m->ent[k]) != ends[k] || memcmp(m->ent[k], rel, ends[k]))
			break;
	merge_leave(m, k);
	if (m->ecap < n) {
		char **ne = realloc(m->ent, n * sizeof(*ne));

		if (!ne)
			return rd_err_set(err, RD_ENOMEM, 0, "merge files");
		m->ent = ne;
		m->ecap = n;
	}
	for (i = k; i < n && !ret; i++) {
		/* its wire path: wire without as many trailing components as rel loses */
		wl = wlen;
		for (up = i + 1; up < n; up++) {
			const char *sl = memrchr(wire, '/', wl);

			wl = sl ? (size_t)(sl - wire) : 0;
		}
		dfd = i + 1 == n ? fd : rd_sink__open_dir(m->s, wire, wl, root);
		rd_err_clear(&m->s->err);
		if (dfd < 0)
			return rd_err_set(err, RD_ESYS, 0,
					  "%.*s: cannot open it again to read its merge files",
					  (int)ends[i], rel);
		m->ent[m->nent] = strndup(rel, ends[i]);
		if (!m->ent[m->nent])
			ret = rd_err_set(err, RD_ENOMEM, 0, "merge files");
		else if ((ret = m->o.enter(m->o.protect_ctx, dfd, rel, ends[i], err)))
			free(m->ent[m->nent]);
		else
			m->nent++;
		if (dfd != fd)
			close(dfd);
	}
	return ret;
}

static void room_free(struct room *r)
{
	free(r->pwire);
	free(r->dirrel);
	free(r->rel);
}

void rd_sink__mirror_free(struct rd_sink *s)
{
	struct rd_sink_mir *m = s->mir;
	struct mframe *f;
	size_t i;

	if (!m)
		return;
	while ((f = m->open)) {
		m->open = f->next;
		frame_free(m, f);
	}
	while ((f = m->qhead)) {
		m->qhead = f->next;
		frame_free(m, f);
	}
	for (i = 0; i < m->npend; i++)
		pend_free(m, &m->pend[i]);
	free(m->pend);
	merge_leave(m, 0);
	free(m->ent);
	/* a run that ends early leaves such a file under its temporary name: nothing lost */
	for (i = 0; i < m->nrooms; i++)
		room_free(&m->rooms[i]);
	free(m->rooms);
	rd_del_free(m->d);
	free(m);
	s->mir = NULL;
}

/* The first component of a wire path (len bytes). */
static size_t first_len(const char *path, size_t len)
{
	const char *sl = memchr(path, '/', len);

	return sl ? (size_t)(sl - path) : len;
}

/* Where a wire path lands, below the destination, as rsync names it: malloc'd. */
static char *rel_of(struct rd_sink_mir *m, const char *path, size_t len, int root)
{
	size_t fl = first_len(path, len), skip = 0;
	char *out;
	unsigned i;

	if (root & (int)RD_SINK_CONTENTS) {
		skip = rd_path_first_skip(path, len);
	} else {
		for (i = 0; i < m->ncroots; i++)
			if (strlen(m->croots[i]) == fl && !memcmp(m->croots[i], path, fl)) {
				skip = rd_path_first_skip(path, len);
				break;
			}
	}
	out = malloc(len - skip + 1);
	if (out) {
		memcpy(out, path + skip, len - skip);
		out[len - skip] = '\0';
	}
	return out;
}

/* The open directory whose wire path is path (len), or NULL. */
static struct mframe *open_at(struct rd_sink_mir *m, const char *path, size_t len)
{
	struct mframe *f;

	for (f = m->open; f; f = f->next)
		if (f->wlen == len && !memcmp(f->wire, path, len))
			return f;
	return NULL;
}

static void placed(struct rd_sink *s, struct mframe *f)
{
	struct stat st;
	int fd = rd_sink__open_dir(s, f->wire, f->wlen, f->root);

	rd_err_clear(&s->err);
	if (fd < 0)
		return; /* a dry run's directory that would be made, or it failed */
	if (!fstat(fd, &st)) {
		f->placed = 1;
		f->dev = st.st_dev;
		f->ino = st.st_ino;
	}
	close(fd);
}

int rd_sink_mirror_entry(struct rd_sink *s, uint32_t id, const char *path, size_t len, int root,
			 int is_dir, int made)
{
	struct rd_sink_mir *m = s->mir;
	const char *sl = memrchr(path, '/', len);
	struct mframe *f, *parent;
	int ret, implied = !!(root & (int)RD_SINK_IMPLIED);

	root &= ~(int)RD_SINK_IMPLIED;
	if (!m || !m->o.delete || m->st.off)
		return 0;
	/* pop nothing here: a POST closes its directory */
	parent = sl ? open_at(m, path, (size_t)(sl - path)) : NULL;
	if (parent && parent != m->open)
		return rd_err_set(&s->err, RD_EPROTO, 0,
				  "%s arrived before the POST of a directory beside it",
				  rd_sink__esc(s, path, len));
	if (parent) {
		ret = rd_del_names_add(m->d, &parent->names, sl + 1, len - (size_t)(sl + 1 - path),
				       is_dir ? RD_DEL_N_DIR : 0);
		if (ret == -RD_EPROTO)
			return rd_err_set(&s->err, RD_EPROTO, 0, "a name that cannot be: %s",
					  rd_sink__esc(s, path, len));
		if (ret) {
			off(m,
			    "too many names to keep for --delete (over %zu MiB): deleting "
			    "nothing more",
			    (m->o.mem_max ? m->o.mem_max : RD_DEL_MEM_MAX) >> 20);
			return 0;
		}
	}
	if (!is_dir)
		return 0;
	if ((root & (int)RD_SINK_ROOT) && (root & (int)RD_SINK_CONTENTS) && !sl &&
	    m->ncroots < RD_OPEN_PATHS_MAX && len <= NAME_MAX) {
		memcpy(m->croots[m->ncroots], path, len);
		m->croots[m->ncroots++][len] = '\0';
	}
	/* a directory of the transfer: a source root, or inside the open one */
	if (!(root & (int)RD_SINK_ROOT) && !parent)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->wire = malloc(len + 1)) || !(f->rel = rel_of(m, path, len, root))) {
		frame_free(m, f);
		off(m, "out of memory for --delete: deleting nothing more");
		return 0;
	}
	memcpy(f->wire, path, len);
	f->wire[len] = '\0';
	f->wlen = len;
	f->id = id;
	f->root = root;
	f->implied = implied;
	/*
	 * a source: a top-level directory, or (-R, --files-from) one named
	 * below directories the sender only implied
	 */
	f->top = !implied && ((root & (int)RD_SINK_ROOT) || (parent && parent->implied));
	/* merge files are read from the source's root down (rsync's receiver) */
	f->base = f->top || !parent ? strlen(f->rel) : parent->base;
	rd_del_names_init(&f->names);
	if (made)
		placed(s, f);
	f->next = m->open;
	m->open = f;
	m->depth++;
	return 0;
}

/* Directories as rsync lists them: each path as "path/", bytewise; "" (the root) first. */
static int rsync_order(const char *a, const char *b)
{
	size_t i;
	int ca, cb;

	if (!*a || !*b)
		return *a ? 1 : *b ? -1 : 0;
	for (i = 0;; i++) {
		if (!a[i] && !b[i])
			return 0;
		ca = a[i] ? (unsigned char)a[i] : '/';
		cb = b[i] ? (unsigned char)b[i] : '/';
		if (ca != cb)
			return ca - cb;
		if (!a[i] || !b[i]) /* one is the other's parent: it comes first */
			return a[i] ? 1 : -1;
	}
}

/* Open f's directory again and check it is the one placed: fd or -1. */
static int reopen(struct rd_sink_mir *m, const char *wire, size_t wlen, int root, dev_t dev,
		  ino_t ino)
{
	struct stat st;
	int fd = rd_sink__open_dir(m->s, wire, wlen, root);

	rd_err_clear(&m->s->err);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		return -1;
	}
	return fd;
}

#define NOT_PLACED "not the directory placed there: nothing deleted in it"

/* Something at rel could not be done (flags: RD_DLF_* besides FAILED): said, counted. */
static void failed_at(struct rd_sink_mir *m, unsigned flags, const char *rel, const char *msg)
{
	if (m->o.report)
		m->o.report(m->o.ctx, RD_DLF_FAILED | flags, rel, strlen(rel), msg);
	m->st.failed++;
}

/* Delete (or keep for the end) what f's directory holds besides its list. */
static void clean(struct rd_sink_mir *m, struct mframe *f, const struct rd_sink_meta *meta, int now)
{
	struct rd_del_names extras;
	struct rd_err err;
	struct pend *p;
	int fd;

	if (m->st.off || !f->placed || f->incomplete || f->implied)
		return;
	/* a failure under it (ids between its entry and its POST) keeps it */
	if (m->last_failed > f->id && (!f->post_id || m->last_failed < f->post_id))
		return;
	if (f->top && !f->names.n && !m->o.allow_empty) {
		off(m,
		    "the source directory %s is empty: deleting nothing "
		    "(--allow-empty-source to allow it)",
		    f->wire);
		return;
	}
	fd = reopen(m, f->wire, f->wlen, f->root, f->dev, f->ino);
	if (fd < 0) {
		failed_at(m, 0, f->rel, NOT_PLACED);
		return;
	}
	rd_del_names_sort(&f->names);
	rd_del_names_init(&extras);
	rd_err_clear(&err);
	if (merge_enter(m, f->wire, f->wlen, f->root, f->rel, f->base, fd, &err)) {
		/* its rules unknown: nothing deleted in it */
		failed_at(m, 0, f->rel, err.msg);
		goto out;
	}
	if (rd_del_find(m->d, fd, f->rel, &f->names, &extras, &err)) {
		if (err.status == RD_ENOMEM)
			off(m, "%s: deleting nothing more", err.msg);
		else if (m->o.report) {
			m->o.report(m->o.ctx, RD_DLF_FAILED, f->rel, strlen(f->rel), err.msg);
			m->st.failed++;
		}
		goto out;
	}
	if (!extras.n)
		goto out;
	if (now) {
		rd_del_run(m->d, fd, f->rel, &extras);
		goto out;
	}
	if (m->npend == m->pcap) {
		size_t cap = m->pcap ? m->pcap * 2 : 16;
		void *np = realloc(m->pend, cap * sizeof(*m->pend));

		if (!np) {
			off(m, "out of memory for --delete: deleting nothing more");
			goto out;
		}
		m->pend = np;
		m->pcap = cap;
	}
	p = &m->pend[m->npend];
	memset(p, 0, sizeof(*p));
	p->wire = strdup(f->wire);
	p->rel = strdup(f->rel);
	if (!p->wire || !p->rel) {
		free(p->wire);
		free(p->rel);
		off(m, "out of memory for --delete: deleting nothing more");
		goto out;
	}
	p->wlen = f->wlen;
	p->base = f->base;
	p->root = f->root;
	p->dev = f->dev;
	p->ino = f->ino;
	if (meta)
		p->meta = *meta;
	p->extras = extras;
	rd_del_names_init(&extras);
	m->npend++;
out:
	rd_del_names_free(m->d, &extras);
	close(fd);
}

int rd_sink_mirror_post_seen(struct rd_sink *s, uint32_t id, const char *path, size_t len, int root)
{
	struct rd_sink_mir *m = s->mir;
	struct mframe *f;

	(void)root;
	if (!m || !m->o.delete)
		return 0;
	f = m->open;
	if (!f || f->wlen != len || memcmp(f->wire, path, len)) {
		/* a directory that was never a directory of the transfer (or is not the innermost) */
		if (open_at(m, path, len))
			return rd_err_set(&s->err, RD_EPROTO, 0,
					  "POST of %s while a directory inside it is open",
					  rd_sink__esc(s, path, len));
		return 0;
	}
	m->open = f->next;
	m->depth--;
	f->post_id = id;
	f->next = NULL;
	if (m->o.order == RD_MIRROR_BEFORE && m->o.max_delete < 0) {
		clean(m, f, NULL, 1);
		frame_free(m, f);
		return 0;
	}
	if (m->qtail)
		m->qtail->next = f;
	else
		m->qhead = f;
	m->qtail = f;
	return 0;
}

void rd_sink_mirror_post(struct rd_sink *s, uint32_t id, const struct rd_sink_meta *meta)
{
	struct rd_sink_mir *m = s->mir;
	struct mframe *f;

	if (!m || !m->o.delete || !(f = m->qhead) || f->post_id != id)
		return;
	m->qhead = f->next;
	if (!m->qhead)
		m->qtail = NULL;
	/*
	 * Found now, deleted at the end, in every order but BEFORE: a source
	 * error anywhere in the run must stop every deletion (issue 29), and
	 * only the end knows the source was read whole.
	 */
	clean(m, f, meta, 0);
	frame_free(m, f);
}

void rd_sink_mirror_failed(struct rd_sink *s, uint32_t id)
{
	if (s->mir && id > s->mir->last_failed)
		s->mir->last_failed = id;
}

void rd_sink_mirror_source_error(struct rd_sink *s, int listed)
{
	struct rd_sink_mir *m = s->mir;

	if (!m || !m->o.delete)
		return;
	if (!m->o.ignore_errors) {
		off(m, "I/O error on the sending side: deleting nothing more (--ignore-errors "
		       "deletes anyway)");
		return;
	}
	/*
	 * The sender says so in wire order, while it lists the innermost
	 * directory open here: an entry it could not list (vanished, a
	 * directory it could not read) leaves that directory's list short.
	 * A listed entry that failed keeps its directory anyway (failed).
	 */
	if (!listed && m->open)
		m->open->incomplete = 1;
}

static int pend_cmp(const void *a, const void *b)
{
	return rsync_order(((const struct pend *)a)->rel, ((const struct pend *)b)->rel);
}

/* rsync's order of the files waiting for room: by directory, then by name (bytewise) */
static int room_cmp(const void *a, const void *b)
{
	const struct room *x = a, *y = b;
	int c = rsync_order(x->dirrel, y->dirrel);

	return c ? c : strcmp(x->name, y->name);
}

/*
 * A file's room at the end: the full directory in its way emptied (what
 * is inside counts against max_delete, the directory itself not), then
 * the file renamed over its name; else the file goes and the entry failed
 * (rsync: "could not make way"). Its directory keeps the times it had.
 */
static void room_make(struct rd_sink_mir *m, struct room *r)
{
	struct timespec ts[2];
	struct stat st, now;
	struct rd_err err;
	int fd, ok = 0;

	fd = reopen(m, r->pwire, r->pwlen, r->proot, r->dev, r->ino);
	if (fd < 0) {
		/* its file stays under the temporary name: nothing lost, said */
		failed_at(m, RD_DLF_UNMADE, r->rel,
			  "its directory is not the one placed there: not put in place");
		m->st.unmade++;
		return;
	}
	if (fstat(fd, &st))
		st.st_mtim.tv_nsec = UTIME_OMIT;
	/* the merge files of its directories protect what is inside, as at a commit */
	rd_err_clear(&err);
	if (merge_enter(m, r->pwire, r->pwlen, r->proot, r->dirrel, r->base, fd, &err)) {
		failed_at(m, 0, r->rel, err.msg);
	} else {
		rd_del_entry(m->d, fd, r->name, r->rel);
		if (rd_fstatat(fd, r->name, &now, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		    rd_renameat(fd, r->tmp, fd, r->name) == 0)
			ok = 1;
	}
	if (!ok) {
		rd_unlinkat(fd, r->tmp, 0);
		failed_at(m, RD_DLF_UNMADE, r->rel, "could not make way for new regular file");
		m->st.unmade++;
	}
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1] = st.st_mtim;
	futimens(fd, ts);
	if (ok && (rd_sink__flags(m->s) & RD_SINK_FSYNC))
		fsync(fd);
	close(fd);
}

/* The directory of the transfer at path (len), open or waiting for its POST, or NULL. */
static struct mframe *frame_at(struct rd_sink_mir *m, const char *path, size_t len)
{
	struct mframe *f = open_at(m, path, len);

	if (f)
		return f;
	for (f = m->qhead; f; f = f->next)
		if (f->wlen == len && !memcmp(f->wire, path, len))
			return f;
	return NULL;
}

int rd_sink__mirror_late(const struct rd_sink *s)
{
	const struct rd_sink_mir *m = s->mir;

	return m && m->o.delete &&m->o.late_room && m->o.max_delete >= 0 && !m->o.dry_run &&
	       !m->st.off;
}

int rd_sink__mirror_later(struct rd_sink *s, const char *name, const char *tmp, const char *path,
			  size_t len)
{
	struct rd_sink_mir *m = s->mir;
	const char *sl = memrchr(path, '/', len);
	struct mframe *f;
	struct room *r;
	size_t rl;

	if (!rd_sink__mirror_late(s) || !sl || !(f = frame_at(m, path, (size_t)(sl - path))) ||
	    !f->placed || strlen(name) > NAME_MAX || strlen(tmp) > NAME_MAX)
		return 0;
	if (m->nrooms == m->rcap) {
		size_t cap = m->rcap ? m->rcap * 2 : 8;
		void *nr = realloc(m->rooms, cap * sizeof(*m->rooms));

		if (!nr)
			return 0;
		m->rooms = nr;
		m->rcap = cap;
	}
	r = &m->rooms[m->nrooms];
	memset(r, 0, sizeof(*r));
	rl = strlen(f->rel);
	r->pwire = strndup(f->wire, f->wlen);
	r->dirrel = strdup(f->rel);
	r->rel = malloc(rl + strlen(name) + 2);
	if (!r->pwire || !r->dirrel || !r->rel) {
		room_free(r);
		return 0;
	}
	snprintf(r->rel, rl + strlen(name) + 2, "%s%s%s", f->rel, rl ? "/" : "", name);
	r->pwlen = f->wlen;
	r->proot = f->root;
	r->dev = f->dev;
	r->ino = f->ino;
	r->base = f->base;
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->tmp, sizeof(r->tmp), "%s", tmp);
	m->nrooms++;
	return 1;
}

/* One directory's extras waiting for the end. */
static void pend_run(struct rd_sink_mir *m, struct pend *p)
{
	uint64_t before = m->st.deleted;
	struct rd_err err;
	int fd;

	fd = reopen(m, p->wire, p->wlen, p->root, p->dev, p->ino);
	if (fd < 0) {
		failed_at(m, 0, p->rel, NOT_PLACED);
		return;
	}
	rd_err_clear(&err);
	if (merge_enter(m, p->wire, p->wlen, p->root, p->rel, p->base, fd, &err)) {
		failed_at(m, 0, p->rel, err.msg);
		close(fd);
		return;
	}
	rd_del_run(m->d, fd, p->rel, &p->extras);
	close(fd);
	/* its times again, as its POST left them (rsync's touch-up) */
	if (m->st.deleted != before && !m->o.dry_run)
		rd_sink_dir_post(m->s, p->wire, p->wlen, p->root, &p->meta);
}

/*
 * rsync's order of extras (pend[i] next) and rooms (rooms[j] next):
 * --delete-during: directories in pre-order, in each its extras, then
 * the room its files need, by name; --delete-before: every extra first;
 * --delete-delay/-after: every room first. 1: the room is next.
 */
static int room_next(const struct rd_sink_mir *m, size_t i, size_t j)
{
	if (j == m->nrooms)
		return 0;
	if (i == m->npend || m->o.order == RD_MIRROR_AFTER)
		return 1;
	if (m->o.order == RD_MIRROR_BEFORE)
		return 0;
	return rsync_order(m->pend[i].rel, m->rooms[j].dirrel) > 0;
}

void rd_sink_mirror_finish(struct rd_sink *s)
{
	struct rd_sink_mir *m = s->mir;
	size_t i = 0, j = 0;

	if (!m || !m->o.delete)
		return;
	qsort(m->pend, m->npend, sizeof(*m->pend), pend_cmp);
	qsort(m->rooms, m->nrooms, sizeof(*m->rooms), room_cmp);
	/* files get their room even when deletion was turned off meanwhile (as at a commit) */
	while (i < m->npend || j < m->nrooms) {
		if (room_next(m, i, j))
			room_make(m, &m->rooms[j++]);
		else if (!m->st.off)
			pend_run(m, &m->pend[i++]);
		else
			i++;
	}
	for (i = 0; i < m->npend; i++)
		pend_free(m, &m->pend[i]);
	m->npend = 0;
	merge_leave(m, 0);
	for (j = 0; j < m->nrooms; j++)
		room_free(&m->rooms[j]);
	m->nrooms = 0;
	if (rd_del_stats(m->d)->skipped && m->o.report) {
		char text[64];

		snprintf(text, sizeof(text), "%llu skipped",
			 (unsigned long long)rd_del_stats(m->d)->skipped);
		m->o.report(m->o.ctx, RD_DLF_SKIPPED, "", 0, text);
	}
}

const struct rd_mirror_stats *rd_sink_mirror_stats(const struct rd_sink *s)
{
	const struct rd_del_stats *ds;
	struct rd_sink_mir *m = s->mir;

	if (!m)
		return NULL;
	ds = rd_del_stats(m->d);
	m->st.skipped = ds->skipped;
	m->st.limited = rd_del_limited(m->d);
	return &m->st;
}

int rd_sink__mirror_room(struct rd_sink *s, int pfd, const char *name, const char *path, size_t len)
{
	struct rd_sink_mir *m = s->mir;
	const char *sl = memrchr(path, '/', len);
	struct mframe *pf;
	struct rd_err err;
	struct rd_del_stats before;
	const struct rd_del_stats *after;
	char *rel;
	int ret;

	if (!m || !(m->o.force || m->o.delete))
		return 0;
	rel = rel_of(m, path, len, 0);
	if (!rel)
		return -RD_ENOMEM;
	/*
	 * the merge files of the directories of the transfer down to the one
	 * it is in (none: it is not in one)
	 */
	pf = sl && m->o.enter ? open_at(m, path, (size_t)(sl - path)) : NULL;
	rd_err_clear(&err);
	if (m->o.enter && !pf)
		merge_leave(m, 0);
	if (pf && merge_enter(m, pf->wire, pf->wlen, pf->root, pf->rel, pf->base, pfd, &err)) {
		failed_at(m, 0, rel, err.msg);
		free(rel);
		return -RD_EPERM;
	}
	before = *rd_del_stats(m->d);
	ret = rd_del_entry(m->d, pfd, name, rel);
	free(rel);
	if (ret < 0)
		return ret;
	/* a dry run removes nothing: what would stay inside says it would not go */
	after = rd_del_stats(m->d);
	if (m->o.dry_run && (after->kept != before.kept || after->skipped != before.skipped ||
			     after->failed != before.failed))
		return -RD_ESYS;
	return 1;
}

int rd_sink__mirror_forces(const struct rd_sink *s)
{
	return s->mir && (s->mir->o.force || s->mir->o.delete);
}
