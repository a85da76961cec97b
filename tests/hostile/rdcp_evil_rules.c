// SPDX-License-Identifier: MIT
/*
 * rdcp_evil rules HOST PORT MODULE/PATH: a hostile pulling client's filter
 * rules (RULES after OPEN, protocol 11; lib/proto/rd_proto.h) against
 * rdcpd, one session per case: rules the server must not take (a merge
 * file that would read a file of the server's, an unknown rule, an
 * unsupported modifier), more rules than OPEN announced, another message
 * where the rules belong, and rules over RD_RULES_BYTES_MAX in all. Each
 * must end in an ERROR that says why (printed), never OPEN_OK. Exit 0
 * only if every case was refused so, 1 if one was accepted, 2 if a case
 * went wrong otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rd_err.h"
#include "lib/engine/rd_engine.h"
#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"
#include "tests/hostile/rdcp_evil.h"

#define RULES_TIMEOUT_MS 20000
#define BIG_RULE_LEN	 200

struct rcase {
	const char *name;
	const char *rules[3]; /* sent one per RULES message */
	unsigned announce;    /* OPEN's nrules */
	int other_first;      /* an END where the rules belong */
	int big;	      /* RD_RULES_MAX rules of BIG_RULE_LEN bytes */
	const char *want;     /* in the server's ERROR */
};

static const struct rcase cases[] = {
    {"merge-file", {". /etc/passwd"}, 1, 0, 0, "read by the client only"},
    {"merge-long", {"merge /etc/shadow"}, 1, 0, 0, "read by the client only"},
    {"unknown-rule", {"x foo"}, 1, 0, 0, "unknown rule"},
    {"abs-modifier", {"-/ /etc/*"}, 1, 0, 0, "not supported"},
    {"dir-merge-path", {": ../../etc/x"}, 1, 0, 0, "one name"},
    {"more-than-announced", {"- a", "- b"}, 1, 0, 0, "more than announced"},
    {"other-message-first", {"- a"}, 1, 1, 0, "another message came first"},
    {"over-bytes", {NULL}, RD_RULES_MAX, 0, 1, "bytes in all"},
};

/* One RULES message of kind FILTER holding rules[0..n). */
static int send_rules(struct rd_conn *c, const char *const *rules, unsigned n, struct rd_err *err)
{
	static uint8_t buf[RD_MSG_MAX];
	struct rd_msg m;
	size_t len = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		if (rd_rules_put(buf, sizeof(buf), &len, RD_RULES_FILTER, rules[i],
				 strlen(rules[i])))
			return rd_err_set(err, RD_EUSAGE, 0, "rule %u does not encode", i);
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_RULES;
	m.u.rules.kind = RD_RULES_FILTER;
	m.u.rules.n = (uint16_t)n;
	m.u.rules.raw = buf;
	m.u.rules.rawlen = len;
	return rd_engine_send_msg_wait(c, &m, err, RULES_TIMEOUT_MS);
}

/* RD_RULES_MAX rules of BIG_RULE_LEN bytes: over RD_RULES_BYTES_MAX. */
static int send_big(struct rd_conn *c, struct rd_err *err)
{
	static char rule[BIG_RULE_LEN + 1];
	const char *batch[64];
	unsigned sent = 0, i;

	memset(rule, 'a', BIG_RULE_LEN);
	memcpy(rule, "- ", 2);
	for (i = 0; i < 64; i++)
		batch[i] = rule;
	while (sent < RD_RULES_MAX) {
		/* the server may refuse before all went: a failed send is its answer */
		if (send_rules(c, batch, 64, err))
			return 0;
		sent += 64;
	}
	return 0;
}

/* The server's answer to this case: 0 refused as wanted, 1 accepted, 2 otherwise. */
static int answer(struct rd_conn *c, const struct rcase *rc)
{
	const uint8_t *buf;
	const char *why;
	struct rd_msg m;
	size_t len;
	int r, i;

	for (i = 0; i < RULES_TIMEOUT_MS / 100; i++) {
		while (rd_conn_recv(c, &buf, &len) == 1) {
			r = rd_msg_decode(buf, len, &m, &why);
			rd_conn_recv_done(c);
			if (r)
				continue;
			if (m.hdr.type == RD_MSG_OPEN_OK) {
				printf("rules %s: ACCEPTED (OPEN_OK)\n", rc->name);
				return 1;
			}
			if (m.hdr.type == RD_MSG_ERROR) {
				int hit = memmem(m.u.error.text.ptr, m.u.error.text.len, rc->want,
						 strlen(rc->want)) != NULL;

				printf("rules %s: refused: %.*s%s\n", rc->name,
				       (int)m.u.error.text.len, m.u.error.text.ptr,
				       hit ? "" : " (NOT the reason expected)");
				return hit ? 0 : 2;
			}
		}
		r = rd_conn_poll(c, 100);
		if (r < 0 && r != -RD_ETIMEOUT) {
			printf("rules %s: dropped without a reason: %s\n", rc->name,
			       rd_conn_err(c)->msg);
			return 2;
		}
	}
	printf("rules %s: no answer\n", rc->name);
	return 2;
}

static int one_case(const char *host, const char *port, const char *path, const struct rcase *rc)
{
	struct rd_conn *c = NULL;
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;
	struct rd_msg m;
	unsigned n = 0;
	int ret;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	memset(&err, 0, sizeof(err));
	req.ver_min = RD_PROTO_SELECT;
	req.ver_max = RD_PROTO_MAX;
	co.timeout_ms = RULES_TIMEOUT_MS;
	if (rd_conn_connect(&c, host, port, &co, &req, &rep, &err) || client_tls(&c, &err)) {
		printf("rules %s: no session: %s\n", rc->name, err.msg);
		rd_conn_close(c);
		return 2;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_OPEN;
	m.u.open.mode = RD_MODE_PULL;
	m.u.open.flags = RD_OF_RECURSIVE | RD_OF_SELECT;
	m.u.open.chunk_size = 4096;
	m.u.open.digest.ptr = "sha256";
	m.u.open.digest.len = 6;
	m.u.open.npaths = 1;
	m.u.open.paths[0].ptr = path;
	m.u.open.paths[0].len = (uint16_t)strlen(path);
	m.u.open.sel.modify_window = RD_WINDOW_NS;
	m.u.open.sel.max_size = RD_SIZE_NONE;
	m.u.open.sel.nrules = (uint16_t)rc->announce;
	ret = rd_engine_send_msg_wait(c, &m, &err, RULES_TIMEOUT_MS);
	if (!ret && rc->other_first) {
		memset(&m, 0, sizeof(m));
		m.hdr.type = RD_MSG_END;
		ret = rd_engine_send_msg_wait(c, &m, &err, RULES_TIMEOUT_MS);
	}
	while (!ret && !rc->big && n < 3 && rc->rules[n])
		n++;
	if (!ret && rc->big)
		ret = send_big(c, &err);
	else if (!ret)
		ret = send_rules(c, rc->rules, n, &err);
	if (ret) {
		printf("rules %s: not sent: %s\n", rc->name, err.msg);
		rd_conn_close(c);
		return 2;
	}
	ret = answer(c, rc);
	rd_conn_close(c);
	return ret;
}

int evil_rules(const char *host, const char *port, const char *path)
{
	int worst = 0;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		worst = worst_of(worst, one_case(host, port, path, &cases[i]));
	return worst;
}
