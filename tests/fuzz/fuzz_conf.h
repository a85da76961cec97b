/* SPDX-License-Identifier: MIT */
/*
 * The lib/conf fuzz harness entry point. Linked either with libFuzzer
 * (fuzz_conf, --config=fuzz) or with fuzz_conf_corpus_main.c, a
 * deterministic driver that runs in every `bazel test //...`.
 */
#ifndef RDCP_TESTS_FUZZ_FUZZ_CONF_H
#define RDCP_TESTS_FUZZ_FUZZ_CONF_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
