/* SPDX-License-Identifier: MIT */
/*
 * What RDMA hardware this host has, in plain words: devices, ports, link
 * layer (InfiniBand or Ethernet/RoCE), GID table entries with their type
 * and the netdev/IP they belong to, and whether the locked-memory limit
 * allows registering buffers. Used by `rdcp --list-devices` and by the
 * transport to explain failures (which device, port, GID).
 */
#ifndef RDCP_XPORT_RD_XPORT_DEV_H
#define RDCP_XPORT_RD_XPORT_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"

#define RD_DEV_NAME_MAX 64
#define RD_DEV_MAX_GIDS 32
#define RD_DEV_MAX_PORTS 8

struct rd_gid_info {
	unsigned index;
	const char *type;  /* "IB", "RoCE v1", "RoCE v2" */
	char gid[48];	   /* textual GID */
	char netdev[32];   /* "" if none */
	char ip[48];	   /* IPv4/IPv6 address carried by a RoCE GID, or "" */
};

struct rd_port_info {
	unsigned port;
	const char *state;	/* "PORT_ACTIVE", "PORT_DOWN", ... */
	const char *link_layer; /* "InfiniBand" or "Ethernet" */
	int is_roce;
	unsigned active_mtu;	/* bytes */
	unsigned max_mtu;
	unsigned ngids;
	struct rd_gid_info gids[RD_DEV_MAX_GIDS];
};

struct rd_dev_info {
	char name[RD_DEV_NAME_MAX];
	char node_guid[24];
	char fw_ver[64];
	unsigned nports;
	struct rd_port_info ports[RD_DEV_MAX_PORTS];
};

struct rd_devlist {
	unsigned ndevs;
	struct rd_dev_info *devs;
	struct rd_err err;
};

/*
 * Query every device. With no device at all, returns -RD_ENODEV and a
 * message that says so and how to get one (driver, Soft-RoCE). *out is
 * always set (free it with rd_devlist_free) so the message can be read.
 */
int rd_devlist_query(struct rd_devlist **out);
void rd_devlist_free(struct rd_devlist *l);

/* The text a user needs when no RDMA device is present. */
const char *rd_dev_none_hint(void);

struct rd_memlock {
	uint64_t soft, hard;   /* bytes; UINT64_MAX = unlimited */
	int cap_ipc_lock;      /* process may lock without limit */
};

int rd_memlock_query(struct rd_memlock *m);

/*
 * Is the limit enough to register `need` bytes? Returns 1 if yes. If no,
 * writes a plain sentence into msg suggesting "ulimit -l".
 */
int rd_memlock_enough(const struct rd_memlock *m, uint64_t need, char *msg, size_t msglen);

#endif
