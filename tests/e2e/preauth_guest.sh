# shellcheck shell=bash
# Before authentication (issue 27 items 1, 2, 13, 17), every case in one boot:
#  - flood: 72 TCP connections that never send, from 12 addresses, made
#    again as soon as they are turned away, beside a real client: it is
#    served within 2 s of its usual time (over RDMA in the rig, over TCP on
#    a host); 40 idle connections from one address are still capped at
#    max connections per host (4), counted with those in a handshake;
#  - 16 pushes at once by one user from one host to a daemon with the
#    default limits all land byte-exact (the ones turned away as busy come
#    back within --retries), and max connections per user holds a user's
#    third session off until one of the first two ends;
#  - descriptors: a daemon out of file descriptors (prlimit on it) says so
#    once, stays up, turns clients away as busy, and serves again when the
#    limit is raised; a tree 1,000 levels deep is pulled from a daemon whose
#    open-file limit is just its budget (one connection);
#  - the ssh-started remote half: garbage, a bad version and aborted
#    connections (TCP, and RDMA in the rig) at its listener, a silent socket
#    and a handshake that never ends beside the real client: it is served.
# Role a is the client (and runs the remote half itself), b the server. On a
# host (host_test.sh 2) both run on 127.0.0.1 over TCP.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
EVIL=${EVIL:-${RDCP_EVIL:-${4:-}}}
PA=18740 # default limits: the flood, 40 idle, 16 pushes
PU=18741 # max connections per user = 2
PF=18742 # descriptors: prlimit
PD=18743 # open-file limit 404, one connection: the deep tree
SH=$RIG_SHARED

le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

# deep DIR: 1,000 directories deep, a file every 100 levels and at the bottom.
make_deep() {
	local d=$1 i
	mkdir -p "$d"
	for i in $(seq 1 1000); do
		d=$d/d
		[ $((i % 100)) -eq 0 ] && { mkdir -p "$d" && echo "level $i" >"$d/f"; }
	done
	mkdir -p "$d" && echo bottom >"$d/f"
}

# --- server (b) ---

server() {
	mkdir -p /tmp/up /tmp/pub /tmp/fdm
	head -c $((4 << 20)) /dev/zero | tr '\0' p >/tmp/pub/p.bin
	echo small >/tmp/fdm/small
	echo seed >/tmp/up/seed
	printf 'alice:alice-secret\nbob:bob-secret\n' >/tmp/secrets
	chmod 600 /tmp/secrets
	# Default limits: max connections 16, per host 4, the memory budget's.
	cat >/tmp/pa.conf <<-EOF
		port = $PA
		secrets file = /tmp/secrets
		host key = /tmp/pa-host.key
		[up]
		    path = /tmp/up
		    uid = root
		    auth users = alice:rw, bob:rw
		[pub]
		    path = /tmp/pub
		    uid = root
		    read only = yes
		    auth users = alice:ro
	EOF
	{
		printf 'max connections per user = 2\nidle timeout = 6\n'
		sed -e "s/^port = .*/port = $PU/" /tmp/pa.conf
	} >/tmp/pu.conf
	# 8 MiB pools: 16 sessions fit the VM's memory budget (the limits are the defaults)
	start_daemon_auth pa --config /tmp/pa.conf --pool-size 8M || fail "daemon pa started"
	start_daemon_auth pu --config /tmp/pu.conf --pool-size 8M || fail "daemon pu started"
	start_daemon fd --module "fdm=/tmp/fdm" --port "$PF" --pool-size 4M || fail "daemon fd started"
	make_deep /tmp/deep/t
	# one connection with the narrowest window: 276 files + 128 for the daemon
	(ulimit -n 404 && start_daemon deep --module "deep=/tmp/deep" --port "$PD" \
		--max-conns 1 --pool-size 4M) || fail "daemon deep started"
	grep "window of" /tmp/deep.log | sed 's/^/    deep| /'
}

# The lowest descriptor number the process has free: its soft limit goes
# there, so that it cannot open one more.
lowest_free() {
	local n=0
	while [ -e "/proc/$1/fd/$n" ]; do n=$((n + 1)); done
	echo "$n"
}

fd_server() {
	local pid hard low
	pid=$(cat /tmp/fd.pid)
	wait_for "$SH/fd-starve" 400 || return 1
	hard=$(awk '/Max open files/ {print $5}' "/proc/$pid/limits")
	low=$(lowest_free "$pid")
	prlimit --pid "$pid" --nofile="$low:$hard" || return 1
	echo "    fd daemon: $(ls "/proc/$pid/fd" | wc -l) descriptors open, soft limit now $low"
	touch "$SH/fd-starved"
	wait_for "$SH/fd-feed" 120 || return 1
	prlimit --pid "$pid" --nofile="$hard:$hard" || return 1
	touch "$SH/fd-fed"
}

server_checks() {
	local n bad=0 i
	check "every daemon alive after it all" \
		bash -c 'for d in pa pu fd deep; do kill -0 $(cat /tmp/$d.pid) || exit 1; done'
	for i in $(seq 1 16); do
		[ "$(md5sum </tmp/up/push$i.bin 2>/dev/null | cut -d' ' -f1)" = \
			"$(sed -n "${i}p" "$SH/push.md5")" ] || bad=$((bad + 1))
	done
	check "16 pushes at once by one user from one host: all 16 byte-exact here" [ "$bad" -eq 0 ]
	check "  the log names the per-host refusals as before authentication" \
		grep -q "connections from this address have not authenticated (max connections per host)" \
		/tmp/pa.log
	n=$(grep -c -e "cannot accept connections" -e "no file descriptor left" /tmp/fd.log)
	check "out of descriptors: said once ($n lines)" [ "$n" -eq 1 ]
	check "  and when it accepted again" grep -q "accepting connections again" /tmp/fd.log
	grep -e descriptor -e "accept" /tmp/fd.log | sed 's/^/    fd| /'
	check "the per-user refusal is logged" grep -q "user alice has 2 sessions already" /tmp/pu.log
	check "no temporary files left" [ -z "$(find /tmp/up -name '.rdcp*' -print -quit)" ]
	grep -c "refused" /tmp/pa.log | sed 's/^/    pa refusals logged: /'
	grep "more connections refused in the last second" /tmp/pa.log | head -3 | sed 's/^/    pa| /'
}

# --- client (a) ---

# pull_time: seconds one authenticated pull of p.bin takes (the real client).
pull_time() {
	local t0
	rm -f /tmp/pull/p.bin
	t0=$(date +%s.%N)
	timeout 120 "$RDCP" -q --password-file /tmp/alice.pw "rdcp://alice@$S:$PA/pub/p.bin" \
		/tmp/pull/ >/tmp/pull.out 2>&1 || { cat /tmp/pull.out >&2; echo 999; return; }
	cmp -s /tmp/pull/p.bin /tmp/p.expect || { echo "    not byte-exact" >&2; echo 999; return; }
	secs_since "$t0"
}

flood() {
	local i addrs="" b1 b2 b3 f1 f2 f3 base pid
	for i in $(seq 101 112); do
		if over_rdma; then
			ip addr add "10.77.2.$i/24" dev eth0 2>/dev/null
			addrs="$addrs,10.77.2.$i"
		else
			addrs="$addrs,127.0.0.$((i - 99))"
		fi
	done
	addrs=${addrs#,}
	b1=$(pull_time) b2=$(pull_time) b3=$(pull_time)
	base=$(median3 "$b1" "$b2" "$b3")
	echo "    a pull alone: $b1 $b2 $b3 s (median $base)"
	"$EVIL" silent "$S" "$PA" 60 6 "$addrs" again >/tmp/flood.out 2>&1 &
	pid=$!
	sleep 2
	f1=$(pull_time) f2=$(pull_time) f3=$(pull_time)
	echo "    beside 72 silent connections from 12 addresses: $f1 $f2 $f3 s"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	sed 's/^/    | /' /tmp/flood.out
	for i in "$f1" "$f2" "$f3"; do
		check "a silent-socket flood: the real client is served within 2 s of its usual time ($i s, alone $base s)" \
			le "$i" "$(awk -v b="$base" 'BEGIN {print b + 2}')"
	done
	check "  the flood was in place (connections held, others turned away)" \
		grep -q "too many connections from this address" /tmp/flood.out
	# 40 idle from this address: with 2 in a handshake that never ends, 2 more wait
	"$EVIL" idle "$S" "$PA" 12 connect >/tmp/idle1.out 2>&1 &
	"$EVIL" idle "$S" "$PA" 12 connect >/tmp/idle2.out 2>&1 &
	for i in $(seq 1 100); do
		[ "$(cat /tmp/idle1.out /tmp/idle2.out | grep -c holding)" -ge 2 ] && break
		nap 0.1
	done
	"$EVIL" silent "$S" "$PA" 2 40 - >/tmp/forty.out 2>&1
	sed 's/^/    | /' /tmp/forty.out
	check "40 idle connections from one host beside 2 in a handshake: 2 held (per host 4)" \
		grep -q "^silent: 2 of 40 held at the end" /tmp/forty.out
	check "  the others told why" grep -q "too many connections from this address.*: 38" /tmp/forty.out
	wait
}

sixteen() {
	local i rc fails=0 busy=0 t0
	mkdir -p /tmp/push
	: >"$SH/push.md5.tmp"
	for i in $(seq 1 16); do
		head -c $((2 << 20)) /dev/urandom >"/tmp/push/push$i.bin"
		md5sum <"/tmp/push/push$i.bin" | cut -d' ' -f1 >>"$SH/push.md5.tmp"
	done
	mv "$SH/push.md5.tmp" "$SH/push.md5"
	t0=$(date +%s.%N)
	# (--retries 8: under QEMU without KVM a handshake takes a good part of
	# a second, and 4 from one address may be in one at a time)
	for i in $(seq 1 16); do
		"$RDCP" --retries 8 --password-file /tmp/alice.pw "/tmp/push/push$i.bin" \
			"rdcp://alice@$S:$PA/up/" >"/tmp/push$i.out" 2>&1 &
	done
	for i in $(seq 1 16); do
		wait -n
		rc=$?
		[ "$rc" -eq 0 ] || fails=$((fails + 1))
	done
	for i in $(seq 1 16); do
		grep -q "server busy: trying again" "/tmp/push$i.out" && busy=$((busy + 1))
	done
	echo "    16 pushes in $(secs_since "$t0") s; $busy were turned away as busy at first and came back"
	grep -h -e "rdcp:" /tmp/push*.out | grep -v "using TCP" | sort | uniq -c | head -8 | sed 's/^/    | /'
	check "16 pushes at once by one user from one host, default limits: all exit 0" [ "$fails" -eq 0 ]
}

per_user() {
	local i
	echo pu >/tmp/pu.bin
	for i in 1 2; do
		RDCP_EVIL_USER=alice RDCP_PASSWORD=alice-secret \
			"$EVIL" idle "$S" "$PU" 15 open up/seed >"/tmp/pu-idle$i.out" 2>&1 &
	done
	for i in $(seq 1 100); do
		[ "$(cat /tmp/pu-idle1.out /tmp/pu-idle2.out | grep -c holding)" -ge 2 ] && break
		nap 0.1
	done
	run --retries 0 --password-file /tmp/alice.pw /tmp/pu.bin "rdcp://alice@$S:$PU/up/pu1.bin"
	check "max connections per user = 2: alice's third session is refused (exit 5)" [ "$RC" -eq 5 ]
	check "  told why" out_has "user alice has 2 sessions already (the server's max connections per user)"
	# while hers still hold (the idle timeout, 6 s, drops them)
	"$RDCP" --retries 6 --password-file /tmp/alice.pw /tmp/pu.bin \
		"rdcp://alice@$S:$PU/up/pu2.bin" >/tmp/pu-retry.out 2>&1 &
	i=$!
	run --retries 0 --password-file /tmp/bob.pw /tmp/pu.bin "rdcp://bob@$S:$PU/up/pu-bob.bin"
	check "  bob is not held off by alice's sessions" [ "$RC" -eq 0 ]
	wait "$i"
	RC=$?
	cp /tmp/pu-retry.out /tmp/out
	sed 's/^/    | /' /tmp/out
	check "  with --retries alice's push lands once hers are dropped (exit $RC)" [ "$RC" -eq 0 ]
	check "  saying it waits for the busy server" out_has "server busy: trying again"
	wait
}

descriptors() {
	local i ok=0 pid t0 took
	touch "$SH/fd-starve"
	wait_for "$SH/fd-starved" 60 || return 1
	for i in 1 2 3; do
		t0=$(date +%s.%N)
		run --retries 0 "rdcp://$S:$PF/fdm/small" /tmp/fdpull/
		took=$(secs_since "$t0")
		[ "$RC" -eq 5 ] && out_has "server busy" && le "$took" 10 && ok=$((ok + 1))
	done
	check "out of descriptors: clients are turned away as busy at once (3 of 3)" [ "$ok" -eq 3 ]
	"$RDCP" --retries 5 "rdcp://$S:$PF/fdm/small" /tmp/fdpull/waited >/tmp/fdwait.out 2>&1 &
	pid=$!
	sleep 2
	touch "$SH/fd-feed"
	wait_for "$SH/fd-fed" 60
	wait "$pid"
	RC=$?
	sed 's/^/    | /' /tmp/fdwait.out
	check "  a client waiting for it (--retries) is served once the limit is raised" \
		eval '[ "$RC" -eq 0 ] && [ "$(cat /tmp/fdpull/waited)" = small ]'
	run "rdcp://$S:$PF/fdm/small" /tmp/fdpull/after
	check "  and a new one too" [ "$RC" -eq 0 ]
}

deep_pull() {
	make_deep /tmp/deep-expect/t
	run -r "rdcp://$S:$PD/deep/t" /tmp/deep-pull/
	check "a tree 1,000 levels deep, from a daemon whose open-file limit is its budget: exit 0" \
		[ "$RC" -eq 0 ]
	check "  every level arrived" same_tree /tmp/deep-expect/t /tmp/deep-pull/t
}

# The ssh-started remote half, attacked at its listener before the client comes.
remote_half() {
	local t0 took
	mkdir -p /tmp/rh/src /tmp/rh/dst
	head -c $((3 << 20)) /dev/urandom >/tmp/rh/src/r.bin
	cat >/tmp/rh/attack <<-EOF
		#!/bin/bash
		# attack PORT ADDR: strangers at the remote half's listener
		port=\$1 addr=\$2
		"$EVIL" hello 127.0.0.1 "\$port" garbage
		"$EVIL" hello 127.0.0.1 "\$port" badver
		"$EVIL" hello 127.0.0.1 "\$port" abort
		if [ "\$addr" != - ]; then
			"$EVIL" hello "\$addr" "\$port" badver rdma
			"$EVIL" hello "\$addr" "\$port" abort rdma
		fi
		# held while the real client connects
		"$EVIL" hello 127.0.0.1 "\$port" silent </dev/null &
		"$EVIL" idle 127.0.0.1 "\$port" 12 connect </dev/null &
		sleep 0.5
	EOF
	cat >/tmp/rh/fakessh <<-'EOF'
		#!/bin/bash
		# fake ssh HOST COMMAND: the remote half runs here; its listener is
		# attacked before the client reads the ready line.
		shift
		eval "$1" | {
			IFS= read -r line
			read -r _ _ _ port _ addrs <<<"$line"
			/tmp/rh/attack "$port" "${addrs%%,*}" >>/tmp/rh/attacks.log 2>&1
			printf '%s\n' "$line"
			exec cat
		}
	EOF
	chmod 755 /tmp/rh/attack /tmp/rh/fakessh
	t0=$(date +%s.%N)
	run -e /tmp/rh/fakessh --remote-rdcp "$RDCP" --timeout 30 "localhost:/tmp/rh/src/r.bin" /tmp/rh/dst/
	took=$(secs_since "$t0")
	sed 's/^/    attack| /' /tmp/rh/attacks.log
	check "remote half: strangers at its listener do not end it; the client is served (exit $RC)" \
		[ "$RC" -eq 0 ]
	check "  byte-exact" cmp /tmp/rh/src/r.bin /tmp/rh/dst/r.bin
	check "  the bad version was refused, and the wait went on" \
		eval 'grep -q "hello badver: refused: no common protocol version" /tmp/rh/attacks.log &&
			grep -q "hello abort: request sent" /tmp/rh/attacks.log'
	check "  and logged" out_has "refused a connection from .*: it speaks protocol 200..201"
	check "  within 15 s, beside a silent socket and a handshake that never ends ($took s)" \
		le "$took" 15
	if over_rdma; then
		check "  an RDMA connection left before it was established did not end it" \
			grep -q "hello abort (rdma): the server answered with RDMA_CM_EVENT_CONNECT_RESPONSE" \
			/tmp/rh/attacks.log
	fi
	wait
}

client() {
	S=$RIG_PEER_IP
	mkdir -p /tmp/pull /tmp/fdpull /tmp/deep-pull
	printf 'alice-secret\n' >/tmp/alice.pw
	printf 'bob-secret\n' >/tmp/bob.pw
	chmod 600 /tmp/alice.pw /tmp/bob.pw
	head -c $((4 << 20)) /dev/zero | tr '\0' p >/tmp/p.expect
	remote_half
	wait_for "$SH/server-ready" 300 || return 1
	flood
	sixteen
	per_user
	deep_pull
	descriptors
}

[ -x "$EVIL" ] || {
	fail "no rdcp_evil ($EVIL)"
	finish
	exit 1
}
case "$RIG_ROLE" in
a)
	client || fail "the client side stopped early"
	touch "$SH/client-done"
	;;
b)
	server
	touch "$SH/server-ready"
	fd_server || fail "the descriptor steps of the server"
	wait_for "$SH/client-done" 600
	server_checks
	;;
esac
finish
