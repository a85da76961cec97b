/* SPDX-License-Identifier: MIT */
/* rdcp_evil's peers before authentication (rdcp_evil_preauth.c). */
#ifndef RDCP_TESTS_HOSTILE_RDCP_EVIL_PREAUTH_H
#define RDCP_TESTS_HOSTILE_RDCP_EVIL_PREAUTH_H

#define RDCP_EVIL_PREAUTH_USAGE                                                    \
	"       rdcp_evil silent HOST PORT SECONDS PER_SRC SRC[,SRC...] [again]\n" \
	"       rdcp_evil hello HOST PORT garbage|badver|abort|silent [tcp|rdma]\n"

/* Run "silent" or "hello": their exit status, or -1 if argv is neither. */
int rdcp_evil_preauth(int argc, char **argv);

#endif
