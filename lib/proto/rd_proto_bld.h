/* SPDX-License-Identifier: MIT */
/*
 * Test support for lib/proto's cmocka tests (testonly, header only): a
 * tiny big-endian builder for hand-made, often malformed, messages and
 * the two checks on decoding one. Shared by proto_test and filez_test;
 * rd_proto_testutil stays free of cmocka for the fuzz harness.
 */
#ifndef RDCP_PROTO_RD_PROTO_BLD_H
#define RDCP_PROTO_RD_PROTO_BLD_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"

struct bld {
	uint8_t b[RD_CTRL_MAX + 64];
	size_t n;
};

static inline void b_hdr(struct bld *b, uint8_t type)
{
	memset(b, 0, sizeof(*b));
	b->b[0] = type;
	b->n = RD_HDR_LEN;
}

static inline void b_raw(struct bld *b, const void *p, size_t n)
{
	assert_true(n <= sizeof(b->b) - b->n);
	if (n)
		memcpy(b->b + b->n, p, n);
	b->n += n;
}

static inline void b_u8(struct bld *b, uint8_t v)
{
	b_raw(b, &v, 1);
}

static inline void b_u16(struct bld *b, uint16_t v)
{
	b_u8(b, (uint8_t)(v >> 8));
	b_u8(b, (uint8_t)v);
}

static inline void b_u32(struct bld *b, uint32_t v)
{
	b_u16(b, (uint16_t)(v >> 16));
	b_u16(b, (uint16_t)v);
}

static inline void b_u64(struct bld *b, uint64_t v)
{
	b_u32(b, (uint32_t)(v >> 32));
	b_u32(b, (uint32_t)v);
}

static inline void b_str(struct bld *b, const char *s, size_t n)
{
	b_u16(b, (uint16_t)n);
	b_raw(b, s, n);
}

static inline void b_strz(struct bld *b, const char *s)
{
	b_str(b, s, strlen(s));
}

/* Patch the header length to match what was built. */
static inline void b_fix(struct bld *b)
{
	uint32_t l = (uint32_t)(b->n - RD_HDR_LEN);

	b->b[4] = (uint8_t)(l >> 24);
	b->b[5] = (uint8_t)(l >> 16);
	b->b[6] = (uint8_t)(l >> 8);
	b->b[7] = (uint8_t)l;
}

/*
 * Decode b and require -RD_EPROTO with exactly the reason want (a failure
 * names the caller's line).
 */
#define expect_refused(b, want) expect_refused_at((b), (want), __FILE__, __LINE__)
#define expect_ok(b, m)		expect_ok_at((b), (m), __FILE__, __LINE__)

static inline void expect_refused_at(struct bld *b, const char *want, const char *file, int line)
{
	struct rd_msg m;
	const char *why = NULL;

	_assert_int_equal(cast_to_largest_integral_type(rd_msg_decode(b->b, b->n, &m, &why)),
			  cast_to_largest_integral_type(-RD_EPROTO), file, line);
	_assert_true(cast_to_largest_integral_type(why != NULL), "why", file, line);
	_assert_string_equal(why, want, file, line);
}

static inline void expect_ok_at(struct bld *b, struct rd_msg *m, const char *file, int line)
{
	const char *why = "unset";
	int r = rd_msg_decode(b->b, b->n, m, &why);

	if (r)
		print_error("refused: %s\n", why ? why : "(no reason)");
	_assert_int_equal(cast_to_largest_integral_type(r), 0, file, line);
	_assert_true(cast_to_largest_integral_type(why == NULL), "why == NULL", file, line);
}

#endif
