// SPDX-License-Identifier: MIT
#include "lib/session/rd_session.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "lib/filter/rd_filter.h"
#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session_priv.h"
#include "lib/sink/rd_sink.h"
#include "lib/tree/rd_tree.h"

/*
 * The server decides the chunk size (at most ours: its memory budget) and,
 * when we left it open, the checksum; it may not change a checksum we named.
 */
static int adopt(struct rd_client *cl, const char *asked, const struct rd_msg_open_ok *ok)
{
	char name[RD_DIGEST_NAME_MAX + 1];

	if (ok->chunk_size > cl->e.o.chunk_size)
		return rd_err_set(&cl->err, RD_EPROTO, 0,
				  "%s answered with a larger chunk size (%u) than asked (%u)",
				  cl->info.peer, ok->chunk_size, cl->e.o.chunk_size);
	snprintf(name, sizeof(name), "%.*s", (int)ok->digest.len, ok->digest.ptr);
	if (asked && strcmp(asked, name))
		return rd_err_set(&cl->err, RD_EPROTO, 0,
				  "%s changed the checksum from %s to %s", cl->info.peer, asked,
				  name);
	cl->e.o.chunk_size = ok->chunk_size;
	return rd_engine_set_digest(&cl->e, name);
}

/* Wait for the server's answer to OPEN. */
static int await_open_ok(struct rd_client *cl, struct rd_conn *c, const char *asked,
			 uint32_t asked_flags,
			 struct rd_msg_open_ok *ok)
{
	const uint8_t *buf;
	size_t len;
	struct rd_msg m;
	const char *why;
	int r;

	for (;;) {
		if (rd_conn_recv(c, &buf, &len) == 1) {
			r = rd_msg_decode(buf, len, &m, &why);
			if (r) {
				rd_conn_recv_done(c);
				return rd_err_set(&cl->err, RD_EPROTO, 0, "%s sent a bad reply: %s",
						  cl->info.peer, why);
			}
			if (m.hdr.type == RD_MSG_ERROR) {
				r = rd_engine_fail_remote(&cl->err, &m.u.error, cl->info.peer);
				rd_conn_recv_done(c);
				return r;
			}
			if (m.hdr.type != RD_MSG_OPEN_OK) {
				rd_conn_recv_done(c);
				return rd_err_set(&cl->err, RD_EPROTO, 0,
						  "%s answered OPEN with %s", cl->info.peer,
						  rd_msg_type_name(m.hdr.type));
			}
			*ok = m.u.open_ok;
			r = adopt(cl, asked, ok);
			if (!r && (ok->flags & ~asked_flags))
				r = rd_err_set(&cl->err, RD_EPROTO, 0,
					       "%s claims to honour options never asked for (0x%x)",
					       cl->info.peer, (unsigned)(ok->flags & ~asked_flags));
			/* the window is the server's to choose, but never above our offer */
			if (!r && (ok->flags & RD_OF_WINDOW) && ok->window > cl->e.o.window)
				r = rd_err_set(&cl->err, RD_EPROTO, 0,
					       "%s chose a window of %u entries; we offered %u",
					       cl->info.peer, ok->window, cl->e.o.window);
			cl->honoured = ok->flags;
			rd_conn_recv_done(c);
			return r;
		}
		if (cl->e.o.stop && *cl->e.o.stop)
			return rd_err_set(&cl->err, RD_ESTOPPED, 0, "stopped");
		r = rd_conn_poll(c, 1000);
		if (r < 0)
			return rd_err_copy(&cl->err, rd_conn_err(c));
	}
}

/* OPEN's DESTS block (version 13) from a push's options */
static void open_dests(struct rd_dests *w, const struct rd_sink_dests *d)
{
	unsigned i;

	memset(w, 0, sizeof(*w));
	w->flags =
	    (uint8_t)((d->backup ? RD_DF_BACKUP : 0) | (d->backup && d->suffix ? RD_DF_SUFFIX : 0));
	if (d->backup && d->backup_dir) {
		w->backup_dir.ptr = d->backup_dir;
		w->backup_dir.len = (uint16_t)strlen(d->backup_dir);
	}
	if (d->backup && d->suffix) {
		w->suffix.ptr = d->suffix;
		w->suffix.len = (uint16_t)strlen(d->suffix);
	}
	w->kind = d->n ? (uint8_t)d->kind : RD_DK_NONE; /* RD_SINK_ALT_* are RD_DK_* */
	w->ndests = (uint8_t)(d->n <= RD_DESTS_MAX ? d->n : 0);
	for (i = 0; i < w->ndests; i++) {
		w->dirs[i].ptr = d->dirs[i];
		w->dirs[i].len = (uint16_t)strlen(d->dirs[i]);
	}
}

/* Strings of one kind, in as many RULES as they need (rd_proto.h, RULES). */
static int send_strings_fn(struct rd_client *cl, struct rd_conn *c, uint8_t kind, unsigned n,
			   const char *(*at)(const void *ctx, unsigned i, size_t *len),
			   const void *ctx)
{
	static __thread uint8_t raw[RD_MSG_MAX - RD_HDR_LEN - 3];
	unsigned i = 0, k;
	struct rd_msg m;
	size_t len, tl = 0;
	const char *t = "";
	int ret = 0;

	while (i < n && !ret) {
		for (len = 0, k = 0; i < n && k < 0xffff; i++, k++) {
			t = at(ctx, i, &tl);
			if (rd_rules_put(raw, sizeof(raw), &len, kind, t, tl))
				break;
		}
		if (!k)
			return rd_err_set(&cl->err, RD_EUSAGE, 0, "%s %u ('%.*s') is not one",
					  kind == RD_RULES_NAMES ? "--files-from name"
								 : "filter rule",
					  i + 1, (int)(tl > 80 ? 80 : tl), t);
		memset(&m, 0, sizeof(m));
		m.hdr.type = RD_MSG_RULES;
		m.u.rules.kind = kind;
		m.u.rules.n = (uint16_t)k;
		m.u.rules.raw = raw;
		m.u.rules.rawlen = len;
		ret = rd_engine_send_msg_wait(c, &m, &cl->err, -1);
	}
	return ret;
}

static const char *rule_at(const void *ctx, unsigned i, size_t *len)
{
	return rd_filter_text(ctx, i, len);
}

static const char *name_at(const void *ctx, unsigned i, size_t *len)
{
	const char *const *v = ctx;

	*len = strlen(v[i]);
	return v[i];
}

static int send_rules(struct rd_client *cl, struct rd_conn *c, const struct rd_filter *f)
{
	return send_strings_fn(cl, c, RD_RULES_FILTER, rd_filter_count(f), rule_at, f);
}

static int send_strings(struct rd_client *cl, struct rd_conn *c, uint8_t kind, const char *const *v,
			unsigned n)
{
	return send_strings_fn(cl, c, kind, n, name_at, v);
}

static int send_open(struct rd_client *cl, struct rd_conn *c, const struct rd_client_opts *o,
		     uint32_t flags)
{
	struct rd_msg m;
	int i, ret;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_OPEN;
	m.u.open.mode = o->push ? RD_MODE_PUSH : RD_MODE_PULL;
	m.u.open.flags = flags;
	m.u.open.chunk_size = cl->e.o.chunk_size;
	m.u.open.digest.ptr = o->eo.digest ? o->eo.digest : "";
	m.u.open.digest.len = (uint16_t)strlen(m.u.open.digest.ptr);
	if (o->nremote < 1 || o->nremote > RD_OPEN_PATHS_MAX)
		return rd_err_set(&cl->err, RD_EUSAGE, 0, "between 1 and %d remote paths",
				  RD_OPEN_PATHS_MAX);
	m.u.open.npaths = (uint16_t)o->nremote;
	for (i = 0; i < o->nremote; i++) {
		size_t n = strlen(o->remote[i]);
		const char *why;

		if (n > RD_PATH_MAX || rd_path_check(o->remote[i], n, &why))
			return rd_err_set(&cl->err, RD_EUSAGE, 0,
					  "remote path '%s' is not a module path (%s)",
					  o->remote[i], n > RD_PATH_MAX ? "too long" : why);
		m.u.open.paths[i].ptr = o->remote[i];
		m.u.open.paths[i].len = (uint16_t)n;
	}
	if (flags & RD_OF_PARTIAL_DIR) {
		m.u.open.partial_dir.ptr = o->partial_dir;
		m.u.open.partial_dir.len = (uint16_t)strlen(o->partial_dir);
	}
	if (flags & RD_OF_WINDOW)
		m.u.open.window = (uint16_t)cl->e.o.window;
	if (flags & RD_OF_DESTS)
		open_dests(&m.u.open.dests, &o->dests);
	if (flags & RD_OF_MIRROR)
		m.u.open.mir = o->mir;
	if (flags & RD_OF_SELECT) {
		m.u.open.sel = o->sel;
		m.u.open.sel.nrules = (uint16_t)rd_filter_count(o->filter);
		m.u.open.sel.nnames = o->push ? 0 : o->nnames;
		if (o->push) {
			memset(m.u.open.sel.pflags, 0, sizeof(m.u.open.sel.pflags));
			memset(m.u.open.sel.skip, 0, sizeof(m.u.open.sel.skip));
		} else {
			/* the receiver is here: where things land is ours alone */
			m.u.open.sel.rules &= (uint16_t) ~(RD_SEL_DEST_DIR | RD_SEL_MKPATH);
		}
	}
	ret = rd_engine_send_msg_wait(c, &m, &cl->err, -1);
	if (!ret && (flags & RD_OF_SELECT))
		ret = send_rules(cl, c, o->filter);
	if (!ret && (flags & RD_OF_SELECT) && !o->push && o->nnames)
		ret = send_strings(cl, c, RD_RULES_NAMES, o->names, o->nnames);
	return ret;
}

/*
 * --mkpath: the deepest directory of dest that exists; *rel (into d, a
 * copy of dest) is the rest, which the sink makes beneath it. An fd or -1.
 */
static int open_ancestor(char *d, const char **rel)
{
	char *cut = d + strlen(d);
	int fd;

	while (cut > d + 1 && cut[-1] == '/')
		*--cut = '\0';
	for (;;) {
		while (cut > d && *cut != '/')
			cut--;
		if (cut == d) {
			*rel = *d == '/' ? d + 1 : d;
			return open(*d == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		*cut = '\0';
		fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		*cut = '/';
		if (fd >= 0 || errno != ENOENT) {
			*rel = cut + 1;
			return fd;
		}
		cut--;
	}
}

void rd_session_sink_select(struct rd_sink *sink, const struct rd_select *sel)
{
	struct rd_sink_select x;

	memset(&x, 0, sizeof(x));
	x.compare = sel->compare == RD_CMP_CHECKSUM ? RD_SINK_CMP_CHECKSUM
		    : sel->compare == RD_CMP_SIZE   ? RD_SINK_CMP_SIZE
		    : sel->compare == RD_CMP_ALL    ? RD_SINK_CMP_ALL
						    : RD_SINK_CMP_QUICK;
	x.update = !!(sel->rules & RD_SEL_UPDATE);
	x.ignore_existing = !!(sel->rules & RD_SEL_IGNORE_EXISTING);
	x.existing = !!(sel->rules & RD_SEL_EXISTING);
	x.modify_window = sel->modify_window < 0 ? RD_SINK_WINDOW_NS : sel->modify_window;
	x.min_size = sel->min_size;
	x.max_size = sel->max_size;
	x.dry_run = !!(sel->rules & RD_SEL_DRY_RUN);
	rd_sink_set_select(sink, &x);
}

int rd_local_sink(const char *dest, unsigned flags, mode_t umask, struct rd_sink **sink,
		  struct rd_err *err)
{
	char *d1 = strdup(dest), *d2 = strdup(dest);
	const char *parent, *base;
	int fd = -1, ret;

	*sink = NULL;
	if (!d1 || !d2) {
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "destination");
		goto out;
	}
	parent = dirname(d1);
	base = basename(d2);
	if (!strcmp(base, "/") || !strcmp(base, ".") || !strcmp(base, "..")) {
		parent = dest;
		base = "";
	}
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && (flags & RD_SINK_MKPATH) && *base) {
		strcpy(d2, dest);
		fd = open_ancestor(d2, &base);
		parent = "its nearest existing parent";
	}
	if (fd < 0) {
		ret = rd_err_set(err, errno == ENOENT ? RD_ENOENT : RD_ESYS, errno,
				 "destination directory %s", parent);
		goto out;
	}
	ret = rd_sink_open(sink, fd, base, flags, umask, err);
	if (!ret)
		rd_sink_set_label(*sink, dest);
out:
	if (fd >= 0)
		close(fd);
	free(d1);
	free(d2);
	return ret;
}

void rd_expected_root(const char *path, char *out, size_t len)
{
	size_t n = strlen(path);
	const char *b;

	while (n > 1 && path[n - 1] == '/')
		n--;
	b = memrchr(path, '/', n);
	b = b ? b + 1 : path;
	n = (size_t)(path + n - b);
	if (!n || (n == 1 && (b[0] == '.' || b[0] == '~' || b[0] == '/')) ||
	    (n == 2 && b[0] == '.' && b[1] == '.') || b[0] == '~' || n >= len) {
		out[0] = '\0';
		return;
	}
	memcpy(out, b, n);
	out[n] = '\0';
}

/* A pull accepts only the top-level entries it asked for. */
static int expect_roots(struct rd_client *cl, struct rd_sink *sink,
			const struct rd_client_opts *o)
{
	char names[RD_OPEN_PATHS_MAX][NAME_MAX + 1]; /* the sink copies them */
	const char *ptrs[RD_OPEN_PATHS_MAX];
	unsigned char contents[RD_OPEN_PATHS_MAX];
	const char *const *asked = o->expect ? o->expect : o->asked ? o->asked : o->remote;
	int n = o->expect ? (int)o->nexpect : o->asked ? o->nasked : o->nremote, i;

	if (n < 1 || n > RD_OPEN_PATHS_MAX)
		return rd_err_set(&cl->err, RD_EUSAGE, 0, "between 1 and %d remote paths",
				  RD_OPEN_PATHS_MAX);
	for (i = 0; i < n; i++) {
		/*
		 * Daemon paths come normalized: a module root ("mod") arrives
		 * named after the module. Nameless ssh paths (".", "~/") are
		 * accepted only where the sink renames the one entry.
		 */
		rd_expected_root(asked[i], names[i], sizeof(names[i]));
		ptrs[i] = names[i];
		contents[i] = !o->expect && (o->sel.pflags[i] & RD_PF_CONTENTS);
	}
	if (rd_sink_expect_roots(sink, ptrs, contents, (unsigned)n))
		return rd_err_copy(&cl->err, rd_sink_err(sink));
	return 0;
}

static void phase(struct rd_client *cl, const char *step)
{
	if (cl->on_phase)
		cl->on_phase(cl->ctx, step);
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void rd_client_opts_init(struct rd_client_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sel.compare = RD_CMP_QUICK;
	o->sel.modify_window = RD_WINDOW_NS;
	o->sel.max_size = RD_SIZE_NONE;
	o->mir.max_delete = RD_MAX_DELETE_NONE;
}

int rd_client_run(struct rd_client *cl, const struct rd_client_opts *o)
{
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_msg_open_ok ok = {0};
	struct rd_want_state ws = {0};
	struct rd_conn *c = NULL;
	struct rd_local *loc = NULL;
	struct rd_tls_cfg ltls;
	const struct rd_tls_cfg *tc;
	struct rd_tree *t = NULL;
	struct rd_sink *sink = NULL;
	struct rd_mirror_opts mo;
	struct rd_filter_walk *fw = NULL;
	rd_engine_report_fn report = cl->e.report;
	rd_engine_item_fn item = cl->e.item;
	rd_engine_deleted_fn deleted = cl->e.deleted;
	void *rctx = cl->e.report_ctx;
	uint32_t flags;
	unsigned i;
	int ret;

	rd_err_clear(&cl->err);
	memset(&cl->t, 0, sizeof(cl->t));
	cl->t.start = mono_s();
	cl->stage = RD_CL_LOCAL;
	ret = rd_engine_init(&cl->e, &o->eo);
	cl->e.report = report;
	cl->e.item = item;
	cl->e.deleted = deleted;
	cl->e.report_ctx = rctx;
	if (ret) {
		rd_err_copy(&cl->err, &cl->e.err);
		goto out;
	}
	if (o->push && o->tree) {
		t = o->tree;
	} else if (o->push && o->names) {
		/* --files-from: the names beneath the one source directory */
		int base = open(o->local[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		ret = base < 0 ? rd_err_set(&cl->err, RD_ENOENT, errno, "%s", o->local[0])
			       : rd_tree_open_names(&t, base, o->names, (int)o->nnames,
						    (o->flags & RD_TREE_FLAGS) |
							(o->dirs ? RD_TREE_DIRS : 0),
						    &cl->err);
		if (base >= 0)
			close(base);
		if (ret)
			goto out;
	} else if (o->push) {
		ret = rd_tree_open_paths(
		    &t, o->local, o->nlocal,
		    (o->flags & RD_TREE_FLAGS) | (o->relative ? RD_TREE_RELATIVE : 0), &cl->err);
		if (ret)
			goto out;
		/* --remove-source-files: each source's directory, to remove it once confirmed */
		rd_tree_keep_parents(t, o->eo.remove_source);
	} else if (o->list || o->module) {
		/* a listing: nothing lands here (rd_engine_opts.list) */
	} else {
		if (o->nlocal != 1) {
			ret = rd_err_set(&cl->err, RD_EUSAGE, 0, "one local destination expected");
			goto out;
		}
		ret = rd_local_sink(o->local[0], o->sink_flags, o->umask, &sink, &cl->err);
		if (ret)
			goto out;
		if (o->partial_dir) {
			ret = rd_sink_set_partial_dir(sink, o->partial_dir);
			if (ret) {
				rd_err_copy(&cl->err, rd_sink_err(sink));
				goto out;
			}
		}
		/* a ranged pull takes what it wanted instead (rd_client_want.c) */
		ret = o->wants ? 0 : expect_roots(cl, sink, o);
		if (ret)
			goto out;
		/* we receive: the quick check and transfer rules are ours, whoever sends */
		rd_session_sink_select(sink, &o->sel);
		/* and --link-dest & co., backups: our own directories, as named */
		ret = rd_sink_set_dests(sink, &o->dests, -1, NULL);
		if (ret) {
			rd_err_copy(&cl->err, rd_sink_err(sink));
			goto out;
		}
	}
	if (!o->list && !o->module)
		phase(cl, o->push ? "sources opened" : "destination opened");

	memset(&req, 0, sizeof(req));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	cl->stage = RD_CL_CONNECT;
	if (o->local_dest)
		ret = rd_local_start(&loc, o, &c, &ltls, &cl->err);
	else
		ret = rd_conn_connect(&c, o->host, o->port, &o->co, &req, &rep, &cl->err);
	if (ret)
		goto out;
	cl->connected = 1;
	cl->t.connected = mono_s();
	cl->info = *rd_conn_info(c);
	/* a local copy keys its loopback TLS with a one-time secret (rd_local.c) */
	tc = o->local_dest ? &ltls : &o->tls;
	/* never a password login an observer could test guesses against (item 27.5) */
	if (tc->auth == RD_AUTH_USER && rd_conn_info(c)->version < RD_PROTO_LOGIN) {
		ret = rd_err_set(&cl->err, RD_EVERSION, 0,
				 "%s speaks protocol %u, whose password login lets anyone who "
				 "sees it test guesses of the secret; this rdcp logs in with "
				 "protocol %u or later only: upgrade rdcpd there",
				 cl->info.peer, rd_conn_info(c)->version, RD_PROTO_LOGIN);
		goto out;
	}
	ret = rd_conn_start_tls(&c, tc, o->co.timeout_ms > 0 ? o->co.timeout_ms : 30000, &cl->err);
	if (ret)
		goto out;
	cl->tls = *rd_tls_peer(rd_conn_tls(c));
	cl->info = *rd_conn_info(c); /* with the lanes (and rails) joined after TLS */
	cl->t.tls = mono_s();
	phase(cl, "TLS handshake done");
	if (cl->on_connected)
		cl->on_connected(cl->ctx, &cl->info);
	if (o->module) {
		cl->stage = RD_CL_OPEN;
		ret = rd_client__list_modules(cl, c, o);
		goto out;
	}
	if (o->list && rd_conn_info(c)->version < RD_PROTO_LIST) {
		ret = rd_err_set(&cl->err, RD_EVERSION, 0,
				 "%s speaks protocol %u, which cannot list files (that needs "
				 "protocol %u): upgrade rdcpd there",
				 cl->info.peer, rd_conn_info(c)->version, RD_PROTO_LIST);
		goto out;
	}
	/* packs and batches (issue 13) from versions 3 and 4 on; test builds can leave them off */
	flags = o->flags;
	/* -x, -L: a push walks here (the server hears nothing of them); a pull's server walks */
	if (o->push)
		flags &= ~RD_TREE_WALK_ONLY;
	else if ((flags & RD_TREE_WALK_ONLY) && rd_conn_info(c)->version < RD_PROTO_ITEMS) {
		ret =
		    rd_err_set(&cl->err, RD_EVERSION, 0,
			       "%s speaks protocol %u, which cannot walk with -x or -L (needs %u); "
			       "upgrade it or leave them out",
			       cl->info.peer, rd_conn_info(c)->version, RD_PROTO_ITEMS);
		goto out;
	}
	if (o->list)
		flags |= RD_OF_LIST;
	if (rd_conn_info(c)->version >= RD_PROTO_PACK)
		flags |= RD_OF_PACK;
	if (rd_conn_info(c)->version >= RD_PROTO_BATCH)
		flags |= RD_OF_BATCH;
	/* compact entries, batches of half the window (version 14) */
	if (rd_conn_info(c)->version >= RD_PROTO_WIDE)
		flags |= RD_OF_WIDE;
	if (o->wants)
		flags |= RD_OF_RANGES;
	/* a wider window (version 6): offered when ours is wider than the old one */
	if (rd_conn_info(c)->version >= RD_PROTO_WINDOW && cl->e.o.window > RD_WINDOW_FILES)
		flags |= RD_OF_WINDOW;
	/* what each entry changed, for -v, -i and --out-format (version 7) */
	if (rd_conn_info(c)->version >= RD_PROTO_ITEMS)
		flags |= RD_OF_ITEMS;
	/* rsync's rules (version 11): a copy that depends on them needs them */
	if (rd_conn_info(c)->version >= RD_PROTO_SELECT) {
		flags |= RD_OF_SELECT;
	} else if (o->need_select) {
		ret = rd_err_set(&cl->err, RD_EVERSION, 0,
				 "%s speaks protocol %u, which has none of rsync's rules this "
				 "copy asks for (a directory copied by its name or its contents, "
				 "several sources, a destination directory, selection or "
				 "transfer options: version %u); upgrade it",
				 cl->info.peer, rd_conn_info(c)->version, RD_PROTO_SELECT);
		goto out;
	}
	/* a push's snapshots and backups are the server's to make: OPEN's DESTS (13) */
	if (o->push && (o->dests.n || o->dests.backup)) {
		if (rd_conn_info(c)->version < RD_PROTO_MIRROR || !(flags & RD_OF_SELECT)) {
			ret = rd_err_set(&cl->err, RD_EVERSION, 0,
					 "%s speaks protocol %u, which cannot make %s on the "
					 "receiving side (needs %u); upgrade it or leave the "
					 "option out",
					 cl->info.peer, rd_conn_info(c)->version,
					 o->dests.n ? rd_sink_alt_option(o->dests.kind) : "backups",
					 RD_PROTO_MIRROR);
			goto out;
		}
		flags |= RD_OF_DESTS;
	}
	/* --delete and its relatives (version 13): the receiver's to do, OPEN says how */
	if (o->mir.flags) {
		if (rd_conn_info(c)->version < RD_PROTO_MIRROR || !(flags & RD_OF_SELECT)) {
			ret = rd_err_set(&cl->err, RD_EVERSION, 0,
					 "%s speaks protocol %u, which cannot delete (--delete, "
					 "--force: version %u); upgrade it or leave them out",
					 cl->info.peer, rd_conn_info(c)->version, RD_PROTO_MIRROR);
			goto out;
		}
		flags |= RD_OF_MIRROR;
	}
	/* a push's --partial-dir is the server's to make: OPEN carries it (version 5) */
	if (o->push && o->partial_dir) {
		if (rd_conn_info(c)->version < RD_PROTO_PARTIAL_DIR) {
			ret = rd_err_set(
			    &cl->err, RD_EVERSION, 0,
			    "%s speaks protocol %u, which cannot keep a push's "
			    "partials in --partial-dir (needs %u); upgrade it or leave "
			    "the option out",
			    cl->info.peer, rd_conn_info(c)->version, RD_PROTO_PARTIAL_DIR);
			goto out;
		}
		flags |= RD_OF_PARTIAL_DIR;
	}
#ifdef RDCP_TEST_HOOKS
	if (getenv("RDCP_TEST_NO_PACK"))
		flags &= ~RD_OF_PACK;
	if (getenv("RDCP_TEST_NO_BATCH"))
		flags &= ~(RD_OF_BATCH | RD_OF_WIDE);
	if (getenv("RDCP_TEST_NO_WIDE")) /* as with a server of protocol 13 */
		flags &= ~RD_OF_WIDE;
	if (getenv("RDCP_TEST_NO_ITEMS")) /* as with a server of protocol 6 */
		flags &= ~RD_OF_ITEMS;
#endif
	cl->stage = RD_CL_OPEN;
	ret = send_open(cl, c, o, flags);
	if (ret)
		goto out;
	ret = await_open_ok(cl, c, o->eo.digest, flags, &ok);
	cl->e.o.pack = !ret && (ok.flags & RD_OF_PACK);
	cl->e.o.batch = !ret && (ok.flags & RD_OF_BATCH);
	cl->e.o.wide = cl->e.o.batch && (ok.flags & RD_OF_WIDE);
	cl->e.o.select = !ret && (ok.flags & RD_OF_SELECT);
	cl->e.o.window = !ret && (ok.flags & RD_OF_WINDOW) ? ok.window : RD_WINDOW_FILES;
	cl->e.o.items = !ret && (ok.flags & RD_OF_ITEMS);
	/* -H as agreed; link groups named from protocol 10 on (rd_proto.h, FILE) */
	cl->e.o.hardlinks = !ret && (ok.flags & RD_OF_HARDLINKS);
	cl->e.o.link_marks = cl->e.o.hardlinks && rd_conn_info(c)->version >= RD_PROTO_LINKS;
	cl->e.o.ranges = !ret && (ok.flags & RD_OF_RANGES);
	if (!ret && (flags & RD_OF_MIRROR) && !(ok.flags & RD_OF_MIRROR))
		ret = rd_err_set(&cl->err, RD_EVERSION, 0, "%s did not agree to delete",
				 cl->info.peer);
	cl->e.o.mirror = !ret && (ok.flags & RD_OF_MIRROR) && (o->mir.flags & RD_MF_DELETE);
	/* a pull's receiver is ours: we delete, by our own rules */
	if (!ret && !o->push && (o->mir.flags & (RD_MF_DELETE | RD_MF_FORCE))) {
		ret = rd_session_mirror(&mo, &o->mir, !!(o->sel.rules & RD_SEL_DRY_RUN), o->filter,
					&fw, &cl->err);
		cl->e.o.mirror_opts = ret ? NULL : &mo;
	}
	/* -n: a pull's receiver is ours; a push's must have agreed to the rules */
	cl->e.o.dry_run = !!(o->sel.rules & RD_SEL_DRY_RUN);
	if (!ret && cl->e.o.dry_run && o->push && !cl->e.o.select)
		ret = rd_err_set(&cl->err, RD_EVERSION, 0, "%s did not agree to a dry run",
				 cl->info.peer);
	if (!ret)
		phase(cl, "OPEN answered");
	if (!ret)
		ret = rd_session_chunk_key(c, &cl->e, &cl->err);
	if (ret)
		goto out;
	cl->t.open = mono_s();
	phase(cl, "chunk key derived");
	if (o->wants) {
		ws.w = o->wants;
		ws.n = o->nwants;
		cl->e.o.accept = rd_client__want_accept;
		cl->e.o.hook_ctx = &ws;
		ret = rd_client__send_wants(cl, c, o);
		if (ret)
			goto out;
	} else if (o->list) {
		cl->e.o.list = o->list;
		cl->e.o.hook_ctx = o->list_ctx;
	}
	/* Read only what the server will keep (OPEN_OK: a subset of ours). */
	if (t)
		rd_tree_set_flags(t, ((ok.flags & flags) | (o->flags & RD_TREE_WALK_ONLY)) &
					 RD_TREE_FLAGS);
	/* we send: our filter rules leave out what they exclude (whatever the server) */
	if (t && rd_tree_set_filter(t, o->filter, &cl->err)) {
		ret = -RD_EUSAGE;
		goto out;
	}
	cl->stage = RD_CL_TRANSFER;
	if (o->push)
		ret = rd_engine_send(&cl->e, c, t);
	else
		ret = rd_engine_recv(&cl->e, c, sink);
	if (ret)
		rd_err_copy(&cl->err, &cl->e.err);
	if (ret && !cl->err.msg[0])
		rd_err_set(&cl->err, ret, 0, "%s: transfer failed (%s)", cl->info.peer,
			   rd_status_name(ret));
	cl->t.data = mono_s();
	phase(cl, "transfer done");
out:
	for (i = 0; c && i < RD_LANES_MAX; i++) {
		cl->lane_bytes[i] = rd_conn_lane_bytes(c, i);
		cl->lane_rail[i] = rd_conn_lane_rail(c, i);
	}
	if (c) {
		uint64_t sent, rcvd;

		rd_conn_bytes(c, &sent, &rcvd);
		cl->bytes_sent += sent;
		cl->bytes_rcvd += rcvd;
		snprintf(cl->info.rails_note, sizeof(cl->info.rails_note), "%s",
			 rd_conn_info(c)->rails_note);
		cl->info.failovers = rd_conn_info(c)->failovers;
	}
	rd_conn_close(c);
	rd_local_finish(loc, NULL, 0);
	OPENSSL_cleanse(&ltls, sizeof(ltls));
	if (cl->connected) {
		cl->t.closed = mono_s();
		phase(cl, "connection closed");
	}
	if (t != o->tree)
		rd_tree_close(t);
	rd_sink_close(sink);
	rd_filter_walk_free(fw);
	rd_engine_fini(&cl->e);
	return ret;
}
