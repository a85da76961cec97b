// SPDX-License-Identifier: MIT
/*
 * rsync's wildcards (rsync.1, PATTERN MATCHING RULES): '?' is any one
 * byte but '/', '*' any run of bytes without a '/', '**' (or more stars)
 * any run at all, '[...]' one byte of a class ('!' or '^' first negates;
 * ranges, POSIX [:name:] classes, '\' escapes; never '/'), '\' makes the
 * next byte literal. A trailing single '*' matches only up to the end with
 * no '/' left.
 *
 * Matching is backtracking over the pattern, with one refinement that
 * bounds it: when a single '*' fails for every extent up to a '/', no
 * earlier '*' can do better by taking that '/', except a '**' (ABORT_SLASH
 * unwinds to the nearest '**'); a failure with the text used up ends every
 * branch (ABORT_ALL).
 */
#include "lib/filter/rd_filter_priv.h"

#include <ctype.h>
#include <string.h>

enum { NO = 0, YES = 1, ABORT_ALL = -1, ABORT_SLASH = -2 };

/* The named class [:name:] (len bytes) holds c? -1: no such class. */
static int in_named_class(const char *name, size_t len, unsigned char c)
{
	static const struct {
		const char *name;
		int (*is)(int);
	} cls[] = {{"alnum", isalnum}, {"alpha", isalpha}, {"blank", isblank},
		   {"cntrl", iscntrl}, {"digit", isdigit}, {"graph", isgraph},
		   {"lower", islower}, {"print", isprint}, {"punct", ispunct},
		   {"space", isspace}, {"upper", isupper}, {"xdigit", isxdigit}};
	size_t i;

	for (i = 0; i < sizeof(cls) / sizeof(cls[0]); i++)
		if (strlen(cls[i].name) == len && !memcmp(cls[i].name, name, len))
			return c < 0x80 && cls[i].is(c) ? 1 : 0;
	return -1;
}

/*
 * The class at p (just past '['): does it take c? *end gets the byte past
 * its ']'. ABORT_ALL for a class that never ends or names no class.
 */
static int match_class(const char *p, unsigned char c, const char **end)
{
	int negate = 0, hit = 0, first = 1;
	unsigned char prev = 0, lo, hi;
	const char *q;

	if (*p == '!' || *p == '^') {
		negate = 1;
		p++;
	}
	for (;; p++) {
		if (!*p)
			return ABORT_ALL;
		if (*p == ']' && !first)
			break;
		first = 0;
		if (*p == '\\') {
			if (!*++p)
				return ABORT_ALL;
			prev = (unsigned char)*p;
			hit |= c == prev;
		} else if (*p == '-' && prev && p[1] && p[1] != ']') {
			lo = prev;
			p++;
			if (*p == '\\' && !*++p)
				return ABORT_ALL;
			hi = (unsigned char)*p;
			hit |= c >= lo && c <= hi;
			prev = 0;
		} else if (*p == '[' && p[1] == ':') {
			q = strstr(p + 2, ":]");
			if (q && !memchr(p + 2, ']', (size_t)(q - (p + 2)))) {
				int r = in_named_class(p + 2, (size_t)(q - (p + 2)), c);

				if (r < 0)
					return ABORT_ALL;
				hit |= r;
				p = q + 1;
				prev = 0;
			} else {
				prev = '[';
				hit |= c == '[';
			}
		} else {
			prev = (unsigned char)*p;
			hit |= c == prev;
		}
	}
	*end = p + 1;
	return hit != negate && c != '/';
}

static int dowild(const char *p, const char *t)
{
	const char *end;
	int stars, r;

	for (; *p; p++, t++) {
		switch (*p) {
		case '?':
			if (!*t)
				return ABORT_ALL;
			if (*t == '/')
				return NO;
			break;
		case '*':
			for (stars = 0; *p == '*'; p++)
				stars++;
			if (!*p) /* trailing: "**" takes the rest, "*" the rest without '/' */
				return stars > 1 || !strchr(t, '/') ? YES : NO;
			for (;; t++) {
				r = dowild(p, t);
				if (r == YES || (r != NO && (stars == 1 || r != ABORT_SLASH)))
					return r;
				if (!*t)
					return ABORT_ALL;
				if (stars == 1 && *t == '/')
					return ABORT_SLASH;
			}
		case '[':
			if (!*t)
				return ABORT_ALL;
			r = match_class(p + 1, (unsigned char)*t, &end);
			if (r != YES)
				return r;
			p = end - 1;
			break;
		case '\\':
			if (p[1])
				p++;
			/* fall through */
		default:
			if (!*t)
				return ABORT_ALL;
			if (*p != *t)
				return NO;
			break;
		}
	}
	return *t ? NO : YES;
}

int rd_wildmatch(const char *pattern, const char *text)
{
	return dowild(pattern, text) == YES;
}

int rd_wildmatch_where(const char *pattern, const char *text, int where)
{
	const char *t = text;
	int n, r;

	if (where > 0) {
		/* the last `where` components only */
		for (n = 0, t = text + strlen(text); t > text; t--)
			if (t[-1] == '/' && ++n == where)
				break;
		if (n < where - 1)
			return 0;
		return dowild(pattern, t) == YES;
	}
	r = dowild(pattern, t);
	if (r == YES || where == 0 || r == ABORT_ALL)
		return r == YES;
	/* at the start failed: after every '/' */
	for (; *t; t++) {
		if (*t != '/')
			continue;
		r = dowild(pattern, t + 1);
		if (r == YES)
			return 1;
		if (r == ABORT_ALL)
			return 0;
	}
	return 0;
}
