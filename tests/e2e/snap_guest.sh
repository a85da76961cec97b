# shellcheck shell=bash
# Snapshots and backups (issue 29 point 2), one host (RIG_MODE 1): an rdcpd
# here, pushes and pulls against it, rsync as the oracle.
#   1. the issue's acceptance: the second --link-dest snapshot of an
#      unchanged 10,000-file tree moves 0 bytes and is made of hard links
#      (link counts checked), pushed to a daemon and pulled from it; rsync
#      --link-dest on the same trees gives the same tree and the same links
#   2. confinement in a module: a --link-dest or --backup-dir that leaves
#      it is refused at OPEN (the option and the path named, nothing made);
#      a symlinked DIR, or a symlink in a file's place inside DIR, is never
#      followed
#   3. backups of a push
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$RIG_SELF_IP
T=/tmp/snap
N=${SNAP_FILES:-10000}
rm -rf "$T"
mkdir -p "$T/mod" "$T/outside" "$T/rs"
start_daemon snap --module "m=$T/mod" || exit 1
json_num() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" /tmp/out; }

# snap_tree DIR N: N small files in N/100 directories, one symlink, ns mtimes
snap_tree() {
	local d=$1 n=$2 i
	mkdir -p "$d"
	for ((i = 0; i < n; i++)); do
		[ $((i % 100)) -eq 0 ] && mkdir -p "$d/d$((i / 100))"
		echo "file $i" >"$d/d$((i / 100))/f$i"
	done
	ln -s d0/f0 "$d/link"
	find "$d" -depth -exec touch -h -d "2022-02-03 04:05:06.123456789" {} +
}

# inos DIR: "path inode" of its regular files, sorted by path
inos() { (cd "$1" && find . -type f -printf '%P %i\n' | LC_ALL=C sort); }
# links_to A B: every regular file of B is a hard link to A's at its path
# (files, not <(...): the rig's guests have no /dev/fd)
joined() { inos "$1" >/tmp/inos.1 && inos "$2" >/tmp/inos.2 && LC_ALL=C join /tmp/inos.1 /tmp/inos.2; }
links_to() {
	local bad
	bad=$(joined "$1" "$2" | awk '$2 != $3' | head -3)
	[ -z "$bad" ] && [ "$(inos "$2" | wc -l)" = "$(joined "$1" "$2" | wc -l)" ] ||
		{ echo "not linked: $bad"; return 1; }
}
# nlinks DIR: how many of its regular files have each link count ("2 10000")
nlinks() { (cd "$1" && find . -type f -printf '%n\n' | sort | uniq -c | awk '{print $2, $1}'); }
# same_links A1 A2 B1 B2: B2's files are links into B1 exactly where A2's are into A1
linked() { joined "$1" "$2" | awk '$2 == $3 { print $1 }'; }
same_links() {
	[ "$(linked "$1" "$2")" = "$(linked "$3" "$4")" ] || { echo "link sets differ"; return 1; }
	[ -n "$(linked "$1" "$2")" ]
}

# --- 1. the acceptance: 10,000 files, a second snapshot of the same tree ---
snap_tree "$T/src" "$N"
run -a "$T/src/" "$S::m/snap1/"
check "push the first snapshot ($N files): exit 0" [ "$RC" -eq 0 ]
t0=$(date +%s.%N)
run -a --json --link-dest=../snap1 "$T/src/" "$S::m/snap2/"
t1=$(date +%s.%N)
echo "    second snapshot pushed in $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s, $(json_num bytes_moved) bytes moved"
check "push the second with --link-dest=../snap1: exit 0, 0 bytes moved" \
	eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
check "  the same tree" same_tree "$T/src" "$T/mod/snap2"
check "  every file a hard link to the first snapshot's" links_to "$T/mod/snap1" "$T/mod/snap2"
check "  link counts: $N files with 2 links, in each snapshot" \
	eval '[ "$(nlinks "$T/mod/snap2")" = "2 $N" ] && [ "$(nlinks "$T/mod/snap1")" = "2 $N" ]'
rsync -a "$T/src/" "$T/rs/snap1/" && rsync -a --link-dest=../snap1 "$T/src/" "$T/rs/snap2/"
check "  rsync --link-dest on the same trees: the same tree" same_tree "$T/rs/snap2" "$T/mod/snap2"
check "  and the same links" same_links "$T/rs/snap1" "$T/rs/snap2" "$T/mod/snap1" "$T/mod/snap2"
# one file changed, one added: only those move, the rest are links
echo "changed" >"$T/src/d1/f100"
echo "new" >"$T/src/d2/new"
touch -d "2022-02-03 04:05:06.123456789" "$T/src/d1" "$T/src/d2"
run -a --json --link-dest=../snap2 --link-dest=../snap1 "$T/src/" "$S::m/snap3/"
check "a third, two files changed: only they move ($(json_num bytes_moved) bytes)" \
	eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 12 ]'
check "  they are new files, the rest links" \
	eval '[ "$(stat -c %h "$T/mod/snap3/d1/f100")" = 1 ] && [ "$(stat -c %h "$T/mod/snap3/d0/f0")" = 3 ]'

# pulled: the client is the receiver, the directories are its own
run -a "$S::m/snap1/" "$T/p1/"
t0=$(date +%s.%N)
run -a --json --link-dest=../p1 "$S::m/snap1/" "$T/p2/"
t1=$(date +%s.%N)
echo "    second snapshot pulled in $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s, $(json_num bytes_moved) bytes moved"
check "pull a second snapshot with --link-dest=../p1: exit 0, 0 bytes moved" \
	eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
check "  every file a hard link to the first pull's, $N with 2 links" \
	eval 'links_to "$T/p1" "$T/p2" && [ "$(nlinks "$T/p2")" = "2 $N" ]'
check "  the same tree as rsync's" same_tree "$T/rs/snap2" "$T/p2"
rm -rf "$T/p1" "$T/p2" "$T/rs" "$T/mod/snap3"

# --- 2. confinement in a module ---
mkdir -p "$T/c/src" "$T/mod/ref"
echo secret >"$T/c/src/f"
touch -d "2022-02-03 04:05:06" "$T/c/src/f"
cp -a "$T/c/src/f" "$T/outside/f"
run -a --link-dest=../../outside "$T/c/src/" "$S::m/c1/"
check "a --link-dest leaving the module: refused" [ "$RC" -ne 0 ]
check "  the error names the option and the path" out_has "--link-dest ../../outside: leaves the module"
check "  nothing made" [ ! -e "$T/mod/c1" ]
run -a --compare-dest=/../.. "$T/c/src/" "$S::m/c1/"
check "an absolute --compare-dest is from the module's top, '..' cannot leave it" \
	eval '[ "$RC" -ne 0 ] && out_has "--compare-dest /../..: leaves the module"'
run -a --backup-dir=../../bak "$T/c/src/" "$S::m/c1/"
check "a --backup-dir leaving the module: refused, named" \
	eval '[ "$RC" -ne 0 ] && out_has "--backup-dir ../../bak: leaves the module" && [ ! -e "$T/bak" ]'
ln -s "$T/outside" "$T/mod/lnk"
run -a --json --link-dest=../lnk "$T/c/src/" "$S::m/c2/"
check "a symlinked --link-dest DIR in the module: not followed (the file is sent)" \
	eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 7 ]'
check "  no link to the file outside" [ "$(stat -c %h "$T/outside/f")" = 1 ]
ln -s "$T/outside/f" "$T/mod/ref/f"
run -a --json --link-dest=../ref "$T/c/src/" "$S::m/c3/"
check "a symlink in a file's place in DIR: not followed (the file is sent)" \
	eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 7 ] && [ "$(stat -c %h "$T/outside/f")" = 1 ]'
check "  the file landed as a file" [ -f "$T/mod/c3/f" -a ! -L "$T/mod/c3/f" ]

# --- 3. backups of a push ---
mkdir -p "$T/b/src"
echo new >"$T/b/src/f"
mkdir -p "$T/mod/b1"
echo old >"$T/mod/b1/f"
touch -d "2001-01-01" "$T/mod/b1/f" # not the same as the source's by the quick check
run -a --backup-dir=../bk --suffix=.1 "$T/b/src/" "$S::m/b1/"
check "--backup-dir in the module: exit 0, the new file in place" \
	eval '[ "$RC" -eq 0 ] && [ "$(cat "$T/mod/b1/f")" = new ]'
check "  the old one kept under it with its suffix" [ "$(cat "$T/mod/bk/f.1" 2>/dev/null)" = old ]
echo newer >"$T/b/src/f"
touch -d "2002-01-01" "$T/b/src/f"
run -a -b "$T/b/src/" "$S::m/b1/"
check "-b: the replaced file kept as f~" [ "$(cat "$T/mod/b1/f~" 2>/dev/null)" = new ]

check "daemon alive" daemon_alive snap
stop_daemon snap
finish
