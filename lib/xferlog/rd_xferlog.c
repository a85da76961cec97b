// SPDX-License-Identifier: MIT
/*
 * Transfer log lines (rd_xferlog.h). rsync's log.c is the model for the
 * escape syntax: after '%' come apostrophes, '-' and digits in any order,
 * then the letter.
 */
#include "lib/xferlog/rd_xferlog.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/base/rd_chmod.h"
#include "lib/base/rd_escape.h"

#define WIDTH_MAX 256 /* a wider field is cut to this */

static const char known[] = "abBcfGhilmMnopPtuUksx%";

struct spec {
	int left, human;
	unsigned width;
	char letter;
};

/* Parse the escape after a '%' at fmt; returns what it used, or 0 if it is dangling. */
static size_t parse_spec(const char *fmt, struct spec *sp)
{
	size_t i = 0;

	memset(sp, 0, sizeof(*sp));
	for (;; i++) {
		if (fmt[i] == '\'') {
			sp->human++;
		} else if (fmt[i] == '-') {
			sp->left = 1;
		} else if (fmt[i] >= '0' && fmt[i] <= '9') {
			if (sp->width < WIDTH_MAX)
				sp->width = sp->width * 10 + (unsigned)(fmt[i] - '0');
		} else {
			break;
		}
	}
	if (!fmt[i])
		return 0;
	if (sp->width > WIDTH_MAX)
		sp->width = WIDTH_MAX;
	sp->letter = fmt[i];
	return i + 1;
}

int rd_xferlog_check(const char *fmt, char *why, size_t len)
{
	struct spec sp;
	size_t n;

	while ((fmt = strchr(fmt, '%'))) {
		n = parse_spec(fmt + 1, &sp);
		if (!n) {
			snprintf(why, len, "a '%%' at the end of the format names no escape");
			return -1;
		}
		if (!strchr(known, sp.letter)) {
			if (sp.letter == 'C' || sp.letter == 'L')
				snprintf(why, len,
					 "%%%c is not supported by rdcpd (it keeps no full-file "
					 "checksums or link targets for the log)",
					 sp.letter);
			else
				snprintf(why, len, "%%%c is not a log format escape", sp.letter);
			return -1;
		}
		fmt += n + 1;
	}
	return 0;
}

int rd_xferlog_uses(const char *fmt, char letter)
{
	struct spec sp;
	size_t n;

	while ((fmt = strchr(fmt, '%'))) {
		n = parse_spec(fmt + 1, &sp);
		if (!n)
			return 0;
		if (sp.letter == letter)
			return 1;
		fmt += n + 1;
	}
	return 0;
}

void rd_xferlog_time(char *out, size_t cap, time_t t)
{
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(out, cap, "%Y/%m/%d %H:%M:%S", &tm))
		snprintf(out, cap, "%s", "?");
}

/* rsync's numbers: level 1 digit groups, 2 units of 1000, 3 units of 1024. */
static void human(char *out, size_t cap, uint64_t v, int level)
{
	static const char units[] = "KMGTPE";
	char digits[32];
	size_t n, i, o = 0;
	double d;
	unsigned mult = level == 2 ? 1000 : 1024;
	int u = 0;

	if (level >= 2 && v >= mult) {
		d = (double)v / mult;
		while (d >= mult && units[u + 1]) {
			d /= mult;
			u++;
		}
		snprintf(out, cap, "%.2f%c", d, units[u]);
		return;
	}
	n = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, v);
	if (!level) {
		snprintf(out, cap, "%s", digits);
		return;
	}
	for (i = 0; i < n && o + 2 < cap; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
}

static size_t esc(char *out, size_t cap, const char *s, size_t n)
{
	size_t need = rd_escape(out, cap, s ? s : "", s ? n : 0);

	return need < cap ? need : cap - 1;
}

/* The value of one escape into val. */
static void value(char *val, size_t cap, const struct spec *sp, const struct rd_xfer_item *it)
{
	uint64_t num = 0;
	size_t n;

	switch (sp->letter) {
	case 'a':
	case 'h':
		esc(val, cap, it->addr, it->addr ? strlen(it->addr) : 0);
		return;
	case 'b':
		num = it->bytes;
		break;
	case 'c':
		num = it->kept;
		break;
	case 'l':
		num = it->size;
		break;
	case 'p':
		num = (uint64_t)it->pid;
		break;
	case 's':
		num = it->session;
		break;
	case 'U':
		num = it->uid;
		break;
	case 'G':
		num = it->gid;
		break;
	case 'B':
		if (cap < 10)
			return;
		rd_perm_string(val, it->mode);
		return;
	case 'f':
		esc(val, cap, it->path, it->plen);
		return;
	case 'n':
		n = esc(val, cap, it->name, it->nlen);
		if (it->ftype == 'd' && n + 1 < cap && (!n || val[n - 1] != '/')) {
			val[n] = '/';
			val[n + 1] = '\0';
		}
		return;
	case 'i':
		if (it->op && !strcmp(it->op, "del."))
			snprintf(val, cap, "*deleting"); /* rsync's */
		else
			snprintf(val, cap, "%c%c", it->update ? it->update : '.',
				 it->ftype ? it->ftype : 'f');
		return;
	case 'm':
		esc(val, cap, it->module, it->module ? strlen(it->module) : 0);
		return;
	case 'P':
		esc(val, cap, it->module_path, it->module_path ? strlen(it->module_path) : 0);
		return;
	case 'u':
		esc(val, cap, it->user, it->user ? strlen(it->user) : 0);
		return;
	case 'o':
		snprintf(val, cap, "%s", it->op ? it->op : "");
		return;
	case 'k':
		snprintf(val, cap, "%s", it->checksum ? it->checksum : "");
		return;
	case 'x':
		snprintf(val, cap, "%s", it->transport ? it->transport : "");
		return;
	case 't':
		rd_xferlog_time(val, cap, it->now);
		return;
	case 'M': {
		struct tm tm;
		time_t t = (time_t)it->mtime;

		if (!localtime_r(&t, &tm) || !strftime(val, cap, "%Y/%m/%d-%H:%M:%S", &tm))
			snprintf(val, cap, "%s", "?");
		return;
	}
	default:
		val[0] = '\0';
		return;
	}
	human(val, cap, num, sp->human > 3 ? 3 : sp->human);
}

/* Append s (n bytes) to out at *o, cut at cap - 1. */
static void put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
	if (*o + 1 >= cap)
		return;
	if (n > cap - 1 - *o)
		n = cap - 1 - *o;
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = '\0';
}

static void pad(char *out, size_t cap, size_t *o, char ch, size_t n)
{
	while (n-- && *o + 1 < cap) {
		out[(*o)++] = ch;
		out[*o] = '\0';
	}
}

size_t rd_xferlog_format(char *out, size_t cap, const char *fmt, const struct rd_xfer_item *it)
{
	char val[RD_XFERLOG_LINE_MAX];
	const char *pct;
	struct spec sp;
	size_t o = 0, n, vlen;

	if (!cap)
		return 0;
	out[0] = '\0';
	while (*fmt) {
		pct = strchr(fmt, '%');
		if (!pct) {
			put(out, cap, &o, fmt, strlen(fmt));
			break;
		}
		put(out, cap, &o, fmt, (size_t)(pct - fmt));
		n = parse_spec(pct + 1, &sp);
		if (!n) { /* a dangling '%': as it stands */
			put(out, cap, &o, pct, strlen(pct));
			break;
		}
		fmt = pct + 1 + n;
		if (sp.letter == '%') {
			put(out, cap, &o, "%", 1);
			continue;
		}
		if (!strchr(known, sp.letter)) {
			put(out, cap, &o, pct, (size_t)(fmt - pct));
			continue;
		}
		value(val, sizeof(val), &sp, it);
		vlen = strlen(val);
		/* rsync pads every field with blanks ("%07p" too: it prints strings) */
		if (sp.width > vlen && !sp.left)
			pad(out, cap, &o, ' ', sp.width - vlen);
		put(out, cap, &o, val, vlen);
		if (sp.width > vlen && sp.left)
			pad(out, cap, &o, ' ', sp.width - vlen);
	}
	return o;
}
