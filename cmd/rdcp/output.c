// SPDX-License-Identifier: MIT
/*
 * What rdcp says about a copy, as rsync says it (rsync.1): the entries
 * listed by -v (%n%L), -i (%i %n%L) or --out-format, once each and on
 * stdout; --log-file lines; errors once each on stderr, those under a
 * failed directory folded into one line; notes; and at the end rdcp's
 * summary line, or rsync's --stats. With --json stdout holds the JSON
 * object only: the lists go to stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/report/rd_report_fmt.h"
#include "lib/tree/rd_tree.h"

#define LINE_MAX_OUT (RD_REPORT_PATH_MAX * 8 + RD_REPORT_MSG_MAX * 4 + 64)

/* --log-file: "2024/01/02 03:04:05 [pid] text", rsync's prefix; text is escaped already. */
static void log_line(struct rdcp_out *ro, const char *text)
{
	char t[32];
	time_t now = time(NULL);
	struct tm tm;

	if (!ro->log)
		return;
	if (localtime_r(&now, &tm))
		strftime(t, sizeof(t), "%Y/%m/%d %H:%M:%S", &tm);
	else
		snprintf(t, sizeof(t), "(time out of range)");
	fprintf(ro->log, "%s [%ld] %s\n", t, ro->pid, text);
	fflush(ro->log);
}

/*
 * Does the user's locale print UTF-8? rsync escapes every byte past ASCII
 * outside one (isprint() of the locale), unless -8.
 */
static int locale_utf8(void)
{
	const char *cs;

	if (!setlocale(LC_CTYPE, ""))
		return 0;
	cs = nl_langinfo(CODESET);
	return cs && (!strcasecmp(cs, "UTF-8") || !strcasecmp(cs, "utf8"));
}

int rdcp_out_open(struct rdcp_out *ro, const struct rdcp_opts *o, int push)
{
	memset(ro, 0, sizeof(*ro));
	ro->o = o;
	ro->push = push;
	ro->ascii = !o->eight_bit && !locale_utf8();
	ro->pid = (long)getpid();
	ro->list = o->json ? stderr : stdout;
	rd_report_init(&ro->rep, RD_REPORT_MAX_ERRORS_DEFAULT);
	/* rsync: -i is %i %n%L, -v %n%L; --out-format replaces both */
	ro->fmt = o->out_format	 ? o->out_format
		  : o->itemize	 ? "%i %n%L"
		  : o->info.name ? "%n%L"
				 : NULL;
	if (ro->fmt && !ro->fmt[0])
		ro->fmt = NULL;
	ro->fmt_i = ro->fmt && rd_report_fmt_has(ro->fmt, 'i');
	if (o->log_file) {
		ro->log = fopen(o->log_file, "ae");
		if (!ro->log) {
			fprintf(stderr, "rdcp: --log-file %s: %s\n", o->log_file, strerror(errno));
			return -1;
		}
		ro->log_fmt = o->log_file_format ? o->log_file_format : "%i %n%L";
		if (!ro->log_fmt[0])
			ro->log_fmt = NULL;
	}
	return 0;
}

void rdcp_out_close(struct rdcp_out *ro)
{
	if (ro->log)
		fclose(ro->log);
	ro->log = NULL;
	rd_report_free(&ro->rep);
}

/* "... and N more under PATH/" for a fold that ended with entries in it. */
static void fold_said(struct rdcp_out *ro)
{
	const struct rd_report_fold_run *f = &ro->fold.ended;
	char line[RD_PATH_MAX * 4 + 64];
	size_t n;

	if (!f->n)
		return;
	n = (size_t)snprintf(line, sizeof(line), "... and %" PRIu64 " more under ", f->n);
	rd_escape(line + n, sizeof(line) - n, f->path, f->len);
	snprintf(line + strlen(line), sizeof(line) - strlen(line), "/ (the same cause)");
	if (!ro->o->json)
		fprintf(stderr, "rdcp: %s\n", line);
	log_line(ro, line);
}

/* A failed entry: counted once, said once (folded under its cause). */
static void on_failure(struct rdcp_out *ro, const char *path, size_t len, int status,
		       const char *msg)
{
	static char line[RD_REPORT_PATH_MAX * 4 + RD_REPORT_MSG_MAX * 4 + 8];
	int folded = rd_report_fold_add(&ro->fold, path, len);

	rd_progress_suspend(ro->meter);
	fold_said(ro);
	/* a directory's second pass after its first failed: the same entry, the same cause */
	if (folded != 2)
		rd_report_error(&ro->rep, path, len, status, msg);
	if (!folded) {
		/* vanished: rsync's warning, in its words (the message says it) */
		rd_report_line(line, sizeof(line), status == -RD_EVANISHED ? NULL : path,
			       status == -RD_EVANISHED ? 0 : len, status, msg);
		if (!ro->o->json)
			fprintf(stderr, "rdcp: %s\n", line);
		log_line(ro, line);
	}
	rd_progress_resume(ro->meter);
}

/* A note about an entry that goes on (a partial started over), or one left out. */
static void on_note(struct rdcp_out *ro, const char *path, size_t len, const char *msg)
{
	static char line[RD_REPORT_PATH_MAX * 4 + RD_REPORT_MSG_MAX * 4 + 8];
	const char *bare = strncmp(msg, "sender: ", 8) ? msg : msg + 8;
	int nonreg = !strcmp(bare, RD_TREE_NONREG);

	rd_report_note(&ro->rep, path, len, msg); /* --json: "notes" */
	if (nonreg) {
		/* rsync's line for a fifo, socket or device left out (--info=nonreg0: none) */
		char name[RD_PATH_MAX * 4 + 1];

		rd_escape(name, sizeof(name), path, len);
		snprintf(line, sizeof(line), "skipping non-regular file \"%s\"", name);
	} else {
		rd_report_line(line, sizeof(line), path, len, 0, msg);
	}
	if (ro->o->quiet || ro->o->json || (nonreg && !ro->o->info.nonreg))
		return;
	rd_progress_suspend(ro->meter);
	fprintf(stderr, "rdcp: %s%s\n", nonreg ? "" : "note: ", line);
	rd_progress_resume(ro->meter);
}

void rdcp_out_report(void *ctx, const char *path, size_t len, int status, const char *msg)
{
	struct rdcp_out *ro = ctx;

	/* Messages that already start with the path need it only once. */
	msg = rd_report_strip_path(msg, path, len);
	if (status)
		on_failure(ro, path, len, status, msg);
	else if (msg && msg[0])
		on_note(ro, path, len, msg);
}

/*
 * Which entries rsync names. With %i in the format (-i): every entry that
 * changed in any way, and with -ii or -vv the unchanged ones too. Without
 * (-v, %n%L): the entries "updated in a significant way": a file whose data
 * was sent, anything made (a directory, a symlink, a device, a hard link),
 * a directory whose attributes changed; not a file whose permissions alone
 * changed.
 */
static int named(const struct rdcp_out *ro, const struct rd_item *it, int fmt_i)
{
	unsigned changed = it->items & (RD_IT_KNOWN | RD_ITEM_UNKNOWN);

	if (fmt_i)
		return changed || ro->o->itemize >= 2 || ro->o->info.name >= 2;
	return (it->items &
		(RD_IT_NEW | RD_IT_XFER | RD_IT_LOCAL | RD_IT_HLINK | RD_ITEM_UNKNOWN)) ||
	       (it->type == RD_FT_DIR && changed);
}

/*
 * The name rsync shows: relative to the transfer's root. An entry of a
 * "dir/" source (RD_FF_CONTENTS) travels as "dir/NAME" and is shown as
 * NAME, the source directory itself as "." (rsync's "./"); with -R the
 * whole path is the name.
 */
static void shown_name(const struct rdcp_out *ro, struct rd_item *it)
{
	size_t skip;

	if (!(it->flags & RD_FF_CONTENTS) || ro->o->relative)
		return;
	skip = rd_path_first_skip(it->path, it->len);
	it->path = skip < it->len ? it->path + skip : ".";
	it->len = skip < it->len ? it->len - skip : 1;
	/* a hard link's target is a wire path of the same source: shown alike */
	if (it->type != RD_FT_HLINK || !it->target || !it->tlen)
		return;
	skip = rd_path_first_skip(it->target, it->tlen);
	if (skip < it->tlen) {
		it->target += skip;
		it->tlen -= skip;
	}
}

void rdcp_out_item(void *ctx, const struct rd_item *item)
{
	struct rdcp_out *ro = ctx;
	struct rd_report_fmt_ctx cx = {
	    .push = ro->push, .pid = ro->pid, .now = time(NULL), .ascii = ro->ascii};
	static char line[LINE_MAX_OUT];
	struct rd_item shown = *item;
	const struct rd_item *it = &shown;

	if (item->status)
		return; /* said by rdcp_out_report */
	rd_report_item(&ro->rep, item);
	shown_name(ro, &shown);
	/* several "dir/" sources land in one directory: rsync lists its "./" once */
	if ((it->flags & (RD_FF_CONTENTS | RD_FF_ROOT)) == (RD_FF_CONTENTS | RD_FF_ROOT) &&
	    it->type == RD_FT_DIR && !ro->o->relative) {
		if (ro->root_shown)
			return;
		ro->root_shown = 1;
	}
	if (it->items & RD_IT_SKIPPED)
		return; /* a transfer rule left it (--existing, -u...): rsync names none */
	if (ro->fmt && named(ro, it, ro->fmt_i)) {
		rd_report_fmt(line, sizeof(line), ro->fmt, it, &cx);
		rd_progress_suspend(ro->meter);
		fprintf(ro->list, "%s\n", line);
		rd_progress_resume(ro->meter);
	} else if (ro->fmt && !ro->fmt_i && ro->o->info.name >= 2 && it->type != RD_FT_DIR &&
		   !(it->items & (RD_IT_KNOWN | RD_ITEM_UNKNOWN))) {
		/* -vv: rsync's "NAME is uptodate" for what needed nothing */
		rd_report_name_as(line, sizeof(line), it->path, it->len, !ro->ascii);
		rd_progress_suspend(ro->meter);
		fprintf(ro->list, "%s is uptodate\n", line);
		rd_progress_resume(ro->meter);
	}
	if (ro->log_fmt && (it->items & (RD_IT_KNOWN | RD_ITEM_UNKNOWN))) {
		rd_report_fmt(line, sizeof(line), ro->log_fmt, it, &cx);
		log_line(ro, line);
	}
}

/*
 * --delete's reports, from the receiver (here, or in DELETED): rsync's
 * "*deleting   NAME" with -i (%i in the format), "deleting NAME" with -v;
 * a directory's name ends in '/'. A failure is an entry's failure; the
 * limit and deletion turned off are said on stderr, once.
 */
void rdcp_out_deleted(void *ctx, unsigned flags, const char *path, size_t len, const char *text)
{
	struct rdcp_out *ro = ctx;
	static char line[LINE_MAX_OUT];
	int dir = !!(flags & RD_DLF_DIR);

	if (flags & RD_DLF_OFF) {
		if (!ro->del_off && !ro->o->quiet)
			fprintf(stderr, "rdcp: %s\n", text ? text : "deletion was turned off");
		if (!ro->del_off && text)
			rd_report_note(&ro->rep, NULL, 0, text);
		ro->del_off = 1;
		return;
	}
	if (flags & RD_DLF_SKIPPED) {
		/* rsync's words */
		snprintf(line, sizeof(line), "Deletions stopped due to --max-delete limit (%s)",
			 text ? text : "some skipped");
		rd_report_note(&ro->rep, NULL, 0, line);
		if (!ro->o->quiet)
			fprintf(stderr, "%s\n", line);
		return;
	}
	if (flags & RD_DLF_FAILED) {
		rdcp_out_report(ro, path, len, -RD_ESYS, text ? text : "cannot delete");
		return;
	}
	ro->deleted[dir]++;
	rd_report_name_as(line, sizeof(line) - 1, path, len, !ro->ascii);
	if (dir)
		strcat(line, "/");
	if (ro->fmt && ro->fmt_i) {
		rd_progress_suspend(ro->meter);
		fprintf(ro->list, "*deleting   %s\n", line);
		rd_progress_resume(ro->meter);
	} else if (ro->fmt && ro->o->info.name >= 1) {
		rd_progress_suspend(ro->meter);
		fprintf(ro->list, "deleting %s\n", line);
		rd_progress_resume(ro->meter);
	}
	if (ro->log) {
		char l2[LINE_MAX_OUT + 16];

		snprintf(l2, sizeof(l2), "*deleting   %s", line);
		log_line(ro, l2);
	}
}

void rdcp_out_note(struct rdcp_out *ro, const char *fmt, ...)
{
	char msg[RD_REPORT_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rd_report_note(&ro->rep, NULL, 0, msg);
	if (!ro->o->quiet)
		fprintf(stderr, "rdcp: note: %s\n", msg);
}

void rdcp_out_fatal(struct rdcp_out *ro, int status, const char *msg)
{
	char line[RD_ERR_MSG_MAX * 4];

	rd_report_error(&ro->rep, NULL, 0, status, msg);
	rd_report_fold_end(&ro->fold);
	fold_said(ro);
	rd_escape(line, sizeof(line), msg, strlen(msg));
	log_line(ro, line);
}

void rdcp_out_failures(struct rdcp_out *ro)
{
	const struct rd_report_counts *c = &ro->rep.counts;
	char line[128];
	uint64_t ok = 0;
	unsigned k;

	rd_report_fold_end(&ro->fold);
	fold_said(ro);
	for (k = 0; k < RD_KINDS; k++)
		ok += c->n[k];
	snprintf(line, sizeof(line), "%" PRIu64 " of %" PRIu64 " entries failed", c->failed,
		 c->failed + ok);
	if (!ro->o->json)
		fprintf(stderr, "rdcp: %s\n", line);
	log_line(ro, line);
}

uint64_t rdcp_out_entries(const struct rdcp_out *ro)
{
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k < RD_KINDS; k++)
		n += ro->rep.counts.n[k];
	return n;
}

/* "Number of files: 5 (reg: 2, dir: 2, link: 1)", rsync's itemized counts. */
static void counts_line(FILE *out, const char *what, const uint64_t *n, int human)
{
	static const char *const label[RD_KINDS] = {"reg", "dir", "link", "dev", "special"};
	char num[48];
	uint64_t total = 0;
	const char *pre = " (";
	unsigned k;

	for (k = 0; k < RD_KINDS; k++)
		total += n[k];
	rd_report_num(num, sizeof(num), (int64_t)total, human != 0);
	fprintf(out, "%s: %s", what, num);
	for (k = 0; total && k < RD_KINDS; k++) {
		if (!n[k])
			continue;
		rd_report_num(num, sizeof(num), (int64_t)n[k], human != 0);
		fprintf(out, "%s%s: %s", pre, label[k], num);
		pre = ", ";
	}
	fputs(total ? ")\n" : "\n", out);
}

void rdcp_out_stats(struct rdcp_out *ro, const struct rd_engine_stats *st, long whole_secs)
{
	const struct rd_report_counts *c = &ro->rep.counts;
	uint64_t del[RD_KINDS] = {0};
	int h = ro->o->human;
	FILE *out = ro->list;
	char a[48], b[48], r[64];
	uint64_t io = c->sent + c->received;

	if (ro->o->info.stats >= 2) {
		fputc('\n', out);
		counts_line(out, "Number of files", c->n, h);
		counts_line(out, "Number of created files", c->created, h);
		/* the receiver says only which were directories */
		del[RD_KIND_REG] = ro->deleted[0];
		del[RD_KIND_DIR] = ro->deleted[1];
		counts_line(out, "Number of deleted files", del, h);
		rd_report_num(a, sizeof(a), (int64_t)c->xferred, h != 0);
		fprintf(out, "Number of regular files transferred: %s\n", a);
		rd_report_num(a, sizeof(a), (int64_t)c->total_size, h);
		fprintf(out, "Total file size: %s bytes\n", a);
		rd_report_num(a, sizeof(a), (int64_t)c->xferred_size, h);
		fprintf(out, "Total transferred file size: %s bytes\n", a);
		rd_report_num(a, sizeof(a), (int64_t)rd_stat_get(&st->bytes_data), h);
		fprintf(out, "Literal data: %s bytes\n", a);
		rd_report_num(a, sizeof(a), (int64_t)rd_stat_get(&st->bytes_resumed), h);
		fprintf(out, "Matched data: %s bytes\n", a);
		/* rdcp streams its list as it walks (rsync's incremental recursion) */
		fprintf(out, "File list size: 0\n");
		rd_report_num(a, sizeof(a), (int64_t)c->sent, h);
		fprintf(out, "Total bytes sent: %s\n", a);
		rd_report_num(a, sizeof(a), (int64_t)c->received, h);
		fprintf(out, "Total bytes received: %s\n", a);
	}
	/* rsync's closing lines: the rate over whole seconds plus one half, as rsync */
	rd_report_num(a, sizeof(a), (int64_t)c->sent, h);
	rd_report_num(b, sizeof(b), (int64_t)c->received, h);
	rd_report_dnum(r, sizeof(r), (double)io / (0.5 + (double)whole_secs), h, 2);
	fprintf(out, "\nsent %s bytes  received %s bytes  %s bytes/sec\n", a, b, r);
	rd_report_num(a, sizeof(a), (int64_t)c->total_size, h);
	rd_report_dnum(r, sizeof(r), io ? (double)c->total_size / (double)io : 0, h != 0, 2);
	fprintf(out, "total size is %s  speedup is %s\n", a, r);
}

void rdcp_out_log_end(struct rdcp_out *ro, int code)
{
	const struct rd_report_counts *c = &ro->rep.counts;
	char line[160];

	snprintf(line, sizeof(line),
		 "sent %" PRIu64 " bytes  received %" PRIu64 " bytes  total size %" PRIu64, c->sent,
		 c->received, c->total_size);
	log_line(ro, line);
	if (code) {
		snprintf(line, sizeof(line), "rdcp error: exit %d", code);
		log_line(ro, line);
	}
}
