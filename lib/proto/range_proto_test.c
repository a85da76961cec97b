// SPDX-License-Identifier: MIT
/* Section 6 of rd_proto.h (ranges, COMMIT, WANT): encode, decode, refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"

static uint8_t buf[RD_CTRL_MAX];

static int roundtrip(const struct rd_msg *in, struct rd_msg *out, const char **why)
{
	int n = rd_msg_encode(buf, sizeof(buf), in);

	if (n < 0)
		return n;
	return rd_msg_decode(buf, (size_t)n, out, why);
}

static void file_msg(struct rd_msg *m, uint8_t type, uint8_t flags)
{
	memset(m, 0, sizeof(*m));
	m->hdr.type = RD_MSG_FILE;
	m->u.file.id = 1;
	m->u.file.type = type;
	m->u.file.flags = flags;
	m->u.file.mode = type == RD_FT_DIR ? 040755 : 0100644;
	m->u.file.size = type == RD_FT_REG ? 100 : 0;
	m->u.file.path.ptr = "a/b";
	m->u.file.path.len = 3;
}

static void test_file_flags(void **state)
{
	struct rd_msg m, out;
	const char *why;

	file_msg(&m, RD_FT_REG, RD_FF_RANGE | RD_FF_MORE);
	assert_int_equal(roundtrip(&m, &out, &why), 0);
	assert_int_equal(out.u.file.flags, RD_FF_RANGE | RD_FF_MORE);
	file_msg(&m, RD_FT_REG, RD_FF_COMMIT | RD_FF_MORE);
	assert_int_equal(roundtrip(&m, &out, &why), 0);
	/* refused: without MORE, on a directory, both at once */
	file_msg(&m, RD_FT_REG, RD_FF_RANGE);
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
	file_msg(&m, RD_FT_DIR, RD_FF_RANGE | RD_FF_MORE);
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
	file_msg(&m, RD_FT_REG, RD_FF_RANGE | RD_FF_COMMIT | RD_FF_MORE);
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
	/* and on the wire: a good FILE with RANGE patched onto a directory */
	file_msg(&m, RD_FT_DIR, RD_FF_MORE);
	int n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_true(n > 0);
	buf[8 + 5] |= RD_FF_RANGE; /* the flags byte of FILE */
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);
}

static void test_meta_range(void **state)
{
	struct rd_msg m, out;
	const char *why;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_META;
	m.u.meta.id = 7;
	m.u.meta.kind = RD_META_RANGE;
	m.u.meta.flags = RD_MF_LAST;
	m.u.meta.job = 0x1122334455667788ull;
	m.u.meta.off = 4096;
	m.u.meta.len = 8192;
	assert_int_equal(roundtrip(&m, &out, &why), 0);
	assert_int_equal(out.u.meta.kind, RD_META_RANGE);
	assert_true(out.u.meta.job == 0x1122334455667788ull);
	assert_true(out.u.meta.off == 4096 && out.u.meta.len == 8192);
	m.u.meta.off = UINT64_MAX - 10; /* wraps */
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
}

static void put_item(struct rd_msg *m, uint8_t *raw, size_t cap, size_t *len,
		     struct rd_want_item *it)
{
	assert_int_equal(rd_want_put(raw, cap, len, it), 0);
	m->u.want.n++;
	m->u.want.raw = raw;
	m->u.want.rawlen = *len;
}

static void test_want(void **state)
{
	static uint8_t raw[RD_MSG_MAX];
	struct rd_want_item it, got;
	struct rd_msg m, out;
	const char *why;
	size_t len = 0, off = 0;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_WANT;
	m.u.want.job = 42;
	m.u.want.flags = RD_WF_END;
	memset(&it, 0, sizeof(it));
	it.kind = RD_WANT_WHOLE;
	it.size = 10;
	it.mtime_sec = -5;
	it.mtime_nsec = 999999999;
	it.path.ptr = "x/y";
	it.path.len = 3;
	put_item(&m, raw, sizeof(raw), &len, &it);
	it.kind = RD_WANT_RANGE;
	it.size = 1 << 20;
	it.off = 4096;
	it.len = 8192;
	it.path.ptr = "big";
	it.path.len = 3;
	put_item(&m, raw, sizeof(raw), &len, &it);
	assert_int_equal(roundtrip(&m, &out, &why), 0);
	assert_int_equal(out.hdr.type, RD_MSG_WANT);
	assert_string_equal(rd_msg_type_name(RD_MSG_WANT), "WANT");
	assert_true(out.u.want.job == 42 && out.u.want.n == 2 && out.u.want.flags == RD_WF_END);
	assert_int_equal(rd_want_next(&out.u.want, &off, &got), 0);
	assert_int_equal(got.kind, RD_WANT_WHOLE);
	assert_true(got.mtime_sec == -5 && got.mtime_nsec == 999999999);
	assert_int_equal(rd_want_next(&out.u.want, &off, &got), 0);
	assert_true(got.kind == RD_WANT_RANGE && got.off == 4096 && got.len == 8192);
	assert_memory_equal(got.path.ptr, "big", 3);

	/* refused when encoding: a range past the file, "..", a bad kind */
	it.off = (1 << 20) - 100;
	assert_int_equal(rd_want_put(raw, sizeof(raw), &len, &it), -RD_EUSAGE);
	it.off = 0;
	it.path.ptr = "a/../b";
	it.path.len = 6;
	assert_int_equal(rd_want_put(raw, sizeof(raw), &len, &it), -RD_EUSAGE);
	it.path.ptr = "b";
	it.path.len = 1;
	it.kind = 9;
	assert_int_equal(rd_want_put(raw, sizeof(raw), &len, &it), -RD_EUSAGE);
	/* refused when decoding: unknown flags, an empty list that does not end */
	m.u.want.flags = 0x80;
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
	m.u.want.flags = 0;
	m.u.want.n = 0;
	m.u.want.rawlen = 0;
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
	/* a path with ".." patched into a good WANT on the wire */
	m.u.want.flags = RD_WF_END;
	m.u.want.n = 1;
	len = 0;
	it.kind = RD_WANT_WHOLE;
	it.len = 0;
	it.size = 1;
	it.path.ptr = "ab/cd";
	it.path.len = 5;
	assert_int_equal(rd_want_put(raw, sizeof(raw), &len, &it), 0);
	m.u.want.rawlen = len;
	int n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_true(n > 0);
	memcpy(buf + n - 5, "../cd", 5);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);
	/* trailing bytes after the items */
	memcpy(buf + n - 5, "ab/cd", 5);
	buf[n] = 0;
	buf[7] = (uint8_t)(buf[7] + 1); /* length + 1 */
	assert_int_equal(rd_msg_decode(buf, (size_t)n + 1, &out, &why), -RD_EPROTO);
}

static void test_open_flag(void **state)
{
	/* known to this server; an old one refuses the bit (RD_OF_KNOWN) */
	assert_true(RD_OF_KNOWN & RD_OF_RANGES);
	assert_int_equal(RD_OF_RANGES & 0x1ffffu, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_file_flags),
	    cmocka_unit_test(test_meta_range),
	    cmocka_unit_test(test_want),
	    cmocka_unit_test(test_open_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
