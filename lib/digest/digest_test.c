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


/* Keyed kinds. Expected values computed independently with Python's
 * cryptography package (HKDF-SHA256 + AESGCM) from the construction in
 * rd_digest_keyed.c: master key 00 01 .. 1f, data "hello rdcp chunk" x 4,
 * id 3, chunk 9. */
static const char keyed_data[] = "hello rdcp chunkhello rdcp chunkhello rdcp chunkhello rdcp chunk";

static struct rd_digest *open_keyed(const char *name)
{
	struct rd_digest *d = NULL;
	uint8_t key[RD_DIGEST_KEY_LEN];
	unsigned i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	assert_int_equal(rd_digest_open(&d, name, NULL), 0);
	assert_int_equal(rd_digest_set_key(d, key), 0);
	return d;
}

static void ref_of(struct rd_chunk_ref *r, uint64_t seq)
{
	r->id = 3;
	r->chunk = 9;
	r->len = 64;
	r->seq = seq;
}

static void test_gmac_kat(void **state)
{
	struct rd_digest *d = open_keyed("GMAC");
	struct rd_chunk_ref r;
	uint8_t buf[64], tag[RD_DIGEST_OUT_MAX];
	char h[2 * RD_DIGEST_OUT_MAX + 1];

	assert_string_equal(d->name, "gmac");
	assert_int_equal(d->size, 16);
	assert_true(d->keyed && !d->encrypts);
	memcpy(buf, keyed_data, 64);
	ref_of(&r, 7);
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), 0);
	hex(h, tag, 16);
	assert_string_equal(h, "2faf1da0b10b0b287ac59faef7c5c311");
	assert_memory_equal(buf, keyed_data, 64); /* not encrypted */
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), 0);
	/* Epoch 5: another derived key. */
	ref_of(&r, (5ULL << 32) + 3);
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), 0);
	hex(h, tag, 16);
	assert_string_equal(h, "f0808b136279e2c4e3c90e38de19f5b1");
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), 0);
	rd_digest_close(d);
}

/* Every bound field, and every byte, changes the verdict. */
static void test_gmac_binds(void **state)
{
	struct rd_digest *d = open_keyed("gmac");
	struct rd_chunk_ref r, x;
	uint8_t buf[64], tag[16];

	memcpy(buf, keyed_data, 64);
	ref_of(&r, 7);
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), 0);
	x = r, x.id++;
	assert_int_equal(rd_digest_verify(d, &x, buf, 64, tag), -RD_ECORRUPT);
	x = r, x.chunk++;
	assert_int_equal(rd_digest_verify(d, &x, buf, 64, tag), -RD_ECORRUPT);
	x = r, x.len--;
	assert_int_equal(rd_digest_verify(d, &x, buf, 64, tag), -RD_ECORRUPT);
	x = r, x.seq++;
	assert_int_equal(rd_digest_verify(d, &x, buf, 64, tag), -RD_ECORRUPT);
	buf[63] ^= 1;
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), -RD_ECORRUPT);
	buf[63] ^= 1;
	tag[0] ^= 0x80;
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), -RD_ECORRUPT);
	tag[0] ^= 0x80;
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), 0);
	rd_digest_close(d);
}

static void test_gcm_kat(void **state)
{
	struct rd_digest *d = open_keyed("aes-128-gcm");
	struct rd_chunk_ref r;
	uint8_t buf[64], tag[16];
	char h[2 * 64 + 1];

	assert_true(d->keyed && d->encrypts);
	memcpy(buf, keyed_data, 64);
	ref_of(&r, 42);
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), 0);
	hex(h, buf, 64);
	assert_string_equal(h, "065654aaa570beecc2f33b02441ab290e76b2f80723e4839c07d5a43bf678806"
			       "75a832a900e4f35d19c93a3c3116867d57c58306a06c02b49fcd42294b1efc11");
	hex(h, tag, 16);
	assert_string_equal(h, "af1ca1160185ad102aa116a8f4c37cd9");
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), 0);
	assert_memory_equal(buf, keyed_data, 64);
	/* A flipped ciphertext bit is caught. */
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), 0);
	buf[10] ^= 4;
	assert_int_equal(rd_digest_verify(d, &r, buf, 64, tag), -RD_ECORRUPT);
	rd_digest_close(d);
}

/* Without a key a keyed kind refuses to tag; another key fails to verify;
 * compute() is plain SHA-256. */
static void test_keyed_needs_key(void **state)
{
	struct rd_digest *d = NULL, *e;
	struct rd_chunk_ref r;
	uint8_t buf[64], tag[16], other[RD_DIGEST_KEY_LEN] = {1};
	char h[2 * RD_DIGEST_OUT_MAX + 1];

	assert_int_equal(rd_digest_open(&d, "gmac", NULL), 0);
	ref_of(&r, 1);
	memcpy(buf, keyed_data, 64);
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), -RD_EUSAGE);
	assert_non_null(strstr(d->err.msg, "session key"));
	assert_int_equal(rd_digest_set_key(d, other), 0);
	assert_int_equal(rd_digest_protect(d, &r, buf, 64, tag), 0);
	e = open_keyed("gmac");
	assert_int_equal(rd_digest_verify(e, &r, buf, 64, tag), -RD_ECORRUPT);
	assert_int_equal(d->sum_size, 32);
	assert_int_equal(rd_digest_compute(e, "abc", 3, buf), 0);
	hex(h, buf, 32);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	rd_digest_close(d);
	rd_digest_close(e);
}

/* Unkeyed kinds: protect is the digest, verify compares it. */
static void test_unkeyed_protect(void **state)
{
	struct rd_digest *d = NULL;
	struct rd_chunk_ref r;
	uint8_t buf[3] = {'a', 'b', 'c'}, tag[RD_DIGEST_OUT_MAX];
	char h[2 * RD_DIGEST_OUT_MAX + 1];

	ref_of(&r, 1);
	assert_int_equal(rd_digest_open(&d, "sha256", NULL), 0);
	assert_false(d->keyed);
	assert_int_equal(d->sum_size, d->size);
	assert_int_equal(rd_digest_protect(d, &r, buf, 3, tag), 0);
	hex(h, tag, 32);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(rd_digest_verify(d, &r, buf, 3, tag), 0);
	buf[0] = 'x';
	assert_int_equal(rd_digest_verify(d, &r, buf, 3, tag), -RD_ECORRUPT);
	rd_digest_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sha256_abc),	   cmocka_unit_test(test_sha512_empty),
	    cmocka_unit_test(test_blake2b512_abc), cmocka_unit_test(test_open_fields),
	    cmocka_unit_test(test_none),	   cmocka_unit_test(test_unknown_refused),
	    cmocka_unit_test(test_xof_refused),	   cmocka_unit_test(test_bad_names),
	    cmocka_unit_test(test_reuse_handle),   cmocka_unit_test(test_other_fixed_digests),
	    cmocka_unit_test(test_close_null),	   cmocka_unit_test(test_gmac_kat),
	    cmocka_unit_test(test_gmac_binds),	   cmocka_unit_test(test_gcm_kat),
	    cmocka_unit_test(test_keyed_needs_key), cmocka_unit_test(test_unkeyed_protect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
