// SPDX-License-Identifier: MIT
/*
 * Partial files and their records (the format and the crash-safety
 * argument are in rd_sink_partial.h). Every name is touched only with
 * *at() calls on the parent directory fd the sink resolved, never
 * followed (O_NOFOLLOW), and files we create are created O_EXCL after an
 * unlink, so a planted symlink or hard link is never written through.
 */
#include "lib/sink/rd_sink_partial.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PARTIAL_MAGIC	 "RDCPPRT2"
#define PARTIAL_MAGIC1	 "RDCPPRT1" /* no flags word: read, never written */
#define PARTIAL_HDR	 80
#define PARTIAL_HDR1	 72
#define RD_PARTIAL_F_DIR 0x1u
#define PARTIAL_FLUSH_MS 10
#define PARTIAL_LOCK_MS	 10000
#define REC_BUF		 (64u << 10) /* a record is read in pieces of this */

struct rd_partial {
	int pfd; /* borrowed from the sink file */
	int fsync_data;
	struct rd_partial_id id;
	uint64_t nchunks;
	size_t bmlen;
	uint8_t *bm;
	int dirty;
	uint64_t last_ms;
	char data[NAME_MAX + 1];
	char rec[NAME_MAX + 1];
	char rec_new[NAME_MAX + 1];
};

static uint64_t fnv1a(const uint8_t *p, size_t n, uint64_t h)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void rd_partial_name(char *out, const char *name)
{
	size_t n = strlen(name);

	if (n <= PARTIAL_NAME_KEEP)
		snprintf(out, NAME_MAX + 1, PARTIAL_PREFIX "%s", name);
	else
		snprintf(out, NAME_MAX + 1, PARTIAL_PREFIX "%.*s~%016llx", PARTIAL_NAME_KEEP - 20,
			 name,
			 (unsigned long long)fnv1a((const uint8_t *)name, n,
						   0xcbf29ce484222325ull));
}

static size_t rec_len(const struct rd_partial *p)
{
	return PARTIAL_HDR + p->bmlen + 8;
}

size_t rd_partial_bitmap_len(uint64_t size, uint32_t chunk)
{
	uint64_t n = chunk ? (size + chunk - 1) / chunk : 0;

	return (size_t)((n + 7) / 8);
}

static int pread_all(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	ssize_t r;

	while (len) {
		r = pread(fd, buf, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int pwrite_all(int fd, const uint8_t *buf, size_t len, uint64_t off)
{
	ssize_t r;

	while (len) {
		r = pwrite(fd, buf, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		buf += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Clear the bits of p's chunks that overlap the recorded chunk o (of rc bytes). */
static void unhold(struct rd_partial *p, uint32_t rc, uint64_t o)
{
	uint64_t end = (o + 1) * rc, c, last;

	if (end > p->id.size)
		end = p->id.size;
	last = (end - 1) / p->id.chunk_size;
	for (c = o * rc / p->id.chunk_size; c <= last && c < p->nchunks; c++)
		p->bm[c / 8] &= (uint8_t) ~(1u << (c % 8));
}

/*
 * Load and check the record; 1 if it matches p->id, 0 if not (or none).
 * Its chunks (rc bytes each, maybe not ours) become p's: a chunk of ours
 * is held when every recorded chunk it overlaps was. The record is read
 * in pieces of REC_BUF bytes and must be exactly as long as its header
 * says for p's size (at most PARTIAL_BITMAP_MAX of bitmap): what a
 * record on disk costs is that buffer, whatever its st_size claims (a
 * planted sparse record of gigabytes is refused by its length alone).
 */
static int rec_load(struct rd_partial *p, int *changed)
{
	uint8_t hdr[PARTIAL_HDR], tail[8], *buf = NULL;
	uint64_t h, n, o, off;
	struct stat st;
	size_t blen, want, i, hl = 0;
	uint32_t rc;
	int fd, ok = 0;

	fd = rd_openat(p->pfd, p->rec, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || pread_all(fd, hdr, 8, 0))
		goto out;
	if (!memcmp(hdr, PARTIAL_MAGIC, 8))
		hl = PARTIAL_HDR;
	else if (!memcmp(hdr, PARTIAL_MAGIC1, 8))
		hl = PARTIAL_HDR1;
	if (!hl || pread_all(fd, hdr + 8, hl - 8, 8))
		goto out;
	if (get64(hdr + 8) != p->id.size || (int64_t)get64(hdr + 16) != p->id.mtime_sec ||
	    get32(hdr + 24) != p->id.mtime_nsec) {
		*changed = 1;
		goto out;
	}
	rc = get32(hdr + 28);
	n = get64(hdr + 64);
	if (rc < 4096 || n != (p->id.size + rc - 1) / rc || (n + 7) / 8 >= PARTIAL_BITMAP_MAX)
		goto out;
	blen = (size_t)((n + 7) / 8);
	if ((uint64_t)st.st_size != hl + blen + 8)
		goto out;
	buf = malloc(REC_BUF);
	if (!buf)
		goto out;
	/* every chunk held, until a recorded chunk that was not says otherwise */
	memset(p->bm, 0xff, p->bmlen);
	if (p->nchunks % 8)
		p->bm[p->bmlen - 1] = (uint8_t)((1u << (p->nchunks % 8)) - 1);
	h = fnv1a(hdr, hl, 0xcbf29ce484222325ull);
	for (off = 0; off < blen; off += want) {
		want = blen - off < REC_BUF ? (size_t)(blen - off) : REC_BUF;
		if (pread_all(fd, buf, want, hl + off))
			goto bad;
		h = fnv1a(buf, want, h);
		for (i = 0; i < want; i++) {
			if (buf[i] == 0xff)
				continue;
			for (o = (off + i) * 8; o < (off + i + 1) * 8 && o < n; o++)
				if (!(buf[i] >> (o % 8) & 1))
					unhold(p, rc, o);
		}
	}
	if (pread_all(fd, tail, sizeof(tail), hl + blen) || get64(tail) != h)
		goto bad;
	p->id.dir_made = hl == PARTIAL_HDR && (get32(hdr + 72) & RD_PARTIAL_F_DIR);
	p->dirty = rc != p->id.chunk_size || hl != PARTIAL_HDR;
	ok = 1;
	goto out;
bad:
	memset(p->bm, 0, p->bmlen);
out:
	free(buf);
	close(fd);
	return ok;
}

static int create_excl(int pfd, const char *name)
{
	int fd;

	if (rd_unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = rd_openat(pfd, name, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/*
 * One session at a time per partial: a session whose connection died
 * (a link cut) may still hold it when the client's reconnect arrives, and
 * its abort would punch holes in chunks it did not verify, in a file the
 * new session may have renamed into place meanwhile. So the data file is
 * held under flock(LOCK_EX) from open to close, and a second session
 * waits up to PARTIAL_LOCK_MS for the first to end (checking, once it has
 * the lock, that the name still is that file: the first may have renamed
 * it into place). Returns the locked fd of the existing partial, -ENOENT
 * if there is none, -EBUSY if it stayed held.
 */
static int lock_existing(int pfd, const char *name)
{
	struct stat a, b;
	unsigned waited = 0;
	int fd;

	for (;;) {
		fd = rd_openat(pfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
		if (fd < 0)
			return errno == ENOENT ? -ENOENT : -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (rd_fstatat(pfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 &&
			    fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
				return fd;
			close(fd); /* renamed or replaced meanwhile: look again */
			continue;
		}
		close(fd);
		if (errno != EWOULDBLOCK || waited >= PARTIAL_LOCK_MS)
			return -EBUSY;
		usleep(50 * 1000);
		waited += 50;
	}
}

int rd_partial_open(struct rd_partial **out, int pfd, const char *name,
		    const struct rd_partial_id *id, int fsync_data, int *fd, int *resumed,
		    int *changed)
{
	struct rd_partial *p;
	struct stat st;
	int ret = 0, old;

	*out = NULL;
	*fd = -1;
	*resumed = *changed = 0;
	if (!id->chunk_size)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pfd = pfd;
	p->fsync_data = fsync_data;
	p->id = *id;
	p->nchunks = (id->size + id->chunk_size - 1) / id->chunk_size;
	if (p->nchunks / 8 >= PARTIAL_BITMAP_MAX) {
		ret = -EFBIG;
		goto out;
	}
	p->bmlen = rd_partial_bitmap_len(id->size, id->chunk_size);
	p->bm = calloc(1, p->bmlen ? p->bmlen : 1);
	if (!p->bm) {
		ret = -ENOMEM;
		goto out;
	}
	rd_partial_name(p->data, name);
	snprintf(p->rec, sizeof(p->rec), "%s" PARTIAL_REC_SUFX, p->data);
	snprintf(p->rec_new, sizeof(p->rec_new), "%s.new", p->rec);
	old = lock_existing(pfd, p->data);
	if (old == -EBUSY) {
		ret = -EBUSY;
		goto out;
	}
	rd_unlinkat(pfd, p->rec_new, 0);
	if (old >= 0 && rec_load(p, changed)) {
		/* Ours only: a regular file with one link, of the source's size. */
		if (fstat(old, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		    (uint64_t)st.st_size == id->size) {
			*resumed = 1;
			*fd = old;
			goto out;
		}
		memset(p->bm, 0, p->bmlen);
	}
	/* Nothing to resume: no stale record, a fresh data file (locked too). */
	p->id.dir_made = id->dir_made;
	rd_unlinkat(pfd, p->rec, 0);
	*fd = create_excl(pfd, p->data);
	if (old >= 0)
		close(old);
	if (*fd < 0) {
		ret = *fd;
		*fd = -1;
	} else {
		flock(*fd, LOCK_EX | LOCK_NB);
	}
out:
	if (ret < 0)
		rd_partial_free(p);
	else
		*out = p;
	return ret;
}

int rd_partial_reset(struct rd_partial *p, int fd)
{
	memset(p->bm, 0, p->bmlen);
	p->dirty = 0;
	rd_unlinkat(p->pfd, p->rec, 0);
	return ftruncate(fd, 0) < 0 ? -errno : 0;
}

int rd_partial_has(const struct rd_partial *p, uint64_t chunk)
{
	return chunk < p->nchunks && (p->bm[chunk / 8] >> (chunk % 8) & 1);
}

/* The first chunk from c on that is not (held = 1) or is (held = 0) held; bytes at a time. */
static uint64_t run_end(const struct rd_partial *p, uint64_t c, int held)
{
	uint8_t whole = held ? 0xff : 0x00;

	while (c < p->nchunks) {
		if (c % 8 == 0 && c + 8 <= p->nchunks && p->bm[c / 8] == whole) {
			c += 8;
			continue;
		}
		if (rd_partial_has(p, c) != held)
			break;
		c++;
	}
	return c;
}

void rd_partial_trim(const struct rd_partial *p, int fd)
{
	uint64_t c = 0, start;

	while (c < p->nchunks) {
		c = run_end(p, c, 1);
		start = c;
		c = run_end(p, c, 0);
		if (c > start)
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(start * p->id.chunk_size),
				  (off_t)((c - start) * p->id.chunk_size));
	}
}

int rd_partial_empty(const struct rd_partial *p)
{
	size_t i;

	for (i = 0; i < p->bmlen; i++)
		if (p->bm[i])
			return 0;
	return 1;
}

const char *rd_partial_digest(const struct rd_partial *p)
{
	return p->id.digest;
}

int rd_partial_dir_made(const struct rd_partial *p)
{
	return p->id.dir_made;
}

void rd_partial_mark(struct rd_partial *p, uint64_t chunk, int on)
{
	uint8_t bit;

	if (chunk >= p->nchunks)
		return;
	bit = (uint8_t)(1u << (chunk % 8));
	if (on)
		p->bm[chunk / 8] |= bit;
	else
		p->bm[chunk / 8] &= (uint8_t)~bit;
	p->dirty = 1;
}

int rd_partial_flush(struct rd_partial *p, int fd, int force)
{
	uint64_t t = now_ms(), h;
	uint8_t hdr[PARTIAL_HDR], tail[8];
	int rfd, ret = 0;

	if (!p->dirty || (!force && t - p->last_ms < PARTIAL_FLUSH_MS))
		return 0;
	if (p->fsync_data && fdatasync(fd) < 0)
		return -errno;
	/* written from the bitmap itself: no copy of it (up to PARTIAL_BITMAP_MAX) */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, PARTIAL_MAGIC, 8);
	put64(hdr + 8, p->id.size);
	put64(hdr + 16, (uint64_t)p->id.mtime_sec);
	put32(hdr + 24, p->id.mtime_nsec);
	put32(hdr + 28, p->id.chunk_size);
	memcpy(hdr + 32, p->id.digest, strnlen(p->id.digest, 32));
	put64(hdr + 64, p->nchunks);
	put32(hdr + 72, p->id.dir_made ? RD_PARTIAL_F_DIR : 0);
	h = fnv1a(hdr, sizeof(hdr), 0xcbf29ce484222325ull);
	put64(tail, fnv1a(p->bm, p->bmlen, h));
	rfd = create_excl(p->pfd, p->rec_new);
	if (rfd < 0)
		return rfd;
	ret = pwrite_all(rfd, hdr, sizeof(hdr), 0);
	if (!ret)
		ret = pwrite_all(rfd, p->bm, p->bmlen, PARTIAL_HDR);
	if (!ret)
		ret = pwrite_all(rfd, tail, sizeof(tail), rec_len(p) - 8);
	if (!ret && p->fsync_data && fsync(rfd) < 0)
		ret = -errno;
	close(rfd);
	if (!ret && rd_renameat(p->pfd, p->rec_new, p->pfd, p->rec) < 0)
		ret = -errno;
	if (ret) {
		rd_unlinkat(p->pfd, p->rec_new, 0);
	} else {
		p->dirty = 0;
		p->last_ms = t;
	}
	return ret;
}

void rd_partial_remove(struct rd_partial *p, int remove_data)
{
	if (!p)
		return;
	rd_unlinkat(p->pfd, p->rec, 0);
	rd_unlinkat(p->pfd, p->rec_new, 0);
	if (remove_data)
		rd_unlinkat(p->pfd, p->data, 0);
}

void rd_partial_free(struct rd_partial *p)
{
	if (!p)
		return;
	free(p->bm);
	free(p);
}

int rd_partial_record_valid(int fd)
{
	uint8_t buf[64 * 1024], tail[8];
	uint64_t h = 0xcbf29ce484222325ull, nchunks;
	struct stat st;
	size_t len, off = 0, n, hl;
	ssize_t r;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < PARTIAL_HDR1 + 8 ||
	    (uint64_t)st.st_size > PARTIAL_HDR + PARTIAL_BITMAP_MAX + 8 || pread_all(fd, buf, 8, 0))
		return 0;
	/* either format (rd_sink_partial.h): RDCPPRT1 has no flags word */
	if (!memcmp(buf, PARTIAL_MAGIC, 8))
		hl = PARTIAL_HDR;
	else if (!memcmp(buf, PARTIAL_MAGIC1, 8))
		hl = PARTIAL_HDR1;
	else
		return 0;
	len = (size_t)st.st_size - 8; /* the bytes the check covers */
	while (off < len) {
		n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		r = pread(fd, buf, n, (off_t)off);
		if (r != (ssize_t)n)
			return 0;
		if (!off) {
			if (n < hl)
				return 0;
			nchunks = get64(buf + 64);
			if (nchunks > (uint64_t)PARTIAL_BITMAP_MAX * 8 ||
			    len != hl + (nchunks + 7) / 8)
				return 0;
		}
		h = fnv1a(buf, n, h);
		off += n;
	}
	return pread(fd, tail, 8, (off_t)len) == 8 && get64(tail) == h;
}
