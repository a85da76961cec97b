// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lib/base/rd_err.h"
#include "lib/digest/rd_digest.h"

static void hex(char *dst, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(dst + 2 * i, "%02x", p[i]);
	dst[2 * n] = '\0';
}

/* Digest of s with a fresh handle, as lower-case hex. */
static void digest_hex(const char *name, const char *s, size_t len, char *out)
{
	struct rd_digest *d = NULL;
	struct rd_err err;
	uint8_t md[RD_DIGEST_OUT_MAX];

	rd_err_clear(&err);
	assert_int_equal(rd_digest_open(&d, name, &err), 0);
	assert_non_null(d);
	assert_int_equal(rd_digest_compute(d, s, len, md), 0);
	hex(out, md, d->size);
	rd_digest_close(d);
}

static void test_sha256_abc(void **state)
{
	char h[2 * RD_DIGEST_OUT_MAX + 1];

	digest_hex("sha256", "abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_sha512_empty(void **state)
{
	char h[2 * RD_DIGEST_OUT_MAX + 1];

	digest_hex("sha512", "", 0, h);
	assert_int_equal(strlen(h), 128);
	assert_string_equal(h, "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
			       "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
}

static void test_blake2b512_abc(void **state)
{
	char h[2 * RD_DIGEST_OUT_MAX + 1];

	digest_hex("blake2b512", "abc", 3, h);
	assert_string_equal(h, "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
			       "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
}

static void test_open_fields(void **state)
{
	struct rd_digest *d = NULL;

	assert_int_equal(rd_digest_open(&d, "SHA256", NULL), 0);
	assert_string_equal(d->ops->kind, "evp");
	assert_string_equal(d->name, "sha256");
	assert_int_equal(d->size, 32);
	rd_digest_close(d);
	assert_int_equal(rd_digest_open(&d, RD_DIGEST_DEFAULT, NULL), 0);
	assert_int_equal(d->size, 32);
	rd_digest_close(d);
}

static void test_none(void **state)
{
	struct rd_digest *d = NULL;
	uint8_t md[RD_DIGEST_OUT_MAX];
	struct rd_err err;

	memset(md, 0x5a, sizeof(md));
	assert_int_equal(rd_digest_open(&d, "none", &err), 0);
	assert_string_equal(d->ops->kind, "none");
	assert_string_equal(d->name, "none");
	assert_int_equal(d->size, 0);
	assert_int_equal(rd_digest_compute(d, "abc", 3, md), 0);
	assert_int_equal(md[0], 0x5a); /* nothing written */
	rd_digest_close(d);
}

static void test_unknown_refused(void **state)
{
	struct rd_digest *d = NULL;
	struct rd_err err;

	rd_err_clear(&err);
	assert_int_equal(rd_digest_open(&d, "foo", &err), -RD_EUSAGE);
	/* Per the header, the message is on (*out)->err when *out exists. */
	assert_non_null(d);
	assert_int_equal(d->err.status, RD_EUSAGE);
	assert_non_null(strstr(d->err.msg, "'foo'"));
	assert_non_null(strstr(d->err.msg, "sha256"));
	assert_non_null(strstr(err.msg, "'foo'"));
	rd_digest_close(d);
}

static void test_xof_refused(void **state)
{
	struct rd_digest *d = NULL;
	struct rd_err err;

	rd_err_clear(&err);
	assert_int_equal(rd_digest_open(&d, "shake256", &err), -RD_EUSAGE);
	assert_non_null(d);
	assert_non_null(strstr(d->err.msg, "shake256"));
	assert_non_null(strstr(d->err.msg, "XOF"));
	rd_digest_close(d);
}

static void test_bad_names(void **state)
{
	char longname[64];
	struct rd_digest *d = NULL;
	struct rd_err err;

	rd_err_clear(&err);
	assert_int_equal(rd_digest_open(&d, "", &err), -RD_EUSAGE);
	assert_null(d);
	assert_int_equal(err.status, RD_EUSAGE);
	assert_int_equal(rd_digest_open(&d, NULL, &err), -RD_EUSAGE);
	assert_null(d);
	memset(longname, 'z', sizeof(longname));
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(rd_digest_open(&d, longname, &err), -RD_EUSAGE);
	assert_non_null(strstr(d->err.msg, "too long"));
	rd_digest_close(d);
	/* Control bytes in a name (it may come off the wire) are escaped. */
	assert_int_equal(rd_digest_open(&d, "a\x1b[2Jb", &err), -RD_EUSAGE);
	assert_null(strchr(d->err.msg, '\x1b'));
	rd_digest_close(d);
}

static void test_reuse_handle(void **state)
{
	static uint8_t big[1 << 16];
	struct rd_digest *d = NULL;
	uint8_t first[RD_DIGEST_OUT_MAX], again[RD_DIGEST_OUT_MAX];
	char h[2 * RD_DIGEST_OUT_MAX + 1];
	size_t i;
	int round;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 31 + 7);
	assert_int_equal(rd_digest_open(&d, "sha256", NULL), 0);
	assert_int_equal(rd_digest_compute(d, big, sizeof(big), first), 0);
	for (round = 0; round < 100; round++) {
		assert_int_equal(rd_digest_compute(d, "abc", 3, again), 0);
		hex(h, again, d->size);
		assert_string_equal(
		    h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
		assert_int_equal(rd_digest_compute(d, big, sizeof(big), again), 0);
		assert_memory_equal(first, again, d->size);
	}
	rd_digest_close(d);
}

static void test_other_fixed_digests(void **state)
{
	static const struct {
		const char *name;
		unsigned size;
	} ok[] = {{"sha1", 20}, {"sha384", 48}, {"sha3-256", 32}, {"sha512-256", 32}};
	struct rd_digest *d;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		d = NULL;
		assert_int_equal(rd_digest_open(&d, ok[i].name, NULL), 0);
		assert_int_equal(d->size, ok[i].size);
		rd_digest_close(d);
	}
}

static void test_close_null(void **state)
{
	rd_digest_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sha256_abc),	   cmocka_unit_test(test_sha512_empty),
	    cmocka_unit_test(test_blake2b512_abc), cmocka_unit_test(test_open_fields),
	    cmocka_unit_test(test_none),	   cmocka_unit_test(test_unknown_refused),
	    cmocka_unit_test(test_xof_refused),	   cmocka_unit_test(test_bad_names),
	    cmocka_unit_test(test_reuse_handle),   cmocka_unit_test(test_other_fixed_digests),
	    cmocka_unit_test(test_close_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
