/* SPDX-License-Identifier: MIT */
/* rdcpd's own parts beside main.c: where log lines go (log.c), rdcpd --status (status.c). */
#ifndef RDCP_CMD_RDCPD_RDCPD_H
#define RDCP_CMD_RDCPD_RDCPD_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include "lib/conf/rd_conf.h"
#include "lib/daemon/rd_daemon.h"

#define RDCPD_LOG_FILES_MAX 64 /* distinct module log files */

enum rdcpd_log_dest { RDCPD_LOG_STDERR = 0, RDCPD_LOG_SYSLOG, RDCPD_LOG_JOURNAL, RDCPD_LOG_FILE };

struct rdcpd_log {
	int dest;	      /* enum rdcpd_log_dest */
	int level;	      /* lines up to this RD_LOG_* level (transfer log lines always) */
	pthread_mutex_t lock; /* the descriptors below (a SIGHUP reopens them) */
	int fd;		      /* RDCPD_LOG_FILE */
	char path[PATH_MAX];
	struct {
		char path[PATH_MAX];
		int fd;
	} mods[RDCPD_LOG_FILES_MAX]; /* modules' log files, by path */
	int nmods;
};

/* Before anything is configured: stderr, info. */
void rdcpd_log_init(struct rdcpd_log *l);
/*
 * Where c says the lines go: its log file (opened now: the caller is still
 * root), the journal when systemd runs us with stderr on it, syslog
 * without --foreground, else stderr; the modules' log files. 0, or -1 with
 * why. On a reload (reopen = 1) a file that cannot be opened keeps the old
 * one (and is said in why, returning -1 all the same).
 */
int rdcpd_log_open(struct rdcpd_log *l, const struct rd_conf *c, int foreground, int reopen,
		   char *why, size_t len);
void rdcpd_log_line(struct rdcpd_log *l, int level, const char *line);
void rdcpd_log_event(struct rdcpd_log *l, int level, const char *line,
		     const struct rd_daemon_event *ev);
void rdcpd_log_close(struct rdcpd_log *l);
/* Is stderr the journal (JOURNAL_STREAM names it)? */
int rdcpd_under_journal(void);

/* rdcpd --status [--json]: ask the daemon of config path (NULL: the default). Exit status. */
int rdcpd_status(const char *config, int json);

#endif
