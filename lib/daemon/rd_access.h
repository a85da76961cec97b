/* SPDX-License-Identifier: MIT */
/*
 * Who may use which module, decided from the configuration (lib/conf) and
 * what the TLS handshake proved (lib/tls). Pure decisions: no I/O but the
 * system's user and group database for "@group" entries.
 *
 * Order of the checks for one module (the first that fails refuses):
 *  1. hosts allow / hosts deny for the peer's address;
 *  2. authentication: a module needs an authenticated user (PSK user or
 *     client certificate) unless it has "auth = none" or the daemon runs
 *     with --no-auth; anonymous TLS peers get only such modules;
 *  3. auth users: the user's entry (or a group's) gives rw, ro or deny;
 *  4. the module's own read only / write only;
 *  5. require encryption; refuse checksum none.
 * Every refusal names the module, and the user or address, and the rule.
 */
#ifndef RDCP_DAEMON_RD_ACCESS_H
#define RDCP_DAEMON_RD_ACCESS_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"
#include "lib/conf/rd_conf.h"
#include "lib/tls/rd_tls.h"

struct rd_peer_id {
	enum rd_auth_kind auth;
	char user[RD_TLS_USER_MAX + 1]; /* USER and CERT peers */
	struct rd_conf_net addr;
	char name[96]; /* address:port as logged */
};

/*
 * May peer p use module m? push: p sends files into m. digest: the chunk
 * digest the session will use. Returns 0, or -RD_EPERM / -RD_EAUTH with
 * the reason in err.
 */
int rd_access_check(const struct rd_conf *c, const struct rd_conf_module *m,
		    const struct rd_peer_id *p, int push, const char *digest, struct rd_err *err);

/*
 * Is module m in peer p's listing of the modules (rdcp HOST::)? Its
 * "list" is yes and checks 1-3 above let p in (read or write): an
 * anonymous peer sees only modules without authentication, a user those
 * its auth users do not deny. 1 or 0.
 */
int rd_access_listed(const struct rd_conf *c, const struct rd_conf_module *m,
		     const struct rd_peer_id *p);

/*
 * May peer p delete in module m (--delete on a push, --remove-source-files
 * on a pull)? Only after rd_access_check allowed it in. The module's
 * delete (default no), or the user's auth users entry (":rw+delete",
 * ":rw-delete"); never read only or write only for this peer. 1 or 0.
 */
int rd_access_may_delete(const struct rd_conf *c, const struct rd_conf_module *m,
			 const struct rd_peer_id *p);

/* Is the address allowed into at least one module (checked before TLS)? */
int rd_access_host_any(const struct rd_conf *c, const struct rd_conf_net *addr);

/* Does any module accept anonymous peers (auth = none, or --no-auth)? */
int rd_access_anon_any(const struct rd_conf *c);

/* lib/tls lookup callback over a secrets file (ctx: struct rd_secrets). */
int rd_access_secret(void *secrets, const char *user, const uint8_t **secret, size_t *len);

/*
 * Who module m's sessions act as (rd_identity.c says the rules: uid alone
 * takes that user's groups; a root daemon serves a module of its
 * configuration file without uid as nobody). set 0: as the daemon itself.
 */
struct rd_access_ident {
	int set;
	uid_t uid;     /* (uid_t)-1: the daemon's */
	gid_t gid;     /* (gid_t)-1: the daemon's */
	gid_t *groups; /* the supplementary groups (malloc'd) */
	int ngroups;
};
int rd_access_identity(const struct rd_conf_module *m, struct rd_access_ident *id,
		       struct rd_err *err);
void rd_access_ident_free(struct rd_access_ident *id);
/* The user a module runs as: its uid, the root default ("nobody") or "". */
const char *rd_access_default_uid(const struct rd_conf_module *m);

/*
 * Take on that identity for this session's file operations: an identity
 * executor (lib/base/rd_fsid.h) bound to the calling thread, so the
 * session's path-based calls run as that user while the thread keeps
 * driving the transport. *x stays NULL when the module acts as the daemon.
 * Needs root; -RD_EPERM with a message otherwise. rd_access_leave(*x)
 * unbinds and stops it.
 */
struct rd_fsid;
int rd_access_enter(const struct rd_conf_module *m, struct rd_fsid **x, struct rd_err *err);
void rd_access_leave(struct rd_fsid *x);

#endif
