// SPDX-License-Identifier: MIT
/*
 * The expected strings are what rsync 3.2's daemon wrote for the same
 * escapes (tests/e2e/ops_guest.sh compares whole lines with a real rsyncd).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>

#include "lib/xferlog/rd_xferlog.h"

static struct rd_xfer_item item(void)
{
	struct rd_xfer_item it;

	memset(&it, 0, sizeof(it));
	it.op = "recv";
	it.addr = "10.0.0.7";
	it.module = "data";
	it.module_path = "/srv/data";
	it.user = "alice";
	it.path = "x/d/b";
	it.plen = 5;
	it.name = "d/b";
	it.nlen = 3;
	it.update = '>';
	it.ftype = 'f';
	it.mode = S_IFREG | 0644;
	it.uid = 1000;
	it.gid = 100;
	it.size = 1234567;
	it.bytes = 1234567;
	it.mtime = 86400 + 3661; /* 1970/01/02 01:01:01 UTC */
	it.pid = 4242;
	it.now = 0;
	it.checksum = "gmac";
	it.transport = "rdma";
	it.session = 17;
	return it;
}

static const char *fmt_(const char *fmt, const struct rd_xfer_item *it)
{
	static char line[RD_XFERLOG_LINE_MAX];

	rd_xferlog_format(line, sizeof(line), fmt, it);
	return line;
}

static void test_default_format(void **state)
{
	struct rd_xfer_item it = item();

	assert_string_equal(fmt_(RD_XFERLOG_DEFAULT_FORMAT, &it),
			    "recv 10.0.0.7 [10.0.0.7] data (alice) x/d/b 1234567");
}

static void test_every_escape(void **state)
{
	struct rd_xfer_item it = item();

	assert_string_equal(fmt_("%o|%m|%u|%f|%n|%l|%b|%c|%B|%U|%G|%M|%i|%P|%a|%p|%%", &it),
			    "recv|data|alice|x/d/b|d/b|1234567|1234567|0|rw-r--r--|1000|100|"
			    "1970/01/02-01:01:01|>f|/srv/data|10.0.0.7|4242|%");
	assert_string_equal(fmt_("%t", &it), "1970/01/01 00:00:00");
	assert_string_equal(fmt_("%k %x %s", &it), "gmac rdma 17");
}

/* rsync: "1,234,567|1.23M|1.18M| 1234567|1234567 | 1234567|  big|recv  |%" */
static void test_widths_and_human(void **state)
{
	struct rd_xfer_item it = item();

	it.name = "big";
	it.nlen = 3;
	assert_string_equal(fmt_("%'l|%''l|%'''l|%8l|%-8l|%08l|%5n|%-6o|%%", &it),
			    "1,234,567|1.23M|1.18M| 1234567|1234567 | 1234567|  big|recv  |%");
	it.size = 2;
	assert_string_equal(fmt_("%'l|%''l|%'''l", &it), "2|2|2");
	it.size = 1ull << 40;
	assert_string_equal(fmt_("%'''l|%''l", &it), "1.00T|1.10T");
}

static void test_dirs_links_and_modes(void **state)
{
	struct rd_xfer_item it = item();

	it.ftype = 'd';
	it.update = 'c';
	it.name = "d/e";
	it.nlen = 3;
	it.mode = S_IFDIR | 0755;
	assert_string_equal(fmt_("%n %i %B", &it), "d/e/ cd rwxr-xr-x");
	it.mode = S_IFREG | 04755;
	assert_string_equal(fmt_("%B", &it), "rwsr-xr-x");
	it.mode = S_IFDIR | 01777;
	assert_string_equal(fmt_("%B", &it), "rwxrwxrwt");
	it.mode = S_IFREG | 02640;
	assert_string_equal(fmt_("%B", &it), "rw-r-S---");
}

/* Names are escaped: no control character reaches a log line. */
static void test_names_escaped(void **state)
{
	struct rd_xfer_item it = item();
	const char *l;
	size_t i;

	it.path = "a\nb\x1b[31m\tc";
	it.plen = strlen(it.path);
	it.name = it.path;
	it.nlen = it.plen;
	it.user = "ev\ril";
	l = fmt_("%f %n %u", &it);
	for (i = 0; l[i]; i++)
		assert_true((unsigned char)l[i] >= 0x20 && l[i] != 0x7f);
	assert_non_null(strstr(l, "a\\nb"));
	/* raw bytes with a NUL inside are escaped, not cut */
	it.path = "x\0y";
	it.plen = 3;
	l = fmt_("%f", &it);
	assert_int_equal(strchr(l, 'y') != NULL, 1);
}

static void test_check(void **state)
{
	char why[200];

	assert_int_equal(rd_xferlog_check(RD_XFERLOG_DEFAULT_FORMAT, why, sizeof(why)), 0);
	assert_int_equal(rd_xferlog_check("%-50n %8l %''b %k %x %s %%", why, sizeof(why)), 0);
	assert_int_equal(rd_xferlog_check("%o %q", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "%q"));
	assert_int_equal(rd_xferlog_check("%f %", why, sizeof(why)), -1);
	assert_int_equal(rd_xferlog_check("%C", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not supported"));
	assert_int_equal(rd_xferlog_uses("%o %-10i %f", 'i'), 1);
	assert_int_equal(rd_xferlog_uses("%o %%i %f", 'i'), 0);
	assert_int_equal(rd_xferlog_uses("%o %f", 'i'), 0);
}

/* A line is cut to the buffer, NUL-terminated, whatever the widths ask. */
static void test_bounded(void **state)
{
	struct rd_xfer_item it = item();
	char small[16];
	char big[RD_XFERLOG_LINE_MAX];
	size_t n;

	n = rd_xferlog_format(small, sizeof(small), "%999f %999n %999l", &it);
	assert_int_equal(n, sizeof(small) - 1);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	n = rd_xferlog_format(big, sizeof(big),
			      "%999f%999f%999f%999f%999f%999f%999f%999f%999f%999f%999f%999f%999f"
			      "%999f%999f%999f%999f%999f",
			      &it);
	assert_int_equal(n, sizeof(big) - 1);
	/* widths are capped at 256 */
	n = rd_xferlog_format(big, sizeof(big), "%999999999999l", &it);
	assert_int_equal(n, 256);
	/* a dangling % and an unknown escape stay as they are */
	assert_string_equal(fmt_("a %q b %", &it), "a %q b %");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_format),   cmocka_unit_test(test_every_escape),
	    cmocka_unit_test(test_widths_and_human), cmocka_unit_test(test_dirs_links_and_modes),
	    cmocka_unit_test(test_names_escaped),    cmocka_unit_test(test_check),
	    cmocka_unit_test(test_bounded),
	};

	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
