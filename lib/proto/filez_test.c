// SPDX-License-Identifier: MIT
/*
 * FILEZ (rd_proto.h section 2, Wide batches): seeded random round trips
 * through rd_filez_put, rd_msg_encode, rd_msg_decode and rd_filez_next;
 * the size of a rerun's entries; the encoder's refusals; hostile
 * messages built by hand; DONES up to RD_BATCH_WIDE.
 *
 * A failing round trip names its seed; run that one alone with
 *	bazel test //lib/proto:filez_test --test_env=FILEZ_SEED=<seed>
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/proto/rd_proto_bld.h"

/* What one FILEZ payload may hold: the engine's own buffer. */
#define FZ_CAP	   (RD_MSG_MAX - RD_HDR_LEN - 6)
#define NSEEDS	   24
#define PER_SEED   3000
#define DIR_MAXLEN 3500

static uint8_t raw[FZ_CAP];
static uint8_t wire[RD_CTRL_MAX];

/* One entry with its own path and target bytes. */
struct ent {
	struct rd_msg_file f;
	char path[RD_PATH_MAX];
	char target[RD_PATH_MAX];
};

static void ent_target(struct ent *e, const char *target, size_t tlen)
{
	if (tlen)
		memcpy(e->target, target, tlen);
	e->f.target.ptr = tlen ? e->target : NULL;
	e->f.target.len = (uint16_t)tlen;
}

static void ent_set(struct ent *e, const char *path, size_t plen, const char *target, size_t tlen)
{
	if (plen)
		memcpy(e->path, path, plen);
	e->f.path.ptr = e->path;
	e->f.path.len = (uint16_t)plen;
	ent_target(e, target, tlen);
}

/* dst = src, with its own copy of the bytes in use. */
static void ent_copy(struct ent *dst, const struct ent *src)
{
	dst->f = src->f;
	ent_set(dst, src->f.path.ptr, src->f.path.len, src->f.target.ptr, src->f.target.len);
}

/* Is f a valid FILE? Asked of the public encoder, as a FILE message. */
static bool file_ok(const struct rd_msg_file *f)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_FILE;
	m.u.file = *f;
	return rd_msg_encode(wire, sizeof(wire), &m) > 0;
}

static size_t prefix_len(const struct rd_str *a, const struct rd_str *b)
{
	size_t n = a->len < b->len ? a->len : b->len, i = 0;

	while (i < n && a->ptr[i] == b->ptr[i])
		i++;
	return i;
}

/*
 * The bytes f costs after prev (NULL: the first of its message), from the
 * layout in rd_proto.h: fields only where they changed, the path after
 * what it shares with the previous one.
 */
static size_t entry_len(const struct rd_msg_file *prev, const struct rd_msg_file *f)
{
	size_t n = 3 + 2 + 2 + f->path.len;

	if (!prev)
		n += 4 + 4 + 4 + 8;
	else {
		n += f->mode != prev->mode ? 4 : 0;
		n += f->uid != prev->uid ? 4 : 0;
		n += f->gid != prev->gid ? 4 : 0;
		n += f->mtime_sec != prev->mtime_sec ? 8 : 0;
		n -= prefix_len(&prev->path, &f->path);
	}
	n += f->mtime_nsec ? 4 : 0;
	n += f->size > UINT32_MAX ? 8 : f->size ? 4 : 0;
	n += f->target.len ? 2u + f->target.len : 0;
	return n;
}

/* ---- a seeded stream of valid entries ---- */

struct gen {
	uint64_t s, seed;
	bool lean; /* mostly a rerun's files: FILEZ fill up by count */
	char dir[RD_PATH_MAX];
	size_t dlen;
	size_t up[128]; /* dlen of each enclosing directory */
	unsigned depth;
	unsigned fileno;
	char reg[RD_PATH_MAX]; /* the last REG's path, for HLINK */
	size_t reglen;
	uint32_t reg_mode;
	struct ent prev;
	bool have_prev;
	uint32_t id;
};

/* What the generator made, over all seeds: each kind must turn up. */
struct cover {
	unsigned type[RD_FT_HLINK + 1];
	unsigned size64, size32max, size0, nsec, max_path, max_target;
	unsigned prefix_of_prev, same_as_prev, unrelated, post, more, kept_all;
	unsigned full_room, full_count, msgs, single;
};

static struct cover cov;

static uint64_t rnd(struct gen *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned pick(struct gen *g, unsigned n)
{
	return (unsigned)(rnd(g) % n);
}

/* One path component of len bytes at p: no '/', no NUL, not "." or "..". */
static void component(struct gen *g, char *p, size_t len)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz0123456789._-";
	size_t i;
	bool wild = pick(g, 8) == 0;

	for (i = 0; i < len; i++) {
		if (wild) {
			do
				p[i] = (char)(1 + pick(g, 255));
			while (p[i] == '/');
		} else {
			p[i] = plain[pick(g, sizeof(plain) - 1)];
		}
	}
	if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
		p[0] = 'x';
}

/* path = g->dir + "/" + a random name of len bytes; the length. */
static size_t in_dir(struct gen *g, char *path, size_t len)
{
	size_t n = 0;

	memcpy(path, g->dir, g->dlen);
	n = g->dlen;
	if (n)
		path[n++] = '/';
	component(g, path + n, len);
	return n + len;
}

static uint32_t some_u32(struct gen *g)
{
	static const uint32_t v[] = {0, 1, 1000, 65534, UINT32_MAX};

	return pick(g, 3) ? v[pick(g, 5)] : (uint32_t)rnd(g);
}

static int64_t some_sec(struct gen *g)
{
	static const int64_t v[] = {0, -1, INT64_MIN, INT64_MAX, 1700000000};

	return pick(g, 2) ? v[pick(g, 5)] : (int64_t)rnd(g);
}

static uint64_t some_size(struct gen *g)
{
	static const uint64_t v[] = {0,		1, 4096, UINT32_MAX, 1ull << 32, (1ull << 32) + 1,
				     UINT64_MAX};

	switch (pick(g, 4)) {
	case 0:
		return v[pick(g, 7)];
	case 1:
		return rnd(g) | 1ull << 32;
	default:
		return (uint32_t)rnd(g) >> pick(g, 32);
	}
}

/* A symlink target: any bytes but NUL, '/' and ".." welcome, up to RD_PATH_MAX. */
static size_t symlink_target(struct gen *g, char *t)
{
	static const char *const canned[] = {"..", "../../etc/passwd", "/abs/olute", "a//b/./c"};
	size_t n, i;

	switch (pick(g, 6)) {
	case 0:
		i = pick(g, 4);
		n = strlen(canned[i]);
		memcpy(t, canned[i], n);
		return n;
	case 1:
		n = RD_PATH_MAX;
		break;
	default:
		n = 1 + pick(g, 40);
		break;
	}
	for (i = 0; i < n; i++)
		t[i] = (char)(1 + pick(g, 255));
	return n;
}

/* The next entry's path into e (and its type if the path decides it). */
static void gen_path(struct gen *g, struct ent *e, bool *dir, bool *post)
{
	char buf[RD_PATH_MAX];
	size_t n = 0, k;
	unsigned op = g->lean && pick(g, 40) ? 99 : pick(g, 100), i;

	*dir = *post = false;
	if (op < 10 && g->dlen + 40 < DIR_MAXLEN && g->depth < 128) {
		/* into a new directory */
		n = in_dir(g, buf, 1 + pick(g, 24));
		g->up[g->depth++] = g->dlen;
		memcpy(g->dir, buf, n);
		g->dlen = n;
		*dir = true;
	} else if (op < 20 && g->depth) {
		/* the directory again, after its contents: a prefix of before */
		memcpy(buf, g->dir, g->dlen);
		n = g->dlen;
		g->dlen = g->up[--g->depth];
		*dir = *post = true;
	} else if (op < 27) {
		/* somewhere else entirely */
		k = 1 + pick(g, 4);
		for (i = 0; i < k; i++) {
			size_t c = 1 + pick(g, 30);

			if (i)
				buf[n++] = '/';
			component(g, buf + n, c);
			n += c;
		}
		cov.unrelated++;
	} else if (op < 31 && g->dlen + 2 <= RD_PATH_MAX) {
		/* as long as a path may be */
		n = in_dir(g, buf, RD_PATH_MAX - g->dlen - (g->dlen ? 1 : 0));
	} else if (op < 34 && g->have_prev) {
		/* the previous path again, or its parent */
		n = g->prev.f.path.len;
		memcpy(buf, g->prev.path, n);
		if (pick(g, 2)) {
			k = n;
			while (k && buf[k - 1] != '/')
				k--;
			n = k > 1 ? k - 1 : n;
		}
	} else {
		/* the next file of this directory: f000123.dat after f000122.dat */
		char name[32];
		int len = snprintf(name, sizeof(name), "f%06u.dat", g->fileno++);

		n = g->dlen;
		memcpy(buf, g->dir, n);
		if (n)
			buf[n++] = '/';
		memcpy(buf + n, name, (size_t)len);
		n += (size_t)len;
	}
	ent_set(e, buf, n, NULL, 0);
}

/* A valid FILE with the next id; fields often kept from the previous one. */
static void gen_entry(struct gen *g, struct ent *e)
{
	static const uint32_t special[] = {S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK};
	const struct rd_msg_file *p = g->have_prev ? &g->prev.f : NULL;
	struct rd_msg_file *f = &e->f;
	char target[RD_PATH_MAX];
	size_t tlen = 0;
	bool dir, post;
	unsigned t;

	memset(f, 0, sizeof(*f));
	gen_path(g, e, &dir, &post);
	t = pick(g, 100);
	if (dir)
		f->type = RD_FT_DIR;
	else if (t < 62 || (g->lean && pick(g, 40)))
		f->type = RD_FT_REG;
	else if (t < 70)
		f->type = RD_FT_DIR;
	else if (t < 82)
		f->type = RD_FT_SYMLINK;
	else if (t < 90)
		f->type = RD_FT_SPECIAL;
	else
		f->type = g->reglen ? RD_FT_HLINK : RD_FT_REG;

	f->id = g->id++;
	f->uid = p && pick(g, 4) ? p->uid : some_u32(g);
	f->gid = p && pick(g, 4) ? p->gid : some_u32(g);
	f->mtime_sec = p && pick(g, 10) < 7 ? p->mtime_sec : some_sec(g);
	f->mtime_nsec = pick(g, 2) ? 0 : pick(g, 4) ? (uint32_t)(rnd(g) % 1000000000u) : 999999999u;
	switch (f->type) {
	case RD_FT_REG:
		f->mode = p && p->type == RD_FT_REG && pick(g, 4)
			      ? p->mode
			      : (pick(g, 8) ? S_IFREG | pick(g, 010000) : (uint32_t)rnd(g));
		f->size = some_size(g);
		f->flags = (uint8_t)(pick(g, 8) ? 0 : RD_FF_ROOT);
		f->flags |= (uint8_t)(pick(g, 6) ? 0 : RD_FF_LINKED);
		if (!(f->flags & RD_FF_ROOT) && !pick(g, 10))
			f->flags |= RD_FF_CONTENTS;
		if (!pick(g, g->lean ? 1000 : 40)) {
			f->flags |= RD_FF_MORE;
			f->flags |= (uint8_t)(pick(g, 3) == 0 ? RD_FF_RANGE
					      : pick(g, 2)    ? RD_FF_COMMIT
							      : 0);
		}
		g->reglen = f->path.len;
		memcpy(g->reg, e->path, g->reglen);
		g->reg_mode = f->mode;
		break;
	case RD_FT_DIR:
		f->mode = S_IFDIR | (pick(g, 4) ? 0755 : pick(g, 010000));
		f->size = pick(g, 2) ? 0 : some_size(g);
		f->flags = (uint8_t)(post ? RD_FF_POST : 0);
		f->flags |= (uint8_t)(pick(g, 8) ? 0 : RD_FF_ROOT);
		f->flags |= (uint8_t)(pick(g, 8) ? 0 : RD_FF_IMPLIED);
		f->flags |= (uint8_t)(pick(g, 8) ? 0 : RD_FF_CONTENTS);
		f->flags |= (uint8_t)(pick(g, 30) ? 0 : RD_FF_MORE);
		cov.post += post;
		break;
	case RD_FT_SYMLINK:
		f->mode = S_IFLNK | 0777;
		tlen = symlink_target(g, target);
		f->size = tlen;
		f->flags = (uint8_t)(pick(g, 8) ? 0 : RD_FF_ROOT);
		cov.max_target += tlen == RD_PATH_MAX;
		break;
	case RD_FT_SPECIAL:
		f->mode = special[pick(g, 4)] | pick(g, 010000);
		f->size = S_ISCHR(f->mode) || S_ISBLK(f->mode) ? some_size(g) : 0;
		f->flags = (uint8_t)(pick(g, 8) ? 0 : RD_FF_CONTENTS);
		break;
	default: /* HLINK: to the last regular file */
		f->mode = g->reg_mode;
		f->size = pick(g, 2) ? 0 : some_size(g);
		f->flags = (uint8_t)(pick(g, 3) ? 0 : RD_FF_LINK_LAST);
		memcpy(target, g->reg, g->reglen);
		tlen = g->reglen;
		break;
	}
	ent_target(e, target, tlen);
	if (!file_ok(f))
		fail_msg("seed %#" PRIx64 ": the generator made an invalid FILE (id %" PRIu32 ")",
			 g->seed, f->id);

	cov.type[f->type]++;
	cov.size64 += f->size > UINT32_MAX;
	cov.size32max += f->size == UINT32_MAX;
	cov.size0 += f->size == 0;
	cov.nsec += f->mtime_nsec != 0;
	cov.max_path += f->path.len == RD_PATH_MAX;
	cov.more += !!(f->flags & RD_FF_MORE);
	if (p) {
		size_t k = prefix_len(&p->path, &f->path);

		cov.prefix_of_prev += k == f->path.len && k < p->path.len;
		cov.same_as_prev += k == f->path.len && k == p->path.len;
		cov.kept_all += f->mode == p->mode && f->uid == p->uid && f->gid == p->gid &&
				f->mtime_sec == p->mtime_sec;
	}
	ent_copy(&g->prev, e);
	g->have_prev = true;
}

/* ---- the round trip ---- */

static struct ent batch[RD_BATCH_WIDE];

#define FIELD_EQ(seed, i, got, want)                                                               \
	do {                                                                                       \
		if ((uint64_t)(got) != (uint64_t)(want))                                           \
			fail_msg("seed %#" PRIx64 ": entry %u: %s is %#" PRIx64 ", put %#" PRIx64, \
				 (seed), (i), #got, (uint64_t)(got), (uint64_t)(want));            \
	} while (0)

/* Encode the n entries gathered in z/len as one FILEZ, decode, read back, compare. */
static void flush(uint64_t seed, const struct rd_filez *z, size_t len)
{
	struct rd_msg m, out;
	struct rd_msg_file f;
	struct rd_filez rz;
	const char *why = "unset";
	size_t off = 0;
	unsigned i;
	int n;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_FILEZ;
	m.u.files.n = (uint16_t)z->n;
	m.u.files.id = z->id;
	m.u.files.raw = raw;
	m.u.files.rawlen = len;
	n = rd_msg_encode(wire, sizeof(wire), &m);
	if (n != (int)(RD_HDR_LEN + 6 + len))
		fail_msg("seed %#" PRIx64 ": FILEZ of %u entries, %zu bytes: encoded to %d", seed,
			 z->n, len, n);
	if (rd_msg_decode(wire, (size_t)n, &out, &why))
		fail_msg("seed %#" PRIx64 ": FILEZ of %u entries refused: %s", seed, z->n, why);
	FIELD_EQ(seed, 0u, out.u.files.n, z->n);
	FIELD_EQ(seed, 0u, out.u.files.id, batch[0].f.id);
	rd_filez_start(&rz);
	for (i = 0; i < z->n; i++) {
		const struct rd_msg_file *w = &batch[i].f;

		if (rd_filez_next(&out.u.files, &off, &rz, &f))
			fail_msg("seed %#" PRIx64 ": entry %u does not read back", seed, i);
		FIELD_EQ(seed, i, f.id, out.u.files.id + i);
		FIELD_EQ(seed, i, f.id, w->id);
		FIELD_EQ(seed, i, f.type, w->type);
		FIELD_EQ(seed, i, f.flags, w->flags);
		FIELD_EQ(seed, i, f.mode, w->mode);
		FIELD_EQ(seed, i, f.uid, w->uid);
		FIELD_EQ(seed, i, f.gid, w->gid);
		FIELD_EQ(seed, i, f.size, w->size);
		FIELD_EQ(seed, i, f.mtime_sec, w->mtime_sec);
		FIELD_EQ(seed, i, f.mtime_nsec, w->mtime_nsec);
		FIELD_EQ(seed, i, f.path.len, w->path.len);
		FIELD_EQ(seed, i, f.target.len, w->target.len);
		if (memcmp(f.path.ptr, w->path.ptr, w->path.len))
			fail_msg("seed %#" PRIx64 ": entry %u: path differs", seed, i);
		if (w->target.len && memcmp(f.target.ptr, w->target.ptr, w->target.len))
			fail_msg("seed %#" PRIx64 ": entry %u: target differs", seed, i);
	}
	FIELD_EQ(seed, i, off, len);
	if (rd_filez_next(&out.u.files, &off, &rz, &f) != -RD_EPROTO)
		fail_msg("seed %#" PRIx64 ": an entry past the %u read", seed, z->n);
	cov.msgs++;
	cov.single += z->n == 1;
}

/* One seed: PER_SEED entries in as many FILEZ as they need. */
static void roundtrip_seed(uint64_t seed)
{
	static struct gen g;
	static struct ent e;
	struct rd_filez z;
	size_t len = 0, before, cost;
	unsigned k;
	int r;

	memset(&g, 0, sizeof(g));
	g.s = g.seed = seed;
	g.lean = seed % 4 == 1;
	/* some seeds end exactly at the highest id */
	g.id = seed % 3 ? (uint32_t)rnd(&g) % (UINT32_MAX - PER_SEED) : UINT32_MAX - PER_SEED + 1;
	rd_filez_start(&z);
	for (k = 0; k < PER_SEED; k++) {
		gen_entry(&g, &e);
		before = len;
		cost = entry_len(z.n ? &batch[z.n - 1].f : NULL, &e.f);
		r = rd_filez_put(&z, raw, sizeof(raw), &len, &e.f);
		if (r) {
			/* refused only when full: by count or by room; nothing written */
			if (r != -RD_EUSAGE || len != before ||
			    (z.n < RD_BATCH_WIDE && len + cost <= sizeof(raw)))
				fail_msg("seed %#" PRIx64 ": id %" PRIu32 " refused (%d) with %u "
					 "entries, %zu + %zu bytes",
					 seed, e.f.id, r, z.n, len, cost);
			cov.full_count += z.n == RD_BATCH_WIDE;
			cov.full_room += z.n < RD_BATCH_WIDE;
			flush(seed, &z, len);
			rd_filez_start(&z);
			before = len = 0;
			cost = entry_len(NULL, &e.f);
			if (rd_filez_put(&z, raw, sizeof(raw), &len, &e.f))
				fail_msg("seed %#" PRIx64 ": id %" PRIu32
					 " refused by a new message",
					 seed, e.f.id);
		}
		if (len - before != cost || z.id != (z.n == 1 ? e.f.id : batch[0].f.id))
			fail_msg("seed %#" PRIx64 ": id %" PRIu32
				 ": %zu bytes, not %zu; z.id %" PRIu32,
				 seed, e.f.id, len - before, cost, z.id);
		ent_copy(&batch[z.n - 1], &e);
		/* META follow the FILEZ an entry with RD_FF_MORE ends; now and then a short one */
		if ((e.f.flags & RD_FF_MORE) || !pick(&g, 300)) {
			flush(seed, &z, len);
			rd_filez_start(&z);
			len = 0;
		}
	}
	if (z.n)
		flush(seed, &z, len);
}

static void test_roundtrip(void **state)
{
	const char *env = getenv("FILEZ_SEED");
	uint64_t seed;
	unsigned i;

	if (env) {
		seed = strtoull(env, NULL, 0);
		print_message("FILEZ_SEED=%#" PRIx64 "\n", seed);
		roundtrip_seed(seed);
		return;
	}
	memset(&cov, 0, sizeof(cov));
	for (i = 0; i < NSEEDS; i++)
		roundtrip_seed(0x5eed0000u + i);
	/* the stream did make every kind of entry and message it is meant to */
	for (i = RD_FT_REG; i <= RD_FT_HLINK; i++)
		assert_true(cov.type[i] > 0);
	assert_true(cov.size64 > 0 && cov.size32max > 0 && cov.size0 > 0 && cov.nsec > 0);
	assert_true(cov.max_path > 0 && cov.max_target > 0);
	assert_true(cov.prefix_of_prev > 0 && cov.same_as_prev > 0 && cov.unrelated > 0);
	assert_true(cov.post > 0 && cov.more > 0 && cov.kept_all > 0);
	print_message("%u messages (%u full by room, %u by count, %u of one entry)\n", cov.msgs,
		      cov.full_room, cov.full_count, cov.single);
	assert_true(cov.full_room > 0 && cov.full_count > 0 && cov.single > 0);
}

/* ---- size ---- */

/* File i of a rerun's directory d0123: what a FILEZ mostly carries. */
static void rerun_entry(struct ent *e, unsigned i)
{
	char p[32];
	int n = snprintf(p, sizeof(p), "d0123/f%06u.dat", i);

	memset(&e->f, 0, sizeof(e->f));
	e->f.id = 7000 + i;
	e->f.type = RD_FT_REG;
	e->f.mode = 0100644;
	e->f.uid = 1000;
	e->f.gid = 1000;
	e->f.mtime_sec = 1700000000;
	e->f.size = 3000000000u - i;
	ent_set(e, p, (size_t)n, NULL, 0);
}

static int encode_batch(uint8_t type, uint16_t n, uint32_t id, const uint8_t *p, size_t len)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = type;
	m.u.files.n = n;
	m.u.files.id = id;
	m.u.files.raw = p;
	m.u.files.rawlen = len;
	return rd_msg_encode(wire, sizeof(wire), &m);
}

static void test_size(void **state)
{
	static uint8_t files[2][FZ_CAP];
	size_t len = 0, before, flen[2] = {0, 0};
	struct rd_filez z;
	struct ent e;
	int zbytes, fbytes = 0;
	unsigned i;

	/* f000123 after f000122: 3 + size 4 + keep 2 + rest "3.dat" 2 + 5 */
	rd_filez_start(&z);
	rerun_entry(&e, 122);
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	before = len;
	rerun_entry(&e, 123);
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	print_message("a rerun's entry: %zu bytes\n", len - before);
	assert_true(len - before <= 20);

	/* 128 of them: one FILEZ against the two FILES they need */
	rd_filez_start(&z);
	len = 0;
	for (i = 0; i < 128; i++) {
		rerun_entry(&e, i);
		assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
		assert_int_equal(
		    rd_files_put(files[i / RD_BATCH_MAX], FZ_CAP, &flen[i / RD_BATCH_MAX], &e.f),
		    0);
	}
	zbytes = encode_batch(RD_MSG_FILEZ, 128, z.id, raw, len);
	assert_true(zbytes > 0);
	for (i = 0; i < 2; i++) {
		int n = encode_batch(RD_MSG_FILES, RD_BATCH_MAX, 0, files[i], flen[i]);

		assert_true(n > 0);
		fbytes += n;
	}
	print_message("128 entries: FILEZ %d bytes, FILES %d\n", zbytes, fbytes);
	assert_true(3 * zbytes < fbytes);
}

/* ---- the encoder's refusals ---- */

/* f refused by rd_filez_put with z, *len and the bytes so far untouched. */
#define put_refused(z, cap, len, f) put_refused_at((z), (cap), (len), (f), __LINE__)

static void put_refused_at(struct rd_filez *z, size_t cap, size_t *len, const struct rd_msg_file *f,
			   int line)
{
	static struct rd_filez z0;
	static uint8_t raw0[FZ_CAP];
	size_t len0 = *len;
	int r;

	memcpy(&z0, z, sizeof(z0));
	memcpy(raw0, raw, len0 < sizeof(raw0) ? len0 : sizeof(raw0));
	r = rd_filez_put(z, raw, cap, len, f);
	if (r != -RD_EUSAGE)
		fail_msg("line %d: id %" PRIu32 " put: %d, not -RD_EUSAGE", line, f->id, r);
	if (*len != len0 || memcmp(&z0, z, sizeof(z0)) ||
	    memcmp(raw0, raw, len0 < sizeof(raw0) ? len0 : sizeof(raw0)))
		fail_msg("line %d: a refused put changed z, len or the bytes", line);
}

static void plain(struct ent *e, uint32_t id, const char *path)
{
	memset(&e->f, 0, sizeof(e->f));
	e->f.id = id;
	e->f.type = RD_FT_REG;
	e->f.mode = 0100644;
	e->f.size = 10;
	ent_set(e, path, strlen(path), NULL, 0);
}

/* The ways a FILE is not valid (file_check in rd_proto.c), one by one on a good one. */
static void spoil(struct ent *e, unsigned k)
{
	static const char *const bad_paths[] = {"a/../b", "/abs", "a//b", "a/", ".", "..", ""};
	const unsigned npaths = sizeof(bad_paths) / sizeof(bad_paths[0]);

	if (k < npaths) {
		ent_set(e, bad_paths[k], strlen(bad_paths[k]), NULL, 0);
		return;
	}
	switch (k - npaths) {
	case 0:
		e->f.type = 0;
		break;
	case 1:
		e->f.type = RD_FT_HLINK + 1;
		break;
	case 2:
		ent_set(e, "a\0b", 3, NULL, 0);
		break;
	case 3:
		e->f.mtime_nsec = 1000000000u;
		break;
	case 4: /* a target on a regular file */
		ent_target(e, "t", 1);
		break;
	case 5: /* a symlink without one */
		e->f.type = RD_FT_SYMLINK;
		break;
	case 6:
		e->f.type = RD_FT_SYMLINK;
		ent_target(e, "t\0u", 3);
		break;
	case 7:
		e->f.type = RD_FT_HLINK;
		ent_target(e, "../x", 4);
		break;
	case 8:
		e->f.type = RD_FT_SYMLINK;
		e->f.flags = RD_FF_MORE;
		ent_target(e, "t", 1);
		break;
	case 9:
		e->f.flags = RD_FF_RANGE; /* without RD_FF_MORE */
		break;
	case 10:
		e->f.type = RD_FT_SPECIAL; /* a regular file's mode */
		break;
	default:
		e->f.type = RD_FT_SPECIAL;
		e->f.mode = S_IFIFO | 0644; /* a device number on a fifo */
		break;
	}
}

#define NSPOIL 19

static void test_put_refusals(void **state)
{
	struct rd_filez z;
	struct ent e;
	size_t len, one;
	unsigned k, i;

	/* not a valid FILE: as the first entry and after one */
	for (k = 0; k < NSPOIL; k++) {
		rd_filez_start(&z);
		len = 0;
		plain(&e, 1, "a/x");
		spoil(&e, k);
		assert_false(file_ok(&e.f));
		put_refused(&z, sizeof(raw), &len, &e.f);
		plain(&e, 1, "a/x");
		assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
		plain(&e, 2, "a/y");
		spoil(&e, k);
		put_refused(&z, sizeof(raw), &len, &e.f);
	}

	/* ids out of turn: the same again, a gap, one before */
	rd_filez_start(&z);
	len = 0;
	plain(&e, 10, "a");
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	assert_int_equal(z.id, 10);
	for (i = 0; i < 3; i++) {
		static const uint32_t wrong[] = {10, 12, 9};

		plain(&e, wrong[i], "b");
		put_refused(&z, sizeof(raw), &len, &e.f);
	}
	plain(&e, 11, "b");
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	/* up to the highest id, not past it: after UINT32_MAX comes a new message, not 0 */
	rd_filez_start(&z);
	len = 0;
	plain(&e, UINT32_MAX - 1, "a");
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	plain(&e, UINT32_MAX, "b");
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	plain(&e, 0, "c");
	put_refused(&z, sizeof(raw), &len, &e.f);
	assert_true(encode_batch(RD_MSG_FILEZ, (uint16_t)z.n, z.id, raw, len) > 0);
	rd_filez_start(&z);
	len = 0;
	assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);

	/* RD_BATCH_WIDE entries and no more; those go out as one FILEZ */
	rd_filez_start(&z);
	len = 0;
	for (i = 0; i < RD_BATCH_WIDE; i++) {
		plain(&e, 100 + i, "a");
		assert_int_equal(rd_filez_put(&z, raw, sizeof(raw), &len, &e.f), 0);
	}
	plain(&e, 100 + i, "a");
	put_refused(&z, sizeof(raw), &len, &e.f);
	assert_true(encode_batch(RD_MSG_FILEZ, RD_BATCH_WIDE, z.id, raw, len) > 0);

	/* no room: not even one byte short; the same entry then opens a new message */
	plain(&e, 1, "a");
	one = entry_len(NULL, &e.f);
	rd_filez_start(&z);
	len = 0;
	put_refused(&z, one - 1, &len, &e.f);
	assert_int_equal(z.n, 0);
	assert_int_equal(rd_filez_put(&z, raw, one, &len, &e.f), 0);
	assert_int_equal(len, one);
	plain(&e, 2, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	e.f.uid = 5; /* every field differs: as dear as a first entry */
	e.f.gid = 5;
	e.f.mode = 0100600;
	e.f.mtime_sec = 5;
	put_refused(&z, one + entry_len(NULL, &e.f) - 1, &len, &e.f);
	put_refused(&z, one - 1, &len, &e.f); /* *len past cap */
	rd_filez_start(&z);
	len = 0;
	assert_int_equal(rd_filez_put(&z, raw, one + entry_len(NULL, &e.f) - 1, &len, &e.f), 0);
	assert_int_equal(z.id, 2);
	assert_true(encode_batch(RD_MSG_FILEZ, 1, z.id, raw, len) > 0);
}

/* ---- hostile messages ---- */

/* One compact entry as a peer may write it; rlen/tlen 0: strlen. */
struct fz {
	uint8_t type; /* 0: RD_FT_REG */
	uint8_t flags, have;
	uint32_t mode, uid, gid;
	int64_t sec;
	uint32_t nsec;
	uint64_t size;
	uint16_t keep;
	const char *rest;
	size_t rlen;
	const char *target;
	size_t tlen;
};

static void b_fz_head(struct bld *b, uint16_t n, uint32_t id)
{
	b_hdr(b, RD_MSG_FILEZ);
	b_u16(b, n);
	b_u32(b, id);
}

static void b_fz(struct bld *b, const struct fz *e)
{
	b_u8(b, e->type ? e->type : RD_FT_REG);
	b_u8(b, e->flags);
	b_u8(b, e->have);
	if (e->have & RD_FZ_MODE)
		b_u32(b, e->mode);
	if (e->have & RD_FZ_UID)
		b_u32(b, e->uid);
	if (e->have & RD_FZ_GID)
		b_u32(b, e->gid);
	if (e->have & RD_FZ_SEC)
		b_u64(b, (uint64_t)e->sec);
	if (e->have & RD_FZ_NSEC)
		b_u32(b, e->nsec);
	if (e->have & RD_FZ_SIZE32)
		b_u32(b, (uint32_t)e->size);
	if (e->have & RD_FZ_SIZE64)
		b_u64(b, e->size);
	b_u16(b, e->keep);
	b_str(b, e->rest, e->rlen ? e->rlen : strlen(e->rest));
	if (e->have & RD_FZ_TARGET)
		b_str(b, e->target, e->tlen ? e->tlen : strlen(e->target));
}

/* A first entry (all of RD_FZ_FIRST) of path p. */
static void b_fz_first(struct bld *b, const char *p)
{
	b_fz(b, &(struct fz){.have = RD_FZ_FIRST, .mode = 0100644, .rest = p});
}

/* A later entry that keeps every field and keep bytes of the path. */
static void b_fz_next(struct bld *b, uint16_t keep, const char *rest, size_t rlen)
{
	b_fz(b, &(struct fz){.keep = keep, .rest = rest, .rlen = rlen});
}

/*
 * A FILEZ of first alone (second NULL) or of first and second, first NULL
 * a plain "a": refused with exactly why, or (why NULL) accepted. A failure
 * names the caller's line.
 */
#define fz_case(...) fz_case_at(__LINE__, __VA_ARGS__) /* (first, second, why) */

static void fz_case_at(int line, const struct fz *first, const struct fz *second, const char *why)
{
	struct rd_msg m;
	struct bld b;

	b_fz_head(&b, second ? 2 : 1, 1);
	if (first)
		b_fz(&b, first);
	else
		b_fz_first(&b, "a");
	if (second)
		b_fz(&b, second);
	b_fix(&b);
	if (why)
		expect_refused_at(&b, why, __FILE__, line);
	else
		expect_ok_at(&b, &m, __FILE__, line);
}

/* first (fine alone), then an entry of keep + rest that keeps every field. */
#define two(...) two_at(__LINE__, __VA_ARGS__) /* (first, keep, rest, rlen, why) */

static void two_at(int line, const char *first, uint16_t keep, const char *rest, size_t rlen,
		   const char *why)
{
	const struct fz f1 = {.have = RD_FZ_FIRST, .mode = 0100644, .rest = first};
	const struct fz f2 = {.keep = keep, .rest = rest, .rlen = rlen};

	fz_case_at(line, &f1, NULL, NULL);
	fz_case_at(line, &f1, &f2, why);
}

/* What a hand-made FILEZ means, read with rd_filez_next. */
static void test_decode_semantics(void **state)
{
	struct rd_filez z;
	struct rd_msg_file f;
	struct rd_msg m;
	struct bld b;
	size_t off = 0;

	b_fz_head(&b, 3, 40);
	b_fz(&b, &(struct fz){.have = RD_FZ_FIRST | RD_FZ_NSEC | RD_FZ_SIZE64,
			      .mode = 0100640,
			      .uid = 7,
			      .gid = 8,
			      .sec = -5,
			      .nsec = 9,
			      .size = 1ull << 40,
			      .rest = "dir/a"});
	b_fz_next(&b, 4, "bb", 0); /* everything kept; no nsec, no size */
	b_fz(&b, &(struct fz){.type = RD_FT_SYMLINK,
			      .flags = RD_FF_ROOT,
			      .have = RD_FZ_MODE | RD_FZ_SIZE32 | RD_FZ_TARGET,
			      .mode = 0120777,
			      .size = 3,
			      .keep = 3,
			      .rest = "",
			      .target = "../"});
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.files.n, 3);
	assert_int_equal(m.u.files.id, 40);
	rd_filez_start(&z);
	assert_int_equal(rd_filez_next(&m.u.files, &off, &z, &f), 0);
	assert_int_equal(f.id, 40);
	assert_int_equal(f.size, 1ull << 40);
	assert_int_equal(f.mtime_sec, -5);
	assert_int_equal(f.mtime_nsec, 9);
	assert_int_equal(rd_filez_next(&m.u.files, &off, &z, &f), 0);
	assert_int_equal(f.id, 41);
	assert_int_equal(f.type, RD_FT_REG);
	assert_int_equal(f.mode, 0100640);
	assert_int_equal(f.uid, 7);
	assert_int_equal(f.gid, 8);
	assert_int_equal(f.mtime_sec, -5);
	assert_int_equal(f.mtime_nsec, 0);
	assert_int_equal(f.size, 0);
	assert_int_equal(f.target.len, 0);
	assert_int_equal(f.path.len, 6);
	assert_memory_equal(f.path.ptr, "dir/bb", 6);
	assert_int_equal(rd_filez_next(&m.u.files, &off, &z, &f), 0);
	assert_int_equal(f.id, 42);
	assert_int_equal(f.type, RD_FT_SYMLINK);
	assert_int_equal(f.flags, RD_FF_ROOT);
	assert_int_equal(f.mode, 0120777);
	assert_int_equal(f.uid, 7);
	assert_int_equal(f.size, 3);
	assert_int_equal(f.path.len, 3);
	assert_memory_equal(f.path.ptr, "dir", 3);
	assert_int_equal(f.target.len, 3);
	assert_memory_equal(f.target.ptr, "../", 3);
	assert_int_equal(off, m.u.files.rawlen);
	assert_int_equal(rd_filez_next(&m.u.files, &off, &z, &f), -RD_EPROTO);
}

static void test_refuse_counts_and_ids(void **state)
{
	struct rd_msg_file f;
	struct rd_filez z;
	struct rd_msg m;
	struct bld b;
	size_t off = 0;
	unsigned i;

	b_fz_head(&b, 0, 1);
	b_fix(&b);
	expect_refused(&b, "bad batch entry count");
	b_fz_head(&b, 0, 1);
	b_fz_first(&b, "a");
	b_fix(&b);
	expect_refused(&b, "bad batch entry count");
	for (i = RD_BATCH_WIDE; i <= RD_BATCH_WIDE + 1; i++) {
		unsigned k;

		b_fz_head(&b, (uint16_t)i, 1);
		b_fz_first(&b, "a");
		for (k = 1; k < i; k++)
			b_fz_next(&b, 1, "", 0);
		b_fix(&b);
		if (i == RD_BATCH_WIDE)
			expect_ok(&b, &m);
		else
			expect_refused(&b, "bad batch entry count");
	}
	/* and the encoder will not send such a count either */
	assert_int_equal(encode_batch(RD_MSG_FILEZ, 0, 1, b.b + RD_HDR_LEN + 6, 0), -RD_EUSAGE);
	assert_int_equal(encode_batch(RD_MSG_FILEZ, RD_BATCH_WIDE + 1, 1, b.b + RD_HDR_LEN + 6,
				      b.n - RD_HDR_LEN - 6),
			 -RD_EUSAGE);

	/* ids up to UINT32_MAX and not past it */
	b_fz_head(&b, 2, UINT32_MAX);
	b_fz_first(&b, "a");
	b_fz_next(&b, 0, "b", 0);
	b_fix(&b);
	expect_refused(&b, "entry ids past the last");
	assert_int_equal(
	    encode_batch(RD_MSG_FILEZ, 2, UINT32_MAX, b.b + RD_HDR_LEN + 6, b.n - RD_HDR_LEN - 6),
	    -RD_EUSAGE);
	b.b[RD_HDR_LEN + 5] = 0xfe; /* id UINT32_MAX - 1 */
	expect_ok(&b, &m);
	rd_filez_start(&z);
	assert_int_equal(rd_filez_next(&m.u.files, &off, &z, &f), 0);
	assert_int_equal(f.id, UINT32_MAX - 1);
	assert_int_equal(rd_filez_next(&m.u.files, &off, &z, &f), 0);
	assert_int_equal(f.id, UINT32_MAX);
	b_fz_head(&b, 1, UINT32_MAX);
	b_fz_first(&b, "a");
	b_fix(&b);
	expect_ok(&b, &m);
	for (i = 0; i < 2; i++) {
		unsigned k;

		b_fz_head(&b, RD_BATCH_WIDE, UINT32_MAX - (RD_BATCH_WIDE - 1) + i);
		b_fz_first(&b, "a");
		for (k = 1; k < RD_BATCH_WIDE; k++)
			b_fz_next(&b, 1, "", 0);
		b_fix(&b);
		if (i)
			expect_refused(&b, "entry ids past the last");
		else
			expect_ok(&b, &m);
	}
}

static void test_refuse_fields(void **state)
{
	static const uint8_t first[] = {RD_FZ_MODE, RD_FZ_UID, RD_FZ_GID, RD_FZ_SEC};
	static const uint8_t bad_types[] = {0, RD_FT_HLINK + 1, 0xff};
	struct bld b;
	size_t at;
	unsigned i;

	/* the first entry carries its fields: a message stands alone */
	for (i = 0; i <= 4; i++)
		fz_case(&(struct fz){.have = i < 4 ? RD_FZ_FIRST & ~first[i] : 0, .rest = "a"},
			NULL, "first compact entry without its fields");
	/* one size, not two: first entry and later */
	fz_case(&(struct fz){.have = RD_FZ_FIRST | RD_FZ_SIZE32 | RD_FZ_SIZE64, .rest = "a"}, NULL,
		"compact entry with two sizes");
	fz_case(NULL, &(struct fz){.have = RD_FZ_SIZE32 | RD_FZ_SIZE64, .rest = "b"},
		"compact entry with two sizes");
	/* as FILE would be: type, nanoseconds, targets */
	for (i = 0; i < sizeof(bad_types); i++) {
		b_fz_head(&b, 2, 1);
		b_fz_first(&b, "a");
		at = b.n;
		b_fz_next(&b, 0, "b", 0);
		b.b[at] = bad_types[i]; /* (b_fz writes 0 as RD_FT_REG) */
		b_fix(&b);
		expect_refused(&b, "bad file type");
	}
	fz_case(&(struct fz){.have = RD_FZ_FIRST | RD_FZ_NSEC, .nsec = 1000000000u, .rest = "a"},
		NULL, "mtime nanoseconds out of range");
	fz_case(NULL, &(struct fz){.type = RD_FT_SYMLINK, .rest = "b"}, "empty symlink target");
	fz_case(
	    NULL,
	    &(struct fz){.type = RD_FT_SYMLINK, .have = RD_FZ_TARGET, .rest = "b", .target = ""},
	    "empty symlink target");
	fz_case(NULL, &(struct fz){.have = RD_FZ_TARGET, .rest = "b", .target = "a"},
		"link target on a non-symlink");
	/* a hard link names its file */
	fz_case(NULL, &(struct fz){.type = RD_FT_HLINK, .rest = "b"}, "empty path");
	fz_case(NULL,
		&(struct fz){.type = RD_FT_HLINK, .have = RD_FZ_TARGET, .rest = "b", .target = "a"},
		NULL);
	/* RD_FF_MORE on the last entry only */
	fz_case(&(struct fz){.flags = RD_FF_MORE, .have = RD_FZ_FIRST, .rest = "a"},
		&(struct fz){.rest = "b"}, "metadata announced before the end of a batch");
	fz_case(NULL, &(struct fz){.flags = RD_FF_MORE, .rest = "b"}, NULL);
}

static void test_refuse_paths(void **state)
{
	static char prev[4001], rest[RD_PATH_MAX + 2];
	struct rd_msg m;
	struct bld b;

	/* keep no more than the previous path had; the first keeps nothing */
	two("ab", 2, "c", 0, NULL);
	two("ab", 3, "c", 0, "compact path keeps more than there was");
	two("ab", 0xffff, "", 0, "compact path keeps more than there was");
	fz_case(&(struct fz){.have = RD_FZ_FIRST, .keep = 1, .rest = "a"}, NULL,
		"compact path keeps more than there was");

	/* keep + rest up to RD_PATH_MAX: 4000 kept, "/q..." */
	memset(prev, 'p', 4000);
	rest[0] = '/';
	memset(rest + 1, 'q', sizeof(rest) - 1);
	two(prev, 4000, rest, RD_PATH_MAX - 4000, NULL);
	two(prev, 4000, rest, RD_PATH_MAX - 4000 + 1, "path too long");
	/* a rest, or a target, over it alone */
	fz_case(&(struct fz){.have = RD_FZ_FIRST, .rest = rest + 1, .rlen = RD_PATH_MAX + 1}, NULL,
		"path too long");
	fz_case(&(struct fz){.type = RD_FT_SYMLINK,
			     .have = RD_FZ_FIRST | RD_FZ_TARGET,
			     .rest = "a",
			     .target = rest + 1,
			     .tlen = RD_PATH_MAX + 1},
		NULL, "symlink target too long");

	/* harmless pieces, a bad whole: rd_path_check on what they make */
	two("a/..b", 4, "/c", 0, "'..' path component"); /* a/../c */
	two("a/..b", 4, "", 0, "'..' path component");	 /* a/.. */
	two(".x", 1, ".", 0, "'..' path component");	 /* .. */
	two("a/.b", 3, "", 0, "'.' path component");	 /* a/. */
	two("a/x", 2, "/b", 0, "empty path component");	 /* a//b */
	two("a/b", 2, "", 0, "trailing '/' in path");	 /* a/ */
	two("x", 0, "/etc/passwd", 0, "absolute path");
	two("ab", 1, "\0c", 2, "NUL byte in path"); /* a\0c */
	two("ab", 0, "", 0, "empty path");
	two("a/b", 3, "", 0, NULL); /* the same path again */
	two("a/b", 1, "", 0, NULL); /* a, its directory */

	/* trailing bytes, too few entries, and every cut of a good message */
	b_fz_head(&b, 1, 1);
	b_fz_first(&b, "a");
	b_u8(&b, 0);
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
	b_fz_head(&b, 1, 1); /* one entry more than n */
	b_fz_first(&b, "a");
	b_fz_next(&b, 0, "b", 0);
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
	b_fz_head(&b, 3, 1); /* one fewer */
	b_fz_first(&b, "a");
	b_fz_next(&b, 0, "b", 0);
	b_fix(&b);
	expect_refused(&b, "message truncated");
	b_fz_head(&b, 3, 1);
	b_fz_first(&b, "dir/a");
	b_fz(&b, &(struct fz){.type = RD_FT_SYMLINK,
			      .have = RD_FZ_SIZE64 | RD_FZ_NSEC | RD_FZ_TARGET,
			      .nsec = 1,
			      .size = 1ull << 33,
			      .keep = 4,
			      .rest = "b",
			      .target = "t"});
	b_fz_next(&b, 4, "c", 0);
	b_fix(&b);
	expect_ok(&b, &m);
	{
		size_t full = b.n;

		for (b.n = RD_HDR_LEN; b.n < full; b.n++) {
			b_fix(&b);
			expect_refused(&b, "message truncated");
		}
	}
}

/* ---- DONES ---- */

static void test_dones_wide(void **state)
{
	struct rd_msg m;
	struct bld b;
	unsigned i, n, items;

	for (items = 0; items < 2; items++) {
		for (n = RD_BATCH_WIDE; n <= RD_BATCH_WIDE + 1; n++) {
			b_hdr(&b, RD_MSG_DONES);
			b_u16(&b, (uint16_t)n);
			for (i = 0; i < n; i++) {
				b_u32(&b, 500 + i);
				b_u64(&b, (uint64_t)i << 33);
				if (items)
					b_u16(&b, 0);
			}
			b_fix(&b);
			if (n > RD_BATCH_WIDE) {
				expect_refused(&b, "bad batch entry count");
				continue;
			}
			expect_ok(&b, &m);
			assert_int_equal(m.u.dones.n, n);
			assert_int_equal(m.u.dones.has_items, items);
			assert_int_equal(m.u.dones.id[n - 1], 500 + n - 1);
			assert_int_equal(m.u.dones.bytes[n - 1], (uint64_t)(n - 1) << 33);
			/* the encoder writes the same bytes back, and no more entries */
			assert_int_equal(rd_msg_encode(wire, sizeof(wire), &m), (int)b.n);
			assert_memory_equal(wire, b.b, b.n);
			m.u.dones.n = RD_BATCH_WIDE + 1;
			assert_int_equal(rd_msg_encode(wire, sizeof(wire), &m), -RD_EUSAGE);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_size),
	    cmocka_unit_test(test_put_refusals),
	    cmocka_unit_test(test_decode_semantics),
	    cmocka_unit_test(test_refuse_counts_and_ids),
	    cmocka_unit_test(test_refuse_fields),
	    cmocka_unit_test(test_refuse_paths),
	    cmocka_unit_test(test_dones_wide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
