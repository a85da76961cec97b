# shellcheck shell=bash
# Faults and bad input between two RoCE hosts (a = client, b = server):
# corrupted chunks (resent; or the file fails), killed peers on either side,
# a full disk, unknown and read-only modules, nothing listening, a name that
# does not resolve, a missing source among good ones, an unwritable
# destination, a locked-memory limit too low. After each: the right exit
# status, a message naming the thing, nothing wrong under a final name, an
# old good file intact, and the daemon still serving.
# Resume (issue 11): a killed receiver (rdcp pulling, rdcpd receiving a
# push, KILLS times in a row) leaves a partial that the rerun reuses: byte
# exact, bytes moved over all runs <= 1.2 x the data, no litter after.
# The wire (rig only): this client's side lossy or cut (netem), and the
# server's link down for 5 s mid-push and mid-pull (issue 27 item 18: the
# daemon's CM went deaf after it; the copy must complete by itself).
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SH=$RIG_SHARED
# a kill lands mid-transfer: the host over TCP moves 100 MiB in about a second
if over_rdma; then KILL_AFTER=2; else KILL_AFTER=0.3; fi
KILLS=${KILLS:-3}
# The daemon's receive window bounds what a kill -9 of it wastes (chunks in
# flight): 4 MiB here, with 1 MiB chunks for the kill loop.
DOPTS="--pool-size 4M --module m=/tmp/mod --module ro=/tmp/ro,ro --module small=/tmp/small"

server() {
	mkdir -p /tmp/mod /tmp/ro /tmp/small
	mount -t tmpfs -o size=8m tmpfs /tmp/small || return 1
	echo "read only" >/tmp/ro/file
	# shellcheck disable=SC2086
	start_daemon d $DOPTS || return 1
	RDCP_TEST_CORRUPT_DATA=2 start_daemon dc --port 18600 --module m=/tmp/mod || return 1
	# for the link cut: a session whose link went dead is dropped after 8 s
	# of silence (--timeout), releasing its partial for the reconnect
	if over_rdma; then
		start_daemon dt --port 18602 --timeout 8 --module m=/tmp/mod || return 1
		# for this side's link cut: a session gives up within the 5 s cut
		# (3 s of silence), so its teardown always happens with the link down
		start_daemon dl --port 18606 --timeout 3 --module m=/tmp/mod || return 1
	fi
	# an rdcpd that speaks protocol 4 at most, as one older than --partial-dir
	# for pushes would (test build: RDCP_TEST_PROTO_MAX)
	mkdir -p /tmp/mod4
	RDCP_TEST_PROTO_MAX=4 start_daemon d4 --port 18604 --module m=/tmp/mod4 || return 1
	touch "$SH/server-ready"

	# Disk full, then space freed: the client's rerun must resume.
	wait_for "$SH/grow-small" 300 || return 1
	check "disk full: the partial of the file that did not fit is kept" \
		[ -e /tmp/small/.rdcp-partial.good ]
	mount -o remount,size=40m /tmp/small
	touch "$SH/small-grown"

	# Kill requests from the client, then restart the daemon.
	# Each kill lands mid-data: once this run has rewritten the partial's
	# record (every 10 ms while chunks land), after a varying extra delay.
	# The last three are for the client's --retries, --partial-dir and a
	# source changed since its partial; the request names the record to
	# watch when it is not victim's.
	for i in $(seq 1 $((KILLS + 3))); do
		wait_for "$SH/kill-d.$i" 300 || return 1
		rec=$(cat "$SH/kill-d.$i")
		rec=${rec:-/tmp/mod/.rdcp-partial.victim.rec}
		touch /tmp/kill-mark
		n=0
		while [ ! "$rec" -nt /tmp/kill-mark ] && [ $n -lt 1000 ]; do
			sleep 0.01
			n=$((n + 1))
		done
		# over TCP on a fast host the whole push takes a third of a second
		if over_rdma; then sleep "0.$((i * 3 % 10))"; else sleep "0.0$((i % 4))"; fi
		kill -9 "$(cat /tmp/d.pid)"
		sleep 0.5
		ls -la /tmp/mod | sed "s/^/    after kill $i: /"
		if [ "$i" -eq $((KILLS + 2)) ]; then
			check "--partial-dir push, daemon killed: its partial is in the module's .part/" \
				[ -e /tmp/mod/.part/.rdcp-partial.victim3 ]
			check "  with its record, 0700, and nothing beside the file" \
				eval '[ -e /tmp/mod/.part/.rdcp-partial.victim3.rec ] &&
				[ "$(stat -c %a /tmp/mod/.part)" = 700 ] &&
				[ ! -e /tmp/mod/.rdcp-partial.victim3 ]'
		fi
		# shellcheck disable=SC2086
		start_daemon d $DOPTS
		touch "$SH/d-restarted.$i"
	done

	over_rdma && server_cuts
	wait_for "$SH/client-done" 600
	check "daemon still alive after every fault" daemon_alive d
	check "corrupting daemon still alive" daemon_alive dc
	find /tmp/mod /tmp/small -name '.rdcp*' | sed 's/^/    left: /'
	check "no temporary or partial files left in the modules" \
		[ -z "$(find /tmp/mod /tmp/small -name '.rdcp*' -print -quit)" ]
	check "the push's partial directory is gone once empty" [ ! -e /tmp/mod/.part ]
	check "the protocol-4 daemon still alive, only the push without the option landed" \
		eval 'daemon_alive d4 && [ "$(ls -A /tmp/mod4)" = f20 ]'
	sed 's/^/    d| /' /tmp/d.log | tail -40
	if over_rdma; then
		check "link-cut daemons still alive" eval 'daemon_alive dt && daemon_alive dl'
		sed 's/^/    dt| /' /tmp/dt.log | tail -12
		sed 's/^/    dl| /' /tmp/dl.log | tail -12
	fi
}

# Wait for the file $1 unless the client is done (it gave up early).
wait_client() {
	until [ -e "$1" ] || [ -e "$SH/client-done" ]; do nap 0.1; done
	[ -e "$1" ]
}

# The server's side of server_cut (issue 27 item 18): its own link down for
# 5 s when the client says go, 1 s into each copy. netem holds this side to
# 64 Mbit/s meanwhile, so a pull (the data leaves from here) lasts seconds.
server_cuts() {
	local i
	for i in 1 2; do
		wait_client "$SH/bcut-arm.$i" || return 0
		tc qdisc add dev eth0 root netem rate 64mbit
		touch "$SH/bcut-armed.$i"
		wait_client "$SH/bcut-go.$i" || break
		sleep 1
		ip link set dev eth0 down
		sleep 5
		ip link set dev eth0 up
		touch "$SH/bcut-up.$i"
		wait_client "$SH/bcut-end.$i"
		tc qdisc del dev eth0 root
	done
	tc qdisc del dev eth0 root 2>/dev/null
	return 0
}

client() {
	local S=$RIG_PEER_IP
	mkdir -p /tmp/src /tmp/pull
	head -c $((20 << 20)) /dev/urandom >/tmp/src/f20
	head -c $((1 << 20)) /dev/urandom >/tmp/src/good1m
	head -c $((100 << 20)) /dev/urandom >/tmp/src/v1
	head -c $((100 << 20)) /dev/urandom >/tmp/src/v2
	echo a >/tmp/src/ga
	echo b >/tmp/src/gb

	# --- corruption in flight ---
	RDCP_TEST_CORRUPT_DATA=2 run /tmp/src/f20 "$S::m/f20"
	check "push with a chunk corrupted in flight succeeds" [ "$RC" -eq 0 ]
	check "  and says a chunk was resent" out_has "1 chunks resent"
	run "$S::m/f20" /tmp/pull/f20
	check "  the file on the server is exact" cmp /tmp/src/f20 /tmp/pull/f20
	rm -f /tmp/pull/f20
	run "rdcp://$S:18600/m/f20" /tmp/pull/f20
	check "pull with a chunk corrupted by the sender succeeds" [ "$RC" -eq 0 ]
	check "  and is exact" cmp /tmp/src/f20 /tmp/pull/f20
	RDCP_TEST_CORRUPT_EVERY=1 run /tmp/src/good1m "$S::m/always-bad"
	check "every chunk corrupted, nothing else copied: exit 51" [ "$RC" -eq 51 ]
	check "  the error says verification failed" out_has "failed gmac verification"
	run "$S::m/always-bad" /tmp/pull/
	check "  nothing under the final name" out_has "No such file"

	# --- refusals ---
	run /tmp/src/ga "$S::nope/x"
	check "unknown module: exit 3 (selecting files)" [ "$RC" -eq 3 ]
	check "  names the module" out_has "unknown module 'nope'"
	run /tmp/src/ga "$S::ro/"
	check "push into a read-only module: exit 5 (the server refused)" [ "$RC" -eq 5 ]
	check "  says read-only" out_has "module 'ro' is read-only"
	run "$S::ro/file" /tmp/pull/
	check "pull from a read-only module works" grep -q "read only" /tmp/pull/file
	run /tmp/src/ga "$S:18999:m/" # scp-style: host:path with ssh; use URL below
	run /tmp/src/ga "rdcp://$S:18999/m/"
	check "nothing listening: exit 10" [ "$RC" -eq 10 ]
	check "  says nothing is listening" out_has "nothing listening"
	run /tmp/src/ga "no-such-host.invalid::m/"
	check "unresolvable host: exit 10" [ "$RC" -eq 10 ]
	check "  names the host" out_has "cannot resolve host 'no-such-host.invalid'"

	# --- a missing source among good ones ---
	run /tmp/src/ga /tmp/src/nonexistent /tmp/src/gb "$S::m/"
	check "missing source among good ones: exit 23" [ "$RC" -eq 23 ]
	check "  names the missing source" out_has "/tmp/src/nonexistent: No such file"
	run "$S::m/ga" "$S::m/gb" /tmp/pull/
	check "  the good ones arrived" [ "$(cat /tmp/pull/ga /tmp/pull/gb)" = "$(printf 'a\nb')" ]

	# --- destination problems ---
	run "$S::m/ga" /usr/share/rdcp-not-writable
	check "unwritable local destination: exit 11 (file I/O), not the server's" [ "$RC" -eq 11 ]
	check "  and names it" out_has "rdcp-not-writable"
	run /tmp/src/good1m "$S::small/good"
	run /tmp/src/f20 "$S::small/good"
	check "disk full on the server, the only file: exit 11 (file I/O)" [ "$RC" -eq 11 ]
	check "  says no space" out_has "No space left on device"
	run "$S::small/good" /tmp/pull/good
	check "  the old file under that name is intact" cmp /tmp/src/good1m /tmp/pull/good
	run /tmp/src/ga "$S::small/"
	check "  the daemon still takes a push into that module" [ "$RC" -eq 0 ]
	touch "$SH/grow-small"
	wait_for "$SH/small-grown" 60
	run --json /tmp/src/f20 "$S::small/good"
	check "  space freed: the rerun completes" [ "$RC" -eq 0 ]
	check "  and resumes the partial ($(json_num bytes_resumed /tmp/out) bytes kept)" \
		eval '[ "$(json_num bytes_resumed /tmp/out)" -gt 0 ]'
	run "$S::small/good" /tmp/pull/good
	check "  the file on the server is byte-exact" cmp /tmp/src/f20 /tmp/pull/good

	# --- locked memory (TCP registers nothing) ---
	if over_rdma; then
	ulimit -l 64
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$RDCP" /tmp/src/ga "$S::m/" >/tmp/out 2>&1
	RC=$?
	ulimit -l unlimited 2>/dev/null
	sed 's/^/    | /' /tmp/out
	check "locked-memory limit too low: exit 52" [ "$RC" -eq 52 ]
	check "  says ulimit -l" out_has "ulimit -l"
	fi

	# --- the receiving client killed mid-pull ---
	run /tmp/src/v1 "$S::m/victim"
	cp /tmp/src/good1m /tmp/pull/victim
	"$RDCP" "$S::m/victim" /tmp/pull/victim >/tmp/out 2>&1 &
	pid=$!
	# mid-transfer: once the partial has a record (the first chunk is in)
	wait_for /tmp/pull/.rdcp-partial.victim.rec 30
	if kill -9 $pid 2>/dev/null; then
		wait $pid 2>/dev/null
		check "client killed mid-pull: the old local file is intact" \
			cmp /tmp/src/good1m /tmp/pull/victim
		check "  what it verified is kept as a partial" [ -e /tmp/pull/.rdcp-partial.victim ]
	else
		# 100 MiB over loopback TCP on an idle host: done before the kill
		wait $pid 2>/dev/null
		echo "    not judged: the pull finished before the kill"
		pull_not_judged=1
		cp /tmp/src/good1m /tmp/pull/victim
	fi
	run --json "$S::m/victim" /tmp/pull/victim
	moved=$(json_num bytes_moved /tmp/out) kept=$(json_num bytes_resumed /tmp/out)
	check "  the rerun completes byte-exact" cmp /tmp/src/v1 /tmp/pull/victim
	[ -n "${pull_not_judged:-}" ] ||
		check "  it moved only what was missing ($moved moved + $kept kept = 100 MiB)" \
			eval '[ $((moved + kept)) -eq $((100 << 20)) ] && [ "$kept" -gt 0 ]'
	check "  no partial or temporary left after it" \
		[ -z "$(find /tmp/pull -name '.rdcp*' -print -quit)" ]

	# --- the sending client killed mid-push (its own name: the partial it
	# leaves must not shorten the daemon-kill runs below) ---
	run /tmp/src/v1 "$S::m/victim2"
	# 4 KiB chunks, one in flight: still running when the kill comes, on a
	# quiet host over loopback TCP too (all 100 MiB at once took 0.2 s)
	"$RDCP" --chunk-size 4K --depth 1 /tmp/src/v2 "$S::m/victim2" >/tmp/out 2>&1 &
	pid=$!
	sleep "$KILL_AFTER"
	if kill -0 $pid 2>/dev/null; then
		kill -9 $pid
		wait $pid 2>/dev/null
		# (its output, before run's own replaces it)
		completed=$(grep -c '^1 entries' /tmp/out)
		sleep 1
		run "$S::m/victim2" /tmp/pull/victim2
		if [ "$completed" -gt 0 ]; then
			# it had printed its summary: the copy was complete and
			# only the process was still ending when the kill came
			check "sender killed after its push completed: the server has the new file" \
				cmp /tmp/src/v2 /tmp/pull/victim2
			run /tmp/src/v1 "$S::m/victim2"
			check "  the old file is back on the server" [ "$RC" -eq 0 ]
		else
			check "sender killed mid-push: the server's old file is intact" \
				cmp /tmp/src/v1 /tmp/pull/victim2
			run /tmp/src/v2 "$S::m/victim2"
			check "  a rerun completes (and uses up the partial)" [ "$RC" -eq 0 ]
		fi
		rm -f /tmp/pull/victim2
	else
		# On an idle host 100 MiB over loopback TCP can finish before the
		# kill: nothing to judge; put the old file back for what follows.
		wait $pid 2>/dev/null
		echo "    not judged: the push finished in under $KILL_AFTER s, before the kill"
		run /tmp/src/v1 "$S::m/victim2"
		check "  the old file is back on the server" [ "$RC" -eq 0 ]
	fi

	# --- the receiving daemon killed mid-push, KILLS times, then a rerun ---
	total=0 slack=0
	for i in $(seq 1 "$KILLS"); do
		# --retries 0: each kill ends its run (the default would reconnect)
		"$RDCP" --retries 0 --json --chunk-size 1M /tmp/src/v2 "$S::m/victim" >/tmp/out 2>&1 &
		pid=$!
		touch "$SH/kill-d.$i"
		wait $pid
		RC=$?
		sed 's/^/    | /' /tmp/out
		moved=$(json_num bytes_moved /tmp/out)
		total=$((total + ${moved:-0}))
		# What a kill can waste: what was in flight, at most the sender's
		# registered buffers, plus the chunks verified since the partial's
		# record was last flushed (4 MiB is generous for that).
		inflight=$(json_num registered_data_peak_bytes /tmp/out)
		slack=$((slack + ${inflight:-0} + (4 << 20)))
		echo "    kill $i: exit $RC, $moved bytes moved"
		wait_for "$SH/d-restarted.$i" 60
		if [ "$i" -eq 1 ]; then
			check "daemon killed mid-push: the client fails with exit 10" [ "$RC" -eq 10 ]
			check "  and says the peer went away" \
				out_has "closed the connection\|stopped acknowledging"
			rm -f /tmp/pull/victim
			run "$S::m/victim" /tmp/pull/victim
			check "  the old file survived the killed receiver" \
				cmp /tmp/src/v1 /tmp/pull/victim
		fi
	done
	run --json --chunk-size 1M /tmp/src/v2 "$S::m/victim"
	moved=$(json_num bytes_moved /tmp/out) kept=$(json_num bytes_resumed /tmp/out)
	total=$((total + ${moved:-0}))
	check "rerun after $KILLS kills of the receiving daemon completes" [ "$RC" -eq 0 ]
	check "  it resumed: $kept bytes kept, $moved moved" [ "${kept:-0}" -gt 0 ]
	echo "    bytes moved over all $((KILLS + 1)) runs: $total for $((100 << 20)) of data"
	# The soak (tests/soak/resume_soak.sh: 20 kills of 200 MiB) holds the
	# issue's 1.2 x target; three kills of a fast 100 MiB copy can each waste
	# a whole window, so here the bound is the data plus those windows (the
	# check above fails a rerun that resumed nothing).
	check "  bytes moved over all runs <= the data + what the kills had in flight ($total <= $(((100 << 20) + slack)))" \
		[ "$total" -le $(((100 << 20) + slack)) ]
	rm -f /tmp/pull/victim
	run "$S::m/victim" /tmp/pull/victim
	check "  the file on the server is byte-exact" cmp /tmp/src/v2 /tmp/pull/victim

	# --- the same with --retries: the client reconnects and resumes by itself ---
	touch "$SH/kill-d.$((KILLS + 1))"
	run --retries 3 --json --chunk-size 1M /tmp/src/v1 "$S::m/victim"
	check "--retries: the daemon killed mid-push, the copy still completes" [ "$RC" -eq 0 ]
	check "  it said it was reconnecting" out_has "reconnecting (1/3)"
	check "  and resumed (bytes_resumed > 0)" eval '[ "$(json_num bytes_resumed /tmp/out)" -gt 0 ]'
	wait_for "$SH/d-restarted.$((KILLS + 1))" 60
	rm -f /tmp/pull/victim
	run "$S::m/victim" /tmp/pull/victim
	check "  the file on the server is byte-exact" cmp /tmp/src/v1 /tmp/pull/victim

	# --- a push with --partial-dir: the daemon keeps its partial there ---
	# (written whole, then named: the server reads it as soon as it appears)
	echo /tmp/mod/.part/.rdcp-partial.victim3.rec >"$SH/kill-d.tmp"
	mv "$SH/kill-d.tmp" "$SH/kill-d.$((KILLS + 2))"
	# (small chunks, one in flight: still running when the kill comes; with
	# 1 MiB chunks a quiet host pushed all 100 MiB over TCP in 0.14 s,
	# before the daemon had even seen the kill request)
	run --retries 0 --json --chunk-size 64K --depth 1 --partial-dir .part /tmp/src/v2 \
		"$S::m/victim3"
	wait_for "$SH/d-restarted.$((KILLS + 2))" 60
	check "--partial-dir push: the daemon killed mid-push, exit 10" [ "$RC" -eq 10 ]
	run --json --chunk-size 1M --partial-dir .part /tmp/src/v2 "$S::m/victim3"
	check "  the rerun with --partial-dir completes" [ "$RC" -eq 0 ]
	check "  and resumed from the partial there (bytes_resumed > 0)" \
		eval '[ "$(json_num bytes_resumed /tmp/out)" -gt 0 ]'
	rm -f /tmp/pull/victim3
	run "$S::m/victim3" /tmp/pull/victim3
	check "  the file on the server is byte-exact" cmp /tmp/src/v2 /tmp/pull/victim3
	rm -f /tmp/pull/victim3

	# --- the source changed since the daemon kept its partial: the push
	# starts that file over, and its user is told (the note travels in DONE)
	cp /tmp/src/v1 /tmp/src/v4
	echo /tmp/mod/.rdcp-partial.victim4.rec >"$SH/kill-d.tmp"
	mv "$SH/kill-d.tmp" "$SH/kill-d.$((KILLS + 3))"
	# (small chunks, one in flight: still running when the kill comes)
	run --retries 0 --chunk-size 64K --depth 1 /tmp/src/v4 "$S::m/victim4"
	wait_for "$SH/d-restarted.$((KILLS + 3))" 60
	if [ "$RC" -eq 10 ]; then
		touch -d '1 hour ago' /tmp/src/v4
		run --chunk-size 1M /tmp/src/v4 "$S::m/victim4"
		check "source changed since the daemon's partial: the push completes (exit $RC)" \
			[ "$RC" -eq 0 ]
		check "  the client says the partial was started over" \
			out_has "note: .*source changed since the partial was kept"
		check "  nothing kept from it" not out_has "kept from before"
	else
		echo "    not judged: the push (exit $RC) ended before the daemon was killed"
	fi
	run /tmp/src/f20 "$S::m/victim4"
	rm -f /tmp/src/v4

	run --partial-dir ../x /tmp/src/f20 "$S::m/bad"
	check "--partial-dir ../x: usage error (exit 1) naming the option" \
		eval '[ "$RC" -eq 1 ] && out_has "partial-dir"'
	run --partial-dir .part /tmp/src/f20 "rdcp://$S:18604/m/f20"
	check "--partial-dir push to a protocol-4 server: exit 2" [ "$RC" -eq 2 ]
	check "  it says the server's protocol is too old for it" \
		out_has "speaks protocol 4, which cannot keep a push's partials in --partial-dir"
	run -v /tmp/src/f20 "rdcp://$S:18604/m/f20"
	check "  without the option the same push works on protocol 4" [ "$RC" -eq 0 ]
	check "  with the window of protocol 5 and before (64 entries)" \
		out_has "window: 64 entries in flight at most (the peer's protocol has no wider window)"
	run "rdcp://$S:18604/m/f20" /tmp/pull/f20v4
	check "  byte-exact" cmp /tmp/src/f20 /tmp/pull/f20v4
	rm -f /tmp/pull/f20v4
	# The wire cut and lossy (rig only: no netem on the host's loopback).
	# This side's cut is netem loss 100 % (the far end of a path gone, no
	# port event here); LINK_DOWN=1 cuts with ip link down instead. That
	# once left every reconnect "no answer over RDMA while connecting" (a
	# teardown's DREQ sent into the dead link: issue 27 item 18, now
	# retired until the port is back); server_cut covers it on the server.
	if over_rdma; then
		link_faults
	else
		echo "    link cut and netem: not run (rig only)"
	fi
	touch "$SH/client-done"
}

# Until rdcp -v (in the background, into /tmp/out) says it is connected (60 s).
wait_connected() {
	local n=0
	until grep -q "connected to" /tmp/out || [ $n -gt 600 ]; do
		nap 0.1
		n=$((n + 1))
	done
}

# The wire misbehaves (issue 11), on this VM's side of it (eth0, under rxe0).
link_faults() {
	local S=$RIG_PEER_IP still rate t0 dt
	# --- the link cut for 5 s mid-copy, then restored. netem holds this
	# side to 64 Mbit/s, so the 48 MiB push lasts at least 6 s whatever the
	# machine's speed (128 KiB in flight: netem's queue never overflows);
	# the cut (every packet this side sends lost: no data, no
	# acknowledgement gets through) starts 1 s after the client is
	# connected. The daemon (dt, --timeout 8) drops the dead session.
	head -c $((48 << 20)) /dev/urandom >/tmp/src/cut
	tc qdisc add dev eth0 root netem rate 64mbit
	t0=$SECONDS
	"$RDCP" -v --retries 5 --json --chunk-size 64K --depth 2 /tmp/src/cut \
		"rdcp://$S:18602/m/cut" >/tmp/out 2>&1 &
	pid=$!
	wait_connected
	sleep 1
	still=no
	kill -0 $pid 2>/dev/null && still=yes
	if [ "${LINK_DOWN:-0}" = 1 ]; then
		ip link set dev eth0 down
		sleep 5
		ip link set dev eth0 up
	else
		tc qdisc change dev eth0 root netem rate 64mbit loss 100%
		sleep 5
		tc qdisc change dev eth0 root netem rate 64mbit
	fi
	wait $pid
	RC=$?
	dt=$((SECONDS - t0))
	tc qdisc del dev eth0 root
	grep -v '^ *"' /tmp/out | sed 's/^/    | /'
	check "link cut 5 s: the push was running when the cut began" [ $still = yes ]
	check "  it completes by itself (--retries 5; exit $RC, $dt s in all)" [ "$RC" -eq 0 ]
	echo "    reconnects: $(grep -c 'reconnecting (' /tmp/out); the last attempt:" \
		"$(json_num bytes_resumed /tmp/out) bytes kept, all attempts moved $(json_num bytes_moved /tmp/out)"
	rm -f /tmp/pull/cut
	run "$S::m/cut" /tmp/pull/cut
	check "  the file on the server is byte-exact" cmp /tmp/src/cut /tmp/pull/cut
	rm -f /tmp/src/cut /tmp/pull/cut

	# --- 1 % loss and 20 ms delay on this side of the wire: a push (data
	# through the loss) and a pull (requests and acknowledgements through
	# it). 8 MiB each: Soft-RoCE resends go-back-N, so the push is slow.
	head -c $((8 << 20)) /dev/urandom >/tmp/src/lossy
	tc qdisc add dev eth0 root netem delay 20ms loss 1%
	run --json /tmp/src/lossy "$S::m/lossy"
	rate=$(grep -o '"rate_bytes_per_sec": *[0-9]*' /tmp/out | grep -o '[0-9]*$')
	check "1 % loss + 20 ms delay: an 8 MiB push completes (exit $RC)" [ "$RC" -eq 0 ]
	echo "    netem loss 1% delay 20ms: push $(awk "BEGIN{printf \"%.2f\", ${rate:-0} / 1e6}") MB/s"
	rm -f /tmp/pull/lossy
	run --json "$S::m/lossy" /tmp/pull/lossy
	rate=$(grep -o '"rate_bytes_per_sec": *[0-9]*' /tmp/out | grep -o '[0-9]*$')
	check "  a pull of it completes (exit $RC)" [ "$RC" -eq 0 ]
	echo "    netem loss 1% delay 20ms: pull $(awk "BEGIN{printf \"%.2f\", ${rate:-0} / 1e6}") MB/s"
	tc qdisc del dev eth0 root
	check "  byte-exact" cmp /tmp/src/lossy /tmp/pull/lossy
	rm -f /tmp/src/lossy /tmp/pull/lossy

	head -c $((48 << 20)) /dev/urandom >/tmp/src/bcut
	server_cut 1 push
	server_cut 2 pull
	rm -f /tmp/src/bcut /tmp/pull/bcut
}

# server_cut N push|pull (issue 27 item 18): the server's link (ip link
# down in its VM) cut for 5 s, 1 s into a copy of /tmp/src/bcut (48 MiB;
# the pull brings back what the push left) held to 64 Mbit/s by
# netem on both sides. The daemon (dl) ends the session while the link is
# down: a send fails ("local QP operation error"), or at the latest 3 s of
# silence (--timeout 3). The client, with --retries 5, must reconnect once
# the link is back and complete the copy, resuming what it had. Before the
# fix every reconnect got "no answer over RDMA while connecting": the
# daemon's teardown had sent a DREQ into the dead link, which left
# Soft-RoCE's GSI QP unable to receive (lib/xport/rd_xport_rdma_retire.c).
server_cut() {
	local i=$1 how=$2 S=$RIG_PEER_IP pid still=no RC t0 up
	rm -f /tmp/pull/bcut
	touch "$SH/bcut-arm.$i"
	wait_for "$SH/bcut-armed.$i" 60
	tc qdisc add dev eth0 root netem rate 64mbit
	t0=$SECONDS
	if [ "$how" = push ]; then
		"$RDCP" -v --retries 5 --json --chunk-size 64K --depth 2 /tmp/src/bcut \
			"rdcp://$S:18606/m/bcut" >/tmp/out 2>&1 &
	else
		"$RDCP" -v --retries 5 --json --chunk-size 64K --depth 2 \
			"rdcp://$S:18606/m/bcut" /tmp/pull/bcut >/tmp/out 2>&1 &
	fi
	pid=$!
	wait_connected
	touch "$SH/bcut-go.$i"
	wait_for "$SH/bcut-up.$i" 60
	up=$SECONDS
	kill -0 $pid 2>/dev/null && still=yes
	wait $pid
	RC=$?
	touch "$SH/bcut-end.$i"
	tc qdisc del dev eth0 root
	grep -v '^ *"' /tmp/out | sed 's/^/    | /'
	check "server's link down 5 s mid-$how: the $how was running when the link came back" \
		[ $still = yes ]
	check "  it completes by itself (--retries 5; exit $RC, $((SECONDS - up)) s after the link came back, $((SECONDS - t0)) s in all)" \
		[ "$RC" -eq 0 ]
	check "  it reconnected" out_has "reconnecting (1/5)"
	check "  and resumed ($(json_num bytes_resumed /tmp/out) bytes kept)" \
		eval '[ "$(json_num bytes_resumed /tmp/out)" -gt 0 ]'
	# (the same module from dt: dl's 3 s would be short for a whole copy)
	[ "$how" = push ] && run "rdcp://$S:18602/m/bcut" /tmp/pull/bcut
	check "  byte-exact" cmp /tmp/src/bcut /tmp/pull/bcut
}

case "$RIG_ROLE" in
a)
	wait_for "$SH/server-ready" 120 || exit 1
	client
	;;
b)
	server || { touch "$SH/server-ready"; exit 1; }
	;;
esac
finish
