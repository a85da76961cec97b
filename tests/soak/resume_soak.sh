#!/usr/bin/env bash
# Resume soak (issue 11), on this host over TCP (127.0.0.1), outside CI:
# a 200 MiB file and a tree of 70 small files pushed to an rdcpd, KILLS
# rounds that kill -9 the receiving daemon, then KILLS rounds that kill -9
# the sending rdcp. Each round starts from an empty destination, kills when
# a random 5..95 % of the big file has landed (whatever the machine's speed),
# checks every final name that exists (never truncated or wrong), then
# reruns to completion and checks the tree is byte-exact with no litter
# (.rdcp*). Bytes moved by the killed run plus its rerun, summed over the
# rounds, against the data copied: target <= 1.2 x.
#
#   bash tests/soak/resume_soak.sh [KILLS]        (default 20 of each kind)
#
# Bytes moved: a killed daemon's run counts what its client (the sender)
# says it sent (--json bytes_moved, chunks in flight included); a killed
# rdcp's run counts what the daemon logged as received. A kill that lands
# after the copy finished is counted and reported, not judged. CI runs a
# short version over RDMA: the daemon-kill loop (3 kills) and the sender
# kill of tests/e2e/faults_guest.sh (//tests/e2e:faults_2vm_test).
# Needs a free port 18790; builds //cmd/rdcp //cmd/rdcpd first.
set -u
KILLS=${1:-20}
cd "$(dirname "$0")/../.."
bazel build //cmd/rdcp //cmd/rdcpd >/dev/null 2>&1 || { echo "build failed"; exit 1; }
W=$(mktemp -d /tmp/rdcp-soak.XXXXXX)
# copies: a rebuild meanwhile must not swap the binaries under the soak
cp bazel-bin/cmd/rdcp/rdcp bazel-bin/cmd/rdcpd/rdcpd "$W/"
RDCP=$W/rdcp
RDCPD=$W/rdcpd
PORT=18790
POOL=${POOL:-4M}
CHUNK=${CHUNK:-1M}
trap 'kill -9 $(cat "$W/d.pid" 2>/dev/null) 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/src/t/a/b" "$W/mod"
head -c $((200 << 20)) /dev/urandom >"$W/src/t/big"
for i in $(seq 1 50); do head -c $((i * 7919)) /dev/urandom >"$W/src/t/a/f$i"; done
for i in $(seq 1 20); do echo "$i" >"$W/src/t/a/b/s$i"; done
DATA=$(find "$W/src/t" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
fails=0 total=0 reused=0 landed=0 rounds=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
num() { grep -o "\"$1\": *[0-9]*" "$2" | grep -o '[0-9]*$' | head -1; }
now_ms() { date +%s%3N; }

start_d() {
	rm -f "$W/d.ready"
	"$RDCPD" --foreground --no-auth --port $PORT --pool-size "$POOL" \
		--ready-file "$W/d.ready" --module m="$W/mod" 2>>"$W/d.log" &
	echo $! >"$W/d.pid"
	for _ in $(seq 1 100); do [ -e "$W/d.ready" ] && return 0; sleep 0.1; done
	echo "rdcpd did not start"; exit 1
}
# every final name that exists is exact (never truncated or wrong)
finals_ok() {
	(cd "$W/mod" && find t -type f ! -name '.rdcp*') | while read -r f; do
		cmp -s "$W/src/$f" "$W/mod/$f" || echo "$f"
	done
}
push() { "$RDCP" "$@" --json -r --chunk-size "$CHUNK" --port $PORT "$W/src/t" "127.0.0.1::m/"; }

start_d
t0=$(now_ms)
push >"$W/out" 2>&1 || { echo "clean copy failed"; cat "$W/out"; exit 1; }
echo "clean copy: $DATA bytes in $(($(now_ms) - t0)) ms"
for i in $(seq 1 $((2 * KILLS))); do
	rm -rf "$W/mod/t"
	lines=$(wc -l <"$W/d.log")
	# the binary itself in the background (a function would be a subshell:
	# killing it would leave rdcp running)
	"$RDCP" --retries 0 --json -r --chunk-size "$CHUNK" --port $PORT "$W/src/t" \
		"127.0.0.1::m/" >"$W/out" 2>&1 &
	cpid=$!
	# the instant: when a random 5..95 % of the big file has landed (its
	# partial's allocated blocks), whatever the machine's speed
	pct=$((5 + RANDOM % 91))
	want=$(((200 << 20) / 100 * pct))
	while kill -0 "$cpid" 2>/dev/null; do
		b=$(stat -c '%b*%B' "$W/mod/t/.rdcp-partial.big" 2>/dev/null || echo 0)
		[ $((b)) -ge "$want" ] && break
		sleep 0.01
	done
	if [ "$i" -le "$KILLS" ]; then who=receiver; else who=sender; fi
	hit=no
	if kill -0 "$cpid" 2>/dev/null; then
		hit=yes
		if [ $who = receiver ]; then
			kill -9 "$(cat "$W/d.pid")"
		else
			kill -9 "$cpid"
		fi
	fi
	wait "$cpid" 2>/dev/null
	if [ $who = receiver ]; then
		moved=$(num bytes_moved "$W/out")
		[ $hit = yes ] && { wait "$(cat "$W/d.pid")" 2>/dev/null; start_d; }
	else
		sleep 0.5
		moved=$(tail -n +$((lines + 1)) "$W/d.log" | grep -o '[0-9]* bytes moved' |
			tail -1 | grep -o '^[0-9]*')
		[ $hit = no ] && moved=$(num bytes_moved "$W/out")
	fi
	bad=$(finals_ok)
	[ -n "$bad" ] && fail "after killing the $who ($i): wrong final files: $bad"
	push >"$W/out2" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { fail "round $i: rerun exit $rc"; cat "$W/out2"; }
	moved2=$(num bytes_moved "$W/out2") kept=$(num bytes_resumed "$W/out2")
	diff -r "$W/src/t" "$W/mod/t" >/dev/null || fail "round $i: tree differs after the rerun"
	[ -z "$(find "$W/mod" -name '.rdcp*' -print -quit)" ] ||
		fail "round $i: litter: $(find "$W/mod" -name '.rdcp*')"
	if [ $hit = yes ]; then
		landed=$((landed + 1))
		total=$((total + ${moved:-0} + ${moved2:-0}))
		rounds=$((rounds + 1))
		[ "${kept:-0}" -gt 0 ] && reused=$((reused + 1))
	fi
	echo "round $i: kill -9 $who at $pct % of big: $([ $hit = yes ] || echo 'after the copy ended, ')" \
		"moved ${moved:-0} + rerun ${moved2:-0} (kept ${kept:-0})"
done
echo "data $DATA bytes; $landed of $((2 * KILLS)) kills landed mid-copy; over those rounds" \
	"moved $total for $((rounds * DATA)) ($(awk "BEGIN{printf \"%.3f\", $total / ($rounds * $DATA + ($rounds == 0))}") x);" \
	"reruns that resumed: $reused"
[ "$total" -le $((rounds * DATA * 12 / 10)) ] || fail "moved more than 1.2 x the data"
[ "$landed" -ge "$KILLS" ] || fail "fewer than half the kills landed mid-copy"
echo "soak: $fails failures"
[ $fails -eq 0 ]
