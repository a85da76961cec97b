# shellcheck shell=bash
# A daemon operators can watch (issue 31), one boot: rdcpd with two users
# and two modules runs under a private systemd-journald (started here, so
# sd_journal_send really reaches a journal), with its stderr on a journal
# stream and JOURNAL_STREAM naming it, as systemd starts a service.
#  - transfer log: pushes and pulls by alice and bob into m1 (its own log
#    file) and m2 (the journal): one line per file in the module's format,
#    with the right user, module, size and operation;
#  - journal: MESSAGE_ID and RDCP_* fields of the transfer lines, session
#    ends, and a wrong-password attempt found by its MESSAGE_ID;
#  - metrics: a scrape during a copy (the client holds it with SIGSTOP) and
#    after, parsed with prometheus_client, counters exactly the bytes and
#    files moved;
#  - rdcpd --status (text and JSON) lists the session in progress with its
#    rate, and refuses a user that is not root (by the socket's mode, and by
#    SO_PEERCRED when the mode would let it in); a member of the status
#    group may ask;
#  - partials older than the limit are removed at start; younger ones and
#    files that are not rdcp's stay;
#  - rdcp --json phases and -vv timings.
# On a host (E2E_TRANSPORT=tcp, //tests/e2e:ops_tcp_host_test) also: the
# transfer log against a real rsyncd's for the same escapes, and scrapers
# that never read do not slow a copy.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
# rdcp pins a daemon's key for password logins in ~/.rdcp/known_hosts: this run's own
export HOME=/tmp/home-${RIG_ROLE:-a}
mkdir -p "$HOME"
OP=18740      # rdcpd
MP=9818       # its metrics
BIG_MB=${OPS_BIG_MB:-256}
# Debian's python3, where python3-prometheus-client is (not a pyenv's first in PATH)
PY=/usr/bin/python3
XFER_ID=24dcd48ac9d74ef1b45a98a759e5ceab
END_ID=afe85605b0334dc2adfcc8944dd6d3f1
AUTH_ID=e97d1205c8624f00ab4486d92e37913a
START_ID=c6dae009e8704051945d8b7bfaadab19

# A private journald: its sockets and files on tmpfs, nothing of the host's.
start_journald() {
	local d
	for d in /run/systemd /run/log /var/log/journal; do
		mkdir -p "$d" 2>/dev/null
		mount -t tmpfs -o mode=0755 tmpfs "$d" || return 1
	done
	# journald wants a cgroup file system (the rig's guests have none mounted)
	if ! mountpoint -q /sys/fs/cgroup; then
		mount -t cgroup2 cgroup2 /sys/fs/cgroup || return 1
	fi
	SYSTEMD_LOG_TARGET=console /lib/systemd/systemd-journald >/tmp/journald.out 2>&1 &
	echo $! >/tmp/journald.pid
	wait_for /run/systemd/journal/stdout 20
}

# journal ARGS...: journalctl over the private journal, quietly.
journal() { journalctl --no-pager -q "$@" 2>/dev/null; }

# A partial pair of rdcp's format (rd_sink_partial.h) for NAME in DIR, aged DAYS.
make_partial() {
	"$PY" - "$1" "$2" "$3" <<-'EOF'
		import os, struct, sys, time
		d, name, days = sys.argv[1], sys.argv[2], float(sys.argv[3])
		size, chunk = 3 * 65536, 65536
		n = (size + chunk - 1) // chunk
		rec = b"RDCPPRT1" + struct.pack(">QqII", size, 1700000000, 0, chunk)
		rec += b"sha256".ljust(32, b"\0") + struct.pack(">Q", n) + bytes([1])
		h = 0xcbf29ce484222325
		for b in rec:
		    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
		rec += struct.pack(">Q", h)
		data = os.path.join(d, ".rdcp-partial." + name)
		with open(data, "wb") as f:
		    f.truncate(size)
		with open(data + ".rec", "wb") as f:
		    f.write(rec)
		t = time.time() - days * 86400
		for p in (data, data + ".rec"):
		    os.utime(p, (t, t))
	EOF
}

server_partials() {
	mkdir -p /tmp/m1/sub/.parts /tmp/outside
	make_partial /tmp/m1 old 8 &&
		make_partial /tmp/m1/sub/.parts inpd 30 &&
		make_partial /tmp/m1 young 6 &&
		make_partial /tmp/outside victim 30 || return 1
	# rdcp's names, not rdcp's files: a forged record, a lone data file
	head -c 100 /dev/zero >/tmp/m1/.rdcp-partial.forged
	cp /tmp/m1/.rdcp-partial.forged /tmp/m1/.rdcp-partial.forged.rec
	head -c 100 /dev/zero >/tmp/m1/.rdcp-partial.lonely
	touch -d '30 days ago' /tmp/m1/.rdcp-partial.forged /tmp/m1/.rdcp-partial.forged.rec \
		/tmp/m1/.rdcp-partial.lonely
	# behind symbolic links: never followed
	ln -s /tmp/outside /tmp/m1/linkdir
	ln -s /tmp/outside/.rdcp-partial.victim.rec /tmp/m1/.rdcp-partial.sym.rec
	ln -s /tmp/outside/.rdcp-partial.victim /tmp/m1/.rdcp-partial.sym
}

server() {
	local ip=$RIG_SELF_IP
	mkdir -p /tmp/m1 /tmp/m2 /tmp/st
	chmod 755 /tmp/st
	printf 'alice:alice-pw\nbob:bob-pw\n' >/tmp/secrets
	chmod 600 /tmp/secrets
	server_partials || return 1
	cat >/tmp/ops.conf <<-EOF
		port = $OP
		secrets file = /tmp/secrets
		host key = /tmp/rdcpd-host.key
		idle timeout = 60
		transfer logging = yes
		log format = %o %u %f %l
		metrics listen = $ip:$MP
		metrics hosts allow = $(echo "$RIG_PEER_IP $RIG_SELF_IP" | tr ' ' '\n' | sort -u | tr '\n' ' ')
		status socket = /tmp/st/status.sock
		status group = adm
		[m1]
		    path = /tmp/m1
		    uid = root
		    auth users = alice:rw, bob:rw
		    log file = /tmp/m1.log
		    log format = %o|%m|%u|%a|%f|%l|%b
		[m2]
		    path = /tmp/m2
		    uid = root
		    auth users = alice:rw, bob:rw
	EOF
	chmod 644 /tmp/ops.conf
	start_journald || { cat /tmp/journald.out; return 1; }
	check "the private journald is up" [ -S /run/systemd/journal/socket ]
	# as systemd starts a service: stderr on a journal stream, JOURNAL_STREAM naming it
	rm -f /tmp/ops.ready
	# shellcheck disable=SC2016 # expanded by the inner shell
	systemd-cat -t rdcpd-stderr bash -c \
		'export JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2); exec "$@"' rdcpd \
		"$RDCPD" --foreground --config /tmp/ops.conf --ready-file /tmp/ops.ready &
	echo $! >/tmp/ops.pid
	wait_for /tmp/ops.ready 30 || { journal -o cat | tail -30; return 1; }
	# the sweep at start
	local i=0
	until grep -q "partials: module m1: removed" /tmp/m1.log 2>/dev/null || [ $i -gt 100 ]; do
		nap 0.1
		i=$((i + 1))
	done
	wait_for /tmp/m1.log 10
	nap 0.5
	partial_checks
	touch "$RIG_SHARED/server-ready"
}

partial_checks() {
	check "partials: the old pair at the module's top is removed" \
		bash -c '[ ! -e /tmp/m1/.rdcp-partial.old ] && [ ! -e /tmp/m1/.rdcp-partial.old.rec ]'
	check "  and the old pair in a partial directory below" \
		bash -c '[ ! -e /tmp/m1/sub/.parts/.rdcp-partial.inpd.rec ]'
	check "  the younger one stays" \
		bash -c '[ -e /tmp/m1/.rdcp-partial.young ] && [ -e /tmp/m1/.rdcp-partial.young.rec ]'
	check "  a forged record and a lone data file stay" \
		bash -c '[ -e /tmp/m1/.rdcp-partial.forged.rec ] && [ -e /tmp/m1/.rdcp-partial.lonely ]'
	check "  nothing behind a symbolic link is touched" \
		bash -c '[ -e /tmp/outside/.rdcp-partial.victim.rec ] && [ -e /tmp/outside/.rdcp-partial.victim ] &&
			[ -L /tmp/m1/.rdcp-partial.sym.rec ] && [ -L /tmp/m1/linkdir ]'
	check "  each removal is logged (the module's log file)" \
		bash -c 'grep -q "partials: module m1: removed .rdcp-partial.old (196608 bytes, untouched for 8 days" /tmp/m1.log &&
			grep -q "removed sub/.parts/.rdcp-partial.inpd " /tmp/m1.log'
	check "  and the sweep's summary (the journal)" \
		bash -c 'journalctl --no-pager -q -o cat SYSLOG_IDENTIFIER=rdcpd |
			grep -q "partials: module m1: removed 2 (393216 bytes); kept 1 younger than 604800 s, 0 in use, 1 not rdcp.s"'
}

# scrape HOST: GET /metrics with bash alone (no fork but cat), the body on stdout.
scrape() {
	local fd
	exec {fd}<>"/dev/tcp/$1/$MP" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n' >&"$fd"
	sed '1,/^\r$/d' <&"$fd"
	exec {fd}<&-
}

# The scrape in FILE parses with prometheus_client; checks given as NAME{LABELS}=VALUE
# (or NAME{LABELS}>VALUE) all hold.
metrics_hold() {
	"$PY" - "$@" <<-'EOF'
		import re, sys
		from prometheus_client.parser import text_string_to_metric_families
		text = open(sys.argv[1]).read()
		got = {}
		for fam in text_string_to_metric_families(text):
		    for s in fam.samples:
		        key = s.name + "{" + ",".join("%s=%s" % kv for kv in sorted(s.labels.items())) + "}"
		        got[key] = s.value
		ok = True
		for want in sys.argv[2:]:
		    m = re.match(r"(.*\})(=|>|<)(\d+(?:\.\d+)?)$", want)
		    key, op, v = m.group(1), m.group(2), float(m.group(3))
		    g = got.get(key)
		    good = g is not None and ((op == "=" and g == v) or (op == ">" and g > v) or (op == "<" and g < v))
		    if not good:
		        print("    metrics: want %s, got %s" % (want, g))
		        ok = False
		sys.exit(0 if ok else 1)
	EOF
}

# While the client holds its big push (SIGSTOP): status, metrics during the copy.
server_during() {
	local out
	"$RDCPD" --status --config /tmp/ops.conf >/tmp/status.txt 2>&1
	sed 's/^/    status| /' /tmp/status.txt
	check "rdcpd --status lists the session in progress: alice, m2, push, its bytes, a rate" \
		grep -Eq "alice +m2 +push +(rdma|tcp) +[1-9][0-9]* +[0-9.]+ [KMGT]?B/s" /tmp/status.txt
	check "  and the budget in use and the listeners" \
		bash -c 'grep -q "^memory: 1 session may pin" /tmp/status.txt && grep -q "^listening on port '$OP'" /tmp/status.txt'
	"$RDCPD" --status --json --config /tmp/ops.conf >/tmp/status.json 2>&1
	check "  --json: one object, the session with its rate" "$PY" -c '
import json, sys
d = json.load(open("/tmp/status.json"))
s = [x for x in d["sessions"] if x["user"] == "alice" and x["module"] == "m2"]
sys.exit(0 if len(s) == 1 and s[0]["direction"] == "push" and s[0]["bytes"] > 0 and
         s[0]["rate_bytes_per_sec"] > 0 and d["port"] == '$OP' and d["memory"]["budget_bytes"] > 0 else 1)'
	setpriv --reuid=65534 --regid=65534 --clear-groups "$RDCPD" --status --config /tmp/ops.conf \
		>/tmp/status.nobody 2>&1
	out=$?
	check "  refused to a user that is not root (exit 1, permission denied)" \
		bash -c '[ '$out' -eq 1 ] && grep -q "permission denied" /tmp/status.nobody'
	setpriv --reuid=65534 --regid=65534 --groups="$(getent group adm | cut -d: -f3)" \
		"$RDCPD" --status --config /tmp/ops.conf >/tmp/status.adm 2>&1
	check "  a member of the status group may ask" grep -q "alice" /tmp/status.adm
	# the socket's mode would let anyone in: the daemon's own check still says no
	chmod 666 /tmp/st/status.sock
	setpriv --reuid=65534 --regid=65534 --clear-groups "$RDCPD" --status --config /tmp/ops.conf \
		>/tmp/status.nobody2 2>&1
	out=$?
	chmod 660 /tmp/st/status.sock
	sed 's/^/    nobody| /' /tmp/status.nobody2
	check "  SO_PEERCRED refuses uid 65534 even through a 0666 socket" \
		bash -c '[ '$out' -eq 1 ] && grep -q "rdcpd at /tmp/st/status.sock: permission denied: uid 65534" /tmp/status.nobody2'
	scrape "$RIG_SELF_IP" >/tmp/during.prom
	check "a scrape during the copy parses, one session in progress, bytes moving" \
		metrics_hold /tmp/during.prom 'rdcpd_sessions{transport='"$(over_rdma && echo rdma || echo tcp)"'}=1' \
		"rdcpd_bytes_received_total{module=m2}>$(cat "$RIG_SHARED/t2.bytes")" \
		'rdcpd_registered_bytes{}>0' 'rdcpd_build_info{version='"$("$RDCPD" --version | cut -d' ' -f2)"'}=1'
}

server_after() {
	local e="$RIG_SHARED/expect" peer
	# shellcheck disable=SC1090
	. "$e"
	peer=$RIG_PEER_IP
	scrape "$RIG_SELF_IP" >/tmp/after.prom
	check "a scrape after the copies: the counters are exactly what moved" \
		metrics_hold /tmp/after.prom \
		"rdcpd_bytes_received_total{module=m1}=$M1_RX" "rdcpd_bytes_sent_total{module=m1}=$M1_TX" \
		"rdcpd_bytes_received_total{module=m2}=$M2_RX" "rdcpd_bytes_sent_total{module=m2}=$M2_TX" \
		"rdcpd_files_total{direction=received,module=m1}=$M1_FRX" \
		"rdcpd_files_total{direction=sent,module=m1}=$M1_FTX" \
		"rdcpd_files_total{direction=received,module=m2}=$M2_FRX" \
		"rdcpd_files_total{direction=sent,module=m2}=$M2_FTX" \
		'rdcpd_sessions_total{result=ok}=5' 'rdcpd_sessions_total{result=refused}=1' \
		'rdcpd_auth_failures_total{}=1' 'rdcpd_sessions{transport=rdma}=0' \
		'rdcpd_sessions{transport=tcp}=0' 'rdcpd_transfer_seconds_count{}=5' \
		'rdcpd_chunks_resent_total{}=0' 'rdcpd_registered_bytes{}=0'
	check "  with the transfer histogram's buckets" \
		grep -q '^rdcpd_transfer_seconds_bucket{le="+Inf"} 5$' /tmp/after.prom

	# m1: its own log file, "%o|%m|%u|%a|%f|%l|%b", one line per file
	sed -n 's/^[0-9/]* [0-9:]* \[[0-9]*\] \(recv|.*\|send|.*\)$/\1/p' /tmp/m1.log | sort >/tmp/m1.lines
	sort "$RIG_SHARED/m1.expect" >/tmp/m1.want
	check "m1's log file has one line per file moved: operation, module, user, address, path, size, bytes" \
		cmp /tmp/m1.want /tmp/m1.lines
	diff /tmp/m1.want /tmp/m1.lines | head -10
	check "  prefixed with the time and pid (rsync's log file)" \
		grep -Eq "^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9:]{8} \[$(cat /tmp/ops.pid 2>/dev/null || echo x)\] recv\|m1\|alice" /tmp/m1.log
	check "  the session lines of m1 are there too" \
		bash -c 'grep -q "session [0-9]*: user alice: push into module m1" /tmp/m1.log && grep -q "user bob: pull module m1: " /tmp/m1.log'

	# m2: the journal, with fields
	journal -o json MESSAGE_ID=$XFER_ID RDCP_MODULE=m2 >/tmp/m2.json
	"$PY" - "$RIG_SHARED/m2.expect" /tmp/m2.json "$peer" <<-'EOF' >/tmp/m2.check 2>&1
		import json, sys
		want = sorted(l.rstrip("\n") for l in open(sys.argv[1]))
		got, msgs = [], []
		for line in open(sys.argv[2]):
		    e = json.loads(line)
		    got.append("%s %s %s %s" % (e["RDCP_OPERATION"], e["RDCP_USER"], e["RDCP_FILE"], e["RDCP_BYTES"]))
		    msgs.append(e["MESSAGE"])
		    assert e["RDCP_PEER"].find(sys.argv[3]) >= 0, e["RDCP_PEER"]
		    assert e["RDCP_TRANSPORT"] in ("rdma", "tcp"), e
		    assert int(e["RDCP_SESSION"]) > 0
		got.sort()
		if got != want:
		    print("want", want, "\ngot", got)
		    sys.exit(1)
		# the line itself is the module's format, "%o %u %f %l"
		if sorted(msgs) != want:
		    print("messages", sorted(msgs))
		    sys.exit(1)
		print("ok", len(got))
	EOF
	check "the journal has m2's transfer lines: MESSAGE_ID, RDCP_OPERATION/USER/FILE/BYTES/PEER/..." \
		grep -q "^ok" /tmp/m2.check
	sed 's/^/    | /' /tmp/m2.check
	journal -o json MESSAGE_ID=$END_ID RDCP_MODULE=m2 RDCP_USER=bob RDCP_RESULT=ok >/tmp/m2end.json
	check "  a session end: RDCP_BYTES and RDCP_FILES of bob's push into m2, RDCP_SECONDS" "$PY" -c '
import json, sys
ends = [json.loads(l) for l in open("/tmp/m2end.json")]
push = [e for e in ends if " push module m2: " in e["MESSAGE"]]
sys.exit(0 if len(push) == 1 and push[0]["RDCP_BYTES"] == "'"$T2_BYTES"'" and
         push[0]["RDCP_FILES"] == "'"$T2_FILES"'" and float(push[0]["RDCP_SECONDS"]) >= 0 else 1)'
	check "  session starts by module and user: journalctl RDCP_MODULE=m2 RDCP_USER=alice" \
		bash -c "[ \$(journalctl --no-pager -q -o cat MESSAGE_ID=$START_ID RDCP_MODULE=m2 RDCP_USER=alice | wc -l) -eq 2 ]"
	journal -o verbose MESSAGE_ID=$AUTH_ID >/tmp/auth.txt
	check "journalctl MESSAGE_ID=<auth failure> finds the wrong-password attempt, with its peer" \
		bash -c 'grep -q "RDCP_PEER=.*'"$peer"'" /tmp/auth.txt && grep -q "MESSAGE=.*wrong secret or unknown user alice" /tmp/auth.txt'
	check "daemon alive" kill -0 "$(cat /tmp/ops.pid)"
}

# ---- on a host only: rsyncd as the oracle of the format, scrapers that never read ----

ORACLE_FMT="%o|%m|%u|%a|%f|%n|%l|%B|%U|%G|%M|%'l|%''l|%'''l|%-9l|%9l|%12n|%-12n|%P|%%"

oracle_tree() {
	rm -rf /tmp/osrc && mkdir -p /tmp/osrc/src/d/e
	printf 'hi\n' >/tmp/osrc/src/a
	head -c 1234567 /dev/urandom >/tmp/osrc/src/d/b
	: >/tmp/osrc/src/d/e/empty
	echo spaces >"/tmp/osrc/src/name with spaces"
	head -c 2000000 /dev/urandom >/tmp/osrc/src/d/e/mid
	chmod 4755 /tmp/osrc/src/a
	chmod 0640 /tmp/osrc/src/d/b
	ln -s a /tmp/osrc/src/link
	touch -d '2021-02-03 04:05:06' /tmp/osrc/src/a /tmp/osrc/src/d/b
}

# The transfer lines of a log file, without rsync's "%t [%p] " prefix.
log_lines() { sed -n 's/^[0-9/]* [0-9:]* \[[0-9]*\] \(recv|.*\)$/\1/p' "$1" | sort; }

rsync_oracle() {
	oracle_tree
	mkdir -p /tmp/oo/x
	cat >/tmp/rsyncd.conf <<-EOF
		port = 28874
		pid file = /tmp/rsyncd.pid
		use chroot = no
		uid = root
		gid = root
		[o]
		    path = /tmp/oo
		    read only = no
		    transfer logging = yes
		    log file = /tmp/rsyncd.log
		    log format = $ORACLE_FMT
	EOF
	rsync --daemon --config=/tmp/rsyncd.conf --address=127.0.0.1 || return 1
	local i=0
	until rsync rsync://127.0.0.1:28874/ >/dev/null 2>&1 || [ $i -gt 100 ]; do
		nap 0.1
		i=$((i + 1))
	done
	rsync -a /tmp/osrc/src rsync://127.0.0.1:28874/o/x/ || return 1
	kill "$(cat /tmp/rsyncd.pid)"
	rm -rf /tmp/oo/x/src
	cat >/tmp/or.conf <<-EOF
		port = 18741
		status socket =
		[o]
		    path = /tmp/oo
		    uid = root
		    auth = none
		    transfer logging = yes
		    log file = /tmp/rdcpd-o.log
		    log format = $ORACLE_FMT
	EOF
	start_daemon_auth oracle --config /tmp/or.conf || return 1
	"$RDCP" -q -r /tmp/osrc/src "rdcp://127.0.0.1:18741/o/x/" || return 1
	stop_daemon oracle
	log_lines /tmp/rsyncd.log >/tmp/rsync.lines
	log_lines /tmp/rdcpd-o.log >/tmp/rdcpd.lines
	sed 's/^/    rsyncd| /' /tmp/rsync.lines
	check "the transfer log against rsyncd's, the same format ($ORACLE_FMT): the same lines" \
		cmp /tmp/rsync.lines /tmp/rdcpd.lines
	diff /tmp/rsync.lines /tmp/rdcpd.lines | head -20
	check "  (five files; no line for the symbolic link or the directories)" \
		[ "$(wc -l </tmp/rdcpd.lines)" -eq 5 ]
}

# seconds since $1 (date +%s.%N)
since_s() { "$PY" -c "import sys; print('%.3f' % ($(date +%s.%N) - $1))"; }

# A copy's time with scrapers hanging on the metrics endpoint, against the same copy without.
slow_scrapers() {
	local t0 base with fds=() fd i
	rm -f /tmp/m2/huge.bin /tmp/huge.bin
	head -c $((128 << 20)) /dev/urandom >/tmp/slow.bin
	t0=$(date +%s.%N)
	"$RDCP" -q --password-file /tmp/alice.pw /tmp/slow.bin "rdcp://alice@127.0.0.1:$OP/m2/slow1.bin" || return 1
	base=$(since_s "$t0")
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		exec {fd}<>"/dev/tcp/127.0.0.1/$MP" || continue
		[ $((i % 2)) -eq 0 ] && printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' >&"$fd"
		fds+=("$fd")
	done
	t0=$(date +%s.%N)
	"$RDCP" -q --password-file /tmp/alice.pw /tmp/slow.bin "rdcp://alice@127.0.0.1:$OP/m2/slow2.bin" || return 1
	with=$(since_s "$t0")
	check "  a push to a new name logs that name (%f: m2's format is \"%o %u %f %l\")" \
		bash -c 'journalctl --no-pager -q -o cat MESSAGE_ID='$XFER_ID' | grep -qx "recv alice slow1.bin 134217728"'
	rm -f /tmp/slow.bin /tmp/m2/slow1.bin /tmp/m2/slow2.bin
	echo "    a 128 MiB push: ${base} s alone, ${with} s with ${#fds[@]} scrapers that never read"
	check "scrapers that never read do not slow a copy (within 3x + 1 s)" \
		"$PY" -c "import sys; sys.exit(0 if $with <= 3 * $base + 1 else 1)"
	check "  rdcpd --status still answers meanwhile" \
		bash -c '"$0" --status --config /tmp/ops.conf | grep -q "^sessions: 0"' "$RDCPD"
	nap 6
	check "  once they time out (5 s), a scrape is answered again" \
		bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$MP"'; printf "GET /metrics HTTP/1.0\r\n\r\n" >&3; grep -q "^rdcpd_sessions_total" <&3'
	for fd in "${fds[@]}"; do exec {fd}<&-; done
	check "metrics hosts allow: 127.0.0.2 (not listed) gets nothing, 127.0.0.1 its page" "$PY" -c '
import socket, sys
def ask(src):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", '"$MP"'))
    try:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        return s.recv(100)
    except OSError:
        return b""
no, yes = ask("127.0.0.2"), ask("127.0.0.1")
print("    127.0.0.2: %r, 127.0.0.1: %r" % (no[:20], yes[:20]))
sys.exit(0 if no == b"" and yes.startswith(b"HTTP/1.") and b" 200 " in yes else 1)'
}

# ---- the client ----

# sizes and counts of the regular files in DIR
tree_bytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
tree_files() { find "$1" -type f | wc -l; }

# expect OP USER MODULE-PREFIX DIR LOGPREFIX: one line per file of DIR for m1's format
m1_lines() {
	local op=$1 user=$2 dir=$3 f
	(cd "$(dirname "$dir")" && find "$(basename "$dir")" -type f -printf '%p\t%s\n') |
		while IFS=$'\t' read -r f s; do
			echo "$op|m1|$user|$RIG_SELF_IP|$f|$s|$s"
		done
}
m2_lines() {
	local op=$1 user=$2 dir=$3
	(cd "$(dirname "$dir")" && find "$(basename "$dir")" -type f -printf '%p\t%s\n') |
		while IFS=$'\t' read -r f s; do
			echo "$op $user $f $s"
		done
}

json_num() { grep -o "\"$1\": *[0-9.]*" /tmp/out | head -1 | grep -o '[0-9.]*$'; }

client() {
	local S=$1 U=rdcp://alice@$1:$OP B=rdcp://bob@$1:$OP pid i
	printf 'alice-pw\n' >/tmp/alice.pw
	printf 'bob-pw\n' >/tmp/bob.pw
	printf 'not-it\n' >/tmp/wrong.pw
	chmod 600 /tmp/*.pw
	mkdir -p /tmp/t1/sub /tmp/t2/deep/er /tmp/back
	head -c 1500000 /dev/urandom >/tmp/t1/one.bin
	head -c 70000 /dev/urandom >/tmp/t1/sub/two.bin
	: >/tmp/t1/sub/empty
	echo "a name with spaces" >"/tmp/t1/with space.txt"
	head -c 2500000 /dev/urandom >/tmp/t2/big2.bin
	for i in 1 2 3 4 5; do head -c $((i * 1000)) /dev/urandom >/tmp/t2/deep/er/f$i; done
	head -c $((BIG_MB << 20)) /dev/urandom >/tmp/huge.bin

	run -r --json --password-file /tmp/alice.pw /tmp/t1 "$U/m1/"
	check "alice pushes t1 into m1 (--json)" [ "$RC" -eq 0 ]
	check "  --json has the phases: connect, tls, open, data, walk (a push walks here), fsync null" \
		grep -Eq '"phases": \{"connect": [0-9.]+, "tls": [0-9.]+, "open": [0-9.]+, "data": [0-9.]+, "walk": [0-9.]+, "fsync": null, "close": [0-9.]+\}' /tmp/out
	run -r --password-file /tmp/bob.pw /tmp/t2 "$B/m2/"
	check "bob pushes t2 into m2" [ "$RC" -eq 0 ]
	run -r -vv --password-file /tmp/bob.pw "$B/m1/t1" /tmp/back/
	check "bob pulls t1 from m1 (-vv)" [ "$RC" -eq 0 ]
	check "  -vv prints the phases, with the time in fsync (a pull writes here)" \
		grep -Eq "^rdcp: phases: connect [0-9.]+ ms, TLS [0-9.]+ ms, open [0-9.]+ ms, data [0-9.]+ ms \([0-9.]+ ms of it in fsync\), close" /tmp/out
	check "  t1 came back exact" same_tree /tmp/t1 /tmp/back/t1
	run -r --json --password-file /tmp/alice.pw "$U/m2/t2" /tmp/back/
	check "alice pulls t2 from m2 (--json: fsync measured here, walk null)" \
		bash -c '[ '"$RC"' -eq 0 ] && grep -Eq "\"walk\": null, \"fsync\": [0-9.]+," /tmp/out'
	run --password-file /tmp/wrong.pw /tmp/t1/one.bin "$U/m1/wrong.bin"
	check "a wrong password: exit 5" [ "$RC" -eq 5 ]
	tree_bytes /tmp/t2 >"$RIG_SHARED/t2.bytes"

	# the big push, held still (SIGSTOP) once the daemon counts its bytes
	"$RDCP" -q --password-file /tmp/alice.pw /tmp/huge.bin "$U/m2/" >/tmp/huge.out 2>&1 &
	pid=$!
	local t2b seen=0 got
	t2b=$(cat "$RIG_SHARED/t2.bytes")
	for i in $(seq 1 3000); do
		got=$(scrape "$S" | sed -n 's/^rdcpd_bytes_received_total{module="m2"} //p')
		if [ "${got:-0}" -gt "$t2b" ]; then
			kill -STOP $pid
			seen=1
			break
		fi
		kill -0 $pid 2>/dev/null || break
		nap 0.02
	done
	check "the client saw the push's bytes move on /metrics and held it (SIGSTOP) mid-copy" \
		[ "$seen" -eq 1 ]
	touch "$RIG_SHARED/held"
	wait_for "$RIG_SHARED/looked" 120
	kill -CONT $pid
	wait $pid
	RC=$?
	check "the held push then finishes" [ "$RC" -eq 0 ]

	{
		echo "M1_RX=$(tree_bytes /tmp/t1) M1_TX=$(tree_bytes /tmp/t1)"
		echo "M2_RX=$(($(tree_bytes /tmp/t2) + (BIG_MB << 20))) M2_TX=$(tree_bytes /tmp/t2)"
		echo "M1_FRX=$(tree_files /tmp/t1) M1_FTX=$(tree_files /tmp/t1)"
		echo "M2_FRX=$(($(tree_files /tmp/t2) + 1)) M2_FTX=$(tree_files /tmp/t2)"
		echo "T2_BYTES=$(tree_bytes /tmp/t2) T2_FILES=$(tree_files /tmp/t2)"
	} >"$RIG_SHARED/expect"
	{
		m1_lines recv alice /tmp/t1
		m1_lines send bob /tmp/t1
	} >"$RIG_SHARED/m1.expect"
	{
		m2_lines recv bob /tmp/t2
		m2_lines send alice /tmp/t2
		echo "recv alice huge.bin $((BIG_MB << 20))"
	} >"$RIG_SHARED/m2.expect"
}

case "${RIG_ROLE}:${RIG_MODE:-2}" in
a:2)
	wait_for "$RIG_SHARED/server-ready" 120 || exit 1
	client "$RIG_PEER_IP"
	touch "$RIG_SHARED/client-done"
	;;
b:2)
	server || exit 1
	wait_for "$RIG_SHARED/held" 600 && server_during
	touch "$RIG_SHARED/looked"
	wait_for "$RIG_SHARED/client-done" 600
	server_after
	if [ "${E2E_TRANSPORT:-rdma}" = tcp ]; then
		printf 'alice-pw\n' >/tmp/alice.pw && chmod 600 /tmp/alice.pw
		rsync_oracle || fail "the rsyncd oracle could not run"
		slow_scrapers || fail "the slow scrapers' copies failed"
	fi
	journal -o cat SYSLOG_IDENTIFIER=rdcpd | tail -15 | sed 's/^/    journal| /'
	;;
esac
finish
