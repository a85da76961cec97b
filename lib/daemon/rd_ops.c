// SPDX-License-Identifier: MIT
/*
 * One session as the operator sees it (rd_ops.h): its lines with their
 * fields, its transfer log, its counters and its record.
 */
#include "lib/daemon/rd_ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/xferlog/rd_xferlog.h"

void rd_ops_emit(const struct rd_daemon_cfg *cfg, int level, const struct rd_daemon_event *ev,
		 const char *fmt, ...)
{
	char line[RD_XFERLOG_LINE_MAX];
	va_list ap;

	if (!cfg->event && !cfg->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (cfg->event && ev)
		cfg->event(cfg->log_ctx, level, line, ev);
	else if (cfg->log)
		cfg->log(cfg->log_ctx, level, line);
}

/*
 * "addr:port" / "[v6]:port" -> "addr" / "v6"; an IPv4 client that came in
 * on an IPv6 listener as ::ffff:a.b.c.d is a.b.c.d (as rsyncd's %a says).
 */
static void addr_of(const char *peer, char *out, size_t len)
{
	const char *end;
	size_t n;

	if (peer[0] == '[') {
		peer++;
		end = strchr(peer, ']');
		if (end && !strncasecmp(peer, "::ffff:", 7) &&
		    memchr(peer + 7, '.', (size_t)(end - peer) - 7))
			peer += 7;
	} else {
		end = strrchr(peer, ':');
	}
	n = end ? (size_t)(end - peer) : strlen(peer);
	if (n >= len)
		n = len - 1;
	memcpy(out, peer, n);
	out[n] = '\0';
}

void rd_ops_begin(struct rd_ops_sess *o, const struct rd_daemon_cfg *cfg, const char *peer,
		  const char *transport)
{
	memset(o, 0, sizeof(*o));
	o->cfg = cfg;
	snprintf(o->peer, sizeof(o->peer), "%s", peer);
	addr_of(peer, o->addr, sizeof(o->addr));
	snprintf(o->transport, sizeof(o->transport), "%s", transport);
	o->act = rd_act_open(cfg->act, peer, transport);
}

void rd_ops_user(struct rd_ops_sess *o, const char *user)
{
	o->user = user;
	rd_act_user(o->act, user);
}

static void event_init(const struct rd_ops_sess *o, struct rd_daemon_event *ev, int kind)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->peer = o->peer;
	ev->user = o->user && o->user[0] ? o->user : NULL;
	ev->transport = o->transport;
	ev->session = rd_act_id(o->act);
	if (o->mod) {
		ev->module = o->mod->name;
		ev->conf_module = o->mod;
	}
}

void rd_ops_tls_failed(struct rd_ops_sess *o, int status, const char *msg)
{
	struct rd_daemon_event ev;

	event_init(o, &ev, status == -RD_EAUTH ? RD_EV_AUTH_FAILURE : RD_EV_REFUSED);
	if (status == -RD_EAUTH) {
		o->authfail = 1;
		rd_act_auth_failure(o->cfg->act);
	}
	rd_ops_emit(o->cfg, RD_LOG_WARN, &ev, "%s: refused: %s", o->peer, msg);
}

void rd_ops_on_job(void *ctx, const struct rd_server_job *job)
{
	struct rd_ops_sess *o = ctx;
	struct rd_daemon_event ev;

	if (job->ended) {
		o->ended = 1;
		o->status = job->status;
		o->job = NULL;
		o->job_bytes = rd_stat_get(&job->e->st.bytes_data);
		o->job_seconds = job->seconds;
		rd_act_job_end(o->act, job->seconds);
		return;
	}
	o->started = 1;
	o->job = job;
	o->mod = job->module ? rd_conf_module_find(o->cfg->conf, job->module->name) : NULL;
	rd_act_job_start(o->act, job->module ? job->module->name : "", job->push, job->e);
	event_init(o, &ev, RD_EV_SESSION_START);
	rd_ops_emit(o->cfg, RD_LOG_INFO, &ev, "%s: session %llu: user %s: %s module %s over %s",
		    o->peer, (unsigned long long)ev.session,
		    o->user && o->user[0] ? o->user : "(anonymous)",
		    job->push ? "push into" : "pull from", job->module ? job->module->name : "-",
		    o->transport);
}

/* "a//./b/" -> "a/b" (no ".." reaches here: the server refused it). */
static size_t squeeze(const char *p, size_t n, char *out, size_t cap)
{
	size_t i = 0, o = 0, e;

	while (i < n) {
		while (i < n && p[i] == '/')
			i++;
		for (e = i; e < n && p[e] != '/'; e++)
			;
		if (e > i && !(e - i == 1 && p[i] == '.')) {
			if (o && o + 1 < cap)
				out[o++] = '/';
			if (o + (e - i) < cap) {
				memcpy(out + o, p + i, e - i);
				o += e - i;
			}
		}
		i = e;
	}
	out[o < cap ? o : cap - 1] = '\0';
	return o < cap ? o : cap - 1;
}

/*
 * %f: the entry's path within the module. A push's wire paths lie under
 * the destination the client named (or, when that is not a directory,
 * the top entry takes its name); a pull's start with the last name of the
 * source they came from (the module's name for the module itself), which
 * lies in the source's directory.
 */
static size_t module_rel(const struct rd_ops_sess *o, const struct rd_engine_entry *en, char *out,
			 size_t cap)
{
	const struct rd_msg_open *op = o->job->open;
	char rel[RD_PATH_MAX + 1];
	const char *first_end, *last;
	size_t rlen, flen, n = 0, i, off, skip;

	first_end = memchr(en->path, '/', en->plen);
	flen = first_end ? (size_t)(first_end - en->path) : en->plen;
	for (i = 0; i < op->npaths; i++) {
		off = rd_path_first_skip(op->paths[i].ptr, op->paths[i].len);
		rlen = squeeze(op->paths[i].ptr + off, op->paths[i].len - off, rel, sizeof(rel));
		if (o->job->push && o->job->renames_to) {
			/* "cp a b": the top entry lands as the destination's own name */
			last = strrchr(rel, '/');
			n = (size_t)snprintf(out, cap, "%.*s%s%s%.*s", last ? (int)(last - rel) : 0,
					     rel, last ? "/" : "", o->job->renames_to,
					     (int)(en->plen - flen), en->path + flen);
			return n < cap ? n : cap - 1;
		}
		if (o->job->push) {
			/* a "dir/" source's entries travel as "dir/NAME": NAME lands */
			skip = (en->flags & RD_FF_CONTENTS) && !(op->sel.rules & RD_SEL_RELATIVE)
				   ? rd_path_first_skip(en->path, en->plen)
				   : 0;
			n = (size_t)snprintf(out, cap, "%s%s%.*s", rel,
					     rlen && en->plen > skip ? "/" : "",
					     (int)(en->plen - skip), en->path + skip);
			return n < cap ? n : cap - 1;
		}
		if (!rlen) { /* the module itself, sent under its name */
			if (!o->mod || strlen(o->mod->name) != flen ||
			    memcmp(o->mod->name, en->path, flen))
				continue;
			skip = rd_path_first_skip(en->path, en->plen);
			n = (size_t)snprintf(out, cap, "%.*s", (int)(en->plen - skip),
					     en->path + skip);
			return n < cap ? n : cap - 1;
		}
		last = strrchr(rel, '/');
		if (strlen(last ? last + 1 : rel) != flen ||
		    memcmp(last ? last + 1 : rel, en->path, flen))
			continue;
		n = (size_t)snprintf(out, cap, "%.*s%s%.*s", last ? (int)(last - rel) : 0, rel,
				     last ? "/" : "", (int)en->plen, en->path);
		return n < cap ? n : cap - 1;
	}
	n = (size_t)snprintf(out, cap, "%.*s", (int)en->plen, en->path);
	return n < cap ? n : cap - 1;
}

static char ftype_of(const struct rd_engine_entry *en)
{
	switch (en->type) {
	case RD_FT_DIR:
		return 'd';
	case RD_FT_SYMLINK:
		return 'L';
	case RD_FT_SPECIAL:
		return S_ISCHR(en->mode) || S_ISBLK(en->mode) ? 'D' : 'S';
	default:
		return 'f';
	}
}

/* op: "recv", "send", or "del." for a deletion (rd_ops_on_deleted) */
static void xfer_line(struct rd_ops_sess *o, const struct rd_engine_entry *en, int is_file,
		      const char *op)
{
	const struct rd_conf_module *m = o->mod;
	char path[2 * RD_PATH_MAX + 2], esc[4 * sizeof(path)], line[RD_XFERLOG_LINE_MAX];
	struct rd_daemon_event ev;
	struct rd_xfer_item it;

	memset(&it, 0, sizeof(it));
	it.op = op;
	it.addr = o->addr;
	it.module = m->name;
	it.module_path = m->path;
	it.user = o->user ? o->user : "";
	it.plen = module_rel(o, en, path, sizeof(path));
	it.path = path;
	it.name = en->path;
	it.nlen = en->plen;
	it.ftype = ftype_of(en);
	it.update = en->type == RD_FT_HLINK ? 'h' : !is_file ? 'c' : o->job->push ? '>' : '<';
	it.mode = en->mode;
	it.uid = en->uid;
	it.gid = en->gid;
	it.size = en->size;
	it.bytes = en->bytes;
	it.kept = en->type == RD_FT_REG && en->size > en->bytes ? en->size - en->bytes : 0;
	it.mtime = en->mtime_sec;
	it.pid = (long)getpid();
	it.now = time(NULL);
	it.checksum = o->job->e->digest_name;
	it.transport = o->transport;
	it.session = rd_act_id(o->act);
	rd_xferlog_format(line, sizeof(line), m->log_format, &it);
	rd_escape(esc, sizeof(esc), path, it.plen);
	event_init(o, &ev, RD_EV_XFER);
	ev.op = it.op;
	ev.file = esc;
	ev.bytes = en->bytes;
	rd_ops_emit(o->cfg, RD_LOG_INFO, &ev, "%s", line);
}

void rd_ops_on_entry(void *ctx, const struct rd_engine_entry *en)
{
	struct rd_ops_sess *o = ctx;
	int is_file = en->type == RD_FT_REG;

	/* a directory's second entry (its metadata after its contents) is not another one */
	if (en->status || (is_file && en->same) || !o->job || (en->flags & RD_FF_POST))
		return;
	if (is_file) {
		o->files++;
		rd_act_file(o->act);
	}
	if (!o->mod || !o->mod->transfer_logging)
		return;
	if (is_file || rd_xferlog_uses(o->mod->log_format, 'i'))
		xfer_line(o, en, is_file, o->job->push ? "recv" : "send");
}

void rd_ops_on_deleted(void *ctx, unsigned flags, const char *path, size_t len, const char *text)
{
	struct rd_ops_sess *o = ctx;
	struct rd_engine_entry en;

	(void)text;
	if ((flags & (RD_DLF_OFF | RD_DLF_SKIPPED | RD_DLF_FAILED)) || !o->job || !o->job->push ||
	    (o->job->open->sel.rules & RD_SEL_DRY_RUN) || !o->mod || !o->mod->transfer_logging)
		return;
	/* a path below the destination: as a wire path under a contents source */
	memset(&en, 0, sizeof(en));
	en.path = path;
	en.plen = len;
	en.type = flags & RD_DLF_DIR ? RD_FT_DIR : RD_FT_REG;
	xfer_line(o, &en, 0, "del.");
}

void rd_ops_end(struct rd_ops_sess *o, int ret, const char *why, const char *summary)
{
	struct rd_daemon_event ev;
	enum rd_act_result r;

	if (o->closed || !o->cfg)
		return;
	o->closed = 1;
	if (!o->started) {
		/* turned away before a transfer: a refusal (or it went away) */
		if (ret && ret != -RD_EPARTIAL && why && why[0]) {
			event_init(o, &ev, RD_EV_REFUSED);
			rd_ops_emit(o->cfg, RD_LOG_WARN, &ev, "%s: %s", o->peer, why);
		}
		r = RD_ACT_REFUSED;
	} else {
		if (ret && ret != -RD_EPARTIAL && why && why[0])
			rd_ops_emit(o->cfg, RD_LOG_WARN, NULL, "%s: %s", o->peer, why);
		r = !ret ? RD_ACT_OK : ret == -RD_EPARTIAL ? RD_ACT_PARTIAL : RD_ACT_FAILED;
	}
	if (summary) {
		event_init(o, &ev, RD_EV_SESSION_END);
		ev.result = o->started ? (r == RD_ACT_OK	? "ok"
					  : r == RD_ACT_PARTIAL ? "partial"
								: "failed")
				       : "refused";
		ev.files = o->files;
		ev.bytes = o->job_bytes;
		ev.seconds = o->job_seconds;
		rd_ops_emit(o->cfg, RD_LOG_INFO, &ev, "%s: user %s: %s", o->peer,
			    o->user && o->user[0] ? o->user : "(anonymous)", summary);
	}
	rd_act_close(o->act, r);
	o->act = NULL;
}

void rd_ops_refused(const struct rd_daemon_cfg *cfg, const char *peer, const char *fmt, ...)
{
	struct rd_daemon_event ev;
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	memset(&ev, 0, sizeof(ev));
	ev.kind = RD_EV_REFUSED;
	ev.peer = peer;
	rd_act_refused(cfg->act);
	rd_ops_emit(cfg, RD_LOG_WARN, &ev, "%s: refused: %s", peer, why);
}
