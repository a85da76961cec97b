// SPDX-License-Identifier: MIT
/*
 * Whole-config rules, the command line merged in, and what this daemon
 * cannot enforce yet.
 *
 * Nesting: everything beneath a writable module can be written through
 * it, so a module whose path is inside (or equal to) a writable module's
 * path is refused, whatever it says itself: its read only, write only,
 * auth users or hosts rules would not protect its files. A writable
 * module inside a read-only one is allowed (the "pub" + "pub/incoming"
 * layout): the outer module can only read what the inner one writes.
 * With RD_CONF_CHECK_SYSTEM the comparison uses real paths (symlinks
 * resolved), otherwise lexically normalized ones.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/base/rd_ids.h"
#include "lib/conf/rd_conf_priv.h"
#include "lib/digest/rd_digest.h"

/* The (file, line) a setting came from, for rd_conf_report. */
static const char *at_file(const struct rd_conf *c, unsigned line)
{
	return line == RD_CONF_FROM_CLI ? NULL : (c->file[0] ? c->file : NULL);
}

static unsigned at_line(unsigned line)
{
	return line == RD_CONF_FROM_CLI ? 0 : line;
}

#define AT(c, line) at_file(c, line), at_line(line)

/* "[name]" for messages (also for --module NAME=DIR: the prefix says where). */
static const char *mod_label(const struct rd_conf_module *m, char *buf, size_t len)
{
	snprintf(buf, len, "[%s]", m->name);
	return buf;
}

/* --- the command line --- */

static int cli_module(struct rd_conf *c, const char *spec)
{
	const struct rd_conf_module *dup;
	struct rd_conf_module *m;
	const char *eq = strchr(spec, '='), *dir, *comma, *why;
	char name[RD_CONF_MODNAME_MAX];
	size_t nlen, dlen;
	int ro = 0, del = 0;

	if (!eq) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR,
			       "--module '%.200s': expected NAME=DIR[,ro]", spec);
		return -1;
	}
	nlen = (size_t)(eq - spec);
	if (!rd_conf_module_name_ok(spec, nlen, &why)) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR, "--module '%.200s': %s", spec, why);
		return -1;
	}
	memcpy(name, spec, nlen);
	name[nlen] = '\0';
	dir = eq + 1;
	comma = strrchr(dir, ',');
	dlen = strlen(dir);
	if (comma &&
	    (!strcmp(comma, ",ro") || !strcmp(comma, ",rw") || !strcmp(comma, ",delete"))) {
		ro = !strcmp(comma, ",ro");
		del = !strcmp(comma, ",delete"); /* delete = yes */
		dlen = (size_t)(comma - dir);
	}
	if (!dlen || dir[0] != '/' || dlen >= PATH_MAX) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR,
			       "--module %s: the directory must be an absolute path", name);
		return -1;
	}
	dup = rd_conf_module_find(c, name);
	if (dup && dup->line == RD_CONF_FROM_CLI) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR, "--module %s is given twice", name);
		return -1;
	}
	if (dup) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR,
			       "--module %s: %s defines [%s] on line %u; the command line adds "
			       "modules but cannot redefine one",
			       name, c->file, name, dup->line);
		return -1;
	}
	m = rd_conf_module_add(c, name, RD_CONF_FROM_CLI, &why);
	if (!m) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR, "--module %s: %s", name, why);
		return -1;
	}
	memcpy(m->path, dir, dlen);
	m->path[dlen] = '\0';
	m->read_only = ro;
	m->delete_ok = del;
	m->set[RD_CK_PATH] = RD_CONF_FROM_CLI;
	m->set[RD_CK_READ_ONLY] = RD_CONF_FROM_CLI;
	if (del)
		m->set[RD_CK_DELETE] = RD_CONF_FROM_CLI;
	return 0;
}

/* One --listen address, canonical, not twice. */
static void cli_listen(struct rd_conf *c, const char *a)
{
	char canon[sizeof(c->listen[0])];
	int i;

	if (rd_conf_addr_canon(a, canon, sizeof(canon))) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR,
			       "--listen '%.200s': give a numeric IPv4 or IPv6 address", a);
		return;
	}
	for (i = 0; i < c->nlisten; i++)
		if (!strcmp(c->listen[i], canon)) {
			rd_conf_report(c, NULL, 0, RD_CONF_ERROR, "--listen: %s is given twice",
				       canon);
			return;
		}
	memcpy(c->listen[c->nlisten++], canon, sizeof(canon));
}

int rd_conf_apply_cli(struct rd_conf *c, const struct rd_conf_cli *cli)
{
	unsigned before = c->nerrors;
	unsigned long port;
	char *end;
	int i;

	for (i = 0; i < cli->nmodules; i++)
		cli_module(c, cli->modules[i]);
	if (cli->nlisten > RD_CONF_LISTEN_MAX) {
		rd_conf_report(c, NULL, 0, RD_CONF_ERROR, "--listen: at most %d addresses",
			       RD_CONF_LISTEN_MAX);
	} else if (cli->nlisten > 0) {
		c->nlisten = 0;
		for (i = 0; i < cli->nlisten; i++)
			cli_listen(c, cli->listen[i]);
		c->set[RD_CK_LISTEN] = RD_CONF_FROM_CLI;
	}
	if (cli->port) {
		errno = 0;
		port = strtoul(cli->port, &end, 10);
		if (cli->port[0] < '0' || cli->port[0] > '9' || *end || errno || port > 65535) {
			rd_conf_report(c, NULL, 0, RD_CONF_ERROR,
				       "--port '%.200s': give 0 to 65535", cli->port);
		} else {
			c->port = (unsigned)port;
			c->set[RD_CK_PORT] = RD_CONF_FROM_CLI;
		}
	}
	if (cli->transport) {
		if (!strcasecmp(cli->transport, "rdma"))
			c->transport = RD_TRANSPORT_RDMA;
		else if (!strcasecmp(cli->transport, "tcp"))
			c->transport = RD_TRANSPORT_TCP;
		else if (!strcasecmp(cli->transport, "both") || !strcasecmp(cli->transport, "auto"))
			c->transport = RD_TRANSPORT_BOTH;
		else
			rd_conf_report(c, NULL, 0, RD_CONF_ERROR,
				       "--transport '%.200s': give rdma, tcp or both",
				       cli->transport);
		c->set[RD_CK_TRANSPORT] = RD_CONF_FROM_CLI;
	}
	if (cli->max_conns > 0) {
		c->max_conns = cli->max_conns;
		c->set[RD_CK_MAX_CONNS] = RD_CONF_FROM_CLI;
	}
	if (cli->max_conns_per_host > 0) {
		c->max_conns_per_host = cli->max_conns_per_host;
		c->set[RD_CK_MAX_CONNS_PER_HOST] = RD_CONF_FROM_CLI;
	}
	if (cli->idle_timeout_s > 0) {
		c->idle_timeout_s = cli->idle_timeout_s;
		c->set[RD_CK_IDLE_TIMEOUT] = RD_CONF_FROM_CLI;
	}
	if (cli->threads > 0) {
		c->threads = cli->threads;
		c->set[RD_CK_THREADS] = RD_CONF_FROM_CLI;
	}
	if (cli->max_lanes > 0) {
		c->max_lanes = cli->max_lanes;
		c->set[RD_CK_MAX_LANES] = RD_CONF_FROM_CLI;
	}
	if (cli->verbose) {
		c->log_level = RD_CONF_LOG_DEBUG;
		c->set[RD_CK_LOG_LEVEL] = RD_CONF_FROM_CLI;
	}
	if (cli->no_auth)
		c->no_auth = 1;
	return c->nerrors > before ? -RD_EUSAGE : 0;
}

/* --- whole-config rules --- */

/* Who may delete: never in a write-only module, and someone must be able to write. */
static void delete_rules(struct rd_conf *c, const struct rd_conf_module *m, const char *l)
{
	unsigned at = m->delete_ok ? m->set[RD_CK_DELETE] : m->set[RD_CK_AUTH_USERS];
	int i, plus = 0;

	for (i = 0; i < m->nusers; i++)
		plus += m->users[i].delete_ok > 0;
	if (m->write_only && (m->delete_ok || plus))
		rd_conf_report(c, AT(c, at), RD_CONF_ERROR,
			       "module %s is 'write only': it never deletes (its clients cannot "
			       "see what they would delete); remove %s",
			       l, m->delete_ok ? "'delete = yes'" : "'+delete' from auth users");
	else if ((m->delete_ok || plus) && !rd_conf_module_deletes(m))
		rd_conf_report(c, AT(c, at), RD_CONF_ERROR,
			       "module %s allows deleting but nobody may write to it ('read only' "
			       "and no auth users entry with rw): a read-only module never deletes",
			       l);
}

static void module_rules(struct rd_conf *c, const struct rd_conf_module *m)
{
	char l[RD_CONF_MODNAME_MAX + 16];

	mod_label(m, l, sizeof(l));
	if (!m->set[RD_CK_PATH])
		rd_conf_report(c, AT(c, m->line), RD_CONF_ERROR, "module %s has no 'path'", l);
	if (m->read_only && m->write_only)
		rd_conf_report(c, AT(c, m->set[RD_CK_WRITE_ONLY]), RD_CONF_ERROR,
			       "module %s is both 'read only' and 'write only': nothing could "
			       "be copied",
			       l);
	delete_rules(c, m, l);
	if (m->auth_none && m->nusers)
		rd_conf_report(c, AT(c, m->set[RD_CK_AUTH_USERS]), RD_CONF_ERROR,
			       "module %s has 'auth = none' (line %u) and 'auth users': "
			       "anonymous clients have no user name to check",
			       l, m->set[RD_CK_AUTH]);
	if (m->refuse_checksum_none && !strcmp(m->checksum, "none"))
		rd_conf_report(c, AT(c, m->set[RD_CK_CHECKSUM]), RD_CONF_ERROR,
			       "module %s has 'checksum choice = none' and refuses checksum none",
			       l);
}

/* Real (SYSTEM) or normalized paths of every module; NULL if out of memory. */
static char (*module_paths(struct rd_conf *c, unsigned flags))[PATH_MAX]
{
	char(*p)[PATH_MAX] = calloc((size_t)(c->nmods ? c->nmods : 1), PATH_MAX);
	const struct rd_conf_module *m;
	char l[RD_CONF_MODNAME_MAX + 16];
	struct stat st;
	int i;

	if (!p) {
		rd_conf_report(c, c->file[0] ? c->file : NULL, 0, RD_CONF_ERROR, "out of memory");
		return NULL;
	}
	for (i = 0; i < c->nmods; i++) {
		m = c->mods[i];
		if (!m->path[0])
			continue;
		if (flags & RD_CONF_CHECK_SYSTEM) {
			if (!realpath(m->path, p[i])) {
				rd_conf_report(c, AT(c, m->set[RD_CK_PATH]), RD_CONF_ERROR,
					       "module %s: path %s: %s", mod_label(m, l, sizeof(l)),
					       m->path, strerror(errno));
				p[i][0] = '\0';
				continue;
			}
			if (stat(p[i], &st) || !S_ISDIR(st.st_mode)) {
				rd_conf_report(c, AT(c, m->set[RD_CK_PATH]), RD_CONF_ERROR,
					       "module %s: path %s is not a directory",
					       mod_label(m, l, sizeof(l)), m->path);
				p[i][0] = '\0';
			} else if (access(p[i], R_OK | X_OK)) {
				rd_conf_report(c, AT(c, m->set[RD_CK_PATH]), RD_CONF_ERROR,
					       "module %s: path %s: %s", mod_label(m, l, sizeof(l)),
					       m->path, strerror(errno));
			}
			continue;
		}
		if (rd_conf_path_normalize(m->path, p[i], PATH_MAX))
			p[i][0] = '\0';
	}
	return p;
}

static void nesting(struct rd_conf *c, char (*p)[PATH_MAX])
{
	const struct rd_conf_module *a, *b, *in, *out;
	char la[RD_CONF_MODNAME_MAX + 16], lb[RD_CONF_MODNAME_MAX + 16];
	int i, j;

	for (i = 0; i < c->nmods; i++) {
		for (j = i + 1; j < c->nmods; j++) {
			if (!p[i][0] || !p[j][0])
				continue;
			a = c->mods[i];
			b = c->mods[j];
			in = out = NULL;
			/* Equal paths: the later module is the one "inside". */
			if (rd_conf_path_within(p[j], p[i]) && rd_conf_module_writable(a)) {
				in = b;
				out = a;
			} else if (rd_conf_path_within(p[i], p[j]) && rd_conf_module_writable(b)) {
				in = a;
				out = b;
			}
			if (!in)
				continue;
			mod_label(in, la, sizeof(la));
			mod_label(out, lb, sizeof(lb));
			rd_conf_report(c, AT(c, in->set[RD_CK_PATH]), RD_CONF_ERROR,
				       "module %s (%s) lies inside writable module %s (%s): its "
				       "files could be changed through %s",
				       la, in->path, lb, out->path, lb);
		}
	}
}

static int name_known(const char *name, int group)
{
	struct rd_ids_user u;
	gid_t g;
	size_t i;
	int e;

	for (i = 0; name[i] >= '0' && name[i] <= '9'; i++)
		;
	if (i && !name[i])
		return 1; /* a number needs no entry */
	/* buffers that grow: a group of thousands of members is still found */
	return group ? !rd_ids_group(name, &g, &e) : !rd_ids_user(name, &u, &e);
}

static void check_file(struct rd_conf *c, int key, const char *path, int private_key)
{
	struct stat st;

	if (!path[0])
		return;
	if (stat(path, &st)) {
		rd_conf_report(c, AT(c, c->set[key]), RD_CONF_ERROR, "%s %s: %s",
			       rd_conf_key_name(key), path, strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode))
		rd_conf_report(c, AT(c, c->set[key]), RD_CONF_ERROR, "%s %s: not a regular file",
			       rd_conf_key_name(key), path);
	else if (private_key && (st.st_mode & 077))
		rd_conf_report(c, AT(c, c->set[key]), RD_CONF_ERROR,
			       "%s %s: readable by others (mode %04o); make it 0600",
			       rd_conf_key_name(key), path, (unsigned)(st.st_mode & 07777));
}

/*
 * The host key password logins need (no tls certificate): rdcpd makes it
 * at first start; one that exists must be usable as it stands.
 */
static void check_host_key(struct rd_conf *c)
{
	unsigned at = c->set[RD_CK_HOST_KEY] ? c->set[RD_CK_HOST_KEY] : c->set[RD_CK_SECRETS_FILE];
	struct stat st;

	if (lstat(c->host_key, &st) < 0) {
		if (errno != ENOENT)
			rd_conf_report(c, AT(c, at), RD_CONF_ERROR, "host key %s: %s", c->host_key,
				       strerror(errno));
		return; /* made at first start */
	}
	if (!S_ISREG(st.st_mode))
		rd_conf_report(c, AT(c, at), RD_CONF_ERROR, "host key %s: not a regular file",
			       c->host_key);
	else if (st.st_uid != geteuid())
		rd_conf_report(c, AT(c, at), RD_CONF_ERROR,
			       "host key %s: owned by uid %u, not by the daemon's user (uid %u)",
			       c->host_key, (unsigned)st.st_uid, (unsigned)geteuid());
	else if (st.st_mode & 077)
		rd_conf_report(c, AT(c, at), RD_CONF_ERROR,
			       "host key %s: readable by others (mode %04o); make it 0600",
			       c->host_key, (unsigned)(st.st_mode & 07777));
}

/* Whether this process may lock memory beyond RLIMIT_MEMLOCK (CAP_IPC_LOCK). */
static int has_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return (data[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

/*
 * Default memory budget: the locked-memory limit, which is what the kernel
 * lets us pin -- unless we hold CAP_IPC_LOCK (root), which the limit does
 * not bind; then half the RAM.
 */
static void memory_default(struct rd_conf *c)
{
	struct rlimit rl;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	int cap = has_ipc_lock();

	if (c->set[RD_CK_MEMORY_BUDGET])
		return;
	if (!cap && !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		c->memory_budget = (uint64_t)rl.rlim_cur;
		snprintf(c->memory_budget_from, sizeof(c->memory_budget_from),
			 "the locked-memory limit, ulimit -l");
	} else if (pages > 0 && psize > 0) {
		c->memory_budget = (uint64_t)pages * (uint64_t)psize / 2;
		snprintf(c->memory_budget_from, sizeof(c->memory_budget_from), "half the RAM, %s",
			 cap ? "with CAP_IPC_LOCK" : "ulimit -l is unlimited");
	}
}

/* A log file: its directory must exist (the file is created when missing). */
static void check_log_file(struct rd_conf *c, unsigned line, const char *what, const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	struct stat st;

	if (!path[0])
		return;
	if (!lstat(path, &st)) {
		if (!S_ISREG(st.st_mode))
			rd_conf_report(c, AT(c, line), RD_CONF_ERROR, "%s %s: not a regular file",
				       what, path);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), "/");
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		rd_conf_report(c, AT(c, line), RD_CONF_ERROR, "%s %s: no directory %s", what, path,
			       dir);
}

static void system_rules(struct rd_conf *c)
{
	const struct rd_conf_module *m;
	struct rd_digest *dg = NULL;
	struct rd_secrets *s = NULL;
	struct rd_err err;
	char l[RD_CONF_MODNAME_MAX + 16];
	int i;

	if (c->user[0] && !name_known(c->user, 0))
		rd_conf_report(c, AT(c, c->set[RD_CK_USER]), RD_CONF_ERROR,
			       "user: no user '%s' on this system", c->user);
	if (c->group[0] && !name_known(c->group, 1))
		rd_conf_report(c, AT(c, c->set[RD_CK_GROUP]), RD_CONF_ERROR,
			       "group: no group '%s' on this system", c->group);
	if (c->status_group[0] && !name_known(c->status_group, 1))
		rd_conf_report(c, AT(c, c->set[RD_CK_STATUS_GROUP]), RD_CONF_ERROR,
			       "status group: no group '%s' on this system", c->status_group);
	check_log_file(c, c->set[RD_CK_LOG_FILE], "log file", c->log_file);
	check_file(c, RD_CK_TLS_CERT, c->tls_cert, 0);
	check_file(c, RD_CK_TLS_KEY, c->tls_key, 1);
	check_file(c, RD_CK_TLS_CLIENT_CA, c->tls_client_ca, 0);
	if (c->secrets_file[0] && !c->tls_cert[0])
		check_host_key(c);
	if (c->secrets_file[0]) {
		rd_err_clear(&err);
		rd_secrets_load(&s, c->secrets_file, geteuid(), c, &err);
		rd_secrets_free(s);
	}
	for (i = 0; i < c->nmods; i++) {
		m = c->mods[i];
		mod_label(m, l, sizeof(l));
		if (m->uid[0] && !name_known(m->uid, 0))
			rd_conf_report(c, AT(c, m->set[RD_CK_UID]), RD_CONF_ERROR,
				       "module %s: no user '%s' on this system", l, m->uid);
		if (m->gid[0] && !name_known(m->gid, 1))
			rd_conf_report(c, AT(c, m->set[RD_CK_GID]), RD_CONF_ERROR,
				       "module %s: no group '%s' on this system", l, m->gid);
		check_log_file(c, m->set[RD_CK_MOD_LOG_FILE], "log file", m->log_file);
		if (m->set[RD_CK_CHECKSUM] && rd_digest_open(&dg, m->checksum, &err))
			rd_conf_report(c, AT(c, m->set[RD_CK_CHECKSUM]), RD_CONF_ERROR,
				       "module %s: %s", l, err.msg);
		rd_digest_close(dg);
		dg = NULL;
	}
	memory_default(c);
}

int rd_conf_check(struct rd_conf *c, unsigned flags)
{
	char(*paths)[PATH_MAX];
	unsigned before = c->nerrors;
	int i;

	if (c->tls_key[0] && !c->tls_cert[0])
		rd_conf_report(c, AT(c, c->set[RD_CK_TLS_KEY]), RD_CONF_ERROR,
			       "'tls key' without 'tls certificate'");
	if (c->tls_cert[0] && !c->tls_key[0])
		rd_conf_report(c, AT(c, c->set[RD_CK_TLS_CERT]), RD_CONF_ERROR,
			       "'tls certificate' without 'tls key'");
	if (c->tls_client_ca[0] && !c->tls_cert[0])
		rd_conf_report(c, AT(c, c->set[RD_CK_TLS_CLIENT_CA]), RD_CONF_ERROR,
			       "'tls client ca' needs 'tls certificate' and 'tls key'");
	/* The drop comes before binding (the RDMA fds must be opened by the
	 * final identity), so a privileged port cannot be bound after it. */
	if (c->user[0] && c->port < 1024)
		rd_conf_report(c, AT(c, c->set[RD_CK_PORT] ? c->set[RD_CK_PORT] : c->set[RD_CK_USER]),
			       RD_CONF_ERROR,
			       "port %u is below 1024, but with 'user' rdcpd gives up root before it "
			       "binds: use a port of 1024 or more, or drop 'user' and start rdcpd as "
			       "that user with CAP_NET_BIND_SERVICE (systemd AmbientCapabilities=)",
			       c->port);
	if (c->set[RD_CK_METRICS_HOSTS_ALLOW] && !c->metrics_listen[0])
		rd_conf_report(
		    c, AT(c, c->set[RD_CK_METRICS_HOSTS_ALLOW]), RD_CONF_WARNING,
		    "'metrics hosts allow' without 'metrics listen': no metrics are served");
	if (c->metrics_listen[0] && !c->nmetrics_allow) {
		struct sockaddr_storage ss;
		struct rd_conf_net a;
		socklen_t sl;

		if (!rd_conf_metrics_addr(c, &ss, &sl) &&
		    !rd_conf_addr_from_sockaddr(&a, (struct sockaddr *)&ss) &&
		    !rd_conf_metrics_allowed(c, &a))
			rd_conf_report(c, AT(c, c->set[RD_CK_METRICS_LISTEN]), RD_CONF_WARNING,
				       "metrics listen %s: without 'metrics hosts allow' only "
				       "loopback addresses may scrape",
				       c->metrics_listen);
	}
	if (c->status_group[0] && !c->status_socket[0])
		rd_conf_report(
		    c, AT(c, c->set[RD_CK_STATUS_GROUP]), RD_CONF_WARNING,
		    "'status group' with 'status socket' empty: there is no status socket");
	for (i = 0; i < c->nmods; i++) {
		module_rules(c, c->mods[i]);
		/* Per-module identities need root for the daemon's whole life. */
		if (c->user[0] && (c->mods[i]->uid[0] || c->mods[i]->gid[0])) {
			char l[RD_CONF_MODNAME_MAX + 16];

			rd_conf_report(c, AT(c, c->mods[i]->line), RD_CONF_ERROR,
				       "module %s has uid/gid, which needs rdcpd to stay root: "
				       "remove the global 'user' or the module's uid/gid",
				       mod_label(c->mods[i], l, sizeof(l)));
		}
		if (c->mods[i]->nusers && !c->secrets_file[0] && !c->tls_client_ca[0])
			rd_conf_report(c, AT(c, c->mods[i]->set[RD_CK_AUTH_USERS]), RD_CONF_ERROR,
				       "'auth users' needs a 'secrets file' or a 'tls client ca' "
				       "to check users against");
	}
	if (flags & RD_CONF_CHECK_SYSTEM)
		system_rules(c);
	paths = module_paths(c, flags);
	if (paths)
		nesting(c, paths);
	free(paths);
	return c->nerrors > before ? -RD_EUSAGE : 0;
}

int rd_conf_budget_conns(struct rd_conf *c, uint64_t pool_bytes)
{
	uint64_t n;

	if (!pool_bytes || !c->memory_budget)
		return c->max_conns;
	n = c->memory_budget / pool_bytes;
	if (!n && c->set[RD_CK_MEMORY_BUDGET]) {
		rd_conf_report(c, AT(c, c->set[RD_CK_MEMORY_BUDGET]), RD_CONF_ERROR,
			       "memory budget %lluK cannot hold one connection's buffers "
			       "(%lluK)",
			       (unsigned long long)(c->memory_budget >> 10),
			       (unsigned long long)(pool_bytes >> 10));
		return 0;
	}
	if (!n) {
		rd_conf_report(c, NULL, 0, RD_CONF_WARNING,
			       "%s (%lluK) cannot hold one connection's buffers (%lluK): "
			       "clients will fail to register memory; raise it (LimitMEMLOCK= "
			       "under systemd) or set 'memory budget'",
			       c->memory_budget_from, (unsigned long long)(c->memory_budget >> 10),
			       (unsigned long long)(pool_bytes >> 10));
		n = 1;
	}
	return n < (uint64_t)c->max_conns ? (int)n : c->max_conns;
}

int rd_conf_fd_budget(struct rd_conf *c, int conns, unsigned per_conn, uint64_t soft,
		      uint64_t hard, uint64_t *need)
{
	unsigned line = c->set[RD_CK_MAX_CONNS];

	*need = (uint64_t)conns * per_conn + RD_CONF_FDS_RESERVE;
	if (*need <= soft)
		return 0;
	if (*need <= hard)
		return 1;
	rd_conf_report(c, AT(c, line), RD_CONF_ERROR,
		       "%d connections need about %llu open files (%u each, %u for the daemon), "
		       "but the open-file limit is %llu (ulimit -Hn; LimitNOFILE= under "
		       "systemd): lower 'max connections' to %llu or raise the limit",
		       conns, (unsigned long long)*need, per_conn, RD_CONF_FDS_RESERVE,
		       (unsigned long long)hard,
		       hard > RD_CONF_FDS_RESERVE + per_conn
			   ? (unsigned long long)((hard - RD_CONF_FDS_RESERVE) / per_conn)
			   : 1ull);
	return -RD_EUSAGE;
}

/* --- what this daemon enforces --- */

static void not_enforced(struct rd_conf *c, unsigned line, int sev, const char *key,
			 const char *where)
{
	if (sev == RD_CONF_ERROR)
		rd_conf_report(c, AT(c, line), sev,
			       "'%s'%s is not enforced by this version of rdcpd yet: it would be "
			       "ignored, so the daemon refuses to start with it",
			       key, where);
	else
		rd_conf_report(c, AT(c, line), sev,
			       "'%s'%s is not enforced by this version of rdcpd yet", key, where);
}

static void module_support(struct rd_conf *c, const struct rd_conf_module *m, unsigned caps)
{
	char l[RD_CONF_MODNAME_MAX + 16], where[RD_CONF_MODNAME_MAX + 32];

	mod_label(m, l, sizeof(l));
	snprintf(where, sizeof(where), " in %s", l);
	if (!(caps & RD_CONF_CAP_AUTH) && !m->auth_none && !c->no_auth)
		rd_conf_report(c, AT(c, m->line), RD_CONF_ERROR,
			       "module %s requires authentication, which this version of rdcpd "
			       "does not implement yet: %s",
			       l,
			       m->line == RD_CONF_FROM_CLI
				   ? "pass --no-auth to serve it to anyone who can reach the "
				     "port"
				   : "add 'auth = none' to serve it to anyone who can reach "
				     "the port, or start rdcpd with --no-auth");
	/* Enforced, but nobody could ever prove who they are. */
	if ((caps & RD_CONF_CAP_AUTH) && !m->auth_none && !c->no_auth && !c->secrets_file[0] &&
	    !c->tls_client_ca[0])
		rd_conf_report(c, AT(c, m->line), RD_CONF_ERROR,
			       "module %s requires authentication, but no user can authenticate: "
			       "%s",
			       l,
			       m->line == RD_CONF_FROM_CLI
				   ? "give a config file with a 'secrets file', or pass --no-auth "
				     "to serve it to anyone who can reach the port"
				   : "set 'secrets file' (or 'tls client ca'), add 'auth = none' to "
				     "serve it to anyone who can reach the port, or start rdcpd "
				     "with --no-auth");
	if (!(caps & RD_CONF_CAP_HOSTS) && m->set[RD_CK_HOSTS_ALLOW])
		not_enforced(c, m->set[RD_CK_HOSTS_ALLOW], RD_CONF_ERROR, "hosts allow", where);
	if (!(caps & RD_CONF_CAP_HOSTS) && m->set[RD_CK_HOSTS_DENY])
		not_enforced(c, m->set[RD_CK_HOSTS_DENY], RD_CONF_ERROR, "hosts deny", where);
	if (!(caps & RD_CONF_CAP_AUTH_USERS) && m->set[RD_CK_AUTH_USERS])
		not_enforced(c, m->set[RD_CK_AUTH_USERS], RD_CONF_ERROR, "auth users", where);
	if (!(caps & RD_CONF_CAP_WRITE_ONLY) && m->write_only)
		not_enforced(c, m->set[RD_CK_WRITE_ONLY], RD_CONF_ERROR, "write only", where);
	if (!(caps & RD_CONF_CAP_IDENTITY) && m->set[RD_CK_UID])
		not_enforced(c, m->set[RD_CK_UID], RD_CONF_ERROR, "uid", where);
	if (!(caps & RD_CONF_CAP_IDENTITY) && m->set[RD_CK_GID])
		not_enforced(c, m->set[RD_CK_GID], RD_CONF_ERROR, "gid", where);
	if (!(caps & RD_CONF_CAP_ENCRYPTION) && m->require_encryption)
		not_enforced(c, m->set[RD_CK_REQUIRE_ENCRYPTION], RD_CONF_ERROR,
			     "require encryption", where);
	if (!(caps & RD_CONF_CAP_CHECKSUM) && m->refuse_checksum_none)
		not_enforced(c, m->set[RD_CK_REFUSE_CHECKSUM_NONE], RD_CONF_ERROR,
			     "refuse checksum none", where);
	if (!(caps & RD_CONF_CAP_CHECKSUM) && m->set[RD_CK_CHECKSUM])
		not_enforced(c, m->set[RD_CK_CHECKSUM], RD_CONF_WARNING, "checksum choice", where);
	if (!(caps & RD_CONF_CAP_MODULE_CONNS) && m->set[RD_CK_MOD_MAX_CONNS])
		not_enforced(c, m->set[RD_CK_MOD_MAX_CONNS], RD_CONF_WARNING, "max connections",
			     where);
	if (!(caps & RD_CONF_CAP_XFERLOG) && m->set[RD_CK_MOD_TRANSFER_LOGGING])
		not_enforced(c, m->set[RD_CK_MOD_TRANSFER_LOGGING], RD_CONF_WARNING,
			     "transfer logging", where);
	if (!(caps & RD_CONF_CAP_XFERLOG) && m->set[RD_CK_MOD_LOG_FILE])
		not_enforced(c, m->set[RD_CK_MOD_LOG_FILE], RD_CONF_WARNING, "log file", where);
	if (!(caps & RD_CONF_CAP_XFERLOG) && m->set[RD_CK_MOD_LOG_FORMAT])
		not_enforced(c, m->set[RD_CK_MOD_LOG_FORMAT], RD_CONF_WARNING, "log format", where);
	if (!(caps & RD_CONF_CAP_RATE) && m->set[RD_CK_MOD_MAX_RATE])
		not_enforced(c, m->set[RD_CK_MOD_MAX_RATE], RD_CONF_WARNING, "max rate", where);
	/* not enforced, nothing is deleted at all: safe, a warning */
	if (!(caps & RD_CONF_CAP_DELETE) && m->set[RD_CK_DELETE])
		not_enforced(c, m->set[RD_CK_DELETE], RD_CONF_WARNING, "delete", where);
	if (!(caps & RD_CONF_CAP_PARTIAL_AGE) && m->set[RD_CK_MOD_PARTIAL_MAX_AGE])
		not_enforced(c, m->set[RD_CK_MOD_PARTIAL_MAX_AGE], RD_CONF_WARNING,
			     "partial max age", where);
}

int rd_conf_check_support(struct rd_conf *c, unsigned caps)
{
	static const int auth_keys[] = {RD_CK_SECRETS_FILE,  RD_CK_TLS_CERT, RD_CK_TLS_KEY,
					RD_CK_TLS_CLIENT_CA, RD_CK_HOST_KEY, RD_CK_AUTH_TIMEOUT};
	static const struct {
		int key;
		unsigned cap;
	} ops_keys[] = {
	    {RD_CK_TRANSFER_LOGGING, RD_CONF_CAP_XFERLOG},
	    {RD_CK_LOG_FILE, RD_CONF_CAP_XFERLOG},
	    {RD_CK_LOG_FORMAT, RD_CONF_CAP_XFERLOG},
	    {RD_CK_METRICS_LISTEN, RD_CONF_CAP_METRICS},
	    {RD_CK_METRICS_HOSTS_ALLOW, RD_CONF_CAP_METRICS},
	    {RD_CK_STATUS_SOCKET, RD_CONF_CAP_STATUS},
	    {RD_CK_STATUS_GROUP, RD_CONF_CAP_STATUS},
	    {RD_CK_PARTIAL_MAX_AGE, RD_CONF_CAP_PARTIAL_AGE},
	    {RD_CK_MAX_RATE, RD_CONF_CAP_RATE},
	};
	unsigned before = c->nerrors;
	size_t k;
	int i;

	if (!(caps & RD_CONF_CAP_TCP) && c->transport != RD_TRANSPORT_RDMA)
		rd_conf_report(c, AT(c, c->set[RD_CK_TRANSPORT]), RD_CONF_ERROR,
			       "transport: this version of rdcpd serves RDMA only");
	if (!(caps & RD_CONF_CAP_MULTI_LISTEN) && c->nlisten > 1)
		rd_conf_report(c, AT(c, c->set[RD_CK_LISTEN]), RD_CONF_ERROR,
			       "listen: this version of rdcpd listens on one address, not %d",
			       c->nlisten);
	if (!(caps & RD_CONF_CAP_DROP) && c->set[RD_CK_USER])
		not_enforced(c, c->set[RD_CK_USER], RD_CONF_ERROR, "user", "");
	if (!(caps & RD_CONF_CAP_DROP) && c->set[RD_CK_GROUP])
		not_enforced(c, c->set[RD_CK_GROUP], RD_CONF_ERROR, "group", "");
	if (!(caps & RD_CONF_CAP_LIMITS) && c->set[RD_CK_MAX_CONNS_PER_HOST])
		not_enforced(c, c->set[RD_CK_MAX_CONNS_PER_HOST], RD_CONF_WARNING,
			     "max connections per host", "");
	if (!(caps & RD_CONF_CAP_LIMITS) && c->set[RD_CK_MAX_CONNS_PER_USER])
		not_enforced(c, c->set[RD_CK_MAX_CONNS_PER_USER], RD_CONF_WARNING,
			     "max connections per user", "");
	if (!(caps & RD_CONF_CAP_LIMITS) && c->set[RD_CK_THREADS])
		not_enforced(c, c->set[RD_CK_THREADS], RD_CONF_WARNING, "threads", "");
	if (!(caps & RD_CONF_CAP_LIMITS) && c->set[RD_CK_MAX_LANES])
		not_enforced(c, c->set[RD_CK_MAX_LANES], RD_CONF_WARNING, "max lanes", "");
	for (k = 0; k < sizeof(ops_keys) / sizeof(ops_keys[0]); k++) {
		if (!(caps & ops_keys[k].cap) && c->set[ops_keys[k].key])
			not_enforced(c, c->set[ops_keys[k].key], RD_CONF_WARNING,
				     rd_conf_key_name(ops_keys[k].key), "");
	}
	if (!(caps & RD_CONF_CAP_LIMITS) && c->set[RD_CK_LINK_TABLE])
		not_enforced(c, c->set[RD_CK_LINK_TABLE], RD_CONF_WARNING, "link table size", "");
	for (k = 0; k < sizeof(auth_keys) / sizeof(auth_keys[0]); k++) {
		if (!(caps & RD_CONF_CAP_AUTH) && c->set[auth_keys[k]])
			not_enforced(c, c->set[auth_keys[k]], RD_CONF_WARNING,
				     rd_conf_key_name(auth_keys[k]), "");
	}
	for (i = 0; i < c->nmods; i++)
		module_support(c, c->mods[i], caps);
	return c->nerrors > before ? -RD_EUSAGE : 0;
}
