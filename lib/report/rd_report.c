// SPDX-License-Identifier: MIT
/*
 * The run report behind `rdcp --json`. The format and the string rules
 * are in rd_report.h; this file keeps them.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/report/rd_report.h"
#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"

const char *rd_report_strip_path(const char *msg, const char *path, size_t len)
{
	size_t ml;

	if (!msg || !path || !len)
		return msg;
	ml = strnlen(msg, RD_REPORT_MSG_MAX + 1);
	if (ml >= len + 2 && !memcmp(msg, path, len) && msg[len] == ':' && msg[len + 1] == ' ')
		return msg + len + 2;
	return msg;
}

size_t rd_report_line(char *out, size_t cap, const char *path, size_t len, int status,
		      const char *msg)
{
	size_t n = 0, ml;

	if (!cap)
		return 0;
	out[0] = '\0';
	if (cap < 4)
		return 0;
	msg = rd_report_strip_path(msg, path, len);
	if (!msg)
		msg = rd_status_name(status);
	ml = strnlen(msg, RD_REPORT_MSG_MAX);
	if (path && len) {
		n = rd_escape(out, cap, path, len);
		if (n + 2 < cap) {
			memcpy(out + n, ": ", 3);
			n += 2;
		}
	}
	if (n < cap)
		n += rd_escape(out + n, cap - n, msg, ml);
	if (n >= cap) {
		memcpy(out + cap - 4, "...", 4);
		n = cap - 1;
	}
	return n;
}

void rd_report_init(struct rd_report *r, unsigned max_errors)
{
	memset(r, 0, sizeof(*r));
	r->max_errors = max_errors;
}

void rd_report_free(struct rd_report *r)
{
	unsigned i;

	if (!r)
		return;
	for (i = 0; i < r->nerrors; i++) {
		free(r->errors[i].path);
		free(r->errors[i].msg);
	}
	for (i = 0; i < r->nnotes; i++) {
		free(r->notes[i].path);
		free(r->notes[i].msg);
	}
	free(r->errors);
	free(r->notes);
	r->errors = NULL;
	r->notes = NULL;
	r->nerrors = r->nnotes = 0;
	r->cap = r->notes_cap = 0;
}

/* One list of kept entries (errors or notes) of a report. */
struct list {
	struct rd_report_entry **v;
	unsigned *n, *cap;
	uint64_t *omitted;
};

/* Room for one more kept entry: the array grows by doubling up to max_errors. */
static int reserve(struct rd_report *r, const struct list *l)
{
	struct rd_report_entry *n;
	unsigned cap;

	if (*l->n < *l->cap)
		return 0;
	cap = *l->cap ? *l->cap * 2 : 8;
	if (cap > r->max_errors || cap < *l->cap)
		cap = r->max_errors;
	n = realloc(*l->v, (size_t)cap * sizeof(*n));
	if (!n)
		return rd_err_set(&r->err, RD_ENOMEM, ENOMEM, "report: keeping an entry");
	*l->v = n;
	*l->cap = cap;
	return 0;
}

/* Keep (path, status, msg) in l, or count it past max_errors. */
static int keep(struct rd_report *r, const struct list *l, const char *path, size_t len, int status,
		const char *msg)
{
	struct rd_report_entry *e;
	size_t mlen;
	int ret;

	if (*l->n >= r->max_errors) {
		(*l->omitted)++;
		return 0;
	}
	ret = reserve(r, l);
	if (ret)
		goto out_count;
	e = &(*l->v)[*l->n];
	memset(e, 0, sizeof(*e));
	e->status = status;
	if (path) {
		if (len > RD_REPORT_PATH_MAX)
			len = RD_REPORT_PATH_MAX;
		/* +1: never malloc(0), and a NUL for debuggers */
		e->path = malloc(len + 1);
		if (!e->path)
			goto out_nomem;
		memcpy(e->path, path, len);
		e->path[len] = '\0';
		e->path_len = len;
	}
	mlen = msg ? strnlen(msg, RD_REPORT_MSG_MAX) : 0;
	e->msg = malloc(mlen + 1);
	if (!e->msg)
		goto out_path;
	if (mlen)
		memcpy(e->msg, msg, mlen);
	e->msg[mlen] = '\0';
	(*l->n)++;
	return 0;

out_path:
	free(e->path);
	e->path = NULL;
out_nomem:
	ret = rd_err_set(&r->err, RD_ENOMEM, ENOMEM, "report: keeping an entry");
out_count:
	(*l->omitted)++;
	return ret;
}

int rd_report_error(struct rd_report *r, const char *path, size_t len, int status, const char *msg)
{
	const struct list l = {&r->errors, &r->nerrors, &r->cap, &r->omitted};

	if (status == 0)
		return 0;
	if (path) {
		if (!r->counts.failed++)
			r->counts.first_status = status < 0 ? status : -status;
		if (status == -RD_EVANISHED || status == RD_EVANISHED)
			r->counts.vanished++;
	}
	return keep(r, &l, path, len, status < 0 ? status : -status, msg);
}

void rd_report_item(struct rd_report *r, const struct rd_item *it)
{
	struct rd_report_counts *c = &r->counts;
	int k;

	if (it->status)
		return;
	switch (it->type) {
	case RD_FT_DIR:
		k = RD_KIND_DIR;
		break;
	case RD_FT_SYMLINK:
		k = RD_KIND_LINK;
		c->total_size += it->tlen;
		break;
	case RD_FT_SPECIAL:
		k = S_ISCHR(it->mode) || S_ISBLK(it->mode) ? RD_KIND_DEV : RD_KIND_SPECIAL;
		break;
	default: /* REG, HLINK */
		k = RD_KIND_REG;
		c->total_size += it->size;
		if (it->type == RD_FT_HLINK)
			c->hardlinks++;
		else if (it->items & (RD_IT_XFER | RD_ITEM_UNKNOWN)) {
			c->xferred++;
			c->xferred_size += it->size;
		}
		break;
	}
	c->n[k]++;
	if (it->items & RD_IT_NEW)
		c->created[k]++;
}

int rd_report_note(struct rd_report *r, const char *path, size_t len, const char *msg)
{
	const struct list l = {&r->notes, &r->nnotes, &r->notes_cap, &r->notes_omitted};

	if (!msg || !msg[0])
		return 0;
	return keep(r, &l, path, len, 0, msg);
}

/*
 * Length of the valid UTF-8 sequence at s (n bytes left) and its code
 * point, or 0 if s[0] does not start one (stray continuation byte, bad
 * lead byte, truncated, overlong, surrogate, above U+10FFFF).
 */
size_t rd_report_json_string(FILE *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, k, bad = 0;
	uint32_t cp;

	fputc('"', out);
	while (i < len) {
		k = rd_utf8_decode(s + i, len - i, &cp);
		if (!k) {
			fputs("\\ufffd", out);
			bad++;
			i++;
			continue;
		}
		switch (cp) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		default:
			if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
				fprintf(out, "\\u%04" PRIx32, cp);
			else
				fwrite(s + i, 1, k, out);
		}
		i += k;
	}
	fputc('"', out);
	return bad;
}

static void json_cstr(FILE *out, const char *s)
{
	if (s)
		rd_report_json_string(out, s, strlen(s));
	else
		fputs("null", out);
}

/*
 * A JSON number from a double: never NaN or infinite, and '.' as the
 * decimal point even under a locale that prints ','.
 */
static void json_double(FILE *out, double v, int decimals)
{
	char buf[64], *p;

	if (!isfinite(v) || v < 0)
		v = 0;
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	for (p = buf; *p; p++)
		if (*p != '-' && (*p < '0' || *p > '9'))
			*p = '.';
	fputs(buf, out);
}

/* A phase's seconds, or null when the other side spent them (< 0). */
static void json_phase(FILE *out, const char *name, double v, int last)
{
	fprintf(out, "\"%s\": ", name);
	if (v < 0)
		fputs("null", out);
	else
		json_double(out, v, 6);
	fputs(last ? "}" : ", ", out);
}

static void json_phases(FILE *out, const struct rd_report_phases *p)
{
	fputs(", \"phases\": {", out);
	json_phase(out, "connect", p->connect, 0);
	json_phase(out, "tls", p->tls, 0);
	json_phase(out, "open", p->open, 0);
	json_phase(out, "data", p->data, 0);
	json_phase(out, "walk", p->walk, 0);
	json_phase(out, "fsync", p->fsync, 0);
	json_phase(out, "close", p->close, 1);
}

static void json_hex(FILE *out, const char *s, size_t len)
{
	size_t i;

	fputc('"', out);
	for (i = 0; i < len; i++)
		fprintf(out, "%02x", (unsigned char)s[i]);
	fputc('"', out);
}

static void json_entry(FILE *out, const struct rd_report_entry *e)
{
	size_t bad = 0;

	fputs("{\"path\": ", out);
	if (e->path)
		bad = rd_report_json_string(out, e->path, e->path_len);
	else
		fputs("null", out);
	if (bad) {
		fputs(", \"path_hex\": ", out);
		json_hex(out, e->path, e->path_len);
	}
	if (e->status) { /* an error; a note has none */
		fputs(", \"status\": ", out);
		json_cstr(out, rd_status_name(e->status));
	}
	fputs(", \"message\": ", out);
	json_cstr(out, e->msg ? e->msg : "");
	fputc('}', out);
}

int rd_report_json(FILE *out, const struct rd_report *r, const struct rd_engine_stats *st,
		   double seconds, const char *checksum, int exit_status)
{
	static const struct rd_engine_stats zero;
	static const struct rd_report_counts nocounts;
	const struct rd_report_counts *c = r ? &r->counts : &nocounts;
	unsigned i, n = r ? r->nerrors : 0;
	uint64_t entries = 0, created = 0;

	if (!st)
		st = &zero;
	if (!isfinite(seconds) || seconds < 0)
		seconds = 0;
	for (i = 0; i < RD_KINDS; i++) {
		entries += c->n[i];
		created += c->created[i];
	}
	fprintf(out,
		"{\"files\": %" PRIu64 ", \"dirs\": %" PRIu64 ", \"symlinks\": %" PRIu64
		", \"hardlinks\": %" PRIu64 ", \"devices\": %" PRIu64 ", \"specials\": %" PRIu64
		", \"entries\": %" PRIu64 ", \"created\": %" PRIu64 ", \"transferred\": %" PRIu64,
		c->n[RD_KIND_REG], c->n[RD_KIND_DIR], c->n[RD_KIND_LINK], c->hardlinks,
		c->n[RD_KIND_DEV], c->n[RD_KIND_SPECIAL], entries, created, c->xferred);
	fprintf(out,
		", \"failed\": %" PRIu64 ", \"identical\": %" PRIu64 ", \"deleted\": %" PRIu64
		", \"bytes\": %" PRIu64 ", \"bytes_moved\": %" PRIu64
		", \"bytes_resumed\": %" PRIu64 ", \"bytes_sent\": %" PRIu64
		", \"bytes_received\": %" PRIu64 ", \"seconds\": ",
		c->failed, st->files_same, st->deleted, st->bytes_files, st->bytes_data,
		st->bytes_resumed, c->sent, c->received);
	json_double(out, seconds, 3);
	fputs(", \"rate_bytes_per_sec\": ", out);
	json_double(out, seconds > 0 ? (double)st->bytes_data / seconds : 0, 1);
	fputs(", \"checksum\": ", out);
	json_cstr(out, checksum);
	if (r && r->cost.rss_peak) {
		fprintf(out,
			", \"memory\": {\"registered_peak_bytes\": %" PRIu64
			", \"registered_data_peak_bytes\": %" PRIu64
			", \"registered_control_bytes\": %" PRIu64 ", \"rss_peak_bytes\": %" PRIu64
			"}, \"startup_seconds\": ",
			r->cost.registered_peak + r->cost.registered_ctrl, r->cost.registered_peak,
			r->cost.registered_ctrl, r->cost.rss_peak);
		json_double(out, r->cost.startup_s, 3);
	}
	if (r && r->phases.set)
		json_phases(out, &r->phases);
	fprintf(out, ", \"exit_status\": %d, \"errors\": [", exit_status);
	for (i = 0; i < n; i++) {
		if (i)
			fputs(", ", out);
		json_entry(out, &r->errors[i]);
	}
	fprintf(out, "], \"errors_omitted\": %" PRIu64 ", \"notes\": [", r ? r->omitted : 0);
	for (i = 0; r && i < r->nnotes; i++) {
		if (i)
			fputs(", ", out);
		json_entry(out, &r->notes[i]);
	}
	fprintf(out, "], \"notes_omitted\": %" PRIu64 "}\n", r ? r->notes_omitted : 0);
	if (fflush(out) || ferror(out))
		return -RD_ESYS;
	return 0;
}

int rd_report_fold_add(struct rd_report_fold *f, const char *path, size_t len)
{
	struct rd_report_fold_run *c = &f->cur;

	f->ended.n = 0;
	if (len > RD_REPORT_PATH_MAX)
		len = RD_REPORT_PATH_MAX;
	if (f->active && path && len >= c->len && !memcmp(path, c->path, c->len)) {
		if (len == c->len)
			return 2; /* the same entry again (a directory's second pass) */
		if (path[c->len] == '/') {
			c->n++;
			return 1;
		}
	}
	rd_report_fold_end(f);
	f->active = path && len;
	if (f->active)
		memcpy(c->path, path, len);
	c->len = f->active ? len : 0;
	c->n = 0;
	return 0;
}

void rd_report_fold_end(struct rd_report_fold *f)
{
	if (f->active)
		f->ended = f->cur;
	else
		f->ended.n = 0;
	f->active = 0;
	f->cur.n = 0;
}
