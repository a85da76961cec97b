// SPDX-License-Identifier: MIT
/* rsync's selection options, shared by rdcp and rdcp-mpi (rd_selopt.h). */
#include "lib/filter/rd_selopt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rd_num.h"
#include "lib/proto/rd_proto.h"

void rd_selopt_init(struct rd_selopt *s)
{
	memset(s, 0, sizeof(*s));
	s->compare = RD_CMP_QUICK;
	s->modify_window = RD_WINDOW_NS;
	s->max_size = RD_SIZE_NONE;
}

void rd_selopt_free(struct rd_selopt *s)
{
	free(s->fargs);
	s->fargs = NULL;
	s->nfargs = 0;
}

static int add_farg(struct rd_selopt *s, int how, const char *arg, struct rd_err *err)
{
	struct rd_selopt_farg *fa = realloc(s->fargs, ((size_t)s->nfargs + 1) * sizeof(*fa));

	if (!fa)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "filter options");
	s->fargs = fa;
	fa[s->nfargs].how = how;
	fa[s->nfargs++].arg = arg;
	return 0;
}

int rd_selopt_apply(struct rd_selopt *s, enum rd_selopt_id id, int on, const char *v,
		    const char *as, struct rd_err *err)
{
	uint64_t n;
	unsigned bit;
	int r;

	switch (id) {
	case RD_SO_CHECKSUM:
		s->checksum = on;
		s->compare = on ? RD_CMP_CHECKSUM : RD_CMP_QUICK;
		return 0;
	case RD_SO_IGNORE_TIMES: /* no quick check, every file written anew */
		s->compare = on ? RD_CMP_ALL : RD_CMP_QUICK;
		return 0;
	case RD_SO_SIZE_ONLY:
		s->compare = on ? RD_CMP_SIZE : RD_CMP_QUICK;
		return 0;
	case RD_SO_MODIFY_WINDOW: {
		char *end;
		long w = strtol(v, &end, 10);

		if (*end || !*v || w > INT32_MAX || w < INT32_MIN)
			return rd_err_set(err, RD_EUSAGE, 0,
					  "%s '%s': give whole seconds (0: to the second; "
					  "negative: to the nanosecond)",
					  as, v);
		s->modify_window = w < 0 ? RD_WINDOW_NS : (int32_t)w;
		return 0;
	}
	case RD_SO_UPDATE:
	case RD_SO_DRY_RUN:
	case RD_SO_IGNORE_EXISTING:
	case RD_SO_EXISTING:
		bit = id == RD_SO_UPDATE	    ? RD_SEL_UPDATE
		      : id == RD_SO_DRY_RUN	    ? RD_SEL_DRY_RUN
		      : id == RD_SO_IGNORE_EXISTING ? RD_SEL_IGNORE_EXISTING
						    : RD_SEL_EXISTING;
		s->rules = on ? s->rules | bit : s->rules & ~bit;
		return 0;
	case RD_SO_MAX_SIZE:
	case RD_SO_MIN_SIZE:
		/* rsync's sizes: bytes unless a suffix says */
		r = rd_num_parse_rsync_size(v, 'b', &n);
		if (r)
			return rd_err_set(err, RD_EUSAGE, 0, "%s=%s is %s", as, v,
					  r == -2 ? "too large"
						  : "invalid (a size: 100, 1.5m, 2G, 10MB)");
		if (id == RD_SO_MAX_SIZE)
			s->max_size = n;
		else
			s->min_size = n;
		return 0;
	case RD_SO_F:
		/* rsync's -F: the per-directory files; -FF: and leave them out */
		return add_farg(s, RD_SO_F_FILTER,
				++s->nF == 1 ? ": /.rsync-filter" : "- .rsync-filter", err);
	case RD_SO_FILTER:
		return add_farg(s, RD_SO_F_FILTER, v, err);
	case RD_SO_EXCLUDE:
		return add_farg(s, RD_SO_F_EXCLUDE, v, err);
	case RD_SO_INCLUDE:
		return add_farg(s, RD_SO_F_INCLUDE, v, err);
	case RD_SO_EXCLUDE_FROM:
		return add_farg(s, RD_SO_F_EXCLUDE_FROM, v, err);
	case RD_SO_INCLUDE_FROM:
		return add_farg(s, RD_SO_F_INCLUDE_FROM, v, err);
	case RD_SO_FROM0:
		s->from0 = on;
		return 0;
	}
	return rd_err_set(err, RD_EUSAGE, 0, "%s: not a selection option", as);
}

int rd_selopt_any(const struct rd_selopt *s)
{
	return s->rules || s->compare == RD_CMP_SIZE || s->compare == RD_CMP_ALL || s->min_size ||
	       s->max_size != RD_SIZE_NONE || s->modify_window != RD_WINDOW_NS;
}

/* A client's file for rules (a merge rule, --exclude-from; "-": stdin), whole. */
#define RULES_FILE_MAX (4u << 20)

static int read_rules_file(void *ctx, const char *name, char **buf, size_t *len, struct rd_err *err)
{
	FILE *f = strcmp(name, "-") ? fopen(name, "r") : stdin;
	size_t cap = 4096, n = 0;
	char *b = NULL, *nb;

	(void)ctx;
	if (!f)
		return rd_err_set(err, RD_EUSAGE, errno, "filter file %s", name);
	for (;;) {
		nb = realloc(b, cap);
		if (!nb) {
			n = (size_t)-1;
			break;
		}
		b = nb;
		n += fread(b + n, 1, cap - n, f);
		if (n < cap || cap >= RULES_FILE_MAX)
			break;
		cap *= 2;
	}
	if (f != stdin)
		fclose(f);
	if (n == (size_t)-1 || n >= RULES_FILE_MAX) {
		free(b);
		return rd_err_set(err, RD_EUSAGE, 0, "filter file %s: over %u bytes", name,
				  RULES_FILE_MAX);
	}
	*buf = b;
	*len = n;
	return 0;
}

int rd_selopt_filter(const struct rd_selopt *s, struct rd_filter **out, struct rd_err *err)
{
	struct rd_filter *f = NULL;
	size_t bytes = 0, len;
	char *buf;
	unsigned i;
	int ret = 0, k;

	*out = NULL;
	if (!s->nfargs)
		return 0;
	ret = rd_filter_new(&f, RD_FILTER_MERGE_OK, err);
	if (ret)
		return ret;
	rd_filter_set_reader(f, read_rules_file, NULL);
	for (k = 0; k < s->nfargs && !ret; k++) {
		const struct rd_selopt_farg *a = &s->fargs[k];

		switch (a->how) {
		case RD_SO_F_EXCLUDE:
		case RD_SO_F_INCLUDE:
			ret = rd_filter_add(
			    f, a->arg, strlen(a->arg),
			    a->how == RD_SO_F_EXCLUDE ? RD_FILTER_EXCLUDE : RD_FILTER_INCLUDE, err);
			break;
		case RD_SO_F_EXCLUDE_FROM:
		case RD_SO_F_INCLUDE_FROM:
			ret = read_rules_file(NULL, a->arg, &buf, &len, err);
			if (ret)
				break;
			ret = rd_filter_add_lines(f, buf, len, s->from0,
						  a->how == RD_SO_F_EXCLUDE_FROM
						      ? RD_FILTER_EXCLUDE_LINE
						      : RD_FILTER_INCLUDE_LINE,
						  err);
			free(buf);
			break;
		default:
			ret = rd_filter_add(f, a->arg, strlen(a->arg), RD_FILTER_RULE, err);
			break;
		}
	}
	for (i = 0; !ret && i < rd_filter_count(f); i++) {
		rd_filter_text(f, i, &len);
		bytes += len;
	}
	if (!ret && bytes > RD_RULES_BYTES_MAX)
		ret = rd_err_set(err, RD_EUSAGE, 0, "the filter rules are over %u bytes in all",
				 RD_RULES_BYTES_MAX);
	if (ret) {
		rd_filter_free(f);
		return ret;
	}
	*out = f;
	return 0;
}
