// SPDX-License-Identifier: MIT
/* rd_access: every rule of rd_access.h, allowed and refused, with the words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lib/conf/rd_conf.h"
#include "lib/daemon/rd_access.h"

static const char conf_text[] = "[open]\n"
				"path = /tmp\n"
				"auth = none\n"
				"read only = yes\n"
				"[team]\n"
				"path = /tmp\n"
				"auth users = alice:rw, bob:ro, @root:ro, *:deny\n"
				"[ro]\n"
				"path = /tmp\n"
				"read only = yes\n"
				"[wo]\n"
				"path = /tmp\n"
				"write only = yes\n"
				"[lan]\n"
				"path = /tmp\n"
				"auth = none\n"
				"hosts allow = 10.0.0.0/8\n"
				"hosts deny = 10.9.0.0/16\n"
				"[enc]\n"
				"path = /tmp\n"
				"auth = none\n"
				"require encryption = yes\n"
				"[strict]\n"
				"path = /tmp\n"
				"auth = none\n"
				"refuse checksum none = yes\n"
				"[del]\n"
				"path = /tmp\n"
				"delete = yes\n"
				"auth users = alice:rw, bob:rw-delete, carol:ro, dave:rw+delete\n"
				"[keep]\n"
				"path = /tmp\n"
				"auth users = alice:rw, dave:rw+delete\n"
				"[anon]\n"
				"path = /tmp\n"
				"auth = none\n"
				"delete = yes\n";

static struct rd_conf *conf;

static int setup(void **state)
{
	conf = rd_conf_new(NULL, NULL);
	assert_non_null(conf);
	assert_int_equal(rd_conf_parse(conf, "t.conf", conf_text, strlen(conf_text)), 0);
	assert_int_equal(conf->nerrors, 0);
	return 0;
}

static int teardown(void **state)
{
	rd_conf_free(conf);
	return 0;
}

static void peer(struct rd_peer_id *p, enum rd_auth_kind auth, const char *user, const char *addr)
{
	memset(p, 0, sizeof(*p));
	p->auth = auth;
	snprintf(p->user, sizeof(p->user), "%s", user);
	snprintf(p->name, sizeof(p->name), "%s:4000", addr);
	assert_int_equal(rd_conf_addr_parse(&p->addr, addr), 0);
}

/* Check one decision: want 0 or -status, and (when refused) words in the message. */
static void expect(const char *mod, const struct rd_peer_id *p, int push, const char *digest,
		   int want, const char *words)
{
	const struct rd_conf_module *m = rd_conf_module_find(conf, mod);
	struct rd_err err;
	int r;

	assert_non_null(m);
	rd_err_clear(&err);
	r = rd_access_check(conf, m, p, push, digest, &err);
	if (r != want)
		fail_msg("%s %s %s: got %d (%s), want %d", mod, p->user, push ? "push" : "pull", r,
			 err.msg, want);
	if (words && !strstr(err.msg, words))
		fail_msg("%s: message '%s' lacks '%s'", mod, err.msg, words);
	if (want && !strstr(err.msg, mod))
		fail_msg("%s: message '%s' does not name the module", mod, err.msg);
}

static void test_anonymous(void **state)
{
	struct rd_peer_id p;

	peer(&p, RD_AUTH_ANON, "", "192.0.2.7");
	expect("open", &p, 0, "gmac", 0, NULL);
	expect("open", &p, 1, "gmac", -RD_EPERM, "read-only");
	expect("team", &p, 0, "gmac", -RD_EAUTH, "requires authentication");
	expect("ro", &p, 0, "gmac", -RD_EAUTH, "USER@HOST::ro");
}

static void test_auth_users(void **state)
{
	struct rd_peer_id p;

	peer(&p, RD_AUTH_USER, "alice", "192.0.2.7");
	expect("team", &p, 1, "gmac", 0, NULL);
	expect("team", &p, 0, "gmac", 0, NULL);
	peer(&p, RD_AUTH_USER, "bob", "192.0.2.7");
	expect("team", &p, 0, "gmac", 0, NULL);
	expect("team", &p, 1, "gmac", -RD_EPERM, "read-only for user bob");
	peer(&p, RD_AUTH_CERT, "carol", "192.0.2.7");
	expect("team", &p, 0, "gmac", -RD_EPERM, "user carol is not allowed (auth users denies");
	/* @root: the local user root is in the local group root. */
	peer(&p, RD_AUTH_USER, "root", "192.0.2.7");
	expect("team", &p, 0, "gmac", 0, NULL);
	expect("team", &p, 1, "gmac", -RD_EPERM, "read-only for user root");
}

static void test_read_write_only(void **state)
{
	struct rd_peer_id p;

	peer(&p, RD_AUTH_USER, "alice", "192.0.2.7");
	expect("ro", &p, 0, "gmac", 0, NULL);
	expect("ro", &p, 1, "gmac", -RD_EPERM, "read-only for user alice");
	expect("wo", &p, 1, "gmac", 0, NULL);
	expect("wo", &p, 0, "gmac", -RD_EPERM, "write-only");
}

static void test_hosts(void **state)
{
	struct rd_peer_id p;
	struct rd_conf_net a;

	peer(&p, RD_AUTH_ANON, "", "10.1.2.3");
	expect("lan", &p, 0, "gmac", 0, NULL);
	peer(&p, RD_AUTH_ANON, "", "10.9.1.1");
	expect("lan", &p, 0, "gmac", -RD_EPERM, "host 10.9.1.1:4000 is not allowed");
	peer(&p, RD_AUTH_ANON, "", "2001:db8::1");
	expect("lan", &p, 0, "gmac", -RD_EPERM, "not allowed");
	/* Other modules have no host lists: the address may go on to TLS. */
	assert_int_equal(rd_conf_addr_parse(&a, "10.9.1.1"), 0);
	assert_true(rd_access_host_any(conf, &a));
}

static void test_encryption_and_checksum(void **state)
{
	struct rd_peer_id p;

	peer(&p, RD_AUTH_ANON, "", "192.0.2.7");
	expect("enc", &p, 0, "gmac", -RD_EPERM, "--encrypt");
	expect("enc", &p, 0, "sha256", -RD_EPERM, "--encrypt");
	expect("enc", &p, 0, "aes-128-gcm", 0, NULL);
	expect("strict", &p, 1, "none", -RD_EPERM, "--checksum-choice none");
	expect("strict", &p, 1, "sha256", 0, NULL);
	expect("open", &p, 0, "none", 0, NULL);
}

/* delete: the module's, per user; never for read-only access. */
static void test_delete(void **state)
{
	struct rd_peer_id p;

	(void)state;
	peer(&p, RD_AUTH_USER, "alice", "10.1.2.3");
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "del"), &p), 1);
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "keep"), &p), 0);
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "team"), &p), 0);
	peer(&p, RD_AUTH_USER, "bob", "10.1.2.3");
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "del"), &p), 0);
	peer(&p, RD_AUTH_USER, "carol", "10.1.2.3");
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "del"), &p), 0);
	peer(&p, RD_AUTH_USER, "dave", "10.1.2.3");
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "del"), &p), 1);
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "keep"), &p), 1);
	peer(&p, RD_AUTH_ANON, "", "10.1.2.3");
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "anon"), &p), 1);
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "open"), &p), 0);
	assert_int_equal(rd_access_may_delete(conf, rd_conf_module_find(conf, "wo"), &p), 0);
}

static void test_only_lan(void **state)
{
	static const char lan[] = "[lan]\npath = /tmp\nauth = none\nhosts allow = 10.0.0.0/8\n";
	static const char sec[] = "[sec]\npath = /tmp\nauth users = alice\n";
	char text[sizeof(lan) + sizeof(sec)];
	struct rd_conf *c = rd_conf_new(NULL, NULL);
	struct rd_conf_net a;

	snprintf(text, sizeof(text), "%s%s", lan, sec);
	assert_int_equal(rd_conf_parse(c, "u.conf", text, strlen(text)), 0);
	assert_int_equal(rd_conf_addr_parse(&a, "192.168.1.1"), 0);
	/* [sec] has no host list: everyone may try to authenticate. */
	assert_true(rd_access_host_any(c, &a));
	assert_true(rd_access_anon_any(c));
	rd_conf_free(c);
	c = rd_conf_new(NULL, NULL);
	assert_int_equal(rd_conf_parse(c, "v.conf", lan, strlen(lan)), 0);
	assert_false(rd_access_host_any(c, &a));
	assert_int_equal(rd_conf_addr_parse(&a, "10.0.0.9"), 0);
	assert_true(rd_access_host_any(c, &a));
	rd_conf_free(c);
	c = rd_conf_new(NULL, NULL);
	assert_int_equal(rd_conf_parse(c, "w.conf", sec, strlen(sec)), 0);
	assert_false(rd_access_anon_any(c));
	rd_conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_anonymous),
	    cmocka_unit_test(test_auth_users),
	    cmocka_unit_test(test_read_write_only),
	    cmocka_unit_test(test_hosts),
	    cmocka_unit_test(test_encryption_and_checksum),
	    cmocka_unit_test(test_only_lan),
	    cmocka_unit_test(test_delete),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
