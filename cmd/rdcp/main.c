// SPDX-License-Identifier: MIT
/*
 * rdcp: copy files over RDMA, the scp way. This file only parses the
 * command line; the work is in lib/ (see copy.c for how it is called).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/base/rd_num.h"
#include "lib/session/rd_session.h" /* rd_engine.h: RD_ENGINE_THREADS_* */
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink.h"
#include "lib/version/rd_version.h"
#include "lib/xport/rd_xport.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: rdcp [options] SOURCE... DEST\n"
		"       rdcp --list-devices [HOST] | --version | --help\n"
		"\n"
		"Operands:\n"
		"  PATH                       a local file or directory (a ':' after a '/'\n"
		"                             is part of a local path)\n"
		"  [USER@]HOST:PATH           a path on HOST; rdcp is started there over ssh\n"
		"  [USER@][ADDR]:PATH         the same with an IPv6 address\n"
		"  [USER@]HOST::MODULE/PATH   a path in a module of rdcpd on HOST (as USER)\n"
		"  rdcp://[USER@]HOST[:PORT]/MODULE/PATH  the same, with an explicit port\n"
		"\n"
		"Options:\n"
		"  -r, --recursive            copy directories and their contents\n"
		"  -p, --preserve             keep exact modes and times (never owners)\n"
		"  -o, --owner                keep owners (as root; with -p also setuid/setgid)\n"
		"  -g, --group                keep groups (as root)\n"
		"  -a, --archive              -rlptgoD, as in rsync\n"
		"  -H, --hard-links           hard links land as links; their data moves once\n"
		"  -X, --xattrs               keep user.* extended attributes\n"
		"  -A, --acls                 keep POSIX ACLs (implies -p)\n"
		"  -S, --sparse               holes are not sent and stay holes\n"
		"  -D                         --devices --specials\n"
		"      --devices              make char and block devices (as root)\n"
		"      --specials             make fifos and sockets\n"
		"  -l, --links                accepted (rsync habit): symlinks are always\n"
		"                             copied as links\n"
		"  -t, --times                accepted: mtimes (to the ns) are always kept\n"
		"      --numeric-ids          accepted: owners and groups always travel as\n"
		"                             numbers (no name mapping)\n"
		"  -q, --quiet                print only errors\n"
		"  -v, --verbose              say more (repeatable): connection, device, GID\n"
		"  -4, -6                     use IPv4 (IPv6) addresses only, for the host\n"
		"                             named and for what an ssh-started side reports\n"
		"      --checksum ALG         chunk check: gmac (default: a MAC keyed by the\n"
		"                             session), any OpenSSL digest (sha256, sha512,\n"
		"                             blake2b512, ...), or none\n"
		"      --encrypt              encrypt every chunk too (aes-128-gcm); the\n"
		"                             control channel is always TLS 1.3\n"
		"      --password-file FILE   USER's secret for USER@HOST::MODULE (first line;\n"
		"                             not readable by others); or RDCP_PASSWORD\n"
		"      --ca FILE              trust the daemon's certificate if this CA\n"
		"                             signed it (names checked)\n"
		"      --cert FILE            prove yourself to the daemon with this\n"
		"                             certificate (its CN is your user name)\n"
		"      --key FILE             the certificate's private key (default: in\n"
		"                             the --cert file)\n"
		"      --chunk-size SIZE      bytes per chunk (default 4M; 4K..64M)\n"
		"      --depth N              chunks in flight (default %d)\n"
		"      --threads N            threads reading, hashing, verifying and writing\n"
		"                             chunks (default: the cores available, at most %d;\n"
		"                             1: all on the thread that talks to the peer)\n"
		"      --pool-size SIZE       receive pool to register (default 64M)\n"
		"      --port PORT            daemon port (default %d)\n"
		"      --no-fsync             do not fsync each file before it gets its name\n"
		"                             (faster; a crash may then leave an empty file)\n"
		"      --timeout SECONDS      give up on a silent peer (default 30)\n"
		"      --no-partial           remove what an interrupted copy received (by\n"
		"                             default it stays as .rdcp-partial.NAME and the\n"
		"                             next copy resumes from it, checking each chunk)\n"
		"      --trust-partial        with --checksum none, keep partials on size and\n"
		"                             mtime alone (they cannot be checked)\n"
		"      --partial-dir DIR      keep partials in DIR inside each destination\n"
		"                             directory, not beside the files\n"
		"      --bwlimit RATE         at most RATE bytes per second, as in rsync: KiB\n"
		"                             unless suffixed (20M: MiB, 20MB: MB); 0: none\n"
		"      --retries N            when the connection drops mid-copy, connect\n"
		"                             again (backoff 1, 2, 4 ... 30 s) and resume, up\n"
		"                             to N times (default 3; 0: never)\n"
		"  -e, --rsh CMD              command to reach HOST:PATH hosts (default ssh;\n"
		"                             e.g. -e 'ssh -p 2222 -i key')\n"
		"      --transport MODE       auto (default): RDMA when the route to the host\n"
		"                             reaches an RDMA device, else TCP (said on\n"
		"                             stderr); rdma: RDMA or fail; tcp: TCP only\n"
		"      --rdma-host ADDR       connect over RDMA to ADDR, not to the addresses\n"
		"                             the remote side reports (tried in RFC 6724\n"
		"                             order: global IPv6, IPv4, unique-local IPv6);\n"
		"                             implies rdma\n"
		"      --lanes N              RDMA: run the session over N queue pairs\n"
		"                             (1..%d; default: 1 on Soft-RoCE, 2 on\n"
		"                             hardware; the server may grant fewer; -v\n"
		"                             says how many); TCP always uses one\n"
		"      --rdma-devices LIST    RDMA: the local devices lanes may use, comma\n"
		"                             separated (the route to the host must go\n"
		"                             through one; lanes routed through others run\n"
		"                             beside the first)\n"
		"      --one-rail             RDMA: keep every lane on the first lane's\n"
		"                             device (by default extra lanes also run\n"
		"                             over the server's other RDMA devices, when\n"
		"                             it names them and the route reaches them)\n"
		"      --remote-rdcp PATH     rdcp's path on the remote host (default rdcp)\n"
		"      --progress             show the progress meter even when stderr is not a\n"
		"                             terminal (it shows on a terminal unless -q)\n"
		"      --json                 print a JSON summary on stdout instead of the\n"
		"                             summary line (files, bytes, time, errors)\n"
		"      --list-devices [HOST]  show RDMA devices, ports, GIDs, ulimit -l; with\n"
		"                             HOST, also which transport a copy there uses\n"
		"      --version              print the version\n"
		"  -h, --help                 this text\n"
		"\n"
		"Exit status: 0 ok, 1 usage, 2 protocol, 5 auth, 10 connection/RDMA,\n"
		"9 out of memory, 11 local file I/O, 12 no RDMA device, 14 remote refused,\n"
		"20 interrupted (SIGINT/SIGTERM), 22 locked memory (ulimit -l), 23 some\n"
		"files failed, 24 data failed verification, 30 timeout.\n",
		RD_ENGINE_DEPTH_DEFAULT_CMD, RD_ENGINE_THREADS_DEFAULT_MAX, RD_DEFAULT_PORT,
		RD_LANES_MAX);
}

enum {
	OPT_CHECKSUM = 256,
	OPT_CHUNK,
	OPT_DEPTH,
	OPT_THREADS,
	OPT_POOL,
	OPT_PORT,
	OPT_FSYNC,
	OPT_TIMEOUT,
	OPT_LIST,
	OPT_VERSION,
	OPT_RDMA_HOST,
	OPT_LANES,
	OPT_ONE_RAIL,
	OPT_RDMA_DEVICES,
	OPT_REMOTE_RDCP,
	OPT_REMOTE_SERVER,
	OPT_JSON,
	OPT_PROGRESS,
	OPT_TRANSPORT,
	OPT_PASSWORD_FILE,
	OPT_CA,
	OPT_CERT,
	OPT_KEY,
	OPT_ENCRYPT,
	OPT_DEVICES,
	OPT_SPECIALS,
	OPT_NUMERIC_IDS,
	OPT_NO_PARTIAL,
	OPT_TRUST_PARTIAL,
	OPT_RETRIES,
	OPT_PARTIAL_DIR,
	OPT_BWLIMIT,
};

static const struct option longopts[] = {
	{"recursive", no_argument, NULL, 'r'},
	{"preserve", no_argument, NULL, 'p'},
	{"owner", no_argument, NULL, 'o'},
	{"group", no_argument, NULL, 'g'},
	{"archive", no_argument, NULL, 'a'},
	{"hard-links", no_argument, NULL, 'H'},
	{"xattrs", no_argument, NULL, 'X'},
	{"acls", no_argument, NULL, 'A'},
	{"sparse", no_argument, NULL, 'S'},
	{"links", no_argument, NULL, 'l'},
	{"times", no_argument, NULL, 't'},
	{"devices", no_argument, NULL, OPT_DEVICES},
	{"specials", no_argument, NULL, OPT_SPECIALS},
	{"numeric-ids", no_argument, NULL, OPT_NUMERIC_IDS},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"checksum", required_argument, NULL, OPT_CHECKSUM},
	{"chunk-size", required_argument, NULL, OPT_CHUNK},
	{"depth", required_argument, NULL, OPT_DEPTH},
	{"threads", required_argument, NULL, OPT_THREADS},
	{"pool-size", required_argument, NULL, OPT_POOL},
	{"port", required_argument, NULL, OPT_PORT},
	{"no-fsync", no_argument, NULL, OPT_FSYNC},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"list-devices", no_argument, NULL, OPT_LIST},
	{"version", no_argument, NULL, OPT_VERSION},
	{"rsh", required_argument, NULL, 'e'},
	{"rdma-host", required_argument, NULL, OPT_RDMA_HOST},
	{"lanes", required_argument, NULL, OPT_LANES},
	{"one-rail", no_argument, NULL, OPT_ONE_RAIL},
	{"rdma-devices", required_argument, NULL, OPT_RDMA_DEVICES},
	{"remote-rdcp", required_argument, NULL, OPT_REMOTE_RDCP},
	{"remote-server", no_argument, NULL, OPT_REMOTE_SERVER},
	{"json", no_argument, NULL, OPT_JSON},
	{"progress", no_argument, NULL, OPT_PROGRESS},
	{"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
	{"ca", required_argument, NULL, OPT_CA},
	{"cert", required_argument, NULL, OPT_CERT},
	{"key", required_argument, NULL, OPT_KEY},
	{"encrypt", no_argument, NULL, OPT_ENCRYPT},
	{"transport", required_argument, NULL, OPT_TRANSPORT},
	{"no-partial", no_argument, NULL, OPT_NO_PARTIAL},
	{"trust-partial", no_argument, NULL, OPT_TRUST_PARTIAL},
	{"retries", required_argument, NULL, OPT_RETRIES},
	{"partial-dir", required_argument, NULL, OPT_PARTIAL_DIR},
	{"bwlimit", required_argument, NULL, OPT_BWLIMIT},
	{NULL, 0, NULL, 0},
};

/* --rdma-devices: names of 1..63 characters, comma separated, no empties. */
static int devices_ok(const char *s)
{
	size_t n = 0;

	if (!*s || strlen(s) > 255)
		return 0;
	for (; *s; s++) {
		if (*s == ',') {
			if (!n)
				return 0;
			n = 0;
		} else if (*s <= ' ' || *s == '/' || ++n > 63) {
			return 0;
		}
	}
	return n > 0;
}

int main(int argc, char **argv)
{
	struct rdcp_opts o;
	uint64_t v;
	int c, r;

	memset(&o, 0, sizeof(o));
	o.fsync = 1;
	o.timeout_s = 30;
	o.retries = 3;
	while ((c = getopt_long(argc, argv, "rpogqvhe:46aHXASDlt", longopts, NULL)) != -1) {
		switch (c) {
		case '4':
			o.family = AF_INET;
			break;
		case '6':
			o.family = AF_INET6;
			break;
		case 'r':
			o.recursive = 1;
			break;
		case 'p':
			o.preserve = 1;
			break;
		case 'o':
			o.owner = 1;
			break;
		case 'g':
			o.group = 1;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'a': /* rsync's -rlptgoD */
			o.recursive = o.preserve = o.owner = o.group = 1;
			o.meta |= RD_OF_DEVICES | RD_OF_SPECIALS;
			break;
		case 'H':
			o.meta |= RD_OF_HARDLINKS;
			break;
		case 'X':
			o.meta |= RD_OF_XATTRS;
			break;
		case 'A': /* as in rsync: ACLs imply exact modes */
			o.meta |= RD_OF_ACLS;
			o.preserve = 1;
			break;
		case 'S':
			o.meta |= RD_OF_SPARSE;
			break;
		case 'D':
			o.meta |= RD_OF_DEVICES | RD_OF_SPECIALS;
			break;
		case OPT_DEVICES:
			o.meta |= RD_OF_DEVICES;
			break;
		case OPT_SPECIALS:
			o.meta |= RD_OF_SPECIALS;
			break;
		case 'l': /* symlinks are always copied as links */
		case 't': /* mtimes are always kept */
		case OPT_NUMERIC_IDS: /* ids always travel as numbers */
			break;
		case 'v':
			o.verbose++;
			break;
		case 'h':
			usage(stdout);
			return RDCP_EXIT_OK;
		case OPT_LANES: {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !*optarg || n < 1 || n > RD_LANES_MAX) {
				fprintf(stderr, "rdcp: --lanes '%s': give a number from 1 to %d\n",
					optarg, RD_LANES_MAX);
				return RDCP_EXIT_USAGE;
			}
			o.lanes = (unsigned)n;
			break;
		}
		case OPT_ONE_RAIL:
			o.one_rail = 1;
			break;
		case OPT_RDMA_DEVICES:
			if (!devices_ok(optarg)) {
				fprintf(stderr,
					"rdcp: --rdma-devices '%s': give device names (as in "
					"rdcp --list-devices), comma separated\n",
					optarg);
				return RDCP_EXIT_USAGE;
			}
			o.rdma_devices = optarg;
			break;
		case OPT_TRANSPORT:
			o.transport = rd_transport_parse(optarg);
			if (o.transport < 0) {
				fprintf(stderr, "rdcp: --transport: '%s' is not auto, rdma or tcp\n",
					optarg);
				return RDCP_EXIT_USAGE;
			}
			break;
		case OPT_CHECKSUM:
			o.checksum = optarg;
			break;
		case OPT_CHUNK:
			if (rd_num_parse(optarg, RD_NUM_SIZE, RD_CHUNK_MIN, RD_CHUNK_MAX,
					 &o.chunk_size)) {
				fprintf(stderr,
					"rdcp: --chunk-size '%s': give a size from 4K to 64M\n",
					optarg);
				return RDCP_EXIT_USAGE;
			}
			break;
		case OPT_DEPTH:
			if (rd_num_parse(optarg, 0, 1, 256, &v)) {
				fprintf(stderr, "rdcp: --depth '%s': give 1 to 256\n", optarg);
				return RDCP_EXIT_USAGE;
			}
			o.depth = (int)v;
			break;
		case OPT_THREADS:
			if (rd_num_parse(optarg, 0, 1, RD_ENGINE_THREADS_MAX, &v)) {
				fprintf(stderr, "rdcp: --threads '%s': give 1 to %d\n", optarg,
					RD_ENGINE_THREADS_MAX);
				return RDCP_EXIT_USAGE;
			}
			o.threads = (unsigned)v;
			break;
		case OPT_POOL:
			if (rd_num_parse(optarg, RD_NUM_SIZE, 1u << 20, 1ull << 40, &o.pool_size)) {
				fprintf(stderr, "rdcp: --pool-size '%s': give a size from 1M to 1024G\n",
					optarg);
				return RDCP_EXIT_USAGE;
			}
			break;
		case OPT_PORT:
			o.port = optarg;
			if (rd_num_parse(optarg, 0, 1, 65535, &v)) {
				fprintf(stderr, "rdcp: --port '%s': give 1 to 65535\n", optarg);
				return RDCP_EXIT_USAGE;
			}
			break;
		case OPT_NO_PARTIAL:
			o.no_partial = 1;
			break;
		case OPT_TRUST_PARTIAL:
			o.trust_partial = 1;
			break;
		case OPT_FSYNC:
			o.fsync = 0;
			break;
		case OPT_PARTIAL_DIR:
			if (!rd_sink_partial_dir_valid(optarg)) {
				fprintf(stderr, "rdcp: --partial-dir '%s': give one directory name "
						"(no '/'); it is made inside each destination "
						"directory\n", optarg);
				return RDCP_EXIT_USAGE;
			}
			o.partial_dir = optarg;
			break;
		case OPT_BWLIMIT:
			/* rsync's --bwlimit: units of 1024 bytes unless a suffix says */
			r = rd_num_parse_rsync_size(optarg, 'k', &v);
			if (r || (v && v < 512)) {
				fprintf(stderr, "rdcp: --bwlimit=%s is %s\n", optarg,
					r == -2	 ? "too large"
					: r == 0 ? "too small (min: 512 or 0 for unlimited)"
						 : "invalid");
				return RDCP_EXIT_USAGE;
			}
			o.bwlimit = v;
			break;
		case OPT_RETRIES:
			if (rd_num_parse(optarg, 0, 0, 1000, &v)) {
				fprintf(stderr, "rdcp: --retries '%s': give a count, 0 to 1000\n",
					optarg);
				return RDCP_EXIT_USAGE;
			}
			o.retries = (int)v;
			break;
		case OPT_TIMEOUT:
			if (rd_num_parse(optarg, 0, 1, 86400, &v)) {
				fprintf(stderr, "rdcp: --timeout '%s': give seconds, 1 to 86400\n",
					optarg);
				return RDCP_EXIT_USAGE;
			}
			o.timeout_s = (int)v;
			break;
		case 'e':
			o.rsh = optarg;
			break;
		case OPT_RDMA_HOST:
			o.rdma_host = optarg;
			break;
		case OPT_REMOTE_RDCP:
			o.remote_rdcp = optarg;
			break;
		case OPT_REMOTE_SERVER:
			o.remote_server = 1;
			break;
		case OPT_JSON:
			o.json = 1;
			break;
		case OPT_PROGRESS:
			o.progress = 1;
			break;
		case OPT_PASSWORD_FILE:
			o.password_file = optarg;
			break;
		case OPT_CA:
			o.ca = optarg;
			break;
		case OPT_CERT:
			o.cert = optarg;
			break;
		case OPT_KEY:
			o.key = optarg;
			break;
		case OPT_ENCRYPT:
			o.encrypt = 1;
			break;
		case OPT_LIST:
			o.list_devices = 1;
			break;
		case OPT_VERSION:
			printf("rdcp %s (protocol %d..%d)\n", RDCP_VERSION, RD_PROTO_MIN,
			       RD_PROTO_MAX);
			return RDCP_EXIT_OK;
		default:
			fprintf(stderr, "rdcp: try 'rdcp --help'\n");
			return RDCP_EXIT_USAGE;
		}
	}
	if (o.list_devices)
		return rdcp_list_devices(optind < argc ? argv[optind] : NULL, &o);
	if (o.remote_server)
		return rdcp_remote_server(&o, argc - optind, argv + optind);
	if (argc - optind < 2) {
		fprintf(stderr, "rdcp: need at least one SOURCE and a DEST (try 'rdcp --help')\n");
		return RDCP_EXIT_USAGE;
	}
	r = rdcp_copy(&o, argc - optind, argv + optind);
	return r;
}
