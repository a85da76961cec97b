/* SPDX-License-Identifier: MIT */
/*
 * rdcpd's configuration: /etc/rdcp/rdcpd.conf (rsyncd.conf habits), the
 * command line merged into it, and the pure decisions the daemon asks of
 * it (hosts allow/deny, auth users, the secrets file).
 *
 * Usage:
 *	c = rd_conf_new(report, ctx);
 *	rd_conf_load(c, path);          (or rd_conf_parse on a buffer)
 *	rd_conf_apply_cli(c, &cli);     command-line additions and overrides
 *	rd_conf_check(c, RD_CONF_CHECK_SYSTEM);   whole-config rules, files
 *	rd_conf_check_support(c, caps); what this daemon cannot enforce yet
 *	... c->nerrors == 0: use c->... ...
 *	rd_conf_free(c);
 *
 * Every problem goes to the report callback as (file, line, severity,
 * message) -- every one, not only the first -- and is counted on the
 * object; the first error is also kept in c->err as "FILE:LINE: message".
 * The library never prints. Everything read is bounded (file size, line
 * length, number of modules, list lengths); see the RD_CONF_*_MAX limits.
 */
#ifndef RDCP_CONF_RD_CONF_H
#define RDCP_CONF_RD_CONF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"

#define RD_CONF_DEFAULT_PATH "/etc/rdcp/rdcpd.conf"
/* The key password logins authenticate the daemon by, without a tls certificate. */
#define RD_CONF_HOST_KEY_DEFAULT "/var/lib/rdcpd/host.key"

#define RD_CONF_FILE_MAX     (1u << 20) /* bytes in a config file */
#define RD_CONF_LINE_MAX     4096	/* bytes in one line */
#define RD_CONF_MODULES_MAX  256
#define RD_CONF_LISTEN_MAX   16
#define RD_CONF_HOSTS_MAX    128 /* entries in one hosts allow/deny */
#define RD_CONF_USERS_MAX    256 /* entries in one auth users */
#define RD_CONF_NAME_MAX     32	 /* user and group names */
#define RD_CONF_MODNAME_MAX  64	 /* module names, NUL included */
#define RD_CONF_COMMENT_MAX  256 /* module comment, NUL included */
#define RD_CONF_CHECKSUM_MAX 32	 /* digest names, NUL included */
#define RD_CONF_MSG_MAX	     512 /* one problem's message */
#define RD_CONF_THREADS_MAX  64	 /* threads = (RD_ENGINE_THREADS_MAX, checked in rdcpd) */
#define RD_CONF_LANES_DEFAULT 4	 /* max lanes = (RD_LANES_DEFAULT_CAP, checked in rdcpd) */

#define RD_CONF_FORMAT_MAX		1024 /* log format, NUL included (RD_XFERLOG_FORMAT_MAX) */
#define RD_CONF_SOCKET_MAX		108  /* status socket path, NUL included (sun_path) */
#define RD_CONF_STATUS_SOCKET_DEFAULT	"/run/rdcpd/status.sock"
#define RD_CONF_PARTIAL_MAX_AGE_DEFAULT (7 * 86400) /* seconds: 7d */
#define RD_CONF_RATE_MAX		(1ull << 40) /* max rate: bytes per second */

/* Every key of the file; rd_conf_key_name() gives its spelling. */
enum rd_conf_key {
	/* global */
	RD_CK_LISTEN,
	RD_CK_PORT,
	RD_CK_TRANSPORT,
	RD_CK_MAX_CONNS,
	RD_CK_MAX_CONNS_PER_HOST,
	RD_CK_MAX_CONNS_PER_USER,
	RD_CK_MEMORY_BUDGET,
	RD_CK_AUTH_TIMEOUT,
	RD_CK_IDLE_TIMEOUT,
	RD_CK_LOG_LEVEL,
	RD_CK_SECRETS_FILE,
	RD_CK_TLS_CERT,
	RD_CK_TLS_KEY,
	RD_CK_TLS_CLIENT_CA,
	RD_CK_HOST_KEY,
	RD_CK_USER,
	RD_CK_GROUP,
	RD_CK_THREADS,
	RD_CK_MAX_LANES,
	RD_CK_TRANSFER_LOGGING, /* the modules' default */
	RD_CK_LOG_FILE,		/* every line of the daemon's log */
	RD_CK_LOG_FORMAT,	/* the modules' default */
	RD_CK_METRICS_LISTEN,
	RD_CK_METRICS_HOSTS_ALLOW,
	RD_CK_STATUS_SOCKET,
	RD_CK_STATUS_GROUP,
	RD_CK_PARTIAL_MAX_AGE, /* the modules' default */
	RD_CK_LINK_TABLE,
	RD_CK_MAX_RATE, /* the daemon's bandwidth, shared by its sessions */
	/* module */
	RD_CK_PATH,
	RD_CK_COMMENT,
	RD_CK_READ_ONLY,
	RD_CK_WRITE_ONLY,
	RD_CK_LIST,
	RD_CK_AUTH_USERS,
	RD_CK_HOSTS_ALLOW,
	RD_CK_HOSTS_DENY,
	RD_CK_MOD_MAX_CONNS,
	RD_CK_UID,
	RD_CK_GID,
	RD_CK_AUTH,
	RD_CK_REQUIRE_ENCRYPTION,
	RD_CK_CHECKSUM,
	RD_CK_REFUSE_CHECKSUM_NONE,
	RD_CK_MOD_TRANSFER_LOGGING,
	RD_CK_MOD_LOG_FILE,
	RD_CK_MOD_LOG_FORMAT,
	RD_CK_MOD_PARTIAL_MAX_AGE,
	RD_CK_MOD_MAX_RATE, /* the module's bandwidth, shared by its sessions */
	RD_CK_DELETE,	    /* may clients delete in the module (--delete...) */
	RD_CK_COUNT
};

enum { RD_CONF_GLOBAL = 1, RD_CONF_MODULE = 2 };

/* The key's spelling ("max connections") and section; NULL/0 if out of range. */
const char *rd_conf_key_name(int key);
int rd_conf_key_section(int key);

/* Where a setting came from: a line of the file, or the command line. */
#define RD_CONF_FROM_DEFAULT 0u
#define RD_CONF_FROM_CLI     UINT_MAX

enum rd_conf_transport { RD_TRANSPORT_RDMA = 1, RD_TRANSPORT_TCP = 2, RD_TRANSPORT_BOTH = 3 };

/* An address or network: IPv4 is held as IPv4-mapped IPv6 (::ffff:a.b.c.d/96+n). */
struct rd_conf_net {
	uint8_t addr[16];
	uint8_t prefix; /* 0..128 */
};

/*
 * auth users entry: "alice:rw", "@staff:ro", "*:deny", "bob" (module default);
 * rdcp adds "alice:rw+delete" / "alice:rw-delete" (delete, per user).
 */
enum rd_access {
	RD_ACCESS_NONE = 0, /* no entry matched: refuse */
	RD_ACCESS_DENY,
	RD_ACCESS_RO,
	RD_ACCESS_RW,
	RD_ACCESS_DEFAULT /* in an entry only: the module's read only setting */
};

struct rd_conf_user {
	char name[RD_CONF_NAME_MAX + 1]; /* user or group name; "" for '*' */
	uint8_t is_group;		 /* "@name" */
	uint8_t is_all;			 /* "*" */
	uint8_t access;			 /* enum rd_access */
	int8_t delete_ok;		 /* ":rw+delete" 1, ":rw-delete" -1, else 0: the module's */
};

struct rd_conf_module {
	char name[RD_CONF_MODNAME_MAX];
	char path[PATH_MAX];
	char comment[RD_CONF_COMMENT_MAX];
	int read_only;			     /* default no */
	int write_only;			     /* default no */
	int list;			     /* default yes */
	int auth_none;			     /* "auth = none": no authentication (logged) */
	int require_encryption;		     /* default no */
	char checksum[RD_CONF_CHECKSUM_MAX]; /* default "gmac" */
	int refuse_checksum_none;	     /* default no */
	int max_conns;			     /* 0: only the global limits */
	char uid[RD_CONF_NAME_MAX + 1];	     /* name or number; "" = the daemon's */
	char gid[RD_CONF_NAME_MAX + 1];
	struct rd_conf_user *users; /* auth users, in order; nusers == 0: not set */
	int nusers;
	struct rd_conf_net *allow, *deny; /* hosts allow / hosts deny */
	int nallow, ndeny;
	/*
	 * Transfer log (rsyncd's transfer logging and log format, global
	 * values by default); log file: this module's transfer and session
	 * lines go there ("" = the daemon's log). partial max age: seconds
	 * a kept partial may rest untouched before rdcpd removes it (0: never).
	 */
	int transfer_logging;
	char log_file[PATH_MAX];
	char log_format[RD_CONF_FORMAT_MAX];
	int partial_max_age_s;
	/*
	 * max rate: bytes per second all sessions using the module share
	 * (0: no limit of its own; rsync's units in the file, like --bwlimit).
	 * delete: clients may delete files in it (--delete..., and
	 * --remove-source-files on a pull); default no; auth users entries
	 * may grant (":rw+delete") or withhold (":rw-delete") it per user.
	 */
	uint64_t max_rate;
	int delete_ok;
	unsigned line;		   /* its [name] line, or RD_CONF_FROM_CLI */
	unsigned set[RD_CK_COUNT]; /* where each key was set (RD_CONF_FROM_*) */
};

enum rd_conf_sev { RD_CONF_ERROR = 0, RD_CONF_WARNING = 1 };

/*
 * file is the config file (NULL for the command line, then line is 0);
 * msg is one sentence without the "FILE:LINE: " prefix.
 */
typedef void (*rd_conf_report_fn)(void *ctx, const char *file, unsigned line, int sev,
				  const char *msg);

struct rd_conf {
	/* the file ("" when none was read) */
	char file[PATH_MAX];
	/* global settings */
	char listen[RD_CONF_LISTEN_MAX][64]; /* numeric addresses; none: all */
	int nlisten;
	unsigned port;		     /* default RD_DEFAULT_PORT */
	int transport;		     /* enum rd_conf_transport, default both */
	int max_conns;		     /* default 16 */
	int max_conns_per_host;	     /* default 4: before a user is proven (rdcpd enforces it) */
	int max_conns_per_user;	     /* default 0: no limit */
	uint64_t memory_budget;	     /* bytes; 0 until set or derived */
	char memory_budget_from[96]; /* how the default was derived */
	int auth_timeout_s;	     /* default 10 */
	int idle_timeout_s;	     /* default 30 */
	int log_level;		     /* RD_CONF_LOG_*, default info */
	char secrets_file[PATH_MAX];
	char tls_cert[PATH_MAX];
	char tls_key[PATH_MAX];
	char tls_client_ca[PATH_MAX];
	char host_key[PATH_MAX]; /* default RD_CONF_HOST_KEY_DEFAULT */
	char user[RD_CONF_NAME_MAX + 1];
	char group[RD_CONF_NAME_MAX + 1];
	int threads;   /* per connection, 1..RD_CONF_THREADS_MAX; 0: the cores, at most 8 */
	int max_lanes; /* per session, 1..RD_LANES_MAX; 0: RD_CONF_LANES_DEFAULT */
	uint64_t link_table; /* -H: bytes a session's link table may take; default 32 MiB */
	int no_auth;   /* --no-auth: every module served without authentication */
	/* The modules' defaults (struct rd_conf_module), and the daemon's log file. */
	int transfer_logging;
	char log_file[PATH_MAX]; /* "" = journal, syslog or stderr */
	char log_format[RD_CONF_FORMAT_MAX];
	int partial_max_age_s;
	/* max rate: bytes per second all sessions share (0: no limit) */
	uint64_t max_rate;
	/*
	 * Prometheus metrics: "ADDR:PORT" or "[V6ADDR]:PORT" ("" = off) and who
	 * may scrape (none listed: loopback only).
	 */
	char metrics_listen[80];
	struct rd_conf_net *metrics_allow;
	int nmetrics_allow;
	/* rdcpd --status: the unix socket ("" = none) and the group also let in */
	char status_socket[RD_CONF_SOCKET_MAX];
	char status_group[RD_CONF_NAME_MAX + 1];
	unsigned set[RD_CK_COUNT];

	struct rd_conf_module **mods;
	int nmods;

	unsigned nerrors, nwarnings;
	struct rd_err err; /* the first error, "FILE:LINE: message" */

	rd_conf_report_fn report;
	void *report_ctx;
};

/* Log levels (syslog numbers, like RD_LOG_* of lib/daemon). */
enum { RD_CONF_LOG_ERR = 3, RD_CONF_LOG_WARN = 4, RD_CONF_LOG_INFO = 6, RD_CONF_LOG_DEBUG = 7 };

/* A config with every default set. NULL if out of memory. report may be NULL. */
struct rd_conf *rd_conf_new(rd_conf_report_fn report, void *ctx);
void rd_conf_free(struct rd_conf *c); /* accepts NULL */

/*
 * Read and parse a file (at most RD_CONF_FILE_MAX bytes). Returns 0, or
 * -RD_EUSAGE when this call reported errors (-RD_ESYS if the file could
 * not be read; also reported).
 */
int rd_conf_load(struct rd_conf *c, const char *path);
/* Parse text as if it were the file named file (tests, the fuzzer). */
int rd_conf_parse(struct rd_conf *c, const char *file, const char *text, size_t len);

/*
 * The command line. With a file: modules are added (a name the file
 * defines is an error), listen replaces the file's listen list, the other
 * settings override the file's.
 */
struct rd_conf_cli {
	const char *const *modules; /* "NAME=DIR[,ro|,rw]" */
	int nmodules;
	const char *const *listen; /* --listen, repeatable; none: keep */
	int nlisten;
	const char *port;	/* NULL: keep */
	const char *transport;	/* NULL: keep (--transport rdma|tcp|both) */
	int max_conns;		/* 0: keep */
	int max_conns_per_host; /* 0: keep (--max-conns-per-host) */
	int idle_timeout_s;	/* 0: keep (--timeout) */
	int threads;		/* 0: keep (--threads) */
	int max_lanes;		/* 0: keep (--max-lanes) */
	int no_auth;		/* --no-auth */
	int verbose;		/* -v: log level debug */
};
int rd_conf_apply_cli(struct rd_conf *c, const struct rd_conf_cli *cli);

/*
 * Rules over the whole config: contradictions (read only + write only,
 * auth = none + auth users, tls key without certificate), modules nested
 * inside a writable module, ... With RD_CONF_CHECK_SYSTEM also the
 * system: module paths are existing directories (nesting is then judged
 * on their real paths), users and groups exist, digests are known to
 * OpenSSL, files exist, the secrets file passes rd_secrets_load, and the
 * memory budget default is derived from RLIMIT_MEMLOCK.
 */
#define RD_CONF_CHECK_SYSTEM 1u
int rd_conf_check(struct rd_conf *c, unsigned flags);

/*
 * What the daemon enforces (RD_CONF_CAP_*). A setting that restricts
 * access and that the daemon cannot enforce is an error (it would be
 * silently ignored); one that only tunes limits is a warning.
 */
#define RD_CONF_CAP_AUTH	 (1u << 0) /* authentication, secrets, TLS */
#define RD_CONF_CAP_HOSTS	 (1u << 1) /* hosts allow / deny */
#define RD_CONF_CAP_AUTH_USERS	 (1u << 2)
#define RD_CONF_CAP_WRITE_ONLY	 (1u << 3)
#define RD_CONF_CAP_IDENTITY	 (1u << 4) /* module uid, gid */
#define RD_CONF_CAP_ENCRYPTION	 (1u << 5)
#define RD_CONF_CAP_CHECKSUM	 (1u << 6) /* checksum, refuse checksum none */
#define RD_CONF_CAP_TCP		 (1u << 7)
#define RD_CONF_CAP_MULTI_LISTEN (1u << 8)
#define RD_CONF_CAP_LIMITS	 (1u << 9) /* per host, per module, auth timeout */
/* 1u << 10 was list: enforced by rdcpd's module listing, never warned about */
#define RD_CONF_CAP_DROP	 (1u << 11) /* global user, group: drop privileges */
#define RD_CONF_CAP_MODULE_CONNS (1u << 12) /* a module's max connections */
#define RD_CONF_CAP_XFERLOG	 (1u << 13) /* transfer logging, log file, log format */
#define RD_CONF_CAP_METRICS	 (1u << 14) /* metrics listen, metrics hosts allow */
#define RD_CONF_CAP_STATUS	 (1u << 15) /* status socket, status group */
#define RD_CONF_CAP_PARTIAL_AGE	 (1u << 16) /* partial max age */
#define RD_CONF_CAP_RATE	 (1u << 17) /* max rate (global and per module) */
#define RD_CONF_CAP_DELETE	 (1u << 18) /* delete, and +delete/-delete in auth users */
int rd_conf_check_support(struct rd_conf *c, unsigned caps);

/*
 * Connections the memory budget allows when each pins pool_bytes (its
 * receive pool and control buffers: rd_daemon_session_pin()):
 * min(max connections, budget / pool_bytes), at least 1. A budget set in
 * the file that cannot hold one connection is an error (reported; returns 0).
 */
int rd_conf_budget_conns(struct rd_conf *c, uint64_t pool_bytes);

/*
 * Open files: conns connections of per_conn descriptors each, plus
 * RD_CONF_FDS_RESERVE for the daemon, against RLIMIT_NOFILE (soft, hard;
 * RLIM_INFINITY as UINT64_MAX). Sets *need; returns 0 when the soft limit
 * holds them, 1 when the soft limit must be raised to *need (the hard limit
 * allows it), or -RD_EUSAGE after reporting an error that names the numbers
 * when even the hard limit cannot (issue 7 item 5).
 */
#define RD_CONF_FDS_RESERVE 128u /* 64 its own, 64 for connections yet to send a request */
int rd_conf_fd_budget(struct rd_conf *c, int conns, unsigned per_conn, uint64_t soft,
		      uint64_t hard, uint64_t *need);

/*
 * The configuration as it would run, in the file's syntax, one line per
 * call of line (no newline): "key = value" for a key with a value (its own
 * or a fixed default), "# key = (what applies)" for one without; modules
 * as "[name]" sections with their keys indented. rdcpd --dump-config.
 * Returns 0, or -RD_EUSAGE when a key of the table has no writer here (a
 * bug: every key must have one).
 */
typedef void (*rd_conf_line_fn)(void *ctx, const char *line);
int rd_conf_dump(const struct rd_conf *c, rd_conf_line_fn line, void *ctx);
/* One key's value (m NULL for a global key): 1 written to buf, 0 none (buf says why), -1 unknown. */
int rd_conf_key_value(const struct rd_conf *c, const struct rd_conf_module *m, int key, char *buf,
		      size_t len);

/* Find a module by name (exact, case-sensitive). */
const struct rd_conf_module *rd_conf_module_find(const struct rd_conf *c, const char *name);

/*
 * metrics listen's address and port: 0, or -RD_EUSAGE (the value was
 * checked when it was read, so only a config that never set it fails).
 */
int rd_conf_metrics_addr(const struct rd_conf *c, struct sockaddr_storage *ss, socklen_t *len);

/* Is addr one of metrics hosts allow (none listed: a loopback address)? */
int rd_conf_metrics_allowed(const struct rd_conf *c, const struct rd_conf_net *addr);

/* A module is writable if not read only, or if auth users grants someone rw. */
int rd_conf_module_writable(const struct rd_conf_module *m);
/*
 * May anyone delete in the module: its delete, or an auth users entry
 * ":rw+delete"; never in a read-only or write-only module.
 */
int rd_conf_module_deletes(const struct rd_conf_module *m);

/* --- decisions --- */

/*
 * Parse a numeric address ("10.0.0.1", "fe80::1", "[::1]", "::ffff:10.0.0.1")
 * or a sockaddr into a /128 rd_conf_net. 0 or -RD_EUSAGE.
 */
int rd_conf_addr_parse(struct rd_conf_net *out, const char *s);
int rd_conf_addr_from_sockaddr(struct rd_conf_net *out, const struct sockaddr *sa);
/* Parse "ADDR", "ADDR/N" or "ADDR/MASK"; host bits are masked off. */
int rd_conf_net_parse(struct rd_conf_net *out, const char *s, const char **why);
int rd_conf_net_match(const struct rd_conf_net *net, const struct rd_conf_net *addr);

/*
 * hosts allow / hosts deny for a peer address. 1: allowed, 0: refused,
 * with *why (static text) saying which rule. Order: when the module has
 * a hosts allow list the address must match it; an address that matches
 * hosts deny is refused even if hosts allow matched too (deny wins,
 * unlike rsync, where a host matching both lists is allowed).
 */
int rd_conf_hosts_allowed(const struct rd_conf_module *m, const struct rd_conf_net *addr,
			  const char **why);

/*
 * auth users for a user and the groups it belongs to: the access of the
 * first entry that matches (rsync's order), RD_ACCESS_DEFAULT resolved
 * from the module's read only; RD_ACCESS_NONE when no entry matches or
 * the module has no auth users.
 */
int rd_conf_user_access(const struct rd_conf_module *m, const char *user, const char *const *groups,
			int ngroups);
/*
 * May the same user delete in the module (--delete, --remove-source-files
 * on a pull): the matching auth users entry's +delete / -delete, else the
 * module's delete; never when the access is not rw, never in a write-only
 * module. user NULL: a client without auth users (the module's setting).
 */
int rd_conf_user_deletes(const struct rd_conf_module *m, const char *user,
			 const char *const *groups, int ngroups);

/* --- the secrets file: "user:secret" lines --- */

#define RD_SECRETS_FILE_MAX  (64u << 10)
#define RD_SECRETS_USERS_MAX 1024
#define RD_SECRET_MAX	     256 /* bytes of one secret */

struct rd_secrets;

/*
 * Load path, refusing it unless it is a regular file (not a symlink) owned
 * by owner with no group or other permission bits (mode 0600 or 0400,
 * like rsync's strict modes). Problems go to c's report callback as
 * FILE:LINE: message (c may be NULL: then only err says what happened;
 * err, if not NULL, gets the first problem of this load).
 * Returns 0 with *out set, or a negative status. Secrets never appear in
 * a message, and every buffer that held one is cleansed when freed.
 */
int rd_secrets_load(struct rd_secrets **out, const char *path, uid_t owner, struct rd_conf *c,
		    struct rd_err *err);
/*
 * The same on text already read (name labels the problems); no file
 * checks. The caller cleanses text.
 */
int rd_secrets_parse(struct rd_secrets **out, const char *name, const char *text, size_t len,
		     struct rd_conf *c, struct rd_err *err);
/* The secret of user: 0 with *secret and *len set (valid until freed), or -RD_ENOENT. */
int rd_secrets_find(const struct rd_secrets *s, const char *user, const uint8_t **secret,
		    size_t *len);
int rd_secrets_count(const struct rd_secrets *s);
void rd_secrets_free(struct rd_secrets *s); /* cleanses; accepts NULL */

#endif
