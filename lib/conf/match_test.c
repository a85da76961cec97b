// SPDX-License-Identifier: MIT
/*
 * The decision helpers: addresses and networks, hosts allow / hosts deny,
 * auth users with rsync's first-match order, path nesting.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/conf/conf_testutil.h"
#include "lib/conf/rd_conf.h"

static struct rec rec;

static struct rd_conf *parse(const char *text)
{
	struct rd_conf *c;

	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_non_null(c);
	if (rd_conf_parse(c, "t.conf", text, strlen(text))) {
		rec_dump(&rec);
		fail_msg("config does not parse:\n%s", text);
	}
	return c;
}

static struct rd_conf_net addr(const char *s)
{
	struct rd_conf_net a;

	if (rd_conf_addr_parse(&a, s))
		fail_msg("'%s' does not parse as an address", s);
	return a;
}

static void test_addr_parse(void **state)
{
	static const char *const good[] = {
	    "10.0.0.1", "0.0.0.0",	 "255.255.255.255", "::",	 "::1", "[::1]",
	    "fe80::1",	"2001:db8::a:b", "::ffff:10.0.0.1", "[10.0.0.1]"};
	static const char *const bad[] = {
	    "",	    "10.1", "10.0.0.256", "1.2.3.4.5",	"fe80::1%eth0", "[::1",
	    "::1]", "[]",   "host",	  "10.0.0.1/8", " 10.0.0.1",	"1::2::3"};
	struct rd_conf_net a, b;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (rd_conf_addr_parse(&a, good[i]))
			fail_msg("'%s' should parse", good[i]);
		assert_int_equal(a.prefix, 128);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!rd_conf_addr_parse(&a, bad[i]))
			fail_msg("'%s' should not parse", bad[i]);
	}
	/* IPv4 is held IPv4-mapped: the two spellings are the same address */
	a = addr("10.0.0.1");
	b = addr("::ffff:10.0.0.1");
	assert_memory_equal(a.addr, b.addr, 16);
	b = addr("[10.0.0.1]");
	assert_memory_equal(a.addr, b.addr, 16);
}

static void test_addr_sockaddr(void **state)
{
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	struct sockaddr sa;
	struct rd_conf_net a, want;

	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	inet_pton(AF_INET, "192.168.1.7", &s4.sin_addr);
	assert_int_equal(rd_conf_addr_from_sockaddr(&a, (struct sockaddr *)&s4), 0);
	want = addr("192.168.1.7");
	assert_memory_equal(a.addr, want.addr, 16);
	assert_int_equal(a.prefix, 128);

	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:192.168.1.7", &s6.sin6_addr);
	assert_int_equal(rd_conf_addr_from_sockaddr(&a, (struct sockaddr *)&s6), 0);
	assert_memory_equal(a.addr, want.addr, 16);

	inet_pton(AF_INET6, "fe80::5", &s6.sin6_addr);
	assert_int_equal(rd_conf_addr_from_sockaddr(&a, (struct sockaddr *)&s6), 0);
	want = addr("fe80::5");
	assert_memory_equal(a.addr, want.addr, 16);

	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	assert_int_equal(rd_conf_addr_from_sockaddr(&a, &sa), -RD_EUSAGE);
}

static void test_net_parse(void **state)
{
	static const struct {
		const char *text;
		int prefix; /* -1: refused */
		const char *net;
	} cases[] = {
	    {"10.0.0.0/8", 104, "10.0.0.0"},
	    {"10.1.2.3/8", 104, "10.0.0.0"}, /* host bits masked */
	    {"10.1.2.3/32", 128, "10.1.2.3"},
	    {"0.0.0.0/0", 96, "0.0.0.0"},
	    {"10.1.2.3/255.255.0.0", 112, "10.1.0.0"},
	    {"10.1.2.3/0.0.0.0", 96, "0.0.0.0"},
	    {"fe80::1/10", 10, "fe80::"},
	    {"[fe80::1]/64", 64, "fe80::"},
	    {"2001:db8::/ffff:ffff::", 32, "2001:db8::"},
	    {"::/0", 0, "::"},
	    {"::ffff:10.0.0.0/104", 104, "10.0.0.0"},
	    {"10.0.0.1", 128, "10.0.0.1"},
	    {"10.0.0.0/33", -1, NULL},
	    {"fe80::/129", -1, NULL},
	    {"10.0.0.0/", -1, NULL},
	    {"10.0.0.0/-1", -1, NULL},
	    {"10.0.0.0/0008", -1, NULL},
	    {"10.0.0.0/8x", -1, NULL},
	    {"10.0.0.0/255.0.255.0", -1, NULL},
	    {"10.0.0.0/ffff::", -1, NULL},
	    {"fe80::/255.255.0.0", -1, NULL},
	    {"lab.example/24", -1, NULL},
	    {"*", -1, NULL},
	};
	struct rd_conf_net n, want;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		if (cases[i].prefix < 0) {
			if (rd_conf_net_parse(&n, cases[i].text, &why) != -RD_EUSAGE || !why)
				fail_msg("'%s' should be refused with a reason", cases[i].text);
			continue;
		}
		if (rd_conf_net_parse(&n, cases[i].text, &why))
			fail_msg("'%s' should parse: %s", cases[i].text, why);
		assert_int_equal(n.prefix, cases[i].prefix);
		want = addr(cases[i].net);
		assert_memory_equal(n.addr, want.addr, 16);
	}
}

static int net_matches(const char *net, const char *a)
{
	struct rd_conf_net n, x;
	const char *why;

	if (rd_conf_net_parse(&n, net, &why))
		fail_msg("'%s': %s", net, why);
	x = addr(a);
	return rd_conf_net_match(&n, &x);
}

static void test_net_match(void **state)
{
	assert_true(net_matches("10.0.0.0/8", "10.200.3.4"));
	assert_false(net_matches("10.0.0.0/8", "11.0.0.0"));
	assert_true(net_matches("10.0.0.0/8", "::ffff:10.9.9.9"));   /* mapped client */
	assert_true(net_matches("::ffff:10.0.0.0/104", "10.1.1.1")); /* mapped rule */
	assert_true(net_matches("192.168.1.128/25", "192.168.1.200"));
	assert_false(net_matches("192.168.1.128/25", "192.168.1.127"));
	assert_true(net_matches("192.168.1.5", "192.168.1.5"));
	assert_false(net_matches("192.168.1.5", "192.168.1.6"));
	assert_true(net_matches("0.0.0.0/0", "1.2.3.4"));
	assert_false(net_matches("0.0.0.0/0", "::1")); /* every IPv4, no IPv6 */
	assert_true(net_matches("::/0", "1.2.3.4"));   /* everything */
	assert_true(net_matches("::/0", "fe80::1"));
	assert_true(net_matches("fe80::/10", "febf::1"));
	assert_false(net_matches("fe80::/10", "fec0::1"));
	assert_true(net_matches("2001:db8::/33", "2001:db8:7fff::1"));
	assert_false(net_matches("2001:db8::/33", "2001:db8:8000::1"));
	assert_false(net_matches("::1", "::2"));
	assert_false(net_matches("10.0.0.1", "::a00:1")); /* IPv4-compatible is not IPv4 */
}

static int allowed(const struct rd_conf_module *m, const char *a, const char **why)
{
	struct rd_conf_net x = addr(a);

	return rd_conf_hosts_allowed(m, &x, why);
}

static void test_hosts_allowed(void **state)
{
	struct rd_conf *c = parse("[open]\npath = /o\n"
				  "[allow]\npath = /a\nhosts allow = 10.0.0.0/8, fe80::/10\n"
				  "[deny]\npath = /d\nhosts deny = 10.0.0.66 192.168.0.0/16\n"
				  "[both]\npath = /b\nhosts allow = 10.0.0.0/8\n"
				  "hosts deny = 10.0.0.66,10.0.1.0/24\n");
	const struct rd_conf_module *open = rd_conf_module_find(c, "open");
	const struct rd_conf_module *al = rd_conf_module_find(c, "allow");
	const struct rd_conf_module *de = rd_conf_module_find(c, "deny");
	const struct rd_conf_module *both = rd_conf_module_find(c, "both");
	const char *why;

	assert_true(allowed(open, "1.2.3.4", &why));
	assert_null(why);
	assert_true(allowed(open, "::1", &why));

	assert_true(allowed(al, "10.1.2.3", &why));
	assert_true(allowed(al, "::ffff:10.1.2.3", &why));
	assert_true(allowed(al, "fe80::7", &why));
	assert_false(allowed(al, "11.1.2.3", &why));
	assert_string_equal(why, "the address is not in the module's hosts allow");
	assert_false(allowed(al, "2001:db8::1", &why));

	assert_true(allowed(de, "10.0.0.65", &why));
	assert_false(allowed(de, "10.0.0.66", &why));
	assert_string_equal(why, "the address is in the module's hosts deny");
	assert_false(allowed(de, "::ffff:192.168.4.4", &why));
	assert_true(allowed(de, "fe80::1", &why));

	/* allow list given: must match; deny wins when both match */
	assert_true(allowed(both, "10.0.0.65", &why));
	assert_false(allowed(both, "10.0.0.66", &why));
	assert_string_equal(why, "the address is in the module's hosts deny");
	assert_false(allowed(both, "10.0.1.9", &why));
	assert_false(allowed(both, "172.16.0.1", &why)); /* in neither list: refused */
	assert_string_equal(why, "the address is not in the module's hosts allow");
	rd_conf_free(c);
}

static void test_user_access(void **state)
{
	/* rsync's own example (rsyncd.conf(5), "auth users") */
	struct rd_conf *c = parse("[ro]\npath = /ro\nread only = yes\n"
				  "auth users = joe:deny @guest:deny admin:rw @rsync:ro susan "
				  "joe sam\n"
				  "[rw]\npath = /rw\nauth users = alice:ro, bob, *:ro\n"
				  "[none]\npath = /n\n");
	const struct rd_conf_module *ro = rd_conf_module_find(c, "ro");
	const struct rd_conf_module *rw = rd_conf_module_find(c, "rw");
	const struct rd_conf_module *none = rd_conf_module_find(c, "none");
	const char *guest[] = {"users", "guest"};
	const char *rsync[] = {"rsync"};
	const char *nullgrp[] = {NULL, "rsync"};

	assert_int_equal(rd_conf_user_access(ro, "joe", NULL, 0), RD_ACCESS_DENY);
	assert_int_equal(rd_conf_user_access(ro, "joe", rsync, 1), RD_ACCESS_DENY);
	assert_int_equal(rd_conf_user_access(ro, "admin", NULL, 0), RD_ACCESS_RW);
	/* admin in group guest: the earlier @guest:deny wins */
	assert_int_equal(rd_conf_user_access(ro, "admin", guest, 2), RD_ACCESS_DENY);
	assert_int_equal(rd_conf_user_access(ro, "carol", rsync, 1), RD_ACCESS_RO);
	assert_int_equal(rd_conf_user_access(ro, "carol", nullgrp, 2), RD_ACCESS_RO);
	/* susan gets the module's setting: read only */
	assert_int_equal(rd_conf_user_access(ro, "susan", NULL, 0), RD_ACCESS_RO);
	assert_int_equal(rd_conf_user_access(ro, "susan", guest, 2), RD_ACCESS_DENY);
	assert_int_equal(rd_conf_user_access(ro, "nobody", NULL, 0), RD_ACCESS_NONE);
	assert_int_equal(rd_conf_user_access(ro, "Joe", NULL, 0), RD_ACCESS_NONE);

	assert_int_equal(rd_conf_user_access(rw, "alice", NULL, 0), RD_ACCESS_RO);
	assert_int_equal(rd_conf_user_access(rw, "bob", NULL, 0), RD_ACCESS_RW);
	assert_int_equal(rd_conf_user_access(rw, "anyone", NULL, 0), RD_ACCESS_RO);
	/* a group entry does not match a user of that name */
	assert_int_equal(rd_conf_user_access(ro, "guest", NULL, 0), RD_ACCESS_NONE);
	/* no auth users at all */
	assert_int_equal(rd_conf_user_access(none, "alice", NULL, 0), RD_ACCESS_NONE);

	/* a read-only module that grants someone rw is writable */
	assert_true(rd_conf_module_writable(ro));
	assert_true(rd_conf_module_writable(rw));
	assert_true(rd_conf_module_writable(none));
	rd_conf_free(c);
	c = parse("[m]\npath = /m\nread only = yes\nauth users = a:ro, b\n");
	assert_false(rd_conf_module_writable(c->mods[0]));
	rd_conf_free(c);
}

static void test_users_syntax(void **state)
{
	static const struct {
		const char *value, *msg;
	} bad[] = {
	    {":rw", "t.conf:2: auth users: ':rw': a name has 1 to 32 bytes"},
	    {"@:ro", "t.conf:2: auth users: '@:ro': a name has 1 to 32 bytes"},
	    {"a:",
	     "t.conf:2: auth users: 'a:': the access is rw, ro, deny, rw+delete or rw-delete"},
	    {"a:RWX",
	     "t.conf:2: auth users: 'a:RWX': the access is rw, ro, deny, rw+delete or rw-delete"},
	    {"a?", "t.conf:2: auth users: 'a?': the only pattern is a lone '*'"},
	    {"@st*ff", "t.conf:2: auth users: '@st*ff': the only pattern is a lone '*'"},
	    {"-x", "t.conf:2: auth users: '-x' is not a user or @group name"},
	    {"a/b", "t.conf:2: auth users: 'a/b' is not a user or @group name"},
	    {"abcdefghijabcdefghijabcdefghijabc",
	     "t.conf:2: auth users: 'abcdefghijabcdefghijabcdefghijabc': a name has 1 to 32 "
	     "bytes"},
	    {"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij",
	     "t.conf:2: auth users: 'abcdefghijabcdefghijabcdefghijabcdefghij...': a name has 1 "
	     "to 32 bytes"},
	};
	struct rd_conf *c;
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&rec, 0, sizeof(rec));
		c = rd_conf_new(rec_fn, &rec);
		snprintf(text, sizeof(text), "[m]\nauth users = %s\n", bad[i].value);
		assert_int_equal(rd_conf_parse(c, "t.conf", text, strlen(text)), -RD_EUSAGE);
		assert_reported(&rec, bad[i].msg);
		assert_int_equal(c->mods[0]->nusers, 0);
		rd_conf_free(c);
	}
	c = parse("[m]\nauth users = ,, a:DENY ,\t@g.x_y-z:Ro *\n");
	assert_int_equal(c->mods[0]->nusers, 3);
	assert_int_equal(c->mods[0]->users[0].access, RD_ACCESS_DENY);
	assert_string_equal(c->mods[0]->users[1].name, "g.x_y-z");
	assert_int_equal(c->mods[0]->users[2].access, RD_ACCESS_DEFAULT);
	rd_conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addr_parse),	  cmocka_unit_test(test_addr_sockaddr),
	    cmocka_unit_test(test_net_parse),	  cmocka_unit_test(test_net_match),
	    cmocka_unit_test(test_hosts_allowed), cmocka_unit_test(test_user_access),
	    cmocka_unit_test(test_users_syntax),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
