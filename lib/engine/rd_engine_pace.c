// SPDX-License-Identifier: MIT
/*
 * Pacing (rdcp --bwlimit, rdcpd's max rate): a token bucket that a side
 * consults before it moves a chunk's bytes. The receiver asks before a GET
 * of data (a SUM moves a digest, not the chunk), the sender before it
 * answers one with a WRITE; so whichever side carries a limit holds the
 * flow to it, and with limits on both the lower wins.
 *
 * A chunk of len bytes leaves once the bucket holds len tokens, which
 * fill at the rate from a tenth of a second's worth when the session
 * starts: chunk k leaves (k + 1) x len / rate - 0.1 s after the start, so
 * over a copy the rate is the limit, not a chunk and a burst above it
 * (the tenth of a second about makes up for the last chunk's own time on
 * the link and the receiver's commit, which the copy's time includes). The
 * bucket holds at most the chunk and a tenth of a second's worth more, so
 * a loop that woke late (a loaded host) catches up on that much and no
 * more, and a long pause is not followed by a burst. Waiting is never busy:
 * rd_pace_wait() says how long, and the engine's loop sleeps in its poll
 * for that long (or until a message comes).
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

/* Bring the balance up to now: at most the chunk and a tenth of a second. */
static void refill(struct rd_pace *p, double now, uint64_t rate, uint64_t len)
{
	double cap = (double)len + (double)rate / 10;

	if (p->last == 0)
		p->tokens = (double)rate / 10; /* a session starts with a tenth of a second */
	else
		p->tokens += (now - p->last) * (double)rate;
	if (p->tokens > cap)
		p->tokens = cap;
	p->last = now;
}

int rd_pace_wait(struct rd_pace *p, uint64_t len)
{
	double now, ms;
	uint64_t rate;

	if (!p)
		return 0;
	now = now_s();
	rate = pace_rate(p, now);
	if (!rate)
		return 0;
	refill(p, now, rate, len);
	if (p->tokens >= (double)len)
		return 0;
	ms = ((double)len - p->tokens) * 1000.0 / (double)rate;
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
