# shellcheck shell=bash
# The scp experience, seen from a user's terminal: the progress meter under
# a pseudo-terminal shows a rate and reaches 100 %, --json parses and its
# byte counts match the files, -q is quiet, names with control characters
# are printed escaped, -v shows device, GID and the chunk plan.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$RIG_SELF_IP

mkdir -p /tmp/mod /tmp/src
start_daemon d --module m=/tmp/mod --module ro=/tmp/src,ro || exit 1
# big enough that the meter draws a few times after TLS start-up (TCP on the
# host is quicker)
if over_rdma; then BIG=96; else BIG=400; fi
head -c $((BIG << 20)) /dev/urandom >/tmp/src/big
head -c 1000 /dev/urandom >/tmp/src/small
: >/tmp/src/empty

# --- progress meter under a pseudo-terminal ---
script -q -c "$RDCP /tmp/src/big $S::m/p1" /tmp/typescript >/dev/null 2>&1
tr '\r' '\n' </tmp/typescript >/tmp/lines
sed 's/^/    | /' /tmp/lines | tail -6
# The meter draws once a second after start: judged only when the copy
# outlasts its first ticks (a quicker one shows nothing, by design).
psecs=$(grep -o ' in [0-9.]* s' /tmp/lines | grep -o '[0-9.]*' | head -1)
if awk "BEGIN { exit !(${psecs:-0} >= 2.5) }"; then
	check "progress: shows a rate" grep -qE 'big +[0-9]+% .*[0-9.]+ [KMG]?i?B/s' /tmp/lines
	check "progress: reaches 100 %" grep -qE 'big +100% ' /tmp/lines
else
	echo "    (the copy took ${psecs:-?} s, less than the meter's first ticks: not judged)"
fi
check "progress: final summary line" grep -q 'entries, .* checksum gmac' /tmp/lines
run --progress /tmp/src/big "$S::m/p2"
# The meter draws once a second after start; a copy quicker than that shows
# nothing by design (lib/progress: stopped before the first tick).
secs=$(grep -o ' in [0-9.]* s' /tmp/out | grep -o '[0-9.]*' | head -1)
if awk "BEGIN { exit !(${secs:-0} >= 2.5) }"; then
	check "--progress forces the meter when not a terminal" out_has "big.*100%"
else
	echo "    (the copy took ${secs:-?} s, less than the meter's first ticks: not judged)"
fi
run /tmp/src/small "$S::m/p3"
check "no meter when not a terminal" sh -c '! grep -q "100%" /tmp/out'
"$RDCP" -q /tmp/src/small "$S::m/p4" >/tmp/q.out 2>&1
check "-q prints nothing on success" [ ! -s /tmp/q.out ]

# --- --json ---
"$RDCP" -r --json /tmp/src "$S::m/j" >/tmp/j.out 2>/tmp/j.err
RC=$?
cat /tmp/j.out
check "--json: exit 0" [ "$RC" -eq 0 ]
want=$(( $(stat -c %s /tmp/src/big) + $(stat -c %s /tmp/src/small) ))
check "--json parses, byte counts match the files" python3 -c '
import json, sys
d = json.load(open("/tmp/j.out"))
assert d["bytes"] == int(sys.argv[1]), (d["bytes"], sys.argv[1])
assert d["bytes_moved"] == int(sys.argv[1]), d
# each entry once, by type: 3 files and the directory (not twice)
assert d["files"] == 3 and d["dirs"] == 1 and d["entries"] == 4, d
assert d["failed"] == 0 and d["exit_status"] == 0, d
assert d["checksum"] == "gmac" and d["seconds"] > 0, d
' "$want"
"$RDCP" --json /tmp/src/small /tmp/src/missing "$S::m/j2/" >/tmp/j.out 2>/dev/null
RC=$?
check "--json with a failure: exit 23" [ "$RC" -eq 23 ]
check "--json lists the failed file" python3 -c '
import json
d = json.load(open("/tmp/j.out"))
assert d["exit_status"] == 23 and d["failed"] == 1, d
assert d["errors"][0]["path"] == "/tmp/src/missing", d
'

# --- rsync's words, numbers and lists (issue 28), over this transport ---
mkdir -p /tmp/mod/r28
run -avh --partial --checksum /tmp/src/small /tmp/src/empty "$S::m/r28/"
check "-avh --partial --checksum: copies, the operands intact (exit 0)" \
	eval '[ "$RC" -eq 0 ] && [ -e /tmp/mod/r28/small ] && [ -e /tmp/mod/r28/empty ]'
check "  -v lists the files, once each" \
	eval '[ "$(grep -c "^small$" /tmp/out)" -eq 1 ] && [ "$(grep -c "^empty$" /tmp/out)" -eq 1 ]'
run -i /tmp/src/small "$S::m/r28/"
check "-i: nothing changed, nothing listed" not out_has "small"
touch -d 2020-01-01 /tmp/src/small
run -i /tmp/src/small "$S::m/r28/"
check "-i: rsync's line for a new mtime" out_has "^<f\.\.t\.\.\.\.\.\. small$"
run /tmp/src/small "$S::nope/"
check "unknown module: exit 3" [ "$RC" -eq 3 ]
run /tmp/src/small "$S::ro/"
check "read-only module: exit 5" [ "$RC" -eq 5 ]
run /tmp/src/missing "$S::m/r28/"
check "the only source missing: exit 3" [ "$RC" -eq 3 ]
"$RDCP" -r --json -vv -i --stats /tmp/src "$S::m/r28/" >/tmp/j.out 2>/tmp/j.err
check "--json -vv -i --stats: stdout parses as one object" python3 -c '
import json
d = json.load(open("/tmp/j.out"))
assert d["exit_status"] == 0 and d["dirs"] == 1, d
'

# --- escaping of names ---
evil=$(printf '/tmp/src/clear\033[2J\033[Hname')
run "$evil" "$S::m/"
check "a control character in a name is printed escaped" out_has 'clear\\x1b\[2J\\x1b\[Hname'
check "  and never raw" sh -c '! grep -q "$(printf "\033")" /tmp/out'

# --- rdcpd started by hand on a terminal, without --foreground ---
script -q -c "timeout 3 $RDCPD --no-auth --module t=/tmp/mod --port 0 --ready-file /tmp/tty.ready" \
	/tmp/tty.script >/dev/null 2>&1
check "rdcpd on a terminal says in one line where it logs" \
	grep -q 'rdcpd: running; it logs to syslog .*--foreground logs here' /tmp/tty.script
"$RDCPD" --no-auth --module t=/tmp/mod --port 0 --ready-file /tmp/tty2.ready 2>/tmp/tty2.err &
tpid=$!
wait_for /tmp/tty2.ready 20
kill "$tpid" 2>/dev/null
wait "$tpid" 2>/dev/null
check "  not when stderr is not a terminal" not grep -q 'it logs to syslog' /tmp/tty2.err

# --- -v ---
run -v /tmp/src/small "$S::m/v"
if over_rdma; then
	check "-v names the device, port and link" out_has "via rxe0 port 1 (RoCE)"
	check "-v shows the GID" out_has "GID ::ffff:$S"
fi
check "-v shows the chunk plan" out_has "plan: chunks of 4096 KiB, checksum the server's choice"
if ! over_rdma; then
	check "-v says TCP" out_has "connected to $S:[0-9]* over TCP"
	check "auto says it uses TCP, in one line" out_has "no RDMA route to $S (no RDMA device here); using TCP"
	run -q /tmp/src/small "$S::m/v2"
	check "  not with -q" [ ! -s /tmp/out ]
	"$RDCP" /tmp/src/small "$S::m/v2b" 2>/tmp/err >/dev/null
	check "  nor by default on a host without RDMA: exit 0, stderr empty" \
		[ "$?.$(wc -c </tmp/err)" = 0.0 ]
	run --transport rdma /tmp/src/small "$S::m/v3"
	check "--transport rdma without RDMA: exit 50" [ "$RC" -eq 50 ]
	run --list-devices "$S"
	check "--list-devices HOST says tcp" out_has "transport to $S: tcp"
fi
# --- operands and the ends' versions ---
run /tmp/src/small hostx:/tmp/a hosty:/tmp/b
check "two remote operands: exit 1" [ "$RC" -eq 1 ]
check "  with a clear error" out_has "between two remote operands is not supported"
cat >/tmp/fake-new-ssh <<'FAKE'
#!/bin/sh
# stands in for ssh: a remote rdcp that only speaks protocol 99 (ours end far below)
echo "RDCP-READY 99 99 4000 00112233445566778899aabbccddeeff 10.77.1.1"
sleep 1
FAKE
chmod +x /tmp/fake-new-ssh
run -e /tmp/fake-new-ssh /tmp/src/small somehost:/tmp/x
check "remote rdcp of another protocol version: exit 2" [ "$RC" -eq 2 ]
check "  says so plainly" out_has "protocol version mismatch: the remote rdcp speaks 99..99"
mkdir -p /tmp/dir:with:colons
echo colon >/tmp/dir:with:colons/f
run /tmp/dir:with:colons/f "$S::m/colon"
check "a ':' after a '/' is a local path" [ "$RC" -eq 0 ]
finish
