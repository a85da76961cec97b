// SPDX-License-Identifier: MIT
/*
 * The meter thread. It wakes about once a second, takes a snapshot of the
 * engine's counters, keeps the last few snapshots of bytes_data for a
 * sliding-window rate, and redraws one line with rd_progress_format().
 *
 * The engine's counters the meter reads are atomics (relaxed loads: each
 * value whole, maybe a moment old, then trusted only as far as clamping
 * allows); the current name comes whole through rd_engine_stats_name(),
 * or the meter keeps the name it had.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_err.h"
#include "lib/progress/rd_progress.h"

#define TICK_MS	  1000
#define WINDOW_S  5 /* the rate is measured over the last WINDOW_S seconds */
#define NSAMPLES  (WINDOW_S + 1)
#define NAME_COPY sizeof(((struct rd_engine_stats *)0)->cur_name)

struct snap {
	uint64_t bytes_data, cur_size, cur_done;
	uint64_t done, total, ndone, nann; /* the whole transfer (RD_PROGRESS_TOTAL) */
	char name[NAME_COPY + 1];
};

struct sample {
	double t;
	uint64_t bytes;
};

struct rd_progress {
	FILE *tty;
	struct rd_engine_stats *st; /* only its name lock is written */
	unsigned flags;
	int draw;    /* may draw at all (terminal or FORCE) */
	int running; /* thread started */
	pthread_t thr;
	pthread_mutex_t mu; /* stop, drawn, suspended, and the stream */
	pthread_cond_t cv;
	int stop;
	int drawn;	    /* a line is on the screen (no newline yet) */
	int shown;	    /* a line was drawn at some point */
	unsigned last_cols; /* columns of the line on the screen */
	struct sample win[NSAMPLES];
	unsigned nwin, head;
	char file_name[NAME_COPY + 1]; /* to notice the next file */
	uint64_t file_size;
	double file_t0;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void take_snap(struct rd_engine_stats *st, const char *last, struct snap *s)
{
	s->bytes_data = rd_stat_get(&st->bytes_data);
	s->cur_size = rd_stat_get(&st->cur_size);
	s->cur_done = rd_stat_get(&st->cur_done);
	s->done = s->bytes_data + rd_stat_get(&st->bytes_resumed);
	s->total = rd_stat_get(&st->bytes_announced);
	s->nann = rd_stat_get(&st->entries_announced);
	s->ndone = rd_stat_get(&st->entries_done);
	/* a name being rewritten right now: keep the one we had */
	if (rd_engine_stats_name(st, s->name, sizeof(s->name)))
		snprintf(s->name, sizeof(s->name), "%s", last);
}

/* Sliding-window rate from the samples, in bytes per second. */
static double window_rate(struct rd_progress *p, double t, uint64_t bytes)
{
	struct sample *old;
	unsigned oldest;
	double dt;

	p->win[p->head].t = t;
	p->win[p->head].bytes = bytes;
	p->head = (p->head + 1) % NSAMPLES;
	if (p->nwin < NSAMPLES)
		p->nwin++;
	oldest = (p->head + NSAMPLES - p->nwin) % NSAMPLES;
	old = &p->win[oldest];
	dt = t - old->t;
	if (dt <= 0 || bytes < old->bytes)
		return 0;
	return (double)(bytes - old->bytes) / dt;
}

/* Terminal columns, or the default when fd is not a terminal. */
static unsigned term_cols(FILE *f)
{
	struct winsize ws;

	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return RD_PROGRESS_WIDTH_DEFAULT;
}

/* scp's rule: a background job does not draw on the terminal. */
static int may_draw(const struct rd_progress *p)
{
	pid_t fg;

	if (!p->draw)
		return 0;
	if (p->flags & RD_PROGRESS_FORCE)
		return 1;
	fg = tcgetpgrp(fileno(p->tty));
	return fg == -1 || fg == getpgrp();
}

/* Take a snapshot, update the rate window and the file clock, and draw
 * unless only sampling. Called with p->mu held (or after the join). */
static void render(struct rd_progress *p, int sample_only)
{
	char line[RD_PROGRESS_LINE_MAX];
	struct snap s;
	double t = now_s(), rate;
	unsigned cols;

	take_snap(p->st, p->file_name, &s);
	rate = window_rate(p, t, (p->flags & RD_PROGRESS_TOTAL) ? s.done : s.bytes_data);
	if (strcmp(s.name, p->file_name) || s.cur_size != p->file_size) {
		memcpy(p->file_name, s.name, sizeof(p->file_name));
		p->file_size = s.cur_size;
		p->file_t0 = t;
	}
	if (sample_only || !may_draw(p) || (!s.name[0] && !(p->flags & RD_PROGRESS_TOTAL)))
		return;
	cols = term_cols(p->tty);
	cols = cols > 1 ? cols - 1 : 1; /* the last column stays empty: no wrap */
	if (cols > RD_PROGRESS_WIDTH_MAX)
		cols = RD_PROGRESS_WIDTH_MAX;
	if (p->flags & RD_PROGRESS_TOTAL) {
		/* rsync's progress2: one line for everything, padded over a longer one */
		size_t n = rd_progress_format_total(line, sizeof(line), s.done, s.total, rate,
						    s.ndone, s.nann, (int)(p->flags >> 8) & 3);

		if (n < p->last_cols && p->last_cols < sizeof(line)) {
			memset(line + n, ' ', p->last_cols - n);
			line[p->last_cols] = '\0';
		}
		cols = (unsigned)(n > p->last_cols ? n : p->last_cols);
	} else {
		rd_progress_format(line, sizeof(line), cols, s.name, s.cur_done, s.cur_size, rate,
				   t - p->file_t0);
	}
	fputc('\r', p->tty);
	fputs(line, p->tty);
	fflush(p->tty);
	p->drawn = 1;
	p->shown = 1;
	p->last_cols = cols;
}

static void *meter(void *arg)
{
	struct rd_progress *p = arg;
	struct timespec next;

	pthread_mutex_lock(&p->mu);
	clock_gettime(CLOCK_MONOTONIC, &next);
	/* a first sample at the start, so the first rate covers a whole second */
	render(p, 1);
	while (!p->stop) {
		next.tv_sec += TICK_MS / 1000;
		next.tv_nsec += (long)(TICK_MS % 1000) * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &next) != ETIMEDOUT)
			;
		if (!p->stop)
			render(p, 0);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int rd_progress_start(struct rd_progress **out, FILE *tty, struct rd_engine_stats *st,
		      unsigned flags)
{
	struct rd_progress *p;
	pthread_condattr_t ca;
	int ret = -RD_ESYS;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -RD_ENOMEM;
	p->tty = tty;
	p->st = st;
	p->flags = flags;
	p->draw = tty && st && ((flags & RD_PROGRESS_FORCE) || isatty(fileno(tty)));
	if (!p->draw) {
		/* nothing to draw on: a valid object without a thread */
		*out = p;
		return 0;
	}
	if (pthread_mutex_init(&p->mu, NULL))
		goto out_free;
	if (pthread_condattr_init(&ca))
		goto out_mutex;
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&p->cv, &ca)) {
		pthread_condattr_destroy(&ca);
		goto out_mutex;
	}
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->thr, NULL, meter, p))
		goto out_cond;
	p->running = 1;
	*out = p;
	return 0;

out_cond:
	pthread_cond_destroy(&p->cv);
out_mutex:
	pthread_mutex_destroy(&p->mu);
out_free:
	free(p);
	return ret;
}

void rd_progress_stop(struct rd_progress *p)
{
	if (!p)
		return;
	if (p->running) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thr, NULL);
		/* the thread is gone: no lock needed any more */
		if (p->shown) {
			render(p, 0); /* the final counters */
			fputc('\n', p->tty);
			fflush(p->tty);
		}
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
	}
	free(p);
}

void rd_progress_suspend(struct rd_progress *p)
{
	unsigned i;

	if (!p || !p->running)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->drawn) {
		fputc('\r', p->tty);
		for (i = 0; i < p->last_cols; i++)
			fputc(' ', p->tty);
		fputc('\r', p->tty);
		fflush(p->tty);
		p->drawn = 0;
	}
	/* keep the lock until rd_progress_resume(): the meter waits */
}

void rd_progress_resume(struct rd_progress *p)
{
	if (!p || !p->running)
		return;
	pthread_mutex_unlock(&p->mu);
}
