// SPDX-License-Identifier: MIT
/*
 * rdcp-mpi: one copy of a tree by many MPI ranks to many rdcpd servers
 * (issue 32). This file parses the command line and prints (rank 0 only);
 * the work is in lib/mpi.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/rd_num.h"
#include "lib/engine/rd_engine.h"
#include "lib/filter/rd_filter.h"
#include "lib/mpi/rd_mpi.h"
#include "lib/proto/rd_proto.h"
#include "lib/session/rd_selopt.h"
#include "lib/sink/rd_sink.h"
#include "lib/tls/rd_tls.h"
#include "lib/version/rd_version.h"
#include "lib/xport/rd_xport.h"

enum {
	EXIT_USAGE = 1,
	EXIT_PARTIAL = 23,
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mpirun -np N rdcp-mpi [options] SOURCE... HOSTS::MODULE[/PATH]\n"
		"       srun -n N rdcp-mpi [options] SOURCE... rdcp://HOSTS[:PORT]/MODULE[/PATH]\n"
		"       rdcp-mpi --version | --help\n"
		"\n"
		"Copies SOURCEs (on a file system every rank sees) into the directory DEST on\n"
		"the rdcpd servers HOSTS, a Slurm-style host list (dtn[01-08], n[1-3,7],\n"
		"a,b); they all write into the same shared path. A SOURCE ending in '/'\n"
		"copies its contents, else the directory itself, into DEST (made if missing).\n"
		"\n"
		"Options:\n"
		"  -r, --recursive            copy directories (needed for them)\n"
		"  -a, --archive              -rlptgoD, as in rsync\n"
		"  -p, --preserve             keep exact modes\n"
		"  -o, --owner                keep owners (as root on the server)\n"
		"  -g, --group                keep groups (as root on the server)\n"
		"  -H, --hard-links           hard links land as links\n"
		"  -X, --xattrs               keep user.* extended attributes\n"
		"  -A, --acls                 keep POSIX ACLs (implies -p)\n"
		"  -D                         --devices --specials\n"
		"      --devices              make char and block devices\n"
		"      --specials             make fifos and sockets\n"
		"  -l, --links                accepted: symlinks are always copied as links\n"
		"  -t, --times                accepted: mtimes are always kept\n"
		"      --numeric-ids          accepted: ids always travel as numbers\n"
		"\n"
		"Selection, as in rsync (and rdcp):\n"
		"  -c, --checksum             compare contents, not just size and mtime\n"
		"  -I, --ignore-times         no quick check: every file is sent anew\n"
		"      --size-only            equal sizes match, whatever the mtimes\n"
		"  -@, --modify-window NUM    mtimes this many seconds apart match (default:\n"
		"                             to the nanosecond)\n"
		"  -u, --update               keep files that are newer on the receiver\n"
		"      --ignore-existing      keep every file the receiver has\n"
		"      --existing             make nothing new on the receiver\n"
		"      --max-size SIZE        leave out files larger than SIZE\n"
		"      --min-size SIZE        leave out files smaller than SIZE\n"
		"  -n, --dry-run              change nothing on the receiver (the summary\n"
		"                             counts what was compared)\n"
		"  -f, --filter RULE          a filter rule in rsync's syntax ('- *.o', '+ /dir/',\n"
		"                             ': .rules', 'H x')\n"
		"  -F                         read .rsync-filter files in each directory (twice:\n"
		"                             and leave them out)\n"
		"      --exclude PATTERN      leave out what matches (rsync's patterns)\n"
		"      --include PATTERN      keep what matches, before later excludes\n"
		"      --exclude-from FILE    exclude patterns, one a line (a file: every rank\n"
		"                             reads it)\n"
		"      --include-from FILE    include patterns, one a line\n"
		"  -0, --from0                the -from files' names end with NUL\n"
		"\n"
		"  -q, --quiet                print only errors\n"
		"  -v, --verbose              accepted (rsync habit): --json tells all\n"
		"      --json                 one JSON object for the job on stdout (rank 0)\n"
		"      --progress             the progress line even when stderr is not a\n"
		"                             terminal\n"
		"      --checksum-choice ALG  chunk check, as rdcp's (or --cc ALG; default: the\n"
		"                             server's choice)\n"
		"      --chunk-size SIZE      bytes per chunk; ranges of split files fall on\n"
		"                             chunks (default 4M)\n"
		"      --split-min SIZE       split files of at least SIZE across ranks\n"
		"                             (default: two chunks)\n"
		"      --bwlimit RATE         at most RATE bytes per second per rank, as in\n"
		"                             rsync: KiB unless suffixed (20M: MiB); 0: none\n"
		"      --threads N            threads per rank for the chunks' data work\n"
		"                             (default 2)\n"
		"      --port PORT            daemon port (default %d)\n"
		"      --transport MODE       auto (default), rdma or tcp\n"
		"      --lanes N              RDMA: queue pairs per session\n"
		"      --no-fsync             do not sync data before names\n"
		"      --timeout SECONDS      give up on a silent peer (default 30)\n"
		"      --password-file FILE   USER's secret for USER@HOSTS::MODULE (or\n"
		"                             RDCP_PASSWORD)\n"
		"      --ca FILE              USER@ logins: check each server's certificate\n"
		"                             against these CAs\n"
		"      --known-hosts FILE     USER@ logins without --ca: the servers' pinned\n"
		"                             keys (default ~/.rdcp/known_hosts)\n"
		"      --version              print the version\n"
		"  -h, --help                 this text\n"
		"\n"
		"Exit status: 0 ok, 1 usage, 23 some entries failed (the rest were copied;\n"
		"the same command again finishes what is missing).\n",
		RD_DEFAULT_PORT);
}

enum {
	OPT_JSON = 256,
	OPT_PROGRESS,
	OPT_CHECKSUM,
	OPT_CHUNK,
	OPT_SPLIT,
	OPT_THREADS,
	OPT_PORT,
	OPT_TRANSPORT,
	OPT_LANES,
	OPT_FSYNC,
	OPT_TIMEOUT,
	OPT_PASSWORD_FILE,
	OPT_CA,
	OPT_KNOWN_HOSTS,
	OPT_VERSION,
	OPT_DEVICES,
	OPT_SPECIALS,
	OPT_NUMERIC_IDS,
	OPT_BWLIMIT,
	OPT_SEL = 512, /* + enum rd_selopt_id: rsync's selection options */
};

static const struct option longopts[] = {
    {"recursive", no_argument, NULL, 'r'},
    {"archive", no_argument, NULL, 'a'},
    {"preserve", no_argument, NULL, 'p'},
    {"owner", no_argument, NULL, 'o'},
    {"group", no_argument, NULL, 'g'},
    {"hard-links", no_argument, NULL, 'H'},
    {"xattrs", no_argument, NULL, 'X'},
    {"acls", no_argument, NULL, 'A'},
    {"devices", no_argument, NULL, OPT_DEVICES},
    {"specials", no_argument, NULL, OPT_SPECIALS},
    {"links", no_argument, NULL, 'l'},
    {"times", no_argument, NULL, 't'},
    {"numeric-ids", no_argument, NULL, OPT_NUMERIC_IDS},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"json", no_argument, NULL, OPT_JSON},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"checksum-choice", required_argument, NULL, OPT_CHECKSUM},
    {"cc", required_argument, NULL, OPT_CHECKSUM},
    {"chunk-size", required_argument, NULL, OPT_CHUNK},
    {"split-min", required_argument, NULL, OPT_SPLIT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"bwlimit", required_argument, NULL, OPT_BWLIMIT},
    {"port", required_argument, NULL, OPT_PORT},
    {"transport", required_argument, NULL, OPT_TRANSPORT},
    {"lanes", required_argument, NULL, OPT_LANES},
    {"no-fsync", no_argument, NULL, OPT_FSYNC},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
    {"ca", required_argument, NULL, OPT_CA},
    {"known-hosts", required_argument, NULL, OPT_KNOWN_HOSTS},
    {"checksum", no_argument, NULL, OPT_SEL + RD_SO_CHECKSUM},
    {"ignore-times", no_argument, NULL, OPT_SEL + RD_SO_IGNORE_TIMES},
    {"size-only", no_argument, NULL, OPT_SEL + RD_SO_SIZE_ONLY},
    {"modify-window", required_argument, NULL, OPT_SEL + RD_SO_MODIFY_WINDOW},
    {"update", no_argument, NULL, OPT_SEL + RD_SO_UPDATE},
    {"dry-run", no_argument, NULL, OPT_SEL + RD_SO_DRY_RUN},
    {"ignore-existing", no_argument, NULL, OPT_SEL + RD_SO_IGNORE_EXISTING},
    {"existing", no_argument, NULL, OPT_SEL + RD_SO_EXISTING},
    {"max-size", required_argument, NULL, OPT_SEL + RD_SO_MAX_SIZE},
    {"min-size", required_argument, NULL, OPT_SEL + RD_SO_MIN_SIZE},
    {"filter", required_argument, NULL, OPT_SEL + RD_SO_FILTER},
    {"exclude", required_argument, NULL, OPT_SEL + RD_SO_EXCLUDE},
    {"include", required_argument, NULL, OPT_SEL + RD_SO_INCLUDE},
    {"exclude-from", required_argument, NULL, OPT_SEL + RD_SO_EXCLUDE_FROM},
    {"include-from", required_argument, NULL, OPT_SEL + RD_SO_INCLUDE_FROM},
    {"from0", no_argument, NULL, OPT_SEL + RD_SO_FROM0},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static volatile int g_stop;
static const char *g_port; /* --port: where the operand names none */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct cli {
	int quiet, verbose, json, progress, rank;
	int meter; /* a progress line is on the terminal */
};

static void on_progress(void *ctx, uint64_t moved, uint64_t total, double secs)
{
	struct cli *c = ctx;

	if (!c->progress)
		return;
	fprintf(stderr, "\r%llu of %llu bytes moved, %.1f MB/s, %.0f s   ",
		(unsigned long long)moved, (unsigned long long)total,
		secs > 0 ? (double)moved / secs / 1e6 : 0.0, secs);
	c->meter = 1;
}

static int read_secret(const char *file, char *buf, size_t cap, size_t *len)
{
	FILE *f;

	if (file) {
		f = fopen(file, "re");
		if (!f || !fgets(buf, (int)cap, f)) {
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
	} else if (getenv("RDCP_PASSWORD")) {
		snprintf(buf, cap, "%s", getenv("RDCP_PASSWORD"));
	} else {
		return -1;
	}
	*len = strcspn(buf, "\r\n");
	return *len ? 0 : -1;
}

/* The short letters of rsync's selection options. */
static int sel_letter(int opt)
{
	switch (opt) {
	case 'c':
		return RD_SO_CHECKSUM;
	case 'I':
		return RD_SO_IGNORE_TIMES;
	case '@':
		return RD_SO_MODIFY_WINDOW;
	case 'u':
		return RD_SO_UPDATE;
	case 'n':
		return RD_SO_DRY_RUN;
	case 'f':
		return RD_SO_FILTER;
	case 'F':
		return RD_SO_F;
	case '0':
		return RD_SO_FROM0;
	}
	return opt > OPT_SEL ? opt - OPT_SEL : 0;
}

static int parse(int argc, char **argv, struct rd_mpi_opts *mo, struct cli *c, const char **pwfile,
		 struct rd_selopt *so)
{
	struct rd_err err;
	uint64_t v;
	int opt, id;

	while ((opt = getopt_long(argc, argv, "raopgHXADltqvhcI@:unf:F0", longopts, NULL)) != -1) {
		id = sel_letter(opt);
		if (id) {
			/* shared with rdcp: lib/session/rd_selopt.c */
			char as[64];
			const struct option *lo;

			snprintf(as, sizeof(as), "-%c", opt);
			for (lo = longopts; lo->name; lo++)
				if (lo->val == OPT_SEL + id)
					snprintf(as, sizeof(as), "--%s", lo->name);
			if (rd_selopt_apply(so, (enum rd_selopt_id)id, 1, optarg, as, &err)) {
				if (c->rank == 0)
					fprintf(stderr, "rdcp-mpi: %s\n", err.msg);
				return -1;
			}
			continue;
		}
		switch (opt) {
		case 'r':
			mo->flags |= RD_OF_RECURSIVE;
			break;
		case 'a':
			mo->flags |= RD_OF_RECURSIVE | RD_OF_PRESERVE | RD_OF_OWNER | RD_OF_GROUP |
				     RD_OF_DEVICES | RD_OF_SPECIALS;
			break;
		case 'p':
			mo->flags |= RD_OF_PRESERVE;
			break;
		case 'o':
			mo->flags |= RD_OF_OWNER;
			break;
		case 'g':
			mo->flags |= RD_OF_GROUP;
			break;
		case 'H':
			mo->flags |= RD_OF_HARDLINKS;
			break;
		case 'X':
			mo->flags |= RD_OF_XATTRS;
			break;
		case 'A':
			mo->flags |= RD_OF_ACLS | RD_OF_PRESERVE;
			break;
		case 'D':
			mo->flags |= RD_OF_DEVICES | RD_OF_SPECIALS;
			break;
		case OPT_DEVICES:
			mo->flags |= RD_OF_DEVICES;
			break;
		case OPT_SPECIALS:
			mo->flags |= RD_OF_SPECIALS;
			break;
		case 'l':
		case 't':
		case OPT_NUMERIC_IDS:
			break;
		case 'q':
			c->quiet = 1;
			break;
		case 'v':
			c->verbose++;
			break;
		case OPT_JSON:
			c->json = 1;
			break;
		case OPT_PROGRESS:
			c->progress = 1;
			break;
		case OPT_CHECKSUM:
			mo->eo.digest = optarg;
			break;
		case OPT_CHUNK:
		case OPT_SPLIT:
			if (rd_num_parse(optarg, RD_NUM_SIZE, RD_CHUNK_MIN,
					 opt == OPT_CHUNK ? RD_CHUNK_MAX : UINT64_MAX / 2, &v)) {
				fprintf(stderr, "rdcp-mpi: --%s %s: expected a size of %u%s\n",
					opt == OPT_CHUNK ? "chunk-size" : "split-min", optarg,
					RD_CHUNK_MIN, opt == OPT_CHUNK ? "..64M" : " or more");
				return -1;
			}
			if (opt == OPT_CHUNK)
				mo->eo.chunk_size = (uint32_t)v;
			else
				mo->split_min = v;
			break;
		case OPT_THREADS:
		case OPT_LANES:
		case OPT_TIMEOUT:
			if (rd_num_parse(optarg, 0, 1, opt == OPT_TIMEOUT ? 86400 : 64, &v)) {
				fprintf(stderr, "rdcp-mpi: bad number '%s'\n", optarg);
				return -1;
			}
			if (opt == OPT_THREADS)
				mo->eo.threads = (unsigned)v;
			else if (opt == OPT_LANES)
				mo->co.lanes = (unsigned)v;
			else
				mo->co.timeout_ms = (int)v * 1000;
			break;
		case OPT_PORT:
			if (rd_num_parse(optarg, 0, 1, 65535, &v)) {
				fprintf(stderr, "rdcp-mpi: --port %s: expected 1..65535\n", optarg);
				return -1;
			}
			g_port = optarg;
			break;
		case OPT_TRANSPORT:
			if (!strcmp(optarg, "auto"))
				mo->co.transport = RD_XPORT_AUTO;
			else if (!strcmp(optarg, "rdma"))
				mo->co.transport = RD_XPORT_RDMA;
			else if (!strcmp(optarg, "tcp"))
				mo->co.transport = RD_XPORT_TCP;
			else {
				fprintf(stderr, "rdcp-mpi: --transport %s: auto, rdma or tcp\n",
					optarg);
				return -1;
			}
			break;
		case OPT_FSYNC:
			mo->flags &= ~RD_OF_FSYNC;
			break;
		case OPT_BWLIMIT:
			/* rsync's --bwlimit: units of 1024 bytes unless a suffix says */
			if (rd_num_parse_rsync_size(optarg, 'k', &v)) {
				fprintf(stderr, "rdcp-mpi: --bwlimit=%s is not a rate\n", optarg);
				return -1;
			}
			mo->bwlimit = v;
			break;
		case OPT_PASSWORD_FILE:
			*pwfile = optarg;
			break;
		case OPT_CA:
			mo->tls.ca_file = optarg;
			break;
		case OPT_KNOWN_HOSTS:
			mo->known_hosts = optarg;
			break;
		case OPT_VERSION:
			if (c->rank == 0)
				printf("rdcp-mpi %s (protocol %d..%d, ranges)\n", RDCP_VERSION,
				       RD_PROTO_MIN, RD_PROTO_MAX);
			return 1;
		case 'h':
			if (c->rank == 0)
				usage(stdout);
			return 1;
		default:
			if (c->rank == 0)
				usage(stderr);
			return -1;
		}
	}
	return 0;
}

/*
 * A pull's sources: all on the servers, all on the same host list (the
 * first one's, in *d). 1 = a pull, 0 = not one, < 0 = refused (err).
 */
static int pull_sources(int n, char **args, struct rd_mpi_dest *d, struct rd_err *err)
{
	struct rd_mpi_dest o;
	unsigned k;
	int i, ret;

	ret = rd_mpi_dest_parse(d, args[0], err);
	for (i = 1; ret > 0 && i < n; i++) {
		ret = rd_mpi_dest_parse(&o, args[i], err);
		if (!ret)
			ret = rd_err_set(err, RD_EUSAGE, 0,
					 "%s: a pull's sources are all on the servers", args[i]);
		for (k = 0; ret > 0 && k < d->hosts.n; k++)
			if (o.hosts.n != d->hosts.n || strcmp(o.hosts.host[k], d->hosts.host[k]))
				ret = rd_err_set(err, RD_EUSAGE, 0,
						 "%s: a pull's sources are all on the same servers",
						 args[i]);
		rd_hostlist_free(&o.hosts);
	}
	if (ret <= 0)
		rd_hostlist_free(&d->hosts);
	return ret;
}

static void print_result(const struct cli *c, const struct rd_mpi_result *r, int ret)
{
	double rate = r->seconds > 0 ? (double)r->bytes_moved / r->seconds / 1e6 : 0.0;

	if (c->meter)
		fprintf(stderr, "\n");
	if (c->json) {
		printf("{\"ok\":%s,\"ranks_n\":%d,\"files\":%llu,\"dirs\":%llu,\"others\":%llu,"
		       "\"bytes\":%llu,\"bytes_moved\":%llu,\"bytes_resumed\":%llu,"
		       "\"split_files\":%llu,\"failures\":%llu,\"seconds\":%.3f,"
		       "\"rate_mb_s\":%.1f,\"errors\":[%s],\"ranks\":[%s]}\n",
		       ret ? "false" : "true", r->nranks, (unsigned long long)r->files,
		       (unsigned long long)r->dirs, (unsigned long long)r->links,
		       (unsigned long long)r->bytes, (unsigned long long)r->bytes_moved,
		       (unsigned long long)r->bytes_resumed, (unsigned long long)r->split_files,
		       (unsigned long long)r->failures, r->seconds, rate,
		       r->errors_json ? r->errors_json : "", r->ranks_json ? r->ranks_json : "");
		return;
	}
	if (r->failures && r->first_error[0])
		fprintf(stderr, "rdcp-mpi: %s%s\n", r->first_error,
			r->failures > 1 ? " (and more: --json lists them)" : "");
	if (!c->quiet)
		fprintf(stderr,
			"rdcp-mpi: %d ranks: %llu files, %llu directories, %llu bytes; %llu bytes "
			"moved, %llu kept from before, in %.2f s (%.1f MB/s); %llu files in "
			"ranges; %llu failed\n",
			r->nranks, (unsigned long long)r->files, (unsigned long long)r->dirs,
			(unsigned long long)r->bytes, (unsigned long long)r->bytes_moved,
			(unsigned long long)r->bytes_resumed, r->seconds, rate,
			(unsigned long long)r->split_files, (unsigned long long)r->failures);
}

int main(int argc, char **argv)
{
	struct rd_mpi_opts mo;
	struct rd_mpi_result res;
	struct rd_mpi_dest dest;
	struct cli c;
	struct rd_err err;
	const char *pwfile = NULL;
	struct rd_selopt so;
	struct rd_filter *filter = NULL;
	char secret[300];
	size_t slen;
	char kh[PATH_MAX];
	const char *home;
	int rank = 0, size = 1, ret, st = 0;

	memset(&mo, 0, sizeof(mo));
	memset(&c, 0, sizeof(c));
	memset(&res, 0, sizeof(res));
	rd_selopt_init(&so);
	if (rd_mpi_init(&argc, &argv, &rank, &size)) {
		fprintf(stderr, "rdcp-mpi: MPI did not start (or gives no threads)\n");
		return EXIT_USAGE;
	}
	c.rank = rank;
	mo.flags = RD_OF_FSYNC;
	mo.eo.threads = 2;
	mo.eo.window = RD_WINDOW_DEFAULT;
	mo.co.timeout_ms = 30000;
	ret = parse(argc, argv, &mo, &c, &pwfile, &so);
	if (ret) {
		st = ret < 0 ? EXIT_USAGE : 0;
		goto out;
	}
	/* rsync's selection: the rules (every rank reads the same files), SELECT */
	for (ret = 0; ret < so.nfargs; ret++)
		if ((so.fargs[ret].how == RD_SO_F_EXCLUDE_FROM ||
		     so.fargs[ret].how == RD_SO_F_INCLUDE_FROM) &&
		    !strcmp(so.fargs[ret].arg, "-")) {
			if (rank == 0)
				fprintf(stderr, "rdcp-mpi: --exclude-from/--include-from -: every "
						"rank reads the rules, and only one has standard "
						"input; name a file\n");
			st = EXIT_USAGE;
			goto out;
		}
	if (rd_selopt_filter(&so, &filter, &err)) {
		if (rank == 0)
			fprintf(stderr, "rdcp-mpi: %s\n", err.msg);
		st = EXIT_USAGE;
		goto out;
	}
	mo.filter = filter;
	rd_selopt_select(&so, &mo.sel);
	mo.need_select = rd_selopt_any(&so) || filter;
	/* a dry run moves no ranges (a range writes its partial): files go whole */
	if (so.rules & RD_SEL_DRY_RUN)
		mo.split_min = UINT64_MAX;
	if (argc - optind < 2) {
		if (rank == 0)
			usage(stderr);
		st = EXIT_USAGE;
		goto out;
	}
	ret = rd_mpi_dest_parse(&dest, argv[argc - 1], &err);
	if (!ret) {
		/* a pull: the sources on the servers, DEST here */
		ret = pull_sources(argc - optind - 1, argv + optind, &dest, &err);
		mo.pull = ret > 0;
		mo.local_dest = argv[argc - 1];
	}
	if (ret <= 0) {
		if (rank == 0)
			fprintf(
			    stderr, "rdcp-mpi: %s\n",
			    ret ? err.msg
				: "one side must be rdcpd servers: SOURCE... HOSTS::MODULE[/PATH] "
				  "(a push) or HOSTS::MODULE/PATH... DEST (a pull), or "
				  "rdcp://HOSTS[:PORT]/MODULE[/PATH]");
		st = EXIT_USAGE;
		goto out;
	}
	if (!dest.port[0] && g_port)
		snprintf(dest.port, sizeof(dest.port), "%s", g_port);
	if (!dest.port[0])
		snprintf(dest.port, sizeof(dest.port), "%d", RD_DEFAULT_PORT);
	mo.tls.role = RD_TLS_CLIENT;
	mo.tls.auth = RD_AUTH_ANON;
	if (dest.user[0]) {
		if (read_secret(pwfile, secret, sizeof(secret), &slen) ||
		    strlen(dest.user) > RD_TLS_USER_MAX ||
		    rd_tls_login_key(dest.user, secret, slen, mo.tls.login_key)) {
			if (rank == 0)
				fprintf(stderr,
					"rdcp-mpi: %s@: give the secret with --password-file FILE "
					"or in RDCP_PASSWORD\n",
					dest.user);
			st = EXIT_USAGE;
			goto out;
		}
		mo.tls.auth = RD_AUTH_USER;
		mo.tls.user = dest.user;
		/* the servers' keys: --ca, else pinned (first contact adds, under a lock) */
		if (!mo.tls.ca_file && !mo.known_hosts) {
			home = getenv("HOME");
			if (!home || !home[0]) {
				if (rank == 0)
					fprintf(stderr,
						"rdcp-mpi: no home directory for "
						"~/.rdcp/known_hosts: give --known-hosts FILE "
						"or --ca FILE\n");
				st = EXIT_USAGE;
				goto out;
			}
			snprintf(kh, sizeof(kh), "%s/.rdcp/known_hosts", home);
			mo.known_hosts = kh;
		}
	} else if (mo.tls.ca_file || mo.known_hosts) {
		if (rank == 0)
			fprintf(stderr, "rdcp-mpi: --ca and --known-hosts are for USER@HOSTS:: "
					"logins\n");
		st = EXIT_USAGE;
		goto out;
	}
	mo.sources = (const char *const *)argv + optind;
	mo.nsources = argc - optind - 1;
	mo.dest = &dest;
	mo.umask = rd_sink_process_umask();
	mo.eo.pool_bytes = 64ull << 20;
	mo.eo.depth = 16;
	mo.eo.max_retries = 3;
	mo.co.verbose = c.verbose;
	mo.co.bulk_thread = mo.eo.threads > 1;
	/* paced: chunks that move in a quarter second (ranges fall on them) */
	if (mo.bwlimit && (!mo.eo.chunk_size || mo.eo.chunk_size > rd_pace_chunk_max(mo.bwlimit)))
		mo.eo.chunk_size = rd_pace_chunk_max(mo.bwlimit);
	mo.progress = on_progress;
	mo.ctx = &c;
	mo.stop = &g_stop;
	if (rank == 0 && !c.quiet && !c.json && isatty(2))
		c.progress = 1;
	if (c.quiet || rank != 0)
		c.progress = 0;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = rd_mpi_run(&mo, &res);
	if (rank == 0) {
		if (ret && ret != -RD_EPARTIAL)
			fprintf(stderr, "rdcp-mpi: %s\n", res.err.msg);
		else
			print_result(&c, &res, ret);
	}
	st = !ret ? 0 : ret == -RD_EPARTIAL ? EXIT_PARTIAL : ret == -RD_EUSAGE ? EXIT_USAGE : 14;
	rd_mpi_result_free(&res);
	rd_hostlist_free(&dest.hosts);
out:
	rd_filter_free(filter);
	rd_selopt_free(&so);
	rd_mpi_finalize();
	return st;
}
