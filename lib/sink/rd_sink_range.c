// SPDX-License-Identifier: MIT
/*
 * Ranges of one file written by several sessions at once (rdcp-mpi,
 * issue 32; the wire side is section 6 of lib/proto/rd_proto.h).
 *
 * Every session of a job that writes part of a file writes into one shared
 * data file beside the final name, ".rdcp-range.<key>.<name>", at the
 * offsets of its own chunks, and keeps its own record of what it verified,
 * "<data>.<off: 16 hex>". Records are written whole into a new file (a
 * random suffix: two sessions never share one) and renamed over, so a
 * kill at any instant leaves the old record or the new one, and a record
 * never names a chunk whose pwrite had not returned. No lock is shared
 * between sessions: they may run on different servers of one parallel
 * file system, where a lock may not reach; each writes only its own
 * chunks and its own record.
 *
 * A record (all integers big-endian):
 *	 0 u8[8] magic		"RDCPRNG1"
 *	 8 u64	 size		source size (FILE)
 *	16 s64	 mtime_sec	source mtime (FILE)
 *	24 u32	 mtime_nsec
 *	28 u32	 chunk_size	of the session that wrote it
 *	32 u8[32] digest	checksum name that verified the chunks, NUL padded
 *	64 u64	 job		the job of that session (META RANGE)
 *	72 u64	 first		first chunk of its range
 *	80 u64	 n		chunks in its range
 *	88 u32	 flags		1: sealed (all n chunks in, on disk with fsync)
 *	92 u32	 reserved	0
 *	96 u8[(n + 7) / 8] bitmap, bit i: chunk first + i verified and written
 *	 + u64	 check		FNV-1a 64 of every byte before it
 *
 * The key in the names (FNV-1a 64 of the name, the size and the mtime)
 * keeps each source version in its own files: a session still writing an
 * old version (a link cut it has not noticed) never writes into the new
 * one. A COMMIT takes only sealed records of its own job, checks that
 * their ranges cover every byte, renames the data file into place and
 * removes every record of the key.
 */
#include "lib/base/rd_be.h"
#include "lib/base/rd_fsid.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_partial.h"
#include "lib/sink/rd_sink_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RANGE_MAGIC	"RDCPRNG1"
#define RANGE_PREFIX	RD_RANGE_PREFIX /* never sent nor accepted (rd_path_reserved) */
#define RANGE_HDR	96
#define RANGE_SEALED	0x1u
#define RANGE_NAME_KEEP 180 /* of the final name in the data file's name */
#define RANGE_FLUSH_MS	10
#define RANGE_RECS_MAX	4096 /* records a COMMIT looks at; more: refused */
#define RANGE_FNV0	RD_FNV1A_INIT
#define RANGE_CS_MIN	4096u /* RD_CHUNK_MIN */

struct rd_range {
	int dfd; /* borrowed: the directory holding data and records */
	int fd;	 /* the data file (also the sink file's temporary) */
	int commit, sealed, fsync;
	uint64_t size;
	int64_t msec;
	uint32_t mnsec, cs;
	char digest[33];
	uint64_t job, first, n;
	uint8_t *own;  /* this session's verified chunks (n bits) */
	uint8_t *held; /* chunks some record holds, to be compared (n bits) */
	int dirty;
	uint64_t last_ms;
	char data[NAME_MAX + 1];
	char rec[NAME_MAX + 1];
};

/* One record read back (its bitmap stays in buf). */
struct rrec {
	uint32_t cs, flags;
	uint64_t job, first, n;
	const uint8_t *bm;
};

struct ival {
	uint64_t lo, hi;
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static int bit(const uint8_t *bm, uint64_t i)
{
	return bm[i / 8] >> (i % 8) & 1;
}

void rd_sink_range_name(char *out, const char *name, uint64_t size, int64_t msec, uint32_t mnsec)
{
	uint8_t id[20];
	uint64_t k;

	rd_be_put64(id, size);
	rd_be_put64(id + 8, (uint64_t)msec);
	rd_be_put32(id + 16, mnsec);
	k = rd_fnv1a64(id, sizeof(id), rd_fnv1a64(name, strlen(name), RANGE_FNV0));
	snprintf(out, NAME_MAX + 1, RANGE_PREFIX "%016llx.%.*s", (unsigned long long)k,
		 RANGE_NAME_KEEP, name);
}

/*
 * Is name one of data's records ("<data>.<16 hex>", nothing more)? The
 * record of offset off, when so.
 */
static int is_record(const char *data, const char *name, uint64_t *off)
{
	size_t n = strlen(data), i;
	uint64_t v = 0;

	if (strncmp(name, data, n) || name[n] != '.' || strlen(name + n + 1) != 16)
		return 0;
	for (i = n + 1; name[i]; i++) {
		char c = name[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return 0;
	}
	*off = v;
	return 1;
}

/* Read the record `name` into *buf (malloc'd) and check it: 1 = usable, 0 = not. */
static int rec_read(const struct rd_range *g, const char *name, uint8_t **buf, struct rrec *r)
{
	struct stat st;
	size_t len;
	int fd, ok = 0;

	*buf = NULL;
	fd = rd_openat(g->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < RANGE_HDR + 8 ||
	    (uint64_t)st.st_size > RANGE_HDR + 8 + PARTIAL_BITMAP_MAX)
		goto out;
	len = (size_t)st.st_size;
	*buf = malloc(len);
	if (!*buf || pread(fd, *buf, len, 0) != (ssize_t)len)
		goto out;
	if (memcmp(*buf, RANGE_MAGIC, 8) ||
	    rd_be_get64(*buf + len - 8) != rd_fnv1a64(*buf, len - 8, RANGE_FNV0))
		goto out;
	if (rd_be_get64(*buf + 8) != g->size || (int64_t)rd_be_get64(*buf + 16) != g->msec ||
	    rd_be_get32(*buf + 24) != g->mnsec)
		goto out;
	r->cs = rd_be_get32(*buf + 28);
	r->job = rd_be_get64(*buf + 64);
	r->first = rd_be_get64(*buf + 72);
	r->n = rd_be_get64(*buf + 80);
	r->flags = rd_be_get32(*buf + 88);
	r->bm = *buf + RANGE_HDR;
	/* its chunks must lie in the file and its bitmap fill the record exactly */
	if (r->cs < RANGE_CS_MIN || !r->n || r->first > g->size / r->cs + 1 ||
	    r->n > (g->size + r->cs - 1) / r->cs - r->first ||
	    (r->n + 7) / 8 != len - RANGE_HDR - 8)
		goto out;
	ok = 1;
out:
	close(fd);
	return ok;
}

/* Chunks of r (sizes r->cs) covering bytes [lo, hi) are all set. */
static int rec_holds(const struct rrec *r, uint64_t lo, uint64_t hi)
{
	uint64_t a = lo / r->cs, b = (hi - 1) / r->cs, i;

	if (a < r->first || b >= r->first + r->n)
		return 0;
	for (i = a; i <= b; i++)
		if (!bit(r->bm, i - r->first))
			return 0;
	return 1;
}

typedef void (*rec_fn)(struct rd_range *g, const char *name, const struct rrec *r, void *ctx);

/* Call fn for each usable record of g's data file; 0, or -errno (listing failed). */
static int rec_each(struct rd_range *g, rec_fn fn, void *ctx)
{
	struct dirent *de;
	struct rrec r;
	uint8_t *buf;
	uint64_t off;
	DIR *d;
	int fd;

	fd = rd_openat(g->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!is_record(g->data, de->d_name, &off))
			continue;
		if (rec_read(g, de->d_name, &buf, &r))
			fn(g, de->d_name, &r, ctx);
		free(buf);
	}
	closedir(d);
	return 0;
}

/* Resume: the chunks of our range that a record (any job) holds. */
static void take_held(struct rd_range *g, const char *name, const struct rrec *r, void *ctx)
{
	uint64_t i, lo, hi;

	for (i = 0; i < g->n; i++) {
		lo = (g->first + i) * g->cs;
		hi = lo + g->cs < g->size ? lo + g->cs : g->size;
		if (lo < hi && rec_holds(r, lo, hi))
			g->held[i / 8] |= (uint8_t)(1u << (i % 8));
	}
}

static int create_new(struct rd_range *g, char *name)
{
	uint32_t r;
	int fd, tries = 0;

	do {
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)now_ms() ^ (uint32_t)getpid() ^ (uint32_t)tries;
		snprintf(name, NAME_MAX + 1, "%s.new.%08x", g->rec, r);
		fd = rd_openat(g->dfd, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC,
			       0600);
	} while (fd < 0 && errno == EEXIST && ++tries < 8);
	return fd < 0 ? -errno : fd;
}

/* Write our record (sealed or not) whole and rename it over the old one. 0 or -errno. */
static int rec_write(struct rd_range *g, int sealed)
{
	size_t bml = (size_t)((g->n + 7) / 8), len = RANGE_HDR + bml + 8, off = 0;
	char tmp[NAME_MAX + 1];
	uint8_t *buf;
	ssize_t w;
	int fd, ret = 0;

	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, RANGE_MAGIC, 8);
	rd_be_put64(buf + 8, g->size);
	rd_be_put64(buf + 16, (uint64_t)g->msec);
	rd_be_put32(buf + 24, g->mnsec);
	rd_be_put32(buf + 28, g->cs);
	memcpy(buf + 32, g->digest, strnlen(g->digest, 32));
	rd_be_put64(buf + 64, g->job);
	rd_be_put64(buf + 72, g->first);
	rd_be_put64(buf + 80, g->n);
	rd_be_put32(buf + 88, sealed ? RANGE_SEALED : 0);
	memcpy(buf + RANGE_HDR, g->own, bml);
	rd_be_put64(buf + len - 8, rd_fnv1a64(buf, len - 8, RANGE_FNV0));
	fd = create_new(g, tmp);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	while (off < len) {
		w = pwrite(fd, buf + off, len - off, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (!ret && sealed && g->fsync && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && rd_renameat(g->dfd, tmp, g->dfd, g->rec) < 0)
		ret = -errno;
	if (ret)
		rd_unlinkat(g->dfd, tmp, 0);
	else if (sealed && g->fsync && fsync(g->dfd) < 0)
		ret = -errno;
out:
	free(buf);
	return ret;
}

static struct rd_range *range_new(int dfd, const char *name, const struct rd_sink_meta *m,
				  const char *digest, uint32_t cs, uint64_t job)
{
	struct rd_range *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->dfd = dfd;
	g->fd = -1;
	g->size = m->size;
	g->msec = m->mtime_sec;
	g->mnsec = m->mtime_nsec;
	g->cs = cs;
	g->job = job;
	snprintf(g->digest, sizeof(g->digest), "%s", digest ? digest : "");
	rd_sink_range_name(g->data, name, m->size, m->mtime_sec, m->mtime_nsec);
	return g;
}

void rd_sink__range_free(struct rd_range *g)
{
	if (!g)
		return;
	free(g->own);
	free(g->held);
	free(g);
}

/* Where partials go: --partial-dir, or beside the file. */
static int file_dirfd(const struct rd_sink_file *f)
{
	return f->ppfd >= 0 ? f->ppfd : f->pfd;
}

/* The range's data file becomes f's temporary (named: never removed by f). */
static void adopt(struct rd_sink_file *f, int fd, struct rd_range *g)
{
	f->tmpfd = fd;
	f->rng = g;
	f->named = 1;
	snprintf(f->tmpname, sizeof(f->tmpname), "%s", g->data);
}

/* Is a regular file of the source's size and mtime under the final name (rsync's quick check)? */
static int quick_same(int pfd, const char *name, const struct rd_sink_meta *m, struct stat *st)
{
	return rd_fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) &&
	       (uint64_t)st->st_size == m->size && st->st_mtim.tv_sec == m->mtime_sec &&
	       (uint32_t)st->st_mtim.tv_nsec == m->mtime_nsec;
}

/*
 * rsync's rules for a file moved in ranges, decided at its final name,
 * which no range touches before the COMMIT: every range and the COMMIT
 * decide alike. RD_SINK_SEND, RD_SINK_SAME (there already; st is its
 * stat) or RD_SINK_LEAVE (a transfer rule: -u, --existing, --max-size...);
 * < 0 on error. Without rules set (rd_sink_set_select): the quick check
 * alone, to the nanosecond; a write-only module compares nothing.
 */
static int range_check(struct rd_sink *s, struct rd_sink_file *f, const char *path, size_t len,
		       int root, const struct rd_sink_meta *m, struct stat *st)
{
	int ret;

	if (rd_sink__flags(s) & RD_SINK_FRESH)
		return RD_SINK_SEND;
	if (!rd_sink__select(s))
		return quick_same(f->pfd, f->name, m, st) ? RD_SINK_SAME : RD_SINK_SEND;
	ret = rd_sink_file_check(s, path, len, root, m);
	if (ret == RD_SINK_SAME && rd_fstatat(f->pfd, f->name, st, AT_SYMLINK_NOFOLLOW) < 0)
		ret = RD_SINK_SEND; /* gone since: sent */
	return ret;
}

int rd_sink_range_begin(struct rd_sink *s, const char *path, size_t len, int root,
			const struct rd_sink_meta *m, uint64_t job, uint64_t off, uint64_t rlen,
			struct rd_sink_file **out)
{
	struct rd_sink_file *f = NULL;
	struct rd_range *g = NULL;
	struct stat st;
	const char *digest;
	uint32_t cs;
	int fresh = !!(rd_sink__flags(s) & RD_SINK_FRESH), ret, sum;

	*out = NULL;
	rd_sink__chunking(s, &cs, &sum, &digest);
	if (!cs)
		return rd_err_set(rd_sink__err(s), RD_EUSAGE, 0, "ranges need the chunk size set");
	if (!rlen || off > m->size || rlen > m->size - off || off % cs ||
	    (off + rlen != m->size && rlen % cs))
		return rd_err_set(rd_sink__err(s), RD_EUSAGE, 0,
				  "%s: range of %llu bytes at %llu does not fall on this side's "
				  "chunks of %u bytes",
				  rd_sink__esc(s, path, len), (unsigned long long)rlen,
				  (unsigned long long)off, cs);
	if ((rlen + cs - 1) / cs / 8 >= PARTIAL_BITMAP_MAX)
		return rd_err_set(rd_sink__err(s), RD_EUSAGE, 0, "%s: range of too many chunks",
				  rd_sink__esc(s, path, len));
	ret = rd_sink__file_new(s, path, len, root, m, &f);
	if (ret < 0)
		return ret;
	/* rsync's rules (a write-only module, RD_SINK_FRESH, compares nothing) */
	ret = range_check(s, f, path, len, root, m, &st);
	if (ret != RD_SINK_SEND) {
		rd_sink_file_abort(f);
		return ret < 0		     ? ret
		       : ret == RD_SINK_SAME ? RD_SINK_RANGE_SAME
					     : RD_SINK_RANGE_LEAVE;
	}
	g = range_new(file_dirfd(f), f->name, m, digest, cs, job);
	if (!g) {
		ret = rd_sink__fail(s, ENOMEM, path, len, "range of");
		goto out;
	}
	g->fsync = !!(rd_sink__flags(s) & RD_SINK_FSYNC);
	g->first = off / cs;
	g->n = (rlen + cs - 1) / cs;
	snprintf(g->rec, sizeof(g->rec), "%s.%016llx", g->data, (unsigned long long)off);
	g->own = calloc(1, (size_t)(g->n + 7) / 8);
	g->held = calloc(1, (size_t)(g->n + 7) / 8);
	if (!g->own || !g->held) {
		ret = rd_sink__fail(s, ENOMEM, path, len, "range of");
		goto out;
	}
	/* shared with the job's other sessions: created once, never replaced */
	g->fd = rd_openat(g->dfd, g->data, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (g->fd < 0) {
		ret = rd_sink__fail(s, errno, path, len, "open the range partial of");
		goto out;
	}
	if (fstat(g->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		ret =
		    rd_err_set(rd_sink__err(s), RD_EPERM, 0,
			       "%s: its range partial is not a plain file of one link; refusing it",
			       rd_sink__esc(s, path, len));
		goto out;
	}
	if ((uint64_t)st.st_size != m->size && ftruncate(g->fd, (off_t)m->size) < 0) {
		ret = rd_sink__fail(s, errno, path, len, "size the range partial of");
		goto out;
	}
	/* resume only where chunks are compared, never in a write-only module */
	if (sum && !fresh)
		rec_each(g, take_held, NULL); /* nothing to resume if it cannot be listed */
	adopt(f, g->fd, g);
	g->fd = -1; /* the sink file owns it now */
	*out = f;
	return 0;
out:
	if (g && g->fd >= 0)
		close(g->fd);
	rd_sink__range_free(g);
	rd_sink_file_abort(f);
	return ret;
}

/* COMMIT: the sealed records of the job, as byte intervals. */
struct cover {
	struct ival *iv;
	unsigned n;
	int overflow;
};

static void take_sealed(struct rd_range *g, const char *name, const struct rrec *r, void *ctx)
{
	struct cover *c = ctx;
	uint64_t i, lo, hi;

	if (r->job != g->job || !(r->flags & RANGE_SEALED))
		return;
	for (i = 0; i < r->n; i++)
		if (!bit(r->bm, i))
			return; /* sealed means all: a record that says otherwise is not taken */
	if (c->n >= RANGE_RECS_MAX) {
		c->overflow = 1;
		return;
	}
	lo = r->first * r->cs;
	hi = (r->first + r->n) * r->cs;
	c->iv[c->n].lo = lo;
	c->iv[c->n++].hi = hi < g->size ? hi : g->size;
}

static int ival_cmp(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The first byte no interval covers (size when all are covered). */
static uint64_t covered_to(struct ival *iv, unsigned n, uint64_t size)
{
	uint64_t at = 0;
	unsigned i;

	qsort(iv, n, sizeof(*iv), ival_cmp);
	for (i = 0; i < n && at < size; i++) {
		if (iv[i].lo > at)
			break;
		if (iv[i].hi > at)
			at = iv[i].hi;
	}
	return at < size ? at : size;
}

int rd_sink_range_commit(struct rd_sink *s, const char *path, size_t len, int root,
			 const struct rd_sink_meta *m, uint64_t job, struct rd_sink_file **out)
{
	const char *digest;
	uint32_t cs;
	int sum;
	struct rd_sink_file *f = NULL;
	struct rd_range *g = NULL;
	struct cover c = {0};
	struct stat st;
	uint64_t at;
	int ret, fd;

	*out = NULL;
	ret = rd_sink__file_new(s, path, len, root, m, &f);
	if (ret < 0)
		return ret;
	ret = range_check(s, f, path, len, root, m, &st);
	if (ret < 0 || ret == RD_SINK_LEAVE) {
		rd_sink_file_abort(f);
		return ret < 0 ? ret : RD_SINK_RANGE_LEAVE;
	}
	if (ret == RD_SINK_SAME) {
		/* already there: its metadata only (rd_sink_file_commit keeps it) */
		fd = rd_openat(f->pfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
		if (fd < 0) {
			ret = rd_sink__fail(s, errno, path, len, "open");
			goto out;
		}
		f->exfd = fd;
		f->ex_size = (uint64_t)st.st_size;
		*out = f;
		return RD_SINK_RANGE_SAME;
	}
	rd_sink__chunking(s, &cs, &sum, &digest);
	g = range_new(file_dirfd(f), f->name, m, digest, cs, job);
	c.iv = calloc(RANGE_RECS_MAX, sizeof(*c.iv));
	if (!g || !c.iv) {
		ret = rd_sink__fail(s, ENOMEM, path, len, "commit");
		goto out;
	}
	g->commit = 1;
	g->fsync = !!(rd_sink__flags(s) & RD_SINK_FSYNC);
	g->fd = rd_openat(g->dfd, g->data, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (g->fd < 0) {
		ret = rd_err_set(rd_sink__err(s), errno == ENOENT ? RD_EPARTIAL : RD_ESYS, errno,
				 "%s: no range of it arrived%s", rd_sink__esc(s, path, len),
				 errno == ENOENT ? "" : " (its range partial cannot be opened)");
		goto out;
	}
	if (fstat(g->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (uint64_t)st.st_size != m->size) {
		ret =
		    rd_err_set(rd_sink__err(s), RD_EPERM, 0,
			       "%s: its range partial is not a plain file of its size; refusing it",
			       rd_sink__esc(s, path, len));
		goto out;
	}
	ret = rec_each(g, take_sealed, &c);
	if (ret < 0) {
		ret = rd_sink__fail(s, -ret, path, len, "list the range records of");
		goto out;
	}
	if (c.overflow) {
		ret = rd_err_set(rd_sink__err(s), RD_EPARTIAL, 0,
				 "%s: more than %u range records; not committed",
				 rd_sink__esc(s, path, len), RANGE_RECS_MAX);
		goto out;
	}
	at = covered_to(c.iv, c.n, m->size);
	if (at < m->size || (!m->size && !c.n)) {
		ret = rd_err_set(rd_sink__err(s), RD_EPARTIAL, 0,
				 "%s: not every range arrived (bytes from %llu of %llu missing); "
				 "kept for the next run",
				 rd_sink__esc(s, path, len), (unsigned long long)at,
				 (unsigned long long)m->size);
		goto out;
	}
	adopt(f, g->fd, g);
	g->fd = -1;
	*out = f;
	free(c.iv);
	return 0;
out:
	free(c.iv);
	if (g && g->fd >= 0)
		close(g->fd);
	rd_sink__range_free(g);
	rd_sink_file_abort(f);
	return ret;
}

int rd_sink__range_is_commit(const struct rd_range *g)
{
	return g->commit;
}

const char *rd_sink__range_data(const struct rd_range *g)
{
	return g->data;
}

int rd_sink__range_src(const struct rd_range *g, uint64_t chunk)
{
	if (g->commit || chunk < g->first || chunk - g->first >= g->n)
		return RD_SINK_CHUNK_NONE;
	return bit(g->held, chunk - g->first) ? RD_SINK_CHUNK_PARTIAL : RD_SINK_CHUNK_NONE;
}

void rd_sink__range_done(struct rd_range *g, uint64_t chunk, int ok)
{
	uint64_t i = chunk - g->first, t;
	uint8_t b;

	if (g->commit || chunk < g->first || i >= g->n)
		return;
	b = (uint8_t)(1u << (i % 8));
	if (ok)
		g->own[i / 8] |= b;
	else
		g->own[i / 8] &= (uint8_t)~b;
	g->dirty = 1;
	t = now_ms();
	/* best effort: a record that cannot be written leaves the old one */
	if (ok && t - g->last_ms >= RANGE_FLUSH_MS && !rec_write(g, 0)) {
		g->dirty = 0;
		g->last_ms = t;
	}
}

int rd_sink__range_seal(struct rd_range *g, int fd)
{
	uint64_t i;
	int ret;

	for (i = 0; i < g->n; i++)
		if (!bit(g->own, i))
			return -EINVAL;
	if (g->fsync && fdatasync(fd) < 0)
		return -errno;
	ret = rec_write(g, 1);
	if (!ret)
		g->sealed = 1;
	return ret;
}

void rd_sink__range_abort(struct rd_range *g)
{
	if (!g->commit && !g->sealed && g->dirty)
		rec_write(g, 0);
}

static void drop_record(struct rd_range *g, const char *name, const struct rrec *r, void *ctx)
{
	rd_unlinkat(g->dfd, name, 0);
}

void rd_sink__range_cleanup(struct rd_range *g)
{
	struct dirent *de;
	uint64_t off;
	DIR *d;
	int fd;

	rec_each(g, drop_record, NULL);
	/* and what a killed session left half written ("<record>.new.<random>") */
	fd = rd_openat(g->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(g->data);
		char rec[NAME_MAX + 1];

		if (strncmp(de->d_name, g->data, n) || de->d_name[n] != '.' ||
		    strlen(de->d_name) <= n + 17 || strncmp(de->d_name + n + 17, ".new.", 5))
			continue;
		snprintf(rec, sizeof(rec), "%.*s", (int)(n + 17), de->d_name);
		if (is_record(g->data, rec, &off))
			rd_unlinkat(g->dfd, de->d_name, 0);
	}
	closedir(d);
}
