// SPDX-License-Identifier: MIT
/*
 * The daemon's sessions and counters (rd_activity.h). A running job's
 * bytes are read from its engine's atomic counters under the lock; when
 * the job ends its final count joins the module's total under the same
 * lock, so a reader sees a session's bytes exactly once, live or folded.
 */
#include "lib/daemon/rd_activity.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/metrics/rd_metrics.h"
#include "lib/report/rd_report.h"

static const double buckets[] = {0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static const char *const result_name[RD_ACT_RESULTS] = {"ok", "partial", "failed", "refused"};
static const char *const transports[] = {"rdma", "tcp"};
#define NTRANSPORTS 2

struct act_mod {
	char name[64];
	uint64_t rx, tx;		     /* bytes of finished jobs (under the lock) */
	_Atomic uint64_t files_rx, files_tx; /* any thread */
};

struct rd_act_sess {
	struct rd_act *a;
	uint64_t id;
	char peer[96];
	char user[256];
	char module[64];
	int transport; /* index into transports[], or -1 */
	int push;      /* -1: no job yet */
	int mod;       /* index into a->mods, or -1 */
	struct timespec t0, tjob;
	const struct rd_engine *e; /* while the job runs */
	struct rd_act_sess *prev, *next;
};

struct rd_act {
	pthread_mutex_t lock;
	struct rd_act_sess *head, *tail;
	uint64_t next_id;
	char version[64];
	unsigned port;
	char listeners[1600];
	uint64_t budget, per_session;
	struct timespec started;
	uint64_t now[NTRANSPORTS];
	uint64_t total[RD_ACT_RESULTS];
	uint64_t auth_failures, chunks_resent;
	uint64_t hist[NBUCKETS + 1]; /* the last one: +Inf */
	double hist_sum;
	uint64_t hist_count;
	unsigned nmods;
	struct act_mod mods[RD_ACT_MODULES_MAX];
};

static double since(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (double)(n.tv_sec - t->tv_sec) + (double)(n.tv_nsec - t->tv_nsec) / 1e9;
}

struct rd_act *rd_act_new(const char *version)
{
	struct rd_act *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	snprintf(a->version, sizeof(a->version), "%s", version);
	clock_gettime(CLOCK_MONOTONIC, &a->started);
	return a;
}

void rd_act_free(struct rd_act *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void rd_act_set_budget(struct rd_act *a, uint64_t budget, uint64_t per_session)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->budget = budget;
	a->per_session = per_session;
	pthread_mutex_unlock(&a->lock);
}

void rd_act_set_listeners(struct rd_act *a, unsigned port, const char *where)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->port = port;
	snprintf(a->listeners, sizeof(a->listeners), "%s", where);
	pthread_mutex_unlock(&a->lock);
}

struct rd_act_sess *rd_act_open(struct rd_act *a, const char *peer, const char *transport)
{
	struct rd_act_sess *s;
	int t;

	if (!a)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->a = a;
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	s->push = -1;
	s->mod = -1;
	s->transport = -1;
	for (t = 0; t < NTRANSPORTS; t++)
		if (!strcmp(transport, transports[t]))
			s->transport = t;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	pthread_mutex_lock(&a->lock);
	s->id = ++a->next_id;
	s->prev = a->tail;
	if (a->tail)
		a->tail->next = s;
	else
		a->head = s;
	a->tail = s;
	if (s->transport >= 0)
		a->now[s->transport]++;
	pthread_mutex_unlock(&a->lock);
	return s;
}

uint64_t rd_act_id(const struct rd_act_sess *s)
{
	return s ? s->id : 0;
}

void rd_act_user(struct rd_act_sess *s, const char *user)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->a->lock);
	snprintf(s->user, sizeof(s->user), "%s", user);
	pthread_mutex_unlock(&s->a->lock);
}

/* The module's slot, made on first use (under the lock); -1 when the table is full. */
static int mod_slot(struct rd_act *a, const char *name)
{
	unsigned i;

	for (i = 0; i < a->nmods; i++)
		if (!strcmp(a->mods[i].name, name))
			return (int)i;
	if (a->nmods == RD_ACT_MODULES_MAX)
		return -1;
	snprintf(a->mods[a->nmods].name, sizeof(a->mods[0].name), "%s", name);
	return (int)a->nmods++;
}

void rd_act_job_start(struct rd_act_sess *s, const char *module, int push,
		      const struct rd_engine *e)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->a->lock);
	snprintf(s->module, sizeof(s->module), "%s", module);
	s->push = push;
	s->mod = mod_slot(s->a, module);
	s->e = e;
	clock_gettime(CLOCK_MONOTONIC, &s->tjob);
	pthread_mutex_unlock(&s->a->lock);
}

void rd_act_job_end(struct rd_act_sess *s, double seconds)
{
	struct rd_act *a;
	uint64_t b;
	size_t i;

	if (!s || !s->e)
		return;
	a = s->a;
	pthread_mutex_lock(&a->lock);
	b = rd_stat_get(&s->e->st.bytes_data);
	if (s->mod >= 0) {
		if (s->push)
			a->mods[s->mod].rx += b;
		else
			a->mods[s->mod].tx += b;
	}
	a->chunks_resent += s->e->st.chunks_retried;
	s->e = NULL;
	for (i = 0; i < NBUCKETS && seconds > buckets[i]; i++)
		;
	a->hist[i]++;
	a->hist_sum += seconds;
	a->hist_count++;
	pthread_mutex_unlock(&a->lock);
}

void rd_act_file(struct rd_act_sess *s)
{
	struct act_mod *m;

	if (!s || s->mod < 0)
		return;
	m = &s->a->mods[s->mod];
	atomic_fetch_add_explicit(s->push ? &m->files_rx : &m->files_tx, 1, memory_order_relaxed);
}

void rd_act_close(struct rd_act_sess *s, enum rd_act_result result)
{
	struct rd_act *a;

	if (!s)
		return;
	a = s->a;
	pthread_mutex_lock(&a->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		a->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		a->tail = s->prev;
	if (s->transport >= 0)
		a->now[s->transport]--;
	a->total[result < RD_ACT_RESULTS ? result : RD_ACT_FAILED]++;
	pthread_mutex_unlock(&a->lock);
	free(s);
}

void rd_act_auth_failure(struct rd_act *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->auth_failures++;
	pthread_mutex_unlock(&a->lock);
}

void rd_act_refused(struct rd_act *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->total[RD_ACT_REFUSED]++;
	pthread_mutex_unlock(&a->lock);
}

/* --- readers (under the lock; they write into memory streams only) --- */

static uint64_t live_bytes(const struct rd_act_sess *s)
{
	return s->e ? rd_stat_get(&s->e->st.bytes_data) : 0;
}

static void prom_modules(struct rd_act *a, FILE *f)
{
	const struct rd_act_sess *s;
	uint64_t *rx, *tx;
	unsigned i;

	rx = calloc(a->nmods ? a->nmods : 1, sizeof(*rx));
	tx = calloc(a->nmods ? a->nmods : 1, sizeof(*tx));
	if (!rx || !tx)
		goto out;
	for (i = 0; i < a->nmods; i++) {
		rx[i] = a->mods[i].rx;
		tx[i] = a->mods[i].tx;
	}
	for (s = a->head; s; s = s->next) {
		if (!s->e || s->mod < 0)
			continue;
		if (s->push)
			rx[s->mod] += live_bytes(s);
		else
			tx[s->mod] += live_bytes(s);
	}
	rd_prom_head(f, "rdcpd_bytes_received_total", "counter",
		     "File data received by pushes into each module.");
	for (i = 0; i < a->nmods; i++)
		rd_prom_sample(f, "rdcpd_bytes_received_total", "module", a->mods[i].name, rx[i]);
	rd_prom_head(f, "rdcpd_bytes_sent_total", "counter",
		     "File data sent by pulls from each module.");
	for (i = 0; i < a->nmods; i++)
		rd_prom_sample(f, "rdcpd_bytes_sent_total", "module", a->mods[i].name, tx[i]);
	rd_prom_head(f, "rdcpd_files_total", "counter",
		     "Regular files received into or sent from each module.");
	for (i = 0; i < a->nmods; i++) {
		fputs("rdcpd_files_total{module=", f);
		rd_prom_value(f, a->mods[i].name);
		fprintf(f, ",direction=\"received\"} %llu\n",
			(unsigned long long)atomic_load(&a->mods[i].files_rx));
		fputs("rdcpd_files_total{module=", f);
		rd_prom_value(f, a->mods[i].name);
		fprintf(f, ",direction=\"sent\"} %llu\n",
			(unsigned long long)atomic_load(&a->mods[i].files_tx));
	}
out:
	free(rx);
	free(tx);
}

int rd_act_prometheus(struct rd_act *a, FILE *f)
{
	const struct rd_act_sess *s;
	uint64_t reg = 0, cum = 0;
	size_t i;
	int t;

	pthread_mutex_lock(&a->lock);
	rd_prom_head(f, "rdcpd_build_info", "gauge", "rdcpd's version.");
	rd_prom_sample(f, "rdcpd_build_info", "version", a->version, 1);
	rd_prom_head(f, "rdcpd_sessions", "gauge", "Connections being served now.");
	for (t = 0; t < NTRANSPORTS; t++)
		rd_prom_sample(f, "rdcpd_sessions", "transport", transports[t], a->now[t]);
	rd_prom_head(f, "rdcpd_sessions_total", "counter", "Connections that ended, by result.");
	for (t = 0; t < RD_ACT_RESULTS; t++)
		rd_prom_sample(f, "rdcpd_sessions_total", "result", result_name[t], a->total[t]);
	rd_prom_head(f, "rdcpd_auth_failures_total", "counter",
		     "Clients that failed to authenticate.");
	rd_prom_sample(f, "rdcpd_auth_failures_total", NULL, NULL, a->auth_failures);
	prom_modules(a, f);
	rd_prom_head(f, "rdcpd_chunks_resent_total", "counter",
		     "Chunks sent again after a failed check (counted when a session ends).");
	rd_prom_sample(f, "rdcpd_chunks_resent_total", NULL, NULL, a->chunks_resent);
	for (s = a->head; s; s = s->next)
		if (s->e)
			reg += atomic_load_explicit(&s->e->st.reg_bytes, memory_order_relaxed);
	rd_prom_head(f, "rdcpd_registered_bytes", "gauge",
		     "Data buffers the sessions have registered now.");
	rd_prom_sample(f, "rdcpd_registered_bytes", NULL, NULL, reg);
	rd_prom_head(f, "rdcpd_memory_budget_bytes", "gauge",
		     "The memory budget all sessions share.");
	rd_prom_sample(f, "rdcpd_memory_budget_bytes", NULL, NULL, a->budget);
	rd_prom_head(f, "rdcpd_transfer_seconds", "histogram", "How long transfers ran.");
	for (i = 0; i <= NBUCKETS; i++) {
		cum += a->hist[i];
		if (i < NBUCKETS)
			fprintf(f, "rdcpd_transfer_seconds_bucket{le=\"%g\"} %llu\n", buckets[i],
				(unsigned long long)cum);
		else
			fprintf(f, "rdcpd_transfer_seconds_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cum);
	}
	fprintf(f, "rdcpd_transfer_seconds_sum %.6f\n", a->hist_sum);
	fprintf(f, "rdcpd_transfer_seconds_count %llu\n", (unsigned long long)a->hist_count);
	pthread_mutex_unlock(&a->lock);
	return ferror(f) ? -1 : 0;
}

/* --- rdcpd --status --- */

static const char *direction(const struct rd_act_sess *s)
{
	return s->push < 0 ? "-" : s->push ? "push" : "pull";
}

static void human_bytes(char *out, size_t cap, double v)
{
	static const char *const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
	int i = 0;

	while (v >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	snprintf(out, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void esc_field(FILE *f, const char *s, int width)
{
	char buf[1024];

	rd_escape(buf, sizeof(buf), s, strlen(s));
	fprintf(f, "%-*s", width, buf[0] ? buf : "-");
}

static void status_text(struct rd_act *a, FILE *f)
{
	const struct rd_act_sess *s;
	uint64_t reg = 0, b;
	unsigned n = 0;
	char h1[32], h2[32], h3[32];
	double age, run;

	for (s = a->head; s; s = s->next) {
		n++;
		if (s->e)
			reg += atomic_load_explicit(&s->e->st.reg_bytes, memory_order_relaxed);
	}
	fprintf(f, "rdcpd %s, pid %ld, up %.0f s\n", a->version, (long)getpid(),
		since(&a->started));
	fprintf(f, "listening on port %u: %s\n", a->port, a->listeners[0] ? a->listeners : "-");
	human_bytes(h1, sizeof(h1), (double)n * (double)a->per_session);
	human_bytes(h2, sizeof(h2), (double)a->budget);
	human_bytes(h3, sizeof(h3), (double)reg);
	fprintf(f, "memory: %u session%s may pin %s of the %s budget; %s registered now\n", n,
		n == 1 ? "" : "s", h1, h2, h3);
	fprintf(f, "sessions: %u\n", n);
	if (!n)
		return;
	fprintf(f, "%6s  %-28s %-16s %-16s %-5s %-5s %14s %12s %8s\n", "ID", "PEER", "USER",
		"MODULE", "DIR", "VIA", "BYTES", "RATE", "AGE");
	for (s = a->head; s; s = s->next) {
		b = live_bytes(s);
		age = since(&s->t0);
		run = s->push >= 0 ? since(&s->tjob) : 0;
		human_bytes(h1, sizeof(h1), run > 0 ? (double)b / run : 0);
		fprintf(f, "%6llu  ", (unsigned long long)s->id);
		esc_field(f, s->peer, 28);
		fputc(' ', f);
		esc_field(f, s->user, 16);
		fputc(' ', f);
		esc_field(f, s->module, 16);
		fprintf(f, " %-5s %-5s %14llu %10s/s %7.0fs\n", direction(s),
			s->transport >= 0 ? transports[s->transport] : "-", (unsigned long long)b,
			h1, age);
	}
}

static void json_str(FILE *f, const char *s)
{
	rd_report_json_string(f, s, strlen(s));
}

static void status_json(struct rd_act *a, FILE *f)
{
	const struct rd_act_sess *s;
	uint64_t reg = 0, b;
	unsigned n = 0;
	double run;

	for (s = a->head; s; s = s->next) {
		n++;
		if (s->e)
			reg += atomic_load_explicit(&s->e->st.reg_bytes, memory_order_relaxed);
	}
	fputs("{\"version\": ", f);
	json_str(f, a->version);
	fprintf(f, ", \"pid\": %ld, \"uptime_seconds\": %.3f, \"port\": %u, \"listeners\": ",
		(long)getpid(), since(&a->started), a->port);
	json_str(f, a->listeners);
	fprintf(f,
		", \"memory\": {\"budget_bytes\": %llu, \"per_session_bytes\": %llu, "
		"\"reserved_bytes\": %llu, \"registered_bytes\": %llu}, \"sessions\": [",
		(unsigned long long)a->budget, (unsigned long long)a->per_session,
		(unsigned long long)(n * a->per_session), (unsigned long long)reg);
	for (s = a->head; s; s = s->next) {
		b = live_bytes(s);
		run = s->push >= 0 ? since(&s->tjob) : 0;
		fprintf(f, "%s{\"id\": %llu, \"peer\": ", s == a->head ? "" : ", ",
			(unsigned long long)s->id);
		json_str(f, s->peer);
		fputs(", \"user\": ", f);
		json_str(f, s->user);
		fputs(", \"module\": ", f);
		json_str(f, s->module);
		fprintf(f,
			", \"direction\": %s%s%s, \"transport\": \"%s\", \"bytes\": %llu, "
			"\"rate_bytes_per_sec\": %.1f, \"age_seconds\": %.3f}",
			s->push < 0 ? "" : "\"", s->push < 0 ? "null" : direction(s),
			s->push < 0 ? "" : "\"", s->transport >= 0 ? transports[s->transport] : "",
			(unsigned long long)b, run > 0 ? (double)b / run : 0.0, since(&s->t0));
	}
	fputs("]}\n", f);
}

int rd_act_status(struct rd_act *a, FILE *f, int json)
{
	pthread_mutex_lock(&a->lock);
	if (json)
		status_json(a, f);
	else
		status_text(a, f);
	pthread_mutex_unlock(&a->lock);
	return ferror(f) ? -1 : 0;
}
