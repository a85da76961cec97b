// SPDX-License-Identifier: MIT
/*
 * Where rdcpd's lines go (rdcpd.conf(5): log file, JOURNAL, TRANSFER LOG):
 * a log file (rsync's "%t [%p] " before each line), the journal with
 * structured fields (libsystemd's sd_journal_sendv) when systemd runs us
 * with stderr on the journal, syslog, or stderr; a module's transfer and
 * session lines to its own log file. Every line is escaped (rd_escape)
 * before it goes anywhere.
 */
#include "cmd/rdcpd/rdcpd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "lib/base/rd_escape.h"
#include "lib/xferlog/rd_xferlog.h"

#define FIELDS_MAX 16

/* One MESSAGE_ID per kind of line (rdcpd.conf(5), JOURNAL): never change them. */
static const char *message_id(int kind)
{
	switch (kind) {
	case RD_EV_SESSION_START:
		return "c6dae009e8704051945d8b7bfaadab19";
	case RD_EV_SESSION_END:
		return "afe85605b0334dc2adfcc8944dd6d3f1";
	case RD_EV_AUTH_FAILURE:
		return "e97d1205c8624f00ab4486d92e37913a";
	case RD_EV_REFUSED:
		return "1cfd122595f649f5848d76f447b99aa2";
	case RD_EV_RELOAD:
		return "0c4ddcfc8a5340eaac747db47e8d8429";
	case RD_EV_XFER:
		return "24dcd48ac9d74ef1b45a98a759e5ceab";
	case RD_EV_PARTIAL:
		return "4634a7218a6e4d6c8456de1bd42ab40d";
	default:
		return NULL;
	}
}

void rdcpd_log_init(struct rdcpd_log *l)
{
	memset(l, 0, sizeof(*l));
	l->dest = RDCPD_LOG_STDERR;
	l->level = RD_LOG_INFO;
	l->fd = -1;
	pthread_mutex_init(&l->lock, NULL);
}

int rdcpd_under_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static int open_log(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0640);
}

/* The module log files c names, opened into l (old ones kept where a new one fails). */
static int open_mods(struct rdcpd_log *l, const struct rd_conf *c, char *why, size_t len)
{
	int i, k, fd, ret = 0;

	for (i = 0; i < c->nmods; i++) {
		const char *p = c->mods[i]->log_file;

		if (!p[0])
			continue;
		for (k = 0; k < l->nmods && strcmp(l->mods[k].path, p); k++)
			;
		fd = open_log(p);
		if (fd < 0) {
			snprintf(why, len, "module %s: log file %s: %s", c->mods[i]->name, p,
				 strerror(errno));
			ret = -1;
			continue;
		}
		if (k == l->nmods) {
			if (l->nmods == RDCPD_LOG_FILES_MAX) {
				close(fd);
				snprintf(why, len, "more than %d module log files",
					 RDCPD_LOG_FILES_MAX);
				ret = -1;
				continue;
			}
			snprintf(l->mods[k].path, sizeof(l->mods[k].path), "%s", p);
			l->mods[k].fd = -1;
			l->nmods++;
		}
		if (l->mods[k].fd >= 0)
			close(l->mods[k].fd);
		l->mods[k].fd = fd;
	}
	return ret;
}

int rdcpd_log_open(struct rdcpd_log *l, const struct rd_conf *c, int foreground, int reopen,
		   char *why, size_t len)
{
	int fd = -1, ret = 0;

	pthread_mutex_lock(&l->lock);
	__atomic_store_n(&l->level, c->log_level, __ATOMIC_RELAXED);
	if (c->log_file[0]) {
		fd = open_log(c->log_file);
		if (fd < 0) {
			snprintf(why, len, "log file %s: %s", c->log_file, strerror(errno));
			ret = -1;
		} else {
			if (l->fd >= 0)
				close(l->fd);
			l->fd = fd;
			snprintf(l->path, sizeof(l->path), "%s", c->log_file);
			l->dest = RDCPD_LOG_FILE;
		}
	} else if (!reopen || l->dest != RDCPD_LOG_FILE) {
		/* the destination chosen at start stays (a log file may be dropped at restart) */
		if (rdcpd_under_journal())
			l->dest = RDCPD_LOG_JOURNAL;
		else if (!foreground)
			l->dest = RDCPD_LOG_SYSLOG;
		else
			l->dest = RDCPD_LOG_STDERR;
	}
	if (l->dest == RDCPD_LOG_SYSLOG && !reopen)
		openlog("rdcpd", LOG_PID, LOG_DAEMON);
	if (open_mods(l, c, why, len))
		ret = -1;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

void rdcpd_log_close(struct rdcpd_log *l)
{
	int k;

	pthread_mutex_lock(&l->lock);
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	for (k = 0; k < l->nmods; k++)
		if (l->mods[k].fd >= 0)
			close(l->mods[k].fd);
	l->nmods = 0;
	pthread_mutex_unlock(&l->lock);
}

/* "%t [%p] line\n" to fd, one write (appended whole). */
static void file_line(int fd, const char *esc)
{
	char ts[32], buf[RD_XFERLOG_LINE_MAX * 4 + 64];
	int n;

	rd_xferlog_time(ts, sizeof(ts), time(NULL));
	n = snprintf(buf, sizeof(buf), "%s [%d] %s\n", ts, (int)getpid(), esc);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf)) {
		n = (int)sizeof(buf) - 1;
		buf[n - 1] = '\n';
	}
	if (write(fd, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}

static void stderr_line(const char *esc)
{
	char ts[32];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "%s rdcpd[%d]: %s\n", ts, (int)getpid(), esc);
	fflush(stderr);
}

/*
 * A line lib/daemon escaped already (transfer log, partials): copied as it
 * is, so a name's backslashes are not doubled; a control character (there
 * should be none) still becomes '?'.
 */
static void safe_copy(char *out, size_t cap, const char *line)
{
	size_t i;

	for (i = 0; line[i] && i + 1 < cap; i++)
		out[i] = (unsigned char)line[i] < 0x20 || line[i] == 0x7f ? '?' : line[i];
	out[i] = '\0';
}

/* KEY=value (value escaped) into the next field. */
struct fields {
	struct iovec iov[FIELDS_MAX];
	char *buf[FIELDS_MAX];
	int n;
};

static void field(struct fields *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* KEY=value, the value escaped; KEY=value as it is when it was (a name already escaped). */
static void field_as_is(struct fields *f, const char *key, const char *v)
{
	size_t klen = strlen(key), n = strlen(v);
	char *b;

	if (f->n == FIELDS_MAX)
		return;
	b = malloc(klen + 1 + n + 1);
	if (!b)
		return;
	memcpy(b, key, klen);
	b[klen] = '=';
	safe_copy(b + klen + 1, n + 1, v);
	f->buf[f->n] = b;
	f->iov[f->n].iov_base = b;
	f->iov[f->n].iov_len = klen + 1 + n;
	f->n++;
}

static void field(struct fields *f, const char *key, const char *fmt, ...)
{
	char raw[RD_XFERLOG_LINE_MAX * 4 + 1];
	size_t klen = strlen(key), need;
	va_list ap;
	char *b;

	if (f->n == FIELDS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	need = rd_escape(NULL, 0, raw, strlen(raw));
	b = malloc(klen + 1 + need + 1);
	if (!b)
		return;
	memcpy(b, key, klen);
	b[klen] = '=';
	rd_escape(b + klen + 1, need + 1, raw, strlen(raw));
	f->buf[f->n] = b;
	f->iov[f->n].iov_base = b;
	f->iov[f->n].iov_len = klen + 1 + strlen(b + klen + 1);
	f->n++;
}

static int journal_send(int level, const char *esc, const struct rd_daemon_event *ev)
{
	struct fields f;
	int i, r;

	memset(&f, 0, sizeof(f));
	field_as_is(&f, "MESSAGE", esc);
	field(&f, "PRIORITY", "%d", level);
	field(&f, "SYSLOG_IDENTIFIER", "%s", "rdcpd");
	if (ev && message_id(ev->kind)) {
		field(&f, "MESSAGE_ID", "%s", message_id(ev->kind));
		if (ev->peer)
			field(&f, "RDCP_PEER", "%s", ev->peer);
		if (ev->user)
			field(&f, "RDCP_USER", "%s", ev->user);
		if (ev->module)
			field(&f, "RDCP_MODULE", "%s", ev->module);
		if (ev->transport)
			field(&f, "RDCP_TRANSPORT", "%s", ev->transport);
		if (ev->session)
			field(&f, "RDCP_SESSION", "%llu", (unsigned long long)ev->session);
		if (ev->kind == RD_EV_SESSION_END) {
			field(&f, "RDCP_BYTES", "%llu", (unsigned long long)ev->bytes);
			field(&f, "RDCP_FILES", "%llu", (unsigned long long)ev->files);
			field(&f, "RDCP_SECONDS", "%.3f", ev->seconds);
			if (ev->result)
				field(&f, "RDCP_RESULT", "%s", ev->result);
		}
		if (ev->kind == RD_EV_XFER || ev->kind == RD_EV_PARTIAL) {
			if (ev->op)
				field(&f, "RDCP_OPERATION", "%s", ev->op);
			if (ev->file)
				field_as_is(&f, "RDCP_FILE", ev->file);
			field(&f, "RDCP_BYTES", "%llu", (unsigned long long)ev->bytes);
		}
	}
	r = sd_journal_sendv(f.iov, f.n);
	for (i = 0; i < f.n; i++)
		free(f.buf[i]);
	return r;
}

/* The descriptor of path among the module log files, or -1. Under l->lock. */
static int mod_fd(struct rdcpd_log *l, const char *path)
{
	int k;

	for (k = 0; k < l->nmods; k++)
		if (!strcmp(l->mods[k].path, path))
			return l->mods[k].fd;
	return -1;
}

void rdcpd_log_event(struct rdcpd_log *l, int level, const char *line,
		     const struct rd_daemon_event *ev)
{
	char esc[RD_XFERLOG_LINE_MAX * 4];
	int fd, dest;

	/* a transfer log line is written whatever the log level, as rsyncd does */
	if (level > __atomic_load_n(&l->level, __ATOMIC_RELAXED) && !(ev && ev->kind == RD_EV_XFER))
		return;
	if (ev && (ev->kind == RD_EV_XFER || ev->kind == RD_EV_PARTIAL))
		safe_copy(esc, sizeof(esc), line); /* its names are escaped already */
	else
		rd_escape(esc, sizeof(esc), line, strlen(line));
	/* only the files need the lock (a SIGHUP swaps their descriptors) */
	pthread_mutex_lock(&l->lock);
	if (ev && ev->conf_module && ev->conf_module->log_file[0]) {
		fd = mod_fd(l, ev->conf_module->log_file);
		if (fd >= 0) {
			file_line(fd, esc);
			pthread_mutex_unlock(&l->lock);
			return;
		}
	}
	dest = l->dest;
	if (dest == RDCPD_LOG_FILE) {
		file_line(l->fd, esc);
		pthread_mutex_unlock(&l->lock);
		return;
	}
	pthread_mutex_unlock(&l->lock);
	if (dest == RDCPD_LOG_JOURNAL && journal_send(level, esc, ev) >= 0)
		return;
	if (dest == RDCPD_LOG_SYSLOG)
		syslog(level, "%s", esc);
	else
		stderr_line(esc);
}

void rdcpd_log_line(struct rdcpd_log *l, int level, const char *line)
{
	rdcpd_log_event(l, level, line, NULL);
}
