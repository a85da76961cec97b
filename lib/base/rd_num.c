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
