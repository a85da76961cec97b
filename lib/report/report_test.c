// SPDX-License-Identifier: MIT
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/report/rd_report.h"

/* ---- a strict RFC 8259 validator (also checks UTF-8 and surrogates) ---- */

struct jp {
	const unsigned char *s;
	size_t n, i;
	int depth;
};

static void ws(struct jp *p)
{
	while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]) && p->s[p->i])
		p->i++;
}

static int lit(struct jp *p, const char *w)
{
	size_t k = strlen(w);

	if (p->n - p->i < k || memcmp(p->s + p->i, w, k))
		return 0;
	p->i += k;
	return 1;
}

static int hex4(struct jp *p, unsigned *v)
{
	unsigned i, c;

	*v = 0;
	if (p->n - p->i < 4)
		return 0;
	for (i = 0; i < 4; i++) {
		c = p->s[p->i++];
		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			*v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			*v |= c - 'A' + 10;
		else
			return 0;
	}
	return 1;
}

static int utf8_ok(struct jp *p)
{
	const unsigned char *s = p->s + p->i;
	size_t left = p->n - p->i, need, k;
	uint32_t c;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (need > left)
		return 0;
	for (k = 1; k < need; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[k] & 0x3f);
	}
	if ((need == 3 && c < 0x800) || (need == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	p->i += need;
	return 1;
}

static int jstring(struct jp *p)
{
	unsigned v, lo;

	if (!lit(p, "\""))
		return 0;
	while (p->i < p->n) {
		unsigned char c = p->s[p->i];

		if (c == '"') {
			p->i++;
			return 1;
		}
		if (c < 0x20)
			return 0;
		if (c >= 0x80) {
			if (!utf8_ok(p))
				return 0;
			continue;
		}
		p->i++;
		if (c != '\\')
			continue;
		if (p->i >= p->n)
			return 0;
		c = p->s[p->i++];
		if (strchr("\"\\/bfnrt", c) && c)
			continue;
		if (c != 'u' || !hex4(p, &v))
			return 0;
		if (v >= 0xdc00 && v <= 0xdfff)
			return 0; /* lone low surrogate */
		if (v >= 0xd800 && v <= 0xdbff) {
			if (!lit(p, "\\u") || !hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff)
				return 0;
		}
	}
	return 0;
}

static int digits(struct jp *p)
{
	size_t st = p->i;

	while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
		p->i++;
	return p->i > st;
}

static int jnumber(struct jp *p)
{
	lit(p, "-");
	if (lit(p, "0")) {
		;
	} else if (p->i < p->n && p->s[p->i] >= '1' && p->s[p->i] <= '9') {
		digits(p);
	} else {
		return 0;
	}
	if (lit(p, ".") && !digits(p))
		return 0;
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		if (!lit(p, "+"))
			lit(p, "-");
		if (!digits(p))
			return 0;
	}
	return 1;
}

static int jvalue(struct jp *p);

static int jcontainer(struct jp *p, char open, char close, int object)
{
	if (++p->depth > 64)
		return 0;
	p->i++; /* open */
	(void)open;
	ws(p);
	if (p->i < p->n && p->s[p->i] == (unsigned char)close) {
		p->i++;
		p->depth--;
		return 1;
	}
	for (;;) {
		ws(p);
		if (object) {
			if (!jstring(p))
				return 0;
			ws(p);
			if (!lit(p, ":"))
				return 0;
		}
		if (!jvalue(p))
			return 0;
		ws(p);
		if (lit(p, ","))
			continue;
		if (p->i < p->n && p->s[p->i] == (unsigned char)close) {
			p->i++;
			p->depth--;
			return 1;
		}
		return 0;
	}
}

static int jvalue(struct jp *p)
{
	ws(p);
	if (p->i >= p->n)
		return 0;
	switch (p->s[p->i]) {
	case '{':
		return jcontainer(p, '{', '}', 1);
	case '[':
		return jcontainer(p, '[', ']', 0);
	case '"':
		return jstring(p);
	case 't':
		return lit(p, "true");
	case 'f':
		return lit(p, "false");
	case 'n':
		return lit(p, "null");
	default:
		return jnumber(p);
	}
}

static int json_valid(const char *s, size_t n)
{
	struct jp p = {(const unsigned char *)s, n, 0, 0};

	if (!jvalue(&p))
		return 0;
	ws(&p);
	return p.i == p.n;
}

static void test_validator_itself(void **state)
{
	static const char *const good[] = {
	    "{}",
	    "[]",
	    "{\"a\": [1, -0.5, 2e10, true, false, null, \"x\\u00e9\\ud83d\\ude00\"]}",
	    "\"caf\xc3\xa9\"",
	};
	static const char *const bad[] = {
	    "{",
	    "{\"a\" 1}",
	    "[1,]",
	    "01",
	    "1.",
	    "NaN",
	    "\"\x01\"",
	    "\"\xff\"",
	    "\"\\ud800\"",
	    "\"\\udc00\"",
	    "\"\xed\xa0\x80\"",
	    "\"\\x41\"",
	    "{} x",
	    "\"\xc0\xaf\"",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(json_valid(good[i], strlen(good[i])));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(json_valid(bad[i], strlen(bad[i])));
}

/* ---- helpers ---- */

struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

static void mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	assert_non_null(m->f);
}

static char *mem_close(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

static char *json_of(const struct rd_report *r, const struct rd_engine_stats *st, double sec,
		     const char *ck, int code, size_t *len)
{
	struct mem m;

	mem_open(&m);
	assert_int_equal(rd_report_json(m.f, r, st, sec, ck, code), 0);
	mem_close(&m);
	*len = m.len;
	assert_true(json_valid(m.buf, m.len));
	return m.buf;
}

static char *jstr(const char *s, size_t len, size_t *bad)
{
	struct mem m;
	size_t b;

	mem_open(&m);
	b = rd_report_json_string(m.f, s, len);
	mem_close(&m);
	if (bad)
		*bad = b;
	assert_true(json_valid(m.buf, m.len));
	return m.buf;
}

/* ---- the tests ---- */

static void test_empty(void **state)
{
	struct rd_report r;
	size_t n;
	char *j;

	rd_report_init(&r, 10);
	j = json_of(&r, NULL, -1, NULL, 0, &n);
	assert_string_equal(
	    j,
	    "{\"files\": 0, \"dirs\": 0, \"symlinks\": 0, \"hardlinks\": 0, \"devices\": 0, "
	    "\"specials\": 0, \"entries\": 0, \"created\": 0, \"transferred\": 0, "
	    "\"failed\": 0, \"identical\": 0, \"deleted\": 0, \"bytes\": 0, "
	    "\"bytes_moved\": 0, \"bytes_resumed\": 0, \"bytes_sent\": 0, \"bytes_received\": 0, "
	    "\"seconds\": 0.000, \"rate_bytes_per_sec\": "
	    "0.0, \"checksum\": null, \"exit_status\": 0, \"errors\": [], "
	    "\"errors_omitted\": 0, \"notes\": [], \"notes_omitted\": 0}\n");
	free(j);
	j = json_of(NULL, NULL, NAN, "none", 1, &n);
	assert_non_null(strstr(j, "\"seconds\": 0.000,"));
	assert_non_null(strstr(j, "\"checksum\": \"none\""));
	free(j);
	/* what the run cost, once rdcp filled it in (issue 14) */
	r.cost.registered_peak = 4096;
	r.cost.registered_ctrl = 2162688;
	r.cost.rss_peak = 9437184;
	r.cost.startup_s = 0.4567;
	j = json_of(&r, NULL, 1, "gmac", 0, &n);
	assert_non_null(strstr(j, ", \"memory\": {\"registered_peak_bytes\": 2166784, "
				  "\"registered_data_peak_bytes\": 4096, "
				  "\"registered_control_bytes\": 2162688, "
				  "\"rss_peak_bytes\": 9437184}, \"startup_seconds\": 0.457, "
				  "\"exit_status\": 0,"));
	free(j);
	/* where the time went: null for what the other side did */
	r.phases.set = 1;
	r.phases.connect = 0.0012;
	r.phases.tls = 0.0034;
	r.phases.open = 0.0005;
	r.phases.data = 1.25;
	r.phases.walk = 0.125;
	r.phases.fsync = -1;
	r.phases.close = NAN;
	j = json_of(&r, NULL, 1, "gmac", 0, &n);
	assert_non_null(strstr(j, "\"startup_seconds\": 0.457, \"phases\": {\"connect\": 0.001200, "
				  "\"tls\": 0.003400, \"open\": 0.000500, \"data\": 1.250000, "
				  "\"walk\": 0.125000, \"fsync\": null, \"close\": 0.000000}, "
				  "\"exit_status\": 0,"));
	free(j);
	rd_report_free(&r);
	rd_report_free(NULL);
}

static void test_counters_and_errors(void **state)
{
	struct rd_engine_stats st;
	struct rd_report r;
	size_t n;
	char *j;

	memset(&st, 0, sizeof(st));
	st.files_ok = 10;
	st.files_failed = 2;
	st.files_same = 1;
	st.deleted = 6;
	st.bytes_files = 1048576;
	st.bytes_data = 3000;
	st.bytes_resumed = 512;
	rd_report_init(&r, 10);
	assert_int_equal(rd_report_error(&r, "a/b", 3, -RD_ESYS, "open a/b: Permission denied"), 0);
	assert_int_equal(rd_report_error(&r, "ok", 2, 0, NULL), 0); /* success: ignored */
	assert_int_equal(rd_report_error(&r, NULL, 0, RD_ECONN, NULL), 0);
	/* entries finished fine, each once, by type */
	{
		static const struct {
			uint8_t type;
			uint32_t mode;
			unsigned items;
			uint64_t size;
		} e[] = {
		    {RD_FT_DIR, S_IFDIR | 0755, RD_IT_NEW | RD_IT_LOCAL, 0},
		    {RD_FT_REG, S_IFREG | 0644, RD_IT_NEW | RD_IT_XFER, 1000},
		    {RD_FT_REG, S_IFREG | 0644, 0, 48576}, /* unchanged */
		    {RD_FT_REG, S_IFREG | 0644, RD_IT_XFER | RD_IT_TIME, 100},
		    {RD_FT_HLINK, S_IFREG | 0644, RD_IT_NEW | RD_IT_HLINK, 1000},
		    {RD_FT_SYMLINK, S_IFLNK | 0777, RD_IT_NEW | RD_IT_LOCAL, 0}, /* -> abc */
		    {RD_FT_SPECIAL, S_IFIFO | 0644, RD_IT_NEW | RD_IT_LOCAL, 0},
		    {RD_FT_SPECIAL, S_IFCHR | 0644, 0, 0},
		};
		struct rd_item it;
		unsigned k;

		for (k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
			memset(&it, 0, sizeof(it));
			it.type = e[k].type;
			it.mode = e[k].mode;
			it.items = e[k].items;
			it.size = e[k].size;
			it.target = "abc";
			it.tlen = e[k].type == RD_FT_SYMLINK ? 3 : 0;
			rd_report_item(&r, &it);
		}
		it.status = -RD_ESYS; /* a failure is no entry finished */
		rd_report_item(&r, &it);
	}
	r.counts.sent = 7;
	r.counts.received = 9;
	j = json_of(&r, &st, 2.0, "sha256", 23, &n);
	assert_int_equal(r.counts.total_size, 1000 + 48576 + 100 + 1000 + 3);
	assert_int_equal(r.counts.xferred_size, 1100);
	assert_int_equal(r.counts.first_status, -RD_ESYS);
	assert_string_equal(j, "{\"files\": 4, \"dirs\": 1, \"symlinks\": 1, \"hardlinks\": 1, "
			       "\"devices\": 1, \"specials\": 1, \"entries\": 8, \"created\": 5, "
			       "\"transferred\": 2, \"failed\": 1, \"identical\": 1, "
			       "\"deleted\": 6, \"bytes\": 1048576, "
			       "\"bytes_moved\": 3000, \"bytes_resumed\": 512, \"bytes_sent\": 7, "
			       "\"bytes_received\": 9, \"seconds\": 2.000, "
			       "\"rate_bytes_per_sec\": 1500.0, "
			       "\"checksum\": \"sha256\", \"exit_status\": 23, \"errors\": ["
			       "{\"path\": \"a/b\", \"status\": \"i/o\", \"message\": \"open a/b: "
			       "Permission denied\"}, "
			       "{\"path\": null, \"status\": \"connection\", \"message\": \"\"}], "
			       "\"errors_omitted\": 0, \"notes\": [], \"notes_omitted\": 0}\n");
	free(j);
	rd_report_free(&r);
}

static void test_string_escaping(void **state)
{
	/* every class: quote, backslash, controls, DEL, C1, U+2028, valid
	 * 2/3/4-byte UTF-8, stray byte, overlong, surrogate, truncated */
	static const char in[] = "\"\\\n\t\r\x01\x1b[2J\x7f\xc2\x9b\xe2\x80\xa8"
				 "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"
				 "\xff\xc0\xaf\xed\xa0\x80\xe4\xb8";
	size_t bad;
	char *j;

	j = jstr(in, sizeof(in) - 1, &bad);
	assert_string_equal(j, "\"\\\"\\\\\\n\\t\\r\\u0001\\u001b[2J\\u007f\\u009b\\u2028"
			       "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"
			       "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	assert_int_equal(bad, 8);
	free(j);

	/* an embedded NUL is data, not the end */
	j = jstr("a\0b", 3, &bad);
	assert_string_equal(j, "\"a\\u0000b\"");
	assert_int_equal(bad, 0);
	free(j);
	j = jstr("", 0, NULL);
	assert_string_equal(j, "\"\"");
	free(j);
}

static void test_path_hex_only_when_needed(void **state)
{
	struct rd_report r;
	size_t n;
	char *j;

	rd_report_init(&r, 4);
	rd_report_error(&r, "caf\xc3\xa9", 5, -RD_ENOENT, "gone");
	rd_report_error(&r, "x\xff/y", 4, -RD_EPERM, "bad \xfe msg");
	j = json_of(&r, NULL, 1, "sha256", 23, &n);
	assert_non_null(strstr(j, "{\"path\": \"caf\xc3\xa9\", \"status\""));
	assert_non_null(strstr(j, "{\"path\": \"x\\ufffd/y\", \"path_hex\": \"78ff2f79\", "));
	assert_non_null(strstr(j, "\"message\": \"bad \\ufffd msg\""));
	/* only for the path that needs it */
	assert_null(strstr(strstr(j, "path_hex") + 1, "path_hex"));
	free(j);
	rd_report_free(&r);
}

static void test_bounded_by_max_errors(void **state)
{
	struct rd_report r;
	char path[32], *j;
	size_t n;
	int i;

	rd_report_init(&r, 3);
	for (i = 0; i < 100000; i++) {
		snprintf(path, sizeof(path), "f%d", i);
		assert_int_equal(rd_report_error(&r, path, strlen(path), -RD_ESYS, "x"), 0);
	}
	assert_int_equal(r.nerrors, 3);
	assert_true(r.cap <= 3);
	assert_int_equal(r.omitted, 99997);
	j = json_of(&r, NULL, 1, "sha256", 23, &n);
	assert_non_null(strstr(j, "\"path\": \"f2\""));
	assert_null(strstr(j, "\"path\": \"f3\""));
	assert_non_null(strstr(j, "\"errors_omitted\": 99997, "));
	free(j);
	rd_report_free(&r);

	/* 0: count only */
	rd_report_init(&r, 0);
	rd_report_error(&r, "a", 1, -RD_ESYS, "x");
	assert_int_equal(r.nerrors, 0);
	assert_int_equal(r.omitted, 1);
	assert_null(r.errors);
	rd_report_free(&r);

	/* growth by doubling stops at max_errors */
	rd_report_init(&r, 20);
	for (i = 0; i < 25; i++)
		rd_report_error(&r, "a", 1, -RD_ESYS, "x");
	assert_int_equal(r.nerrors, 20);
	assert_int_equal(r.cap, 20);
	assert_int_equal(r.omitted, 5);
	rd_report_free(&r);
}

/* Notes: what rdcp says without --json as "rdcp: note: ...", kept like errors. */
static void test_notes(void **state)
{
	struct rd_report r;
	char path[32], *j;
	size_t n;
	int i;

	rd_report_init(&r, 3);
	assert_int_equal(rd_report_note(&r, "v4", 2, "the source changed; starting over"), 0);
	assert_int_equal(rd_report_note(&r, NULL, 0, "host does not keep ACLs"), 0);
	assert_int_equal(rd_report_note(&r, "x", 1, ""), 0); /* nothing to say: ignored */
	assert_int_equal(rd_report_note(&r, "x", 1, NULL), 0);
	assert_int_equal(rd_report_note(&r, "n\xff", 2, "odd name"), 0);
	assert_int_equal(rd_report_error(&r, "e", 1, -RD_ESYS, "failed"), 0);
	j = json_of(&r, NULL, 1, "gmac", 23, &n);
	assert_non_null(
	    strstr(j, "\"errors\": [{\"path\": \"e\", \"status\": \"i/o\", "
		      "\"message\": \"failed\"}], \"errors_omitted\": 0, \"notes\": ["
		      "{\"path\": \"v4\", \"message\": \"the source changed; starting "
		      "over\"}, {\"path\": null, \"message\": \"host does not keep ACLs\"}, "
		      "{\"path\": \"n\\ufffd\", \"path_hex\": \"6eff\", \"message\": "
		      "\"odd name\"}], \"notes_omitted\": 0}\n"));
	free(j);
	/* bounded like errors: past max_errors only counted */
	for (i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "n%d", i);
		assert_int_equal(rd_report_note(&r, path, strlen(path), "x"), 0);
	}
	assert_int_equal(r.nnotes, 3);
	assert_int_equal(r.notes_omitted, 1000);
	assert_int_equal(r.nerrors, 1);
	j = json_of(&r, NULL, 1, "gmac", 23, &n);
	assert_non_null(strstr(j, "\"notes_omitted\": 1000}"));
	free(j);
	rd_report_free(&r);
}

static void test_long_path_and_message_cut(void **state)
{
	static char path[RD_REPORT_PATH_MAX * 2], msg[RD_REPORT_MSG_MAX * 3];
	struct rd_report r;

	memset(path, 'p', sizeof(path));
	memset(msg, 'm', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	rd_report_init(&r, 1);
	rd_report_error(&r, path, sizeof(path), -RD_ESYS, msg);
	assert_int_equal(r.errors[0].path_len, RD_REPORT_PATH_MAX);
	assert_int_equal(strlen(r.errors[0].msg), RD_REPORT_MSG_MAX);
	rd_report_free(&r);
}

static void test_write_error(void **state)
{
	struct rd_report r;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		skip();
	rd_report_init(&r, 1);
	assert_int_equal(rd_report_json(f, &r, NULL, 1, "sha256", 0), -RD_ESYS);
	fclose(f);
	rd_report_free(&r);
}

/* xorshift: the same "random" names on every run */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void random_bytes(uint32_t *seed, char *b, size_t n)
{
	static const char pieces[][5] = {"\xc3\xa9",	 "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
					 "\xed\xa0\x80", "\xc0\xaf",	 "\xe2\x80\xa8",
					 "\"",		 "\\",		 "/"};
	size_t i = 0, k;

	while (i < n) {
		uint32_t r = rnd(seed);

		if (r % 3 == 0) {
			const char *p = pieces[(r >> 8) % 9];

			for (k = 0; p[k] && i < n; k++)
				b[i++] = p[k];
		} else {
			b[i++] = (char)(r >> 16);
		}
	}
}

#define NRANDOM 2000

/*
 * Random byte strings (NULs, controls, invalid and valid UTF-8) as paths
 * and messages: the output must always be valid JSON; and when python3 is
 * there, json.load must accept it and give back every valid-UTF-8 path
 * exactly and every other one through path_hex.
 */
static void test_random_paths_always_parse(void **state)
{
	static char paths[NRANDOM][64];
	static size_t lens[NRANDOM];
	char msg[64], tmpl[] = "/tmp/rd_report_testXXXXXX", cmd[512], line[256];
	struct rd_report r;
	uint32_t seed = 12345;
	FILE *f, *py;
	int fd, i;
	char *j;
	size_t n;

	rd_report_init(&r, NRANDOM);
	for (i = 0; i < NRANDOM; i++) {
		lens[i] = rnd(&seed) % sizeof(paths[0]);
		random_bytes(&seed, paths[i], lens[i]);
		random_bytes(&seed, msg, sizeof(msg) - 1);
		msg[sizeof(msg) - 1] = '\0';
		assert_int_equal(rd_report_error(&r, paths[i], lens[i], -(1 + i % 16), msg), 0);
	}
	j = json_of(&r, NULL, 1.5, "x\"\xff", 23, &n);

	if (access("/usr/bin/python3", X_OK) && system("command -v python3 >/dev/null 2>&1")) {
		print_message("python3 not found: checked with the built-in validator only\n");
		goto out;
	}
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(j, 1, n, f), n);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys\n"
		 "d = json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
		 "for e in d[\"errors\"]:\n"
		 "    print(e.get(\"path_hex\") or e[\"path\"].encode(\"utf-8\").hex())\n"
		 "print(\"end\", len(d[\"errors\"]))' %s",
		 tmpl);
	py = popen(cmd, "r");
	assert_non_null(py);
	for (i = 0; i < NRANDOM; i++) {
		char want[256];
		size_t k;

		assert_non_null(fgets(line, sizeof(line), py));
		for (k = 0; k < lens[i]; k++)
			snprintf(want + 2 * k, 3, "%02x", (unsigned char)paths[i][k]);
		want[2 * lens[i]] = '\0';
		line[strcspn(line, "\n")] = '\0';
		assert_string_equal(line, want);
	}
	assert_non_null(fgets(line, sizeof(line), py));
	assert_string_equal(line, "end 2000\n");
	assert_int_equal(pclose(py), 0);
	unlink(tmpl);
out:
	free(j);
	rd_report_free(&r);
}

/* Issue 7 item 8: the terminal line for a NOTE never reads past its inputs. */
static void test_report_line(void **state)
{
	char out[64], tiny[8];
	char path[3] = {'a', '\0', 'b'}; /* NUL bytes in a wire path */

	(void)state;
	rd_report_line(out, sizeof(out), "a/b", 3, -RD_ESYS, "a/b: Permission denied");
	assert_string_equal(out, "a/b: Permission denied");
	rd_report_line(out, sizeof(out), "x", 1, -RD_ESYS, "sender: x\nrdcp: forged");
	assert_string_equal(out, "x: sender: x\\nrdcp: forged");
	rd_report_line(out, sizeof(out), path, 3, -RD_ESYS, "a");
	assert_string_equal(out, "a\\x00b: a");
	rd_report_line(out, sizeof(out), "p", 1, -RD_ENOENT, NULL);
	assert_non_null(strstr(out, "p: "));
	/* "x:" is shorter than "x: ": the prefix check must not read past it */
	assert_string_equal(rd_report_strip_path("x:", "x", 1), "x:");
	rd_report_line(tiny, sizeof(tiny), "abcdefghij", 10, -RD_ESYS, "m");
	assert_string_equal(tiny, "abcd...");
}

/* One cause, one message: what lies under a failed path folds into it. */
static void test_fold(void **state)
{
	struct rd_report_fold f;

	(void)state;
	memset(&f, 0, sizeof(f));
	assert_int_equal(rd_report_fold_add(&f, "tree/d", 6), 0); /* printed */
	assert_int_equal(f.ended.n, 0);
	assert_int_equal(rd_report_fold_add(&f, "tree/d/a", 8), 1);
	assert_int_equal(rd_report_fold_add(&f, "tree/d/sub/b", 12), 1);
	assert_int_equal(rd_report_fold_add(&f, "tree/d", 6), 2); /* its second pass */
	/* a sibling with the same prefix is not under it */
	assert_int_equal(rd_report_fold_add(&f, "tree/dx", 7), 0);
	assert_int_equal(f.ended.n, 2);
	assert_int_equal(f.ended.len, 6);
	assert_memory_equal(f.ended.path, "tree/d", 6);
	assert_int_equal(rd_report_fold_add(&f, "tree/e", 6), 0);
	assert_int_equal(f.ended.n, 0); /* tree/dx folded nothing */
	assert_int_equal(rd_report_fold_add(&f, "tree/e/1", 8), 1);
	rd_report_fold_end(&f);
	assert_int_equal(f.ended.n, 1);
	assert_memory_equal(f.ended.path, "tree/e", 6);
	/* a run error (no path) folds nothing and ends the fold */
	assert_int_equal(rd_report_fold_add(&f, "x", 1), 0);
	assert_int_equal(rd_report_fold_add(&f, NULL, 0), 0);
	assert_int_equal(rd_report_fold_add(&f, "x/y", 3), 0);
	/* paths longer than kept are cut, never overrun */
	{
		static char big[RD_REPORT_PATH_MAX + 100];

		memset(big, 'a', sizeof(big));
		assert_int_equal(rd_report_fold_add(&f, big, sizeof(big)), 0);
		assert_int_equal(f.cur.len, RD_REPORT_PATH_MAX);
		assert_int_equal(rd_report_fold_add(&f, big, sizeof(big)), 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_line),
	    cmocka_unit_test(test_validator_itself),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_counters_and_errors),
	    cmocka_unit_test(test_string_escaping),
	    cmocka_unit_test(test_path_hex_only_when_needed),
	    cmocka_unit_test(test_bounded_by_max_errors),
	    cmocka_unit_test(test_notes),
	    cmocka_unit_test(test_fold),
	    cmocka_unit_test(test_long_path_and_message_cut),
	    cmocka_unit_test(test_write_error),
	    cmocka_unit_test(test_random_paths_always_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
