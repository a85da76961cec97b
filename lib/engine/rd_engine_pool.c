// SPDX-License-Identifier: MIT
/*
 * The engine's worker pool (issue 12, "parallel engine"): the per-chunk
 * data work (sender: read and tag; receiver: verify and write) runs on
 * e->o.threads workers while the loop that owns the connection only
 * schedules and talks. A worker never touches the connection: it takes a
 * job from the queue, runs it with its own digest context (one per worker,
 * keyed like the engine's), puts it on the done list and writes the
 * eventfd that the connection's poll includes (rd_conn_set_wake_fd), so
 * a loop asleep in rd_conn_poll() wakes for it.
 *
 * With one thread (or when no worker could be started) there are no
 * workers: a job runs inline, in rd_wpool_submit(), on the engine's own
 * digest, and is on the done list when submit returns. The loop's code is
 * the same either way.
 */
#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct rd_wpool {
	struct rd_engine *e;
	struct rd_conn *c;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rd_job *todo, **todo_tail;
	struct rd_job *done, **done_tail;
	unsigned busy; /* submitted, not yet reaped */
	int stop;
	int efd;
	unsigned n; /* workers running */
	struct worker {
		struct rd_wpool *p;
		pthread_t th;
		struct rd_digest *dg;
		unsigned idx;
	} *w;
};

unsigned rd_engine_default_threads(void)
{
	cpu_set_t set;
	long n = 0;

	if (!sched_getaffinity(0, sizeof(set), &set))
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n <= 0)
		n = 1;
	return n > RD_ENGINE_THREADS_DEFAULT_MAX ? RD_ENGINE_THREADS_DEFAULT_MAX : (unsigned)n;
}

static void push_done(struct rd_wpool *p, struct rd_job *j)
{
	j->next = NULL;
	*p->done_tail = j;
	p->done_tail = &j->next;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct rd_wpool *p = w->p;
	struct rd_job *j;
	uint64_t one = 1;
	char name[16];

	snprintf(name, sizeof(name), "rdcp-work%u", w->idx);
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && !p->todo)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		j = p->todo;
		p->todo = j->next;
		if (!p->todo)
			p->todo_tail = &p->todo;
		pthread_mutex_unlock(&p->mu);
		j->run(j, w->dg);
		pthread_mutex_lock(&p->mu);
		push_done(p, j);
		/* an eventfd write cannot block here: the loop drains it */
		if (write(p->efd, &one, sizeof(one)) < 0) {
			/* nothing to do: the loop also looks at the done list each turn */
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* A worker's own digest, keyed as the engine's. */
static int worker_digest(struct rd_engine *e, struct rd_digest **out)
{
	struct rd_err err;
	int ret;

	*out = NULL;
	ret = rd_digest_open(out, e->dg->name, &err);
	if (!ret && e->dg->keyed && e->has_key)
		ret = rd_digest_set_key(*out, e->key);
	if (ret) {
		rd_digest_close(*out);
		*out = NULL;
	}
	return ret;
}

int rd_wpool_start(struct rd_wpool **out, struct rd_engine *e, struct rd_conn *c)
{
	struct rd_wpool *p;
	unsigned i, want = e->o.threads;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "worker pool");
	p->e = e;
	p->c = c;
	p->efd = -1;
	p->todo_tail = &p->todo;
	p->done_tail = &p->done;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	*out = p;
	if (want <= 1)
		return 0;
	p->w = calloc(want, sizeof(*p->w));
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!p->w || p->efd < 0)
		return 0; /* inline: slower, still correct */
	for (i = 0; i < want; i++) {
		struct worker *w = &p->w[p->n];

		w->p = p;
		w->idx = i;
		if (worker_digest(e, &w->dg))
			break;
		if (pthread_create(&w->th, NULL, worker_main, w)) {
			rd_digest_close(w->dg);
			w->dg = NULL;
			break;
		}
		p->n++;
	}
	if (p->n)
		rd_conn_set_wake_fd(c, p->efd);
	return 0;
}

unsigned rd_wpool_workers(const struct rd_wpool *p)
{
	return p->n;
}

void rd_wpool_submit(struct rd_wpool *p, struct rd_job *j)
{
	j->next = NULL;
	if (!p->n) {
		j->run(j, p->e->dg);
		p->busy++;
		push_done(p, j);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->busy++;
	*p->todo_tail = j;
	p->todo_tail = &j->next;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

struct rd_job *rd_wpool_reap(struct rd_wpool *p)
{
	struct rd_job *j, *k;

	if (p->n)
		pthread_mutex_lock(&p->mu);
	j = p->done;
	p->done = NULL;
	p->done_tail = &p->done;
	for (k = j; k; k = k->next)
		p->busy--;
	if (p->n)
		pthread_mutex_unlock(&p->mu);
	return j;
}

unsigned rd_wpool_busy(const struct rd_wpool *p)
{
	return p->busy; /* only the loop changes it */
}

void rd_wpool_stop(struct rd_wpool *p)
{
	unsigned i;

	if (!p)
		return;
	if (p->n) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		for (i = 0; i < p->n; i++)
			pthread_join(p->w[i].th, NULL);
		rd_conn_set_wake_fd(p->c, -1);
	}
	for (i = 0; p->w && i < p->n; i++)
		rd_digest_close(p->w[i].dg);
	if (p->efd >= 0)
		close(p->efd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->w);
	free(p);
}
