#!/usr/bin/env bash
# Resume soak (issue 11), on this host over TCP (127.0.0.1), outside CI:
# push a 200 MiB file and a tree to an rdcpd, kill -9 the receiving daemon
# or the sending rdcp (alternately) at N instants while chunks land, restart
# and rerun after each, then one last run. Checks: the final tree is
# byte-exact, no final file was ever wrong (checked after every kill),
# partials were reused, bytes moved over all runs <= 1.2 x the data, and no
# litter (.rdcp*) after the last run.
#
#   bash tests/soak/resume_soak.sh [KILLS]        (default 20 of each kind)
#
# Bytes moved: a killed daemon's run counts what its client (the sender)
# says it sent (--json bytes_moved, in-flight chunks included); a killed
# rdcp's run counts what the daemon logged as received. Needs
# bazel build //cmd/rdcp //cmd/rdcpd (done here) and a free port 18790.
set -u
KILLS=${1:-20}
cd "$(dirname "$0")/../.."
bazel build //cmd/rdcp //cmd/rdcpd >/dev/null 2>&1 || { echo "build failed"; exit 1; }
RDCP=$(readlink -f bazel-bin/cmd/rdcp/rdcp)
RDCPD=$(readlink -f bazel-bin/cmd/rdcpd/rdcpd)
W=$(mktemp -d /tmp/rdcp-soak.XXXXXX)
PORT=18790
POOL=${POOL:-4M}
CHUNK=${CHUNK:-1M}
trap 'kill -9 $(cat "$W/d.pid" 2>/dev/null) 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/src/t/a/b" "$W/mod"
head -c $((200 << 20)) /dev/urandom >"$W/src/t/big"
for i in $(seq 1 50); do head -c $((i * 7919)) /dev/urandom >"$W/src/t/a/f$i"; done
for i in $(seq 1 20); do echo "$i" >"$W/src/t/a/b/s$i"; done
DATA=$(du -sb "$W/src/t" | cut -f1)
fails=0 total=0 reused=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
num() { grep -o "\"$1\": *[0-9]*" "$2" | grep -o '[0-9]*$' | head -1; }

start_d() {
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

rm -f "$W/d.ready"
start_d
for i in $(seq 1 $((2 * KILLS))); do
	"$RDCP" --json -r --chunk-size "$CHUNK" --port $PORT "$W/src/t" "127.0.0.1::m/" \
		>"$W/out" 2>&1 &
	cpid=$!
	touch "$W/mark"
	n=0
	while [ ! "$W/mod/t/.rdcp-partial.big.rec" -nt "$W/mark" ] && [ $n -lt 300 ]; do
		sleep 0.02
		n=$((n + 1))
	done
	sleep "0.$((RANDOM % 5))"
	lines=$(wc -l <"$W/d.log")
	if [ $((i % 2)) -eq 1 ]; then
		who=receiver
		kill -9 "$(cat "$W/d.pid")"
		wait "$cpid"
		total=$((total + $(num bytes_moved "$W/out")))
		rm -f "$W/d.ready"
		wait "$(cat "$W/d.pid")" 2>/dev/null
		start_d
	else
		who=sender
		kill -9 "$cpid"
		wait "$cpid" 2>/dev/null
		sleep 0.5
		got=$(tail -n +$((lines + 1)) "$W/d.log" | grep -o '[0-9]* bytes moved' | tail -1 | grep -o '^[0-9]*')
		total=$((total + ${got:-0}))
	fi
	grep -q '"bytes_resumed": *[1-9]' "$W/out" && reused=$((reused + 1))
	bad=$(finals_ok)
	[ -n "$bad" ] && fail "after killing the $who ($i): wrong final files: $bad"
	echo "kill $i ($who): total moved so far $total"
done
"$RDCP" --json -r --chunk-size "$CHUNK" --port $PORT "$W/src/t" "127.0.0.1::m/" >"$W/out" 2>&1
rc=$?
total=$((total + $(num bytes_moved "$W/out")))
[ $rc -eq 0 ] || { fail "last run exit $rc"; cat "$W/out"; }
diff -r "$W/src/t" "$W/mod/t" >/dev/null || fail "final tree differs"
[ -z "$(find "$W/mod" -name '.rdcp*' -print -quit)" ] || fail "litter: $(find "$W/mod" -name '.rdcp*')"
echo "data $DATA bytes; moved over $((2 * KILLS + 1)) runs: $total ($(awk "BEGIN{printf \"%.2f\", $total / $DATA}") x); runs that resumed: $reused"
[ "$total" -le $((DATA * 12 / 10)) ] || fail "moved more than 1.2 x the data"
echo "soak: $fails failures"
[ $fails -eq 0 ]
