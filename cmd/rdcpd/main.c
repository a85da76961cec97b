// SPDX-License-Identifier: MIT
/*
 * rdcpd: serve modules over RDMA. Parses options, installs signal
 * handlers, logs; lib/daemon does the rest.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/daemon/rd_daemon.h"
#include "lib/proto/rd_proto.h"

#define MAX_MODULES 64

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

struct logctx {
	int verbose;
	const char *ready_file;
};

static void log_line(void *ctx, int level, const char *line)
{
	struct logctx *lc = ctx;
	char esc[4096], ts[32];
	time_t t = time(NULL);
	struct tm tm;

	if (level >= RD_LOG_DEBUG && !lc->verbose)
		return;
	localtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	rd_escape(esc, sizeof(esc), line, strlen(line));
	fprintf(stderr, "%s rdcpd[%d]: %s\n", ts, (int)getpid(), esc);
	fflush(stderr);
}

static void on_ready(void *ctx, unsigned port)
{
	struct logctx *lc = ctx;
	char line[128];
	FILE *f;

	snprintf(line, sizeof(line), "listening on port %u", port);
	log_line(ctx, RD_LOG_INFO, line);
	if (lc->ready_file) {
		f = fopen(lc->ready_file, "w");
		if (f) {
			fprintf(f, "%u\n", port);
			fclose(f);
		}
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: rdcpd --foreground --no-auth --module NAME=DIR[,ro] [options]\n"
		"\n"
		"  -m, --module NAME=DIR[,ro]  serve DIR as NAME (repeatable); ',ro' refuses pushes\n"
		"  -l, --listen ADDR           listen on this RDMA address (default: all)\n"
		"  -P, --port PORT             port (default %d)\n"
		"      --foreground            stay in the foreground, log to stderr (required)\n"
		"      --no-auth               serve without authentication (required for now;\n"
		"                              anyone who reaches the port can use every module)\n"
		"      --max-conns N           concurrent clients (default 16)\n"
		"      --pool-size SIZE        receive pool per connection (default 64M)\n"
		"      --fsync                 fsync every received file before renaming it\n"
		"      --timeout SECONDS       drop a silent client (default 30)\n"
		"      --ready-file PATH       write the bound port here once listening\n"
		"  -v, --verbose               more log lines\n"
		"  -h, --help                  this text\n",
		RD_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"module", required_argument, NULL, 'm'},
		{"listen", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'P'},
		{"foreground", no_argument, NULL, 'F'},
		{"no-auth", no_argument, NULL, 'N'},
		{"max-conns", required_argument, NULL, 'C'},
		{"pool-size", required_argument, NULL, 'S'},
		{"fsync", no_argument, NULL, 'Y'},
		{"timeout", required_argument, NULL, 'T'},
		{"ready-file", required_argument, NULL, 'R'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct rd_module mods[MAX_MODULES];
	struct rd_daemon_cfg cfg;
	struct rd_daemon d;
	struct logctx lc = {0};
	struct sigaction sa;
	char portbuf[8];
	int nmods = 0, foreground = 0, noauth = 0, c, ret;
	struct rd_err err;
	char *end;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_conns = 16;
	cfg.co.timeout_ms = 30000;
	snprintf(portbuf, sizeof(portbuf), "%d", RD_DEFAULT_PORT);
	cfg.port = portbuf;
	while ((c = getopt_long(argc, argv, "m:l:P:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (nmods >= MAX_MODULES) {
				fprintf(stderr, "rdcpd: at most %d modules\n", MAX_MODULES);
				return 1;
			}
			if (rd_module_parse(&mods[nmods], optarg, &err)) {
				fprintf(stderr, "rdcpd: --module: %s\n", err.msg);
				return 1;
			}
			if (access(mods[nmods].path, R_OK | X_OK)) {
				fprintf(stderr, "rdcpd: --module %s: directory %s is not accessible\n",
					mods[nmods].name, mods[nmods].path);
				return 1;
			}
			nmods++;
			break;
		case 'l':
			cfg.listen_addr = optarg;
			break;
		case 'P':
			if (strtol(optarg, &end, 10) < 0 || *end || strtol(optarg, NULL, 10) > 65535) {
				fprintf(stderr, "rdcpd: --port '%s': give 0 to 65535\n", optarg);
				return 1;
			}
			cfg.port = optarg;
			break;
		case 'F':
			foreground = 1;
			break;
		case 'N':
			noauth = 1;
			break;
		case 'C':
			cfg.max_conns = atoi(optarg);
			if (cfg.max_conns < 1) {
				fprintf(stderr, "rdcpd: --max-conns '%s': give 1 or more\n", optarg);
				return 1;
			}
			break;
		case 'S': {
			unsigned long long v = strtoull(optarg, &end, 10);

			if (*end == 'M' || *end == 'm')
				v <<= 20;
			else if (*end == 'G' || *end == 'g')
				v <<= 30;
			else if (*end)
				v = 0;
			if (v < (1u << 20)) {
				fprintf(stderr, "rdcpd: --pool-size '%s': give e.g. 64M\n", optarg);
				return 1;
			}
			cfg.server.eo.pool_bytes = v;
			break;
		}
		case 'Y':
			cfg.server.sink_flags |= RD_SINK_FSYNC;
			break;
		case 'T':
			cfg.co.timeout_ms = atoi(optarg) * 1000;
			if (cfg.co.timeout_ms < 1000) {
				fprintf(stderr, "rdcpd: --timeout '%s': give seconds\n", optarg);
				return 1;
			}
			break;
		case 'R':
			lc.ready_file = optarg;
			break;
		case 'v':
			lc.verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "rdcpd: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	if (!foreground) {
		fprintf(stderr, "rdcpd: only --foreground is supported for now (run it under "
				"systemd or a supervisor)\n");
		return 1;
	}
	if (!noauth) {
		fprintf(stderr, "rdcpd: authentication is not implemented yet; pass --no-auth to "
				"serve modules to anyone who can reach the port\n");
		return 1;
	}
	if (!nmods) {
		fprintf(stderr, "rdcpd: no modules: give --module NAME=DIR\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	cfg.server.mods = mods;
	cfg.server.nmods = nmods;
	cfg.log = log_line;
	cfg.log_ctx = &lc;
	cfg.stop = &stop_flag;
	cfg.on_ready = on_ready;
	log_line(&lc, RD_LOG_WARN,
		 "WARNING: running without authentication (--no-auth): anyone who can reach "
		 "this port can read and write every module");
	ret = rd_daemon_run(&d, &cfg);
	if (ret) {
		fprintf(stderr, "rdcpd: %s\n", d.err.msg);
		return ret == -RD_ENODEV ? 12 : 10;
	}
	log_line(&lc, RD_LOG_INFO, "stopped");
	return 0;
}
