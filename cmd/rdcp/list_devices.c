// SPDX-License-Identifier: MIT
/* rdcp --list-devices: what RDMA this host has, in plain words. */
#include <inttypes.h>
#include <stdio.h>

#include "cmd/rdcp/rdcp.h"
#include "lib/xport/rd_xport_dev.h"

/* rdcp registers about this much: receive pool plus send buffers. */
#define RDCP_TYPICAL_LOCKED (128ull << 20)

static void print_memlock(FILE *out)
{
	struct rd_memlock m;
	char msg[512];

	if (rd_memlock_query(&m)) {
		fprintf(out, "locked-memory limit: unknown (getrlimit failed)\n");
		return;
	}
	if (m.soft == UINT64_MAX)
		fprintf(out, "locked-memory limit (ulimit -l): unlimited\n");
	else
		fprintf(out, "locked-memory limit (ulimit -l): %" PRIu64 " KiB%s\n", m.soft / 1024,
			m.cap_ipc_lock ? " (not enforced: process has CAP_IPC_LOCK)" : "");
	if (!rd_memlock_enough(&m, RDCP_TYPICAL_LOCKED, msg, sizeof(msg)))
		fprintf(out, "warning: %s\n", msg);
}

int rdcp_list_devices(void)
{
	struct rd_devlist *l = NULL;
	unsigned d, p, g;
	int ret;

	ret = rd_devlist_query(&l);
	if (ret) {
		fprintf(stderr, "rdcp: %s\n", l ? l->err.msg : "out of memory");
		print_memlock(stderr);
		rd_devlist_free(l);
		return RDCP_EXIT_NODEV;
	}
	for (d = 0; d < l->ndevs; d++) {
		const struct rd_dev_info *dev = &l->devs[d];

		printf("%s: node_guid %s fw %s\n", dev->name, dev->node_guid,
		       dev->fw_ver[0] ? dev->fw_ver : "-");
		for (p = 0; p < dev->nports; p++) {
			const struct rd_port_info *pi = &dev->ports[p];

			printf("  port %u: %s, link layer %s (%s), active MTU %u (max %u)\n",
			       pi->port, pi->state, pi->link_layer,
			       pi->is_roce ? "RoCE" : "InfiniBand", pi->active_mtu, pi->max_mtu);
			if (!pi->ngids)
				printf("    no GID entries\n");
			for (g = 0; g < pi->ngids; g++) {
				const struct rd_gid_info *gi = &pi->gids[g];

				printf("    gid[%u] %-39s %-7s", gi->index, gi->gid, gi->type);
				if (gi->netdev[0])
					printf(" netdev %s", gi->netdev);
				if (gi->ip[0])
					printf(" ip %s", gi->ip);
				printf("\n");
			}
		}
	}
	print_memlock(stdout);
	rd_devlist_free(l);
	return RDCP_EXIT_OK;
}
