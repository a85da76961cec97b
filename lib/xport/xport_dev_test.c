// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "lib/xport/rd_xport.h"
#include "lib/xport/rd_xport_dev.h"

static void test_memlock_unlimited_is_enough(void **state)
{
	struct rd_memlock m = {.soft = UINT64_MAX, .hard = UINT64_MAX};
	char msg[512];

	assert_int_equal(rd_memlock_enough(&m, 1ull << 30, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "");
}

static void test_memlock_low_says_ulimit(void **state)
{
	struct rd_memlock m = {.soft = 8u << 20, .hard = 8u << 20, .cap_ipc_lock = 0};
	char msg[512];

	assert_int_equal(rd_memlock_enough(&m, 64u << 20, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "ulimit -l"));
	assert_non_null(strstr(msg, "8192 KiB"));
	assert_non_null(strstr(msg, "65536 KiB"));
}

static void test_memlock_cap_bypasses(void **state)
{
	struct rd_memlock m = {.soft = 0, .hard = 0, .cap_ipc_lock = 1};
	char msg[64];

	assert_int_equal(rd_memlock_enough(&m, 64u << 20, msg, sizeof(msg)), 1);
}

static void test_memlock_query_matches_getrlimit(void **state)
{
	struct rd_memlock m;
	struct rlimit rl;

	assert_int_equal(rd_memlock_query(&m), 0);
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	if (rl.rlim_cur != RLIM_INFINITY)
		assert_int_equal(m.soft, (uint64_t)rl.rlim_cur);
	else
		assert_true(m.soft == UINT64_MAX);
}

/*
 * The build host has no RDMA device (the rig tests cover real ones):
 * the query must fail with RD_ENODEV and a message that tells the user
 * how to get a device. With a device, it must list at least one port.
 */
static void test_devlist_query(void **state)
{
	struct rd_devlist *l = NULL;
	int ret = rd_devlist_query(&l);

	assert_non_null(l);
	if (ret == -RD_ENODEV) {
		assert_non_null(strstr(l->err.msg, "no RDMA device"));
		assert_non_null(strstr(l->err.msg, "rdma link add"));
	} else {
		assert_int_equal(ret, 0);
		assert_true(l->ndevs > 0);
		assert_true(l->devs[0].nports > 0);
	}
	rd_devlist_free(l);
	rd_devlist_free(NULL);
}

/* --rdma-devices: whole names only, any place in the list; none: any. */
static void test_rdma_devices_has(void **state)
{
	(void)state;
	assert_true(rd_rdma_devices_has(NULL, "rxe0"));
	assert_true(rd_rdma_devices_has("", "rxe0"));
	assert_true(rd_rdma_devices_has("rxe0", "rxe0"));
	assert_true(rd_rdma_devices_has("mlx5_0,rxe0", "rxe0"));
	assert_true(rd_rdma_devices_has("rxe0,mlx5_0", "mlx5_0"));
	assert_false(rd_rdma_devices_has("rxe0", "rxe"));
	assert_false(rd_rdma_devices_has("rxe", "rxe0"));
	assert_false(rd_rdma_devices_has("rxe01,rxe1", "rxe0"));
	assert_false(rd_rdma_devices_has("mlx5_1", "mlx5_10"));
}

/* What a session pins and what ulimit -l is charged for it, per rail. */
static void test_session_pin(void **state)
{
	const uint64_t ctrl = (2 * 64 + 4) * (uint64_t)RD_CTRL_MAX; /* default depth */
	const uint64_t pool = 64ull << 20;
	uint64_t charged = 0;

	(void)state;
	assert_true(rd_xport_session_pin(pool, 0, 1, &charged) == pool + ctrl);
	assert_true(charged == pool + ctrl);
	/* a second rail: its own receives; the pool and sends registered again */
	assert_true(rd_xport_session_pin(pool, 0, 2, &charged) ==
		    pool + ctrl + 64 * (uint64_t)RD_CTRL_MAX);
	assert_true(charged == 2 * (pool + ctrl));
	assert_true(rd_xport_session_pin(pool, 64, 4, &charged) ==
		    pool + ctrl + 3 * 64 * (uint64_t)RD_CTRL_MAX);
	assert_true(charged == 4 * (pool + ctrl));
	/* rails out of range: 1 and RD_RAILS_MAX */
	assert_true(rd_xport_session_pin(pool, 0, 0, NULL) == pool + ctrl);
	assert_true(rd_xport_session_pin(pool, 0, 99, &charged) ==
		    pool + ctrl + (RD_RAILS_MAX - 1) * 64 * (uint64_t)RD_CTRL_MAX);
	assert_true(charged == RD_RAILS_MAX * (pool + ctrl));
	/* a depth beyond the transport's maximum counts as the maximum */
	assert_true(rd_xport_session_pin(0, 5000, 1, NULL) ==
		    (2 * 1024 + 4) * (uint64_t)RD_CTRL_MAX);
	assert_true(rd_xport_session_pin(0, 16, 1, NULL) == (2 * 16 + 4) * (uint64_t)RD_CTRL_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memlock_unlimited_is_enough),
		cmocka_unit_test(test_memlock_low_says_ulimit),
		cmocka_unit_test(test_memlock_cap_bypasses),
		cmocka_unit_test(test_memlock_query_matches_getrlimit),
		cmocka_unit_test(test_devlist_query),
		cmocka_unit_test(test_rdma_devices_has),
		cmocka_unit_test(test_session_pin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
