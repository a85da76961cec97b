// SPDX-License-Identifier: MIT
/* The status socket (rd_status.h): server thread and client. */
#include "lib/daemon/rd_status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAX	  64
#define IO_MS	  2000
#define CLIENT_MS 10000

struct rd_status_srv {
	int lfd;
	int wake[2];
	gid_t group;
	struct rd_act *a;
	pthread_t th;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static int sun_of(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -1;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

static void timeouts(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Root, our own user, or a member of group (primary or supplementary)? */
static int allowed(int fd, gid_t group, char *why, size_t len)
{
	gid_t small[256], *g = small;
	socklen_t glen = sizeof(small);
	struct ucred cr;
	socklen_t l = sizeof(cr);
	size_t i;
	int ok = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l)) {
		snprintf(why, len, "the caller's credentials cannot be read");
		return 0;
	}
	if (cr.uid == 0 || cr.uid == geteuid())
		return 1;
	if (group != (gid_t)-1) {
		if (cr.gid == group)
			return 1;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &glen) && errno == ERANGE) {
			g = malloc(glen);
			if (g && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &glen)) {
				free(g);
				g = NULL;
			}
		} else if (glen > sizeof(small)) {
			glen = 0;
		}
		for (i = 0; g && i < glen / sizeof(gid_t); i++)
			ok |= g[i] == group;
		if (g != small)
			free(g);
		if (ok)
			return 1;
	}
	snprintf(why, len,
		 "permission denied: uid %u is not root, rdcpd's user%s (rdcpd.conf: status group)",
		 (unsigned)cr.uid, group != (gid_t)-1 ? " or in the status group" : "");
	return 0;
}

/* One request: read it, check the caller, answer, close. */
static void serve(struct rd_status_srv *s, int fd)
{
	char req[REQ_MAX + 1], why[160], *page = NULL;
	size_t n = 0, len = 0;
	ssize_t r;
	FILE *f;
	int json;

	timeouts(fd, IO_MS);
	while (n < REQ_MAX && !memchr(req, '\n', n)) {
		r = recv(fd, req + n, REQ_MAX - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto out;
		n += (size_t)r;
	}
	req[n] = '\0';
	if (!allowed(fd, s->group, why, sizeof(why))) {
		write_all(fd, "ERR ", 4);
		write_all(fd, why, strlen(why));
		write_all(fd, "\n", 1);
		goto out;
	}
	if (strcmp(req, "STATUS 1 TEXT\n") && strcmp(req, "STATUS 1 JSON\n")) {
		write_all(fd, "ERR unknown request\n", 20);
		goto out;
	}
	json = !strcmp(req, "STATUS 1 JSON\n");
	f = open_memstream(&page, &len);
	if (!f || rd_act_status(s->a, f, json) || fclose(f)) {
		write_all(fd, "ERR out of memory\n", 18);
		goto out;
	}
	if (!write_all(fd, "OK\n", 3))
		write_all(fd, page, len);
out:
	free(page);
	close(fd);
}

static void *run(void *arg)
{
	struct rd_status_srv *s = arg;
	struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN},
			      {.fd = s->wake[0], .events = POLLIN}};
	int fd;

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			serve(s, fd);
	}
	return NULL;
}

/* An old socket at path: 1 when a daemon answers there, 0 when it is stale (removed), < 0. */
static int in_use(const char *path, struct rd_err *err)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, r;

	if (lstat(path, &st))
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return rd_err_set(err, RD_EUSAGE, 0, "status socket %s: exists and is not a socket",
				  path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sun_of(&sa, path))
		return rd_err_set(err, RD_ESYS, errno, "status socket %s", path);
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (!r)
		return 1;
	if (unlink(path) && errno != ENOENT)
		return rd_err_set(err, RD_ESYS, errno, "status socket %s: remove the stale one",
				  path);
	return 0;
}

int rd_status_start(struct rd_status_srv **out, const char *path, gid_t group, struct rd_act *a,
		    struct rd_err *err)
{
	struct rd_status_srv *s;
	struct sockaddr_un sa;
	char dir[PATH_MAX];
	struct stat st;
	char *slash;
	int ret;

	*out = NULL;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		rd_err_set(err, RD_ENOENT, 0,
			   "status socket %s: no directory %s, so no rdcpd --status (systemd's "
			   "RuntimeDirectory=rdcpd makes it)",
			   path, dir);
		return 1;
	}
	ret = in_use(path, err);
	if (ret < 0)
		return ret;
	if (ret) {
		rd_err_set(err, RD_EUSAGE, 0,
			   "status socket %s: another rdcpd answers there; this one has no "
			   "rdcpd --status",
			   path);
		return 1;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return rd_err_set(err, RD_ENOMEM, 0, "status socket: out of memory");
	s->lfd = s->wake[0] = s->wake[1] = -1;
	s->group = group;
	s->a = a;
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (sun_of(&sa, path)) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "status socket %s: path too long", path);
		goto fail;
	}
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = rd_err_set(err, RD_ESYS, errno, "status socket %s", path);
		goto fail;
	}
	if (chmod(path, 0660) || (group != (gid_t)-1 && chown(path, (uid_t)-1, group))) {
		ret = rd_err_set(err, RD_ESYS, errno, "status socket %s: mode 0660, group %u", path,
				 (unsigned)group);
		goto unlink;
	}
	if (listen(s->lfd, 8) || pipe2(s->wake, O_CLOEXEC)) {
		ret = rd_err_set(err, RD_ESYS, errno, "status socket %s", path);
		goto unlink;
	}
	if (pthread_create(&s->th, NULL, run, s)) {
		ret = rd_err_set(err, RD_ESYS, 0, "status socket %s: no thread", path);
		goto unlink;
	}
	*out = s;
	return 0;
unlink:
	unlink(path);
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	free(s);
	return ret;
}

void rd_status_stop(struct rd_status_srv *s)
{
	if (!s)
		return;
	if (write(s->wake[1], "x", 1) < 0) {
		/* the thread then waits for its next client: nothing better to do */
	}
	pthread_join(s->th, NULL);
	unlink(s->path);
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	free(s);
}

int rd_status_query(const char *path, int json, char **out, size_t *len, struct rd_err *err)
{
	const char *req = json ? "STATUS 1 JSON\n" : "STATUS 1 TEXT\n";
	struct sockaddr_un sa;
	size_t n = 0, cap = 0;
	char *buf = NULL, *grown, *nl;
	ssize_t r;
	int fd, ret = 0;

	*out = NULL;
	*len = 0;
	if (sun_of(&sa, path))
		return rd_err_set(err, RD_EUSAGE, 0, "status socket %s: path too long", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rd_err_set(err, RD_ESYS, errno, "status socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == EACCES || errno == EPERM)
			ret = rd_err_set(err, RD_EPERM, 0,
					 "%s: permission denied: root, rdcpd's user and members "
					 "of its status group may ask",
					 path);
		else if (errno == ENOENT || errno == ECONNREFUSED)
			ret = rd_err_set(err, RD_ECONN, errno,
					 "no rdcpd answers at %s (is it running, with this "
					 "'status socket'?)",
					 path);
		else
			ret = rd_err_set(err, RD_ECONN, errno, "%s", path);
		goto out;
	}
	timeouts(fd, CLIENT_MS);
	if (write_all(fd, req, strlen(req))) {
		ret = rd_err_set(err, RD_ECONN, errno, "%s: send", path);
		goto out;
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			if (cap >= RD_STATUS_REPLY_MAX) {
				ret = rd_err_set(err, RD_EPROTO, 0, "%s: the answer is too long",
						 path);
				goto out;
			}
			cap = cap ? cap * 2 : 65536;
			grown = realloc(buf, cap);
			if (!grown) {
				ret = rd_err_set(err, RD_ENOMEM, 0, "out of memory");
				goto out;
			}
			buf = grown;
		}
		r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = rd_err_set(err, RD_ETIMEOUT, errno, "%s: no answer", path);
			goto out;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (n >= 4 && !memcmp(buf, "ERR ", 4)) {
		nl = strchr(buf, '\n');
		if (nl)
			*nl = '\0';
		ret = rd_err_set(err, strstr(buf, "permission denied") ? RD_EPERM : RD_EREMOTE, 0,
				 "rdcpd at %s: %.400s", path, buf + 4);
		goto out;
	}
	if (n < 3 || memcmp(buf, "OK\n", 3)) {
		ret = rd_err_set(err, RD_EPROTO, 0, "%s: not an rdcpd status answer", path);
		goto out;
	}
	memmove(buf, buf + 3, n - 3 + 1);
	*out = buf;
	*len = n - 3;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}
