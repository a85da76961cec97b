/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/sink: partial files (issue 11, resume).
 *
 * A regular file being received is written, from its first byte, into a
 * partial with a deterministic name beside its final name:
 *
 *	.rdcp-partial.<name>		the data (sized to the source size)
 *	.rdcp-partial.<name>.rec	what is needed to trust it later
 *
 * (<name> longer than PARTIAL_NAME_KEEP bytes is cut and followed by '~'
 * and 16 hex digits of a hash of the whole name, so the names stay
 * deterministic and within NAME_MAX.)
 *
 * The record, all integers big-endian:
 *	 0 u8[8] magic		"RDCPPRT2" ("RDCPPRT1": no flags word, the
 *				 bitmap at 72; still read)
 *	 8 u64	 size		source size announced by the sender (FILE)
 *	16 s64	 mtime_sec	source mtime (FILE)
 *	24 u32	 mtime_nsec
 *	28 u32	 chunk_size	of the session that wrote the chunks (another
 *				 session may cut chunks otherwise: a chunk of
 *				 its size is held when all it overlaps are)
 *	32 u8[32] digest	checksum name that verified them, NUL padded
 *	64 u64	 nchunks
 *	72 u32	 flags		RD_PARTIAL_F_DIR (0x1): the --partial-dir it
 *				 lies in was made by the rdcp copy that
 *				 began it, so the copy that finishes it may
 *				 remove that directory once empty (one that
 *				 was there before is never removed)
 *	76 u32	 0
 *	80 u8[(nchunks + 7) / 8] bitmap: bit (i % 8) of byte i / 8 set = chunk
 *				i was verified and written before the record
 *	 + u64	 check		FNV-1a 64 of every byte before it
 *
 * Crash safety: the record is written whole to "<record>.new" (created
 * O_EXCL after an unlink, never followed) and renamed over the record, so
 * a crash at any instant leaves the old record or the new one. A bit is
 * set only after its chunk's pwrite() returned, so the record never claims
 * a chunk a killed process had not written. It does not by itself survive
 * a power cut (no fsync unless the sink has RD_SINK_FSYNC): that is why a
 * resumed chunk is compared with the sender's digest before it is kept
 * (lib/engine, GET kind SUM); the record only says which chunks are worth
 * comparing. Only --trust-partial with --checksum-choice none keeps chunks on the
 * record's word alone.
 */
#ifndef RDCP_SINK_RD_SINK_PARTIAL_H
#define RDCP_SINK_RD_SINK_PARTIAL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/proto/rd_proto.h"

#define PARTIAL_PREFIX	   RD_PARTIAL_PREFIX /* never sent nor accepted (rd_path_reserved) */
#define PARTIAL_REC_SUFX  ".rec"
#define PARTIAL_NAME_KEEP 200
#define PARTIAL_BITMAP_MAX (16u << 20) /* larger bitmaps: no partial kept */

struct rd_partial_id {
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t chunk_size;
	char digest[33];
	/*
	 * Not compared: the partial dir holding a new partial is rdcp's
	 * (RD_PARTIAL_F_DIR in its record). A resumed partial keeps what its
	 * record says: rd_partial_dir_made().
	 */
	int dir_made;
};

struct rd_partial;

/* Bytes of the bitmap of a file of size bytes cut in chunks of chunk. */
size_t rd_partial_bitmap_len(uint64_t size, uint32_t chunk);

/*
 * The partial's data name for final name `name` (out: NAME_MAX + 1 bytes).
 */
void rd_partial_name(char *out, const char *name);

/*
 * Open the partial of `name` in directory pfd for a file described by id.
 * If a partial and a record that match id (size, mtime, chunk size) exist,
 * they are reused: *resumed = 1 and the record's bitmap is loaded.
 * Otherwise any old partial and record are removed and a new, empty
 * partial is created (*changed = 1 when an old record existed for another
 * size or mtime: the source changed). *fd is the data file (O_RDWR), held
 * under flock(LOCK_EX) until it is closed. -EBUSY: another session still
 * held the partial after waiting 10 s for it (use no partial then).
 * Returns 0 or -errno.
 */
int rd_partial_open(struct rd_partial **out, int pfd, const char *name,
		    const struct rd_partial_id *id, int fsync_data, int *fd, int *resumed,
		    int *changed);
/* Drop what a resumed partial held (its record too): start afresh. */
int rd_partial_reset(struct rd_partial *p, int fd);
int rd_partial_has(const struct rd_partial *p, uint64_t chunk);
/* Record's checksum name (what verified the chunks it holds). */
const char *rd_partial_digest(const struct rd_partial *p);
/* Its partial dir was made by an rdcp copy (RD_PARTIAL_F_DIR). */
int rd_partial_dir_made(const struct rd_partial *p);
void rd_partial_mark(struct rd_partial *p, uint64_t chunk, int on);
/*
 * Write the record when it changed and at least PARTIAL_FLUSH_MS passed
 * since the last one, or always with force. Returns 0 or -errno (the old
 * record then stays).
 */
int rd_partial_flush(struct rd_partial *p, int fd, int force);
/*
 * Give back the space of every chunk the record does not hold (a chunk
 * half written when the disk filled): best effort, before an abort keeps
 * the partial.
 */
void rd_partial_trim(const struct rd_partial *p, int fd);
/* No chunk verified: nothing worth keeping. */
int rd_partial_empty(const struct rd_partial *p);
/* After the data file was renamed into place (or dropped): no record. */
void rd_partial_remove(struct rd_partial *p, int remove_data);
void rd_partial_free(struct rd_partial *p); /* accepts NULL */
/*
 * Is the open file fd a record this format describes (magic, length for
 * its chunk count, checksum)? 1 or 0; reads it in bounded pieces
 * (rd_sink_sweep.c: only rdcp's partials are removed).
 */
int rd_partial_record_valid(int fd);

#endif
