// SPDX-License-Identifier: MIT
/*
 * Pulls (issue 32): the sources are on the servers (HOSTS::MODULE/PATH),
 * DEST is a directory every rank sees. The ranks work the same way in
 * reverse:
 *  - listing: rank i lists source i (mod N) with a session that only lists
 *    (rd_engine_opts.list: nothing is asked for); -H link groups come
 *    grouped by the server's walk;
 *  - the plan as for pushes (rd_mpi_plan.c): regular files dealt by cost,
 *    large ones cut into ranges;
 *  - each rank makes its directories here (parents first), then pulls its
 *    share with one ranged pull (rd_proto.h section 6: WANT) per batch of
 *    its list from its server (rank mod servers), ranges into the shared
 *    partial of the file here (rd_sink_range.c), symlinks and specials made
 *    here; then the COMMITs (here: the same checks of the sealed records a
 *    server makes), hard links, directories' metadata.
 * Every local name goes through the rank's sink on DEST: confined beneath
 * it, made with *at() calls, never followed.
 */
#include "lib/mpi/rd_mpi_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/tree/rd_tree.h"

/* One pull source: what to list, the base of its WANTs, the root's name to strip. */
struct psrc {
	char list[4097]; /* "module/path": what the listing session asks for */
	char base[4097]; /* the ranged pulls' base */
	char root[256];	 /* the listing's top name: stripped for a source's contents */
	int contents;
};

static struct psrc *g_psrc; /* per job; one job per process */

static unsigned sink_flags(const struct job *j)
{
	unsigned f = j->o->flags;

	return RD_SINK_PRESERVE_TIMES | ((f & RD_OF_PRESERVE) ? RD_SINK_PRESERVE_MODE : 0) |
	       ((f & RD_OF_OWNER) ? RD_SINK_PRESERVE_OWNER : 0) |
	       ((f & RD_OF_GROUP) ? RD_SINK_PRESERVE_GROUP : 0) |
	       ((f & RD_OF_FSYNC) ? RD_SINK_FSYNC : 0) | ((f & RD_OF_XATTRS) ? RD_SINK_XATTRS : 0) |
	       ((f & RD_OF_ACLS) ? RD_SINK_ACLS : 0) | ((f & RD_OF_DEVICES) ? RD_SINK_DEVICES : 0) |
	       ((f & RD_OF_SPECIALS) ? RD_SINK_SPECIALS : 0);
}

int rd_mpi__pull_setup(struct job *j)
{
	const struct rd_mpi_opts *o = j->o;
	struct rd_mpi_dest d;
	struct stat st;
	int i, ret;

	j->pull = 1;
	j->dest_fd = -1;
	j->nsrc = o->nsources;
	g_psrc = calloc((size_t)o->nsources, sizeof(*g_psrc));
	j->src = calloc((size_t)o->nsources, sizeof(*j->src));
	if (!g_psrc || !j->src)
		return rd_err_set(&j->err, RD_ENOMEM, ENOMEM, "sources");
	for (i = 0; i < o->nsources; i++) {
		struct psrc *p = &g_psrc[i];
		const char *arg = o->sources[i], *slash;
		size_t n = strlen(arg);

		j->src[i].fd = -1;
		ret = rd_mpi_dest_parse(&d, arg, &j->err);
		if (ret <= 0)
			return ret ? ret
				   : rd_err_set(
					 &j->err, RD_EUSAGE, 0,
					 "source %s: a pull's sources are all on the servers "
					 "(HOSTS::MODULE/PATH)",
					 arg);
		rd_hostlist_free(&d.hosts);
		snprintf(p->list, sizeof(p->list), "%s", d.path);
		slash = strrchr(d.path, '/');
		/* a module names no entry of its own: its contents, always */
		p->contents = (n && arg[n - 1] == '/') || !slash;
		snprintf(p->root, sizeof(p->root), "%s", slash ? slash + 1 : d.path);
		if (p->contents)
			snprintf(p->base, sizeof(p->base), "%s", d.path);
		else
			snprintf(p->base, sizeof(p->base), "%.*s", (int)(slash - d.path), d.path);
	}
	/* DEST: made by rank 0 if missing (its parent must exist), then opened by all */
	if (j->rank == 0 && mkdir(o->local_dest, 0777) < 0 && errno != EEXIST)
		rd_err_set(&j->err, RD_ENOENT, errno, "destination %s", o->local_dest);
	MPI_Barrier(j->comm);
	if (j->err.msg[0])
		return -RD_ENOENT;
	j->dest_fd = open(o->local_dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dest_fd < 0 || fstat(j->dest_fd, &st) < 0)
		return rd_err_set(&j->err, RD_ENOENT, errno, "destination %s", o->local_dest);
	ret = rd_sink_open(&j->sink, j->dest_fd, ".", sink_flags(j), o->umask, &j->err);
	if (ret)
		return ret;
	rd_sink_set_label(j->sink, o->local_dest);
	/* rsync's rules for what the ranks make here themselves (commits, links, nodes) */
	rd_session_sink_select(j->sink, &o->sel);
	rd_sink_set_chunking(j->sink, j->cs, "", 1);
	return 0;
}

/* --- the listing --- */

struct lister {
	struct job *j;
	int src;
	int bad;
};

/* The listing's wire path as a path beneath DEST ("" for DEST itself); -1: refused. */
static int local_path(const struct psrc *p, const char *w, size_t n, char *out)
{
	size_t rl = strlen(p->root);

	/* every entry lies under the top name asked for (scp CVE-2019-6111) */
	if (n < rl || memcmp(w, p->root, rl) || (n > rl && w[rl] != '/'))
		return -1;
	if (p->contents)
		snprintf(out, RD_PATH_MAX + 1, "%.*s", n > rl ? (int)(n - rl - 1) : 0,
			 n > rl ? w + rl + 1 : "");
	else
		snprintf(out, RD_PATH_MAX + 1, "%.*s", (int)n, w);
	return 0;
}

static void on_listed(void *ctx, const struct rd_msg_file *f)
{
	struct lister *ls = ctx;
	struct job *j = ls->j;
	const struct psrc *p = &g_psrc[ls->src];
	char rel[RD_PATH_MAX + 1], tgt[RD_PATH_MAX + 1];
	struct rec r;

	if ((f->flags & RD_FF_POST) || ls->bad)
		return;
	if (local_path(p, f->path.ptr, f->path.len, rel)) {
		ls->bad = 1;
		return;
	}
	memset(&r, 0, sizeof(r));
	r.src = (uint16_t)ls->src;
	r.mode = f->mode;
	r.uid = f->uid;
	r.gid = f->gid;
	r.msec = f->mtime_sec;
	r.mnsec = f->mtime_nsec;
	r.nlink = 1;
	switch (f->type) {
	case RD_FT_REG:
		r.type = RT_REG;
		r.size = f->size;
		break;
	case RD_FT_DIR:
		r.type = RT_DIR;
		break;
	case RD_FT_SYMLINK:
		r.type = RT_LNK;
		snprintf(tgt, sizeof(tgt), "%.*s", (int)f->target.len, f->target.ptr);
		r.target = strdup(tgt);
		break;
	case RD_FT_HLINK:
		r.type = RT_HLINK;
		if (local_path(p, f->target.ptr, f->target.len, tgt)) {
			ls->bad = 1;
			return;
		}
		r.target = strdup(tgt);
		break;
	default:
		r.type = RT_SPECIAL;
		r.size = f->size; /* the device number */
		break;
	}
	if (r.type == RT_REG) {
		j->files++;
		j->bytes += r.size;
	} else if (r.type == RT_DIR) {
		j->dirs++;
	} else {
		j->others++;
	}
	r.rel = strdup(rel);
	if (!r.rel || ((r.type == RT_LNK || r.type == RT_HLINK) && !r.target) ||
	    rd_mpi__recs_add(&j->mine, &r)) {
		free(r.rel);
		free(r.target);
		ls->bad = 1;
	}
}

static void client_opts(struct job *j, struct rd_client_opts *co, const char **remote,
			const char **local)
{
	const struct rd_mpi_opts *o = j->o;

	rd_client_opts_init(co);
	co->host = o->dest->hosts.host[j->rank % (int)o->dest->hosts.n];
	co->port = o->dest->port[0] ? o->dest->port : NULL;
	co->push = 0;
	co->remote = remote;
	co->nremote = 1;
	co->local = local;
	co->nlocal = 1;
	co->sink_flags = sink_flags(j);
	co->umask = o->umask;
	co->eo = o->eo;
	co->eo.stop = o->stop;
	co->co = o->co;
	/* we receive: the quick check and transfer rules are our sinks' */
	co->sel = o->sel;
	co->need_select = o->need_select;
	rd_mpi__tls(j, co);
}

int rd_mpi__pull_list(struct job *j)
{
	const char *remote[1], *local[1] = {j->o->local_dest};
	struct rd_client_opts co;
	struct rd_client *cl = calloc(1, sizeof(*cl));
	struct lister ls;
	int i, ret = 0;

	if (!cl)
		return -RD_ENOMEM;
	for (i = j->rank; i < j->nsrc; i += j->size) {
		memset(&ls, 0, sizeof(ls));
		ls.j = j;
		ls.src = i;
		remote[0] = g_psrc[i].list;
		client_opts(j, &co, remote, local);
		/* what the listing must carry: the tree, link groups, specials */
		co.flags = RD_OF_RECURSIVE |
			   (j->o->flags & (RD_OF_HARDLINKS | RD_OF_DEVICES | RD_OF_SPECIALS));
		co.list = on_listed;
		co.list_ctx = &ls;
		/*
		 * The server walks: it leaves out what our filter rules exclude,
		 * their transfer paths from the root rsync's would have (the
		 * source's contents: below it; its entries keep its name)
		 */
		if (g_psrc[i].contents)
			co.sel.pflags[0] |= RD_PF_CONTENTS;
		co.filter = j->o->filter;
		if (co.filter)
			co.need_select = 1;
		memset(cl, 0, sizeof(*cl));
		ret = rd_client_run(cl, &co);
		if (ls.bad) {
			rd_mpi__fail(j, g_psrc[i].list,
				     "the server listed an entry outside what was asked for");
			ret = -RD_EPROTO;
		} else if (ret == -RD_EPARTIAL) {
			ret = 0; /* its notes are failures of entries, not of the listing */
		} else if (ret) {
			rd_mpi__fail(j, j->o->sources[i], cl->err.msg);
			j->walk_failed++;
			ret = 0;
		}
	}
	free(cl);
	return ret;
}

/* --- the phases --- */

/* Directories of this rank, parents first (the list is in tree order). */
static void make_dirs(struct job *j)
{
	struct rd_sink_meta m;
	size_t i;
	int ret;

	for (i = 0; i < j->data.n; i++) {
		const struct rec *r = &j->data.r[i];

		if (r->type != RT_DIR || !r->rel[0])
			continue;
		memset(&m, 0, sizeof(m));
		m.mode = r->mode;
		ret = rd_sink_mkdir(j->sink, r->rel, strlen(r->rel), 0, &m);
		if (ret < 0)
			rd_mpi__fail(j, r->rel, rd_sink_err(j->sink)->msg);
	}
}

static void meta_of(const struct rec *r, struct rd_sink_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->mode = r->mode;
	m->uid = r->uid;
	m->gid = r->gid;
	m->size = r->size;
	m->mtime_sec = r->msec;
	m->mtime_nsec = r->mnsec;
}

/* Symlinks and specials of this rank, here. */
static void make_nodes(struct job *j)
{
	struct rd_sink_meta m;
	size_t i;
	int ret;

	for (i = 0; i < j->data.n; i++) {
		const struct rec *r = &j->data.r[i];

		meta_of(r, &m);
		if (r->type == RT_LNK)
			ret = rd_sink_symlink(j->sink, r->rel, strlen(r->rel), 0, r->target,
					      strlen(r->target), &m);
		else if (r->type == RT_SPECIAL)
			ret = rd_sink_special(j->sink, r->rel, strlen(r->rel), 0, &m, r->size);
		else
			continue;
		if (ret < 0)
			rd_mpi__fail(j, r->rel, rd_sink_err(j->sink)->msg);
		else
			j->ok++;
	}
}

/* The data: this rank's files and ranges, in ranged pulls of at most the server's list. */
static void *pull_thread(void *arg)
{
	struct phase *ph = arg;
	struct job *j = ph->j;
	const char *remote[1], *local[1] = {j->o->local_dest};
	struct rd_want_item *w = calloc(ph->v->n ? ph->v->n : 1, sizeof(*w));
	struct rd_client_opts co;
	struct rd_pace pace;
	size_t i = 0, k, n, bytes;
	int s, ret;

	rd_pace_init(&pace, j->o->bwlimit);

	for (s = 0; w && s < j->nsrc; s++) {
		/* one source's files at a time: its base */
		for (i = 0; i < ph->v->n;) {
			for (n = 0, bytes = 0; i < ph->v->n && n < RD_WANT_ITEMS_MAX / 2 &&
					       bytes < RD_WANT_BYTES_MAX / 2;
			     i++) {
				const struct rec *r = &ph->v->r[i];

				if (r->src != s || r->type != RT_REG)
					continue;
				memset(&w[n], 0, sizeof(w[n]));
				w[n].kind =
				    r->kind == RD_TREE_ITEM_RANGE ? RD_WANT_RANGE : RD_WANT_WHOLE;
				w[n].off = r->kind == RD_TREE_ITEM_RANGE ? r->off : 0;
				w[n].len = r->kind == RD_TREE_ITEM_RANGE ? r->len : 0;
				w[n].size = r->size;
				w[n].mtime_sec = r->msec;
				w[n].mtime_nsec = r->mnsec;
				w[n].path.ptr = r->rel;
				w[n].path.len = (uint16_t)strlen(r->rel);
				bytes += w[n].path.len;
				n++;
			}
			if (!n)
				continue;
			remote[0] = g_psrc[s].base;
			client_opts(j, &co, remote, local);
			co.flags = j->o->flags & ~RD_OF_RECURSIVE;
			co.wants = w;
			co.nwants = n;
			co.want_job = j->id;
			co.eo.pace = j->o->bwlimit ? &pace : NULL;
			for (k = 0; k < n; k++)
				if (w[k].kind == RD_WANT_RANGE)
					rd_mpi__range_json(j, w[k].path.ptr, w[k].off, w[k].len);
			memset(&ph->cl, 0, sizeof(ph->cl));
			ph->cl.e.report = rd_mpi__on_report;
			ph->cl.e.report_ctx = ph;
			ret = rd_client_run(&ph->cl, &co);
			if (ret && ret != -RD_EPARTIAL) {
				rd_mpi__fail(j, co.host, ph->cl.err.msg);
				if (n > 1)
					j->failed += n - 1;
			}
			j->moved += rd_stat_get(&ph->cl.e.st.bytes_data);
			j->resumed += rd_stat_get(&ph->cl.e.st.bytes_resumed);
		}
	}
	if (!w)
		rd_mpi__fail(j, j->o->local_dest, "out of memory");
	j->ok += (uint64_t)ph->ok_seen;
	free(w);
	atomic_store(&ph->over, 1);
	return NULL;
}

static void commits(struct job *j)
{
	struct rd_sink_meta m;
	struct rd_sink_file *f;
	size_t i;
	int ret;

	for (i = 0; i < j->commits.n; i++) {
		const struct rec *r = &j->commits.r[i];

		meta_of(r, &m);
		ret = rd_sink_range_commit(j->sink, r->rel, strlen(r->rel), 0, &m, j->id, &f);
		if (ret == RD_SINK_RANGE_LEAVE) { /* a transfer rule: as it is */
			j->ok++;
			continue;
		}
		if (ret >= 0)
			ret = rd_sink_file_commit(f, ret == RD_SINK_RANGE_SAME);
		if (ret < 0)
			rd_mpi__fail(j, r->rel, rd_sink_err(j->sink)->msg);
		else
			j->ok++;
	}
}

static void links(struct job *j)
{
	struct rd_sink_meta m;
	size_t i;

	for (i = 0; i < j->links.n; i++) {
		const struct rec *r = &j->links.r[i];

		/*
		 * The group's first file was placed by whichever rank pulled it:
		 * taken as this sink's only if it is what the listing said (its
		 * size and mtime), and forgotten again with the link (last).
		 */
		meta_of(r, &m);
		if (rd_sink_link_adopt(j->sink, r->target, strlen(r->target), &m) < 0 ||
		    rd_sink_hardlink(j->sink, r->rel, strlen(r->rel), 0, r->target,
				     strlen(r->target), 1) < 0)
			rd_mpi__fail(j, r->rel, rd_sink_err(j->sink)->msg);
		else
			j->ok++;
	}
}

static void posts(struct job *j)
{
	struct rd_sink_meta m;
	size_t i;

	for (i = j->posts.n; i-- > 0;) {
		const struct rec *r = &j->posts.r[i];

		if (!r->rel[0])
			continue; /* DEST itself keeps its own */
		meta_of(r, &m);
		if (rd_sink_dir_post(j->sink, r->rel, strlen(r->rel), 0, &m) < 0)
			rd_mpi__fail(j, r->rel, rd_sink_err(j->sink)->msg);
	}
}

int rd_mpi__pull_phases(struct job *j, double t0, uint64_t total)
{
	make_dirs(j);
	MPI_Barrier(j->comm);
	make_nodes(j);
	rd_mpi__phase(j, &j->data, t0, total, pull_thread);
	commits(j);
	MPI_Barrier(j->comm);
	links(j);
	MPI_Barrier(j->comm);
	posts(j);
	MPI_Barrier(j->comm);
	return 0;
}

void rd_mpi__pull_free(struct job *j)
{
	rd_sink_close(j->sink);
	j->sink = NULL;
	if (j->dest_fd >= 0)
		close(j->dest_fd);
	j->dest_fd = -1;
	free(g_psrc);
	g_psrc = NULL;
}
