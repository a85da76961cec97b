/* SPDX-License-Identifier: MIT */
/*
 * Test support for lib/proto (testonly): one valid sample message of
 * every type, and field-by-field equality of decoded messages. Shared by
 * proto_test and the fuzz harness in tests/fuzz.
 */
#ifndef RDCP_PROTO_RD_PROTO_TESTUTIL_H
#define RDCP_PROTO_RD_PROTO_TESTUTIL_H

#include <stdbool.h>

#include "lib/proto/rd_proto.h"

/*
 * Fill msg with a valid message of the given type (1..RD_MSG_TYPE_MAX-1).
 * variant 0 uses small typical values, variant 1 extreme ones (longest
 * strings that still fit, maximum integers). Strings point to static
 * storage. Returns false for an unknown type.
 */
bool rd_msg_sample(struct rd_msg *msg, uint8_t type, int variant);

/* Same type, credits and payload fields (strings compared by content). */
bool rd_msg_equal(const struct rd_msg *a, const struct rd_msg *b);

#endif
