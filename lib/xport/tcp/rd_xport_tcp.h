/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/xport: the TCP transport as rd_xport.c sees it, its
 * entry table (lib/proto/rd_proto.h section 5 for the framing). Nothing
 * else of TCP is visible above this package.
 */
#ifndef RDCP_XPORT_TCP_RD_XPORT_TCP_H
#define RDCP_XPORT_TCP_RD_XPORT_TCP_H

#include "lib/xport/conn/rd_xport_impl.h"

extern const struct rd_xport rd_xport_tcp;

#endif
