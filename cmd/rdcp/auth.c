// SPDX-License-Identifier: MIT
/*
 * How rdcp proves itself to a daemon: the TLS client settings from the
 * operand's user, --password-file / RDCP_PASSWORD, --ca, --cert, --key.
 * The secret never comes from the command line (ps would show it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cmd/rdcp/rdcp.h"

#define SECRET_MAX 256

/* The first line of path: a regular file nobody else may read (like rsync). */
static int read_secret_file(const char *path, char *buf, size_t cap, size_t *len, char *msg,
			    size_t msglen)
{
	struct stat st;
	ssize_t n;
	int fd, ret = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(msg, msglen, "--password-file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(msg, msglen, "--password-file %s: not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(msg, msglen,
			 "--password-file %s: others can read it (mode %04o); chmod 600 it",
			 path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	n = read(fd, buf, cap - 1);
	if (n < 0) {
		snprintf(msg, msglen, "--password-file %s: %s", path, strerror(errno));
		goto out;
	}
	buf[n] = '\0';
	*len = strcspn(buf, "\r\n");
	if (!*len) {
		snprintf(msg, msglen, "--password-file %s: the first line is empty", path);
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

int rdcp_tls_client(const struct rdcp_opts *o, const char *user, const char *host,
		    struct rd_tls_cfg *cfg, char *msg, size_t msglen)
{
	char secret[SECRET_MAX + 2];
	const char *env = getenv("RDCP_PASSWORD");
	size_t len = 0;
	int ret = -1;

	memset(cfg, 0, sizeof(*cfg));
	cfg->role = RD_TLS_CLIENT;
	cfg->host = host;
	cfg->ca_file = o->ca;
	cfg->cert_file = o->cert;
	cfg->key_file = o->key ? o->key : o->cert;
	if (o->key && !o->cert) {
		snprintf(msg, msglen, "--key needs --cert");
		return -1;
	}
	if (user && user[0]) {
		cfg->auth = RD_AUTH_USER;
		cfg->user = user;
		if (o->password_file) {
			if (read_secret_file(o->password_file, secret, sizeof(secret), &len, msg,
					     msglen))
				goto out;
		} else if (env && env[0]) {
			len = strlen(env);
			if (len > SECRET_MAX) {
				snprintf(msg, msglen, "RDCP_PASSWORD is longer than %d bytes",
					 SECRET_MAX);
				goto out;
			}
			memcpy(secret, env, len);
		} else {
			snprintf(msg, msglen,
				 "%s@%s: give %s's secret with --password-file FILE or in "
				 "RDCP_PASSWORD",
				 user, host, user);
			goto out;
		}
		if (len > SECRET_MAX) {
			snprintf(msg, msglen, "the secret is longer than %d bytes", SECRET_MAX);
			goto out;
		}
		if (rd_tls_psk_user(user, secret, len, cfg->psk)) {
			snprintf(msg, msglen, "cannot derive the key for user %s", user);
			goto out;
		}
	} else if (o->cert || o->ca) {
		cfg->auth = RD_AUTH_CERT;
	} else {
		if (o->password_file) {
			snprintf(msg, msglen,
				 "--password-file needs a user: USER@HOST::MODULE/PATH");
			goto out;
		}
		cfg->auth = RD_AUTH_ANON;
	}
	ret = 0;
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	return ret;
}
