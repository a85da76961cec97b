// SPDX-License-Identifier: MIT
/*
 * Client side of an ssh-started copy: run `ssh [-l user] host rdcp
 * --remote-server MODE -- PATH...` (or the -e command), read the remote's
 * ready line from the ssh channel, and pass the remote's stderr through,
 * escaped, one line at a time. What ssh or the remote said is kept (last
 * lines, bounded) so a failure to start can be explained.
 */
#include "lib/session/rd_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"

#define LINE_MAX_ 1024
#define TAIL_LINES 4
#define HELD_LINES 16 /* before the ready line: shown then, or folded into the error */
#define MAX_ARGS 64

struct ssh_priv {
	pthread_t th;
	int th_started;
	pthread_mutex_t lock;
	char tail[TAIL_LINES][LINE_MAX_];
	int ntail;
	/*
	 * Until the remote side is ready its stderr is held, not shown: if it
	 * never gets ready, what it said is in the error (once); if it does,
	 * the held lines are shown then and later ones as they come.
	 */
	int live;
	char held[HELD_LINES][LINE_MAX_]; /* escaped */
	int nheld;
	rd_remote_log_fn log;
	void *ctx;
};

/* Append a shell-quoted word: 'it'\''s' */
static int quote(char *buf, size_t cap, size_t *n, const char *w)
{
	const char *p;

	if (*n + 3 > cap)
		return -1;
	buf[(*n)++] = ' ';
	buf[(*n)++] = '\'';
	for (p = w; *p; p++) {
		if (*p == '\'') {
			if (*n + 5 > cap)
				return -1;
			memcpy(buf + *n, "'\\''", 4);
			*n += 4;
		} else {
			if (*n + 2 > cap)
				return -1;
			buf[(*n)++] = *p;
		}
	}
	if (*n + 2 > cap)
		return -1;
	buf[(*n)++] = '\'';
	buf[*n] = '\0';
	return 0;
}

static void keep_tail(struct ssh_priv *p, const char *raw, size_t len)
{
	while (len && raw[len - 1] == '\r') /* ssh ends its own lines with CR LF */
		len--;
	pthread_mutex_lock(&p->lock);
	if (p->ntail == TAIL_LINES) {
		memmove(p->tail[0], p->tail[1], sizeof(p->tail[0]) * (TAIL_LINES - 1));
		p->ntail--;
	}
	snprintf(p->tail[p->ntail++], LINE_MAX_, "%.*s", (int)len, raw);
	pthread_mutex_unlock(&p->lock);
}

/* Forward one raw line (escaped) and remember it; held while not live. */
static void emit_line(struct ssh_priv *p, const char *raw, size_t len)
{
	char esc[LINE_MAX_];
	int live;

	rd_escape(esc, sizeof(esc), raw, len);
	keep_tail(p, raw, len); /* escaped once, by whoever prints it */
	pthread_mutex_lock(&p->lock);
	live = p->live;
	if (!live && p->nheld < HELD_LINES)
		snprintf(p->held[p->nheld++], LINE_MAX_, "%s", esc);
	pthread_mutex_unlock(&p->lock);
	if (live && p->log)
		p->log(p->ctx, esc);
}

/* Ready: what was held is shown now, and from here on every line as it comes. */
static void go_live(struct ssh_priv *p)
{
	int i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; p->log && i < p->nheld; i++)
		p->log(p->ctx, p->held[i]);
	p->nheld = 0;
	p->live = 1;
	pthread_mutex_unlock(&p->lock);
}

struct err_reader {
	struct ssh_priv *p;
	int fd;
};

static void *stderr_thread(void *arg)
{
	struct err_reader *er = arg;
	char buf[LINE_MAX_];
	size_t n = 0;
	ssize_t r;
	char c;

	for (;;) {
		r = read(er->fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (c == '\n' || n == sizeof(buf) - 1) {
			emit_line(er->p, buf, n);
			n = 0;
			if (c == '\n')
				continue;
		}
		buf[n++] = c;
	}
	if (n)
		emit_line(er->p, buf, n);
	free(er);
	return NULL;
}

static void tail_text(struct ssh_priv *p, char *out, size_t len)
{
	size_t n = 0;
	int i;

	out[0] = '\0';
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->ntail && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", i ? " / " : "", p->tail[i]);
	pthread_mutex_unlock(&p->lock);
}

/* Read one line from fd within the deadline; 1 = line, 0 = EOF, <0 = error. */
static int read_line(int fd, char *buf, size_t cap, long timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t n = 0;
	ssize_t r;
	char c;

	while (n < cap - 1) {
		r = poll(&pfd, 1, (int)timeout_ms);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return n ? 1 : 0;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = '\0';
	return 1;
}

struct argbuf {
	char words[1024];
	char dash_l[3];
	char user[128];
	char host[300];
	char cmd[16384];
};

static int build_argv(const struct rd_ssh_opts *o, struct argbuf *b, char **argv)
{
	char *save = NULL, *w, *cmd = b->cmd;
	size_t n = 0, ccap = sizeof(b->cmd);
	int argc = 0, i;

	snprintf(b->words, sizeof(b->words), "%s", o->rsh && *o->rsh ? o->rsh : "ssh");
	for (w = strtok_r(b->words, " \t", &save); w && argc < MAX_ARGS - 6;
	     w = strtok_r(NULL, " \t", &save))
		argv[argc++] = w;
	if (o->user && *o->user) {
		snprintf(b->dash_l, sizeof(b->dash_l), "-l");
		snprintf(b->user, sizeof(b->user), "%s", o->user);
		argv[argc++] = b->dash_l;
		argv[argc++] = b->user;
	}
	snprintf(b->host, sizeof(b->host), "%s", o->host);
	argv[argc++] = b->host;
	n = (size_t)snprintf(cmd, ccap, "%s --remote-server %s%s --",
			     o->remote_rdcp && *o->remote_rdcp ? o->remote_rdcp : "rdcp",
			     o->push ? "recv" : "send", (o->flags & RD_OF_RECURSIVE) ? " -r" : "");
	for (i = 0; i < o->npaths; i++) {
		const char *p = o->paths[i];

		/* Quoted words are not tilde-expanded; ssh starts in $HOME anyway. */
		if (!strcmp(p, "~") || !*p)
			p = ".";
		else if (!strncmp(p, "~/", 2))
			p += 2;
		if (quote(cmd, ccap, &n, *p ? p : "."))
			return -1;
	}
	argv[argc++] = cmd;
	argv[argc] = NULL;
	return argc;
}

static int reap(struct rd_ssh *s, int timeout_ms);

int rd_ssh_start(struct rd_ssh *s, const struct rd_ssh_opts *o)
{
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, pexec[2] = {-1, -1};
	int exec_errno = 0;
	char line[LINE_MAX_], tail[1200];
	static __thread struct argbuf ab;
	char *argv[MAX_ARGS];
	struct ssh_priv *p;
	struct err_reader *er;
	struct timespec t0, t1;
	long left;
	int ret, st;

	memset(s, 0, sizeof(*s));
	s->pid = -1;
	s->in_fd = s->out_fd = s->err_fd = -1;
	p = calloc(1, sizeof(*p));
	if (!p)
		return rd_err_set(&s->err, RD_ENOMEM, ENOMEM, "ssh state");
	pthread_mutex_init(&p->lock, NULL);
	p->log = o->log;
	p->ctx = o->ctx;
	s->priv = p;
	if (build_argv(o, &ab, argv) < 0) {
		ret = rd_err_set(&s->err, RD_EUSAGE, 0, "remote paths too long for one command");
		goto fail;
	}
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC) ||
	    pipe2(pexec, O_CLOEXEC)) {
		ret = rd_err_set(&s->err, RD_ESYS, errno, "pipe");
		goto fail;
	}
	s->pid = fork();
	if (s->pid < 0) {
		ret = rd_err_set(&s->err, RD_ESYS, errno, "fork");
		goto fail;
	}
	if (s->pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		execvp(argv[0], argv);
		exec_errno = errno; /* pexec closes on a successful exec */
		if (write(pexec[1], &exec_errno, sizeof(exec_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pexec[1]);
	if (read(pexec[0], &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno)) {
		close(pexec[0]);
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		close(perr[0]);
		close(perr[1]);
		waitpid(s->pid, NULL, 0);
		s->pid = -1;
		rd_ssh_finish(s, 0); /* frees priv */
		return rd_err_set(&s->err, RD_EREMOTE, exec_errno,
				  "cannot run the ssh command '%s' (-e/--rsh)", argv[0]);
	}
	close(pexec[0]);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	s->in_fd = pin[1];
	s->out_fd = pout[0];
	s->err_fd = -1;
	er = malloc(sizeof(*er));
	if (er) {
		er->p = p;
		er->fd = perr[0];
		if (!pthread_create(&p->th, NULL, stderr_thread, er))
			p->th_started = 1;
		else
			free(er);
	}
	if (!p->th_started)
		close(perr[0]);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = (o->timeout_ms > 0 ? o->timeout_ms : 60000) -
		       ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		ret = read_line(s->out_fd, line, sizeof(line), left);
		if (ret <= 0)
			break;
		if (!strncmp(line, RD_REMOTE_READY " ", sizeof(RD_REMOTE_READY))) {
			if (rd_ready_parse(line, &s->ready)) {
				ret = rd_err_set(&s->err, RD_EPROTO, 0,
						 "%s: the remote rdcp sent a malformed ready line",
						 o->host);
				goto fail_child;
			}
			go_live(p);
			return 0;
		}
		emit_line(p, line, strlen(line)); /* a banner or the like */
	}
	/* No ready line: explain with what ssh / the remote said. */
	st = reap(s, 3000);
	tail_text(p, tail, sizeof(tail));
	rd_ssh_finish(s, 0);
	if (ret == -ETIMEDOUT)
		return rd_err_set(&s->err, RD_EREMOTE, 0,
				  "%s: the remote rdcp did not report ready within %d s%s%s", o->host,
				  (o->timeout_ms > 0 ? o->timeout_ms : 60000) / 1000,
				  tail[0] ? ": " : "", tail);
	if (st == 127 || strstr(tail, "not found"))
		return rd_err_set(&s->err, RD_EREMOTE, 0,
				  "%s: could not start '%s' there (is rdcp installed and in PATH "
				  "on that host? --remote-rdcp names another path)%s%s",
				  o->host, o->remote_rdcp && *o->remote_rdcp ? o->remote_rdcp : "rdcp",
				  tail[0] ? ": " : "", tail);
	if (st == 255)
		return rd_err_set(&s->err, RD_EREMOTE, 0, "ssh to %s failed%s%s", o->host,
				  tail[0] ? ": " : "", tail);
	return rd_err_set(&s->err, RD_EREMOTE, 0,
			  "%s: the remote side exited (status %d) before it was ready%s%s", o->host,
			  st, tail[0] ? ": " : "", tail);

fail_child:
	rd_ssh_finish(s, 1000);
	return ret;
fail:
	if (pin[0] >= 0) {
		close(pin[0]);
		close(pin[1]);
	}
	if (pout[0] >= 0) {
		close(pout[0]);
		close(pout[1]);
	}
	if (perr[0] >= 0) {
		close(perr[0]);
		close(perr[1]);
	}
	if (pexec[0] >= 0) {
		close(pexec[0]);
		close(pexec[1]);
	}
	if (s->pid > 0)
		waitpid(s->pid, NULL, 0);
	s->pid = -1;
	rd_ssh_finish(s, 0); /* frees priv */
	return ret;
}

/* Close our side, reap ssh, join the stderr reader; keeps priv (the tail). */
static int reap(struct rd_ssh *s, int timeout_ms)
{
	struct ssh_priv *p = s->priv;
	int status = -1, waited = 0;
	pid_t r;

	if (s->in_fd >= 0) {
		close(s->in_fd);
		s->in_fd = -1;
	}
	if (s->pid > 0) {
		for (;;) {
			r = waitpid(s->pid, &status, WNOHANG);
			if (r == s->pid || (r < 0 && errno != EINTR))
				break;
			if (waited >= timeout_ms) {
				kill(s->pid, SIGTERM);
				waitpid(s->pid, &status, 0);
				break;
			}
			usleep(20000);
			waited += 20;
		}
		s->pid = -1;
	}
	if (s->out_fd >= 0) {
		close(s->out_fd);
		s->out_fd = -1;
	}
	if (p && p->th_started) {
		pthread_join(p->th, NULL);
		p->th_started = 0;
	}
	if (status == -1)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int rd_ssh_finish(struct rd_ssh *s, int timeout_ms)
{
	struct ssh_priv *p = s->priv;
	int st = reap(s, timeout_ms);

	if (p) {
		pthread_mutex_destroy(&p->lock);
		free(p);
		s->priv = NULL;
	}
	return st;
}
