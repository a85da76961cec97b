# shellcheck shell=bash
# Issue 7 item 10: stopping rdcpd and rdcp by signal, over real RDMA.
#  - rdcpd SIGTERM with a session that ends within the grace period: the
#    session completes, rdcpd exits 0, new clients are refused meanwhile;
#  - rdcpd SIGTERM with a session slower than the grace period (10 s): it
#    is aborted (nothing half-written under a final name in the module; what
#    was verified stays as its partial, issue 11), the workers are joined,
#    rdcpd exits 0 within the grace period plus a little;
#  - rdcp SIGINT / SIGTERM during a pull: exit 20, nothing under the final
#    name, no .rdcp.* temporary, the partial kept; a rerun resumes from it.
# One VM (server and client on the same host).
# shellcheck disable=SC2016 # check ... eval '...' expands later, on purpose
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$(br "$RIG_SELF_IP")
mkdir -p /tmp/mod /tmp/src /tmp/pull
head -c $((64 * 1024 * 1024)) /dev/urandom >/tmp/src/mid.bin
head -c $((192 * 1024 * 1024)) /dev/urandom >/tmp/src/big.bin
# wait_log FILE PATTERN SECONDS [N]: until PATTERN is on more than N lines
wait_log() {
	local i=0
	while [ "$(grep -c "$2" "$1" 2>/dev/null)" -le "${4:-0}" ]; do
		i=$((i + 1))
		[ $i -gt $(($3 * 10)) ] && return 1
		sleep 0.1
	done
}
# wait_verified REC SECONDS: until the partial record REC (72-byte header,
# chunk bitmap, 8-byte check) marks at least one chunk verified, so a signal
# sent now interrupts a copy that has something to keep, however slow the
# start-up was on a loaded machine.
wait_verified() {
	local i=0
	while [ "$(tail -c +73 "$1" 2>/dev/null | head -c -8 | tr -d '\0' | wc -c)" -eq 0 ]; do
		i=$((i + 1))
		[ $i -gt $(($2 * 10)) ] && return 1
		sleep 0.1
	done
}
no_temps() { [ -z "$(find "$1" -name '.rdcp.*' -print -quit)" ]; }
no_litter() { [ -z "$(find "$1" -name '.rdcp*' -print -quit)" ]; }
# A client slow enough to outlast the grace period: one 4 KiB chunk in flight.
SLOW="--depth 1 --chunk-size 4K --timeout 60"
# For the signalled pulls: one chunk at a time, of the size the rerun uses
# (4 MiB, the default), so a chunk verified before the signal is a chunk the
# rerun keeps (a partial kept in 4 KiB chunks resumes only whole 4 MiB ones).
SLOW3="--depth 1 --timeout 60"

# --- 1. SIGTERM, the running session ends within the grace period
start_daemon d1 --module m=/tmp/mod --port 18720 || exit 1
"$RDCP" --timeout 60 /tmp/src/mid.bin "rdcp://$S:18720/m/" >/tmp/c1.out 2>&1 &
CPID=$!
wait_log /tmp/d1.log "connected via" 30
t0=$(date +%s)
kill -TERM "$(cat /tmp/d1.pid)"
running=no
kill -0 $CPID 2>/dev/null && running=yes
sleep 0.5
"$RDCP" --timeout 10 /tmp/src/mid.bin "rdcp://$S:18720/m/late.bin" >/tmp/c1b.out 2>&1
late=$?
wait $CPID
crc=$?
wait "$(cat /tmp/d1.pid)"
drc=$?
t1=$(date +%s)
sed 's/^/    | /' /tmp/c1.out /tmp/c1b.out /tmp/d1.log
check "1: the client was still running when rdcpd got SIGTERM" [ $running = yes ]
check "1: its push completed (exit $crc)" eval '[ $crc -eq 0 ] && cmp -s /tmp/src/mid.bin /tmp/mod/mid.bin'
check "1: a new client after SIGTERM was not served (exit $late)" \
	eval '[ $late -ne 0 ] && [ ! -e /tmp/mod/late.bin ]'
check "1: rdcpd exited 0 (exit $drc) after $((t1 - t0)) s" [ $drc -eq 0 ]
check "1: rdcpd logged that it stopped" grep -q "stopped" /tmp/d1.log
rm -f /tmp/mod/*

# --- 2. SIGTERM, a session slower than the grace period is aborted
start_daemon d2 --module m=/tmp/mod --port 18721 || exit 1
# shellcheck disable=SC2086
"$RDCP" $SLOW /tmp/src/big.bin "rdcp://$S:18721/m/" >/tmp/c2.out 2>&1 &
CPID=$!
wait_log /tmp/d2.log "connected via" 30
sleep 1
t0=$(date +%s)
kill -TERM "$(cat /tmp/d2.pid)"
wait "$(cat /tmp/d2.pid)"
drc=$?
t1=$(date +%s)
wait $CPID
crc=$?
sed 's/^/    | /' /tmp/c2.out /tmp/d2.log
check "2: rdcpd exited 0 (exit $drc)" [ $drc -eq 0 ]
check "2: within the 10 s grace period and a little ($((t1 - t0)) s)" \
	eval '[ $((t1 - t0)) -ge 9 ] && [ $((t1 - t0)) -le 16 ]'
check "2: it said it stopped the session" grep -q "stopping 1 session" /tmp/d2.log
check "2: the client failed (exit $crc)" eval '[ $crc -ne 0 ] && [ $crc -ne 124 ]'
check "2: the client was told why" grep -q "shutting down" /tmp/c2.out
check "2: nothing half-written under the final name" [ ! -e /tmp/mod/big.bin ]
check "2: no temporaries in the module" no_temps /tmp/mod
check "2: what was verified is kept as a partial" [ -e /tmp/mod/.rdcp-partial.big.bin.rec ]
rm -f /tmp/mod/.rdcp-partial.*

# --- 3. rdcp SIGINT and SIGTERM during a pull
mv /tmp/src/big.bin /tmp/mod/big.bin # tmpfs: room for one more copy only
start_daemon d3 --module m=/tmp/mod --port 18722 || exit 1
seen=0
for sig in INT TERM; do
	rm -rf /tmp/pull && mkdir /tmp/pull
	# shellcheck disable=SC2086
	"$RDCP" $SLOW3 "rdcp://$S:18722/m/big.bin" /tmp/pull/ >/tmp/c3.out 2>&1 &
	CPID=$!
	wait_log /tmp/d3.log "connected via" 30 "$seen"
	seen=$((seen + 1))
	wait_verified /tmp/pull/.rdcp-partial.big.bin.rec 60
	alive=no
	kill -0 $CPID 2>/dev/null && alive=yes
	t0=$(date +%s)
	kill -$sig $CPID
	wait $CPID
	crc=$?
	t1=$(date +%s)
	sed 's/^/    | /' /tmp/c3.out
	check "3: SIG$sig: rdcp was still pulling when signalled" [ $alive = yes ]
	check "3: SIG$sig: rdcp exited 20 (exit $crc) within 3 s ($((t1 - t0)) s)" \
		eval '[ $crc -eq 20 ] && [ $((t1 - t0)) -le 3 ]'
	check "3: SIG$sig: nothing under the final name" [ ! -e /tmp/pull/big.bin ]
	check "3: SIG$sig: no temporaries" no_temps /tmp/pull
	check "3: SIG$sig: the partial is kept" [ -e /tmp/pull/.rdcp-partial.big.bin.rec ]
	check "3: SIG$sig: rdcp says what it kept and that the same command resumes" \
		grep -q "^rdcp: interrupted: 0 entries complete and in place (.* moved); run the same command again to resume: complete files are skipped, files in progress continue from what was kept (.rdcp-partial.NAME beside them)$" /tmp/c3.out
done
"$RDCP" --json "rdcp://$S:18722/m/big.bin" /tmp/pull/ >/tmp/c3.out 2>&1
crc=$?
sed 's/^/    | /' /tmp/c3.out
kept=$(grep -o '"bytes_resumed": *[0-9]*' /tmp/c3.out | grep -o '[0-9]*$')
check "3: the rerun resumes the partial (exit $crc, ${kept:-0} bytes kept)" \
	eval '[ $crc -eq 0 ] && [ "${kept:-0}" -gt 0 ]'
check "3: it is byte-exact" cmp /tmp/mod/big.bin /tmp/pull/big.bin
check "3: no litter after it" no_litter /tmp/pull
check "rdcpd still serves after the interrupted pulls" daemon_alive d3
stop_daemon d3
finish
