// SPDX-License-Identifier: MIT
/*
 * sd_notify(3) through libsystemd: rdcpd links it for the journal anyway
 * (cmd/rdcpd/log.c), so the protocol (path or abstract socket, the
 * credentials, whatever systemd adds to it) has one implementation, the
 * library's. systemd accepts the message from the main process
 * (NotifyAccess=main, the default for Type=notify), so this is called
 * from rdcpd's main thread.
 */
#include <errno.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "lib/sdnotify/rd_sd_notify.h"

int rd_sd_notify(const char *state, struct rd_err *err)
{
	const char *path = getenv("NOTIFY_SOCKET");
	int r;

	if (!path || !*path)
		return 1;
	r = sd_notify(0, state);
	if (r > 0)
		return 0;
	if (!r)
		return 1;
	if (r == -EINVAL)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "NOTIFY_SOCKET '%.200s' is not an absolute path or @name", path);
	return rd_err_set(err, RD_ESYS, -r, "sd_notify: send to %.200s", path);
}
