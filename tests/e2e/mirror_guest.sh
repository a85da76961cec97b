# shellcheck shell=bash
# Mirroring safely (issue 29), one host (RIG_MODE 1): an rdcpd here, pushes
# and pulls against it.
#   1. --remove-source-files: what arrived goes from the source, what
#      changed while it was sent stays (exit 23), a source named through a
#      symlink stays, directories stay
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$RIG_SELF_IP
T=/tmp/mirror
rm -rf "$T"
mkdir -p "$T/mod" "$T/src"
start_daemon mirror --module "m=$T/mod" || exit 1

# --- 1. --remove-source-files ---
mkdir -p "$T/src/move/d" "$T/keep"
echo one >"$T/src/move/one"
echo two >"$T/src/move/d/two"
ln -s one "$T/src/move/link"
ln "$T/src/move/one" "$T/src/move/hard"
mkfifo "$T/src/move/fifo"
cp -a "$T/src/move" "$T/keep/move"
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

run --remove-source-files "$S::m/move/one" "$T/pulled"
check "--remove-source-files on a pull: a usage error (exit 1)" [ "$RC" -eq 1 ]
check "  and the server's file stays" [ -f "$T/mod/move/one" ]

check "daemon still alive" daemon_alive mirror
finish
