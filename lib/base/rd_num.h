/* SPDX-License-Identifier: MIT */
/*
 * Strict numbers for command lines and config values: all of the string
 * is one decimal number (no sign, no spaces, no "0x", no trailing junk),
 * it fits, and it lies in [min, max]. atoi() takes "80abc" as 80 and
 * strtoull() takes "-1" as 2^64-1; neither may decide a port or a size.
 */
#ifndef RDCP_BASE_RD_NUM_H
#define RDCP_BASE_RD_NUM_H

#include <stdint.h>

/* Accept a size suffix: K, M, G (powers of 1024), optionally + "i", "B", "iB". */
#define RD_NUM_SIZE 0x1u

/* Returns 0 with *out set, or -1 (and *out untouched). */
int rd_num_parse(const char *s, unsigned flags, uint64_t min, uint64_t max, uint64_t *out);

/*
 * rsync's size arguments (--bwlimit, --max-size, ...): "1.5m", "20MB"
 * (powers of 1000), "20MiB" or "20M" (powers of 1024), "512b", an
 * optional "+1"/"-1"; a bare number is in dflt units ('k': KiB). Returns 0
 * with *out in bytes, -1 when it is not such a size, -2 when it is too large.
 */
int rd_num_parse_rsync_size(const char *s, char dflt, uint64_t *out);

#endif
