// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include "lib/addrsel/rd_addrsel.h"

/* A fake routing table: "dst=src" pairs; a dst not listed has no route. */
struct routes {
	const char *const *pairs;
};

static int fake_src(void *ctx, const struct sockaddr_storage *dst, struct sockaddr_storage *src)
{
	const struct routes *r = ctx;
	char d[64], want[64];
	const char *const *p;
	const void *a;

	if (dst->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)dst)->sin_addr;
	else
		a = &((const struct sockaddr_in6 *)(const void *)dst)->sin6_addr;
	inet_ntop(dst->ss_family, a, d, sizeof(d));
	for (p = r->pairs; *p; p++) {
		const char *eq = strchr(*p, '=');

		snprintf(want, sizeof(want), "%.*s", (int)(eq - *p), *p);
		if (strcmp(want, d))
			continue;
		memset(src, 0, sizeof(*src));
		if (strchr(eq + 1, ':')) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)src;

			s6->sin6_family = AF_INET6;
			inet_pton(AF_INET6, eq + 1, &s6->sin6_addr);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)src;

			s4->sin_family = AF_INET;
			inet_pton(AF_INET, eq + 1, &s4->sin_addr);
		}
		return 0;
	}
	return -1;
}

static const char *const rig_routes[] = {
    "10.77.2.2=10.77.2.1", "fd00::2=fd00::1", "2001:db8::2=2001:db8::1",
    "2001:db8:1::2=2001:db8:2::1", "2001:db8:2::2=2001:db8:2::1", "10.0.0.3=10.0.0.1",
    "10.0.0.2=10.0.0.1", "fe80::2=fe80::1", NULL,
};

static void expect_order(const char **in, int n, int family, const char *const *want, int nwant)
{
	struct routes r = {rig_routes};
	int i, k;

	k = rd_addr_order(in, n, family, fake_src, &r);
	assert_int_equal(k, nwant);
	for (i = 0; i < k; i++)
		assert_string_equal(in[i], want[i]);
}

/* The dual-stack rig: IPv4 (precedence 35) before unique-local IPv6 (3). */
static void test_ipv4_before_ula(void **state)
{
	const char *a[] = {"fd00::2", "10.77.2.2"};
	static const char *const w[] = {"10.77.2.2", "fd00::2"};

	(void)state;
	expect_order(a, 2, 0, w, 2);
}

/* Global IPv6 (40) before IPv4 (35). */
static void test_global_v6_first(void **state)
{
	const char *a[] = {"10.77.2.2", "2001:db8::2"};
	static const char *const w[] = {"2001:db8::2", "10.77.2.2"};

	(void)state;
	expect_order(a, 2, 0, w, 2);
}

/* Rule 1: no route goes last, whatever its precedence. */
static void test_unusable_last(void **state)
{
	const char *a[] = {"2001:db8::99", "10.77.2.2", "::1"};
	static const char *const w[] = {"10.77.2.2", "2001:db8::99", "::1"};

	(void)state;
	expect_order(a, 3, 0, w, 3);
}

/* -4 / -6 keep one family; what is not a numeric address is dropped. */
static void test_family_filter(void **state)
{
	const char *a[] = {"10.77.2.2", "fd00::2", "host.example", "2001:db8::2"};
	static const char *const w6[] = {"2001:db8::2", "fd00::2"};
	const char *b[] = {"10.77.2.2", "fd00::2", "host.example"};
	static const char *const w4[] = {"10.77.2.2"};

	(void)state;
	expect_order(a, 4, AF_INET6, w6, 2);
	expect_order(b, 3, AF_INET, w4, 1);
}

/* Rule 9: the longer prefix shared with the source; rule 10: given order. */
static void test_prefix_then_stable(void **state)
{
	const char *a[] = {"2001:db8:1::2", "2001:db8:2::2"};
	static const char *const w[] = {"2001:db8:2::2", "2001:db8:1::2"};
	const char *b[] = {"10.0.0.3", "10.0.0.2"};
	static const char *const wb[] = {"10.0.0.3", "10.0.0.2"};

	(void)state;
	expect_order(a, 2, 0, w, 2);
	expect_order(b, 2, 0, wb, 2);
}

/* Rule 8: the smaller scope (link-local) when all else is equal. */
static void test_smaller_scope(void **state)
{
	const char *a[] = {"2001:db8::2", "fe80::2"};
	static const char *const w[] = {"fe80::2", "2001:db8::2"};

	(void)state;
	expect_order(a, 2, 0, w, 2);
}

/* The kernel's own lookup: loopback is always routable. */
static void test_kernel_loopback(void **state)
{
	const char *a[] = {"127.0.0.1"};

	(void)state;
	assert_int_equal(rd_addr_order(a, 1, 0, NULL, NULL), 1);
	assert_string_equal(a[0], "127.0.0.1");
	assert_int_equal(rd_addr_order(a, 1, AF_INET6, NULL, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ipv4_before_ula),   cmocka_unit_test(test_global_v6_first),
	    cmocka_unit_test(test_unusable_last),     cmocka_unit_test(test_family_filter),
	    cmocka_unit_test(test_prefix_then_stable), cmocka_unit_test(test_smaller_scope),
	    cmocka_unit_test(test_kernel_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
