// SPDX-License-Identifier: MIT
/*
 * rsync's output formats (lib/report/rd_report_fmt.c), against what rsync
 * 3.5.0 printed for the same things: each expected string below was
 * copied from rsync's own output (-i on pushes to and pulls from an rsync
 * daemon, --out-format "%l|%'l|%''l|%'''l" on files of these sizes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/report/rd_report_fmt.h"

static void test_numbers_like_rsync(void **state)
{
	/* size, then %l %'l %''l %'''l as rsync printed them */
	static const struct {
		int64_t v;
		const char *h[4];
	} t[] = {
	    {0, {"0", "0", "0", "0"}},
	    {5, {"5", "5", "5", "5"}},
	    {999, {"999", "999", "999", "999"}},
	    {1000, {"1000", "1,000", "1.00K", "1,000"}},
	    {1023, {"1023", "1,023", "1.02K", "1,023"}},
	    {1024, {"1024", "1,024", "1.02K", "1.00K"}},
	    {1234, {"1234", "1,234", "1.23K", "1.21K"}},
	    {4096, {"4096", "4,096", "4.10K", "4.00K"}},
	    {999999, {"999999", "999,999", "1000.00K", "976.56K"}},
	    {1000000, {"1000000", "1,000,000", "1.00M", "976.56K"}},
	    {1048576, {"1048576", "1,048,576", "1.05M", "1.00M"}},
	    {1234567, {"1234567", "1,234,567", "1.23M", "1.18M"}},
	    {999999999, {"999999999", "999,999,999", "1000.00M", "953.67M"}},
	    {5000000000, {"5000000000", "5,000,000,000", "5.00G", "4.66G"}},
	    {1099511627776, {"1099511627776", "1,099,511,627,776", "1.10T", "1.00T"}},
	};
	char buf[64];
	size_t i;
	int h;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		for (h = 0; h < 4; h++) {
			assert_int_equal(rd_report_num(buf, sizeof(buf), t[i].v, h),
					 strlen(t[i].h[h]));
			assert_string_equal(buf, t[i].h[h]);
		}
	/* fractions: rsync's bytes/sec and speedup */
	rd_report_dnum(buf, sizeof(buf), 642.0, 1, 2);
	assert_string_equal(buf, "642.00");
	rd_report_dnum(buf, sizeof(buf), 1234567.891, 1, 2);
	assert_string_equal(buf, "1,234,567.89");
	rd_report_dnum(buf, sizeof(buf), 1234567.891, 2, 2);
	assert_string_equal(buf, "1.23M");
	rd_report_dnum(buf, sizeof(buf), 1234567.891, 0, 2);
	assert_string_equal(buf, "1234567.89");
	rd_report_dnum(buf, sizeof(buf), 0.02, 1, 2);
	assert_string_equal(buf, "0.02");
	/* cut, never overrun */
	assert_int_equal(rd_report_num(buf, 4, 1234567, 1), 9);
	assert_string_equal(buf, "1,2");
}

static void test_itemize_like_rsync(void **state)
{
	static const struct {
		unsigned items;
		uint8_t type;
		uint32_t mode;
		int push;
		const char *want;
	} t[] = {
	    {RD_IT_NEW | RD_IT_LOCAL, RD_FT_DIR, S_IFDIR | 0755, 1, "cd+++++++++"},
	    {RD_IT_NEW | RD_IT_XFER, RD_FT_REG, S_IFREG | 0644, 1, "<f+++++++++"},
	    {RD_IT_NEW | RD_IT_XFER, RD_FT_REG, S_IFREG | 0644, 0, ">f+++++++++"},
	    {RD_IT_NEW | RD_IT_LOCAL, RD_FT_SYMLINK, S_IFLNK | 0777, 1, "cL+++++++++"},
	    {RD_IT_NEW | RD_IT_LOCAL, RD_FT_SPECIAL, S_IFIFO | 0644, 1, "cS+++++++++"},
	    {RD_IT_NEW | RD_IT_LOCAL, RD_FT_SPECIAL, S_IFCHR | 0644, 0, "cD+++++++++"},
	    {RD_IT_NEW | RD_IT_HLINK, RD_FT_HLINK, S_IFREG | 0644, 1, "hf+++++++++"},
	    {RD_IT_HLINK | RD_IT_TIME, RD_FT_HLINK, S_IFREG | 0644, 1, "hf..t......"},
	    {RD_IT_XFER | RD_IT_TIME, RD_FT_REG, S_IFREG | 0644, 1, "<f..t......"},
	    {RD_IT_XFER | RD_IT_SIZE | RD_IT_TIME, RD_FT_REG, S_IFREG | 0644, 1, "<f.st......"},
	    {RD_IT_PERMS, RD_FT_REG, S_IFREG | 0600, 1, ".f...p....."},
	    {RD_IT_LOCAL | RD_IT_CHANGE, RD_FT_SYMLINK, S_IFLNK | 0777, 1, "cLc........"},
	    {RD_IT_TIME, RD_FT_DIR, S_IFDIR | 0755, 1, ".d..t......"},
	    {RD_IT_OWNER | RD_IT_GROUP, RD_FT_REG, S_IFREG | 0644, 0, ".f....og..."},
	    /* -ii: unchanged entries, dots turned to spaces */
	    {0, RD_FT_DIR, S_IFDIR | 0755, 1, ".d         "},
	    {0, RD_FT_REG, S_IFREG | 0644, 1, ".f         "},
	    {0, RD_FT_SYMLINK, S_IFLNK | 0777, 0, ".L         "},
	    {0, RD_FT_SPECIAL, S_IFIFO | 0644, 0, ".S         "},
	    /* sent again without a change of attributes (rsync -I) */
	    {RD_IT_XFER, RD_FT_REG, S_IFREG | 0644, 1, "<f........."},
	    /* an older peer did not say: rsync's '?' */
	    {RD_ITEM_UNKNOWN, RD_FT_REG, S_IFREG | 0644, 1, "<f?????????"},
	};
	char buf[12];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		rd_report_itemize(buf, t[i].items, t[i].type, t[i].mode, t[i].push);
		if (strcmp(buf, t[i].want))
			fail_msg("case %zu: '%s', rsync '%s'", i, buf, t[i].want);
	}
}

static void test_names_like_rsync(void **state)
{
	char buf[64];

	(void)state;
	rd_report_name(buf, sizeof(buf), "new\nline", 8);
	assert_string_equal(buf, "new\\#012line");
	rd_report_name(buf, sizeof(buf), "tab\tx", 5);
	assert_string_equal(buf, "tab\\#011x");
	rd_report_name(buf, sizeof(buf), "caf\xc3\xa9", 5); /* UTF-8 as is */
	assert_string_equal(buf, "caf\xc3\xa9");
	rd_report_name(buf, sizeof(buf), "bad\xff", 4);
	assert_string_equal(buf, "bad\\#377");
	/* outside a UTF-8 locale (rsync without -8): every byte past ASCII */
	rd_report_name_as(buf, sizeof(buf), "caf\xc3\xa9 x", 7, 0);
	assert_string_equal(buf, "caf\\#303\\#251 x");
	rd_report_name_as(buf, sizeof(buf), "tab\tx", 5, 0);
	assert_string_equal(buf, "tab\\#011x");
	rd_report_name(buf, sizeof(buf), "esc\x1b[2J", 7);
	assert_string_equal(buf, "esc\\#033[2J");
	rd_report_name(buf, sizeof(buf), "a\\b", 3); /* a lone backslash stays */
	assert_string_equal(buf, "a\\b");
	rd_report_name(buf, sizeof(buf), "x\\#012", 6); /* one that looks escaped does not */
	assert_string_equal(buf, "x\\#134#012");
	rd_report_name(buf, sizeof(buf), "c1\xc2\x85", 4); /* U+0085, a C1 control */
	assert_string_equal(buf, "c1\\#302\\#205");
}

static void test_out_format(void **state)
{
	struct rd_item it;
	struct rd_report_fmt_ctx cx = {.push = 1, .pid = 4242, .now = 0};
	char buf[256];

	(void)state;
	memset(&it, 0, sizeof(it));
	it.path = "src/d";
	it.len = 5;
	it.type = RD_FT_DIR;
	it.mode = S_IFDIR | 0755;
	it.items = RD_IT_NEW | RD_IT_LOCAL;
	rd_report_fmt(buf, sizeof(buf), "%i %n%L", &it, &cx);
	assert_string_equal(buf, "cd+++++++++ src/d/");
	it.path = "src/ln";
	it.len = 6;
	it.type = RD_FT_SYMLINK;
	it.mode = S_IFLNK | 0777;
	it.target = "f";
	it.tlen = 1;
	rd_report_fmt(buf, sizeof(buf), "%i %n%L", &it, &cx);
	assert_string_equal(buf, "cL+++++++++ src/ln -> f");
	it.path = "src/f";
	it.len = 5;
	it.type = RD_FT_HLINK;
	it.target = "src/hl";
	it.tlen = 6;
	it.items = RD_IT_NEW | RD_IT_HLINK;
	rd_report_fmt(buf, sizeof(buf), "%i %n%L", &it, &cx);
	assert_string_equal(buf, "hf+++++++++ src/f => src/hl");
	/* %l %b %o %B %U %G %p %%, widths, ' */
	it.type = RD_FT_REG;
	it.mode = S_IFREG | 04755;
	it.size = 1234567;
	it.bytes = 1234567;
	it.items = RD_IT_XFER | RD_IT_TIME;
	it.uid = 1000;
	it.gid = 100;
	rd_report_fmt(buf, sizeof(buf), "%o|%l|%'l|%''b|%B|%U:%G|%p|%%|%-8n|%8n|%z", &it, &cx);
	assert_string_equal(buf, "send|1234567|1,234,567|1.23M|rwsr-xr-x|1000:100|4242|%|src/f   "
				 "|   src/f|%z");
	/* %b counts only what was sent for it */
	it.items = RD_IT_PERMS;
	rd_report_fmt(buf, sizeof(buf), "%b %c", &it, &cx);
	assert_string_equal(buf, "0 0");
	cx.push = 0;
	rd_report_fmt(buf, sizeof(buf), "%o %h%a%m%P%u.", &it, &cx);
	assert_string_equal(buf, "recv .");
	/* cut safely, the full length returned */
	assert_int_equal(rd_report_fmt(buf, 6, "%n%n", &it, &cx), 10);
	assert_string_equal(buf, "src/f");
	/* a trailing % alone stays */
	rd_report_fmt(buf, sizeof(buf), "x%", &it, &cx);
	assert_string_equal(buf, "x%");
	assert_int_equal(rd_report_fmt_has("%i %n%L", 'i'), 1);
	assert_int_equal(rd_report_fmt_has("%%i %n", 'i'), 0);
	assert_int_equal(rd_report_fmt_has("%-10i", 'i'), 1);
	assert_int_equal(rd_report_fmt_has("%n%L", 'i'), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_numbers_like_rsync),
	    cmocka_unit_test(test_itemize_like_rsync),
	    cmocka_unit_test(test_names_like_rsync),
	    cmocka_unit_test(test_out_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
