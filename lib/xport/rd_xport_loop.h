/* SPDX-License-Identifier: MIT */
/*
 * The loopback transport: both ends of one connection in this process, in
 * memory, each end used from its own thread (a local copy's two halves,
 * lib/session/rd_local.c; tests). A bulk write is
 * copied into the peer's registered region when it is sent (checked
 * against that region's key and bounds, like a NIC would), and the control
 * message behind it is queued for the peer, so the data is in place before
 * the message can be seen.
 *
 * A hook sees every message either end sends (CREDIT included) and may
 * pass it, drop it, delay it, hold it back behind the next one (reorder),
 * corrupt it or the payload written ahead of it, or cut the connection
 * there.
 */
#ifndef RDCP_XPORT_RD_XPORT_LOOP_H
#define RDCP_XPORT_RD_XPORT_LOOP_H

#include "lib/xport/rd_xport.h"

enum rd_loop_action {
	RD_LOOP_PASS = 0,
	RD_LOOP_DROP,  /* never delivered (its credit is lost with it) */
	RD_LOOP_DELAY, /* delivered ev->delay_ms later; later messages wait behind it */
	RD_LOOP_HOLD,  /* delivered right after the next message of the same end */
	RD_LOOP_CUT,   /* the connection breaks here: not delivered, both ends see it */
};

struct rd_loop_event {
	int side;	  /* 0: the end rd_loop_pair returned as *a, 1: *b */
	unsigned n;	  /* 1-based count of messages this end has sent */
	uint8_t type;	  /* message type (RD_MSG_*) */
	uint8_t *msg;	  /* the encoded message; the hook may change bytes */
	size_t len;
	uint8_t *data;	  /* the payload already written ahead of it, or NULL */
	size_t dlen;
	int delay_ms;	  /* for RD_LOOP_DELAY */
};

typedef enum rd_loop_action (*rd_loop_hook_fn)(void *ctx, struct rd_loop_event *ev);

/*
 * A connected pair. hook (may be NULL) is called with the pair's lock
 * held: it must not call back into either connection. Close each end with
 * rd_conn_close(); the pair goes with the last one.
 */
int rd_loop_pair(struct rd_conn **a, struct rd_conn **b, const struct rd_conn_opts *o,
		 rd_loop_hook_fn hook, void *ctx, struct rd_err *err);

/* How messages name the peer of end c (default "loopback peer N"). */
void rd_loop_name_peer(struct rd_conn *c, const char *name);

#endif
