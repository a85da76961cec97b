// SPDX-License-Identifier: MIT
/*
 * Issue 27: what a hostile peer, or a file planted in the destination,
 * must not get from the sink. Memory is measured as the growth of the
 * process's peak RSS (VmHWM, reset through /proc/self/clear_refs) over
 * one call.
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

#include "lib/base/rss_testutil.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_partial.h" /* rd_partial_record_valid (the sweep's check) */
#include "lib/sink/sink_testutil.h"

#define PCH (128u << 10) /* partials are kept only above RD_SINK_SMALL_FILE */

/* --- a partial record as any writer could leave one (rd_sink_partial.h) --- */

static uint64_t fnv1a(const uint8_t *p, size_t n, uint64_t h)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/*
 * dest/.rdcp-partial.NAME.rec for m, chunks of rc bytes, nchunks as
 * given, its bitmap all ones; file_len: its length on disk (a sparse
 * tail when longer than the record: only the header is written).
 */
static void plant_record(struct fx *x, const char *name, const struct rd_sink_meta *m, uint32_t rc,
			 uint64_t nchunks, off_t file_len)
{
	uint8_t hdr[72], tail[8], ones[65536];
	uint64_t blen = (nchunks + 7) / 8, off, h;
	char p[PATH_MAX];
	size_t n;
	int fd;

	snprintf(p, sizeof(p), "dest/.rdcp-partial.%s.rec", name);
	fd = open(tp(x, p), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "RDCPPRT1", 8);
	put_be(hdr + 8, m->size, 8);
	put_be(hdr + 16, (uint64_t)m->mtime_sec, 8);
	put_be(hdr + 24, m->mtime_nsec, 4);
	put_be(hdr + 28, rc, 4);
	memcpy(hdr + 32, "sha256", 6);
	put_be(hdr + 64, nchunks, 8);
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	if (file_len) {
		assert_int_equal(ftruncate(fd, file_len), 0); /* sparse: nothing read costs disk */
	} else {
		memset(ones, 0xff, sizeof(ones));
		h = fnv1a(hdr, sizeof(hdr), 0xcbf29ce484222325ull);
		for (off = 0; off < blen; off += n) {
			n = blen - off < sizeof(ones) ? (size_t)(blen - off) : sizeof(ones);
			h = fnv1a(ones, n, h);
			assert_int_equal(pwrite(fd, ones, n, (off_t)(72 + off)), (ssize_t)n);
		}
		put_be(tail, h, 8);
		assert_int_equal(pwrite(fd, tail, 8, (off_t)(72 + blen)), 8);
	}
	close(fd);
}

/* dest/.rdcp-partial.NAME of size bytes (sparse). */
static void plant_data(struct fx *x, const char *name, uint64_t size)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "dest/.rdcp-partial.%s", name);
	fd = open(tp(x, p), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/*
 * Item 9: a record is never read whole. A sparse 2 GiB record beside a
 * partial (a local writer's, or a hostile server's of an earlier pull)
 * costs nothing: its length is wrong for the file it claims. A record of
 * the right length for a 511 GiB file in 4 KiB chunks (16 MiB of bitmap)
 * is read in small pieces into the file's own bitmap (511 KiB at 128 KiB
 * chunks), and resumes it.
 */
static void test_planted_record_memory(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 4 * PCH);
	struct rd_sink_file *f;
	long base, grew;

	rd_sink_set_chunking(s, PCH, "sha256", 1);
	plant_data(x, "big", m.size);
	plant_record(x, "big", &m, PCH, 4, 2ll << 30);
	base = rd_test_peak_reset();
	assert_int_equal(rd_sink_file_begin(s, "big", 3, 1, &m, &f), 0);
	grew = rd_test_peak_growth(base);
	print_message("sparse 2 GiB record: peak RSS grew %ld KiB\n", grew);
	assert_true(grew < 4096);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	rd_sink_file_abort(f);

	m.size = 511ull << 30;
	plant_data(x, "huge", m.size);
	plant_record(x, "huge", &m, 4096, m.size / 4096, 0);
	base = rd_test_peak_reset();
	assert_int_equal(rd_sink_file_begin(s, "huge", 4, 1, &m, &f), 0);
	grew = rd_test_peak_growth(base);
	print_message("16 MiB record of a 511 GiB file: peak RSS grew %ld KiB\n", grew);
	assert_true(grew < 4096);
	assert_int_equal(rd_sink_file_resumed(f), 1);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_PARTIAL);
	assert_int_equal(rd_sink_file_chunk_src(f, m.size / PCH - 1), RD_SINK_CHUNK_PARTIAL);
	rd_sink_file_abort(f);
	rd_sink_close(s);
}

/* Both record formats are rdcp's for the sweep: the planted RDCPPRT1, the RDCPPRT2 written. */
static void test_record_formats(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 4 * PCH);
	struct rd_sink_file *f;
	char chunk[PCH];
	int fd;

	plant_record(x, "old", &m, PCH, 4, 0); /* RDCPPRT1, bitmap all ones */
	fd = open(tp(x, "dest/.rdcp-partial.old.rec"), O_RDONLY);
	assert_int_equal(rd_partial_record_valid(fd), 1);
	close(fd);
	memset(chunk, 'r', sizeof(chunk));
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "new", 3, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f);
	fd = open(tp(x, "dest/.rdcp-partial.new.rec"), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, chunk, 8, 0), 8);
	assert_memory_equal(chunk, "RDCPPRT2", 8);
	assert_int_equal(rd_partial_record_valid(fd), 1);
	close(fd);
	rd_sink_close(s);
}

/*
 * Item 9 sibling: the sizes a sender announces size the partials'
 * bitmaps; the files open at once share RD_SINK_PARTIAL_MEM. Five files
 * of 15 MiB bitmaps each: four keep partials, the fifth is received
 * without one.
 */
static void test_partial_bitmaps_bounded(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 15ull * 8 * 4096 << 20);
	struct rd_sink_file *f[5];
	char name[2] = "a";
	int i;

	rd_sink_set_chunking(s, 4096, "sha256", 1);
	for (i = 0; i < 5; i++) {
		name[0] = (char)('a' + i);
		assert_int_equal(rd_sink_file_begin(s, name, 1, 1, &m, &f[i]), 0);
		rd_sink_file_chunk_done(f[i], 0, 1);
	}
	for (i = 0; i < 5; i++)
		rd_sink_file_abort(f[i]);
	expect_listing(tp(x, "dest"),
		       ".rdcp-partial.a|.rdcp-partial.a.rec|.rdcp-partial.b|.rdcp-partial.b.rec|"
		       ".rdcp-partial.c|.rdcp-partial.c.rec|.rdcp-partial.d|.rdcp-partial.d.rec");
	rd_sink_close(s);
}

/*
 * Item 16 sibling: a sender that sends rdcp's own names is planting
 * partials, records or temporaries (a forged record, a partial another
 * client resumes): every component of such a name is refused.
 */
static void test_reserved_names_refused(void **state)
{
	static const char *const bad[] = {
	    ".rdcp-partial.x",	 ".rdcp-partial.x.rec",	     "d/.rdcp-partial.x.rec.new",
	    ".rdcp-partial.d/y", ".rdcp.x.0123456789abcdef", "d/.rdcp.y.fedcba9876543210",
	};
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 5), d = meta(S_IFDIR | 0755, 0);
	struct rd_sink_file *f;
	unsigned i;

	assert_int_equal(rd_sink_mkdir(s, "d", 1, 1, &d), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = NULL;
		assert_int_equal(
		    rd_sink_file_begin(s, bad[i], strlen(bad[i]), !strchr(bad[i], '/'), &m, &f),
		    -RD_EPROTO);
		assert_null(f);
		assert_non_null(strstr(rd_sink_err(s)->msg, "rdcp keeps for its partial"));
		assert_int_equal(
		    rd_sink_symlink(s, bad[i], strlen(bad[i]), !strchr(bad[i], '/'), "t", 1, &m),
		    -RD_EPROTO);
	}
	assert_int_equal(rd_sink_mkdir(s, ".rdcp-partial.dir", 17, 1, &d), -RD_EPROTO);
	/* names that only look alike are files like any other */
	assert_int_equal(rd_sink_file_begin(s, ".rdcp.conf", 10, 1, &m, &f), 0);
	rd_sink_file_abort(f);
	expect_listing(tp(x, "dest"), "d");
	expect_listing(tp(x, "dest/d"), "");
	rd_sink_close(s);
}

/* One large file through the sink with --partial-dir NAME: begin, a chunk, commit or abort. */
static void one_file(struct rd_sink *s, const char *name, int commit)
{
	struct rd_sink_meta m = meta(S_IFREG | 0644, 2 * PCH);
	struct rd_sink_file *f;
	static char chunk[PCH];

	memset(chunk, 'p', sizeof(chunk));
	assert_int_equal(rd_sink_file_begin(s, name, strlen(name), 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	if (!commit) {
		rd_sink_file_abort(f);
		return;
	}
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, PCH), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
}

/* A sink on dest keeping its partials in --partial-dir name. */
static struct rd_sink *pd_sink(struct fx *x, const char *name)
{
	struct rd_sink *s = sopen(x, "dest", 0);

	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_set_partial_dir(s, name), 0);
	return s;
}

/*
 * Item 15: --partial-dir NAME removes only a directory rdcp made: an
 * empty directory of that name that was there before stays (the name may
 * come from a client), even after a later copy finished a partial left in
 * it; ours goes once left empty, also when a later copy (another session)
 * finishes the partial the first one left there.
 */
static void test_partial_dir_only_ours(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s;
	struct stat st;

	assert_int_equal(mkdir(tp(x, "dest/keep"), 0755), 0);
	s = pd_sink(x, "keep");
	one_file(s, "f", 1);
	rd_sink_close(s);
	assert_int_equal(stat(tp(x, "dest/keep"), &st), 0); /* the user's: still there */
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0755);
	expect_listing(tp(x, "dest"), "f|keep");
	/* a copy interrupted in it, finished by another session: still the user's */
	s = pd_sink(x, "keep");
	one_file(s, "k", 0);
	rd_sink_close(s);
	s = pd_sink(x, "keep");
	one_file(s, "k", 1);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "f|k|keep");
	expect_listing(tp(x, "dest/keep"), "");

	/* one rdcp made in an interrupted copy: another session finishes it, it goes */
	s = pd_sink(x, ".made");
	one_file(s, "m", 0);
	rd_sink_close(s);
	expect_listing(tp(x, "dest/.made"), ".rdcp-partial.m|.rdcp-partial.m.rec");
	s = pd_sink(x, ".made");
	one_file(s, "m", 1);
	rd_sink_close(s);
	expect_listing(tp(x, "dest"), "f|k|keep|m");

	/* one we make: kept while it holds a partial, removed once empty */
	s = sopen(x, "dest", 0);
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_set_partial_dir(s, ".part"), 0);
	one_file(s, "g", 0);
	expect_listing(tp(x, "dest/.part"), ".rdcp-partial.g|.rdcp-partial.g.rec");
	one_file(s, "g", 1);
	expect_listing(tp(x, "dest"), "f|g|k|keep|m");
	rd_sink_close(s);
}

/*
 * Item 14: a write-only module (RD_SINK_FRESH) compares nothing with
 * what is there: no existing file of the same size or prefix, no partial
 * kept by anyone; and it keeps none.
 */
static void test_fresh_compares_nothing(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 2 * PCH);
	struct rd_sink_file *f;
	static char chunk[PCH];

	memset(chunk, 'w', sizeof(chunk));
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	one_file(s, "same", 1);	 /* an existing file of the same size */
	one_file(s, "other", 0); /* someone's kept partial */
	rd_sink_close(s);

	s = sopen(x, "dest", RD_SINK_FRESH);
	rd_sink_set_chunking(s, PCH, "sha256", 1);
	assert_int_equal(rd_sink_file_begin(s, "same", 4, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_has_existing(f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_read_existing(f, chunk, 1, 0), -RD_EUSAGE);
	rd_sink_file_abort(f);
	assert_int_equal(rd_sink_file_begin(s, "other", 5, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	rd_sink_file_chunk_done(f, 0, 1);
	rd_sink_file_abort(f); /* keeps nothing of its own */
	expect_listing(tp(x, "dest"), ".rdcp-partial.other|.rdcp-partial.other.rec|same");
	/* received whole, it replaces what was there */
	assert_int_equal(rd_sink_file_begin(s, "same", 4, 1, &m, &f), 0);
	memset(chunk, 'n', sizeof(chunk));
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, 0), 0);
	assert_int_equal(rd_sink_file_write(f, chunk, PCH, PCH), 0);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	rd_sink_close(s);
}

/*
 * Item 10: -S cannot compare a resumed partial (its chunks travel as data
 * pieces): rd_sink_file_restart empties it back to holes, so bytes the
 * old copy held where the source has a hole are gone.
 */
static void test_restart_empties_partial(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 2 * PCH);
	struct rd_sink_file *f;
	static char back[PCH], zero[PCH];
	struct stat st;

	rd_sink_set_chunking(s, PCH, "sha256", 1);
	one_file(s, "sp", 0);
	assert_int_equal(rd_sink_file_begin(s, "sp", 2, 1, &m, &f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 1);
	assert_int_equal(rd_sink_file_restart(f), 0);
	assert_int_equal(rd_sink_file_resumed(f), 0);
	assert_int_equal(rd_sink_file_chunk_src(f, 0), RD_SINK_CHUNK_NONE);
	assert_int_equal(rd_sink_file_read_partial(f, back, PCH, 0), 0);
	assert_memory_equal(back, zero, PCH);
	assert_int_equal(rd_sink_file_commit(f, 0), 0);
	assert_int_equal(stat(tp(x, "dest/sp"), &st), 0);
	assert_int_equal(st.st_size, 2 * PCH);
	assert_int_equal(st.st_blocks, 0); /* all holes */
	rd_sink_close(s);
}

/* A file placed by the sink; link_first: it starts a link group. */
static int place(struct rd_sink *s, const char *name, const char *content, int link_first)
{
	int root = !strchr(name, '/');

	return link_first ? put_group_file(s, name, root, content)
			  : put_file(s, name, root, content, 0644);
}

static int hl(struct rd_sink *s, const char *path, const char *target, int last)
{
	return rd_sink_hardlink(s, path, strlen(path), !strchr(path, '/'), target, strlen(target),
				last);
}

/*
 * Item 11: an HLINK may name only a file this copy placed as the start
 * of a link group; not one that was there before, not one whose own copy
 * failed, not one that started no group, not after its group's last link.
 */
static void test_hardlink_targets(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	struct rd_sink_meta m = meta(S_IFREG | 0644, 3);
	struct rd_sink_file *f;
	struct stat a, b;

	put(tp(x, "dest/secret"), "there before\n");
	assert_true(hl(s, "pub", "secret", 0) < 0);
	assert_non_null(strstr(rd_sink_err(s)->msg, "not a file this copy placed"));
	/* a group's first file whose copy failed: the old file under its name is not it */
	put(tp(x, "dest/lead"), "old\n");
	assert_int_equal(rd_sink_file_begin(s, "lead", 4, 1, &m, &f), 0);
	rd_sink_file_link_first(f);
	rd_sink_file_abort(f);
	assert_true(hl(s, "l2", "lead", 0) < 0);
	/* placed, but starting no group */
	assert_int_equal(place(s, "plain", "abc", 0), 0);
	assert_true(hl(s, "p2", "plain", 0) < 0);
	/* the real thing, until its last link */
	assert_int_equal(place(s, "grp", "abc", 1), 0);
	assert_int_equal(hl(s, "g2", "grp", 0), 0);
	assert_int_equal(hl(s, "g3", "grp", 1), 0);
	assert_int_equal(stat(tp(x, "dest/grp"), &a), 0);
	assert_int_equal(stat(tp(x, "dest/g3"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_nlink, 3);
	assert_true(hl(s, "g4", "grp", 0) < 0);
	/* a directory is no target either */
	assert_int_equal(mkdir(tp(x, "dest/dir"), 0755), 0);
	assert_true(hl(s, "d2", "dir", 0) < 0);
	expect_listing(tp(x, "dest"), "dir|g2|g3|grp|lead|plain|secret");
	expect_content(tp(x, "dest/lead"), "old\n");
	rd_sink_close(s);
}

/*
 * Item 11: the receiver's table of open link groups holds what its budget
 * allows: past it a group is not remembered, and its links fail saying
 * why; groups closed by their last link make room again.
 */
static void test_link_table_bounded(void **state)
{
	struct fx *x = *state;
	struct rd_sink *s = sopen(x, "dest", 0);
	char name[32], link[32];
	int i, ok = 0;

	rd_sink_set_link_table(s, 4096); /* 64 slots: 32 groups open at once */
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(place(s, name, "x", 1), 0);
	}
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		snprintf(link, sizeof(link), "l%d", i);
		if (hl(s, link, name, 1) == 0)
			ok++;
		else
			assert_non_null(strstr(rd_sink_err(s)->msg, "link table"));
	}
	assert_int_equal(ok, 32);
	/* closed groups made room: a new one is remembered */
	assert_int_equal(place(s, "n", "x", 1), 0);
	assert_int_equal(hl(s, "n2", "n", 1), 0);
	rd_sink_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_planted_record_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_record_formats, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_partial_bitmaps_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reserved_names_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_partial_dir_only_ours, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fresh_compares_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_empties_partial, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hardlink_targets, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_table_bounded, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
