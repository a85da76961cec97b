// SPDX-License-Identifier: MIT
#include "lib/base/rd_err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void rd_err_clear(struct rd_err *e)
{
	if (!e)
		return;
	e->status = 0;
	e->sys_errno = 0;
	e->msg[0] = '\0';
}

int rd_err_vset(struct rd_err *e, int status, int errnum, const char *fmt, va_list ap)
{
	size_t n;

	if (status < 0)
		status = -status;
	if (!e)
		return -status;
	e->status = status;
	e->sys_errno = errnum;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	n = strlen(e->msg);
	if (errnum && n < sizeof(e->msg) - 1)
		snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", strerror(errnum));
	return -status;
}

int rd_err_set(struct rd_err *e, int status, int errnum, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = rd_err_vset(e, status, errnum, fmt, ap);
	va_end(ap);
	return ret;
}

int rd_err_copy(struct rd_err *dst, const struct rd_err *src)
{
	if (!dst || !src || dst == src)
		return src ? -src->status : 0;
	*dst = *src;
	return -src->status;
}

void rd_err_prefix(struct rd_err *e, const char *fmt, ...)
{
	char old[RD_ERR_MSG_MAX];
	size_t n;
	va_list ap;

	if (!e)
		return;
	memcpy(old, e->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	if (old[0] && n < sizeof(e->msg) - 1)
		snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", old);
}

static const char *const status_names[RD_STATUS_MAX] = {
	[RD_OK] = "ok",
	[RD_EUSAGE] = "usage",
	[RD_ESYS] = "i/o",
	[RD_ENODEV] = "no rdma device",
	[RD_ECONN] = "connection",
	[RD_EPROTO] = "protocol",
	[RD_EVERSION] = "version mismatch",
	[RD_EREMOTE] = "remote error",
	[RD_EPARTIAL] = "partial transfer",
	[RD_ENOMEM] = "out of memory",
	[RD_EAUTH] = "authentication",
	[RD_ENOENT] = "not found",
	[RD_EPERM] = "permission denied",
	[RD_ENOSPC] = "no space",
	[RD_ECORRUPT] = "data corrupt",
	[RD_ETIMEOUT] = "timeout",
	[RD_EMEMLOCK] = "locked-memory limit",
	[RD_ESTOPPED] = "stopped",
	[RD_EVANISHED] = "vanished",
	[RD_EBUSY] = "server busy",
};

const char *rd_status_name(int status)
{
	if (status < 0)
		status = -status;
	if (status >= RD_STATUS_MAX || !status_names[status])
		return "unknown";
	return status_names[status];
}
