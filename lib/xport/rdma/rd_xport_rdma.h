/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/xport: the RDMA transport as rd_xport.c sees it, its
 * entry table. Nothing else of RDMA is visible above this package.
 */
#ifndef RDCP_XPORT_RDMA_RD_XPORT_RDMA_H
#define RDCP_XPORT_RDMA_RD_XPORT_RDMA_H

#include "lib/xport/conn/rd_xport_impl.h"

extern const struct rd_xport rd_xport_rdma;

#endif
