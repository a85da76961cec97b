// SPDX-License-Identifier: MIT
#include "lib/mpi/rd_hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_MAX 999999999ul

void rd_hostlist_free(struct rd_hostlist *l)
{
	free(l->host);
	l->host = NULL;
	l->n = 0;
}

static int add(struct rd_hostlist *l, const char *spec, struct rd_err *err, const char *pre,
	       size_t plen, const char *num, const char *suf, size_t slen)
{
	size_t nlen = strlen(num);

	if (l->n >= RD_HOSTLIST_MAX)
		return rd_err_set(err, RD_EUSAGE, 0, "host list '%s': more than %d hosts", spec,
				  RD_HOSTLIST_MAX);
	if (plen + nlen + slen == 0 || plen + nlen + slen > RD_HOSTNAME_MAX)
		return rd_err_set(err, RD_EUSAGE, 0, "host list '%s': an empty or too long name",
				  spec);
	snprintf(l->host[l->n++], RD_HOSTNAME_MAX + 1, "%.*s%s%.*s", (int)plen, pre, num, (int)slen,
		 suf);
	return 0;
}

/* A number of at most 9 digits: its value and width. */
static int number(const char **p, unsigned long *v, int *w)
{
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	*v = 0;
	while (*s >= '0' && *s <= '9' && s - *p < 9)
		*v = *v * 10 + (unsigned long)(*s++ - '0');
	if (*s >= '0' && *s <= '9')
		return -1;
	*w = (int)(s - *p);
	*p = s;
	return 0;
}

/* One host of the list: "pre[set]suf" or a plain name, from a to b. */
static int one(struct rd_hostlist *l, const char *spec, const char *a, const char *b,
	       struct rd_err *err)
{
	const char *lb = memchr(a, '[', (size_t)(b - a)), *rb, *p;
	unsigned long lo, hi, v;
	char num[16];
	int w, w2, ret;

	if (!lb) {
		if (memchr(a, ']', (size_t)(b - a)))
			return rd_err_set(err, RD_EUSAGE, 0, "host list '%s': a ']' without '['",
					  spec);
		return add(l, spec, err, a, (size_t)(b - a), "", "", 0);
	}
	rb = memchr(lb, ']', (size_t)(b - lb));
	if (!rb || memchr(rb + 1, '[', (size_t)(b - rb - 1)) ||
	    memchr(rb + 1, ']', (size_t)(b - rb - 1)))
		return rd_err_set(err, RD_EUSAGE, 0,
				  "host list '%s': brackets must pair, one set per host", spec);
	p = lb + 1;
	for (;;) {
		if (number(&p, &lo, &w))
			return rd_err_set(err, RD_EUSAGE, 0,
					  "host list '%s': expected a number of at most 9 digits "
					  "in the brackets",
					  spec);
		hi = lo;
		if (*p == '-') {
			p++;
			if (number(&p, &hi, &w2) || hi < lo)
				return rd_err_set(err, RD_EUSAGE, 0,
						  "host list '%s': a range must go up (like 01-08)",
						  spec);
		}
		if (hi - lo >= RD_HOSTLIST_MAX)
			return rd_err_set(err, RD_EUSAGE, 0, "host list '%s': more than %d hosts",
					  spec, RD_HOSTLIST_MAX);
		for (v = lo; v <= hi; v++) {
			snprintf(num, sizeof(num), "%0*lu", w, v);
			ret = add(l, spec, err, a, (size_t)(lb - a), num, rb + 1,
				  (size_t)(b - rb - 1));
			if (ret)
				return ret;
		}
		if (p == rb)
			return 0;
		if (*p != ',')
			return rd_err_set(err, RD_EUSAGE, 0,
					  "host list '%s': expected ',' or ']' after a number",
					  spec);
		p++;
	}
}

int rd_hostlist_parse(struct rd_hostlist *l, const char *spec, struct rd_err *err)
{
	const char *a = spec, *p;
	int depth = 0, ret;

	memset(l, 0, sizeof(*l));
	if (!spec || !*spec)
		return rd_err_set(err, RD_EUSAGE, 0, "empty host list");
	l->host = calloc(RD_HOSTLIST_MAX, sizeof(*l->host));
	if (!l->host)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "host list");
	for (p = spec;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || !*p) {
			if (p == a) {
				ret = rd_err_set(err, RD_EUSAGE, 0, "host list '%s': an empty name",
						 spec);
				goto fail;
			}
			ret = one(l, spec, a, p, err);
			if (ret)
				goto fail;
			a = p + 1;
		}
		if (!*p)
			break;
	}
	return 0;
fail:
	rd_hostlist_free(l);
	return ret;
}

/* "user@" prefix of s (up to n bytes): copied into d->user; returns the rest. */
static const char *take_user(struct rd_mpi_dest *d, const char *s, size_t n, struct rd_err *err)
{
	const char *at = memchr(s, '@', n);

	if (!at)
		return s;
	if ((size_t)(at - s) >= sizeof(d->user) || at == s) {
		rd_err_set(err, RD_EUSAGE, 0, "user name in '%.*s' is empty or too long", (int)n,
			   s);
		return NULL;
	}
	snprintf(d->user, sizeof(d->user), "%.*s", (int)(at - s), s);
	return at + 1;
}

static int set_path(struct rd_mpi_dest *d, const char *arg, const char *p, struct rd_err *err)
{
	size_t n;

	while (*p == '/')
		p++;
	n = strlen(p);
	while (n && p[n - 1] == '/')
		n--;
	if (!n)
		return rd_err_set(err, RD_EUSAGE, 0, "'%s': name the module (HOSTS::MODULE/PATH)",
				  arg);
	if (n >= sizeof(d->path))
		return rd_err_set(err, RD_EUSAGE, 0, "'%s': path too long", arg);
	memcpy(d->path, p, n);
	d->path[n] = '\0';
	return 0;
}

int rd_mpi_dest_parse(struct rd_mpi_dest *d, const char *arg, struct rd_err *err)
{
	const char *h, *e, *colon, *p;
	char hosts[4096];
	int ret;

	memset(d, 0, sizeof(*d));
	if (!strncmp(arg, "rdcp://", 7)) {
		h = arg + 7;
		e = strchr(h, '/');
		if (!e)
			e = h + strlen(h);
		h = take_user(d, h, (size_t)(e - h), err);
		if (!h)
			return -RD_EUSAGE;
		/* the port follows the last ':' outside brackets */
		colon = NULL;
		for (p = h; p < e; p++) {
			if (*p == '[')
				p = memchr(p, ']', (size_t)(e - p))
					? memchr(p, ']', (size_t)(e - p))
					: e;
			if (p < e && *p == ':')
				colon = p;
		}
		if (colon) {
			if ((size_t)(e - colon - 1) >= sizeof(d->port) || e == colon + 1 ||
			    strspn(colon + 1, "0123456789") < (size_t)(e - colon - 1))
				return rd_err_set(err, RD_EUSAGE, 0, "'%s': bad port", arg);
			snprintf(d->port, sizeof(d->port), "%.*s", (int)(e - colon - 1), colon + 1);
		}
		if ((colon ? colon : e) - h >= (long)sizeof(hosts))
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': host list too long", arg);
		snprintf(hosts, sizeof(hosts), "%.*s", (int)((colon ? colon : e) - h), h);
		ret = set_path(d, arg, e, err);
	} else {
		e = strstr(arg, "::");
		if (!e || memchr(arg, '/', (size_t)(e - arg)))
			return 0; /* a local path */
		h = take_user(d, arg, (size_t)(e - arg), err);
		if (!h)
			return -RD_EUSAGE;
		if (e - h >= (long)sizeof(hosts))
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': host list too long", arg);
		snprintf(hosts, sizeof(hosts), "%.*s", (int)(e - h), h);
		ret = set_path(d, arg, e + 2, err);
	}
	if (ret)
		return ret;
	ret = rd_hostlist_parse(&d->hosts, hosts, err);
	return ret ? ret : 1;
}
