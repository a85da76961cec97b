// SPDX-License-Identifier: MIT
/*
 * Fuzz what lib/conf reads from files: rdcpd.conf (parse, whole-config
 * rules, support check, and the decisions on what was parsed), the
 * secrets file format, and a network written as text. Properties
 * (abort() on violation, so both libFuzzer and the corpus driver report
 * it):
 *  - no crash, no read outside the input, no leak (ASan);
 *  - every problem names the file and a line that exists, and its message
 *    is a printable sentence (no control characters but tab: a value
 *    quoted in a message could otherwise reach a terminal or a log);
 *  - a parse reports errors exactly when it returns non-zero;
 *  - what was accepted is within the bounds: counts, name rules,
 *    absolute paths, access values, prefixes;
 *  - the decisions are consistent: hosts_allowed gives a reason exactly
 *    when it refuses; user_access never returns "default"; a parsed
 *    network matches its own address.
 */
#include "tests/fuzz/fuzz_conf.h"

#include <stdlib.h>
#include <string.h>

#include "lib/conf/rd_conf.h"

#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

struct seen {
	const char *file;
	unsigned lines; /* lines in the input */
	unsigned problems;
};

static void on_problem(void *ctx, const char *file, unsigned line, int sev, const char *msg)
{
	struct seen *s = ctx;
	const unsigned char *p;

	CHECK(sev == RD_CONF_ERROR || sev == RD_CONF_WARNING);
	CHECK(msg && msg[0]);
	for (p = (const unsigned char *)msg; *p; p++)
		CHECK((*p >= 0x20 || *p == '\t') && *p != 0x7f);
	/* Problems of the file name it; whole-config ones may not have a line. */
	CHECK(file && !strcmp(file, s->file));
	CHECK(line <= s->lines);
	s->problems++;
}

static unsigned count_lines(const uint8_t *data, size_t size)
{
	unsigned n = 1;
	size_t i;

	for (i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

static int name_ok(const char *n)
{
	size_t len = strlen(n);

	return len && len < RD_CONF_MODNAME_MAX && !strchr(n, '/') && strcmp(n, ".") &&
	       strcmp(n, "..");
}

static void decisions(const struct rd_conf_module *m)
{
	static const char *const addrs[] = {"10.0.0.1", "::1", "::ffff:192.168.1.1", "fe80::1",
					    "0.0.0.0"};
	static const char *const groups[] = {"staff", "guest", "g"};
	static const char *const users[] = {"alice", "bob", "root", "x"};
	struct rd_conf_net a;
	const char *why;
	size_t i;
	int ok, acc;

	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		CHECK(rd_conf_addr_parse(&a, addrs[i]) == 0);
		why = "unset";
		ok = rd_conf_hosts_allowed(m, &a, &why);
		CHECK(ok == 0 || ok == 1);
		CHECK(ok == (why == NULL));
	}
	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		acc = rd_conf_user_access(m, users[i], groups, 3);
		CHECK(acc >= RD_ACCESS_NONE && acc <= RD_ACCESS_RW);
		CHECK(!m->nusers ? acc == RD_ACCESS_NONE : 1);
	}
	for (i = 0; i < (size_t)m->nallow; i++)
		CHECK(m->allow[i].prefix <= 128);
	for (i = 0; i < (size_t)m->ndeny; i++)
		CHECK(m->deny[i].prefix <= 128);
	for (i = 0; i < (size_t)m->nusers; i++)
		CHECK(m->users[i].access >= RD_ACCESS_DENY &&
		      m->users[i].access <= RD_ACCESS_DEFAULT);
	ok = rd_conf_module_writable(m);
	CHECK(ok == 0 || ok == 1);
	CHECK(!m->read_only ? ok : 1);
}

static void fuzz_config(const uint8_t *data, size_t size)
{
	struct seen s = {"fuzz.conf", count_lines(data, size), 0};
	struct rd_conf *c = rd_conf_new(on_problem, &s);
	unsigned after_parse;
	int ret, i;

	CHECK(c);
	ret = rd_conf_parse(c, "fuzz.conf", (const char *)data, size);
	CHECK(ret == 0 || ret == -RD_EUSAGE);
	CHECK((ret == 0) == (c->nerrors == 0));
	CHECK(c->nerrors + c->nwarnings == s.problems);
	CHECK(!c->nerrors || c->err.msg[0]);
	CHECK(c->nmods >= 0 && c->nmods <= RD_CONF_MODULES_MAX);
	CHECK(c->nlisten >= 0 && c->nlisten <= RD_CONF_LISTEN_MAX);
	CHECK(c->port <= 65535);
	for (i = 0; i < c->nmods; i++) {
		const struct rd_conf_module *m = c->mods[i];

		CHECK(name_ok(m->name));
		CHECK(!m->path[0] || m->path[0] == '/');
		CHECK(m->nusers >= 0 && m->nusers <= RD_CONF_USERS_MAX);
		CHECK(m->nallow >= 0 && m->nallow <= RD_CONF_HOSTS_MAX);
		CHECK(m->ndeny >= 0 && m->ndeny <= RD_CONF_HOSTS_MAX);
		CHECK(rd_conf_module_find(c, m->name) == m);
		decisions(m);
	}
	after_parse = c->nerrors;
	rd_conf_check(c, 0);
	rd_conf_check_support(c, 0);
	CHECK(c->nerrors >= after_parse);
	CHECK(c->nerrors + c->nwarnings == s.problems);
	rd_conf_free(c);
}

static void fuzz_secrets(const uint8_t *data, size_t size)
{
	struct seen s = {"fuzz.secrets", count_lines(data, size), 0};
	struct rd_conf *c = rd_conf_new(on_problem, &s);
	struct rd_secrets *sec = NULL;
	const uint8_t *secret;
	struct rd_err err;
	size_t len;
	int ret;

	CHECK(c);
	rd_err_clear(&err);
	ret = rd_secrets_parse(&sec, "fuzz.secrets", (const char *)data, size, c, &err);
	CHECK((ret == 0) == (sec != NULL));
	CHECK((ret == 0) == (s.problems == 0));
	if (!ret) {
		CHECK(rd_secrets_count(sec) >= 1 && rd_secrets_count(sec) <= RD_SECRETS_USERS_MAX);
		if (!rd_secrets_find(sec, "alice", &secret, &len))
			CHECK(len >= 1 && len <= RD_SECRET_MAX);
	} else {
		CHECK(err.msg[0]);
	}
	rd_secrets_free(sec);
	rd_conf_free(c);
}

static void fuzz_net(const uint8_t *data, size_t size)
{
	struct rd_conf_net n, a;
	const char *why = NULL;
	char text[160];
	size_t len = 0;
	int bit;

	while (len < size && len < sizeof(text) - 1 && data[len] != '\n' && data[len])
		len++;
	memcpy(text, data, len);
	text[len] = '\0';
	if (rd_conf_net_parse(&n, text, &why)) {
		CHECK(why != NULL);
		return;
	}
	CHECK(n.prefix <= 128);
	for (bit = n.prefix; bit < 128; bit++)
		CHECK(!(n.addr[bit / 8] & (1u << (7 - bit % 8))));
	a = n;
	a.prefix = 128;
	CHECK(rd_conf_net_match(&n, &a));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_config(data, size);
	fuzz_secrets(data, size);
	fuzz_net(data, size);
	return 0;
}
