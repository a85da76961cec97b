// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/operand/rd_operand.h"

struct tc {
	const char *arg;
	int kind;
	const char *user, *host, *port, *path;
};

static const struct tc good[] = {
	{"file.txt", RD_OP_LOCAL, "", "", "", "file.txt"},
	{"/abs/path", RD_OP_LOCAL, "", "", "", "/abs/path"},
	{"./a:b", RD_OP_LOCAL, "", "", "", "./a:b"},
	{"dir/x:y", RD_OP_LOCAL, "", "", "", "dir/x:y"},
	{"host:path", RD_OP_SSH, "", "host", "", "path"},
	{"host:", RD_OP_SSH, "", "host", "", ""},
	{"bob@host:/tmp/x", RD_OP_SSH, "bob", "host", "", "/tmp/x"},
	{"[fe80::1]:x", RD_OP_SSH, "", "fe80::1", "", "x"},
	{"bob@[2001:db8::2]:/d", RD_OP_SSH, "bob", "2001:db8::2", "", "/d"},
	{"host::mod/p/q", RD_OP_DAEMON, "", "host", "", "mod/p/q"},
	{"10.0.0.1::mod", RD_OP_DAEMON, "", "10.0.0.1", "", "mod"},
	{"rdcp://h/mod/x", RD_OP_DAEMON, "", "h", "", "mod/x"},
	{"rdcp://h:9000/mod/x", RD_OP_DAEMON, "", "h", "9000", "mod/x"},
	{"rdcp://[::1]:9000/mod", RD_OP_DAEMON, "", "::1", "9000", "mod"},
	{"alice@host::mod/x", RD_OP_DAEMON, "alice", "host", "", "mod/x"},
	{"alice@[fd00::2]::mod", RD_OP_DAEMON, "alice", "fd00::2", "", "mod"},
	{"rdcp://alice@h:9000/mod/x", RD_OP_DAEMON, "alice", "h", "9000", "mod/x"},
	{"rdcp://bob@[::1]/mod", RD_OP_DAEMON, "bob", "::1", "", "mod"},
};

static void test_good(void **state)
{
	struct rd_operand op;
	struct rd_err e;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int r = rd_operand_parse(&op, good[i].arg, &e);

		if (r)
			fail_msg("%s: %s", good[i].arg, e.msg);
		assert_int_equal(op.kind, good[i].kind);
		assert_string_equal(op.user, good[i].user);
		assert_string_equal(op.host, good[i].host);
		assert_string_equal(op.port, good[i].port);
		assert_string_equal(op.path, good[i].path);
	}
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
	    "",		 "rdcp://h",	 "rdcp://h:0/m",  "rdcp://h:x/m", "rdcp://h:70000/m",
	    "-oProxy:x", "h;rm:x",	 "rdcp://[::1/m", "@h::m",	  "rdcp://@h/m",
	    "a b@h::m",	 "a:b@[::1]::m", "\x01@h::m",
	};
	struct rd_operand op;
	struct rd_err e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rd_operand_parse(&op, bad[i], &e) != -RD_EUSAGE)
			fail_msg("accepted '%s'", bad[i]);
	}
}

/* HOST:: and rdcp://HOST/: the module listing (an empty path, refused by a copy) */
static void test_module_listing(void **state)
{
	struct rd_operand op;
	struct rd_err e;
	char out[64];

	(void)state;
	assert_int_equal(rd_operand_parse(&op, "h::", &e), 0);
	assert_int_equal(op.kind, RD_OP_DAEMON);
	assert_string_equal(op.host, "h");
	assert_string_equal(op.path, "");
	assert_int_equal(rd_operand_parse(&op, "rdcp://u@h:99/", &e), 0);
	assert_int_equal(op.kind, RD_OP_DAEMON);
	assert_string_equal(op.user, "u");
	assert_string_equal(op.port, "99");
	assert_string_equal(op.path, "");
	assert_int_equal(rd_operand_normalize(op.path, out, sizeof(out), &e), -RD_EUSAGE);
	assert_non_null(strstr(e.msg, "name a module"));
}

static void test_same_remote(void **state)
{
	struct rd_operand a, b;
	struct rd_err e;

	rd_operand_parse(&a, "h::m/a", &e);
	rd_operand_parse(&b, "h::m/b", &e);
	assert_true(rd_operand_same_remote(&a, &b));
	rd_operand_parse(&b, "g::m/b", &e);
	assert_false(rd_operand_same_remote(&a, &b));
}

static void test_normalize(void **state)
{
	char out[64];
	struct rd_err e;

	assert_int_equal(rd_operand_normalize("m/", out, sizeof(out), &e), 0);
	assert_string_equal(out, "m");
	assert_int_equal(rd_operand_normalize("/m//a/./b/", out, sizeof(out), &e), 0);
	assert_string_equal(out, "m/a/b");
	assert_int_equal(rd_operand_normalize("m/../x", out, sizeof(out), &e), -RD_EUSAGE);
	assert_int_equal(rd_operand_normalize("./", out, sizeof(out), &e), -RD_EUSAGE);
	assert_int_equal(rd_operand_normalize("m/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
					      out, sizeof(out), &e),
			 -RD_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),	   cmocka_unit_test(test_bad),
	    cmocka_unit_test(test_module_listing), cmocka_unit_test(test_same_remote),
	    cmocka_unit_test(test_normalize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
