/* SPDX-License-Identifier: MIT */
/*
 * An scp-style progress meter that watches the engine's counters.
 *
 * The meter is never called from the data path: rd_progress_start() starts
 * a thread that, about once a second, reads struct rd_engine_stats (written
 * by the engine without locks) and redraws one carriage-return refreshed
 * line on the FILE * the caller hands it:
 *
 *	big/file.bin                    45%  460.3 MiB  115.0 MiB/s    00:05 ETA
 *
 * Reading the counters from another thread is deliberately approximate:
 * each field is read once per tick, cur_name is copied into a local buffer,
 * forced NUL-terminated and escaped with rd_escape() (a torn read shows a
 * garbled name for one second, never a raw control character), and values
 * are clamped (done <= size, a counter that goes backwards counts as 0).
 *
 * This is the only lib/ module that writes to a stream, and only to the
 * one it was given.
 */
#ifndef RDCP_PROGRESS_RD_PROGRESS_H
#define RDCP_PROGRESS_RD_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/engine/rd_engine.h"

#define RD_PROGRESS_WIDTH_DEFAULT 80  /* when TIOCGWINSZ says nothing */
#define RD_PROGRESS_WIDTH_MAX	  512 /* wider terminals get 512 columns */
/* A buffer this big always holds a whole rd_progress_format() line. */
#define RD_PROGRESS_LINE_MAX (4 * RD_PROGRESS_WIDTH_MAX + 1)
/* A buffer this big always holds a whole rd_progress_summary() line. */
#define RD_PROGRESS_SUMMARY_MAX 512

/* rd_progress_start() flags */
#define RD_PROGRESS_FORCE 0x1u /* draw even when tty is not a terminal */
/*
 * rsync's --info=progress2: one line for the whole transfer instead of
 * the current file (rd_progress_format_total), numbers at -h level
 * RD_PROGRESS_HUMAN(n) (0..3; rsync's default is 1).
 */
#define RD_PROGRESS_TOTAL    0x2u
#define RD_PROGRESS_HUMAN(n) (((unsigned)(n)&3u) << 8)

struct rd_progress;

/*
 * Start watching st and drawing on tty. Without RD_PROGRESS_FORCE nothing
 * is drawn unless fileno(tty) is a terminal, and nothing is drawn while
 * the process is in the background (scp's rule); *out is still a valid
 * object for rd_progress_stop(). The first line appears after about a
 * second, so quick copies draw nothing.
 *
 * st must stay valid until rd_progress_stop() returns.
 * Returns 0, or -RD_ENOMEM / -RD_ESYS (thread creation failed) with *out
 * set to NULL: the copy can go on without a meter.
 */
int rd_progress_start(struct rd_progress **out, FILE *tty, struct rd_engine_stats *st,
		      unsigned flags);

/*
 * Stop the thread (join). If the meter has drawn anything, draw the line
 * once more with the final counters and end it with a newline (so the
 * last state stays on the screen, as with scp). Frees p; accepts NULL.
 */
void rd_progress_stop(struct rd_progress *p);

/*
 * Print something else on the same terminal without garbling the meter:
 * rd_progress_suspend() blanks the current line (if one is drawn) and
 * holds the meter until rd_progress_resume(). Both accept NULL. Use them
 * around error messages printed while the meter runs (e.g. in the
 * engine's report callback, the ssh stderr pass-through). Not nested;
 * call rd_progress_resume() before rd_progress_stop().
 */
void rd_progress_suspend(struct rd_progress *p);
void rd_progress_resume(struct rd_progress *p);

/*
 * Render one meter line (no '\r', no '\n') into buf, exactly width
 * display columns wide (0 = RD_PROGRESS_WIDTH_DEFAULT; capped at
 * RD_PROGRESS_WIDTH_MAX): the escaped name, shortened in the middle with
 * "..." when too long, then percent of the file (100% for an empty file),
 * bytes done, rate, and "ETA" while the file is incomplete or the
 * elapsed time once done >= size. Pass width = terminal columns - 1 so the
 * line never wraps. Columns are counted per code point, code points from
 * U+1100 up counted as 2 (conservative for wide characters).
 *
 * name: raw NUL-terminated bytes (NULL = ""); done, size: bytes of the
 * current file (done is clamped to size); rate_bps: bytes per second
 * (<= 0 or not finite: unknown, ETA shows "--:--"); elapsed: seconds
 * spent on this file. Deterministic, no I/O.
 *
 * Returns the length of the full line in bytes (like snprintf); buf is
 * always NUL-terminated when len > 0.
 */
size_t rd_progress_format(char *buf, size_t len, unsigned width, const char *name, uint64_t done,
			  uint64_t size, double rate_bps, double elapsed);

/*
 * The one-line summary printed after a copy, e.g.
 *	12 entries, 1.5 GiB in 3.20 s, 480.0 MiB/s, checksum sha256
 * followed by " (data NOT verified)" when checksum is "none" or NULL, and
 * ", N already identical" / ", N chunks resent" when non-zero. entries is
 * st->files_ok, bytes st->bytes_files, the rate st->bytes_data / seconds.
 * No newline. Returns the full length like snprintf.
 */
size_t rd_progress_summary(char *buf, size_t len, const struct rd_engine_stats *st,
			   uint64_t entries, double seconds, const char *checksum);

/*
 * rsync's progress2 line (rsync.1, --info=progress2) for the whole
 * transfer, without '\r':
 *	"      1,234,567  45%   12.34MB/s    0:00:05 (xfr#12, ir-chk=1020/2000)"
 * done of total bytes (the total grows as the walk announces files, as
 * with rsync's incremental recursion: "ir-chk"), the rate in rsync's units
 * (kB/s, MB/s, GB/s: powers of 1024), the time left at that rate, the
 * entries done and of those announced how many are still to check. The
 * number at -h level human (rd_report_num). Returns the full length.
 */
size_t rd_progress_format_total(char *buf, size_t len, uint64_t done, uint64_t total,
				double rate_bps, uint64_t ndone, uint64_t nannounced, int human);

/* Bytes in binary units: "512 B", "1.5 KiB", ... "3.0 TiB" (at most 10 chars). */
void rd_progress_human(char *buf, size_t len, double bytes);

#endif
