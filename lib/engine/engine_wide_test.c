// SPDX-License-Identifier: MIT
/*
 * Wide batches (protocol 14, RD_OF_WIDE; rd_proto.h "Wide batches") end
 * to end, both engines real over the loopback: the sender announces in
 * FILEZ only, both sides gather half the window (64..256) per FILEZ and
 * per DONES, everything arrives; a side that did not agree refuses what
 * the other sends.
 */
#include <errno.h>
#include <fcntl.h>
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
	/* fewer than batches of RD_BATCH_MAX (protocol 13) could carry */
	if (batch > RD_BATCH_MAX)
		assert_true(most < (n + 2 + RD_BATCH_MAX - 1) / RD_BATCH_MAX);
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

/*
 * What a FILEZ entry keeps of the one before and what it says anew: modes,
 * seconds and nanoseconds that change from file to file, symlink targets,
 * paths of 100-byte names that share long prefixes (one past 2,500 bytes),
 * directories announced twice. Each arrives as the source has it (mode,
 * mtime to the ns, target, bytes), and the rerun moves nothing.
 */
#define LONG_NAME "long-" /* and 95 more bytes of its depth's digit */

/* p grown by depth directories of 100-byte names, made when make says so */
static void long_dir(char *p, size_t cap, unsigned depth, int make)
{
	size_t n = strlen(p);
	unsigned i;

	for (i = 0; i < depth && n + 102 < cap; i++) {
		if (make && mkdir(p, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", p, strerror(errno));
		snprintf(p + n, cap - n, "/%s%095u", LONG_NAME, i);
		n = strlen(p);
	}
}

static const char *const mixed_dirs[] = {"", "/a", "/a/b", "/a/c", "/long"};
#define MIXED_PER_DIR 60

/* the directory of mixed_dirs[k] under top (made when make says so) */
static void mixed_dir(char *p, size_t cap, const char *top, unsigned k, int make)
{
	snprintf(p, cap, "%s%s", top, mixed_dirs[k]);
	if (k == 4)
		long_dir(p, cap, 25, make);
	if (make && mkdir(p, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", p, strerror(errno));
}

/* put_file's bytes at a path longer than it takes */
static void put_long(const char *path, size_t size, unsigned seed)
{
	uint8_t *b = made_bytes(size, seed);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, size), (ssize_t)size);
	close(fd);
	free(b);
}

static void make_mixed(void)
{
	char d[4096], f[4200], t[64];
	struct timespec ts[2];
	unsigned k, i;

	for (k = 0; k < 5; k++) {
		mixed_dir(d, sizeof(d), g_src, k, 1);
		for (i = 0; i < MIXED_PER_DIR; i++) {
			snprintf(f, sizeof(f), "%s/e%03u", d, i);
			if (i % 10 == 9) {
				snprintf(t, sizeof(t), "../target-%u", i);
				assert_int_equal(symlink(t, f), 0);
				continue;
			}
			put_long(f, i % 4 ? i * 13 : 0, k * 100 + i);
			assert_int_equal(chmod(f, i % 3 ? 0644 : i % 2 ? 0600 : 0755), 0);
			ts[0].tv_sec = ts[1].tv_sec = 1600000000 + (i / 7) * 86400;
			ts[0].tv_nsec = ts[1].tv_nsec = i % 5 ? 0 : i * 1000 + 1;
			assert_int_equal(utimensat(AT_FDCWD, f, ts, 0), 0);
		}
	}
}

/* Every entry of make_mixed as the source has it: 0, or the number of differences. */
static unsigned mixed_differ(void)
{
	char d[4096], e[4096], f[4200], g[4200], ta[64], tb[64];
	struct stat a, b;
	unsigned k, i, bad = 0;
	ssize_t la, lb;

	for (k = 0; k < 5; k++) {
		char top[400];

		mixed_dir(d, sizeof(d), g_src, k, 0);
		snprintf(top, sizeof(top), "%s/src", g_dst);
		mixed_dir(e, sizeof(e), top, k, 0);
		for (i = 0; i < MIXED_PER_DIR; i++) {
			snprintf(f, sizeof(f), "%s/e%03u", d, i);
			snprintf(g, sizeof(g), "%s/e%03u", e, i);
			if (lstat(f, &a) || lstat(g, &b)) {
				bad++;
				continue;
			}
			if (S_ISLNK(a.st_mode)) {
				la = readlink(f, ta, sizeof(ta));
				lb = readlink(g, tb, sizeof(tb));
				bad += !S_ISLNK(b.st_mode) || la != lb || la < 0 ||
				       memcmp(ta, tb, (size_t)la);
				continue;
			}
			bad += a.st_mode != b.st_mode || a.st_size != b.st_size ||
			       a.st_mtim.tv_sec != b.st_mtim.tv_sec ||
			       a.st_mtim.tv_nsec != b.st_mtim.tv_nsec || !same_paths(f, g);
		}
	}
	return bad;
}

static void test_wide_mixed_tree(void **state)
{
	struct batch_watch w = {0}, again = {0};
	struct run r = {.eo.wide = 1,
			.eo.window = 256,
			.sel = &quick,
			.sink_flags = RD_SINK_PRESERVE_MODE},
		   r2 = r;
	/* 5 directories, the long one's 24 above it, each announced twice */
	const unsigned n = 5 * MIXED_PER_DIR + 2 * (1 + 4 + 25);

	make_mixed();
	batch_run(&r, &w);
	assert_int_equal(r.sret, 0);
	assert_int_equal(r.rret, 0);
	assert_int_equal(mixed_differ(), 0);
	assert_int_equal(r.re.st.files_ok, n);
	assert_int_equal(w.files, 0);
	assert_true(w.filez >= 1);
	batch_run(&r2, &again);
	assert_int_equal(r2.rret, 0);
	assert_int_equal(r2.se.st.bytes_data, 0);
	assert_int_equal(r2.re.st.files_ok, n);
	print_message("%u entries: %u FILEZ, rerun %u FILEZ (at most %u)\n", n, w.filez,
		      again.filez, again.max_files_n);
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
	    cmocka_unit_test_setup_teardown(test_wide_mixed_tree, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wide_sender_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wide_receiver_only, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
