// SPDX-License-Identifier: MIT
#include "lib/operand/rd_operand.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_part(char *dst, size_t cap, const char *src, size_t len)
{
	if (len >= cap)
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

static int valid_host(const char *h)
{
	const unsigned char *p;

	if (!*h || *h == '-')
		return 0;
	for (p = (const unsigned char *)h; *p; p++)
		if (*p <= ' ' || *p == 0x7f || *p == '/' || *p == '@' || *p == '\\' ||
		    *p == '\'' || *p == '"' || *p == '`' || *p == '$' || *p == ';')
			return 0;
	return 1;
}

static int parse_url(struct rd_operand *op, const char *arg, struct rd_err *err)
{
	const char *p = arg + strlen("rdcp://"), *slash, *hend, *colon = NULL, *at;

	slash = strchr(p, '/');
	if (!slash)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "'%s': expected rdcp://[USER@]HOST[:PORT]/MODULE/PATH", arg);
	at = memchr(p, '@', (size_t)(slash - p));
	if (at) {
		if (copy_part(op->user, sizeof(op->user), p, (size_t)(at - p)) || at == p)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': bad user name", arg);
		p = at + 1;
	}
	if (*p == '[') {
		hend = memchr(p, ']', (size_t)(slash - p));
		if (!hend)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': unclosed '['", arg);
		if (copy_part(op->host, sizeof(op->host), p + 1, (size_t)(hend - p - 1)))
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': host too long", arg);
		if (hend[1] == ':')
			colon = hend + 1;
		else if (hend + 1 != slash)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': junk after ']'", arg);
	} else {
		colon = memchr(p, ':', (size_t)(slash - p));
		hend = colon ? colon : slash;
		if (copy_part(op->host, sizeof(op->host), p, (size_t)(hend - p)))
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': host too long", arg);
	}
	if (colon) {
		size_t n = (size_t)(slash - colon - 1);
		char *end;
		long v;

		if (copy_part(op->port, sizeof(op->port), colon + 1, n) || !n)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': bad port", arg);
		v = strtol(op->port, &end, 10);
		if (*end || v < 1 || v > 65535)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': port '%s' is not 1..65535", arg,
					  op->port);
	}
	op->path = slash + 1;
	return 0;
}

/* A user name: also a TLS PSK identity for daemons (lib/tls). */
static int valid_user(const char *u)
{
	for (; *u; u++)
		if ((unsigned char)*u <= 0x20 || (unsigned char)*u >= 0x7f || *u == ':' || *u == '@')
			return 0;
	return 1;
}

int rd_operand_parse(struct rd_operand *op, const char *arg, struct rd_err *err)
{
	const char *colon, *slash, *at, *hstart, *hend;
	int ret = 0;

	memset(op, 0, sizeof(*op));
	op->path = arg;
	if (!*arg)
		return rd_err_set(err, RD_EUSAGE, 0, "empty operand");
	if (!strncmp(arg, "rdcp://", 7)) {
		op->kind = RD_OP_DAEMON;
		ret = parse_url(op, arg, err);
		goto check;
	}
	/* user@[v6]:path */
	at = NULL;
	hstart = arg;
	if (arg[0] == '[' || ((at = strchr(arg, '@')) && at[1] == '[' && !memchr(arg, '/', (size_t)(at - arg)))) {
		hstart = at ? at + 1 : arg;
		hend = strchr(hstart, ']');
		if (hend && hend[1] == ':') {
			op->kind = RD_OP_SSH;
			if (at && copy_part(op->user, sizeof(op->user), arg, (size_t)(at - arg)))
				return rd_err_set(err, RD_EUSAGE, 0, "'%s': user name too long", arg);
			if (copy_part(op->host, sizeof(op->host), hstart + 1,
				      (size_t)(hend - hstart - 1)))
				return rd_err_set(err, RD_EUSAGE, 0, "'%s': host too long", arg);
			op->path = hend + 2;
			if (op->path[0] == ':') {
				op->kind = RD_OP_DAEMON;
				op->path++;
			}
			goto check;
		}
		/* not a bracketed remote: fall through to the plain rules */
		at = NULL;
	}
	colon = strchr(arg, ':');
	slash = strchr(arg, '/');
	if (!colon || (slash && slash < colon) || colon == arg) {
		op->kind = RD_OP_LOCAL;
		return 0;
	}
	at = memchr(arg, '@', (size_t)(colon - arg));
	hstart = arg;
	if (at) {
		if (copy_part(op->user, sizeof(op->user), arg, (size_t)(at - arg)) || at == arg)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': bad user name", arg);
		hstart = at + 1;
	}
	if (copy_part(op->host, sizeof(op->host), hstart, (size_t)(colon - hstart)))
		return rd_err_set(err, RD_EUSAGE, 0, "'%s': host too long", arg);
	if (colon[1] == ':') {
		op->kind = RD_OP_DAEMON;
		op->path = colon + 2;
	} else {
		op->kind = RD_OP_SSH;
		op->path = colon + 1;
	}
check:
	if (ret)
		return ret;
	if (!valid_host(op->host))
		return rd_err_set(err, RD_EUSAGE, 0, "'%s': '%s' is not a valid host name", arg,
				  op->host);
	if (op->user[0] && !valid_user(op->user))
		return rd_err_set(err, RD_EUSAGE, 0,
				  "'%s': bad user name (printable, no ':', '@' or spaces)", arg);
	/* an empty daemon path ("HOST::") names the module listing; a copy refuses it */
	if (op->kind == RD_OP_DAEMON) {
		while (op->path[0] == '/')
			op->path++;
	}
	return 0;
}

int rd_operand_same_remote(const struct rd_operand *a, const struct rd_operand *b)
{
	return a->kind == b->kind && !strcmp(a->user, b->user) && !strcmp(a->host, b->host) &&
	       !strcmp(a->port, b->port);
}

int rd_operand_normalize(const char *in, char *out, size_t cap, struct rd_err *err)
{
	const char *p = in, *e;
	size_t n, o = 0;

	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': '..' is not allowed in a remote path",
					  in);
		if (o + n + 2 > cap)
			return rd_err_set(err, RD_EUSAGE, 0, "'%s': path too long", in);
		if (o)
			out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	if (!o)
		return rd_err_set(
		    err, RD_EUSAGE, 0,
		    "'%s': name a module (HOST::MODULE/PATH; HOST:: alone lists them)", in);
	out[o] = '\0';
	return 0;
}
