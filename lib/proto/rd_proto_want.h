/* SPDX-License-Identifier: MIT */
/* Private to lib/proto: WANT's encoder, decoder and checks (rd_proto_want.c). */
#ifndef RDCP_PROTO_RD_PROTO_WANT_H
#define RDCP_PROTO_RD_PROTO_WANT_H

#include "lib/proto/rd_proto.h"
#include "lib/proto/rd_proto_buf.h"

const char *rd_proto__want_check(const struct rd_msg_want *m);
void rd_proto__want_put(struct rd_wcur *w, const struct rd_msg_want *m);
void rd_proto__want_get(struct rd_rcur *r, struct rd_msg_want *m);

#endif
