// SPDX-License-Identifier: MIT
/*
 * The pure decisions: addresses and networks (hosts allow / hosts deny),
 * auth users entries and their first-match lookup, and lexical path
 * nesting. No I/O, no allocation except the lists a setter stores.
 *
 * Addresses are compared as IPv6: an IPv4 address a.b.c.d is held as
 * ::ffff:a.b.c.d and an IPv4 network /n as /96+n, so a rule written
 * either way matches a client that arrives either way (an IPv4 client on
 * an IPv6 socket shows up IPv4-mapped). Hostnames are not accepted: a
 * rule must not depend on what a reverse lookup says.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/conf/rd_conf_priv.h"

static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* 0 with *is_v4 set, or -RD_EUSAGE. s may be bracketed: "[::1]". */
static int addr_parse(struct rd_conf_net *out, const char *s, int *is_v4)
{
	struct in_addr a4;
	char buf[64];
	size_t n = strlen(s);

	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(buf))
			return -RD_EUSAGE;
		memcpy(buf, s + 1, n - 2);
		buf[n - 2] = '\0';
	} else {
		if (n >= sizeof(buf))
			return -RD_EUSAGE;
		memcpy(buf, s, n + 1);
	}
	memset(out, 0, sizeof(*out));
	out->prefix = 128;
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		memcpy(out->addr, v4mapped, sizeof(v4mapped));
		memcpy(out->addr + 12, &a4, 4);
		*is_v4 = 1;
		return 0;
	}
	*is_v4 = 0;
	if (inet_pton(AF_INET6, buf, out->addr) == 1)
		return 0;
	return -RD_EUSAGE;
}

int rd_conf_addr_parse(struct rd_conf_net *out, const char *s)
{
	int v4;

	return addr_parse(out, s, &v4);
}

int rd_conf_addr_canon(const char *in, char *out, size_t len)
{
	struct rd_conf_net a;
	int v4;

	if (addr_parse(&a, in, &v4))
		return -1;
	if (v4)
		return inet_ntop(AF_INET, a.addr + 12, out, (socklen_t)len) ? 0 : -1;
	return inet_ntop(AF_INET6, a.addr, out, (socklen_t)len) ? 0 : -1;
}

int rd_conf_addr_from_sockaddr(struct rd_conf_net *out, const struct sockaddr *sa)
{
	memset(out, 0, sizeof(*out));
	out->prefix = 128;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;

		memcpy(out->addr, v4mapped, sizeof(v4mapped));
		memcpy(out->addr + 12, &s4->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;

		memcpy(out->addr, &s6->sin6_addr, 16);
		return 0;
	}
	return -RD_EUSAGE;
}

/* Leading one bits of a mask from bit `from`; -1 if the ones are not contiguous. */
static int mask_ones(const uint8_t *m, int from)
{
	int bit, ones = 0, zero_seen = 0;

	for (bit = from; bit < 128; bit++) {
		int set = (m[bit / 8] >> (7 - bit % 8)) & 1;

		if (set && zero_seen)
			return -1;
		if (set)
			ones++;
		else
			zero_seen = 1;
	}
	return ones;
}

int rd_conf_net_parse(struct rd_conf_net *out, const char *s, const char **why)
{
	struct rd_conf_net mask;
	char buf[128];
	const char *slash = strchr(s, '/');
	unsigned long n;
	char *end;
	int v4, mv4, ones, bit;

	if (strlen(s) >= sizeof(buf)) {
		*why = "too long for an address";
		return -RD_EUSAGE;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	if (slash)
		buf[slash - s] = '\0';
	if (addr_parse(out, buf, &v4)) {
		*why = "not a numeric IPv4 or IPv6 address (host names are not supported)";
		return -RD_EUSAGE;
	}
	if (!slash)
		return 0;
	slash++;
	if (strchr(slash, '.') || strchr(slash, ':')) {
		if (addr_parse(&mask, slash, &mv4) || mv4 != v4) {
			*why = "the mask is not an address of the same family";
			return -RD_EUSAGE;
		}
		ones = mask_ones(mask.addr, v4 ? 96 : 0);
		if (ones < 0) {
			*why = "the mask's one bits are not contiguous";
			return -RD_EUSAGE;
		}
		out->prefix = (uint8_t)((v4 ? 96 : 0) + ones);
	} else {
		if (*slash < '0' || *slash > '9') {
			*why = "the prefix length is not a number";
			return -RD_EUSAGE;
		}
		n = strtoul(slash, &end, 10);
		if (*end || n > (v4 ? 32ul : 128ul) || end - slash > 3) {
			*why = v4 ? "an IPv4 prefix length is 0 to 32"
				  : "an IPv6 prefix length is 0 "
				    "to 128";
			return -RD_EUSAGE;
		}
		out->prefix = (uint8_t)((v4 ? 96 : 0) + n);
	}
	/* Mask the host bits off: "10.1.2.3/8" means 10.0.0.0/8. */
	for (bit = out->prefix; bit < 128; bit++)
		out->addr[bit / 8] &= (uint8_t) ~(1u << (7 - bit % 8));
	return 0;
}

int rd_conf_net_match(const struct rd_conf_net *net, const struct rd_conf_net *addr)
{
	int full = net->prefix / 8, rest = net->prefix % 8;

	if (memcmp(net->addr, addr->addr, (size_t)full))
		return 0;
	if (!rest)
		return 1;
	return ((net->addr[full] ^ addr->addr[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

static int is_sep(char ch)
{
	return ch == ',' || ch == ' ' || ch == '\t';
}

/* The next token of a comma/blank separated list into tok; 0 at the end. */
static int next_token(const char **p, char *tok, size_t len, int *too_long)
{
	const char *s = *p;
	size_t n = 0;

	*too_long = 0;
	while (is_sep(*s))
		s++;
	if (!*s)
		return 0;
	while (*s && !is_sep(*s)) {
		if (n + 1 < len)
			tok[n++] = *s;
		else
			*too_long = 1;
		s++;
	}
	tok[n] = '\0';
	*p = s;
	return 1;
}

static int count_tokens(const char *v)
{
	char tok[8];
	int n = 0, tl;

	while (next_token(&v, tok, sizeof(tok), &tl))
		n++;
	return n;
}

int rd_conf_parse_hosts(struct rd_conf_ctx *x, const char *v, struct rd_conf_net **out, int *n)
{
	struct rd_conf_net *list;
	const char *why, *p = v;
	char tok[128];
	int count = count_tokens(v), i = 0, tl;

	if (!count)
		return rd_conf_why(x, "an empty list");
	if (count > RD_CONF_HOSTS_MAX)
		return rd_conf_why(x, "%d entries; at most %d", count, RD_CONF_HOSTS_MAX);
	list = calloc((size_t)count, sizeof(*list));
	if (!list)
		return rd_conf_why(x, "out of memory");
	while (next_token(&p, tok, sizeof(tok), &tl)) {
		if (tl || rd_conf_net_parse(&list[i], tok, &why)) {
			rd_conf_why(x, "'%.64s': %s", tok, tl ? "too long for an address" : why);
			free(list);
			return -1;
		}
		i++;
	}
	free(*out);
	*out = list;
	*n = count;
	return 0;
}

static int user_entry(struct rd_conf_ctx *x, const char *tok, struct rd_conf_user *u)
{
	const char *colon = strchr(tok, ':');
	const char *name = tok, *acc = colon ? colon + 1 : NULL;
	size_t nlen = colon ? (size_t)(colon - tok) : strlen(tok), i;

	memset(u, 0, sizeof(*u));
	if (acc && !strncasecmp(acc, "rw", 2) &&
	    (!strcasecmp(acc + 2, "+delete") || !strcasecmp(acc + 2, "-delete"))) {
		/* rdcp's own: the user may (or may not) delete, whatever the module says */
		u->access = RD_ACCESS_RW;
		u->delete_ok = acc[2] == '+' ? 1 : -1;
	} else if (acc && (strcasestr(acc, "+delete") || strcasestr(acc, "-delete"))) {
		return rd_conf_why(x, "'%.64s': only an rw entry may say +delete or -delete", tok);
	} else if (!acc)
		u->access = RD_ACCESS_DEFAULT;
	else if (!strcasecmp(acc, "rw"))
		u->access = RD_ACCESS_RW;
	else if (!strcasecmp(acc, "ro"))
		u->access = RD_ACCESS_RO;
	else if (!strcasecmp(acc, "deny"))
		u->access = RD_ACCESS_DENY;
	else
		return rd_conf_why(x, "'%.64s': the access is rw, ro, deny, rw+delete or rw-delete",
				   tok);
	if (nlen == 1 && name[0] == '*') {
		u->is_all = 1;
		return 0;
	}
	if (name[0] == '@') {
		u->is_group = 1;
		name++;
		nlen--;
	}
	if (!nlen || nlen > RD_CONF_NAME_MAX)
		return rd_conf_why(x, "'%.64s': a name has 1 to %d bytes", tok, RD_CONF_NAME_MAX);
	for (i = 0; i < nlen; i++) {
		if (name[i] == '*' || name[i] == '?' || name[i] == '[')
			return rd_conf_why(x, "'%.64s': the only pattern is a lone '*'", tok);
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '.' || name[i] == '_' ||
		      name[i] == '-') ||
		    name[0] == '-')
			return rd_conf_why(x, "'%.64s' is not a user or @group name", tok);
	}
	memcpy(u->name, name, nlen);
	u->name[nlen] = '\0';
	return 0;
}

int rd_conf_parse_users(struct rd_conf_ctx *x, const char *v, struct rd_conf_user **out, int *n)
{
	struct rd_conf_user *list;
	const char *p = v;
	char tok[RD_CONF_NAME_MAX + 16];
	int count = count_tokens(v), i = 0, tl;

	if (!count)
		return rd_conf_why(x, "an empty list");
	if (count > RD_CONF_USERS_MAX)
		return rd_conf_why(x, "%d entries; at most %d", count, RD_CONF_USERS_MAX);
	list = calloc((size_t)count, sizeof(*list));
	if (!list)
		return rd_conf_why(x, "out of memory");
	while (next_token(&p, tok, sizeof(tok), &tl)) {
		if (tl) {
			rd_conf_why(x, "'%.40s...': a name has 1 to %d bytes", tok,
				    RD_CONF_NAME_MAX);
			free(list);
			return -1;
		}
		if (user_entry(x, tok, &list[i])) {
			free(list);
			return -1;
		}
		i++;
	}
	free(*out);
	*out = list;
	*n = count;
	return 0;
}

int rd_conf_hosts_allowed(const struct rd_conf_module *m, const struct rd_conf_net *addr,
			  const char **why)
{
	int i, allowed = !m->nallow;

	for (i = 0; i < m->nallow && !allowed; i++)
		allowed = rd_conf_net_match(&m->allow[i], addr);
	if (!allowed) {
		*why = "the address is not in the module's hosts allow";
		return 0;
	}
	for (i = 0; i < m->ndeny; i++) {
		if (rd_conf_net_match(&m->deny[i], addr)) {
			*why = "the address is in the module's hosts deny";
			return 0;
		}
	}
	*why = NULL;
	return 1;
}

/* The first auth users entry that matches, or NULL. */
static const struct rd_conf_user *user_entry_of(const struct rd_conf_module *m, const char *user,
						const char *const *groups, int ngroups)
{
	const struct rd_conf_user *u;
	int i, g, hit;

	for (i = 0; i < m->nusers; i++) {
		u = &m->users[i];
		hit = u->is_all;
		if (!hit && !u->is_group)
			hit = !strcmp(u->name, user);
		for (g = 0; !hit && u->is_group && g < ngroups; g++)
			hit = groups[g] && !strcmp(u->name, groups[g]);
		if (hit)
			return u;
	}
	return NULL;
}

int rd_conf_user_access(const struct rd_conf_module *m, const char *user, const char *const *groups,
			int ngroups)
{
	const struct rd_conf_user *u = user_entry_of(m, user, groups, ngroups);

	if (!u)
		return RD_ACCESS_NONE;
	if (u->access == RD_ACCESS_DEFAULT)
		return m->read_only ? RD_ACCESS_RO : RD_ACCESS_RW;
	return u->access;
}

int rd_conf_user_deletes(const struct rd_conf_module *m, const char *user,
			 const char *const *groups, int ngroups)
{
	const struct rd_conf_user *u;

	if (m->write_only)
		return 0;
	if (!user || !m->nusers)
		return !m->read_only && m->delete_ok;
	if (rd_conf_user_access(m, user, groups, ngroups) != RD_ACCESS_RW)
		return 0;
	u = user_entry_of(m, user, groups, ngroups);
	return u && u->delete_ok ? u->delete_ok > 0 : m->delete_ok;
}

int rd_conf_module_deletes(const struct rd_conf_module *m)
{
	const struct rd_conf_user *u;
	int i;

	if (m->write_only)
		return 0;
	if (!m->nusers)
		return !m->read_only && m->delete_ok;
	for (i = 0; i < m->nusers; i++) {
		u = &m->users[i];
		if (u->access == RD_ACCESS_DEFAULT && !m->read_only && m->delete_ok)
			return 1;
		if (u->access == RD_ACCESS_RW && (u->delete_ok ? u->delete_ok > 0 : m->delete_ok))
			return 1;
	}
	return 0;
}

int rd_conf_module_writable(const struct rd_conf_module *m)
{
	int i;

	if (!m->read_only)
		return 1;
	for (i = 0; i < m->nusers; i++) {
		if (m->users[i].access == RD_ACCESS_RW)
			return 1;
	}
	return 0;
}

int rd_conf_path_normalize(const char *in, char *out, size_t len)
{
	size_t o = 0, n;
	const char *s = in, *e;

	if (len < 2 || in[0] != '/')
		return -1;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchr(s, '/');
		n = e ? (size_t)(e - s) : strlen(s);
		if (n == 1 && s[0] == '.') {
			/* skip */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (o && out[o - 1] != '/')
				o--;
			if (o)
				o--;
		} else {
			if (o + 1 + n + 1 > len)
				return -1;
			out[o++] = '/';
			memcpy(out + o, s, n);
			o += n;
		}
		s += n;
	}
	if (!o)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

int rd_conf_path_within(const char *inner, const char *outer)
{
	size_t n = strlen(outer);

	if (n == 1 && outer[0] == '/')
		return 1;
	return !strncmp(inner, outer, n) && (inner[n] == '\0' || inner[n] == '/');
}

/* --- metrics --- */

int rd_conf_metrics_addr(const struct rd_conf *c, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(c->metrics_listen, ':');
	char addr[64];
	size_t n;
	long port;

	if (!colon)
		return -RD_EUSAGE;
	n = (size_t)(colon - c->metrics_listen);
	if (n >= sizeof(addr))
		return -RD_EUSAGE;
	memcpy(addr, c->metrics_listen, n);
	addr[n] = '\0';
	port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535)
		return -RD_EUSAGE;
	memset(ss, 0, sizeof(*ss));
	if (addr[0] == '[' && n > 2) {
		addr[n - 1] = '\0';
		if (inet_pton(AF_INET6, addr + 1, &s6->sin6_addr) != 1)
			return -RD_EUSAGE;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
		return 0;
	}
	if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
		return -RD_EUSAGE;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	*len = sizeof(*s4);
	return 0;
}

int rd_conf_metrics_allowed(const struct rd_conf *c, const struct rd_conf_net *addr)
{
	static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	int i;

	if (!c->nmetrics_allow)
		return !memcmp(addr->addr, v6lo, 16) ||
		       (!memcmp(addr->addr, v4mapped, sizeof(v4mapped)) && addr->addr[12] == 127);
	for (i = 0; i < c->nmetrics_allow; i++)
		if (rd_conf_net_match(&c->metrics_allow[i], addr))
			return 1;
	return 0;
}
