/* SPDX-License-Identifier: MIT */
/*
 * The rdcp wire protocol, version 13 (2 added the GET/DATA seq; 3 added packs:
 * RD_OF_PACK, GET/DATA kind PACK; 4 added batches: RD_OF_BATCH, FILES and
 * DONES; 5 a push's partial dir in OPEN: RD_OF_PARTIAL_DIR; 6 a wider
 * window of entries: RD_OF_WINDOW; 7 what each entry changed in DONE and
 * DONES: RD_OF_ITEMS, and the sender's walk options RD_OF_ONE_FS and
 * RD_OF_COPY_LINKS; 8 a JOIN's proof bound to its lane, its rail and a
 * nonce from the server: the LANES message; 9 password logins inside TLS:
 * section 4, Login; 10 link groups named: RD_FF_LINKED and
 * RD_FF_LINK_LAST; 11 rsync's rules: RD_OF_SELECT, OPEN's SELECT block,
 * RULES, FILE flag CONTENTS, item SKIPPED; 12 listings: LIST, MODULES and
 * RD_OF_LIST, section 3, Listings; 13 mirroring: RD_OF_MIRROR, OPEN's
 * MIRROR block, DELETED; RD_OF_DESTS, OPEN's DESTS block). This comment
 * is the specification;
 * docs/PROTOCOL.md points here and summarizes the metadata extension.
 *
 * All integers are fixed width and big-endian. Every length read off the
 * wire is checked against the hard limits below before it is used, every
 * count against what is left in the message, and unknown message types are
 * refused. Decoders never trust a peer.
 *
 * 1. Connection (librdmacm, RC QP, port RD_DEFAULT_PORT unless told;
 *    over TCP the same data travel as the first frames, see 4.).
 *
 *    Connect private data, client -> server (RD_CM_REQ_LEN bytes):
 *	 0 u32 magic	 RD_MAGIC ("RDCP")
 *	 4 u16 ver_min	 lowest protocol version the client speaks
 *	 6 u16 ver_max	 highest
 *	 8 u32 flags	 RD_CMF_*: JOIN (0x1), see Lanes below; RAILS (0x2):
 *			 the client reads a RAILS message after the TLS
 *			 handshake when the server sets it too (Rails
 *			 below); others ignored
 *	12 u16 ctrl_depth receive buffers the client posted (server's credits)
 *	14 u16 lanes	 a new session: lanes (RC QPs) the client would like,
 *			 0 or 1: one (what rdcp before lanes wrote); a JOIN:
 *			 the lane's index, 1..granted-1
 *	 JOIN only (RD_CM_JOIN_LEN bytes in all):
 *	16 u64 sid	 the session's id from its accept data
 *	24 u8  proof[16] the lane's proof (Lane proofs below)
 *	40 u8  rail	 JOIN with RAILS only (RD_CM_JOIN_RAIL_LEN bytes): the
 *			 client's rail (device) of this lane, 0..RD_RAILS_MAX-1;
 *			 absent or padding: 0
 *    Nothing here is secret or trusted: who the peer is comes from TLS
 *    (section 4), which starts right after this exchange.
 *    The transport may deliver more bytes than this (IB CM pads to 56);
 *    extra bytes are ignored, fewer are refused. A wrong magic is refused;
 *    versions are the caller's to check.
 *
 *    Accept private data, server -> client (RD_CM_REP_LEN bytes, or
 *    RD_CM_REP_LANES_LEN when it grants more than one lane):
 *	 0 u32 magic, 4 u16 version chosen, 6 u16 ctrl_depth, 8 u32 flags
 *	12 u16 lanes	 granted: 1..min(asked, the server's cap); the server
 *			 decides (its --max-lanes), never more than asked
 *	14 u16 rail	 the accept of a JOIN: the server's rail (device) of
 *			 that lane, 0..RD_RAILS_MAX-1; otherwise 0
 *	16 u64 sid	 random: names the session for its JOINs
 *    Shorter accept data (12 bytes, as before lanes) means one lane.
 *
 *    Lanes (RDMA only; over TCP the server always grants one; from
 *    version 8 on, see Lane proofs): a session may run over up to
 *    RD_LANES_MAX RC QPs to the same listener, one
 *    protection domain, completion queue and shared receive queue per
 *    device (Rails below; the credits of 2. count messages, whatever lane
 *    or queue a message takes). Lane 0 is the connection above. After the TLS handshake on
 *    lane 0 (4.), the client connects lanes 1..granted-1, each with a JOIN
 *    request carrying the sid and the proof, which only the two ends of
 *    that TLS session can compute; the server accepts a JOIN only with
 *    the proof of an authenticated session whose lanes are still missing
 *    (anything else: rejected with RD_REJ_LANE, before any queue pair or
 *    memory exists for it), and both ends wait for every lane before the
 *    first message of 3. Order: every SEND carries a 32-bit message
 *    number in its immediate data (lane 0's and the others', one count
 *    per direction, from 0), and the receiving transport hands messages
 *    up strictly in that order, holding a message that overtook another
 *    on a faster lane in its receive buffer until the earlier ones came.
 *    So the layers above see exactly the order the sender sent, as over
 *    one QP. A DATA travels on the lane of its RDMA WRITE (RC order on
 *    that QP places the data first; a DATA therefore also comes up after
 *    every message sent before it, and after every WRITE those carried);
 *    the sender spreads DATA over the lanes in turn; every other message
 *    goes on lane 0. Nothing in the engine depends on lanes.
 *
 *    Rails (RDMA, lanes > 1): a lane may run over another device (a rail)
 *    of either host. Each side numbers its devices in the order its lanes
 *    first used them (rail 0: lane 0's); each has its own protection
 *    domain, completion queue and shared receive queue with ctrl_depth
 *    receives of its own (the credits above still count messages, not
 *    queues). When the client set RAILS and the server, granting more
 *    than one lane, listens on every address and has other RDMA devices,
 *    the server sets RAILS in its accept data and sends, right after the
 *    TLS handshake and sealed like every later message, one RAILS message
 *    (section 3) naming one address of each other device; a RAILS
 *    server sends it even when empty. The client connects lane k to
 *    address (k mod (n + 1)) (0: where lane 0 went, then the list), from
 *    whichever of its devices the route picks. Addresses come only from
 *    inside TLS: a lane sent where an attacker pointed would carry data to
 *    the attacker. Each JOIN says the client's rail and each accept the
 *    server's; a GET carries the rkey of each of the receiver's rails
 *    (section 3), and the sender writes with the rkey of the receiver's
 *    rail of the lane it picked.
 *
 *    Lane proofs (version 8). The private data of a JOIN travels in clear
 *    and anyone on the path can read it: a proof must be good for its one
 *    lane, once. Right after the TLS handshake (after RAILS, if one is
 *    due), a server that granted more than one lane sends one LANES
 *    message (section 3), sealed: 16 random bytes, this session's lane
 *    nonce; the client waits for it before its first JOIN. The proof of
 *    lane k (1..granted-1), joining from the client's rail r (the JOIN's
 *    rail byte; 0 when it has none), is the TLS exporter (RFC 8446 7.5) of
 *    the session with label RD_TLS_LANE_PROOF_LABEL, 16 bytes, context
 *    (27 bytes):
 *	 0 u8  nonce[16]  the LANES nonce
 *	16 u64 sid	  the session's id
 *	24 u16 lane	  k
 *	26 u8  rail	  r
 *    The server takes lane k only with the proof computed for k and the
 *    rail its JOIN names, and only once: a JOIN for a lane already joined
 *    (a replay), with the proof of another lane or rail, for a lane not
 *    granted, or for a session not waiting is refused (RD_REJ_LANE). A
 *    server grants more than one lane only on a connection of version 8
 *    or later (an older client gets one lane: its proofs were the same
 *    16 bytes, rd_tls_export_key(RD_TLS_LANE_LABEL), for every lane,
 *    which anyone who saw one JOIN could use again); a client whose server
 *    chose an older version joins with that old proof.
 *
 *    Failover: with lanes, a SEND whose number the receiver already handed
 *    up, or already holds, is a copy: dropped (its buffer re-posted, its
 *    credits not counted again). A lane whose peer stops acknowledging
 *    (retries exceeded: its link is cut) while another lane lives is given
 *    up alone: every message it had in flight goes again, with the same
 *    number, on a live lane, and with it its WRITE, unless the sender has
 *    since written the same slot (the receiver asks a slot again only once
 *    the DATA arrived, so that DATA was delivered, and the old bytes would
 *    overwrite the new chunk). Messages that went on lane 0 go on the
 *    first live lane. Lanes retry 6 times (7 is "forever" on Soft-RoCE).
 *
 *    Reject private data, server -> client (RD_CM_REJ_LEN bytes):
 *	 0 u32 magic, 4 u16 reason (enum rd_rej_reason), 6 u16 ver_min,
 *	 8 u16 ver_max (what the server speaks, for the version message)
 *
 * 2. Frames and messages. The transport moves frames of at most RD_CTRL_MAX
 *    bytes (SEND/RECV buffers, TCP frames). Until TLS is up, a frame is one
 *    message; after the TLS handshake (section 4) every frame is an
 *    RD_MSG_TLS frame whose payload is one TLS record holding one message.
 *    Messages are at most RD_MSG_MAX bytes, so that a message sealed into a
 *    record still fits one frame. Both share this header:
 *	 0 u8  type	 enum rd_msg_type; unknown types are a protocol error
 *	 1 u8  reserved	 0
 *	 2 u16 credits	 receive buffers the sender re-posted since its
 *			 previous message (credit return)
 *	 4 u32 length	 payload length, <= RD_MSG_MAX - RD_HDR_LEN (a TLS
 *			 frame: <= RD_CTRL_MAX - RD_HDR_LEN)
 *	 8 ...  payload
 *    Credits: each side starts with the peer's ctrl_depth credits, spends
 *    one per message, and gets them back in the credits field. A side keeps
 *    its last credit for a CREDIT message, so credit returns never
 *    deadlock.
 *
 *    The reserved byte must be 0 (refused otherwise), a message is
 *    exactly RD_HDR_LEN + length bytes (trailing bytes are refused), and
 *    each payload below is consumed exactly.
 *
 *    Strings on the wire ("str") are u16 length + bytes, no NUL; paths are
 *    relative, '/'-separated, no empty, "." or ".." component, no NUL,
 *    at most RD_PATH_MAX bytes (checked by rd_path_check()).
 *
 *    Payloads. Offsets count from the start of the payload (message byte
 *    8); "+" marks a field that follows a variable-length one. Fields are
 *    in the order of the struct rd_msg_* members below.
 *
 *    CREDIT (1): empty payload (length 0); only the header's credits.
 *
 *    OPEN (2), client -> server:
 *	 0 u8  mode	  enum rd_open_mode (PUSH 1, PULL 2), else refused
 *	 1 u32 flags	  RD_OF_*
 *	 5 u32 chunk_size RD_CHUNK_MIN..RD_CHUNK_MAX: the largest the client wants
 *	 9 str digest	  0..RD_DIGEST_NAME_MAX bytes, 0x21..0x7e only;
 *			  empty: the server chooses (its module's checksum)
 *	 + u16 npaths	  1..RD_OPEN_PATHS_MAX
 *	 + str path[npaths] "module" or "module/path", rd_path_check()
 *	 + str partial_dir only with RD_OF_PARTIAL_DIR (version 5): 1..
 *			  RD_PARTIAL_DIR_MAX bytes, one name (no '/', no NUL,
 *			  not "." or ".."), checked by rd_name_check(); the
 *			  directory inside each destination directory where
 *			  the receiver of a PUSH keeps its partials. A server
 *			  refuses it on a PULL (the client receives: its own
 *			  --partial-dir needs no wire) and with RD_OF_NO_PARTIAL.
 *	 + u16 window	  only with RD_OF_WINDOW (version 6):
 *			  RD_WINDOW_FILES..RD_WINDOW_MAX, else refused: the most
 *			  entries not yet DONE the client can hold (its memory
 *			  and open files)
 *	 + SELECT	  only with RD_OF_SELECT (version 11): rsync's rules
 *			  for what is compared, placed and selected (issue 28):
 *	   u8  compare	  RD_CMP_QUICK 0: a regular file whose size and mtime
 *			  match (modify_window) is left as it is, unread;
 *			  RD_CMP_CHECKSUM 1 (-c): contents compared chunk by
 *			  chunk (GET SUM), as before version 11; RD_CMP_SIZE 2
 *			  (--size-only): equal sizes match; RD_CMP_ALL 3
 *			  (-I): compared as CHECKSUM, and every file written
 *			  anew even when equal (rsync's --ignore-times
 *			  rewrites each one); else refused
 *	   u16 rules	  RD_SEL_*: UPDATE 0x1 (-u: a receiver's file newer
 *			  than the sender's stays), IGNORE_EXISTING 0x2,
 *			  EXISTING 0x4 (nothing new is created), DRY_RUN 0x8
 *			  (the receiver changes nothing; DONE's items say
 *			  what it would have done),
 *			  DEST_DIR 0x10 (PUSH: the destination is a directory,
 *			  made if missing), MKPATH 0x20 (PUSH: its missing
 *			  parents too), RELATIVE 0x40 (-R: paths keep their
 *			  implied directories), DELETE_EXCLUDED 0x80 (filter
 *			  rules without a side are the sender's only); other
 *			  bits, and DEST_DIR or MKPATH on a PULL, refused
 *	   s32 modify_window  RD_WINDOW_NS (-1): mtimes equal to the ns
 *			  where both have ns (one side's 0 ns: seconds); 0..:
 *			  whole seconds that may differ (rsync's
 *			  --modify-window); below -1 refused
 *	   u64 min_size	  files smaller are not transferred (0: none)
 *	   u64 max_size	  files larger are not transferred (RD_SIZE_NONE:
 *			  none)
 *	   npaths x { u8 pflags, u16 skip }  PULL (a PUSH: all 0, else
 *			  refused): pflags RD_PF_CONTENTS 0x1: the path names
 *			  the directory's contents (rsync's "dir/"; a module's
 *			  root always does): the server flags that source's
 *			  entries RD_FF_CONTENTS; skip (RELATIVE only, else 0):
 *			  bytes of the path after "module/" that are not sent
 *			  (rsync's "/./"), 0 or just past a '/', less than the
 *			  path's rest; other bits or values refused
 *	   u16 nrules	  filter rules that follow in RULES, 0..RD_RULES_MAX
 *	   u32 nnames	  PULL (a PUSH: 0): --files-from names that follow in
 *			  RULES, 0..RD_NAMES_MAX
 *	 + MIRROR	  only with RD_OF_MIRROR (version 13, RD_PROTO_MIRROR;
 *			  only with RD_OF_SELECT, else refused): rsync's
 *			  --delete and its relatives (issue 29), for the
 *			  receiver, which alone deletes:
 *	   u16 flags	  RD_MF_DELETE 0x1 (any --delete*: the receiver
 *			  deletes, in each directory of the transfer, what the
 *			  sender did not list there), RD_MF_DEL_BEFORE 0x2
 *			  (--delete-before: at the directory's POST, at once),
 *			  RD_MF_DEL_AFTER 0x4 (--delete-delay/-after: once the
 *			  run's last entry is done; neither: --delete-during,
 *			  once every entry before the POST is done), RD_MF_FORCE
 *			  0x8 (a non-empty directory may be replaced by a
 *			  non-directory), RD_MF_IGNORE_ERRORS 0x10 (a source
 *			  error does not turn deletion off), RD_MF_ALLOW_EMPTY
 *			  0x20 (an empty top-level source directory may
 *			  empty its destination), RD_MF_LATE_ROOM 0x40 (the
 *			  sender acts on no DONE before its FIN: it removes
 *			  no source; with max_delete a file a full directory
 *			  is in the way of may wait, verified, for its room
 *			  until the end, to count in rsync's order),
 *			  RD_MF_REMOVE_SRC 0x80 (PULL only, never with
 *			  LATE_ROOM: --remove-source-files, the server as
 *			  sender removes each source file once the receiver
 *			  confirmed it, as a push's client does; a daemon
 *			  needs the module's delete permission, else it
 *			  refuses at OPEN); other
 *			  bits, both BEFORE and AFTER, or either without
 *			  DELETE: refused
 *	   s64 max_delete -1: no limit; 0..: entries the receiver may
 *			  delete in all (rsync's --max-delete); below -1 refused
 *			  A daemon refuses DELETE on a PUSH into a module
 *			  whose (or whose user's) delete permission is not
 *			  given, at OPEN (ERROR naming the module).
 *	 + DESTS	  only with RD_OF_DESTS (version 13; PUSH only, and
 *			  only with RD_OF_SELECT): where the receiver looks
 *			  before it asks for data, and what it keeps (rsync's
 *			  --link-dest, --compare-dest, --copy-dest, --backup,
 *			  --backup-dir, --suffix; issue 29). After the MIRROR
 *			  block when RD_OF_MIRROR is set, else right after
 *			  SELECT:
 *	   u8  flags	  RD_DF_BACKUP 0x1 (-b: keep what is replaced),
 *			  RD_DF_SUFFIX 0x2 (suffix given; else the default:
 *			  "~", or "" with a backup dir); other bits refused
 *	   str backup_dir 0..RD_PATH_MAX bytes, no NUL (0: beside each
 *			  file); only with BACKUP. Relative to the
 *			  destination unless it starts with '/' (then from the
 *			  module's top); ".." may be used but never leave the
 *			  module: such an OPEN is refused with an ERROR naming
 *			  the option and the path
 *	   str suffix	  0..RD_SUFFIX_MAX bytes, no '/' or NUL; only with
 *			  SUFFIX; empty only with a backup dir
 *	   u8  kind	  RD_DK_NONE 0, RD_DK_LINK 1 (--link-dest),
 *			  RD_DK_COMPARE 2, RD_DK_COPY 3; else refused
 *	   u8  ndests	  0..RD_DESTS_MAX, 0 exactly when kind is NONE
 *	   ndests x str dir  1..RD_PATH_MAX bytes, no NUL, tried in order;
 *			  resolved as backup_dir is (beneath the module,
 *			  never through a symlink)
 *
 *    OPEN_OK (3), server -> client:
 *	 0 u32 flags	  RD_OF_* the server will honour (a subset of OPEN's)
 *	 4 u32 chunk_size RD_CHUNK_MIN..the client's: the server decides (its
 *			  memory budget); the client refuses a larger one
 *	 8 str digest	  1..RD_DIGEST_NAME_MAX: the client's, or the
 *			  server's choice when the client left it empty
 *	 + u16 window	  only with RD_OF_WINDOW honoured (version 6):
 *			  RD_WINDOW_FILES..RD_WINDOW_MAX, else refused, and at
 *			  most the client's (the client refuses more): the
 *			  window both sides keep, the server's decision. Without
 *			  RD_OF_WINDOW the window is RD_WINDOW_FILES.
 *
 *    ERROR (4):
 *	 0 u16 code	  RD_E* (lib/base/rd_err.h); RD_EBUSY (19): a limit
 *			  of the server's (a module's or a user's max
 *			  connections), worth trying again later; a peer that
 *			  does not know a code takes it as RD_EREMOTE
 *	 2 str text	  0..RD_MSG_TEXT_MAX bytes
 *
 *    FILE (5), sender -> receiver:
 *	 0 u32 id	  entry id
 *	 4 u8  type	  enum rd_ftype (REG 1, DIR 2, SYMLINK 3, SPECIAL 4,
 *			  HLINK 5), else refused
 *	 5 u8  flags	  RD_FF_*
 *	 6 u32 mode	  st_mode bits; SPECIAL: the type bits say which
 *			  (S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK), else refused
 *	10 u32 uid
 *	14 u32 gid
 *	18 u64 size	  REG: bytes; SPECIAL S_IFCHR/S_IFBLK: the device
 *			  number, major << 32 | minor; DIR with RD_OF_LIST
 *			  agreed: its st_size (what a listing shows); all
 *			  others 0
 *	26 s64 mtime_sec  two's complement
 *	34 u32 mtime_nsec < 1000000000
 *	38 str path	  rd_path_check()
 *	 + str target	  SYMLINK: 1..RD_PATH_MAX bytes, no NUL; HLINK: the
 *			  wire path (rd_path_check()) of an earlier REG entry
 *			  of this session, the first of its link group (-H);
 *			  others: empty
 *    FILE flags: RD_FF_ROOT 0x1 (the first component is a top-level
 *    source), RD_FF_POST 0x2 (a directory after its contents: apply its
 *    metadata), RD_FF_MORE 0x4 (META follow), RD_FF_CONTENTS 0x20 (only
 *    with RD_OF_SELECT honoured: the entry belongs to a source that named
 *    a directory's contents; the receiver places it without its first
 *    component, so that source's root directory is the destination
 *    itself; on a root only with type DIR), RD_FF_IMPLIED 0x8 (on a DIR
 *    entry only, and only with RD_OF_MIRROR's DELETE agreed: the bit is
 *    RD_FF_LINKED's, which a DIR never carries; the sender did not list
 *    the directory: -R's implied directories, --files-from's parents of a
 *    listed name; the receiver deletes nothing in it, as rsync deletes
 *    only in directories whose contents it sent); others refused.
 *    SPECIAL is sent only with RD_OF_SPECIALS (fifo, socket) or
 *    RD_OF_DEVICES (char, block) honoured, HLINK only with RD_OF_HARDLINKS
 *    (a receiver refuses an HLINK without it as a protocol error).
 *    An HLINK is made (a link to the target, under its own name) once
 *    every earlier entry is done; its data never moves again. The receiver
 *    makes it only when the target names a regular file this session
 *    placed (checked by the file's inode, not its name): a link to
 *    anything else (a file that was there before, one whose copy failed,
 *    a directory) fails that entry.
 *    Link groups (version 10; only with RD_OF_HARDLINKS): the sender flags
 *    the REG entry that starts a group RD_FF_LINKED, and the group's last
 *    HLINK it will send RD_FF_LINK_LAST; the receiver remembers the
 *    files of open groups (RD_FF_LINKED) and forgets one at its
 *    RD_FF_LINK_LAST, so both sides hold only the groups still open, each
 *    at most as many as its own configuration allows (a sender sends the
 *    later members of a group it cannot remember as copies; a receiver
 *    fails the links of a group it could not remember). Below version 10
 *    neither flag is sent (a receiver remembers every REG entry then); a
 *    version-10 receiver refuses LINKED on anything but REG and LINK_LAST
 *    on anything but HLINK, and both without RD_OF_HARDLINKS.
 *    Names rdcp keeps for itself (rd_path_reserved(): partials
 *    ".rdcp-partial.*" and their records, range partials and records
 *    ".rdcp-range.*" (section 6), temporaries ".rdcp.NAME.<16 hex>") are
 *    never sent: a walk skips them, a server refuses to name
 *    one in OPEN, and a receiver fails an entry with such a component.
 *
 *    END (6), sender -> receiver:
 *	 0 u32 nfiles	  number of FILE messages sent
 *
 *    GET (7), receiver -> sender (payload 41 bytes):
 *	 0 u32 id
 *	 4 u8  kind	  enum rd_get_kind (DATA 1, SUM 2, PACK 3), else refused;
 *			  | RD_GET_RAILS (0x80): the rail keys below follow
 *	 5 u32 slot	  receiver's pool slot index
 *	 9 u64 chunk	  chunk index in the file; PACK: the number of files
 *			  (1..RD_PACK_FILES_MAX, else refused)
 *	17 u64 addr	  slot address for the RDMA WRITE
 *	25 u32 rkey
 *	29 u32 len	  slot length
 *	33 u64 seq	  request number: strictly increasing over the
 *			  session (the sender refuses any other); it is the
 *			  keyed digests' nonce (lib/digest/rd_digest_keyed.c)
 *	 + only with RD_GET_RAILS, sent only by a receiver running over more
 *	   than one rail (1.):
 *	41 u8  nx	  1..RD_RAILS_MAX-1, else refused
 *	42 u32 xrkey[nx]  the slot's rkey on rails 1..nx (rkey: rail 0)
 *
 *    RAILS (17), server -> client, only as described in 1. (Rails):
 *	 0 u8  n	  0..RD_RAILS_MAX-1, else refused
 *	 1 n x { u8 family (4 or 6, else refused); u8 addr[16] (IPv4: the
 *		 first 4 bytes, the rest 0) }
 *
 *    LANES (18), server -> client, version 8, only as described in 1.
 *    (Lane proofs); payload 16 bytes:
 *	 0 u8  nonce[16]  random, once per session
 *
 *    DATA (8), sender -> receiver:
 *	 0 u32 id
 *	 4 u8  kind	  as in GET
 *	 5 u32 slot
 *	 9 u64 chunk
 *	17 u32 len	  bytes written (or hashed, for SUM)
 *	21 u64 seq	  the GET's seq
 *	29 u8  dlen	  0..RD_DIGEST_MAX
 *	30 u8  digest[dlen] DATA: the chunk's tag (rd_digest_protect());
 *			  SUM: the plain digest (rd_digest_compute())
 *
 *    CHUNK_ERR (9), sender -> receiver:
 *	 0 u32 id
 *	 4 u64 chunk
 *	12 u16 code	  RD_E*
 *	14 str text	  0..RD_MSG_TEXT_MAX bytes
 *
 *    DONE (10), receiver -> sender:
 *	 0 u32 id
 *	 4 u16 status	  0 ok, else RD_E*
 *	 6 u64 bytes	  data bytes actually moved
 *	14 str text	  0..RD_MSG_TEXT_MAX bytes: why it failed; with status
 *			  0, notes (metadata the receiver could not apply)
 *	 + u16 items	  only with RD_OF_ITEMS agreed (version 7), and then
 *			  always: what the entry changed on the receiving side,
 *			  RD_IT_* (rsync's itemized changes; bits outside
 *			  RD_IT_KNOWN refused). A sender refuses a DONE that
 *			  has it when not agreed, or lacks it when agreed.
 *
 *    NOTE (11), sender -> receiver:
 *	 0 u16 code	  RD_E*: the entry was skipped (a failure); 0: only
 *			  information about an entry sent (metadata that could
 *			  not be read), nothing failed
 *	 2 str path	  0..RD_PATH_MAX bytes, any bytes (only displayed)
 *	 + str text	  0..RD_MSG_TEXT_MAX bytes
 *
 *    META (14), sender -> receiver: more about the FILE just sent, which
 *    had RD_FF_MORE; one item per message, the last with RD_MF_LAST. Only
 *    the most recent FILE may get META, only until its LAST; the receiver
 *    requests no chunk of that file before its LAST.
 *	 0 u32 id	  the FILE's id
 *	 4 u8  kind	  enum rd_meta_kind, else refused
 *	 5 u8  flags	  RD_MF_*; other bits refused
 *	 XATTR (1), -X (only "user." names are sent and applied):
 *	 6 str name	  1..RD_XATTR_NAME_MAX bytes, no NUL
 *	 + u32 vlen	  0..RD_XATTR_VAL_MAX
 *	 + u8  value[vlen]
 *	 ACL (2), -A (POSIX.1e; REG and DIR only):
 *	 6 u8  type	  RD_ACL_ACCESS 1, RD_ACL_DEFAULT 2 (DIR only)
 *	 7 u16 n	  1..RD_ACL_MAX
 *	 9 n x { u8 tag (enum rd_acl_tag), u8 perm (0..7: r 4, w 2, x 1),
 *		 u32 id (USER/GROUP: uid/gid; others 0) }
 *	 SPARSE (3), -S, REG only: the file's data extents, the rest are
 *	 holes (found with SEEK_DATA/SEEK_HOLE); at most one per file:
 *	 6 u16 n	  0..RD_SPARSE_MAX (0: all of the file is a hole)
 *	 8 n x { u64 off, u64 len }  len > 0, ascending, not overlapping,
 *			  off + len <= the FILE's size
 *	 With a map, chunk c of the file carries only the bytes of the
 *	 extents inside [c * chunk_size, (c + 1) * chunk_size), packed in
 *	 order: DATA len (and the digest) cover just those bytes, and a
 *	 chunk without any is never requested. The receiver writes each
 *	 piece at its offset and leaves the holes unwritten.
 *
 *    Packs (version 3, only with RD_OF_PACK honoured; issue 13): many
 *    small files' data in one chunk. GET kind PACK asks for the files with
 *    ids id .. id + chunk - 1, each of them a REG entry announced and not
 *    yet DONE, without a SPARSE map, of 1..RD_PACK_FILE_MAX bytes and at
 *    most chunk_size bytes; their sizes (from FILE) add up to at most the
 *    slot's len and chunk_size (the sender refuses anything else as a
 *    protocol error). The sender RDMA-writes the files' bytes one after
 *    the other, in id order, at addr, and answers DATA kind PACK with the
 *    same id and chunk (the count), len the sum of the sizes, and one tag
 *    over the whole pack (rd_digest_protect with id, chunk = count, len,
 *    seq). The receiver verifies the pack before it writes or commits any
 *    of its files (a mismatch: the same GET again, as for any chunk). A
 *    file of the pack the sender cannot read whole gets a CHUNK_ERR (its
 *    id, chunk 0) before the pack's DATA; its bytes in the pack are zeros
 *    and the receiver fails that file alone. Large files keep their own
 *    chunks (kinds DATA and SUM).
 *
 *    Batches (version 4, only with RD_OF_BATCH honoured; issue 13): many
 *    entries per control message, both ways.
 *    FILES (15), sender -> receiver: FILE messages in one:
 *	 0 u16 n	  1..RD_BATCH_MAX
 *	 2 n x FILE payload, each exactly as in FILE and checked the same way;
 *			  ids consecutive as ever; only the last may have
 *			  RD_FF_MORE (its META follow the FILES), else refused
 *    DONES (16), receiver -> sender: DONE messages with status 0 and no
 *    text, in one:
 *	 0 u16 n	  1..RD_BATCH_MAX
 *	 2 n x { u32 id, u64 bytes }  as in DONE; with RD_OF_ITEMS agreed
 *			  n x { u32 id, u64 bytes, u16 items } (the length
 *			  says which; refused as DONE's items are)
 *    Each entry means exactly what its single message would; a side may
 *    still send FILE and DONE (a DONE with a failure or a note always
 *    goes alone).
 *
 *    Wide batches (version 14, only with RD_OF_WIDE honoured, which needs
 *    RD_OF_BATCH): the sender announces entries in FILEZ, never FILES, and a
 *    DONES may hold up to RD_BATCH_WIDE entries (else RD_BATCH_MAX: more is
 *    refused). Both sides keep at most half the window in one batch, so two
 *    batches are in flight.
 *    FILEZ (23), sender -> receiver: FILE entries, compact:
 *	 0 u16 n	  1..RD_BATCH_WIDE
 *	 2 u32 id	  the first entry's id; entry i has id + i
 *	 6 n x {
 *	   u8  type	  as in FILE
 *	   u8  flags	  RD_FF_*, as in FILE
 *	   u8  have	  which fields follow; one that does not is the
 *			  previous entry's (mode, uid, gid, mtime_sec) or 0
 *			  (mtime_nsec, size) or empty (target):
 *			  RD_FZ_MODE 0x1, RD_FZ_UID 0x2, RD_FZ_GID 0x4,
 *			  RD_FZ_SEC 0x8, RD_FZ_NSEC 0x10, RD_FZ_SIZE32 0x20,
 *			  RD_FZ_SIZE64 0x40 (not both sizes), RD_FZ_TARGET
 *			  0x80; the first entry of a FILEZ must have MODE,
 *			  UID, GID and SEC (a message stands alone)
 *	   u32 mode	  (MODE)
 *	   u32 uid	  (UID)
 *	   u32 gid	  (GID)
 *	   s64 mtime_sec  (SEC)
 *	   u32 mtime_nsec (NSEC)
 *	   u32 size	  (SIZE32) or u64 size (SIZE64)
 *	   u16 keep	  bytes of the previous entry's path this one starts
 *			  with: 0..its length (the first entry: 0)
 *	   str rest	  the path's other bytes; keep + length 1..RD_PATH_MAX
 *	   str target	  (TARGET)
 *	 }		  each entry is then exactly a FILE and is checked the
 *			  same way (rd_path_check() on the whole path); only
 *			  the last may have RD_FF_MORE; nothing may follow
 *    A rerun's file costs some 20 bytes here against FILE's 60 or more.
 *
 *    RULES (19), client -> server, only after an OPEN whose SELECT
 *    announced nrules + nnames > 0: exactly that many strings, filter
 *    rules first, in as many RULES as the client likes, before the server
 *    answers OPEN (anything else first, more than announced, or more than
 *    RD_RULES_BYTES_MAX / RD_NAMES_BYTES_MAX bytes in all: refused):
 *	 0 u8  kind	  RD_RULES_FILTER 1, RD_RULES_NAMES 2
 *	 1 u16 n	  1..: strings in this message
 *	 3 n x str	  FILTER: one rule in rsync's syntax ("- *.o", "+ /dir/",
 *			  ": .rsync-filter", "P keep", "!"), 1..RD_RULE_MAX
 *			  bytes, no NUL, CR or LF; the server parses each and
 *			  refuses the OPEN (ERROR naming the rule) for one it
 *			  cannot parse or will not run (a merge file, which
 *			  names a file of the client's). NAMES: a --files-from
 *			  name, relative to the first OPEN path
 *			  (rd_path_check()).
 *    Filters run where rsync runs them: the sender leaves out what its
 *    rules exclude (hide) while it walks, reading per-directory merge
 *    files (": NAME") from the directories it walks, through their
 *    descriptors; a receiver keeps them for what it protects (--delete).
 *    A server's own confinement (its module) is never widened by a rule.
 *
 *    LIST (20), client -> server, version RD_PROTO_LIST, instead of OPEN
 *    (section 3, Listings): empty payload (length 0).
 *
 *    MODULES (21), server -> client, the answer to LIST, one or more:
 *	 0 u8  flags	  RD_LSF_LAST (0x1): the last MODULES; other bits refused
 *	 1 u16 n	  0..RD_LIST_BATCH, else refused
 *	 3 n x { str name     1..RD_LIST_NAME_MAX bytes, no '/', no byte
 *			      below 0x20, no 0x7f
 *		 str comment  0..RD_LIST_COMMENT_MAX bytes, no byte below
 *			      0x20, no 0x7f }
 *    Only the LAST may be empty; a client refuses an empty one that is
 *    not, more than RD_LIST_MODULES_MAX names in all, and anything else
 *    in their place (an ERROR ends the session as ever).
 *
 *    DELETED (22), receiver -> sender, version 13, only after an OPEN with
 *    RD_MF_DELETE (a sender refuses it otherwise): what the receiver
 *    deleted (or, with DRY_RUN, would delete), for the sending side's
 *    user (rsync's "*deleting" lines, --stats, exit 25):
 *	 0 u16 n	  1..RD_DEL_BATCH
 *	 2 n x { u8 flags  RD_DLF_DIR 0x1 (the entry was a directory),
 *			   RD_DLF_FAILED 0x2 (it could not be deleted: text says
 *			   why), RD_DLF_SKIPPED 0x4 (--max-delete was reached:
 *			   once, path empty, text "N skipped"), RD_DLF_OFF 0x8
 *			   (deletion was turned off
 *			   for the rest of the run: text says why, path empty),
 *			   RD_DLF_UNMADE 0x10 (with FAILED, only after
 *			   RD_MF_LATE_ROOM: the entry at path, whose DONE said
 *			   done, waited for its room and had none: it failed,
 *			   "could not make way");
 *			   other bits refused
 *		 str path  0..RD_PATH_MAX bytes, below the destination (only
 *			   displayed, never used as a path)
 *		 str text  0..RD_MSG_TEXT_MAX bytes; empty unless FAILED,
 *			   SKIPPED or OFF }
 *    The receiver sends them as it deletes, before its FIN.
 *
 *    FIN (12), both ways (payload 16 bytes):
 *	 0 u32 files_ok
 *	 4 u32 files_failed
 *	 8 u64 bytes
 *
 *    TLS (13), both ways: payload = TLS bytes (handshake) or exactly one
 *    TLS record holding exactly one message (after the handshake). Only
 *    the TLS layer (lib/xport/rd_xport_tls.c) reads these; rd_msg_decode()
 *    refuses them, and the TLS layer refuses anything else once TLS is up.
 *
 * 3. Session.
 *    client: OPEN (mode PUSH = client sends files, PULL = client receives),
 *	      then the RULES its SELECT announced (version 11)
 *    server: OPEN_OK, or ERROR and disconnect.
 *    Then the side that has the files is the "sender", the other the
 *    "receiver", whatever the mode:
 *	sender:   FILE ... (one per entry, ids 1, 2, 3 ... in order) ... END
 *	receiver: for each regular file, GET chunks into its own registered
 *		  pool slots (addr+rkey in the GET); the sender RDMA-WRITEs the
 *		  chunk there, then SENDs DATA (RC ordering: the WRITE is placed
 *		  before DATA arrives) with the chunk's digest. The receiver
 *		  verifies, writes, and GETs again (bounded retries) on mismatch.
 *		  GET kind SUM asks only for the digest (no WRITE): used to skip
 *		  chunks the receiver already holds.
 *		  Resume: SUM is asked chunk by chunk, for each chunk the
 *		  receiver holds in a partial kept by an earlier, interrupted
 *		  copy (lib/sink/rd_sink_partial.h) or in an existing final
 *		  file that holds it whole (an existing prefix); equal chunks
 *		  are kept, the others asked for with GET DATA. The answer is
 *		  a plain digest (rd_digest_compute: SHA-256 for the keyed
 *		  kinds), which both sides compute now, inside this session's
 *		  TLS: nothing from an earlier session (its keys, its MACs) is
 *		  compared. SUM answers come in the order of their GETs. With
 *		  checksum none there is no SUM: the receiver resends partials
 *		  unless the client set RD_OF_TRUST_PARTIAL.
 *		  Work bounds (what one small GET may make a sender read and
 *		  hash): a receiver asks each chunk's SUM at most once, in
 *		  increasing chunk order per entry, and asks, in all, for at
 *		  most RD_GET_WORK_X times the bytes of the regular files
 *		  announced plus RD_GET_WORK_SLACK chunks (a GET counts its
 *		  chunk's length, a PACK its files' sizes): a SUM and a DATA
 *		  of every chunk and three resends of each. A sender refuses a
 *		  SUM for a chunk at or below one it summed already, and any
 *		  GET past the budget, as a protocol error. A resent GET is not
 *		  progress for the idle timeout, nor a SUM: only every
 *		  RD_SUM_PROGRESS_BYTES of SUMs count as one step (so a
 *		  resume that compares a large partial at a few MB/s is not
 *		  cut, and a drip of SUMs does not hold a session open).
 *		  With RD_OF_SELECT (version 11) the receiver applies rsync's
 *		  rules first, by stat alone (its SELECT block): where an
 *		  entry lands (DEST_DIR, RD_FF_CONTENTS), and whether a
 *		  regular file moves at all (the quick check: size and mtime
 *		  per compare and modify_window; the transfer rules UPDATE,
 *		  IGNORE_EXISTING, EXISTING, min_size, max_size). A file they
 *		  leave is answered DONE (bytes 0) without any GET, so the
 *		  sender never reads it; compare CHECKSUM keeps the SUMs above.
 *		  DONE per entry (any type) with a status; the sender keeps at
 *		  most the window's entries not yet DONE (RD_WINDOW_FILES, or
 *		  OPEN_OK's window with RD_OF_WINDOW). Entry id N lives in
 *		  the receiver's window slot N mod window.
 *	receiver: FIN after END and all DONEs; sender: FIN back; disconnect.
 *    Sender-side problems with one file: NOTE (the file was skipped) or
 *    CHUNK_ERR (reading failed; the receiver fails that entry). A sender
 *    may open a file only when its data is first asked for (issue 28):
 *    one gone since it was announced gets CHUNK_ERR code RD_EVANISHED,
 *    one replaced or changed RD_ESYS ("changed while walking"); nothing
 *    changes on the wire.
 *    ERROR from either side ends the session.
 *
 *    Listings (version RD_PROTO_LIST; rsync's "rsync host::" and
 *    --list-only). Both come after the TLS handshake (and a login), in
 *    place of OPEN, so a server reads no module setting for a peer that
 *    has not authenticated:
 *	modules: client LIST; server MODULES ... (the last with RD_LSF_LAST),
 *		  naming each module whose "list" is yes and which this peer
 *		  may use (its hosts allow/deny admit the address; an
 *		  anonymous peer: only modules without authentication; a user:
 *		  those its auth users do not deny), with its comment; then
 *		  the server closes. A server with none sends one empty LAST.
 *	entries:  an OPEN PULL with RD_OF_LIST, checked and confined exactly
 *		  as any pull (module, access, paths beneath the module,
 *		  reserved names); the server walks and sends FILE entries as
 *		  for a pull, the client asks for no chunk and confirms each
 *		  entry at once (DONE), then FIN as ever. Without
 *		  RD_OF_RECURSIVE a directory named is walked one level: its
 *		  entries are sent, the directories among them without their
 *		  contents (rsync's --dirs, which --list-only implies).
 *    A server that speaks an older version refuses LIST as an unknown
 *    message and RD_OF_LIST as an unknown flag; a client checks the
 *    version first and says so.
 *
 * 4. TLS. Right after the connection is established, before any other
 *    message, the client starts a TLS 1.3 handshake (lib/tls/rd_tls.h says
 *    how each kind of peer authenticates) in TLS frames; the server answers
 *    in TLS frames. The handshake must finish within the server's auth
 *    timeout. From then on every message of section 3 travels sealed, one
 *    per record, one record per frame: OPEN, manifests, GETs (with the
 *    receive pool's addresses and rkeys), digests and errors are never in
 *    clear. CREDIT stays a plain frame (it carries only the header's
 *    credit count; flow control is the transport's). Chunk data moves by
 *    RDMA WRITE outside TLS and is bound to the session by its tag: keyed
 *    digests use a key exported from this TLS session (label
 *    RD_TLS_CHUNK_LABEL, 32 bytes), and --encrypt uses AES-GCM under it.
 *
 *    Login (version 9): a client that logs in as a user with a secret
 *    offers no pre-shared key; it offers ALPN "rdcp-login"
 *    (RD_TLS_LOGIN_ALPN) and the server, when it has users' secrets,
 *    selects it and authenticates with a certificate (its "tls
 *    certificate", or a self-signed one around its host key). The client
 *    checks that certificate (--ca, or the key it pinned for the server)
 *    before it sends anything more. Then, still in the handshake phase
 *    (TLS frames carry TLS bytes), two application-data records:
 *	LOGIN, client -> server, one record:
 *	 0 u8  kind	 1
 *	 1 u8  n	 1..64 (RD_TLS_USER_MAX)
 *	 2 u8  user[n]	 printable ASCII, no blank or ':'
 *	2+n u8 proof[32] HMAC-SHA256(K, E): K = scrypt(secret, salt
 *			 "rdcp-login:" user, N = 2^14, r = 8, p = 1, 32 bytes),
 *			 E = the exporter of this TLS session, label
 *			 "EXPORTER-rdcp-login" (RD_TLS_LOGIN_LABEL), no
 *			 context, 32 bytes
 *	VERDICT, server -> client, one record:
 *	 0 u8  kind	 2
 *	 1 u8  status	 0 logged in, 1 refused (a wrong secret, an unknown
 *			 user and a name that cannot be one: the same byte,
 *			 after the same scrypt work)
 *    Any other length or kind is a protocol error. Only after VERDICT 0
 *    does the client send its first message of section 3. Clients before
 *    version 9 sent the user as a PSK identity with a PSK derived from the
 *    secret (PBKDF2, 10,000 rounds): anyone who saw the handshake could
 *    test guesses against its binder. Servers of version 9 refuse such
 *    identities; clients of version 9 do not log in to older servers.
 *
 * 5. The same protocol over TCP (rd_xport_tcp.c), for hosts and links
 *    without RDMA: one TCP connection on the same port number, Nagle off.
 *    The stream is a sequence of frames, each with an 8-byte header:
 *	 0 u8  kind	 RD_TF_*
 *	 1 u8  reserved	 0
 *	 2 u16 reserved	 0
 *	 4 u32 length	 bytes that follow the header
 *    RD_TF_CM_REQ (1) client -> server, first frame: the connect private
 *	data of 1. (length RD_CM_REQ_LEN); RD_TF_CM_REP (2) / RD_TF_CM_REJ
 *	(3) server -> client, first frame back: the accept or reject data
 *	(length RD_CM_REP_LEN / RD_CM_REJ_LEN). Anything else first is
 *	refused and the connection closed.
 *    RD_TF_MSG (4): one control message of 2. (length RD_HDR_LEN ..
 *	RD_CTRL_MAX); credits exactly as over RDMA (a message beyond the
 *	receiver's posted buffers is a protocol error).
 *    RD_TF_WRITE (5): the RDMA WRITE of a DATA: u64 addr, u32 rkey,
 *	u32 reserved 0, then length - 16 payload bytes (at most
 *	RD_CHUNK_MAX), placed by the receiver into its registered region
 *	(addr, rkey and bounds checked as a NIC would) before it reads the
 *	DATA message that follows.
 *
 * 6. Ranges (rdcp-mpi, issue 32): one file moved by several sessions at
 *    once, over several servers that share a file system, and given its
 *    final name once, when every range is in. Negotiated by OPEN flag
 *    RD_OF_RANGES alone (no version: a server that does not know the flag
 *    refuses the OPEN, as for any unknown bit); a server that honours it
 *    answers it in OPEN_OK, and only then may the entries below be sent.
 *    The numbers of this section are kept apart from the others (flag and
 *    kind values from the top) so that the sections grow independently.
 *
 *    FILE flags, REG only, never both, each with RD_FF_MORE and its first
 *    META of kind RANGE (else refused):
 *	RD_FF_RANGE (0x80): the entry is the byte range [off, off + len) of
 *	  the file (its FILE describes the whole file: size, mtime, mode).
 *	  The receiver writes the chunks of the range, and only those, into
 *	  the file's shared range partial (see below), records which it
 *	  verified, and when all are in, seals its range record (after an
 *	  fdatasync with RD_OF_FSYNC). It never renames: DONE says the range
 *	  is sealed (status 0) or why not. The receiver requests only chunks
 *	  c with off <= c * chunk_size < off + len; the sender refuses a GET
 *	  of any other chunk of a range entry.
 *	RD_FF_COMMIT (0x40): give the file its final name. No chunk moves
 *	  (the sender refuses any GET of it). The receiver reads the range
 *	  records of the file beside the partial, keeps those of this job
 *	  (META RANGE's job) that are sealed and describe this very source
 *	  (size, mtime) and checks that their ranges cover every byte of the
 *	  file; then it applies the metadata (the FILE's mode, owners, times
 *	  and any XATTR/ACL META that follow), renames the partial into place
 *	  and removes the records (of any job). A range missing fails the
 *	  entry (DONE with RD_EPARTIAL naming the first missing byte) and
 *	  keeps everything for a rerun: the client's word that ranges are
 *	  complete is never taken, only the records the receiving sessions
 *	  wrote after verifying each chunk.
 *	Quick check (rsync's): when a regular file with the FILE's size and
 *	  mtime (to the ns) is already under the final name, a RANGE entry is
 *	  done at once (DONE, 0 bytes) and a COMMIT only applies metadata.
 *	  With SELECT agreed (RD_OF_SELECT), the receiver decides a range
 *	  entry by SELECT as it decides a whole file, at the final name (no
 *	  range touches it before the COMMIT, so all decide alike): the quick
 *	  check as compare and modify_window say (CHECKSUM and ALL send every
 *	  range), and a rule (UPDATE, EXISTING, IGNORE_EXISTING, the sizes)
 *	  that leaves the file makes a RANGE done at once and a COMMIT change
 *	  nothing (DONE 0).
 *    META kind RANGE (0x10), first META of such an entry:
 *	 6 u64 job	  the job's number (random, the same for every session
 *			  of one run; rdcp-mpi's rank 0 draws it)
 *	14 u64 off	  RANGE: first byte, a multiple of the session's
 *			  chunk_size; COMMIT: 0
 *	22 u64 len	  RANGE: 1.., off + len <= size, and off + len == size
 *			  or a multiple of chunk_size; COMMIT: size
 *	  (the receiver refuses anything else as a protocol error; the
 *	  decoder checks only that off + len does not wrap)
 *    Range partial, in the file's destination directory (or --partial-dir):
 *	data	".rdcp-range.<key>.<name>", key = 16 hex digits of FNV-1a 64
 *		over the name, size, mtime sec and ns: another source version
 *		(or another file) never shares a data file; <name> is cut as
 *		for partials. Opened O_NOFOLLOW, a regular file of one link, or
 *		created; sized to the file; written at the chunks' offsets by
 *		every session of the job, each its own range.
 *	record	"<data>.<off: 16 hex>": one per range session, written whole
 *		into a new file and renamed over, like a partial's record
 *		(lib/sink/rd_sink_range.c has the layout): the source's size,
 *		mtime, chunk size and checksum, the job, the range, a bitmap of
 *		the chunks verified and written, and a flag "sealed" (every
 *		chunk of the range in, and on disk with RD_OF_FSYNC).
 *	Resume: a range session takes as held every chunk that any record of
 *	the same key has (any job), and compares each by GET SUM before it
 *	keeps it, as for partials; a COMMIT trusts only sealed records of
 *	its own job, so nothing an earlier run wrote is taken unverified.
 *    A range entry's path is confined like any other (the receiver's
 *    module); so are the partial and its records, touched only with *at()
 *    calls on the confined parent directory, never followed.
 *
 *    A ranged pull (the client receives): OPEN mode PULL with RD_OF_RANGES
 *    names one path, "module[/dir]", the base; after OPEN_OK the client
 *    sends the list of what it wants, in WANT messages, the last flagged
 *    RD_WF_END; only then does the server send, as the sender of 3., one
 *    entry per item in the list's order: a whole regular file (FILE), or
 *    a range of one (FILE with RD_FF_RANGE and its META RANGE, the job
 *    from WANT), each beneath the base, reached as every path is (openat2
 *    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS from the base's descriptor). An
 *    item that is no regular file, or whose size or mtime is no longer
 *    the WANT's, gets a NOTE (skipped). The client accepts only entries it
 *    asked for, in that order. At most RD_WANT_ITEMS_MAX items and
 *    RD_WANT_BYTES_MAX bytes of paths per session (the server refuses
 *    more): a client with more opens more sessions.
 *    WANT (0x20), client -> server:
 *	 0 u64 job	  as in META RANGE
 *	 8 u8  flags	  RD_WF_END (0x1): the list ends here; other bits refused
 *	 9 u16 n	  0..RD_WANT_BATCH (0 only with RD_WF_END)
 *	11 n x { u8 kind (RD_WANT_WHOLE 1, RD_WANT_RANGE 2, else refused),
 *		 u64 off, u64 len (WHOLE: 0, 0; RANGE: 1.., within size),
 *		 u64 size, s64 mtime_sec, u32 mtime_nsec (< 10^9): the file as
 *		 the client's listing saw it,
 *		 str path (rd_path_check(), relative to the base) }
 */
#ifndef RDCP_PROTO_RD_PROTO_H
#define RDCP_PROTO_RD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define RD_MAGIC	0x52444350u /* "RDCP" */
#define RD_PROTO_MIN	2
#define RD_PROTO_MAX	     14
#define RD_PROTO_PACK	3 /* the first version with RD_OF_PACK */
#define RD_PROTO_BATCH	4 /* the first version with RD_OF_BATCH */
#define RD_PROTO_PARTIAL_DIR 5 /* the first version with RD_OF_PARTIAL_DIR */
#define RD_PROTO_WINDOW	     6 /* the first version with RD_OF_WINDOW */
#define RD_PROTO_ITEMS	     7 /* the first with RD_OF_ITEMS, ONE_FS, COPY_LINKS */
#define RD_PROTO_LANE_PROOF  8 /* the first with LANES and per-lane JOIN proofs */
#define RD_PROTO_LOGIN	     9 /* password logins inside TLS (section 4, Login) */
#define RD_PROTO_LINKS	     10 /* the first with RD_FF_LINKED, RD_FF_LINK_LAST */
#define RD_PROTO_SELECT	     11 /* the first version with RD_OF_SELECT */
#define RD_PROTO_LIST	     12 /* the first with LIST, MODULES and RD_OF_LIST */
#define RD_PROTO_MIRROR	     13 /* the first with RD_OF_MIRROR, DELETED and RD_OF_DESTS */
#define RD_PROTO_WIDE	     14 /* the first with RD_OF_WIDE: FILEZ, wider DONES */
#define RD_DEFAULT_PORT 18710 /* unassigned; not perftest's 18515 */

#define RD_CM_REQ_LEN 16
#define RD_CM_JOIN_LEN 40 /* a JOIN request: sid and proof follow */
#define RD_CM_REP_LEN 12
#define RD_CM_REP_LANES_LEN 24 /* accept data granting more than one lane */
#define RD_CMF_JOIN 0x1u      /* connect request flag: an extra lane */
#define RD_CMF_RAILS 0x2u     /* both: a RAILS message follows TLS (Rails) */
#define RD_CM_JOIN_RAIL_LEN 41 /* a JOIN that names the client's rail */
#define RD_LANES_MAX 8
#define RD_RAILS_MAX 4 /* devices one session spreads over */
#define RD_LANE_PROOF_LEN 16
#define RD_LANE_NONCE_LEN	16
#define RD_LANE_PROOF_CTX_LEN	27			  /* nonce, sid, lane, rail */
#define RD_TLS_LANE_LABEL	"EXPORTER-rdcp-lane-join" /* before version 8 */
#define RD_TLS_LANE_PROOF_LABEL "EXPORTER-rdcp-lane-proof"
#define RD_CM_REJ_LEN 10
#define RD_SECRET_LEN 16

#define RD_HDR_LEN	   8
#define RD_CTRL_MAX	   16384 /* a frame on the transport */
#define RD_MSG_MAX	   (RD_CTRL_MAX - 256) /* a message: sealed, it fits a frame */
#define RD_PATH_MAX	   4096
#define RD_MSG_TEXT_MAX	   1024 /* error / note text */
#define RD_DIGEST_MAX	   64	/* EVP_MAX_MD_SIZE */
#define RD_DIGEST_NAME_MAX 32
#define RD_OPEN_PATHS_MAX  64
#define RD_PARTIAL_DIR_MAX 254 /* NAME_MAX - 1: one directory name */
#define RD_WINDOW_FILES	   64  /* the window without RD_OF_WINDOW, and the least */
#define RD_WINDOW_MAX	   1024 /* the most RD_OF_WINDOW may agree */
#define RD_CHUNK_MIN	   4096u
#define RD_CHUNK_MAX	   (64u << 20)
#define RD_CHUNK_DEFAULT   (4u << 20)

/* TCP framing (4. above) */
#define RD_TF_HDR_LEN	8
#define RD_TF_WRITE_LEN 16 /* addr, rkey, reserved: before the payload */
enum rd_tcp_frame {
	RD_TF_CM_REQ = 1,
	RD_TF_CM_REP = 2,
	RD_TF_CM_REJ = 3,
	RD_TF_MSG = 4,
	RD_TF_WRITE = 5,
};

enum rd_rej_reason {
	RD_REJ_VERSION = 1, /* no common protocol version */
	RD_REJ_BUSY = 2,    /* server at its connection limit */
	RD_REJ_AUTH = 3,    /* not allowed to connect (e.g. hosts deny) */
	RD_REJ_BADREQ = 4,  /* private data malformed */
	RD_REJ_SHUTDOWN = 5, /* server is stopping */
	RD_REJ_HOST_BUSY = 6, /* this address has its share of connections */
	RD_REJ_LANE = 7	      /* a JOIN without a session waiting for it (proof) */
};

enum rd_msg_type {
	RD_MSG_CREDIT = 1,
	RD_MSG_OPEN = 2,
	RD_MSG_OPEN_OK = 3,
	RD_MSG_ERROR = 4,
	RD_MSG_FILE = 5,
	RD_MSG_END = 6,
	RD_MSG_GET = 7,
	RD_MSG_DATA = 8,
	RD_MSG_CHUNK_ERR = 9,
	RD_MSG_DONE = 10,
	RD_MSG_NOTE = 11,
	RD_MSG_FIN = 12,
	RD_MSG_TLS = 13, /* a TLS record: opened by lib/xport, never decoded */
	RD_MSG_META = 14,
	RD_MSG_FILES = 15,
	RD_MSG_DONES = 16,
	RD_MSG_RAILS = 17,
	RD_MSG_LANES = 18,
	RD_MSG_RULES = 19,
	RD_MSG_LIST = 20,
	RD_MSG_MODULES = 21,
	RD_MSG_DELETED = 22,
	RD_MSG_FILEZ = 23,
	RD_MSG_TYPE_MAX,
	RD_MSG_WANT = 0x20 /* section 6: its own range of numbers */
};

enum rd_open_mode { RD_MODE_PUSH = 1, RD_MODE_PULL = 2 };

/* OPEN flags */
/*
 * OPEN flags. A server refuses an OPEN with bits it does not know
 * (RD_OF_KNOWN) and answers in OPEN_OK only the bits it will honour: a
 * daemon drops RD_OF_OWNER/RD_OF_GROUP for a client that is not mapped to
 * a local identity (it never chowns to wire ids for such a client, and
 * never keeps setuid/setgid bits for it).
 */
#define RD_OF_RECURSIVE 0x1u
#define RD_OF_PRESERVE	0x2u  /* -p: permission bits and times (never owners) */
#define RD_OF_FSYNC	0x4u  /* fsync each file before rename */
#define RD_OF_OWNER	0x8u  /* -o: owner (uid); with it setuid/setgid bits */
#define RD_OF_GROUP	0x10u /* -g: group (gid) */
#define RD_OF_NO_PARTIAL    0x20u /* --no-partial: receiver keeps no partials */
#define RD_OF_TRUST_PARTIAL 0x40u /* --trust-partial: with checksum none */
/*
 * rsync's metadata flags (issue 13). A daemon drops ACLS and DEVICES for
 * a client that is not mapped (ACL entries name local users; a device
 * node is a way into the machine), like OWNER and GROUP.
 */
#define RD_OF_HARDLINKS 0x80u  /* -H: link groups land as links */
#define RD_OF_XATTRS	0x100u /* -X: user.* extended attributes */
#define RD_OF_ACLS	0x200u /* -A: POSIX ACLs */
#define RD_OF_SPARSE	0x400u /* -S: holes stay holes, never sent */
#define RD_OF_DEVICES	0x800u /* --devices: char and block devices (root) */
#define RD_OF_SPECIALS	0x1000u /* --specials: fifos and sockets */
/*
 * Packs (version 3): small files travel many per chunk (GET/DATA kind
 * PACK). A client asks only when the connection's version is at least
 * RD_PROTO_PACK; a server refuses it on an older version.
 */
#define RD_OF_PACK	0x2000u
/* Batches (version 4): FILES and DONES; asked and refused like RD_OF_PACK. */
#define RD_OF_BATCH	0x4000u
/*
 * --partial-dir for a push (version 5): OPEN carries the name (its last
 * field); asked only on a connection of that version, refused below it.
 */
#define RD_OF_PARTIAL_DIR 0x8000u
/*
 * A wider window of entries not yet DONE (version 6; issue 13): OPEN and
 * OPEN_OK carry it (their last field); asked and refused like RD_OF_PACK.
 * Small files are as many round trips apart as the window is narrow.
 */
#define RD_OF_WINDOW 0x10000u
/*
 * Version 7 (issue 28), asked and refused like RD_OF_PACK. ITEMS: DONE and
 * DONES say what each entry changed (RD_IT_*), so the sending side can
 * itemize (rsync's -i) what the receiving side did. ONE_FS and COPY_LINKS
 * are the sender's walk (rsync's -x and -L): a pull's server walks so;
 * ONE_FS2 (with ONE_FS): leave the mount points out too (-xx).
 */
#define RD_OF_ITEMS	 0x20000u
#define RD_OF_ONE_FS	 0x40000u
#define RD_OF_ONE_FS2	 0x80000u
#define RD_OF_COPY_LINKS 0x100000u
/*
 * rsync's rules (version 11, issue 28): OPEN carries the SELECT block (its
 * last field), RULES may follow it, the FILE flag CONTENTS and the item
 * SKIPPED are allowed; asked and refused like RD_OF_PACK. Without it a
 * receiver places and compares as before version 11.
 */
#define RD_OF_SELECT 0x200000u
/*
 * Version 12 (RD_PROTO_LIST), PULL only: the client lists, it fetches
 * nothing (section 3, Listings); without RD_OF_RECURSIVE a directory is
 * walked one level.
 */
#define RD_OF_LIST	 0x400000u
/*
 * Version 13 (RD_PROTO_MIRROR), with RD_OF_SELECT only: OPEN carries the
 * MIRROR block after SELECT (--delete and its relatives; DELETED comes
 * back). 0x1000000u is the next block's (RD_OF_DESTS).
 */
#define RD_OF_MIRROR	 0x800000u
/*
 * Version 13 (RD_PROTO_MIRROR), PUSH only, with RD_OF_SELECT: OPEN carries
 * the DESTS block (alternate destinations and backups, issue 29).
 */
#define RD_OF_DESTS 0x1000000u
/*
 * Wide batches (version 14, RD_PROTO_WIDE; issue 28), asked and refused
 * like RD_OF_PACK, honoured only with RD_OF_BATCH: the sender announces its
 * entries in FILEZ (compact, up to RD_BATCH_WIDE) instead of FILES, and a
 * DONES may carry up to RD_BATCH_WIDE entries. Without it a FILEZ, or a
 * DONES of more than RD_BATCH_MAX, is a protocol error.
 */
#define RD_OF_WIDE 0x2000000u
/* Ranges (section 6, issue 32): its own block of numbers, from the top. */
#define RD_OF_RANGES	  0x80000000u
#define RD_OF_KNOWN	  (0x7fffffu | RD_OF_MIRROR | RD_OF_DESTS | RD_OF_WIDE | RD_OF_RANGES)
#define RD_WF_END	  0x1u /* WANT: the list's last message */
#define RD_WANT_WHOLE	  1
#define RD_WANT_RANGE	  2
#define RD_WANT_BATCH	  256	      /* items in one WANT (as many as fit) */
#define RD_WANT_ITEMS_MAX 65536	      /* items one ranged pull may want */
#define RD_WANT_BYTES_MAX (16u << 20) /* bytes of their paths */
#define RD_BATCH_MAX 64 /* entries in one FILES, or DONES without RD_OF_WIDE */
#define RD_BATCH_WIDE 256 /* entries in one FILEZ, or DONES with RD_OF_WIDE */
/* FILEZ: an entry's have bits (which fields follow) */
#define RD_FZ_MODE   0x01u
#define RD_FZ_UID    0x02u
#define RD_FZ_GID    0x04u
#define RD_FZ_SEC    0x08u
#define RD_FZ_NSEC   0x10u
#define RD_FZ_SIZE32 0x20u
#define RD_FZ_SIZE64 0x40u
#define RD_FZ_TARGET 0x80u
#define RD_FZ_FIRST  (RD_FZ_MODE | RD_FZ_UID | RD_FZ_GID | RD_FZ_SEC)

/*
 * DONE's items (RD_OF_ITEMS): what an entry changed on the receiving side,
 * rsync's itemized changes (rsync.1, --itemize-changes): rendered there as
 * YXcstpoguax. NEW: nothing of its type was there (every letter '+');
 * XFER: its data was sent ('<' or '>'); LOCAL: made or changed without
 * data ('c': a directory, a symlink, a device); HLINK: made as a hard
 * link ('h'); the rest are the letters: CHANGE (contents compared and
 * different, a symlink's target, a device's number), SIZE, TIME, PERMS,
 * OWNER, GROUP, ACL, XATTR. None of them: nothing changed. SKIPPED
 * (version 11, with RD_OF_SELECT only): a transfer rule left the entry as
 * it is (--existing, --ignore-existing, -u, --max-size, ...): rsync
 * itemizes nothing for it.
 */
#define RD_IT_NEW    0x0001u
#define RD_IT_XFER   0x0002u
#define RD_IT_LOCAL  0x0004u
#define RD_IT_HLINK  0x0008u
#define RD_IT_CHANGE 0x0010u
#define RD_IT_SIZE   0x0020u
#define RD_IT_TIME   0x0040u
#define RD_IT_PERMS  0x0080u
#define RD_IT_OWNER  0x0100u
#define RD_IT_GROUP  0x0200u
#define RD_IT_ACL    0x0400u
#define RD_IT_XATTR   0x0800u
#define RD_IT_SKIPPED 0x1000u
#define RD_IT_KNOWN   0x1fffu

enum rd_ftype {
	RD_FT_REG = 1,
	RD_FT_DIR = 2,
	RD_FT_SYMLINK = 3,
	RD_FT_SPECIAL = 4, /* fifo, socket, char or block device */
	RD_FT_HLINK = 5	   /* hard link to an earlier REG entry */
};

/* FILE flags */
#define RD_FF_ROOT 0x1u /* first component is a top-level source */
#define RD_FF_POST 0x2u /* directory, after its contents: apply metadata */
#define RD_FF_MORE 0x4u /* META messages follow (REG and DIR only) */
#define RD_FF_LINKED	0x8u /* REG, version 10: starts a link group */
#define RD_FF_LINK_LAST 0x10u /* HLINK, version 10: its group's last link */
/* DIR with RD_OF_MIRROR's DELETE: not listed (-R, --files-from parents), nothing deleted in it */
#define RD_FF_IMPLIED 0x8u
/* RD_OF_SELECT: part of a source that named a directory's contents ("dir/") */
#define RD_FF_CONTENTS 0x20u
#define RD_FF_COMMIT	0x40u /* section 6: give a file in ranges its final name */
#define RD_FF_RANGE	0x80u /* section 6: the entry is one range of the file */
#define RD_FF_KNOWN	(0x3fu | RD_FF_COMMIT | RD_FF_RANGE)

/* OPEN's SELECT block (RD_OF_SELECT, version 11): how files are compared */
enum rd_cmp {
	RD_CMP_QUICK = 0,    /* size and mtime (rsync's quick check) */
	RD_CMP_CHECKSUM = 1, /* -c: contents, chunk by chunk */
	RD_CMP_SIZE = 2,     /* --size-only */
	RD_CMP_ALL = 3	     /* -I: as CHECKSUM, every file written anew */
};
/* ... and the transfer rules (SELECT rules) */
#define RD_SEL_UPDATE	       0x1u  /* -u: keep files newer on the receiver */
#define RD_SEL_IGNORE_EXISTING 0x2u  /* --ignore-existing */
#define RD_SEL_EXISTING	       0x4u  /* --existing: create nothing new */
#define RD_SEL_DRY_RUN	       0x8u  /* -n: change nothing, report */
#define RD_SEL_DEST_DIR	       0x10u /* PUSH: the destination is a directory */
#define RD_SEL_MKPATH	       0x20u /* PUSH: --mkpath */
#define RD_SEL_RELATIVE	       0x40u /* -R: paths keep their implied directories */
#define RD_SEL_DELETE_EXCLUDED 0x80u /* filter rules without s/r: sender side only */
#define RD_SEL_KNOWN	       0xffu
#define RD_PF_CONTENTS	       0x1u /* SELECT pflags: the path names its contents */
#define RD_PF_KNOWN	       0x1u
#define RD_WINDOW_NS	       (-1)		  /* SELECT modify_window: exact, to the ns */
#define RD_SIZE_NONE	       UINT64_MAX	  /* SELECT max_size: no limit */
#define RD_RULES_MAX	       4096		  /* filter rules one OPEN announces */
#define RD_RULE_MAX	       (RD_PATH_MAX + 64) /* bytes of one rule */
#define RD_RULES_BYTES_MAX     (256u << 10)	  /* all of them */
#define RD_NAMES_MAX	       100000u		  /* --files-from names of a pull */
#define RD_NAMES_BYTES_MAX     (4u << 20)	  /* all of them */
/* OPEN's MIRROR block (RD_OF_MIRROR, version 13): flags */
#define RD_MF_DELETE	    0x1u  /* any --delete* */
#define RD_MF_DEL_BEFORE    0x2u  /* --delete-before */
#define RD_MF_DEL_AFTER	    0x4u  /* --delete-delay, --delete-after */
#define RD_MF_FORCE	    0x8u  /* --force */
#define RD_MF_IGNORE_ERRORS 0x10u /* --ignore-errors */
#define RD_MF_ALLOW_EMPTY   0x20u /* --allow-empty-source */
#define RD_MF_LATE_ROOM	    0x40u /* no source removed: a file may wait for its room */
#define RD_MF_REMOVE_SRC    0x80u /* PULL: the server removes sources confirmed */
#define RD_MF_KNOWN	    0xffu
#define RD_MAX_DELETE_NONE  (-1) /* MIRROR max_delete: no limit */
/* DELETED */
#define RD_DEL_BATCH   64    /* entries in one DELETED */
#define RD_DLF_DIR      0x1u  /* a directory */
#define RD_DLF_FAILED   0x2u  /* could not be deleted (text) */
#define RD_DLF_SKIPPED  0x4u  /* --max-delete reached (text: how many) */
#define RD_DLF_OFF      0x8u  /* deletion turned off for the run (text) */
#define RD_DLF_UNMADE	0x10u /* with FAILED: an entry done (DONE) had no room: it failed */
#define RD_DLF_KNOWN	0x1fu
enum rd_rules_kind { RD_RULES_FILTER = 1, RD_RULES_NAMES = 2 };

/* META */
enum rd_meta_kind {
	RD_META_XATTR = 1,
	RD_META_ACL = 2,
	RD_META_SPARSE = 3,
	RD_META_RANGE = 0x10 /* section 6 */
};
#define RD_MF_LAST	   0x1u /* the entry's last META */
#define RD_XATTR_NAME_MAX  255
#define RD_XATTR_VAL_MAX   15360 /* larger values are not sent (a note) */
#define RD_ACL_MAX	   1024
#define RD_SPARSE_MAX	   256 /* the sender merges extents to fit */
enum rd_acl_type { RD_ACL_ACCESS = 1, RD_ACL_DEFAULT = 2 };
enum rd_acl_tag {
	RD_ACL_USER_OBJ = 1,
	RD_ACL_USER = 2,
	RD_ACL_GROUP_OBJ = 3,
	RD_ACL_GROUP = 4,
	RD_ACL_MASK = 5,
	RD_ACL_OTHER = 6
};

struct rd_acl_ent {
	uint8_t tag, perm;
	uint32_t id;
};

struct rd_extent {
	uint64_t off, len;
};

enum rd_get_kind { RD_GET_DATA = 1, RD_GET_SUM = 2, RD_GET_PACK = 3 };
#define RD_GET_RAILS 0x80u /* GET kind bit on the wire: rail keys follow */
#define RD_PACK_FILES_MAX 64		   /* files in one pack */
#define RD_PACK_FILE_MAX  (64u << 10)	   /* the largest file a pack carries */
/* What GETs may make a sender read (section 3, Work bounds). */
#define RD_GET_WORK_X	      5
#define RD_GET_WORK_SLACK     64 /* chunks */
#define RD_SUM_PROGRESS_BYTES (256ull << 20)

/* Names of rdcp's own files (rd_path_reserved()). */
#define RD_PARTIAL_PREFIX ".rdcp-partial."
#define RD_RANGE_PREFIX	  ".rdcp-range." /* section 6: range partials and records */
#define RD_TMP_PREFIX	  ".rdcp."
#define RD_TMP_RAND_HEX	  16 /* ".rdcp.NAME." then this many hex digits */

struct rd_cm_req {
	uint16_t ver_min, ver_max;
	uint32_t flags; /* RD_CMF_* */
	uint16_t ctrl_depth;
	uint16_t lanes;	 /* wanted (0: one); a JOIN: the lane's index */
	uint64_t sid;	 /* JOIN only */
	uint8_t proof[RD_LANE_PROOF_LEN]; /* JOIN only */
	uint8_t rail;	 /* JOIN with RAILS only: the client's rail */
};

struct rd_cm_rep {
	uint16_t version;
	uint16_t ctrl_depth;
	uint32_t flags;
	uint16_t lanes; /* granted; decoded as 1 from 12-byte accept data */
	uint16_t rail;	/* a JOIN's accept: the server's rail of that lane */
	uint64_t sid;
};

struct rd_cm_rej {
	uint16_t reason;
	uint16_t ver_min, ver_max;
};

struct rd_hdr {
	uint8_t type;
	uint16_t credits;
	uint32_t length;
};

/*
 * Decoded messages point into the receive buffer (no copies, no
 * allocation): strings are (ptr, len) and are NOT NUL-terminated.
 */
struct rd_str {
	const char *ptr;
	uint16_t len;
};

/* OPEN's SELECT block (RD_OF_SELECT). */
struct rd_select {
	uint8_t compare;		   /* enum rd_cmp */
	uint16_t rules;			   /* RD_SEL_* */
	int32_t modify_window;		   /* RD_WINDOW_NS, or seconds 0.. */
	uint64_t min_size;		   /* 0: none */
	uint64_t max_size;		   /* RD_SIZE_NONE: none */
	uint8_t pflags[RD_OPEN_PATHS_MAX]; /* per path: RD_PF_* (PULL) */
	uint16_t skip[RD_OPEN_PATHS_MAX];  /* per path: RELATIVE's unsent prefix (PULL) */
	uint16_t nrules;		   /* RULES FILTER strings that follow */
	uint32_t nnames;		   /* RULES NAMES strings that follow (PULL) */
};

/* OPEN's DESTS block (RD_OF_DESTS, version 13) */
#define RD_DF_BACKUP  0x1u
#define RD_DF_SUFFIX  0x2u
#define RD_DF_KNOWN   0x3u
#define RD_DESTS_MAX  20  /* rsync's limit of --link-dest & co. */
#define RD_SUFFIX_MAX 255
enum rd_dest_kind { RD_DK_NONE = 0, RD_DK_LINK = 1, RD_DK_COMPARE = 2, RD_DK_COPY = 3 };
struct rd_dests {
	uint8_t flags; /* RD_DF_* */
	struct rd_str backup_dir;
	struct rd_str suffix;
	uint8_t kind; /* enum rd_dest_kind */
	uint8_t ndests;
	struct rd_str dirs[RD_DESTS_MAX];
};

/* OPEN's MIRROR block (RD_OF_MIRROR). */
struct rd_mirror {
	uint16_t flags;	    /* RD_MF_* */
	int64_t max_delete; /* RD_MAX_DELETE_NONE, or 0.. */
};

struct rd_msg_open {
	uint8_t mode;	/* enum rd_open_mode */
	uint32_t flags; /* RD_OF_* */
	uint32_t chunk_size;
	struct rd_str digest;			/* EVP name or "none", <= RD_DIGEST_NAME_MAX */
	uint16_t npaths;			/* 1..RD_OPEN_PATHS_MAX */
	struct rd_str paths[RD_OPEN_PATHS_MAX]; /* "module/path" */
	struct rd_str partial_dir;		/* RD_OF_PARTIAL_DIR only: one name */
	uint16_t window;			/* RD_OF_WINDOW only */
	struct rd_select sel;			/* RD_OF_SELECT only */
	struct rd_dests dests;			/* RD_OF_DESTS only */
	struct rd_mirror mir;			/* RD_OF_MIRROR only */
};

struct rd_msg_open_ok {
	uint32_t flags;
	uint32_t chunk_size;
	struct rd_str digest;
	uint16_t window; /* RD_OF_WINDOW only */
};

struct rd_msg_error {
	uint16_t code; /* RD_E* from lib/base/rd_err.h */
	struct rd_str text;
};

struct rd_msg_file {
	uint32_t id;
	uint8_t type;  /* enum rd_ftype */
	uint8_t flags; /* RD_FF_* */
	uint32_t mode; /* permission bits and type bits as in st_mode */
	uint32_t uid, gid;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;  /* < 1e9 */
	struct rd_str path;   /* checked with rd_path_check */
	struct rd_str target; /* symlink target (any bytes but NUL), else empty */
};

struct rd_msg_end {
	uint32_t nfiles;
};

struct rd_msg_get {
	uint32_t id;
	uint8_t kind; /* enum rd_get_kind */
	uint32_t slot;
	uint64_t chunk;
	uint64_t addr; /* receiver's registered slot address */
	uint32_t rkey;
	uint32_t len; /* slot length; the sender writes at most this */
	uint64_t seq; /* strictly increasing per session */
	uint8_t nx;   /* rails beyond the first (0: one rail) */
	uint32_t xrkey[RD_RAILS_MAX - 1]; /* the slot's rkey on rails 1..nx */
};

struct rd_rail_addr {
	uint8_t family; /* 4 or 6 */
	uint8_t addr[16];
};

struct rd_msg_rails {
	uint8_t n; /* 0..RD_RAILS_MAX-1 */
	struct rd_rail_addr a[RD_RAILS_MAX - 1];
};

struct rd_msg_lanes {
	uint8_t nonce[RD_LANE_NONCE_LEN];
};

struct rd_msg_data {
	uint32_t id;
	uint8_t kind;
	uint32_t slot;
	uint64_t chunk;
	uint32_t len; /* bytes written into the slot (or hashed, for SUM) */
	uint64_t seq; /* the GET's */
	uint8_t dlen; /* 0..RD_DIGEST_MAX */
	uint8_t digest[RD_DIGEST_MAX];
};

struct rd_msg_chunk_err {
	uint32_t id;
	uint64_t chunk;
	uint16_t code;
	struct rd_str text;
};

struct rd_msg_done {
	uint32_t id;
	uint16_t status; /* 0 ok, else RD_E* */
	uint64_t bytes;	 /* bytes of data actually moved */
	struct rd_str text;
	uint8_t has_items; /* RD_OF_ITEMS: items follow */
	uint16_t items;	   /* RD_IT_* */
};

struct rd_msg_note {
	uint16_t code;
	struct rd_str path; /* may be any bytes: not used as a path */
	struct rd_str text;
};

/* MODULES (section 3, Listings) */
#define RD_LSF_LAST	     0x1u
#define RD_LIST_BATCH	     16	  /* names in one MODULES */
#define RD_LIST_NAME_MAX     63	  /* bytes of a module name */
#define RD_LIST_COMMENT_MAX  255  /* bytes of a module's comment */
#define RD_LIST_MODULES_MAX  1024 /* names in all one LIST may bring */

struct rd_msg_modules {
	uint8_t flags; /* RD_LSF_* */
	uint16_t n;    /* 0..RD_LIST_BATCH */
	struct rd_str name[RD_LIST_BATCH];
	struct rd_str comment[RD_LIST_BATCH];
};

/* DELETED: strings point into the message */
struct rd_msg_deleted {
	uint16_t n; /* 1..RD_DEL_BATCH */
	uint8_t flags[RD_DEL_BATCH];
	struct rd_str path[RD_DEL_BATCH];
	struct rd_str text[RD_DEL_BATCH];
};

struct rd_msg_fin {
	uint32_t files_ok, files_failed;
	uint64_t bytes;
};

/*
 * META. Encoding reads acl[] / ext[]; decoding leaves them NULL and points
 * raw at the n wire entries: read them with rd_meta_acl() / rd_meta_extent().
 */
struct rd_msg_meta {
	uint32_t id;
	uint8_t kind;  /* enum rd_meta_kind */
	uint8_t flags; /* RD_MF_* */
	struct rd_str name; /* XATTR */
	const uint8_t *value;
	uint32_t vlen;
	uint8_t acl_type; /* ACL: enum rd_acl_type */
	uint16_t n;	  /* ACL, SPARSE: entries */
	const struct rd_acl_ent *acl;
	const struct rd_extent *ext;
	const uint8_t *raw;
	uint64_t job, off, len; /* RANGE (section 6) */
};

/* Entry i of a META's ACL or SPARSE list (encoder arrays or wire bytes). */
struct rd_acl_ent rd_meta_acl(const struct rd_msg_meta *m, unsigned i);
struct rd_extent rd_meta_extent(const struct rd_msg_meta *m, unsigned i);

/*
 * FILES: raw holds the n FILE payloads (decoding checked every one); read
 * them in order with rd_files_next(). Build one with rd_files_put().
 */
struct rd_msg_files {
	uint16_t n;
	uint32_t id; /* FILEZ only: the first entry's id (the rest follow it) */
	const uint8_t *raw;
	size_t rawlen;
};

/* WANT: raw holds the n items (decoding checked them); read with rd_want_next(). */
struct rd_msg_want {
	uint64_t job;
	uint8_t flags; /* RD_WF_* */
	uint16_t n;
	const uint8_t *raw;
	size_t rawlen;
};

struct rd_want_item {
	uint8_t kind; /* RD_WANT_WHOLE, RD_WANT_RANGE */
	uint64_t off, len, size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	struct rd_str path;
};

/* Append an item at buf + *len (cap in all): 0, or -RD_EUSAGE (no room, or not valid). */
int rd_want_put(uint8_t *buf, size_t cap, size_t *len, const struct rd_want_item *it);
/* The item at *off of a decoded WANT (pointing into raw); *off moves on. 0 or -RD_EPROTO. */
int rd_want_next(const struct rd_msg_want *m, size_t *off, struct rd_want_item *it);

struct rd_msg_dones {
	uint16_t n;
	uint8_t has_items; /* RD_OF_ITEMS: each entry has items */
	uint32_t id[RD_BATCH_WIDE];
	uint64_t bytes[RD_BATCH_WIDE];
	uint16_t items[RD_BATCH_WIDE];
};

/*
 * RULES: raw holds the n strings (decoding checked every one); read them
 * in order with rd_rules_next().
 */
struct rd_msg_rules {
	uint8_t kind; /* enum rd_rules_kind */
	uint16_t n;
	const uint8_t *raw;
	size_t rawlen;
};
/* The string at *off of a decoded RULES (pointing into raw); *off moves on. 0 or -RD_EPROTO. */
int rd_rules_next(const struct rd_msg_rules *m, size_t *off, struct rd_str *s);
/*
 * Append one string to a RULES payload being built at buf + *len (cap
 * bytes): 0, or -RD_EUSAGE (does not fit, or not a valid string of kind).
 */
int rd_rules_put(uint8_t *buf, size_t cap, size_t *len, uint8_t kind, const char *s, size_t n);
/* Is s a valid RULES string of kind? NULL if so, else why not. */
const char *rd_rules_check(uint8_t kind, const char *s, size_t n);

/*
 * Append f's FILE payload at buf + *len (cap bytes in all): 0 and *len
 * grown, or -RD_EUSAGE (does not fit, or f is not a valid FILE).
 */
int rd_files_put(uint8_t *buf, size_t cap, size_t *len, const struct rd_msg_file *f);
/* The entry at *off of a decoded FILES into f (pointing into raw); *off moves on. 0 or -RD_EPROTO. */
int rd_files_next(const struct rd_msg_files *m, size_t *off, struct rd_msg_file *f);

/*
 * FILEZ (version 14): each entry may keep the previous one's fields and
 * the start of its path, so both ends carry that state, one per message:
 * rd_filez_start() before its first entry.
 */
struct rd_filez {
	unsigned n;  /* entries put or read so far */
	uint32_t id; /* the first entry's id */
	uint32_t mode, uid, gid;
	int64_t mtime_sec;
	uint16_t plen;
	char path[RD_PATH_MAX]; /* the previous entry's path (no NUL) */
};
void rd_filez_start(struct rd_filez *z);
/*
 * Append f compacted at buf + *len (cap in all; the first entry's id is
 * z->id, for the message's header): 0, or -RD_EUSAGE (no room, more than
 * RD_BATCH_WIDE, an id out of turn or past UINT32_MAX, or not a valid FILE),
 * z unchanged then.
 */
int rd_filez_put(struct rd_filez *z, uint8_t *buf, size_t cap, size_t *len,
		 const struct rd_msg_file *f);
/*
 * The entry at *off of a decoded FILEZ into f, its path in z (valid until
 * the next call); *off moves on. 0 or -RD_EPROTO.
 */
int rd_filez_next(const struct rd_msg_files *m, size_t *off, struct rd_filez *z,
		  struct rd_msg_file *f);

/* One decoded control message. */
struct rd_msg {
	struct rd_hdr hdr;
	union {
		struct rd_msg_open open;
		struct rd_msg_open_ok open_ok;
		struct rd_msg_error error;
		struct rd_msg_file file;
		struct rd_msg_end end;
		struct rd_msg_get get;
		struct rd_msg_data data;
		struct rd_msg_chunk_err chunk_err;
		struct rd_msg_done done;
		struct rd_msg_note note;
		struct rd_msg_fin fin;
		struct rd_msg_meta meta;
		struct rd_msg_files files;
		struct rd_msg_dones dones;
		struct rd_msg_rails rails;
		struct rd_msg_lanes lanes;
		struct rd_msg_want want;
		struct rd_msg_modules modules;
		struct rd_msg_rules rules;
		struct rd_msg_deleted deleted;
	} u;
};

/*
 * CM private data. Encoders return the bytes written: RD_CM_REQ_LEN (a
 * JOIN: RD_CM_JOIN_LEN), RD_CM_REP_LEN (lanes > 1: RD_CM_REP_LANES_LEN),
 * RD_CM_REJ_LEN. buf must hold RD_CM_JOIN_RAIL_LEN bytes.
 */
size_t rd_cm_req_encode(uint8_t *buf, const struct rd_cm_req *r);
int rd_cm_req_decode(const uint8_t *buf, size_t len, struct rd_cm_req *r);
size_t rd_cm_rep_encode(uint8_t *buf, const struct rd_cm_rep *r);
/* Lanes a server grants: the client's wish (0 counts as 1), at most cap
 * (the server's limit, 0 = 1) and RD_LANES_MAX. */
unsigned rd_lanes_grant(unsigned wanted, unsigned cap);
int rd_cm_rep_decode(const uint8_t *buf, size_t len, struct rd_cm_rep *r);
void rd_cm_rej_encode(uint8_t *buf, const struct rd_cm_rej *r);
int rd_cm_rej_decode(const uint8_t *buf, size_t len, struct rd_cm_rej *r);
const char *rd_rej_reason_str(uint16_t reason);
/*
 * The exporter context of the proof of lane `lane` from the client's rail
 * `rail` (section 1, Lane proofs) into ctx[RD_LANE_PROOF_CTX_LEN].
 */
void rd_lane_proof_ctx(uint8_t *ctx, const uint8_t *nonce, uint64_t sid, unsigned lane,
		       unsigned rail);
/* The RD_E* status a client reports for a refusal: RD_EBUSY for the ones
 * worth trying again later (busy, this address's share), RD_EAUTH,
 * RD_EVERSION, RD_EREMOTE (shutting down), else RD_ECONN. */
int rd_rej_status(uint16_t reason);
/* Does a peer speaking ver_min..ver_max share a version with us? 1 if yes. */
int rd_proto_versions_overlap(unsigned ver_min, unsigned ver_max);

/*
 * Encode msg (its hdr.type selects the union member; hdr.length is
 * ignored and computed) into buf of cap bytes. Returns the total length
 * (header + payload) or a negative RD_EUSAGE if it does not fit or a field
 * is out of its limits.
 */
int rd_msg_encode(uint8_t *buf, size_t cap, const struct rd_msg *msg);

/*
 * Decode one message of len bytes. Returns 0, or -RD_EPROTO with a short
 * reason in *why (a static string) for anything malformed: short buffer,
 * length mismatch, unknown type, a string or count over its limit,
 * trailing bytes, a bad path, an invalid enum value.
 */
int rd_msg_decode(const uint8_t *buf, size_t len, struct rd_msg *msg, const char **why);

/* Patch the credits field of an encoded message in place. */
void rd_msg_set_credits(uint8_t *buf, uint16_t credits);

/*
 * Check a relative wire path: non-empty, <= RD_PATH_MAX, no NUL, no
 * leading '/', no empty, "." or ".." component, no trailing '/'.
 * Returns 0 or -RD_EPROTO with *why set.
 */
int rd_path_check(const char *p, size_t len, const char **why);
/*
 * Bytes before what lies below a wire path's first component: "src/a/b"
 * 4, "src" 3 (all of it). An entry of a "dir/" source (RD_FF_CONTENTS)
 * lands, and is named, without them.
 */
size_t rd_path_first_skip(const char *p, size_t len);
/*
 * One directory name (OPEN's partial_dir): 1..RD_PARTIAL_DIR_MAX bytes, no
 * '/', no NUL, not "." or "..". 0 if good, else -1 with *why set.
 */
int rd_name_check(const char *p, size_t len, const char **why);
/*
 * Is a component of the path [p, p + len) ('/'-separated; a single name
 * too) one rdcp keeps for its own files: a partial or its record
 * (RD_PARTIAL_PREFIX...), a temporary (RD_TMP_PREFIX NAME "." and
 * RD_TMP_RAND_HEX lowercase hex digits)? 1 if so, else 0. Such entries
 * are never sent and never accepted (section 2, FILE).
 */
int rd_path_reserved(const char *p, size_t len);

const char *rd_msg_type_name(uint8_t type);

#endif
