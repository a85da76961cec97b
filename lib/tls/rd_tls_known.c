// SPDX-License-Identifier: MIT
/*
 * The client's pins of daemons' keys (rd_known_hosts_check in rd_tls.h):
 * trust on first use, as ssh's known_hosts with StrictHostKeyChecking
 * accept-new. A name seen for the first time is pinned to the key it
 * showed; from then on only that key is accepted for it. A file the
 * client may not write (one an administrator hands out) pins what it
 * lists and accepts nothing new.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/tls/rd_tls.h"

#define KNOWN_FILE_MAX (1u << 20)

/* The line of name in text: its key into key, the line number; 0 if none. */
static unsigned find(const char *text, size_t len, const char *name, char *key, size_t cap)
{
	const char *p = text, *end = text + len, *nl, *sp;
	size_t nlen = strlen(name), klen;
	unsigned line = 0;

	for (; p < end; p = nl + 1) {
		line++;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (*p == '#' || (size_t)(nl - p) <= nlen + 1 || memcmp(p, name, nlen) ||
		    p[nlen] != ' ')
			continue;
		sp = p + nlen + 1;
		klen = (size_t)(nl - sp);
		while (klen && (sp[klen - 1] == '\r' || sp[klen - 1] == ' '))
			klen--;
		snprintf(key, cap, "%.*s", (int)klen, sp);
		return line;
	}
	return 0;
}

int rd_known_hosts_check(const char *path, const char *name, const char *fp, int *added,
			 struct rd_err *err)
{
	char dir[PATH_MAX], pinned[RD_TLS_FP_MAX + 8], entry[512];
	char *text = NULL;
	size_t len = 0;
	unsigned line;
	ssize_t r;
	int fd, rw = 1, ret = 0;

	*added = 0;
	if (strchr(name, ' ') || strchr(name, '\n') || strlen(name) > 300)
		return rd_err_set(err, RD_EUSAGE, 0, "%s: not a host name to pin", name);
	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0700) < 0 && errno != EEXIST && errno != EROFS && errno != EACCES)
		return rd_err_set(err, RD_ESYS, errno, "%s", dir);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
		rw = 0;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return rd_err_set(err, RD_ESYS, errno, "known hosts %s", path);
	if (flock(fd, rw ? LOCK_EX : LOCK_SH) < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "known hosts %s: lock", path);
		goto out;
	}
	text = malloc(KNOWN_FILE_MAX + 1);
	if (!text) {
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "known hosts %s", path);
		goto out;
	}
	while (len <= KNOWN_FILE_MAX && (r = read(fd, text + len, KNOWN_FILE_MAX + 1 - len)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = rd_err_set(err, RD_ESYS, errno, "known hosts %s", path);
			goto out;
		}
		len += (size_t)r;
	}
	if (len > KNOWN_FILE_MAX) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "known hosts %s: larger than %u bytes", path,
				 KNOWN_FILE_MAX);
		goto out;
	}
	line = find(text, len, name, pinned, sizeof(pinned));
	if (line && !strcmp(pinned, fp))
		goto out;
	if (line) {
		ret = rd_err_set(err, RD_EAUTH, 0,
				 "%s showed the key %s, but %s:%u pins %s for it: someone may be "
				 "impersonating %s (if its key was changed on purpose, remove that "
				 "line)",
				 name, fp, path, line, pinned, name);
		goto out;
	}
	if (!rw) {
		ret = rd_err_set(err, RD_EAUTH, 0,
				 "%s showed the key %s, which %s does not list (and it cannot "
				 "be written)",
				 name, fp, path);
		goto out;
	}
	snprintf(entry, sizeof(entry), "%s%s %s\n", len && text[len - 1] != '\n' ? "\n" : "", name,
		 fp);
	if (lseek(fd, 0, SEEK_END) < 0 || write(fd, entry, strlen(entry)) != (ssize_t)strlen(entry))
		ret = rd_err_set(err, RD_ESYS, errno, "known hosts %s: cannot add %s", path, name);
	else
		*added = 1;
out:
	free(text);
	close(fd);
	return ret;
}
