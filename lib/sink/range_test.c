// SPDX-License-Identifier: MIT
/*
 * Ranges (rd_sink_range.c, rd_proto.h section 6): several sessions (here:
 * several sinks on one directory, as two servers on one shared file
 * system) write one file's ranges; a COMMIT names it only when the sealed
 * records of its job cover every byte.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/sink/rd_sink.h"

#define CS   4096u
#define SIZE (5 * CS + 100) /* six chunks, the last short */

struct fx {
	char dir[PATH_MAX];
	int fd;
	uint8_t data[SIZE];
	struct rd_sink_meta m;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	unsigned i;

	assert_non_null(x);
	snprintf(x->dir, sizeof(x->dir), "/tmp/rd_range_test.XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	x->fd = open(x->dir, O_RDONLY | O_DIRECTORY);
	assert_true(x->fd >= 0);
	assert_int_equal(mkdirat(x->fd, "dest", 0755), 0);
	for (i = 0; i < SIZE; i++)
		x->data[i] = (uint8_t)(i * 7 + i / 4096);
	x->m.mode = S_IFREG | 0640;
	x->m.size = SIZE;
	x->m.mtime_sec = 1500000000;
	x->m.mtime_nsec = 123456789;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	char cmd[PATH_MAX + 16];

	close(x->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
	assert_int_equal(system(cmd), 0);
	free(x);
	return 0;
}

static struct rd_sink *sink(struct fx *x)
{
	struct rd_sink *s;
	struct rd_err err;

	assert_int_equal(
	    rd_sink_open(&s, x->fd, "dest",
			 RD_SINK_PRESERVE_MODE | RD_SINK_PRESERVE_TIMES | RD_SINK_FSYNC, 022, &err),
	    0);
	rd_sink_set_chunking(s, CS, "sha256", 1);
	return s;
}

/* One session writes chunks lo..hi - 1 of its range [off, off + len); seal = commit. */
static void write_range(struct fx *x, uint64_t job, uint64_t off, uint64_t len, int seal)
{
	struct rd_sink *s = sink(x);
	struct rd_sink_file *f;
	uint64_t c, end = off + len;

	assert_int_equal(rd_sink_range_begin(s, "f", 1, 0, &x->m, job, off, len, &f), 0);
	for (c = off / CS; c * CS < end; c++) {
		uint64_t n = (c + 1) * CS < SIZE ? CS : SIZE - c * CS;

		assert_int_equal(rd_sink_file_pwrite(f, x->data + c * CS, n, c * CS), 0);
		rd_sink_file_chunk_done(f, c, 1);
	}
	if (seal)
		assert_int_equal(rd_sink_file_commit(f, 0), 0);
	else
		rd_sink_file_abort(f);
	rd_sink_close(s);
}

static int count_prefix(struct fx *x, const char *prefix)
{
	char path[PATH_MAX + 8];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/dest", x->dir);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static int commit(struct fx *x, uint64_t job, const char **msg)
{
	static char keep[512];
	struct rd_sink *s = sink(x);
	struct rd_sink_file *f;
	int ret;

	ret = rd_sink_range_commit(s, "f", 1, 0, &x->m, job, &f);
	snprintf(keep, sizeof(keep), "%s", rd_sink_err(s)->msg);
	if (ret >= 0)
		ret = rd_sink_file_commit(f, ret == RD_SINK_RANGE_SAME);
	if (msg)
		*msg = keep;
	rd_sink_close(s);
	return ret;
}

static void check_final(struct fx *x)
{
	uint8_t buf[SIZE + 1];
	struct stat st;
	int fd = openat(x->fd, "dest/f", O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), SIZE);
	assert_memory_equal(buf, x->data, SIZE);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, 1500000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	close(fd);
}

/* Two sessions (two sinks), two ranges, one COMMIT: byte-exact, one name, no litter. */
static void test_two_ranges_commit(void **state)
{
	struct fx *x = *state;

	write_range(x, 7, 0, 2 * CS, 1);
	assert_int_equal(count_prefix(x, ".rdcp-range."), 2); /* data and one record */
	write_range(x, 7, 2 * CS, SIZE - 2 * CS, 1);
	assert_int_equal(faccessat(x->fd, "dest/f", F_OK, 0), -1);
	assert_int_equal(commit(x, 7, NULL), 0);
	check_final(x);
	assert_int_equal(count_prefix(x, ".rdcp-range."), 0);
}

/* A range missing: nothing under the final name, everything kept for a rerun. */
static void test_missing_range(void **state)
{
	struct fx *x = *state;
	const char *msg;

	write_range(x, 7, 0, 2 * CS, 1);
	write_range(x, 7, 3 * CS, SIZE - 3 * CS, 1);
	assert_int_equal(commit(x, 7, &msg), -RD_EPARTIAL);
	assert_non_null(strstr(msg, "from 8192 of"));
	assert_int_equal(faccessat(x->fd, "dest/f", F_OK, 0), -1);
	assert_int_equal(count_prefix(x, ".rdcp-range."), 3);
	/* the missing range, then the COMMIT: done */
	write_range(x, 7, 2 * CS, CS, 1);
	assert_int_equal(commit(x, 7, NULL), 0);
	check_final(x);
}

/* An unsealed range (a session cut off) and another job's sealed ranges are not taken. */
static void test_only_sealed_of_this_job(void **state)
{
	struct fx *x = *state;

	write_range(x, 7, 0, 2 * CS, 1);
	write_range(x, 7, 2 * CS, SIZE - 2 * CS, 0); /* every chunk written, never sealed */
	assert_int_equal(commit(x, 7, NULL), -RD_EPARTIAL);
	write_range(x, 9, 2 * CS, SIZE - 2 * CS, 1); /* sealed, but by job 9 */
	assert_int_equal(commit(x, 7, NULL), -RD_EPARTIAL);
	assert_int_equal(faccessat(x->fd, "dest/f", F_OK, 0), -1);
}

/* Resume with other boundaries: chunks an earlier record holds are offered for comparison. */
static void test_resume_other_boundaries(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;
	struct rd_sink_file *f;
	uint64_t c;

	write_range(x, 7, 0, 4 * CS, 0); /* killed after four chunks: an unsealed record */
	s = sink(x);
	assert_int_equal(rd_sink_range_begin(s, "f", 1, 0, &x->m, 8, 2 * CS, SIZE - 2 * CS, &f), 0);
	for (c = 2; c < 4; c++)
		assert_int_equal(rd_sink_file_chunk_src(f, c), RD_SINK_CHUNK_PARTIAL);
	for (c = 4; c < 6; c++)
		assert_int_equal(rd_sink_file_chunk_src(f, c), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE); /* not ours */
	rd_sink_file_abort(f);
	rd_sink_close(s);
}

/* Quick check: the file is there with its size and mtime: a range writes nothing. */
static void test_quick_check(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;
	struct rd_sink_file *f = NULL;

	write_range(x, 7, 0, SIZE, 1);
	assert_int_equal(commit(x, 7, NULL), 0);
	s = sink(x);
	assert_int_equal(rd_sink_range_begin(s, "f", 1, 0, &x->m, 8, 0, 2 * CS, &f),
			 RD_SINK_RANGE_SAME);
	assert_null(f);
	rd_sink_close(s);
	assert_int_equal(count_prefix(x, ".rdcp-range."), 0);
	assert_int_equal(commit(x, 8, NULL), 0); /* metadata only */
	check_final(x);
}

/* Ranges must fall on chunks; a symlink under the partial's name is never followed. */
static void test_refusals(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sink(x);
	struct rd_sink_file *f;
	char name[NAME_MAX + 1], path[NAME_MAX + 8];

	assert_int_equal(rd_sink_range_begin(s, "f", 1, 0, &x->m, 7, 100, CS, &f), -RD_EUSAGE);
	assert_int_equal(rd_sink_range_begin(s, "f", 1, 0, &x->m, 7, 0, CS + 1, &f), -RD_EUSAGE);
	assert_int_equal(rd_sink_range_begin(s, "f", 1, 0, &x->m, 7, 0, SIZE + 1, &f), -RD_EUSAGE);
	rd_sink_range_name(name, "f", SIZE, 1500000000, 123456789);
	snprintf(path, sizeof(path), "dest/%s", name);
	assert_int_equal(symlinkat("/etc/passwd", x->fd, path), 0);
	assert_true(rd_sink_range_begin(s, "f", 1, 0, &x->m, 7, 0, CS, &f) < 0);
	assert_int_equal(rd_sink_range_commit(s, "f", 1, 0, &x->m, 7, &f), -RD_ESYS);
	/* no entry may plant a record (a fake "sealed" one would name a file unverified) */
	snprintf(path, sizeof(path), "%s.0000000000000000", name);
	assert_int_equal(rd_sink_file_begin(s, path, strlen(path), 0, &x->m, &f), -RD_EPROTO);
	assert_non_null(strstr(rd_sink_err(s)->msg, "keeps for its partial, range"));
	assert_int_equal(rd_sink_mkdir(s, ".rdcp-range.x", 13, 0, &x->m), -RD_EPROTO);
	assert_int_equal(rd_sink_mkdir(s, ".rdcp-range.x/y", 15, 0, &x->m), -RD_EPROTO);
	rd_sink_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_two_ranges_commit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_range, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_only_sealed_of_this_job, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_resume_other_boundaries, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_quick_check, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
