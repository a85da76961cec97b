// SPDX-License-Identifier: MIT
/*
 * The pure half of the progress meter: one line from a few numbers, and
 * the end-of-copy summary. No I/O, no clock: unit tests call these
 * directly and the meter thread (rd_progress.c) feeds them snapshots.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/rd_escape.h"
#include "lib/progress/rd_progress.h"
#include "lib/report/rd_report_fmt.h"

/*
 * Right-hand part: " 100% 1023.9 MiB 1023.9 MiB/s 99:59:59 ETA", fixed
 * width so the columns do not jump from one refresh to the next.
 */
#define RIGHT_COLS 42
#define NAME_MIN   8
/*
 * Names longer than RAW_PART bytes are cut before escaping into their
 * first and last RAW_PART bytes (which may overlap) and always shortened
 * with "...": each part is wider than half of the widest line, and the
 * stack buffers stay fixed.
 */
#define RAW_PART 1024
#define ESC_PART (4 * RAW_PART + 1)

/* snprintf-like output: counts everything, stores what fits. */
struct out {
	char *buf;
	size_t len;
	size_t pos;
};

static void out_put(struct out *o, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (o->pos + 1 < o->len)
			o->buf[o->pos] = s[i];
		o->pos++;
	}
}

static void out_pad(struct out *o, unsigned n)
{
	while (n--)
		out_put(o, " ", 1);
}

static size_t out_end(struct out *o)
{
	if (o->len > 0)
		o->buf[o->pos < o->len ? o->pos : o->len - 1] = '\0';
	return o->pos;
}

/*
 * One character of escaped text (ASCII or valid UTF-8, as rd_escape()
 * makes it): its length in bytes and its width in columns. Code points
 * from U+1100 (where East Asian wide characters start) count as 2, which
 * may leave a column blank but never wraps the line.
 */
static size_t char_len(const char *s, size_t n, unsigned *cols)
{
	unsigned char c = (unsigned char)s[0];
	size_t k = 1;
	uint32_t cp = c;

	if (c >= 0xf0) {
		k = 4;
		cp = 0x10000;
	} else if (c >= 0xe0) {
		k = 3;
		cp = (uint32_t)(c & 0x0f) << 12 | (n > 1 ? (uint32_t)(s[1] & 0x3f) << 6 : 0);
	} else if (c >= 0xc0) {
		k = 2;
		cp = 0x80;
	}
	if (k > n)
		k = n;
	*cols = cp >= 0x1100 ? 2 : 1;
	return k;
}

static unsigned text_cols(const char *s, size_t n)
{
	unsigned total = 0, w;
	size_t i = 0;

	while (i < n) {
		i += char_len(s + i, n - i, &w);
		total += w;
	}
	return total;
}

/* Bytes of the longest prefix of s that fits in max columns; *cols = its width. */
static size_t head_fit(const char *s, size_t n, unsigned max, unsigned *cols)
{
	size_t i = 0, k;
	unsigned c = 0, w;

	while (i < n) {
		k = char_len(s + i, n - i, &w);
		if (c + w > max)
			break;
		c += w;
		i += k;
	}
	*cols = c;
	return i;
}

/* Offset of the shortest suffix start of s that fits in max columns. */
static size_t tail_fit(const char *s, size_t n, unsigned max, unsigned *cols)
{
	size_t start = n, p;
	unsigned c = 0, w;

	while (start > 0) {
		p = start - 1;
		/* back up over UTF-8 continuation bytes */
		while (p > 0 && ((unsigned char)s[p] & 0xc0) == 0x80)
			p--;
		char_len(s + p, n - p, &w);
		if (c + w > max)
			break;
		c += w;
		start = p;
	}
	*cols = c;
	return start;
}

/*
 * Emit the name in exactly w columns. h/t are the escaped head and tail of
 * the name; when the name was not cut before escaping both are the whole
 * name and cut is 0.
 */
static void put_name(struct out *o, const char *h, size_t hn, const char *t, size_t tn, int cut,
		     unsigned w)
{
	unsigned hc, tc, used;
	size_t hb, ts;

	if (!cut && text_cols(h, hn) <= w) {
		out_put(o, h, hn);
		out_pad(o, w - text_cols(h, hn));
		return;
	}
	if (w < 5) {
		hb = head_fit(h, hn, w, &hc);
		out_put(o, h, hb);
		out_pad(o, w - hc);
		return;
	}
	/* the head gets the odd column: the start of a path says more */
	hb = head_fit(h, hn, (w - 3) - (w - 3) / 2, &hc);
	ts = tail_fit(t, tn, w - 3 - hc, &tc);
	out_put(o, h, hb);
	out_put(o, "...", 3);
	out_put(o, t + ts, tn - ts);
	used = hc + 3 + tc;
	out_pad(o, w - used);
}

void rd_progress_human(char *buf, size_t len, double v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	int u = 0;

	if (!isfinite(v) || v < 0)
		v = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.0f %s", v, unit[u]);
}

/* "mm:ss" below an hour, "h:mm:ss" below 100 hours, else "--:--". */
static void fmt_time(char *buf, size_t len, double s)
{
	uint64_t t;

	if (!isfinite(s) || s < 0)
		s = 0;
	if (s >= 100.0 * 3600) {
		snprintf(buf, len, "--:--");
		return;
	}
	t = (uint64_t)(s + 0.5);
	if (t < 3600)
		snprintf(buf, len, "%02u:%02u", (unsigned)(t / 60), (unsigned)(t % 60));
	else
		snprintf(buf, len, "%u:%02u:%02u", (unsigned)(t / 3600), (unsigned)(t / 60 % 60),
			 (unsigned)(t % 60));
}

static unsigned percent(uint64_t done, uint64_t size)
{
	double p;

	if (done >= size)
		return 100;
	p = (double)done / (double)size * 100.0;
	/* never claim 100% before the last byte */
	return p >= 99.0 ? 99 : (unsigned)p;
}

size_t rd_progress_format(char *buf, size_t len, unsigned width, const char *name, uint64_t done,
			  uint64_t size, double rate_bps, double elapsed)
{
	char h[ESC_PART], t[ESC_PART], d[32], r[32], tm[16];
	char line[RD_PROGRESS_LINE_MAX + 2 * RIGHT_COLS];
	char right[128];
	struct out lo = {line, sizeof(line), 0};
	struct out o = {buf, len, 0};
	size_t nlen, hn, tn, i, k, n;
	unsigned name_w, c, w;
	int cut = 0;

	if (!width)
		width = RD_PROGRESS_WIDTH_DEFAULT;
	if (width > RD_PROGRESS_WIDTH_MAX)
		width = RD_PROGRESS_WIDTH_MAX;
	if (!name)
		name = "";
	if (done > size)
		done = size;
	if (!isfinite(rate_bps) || rate_bps < 0)
		rate_bps = 0;

	/* the name, escaped: never a raw control byte on the terminal */
	nlen = strlen(name);
	if (nlen > RAW_PART) {
		hn = rd_escape(h, sizeof(h), name, RAW_PART);
		tn = rd_escape(t, sizeof(t), name + nlen - RAW_PART, RAW_PART);
		cut = 1;
	} else {
		hn = rd_escape(h, sizeof(h), name, nlen);
		memcpy(t, h, sizeof(t));
		tn = hn;
	}
	if (hn >= sizeof(h))
		hn = sizeof(h) - 1;
	if (tn >= sizeof(t))
		tn = sizeof(t) - 1;

	/* the numbers */
	rd_progress_human(d, sizeof(d), (double)done);
	rd_progress_human(r, sizeof(r), rate_bps);
	strcat(r, "/s");
	if (done >= size)
		fmt_time(tm, sizeof(tm), elapsed);
	else if (rate_bps > 0)
		fmt_time(tm, sizeof(tm), (double)(size - done) / rate_bps);
	else
		snprintf(tm, sizeof(tm), "--:--");
	snprintf(right, sizeof(right), " %3u%% %10s %12s %8s%s", percent(done, size), d, r, tm,
		 done >= size ? "    " : " ETA");

	name_w = width > RIGHT_COLS + NAME_MIN ? width - RIGHT_COLS : NAME_MIN;
	put_name(&lo, h, hn, t, tn, cut, name_w);
	out_put(&lo, right, strlen(right));
	n = lo.pos < sizeof(line) ? lo.pos : sizeof(line) - 1;

	/* exactly width columns: cut a too-narrow line at a character boundary */
	for (i = 0, c = 0; i < n; i += k) {
		k = char_len(line + i, n - i, &w);
		if (c + w > width)
			break;
		c += w;
	}
	out_put(&o, line, i);
	out_pad(&o, width - c);
	return out_end(&o);
}

size_t rd_progress_summary(char *buf, size_t len, const struct rd_engine_stats *st,
			   uint64_t entries, double seconds, const char *checksum)
{
	static const struct rd_engine_stats zero;
	char b1[32], b2[32], tmp[128];
	struct out o = {buf, len, 0};
	int unverified;

	if (!st)
		st = &zero;
	if (!isfinite(seconds) || seconds < 0)
		seconds = 0;
	if (!checksum)
		checksum = "none";
	unverified = !strcmp(checksum, "none");
	rd_progress_human(b1, sizeof(b1), (double)st->bytes_files);
	rd_progress_human(b2, sizeof(b2), seconds > 0 ? (double)st->bytes_data / seconds : 0);
	snprintf(tmp, sizeof(tmp), "%" PRIu64 " entries, %s in %.2f s, %s/s, checksum ", entries,
		 b1, seconds, b2);
	out_put(&o, tmp, strlen(tmp));
	/* the digest name comes from the command line: escape it anyway */
	rd_escape(tmp, sizeof(tmp), checksum, strlen(checksum));
	out_put(&o, tmp, strlen(tmp));
	if (unverified)
		out_put(&o, " (data NOT verified)", 20);
	if (st->files_same) {
		snprintf(tmp, sizeof(tmp), ", %" PRIu64 " already identical", st->files_same);
		out_put(&o, tmp, strlen(tmp));
	}
	if (st->bytes_resumed && st->bytes_resumed != st->bytes_files) {
		rd_progress_human(b1, sizeof(b1), (double)st->bytes_resumed);
		snprintf(tmp, sizeof(tmp), ", %s kept from before (not sent)", b1);
		out_put(&o, tmp, strlen(tmp));
	}
	if (st->packs) {
		snprintf(tmp, sizeof(tmp), ", %" PRIu64 " files in %" PRIu64 " packs",
			 st->files_packed, st->packs);
		out_put(&o, tmp, strlen(tmp));
	}
	if (st->chunks_retried) {
		snprintf(tmp, sizeof(tmp), ", %" PRIu64 " chunks resent", st->chunks_retried);
		out_put(&o, tmp, strlen(tmp));
	}
	return out_end(&o);
}

size_t rd_progress_format_total(char *buf, size_t len, uint64_t done, uint64_t total,
				double rate_bps, uint64_t ndone, uint64_t nannounced, int human)
{
	char num[48], left[32];
	const char *units = "kB/s";
	double rate = isfinite(rate_bps) && rate_bps > 0 ? rate_bps / 1024.0 : 0, remain;
	int pct;

	if (done > total)
		total = done;
	pct = done == total ? 100 : (int)(100.0 * (double)done / (double)total);
	remain = rate > 0 ? (double)(total - done) / 1024.0 / rate : -1;
	if (rate > 1024.0 * 1024.0) {
		rate /= 1024.0 * 1024.0;
		units = "GB/s";
	} else if (rate > 1024.0) {
		rate /= 1024.0;
		units = "MB/s";
	}
	if (remain < 0 || remain > 9999.0 * 3600.0)
		snprintf(left, sizeof(left), "  ??:??:??");
	else
		snprintf(left, sizeof(left), "%4u:%02u:%02u", (unsigned)(remain / 3600.0),
			 (unsigned)(remain / 60.0) % 60, (unsigned)remain % 60);
	rd_report_num(num, sizeof(num), (int64_t)done, human);
	return (size_t)snprintf(
	    buf, len, "%15s %3d%% %7.2f%s %s (xfr#%" PRIu64 ", ir-chk=%" PRIu64 "/%" PRIu64 ")",
	    num, pct, rate, units, left, ndone, nannounced > ndone ? nannounced - ndone : 0,
	    nannounced);
}
