# shellcheck shell=bash
# Mirroring safely (issue 29), one host (RIG_MODE 1): an rdcpd here, pushes
# and pulls against it.
#   1. --remove-source-files: what arrived goes from the source, what
#      changed while it was sent stays (exit 23), a source named through a
#      symlink stays, directories stay; a pull: the server removes them,
#      only in a module with delete = yes (else refused, exit 5)
#   2. --delete and its interlocks: a module's delete permission, -n, an
#      empty source, --max-delete, a source error (a file vanishes in the
#      walk: RDCP_VANISH, the LD_PRELOAD shim), --ignore-errors, a failure
#      under a directory, a pull, a source directory unreadable mid-walk
#      (as nobody: unreadable_case in guest_lib.sh)
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$RIG_SELF_IP
T=/tmp/mirror
rm -rf "$T"
mkdir -p "$T/mod" "$T/src"
mkdir -p "$T/modd"
start_daemon mirror --module "m=$T/mod" --module "md=$T/modd,delete" || exit 1

# --- 1. --remove-source-files ---
mkdir -p "$T/src/move/d" "$T/keep"
echo one >"$T/src/move/one"
echo two >"$T/src/move/d/two"
ln -s one "$T/src/move/link"
ln "$T/src/move/one" "$T/src/move/hard"
mkfifo "$T/src/move/fifo"
cp -a "$T/src/move" "$T/keep/move"
# -n changes nothing, the sources least of all (a push and a pull)
run -an --remove-source-files "$T/src/move" "$S::m/"
check "-n --remove-source-files, a push: exit 0, every source still there" \
	eval '[ "$RC" -eq 0 ] && same_tree "$T/keep/move" "$T/src/move" && [ ! -e "$T/mod/move" ]'
cp -a "$T/keep/move" "$T/modd/nmove"
run -an --remove-source-files "$S::md/nmove" "$T/npulled/"
check "  and a pull: the server's files still there" \
	eval '[ "$RC" -eq 0 ] && same_tree "$T/keep/move" "$T/modd/nmove" && [ ! -e "$T/npulled" ]'
rm -rf "$T/modd/nmove"
run -aH --remove-source-files "$T/src/move" "$S::m/"
check "--remove-source-files, a push of a tree: exit 0" [ "$RC" -eq 0 ]
check "  it arrived whole" same_tree "$T/keep/move" "$T/mod/move"
check "  every non-directory left the source (files, a symlink, a hard link, a fifo)" \
	[ -z "$(find "$T/src/move" ! -type d)" ]
check "  its directories stayed" [ -d "$T/src/move/d" ]

# A file changed in place while it is sent, its mtime put back: the sender's
# per-chunk size/mtime check cannot see it, the removal's ctime check does.
head -c $((2 << 20)) /dev/urandom >"$T/src/slow.bin"
echo calm >"$T/src/calm.txt"
touch -d '2001-02-03 04:05:06' "$T/src/slow.bin"
mkdir -p "$T/src/two"
mv "$T/src/slow.bin" "$T/src/calm.txt" "$T/src/two/"
(
	wait_for "$T/mod/two/.rdcp-partial.slow.bin" 60 # its first chunk landed
	printf 'CHANGED' | dd of="$T/src/two/slow.bin" bs=1 seek=$((1 << 20)) conv=notrunc 2>/dev/null
	touch -d '2001-02-03 04:05:06' "$T/src/two/slow.bin"
) &
changer=$!
run -a --remove-source-files --bwlimit=512K --chunk-size 64K "$T/src/two" "$S::m/"
wait $changer
check "a source changed while it was sent: exit 23" [ "$RC" -eq 23 ]
check "  it stays" [ -f "$T/src/two/slow.bin" ]
check "  said so" out_has "slow.bin: not removed: it changed since it was sent"
check "  the unchanged one went" [ ! -e "$T/src/two/calm.txt" ]

# A source named through a symlink: the link is not what was sent.
echo target >"$T/src/real.txt"
ln -s real.txt "$T/src/alias.txt"
run --remove-source-files "$T/src/alias.txt" "$S::m/"
check "a source named through a symlink: exit 23" [ "$RC" -eq 23 ]
check "  it stays, and so does the file" [ -L "$T/src/alias.txt" -a -f "$T/src/real.txt" ]
check "  said so" out_has "not removed: named through a symlink"

# A pull: the server removes its files, where its module lets it delete.
run --remove-source-files "$S::m/move/one" "$T/pulled"
check "--remove-source-files, a pull from a module without delete = yes: refused (exit 5)" \
	[ "$RC" -eq 5 ]
check "  naming the module" out_has "module 'm' does not allow removing its files"
check "  and the server's file stays" [ -f "$T/mod/move/one" ]
cp -a "$T/keep/move" "$T/modd/pmove"
run -aH --remove-source-files "$S::md/pmove" "$T/pulled/"
check "--remove-source-files, a pull of a tree from a module with delete = yes: exit 0" \
	[ "$RC" -eq 0 ]
check "  it arrived whole" same_tree "$T/keep/move" "$T/pulled/pmove"
check "  every non-directory left the server's module" [ -z "$(find "$T/modd/pmove" ! -type d)" ]
check "  its directories stayed" [ -d "$T/modd/pmove/d" ]
rm -rf "$T/modd/pmove" "$T/pulled"
# A file the receiver has with the same size and time but other bytes: its
# contents are compared before its source goes (rsync would remove it as is).
mkdir -p "$T/modd/same" "$T/samedst" "$T/src/same" "$T/modd/samepush"
echo aaaa >"$T/modd/same/f"
echo bbbb >"$T/samedst/f"
echo aaaa >"$T/src/same/f"
echo bbbb >"$T/modd/samepush/f"
touch -d '2020-01-01' "$T/modd/same/f" "$T/samedst/f" "$T/src/same/f" "$T/modd/samepush/f"
run -a --remove-source-files "$S::md/same/" "$T/samedst/"
check "--remove-source-files, a pull onto a file of the same size and time, other bytes: compared first" \
	eval '[ "$RC" -eq 0 ] && [ "$(cat "$T/samedst/f")" = aaaa ] && [ ! -e "$T/modd/same/f" ]'
run -a --remove-source-files "$T/src/same/" "$S::md/samepush/"
check "  and a push" \
	eval '[ "$RC" -eq 0 ] && [ "$(cat "$T/modd/samepush/f")" = aaaa ] && [ ! -e "$T/src/same/f" ]'
rm -rf "$T/modd/same" "$T/samedst" "$T/src/same" "$T/modd/samepush"

# --- 2. --delete ---
PRELOAD=${CLI_PRELOAD:?the LD_PRELOAD shim tests/e2e/vanish_preload.so}
# prior DIR: a destination with what the source has and extras
prior() {
	rm -rf "$1"
	mkdir -p "$1/sub/deep"
	echo a >"$1/a"
	echo b >"$1/sub/b"
	echo x >"$1/extra1"
	echo y >"$1/sub/extra2"
	echo z >"$1/sub/deep/extra3"
}
snap() { rm -rf "$T/before" && cp -a "$1" "$T/before"; }
rm -rf "$T/dsrc" && mkdir -p "$T/dsrc/sub" && echo a >"$T/dsrc/a" && echo b >"$T/dsrc/sub/b"
echo v >"$T/dsrc/sub/v"

prior "$T/mod/del"
snap "$T/mod/del"
run -a --delete "$T/dsrc/" "$S::m/del/"
check "--delete into a module without delete = yes: refused (exit 5)" [ "$RC" -eq 5 ]
check "  naming the module" out_has "module 'm' does not allow deleting"
check "  nothing changed, nothing arrived" same_tree "$T/before" "$T/mod/del"
run -a --force "$T/dsrc/" "$S::m/del/"
check "  --force too (it deletes to make room): exit 5" [ "$RC" -eq 5 ]

prior "$T/modd/del"
snap "$T/modd/del"
run -a --delete -n -i "$T/dsrc/" "$S::md/del/"
check "-n --delete: exit 0" [ "$RC" -eq 0 ]
check "  lists the extras as rsync does" out_has "^\*deleting   sub/deep/extra3$"
check "  a directory with a slash" out_has "^\*deleting   sub/deep/$"
check "  and the files" out_has "^\*deleting   extra1$"
check "  changes nothing" same_tree "$T/before" "$T/modd/del"

run -a --delete -v --stats "$T/dsrc/" "$S::md/del/"
check "--delete into a module with delete = yes: exit 0" [ "$RC" -eq 0 ]
check "  the extras went" same_tree "$T/dsrc" "$T/modd/del"
check "  -v says each (deleting NAME)" out_has "^deleting sub/extra2$"
check "  --stats counts them" out_has "^Number of deleted files: 4 (reg: 3, dir: 1)$"

prior "$T/modd/del"
run -a --delete --max-delete=2 "$T/dsrc/" "$S::md/del/"
check "--max-delete=2 reached: exit 25" [ "$RC" -eq 25 ]
check "  said as rsync says it" out_has "Deletions stopped due to --max-delete limit (2 skipped)"
check "  two went, two stayed" [ "$(find "$T/modd/del" -name 'extra*' | wc -l)" -eq 1 ]

# --max-delete and a full directory in a file's way: rsync counts the root's
# extra (x) before the room the file needs (f/a, f/b): x goes, f stays a
# directory, the file fails (could not make way, exit 23). The receiver lets
# the verified file wait for the end to count so (RD_MF_LATE_ROOM)...
room_prior() {
	rm -rf "$T/rsrc" "$T/modd/room"
	mkdir -p "$T/rsrc" "$T/modd/room/f"
	echo data >"$T/rsrc/f"
	echo a >"$T/modd/room/f/a"
	echo b >"$T/modd/room/f/b"
	echo x >"$T/modd/room/x"
}
room_prior
run -a --delete --max-delete=1 "$T/rsrc/" "$S::md/room/"
check "a full directory in a file's way, --max-delete=1: exit 23 (rsync's)" [ "$RC" -eq 23 ]
check "  said: the directory kept, the file failed" \
	sh -c 'grep -q "f: cannot delete non-empty directory" /tmp/out && grep -q "1 of 3 entries failed" /tmp/out'
check "  the root's extra went first, the directory stayed whole" \
	sh -c '[ ! -e "$1/x" ] && [ -f "$1/f/a" ] && [ -f "$1/f/b" ]' _ "$T/modd/room"
check "  no temporary left" [ -z "$(find "$T/modd/room" -name '.rdcp*')" ]
# ... but not for a sender that removes its sources at DONE: there the room is
# made at the commit, and a source never goes whose copy has no name.
room_prior
run -a --delete --max-delete=1 --remove-source-files "$T/rsrc/" "$S::md/room/"
check "  with --remove-source-files: no file lost" \
	sh -c '[ -f "$1/rsrc/f" ] || [ "$(cat "$1/modd/room/f" 2>/dev/null)" = data ]' _ "$T"

mkdir -p "$T/empty"
prior "$T/modd/del"
snap "$T/modd/del"
run -a --delete "$T/empty/" "$S::md/del/"
check "an empty source with --delete: refused (exit 3)" [ "$RC" -eq 3 ]
check "  said so" out_has "--allow-empty-source"
check "  nothing changed" same_tree "$T/before" "$T/modd/del"
mkdir -p "$T/modd/emptysrc" "$T/pulled"
prior "$T/pulled/d"
snap "$T/pulled/d"
run -a --delete "$S::md/emptysrc/" "$T/pulled/d/"
check "  on a pull the server refuses it (exit 3)" [ "$RC" -eq 3 ]
check "  nothing changed" same_tree "$T/before" "$T/pulled/d"
run -a --delete --allow-empty-source "$T/empty/" "$S::md/del/"
check "  --allow-empty-source empties it: exit 0" [ "$RC" -eq 0 ]
check "  empty" [ -z "$(ls -A "$T/modd/del")" ]

# a source file vanishes in the walk: deletion off for the run, said once
prior "$T/modd/del"
echo v >"$T/modd/del/sub/v"
echo v >"$T/dsrc/sub/v"
RDCP_VANISH=v LD_PRELOAD=$PRELOAD run -a --delete "$T/dsrc/" "$S::md/del/"
check "a source error with --delete: non-zero exit ($RC)" [ "$RC" -ne 0 ]
check "  said once" [ "$(grep -c 'I/O error on the sending side: deleting nothing more' /tmp/out)" -eq 1 ]
check "  nothing deleted" [ -f "$T/modd/del/extra1" -a -f "$T/modd/del/sub/extra2" -a \
	-f "$T/modd/del/sub/v" ]
echo v >"$T/dsrc/sub/v"
RDCP_VANISH=v LD_PRELOAD=$PRELOAD run -a --delete --ignore-errors "$T/dsrc/" "$S::md/del/"
check "--ignore-errors: deletes anyway (exit $RC)" [ ! -e "$T/modd/del/extra1" ]
check "  but not where the source lost something" [ -f "$T/modd/del/sub/extra2" -a \
	-f "$T/modd/del/sub/v" ]

# a failure under a directory keeps that directory's extras
prior "$T/modd/del"
rm -f "$T/modd/del/a" && mkdir -p "$T/modd/del/a" && echo keep >"$T/modd/del/a/keep.log"
echo v >"$T/dsrc/sub/v"
run -a --delete --filter='P *.log' "$T/dsrc/" "$S::md/del/"
check "a file that cannot replace a directory (a protected file in it): exit 23" [ "$RC" -eq 23 ]
check "  its directory keeps its extras" [ -f "$T/modd/del/extra1" ]
check "  a directory done whole was cleaned" [ ! -e "$T/modd/del/sub/extra2" ]
check "  the protected file stays" [ -f "$T/modd/del/a/keep.log" ]

# only inside the directories of the transfer: a file operand cleans nothing
prior "$T/modd/del"
run -r --delete "$T/dsrc/a" "$S::md/del/"
check "--delete with a file operand: exit 0" [ "$RC" -eq 0 ]
check "  nothing deleted beside it" [ -f "$T/modd/del/extra1" -a -f "$T/modd/del/sub/extra2" ]
run -r --delete "$T/dsrc/sub" "$S::md/del/"
check "  src (no slash) cleans DEST/src only" [ -f "$T/modd/del/extra1" -a \
	! -e "$T/modd/del/sub/extra2" -a ! -e "$T/modd/del/sub/deep" ]

# a pull: the client deletes in its own destination
prior "$T/pulled/p"
mkdir -p "$T/modd/psrc/sub" && echo a >"$T/modd/psrc/a" && echo b >"$T/modd/psrc/sub/b"
run -a --delete -i "$S::md/psrc/" "$T/pulled/p/"
check "a pull with --delete: exit 0" [ "$RC" -eq 0 ]
check "  the local extras went" same_tree "$T/modd/psrc" "$T/pulled/p"
check "  listed" out_has "^\*deleting   sub/deep/extra3$"

# the transfer log: rsyncd's "del." line for each entry a push deleted
cat >"$T/log.conf" <<EOF
port = 18731
transfer logging = yes
log file = $T/xfer.log
log format = %o %i %f
[ml]
    path = $T/modl
    uid = root
    read only = no
    delete = yes
EOF
mkdir -p "$T/modl"
start_daemon mlog --config "$T/log.conf" || exit 1
prior "$T/modl/del"
run -a --delete -n "$T/dsrc/" "rdcp://$S:18731/ml/del/"
check "a push with -n --delete to a logging module: exit 0, nothing logged as deleted" \
	eval '[ "$RC" -eq 0 ] && ! grep -q "del\. " "$T/xfer.log"'
run -a --delete "$T/dsrc/" "rdcp://$S:18731/ml/del/"
check "  the push itself: exit 0" [ "$RC" -eq 0 ]
sed 's/^/    log| /' "$T/xfer.log"
check "  the transfer log has a del. line per entry deleted (rsyncd's), in the module" \
	eval 'grep -q "del\. \*deleting del/extra1$" "$T/xfer.log" &&
		grep -q "del\. \*deleting del/sub/deep$" "$T/xfer.log" &&
		[ "$(grep -c "del\. " "$T/xfer.log")" -eq 4 ]'
stop_daemon mlog

# a source directory unreadable mid-walk, as nobody (guest_lib.sh)
unreadable_case /tmp/unread 18741

check "daemon still alive" daemon_alive mirror
finish
