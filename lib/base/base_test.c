// SPDX-License-Identifier: MIT
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/base/rd_err.h"
#include "lib/base/rd_escape.h"
#include "lib/base/rd_num.h"

static void test_err_set_returns_negative_and_formats(void **state)
{
	struct rd_err e;
	int ret;

	rd_err_clear(&e);
	ret = rd_err_set(&e, RD_ENOENT, ENOENT, "open %s", "/x/y");
	assert_int_equal(ret, -RD_ENOENT);
	assert_int_equal(e.status, RD_ENOENT);
	assert_int_equal(e.sys_errno, ENOENT);
	assert_string_equal(e.msg, "open /x/y: No such file or directory");
}

static void test_err_prefix(void **state)
{
	struct rd_err e;

	rd_err_set(&e, RD_ECONN, 0, "connection refused");
	rd_err_prefix(&e, "peer %s", "10.0.0.1");
	assert_string_equal(e.msg, "peer 10.0.0.1: connection refused");
	assert_string_equal(rd_status_name(RD_ECONN), "connection");
	assert_string_equal(rd_status_name(999), "unknown");
}

static void test_err_null_ok(void **state)
{
	assert_int_equal(rd_err_set(NULL, RD_ESYS, 0, "x"), -RD_ESYS);
	rd_err_clear(NULL);
	rd_err_prefix(NULL, "y");
}

static void test_escape_controls(void **state)
{
	char out[128];
	const char name[] = "a\x1b[2Jb\nc\\d\x7f";

	rd_escape(out, sizeof(out), name, sizeof(name) - 1);
	assert_string_equal(out, "a\\x1b[2Jb\\nc\\\\d\\x7f");
}

static void test_escape_utf8_and_invalid(void **state)
{
	char out[128];
	const char ok[] = "caf\xc3\xa9";
	const char bad[] = "x\xff\xc3y\xc2\x9b";

	rd_escape(out, sizeof(out), ok, sizeof(ok) - 1);
	assert_string_equal(out, "caf\xc3\xa9");
	/* 0xc2 0x9b is CSI as a C1 control: must be escaped, not passed. */
	rd_escape(out, sizeof(out), bad, sizeof(bad) - 1);
	assert_string_equal(out, "x\\xff\\xc3y\\xc2\\x9b");
}

static void test_escape_truncates_safely(void **state)
{
	char out[4];
	size_t need;

	need = rd_escape(out, sizeof(out), "\x01\x02", 2);
	assert_int_equal(need, 8);
	assert_int_equal(strlen(out), 3);
}

/* Issue 7 item 12: "80abc", "-1", " 5", "0x10" are not numbers. */
static void test_num_strict(void **state)
{
	static const char *const bad[] = {"",	 "80abc", "-1", " 5", "+5", "0x10", "5 ",
					  "1e3", "4M",	  "99999999999999999999"};
	uint64_t v = 7;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rd_num_parse(bad[i], 0, 0, UINT64_MAX, &v), -1);
		assert_int_equal(v, 7);
	}
	assert_int_equal(rd_num_parse("80", 0, 1, 65535, &v), 0);
	assert_int_equal(v, 80);
	assert_int_equal(rd_num_parse("65536", 0, 1, 65535, &v), -1);
	assert_int_equal(rd_num_parse("0", 0, 1, 65535, &v), -1);
	assert_int_equal(rd_num_parse("4M", RD_NUM_SIZE, 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 4u << 20);
	assert_int_equal(rd_num_parse("4KiB", RD_NUM_SIZE, 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(rd_num_parse("1g", RD_NUM_SIZE, 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1u << 30);
	assert_int_equal(rd_num_parse("4MX", RD_NUM_SIZE, 0, UINT64_MAX, &v), -1);
	assert_int_equal(rd_num_parse("4Mi B", RD_NUM_SIZE, 0, UINT64_MAX, &v), -1);
	assert_int_equal(rd_num_parse("17179869184G", RD_NUM_SIZE, 0, UINT64_MAX, &v), -1);
}

/* rsync's own answers (rsync 3.x --bwlimit=...: the bytes/s it uses). */
static void test_rsync_size(void **state)
{
	static const struct {
		const char *in;
		int ret;
		uint64_t want;
	} t[] = {
	    {"20M", 0, 20ull << 20},	{"20MiB", 0, 20ull << 20}, {"20MB", 0, 20000000},
	    {"20mb", 0, 20000000},	{"1.5m", 0, 1572864},	   {"100", 0, 102400},
	    {"0", 0, 0},		{"512b", 0, 512},	   {"1g", 0, 1ull << 30},
	    {"1G+1", 0, (1ull << 30) + 1}, {"1K-1", 0, 1023},	   {"2KB", 0, 2000},
	    {"abc", -1, 0},		{"20X", -1, 0},		   {"", -1, 0},
	    {".", -1, 0},		{"1Mz", -1, 0},		   {"-5", -2, 0},
	    {"99999999999999999999999P", -2, 0},
	};
	unsigned i;
	uint64_t v;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		v = 0;
		assert_int_equal(rd_num_parse_rsync_size(t[i].in, 'k', &v), t[i].ret);
		if (!t[i].ret && v != t[i].want)
			fail_msg("%s: %llu, want %llu", t[i].in, (unsigned long long)v,
				 (unsigned long long)t[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rsync_size),
		cmocka_unit_test(test_err_set_returns_negative_and_formats),
		cmocka_unit_test(test_err_prefix),
		cmocka_unit_test(test_err_null_ok),
		cmocka_unit_test(test_escape_controls),
		cmocka_unit_test(test_escape_utf8_and_invalid),
		cmocka_unit_test(test_escape_truncates_safely),
		cmocka_unit_test(test_num_strict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
