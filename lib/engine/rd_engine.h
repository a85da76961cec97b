/* SPDX-License-Identifier: MIT */
/*
 * The transfer engine: moves a manifest of entries and their chunks over
 * one connection, verified chunk by chunk. The same engine serves push and
 * pull; only which side runs rd_engine_send() and which rd_engine_recv()
 * changes. The protocol is in lib/proto/rd_proto.h.
 *
 * Memory is bounded from the start: the receiver's registered pool (at
 * most pool_bytes), the sender's registered read buffers (at most depth
 * chunks), a window of RD_WINDOW_FILES entries and a bounded GET queue.
 * Registered memory is taken as the chunks in flight need it (a small job
 * pins little; issue 14) and never grows past those bounds with file size
 * or file count.
 */
#ifndef RDCP_ENGINE_RD_ENGINE_H
#define RDCP_ENGINE_RD_ENGINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/base/rd_chmod.h"
#include "lib/base/rd_err.h"
#include "lib/digest/rd_digest.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink.h"
#include "lib/sink/rd_sink_mirror.h"
#include "lib/tree/rd_tree.h"
#include "lib/xport/rd_xport.h"

#define RD_ENGINE_POOL_DEFAULT (64ull << 20)
#define RD_ENGINE_DEPTH_DEFAULT 16
#define RD_ENGINE_RETRIES_DEFAULT 3
#define RD_ENGINE_MAX_SLOTS 1024
#define RD_ENGINE_THREADS_DEFAULT_MAX 8 /* the default: the cores available, at most this */
#define RD_ENGINE_THREADS_MAX 64

/* The cores this process may run on, at most RD_ENGINE_THREADS_DEFAULT_MAX. */
unsigned rd_engine_default_threads(void);

/*
 * Pacing (rdcp --bwlimit, rdcpd's max rate; rd_engine_pace.c): a token
 * bucket a side consults before it moves a chunk's bytes. rate is bytes
 * per second (0: no limit); rate_fn, when set, gives the rate now (a
 * daemon's share, which changes as sessions come and go) and is asked at
 * most every 100 ms. Owned by whoever set it; the engine's thread alone
 * uses it while the engine runs.
 */
#define RD_PACE_WAIT_MAX_MS 250
struct rd_pace {
	uint64_t rate;
	uint64_t (*rate_fn)(void *ctx);
	void *rate_ctx;
	double tokens, last, asked;
};
void rd_pace_init(struct rd_pace *p, uint64_t rate);
/*
 * ms until a chunk of len bytes may move (0: now; never more than
 * RD_PACE_WAIT_MAX_MS: ask again then). p may be NULL. Then, once it
 * moved, rd_pace_charge() its bytes.
 */
int rd_pace_wait(struct rd_pace *p, uint64_t len);
/* A chunk of len bytes moved (p may be NULL). */
void rd_pace_charge(struct rd_pace *p, uint64_t len);
/*
 * The largest chunk (a power of two, RD_CHUNK_MIN..RD_CHUNK_MAX) that moves
 * in at most a quarter of a second at rate bytes/s: a paced side never
 * falls silent for long between chunks (the peer's idle timeout).
 */
uint32_t rd_pace_chunk_max(uint64_t rate);

struct rd_engine_opts {
	uint32_t chunk_size;   /* negotiated, RD_CHUNK_MIN..RD_CHUNK_MAX */
	uint64_t pool_bytes;   /* receiver: registered pool */
	unsigned depth;	       /* sender: read buffers; receiver: requests in flight */
	unsigned max_retries;  /* per chunk, after a digest mismatch */
	const char *digest;    /* EVP name or "none" */
	/*
	 * Workers doing the per-chunk data work (sender: read and tag;
	 * receiver: verify and write) beside the loop that talks; 1: all
	 * of it on the loop's thread, as before; 0: rd_engine_default_threads().
	 */
	unsigned threads;
	/*
	 * Set non-zero (a signal handler, a daemon shutting down) to stop:
	 * the engine ends within RD_ENGINE_IDLE_MS with -RD_ESTOPPED,
	 * aborting the files in progress (their temporaries are removed).
	 */
	volatile int *stop;
	/*
	 * Give up with -RD_ETIMEOUT after idle_ms without progress (0: never):
	 * progress is a chunk or a new entry moved, a new request (GET) or a
	 * file confirmed, not just any message, so a peer that keeps the
	 * connection alive with empty CREDITs or NOTEs but moves nothing is
	 * dropped all the same (issue 7 item 5). Over every transport.
	 */
	int idle_ms;
	/*
	 * A receiver stopped so: this text goes to the peer in an ERROR,
	 * flushed, before the receive buffers are deregistered (after that
	 * the peer's writes in flight fail and it would never read why).
	 * A sender stopped so tells the receiver after the data it sent, and
	 * waits a moment for it to take them in (rd_engine_stop_peer), so an
	 * interrupted copy keeps all that moved. NULL: the caller tells the
	 * peer, if anyone.
	 */
	const char *stop_text;
	/*
	 * RD_OF_PACK agreed (the session sets it from OPEN_OK): the receiver
	 * asks for small files many per chunk, the sender answers such
	 * requests (rd_proto.h, Packs). 0: a GET kind PACK is a protocol error.
	 */
	int pack;
	/*
	 * RD_OF_BATCH agreed: the sender announces entries many per FILES,
	 * the receiver confirms them many per DONES (rd_proto.h, Batches).
	 * 0: either message is a protocol error.
	 */
	int batch;
	/*
	 * RD_OF_WIDE agreed (with batch): the sender announces in FILEZ, both
	 * sides gather up to half the window (at most RD_BATCH_WIDE) per
	 * batch (rd_proto.h, Wide batches). 0: a FILEZ, or a DONES of more
	 * than RD_BATCH_MAX, is a protocol error.
	 */
	int wide;
	/*
	 * rsync's --chmod, applied by this side to the permissions of every
	 * entry but symlinks as though the source had them: a sender to what
	 * it announces, a receiver to what it is told (the side where rdcp
	 * runs applies it, either way). NULL: none.
	 */
	const struct rd_chmod *chmod;
	/*
	 * RD_OF_ITEMS agreed: the receiver says in every DONE what the entry
	 * changed (RD_IT_*), the sender requires it. 0: neither does.
	 */
	int items;
	/*
	 * Entries not yet DONE both sides keep (rd_proto.h, OPEN_OK's
	 * window): RD_WINDOW_FILES..RD_WINDOW_MAX, 0 = RD_WINDOW_FILES. A
	 * session sets the agreed value before the engine runs; before OPEN
	 * a client's is what it offers, a server's the most it grants.
	 */
	unsigned window;
	/* Pacing of this side's chunks (see struct rd_pace); NULL: none. */
	struct rd_pace *pace;
	/* A sender for a listing (RD_OF_LIST): DIR entries carry their st_size. */
	int list_sizes;
	/*
	 * -H agreed (RD_OF_HARDLINKS honoured): a receiver refuses HLINK
	 * entries without it. link_marks: and the connection's version names
	 * link groups (RD_PROTO_LINKS: RD_FF_LINKED, RD_FF_LINK_LAST); a
	 * sender sends those flags, a receiver accepts them, only then.
	 */
	int hardlinks, link_marks;
	/*
	 * The most memory the link table may take (bytes; 0:
	 * RD_ENGINE_LINK_TABLE_DEFAULT): a sender's open link groups (their
	 * paths; more are sent as copies), a receiver's files that start one
	 * (more: their links fail). rdcpd's "link table size", rdcp's default.
	 */
	uint64_t link_table;
	/*
	 * RD_OF_RANGES agreed (rd_proto.h section 6): entries may be one
	 * range of a file, or its COMMIT. 0: either is a protocol error.
	 */
	int ranges;
	/*
	 * Receivers of rdcp-mpi's pulls (section 6): accept, when set, sees
	 * every entry first (0: take it; else it was not asked for: a
	 * protocol error); list, when set, makes a receiver that only lists
	 * (rdcp-mpi's plans and rdcp's listings, rd_proto.h section 3): each
	 * entry goes to it and is confirmed at once (after its META, if any),
	 * nothing is asked for or written, and the sink may be NULL.
	 * hook_ctx is theirs.
	 */
	int (*accept)(void *ctx, const struct rd_msg_file *f);
	void (*list)(void *ctx, const struct rd_msg_file *f);
	void *hook_ctx;
	/*
	 * RD_OF_SELECT agreed (version 11): rsync's rules; a receiver's
	 * items may say SKIPPED.
	 */
	int select;
	/*
	 * -n (RD_SEL_DRY_RUN, with select): the receiver's sink changes
	 * nothing and says what it would do; no file data moves (a file
	 * that would be sent is answered at once, items NEW or what
	 * differs, with XFER); the items records carry dry_run.
	 */
	int dry_run;
	/*
	 * Sender, --remove-source-files (issue 29): once the receiver
	 * confirmed a non-directory (DONE, status 0: verified, in place,
	 * synced with --fsync), remove its source if it is still what was
	 * sent (rd_tree_remove_source); the tree must keep parents
	 * (rd_tree_keep_parents). A source that stays is reported (a failure).
	 */
	int remove_source;
	/*
	 * RD_OF_MIRROR with RD_MF_DELETE agreed (version 13): a sender takes
	 * DELETED (else a protocol error); a receiver given mirror_opts
	 * deletes (rd_sink_mirror.h; the engine sets its report) and sends
	 * DELETED. --force alone: mirror 0, mirror_opts with delete 0.
	 */
	int mirror;
	const struct rd_mirror_opts *mirror_opts;
};

#define RD_ENGINE_LINK_TABLE_DEFAULT (32ull << 20)

/*
 * Counters, written only by the engine's thread. What a progress display
 * reads from another thread while the engine runs is atomic: bytes_data,
 * cur_size and cur_done (relaxed: each value whole, maybe a moment old;
 * rd_stat_get()), and the current name, copied whole under a tiny
 * spinlock (rd_engine_stats_name()). The rest is read once the engine returned.
 */
struct rd_engine_stats {
	uint64_t entries;      /* manifest entries handled */
	uint64_t files_ok;     /* entries finished fine */
	uint64_t files_failed; /* entries that failed (incl. sender-side skips) */
	uint64_t files_same;   /* regular files already identical: no data sent */
	_Atomic uint64_t bytes_data; /* payload bytes moved by RDMA WRITE */
	/*
	 * Bytes the receiver already held (a resumed partial, an existing
	 * file or its prefix) and kept after comparing them: not moved. The
	 * sender counts size - moved of each file finished fine.
	 */
	_Atomic uint64_t bytes_resumed;
	uint64_t bytes_files;	     /* sizes of regular files finished */
	uint64_t chunks_retried;
	uint64_t chunks_readahead; /* sender: GETs answered from data read ahead */
	uint64_t chunks_ra_wasted; /* sender: chunks read ahead, then given back unused */
	uint64_t packs, files_packed; /* RD_OF_PACK: packs moved, files they carried */
	uint64_t sources_removed;     /* --remove-source-files: sources removed */
	_Atomic uint64_t reg_bytes;   /* data buffers registered now (bytes) */
	uint64_t reg_peak;	      /* the most registered at once */
	/*
	 * Time (ns) the engine's thread spent walking the source tree
	 * (rd_tree_next: sender) and making received files durable (--fsync:
	 * the syncfs and renames of each batch: receiver), inside its run.
	 */
	uint64_t walk_ns, sync_ns;
	_Atomic uint64_t cur_size, cur_done; /* the oldest file in progress */
	/*
	 * The whole transfer so far (rdcp --info=progress2): entries
	 * announced (FILE; a directory once), the bytes of the regular files
	 * among them, and the entries done.
	 */
	_Atomic uint64_t entries_announced, bytes_announced, entries_done;
	/*
	 * --delete (either side; a sender from DELETED): entries deleted (or,
	 * -n, that would be), that could not be, left by --max-delete;
	 * del_off: deletion was turned off; del_limited: --max-delete stopped it.
	 */
	uint64_t deleted, del_failed, del_skipped;
	int del_off, del_limited;
	atomic_flag cur_lock;	/* held while cur_name is written or copied */
	char cur_name[256];	/* its wire path (raw bytes, NUL-terminated) */
	int finished;
};

static inline uint64_t rd_stat_get(const _Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static inline void rd_stat_add(_Atomic uint64_t *v, uint64_t n)
{
	atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

/* The engine: a new current file (name of len bytes, cut to fit). */
void rd_engine_stats_set_cur(struct rd_engine_stats *st, const char *name, size_t len,
			     uint64_t size);
/*
 * Another thread: copy the current name (NUL-terminated, at most len - 1
 * bytes): 0, or -1 when len is 0. The stats must start zeroed (the
 * lock's clear state).
 */
int rd_engine_stats_name(struct rd_engine_stats *st, char *out, size_t len);

/*
 * Called once per failed entry (status < 0) with its wire path and the
 * reason; and, when verbose, once per finished entry (status 0). path is
 * raw bytes from the wire or the disk: escape before printing.
 */
typedef void (*rd_engine_report_fn)(void *ctx, const char *path, size_t len, int status,
				    const char *msg);

/*
 * One entry finished, on either side, once (a daemon's transfer log and
 * counters): what it was and what moved for it. path is raw bytes.
 */
struct rd_engine_entry {
	const char *path;
	size_t plen;
	uint8_t type;  /* RD_FT_* */
	uint8_t flags; /* RD_FF_* of its FILE (a directory's RD_FF_POST entry comes second) */
	uint32_t mode, uid, gid;
	uint64_t size; /* regular files: the length */
	int64_t mtime_sec;
	uint64_t bytes; /* data moved for it (chunks the receiver asked for) */
	int same;	/* a regular file the receiver held already: nothing moved */
	int status;	/* 0, or the failure (a negative RD_E*) */
};
typedef void (*rd_engine_entry_fn)(void *ctx, const struct rd_engine_entry *en);

/*
 * One entry finished (a directory once, not again after its contents): what
 * it is and what it changed on the receiving side, for rsync's -v, -i and
 * --out-format, on whichever side runs the engine. The receiver decides
 * the items; a sender has them from DONE (RD_OF_ITEMS), or not
 * (RD_ITEM_UNKNOWN: an older peer). RD_IT_SKIPPED: a transfer rule left
 * it (rsync itemizes nothing for it). Strings are raw bytes, valid only
 * during the call.
 */
#define RD_ITEM_UNKNOWN 0x10000u /* the peer did not say (protocol < 7) */
struct rd_item {
	const char *path; /* wire path */
	size_t len;
	uint8_t flags; /* its FILE's RD_FF_* (RD_FF_CONTENTS: below a "dir/" source) */
	uint8_t type;  /* enum rd_ftype */
	uint32_t mode; /* st_mode as sent */
	uint32_t uid, gid;
	uint64_t size; /* REG: bytes; SPECIAL: the device number */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	const char *target; /* SYMLINK: its target; HLINK: the path it links to */
	size_t tlen;
	unsigned items; /* RD_IT_* | RD_ITEM_UNKNOWN */
	uint64_t bytes; /* data bytes moved for it */
	int status;	/* 0, or the failure (-RD_E*); then msg says why */
	const char *msg;
	int dry_run; /* -n: items is what would have been done; nothing was */
};
typedef void (*rd_engine_item_fn)(void *ctx, const struct rd_item *it);
/*
 * --delete: what the receiver deleted (flags RD_DLF_*: 0 or DIR: deleted,
 * or with -n would be; FAILED, SKIPPED, OFF with text), on either side
 * (a sender hears it in DELETED). path: below the destination, raw bytes.
 */
typedef void (*rd_engine_deleted_fn)(void *ctx, unsigned flags, const char *path, size_t len,
				     const char *text);

struct rd_engine {
	struct rd_engine_opts o; /* o.digest: digest_name once the engine runs */
	struct rd_digest *dg;
	uint8_t key[RD_DIGEST_KEY_LEN]; /* for the workers' own digests */
	int has_key;
	char digest_name[RD_DIGEST_NAME_MAX + 1]; /* stays valid after fini */
	struct rd_engine_stats st;
	rd_engine_report_fn report;
	void *report_ctx;
	/* Optional, set after rd_engine_init: every entry's end (on the engine's thread). */
	rd_engine_entry_fn entry;
	void *entry_ctx;
	rd_engine_item_fn item; /* optional: every entry done (same ctx) */
	rd_engine_deleted_fn deleted; /* optional: --delete's reports (same ctx) */
	struct rd_err err;
	/* o.idle_ms: progress events, the count last seen, and since when */
	uint64_t progress, idle_mark;
	struct timespec idle_since;
};

int rd_engine_init(struct rd_engine *e, const struct rd_engine_opts *o);
/* Use another digest (as negotiated), before send/recv. */
int rd_engine_set_digest(struct rd_engine *e, const char *name);
/* Session key for keyed digests (gmac, aes-128-gcm); others ignore it. */
int rd_engine_set_key(struct rd_engine *e, const uint8_t key[RD_DIGEST_KEY_LEN]);
/* 0, or -RD_EUSAGE when the digest is keyed and no key was set. */
int rd_engine_check_key(struct rd_engine *e);
void rd_engine_fini(struct rd_engine *e);

/*
 * Run one side to the end. Both return 0 when every entry arrived
 * verified, -RD_EPARTIAL when the session finished but some entries failed
 * (each was reported), or another negative status when the session itself
 * failed (e->err says why).
 */
int rd_engine_send(struct rd_engine *e, struct rd_conn *c, struct rd_tree *t);
int rd_engine_recv(struct rd_engine *e, struct rd_conn *c, struct rd_sink *s);

/* Encode and send one message; 0, RD_XPORT_BUSY, or a negative status. */
int rd_engine_send_msg(struct rd_conn *c, struct rd_msg *m, struct rd_err *err);

/*
 * The same, but wait (polling c) while no credit is free: up to
 * timeout_ms, or with -1 until the connection's own silence timeout.
 * Returns 0 or a negative status.
 */
int rd_engine_send_msg_wait(struct rd_conn *c, struct rd_msg *m, struct rd_err *err,
			    int timeout_ms);

/* Turn a peer's ERROR message into a local error; returns -status. */
int rd_engine_fail_remote(struct rd_err *err, const struct rd_msg_error *m, const char *peer);
/* Send ERROR to the peer, best effort. */
void rd_engine_send_error(struct rd_conn *c, int status, const char *text);
/*
 * A sender stopped (a signal): tell the receiver with an ERROR (RD_ESTOPPED,
 * text) after everything sent so far, and give it up to wait_ms to take
 * all of that in and close; what reached it stays in its partials.
 */
void rd_engine_stop_peer(struct rd_conn *c, const char *text, int wait_ms);

#endif
