// SPDX-License-Identifier: MIT
/* Chunk arithmetic must be 64-bit clean: files past 4 GiB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "lib/engine/rd_engine_priv.h"

/* Issue 7 item 11: a peer's ERROR text cannot break our output lines. */
static void test_fail_remote_escapes(void **state)
{
	static const char text[] = "no\nrdcp: 0 failed\r\033[2J";
	struct rd_msg_error m;
	struct rd_err err;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.code = RD_ENOENT;
	m.text.ptr = text;
	m.text.len = (uint16_t)strlen(text);
	assert_int_equal(rd_engine_fail_remote(&err, &m, "peer"), -RD_ENOENT);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\r'));
	assert_null(strchr(err.msg, '\033'));
	assert_non_null(strstr(err.msg, "no\\nrdcp"));
}

/*
 * Issue 7 item 5: the idle timeout counts progress, not time since the last
 * message: without progress for idle_ms the check fails with ETIMEOUT,
 * and any progress starts the count again.
 */
static void test_idle_check(void **state)
{
	struct rd_engine_opts o;
	struct rd_engine e;
	struct timespec nap = {0, 150 * 1000 * 1000};

	(void)state;
	memset(&o, 0, sizeof(o));
	o.digest = "none";
	o.idle_ms = 100;
	assert_int_equal(rd_engine_init(&e, &o), 0);
	assert_int_equal(rd_engine_idle_check(&e, "peer"), 0);
	nanosleep(&nap, NULL);
	rd_engine_progress(&e);
	assert_int_equal(rd_engine_idle_check(&e, "peer"), 0); /* moved: count again */
	nanosleep(&nap, NULL);
	assert_int_equal(rd_engine_idle_check(&e, "peer"), -RD_ETIMEOUT);
	assert_non_null(strstr(e.err.msg, "no progress with peer"));
	rd_engine_fini(&e);

	o.idle_ms = 0; /* no idle timeout */
	assert_int_equal(rd_engine_init(&e, &o), 0);
	nanosleep(&nap, NULL);
	assert_int_equal(rd_engine_idle_check(&e, "peer"), 0);
	rd_engine_fini(&e);
}

/* Issue 7 item 7: registered memory starts zeroed, even reusing a dirty heap. */
static void test_pool_zeroed(void **state)
{
	size_t i, n = 64 * 1024;
	unsigned char *p;
	int round;

	(void)state;
	for (round = 0; round < 8; round++) {
		p = rd_engine_pool_alloc(n);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 4096, 0);
		for (i = 0; i < n; i++)
			assert_int_equal(p[i], 0);
		memset(p, 0xa5, n); /* what another session left behind */
		free(p);
	}
}

/* kB of AnonHugePages in the mapping that holds p (/proc/self/smaps), or -1. */
static long huge_kb_at(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	unsigned long lo, hi, a = (unsigned long)(uintptr_t)p;
	long kb = -1;
	int in = 0;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= a && a < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return in ? kb : -1;
}

/* Issue 12: chunk-sized buffers are huge-page aligned, and huge where THP is on. */
static void test_pool_huge_pages(void **state)
{
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	size_t n = 4u << 20;
	unsigned char *p, *q;

	(void)state;
	if (f) {
		if (!fgets(mode, sizeof(mode), f))
			mode[0] = '\0';
		fclose(f);
	}
	p = rd_engine_pool_alloc(n);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % (2u << 20), 0);
	assert_int_equal(p[0], 0);
	assert_int_equal(p[n - 1], 0);
	q = rd_engine_pool_alloc(64 * 1024); /* small: page-aligned only */
	assert_non_null(q);
	assert_int_equal((uintptr_t)q % 4096, 0);
	if (mode[0] && !strstr(mode, "[never]")) {
		print_message("THP %.*s: %ld kB of the 4 MiB buffer in huge pages\n",
			      (int)strcspn(mode, "\n"), mode, huge_kb_at(p));
		assert_true(huge_kb_at(p) >= 2048);
	}
	free(p);
	free(q);
}

static void test_nchunks(void **state)
{
	assert_int_equal(rd_nchunks(0, 4096), 0);
	assert_int_equal(rd_nchunks(1, 4096), 1);
	assert_int_equal(rd_nchunks(4096, 4096), 1);
	assert_int_equal(rd_nchunks(4097, 4096), 2);
	/* 5 GiB + 1 in 4 MiB chunks */
	assert_true(rd_nchunks((5ull << 30) + 1, 4u << 20) == 1281);
	/* 1 TiB in 4 KiB chunks: beyond 32 bits of bytes, count fits easily */
	assert_true(rd_nchunks(1ull << 40, 4096) == (1ull << 28));
}

static void test_chunk_len(void **state)
{
	uint64_t size = (5ull << 30) + 123;
	uint32_t c = 4u << 20;
	uint64_t last = rd_nchunks(size, c) - 1;

	assert_int_equal(rd_chunk_len(size, c, 0), c);
	assert_int_equal(rd_chunk_len(size, c, last - 1), c);
	assert_int_equal(rd_chunk_len(size, c, last), 123);
	assert_int_equal(rd_chunk_len(size, c, last + 1), 0);
	/* offset arithmetic must not wrap at 4 GiB */
	assert_int_equal(rd_chunk_len((4ull << 30) + 10, 4096, (4ull << 30) / 4096), 10);
}

static void test_engine_init_limits(void **state)
{
	struct rd_engine e;
	struct rd_engine_opts o = {.chunk_size = 1024};

	assert_int_equal(rd_engine_init(&e, &o), -RD_EUSAGE);
	rd_engine_fini(&e);
	o.chunk_size = 0;
	o.digest = "no-such-digest";
	assert_int_not_equal(rd_engine_init(&e, &o), 0);
	rd_engine_fini(&e);
	o.digest = "none";
	assert_int_equal(rd_engine_init(&e, &o), 0);
	assert_int_equal(e.o.chunk_size, RD_CHUNK_DEFAULT);
	rd_engine_fini(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fail_remote_escapes),
	    cmocka_unit_test(test_idle_check),
	    cmocka_unit_test(test_pool_zeroed),
	    cmocka_unit_test(test_pool_huge_pages),
	    cmocka_unit_test(test_nchunks),
	    cmocka_unit_test(test_chunk_len),
	    cmocka_unit_test(test_engine_init_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
