/* SPDX-License-Identifier: MIT */
/*
 * rdcpd --status: a unix socket the daemon answers on a thread of its
 * own with its sessions, memory and listeners (rd_activity.h).
 *
 * The exchange (local only, one request per connection, lines of ASCII):
 *	client:	"STATUS 1 TEXT\n" or "STATUS 1 JSON\n" (at most 64 bytes, within 2 s)
 *	daemon:	"OK\n" and the document, then it closes; or "ERR <reason>\n"
 * Who may ask is checked on the socket's credentials (SO_PEERCRED, and
 * SO_PEERGROUPS for the group): root, the daemon's own user, members of
 * the configured group; the socket's mode (0660) says the same to the
 * kernel. A client that stalls is dropped after 2 s; one client is
 * served at a time, none of it under a lock the sessions take except
 * rd_activity's short one.
 */
#ifndef RDCP_DAEMON_RD_STATUS_H
#define RDCP_DAEMON_RD_STATUS_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"
#include "lib/daemon/rd_activity.h"

#define RD_STATUS_REPLY_MAX (16u << 20) /* what a client reads at most */

struct rd_status_srv;

/*
 * Listen on path for a (it must outlive the server). group: also let in
 * ((gid_t)-1: none). Returns 0 (serving), 1 when there is no socket for a
 * reason that is not a fault (its directory does not exist, another live
 * daemon holds it: err says which), or a negative status.
 */
int rd_status_start(struct rd_status_srv **out, const char *path, gid_t group, struct rd_act *a,
		    struct rd_err *err);
/* Stop the thread, remove the socket. Accepts NULL. */
void rd_status_stop(struct rd_status_srv *s);

/*
 * Ask the daemon at path. 0 with the document in *out (malloc'd,
 * NUL-terminated), or a negative status with err saying why (no daemon,
 * permission denied, the daemon's refusal).
 */
int rd_status_query(const char *path, int json, char **out, size_t *len, struct rd_err *err);

#endif
