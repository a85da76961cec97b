// SPDX-License-Identifier: MIT
/*
 * The key table: every key of rdcpd.conf, its section and the setter that
 * checks and stores its value. packaging/man/rdcpd.conf.5 documents each
 * one; tests/docs checks that the two agree.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/base/rd_num.h"
#include "lib/conf/rd_conf_priv.h"
#include "lib/proto/rd_proto.h"
#include "lib/xferlog/rd_xferlog.h"

_Static_assert(RD_CONF_FORMAT_MAX == RD_XFERLOG_FORMAT_MAX, "log format bound");

static int set_path(struct rd_conf_ctx *x, const char *v, char *out, size_t len)
{
	if (v[0] != '/')
		return rd_conf_why(x, "'%s' is not an absolute path", v);
	if (strlen(v) >= len)
		return rd_conf_why(x, "the path is longer than %zu bytes", len - 1);
	snprintf(out, len, "%s", v);
	return 0;
}

/* A user or group: a number, or a name of [A-Za-z0-9._-] not starting with '-'. */
static int set_ident(struct rd_conf_ctx *x, const char *v, char *out, size_t len)
{
	size_t i, n = strlen(v);

	if (n >= len)
		return rd_conf_why(x, "'%.40s...' is longer than %zu bytes", v, len - 1);
	for (i = 0; i < n; i++) {
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		      (v[i] >= '0' && v[i] <= '9') || v[i] == '.' || v[i] == '_' || v[i] == '-'))
			return rd_conf_why(x, "'%s' is not a user or group name or number", v);
	}
	if (v[0] == '-')
		return rd_conf_why(x, "'%s' is not a user or group name or number", v);
	snprintf(out, len, "%s", v);
	return 0;
}

static int set_bool(struct rd_conf_ctx *x, const char *v, int *out)
{
	return rd_conf_parse_bool(x, v, out);
}

static int set_int(struct rd_conf_ctx *x, const char *v, int min, int max, int *out)
{
	unsigned long long n;

	if (rd_conf_parse_uint(x, v, (unsigned long long)min, (unsigned long long)max, &n))
		return -1;
	*out = (int)n;
	return 0;
}

/* --- global --- */

static int k_listen(struct rd_conf_ctx *x, const char *v)
{
	struct rd_conf *c = x->c;
	char text[64];
	int i;

	if (rd_conf_addr_canon(v, text, sizeof(text)))
		return rd_conf_why(x, "'%s' is not a numeric IPv4 or IPv6 address", v);
	for (i = 0; i < c->nlisten; i++) {
		if (!strcmp(c->listen[i], text))
			return rd_conf_why(x, "%s is listed twice", text);
	}
	if (c->nlisten >= RD_CONF_LISTEN_MAX)
		return rd_conf_why(x, "at most %d addresses", RD_CONF_LISTEN_MAX);
	snprintf(c->listen[c->nlisten++], sizeof(c->listen[0]), "%s", text);
	return 0;
}

static int k_port(struct rd_conf_ctx *x, const char *v)
{
	int port;

	if (set_int(x, v, 0, 65535, &port))
		return -1;
	x->c->port = (unsigned)port;
	return 0;
}

static int k_transport(struct rd_conf_ctx *x, const char *v)
{
	if (!strcasecmp(v, "rdma"))
		x->c->transport = RD_TRANSPORT_RDMA;
	else if (!strcasecmp(v, "tcp"))
		x->c->transport = RD_TRANSPORT_TCP;
	else if (!strcasecmp(v, "both") || !strcasecmp(v, "auto"))
		x->c->transport = RD_TRANSPORT_BOTH;
	else
		return rd_conf_why(x, "'%s' is not rdma, tcp or both", v);
	return 0;
}

static int k_max_conns(struct rd_conf_ctx *x, const char *v)
{
	return set_int(x, v, 1, 4096, &x->c->max_conns);
}

static int k_max_conns_per_host(struct rd_conf_ctx *x, const char *v)
{
	return set_int(x, v, 1, 4096, &x->c->max_conns_per_host);
}

static int k_max_conns_per_user(struct rd_conf_ctx *x, const char *v)
{
	return set_int(x, v, 0, 4096, &x->c->max_conns_per_user);
}

static int k_memory_budget(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_size(x, v, 1ull << 20, 1ull << 44, &x->c->memory_budget);
}

static int k_auth_timeout(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_duration(x, v, 1, 300, &x->c->auth_timeout_s);
}

static int k_idle_timeout(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_duration(x, v, 1, 86400, &x->c->idle_timeout_s);
}

static int k_log_level(struct rd_conf_ctx *x, const char *v)
{
	if (!strcasecmp(v, "error") || !strcasecmp(v, "err"))
		x->c->log_level = RD_CONF_LOG_ERR;
	else if (!strcasecmp(v, "warning") || !strcasecmp(v, "warn"))
		x->c->log_level = RD_CONF_LOG_WARN;
	else if (!strcasecmp(v, "info"))
		x->c->log_level = RD_CONF_LOG_INFO;
	else if (!strcasecmp(v, "debug"))
		x->c->log_level = RD_CONF_LOG_DEBUG;
	else
		return rd_conf_why(x, "'%s' is not error, warning, info or debug", v);
	return 0;
}

static int k_secrets_file(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->c->secrets_file, sizeof(x->c->secrets_file));
}

static int k_tls_cert(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->c->tls_cert, sizeof(x->c->tls_cert));
}

static int k_tls_key(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->c->tls_key, sizeof(x->c->tls_key));
}

static int k_tls_client_ca(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->c->tls_client_ca, sizeof(x->c->tls_client_ca));
}

static int k_host_key(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->c->host_key, sizeof(x->c->host_key));
}

static int k_user(struct rd_conf_ctx *x, const char *v)
{
	return set_ident(x, v, x->c->user, sizeof(x->c->user));
}

static int k_group(struct rd_conf_ctx *x, const char *v)
{
	return set_ident(x, v, x->c->group, sizeof(x->c->group));
}

static int k_threads(struct rd_conf_ctx *x, const char *v)
{
	return set_int(x, v, 1, RD_CONF_THREADS_MAX, &x->c->threads);
}

static int k_max_lanes(struct rd_conf_ctx *x, const char *v)
{
	return set_int(x, v, 1, RD_LANES_MAX, &x->c->max_lanes);
}

static int set_format(struct rd_conf_ctx *x, const char *v, char *out, size_t len)
{
	char why[RD_CONF_MSG_MAX - 64];

	if (strlen(v) >= len)
		return rd_conf_why(x, "longer than %zu bytes", len - 1);
	if (rd_xferlog_check(v, why, sizeof(why)))
		return rd_conf_why(x, "%s", why);
	snprintf(out, len, "%s", v);
	return 0;
}

static int set_age(struct rd_conf_ctx *x, const char *v, int *out)
{
	return rd_conf_parse_duration(x, v, 0, 3650 * 86400, out);
}

static int k_transfer_logging(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->c->transfer_logging);
}

static int k_log_file(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->c->log_file, sizeof(x->c->log_file));
}

static int k_log_format(struct rd_conf_ctx *x, const char *v)
{
	return set_format(x, v, x->c->log_format, sizeof(x->c->log_format));
}

/* "ADDR:PORT" or "[V6ADDR]:PORT", numeric, port 1..65535. */
static int k_metrics_listen(struct rd_conf_ctx *x, const char *v)
{
	char addr[64], canon[64];
	const char *colon, *a = v;
	unsigned long long port;
	size_t n;

	colon = strrchr(v, ':');
	if (!colon || !colon[1])
		return rd_conf_why(x, "'%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9818, [::1]:9818)",
				   v);
	n = (size_t)(colon - v);
	if (v[0] == '[') {
		if (n < 2 || v[n - 1] != ']')
			return rd_conf_why(x, "'%s': write an IPv6 address as [ADDRESS]:PORT", v);
		a = v + 1;
		n -= 2;
	} else if (memchr(v, ':', n)) {
		return rd_conf_why(x, "'%s': write an IPv6 address as [ADDRESS]:PORT", v);
	}
	if (n >= sizeof(addr))
		return rd_conf_why(x, "'%s' is not a numeric IPv4 or IPv6 address", v);
	memcpy(addr, a, n);
	addr[n] = '\0';
	if (rd_conf_addr_canon(addr, canon, sizeof(canon)))
		return rd_conf_why(x, "'%s' is not a numeric IPv4 or IPv6 address", addr);
	if (rd_conf_parse_uint(x, colon + 1, 1, 65535, &port))
		return -1;
	snprintf(x->c->metrics_listen, sizeof(x->c->metrics_listen), "%s%s%s:%llu",
		 strchr(canon, ':') ? "[" : "", canon, strchr(canon, ':') ? "]" : "", port);
	return 0;
}

static int k_metrics_hosts_allow(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_hosts(x, v, &x->c->metrics_allow, &x->c->nmetrics_allow);
}

/* An absolute path that fits a unix socket address, or "" for none. */
static int k_status_socket(struct rd_conf_ctx *x, const char *v)
{
	if (!v[0]) {
		x->c->status_socket[0] = '\0';
		return 0;
	}
	if (strlen(v) >= sizeof(x->c->status_socket))
		return rd_conf_why(x, "a socket path has at most %zu bytes",
				   sizeof(x->c->status_socket) - 1);
	return set_path(x, v, x->c->status_socket, sizeof(x->c->status_socket));
}

static int k_status_group(struct rd_conf_ctx *x, const char *v)
{
	return set_ident(x, v, x->c->status_group, sizeof(x->c->status_group));
}

static int k_partial_max_age(struct rd_conf_ctx *x, const char *v)
{
	return set_age(x, v, &x->c->partial_max_age_s);
}

/* -H: a session's table of open link groups (rd_engine_opts.link_table). */
static int k_link_table(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_size(x, v, 64ull << 10, 1ull << 40, &x->c->link_table);
}

/*
 * A rate as rsync's --bwlimit spells it: a bare number is KiB per second,
 * "30M" MiB, "30MB" 10^6 bytes, "512b" bytes; 0 is no limit, else at
 * least 512 bytes per second (rsync's own floor).
 */
static int set_rate(struct rd_conf_ctx *x, const char *v, uint64_t *out)
{
	uint64_t n;
	int r = rd_num_parse_rsync_size(v, 'k', &n);

	if (r == -2 || (!r && n > RD_CONF_RATE_MAX))
		return rd_conf_why(x, "'%s' is too large (at most 1T per second)", v);
	if (r)
		return rd_conf_why(x, "'%s' is not a rate (e.g. 30M, 500K, 0 for none)", v);
	if (n && n < 512)
		return rd_conf_why(x, "'%s' is too small (at least 512 bytes per second, or 0)", v);
	*out = n;
	return 0;
}

static int k_max_rate(struct rd_conf_ctx *x, const char *v)
{
	return set_rate(x, v, &x->c->max_rate);
}

/* --- module --- */

static int k_path(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->m->path, sizeof(x->m->path));
}

static int k_comment(struct rd_conf_ctx *x, const char *v)
{
	if (strlen(v) >= sizeof(x->m->comment))
		return rd_conf_why(x, "longer than %zu bytes", sizeof(x->m->comment) - 1);
	snprintf(x->m->comment, sizeof(x->m->comment), "%s", v);
	return 0;
}

static int k_read_only(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->read_only);
}

static int k_write_only(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->write_only);
}

static int k_list(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->list);
}

static int k_auth_users(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_users(x, v, &x->m->users, &x->m->nusers);
}

static int k_hosts_allow(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_hosts(x, v, &x->m->allow, &x->m->nallow);
}

static int k_hosts_deny(struct rd_conf_ctx *x, const char *v)
{
	return rd_conf_parse_hosts(x, v, &x->m->deny, &x->m->ndeny);
}

static int k_mod_max_conns(struct rd_conf_ctx *x, const char *v)
{
	return set_int(x, v, 0, 4096, &x->m->max_conns);
}

static int k_uid(struct rd_conf_ctx *x, const char *v)
{
	return set_ident(x, v, x->m->uid, sizeof(x->m->uid));
}

static int k_gid(struct rd_conf_ctx *x, const char *v)
{
	return set_ident(x, v, x->m->gid, sizeof(x->m->gid));
}

static int k_auth(struct rd_conf_ctx *x, const char *v)
{
	if (!strcasecmp(v, "none"))
		x->m->auth_none = 1;
	else if (!strcasecmp(v, "required"))
		x->m->auth_none = 0;
	else
		return rd_conf_why(x, "'%s' is not 'required' or 'none'", v);
	return 0;
}

static int k_require_encryption(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->require_encryption);
}

/* An OpenSSL digest name or "none": letters, digits, '-', '_', '.', '/'. */
static int k_checksum(struct rd_conf_ctx *x, const char *v)
{
	size_t i, n = strlen(v);

	if (n >= sizeof(x->m->checksum))
		return rd_conf_why(x, "'%.40s...' is longer than %zu bytes", v,
				   sizeof(x->m->checksum) - 1);
	for (i = 0; i < n; i++) {
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		      (v[i] >= '0' && v[i] <= '9') || strchr("-_./", v[i])))
			return rd_conf_why(x, "'%s' is not a digest name (e.g. sha256)", v);
	}
	snprintf(x->m->checksum, sizeof(x->m->checksum), "%s", v);
	for (i = 0; i < n; i++) {
		if (x->m->checksum[i] >= 'A' && x->m->checksum[i] <= 'Z')
			x->m->checksum[i] = (char)(x->m->checksum[i] - 'A' + 'a');
	}
	return 0;
}

static int k_refuse_checksum_none(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->refuse_checksum_none);
}

static int k_mod_transfer_logging(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->transfer_logging);
}

static int k_mod_log_file(struct rd_conf_ctx *x, const char *v)
{
	return set_path(x, v, x->m->log_file, sizeof(x->m->log_file));
}

static int k_mod_log_format(struct rd_conf_ctx *x, const char *v)
{
	return set_format(x, v, x->m->log_format, sizeof(x->m->log_format));
}

static int k_mod_partial_max_age(struct rd_conf_ctx *x, const char *v)
{
	return set_age(x, v, &x->m->partial_max_age_s);
}

static int k_mod_max_rate(struct rd_conf_ctx *x, const char *v)
{
	return set_rate(x, v, &x->m->max_rate);
}

static int k_delete(struct rd_conf_ctx *x, const char *v)
{
	return set_bool(x, v, &x->m->delete_ok);
}

#define G RD_CONF_GLOBAL
#define M RD_CONF_MODULE

const struct rd_conf_keydef rd_conf_keys[RD_CK_COUNT] = {
    [RD_CK_LISTEN] = {"listen", G, 1, k_listen, 0},
    [RD_CK_PORT] = {"port", G, 0, k_port, 0},
    [RD_CK_TRANSPORT] = {"transport", G, 0, k_transport, 0},
    [RD_CK_MAX_CONNS] = {"max connections", G, 0, k_max_conns, 0},
    [RD_CK_MAX_CONNS_PER_HOST] = {"max connections per host", G, 0, k_max_conns_per_host, 0},
    [RD_CK_MAX_CONNS_PER_USER] = {"max connections per user", G, 0, k_max_conns_per_user, 0},
    [RD_CK_MEMORY_BUDGET] = {"memory budget", G, 0, k_memory_budget, 0},
    [RD_CK_AUTH_TIMEOUT] = {"auth timeout", G, 0, k_auth_timeout, 0},
    [RD_CK_IDLE_TIMEOUT] = {"idle timeout", G, 0, k_idle_timeout, 0},
    [RD_CK_LOG_LEVEL] = {"log level", G, 0, k_log_level, 0},
    [RD_CK_SECRETS_FILE] = {"secrets file", G, 0, k_secrets_file, 0},
    [RD_CK_TLS_CERT] = {"tls certificate", G, 0, k_tls_cert, 0},
    [RD_CK_TLS_KEY] = {"tls key", G, 0, k_tls_key, 0},
    [RD_CK_TLS_CLIENT_CA] = {"tls client ca", G, 0, k_tls_client_ca, 0},
    [RD_CK_HOST_KEY] = {"host key", G, 0, k_host_key, 0},
    [RD_CK_USER] = {"user", G, 0, k_user, 0},
    [RD_CK_GROUP] = {"group", G, 0, k_group, 0},
    [RD_CK_THREADS] = {"threads", G, 0, k_threads, 0},
    [RD_CK_MAX_LANES] = {"max lanes", G, 0, k_max_lanes, 0},
    [RD_CK_TRANSFER_LOGGING] = {"transfer logging", G, 0, k_transfer_logging, 0},
    [RD_CK_LOG_FILE] = {"log file", G, 0, k_log_file, 0},
    [RD_CK_LOG_FORMAT] = {"log format", G, 0, k_log_format, 0},
    [RD_CK_METRICS_LISTEN] = {"metrics listen", G, 0, k_metrics_listen, 0},
    [RD_CK_METRICS_HOSTS_ALLOW] = {"metrics hosts allow", G, 0, k_metrics_hosts_allow, 0},
    [RD_CK_STATUS_SOCKET] = {"status socket", G, 0, k_status_socket, 1},
    [RD_CK_STATUS_GROUP] = {"status group", G, 0, k_status_group, 0},
    [RD_CK_PARTIAL_MAX_AGE] = {"partial max age", G, 0, k_partial_max_age, 0},
    [RD_CK_LINK_TABLE] = {"link table size", G, 0, k_link_table, 0},
    [RD_CK_MAX_RATE] = {"max rate", G, 0, k_max_rate, 0},
    [RD_CK_PATH] = {"path", M, 0, k_path, 0},
    [RD_CK_COMMENT] = {"comment", M, 0, k_comment, 1},
    [RD_CK_READ_ONLY] = {"read only", M, 0, k_read_only, 0},
    [RD_CK_WRITE_ONLY] = {"write only", M, 0, k_write_only, 0},
    [RD_CK_LIST] = {"list", M, 0, k_list, 0},
    [RD_CK_AUTH_USERS] = {"auth users", M, 0, k_auth_users, 0},
    [RD_CK_HOSTS_ALLOW] = {"hosts allow", M, 0, k_hosts_allow, 0},
    [RD_CK_HOSTS_DENY] = {"hosts deny", M, 0, k_hosts_deny, 0},
    [RD_CK_MOD_MAX_CONNS] = {"max connections", M, 0, k_mod_max_conns, 0},
    [RD_CK_UID] = {"uid", M, 0, k_uid, 0},
    [RD_CK_GID] = {"gid", M, 0, k_gid, 0},
    [RD_CK_AUTH] = {"auth", M, 0, k_auth, 0},
    [RD_CK_REQUIRE_ENCRYPTION] = {"require encryption", M, 0, k_require_encryption, 0},
    [RD_CK_CHECKSUM] = {"checksum choice", M, 0, k_checksum, 0},
    [RD_CK_REFUSE_CHECKSUM_NONE] = {"refuse checksum none", M, 0, k_refuse_checksum_none, 0},
    [RD_CK_MOD_TRANSFER_LOGGING] = {"transfer logging", M, 0, k_mod_transfer_logging, 0},
    [RD_CK_MOD_LOG_FILE] = {"log file", M, 0, k_mod_log_file, 0},
    [RD_CK_MOD_LOG_FORMAT] = {"log format", M, 0, k_mod_log_format, 0},
    [RD_CK_MOD_PARTIAL_MAX_AGE] = {"partial max age", M, 0, k_mod_partial_max_age, 0},
    [RD_CK_MOD_MAX_RATE] = {"max rate", M, 0, k_mod_max_rate, 0},
    [RD_CK_DELETE] = {"delete", M, 0, k_delete, 0},
};

/*
 * Old names still read, with a warning: "checksum" became "checksum
 * choice" when rdcp's --checksum became rsync's switch (compare contents)
 * and the chunk check moved to --checksum-choice, rsync's name.
 */
const struct rd_conf_oldkey rd_conf_oldkeys[] = {
    {"checksum", RD_CK_CHECKSUM},
    {NULL, 0},
};

const char *rd_conf_key_name(int key)
{
	return key >= 0 && key < RD_CK_COUNT ? rd_conf_keys[key].name : NULL;
}

int rd_conf_key_section(int key)
{
	return key >= 0 && key < RD_CK_COUNT ? rd_conf_keys[key].section : 0;
}
