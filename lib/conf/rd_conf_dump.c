// SPDX-License-Identifier: MIT
/*
 * The configuration as rdcpd runs it, written back in the file's own
 * syntax (rdcpd --dump-config). A key with a value, its own or a fixed
 * default, is written "key = value"; a key without one is written as a
 * comment "# key = (what applies)". Every key of the table must be known
 * here: tests/docs compares the shipped sample's "#key = value" lines with
 * this output, so a default documented there cannot drift from the code.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "lib/conf/rd_conf_priv.h"

/* The largest unit that divides n exactly ("64M"), as the file spells sizes. */
static void fmt_size(uint64_t n, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (n && !(n & 1023) && u < 3) {
		n >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)n);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)n, units[u]);
}

/* A rate as the file reads it back (rsync's units: a bare number is KiB). */
static void fmt_rate(uint64_t n, char *buf, size_t len)
{
	if (n && n % 1024)
		snprintf(buf, len, "%llub", (unsigned long long)n);
	else
		fmt_size(n, buf, len);
}

static const char *yes_no(int v)
{
	return v ? "yes" : "no";
}

/* A network as the file would take it: IPv4 (mapped) as a.b.c.d/n. */
static void fmt_net(const struct rd_conf_net *n, char *buf, size_t len)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char a[INET6_ADDRSTRLEN];

	if (!memcmp(n->addr, mapped, sizeof(mapped)) && n->prefix >= 96) {
		inet_ntop(AF_INET, n->addr + 12, a, sizeof(a));
		if (n->prefix == 128)
			snprintf(buf, len, "%s", a);
		else
			snprintf(buf, len, "%s/%u", a, n->prefix - 96u);
		return;
	}
	inet_ntop(AF_INET6, n->addr, a, sizeof(a));
	if (n->prefix == 128)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s/%u", a, n->prefix);
}

/* Append ", " and s to buf (bounded; cut silently: only a dump). */
static void append(char *buf, size_t len, const char *s)
{
	size_t used = strlen(buf);

	if (used + 1 >= len)
		return;
	snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s);
}

static void fmt_hosts(const struct rd_conf_net *n, int count, char *buf, size_t len)
{
	char one[64];
	int i;

	buf[0] = '\0';
	for (i = 0; i < count; i++) {
		fmt_net(&n[i], one, sizeof(one));
		append(buf, len, one);
	}
}

static void fmt_users(const struct rd_conf_user *u, int count, char *buf, size_t len)
{
	static const char *const acc[] = {
	    [RD_ACCESS_DENY] = "deny", [RD_ACCESS_RO] = "ro", [RD_ACCESS_RW] = "rw"};
	char one[RD_CONF_NAME_MAX + 16];
	int i;

	buf[0] = '\0';
	for (i = 0; i < count; i++) {
		const char *who = u[i].is_all ? "*" : u[i].name;

		if (u[i].access == RD_ACCESS_DEFAULT || u[i].access > RD_ACCESS_RW)
			snprintf(one, sizeof(one), "%s%s", u[i].is_group ? "@" : "", who);
		else
			snprintf(one, sizeof(one), "%s%s:%s%s", u[i].is_group ? "@" : "", who,
				 acc[u[i].access],
				 u[i].delete_ok > 0   ? "+delete"
				 : u[i].delete_ok < 0 ? "-delete"
						      : "");
		append(buf, len, one);
	}
}

static const char *log_level_name(int l)
{
	switch (l) {
	case RD_CONF_LOG_ERR:
		return "error";
	case RD_CONF_LOG_WARN:
		return "warning";
	case RD_CONF_LOG_DEBUG:
		return "debug";
	default:
		return "info";
	}
}

/* A duration as the file takes it: days when whole ("7d"), else seconds. */
static void fmt_age(int s, char *buf, size_t len)
{
	if (s && !(s % 86400))
		snprintf(buf, len, "%dd", s / 86400);
	else
		snprintf(buf, len, "%d", s);
}

/* The keys of the transfer log and the partials, global or a module's. */
static int ops_value(int key, int logging, const char *file, const char *format, int age,
		     char *buf, size_t len)
{
	switch (key) {
	case RD_CK_TRANSFER_LOGGING:
	case RD_CK_MOD_TRANSFER_LOGGING:
		snprintf(buf, len, "%s", yes_no(logging));
		return 1;
	case RD_CK_LOG_FILE:
	case RD_CK_MOD_LOG_FILE:
		if (!file[0]) {
			snprintf(buf, len, "%s",
				 key == RD_CK_LOG_FILE
				     ? "(unset: the journal under systemd, else syslog, or stderr "
				       "with --foreground)"
				     : "(unset: the daemon's log)");
			return 0;
		}
		snprintf(buf, len, "%s", file);
		return 1;
	case RD_CK_LOG_FORMAT:
	case RD_CK_MOD_LOG_FORMAT:
		snprintf(buf, len, "%s", format);
		return 1;
	case RD_CK_PARTIAL_MAX_AGE:
	case RD_CK_MOD_PARTIAL_MAX_AGE:
		fmt_age(age, buf, len);
		return 1;
	default:
		return -1;
	}
}

/* 1: buf holds the value; 0: no value, buf says what applies; -1: unknown key. */
static int global_value(const struct rd_conf *c, int key, char *buf, size_t len)
{
	int i;

	buf[0] = '\0';
	switch (key) {
	case RD_CK_LISTEN:
		if (!c->nlisten) {
			snprintf(buf, len, "(unset: every address of both families)");
			return 0;
		}
		for (i = 0; i < c->nlisten; i++)
			append(buf, len, c->listen[i]);
		return 1;
	case RD_CK_PORT:
		snprintf(buf, len, "%u", c->port);
		return 1;
	case RD_CK_TRANSPORT:
		snprintf(buf, len, "%s",
			 c->transport == RD_TRANSPORT_RDMA  ? "rdma"
			 : c->transport == RD_TRANSPORT_TCP ? "tcp"
							    : "both");
		return 1;
	case RD_CK_MAX_CONNS:
		snprintf(buf, len, "%d", c->max_conns);
		return 1;
	case RD_CK_MAX_CONNS_PER_HOST:
		snprintf(buf, len, "%d", c->max_conns_per_host);
		return 1;
	case RD_CK_MAX_CONNS_PER_USER:
		snprintf(buf, len, "%d", c->max_conns_per_user);
		return 1;
	case RD_CK_MEMORY_BUDGET:
		if (c->set[key] != RD_CONF_FROM_DEFAULT) {
			fmt_size(c->memory_budget, buf, len);
			return 1;
		}
		if (c->memory_budget) {
			snprintf(buf, len, "(unset: %.1fM here, %s)",
				 (double)c->memory_budget / (1 << 20), c->memory_budget_from);
		} else {
			snprintf(buf, len,
				 "(unset: derived at start from the locked-memory limit)");
		}
		return 0;
	case RD_CK_AUTH_TIMEOUT:
		snprintf(buf, len, "%d", c->auth_timeout_s);
		return 1;
	case RD_CK_IDLE_TIMEOUT:
		snprintf(buf, len, "%d", c->idle_timeout_s);
		return 1;
	case RD_CK_LOG_LEVEL:
		snprintf(buf, len, "%s", log_level_name(c->log_level));
		return 1;
	case RD_CK_SECRETS_FILE:
	case RD_CK_TLS_CERT:
	case RD_CK_TLS_KEY:
	case RD_CK_TLS_CLIENT_CA: {
		const char *p = key == RD_CK_SECRETS_FILE ? c->secrets_file
				: key == RD_CK_TLS_CERT	  ? c->tls_cert
				: key == RD_CK_TLS_KEY	  ? c->tls_key
							  : c->tls_client_ca;

		if (!p[0]) {
			snprintf(buf, len, "(unset)");
			return 0;
		}
		snprintf(buf, len, "%s", p);
		return 1;
	}
	case RD_CK_HOST_KEY:
		snprintf(buf, len, "%s", c->host_key);
		return 1;
	case RD_CK_USER:
	case RD_CK_GROUP: {
		const char *p = key == RD_CK_USER ? c->user : c->group;

		if (!p[0]) {
			snprintf(buf, len, "(unset: keep the account rdcpd was started as)");
			return 0;
		}
		snprintf(buf, len, "%s", p);
		return 1;
	}
	case RD_CK_THREADS:
		if (!c->threads) {
			snprintf(buf, len, "(unset: the cores, at most 8)");
			return 0;
		}
		snprintf(buf, len, "%d", c->threads);
		return 1;
	case RD_CK_MAX_LANES:
		snprintf(buf, len, "%d", c->max_lanes ? c->max_lanes : RD_CONF_LANES_DEFAULT);
		return 1;
	case RD_CK_METRICS_LISTEN:
		if (!c->metrics_listen[0]) {
			snprintf(buf, len, "(unset: no metrics endpoint)");
			return 0;
		}
		snprintf(buf, len, "%s", c->metrics_listen);
		return 1;
	case RD_CK_METRICS_HOSTS_ALLOW:
		if (!c->nmetrics_allow) {
			snprintf(buf, len, "(unset: loopback addresses only)");
			return 0;
		}
		fmt_hosts(c->metrics_allow, c->nmetrics_allow, buf, len);
		return 1;
	case RD_CK_STATUS_SOCKET:
		if (!c->status_socket[0]) {
			snprintf(buf, len, "(empty: no status socket)");
			return 0;
		}
		snprintf(buf, len, "%s", c->status_socket);
		return 1;
	case RD_CK_MAX_RATE:
		if (!c->max_rate) {
			snprintf(buf, len, "(unset: no limit)");
			return 0;
		}
		fmt_rate(c->max_rate, buf, len);
		return 1;
	case RD_CK_STATUS_GROUP:
		if (!c->status_group[0]) {
			snprintf(buf, len, "(unset: root and rdcpd's user only)");
			return 0;
		}
		snprintf(buf, len, "%s", c->status_group);
		return 1;
	case RD_CK_LINK_TABLE:
		fmt_size(c->link_table, buf, len);
		return 1;
	default:
		return ops_value(key, c->transfer_logging, c->log_file, c->log_format,
				 c->partial_max_age_s, buf, len);
	}
}

static int module_value(const struct rd_conf_module *m, int key, char *buf, size_t len)
{
	buf[0] = '\0';
	switch (key) {
	case RD_CK_PATH:
		snprintf(buf, len, "%s", m->path);
		return 1;
	case RD_CK_COMMENT:
		if (!m->comment[0]) {
			snprintf(buf, len, "(unset)");
			return 0;
		}
		snprintf(buf, len, "%s", m->comment);
		return 1;
	case RD_CK_READ_ONLY:
		snprintf(buf, len, "%s", yes_no(m->read_only));
		return 1;
	case RD_CK_WRITE_ONLY:
		snprintf(buf, len, "%s", yes_no(m->write_only));
		return 1;
	case RD_CK_LIST:
		snprintf(buf, len, "%s", yes_no(m->list));
		return 1;
	case RD_CK_AUTH_USERS:
		if (!m->nusers) {
			snprintf(buf, len, "(unset: any authenticated user, as read only says)");
			return 0;
		}
		fmt_users(m->users, m->nusers, buf, len);
		return 1;
	case RD_CK_HOSTS_ALLOW:
		if (!m->nallow) {
			snprintf(buf, len, "(unset: every address)");
			return 0;
		}
		fmt_hosts(m->allow, m->nallow, buf, len);
		return 1;
	case RD_CK_HOSTS_DENY:
		if (!m->ndeny) {
			snprintf(buf, len, "(unset: no address)");
			return 0;
		}
		fmt_hosts(m->deny, m->ndeny, buf, len);
		return 1;
	case RD_CK_MOD_MAX_CONNS:
		snprintf(buf, len, "%d", m->max_conns);
		return 1;
	case RD_CK_UID:
	case RD_CK_GID: {
		const char *p = key == RD_CK_UID ? m->uid : m->gid;

		if (!p[0]) {
			snprintf(buf, len, "(unset: the daemon's own)");
			return 0;
		}
		snprintf(buf, len, "%s", p);
		return 1;
	}
	case RD_CK_AUTH:
		snprintf(buf, len, "%s", m->auth_none ? "none" : "required");
		return 1;
	case RD_CK_REQUIRE_ENCRYPTION:
		snprintf(buf, len, "%s", yes_no(m->require_encryption));
		return 1;
	case RD_CK_CHECKSUM:
		snprintf(buf, len, "%s", m->checksum);
		return 1;
	case RD_CK_REFUSE_CHECKSUM_NONE:
		snprintf(buf, len, "%s", yes_no(m->refuse_checksum_none));
		return 1;
	case RD_CK_MOD_MAX_RATE:
		if (!m->max_rate) {
			snprintf(buf, len, "(unset: only the daemon's max rate)");
			return 0;
		}
		fmt_rate(m->max_rate, buf, len);
		return 1;
	case RD_CK_DELETE:
		snprintf(buf, len, "%s", yes_no(m->delete_ok));
		return 1;
	default:
		return ops_value(key, m->transfer_logging, m->log_file, m->log_format,
				 m->partial_max_age_s, buf, len);
	}
}

int rd_conf_key_value(const struct rd_conf *c, const struct rd_conf_module *m, int key, char *buf,
		      size_t len)
{
	if (!len)
		return -1;
	buf[0] = '\0';
	if (key < 0 || key >= RD_CK_COUNT)
		return -1;
	if (rd_conf_key_section(key) == RD_CONF_GLOBAL)
		return m ? -1 : global_value(c, key, buf, len);
	return m ? module_value(m, key, buf, len) : -1;
}

static int dump_key(const struct rd_conf *c, const struct rd_conf_module *m, int key,
		    rd_conf_line_fn line, void *ctx)
{
	char val[RD_CONF_LINE_MAX], text[RD_CONF_LINE_MAX + 64];
	int r = rd_conf_key_value(c, m, key, val, sizeof(val));

	if (r < 0)
		return -1;
	snprintf(text, sizeof(text), "%s%s%s = %s", m ? "\t" : "", r ? "" : "# ",
		 rd_conf_key_name(key), val);
	line(ctx, text);
	return 0;
}

int rd_conf_dump(const struct rd_conf *c, rd_conf_line_fn line, void *ctx)
{
	char text[RD_CONF_MODNAME_MAX + 8];
	int key, i, bad = 0;

	for (key = 0; key < RD_CK_COUNT; key++) {
		if (rd_conf_key_section(key) == RD_CONF_GLOBAL && dump_key(c, NULL, key, line, ctx))
			bad++;
	}
	for (i = 0; i < c->nmods; i++) {
		line(ctx, "");
		snprintf(text, sizeof(text), "[%s]", c->mods[i]->name);
		line(ctx, text);
		for (key = 0; key < RD_CK_COUNT; key++) {
			if (rd_conf_key_section(key) == RD_CONF_MODULE &&
			    dump_key(c, c->mods[i], key, line, ctx))
				bad++;
		}
	}
	return bad ? -RD_EUSAGE : 0;
}
