// SPDX-License-Identifier: MIT
/* Access decisions for rdcpd's modules; see rd_access.h for the order. */
#include "lib/daemon/rd_access.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/digest/rd_digest.h"

#define GROUPS_MAX 64

static int needs_auth(const struct rd_conf *c, const struct rd_conf_module *m)
{
	return !c->no_auth && !m->auth_none;
}

/* The local groups of a user name, for "@group" entries (none if unknown). */
static int groups_of(const char *user, char names[][RD_CONF_NAME_MAX + 1], int max)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char buf[8192];
	gid_t gids[GROUPS_MAX];
	int n = GROUPS_MAX, i, k = 0;

	if (getpwnam_r(user, &pw, buf, sizeof(buf), &pwp) || !pwp)
		return 0;
	if (getgrouplist(user, pw.pw_gid, gids, &n) < 0)
		n = GROUPS_MAX;
	for (i = 0; i < n && k < max; i++) {
		if (getgrgid_r(gids[i], &gr, buf, sizeof(buf), &grp) || !grp)
			continue;
		snprintf(names[k++], RD_CONF_NAME_MAX + 1, "%s", gr.gr_name);
	}
	return k;
}

static int user_access(const struct rd_conf_module *m, const char *user)
{
	char names[GROUPS_MAX][RD_CONF_NAME_MAX + 1];
	const char *ptrs[GROUPS_MAX];
	int n = groups_of(user, names, GROUPS_MAX), i;

	for (i = 0; i < n; i++)
		ptrs[i] = names[i];
	return rd_conf_user_access(m, user, ptrs, n);
}

int rd_access_check(const struct rd_conf *c, const struct rd_conf_module *m,
		    const struct rd_peer_id *p, int push, const char *digest, struct rd_err *err)
{
	const char *why = NULL, *who = p->user[0] ? p->user : "anonymous";
	int access;

	if (!rd_conf_hosts_allowed(m, &p->addr, &why))
		return rd_err_set(err, RD_EPERM, 0, "module %s: host %s is not allowed (%s)",
				  m->name, p->name, why ? why : "hosts allow/deny");
	if (needs_auth(c, m)) {
		if ((p->auth != RD_AUTH_USER && p->auth != RD_AUTH_CERT) || !p->user[0])
			return rd_err_set(err, RD_EAUTH, 0,
					  "module %s requires authentication: connect as "
					  "USER@HOST::%s with that user's secret "
					  "(--password-file or RDCP_PASSWORD)",
					  m->name, m->name);
		/* No auth users: every authenticated user, as read only says. */
		access = m->nusers ? user_access(m, p->user)
				   : (m->read_only ? RD_ACCESS_RO : RD_ACCESS_RW);
		if (access == RD_ACCESS_NONE || access == RD_ACCESS_DENY)
			return rd_err_set(err, RD_EPERM, 0, "module %s: user %s is not allowed%s",
					  m->name, who,
					  access == RD_ACCESS_DENY ? " (auth users denies it)"
								   : " (not in auth users)");
		if (push && access == RD_ACCESS_RO)
			return rd_err_set(err, RD_EPERM, 0, "module %s is read-only for user %s",
					  m->name, who);
	} else if (push && m->read_only) {
		return rd_err_set(err, RD_EPERM, 0, "module %s is read-only", m->name);
	}
	if (!push && m->write_only)
		return rd_err_set(err, RD_EPERM, 0,
				  "module %s is write-only: files can be pushed, not pulled",
				  m->name);
	if (m->require_encryption && strcmp(digest, RD_DIGEST_AEAD))
		return rd_err_set(err, RD_EPERM, 0,
				  "module %s requires encryption: copy with --encrypt", m->name);
	if (m->refuse_checksum_none && !strcmp(digest, "none"))
		return rd_err_set(
		    err, RD_EPERM, 0,
		    "module %s refuses --checksum-choice none: every chunk must be verified",
		    m->name);
	return 0;
}

int rd_access_host_any(const struct rd_conf *c, const struct rd_conf_net *addr)
{
	const char *why;
	int i;

	for (i = 0; i < c->nmods; i++)
		if (rd_conf_hosts_allowed(c->mods[i], addr, &why))
			return 1;
	return 0;
}

int rd_access_anon_any(const struct rd_conf *c)
{
	int i;

	for (i = 0; i < c->nmods; i++)
		if (!needs_auth(c, c->mods[i]))
			return 1;
	return 0;
}

int rd_access_psk(void *secrets, const char *user, uint8_t psk[RD_TLS_PSK_LEN])
{
	const uint8_t *s;
	size_t len;

	if (!secrets || rd_secrets_find(secrets, user, &s, &len))
		return -RD_ENOENT;
	return rd_tls_psk_user(user, s, len, psk);
}
