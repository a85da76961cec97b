/* SPDX-License-Identifier: MIT */
/* Private to lib/proto: FILEZ's checks (rd_proto_filez.c) and FILE's (rd_proto.c). */
#ifndef RDCP_PROTO_RD_PROTO_FILEZ_H
#define RDCP_PROTO_RD_PROTO_FILEZ_H

#include "lib/proto/rd_proto.h"

/* NULL if f is a valid FILE, else why not. */
const char *rd_proto__file_check(const struct rd_msg_file *f);
/* NULL if every entry of a decoded FILEZ is valid, else why not. */
const char *rd_proto__filez_check(const struct rd_msg_files *m);

#endif
