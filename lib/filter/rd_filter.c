// SPDX-License-Identifier: MIT
/*
 * rsync's filter rules: parsing (rsync.1, FILTER RULES IN DEPTH, FILTER
 * RULE MODIFIERS, MERGE-FILE FILTER RULES), the ordered list, and how one
 * rule matches a path (PATTERN MATCHING RULES). The walk with its
 * per-directory merge files is rd_filter_walk.c.
 */
#include "lib/filter/rd_filter_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rd_escape.h"

#define MERGE_DEPTH_MAX 8 /* merge files read inside merge files */

static const char *esc_rule(char *buf, size_t cap, const char *s, size_t len)
{
	if (rd_escape(buf, cap, s, len > 200 ? 200 : len) >= cap)
		memcpy(buf + cap - 4, "...", 4);
	return buf;
}

static int bad(struct rd_err *err, const char *s, size_t len, const char *why)
{
	char e[256];

	return rd_err_set(err, RD_EUSAGE, 0, "filter rule '%s': %s", esc_rule(e, sizeof(e), s, len),
			  why);
}

/* "exclude", "dir-merge"...: the long name at s, followed by ',', ' ', '_' or the end? */
static const char *long_name(const char *s, const char *end, const char *name)
{
	size_t n = strlen(name);

	if ((size_t)(end - s) < n || memcmp(s, name, n))
		return NULL;
	s += n;
	if (s == end || *s == ',' || *s == ' ' || *s == '_')
		return s;
	return NULL;
}

static char rule_char(const char **sp, const char *end)
{
	static const struct {
		const char *name;
		char ch;
	} names[] = {{"clear", '!'},   {"dir-merge", ':'}, {"exclude", '-'},
		     {"hide", 'H'},    {"include", '+'},   {"merge", '.'},
		     {"protect", 'P'}, {"risk", 'R'},	   {"show", 'S'}};
	const char *s = *sp, *q;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		q = long_name(s, end, names[i].name);
		if (q) {
			*sp = q;
			return names[i].ch;
		}
	}
	*sp = s + 1;
	return *s;
}

/* Flags from the pattern itself (rsync's add_rule). */
static void pattern_flags(struct rd_rule *r)
{
	size_t n = strlen(r->pattern);
	const char *p, *w;

	if (n > 1 && r->pattern[n - 1] == '/') {
		r->pattern[--n] = '\0';
		r->flags |= R_DIRONLY;
	}
	for (p = r->pattern; *p; p++)
		r->slash_cnt += *p == '/';
	if (!strpbrk(r->pattern, "*?["))
		return;
	r->flags |= R_WILD;
	w = strstr(r->pattern, "**");
	if (!w)
		return;
	r->flags |= R_WILD2;
	if (w == r->pattern)
		r->flags |= R_WILD2_PRE;
	if (n >= 3 && !strcmp(r->pattern + n - 3, "***"))
		r->flags |= R_WILD3_SUF;
}

static int set_text(struct rd_rule *r, const char *prefix, const char *pat)
{
	size_t n = strlen(prefix) + strlen(pat) + 2;

	r->text = malloc(n);
	if (!r->text)
		return -1;
	r->text_len = (size_t)snprintf(r->text, n, "%s%s%s", prefix, *pat ? " " : "", pat);
	return 0;
}

/* The rule's own text for the wire: its kind, its modifiers, its pattern as given. */
static int make_text(struct rd_rule *r, const char *given)
{
	char pre[16];
	size_t k = 0;

	pre[k++] = (r->flags & R_CLEAR)	      ? '!'
		   : (r->flags & R_DIR_MERGE) ? ':'
		   : (r->flags & R_MERGE)     ? '.'
		   : (r->flags & R_INCLUDE)   ? '+'
					      : '-';
	if (r->flags & R_NEGATE)
		pre[k++] = '!';
	if (r->flags & R_SENDER)
		pre[k++] = 's';
	if (r->flags & R_RECEIVER)
		pre[k++] = 'r';
	if (r->flags & R_PERISH)
		pre[k++] = 'p';
	if (r->flags & R_M_EXCLUDES)
		pre[k++] = '-';
	if (r->flags & R_M_INCLUDES)
		pre[k++] = '+';
	if (r->flags & R_M_NOINHERIT)
		pre[k++] = 'n';
	if (r->flags & R_M_WORDS)
		pre[k++] = 'w';
	pre[k] = '\0';
	return set_text(r, pre, given);
}

static int modifiers(struct rd_rule *r, char ch, const char **sp, const char *end, int side_set,
		     const char *s0, size_t len0, struct rd_err *err)
{
	const char *s = *sp;
	int merge = ch == ':' || ch == '.';

	for (; s < end && *s != ' ' && *s != '_'; s++) {
		switch (*s) {
		case '!':
			if (merge)
				return bad(err, s0, len0, "'!' does not go with a merge rule");
			r->flags |= R_NEGATE;
			break;
		case 's':
		case 'r':
			if (side_set)
				return bad(err, s0, len0, "its kind says its side already");
			r->flags |= *s == 's' ? R_SENDER : R_RECEIVER;
			break;
		case 'p':
			r->flags |= R_PERISH;
			break;
		case '-':
		case '+':
			if (!merge || (r->flags & (R_M_EXCLUDES | R_M_INCLUDES)))
				return bad(err, s0, len0, "'-' and '+' go with merge rules, once");
			r->flags |= *s == '-' ? R_M_EXCLUDES : R_M_INCLUDES;
			break;
		case 'n':
		case 'e':
		case 'w':
			if (!merge)
				return bad(err, s0, len0, "'n', 'e' and 'w' go with merge rules");
			r->flags |= *s == 'n' ? R_M_NOINHERIT : *s == 'e' ? R_M_SELF : R_M_WORDS;
			break;
		case '/':
			if (merge)
				return bad(err, s0, len0, "'/' does not go with a merge rule");
			r->flags |= R_ABS;
			break;
		case 'C':
			return bad(err, s0, len0,
				   "CVS rules ('C') are not supported by rdcp; name the patterns");
		case 'x':
			return bad(err, s0, len0,
				   "xattr rules ('x') are not supported by rdcp: it keeps user.* "
				   "xattrs only");
		default:
			return bad(err, s0, len0, "unknown modifier");
		}
	}
	*sp = s;
	return 0;
}

int rd_rule_parse(struct rd_rule *r, const char *s, size_t len, unsigned dflt, int old,
		  struct rd_err *err)
{
	const char *end = s + len, *p = s;
	char ch = '-', given[RD_FILTER_RULE_LEN + 1];
	int side = 0, ret;
	size_t n;

	memset(r, 0, sizeof(*r));
	if (!len)
		return 1;
	if (len > RD_FILTER_RULE_LEN)
		return bad(err, s, len, "too long");
	if (memchr(s, '\0', len))
		return bad(err, s, len, "a NUL byte in it");
	if (dflt & (R_M_EXCLUDES | R_M_INCLUDES)) {
		/* a line of a "-"/"+" merge file: a bare pattern */
		ch = (dflt & R_M_INCLUDES) ? '+' : '-';
		r->flags = dflt & (R_SENDER | R_RECEIVER | R_PERISH);
	} else if (old) {
		/* --exclude-from / --include-from: "- ", "+ " may lead; "!" clears */
		ch = old > 1 ? '+' : '-';
		if (len >= 2 && (s[0] == '-' || s[0] == '+') && s[1] == ' ') {
			ch = s[0];
			p += 2;
		} else if (len == 1 && s[0] == '!') {
			ch = '!';
			p++;
		}
	} else {
		ch = rule_char(&p, end);
		if (p < end && *p == ',')
			p++;
		side = ch == 'H' || ch == 'S' || ch == 'P' || ch == 'R';
		switch (ch) {
		case '-':
		case '+':
		case ':':
		case '.':
		case '!':
			break;
		case 'H':
		case 'S':
			r->flags |= R_SENDER;
			break;
		case 'P':
		case 'R':
			r->flags |= R_RECEIVER;
			break;
		default:
			return bad(err, s, len, "unknown rule (not one of - + . : H S P R !)");
		}
		if (ch != '!') {
			ret = modifiers(r, ch, &p, end, side, s, len, err);
			if (ret)
				return ret;
		}
		/* rules from a merge file with sides say none of their own */
		r->flags |= dflt & (R_SENDER | R_RECEIVER | R_PERISH);
		if (ch == 'S' || ch == 'R')
			ch = '+';
		else if (ch == 'H' || ch == 'P')
			ch = '-';
	}
	if (ch == '!') {
		if (p != end)
			return bad(err, s, len, "'!' (clear) takes no pattern");
		r->flags |= R_CLEAR;
		r->pattern = strdup("");
		return r->pattern && !set_text(r, "!", "")
			   ? 0
			   : rd_err_set(err, RD_ENOMEM, 0, "filter");
	}
	if (p < end && (*p == ' ' || *p == '_'))
		p++; /* the one separator; any more spaces are the pattern's */
	n = p < end ? (size_t)(end - p) : 0;
	if (!n || n > RD_FILTER_RULE_LEN)
		return bad(err, s, len, "a pattern (or a file name) is missing");
	memcpy(given, p, n);
	given[n] = '\0';
	if (ch == '+')
		r->flags |= R_INCLUDE;
	if (ch == ':' || ch == '.') {
		const char *name = given[0] == '/' && ch == ':' ? given + 1 : given;

		r->flags |= ch == ':' ? R_DIR_MERGE : R_MERGE;
		if (ch == ':' && given[0] == '/')
			r->flags |= R_M_PARENTS;
		if (ch == ':' &&
		    (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")))
			return bad(err, s, len, "a per-directory merge file is one name");
		r->pattern = strdup(name);
	} else {
		r->pattern = strdup(given);
	}
	if (!r->pattern || make_text(r, given) < 0) {
		rd_rule_free(r);
		return rd_err_set(err, RD_ENOMEM, 0, "filter rule");
	}
	if (!(r->flags & (R_DIR_MERGE | R_MERGE)))
		pattern_flags(r);
	/*
	 * '/': a pattern of one name (no '/' in it, no "**") matches the
	 * last name as without it; the others would need the absolute path
	 */
	if ((r->flags & R_ABS) && (r->slash_cnt || (r->flags & R_WILD2))) {
		rd_rule_free(r);
		return bad(err, s, len,
			   "the '/' modifier with a path pattern (absolute paths) is not "
			   "supported by rdcp; anchor the pattern with a leading '/' instead");
	}
	return 0;
}

void rd_rule_free(struct rd_rule *r)
{
	free(r->pattern);
	free(r->text);
	r->pattern = r->text = NULL;
}

int rd_filter_new(struct rd_filter **out, unsigned flags, struct rd_err *err)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return rd_err_set(err, RD_ENOMEM, 0, "filter rules");
	(*out)->flags = flags;
	return 0;
}

void rd_filter_free(struct rd_filter *f)
{
	unsigned i;

	if (!f)
		return;
	for (i = 0; i < f->n; i++)
		rd_rule_free(&f->rules[i]);
	free(f->rules);
	free(f);
}

void rd_filter_set_reader(struct rd_filter *f, rd_filter_read_fn read, void *ctx)
{
	f->read = read;
	f->read_ctx = ctx;
}

static void clear_list(struct rd_filter *f)
{
	unsigned i;

	for (i = 0; i < f->n; i++)
		rd_rule_free(&f->rules[i]);
	f->n = 0;
}

static int push_rule(struct rd_filter *f, struct rd_rule *r, struct rd_err *err)
{
	if (f->n >= RD_FILTER_RULES_MAX) {
		rd_rule_free(r);
		return rd_err_set(err, RD_EUSAGE, 0, "more than %d filter rules",
				  RD_FILTER_RULES_MAX);
	}
	if (f->n == f->cap) {
		unsigned cap = f->cap ? f->cap * 2 : 16;
		struct rd_rule *n = realloc(f->rules, cap * sizeof(*n));

		if (!n) {
			rd_rule_free(r);
			return rd_err_set(err, RD_ENOMEM, 0, "filter rules");
		}
		f->rules = n;
		f->cap = cap;
	}
	f->rules[f->n++] = *r;
	return 0;
}

static int add_text(struct rd_filter *f, const char *text, size_t len, unsigned dflt, int old,
		    struct rd_err *err);

/* A '.' rule: the file's rules, here, in its place. */
static int merge(struct rd_filter *f, const struct rd_rule *r, struct rd_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (!(f->flags & RD_FILTER_MERGE_OK) || !f->read)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "filter rule '%s': merge files are read by the client only",
				  r->text);
	if (f->depth >= MERGE_DEPTH_MAX)
		return rd_err_set(err, RD_EUSAGE, 0, "merge file %s: merged %d deep: a loop?",
				  r->pattern, MERGE_DEPTH_MAX);
	if (f->read(f->read_ctx, r->pattern, &buf, &len, err) < 0)
		return -RD_EUSAGE;
	f->depth++;
	ret = rd_filter_add_lines(f, buf, len, 0, RD_FILTER_RULE, err);
	f->depth--;
	free(buf);
	return ret;
}

int rd_filter_add(struct rd_filter *f, const char *text, size_t len, enum rd_filter_how how,
		  struct rd_err *err)
{
	static const char prefix[][3] = {"", "- ", "+ "};
	char buf[RD_FILTER_RULE_LEN + 3];

	switch (how) {
	case RD_FILTER_EXCLUDE:
	case RD_FILTER_INCLUDE:
		/* --exclude P is "- P", no other syntax */
		if (!len)
			return 0;
		if (len > RD_FILTER_RULE_LEN)
			return bad(err, text, len, "too long");
		memcpy(buf, prefix[how], 2);
		memcpy(buf + 2, text, len);
		return add_text(f, buf, len + 2, 0, 0, err);
	case RD_FILTER_EXCLUDE_LINE:
	case RD_FILTER_INCLUDE_LINE:
		if (!len || text[0] == ';' || text[0] == '#')
			return 0;
		return add_text(f, text, len, 0, how == RD_FILTER_INCLUDE_LINE ? 2 : 1, err);
	default:
		return add_text(f, text, len, 0, 0, err);
	}
}

/* One rule read with dflt (a merge file's modifiers) or old-style. */
static int add_text(struct rd_filter *f, const char *text, size_t len, unsigned dflt, int old,
		    struct rd_err *err)
{
	struct rd_rule r, self;
	int ret = rd_rule_parse(&r, text, len, dflt, old, err);

	if (ret)
		return ret > 0 ? 0 : ret;
	if (r.flags & R_CLEAR) {
		rd_rule_free(&r);
		clear_list(f);
		return 0;
	}
	if (r.flags & R_MERGE) {
		ret = merge(f, &r, err);
		rd_rule_free(&r);
		return ret;
	}
	ret = push_rule(f, &r, err);
	if (ret || !(r.flags & R_DIR_MERGE) || !(r.flags & R_M_SELF))
		return ret;
	/* "dir-merge,e .rules" is "dir-merge .rules" and "- .rules" */
	memset(&self, 0, sizeof(self));
	self.pattern = strdup(r.pattern);
	if (!self.pattern || set_text(&self, "-", r.pattern) < 0) {
		rd_rule_free(&self);
		return rd_err_set(err, RD_ENOMEM, 0, "filter rule");
	}
	pattern_flags(&self);
	return push_rule(f, &self, err);
}

int rd_filter_add_lines(struct rd_filter *f, const char *text, size_t len, int from0,
			enum rd_filter_how how, struct rd_err *err)
{
	const char *p = text, *end = text + len, *e;
	size_t n;
	int ret;

	while (p < end) {
		e = memchr(p, from0 ? '\0' : '\n', (size_t)(end - p));
		if (!e)
			e = end;
		n = (size_t)(e - p);
		if (!from0 && n && p[n - 1] == '\r')
			n--;
		/* rule files: empty lines and whole-line '#' comments are skipped */
		if (n && !(how == RD_FILTER_RULE && p[0] == '#')) {
			ret = rd_filter_add(f, p, n, how, err);
			if (ret)
				return ret;
		}
		p = e + 1;
	}
	return 0;
}

unsigned rd_filter_count(const struct rd_filter *f)
{
	return f ? f->n : 0;
}

const char *rd_filter_text(const struct rd_filter *f, unsigned i, size_t *len)
{
	*len = f->rules[i].text_len;
	return f->rules[i].text;
}

int rd_filter_has_dir_merge(const struct rd_filter *f)
{
	unsigned i;

	for (i = 0; f && i < f->n; i++)
		if (f->rules[i].flags & R_DIR_MERGE)
			return 1;
	return 0;
}

int rd_rule_on_side(const struct rd_rule *r, unsigned flags, unsigned side)
{
	unsigned sides = r->flags & (R_SENDER | R_RECEIVER);

	if (!sides) /* both, or with --delete-excluded the sender's alone */
		sides = (flags & RD_FILTER_DELETE_EXCLUDED) ? R_SENDER : R_SENDER | R_RECEIVER;
	return ((side & RD_FILTER_SENDER) && (sides & R_SENDER)) ||
	       ((side & RD_FILTER_RECEIVER) && (sides & R_RECEIVER));
}

/* A literal pattern at the start of text, or (where > 0) of its last `where` components. */
static int literal_where(const char *pat, const char *text, int where)
{
	const char *t = text;
	int n = 0;

	if (where > 0) {
		for (t = text + strlen(text); t > text; t--)
			if (t[-1] == '/' && ++n == where)
				break;
		if (n < where - 1)
			return 0;
	}
	return !strcmp(pat, t);
}

int rd_rule_matches(const struct rd_rule *r, const char *path, size_t len, int is_dir)
{
	char buf[2 * RD_FILTER_RULE_LEN + 8];
	const char *name = path, *pat = r->pattern, *slash;
	int neg = !!(r->flags & R_NEGATE), anchored = 0, where, m, extra = 0;
	size_t n = len, k = 0;

	if (!len)
		return 0;
	if ((r->flags & R_DIRONLY) && !is_dir)
		return neg;
	if (!r->slash_cnt && !(r->flags & R_WILD2)) {
		/* a plain name: the last component */
		slash = memrchr(path, '/', len);
		if (slash) {
			name = slash + 1;
			n = len - (size_t)(name - path);
		}
	}
	if (n + 2 >= sizeof(buf))
		return neg;
	if ((r->flags & R_WILD2_PRE) && *pat != '/') {
		buf[k++] = '/'; /* "**" + "/" may match at the start */
		extra = 1;
	}
	memcpy(buf + k, name, n);
	k += n;
	if (is_dir && (r->flags & R_WILD3_SUF)) {
		buf[k++] = '/'; /* "dir/" + "***" matches the directory itself */
		extra = 1;
	}
	buf[k] = '\0';
	if (*pat == '/') {
		anchored = 1;
		pat++;
	}
	if (!anchored && r->slash_cnt && !(r->flags & R_WILD2))
		where = (int)r->slash_cnt + 1;
	else if (!anchored && !(r->flags & R_WILD2_PRE) && (r->flags & R_WILD2))
		where = -1;
	else
		where = 0;
	if (r->flags & R_WILD)
		m = rd_wildmatch_where(pat, buf, where);
	else if (extra || anchored)
		m = literal_where(pat, buf, where);
	else {
		size_t pl = strlen(pat);

		/* the pattern ends the path, at a component's start */
		m = pl <= n && !strcmp(name + n - pl, pat) && (pl == n || name[n - pl - 1] == '/');
	}
	return m ? !neg : neg;
}
