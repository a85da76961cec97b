// SPDX-License-Identifier: MIT
/*
 * RDMA transport: connection ids whose port is down are retired, not
 * destroyed (issue 27 item 18).
 *
 * Destroying a connected cm_id, disconnecting it or rejecting a request
 * makes the kernel's CM send a MAD (DREQ, REJ) on the port's GSI QP
 * (QP1). On Soft-RoCE (rdma_rxe, Linux 6.1) a MAD that cannot leave
 * because the link is down completes in error: rxe moves QP1 to the error
 * state, the MAD layer moves it back to RTS, but that only restarts its
 * send side; its receive side stays in error and rxe drops every MAD that
 * arrives from then on (before its rcvd_pkts counter). The host's CM is
 * deaf, for this process and every other, until the device is made again:
 * each connection request times out ("no answer over RDMA"). What was
 * seen in the rig: the link of a daemon cut mid-push, the session's sends
 * fail ("local QP operation error"), its close sends a DREQ into the dead
 * link, and after the link is back the UDP datagrams of every request
 * reach the host (/proc/net/snmp) but never rxe.
 *
 * So an id whose port is not ACTIVE is handed here instead: its QP is gone
 * already (destroying a QP sends nothing), the id moves to one event
 * channel of the process and waits until its port is ACTIVE again; a
 * reaper thread then destroys it (its DREQ then tells the peer at once
 * that the connection is over). A link that never comes back keeps one
 * small kernel object per connection, until the process ends.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rdma/rd_xport_rdma_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#define REAP_MS 200 /* how often the reaper looks at the ports */

struct retired {
	struct rdma_cm_id *id;
	struct retired *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct rdma_event_channel *grave; /* the retired ids' events */
static struct retired *list;
static unsigned nretired;
static int reaping; /* a reaper thread runs */

int rd_rdma_port_up(const struct rdma_cm_id *id)
{
	struct ibv_port_attr pa;

	if (!id || !id->verbs || !id->port_num)
		return 1; /* bound to no device: nothing goes out for it */
	if (ibv_query_port(id->verbs, id->port_num, &pa))
		return 1; /* unknown: as before */
	return pa.state == IBV_PORT_ACTIVE;
}

/* Ack whatever arrived for retired ids (a DREQ from the peer, a timewait). */
static void drain_locked(void)
{
	struct rdma_cm_event *ev;

	while (grave && !rdma_get_cm_event(grave, &ev))
		rdma_ack_cm_event(ev);
}

/* Destroy the retired ids whose port is up again; 1 if any remain. */
static int sweep(void)
{
	struct retired **pp, *r;
	int left;

	pthread_mutex_lock(&mu);
	drain_locked();
	pp = &list;
	while ((r = *pp)) {
		if (!rd_rdma_port_up(r->id)) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		rdma_destroy_id(r->id);
		nretired--;
		free(r);
	}
	left = list != NULL;
	if (!left)
		reaping = 0;
	pthread_mutex_unlock(&mu);
	return left;
}

static void *reaper(void *arg)
{
	struct pollfd p = {.fd = -1, .events = POLLIN};

	(void)arg;
	pthread_mutex_lock(&mu);
	p.fd = grave->fd;
	pthread_mutex_unlock(&mu);
	do
		poll(&p, 1, REAP_MS);
	while (sweep());
	return NULL;
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void rd_rdma_retire_id(struct rdma_cm_id *id)
{
	struct retired *r;
	pthread_attr_t a;
	pthread_t th;

	if (!id)
		return;
	if (rd_rdma_port_up(id)) {
		rdma_destroy_id(id);
		return;
	}
	r = calloc(1, sizeof(*r));
	pthread_mutex_lock(&mu);
	if (!grave) {
		grave = rdma_create_event_channel();
		if (grave && nonblock(grave->fd)) {
			rdma_destroy_event_channel(grave);
			grave = NULL;
		}
	}
	if (!r || !grave || rdma_migrate_id(id, grave)) {
		/* Nowhere to keep it: destroyed now after all (its channel goes). */
		pthread_mutex_unlock(&mu);
		free(r);
		rdma_destroy_id(id);
		return;
	}
	id->context = NULL;
	r->id = id;
	r->next = list;
	list = r;
	nretired++;
	if (!reaping && !pthread_attr_init(&a)) {
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		reaping = !pthread_create(&th, &a, reaper, NULL);
		pthread_attr_destroy(&a);
	}
	pthread_mutex_unlock(&mu);
}
