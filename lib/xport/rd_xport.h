/* SPDX-License-Identifier: MIT */
/*
 * The transport: one reliable connection with a credit-controlled control
 * channel and one-sided bulk writes. Every call below dispatches through
 * the connection's ops table (rd_xport_impl.h, private to lib/xport); the
 * RDMA implementation (rd_xport_rdma*.c: librdmacm + libibverbs, RC QP) is
 * the only place that knows verbs.
 *
 * Control messages are SEND/RECV into posted, registered buffers of
 * RD_CTRL_MAX bytes. The transport owns credits (see lib/proto/rd_proto.h):
 * it patches the credits field of every outgoing message, reads it from
 * every incoming one, swallows CREDIT messages and sends one itself when
 * enough receive buffers have been re-posted. rd_conn_send() never blocks:
 * it returns -RD_EAGAIN-style 1 when no credit or send buffer is free, and
 * the caller retries after rd_conn_poll(); so a side always keeps consuming
 * what arrives, and credits always flow.
 *
 * Bulk data: the receiver registers its pool with remote write (and only
 * the pool); the sender registers its buffers with local access only;
 * one protection domain per connection. rd_conn_write_send() posts an
 * unsignaled RDMA WRITE and then the signaled SEND of a control message;
 * RC ordering places the data before the message is delivered.
 */
#ifndef RDCP_XPORT_RD_XPORT_H
#define RDCP_XPORT_RD_XPORT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"

#define RD_XPORT_BUSY 1 /* rd_conn_send*: no credit/buffer now, retry later */

struct rd_conn;
struct rd_listener;
struct rd_conn_req;

struct rd_mr {
	void *addr;
	size_t len;
	uint32_t lkey, rkey; /* rail 0's (the only rail but over RDMA rails) */
	void *priv;
	/* RDMA over several rails (lib/proto/rd_proto.h section 1): the same
	 * memory registered on rails 1..nx as well */
	unsigned nx;
	uint32_t xlkey[RD_RAILS_MAX - 1], xrkey[RD_RAILS_MAX - 1];
	void *xpriv[RD_RAILS_MAX - 1];
};

/* Where a bulk write may land: the receiver's key for its slot on each of
 * its rails (k[0]: rail 0; n is 1 unless it runs over several rails). */
struct rd_rkeys {
	unsigned n;
	uint32_t k[RD_RAILS_MAX];
};

/* Called from rd_conn_poll() when a write_send's SEND completed: the
 * local data buffer identified by cookie may be reused. */
typedef void (*rd_conn_sent_fn)(void *ctx, uint64_t cookie);

/* Which transport (rdcp --transport, rdcpd --transport / "transport"). */
enum rd_transport {
	RD_XPORT_AUTO = 0, /* RDMA where the route reaches an RDMA device, else TCP */
	RD_XPORT_RDMA = 1,
	RD_XPORT_TCP = 2,
};

/* "auto", "rdma", "tcp" -> RD_XPORT_*; -1 if none of those. */
int rd_transport_parse(const char *s);
const char *rd_transport_name(int t);

struct rd_conn_opts {
	int transport;		/* enum rd_transport */
	unsigned ctrl_depth;	/* receive buffers to post (default 64) */
	unsigned max_writes;	/* data writes in flight (default 64) */
	int timeout_ms;		/* connect/accept and peer-silence timeout */
	/*
	 * Server: how long rd_conn_accept() waits for the peer to complete
	 * the connection (RDMA: ESTABLISHED after the accept), 0: timeout_ms.
	 * rdcpd gives what is left of its auth timeout: a request that never
	 * completes holds its slot no longer than one that never proves who
	 * it is.
	 */
	int accept_timeout_ms;
	int verbose;		/* fill rd_conn_info() strings */
	int family;		/* AF_INET or AF_INET6 to force one (-4/-6); 0: any */
	/*
	 * Optional: told as a client's connection set-up passes each step
	 * ("cm opened", "address resolved", "route resolved", "verbs set
	 * up", "connected"), for rdcp -vv's start-up timings (issue 14).
	 */
	void (*phase)(void *ctx, const char *step);
	void *phase_ctx;
	/*
	 * Lanes (RC QPs of one session; lib/proto/rd_proto.h section 1).
	 * Client: how many to ask for (0: the device's default, 1 on
	 * Soft-RoCE). Server: the most it grants (0: RD_LANES_DEFAULT_CAP).
	 * TCP always runs one.
	 */
	unsigned lanes;
	/*
	 * Server over RDMA: read this listener for the extra lanes' JOIN
	 * requests while they connect (when no other thread reads it, as in
	 * the ssh-started rdcp). NULL: another thread keeps calling
	 * rd_listener_next(), which routes JOINs (the daemon).
	 */
	struct rd_listener *lanes_from;
	/*
	 * TCP: move each bulk payload (a WRITE's bytes, from TCP_BULK_MIN
	 * up) between socket and memory on a thread of the connection's
	 * own, one per direction, while the caller's thread goes on with
	 * the control messages (issue 12: with --threads >= 2 no thread
	 * carries the whole copy). 0: everything on the caller's thread.
	 * RDMA ignores it: the NIC moves payloads.
	 */
	int bulk_thread;
	/*
	 * RDMA rails (lib/proto/rd_proto.h section 1). Client: 1 keeps every
	 * lane on lane 0's device (by default the lanes follow the server's
	 * other devices when it names them). Server: 1 names none.
	 */
	int one_rail;
	/*
	 * Tests only (tests/hostile): a client's rd_conn_start_tls() takes
	 * the server's lane nonce but joins no extra lane; the caller sends
	 * JOINs itself, with rd_conn_lane_proof().
	 */
	int lanes_by_hand;
	/*
	 * Client over RDMA: the local devices its lanes may use, comma
	 * separated ("mlx5_0,mlx5_1"); NULL: any. Lane 0's route must go
	 * through one of them; an extra lane whose route to a rail of the
	 * server's goes through another runs beside lane 0 instead.
	 */
	const char *rdma_devices;
	/*
	 * Optional: set non-zero (from another thread) to make a handshake
	 * waiting on the connection (rd_conn_start_tls) give up at once with
	 * -RD_ESTOPPED, e.g. the losers once a listener found its one client.
	 */
	const volatile int *stop;
};

/* Is device dev in the comma-separated list (NULL: every device is)? */
int rd_rdma_devices_has(const char *list, const char *dev);

/* RDMA devices on this host (0: none, or no verbs library found them). */
unsigned rd_rdma_device_count(void);

/*
 * The memory one RDMA session registers at most: a pool of pool bytes for
 * chunks, and its control buffers (ctrl_depth receives and ctrl_depth + 4
 * sends of RD_CTRL_MAX; 0: the default depth), over rails devices
 * (1..RD_RAILS_MAX). Each further rail adds its own receives; the pool and
 * the sends are the same pages registered again. Returns the bytes pinned.
 * *charged (if not NULL) gets what the locked-memory limit is charged:
 * the kernel counts every registration, so rails x (pool + control).
 */
uint64_t rd_xport_session_pin(uint64_t pool, unsigned ctrl_depth, unsigned rails,
			      uint64_t *charged);

#define RD_LANES_DEFAULT_CAP 4

static inline void rd_conn_phase(const struct rd_conn_opts *o, const char *step)
{
	if (o && o->phase)
		o->phase(o->phase_ctx, step);
}

struct rd_conn_info {
	char peer[80];	   /* "host:port" as the user named it, or the address */
	char device[64];   /* local RDMA device, e.g. rxe0 */
	unsigned port;	   /* local port number */
	char link[32];	   /* "RoCE" or "InfiniBand" */
	char gid[48];	   /* local source GID */
	unsigned version;  /* negotiated protocol version */
	char transport[8]; /* "rdma", "tcp", "loop" */
	char note[256];	   /* set when auto chose TCP: why, in one line */
	uint8_t note_quiet; /* the note only says this host has no RDMA device */
	uint64_t reg_ctrl; /* bytes of control buffers registered (0 over TCP) */
	unsigned lanes;	   /* RC QPs the session runs over (1 over TCP) */
	unsigned lanes_asked; /* client: what it asked for */
	unsigned rails;	      /* devices those lanes run over here (0 or 1: one) */
	char rail_dev[RD_RAILS_MAX][32]; /* rail r's device name */
	char rails_note[160]; /* why the session stayed on one rail, if it might not
			       * have; the last lane that failed over */
	unsigned failovers;   /* lanes lost during the session while another went on */
};

/* RDMA WRITE bytes that went over lane i (0 past the last lane, or not RDMA). */
uint64_t rd_conn_lane_bytes(const struct rd_conn *c, unsigned i);
/*
 * Bytes this side sent (messages, and the data of RDMA WRITEs) and
 * received (messages) through c since it was made: rsync's "Total bytes
 * sent/received", counted at the interface (before TLS). Data the peer
 * wrote into our memory is not counted here (the engine counts it).
 */
void rd_conn_bytes(const struct rd_conn *c, uint64_t *sent, uint64_t *rcvd);
/* The rail (index into info.rail_dev) lane i runs over here; 0 if not RDMA. */
unsigned rd_conn_lane_rail(const struct rd_conn *c, unsigned i);

/* --- client --- */
int rd_conn_connect(struct rd_conn **out, const char *host, const char *port,
		    const struct rd_conn_opts *o, const struct rd_cm_req *req,
		    struct rd_cm_rep *rep, struct rd_err *err);

/*
 * Which transport a copy to host would use with auto: RD_XPORT_RDMA (dev
 * names the local device) or RD_XPORT_TCP (why says why not RDMA).
 */
int rd_xport_probe(const char *host, char *dev, size_t devlen, char *why, size_t whylen);

/* --- server --- */
/*
 * Listen on addr:port. addr NULL or "": every address of both families (one
 * IPv6 wildcard listener with v6only off; IPv4 wildcard alone where IPv6 is
 * unavailable). RD_XPORT_AUTO listens over RDMA and TCP on the same port
 * number (TCP only when no RDMA device is usable; see rd_listener_note());
 * port "0" picks one free for both.
 */
int rd_listener_open(struct rd_listener **out, const char *addr, const char *port, int backlog,
		     int transport, struct rd_err *err);
/* "" or one line on what auto left out (e.g. no RDMA device: TCP only). */
const char *rd_listener_note(const struct rd_listener *l);
/* Bound port (useful with port "0"). */
unsigned rd_listener_port(const struct rd_listener *l);
/* What it listens on, for the log: "[::]:18710 (IPv6 and IPv4)", "10.0.0.1:18710". */
const char *rd_listener_where(const struct rd_listener *l);
/*
 * Before a connection has sent its request (TCP: its first frame), nothing
 * it does may hold up the listener: the socket is accepted non-blocking and
 * its request read from the listener's own poll set, with a deadline.
 * gate, if set, is called as each connection is accepted, before anything
 * is read from it: it returns 0 to let it send its request, or an RD_REJ_*
 * reason to turn it away at once (hosts allow/deny, per-host caps).
 * pending_max bounds the connections waiting for their request (beyond it
 * the one waiting longest is dropped for the newcomer; 0: RD_LISTENER_PENDING);
 * hello_ms is how long each may take to send it (0: RD_LISTENER_HELLO_MS).
 * RDMA connection requests carry their request: the gate is not called for
 * them, and nothing waits.
 */
#define RD_LISTENER_PENDING  64
#define RD_LISTENER_HELLO_MS 5000
struct sockaddr;
struct rd_listener_pre {
	int (*gate)(void *ctx, const struct sockaddr *sa, const char *peer);
	void *ctx;
	unsigned pending_max;
	int hello_ms;
};
void rd_listener_set_pre(struct rd_listener *l, const struct rd_listener_pre *p);
/* Connections from sa's address (port ignored; IPv4 and IPv4-mapped IPv6
 * are the same) that wait to send their request. */
unsigned rd_listener_pending_from(const struct rd_listener *l, const struct sockaddr *sa);
/*
 * "" while the listener accepts as usual; else one line on why it cannot
 * (no file descriptor left: EMFILE, ENFILE; no kernel memory: ENOBUFS,
 * ENOMEM), set when that begins and cleared at the first connection
 * accepted normally again. Meanwhile it keeps listening, backs off (up to
 * a second between tries) and turns connections away as busy through a
 * descriptor it holds in reserve for that; rd_listener_next() never fails
 * for it. rd_listener_refused() counts the connections turned away so.
 */
const char *rd_listener_trouble(const struct rd_listener *l);
unsigned long rd_listener_refused(const struct rd_listener *l);

/*
 * Wait up to timeout_ms (-1 forever) for a connect request. Returns 0 with
 * *req set, 1 on timeout, or a negative status. The request's private data
 * is decoded into *creq; a request that does not decode is rejected here
 * (RD_REJ_BADREQ) and the call keeps waiting.
 */
int rd_listener_next(struct rd_listener *l, int timeout_ms, struct rd_conn_req **req,
		     struct rd_cm_req *creq);
const char *rd_conn_req_peer(const struct rd_conn_req *r);
/*
 * The address of a peer named "addr:port" or "[v6addr]:port" (as
 * rd_conn_req_peer() names it), IPv4 as IPv4-mapped IPv6: 0, or -RD_EUSAGE.
 */
int rd_peer_addr(const char *peer, uint8_t addr[16]);
/* Milliseconds since the connection behind r arrived (accepted), 0 if unknown. */
long rd_conn_req_age_ms(const struct rd_conn_req *r);
/* Accept (creates PD/CQ/QP on its own event channel). Frees req. */
int rd_conn_accept(struct rd_conn_req *req, const struct rd_conn_opts *o,
		   const struct rd_cm_rep *rep, struct rd_conn **out, struct rd_err *err);
/* Reject with a reason. Frees req. */
void rd_conn_reject(struct rd_conn_req *req, const struct rd_cm_rej *rej);
const struct rd_err *rd_listener_err(const struct rd_listener *l);
void rd_listener_close(struct rd_listener *l);

/* --- both --- */
const struct rd_err *rd_conn_err(const struct rd_conn *c);
/* The transport's info, as it is now (a filter such as TLS has none of its
 * own: lanes that joined or failed over show through it). */
const struct rd_conn_info *rd_conn_info(const struct rd_conn *c);
/* "rxe0, rxe1": the devices of i's rails, in rail order, into buf. */
const char *rd_conn_rail_names(const struct rd_conn_info *i, char *buf, size_t len);
/* The transport under c: "rdma", "tcp" or "loop". */
const char *rd_conn_transport(const struct rd_conn *c);
void rd_conn_set_sent_cb(struct rd_conn *c, rd_conn_sent_fn fn, void *ctx);
/*
 * Also wake rd_conn_poll() when fd (a non-blocking eventfd or pipe read
 * end) is readable; -1 removes it. poll drains it (reads it until empty) and
 * returns 0, so worker threads that write to it after queueing a result
 * wake the loop that owns c without ever touching c themselves. On a
 * filter (TLS) it goes to the transport beneath.
 */
void rd_conn_set_wake_fd(struct rd_conn *c, int fd);

/* Register memory: remote_write only for the receive pool. */
int rd_conn_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr);
void rd_conn_dereg(struct rd_conn *c, struct rd_mr *mr);

/*
 * Send one encoded control message (header included; credits patched
 * here). Returns 0, RD_XPORT_BUSY, or a negative status.
 */
int rd_conn_send(struct rd_conn *c, const void *msg, size_t len);
/* Can a message be sent right now? */
int rd_conn_can_send(const struct rd_conn *c);
/*
 * RDMA WRITE len bytes at mr->addr + off to raddr (with the key of the
 * receiver's rail the transport picks from rk), then send msg. cookie
 * comes back through the sent callback once the local buffer is free
 * again. Returns 0, RD_XPORT_BUSY, or a negative status.
 */
int rd_conn_write_send(struct rd_conn *c, const struct rd_mr *mr, size_t off, size_t len,
		       uint64_t raddr, const struct rd_rkeys *rk, const void *msg, size_t msglen,
		       uint64_t cookie);

/*
 * Wait up to timeout_ms for progress (a message arriving, a send
 * completing) and process completions. Returns 0 if something happened,
 * -RD_ETIMEOUT after timeout_ms of silence from the peer, or a negative
 * status (connection lost, completion error) with a plain explanation.
 * timeout_ms = 0 polls without waiting.
 */
int rd_conn_poll(struct rd_conn *c, int timeout_ms);

/*
 * Next received message, if any: returns 1 with msg and len pointing into a
 * receive buffer valid until rd_conn_recv_done(), 0 if none is waiting.
 * CREDIT messages never come out here.
 */
int rd_conn_recv(struct rd_conn *c, const uint8_t **msg, size_t *len);
/* Re-post the buffer of the last rd_conn_recv() message. */
int rd_conn_recv_done(struct rd_conn *c);

/* Wait until every posted send completed (the peer's NIC has it). */
int rd_conn_flush(struct rd_conn *c, int timeout_ms);

/* Orderly disconnect (best effort) and free everything. Accepts NULL. */
void rd_conn_close(struct rd_conn *c);

/*
 * Start TLS on *c (section 4 of lib/proto/rd_proto.h): run the TLS 1.3
 * handshake within timeout_ms, then put the TLS layer on top, so that
 * every message sent or received through *c is sealed. On success *c is
 * the TLS connection (closing it closes the one below). On failure *c is
 * unchanged (still to be closed by the caller) and err says why: -RD_EAUTH
 * (refused secret, certificate), -RD_ETIMEOUT, -RD_EPROTO, ...
 */
struct rd_tls;
struct rd_tls_cfg;
/*
 * The proof a JOIN of lane `lane` of session sid from the client's rail
 * `rail` carries (lib/proto/rd_proto.h section 1, Lane proofs), on c after
 * rd_conn_start_tls(): what the client side computes. For tests that play
 * the client's lanes by hand (rd_conn_opts.lanes_by_hand).
 */
int rd_conn_lane_proof(struct rd_conn *c, uint64_t sid, unsigned lane, unsigned rail,
		       uint8_t out[RD_LANE_PROOF_LEN]);
int rd_conn_start_tls(struct rd_conn **c, const struct rd_tls_cfg *cfg, int timeout_ms,
		      struct rd_err *err);
/* The TLS session of c (peer identity, exporter), or NULL without TLS. */
struct rd_tls *rd_conn_tls(const struct rd_conn *c);

#endif
