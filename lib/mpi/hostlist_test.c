// SPDX-License-Identifier: MIT
/* Slurm-style host lists and rdcp-mpi's destination operands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lib/mpi/rd_hostlist.h"

/* The expansion joined by ' ', or "ERR: message". */
static const char *expand(const char *spec)
{
	static char out[8192];
	struct rd_hostlist l;
	struct rd_err err;
	unsigned i;

	out[0] = '\0';
	if (rd_hostlist_parse(&l, spec, &err)) {
		snprintf(out, sizeof(out), "ERR: %s", err.msg);
		return out;
	}
	for (i = 0; i < l.n; i++) {
		strcat(out, i ? " " : "");
		strcat(out, l.host[i]);
	}
	rd_hostlist_free(&l);
	return out;
}

static void test_hostlist(void **state)
{
	assert_string_equal(expand("dtn[01-03]"), "dtn01 dtn02 dtn03");
	assert_string_equal(expand("n[1-3,7]"), "n1 n2 n3 n7");
	assert_string_equal(expand("n[8-10]"), "n8 n9 n10");
	assert_string_equal(expand("a,b[2-3]x"), "a b2x b3x");
	assert_string_equal(expand("ib-n[9-10]-r2,login"), "ib-n9-r2 ib-n10-r2 login");
	assert_string_equal(expand("127.0.0.[1-2]"), "127.0.0.1 127.0.0.2");
	assert_string_equal(expand("one"), "one");
	assert_string_equal(expand("r[001-002,010]"), "r001 r002 r010");
}

static void test_hostlist_bad(void **state)
{
	assert_non_null(strstr(expand(""), "empty host list"));
	assert_non_null(strstr(expand("a,,b"), "empty name"));
	assert_non_null(strstr(expand("n[3-1]"), "must go up"));
	assert_non_null(strstr(expand("n[1-3"), "brackets must pair"));
	assert_non_null(strstr(expand("n1-3]"), "']' without '['"));
	assert_non_null(strstr(expand("n[1-2][3]"), "one set per host"));
	assert_non_null(strstr(expand("n[a]"), "expected a number"));
	assert_non_null(strstr(expand("n[1;2]"), "expected ',' or ']'"));
	assert_non_null(strstr(expand("n[1-99999]"), "more than 4096 hosts"));
	assert_non_null(strstr(expand("n[1234567890]"), "at most 9 digits"));
}

static void test_dest(void **state)
{
	struct rd_mpi_dest d;
	struct rd_err err;

	assert_int_equal(rd_mpi_dest_parse(&d, "dtn[01-02]::proj/dst/", &err), 1);
	assert_string_equal(d.path, "proj/dst");
	assert_string_equal(d.port, "");
	assert_int_equal(d.hosts.n, 2);
	assert_string_equal(d.hosts.host[1], "dtn02");
	rd_hostlist_free(&d.hosts);

	assert_int_equal(rd_mpi_dest_parse(&d, "rdcp://alice@dtn[1-3,7]:19000/proj", &err), 1);
	assert_string_equal(d.user, "alice");
	assert_string_equal(d.port, "19000");
	assert_string_equal(d.path, "proj");
	assert_int_equal(d.hosts.n, 4);
	assert_string_equal(d.hosts.host[3], "dtn7");
	rd_hostlist_free(&d.hosts);

	assert_int_equal(rd_mpi_dest_parse(&d, "rdcp://h[1-2]/m/a/b/", &err), 1);
	assert_string_equal(d.path, "m/a/b");
	rd_hostlist_free(&d.hosts);

	/* not a daemon operand: a local path */
	assert_int_equal(rd_mpi_dest_parse(&d, "/scratch/dst", &err), 0);
	assert_int_equal(rd_mpi_dest_parse(&d, "./a::b", &err), 0);
	/* refused, with the reason */
	assert_int_equal(rd_mpi_dest_parse(&d, "h[1-2]::", &err), -RD_EUSAGE);
	assert_non_null(strstr(err.msg, "name the module"));
	assert_int_equal(rd_mpi_dest_parse(&d, "rdcp://h:99x/m", &err), -RD_EUSAGE);
	assert_non_null(strstr(err.msg, "bad port"));
	assert_int_equal(rd_mpi_dest_parse(&d, "h[2-1]::m", &err), -RD_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostlist),
	    cmocka_unit_test(test_hostlist_bad),
	    cmocka_unit_test(test_dest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
