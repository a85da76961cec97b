// SPDX-License-Identifier: MIT
/*
 * Who a module's sessions act as (issue 27 item 8), decided here:
 *  - uid and gid: that user and that group, the group alone as the
 *    supplementary groups (rsyncd's gid);
 *  - uid alone: that user with its primary group and every group it is a
 *    member of (initgroups(3)), never the daemon's group 0 and root's
 *    groups;
 *  - gid alone: the default user below with that group alone;
 *  - neither, in a daemon running as root: a module of the configuration
 *    file is served as "nobody" with nobody's groups, rsyncd's default
 *    (rsyncd.conf(5), uid), so a root daemon reads and writes as root
 *    only where the file says "uid = root"; a --module of the command
 *    line, and every module of a daemon that is not root, act as the
 *    daemon itself (it cannot be anyone else).
 * The identity lives on an executor (lib/base/rd_fsid.h says why not on
 * the session thread: a thread whose credentials changed may no longer
 * drive the RDMA device); only file-system checks and new files' owners
 * change, the daemon keeps its real and effective ids.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/rd_fsid.h"
#include "lib/base/rd_ids.h"
#include "lib/daemon/rd_access.h"

#define DEFAULT_USER "nobody"

const char *rd_access_default_uid(const struct rd_conf_module *m)
{
	if (m->uid[0])
		return m->uid;
	return geteuid() == 0 && m->line != RD_CONF_FROM_CLI ? DEFAULT_USER : "";
}

void rd_access_ident_free(struct rd_access_ident *id)
{
	free(id->groups);
	memset(id, 0, sizeof(*id));
}

int rd_access_identity(const struct rd_conf_module *m, struct rd_access_ident *id,
		       struct rd_err *err)
{
	const char *uid = rd_access_default_uid(m);
	struct rd_ids_user u;
	int r, e, ret = 0;

	memset(id, 0, sizeof(*id));
	id->uid = (uid_t)-1;
	id->gid = (gid_t)-1;
	if (!uid[0] && !m->gid[0])
		return 0;
	id->set = 1;
	if (m->gid[0]) {
		r = rd_ids_group(m->gid, &id->gid, &e);
		if (r) {
			ret = rd_err_set(err, r == -RD_ENOENT ? RD_ENOENT : RD_ESYS, e,
					 "module %s: %s group '%s'", m->name,
					 r == -RD_ENOENT ? "no" : "cannot look up", m->gid);
			goto out;
		}
		id->groups = malloc(sizeof(*id->groups));
		if (!id->groups) {
			ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "module %s", m->name);
			goto out;
		}
		id->groups[0] = id->gid;
		id->ngroups = 1;
	}
	if (!uid[0])
		return 0;
	r = rd_ids_user(uid, &u, &e);
	if (r == -RD_ENOENT && m->gid[0] && uid[0] >= '0' && uid[0] <= '9') {
		/* a number without an account: with its gid, nothing more is needed */
		id->uid = (uid_t)strtoul(uid, NULL, 10);
		return 0;
	}
	if (r) {
		ret = rd_err_set(
		    err, r == -RD_ENOENT ? RD_ENOENT : RD_ESYS, e, "module %s: %s user '%s'%s",
		    m->name, r == -RD_ENOENT ? "no" : "cannot look up", uid,
		    m->uid[0] ? ""
			      : " (a root rdcpd serves a module without uid as " DEFAULT_USER
				"; set uid)");
		goto out;
	}
	id->uid = u.uid;
	if (m->gid[0])
		return 0;
	id->gid = u.gid;
	if (rd_ids_user_groups(u.name, u.gid, &id->groups, &id->ngroups)) {
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "module %s: the groups of user %s",
				 m->name, u.name);
		goto out;
	}
out:
	if (ret)
		rd_access_ident_free(id);
	return ret;
}

int rd_access_enter(const struct rd_conf_module *m, struct rd_fsid **x, struct rd_err *err)
{
	struct rd_access_ident id;
	struct rd_err e;
	int ret;

	*x = NULL;
	ret = rd_access_identity(m, &id, err);
	if (ret || !id.set)
		return ret;
	if (id.uid == 0 && !m->gid[0] && geteuid() == 0) {
		/* uid = root: the daemon itself, no executor to hand calls to */
		rd_access_ident_free(&id);
		return 0;
	}
	ret = rd_fsid_start_groups(x, id.uid, id.gid, id.groups, id.ngroups, &e);
	rd_access_ident_free(&id);
	if (ret)
		return rd_err_set(err, e.status, 0, "module %s: %s", m->name, e.msg);
	rd_fsid_bind(*x);
	return 0;
}

void rd_access_leave(struct rd_fsid *x)
{
	if (!x)
		return;
	rd_fsid_bind(NULL);
	rd_fsid_stop(x);
}
