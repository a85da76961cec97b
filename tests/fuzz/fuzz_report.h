/* SPDX-License-Identifier: MIT */
/* The lib/report fuzz harness entry point (see fuzz_report.c). */
#ifndef RDCP_TESTS_FUZZ_FUZZ_REPORT_H
#define RDCP_TESTS_FUZZ_FUZZ_REPORT_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
