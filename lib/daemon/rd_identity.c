// SPDX-License-Identifier: MIT
/*
 * A module's uid/gid for one session thread. Linux keeps credentials per
 * thread; glibc's setgroups() changes every thread (it broadcasts), so the
 * groups are set with the raw system call, and setfsuid/setfsgid only ever
 * touch the calling thread. Only file-system checks and new files' owners
 * change: the daemon keeps its real and effective ids.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int rd_access_enter(const struct rd_conf_module *m, struct rd_err *err)
{
	uid_t uid;
	gid_t gid;
	int ret;

	if (!m->uid[0] && !m->gid[0])
		return 0;
	ret = rd_access_ids(m, &uid, &gid, err);
	if (ret)
		return ret;
	if (gid != (gid_t)-1) {
		if (syscall(SYS_setgroups, 1, &gid) || (setfsgid(gid), (gid_t)setfsgid(-1) != gid))
			return rd_err_set(err, RD_EPERM, errno,
					  "module %s: cannot act as group %s (rdcpd must run as "
					  "root for per-module uid/gid)",
					  m->name, m->gid);
	}
	if (uid != (uid_t)-1) {
		setfsuid(uid);
		if ((uid_t)setfsuid(-1) != uid)
			return rd_err_set(err, RD_EPERM, 0,
					  "module %s: cannot act as user %s (rdcpd must run as "
					  "root for per-module uid/gid)",
					  m->name, m->uid);
	}
	return 0;
}

void rd_access_leave(void)
{
	gid_t g = getegid();

	setfsuid(geteuid());
	setfsgid(g);
	syscall(SYS_setgroups, 0, &g);
}
