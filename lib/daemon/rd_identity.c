// SPDX-License-Identifier: MIT
/*
 * A module's uid/gid for one session: its path-based file calls run on an
 * identity executor (lib/base/rd_fsid.h says why not on the session thread:
 * a thread whose credentials changed may no longer drive the RDMA device).
 * Only file-system checks and new files' owners change: the daemon keeps
 * its real and effective ids.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/rd_fsid.h"
#include "lib/daemon/rd_access.h"

/* A name or a number. */
static int lookup_id(const char *s, int group, unsigned *out)
{
	char buf[8192], *end;
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (s[0] && !*end && !errno && v < 0xffffffffu) {
		*out = (unsigned)v;
		return 0;
	}
	if (group) {
		if (getgrnam_r(s, &gr, buf, sizeof(buf), &grp) || !grp)
			return -RD_ENOENT;
		*out = grp->gr_gid;
		return 0;
	}
	if (getpwnam_r(s, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return -RD_ENOENT;
	*out = pwp->pw_uid;
	return 0;
}

int rd_access_ids(const struct rd_conf_module *m, uid_t *uid, gid_t *gid, struct rd_err *err)
{
	unsigned u = (unsigned)-1, g = (unsigned)-1;

	if (m->uid[0] && lookup_id(m->uid, 0, &u))
		return rd_err_set(err, RD_ENOENT, 0, "module %s: no user '%s'", m->name, m->uid);
	if (m->gid[0] && lookup_id(m->gid, 1, &g))
		return rd_err_set(err, RD_ENOENT, 0, "module %s: no group '%s'", m->name, m->gid);
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int rd_access_enter(const struct rd_conf_module *m, struct rd_fsid **x, struct rd_err *err)
{
	struct rd_err e;
	uid_t uid;
	gid_t gid;
	int ret;

	*x = NULL;
	if (!m->uid[0] && !m->gid[0])
		return 0;
	ret = rd_access_ids(m, &uid, &gid, err);
	if (ret)
		return ret;
	ret = rd_fsid_start(x, uid, gid, &e);
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
