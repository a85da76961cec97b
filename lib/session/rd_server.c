// SPDX-License-Identifier: MIT
/*
 * Server half of a session. The client names "module/path"; the module
 * must exist, pushes into a read-only module are refused, and every path
 * is resolved beneath the module's directory (openat2 RESOLVE_BENEATH),
 * so neither ".." nor a symlink can lead a client out of its module.
 */
#include "lib/session/rd_session.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/filter/rd_filter.h"
#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session_priv.h"
#include "lib/sink/rd_sink.h"
#include "lib/tree/rd_tree.h"

int rd_module_parse(struct rd_module *m, const char *spec, struct rd_err *err)
{
	const char *eq = strchr(spec, '=');
	const char *dir, *comma;
	size_t nlen, dlen;

	memset(m, 0, sizeof(*m));
	if (!eq || eq == spec)
		return rd_err_set(err, RD_EUSAGE, 0, "module '%s': expected NAME=DIR[,ro]", spec);
	nlen = (size_t)(eq - spec);
	if (nlen >= sizeof(m->name) || memchr(spec, '/', nlen))
		return rd_err_set(err, RD_EUSAGE, 0, "module name in '%s' is too long or has a '/'",
				  spec);
	memcpy(m->name, spec, nlen);
	if (!strcmp(m->name, ".") || !strcmp(m->name, ".."))
		return rd_err_set(err, RD_EUSAGE, 0, "module name '%s' is not allowed", m->name);
	dir = eq + 1;
	comma = strrchr(dir, ',');
	if (comma && (!strcmp(comma, ",ro") || !strcmp(comma, ",rw"))) {
		m->readonly = !strcmp(comma, ",ro");
		dlen = (size_t)(comma - dir);
	} else {
		dlen = strlen(dir);
	}
	if (!dlen || dlen >= sizeof(m->path) || dir[0] != '/')
		return rd_err_set(err, RD_EUSAGE, 0,
				  "module '%s': directory must be an absolute path", m->name);
	memcpy(m->path, dir, dlen);
	return 0;
}

static const struct rd_module *find_module(const struct rd_server_cfg *cfg, const char *p,
					   size_t len, size_t *restoff)
{
	const char *slash = memchr(p, '/', len);
	size_t nlen = slash ? (size_t)(slash - p) : len;
	int i;

	for (i = 0; i < cfg->nmods; i++) {
		if (strlen(cfg->mods[i].name) == nlen && !memcmp(cfg->mods[i].name, p, nlen)) {
			*restoff = slash ? nlen + 1 : len;
			return &cfg->mods[i];
		}
	}
	return NULL;
}

static int refuse(struct rd_conn *c, struct rd_err *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int refuse(struct rd_conn *c, struct rd_err *err, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rd_err_vset(err, status, 0, fmt, ap);
	va_end(ap);
	rd_engine_send_error(c, status, err->msg);
	rd_conn_flush(c, 1000);
	return -status;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int await_open(struct rd_conn *c, volatile int *stop, int timeout_ms, uint8_t *copy,
		      size_t *clen, struct rd_msg *m, struct rd_err *err)
{
	const uint8_t *buf;
	size_t len;
	const char *why;
	double t0 = now_s();
	int r;

	for (;;) {
		if (rd_conn_recv(c, &buf, &len) == 1) {
			/* Keep our own copy: the decoded strings point into it. */
			memcpy(copy, buf, len);
			*clen = len;
			rd_conn_recv_done(c);
			r = rd_msg_decode(copy, len, m, &why);
			if (r)
				return refuse(c, err, RD_EPROTO, "bad first message from %s: %s",
					      rd_conn_info(c)->peer, why);
			/* a listing of the modules (version RD_PROTO_LIST) comes instead */
			if (m->hdr.type == RD_MSG_LIST && rd_conn_info(c)->version < RD_PROTO_LIST)
				return refuse(
				    c, err, RD_EPROTO, "LIST from %s on protocol %u (it needs %u)",
				    rd_conn_info(c)->peer, rd_conn_info(c)->version, RD_PROTO_LIST);
			if (m->hdr.type != RD_MSG_OPEN && m->hdr.type != RD_MSG_LIST)
				return refuse(c, err, RD_EPROTO, "expected OPEN from %s, got %s",
					      rd_conn_info(c)->peer, rd_msg_type_name(m->hdr.type));
			return 0;
		}
		if (stop && *stop)
			return refuse(c, err, RD_ESTOPPED, "the server is shutting down");
		if (timeout_ms > 0 && (now_s() - t0) * 1000 >= timeout_ms)
			return refuse(c, err, RD_ETIMEOUT,
				      "no request from %s within the server's auth timeout; "
				      "closing the connection",
				      rd_conn_info(c)->peer);
		r = rd_conn_poll(c, 200);
		if (r < 0)
			return rd_err_copy(err, rd_conn_err(c));
	}
}

/*
 * The RULES an OPEN announced (rd_proto.h): exactly as many filter rules,
 * then names, as it said, within the byte bounds, each parsed here (a
 * merge rule, which would name a file of ours, is refused like any rule
 * that does not parse). 0, or a refusal sent to the client.
 */
struct names {
	char **v;
	unsigned n;
	size_t bytes;
};

static void names_free(struct names *x)
{
	unsigned i;

	for (i = 0; i < x->n; i++)
		free(x->v[i]);
	free(x->v);
	memset(x, 0, sizeof(*x));
}

/* A --files-from name (checked as a path by the decoder) kept; -1: ferr said why. */
static int add_name(struct names *nm, const struct rd_str *x, struct rd_err *ferr)
{
	nm->bytes += x->len;
	if (nm->bytes > RD_NAMES_BYTES_MAX) {
		snprintf(ferr->msg, sizeof(ferr->msg),
			 "the --files-from names are over %u bytes in all", RD_NAMES_BYTES_MAX);
		return -1;
	}
	nm->v[nm->n] = strndup(x->ptr, x->len);
	if (!nm->v[nm->n]) {
		snprintf(ferr->msg, sizeof(ferr->msg), "out of memory");
		return -1;
	}
	nm->n++;
	return 0;
}

static int read_rules(struct rd_conn *c, const struct rd_server_cfg *cfg,
		      const struct rd_msg_open *o, struct rd_filter **fp, struct names *nm,
		      struct rd_err *err)
{
	unsigned want = o->sel.nrules + o->sel.nnames, got = 0, k;
	const uint8_t *buf;
	const char *why;
	struct rd_msg m;
	struct rd_str x;
	struct rd_err ferr;
	size_t len, off, bytes = 0;
	double t0 = now_s();
	int r;

	if (rd_filter_new(
		fp, (o->sel.rules & RD_SEL_DELETE_EXCLUDED) ? RD_FILTER_DELETE_EXCLUDED : 0, err))
		return refuse(c, err, RD_ENOMEM, "out of memory");
	if (o->sel.nnames) {
		nm->v = calloc(o->sel.nnames, sizeof(*nm->v));
		if (!nm->v)
			return refuse(c, err, RD_ENOMEM, "out of memory");
	}
	while (got < want) {
		if (rd_conn_recv(c, &buf, &len) != 1) {
			if (cfg->eo.stop && *cfg->eo.stop)
				return refuse(c, err, RD_ESTOPPED, "the server is shutting down");
			if (cfg->open_timeout_ms > 0 &&
			    (now_s() - t0) * 1000 >= cfg->open_timeout_ms)
				return refuse(c, err, RD_ETIMEOUT,
					      "%s sent its filter rules too slowly; closing",
					      rd_conn_info(c)->peer);
			r = rd_conn_poll(c, 200);
			if (r < 0)
				return rd_err_copy(err, rd_conn_err(c));
			continue;
		}
		r = rd_msg_decode(buf, len, &m, &why);
		/* the filter rules first, then the names */
		if (r || m.hdr.type != RD_MSG_RULES ||
		    m.u.rules.kind != (got < o->sel.nrules ? RD_RULES_FILTER : RD_RULES_NAMES) ||
		    m.u.rules.n > (got < o->sel.nrules ? o->sel.nrules : want) - got) {
			rd_conn_recv_done(c);
			return refuse(c, err, RD_EPROTO, "bad filter rules from %s after OPEN: %s",
				      rd_conn_info(c)->peer,
				      r				   ? why
				      : m.hdr.type != RD_MSG_RULES ? "another message came first"
								   : "more than announced");
		}
		for (off = 0, k = 0; k < m.u.rules.n; k++, got++) {
			r = rd_rules_next(&m.u.rules, &off, &x);
			if (!r && m.u.rules.kind == RD_RULES_NAMES) {
				if (!add_name(nm, &x, &ferr))
					continue;
			} else if (!r) {
				bytes += x.len;
				if (bytes > RD_RULES_BYTES_MAX)
					snprintf(ferr.msg, sizeof(ferr.msg),
						 "the filter rules are over %u bytes in all",
						 RD_RULES_BYTES_MAX);
				else if (!rd_filter_add(*fp, x.ptr, x.len, RD_FILTER_RULE, &ferr))
					continue;
			}
			rd_conn_recv_done(c);
			return refuse(c, err, r ? RD_EPROTO : RD_EUSAGE, "%s",
				      r ? "filter rules that do not decode" : ferr.msg);
		}
		rd_conn_recv_done(c);
	}
	return 0;
}

/*
 * Resolve rel beneath dirfd without following any symlink (not even one
 * inside the module: what a client sees must be what lies in the module
 * directory). Returns an fd or -errno.
 */
static int open_beneath(int dirfd, const char *rel, int flags)
{
	struct open_how how;
	long r;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	r = rd_openat2(dirfd, rel, &how, sizeof(how));
	return r < 0 ? -errno : (int)r;
}

/*
 * "a//./b/" -> "a/b" in out (cap RD_PATH_MAX + 1); "" for the module
 * root. Returns -1 for a ".." component.
 */
static int normalize_rel(const char *in, char *out)
{
	const char *p = in, *e;
	size_t n, o = 0;

	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -1;
		if (!(n == 1 && p[0] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	out[o] = '\0';
	return 0;
}

/*
 * A pull source: check "module/rel" beneath the module, then hand the tree
 * the descriptor of its parent directory and its last name, so the tree
 * opens it (O_NOFOLLOW) from the directory that was checked; nothing is
 * resolved by path again (issue 7 item 1). The module root is sent under
 * the module's name (the client knows it; issue 7 item 3).
 */
static int pull_source(struct rd_conn *c, const struct rd_module *mod, int modfd, const char *asked,
		       int contents, int relative, unsigned skip, struct rd_tree_src *src,
		       char *rel, struct rd_err *err)
{
	struct stat st;
	char *slash;
	int fd;

	memset(src, 0, sizeof(*src));
	src->dirfd = -1;
	src->contents = contents;
	if (normalize_rel(asked, rel))
		return refuse(c, err, RD_EPERM, "%s/%s: '..' is not allowed", mod->name, asked);
	/* other clients' partials and temporaries: refused by name, found or not */
	if (rd_path_reserved(rel, strlen(rel)))
		return refuse(
		    c, err, RD_EPERM,
		    "%s/%s: names an rdcp partial or temporary file; those are never sent",
		    mod->name, rel);
	if (!rel[0] && relative)
		return refuse(c, err, RD_EUSAGE, "-R names no path in module '%s'", mod->name);
	if (!rel[0]) {
		/* rsync's "host::module": the module's contents */
		src->contents = 1;
		src->dirfd = fcntl(modfd, F_DUPFD_CLOEXEC, 0);
		src->wire = mod->name;
		return src->dirfd < 0 ? refuse(c, err, RD_ESYS, "module '%s': %s", mod->name,
					       strerror(errno))
				      : 0;
	}
	fd = open_beneath(modfd, rel, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return refuse(c, err, fd == -ENOENT ? RD_ENOENT : RD_EPERM, "%s/%s: %s", mod->name,
			      rel,
			      fd == -EXDEV   ? "leaves the module"
			      : fd == -ELOOP ? "a symlink; paths through symlinks are refused"
					     : strerror(-fd));
	/* O_PATH|O_NOFOLLOW opens a final symlink itself: refuse it too */
	if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
		close(fd);
		return refuse(c, err, RD_EPERM, "%s/%s: %s", mod->name, rel,
			      "a symlink; paths through symlinks are refused");
	}
	close(fd);
	if (relative) {
		/* -R: sent under its path from the base (the part before "/./") */
		if (skip >= strlen(rel))
			return refuse(c, err, RD_EPROTO, "a -R base past the path's end");
		if (skip) {
			rel[skip - 1] = '\0';
			fd = open_beneath(modfd, rel, O_RDONLY | O_DIRECTORY);
			rel[skip - 1] = '/';
		} else {
			fd = fcntl(modfd, F_DUPFD_CLOEXEC, 0);
		}
		if (fd < 0)
			return refuse(c, err, RD_EPERM, "%s/%s: %s", mod->name, rel,
				      "changed while checking it");
		src->dirfd = fd;
		src->rel = rel + skip;
		return 0;
	}
	slash = strrchr(rel, '/');
	if (slash) {
		*slash = '\0';
		fd = open_beneath(modfd, rel, O_RDONLY | O_DIRECTORY);
		*slash = '/';
		if (fd < 0)
			return refuse(c, err, RD_EPERM, "%s/%s: %s", mod->name, rel,
				      "changed while checking it");
		src->name = slash + 1;
	} else {
		fd = fcntl(modfd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return refuse(c, err, RD_ESYS, "module '%s': %s", mod->name,
				      strerror(errno));
		src->name = rel;
	}
	src->dirfd = fd;
	/* rsync's -F: the merge files of its parents in the module count */
	src->top_fd = modfd;
	src->top_path = rel;
	return 0;
}

/* A ranged pull's base (rd_proto.h section 6): one directory beneath the module. */
static int want_base(struct rd_conn *c, const struct rd_module *mod, int modfd, const char *asked,
		     int npaths, int *fd, struct rd_err *err)
{
	char rel[RD_PATH_MAX + 1];

	if (npaths != 1 || *fd >= 0)
		return refuse(c, err, RD_EUSAGE, "a ranged pull names exactly one base directory");
	if (normalize_rel(asked, rel))
		return refuse(c, err, RD_EPERM, "%s/%s: '..' is not allowed", mod->name, asked);
	/* other clients' partials and temporaries: refused by name, as for any pull */
	if (rd_path_reserved(rel, strlen(rel)))
		return refuse(c, err, RD_EPERM, "%s/%s: a name rdcp keeps for itself", mod->name,
			      rel);
	*fd = rel[0] ? open_beneath(modfd, rel, O_RDONLY | O_DIRECTORY)
		     : fcntl(modfd, F_DUPFD_CLOEXEC, 0);
	if (*fd < 0) {
		int e = -*fd;

		*fd = -1;
		return refuse(
		    c, err, e == ENOENT ? RD_ENOENT : RD_EPERM, "%s/%s: %s", mod->name, rel,
		    e == EXDEV || e == ELOOP ? "leaves the module or is a symlink" : strerror(e));
	}
	return 0;
}

/*
 * Owner policy (issue 7 item 2), decided here and nowhere else: is this
 * client mapped to a local identity whose owners it may set? An
 * ssh-started server runs as the user who logged in: yes, like scp/rsync.
 * A daemon client: not until modules have a uid/gid mapping, so a daemon
 * never chowns to wire ids and never keeps setuid/setgid bits.
 */
static int client_mapped(const struct rd_server_cfg *cfg)
{
	return cfg->fixed_mode != 0;
}

/* The OPEN flags this server honours for this client. */
static uint32_t honoured(const struct rd_server_cfg *cfg, const struct rd_msg_open *o)
{
	uint32_t f = o->flags & RD_OF_KNOWN;

	/* ACL entries name local users; a device node is a way into the machine */
	if (o->mode == RD_MODE_PUSH && !client_mapped(cfg))
		f &= ~(RD_OF_OWNER | RD_OF_GROUP | RD_OF_ACLS | RD_OF_DEVICES);
	/*
	 * -L on a pull: a daemon walks its modules without following a
	 * symlink (one could lead out of the module); links are sent as
	 * links. A push's walk is the client's own: nothing to honour.
	 */
	if (!client_mapped(cfg) || o->mode == RD_MODE_PUSH)
		f &= ~RD_OF_COPY_LINKS;
	if (o->mode == RD_MODE_PUSH)
		f &= ~(RD_OF_ONE_FS | RD_OF_ONE_FS2);
	if (!(f & RD_OF_BATCH)) /* wide batches are batches */
		f &= ~RD_OF_WIDE;
	return f;
}

/*
 * The walk of a pull: what the client asked for that we honour; a
 * listing without -r walks one level (rsync's --dirs).
 */
static unsigned tree_flags(const struct rd_server_cfg *cfg, const struct rd_msg_open *o)
{
	uint32_t f = honoured(cfg, o);

	return (f & RD_TREE_FLAGS) |
	       ((f & RD_OF_LIST) && !(f & RD_OF_RECURSIVE) ? RD_TREE_LIST_LEVEL : 0);
}

/* What we will do: the flags we honour, our chunk size and digest. */
static int send_open_ok(struct rd_conn *c, const struct rd_server_cfg *cfg,
			const struct rd_engine *e, const struct rd_msg_open *o,
			struct rd_err *err)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_OPEN_OK;
	m.u.open_ok.flags = honoured(cfg, o);
	m.u.open_ok.chunk_size = e->o.chunk_size;
	m.u.open_ok.digest.ptr = e->dg->name;
	m.u.open_ok.digest.len = (uint16_t)strlen(e->dg->name);
	if (m.u.open_ok.flags & RD_OF_WINDOW)
		m.u.open_ok.window = (uint16_t)e->o.window;
	return rd_engine_send_msg_wait(c, &m, err, -1);
}

/* One log line per transfer: direction, module, files, bytes, time, rate, result. */
static void summarize(char *summary, size_t sumlen, const char *what, const char *where,
		      const struct rd_engine *e, int ret, double secs)
{
	snprintf(summary, sumlen,
		 "%s %s: %llu ok, %llu failed, %llu identical, %llu bytes moved in %.2f s "
		 "(%.1f MB/s), checksum %s: %s%s",
		 what, where, (unsigned long long)e->st.files_ok,
		 (unsigned long long)e->st.files_failed, (unsigned long long)e->st.files_same,
		 (unsigned long long)e->st.bytes_data, secs,
		 secs > 0 ? (double)e->st.bytes_data / secs / 1e6 : 0.0, e->digest_name,
		 !ret ? "ok" : ret == -RD_EPARTIAL ? "partial" : "failed: ",
		 ret && ret != -RD_EPARTIAL ? e->err.msg : "");
}

/* rsync's placement rules for a push's receiver (RD_OF_SELECT). */
static unsigned select_sink_flags(const struct rd_msg_open *o, uint32_t honoured_flags)
{
	if (!(honoured_flags & RD_OF_SELECT))
		return 0;
	return RD_SINK_RSYNC | ((o->sel.rules & RD_SEL_DEST_DIR) ? RD_SINK_DEST_DIR : 0) |
	       ((o->sel.rules & RD_SEL_MKPATH) ? RD_SINK_MKPATH : 0);
}

static unsigned sink_flags_for(const struct rd_server_cfg *cfg, const struct rd_msg_open *o)
{
	uint32_t f = honoured(cfg, o);

	return cfg->sink_flags | RD_SINK_PRESERVE_TIMES |
	       ((f & RD_OF_PRESERVE) ? RD_SINK_PRESERVE_MODE : 0) |
	       ((f & RD_OF_OWNER) ? RD_SINK_PRESERVE_OWNER : 0) |
	       ((f & RD_OF_GROUP) ? RD_SINK_PRESERVE_GROUP : 0) |
	       ((f & RD_OF_FSYNC) ? RD_SINK_FSYNC : 0) |
	       ((f & RD_OF_NO_PARTIAL) ? RD_SINK_NO_PARTIAL : 0) |
	       ((f & RD_OF_TRUST_PARTIAL) ? RD_SINK_TRUST_PARTIAL : 0) |
	       ((f & RD_OF_XATTRS) ? RD_SINK_XATTRS : 0) | ((f & RD_OF_ACLS) ? RD_SINK_ACLS : 0) |
	       ((f & RD_OF_DEVICES) ? RD_SINK_DEVICES : 0) |
	       ((f & RD_OF_SPECIALS) ? RD_SINK_SPECIALS : 0) | select_sink_flags(o, f);
}

/* Refuse with the message already in err (it is reused for the reply). */
static int refuse_err(struct rd_conn *c, struct rd_err *err, int ret)
{
	char why[RD_ERR_MSG_MAX];

	snprintf(why, sizeof(why), "%s", err->msg);
	return refuse(c, err, -ret, "%s", why);
}

/* The feature an OPEN asks for that its connection's version has not, or NULL. */
static const char *too_new(const struct rd_msg_open *o, unsigned version)
{
	if ((o->flags & RD_OF_PACK) && version < RD_PROTO_PACK)
		return "packs";
	if ((o->flags & RD_OF_BATCH) && version < RD_PROTO_BATCH)
		return "batches";
	if ((o->flags & RD_OF_PARTIAL_DIR) && version < RD_PROTO_PARTIAL_DIR)
		return "a partial directory";
	if ((o->flags & RD_OF_WINDOW) && version < RD_PROTO_WINDOW)
		return "a wider window";
	if ((o->flags & (RD_OF_ITEMS | RD_OF_ONE_FS | RD_OF_ONE_FS2 | RD_OF_COPY_LINKS)) &&
	    version < RD_PROTO_ITEMS)
		return "items, -x or -L";
	if ((o->flags & RD_OF_LIST) && version < RD_PROTO_LIST)
		return "a listing";
	if ((o->flags & RD_OF_SELECT) && version < RD_PROTO_SELECT)
		return "rsync's rules";
	if ((o->flags & RD_OF_DESTS) && version < RD_PROTO_MIRROR)
		return "snapshots and backups";
	if ((o->flags & RD_OF_WIDE) && version < RD_PROTO_WIDE)
		return "wide batches";
	return NULL;
}

/*
 * A push's --partial-dir (OPEN, version 5): the sink makes it inside each
 * destination directory, confined like everything else it writes.
 */
static int set_partial_dir(struct rd_conn *c, struct rd_sink *sink, const struct rd_msg_open *o,
			   struct rd_err *err)
{
	char name[RD_PARTIAL_DIR_MAX + 1];
	int ret;

	if (!sink || !(o->flags & RD_OF_PARTIAL_DIR))
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)o->partial_dir.len, o->partial_dir.ptr);
	ret = rd_sink_set_partial_dir(sink, name);
	if (ret) {
		rd_err_copy(err, rd_sink_err(sink));
		ret = refuse_err(c, err, ret);
	}
	return ret;
}

/* A wire string (<= RD_PATH_MAX) as a C string at *p, which moves past it. */
static const char *wire_str(char **p, const struct rd_str *s)
{
	char *r = *p;

	snprintf(r, RD_PATH_MAX + 1, "%.*s", (int)s->len, s->ptr ? s->ptr : "");
	*p += RD_PATH_MAX + 1;
	return r;
}

/*
 * A push's --link-dest & co. and backups (OPEN's DESTS, version 13): in a
 * module (root_fd) resolved beneath it from the destination rel, ".." may
 * not leave it; ssh-started (root_fd -1): the user's own paths, as named.
 * A write-only module compares nothing, so it takes no alternate
 * destination (a match would tell what the module holds).
 */
static int set_dests(struct rd_conn *c, struct rd_sink *sink, const struct rd_msg_open *o,
		     const struct rd_module *mod, int root_fd, const char *rel, struct rd_err *err)
{
	const struct rd_dests *w = &o->dests;
	struct rd_sink_dests d;
	char *buf = NULL, *p;
	unsigned i;
	int ret;

	if (!sink || !(o->flags & RD_OF_DESTS))
		return 0;
	if (mod && mod->write_only && w->ndests)
		return refuse(c, err, RD_EPERM,
			      "module '%s' is write-only: it takes no %s (nothing there is "
			      "compared)",
			      mod->name, rd_sink_alt_option(w->kind));
	/* every string NUL-terminated: the wire's are bounded (rd_proto.c checked them) */
	buf = malloc((size_t)(RD_DESTS_MAX + 2) * (RD_PATH_MAX + 1));
	if (!buf)
		return refuse(c, err, RD_ENOMEM, "out of memory");
	memset(&d, 0, sizeof(d));
	p = buf;
	d.kind = w->kind;
	d.n = w->ndests;
	for (i = 0; i < w->ndests && i < RD_DESTS_MAX; i++)
		d.dirs[i] = wire_str(&p, &w->dirs[i]);
	d.backup = !!(w->flags & RD_DF_BACKUP);
	d.backup_dir = w->backup_dir.len ? wire_str(&p, &w->backup_dir) : NULL;
	d.suffix = (w->flags & RD_DF_SUFFIX) ? wire_str(&p, &w->suffix) : NULL;
	ret = rd_sink_set_dests(sink, &d, root_fd, rel);
	if (ret) {
		rd_err_copy(err, rd_sink_err(sink));
		if (mod) {
			char why[RD_ERR_MSG_MAX];

			snprintf(why, sizeof(why), "%s", err->msg);
			ret = refuse(c, err, -ret, "module %s: %s", mod->name, why);
		} else {
			ret = refuse_err(c, err, ret);
		}
	}
	free(buf);
	return ret;
}

/* Accept the OPEN and run the engine with the roles its mode gives us. */
static int run_job(struct rd_conn *c, const struct rd_server_cfg *cfg, struct rd_engine *e,
		   const struct rd_msg_open *o, const struct rd_module *mod, struct rd_sink *sink,
		   struct rd_tree *t, int fixed, char *summary, size_t sumlen, struct rd_err *err,
		   int wantfd)
{
	int push = o->mode == RD_MODE_PUSH, ret;
	double t0 = now_s(), t_run;
	char where[RD_MODULE_NAME_MAX + 16];
	struct rd_server_job job = {
	    .push = push, .module = mod, .open = o, .e = e, .renames_to = rd_sink_renames_to(sink)};
	struct rd_want_list *wl = NULL;

	ret = set_partial_dir(c, sink, o, err);
	if (sink && (honoured(cfg, o) & RD_OF_SELECT))
		rd_session_sink_select(sink, &o->sel);
	if (!ret)
		ret = send_open_ok(c, cfg, e, o, err);
	if (!ret)
		ret = rd_session_chunk_key(c, e, err);
	/* a ranged pull (rd_proto.h section 6): the list first, then those entries */
	if (!ret && wantfd >= 0) {
		ret = rd_server__wants(c, wantfd, cfg->open_timeout_ms, cfg->eo.stop, &wl, err);
		if (!ret)
			ret = rd_server__want_tree(wl, honoured(cfg, o) & RD_TREE_FLAGS, &t, err);
		if (ret) {
			ret = refuse_err(c, err, ret);
			rd_server__wants_free(wl);
			return ret;
		}
	}
	if (ret)
		return ret;
	/* the owner's hooks: the job's start and end, each entry's end */
	e->entry = cfg->on_entry;
	e->entry_ctx = cfg->job_ctx;
	e->deleted = cfg->on_deleted; /* the server has no report of its own */
	e->report_ctx = cfg->job_ctx;
	if (cfg->on_job)
		cfg->on_job(cfg->job_ctx, &job);
	t_run = now_s();
	ret = push ? rd_engine_recv(e, c, sink) : rd_engine_send(e, c, t);
	if (wl) {
		rd_tree_close(t);
		rd_server__wants_free(wl);
	}
	job.ended = 1;
	job.status = ret;
	job.seconds = now_s() - t_run;
	if (cfg->on_job)
		cfg->on_job(cfg->job_ctx, &job);
	if (ret == -RD_ESTOPPED) {
		/* tell the client why, as far as the connection still takes it */
		rd_engine_send_error(c, RD_ESTOPPED, "the server is shutting down");
		rd_conn_flush(c, 1000);
	} else if (ret == -RD_ETIMEOUT && e->o.idle_ms > 0) {
		rd_engine_send_error(c, RD_ETIMEOUT, e->err.msg); /* the idle timeout */
		rd_conn_flush(c, 1000);
	}
	if (fixed)
		snprintf(where, sizeof(where), "(ssh-started)");
	else
		snprintf(where, sizeof(where), "module %.*s",
			 (int)(memchr(o->paths[0].ptr, '/', o->paths[0].len)
				   ? (size_t)((const char *)memchr(o->paths[0].ptr, '/',
								   o->paths[0].len) -
					      o->paths[0].ptr)
				   : o->paths[0].len),
			 o->paths[0].ptr);
	summarize(summary, sumlen,
		  fixed			    ? (push ? "receive" : "send")
		  : push		    ? "push"
		  : (o->flags & RD_OF_LIST) ? "list"
					    : "pull",
		  where, e, ret, now_s() - t0);
	if (ret)
		rd_err_copy(err, &e->err);
	return ret;
}

/* --files-from's walk: -R always, the listed directories alone without -r. */
static unsigned names_flags(const struct rd_server_cfg *cfg, const struct rd_msg_open *o)
{
	unsigned f = honoured(cfg, o) & RD_TREE_FLAGS;

	return f | RD_TREE_RELATIVE | ((f & RD_TREE_RECURSIVE) ? 0 : RD_TREE_DIRS);
}

/* The directory a pull's --files-from names are beneath: checked as any path is. */
static int names_base(struct rd_conn *c, const struct rd_module *mod, int modfd, const char *asked,
		      struct rd_tree_src *src, char *rel, struct rd_err *err)
{
	int fd;

	memset(src, 0, sizeof(*src));
	src->dirfd = -1;
	if (normalize_rel(asked, rel))
		return refuse(c, err, RD_EPERM, "%s/%s: '..' is not allowed", mod->name, asked);
	fd = rel[0] ? open_beneath(modfd, rel, O_RDONLY | O_DIRECTORY)
		    : fcntl(modfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return refuse(c, err, RD_ENOENT, "%s/%s: %s (--files-from names lie beneath it)",
			      mod->name, rel, strerror(fd == -1 ? errno : -fd));
	src->dirfd = fd;
	return 0;
}

/* The ssh-started case: the job is fixed by our command line. */
/*
 * --delete (OPEN's MIRROR block): a push's receiver (ours) deletes by the
 * client's rules; a pull's sources must not be empty (a missing mount
 * looks empty) unless the client allows it. 0, or refused (told).
 */
static int server_mirror(struct rd_conn *c, struct rd_engine *e, const struct rd_msg_open *o,
			 const struct rd_filter *filter, struct rd_mirror_opts *mo,
			 struct rd_filter_walk **fw, const struct rd_tree_src *srcs, int nsrcs,
			 const char *const *paths, struct rd_err *err)
{
	int i, ret;

	if (!(o->flags & RD_OF_MIRROR))
		return 0;
	if (o->mode == RD_MODE_PUSH) {
		ret = rd_session_mirror(mo, &o->mir, e->o.dry_run, filter, fw, err);
		if (ret)
			return refuse(c, err, -ret, "out of memory");
		e->o.mirror_opts = mo;
		return 0;
	}
	if (!(o->mir.flags & RD_MF_DELETE) || (o->mir.flags & RD_MF_ALLOW_EMPTY))
		return 0;
	for (i = 0; i < nsrcs; i++) {
		int empty = paths ? rd_session_dir_empty(AT_FDCWD, paths[i])
				  : rd_session_dir_empty(srcs[i].dirfd, srcs[i].name);

		if (empty)
			return refuse(c, err, RD_ENOENT,
				      "the source directory %s is empty: --delete would empty "
				      "the destination; refused (--allow-empty-source allows it)",
				      paths	     ? paths[i]
				      : srcs[i].wire ? srcs[i].wire
						     : "");
	}
	return 0;
}

static int serve_fixed(const struct rd_server_cfg *cfg, struct rd_conn *c, struct rd_engine *e,
		       const struct rd_msg_open *o, const struct rd_filter *filter,
		       const struct names *names, char *summary, size_t sumlen, struct rd_err *err)
{
	int fd;
	struct rd_sink *sink = NULL;
	struct rd_tree *t = NULL;
	struct rd_mirror_opts mo;
	struct rd_filter_walk *fw = NULL;
	int ret;

	if (o->mode != cfg->fixed_mode) {
		ret = refuse(c, err, RD_EUSAGE, "the remote side was started to %s, not to %s",
			     cfg->fixed_mode == RD_MODE_PUSH ? "receive" : "send",
			     o->mode == RD_MODE_PUSH ? "receive" : "send");
		goto out;
	}
	if (o->mode == RD_MODE_PUSH) {
		ret = rd_local_sink(cfg->fixed_paths[0], sink_flags_for(cfg, o), cfg->umask, &sink,
				    err);
		if (!ret) {
			ret = set_dests(c, sink, o, NULL, -1, NULL, err);
			if (ret)
				goto out;
		}
	} else if (names->n) {
		/* --files-from: the names lie beneath our one path (the user's own) */
		fd = open(cfg->fixed_paths[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ret = fd < 0 ? rd_err_set(err, RD_ENOENT, errno, "%s", cfg->fixed_paths[0])
			     : rd_tree_open_names(&t, fd, (const char *const *)names->v,
						  (int)names->n, names_flags(cfg, o), err);
		if (fd >= 0)
			close(fd);
	} else
		ret = rd_tree_open_paths(
		    &t, cfg->fixed_paths, cfg->nfixed,
		    tree_flags(cfg, o) |
			((o->flags & RD_OF_SELECT) && (o->sel.rules & RD_SEL_RELATIVE)
			     ? RD_TREE_RELATIVE
			     : 0),
		    err);
	if (!ret && t)
		ret = rd_tree_set_filter(t, filter, err);
	if (ret) {
		ret = refuse_err(c, err, ret);
		goto out;
	}
	if (t)
		rd_tree_keep_parents(t, e->o.remove_source);
	ret = server_mirror(c, e, o, filter, &mo, &fw, NULL, names->n ? 0 : cfg->nfixed,
			    cfg->fixed_paths, err);
	if (!ret)
		ret = run_job(c, cfg, e, o, NULL, sink, t, 1, summary, sumlen, err, -1);
out:
	rd_tree_close(t);
	rd_sink_close(sink);
	rd_filter_walk_free(fw);
	return ret;
}

int rd_server_serve(const struct rd_server_cfg *cfg, struct rd_conn *c, char *summary,
		    size_t sumlen, struct rd_err *err)
{
	uint8_t copy[RD_CTRL_MAX];
	size_t clen, off;
	struct rd_msg m;
	struct rd_msg_open *o = &m.u.open;
	const struct rd_module *mod, *first = NULL;
	struct rd_engine_opts eo = cfg->eo;
	struct rd_engine e;
	struct rd_sink *sink = NULL;
	struct rd_tree *t = NULL;
	char digest[RD_DIGEST_NAME_MAX + 1], rel[RD_PATH_MAX + 1];
	struct rd_tree_src srcs[RD_OPEN_PATHS_MAX];
	char (*rels)[RD_PATH_MAX + 1] = NULL;
	const char *feature;
	struct rd_filter *filter = NULL;
	struct names names = {NULL, 0, 0};
	struct rd_mirror_opts mo;
	struct rd_filter_walk *fw = NULL;
	int nsrcs = 0, modfd = -1, wantfd = -1, ret, i, relative, deletes, rmsrc;

	memset(&e, 0, sizeof(e));
	snprintf(summary, sumlen, "no request");
	ret = await_open(c, cfg->eo.stop, cfg->open_timeout_ms, copy, &clen, &m, err);
	if (ret)
		goto out;
	if (m.hdr.type == RD_MSG_LIST) {
		ret = rd_server__list_modules(cfg, c, summary, sumlen, err);
		goto out;
	}
	if (o->flags & ~RD_OF_KNOWN) {
		ret = refuse(c, err, RD_EPROTO, "OPEN from %s asks for unknown flags 0x%x",
			     rd_conn_info(c)->peer, (unsigned)(o->flags & ~RD_OF_KNOWN));
		goto out;
	}
	feature = too_new(o, rd_conn_info(c)->version);
	if (feature) {
		ret = refuse(c, err, RD_EPROTO, "OPEN from %s asks for %s on protocol %u",
			     rd_conn_info(c)->peer, feature, rd_conn_info(c)->version);
		goto out;
	}
	if ((o->flags & RD_OF_LIST) && o->mode != RD_MODE_PULL) {
		ret = refuse(c, err, RD_EPROTO, "OPEN from %s asks to list a push",
			     rd_conn_info(c)->peer);
		goto out;
	}
	if ((o->flags & RD_OF_PARTIAL_DIR) && o->mode != RD_MODE_PUSH) {
		ret = refuse(c, err, RD_EUSAGE,
			     "a partial directory is for the receiving side; on a pull the "
			     "client keeps its own partials");
		goto out;
	}
	if ((o->flags & RD_OF_PARTIAL_DIR) && (o->flags & RD_OF_NO_PARTIAL)) {
		ret = refuse(c, err, RD_EUSAGE,
			     "--partial-dir and --no-partial ask for opposite things");
		goto out;
	}
	/* its filter rules come right after OPEN, before anything is answered */
	if ((o->flags & RD_OF_SELECT) && (o->sel.nrules || o->sel.nnames)) {
		ret = read_rules(c, cfg, o, &filter, &names, err);
		if (ret)
			goto out;
	}
	relative = (o->flags & RD_OF_SELECT) && (o->sel.rules & RD_SEL_RELATIVE);
	/*
	 * --delete: in the directories a recursive walk lists whole, and no
	 * others (-R's implied ones and --files-from's parents go as
	 * RD_FF_IMPLIED)
	 */
	deletes = (o->flags & RD_OF_MIRROR) && (o->mir.flags & (RD_MF_DELETE | RD_MF_FORCE));
	rmsrc = (o->flags & RD_OF_MIRROR) && (o->mir.flags & RD_MF_REMOVE_SRC);
	if (rmsrc && (o->flags & RD_OF_RANGES)) {
		ret = refuse(c, err, RD_EUSAGE, "--remove-source-files does not work with ranges");
		goto out;
	}
	if ((o->flags & RD_OF_MIRROR) && (o->mir.flags & RD_MF_DELETE) &&
	    (!(o->flags & RD_OF_RECURSIVE) || (o->flags & RD_OF_RANGES))) {
		ret = refuse(c, err, RD_EUSAGE, "--delete needs -r, and no ranges");
		goto out;
	}
	if (names.n && o->npaths != 1) {
		ret = refuse(c, err, RD_EUSAGE, "--files-from names one source directory");
		goto out;
	}
	snprintf(digest, sizeof(digest), "%.*s", (int)o->digest.len, o->digest.ptr);
	/* The chunk size is ours to decide: at most what the client asked. */
	eo.chunk_size = o->chunk_size;
	if (cfg->max_chunk && eo.chunk_size > cfg->max_chunk)
		eo.chunk_size = cfg->max_chunk;
	eo.digest = digest[0] ? digest : RD_DIGEST_KEYED;
	ret = rd_engine_init(&e, &eo);
	if (ret) {
		ret = refuse(c, err, -ret, "%s", e.err.msg);
		goto out;
	}
	e.o.pack = !!(honoured(cfg, o) & RD_OF_PACK);
	e.o.batch = !!(honoured(cfg, o) & RD_OF_BATCH);
	e.o.wide = !!(honoured(cfg, o) & RD_OF_WIDE);
	e.o.items = !!(honoured(cfg, o) & RD_OF_ITEMS);
	e.o.list_sizes = !!(honoured(cfg, o) & RD_OF_LIST);
	/* -H as agreed; link groups named from protocol 10 on (rd_proto.h, FILE) */
	e.o.hardlinks = !!(honoured(cfg, o) & RD_OF_HARDLINKS);
	e.o.link_marks = e.o.hardlinks && rd_conn_info(c)->version >= RD_PROTO_LINKS;
	e.o.ranges = !!(honoured(cfg, o) & RD_OF_RANGES);
	e.o.select = !!(honoured(cfg, o) & RD_OF_SELECT);
	e.o.dry_run = e.o.select && (o->sel.rules & RD_SEL_DRY_RUN);
	e.o.mirror = (o->flags & RD_OF_MIRROR) && (o->mir.flags & RD_MF_DELETE);
	/* --remove-source-files on a pull: ours to do as the sender (never in a dry run) */
	e.o.remove_source = rmsrc && !e.o.dry_run;
	/* the window: the client's offer, at most ours (cfg->eo.window) */
	if (!(honoured(cfg, o) & RD_OF_WINDOW))
		e.o.window = RD_WINDOW_FILES;
	else if (o->window < e.o.window)
		e.o.window = o->window;
	if (cfg->fixed_mode) {
		ret = serve_fixed(cfg, c, &e, o, filter, &names, summary, sumlen, err);
		goto out;
	}
	if (o->mode == RD_MODE_PUSH && o->npaths != 1) {
		ret = refuse(c, err, RD_EUSAGE, "a push names exactly one destination");
		goto out;
	}
	if (!cfg->nmods) {
		ret = refuse(c, err, RD_ENOENT,
			     "this server exports no modules (its configuration has none)");
		goto out;
	}
	for (i = 0; i < o->npaths; i++) {
		mod = find_module(cfg, o->paths[i].ptr, o->paths[i].len, &off);
		if (!mod) {
			ret = refuse(c, err, RD_ENOENT, "unknown module '%.*s'",
				     (int)(memchr(o->paths[i].ptr, '/', o->paths[i].len)
						   ? (const char *)memchr(o->paths[i].ptr, '/',
									  o->paths[i].len) -
							     o->paths[i].ptr
						   : o->paths[i].len),
				     o->paths[i].ptr);
			goto out;
		}
		if (!first)
			first = mod;
		if (o->mode == RD_MODE_PUSH && mod->readonly) {
			ret = refuse(c, err, RD_EPERM, "module '%s' is read-only", mod->name);
			goto out;
		}
		/* Who may use it: decided before the module's directory is opened. */
		if (cfg->authorize) {
			ret = cfg->authorize(cfg->auth_ctx, mod, o->mode == RD_MODE_PUSH, digest,
					     sizeof(digest), err);
			if (ret) {
				ret = refuse_err(c, err, ret);
				goto out;
			}
		}
		/*
		 * Deleting in a module is a permission of its own (rdcpd.conf's
		 * delete), and so is removing a pull's sources (rsync: a
		 * read-only module refuses it)
		 */
		if (((o->mode == RD_MODE_PUSH && deletes) || (o->mode == RD_MODE_PULL && rmsrc)) &&
		    (!cfg->may_delete || !cfg->may_delete(cfg->auth_ctx, mod))) {
			ret = refuse(c, err, RD_EPERM,
				     "module '%s' does not allow %s: its delete setting is no for you",
				     mod->name,
				     rmsrc ? "removing its files (--remove-source-files)"
					   : "deleting (--delete, --force)");
			goto out;
		}
		if (modfd >= 0)
			close(modfd);
		ret = rd_module_open(mod, &modfd, err);
		if (ret) {
			/* the client hears that; the log gets what changed */
			struct rd_err why = *err;

			if (why.sys_errno == EACCES)
				ret = refuse(c, err, RD_EPERM,
					     "module '%s': its directory is closed to the user "
					     "the module acts as",
					     mod->name);
			else
				ret = refuse(c, err, RD_ESYS,
					     "module '%s' is unavailable on the server", mod->name);
			rd_err_copy(err, &why);
			goto out;
		}
		snprintf(rel, sizeof(rel), "%.*s", (int)(o->paths[i].len - off),
			 o->paths[i].ptr + off);
		if (o->mode == RD_MODE_PUSH) {
			/* write only: nothing there is compared (no SUM tells what it holds) */
			ret = rd_sink_open(&sink, modfd, rel,
					   sink_flags_for(cfg, o) |
					       (mod->write_only ? RD_SINK_FRESH : 0),
					   cfg->umask, err);
			if (ret) {
				char why[RD_ERR_MSG_MAX];

				snprintf(why, sizeof(why), "%s", err->msg);
				ret = refuse(c, err, -ret, "module %s: %s", mod->name, why);
				goto out;
			}
			{
				char label[RD_MODULE_NAME_MAX + RD_PATH_MAX + 16];

				snprintf(label, sizeof(label), "module %s%s%s", mod->name,
					 rel[0] ? " at " : "", rel);
				rd_sink_set_label(sink, label);
			}
			ret = set_dests(c, sink, o, mod, modfd, rel, err);
			if (ret)
				goto out;
		} else if (o->flags & RD_OF_RANGES) {
			/* a ranged pull: one base, the list comes after OPEN_OK */
			ret = want_base(c, mod, modfd, rel, o->npaths, &wantfd, err);
			if (ret)
				goto out;
		} else {
			if (!rels) {
				rels = calloc(RD_OPEN_PATHS_MAX, sizeof(*rels));
				if (!rels) {
					ret = refuse(c, err, RD_ENOMEM, "out of memory");
					goto out;
				}
			}
			if (names.n) {
				/* --files-from: the names lie beneath this directory */
				ret =
				    names_base(c, mod, modfd, rel, &srcs[nsrcs], rels[nsrcs], err);
			} else {
				ret = pull_source(c, mod, modfd, rel,
						  (o->flags & RD_OF_SELECT) &&
						      (o->sel.pflags[i] & RD_PF_CONTENTS),
						  relative, o->sel.skip[i], &srcs[nsrcs],
						  rels[nsrcs], err);
			}
			if (ret)
				goto out;
			nsrcs++;
		}
	}
	if (cfg->chunk_limit) {
		/* a paced session (max rate): chunks it can move well within the idle timeout */
		uint32_t lim = cfg->chunk_limit(cfg->auth_ctx);

		if (lim >= RD_CHUNK_MIN && lim < e.o.chunk_size)
			e.o.chunk_size = lim;
	}
	ret = rd_engine_set_digest(&e, digest[0] ? digest : RD_DIGEST_KEYED);
	if (ret) {
		ret = refuse(c, err, -ret, "%s", e.err.msg);
		goto out;
	}
	if (o->mode == RD_MODE_PULL && wantfd < 0) {
		if (names.n)
			ret = rd_tree_open_names(&t, srcs[0].dirfd, (const char *const *)names.v,
						 (int)names.n, names_flags(cfg, o), err);
		else
			ret = rd_tree_open(&t, srcs, nsrcs, tree_flags(cfg, o), err);
		if (!ret)
			ret = rd_tree_set_filter(t, filter, err);
		if (ret) {
			ret = refuse_err(c, err, ret);
			goto out;
		}
		/* each source's directory, to remove it once confirmed */
		rd_tree_keep_parents(t, e.o.remove_source);
	}
	ret = server_mirror(c, &e, o, filter, &mo, &fw, srcs, nsrcs, NULL, err);
	if (!ret)
		ret = run_job(c, cfg, &e, o, first, sink, t, 0, summary, sumlen, err, wantfd);
out:
	for (i = 0; i < nsrcs; i++)
		close(srcs[i].dirfd);
	if (wantfd >= 0)
		close(wantfd);
	free(rels);
	rd_tree_close(t);
	rd_sink_close(sink);
	rd_filter_walk_free(fw);
	rd_filter_free(filter);
	names_free(&names);
	if (modfd >= 0)
		close(modfd);
	rd_engine_fini(&e);
	return ret;
}

unsigned rd_session_window_fit(uint64_t nofile, unsigned sessions, unsigned reserve)
{
	unsigned w;

	for (w = RD_WINDOW_DEFAULT; w > RD_WINDOW_FILES; w -= RD_WINDOW_FILES)
		if ((uint64_t)sessions * RD_SESSION_FDS_FOR(w) + reserve <= nofile)
			return w;
	return RD_WINDOW_FILES;
}
