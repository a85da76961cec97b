// SPDX-License-Identifier: MIT
/* Access decisions for rdcpd's modules; see rd_access.h for the order. */
#include "lib/daemon/rd_access.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/rd_ids.h"
#include "lib/digest/rd_digest.h"

static int needs_auth(const struct rd_conf *c, const struct rd_conf_module *m)
{
	return !c->no_auth && !m->auth_none;
}

static int has_group_entry(const struct rd_conf_module *m)
{
	int i;

	for (i = 0; i < m->nusers; i++)
		if (m->users[i].is_group)
			return 1;
	return 0;
}

/* A user's local group names, for "@group" entries (user_groups). */
struct groups {
	gid_t *gids;
	char (*names)[RD_CONF_NAME_MAX + 1];
	const char **ptrs;
	int n;
};

static void groups_free(struct groups *g)
{
	free(g->ptrs);
	free(g->names);
	free(g->gids);
}

/*
 * The names of the user's local groups when m has "@group" entries (none
 * when there is no local account of that name, or no such entry). Every
 * group counts, however many there are and however large each is; a
 * lookup that fails refuses (issue 27 item 6): a group we cannot see may
 * be the one that says deny. 0, or -RD_EPERM with err; g freed either way
 * by groups_free.
 */
static int user_groups(const struct rd_conf_module *m, const char *user, struct groups *g,
		       struct rd_err *err)
{
	struct rd_ids_user u;
	int n = 0, i, r, e = 0;

	memset(g, 0, sizeof(*g));
	if (has_group_entry(m)) {
		r = rd_ids_user(user, &u, &e);
		if (r == -RD_ESYS)
			return rd_err_set(err, RD_EPERM, e,
					  "module %s: user %s refused: cannot look up the account",
					  m->name, user);
		if (!r && rd_ids_user_groups(u.name, u.gid, &g->gids, &n))
			return rd_err_set(err, RD_EPERM, ENOMEM,
					  "module %s: user %s refused: cannot list its groups",
					  m->name, user);
	}
	g->names = calloc((size_t)(n ? n : 1), sizeof(*g->names));
	g->ptrs = calloc((size_t)(n ? n : 1), sizeof(*g->ptrs));
	if (!g->names || !g->ptrs)
		return rd_err_set(err, RD_EPERM, ENOMEM, "module %s: user %s refused", m->name,
				  user);
	for (i = 0; i < n; i++) {
		r = rd_ids_group_name(g->gids[i], g->names[g->n], sizeof(g->names[g->n]), &e);
		/* a group without a name, or a name longer than any rule's, matches no "@group" */
		if (r == -RD_ENOENT || r == -RD_EUSAGE)
			continue;
		if (r)
			return rd_err_set(err, RD_EPERM, e,
					  "module %s: user %s refused: cannot look up its group %u",
					  m->name, user, (unsigned)g->gids[i]);
		g->ptrs[g->n] = g->names[g->n];
		g->n++;
	}
	return 0;
}

/* auth users for user, with its groups (user_groups). 0 with *access, or -RD_EPERM with err. */
static int user_access(const struct rd_conf_module *m, const char *user, int *access,
		       struct rd_err *err)
{
	struct groups g;
	int ret = user_groups(m, user, &g, err);

	if (!ret)
		*access = rd_conf_user_access(m, user, g.ptrs, g.n);
	groups_free(&g);
	return ret;
}

/*
 * Checks 1-3 (rd_access.h): may peer p come into module m at all? 0 with
 * *access (RD_ACCESS_RO or RW), or a negative status with err.
 */
static int peer_access(const struct rd_conf *c, const struct rd_conf_module *m,
		       const struct rd_peer_id *p, int *access, struct rd_err *err)
{
	const char *why = NULL, *who = p->user[0] ? p->user : "anonymous";

	*access = m->read_only ? RD_ACCESS_RO : RD_ACCESS_RW;
	if (!rd_conf_hosts_allowed(m, &p->addr, &why))
		return rd_err_set(err, RD_EPERM, 0, "module %s: host %s is not allowed (%s)",
				  m->name, p->name, why ? why : "hosts allow/deny");
	if (!needs_auth(c, m))
		return 0;
	if ((p->auth != RD_AUTH_USER && p->auth != RD_AUTH_CERT) || !p->user[0])
		return rd_err_set(err, RD_EAUTH, 0,
				  "module %s requires authentication: connect as "
				  "USER@HOST::%s with that user's secret "
				  "(--password-file or RDCP_PASSWORD)",
				  m->name, m->name);
	/* No auth users: every authenticated user, as read only says. */
	if (m->nusers && user_access(m, p->user, access, err))
		return -err->status;
	if (*access == RD_ACCESS_NONE || *access == RD_ACCESS_DENY)
		return rd_err_set(
		    err, RD_EPERM, 0, "module %s: user %s is not allowed%s", m->name, who,
		    *access == RD_ACCESS_DENY ? " (auth users denies it)" : " (not in auth users)");
	return 0;
}

int rd_access_check(const struct rd_conf *c, const struct rd_conf_module *m,
		    const struct rd_peer_id *p, int push, const char *digest, struct rd_err *err)
{
	const char *who = p->user[0] ? p->user : "anonymous";
	int access, ret;

	ret = peer_access(c, m, p, &access, err);
	if (ret)
		return ret;
	if (push && access == RD_ACCESS_RO)
		return needs_auth(c, m)
			   ? rd_err_set(err, RD_EPERM, 0, "module %s is read-only for user %s",
					m->name, who)
			   : rd_err_set(err, RD_EPERM, 0, "module %s is read-only", m->name);
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

int rd_access_listed(const struct rd_conf *c, const struct rd_conf_module *m,
		     const struct rd_peer_id *p)
{
	struct rd_err err;
	int access;

	return m->list && !peer_access(c, m, p, &access, &err);
}

int rd_access_may_delete(const struct rd_conf *c, const struct rd_conf_module *m,
			 const struct rd_peer_id *p)
{
	struct rd_err err;
	struct groups g;
	int ret;

	/* without authentication no user entry applies: the module's settings */
	if (!needs_auth(c, m) || !m->nusers || !p->user[0])
		return rd_conf_user_deletes(m, NULL, NULL, 0);
	/* a group that cannot be looked up may be the entry that says -delete: no */
	ret = user_groups(m, p->user, &g, &err) ? 0 : rd_conf_user_deletes(m, p->user, g.ptrs, g.n);
	groups_free(&g);
	return ret;
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

int rd_access_secret(void *secrets, const char *user, const uint8_t **secret, size_t *len)
{
	return secrets ? rd_secrets_find(secrets, user, secret, len) : -RD_ENOENT;
}
