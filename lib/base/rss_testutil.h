/* SPDX-License-Identifier: MIT */
/*
 * Tests only: how much a stretch of a test raised the process's peak RSS.
 * rd_test_peak_reset() resets the peak (VmHWM) to what is resident now
 * (through /proc/self/clear_refs) and returns that (VmRSS, KiB);
 * rd_test_peak_growth(base) is the peak since, less base (KiB).
 */
#ifndef RDCP_BASE_RSS_TESTUTIL_H
#define RDCP_BASE_RSS_TESTUTIL_H

long rd_test_peak_reset(void);
long rd_test_peak_growth(long base);

#endif
