# shellcheck shell=bash
# rdcpd with 16 clients at once (8 pushes, 8 pulls of the same module) and a
# SIGTERM while some are still running: every copy byte-exact, the daemon
# stops with status 0. Built with --config=tsan this is the daemon's
# concurrent-client test under ThreadSanitizer (issue 7, "Also"): any TSan
# report in the daemon's or a client's output fails it.
#   bazel test --config=tsan //tests/e2e:concurrent_tcp_host_test
# Runs on a host over TCP (host_test.sh, mode 1) and in the rig alike.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
CP=18724
S=$RIG_SELF_IP
N=${CONCURRENT_CLIENTS:-8}
# Under TSan everything runs 5-15 times slower and each 64 MiB pool gets its
# shadow memory: small pools and patient timeouts (silence is not the test).
TSAN=no
grep -q __tsan_init "$RDCPD" 2>/dev/null && TSAN=yes
CO="--pool-size 4M"
[ "$TSAN" = yes ] && CO="$CO --timeout 300"

mkdir -p /tmp/cm /tmp/csrc /tmp/cpull
for i in $(seq 1 "$N"); do
	mkdir -p "/tmp/csrc/t$i/d"
	head -c $((300000 * i)) /dev/urandom >"/tmp/csrc/t$i/f.bin"
	for j in 1 2 3 4 5; do echo "$i $j" >"/tmp/csrc/t$i/d/s$j"; done
done
make_tree /tmp/cm/seed
start_daemon conc --module "m=/tmp/cm" --port "$CP" --max-conns 32 \
	--max-conns-per-host 32 --pool-size 4M $([ "$TSAN" = yes ] && echo --timeout 300) || exit 1

t0=$(date +%s)
pids=""
for i in $(seq 1 "$N"); do
	"$RDCP" -q $CO -r "/tmp/csrc/t$i" "rdcp://$S:$CP/m/" >"/tmp/cpush$i.out" 2>&1 &
	pids="$pids $!"
	"$RDCP" -q $CO -r "rdcp://$S:$CP/m/seed/" "/tmp/cpull/seed$i" >"/tmp/cpull$i.out" 2>&1 &
	pids="$pids $!"
done
failed=0
for p in $pids; do wait "$p" || failed=$((failed + 1)); done
echo "    $((2 * N)) clients at once: $failed failed, $(($(date +%s) - t0)) s"
if [ "$failed" -ne 0 ]; then
	cat /tmp/cpush*.out /tmp/cpull*.out | head -40
	grep -v -e ": connected " -e ": authenticated " /tmp/conc.log | tail -40 | sed 's/^/    log| /'
fi
check "$((2 * N)) clients at once ($N push, $N pull): every one exits 0" [ "$failed" -eq 0 ]
bad=0
for i in $(seq 1 "$N"); do
	same_tree "/tmp/csrc/t$i" "/tmp/cm/t$i" >/dev/null || bad=$((bad + 1))
	same_tree /tmp/cm/seed "/tmp/cpull/seed$i" >/dev/null || bad=$((bad + 1))
done
check "  every tree byte-exact, both ways" [ "$bad" -eq 0 ]

# SIGTERM with sessions in flight: they end or are aborted, the daemon exits 0.
pids=""
for i in $(seq 1 "$N"); do
	"$RDCP" -q $CO -r "rdcp://$S:$CP/m/seed" "/tmp/cpull/late$i" >/dev/null 2>&1 &
	pids="$pids $!"
done
sleep 0.3
kill -TERM "$(cat /tmp/conc.pid)"
wait "$(cat /tmp/conc.pid)"
RC=$?
for p in $pids; do wait "$p"; done
check "SIGTERM with clients in flight: the daemon exits 0" [ "$RC" -eq 0 ]

# ThreadSanitizer (a --config=tsan build) writes its reports to stderr.
if grep -l "ThreadSanitizer" /tmp/conc.log /tmp/cpush*.out /tmp/cpull*.out >/tmp/tsan.files 2>/dev/null; then
	sed -n '/WARNING: ThreadSanitizer/,/^SUMMARY/p' $(cat /tmp/tsan.files) | head -80
fi
check "no ThreadSanitizer report" [ ! -s /tmp/tsan.files ]
echo "    rdcpd built with TSan: $TSAN"
finish
