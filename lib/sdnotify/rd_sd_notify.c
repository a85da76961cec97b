// SPDX-License-Identifier: MIT
/*
 * sd_notify(3), the sender half. systemd accepts the message from the main
 * process (NotifyAccess=main, the default for Type=notify), so this is
 * called from rdcpd's main thread. One sendto() per message; the socket is
 * not kept open, as messages are rare (ready, stopping).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/sdnotify/rd_sd_notify.h"

int rd_sd_notify(const char *state, struct rd_err *err)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t salen;
	size_t plen, slen;
	ssize_t n;
	int fd, ret = 0;

	if (!path || !*path)
		return 1;
	plen = strlen(path);
	/* Absolute path, or '@' for the abstract namespace (no NUL at the end). */
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path) || plen < 2)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "NOTIFY_SOCKET '%.200s' is not an absolute path or @name", path);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, plen);
	if (path[0] == '@') {
		sa.sun_path[0] = '\0';
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
	} else {
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen + 1);
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rd_err_set(err, RD_ESYS, errno, "sd_notify: socket");
	slen = strlen(state);
	n = sendto(fd, state, slen, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	if (n < 0)
		ret = rd_err_set(err, RD_ESYS, errno, "sd_notify: send to %s", path);
	else if ((size_t)n != slen)
		ret = rd_err_set(err, RD_ESYS, 0, "sd_notify: short send to %s", path);
	close(fd);
	return ret;
}
