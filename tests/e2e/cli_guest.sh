# shellcheck shell=bash
# rdcp's command line, exit statuses and output, held against rsync (issue
# 28: rsync.1 is the specification where rdcp offers an rsync option, and
# real rsync is the oracle). One host (RIG_MODE 1): an rdcpd here, and for
# the output comparisons an rsync daemon here too, so that the same change
# is made by both and their lines compared.
#   1. the words: -avh, --partial, --checksum keep the operands; refusals
#   2. exit statuses: 3, 5, 10, 11, 12, 23, 24, 30, 35, 0 for a fifo
#   3. one cause, one message: a failed directory and what was under it
#   4. -i, -v, --out-format, --stats next to rsync's own, change by change,
#      pushes and pulls; --log-file; --json with every listing option
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$RIG_SELF_IP
PRELOAD=${CLI_PRELOAD:?the LD_PRELOAD shim tests/e2e/vanish_preload.so}
EVIL=${4:-$RDCP_EVIL}
T=/tmp/cli
rm -rf "$T"
mkdir -p "$T/mod" "$T/ro" "$T/src" "$T/pull"
start_daemon cli --module "m=$T/mod" --module "ro=$T/ro,ro" || exit 1

# lines STRING: how many lines of /tmp/out contain STRING
lines() { grep -c -- "$1" /tmp/out; }

# --- 1. the words (rsync's, rsync's meaning) ---
mkdir -p "$T/src/tree/sub" "$T/mod/avh" "$T/mod/partial" "$T/mod/cs"
echo one >"$T/src/tree/one"
echo two >"$T/src/tree/sub/two"
run -avh "$T/src/tree" "$S::m/avh"
check "-avh copies (-h is --human-readable, not help): exit 0" [ "$RC" -eq 0 ]
check "  and prints no usage text" not out_has "usage: rdcp"
check "  the tree arrived" same_tree "$T/src/tree" "$T/mod/avh/tree"
run -r --partial "$T/src/tree" "$S::m/partial"
check "--partial is itself, not --partial-dir eating the next word: exit 0" [ "$RC" -eq 0 ]
check "  the tree arrived" same_tree "$T/src/tree" "$T/mod/partial/tree"
check "  no partial dir named after the source" [ ! -e "$T/mod/partial/$T/src/tree" ]
run -r --checksum "$T/src/tree" "$S::m/cs"
check "--checksum takes no value, the operand stays one: exit 0" [ "$RC" -eq 0 ]
check "  the tree arrived" same_tree "$T/src/tree" "$T/mod/cs/tree"
run --checksum=sha256 "$T/src/tree/one" "$S::m/"
check "--checksum=ALG: usage error (exit 1) naming --checksum-choice" \
	eval '[ "$RC" -eq 1 ] && out_has "the chunk check is --checksum-choice sha256"'
run -r --checksum-choice sha256 -P "$T/src/tree" "$S::m/cc"
check "--checksum-choice sha256 -P: exit 0, summary names sha256" \
	eval '[ "$RC" -eq 0 ] && out_has "checksum sha256"'
run --partial-d x "$T/src/tree/one" "$S::m/"
check "no abbreviations (rsync has none): --partial-d is unknown, exit 1" \
	eval '[ "$RC" -eq 1 ] && out_has "unknown option --partial-d"'
rsync --partial-d x "$T/src/tree/one" /tmp/nowhere >/dev/null 2>&1
check "  as rsync: exit 1 for the same word" [ $? -eq 1 ]
run --inplace -r "$T/src/tree" "$S::m/x"
check "a refused rsync option: exit 1 with what to use instead" \
	eval '[ "$RC" -eq 1 ] && out_has "--inplace is not offered: "'
run -z "$T/src/tree/one" "$S::m/z"
check "-z: accepted with a note, exit 0" eval '[ "$RC" -eq 0 ] && out_has "note: .*compress"'

# --- 2. exit statuses: rsync's numbers where the meaning is the same ---
echo a >"$T/src/ga"
echo b >"$T/src/gb"
run "$T/src/ga" "$S::nope/x"
check "unknown module: exit 3 (selecting files)" [ "$RC" -eq 3 ]
run "$T/src/ga" "$S::ro/"
check "push into a read-only module: exit 5 (the server refused)" [ "$RC" -eq 5 ]
run "$T/src/missing" "$S::m/"
check "the only source missing: exit 3, not 23 (nothing was copied)" [ "$RC" -eq 3 ]
check "  said once" [ "$(lines "$T/src/missing: No such file")" -eq 1 ]
run "$T/src/ga" "$T/src/missing" "$T/src/gb" "$S::m/"
check "a missing source among good ones: exit 23" [ "$RC" -eq 23 ]
check "  said once (no list of it again at the end)" \
	[ "$(lines "$T/src/missing: No such file")" -eq 1 ]
run "$S::m/ga" "$T/nodir/sub/x"
check "local destination directory missing: exit 3, not the server's refusal" [ "$RC" -eq 3 ]
check "  names it" out_has "destination directory $T/nodir/sub"
run "$S::m/ga" /usr/share/rdcp-not-writable
check "unwritable local destination: exit 11 (file I/O), not 'server refused'" [ "$RC" -eq 11 ]
run "$S::m/nothere" "$T/pull/"
check "pull of a path the module does not have: exit 3" [ "$RC" -eq 3 ]
run "$T/src/ga" "rdcp://$S:1/m/"
check "nothing listening: exit 10" [ "$RC" -eq 10 ]
# a listener that never answers: the connection times out (rsync's 35)
python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18799)); s.listen(4)
open("/tmp/cli/mute.ready", "w").close()
c, _ = s.accept(); time.sleep(30)' &
mute=$!
wait_for "$T/mute.ready" 10
run --timeout 2 "$T/src/ga" "rdcp://$S:18799/m/"
check "a listener that never answers: exit 35 (timeout connecting)" [ "$RC" -eq 35 ]
kill $mute 2>/dev/null
wait $mute 2>/dev/null
# a server gone silent mid-transfer: exit 30
head -c $((300 << 20)) /dev/zero >"$T/mod/big"
"$RDCP" --timeout 2 --retries 0 "$S::m/big" "$T/pull/big" >/tmp/out 2>&1 &
cp=$!
if wait_for "$T/pull/.rdcp-partial.big.rec" 30; then
	kill -STOP "$(cat /tmp/cli.pid)"
	wait $cp
	RC=$?
	kill -CONT "$(cat /tmp/cli.pid)"
	sed 's/^/    | /' /tmp/out
	check "the server stopped mid-transfer: exit 30 (timeout)" [ "$RC" -eq 30 ]
else
	wait $cp
	echo "    not judged: the pull of 300 MiB ended before it could be stopped"
fi
rm -f "$T/mod/big"
# a server that breaks the protocol: exit 12
if [ -x "$EVIL" ]; then
	"$EVIL" serve-evil 18798 dotdot >"$T/evil.log" 2>&1 &
	ev=$!
	for _ in $(seq 50); do grep -q "listening" "$T/evil.log" && break; nap 0.1; done
	run "rdcp://$S:18798/m/evil" "$T/pull/"
	check "a server sending '../evil': exit 12 (protocol data stream)" [ "$RC" -eq 12 ]
	kill $ev 2>/dev/null
	wait $ev 2>/dev/null
fi
# a fifo without -D: rsync's note, not an error
mkdir -p "$T/src/withfifo"
echo data >"$T/src/withfifo/file"
mkfifo "$T/src/withfifo/fifo"
run -r "$T/src/withfifo" "$S::m/"
check "a fifo without -D: exit 0" [ "$RC" -eq 0 ]
check "  rsync's note: skipping non-regular file" \
	out_has "skipping non-regular file \"$T/src/withfifo/fifo\""
run -r --info=nonreg0 "$T/src/withfifo" "$S::m/"
check "  --info=nonreg0: no note" eval '[ "$RC" -eq 0 ] && not out_has "non-regular"'
# a file that vanishes while the tree is walked: exit 24, rsync's words
mkdir -p "$T/src/vanish"
for i in 1 2 3; do echo "$i" >"$T/src/vanish/f$i"; done
RDCP_VANISH=f2 LD_PRELOAD=$PRELOAD run -r "$T/src/vanish" "$S::m/"
check "a source file vanished during the walk: exit 24" [ "$RC" -eq 24 ]
check "  rsync's warning: file has vanished" out_has "file has vanished: \"$T/src/vanish/f2\""
check "  the others arrived" [ -e "$T/mod/vanish/f1" ] && [ -e "$T/mod/vanish/f3" ]
echo 2 >"$T/src/vanish/f2"
RDCP_VANISH=f2 LD_PRELOAD=$PRELOAD run -r "$T/src/vanish" "$T/src/missing" "$S::m/"
check "vanished and another failure: exit 23 (rsync: 23 wins)" [ "$RC" -eq 23 ]

# --- 3. one cause, one message ---
mkdir -p "$T/src/deep/blocked"
for i in $(seq 1 14); do echo "$i" >"$T/src/deep/blocked/f$i"; done
echo ok >"$T/src/deep/fine"
mkdir -p "$T/mod/fold/deep"
# a file where the directory goes is replaced (rsync's rules), unless it cannot go
echo "an immutable file where the directory should go" >"$T/mod/fold/deep/blocked"
chattr +i "$T/mod/fold/deep/blocked"
run -r "$T/src/deep" "$S::m/fold/"
chattr -i "$T/mod/fold/deep/blocked"
check "a directory that cannot be made, 14 files under it: exit 23" [ "$RC" -eq 23 ]
check "  the cause said once" \
	[ "$(lines "in the way of deep/blocked.*Operation not permitted")" -eq 1 ]
check "  the rest folded: '... and 14 more under deep/blocked/'" \
	out_has "\.\.\. and 14 more under deep/blocked/"
check "  no line for any file under it" [ "$(lines "deep/blocked/f")" -eq 0 ]
check "  at most 4 lines in all ($(grep -vc "using TCP" /tmp/out))" \
	[ "$(grep -vc "using TCP" /tmp/out)" -le 4 ]
check "  the file beside it arrived" [ "$(cat "$T/mod/fold/deep/fine")" = ok ]

# --- 4. the lists rsync prints, for the same changes ---
# An rsync daemon beside rdcpd: each step changes the source once, then
# rsync pushes it to its module and rdcp to its own (pulls: each into its
# own directory), with the same options; their lines must be the same
# (sorted: rsync sorts its file list, rdcp walks in directory order).
RSPORT=18797
mkdir -p "$T/rmod"
cat >"$T/rsyncd.conf" <<CONF
use chroot = no
pid file = $T/rsyncd.pid
[m]
path = $T/rmod
read only = no
munge symlinks = no
uid = root
gid = root
CONF
rsync --daemon --no-detach --config="$T/rsyncd.conf" --port=$RSPORT &
rsd=$!
for _ in $(seq 50); do [ -e "$T/rsyncd.pid" ] && break; nap 0.1; done
export LC_ALL=C.UTF-8 # both print UTF-8 names as they are
# lines_of OUT: the entry lines, sorted (no summaries, no blank lines)
lines_of() {
	grep -v -e '^sending incremental file list' -e '^receiving incremental file list' \
		-e '^sent .* bytes/sec$' -e '^total size is' -e '^$' -e ' entries, .* in .* s, ' \
		-e '^created directory' -e '^opening tcp connection' -e '^sending daemon args' \
		-e '^delta-transmission' -e '^total: matches=' "$1" | LC_ALL=C sort
}
# both WHAT push|pull OPTS...: the same options through both, lines compared
both() {
	local what=$1 dir=$2
	shift 2
	if [ "$dir" = push ]; then
		rsync "$@" "$T/osrc/src" "rsync://127.0.0.1:$RSPORT/m/" >"$T/rs.out" 2>"$T/rs.err"
		echo "rsync rc=$?" >>"$T/rs.err"
		"$RDCP" "$@" "$T/osrc/src" "$S::m/o/" >"$T/rd.out" 2>"$T/rd.err"
		echo "rdcp rc=$?" >>"$T/rd.err"
	else
		rsync "$@" "rsync://127.0.0.1:$RSPORT/m/src" "$T/pull-rs/" >"$T/rs.out" 2>"$T/rs.err"
		echo "rsync rc=$?" >>"$T/rs.err"
		"$RDCP" "$@" "$S::m/o/src" "$T/pull-rd/" >"$T/rd.out" 2>"$T/rd.err"
		echo "rdcp rc=$?" >>"$T/rd.err"
	fi
	lines_of "$T/rs.out" >"$T/rs.lines"
	lines_of "$T/rd.out" >"$T/rd.lines"
	if cmp -s "$T/rs.lines" "$T/rd.lines" && [ -s "$T/rs.lines" -o "${EMPTY_OK:-0}" = 1 ]; then
		pass "$what ($dir $*): $(wc -l <"$T/rd.lines") lines as rsync's"
		sed 's/^/    = /' "$T/rd.lines"
	else
		fail "$what ($dir $*): lines differ from rsync's"
		diff "$T/rs.lines" "$T/rd.lines" | sed 's/^/    /' | head -20
		tail -n 3 "$T/rs.err" "$T/rd.err" | sed 's/^/    /'
	fi
}
mkdir -p "$T/osrc/src/d/e" "$T/mod/o" "$T/pull-rs" "$T/pull-rd"
echo hello >"$T/osrc/src/f"
echo x >"$T/osrc/src/d/g"
head -c 5000 /dev/urandom >"$T/osrc/src/d/big"
ln -s f "$T/osrc/src/ln"
mkfifo "$T/osrc/src/fifo"
printf 'caf\303\251' >"$T/osrc/src/$(printf 'caf\303\251')"
touch -d '2021-02-03 04:05:06' "$T/osrc/src/f" "$T/osrc/src/d/g"
for dir in push pull; do
	both "new tree, -i" $dir -aDi
	EMPTY_OK=1 both "nothing changed, -i" $dir -aDi
	both "nothing changed, -ii" $dir -aDii
	if [ $dir = push ]; then
		touch -d '2022-01-01 00:00:01' "$T/osrc/src/f"
	else
		touch -d '2022-01-01 00:00:01' "$T/rmod/src/f" "$T/mod/o/src/f"
	fi
	both "mtime only, -i" $dir -aDi
	if [ $dir = push ]; then
		echo hellO >"$T/osrc/src/f"
		touch -d '2022-01-01 00:00:02' "$T/osrc/src/f"
	else
		for m in "$T/rmod" "$T/mod/o"; do
			echo hellO >"$m/src/f"
			touch -d '2022-01-01 00:00:02' "$m/src/f"
		done
	fi
	both "same size, new contents, -i" $dir -aDi
	if [ $dir = push ]; then
		echo longer >>"$T/osrc/src/d/g"
		chmod 600 "$T/osrc/src/f"
		ln -sfn d "$T/osrc/src/ln"
		echo n >"$T/osrc/src/d/e/new"
	else
		for m in "$T/rmod" "$T/mod/o"; do
			echo longer >>"$m/src/d/g"
			chmod 600 "$m/src/f"
			ln -sfn d "$m/src/ln"
			echo n >"$m/src/d/e/new"
			touch -d '2023-01-01' "$m/src/d/e" "$m/src/ln" -h
		done
	fi
	both "size, perms, a symlink's target, a new file: -i" $dir -aDi
	if [ $dir = push ]; then
		touch -d '2024-01-01' "$T/osrc/src/d/g" "$T/osrc/src/d"
	else
		touch -d '2024-01-01' "$T/rmod/src/d/g" "$T/mod/o/src/d/g" "$T/rmod/src/d" \
			"$T/mod/o/src/d"
	fi
	both "-v lists what was sent or made" $dir -aDv
	[ $dir = pull ] && EMPTY_OK=1 both "-vv: NAME is uptodate" $dir -aDvv
	if [ $dir = push ]; then
		chmod 644 "$T/osrc/src/f"
		touch -d '2025-01-01' "$T/osrc/src/d/big"
	else
		for m in "$T/rmod" "$T/mod/o"; do
			chmod 644 "$m/src/f"
			touch -d '2025-01-01' "$m/src/d/big"
		done
	fi
	both "--out-format '%o %i %n%L'" $dir -aD "--out-format=%o %i %n%L"
done
# --chmod, -L, -x: the same trees and lines as rsync's (fresh destinations)
fresh() { rm -rf "$T/rmod/$1" "$T/mod/o/$1"; mkdir -p "$T/rmod/$1" "$T/mod/o/$1"; }
# both_to NAME WHAT push|pull OPTS...: $T/xsrc/src into NAME on both sides (a
# pull: from the modules' copies into $T/xpull-rs|-rd/NAME), their lines, exit
# statuses and trees compared (NOTREE=1: lines and exits only)
both_to() {
	local name=$1 what=$2 dir=$3 rrc drc a b
	shift 3
	fresh "$name"
	if [ "$dir" = push ]; then
		rsync "$@" "$T/xsrc/src" "rsync://127.0.0.1:$RSPORT/m/$name/" >"$T/rs.out" 2>"$T/rs.err"
		rrc=$?
		"$RDCP" "$@" "$T/xsrc/src" "$S::m/o/$name/" >"$T/rd.out" 2>"$T/rd.err"
		drc=$?
		a=$T/rmod/$name/src b=$T/mod/o/$name/src
	else
		cp -a "$T/xsrc/src" "$T/rmod/$name/" && cp -a "$T/xsrc/src" "$T/mod/o/$name/"
		rm -rf "$T/xpull-rs/$name" "$T/xpull-rd/$name"
		mkdir -p "$T/xpull-rs/$name" "$T/xpull-rd/$name"
		rsync "$@" "rsync://127.0.0.1:$RSPORT/m/$name/src" "$T/xpull-rs/$name/" \
			>"$T/rs.out" 2>"$T/rs.err"
		rrc=$?
		"$RDCP" "$@" "$S::m/o/$name/src" "$T/xpull-rd/$name/" >"$T/rd.out" 2>"$T/rd.err"
		drc=$?
		a=$T/xpull-rs/$name/src b=$T/xpull-rd/$name/src
	fi
	lines_of "$T/rs.out" >"$T/rs.lines"
	lines_of "$T/rd.out" >"$T/rd.lines"
	if cmp -s "$T/rs.lines" "$T/rd.lines" && [ $rrc -eq $drc ] &&
		{ [ "${NOTREE:-0}" = 1 ] || same_meta "$a" "$b" noacl >/dev/null; }; then
		pass "$what ($dir $*): rsync's lines, exit $drc${NOTREE:+ (lines only)}"
		sed 's/^/    = /' "$T/rd.lines"
	else
		fail "$what ($dir $*): rsync exit $rrc, rdcp $drc"
		diff "$T/rs.lines" "$T/rd.lines" | sed 's/^/    /' | head -20
		same_meta "$a" "$b" noacl | sed 's/^/    /' | head -10
		tail -n 3 "$T/rs.err" "$T/rd.err" | sed 's/^/    /'
	fi
}
# -H -i of "dir/" sources: a hard link's target is shown relative to the
# transfer's root, as rsync shows it (it travels as "s1/a"), and a root whose
# destination the run made is new ("cd+++", as rsync), listed once for the
# two sources as rsync lists "./" once. (Which name of a
# group is sent and which linked differs from rsync, which picks by its
# sorted file list: the first source's file is rdcp's here.)
mkdir -p "$T/hsrc/s1" "$T/hsrc/s2" && echo h >"$T/hsrc/s1/a" && ln "$T/hsrc/s1/a" "$T/hsrc/s2/b"
"$RDCP" -aHi "$T/hsrc/s1/" "$T/hsrc/s2/" "$T/hsrc/rd/" >"$T/rd.out" 2>&1
lines_of "$T/rd.out" >"$T/rd.lines"
check "-aHi of dir/ sources: 'hf+++++++++ b => a' and 'cd+++++++++ ./' once" eval \
	'grep -qx "hf+++++++++ b => a" "$T/rd.lines" && [ "$(grep -cx "cd+++++++++ \./" "$T/rd.lines")" = 1 ] &&
	! grep -q "s1/" "$T/rd.lines"'
sed 's/^/    = /' "$T/rd.lines"
mkdir -p "$T/xsrc/src/dir/sub" "$T/xsrc/src/mnt" "$T/xsrc/outside"
echo a >"$T/xsrc/src/dir/a"
echo b >"$T/xsrc/src/dir/sub/b"
chmod 0750 "$T/xsrc/src/dir/sub"
chmod 0755 "$T/xsrc/src/dir/a"
echo c >"$T/xsrc/src/c"
chmod 0604 "$T/xsrc/src/c"
echo far >"$T/xsrc/outside/far"
ln -s c "$T/xsrc/src/l-file"
ln -s dir "$T/xsrc/src/l-dir"
ln -s ../outside/far "$T/xsrc/src/l-out"
# (a daemon keeps no setuid/setgid bits for an anonymous client: pushes
# without them, the special bits on a pull, which rdcp receives as root)
# (rsync's daemon leaves the times of directories unset after a push with
# --chmod, and of the source directory with -xx; rdcp keeps the source's:
# lines and modes are compared there, by the lines and the modes alone)
NOTREE=1 both_to chm "--chmod as rsync's" push -ai --chmod=ug+w,Fo-w,+X
check "  the same modes" eval '[ "$(cd "$T/rmod/chm" && find . -printf "%m %p\n" | sort)" = \
	"$(cd "$T/mod/o/chm" && find . -printf "%m %p\n" | sort)" ]'
NOTREE=1 both_to chm2 "two --chmod, octal" push -ai --chmod=D775 --chmod=F664
check "  the same modes" eval '[ "$(cd "$T/rmod/chm2" && find . -printf "%m %p\n" | sort)" = \
	"$(cd "$T/mod/o/chm2" && find . -printf "%m %p\n" | sort)" ]'
# (rsync -a leaves a directory or symlink it made with the time it got if
# the source's is in the same second (it compares whole seconds there): the
# pulls below flaked when the tree was made in the second of the copy. Old
# times on every source entry keep rsync, the oracle, setting them.)
find "$T/xsrc/src" -exec touch -h -d @1500000000.25 {} +
both_to chm3 "--chmod with special bits" pull -ai --chmod=Dg+s,ug+w,Fo-w,+X
both_to chm4 "two --chmod, octal" pull -ai --chmod=D2775 --chmod=F664
both_to cl "-L: what the links point to" push -aiL
mkdir -p "$T/pull-L"
run -aL "$S::m/o/chm/src" "$T/pull-L/"
check "a daemon pull with -L: exit 0, links stay links (the daemon follows none)" \
	eval '[ "$RC" -eq 0 ] && [ -L "$T/pull-L/src/l-file" ]'
check "  and a note says so" out_has "sends symlinks as symlinks (-L)"
ln -s nowhere "$T/xsrc/src/l-dangling"
# (rsync leaves the times of a directory with an error unset: trees differ)
NOTREE=1 both_to cl2 "-L with a dangling link: rsync's error and exit" push -aiL
rm "$T/xsrc/src/l-dangling"
if mount -t tmpfs -o size=1m tmpfs "$T/xsrc/src/mnt" 2>/dev/null; then
	echo in-mount >"$T/xsrc/src/mnt/m"
	# (rsync leaves the mount point's time unset: trees differ there)
	NOTREE=1 both_to x1 "-x: the mount point empty" push -aix
	check "  the mount point came, empty" eval '[ -d "$T/mod/o/x1/src/mnt" ] && [ ! -e "$T/mod/o/x1/src/mnt/m" ]'
	NOTREE=1 both_to x2 "-xx: not even the mount point" push -aixx
	check "  the mount point left out" [ ! -e "$T/mod/o/x2/src/mnt" ]
	# (rsync's daemon at times leaves the mount point's and its parent's
	# times unset here too: rdcp's copy is held against the source instead)
	NOTREE=1 both_to x0 "without -x: across the mount" push -ai
	check "  rdcp's copy is the source, mount and all" \
		same_meta "$T/xsrc/src" "$T/mod/o/x0/src" noacl
	umount "$T/xsrc/src/mnt"
else
	echo "    (cannot mount a tmpfs here: -x not judged)"
fi

# --stats: rsync's fields, the counts and sizes as rsync's for the same tree
# (a new one each time: both send everything), with -h levels
stats_of() { # the fields both can know: no byte totals of the protocols
	grep -E '^(Number of|Total file size|Total transferred file size|Literal data|Matched data)' "$1"
}
for h in "" -h -hh --no-h; do
	rm -rf "$T/rmod/st" "$T/mod/o/st"
	mkdir -p "$T/rmod/st" "$T/mod/o/st"
	rsync -aD --stats $h "$T/osrc/src" "rsync://127.0.0.1:$RSPORT/m/st/" >"$T/rs.out" 2>&1
	"$RDCP" -aD --stats $h "$T/osrc/src" "$S::m/o/st/" >"$T/rd.out" 2>"$T/rd.err"
	stats_of "$T/rs.out" >"$T/rs.lines"
	stats_of "$T/rd.out" >"$T/rd.lines"
	if [ "$(wc -l <"$T/rd.lines")" -ge 8 ] && cmp -s "$T/rs.lines" "$T/rd.lines"; then
		pass "--stats ${h:-(-h level 1)}: the counts and sizes are rsync's"
		sed 's/^/    = /' "$T/rd.lines"
	else
		fail "--stats ${h:-(-h level 1)}: differs from rsync's"
		diff "$T/rs.lines" "$T/rd.lines" | sed 's/^/    /'
	fi
	check "  and rsync's closing lines" eval \
		'grep -qE "^sent [0-9.,KMG]+ bytes  received [0-9.,KMG]+ bytes  [0-9.,KMG]+ bytes/sec$" \
			"$T/rd.out" && grep -qE "^total size is [0-9.,KMG]+  speedup is [0-9.,]+$" "$T/rd.out"'
done
kill "$rsd" 2>/dev/null
wait "$rsd" 2>/dev/null

# --log-file: rsync's lines (date, time, [pid], the item) for what changed, errors, the end
rm -f "$T/log"
echo changed >>"$T/osrc/src/f"
run -aD --log-file="$T/log" "$T/osrc/src" "$T/src/missing" "$S::m/o/"
check "--log-file: the change, as %i %n%L, with rsync's prefix" \
	grep -qE '^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} \[[0-9]+\] <f\.st\.\.\.\.\.\. src/f$' \
	"$T/log"
check "  the error" grep -q "\] $T/src/missing: No such file" "$T/log"
check "  the end: sent, received, total size" grep -qE '\] sent [0-9]+ bytes  received [0-9]+ bytes  total size [0-9]+$' "$T/log"
check "  nothing unchanged in it" not grep -q "src/caf" "$T/log"
run -aD --log-file="$T/log2" --log-file-format="%o %n %l" "$T/osrc/src" "$S::m/o/"
check "--log-file-format '%o %n %l'" eval '[ ! -s "$T/log2" ] || ! grep -q "send src" "$T/log2"'
touch "$T/osrc/src/d/g"
run -aD --log-file="$T/log2" --log-file-format="%o %n %l" "$T/osrc/src" "$S::m/o/"
check "  its lines" grep -q "\] send src/d/g $(stat -c %s "$T/osrc/src/d/g")$" "$T/log2"

# --json stays one object on stdout, whatever else is asked; counted once per entry
rm -rf "$T/mod/j"
mkdir -p "$T/mod/j"
for opts in "" -v -vv -i -ii --stats "-vv -i --stats" "--out-format=%n" "-h --stats" \
	"--info=progress2"; do
	# shellcheck disable=SC2086 # the options are words
	"$RDCP" -aD --json $opts "$T/osrc/src" "$S::m/j/" >"$T/j.out" 2>"$T/j.err"
	RC=$?
	check "--json $opts: exit 0, stdout is one JSON object" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_status"] == 0, d
' "$T/j.out"
done
rm -rf "$T/mod/j2"
mkdir -p "$T/mod/j2"
"$RDCP" -aD --json -vv "$T/osrc/src" "$S::m/j2/" >"$T/j.out" 2>"$T/j.err"
check "--json counts each entry once, by type (directories not twice)" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
want = {"files": 5, "dirs": 3, "symlinks": 1, "specials": 1, "entries": 10, "created": 10,
        "transferred": 5, "failed": 0}
got = {k: d[k] for k in want}
assert got == want, (got, want)
' "$T/j.out"
check "  the names went to stderr" grep -q "^src/d/g$" "$T/j.err"

stop_daemon cli
finish
