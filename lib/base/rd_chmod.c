// SPDX-License-Identifier: MIT
/* rsync's --chmod: the grammar and its meaning are in rd_chmod.h. */
#include <string.h>
#include <sys/stat.h>

#include "lib/base/rd_chmod.h"

#define PERM_BITS 07777u

/* The class letters u, g, o, a as a mask of their rwx bits. */
static unsigned class_of(char c)
{
	switch (c) {
	case 'u':
		return 0700;
	case 'g':
		return 0070;
	case 'o':
		return 0007;
	case 'a':
		return 0777;
	default:
		return 0;
	}
}

/* rwx of class mask `from` (one class), spread over the classes in `to`. */
static unsigned spread(unsigned rwx, unsigned to)
{
	return ((to & 0700) ? rwx << 6 : 0) | ((to & 0070) ? rwx << 3 : 0) |
	       ((to & 0007) ? rwx : 0);
}

static unsigned rwx_of(uint32_t mode, unsigned cls)
{
	return cls == 0700 ? (mode >> 6) & 7 : cls == 0070 ? (mode >> 3) & 7 : mode & 7;
}

/* The special bits that go with the classes in who: setuid, setgid, sticky. */
static unsigned specials_of(unsigned who)
{
	return ((who & 0700) ? S_ISUID : 0) | ((who & 0070) ? S_ISGID : 0) |
	       ((who & 0007) ? S_ISVTX : 0);
}

/* One item, s..end (no comma). 0 or -1. */
static int parse_item(struct rd_chmod_item *it, const char *s, const char *end, mode_t umask)
{
	unsigned who = 0, rwx = 0, special = 0, v = 0;

	memset(it, 0, sizeof(*it));
	if (s < end && (*s == 'D' || *s == 'F'))
		it->only = (uint8_t)*s++;
	if (s < end && *s >= '0' && *s <= '7') {
		for (; s < end; s++) {
			if (*s < '0' || *s > '7')
				return -1;
			v = v * 8 + (unsigned)(*s - '0');
			if (v > PERM_BITS)
				return -1;
		}
		it->op = '0';
		it->bits = (uint16_t)v;
		return 0;
	}
	for (; s < end && class_of(*s); s++)
		who |= class_of(*s);
	if (s == end || (*s != '+' && *s != '-' && *s != '='))
		return -1;
	it->op = (uint8_t)*s++;
	it->who = (uint16_t)who;
	if (s + 1 == end && (*s == 'u' || *s == 'g' || *s == 'o')) {
		it->copy = (uint16_t)class_of(*s);
		it->mask = (uint16_t)(who ? PERM_BITS : PERM_BITS & ~(umask & 0777));
		it->clr = (uint16_t)specials_of(who ? who : 0777);
		return 0;
	}
	for (; s < end; s++) {
		switch (*s) {
		case 'r':
			rwx |= 4;
			break;
		case 'w':
			rwx |= 2;
			break;
		case 'X':
			it->x_keep = 1;
			/* fall through */
		case 'x':
			rwx |= 1;
			break;
		case 's':
			/* no class, or only o: setuid (chmod(1): "u+s" is meant) */
			special |= (who & 0770) ? specials_of(who & 0770) : S_ISUID;
			it->clr = (uint16_t)specials_of(who & 0770);
			break;
		case 't':
			special |= S_ISVTX;
			break;
		default:
			return -1;
		}
	}
	it->bits = (uint16_t)(spread(rwx, who ? who : 0777) | special);
	if (!who)
		it->bits &= (uint16_t) ~(umask & 0777);
	return 0;
}

int rd_chmod_parse(struct rd_chmod *c, const char *s, mode_t umask)
{
	struct rd_chmod tmp = *c;
	const char *end;

	if (!s || !*s)
		return -1;
	for (;;) {
		end = strchrnul(s, ',');
		if (tmp.n >= RD_CHMOD_ITEMS_MAX || end == s ||
		    parse_item(&tmp.item[tmp.n], s, end, umask))
			return -1;
		tmp.n++;
		if (!*end)
			break;
		s = end + 1;
	}
	*c = tmp;
	return 0;
}

uint32_t rd_chmod_apply(const struct rd_chmod *c, uint32_t mode)
{
	uint32_t type = mode & ~(uint32_t)PERM_BITS, perm = mode & PERM_BITS;
	int dir = S_ISDIR(mode), had_x = !!(mode & 0111);
	unsigned i, who, bits;

	for (i = 0; c && i < c->n; i++) {
		const struct rd_chmod_item *it = &c->item[i];

		if ((it->only == 'D' && !dir) || (it->only == 'F' && dir))
			continue;
		if (it->op == '0') {
			perm = it->bits;
			continue;
		}
		who = it->who ? it->who : 0777;
		bits = it->copy ? spread(rwx_of(perm, it->copy), who) & it->mask : it->bits;
		/* X: execute only for directories and files that had some x */
		if (it->x_keep && !dir && !had_x && it->op != '-')
			bits &= ~0111u;
		switch (it->op) {
		case '+':
			perm |= bits;
			break;
		case '-':
			perm &= ~bits;
			break;
		default: /* '=': the classes named get exactly bits */
			perm &= ~(who | it->clr);
			perm |= bits;
			break;
		}
	}
	return type | (perm & PERM_BITS);
}

void rd_perm_string(char out[10], uint32_t m)
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	for (i = 0; i < 9; i++)
		out[i] = m & (0400u >> i) ? rwx[i] : '-';
	if (m & S_ISUID)
		out[2] = out[2] == 'x' ? 's' : 'S';
	if (m & S_ISGID)
		out[5] = out[5] == 'x' ? 's' : 'S';
	if (m & S_ISVTX)
		out[8] = out[8] == 'x' ? 't' : 'T';
	out[9] = '\0';
}
