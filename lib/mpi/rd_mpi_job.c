// SPDX-License-Identifier: MIT
/*
 * The job: sources and destination set up alike on every rank, the walk,
 * the plan, then the phases. Each phase is one session per rank that has
 * something to send in it, with its server (hosts[rank % n]); the session
 * runs on a thread of its own while the rank's main thread, the only one
 * that calls MPI, takes part in one reduction per tick (bytes moved, and
 * whether the rank's phase is over): rank 0 hears the job's progress from
 * it, and when every rank is over, that reduction is the phase's barrier.
 * Phases: data (each rank's directories, then its files and ranges; a
 * directory is made, mkdir -p like, before anything in it), COMMIT of the
 * files moved in ranges, hard links, directories' metadata.
 */
#include "lib/mpi/rd_mpi_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls.h"
#include "lib/tree/rd_tree.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void jappend(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	char *b;

	if (*len + n + 2 > *cap) {
		b = realloc(*buf, (*cap + n) * 2 + 256);
		if (!b)
			return;
		*buf = b;
		*cap = (*cap + n) * 2 + 256;
	}
	if (*len)
		(*buf)[(*len)++] = ',';
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

/* JSON string of raw bytes (escaped, bounded). */
static void jstr(char *out, size_t cap, const char *s)
{
	size_t o = 0;

	out[o++] = '"';
	for (; *s && o + 8 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, cap - o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	out[o] = '\0';
}

void rd_mpi__range_json(struct job *j, const char *path, uint64_t off, uint64_t len)
{
	char p[1200], obj[1400];

	if (j->nrange_json >= 32)
		return;
	jstr(p, sizeof(p), path);
	snprintf(obj, sizeof(obj), "{\"path\":%s,\"offset\":%llu,\"length\":%llu}", p,
		 (unsigned long long)off, (unsigned long long)len);
	jappend(&j->rangejson, &j->rlen, &j->rcap, obj);
	j->nrange_json++;
}

void rd_mpi__fail(struct job *j, const char *path, const char *msg)
{
	char p[1200], m[1200], obj[2600];

	j->failed++;
	if (!j->first_error[0]) {
		char e[300];

		rd_escape(e, sizeof(e), path, strlen(path));
		snprintf(j->first_error, sizeof(j->first_error), "%s: %s", e, msg);
	}
	if (j->nerr++ >= RD_MPI_ERRORS)
		return;
	jstr(p, sizeof(p), path);
	jstr(m, sizeof(m), msg);
	snprintf(obj, sizeof(obj), "{\"rank\":%d,\"path\":%s,\"error\":%s}", j->rank, p, m);
	jappend(&j->errjson, &j->errlen, &j->errcap, obj);
}

static int pin_check(void *ctx, const char *fp, struct rd_err *err)
{
	struct job *j = ctx;
	int added = 0;

	/* every rank of a node may ask at once: the file is locked (flock) */
	return rd_known_hosts_check(j->o->known_hosts, j->pin_name, fp, &added, err);
}

void rd_mpi__tls(struct job *j, struct rd_client_opts *co)
{
	co->tls = j->o->tls;
	co->tls.host = co->host;
	if (co->tls.auth != RD_AUTH_USER || co->tls.ca_file || !j->o->known_hosts)
		return;
	if (!co->port || atoi(co->port) == RD_DEFAULT_PORT)
		snprintf(j->pin_name, sizeof(j->pin_name), "%s", co->host);
	else
		snprintf(j->pin_name, sizeof(j->pin_name), "[%s]:%s", co->host, co->port);
	co->tls.pin = pin_check;
	co->tls.pin_ctx = j;
}

/* --- one phase: a list of records as a tree of entries --- */

/* Is a a directory prefix of b ("x" of "x/y"), or equal? */
static int dir_prefix(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strncmp(a, b, n) && (b[n] == '/' || !b[n]);
}

/*
 * The next entry. Before each record of the data phase, the directories
 * above it not yet made on this session (mkdir -p): the source's part of
 * its path from the source, the destination's part (DEST's own name, when
 * the sources go inside it) as the source's root, which only makes it.
 */
static int next_item(void *ctx, struct rd_tree_item *it)
{
	struct phase *ph = ctx;
	struct job *j = ph->j;
	const struct rec *r;
	const char *prefix;
	size_t pl, n;
	char *slash;

	for (;;) {
		if (ph->next >= ph->v->n)
			return 0;
		r = &ph->v->r[ph->next];
		if (rd_mpi__wire(j, r, ph->wire) < 0) {
			ph->next++; /* the module root itself: not ours to touch */
			continue;
		}
		break;
	}
	prefix = j->src[r->src].prefix;
	pl = strlen(prefix);
	if (r->kind == RD_TREE_ITEM_NODE || r->kind == RD_TREE_ITEM_RANGE) {
		/* the next ancestor of the record's wire path not yet made */
		for (slash = ph->wire + ph->anc_at; (slash = strchr(slash, '/')); slash++) {
			n = (size_t)(slash - ph->wire);
			snprintf(ph->anc, sizeof(ph->anc), "%.*s", (int)n, ph->wire);
			ph->anc_at = n + 1;
			if (dir_prefix(ph->anc, ph->chain))
				continue;
			snprintf(ph->chain, sizeof(ph->chain), "%s", ph->anc);
			it->dirfd = j->src[r->src].fd;
			it->rel = n > pl ? ph->anc + pl + (pl ? 1 : 0) : "";
			if (!j->src[r->src].dir && n >= pl)
				it->rel = "";
			it->wire = ph->anc;
			it->kind = RD_TREE_ITEM_NODE;
			return 1;
		}
	}
	ph->anc_at = 0;
	ph->next++;
	ph->entries++;
	it->dirfd = j->src[r->src].fd;
	it->rel = r->rel;
	it->wire = ph->wire;
	it->kind = r->kind;
	it->job = j->id;
	it->off = r->off;
	it->len = r->len;
	it->size = r->size;
	it->mtime_sec = r->msec;
	it->mtime_nsec = r->mnsec;
	it->target = r->target;
	it->ff = r->ff;
	if (r->type == RT_DIR && r->kind == RD_TREE_ITEM_NODE)
		snprintf(ph->chain, sizeof(ph->chain), "%s", ph->wire);
	if (r->kind == RD_TREE_ITEM_RANGE)
		rd_mpi__range_json(j, ph->wire, r->off, r->len);
	return 1;
}

void rd_mpi__on_report(void *ctx, const char *path, size_t len, int status, const char *msg)
{
	struct phase *ph = ctx;
	char p[RD_PATH_MAX + 1];

	if (status >= 0) {
		ph->ok_seen++;
		return;
	}
	snprintf(p, sizeof(p), "%.*s", (int)len, path);
	rd_mpi__fail(ph->j, p, msg ? msg : rd_status_name(status));
}

static void *phase_thread(void *arg)
{
	struct phase *ph = arg;
	struct job *j = ph->j;
	const struct rd_mpi_opts *o = j->o;
	struct rd_client_opts co;
	const char *remote[1] = {j->open_path};
	struct rd_tree *t = NULL;
	struct rd_pace pace;
	char why[600];
	int ret;

	rd_client_opts_init(&co);
	co.host = o->dest->hosts.host[j->rank % (int)o->dest->hosts.n];
	co.port = o->dest->port[0] ? o->dest->port : NULL;
	co.push = 1;
	co.remote = remote;
	co.nremote = 1;
	co.flags = o->flags | RD_OF_RANGES;
	co.umask = o->umask;
	co.eo = o->eo;
	co.eo.stop = o->stop;
	co.co = o->co;
	/* rsync's rules: the servers decide by them (SELECT), and get the filter rules (RULES) */
	co.sel = o->sel;
	co.filter = o->filter;
	co.need_select = o->need_select;
	rd_mpi__tls(ph->j, &co);
	if (o->bwlimit) {
		rd_pace_init(&pace, o->bwlimit);
		co.eo.pace = &pace;
	}
	ret = rd_tree_open_list(&t, next_item, ph, o->flags & RD_TREE_FLAGS, &ph->cl.err);
	if (!ret) {
		co.tree = t;
		ph->cl.e.report = rd_mpi__on_report;
		ph->cl.e.report_ctx = ph;
		ret = rd_client_run(&ph->cl, &co);
	}
	if (ret && ret != -RD_EPARTIAL) {
		/* the session failed: what it had not confirmed is this rank's failure */
		snprintf(why, sizeof(why), "%s", ph->cl.err.msg);
		rd_mpi__fail(j, co.host, why);
		/* at least: the entries not confirmed (those made as ancestors count as confirmed) */
		if (ph->v->n > (uint64_t)ph->ok_seen + 1)
			j->failed += ph->v->n - (uint64_t)ph->ok_seen - 1;
	}
	j->moved += rd_stat_get(&ph->cl.e.st.bytes_data);
	j->resumed += rd_stat_get(&ph->cl.e.st.bytes_resumed);
	j->ok += (uint64_t)ph->ok_seen;
	ph->ret = ret;
	rd_tree_close(t);
	atomic_store(&ph->over, 1);
	return NULL;
}

/*
 * One phase on every rank: our session (if we have entries) on a thread;
 * here one reduction per tick until all are over. Returns our session's
 * status.
 */
int rd_mpi__phase(struct job *j, const struct recs *v, double t0, uint64_t total,
		  void *(*fn)(void *))
{
	struct phase *ph = calloc(1, sizeof(*ph));
	uint64_t in[2], out[2];
	pthread_t th;
	int started = 0, ret = 0, w, tick = j->o->tick_ms > 0 ? j->o->tick_ms : 500;

	if (!ph)
		ret = -RD_ENOMEM;
	if (ph) {
		ph->j = j;
		ph->v = v;
		if (v->n && !pthread_create(&th, NULL, fn, ph))
			started = 1;
		else if (v->n)
			ret = -RD_ENOMEM;
	}
	for (;;) {
		int over = !started || atomic_load(&ph->over);

		in[0] = j->moved + (started && !over ? rd_stat_get(&ph->cl.e.st.bytes_data) : 0);
		in[1] = (uint64_t)over;
		MPI_Allreduce(in, out, 2, MPI_UINT64_T, MPI_SUM, j->comm);
		if (j->rank == 0 && j->o->progress)
			j->o->progress(j->o->ctx, out[0], total, now_s() - t0);
		if (out[1] == (uint64_t)j->size)
			break;
		/* the next round at the tick, or at once when our session ends */
		for (w = 0; w < tick && !(!started || atomic_load(&ph->over)); w += 5)
			usleep(5000);
	}
	if (started) {
		pthread_join(th, NULL);
		ret = ph->ret;
	}
	free(ph);
	return ret;
}

/* --- setup --- */

static int setup_sources(struct job *j)
{
	const struct rd_mpi_opts *o = j->o;
	const char *dpath = o->dest->path, *slash = strrchr(dpath, '/'), *base;
	struct stat st;
	int i;

	/* every session OPENs DEST's parent; DEST's own name starts every wire path */
	if (slash) {
		snprintf(j->open_path, sizeof(j->open_path), "%.*s", (int)(slash - dpath), dpath);
		base = slash + 1;
	} else {
		snprintf(j->open_path, sizeof(j->open_path), "%s", dpath);
		base = "";
	}
	j->nsrc = o->nsources;
	j->src = calloc((size_t)o->nsources, sizeof(*j->src));
	if (!j->src)
		return rd_err_set(&j->err, RD_ENOMEM, ENOMEM, "sources");
	for (i = 0; i < o->nsources; i++) {
		struct src *s = &j->src[i];
		const char *p = o->sources[i];
		size_t n = strlen(p);
		int contents = n > 1 && p[n - 1] == '/';
		char *dup = strdup(p), *b;

		s->fd = -1;
		if (!dup)
			return rd_err_set(&j->err, RD_ENOMEM, ENOMEM, "sources");
		while (n > 1 && dup[n - 1] == '/')
			dup[--n] = '\0';
		if (stat(dup, &st) < 0) {
			rd_err_set(&j->err, RD_ENOENT, errno, "source %s", p);
			free(dup);
			return -RD_ENOENT;
		}
		b = strrchr(dup, '/');
		b = b ? b + 1 : dup;
		if (!strcmp(b, ".") || !strcmp(b, ".."))
			contents = 1; /* "." names no entry: its contents */
		if (S_ISDIR(st.st_mode)) {
			if (!(o->flags & RD_OF_RECURSIVE)) {
				rd_err_set(&j->err, RD_EUSAGE, 0,
					   "source %s is a directory (use -r or -a)", p);
				free(dup);
				return -RD_EUSAGE;
			}
			s->dir = 1;
			s->contents = contents;
			if (!contents)
				snprintf(s->tname, sizeof(s->tname), "%s", b);
			s->fd = open(dup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			snprintf(s->prefix, sizeof(s->prefix), "%s%s%s", base,
				 base[0] && !contents ? "/" : "", contents ? "" : b);
		} else if (S_ISREG(st.st_mode)) {
			char *par = strndup(dup, (size_t)(b - dup));

			snprintf(s->name, sizeof(s->name), "%s", b);
			s->fd = open(par && par[0] ? par : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			free(par);
			snprintf(s->prefix, sizeof(s->prefix), "%s", base);
		} else {
			rd_err_set(&j->err, RD_EUSAGE, 0,
				   "source %s: not a regular file or directory", p);
			free(dup);
			return -RD_EUSAGE;
		}
		/* -F: the merge files of the parents, as the file system has them */
		if (o->filter && !(s->real = realpath(dup, NULL))) {
			rd_err_set(&j->err, RD_ENOENT, errno, "source %s", p);
			free(dup);
			return -RD_ENOENT;
		}
		free(dup);
		if (s->fd < 0)
			return rd_err_set(&j->err, RD_ESYS, errno, "source %s", p);
	}
	return 0;
}

/* Rank 0's view of every rank (its JSON object) and of every failure. */
static int gather_json(struct job *j, const char *mine, char **out)
{
	int len = (int)strlen(mine), *lens = NULL, *disp = NULL, k, tot = 0;
	char *buf = NULL;

	if (j->rank == 0) {
		lens = calloc((size_t)j->size, sizeof(int));
		disp = calloc((size_t)j->size, sizeof(int));
	}
	MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, j->comm);
	if (j->rank == 0 && lens && disp) {
		for (k = 0; k < j->size; k++) {
			disp[k] = tot;
			tot += lens[k];
		}
		buf = calloc(1, (size_t)tot + (size_t)j->size + 1);
	}
	MPI_Gatherv(mine, len, MPI_CHAR, buf, lens, disp, MPI_CHAR, 0, j->comm);
	if (j->rank == 0 && buf) {
		/* the non-empty ones joined by ',' */
		char *joined = calloc(1, (size_t)tot + (size_t)j->size + 1);
		size_t o = 0;

		for (k = 0; joined && k < j->size; k++) {
			if (!lens[k])
				continue;
			if (o)
				joined[o++] = ',';
			memcpy(joined + o, buf + disp[k], (size_t)lens[k]);
			o += (size_t)lens[k];
		}
		free(buf);
		buf = joined;
	}
	free(lens);
	free(disp);
	*out = buf;
	return 0;
}

static int finish(struct job *j, struct rd_mpi_result *res, double t0)
{
	uint64_t in[9], out[9];
	char host[64] = "", obj[8192], srv[300];
	int ret = 0;

	in[0] = j->files;
	in[1] = j->dirs;
	in[2] = j->others;
	in[3] = j->bytes;
	in[4] = j->moved;
	in[5] = j->resumed;
	in[6] = j->failed;
	in[7] = j->commits.n;
	in[8] = 0;
	MPI_Reduce(in, out, 9, MPI_UINT64_T, MPI_SUM, 0, j->comm);
	gethostname(host, sizeof(host) - 1);
	jstr(srv, sizeof(srv), j->o->dest->hosts.host[j->rank % (int)j->o->dest->hosts.n]);
	{
		char h[200];

		jstr(h, sizeof(h), host);
		snprintf(obj, sizeof(obj),
			 "{\"rank\":%d,\"host\":%s,\"server\":%s,\"bytes_moved\":%llu,"
			 "\"bytes_resumed\":%llu,\"entries_ok\":%llu,\"failures\":%llu,"
			 "\"ranges\":%llu,\"dirs_listed\":%llu,\"dirs_stolen\":%llu,"
			 "\"range_list\":[%.*s]}",
			 j->rank, h, srv, (unsigned long long)j->moved,
			 (unsigned long long)j->resumed, (unsigned long long)j->ok,
			 (unsigned long long)j->failed, (unsigned long long)j->ranges,
			 (unsigned long long)j->listed, (unsigned long long)j->stolen,
			 (int)(sizeof(obj) - 400), j->rangejson ? j->rangejson : "");
	}
	gather_json(j, obj, &res->ranks_json);
	gather_json(j, j->errjson ? j->errjson : "", &res->errors_json);
	/* one failure's text for the summary line: the lowest rank that has one */
	{
		int have = j->first_error[0] ? j->rank : j->size, who;

		MPI_Allreduce(&have, &who, 1, MPI_INT, MPI_MIN, j->comm);
		if (who < j->size) {
			MPI_Bcast(j->first_error, sizeof(j->first_error), MPI_CHAR, who, j->comm);
			snprintf(res->first_error, sizeof(res->first_error), "%s", j->first_error);
		}
	}
	if (j->rank == 0) {
		res->files = out[0];
		res->dirs = out[1];
		res->links = out[2];
		res->bytes = out[3];
		res->bytes_moved = out[4];
		res->bytes_resumed = out[5];
		res->failures = out[6];
		res->split_files = out[7];
	}
	MPI_Bcast(&out[6], 1, MPI_UINT64_T, 0, j->comm);
	res->seconds = now_s() - t0;
	res->nranks = j->size;
	if (out[6])
		ret = rd_err_set(&res->err, RD_EPARTIAL, 0, "%llu failed",
				 (unsigned long long)out[6]);
	return ret;
}

int rd_mpi_run(const struct rd_mpi_opts *o, struct rd_mpi_result *res)
{
	struct job *j = calloc(1, sizeof(*j));
	double t0 = now_s();
	uint64_t total = 0;
	int ret, all, i;

	memset(res, 0, sizeof(*res));
	if (!j)
		return rd_err_set(&res->err, RD_ENOMEM, ENOMEM, "job");
	j->o = o;
	MPI_Comm_dup(MPI_COMM_WORLD, &j->comm);
	MPI_Comm_rank(j->comm, &j->rank);
	MPI_Comm_size(j->comm, &j->size);
	j->cs = o->eo.chunk_size ? o->eo.chunk_size : RD_CHUNK_DEFAULT;
	if (j->rank == 0 && getrandom(&j->id, sizeof(j->id), 0) != sizeof(j->id))
		j->id = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	MPI_Bcast(&j->id, 1, MPI_UINT64_T, 0, j->comm);
	ret = o->pull ? rd_mpi__pull_setup(j) : setup_sources(j);
	MPI_Allreduce(&ret, &all, 1, MPI_INT, MPI_MIN, j->comm);
	if (all) {
		if (!ret)
			rd_err_set(&j->err, -all, 0, "another rank could not open the sources");
		goto out;
	}
	ret = o->pull ? rd_mpi__pull_list(j) : rd_mpi__walk(j);
	MPI_Allreduce(&ret, &all, 1, MPI_INT, MPI_MIN, j->comm);
	if (!all)
		all = rd_mpi__plan(j);
	if (all) {
		rd_err_set(&j->err, -all, 0, "the walk or the plan failed (%s)",
			   rd_status_name(all));
		goto out;
	}
	MPI_Allreduce(&j->bytes, &total, 1, MPI_UINT64_T, MPI_SUM, j->comm);
	/* data, COMMITs, hard links, directories' metadata: each after the last */
	if (j->pull) {
		rd_mpi__pull_phases(j, t0, total);
	} else {
		rd_mpi__phase(j, &j->data, t0, total, phase_thread);
		rd_mpi__phase(j, &j->commits, t0, total, phase_thread);
		rd_mpi__phase(j, &j->links, t0, total, phase_thread);
		rd_mpi__phase(j, &j->posts, t0, total, phase_thread);
	}
	ret = finish(j, res, t0);
	goto done;
out:
	ret = all;
	rd_err_copy(&res->err, &j->err);
done:
	for (i = 0; j->src && i < j->nsrc; i++) {
		if (j->src[i].fd >= 0)
			close(j->src[i].fd);
		free(j->src[i].real);
	}
	if (j->pull)
		rd_mpi__pull_free(j);
	free(j->src);
	rd_mpi__recs_free(&j->mine);
	rd_mpi__recs_free(&j->data);
	rd_mpi__recs_free(&j->commits);
	rd_mpi__recs_free(&j->links);
	rd_mpi__recs_free(&j->posts);
	free(j->errjson);
	free(j->rangejson);
	MPI_Comm_free(&j->comm);
	free(j);
	return ret;
}

void rd_mpi_result_free(struct rd_mpi_result *res)
{
	free(res->ranks_json);
	free(res->errors_json);
	res->ranks_json = res->errors_json = NULL;
}

int rd_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
	int got = 0;

	if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &got) != MPI_SUCCESS)
		return -RD_ESYS;
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	return got >= MPI_THREAD_FUNNELED ? 0 : -RD_EUSAGE;
}

void rd_mpi_finalize(void)
{
	MPI_Finalize();
}
