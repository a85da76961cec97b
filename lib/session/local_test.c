// SPDX-License-Identifier: MIT
/*
 * A local copy (both halves in this process, lib/session/rd_local.c) run
 * through rd_client_run: the per-entry change records the reporting layer
 * reads (struct rd_item), and -n (RD_SEL_DRY_RUN): nothing changes
 * anywhere (no directory, file, partial, link or attribute, not even a
 * ctime), while the records say what a real run would do, entry by entry.
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
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session.h"
#include "lib/sink/rd_sink.h"

#define NREC 64

struct rec {
	char path[256];
	uint8_t type;
	unsigned items;
	int status, dry;
};

static struct rec recs[NREC];
static int nrec;
static char base[PATH_MAX];
/* copy(): -c (RD_CMP_CHECKSUM), and named temporaries (their traces show) */
static int checksum;

static void on_item(void *ctx, const struct rd_item *it)
{
	struct rec *r = &recs[nrec];

	(void)ctx;
	assert_true(nrec < NREC);
	snprintf(r->path, sizeof(r->path), "%.*s", (int)it->len, it->path);
	r->type = it->type;
	r->items = it->items;
	r->status = it->status;
	r->dry = it->dry_run;
	nrec++;
}

/* The record of path, or NULL. */
static const struct rec *rec_of(const char *path)
{
	int i;

	for (i = 0; i < nrec; i++)
		if (!strcmp(recs[i].path, path))
			return &recs[i];
	return NULL;
}

static const char *bp(const char *rel)
{
	static char p[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", base, rel);
	return p[i];
}

static void put(const char *rel, const char *content, long mtime)
{
	struct timeval tv[2] = {{mtime, 250000}, {mtime, 250000}};
	int fd = open(bp(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	assert_int_equal(utimes(bp(rel), tv), 0);
}

/* cmd with every '@' replaced by base */
static void sh(const char *cmd)
{
	char buf[PATH_MAX * 4];
	size_t k = 0;

	for (; *cmd && k < sizeof(buf) - PATH_MAX - 1; cmd++) {
		if (*cmd == '@')
			k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s", base);
		else
			buf[k++] = *cmd;
	}
	buf[k] = '\0';
	assert_int_equal(system(buf), 0);
}

/* Every entry beneath dir: type, inode, mode, size, mtime, ctime (ns), link target. */
static char *manifest(const char *dir)
{
	char cmd[PATH_MAX * 2], *buf = calloc(1, 1 << 16);
	FILE *p;
	size_t n;

	assert_non_null(buf);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && find . -printf '%%y %%i %%m %%s %%T@ %%C@ %%p %%l\\n' | LC_ALL=C sort",
		 dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, (1 << 16) - 1, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

/* rdcp -a [-n] src/ dst/: a local copy; 0 or the session's status. */
static int copy(const char *src, const char *dst, uint16_t rules)
{
	const char *local[1] = {src}, *remote[1] = {"local"};
	struct rd_client_opts o;
	struct rd_client *cl = calloc(1, sizeof(*cl));
	int ret;

	assert_non_null(cl);
	rd_client_opts_init(&o);
	o.push = 1;
	o.local = local;
	o.nlocal = 1;
	o.remote = remote;
	o.nremote = 1;
	o.local_dest = dst;
	o.flags = RD_OF_RECURSIVE | RD_OF_PRESERVE;
	o.sink_flags = RD_SINK_PRESERVE_TIMES | RD_SINK_PRESERVE_MODE;
	o.umask = 022;
	o.sel.rules = (uint16_t)(rules | RD_SEL_DEST_DIR);
	o.need_select = 1;
	if (checksum) {
		o.sel.compare = RD_CMP_CHECKSUM;
		o.sink_flags |= RD_SINK_TEST_NO_TMPFILE;
	}
	o.eo.chunk_size = 4096;
	o.eo.pool_bytes = 1 << 20;
	o.eo.depth = 4;
	o.eo.threads = 1;
	o.eo.window = 64;
	o.co.timeout_ms = 10000;
	cl->e.item = on_item;
	nrec = 0;
	ret = rd_client_run(cl, &o);
	if (ret)
		fprintf(stderr, "copy: %s\n", cl->err.msg);
	free(cl);
	return ret;
}

static int setup(void **state)
{
	const char *tmp = getenv("TEST_TMPDIR");

	(void)state;
	snprintf(base, sizeof(base), "%s/local_test.XXXXXX", tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(base));
	sh("mkdir -p '@/src/a/b' '@/src/e'");
	put("src/a/f1", "one", 1500000000);
	put("src/a/b/f2", "two two", 1500000000);
	put("src/g", "gggg", 1500000000);
	assert_int_equal(symlink("a/f1", bp("src/l")), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf '@'");
	return 0;
}

/* -n into a missing destination: nothing made, every entry new, each record dry. */
static void test_dry_run_new(void **state)
{
	struct stat st;
	const struct rec *r;
	char dst[PATH_MAX + 8];
	int i;

	(void)state;
	snprintf(dst, sizeof(dst), "%s/", bp("dnew"));
	assert_int_equal(copy(bp("src/"), dst, RD_SEL_DRY_RUN), 0);
	assert_int_equal(lstat(bp("dnew"), &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_true(nrec >= 8);
	for (i = 0; i < nrec; i++) {
		assert_true(recs[i].dry);
		assert_int_equal(recs[i].status, 0);
	}
	r = rec_of("src/a/b/f2");
	assert_non_null(r);
	assert_int_equal(r->items & (RD_IT_NEW | RD_IT_XFER), RD_IT_NEW | RD_IT_XFER);
	r = rec_of("src/a/b");
	assert_non_null(r);
	assert_int_equal(r->items, RD_IT_NEW | RD_IT_LOCAL);
	r = rec_of("src/l");
	assert_non_null(r);
	assert_int_equal(r->items, RD_IT_NEW | RD_IT_LOCAL);
}

/*
 * -n over a copy, then changes on the source: the records name exactly
 * what a real run changes, and the destination keeps every inode, byte,
 * mtime and ctime.
 */
static void test_dry_run_changes(void **state)
{
	const struct rec *r;
	char dst[PATH_MAX + 8], *before, *after;

	(void)state;
	snprintf(dst, sizeof(dst), "%s/", bp("dst"));
	assert_int_equal(copy(bp("src/"), dst, 0), 0);
	r = rec_of("src/g");
	assert_non_null(r);
	assert_false(r->dry);
	assert_int_equal(r->items, RD_IT_NEW | RD_IT_XFER);
	/* the source changes: a file's size, another's mode, a link, a new dir, a type */
	put("src/a/f1", "one, longer", 1600000000);
	assert_int_equal(chmod(bp("src/g"), 0600), 0);
	assert_int_equal(unlink(bp("src/l")), 0);
	assert_int_equal(symlink("g", bp("src/l")), 0);
	sh("mkdir -p '@/src/n/m'");
	put("src/n/m/x", "x", 1500000000);
	sh("rm -rf '@/dst/e' && echo e >'@/dst/e'");
	before = manifest(bp("dst"));
	assert_int_equal(copy(bp("src/"), dst, RD_SEL_DRY_RUN), 0);
	after = manifest(bp("dst"));
	assert_string_equal(before, after);
	assert_null(strstr(after, ".rdcp"));
	r = rec_of("src/a/f1");
	assert_non_null(r);
	assert_true(r->dry);
	assert_int_equal(r->items & (RD_IT_NEW | RD_IT_XFER | RD_IT_SIZE | RD_IT_TIME),
			 RD_IT_XFER | RD_IT_SIZE | RD_IT_TIME);
	r = rec_of("src/a/b/f2"); /* unchanged: nothing */
	assert_non_null(r);
	assert_int_equal(r->items, 0);
	r = rec_of("src/g");
	assert_non_null(r);
	assert_int_equal(r->items, RD_IT_PERMS);
	r = rec_of("src/l");
	assert_non_null(r);
	assert_int_equal(r->items & (RD_IT_LOCAL | RD_IT_CHANGE), RD_IT_LOCAL | RD_IT_CHANGE);
	r = rec_of("src/n/m/x");
	assert_non_null(r);
	assert_int_equal(r->items, RD_IT_NEW | RD_IT_XFER);
	r = rec_of("src/e"); /* a directory where a file is */
	assert_non_null(r);
	assert_int_equal(r->items, RD_IT_NEW | RD_IT_LOCAL);
	free(before);
	free(after);
	/* the real run does what the dry one said, and then there is nothing left */
	assert_int_equal(copy(bp("src/"), dst, 0), 0);
	r = rec_of("src/a/f1");
	assert_non_null(r);
	assert_int_equal(r->items & (RD_IT_XFER | RD_IT_SIZE), RD_IT_XFER | RD_IT_SIZE);
	assert_int_equal(copy(bp("src/"), dst, RD_SEL_DRY_RUN), 0);
	for (int i = 0; i < nrec; i++)
		if (recs[i].items)
			fail_msg("%s: 0x%x after the real run", recs[i].path, recs[i].items);
}

/* content of n bytes: a pattern, with byte at (if < n) changed */
static void put_big(const char *rel, size_t n, size_t at, long mtime)
{
	char *b = malloc(n + 1);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < n; i++)
		b[i] = (char)('a' + i % 23);
	if (at < n)
		b[at] = '#';
	b[n] = '\0';
	put(rel, b, mtime);
	free(b);
}

/*
 * -n -c (issue 28, rsync -anci): contents decide. A file of the same
 * size whose bytes differ (in any chunk) is listed as to be sent, with
 * rsync's 'c'; an identical one is not (another mtime: its time only, no
 * transfer); one of another size is sent with 'c'. The destination keeps
 * every inode, byte, mtime and ctime (named temporaries: one made and
 * removed would change its directory's), and the real -c run then does
 * exactly what the dry one said.
 */
static void test_dry_run_checksum(void **state)
{
	static const char *const names[] = {"csrc/f1",	 "csrc/b/f2", "csrc/g", "csrc/big1",
					    "csrc/big2", "csrc/big3", "csrc/e2"};
	unsigned want[7], i;
	const struct rec *r;
	char dst[PATH_MAX + 8], *before, *after;

	(void)state;
	checksum = 1;
	snprintf(dst, sizeof(dst), "%s/", bp("cdst"));
	sh("mkdir -p '@/csrc/b'");
	put("csrc/f1", "one", 1500000000);
	put("csrc/b/f2", "two two", 1500000000);
	put("csrc/g", "gggg", 1500000000);
	put_big("csrc/big1", 3 * 4096 + 100, (size_t)-1, 1500000000);
	put_big("csrc/big2", 3 * 4096 + 100, (size_t)-1, 1500000000);
	put_big("csrc/big3", 2 * 4096, (size_t)-1, 1500000000);
	put("csrc/e2", "", 1500000000);
	assert_int_equal(copy(bp("csrc/"), dst, 0), 0);
	/* same size and mtime, other bytes: the quick check would miss them */
	put("cdst/f1", "ONE", 1500000000);
	put_big("cdst/big1", 3 * 4096 + 100, 3 * 4096 + 7, 1500000000); /* last chunk */
	put_big("cdst/big3", 2 * 4096, 5, 1500000000);			/* first chunk */
	/* the same bytes, another mtime; another size */
	put("cdst/g", "gggg", 1400000000);
	put("cdst/b/f2", "two", 1500000000);
	before = manifest(bp("cdst"));
	assert_int_equal(copy(bp("csrc/"), dst, RD_SEL_DRY_RUN), 0);
	after = manifest(bp("cdst"));
	assert_string_equal(before, after);
	assert_null(strstr(after, ".rdcp"));
	want[0] = RD_IT_XFER | RD_IT_CHANGE;
	want[1] = RD_IT_XFER | RD_IT_CHANGE | RD_IT_SIZE;
	want[2] = RD_IT_TIME;
	want[3] = RD_IT_XFER | RD_IT_CHANGE;
	want[4] = 0;
	want[5] = RD_IT_XFER | RD_IT_CHANGE;
	want[6] = 0;
	for (i = 0; i < 7; i++) {
		r = rec_of(names[i]);
		assert_non_null(r);
		assert_true(r->dry);
		assert_int_equal(r->status, 0);
		if (r->items != want[i])
			fail_msg("-n -c %s: 0x%x, not 0x%x", names[i], r->items, want[i]);
	}
	free(before);
	free(after);
	/* the real run does what the dry one said, and then there is nothing left */
	assert_int_equal(copy(bp("csrc/"), dst, 0), 0);
	for (i = 0; i < 7; i++) {
		r = rec_of(names[i]);
		assert_non_null(r);
		if (r->items != want[i])
			fail_msg("-c %s: 0x%x, not 0x%x", names[i], r->items, want[i]);
	}
	assert_int_equal(copy(bp("csrc/"), dst, RD_SEL_DRY_RUN), 0);
	for (i = 0; i < (unsigned)nrec; i++)
		if (recs[i].items)
			fail_msg("%s: 0x%x after the real run", recs[i].path, recs[i].items);
	checksum = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dry_run_new),
	    cmocka_unit_test(test_dry_run_changes),
	    cmocka_unit_test(test_dry_run_checksum),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
