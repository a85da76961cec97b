// SPDX-License-Identifier: MIT
/*
 * Wide batches (protocol 14, RD_OF_WIDE; rd_proto.h "Wide batches") end
 * to end, both engines real over the loopback: the sender announces in
 * FILEZ only, both sides gather half the window (64..256) per FILEZ and
 * per DONES, everything arrives; a side that did not agree refuses what
 * the other sends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "lib/engine/engine_loop_harness.h"

/* n files w0000.. of 0..199 bytes (one in 8 empty) */
static void make_many(unsigned n)
{
	char name[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "w%04u", i);
		put_file(g_src, name, i % 8 ? (i * 37) % 200 : 0, i);
	}
}

static int many_copied(unsigned n)
{
	char name[32];
	unsigned i;
	int ok = 1;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "w%04u", i);
		ok = ok && same_file(name);
	}
	return ok;
}

static const struct rd_sink_select quick = {
    .compare = RD_SINK_CMP_QUICK, .modify_window = RD_SINK_WINDOW_NS, .max_size = UINT64_MAX};

/* One wide run of n files with window `window`: everything in FILEZ and DONES only. */
static void wide_run(unsigned n, unsigned window, struct batch_watch *w)
{
	struct run r = {.eo.wide = 1, .eo.window = window, .sel = &quick};

	batch_run(&r, w);
	print_message("window %u, %u entries: %u FILEZ (at most %u), %u DONES (at most %u)\n",
		      window, n + 2, w->filez, w->max_files_n, w->dones, w->max_dones_n);
	assert_int_equal(r.sret, 0);
	assert_int_equal(r.rret, 0);
	assert_true(many_copied(n));
	assert_true(no_litter());
	/* the files, the top directory and its POST entry */
	assert_int_equal(r.se.st.files_ok, n + 2);
	assert_int_equal(r.re.st.files_ok, n + 2);
	assert_int_equal(r.se.st.files_failed, 0);
	assert_int_equal(r.re.st.files_failed, 0);
	assert_int_equal(w->file, 0);
	assert_int_equal(w->files, 0);
	assert_int_equal(w->done, 0);
	assert_true(w->filez >= 1);
	assert_true(w->dones >= 1);
}

/*
 * n files copied with window `window`, then again (nothing changed: each
 * entry is done when it arrives, so the DONES are as wide as the FILEZ):
 * batches of half the window, batch entries each, both ways. The rerun
 * takes about n / batch FILEZ and DONES.
 */
static void wide_case(unsigned n, unsigned window, unsigned batch)
{
	struct batch_watch w = {0}, again = {0};
	unsigned most = (n + 2 + batch - 1) / batch + 2;

	make_many(n);
	wide_run(n, window, &w);
	/* the first batch is gathered whole (the window is empty) */
	assert_int_equal(w.max_files_n, batch);
	assert_true(w.max_dones_n <= batch);
	wide_run(n, window, &again);
	assert_int_equal(again.max_files_n, batch);
	assert_int_equal(again.max_dones_n, batch);
	assert_true(again.filez <= most);
	assert_true(again.dones <= most);
}

/*
 * 640 files, window 256: batches of 128 both ways. The 64 entries a
 * FILES or DONES of protocol 13 holds take 11 of each for the rerun's
 * 642 entries: here 6 to 8.
 */
static void test_wide_copy(void **state)
{
	wide_case(640, 256, 128);
}

/* The narrowest window: batches of 64, as before, but in FILEZ. */
static void test_wide_window_min(void **state)
{
	wide_case(200, RD_WINDOW_FILES, RD_BATCH_MAX);
}

/* The widest: batches of RD_BATCH_WIDE (256), never more. */
static void test_wide_window_max(void **state)
{
	wide_case(600, RD_WINDOW_MAX, RD_BATCH_WIDE);
}

/* The sender wide, the receiver not: it refuses the first FILEZ, nothing hangs. */
static void test_wide_sender_only(void **state)
{
	struct batch_watch w = {0};
	struct run r = {.eo.wide = 1, .recv_no_wide = 1, .eo.window = 256};

	make_many(100);
	batch_run(&r, &w);
	assert_int_equal(r.rret, -RD_EPROTO);
	assert_non_null(strstr(r.re.err.msg, "FILEZ without wide batches agreed"));
	assert_int_not_equal(r.sret, 0);
	assert_true(w.filez >= 1);
	assert_int_equal(w.dones + w.done, 0);
	assert_int_equal(r.re.st.files_ok, 0);
}

/* The receiver wide, the sender not: it refuses the FILES it was not to get. */
static void test_wide_receiver_only(void **state)
{
	struct batch_watch w = {0};
	struct run r = {.eo.wide = 1, .send_no_wide = 1, .eo.window = 256};

	make_many(100);
	batch_run(&r, &w);
	assert_int_equal(r.rret, -RD_EPROTO);
	assert_non_null(strstr(r.re.err.msg, "FILES where FILEZ was agreed"));
	assert_int_not_equal(r.sret, 0);
	assert_true(w.files >= 1);
	assert_int_equal(w.filez, 0);
	assert_int_equal(r.re.st.files_ok, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_wide_copy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wide_window_min, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wide_window_max, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wide_sender_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wide_receiver_only, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
