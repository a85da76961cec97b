/* SPDX-License-Identifier: MIT */
/* lib/conf internals: the key table, value parsers, problem reporting. */
#ifndef RDCP_CONF_RD_CONF_PRIV_H
#define RDCP_CONF_RD_CONF_PRIV_H

#include <stdint.h>

#include "lib/conf/rd_conf.h"

#define RD_CONF_STR_(x) #x
#define RD_CONF_STR(x)	RD_CONF_STR_(x)

/* What a setter sees: the config, the module being filled (NULL: global). */
struct rd_conf_ctx {
	struct rd_conf *c;
	struct rd_conf_module *m;
	const char *file;
	unsigned line;
	char why[RD_CONF_MSG_MAX]; /* a setter's reason for refusing a value */
};

struct rd_conf_keydef {
	const char *name; /* canonical spelling, lower case, single spaces */
	int section;	  /* RD_CONF_GLOBAL or RD_CONF_MODULE */
	int repeatable;
	/* Store val (trimmed, non-empty unless empty_ok). 0, or -1 with x->why. */
	int (*set)(struct rd_conf_ctx *x, const char *val);
	int empty_ok;
};

extern const struct rd_conf_keydef rd_conf_keys[RD_CK_COUNT];

/* A key's former name: still read, with a warning naming the new one. */
struct rd_conf_oldkey {
	const char *name;
	int key; /* RD_CK_* */
};
extern const struct rd_conf_oldkey rd_conf_oldkeys[]; /* ends with a NULL name */

/* Report one problem; file NULL = command line. Counts it on c (c may be NULL). */
void rd_conf_report(struct rd_conf *c, const char *file, unsigned line, int sev, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));

/* x->why = formatted text; returns -1 (for "return why(x, ...)"). */
int rd_conf_why(struct rd_conf_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Value parsers: 0 or -1 (x->why says why; key name is added by the caller). */
int rd_conf_parse_bool(struct rd_conf_ctx *x, const char *v, int *out);
int rd_conf_parse_uint(struct rd_conf_ctx *x, const char *v, unsigned long long min,
		       unsigned long long max, unsigned long long *out);
int rd_conf_parse_size(struct rd_conf_ctx *x, const char *v, uint64_t min, uint64_t max,
		       uint64_t *out);
int rd_conf_parse_duration(struct rd_conf_ctx *x, const char *v, int min_s, int max_s, int *out);

/* Module names: 1..63 bytes of 0x21..0x7e, no '/', not "." or "..", not "global". */
int rd_conf_module_name_ok(const char *name, size_t len, const char **why);
/* A new module (defaults set), appended to c->mods; NULL with *why if not possible. */
struct rd_conf_module *rd_conf_module_add(struct rd_conf *c, const char *name, unsigned line,
					  const char **why);

/* List keys (rd_conf_match.c): hosts allow/deny and auth users values. */
int rd_conf_parse_hosts(struct rd_conf_ctx *x, const char *v, struct rd_conf_net **out, int *n);
int rd_conf_parse_users(struct rd_conf_ctx *x, const char *v, struct rd_conf_user **out, int *n);

/* A numeric address in canonical text ("[FE80::1]" -> "fe80::1"); 0 or -1. */
int rd_conf_addr_canon(const char *in, char *out, size_t len);

/* "/a/./b//c/" -> "/a/b/c", ".." resolved lexically; 0 or -1 if too long. */
int rd_conf_path_normalize(const char *in, char *out, size_t len);
/* 1 if inner is outer or lies beneath it (both normalized absolute paths). */
int rd_conf_path_within(const char *inner, const char *outer);

#endif
