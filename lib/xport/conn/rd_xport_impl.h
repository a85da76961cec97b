/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/xport: the seam every transport plugs into.
 *
 * A connection is a struct rd_conn head followed by the transport's own
 * state (the head is the first member, so a transport casts). Every public
 * rd_conn_*() call in rd_xport.h dispatches through c->ops; nothing above
 * lib/xport sees a transport's types.
 *
 * Two layers, in the manner of curl's connection filters:
 *
 *  - A transport (RDMA, TCP, loopback) moves control messages and bulk
 *    writes. The credit machinery is the same for all of them and lives in
 *    rd_xport_credit.c (the rd_xc_* helpers below); a transport supplies only the
 *    three lower hooks (can_xmit, xmit, repost) and its own poll, flush,
 *    reg/dereg and close, and points the remaining public ops at the
 *    rd_xc_* functions.
 *
 *  - A filter (e.g. TLS on the control channel) is a connection whose
 *    ops transform and forward to c->lower with the public rd_conn_*()
 *    calls; it leaves the lower hooks NULL. rd_conn_wrap() puts one on top
 *    of an existing connection; closing the filter closes what it wraps.
 */
#ifndef RDCP_XPORT_RD_XPORT_IMPL_H
#define RDCP_XPORT_RD_XPORT_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/xport/rd_xport.h"

/* One bulk write that travels ahead of a control message. */
struct rd_xwrite {
	const struct rd_mr *mr;
	size_t off, len;
	uint64_t raddr;
	const struct rd_rkeys *rk;
	uint64_t cookie;
};

/* The proof of lane `lane` joining from the client's rail `rail`: 0 or a
 * negative status. */
typedef int (*rd_lane_proof_fn)(void *ctx, uint64_t sid, unsigned lane, unsigned rail,
				uint8_t out[RD_LANE_PROOF_LEN]);

struct rd_conn_ops {
	const char *name; /* "rdma", "tcp", "loop", or a filter's name */

	/* --- the public operations (rd_xport.h) --- */
	int (*poll)(struct rd_conn *c, int timeout_ms);
	int (*send)(struct rd_conn *c, const void *msg, size_t len);
	int (*can_send)(const struct rd_conn *c);
	int (*write_send)(struct rd_conn *c, const struct rd_xwrite *w, const void *msg,
			  size_t msglen);
	int (*recv)(struct rd_conn *c, const uint8_t **msg, size_t *len);
	int (*recv_done)(struct rd_conn *c);
	int (*reg)(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr);
	void (*dereg)(struct rd_conn *c, struct rd_mr *mr);
	int (*flush)(struct rd_conn *c, int timeout_ms);
	void (*close)(struct rd_conn *c);

	/*
	 * Optional (RDMA): the server's TLS handshake authenticated the peer;
	 * set up what was held back until then (the control buffers beyond
	 * RD_XC_PREAUTH_DEPTH). Negative status on failure.
	 */
	int (*authenticated)(struct rd_conn *c);
	/*
	 * Optional (RDMA): the lanes agreed in the connect exchange, and,
	 * after TLS, bring up the extra ones (connect or take lanes
	 * 1..lanes-1), each JOIN with the proof `proof` computes for its lane
	 * and the client's rail (lib/proto/rd_proto.h section 1, Lane proofs).
	 */
	unsigned (*lanes)(const struct rd_conn *c);
	int (*join_lanes)(struct rd_conn *c, rd_lane_proof_fn proof, void *ctx, int timeout_ms);
	uint64_t (*lane_bytes)(const struct rd_conn *c, unsigned i);
	unsigned (*lane_rail)(const struct rd_conn *c, unsigned i);
	/*
	 * Optional (RDMA): the rails exchange inside TLS, before join_lanes.
	 * rails_out: the server's RAILS message to send (1 with *m filled),
	 * or 0 if none is due. rails_in: 1 if the client waits for one, then
	 * called again with the message (m not NULL) to take it.
	 */
	int (*rails_out)(struct rd_conn *c, struct rd_msg_rails *m);
	int (*rails_in)(struct rd_conn *c, const struct rd_msg_rails *m);

	/* --- lower hooks, used by the rd_xc_* credit layer only --- */
	/* Is a send buffer (or socket room) free for one more message? */
	int (*can_xmit)(const struct rd_conn *c);
	/* Put one control message (credits already patched) on the wire,
	 * preceded by the bulk write w if not NULL. */
	int (*xmit)(struct rd_conn *c, const uint8_t *msg, size_t len, const struct rd_xwrite *w);
	/* Receive buffer idx is free again. */
	int (*repost)(struct rd_conn *c, unsigned idx);
};

struct rd_conn {
	const struct rd_conn_ops *ops;
	struct rd_conn *lower; /* a filter's wrapped connection, else NULL */

	/* control receive buffers: rslots x RD_CTRL_MAX; rdepth posted per
	 * queue (rslots = rdepth x RD_RAILS_MAX with rails_ok before init) */
	unsigned rdepth, rslots;
	int rails_ok;
	uint8_t *rbuf;
	unsigned *rq; /* completed receives, in arrival order */
	uint32_t *rqlen;
	unsigned rq_head, rq_count;
	int rq_cur; /* buffer handed out by rd_conn_recv, or -1 */

	/* credits (lib/proto/rd_proto.h) */
	int credits;	     /* messages we may still send */
	unsigned peer_depth; /* the peer's posted receives */
	unsigned to_return;  /* re-posted receives not yet announced */
	uint64_t recv_seen;

	unsigned max_writes, writes_inflight;
	int timeout_ms;
	struct timespec last_rx;

	rd_conn_sent_fn sent_fn;
	void *sent_ctx;
	int wake_fd; /* rd_conn_set_wake_fd() + 1: 0 = none (calloc'd heads) */

	int established, disconnected, dead;
	/* what the layers above sent and received through this connection (rd_conn_bytes) */
	uint64_t bytes_sent, bytes_rcvd;
	const volatile int *stop; /* rd_conn_opts.stop */
	struct rd_conn_info info;
	struct rd_err err;
};

/* --- the listening side --- */
struct rd_listener_ops {
	const char *name;
	int (*next)(struct rd_listener *l, int timeout_ms, struct rd_conn_req **req,
		    struct rd_cm_req *creq);
	int (*accept)(struct rd_conn_req *req, const struct rd_conn_opts *o,
		      const struct rd_cm_rep *rep, struct rd_conn **out, struct rd_err *err);
	void (*reject)(struct rd_conn_req *req, const struct rd_cm_rej *rej);
	void (*close)(struct rd_listener *l);
	/* readable when a request may be waiting (to wait on several) */
	int (*fd)(const struct rd_listener *l);
	/*
	 * Optional (NULL: nothing waits before a request, as over RDMA):
	 * rd_listener_set_pre(), rd_listener_pending_from(),
	 * rd_listener_trouble(), rd_listener_refused(); due_ms: how soon next
	 * must be called even if fd stays quiet (a deadline, a back-off), -1:
	 * no need.
	 */
	void (*set_pre)(struct rd_listener *l, const struct rd_listener_pre *p);
	unsigned (*pending_from)(const struct rd_listener *l, const struct sockaddr *sa);
	const char *(*trouble)(const struct rd_listener *l);
	unsigned long (*refused)(const struct rd_listener *l);
	int (*due_ms)(const struct rd_listener *l);
};

struct rd_listener {
	const struct rd_listener_ops *ops;
	unsigned port;
	char where[96]; /* rd_listener_where() */
	struct rd_err err;
	char note[256];
};

struct rd_conn_req {
	const struct rd_listener_ops *ops;
	unsigned peer_depth;
	unsigned lanes; /* the client's wish */
	uint32_t flags; /* the client's RD_CMF_* */
	int wild;	/* the listener takes every address (rails may be named) */
	char peer[80];
	struct timespec t0; /* when the connection arrived; zero: unknown */
};

/*
 * One transport's entry points: rd_xport.c reaches a transport only
 * through its table (rd_xport_rdma in lib/xport/rdma/rd_xport_rdma.h,
 * rd_xport_tcp in lib/xport/tcp/rd_xport_tcp.h).
 */
struct rd_xport {
	const char *name;
	/*
	 * Connect; on failure *no_route says whether it failed before
	 * reaching the network (no device of this transport, or none whose
	 * route reaches host: a plain sentence in err). rdcp's auto mode then
	 * uses TCP.
	 */
	int (*connect)(struct rd_conn **out, const char *host, const char *port,
		       const struct rd_conn_opts *o, const struct rd_cm_req *req,
		       struct rd_cm_rep *rep, int *no_route, struct rd_err *err);
	int (*listen)(struct rd_listener **out, const char *addr, const char *port, int backlog,
		      struct rd_err *err);
	/* Optional (RDMA): does the route to host go through one of this
	 * transport's devices? 1 with the device name in dev, else 0 with
	 * the reason in why. */
	int (*probe)(const char *host, char *dev, size_t devlen, char *why, size_t whylen);
	/* Optional (RDMA): open every device now, for good (a listener). */
	void (*hold_devices)(void);
};

/* --- the credit layer shared by every transport (rd_xport_credit.c) --- */
#define RD_XC_DEFAULT_DEPTH   64
#define RD_XC_DEPTH_MAX	      1024
#define RD_XC_SEND_EXTRA      4 /* RDMA send buffers beyond the receive depth */
/*
 * An RDMA server registers this many receive and send buffers for a peer
 * that has not authenticated yet (a TLS handshake needs two or three each
 * way), whatever the depth it announces; the rest once TLS is done. A
 * peer that sends more before then waits (receiver not ready, retried).
 */
#define RD_XC_PREAUTH_DEPTH 8
/* Control buffers one RDMA rail registers for receive depth d: d receives,
 * d + RD_XC_SEND_EXTRA sends (rd_rdma_setup_verbs(), rd_xport_session_pin()). */
#define RD_XC_RAIL_CTRL_BYTES(d) ((uint64_t)(2 * (d) + RD_XC_SEND_EXTRA) * RD_CTRL_MAX)
#define RD_XC_DEFAULT_WRITES  64
#define RD_XC_DEFAULT_TIMEOUT 30000

/* Depths, timeout and the receive queue from o; buffers allocated. */
int rd_xc_init(struct rd_conn *c, const struct rd_conn_opts *o);
void rd_xc_fini(struct rd_conn *c);
static inline uint8_t *rd_xc_rbuf(const struct rd_conn *c, unsigned idx)
{
	return c->rbuf + (size_t)idx * RD_CTRL_MAX;
}
/* Mark c dead with a message; returns -status. */
int rd_xc_fail(struct rd_conn *c, int status, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A control message of len bytes arrived in receive buffer idx. */
int rd_xc_rx(struct rd_conn *c, unsigned idx, size_t len);
/* A write_send's message left: its data buffer may be reused. */
void rd_xc_sent(struct rd_conn *c, uint64_t cookie);
/* Send a CREDIT message if enough receive buffers wait to be announced. */
int rd_xc_maybe_credit(struct rd_conn *c);
/* -RD_ETIMEOUT (and c dead) after timeout_ms of silence from the peer. */
int rd_xc_check_silence(struct rd_conn *c);
/* Connection established: credits from the peer's depth, silence clock. */
void rd_xc_start(struct rd_conn *c, unsigned peer_depth, unsigned version);
long rd_xc_ms_since(const struct timespec *t);
/* The wake fd, or -1; rd_xc_wake_drain() empties it, 1 if it was readable. */
static inline int rd_xc_wake_fd(const struct rd_conn *c)
{
	return c->wake_fd - 1;
}
int rd_xc_wake_drain(struct rd_conn *c);

int rd_xc_send(struct rd_conn *c, const void *msg, size_t len);
int rd_xc_can_send(const struct rd_conn *c);
int rd_xc_write_send(struct rd_conn *c, const struct rd_xwrite *w, const void *msg,
		     size_t msglen);
int rd_xc_recv(struct rd_conn *c, const uint8_t **msg, size_t *len);
int rd_xc_recv_done(struct rd_conn *c);

/*
 * Put filter f (its ops set, the rest zero) on top of lower: f takes
 * lower's info and from then on owns it (closing f must close lower).
 */
void rd_conn_filter_init(struct rd_conn *f, const struct rd_conn_ops *ops, struct rd_conn *lower);

/* The server's accept data is usable: a version we speak, a depth. */
int rd_xc_check_rep(struct rd_conn *c, const struct rd_cm_rep *rep);

/* "host:port", with brackets around an IPv6 host. */
void rd_xc_peer_name(char *buf, size_t len, const char *host, const char *port);

#endif
