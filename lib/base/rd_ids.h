/* SPDX-License-Identifier: MIT */
/*
 * Users and groups from the system's databases (NSS: /etc/passwd and
 * /etc/group, LDAP, ...), for the decisions a daemon takes on them: who a
 * module's uid/gid are, which groups a user is in for "@group" rules.
 *
 * Every lookup grows its buffer until the entry fits (a group with
 * thousands of members does not fit in 8 KiB: getgrgid_r answers ERANGE)
 * and tells "no such entry" (-RD_ENOENT) apart from "the lookup failed"
 * (-RD_ESYS, with the errno in *errnum): a caller deciding access must
 * refuse on a failure, never treat it as "not a member".
 */
#ifndef RDCP_BASE_RD_IDS_H
#define RDCP_BASE_RD_IDS_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"

/* The largest buffer one entry may need (a group of ~1M members). */
#define RD_IDS_BUF_MAX (64u << 20)
/* The most groups of one user (the kernel's NGROUPS_MAX). */
#define RD_IDS_GROUPS_MAX 65536

#define RD_IDS_NAME_MAX 255

struct rd_ids_user {
	uid_t uid;
	gid_t gid; /* the primary group */
	char name[RD_IDS_NAME_MAX + 1];
};

/* A user by name, or by number when s is all digits (then an account of
 * that uid). 0, -RD_ENOENT or -RD_ESYS. */
int rd_ids_user(const char *s, struct rd_ids_user *u, int *errnum);

/* A group by name, or a number as it is (no entry needed). */
int rd_ids_group(const char *s, gid_t *gid, int *errnum);

/* The name of group gid into name (cap bytes); -RD_EUSAGE if longer. */
int rd_ids_group_name(gid_t gid, char *name, size_t cap, int *errnum);

/*
 * Every group of user (its primary group first, then each group that
 * lists it: initgroups(3)'s set), however many. *gids is malloc'd.
 * 0 or -RD_ENOMEM.
 */
int rd_ids_user_groups(const char *user, gid_t primary, gid_t **gids, int *n);

#endif
