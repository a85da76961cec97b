// SPDX-License-Identifier: MIT
/* The sink tests' fixture (sink_testutil.h). */
#include "lib/sink/sink_testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

static char pbuf[4][PATH_MAX];
static int pidx;

const char *tp(const struct fx *x, const char *rel)
{
	pidx = (pidx + 1) % 4;
	snprintf(pbuf[pidx], sizeof(pbuf[pidx]), "%s/%s", x->top, rel);
	return pbuf[pidx];
}

int count_fds(void)
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

/* Sorted, '|'-joined listing of a directory ("" if empty). */
void listing(const char *dir, char *out, size_t cap)
{
	struct dirent **names;
	int n, i;

	out[0] = '\0';
	n = scandir(dir, &names, NULL, alphasort);
	assert_true(n >= 0);
	for (i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			if (out[0])
				strncat(out, "|", cap - strlen(out) - 1);
			strncat(out, names[i]->d_name, cap - strlen(out) - 1);
		}
		free(names[i]);
	}
	free(names);
}

void expect_listing(const char *dir, const char *want)
{
	char got[4096];

	listing(dir, got, sizeof(got));
	assert_string_equal(got, want);
}

void put(const char *p, const char *content)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

void expect_content(const char *p, const char *want)
{
	char buf[4096];
	int fd = open(p, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, (ssize_t)strlen(want));
	assert_memory_equal(buf, want, (size_t)n);
}

int setup(void **state)
{
	const char *tmp = getenv("TEST_TMPDIR");
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	if (*state)
		x->extra = *(const unsigned *)*state;
	x->fds = count_fds();
	snprintf(x->top, sizeof(x->top), "%s/sink_test.XXXXXX", tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(x->top));
	assert_int_equal(mkdir(tp(x, "dest"), 0755), 0);
	assert_int_equal(mkdir(tp(x, "outside"), 0755), 0);
	x->top_fd = open(x->top, O_RDONLY | O_DIRECTORY);
	assert_true(x->top_fd >= 0);
	*state = x;
	return 0;
}

int teardown(void **state)
{
	struct fx *x = *state;
	char cmd[PATH_MAX + 32];

	umount2(tp(x, "small"), MNT_DETACH); /* if the ENOSPC test failed midway */
	close(x->top_fd);
	assert_int_equal(count_fds(), x->fds); /* nothing leaked */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->top);
	assert_int_equal(system(cmd), 0);
	free(x);
	return 0;
}

struct rd_sink *sopen(struct fx *x, const char *dest, unsigned flags)
{
	struct rd_sink *s;
	struct rd_err err;
	int ret;

	rd_err_clear(&err);
	ret = rd_sink_open(&s, x->top_fd, dest, flags | x->extra, rd_sink_process_umask(), &err);
	if (ret)
		print_error("rd_sink_open %s: %s\n", dest, err.msg);
	assert_int_equal(ret, 0);
	return s;
}

struct rd_sink_meta meta(uint32_t mode, uint64_t size)
{
	struct rd_sink_meta m = {.mode = mode, .size = size};

	m.mtime_sec = 1234567890;
	m.mtime_nsec = 123456789;
	return m;
}

static int place_file(struct rd_sink *s, const char *path, int root, const char *content,
		      uint32_t mode, int link_first)
{
	struct rd_sink_meta m = meta(S_IFREG | mode, strlen(content));
	struct rd_sink_file *f;
	int ret;

	ret = rd_sink_file_begin(s, path, strlen(path), root, &m, &f);
	if (ret < 0)
		return ret;
	if (link_first)
		rd_sink_file_link_first(f);
	ret = rd_sink_file_write(f, content, strlen(content), 0);
	if (ret < 0) {
		rd_sink_file_abort(f);
		return ret;
	}
	return rd_sink_file_commit(f, 0);
}

int put_file(struct rd_sink *s, const char *path, int root, const char *content, uint32_t mode)
{
	return place_file(s, path, root, content, mode, 0);
}

int put_group_file(struct rd_sink *s, const char *path, int root, const char *content)
{
	return place_file(s, path, root, content, 0644, 1);
}

int mk(struct rd_sink *s, const char *path, int root)
{
	struct rd_sink_meta m = meta(S_IFDIR | 0750, 0);

	return rd_sink_mkdir(s, path, strlen(path), root, &m);
}

int post(struct rd_sink *s, const char *path, int root)
{
	struct rd_sink_meta m = meta(S_IFDIR | 0750, 0);

	return rd_sink_dir_post(s, path, strlen(path), root, &m);
}
