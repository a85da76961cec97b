/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/proto: bounds-checked big-endian cursors.
 *
 * Both cursors are "sticky": the first failure (no room, truncated input,
 * a length over its limit) is remembered and every later get/put becomes a
 * no-op, so a codec can read or write a whole message and check once at
 * the end. Nothing ever reads or writes outside [buf, buf + len).
 */
#ifndef RDCP_PROTO_RD_PROTO_BUF_H
#define RDCP_PROTO_RD_PROTO_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/proto/rd_proto.h"

struct rd_wcur {
	uint8_t *buf;
	size_t cap;
	size_t off;
	bool full; /* a put did not fit */
};

struct rd_rcur {
	const uint8_t *buf;
	size_t len;
	size_t off;
	const char *why; /* first failure, NULL if none */
};

static inline void rd_wcur_init(struct rd_wcur *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->off = 0;
	w->full = false;
}

static inline uint8_t *rd_wcur_room(struct rd_wcur *w, size_t n)
{
	uint8_t *p;

	if (w->full || w->cap - w->off < n) {
		w->full = true;
		return NULL;
	}
	p = w->buf + w->off;
	w->off += n;
	return p;
}

static inline void rd_put_u8(struct rd_wcur *w, uint8_t v)
{
	uint8_t *p = rd_wcur_room(w, 1);

	if (p)
		p[0] = v;
}

static inline void rd_put_u16(struct rd_wcur *w, uint16_t v)
{
	uint8_t *p = rd_wcur_room(w, 2);

	if (!p)
		return;
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void rd_put_u32(struct rd_wcur *w, uint32_t v)
{
	uint8_t *p = rd_wcur_room(w, 4);
	int i;

	if (!p)
		return;
	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void rd_put_u64(struct rd_wcur *w, uint64_t v)
{
	uint8_t *p = rd_wcur_room(w, 8);
	int i;

	if (!p)
		return;
	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static inline void rd_put_bytes(struct rd_wcur *w, const void *src, size_t n)
{
	uint8_t *p = rd_wcur_room(w, n);

	if (p && n)
		memcpy(p, src, n);
}

/* u16 length + bytes; the caller has checked len against its limit. */
static inline void rd_put_str(struct rd_wcur *w, const struct rd_str *s)
{
	rd_put_u16(w, s->len);
	rd_put_bytes(w, s->ptr, s->len);
}

static inline void rd_rcur_init(struct rd_rcur *r, const uint8_t *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->off = 0;
	r->why = NULL;
}

static inline void rd_rcur_fail(struct rd_rcur *r, const char *why)
{
	if (!r->why)
		r->why = why;
}

static inline const uint8_t *rd_rcur_take(struct rd_rcur *r, size_t n)
{
	const uint8_t *p;

	if (r->why)
		return NULL;
	if (r->len - r->off < n) {
		r->why = "message truncated";
		return NULL;
	}
	p = r->buf + r->off;
	r->off += n;
	return p;
}

static inline size_t rd_rcur_left(const struct rd_rcur *r)
{
	return r->len - r->off;
}

static inline uint8_t rd_get_u8(struct rd_rcur *r)
{
	const uint8_t *p = rd_rcur_take(r, 1);

	return p ? p[0] : 0;
}

static inline uint16_t rd_get_u16(struct rd_rcur *r)
{
	const uint8_t *p = rd_rcur_take(r, 2);

	return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

static inline uint32_t rd_get_u32(struct rd_rcur *r)
{
	const uint8_t *p = rd_rcur_take(r, 4);
	uint32_t v = 0;
	int i;

	if (!p)
		return 0;
	for (i = 0; i < 4; i++)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t rd_get_u64(struct rd_rcur *r)
{
	const uint8_t *p = rd_rcur_take(r, 8);
	uint64_t v = 0;
	int i;

	if (!p)
		return 0;
	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * u16 length + bytes. The length is checked against max (failing with
 * too_long) before it is checked against the bytes left; s points into the
 * buffer. On failure s is the empty string.
 */
static inline void rd_get_str(struct rd_rcur *r, struct rd_str *s, size_t max, const char *too_long)
{
	uint16_t len = rd_get_u16(r);
	const uint8_t *p;

	s->ptr = NULL;
	s->len = 0;
	if (r->why)
		return;
	if (len > max) {
		r->why = too_long;
		return;
	}
	p = rd_rcur_take(r, len);
	if (!p)
		return;
	s->ptr = (const char *)p;
	s->len = len;
}

#endif
