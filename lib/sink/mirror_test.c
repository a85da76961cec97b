// SPDX-License-Identifier: MIT
/*
 * rd_sink_mirror (issue 29): which directories are cleaned and when, as
 * the engine drives it from the wire: a source "src/" (contents) into
 * dest, entries in wire order, each POST told when it arrives and again
 * when it is the oldest entry. The interlocks: a source error turns
 * deletion off (--ignore-errors spares only the directory that lost
 * something), a failure under a directory keeps it, an empty source root
 * deletes nothing, a directory that is not the one placed is left, a
 * name out of order is a protocol error, max_delete defers and stops in
 * rsync's order, a dry run changes nothing, --force makes room.
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
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_mirror.h"
#include "lib/sink/sink_testutil.h"

#define RC (RD_SINK_ROOT | RD_SINK_CONTENTS)
#define C  RD_SINK_CONTENTS

/* What the sink reported, one line each: "D name", "F name: text", "S text", "O text". */
struct log {
	char buf[4096];
	unsigned deleted, off, skipped, failed;
};

static void report(void *ctx, unsigned flags, const char *rel, size_t len, const char *text)
{
	struct log *l = ctx;
	size_t n = strlen(l->buf);
	char kind = flags & RD_DLF_OFF	     ? 'O'
		    : flags & RD_DLF_SKIPPED ? 'S'
		    : flags & RD_DLF_FAILED  ? 'F'
					     : 'D';

	snprintf(l->buf + n, sizeof(l->buf) - n, "%c %.*s%s%s|", kind, (int)len, rel,
		 flags & RD_DLF_DIR ? "/" : "", text ? "" : "");
	l->deleted += kind == 'D';
	l->off += kind == 'O';
	l->skipped += kind == 'S';
	l->failed += kind == 'F';
}

static int protect_log(void *ctx, const char *rel, size_t len, int is_dir)
{
	(void)ctx;
	(void)is_dir;
	return len >= 4 && !memcmp(rel + len - 4, ".log", 4);
}

static struct rd_sink *mopen(struct fx *x, struct log *l, enum rd_mirror_order order, int64_t max,
			     unsigned opts)
{
	struct rd_sink *s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_DEST_DIR);
	struct rd_mirror_opts o;

	memset(l, 0, sizeof(*l));
	memset(&o, 0, sizeof(o));
	o.delete = 1;
	o.force = 1;
	o.order = order;
	o.max_delete = max;
	o.ignore_errors = !!(opts & 1);
	o.dry_run = !!(opts & 2);
	o.allow_empty = !!(opts & 4);
	o.late_room = !!(opts & 8);
	o.protect = protect_log;
	o.report = report;
	o.ctx = l;
	assert_int_equal(rd_sink_mirror_start(s, &o), 0);
	return s;
}

static uint32_t id;

static void e_dir(struct rd_sink *s, const char *path, int root)
{
	int ret = mk(s, path, root);

	assert_int_equal(ret, 0);
	assert_int_equal(rd_sink_mirror_entry(s, ++id, path, strlen(path), root, 1, 1), 0);
}

static void e_file(struct rd_sink *s, const char *path, int root)
{
	assert_int_equal(rd_sink_mirror_entry(s, ++id, path, strlen(path), root, 0, 0), 0);
	assert_int_equal(put_file(s, path, root, "new", 0644), 0);
}

/* A POST arrives; with done, it is the oldest entry at once. Returns its id. */
static uint32_t e_post_seen(struct rd_sink *s, const char *path, int root)
{
	assert_int_equal(rd_sink_mirror_post_seen(s, ++id, path, strlen(path), root), 0);
	return id;
}

static void e_post_done(struct rd_sink *s, uint32_t pid, const char *path, int root)
{
	struct rd_sink_meta m = meta(S_IFDIR | 0750, 0);

	rd_sink_mirror_post(s, pid, &m);
	assert_int_equal(post(s, path, root), 0);
}

static void e_post(struct rd_sink *s, const char *path, int root)
{
	e_post_done(s, e_post_seen(s, path, root), path, root);
}

/* dest holds: keep, old, sub/{keep2,old2}, gone/{a,b}, x.log */
static void prior(struct fx *x)
{
	assert_int_equal(mkdir(tp(x, "dest/sub"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "dest/gone"), 0755), 0);
	put(tp(x, "dest/keep"), "k");
	put(tp(x, "dest/old"), "o");
	put(tp(x, "dest/sub/keep2"), "k");
	put(tp(x, "dest/sub/old2"), "o");
	put(tp(x, "dest/gone/a"), "a");
	put(tp(x, "dest/gone/b"), "b");
	put(tp(x, "dest/x.log"), "protected");
	put(tp(x, "dest/.rdcp-partial.keep"), "rdcp's own");
}

/* The source src/{keep, sub/{keep2}} up to sub's POST */
static void into_sub(struct rd_sink *s)
{
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	e_dir(s, "src/sub", C);
	e_file(s, "src/sub/keep2", C);
}

/* ... and to the end */
static void walk(struct rd_sink *s)
{
	into_sub(s);
	e_post(s, "src/sub", C);
	e_post(s, "src", C);
}

static void test_during(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	walk(s);
	/* found at each POST, deleted at the end (a later source error stops all) */
	assert_string_equal(l.buf, "");
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_mirror_finish(s);
	/*
	 * Directories in rsync's pre-order; in each, rsync's order backwards:
	 * directories (their contents first), then files
	 */
	assert_string_equal(l.buf, "D gone/b|D gone/a|D gone/|D old|D sub/old2|");
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|keep|sub|x.log");
	expect_listing(tp(x, "dest/sub"), "keep2");
	assert_int_equal(rd_sink_mirror_stats(s)->deleted, 5);
	assert_false(rd_sink_mirror_stats(s)->limited);
	rd_sink_close(s);
}

/* DURING (and AFTER): nothing goes before the end of the run; BEFORE: at once */
static void test_when(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;
	uint32_t p;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	p = e_post_seen(s, "src", C);
	assert_string_equal(l.buf, "");
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0);
	e_post_done(s, p, "src", C);
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_mirror_finish(s);
	assert_int_not_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_close(s);

	put(tp(x, "dest/old"), "o");
	s = mopen(x, &l, RD_MIRROR_BEFORE, -1, 0);
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	e_post_seen(s, "src", C);
	assert_int_not_equal(access(tp(x, "dest/old"), F_OK), 0); /* at the POST's arrival */
	rd_sink_close(s);

	put(tp(x, "dest/old"), "o");
	s = mopen(x, &l, RD_MIRROR_AFTER, -1, 0);
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	e_post(s, "src", C);
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0); /* found, waiting for the end */
	rd_sink_mirror_finish(s);
	assert_int_not_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_close(s);
}

/* --max-delete: deferred to the end, rsync's order (pre-order, last name first), exit 25 */
static void test_max_delete(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, 2, 0);
	walk(s);
	assert_string_equal(l.buf, ""); /* nothing before the end */
	rd_sink_mirror_finish(s);
	/* the root first (gone/b, gone/a; then gone/, old and sub/old2 are over) */
	assert_string_equal(l.buf, "D gone/b|D gone/a|S |");
	assert_true(rd_sink_mirror_stats(s)->limited);
	assert_int_equal(rd_sink_mirror_stats(s)->skipped, 3);
	expect_listing(tp(x, "dest/sub"), "keep2|old2");
	expect_listing(tp(x, "dest/gone"), "");
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_close(s);
}

/* A source error turns deletion off for the whole run, said once */
static void test_source_error(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	into_sub(s);
	e_post(s, "src/sub", C); /* read whole before the error: kept all the same */
	rd_sink_mirror_source_error(s, 0);
	rd_sink_mirror_source_error(s, 1);
	e_post(s, "src", C);
	rd_sink_mirror_finish(s);
	assert_string_equal(l.buf, "O |");
	assert_true(rd_sink_mirror_stats(s)->off);
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|gone|keep|old|sub|x.log");
	expect_listing(tp(x, "dest/sub"), "keep2|old2");
	rd_sink_close(s);
}

/* --ignore-errors: deletion goes on, but not in the directory that lost something */
static void test_ignore_errors(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 1);
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	e_dir(s, "src/sub", C);
	rd_sink_mirror_source_error(s, 1); /* src/sub/keep2 could not be read: listed */
	e_file(s, "src/sub/keep2", C);
	e_post(s, "src/sub", C);
	rd_sink_mirror_source_error(s, 0); /* src/gone vanished, or could not be listed */
	e_post(s, "src", C);
	rd_sink_mirror_finish(s);
	assert_string_equal(l.buf, "D sub/old2|");
	assert_false(rd_sink_mirror_stats(s)->off);
	expect_listing(tp(x, "dest/gone"), "a|b");
	rd_sink_close(s);
}

/* A failure under a directory (here) keeps that directory and its ancestors */
static void test_failure_keeps(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;
	uint32_t failed;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	into_sub(s);
	failed = id;
	rd_sink_mirror_failed(s, failed);
	e_post(s, "src/sub", C);
	e_post(s, "src", C);
	assert_string_equal(l.buf, "");
	expect_listing(tp(x, "dest/sub"), "keep2|old2");
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_close(s);
}

/* An empty source root deletes nothing (a missing mount), unless allowed */
static void test_empty_source(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	e_dir(s, "src", RC);
	e_post(s, "src", C);
	assert_string_equal(l.buf, "O |");
	assert_int_equal(access(tp(x, "dest/old"), F_OK), 0);
	rd_sink_close(s);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 4);
	e_dir(s, "src", RC);
	e_post(s, "src", C);
	rd_sink_mirror_finish(s);
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|x.log");
	rd_sink_close(s);
}

/* A directory swapped for another between its entry and its POST is left */
static void test_not_placed(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	e_dir(s, "src/sub", C);
	assert_int_equal(rename(tp(x, "dest/sub"), tp(x, "dest/sub.moved")), 0);
	assert_int_equal(mkdir(tp(x, "dest/sub"), 0755), 0);
	put(tp(x, "dest/sub/planted"), "p");
	e_post(s, "src/sub", C);
	assert_int_equal(access(tp(x, "dest/sub/planted"), F_OK), 0);
	assert_int_equal(l.failed, 1);
	rd_sink_close(s);
}

/* The wire's order: a name after a sibling directory's entry but before its POST */
static void test_order_refused(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	e_dir(s, "src", RC);
	e_dir(s, "src/sub", C);
	assert_int_equal(rd_sink_mirror_entry(s, ++id, "src/keep", 8, C, 0, 0), -RD_EPROTO);
	assert_int_equal(rd_sink_mirror_post_seen(s, ++id, "src", 3, C), -RD_EPROTO);
	rd_sink_close(s);
}

/* -n: the same names reported, nothing changed */
static void test_dry_run(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 2);
	e_dir(s, "src", RC);
	e_file(s, "src/keep", C);
	e_post(s, "src", C);
	rd_sink_mirror_finish(s);
	assert_string_equal(l.buf,
			    "D sub/old2|D sub/keep2|D sub/|D gone/b|D gone/a|D gone/|D old|");
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|gone|keep|old|sub|x.log");
	rd_sink_close(s);
}

/* --force: a full directory makes room for a file once the file is complete, not before */
/*
 * Per-directory merge files, faked: a directory's ".keep" lists names
 * (one a line) it protects; enter reads it through the descriptor it is
 * given (a ".keep" that is not a regular file fails), protect looks in
 * every level entered, leave drops the last. The log says what was
 * entered ("E rel|").
 */
struct keeps {
	char rel[8][64];
	char names[8][128];
	unsigned n;
	char log[512];
};

static int k_enter(void *ctx, int fd, const char *rel, size_t len, struct rd_err *err)
{
	struct keeps *k = ctx;
	size_t n = strlen(k->log);
	struct stat st;
	ssize_t got = 0;
	int kf;

	snprintf(k->log + n, sizeof(k->log) - n, "E %.*s|", (int)len, rel);
	assert_true(k->n < 8 && len < 64);
	kf = openat(fd, ".keep", O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (kf >= 0 && (fstat(kf, &st) || !S_ISREG(st.st_mode))) {
		close(kf);
		return rd_err_set(err, RD_ESYS, 0, "%.*s/.keep: not a regular file", (int)len, rel);
	}
	if (kf >= 0) {
		got = read(kf, k->names[k->n], sizeof(k->names[0]) - 1);
		close(kf);
	}
	k->names[k->n][got > 0 ? got : 0] = '\0';
	memcpy(k->rel[k->n], rel, len);
	k->rel[k->n++][len] = '\0';
	return 0;
}

static void k_leave(void *ctx)
{
	struct keeps *k = ctx;

	assert_true(k->n > 0);
	k->n--;
}

static int k_protect(void *ctx, const char *rel, size_t len, int is_dir)
{
	struct keeps *k = ctx;
	char line[130];
	unsigned i;

	(void)is_dir;
	for (i = 0; i < k->n; i++) {
		size_t rl = strlen(k->rel[i]), off = rl ? rl + 1 : 0;

		if (len <= off || (rl && (memcmp(rel, k->rel[i], rl) || rel[rl] != '/')))
			continue;
		snprintf(line, sizeof(line), "%.*s\n", (int)(len - off), rel + off);
		if (strstr(k->names[i], line) == k->names[i] ||
		    (strstr(k->names[i], line) && strstr(k->names[i], line)[-1] == '\n'))
			return 1;
	}
	return 0;
}

static struct rd_sink *kopen(struct fx *x, struct log *l, struct keeps *k,
			     enum rd_mirror_order order)
{
	struct rd_sink *s = sopen(x, "dest", RD_SINK_RSYNC | RD_SINK_DEST_DIR);
	struct rd_mirror_opts o;

	memset(l, 0, sizeof(*l));
	memset(k, 0, sizeof(*k));
	memset(&o, 0, sizeof(o));
	o.delete = 1;
	o.force = 1;
	o.order = order;
	o.max_delete = -1;
	o.protect = k_protect;
	o.protect_ctx = k;
	o.enter = k_enter;
	o.leave = k_leave;
	o.report = report;
	o.ctx = l;
	assert_int_equal(rd_sink_mirror_start(s, &o), 0);
	return s;
}

/*
 * The receiver's merge files protect: each directory's, its parents'
 * (entered from the source's root down), and those of a directory being
 * deleted for what it holds; in every order
 */
static void test_merge_files(void **state)
{
	static const enum rd_mirror_order orders[] = {RD_MIRROR_DURING, RD_MIRROR_BEFORE,
						      RD_MIRROR_AFTER};
	struct fx *x = *state;
	struct keeps k;
	struct log l;
	struct rd_sink *s;
	char cmd[2 * PATH_MAX + 32];
	unsigned i;

	for (i = 0; i < 3; i++) {
		prior(x);
		put(tp(x, "dest/.keep"), "old\nsub/old2\n");
		put(tp(x, "dest/gone/.keep"), "b\n");
		s = kopen(x, &l, &k, orders[i]);
		walk(s);
		rd_sink_mirror_finish(s);
		expect_listing(tp(x, "dest"), ".rdcp-partial.keep|gone|keep|old|sub");
		expect_listing(tp(x, "dest/sub"), "keep2|old2");
		expect_listing(tp(x, "dest/gone"), "b");
		assert_non_null(strstr(k.log, "E |E sub|"));
		assert_non_null(strstr(k.log, "E gone|"));
		assert_int_equal(rd_sink_mirror_stats(s)->failed, 0);
		rd_sink_close(s);
		assert_int_equal(k.n, 0); /* every level left */
		snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir '%s'", tp(x, "dest"),
			 tp(x, "dest"));
		assert_int_equal(system(cmd), 0);
	}
}

/* A merge file that cannot be read: nothing deleted in its directory, the rest goes on */
static void test_merge_file_bad(void **state)
{
	struct fx *x = *state;
	struct keeps k;
	struct log l;
	struct rd_sink *s;

	prior(x);
	assert_int_equal(mkdir(tp(x, "dest/sub/.keep"), 0755), 0);
	s = kopen(x, &l, &k, RD_MIRROR_DURING);
	walk(s);
	rd_sink_mirror_finish(s);
	expect_listing(tp(x, "dest/sub"), ".keep|keep2|old2");
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|keep|sub");
	assert_int_equal(rd_sink_mirror_stats(s)->failed, 1);
	assert_non_null(strstr(l.buf, "F sub|"));
	rd_sink_close(s);
}

static void test_force(void **state)
{
	struct fx *x = *state;
	struct rd_sink_meta m = meta(S_IFREG | 0644, 3);
	struct rd_sink_file *f;
	struct log l;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, &l, RD_MIRROR_DURING, -1, 0);
	e_dir(s, "src", RC);
	assert_int_equal(rd_sink_mirror_entry(s, ++id, "src/gone", 8, C, 0, 0), 0);
	assert_int_equal(rd_sink_file_begin(s, "src/gone", 8, C, &m, &f), 0);
	expect_listing(tp(x, "dest/gone"), "a|b"); /* begun: nothing went yet */
	assert_int_equal(rd_sink_file_write(f, "new", 3, 0), 0);
	expect_listing(tp(x, "dest/gone"), "a|b"); /* written, not committed: still there */
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	expect_content(tp(x, "dest/gone"), "new");
	/* its contents are listed, the directory making room is not (rsync -i) */
	assert_string_equal(l.buf, "D gone/b|D gone/a|");
	rd_sink_close(s);
}

/*
 * A file behind a full directory, --max-delete: commit it (verified) and
 * run to the end with src/{gone (a file now), keep}.
 */
static struct rd_sink *room_run(struct fx *x, struct log *l, enum rd_mirror_order order,
				int64_t max, unsigned opts)
{
	struct rd_sink_meta m = meta(S_IFREG | 0644, 3);
	struct rd_sink_file *f;
	struct rd_sink *s;

	prior(x);
	s = mopen(x, l, order, max, opts);
	e_dir(s, "src", RC);
	assert_int_equal(rd_sink_mirror_entry(s, ++id, "src/gone", 8, C, 0, 0), 0);
	assert_int_equal(rd_sink_file_begin(s, "src/gone", 8, C, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, "new", 3, 0), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	if (opts & 8)
		expect_listing(tp(x, "dest/gone"), "a|b"); /* waiting: nothing went yet */
	e_file(s, "src/keep", C);
	e_post(s, "src", C);
	rd_sink_mirror_finish(s);
	return s;
}

/*
 * late_room: the room a file needs is made at the end, after its
 * directory's extras, as rsync orders them: the limit falls on the same
 * entries as rsync's (3.5.0: sub/old2 and sub/keep2 go; sub/, old and
 * gone's contents are over; "could not make way": the file fails and its
 * temporary goes, gone stays). Made at the commit instead, gone's
 * contents would take the two.
 */
static void test_late_room(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s = room_run(x, &l, RD_MIRROR_DURING, 2, 8);

	assert_string_equal(l.buf, "D sub/old2|D sub/keep2|F gone|F gone|S |");
	assert_int_equal(rd_sink_mirror_stats(s)->unmade, 1);
	assert_int_equal(rd_sink_mirror_stats(s)->skipped, 4);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|gone|keep|old|sub|x.log");
	expect_listing(tp(x, "dest/gone"), "a|b");
	expect_listing(tp(x, "dest/sub"), "");
}

/* rsync's --delete-after/-delay make room first, --delete-before deletes the extras first */
static void test_late_room_orders(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s = room_run(x, &l, RD_MIRROR_AFTER, 2, 8);

	/* sub keeps what is inside: "cannot delete non-empty directory" */
	assert_string_equal(l.buf, "D gone/b|D gone/a|F sub|S |");
	assert_int_equal(rd_sink_mirror_stats(s)->unmade, 0);
	rd_sink_close(s);
	expect_content(tp(x, "dest/gone"), "new");
	expect_listing(tp(x, "dest/sub"), "keep2|old2");
}

static void test_late_room_before(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s = room_run(x, &l, RD_MIRROR_BEFORE, 2, 8);

	assert_string_equal(l.buf, "D sub/old2|D sub/keep2|F gone|F gone|S |");
	assert_int_equal(rd_sink_mirror_stats(s)->unmade, 1);
	rd_sink_close(s);
	expect_listing(tp(x, "dest/gone"), "a|b");
}

/* late_room with room enough: the file takes its name at the end */
static void test_late_room_made(void **state)
{
	struct fx *x = *state;
	struct log l;
	struct rd_sink *s = room_run(x, &l, RD_MIRROR_DURING, 6, 8);

	assert_string_equal(l.buf, "D sub/old2|D sub/keep2|D sub/|D old|D gone/b|D gone/a|");
	assert_int_equal(rd_sink_mirror_stats(s)->unmade, 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), ".rdcp-partial.keep|gone|keep|x.log");
	expect_content(tp(x, "dest/gone"), "new");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_during, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_when, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_delete, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_source_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ignore_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failure_keeps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_empty_source, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_placed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_order_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_room_made, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_room_orders, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_room_before, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_force, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_merge_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_merge_file_bad, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
