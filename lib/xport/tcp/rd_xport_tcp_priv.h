/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/xport: what the TCP listener (rd_xport_tcp_listen.c, the
 * top of TCP: it holds the entry table) uses of the TCP connection
 * (rd_xport_tcp.c), which calls nothing of the listener.
 */
#ifndef RDCP_XPORT_RD_XPORT_TCP_PRIV_H
#define RDCP_XPORT_RD_XPORT_TCP_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/xport/conn/rd_xport_impl.h"

/* A connection whose request (RD_TF_CM_REQ) arrived: its socket. */
struct rd_tcp_req {
	struct rd_conn_req r;
	int fd;
};

/* The listener (rd_xport_tcp_listen.c). */
int rd_tcp_listen(struct rd_listener **out, const char *addr, const char *port, int backlog,
		  struct rd_err *err);

/* rd_xport_tcp.connect (rd_xport_tcp.c). */
int rd_tcp_connect(struct rd_conn **out, const char *host, const char *port,
		   const struct rd_conn_opts *o, const struct rd_cm_req *req, struct rd_cm_rep *rep,
		   int *no_route, struct rd_err *err);
/* Accept a request (rd_xport_tcp.c): sends RD_TF_CM_REP, takes the socket. Frees req. */
int rd_tcp_accept(struct rd_conn_req *req, const struct rd_conn_opts *o,
		  const struct rd_cm_rep *rep, struct rd_conn **out, struct rd_err *err);

/* Socket buffers and TCP_NODELAY, as every rdcp TCP connection has them. */
void rd_tcp_tune(int fd);
/* "addr:port", "[v6addr]:port" */
void rd_tcp_addr_str(const struct sockaddr *sa, char *buf, size_t len);
/* One frame header (lib/proto/rd_proto.h section 4). */
void rd_tcp_frame_hdr(uint8_t *h, uint8_t kind, uint32_t len);
uint32_t rd_tcp_get32(const uint8_t *p);

#endif
