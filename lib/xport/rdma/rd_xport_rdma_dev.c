// SPDX-License-Identifier: MIT
#include "lib/xport/rd_xport_dev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/xport/rdma/rd_xport_rdma_priv.h"

static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP:
		return "PORT_NOP";
	case IBV_PORT_DOWN:
		return "PORT_DOWN";
	case IBV_PORT_INIT:
		return "PORT_INIT";
	case IBV_PORT_ARMED:
		return "PORT_ARMED";
	case IBV_PORT_ACTIVE:
		return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "PORT_ACTIVE_DEFER";
	}
	return "PORT_UNKNOWN";
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256:
		return 256;
	case IBV_MTU_512:
		return 512;
	case IBV_MTU_1024:
		return 1024;
	case IBV_MTU_2048:
		return 2048;
	case IBV_MTU_4096:
		return 4096;
	}
	return 0;
}

static const char *gid_type_str(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown";
}

static void gid_fill(struct rd_gid_info *g, const struct ibv_gid_entry *e)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const uint8_t *raw = e->gid.raw;

	g->index = e->gid_index;
	g->type = gid_type_str(e->gid_type);
	inet_ntop(AF_INET6, raw, g->gid, sizeof(g->gid));
	g->netdev[0] = '\0';
	g->ip[0] = '\0';
	if (e->ndev_ifindex) {
		char name[IF_NAMESIZE];

		if (if_indextoname(e->ndev_ifindex, name))
			snprintf(g->netdev, sizeof(g->netdev), "%s", name);
	}
	if (e->gid_type == IBV_GID_TYPE_IB)
		return;
	/* RoCE GIDs carry the interface address: v4-mapped or a plain v6. */
	if (!memcmp(raw, v4mapped, sizeof(v4mapped)))
		inet_ntop(AF_INET, raw + 12, g->ip, sizeof(g->ip));
	else
		inet_ntop(AF_INET6, raw, g->ip, sizeof(g->ip));
}

static int query_port(struct ibv_context *ctx, unsigned port, struct rd_port_info *p,
		      struct rd_err *err, const char *dev)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry *ents = NULL;
	ssize_t n;
	int i, ret = 0;

	memset(p, 0, sizeof(*p));
	p->port = port;
	if (ibv_query_port(ctx, port, &pa)) {
		ret = rd_err_set(err, RD_ENODEV, errno, "%s port %u: ibv_query_port failed", dev,
				 port);
		goto out;
	}
	p->state = port_state_str(pa.state);
	p->is_roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	p->link_layer = p->is_roce ? "Ethernet" : "InfiniBand";
	p->active_mtu = mtu_bytes(pa.active_mtu);
	p->max_mtu = mtu_bytes(pa.max_mtu);

	if (pa.gid_tbl_len <= 0)
		goto out;
	ents = calloc((size_t)pa.gid_tbl_len, sizeof(*ents));
	if (!ents) {
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "%s port %u: GID table", dev, port);
		goto out;
	}
	/* The table call returns valid entries of all ports; keep ours. */
	n = ibv_query_gid_table(ctx, ents, (size_t)pa.gid_tbl_len, 0);
	if (n < 0) {
		/* Older kernels: fall back to the per-index query. */
		for (i = 0; i < pa.gid_tbl_len && p->ngids < RD_DEV_MAX_GIDS; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
				continue;
			gid_fill(&p->gids[p->ngids++], &e);
		}
		goto out;
	}
	for (i = 0; i < n && p->ngids < RD_DEV_MAX_GIDS; i++) {
		if (ents[i].port_num != port)
			continue;
		gid_fill(&p->gids[p->ngids++], &ents[i]);
	}
out:
	free(ents);
	return ret;
}

const char *rd_dev_none_hint(void)
{
	return "no RDMA device found (ibv_get_device_list() returned none).\n"
	       "  Check: `ibv_devices` or `rdma link show` should list a device, and\n"
	       "  /sys/class/infiniband/ should not be empty.\n"
	       "  Real hardware: load its driver (e.g. mlx5_ib, irdma, bnxt_re) and\n"
	       "  install rdma-core and ibverbs-providers.\n"
	       "  No RDMA NIC: Soft-RoCE turns an Ethernet interface into a RoCE device:\n"
	       "    modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0";
}

int rd_devlist_query(struct rd_devlist **out)
{
	struct ibv_device **list = NULL;
	struct rd_devlist *l;
	int n = 0, i, ret = 0;

	l = calloc(1, sizeof(*l));
	*out = l;
	if (!l)
		return -RD_ENOMEM;
	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		ret = rd_err_set(&l->err, RD_ENODEV, 0, "%s", rd_dev_none_hint());
		goto out;
	}
	l->devs = calloc((size_t)n, sizeof(*l->devs));
	if (!l->devs) {
		ret = rd_err_set(&l->err, RD_ENOMEM, ENOMEM, "device list");
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct rd_dev_info *d = &l->devs[l->ndevs];
		struct ibv_device_attr da;
		struct ibv_context *ctx;
		uint64_t guid;
		unsigned port;

		snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			ret = rd_err_set(&l->err, RD_ENODEV, errno,
					 "cannot open RDMA device %s (permissions on /dev/infiniband?)",
					 d->name);
			goto out;
		}
		if (ibv_query_device(ctx, &da)) {
			ret = rd_err_set(&l->err, RD_ENODEV, errno, "%s: ibv_query_device failed",
					 d->name);
			ibv_close_device(ctx);
			goto out;
		}
		guid = be64toh(ibv_get_device_guid(list[i]));
		snprintf(d->node_guid, sizeof(d->node_guid), "%04x:%04x:%04x:%04x",
			 (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
			 (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
		snprintf(d->fw_ver, sizeof(d->fw_ver), "%s", da.fw_ver);
		for (port = 1; port <= da.phys_port_cnt && d->nports < RD_DEV_MAX_PORTS; port++) {
			ret = query_port(ctx, port, &d->ports[d->nports], &l->err, d->name);
			if (ret)
				break;
			d->nports++;
		}
		ibv_close_device(ctx);
		if (ret)
			goto out;
		l->ndevs++;
	}
out:
	if (list)
		ibv_free_device_list(list);
	return ret;
}

void rd_devlist_free(struct rd_devlist *l)
{
	if (!l)
		return;
	free(l->devs);
	free(l);
}

static uint64_t rlim_bytes(rlim_t v)
{
	return v == RLIM_INFINITY ? UINT64_MAX : (uint64_t)v;
}

/* CAP_IPC_LOCK (bit 14) in the effective set lets a process lock any amount. */
static int has_cap_ipc_lock(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long caps = 0;
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found && (caps & (1ull << 14));
}

int rd_memlock_query(struct rd_memlock *m)
{
	struct rlimit rl;

	memset(m, 0, sizeof(*m));
	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return -RD_ESYS;
	m->soft = rlim_bytes(rl.rlim_cur);
	m->hard = rlim_bytes(rl.rlim_max);
	m->cap_ipc_lock = has_cap_ipc_lock();
	return 0;
}

int rd_memlock_enough(const struct rd_memlock *m, uint64_t need, char *msg, size_t msglen)
{
	if (m->cap_ipc_lock || m->soft == UINT64_MAX || m->soft >= need) {
		if (msglen)
			msg[0] = '\0';
		return 1;
	}
	snprintf(msg, msglen,
		 "the locked-memory limit is %" PRIu64 " KiB but rdcp needs about %" PRIu64
		 " KiB to register its buffers; raise the locked-memory limit (ulimit -l %" PRIu64
		 " or unlimited; for a service, LimitMEMLOCK=infinity; permanently in "
		 "/etc/security/limits.conf: '* - memlock unlimited')",
		 m->soft / 1024, (need + 1023) / 1024, (need + 1023) / 1024);
	return 0;
}

int rd_rdma_devices_has(const char *list, const char *dev)
{
	size_t n = strlen(dev);
	const char *p = list;

	if (!list || !*list)
		return 1;
	while (*p) {
		if (!strncmp(p, dev, n) && (p[n] == ',' || !p[n]))
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return 0;
}

unsigned rd_rdma_device_count(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	return list && n > 0 ? (unsigned)n : 0;
}

/*
 * librdmacm opens a device's context the first time an id needs it and
 * keeps it until exit. A listener on every address has none until its
 * first connection request: out of file descriptors then (issue 27 item
 * 2), librdmacm cannot open the device, drops the request before the
 * listener hears of it, and the client is told "refused". Opened at
 * listen time, a request needs no new descriptor to come through, and the
 * daemon can turn it away as busy and say why.
 */
void rd_rdma_hold_devices(void)
{
	struct ibv_context **l = rdma_get_devices(NULL);

	if (l)
		rdma_free_devices(l);
}
