// SPDX-License-Identifier: MIT
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/progress/rd_progress.h"

#define MiB (1024.0 * 1024.0)

/* Columns of a line, counted the way the module documents it. */
static unsigned cols(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned c = 0;

	while (*p) {
		if (*p >= 0xf0) {
			c += 2;
			p += 4;
		} else if (*p >= 0xe0) {
			uint32_t cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6;

			c += cp >= 0x1100 ? 2 : 1;
			p += 3;
		} else if (*p >= 0xc0) {
			c += 1;
			p += 2;
		} else {
			c += 1;
			p += 1;
		}
	}
	return c;
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void fmt(char *line, unsigned width, const char *name, uint64_t done, uint64_t size,
		double rate, double elapsed)
{
	size_t n =
	    rd_progress_format(line, RD_PROGRESS_LINE_MAX, width, name, done, size, rate, elapsed);

	assert_int_equal(n, strlen(line));
	assert_false(has_control(line));
}

static void test_layout_exact(void **state)
{
	char line[RD_PROGRESS_LINE_MAX];

	fmt(line, 79, "a.bin", 25 * 1048576ull, 100 * 1048576ull, 15 * MiB, 2);
	/* 37 columns of name, then the fixed 42-column right part */
	assert_string_equal(line, "a.bin                                 "
				  " 25%   25.0 MiB   15.0 MiB/s    00:05 ETA");
	assert_int_equal(strlen(line), 79);
}

static void test_percent(void **state)
{
	char line[RD_PROGRESS_LINE_MAX];

	fmt(line, 79, "f", 50, 200, 10, 0);
	assert_non_null(strstr(line, " 25% "));
	fmt(line, 79, "f", 0, 200, 10, 0);
	assert_non_null(strstr(line, "  0% "));
	/* never 100% before the last byte */
	fmt(line, 79, "f", 9999, 10000, 10, 0);
	assert_non_null(strstr(line, " 99% "));
	fmt(line, 79, "f", 10000, 10000, 10, 0);
	assert_non_null(strstr(line, "100% "));
	/* a counter ahead of the size (torn read) is clamped */
	fmt(line, 79, "f", 20000, 10000, 10, 0);
	assert_non_null(strstr(line, "100%    9.8 KiB"));
	/* huge sizes: no overflow */
	fmt(line, 79, "f", UINT64_MAX / 2, UINT64_MAX, 10, 0);
	assert_non_null(strstr(line, " 50% "));
}

static void test_eta(void **state)
{
	char line[RD_PROGRESS_LINE_MAX];

	fmt(line, 79, "f", 0, 100 * 1048576ull, 1 * MiB, 0);
	assert_non_null(strstr(line, " 01:40 ETA"));
	fmt(line, 79, "f", 0, 7200 * 1048576ull, 1 * MiB, 0);
	assert_non_null(strstr(line, " 2:00:00 ETA"));
	/* unknown or absurd rate */
	fmt(line, 79, "f", 0, 100, 0, 0);
	assert_non_null(strstr(line, " --:-- ETA"));
	fmt(line, 79, "f", 0, 100, NAN, 0);
	assert_non_null(strstr(line, " --:-- ETA"));
	fmt(line, 79, "f", 0, 100, -5, 0);
	assert_non_null(strstr(line, "0 B/s"));
	/* more than 100 hours */
	fmt(line, 79, "f", 0, UINT64_MAX, 1, 0);
	assert_non_null(strstr(line, " --:-- ETA"));
	/* done: the elapsed time, no ETA */
	fmt(line, 79, "f", 100, 100, 10, 75);
	assert_non_null(strstr(line, " 01:15    "));
	assert_null(strstr(line, "ETA"));
}

static void test_units(void **state)
{
	char b[32];

	rd_progress_human(b, sizeof(b), 0);
	assert_string_equal(b, "0 B");
	rd_progress_human(b, sizeof(b), 512);
	assert_string_equal(b, "512 B");
	rd_progress_human(b, sizeof(b), 1536);
	assert_string_equal(b, "1.5 KiB");
	rd_progress_human(b, sizeof(b), 3.0 * 1024 * 1024 * 1024);
	assert_string_equal(b, "3.0 GiB");
	rd_progress_human(b, sizeof(b), 2.0 * 1024 * 1024 * 1024 * 1024);
	assert_string_equal(b, "2.0 TiB");
	rd_progress_human(b, sizeof(b), (double)UINT64_MAX);
	assert_string_equal(b, "16.0 EiB");
	rd_progress_human(b, sizeof(b), -1);
	assert_string_equal(b, "0 B");
}

static void test_name_escaped(void **state)
{
	char line[RD_PROGRESS_LINE_MAX];

	fmt(line, 79, "\x1b[2Jevil\r\n", 1, 2, 1, 0);
	assert_null(strchr(line, '\x1b'));
	assert_null(strchr(line, '\r'));
	assert_null(strchr(line, '\n'));
	assert_true(strncmp(line, "\\x1b[2Jevil\\x0d\\n ", 18) == 0);
	/* invalid UTF-8 is escaped too; valid UTF-8 stays */
	fmt(line, 79, "caf\xc3\xa9-\xff", 1, 2, 1, 0);
	assert_true(strncmp(line, "caf\xc3\xa9-\\xff ", 11) == 0);
	assert_int_equal(cols(line), 79);
}

static void test_width(void **state)
{
	char line[RD_PROGRESS_LINE_MAX], name[300], big[5001];
	unsigned w;

	memset(name, 'x', sizeof(name));
	memcpy(name, "start-", 6);
	memcpy(name + sizeof(name) - 9, "-end.bin", 9);
	for (w = 1; w <= 300; w++) {
		fmt(line, w, name, 1, 2, 1, 0);
		assert_int_equal(strlen(line), w);
	}
	fmt(line, 79, name, 1, 2, 1, 0);
	assert_int_equal(strlen(line), 79);
	assert_true(strncmp(line, "start-xxxxxxxx", 14) == 0);
	/* shortened in the middle, the end kept */
	assert_non_null(strstr(line, "xx...xx"));
	assert_non_null(strstr(line, "xxx-end.bin  50%"));

	fmt(line, 0, "f", 1, 2, 1, 0);
	assert_int_equal(strlen(line), RD_PROGRESS_WIDTH_DEFAULT);
	fmt(line, 100000, "f", 1, 2, 1, 0);
	assert_int_equal(strlen(line), RD_PROGRESS_WIDTH_MAX);
	/* narrower than the numbers: cut, still exactly the width */
	fmt(line, 20, "f", 1, 2, 1, 0);
	assert_string_equal(line, "f         50%       ");
	line[0] = 0;
	fmt(line, 20, "name", 1, 2, 1, 0);
	assert_int_equal(strlen(line), 20);

	/* a name longer than the internal buffers */
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big + sizeof(big) - 5, "TAIL", 4);
	fmt(line, RD_PROGRESS_WIDTH_MAX, big, 1, 2, 1, 0);
	assert_int_equal(strlen(line), RD_PROGRESS_WIDTH_MAX);
	assert_non_null(strstr(line, "y...y"));
	assert_non_null(strstr(line, "yTAIL "));

	/* a small buffer: truncated, NUL-terminated, full length returned */
	assert_int_equal(rd_progress_format(line, 10, 79, "f", 1, 2, 1, 0), 79);
	assert_int_equal(strlen(line), 9);
}

static void test_width_multibyte(void **state)
{
	char line[RD_PROGRESS_LINE_MAX], name[256];
	unsigned i, w;

	/* U+4E2D, a wide character: 3 bytes, 2 columns */
	for (i = 0; i + 3 < sizeof(name); i += 3)
		memcpy(name + i, "\xe4\xb8\xad", 3);
	name[i] = '\0';
	for (w = 40; w <= 200; w++) {
		fmt(line, w, name, 1, 2, 1, 0);
		assert_true(cols(line) == w);
	}
	/* a name cut mid-sequence by a torn read: escaped, never split */
	name[4] = '\0';
	fmt(line, 79, name, 1, 2, 1, 0);
	assert_true(strncmp(line, "\xe4\xb8\xad\\xe4 ", 8) == 0);
	assert_int_equal(cols(line), 79);
}

static void test_zero_size(void **state)
{
	char line[RD_PROGRESS_LINE_MAX];

	fmt(line, 79, "empty", 0, 0, 0, 3);
	assert_non_null(strstr(line, "100%        0 B        0 B/s    00:03    "));
	fmt(line, 79, NULL, 0, 0, 0, 0);
	assert_int_equal(strlen(line), 79);
}

static void test_summary(void **state)
{
	struct rd_engine_stats st;
	char b[RD_PROGRESS_SUMMARY_MAX];
	size_t n;

	memset(&st, 0, sizeof(st));
	st.files_ok = 12;
	st.bytes_files = 1536ull << 20;
	st.bytes_data = 1536ull << 20;
	n = rd_progress_summary(b, sizeof(b), &st, 12, 3.2, "sha256");
	assert_string_equal(b, "12 entries, 1.5 GiB in 3.20 s, 480.0 MiB/s, checksum sha256");
	assert_int_equal(n, strlen(b));

	st.files_same = 3;
	st.chunks_retried = 2;
	rd_progress_summary(b, sizeof(b), &st, 12, 3.2, "none");
	assert_string_equal(b, "12 entries, 1.5 GiB in 3.20 s, 480.0 MiB/s, checksum none "
			       "(data NOT verified), 3 already identical, 2 chunks resent");
	st.packs = 4;
	st.files_packed = 200;
	rd_progress_summary(b, sizeof(b), &st, 12, 3.2, "sha256");
	assert_string_equal(b, "12 entries, 1.5 GiB in 3.20 s, 480.0 MiB/s, checksum sha256, "
			       "3 already identical, 200 files in 4 packs, 2 chunks resent");
	st.packs = st.files_packed = 0;
	rd_progress_summary(b, sizeof(b), &st, 12, 0, NULL);
	assert_non_null(strstr(b, "in 0.00 s, 0 B/s, checksum none (data NOT verified)"));
	rd_progress_summary(b, sizeof(b), NULL, 0, NAN, "sha256");
	assert_string_equal(b, "0 entries, 0 B in 0.00 s, 0 B/s, checksum sha256");
	/* the checksum name is escaped */
	rd_progress_summary(b, sizeof(b), NULL, 0, 1, "x\x1b");
	assert_null(strchr(b, '\x1b'));
	/* truncation like snprintf */
	n = rd_progress_summary(b, 8, &st, 12, 3.2, "sha256");
	assert_true(n > 8);
	assert_string_equal(b, "12 entr");
}

/* rsync's progress2 line: the layout rsync prints ("%15s %3d%% %7.2f%s %s (xfr#, ir-chk)"). */
static void test_format_total(void **state)
{
	char b[256];
	size_t n;

	(void)state;
	n = rd_progress_format_total(b, sizeof(b), 309133312, 314572800, 293.3 * 1048576, 0, 1, 1);
	assert_string_equal(b, "    309,133,312  98%  293.30MB/s    0:00:00 (xfr#0, ir-chk=1/1)");
	assert_int_equal(n, strlen(b));
	rd_progress_format_total(b, sizeof(b), 137760000, 314572800, 131.36 * 1048576, 0, 1, 2);
	assert_string_equal(b, "        137.76M  43%  131.36MB/s    0:00:01 (xfr#0, ir-chk=1/1)");
	/* done: 100 %, the entries all checked */
	rd_progress_format_total(b, sizeof(b), 1000, 1000, 500.0, 12, 12, 1);
	assert_string_equal(b, "          1,000 100%    0.49kB/s    0:00:00 (xfr#12, ir-chk=0/12)");
	/* no rate yet: rsync's ??:??:?? */
	rd_progress_format_total(b, sizeof(b), 0, 5000, 0, 0, 3, 0);
	assert_string_equal(b, "              0   0%    0.00kB/s   ??:??:?? (xfr#0, ir-chk=3/3)");
	/* GB/s, and a total that a growing walk has not caught up with */
	rd_progress_format_total(b, sizeof(b), 3ull << 30, 1ull << 30, 2.5 * 1073741824.0, 5, 9, 1);
	assert_string_equal(b, "  3,221,225,472 100%    2.50GB/s    0:00:00 (xfr#5, ir-chk=4/9)");
	/* an hour and more left */
	rd_progress_format_total(b, sizeof(b), 0, 3723ull * 1024, 1024.0, 0, 1, 0);
	assert_string_equal(b, "              0   0%    1.00kB/s    1:02:03 (xfr#0, ir-chk=1/1)");
}

/* Read back what the meter wrote to a temporary file. */
static char *slurp(FILE *f)
{
	static char buf[65536];
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&t, NULL);
}

/* Wait (up to 10 s) until the meter has flushed more than min bytes to f:
 * 1 if it did. The caller fails after cleaning up (other threads may use
 * its stack). */
static int drawn_within(FILE *f, off_t min)
{
	struct stat sb;
	int i;

	for (i = 0; i < 200; i++) {
		if (fstat(fileno(f), &sb) == 0 && sb.st_size > min)
			return 1;
		sleep_ms(50);
	}
	return 0;
}

static void wait_drawn(FILE *f, off_t min)
{
	if (!drawn_within(f, min))
		fail_msg("the meter drew nothing in 10 s");
}

static void test_meter_draws_and_stops(void **state)
{
	struct rd_engine_stats st;
	struct rd_progress *p;
	FILE *f = tmpfile();
	char *s;

	assert_non_null(f);
	memset(&st, 0, sizeof(st));
	rd_engine_stats_set_cur(&st, "dir/file.bin", 12, 1000);
	assert_int_equal(rd_progress_start(&p, f, &st, RD_PROGRESS_FORCE), 0);
	assert_non_null(p);
	st.cur_done = 500;
	st.bytes_data = 500;
	wait_drawn(f, 0);
	rd_progress_suspend(p);
	st.cur_done = 1000;
	st.bytes_data = 1000;
	rd_progress_resume(p);
	rd_progress_stop(p);
	s = slurp(f);
	assert_true(strncmp(s, "\rdir/file.bin ", 14) == 0);
	assert_non_null(strstr(s, " 50% "));
	/* suspend blanked the line, stop drew the final state and a newline */
	assert_non_null(strstr(s, "\r                                        "));
	assert_non_null(strstr(s, "\rdir/file.bin "));
	assert_non_null(strstr(s, "100% "));
	assert_int_equal(s[strlen(s) - 1], '\n');
	assert_int_equal(strlen(strrchr(s, '\r')), RD_PROGRESS_WIDTH_DEFAULT - 1 + 2);
	fclose(f);
}

static void test_meter_quiet_cases(void **state)
{
	struct rd_engine_stats st;
	struct rd_progress *p;
	FILE *f = tmpfile();

	assert_non_null(f);
	memset(&st, 0, sizeof(st));
	rd_engine_stats_set_cur(&st, "x", 1, 0);
	/* not a terminal, not forced: a valid object that draws nothing */
	assert_int_equal(rd_progress_start(&p, f, &st, 0), 0);
	assert_non_null(p);
	rd_progress_suspend(p);
	rd_progress_resume(p);
	rd_progress_stop(p);
	/* stopped before the first tick: nothing drawn, no newline */
	assert_int_equal(rd_progress_start(&p, f, &st, RD_PROGRESS_FORCE), 0);
	rd_progress_stop(p);
	assert_string_equal(slurp(f), "");
	rd_progress_stop(NULL);
	rd_progress_suspend(NULL);
	rd_progress_resume(NULL);
	fclose(f);
}

struct scribbler {
	struct rd_engine_stats *st;
	atomic_int stop;
};

#define LONG_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LONG_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* The engine's worst case: a new current file all the time. */
static void *scribble(void *arg)
{
	struct scribbler *sc = arg;
	unsigned k = 0;

	while (!atomic_load(&sc->stop)) {
		if (k & 1)
			rd_engine_stats_set_cur(sc->st, LONG_A, strlen(LONG_A), 1000);
		else
			rd_engine_stats_set_cur(sc->st, LONG_B, strlen(LONG_B), 1000);
		rd_stat_add(&sc->st->cur_done, 1);
		rd_stat_add(&sc->st->bytes_data, 1);
		k++;
	}
	return NULL;
}

/*
 * The contract: counters are read whole, and the meter shows one whole
 * name, never a mix of two, however fast the engine changes it (and
 * under --config=tsan, no data race).
 */
static void test_meter_whole_names(void **state)
{
	struct rd_engine_stats st;
	struct scribbler sc;
	struct rd_progress *p;
	pthread_t thr;
	FILE *f = tmpfile();
	char *s, *line, *save = NULL;
	int lines = 0, drawn;

	assert_non_null(f);
	memset(&st, 0, sizeof(st));
	sc.st = &st;
	atomic_init(&sc.stop, 0);
	rd_engine_stats_set_cur(&st, LONG_A, strlen(LONG_A), 1000);
	assert_int_equal(pthread_create(&thr, NULL, scribble, &sc), 0);
	assert_int_equal(rd_progress_start(&p, f, &st, RD_PROGRESS_FORCE), 0);
	drawn = drawn_within(f, 200);
	atomic_store(&sc.stop, 1);
	pthread_join(thr, NULL);
	rd_progress_stop(p);
	if (!drawn)
		fail_msg("the meter drew nothing in 10 s while the name changed all the time");
	s = slurp(f);
	for (line = strtok_r(s, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		if (!strchr(line, 'a') && !strchr(line, 'b'))
			continue; /* a blanking line */
		lines++;
		/* the name is the line's first field: all a's or all b's */
		assert_true(line[0] == 'a' || line[0] == 'b');
		assert_true(strspn(line, line[0] == 'a' ? "a" : "b") >= 10);
		assert_null(strchr(line, line[0] == 'a' ? 'b' : 'a'));
	}
	assert_true(lines >= 1);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout_exact),
	    cmocka_unit_test(test_percent),
	    cmocka_unit_test(test_eta),
	    cmocka_unit_test(test_units),
	    cmocka_unit_test(test_name_escaped),
	    cmocka_unit_test(test_width),
	    cmocka_unit_test(test_width_multibyte),
	    cmocka_unit_test(test_zero_size),
	    cmocka_unit_test(test_summary),
	    cmocka_unit_test(test_format_total),
	    cmocka_unit_test(test_meter_draws_and_stops),
	    cmocka_unit_test(test_meter_quiet_cases),
	    cmocka_unit_test(test_meter_whole_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
