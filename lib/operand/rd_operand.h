/* SPDX-License-Identifier: MIT */
/*
 * Command-line operands, scp's and rsync's forms:
 *   path                         local (also any path with a '/' before its first ':')
 *   [user@]host:path             remote, started over ssh
 *   [user@][v6addr]:path         remote, IPv6 literal
 *   [user@]host::module/path     daemon (user: who to authenticate as)
 *   rdcp://[user@]host[:port]/module/path  daemon, explicit port
 */
#ifndef RDCP_OPERAND_RD_OPERAND_H
#define RDCP_OPERAND_RD_OPERAND_H

#include <stddef.h>

#include "lib/base/rd_err.h"

#define RD_OP_HOST_MAX 256
#define RD_OP_USER_MAX 64

enum rd_op_kind { RD_OP_LOCAL = 1, RD_OP_SSH = 2, RD_OP_DAEMON = 3 };

struct rd_operand {
	enum rd_op_kind kind;
	char user[RD_OP_USER_MAX]; /* "" if none */
	char host[RD_OP_HOST_MAX]; /* without brackets */
	char port[8];		   /* "" = default */
	const char *path;	   /* points into the argument; module/path for daemons */
};

/* Parse one operand. Returns 0 or -RD_EUSAGE naming the operand. */
int rd_operand_parse(struct rd_operand *op, const char *arg, struct rd_err *err);

/*
 * Normalize a daemon path ("module/dir//x/./y/" -> "module/dir/x/y"):
 * empty and "." components dropped, ".." refused. Returns 0 or -RD_EUSAGE.
 */
int rd_operand_normalize(const char *in, char *out, size_t cap, struct rd_err *err);

/* Same remote endpoint (kind, user, host, port)? */
int rd_operand_same_remote(const struct rd_operand *a, const struct rd_operand *b);

#endif
