// SPDX-License-Identifier: MIT
/*
 * The config parser: every key, the value syntaxes, every error message
 * with its FILE:LINE, whole-config rules, the command-line merge, what
 * the daemon cannot enforce yet, the memory budget.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/conf/conf_testutil.h"
#include "lib/conf/rd_conf.h"

static struct rec rec;

/* Parse text as "t.conf"; the recorder is reset first. */
static struct rd_conf *parse(const char *text, int *ret)
{
	struct rd_conf *c;

	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_non_null(c);
	*ret = rd_conf_parse(c, "t.conf", text, strlen(text));
	return c;
}

/* The one problem text produces, exactly. */
static void one_error(const char *text, const char *want)
{
	struct rd_conf *c;
	int ret;

	c = parse(text, &ret);
	if (ret != -RD_EUSAGE || c->nerrors != 1 || !rec_has(&rec, want)) {
		rec_dump(&rec);
		fail_msg("for config:\n%s\nwanted exactly: %s", text, want);
	}
	rd_conf_free(c);
}

/* 'checksum' is the old name of 'checksum choice': read, with a warning. */
static void test_old_key_name(void **state)
{
	struct rd_conf *c;
	int ret;

	(void)state;
	c = parse("[m]\npath = /srv/m\nchecksum = SHA256\n", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(c->nerrors, 0);
	assert_string_equal(c->mods[0]->checksum, "sha256");
	assert_int_equal(c->mods[0]->set[RD_CK_CHECKSUM], 3);
	assert_reported(&rec, "W t.conf:3: 'checksum' is the old name of 'checksum choice'; it "
			      "still works, but rename it");
	rd_conf_free(c);
	/* both names: one key set twice */
	c = parse("[m]\npath = /srv/m\nchecksum = sha256\nchecksum choice = none\n", &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_true(rec_grep(&rec, "t.conf:4: duplicate key 'checksum choice' in [m]"));
	rd_conf_free(c);
	/* in the global section it is no global key */
	c = parse("checksum = sha256\n", &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_true(rec_grep(&rec, "'checksum choice' belongs in a [module] section"));
	rd_conf_free(c);
}

static void test_defaults(void **state)
{
	struct rd_conf *c;
	int ret;

	c = parse("", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(c->port, 18710);
	assert_int_equal(c->transport, RD_TRANSPORT_BOTH);
	assert_int_equal(c->max_conns, 16);
	assert_int_equal(c->max_conns_per_host, 4);
	assert_int_equal(c->max_conns_per_user, 0); /* no limit */
	assert_true(c->auth_timeout_s <= 10);
	assert_int_equal(c->idle_timeout_s, 30);
	assert_int_equal(c->log_level, RD_CONF_LOG_INFO);
	assert_string_equal(c->host_key, RD_CONF_HOST_KEY_DEFAULT);
	assert_int_equal(c->threads, 0);   /* rdcpd: the cores, at most 8 */
	assert_int_equal(c->max_lanes, 0); /* the transport's cap, 4 */
	assert_true(c->link_table == 32ull << 20);
	assert_int_equal(c->nlisten, 0);
	assert_int_equal(c->nmods, 0);
	assert_int_equal(c->nerrors, 0);
	rd_conf_free(c);
	rd_conf_free(NULL);
}

static const char every_key[] = "link table size = 8M\n" /* line 1: every key */
				"listen = 10.0.0.1\n"
				"listen = [fe80::1]\n"
				"port = 4000\n"
				"transport = both\n"
				"max connections = 40\n"
				"max connections per host = 3\n"
				"memory budget = 2G\n"
				"auth timeout = 5s\n"
				"idle timeout = 2m\n"
				"log level = debug\n"
				"secrets file = /etc/rdcp/secrets\n"
				"tls certificate = /etc/rdcp/cert.pem\n"
				"tls key = /etc/rdcp/key.pem\n"
				"tls client ca = /etc/rdcp/ca.pem\n"
				"user = rdcp\n"
				"group = 998\n"
				"threads = 12\n"
				"max lanes = 3\n"
				"transfer logging = yes\n"
				"log file = /var/log/rdcpd.log\n"
				"log format = %t %o %f %'l\n"
				"metrics listen = [::1]:9818\n"
				"metrics hosts allow = 10.1.0.0/16, ::1\n"
				"status socket = /run/x/s.sock\n"
				"status group = adm\n"
				"partial max age = 3d\n"
				"max connections per user = 6\n"
				"host key = /var/lib/rdcpd/key.pem\n"
				"max rate = 100M\n"
				"[data]\n"
				"\tpath = /srv/data\n"
				"\tcomment = the data # with a hash\n"
				"\tread only = no\n"
				"\twrite only = true\n"
				"\tlist = 0\n"
				"\tauth users = alice:rw, bob:ro @staff:ro,*:deny\n"
				"\thosts allow = 10.0.0.0/8, fe80::/10\n"
				"\thosts deny = 10.0.0.66\n"
				"\tmax connections = 2\n"
				"\tuid = nobody\n"
				"\tgid = 65534\n"
				"\tauth = required\n"
				"\trequire encryption = yes\n"
				"\tchecksum choice = SHA512\n"
				"\trefuse checksum none = 1\n"
				"\ttransfer logging = no\n"
				"\tlog file = /var/log/data.log\n"
				"\tlog format = %o %n\n"
				"\tpartial max age = 0\n"
				"\tmax rate = 30MB\n"
				"\tdelete = yes\n"
				"[pub]\n"
				"path = /srv/pub\n"
				"auth = none\n";

static void test_every_key(void **state)
{
	const struct rd_conf_module *m;
	struct rd_conf *c;
	int ret;

	c = parse(every_key, &ret);
	if (ret)
		rec_dump(&rec);
	assert_int_equal(ret, 0);
	assert_int_equal(c->nlisten, 2);
	assert_string_equal(c->listen[0], "10.0.0.1");
	assert_string_equal(c->listen[1], "fe80::1");
	assert_int_equal(c->port, 4000);
	assert_int_equal(c->transport, RD_TRANSPORT_BOTH);
	assert_int_equal(c->max_conns, 40);
	assert_int_equal(c->max_conns_per_host, 3);
	assert_int_equal(c->max_conns_per_user, 6);
	assert_true(c->memory_budget == 2ull << 30);
	assert_int_equal(c->auth_timeout_s, 5);
	assert_int_equal(c->idle_timeout_s, 120);
	assert_int_equal(c->log_level, RD_CONF_LOG_DEBUG);
	assert_string_equal(c->secrets_file, "/etc/rdcp/secrets");
	assert_string_equal(c->tls_cert, "/etc/rdcp/cert.pem");
	assert_string_equal(c->tls_key, "/etc/rdcp/key.pem");
	assert_string_equal(c->tls_client_ca, "/etc/rdcp/ca.pem");
	assert_string_equal(c->host_key, "/var/lib/rdcpd/key.pem");
	assert_string_equal(c->user, "rdcp");
	assert_string_equal(c->group, "998");
	assert_int_equal(c->threads, 12);
	assert_int_equal(c->max_lanes, 3);
	assert_int_equal(c->set[RD_CK_MAX_LANES], 19);
	assert_int_equal(c->transfer_logging, 1);
	assert_string_equal(c->log_file, "/var/log/rdcpd.log");
	assert_string_equal(c->log_format, "%t %o %f %'l");
	assert_string_equal(c->metrics_listen, "[::1]:9818");
	assert_int_equal(c->nmetrics_allow, 2);
	assert_string_equal(c->status_socket, "/run/x/s.sock");
	assert_string_equal(c->status_group, "adm");
	assert_int_equal(c->partial_max_age_s, 3 * 86400);
	assert_true(c->link_table == 8ull << 20);
	assert_int_equal(c->set[RD_CK_LINK_TABLE], 1);
	assert_int_equal(c->max_rate, 100ull << 20);
	assert_int_equal(c->set[RD_CK_PORT], 4);
	assert_int_equal(c->set[RD_CK_LISTEN], 3);
	assert_int_equal(c->nmods, 2);

	m = rd_conf_module_find(c, "data");
	assert_non_null(m);
	assert_int_equal(m->line, 31);
	assert_string_equal(m->path, "/srv/data");
	assert_string_equal(m->comment, "the data # with a hash");
	assert_int_equal(m->read_only, 0);
	assert_int_equal(m->write_only, 1);
	assert_int_equal(m->list, 0);
	assert_int_equal(m->nusers, 4);
	assert_string_equal(m->users[0].name, "alice");
	assert_int_equal(m->users[0].access, RD_ACCESS_RW);
	assert_int_equal(m->users[2].is_group, 1);
	assert_string_equal(m->users[2].name, "staff");
	assert_int_equal(m->users[3].is_all, 1);
	assert_int_equal(m->users[3].access, RD_ACCESS_DENY);
	assert_int_equal(m->nallow, 2);
	assert_int_equal(m->ndeny, 1);
	assert_int_equal(m->max_conns, 2);
	assert_string_equal(m->uid, "nobody");
	assert_string_equal(m->gid, "65534");
	assert_int_equal(m->auth_none, 0);
	assert_int_equal(m->require_encryption, 1);
	assert_string_equal(m->checksum, "sha512");
	assert_int_equal(m->refuse_checksum_none, 1);
	assert_int_equal(m->set[RD_CK_PATH], 32);
	assert_int_equal(m->transfer_logging, 0);
	assert_string_equal(m->log_file, "/var/log/data.log");
	assert_string_equal(m->log_format, "%o %n");
	assert_int_equal(m->partial_max_age_s, 0);
	assert_int_equal(m->max_rate, 30000000);
	assert_int_equal(m->delete_ok, 1);

	m = rd_conf_module_find(c, "pub");
	assert_non_null(m);
	assert_int_equal(m->auth_none, 1);
	assert_int_equal(m->list, 1);
	assert_string_equal(m->checksum, "gmac");
	/* a module starts from the global transfer log settings */
	assert_int_equal(m->transfer_logging, 1);
	assert_string_equal(m->log_format, "%t %o %f %'l");
	assert_string_equal(m->log_file, "");
	assert_int_equal(m->partial_max_age_s, 3 * 86400);
	/* max rate and delete are the module's own: no global default */
	assert_int_equal(m->max_rate, 0);
	assert_int_equal(m->delete_ok, 0);
	assert_null(rd_conf_module_find(c, "PUB"));
	rd_conf_free(c);
}

/* Transfer log, metrics, status, partials: defaults, values and refusals. */
static void test_ops_keys(void **state)
{
	struct sockaddr_storage ss;
	struct rd_conf_net a;
	struct rd_conf *c;
	socklen_t sl;
	int ret;

	c = parse("[m]\npath = /m\n", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(c->transfer_logging, 0);
	assert_string_equal(c->log_format, "%o %h [%a] %m (%u) %f %l");
	assert_string_equal(c->mods[0]->log_format, "%o %h [%a] %m (%u) %f %l");
	assert_int_equal(c->partial_max_age_s, 7 * 86400);
	assert_int_equal(c->mods[0]->partial_max_age_s, 7 * 86400);
	assert_string_equal(c->status_socket, "/run/rdcpd/status.sock");
	assert_string_equal(c->metrics_listen, "");
	/* no allow list: loopback only */
	assert_int_equal(rd_conf_addr_parse(&a, "127.0.0.1"), 0);
	assert_int_equal(rd_conf_metrics_allowed(c, &a), 1);
	assert_int_equal(rd_conf_addr_parse(&a, "::1"), 0);
	assert_int_equal(rd_conf_metrics_allowed(c, &a), 1);
	assert_int_equal(rd_conf_addr_parse(&a, "10.0.0.1"), 0);
	assert_int_equal(rd_conf_metrics_allowed(c, &a), 0);
	rd_conf_free(c);

	c = parse("metrics listen = 10.0.0.5:9818\nmetrics hosts allow = 10.9.0.0/16\n"
		  "status socket =\npartial max age = 12h\n",
		  &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(c->status_socket, "");
	assert_int_equal(c->partial_max_age_s, 12 * 3600);
	assert_int_equal(rd_conf_metrics_addr(c, &ss, &sl), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(rd_conf_addr_parse(&a, "10.9.3.4"), 0);
	assert_int_equal(rd_conf_metrics_allowed(c, &a), 1);
	assert_int_equal(rd_conf_addr_parse(&a, "127.0.0.1"), 0);
	assert_int_equal(rd_conf_metrics_allowed(c, &a), 0);
	rd_conf_free(c);

	one_error("log format = %o %q\n", "t.conf:1: log format: %q is not a log format escape");
	one_error("[m]\npath = /m\nlog format = %f %C\n",
		  "t.conf:3: log format: %C is not supported by rdcpd (it keeps no full-file "
		  "checksums or link targets for the log)");
	one_error("log format = 100%\n",
		  "t.conf:1: log format: a '%' at the end of the format names no escape");
	one_error("metrics listen = 9818\n", "t.conf:1: metrics listen: '9818' is not "
					     "ADDRESS:PORT (e.g. 127.0.0.1:9818, [::1]:9818)");
	one_error("metrics listen = ::1:9818\n",
		  "t.conf:1: metrics listen: '::1:9818': write an IPv6 address as [ADDRESS]:PORT");
	one_error("metrics listen = host:9818\n",
		  "t.conf:1: metrics listen: 'host' is not a numeric IPv4 or IPv6 address");
	one_error("metrics listen = 127.0.0.1:0\n",
		  "t.conf:1: metrics listen: 0 is out of range (1 to 65535)");
	one_error("status socket = run/s\n",
		  "t.conf:1: status socket: 'run/s' is not an absolute path");
	one_error("partial max age = 7w\n", "t.conf:1: partial max age: '7w' is not a duration "
					    "(seconds, or e.g. 30s, 2m, 7d)");
	one_error("[m]\npath = /m\ntransfer logging = maybe\n",
		  "t.conf:3: transfer logging: 'maybe' is not yes, no, true, false, 1 or 0");

	/* a non-loopback endpoint with nobody allowed: said, not refused */
	c = parse("metrics listen = 0.0.0.0:9818\n", &ret);
	assert_int_equal(ret, 0);
	rd_conf_check(c, 0);
	assert_int_equal(c->nerrors, 0);
	assert_true(rec_grep(&rec, "only loopback addresses may scrape"));
	rd_conf_free(c);
}

/* Every key of the table is set by the every_key sample (the fuzz seeds use it too). */
/* max rate (rsync's units) and delete (per module, per auth users entry). */
static void test_rate_delete(void **state)
{
	static const char *const staff[] = {"staff"};
	const struct rd_conf_module *m;
	struct rd_conf *c;
	char buf[128];
	int ret;

	c = parse("max rate = 20M\n[m]\npath = /m\nmax rate = 1536b\n[n]\npath = /n\n"
		  "max rate = 100\n",
		  &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(c->max_rate, 20u << 20);
	assert_int_equal(c->mods[0]->max_rate, 1536);
	assert_int_equal(c->mods[1]->max_rate, 100 * 1024); /* a bare number is KiB, as --bwlimit */
	/* the dump writes what the parser reads back */
	assert_int_equal(rd_conf_key_value(c, NULL, RD_CK_MAX_RATE, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "20M");
	assert_int_equal(rd_conf_key_value(c, c->mods[0], RD_CK_MOD_MAX_RATE, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1536b");
	assert_int_equal(rd_conf_key_value(c, c->mods[1], RD_CK_MOD_MAX_RATE, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "100K");
	assert_int_equal(rd_conf_key_value(c, c->mods[1], RD_CK_DELETE, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "no");
	rd_conf_free(c);
	c = parse("[m]\npath = /m\n", &ret);
	assert_int_equal(rd_conf_key_value(c, NULL, RD_CK_MAX_RATE, buf, sizeof(buf)), 0);
	assert_int_equal(rd_conf_key_value(c, c->mods[0], RD_CK_MOD_MAX_RATE, buf, sizeof(buf)), 0);
	rd_conf_free(c);
	one_error("max rate = 20X\n",
		  "t.conf:1: max rate: '20X' is not a rate (e.g. 30M, 500K, 0 for none)");
	one_error("max rate = 100b\n", "t.conf:1: max rate: '100b' is too small (at least 512 "
				       "bytes per second, or 0)");
	one_error("max rate = 2T\n",
		  "t.conf:1: max rate: '2T' is too large (at most 1T per second)");
	one_error("[m]\npath = /m\ndelete = perhaps\n",
		  "t.conf:3: delete: 'perhaps' is not yes, no, true, false, 1 or 0");
	one_error("[m]\npath = /m\nauth users = bob:ro+delete\n",
		  "t.conf:3: auth users: 'bob:ro+delete': only an rw entry may say +delete or "
		  "-delete");

	/* who may delete: the module's delete, an entry's +delete / -delete */
	c = parse("secrets file = /etc/rdcp/secrets\n[m]\npath = /m\ndelete = yes\n"
		  "auth users = eve:rw-delete, ann:rw+delete, bob:ro, @staff:rw, carl\n"
		  "[r]\npath = /r\nread only = yes\nauth users = ann:rw+delete, bob\n"
		  "[w]\npath = /w\n"
		  "[a]\npath = /a\ndelete = 1\n",
		  &ret);
	assert_int_equal(ret, 0);
	m = c->mods[0];
	assert_int_equal(rd_conf_user_deletes(m, "eve", NULL, 0), 0);
	assert_int_equal(rd_conf_user_deletes(m, "ann", NULL, 0), 1);
	assert_int_equal(rd_conf_user_deletes(m, "bob", NULL, 0), 0); /* ro */
	assert_int_equal(rd_conf_user_deletes(m, "dan", staff, 1), 1);
	assert_int_equal(rd_conf_user_deletes(m, "carl", NULL, 0), 1); /* the module's rw */
	assert_int_equal(rd_conf_user_deletes(m, "zed", NULL, 0), 0);  /* no entry */
	assert_int_equal(rd_conf_module_deletes(m), 1);
	assert_int_equal(rd_conf_key_value(c, m, RD_CK_AUTH_USERS, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "eve:rw-delete, ann:rw+delete, bob:ro, @staff:rw, carl");
	m = c->mods[1]; /* read only: only ann, by her entry */
	assert_int_equal(rd_conf_user_deletes(m, "ann", NULL, 0), 1);
	assert_int_equal(rd_conf_user_deletes(m, "bob", NULL, 0), 0);
	assert_int_equal(rd_conf_module_deletes(m), 1);
	m = c->mods[2]; /* the default: no */
	assert_int_equal(rd_conf_user_deletes(m, NULL, NULL, 0), 0);
	assert_int_equal(rd_conf_module_deletes(m), 0);
	m = c->mods[3];
	assert_int_equal(rd_conf_user_deletes(m, NULL, NULL, 0), 1);
	rd_conf_check(c, 0);
	if (c->nerrors)
		rec_dump(&rec);
	assert_int_equal(c->nerrors, 0);
	rd_conf_free(c);

	/* a write-only module never deletes; nor does one nobody may write */
	c = parse("[w]\npath = /w\nwrite only = yes\ndelete = yes\n", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_user_deletes(c->mods[0], NULL, NULL, 0), 0);
	assert_int_equal(rd_conf_module_deletes(c->mods[0]), 0);
	rd_conf_check(c, 0);
	assert_reported(&rec, "t.conf:4: module [w] is 'write only': it never deletes (its clients "
			      "cannot see what they would delete); remove 'delete = yes'");
	rd_conf_free(c);
	c = parse("[w]\npath = /w\nwrite only = yes\nauth users = ann:rw+delete\n", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_user_deletes(c->mods[0], "ann", NULL, 0), 0);
	rd_conf_check(c, 0);
	assert_true(rec_grep(&rec, "t.conf:4: module [w] is 'write only': it never deletes"));
	rd_conf_free(c);
	c = parse("[r]\npath = /r\nread only = yes\ndelete = yes\n", &ret);
	assert_int_equal(rd_conf_user_deletes(c->mods[0], NULL, NULL, 0), 0);
	rd_conf_check(c, 0);
	assert_reported(&rec, "t.conf:4: module [r] allows deleting but nobody may write to it "
			      "('read only' and no auth users entry with rw): a read-only module "
			      "never deletes");
	rd_conf_free(c);
}

static void test_every_key_covered(void **state)
{
	struct rd_conf *c;
	int ret, k, i, seen;

	c = parse(every_key, &ret);
	assert_int_equal(ret, 0);
	for (k = 0; k < RD_CK_COUNT; k++) {
		seen = rd_conf_key_section(k) == RD_CONF_GLOBAL && c->set[k];
		for (i = 0; i < c->nmods && !seen; i++)
			seen = rd_conf_key_section(k) == RD_CONF_MODULE && c->mods[i]->set[k];
		if (!seen)
			fail_msg("key '%s' is not in the every_key sample", rd_conf_key_name(k));
	}
	assert_null(rd_conf_key_name(RD_CK_COUNT));
	assert_null(rd_conf_key_name(-1));
	assert_int_equal(rd_conf_key_section(RD_CK_COUNT), 0);
	rd_conf_free(c);
}

static void test_lexical(void **state)
{
	static const char text[] = "; rsync comment\r\n"
				   "   # indented comment\n"
				   "\n"
				   "MAX  Connections=7\r\n"
				   "maxconnectionsperhost = 2\n"
				   "  [ spaced ]  \n"
				   "Path=/a b/c\n"
				   "READ ONLY = Yes\n"
				   "[last]\n"
				   "path = /z"; /* no final newline */
	struct rd_conf *c;
	int ret;

	c = parse(text, &ret);
	if (ret)
		rec_dump(&rec);
	assert_int_equal(ret, 0);
	assert_int_equal(c->max_conns, 7);
	assert_int_equal(c->max_conns_per_host, 2);
	assert_int_equal(c->nmods, 2);
	assert_string_equal(c->mods[0]->name, "spaced");
	assert_string_equal(c->mods[0]->path, "/a b/c");
	assert_int_equal(c->mods[0]->read_only, 1);
	assert_string_equal(c->mods[1]->path, "/z");
	assert_int_equal(c->mods[1]->set[RD_CK_PATH], 10);
	rd_conf_free(c);
}

static void test_values(void **state)
{
	static const struct {
		const char *text;
		int ok;
	} cases[] = {
	    {"[m]\nread only = TRUE\n", 1},
	    {"[m]\nread only = false\n", 1},
	    {"[m]\nread only = 1\n", 1},
	    {"[m]\nread only = on\n", 0},
	    {"memory budget = 1048576\n", 1},
	    {"memory budget = 1024K\n", 1},
	    {"memory budget = 512m\n", 1},
	    {"memory budget = 1T\n", 1},
	    {"memory budget = 16T\n", 1},
	    {"memory budget = 17T\n", 0},
	    {"memory budget = 1023K\n", 0},
	    {"memory budget = 4GB\n", 0},
	    {"memory budget = 4X\n", 0},
	    {"memory budget = G\n", 0},
	    {"memory budget = -1G\n", 0},
	    {"memory budget = 99999999999999999999999G\n", 0},
	    {"memory budget = 18014398509481984K\n", 0},
	    {"auth timeout = 300\n", 1},
	    {"auth timeout = 5m\n", 1},
	    {"auth timeout = 6m\n", 0},
	    {"auth timeout = 0\n", 0},
	    {"auth timeout = 1h\n", 0},
	    {"idle timeout = 24h\n", 1},
	    {"idle timeout = 25h\n", 0},
	    {"idle timeout = 10ms\n", 0},
	    {"idle timeout = 10d\n", 0},
	    {"port = 0\n", 1},
	    {"port = 65535\n", 1},
	    {"port = 65536\n", 0},
	    {"port = +5\n", 0},
	    {"port = 5 5\n", 0},
	    {"max connections = 4096\n", 1},
	    {"max connections = 4097\n", 0},
	    {"max connections = 0\n", 0},
	    {"[m]\nmax connections = 0\n", 1},
	    {"threads = 1\n", 1},
	    {"threads = 64\n", 1},
	    {"threads = 65\n", 0},
	    {"threads = 0\n", 0},
	    {"threads = -2\n", 0},
	    {"threads = 4x\n", 0},
	    {"[m]\nthreads = 4\n", 0},
	    {"max lanes = 1\n", 1},
	    {"max lanes = 8\n", 1},
	    {"max lanes = 9\n", 0},
	    {"max lanes = 0\n", 0},
	    {"maxlanes = 2\n", 1},
	    {"log level = WARN\n", 1},
	    {"log level = error\n", 1},
	    {"log level = loud\n", 0},
	    {"transport = RDMA\n", 1},
	    {"transport = tcp\n", 1},
	    {"transport = udp\n", 0},
	    {"user = -x\n", 0},
	    {"user = a b\n", 0},
	    {"user = abcdefghijabcdefghijabcdefghijab\n", 1},
	    {"user = abcdefghijabcdefghijabcdefghijabc\n", 0},
	    {"[m]\nchecksum choice = sha3-256\n", 1},
	    {"[m]\nchecksum choice = SHA2-512/256\n", 1},
	    {"[m]\nchecksum choice = md5;rm\n", 0},
	    {"[m]\nchecksum = sha256\n", 1}, /* the old name: a warning */
	    {"[m]\nauth = maybe\n", 0},
	    {"[m]\ncomment =\n", 1},
	    {"listen = 10.0.0.1%eth0\n", 0},
	    {"listen = fe80::1%eth0\n", 0},
	    {"listen = host.example\n", 0},
	};
	struct rd_conf *c;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = parse(cases[i].text, &ret);
		if ((ret == 0) != cases[i].ok) {
			rec_dump(&rec);
			fail_msg("'%s' should %s", cases[i].text, cases[i].ok ? "pass" : "fail");
		}
		rd_conf_free(c);
	}
}

static void test_error_messages(void **state)
{
	char big[RD_CONF_LINE_MAX + 64];

	one_error("prot = 1\n", "t.conf:1: unknown key 'prot'");
	one_error("\n\npath = /x\n",
		  "t.conf:3: 'path' belongs in a [module] section, not among the global keys");
	one_error("[m]\npath = /x\nport = 4\n",
		  "t.conf:3: 'port' is a global key: put it before the first module (line 1)");
	one_error("port = 1\nport = 2\n", "t.conf:2: duplicate key 'port' (first set on line 1)");
	one_error("[m]\npath = /x\npath = /y\n",
		  "t.conf:3: duplicate key 'path' in [m] (first set on line 2)");
	one_error("[m]\npath = /x\n[m]\npath = /y\n",
		  "t.conf:3: duplicate module [m] (first defined on line 1)");
	one_error("[..]\n", "t.conf:1: [..]: '.' and '..' are not module names");
	one_error("[.]\n", "t.conf:1: [.]: '.' and '..' are not module names");
	one_error("[a/b]\n", "t.conf:1: [a/b]: a module name cannot contain '/', '[' or ']'");
	one_error("[]\n", "t.conf:1: []: a module name cannot be empty");
	one_error("[a b]\n", "t.conf:1: [a b]: a module name is printable ASCII without blanks");
	one_error("[Global]\n", "t.conf:1: [Global]: 'global' is reserved: put global keys "
				"before the first module");
	one_error("[0123456789012345678901234567890123456789012345678901234567890123]\n",
		  "t.conf:1: [0123456789012345678901234567890123456789012345678901234567890123]: "
		  "a module name has at most 63 bytes");
	one_error("[m] x\n", "t.conf:1: a section line is '[name]' and nothing else");
	one_error("[m\n", "t.conf:1: a section line is '[name]' and nothing else");
	one_error("just words\n", "t.conf:1: expected 'key = value', '[module]' or a comment");
	one_error("port =\n", "t.conf:1: 'port' needs a value");
	one_error(" = 5\n", "t.conf:1: no key before '='");
	one_error("port = 1\x01\n", "t.conf:1: control character 0x01 in the line");
	one_error("port = 1\x7f\n", "t.conf:1: control character 0x7f in the line");
	one_error("[m]\nread only = maybe\n",
		  "t.conf:2: read only: 'maybe' is not yes, no, true, false, 1 or 0");
	one_error("[m]\nread only = no # writable\n",
		  "t.conf:2: read only: 'no # writable' is not yes, no, true, false, 1 or 0 (a "
		  "comment must be on a line of its own)");
	one_error("[m]\npath = srv\n", "t.conf:2: path: 'srv' is not an absolute path");
	one_error("secrets file = s\n", "t.conf:1: secrets file: 's' is not an absolute path");
	one_error("port = 99999\n", "t.conf:1: port: 99999 is out of range (0 to 65535)");
	one_error("port = x\n", "t.conf:1: port: 'x' is not a number");
	one_error("memory budget = 4GB\n",
		  "t.conf:1: memory budget: '4GB' is not a size (digits and K, M, G or T)");
	one_error("memory budget = 1K\n",
		  "t.conf:1: memory budget: 1K is out of range (1024K to 16384G)");
	one_error("auth timeout = 1h\n",
		  "t.conf:1: auth timeout: 1h is out of range (1 to 300 seconds)");
	one_error("auth timeout = soon\n", "t.conf:1: auth timeout: 'soon' is not a duration "
					   "(seconds, or e.g. 30s, 2m, 7d)");
	one_error("transport = udp\n", "t.conf:1: transport: 'udp' is not rdma, tcp or both");
	one_error("log level = loud\n",
		  "t.conf:1: log level: 'loud' is not error, warning, info or debug");
	one_error("listen = ::1\nlisten = [::1]\n", "t.conf:2: listen: ::1 is listed twice");
	one_error("listen = FE80::1\nlisten = fe80:0::1\n",
		  "t.conf:2: listen: fe80::1 is listed twice");
	one_error("listen = eth0\n",
		  "t.conf:1: listen: 'eth0' is not a numeric IPv4 or IPv6 address");
	one_error("user = -root\n",
		  "t.conf:1: user: '-root' is not a user or group name or number");
	one_error("[m]\nauth = maybe\n", "t.conf:2: auth: 'maybe' is not 'required' or 'none'");
	one_error("[m]\nchecksum choice = a b\n",
		  "t.conf:2: checksum choice: 'a b' is not a digest name (e.g. sha256)");
	one_error("[m]\nhosts allow = 10.0.0.0/8 lab.example\n",
		  "t.conf:2: hosts allow: 'lab.example': not a numeric IPv4 or IPv6 address (host "
		  "names are not supported)");
	one_error("[m]\nhosts deny = 10.0.0.0/33\n",
		  "t.conf:2: hosts deny: '10.0.0.0/33': an IPv4 prefix length is 0 to 32");
	one_error("[m]\nhosts deny = ,\n", "t.conf:2: hosts deny: an empty list");
	one_error(
	    "[m]\nauth users = alice:rx\n",
	    "t.conf:2: auth users: 'alice:rx': the access is rw, ro, deny, rw+delete or rw-delete");
	one_error("[m]\nauth users = al*\n",
		  "t.conf:2: auth users: 'al*': the only pattern is a lone '*'");
	memset(big, 0, sizeof(big));
	memcpy(big, "[m]\ncomment = ", 14);
	memset(big + 14, 'c', 256);
	one_error(big, "t.conf:2: comment: longer than 255 bytes");
	memset(big, 'x', sizeof(big));
	memcpy(big, "# ", 2);
	big[RD_CONF_LINE_MAX + 1] = '\n';
	big[RD_CONF_LINE_MAX + 2] = '\0';
	one_error(big, "t.conf:1: line longer than 4096 bytes");
}

static void test_nul_byte(void **state)
{
	static const char text[] = "port = 1\nlisten = ::1\0x\n";
	struct rd_conf *c;

	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_parse(c, "t.conf", text, sizeof(text) - 1), -RD_EUSAGE);
	assert_reported(&rec, "t.conf:2: NUL byte in the line");
	assert_int_equal(c->nerrors, 1);
	rd_conf_free(c);
}

/* Every problem is reported, in one run; the first lands in c->err. */
static void test_all_problems(void **state)
{
	static const char text[] = "prot = 1\n"
				   "port = 2\n"
				   "port = 3\n"
				   "[a]\n"
				   "path = rel\n"
				   "bogus = 1\n"
				   "[a]\n"
				   "read only = perhaps\n"
				   "[b]\n"
				   "path = /b\n";
	struct rd_conf *c;
	int ret;

	c = parse(text, &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_int_equal(c->nerrors, 6);
	assert_reported(&rec, "t.conf:1: unknown key 'prot'");
	assert_reported(&rec, "t.conf:3: duplicate key 'port' (first set on line 2)");
	assert_reported(&rec, "t.conf:5: path: 'rel' is not an absolute path");
	assert_reported(&rec, "t.conf:6: unknown key 'bogus'");
	assert_reported(&rec, "t.conf:7: duplicate module [a] (first defined on line 4)");
	/* keys of a refused section are still checked */
	assert_reported(&rec, "t.conf:8: read only: 'perhaps' is not yes, no, true, false, 1 or 0");
	assert_string_equal(c->err.msg, "t.conf:1: unknown key 'prot'");
	assert_int_equal(c->nmods, 2);
	assert_string_equal(c->mods[1]->path, "/b");
	rd_conf_free(c);
}

static void test_bounds(void **state)
{
	char *text, *p;
	struct rd_conf *c;
	int i, ret;

	/* too many modules */
	text = malloc((RD_CONF_MODULES_MAX + 2) * 32);
	assert_non_null(text);
	for (p = text, i = 0; i < RD_CONF_MODULES_MAX + 1; i++)
		p += sprintf(p, "[m%d]\npath = /m%d\n", i, i);
	c = parse(text, &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_int_equal(c->nmods, RD_CONF_MODULES_MAX);
	assert_int_equal(c->nerrors, 1);
	assert_true(rec_grep(&rec, ":513: [m256]: too many modules (at most 256)"));
	rd_conf_free(c);
	free(text);

	/* too many listen addresses */
	text = malloc((RD_CONF_LISTEN_MAX + 1) * 32);
	assert_non_null(text);
	for (p = text, i = 0; i < RD_CONF_LISTEN_MAX + 1; i++)
		p += sprintf(p, "listen = 10.0.0.%d\n", i);
	c = parse(text, &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_int_equal(c->nlisten, RD_CONF_LISTEN_MAX);
	assert_reported(&rec, "t.conf:17: listen: at most 16 addresses");
	rd_conf_free(c);
	free(text);

	/* too many hosts, too many users */
	text = malloc(16 + (RD_CONF_USERS_MAX + 1) * 16);
	assert_non_null(text);
	p = text + sprintf(text, "[m]\nhosts allow =");
	for (i = 0; i < RD_CONF_HOSTS_MAX + 1; i++)
		p += sprintf(p, " 10.0.%d.%d", i / 200, i % 200);
	sprintf(p, "\n");
	c = parse(text, &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_reported(&rec, "t.conf:2: hosts allow: 129 entries; at most 128");
	assert_int_equal(c->mods[0]->nallow, 0);
	rd_conf_free(c);
	p = text + sprintf(text, "[m]\nauth users =");
	for (i = 0; i < RD_CONF_USERS_MAX + 1; i++)
		p += sprintf(p, " u%d", i);
	sprintf(p, "\n");
	c = parse(text, &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_reported(&rec, "t.conf:2: auth users: 257 entries; at most 256");
	rd_conf_free(c);
	free(text);

	/* a buffer larger than a config file may be */
	text = calloc(1, RD_CONF_FILE_MAX + 2);
	assert_non_null(text);
	memset(text, '\n', RD_CONF_FILE_MAX + 1);
	c = parse(text, &ret);
	assert_int_equal(ret, -RD_EUSAGE);
	assert_reported(&rec, "t.conf:0: larger than 1048576 bytes");
	rd_conf_free(c);
	free(text);
}

static void test_rules(void **state)
{
	struct rd_conf *c;
	int ret;

	c = parse("tls key = /k\n"
		  "tls client ca = /ca\n"
		  "[nopath]\n"
		  "comment = x\n"
		  "[rowo]\n"
		  "path = /rowo\n"
		  "read only = yes\n"
		  "write only = yes\n"
		  "[anon]\n"
		  "path = /anon\n"
		  "auth = none\n"
		  "auth users = alice\n"
		  "[sum]\n"
		  "path = /sum\n"
		  "checksum choice = none\n"
		  "refuse checksum none = yes\n",
		  &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_check(c, 0), -RD_EUSAGE);
	assert_reported(&rec, "t.conf:1: 'tls key' without 'tls certificate'");
	assert_reported(&rec, "t.conf:2: 'tls client ca' needs 'tls certificate' and 'tls key'");
	assert_reported(&rec, "t.conf:3: module [nopath] has no 'path'");
	assert_reported(&rec, "t.conf:8: module [rowo] is both 'read only' and 'write only': "
			      "nothing could be copied");
	assert_reported(&rec, "t.conf:12: module [anon] has 'auth = none' (line 11) and 'auth "
			      "users': anonymous clients have no user name to check");
	assert_reported(&rec,
			"t.conf:15: module [sum] has 'checksum choice = none' and refuses checksum "
			"none");
	/* 'tls client ca' is there to check auth users against */
	assert_false(rec_grep(&rec, "needs a 'secrets file'"));
	assert_int_equal(c->nerrors, 6);
	rd_conf_free(c);

	c = parse("tls certificate = /c\n", &ret);
	assert_int_equal(rd_conf_check(c, 0), -RD_EUSAGE);
	assert_reported(&rec, "t.conf:1: 'tls certificate' without 'tls key'");
	rd_conf_free(c);

	/* the shipped layout: nothing at all is fine */
	c = parse("# nothing\n", &ret);
	assert_int_equal(rd_conf_check(c, 0), 0);
	assert_int_equal(rd_conf_check_support(c, RD_CONF_CAP_TCP), 0);
	assert_int_equal(c->nerrors + c->nwarnings, 0);
	rd_conf_free(c);
}

static void test_nesting(void **state)
{
	struct rd_conf *c;
	int ret;

	c = parse("[rw]\npath = /srv/data\n"
		  "[ro_in_rw]\npath = /srv/./data/x/../sub/\nread only = yes\n"
		  "[rw_in_ro]\npath = /srv/pub/incoming\n"
		  "[pub]\npath = /srv/pub\nread only = yes\n"
		  "[pub2]\npath = /srv/pub//\nread only = yes\n"
		  "[sibling]\npath = /srv/data2\nread only = yes\n"
		  "[granted]\npath = /srv/g\nread only = yes\nauth users = bob:rw\n"
		  "[in_granted]\npath = /srv/g/h\nread only = yes\n"
		  "[same]\npath = /srv/data\n",
		  &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_check(c, 0), -RD_EUSAGE);
	assert_reported(&rec, "t.conf:4: module [ro_in_rw] (/srv/./data/x/../sub/) lies inside "
			      "writable module [rw] (/srv/data): its files could be changed "
			      "through [rw]");
	assert_reported(&rec, "t.conf:22: module [in_granted] (/srv/g/h) lies inside writable "
			      "module [granted] (/srv/g): its files could be changed through "
			      "[granted]");
	assert_reported(&rec, "t.conf:25: module [same] (/srv/data) lies inside writable module "
			      "[rw] (/srv/data): its files could be changed through [rw]");
	assert_reported(&rec, "t.conf:4: module [ro_in_rw] (/srv/./data/x/../sub/) lies inside "
			      "writable module [same] (/srv/data): its files could be changed "
			      "through [same]");
	assert_reported(&rec, "t.conf:20: 'auth users' needs a 'secrets file' or a 'tls client "
			      "ca' to check users against");
	/* writable inside read-only, equal read-only ones, siblings: fine */
	assert_false(rec_grep(&rec, "[rw_in_ro] ("));
	assert_false(rec_grep(&rec, "[pub2] ("));
	assert_false(rec_grep(&rec, "[sibling] ("));
	assert_int_equal(c->nerrors, 5);
	rd_conf_free(c);

	c = parse("[root]\npath = /\n[any]\npath = /tmp\nread only = yes\n", &ret);
	assert_int_equal(rd_conf_check(c, 0), -RD_EUSAGE);
	assert_true(rec_grep(&rec, "module [any] (/tmp) lies inside writable module [root] (/)"));
	rd_conf_free(c);
}

static char tmpdir[64];

static void mkpath(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", tmpdir, rel);
}

/* Real paths: a symlink cannot hide a module inside a writable one. */
static void test_nesting_system(void **state)
{
	char rw[128], link[128], file[128], text[1024];
	struct rd_conf *c;
	int ret, fd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/conf_test.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	mkpath(rw, sizeof(rw), "rw");
	assert_int_equal(mkdir(rw, 0755), 0);
	mkpath(file, sizeof(file), "rw/sub");
	assert_int_equal(mkdir(file, 0755), 0);
	mkpath(link, sizeof(link), "link");
	assert_int_equal(symlink(file, link), 0);
	mkpath(file, sizeof(file), "file");
	fd = open(file, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(text, sizeof(text),
		 "[rw]\npath = %s\n"
		 "[hidden]\npath = %s\nread only = yes\n"
		 "[missing]\npath = %s/nope\n"
		 "[notdir]\npath = %s\n",
		 rw, link, tmpdir, file);
	c = parse(text, &ret);
	assert_int_equal(ret, 0);
	/* lexically the link is not inside rw ... */
	assert_int_equal(rd_conf_check(c, 0), 0);
	/* ... but its real path is */
	assert_int_equal(rd_conf_check(c, RD_CONF_CHECK_SYSTEM), -RD_EUSAGE);
	snprintf(text, sizeof(text),
		 "t.conf:4: module [hidden] (%s) lies inside writable module [rw] (%s): its files "
		 "could be changed through [rw]",
		 link, rw);
	assert_reported(&rec, text);
	snprintf(text, sizeof(text),
		 "t.conf:7: module [missing]: path %s/nope: No such file or directory", tmpdir);
	assert_reported(&rec, text);
	snprintf(text, sizeof(text), "t.conf:9: module [notdir]: path %s is not a directory", file);
	assert_reported(&rec, text);
	assert_int_equal(c->nerrors, 3);
	rd_conf_free(c);
	unlink(link);
	unlink(file);
	mkpath(file, sizeof(file), "rw/sub");
	rmdir(file);
	rmdir(rw);
	rmdir(tmpdir);
}

static void test_system_checks(void **state)
{
	struct rd_conf *c;
	char key[64], text[512];
	int ret, fd;

	snprintf(key, sizeof(key), "/tmp/conf_test_key.XXXXXX");
	fd = mkstemp(key);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(key, 0644), 0);
	snprintf(text, sizeof(text),
		 "user = no-such-user-rdcp\n"
		 "group = no-such-group-rdcp\n"
		 "tls certificate = /nonexistent/cert.pem\n"
		 "tls key = %s\n"
		 "[m]\n"
		 "path = /\n"
		 "read only = yes\n"
		 "uid = 4242\n"
		 "gid = root\n"
		 "checksum choice = nosuchdigest\n",
		 key);
	c = parse(text, &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_check(c, RD_CONF_CHECK_SYSTEM), -RD_EUSAGE);
	assert_reported(&rec, "t.conf:1: user: no user 'no-such-user-rdcp' on this system");
	assert_reported(&rec, "t.conf:2: group: no group 'no-such-group-rdcp' on this system");
	assert_reported(
	    &rec, "t.conf:3: tls certificate /nonexistent/cert.pem: No such file or directory");
	snprintf(text, sizeof(text),
		 "t.conf:4: tls key %s: readable by others (mode 0644); make it 0600", key);
	assert_reported(&rec, text);
	assert_true(rec_grep(&rec, "t.conf:10: module [m]: "));
	assert_true(rec_grep(&rec, "nosuchdigest"));
	/* module uid/gid with a global user: the daemon could not keep them */
	assert_true(rec_grep(&rec, "module [m] has uid/gid, which needs rdcpd to stay root"));
	/* a numeric uid needs no passwd entry; root exists */
	assert_int_equal(c->nerrors, 6);
	/* the memory budget default was derived */
	assert_true(c->memory_budget > 0);
	assert_true(c->memory_budget_from[0] != '\0');
	rd_conf_free(c);
	unlink(key);
}

/* 'user' drops root before binding: a privileged port cannot work. */
static void test_user_low_port(void **state)
{
	struct rd_conf *c;
	int ret;

	c = parse("user = root\nport = 873\n[m]\npath = /\n", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_check(c, 0), -RD_EUSAGE);
	assert_true(rec_grep(&rec, "t.conf:2: port 873 is below 1024, but with 'user'"));
	rd_conf_free(c);
	c = parse("user = root\nport = 1024\n[m]\npath = /\n", &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_check(c, 0), 0);
	rd_conf_free(c);
}

static void test_cli_merge(void **state)
{
	static const char *const mods[] = {"cli=/srv/cli,ro", "two=/srv/two", "del=/srv/del,delete"};
	static const char *const clash[] = {"file=/elsewhere"};
	static const char *const twice[] = {"x=/x", "x=/y"};
	static const char *const l6[] = {"[::1]", "10.0.0.7"};
	static const char *const lh[] = {"localhost", "fd00::2", "[fd00:0::2]"};
	static const char *const bad[] = {"noeq", "a/b=/x", "rel=x,ro", "..=/x", "e=,ro"};
	struct rd_conf_cli cli;
	struct rd_conf *c;
	int ret;

	c = parse("listen = 10.0.0.1\nlisten = 10.0.0.2\nport = 1\nmax connections = 5\n"
		  "idle timeout = 9\n[file]\npath = /srv/file\n",
		  &ret);
	assert_int_equal(ret, 0);
	memset(&cli, 0, sizeof(cli));
	cli.modules = mods;
	cli.nmodules = 3;
	cli.listen = l6;
	cli.nlisten = 2;
	cli.port = "2000";
	cli.max_conns = 3;
	cli.idle_timeout_s = 60;
	cli.verbose = 1;
	cli.no_auth = 1;
	assert_int_equal(rd_conf_apply_cli(c, &cli), 0);
	assert_int_equal(c->nmods, 4);
	assert_string_equal(c->mods[1]->name, "cli");
	assert_string_equal(c->mods[1]->path, "/srv/cli");
	assert_int_equal(c->mods[1]->read_only, 1);
	assert_int_equal(c->mods[1]->line, RD_CONF_FROM_CLI);
	assert_int_equal(c->mods[2]->read_only, 0);
	assert_false(rd_conf_module_deletes(c->mods[2]));
	/* ",delete": delete = yes (read-write) */
	assert_string_equal(c->mods[3]->path, "/srv/del");
	assert_int_equal(c->mods[3]->read_only, 0);
	assert_true(rd_conf_module_deletes(c->mods[3]));
	assert_int_equal(c->nlisten, 2); /* replaced, not added */
	assert_string_equal(c->listen[0], "::1");
	assert_string_equal(c->listen[1], "10.0.0.7");
	assert_int_equal(c->port, 2000);
	assert_int_equal(c->set[RD_CK_PORT], RD_CONF_FROM_CLI);
	assert_int_equal(c->max_conns, 3);
	assert_int_equal(c->idle_timeout_s, 60);
	assert_int_equal(c->log_level, RD_CONF_LOG_DEBUG);
	assert_int_equal(c->no_auth, 1);

	memset(&cli, 0, sizeof(cli));
	cli.modules = clash;
	cli.nmodules = 1;
	assert_int_equal(rd_conf_apply_cli(c, &cli), -RD_EUSAGE);
	assert_reported(&rec, "-:0: --module file: t.conf defines [file] on line 6; the command "
			      "line adds modules but cannot redefine one");
	rd_conf_free(c);

	c = parse("", &ret);
	memset(&cli, 0, sizeof(cli));
	cli.modules = twice;
	cli.nmodules = 2;
	cli.port = "65536";
	cli.listen = lh;
	cli.nlisten = 3;
	assert_int_equal(rd_conf_apply_cli(c, &cli), -RD_EUSAGE);
	assert_reported(&rec, "-:0: --module x is given twice");
	assert_reported(&rec, "-:0: --port '65536': give 0 to 65535");
	assert_reported(&rec, "-:0: --listen 'localhost': give a numeric IPv4 or IPv6 address");
	assert_reported(&rec, "-:0: --listen: fd00::2 is given twice");
	assert_int_equal(c->port, 18710);
	rd_conf_free(c);

	c = parse("", &ret);
	memset(&cli, 0, sizeof(cli));
	cli.modules = bad;
	cli.nmodules = 5;
	assert_int_equal(rd_conf_apply_cli(c, &cli), -RD_EUSAGE);
	assert_reported(&rec, "-:0: --module 'noeq': expected NAME=DIR[,ro]");
	assert_reported(&rec, "-:0: --module 'a/b=/x': a module name cannot contain '/', '[' or "
			      "']'");
	assert_reported(&rec, "-:0: --module rel: the directory must be an absolute path");
	assert_reported(&rec, "-:0: --module '..=/x': '.' and '..' are not module names");
	assert_reported(&rec, "-:0: --module e: the directory must be an absolute path");
	assert_int_equal(c->nmods, 0);
	rd_conf_free(c);

	/* command line only: nesting is judged across the command line too */
	c = parse("", &ret);
	memset(&cli, 0, sizeof(cli));
	cli.modules = (const char *const[]){"a=/srv/a", "b=/srv/a/b,ro"};
	cli.nmodules = 2;
	assert_int_equal(rd_conf_apply_cli(c, &cli), 0);
	assert_int_equal(rd_conf_check(c, 0), -RD_EUSAGE);
	assert_reported(&rec, "-:0: module [b] (/srv/a/b) lies inside writable module [a] "
			      "(/srv/a): its files could be changed through [a]");
	rd_conf_free(c);
}

static void test_support(void **state)
{
	struct rd_conf *c;
	int ret;

	c = parse(every_key, &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(rd_conf_check_support(c, 0), -RD_EUSAGE);
	assert_reported(&rec, "t.conf:5: transport: this version of rdcpd serves RDMA only");
	assert_reported(&rec,
			"t.conf:3: listen: this version of rdcpd listens on one address, not 2");
	assert_reported(&rec, "t.conf:16: 'user' is not enforced by this version of rdcpd yet: it "
			      "would be ignored, so the daemon refuses to start with it");
	assert_true(rec_has(&rec, "t.conf:17: 'group' is not enforced by this version of rdcpd "
				  "yet: it would be ignored, so the daemon refuses to start with "
				  "it"));
	assert_reported(&rec, "t.conf:31: module [data] requires authentication, which this "
			      "version of rdcpd does not implement yet: add 'auth = none' to serve "
			      "it to anyone who can reach the port, or start rdcpd with --no-auth");
	assert_true(rec_grep(&rec, "t.conf:37: 'auth users' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:38: 'hosts allow' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:39: 'hosts deny' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:35: 'write only' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:41: 'uid' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:42: 'gid' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:44: 'require encryption' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "t.conf:46: 'refuse checksum none' in [data] is not enforced"));
	assert_int_equal(c->nerrors, 13);
	/* tuning only: warnings */
	assert_reported(&rec, "W t.conf:7: 'max connections per host' is not enforced by this "
			      "version of rdcpd yet");
	assert_reported(&rec, "W t.conf:45: 'checksum choice' in [data] is not enforced by this "
			      "version "
			      "of rdcpd yet");
	assert_true(rec_has(&rec, "W t.conf:40: 'max connections' in [data] is not enforced by "
				  "this version of rdcpd yet"));
	/* list is enforced by whoever lists (rdcpd's module listing): never warned */
	assert_false(rec_grep(&rec, "'list'"));
	assert_true(rec_grep(&rec, "W t.conf:9: 'auth timeout'"));
	assert_true(rec_grep(&rec, "W t.conf:12: 'secrets file'"));
	assert_true(rec_grep(&rec, "W t.conf:13: 'tls certificate'"));
	assert_true(rec_grep(&rec, "W t.conf:14: 'tls key'"));
	assert_true(rec_grep(&rec, "W t.conf:15: 'tls client ca'"));
	assert_true(rec_grep(&rec, "W t.conf:18: 'threads'"));
	assert_true(rec_grep(&rec, "W t.conf:19: 'max lanes'"));
	assert_true(rec_grep(&rec, "W t.conf:20: 'transfer logging' is not enforced"));
	assert_true(rec_grep(&rec, "W t.conf:23: 'metrics listen' is not enforced"));
	assert_true(rec_grep(&rec, "W t.conf:27: 'partial max age' is not enforced"));
	assert_true(rec_grep(&rec, "W t.conf:49: 'log format' in [data] is not enforced"));
	assert_true(rec_grep(&rec, "W t.conf:28: 'max connections per user' is not enforced"));
	assert_true(rec_grep(&rec, "W t.conf:29: 'host key'"));
	assert_true(rec_grep(&rec, "W t.conf:1: 'link table size'"));
	assert_true(rec_has(&rec, "W t.conf:30: 'max rate' is not enforced by this version of "
				  "rdcpd yet"));
	assert_true(rec_has(&rec, "W t.conf:51: 'max rate' in [data] is not enforced by this "
				  "version of rdcpd yet"));
	assert_true(rec_has(&rec, "W t.conf:52: 'delete' in [data] is not enforced by this "
				  "version of rdcpd yet"));
	assert_int_equal(c->nwarnings, 28);
	/* [pub] has auth = none: nothing about it */
	assert_false(rec_grep(&rec, "[pub]"));
	rd_conf_free(c);

	/* a daemon that enforces everything has nothing to say */
	c = parse(every_key, &ret);
	assert_int_equal(rd_conf_check_support(c, ~0u), 0);
	assert_int_equal(c->nerrors + c->nwarnings, 0);
	rd_conf_free(c);

	/* --no-auth serves every module without authentication */
	c = parse("[m]\npath = /m\n", &ret);
	c->no_auth = 1;
	assert_int_equal(rd_conf_check_support(c, RD_CONF_CAP_TCP), 0);
	rd_conf_free(c);

	/* a --module without --no-auth gets the command-line hint */
	c = parse("", &ret);
	{
		struct rd_conf_cli cli = {.modules = (const char *const[]){"m=/m"}, .nmodules = 1};

		assert_int_equal(rd_conf_apply_cli(c, &cli), 0);
	}
	assert_int_equal(rd_conf_check_support(c, 0), -RD_EUSAGE);
	assert_reported(&rec, "-:0: module [m] requires authentication, which this version of "
			      "rdcpd does not implement yet: pass --no-auth to serve it to anyone "
			      "who can reach the port");
	rd_conf_free(c);
}

static void test_budget(void **state)
{
	struct rd_conf *c;
	int ret;

	c = parse("memory budget = 1G\n", &ret);
	assert_int_equal(rd_conf_budget_conns(c, 64ull << 20), 16);
	c->max_conns = 100;
	assert_int_equal(rd_conf_budget_conns(c, 64ull << 20), 16);
	assert_int_equal(rd_conf_budget_conns(c, 1ull << 30), 1);
	assert_int_equal(c->nerrors, 0);
	assert_int_equal(rd_conf_budget_conns(c, 2ull << 30), 0);
	assert_reported(&rec, "t.conf:1: memory budget 1048576K cannot hold one connection's "
			      "buffers (2097152K)");
	rd_conf_free(c);

	/* a derived budget too small for one pool: a warning, one connection */
	c = parse("", &ret);
	c->memory_budget = 8u << 20;
	snprintf(c->memory_budget_from, sizeof(c->memory_budget_from), "ulimit -l");
	assert_int_equal(rd_conf_budget_conns(c, 64ull << 20), 1);
	assert_int_equal(c->nerrors, 0);
	assert_int_equal(c->nwarnings, 1);
	assert_true(rec_grep(&rec, "W -:0: ulimit -l (8192K) cannot hold one connection's "
				   "buffers (65536K)"));
	rd_conf_free(c);
}

/* Issue 7 item 5: the open files max connections need, against RLIMIT_NOFILE. */
static void test_fd_budget(void **state)
{
	struct rd_conf *c;
	uint64_t need;
	int ret;

	(void)state;
	c = parse("max connections = 32\n", &ret);
	/* the soft limit holds them */
	assert_int_equal(rd_conf_fd_budget(c, 16, 200, 4096, 4096, &need), 0);
	assert_int_equal(need, 16 * 200 + RD_CONF_FDS_RESERVE);
	/* only the hard one: raise the soft limit to need */
	assert_int_equal(rd_conf_fd_budget(c, 16, 200, 1024, 4096, &need), 1);
	assert_int_equal(need, 16 * 200 + RD_CONF_FDS_RESERVE);
	assert_int_equal(rd_conf_fd_budget(c, 32, 200, 1024, UINT64_MAX, &need), 1);
	assert_int_equal(c->nerrors, 0);
	/* not even the hard one: an error naming the numbers and what fits */
	assert_int_equal(rd_conf_fd_budget(c, 32, 200, 1024, 4096, &need), -RD_EUSAGE);
	assert_int_equal(c->nerrors, 1);
	assert_reported(&rec, "t.conf:1: 32 connections need about 6528 open files (200 each, 128 "
			      "for the daemon), but the open-file limit is 4096 (ulimit -Hn; "
			      "LimitNOFILE= under systemd): lower 'max connections' to 19 or "
			      "raise the limit");
	rd_conf_free(c);
}

/* --threads and --max-lanes override the file's threads and max lanes. */
static void test_cli_threads_lanes(void **state)
{
	struct rd_conf_cli cli;
	struct rd_conf *c;
	int ret;

	(void)state;
	c = parse("threads = 3\nmax lanes = 2\n", &ret);
	assert_int_equal(ret, 0);
	memset(&cli, 0, sizeof(cli));
	assert_int_equal(rd_conf_apply_cli(c, &cli), 0); /* 0: keep the file's */
	assert_int_equal(c->threads, 3);
	assert_int_equal(c->max_lanes, 2);
	assert_int_equal(c->set[RD_CK_THREADS], 1);
	cli.threads = 5;
	cli.max_lanes = 1;
	assert_int_equal(rd_conf_apply_cli(c, &cli), 0);
	assert_int_equal(c->threads, 5);
	assert_int_equal(c->max_lanes, 1);
	assert_int_equal(c->set[RD_CK_THREADS], RD_CONF_FROM_CLI);
	assert_int_equal(c->set[RD_CK_MAX_LANES], RD_CONF_FROM_CLI);
	/* tuning keys: a daemon without RD_CONF_CAP_LIMITS warns, one with it does not */
	assert_int_equal(rd_conf_check_support(c, ~0u), 0);
	assert_int_equal(c->nwarnings, 0);
	assert_int_equal(rd_conf_check_support(c, ~0u & ~RD_CONF_CAP_LIMITS), 0);
	assert_int_equal(c->nwarnings, 2);
	rd_conf_free(c);
	one_error("threads = 100\n", "t.conf:1: threads: 100 is out of range (1 to 64)");
	one_error("max lanes = 9\n", "t.conf:1: max lanes: 9 is out of range (1 to 8)");
}

/* --max-conns-per-host overrides the file's max connections per host. */
static void test_cli_per_host(void **state)
{
	struct rd_conf_cli cli;
	struct rd_conf *c;
	int ret;

	(void)state;
	c = parse("max connections per host = 3\n", &ret);
	assert_int_equal(c->max_conns_per_host, 3);
	memset(&cli, 0, sizeof(cli));
	cli.max_conns_per_host = 9;
	assert_int_equal(rd_conf_apply_cli(c, &cli), 0);
	assert_int_equal(c->max_conns_per_host, 9);
	assert_int_equal(c->set[RD_CK_MAX_CONNS_PER_HOST], RD_CONF_FROM_CLI);
	/* enforced by a daemon with RD_CONF_CAP_LIMITS (rdcpd): no warning */
	assert_int_equal(rd_conf_check_support(c, ~0u), 0);
	assert_int_equal(c->nwarnings, 0);
	assert_int_equal(rd_conf_check_support(c, ~0u & ~RD_CONF_CAP_LIMITS), 0);
	assert_int_equal(c->nwarnings, 1);
	rd_conf_free(c);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_load(void **state)
{
	char path[64], want[256];
	struct rd_conf *c;
	char *big;

	snprintf(path, sizeof(path), "/tmp/conf_test_load.XXXXXX");
	close(mkstemp(path));
	write_file(path, "port = 7\n[m]\npath = /m\nbogus = 1\n", 0644);
	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_load(c, path), -RD_EUSAGE);
	assert_int_equal(c->port, 7);
	assert_string_equal(c->file, path);
	snprintf(want, sizeof(want), "%s:4: unknown key 'bogus'", path);
	assert_reported(&rec, want);
	assert_string_equal(c->err.msg, want);
	rd_conf_free(c);

	/* writable by everyone: refused before reading */
	assert_int_equal(chmod(path, 0646), 0);
	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_load(c, path), -RD_EUSAGE);
	snprintf(want, sizeof(want),
		 "%s:0: writable by every user (mode 0646): anyone could reconfigure the daemon",
		 path);
	assert_reported(&rec, want);
	rd_conf_free(c);

	/* too large */
	big = malloc(RD_CONF_FILE_MAX + 2);
	assert_non_null(big);
	memset(big, '#', RD_CONF_FILE_MAX + 1);
	big[RD_CONF_FILE_MAX + 1] = '\0';
	write_file(path, big, 0644);
	free(big);
	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_load(c, path), -RD_EUSAGE);
	snprintf(want, sizeof(want), "%s:0: larger than 1048576 bytes", path);
	assert_reported(&rec, want);
	rd_conf_free(c);
	unlink(path);

	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_load(c, path), -RD_ESYS);
	snprintf(want, sizeof(want), "%s:0: cannot open: No such file or directory", path);
	assert_reported(&rec, want);
	rd_conf_free(c);

	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_load(c, "/tmp"), -RD_EUSAGE);
	assert_reported(&rec, "/tmp:0: not a regular file");
	rd_conf_free(c);

	/* no callback: still counted, first one kept */
	c = rd_conf_new(NULL, NULL);
	assert_int_equal(rd_conf_parse(c, "x.conf", "a = b\nc = d\n", 12), -RD_EUSAGE);
	assert_int_equal(c->nerrors, 2);
	assert_string_equal(c->err.msg, "x.conf:1: unknown key 'a'");
	rd_conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_old_key_name),
	    cmocka_unit_test(test_every_key),
	    cmocka_unit_test(test_every_key_covered),
	    cmocka_unit_test(test_ops_keys),
	    cmocka_unit_test(test_rate_delete),
	    cmocka_unit_test(test_lexical),
	    cmocka_unit_test(test_values),
	    cmocka_unit_test(test_error_messages),
	    cmocka_unit_test(test_nul_byte),
	    cmocka_unit_test(test_all_problems),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_nesting),
	    cmocka_unit_test(test_nesting_system),
	    cmocka_unit_test(test_system_checks),
	    cmocka_unit_test(test_user_low_port),
	    cmocka_unit_test(test_cli_merge),
	    cmocka_unit_test(test_support),
	    cmocka_unit_test(test_budget),
	    cmocka_unit_test(test_fd_budget),
	    cmocka_unit_test(test_cli_per_host),
	    cmocka_unit_test(test_cli_threads_lanes),
	    cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
