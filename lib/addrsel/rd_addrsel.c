// SPDX-License-Identifier: MIT
#include "lib/addrsel/rd_addrsel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_ADDRS 64

struct cand {
	const char *s;
	int idx;	/* given position (rule 10) */
	int usable;	/* has a route (rule 1) */
	struct in6_addr d, src; /* IPv4 as ::ffff:a.b.c.d */
	int v4;
	int dscope, sscope, dlabel, slabel, prec;
};

/* RFC 6724 2.1, the default policy table: prefix, length, precedence, label. */
static const struct policy {
	uint8_t p[16];
	int len, prec, label;
} policy[] = {
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, 50, 0},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96, 35, 4},
    {{0}, 96, 1, 3},
    {{0x20, 0x01}, 32, 5, 5},
    {{0x20, 0x02}, 16, 30, 2},
    {{0x3f, 0xfe}, 16, 1, 12},
    {{0xfe, 0xc0}, 10, 1, 11},
    {{0xfc}, 7, 3, 13},
    {{0}, 0, 40, 1},
};

static int common_bits(const struct in6_addr *a, const struct in6_addr *b, int max)
{
	int i, n = 0;

	for (i = 0; i < 16 && n < max; i++) {
		uint8_t x = a->s6_addr[i] ^ b->s6_addr[i];

		if (!x) {
			n += 8;
			continue;
		}
		while (!(x & 0x80)) {
			n++;
			x = (uint8_t)(x << 1);
		}
		break;
	}
	return n < max ? n : max;
}

static const struct policy *lookup(const struct in6_addr *a)
{
	size_t i;

	/* The table is ordered longest prefix first. */
	for (i = 0; i < sizeof(policy) / sizeof(policy[0]); i++)
		if (common_bits(a, (const struct in6_addr *)(const void *)policy[i].p, 128) >=
		    policy[i].len)
			return &policy[i];
	return &policy[sizeof(policy) / sizeof(policy[0]) - 1];
}

/* Scope (RFC 4291 values): link-local 2, site-local 5, global 14. */
static int scope(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;

	if (IN6_IS_ADDR_MULTICAST(a))
		return b[1] & 0x0f;
	if (IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_LOOPBACK(a))
		return 2;
	if (IN6_IS_ADDR_SITELOCAL(a))
		return 5;
	if (IN6_IS_ADDR_V4MAPPED(a) && (b[12] == 127 || (b[12] == 169 && b[13] == 254)))
		return 2;
	return 14;
}

static void to6(const struct sockaddr_storage *ss, struct in6_addr *out)
{
	if (ss->ss_family == AF_INET) {
		memset(out, 0, sizeof(*out));
		out->s6_addr[10] = 0xff;
		out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)(const void *)ss)->sin_addr,
		       4);
	} else {
		*out = ((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;
	}
}

static int kernel_src(void *ctx, const struct sockaddr_storage *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd, ret = -1;

	(void)ctx;
	fd = socket(dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (!connect(fd, (const struct sockaddr *)dst,
		     dst->ss_family == AF_INET ? sizeof(struct sockaddr_in)
					       : sizeof(struct sockaddr_in6)) &&
	    !getsockname(fd, (struct sockaddr *)src, &len))
		ret = 0;
	close(fd);
	return ret;
}

/* < 0: a before b. */
static int cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	int ma, mb;

	if (a->usable != b->usable) /* rule 1 */
		return b->usable - a->usable;
	if (!a->usable)
		return a->idx - b->idx;
	ma = a->dscope == a->sscope; /* rule 2 */
	mb = b->dscope == b->sscope;
	if (ma != mb)
		return mb - ma;
	ma = a->dlabel == a->slabel; /* rule 5 */
	mb = b->dlabel == b->slabel;
	if (ma != mb)
		return mb - ma;
	if (a->prec != b->prec) /* rule 6 */
		return b->prec - a->prec;
	if (a->dscope != b->dscope) /* rule 8 */
		return a->dscope - b->dscope;
	if (!a->v4 && !b->v4) { /* rule 9 */
		ma = common_bits(&a->d, &a->src, 64);
		mb = common_bits(&b->d, &b->src, 64);
		if (ma != mb)
			return mb - ma;
	}
	return a->idx - b->idx; /* rule 10 */
}

int rd_addr_order(const char **addrs, int n, int family, rd_addrsel_src_fn src, void *ctx)
{
	struct cand c[MAX_ADDRS];
	struct addrinfo hints, *ai;
	struct sockaddr_storage d, s;
	const struct policy *p;
	int i, k = 0;

	if (n > MAX_ADDRS)
		n = MAX_ADDRS;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family ? family : AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_NUMERICHOST;
	for (i = 0; i < n; i++) {
		if (getaddrinfo(addrs[i], "9", &hints, &ai))
			continue;
		memset(&d, 0, sizeof(d));
		memcpy(&d, ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		memset(&c[k], 0, sizeof(c[k]));
		c[k].s = addrs[i];
		c[k].idx = i;
		c[k].v4 = d.ss_family == AF_INET;
		to6(&d, &c[k].d);
		memset(&s, 0, sizeof(s));
		c[k].usable = !(src ? src : kernel_src)(ctx, &d, &s) && s.ss_family == d.ss_family;
		if (c[k].usable)
			to6(&s, &c[k].src);
		p = lookup(&c[k].d);
		c[k].prec = p->prec;
		c[k].dlabel = p->label;
		c[k].slabel = lookup(&c[k].src)->label;
		c[k].dscope = scope(&c[k].d);
		c[k].sscope = scope(&c[k].src);
		k++;
	}
	/* qsort is not stable, but idx breaks every tie. */
	qsort(c, (size_t)k, sizeof(c[0]), cmp);
	for (i = 0; i < k; i++)
		addrs[i] = c[i].s;
	return k;
}
