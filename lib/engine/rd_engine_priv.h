/* SPDX-License-Identifier: MIT */
/* Private to lib/engine. */
#ifndef RDCP_ENGINE_RD_ENGINE_PRIV_H
#define RDCP_ENGINE_RD_ENGINE_PRIV_H

#include "lib/engine/rd_engine.h"

uint64_t rd_nchunks(uint64_t size, uint32_t chunk);
uint32_t rd_chunk_len(uint64_t size, uint32_t chunk, uint64_t idx);
void rd_engine_set_cur(struct rd_engine *e, const char *path, size_t len, uint64_t size);

/* How long the loop sleeps when it has nothing to do (ms); the transport's
 * own timeout decides when a silent peer is dead. */
#define RD_ENGINE_IDLE_MS 1000

#endif
