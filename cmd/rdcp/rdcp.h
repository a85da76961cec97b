/* SPDX-License-Identifier: MIT */
/* Private to cmd/rdcp: exit statuses and the sub-commands of main.c. */
#ifndef RDCP_CMD_RDCP_H
#define RDCP_CMD_RDCP_H

/*
 * Exit statuses: stable, documented in rdcp(1). Mirrors rsync's table
 * where the meaning is the same.
 */
enum rdcp_exit {
	RDCP_EXIT_OK = 0,
	RDCP_EXIT_USAGE = 1,	 /* syntax or usage error */
	RDCP_EXIT_PROTOCOL = 2,	 /* protocol incompatibility / violation */
	RDCP_EXIT_FILEIO = 11,	 /* error in local file I/O */
	RDCP_EXIT_PARTIAL = 23,	 /* some files failed; the rest were copied */
	RDCP_EXIT_SIGNAL = 20,	 /* interrupted: SIGINT or SIGTERM */
	RDCP_EXIT_CONN = 10,	 /* connection or RDMA failure */
	RDCP_EXIT_NODEV = 12,	 /* no usable RDMA device */
	RDCP_EXIT_REMOTE = 14,	 /* remote side refused or failed to start */
	RDCP_EXIT_AUTH = 5,	 /* authentication refused */
	RDCP_EXIT_NOMEM = 9,	 /* out of memory (malloc) */
	RDCP_EXIT_TIMEOUT = 30,	 /* peer went silent */
	RDCP_EXIT_MEMLOCK = 22,	 /* could not register memory (ulimit -l) */
	RDCP_EXIT_CORRUPT = 24,	 /* data failed verification */
};

#include <stddef.h>
#include <stdint.h>

#include "lib/tls/rd_tls.h"

#define RD_ENGINE_DEPTH_DEFAULT_CMD 16

struct rdcp_opts {
	int recursive, preserve, owner, group, quiet, verbose, fsync, list_devices;
	unsigned meta; /* RD_OF_HARDLINKS, XATTRS, ACLS, SPARSE, DEVICES, SPECIALS */
	const char *checksum;
	uint64_t chunk_size, pool_size;
	uint64_t bwlimit; /* --bwlimit: bytes per second; 0 none */
	int depth;
	unsigned threads; /* --threads; 0: the cores available, at most 8 */
	const char *port;
	int timeout_s;
	const char *rsh;	 /* -e/--rsh */
	const char *rdma_host;	 /* --rdma-host */
	const char *remote_rdcp; /* --remote-rdcp */
	int remote_server;	 /* hidden: the ssh-started half */
	int json;		 /* --json: machine-readable summary on stdout */
	int progress;		 /* --progress: meter even when not a terminal */
	const char *password_file; /* --password-file: USER's secret for a daemon */
	const char *ca, *cert, *key; /* --ca, --cert, --key: X.509 with a daemon */
	int encrypt;		 /* --encrypt: chunks encrypted (aes-128-gcm) */
	int transport;		 /* --transport: enum rd_transport */
	int family;		 /* -4/-6: AF_INET or AF_INET6; 0 either */
	int no_partial;		 /* --no-partial: remove temporaries on abort */
	int trust_partial;	 /* --trust-partial: keep partials unverified (none) */
	const char *partial_dir; /* --partial-dir: partials go into this directory */
	int retries;		 /* --retries: reconnect after a drop mid-copy */
	unsigned lanes;		 /* --lanes: RC QPs to ask for; 0 the device's default */
	int one_rail;		 /* --one-rail: every lane on lane 0's device */
	const char *rdma_devices; /* --rdma-devices: the local devices lanes may use */
};

int rdcp_list_devices(const char *host, const struct rdcp_opts *o);
int rdcp_copy(const struct rdcp_opts *o, int nargs, char **args);
int rdcp_remote_server(const struct rdcp_opts *o, int nargs, char **args);
int rdcp_exit_from_status(int status);
/*
 * The window of entries (rd_proto.h, OPEN's window) this process can hold
 * open files for: the soft open-file limit is raised toward the hard one
 * for RD_WINDOW_DEFAULT, else the window fits what there is.
 */
unsigned rdcp_window(void);
/* TLS client settings for a daemon at host as user (or none); -1 with msg. */
int rdcp_tls_client(const struct rdcp_opts *o, const char *user, const char *host,
		    struct rd_tls_cfg *cfg, char *msg, size_t msglen);

#endif
