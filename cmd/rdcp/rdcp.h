/* SPDX-License-Identifier: MIT */
/* Private to cmd/rdcp: exit statuses and the sub-commands of main.c. */
#ifndef RDCP_CMD_RDCP_H
#define RDCP_CMD_RDCP_H

/*
 * Exit statuses: stable, documented in rdcp(1) and --help. rsync's numbers
 * where the meaning is the same (rsync.1, EXIT VALUES); rdcp's own, from
 * 50 on, for what rsync has no number for. rsync's 4, 6, 13-16, 19, 21
 * and 25 (--max-delete) are not used.
 */
enum rdcp_exit {
	RDCP_EXIT_OK = 0,
	RDCP_EXIT_USAGE = 1,	   /* syntax or usage error */
	RDCP_EXIT_PROTOCOL = 2,	   /* protocol incompatibility (no common version) */
	RDCP_EXIT_SELECT = 3,	   /* errors selecting input/output files, dirs */
	RDCP_EXIT_START = 5,	   /* starting the session: refused, auth, remote start */
	RDCP_EXIT_SOCKET = 10,	   /* connecting failed, or the connection was lost */
	RDCP_EXIT_FILEIO = 11,	   /* error in file I/O */
	RDCP_EXIT_STREAM = 12,	   /* error in the protocol data stream (a bad peer) */
	RDCP_EXIT_SIGNAL = 20,	   /* SIGINT or SIGTERM */
	RDCP_EXIT_NOMEM = 22,	   /* error allocating memory */
	RDCP_EXIT_PARTIAL = 23,	   /* some entries failed, others were copied */
	RDCP_EXIT_VANISHED = 24,   /* source files vanished while being copied */
	RDCP_EXIT_MAX_DELETE = 25, /* --max-delete stopped deletions */
	RDCP_EXIT_TIMEOUT = 30,	   /* the peer went silent during the transfer */
	RDCP_EXIT_CONTIMEOUT = 35, /* no answer while connecting */
	RDCP_EXIT_NODEV = 50,	   /* no usable RDMA device (--transport rdma) */
	RDCP_EXIT_CORRUPT = 51,	   /* data failed verification, again and again */
	RDCP_EXIT_MEMLOCK = 52,	   /* could not register memory (ulimit -l) */
};

#include <stddef.h>
#include <stdint.h>

#include "lib/progress/rd_progress.h"
#include "lib/session/rd_selopt.h"
#include "lib/report/rd_report.h"
#include "lib/tls/rd_tls.h"

#define RD_ENGINE_DEPTH_DEFAULT_CMD 16
#define RDCP_CHMOD_MAX		    16 /* --chmod options on one command line */
#define RDCP_ALT_DIRS_MAX	    20 /* --link-dest & co., as rsync's MAX_BASIS_DIRS */

struct rdcp_opts {
	int recursive, preserve, owner, group, quiet, verbose, fsync, list_devices;
	unsigned meta; /* RD_OF_HARDLINKS, XATTRS, ACLS, SPARSE, DEVICES, SPECIALS */
	const char *checksum_choice; /* --checksum-choice: the chunk check */
	uint64_t chunk_size, pool_size;
	uint64_t bwlimit; /* --bwlimit: bytes per second; 0 none */
	int remove_source; /* --remove-source-files: the sending side removes what arrived */
	int eight_bit;	   /* -8: names in UTF-8 as they are, whatever the locale */
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
	const char *known_hosts;     /* --known-hosts: daemons' keys pinned for logins */
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
	/* rsync's output options (rsync.1): */
	int human;		     /* -h: 0 digits, 1 (default) 1,234, 2 1.23K, 3 1.20K (1024) */
	int itemize;		     /* -i, repeatable */
	const char *out_format;	     /* --out-format */
	const char *log_file;	     /* --log-file */
	const char *log_file_format; /* --log-file-format; NULL: "%i %n%L" */
	int stats;		     /* --stats */
	/*
	 * --info levels (-1: not given; rdcp_info_levels() fills in -v's);
	 * progress stays -1 when nothing asked: the meter on a terminal only.
	 */
	struct rdcp_info {
		int name, progress, stats, nonreg;
	} info;
	int one_fs;			   /* -x (twice: not even the mount point) */
	int copy_links;			   /* -L: copy what symlinks point to */
	int compress;			   /* -z: accepted, nothing to compress (a note) */
	const char *chmod[RDCP_CHMOD_MAX]; /* --chmod, in order */
	int nchmod;
	int list_only; /* --list-only: list the remote sources, copy nothing */
	int mkpath; /* --mkpath: make the destination's missing parents */
	/*
	 * rsync's quick check, transfer rules (OPEN's SELECT) and filter
	 * options, in command-line order (lib/session/rd_selopt.h)
	 */
	struct rd_selopt sel;
	int relative;		/* -R, --relative */
	const char *files_from; /* --files-from FILE ("-": stdin) */
	int recursive_given;	/* -r itself (with --files-from, -a does not imply it) */
	/* issue 29: --link-dest, --compare-dest, --copy-dest (one kind), backups */
	int alt_kind;				 /* RD_SINK_ALT_*, 0 none */
	const char *alt_dirs[RDCP_ALT_DIRS_MAX]; /* in order */
	int nalt;
	int backup;		/* -b (--backup-dir implies it) */
	const char *backup_dir; /* --backup-dir */
	const char *suffix;	/* --suffix */
	/* --delete and its relatives (issue 29): OPEN's MIRROR block */
	unsigned mir_flags; /* RD_MF_* */
	int64_t max_delete; /* --max-delete; -1: none */
	int delete_when;    /* --delete-before, -during, -delay, -after given: how many kinds */
	int delete_excluded;
};

/* The --info levels in effect: those given, else what -v, --stats... imply. */
void rdcp_info_levels(struct rdcp_opts *o);

/* output.c: what rdcp says about a copy (rsync's formats) */
struct rdcp_out {
	const struct rdcp_opts *o;
	int push;	     /* this side sends: '<' and "send" */
	int ascii;	     /* names past ASCII escaped (no UTF-8 locale, no -8) */
	FILE *list;	     /* where -v/-i lines and --stats go: stdout (stderr with --json) */
	const char *fmt;     /* -v "%n%L", -i "%i %n%L", --out-format; NULL: none */
	int fmt_i;	     /* fmt has %i */
	FILE *log;	     /* --log-file */
	const char *log_fmt; /* --log-file-format, NULL: no entry lines */
	struct rd_progress *meter;  /* steps aside while a line is printed */
	struct rd_report rep;	    /* errors, notes, counts (--json, --stats) */
	struct rd_report_fold fold; /* one cause, one message */
	uint64_t deleted[2];	    /* --delete: non-directories, directories (--stats) */
	int del_off;		    /* deletion was turned off (a source error, ...) */
	int root_shown; /* a "dir/" source's root listed: "./" once, as rsync */
	long pid;		    /* getpid() once, for %p (not per entry) */
};
/* --delete's reports (rd_engine_deleted_fn): *deleting lines, counts, warnings */
void rdcp_out_deleted(void *ctx, unsigned flags, const char *path, size_t len, const char *text);
int rdcp_out_open(struct rdcp_out *ro, const struct rdcp_opts *o, int push);
void rdcp_out_close(struct rdcp_out *ro);
void rdcp_out_report(void *ctx, const char *path, size_t len, int status, const char *msg);
void rdcp_out_item(void *ctx, const struct rd_item *it);
void rdcp_out_note(struct rdcp_out *ro, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rdcp_out_fatal(struct rdcp_out *ro, int status, const char *msg);
void rdcp_out_failures(struct rdcp_out *ro);
uint64_t rdcp_out_entries(const struct rdcp_out *ro);
void rdcp_out_stats(struct rdcp_out *ro, const struct rd_engine_stats *st, long whole_secs);
void rdcp_out_log_end(struct rdcp_out *ro, int code);

/* Entry results of a run, for its exit status. */
struct rdcp_tally {
	uint64_t ok, failed, vanished;
	int first_status; /* of the first failure */
};

/*
 * copy.c: msg on stderr ("rdcp: ", escaped line by line); returns the exit
 * status of status at stage (enum rd_client_stage).
 */
int rdcp_error_out(const char *msg, int status, int stage);
/* exit.c: the exit status of status at stage (enum rd_client_stage) */
int rdcp_exit_for(int status, int stage, int by_signal);
int rdcp_exit_partial(const struct rdcp_tally *t);

int rdcp_list_devices(const char *host, const struct rdcp_opts *o);
int rdcp_copy(const struct rdcp_opts *o, int nargs, char **args);
/*
 * list.c: rdcp HOST:: (the modules), rdcp HOST::MODULE/PATH alone and
 * --list-only (the entries, in rsync's format).
 */
int rdcp_list(const struct rdcp_opts *o, int nargs, char **args);

int rdcp_is_remote(const char *arg); /* HOST:PATH or a daemon operand */
int rdcp_remote_server(const struct rdcp_opts *o, int nargs, char **args);
int rdcp_exit_from_status(int status);
/*
 * The window of entries (rd_proto.h, OPEN's window) this process can hold
 * open files for: the soft open-file limit is raised toward the hard one
 * for RD_WINDOW_DEFAULT, else the window fits what there is.
 */
unsigned rdcp_window(void);
/*
 * TLS client settings for a daemon at host:port as user (or none): a
 * password login derives its key here (scrypt, once) and pins the
 * daemon's key in --known-hosts. -1 with msg.
 */
int rdcp_tls_client(const struct rdcp_opts *o, const char *user, const char *host, const char *port,
		    struct rd_tls_cfg *cfg, char *msg, size_t msglen);

#endif
