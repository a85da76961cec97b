#!/usr/bin/env bash
# shellcheck disable=SC2016 # guest commands are single-quoted on purpose
# rig_selftest.sh - checks the Soft-RoCE rig (tests/rig/rig.sh) itself.
# Exits 0 only if every check passes. Takes about 1-2 minutes (warm cache).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RIG="$HERE/rig.sh"
# All rig temp dirs (and so every qemu command line) live under $WORK, which
# lets the leak check find our own qemu processes only.
WORK=$(mktemp -d /tmp/rig-selftest.XXXXXX)
export TMPDIR="$WORK"
trap 'rm -rf "$WORK"' EXIT

PASS=0
FAIL=0
FAILED=()

ok() { PASS=$((PASS + 1)); printf 'PASS %s\n' "$1"; }
bad() {
  FAIL=$((FAIL + 1))
  FAILED+=("$1")
  printf 'FAIL %s\n' "$1"
  if [ -n "${2:-}" ] && [ -f "$2" ]; then sed 's/^/     | /' "$2"; fi
}
leaks() {
  pgrep -f "qemu-system.*$WORK" >/dev/null 2>&1
}
check_no_leak() {
  if leaks; then
    bad "$1: no qemu left running"
    local pid
    for pid in $(pgrep -f "qemu-system.*$WORK"); do
      ps -o pid=,args= -p "$pid" | cut -c1-100
      kill -KILL "$pid" 2>/dev/null || true
    done
  else
    ok "$1: no qemu left running"
  fi
}

echo "== prepare"
if "$RIG" prepare >"$WORK/prep.log" 2>&1; then ok "prepare"; else bad "prepare" "$WORK/prep.log"; fi
start=$(date +%s%N)
"$RIG" prepare >/dev/null 2>&1
warm_ms=$((($(date +%s%N) - start) / 1000000))
if [ "$warm_ms" -lt 1500 ]; then ok "prepare warm in ${warm_ms} ms"; else bad "prepare warm took ${warm_ms} ms"; fi

echo "== (a)+(b) run1 true / exit 3, in parallel"
"$RIG" run1 --timeout 120 -- true >"$WORK/a.log" 2>&1 &
pa=$!
"$RIG" run1 --timeout 120 -- 'exit 3' >"$WORK/b.log" 2>&1 &
pb=$!
wait "$pa"; sa=$?
wait "$pb"; sb=$?
if [ "$sa" = 0 ]; then ok "(a) run1 true exits 0"; else bad "(a) run1 true exits 0 (got $sa)" "$WORK/a.log"; fi
if [ "$sb" = 3 ]; then ok "(b) run1 'exit 3' exits 3"; else bad "(b) run1 'exit 3' exits 3 (got $sb)" "$WORK/b.log"; fi
check_no_leak "(a,b) after success/failure"

echo "== (c)+(f) rxe0 in one VM, stdout reaches host, argv form"
marker="rig-marker-$$-$RANDOM"
"$RIG" run1 --timeout 120 -- "echo $marker; echo to-stderr >&2; rdma link; ibv_devices; ibv_devinfo -d rxe0; echo memlock=\$(ulimit -l) cwd=\$PWD role=\$RIG_ROLE self=\$RIG_SELF_IP" \
  >"$WORK/c.out" 2>"$WORK/c.err"
sc=$?
if [ "$sc" = 0 ] && grep -q 'rxe0' "$WORK/c.out" && grep -q 'netdev veth0' "$WORK/c.out" &&
  grep -q 'PORT_ACTIVE' "$WORK/c.out" && grep -Eq 'active_mtu:[[:space:]]+4096' "$WORK/c.out"; then
  ok "(c) rxe0 listed, PORT_ACTIVE, active_mtu 4096"
else
  bad "(c) rxe0 listed, PORT_ACTIVE, active_mtu 4096 (status $sc)" "$WORK/c.out"
fi
if grep -qx "$marker" "$WORK/c.out" && ! grep -q "$marker" "$WORK/c.err" && grep -qx to-stderr "$WORK/c.err"; then
  ok "(f) command stdout reaches host stdout, stderr reaches stderr"
else
  bad "(f) command stdout reaches host stdout" "$WORK/c.err"
fi
if grep -q "memlock=unlimited cwd=$(pwd -P) role=a self=10.77.1.1" "$WORK/c.out"; then
  ok "(c2) memlock unlimited, cwd kept, RIG_* set"
else
  bad "(c2) memlock unlimited, cwd kept, RIG_* set" "$WORK/c.out"
fi
out=$(RIG_MEMLOCK=1024 FOO_RIG_TEST='a b'\''c' RIG_ENV=FOO_RIG_TEST "$RIG" run1 --timeout 120 -- sh -c 'echo "$(ulimit -l)|$FOO_RIG_TEST"' 2>"$WORK/c3.err")
if [ "$out" = "1024|a b'c" ]; then
  ok "(c3) RIG_MEMLOCK and RIG_ENV pass-through, argv form"
else
  bad "(c3) RIG_MEMLOCK and RIG_ENV pass-through (got '$out')" "$WORK/c3.err"
fi

echo "== (d)+(e) run2: shared dir + ping / a fails, in parallel"
"$RIG" run2 --timeout 150 \
  --b 'echo from-b >"$RIG_SHARED/hello" && ping -c1 -W5 "$RIG_PEER_IP" && echo b-done' \
  --a 'for i in $(seq 100); do [ -s "$RIG_SHARED/hello" ] && break; sleep 0.1; done; grep -qx from-b "$RIG_SHARED/hello" && echo a-read-ok && ping -c1 -W5 "$RIG_PEER_IP"' \
  >"$WORK/d.out" 2>"$WORK/d.err" &
pd=$!
"$RIG" run2 --timeout 150 --a 'echo a-fails; exit 7' --b 'echo b-ok' >"$WORK/e.out" 2>"$WORK/e.err" &
pe=$!
wait "$pd"; sd=$?
wait "$pe"; se=$?
if [ "$sd" = 0 ] && grep -qx '\[a\] a-read-ok' "$WORK/d.out" && grep -qx '\[b\] b-done' "$WORK/d.out" &&
  grep -q '^\[a\] 64 bytes from 10.77.2.2' "$WORK/d.out" && grep -q '^\[b\] 64 bytes from 10.77.2.1' "$WORK/d.out"; then
  ok "(d) run2: a reads b's file in RIG_SHARED, both ping each other"
else
  cat "$WORK/d.err" >>"$WORK/d.out"
  bad "(d) run2 shared file + ping (status $sd)" "$WORK/d.out"
fi
if [ "$se" = 7 ] && grep -q 'VM a: command exited 7' "$WORK/e.err" && grep -qx '\[b\] b-ok' "$WORK/e.out"; then
  ok "(e) run2 with failing a exits non-zero (7) and names VM a"
else
  bad "(e) run2 with failing a (status $se)" "$WORK/e.err"
fi
check_no_leak "(d,e) after run2"

echo "== (g) rping between the two VMs (RDMA CM)"
"$RIG" run2 --timeout 150 \
  --b 'rping -s -a "$RIG_SELF_IP" -C 3 -v' \
  --a 'sleep 1; rping -c -a "$RIG_PEER_IP" -C 3 -v' >"$WORK/g.out" 2>"$WORK/g.err"
sg=$?
if [ "$sg" = 0 ] && [ "$(grep -c '^\[a\] ping data: rdma-ping-' "$WORK/g.out")" = 3 ] &&
  [ "$(grep -c '^\[b\] server ping data: rdma-ping-' "$WORK/g.out")" = 3 ]; then
  ok "(g) rping client a <-> server b, 3 pings"
else
  cat "$WORK/g.err" >>"$WORK/g.out"
  bad "(g) rping (status $sg)" "$WORK/g.out"
fi

echo "== (i) run2 --rails 2: a second wire and rxe1, RC traffic on it alone"
"$RIG" run2 --timeout 150 --rails 2 \
  --b 'ibv_rc_pingpong -g 1 -d rxe1 -n 20 >/tmp/pp.log 2>&1 & sleep 0.3; : >"$RIG_SHARED/pp"; wait;
       grep iters /tmp/pp.log; echo "rxe1 rcvd $(cat /sys/class/infiniband/rxe1/ports/1/hw_counters/rcvd_pkts)"' \
  --a 'while [ ! -e "$RIG_SHARED/pp" ]; do sleep 0.2; done; sleep 0.3;
       r0=$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts);
       ibv_rc_pingpong -g 1 -d rxe1 -n 20 "$RIG_PEER_IP2" | grep iters;
       echo "rxe1 sent $(cat /sys/class/infiniband/rxe1/ports/1/hw_counters/sent_pkts)";
       echo "rxe0 sent $(( $(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts) - r0 ))";
       echo "ip2 $RIG_SELF_IP2 $RIG_PEER_IP2"' >"$WORK/i.out" 2>"$WORK/i.err"
si=$?
if [ "$si" = 0 ] && grep -q '^\[a\] 20 iters' "$WORK/i.out" && grep -q '^\[b\] 20 iters' "$WORK/i.out" &&
  grep -q '^\[a\] ip2 10.77.3.1 10.77.3.2$' "$WORK/i.out" &&
  [ "$(sed -n 's/^\[a\] rxe1 sent //p' "$WORK/i.out")" -ge 20 ] &&
  [ "$(sed -n 's/^\[a\] rxe0 sent //p' "$WORK/i.out")" = 0 ]; then
  ok "(i) --rails 2: ibv_rc_pingpong over rxe1 (10.77.3.x), rxe0 carried none of it"
else
  cat "$WORK/i.err" >>"$WORK/i.out"
  bad "(i) --rails 2 (status $si)" "$WORK/i.out"
fi

echo "== (h) timeout"
t0=$(date +%s)
"$RIG" run1 --timeout 20 -- 'echo started; sleep 600' >"$WORK/h.out" 2>"$WORK/h.err"
sh_=$?
t1=$(date +%s)
if [ "$sh_" = 124 ] && [ $((t1 - t0)) -lt 40 ] && grep -qx started "$WORK/h.out"; then
  ok "(h) run1 --timeout 20 exits 124 after $((t1 - t0))s, partial output kept"
else
  bad "(h) timeout (status $sh_, $((t1 - t0))s)" "$WORK/h.err"
fi
check_no_leak "(h) after timeout"

echo
echo "passed: $PASS  failed: $FAIL"
if [ "$FAIL" -ne 0 ]; then
  printf '  failed: %s\n' "${FAILED[@]}"
  exit 1
fi
exit 0
