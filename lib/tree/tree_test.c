// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/base/rss_testutil.h"
#include "lib/tree/rd_tree.h"

struct walk {
	struct rd_tree_entry *e; /* entries, skips have type 0 */
	int *kind;		 /* RD_TREE_ENTRY or RD_TREE_SKIP */
	char **msg;		 /* skip messages */
	int n;
};

static char base[PATH_MAX];

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static void mk(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void ln(const char *target, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	assert_int_equal(symlink(target, p), 0);
}

static const char *bp(const char *rel)
{
	static char p[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", base, rel);
	return p[i];
}

static void rm_rf(const char *p)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	const char *tmp = getenv("TEST_TMPDIR");

	snprintf(base, sizeof(base), "%s/tree_test.XXXXXX", tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(base));
	mk("src");
	put("src/a.txt", "hello");
	put("src/empty", "");
	put("src/sp ace", "1 2");
	put("src/new\nline", "nl");
	put("src/bad\xff", "\xff");
	mk("src/sub");
	mk("src/sub/deep");
	put("src/sub/deep/f", "abc");
	put("src/sub/g", "gg");
	mk("src/emptydir");
	ln("a.txt", "src/lnk");
	ln("sub", "src/dlink");
	ln("t\xff\nx y", "src/weird\x01");
	assert_int_equal(mkfifo(bp("src/fifo"), 0644), 0);
	put("file1", "0123456789");
	ln("src", "rootlink");
	return 0;
}

static int teardown(void **state)
{
	rm_rf(base);
	return 0;
}

static void walk_free(struct walk *w)
{
	int i;

	for (i = 0; i < w->n; i++) {
		if (w->e[i].fd >= 0)
			close(w->e[i].fd);
		free(w->msg[i]);
	}
	free(w->e);
	free(w->kind);
	free(w->msg);
	memset(w, 0, sizeof(*w));
}

static void walk(struct walk *w, const char *const *src, int n, unsigned flags)
{
	struct rd_tree *t;
	struct rd_err err;
	int r;

	memset(w, 0, sizeof(*w));
	rd_err_clear(&err);
	assert_int_equal(rd_tree_open_paths(&t, src, n, flags, &err), 0);
	for (;;) {
		w->e = realloc(w->e, (w->n + 1) * sizeof(*w->e));
		w->kind = realloc(w->kind, (w->n + 1) * sizeof(*w->kind));
		w->msg = realloc(w->msg, (w->n + 1) * sizeof(*w->msg));
		assert_true(w->e && w->kind && w->msg);
		r = rd_tree_next(t, &w->e[w->n]);
		assert_true(r >= 0);
		if (r == RD_TREE_END)
			break;
		w->kind[w->n] = r;
		w->msg[w->n] = r == RD_TREE_SKIP       ? strdup(rd_tree_err(t)->msg)
			       : r == RD_TREE_LEFT_OUT ? strdup(w->e[w->n].note)
						       : NULL;
		if (r == RD_TREE_SKIP || r == RD_TREE_LEFT_OUT)
			assert_int_equal(w->e[w->n].fd, -1);
		w->n++;
	}
	rd_tree_close(t);
}

static int find(const struct walk *w, const char *path, int post)
{
	int i;

	for (i = 0; i < w->n; i++)
		if (w->kind[i] == RD_TREE_ENTRY && strcmp(w->e[i].path, path) == 0 &&
		    !!(w->e[i].flags & RD_FF_POST) == post)
			return i;
	return -1;
}

static int find_kind(const struct walk *w, int kind, const char *needle)
{
	int i;

	for (i = 0; i < w->n; i++)
		if (w->kind[i] == kind && strstr(w->msg[i], needle))
			return i;
	return -1;
}

static int find_skip(const struct walk *w, const char *needle)
{
	return find_kind(w, RD_TREE_SKIP, needle);
}

static void check_file(const struct walk *w, const char *path, const char *content)
{
	int i = find(w, path, 0);
	char buf[64];
	size_t n = strlen(content);

	assert_true(i >= 0);
	assert_int_equal(w->e[i].type, RD_FT_REG);
	assert_int_equal(w->e[i].size, n);
	assert_true(w->e[i].fd >= 0);
	assert_int_equal(pread(w->e[i].fd, buf, sizeof(buf), 0), (ssize_t)n);
	assert_memory_equal(buf, content, n);
}

/* Every directory: PRE before, POST after all of its descendants. */
static void check_nesting(const struct walk *w)
{
	int i, j, pre, post;

	for (i = 0; i < w->n; i++) {
		const struct rd_tree_entry *d = &w->e[i];

		if (w->kind[i] != RD_TREE_ENTRY || d->type != RD_FT_DIR || (d->flags & RD_FF_POST))
			continue;
		pre = i;
		post = find(w, d->path, 1);
		assert_true(post > pre);
		for (j = 0; j < w->n; j++) {
			const struct rd_tree_entry *c = &w->e[j];

			if (w->kind[j] != RD_TREE_ENTRY || c->path_len <= d->path_len ||
			    memcmp(c->path, d->path, d->path_len) || c->path[d->path_len] != '/')
				continue;
			assert_true(j > pre && j < post);
		}
	}
}

/* A listing's walk (RD_TREE_LIST_LEVEL): one level, the directories in it not entered. */
static void test_tree_list_level(void **state)
{
	const char *src[] = {bp("src"), bp("file1")};
	struct walk w;
	int i, fds = count_fds();

	(void)state;
	walk(&w, src, 2, RD_TREE_LIST_LEVEL);
	assert_int_equal(w.kind[0], RD_TREE_ENTRY);
	assert_string_equal(w.e[0].path, "src");
	assert_int_equal(w.e[0].type, RD_FT_DIR);
	check_file(&w, "src/a.txt", "hello");
	i = find(&w, "src/sub", 0);
	assert_true(i > 0);
	assert_int_equal(w.e[i].type, RD_FT_DIR);
	assert_int_equal(w.e[i].fd, -1);
	assert_true(find(&w, "src/sub", 1) < 0);   /* never entered: no POST */
	assert_true(find(&w, "src/sub/g", 0) < 0); /* nor its contents */
	assert_true(find(&w, "src/sub/deep", 0) < 0);
	assert_true(find(&w, "src", 1) > i);
	check_file(&w, "file1", "0123456789");
	walk_free(&w);
	/* with -r as well: the whole tree, as a pull walks it */
	walk(&w, src, 2, RD_TREE_LIST_LEVEL | RD_TREE_RECURSIVE);
	check_file(&w, "src/sub/deep/f", "abc");
	check_nesting(&w);
	walk_free(&w);
	assert_int_equal(count_fds(), fds);
}

static void test_tree_full_walk(void **state)
{
	const char *src[] = {bp("src"), bp("missing"), bp("file1")};
	struct walk w;
	int i, nroot = 0, fds = count_fds();

	walk(&w, src, 3, RD_TREE_RECURSIVE);
	assert_int_equal(w.kind[0], RD_TREE_ENTRY);
	assert_string_equal(w.e[0].path, "src");
	assert_int_equal(w.e[0].flags, RD_FF_ROOT);
	assert_int_equal(w.e[0].type, RD_FT_DIR);
	assert_true(S_ISDIR(w.e[0].mode));
	for (i = 0; i < w.n; i++) {
		if (w.kind[i] == RD_TREE_ENTRY && (w.e[i].flags & RD_FF_ROOT)) {
			nroot++;
			assert_false(w.e[i].flags & RD_FF_POST);
			/* first entry of a source: previous is a POST of a root or a skip */
			assert_true(i == 0 || w.kind[i - 1] == RD_TREE_SKIP ||
				    (w.e[i - 1].flags & RD_FF_POST));
		}
		if (w.kind[i] == RD_TREE_ENTRY)
			assert_int_equal(w.e[i].path_len, strlen(w.e[i].path));
	}
	assert_int_equal(nroot, 2);
	check_nesting(&w);
	check_file(&w, "src/a.txt", "hello");
	check_file(&w, "src/empty", "");
	check_file(&w, "src/sp ace", "1 2");
	check_file(&w, "src/new\nline", "nl");
	check_file(&w, "src/bad\xff", "\xff");
	check_file(&w, "src/sub/deep/f", "abc");
	check_file(&w, "src/sub/g", "gg");
	check_file(&w, "file1", "0123456789");
	assert_true(w.e[find(&w, "file1", 0)].flags & RD_FF_ROOT);
	assert_true(find(&w, "src/emptydir", 0) >= 0);
	assert_true(find(&w, "src/emptydir", 1) > find(&w, "src/emptydir", 0));
	i = find(&w, "src/lnk", 0);
	assert_true(i >= 0);
	assert_int_equal(w.e[i].type, RD_FT_SYMLINK);
	assert_string_equal(w.e[i].target, "a.txt");
	assert_int_equal(w.e[i].target_len, 5);
	assert_int_equal(w.e[i].fd, -1);
	i = find(&w, "src/dlink", 0);
	assert_true(i >= 0);
	assert_int_equal(w.e[i].type, RD_FT_SYMLINK);
	assert_string_equal(w.e[i].target, "sub");
	assert_true(find(&w, "src/dlink/g", 0) < 0);
	i = find(&w, "src/weird\x01", 0);
	assert_true(i >= 0);
	assert_int_equal(w.e[i].target_len, 6);
	assert_memory_equal(w.e[i].target, "t\xff\nx y", 6);
	assert_true(find(&w, "src/fifo", 0) < 0);
	/* a fifo without RD_TREE_SPECIALS: left out with rsync's note, no error */
	assert_true(find_skip(&w, "fifo") < 0);
	i = find_kind(&w, RD_TREE_LEFT_OUT, RD_TREE_NONREG);
	assert_true(i >= 0);
	assert_string_equal(w.e[i].path, bp("src/fifo"));
	/* missing source between two good ones: "not found", not "vanished" */
	i = find_skip(&w, "missing: No such file or directory");
	assert_true(i > find(&w, "src", 1));
	assert_true(i < find(&w, "file1", 0));
	assert_string_equal(w.e[i].path, bp("missing"));
	assert_string_equal(w.msg[i] + strlen(w.msg[i]) - strlen("No such file or directory"),
			    "No such file or directory");
	/* last entry of src is its own POST, without ROOT */
	assert_int_equal(w.e[find(&w, "src", 1)].flags, RD_FF_POST);
	/* 1 root + 8 files/links in src + 3 dirs (pre+post) + 3 files inside */
	walk_free(&w);
	assert_int_equal(count_fds(), fds);
}

static void test_tree_dir_needs_recursive(void **state)
{
	const char *src[] = {bp("src"), bp("file1")};
	struct walk w;

	walk(&w, src, 2, 0);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.kind[0], RD_TREE_SKIP);
	assert_non_null(strstr(w.msg[0], "src: is a directory (use -r)"));
	assert_int_equal(w.kind[1], RD_TREE_ENTRY);
	assert_string_equal(w.e[1].path, "file1");
	walk_free(&w);
}

static void test_tree_symlink_source_followed(void **state)
{
	const char *src[] = {bp("rootlink"), bp("src/lnk")};
	struct walk w;

	walk(&w, src, 2, RD_TREE_RECURSIVE);
	assert_string_equal(w.e[0].path, "rootlink");
	assert_int_equal(w.e[0].type, RD_FT_DIR);
	assert_int_equal(w.e[0].flags, RD_FF_ROOT);
	check_file(&w, "rootlink/a.txt", "hello");
	check_file(&w, "rootlink/sub/deep/f", "abc");
	check_nesting(&w);
	/* a symlink to a file named on the command line: the file */
	check_file(&w, "lnk", "hello");
	assert_int_equal(w.e[find(&w, "lnk", 0)].flags, RD_FF_ROOT);
	walk_free(&w);
}

static void test_tree_root_names(void **state)
{
	char cwd[PATH_MAX];
	char slash[PATH_MAX];
	const char *src[] = {slash, ".", "/"};
	const char *src2[] = {"sub/.."};
	struct walk w;

	snprintf(slash, sizeof(slash), "%s/src/sub/", base);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(bp("src")), 0);
	walk(&w, src2, 1, RD_TREE_RECURSIVE);
	assert_string_equal(w.e[0].path, "src");
	walk_free(&w);
	walk(&w, src, 3, RD_TREE_RECURSIVE);
	assert_int_equal(chdir(cwd), 0);
	assert_true(find(&w, "sub", 0) == 0);
	assert_true(find(&w, "sub/g", 0) > 0);
	assert_true(find(&w, "src/a.txt", 0) > 0);
	assert_int_equal(w.kind[w.n - 1], RD_TREE_SKIP);
	assert_non_null(strstr(w.msg[w.n - 1], "refusing"));
	check_nesting(&w);
	walk_free(&w);
}

static void test_tree_unreadable(void **state)
{
	const char *src[] = {bp("src")};
	struct walk w;

	if (geteuid() == 0)
		skip(); /* root reads everything; the fifo case covers skips */
	put("src/secret", "x");
	assert_int_equal(chmod(bp("src/secret"), 0), 0);
	walk(&w, src, 1, RD_TREE_RECURSIVE);
	assert_true(find_skip(&w, "secret: Permission denied") >= 0);
	assert_true(find(&w, "src", 1) > 0);
	walk_free(&w);
	unlink(bp("src/secret"));
}

/*
 * A name the listing gave that is gone when the walk looks at it: rsync's
 * "vanished" (RD_EVANISHED), not an error like any other; a source named
 * on the command line that does not exist is "not found" (RD_ENOENT).
 */
static void test_tree_vanished(void **state)
{
	const char *src[] = {bp("van"), bp("van-missing")};
	struct rd_tree_entry *e = malloc(sizeof(*e));
	struct rd_tree *t;
	struct rd_err err;
	char first[64] = "", p[PATH_MAX];
	int r, nvan = 0, nent = 0, i;

	(void)state;
	assert_non_null(e);
	mk("van");
	put("van/f1", "1");
	put("van/f2", "2");
	put("van/f3", "3");
	assert_int_equal(rd_tree_open_paths(&t, src, 2, RD_TREE_RECURSIVE, &err), 0);
	while ((r = rd_tree_next(t, e)) > 0) {
		if (r == RD_TREE_ENTRY && e->type == RD_FT_REG && !first[0]) {
			/* the listing is read: the others go now */
			snprintf(first, sizeof(first), "%s", e->path + 4);
			for (i = 1; i <= 3; i++) {
				snprintf(p, sizeof(p), "%s/van/f%d", base, i);
				if (strcmp(first, p + strlen(p) - 2))
					assert_int_equal(unlink(p), 0);
			}
		}
		if (r == RD_TREE_ENTRY) {
			nent++;
			if (e->fd >= 0)
				close(e->fd);
			continue;
		}
		assert_int_equal(r, RD_TREE_SKIP);
		if (strstr(e->path, "van-missing")) {
			assert_int_equal(rd_tree_err(t)->status, RD_ENOENT);
			continue;
		}
		assert_int_equal(rd_tree_err(t)->status, RD_EVANISHED);
		assert_non_null(strstr(rd_tree_err(t)->msg, "file has vanished: \""));
		assert_non_null(strstr(e->path, "/van/f"));
		nvan++;
	}
	assert_int_equal(r, RD_TREE_END);
	assert_int_equal(nvan, 2);
	assert_int_equal(nent, 3); /* van, the file it kept, van again (POST) */
	rd_tree_close(t);
	free(e);
}

/* -L: links are followed, a dangling one and one into an ancestor (a loop) are errors. */
static void test_tree_copy_links(void **state)
{
	const char *src[] = {bp("cl")};
	struct rd_tree_entry *e = malloc(sizeof(*e));
	struct rd_tree *t;
	struct rd_err err;
	int r, nfile = 0, ndir = 0, loop = 0, dangling = 0;

	(void)state;
	assert_non_null(e);
	mk("cl");
	mk("cl/d");
	put("cl/d/f", "data");
	ln("d/f", "cl/lf");  /* a file: sent as the file */
	ln("d", "cl/ld");    /* a directory: walked */
	ln("..", "cl/d/up"); /* cl itself, being walked: a loop */
	ln("nowhere", "cl/dangling");
	assert_int_equal(
	    rd_tree_open_paths(&t, src, 1, RD_TREE_RECURSIVE | RD_TREE_COPY_LINKS, &err), 0);
	while ((r = rd_tree_next(t, e)) > 0) {
		if (r == RD_TREE_SKIP) {
			if (strstr(rd_tree_err(t)->msg, "symlink has no referent"))
				dangling++;
			if (strstr(rd_tree_err(t)->msg, "(a loop)"))
				loop++;
			continue;
		}
		assert_int_equal(r, RD_TREE_ENTRY);
		assert_true(e->type != RD_FT_SYMLINK);
		if (e->type == RD_FT_REG) {
			nfile++;
			close(e->fd);
		}
		if (e->type == RD_FT_DIR && !(e->flags & RD_FF_POST))
			ndir++;
	}
	assert_int_equal(r, RD_TREE_END);
	/* cl/d/f, cl/lf, cl/ld/f; cl, cl/d, cl/ld; the loop through cl/d/up and cl/ld/up */
	assert_int_equal(nfile, 3);
	assert_int_equal(ndir, 3);
	assert_int_equal(loop, 2);
	assert_int_equal(dangling, 1);
	rd_tree_close(t);
	free(e);
}

static void test_tree_name_too_long(void **state)
{
	char name[201], rel[PATH_MAX];
	const char *src[] = {"long"};
	char cwd[PATH_MAX];
	struct walk w;
	int i, dfd, fd, maxlen = 0;

	memset(name, 'n', 200);
	name[200] = '\0';
	mk("long");
	dfd = open(bp("long"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	/* 4 + 21 * 201 > RD_PATH_MAX: the deepest names do not fit */
	for (i = 0; i < 21; i++) {
		assert_int_equal(mkdirat(dfd, name, 0755), 0);
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY);
		assert_true(fd >= 0);
		close(dfd);
		dfd = fd;
	}
	close(dfd);
	/* relative source: the local path is as long as the wire path */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	walk(&w, src, 1, RD_TREE_RECURSIVE);
	assert_int_equal(chdir(cwd), 0);
	for (i = 0; i < w.n; i++)
		if (w.kind[i] == RD_TREE_ENTRY && (int)w.e[i].path_len > maxlen)
			maxlen = (int)w.e[i].path_len;
	assert_true(maxlen <= RD_PATH_MAX);
	assert_true(maxlen > RD_PATH_MAX - 201);
	for (i = 0; i < w.n; i++)
		if (w.kind[i] == RD_TREE_SKIP && strstr(w.msg[i], "too long"))
			break;
	assert_true(i < w.n);
	check_nesting(&w);
	walk_free(&w);
	snprintf(rel, sizeof(rel), "%s/long", base);
	rm_rf(rel);
}

static void test_tree_close_midway_no_leak(void **state)
{
	const char *src[] = {bp("src")};
	struct rd_tree_entry e;
	struct rd_tree *t;
	struct rd_err err;
	int fds = count_fds(), i;

	assert_int_equal(rd_tree_open_paths(&t, src, 1, RD_TREE_RECURSIVE, &err), 0);
	for (i = 0; i < 12; i++) {
		assert_true(rd_tree_next(t, &e) > 0);
		if (e.fd >= 0)
			close(e.fd);
	}
	rd_tree_close(t);
	rd_tree_close(NULL);
	assert_int_equal(count_fds(), fds);
}

/* Descriptor sources: named by their wire name, never by where they live. */
static void test_tree_fd_sources(void **state)
{
	struct rd_tree_src src[3];
	struct rd_tree_entry e;
	struct rd_tree *t;
	struct rd_err err;
	int dfd = open(bp("src"), O_RDONLY | O_DIRECTORY), ffd = open(bp("file1"), O_RDONLY);
	int r, fds, nskip = 0, nent = 0, sawfifo = 0;

	assert_true(dfd >= 0 && ffd >= 0);
	fds = count_fds();
	memset(src, 0, sizeof(src));
	src[0].dirfd = dfd; /* the directory itself, named "mod" */
	src[0].wire = "mod";
	src[1].dirfd = dfd; /* a symlink beneath it: sent as a link */
	src[1].name = "lnk";
	src[2].dirfd = ffd;
	src[2].wire = "f";
	assert_int_equal(rd_tree_open(&t, src, 3, RD_TREE_RECURSIVE, &err), 0);
	close(dfd);
	close(ffd);
	while ((r = rd_tree_next(t, &e)) > 0) {
		if (r == RD_TREE_SKIP) {
			nskip++;
			/* the skip names the wire path, not the server's path */
			assert_null(strstr(e.path, base));
			assert_null(strstr(rd_tree_err(t)->msg, base));
			continue;
		}
		if (r == RD_TREE_LEFT_OUT) {
			/* a fifo: a note (rsync's "skipping non-regular file") */
			assert_string_equal(e.note, RD_TREE_NONREG);
			if (!strcmp(e.path, "mod/fifo"))
				sawfifo = 1;
			continue;
		}
		nent++;
		if (e.flags & RD_FF_ROOT)
			assert_true(!strcmp(e.path, "mod") || !strcmp(e.path, "lnk") ||
				    !strcmp(e.path, "f"));
		if (!strcmp(e.path, "lnk")) {
			assert_int_equal(e.type, RD_FT_SYMLINK);
			assert_string_equal(e.target, "a.txt");
		}
		if (!strcmp(e.path, "f"))
			assert_int_equal(e.size, 10);
		if (e.fd >= 0)
			close(e.fd);
	}
	assert_int_equal(r, RD_TREE_END);
	assert_true(sawfifo);
	assert_int_equal(nskip, 0);
	assert_true(nent > 10);
	rd_tree_close(t);
	assert_int_equal(count_fds(), fds - 2);
	/* names must be one component */
	src[0].name = "a/b";
	assert_int_equal(rd_tree_open(&t, src, 1, 0, &err), -RD_EUSAGE);
	src[0].name = "..";
	assert_int_equal(rd_tree_open(&t, src, 1, 0, &err), -RD_EUSAGE);
}

/* -R: implied directories before the item, "/./" ends the base, ".." refused. */
static void test_tree_relative(void **state)
{
	const char *src[] = {"src/sub/deep", "src/./sub/g"};
	const char *bad[] = {"src/../file1"};
	const char *names[] = {"sub/g", "sub/deep", "a.txt"};
	char cwd[PATH_MAX];
	struct rd_tree *t;
	struct rd_err err;
	struct walk w;
	int i, fds = count_fds(), dfd;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	walk(&w, src, 2, RD_TREE_RECURSIVE | RD_TREE_RELATIVE);
	/* implied: src, src/sub (no listing: src/a.txt not sent), then the item */
	assert_true(find(&w, "src", 0) >= 0 && find(&w, "src/sub", 0) > find(&w, "src", 0));
	assert_int_equal(w.e[find(&w, "src", 0)].type, RD_FT_DIR);
	assert_true(find(&w, "src/sub/deep", 0) > find(&w, "src/sub", 0));
	check_file(&w, "src/sub/deep/f", "abc");
	assert_int_equal(find(&w, "src/a.txt", 0), -1);
	assert_int_equal(find(&w, "src/sub/g", 0), -1);
	/* the second source: base "src", sent as sub/g with sub implied */
	assert_true(find(&w, "sub", 0) >= 0);
	check_file(&w, "sub/g", "gg");
	check_nesting(&w);
	walk_free(&w);
	rd_err_clear(&err);
	assert_int_equal(rd_tree_open_paths(&t, bad, 1, RD_TREE_RELATIVE, &err), -RD_EUSAGE);
	assert_non_null(strstr(err.msg, ".."));
	assert_int_equal(chdir(cwd), 0);

	/* --files-from: names beneath a base; a directory without -r: itself only */
	dfd = open(bp("src"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(
	    rd_tree_open_names(&t, dfd, names, 3, RD_TREE_RELATIVE | RD_TREE_DIRS, &err), 0);
	close(dfd);
	memset(&w, 0, sizeof(w));
	for (;;) {
		w.e = realloc(w.e, (w.n + 1) * sizeof(*w.e));
		w.kind = realloc(w.kind, (w.n + 1) * sizeof(*w.kind));
		w.msg = realloc(w.msg, (w.n + 1) * sizeof(*w.msg));
		assert_true(w.e && w.kind && w.msg);
		i = rd_tree_next(t, &w.e[w.n]);
		assert_true(i >= 0);
		if (i == RD_TREE_END)
			break;
		w.kind[w.n] = i;
		w.msg[w.n] = NULL;
		w.n++;
	}
	rd_tree_close(t);
	check_file(&w, "sub/g", "gg");
	check_file(&w, "a.txt", "hello");
	assert_true(find(&w, "sub/deep", 0) >= 0);
	assert_int_equal(find(&w, "sub/deep/f", 0), -1);
	assert_int_equal(find(&w, "g", 0), -1);
	walk_free(&w);
	assert_int_equal(count_fds(), fds);
}

/*
 * Issue 7 item 1: a local user swaps "x" and a symlink to a secret
 * outside the source (renameat2 RENAME_EXCHANGE) as fast as it can while
 * the sender opens x and walks the directory: not one byte of the secret
 * may come out.
 */
static atomic_int swap_stop; /* read by the swapper thread (TSan) */

static void *swapper(void *arg)
{
	int dfd = *(int *)arg;

	while (!__atomic_load_n(&swap_stop, __ATOMIC_ACQUIRE))
		syscall(SYS_renameat2, dfd, "x", dfd, "y", 2 /* RENAME_EXCHANGE */);
	return NULL;
}

static void test_tree_swap_never_leaks(void **state)
{
	struct rd_tree_src src;
	struct rd_tree_entry e;
	struct rd_tree *t;
	struct rd_err err;
	char buf[64], target[PATH_MAX];
	pthread_t th;
	int dfd, r, i, nfile = 0, nlink = 0;
	ssize_t n;

	mk("swap");
	put("swap/x", "public");
	put("swap-secret", "SECRET");
	snprintf(target, sizeof(target), "%s/swap-secret", base);
	ln(target, "swap/y");
	dfd = open(bp("swap"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	__atomic_store_n(&swap_stop, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&th, NULL, swapper, &dfd), 0);
	for (i = 0; i < 4000; i++) {
		memset(&src, 0, sizeof(src));
		src.dirfd = dfd;
		src.name = (i & 1) ? "x" : NULL; /* one file, or the whole directory */
		src.wire = (i & 1) ? NULL : "swap";
		assert_int_equal(rd_tree_open(&t, &src, 1, RD_TREE_RECURSIVE, &err), 0);
		while ((r = rd_tree_next(t, &e)) > 0) {
			if (e.fd < 0) {
				nlink += e.type == RD_FT_SYMLINK;
				continue;
			}
			n = pread(e.fd, buf, sizeof(buf), 0);
			close(e.fd);
			assert_true(n >= 0);
			assert_null(memmem(buf, (size_t)n, "SECRET", 6));
			nfile++;
		}
		assert_int_equal(r, RD_TREE_END);
		rd_tree_close(t);
	}
	__atomic_store_n(&swap_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	close(dfd);
	/* the race really ran: x was seen both as the file and as the link */
	assert_true(nfile > 0);
	assert_true(nlink > 0);
	rm_rf(bp("swap"));
	unlink(bp("swap-secret"));
}

#ifndef RD_TREE_OPEN_DIRS
#define RD_TREE_OPEN_DIRS 16 /* (to build this test against a tree without the bound) */
#endif
#define DEEP 120

/* deep/ and DEEP levels of s/ below it, ten files f0..f9 in each. */
static void make_deep(void)
{
	char rel[PATH_MAX] = "deep", f[PATH_MAX];
	int i, k;

	for (i = 0; i <= DEEP; i++) {
		mk(rel);
		for (k = 0; k < 10; k++) {
			snprintf(f, sizeof(f), "%s/f%d", rel, k);
			put(f, "x");
		}
		strcat(rel, "/s");
	}
}

/*
 * Walk deep/ and count: each level's files once, each directory once and
 * its POST once, descriptors (with the entry's own) never more than the
 * bound above what was open before. move_at: at that depth, move level
 * 30 (with what is below it, the walk's current place) out of the source.
 */
static void walk_deep(int move_at, unsigned flags)
{
	const char *src[1];
	char seen[DEEP + 1][10], from[PATH_MAX], to[PATH_MAX];
	struct rd_tree *t;
	struct rd_tree_entry e;
	struct rd_err err;
	int base_fds, peak = 0, n, r, lvl, k, dirs = 0, posts = 0, moved = 0, i;
	const char *p;

	memset(seen, 0, sizeof(seen));
	src[0] = bp("deep");
	base_fds = count_fds();
	assert_int_equal(rd_tree_open_paths(&t, src, 1, RD_TREE_RECURSIVE | flags, &err), 0);
	while ((r = rd_tree_next(t, &e)) > 0) {
		assert_int_equal(r, RD_TREE_ENTRY);
		n = count_fds();
		if (n > peak)
			peak = n;
		for (lvl = 0, p = e.path; (p = strstr(p, "/s")) && (p[2] == '/' || !p[2]); p += 2)
			lvl++;
		if (e.type == RD_FT_REG) {
			close(e.fd);
			p = strrchr(e.path, '/');
			assert_non_null(p);
			assert_true(p[1] == 'f' && p[2] >= '0' && p[2] <= '9' && !p[3]);
			k = p[2] - '0';
			assert_true(lvl <= DEEP);
			seen[lvl][k]++;
		} else {
			assert_int_equal(e.type, RD_FT_DIR);
			if (e.flags & RD_FF_POST)
				posts++;
			else
				dirs++;
		}
		if (move_at && !moved && e.type == RD_FT_DIR && !(e.flags & RD_FF_POST) &&
		    lvl == move_at) {
			snprintf(from, sizeof(from), "deep");
			for (i = 0; i < 30; i++)
				strcat(from, "/s");
			snprintf(to, sizeof(to), "%s", bp("moved-away"));
			assert_int_equal(rename(bp(from), to), 0);
			moved = 1;
		}
	}
	assert_int_equal(r, RD_TREE_END);
	rd_tree_close(t);
	assert_int_equal(count_fds(), base_fds);
	/* the count itself opens /proc/self/fd: one more than the walk's */
	assert_true(peak - 1 - base_fds <= RD_TREE_OPEN_DIRS + 1);
	for (lvl = 0; lvl <= DEEP; lvl++)
		for (k = 0; k < 10; k++)
			assert_int_equal(seen[lvl][k], 1);
	assert_int_equal(dirs, DEEP + 1);
	assert_int_equal(posts, DEEP + 1);
	if (move_at)
		assert_true(moved);
}

/*
 * Issue 27 item 2: a tree 120 levels deep is walked with at most
 * RD_TREE_OPEN_DIRS directories open (not one per level), every entry
 * exactly once; the same when the walk's current subtree is moved out of
 * the source on the way (its ancestors are found again by name).
 */
static void test_tree_deep_bounded_fds(void **state)
{
	char from[PATH_MAX];
	int i;

	(void)state;
	make_deep();
	walk_deep(0, 0);
	walk_deep(50, 0);
	/* put it back together for the next test */
	snprintf(from, sizeof(from), "deep");
	for (i = 0; i < 30; i++)
		strcat(from, "/s");
	assert_int_equal(rename(bp("moved-away"), bp(from)), 0);
	/*
	 * -L, level 3 a symlink to where that level really is: ".." from
	 * below it leads elsewhere, and the names lead through the link.
	 */
	snprintf(from, sizeof(from), "deep/s/s/s");
	assert_int_equal(rename(bp(from), bp("deep-real")), 0);
	ln(bp("deep-real"), from);
	walk_deep(0, RD_TREE_COPY_LINKS);
	assert_int_equal(unlink(bp(from)), 0);
	assert_int_equal(rename(bp("deep-real"), bp(from)), 0);
	rm_rf(bp("deep"));
}

/* --- issue 27 --- */

/*
 * Item 16: rdcp's partials, their records (in a --partial-dir too) and
 * its temporaries are never listed nor sent, whoever left them: not in a
 * walk, not when named as a source.
 */
static void test_tree_skips_partials(void **state)
{
	char a[PATH_MAX], b[PATH_MAX];
	const char *src[] = {a}, *named[] = {b};
	struct rd_tree_src fsrc;
	struct rd_tree_entry e;
	struct rd_tree *t;
	struct rd_err err;
	struct walk w;
	int i, dfd;

	snprintf(a, sizeof(a), "%s", bp("src"));
	snprintf(b, sizeof(b), "%s", bp("src/.rdcp-partial.big"));
	put("src/.rdcp-partial.big", "someone's partial");
	put("src/.rdcp-partial.big.rec", "its record");
	put("src/.rdcp-partial.big.rec.new", "its next record");
	mk("src/.part");
	put("src/.part/.rdcp-partial.x", "in a partial dir");
	put("src/.part/.rdcp-partial.x.rec", "its record");
	put("src/.rdcp.tmp.0123456789abcdef", "a temporary");
	put("src/.rdcp.conf", "an ordinary file");
	walk(&w, src, 1, RD_TREE_RECURSIVE);
	for (i = 0; i < w.n; i++) {
		assert_null(strstr(w.e[i].path, "rdcp-partial"));
		assert_null(strstr(w.e[i].path, "0123456789abcdef"));
		assert_true(!w.msg[i] || !strstr(w.msg[i], "rdcp-partial"));
	}
	assert_true(find(&w, "src/.part", 0) >= 0); /* the directory, now empty */
	check_file(&w, "src/.rdcp.conf", "an ordinary file");
	walk_free(&w);
	/* named on a command line (the ssh-started half's), or by a daemon's pull */
	walk(&w, named, 1, 0);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.kind[0], RD_TREE_SKIP);
	assert_non_null(strstr(w.msg[0], "partial"));
	walk_free(&w);
	dfd = open(bp("src"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	memset(&fsrc, 0, sizeof(fsrc));
	fsrc.dirfd = dfd;
	fsrc.name = ".rdcp-partial.big.rec";
	assert_int_equal(rd_tree_open(&t, &fsrc, 1, 0, &err), 0);
	close(dfd);
	assert_int_equal(rd_tree_next(t, &e), RD_TREE_SKIP);
	assert_int_equal(e.fd, -1);
	assert_int_equal(rd_tree_next(t, &e), RD_TREE_END);
	rd_tree_close(t);
}

#define LT_DEPTH  14   /* directories of 250-byte names: wire paths of about 3.5 KiB */
#define LT_FILES  5000 /* 17.5 MiB of open groups */
#define LT_BUDGET (4u << 20)
/*
 * The table's share of the peak RSS may be at most its budget plus the
 * walk's own; ASan's redzones and quarantine add some, and TSan's shadow
 * memory several times the heap: there only the count of remembered
 * groups is checked (below).
 */
#if defined(RDCP_TSAN)
#define LT_RSS_MAX_KIB LONG_MAX
#elif defined(RDCP_ASAN)
#define LT_RSS_MAX_KIB (12L << 10)
#else
#define LT_RSS_MAX_KIB (8L << 10)
#endif

/*
 * Item 11: the sender's table of open link groups is bounded by bytes,
 * not by count: 5,000 files with 3.5 KiB wire paths, each linked once
 * more outside the walk (so no group ever closes), cost at most the
 * table's budget (4 MiB here; 32 MiB by default). The old table, bounded
 * only at 65,536 groups, took 18 MiB for these (and 228 MiB for 70,000).
 * Peak RSS over the walk, measured from a reset of VmHWM.
 */
static void test_tree_link_table_memory(void **state)
{
	char name[256], f[16], deep[PATH_MAX];
	const char *src[] = {deep};
	struct rd_tree_entry e;
	struct rd_tree *t;
	struct rd_err err;
	long base_kib, grew;
	int dfd, ofd, fd, i, r, linked = 0, links = 0;

	memset(name, 'd', 250);
	name[250] = '\0';
	mk("lt");
	mk("other");
	snprintf(deep, sizeof(deep), "%s", bp("lt"));
	dfd = open(deep, O_RDONLY | O_DIRECTORY);
	for (i = 0; i < LT_DEPTH; i++) {
		assert_int_equal(mkdirat(dfd, name, 0755), 0);
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY);
		assert_true(fd >= 0);
		close(dfd);
		dfd = fd;
	}
	ofd = open(bp("other"), O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0 && ofd >= 0);
	for (i = 0; i < LT_FILES; i++) {
		snprintf(f, sizeof(f), "f%05d", i);
		fd = openat(dfd, f, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(linkat(dfd, f, ofd, f, 0), 0);
	}
	close(dfd);
	close(ofd);

	base_kib = rd_test_peak_reset();
	assert_int_equal(
	    rd_tree_open_paths(&t, src, 1, RD_TREE_RECURSIVE | RD_TREE_HARDLINKS, &err), 0);
	rd_tree_set_link_table(t, LT_BUDGET);
	while ((r = rd_tree_next(t, &e)) > 0) {
		if (e.fd >= 0)
			close(e.fd);
		links += e.type == RD_FT_HLINK;
		linked += !!(e.flags & RD_FF_LINKED);
	}
	assert_int_equal(r, RD_TREE_END);
	grew = rd_test_peak_growth(base_kib);
	rd_tree_close(t);
	print_message("%d files of %d start remembered groups; peak RSS grew %ld KiB\n", linked,
		      LT_FILES, grew);
	assert_true(grew < LT_RSS_MAX_KIB);
	assert_int_equal(links, 0);
	/* each remembered group holds its 3.5 KiB path: 4 MiB hold fewer than 1,200 */
	assert_true(linked > 500 && linked <= (int)(LT_BUDGET / (LT_DEPTH * 251)));
}

/* Item 11: a group's first file says it starts one, its last link that it ends it. */
static void test_tree_link_flags(void **state)
{
	char root[PATH_MAX];
	const char *src[] = {root};
	struct walk w;
	int x, y, z;

	snprintf(root, sizeof(root), "%s", bp("g"));
	mk("g");
	put("g/x", "x");
	assert_int_equal(link(bp("g/x"), bp("g/y")), 0);
	assert_int_equal(link(bp("g/x"), bp("g/z")), 0);
	walk(&w, src, 1, RD_TREE_RECURSIVE | RD_TREE_HARDLINKS);
	x = find(&w, "g/x", 0);
	y = find(&w, "g/y", 0);
	z = find(&w, "g/z", 0);
	assert_true(x >= 0 && y >= 0 && z >= 0);
	/* readdir's order: whichever comes first starts the group */
	if (y < x) {
		int t = x;

		x = y;
		y = t;
	}
	if (z < x) {
		int t = x;

		x = z;
		z = t;
	}
	if (z < y) {
		int t = y;

		y = z;
		z = t;
	}
	assert_int_equal(w.e[x].type, RD_FT_REG);
	assert_int_equal(w.e[x].flags & (RD_FF_LINKED | RD_FF_LINK_LAST), RD_FF_LINKED);
	assert_int_equal(w.e[y].type, RD_FT_HLINK);
	assert_int_equal(w.e[y].flags & (RD_FF_LINKED | RD_FF_LINK_LAST), 0);
	assert_int_equal(w.e[z].type, RD_FT_HLINK);
	assert_int_equal(w.e[z].flags & (RD_FF_LINKED | RD_FF_LINK_LAST), RD_FF_LINK_LAST);
	walk_free(&w);
}

/*
 * Lazy opening: regular files are not opened by the walk; an entry holds
 * its directory (shared per directory) and is opened by rd_tree_open_seen
 * only as the walk saw it. Held directories are bounded: past
 * RD_TREE_HELD_DIRS the walk opens files as before.
 */
static void test_tree_lazy_held_bounded(void **state)
{
	enum { NDIRS = 40 };
	static struct rd_tree_entry ents[NDIRS * 3 + 4];
	const char *src[1];
	struct rd_tree *t = NULL;
	struct rd_err err;
	char rel[64], buf[64];
	int fds, i, r, n = 0, lazy = 0, eager = 0, fd, first = -1;
	ssize_t got;

	mk("lz");
	for (i = 0; i < NDIRS; i++) {
		snprintf(rel, sizeof(rel), "lz/d%02d", i);
		mk(rel);
		snprintf(rel, sizeof(rel), "lz/d%02d/f", i);
		put(rel, "lazy data");
	}
	src[0] = bp("lz");
	fds = count_fds();
	assert_int_equal(rd_tree_open_paths(&t, src, 1, RD_TREE_RECURSIVE, &err), 0);
	rd_tree_set_lazy(t, 1);
	while ((r = rd_tree_next(t, &ents[n])) > 0) {
		assert_int_equal(r, RD_TREE_ENTRY);
		if (ents[n].type == RD_FT_REG && ents[n].lazy) {
			assert_int_equal(ents[n].fd, -1);
			assert_non_null(ents[n].dir);
			assert_int_equal(ents[n].size, 9);
			if (first < 0)
				first = n;
			lazy++;
		} else if (ents[n].type == RD_FT_REG) {
			assert_true(ents[n].fd >= 0); /* past the bound: opened while walking */
			assert_null(ents[n].dir);
			eager++;
		}
		n++;
		assert_true(n < (int)(sizeof(ents) / sizeof(ents[0])));
		/* the walk's levels, held directories, the eager files so far */
		assert_true(count_fds() <= fds + RD_TREE_OPEN_DIRS + RD_TREE_HELD_DIRS + eager);
	}
	assert_int_equal(r, RD_TREE_END);
	/* every entry kept (as a window would): one directory each */
	assert_int_equal(lazy, RD_TREE_HELD_DIRS);
	assert_int_equal(eager, NDIRS - RD_TREE_HELD_DIRS);
	/* the handles outlive the tree */
	rd_tree_close(t);
	assert_true(first >= 0);
	assert_int_equal(
	    rd_tree_open_seen(ents[first].dir, ents[first].pname, &ents[first].seen, &fd, &err), 0);
	got = pread(fd, buf, sizeof(buf), 0);
	assert_int_equal(got, 9);
	assert_memory_equal(buf, "lazy data", 9);
	close(fd);
	/* a symlink swapped in between walk and open is refused, not followed */
	snprintf(rel, sizeof(rel), "%s", ents[first].path); /* "lz/dNN/f" */
	assert_int_equal(unlink(bp(rel)), 0);
	put("lzsecret", "lazy data");
	ln(bp("lzsecret"), rel);
	assert_int_equal(
	    rd_tree_open_seen(ents[first].dir, ents[first].pname, &ents[first].seen, &fd, &err),
	    -RD_ESYS);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(err.msg, "changed while walking"));
	/* the same name, another file: refused too */
	assert_int_equal(unlink(bp(rel)), 0);
	put(rel, "lazy data, longer");
	assert_int_equal(
	    rd_tree_open_seen(ents[first].dir, ents[first].pname, &ents[first].seen, &fd, &err),
	    -RD_ESYS);
	/* gone: vanished */
	assert_int_equal(unlink(bp(rel)), 0);
	assert_int_equal(
	    rd_tree_open_seen(ents[first].dir, ents[first].pname, &ents[first].seen, &fd, &err),
	    -RD_EVANISHED);
	for (i = 0; i < n; i++) {
		rd_tree_dir_put(ents[i].dir);
		if (ents[i].fd >= 0)
			close(ents[i].fd);
	}
	assert_int_equal(count_fds(), fds);
	rm_rf(bp("lz"));
	assert_int_equal(unlink(bp("lzsecret")), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tree_full_walk),
	    cmocka_unit_test(test_tree_dir_needs_recursive),
	    cmocka_unit_test(test_tree_symlink_source_followed),
	    cmocka_unit_test(test_tree_root_names),
	    cmocka_unit_test(test_tree_unreadable),
	    cmocka_unit_test(test_tree_name_too_long),
	    cmocka_unit_test(test_tree_vanished),
	    cmocka_unit_test(test_tree_copy_links),
	    cmocka_unit_test(test_tree_close_midway_no_leak),
	    cmocka_unit_test(test_tree_fd_sources),
	    cmocka_unit_test(test_tree_relative),
	    cmocka_unit_test(test_tree_swap_never_leaks),
	    cmocka_unit_test(test_tree_deep_bounded_fds),
	    cmocka_unit_test(test_tree_skips_partials),
	    cmocka_unit_test(test_tree_link_table_memory),
	    cmocka_unit_test(test_tree_link_flags),
	    cmocka_unit_test(test_tree_list_level),
	    cmocka_unit_test(test_tree_lazy_held_bounded),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
