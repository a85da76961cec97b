/* SPDX-License-Identifier: MIT */
/*
 * The harness of the engine's end-to-end tests (engine_loop_test.c,
 * engine_wide_test.c): real files in a temporary directory, both engines
 * on one loopback pair (or a TCP connection), the sender in a thread and
 * the receiver in the caller's, a hook that sees every message. Test code
 * only: it asserts with cmocka.
 */
#ifndef RDCP_ENGINE_ENGINE_LOOP_HARNESS_H
#define RDCP_ENGINE_ENGINE_LOOP_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/engine/rd_engine.h"
#include "lib/xport/rd_xport_loop.h"

#define CH 4096u /* chunk size: RD_CHUNK_MIN, so small files have many chunks */

/* setup()'s directory, and the source and destination in it */
extern char g_root[256];
extern char g_src[300], g_dst[300];

/* --- files --- */

/* The bytes put_file() writes for size and seed (malloc'd). */
uint8_t *made_bytes(size_t size, unsigned seed);
void put_file(const char *dir, const char *name, size_t size, unsigned seed);
/* A file's bytes (malloc'd, *len of them), or NULL. */
uint8_t *slurp(const char *path, size_t *len);
/* Files a and b hold the same bytes. */
int same_paths(const char *a, const char *b);
/* dst/<top>/name equals src/name byte for byte */
int same_file(const char *name);
/* The received file holds what put_file(size, seed) made: a version of the source. */
int same_as_made(const char *name, size_t size, unsigned seed);
int exists_in_dst(const char *name);
void rm_rf(const char *path);
/* Nothing but final names under dst/src (no partial, record or temp). */
int no_litter(void);
/* cmocka's: a fresh g_root with g_src and g_dst; and away with it */
int setup(void **state);
int teardown(void **state);

/* --- running both engines --- */

struct run {
	int tcp; /* a real TCP connection on 127.0.0.1 instead of the loopback */
	rd_loop_hook_fn hook;
	void *hctx;
	struct rd_engine_opts eo;
	int timeout_ms;
	const char *extra_src; /* a second source (e.g. a missing one) */
	const uint8_t *key;    /* session key for a keyed eo.digest (gmac, aes-128-gcm) */
	struct rd_engine se, re;
	int sret, rret;
	struct rd_conn *a;
	struct rd_tree *t;
	int nfailed_reports;
	int last_report_status;
	char last_note[256];		  /* the sender's last report with status 0 and a text */
	int send_no_pack;		  /* the sender's eo.pack 0 whatever r->eo says */
	int send_no_batch, recv_no_batch; /* one side's eo.batch 0 */
	int send_no_wide, recv_no_wide;	  /* one side's eo.wide 0 */
	struct rd_pace *send_pace, *recv_pace; /* one side's eo.pace */
	int send_no_items;		       /* the sender's eo.items 0 */
	/* the receiver's quick check and rules (times kept), or none */
	const struct rd_sink_select *sel;
	unsigned sink_flags; /* RD_SINK_* the receiver's sink has besides */
	/* items (rd_item) each side reported: path and RD_IT_* */
	unsigned nitems[2];
	struct {
		char path[64];
		unsigned items;
		uint8_t type;
	} item[2][64];
};

/*
 * 160 MiB over a real socket: under TSan every byte the TCP transport
 * copies is instrumented (5-15 times slower), and on a loaded 2-CPU host
 * one 16 MiB chunk took more than 5 s of silence. Silence is not what
 * that test checks.
 */
#if defined(RDCP_TSAN) || defined(RDCP_ASAN)
#define TCP_TIMEOUT_MS 60000
#else
#define TCP_TIMEOUT_MS 5000
#endif

/* g_src copied into g_dst (as dst/src/...) as r says; the results in r. */
void run_copy(struct run *r);

/* --- many small files (packs, batches) --- */

#define PCH    (64u << 10) /* chunk size for the pack cases */
#define NSMALL (3 * RD_WINDOW_FILES)

/* NSMALL files of 1..3000 bytes, an empty one and a large one among them */
void make_small_set(void);
int small_set_copied(void);

/* --- batches (RD_OF_BATCH, issue 13; RD_OF_WIDE): many entries per FILES / FILEZ / DONES --- */

struct batch_watch {
	unsigned file, files, filez, done, dones;
	unsigned max_files_n; /* the most entries in one FILES or FILEZ */
	unsigned max_dones_n; /* in one DONES */
	int delay_first; /* ms the first FILES or FILEZ waits (the later ones wait behind it) */
};

/* The hook that counts them (ctx: a struct batch_watch). */
enum rd_loop_action watch_batches(void *ctx, struct rd_loop_event *ev);
/* run_copy with packs and batches, watched by w */
void batch_run(struct run *r, struct batch_watch *w);

#endif
