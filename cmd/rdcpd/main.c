// SPDX-License-Identifier: MIT
/*
 * rdcpd: serve modules over RDMA. Parses options, reads the config
 * (lib/conf merges the two), installs signal handlers, logs; lib/daemon
 * does the rest.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cmd/rdcpd/rdcpd.h"
#include "lib/sink/rd_sink.h"
#include "lib/base/rd_escape.h"
#include "lib/base/rd_ids.h"
#include "lib/base/rd_num.h"
#include "lib/conf/rd_conf.h"
#include "lib/daemon/rd_access.h"
#include "lib/daemon/rd_activity.h"
#include "lib/daemon/rd_daemon.h"
#include "lib/daemon/rd_status.h"
#include "lib/daemon/rd_sweep.h"
#include "lib/metrics/rd_metrics.h"
#include "lib/proto/rd_proto.h"
#include "lib/sdnotify/rd_sd_notify.h"
#include "lib/version/rd_version.h"

_Static_assert(RD_CONF_THREADS_MAX == RD_ENGINE_THREADS_MAX, "threads = bound of rdcpd.conf");

/*
 * What this rdcpd enforces of the config (RD_CONF_CAP_*): modules, listen,
 * port, transport, max connections, memory budget, idle timeout, log level,
 * TLS authentication (secrets file, certificates), hosts allow/deny, auth
 * users, read/write only, require encryption, checksum, transfer log,
 * metrics, status socket, partial max age, list, max rate. Settings that
 * restrict access and are not enforced make it refuse to start (see
 * rd_conf_check_support).
 */
#define RDCPD_CAPS                                                                               \
	(RD_CONF_CAP_TCP | RD_CONF_CAP_AUTH | RD_CONF_CAP_HOSTS | RD_CONF_CAP_AUTH_USERS |       \
	 RD_CONF_CAP_WRITE_ONLY | RD_CONF_CAP_ENCRYPTION | RD_CONF_CAP_CHECKSUM |                \
	 RD_CONF_CAP_MULTI_LISTEN | RD_CONF_CAP_IDENTITY | RD_CONF_CAP_DROP |                    \
	 RD_CONF_CAP_MODULE_CONNS | RD_CONF_CAP_LIMITS | RD_CONF_CAP_XFERLOG |                   \
	 RD_CONF_CAP_METRICS | RD_CONF_CAP_STATUS | RD_CONF_CAP_PARTIAL_AGE | RD_CONF_CAP_RATE | \
	 RD_CONF_CAP_DELETE)

#define RD_RELOAD_MAX 1024 /* reloads kept before SIGHUP is refused */

static volatile int stop_flag, reload_flag;

static void on_hup(int sig)
{
	(void)sig;
	__atomic_store_n(&reload_flag, 1, __ATOMIC_RELAXED);
}

static void on_signal(int sig)
{
	(void)sig;
	/* on whichever thread the kernel picked: the accept loop reads it atomically */
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
}

struct opts;

struct logctx {
	const char *ready_file;
	int checking; /* --check-config: problems go plainly to stderr */
	struct rdcpd_log log; /* where lines go: file, journal, syslog, stderr */
	struct rd_act *act;   /* sessions and counters: metrics, status */
	int foreground;
	const struct rd_conf *conf; /* the current one (read by other threads: atomic) */
	struct rd_daemon_cfg *cfg; /* what reloads change */
	const struct opts *opts;
	/* Every module table, secrets and reloaded config ever used: sessions
	 * that started under an old configuration keep pointers into it. */
	struct rd_module *old_mods[RD_RELOAD_MAX + 1];
	struct rd_secrets *old_secrets[RD_RELOAD_MAX + 1];
	struct rd_tls_ctx *old_tls[RD_RELOAD_MAX + 1];
	struct rd_conf *old_confs[RD_RELOAD_MAX];
	int nold, nconfs;
	unsigned window; /* entries per session, chosen at start (configure) */
	/* What one session may pin (bytes), what ulimit -l is charged for it,
	 * over how many rails; sessions the budget and the limit allow. */
	uint64_t pin, charged;
	unsigned rails;
	int conns;
};

static void log_line(void *ctx, int level, const char *line)
{
	struct logctx *lc = ctx;

	rdcpd_log_line(&lc->log, level, line);
}

/* The lines an operator filters on: with their journal fields (cmd/rdcpd/log.c). */
static void log_event(void *ctx, int level, const char *line, const struct rd_daemon_event *ev)
{
	struct logctx *lc = ctx;

	rdcpd_log_event(&lc->log, level, line, ev);
}

/* A config problem: "FILE:LINE: message" (logged when starting the daemon). */
static void on_problem(void *ctx, const char *file, unsigned line, int sev, const char *msg)
{
	struct logctx *lc = ctx;
	char where[PATH_MAX + 32], text[PATH_MAX + 2 * RD_CONF_MSG_MAX], esc[4 * sizeof(text)];

	if (file && line)
		snprintf(where, sizeof(where), "%s:%u", file, line);
	else
		snprintf(where, sizeof(where), "%s", file ? file : "rdcpd");
	snprintf(text, sizeof(text), "%s: %s%s", where, sev == RD_CONF_WARNING ? "warning: " : "",
		 msg);
	if (!lc->checking) {
		log_line(lc, sev == RD_CONF_WARNING ? RD_LOG_WARN : RD_LOG_ERR, text);
		return;
	}
	rd_escape(esc, sizeof(esc), text, strlen(text));
	fprintf(stderr, "%s\n", esc);
}

/* Tell systemd (Type=notify) about a state change; logged if that fails. */
static void notify(struct logctx *lc, const char *state)
{
	struct rd_err e;

	rd_err_clear(&e);
	if (rd_sd_notify(state, &e) < 0)
		log_line(lc, RD_LOG_WARN, e.msg);
}

/*
 * Registration counts against RLIMIT_MEMLOCK once CAP_IPC_LOCK is gone,
 * and the kernel charges every registration: a session over r rails is
 * charged r times its pool. While still root, raise the limit to what the
 * sessions the budget allows are charged (plus room for the listeners), so
 * no capability has to be kept: an unprivileged rdcpd pins what its budget
 * allows and nothing more.
 */
static int memlock_for_budget(const struct logctx *lc, char *line, size_t len)
{
	const struct rd_conf *c = lc->conf;
	uint64_t want =
	    (uint64_t)(lc->conns > 0 ? lc->conns : 1) * lc->charged + ((uint64_t)16 << 20);
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return 0;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return 0;
	rl.rlim_cur = want;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
		rl.rlim_max = want;
	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		snprintf(line, len,
			 "cannot raise the locked-memory limit to %llu MiB for the memory "
			 "budget before switching to user %s: %s",
			 (unsigned long long)(want >> 20), c->user, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * user/group: give up root for good before any listener or RDMA file
 * descriptor exists: the kernel refuses the RDMA devices' fds to a thread
 * whose credentials changed after they were opened (lib/base/rd_fsid.h),
 * so the drop cannot come after binding (a port below 1024 with 'user' is
 * a configuration error for that reason). No
 * capability is kept, CAP_IPC_LOCK included: the locked-memory limit is
 * raised to the memory budget first (memlock_for_budget()).
 */
static int drop_privileges(struct logctx *lc)
{
	const struct rd_conf *c = lc->conf;
	char line[256];
	struct rd_ids_user pw;
	gid_t gid;
	int r, e;

	if (!c->user[0])
		return 0;
	/* buffers that grow (lib/base/rd_ids.h): a large group is still found */
	r = rd_ids_user(c->user, &pw, &e);
	if (r) {
		snprintf(line, sizeof(line), "user %s: %s", c->user,
			 r == -RD_ENOENT ? "no such user" : strerror(e ? e : EIO));
		goto fail;
	}
	gid = pw.gid;
	if (c->group[0]) {
		r = rd_ids_group(c->group, &gid, &e);
		if (r) {
			snprintf(line, sizeof(line), "group %s: %s", c->group,
				 r == -RD_ENOENT ? "no such group" : strerror(e ? e : EIO));
			goto fail;
		}
	}
	if (memlock_for_budget(lc, line, sizeof(line)))
		goto fail;
	if (setgroups(1, &gid) || setgid(gid) || setuid(pw.uid) || !setuid(0)) {
		snprintf(line, sizeof(line), "cannot switch to user %s: %s", c->user,
			 strerror(errno ? errno : EPERM));
		goto fail;
	}
	snprintf(line, sizeof(line), "running as user %s (uid %u, gid %u)", c->user,
		 (unsigned)pw.uid, (unsigned)gid);
	log_line(lc, RD_LOG_INFO, line);
	return 0;
fail:
	log_line(lc, RD_LOG_ERR, line);
	return -1;
}

static void on_ready(void *ctx, unsigned port, const char *where)
{
	struct logctx *lc = ctx;
	char line[1700], state[1800];
	FILE *f;

	snprintf(line, sizeof(line), "listening on port %u: %s", port, where);
	log_line(ctx, RD_LOG_INFO, line);
	rd_act_set_listeners(lc->act, port, where);
	snprintf(state, sizeof(state), "READY=1\nSTATUS=%s", line);
	notify(lc, state);
	if (lc->ready_file) {
		f = fopen(lc->ready_file, "w");
		if (f) {
			fprintf(f, "%u\n", port);
			fclose(f);
		}
	}
}

/* Shutting down (sessions get their grace period next): tell systemd. */
static void on_stopping(void *ctx)
{
	notify(ctx, "STOPPING=1");
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: rdcpd [--foreground] [--config FILE] [options]\n"
	    "       rdcpd [--foreground] --no-auth --module NAME=DIR[,ro] [options]\n"
	    "       rdcpd --check-config | --dump-config [--config FILE] [options]\n"
	    "       rdcpd --status [--json] [--config FILE]\n"
	    "\n"
	    "      --config FILE           read FILE (default %s, if it exists)\n"
	    "      --check-config          report every problem of the config and exit\n"
	    "      --dump-config           print the configuration as rdcpd would run it\n"
	    "                              (every key, defaults included) and exit\n"
	    "      --status                ask the running daemon (its status socket) for its\n"
	    "                              sessions, memory and listeners\n"
	    "      --json                  with --status: one JSON object\n"
	    "  -m, --module NAME=DIR[,ro|,delete]  serve DIR as NAME (repeatable); ',ro'\n"
	    "                              refuses pushes, ',delete' lets clients delete\n"
	    "  -l, --listen ADDR           listen on this address, IPv4 or IPv6 (repeatable;\n"
	    "                              default: every address of both families)\n"
	    "  -P, --port PORT             port (default %d)\n"
	    "      --transport MODE        rdma, tcp, or both (default: RDMA and TCP on the\n"
	    "                              same port; TCP alone where RDMA is missing)\n"
	    "      --foreground            log to stderr (default: syslog); rdcpd never forks\n"
	    "      --no-auth               serve every module without authentication (required\n"
	    "                              for --module: anyone who reaches the port can use it)\n"
	    "      --max-conns N           concurrent clients (default 16)\n"
	    "      --max-conns-per-host N  clients from one address not yet authenticated\n"
	    "                              (default 4)\n"
	    "      --pool-size SIZE        receive pool per connection (default 64M)\n"
	    "      --threads N             threads per connection reading, hashing, verifying\n"
	    "                              and writing chunks (default: the cores, at most 8)\n"
	    "      --max-lanes N           RDMA queue pairs one session may run over (1..8;\n"
	    "                              default 4; a client asks, this caps it)\n"
	    "      --fsync                 fsync every received file before renaming it\n"
	    "      --timeout SECONDS       drop a client that moves nothing this long\n"
	    "                              (default 30)\n"
	    "      --ready-file PATH       write the bound port here once listening\n"
	    "  -v, --verbose               more log lines\n"
	    "      --version               print the version\n"
	    "  -h, --help                  this text\n"
	    "\n"
	    "With --config, --module adds modules, --listen replaces the file's listen\n"
	    "addresses, and --port, --transport, --max-conns, --max-conns-per-host,\n"
	    "--threads, --max-lanes, --timeout and -v override the file.\n",
	    RD_CONF_DEFAULT_PATH, RD_DEFAULT_PORT);
}

struct opts {
	struct rd_conf_cli cli;
	const char *modules[RD_CONF_MODULES_MAX]; /* cli.modules */
	const char *listen[RD_CONF_LISTEN_MAX];	  /* cli.listen */
	const char *config;
	int check, dump, foreground;
	int status, json; /* rdcpd --status [--json] */
	uint64_t pool_bytes;
	unsigned sink_flags;
};

static void dump_line(void *ctx, const char *line)
{
	(void)ctx;
	printf("%s\n", line);
}

_Static_assert(RD_CONF_LANES_DEFAULT == RD_LANES_DEFAULT_CAP, "max lanes default");

/* 0 to go on, 1 on a usage error (said), -1 after --help or --version. */
static int parse_args(int argc, char **argv, struct opts *o, struct logctx *lc)
{
	static const struct option lo[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"check-config", no_argument, NULL, 'K'},
	    {"dump-config", no_argument, NULL, 'D'},
	    {"status", no_argument, NULL, 'Q'},
	    {"json", no_argument, NULL, 'J'},
	    {"module", required_argument, NULL, 'm'},
	    {"listen", required_argument, NULL, 'l'},
	    {"port", required_argument, NULL, 'P'},
	    {"transport", required_argument, NULL, 'X'},
	    {"foreground", no_argument, NULL, 'F'},
	    {"no-auth", no_argument, NULL, 'N'},
	    {"max-conns", required_argument, NULL, 'C'},
	    {"max-conns-per-host", required_argument, NULL, 'H'},
	    {"pool-size", required_argument, NULL, 'S'},
	    {"threads", required_argument, NULL, 'W'},
	    {"max-lanes", required_argument, NULL, 'L'},
	    {"fsync", no_argument, NULL, 'Y'},
	    {"timeout", required_argument, NULL, 'T'},
	    {"ready-file", required_argument, NULL, 'R'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	o->cli.modules = o->modules;
	o->cli.listen = o->listen;
	while ((c = getopt_long(argc, argv, "m:l:P:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'K':
			o->check = 1;
			break;
		case 'D':
			o->check = 1;
			o->dump = 1;
			break;
		case 'Q':
			o->status = 1;
			break;
		case 'J':
			o->json = 1;
			break;
		case 'm':
			if (o->cli.nmodules >= RD_CONF_MODULES_MAX) {
				fprintf(stderr, "rdcpd: at most %d modules\n", RD_CONF_MODULES_MAX);
				return 1;
			}
			o->modules[o->cli.nmodules++] = optarg;
			break;
		case 'l':
			if (o->cli.nlisten >= RD_CONF_LISTEN_MAX) {
				fprintf(stderr, "rdcpd: at most %d --listen addresses\n",
					RD_CONF_LISTEN_MAX);
				return 1;
			}
			o->listen[o->cli.nlisten++] = optarg;
			break;
		case 'P':
			o->cli.port = optarg;
			break;
		case 'X':
			o->cli.transport = optarg;
			break;
		case 'F':
			o->foreground = 1;
			break;
		case 'N':
			o->cli.no_auth = 1;
			break;
		case 'C':
			if (rd_num_parse(optarg, 0, 1, 4096, &v)) {
				fprintf(stderr, "rdcpd: --max-conns '%s': give 1 to 4096\n",
					optarg);
				return 1;
			}
			o->cli.max_conns = (int)v;
			break;
		case 'H':
			if (rd_num_parse(optarg, 0, 1, 4096, &v)) {
				fprintf(stderr,
					"rdcpd: --max-conns-per-host '%s': give 1 to 4096\n",
					optarg);
				return 1;
			}
			o->cli.max_conns_per_host = (int)v;
			break;
		case 'L':
			if (rd_num_parse(optarg, 0, 1, RD_LANES_MAX, &v)) {
				fprintf(stderr, "rdcpd: --max-lanes '%s': give 1 to %d\n", optarg,
					RD_LANES_MAX);
				return 1;
			}
			o->cli.max_lanes = (int)v;
			break;
		case 'S':
			if (rd_num_parse(optarg, RD_NUM_SIZE, 1u << 20, 1ull << 40, &v)) {
				fprintf(stderr, "rdcpd: --pool-size '%s': give 1M to 1024G\n",
					optarg);
				return 1;
			}
			o->pool_bytes = v;
			break;
		case 'W':
			if (rd_num_parse(optarg, 0, 1, RD_ENGINE_THREADS_MAX, &v)) {
				fprintf(stderr, "rdcpd: --threads '%s': give 1 to %d\n", optarg,
					RD_ENGINE_THREADS_MAX);
				return 1;
			}
			o->cli.threads = (int)v;
			break;
		case 'Y':
			o->sink_flags |= RD_SINK_FSYNC;
			break;
		case 'T':
			if (rd_num_parse(optarg, 0, 1, 86400, &v)) {
				fprintf(stderr, "rdcpd: --timeout '%s': give seconds, 1 to 86400\n",
					optarg);
				return 1;
			}
			o->cli.idle_timeout_s = (int)v;
			break;
		case 'R':
			lc->ready_file = optarg;
			break;
		case 'v':
			o->cli.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return -1;
		case 'V':
			printf("rdcpd %s (protocol %d..%d)\n", RDCP_VERSION, RD_PROTO_MIN,
			       RD_PROTO_MAX);
			return -1;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "rdcpd: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	if (o->json && !o->status) {
		fprintf(stderr, "rdcpd: --json goes with --status\n");
		return 1;
	}
	return 0;
}

/* The largest power-of-two chunk with two slots in a pool of pool bytes. */
static uint32_t max_chunk_for(uint64_t pool)
{
	uint32_t c = RD_CHUNK_MAX;

	while (c > RD_CHUNK_MIN && (uint64_t)c * 2 > pool)
		c >>= 1;
	return c;
}

/*
 * Read the config (the file given, else the default one if it exists),
 * merge the command line, check. Problems are reported as they are found.
 * *window: 0 = choose the widest window (rd_session.h) whose sessions'
 * open files the hard limit allows, else keep it (a reload) and check it.
 * Returns the number of errors, or -1 when there is nothing to serve.
 */
static int configure(struct rd_conf *c, const struct opts *o, int *conns, uint64_t *nofile,
		     struct logctx *lc)
{
	const char *path = o->config;
	unsigned *window = &lc->window;
	uint64_t pool = o->pool_bytes ? o->pool_bytes : RD_ENGINE_POOL_DEFAULT;
	struct rlimit rl;
	int n;

	if (!path && !access(RD_CONF_DEFAULT_PATH, F_OK))
		path = RD_CONF_DEFAULT_PATH;
	if (!path && !o->cli.nmodules) {
		fprintf(stderr,
			"rdcpd: nothing to serve: %s does not exist; give --config FILE or "
			"--module NAME=DIR\n",
			RD_CONF_DEFAULT_PATH);
		return -1;
	}
	if (path)
		rd_conf_load(c, path);
	rd_conf_apply_cli(c, &o->cli);
	rd_conf_check(c, RD_CONF_CHECK_SYSTEM);
	rd_conf_check_support(c, RDCPD_CAPS);
	/*
	 * Each connection counts its pool, its control buffers and the rails
	 * it may spread over (only a listener on every address names rails).
	 * Without CAP_IPC_LOCK (not root, or after switching to 'user': see
	 * memlock_for_budget()) the locked-memory limit bounds them too, and
	 * it is charged per rail. Counted once, at start: lanes and listen
	 * addresses change only with a restart.
	 */
	if (!lc->pin)
		lc->pin = rd_daemon_session_pin(pool, (unsigned)c->max_lanes, c->nlisten == 0,
						&lc->charged, &lc->rails);
	*conns = rd_conf_budget_conns(c, lc->pin);
	if (*conns > 0) {
		n = rd_daemon_memlock_sessions(lc->charged);
		if (n < *conns)
			*conns = n > 0 ? n : 1;
	}
	/* The open files those connections may hold, against RLIMIT_NOFILE. */
	*nofile = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	if (!*window)
		*window = *conns > 0 ? rd_session_window_fit(
					   rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max,
					   (unsigned)*conns, RD_CONF_FDS_RESERVE)
				     : RD_WINDOW_DEFAULT;
	if (*conns > 0 &&
	    rd_conf_fd_budget(c, *conns, RD_SESSION_FDS_FOR(*window),
			      rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur,
			      rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max, nofile) != 1)
		*nofile = 0;
	return (int)c->nerrors;
}

static unsigned long long mib_up(uint64_t b)
{
	return (unsigned long long)((b + (1u << 20) - 1) >> 20);
}

/* Why there are fewer connections than 'max connections': the budget, or ulimit -l. */
static void log_budget(struct logctx *lc, const struct rd_conf *c, int conns, uint64_t pool)
{
	char line[512], rails[48] = "";

	if (lc->rails > 1)
		snprintf(rails, sizeof(rails), ", over up to %u rails", lc->rails);
	if (lc->pin && (uint64_t)conns < c->memory_budget / lc->pin)
		snprintf(line, sizeof(line),
			 "the locked-memory limit (ulimit -l) allows %d connection%s: each is "
			 "charged up to %llu MiB (a %llu MiB pool and control buffers%s; every "
			 "rail registers them again); raise it (LimitMEMLOCK=) for more",
			 conns, conns == 1 ? "" : "s", mib_up(lc->charged), mib_up(pool), rails);
	else
		snprintf(line, sizeof(line),
			 "memory budget %llu MiB (%s) allows %d connection%s: each pins up to %llu "
			 "MiB (a %llu MiB pool and control buffers%s)",
			 (unsigned long long)(c->memory_budget >> 20),
			 c->memory_budget_from[0] ? c->memory_budget_from : "set in the configuration",
			 conns,
			 conns == 1 ? "" : "s", mib_up(lc->pin), mib_up(pool), rails);
	log_line(lc, RD_LOG_WARN, line);
}

static const char *listen_list(const struct rd_conf *c, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < c->nlisten && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", c->listen[i]);
	return buf;
}

static void check_summary(const struct rd_conf *c, int conns)
{
	char where[RD_CONF_LISTEN_MAX * 66], per_user[48] = "";
	int i, ro = 0;

	for (i = 0; i < c->nmods; i++)
		ro += c->mods[i]->read_only;
	if (c->max_conns_per_user > 0)
		snprintf(per_user, sizeof(per_user), " (%d per user)", c->max_conns_per_user);
	printf("%s: ok: %d module%s (%d read-only), port %u, %s, up to %d connection%s%s%s\n",
	       c->file[0] ? c->file : "command line", c->nmods, c->nmods == 1 ? "" : "s", ro,
	       c->port,
	       c->nlisten ? listen_list(c, where, sizeof(where)) : "all addresses (IPv4 and IPv6)",
	       conns, conns == 1 ? "" : "s", per_user, c->nwarnings ? " (see the warnings)" : "");
}

/* Where a setting came from, for the start-up log. */
static const char *set_from(const struct rd_conf *c, int key)
{
	if (!c->set[key])
		return "default";
	return c->set[key] == RD_CONF_FROM_CLI ? "command line" : "rdcpd.conf";
}

/* "each connection: 3 threads (rdcpd.conf), up to 2 lanes (default)" */
static void log_session_shape(struct logctx *lc, const struct rd_conf *c,
			      const struct rd_daemon_cfg *cfg)
{
	char line[200];

	snprintf(line, sizeof(line),
		 "each connection: %u thread%s (%s), up to %u lane%s (%s), a window of %u "
		 "entries (open files)",
		 cfg->server.eo.threads, cfg->server.eo.threads == 1 ? "" : "s",
		 set_from(c, RD_CK_THREADS), cfg->co.lanes ? cfg->co.lanes : RD_LANES_DEFAULT_CAP,
		 (cfg->co.lanes ? cfg->co.lanes : RD_LANES_DEFAULT_CAP) == 1 ? "" : "s",
		 set_from(c, RD_CK_MAX_LANES), cfg->server.eo.window);
	log_line(lc, RD_LOG_INFO, line);
}

/* Raise the soft open-file limit to need (configure said the hard one allows it). */
static void raise_nofile(struct logctx *lc, uint64_t need, int conns)
{
	struct rlimit rl;
	char line[256];

	if (!need || getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return;
	snprintf(line, sizeof(line), "open-file limit raised from %llu to %llu for %d connections",
		 (unsigned long long)rl.rlim_cur, (unsigned long long)need, conns);
	rl.rlim_cur = (rlim_t)need;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		snprintf(line, sizeof(line),
			 "could not raise the open-file limit to %llu for %d connections: %s",
			 (unsigned long long)need, conns, strerror(errno));
	log_line(lc, RD_LOG_INFO, line);
}

/* A root daemon: the identity a module's files are read and written as. */
static void log_identity(struct logctx *lc, const struct rd_conf_module *m)
{
	struct rd_access_ident id;
	struct rd_err err;
	char line[512];

	rd_err_clear(&err);
	if (rd_access_identity(m, &id, &err)) {
		log_line(lc, RD_LOG_ERR, err.msg);
		return;
	}
	if (!id.set || id.uid == 0) {
		if (!m->read_only) {
			snprintf(line, sizeof(line),
				 "WARNING: module %s acts as root (%s): files pushed into it are "
				 "owned by root and every file in it can be read and replaced "
				 "(clients' owners and setuid/setgid bits are never kept)",
				 m->name, id.set ? "uid = root" : "--module");
			log_line(lc, RD_LOG_WARN, line);
		}
	} else if (!m->uid[0]) {
		snprintf(line, sizeof(line),
			 "module %s: no uid: served as %s, uid %u gid %u, as rsyncd does "
			 "(set uid to serve it as another user)",
			 m->name, rd_access_default_uid(m), (unsigned)id.uid, (unsigned)id.gid);
		log_line(lc, RD_LOG_INFO, line);
	}
	rd_access_ident_free(&id);
}

/* The loud lines: what is served without authentication, or nothing at all. */
static void log_exports(struct logctx *lc, const struct rd_conf *c)
{
	char line[1024], fp[RD_TLS_FP_MAX];
	int i;

	if (!c->nmods) {
		snprintf(line, sizeof(line), "%s exports no modules: every request will be refused",
			 c->file[0] ? c->file : "the configuration");
		log_line(lc, RD_LOG_WARN, line);
	}
	if (c->no_auth && c->nmods)
		log_line(lc, RD_LOG_WARN,
			 "WARNING: running without authentication (--no-auth): anyone who can "
			 "reach this port can read and write every module");
	for (i = 0; i < c->nmods && !c->no_auth; i++) {
		if (!c->mods[i]->auth_none)
			continue;
		snprintf(line, sizeof(line),
			 "WARNING: module %s is served without authentication (auth = none): "
			 "anyone who can reach this port can %s it",
			 c->mods[i]->name, c->mods[i]->read_only ? "read" : "read and write");
		log_line(lc, RD_LOG_WARN, line);
	}
	for (i = 0; i < c->nmods; i++) {
		const char *real = lc->cfg && i < lc->cfg->server.nmods
				       ? lc->cfg->server.mods[i].path
				       : c->mods[i]->path;
		char via[PATH_MAX + 64] = "";

		if (strcmp(real, c->mods[i]->path))
			snprintf(via, sizeof(via), " (resolved to %s at load)", real);
		snprintf(line, sizeof(line), "module %s: %s%s%s", c->mods[i]->name,
			 c->mods[i]->path, via, c->mods[i]->read_only ? " (read-only)" : "");
		log_line(lc, RD_LOG_INFO, line);
	}
	if (c->secrets_file[0] && lc->cfg && !rd_tls_ctx_fingerprint(lc->cfg->tls.shared, fp)) {
		snprintf(line, sizeof(line),
			 "password logins: this daemon's key is %s (%s %s); clients pin it on "
			 "first contact, or check it with --ca",
			 fp, c->tls_cert[0] ? "tls certificate" : "host key",
			 c->tls_cert[0] ? c->tls_cert : c->host_key);
		log_line(lc, RD_LOG_INFO, line);
	}
	/*
	 * Who each module acts as (lib/daemon/rd_identity.c): a root rdcpd
	 * serves a module of the file without uid as nobody, like rsyncd; only
	 * "uid = root" and --module act as root. rd_server keeps no owners and
	 * no setuid bits for clients.
	 */
	for (i = 0; i < c->nmods && geteuid() == 0; i++)
		log_identity(lc, c->mods[i]);
}

/*
 * Point cfg at conf: its module table, who may connect (TLS 1.3 with the
 * secrets file, certificates, or anonymous) and the access decisions. The
 * new table and secrets join lc->retired (freed at exit).
 */
static int apply_conf(struct rd_daemon_cfg *cfg, struct rd_conf *conf, struct logctx *lc,
		      struct rd_err *err)
{
	struct rd_module *mods;
	struct rd_secrets *secrets = NULL;
	struct rd_tls_ctx *shared = NULL;
	struct rd_tls_cfg tls;
	int i;

	if (lc->nold > RD_RELOAD_MAX)
		return rd_err_set(err, RD_EUSAGE, 0, "too many reloads; restart rdcpd");
	if (conf->secrets_file[0] &&
	    rd_secrets_load(&secrets, conf->secrets_file, geteuid(), NULL, err))
		return -err->status;
	memset(&tls, 0, sizeof(tls));
	tls.role = RD_TLS_SERVER;
	/* No modules: anyone may come in to hear that nothing is served. */
	tls.allow_anon = rd_access_anon_any(conf) || !conf->nmods;
	if (secrets) {
		tls.lookup = rd_access_secret;
		tls.lookup_ctx = secrets;
		/* password logins prove the secret to this key: made at first start */
		if (!conf->tls_cert[0])
			tls.host_key_file = conf->host_key;
	}
	tls.cert_file = conf->tls_cert[0] ? conf->tls_cert : NULL;
	tls.key_file = conf->tls_key[0] ? conf->tls_key : NULL;
	tls.client_ca_file = conf->tls_client_ca[0] ? conf->tls_client_ca : NULL;
	/* one TLS context for every session of this configuration */
	if (rd_tls_ctx_new(&shared, &tls, err)) {
		rd_secrets_free(secrets);
		return -err->status;
	}
	tls.shared = shared;
	mods = calloc((size_t)(conf->nmods ? conf->nmods : 1), sizeof(*mods));
	if (!mods) {
		rd_tls_ctx_free(shared);
		rd_secrets_free(secrets);
		return rd_err_set(err, RD_ENOMEM, 0, "out of memory");
	}
	for (i = 0; i < conf->nmods; i++) {
		snprintf(mods[i].name, sizeof(mods[i].name), "%s", conf->mods[i]->name);
		snprintf(mods[i].path, sizeof(mods[i].path), "%s", conf->mods[i]->path);
		mods[i].readonly = conf->mods[i]->read_only;
		mods[i].write_only = conf->mods[i]->write_only;
		/* sessions open the directory pinned now, never a path re-resolved */
		if (rd_module_pin(&mods[i], err)) {
			free(mods);
			rd_tls_ctx_free(shared);
			rd_secrets_free(secrets);
			return -err->status;
		}
	}
	lc->old_mods[lc->nold] = mods;
	lc->old_tls[lc->nold] = shared;
	lc->old_secrets[lc->nold++] = secrets;
	cfg->server.mods = mods;
	cfg->server.nmods = conf->nmods;
	/* the partials sweeper reads it on its own thread */
	__atomic_store_n(&cfg->conf, conf, __ATOMIC_RELEASE);
	cfg->auth_timeout_ms = conf->auth_timeout_s * 1000;
	cfg->max_per_host = conf->max_conns_per_host;
	cfg->max_per_user = conf->max_conns_per_user;
	cfg->server.eo.idle_ms = conf->idle_timeout_s * 1000;
	cfg->server.eo.link_table = conf->link_table;
	cfg->tls = tls;
	return 0;
}

/*
 * SIGHUP: read the configuration again. New connections get the new rules;
 * sessions in flight finish under the old ones. A configuration with
 * problems is refused (each logged) and the old one stays. Listen
 * addresses, port and transport need a restart.
 */
static void on_reload(void *ctx)
{
	struct logctx *lc = ctx;
	struct rd_conf *c = rd_conf_new(on_problem, lc);
	struct rd_daemon_event reload_ev = {.kind = RD_EV_RELOAD};
	struct rd_err err;
	char line[512], why[PATH_MAX + 128];
	uint64_t nofile = 0;
	int conns = 0, n;

	if (!c) {
		log_line(lc, RD_LOG_ERR, "SIGHUP: out of memory; keeping the configuration");
		return;
	}
	n = configure(c, lc->opts, &conns, &nofile, lc);
	if (n) {
		snprintf(line, sizeof(line),
			 "SIGHUP: the new configuration is refused (%d problem%s); keeping the "
			 "old one",
			 n < 0 ? 1 : n, n == 1 ? "" : "s");
		log_event(lc, RD_LOG_ERR, line, &reload_ev);
		rd_conf_free(c);
		return;
	}
	if (apply_conf(lc->cfg, c, lc, &err)) {
		snprintf(line, sizeof(line), "SIGHUP: %s; keeping the old configuration", err.msg);
		log_event(lc, RD_LOG_ERR, line, &reload_ev);
		rd_conf_free(c);
		return;
	}
	/* the log files again (rotated): one that cannot be opened keeps the old one */
	if (rdcpd_log_open(&lc->log, c, lc->foreground, 1, why, sizeof(why))) {
		snprintf(line, sizeof(line), "SIGHUP: %s; writing where it went before", why);
		log_line(lc, RD_LOG_WARN, line);
	}
	if (c->port != lc->conf->port || c->nlisten != lc->conf->nlisten ||
	    c->transport != lc->conf->transport || c->threads != lc->conf->threads ||
	    c->max_lanes != lc->conf->max_lanes)
		log_line(lc, RD_LOG_WARN,
			 "SIGHUP: listen, port, transport, threads and max lanes "
			 "changes take effect at restart");
	lc->old_confs[lc->nconfs++] = c;
	__atomic_store_n(&lc->conf, c, __ATOMIC_RELEASE); /* the metrics' allow list reads it */
	rd_act_set_budget(lc->act, c->memory_budget, lc->pin);
	raise_nofile(lc, nofile, conns);
	lc->cfg->max_conns = conns;
	lc->conns = conns;
	log_exports(lc, c);
	snprintf(line, sizeof(line), "SIGHUP: configuration reloaded: %d module%s", c->nmods,
		 c->nmods == 1 ? "" : "s");
	log_event(lc, RD_LOG_INFO, line, &reload_ev);
}

static void retire_all(struct logctx *lc, struct rd_conf *first)
{
	int i;

	for (i = 0; i < lc->nold; i++) {
		free(lc->old_mods[i]);
		rd_tls_ctx_free(lc->old_tls[i]);
		rd_secrets_free(lc->old_secrets[i]);
	}
	for (i = 0; i < lc->nconfs; i++)
		rd_conf_free(lc->old_confs[i]);
	rd_conf_free(first);
}

/* The operator's threads beside the sessions: metrics, status socket, partials sweeper. */
struct ops_threads {
	struct rd_metrics_srv *metrics;
	struct rd_status_srv *status;
	struct rd_sweeper *sweeper;
};

/* metrics hosts allow, as the configuration says now. */
static int metrics_allow(void *ctx, const struct sockaddr *sa, socklen_t len)
{
	const struct logctx *lc = ctx;
	const struct rd_conf *c = __atomic_load_n(&lc->conf, __ATOMIC_ACQUIRE);
	struct rd_conf_net a;

	(void)len;
	return !rd_conf_addr_from_sockaddr(&a, sa) && rd_conf_metrics_allowed(c, &a);
}

static int metrics_render(void *ctx, FILE *out)
{
	const struct logctx *lc = ctx;

	return rd_act_prometheus(lc->act, out);
}

/* A group name or number; (gid_t)-1 for none or unknown (the config check said so). */
static gid_t group_id(const char *name)
{
	char buf[8192];
	struct group gr, *grp = NULL;
	char *end;
	unsigned long n;

	if (!name[0])
		return (gid_t)-1;
	n = strtoul(name, &end, 10);
	if (!*end)
		return (gid_t)n;
	if (getgrnam_r(name, &gr, buf, sizeof(buf), &grp) || !grp)
		return (gid_t)-1;
	return grp->gr_gid;
}

/*
 * After the switch to 'user' (they run as the daemon's account): the
 * metrics endpoint (an error when it cannot listen: the configuration
 * asks for it), the status socket (said when there is none), the sweeper.
 */
static int start_ops(struct logctx *lc, const struct rd_daemon_cfg *cfg, struct ops_threads *t)
{
	const struct rd_conf *c = lc->conf;
	struct rd_metrics_cfg mc;
	struct sockaddr_storage ss;
	struct rd_err err;
	char line[RD_ERR_MSG_MAX + 64];
	int ret;

	rd_err_clear(&err);
	if (c->metrics_listen[0]) {
		memset(&mc, 0, sizeof(mc));
		if (rd_conf_metrics_addr(c, &ss, &mc.addrlen)) {
			fprintf(stderr, "rdcpd: metrics listen %s: not an address\n",
				c->metrics_listen);
			return -1;
		}
		mc.addr = (struct sockaddr *)&ss;
		mc.allow = metrics_allow;
		mc.render = metrics_render;
		mc.ctx = lc;
		if (rd_metrics_start(&t->metrics, &mc, &err)) {
			fprintf(stderr, "rdcpd: %s\n", err.msg);
			return -1;
		}
		snprintf(line, sizeof(line), "metrics on http://%s/metrics", c->metrics_listen);
		log_line(lc, RD_LOG_INFO, line);
	}
	if (c->status_socket[0]) {
		ret = rd_status_start(&t->status, c->status_socket, group_id(c->status_group),
				      lc->act, &err);
		if (ret < 0) {
			fprintf(stderr, "rdcpd: %s\n", err.msg);
			return -1;
		}
		log_line(lc,
			 ret ? (err.status == RD_ENOENT ? RD_LOG_INFO : RD_LOG_WARN) : RD_LOG_INFO,
			 ret ? err.msg : "rdcpd --status answers on the status socket");
	}
	if (rd_sweeper_start(&t->sweeper, cfg, RD_SWEEP_INTERVAL_S, &err)) {
		fprintf(stderr, "rdcpd: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void stop_ops(struct ops_threads *t)
{
	rd_sweeper_stop(t->sweeper);
	rd_status_stop(t->status);
	rd_metrics_stop(t->metrics);
}

int main(int argc, char **argv)
{
	struct rd_conf *conf = NULL;
	struct rd_daemon_cfg cfg;
	struct rd_err err;
	const char *listen_addrs[RD_CONF_LISTEN_MAX];
	struct rd_daemon d;
	struct logctx lc = {0};
	struct ops_threads ops = {NULL, NULL, NULL};
	struct opts o;
	struct sigaction sa;
	char portbuf[8];
	uint64_t nofile = 0;
	int ret, conns = 0, i;

	memset(&o, 0, sizeof(o));
	rdcpd_log_init(&lc.log);
	ret = parse_args(argc, argv, &o, &lc);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (o.status)
		return rdcpd_status(o.config, o.json);
	lc.checking = o.check;
	conf = rd_conf_new(on_problem, &lc);
	if (!conf) {
		fprintf(stderr, "rdcpd: out of memory\n");
		return 1;
	}
	ret = configure(conf, &o, &conns, &nofile, &lc);
	lc.conns = conns;
	if (ret < 0) {
		ret = 1;
		goto out;
	}
	if (o.dump && !ret) {
		if (rd_conf_dump(conf, dump_line, NULL)) {
			fprintf(stderr, "rdcpd: a key of the configuration has no writer\n");
			ret = 1;
		}
		goto out;
	}
	if (o.check) {
		if (ret)
			fprintf(stderr, "rdcpd: %d problem%s in the configuration\n", ret,
				ret == 1 ? "" : "s");
		else
			check_summary(conf, conns);
		ret = ret ? 1 : 0;
		goto out;
	}
	if (ret) {
		fprintf(stderr, "rdcpd: not starting: %d problem%s in the configuration%s\n", ret,
			ret == 1 ? "" : "s",
			conf->file[0] ? " (rdcpd --check-config lists them)" : "");
		ret = 1;
		goto out;
	}
	/*
	 * rdcpd never forks (supervisors do that). Its lines go to the log
	 * file, else the journal (under systemd), else syslog without
	 * --foreground; files are opened now, while still root.
	 */
	{
		char why[PATH_MAX + 128];

		if (rdcpd_log_open(&lc.log, conf, o.foreground, 0, why, sizeof(why))) {
			fprintf(stderr, "rdcpd: not starting: %s\n", why);
			ret = 1;
			goto out;
		}
		/* started by hand on a terminal: say where the lines go, once */
		if (lc.log.dest == RDCPD_LOG_SYSLOG && isatty(STDERR_FILENO))
			fprintf(stderr, "rdcpd: running; it logs to syslog (journalctl -t rdcpd, "
					"or /var/log/syslog); --foreground logs here\n");
	}
	lc.foreground = o.foreground;
	lc.act = rd_act_new(RDCP_VERSION);
	if (!lc.act) {
		fprintf(stderr, "rdcpd: out of memory\n");
		ret = 1;
		goto out;
	}
	rd_act_set_budget(lc.act, conf->memory_budget, lc.pin);
	memset(&cfg, 0, sizeof(cfg));
	if (apply_conf(&cfg, conf, &lc, &err)) {
		fprintf(stderr, "rdcpd: %s\n", err.msg);
		ret = 1;
		goto out;
	}
	snprintf(portbuf, sizeof(portbuf), "%u", conf->port);
	cfg.port = portbuf;
	for (i = 0; i < conf->nlisten; i++)
		listen_addrs[i] = conf->listen[i];
	cfg.listen_addrs = listen_addrs;
	cfg.nlisten = conf->nlisten;
	cfg.max_conns = conns;
	cfg.co.timeout_ms = conf->idle_timeout_s * 1000;
	cfg.co.transport = conf->transport == RD_TRANSPORT_RDMA  ? RD_XPORT_RDMA
			   : conf->transport == RD_TRANSPORT_TCP ? RD_XPORT_TCP
								 : RD_XPORT_AUTO;
	cfg.server.eo.pool_bytes = o.pool_bytes;
	cfg.server.eo.window = lc.window; /* at start: a reload keeps it */
	/* threads and max lanes (rdcpd.conf, --threads, --max-lanes) take effect at start */
	cfg.server.eo.threads = conf->threads ? (unsigned)conf->threads : rd_engine_default_threads();
	cfg.co.lanes = (unsigned)conf->max_lanes; /* 0: RD_LANES_DEFAULT_CAP */
	cfg.co.bulk_thread = cfg.server.eo.threads > 1; /* TCP payloads off the loop */
	cfg.server.eo.stop_text = "the server is shutting down";
	/*
	 * The chunk size is the server's to decide (issue 7 item 6): at most
	 * half the pool, so two slots fit and a session never pins more than
	 * its pool whatever the client asks; the budget bounds the sessions.
	 */
	cfg.server.max_chunk = max_chunk_for(o.pool_bytes ? o.pool_bytes : RD_ENGINE_POOL_DEFAULT);
	cfg.server.sink_flags = o.sink_flags;
	cfg.server.umask = rd_sink_process_umask(); /* once, before any session thread */
	cfg.log = log_line;
	cfg.event = log_event;
	cfg.act = lc.act;
	cfg.log_ctx = &lc;
	cfg.stop = &stop_flag;
	cfg.on_ready = on_ready;
	cfg.reload = &reload_flag;
	cfg.on_reload = on_reload;
	lc.cfg = &cfg;
	lc.opts = &o;
	cfg.on_stopping = on_stopping;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	log_exports(&lc, conf);
	log_session_shape(&lc, conf, &cfg);
	raise_nofile(&lc, nofile, conns);
	if (conns < conf->max_conns)
		log_budget(&lc, conf, conns, o.pool_bytes ? o.pool_bytes : RD_ENGINE_POOL_DEFAULT);
	lc.conf = conf;
	if (drop_privileges(&lc)) {
		ret = 1;
		goto out;
	}
	if (start_ops(&lc, &cfg, &ops)) {
		ret = 1;
		goto out;
	}
	ret = rd_daemon_run(&d, &cfg);
	if (ret) {
		fprintf(stderr, "rdcpd: %s\n", d.err.msg);
		ret = ret == -RD_ENODEV ? 12 : 10;
		goto out;
	}
	log_line(&lc, RD_LOG_INFO, "stopped");
out:
	stop_ops(&ops);
	rd_act_free(lc.act);
	rdcpd_log_close(&lc.log);
	retire_all(&lc, conf);
	return ret;
}
