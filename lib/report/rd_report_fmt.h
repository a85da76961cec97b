/* SPDX-License-Identifier: MIT */
/*
 * rsync's output formats, for rdcp's -v, -i, --out-format, --log-file,
 * --stats and -h (rsync.1 is the specification; each function says which
 * part). Pure: no I/O, deterministic but for what the caller passes in.
 */
#ifndef RDCP_REPORT_RD_REPORT_FMT_H
#define RDCP_REPORT_RD_REPORT_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/engine/rd_engine.h"

/*
 * A number as rsync's -h prints it (rsync.1, --human-readable): human 0
 * plain digits, 1 digits in groups of three ("1,234,567"), 2 units of
 * 1000 from 1000 on ("1.23M"), 3 units of 1024 ("1.18M"); below the
 * unit, as 1. Returns the length (like snprintf); out is always
 * NUL-terminated when cap > 0.
 */
size_t rd_report_num(char *out, size_t cap, int64_t v, int human);
/* The same for a fraction with `digits` decimals ("642.00", "1,234.50"). */
size_t rd_report_dnum(char *out, size_t cap, double v, int human, int digits);

/*
 * rsync's %i (rsync.1, --itemize-changes): the 11 characters YXcstpoguax
 * for an entry of type (enum rd_ftype) and mode with these items
 * (RD_IT_*, RD_ITEM_UNKNOWN: '?' letters), sent from here (push: '<') or
 * received (pull: '>'). out gets 12 bytes, NUL included.
 */
void rd_report_itemize(char out[12], unsigned items, uint8_t type, uint32_t mode, int push);

/*
 * A name as rsync prints it: valid UTF-8 as it is (rsync in a UTF-8
 * locale), each control character, DEL, C1 control or byte of invalid
 * UTF-8 as \#ooo (octal), and a backslash that would read as such an
 * escape as \#134. Returns the length (like snprintf).
 */
size_t rd_report_name(char *out, size_t cap, const char *s, size_t len);
/*
 * The same, or with utf8 0 as rsync prints names outside a UTF-8 locale
 * (without -8): every byte past ASCII as \#ooo too.
 */
size_t rd_report_name_as(char *out, size_t cap, const char *s, size_t len, int utf8);

/* What %o, %t, %p, %' and friends need besides the entry. */
struct rd_report_fmt_ctx {
	int push;   /* 1: this side sends ("send", '<'); 0: receives */
	int human;  /* -h level for %l %b (with ') */
	long pid;   /* %p */
	time_t now; /* %t */
	int ascii;  /* names as rd_report_name_as(utf8 0): no UTF-8 locale, no -8 */
};

/*
 * Expand rsync's --out-format / --log-file-format escapes (rsyncd.conf(5),
 * "log format") for one entry: %n name (a directory with '/'), %L " ->
 * target" of a symlink or " => name" of a hard link, %i itemize, %l
 * length, %b and %c bytes moved, %o "send"/"recv", %f name (as %n, no
 * '/'), %t now, %M mtime ("2024/01/02-03:04:05"), %B permissions
 * ("rwxr-xr-x"), %U uid, %G gid, %p pid, %C (no checksum here: spaces),
 * %% '%'; %h %a %m %P %u are a daemon's and expand to nothing here. Each
 * may carry a width (%-10n, %9l) and ' for human-readable numbers, as in
 * rsync; an unknown escape stays as it is. Names are escaped as
 * rd_report_name() does. Writes at most cap bytes, NUL-terminated; returns
 * the full length (like snprintf). No newline.
 */
size_t rd_report_fmt(char *out, size_t cap, const char *fmt, const struct rd_item *it,
		     const struct rd_report_fmt_ctx *cx);
/* Does fmt use escape c (e.g. 'i'), as rsync's log_format_has() decides? */
int rd_report_fmt_has(const char *fmt, char c);

#endif
