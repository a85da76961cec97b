// SPDX-License-Identifier: MIT
/*
 * RDMA transport, rails (lib/proto/rd_proto.h section 1, Rails): the
 * server names one address of each of its other RDMA devices, sealed
 * inside TLS; the client connects its extra lanes to them. Which device a
 * lane runs over on each side is the route's choice; rd_xport_rdma.c
 * opens a rail (PD, CQ, SRQ) for each device a lane lands on.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rdma/rd_xport_rdma_lanes.h"
#include "lib/xport/rdma/rd_xport_rdma_priv.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

/* The family lane 0 runs over: AF_INET also for a v4-mapped IPv6 peer. */
static int lane0_family(const struct rd_rdma_conn *rc)
{
	const struct sockaddr *sa = rdma_get_local_addr(rc->id);
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;

	if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return AF_INET;
	return sa->sa_family;
}

/* An address worth naming: up, not loopback, not IPv6 link-local. */
static int usable(const struct ifaddrs *ifa, int family)
{
	const struct sockaddr_in6 *s6;

	if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family)
		return 0;
	if (!(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK))
		return 0;
	if (family != AF_INET6)
		return 1;
	s6 = (const struct sockaddr_in6 *)(const void *)ifa->ifa_addr;
	return !IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr);
}

/* The RDMA device that owns address sa, into dev; 0 if none does. */
static int device_of(struct rdma_event_channel *ech, const struct sockaddr *sa, char *dev,
		     size_t len)
{
	struct sockaddr_storage a;
	struct rdma_cm_id *id;
	int ok = 0;

	memset(&a, 0, sizeof(a));
	memcpy(&a, sa,
	       sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	if (rdma_create_id(ech, &id, NULL, RDMA_PS_TCP))
		return 0;
	if (!rdma_bind_addr(id, (struct sockaddr *)&a) && id->verbs) {
		snprintf(dev, len, "%s", ibv_get_device_name(id->verbs->device));
		ok = 1;
	}
	rdma_destroy_id(id);
	return ok;
}

static void put_addr(struct rd_rail_addr *ra, const struct sockaddr *sa)
{
	memset(ra, 0, sizeof(*ra));
	if (sa->sa_family == AF_INET) {
		ra->family = 4;
		memcpy(ra->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else {
		ra->family = 6;
		memcpy(ra->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

/*
 * Server: one address (of lane 0's family) for each RDMA device of this
 * host other than lane 0's, at most RD_RAILS_MAX - 1. Due only when
 * RAILS was agreed; then sent even when empty (the client waits for it).
 */
int rd_rdma_rails_out(struct rd_conn *c, struct rd_msg_rails *m)
{
	struct rd_rdma_conn *rc = (struct rd_rdma_conn *)c;
	char seen[RD_RAILS_MAX][32], dev[32];
	struct rdma_event_channel *ech;
	struct ifaddrs *ifs = NULL, *ifa;
	int family;
	unsigned i, n = 1;

	memset(m, 0, sizeof(*m));
	if (!rc->rails_on || !rc->reg)
		return 0;
	family = lane0_family(rc);
	snprintf(seen[0], sizeof(seen[0]), "%s", c->info.device);
	ech = rdma_create_event_channel();
	if (ech && !getifaddrs(&ifs)) {
		for (ifa = ifs; ifa && n < RD_RAILS_MAX; ifa = ifa->ifa_next) {
			if (!usable(ifa, family) ||
			    !device_of(ech, ifa->ifa_addr, dev, sizeof(dev)))
				continue;
			for (i = 0; i < n && strcmp(seen[i], dev); i++)
				;
			if (i < n)
				continue;
			snprintf(seen[n++], sizeof(seen[0]), "%s", dev);
			put_addr(&m->a[m->n++], ifa->ifa_addr);
		}
	}
	if (ifs)
		freeifaddrs(ifs);
	if (ech)
		rdma_destroy_event_channel(ech);
	return 1;
}

/*
 * Client: with m NULL, 1 if a RAILS message is due from the server; with
 * m, take it (only addresses of lane 0's family are used).
 */
int rd_rdma_rails_in(struct rd_conn *c, const struct rd_msg_rails *m)
{
	struct rd_rdma_conn *rc = (struct rd_rdma_conn *)c;
	unsigned i, want = rc->dst.ss_family == AF_INET ? 4 : 6;

	if (!m)
		return rc->rails_on && !rc->reg;
	memset(&rc->peer_rails, 0, sizeof(rc->peer_rails));
	for (i = 0; i < m->n && i < RD_RAILS_MAX - 1; i++)
		if (m->a[i].family == want)
			rc->peer_rails.a[rc->peer_rails.n++] = m->a[i];
	return 0;
}

int rd_rdma_lane_dst(struct rd_rdma_conn *rc, unsigned k, struct sockaddr_storage *dst)
{
	const struct rd_rail_addr *ra;
	unsigned n = rc->peer_rails.n, j;

	if (!rc->rails_on || !n)
		return 0;
	j = k % (n + 1);
	if (!j)
		return 0;
	ra = &rc->peer_rails.a[j - 1];
	memcpy(dst, &rc->dst, sizeof(*dst));
	if (ra->family == 4)
		memcpy(&((struct sockaddr_in *)(void *)dst)->sin_addr, ra->addr, 4);
	else
		memcpy(&((struct sockaddr_in6 *)(void *)dst)->sin6_addr, ra->addr, 16);
	return 1;
}
