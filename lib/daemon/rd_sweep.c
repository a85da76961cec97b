// SPDX-License-Identifier: MIT
/* The partials sweeper's thread (rd_sweep.h). */
#include "lib/daemon/rd_sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ioprio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/daemon/rd_ops.h"
#include "lib/sink/rd_sink_sweep.h"

struct rd_sweeper {
	const struct rd_daemon_cfg *cfg;
	unsigned interval_s;
	volatile int stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t th;
};

struct round {
	struct rd_sweeper *s;
	const struct rd_conf_module *m;
};

static void on_removed(void *ctx, const char *path, size_t len, uint64_t bytes, uint64_t idle_s)
{
	struct round *r = ctx;
	struct rd_daemon_event ev;
	char esc[4 * 4096 + 1];

	rd_escape(esc, sizeof(esc), path, len);
	memset(&ev, 0, sizeof(ev));
	ev.kind = RD_EV_PARTIAL;
	ev.module = r->m->name;
	ev.conf_module = r->m;
	ev.file = esc;
	ev.bytes = bytes;
	rd_ops_emit(r->s->cfg, RD_LOG_INFO, &ev,
		    "partials: module %s: removed %s (%llu bytes, untouched for %llu days; "
		    "partial max age %d s)",
		    r->m->name, esc, (unsigned long long)bytes,
		    (unsigned long long)(idle_s / 86400), r->m->partial_max_age_s);
}

static void sweep_module(struct rd_sweeper *s, const struct rd_conf_module *m)
{
	struct rd_sweep_stats st;
	struct round r = {s, m};
	struct rd_err err;
	int fd;

	fd = open(m->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rd_ops_emit(s->cfg, RD_LOG_WARN, NULL, "partials: module %s: %s: %s", m->name,
			    m->path, strerror(errno));
		return;
	}
	rd_err_clear(&err);
	if (rd_sink_sweep(fd, time(NULL) - m->partial_max_age_s, &s->stop, on_removed, &r, &st,
			  &err))
		rd_ops_emit(s->cfg, RD_LOG_WARN, NULL, "partials: module %s: %s", m->name, err.msg);
	else
		rd_ops_emit(s->cfg, st.removed ? RD_LOG_INFO : RD_LOG_DEBUG, NULL,
			    "partials: module %s: removed %llu (%llu bytes); kept %llu younger "
			    "than %d s, %llu in use, %llu not rdcp's; %llu directories%s",
			    m->name, (unsigned long long)st.removed, (unsigned long long)st.bytes,
			    (unsigned long long)st.young, m->partial_max_age_s,
			    (unsigned long long)st.busy, (unsigned long long)st.foreign,
			    (unsigned long long)st.dirs,
			    st.too_deep ? " (some too deep to enter)" : "");
	close(fd);
}

static void *run(void *arg)
{
	struct rd_sweeper *s = arg;
	const struct rd_conf *c;
	struct timespec until;
	int i;

	/* the least of the machine: never in the sessions' way */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)syscall(SYS_gettid),
		IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
	for (;;) {
		c = __atomic_load_n(&s->cfg->conf, __ATOMIC_ACQUIRE);
		for (i = 0; c && i < c->nmods && !s->stop; i++)
			if (c->mods[i]->partial_max_age_s > 0 &&
			    rd_conf_module_writable(c->mods[i]))
				sweep_module(s, c->mods[i]);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += s->interval_s;
		pthread_mutex_lock(&s->lock);
		while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&s->lock);
		if (s->stop)
			break;
	}
	return NULL;
}

int rd_sweeper_start(struct rd_sweeper **out, const struct rd_daemon_cfg *cfg, unsigned interval_s,
		     struct rd_err *err)
{
	struct rd_sweeper *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return rd_err_set(err, RD_ENOMEM, 0, "partials sweeper: out of memory");
	s->cfg = cfg;
	s->interval_s = interval_s ? interval_s : RD_SWEEP_INTERVAL_S;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->th, NULL, run, s)) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return rd_err_set(err, RD_ESYS, 0, "partials sweeper: no thread");
	}
	*out = s;
	return 0;
}

void rd_sweeper_stop(struct rd_sweeper *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->th, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
