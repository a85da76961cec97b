// SPDX-License-Identifier: MIT
/*
 * How rdcp proves itself to a daemon: the TLS client settings from the
 * operand's user, --password-file / RDCP_PASSWORD, --ca, --cert, --key,
 * --known-hosts. The secret never comes from the command line (ps would
 * show it) and never leaves this process: a password login proves it
 * inside TLS, to a daemon whose key was checked first (lib/tls/rd_tls.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/proto/rd_proto.h"

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

/* The pin store of password logins: --known-hosts, or ~/.rdcp/known_hosts. */
struct pin_ctx {
	char path[PATH_MAX];
	char name[320]; /* "host", or "[host]:port" off the default port */
	int quiet;
};

static struct pin_ctx g_pin; /* one daemon per rdcp */

static int pin_check(void *ctx, const char *fp, struct rd_err *err)
{
	struct pin_ctx *p = ctx;
	int added = 0, ret;

	ret = rd_known_hosts_check(p->path, p->name, fp, &added, err);
	if (!ret && added && !p->quiet)
		fprintf(stderr,
			"rdcp: %s: first contact; its key %s is now pinned in %s (every later "
			"login there checks it)\n",
			p->name, fp, p->path);
	return ret;
}

static int pin_setup(const struct rdcp_opts *o, const char *host, const char *port,
		     struct rd_tls_cfg *cfg, char *msg, size_t msglen)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (o->known_hosts) {
		snprintf(g_pin.path, sizeof(g_pin.path), "%s", o->known_hosts);
	} else {
		if (!home || !home[0]) {
			pw = getpwuid(getuid());
			home = pw ? pw->pw_dir : NULL;
		}
		if (!home) {
			snprintf(msg, msglen,
				 "no home directory for ~/.rdcp/known_hosts: give "
				 "--known-hosts FILE");
			return -1;
		}
		snprintf(g_pin.path, sizeof(g_pin.path), "%s/.rdcp/known_hosts", home);
	}
	if (!port[0] || atoi(port) == RD_DEFAULT_PORT)
		snprintf(g_pin.name, sizeof(g_pin.name), "%s", host);
	else
		snprintf(g_pin.name, sizeof(g_pin.name), "[%s]:%s", host, port);
	g_pin.quiet = o->quiet;
	cfg->pin = pin_check;
	cfg->pin_ctx = &g_pin;
	return 0;
}

int rdcp_tls_client(const struct rdcp_opts *o, const char *user, const char *host, const char *port,
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
		/* once, before connecting: reconnects (--retries) reuse it */
		if (strlen(user) > RD_TLS_USER_MAX ||
		    rd_tls_login_key(user, secret, len, cfg->login_key)) {
			snprintf(msg, msglen, "cannot derive the login key for user %s", user);
			goto out;
		}
		if (!o->ca && pin_setup(o, host, port, cfg, msg, msglen))
			goto out;
	} else if (o->cert || o->ca) {
		if (o->known_hosts) {
			snprintf(msg, msglen,
				 "--known-hosts is for USER@HOST:: logins (with a "
				 "password); --ca checks this daemon");
			goto out;
		}
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
