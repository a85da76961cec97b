// SPDX-License-Identifier: MIT
#include "lib/base/rd_escape.h"

#include <stdint.h>
#include <stdio.h>

size_t rd_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t need, i;
	uint32_t c;

	if (!n)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		need = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		need = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		need = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (need > n)
		return 0;
	for (i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, out of range. */
	if ((need == 2 && c < 0x80) || (need == 3 && c < 0x800) || (need == 4 && c < 0x10000))
		return 0;
	if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	*cp = c;
	return need;
}

/* A printable UTF-8 sequence: valid and not a C1 control. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t k = rd_utf8_decode(s, n, &cp);

	if (k > 1 && cp >= 0x80 && cp < 0xa0)
		return 0;
	return k;
}

static void put(char *dst, size_t dstlen, size_t *pos, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (*pos + 1 < dstlen)
			dst[*pos] = s[i];
		(*pos)++;
	}
}

size_t rd_escape(char *dst, size_t dstlen, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t pos = 0, i = 0, k;
	char tmp[8];

	while (i < len) {
		unsigned char c = s[i];

		if (c == '\\') {
			put(dst, dstlen, &pos, "\\\\", 2);
			i++;
		} else if (c == '\n') {
			put(dst, dstlen, &pos, "\\n", 2);
			i++;
		} else if (c == '\t') {
			put(dst, dstlen, &pos, "\\t", 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", c);
			put(dst, dstlen, &pos, tmp, 4);
			i++;
		} else if ((k = utf8_seq(s + i, len - i)) > 0) {
			put(dst, dstlen, &pos, (const char *)s + i, k);
			i += k;
		} else {
			snprintf(tmp, sizeof(tmp), "\\x%02x", c);
			put(dst, dstlen, &pos, tmp, 4);
			i++;
		}
	}
	if (dstlen > 0)
		dst[pos < dstlen ? pos : dstlen - 1] = '\0';
	return pos;
}
