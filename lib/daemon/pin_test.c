// SPDX-License-Identifier: MIT
/*
 * What one session of rdcpd counts against its memory budget, and how many
 * sessions the locked-memory limit lets a process without CAP_IPC_LOCK
 * register (the kernel charges every registration, so once per rail).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/capability.h>

#include "lib/daemon/rd_daemon.h"
#include "lib/xport/rd_xport.h"

#define POOL (8ull << 20)

static void test_rails_counted(void **state)
{
	uint64_t charged = 0, one, pin;
	unsigned rails = 9, ndev = rd_rdma_device_count();

	(void)state;
	one = rd_xport_session_pin(POOL, 0, 1, NULL);
	/* one lane, or a listener on one address: never more than one rail */
	assert_true(rd_daemon_session_pin(POOL, 1, 1, &charged, &rails) == one);
	assert_int_equal(rails, 1);
	assert_true(charged == one);
	assert_true(rd_daemon_session_pin(POOL, 4, 0, &charged, &rails) == one);
	assert_int_equal(rails, 1);
	/* lanes on every address: as many rails as devices, at most the lanes */
	pin = rd_daemon_session_pin(POOL, 0, 1, &charged, &rails);
	if (ndev <= 1) {
		assert_int_equal(rails, 1);
	} else {
		assert_int_equal(rails, ndev < 4 ? ndev : 4);
		assert_true(pin > one);
	}
	assert_true(pin == rd_xport_session_pin(POOL, 0, rails, NULL));
	assert_true(charged == rails * one);
	rd_daemon_session_pin(POOL, 2, 1, NULL, &rails);
	assert_true(rails <= 2);
}

/* Drop CAP_IPC_LOCK from this process's effective set; 0 when done. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return (int)syscall(SYS_capset, &h, d);
}

static void test_memlock_sessions(void **state)
{
	struct rlimit rl = {.rlim_cur = 10u << 20, .rlim_max = RLIM_INFINITY};
	struct rlimit was;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &was), 0);
	rl.rlim_max = was.rlim_max;
	if (was.rlim_max != RLIM_INFINITY && was.rlim_max < rl.rlim_cur)
		rl.rlim_cur = was.rlim_max;
	/* whatever the capabilities, a zero charge is never bound */
	assert_int_equal(rd_daemon_memlock_sessions(0), INT_MAX);
	assert_int_equal(drop_ipc_lock(), 0);
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	/* 10 MiB: three sessions charged 3 MiB each, none of 11 MiB */
	assert_int_equal(rd_daemon_memlock_sessions(3u << 20), (int)(rl.rlim_cur / (3u << 20)));
	assert_int_equal(rd_daemon_memlock_sessions(11u << 20), (int)(rl.rlim_cur / (11u << 20)));
	rl.rlim_cur = RLIM_INFINITY;
	if (was.rlim_max == RLIM_INFINITY) {
		assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
		assert_int_equal(rd_daemon_memlock_sessions(3u << 20), INT_MAX);
	}
	setrlimit(RLIMIT_MEMLOCK, &was);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rails_counted),
	    cmocka_unit_test(test_memlock_sessions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
