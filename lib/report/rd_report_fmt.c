// SPDX-License-Identifier: MIT
/* rsync's output formats (rd_report_fmt.h says which and how). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/base/rd_chmod.h"
#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/report/rd_report_fmt.h"

/* Append s (n bytes) at out[*len], keeping the count of what would fit. */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len < cap) {
		size_t k = cap - *len - 1 < n ? cap - *len - 1 : n;

		memcpy(out + *len, s, k);
		out[*len + k] = '\0';
	}
	*len += n;
}

static void pad(char *out, size_t cap, size_t *len, size_t n)
{
	while (n--)
		put(out, cap, len, " ", 1);
}

/* Digits of v, grouped by three with ',' when grouped (rsync's separator in C). */
static size_t digits(char *out, size_t cap, uint64_t v, int neg, int grouped, const char *fract)
{
	char buf[48], *p = buf + sizeof(buf);
	int n = 0;
	size_t len = 0;

	*--p = '\0';
	do {
		if (grouped && n && n % 3 == 0)
			*--p = ',';
		*--p = (char)('0' + v % 10);
		v /= 10;
		n++;
	} while (v);
	if (neg)
		*--p = '-';
	if (cap)
		out[0] = '\0';
	put(out, cap, &len, p, strlen(p));
	if (fract)
		put(out, cap, &len, fract, strlen(fract));
	return len;
}

static size_t num_fract(char *out, size_t cap, int64_t v, int human, const char *fract)
{
	uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	if (human > 1) {
		unsigned mult = human == 2 ? 1000 : 1024;

		if (a >= mult) {
			static const char units[] = "KMGTP";
			double d = (double)a / mult;
			int u = 0;

			while (d >= mult && u < 4) {
				d /= mult;
				u++;
			}
			return (size_t)snprintf(out, cap, "%s%.2f%c", v < 0 ? "-" : "", d,
						units[u]);
		}
	}
	return digits(out, cap, a, v<0, human> 0, fract);
}

size_t rd_report_num(char *out, size_t cap, int64_t v, int human)
{
	return num_fract(out, cap, v, human, NULL);
}

size_t rd_report_dnum(char *out, size_t cap, double v, int human, int dec)
{
	char buf[64];
	const char *f;

	if (!isfinite(v))
		v = 0;
	snprintf(buf, sizeof(buf), "%.*f", dec, v);
	if (!human || (v < 1000.0 && v > -1000.0))
		return (size_t)snprintf(out, cap, "%s", buf);
	for (f = buf + 1; *f >= '0' && *f <= '9'; f++)
		;
	return num_fract(out, cap, (int64_t)v, human, f);
}

void rd_report_itemize(char out[12], unsigned items, uint8_t type, uint32_t mode, int push)
{
	int link = type == RD_FT_SYMLINK, i, all_dots = 1;

	if (items & RD_ITEM_UNKNOWN)
		out[0] = type == RD_FT_REG ? (push ? '<' : '>') : 'c';
	else
		out[0] = items & RD_IT_HLINK   ? 'h'
			 : items & RD_IT_LOCAL ? 'c'
			 : items & RD_IT_XFER  ? (push ? '<' : '>')
					       : '.';
	out[1] = link			 ? 'L'
		 : type == RD_FT_DIR	 ? 'd'
		 : type == RD_FT_SPECIAL ? ((S_ISCHR(mode) || S_ISBLK(mode)) ? 'D' : 'S')
					 : 'f';
	out[2] = items & RD_IT_CHANGE ? 'c' : '.';
	out[3] = !link && (items & RD_IT_SIZE) ? 's' : '.';
	out[4] = items & RD_IT_TIME ? 't' : '.';
	out[5] = items & RD_IT_PERMS ? 'p' : '.';
	out[6] = items & RD_IT_OWNER ? 'o' : '.';
	out[7] = items & RD_IT_GROUP ? 'g' : '.';
	out[8] = '.'; /* u, n, b: access and creation times are not kept */
	out[9] = items & RD_IT_ACL ? 'a' : '.';
	out[10] = items & RD_IT_XATTR ? 'x' : '.';
	out[11] = '\0';
	if (items & (RD_IT_NEW | RD_ITEM_UNKNOWN)) {
		for (i = 2; i < 11; i++)
			out[i] = items & RD_ITEM_UNKNOWN ? '?' : '+';
		return;
	}
	/* nothing changed: dots become spaces (".f          name") */
	for (i = 2; i < 11; i++)
		all_dots &= out[i] == '.';
	if (all_dots && out[0] != '<' && out[0] != '>')
		for (i = 2; i < 11; i++)
			out[i] = ' ';
}

/* A backslash, '#' and three digits: what rsync's escapes look like. */
static int looks_escaped(const unsigned char *s, size_t n)
{
	return n >= 5 && s[1] == '#' && s[2] >= '0' && s[2] <= '9' && s[3] >= '0' && s[3] <= '9' &&
	       s[4] >= '0' && s[4] <= '9';
}

size_t rd_report_name(char *out, size_t cap, const char *str, size_t len)
{
	return rd_report_name_as(out, cap, str, len, 1);
}

size_t rd_report_name_as(char *out, size_t cap, const char *str, size_t len, int utf8)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n = 0, k;
	uint32_t cp;
	char esc[8];

	if (cap)
		out[0] = '\0';
	while (i < len) {
		k = rd_utf8_decode(s + i, len - i, &cp);
		if (k && (utf8 || cp < 0x80) && cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f) &&
		    !(cp == '\\' && looks_escaped(s + i, len - i))) {
			put(out, cap, &n, str + i, k);
			i += k;
			continue;
		}
		/* one byte at a time: a control character, a byte of bad UTF-8
		 * (or of any character past ASCII when names are not UTF-8) */
		k = k ? k : 1;
		while (k--) {
			snprintf(esc, sizeof(esc), "\\#%03o", s[i++]);
			put(out, cap, &n, esc, 5);
		}
	}
	return n;
}

/* "2024/01/02 03:04:05" (local time), rsync's timestring; with '-' for the space if dash. */
static void timestr(char out[32], int64_t t, int dash)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm)) {
		snprintf(out, 32, "(time out of range)");
		return;
	}
	snprintf(out, 32, "%04d/%02d/%02d%c%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, dash ? '-' : ' ', tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* One escape's text (before its width): into val, or points *s at it. */
static size_t one_escape(char c, int quotes, const struct rd_item *it,
			 const struct rd_report_fmt_ctx *cx, char *val, size_t cap, const char **s,
			 int *known)
{
	int xfer = it->items & (RD_IT_XFER | RD_ITEM_UNKNOWN) && it->type == RD_FT_REG;
	int64_t len;
	size_t n;

	*s = val;
	*known = 1;
	switch (c) {
	case 'n':
	case 'f':
		n = rd_report_name_as(val, cap, it->path, it->len, !cx->ascii);
		if (c == 'n' && it->type == RD_FT_DIR && n + 1 < cap) {
			val[n++] = '/';
			val[n] = '\0';
		}
		return n;
	case 'L':
		if (!it->target || !it->tlen ||
		    (it->type != RD_FT_SYMLINK && it->type != RD_FT_HLINK))
			return val[0] = '\0', 0;
		snprintf(val, cap, "%s", it->type == RD_FT_HLINK ? " => " : " -> ");
		return 4 + rd_report_name_as(val + 4, cap > 4 ? cap - 4 : 0, it->target, it->tlen,
					     !cx->ascii);
	case 'i':
		if (cap < 12)
			return val[0] = '\0', 0;
		rd_report_itemize(val, it->items, it->type, it->mode, cx->push);
		return 11;
	case 'l':
		len = it->type == RD_FT_REG || it->type == RD_FT_HLINK ? (int64_t)it->size
		      : it->type == RD_FT_SYMLINK		       ? (int64_t)it->tlen
								       : 0;
		return rd_report_num(val, cap, len, quotes);
	case 'b':
	case 'c':
		return rd_report_num(val, cap, c == 'b' && xfer ? (int64_t)it->bytes : 0, quotes);
	case 'o':
		return (size_t)snprintf(val, cap, "%s", cx->push ? "send" : "recv");
	case 't':
	case 'M': {
		char t[32];

		timestr(t, c == 't' ? (int64_t)cx->now : it->mtime_sec, c == 'M');
		return (size_t)snprintf(val, cap, "%s", t);
	}
	case 'B':
		if (cap < 10)
			return val[0] = '\0', 0;
		rd_perm_string(val, it->mode);
		return 9;
	case 'U':
		return (size_t)snprintf(val, cap, "%" PRIu32, it->uid);
	case 'G':
		return (size_t)snprintf(val, cap, "%" PRIu32, it->gid);
	case 'p':
		return (size_t)snprintf(val, cap, "%ld", cx->pid);
	case 'C': /* no whole-file checksum here: rsync's blanks (32 for MD5) */
		return (size_t)snprintf(val, cap, "%32s", "");
	case '%':
		return (size_t)snprintf(val, cap, "%%");
	case 'h':
	case 'a':
	case 'm':
	case 'P':
	case 'u': /* a daemon's: the client's host, address, module, path, user */
		return val[0] = '\0', 0;
	default:
		*known = 0;
		return val[0] = '\0', 0;
	}
}

size_t rd_report_fmt(char *out, size_t cap, const char *fmt, const struct rd_item *it,
		     const struct rd_report_fmt_ctx *cx)
{
	char val[4 * RD_PATH_MAX + 16];
	const char *p = fmt, *start, *s;
	size_t len = 0, n;
	int quotes, width, left, known;

	if (cap)
		out[0] = '\0';
	while (*p) {
		if (*p != '%') {
			n = strcspn(p, "%");
			put(out, cap, &len, p, n);
			p += n;
			continue;
		}
		start = p++;
		quotes = width = left = 0;
		while (*p == '\'')
			quotes++, p++;
		if (*p == '-')
			left = 1, p++;
		while (*p >= '0' && *p <= '9' && width < 1000)
			width = width * 10 + (*p++ - '0');
		while (*p == '\'')
			quotes++, p++;
		if (!*p) {
			put(out, cap, &len, start, (size_t)(p - start));
			break;
		}
		n = one_escape(*p, quotes, it, cx, val, sizeof(val), &s, &known);
		if (!known) { /* not an escape: as written */
			put(out, cap, &len, start, (size_t)(p + 1 - start));
			p++;
			continue;
		}
		p++;
		if (n > sizeof(val) - 1)
			n = sizeof(val) - 1;
		if (!left)
			pad(out, cap, &len, (size_t)width > n ? (size_t)width - n : 0);
		put(out, cap, &len, s, n);
		if (left)
			pad(out, cap, &len, (size_t)width > n ? (size_t)width - n : 0);
	}
	return len;
}

int rd_report_fmt_has(const char *fmt, char c)
{
	const char *p = fmt;

	while (p && (p = strchr(p, '%'))) {
		p++;
		while (*p == '\'' || *p == '-' || (*p >= '0' && *p <= '9'))
			p++;
		if (!*p)
			return 0;
		if (*p == c)
			return 1;
		p++; /* %% included */
	}
	return 0;
}
