# shellcheck shell=bash
# Helpers for end-to-end scripts that run inside the Soft-RoCE rig guests.
# Sourced by the *_guest.sh scripts; expects RDCP, RDCPD (absolute paths of
# the binaries) and the rig's RIG_* variables.

PASSES=0
# E2E_TRANSPORT=tcp: the suite runs on a host over TCP (tests/e2e/host_test.sh);
# checks that only hold over RDMA are skipped there.
over_rdma() { [ "${E2E_TRANSPORT:-rdma}" = rdma ]; }
FAILS=0
: "${RIG_SHARED:?run inside the rig}"
PORT=${PORT:-18710}

# br ADDR: ADDR as a host part of an operand ([v6] in brackets).
br() { case $1 in *:*) echo "[$1]" ;; *) echo "$1" ;; esac; }

pass() { PASSES=$((PASSES + 1)); echo "PASS: $*"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }
check() { # check "what" cmd...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
	echo "guest $RIG_ROLE: $PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}

# nap: a sleep without a fork (nap.sh beside this file)
# shellcheck source=tests/e2e/nap.sh
. "$(dirname "${BASH_SOURCE[0]}")/nap.sh"
nap 0 # open it once here, not in each $(...) that naps

# wait_for FILE [SECONDS]
wait_for() {
	local f=$1 t=${2:-60} i=0
	while [ ! -e "$f" ]; do
		i=$((i + 1))
		[ "$i" -gt $((t * 10)) ] && { echo "timeout waiting for $f"; return 1; }
		nap 0.1
	done
}

# status_peak PID FIELD STOP OUT: sample FIELD (VmLck, VmPin, ...: kB) of
# /proc/PID/status until the file STOP exists or PID is gone, then write the
# largest value seen to OUT (whole, once: wait_for OUT, then read it).
status_peak() {
	local pid=$1 field=$2 stop=$3 out=$4 peak=0 v
	while [ ! -e "$stop" ] && kill -0 "$pid" 2>/dev/null; do
		v=$(awk -v f="$field:" '$1 == f {print $2}' "/proc/$pid/status" 2>/dev/null)
		[ "${v:-0}" -gt "$peak" ] && peak=$v
		nap 0.05
	done
	echo "$peak" >"$out.tmp" && mv -f "$out.tmp" "$out"
}

# start_daemon NAME ARGS... : start rdcpd in the background, wait until it
# listens; its pid goes to /tmp/NAME.pid, its log to /tmp/NAME.log.
start_daemon() {
	local name=$1
	shift
	rm -f "/tmp/$name.ready"
	"${DAEMON_BIN:-$RDCPD}" --foreground --no-auth --ready-file "/tmp/$name.ready" "$@" \
		2>"/tmp/$name.log" &
	echo $! >"/tmp/$name.pid"
	wait_for "/tmp/$name.ready" 20 || { cat "/tmp/$name.log"; return 1; }
}

# start_daemon_auth NAME ARGS... : the same without --no-auth (a config
# with authentication).
start_daemon_auth() {
	local name=$1
	shift
	rm -f "/tmp/$name.ready"
	"${DAEMON_BIN:-$RDCPD}" --foreground --ready-file "/tmp/$name.ready" "$@" \
		2>"/tmp/$name.log" &
	echo $! >"/tmp/$name.pid"
	wait_for "/tmp/$name.ready" 20 || { cat "/tmp/$name.log"; return 1; }
}

daemon_alive() { kill -0 "$(cat "/tmp/$1.pid")" 2>/dev/null; }
stop_daemon() { kill "$(cat "/tmp/$1.pid")" 2>/dev/null; wait "$(cat "/tmp/$1.pid")" 2>/dev/null || true; }

# make_tree DIR: nested dirs, empty files and dirs, symlinks, awkward names.
make_tree() {
	local d=$1
	mkdir -p "$d/a/b/c" "$d/empty dir" "$d/x"
	echo "hello" >"$d/a/hello.txt"
	: >"$d/a/b/empty"
	head -c 300000 /dev/urandom >"$d/a/b/c/random.bin"
	head -c 4096 /dev/urandom >"$d/a/b/c/exact4k"
	echo spaces >"$d/name with spaces"
	echo newline >"$d/new
line"
	echo bytes >"$d/$(printf 'caf\351-\377')"
	echo tab >"$d/tab$(printf '\t')name"
	ln -s a/hello.txt "$d/link-to-file"
	ln -s a/b "$d/link-to-dir"
	ln -s /nonexistent/target "$d/dangling"
	for i in $(seq 1 40); do echo "$i" >"$d/x/f$i"; done
}

# manifest DIR: one line per entry (type, size, perms, link target, digest).
manifest() {
	(cd "$1" && find . -mindepth 1 -printf '%y %s %m %P -> %l\n' | LC_ALL=C sort) |
		sed 's/^d [0-9]* /d - /'
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
}

same_tree() { # same_tree A B
	manifest "$1" >/tmp/manifest.1 2>&1
	manifest "$2" >/tmp/manifest.2 2>&1
	if cmp -s /tmp/manifest.1 /tmp/manifest.2; then
		return 0
	fi
	diff /tmp/manifest.1 /tmp/manifest.2 | head -20
	return 1
}

# Run rdcp, keep its stdout+stderr in /tmp/out and its status in $RC.
run() {
	"${CLIENT_BIN:-$RDCP}" "$@" >/tmp/out 2>&1
	RC=$?
	sed 's/^/    | /' /tmp/out
}

out_has() { grep -q -- "$1" /tmp/out; }
# json_num NAME FILE: the number NAME of rdcp --json's output in FILE
json_num() { grep -o "\"$1\": *[0-9]*" "$2" | grep -o '[0-9]*$'; }
not() { ! "$@"; }

# make_meta_tree DIR: what -aHXAS keeps (issue 13), the same bytes every time
# (server and client build identical trees): a hard-link group across
# directories, a 1 GiB file with 4 KiB of data, a fifo, a symlink, user.*
# xattrs and ACLs where this filesystem takes them (META_XATTR / META_ACL say
# whether it did), nanosecond mtimes everywhere (set last, leaves first).
make_meta_tree() {
	local d=$1
	mkdir -p "$d/sub/deeper"
	seq 1 20000 >"$d/sub/f1"
	ln "$d/sub/f1" "$d/sub/f1-link"
	ln "$d/sub/f1" "$d/top-link"
	seq 5 70000 >"$d/plain"
	truncate -s 1G "$d/sparse"
	head -c 4096 /dev/zero | tr '\0' x |
		dd of="$d/sparse" bs=4096 seek=131072 conv=notrunc status=none
	mkfifo "$d/fifo"
	ln -s plain "$d/link"
	chmod 0751 "$d/sub/deeper"
	META_XATTR=0
	if setfattr -n user.rdcp -v "one value" "$d/plain" 2>/dev/null; then
		META_XATTR=1
		setfattr -n user.empty "$d/plain"
		setfattr -n user.bin -v 0x00ff00ff "$d/sub/f1"
		setfattr -n user.dir -v "a directory" "$d/sub"
	fi
	META_ACL=0
	if setfacl -m u:4321:rx,g:4322:r "$d/plain" 2>/dev/null; then
		META_ACL=1
		setfacl -m u:4323:rwx "$d/sub/f1"
		setfacl -d -m u:4321:rwx,g:4322:rx "$d/sub/deeper"
		setfacl -m u:4321:rx "$d/sub/deeper"
	fi
	touch -h -d '2021-03-04 05:06:07.123456789' "$d/link"
	touch -d '2020-01-02 03:04:05.000000001' "$d/plain" "$d/sparse" "$d/fifo" "$d/sub/f1"
	touch -d '2019-05-06 07:08:09.987654321' "$d/sub/deeper"
	touch -d '2018-01-01 00:00:00.5' "$d/sub" "$d"
}

# meta_manifest DIR [noacl]: types, modes, link counts, ns mtimes, link
# targets, contents, user.* xattrs, ACLs (not with noacl), one block per entry
# in sorted order.
meta_manifest() {
	local p
	(cd "$1" && find . -printf '%y %m %n %T@ %P -> %l %s\n' | LC_ALL=C sort) |
		sed 's/^\(d .*\) [0-9]*$/\1/'
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
	(cd "$1" && find . | LC_ALL=C sort | while read -r p; do
		getfattr -h -d -m '^user\.' "$p" 2>/dev/null
		[ -L "$p" ] || [ "${2:-}" = noacl ] || getfacl -n -p "$p" 2>/dev/null
	done)
}

same_meta() { # same_meta A B [noacl]
	meta_manifest "$1" "${3:-}" >/tmp/meta.1 2>&1
	meta_manifest "$2" "${3:-}" >/tmp/meta.2 2>&1
	if cmp -s /tmp/meta.1 /tmp/meta.2; then
		return 0
	fi
	diff /tmp/meta.1 /tmp/meta.2 | head -30
	return 1
}

same_inode() { [ "$(stat -c %i "$1")" = "$(stat -c %i "$2")" ]; }
# kib_used FILE: KiB it occupies on disk
kib_used() { du -k "$1" | cut -f1; }

# unreadable_case DIR PORT: a source directory unreadable mid-walk (issue 29)
# with --delete, for real: the suites run as root (chmod 000 does not stop
# root), so everything here runs as nobody (setpriv): the trees are nobody's,
# sub/locked is mode 000 and sub/wo mode 0300 (enterable, not readable), and
# the prior destination has extras in every directory that holds one of them
# (the top, sub, the two themselves). A local copy, then a push and a pull
# through an rdcpd started by nobody on PORT (over RDMA in the rig). Each:
# rsync's exit (23; the oracle: rsync -a --delete --no-inc-recursive as
# nobody on the same trees, which says "IO error encountered -- skipping
# file deletion"), deletion turned off and said once, nothing deleted,
# everything readable copied: rsync's tree. Then --delete, --delete-during,
# --delete-delay and --delete-after with an extra in each readable sibling
# too (sub/deep0 and sub/deep: one of them is listed before the errors):
# nothing deleted in the whole run (rsync --delete's incremental recursion
# would have cleaned the first: rdcp holds every deletion to the end).
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$UR/home" "$@"; }
unreadable_case() {
	UR=$1
	local port=$2 how src dst want mode
	rm -rf "$UR" && mkdir -p "$UR/home" "$UR/mod"
	# readable siblings made before and after the two: whatever order the
	# file system lists them in, one of them comes before the errors
	# (and 150 more each side, each with a file and, in the prior
	# destination, an extra: enough entries before the errors that an rdcp
	# deleting as it goes had cleaned some before it heard of them: more than
	# the window of 256 entries in flight)
	local i
	for i in $(seq 100 249); do mkdir -p "$UR/src/sub/d$i" && echo "$i" >"$UR/src/sub/d$i/f"; done
	mkdir -p "$UR/src/sub/deep0" "$UR/src/sub/locked/inner" "$UR/src/sub/wo" "$UR/src/sub/deep"
	for i in $(seq 250 399); do mkdir -p "$UR/src/sub/d$i" && echo "$i" >"$UR/src/sub/d$i/f"; done
	echo a >"$UR/src/a"
	echo c0 >"$UR/src/sub/deep0/c0"
	echo new-b >"$UR/src/sub/b"
	echo c >"$UR/src/sub/deep/c"
	echo x >"$UR/src/sub/locked/inner/x"
	echo w >"$UR/src/sub/wo/w"
	# the prior destination: a missing, sub/b old, extras in each directory
	mkdir -p "$UR/prior"
	cp -a "$UR/src/." "$UR/prior/"
	rm "$UR/prior/a"
	echo old-b >"$UR/prior/sub/b"
	touch -d '2001-01-01' "$UR/prior/sub/b"
	echo x >"$UR/prior/extra1"
	echo y >"$UR/prior/sub/extra2"
	echo z >"$UR/prior/sub/locked/extra3"
	echo v >"$UR/prior/sub/wo/extraw"
	for i in $(seq 100 399); do echo e >"$UR/prior/sub/d$i/extra"; done
	chown -R nobody: "$UR"
	chmod 000 "$UR/src/sub/locked"
	chmod 0300 "$UR/src/sub/wo"
	cp -a "$UR/src" "$UR/mod/src" # for the pull
	# the oracle: rsync as nobody (without incremental recursion, which
	# deletes in directories it handled before it met the error)
	cp -a "$UR/prior" "$UR/rsync"
	as_nobody rsync -a --delete --no-inc-recursive "$UR/src/" "$UR/rsync/" >"$UR/rsync.out" 2>&1
	local rrc=$?
	sed 's/^/    rsync| /' "$UR/rsync.out"
	check "an unreadable source directory, rsync -a --delete as nobody (the oracle): exit 23" \
		[ "$rrc" -eq 23 ]
	check "  rsync says it skips deletion" grep -q "IO error encountered -- skipping file deletion" \
		"$UR/rsync.out"
	rm -f "/tmp/ur.ready"
	as_nobody "$RDCPD" --foreground --no-auth --port "$port" --ready-file /tmp/ur.ready \
		--module "m=$UR/mod,delete" 2>/tmp/ur.log &
	echo $! >/tmp/ur.pid
	wait_for /tmp/ur.ready 20 || cat /tmp/ur.log
	check "  an rdcpd started by nobody listens" daemon_alive ur
	for how in local push pull; do
		case $how in
		local) src=$UR/src/ dst=$UR/local ;;
		push) src=$UR/src/ dst=$UR/mod/dst ;;
		pull) src=rdcp://$S:$port/m/src/ dst=$UR/pulled ;;
		esac
		cp -a "$UR/prior" "$dst"
		want=$dst/
		[ $how = push ] && want=rdcp://$S:$port/m/dst/
		run_as_nobody -a --delete "$src" "$want"
		check "an unreadable source directory, --delete, $how as nobody: exit 23 as rsync" \
			[ "$RC" -eq "$rrc" ]
		check "  deletion turned off, said once" \
			[ "$(grep -c 'I/O error on the sending side: deleting nothing more' /tmp/out)" -eq 1 ]
		check "  each unreadable directory named" eval 'out_has "sub/locked: Permission denied" &&
			out_has "sub/wo: Permission denied"'
		# the unreadable directories' modes aside: rdcp leaves such a
		# directory as it was (755 here), rsync sets 000 on one, 0700 on the other
		chmod 755 "$UR/rsync/sub/locked" "$UR/rsync/sub/wo" "$dst/sub/locked" "$dst/sub/wo"
		check "  nothing deleted, everything readable copied: rsync's tree" \
			same_tree "$UR/rsync" "$dst"
	done
	# every mode but --delete-before: the whole run, the siblings' extras too
	for mode in --delete --delete-during --delete-delay --delete-after; do
		rm -rf "$UR/mod/dst"
		cp -a "$UR/prior" "$UR/mod/dst"
		echo s >"$UR/mod/dst/sub/deep/extra4"
		echo s >"$UR/mod/dst/sub/deep0/extra5"
		chown -R nobody: "$UR/mod/dst"
		run_as_nobody -a "$mode" "$UR/src/" "rdcp://$S:$port/m/dst/"
		check "$mode, a push as nobody: exit 23, nothing deleted in the whole run" \
			eval '[ "$RC" -eq 23 ] && [ -f "$UR/mod/dst/sub/deep/extra4" ] &&
			[ -f "$UR/mod/dst/sub/deep0/extra5" ] &&
			[ -f "$UR/mod/dst/extra1" ] && [ -f "$UR/mod/dst/sub/extra2" ] &&
			[ "$(ls "$UR"/mod/dst/sub/d*/extra | wc -l)" -eq 300 ]'
	done
	if over_rdma; then
		sed 's/^/    ur| /' /tmp/ur.log | grep 'over \|via '
		check "  its push and pull ran over RDMA" eval 'grep -q "push into module m over rdma" /tmp/ur.log &&
			grep -q "pull from module m over rdma" /tmp/ur.log'
	fi
	check "  the daemon started by nobody is alive" daemon_alive ur
	stop_daemon ur
	chmod -R u+rwx "$UR/src" "$UR/mod/src"
}
# run_as_nobody ARGS...: run, with rdcp as nobody
run_as_nobody() {
	as_nobody "$RDCP" "$@" >/tmp/out 2>&1
	RC=$?
	sed 's/^/    | /' /tmp/out
}
