// SPDX-License-Identifier: MIT
/*
 * The config file reader: lines, sections, keys, values. rsyncd.conf
 * habits:
 *  - "#" or ";" starts a comment only as the first non-blank character of
 *    a line; elsewhere it is part of the value (paths and comments may
 *    contain it). A value that fails to parse and holds " #" gets a hint.
 *  - Key names are case-insensitive and their blanks do not matter
 *    ("Max Connections", "maxconnections").
 *  - Global keys come first; "[name]" starts a module.
 * Every problem is reported with its line and parsing goes on, so one run
 * shows them all. Nothing here touches the file system except
 * rd_conf_load reading the file itself.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/conf/rd_conf_priv.h"
#include "lib/proto/rd_proto.h"
#include "lib/xferlog/rd_xferlog.h"

void rd_conf_report(struct rd_conf *c, const char *file, unsigned line, int sev, const char *fmt,
		    ...)
{
	char msg[RD_CONF_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c)
		return;
	if (sev == RD_CONF_ERROR) {
		if (!c->nerrors) {
			if (file && line)
				rd_err_set(&c->err, RD_EUSAGE, 0, "%s:%u: %s", file, line, msg);
			else if (file)
				rd_err_set(&c->err, RD_EUSAGE, 0, "%s: %s", file, msg);
			else
				rd_err_set(&c->err, RD_EUSAGE, 0, "%s", msg);
		}
		c->nerrors++;
	} else {
		c->nwarnings++;
	}
	if (c->report)
		c->report(c->report_ctx, file, line, sev, msg);
}

int rd_conf_why(struct rd_conf_ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->why, sizeof(x->why), fmt, ap);
	va_end(ap);
	return -1;
}

struct rd_conf *rd_conf_new(rd_conf_report_fn report, void *ctx)
{
	struct rd_conf *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->port = RD_DEFAULT_PORT;
	c->transport = RD_TRANSPORT_BOTH;
	c->max_conns = 16;
	c->max_conns_per_host = 4;
	c->auth_timeout_s = 10;
	c->idle_timeout_s = 30;
	c->link_table = 32ull << 20; /* RD_ENGINE_LINK_TABLE_DEFAULT */
	c->log_level = RD_CONF_LOG_INFO;
	snprintf(c->log_format, sizeof(c->log_format), "%s", RD_XFERLOG_DEFAULT_FORMAT);
	c->partial_max_age_s = RD_CONF_PARTIAL_MAX_AGE_DEFAULT;
	snprintf(c->status_socket, sizeof(c->status_socket), "%s", RD_CONF_STATUS_SOCKET_DEFAULT);
	snprintf(c->host_key, sizeof(c->host_key), "%s", RD_CONF_HOST_KEY_DEFAULT);
	c->report = report;
	c->report_ctx = ctx;
	rd_err_clear(&c->err);
	return c;
}

static void module_free(struct rd_conf_module *m)
{
	if (!m)
		return;
	free(m->users);
	free(m->allow);
	free(m->deny);
	free(m);
}

void rd_conf_free(struct rd_conf *c)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < c->nmods; i++)
		module_free(c->mods[i]);
	free(c->mods);
	free(c->metrics_allow);
	free(c);
}

int rd_conf_module_name_ok(const char *name, size_t len, const char **why)
{
	size_t i;

	if (!len) {
		*why = "a module name cannot be empty";
		return 0;
	}
	if (len >= RD_CONF_MODNAME_MAX) {
		*why = "a module name has at most 63 bytes";
		return 0;
	}
	for (i = 0; i < len; i++) {
		if ((unsigned char)name[i] <= 0x20 || (unsigned char)name[i] >= 0x7f) {
			*why = "a module name is printable ASCII without blanks";
			return 0;
		}
		if (name[i] == '/' || name[i] == '[' || name[i] == ']') {
			*why = "a module name cannot contain '/', '[' or ']'";
			return 0;
		}
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2))) {
		*why = "'.' and '..' are not module names";
		return 0;
	}
	if (len == 6 && !strncasecmp(name, "global", 6)) {
		*why = "'global' is reserved: put global keys before the first module";
		return 0;
	}
	return 1;
}

static void module_defaults(struct rd_conf_module *m)
{
	memset(m, 0, sizeof(*m));
	m->list = 1;
	snprintf(m->checksum, sizeof(m->checksum), "%s", "gmac");
	snprintf(m->log_format, sizeof(m->log_format), "%s", RD_XFERLOG_DEFAULT_FORMAT);
	m->partial_max_age_s = RD_CONF_PARTIAL_MAX_AGE_DEFAULT;
}

struct rd_conf_module *rd_conf_module_add(struct rd_conf *c, const char *name, unsigned line,
					  const char **why)
{
	struct rd_conf_module *m, **grown;

	if (c->nmods >= RD_CONF_MODULES_MAX) {
		*why = "too many modules (at most " RD_CONF_STR(RD_CONF_MODULES_MAX) ")";
		return NULL;
	}
	m = malloc(sizeof(*m));
	grown = realloc(c->mods, (size_t)(c->nmods + 1) * sizeof(*grown));
	if (!m || !grown) {
		free(m);
		if (grown)
			c->mods = grown;
		*why = "out of memory";
		return NULL;
	}
	c->mods = grown;
	module_defaults(m);
	/* The global keys come first: a module starts from their values. */
	m->transfer_logging = c->transfer_logging;
	memcpy(m->log_format, c->log_format, sizeof(m->log_format));
	m->partial_max_age_s = c->partial_max_age_s;
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->line = line;
	c->mods[c->nmods++] = m;
	return m;
}

const struct rd_conf_module *rd_conf_module_find(const struct rd_conf *c, const char *name)
{
	int i;

	for (i = 0; i < c->nmods; i++) {
		if (!strcmp(c->mods[i]->name, name))
			return c->mods[i];
	}
	return NULL;
}

/* --- values --- */

int rd_conf_parse_bool(struct rd_conf_ctx *x, const char *v, int *out)
{
	static const char *const yes[] = {"yes", "true", "1"};
	static const char *const no[] = {"no", "false", "0"};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return rd_conf_why(x, "'%s' is not yes, no, true, false, 1 or 0", v);
}

/* Leading decimal digits of v into *out; returns the first other character. */
static const char *digits(const char *v, unsigned long long *out, int *overflow)
{
	unsigned long long n = 0;

	*overflow = 0;
	for (; *v >= '0' && *v <= '9'; v++) {
		if (n > (~0ull - 9) / 10)
			*overflow = 1;
		else
			n = n * 10 + (unsigned)(*v - '0');
	}
	*out = n;
	return v;
}

int rd_conf_parse_uint(struct rd_conf_ctx *x, const char *v, unsigned long long min,
		       unsigned long long max, unsigned long long *out)
{
	unsigned long long n;
	const char *end;
	int ovf;

	end = digits(v, &n, &ovf);
	if (end == v || *end)
		return rd_conf_why(x, "'%s' is not a number", v);
	if (ovf || n < min || n > max)
		return rd_conf_why(x, "%s is out of range (%llu to %llu)", v, min, max);
	*out = n;
	return 0;
}

int rd_conf_parse_size(struct rd_conf_ctx *x, const char *v, uint64_t min, uint64_t max,
		       uint64_t *out)
{
	unsigned long long n;
	const char *end;
	unsigned shift = 0;
	int ovf;

	end = digits(v, &n, &ovf);
	if (end == v)
		return rd_conf_why(x, "'%s' is not a size (e.g. 512M, 4G)", v);
	switch (*end) {
	case '\0':
		break;
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
	case 't':
	case 'T':
		shift = 40;
		break;
	default:
		return rd_conf_why(x, "'%s' is not a size (digits and K, M, G or T)", v);
	}
	if (*end && end[1])
		return rd_conf_why(x, "'%s' is not a size (digits and K, M, G or T)", v);
	if (ovf || (shift && n > (~0ull >> shift)))
		ovf = 1;
	else
		n <<= shift;
	if (ovf || n < min || n > max)
		return rd_conf_why(x, "%s is out of range (%lluK to %lluG)", v,
				   (unsigned long long)(min >> 10),
				   (unsigned long long)(max >> 30));
	*out = n;
	return 0;
}

int rd_conf_parse_duration(struct rd_conf_ctx *x, const char *v, int min_s, int max_s, int *out)
{
	unsigned long long n;
	const char *end;
	unsigned mul = 1;
	int ovf;

	end = digits(v, &n, &ovf);
	if (end == v || (*end && end[1]))
		return rd_conf_why(x, "'%s' is not a duration (seconds, or e.g. 30s, 2m, 7d)", v);
	if (*end == 'm')
		mul = 60;
	else if (*end == 'h')
		mul = 3600;
	else if (*end == 'd')
		mul = 86400;
	else if (*end && *end != 's')
		return rd_conf_why(x, "'%s' is not a duration (seconds, or e.g. 30s, 2m, 7d)", v);
	if (ovf || n > (unsigned long long)max_s / mul || n * mul < (unsigned long long)min_s)
		return rd_conf_why(x, "%s is out of range (%d to %d seconds)", v, min_s, max_s);
	*out = (int)(n * mul);
	return 0;
}

/* --- lines --- */

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static char *trim(char *s)
{
	size_t n;

	while (is_blank(*s))
		s++;
	n = strlen(s);
	while (n && is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* Key spelling without blanks, lower case, for comparison. */
static void squeeze(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 1 < len; in++) {
		if (!is_blank(*in))
			out[o++] = (char)tolower((unsigned char)*in);
	}
	out[o] = '\0';
}

static int find_key(const char *key, int section, int *other)
{
	char want[128], have[128];
	int i;

	*other = -1;
	squeeze(key, want, sizeof(want));
	for (i = 0; i < RD_CK_COUNT; i++) {
		squeeze(rd_conf_keys[i].name, have, sizeof(have));
		if (strcmp(want, have))
			continue;
		if (rd_conf_keys[i].section == section)
			return i;
		*other = i;
	}
	return -1;
}

/* A key by one of its former names (rd_conf_oldkeys), or -1. */
static int find_old_key(const char *key)
{
	char want[128], have[128];
	int i;

	squeeze(key, want, sizeof(want));
	for (i = 0; rd_conf_oldkeys[i].name; i++) {
		squeeze(rd_conf_oldkeys[i].name, have, sizeof(have));
		if (!strcmp(want, have))
			return rd_conf_oldkeys[i].key;
	}
	return -1;
}

/* Forget what a refused [section] stored. */
static void scratch_reset(struct rd_conf_module *m)
{
	free(m->users);
	free(m->allow);
	free(m->deny);
	module_defaults(m);
}

struct parse {
	struct rd_conf_ctx x;
	struct rd_conf_module *scratch; /* keys of a refused [section] land here */
	int in_module;
	unsigned first_module_line;
};

static void section(struct parse *p, char *s)
{
	struct rd_conf_ctx *x = &p->x;
	const struct rd_conf_module *dup;
	const char *why;
	char *end = strrchr(s, ']');
	char *name;

	p->in_module = 1;
	if (!p->first_module_line)
		p->first_module_line = x->line;
	x->m = p->scratch;
	scratch_reset(p->scratch);
	if (!end || *trim(end + 1)) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
			       "a section line is '[name]' and nothing else");
		return;
	}
	*end = '\0';
	name = trim(s + 1);
	if (!rd_conf_module_name_ok(name, strlen(name), &why)) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR, "[%.64s]: %s", name, why);
		return;
	}
	dup = rd_conf_module_find(x->c, name);
	if (dup) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
			       "duplicate module [%s] (first defined on line %u)", name, dup->line);
		return;
	}
	x->m = rd_conf_module_add(x->c, name, x->line, &why);
	if (!x->m) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR, "[%s]: %s", name, why);
		x->m = p->scratch;
	}
}

static void setting(struct parse *p, char *s, char *eq)
{
	struct rd_conf_ctx *x = &p->x;
	const struct rd_conf_keydef *kd;
	unsigned *set;
	char *key, *val;
	int k, other;

	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (!*key) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR, "no key before '='");
		return;
	}
	k = find_key(key, p->in_module ? RD_CONF_MODULE : RD_CONF_GLOBAL, &other);
	if (k < 0 && other < 0) {
		k = find_old_key(key);
		if (k >= 0 &&
		    rd_conf_keys[k].section != (p->in_module ? RD_CONF_MODULE : RD_CONF_GLOBAL)) {
			other = k;
			k = -1;
		} else if (k >= 0) {
			rd_conf_report(x->c, x->file, x->line, RD_CONF_WARNING,
				       "'%s' is the old name of '%s'; it still works, but rename "
				       "it",
				       key, rd_conf_keys[k].name);
		}
	}
	if (k < 0 && other >= 0) {
		if (p->in_module)
			rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
				       "'%s' is a global key: put it before the first module "
				       "(line %u)",
				       rd_conf_keys[other].name, p->first_module_line);
		else
			rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
				       "'%s' belongs in a [module] section, not among the global "
				       "keys",
				       rd_conf_keys[other].name);
		return;
	}
	if (k < 0) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR, "unknown key '%.64s'", key);
		return;
	}
	kd = &rd_conf_keys[k];
	set = p->in_module ? &x->m->set[k] : &x->c->set[k];
	if (*set && !kd->repeatable) {
		if (p->in_module && x->m != p->scratch)
			rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
				       "duplicate key '%s' in [%s] (first set on line %u)",
				       kd->name, x->m->name, *set);
		else
			rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
				       "duplicate key '%s' (first set on line %u)", kd->name, *set);
		return;
	}
	if (!*val && !kd->empty_ok) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR, "'%s' needs a value",
			       kd->name);
		return;
	}
	x->why[0] = '\0';
	if (kd->set(x, val)) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR, "%s: %s%s", kd->name, x->why,
			       strstr(val, " #") || strstr(val, "\t#")
				   ? " (a comment must be on a line of its own)"
				   : "");
		return;
	}
	*set = x->line;
}

static void one_line(struct parse *p, char *s)
{
	struct rd_conf_ctx *x = &p->x;
	char *eq;
	size_t i;

	for (i = 0; s[i]; i++) {
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t') {
			rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
				       "control character 0x%02x in the line", (unsigned char)s[i]);
			return;
		}
		if (s[i] == 0x7f) {
			rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
				       "control character 0x7f in the line");
			return;
		}
	}
	s = trim(s);
	if (!*s || *s == '#' || *s == ';')
		return;
	if (*s == '[') {
		section(p, s);
		return;
	}
	eq = strchr(s, '=');
	if (!eq) {
		rd_conf_report(x->c, x->file, x->line, RD_CONF_ERROR,
			       "expected 'key = value', '[module]' or a comment");
		return;
	}
	setting(p, s, eq);
}

int rd_conf_parse(struct rd_conf *c, const char *file, const char *text, size_t len)
{
	struct parse p;
	char buf[RD_CONF_LINE_MAX + 2];
	unsigned before = c->nerrors;
	const char *nl;
	size_t off = 0, n, raw;

	memset(&p, 0, sizeof(p));
	p.x.c = c;
	p.x.file = file;
	p.scratch = calloc(1, sizeof(*p.scratch));
	if (!p.scratch) {
		rd_conf_report(c, file, 0, RD_CONF_ERROR, "out of memory");
		return -RD_ENOMEM;
	}
	module_defaults(p.scratch);
	if (c->file[0] == '\0' && file)
		snprintf(c->file, sizeof(c->file), "%s", file);
	if (len > RD_CONF_FILE_MAX) {
		rd_conf_report(c, file, 0, RD_CONF_ERROR, "larger than %u bytes", RD_CONF_FILE_MAX);
		goto out;
	}
	while (off < len) {
		p.x.line++;
		nl = memchr(text + off, '\n', len - off);
		raw = nl ? (size_t)(nl - (text + off)) : len - off;
		n = raw;
		if (n && text[off + n - 1] == '\r')
			n--;
		if (n > RD_CONF_LINE_MAX) {
			rd_conf_report(c, file, p.x.line, RD_CONF_ERROR,
				       "line longer than %d bytes", RD_CONF_LINE_MAX);
		} else if (memchr(text + off, '\0', n)) {
			rd_conf_report(c, file, p.x.line, RD_CONF_ERROR, "NUL byte in the line");
		} else {
			memcpy(buf, text + off, n);
			buf[n] = '\0';
			one_line(&p, buf);
		}
		off += raw + (nl ? 1 : 0);
	}
out:
	scratch_reset(p.scratch);
	free(p.scratch);
	return c->nerrors > before ? -RD_EUSAGE : 0;
}

int rd_conf_load(struct rd_conf *c, const char *path)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	ssize_t r;
	int fd, ret;

	snprintf(c->file, sizeof(c->file), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rd_conf_report(c, path, 0, RD_CONF_ERROR, "cannot open: %s", strerror(errno));
		return -RD_ESYS;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rd_conf_report(c, path, 0, RD_CONF_ERROR, "not a regular file");
		ret = -RD_EUSAGE;
		goto out;
	}
	if (st.st_mode & S_IWOTH) {
		rd_conf_report(c, path, 0, RD_CONF_ERROR,
			       "writable by every user (mode %04o): anyone could reconfigure "
			       "the daemon",
			       (unsigned)(st.st_mode & 07777));
		ret = -RD_EUSAGE;
		goto out;
	}
	if (st.st_size > (off_t)RD_CONF_FILE_MAX) {
		rd_conf_report(c, path, 0, RD_CONF_ERROR, "larger than %u bytes", RD_CONF_FILE_MAX);
		ret = -RD_EUSAGE;
		goto out;
	}
	text = malloc(RD_CONF_FILE_MAX + 1);
	if (!text) {
		rd_conf_report(c, path, 0, RD_CONF_ERROR, "out of memory");
		ret = -RD_ENOMEM;
		goto out;
	}
	/* Read to the bound + 1, in case the file grew since fstat. */
	while (len <= RD_CONF_FILE_MAX) {
		r = read(fd, text + len, RD_CONF_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rd_conf_report(c, path, 0, RD_CONF_ERROR, "read: %s", strerror(errno));
			ret = -RD_ESYS;
			goto out;
		}
		if (!r)
			break;
		len += (size_t)r;
	}
	ret = rd_conf_parse(c, path, text, len);
out:
	free(text);
	close(fd);
	return ret;
}
