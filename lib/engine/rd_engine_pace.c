// SPDX-License-Identifier: MIT
/*
 * Pacing (rdcp --bwlimit, rdcpd's max rate): a token bucket that a side
 * consults before it moves a chunk's bytes. The receiver asks before a GET
 * of data (a SUM moves a digest, not the chunk), the sender before it
 * answers one with a WRITE; so whichever side carries a limit holds the
 * flow to it, and with limits on both the lower wins.
 *
 * The bucket may go into debt: a chunk may leave whenever the balance is
 * not negative, and its bytes are charged after. A chunk larger than the
 * burst still moves (at the rate), and the long-run rate is exact: over
 * any window the bytes moved exceed rate x window by at most one chunk
 * plus the burst. Waiting is never busy: rd_pace_wait() says how long,
 * and the engine's loop sleeps in its poll for that long (or until a
 * message comes).
 */
#include <time.h>

#include "lib/engine/rd_engine.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void rd_pace_init(struct rd_pace *p, uint64_t rate)
{
	p->rate = rate;
	p->rate_fn = NULL;
	p->rate_ctx = NULL;
	p->tokens = 0;
	p->last = 0;
	p->asked = 0;
}

/* The rate now; a shared limit is asked at most every 100 ms. */
static uint64_t pace_rate(struct rd_pace *p, double now)
{
	if (p->rate_fn && now - p->asked >= 0.1) {
		p->rate = p->rate_fn(p->rate_ctx);
		p->asked = now;
	}
	return p->rate;
}

/* Bring the balance up to now; the burst is a tenth of a second's worth. */
static void refill(struct rd_pace *p, double now, uint64_t rate)
{
	double burst = (double)rate / 10;

	if (p->last == 0)
		p->tokens = burst; /* a session starts with one burst */
	else
		p->tokens += (now - p->last) * (double)rate;
	if (p->tokens > burst)
		p->tokens = burst;
	p->last = now;
}

int rd_pace_wait(struct rd_pace *p)
{
	double now, ms;
	uint64_t rate;

	if (!p)
		return 0;
	now = now_s();
	rate = pace_rate(p, now);
	if (!rate)
		return 0;
	refill(p, now, rate);
	if (p->tokens >= 0)
		return 0;
	ms = -p->tokens * 1000.0 / (double)rate;
	return ms < 1 ? 1 : ms > RD_PACE_WAIT_MAX_MS ? RD_PACE_WAIT_MAX_MS : (int)(ms + 0.999);
}

void rd_pace_charge(struct rd_pace *p, uint64_t len)
{
	if (!p || !p->rate)
		return;
	p->tokens -= (double)len;
}

uint32_t rd_pace_chunk_max(uint64_t rate)
{
	uint32_t c = RD_CHUNK_MAX;

	if (!rate)
		return c;
	/* a chunk takes at most a quarter of a second at the rate */
	while (c > RD_CHUNK_MIN && (uint64_t)c * 4 > rate)
		c >>= 1;
	return c;
}
