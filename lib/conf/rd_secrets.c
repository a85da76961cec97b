// SPDX-License-Identifier: MIT
/*
 * The secrets file: "user:secret" lines, '#' comments and blank lines.
 * Strict like rsync's "strict modes": a regular file (a symlink is
 * refused), owned by the daemon's user, no group or other permission
 * bits. The secret is everything after the first ':' up to the end of
 * the line (a trailing CR dropped), so it may contain ':' and blanks.
 * Secrets live in one buffer that is cleansed (OPENSSL_cleanse) when
 * freed; the file's text is cleansed as soon as it is parsed. No message
 * ever quotes a secret or a line that might hold one.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/conf/rd_conf_priv.h"

struct rd_secret_ent {
	char user[RD_CONF_NAME_MAX + 1];
	size_t off, len; /* into blob */
};

struct rd_secrets {
	struct rd_secret_ent *e;
	int n;
	uint8_t *blob;
	size_t cap;
};

static void problem(struct rd_conf *c, struct rd_err *err, const char *path, unsigned line,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void problem(struct rd_conf *c, struct rd_err *err, const char *path, unsigned line,
		    const char *fmt, ...)
{
	char msg[RD_CONF_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rd_conf_report(c, path, line, RD_CONF_ERROR, "%s", msg);
	if (err && !err->status) {
		if (line)
			rd_err_set(err, RD_EAUTH, 0, "%s:%u: %s", path, line, msg);
		else
			rd_err_set(err, RD_EAUTH, 0, "%s: %s", path, msg);
	}
}

void rd_secrets_free(struct rd_secrets *s)
{
	if (!s)
		return;
	if (s->blob) {
		OPENSSL_cleanse(s->blob, s->cap);
		free(s->blob);
	}
	if (s->e) {
		OPENSSL_cleanse(s->e, (size_t)s->n * sizeof(*s->e));
		free(s->e);
	}
	free(s);
}

static int user_ok(const char *u, size_t n)
{
	size_t i;

	if (!n || n > RD_CONF_NAME_MAX || u[0] == '-')
		return 0;
	for (i = 0; i < n; i++) {
		if (!((u[i] >= 'a' && u[i] <= 'z') || (u[i] >= 'A' && u[i] <= 'Z') ||
		      (u[i] >= '0' && u[i] <= '9') || u[i] == '.' || u[i] == '_' || u[i] == '-'))
			return 0;
	}
	return 1;
}

/* One line (no '\n'); adds an entry or reports. Returns 0 or -1. */
static int parse_line(struct rd_secrets *s, const char *p, size_t n, const char *path,
		      unsigned line, struct rd_conf *c, struct rd_err *err)
{
	const char *colon;
	struct rd_secret_ent *e;
	size_t ulen, i;
	int k;

	if (n && p[n - 1] == '\r')
		n--;
	for (i = 0; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	if (i == n || p[i] == '#')
		return 0;
	if (memchr(p, '\0', n)) {
		problem(c, err, path, line, "NUL byte in the line");
		return -1;
	}
	colon = memchr(p, ':', n);
	if (!colon) {
		problem(c, err, path, line, "expected 'user:secret'");
		return -1;
	}
	ulen = (size_t)(colon - p);
	if (!user_ok(p, ulen)) {
		problem(c, err, path, line, "the user name before ':' is not a valid name");
		return -1;
	}
	if (colon + 1 == p + n) {
		problem(c, err, path, line, "empty secret");
		return -1;
	}
	if ((size_t)(p + n - colon - 1) > RD_SECRET_MAX) {
		problem(c, err, path, line, "secret longer than %d bytes", RD_SECRET_MAX);
		return -1;
	}
	for (k = 0; k < s->n; k++) {
		if (strlen(s->e[k].user) == ulen && !memcmp(s->e[k].user, p, ulen)) {
			problem(c, err, path, line, "user '%.*s' has a secret already", (int)ulen,
				p);
			return -1;
		}
	}
	if (s->n >= RD_SECRETS_USERS_MAX) {
		problem(c, err, path, line, "more than %d users", RD_SECRETS_USERS_MAX);
		return -1;
	}
	e = &s->e[s->n];
	memcpy(e->user, p, ulen);
	e->user[ulen] = '\0';
	e->off = s->n ? s->e[s->n - 1].off + s->e[s->n - 1].len : 0;
	e->len = (size_t)(p + n - colon - 1);
	memcpy(s->blob + e->off, colon + 1, e->len);
	s->n++;
	return 0;
}

static int check_file(int fd, const char *path, uid_t owner, struct rd_conf *c, struct rd_err *err)
{
	struct stat st;

	if (fstat(fd, &st)) {
		problem(c, err, path, 0, "fstat: %s", strerror(errno));
		return -RD_ESYS;
	}
	if (!S_ISREG(st.st_mode)) {
		problem(c, err, path, 0, "not a regular file");
		return -RD_EAUTH;
	}
	if (st.st_uid != owner) {
		problem(c, err, path, 0, "owned by uid %u, not by the daemon's user (uid %u)",
			(unsigned)st.st_uid, (unsigned)owner);
		return -RD_EAUTH;
	}
	if (st.st_mode & 077) {
		problem(c, err, path, 0,
			"mode %04o lets other users read or change it; make it 0600",
			(unsigned)(st.st_mode & 07777));
		return -RD_EAUTH;
	}
	if (st.st_size > (off_t)RD_SECRETS_FILE_MAX) {
		problem(c, err, path, 0, "larger than %u bytes", RD_SECRETS_FILE_MAX);
		return -RD_EAUTH;
	}
	return 0;
}

int rd_secrets_parse(struct rd_secrets **out, const char *name, const char *text, size_t len,
		     struct rd_conf *c, struct rd_err *err)
{
	struct rd_secrets *s = NULL;
	const char *p, *nl;
	unsigned line = 0;
	size_t n;
	int ret = -RD_ENOMEM;

	*out = NULL;
	if (len > RD_SECRETS_FILE_MAX) {
		problem(c, err, name, 0, "larger than %u bytes", RD_SECRETS_FILE_MAX);
		return -RD_EAUTH;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto oom;
	s->cap = len ? len : 1;
	s->blob = malloc(s->cap);
	s->e = calloc(RD_SECRETS_USERS_MAX, sizeof(*s->e));
	if (!s->blob || !s->e)
		goto oom;
	ret = 0;
	for (p = text; p < text + len; p = nl ? nl + 1 : text + len) {
		line++;
		nl = memchr(p, '\n', (size_t)(text + len - p));
		n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
		if (parse_line(s, p, n, name, line, c, err))
			ret = -RD_EAUTH;
	}
	if (!ret && !s->n) {
		problem(c, err, name, 0, "no 'user:secret' line");
		ret = -RD_EAUTH;
	}
	if (ret) {
		rd_secrets_free(s);
		return ret;
	}
	*out = s;
	return 0;
oom:
	problem(c, err, name, 0, "out of memory");
	rd_secrets_free(s);
	return ret;
}

int rd_secrets_load(struct rd_secrets **out, const char *path, uid_t owner, struct rd_conf *c,
		    struct rd_err *err)
{
	char *text = NULL;
	size_t len = 0;
	ssize_t r;
	int fd, ret;

	*out = NULL;
	rd_err_clear(err);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		problem(c, err, path, 0, "%s",
			errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return -RD_ESYS;
	}
	ret = check_file(fd, path, owner, c, err);
	if (ret)
		goto out;
	text = malloc(RD_SECRETS_FILE_MAX + 1);
	if (!text) {
		problem(c, err, path, 0, "out of memory");
		ret = -RD_ENOMEM;
		goto out;
	}
	/* Read to the bound + 1, in case the file grew since fstat. */
	while (len <= RD_SECRETS_FILE_MAX) {
		r = read(fd, text + len, RD_SECRETS_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			problem(c, err, path, 0, "read: %s", strerror(errno));
			ret = -RD_ESYS;
			goto out;
		}
		if (!r)
			break;
		len += (size_t)r;
	}
	ret = rd_secrets_parse(out, path, text, len, c, err);
out:
	if (text) {
		OPENSSL_cleanse(text, RD_SECRETS_FILE_MAX + 1);
		free(text);
	}
	close(fd);
	return ret;
}

int rd_secrets_find(const struct rd_secrets *s, const char *user, const uint8_t **secret,
		    size_t *len)
{
	int i, found = -1;

	/* every entry, found or not: the time does not say where a user is */
	for (i = 0; s && i < s->n; i++)
		if (!strcmp(s->e[i].user, user) && found < 0)
			found = i;
	if (found < 0)
		return -RD_ENOENT;
	*secret = s->blob + s->e[found].off;
	*len = s->e[found].len;
	return 0;
}

int rd_secrets_count(const struct rd_secrets *s)
{
	return s ? s->n : 0;
}
