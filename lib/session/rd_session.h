/* SPDX-License-Identifier: MIT */
/*
 * Sessions: the client half (connect, OPEN, run the engine) and the
 * server half (check OPEN against the modules, confine every path to its
 * module, run the engine with roles chosen by the mode).
 */
#ifndef RDCP_SESSION_RD_SESSION_H
#define RDCP_SESSION_RD_SESSION_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"
#include "lib/engine/rd_engine.h"
#include "lib/sink/rd_sink.h"
#include "lib/tls/rd_tls.h"
#include "lib/tree/rd_tree.h"
#include "lib/xport/rd_xport.h"

#define RD_MODULE_NAME_MAX 64

struct rd_filter;

/*
 * Open files one session may hold at most (counted again for issue 27
 * item 2). A receiver keeps up to four per entry of its window (the
 * entry's directory, the temporary, the file it replaces, and the
 * --partial-dir inside that directory) and a few of the sink's own (the
 * destination, its parent cache, a partial being taken over); a sender
 * one per entry of its window, the walk's directories (RD_TREE_OPEN_DIRS,
 * whatever the depth), those held for entries not opened yet
 * (RD_TREE_HELD_DIRS) and the sources a pull names (the server's and the
 * walk's copy of each). Either way RD_SESSION_FDS_BASE more: the module,
 * the connection (a socket and the bulk threads' eventfds, or the RDMA
 * event and completion channels of its rails), the engine's wake-up. rdcpd
 * checks max connections times this against RLIMIT_NOFILE at start.
 */
#define RD_SESSION_FDS_BASE	    16u
#define RD_SESSION_FDS_RECV(window) (4u * (window) + 4u)
#define RD_SESSION_FDS_SEND(window) \
	((window) + RD_TREE_OPEN_DIRS + RD_TREE_HELD_DIRS + 2u * RD_OPEN_PATHS_MAX)
#define RD_SESSION_FDS_FOR(window)                                                        \
	(RD_SESSION_FDS_BASE + (RD_SESSION_FDS_RECV(window) > RD_SESSION_FDS_SEND(window) \
				    ? RD_SESSION_FDS_RECV(window)                         \
				    : RD_SESSION_FDS_SEND(window)))
#define RD_SESSION_FDS		   RD_SESSION_FDS_FOR(RD_WINDOW_FILES)
/*
 * The window rdcp offers and rdcpd grants (rd_proto.h, OPEN's window)
 * when open files allow it: 256 entries in flight keep a tree of small
 * files several packs ahead (the 64 of protocol 5 left the link idle
 * between them: 50,000 x 1 KiB, rig, 16.5 s -> 12.1 s).
 */
#define RD_WINDOW_DEFAULT 256u

/*
 * The widest window, RD_WINDOW_FILES..RD_WINDOW_DEFAULT in steps of
 * RD_WINDOW_FILES, for which sessions sessions plus reserve other files
 * fit under nofile open files; RD_WINDOW_FILES if none does.
 */
unsigned rd_session_window_fit(uint64_t nofile, unsigned sessions, unsigned reserve);

struct rd_module {
	char name[RD_MODULE_NAME_MAX];
	char path[PATH_MAX];
	int readonly;
	/* rd_module_pin: path is the real path, dev/ino the directory's */
	int pinned;
	dev_t dev;
	ino_t ino;
	int write_only; /* pushes receive everything whole: nothing there is compared */
};

/* Parse "NAME=DIR[,ro]" (also ",rw"). */
int rd_module_parse(struct rd_module *m, const char *spec, struct rd_err *err);

/*
 * When the configuration is loaded: resolve m->path once (symlinks the
 * administrator put there are followed now, never later), keep the real
 * path and the directory's device and inode. 0 or a negative status.
 */
int rd_module_pin(struct rd_module *m, struct rd_err *err);

/*
 * At each session: open the module's directory by its pinned real path
 * from "/" following no symlink in any component, refuse it unless it is
 * still the directory pinned (device, inode), then enter it ("." beneath,
 * through rd_openat: as the session's identity). *fd: O_RDONLY|O_DIRECTORY.
 * err says what changed, for the daemon's log.
 */
int rd_module_open(const struct rd_module *m, int *fd, struct rd_err *err);

struct rd_client_opts {
	const char *host;
	const char *port;
	int push;			 /* 1: local -> remote; 0: remote -> local */
	const char *const *remote;	 /* "module/path" operands */
	int nremote;
	const char *const *local;	 /* push: sources; pull: local[0] = destination */
	int nlocal;
	unsigned flags;			 /* RD_OF_* */
	unsigned sink_flags;		 /* RD_SINK_* for pulls */
	mode_t umask;			 /* for pulls: rd_sink_process_umask() at start */
	const char *partial_dir;	 /* --partial-dir, or NULL (a push: OPEN carries it) */
	struct rd_engine_opts eo;
	struct rd_conn_opts co;
	/*
	 * How to prove who we are (lib/tls): a daemon user's PSK, the ssh
	 * channel's one-time secret, certificates, or anonymous. eo.digest
	 * NULL leaves the checksum to the server.
	 */
	struct rd_tls_cfg tls;
	/*
	 * Pulls: the paths as the user asked for them (defaults to remote);
	 * only top-level entries named like their last components are
	 * accepted (scp CVE-2019-6111: a server must not send what was not
	 * asked for).
	 */
	const char *const *asked;
	int nasked;
	/*
	 * Push: send these entries instead of walking local[] (rdcp-mpi's
	 * lists, rd_tree_open_list); the caller keeps and closes it.
	 */
	struct rd_tree *tree;
	/*
	 * Pull: a ranged pull of exactly these items (rd_proto.h section 6):
	 * remote[0] is the base; the entries land in local[0] (an existing
	 * directory) under their paths, and only these, in this order, are
	 * taken. Or list: only list what remote[] holds (rd_engine_opts.list).
	 *
	 * Listings (rd_proto.h section 3, Listings; no local operand): list,
	 * when set, makes a pull that only lists what remote[] holds
	 * (rd_engine_opts.list: each entry, POST entries too); module, when
	 * set, asks for the server's modules instead of an OPEN and gets each
	 * name and comment (wire bytes, checked: printable, no '/' in a name).
	 * list_ctx is theirs.
	 */
	const struct rd_want_item *wants;
	size_t nwants;
	uint64_t want_job;
	void (*list)(void *ctx, const struct rd_msg_file *f);
	void (*module)(void *ctx, const char *name, size_t nlen, const char *comment, size_t clen);
	void *list_ctx;
	/*
	 * rsync's rules (RD_OF_SELECT, version 11; issue 28): OPEN's SELECT
	 * block as the command line asks (compare, rules, sizes, window; the
	 * per-path flags are filled here from the paths asked for). A server
	 * older than version 11 is refused when need_select says the copy
	 * depends on them (else it runs as before: a single file).
	 */
	struct rd_select sel;
	int need_select;
	/*
	 * rsync's filter rules (lib/filter; NULL: none): a push walks with
	 * them, and every copy sends them to the server in RULES (a pull's
	 * server walks with them; a receiver keeps them for what deletions
	 * leave). sel.nrules is filled from it.
	 */
	const struct rd_filter *filter;
	/*
	 * -R (rsync's --relative; sel.rules has RD_SEL_RELATIVE): a push walks
	 * every source under its whole path (lib/tree RD_TREE_RELATIVE).
	 * --files-from: names (each a relative path) to send from beneath
	 * the one source (a push: local[0]; a pull: remote[0], in RULES);
	 * dirs: their directories without what they hold (no -r).
	 */
	int relative, dirs;
	const char *const *names;
	unsigned nnames;
	/* pulls: the top-level names to accept instead of asked's last components (-R, --files-from) */
	const char *const *expect;
	unsigned nexpect;
	/*
	 * A local copy (every operand local): the receiving half runs in this
	 * process (lib/session/rd_local.c) and receives into local_dest (as
	 * given: a trailing '/' says it is a directory); host and port are
	 * not used.
	 */
	const char *local_dest;
	/*
	 * Snapshots and backups (issue 29): the receiver's --link-dest,
	 * --compare-dest, --copy-dest and -b/--backup-dir/--suffix. A push
	 * sends them in OPEN's DESTS (version 13; an older server is refused);
	 * a pull gives them to its own sink (the directories are local).
	 */
	struct rd_sink_dests dests;
	/*
	 * --delete and its relatives (OPEN's MIRROR block, version 13; issue
	 * 29): asked when flags or max_delete >= 0 say so (an older server is
	 * refused). The receiver deletes: a pull's here, a push's the server.
	 */
	struct rd_mirror mir;
};

/*
 * --delete on the receiving side: *mo from OPEN's MIRROR block, protect
 * from f's receiver rules through *w (free it with rd_filter_walk_free
 * once the engine is done). 0 or a negative status.
 */
struct rd_filter_walk;
int rd_session_mirror(struct rd_mirror_opts *mo, const struct rd_mirror *mir, int dry_run,
		      const struct rd_filter *f, struct rd_filter_walk **w, struct rd_err *err);
/* 1: the directory (dirfd, or name in it) holds nothing; 0: it holds something, or is none. */
int rd_session_dir_empty(int dirfd, const char *name);

/*
 * The top-level name a pull of `path` must bring: its last component, or
 * "" (any one name, rename mode only) when the path names none (".",
 * "..", "/", "~", ""). A daemon path "module" names the module.
 */
void rd_expected_root(const char *path, char *out, size_t len);

/* How far rd_client_run() got: where a failure happened (rdcp's exit status). */
enum rd_client_stage {
	RD_CL_LOCAL = 0, /* opening the local sources or destination */
	RD_CL_CONNECT,	 /* connecting and the TLS handshake */
	RD_CL_OPEN,	 /* asking the server for the job: OPEN, OPEN_OK */
	RD_CL_TRANSFER,	 /* the engine ran */
};

struct rd_client {
	struct rd_engine e; /* stats readable while running */
	int stage;	    /* enum rd_client_stage reached */
	struct rd_conn_info info;
	struct rd_tls_peer tls; /* how the session was authenticated, its cipher */
	struct rd_err err;
	int connected;
	uint32_t honoured; /* RD_OF_* the server answered it will honour */
	/*
	 * Bytes sent and received over the connections of every run so far
	 * (rd_conn_bytes; the data a peer wrote here is in e.st.bytes_data).
	 */
	uint64_t bytes_sent, bytes_rcvd;
	/* RDMA WRITE bytes this side sent per lane (info.lanes of them). */
	uint64_t lane_bytes[RD_LANES_MAX];
	unsigned lane_rail[RD_LANES_MAX]; /* lane i's rail: info.rail_dev[] */
	/* Optional: told once the connection is up (for -v output). */
	void (*on_connected)(void *ctx, const struct rd_conn_info *info);
	void *ctx;
	/* Optional: told as the session passes each step (rdcp -vv timings). */
	void (*on_phase)(void *ctx, const char *step);
	/*
	 * When the last run reached each step (CLOCK_MONOTONIC seconds, 0:
	 * not reached): started, connected, TLS done, OPEN answered and the
	 * chunk key derived, the transfer over, the connection closed.
	 */
	struct rd_client_times {
		double start, connected, tls, open, data, closed;
	} t;
};

/*
 * Zero o, then rsync's rules at their defaults: the quick check, mtimes to
 * the ns, no size limit (a zeroed SELECT would say max size 0: every file
 * left out). Every caller starts its options here.
 */
void rd_client_opts_init(struct rd_client_opts *o);

/*
 * rsync's quick check and transfer rules (OPEN's SELECT) for a receiving
 * sink (rdcp-mpi's pulls set their ranks' own sinks with it).
 */
struct rd_sink;
void rd_session_sink_select(struct rd_sink *sink, const struct rd_select *sel);

/*
 * Run one copy. c->e.report/report_ctx may be set before. Returns 0,
 * -RD_EPARTIAL, or a negative status with c->err explaining it.
 */
int rd_client_run(struct rd_client *c, const struct rd_client_opts *o);

/*
 * A server's job as its owner sees it (rd_server_cfg.on_job): told once
 * before the engine runs and once after (ended = 1), on the session's
 * thread. A daemon reads the live counters (e->st: the atomic ones) from
 * other threads between the two calls; e is gone after the second.
 */
struct rd_server_job {
	int push;			/* the client sends: this side receives */
	const struct rd_module *module; /* the first module named; NULL ssh-started */
	const struct rd_msg_open *open; /* the request (its paths are raw bytes) */
	const char *renames_to;		/* a push into a name that is not a directory: it */
	const struct rd_engine *e;
	int ended;
	int status;	/* ended: 0, -RD_EPARTIAL or the failure */
	double seconds; /* ended: how long the engine ran */
};

struct rd_server_cfg {
	const struct rd_module *mods;
	int nmods;
	/*
	 * An ssh-started server has no modules: its one job comes from its
	 * command line (run by the user's own account). fixed_mode is
	 * RD_MODE_PUSH (receive into fixed_paths[0]) or RD_MODE_PULL (send
	 * fixed_paths); the client's OPEN must ask for that mode and its paths
	 * are ignored. 0 = modules.
	 */
	int fixed_mode;
	const char *const *fixed_paths;
	int nfixed;
	struct rd_engine_opts eo; /* pool/depth/retry limits of this server */
	unsigned sink_flags;	  /* extra RD_SINK_* (e.g. FSYNC) */
	mode_t umask;		  /* applied without -p: read once at start */
	uint32_t max_chunk;	  /* largest chunk this server accepts (0: any) */
	/*
	 * Daemon: may the authenticated peer use module mod (push: send files
	 * into it) with this digest? When the client left the digest to us,
	 * digest is "" and the callback may fill in the module's choice (else
	 * RD_DIGEST_KEYED is used). Returns 0, or a negative status with err
	 * saying why (sent to the client). NULL: every module as configured.
	 */
	int (*authorize)(void *ctx, const struct rd_module *mod, int push, char *digest,
			 size_t cap, struct rd_err *err);
	void *auth_ctx; /* per connection */
	/*
	 * Daemon: is module mod in this authenticated peer's listing of the
	 * modules (LIST)? 1 with its comment in comment (cap bytes), else 0.
	 * NULL: every module, without a comment.
	 */
	int (*listable)(void *ctx, const struct rd_module *mod, char *comment, size_t cap);
	/*
	 * Daemon, optional: after every module was authorized, the largest
	 * chunk this session may get (0: no limit of its own), so that a
	 * session paced to its share of a max rate (eo.pace) never goes
	 * silent past the peer's idle timeout between two chunks.
	 */
	uint32_t (*chunk_limit)(void *auth_ctx);
	/*
	 * Daemon: may this authenticated peer delete in module mod (--delete
	 * on a push: rdcpd.conf's delete, the user's +delete/-delete)? 1 or
	 * 0. NULL: never (a push asking to delete is refused at OPEN).
	 */
	int (*may_delete)(void *auth_ctx, const struct rd_module *mod);
	/*
	 * The client's OPEN must arrive within this (ms; 0: no deadline but
	 * the connection's silence timeout), or it is refused and the session
	 * ends: messages that are not OPEN (even empty CREDITs) do not extend it.
	 */
	int open_timeout_ms;
	/*
	 * Optional (rdcpd's transfer log, metrics and status): the job's start
	 * and end, and every entry's end (rd_engine_entry_fn), with job_ctx.
	 */
	void (*on_job)(void *ctx, const struct rd_server_job *job);
	rd_engine_entry_fn on_entry;
	rd_engine_deleted_fn on_deleted; /* --delete: what a push's receiver deleted */
	void *job_ctx;			 /* per connection */
};

/*
 * Serve one accepted connection to its end. Fills *summary with a
 * one-line description for the log. Returns 0 or a negative status
 * (err says why); the connection is not closed here.
 */
int rd_server_serve(const struct rd_server_cfg *cfg, struct rd_conn *c, char *summary,
		    size_t sumlen, struct rd_err *err);

/* --- ssh-started remote side (scp's model) --- */

#define RD_REMOTE_READY "RDCP-READY"
#define RD_REMOTE_MAX_ADDRS 8

/*
 * The line the remote half prints on stdout once it listens:
 *   RDCP-READY <proto_min> <proto_max> <port> <secret: 32 hex> <addr>[,<addr>...]
 *   (the address list is "-" when the remote host has no RDMA address: the
 *   client then connects over TCP to the host it reached with ssh)
 * The client reads it through the ssh channel (authenticated by ssh) and
 * proves the secret as the TLS PSK of the session (lib/tls).
 */
struct rd_ready {
	unsigned ver_min, ver_max;
	unsigned port;
	uint8_t secret[RD_SECRET_LEN];
	char addrs[RD_REMOTE_MAX_ADDRS][64];
	int naddrs;
};

int rd_ready_format(char *buf, size_t len, const struct rd_ready *r);
int rd_ready_parse(const char *line, struct rd_ready *r);

typedef void (*rd_remote_log_fn)(void *ctx, const char *line);

struct rd_remote_opts {
	int mode;		   /* RD_MODE_PUSH: we receive; RD_MODE_PULL: we send */
	const char *const *paths;  /* destination (push) or sources (pull) */
	int npaths;
	int accept_timeout_ms;	   /* give up if no good client came (default 30 s) */
	struct rd_conn_opts co;
	struct rd_engine_opts eo;
	unsigned sink_flags;
	mode_t umask;
	/* Print the ready line (stdout) and log refusals (stderr). */
	void (*announce)(void *ctx, const char *line);
	rd_remote_log_fn log;
	void *ctx;
};

struct rd_remote {
	struct rd_err err;
	char summary[512];
	/*
	 * A client proved the secret and the session ran: what went wrong
	 * from then on was sent to it (ERROR), or it saw the connection go.
	 */
	int served;
};

/*
 * Listen on an ephemeral port of every RDMA address, announce it with a
 * fresh secret, accept exactly one connection that proves the secret
 * (others are refused and logged), serve the job, return.
 */
int rd_remote_serve(struct rd_remote *r, const struct rd_remote_opts *o);

/* The addresses of this host's RDMA interfaces (RoCE GIDs, IPoIB). */
int rd_rdma_addrs(char addrs[][64], int max, struct rd_err *err);

/* Client: start the remote half over ssh. */
struct rd_ssh_opts {
	const char *rsh;	 /* "ssh" or -e CMD (split on spaces) */
	const char *user;	 /* or "" */
	const char *host;
	const char *remote_rdcp; /* program name on the remote host, "rdcp" */
	int push;		 /* 1: remote receives */
	unsigned flags;		 /* RD_OF_RECURSIVE etc. (for -r) */
	const char *const *paths;
	int npaths;
	int timeout_ms;
	rd_remote_log_fn log;	 /* remote stderr, one escaped line at a time */
	void *ctx;
};

struct rd_ssh {
	int pid;
	int in_fd, out_fd, err_fd;
	struct rd_ready ready;
	struct rd_err err;
	void *priv;
};

/* Spawn ssh, read the ready line. On failure err explains (stderr included). */
int rd_ssh_start(struct rd_ssh *s, const struct rd_ssh_opts *o);
/* Close our side, wait for the remote to exit (bounded); returns its status. */
int rd_ssh_finish(struct rd_ssh *s, int timeout_ms);

#endif
