// SPDX-License-Identifier: MIT
/* rdcp SOURCE... DEST: classify operands, run a client session, report. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/addrsel/rd_addrsel.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_backup.h"
#include "lib/base/rd_escape.h"
#include "lib/base/rd_path.h"
#include "lib/filter/rd_filter.h"
#include "lib/progress/rd_progress.h"
#include "lib/report/rd_report.h"
#include "lib/operand/rd_operand.h"
#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session.h"

/* Shared with remote_log() and on_phase(): the meter must step aside for messages. */
static struct rdcp_out *g_out;
static struct rd_client *g_cl; /* on_connected(): how the session was authenticated */

static const char *auth_words(enum rd_auth_kind k)
{
	switch (k) {
	case RD_AUTH_USER:
		return "the user's secret";
	case RD_AUTH_SSH:
		return "the ssh channel's one-time secret";
	case RD_AUTH_CERT:
		return "the server's certificate";
	default:
		return "nothing (anonymous: encrypted, but the server is not verified)";
	}
}

static volatile int g_stop;
static volatile sig_atomic_t g_armed, g_signals;

/*
 * SIGINT/SIGTERM (issue 7 item 10). Before the session is connected
 * nothing can have been written: leave at once. After, stop the engine:
 * it ends within a second, aborting the files in progress, so their
 * temporaries are removed; then rdcp exits 20. A second signal leaves at
 * once.
 */
static void on_signal(int sig)
{
	(void)sig;
	if (!g_armed || g_signals++)
		_exit(RDCP_EXIT_SIGNAL);
	g_stop = 1;
}

static void on_connected(void *ctx, const struct rd_conn_info *i)
{
	const struct rdcp_out *ro = ctx;
	const struct rdcp_opts *o = ro->o;
	const struct rd_tls_peer *t = &g_cl->tls;

	g_armed = 1;
	/*
	 * auto chose TCP: said in one line when this host has an RDMA device
	 * the route did not use (a surprise worth a line), else only with -v:
	 * a host without RDMA copies over TCP quietly.
	 */
	if (i->note[0] && !o->quiet && (o->verbose || !i->note_quiet))
		fprintf(stderr, "%s\n", i->note);
	if (!o->verbose)
		return;
	if (!strcmp(i->transport, "rdma")) {
		fprintf(stderr, "rdcp: connected to %s via %s port %u (%s), GID %s, protocol %u\n",
			i->peer, i->device, i->port, i->link, i->gid, i->version);
		fprintf(stderr, "rdcp: %u lane%s (RC queue pairs): asked for %u%s\n", i->lanes,
			i->lanes == 1 ? "" : "s", i->lanes_asked,
			o->lanes ? " (--lanes)" : " (the device's default)");
		if (i->rails > 1) {
			char devs[RD_RAILS_MAX * 34];

			fprintf(stderr, "rdcp: rails: %u (%s)\n", i->rails,
				rd_conn_rail_names(i, devs, sizeof(devs)));
		}
		if (i->rails_note[0])
			fprintf(stderr, "rdcp: rails: %s\n", i->rails_note);
	} else
		fprintf(stderr, "rdcp: connected to %s over %s, protocol %u\n", i->peer, i->link,
			i->version);
	fprintf(stderr, "rdcp: TLS 1.3 (%s), authenticated by %s%s%s\n", t->cipher,
		auth_words(t->auth), t->server_key[0] ? "; the server by its key " : "",
		t->server_key);
}

/* Files beside a session's: stdio, the walk's directories, TLS, devices. */
#define WINDOW_FDS_RESERVE 64u

unsigned rdcp_window(void)
{
	uint64_t want = RD_SESSION_FDS_FOR(RD_WINDOW_DEFAULT) + WINDOW_FDS_RESERVE;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return RD_WINDOW_FILES;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		struct rlimit up = rl;

		up.rlim_cur =
		    rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
		if (!setrlimit(RLIMIT_NOFILE, &up))
			rl = up;
	}
	return rd_session_window_fit(rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur, 1,
				     WINDOW_FDS_RESERVE);
}

/* Sleep ms, or less when a signal comes (it sets g_stop). */
static void nap_ms(unsigned ms)
{
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&t, NULL);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * Start-up timings (issue 14): -vv prints each step of setting up a
 * session with its duration, from the process's own start (its start time
 * in /proc/self/stat, on CLOCK_BOOTTIME's scale), so exec and library
 * loading count too; --json reports the time to the session being ready.
 */
static struct {
	double start, last, ready;
	int print;
} g_time;

static double boot_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_BOOTTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* When this process started (CLOCK_BOOTTIME seconds), or now if unknown. */
static double process_start_s(void)
{
	char buf[1024], *p;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	int i;

	if (f)
		fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold spaces */
	for (i = 0; p && i < 20; i++) /* field 22: starttime */
		p = strchr(p + 1, ' ');
	if (!p || hz <= 0 || sscanf(p + 1, "%llu", &ticks) != 1)
		return boot_s();
	return (double)ticks / (double)hz;
}

/*
 * Where the last attempt's time went (rd_report's phases): each step from
 * the one before; walk and fsync where this side did them (a push walks
 * here, a pull writes here), else unknown (-1).
 */
static void phases(struct rd_report_phases *p, const struct rd_client *cl, int push)
{
	const struct rd_client_times *t = &cl->t;

	memset(p, 0, sizeof(*p));
	if (!t->connected)
		return;
	p->set = 1;
	p->connect = t->connected - t->start;
	p->tls = t->tls ? t->tls - t->connected : 0;
	p->open = t->open && t->tls ? t->open - t->tls : 0;
	p->data = t->data && t->open ? t->data - t->open : 0;
	p->close = t->closed && t->data ? t->closed - t->data : 0;
	p->walk = push ? (double)cl->e.st.walk_ns / 1e9 : -1;
	p->fsync = push ? -1 : (double)cl->e.st.sync_ns / 1e9;
}

/* rdcp -vv: the phases in one line (--json has them as "phases"). */
static void print_phases(const struct rd_report_phases *p)
{
	char walk[64] = "", fsync[64] = "";

	if (p->walk >= 0)
		snprintf(walk, sizeof(walk), " (%.1f ms of it walking the sources)", p->walk * 1e3);
	if (p->fsync >= 0)
		snprintf(fsync, sizeof(fsync), " (%.1f ms of it in fsync)", p->fsync * 1e3);
	fprintf(stderr,
		"rdcp: phases: connect %.1f ms, TLS %.1f ms, open %.1f ms, data %.1f ms%s%s, "
		"close %.1f ms\n",
		p->connect * 1e3, p->tls * 1e3, p->open * 1e3, p->data * 1e3, walk, fsync,
		p->close * 1e3);
}

static void on_phase(void *ctx, const char *step)
{
	double now = boot_s();

	(void)ctx;
	if (!strcmp(step, "chunk key derived"))
		g_time.ready = now;
	if (g_time.print) {
		if (g_out)
			rd_progress_suspend(g_out->meter);
		fprintf(stderr, "rdcp: time: %-22s %8.1f ms  (%8.1f ms since the process started)\n",
			step, (now - g_time.last) * 1e3, (now - g_time.start) * 1e3);
		if (g_out)
			rd_progress_resume(g_out->meter);
	}
	g_time.last = now;
}

/*
 * Line by line, each line escaped: only real line breaks of our own
 * multi-line hints break lines. An escaped "\\n" stays as it is (text from
 * a peer arrives escaped already: rd_engine_fail_remote; issue 7 item 11).
 */
int rdcp_error_out(const char *msg, int status, int stage)
{
	char buf[RD_ERR_MSG_MAX * 4];
	const char *p = msg, *nl;

	fprintf(stderr, "rdcp: ");
	for (;;) {
		nl = strchrnul(p, '\n');
		rd_escape(buf, sizeof(buf), p, (size_t)(nl - p));
		fputs(buf, stderr);
		fputc('\n', stderr);
		if (!*nl || !nl[1])
			break;
		p = nl + 1;
	}
	return rdcp_exit_for(status, stage, g_stop);
}

/*
 * Ctrl-C (or SIGTERM) after the session began: what is where, and that the
 * same command picks up from there. Complete files are in place under
 * their names; files in progress stay as partials unless --no-partial
 * (small ones, at most 64 KiB, are simply sent again).
 */
static void say_interrupted(const struct rdcp_opts *o, uint64_t entries, uint64_t bytes)
{
	char b[32];

	if (o->quiet)
		return;
	rd_progress_human(b, sizeof(b), (double)bytes);
	fprintf(stderr, "rdcp: interrupted: %llu entries complete and in place (%s moved); ",
		(unsigned long long)entries, b);
	if (o->no_partial)
		fprintf(stderr, "the files in progress were removed (--no-partial): run the same "
				"command again to copy the rest\n");
	else if (o->partial_dir)
		fprintf(stderr,
			"run the same command again to resume: complete files are skipped, files "
			"in progress continue from what was kept (in %s/ beside them)\n",
			o->partial_dir);
	else
		fprintf(stderr, "run the same command again to resume: complete files are "
				"skipped, files in progress continue from what was kept "
				"(.rdcp-partial.NAME beside them)\n");
}

/* An error before any session (operands, options): its status at the local stage. */
static int error_out(const char *msg, int status)
{
	return rdcp_error_out(msg, status, RD_CL_LOCAL);
}

static void remote_log(void *ctx, const char *line)
{
	(void)ctx;
	/* line is escaped already */
	if (g_out)
		rd_progress_suspend(g_out->meter);
	fprintf(stderr, "%s%s\n", strncmp(line, "rdcp", 4) ? "rdcp: remote: " : "", line);
	if (g_out)
		rd_progress_resume(g_out->meter);
}

/* a pull's top-level names to accept under -R and --files-from */
static char expect[RD_OPEN_PATHS_MAX][NAME_MAX + 1];
static const char *expect_p[RD_OPEN_PATHS_MAX];

/*
 * A --files-from line as rsync reads it: a leading '/' dropped, ".."
 * resolved away so nothing rises above the source ("../foo" is "foo"),
 * "." and empty components dropped. "" when nothing is left.
 */
static void clean_name(char *s)
{
	char *in = s, *out = s, *e;
	size_t n;

	while (*in) {
		while (*in == '/')
			in++;
		e = strchrnul(in, '/');
		n = (size_t)(e - in);
		if (n == 2 && in[0] == '.' && in[1] == '.') {
			/* one up: back over the last component written, if any */
			while (out > s && *--out != '/')
				;
		} else if (n && !(n == 1 && in[0] == '.')) {
			if (out > s)
				*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in = e;
	}
	*out = '\0';
}

/*
 * --files-from: the names, one a line (NUL-separated with --from0); empty
 * lines and lines starting with ';' or '#' skipped. *names a malloc'd
 * array of pointers into *buf.
 */
static int read_names(const struct rdcp_opts *o, char **buf, char ***names, unsigned *n,
		      struct rd_err *err)
{
	size_t len = 0, cap = 0, k = 0;
	char *p, *end, *e, **v = NULL, **nv;
	int ret;

	*names = NULL;
	*n = 0;
	ret = rd_selopt_read_file(NULL, o->files_from, buf, &len, err);
	if (ret)
		return rd_err_set(err, RD_EUSAGE, 0, "--files-from: %s", err->msg);
	for (p = *buf, end = *buf + len; p < end; p = e + 1) {
		e = memchr(p, o->sel.from0 ? '\0' : '\n', (size_t)(end - p));
		if (!e)
			e = end;
		*e = '\0';
		if (!o->sel.from0 && e > p && e[-1] == '\r')
			e[-1] = '\0';
		if (!*p || *p == ';' || *p == '#')
			continue;
		clean_name(p);
		if (!*p)
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return rd_err_set(err, RD_ENOMEM, ENOMEM, "--files-from");
			}
			v = nv;
		}
		v[k++] = p;
	}
	*names = v;
	*n = (unsigned)k;
	return 0;
}

/*
 * -R on a pull: the part of a remote path before "/./" (after the module,
 * for a daemon) is the base, left out; *skip its length in the normalized
 * path, first the first name sent (what the client accepts as top level).
 */
static void rel_remote(const char *raw, int daemon, unsigned *skip, char *first, size_t cap)
{
	char buf[RD_PATH_MAX + 1], *dot, *p;
	size_t n;

	snprintf(buf, sizeof(buf), "%s", raw);
	p = buf;
	if (daemon) {
		p = strchr(p, '/');
		p = p ? p + 1 : buf + strlen(buf);
	}
	dot = strstr(p, "/./");
	if (!dot && !strncmp(p, "./", 2))
		dot = p - 1; /* "./x": the base is empty */
	*skip = 0;
	if (dot) {
		if (dot >= p) {
			*dot = '\0';
			clean_name(p);
			*skip = *p ? (unsigned)strlen(p) + 1 : 0;
		}
		p = dot + 3;
	}
	clean_name(p);
	n = strcspn(p, "/");
	if (n >= cap)
		n = cap - 1;
	memcpy(first, p, n);
	first[n] = '\0';
}

/*
 * --files-from: the names beneath the one source; a pull sends them (at
 * most RD_NAMES_MAX) and accepts their first names as top level.
 */
static int files_from(const struct rdcp_opts *o, struct rd_client_opts *co, int nsrc, char **buf,
		      char ***names, struct rd_err *err)
{
	unsigned n, i, j, k = 0;
	size_t len;
	int ret;

	if (nsrc != 1)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "--files-from takes one SOURCE: the directory its names are in");
	ret = read_names(o, buf, names, &n, err);
	if (ret)
		return ret;
	co->names = (const char *const *)*names;
	co->nnames = n;
	co->dirs = !o->recursive;
	co->need_select |= !co->push;
	if (co->push)
		return 0;
	if (n > RD_NAMES_MAX)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "--files-from names %u paths; a pull sends at most %u (push "
				  "from the other side, or split the list)",
				  n, RD_NAMES_MAX);
	for (i = 0; i < n; i++) {
		len = strcspn((*names)[i], "/");
		if (len > NAME_MAX)
			return rd_err_set(err, RD_EUSAGE, 0, "--files-from: '%s': name too long",
					  (*names)[i]);
		for (j = 0; j < k; j++)
			if (strlen(expect[j]) == len && !memcmp(expect[j], (*names)[i], len))
				break;
		if (j < k)
			continue;
		if (k == RD_OPEN_PATHS_MAX)
			return rd_err_set(err, RD_EUSAGE, 0,
					  "--files-from on a pull: its names lie under more than "
					  "%d top-level names; push from the other side or split "
					  "the list",
					  RD_OPEN_PATHS_MAX);
		memcpy(expect[k], (*names)[i], len);
		expect[k][len] = '\0';
		expect_p[k] = expect[k];
		k++;
	}
	co->expect = expect_p;
	co->nexpect = k;
	return 0;
}

/*
 * rsync's rules (issue 28): what the destination is, which sources name
 * contents, and whether the copy depends on a server that has the rules
 * (version 11). nsrc sources; raw[i] the remote paths as given (a pull).
 */
static int select_rules(const struct rdcp_opts *o, struct rd_client_opts *co,
			const struct rd_operand *dest, const char *dest_arg, int nsrc,
			const char *const *raw, int daemon, struct rd_err *err)
{
	const char *dpath = dest->kind == RD_OP_LOCAL ? dest_arg : dest->path;
	size_t dn = strlen(dpath);
	int dest_dir = nsrc > 1 || (dn && dpath[dn - 1] == '/'), i;
	struct stat st;

	co->sel.compare = (uint8_t)o->sel.compare;
	/*
	 * --remove-source-files: a file the receiver already has goes from the
	 * source only once its contents were compared, never on the word of
	 * a size and a date (rsync removes it): the quick check becomes -c's
	 */
	if (o->remove_source && co->sel.compare == RD_CMP_QUICK)
		co->sel.compare = RD_CMP_CHECKSUM;
	co->sel.modify_window = o->sel.modify_window;
	co->sel.min_size = o->sel.min_size;
	co->sel.max_size = o->sel.max_size;
	if (o->relative) {
		/* implied directories: DEST holds them */
		dest_dir = 1;
		co->relative = 1;
	}
	co->sel.rules =
	    (uint16_t)(o->sel.rules | (dest_dir ? RD_SEL_DEST_DIR : 0) |
		       (o->mkpath ? RD_SEL_MKPATH : 0) | (o->relative ? RD_SEL_RELATIVE : 0));
	if (co->push) {
		/*
		 * The server places and compares: it must know the rules unless
		 * one file goes to a name and only the quick check (or -c,
		 * which an older server does anyway) decides.
		 */
		co->need_select =
		    dest_dir || o->mkpath || rd_selopt_any(&o->sel) || o->remove_source;
		for (i = 0; i < co->nlocal; i++)
			if (rd_path_names_contents(co->local[i]) ||
			    (!stat(co->local[i], &st) && S_ISDIR(st.st_mode)))
				co->need_select = 1;
		return 0;
	}
	/* a pull: we place, by what we asked for */
	co->sink_flags |=
	    RD_SINK_RSYNC | (dest_dir ? RD_SINK_DEST_DIR : 0) | (o->mkpath ? RD_SINK_MKPATH : 0);
	if (co->nremote > RD_OPEN_PATHS_MAX)
		return rd_err_set(err, RD_EUSAGE, 0, "at most %d remote sources",
				  RD_OPEN_PATHS_MAX);
	if (o->relative && !o->files_from) {
		/* -R: each path from its base (before "/./"); its first name is the top */
		for (i = 0; i < co->nremote && i < nsrc; i++) {
			unsigned skip;

			rel_remote(raw[i], daemon, &skip, expect[i], sizeof(expect[i]));
			co->sel.skip[i] = daemon ? (uint16_t)skip : 0;
			expect_p[i] = expect[i];
		}
		co->expect = expect_p;
		co->nexpect = (unsigned)co->nremote;
		return 0;
	}
	/* "dir/" names the contents, and so does a daemon's bare "module" */
	for (i = 0; i < co->nremote && i < nsrc; i++)
		if (rd_path_names_contents(raw[i]) || (daemon && !strchr(co->remote[i], '/')))
			co->sel.pflags[i] |= RD_PF_CONTENTS;
	return 0;
}

/*
 * HOST:PATH: start the other half over ssh, then connect over RDMA to the
 * addresses it reports (or --rdma-host), proving its one-time secret.
 */
static int run_over_ssh(const struct rdcp_opts *o, const struct rd_operand *op,
			struct rd_client *cl, struct rd_client_opts *co, const char **raw,
			int nraw, int *rstatus)
{
	static const char *const placeholder[] = {"ssh"};
	struct rd_ssh_opts so;
	struct rd_ssh ssh;
	char port[8];
	const char *addrs[RD_REMOTE_MAX_ADDRS + 1];
	int naddrs = 0, i, ret;

	memset(&so, 0, sizeof(so));
	so.rsh = o->rsh;
	so.user = op->user;
	so.host = op->host;
	so.remote_rdcp = o->remote_rdcp;
	so.push = co->push;
	so.flags = co->flags;
	so.paths = raw;
	so.npaths = nraw;
	so.timeout_ms = 60000;
	so.log = remote_log;
	ret = rd_ssh_start(&ssh, &so);
	if (ret) {
		/* the remote half did not start: the session never began (exit 5) */
		rd_err_copy(&cl->err, &ssh.err);
		cl->stage = RD_CL_OPEN;
		return ret;
	}
	if (!rd_proto_versions_overlap(ssh.ready.ver_min, ssh.ready.ver_max)) {
		ret = rd_err_set(&cl->err, RD_EVERSION, 0,
				 "%s: protocol version mismatch: the remote rdcp speaks %u..%u, "
				 "this one %u..%u; install the same rdcp on both hosts",
				 op->host, ssh.ready.ver_min, ssh.ready.ver_max, RD_PROTO_MIN,
				 RD_PROTO_MAX);
		*rstatus = rd_ssh_finish(&ssh, 2000);
		return ret;
	}
	if (o->rdma_host) {
		addrs[naddrs++] = o->rdma_host;
	} else if (co->co.transport != RD_XPORT_TCP && ssh.ready.naddrs) {
		for (i = 0; i < ssh.ready.naddrs; i++)
			addrs[naddrs++] = ssh.ready.addrs[i];
		/* RFC 6724 order; -4/-6 keep one family. */
		naddrs = rd_addr_order(addrs, naddrs, o->family, NULL, NULL);
		if (!naddrs) {
			ret = rd_err_set(&cl->err, RD_ECONN, 0,
					 "%s reports no %sRDMA address this host can use", op->host,
					 o->family == AF_INET    ? "IPv4 (-4) "
					 : o->family == AF_INET6 ? "IPv6 (-6) "
								 : "");
			*rstatus = rd_ssh_finish(&ssh, 2000);
			return ret;
		}
	}
	if (!naddrs && co->co.transport == RD_XPORT_RDMA) {
		ret = rd_err_set(&cl->err, RD_ENODEV, 0,
				 "%s has no RDMA device with an address (--transport rdma)",
				 op->host);
		*rstatus = rd_ssh_finish(&ssh, 2000);
		return ret;
	}
	if (!naddrs) {
		/* The remote half listens on TCP too: reach it where ssh did. */
		if (co->co.transport == RD_XPORT_AUTO && !o->quiet &&
		    (o->verbose || rd_rdma_device_count()))
			fprintf(stderr, "rdcp: %s has no RDMA address; using TCP\n", op->host);
		co->co.transport = RD_XPORT_TCP;
		addrs[naddrs++] = op->host;
	}
	snprintf(port, sizeof(port), "%u", ssh.ready.port);
	co->port = port;
	/* The secret only ssh carried is the session's TLS key. */
	memset(&co->tls, 0, sizeof(co->tls));
	co->tls.role = RD_TLS_CLIENT;
	co->tls.auth = RD_AUTH_SSH;
	rd_tls_psk_ssh(ssh.ready.secret, RD_SECRET_LEN, co->tls.psk);
	OPENSSL_cleanse(ssh.ready.secret, RD_SECRET_LEN);
	co->remote = placeholder;
	co->nremote = 1;
	co->asked = raw;
	co->nasked = nraw;
	ret = -RD_ECONN;
	for (i = 0; i < naddrs; i++) {
		co->host = addrs[i];
		if (o->verbose)
			fprintf(stderr, "rdcp: %s reports %s address %s port %s\n", op->host,
				co->co.transport == RD_XPORT_TCP ? "TCP" : "RDMA", addrs[i], port);
		ret = rd_client_run(cl, co);
		/* Only an address that could not be reached is worth another try. */
		if (ret == 0 || ret == -RD_EPARTIAL || cl->connected || ret != -RD_ECONN)
			break;
	}
	*rstatus = rd_ssh_finish(&ssh, ret ? 2000 : 15000);
	return ret;
}

/*
 * --delete and its relatives (issue 29): OPEN's MIRROR block, rsync's
 * usage rules, and on a push the empty-source interlock (a missing mount
 * looks empty: refused unless --allow-empty-source). 0, or an error with
 * err set (RD_EUSAGE: exit 1; RD_ENOENT: exit 3).
 */
static int mirror_opts(const struct rdcp_opts *o, struct rd_client_opts *co, struct rd_err *err)
{
	struct stat st;
	int i;

	if (!(o->mir_flags & (RD_MF_DELETE | RD_MF_FORCE)))
		return 0;
	co->mir.flags = (uint16_t)o->mir_flags;
	/* no source removed: a file may wait for its room, to count as rsync (a pull removes none) */
	if (!o->remove_source)
		co->mir.flags |= RD_MF_LATE_ROOM;
	co->mir.max_delete = o->max_delete < 0 ? RD_MAX_DELETE_NONE : o->max_delete;
	co->need_select = 1;
	if (o->delete_excluded)
		co->sel.rules |= RD_SEL_DELETE_EXCLUDED;
	if (!(o->mir_flags & RD_MF_DELETE))
		return 0;
	if (!o->recursive)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "--delete does not work without --recursive (-r)");
	if (!co->push || (o->mir_flags & RD_MF_ALLOW_EMPTY))
		return 0; /* a pull's server checks its own sources */
	for (i = 0; i < co->nlocal; i++)
		if (!stat(co->local[i], &st) && S_ISDIR(st.st_mode) &&
		    rd_session_dir_empty(AT_FDCWD, co->local[i]))
			return rd_err_set(
			    err, RD_ENOENT, 0,
			    "the source directory %s is empty: --delete would empty "
			    "the destination; refused (--allow-empty-source allows it)",
			    co->local[i]);
	return 0;
}

int rdcp_copy(const struct rdcp_opts *o, int nargs, char **args)
{
	struct rd_operand dest, src0, op;
	struct rd_client_opts co;
	struct rd_filter *filter = NULL;
	char *names_buf = NULL, **names = NULL;
	struct rd_client *cl;
	struct rd_pace pace;
	struct rdcp_out ro;
	struct rd_chmod chmod = {0};
	const char **local = NULL, **remote = NULL, **raw = NULL;
	char (*norm)[RD_PATH_MAX + 1] = NULL;
	int nlocal = 0, nremote = 0, i, ret, code, rstatus = 0, attempt, ever_connected = 0;
	uint64_t moved_before = 0;
	unsigned delay, delay_ms, meter_flags, seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	time_t w0;
	int busy;
	char port[8];
	struct rd_err err;
	double t0, dt;

	g_time.start = g_time.last = process_start_s();
	g_time.print = o->verbose >= 2;
	on_phase(NULL, "rdcp started (main)");
	if (rd_operand_parse(&dest, args[nargs - 1], &err))
		return error_out(err.msg, RD_EUSAGE);
	if (rd_operand_parse(&src0, args[0], &err))
		return error_out(err.msg, RD_EUSAGE);
	local = calloc((size_t)nargs, sizeof(*local));
	remote = calloc((size_t)nargs, sizeof(*remote));
	cl = calloc(1, sizeof(*cl));
	norm = calloc((size_t)nargs, sizeof(*norm));
	raw = calloc((size_t)nargs, sizeof(*raw));
	if (!local || !remote || !cl || !norm || !raw) {
		free(raw);
		free(norm);
		free(local);
		free(remote);
		free(cl);
		return error_out("out of memory", RD_ENOMEM);
	}
	rd_client_opts_init(&co);
	if (dest.kind == RD_OP_LOCAL && src0.kind == RD_OP_LOCAL) {
		/* a local copy: both halves here (lib/session/rd_local.c) */
		for (i = 0; i < nargs - 1; i++) {
			if (rd_operand_parse(&op, args[i], &err)) {
				code = error_out(err.msg, RD_EUSAGE);
				goto out;
			}
			if (op.kind != RD_OP_LOCAL) {
				code = error_out("mixing local and remote sources is not "
						 "supported; copy them in two runs",
						 RD_EUSAGE);
				goto out;
			}
			local[nlocal++] = args[i];
		}
		co.push = 1;
		co.local_dest = args[nargs - 1];
		raw[nremote] = "local"; /* OPEN's path: the receiving half ignores it */
		remote[nremote++] = "local";
		op = dest;
	} else if (dest.kind != RD_OP_LOCAL) {
		/* push: every source local */
		for (i = 0; i < nargs - 1; i++) {
			if (rd_operand_parse(&op, args[i], &err)) {
				code = error_out(err.msg, RD_EUSAGE);
				goto out;
			}
			if (op.kind != RD_OP_LOCAL) {
				code = error_out("copying between two remote operands is not "
						 "supported; run rdcp on one of the hosts",
						 RD_EUSAGE);
				goto out;
			}
			local[nlocal++] = args[i];
		}
		co.push = 1;
		raw[nremote] = dest.path;
		if (dest.kind == RD_OP_DAEMON &&
		    rd_operand_normalize(dest.path, norm[nremote], sizeof(norm[0]), &err)) {
			code = error_out(err.msg, RD_EUSAGE);
			goto out;
		}
		remote[nremote] = norm[nremote];
		nremote++;
		op = dest;
	} else {
		for (i = 0; i < nargs - 1; i++) {
			if (rd_operand_parse(&op, args[i], &err)) {
				code = error_out(err.msg, RD_EUSAGE);
				goto out;
			}
			if (op.kind == RD_OP_LOCAL) {
				code = error_out("mixing local and remote sources is not "
						 "supported; copy them in two runs",
						 RD_EUSAGE);
				goto out;
			}
			if (!rd_operand_same_remote(&op, &src0)) {
				code = error_out("all remote sources must be on the same host",
						 RD_EUSAGE);
				goto out;
			}
			raw[nremote] = op.path;
			if (op.kind == RD_OP_DAEMON &&
			    rd_operand_normalize(op.path, norm[nremote], sizeof(norm[0]), &err)) {
				code = error_out(err.msg, RD_EUSAGE);
				goto out;
			}
			remote[nremote] = norm[nremote];
			nremote++;
		}
		local[nlocal++] = dest.path;
		op = src0;
	}
	snprintf(port, sizeof(port), "%s",
		 op.port[0] ? op.port : (o->port ? o->port : ""));
	if (!port[0])
		snprintf(port, sizeof(port), "%d", RD_DEFAULT_PORT);

	co.host = op.host;
	co.port = port;
	co.remote = remote;
	co.nremote = nremote;
	co.local = local;
	co.nlocal = nlocal;
	co.flags = (o->recursive ? RD_OF_RECURSIVE : 0) | (o->preserve ? RD_OF_PRESERVE : 0) |
		   (o->owner ? RD_OF_OWNER : 0) | (o->group ? RD_OF_GROUP : 0) |
		   (o->fsync ? RD_OF_FSYNC : 0) | (o->no_partial ? RD_OF_NO_PARTIAL : 0) |
		   (o->trust_partial ? RD_OF_TRUST_PARTIAL : 0) | o->meta |
		   (o->one_fs ? RD_OF_ONE_FS : 0) | (o->one_fs > 1 ? RD_OF_ONE_FS2 : 0) |
		   (o->copy_links ? RD_OF_COPY_LINKS : 0);
	/* -p: modes and times only; owners and groups only with -o / -g */
	co.sink_flags = RD_SINK_PRESERVE_TIMES | (o->preserve ? RD_SINK_PRESERVE_MODE : 0) |
			(o->owner ? RD_SINK_PRESERVE_OWNER : 0) |
			(o->group ? RD_SINK_PRESERVE_GROUP : 0) | (o->fsync ? RD_SINK_FSYNC : 0) |
			(o->no_partial ? RD_SINK_NO_PARTIAL : 0) |
			(o->trust_partial ? RD_SINK_TRUST_PARTIAL : 0) |
			((o->meta & RD_OF_XATTRS) ? RD_SINK_XATTRS : 0) |
			((o->meta & RD_OF_ACLS) ? RD_SINK_ACLS : 0) |
			((o->meta & RD_OF_DEVICES) ? RD_SINK_DEVICES : 0) |
			((o->meta & RD_OF_SPECIALS) ? RD_SINK_SPECIALS : 0);
	co.umask = rd_sink_process_umask();
	ret = select_rules(o, &co, &dest, args[nargs - 1], nargs - 1, raw, op.kind == RD_OP_DAEMON,
			   &err);
	if (!ret)
		ret = rd_selopt_filter(&o->sel, &filter, &err);
	if (ret) {
		code = error_out(err.msg, ret);
		goto out;
	}
	co.filter = filter;
	/* a pull's server walks with our rules: it must have them */
	if (filter && !co.push)
		co.need_select = 1;
	ret = mirror_opts(o, &co, &err);
	if (ret) {
		code = error_out(err.msg, ret);
		goto out;
	}
	if (o->files_from) {
		ret = files_from(o, &co, nargs - 1, &names_buf, &names, &err);
		if (ret) {
			code = error_out(err.msg, ret);
			goto out;
		}
	}
	if (o->partial_dir && o->no_partial) {
		code = error_out("--partial-dir and --no-partial ask for opposite things: give one",
				 RD_EUSAGE);
		goto out;
	}
	co.partial_dir = o->partial_dir;
	/* issue 29: --link-dest & co. and backups, the receiver's (a push: OPEN's DESTS) */
	if (o->backup && rd_backup_check(o->backup_dir, o->suffix)) {
		code = error_out(rd_backup_check(o->backup_dir, o->suffix), RD_EUSAGE);
		goto out;
	}
	co.dests.kind = o->alt_kind;
	co.dests.n = (unsigned)o->nalt;
	for (i = 0; i < o->nalt; i++)
		co.dests.dirs[i] = o->alt_dirs[i];
	co.dests.backup = o->backup;
	co.dests.backup_dir = o->backup ? o->backup_dir : NULL;
	co.dests.suffix = o->backup ? o->suffix : NULL;
	/* a pull's sink takes them at its quick check: only with rsync's rules (version 11) */
	if (o->nalt && !co.push)
		co.need_select = 1;
	/* a pull's sources are the server's: it removes them (OPEN's MIRROR block) */
	if (o->remove_source && !co.push) {
		co.mir.flags |= RD_MF_REMOVE_SRC;
		co.need_select = 1;
	}
	co.eo.remove_source = o->remove_source && co.push;
	co.eo.chunk_size = (uint32_t)o->chunk_size;
	if (o->bwlimit) {
		/* --bwlimit: this side's chunks paced; a chunk moves in <= 0.25 s */
		rd_pace_init(&pace, o->bwlimit);
		co.eo.pace = &pace;
		if (!co.eo.chunk_size || co.eo.chunk_size > rd_pace_chunk_max(o->bwlimit))
			co.eo.chunk_size = rd_pace_chunk_max(o->bwlimit);
	}
	co.eo.pool_bytes = o->pool_size;
	co.eo.depth = (unsigned)o->depth;
	co.eo.threads = o->threads ? o->threads : rd_engine_default_threads();
	co.eo.window = rdcp_window();
	/* --chmod: applied here, to what is sent (a push) or received (a pull) */
	for (i = 0; i < o->nchmod; i++) {
		if (rd_chmod_parse(&chmod, o->chmod[i], rd_sink_process_umask())) {
			code = error_out("--chmod: too many modes in all", RD_EUSAGE);
			goto out;
		}
	}
	co.eo.chmod = o->nchmod ? &chmod : NULL;
	co.eo.digest = o->encrypt ? RD_DIGEST_AEAD : o->checksum_choice; /* NULL: the server's */
	if (o->encrypt && o->checksum_choice && strcmp(o->checksum_choice, RD_DIGEST_AEAD)) {
		code =
		    error_out("--encrypt uses aes-128-gcm for every chunk: drop --checksum-choice",
			      RD_EUSAGE);
		goto out;
	}
	if (op.kind == RD_OP_DAEMON) {
		char msg[512];

		if (rdcp_tls_client(o, op.user, op.host, port, &co.tls, msg, sizeof(msg))) {
			code = error_out(msg, RD_EUSAGE);
			goto out;
		}
	}
	co.co.timeout_ms = o->timeout_s * 1000;
	co.co.verbose = o->verbose;
	co.co.transport = o->rdma_host ? RD_XPORT_RDMA : o->transport;
	co.co.family = o->family;
	co.co.lanes = o->lanes;
	co.co.one_rail = o->one_rail;
	co.co.rdma_devices = o->rdma_devices;
	/* TCP: with workers, bulk payloads move on a thread of their own too */
	co.co.bulk_thread = co.eo.threads > 1;
	co.co.phase = on_phase;

	/* a local copy is itemized as rsync does, from the receiver: ">f" */
	if (rdcp_out_open(&ro, o, co.push && !co.local_dest)) {
		code = RDCP_EXIT_FILEIO;
		goto out;
	}
	g_cl = cl;
	cl->on_connected = on_connected;
	cl->on_phase = on_phase;
	cl->ctx = &ro;
	co.eo.stop = &g_stop;
	co.eo.stop_text = "the copy was interrupted (a signal): what arrived is kept";
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	cl->e.report = rdcp_out_report;
	cl->e.item = rdcp_out_item;
	cl->e.deleted = rdcp_out_deleted;
	cl->e.report_ctx = &ro;
	if (o->verbose)
		fprintf(stderr,
			"rdcp: plan: chunks of %" PRIu64 " KiB, checksum %s, %d chunks in flight, "
			"receive pool %" PRIu64 " MiB, fsync %s, %u thread%s\n",
			(o->chunk_size ? o->chunk_size : RD_CHUNK_DEFAULT) / 1024,
			co.eo.digest ? co.eo.digest : "the server's choice",
			o->depth ? o->depth : RD_ENGINE_DEPTH_DEFAULT,
			(uint64_t)((o->pool_size ? o->pool_size : RD_ENGINE_POOL_DEFAULT) >> 20),
			o->fsync ? "on" : "off", co.eo.threads, co.eo.threads == 1 ? "" : "s");
	g_out = &ro;
	if (o->compress)
		rdcp_out_note(&ro,
			      "-z: nothing is compressed (the data moves over %s, "
			      "faster than it could be compressed)",
			      co.co.transport == RD_XPORT_TCP ? "TCP" : "RDMA or TCP");
	/* --progress, -P, --info=progress[12]: drawn even off a terminal; progress0: never */
	meter_flags = (o->info.progress > 0 ? RD_PROGRESS_FORCE : 0) |
		      (o->info.progress >= 2 ? RD_PROGRESS_TOTAL : 0) | RD_PROGRESS_HUMAN(o->human);
	if (!o->quiet && !o->json && o->info.progress)
		rd_progress_start(&ro.meter, stderr, &cl->e.st, meter_flags);
	t0 = now_s();
	w0 = time(NULL);
	for (attempt = 0;; attempt++) {
		cl->connected = 0;
		if (op.kind == RD_OP_SSH)
			ret = run_over_ssh(o, &op, cl, &co, raw, nremote, &rstatus);
		else
			ret = rd_client_run(cl, &co);
		/*
		 * --retries: a connection that dropped mid-copy (not one that
		 * never came up) is made again after a backoff of 1, 2, 4 ...
		 * 30 s; the receiver's partials make the next attempt resume.
		 * A server that turned us away as busy (at one of its limits) is
		 * asked again the same way, each wait drawn between half and
		 * one and a half of it: clients turned away together (16 ranks
		 * of one job) do not all come back at the same instant.
		 */
		/* once connected, a refused reconnect counts as an attempt too */
		ever_connected |= cl->connected;
		busy = ret == -RD_EBUSY;
		if ((!busy && ((ret != -RD_ECONN && ret != -RD_ETIMEOUT) || !ever_connected)) ||
		    attempt >= o->retries || g_stop)
			break;
		moved_before += rd_stat_get(&cl->e.st.bytes_data);
		delay = attempt < 5 ? 1u << attempt : 30u;
		if (delay > 30)
			delay = 30;
		delay_ms = delay * 1000u;
		if (busy)
			delay_ms = delay_ms / 2 + (unsigned)rand_r(&seed) % (delay_ms + 1);
		rd_progress_stop(ro.meter);
		ro.meter = NULL;
		if (!o->quiet && busy)
			fprintf(stderr,
				"rdcp: %s\nrdcp: server busy: trying again (%d/%d) in %.1f s\n",
				cl->err.msg, attempt + 1, o->retries, delay_ms / 1000.0);
		else if (!o->quiet)
			fprintf(stderr, "rdcp: %s\nrdcp: reconnecting (%d/%d) in %u s\n", cl->err.msg,
				attempt + 1, o->retries, delay);
		nap_ms(delay_ms);
		if (g_stop)
			break;
		if (!o->quiet && !o->json && o->info.progress)
			rd_progress_start(&ro.meter, stderr, &cl->e.st, meter_flags);
	}
	rd_stat_add(&cl->e.st.bytes_data, moved_before); /* all attempts */
	dt = now_s() - t0;
	rd_progress_stop(ro.meter);
	ro.meter = NULL;
	/* rsync's total bytes: what went over the connections, and the data written here */
	ro.rep.counts.sent = cl->bytes_sent;
	ro.rep.counts.received = cl->bytes_rcvd + (co.push ? 0 : rd_stat_get(&cl->e.st.bytes_data));
	if (co.push && cl->honoured && (co.flags & ~cl->honoured & (RD_OF_OWNER | RD_OF_GROUP)))
		rdcp_out_note(&ro,
			      "%s does not keep owners or groups for this client; files "
			      "belong to the server's user",
			      op.host);
	if (!co.push && cl->connected && (co.flags & ~cl->honoured & RD_OF_COPY_LINKS))
		rdcp_out_note(&ro,
			      "%s sends symlinks as symlinks (-L): a daemon follows none, one "
			      "could lead out of its module",
			      op.host);
	if (co.push && cl->honoured && (co.flags & ~cl->honoured & (RD_OF_ACLS | RD_OF_DEVICES)))
		rdcp_out_note(&ro,
			      "%s does not keep ACLs or devices for this client; they are "
			      "not sent",
			      op.host);
	phases(&ro.rep.phases, cl, co.push);
	if (o->verbose >= 2 && ro.rep.phases.set)
		print_phases(&ro.rep.phases);
	if (ret && ret != -RD_EPARTIAL) {
		rdcp_out_fatal(&ro, ret, cl->err.msg);
		code = rdcp_error_out(cl->err.msg, ret, cl->stage);
		if (g_stop && cl->connected && !o->json)
			say_interrupted(o, rdcp_out_entries(&ro), rd_stat_get(&cl->e.st.bytes_data));
		goto summary;
	}
	if (!o->quiet && !o->json && o->info.stats >= 2) {
		rdcp_out_stats(&ro, &cl->e.st, (long)(time(NULL) - w0));
	} else if (!o->quiet && !o->json && o->info.stats) {
		char line[RD_PROGRESS_SUMMARY_MAX];

		rd_progress_summary(line, sizeof(line), &cl->e.st, rdcp_out_entries(&ro), dt,
				    cl->e.digest_name);
		printf("%s\n", line);
	}
	if (o->verbose && cl->connected)
		fprintf(stderr, "rdcp: window: %u entries in flight at most (%s)\n", cl->e.o.window,
			cl->honoured & RD_OF_WINDOW ? "agreed with the server"
						    : "the peer's protocol has no wider window");
	/* a lane that failed over during the copy: said even without -v */
	if (cl->connected && cl->info.failovers && !o->quiet)
		fprintf(stderr, "rdcp: %s\n", cl->info.rails_note);
	if (o->verbose && cl->info.lanes > 1 && cl->lane_bytes[0] + cl->lane_bytes[1]) {
		unsigned k;

		for (k = 0; k < cl->info.lanes; k++)
			fprintf(stderr, "rdcp: lane %u: %llu bytes written from here on %s\n", k,
				(unsigned long long)cl->lane_bytes[k],
				cl->info.rail_dev[cl->lane_rail[k] < RD_RAILS_MAX ? cl->lane_rail[k]
										   : 0]);
	}
	if (ret == 0 && rstatus > 0) {
		fprintf(stderr, "rdcp: the remote side exited with status %d\n", rstatus);
		code = rstatus;
		goto summary;
	}
	if (ret == -RD_EPARTIAL) {
		struct rdcp_tally t = {
		    .ok = rdcp_out_entries(&ro),
		    .failed = ro.rep.counts.failed,
		    .vanished = ro.rep.counts.vanished,
		    .first_status = ro.rep.counts.first_status,
		};

		code = rdcp_exit_partial(&t);
		rdcp_out_failures(&ro);
		goto summary;
	}
	code = RDCP_EXIT_OK;
	/* --delete: stopped by --max-delete (rsync's 25), or turned off (said already) */
	if (cl->e.st.del_limited)
		code = RDCP_EXIT_MAX_DELETE;
	else if (cl->e.st.del_off)
		code = RDCP_EXIT_PARTIAL;
summary:
	rdcp_out_log_end(&ro, code);
	if (o->json) {
		struct rusage ru;

		ro.rep.cost.registered_peak = cl->e.st.reg_peak;
		ro.rep.cost.registered_ctrl = cl->info.reg_ctrl;
		ro.rep.cost.rss_peak = 1;
		if (!getrusage(RUSAGE_SELF, &ru) && ru.ru_maxrss > 0)
			ro.rep.cost.rss_peak = (uint64_t)ru.ru_maxrss * 1024;
		ro.rep.cost.startup_s = g_time.ready > 0 ? g_time.ready - g_time.start : 0;
		rd_report_json(stdout, &ro.rep, &cl->e.st, dt,
			       cl->e.digest_name[0] ? cl->e.digest_name : "", code);
		fflush(stdout);
	}
	rdcp_out_close(&ro);
	g_out = NULL;
out:
	rd_filter_free(filter);
	free(names);
	free(names_buf);
	free(raw);
	free(norm);
	free(local);
	free(remote);
	free(cl);
	return code;
}
