// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/proto/rd_proto_bld.h"
#include "lib/proto/rd_proto_testutil.h"

/* OPEN up to (not including) npaths, with the given fields. */
static void b_open_head(struct bld *b, uint8_t mode, uint32_t chunk, const char *digest)
{
	b_hdr(b, RD_MSG_OPEN);
	b_u8(b, mode);
	b_u32(b, RD_OF_RECURSIVE);
	b_u32(b, chunk);
	b_strz(b, digest);
}

/* FILE up to (not including) the path, with the given fields. */
static void b_file_head(struct bld *b, uint8_t type, uint32_t nsec)
{
	b_hdr(b, RD_MSG_FILE);
	b_u32(b, 1);
	b_u8(b, type);
	b_u8(b, 0);
	b_u32(b, 0100644);
	b_u32(b, 0);
	b_u32(b, 0);
	b_u64(b, 10);
	b_u64(b, 1);
	b_u32(b, nsec);
}

static void test_roundtrip_every_type(void **state)
{
	static uint8_t buf[RD_CTRL_MAX];
	struct rd_msg in, out;
	const char *why;
	uint8_t t;
	int v, n;

	for (t = 1; t < RD_MSG_TYPE_MAX; t++) {
		if (t == RD_MSG_TLS) {
			assert_false(rd_msg_sample(&in, t, 0));
			continue;
		}
		for (v = 0; v < 2; v++) {
			assert_true(rd_msg_sample(&in, t, v));
			in.hdr.length = 0xdeadbeef; /* ignored by the encoder */
			n = rd_msg_encode(buf, sizeof(buf), &in);
			assert_true(n >= RD_HDR_LEN);
			assert_int_equal(buf[0], t);
			assert_int_equal(buf[1], 0);
			why = "unset";
			assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), 0);
			assert_null(why);
			assert_int_equal(out.hdr.length, (uint32_t)n - RD_HDR_LEN);
			assert_true(rd_msg_equal(&in, &out));
			/* Encoding into exactly n bytes works, n - 1 does not. */
			assert_int_equal(rd_msg_encode(buf, (size_t)n, &in), n);
			assert_int_equal(rd_msg_encode(buf, (size_t)n - 1, &in), -RD_EUSAGE);
		}
	}
}

/* A TLS frame is the TLS layer's business: never decoded as a message. */
static void test_refuse_tls_frame(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_TLS);
	b_u32(&b, 0x17030300);
	b_fix(&b);
	expect_refused(&b, "TLS frame where a message was expected");
	assert_string_equal(rd_msg_type_name(RD_MSG_TLS), "TLS");
}

static void test_fixed_layouts(void **state)
{
	/* FIN and GET: spot-check the documented byte layout. */
	static const uint8_t fin[] = {12, 0, 0, 3, 0, 0, 0, 16, 0,    0,    0,	  10,
				      0,  0, 0, 1, 0, 0, 0, 0,	0x07, 0x5b, 0xcd, 0x15};
	uint8_t buf[128];
	struct rd_msg m;

	assert_true(rd_msg_sample(&m, RD_MSG_FIN, 0));
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), sizeof(fin));
	assert_memory_equal(buf, fin, sizeof(fin));

	assert_true(rd_msg_sample(&m, RD_MSG_CREDIT, 0));
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), RD_HDR_LEN);

	assert_true(rd_msg_sample(&m, RD_MSG_GET, 0));
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), RD_HDR_LEN + 41);
	assert_int_equal(buf[RD_HDR_LEN + 4], RD_GET_DATA);

	assert_true(rd_msg_sample(&m, RD_MSG_DATA, 0));
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), RD_HDR_LEN + 30 + 32);
	assert_int_equal(buf[RD_HDR_LEN + 29], 32);
	assert_int_equal(buf[RD_HDR_LEN + 28], 78); /* seq, big-endian */
}

static void test_set_credits(void **state)
{
	uint8_t buf[64];
	struct rd_msg m;
	int n;

	assert_true(rd_msg_sample(&m, RD_MSG_END, 0));
	n = rd_msg_encode(buf, sizeof(buf), &m);
	rd_msg_set_credits(buf, 0x1234);
	assert_int_equal(buf[2], 0x12);
	assert_int_equal(buf[3], 0x34);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &m, NULL), 0);
	assert_int_equal(m.hdr.credits, 0x1234);
	assert_int_equal(m.u.end.nfiles, 17);
}

static void test_encode_refuses_bad_fields(void **state)
{
	static uint8_t buf[RD_CTRL_MAX];
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_TYPE_MAX;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
	assert_true(rd_msg_sample(&m, RD_MSG_FILE, 0));
	m.u.file.path.ptr = "../x";
	m.u.file.path.len = 4;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
	assert_true(rd_msg_sample(&m, RD_MSG_DATA, 0));
	m.u.data.dlen = RD_DIGEST_MAX + 1;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
	assert_true(rd_msg_sample(&m, RD_MSG_CREDIT, 0));
	assert_int_equal(rd_msg_encode(buf, RD_HDR_LEN - 1, &m), -RD_EUSAGE);
	assert_int_equal(rd_msg_encode(NULL, sizeof(buf), &m), -RD_EUSAGE);
}

/* Paths so long that an OPEN with them is over RD_CTRL_MAX. */
static void test_encode_refuses_oversize(void **state)
{
	static uint8_t buf[RD_CTRL_MAX * 2];
	static char p[RD_PATH_MAX];
	struct rd_msg m;
	int i;

	memset(p, 'a', sizeof(p));
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN, 0));
	m.u.open.npaths = 5;
	for (i = 0; i < 5; i++) {
		m.u.open.paths[i].ptr = p;
		m.u.open.paths[i].len = RD_PATH_MAX;
	}
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
	m.u.open.npaths = 3;
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) > 0);
}

static void test_refuse_short(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_CREDIT);
	b.n = RD_HDR_LEN - 1;
	expect_refused(&b, "message shorter than its header");
	b.n = 0;
	expect_refused(&b, "message shorter than its header");
}

static void test_refuse_unknown_type(void **state)
{
	static const uint8_t types[] = {0, RD_MSG_TYPE_MAX, 0x80, 0xff};
	struct bld b;
	size_t i;

	for (i = 0; i < sizeof(types); i++) {
		b_hdr(&b, types[i]);
		expect_refused(&b, "unknown message type");
	}
}

static void test_refuse_reserved(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_CREDIT);
	b.b[1] = 1;
	expect_refused(&b, "reserved header byte not zero");
}

static void test_refuse_length_mismatch(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_END);
	b_u32(&b, 5);
	b_fix(&b);
	b.b[7] = 3; /* says 3, has 4 */
	expect_refused(&b, "payload length does not match message size");
	b.b[7] = 5; /* says 5, has 4 */
	expect_refused(&b, "payload length does not match message size");
}

static void test_refuse_length_over_limit(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_CREDIT);
	b.b[4] = 0;
	b.b[5] = 0;
	b.b[6] = (uint8_t)((RD_MSG_MAX - RD_HDR_LEN + 1) >> 8);
	b.b[7] = (uint8_t)(RD_MSG_MAX - RD_HDR_LEN + 1);
	expect_refused(&b, "payload length over limit");
	/* A whole message longer than RD_CTRL_MAX, even if consistent. */
	b_hdr(&b, RD_MSG_ERROR);
	b_u16(&b, 1);
	b.n = RD_MSG_MAX + 1;
	b_fix(&b);
	expect_refused(&b, "message longer than RD_MSG_MAX");
}

static void test_refuse_trailing(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_CREDIT);
	b_u8(&b, 0);
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
	b_hdr(&b, RD_MSG_END);
	b_u32(&b, 1);
	b_u8(&b, 0);
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
}

static void test_refuse_digest_name_too_long(void **state)
{
	char name[RD_DIGEST_NAME_MAX + 2];
	struct rd_msg m;
	struct bld b;

	memset(name, 'a', sizeof(name));
	name[RD_DIGEST_NAME_MAX + 1] = '\0';
	b_open_head(&b, RD_MODE_PUSH, RD_CHUNK_DEFAULT, name);
	b_u16(&b, 1);
	b_strz(&b, "m");
	b_fix(&b);
	expect_refused(&b, "digest name too long");

	b_hdr(&b, RD_MSG_OPEN_OK);
	b_u32(&b, 0);
	b_u32(&b, RD_CHUNK_DEFAULT);
	b_strz(&b, name);
	b_fix(&b);
	expect_refused(&b, "digest name too long");
	/* Exactly the limit is fine. */
	name[RD_DIGEST_NAME_MAX] = '\0';
	b_hdr(&b, RD_MSG_OPEN_OK);
	b_u32(&b, 0);
	b_u32(&b, RD_CHUNK_DEFAULT);
	b_strz(&b, name);
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open_ok.digest.len, RD_DIGEST_NAME_MAX);
}

static void test_refuse_bad_digest_name(void **state)
{
	struct bld b;

	b_hdr(&b, RD_MSG_OPEN_OK);
	b_u32(&b, 0);
	b_u32(&b, RD_CHUNK_DEFAULT);
	b_str(&b,
	      "sha\0"
	      "256",
	      7);
	b_fix(&b);
	expect_refused(&b, "bad byte in digest name");
	b_hdr(&b, RD_MSG_OPEN_OK);
	b_u32(&b, 0);
	b_u32(&b, RD_CHUNK_DEFAULT);
	b_strz(&b, "");
	b_fix(&b);
	expect_refused(&b, "empty digest name");
}

/* OPEN may leave the digest to the server (empty); OPEN_OK may not. */
static void test_open_empty_digest(void **state)
{
	static uint8_t buf[RD_MSG_MAX];
	struct rd_msg m, out;
	int n;

	assert_true(rd_msg_sample(&m, RD_MSG_OPEN, 0));
	m.u.open.digest.ptr = "";
	m.u.open.digest.len = 0;
	n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_true(n > 0);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, NULL), 0);
	assert_int_equal(out.u.open.digest.len, 0);
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN_OK, 0));
	m.u.open_ok.digest.len = 0;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
}

static void test_refuse_text_too_long(void **state)
{
	static char text[RD_MSG_TEXT_MAX + 1];
	struct rd_msg m;
	struct bld b;

	memset(text, 't', sizeof(text));
	b_hdr(&b, RD_MSG_ERROR);
	b_u16(&b, RD_EPROTO);
	b_str(&b, text, RD_MSG_TEXT_MAX + 1);
	b_fix(&b);
	expect_refused(&b, "message text too long");
	b_hdr(&b, RD_MSG_ERROR);
	b_u16(&b, RD_EPROTO);
	b_str(&b, text, RD_MSG_TEXT_MAX);
	b_fix(&b);
	expect_ok(&b, &m);
}

static void test_refuse_path_too_long(void **state)
{
	static char path[RD_PATH_MAX + 1];
	struct rd_msg m;
	struct bld b;

	memset(path, 'p', sizeof(path));
	b_file_head(&b, RD_FT_REG, 0);
	b_str(&b, path, RD_PATH_MAX + 1);
	b_strz(&b, "");
	b_fix(&b);
	expect_refused(&b, "path too long");
	b_file_head(&b, RD_FT_REG, 0);
	b_str(&b, path, RD_PATH_MAX);
	b_strz(&b, "");
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.file.path.len, RD_PATH_MAX);
}

static void test_refuse_target_too_long(void **state)
{
	static char target[RD_PATH_MAX + 1];
	struct bld b;

	memset(target, 't', sizeof(target));
	b_file_head(&b, RD_FT_SYMLINK, 0);
	b_strz(&b, "link");
	b_str(&b, target, RD_PATH_MAX + 1);
	b_fix(&b);
	expect_refused(&b, "symlink target too long");
}

static void test_refuse_target_nul(void **state)
{
	struct rd_msg m;
	struct bld b;

	b_file_head(&b, RD_FT_SYMLINK, 0);
	b_strz(&b, "link");
	b_str(&b, "a\0b", 3);
	b_fix(&b);
	expect_refused(&b, "NUL byte in symlink target");
	/* Any other bytes are a valid target, even "/" and "..". */
	b_file_head(&b, RD_FT_SYMLINK, 0);
	b_strz(&b, "link");
	b_strz(&b, "/etc/../\n\xff");
	b_fix(&b);
	expect_ok(&b, &m);
}

static void test_refuse_target_mismatch(void **state)
{
	struct bld b;

	b_file_head(&b, RD_FT_REG, 0);
	b_strz(&b, "file");
	b_strz(&b, "x");
	b_fix(&b);
	expect_refused(&b, "link target on a non-symlink");
	b_file_head(&b, RD_FT_SYMLINK, 0);
	b_strz(&b, "link");
	b_strz(&b, "");
	b_fix(&b);
	expect_refused(&b, "empty symlink target");
}

static void test_refuse_npaths_zero(void **state)
{
	struct bld b;

	b_open_head(&b, RD_MODE_PUSH, RD_CHUNK_DEFAULT, "sha256");
	b_u16(&b, 0);
	b_fix(&b);
	expect_refused(&b, "bad OPEN path count");
}

static void test_refuse_npaths_over(void **state)
{
	struct bld b;
	int i;

	b_open_head(&b, RD_MODE_PUSH, RD_CHUNK_DEFAULT, "sha256");
	b_u16(&b, RD_OPEN_PATHS_MAX + 1);
	for (i = 0; i < RD_OPEN_PATHS_MAX + 1; i++)
		b_strz(&b, "m");
	b_fix(&b);
	expect_refused(&b, "bad OPEN path count");
}

/* OPEN of a push naming a partial dir (flag RD_OF_PARTIAL_DIR) after one path "m". */
static void b_open_pdir(struct bld *b, const char *name, size_t len)
{
	b_hdr(b, RD_MSG_OPEN);
	b_u8(b, RD_MODE_PUSH);
	b_u32(b, RD_OF_PARTIAL_DIR);
	b_u32(b, RD_CHUNK_DEFAULT);
	b_strz(b, "");
	b_u16(b, 1);
	b_strz(b, "m");
	if (name)
		b_str(b, name, len);
	b_fix(b);
}

/* A push's partial dir (version 5): one name, only with its flag. */
static void test_open_partial_dir(void **state)
{
	static const struct {
		const char *name;
		size_t len;
		const char *why;
	} bad[] = {{"", 0, "empty name"},
		   {".", 1, "'.' path component"},
		   {"..", 2, "'..' path component"},
		   {"a/b", 3, "'/' in a name"},
		   {"../x", 4, "'/' in a name"},
		   {"a\0b", 3, "NUL byte in name"}};
	char big[RD_PARTIAL_DIR_MAX + 1];
	struct rd_msg m;
	struct bld b;
	size_t i;

	b_open_pdir(&b, ".part", 5);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.partial_dir.len, 5);
	assert_memory_equal(m.u.open.partial_dir.ptr, ".part", 5);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b_open_pdir(&b, bad[i].name, bad[i].len);
		expect_refused(&b, bad[i].why);
	}
	memset(big, 'p', sizeof(big));
	b_open_pdir(&b, big, RD_PARTIAL_DIR_MAX);
	expect_ok(&b, &m);
	b_open_pdir(&b, big, RD_PARTIAL_DIR_MAX + 1); /* one byte over */
	expect_refused(&b, "partial dir too long");
	b_open_pdir(&b, NULL, 0); /* the flag without the name */
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the name without the flag: bytes after the message */
	b_open_head(&b, RD_MODE_PUSH, RD_CHUNK_DEFAULT, "");
	b_u16(&b, 1);
	b_strz(&b, "m");
	b_strz(&b, ".part");
	b_fix(&b);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the encoder refuses what the decoder would */
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN, 0));
	m.u.open.partial_dir.ptr = "a/b";
	m.u.open.partial_dir.len = 3;
	assert_true(rd_msg_encode(b.b, sizeof(b.b), &m) < 0);
	m.u.open.flags &= ~RD_OF_PARTIAL_DIR; /* a name without its flag */
	m.u.open.partial_dir.ptr = ".p";
	m.u.open.partial_dir.len = 2;
	assert_true(rd_msg_encode(b.b, sizeof(b.b), &m) < 0);
}

/* OPEN with RD_OF_WINDOW and the window (version 6); nwin 0: no window field. */
static void b_open_win(struct bld *b, int nwin, uint16_t window)
{
	b_hdr(b, RD_MSG_OPEN);
	b_u8(b, RD_MODE_PUSH);
	b_u32(b, RD_OF_WINDOW);
	b_u32(b, RD_CHUNK_DEFAULT);
	b_strz(b, "");
	b_u16(b, 1);
	b_strz(b, "m");
	if (nwin)
		b_u16(b, window);
	b_fix(b);
}

static void b_open_ok_win(struct bld *b, uint32_t flags, int nwin, uint16_t window)
{
	b_hdr(b, RD_MSG_OPEN_OK);
	b_u32(b, flags);
	b_u32(b, RD_CHUNK_DEFAULT);
	b_strz(b, "gmac");
	if (nwin)
		b_u16(b, window);
	b_fix(b);
}

/* The window (version 6): in bounds, only with its flag, both ways. */
static void test_window(void **state)
{
	static const uint16_t bad[] = {0, 1, RD_WINDOW_FILES - 1, RD_WINDOW_MAX + 1, 0xffff};
	struct rd_msg m;
	struct bld b;
	size_t i;

	(void)state;
	b_open_win(&b, 1, RD_WINDOW_FILES);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.window, RD_WINDOW_FILES);
	b_open_win(&b, 1, RD_WINDOW_MAX);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.window, RD_WINDOW_MAX);
	b_open_ok_win(&b, RD_OF_WINDOW, 1, 256);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open_ok.window, 256);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b_open_win(&b, 1, bad[i]);
		expect_refused(&b, "bad window");
		b_open_ok_win(&b, RD_OF_WINDOW, 1, bad[i]);
		expect_refused(&b, "bad window");
	}
	/* the flag without the field: the message ends early */
	b_open_win(&b, 0, 0);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	b_open_ok_win(&b, RD_OF_WINDOW, 0, 0);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the field without the flag: bytes after the message */
	b_open_ok_win(&b, RD_OF_RECURSIVE, 1, 256);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the encoder refuses what the decoder would */
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN, 0));
	m.u.open.window = RD_WINDOW_MAX + 1;
	assert_true(rd_msg_encode(b.b, sizeof(b.b), &m) < 0);
	m.u.open.flags &= ~RD_OF_WINDOW; /* a window without its flag */
	m.u.open.window = 256;
	assert_true(rd_msg_encode(b.b, sizeof(b.b), &m) < 0);
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN_OK, 0));
	m.u.open_ok.window = 256; /* variant 0 has no RD_OF_WINDOW */
	assert_true(rd_msg_encode(b.b, sizeof(b.b), &m) < 0);
}

/* OPEN with RD_OF_SELECT: one path, then the block with the given fields. */
static void b_open_sel(struct bld *b, uint8_t mode, const char *path, uint8_t cmp, uint16_t rules,
		       int32_t window, uint8_t pflags, uint16_t skip, uint16_t nrules,
		       uint32_t nnames)
{
	b_hdr(b, RD_MSG_OPEN);
	b_u8(b, mode);
	b_u32(b, RD_OF_RECURSIVE | RD_OF_SELECT);
	b_u32(b, RD_CHUNK_DEFAULT);
	b_strz(b, "");
	b_u16(b, 1);
	b_strz(b, path);
	b_u8(b, cmp);
	b_u16(b, rules);
	b_u32(b, (uint32_t)window);
	b_u64(b, 0);
	b_u64(b, RD_SIZE_NONE);
	b_u8(b, pflags);
	b_u16(b, skip);
	b_u16(b, nrules);
	b_u32(b, nnames);
	b_fix(b);
}

/* Version 7: OPEN's SELECT block, checked per mode (rd_proto.h, OPEN). */
static void test_select(void **state)
{
	struct rd_msg m;
	struct bld b;

	(void)state;
	b_open_sel(&b, RD_MODE_PUSH, "m/d", RD_CMP_QUICK, RD_SEL_DEST_DIR | RD_SEL_MKPATH,
		   RD_WINDOW_NS, 0, 0, 3, 0);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.sel.rules, RD_SEL_DEST_DIR | RD_SEL_MKPATH);
	assert_int_equal(m.u.open.sel.modify_window, -1);
	assert_int_equal(m.u.open.sel.max_size, RD_SIZE_NONE);
	assert_int_equal(m.u.open.sel.nrules, 3);
	b_open_sel(&b, RD_MODE_PULL, "m/a/b/c", RD_CMP_SIZE, RD_SEL_RELATIVE, 2, RD_PF_CONTENTS, 2,
		   0, 7);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.sel.skip[0], 2);
	assert_int_equal(m.u.open.sel.pflags[0], RD_PF_CONTENTS);
	assert_int_equal(m.u.open.sel.nnames, 7);
	b_open_sel(&b, RD_MODE_PUSH, "m", RD_CMP_ALL, 0, 0, 0, 0, 0, 0);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.sel.compare, RD_CMP_ALL);
	b_open_sel(&b, RD_MODE_PUSH, "m", RD_CMP_ALL + 1, 0, 0, 0, 0, 0, 0);
	expect_refused(&b, "bad SELECT compare");
	b_open_sel(&b, RD_MODE_PUSH, "m", 0, 0x100, 0, 0, 0, 0, 0);
	expect_refused(&b, "unknown SELECT rules");
	b_open_sel(&b, RD_MODE_PUSH, "m", 0, 0, -2, 0, 0, 0, 0);
	expect_refused(&b, "bad SELECT modify window");
	b_open_sel(&b, RD_MODE_PUSH, "m", 0, 0, 0, 0, 0, RD_RULES_MAX + 1, 0);
	expect_refused(&b, "too many filter rules");
	b_open_sel(&b, RD_MODE_PULL, "m", 0, 0, 0, 0, 0, 0, RD_NAMES_MAX + 1);
	expect_refused(&b, "too many --files-from names");
	b_open_sel(&b, RD_MODE_PULL, "m", 0, RD_SEL_DEST_DIR, 0, 0, 0, 0, 0);
	expect_refused(&b, "destination rules on a PULL");
	b_open_sel(&b, RD_MODE_PUSH, "m", 0, 0, 0, 0, 0, 0, 1);
	expect_refused(&b, "--files-from names on a PUSH");
	b_open_sel(&b, RD_MODE_PUSH, "m", 0, 0, 0, RD_PF_CONTENTS, 0, 0, 0);
	expect_refused(&b, "SELECT path flags on a PUSH");
	b_open_sel(&b, RD_MODE_PULL, "m", 0, 0, 0, 0x2, 0, 0, 0);
	expect_refused(&b, "unknown SELECT path flags");
	b_open_sel(&b, RD_MODE_PULL, "m/a/b", 0, 0, 0, 0, 2, 0, 0);
	expect_refused(&b, "SELECT skip without RELATIVE");
	/* skip must end just past a '/' inside the path after the module */
	b_open_sel(&b, RD_MODE_PULL, "m/a/b", 0, RD_SEL_RELATIVE, 0, 0, 1, 0, 0);
	expect_refused(&b, "bad SELECT skip");
	b_open_sel(&b, RD_MODE_PULL, "m/a/b", 0, RD_SEL_RELATIVE, 0, 0, 3, 0, 0);
	expect_refused(&b, "bad SELECT skip");
	b_open_sel(&b, RD_MODE_PULL, "m", 0, RD_SEL_RELATIVE, 0, 0, 1, 0, 0);
	expect_refused(&b, "bad SELECT skip");
	/* the block cut short */
	b_open_sel(&b, RD_MODE_PUSH, "m", 0, 0, 0, 0, 0, 0, 0);
	b.n -= 4;
	b_fix(&b);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the encoder refuses what the decoder would */
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN, 1));
	m.u.open.sel.compare = 9;
	assert_true(rd_msg_encode(b.b, sizeof(b.b), &m) < 0);
}

/* OPEN PUSH with RD_OF_SELECT | RD_OF_DESTS: a SELECT of defaults, then the DESTS block. */
static void b_open_dests(struct bld *b, uint8_t mode, uint8_t flags, const char *bdir,
			 const char *suffix, uint8_t kind, unsigned n, const char *dir)
{
	unsigned i;

	b_hdr(b, RD_MSG_OPEN);
	b_u8(b, mode);
	b_u32(b, RD_OF_RECURSIVE | RD_OF_SELECT | RD_OF_DESTS);
	b_u32(b, RD_CHUNK_DEFAULT);
	b_strz(b, "");
	b_u16(b, 1);
	b_strz(b, "m/snap");
	b_u8(b, RD_CMP_QUICK);
	b_u16(b, 0);
	b_u32(b, (uint32_t)RD_WINDOW_NS);
	b_u64(b, 0);
	b_u64(b, RD_SIZE_NONE);
	b_u8(b, 0);
	b_u16(b, 0);
	b_u16(b, 0);
	b_u32(b, 0);
	b_u8(b, flags);
	b_strz(b, bdir);
	b_strz(b, suffix);
	b_u8(b, kind);
	b_u8(b, (uint8_t)n);
	for (i = 0; i < n; i++)
		b_strz(b, dir);
	b_fix(b);
}

/* Version 13: OPEN's DESTS block (rd_proto.h, OPEN). */
static void test_dests(void **state)
{
	struct rd_msg m, back;
	struct bld b;
	uint8_t buf[RD_MSG_MAX];
	int n;

	(void)state;
	b_open_dests(&b, RD_MODE_PUSH, RD_DF_BACKUP | RD_DF_SUFFIX, "../bak", ".old", RD_DK_LINK,
		     RD_DESTS_MAX, "../snap.1");
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.dests.flags, RD_DF_BACKUP | RD_DF_SUFFIX);
	assert_int_equal(m.u.open.dests.kind, RD_DK_LINK);
	assert_int_equal(m.u.open.dests.ndests, RD_DESTS_MAX);
	assert_int_equal(m.u.open.dests.dirs[19].len, 9);
	assert_memory_equal(m.u.open.dests.suffix.ptr, ".old", 4);
	/* it encodes back to the same message */
	n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_true(n > 0);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &back, NULL), 0);
	assert_true(rd_msg_equal(&m, &back));
	b_open_dests(&b, RD_MODE_PUSH, RD_DF_BACKUP, "", "", RD_DK_NONE, 0, "");
	expect_ok(&b, &m);
	b_open_dests(&b, RD_MODE_PUSH, RD_DF_BACKUP | RD_DF_SUFFIX, "bak", "", RD_DK_COPY, 1, "/r");
	expect_ok(&b, &m);
	/* refused */
	b_open_dests(&b, RD_MODE_PULL, 0, "", "", RD_DK_LINK, 1, "r");
	expect_refused(&b, "DESTS only on a PUSH with SELECT");
	b_open_dests(&b, RD_MODE_PUSH, 0x4, "", "", RD_DK_NONE, 0, "");
	expect_refused(&b, "unknown DESTS flags");
	b_open_dests(&b, RD_MODE_PUSH, 0, "bak", "", RD_DK_NONE, 0, "");
	expect_refused(&b, "a backup dir without BACKUP");
	b_open_dests(&b, RD_MODE_PUSH, RD_DF_BACKUP, "", "~", RD_DK_NONE, 0, "");
	expect_refused(&b, "a suffix without SUFFIX");
	b_open_dests(&b, RD_MODE_PUSH, RD_DF_BACKUP | RD_DF_SUFFIX, "", "", RD_DK_NONE, 0, "");
	expect_refused(&b, "an empty suffix without a backup dir");
	b_open_dests(&b, RD_MODE_PUSH, RD_DF_BACKUP | RD_DF_SUFFIX, "", "a/b", RD_DK_NONE, 0, "");
	expect_refused(&b, "bad backup suffix");
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_COPY + 1, 1, "r");
	expect_refused(&b, "bad DESTS kind or count");
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_LINK, 0, "");
	expect_refused(&b, "bad DESTS kind or count");
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_NONE, 1, "r");
	expect_refused(&b, "bad DESTS kind or count");
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_LINK, RD_DESTS_MAX + 1, "r");
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_LINK, 1, "");
	expect_refused(&b, "bad DESTS dir length");
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_LINK, 1, "axb");
	b.b[b.n - 2] = '\0'; /* "a\0b": a NUL inside */
	expect_refused(&b, "bad DESTS dir");
	/* the block cut short */
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_LINK, 1, "r");
	b.n -= 2;
	b_fix(&b);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the encoder refuses what the decoder would, and the block without its flag */
	b_open_dests(&b, RD_MODE_PUSH, 0, "", "", RD_DK_LINK, 1, "r");
	expect_ok(&b, &m);
	m.u.open.dests.kind = 7;
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
	m.u.open.dests.kind = RD_DK_LINK;
	m.u.open.flags &= ~RD_OF_DESTS;
	assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
}

static void b_rules(struct bld *b, uint8_t kind, const char *const *v, unsigned n)
{
	unsigned i;

	b_hdr(b, RD_MSG_RULES);
	b_u8(b, kind);
	b_u16(b, (uint16_t)n);
	for (i = 0; i < n; i++)
		b_strz(b, v[i]);
	b_fix(b);
}

/* Version 9: RULES; the FILE flag CONTENTS; the item SKIPPED. */
static void test_rules_contents(void **state)
{
	static const char *const good[] = {"- *.o", "+ /dir/", ": /.rsync-filter", "!"};
	static const char *const names[] = {"a", "a/b c/d"};
	struct rd_msg m;
	struct rd_str x;
	struct bld b;
	size_t off = 0;
	uint8_t buf[64];
	size_t len = 0;
	const char *bad1[] = {""}, *bad2[] = {"- a\nb"}, *bad3[] = {"- a\rb"};
	const char *badn[] = {"a/../b"};

	(void)state;
	b_rules(&b, RD_RULES_FILTER, good, 4);
	expect_ok(&b, &m);
	assert_int_equal(m.u.rules.n, 4);
	assert_int_equal(rd_rules_next(&m.u.rules, &off, &x), 0);
	assert_int_equal(x.len, 5);
	assert_memory_equal(x.ptr, "- *.o", 5);
	b_rules(&b, RD_RULES_NAMES, names, 2);
	expect_ok(&b, &m);
	b_rules(&b, RD_RULES_FILTER, bad1, 1);
	expect_refused(&b, "filter rule empty or too long");
	b_rules(&b, RD_RULES_FILTER, bad2, 1);
	expect_refused(&b, "NUL or line break in a filter rule");
	b_rules(&b, RD_RULES_FILTER, bad3, 1);
	expect_refused(&b, "NUL or line break in a filter rule");
	b_rules(&b, RD_RULES_NAMES, badn, 1);
	expect_refused(&b, "'..' path component");
	b_rules(&b, 3, good, 1);
	expect_refused(&b, "unknown RULES kind");
	b_rules(&b, RD_RULES_FILTER, good, 0);
	expect_refused(&b, "RULES without strings");
	/* a count larger than the strings there */
	b_rules(&b, RD_RULES_FILTER, good, 2);
	b.b[RD_HDR_LEN + 2] = 3;
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, NULL), -RD_EPROTO);
	/* the builder refuses a string the decoder would */
	assert_int_equal(rd_rules_put(buf, sizeof(buf), &len, RD_RULES_FILTER, "a\nb", 3),
			 -RD_EUSAGE);
	assert_int_equal(rd_rules_put(buf, sizeof(buf), &len, RD_RULES_NAMES, "/etc", 4),
			 -RD_EUSAGE);
	assert_int_equal(len, 0);

	assert_string_equal(rd_msg_type_name(RD_MSG_RULES), "RULES");

	/* CONTENTS on a root that is not a directory */
	b_file_head(&b, RD_FT_REG, 0);
	b.b[RD_HDR_LEN + 5] = RD_FF_ROOT | RD_FF_CONTENTS;
	b_strz(&b, "f");
	b_strz(&b, "");
	b_fix(&b);
	expect_refused(&b, "contents of an entry that is not a directory");
	b.b[RD_HDR_LEN + 5] = RD_FF_CONTENTS; /* below such a root: fine */
	expect_ok(&b, &m);
	/* every bit of the flags byte is taken now (0x40, 0x80: ranges): COMMIT without META */
	b.b[RD_HDR_LEN + 5] = RD_FF_COMMIT;
	expect_refused(&b, "range or commit flag on an entry that cannot take it");
}

static void test_refuse_open_mode(void **state)
{
	static const uint8_t modes[] = {0, 3, 0xff};
	struct bld b;
	size_t i;

	for (i = 0; i < sizeof(modes); i++) {
		b_open_head(&b, modes[i], RD_CHUNK_DEFAULT, "sha256");
		b_u16(&b, 1);
		b_strz(&b, "m");
		b_fix(&b);
		expect_refused(&b, "bad OPEN mode");
	}
}

static void test_refuse_open_path(void **state)
{
	static const char *const bad[] = {"/etc", "m/../x", "m/", "", "m//x"};
	struct rd_msg m;
	struct bld b;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b_open_head(&b, RD_MODE_PULL, RD_CHUNK_DEFAULT, "sha256");
		b_u16(&b, 2);
		b_strz(&b, "mod");
		b_strz(&b, bad[i]);
		b_fix(&b);
		why = NULL;
		assert_int_equal(rd_msg_decode(b.b, b.n, &m, &why), -RD_EPROTO);
		assert_non_null(why);
	}
	/* A bare module and module/path are fine. */
	b_open_head(&b, RD_MODE_PULL, RD_CHUNK_DEFAULT, "none");
	b_u16(&b, 2);
	b_strz(&b, "mod");
	b_strz(&b, "mod/sub/file");
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.npaths, 2);
	assert_int_equal(m.u.open.mode, RD_MODE_PULL);
	assert_memory_equal(m.u.open.paths[1].ptr, "mod/sub/file", 12);
}

static void test_refuse_chunk_size(void **state)
{
	static const uint32_t bad[] = {0, RD_CHUNK_MIN - 1, RD_CHUNK_MAX + 1, 0xffffffffu};
	struct bld b;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b_open_head(&b, RD_MODE_PUSH, bad[i], "sha256");
		b_u16(&b, 1);
		b_strz(&b, "m");
		b_fix(&b);
		expect_refused(&b, "chunk size out of range");
		b_hdr(&b, RD_MSG_OPEN_OK);
		b_u32(&b, 0);
		b_u32(&b, bad[i]);
		b_strz(&b, "sha256");
		b_fix(&b);
		expect_refused(&b, "chunk size out of range");
	}
}

static void test_refuse_ftype(void **state)
{
	static const uint8_t bad[] = {0, RD_FT_HLINK + 1, 0xff};
	struct bld b;
	size_t i;

	for (i = 0; i < sizeof(bad); i++) {
		b_file_head(&b, bad[i], 0);
		b_strz(&b, "f");
		b_strz(&b, "");
		b_fix(&b);
		expect_refused(&b, "bad file type");
	}
}

static void test_refuse_mtime_nsec(void **state)
{
	struct rd_msg m;
	struct bld b;

	b_file_head(&b, RD_FT_DIR, 1000000000u);
	b_strz(&b, "d");
	b_strz(&b, "");
	b_fix(&b);
	expect_refused(&b, "mtime nanoseconds out of range");
	b_file_head(&b, RD_FT_DIR, 999999999u);
	b_strz(&b, "d");
	b_strz(&b, "");
	b_fix(&b);
	expect_ok(&b, &m);
}

static void test_refuse_file_path(void **state)
{
	static const char *const bad[] = {"", "/abs", "a/", "a//b", ".", "..", "a/../b", "./a"};
	struct rd_msg m;
	struct bld b;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b_file_head(&b, RD_FT_REG, 0);
		b_strz(&b, bad[i]);
		b_strz(&b, "");
		b_fix(&b);
		why = NULL;
		assert_int_equal(rd_msg_decode(b.b, b.n, &m, &why), -RD_EPROTO);
		assert_non_null(why);
	}
	b_file_head(&b, RD_FT_REG, 0);
	b_str(&b, "a\0b", 3);
	b_strz(&b, "");
	b_fix(&b);
	expect_refused(&b, "NUL byte in path");
}

static void b_get_n(struct bld *b, uint8_t type, uint8_t kind, uint64_t chunk)
{
	b_hdr(b, type);
	b_u32(b, 1);
	b_u8(b, kind);
	b_u32(b, 0);
	b_u64(b, chunk);
	if (type == RD_MSG_GET) {
		b_u64(b, 0x1000);
		b_u32(b, 7);
		b_u32(b, 4096);
		b_u64(b, 5);
	} else {
		b_u32(b, 4096);
		b_u64(b, 5);
		b_u8(b, 0);
	}
	b_fix(b);
}

static void b_get(struct bld *b, uint8_t type, uint8_t kind)
{
	b_get_n(b, type, kind, 0);
}

static void test_refuse_get_kind(void **state)
{
	struct rd_msg m;
	struct bld b;

	b_get(&b, RD_MSG_GET, 0);
	expect_refused(&b, "bad chunk request kind");
	b_get(&b, RD_MSG_GET, 4);
	expect_refused(&b, "bad chunk request kind");
	b_get(&b, RD_MSG_GET, RD_GET_SUM);
	expect_ok(&b, &m);
	assert_int_equal(m.u.get.rkey, 7);
}

static void test_refuse_data_kind(void **state)
{
	struct rd_msg m;
	struct bld b;

	b_get(&b, RD_MSG_DATA, 0);
	expect_refused(&b, "bad chunk request kind");
	b_get(&b, RD_MSG_DATA, 0xff);
	expect_refused(&b, "bad chunk request kind");
	b_get(&b, RD_MSG_DATA, RD_GET_DATA);
	expect_ok(&b, &m);
	assert_int_equal(m.u.data.dlen, 0);
}

/* FILES and DONES (version 4): counts bounded, every FILE entry checked, MORE only last. */
static void b_files_entry(struct bld *b, uint32_t id, uint8_t flags, const char *path)
{
	b_u32(b, id);
	b_u8(b, RD_FT_REG);
	b_u8(b, flags);
	b_u32(b, 0100644);
	b_u32(b, 0);
	b_u32(b, 0);
	b_u64(b, 10);
	b_u64(b, 1);
	b_u32(b, 0);
	b_strz(b, path);
	b_strz(b, "");
}

static void test_batches(void **state)
{
	struct rd_msg m, one;
	struct rd_msg_file f;
	struct bld b;
	size_t off = 0;
	unsigned i;

	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, 0);
	b_fix(&b);
	expect_refused(&b, "bad batch entry count");
	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, RD_BATCH_MAX + 1);
	for (i = 0; i < RD_BATCH_MAX + 1; i++)
		b_files_entry(&b, i, 0, "a");
	b_fix(&b);
	expect_refused(&b, "bad batch entry count");
	/* fewer entries than the count, or more */
	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, 3);
	b_files_entry(&b, 1, 0, "a");
	b_files_entry(&b, 2, 0, "b");
	b_fix(&b);
	expect_refused(&b, "message truncated");
	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, 1);
	b_files_entry(&b, 1, 0, "a");
	b_files_entry(&b, 2, 0, "b");
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
	/* each entry as FILE: a bad path in the second */
	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, 2);
	b_files_entry(&b, 1, 0, "a");
	b_files_entry(&b, 2, 0, "../x");
	b_fix(&b);
	expect_refused(&b, "'..' path component");
	/* RD_FF_MORE only on the last */
	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, 2);
	b_files_entry(&b, 1, RD_FF_MORE, "a");
	b_files_entry(&b, 2, 0, "b");
	b_fix(&b);
	expect_refused(&b, "metadata announced before the end of a batch");
	b_hdr(&b, RD_MSG_FILES);
	b_u16(&b, 2);
	b_files_entry(&b, 1, 0, "a");
	b_files_entry(&b, 2, RD_FF_MORE, "b/c");
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.files.n, 2);
	assert_int_equal(rd_files_next(&m.u.files, &off, &f), 0);
	assert_int_equal(f.id, 1);
	assert_int_equal(rd_files_next(&m.u.files, &off, &f), 0);
	assert_int_equal(f.id, 2);
	assert_int_equal(f.flags, RD_FF_MORE);
	assert_int_equal(f.path.len, 3);
	assert_int_equal(off, m.u.files.rawlen);
	assert_int_equal(rd_files_next(&m.u.files, &off, &f), -RD_EPROTO); /* none left */
	/* the same entry alone as FILE decodes to the same fields */
	b_file_head(&b, RD_FT_REG, 0);
	b_strz(&b, "a");
	b_strz(&b, "");
	b_fix(&b);
	expect_ok(&b, &one);
	assert_int_equal(one.u.file.size, 10);
	/* rd_files_put refuses what does not fit or is not a FILE */
	{
		uint8_t raw[64];
		size_t len = 0;

		memset(&f, 0, sizeof(f));
		f.type = RD_FT_REG;
		f.path.ptr = "x";
		f.path.len = 1;
		assert_int_equal(rd_files_put(raw, sizeof(raw), &len, &f), 0);
		assert_int_equal(len, 38 + 2 + 1 + 2);
		assert_int_equal(rd_files_put(raw, sizeof(raw), &len, &f), -RD_EUSAGE);
		assert_int_equal(len, 43);
		f.type = 9;
		len = 0;
		assert_int_equal(rd_files_put(raw, sizeof(raw), &len, &f), -RD_EUSAGE);
	}
	/* DONES */
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, 0);
	b_fix(&b);
	expect_refused(&b, "bad batch entry count");
	/* more than RD_BATCH_MAX: the engine refuses it without RD_OF_WIDE */
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, RD_BATCH_MAX + 1);
	for (i = 0; i < RD_BATCH_MAX + 1; i++) {
		b_u32(&b, i);
		b_u64(&b, 0);
	}
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.dones.n, RD_BATCH_MAX + 1);
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, RD_BATCH_WIDE + 1);
	for (i = 0; i < RD_BATCH_WIDE + 1; i++) {
		b_u32(&b, i);
		b_u64(&b, 0);
	}
	b_fix(&b);
	expect_refused(&b, "bad batch entry count");
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, 2);
	b_u32(&b, 7);
	b_u64(&b, 4096);
	b_fix(&b);
	expect_refused(&b, "message truncated");
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, 2);
	b_u32(&b, 7);
	b_u64(&b, 4096);
	b_u32(&b, 8);
	b_u64(&b, 1);
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.dones.id[1], 8);
	assert_int_equal(m.u.dones.bytes[0], 4096);
	assert_string_equal(rd_msg_type_name(RD_MSG_FILES), "FILES");
	assert_string_equal(rd_msg_type_name(RD_MSG_DONES), "DONES");
}

/*
 * Items (version 7, RD_OF_ITEMS): DONE ends with u16 items, DONES entries
 * have them too; the length says which form came. Unknown bits are
 * refused; the encoder writes exactly what the decoder reads.
 */
static void test_items(void **state)
{
	struct bld b;
	struct rd_msg m, e;
	uint8_t buf[RD_MSG_MAX];
	int n;

	(void)state;
	/* DONE without items, as before */
	b_hdr(&b, RD_MSG_DONE);
	b_u32(&b, 3);
	b_u16(&b, 0);
	b_u64(&b, 10);
	b_strz(&b, "");
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.done.has_items, 0);
	/* with items */
	b_hdr(&b, RD_MSG_DONE);
	b_u32(&b, 3);
	b_u16(&b, 0);
	b_u64(&b, 10);
	b_strz(&b, "a note");
	b_u16(&b, RD_IT_NEW | RD_IT_XFER);
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.done.has_items, 1);
	assert_int_equal(m.u.done.items, RD_IT_NEW | RD_IT_XFER);
	assert_int_equal(m.u.done.text.len, 6);
	/* a bit no version knows */
	b_hdr(&b, RD_MSG_DONE);
	b_u32(&b, 3);
	b_u16(&b, 0);
	b_u64(&b, 10);
	b_strz(&b, "");
	b_u16(&b, 0x8000);
	b_fix(&b);
	expect_refused(&b, "unknown item flags");
	/* one byte is neither form */
	b_hdr(&b, RD_MSG_DONE);
	b_u32(&b, 3);
	b_u16(&b, 0);
	b_u64(&b, 10);
	b_strz(&b, "");
	b_u8(&b, 1);
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
	/* DONES with items: 14 bytes an entry */
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, 2);
	b_u32(&b, 7);
	b_u64(&b, 4096);
	b_u16(&b, RD_IT_TIME);
	b_u32(&b, 8);
	b_u64(&b, 0);
	b_u16(&b, 0);
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.u.dones.has_items, 1);
	assert_int_equal(m.u.dones.items[0], RD_IT_TIME);
	assert_int_equal(m.u.dones.id[1], 8);
	b_hdr(&b, RD_MSG_DONES);
	b_u16(&b, 1);
	b_u32(&b, 7);
	b_u64(&b, 4096);
	b_u16(&b, RD_IT_KNOWN + 1);
	b_fix(&b);
	expect_refused(&b, "unknown item flags");
	/* round trips */
	memset(&e, 0, sizeof(e));
	e.hdr.type = RD_MSG_DONE;
	e.u.done.id = 9;
	e.u.done.has_items = 1;
	e.u.done.items = RD_IT_PERMS | RD_IT_GROUP;
	n = rd_msg_encode(buf, sizeof(buf), &e);
	assert_true(n > 0);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &m, &(const char *){NULL}), 0);
	assert_int_equal(m.u.done.items, RD_IT_PERMS | RD_IT_GROUP);
	e.u.done.items = 0x9000; /* the encoder refuses what the decoder would */
	assert_true(rd_msg_encode(buf, sizeof(buf), &e) < 0);
	memset(&e, 0, sizeof(e));
	e.hdr.type = RD_MSG_DONES;
	e.u.dones.n = 3;
	e.u.dones.has_items = 1;
	e.u.dones.items[2] = RD_IT_HLINK;
	n = rd_msg_encode(buf, sizeof(buf), &e);
	assert_int_equal(n, RD_HDR_LEN + 2 + 3 * 14);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &m, &(const char *){NULL}), 0);
	assert_int_equal(m.u.dones.has_items, 1);
	assert_int_equal(m.u.dones.items[2], RD_IT_HLINK);
}

/* PACK (version 3): chunk is the file count, 1..RD_PACK_FILES_MAX, both ways. */
static void test_pack_count(void **state)
{
	static const uint8_t types[] = {RD_MSG_GET, RD_MSG_DATA};
	struct rd_msg m;
	struct bld b;
	unsigned i;

	for (i = 0; i < 2; i++) {
		b_get_n(&b, types[i], RD_GET_PACK, 0);
		expect_refused(&b, "bad pack file count");
		b_get_n(&b, types[i], RD_GET_PACK, RD_PACK_FILES_MAX + 1);
		expect_refused(&b, "bad pack file count");
		b_get_n(&b, types[i], RD_GET_PACK, 1ull << 40);
		expect_refused(&b, "bad pack file count");
		b_get_n(&b, types[i], RD_GET_PACK, 1);
		expect_ok(&b, &m);
		b_get_n(&b, types[i], RD_GET_PACK, RD_PACK_FILES_MAX);
		expect_ok(&b, &m);
		assert_int_equal(types[i] == RD_MSG_GET ? m.u.get.chunk : m.u.data.chunk,
				 RD_PACK_FILES_MAX);
		assert_int_equal(types[i] == RD_MSG_GET ? m.u.get.kind : m.u.data.kind,
				 RD_GET_PACK);
	}
	/* a chunk index is any number for the other kinds */
	b_get_n(&b, RD_MSG_GET, RD_GET_DATA, 1ull << 40);
	expect_ok(&b, &m);
	/* and the encoder refuses what the decoder would */
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_GET;
	m.u.get.kind = RD_GET_PACK;
	m.u.get.chunk = 0;
	{
		uint8_t buf[RD_CTRL_MAX];

		assert_true(rd_msg_encode(buf, sizeof(buf), &m) < 0);
		m.u.get.chunk = 2;
		assert_true(rd_msg_encode(buf, sizeof(buf), &m) > 0);
	}
}

static void test_refuse_dlen(void **state)
{
	uint8_t dig[RD_DIGEST_MAX + 1];
	struct bld b;

	memset(dig, 0xab, sizeof(dig));
	b_hdr(&b, RD_MSG_DATA);
	b_u32(&b, 1);
	b_u8(&b, RD_GET_DATA);
	b_u32(&b, 0);
	b_u64(&b, 0);
	b_u32(&b, 4096);
	b_u64(&b, 1);
	b_u8(&b, RD_DIGEST_MAX + 1);
	b_raw(&b, dig, sizeof(dig));
	b_fix(&b);
	expect_refused(&b, "digest too long");
}

static void test_refuse_note_path_too_long(void **state)
{
	static char path[RD_PATH_MAX + 1];
	struct bld b;

	memset(path, 'n', sizeof(path));
	b_hdr(&b, RD_MSG_NOTE);
	b_u16(&b, 1);
	b_str(&b, path, sizeof(path));
	b_strz(&b, "skipped");
	b_fix(&b);
	expect_refused(&b, "note path too long");
}

/* Issue 13: META items, SPECIAL and HLINK entries; what the codec refuses. */
static void test_meta_and_new_types(void **state)
{
	static const struct rd_extent bad[] = {{0, 8192}, {4096, 4096}};
	static const struct rd_acl_ent badacl[] = {{7, 7, 0}};
	static uint8_t buf[RD_CTRL_MAX];
	struct rd_msg in, out;
	const char *why;
	int n;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.hdr.type = RD_MSG_META;
	in.u.meta.id = 3;
	in.u.meta.kind = RD_META_XATTR;
	in.u.meta.flags = RD_MF_LAST;
	in.u.meta.name.ptr = "user.k";
	in.u.meta.name.len = 6;
	in.u.meta.value = (const uint8_t *)"v\0w";
	in.u.meta.vlen = 3;
	n = rd_msg_encode(buf, sizeof(buf), &in);
	assert_true(n > 0);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), 0);
	assert_true(rd_msg_equal(&in, &out));
	/* A value over the limit, an empty name: the encoder refuses too. */
	in.u.meta.vlen = RD_XATTR_VAL_MAX + 1;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.meta.vlen = 3;
	in.u.meta.name.len = 0;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	/* Overlapping extents, a bad ACL tag, unknown flags. */
	memset(&in.u.meta, 0, sizeof(in.u.meta));
	in.u.meta.kind = RD_META_SPARSE;
	in.u.meta.n = 2;
	in.u.meta.ext = bad;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.meta.kind = RD_META_ACL;
	in.u.meta.acl_type = RD_ACL_ACCESS;
	in.u.meta.n = 1;
	in.u.meta.acl = badacl;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.meta.kind = RD_META_SPARSE;
	in.u.meta.n = 0;
	in.u.meta.flags = 0x80;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.meta.flags = 0;
	n = rd_msg_encode(buf, sizeof(buf), &in); /* empty map: all hole */
	assert_true(n > 0);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), 0);
	assert_int_equal(out.u.meta.n, 0);
	buf[RD_HDR_LEN + 4] = 9; /* unknown kind */
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);

	/* SPECIAL: its mode must say which; only devices carry a number. */
	memset(&in, 0, sizeof(in));
	in.hdr.type = RD_MSG_FILE;
	in.u.file.id = 1;
	in.u.file.type = RD_FT_SPECIAL;
	in.u.file.mode = 010644; /* fifo */
	in.u.file.path.ptr = "f";
	in.u.file.path.len = 1;
	assert_true(rd_msg_encode(buf, sizeof(buf), &in) > 0);
	in.u.file.size = 5;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.file.mode = 020600; /* char device 0:5 */
	assert_true(rd_msg_encode(buf, sizeof(buf), &in) > 0);
	in.u.file.mode = 0100600; /* a regular file is not special */
	in.u.file.size = 0;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	/* HLINK: the target is a wire path; MORE only on REG and DIR. */
	in.u.file.type = RD_FT_HLINK;
	in.u.file.size = 0;
	in.u.file.target.ptr = "../x";
	in.u.file.target.len = 4;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.file.target.ptr = "d/x";
	in.u.file.target.len = 3;
	assert_true(rd_msg_encode(buf, sizeof(buf), &in) > 0);
	in.u.file.flags = RD_FF_MORE;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	/* Link groups (version 10): LINK_LAST on an HLINK, LINKED on a REG only. */
	in.u.file.flags = RD_FF_LINK_LAST;
	assert_true(rd_msg_encode(buf, sizeof(buf), &in) > 0);
	in.u.file.flags = RD_FF_LINKED;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	in.u.file.type = RD_FT_REG;
	in.u.file.mode = 0100644;
	in.u.file.target.len = 0;
	assert_true(rd_msg_encode(buf, sizeof(buf), &in) > 0);
	in.u.file.flags = RD_FF_LINK_LAST;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
	/* RD_FF_IMPLIED (LINKED's bit) on a DIR; on a symlink neither */
	in.u.file.type = RD_FT_DIR;
	in.u.file.mode = 040755;
	in.u.file.size = 0;
	in.u.file.flags = RD_FF_IMPLIED | RD_FF_ROOT;
	assert_true(rd_msg_encode(buf, sizeof(buf), &in) > 0);
	in.u.file.type = RD_FT_SYMLINK;
	in.u.file.mode = 0120777;
	in.u.file.target.ptr = "x";
	in.u.file.target.len = 1;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &in), -RD_EUSAGE);
}

/* Issue 27 item 16: the names of rdcp's own files, in any component. */
static void test_path_reserved(void **state)
{
	static const char *const yes[] = {
	    ".rdcp-partial.big",
	    ".rdcp-partial.big.rec",
	    ".rdcp-partial.big.rec.new",
	    "d/.rdcp-partial.x",
	    ".part/.rdcp-partial.x",
	    ".rdcp-partial.",
	    ".rdcp.f.0123456789abcdef",
	    "a/.rdcp.name.with.dots.fedcba9876543210/b",
	    ".rdcp-range.0123456789abcdef.big",
	    "d/.rdcp-range.x.0000000000000000",
	};
	static const char *const no[] = {
	    "big",
	    ".rdcp-partial",
	    ".rdcp-range",
	    ".rdcp.conf",
	    "x.rdcp-partial.y",
	    ".rdcp..0123456789abcdef",
	    ".rdcp.f.0123456789ABCDEF",
	    ".rdcp.f.0123456789abcde",
	    "rdcp-partial.x",
	    "a/.rdcp/b",
	};
	unsigned i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_int_equal(rd_path_reserved(yes[i], strlen(yes[i])), 1);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_int_equal(rd_path_reserved(no[i], strlen(no[i])), 0);
	/* only the given bytes count */
	assert_int_equal(rd_path_reserved(".rdcp-partial.x", 5), 0);
}

/* Every prefix of a valid message is refused, with or without a
 * consistent header length; nothing reads past the prefix (ASan). */
static void test_truncated_everywhere(void **state)
{
	static const uint8_t types[] = {RD_MSG_OPEN,	  RD_MSG_FILE, RD_MSG_DATA, RD_MSG_NOTE,
					RD_MSG_CHUNK_ERR, RD_MSG_GET,  RD_MSG_FIN,  RD_MSG_DONE};
	static uint8_t full[RD_CTRL_MAX];
	struct rd_msg in, out;
	const char *why;
	size_t i, n;
	uint8_t *cut;
	int len, v;

	for (i = 0; i < sizeof(types); i++) {
		for (v = 0; v < 2; v++) {
			assert_true(rd_msg_sample(&in, types[i], v));
			len = rd_msg_encode(full, sizeof(full), &in);
			assert_true(len > RD_HDR_LEN);
			for (n = 0; n < (size_t)len; n++) {
				/* Exact-size heap copy so ASan sees any overread. */
				cut = malloc(n ? n : 1);
				assert_non_null(cut);
				memcpy(cut, full, n);
				why = NULL;
				assert_int_equal(rd_msg_decode(cut, n, &out, &why), -RD_EPROTO);
				assert_non_null(why);
				if (n >= RD_HDR_LEN) {
					rd_msg_set_credits(cut, 1);
					cut[4] = (uint8_t)((n - RD_HDR_LEN) >> 24);
					cut[5] = (uint8_t)((n - RD_HDR_LEN) >> 16);
					cut[6] = (uint8_t)((n - RD_HDR_LEN) >> 8);
					cut[7] = (uint8_t)(n - RD_HDR_LEN);
					why = NULL;
					assert_int_equal(rd_msg_decode(cut, n, &out, &why),
							 -RD_EPROTO);
					assert_non_null(why);
				}
				free(cut);
			}
		}
	}
}

/* What lies below a wire path's first component ("dir/" sources) */
static void test_path_first_skip(void **state)
{
	(void)state;
	assert_int_equal(rd_path_first_skip("src/a/b", 7), 4);
	assert_int_equal(rd_path_first_skip("src", 3), 3);
	assert_int_equal(rd_path_first_skip("src/a", 3), 3); /* only len bytes are read */
	assert_int_equal(rd_path_first_skip("a/b", 3), 2);
}

static void test_path_check_table(void **state)
{
	static char longp[RD_PATH_MAX + 1];
	static const struct {
		const char *p;
		size_t len;
	} ok[] =
	    {
		{"a", 1}, {"a/b", 3}, {"a b/c\nd", 7}, {"\xff\xfe", 2}, {"...", 3}, {".a/b.", 5},
	    },
	  bad[] = {
	      {"", 0},	     {"/a", 2},	 {"a/", 2},  {"a//b", 4}, {".", 1}, {"..", 2},
	      {"a/../b", 6}, {"./a", 3}, {"a/.", 3}, {"a\0b", 3}, {"/", 1}, {"a/..", 4},
	  };
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		why = "unset";
		assert_int_equal(rd_path_check(ok[i].p, ok[i].len, &why), 0);
		assert_null(why);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		assert_int_equal(rd_path_check(bad[i].p, bad[i].len, &why), -RD_EPROTO);
		assert_non_null(why);
	}
	memset(longp, 'a', sizeof(longp));
	assert_int_equal(rd_path_check(longp, RD_PATH_MAX, &why), 0);
	assert_int_equal(rd_path_check(longp, RD_PATH_MAX + 1, &why), -RD_EPROTO);
	assert_string_equal(why, "path too long");
	assert_int_equal(rd_path_check(NULL, 0, NULL), -RD_EPROTO);
}

/* Lanes: the request's wish, the server's grant, JOIN requests (section 1). */
static void test_cm_lanes(void **state)
{
	struct rd_cm_req req = {.ver_min = 2, .ver_max = 2, .ctrl_depth = 64, .lanes = 4}, join, r2;
	struct rd_cm_rep rep = {.version = 2,
				.ctrl_depth = 64,
				.lanes = 3,
				.sid = 0x1122334455667788ull},
			 rep2;
	uint8_t buf[200];

	(void)state;
	/* The wish travels in the old reserved field: a plain 16-byte request. */
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rd_cm_req_encode(buf, &req), RD_CM_REQ_LEN);
	assert_int_equal(buf[RD_CM_REQ_LEN], 0xee);
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_REQ_LEN, &r2), 0);
	assert_int_equal(r2.lanes, 4);
	assert_int_equal(r2.flags & RD_CMF_JOIN, 0);

	/* A JOIN carries sid and proof; cut short, or naming lane 0 or too
	 * high a lane, it is refused. */
	join = req;
	join.flags = RD_CMF_JOIN;
	join.lanes = 2;
	join.sid = 0xdeadbeefcafef00dull;
	memset(join.proof, 0x5a, sizeof(join.proof));
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rd_cm_req_encode(buf, &join), RD_CM_JOIN_LEN);
	assert_int_equal(buf[RD_CM_JOIN_LEN], 0xee);
	assert_int_equal(rd_cm_req_decode(buf, 56, &r2), 0);
	assert_int_equal(r2.sid, join.sid);
	assert_int_equal(r2.lanes, 2);
	assert_memory_equal(r2.proof, join.proof, RD_LANE_PROOF_LEN);
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_JOIN_LEN - 1, &r2), -RD_EPROTO);
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_REQ_LEN, &r2), -RD_EPROTO);
	join.lanes = 0;
	rd_cm_req_encode(buf, &join);
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_JOIN_LEN, &r2), -RD_EPROTO);
	join.lanes = RD_LANES_MAX;
	rd_cm_req_encode(buf, &join);
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_JOIN_LEN, &r2), -RD_EPROTO);

	/* Accept data: more than one lane makes it 24 bytes with the sid. */
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rd_cm_rep_encode(buf, &rep), RD_CM_REP_LANES_LEN);
	assert_int_equal(buf[RD_CM_REP_LANES_LEN], 0xee);
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LANES_LEN, &rep2), 0);
	assert_int_equal(rep2.lanes, 3);
	assert_int_equal(rep2.sid, rep.sid);
	/* An old client reads the first 12 bytes only: same fields. */
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LEN, &rep2), 0);
	assert_int_equal(rep2.lanes, 1);
	assert_int_equal(rep2.ctrl_depth, 64);
	/* IB CM's zero padding after a 12-byte accept: one lane. */
	rep.lanes = 1;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(rd_cm_rep_encode(buf, &rep), RD_CM_REP_LEN);
	assert_int_equal(rd_cm_rep_decode(buf, 196, &rep2), 0);
	assert_int_equal(rep2.lanes, 1);
	assert_int_equal(rep2.sid, 0);
	/* A grant over the limit is malformed. */
	rep.lanes = RD_LANES_MAX + 1;
	rd_cm_rep_encode(buf, &rep);
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LANES_LEN, &rep2), -RD_EPROTO);
}

/* The server decides: never more than its cap, never more than asked. */
static void test_lanes_grant(void **state)
{
	(void)state;
	assert_int_equal(rd_lanes_grant(0, 4), 1);
	assert_int_equal(rd_lanes_grant(1, 4), 1);
	assert_int_equal(rd_lanes_grant(2, 4), 2);
	assert_int_equal(rd_lanes_grant(8, 4), 4);     /* the server's cap wins */
	assert_int_equal(rd_lanes_grant(65535, 4), 4); /* whatever a client asks */
	assert_int_equal(rd_lanes_grant(4, 0), 1);     /* no cap set: one lane */
	assert_int_equal(rd_lanes_grant(100, 100), RD_LANES_MAX);
}

/* Lane proofs (section 1, version 8): the exporter context, LANES. */
static void test_lane_proofs(void **state)
{
	static const uint8_t want[RD_LANE_PROOF_CTX_LEN] = {
	    0,	  1,	2,    3,    4,	  5,	6,    7,
	    8,	  9,	10,   11,   12,	  13,	14,   15,   /* nonce */
	    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, /* sid */
	    0x00, 0x03,					    /* lane */
	    0x02};					    /* rail */
	uint8_t nonce[RD_LANE_NONCE_LEN], ctx[RD_LANE_PROOF_CTX_LEN];
	struct bld b;
	struct rd_msg m;
	const char *why;
	unsigned i;

	(void)state;
	for (i = 0; i < RD_LANE_NONCE_LEN; i++)
		nonce[i] = (uint8_t)i;
	rd_lane_proof_ctx(ctx, nonce, 0x0123456789abcdefull, 3, 2);
	assert_memory_equal(ctx, want, sizeof(want));
	assert_true(RD_PROTO_LANE_PROOF <= RD_PROTO_MAX);
	assert_string_equal(rd_msg_type_name(RD_MSG_LANES), "LANES");
	/* LANES: exactly 16 bytes of nonce. */
	b_hdr(&b, RD_MSG_LANES);
	b_raw(&b, nonce, RD_LANE_NONCE_LEN);
	b_fix(&b);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, &why), 0);
	assert_memory_equal(m.u.lanes.nonce, nonce, RD_LANE_NONCE_LEN);
	b.n--;
	b_fix(&b);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, &why), -RD_EPROTO);
	b_hdr(&b, RD_MSG_LANES);
	b_raw(&b, nonce, RD_LANE_NONCE_LEN);
	b_u8(&b, 0);
	b_fix(&b);
	assert_int_equal(rd_msg_decode(b.b, b.n, &m, &why), -RD_EPROTO);
}

/* Rails (section 1): a JOIN's rail, an accept's rail, GET keys, RAILS. */
static void test_rails(void **state)
{
	static uint8_t buf[RD_CTRL_MAX];
	struct rd_cm_req q, q2;
	struct rd_cm_rep p, p2;
	struct rd_msg m, out;
	const char *why;
	int n;

	(void)state;
	memset(&q, 0, sizeof(q));
	q.ver_min = q.ver_max = RD_PROTO_MAX;
	q.flags = RD_CMF_JOIN | RD_CMF_RAILS;
	q.lanes = 1;
	q.sid = 7;
	q.rail = 2;
	assert_int_equal(rd_cm_req_encode(buf, &q), RD_CM_JOIN_RAIL_LEN);
	assert_int_equal(rd_cm_req_decode(buf, 56, &q2), 0);
	assert_int_equal(q2.rail, 2);
	/* padding where the rail byte was not sent: rail 0 */
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_JOIN_LEN, &q2), 0);
	assert_int_equal(q2.rail, 0);
	buf[40] = RD_RAILS_MAX;
	assert_int_equal(rd_cm_req_decode(buf, 56, &q2), -RD_EPROTO);

	memset(&p, 0, sizeof(p));
	p.version = RD_PROTO_MAX;
	p.ctrl_depth = 64;
	p.flags = RD_CMF_RAILS;
	p.lanes = 2;
	p.rail = 3;
	p.sid = 9;
	assert_int_equal(rd_cm_rep_encode(buf, &p), RD_CM_REP_LANES_LEN);
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LANES_LEN, &p2), 0);
	assert_int_equal(p2.rail, 3);
	assert_int_equal(p2.flags, RD_CMF_RAILS);
	buf[15] = RD_RAILS_MAX;
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LANES_LEN, &p2), -RD_EPROTO);

	/* A GET with rail keys: flagged in its kind, counted, bounded. */
	assert_true(rd_msg_sample(&m, RD_MSG_GET, 1));
	n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_int_equal(n, RD_HDR_LEN + 41 + 1 + 4 * (RD_RAILS_MAX - 1));
	assert_int_equal(buf[RD_HDR_LEN + 4], RD_GET_SUM | RD_GET_RAILS);
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), 0);
	assert_int_equal(out.u.get.kind, RD_GET_SUM);
	assert_int_equal(out.u.get.nx, RD_RAILS_MAX - 1);
	buf[RD_HDR_LEN + 41] = 0;
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);
	assert_string_equal(why, "bad rail key count");
	buf[RD_HDR_LEN + 41] = RD_RAILS_MAX;
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);
	m.u.get.nx = RD_RAILS_MAX;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
	/* Without rails a GET is what it was: 41 bytes, the kind alone. */
	assert_true(rd_msg_sample(&m, RD_MSG_GET, 0));
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), RD_HDR_LEN + 41);
	assert_int_equal(buf[RD_HDR_LEN + 4], RD_GET_DATA);

	/* RAILS: families 4 and 6 only, at most RD_RAILS_MAX - 1 addresses. */
	assert_true(rd_msg_sample(&m, RD_MSG_RAILS, 1));
	n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_int_equal(n, RD_HDR_LEN + 1 + 17 * (RD_RAILS_MAX - 1));
	buf[RD_HDR_LEN + 1] = 5;
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);
	assert_string_equal(why, "bad rail address family");
	buf[RD_HDR_LEN + 1] = 4;
	buf[RD_HDR_LEN] = RD_RAILS_MAX;
	assert_int_equal(rd_msg_decode(buf, (size_t)n, &out, &why), -RD_EPROTO);
	m.u.rails.a[0].family = 0;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
}

/* MODULES (section 3, Listings): one name and comment. */
static void b_modules1(struct bld *b, uint8_t flags, const char *name, size_t nlen,
		       const char *comment, size_t clen)
{
	b_hdr(b, RD_MSG_MODULES);
	b_u8(b, flags);
	b_u16(b, 1);
	b_str(b, name, nlen);
	b_str(b, comment, clen);
	b_fix(b);
}

static void test_listing(void **state)
{
	char big[RD_LIST_COMMENT_MAX + 2];
	struct bld b;
	struct rd_msg m;
	uint8_t buf[RD_MSG_MAX];
	unsigned i;

	(void)state;
	memset(big, 'c', sizeof(big));
	/* LIST is empty; a byte more is refused */
	b_hdr(&b, RD_MSG_LIST);
	b_fix(&b);
	expect_ok(&b, &m);
	assert_int_equal(m.hdr.type, RD_MSG_LIST);
	b_u8(&b, 0);
	b_fix(&b);
	expect_refused(&b, "trailing bytes after payload");
	/* a good MODULES, and the longest comment */
	b_modules1(&b, RD_LSF_LAST, "pub", 3, "public files", 12);
	expect_ok(&b, &m);
	assert_int_equal(m.u.modules.n, 1);
	assert_int_equal(m.u.modules.flags, RD_LSF_LAST);
	assert_memory_equal(m.u.modules.name[0].ptr, "pub", 3);
	b_modules1(&b, 0, "pub", 3, big, RD_LIST_COMMENT_MAX);
	expect_ok(&b, &m);
	/* what a hostile server may not send */
	b_modules1(&b, 0x2, "pub", 3, "", 0);
	expect_refused(&b, "unknown MODULES flags");
	b_modules1(&b, 0, "", 0, "", 0);
	expect_refused(&b, "bad module name length");
	b_modules1(&b, 0, big, RD_LIST_NAME_MAX + 1, "", 0);
	expect_refused(&b, "bad module name length");
	b_modules1(&b, 0, "../etc", 6, "", 0);
	expect_refused(&b, "bad byte in a module name");
	b_modules1(&b, 0, "a\033]0;x", 7, "", 0);
	expect_refused(&b, "bad byte in a module name");
	b_modules1(&b, 0, "pub", 3, "a\nb", 3);
	expect_refused(&b, "bad byte in a module comment");
	b_modules1(&b, 0, "pub", 3, "\x7f", 1);
	expect_refused(&b, "bad byte in a module comment");
	b_modules1(&b, 0, "pub", 3, big, RD_LIST_COMMENT_MAX + 1);
	expect_refused(&b, "module comment too long");
	b_hdr(&b, RD_MSG_MODULES);
	b_u8(&b, 0);
	b_u16(&b, RD_LIST_BATCH + 1);
	for (i = 0; i < RD_LIST_BATCH + 1; i++) {
		b_strz(&b, "m");
		b_strz(&b, "");
	}
	b_fix(&b);
	expect_refused(&b, "too many modules in one message");
	/* the encoder refuses the same */
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_MODULES;
	m.u.modules.n = 1;
	m.u.modules.name[0] = (struct rd_str){"a/b", 3};
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);
	/* OPEN's list flag is known from this version on */
	assert_true(RD_OF_LIST & RD_OF_KNOWN);
	assert_true(RD_PROTO_LIST <= RD_PROTO_MAX);
	assert_string_equal(rd_msg_type_name(RD_MSG_MODULES), "MODULES");
	assert_string_equal(rd_msg_type_name(RD_MSG_LIST), "LIST");
}

/* OPEN (mode) with RD_OF_SELECT (and RD_OF_MIRROR when sel is 2, or MIRROR alone when 0). */
static void b_open_mir_in(struct bld *b, uint8_t mode, int sel, uint16_t flags,
			  int64_t max_delete)
{
	b_hdr(b, RD_MSG_OPEN);
	b_u8(b, mode);
	b_u32(b, RD_OF_RECURSIVE | RD_OF_MIRROR | (sel ? RD_OF_SELECT : 0));
	b_u32(b, RD_CHUNK_DEFAULT);
	b_strz(b, "");
	b_u16(b, 1);
	b_strz(b, "m/d");
	if (sel) {
		b_u8(b, RD_CMP_QUICK);
		b_u16(b, 0);
		b_u32(b, 0);
		b_u64(b, 0);
		b_u64(b, RD_SIZE_NONE);
		b_u8(b, 0);
		b_u16(b, 0);
		b_u16(b, 0);
		b_u32(b, 0);
	}
	b_u16(b, flags);
	b_u64(b, (uint64_t)max_delete);
	b_fix(b);
}

static void b_open_mir(struct bld *b, int sel, uint16_t flags, int64_t max_delete)
{
	b_open_mir_in(b, RD_MODE_PUSH, sel, flags, max_delete);
}

static void b_deleted1(struct bld *b, uint16_t n, uint8_t flags, const char *path, const char *text)
{
	b_hdr(b, RD_MSG_DELETED);
	b_u16(b, n);
	for (uint16_t i = 0; i < n; i++) {
		b_u8(b, flags);
		b_strz(b, path);
		b_strz(b, text);
	}
	b_fix(b);
}

/* Version 13: OPEN's MIRROR block and DELETED (rd_proto.h). */
static void test_mirror(void **state)
{
	char big[RD_PATH_MAX + 2];
	struct bld b;
	struct rd_msg m;
	uint8_t buf[RD_MSG_MAX];

	(void)state;
	b_open_mir(&b, 1, RD_MF_DELETE | RD_MF_DEL_AFTER | RD_MF_FORCE, 25);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.mir.flags, RD_MF_DELETE | RD_MF_DEL_AFTER | RD_MF_FORCE);
	assert_int_equal(m.u.open.mir.max_delete, 25);
	b_open_mir(&b, 1, RD_MF_DELETE | RD_MF_DEL_BEFORE, RD_MAX_DELETE_NONE);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.mir.max_delete, -1);
	b_open_mir(&b, 1, RD_MF_FORCE | RD_MF_IGNORE_ERRORS | RD_MF_ALLOW_EMPTY, 0);
	expect_ok(&b, &m);
	/* what a client may not ask */
	b_open_mir(&b, 0, RD_MF_DELETE, -1);
	expect_refused(&b, "MIRROR without SELECT");
	b_open_mir(&b, 1, RD_MF_DELETE | RD_MF_LATE_ROOM, 2);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.mir.flags, RD_MF_DELETE | RD_MF_LATE_ROOM);
	b_open_mir(&b, 1, 0x100, -1);
	expect_refused(&b, "unknown MIRROR flags");
	/* --remove-source-files for the server: a pull's only, never with late room */
	b_open_mir_in(&b, RD_MODE_PULL, 1, RD_MF_REMOVE_SRC, -1);
	expect_ok(&b, &m);
	assert_int_equal(m.u.open.mir.flags, RD_MF_REMOVE_SRC);
	b_open_mir(&b, 1, RD_MF_REMOVE_SRC, -1);
	expect_refused(&b, "MIRROR: remove sources but on a pull, or with late room");
	b_open_mir_in(&b, RD_MODE_PULL, 1, RD_MF_DELETE | RD_MF_LATE_ROOM | RD_MF_REMOVE_SRC, -1);
	expect_refused(&b, "MIRROR: remove sources but on a pull, or with late room");
	b_open_mir(&b, 1, RD_MF_DELETE | RD_MF_DEL_BEFORE | RD_MF_DEL_AFTER, -1);
	expect_refused(&b, "MIRROR: delete before and after");
	b_open_mir(&b, 1, RD_MF_DEL_AFTER, -1);
	expect_refused(&b, "MIRROR: a deletion order without DELETE");
	b_open_mir(&b, 1, RD_MF_DELETE, -2);
	expect_refused(&b, "bad MIRROR max_delete");
	b_open_mir(&b, 1, RD_MF_DELETE, INT64_MIN);
	expect_refused(&b, "bad MIRROR max_delete");
	/* the encoder: no MIRROR values without the flag */
	assert_true(rd_msg_sample(&m, RD_MSG_OPEN, 0));
	m.u.open.mir.flags = RD_MF_DELETE;
	assert_int_equal(rd_msg_encode(buf, sizeof(buf), &m), -RD_EUSAGE);

	/* DELETED */
	b_deleted1(&b, 1, RD_DLF_DIR, "a/b", "");
	expect_ok(&b, &m);
	assert_int_equal(m.u.deleted.n, 1);
	assert_int_equal(m.u.deleted.flags[0], RD_DLF_DIR);
	assert_memory_equal(m.u.deleted.path[0].ptr, "a/b", 3);
	b_deleted1(&b, RD_DEL_BATCH, RD_DLF_SKIPPED, "x", "");
	expect_ok(&b, &m);
	b_deleted1(&b, 1, RD_DLF_OFF, "", "I/O error on the sending side");
	expect_ok(&b, &m);
	b_deleted1(&b, 0, 0, "", "");
	expect_refused(&b, "bad DELETED count");
	b_deleted1(&b, RD_DEL_BATCH + 1, 0, "x", "");
	expect_refused(&b, "bad DELETED count");
	b_deleted1(&b, 1, RD_DLF_FAILED | RD_DLF_UNMADE, "x", "could not make way");
	expect_ok(&b, &m);
	b_deleted1(&b, 1, RD_DLF_UNMADE, "x", "");
	expect_refused(&b, "DELETED UNMADE without FAILED");
	b_deleted1(&b, 1, 0x20, "x", "");
	expect_refused(&b, "unknown DELETED flags");
	b_deleted1(&b, 1, 0, "x", "why");
	expect_refused(&b, "DELETED text without FAILED, SKIPPED or OFF");
	memset(big, 'p', sizeof(big));
	big[RD_PATH_MAX + 1] = '\0';
	b_deleted1(&b, 1, 0, big, "");
	expect_refused(&b, "deleted path too long");
	assert_true(RD_OF_MIRROR & RD_OF_KNOWN);
	assert_int_equal(RD_OF_MIRROR & RD_OF_DESTS, 0); /* two blocks, two bits */
	assert_int_equal(RD_PROTO_MIRROR, 13);
	assert_true(RD_PROTO_MIRROR <= RD_PROTO_MAX);
	assert_string_equal(rd_msg_type_name(RD_MSG_DELETED), "DELETED");
}

static void test_cm_roundtrip(void **state)
{
	struct rd_cm_req req = {.ver_min = 1, .ver_max = 3, .flags = 0x4, .ctrl_depth = 64}, req2;
	struct rd_cm_rep rep = {.version = 1, .ctrl_depth = 32, .flags = 0x5}, rep2;
	struct rd_cm_rej rej = {RD_REJ_VERSION, 1, 1}, rej2;
	uint8_t buf[56];

	memset(buf, 0xee, sizeof(buf));
	rd_cm_req_encode(buf, &req);
	assert_int_equal(buf[RD_CM_REQ_LEN], 0xee); /* wrote exactly 16 */
	assert_memory_equal(buf, "RDCP", 4);
	/* IB CM pads private data to 56 bytes: extra bytes are ignored. */
	assert_int_equal(rd_cm_req_decode(buf, sizeof(buf), &req2), 0);
	assert_int_equal(req2.ver_min, 1);
	assert_int_equal(req2.ver_max, 3);
	assert_int_equal(req2.flags, 0x4);
	assert_int_equal(req2.ctrl_depth, 64);
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_REQ_LEN - 1, &req2), -RD_EPROTO);
	buf[0] = 'X';
	assert_int_equal(rd_cm_req_decode(buf, RD_CM_REQ_LEN, &req2), -RD_EPROTO);

	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(rd_cm_rep_encode(buf, &rep), RD_CM_REP_LEN);
	assert_int_equal(buf[RD_CM_REP_LEN], 0xee);
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LEN, &rep2), 0);
	assert_int_equal(rep2.version, 1);
	assert_int_equal(rep2.ctrl_depth, 32);
	assert_int_equal(rep2.flags, 0x5);
	assert_int_equal(rep2.lanes, 1); /* short accept data: one lane */
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LEN - 1, &rep2), -RD_EPROTO);
	buf[3] ^= 1;
	assert_int_equal(rd_cm_rep_decode(buf, RD_CM_REP_LEN, &rep2), -RD_EPROTO);

	memset(buf, 0xee, sizeof(buf));
	rd_cm_rej_encode(buf, &rej);
	assert_int_equal(buf[RD_CM_REJ_LEN], 0xee);
	assert_int_equal(rd_cm_rej_decode(buf, sizeof(buf), &rej2), 0);
	assert_memory_equal(&rej, &rej2, sizeof(rej));
	assert_int_equal(rd_cm_rej_decode(buf, RD_CM_REJ_LEN - 1, &rej2), -RD_EPROTO);
	assert_int_equal(rd_cm_rej_decode(NULL, 0, &rej2), -RD_EPROTO);
}

static void test_names(void **state)
{
	assert_string_equal(rd_msg_type_name(RD_MSG_CREDIT), "CREDIT");
	assert_string_equal(rd_msg_type_name(RD_MSG_CHUNK_ERR), "CHUNK_ERR");
	assert_string_equal(rd_msg_type_name(RD_MSG_FIN), "FIN");
	assert_string_equal(rd_msg_type_name(0), "unknown");
	assert_string_equal(rd_msg_type_name(RD_MSG_TYPE_MAX), "unknown");
	assert_string_equal(rd_msg_type_name(255), "unknown");
	assert_string_equal(rd_rej_reason_str(RD_REJ_VERSION), "no common protocol version");
	assert_string_equal(rd_rej_reason_str(RD_REJ_SHUTDOWN), "server shutting down");
	assert_non_null(strstr(rd_rej_reason_str(RD_REJ_HOST_BUSY), "max connections per host"));
	assert_string_equal(rd_rej_reason_str(0), "unknown");
	assert_string_equal(rd_rej_reason_str(999), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_every_type),
	    cmocka_unit_test(test_items),
	    cmocka_unit_test(test_path_reserved),
	    cmocka_unit_test(test_fixed_layouts),
	    cmocka_unit_test(test_set_credits),
	    cmocka_unit_test(test_encode_refuses_bad_fields),
	    cmocka_unit_test(test_encode_refuses_oversize),
	    cmocka_unit_test(test_refuse_short),
	    cmocka_unit_test(test_refuse_unknown_type),
	    cmocka_unit_test(test_refuse_reserved),
	    cmocka_unit_test(test_refuse_length_mismatch),
	    cmocka_unit_test(test_refuse_length_over_limit),
	    cmocka_unit_test(test_refuse_trailing),
	    cmocka_unit_test(test_refuse_digest_name_too_long),
	    cmocka_unit_test(test_refuse_bad_digest_name),
	    cmocka_unit_test(test_refuse_tls_frame),
	    cmocka_unit_test(test_open_empty_digest),
	    cmocka_unit_test(test_refuse_text_too_long),
	    cmocka_unit_test(test_refuse_path_too_long),
	    cmocka_unit_test(test_refuse_target_too_long),
	    cmocka_unit_test(test_refuse_target_nul),
	    cmocka_unit_test(test_refuse_target_mismatch),
	    cmocka_unit_test(test_refuse_npaths_zero),
	    cmocka_unit_test(test_refuse_npaths_over),
	    cmocka_unit_test(test_refuse_open_mode),
	    cmocka_unit_test(test_open_partial_dir),
	    cmocka_unit_test(test_window),
	    cmocka_unit_test(test_select),
	    cmocka_unit_test(test_dests),
	    cmocka_unit_test(test_rules_contents),
	    cmocka_unit_test(test_refuse_open_path),
	    cmocka_unit_test(test_refuse_chunk_size),
	    cmocka_unit_test(test_refuse_ftype),
	    cmocka_unit_test(test_refuse_mtime_nsec),
	    cmocka_unit_test(test_refuse_file_path),
	    cmocka_unit_test(test_refuse_get_kind),
	    cmocka_unit_test(test_refuse_data_kind),
	    cmocka_unit_test(test_pack_count),
	    cmocka_unit_test(test_batches),
	    cmocka_unit_test(test_refuse_dlen),
	    cmocka_unit_test(test_refuse_note_path_too_long),
	    cmocka_unit_test(test_truncated_everywhere),
	    cmocka_unit_test(test_meta_and_new_types),
	    cmocka_unit_test(test_path_check_table),
	    cmocka_unit_test(test_path_first_skip),
	    cmocka_unit_test(test_cm_roundtrip),
	    cmocka_unit_test(test_cm_lanes),
	    cmocka_unit_test(test_rails),
	    cmocka_unit_test(test_lane_proofs),
	    cmocka_unit_test(test_lanes_grant),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_listing),
	    cmocka_unit_test(test_mirror),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
