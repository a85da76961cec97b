// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/session/rd_session.h"

static void test_module_parse_ok(void **state)
{
	struct rd_module m;
	struct rd_err e;

	assert_int_equal(rd_module_parse(&m, "data=/srv/data", &e), 0);
	assert_string_equal(m.name, "data");
	assert_string_equal(m.path, "/srv/data");
	assert_int_equal(m.readonly, 0);
	assert_int_equal(rd_module_parse(&m, "pub=/srv/a,b,ro", &e), 0);
	assert_string_equal(m.path, "/srv/a,b");
	assert_int_equal(m.readonly, 1);
	assert_int_equal(rd_module_parse(&m, "w=/srv/w,rw", &e), 0);
	assert_int_equal(m.readonly, 0);
}

static void test_module_parse_bad(void **state)
{
	struct rd_module m;
	struct rd_err e;

	assert_int_equal(rd_module_parse(&m, "nodir", &e), -RD_EUSAGE);
	assert_non_null(strstr(e.msg, "nodir"));
	assert_int_equal(rd_module_parse(&m, "=/x", &e), -RD_EUSAGE);
	assert_int_equal(rd_module_parse(&m, "a/b=/x", &e), -RD_EUSAGE);
	assert_int_equal(rd_module_parse(&m, "..=/x", &e), -RD_EUSAGE);
	assert_int_equal(rd_module_parse(&m, "rel=x/y", &e), -RD_EUSAGE);
	assert_non_null(strstr(e.msg, "absolute"));
	assert_int_equal(rd_module_parse(&m, "empty=,ro", &e), -RD_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_parse_ok),
		cmocka_unit_test(test_module_parse_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
