/* SPDX-License-Identifier: MIT */
/*
 * Big-endian integers in byte buffers, and FNV-1a 64, for the on-disk and
 * MPI records that are not wire messages (lib/proto has its own cursors):
 * range records (lib/sink), rdcp-mpi's records and a ranged pull's list.
 */
#ifndef RDCP_BASE_RD_BE_H
#define RDCP_BASE_RD_BE_H

#include <stddef.h>
#include <stdint.h>

#define RD_FNV1A_INIT 0xcbf29ce484222325ull

static inline void rd_be_put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline void rd_be_put32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t rd_be_get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline uint32_t rd_be_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* FNV-1a 64 of n bytes, continuing from h (RD_FNV1A_INIT to start). */
static inline uint64_t rd_fnv1a64(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif
