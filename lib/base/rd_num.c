// SPDX-License-Identifier: MIT
#include "lib/base/rd_num.h"

#include <stddef.h>
#include <string.h>

static unsigned suffix_shift(const char *s)
{
	unsigned shift;

	switch (*s) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return 0;
	}
	s++;
	if (!*s || !strcmp(s, "i") || !strcmp(s, "B") || !strcmp(s, "iB"))
		return shift;
	return 0;
}

int rd_num_parse(const char *s, unsigned flags, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s) {
		if (!(flags & RD_NUM_SIZE))
			return -1;
		shift = suffix_shift(s);
		if (!shift)
			return -1;
		if (v > (UINT64_MAX >> shift))
			return -1;
		v <<= shift;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * rsync's size arguments (parse_size_arg in rsync's options.c): a number,
 * perhaps with a fraction, then a unit letter b, k, m, g, t or p (any
 * case; none: dflt), where a letter other than b may be followed by "b"
 * (powers of 1000: "20MB") or "ib" (powers of 1024, as the letter alone),
 * then perhaps "+1" or "-1".
 */
int rd_num_parse_rsync_size(const char *s, char dflt, uint64_t *out)
{
	static const char units[] = "bkmgtp";
	const char *u, *p = s;
	long double v = 0, frac = 1, mult = 1, base = 1024;
	int adj = 0, digits = 0, k;
	char c;

	if (!s)
		return -1;
	if (*p == '-')
		return -2; /* rsync: "too large" (its number is unsigned) */
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		v = v * 10 + (*p - '0');
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
			frac /= 10;
			v += frac * (*p - '0');
		}
	}
	if (!digits)
		return -1;
	c = *p ? *p : dflt;
	if (c >= 'A' && c <= 'Z')
		c = (char)(c - 'A' + 'a');
	u = c ? strchr(units, c) : NULL;
	if (!u)
		return -1;
	if (*p)
		p++;
	if (c != 'b') {
		if (*p == 'b' || *p == 'B') {
			base = 1000;
			p++;
		} else if ((p[0] == 'i' || p[0] == 'I') && (p[1] == 'b' || p[1] == 'B')) {
			p += 2;
		}
	}
	for (k = 0; k < u - units; k++)
		mult *= base;
	if ((p[0] == '+' || p[0] == '-') && p[1] == '1') {
		adj = p[0] == '+' ? 1 : -1;
		p += 2;
	}
	if (*p)
		return -1;
	v = v * mult + adj;
	if (v < 0)
		return -1;
	if (v >= 18446744073709551615.0L)
		return -2;
	*out = (uint64_t)(v + 0.5L);
	return 0;
}
