# shellcheck shell=bash
# The scp experience, seen from a user's terminal: the progress meter under
# a pseudo-terminal shows a rate and reaches 100 %, --json parses and its
# byte counts match the files, -q is quiet, names with control characters
# are printed escaped, -v shows device, GID and the chunk plan; listings
# (HOST::, HOST::MODULE/DIR/, --list-only) against an rsync daemon where
# rsync is installed, anonymous and as a user, hidden and write-only
# modules, paths that leave the module, an older server.
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
# --- listings (issue 30 item 4): rdcp HOST::, rdcp HOST::MODULE/DIR/, --list-only ---
LP=18741
mkdir -p /tmp/lpub/dir/sub /tmp/lpub/sticky /tmp/lteam /tmp/lwo /tmp/lhid /tmp/ldeny /tmp/lfar \
	/tmp/outside
echo hello >/tmp/lpub/a.txt
: >/tmp/lpub/empty
head -c 1234567 /dev/zero >/tmp/lpub/big
echo x >/tmp/lpub/dir/f
ln -s a.txt /tmp/lpub/lnk
chmod 1777 /tmp/lpub/sticky
echo "not for you" >/tmp/outside/secret
ln -s /tmp/outside /tmp/lpub/esc
echo partial >/tmp/lpub/.rdcp-partial.keep
echo team >/tmp/lteam/t.txt
echo "write-only data" >/tmp/lwo/wo-secret
touch -d '2026-01-02 03:04:05' /tmp/lpub/a.txt
printf 'alice:alice-secret\n' >/tmp/lsecrets
printf 'alice-secret\n' >/tmp/alice.pw
chmod 600 /tmp/lsecrets /tmp/alice.pw
cat >/tmp/list.conf <<EOF
port = $LP
secrets file = /tmp/lsecrets
host key = /tmp/lhost.key
[pub]
    path = /tmp/lpub
    comment = public files
    read only = yes
    auth = none
[team]
    path = /tmp/lteam
    comment = the team's
    auth users = alice:rw
[wo]
    path = /tmp/lwo
    write only = yes
    auth = none
[hid]
    path = /tmp/lhid
    list = no
    auth = none
[deny]
    path = /tmp/ldeny
    auth users = alice:deny, *:rw
[far]
    path = /tmp/lfar
    hosts allow = 10.99.0.0/16
    auth = none
EOF
start_daemon_auth lst --config /tmp/list.conf || exit 1
L="rdcp://$S:$LP"
AL="--password-file /tmp/alice.pw --known-hosts /tmp/lkh rdcp://alice@$S:$LP"
run "$L/"
check "HOST:: anonymous: exit 0" [ "$RC" -eq 0 ]
check "  lists pub with its comment, as rsync prints it" \
	grep -qxF "$(printf 'pub            \tpublic files')" /tmp/out
check "  and wo (write only: listed, as rsync lists it)" out_has "^wo "
check "  not team (needs a user), hid (list = no), far (hosts allow), deny" \
	not grep -qE "^(team|hid|far|deny) " /tmp/out
# shellcheck disable=SC2086 # AL holds options and the operand
run $AL/
check "HOST:: as alice: team with its comment" \
	grep -qxF "$(printf "team           \tthe team's")" /tmp/out
check "  pub too; not hid, far, nor deny (auth users denies alice)" \
	eval 'out_has "^pub " && ! grep -qE "^(hid|far|deny) " /tmp/out'
"$RDCP" "$L/pub/" >/tmp/l.out 2>/tmp/l.err
RC=$?
sed 's/^/    | /' /tmp/l.out /tmp/l.err
check "HOST::pub/ lists its entries: exit 0, nothing on stderr" [ "$RC.$(wc -c </tmp/l.err)" = 0.0 ]
check "  rsync's line: mode, size with commas in 14 columns, mtime, name" \
	grep -qxF -- "-rw-r--r--      1,234,567 $(date -r /tmp/lpub/big '+%Y/%m/%d %H:%M:%S') big" /tmp/l.out
check "  the directory itself as '.'" grep -qE '^drwxr-xr-x +[0-9,]+ [0-9/]{10} [0-9:]{8} \.$' /tmp/l.out
check "  a.txt's mtime in local time" grep -q " 2026/01/02 03:04:05 a.txt$" /tmp/l.out
check "  the sticky bit as rsync shows it" grep -q "^drwxrwxrwt .* sticky$" /tmp/l.out
check "  a symlink with its target" grep -q "^lrwxrwxrwx  *5 .* lnk -> a.txt$" /tmp/l.out
check "  one level: dir, not dir/f" eval 'grep -q " dir$" /tmp/l.out && ! grep -q "dir/f" /tmp/l.out'
check "  reserved names never listed" not grep -q "rdcp-partial" /tmp/l.out
run --list-only -r "$L/pub/dir"
check "--list-only -r HOST::pub/dir: the dir and its tree" \
	eval 'out_has " dir$" && out_has " dir/f$" && out_has " dir/sub$"'
if command -v rsync >/dev/null; then
	# rsync is the oracle: the same tree through an rsync daemon, the lines
	# compared sorted (rsync sorts its list, rdcp prints in the walk's order);
	# rsync -l because rdcp always keeps symlinks (and shows their targets)
	cat >/tmp/lrsyncd.conf <<EOF
use chroot = no
pid file = /tmp/lrsyncd.pid
port = 18742
[pub]
path = /tmp/lpub
comment = public files
exclude = .rdcp-partial.*
EOF
	rsync --daemon --config=/tmp/lrsyncd.conf
	# ready when it answers (its pid file comes before it listens)
	for _ in $(seq 50); do rsync rsync://127.0.0.1:18742/ >/dev/null 2>&1 && break; nap 0.1; done
	for form in pub/ pub pub/dir pub/dir/ -r:pub/ -r:pub/dir; do
		opt=
		case $form in -r:*) opt=-r form=${form#-r:} ;; esac
		# shellcheck disable=SC2086 # opt is one option or nothing
		rsync -l $opt "rsync://127.0.0.1:18742/$form" 2>&1 | LC_ALL=C sort >/tmp/l.rs
		# shellcheck disable=SC2086
		"$RDCP" $opt --list-only "$L/$form" 2>&1 | LC_ALL=C sort >/tmp/l.rd
		check "the same lines as rsync -l ${opt:+$opt }HOST::$form ($(wc -l </tmp/l.rd))" \
			cmp -s /tmp/l.rs /tmp/l.rd
		cmp -s /tmp/l.rs /tmp/l.rd || diff /tmp/l.rs /tmp/l.rd | sed 's/^/    | /'
	done
	# rsync's filters hide entries from a listing as from a pull
	rsync -l -r --exclude=dir "rsync://127.0.0.1:18742/pub/" 2>&1 | LC_ALL=C sort >/tmp/l.rs
	"$RDCP" -r --exclude=dir --list-only "$L/pub/" 2>&1 | LC_ALL=C sort >/tmp/l.rd
	check "--exclude=dir: the same lines as rsync's, dir and its tree left out ($(wc -l </tmp/l.rd))" \
		eval 'cmp -s /tmp/l.rs /tmp/l.rd && ! grep -q " dir\(/\|$\)" /tmp/l.rd'
	cmp -s /tmp/l.rs /tmp/l.rd || diff /tmp/l.rs /tmp/l.rd | sed 's/^/    | /'
	rsync rsync://127.0.0.1:18742/ >/tmp/l.rs 2>&1
	"$RDCP" "$L/" 2>&1 | grep "^pub " >/tmp/l.rd
	check "the module line as rsync's" cmp -s /tmp/l.rs /tmp/l.rd
	kill "$(cat /tmp/lrsyncd.pid)"
fi
run "$L/hid/"
check "a hidden module is listed by name (list = no hides only its name)" \
	eval '[ "$RC" -eq 0 ] && out_has " \.$"'
run "$L/team/"
check "team anonymously: refused (exit 5), needs a user, nothing listed" \
	eval '[ "$RC" -eq 5 ] && out_has "requires authentication" && ! out_has t.txt'
# shellcheck disable=SC2086
run $AL/team/
check "  as alice: listed" eval '[ "$RC" -eq 0 ] && out_has " t.txt$"'
run "$L/wo/"
check "a write-only module lists nothing: refused (exit 5)" \
	eval '[ "$RC" -eq 5 ] && out_has "write-only" && ! out_has wo-secret'
run "$L/pub/esc/"
check "a symlink out of the module: refused, nothing of it shown" \
	eval '[ "$RC" -ne 0 ] && out_has "symlink" && ! out_has secret'
run "$L/pub/../"
check "'..': refused (exit 1)" eval '[ "$RC" -eq 1 ] && out_has "is not allowed"'
run "$L/pub/.rdcp-partial.keep"
check "a reserved name: refused" eval '[ "$RC" -ne 0 ] && out_has "rdcp partial or temporary"'
run --list-only /tmp/lpub/
check "--list-only of a local path: exit 1, says what lists" \
	eval '[ "$RC" -eq 1 ] && out_has "rdcp lists what a daemon serves"'
# An older server: the client names the server and the versions. The
# version listings need is read from rdcp's own message (one constant,
# RD_PROTO_LIST, in the code), then a server one below it is tried.
RDCP_TEST_PROTO_MAX=2 start_daemon lold2 --port 18743 --module pub=/tmp/lpub || exit 1
run "rdcp://$S:18743/"
need=$(grep -o 'that needs protocol [0-9]*' /tmp/out | grep -o '[0-9]*$')
check "a server of protocol 2: HOST:: refused, naming the server and the versions" \
	eval '[ "$RC" -ne 0 ] && out_has "$S:18743 speaks protocol 2, which cannot list its modules" && [ -n "$need" ]'
kill "$(cat /tmp/lold2.pid)"
RDCP_TEST_PROTO_MAX=$((${need:-3} - 1)) start_daemon lold --port 18744 --module pub=/tmp/lpub ||
	exit 1
run "rdcp://$S:18744/pub/"
check "a server of protocol $((${need:-3} - 1)) (one before listings): HOST::pub/ refused" \
	eval '[ "$RC" -ne 0 ] && out_has "speaks protocol $((${need:-3} - 1)), which cannot list files"'
kill "$(cat /tmp/lold.pid)" "$(cat /tmp/lst.pid)"
finish
