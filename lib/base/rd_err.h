/* SPDX-License-Identifier: MIT */
/*
 * rdcp's one error convention.
 *
 * Every fallible function in lib/ returns an int: 0 on success, or a
 * negative RD_E* status. The human-readable reason (with errno text and the
 * thing it concerns: path, peer, device, option) is stored on a struct
 * rd_err owned by the object the function works on. lib/ never prints and
 * never exits; cmd/ turns the status into an exit code and prints the
 * message.
 */
#ifndef RDCP_BASE_RD_ERR_H
#define RDCP_BASE_RD_ERR_H

#include <stdarg.h>
#include <stddef.h>

#define RD_ERR_MSG_MAX 1024

enum rd_status {
	RD_OK = 0,
	RD_EUSAGE = 1,	   /* bad option or operand */
	RD_ESYS = 2,	   /* local I/O or system call failed */
	RD_ENODEV = 3,	   /* no usable RDMA device */
	RD_ECONN = 4,	   /* could not connect / connection lost */
	RD_EPROTO = 5,	   /* peer broke the protocol */
	RD_EVERSION = 6,   /* no common protocol version */
	RD_EREMOTE = 7,	   /* peer reported an error */
	RD_EPARTIAL = 8,   /* some files failed, the rest were copied */
	RD_ENOMEM = 9,	   /* allocation or registration failed */
	RD_EAUTH = 10,	   /* authentication refused */
	RD_ENOENT = 11,	   /* no such file, module or path */
	RD_EPERM = 12,	   /* permission denied / read-only */
	RD_ENOSPC = 13,	   /* no space left on destination */
	RD_ECORRUPT = 14,  /* data failed verification too often */
	RD_ETIMEOUT = 15,  /* peer went silent */
	RD_EMEMLOCK = 16,  /* locked-memory limit too low */
	RD_ESTOPPED = 17,  /* stopped: a signal, or the server shutting down */
	RD_EVANISHED = 18, /* a source file vanished while the tree was walked */
	RD_EBUSY = 19,	   /* the server is at a limit for now: try again later */
	RD_STATUS_MAX
};

struct rd_err {
	int status;		  /* last RD_E* status, 0 if none */
	int sys_errno;		  /* errno that caused it, 0 if none */
	char msg[RD_ERR_MSG_MAX]; /* complete, printable sentence */
};

/* Reset to "no error". Accepts NULL. */
void rd_err_clear(struct rd_err *e);

/*
 * Record an error and return -status, so callers can write
 *	return rd_err_set(&x->err, RD_ESYS, errno, "open %s", path);
 * If errnum is non-zero, ": <strerror>" is appended. Accepts e == NULL.
 */
int rd_err_set(struct rd_err *e, int status, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int rd_err_vset(struct rd_err *e, int status, int errnum, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* Copy one error into another (e.g. from a sub-object to its owner). */
int rd_err_copy(struct rd_err *dst, const struct rd_err *src);

/* Prefix the existing message: "<prefix>: <old message>". */
void rd_err_prefix(struct rd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Short stable name of a status ("usage", "connection", ...). */
const char *rd_status_name(int status);

#endif
