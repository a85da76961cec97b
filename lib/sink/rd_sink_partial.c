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

#define PARTIAL_MAGIC	 "RDCPPRT1"
#define PARTIAL_HDR	 72
#define PARTIAL_FLUSH_MS 10
#define PARTIAL_LOCK_MS	 10000

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

/*
 * Take the record's bitmap (chunks of rc bytes, n of them, in len bytes)
 * into p's chunks: a chunk is held when every old chunk it overlaps was.
 * 1 = done, 0 = the record does not describe this size.
 */
static int remap(struct rd_partial *p, uint32_t rc, uint64_t n, const uint8_t *bm, size_t len)
{
	uint64_t c, o, first, last, end;
	int all;

	if (rc < 4096 || n != (p->id.size + rc - 1) / rc || len != (n + 7) / 8)
		return 0;
	for (c = 0; c < p->nchunks; c++) {
		end = (c + 1) * p->id.chunk_size;
		if (end > p->id.size)
			end = p->id.size;
		first = c * p->id.chunk_size / rc;
		last = (end - 1) / rc;
		all = 1;
		for (o = first; o <= last && all; o++)
			all = bm[o / 8] >> (o % 8) & 1;
		if (all)
			p->bm[c / 8] |= (uint8_t)(1u << (c % 8));
	}
	p->dirty = rc != p->id.chunk_size;
	return 1;
}

/* Load and check the record; 1 if it matches p->id, 0 if not (or none). */
static int rec_load(struct rd_partial *p, int *changed)
{
	struct stat st;
	uint8_t *buf = NULL;
	ssize_t r;
	int fd, ok = 0;

	fd = rd_openat(p->pfd, p->rec, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < PARTIAL_HDR + 8)
		goto out;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		goto out;
	r = pread(fd, buf, (size_t)st.st_size, 0);
	if (r != st.st_size || memcmp(buf, PARTIAL_MAGIC, 8) ||
	    get64(buf + (size_t)st.st_size - 8) != fnv1a(buf, (size_t)st.st_size - 8,
							 0xcbf29ce484222325ull))
		goto out;
	if (get64(buf + 8) != p->id.size || (int64_t)get64(buf + 16) != p->id.mtime_sec ||
	    get32(buf + 24) != p->id.mtime_nsec) {
		*changed = 1;
		goto out;
	}
	ok = remap(p, get32(buf + 28), get64(buf + 64), buf + PARTIAL_HDR,
		   (size_t)st.st_size - PARTIAL_HDR - 8);
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
	p->bmlen = (size_t)((p->nchunks + 7) / 8);
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

void rd_partial_trim(const struct rd_partial *p, int fd)
{
	uint64_t c = 0, start;

	while (c < p->nchunks) {
		while (c < p->nchunks && rd_partial_has(p, c))
			c++;
		start = c;
		while (c < p->nchunks && !rd_partial_has(p, c))
			c++;
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
	uint64_t t = now_ms();
	uint8_t *buf;
	size_t len = rec_len(p), off = 0;
	ssize_t r;
	int rfd, ret = 0;

	if (!p->dirty || (!force && t - p->last_ms < PARTIAL_FLUSH_MS))
		return 0;
	if (p->fsync_data && fdatasync(fd) < 0)
		return -errno;
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, PARTIAL_MAGIC, 8);
	put64(buf + 8, p->id.size);
	put64(buf + 16, (uint64_t)p->id.mtime_sec);
	put32(buf + 24, p->id.mtime_nsec);
	put32(buf + 28, p->id.chunk_size);
	memcpy(buf + 32, p->id.digest, strnlen(p->id.digest, 32));
	put64(buf + 64, p->nchunks);
	memcpy(buf + PARTIAL_HDR, p->bm, p->bmlen);
	put64(buf + len - 8, fnv1a(buf, len - 8, 0xcbf29ce484222325ull));
	rfd = create_excl(p->pfd, p->rec_new);
	if (rfd < 0) {
		ret = rfd;
		goto out;
	}
	while (off < len) {
		r = pwrite(rfd, buf + off, len - off, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		off += (size_t)r;
	}
	if (!ret && p->fsync_data && fsync(rfd) < 0)
		ret = -errno;
	close(rfd);
	if (!ret && rd_renameat(p->pfd, p->rec_new, p->pfd, p->rec) < 0)
		ret = -errno;
	if (ret)
		rd_unlinkat(p->pfd, p->rec_new, 0);
	else {
		p->dirty = 0;
		p->last_ms = t;
	}
out:
	free(buf);
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
	size_t len, off = 0, n;
	ssize_t r;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < PARTIAL_HDR + 8 ||
	    (uint64_t)st.st_size > PARTIAL_HDR + PARTIAL_BITMAP_MAX + 8)
		return 0;
	len = (size_t)st.st_size - 8; /* the bytes the check covers */
	while (off < len) {
		n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		r = pread(fd, buf, n, (off_t)off);
		if (r != (ssize_t)n)
			return 0;
		if (!off) {
			if (n < PARTIAL_HDR || memcmp(buf, PARTIAL_MAGIC, 8))
				return 0;
			nchunks = get64(buf + 64);
			if (nchunks > (uint64_t)PARTIAL_BITMAP_MAX * 8 ||
			    len != PARTIAL_HDR + (nchunks + 7) / 8)
				return 0;
		}
		h = fnv1a(buf, n, h);
		off += n;
	}
	return pread(fd, tail, 8, (off_t)len) == 8 && get64(tail) == h;
}
