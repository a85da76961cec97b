// SPDX-License-Identifier: MIT
/*
 * Listings, rsync's way (rd_proto.h section 3, Listings):
 *   rdcp HOST::                 the modules this client may see, "%-15s\t%s"
 *   rdcp HOST::MODULE/PATH      one remote source and no DEST, or
 *   rdcp --list-only SRC...     its entries: mode, size, mtime, name
 *                               ("drwxr-xr-x          4,096 2026/12/06 06:00:00 name")
 * The server walks as for a pull, confined and checked as a pull is; this
 * side asks for no data and writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/base/rd_chmod.h"
#include "lib/base/rd_escape.h"
#include "lib/filter/rd_filter.h"
#include "lib/operand/rd_operand.h"
#include "lib/proto/rd_proto.h"
#include "lib/report/rd_report_fmt.h"
#include "lib/session/rd_session.h"

/* What one listing prints, and how each source's entries are named. */
struct lister {
	const struct rdcp_opts *o;
	int recursive;
	const unsigned char *contents; /* per source: "dir/" (shown as "."), or the dir itself */
	int nsrc, src;		       /* sources asked; the one whose entries come (-1 before) */
	unsigned long entries;
};

/* rsync's permstring: the type letter, then rd_perm_string's rwx with s/S and t/T. */
static void perms(char *p, uint32_t mode)
{
	p[0] = S_ISDIR(mode)	? 'd'
	       : S_ISLNK(mode)	? 'l'
	       : S_ISFIFO(mode) ? 'p'
	       : S_ISSOCK(mode) ? 's'
	       : S_ISCHR(mode)	? 'c'
	       : S_ISBLK(mode)	? 'b'
				: '-';
	rd_perm_string(p + 1, mode);
}

/* One entry, as rsync --list-only prints it. */
static void on_entry(void *ctx, const struct rd_msg_file *f)
{
	struct lister *l = ctx;
	char mode[11], size[32], when[32], name[RD_PATH_MAX * 4 + 8], target[RD_PATH_MAX * 4 + 8];
	const char *p = f->path.ptr, *slash;
	size_t n = f->path.len;
	time_t t = (time_t)f->mtime_sec;
	struct tm tm;
	uint64_t sz = f->size;

	if (f->flags & RD_FF_POST)
		return; /* a directory again, after its contents */
	if ((f->flags & RD_FF_ROOT) && l->src + 1 < l->nsrc)
		l->src++;
	if (l->src < 0)
		return;
	if (l->contents[l->src]) {
		/* "dir/": the directory is ".", its entries named beneath it */
		slash = memchr(p, '/', n);
		if (!slash) {
			p = ".";
			n = 1;
		} else {
			n -= (size_t)(slash + 1 - p);
			p = slash + 1;
		}
	} else if (!l->recursive && memchr(p, '/', n)) {
		return; /* "dir" without -r: the directory alone, as rsync's --dirs */
	}
	perms(mode, f->type == RD_FT_HLINK ? (f->mode & 07777) | S_IFREG : f->mode);
	if (f->type == RD_FT_SYMLINK)
		sz = f->target.len;
	rd_report_num(size, sizeof(size), (int64_t)sz, l->o->human);
	if (!localtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y/%m/%d %H:%M:%S", &tm))
		snprintf(when, sizeof(when), "%lld", (long long)f->mtime_sec);
	rd_escape(name, sizeof(name), p, n);
	target[0] = '\0';
	if (f->type == RD_FT_SYMLINK) {
		memcpy(target, " -> ", 5);
		rd_escape(target + 4, sizeof(target) - 4, f->target.ptr, f->target.len);
	}
	printf("%s %14s %s %s%s\n", mode, size, when, name, target);
	l->entries++;
}

static void on_module(void *ctx, const char *name, size_t nlen, const char *comment, size_t clen)
{
	struct lister *l = ctx;

	/* the wire allows only printable bytes here (rd_proto.h, MODULES) */
	printf("%-15.*s\t%.*s\n", (int)nlen, name, (int)clen, comment);
	l->entries++;
}

int rdcp_is_remote(const char *arg)
{
	struct rd_operand op;
	struct rd_err err;

	return !rd_operand_parse(&op, arg, &err) && op.kind != RD_OP_LOCAL;
}

int rdcp_list(const struct rdcp_opts *o, int nargs, char **args)
{
	struct rd_operand op, first;
	struct rd_client_opts co;
	struct rd_client *cl = NULL;
	struct rd_filter *filter = NULL;
	struct lister l;
	const char **remote = NULL;
	char(*norm)[RD_PATH_MAX + 1] = NULL;
	unsigned char *contents = NULL;
	char port[8], msg[512];
	struct rd_err err;
	int i, ret, code;

	rd_client_opts_init(&co);
	memset(&l, 0, sizeof(l));
	if (rd_operand_parse(&first, args[0], &err))
		return rdcp_error_out(err.msg, RD_EUSAGE, RD_CL_LOCAL);
	remote = calloc((size_t)nargs, sizeof(*remote));
	norm = calloc((size_t)nargs, sizeof(*norm));
	contents = calloc((size_t)nargs, 1);
	cl = calloc(1, sizeof(*cl));
	if (!remote || !norm || !contents || !cl) {
		code = rdcp_error_out("out of memory", RD_ENOMEM, RD_CL_LOCAL);
		goto out;
	}
	for (i = 0; i < nargs; i++) {
		size_t n;

		if (rd_operand_parse(&op, args[i], &err)) {
			code = rdcp_error_out(err.msg, RD_EUSAGE, RD_CL_LOCAL);
			goto out;
		}
		if (op.kind != RD_OP_DAEMON) {
			snprintf(msg, sizeof(msg),
				 "%s: rdcp lists what a daemon serves (HOST::MODULE/PATH or "
				 "rdcp://HOST/MODULE/PATH)%s",
				 args[i],
				 op.kind == RD_OP_SSH ? "; over ssh run ssh HOST ls -l PATH"
						      : "; for local files use ls -l");
			code = rdcp_error_out(msg, RD_EUSAGE, RD_CL_LOCAL);
			goto out;
		}
		if (!rd_operand_same_remote(&op, &first)) {
			code = rdcp_error_out("all listed sources must be on the same host",
					      RD_EUSAGE, RD_CL_LOCAL);
			goto out;
		}
		n = strspn(op.path, "/");
		if (!op.path[n]) {
			if (nargs > 1) {
				code = rdcp_error_out("HOST:: lists the modules: give it alone",
						      RD_EUSAGE, RD_CL_LOCAL);
				goto out;
			}
			co.module = on_module;
			break;
		}
		if (rd_operand_normalize(op.path, norm[i], sizeof(norm[i]), &err)) {
			code = rdcp_error_out(err.msg, RD_EUSAGE, RD_CL_LOCAL);
			goto out;
		}
		remote[i] = norm[i];
		n = strlen(op.path);
		/* "m/dir/", "m/dir/." and a module alone name the contents */
		contents[i] = op.path[n - 1] == '/' ||
			      (n >= 2 && op.path[n - 1] == '.' && op.path[n - 2] == '/') ||
			      !strchr(norm[i], '/');
	}
	snprintf(port, sizeof(port), "%s", first.port[0] ? first.port : (o->port ? o->port : ""));
	if (!port[0])
		snprintf(port, sizeof(port), "%d", RD_DEFAULT_PORT);
	if (rdcp_tls_client(o, first.user, first.host, port, &co.tls, msg, sizeof(msg))) {
		code = rdcp_error_out(msg, RD_EUSAGE, RD_CL_LOCAL);
		goto out;
	}
	l.o = o;
	l.recursive = o->recursive;
	l.contents = contents;
	l.nsrc = nargs;
	l.src = -1;
	co.host = first.host;
	co.port = port;
	if (!co.module) {
		co.remote = remote;
		co.nremote = nargs;
		co.list = on_entry;
	}
	co.list_ctx = &l;
	/* rsync's filters hide entries from a listing as from a pull: the server walks with them */
	if (!co.module) {
		ret = rd_selopt_filter(&o->sel, &filter, &err);
		if (ret) {
			code = rdcp_error_out(err.msg, ret, RD_CL_LOCAL);
			goto out;
		}
		co.filter = filter;
		co.need_select = !!filter;
	}
	/* what the server walks: -r, and the types -D would bring */
	co.flags = (o->recursive ? RD_OF_RECURSIVE : 0) |
		   (o->meta & (RD_OF_DEVICES | RD_OF_SPECIALS)) | (o->one_fs ? RD_OF_ONE_FS : 0) |
		   (o->one_fs > 1 ? RD_OF_ONE_FS2 : 0);
	co.eo.window = rdcp_window();
	co.eo.threads = 1;
	co.co.timeout_ms = o->timeout_s * 1000;
	co.co.transport = o->rdma_host ? RD_XPORT_RDMA : o->transport;
	co.co.family = o->family;
	co.co.lanes = 1;
	co.co.rdma_devices = o->rdma_devices;
	ret = rd_client_run(cl, &co);
	fflush(stdout);
	if (ret && ret != -RD_EPARTIAL) {
		code = rdcp_error_out(cl->err.msg, ret, cl->stage);
		goto out;
	}
	code = ret ? rdcp_error_out(cl->err.msg, ret, RD_CL_TRANSFER) : RDCP_EXIT_OK;
out:
	rd_filter_free(filter);
	free(cl);
	free(contents);
	free(norm);
	free(remote);
	return code;
}
