// SPDX-License-Identifier: MIT
/*
 * rdcp's option table and parser (the rules are in opts.h). Every option
 * is one row: its long name, its short letter, whether it takes a value,
 * whether "--no-NAME" undoes it, and, for the rsync options rdcp does not
 * offer, the one sentence that says what to use instead.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cmd/rdcp/opts.h"
#include "cmd/rdcp/rdcp.h"
#include "lib/base/rd_chmod.h"
#include "lib/base/rd_num.h"
#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session.h" /* rd_engine.h: RD_ENGINE_THREADS_*, RD_DIGEST_NAME_MAX */
#include "lib/sink/rd_sink.h"
#include "lib/xport/rd_xport.h"

enum optid {
	O_NONE = 0,
	O_RECURSIVE,
	O_PRESERVE,
	O_OWNER,
	O_GROUP,
	O_ARCHIVE,
	O_HARDLINKS,
	O_XATTRS,
	O_ACLS,
	O_SPARSE,
	O_D,
	O_DEVICES,
	O_SPECIALS,
	O_LINKS,
	O_TIMES,
	O_NUMERIC_IDS,
	O_QUIET,
	O_VERBOSE,
	O_HELP,
	O_VERSION,
	O_HUMAN,
	O_CHECKSUM,
	O_CHECKSUM_CHOICE,
	O_CHUNK,
	O_DEPTH,
	O_THREADS,
	O_POOL,
	O_PORT,
	O_NO_FSYNC,
	O_FSYNC,
	O_TIMEOUT,
	O_LIST,
	O_RSH,
	O_RDMA_HOST,
	O_LANES,
	O_ONE_RAIL,
	O_RDMA_DEVICES,
	O_REMOTE_RDCP,
	O_REMOTE_SERVER,
	O_JSON,
	O_PROGRESS,
	O_P,
	O_PASSWORD_FILE,
	O_CA,
	O_KNOWN_HOSTS,
	O_CERT,
	O_KEY,
	O_ENCRYPT,
	O_TRANSPORT,
	O_PARTIAL,
	O_TRUST_PARTIAL,
	O_RETRIES,
	O_PARTIAL_DIR,
	O_IPV4,
	O_IPV6,
	O_ITEMIZE,
	O_OUT_FORMAT,
	O_LOG_FILE,
	O_LOG_FILE_FORMAT,
	O_STATS,
	O_INFO,
	O_ONE_FS,
	O_COPY_LINKS,
	O_COMPRESS,
	O_COMPRESS_ARG,
	O_CHMOD,
	O_BWLIMIT,
	O_LIST_ONLY,
	O_MKPATH,
	O_IGNORE_TIMES,
	O_SIZE_ONLY,
	O_MODIFY_WINDOW,
	O_UPDATE,
	O_DRY_RUN,
	O_IGNORE_EXISTING,
	O_EXISTING,
	O_MAX_SIZE,
	O_MIN_SIZE,
	O_FILTER,
	O_F,
	O_EXCLUDE,
	O_INCLUDE,
	O_EXCLUDE_FROM,
	O_INCLUDE_FROM,
	O_FROM0,
	O_RELATIVE,
	O_FILES_FROM,
	O_REMOVE_SOURCE,
	O_EIGHT_BIT,
	O_LINK_DEST,
	O_COMPARE_DEST,
	O_COPY_DEST,
	O_BACKUP,
	O_BACKUP_DIR,
	O_SUFFIX,
	O_DELETE, /* --delete, --del, --delete-during */
	O_DELETE_BEFORE,
	O_DELETE_AFTER, /* --delete-delay, --delete-after */
	O_DELETE_EXCLUDED,
	O_IGNORE_ERRORS,
	O_FORCE,
	O_MAX_DELETE,
	O_ALLOW_EMPTY,
	O_HARMLESS, /* accepted, changes nothing (rdcp does it anyway) */
	O_REFUSED,
};

enum { A_NONE = 0, A_REQ = 1 };
#define F_NEG 0x1 /* --no-NAME (and --no-X) turns it off */

struct optdef {
	const char *name; /* long name, or NULL */
	char letter;	  /* short letter, or 0 */
	unsigned char arg, flags;
	enum optid id;
	const char *refusal; /* O_REFUSED: what to use instead */
};

/* Sentences shared by several refused options. */
#define R_LINKS                                                                              \
	"rdcp copies symlinks as they are and never follows one on the receiver; -L copies " \
	"what they point to"
#define R_COMPRESS "rdcp does not compress (RDMA moves data faster than compressing it); drop it"
#define R_BASIS                                                                      \
	"rdcp compares a file only with the one under its name, or in --link-dest, " \
	"--compare-dest or --copy-dest DIR"
#define R_OWNERS   "rdcp keeps numeric owners and groups (-o, -g, as root) and maps no names"
#define R_DAEMON   "run rdcpd(8) for a daemon"
#define R_BATCH	   "rdcp has no batch files; run the copy itself on each destination"

static const struct optdef opts[] = {
    {"recursive", 'r', A_NONE, F_NEG, O_RECURSIVE, NULL},
    {"preserve", 'p', A_NONE, F_NEG, O_PRESERVE, NULL},
    {"perms", 0, A_NONE, F_NEG, O_PRESERVE, NULL},
    {"owner", 'o', A_NONE, F_NEG, O_OWNER, NULL},
    {"group", 'g', A_NONE, F_NEG, O_GROUP, NULL},
    {"archive", 'a', A_NONE, 0, O_ARCHIVE, NULL},
    {"hard-links", 'H', A_NONE, F_NEG, O_HARDLINKS, NULL},
    {"xattrs", 'X', A_NONE, F_NEG, O_XATTRS, NULL},
    {"acls", 'A', A_NONE, F_NEG, O_ACLS, NULL},
    {"sparse", 'S', A_NONE, F_NEG, O_SPARSE, NULL},
    {NULL, 'D', A_NONE, F_NEG, O_D, NULL},
    {"devices", 0, A_NONE, F_NEG, O_DEVICES, NULL},
    {"specials", 0, A_NONE, F_NEG, O_SPECIALS, NULL},
    {"links", 'l', A_NONE, F_NEG, O_LINKS, NULL},
    {"times", 't', A_NONE, F_NEG, O_TIMES, NULL},
    {"numeric-ids", 0, A_NONE, F_NEG, O_NUMERIC_IDS, NULL},
    {"quiet", 'q', A_NONE, F_NEG, O_QUIET, NULL},
    {"verbose", 'v', A_NONE, F_NEG, O_VERBOSE, NULL},
    {"help", 0, A_NONE, 0, O_HELP, NULL},
    {"version", 'V', A_NONE, 0, O_VERSION, NULL},
    {"human-readable", 'h', A_NONE, F_NEG, O_HUMAN, NULL},
    {"checksum", 'c', A_NONE, F_NEG, O_CHECKSUM, NULL},
    {"checksum-choice", 0, A_REQ, 0, O_CHECKSUM_CHOICE, NULL},
    {"cc", 0, A_REQ, 0, O_CHECKSUM_CHOICE, NULL},
    {"chunk-size", 0, A_REQ, 0, O_CHUNK, NULL},
    {"depth", 0, A_REQ, 0, O_DEPTH, NULL},
    {"threads", 0, A_REQ, 0, O_THREADS, NULL},
    {"pool-size", 0, A_REQ, 0, O_POOL, NULL},
    {"port", 0, A_REQ, 0, O_PORT, NULL},
    {"no-fsync", 0, A_NONE, 0, O_NO_FSYNC, NULL},
    {"fsync", 0, A_NONE, 0, O_FSYNC, NULL},
    {"timeout", 0, A_REQ, 0, O_TIMEOUT, NULL},
    {"list-devices", 0, A_NONE, 0, O_LIST, NULL},
    {"rsh", 'e', A_REQ, 0, O_RSH, NULL},
    {"rdma-host", 0, A_REQ, 0, O_RDMA_HOST, NULL},
    {"lanes", 0, A_REQ, 0, O_LANES, NULL},
    {"one-rail", 0, A_NONE, 0, O_ONE_RAIL, NULL},
    {"rdma-devices", 0, A_REQ, 0, O_RDMA_DEVICES, NULL},
    {"remote-rdcp", 0, A_REQ, 0, O_REMOTE_RDCP, NULL},
    {"remote-server", 0, A_NONE, 0, O_REMOTE_SERVER, NULL},
    {"json", 0, A_NONE, 0, O_JSON, NULL},
    {"progress", 0, A_NONE, F_NEG, O_PROGRESS, NULL},
    {NULL, 'P', A_NONE, 0, O_P, NULL},
    {"password-file", 0, A_REQ, 0, O_PASSWORD_FILE, NULL},
    {"ca", 0, A_REQ, 0, O_CA, NULL},
    {"known-hosts", 0, A_REQ, 0, O_KNOWN_HOSTS, NULL},
    {"cert", 0, A_REQ, 0, O_CERT, NULL},
    {"key", 0, A_REQ, 0, O_KEY, NULL},
    {"encrypt", 0, A_NONE, 0, O_ENCRYPT, NULL},
    {"transport", 0, A_REQ, 0, O_TRANSPORT, NULL},
    {"partial", 0, A_NONE, F_NEG, O_PARTIAL, NULL},
    {"trust-partial", 0, A_NONE, 0, O_TRUST_PARTIAL, NULL},
    {"retries", 0, A_REQ, 0, O_RETRIES, NULL},
    {"partial-dir", 0, A_REQ, 0, O_PARTIAL_DIR, NULL},
    {"ipv4", '4', A_NONE, 0, O_IPV4, NULL},
    {"ipv6", '6', A_NONE, 0, O_IPV6, NULL},
    {"itemize-changes", 'i', A_NONE, F_NEG, O_ITEMIZE, NULL},
    {"out-format", 0, A_REQ, 0, O_OUT_FORMAT, NULL},
    {"log-format", 0, A_REQ, 0, O_OUT_FORMAT, NULL}, /* rsync's old name */
    {"log-file", 0, A_REQ, 0, O_LOG_FILE, NULL},
    {"log-file-format", 0, A_REQ, 0, O_LOG_FILE_FORMAT, NULL},
    {"stats", 0, A_NONE, F_NEG, O_STATS, NULL},
    {"info", 0, A_REQ, 0, O_INFO, NULL},
    {"one-file-system", 'x', A_NONE, F_NEG, O_ONE_FS, NULL},
    {"copy-links", 'L', A_NONE, F_NEG, O_COPY_LINKS, NULL},
    {"compress", 'z', A_NONE, F_NEG, O_COMPRESS, NULL},
    {"compress-choice", 0, A_REQ, 0, O_COMPRESS_ARG, NULL},
    {"zc", 0, A_REQ, 0, O_COMPRESS_ARG, NULL},
    {"compress-level", 0, A_REQ, 0, O_COMPRESS_ARG, NULL},
    {"zl", 0, A_REQ, 0, O_COMPRESS_ARG, NULL},
    {"skip-compress", 0, A_REQ, 0, O_COMPRESS_ARG, NULL},
    {"chmod", 0, A_REQ, 0, O_CHMOD, NULL},
    {"bwlimit", 0, A_REQ, 0, O_BWLIMIT, NULL},
    {"list-only", 0, A_NONE, F_NEG, O_LIST_ONLY, NULL},
    {"mkpath", 0, A_NONE, F_NEG, O_MKPATH, NULL},
    /* rsync's quick check and transfer rules (issue 28) */
    {"ignore-times", 'I', A_NONE, F_NEG, O_IGNORE_TIMES, NULL},
    {"size-only", 0, A_NONE, F_NEG, O_SIZE_ONLY, NULL},
    {"modify-window", '@', A_REQ, 0, O_MODIFY_WINDOW, NULL},
    {"update", 'u', A_NONE, F_NEG, O_UPDATE, NULL},
    {"dry-run", 'n', A_NONE, F_NEG, O_DRY_RUN, NULL},
    {"ignore-existing", 0, A_NONE, F_NEG, O_IGNORE_EXISTING, NULL},
    {"existing", 0, A_NONE, F_NEG, O_EXISTING, NULL},
    {"ignore-non-existing", 0, A_NONE, F_NEG, O_EXISTING, NULL},
    {"max-size", 0, A_REQ, 0, O_MAX_SIZE, NULL},
    {"min-size", 0, A_REQ, 0, O_MIN_SIZE, NULL},
    /* selection: rsync's filter rules, in command-line order */
    {"filter", 'f', A_REQ, 0, O_FILTER, NULL},
    {NULL, 'F', A_NONE, 0, O_F, NULL},
    {"exclude", 0, A_REQ, 0, O_EXCLUDE, NULL},
    {"include", 0, A_REQ, 0, O_INCLUDE, NULL},
    {"exclude-from", 0, A_REQ, 0, O_EXCLUDE_FROM, NULL},
    {"include-from", 0, A_REQ, 0, O_INCLUDE_FROM, NULL},
    {"from0", '0', A_NONE, F_NEG, O_FROM0, NULL},
    {"relative", 'R', A_NONE, F_NEG, O_RELATIVE, NULL},
    {"files-from", 0, A_REQ, 0, O_FILES_FROM, NULL},
    {"remove-source-files", 0, A_NONE, 0, O_REMOVE_SOURCE, NULL},
    /* deletion on the receiver (issue 29) */
    {"delete", 0, A_NONE, 0, O_DELETE, NULL},
    {"del", 0, A_NONE, 0, O_DELETE, NULL},
    {"delete-during", 0, A_NONE, 0, O_DELETE, NULL},
    {"delete-before", 0, A_NONE, 0, O_DELETE_BEFORE, NULL},
    {"delete-delay", 0, A_NONE, 0, O_DELETE_AFTER, NULL},
    {"delete-after", 0, A_NONE, 0, O_DELETE_AFTER, NULL},
    {"delete-excluded", 0, A_NONE, 0, O_DELETE_EXCLUDED, NULL},
    {"ignore-errors", 0, A_NONE, 0, O_IGNORE_ERRORS, NULL},
    {"force", 0, A_NONE, 0, O_FORCE, NULL},
    {"max-delete", 0, A_REQ, 0, O_MAX_DELETE, NULL},
    {"allow-empty-source", 0, A_NONE, 0, O_ALLOW_EMPTY, NULL},
    /* harmless: what they ask for is what rdcp does anyway */
    {"whole-file", 'W', A_NONE, F_NEG, O_HARMLESS, NULL},
    {"inc-recursive", 0, A_NONE, F_NEG, O_HARMLESS, NULL},
    {"i-r", 0, A_NONE, F_NEG, O_HARMLESS, NULL},
    {"no-motd", 0, A_NONE, 0, O_HARMLESS, NULL},
    {"blocking-io", 0, A_NONE, F_NEG, O_HARMLESS, NULL},
    /* rsync options rdcp does not offer (rdcp(1), RSYNC OPTIONS NOT OFFERED) */
    {"debug", 0, A_REQ, 0, O_REFUSED, "rdcp has no debug flags; -vv shows its steps and timings"},
    {"stderr", 0, A_REQ, 0, O_REFUSED,
     "rdcp writes messages to stderr and file lists to stdout; redirect them as you need"},
    {"backup", 'b', A_NONE, F_NEG, O_BACKUP, NULL},
    {"backup-dir", 0, A_REQ, 0, O_BACKUP_DIR, NULL},
    {"suffix", 0, A_REQ, 0, O_SUFFIX, NULL},
    {"inplace", 0, A_NONE, 0, O_REFUSED,
     "rdcp writes each file beside its final name and renames it into place when complete"},
    {"append", 0, A_NONE, 0, O_REFUSED,
     "rdcp resumes interrupted files by itself, chunk by chunk; drop it"},
    {"append-verify", 0, A_NONE, 0, O_REFUSED,
     "rdcp resumes interrupted files by itself and checks every chunk; drop it"},
    {"dirs", 'd', A_NONE, 0, O_REFUSED, "rdcp copies directories only with -r"},
    {"old-dirs", 0, A_NONE, 0, O_REFUSED, "rdcp copies directories only with -r"},
    {"old-d", 0, A_NONE, 0, O_REFUSED, "rdcp copies directories only with -r"},
    {"copy-unsafe-links", 0, A_NONE, 0, O_REFUSED, R_LINKS},
    {"safe-links", 0, A_NONE, 0, O_REFUSED, R_LINKS},
    {"munge-links", 0, A_NONE, 0, O_REFUSED, R_LINKS},
    {"copy-dirlinks", 'k', A_NONE, 0, O_REFUSED, R_LINKS},
    {"keep-dirlinks", 'K', A_NONE, 0, O_REFUSED, R_LINKS},
    {"executability", 'E', A_NONE, 0, O_REFUSED, "use -p for exact modes, or --chmod"},
    {"copy-devices", 0, A_NONE, 0, O_REFUSED, "rdcp copies devices as devices only (-D, as root)"},
    {"write-devices", 0, A_NONE, 0, O_REFUSED,
     "rdcp never writes into devices; it makes them (-D, as root)"},
    {"atimes", 'U', A_NONE, 0, O_REFUSED,
     "rdcp keeps modification times only (the access time is set to it)"},
    {"open-noatime", 0, A_NONE, 0, O_REFUSED,
     "rdcp does not change how sources are opened; mount them noatime"},
    {"crtimes", 'N', A_NONE, 0, O_REFUSED, "rdcp keeps modification times only"},
    {"omit-dir-times", 'O', A_NONE, 0, O_REFUSED,
     "rdcp always sets the times of directories and symlinks"},
    {"omit-link-times", 'J', A_NONE, 0, O_REFUSED,
     "rdcp always sets the times of directories and symlinks"},
    {"super", 0, A_NONE, 0, O_REFUSED, R_OWNERS},
    {"fake-super", 0, A_NONE, 0, O_REFUSED, R_OWNERS},
    {"usermap", 0, A_REQ, 0, O_REFUSED, R_OWNERS},
    {"groupmap", 0, A_REQ, 0, O_REFUSED, R_OWNERS},
    {"chown", 0, A_REQ, 0, O_REFUSED, R_OWNERS},
    {"copy-as", 0, A_REQ, 0, O_REFUSED, "run rdcp as that user (sudo -u USER rdcp ...)"},
    {"preallocate", 0, A_NONE, 0, O_REFUSED, "rdcp does not preallocate files; drop it"},
    {"block-size", 'B', A_REQ, 0, O_REFUSED,
     "rdcp compares and moves chunks: use --chunk-size SIZE"},
    {"rsync-path", 0, A_REQ, 0, O_REFUSED, "use --remote-rdcp PATH"},
    {"delete-missing-args", 0, A_NONE, 0, O_REFUSED,
     "rdcp reports every missing source and deletes nothing for it; leave the missing ones "
     "off the command line"},
    {"ignore-missing-args", 0, A_NONE, 0, O_REFUSED,
     "rdcp reports every missing source; leave the missing ones off the command line"},
    {"max-alloc", 0, A_REQ, 0, O_REFUSED,
     "rdcp's memory is bounded by --pool-size, --depth and --chunk-size"},
    {"delay-updates", 0, A_NONE, 0, O_REFUSED,
     "rdcp renames each file into place as soon as it is complete and verified"},
    {"prune-empty-dirs", 'm', A_NONE, 0, O_REFUSED,
     "rdcp copies empty directories as they are; remove them with find -empty -delete"},
    {"contimeout", 0, A_REQ, 0, O_REFUSED, "use --timeout SECONDS (it covers connecting too)"},
    {"temp-dir", 'T', A_REQ, 0, O_REFUSED,
     "rdcp keeps a file in progress beside it, or in --partial-dir DIR"},
    {"fuzzy", 'y', A_NONE, 0, O_REFUSED, R_BASIS},
    {"compare-dest", 0, A_REQ, 0, O_COMPARE_DEST, NULL},
    {"copy-dest", 0, A_REQ, 0, O_COPY_DEST, NULL},
    {"link-dest", 0, A_REQ, 0, O_LINK_DEST, NULL},
    {"cvs-exclude", 'C', A_NONE, 0, O_REFUSED,
     "rdcp has no built-in CVS list; give the patterns with --exclude"},
    {"old-args", 0, A_NONE, 0, O_REFUSED,
     "rdcp never lets a remote shell split its paths; drop it"},
    {"secluded-args", 's', A_NONE, 0, O_REFUSED,
     "rdcp never lets a remote shell split its paths; drop it"},
    {"protect-args", 0, A_NONE, 0, O_REFUSED,
     "rdcp never lets a remote shell split its paths; drop it"},
    {"trust-sender", 0, A_NONE, 0, O_REFUSED,
     "rdcp checks every path a sender names; there is nothing to trust"},
    {"address", 0, A_REQ, 0, O_REFUSED,
     "rdcp takes the source address from the route; use -4/-6 or --rdma-host"},
    {"sockopts", 0, A_REQ, 0, O_REFUSED, "rdcp sets its own socket options"},
    {"outbuf", 0, A_REQ, 0, O_REFUSED, "rdcp writes each output line whole; drop it"},
    {"8-bit-output", '8', A_NONE, 0, O_EIGHT_BIT, NULL},
    {"remote-option", 'M', A_REQ, 0, O_REFUSED, "rdcp sends its options to the other side itself"},
    {"early-input", 0, A_REQ, 0, O_REFUSED, "rdcpd runs no programs for a client"},
    {"stop-after", 0, A_REQ, 0, O_REFUSED, "use timeout(1): it stops rdcp cleanly (exit 20)"},
    {"stop-at", 0, A_REQ, 0, O_REFUSED, "use timeout(1): it stops rdcp cleanly (exit 20)"},
    {"write-batch", 0, A_REQ, 0, O_REFUSED, R_BATCH},
    {"only-write-batch", 0, A_REQ, 0, O_REFUSED, R_BATCH},
    {"read-batch", 0, A_REQ, 0, O_REFUSED, R_BATCH},
    {"protocol", 0, A_REQ, 0, O_REFUSED, "rdcp agrees on its protocol version by itself"},
    {"iconv", 0, A_REQ, 0, O_REFUSED, "rdcp copies names as bytes, unconverted"},
    {"checksum-seed", 0, A_REQ, 0, O_REFUSED, "rdcp keys its checks with a secret of each session"},
    {"daemon", 0, A_NONE, 0, O_REFUSED, R_DAEMON},
    {"config", 0, A_REQ, 0, O_REFUSED, R_DAEMON},
    {"dparam", 0, A_REQ, 0, O_REFUSED, R_DAEMON},
    {"no-detach", 0, A_NONE, 0, O_REFUSED, R_DAEMON},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static int fail(struct rdcp_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct rdcp_args *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* --rdma-devices: names of 1..63 characters, comma separated, no empties. */
static int devices_ok(const char *s)
{
	size_t n = 0;

	if (!*s || strlen(s) > 255)
		return 0;
	for (; *s; s++) {
		if (*s == ',') {
			if (!n)
				return 0;
			n = 0;
		} else if (*s <= ' ' || *s == '/' || ++n > 63) {
			return 0;
		}
	}
	return n > 0;
}

/* rsync's --info flag names: those rdcp has output for, and the rest (no output here). */
static int info_item(struct rdcp_opts *o, const char *s, size_t len)
{
	static const char *const silent[] = {"backup", "copy",	 "del",	 "flist",  "misc",
					     "mount",  "remove", "skip", "symsafe"};
	char name[16];
	size_t n = 0, i;
	int level = 1,
	    *all[4] = {&o->info.name, &o->info.progress, &o->info.stats, &o->info.nonreg};

	while (n < len && (s[n] < '0' || s[n] > '9'))
		n++;
	if (!n || n >= sizeof(name))
		return -1;
	for (i = 0; i < n; i++)
		name[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	name[n] = '\0';
	if (n < len) {
		if (len - n > 1)
			return -1;
		level = s[n] - '0';
	}
	if (!strcmp(name, "name"))
		o->info.name = level;
	else if (!strcmp(name, "progress"))
		o->info.progress = level;
	else if (!strcmp(name, "stats"))
		o->info.stats = level;
	else if (!strcmp(name, "nonreg"))
		o->info.nonreg = level;
	else if (!strcmp(name, "all") || !strcmp(name, "none")) {
		for (i = 0; i < 4; i++)
			*all[i] = name[0] == 'n' ? 0 : level;
	} else {
		for (i = 0; i < sizeof(silent) / sizeof(silent[0]); i++)
			if (!strcmp(name, silent[i]))
				return 0;
		return -1;
	}
	return 0;
}

static int parse_info(struct rdcp_opts *o, const char *v, struct rdcp_args *a)
{
	const char *p = v, *e;

	for (;;) {
		e = strchrnul(p, ',');
		if (e > p && info_item(o, p, (size_t)(e - p)))
			return fail(
			    a,
			    "--info '%s': give NAME or NAME0..NAME9, comma separated: "
			    "name, progress, stats, nonreg (rsync's other flags are accepted "
			    "and print nothing more), all, none",
			    v);
		if (!*e)
			return 0;
		p = e + 1;
	}
}

/* The selection option of an id (rd_selopt.h). */
static enum rd_selopt_id so_id(enum optid id)
{
	static const struct {
		enum optid id;
		enum rd_selopt_id so;
	} map[] = {
	    {O_CHECKSUM, RD_SO_CHECKSUM},
	    {O_IGNORE_TIMES, RD_SO_IGNORE_TIMES},
	    {O_SIZE_ONLY, RD_SO_SIZE_ONLY},
	    {O_MODIFY_WINDOW, RD_SO_MODIFY_WINDOW},
	    {O_UPDATE, RD_SO_UPDATE},
	    {O_DRY_RUN, RD_SO_DRY_RUN},
	    {O_IGNORE_EXISTING, RD_SO_IGNORE_EXISTING},
	    {O_EXISTING, RD_SO_EXISTING},
	    {O_MAX_SIZE, RD_SO_MAX_SIZE},
	    {O_MIN_SIZE, RD_SO_MIN_SIZE},
	    {O_FILTER, RD_SO_FILTER},
	    {O_F, RD_SO_F},
	    {O_EXCLUDE, RD_SO_EXCLUDE},
	    {O_INCLUDE, RD_SO_INCLUDE},
	    {O_EXCLUDE_FROM, RD_SO_EXCLUDE_FROM},
	    {O_INCLUDE_FROM, RD_SO_INCLUDE_FROM},
	    {O_FROM0, RD_SO_FROM0},
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].id == id)
			return map[i].so;
	return (enum rd_selopt_id)0;
}

static int selopt(struct rdcp_opts *o, enum rd_selopt_id id, int on, const char *v, const char *as,
		  struct rdcp_args *a)
{
	struct rd_err err;
	int ret = rd_selopt_apply(&o->sel, id, on, v, as, &err);

	if (ret == -RD_ENOMEM)
		return -2;
	if (ret)
		return fail(a, "%s", err.msg);
	return 0;
}

/* Take one option (d), negated or not, with its value v (NULL if none). */
static int apply(const struct optdef *d, int neg, const char *v, const char *as,
		 struct rdcp_opts *o, struct rdcp_args *a)
{
	uint64_t n;
	int on = !neg;

	switch (d->id) {
	case O_RECURSIVE:
		o->recursive = o->recursive_given = on;
		break;
	case O_PRESERVE:
		o->preserve = on;
		break;
	case O_OWNER:
		o->owner = on;
		break;
	case O_GROUP:
		o->group = on;
		break;
	case O_ARCHIVE: /* rsync's -rlptgoD */
		o->recursive = o->preserve = o->owner = o->group = 1;
		o->meta |= RD_OF_DEVICES | RD_OF_SPECIALS;
		break;
	case O_HARDLINKS:
	case O_XATTRS:
	case O_SPARSE:
	case O_D:
	case O_DEVICES:
	case O_SPECIALS: {
		unsigned bit = d->id == O_HARDLINKS  ? RD_OF_HARDLINKS
			       : d->id == O_XATTRS   ? RD_OF_XATTRS
			       : d->id == O_SPARSE   ? RD_OF_SPARSE
			       : d->id == O_DEVICES  ? RD_OF_DEVICES
			       : d->id == O_SPECIALS ? RD_OF_SPECIALS
						     : RD_OF_DEVICES | RD_OF_SPECIALS;

		o->meta = on ? o->meta | bit : o->meta & ~bit;
		break;
	}
	case O_ACLS: /* as in rsync: ACLs imply exact modes */
		o->meta = on ? o->meta | RD_OF_ACLS : o->meta & ~RD_OF_ACLS;
		if (on)
			o->preserve = 1;
		break;
	case O_LINKS:
		if (neg)
			return fail(a,
				    "%s: rdcp always copies symlinks as symlinks (-L copies "
				    "what they point to)",
				    as);
		break;
	case O_TIMES:
		if (neg)
			return fail(a, "%s: rdcp always keeps modification times", as);
		break;
	case O_NUMERIC_IDS: /* ids always travel as numbers */
		if (neg)
			return fail(a,
				    "%s: rdcp keeps numeric owners and groups and maps no "
				    "names",
				    as);
		break;
	case O_QUIET:
		o->quiet = on;
		break;
	case O_VERBOSE:
		o->verbose = on ? o->verbose + 1 : 0;
		break;
	case O_HELP:
		a->help = 1;
		break;
	case O_VERSION:
		a->version = 1;
		break;
	case O_HUMAN:
		o->human = on ? (o->human < 3 ? o->human + 1 : 3) : 0;
		break;
	case O_CHECKSUM:
		if (v)
			return fail(a,
				    "%s takes no value: it compares whole files; the chunk "
				    "check is --checksum-choice %s",
				    as, v);
		return selopt(o, RD_SO_CHECKSUM, on, v, as, a);
	case O_CHECKSUM_CHOICE:
		if (!*v || strlen(v) > RD_DIGEST_NAME_MAX)
			return fail(a,
				    "%s '%s': give gmac, none or an OpenSSL digest (sha256, "
				    "sha512, blake2b512, ...)",
				    as, v);
		o->checksum_choice = v;
		break;
	case O_CHUNK:
		if (rd_num_parse(v, RD_NUM_SIZE, RD_CHUNK_MIN, RD_CHUNK_MAX, &o->chunk_size))
			return fail(a, "--chunk-size '%s': give a size from 4K to 64M", v);
		break;
	case O_DEPTH:
		if (rd_num_parse(v, 0, 1, 256, &n))
			return fail(a, "--depth '%s': give 1 to 256", v);
		o->depth = (int)n;
		break;
	case O_THREADS:
		if (rd_num_parse(v, 0, 1, RD_ENGINE_THREADS_MAX, &n))
			return fail(a, "--threads '%s': give 1 to %d", v, RD_ENGINE_THREADS_MAX);
		o->threads = (unsigned)n;
		break;
	case O_POOL:
		if (rd_num_parse(v, RD_NUM_SIZE, 1u << 20, 1ull << 40, &o->pool_size))
			return fail(a, "--pool-size '%s': give a size from 1M to 1024G", v);
		break;
	case O_PORT:
		if (rd_num_parse(v, 0, 1, 65535, &n))
			return fail(a, "--port '%s': give 1 to 65535", v);
		o->port = v;
		break;
	case O_NO_FSYNC:
		o->fsync = 0;
		break;
	case O_FSYNC: /* rsync's --fsync is rdcp's default */
		o->fsync = 1;
		break;
	case O_TIMEOUT:
		if (rd_num_parse(v, 0, 1, 86400, &n))
			return fail(a, "--timeout '%s': give seconds, 1 to 86400", v);
		o->timeout_s = (int)n;
		break;
	case O_LIST:
		o->list_devices = 1;
		break;
	case O_LIST_ONLY:
		o->list_only = on;
		break;
	case O_RSH:
		o->rsh = v;
		break;
	case O_RDMA_HOST:
		o->rdma_host = v;
		break;
	case O_LANES:
		if (rd_num_parse(v, 0, 1, RD_LANES_MAX, &n))
			return fail(a, "--lanes '%s': give a number from 1 to %d", v, RD_LANES_MAX);
		o->lanes = (unsigned)n;
		break;
	case O_ONE_RAIL:
		o->one_rail = 1;
		break;
	case O_RDMA_DEVICES:
		if (!devices_ok(v))
			return fail(a,
				    "--rdma-devices '%s': give device names (as in rdcp "
				    "--list-devices), comma separated",
				    v);
		o->rdma_devices = v;
		break;
	case O_REMOTE_RDCP:
		o->remote_rdcp = v;
		break;
	case O_REMOTE_SERVER:
		o->remote_server = 1;
		break;
	case O_JSON:
		o->json = 1;
		break;
	case O_PROGRESS:
		o->progress = on;
		break;
	case O_P: /* rsync's --partial --progress */
		o->progress = 1;
		o->no_partial = 0;
		break;
	case O_PASSWORD_FILE:
		o->password_file = v;
		break;
	case O_CA:
		o->ca = v;
		break;
	case O_KNOWN_HOSTS:
		o->known_hosts = v;
		break;
	case O_CERT:
		o->cert = v;
		break;
	case O_KEY:
		o->key = v;
		break;
	case O_ENCRYPT:
		o->encrypt = 1;
		break;
	case O_TRANSPORT:
		o->transport = rd_transport_parse(v);
		if (o->transport < 0)
			return fail(a, "--transport: '%s' is not auto, rdma or tcp", v);
		break;
	case O_PARTIAL: /* rdcp keeps partials by default: --partial is that */
		o->no_partial = neg;
		break;
	case O_TRUST_PARTIAL:
		o->trust_partial = 1;
		break;
	case O_RETRIES:
		if (rd_num_parse(v, 0, 0, 1000, &n))
			return fail(a, "--retries '%s': give a count, 0 to 1000", v);
		o->retries = (int)n;
		break;
	case O_PARTIAL_DIR:
		if (!rd_sink_partial_dir_valid(v))
			return fail(a,
				    "--partial-dir '%s': give one directory name (no '/'); it "
				    "is made inside each destination directory",
				    v);
		o->partial_dir = v;
		break;
	case O_IPV4:
		o->family = AF_INET;
		break;
	case O_IPV6:
		o->family = AF_INET6;
		break;
	case O_ITEMIZE:
		o->itemize = on ? o->itemize + 1 : 0;
		break;
	case O_OUT_FORMAT:
		o->out_format = v;
		break;
	case O_LOG_FILE:
		if (!*v)
			return fail(a, "%s: give a file name", as);
		o->log_file = v;
		break;
	case O_LOG_FILE_FORMAT:
		o->log_file_format = v;
		break;
	case O_STATS:
		o->stats = on;
		break;
	case O_INFO:
		return parse_info(o, v, a);
	case O_ONE_FS:
		o->one_fs = on ? (o->one_fs < 2 ? o->one_fs + 1 : 2) : 0;
		break;
	case O_COPY_LINKS:
		o->copy_links = on;
		break;
	case O_COMPRESS:
		o->compress = on;
		break;
	case O_COMPRESS_ARG:
		o->compress = 1;
		break;
	case O_CHMOD: {
		struct rd_chmod c = {0};

		if (o->nchmod >= RDCP_CHMOD_MAX)
			return fail(a, "--chmod: at most %d of them", RDCP_CHMOD_MAX);
		if (rd_chmod_parse(&c, v, 022))
			return fail(a,
				    "--chmod '%s': give chmod modes, comma separated: "
				    "[D|F][ugoa][+-=][rwxXst] (or u, g, o), or [D|F]OCTAL",
				    v);
		o->chmod[o->nchmod++] = v;
		break;
	}
	case O_BWLIMIT: {
		/* rsync's --bwlimit: units of 1024 bytes unless a suffix says */
		int r = rd_num_parse_rsync_size(v, 'k', &n);

		if (r || (n && n < 512))
			return fail(a, "--bwlimit=%s is %s", v,
				    r == -2  ? "too large"
				    : r == 0 ? "too small (min: 512 or 0 for unlimited)"
					     : "invalid");
		o->bwlimit = n;
		break;
	}
	case O_MKPATH:
		o->mkpath = on;
		break;
	case O_IGNORE_TIMES:
	case O_SIZE_ONLY:
	case O_MODIFY_WINDOW:
	case O_UPDATE:
	case O_DRY_RUN:
	case O_IGNORE_EXISTING:
	case O_EXISTING:
	case O_MAX_SIZE:
	case O_MIN_SIZE:
	case O_FILTER:
	case O_F:
	case O_EXCLUDE:
	case O_INCLUDE:
	case O_EXCLUDE_FROM:
	case O_INCLUDE_FROM:
	case O_FROM0:
		/* rsync's selection options: shared with rdcp-mpi (lib/session/rd_selopt.h) */
		return selopt(o, so_id(d->id), on, v, as, a);
	case O_RELATIVE:
		o->relative = on;
		break;
	case O_FILES_FROM:
		o->files_from = v;
		break;
	case O_REMOVE_SOURCE:
		o->remove_source = 1;
		break;
	case O_EIGHT_BIT:
		o->eight_bit = 1;
		break;
	case O_LINK_DEST:
	case O_COMPARE_DEST:
	case O_COPY_DEST: {
		/* rsync's rules: one kind, at most 20, in order */
		int kind = d->id == O_LINK_DEST	     ? RD_SINK_ALT_LINK
			   : d->id == O_COMPARE_DEST ? RD_SINK_ALT_COMPARE
						     : RD_SINK_ALT_COPY;

		if (o->alt_kind && o->alt_kind != kind)
			return fail(a, "the %s option conflicts with the %s option",
				    rd_sink_alt_option(kind), rd_sink_alt_option(o->alt_kind));
		if (o->nalt >= RDCP_ALT_DIRS_MAX)
			return fail(a, "at most %d %s args may be specified", RDCP_ALT_DIRS_MAX,
				    rd_sink_alt_option(kind));
		if (!*v || strlen(v) > RD_PATH_MAX)
			return fail(a, "%s '%s': give a directory", rd_sink_alt_option(kind), v);
		o->alt_kind = kind;
		o->alt_dirs[o->nalt++] = v;
		break;
	}
	case O_BACKUP:
		o->backup = on;
		break;
	case O_BACKUP_DIR:
		if (!*v || strlen(v) > RD_PATH_MAX)
			return fail(a, "--backup-dir '%s': give a directory", v);
		o->backup_dir = v;
		o->backup = 1; /* as rsync: it implies --backup */
		break;
	case O_SUFFIX:
		if (strchr(v, '/') || strlen(v) > RD_SUFFIX_MAX)
			return fail(a, "--suffix '%s': no '/', at most %d bytes", v, RD_SUFFIX_MAX);
		o->suffix = v;
		break;
	case O_DELETE:
	case O_DELETE_BEFORE:
	case O_DELETE_AFTER: {
		/* rsync: one --delete-WHEN at most (--delete itself goes with any) */
		unsigned when = d->id == O_DELETE_BEFORE  ? RD_MF_DEL_BEFORE
				: d->id == O_DELETE_AFTER ? RD_MF_DEL_AFTER
							  : 0;
		int kind = !strcmp(d->name, "delete")	      ? 0
			   : !strcmp(d->name, "delete-delay") ? 8
			   : d->id == O_DELETE_AFTER	      ? 4
			   : d->id == O_DELETE_BEFORE	      ? 2
							      : 1;

		if (kind && o->delete_when && o->delete_when != kind)
			return fail(a, "you may not combine several --delete-WHEN options");
		if (kind)
			o->delete_when = kind;
		o->mir_flags |= RD_MF_DELETE | when;
		break;
	}
	case O_DELETE_EXCLUDED:
		/* rsync: --delete-excluded implies --delete */
		o->delete_excluded = 1;
		o->sel.delete_excluded = 1;
		o->mir_flags |= RD_MF_DELETE;
		break;
	case O_IGNORE_ERRORS:
		o->mir_flags |= RD_MF_IGNORE_ERRORS;
		break;
	case O_FORCE:
		o->mir_flags |= RD_MF_FORCE;
		break;
	case O_ALLOW_EMPTY:
		o->mir_flags |= RD_MF_ALLOW_EMPTY;
		break;
	case O_MAX_DELETE:
		if (rd_num_parse(v, 0, 0, INT64_MAX, &n))
			return fail(a, "--max-delete=%s: give a number of entries (0 or more)", v);
		o->max_delete = (int64_t)n;
		break;
	case O_HARMLESS:
		break;
	default:
		return fail(a, "%s: not handled", as);
	}
	return 0;
}

static const struct optdef *by_name(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (opts[i].name && strlen(opts[i].name) == len && !memcmp(opts[i].name, name, len))
			return &opts[i];
	return NULL;
}

static const struct optdef *by_letter(char c)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (opts[i].letter == c)
			return &opts[i];
	return NULL;
}

/* "--name", "--name=value", "--no-name", "--no-X"; *i moves past a separate value. */
static int long_opt(int argc, char **argv, int *i, struct rdcp_opts *o, struct rdcp_args *a)
{
	const char *arg = argv[*i], *name = arg + 2, *eq = strchr(name, '='), *v = NULL;
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct optdef *d = by_name(name, len);
	char as[80];
	int neg = 0;

	snprintf(as, sizeof(as), "--%.*s", (int)len, name);
	if (!d && len > 3 && !strncmp(name, "no-", 3)) {
		d = len == 4 ? by_letter(name[3]) : by_name(name + 3, len - 3);
		if (d && !(d->flags & F_NEG))
			return fail(a, "%.*s: --%s cannot be turned off", (int)len + 2, arg,
				    d->name ? d->name : "it");
		neg = d != NULL;
	}
	if (!d)
		return fail(a,
			    "unknown option %.*s (rdcp takes whole option names; see "
			    "rdcp --help)",
			    (int)len + 2, arg);
	if (d->id == O_REFUSED)
		return fail(a, "--%s is not offered: %s", d->name, d->refusal);
	if (eq && (d->arg == A_NONE || neg)) {
		if (d->id == O_CHECKSUM && !neg)
			return apply(d, 0, eq + 1, as, o, a);
		return fail(a, "%s takes no value (in '%s')", as, arg);
	}
	if (d->arg == A_REQ) {
		if (eq)
			v = eq + 1;
		else if (*i + 1 < argc)
			v = argv[++*i];
		else
			return fail(a, "%s needs a value", as);
	}
	return apply(d, neg, v, as, o, a);
}

/* "-abc", "-eCMD", "-e=CMD", "-e CMD". */
static int short_opts(int argc, char **argv, int *i, struct rdcp_opts *o, struct rdcp_args *a)
{
	const char *p = argv[*i] + 1, *v;
	const struct optdef *d;
	char as[3] = {'-', 0, 0};

	for (; *p; p++) {
		as[1] = *p;
		d = by_letter(*p);
		if (!d)
			return fail(a, "unknown option -%c (in '%s'; see rdcp --help)", *p,
				    argv[*i]);
		if (d->id == O_REFUSED)
			return fail(a, "-%c%s%s is not offered: %s", *p, d->name ? "/--" : "",
				    d->name ? d->name : "", d->refusal);
		if (d->arg == A_NONE) {
			if (apply(d, 0, NULL, as, o, a))
				return -1;
			continue;
		}
		if (p[1])
			v = p[1] == '=' ? p + 2 : p + 1;
		else if (*i + 1 < argc)
			v = argv[++*i];
		else
			return fail(a, "-%c needs a value", *p);
		return apply(d, 0, v, as, o, a);
	}
	return 0;
}

void rdcp_opts_defaults(struct rdcp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fsync = 1;
	o->timeout_s = 30;
	o->retries = 3;
	o->human = 1; /* rsync's default: digits in groups of three */
	o->info.name = o->info.progress = o->info.stats = o->info.nonreg = -1;
	rd_selopt_init(&o->sel);
	o->max_delete = -1;
}

int rdcp_parse(int argc, char **argv, struct rdcp_opts *o, struct rdcp_args *a)
{
	int i, opts_done = 0;

	memset(a, 0, sizeof(*a));
	a->ops = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*a->ops));
	if (!a->ops)
		return -2;
	/* rsync: "-h" is help only when it is the only argument */
	if (argc == 2 && !strcmp(argv[1], "-h")) {
		a->help = 1;
		return 0;
	}
	for (i = 1; i < argc; i++) {
		const char *s = argv[i];
		int r;

		if (opts_done || s[0] != '-' || !s[1]) {
			a->ops[a->nops++] = argv[i];
			continue;
		}
		if (!strcmp(s, "--")) {
			opts_done = 1;
			continue;
		}
		r = s[1] == '-' ? long_opt(argc, argv, &i, o, a) : short_opts(argc, argv, &i, o, a);
		if (r)
			return r;
	}
	/* rsync: with --files-from, -a does not imply -r (and -R is implied) */
	if (o->files_from) {
		o->recursive = o->recursive_given;
		o->relative = 1;
	}
	return 0;
}

void rdcp_info_levels(struct rdcp_opts *o)
{
	/* rsync: -v sets name1 and stats1, -vv name2; --out-format and -i name1 */
	if (o->info.name < 0)
		o->info.name = o->verbose >= 2				   ? 2
			       : o->verbose || o->itemize || o->out_format ? 1
									   : 0;
	if (o->info.progress < 0 && o->progress)
		o->info.progress = 1; /* else -1: the meter on a terminal only */
	if (o->info.stats < 0)
		o->info.stats = o->stats ? (o->verbose >= 2 ? 3 : 2) : 1;
	if (o->info.nonreg < 0)
		o->info.nonreg = 1;
}
