// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD shim for tests: a source file that vanishes while rdcp walks
 * the tree, at a moment a test can rely on. With RDCP_VANISH=NAME in the
 * environment, the first fstatat() of an entry called NAME (the walk's
 * look at a name its directory listing gave) first unlinks it, so the
 * real call finds it gone, exactly as when another program removes a file
 * between readdir and stat. Nothing else changes. Never installed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*fstatat_fn)(int, const char *, struct stat *, int);

static int vanish(int dirfd, const char *path)
{
	static int done;
	const char *want = getenv("RDCP_VANISH");

	if (done || !want || !path || strcmp(path, want))
		return 0;
	done = 1;
	return unlinkat(dirfd, path, 0);
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	static fstatat_fn real;

	if (!real)
		real = (fstatat_fn)dlsym(RTLD_NEXT, "fstatat");
	vanish(dirfd, path);
	return real(dirfd, path, st, flags);
}

/* fstatat64 is fstatat on 64-bit glibc (the same symbol for rdcp's calls). */
