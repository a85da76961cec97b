/* SPDX-License-Identifier: MIT */
/* Private to lib/session. */
#ifndef RDCP_SESSION_RD_SESSION_PRIV_H
#define RDCP_SESSION_RD_SESSION_PRIV_H

#include "lib/session/rd_session.h"
#include "lib/sink/rd_sink.h"

/* A local destination: confined to its parent, placed by its name. */
int rd_local_sink(const char *dest, unsigned flags, mode_t umask, struct rd_sink **sink,
		  struct rd_err *err);

#endif
