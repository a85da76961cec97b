/* SPDX-License-Identifier: MIT */
/*
 * rdcpd's transfer log lines: rsyncd.conf(5)'s "log format", the same
 * escapes with the same meaning, widths ("%-50n %8l %07p") and
 * apostrophes ("%'l": digit groups; "%''l": units of 1000; "%'''l":
 * units of 1024), plus three of rdcp's own (%k, %s, %x). Pure functions:
 * the daemon fills an item per entry and writes the line where its
 * configuration says (lib/daemon, cmd/rdcpd); lib/conf checks a format
 * when it reads one.
 *
 *	%a  the peer's address		%b  bytes moved for the entry
 *	%B  permission bits (rwxr-xr-x)	%c  bytes held already and kept after
 *	%f  path within the module	    comparing checksums (not moved)
 *	%G  gid				%h  the peer's host (its address:
 *	%i  itemize (e.g. >f, <f, cd)	    rdcpd looks up no names)
 *	%l  length of the file		%m  module name
 *	%M  mtime (YYYY/MM/DD-hh:mm:ss)	%n  path within the transfer
 *	%o  send, recv or del.		    ('/' after a directory)
 *	%p  rdcpd's process id		%P  module path
 *	%t  now (YYYY/MM/DD hh:mm:ss)	%u  authenticated user, or ""
 *	%U  uid				%%  a '%'
 *	%k  the check (digest) name	%s  the session number
 *	%x  the transport (rdma, tcp)
 *
 * Names are raw bytes from a peer or the disk: %f, %n, %u, %m are
 * escaped with rd_escape(), so a line holds no control character.
 */
#ifndef RDCP_XFERLOG_RD_XFERLOG_H
#define RDCP_XFERLOG_RD_XFERLOG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* rsyncd's default ("%t [%p] " is put before it in a log file, not here). */
#define RD_XFERLOG_DEFAULT_FORMAT "%o %h [%a] %m (%u) %f %l"
#define RD_XFERLOG_FORMAT_MAX	  1024 /* bytes of a format, NUL included */
#define RD_XFERLOG_LINE_MAX	  4096 /* a line is cut to this (NUL included) */

struct rd_xfer_item {
	const char *op;		 /* "send", "recv" or "del." */
	const char *addr;	 /* %a, %h */
	const char *module;	 /* %m */
	const char *module_path; /* %P */
	const char *user;	 /* %u; "" anonymous */
	const char *path;	 /* %f: raw bytes, plen of them */
	size_t plen;
	const char *name; /* %n: raw bytes, nlen of them */
	size_t nlen;
	char update; /* %i's first character: '<' sent, '>' received, 'c' made, '.' same */
	char ftype; /* %i's second: 'f' file, 'd' directory, 'L' symlink, 'D' device, 'S' special */
	uint32_t mode; /* st_mode */
	uint32_t uid, gid;
	uint64_t size, bytes, kept;
	int64_t mtime;
	long pid;
	time_t now;
	const char *checksum;  /* %k */
	const char *transport; /* %x */
	uint64_t session;      /* %s */
};

/*
 * Is fmt a format this version writes? 0, or -1 with why (len bytes)
 * naming the first escape it does not know or a dangling '%'.
 */
int rd_xferlog_check(const char *fmt, char *why, size_t len);

/* Does fmt use escape letter (e.g. 'i')? */
int rd_xferlog_uses(const char *fmt, char letter);

/*
 * Format one line (no newline) into out (cap bytes, cap > 0): always
 * NUL-terminated, cut to fit. An escape rd_xferlog_check refuses is
 * copied as it stands. Returns the length written.
 */
size_t rd_xferlog_format(char *out, size_t cap, const char *fmt, const struct rd_xfer_item *it);

/* "YYYY/MM/DD hh:mm:ss" (local time) of t into out (at least 20 bytes). */
void rd_xferlog_time(char *out, size_t cap, time_t t);

#endif
