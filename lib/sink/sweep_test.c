// SPDX-License-Identifier: MIT
/*
 * The partials sweep: real partials made by rd_partial_open, aged with
 * utimensat; only old, unheld pairs of rdcp's format go; young ones, held
 * ones, lone data files, forged records and everything behind a symbolic
 * link stay.
 */
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
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/sink/rd_sink_partial.h"
#include "lib/sink/rd_sink_sweep.h"

#define DAY 86400

static char top[PATH_MAX];

static void sh(const char *fmt, ...)
{
	char cmd[2 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd))
		fail_msg("failed: %s", cmd);
}

static int exists(const char *rel)
{
	char p[2 * PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	return !lstat(p, &st);
}

static void age(const char *rel, time_t days)
{
	char p[2 * PATH_MAX];
	struct timespec ts[2];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - days * DAY;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* A real partial of name in dir (relative to top), with one chunk recorded, aged days. */
static void partial(const char *dir, const char *name, time_t days)
{
	char p[2 * PATH_MAX], rel[2 * PATH_MAX];
	struct rd_partial_id id;
	struct rd_partial *part = NULL;
	int dfd, fd, resumed, changed;

	snprintf(p, sizeof(p), "%s/%s", top, dir);
	dfd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	memset(&id, 0, sizeof(id));
	id.size = 3 * 65536;
	id.mtime_sec = 1700000000;
	id.chunk_size = 65536;
	snprintf(id.digest, sizeof(id.digest), "sha256");
	assert_int_equal(rd_partial_open(&part, dfd, name, &id, 0, &fd, &resumed, &changed), 0);
	assert_int_equal(ftruncate(fd, (off_t)id.size), 0);
	rd_partial_mark(part, 0, 1);
	assert_int_equal(rd_partial_flush(part, fd, 1), 0);
	rd_partial_free(part);
	close(fd);
	close(dfd);
	snprintf(rel, sizeof(rel), "%s/" PARTIAL_PREFIX "%s", dir, name);
	age(rel, days);
	snprintf(rel, sizeof(rel), "%s/" PARTIAL_PREFIX "%s" PARTIAL_REC_SUFX, dir, name);
	age(rel, days);
}

struct seen {
	int n;
	char path[8][256];
};

static void on_removed(void *ctx, const char *path, size_t len, uint64_t bytes, uint64_t idle)
{
	struct seen *s = ctx;

	assert_true(s->n < 8);
	snprintf(s->path[s->n++], sizeof(s->path[0]), "%.*s", (int)len, path);
	assert_int_equal(bytes, 3 * 65536);
	assert_true(idle >= 8 * DAY);
}

static int has(const struct seen *s, const char *p)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->path[i], p))
			return 1;
	return 0;
}

static void test_sweep(void **state)
{
	char outside[PATH_MAX + 16], p[2 * PATH_MAX];
	struct rd_sweep_stats st;
	struct seen seen = {0};
	struct rd_err err;
	int root, held;

	snprintf(top, sizeof(top), "%s/sweepXXXXXX",
		 getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(top));
	snprintf(outside, sizeof(outside), "%s.out", top);
	sh("mkdir -p '%s/m/a/b/c' '%s/m/pd/.parts' '%s'", top, top, outside);
	partial("m", "old", 8);		    /* goes */
	partial("m/a/b/c", "deep", 9);	    /* goes */
	partial("m/pd/.parts", "inpd", 10); /* goes: a --partial-dir */
	partial("m", "young", 6);	    /* stays: younger than 7 days */
	partial("m", "held", 8);	    /* stays: a session holds it */
	/* stays: a record that is not rdcp's (garbage), however old */
	sh("head -c 100 /dev/zero >'%s/m/" PARTIAL_PREFIX "forged'; cp '%s/m/" PARTIAL_PREFIX
	   "forged' '%s/m/" PARTIAL_PREFIX "forged.rec'",
	   top, top, top);
	age("m/" PARTIAL_PREFIX "forged", 30);
	age("m/" PARTIAL_PREFIX "forged.rec", 30);
	/* stays: a data file without its record */
	sh("head -c 100 /dev/zero >'%s/m/" PARTIAL_PREFIX "lonely'", top);
	age("m/" PARTIAL_PREFIX "lonely", 30);
	/* stays: user files with other names */
	sh("echo keep >'%s/m/keep.rec'; echo keep >'%s/m/" PARTIAL_PREFIX "'", top, top);
	age("m/keep.rec", 30);
	/* outside the module: an old pair behind a directory symlink and a record symlink */
	snprintf(top + strlen(top), sizeof(top) - strlen(top), "%s", ".out");
	sh("mkdir -p '%s/d'", top);
	partial(".", "victim", 30);
	partial("d", "victim2", 30);
	top[strlen(top) - 4] = '\0';
	sh("ln -s '%s/d' '%s/m/linkdir'", outside, top);
	sh("ln -s '%s/" PARTIAL_PREFIX "victim" PARTIAL_REC_SUFX "' '%s/m/" PARTIAL_PREFIX
	   "sym" PARTIAL_REC_SUFX "'",
	   outside, top);
	sh("ln -s '%s/" PARTIAL_PREFIX "victim' '%s/m/" PARTIAL_PREFIX "sym'", outside, top);
	age("m/" PARTIAL_PREFIX "sym" PARTIAL_REC_SUFX, 30);

	snprintf(p, sizeof(p), "%s/m/" PARTIAL_PREFIX "held", top);
	held = open(p, O_RDONLY);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);

	snprintf(p, sizeof(p), "%s/m", top);
	root = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(root >= 0);
	assert_int_equal(
	    rd_sink_sweep(root, time(NULL) - 7 * DAY, NULL, on_removed, &seen, &st, &err), 0);
	close(root);
	close(held);

	assert_int_equal(st.removed, 3);
	assert_int_equal(st.bytes, 3 * 3 * 65536);
	assert_int_equal(seen.n, 3);
	assert_true(has(&seen, PARTIAL_PREFIX "old"));
	assert_true(has(&seen, "a/b/c/" PARTIAL_PREFIX "deep"));
	assert_true(has(&seen, "pd/.parts/" PARTIAL_PREFIX "inpd"));
	assert_false(exists("m/" PARTIAL_PREFIX "old"));
	assert_false(exists("m/" PARTIAL_PREFIX "old" PARTIAL_REC_SUFX));
	assert_false(exists("m/a/b/c/" PARTIAL_PREFIX "deep" PARTIAL_REC_SUFX));
	assert_false(exists("m/pd/.parts/" PARTIAL_PREFIX "inpd"));
	assert_true(exists("m/a/b/c"));
	assert_int_equal(st.young, 1);
	assert_true(exists("m/" PARTIAL_PREFIX "young"));
	assert_true(exists("m/" PARTIAL_PREFIX "young" PARTIAL_REC_SUFX));
	assert_int_equal(st.busy, 1);
	assert_true(exists("m/" PARTIAL_PREFIX "held"));
	assert_true(exists("m/" PARTIAL_PREFIX "held" PARTIAL_REC_SUFX));
	assert_int_equal(st.foreign, 1); /* the forged record (symlinks are not even looked at) */
	assert_true(exists("m/" PARTIAL_PREFIX "forged"));
	assert_true(exists("m/" PARTIAL_PREFIX "forged.rec"));
	assert_true(exists("m/" PARTIAL_PREFIX "lonely"));
	assert_true(exists("m/keep.rec"));
	assert_true(exists("m/" PARTIAL_PREFIX "sym" PARTIAL_REC_SUFX));
	assert_true(exists("m/linkdir"));
	/* nothing outside was touched */
	snprintf(p, sizeof(p), "%s/" PARTIAL_PREFIX "victim" PARTIAL_REC_SUFX, outside);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/d/" PARTIAL_PREFIX "victim2" PARTIAL_REC_SUFX, outside);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/d/" PARTIAL_PREFIX "victim2", outside);
	assert_int_equal(access(p, F_OK), 0);

	/* the lock is gone: the next sweep removes the held pair too, and only it */
	snprintf(p, sizeof(p), "%s/m", top);
	root = open(p, O_RDONLY | O_DIRECTORY);
	assert_int_equal(rd_sink_sweep(root, time(NULL) - 7 * DAY, NULL, NULL, NULL, &st, &err), 0);
	assert_int_equal(st.removed, 1);
	assert_int_equal(st.busy, 0);
	assert_false(exists("m/" PARTIAL_PREFIX "held"));
	assert_true(exists("m/" PARTIAL_PREFIX "young"));
	/* a stop flag ends a walk at once */
	{
		volatile int stop = 1;

		assert_int_equal(rd_sink_sweep(root, time(NULL), &stop, NULL, NULL, &st, &err), 0);
		assert_int_equal(st.removed, 0);
	}
	close(root);
	sh("rm -rf '%s' '%s'", top, outside);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
