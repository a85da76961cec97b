// SPDX-License-Identifier: MIT
/* Users and groups with buffers that grow (rd_ids.h). */
#include "lib/base/rd_ids.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BY_PW_NAME, BY_PW_UID, BY_GR_NAME, BY_GR_GID };

struct entry {
	struct passwd pw;
	struct group gr;
	char *buf;
};

/*
 * One *_r lookup, its buffer doubled on ERANGE up to RD_IDS_BUF_MAX.
 * 0 with e filled (e->buf to free), -RD_ENOENT, -RD_ESYS or -RD_ENOMEM.
 */
static int lookup(int how, const char *name, unsigned id, struct entry *e, int *errnum)
{
	struct passwd *pwp = NULL;
	struct group *grp = NULL;
	size_t len = 4096;
	char *nb;
	int r;

	*errnum = 0;
	e->buf = NULL;
	for (;;) {
		nb = realloc(e->buf, len);
		if (!nb) {
			*errnum = ENOMEM;
			r = -RD_ENOMEM;
			break;
		}
		e->buf = nb;
		switch (how) {
		case BY_PW_NAME:
			r = getpwnam_r(name, &e->pw, e->buf, len, &pwp);
			break;
		case BY_PW_UID:
			r = getpwuid_r((uid_t)id, &e->pw, e->buf, len, &pwp);
			break;
		case BY_GR_NAME:
			r = getgrnam_r(name, &e->gr, e->buf, len, &grp);
			break;
		default:
			r = getgrgid_r((gid_t)id, &e->gr, e->buf, len, &grp);
			break;
		}
		if (r == ERANGE && len < RD_IDS_BUF_MAX) {
			len *= 2;
			continue;
		}
		if (r) {
			*errnum = r;
			r = -RD_ESYS;
		} else {
			r = pwp || grp ? 0 : -RD_ENOENT;
		}
		break;
	}
	if (r) {
		free(e->buf);
		e->buf = NULL;
	}
	return r;
}

static int number(const char *s, unsigned *v)
{
	unsigned long x;
	char *end;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return 0;
	errno = 0;
	x = strtoul(s, &end, 10);
	if (*end || errno || x >= 0xffffffffu)
		return 0;
	*v = (unsigned)x;
	return 1;
}

int rd_ids_user(const char *s, struct rd_ids_user *u, int *errnum)
{
	struct entry e;
	unsigned id = 0;
	int by_uid = number(s, &id), r;

	r = lookup(by_uid ? BY_PW_UID : BY_PW_NAME, s, id, &e, errnum);
	if (r)
		return r;
	u->uid = e.pw.pw_uid;
	u->gid = e.pw.pw_gid;
	if (snprintf(u->name, sizeof(u->name), "%s", e.pw.pw_name) >= (int)sizeof(u->name))
		r = -RD_EUSAGE;
	free(e.buf);
	return r;
}

int rd_ids_group(const char *s, gid_t *gid, int *errnum)
{
	struct entry e;
	unsigned id;
	int r;

	*errnum = 0;
	if (number(s, &id)) {
		*gid = (gid_t)id;
		return 0;
	}
	r = lookup(BY_GR_NAME, s, 0, &e, errnum);
	if (r)
		return r;
	*gid = e.gr.gr_gid;
	free(e.buf);
	return 0;
}

int rd_ids_group_name(gid_t gid, char *name, size_t cap, int *errnum)
{
	struct entry e;
	int r = lookup(BY_GR_GID, NULL, (unsigned)gid, &e, errnum);

	if (r)
		return r;
	if (snprintf(name, cap, "%s", e.gr.gr_name) >= (int)cap)
		r = -RD_EUSAGE;
	free(e.buf);
	return r;
}

int rd_ids_user_groups(const char *user, gid_t primary, gid_t **gids, int *n)
{
	gid_t *g = NULL, *ng;
	int cap = 64, want;

	*gids = NULL;
	*n = 0;
	for (;;) {
		ng = realloc(g, (size_t)cap * sizeof(*g));
		if (!ng) {
			free(g);
			return -RD_ENOMEM;
		}
		g = ng;
		want = cap;
		if (getgrouplist(user, primary, g, &want) >= 0) {
			*gids = g;
			*n = want;
			return 0;
		}
		/* want is now the count needed (glibc); grow at least twofold */
		if (cap >= RD_IDS_GROUPS_MAX) {
			free(g);
			return -RD_ENOMEM;
		}
		cap = want > cap ? want : cap * 2;
		if (cap > RD_IDS_GROUPS_MAX)
			cap = RD_IDS_GROUPS_MAX;
	}
}
