/* SPDX-License-Identifier: MIT */
/*
 * Readiness and status for systemd's Type=notify services: one datagram
 * of "KEY=VALUE\n" lines to the AF_UNIX socket named by $NOTIFY_SOCKET (a
 * path, or "@name" for the abstract namespace), sent by libsystemd's
 * sd_notify(3), with errors that name the socket.
 */
#ifndef RDCP_SDNOTIFY_RD_SD_NOTIFY_H
#define RDCP_SDNOTIFY_RD_SD_NOTIFY_H

#include "lib/base/rd_err.h"

/*
 * Send STATE (e.g. "READY=1\nSTATUS=listening on port 18710") to the
 * socket in $NOTIFY_SOCKET. Returns 1 if $NOTIFY_SOCKET is unset or empty
 * (not started by systemd: nothing to do), 0 when sent, or a negative
 * RD_E* status with the reason (naming the socket) in *err.
 */
int rd_sd_notify(const char *state, struct rd_err *err);

#endif
