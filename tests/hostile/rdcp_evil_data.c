// SPDX-License-Identifier: MIT
/*
 * rdcp_evil's issue 27 parts.
 *
 * sum-flood / sum-drip: a pulling client that asks the server for nothing
 * but SUMs (item 12). One 41-byte GET kind SUM makes a sender read and
 * hash a whole chunk; the flood asks for the same one over and over, the
 * drip for each chunk once, slowly, to hold the session open. A server
 * must cut both short: a chunk is summed once, and SUMs one by one are
 * not progress for its idle timeout.
 *
 * link-tree: the material of a large link table (item 11).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/engine/rd_engine.h"
#include "lib/proto/rd_proto.h"
#include "tests/hostile/rdcp_evil.h"

#define SUM_CHUNK 4096u /* send_pull_open's */

struct sumc {
	struct rd_conn *c;
	uint32_t id; /* the FILE's, once it came */
	uint64_t size;
	unsigned answers; /* DATA kind SUM */
	int error, lost;
	char text[256];
	uint64_t seq;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Take what came: 0, or -1 once the server said ERROR or hung up. */
static int sum_drain(struct sumc *s, int wait_ms)
{
	const uint8_t *buf;
	const char *why;
	struct rd_msg m;
	size_t len;
	int r = rd_conn_poll(s->c, wait_ms);

	while (rd_conn_recv(s->c, &buf, &len) == 1) {
		if (!rd_msg_decode(buf, len, &m, &why)) {
			if (m.hdr.type == RD_MSG_FILE && !s->id && m.u.file.type == RD_FT_REG) {
				s->id = m.u.file.id;
				s->size = m.u.file.size;
			} else if (m.hdr.type == RD_MSG_DATA && m.u.data.kind == RD_GET_SUM) {
				s->answers++;
			} else if (m.hdr.type == RD_MSG_ERROR) {
				s->error = 1;
				snprintf(s->text, sizeof(s->text), "%.*s", (int)m.u.error.text.len,
					 m.u.error.text.ptr);
			}
		}
		rd_conn_recv_done(s->c);
	}
	if (r < 0 && r != -RD_ETIMEOUT && !s->error) {
		s->lost = 1;
		snprintf(s->text, sizeof(s->text), "%s", rd_conn_err(s->c)->msg);
	}
	return s->error || s->lost ? -1 : 0;
}

/* Connect, TLS, OPEN(PULL) of path, until its FILE came: 0, or 2 (printed). */
static int sum_open(struct sumc *s, const char *host, const char *port, const char *path)
{
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;
	double end = mono_s() + 20;

	memset(s, 0, sizeof(*s));
	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	co.timeout_ms = 60000;
	if (rd_conn_connect(&s->c, host, port, &co, &req, &rep, &err) || client_tls(&s->c, &err)) {
		printf("sum: no session: %s\n", err.msg);
		return 2;
	}
	if (send_pull_open(s->c, path, &err)) {
		printf("sum: OPEN not sent: %s\n", err.msg);
		return 2;
	}
	while (!s->id && mono_s() < end)
		if (sum_drain(s, 200) < 0)
			break;
	if (!s->id) {
		printf("sum: no FILE for %s: %s\n", path, s->text);
		return 2;
	}
	printf("sum: %s is entry %u, %llu bytes\n", path, s->id, (unsigned long long)s->size);
	return 0;
}

/* GET kind SUM of chunk: 0, 1 (no credit now), or -1 (gone). */
static int sum_ask(struct sumc *s, uint64_t chunk)
{
	struct rd_err err;
	struct rd_msg m;
	int r;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_GET;
	m.u.get.id = s->id;
	m.u.get.kind = RD_GET_SUM;
	m.u.get.chunk = chunk;
	m.u.get.len = SUM_CHUNK;
	m.u.get.seq = s->seq + 1;
	r = rd_engine_send_msg(s->c, &m, &err);
	if (r == 0)
		s->seq++;
	return r < 0 ? -1 : r ? 1 : 0;
}

int sum_flood(const char *host, const char *port, const char *path, int count)
{
	struct sumc s;
	int sent = 0, r;
	double end;

	r = sum_open(&s, host, port, path);
	if (r)
		return r;
	while (sent < count && !s.error && !s.lost) {
		r = sum_ask(&s, 0);
		if (r < 0)
			break;
		sent += !r;
		sum_drain(&s, r ? 50 : 0);
	}
	for (end = mono_s() + 5;
	     !s.error && !s.lost && s.answers < (unsigned)sent && mono_s() < end;)
		sum_drain(&s, 100);
	printf("sum-flood: %d SUMs of chunk 0 sent, %u answered%s%s\n", sent, s.answers,
	       s.error	? "; the server said: "
	       : s.lost ? "; connection lost: "
			: "",
	       s.text);
	rd_conn_close(s.c);
	return s.answers < 10 && (s.error || s.lost) ? 0 : 1;
}

int sum_drip(const char *host, const char *port, const char *path, double secs)
{
	double t0, next;
	uint64_t chunk = 0;
	struct sumc s;
	int r;

	r = sum_open(&s, host, port, path);
	if (r)
		return r;
	t0 = next = mono_s();
	while (mono_s() - t0 < secs && !s.error && !s.lost) {
		if (mono_s() >= next && chunk * SUM_CHUNK < s.size) {
			if (sum_ask(&s, chunk) == 0)
				chunk++;
			next += 0.5;
		}
		sum_drain(&s, 50);
	}
	printf("sum-drip: %llu SUMs over %.1f s, %u answered; %s%s\n", (unsigned long long)chunk,
	       mono_s() - t0, s.answers,
	       s.error	? "the server said: "
	       : s.lost ? "connection lost: "
			: "still connected",
	       s.text);
	rd_conn_close(s.c);
	return s.error || s.lost ? 0 : 1;
}

/*
 * DIR/<DEPTH directories of 250-byte names>/f00000.. (N empty files),
 * each linked once more as OUTSIDE/f00000..: N link groups whose wire
 * paths are some 3.5 KiB long and which never close in a walk of DIR.
 */
int link_tree(const char *dir, const char *outside, int n, int depth)
{
	char name[251], f[16];
	int dfd, ofd, fd, i;

	memset(name, 'd', 250);
	name[250] = '\0';
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ofd = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || ofd < 0) {
		perror("link-tree");
		return 2;
	}
	for (i = 0; i < depth; i++) {
		if (mkdirat(dfd, name, 0755) < 0 ||
		    (fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
			perror("link-tree: mkdir");
			return 2;
		}
		close(dfd);
		dfd = fd;
	}
	for (i = 0; i < n; i++) {
		snprintf(f, sizeof(f), "f%05d", i);
		fd = openat(dfd, f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || linkat(dfd, f, ofd, f, 0) < 0) {
			perror("link-tree: file");
			return 2;
		}
		close(fd);
	}
	close(dfd);
	close(ofd);
	printf("link-tree: %d files %d levels deep in %s, each linked in %s\n", n, depth, dir,
	       outside);
	return 0;
}
