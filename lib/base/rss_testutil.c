// SPDX-License-Identifier: MIT
/* Peak RSS over a stretch of a test (rss_testutil.h). */
#include "lib/base/rss_testutil.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* KiB of a line of /proc/self/status ("VmRSS:", "VmHWM:"). */
static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	assert_true(v >= 0);
	return v;
}

long rd_test_peak_reset(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "5", 1), 1);
	close(fd);
	return status_kib("VmRSS:");
}

long rd_test_peak_growth(long base)
{
	return status_kib("VmHWM:") - base;
}
