/* SPDX-License-Identifier: MIT */
/*
 * The lib/proto fuzz harness entry point. Linked either with libFuzzer
 * (fuzz_proto, --config=fuzz) or with fuzz_corpus_main.c, a deterministic
 * driver that runs in every `bazel test //...`.
 */
#ifndef RDCP_TESTS_FUZZ_FUZZ_PROTO_H
#define RDCP_TESTS_FUZZ_FUZZ_PROTO_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
