# shellcheck shell=bash
# Multi-rail copies (issue 12), two VMs booted with rig.sh --rails 2: each VM
# has rxe0 on eth0 (10.77.2.x) and rxe1 on eth1 (10.77.3.x). a runs rdcpd on
# every address (the default) and a second one with --listen on its eth0
# address alone; b is the client. Against the first, --lanes 2 (and 4) spread
# the lanes over both devices: -v says "rdcp: rails: 2 (rxe0, rxe1)", each
# lane line names its device, and both devices' counters grow, push and pull.
# --lanes 1, and the daemon that listens on one address, stay on rxe0 and say
# no rails line. What b pushed is checked byte for byte on a too (digests
# through RIG_SHARED), and pulled back or diffed on b.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SH=$RIG_SHARED
: "${RIG_PEER_IP2:?boot the rig with --rails 2}"
MIB=$((1 << 20))
# What each rail must carry of a 48 MiB copy over both: round robin gives
# it about 24 MiB; half that leaves room for an uneven spread.
RAIL_MIN_MB=${RAIL_MIN_MB:-12}
# What a rail that should be idle may still carry (CM, stray ARP/ACKs).
IDLE_MAX_MB=1

# --- the rails' counters, on this VM ---
# rail_ctr DEV sent|rcvd: "PACKETS BYTES" the device has carried that way.
# An HCA's counters/port_{xmit,rcv}_data count 4-byte words; Soft-RoCE has
# no counters/ directory (the rig's rxe0 and rxe1 have hw_counters alone):
# there the packets are hw_counters/{sent,rcvd}_pkts, as rig_selftest (i)
# reads them, and the bytes those of the device's netdev (eth0, eth1: each
# rail's wire carries nothing else).
rail_ctr() {
	local p=/sys/class/infiniband/$1/ports/1 w=xmit k=tx nd
	[ "$2" = rcvd ] && { w=rcv; k=rx; }
	if [ -r "$p/counters/port_${w}_data" ] && [ -r "$p/counters/port_${w}_packets" ]; then
		echo "$(cat "$p/counters/port_${w}_packets") $(($(cat "$p/counters/port_${w}_data") * 4))"
		return
	fi
	nd=$(cat "$p/gid_attrs/ndevs/0" 2>/dev/null) || nd=""
	echo "$(cat "$p/hw_counters/${2}_pkts" 2>/dev/null || echo 0)" \
		"$(cat "/sys/class/net/$nd/statistics/${k}_bytes" 2>/dev/null || echo 0)"
}

declare -A CTR0
# snap: every rail's counters now (before a copy)
snap() {
	local d w
	for d in rxe0 rxe1; do
		for w in sent rcvd; do CTR0[$d.$w]=$(rail_ctr "$d" "$w"); done
	done
}

# moved DEV sent|rcvd: sets MP, MB (packets, bytes) since snap
moved() {
	local p0 b0 p1 b1 now
	now=$(rail_ctr "$1" "$2") # (no <(...): the guest has no /dev/fd)
	read -r p0 b0 <<<"${CTR0[$1.$2]}"
	read -r p1 b1 <<<"$now"
	MP=$((p1 - p0))
	MB=$((b1 - b0))
}

# carried DEV sent|rcvd MiB: the device carried at least MiB that way since
# snap: that many bytes on its wire, and at least as many packets as the
# largest MTU (4096) needs for them.
carried() {
	moved "$1" "$2"
	echo "    ($1 $2 since the copy began: $MP packets, $((MB / MIB)) MiB)"
	[ "$MB" -ge $(($3 * MIB)) ] && [ "$MP" -ge $(($3 * MIB / 4096)) ]
}

# idle DEV: the device carried at most IDLE_MAX_MB either way since snap
idle() {
	local mp mb
	moved "$1" sent
	mp=$MP mb=$MB
	moved "$1" rcvd
	echo "    ($1 since the copy began: sent $mp packets, $((mb / 1024)) KiB; received $MP packets, $((MB / 1024)) KiB)"
	[ "$mb" -le $((IDLE_MAX_MB * MIB)) ] && [ "$MB" -le $((IDLE_MAX_MB * MIB)) ] &&
		[ "$mp" -le $((IDLE_MAX_MB * MIB / 1024)) ] && [ "$MP" -le $((IDLE_MAX_MB * MIB / 1024)) ]
}

# reach ADDR [DEV]: wait (5 s at most) until ADDR answers a ping (through DEV)
reach() {
	local i
	for i in $(seq 1 50); do
		ping -c 1 -W 1 ${2:+-I "$2"} "$1" >/dev/null 2>&1 && return 0
		nap 0.1
	done
	return 1
}

# lane_wrote K [DEV]: -v's line says lane K wrote a non-zero count of bytes
# (on DEV, when given)
lane_wrote() {
	if [ -n "${2:-}" ]; then
		grep -q "^rdcp: lane $1: [1-9][0-9]* bytes written from here on $2\$" /tmp/out
	else
		grep -q "^rdcp: lane $1: [1-9][0-9]* bytes written from here" /tmp/out
	fi
}

# both CMD1... -- CMD2...: both commands succeed
both() {
	local a=()
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	"${a[@]}" && "$@"
}

# sums NAME PATH DEST: a's copy of what b sent as DEST (relative to a's
# /tmp) must have PATH's digest; a checks them all at the end (NAME: the case)
sums() {
	mkdir -p "$SH/sums"
	echo "$(sha256sum <"$2" | cut -d' ' -f1)  $3" >>"$SH/sums/$1"
}

sums_ok() { (cd /tmp && sha256sum --quiet -c "$1"); }

# verify_sums: check (once) every case's digests that came so far
verify_sums() {
	local f
	mkdir -p /tmp/sums-done
	for f in "$SH"/sums/*; do
		[ -e "$f" ] || continue
		[ -e "/tmp/sums-done/${f##*/}" ] && continue
		check "on the daemon's side, byte for byte: ${f##*/} ($(wc -l <"$f") files)" \
			sums_ok "$f"
		touch "/tmp/sums-done/${f##*/}"
	done
}

# make_rails_tree DIR: 40 files of mixed sizes in nested directories, one of
# 8 MiB, some empty, some just around a 4 KiB page.
make_rails_tree() {
	local d=$1 i n=0 s
	mkdir -p "$d/one/two/three" "$d/four" "$d/empty dir"
	head -c $((8 * MIB)) /dev/urandom >"$d/one/eight-mib.bin"
	for s in 0 1 100 4095 4096 4097 65535 65536 65537 $((MIB - 1)) "$MIB" $((MIB + 1)) \
		$((3 * MIB)) 0 7; do
		n=$((n + 1))
		head -c "$s" /dev/urandom >"$d/one/two/s$n"
	done
	for i in $(seq 1 24); do
		case $((i % 3)) in
		0) s=$d ;;
		1) s=$d/four ;;
		2) s=$d/one/two/three ;;
		esac
		head -c $(((i * i * 7919) % 200000)) /dev/urandom >"$s/f$i"
	done
}

# The memory budget counts rails (case 13). A daemon that switches to
# 'user' keeps no CAP_IPC_LOCK, and the kernel charges ulimit -l for every
# registration: each rail registers the pool and the sends again. Per
# session, with the default control depth (64 receives, 68 sends of 16 KiB)
# and an 8 MiB pool over the 2 rails here:
#   pinned  = 8 MiB + 132 x 16 KiB + 64 x 16 KiB (rail 1's receives) = 11,599,872
#   charged = 2 x (8 MiB + 132 x 16 KiB)                            = 21,102,592
# A 40 MiB budget holds 3 such sessions; the limit set before the switch:
# 3 x charged + 16 MiB = 80,084,992 bytes.
UPORT=18730
U_CHARGED=21102592
U_MEMLOCK=80084992
budget_server() {
	mkdir -p /tmp/modu && chmod 1777 /tmp/modu || return 1
	cat >/tmp/budget.conf <<-EOF
		port = $UPORT
		user = nobody
		group = nogroup
		memory budget = 40M
		max lanes = 2
		[u]
		    path = /tmp/modu
		    auth = none
	EOF
	(ulimit -l 64 && start_daemon_auth u --config /tmp/budget.conf --pool-size 8M) || return 1
	check "13. rdcpd (user nobody): 40 MiB allow 3 sessions of 8 MiB pools over 2 rails" \
		grep -q "memory budget 40 MiB (set in the configuration) allows 3 connections: each pins up to 12 MiB (a 8 MiB pool and control buffers, over up to 2 rails)" /tmp/u.log
	check "    its locked-memory limit is what 3 sessions over 2 rails are charged" \
		grep -qE "^Max locked memory +$U_MEMLOCK +" "/proc/$(cat /tmp/u.pid)/limits"
	grep -E "^(Uid|CapEff):" "/proc/$(cat /tmp/u.pid)/status" | sed 's/^/    /'
	# its pinned memory (what ulimit -l is charged), sampled until b is done
	status_peak "$(cat /tmp/u.pid)" VmPin "$SH/client-done" /tmp/u.vmpin &
}

server() {
	mkdir -p /tmp/mod /tmp/mod2 || return 1
	# Every address (no 'listen'), up to 4 lanes a session.
	cat >/tmp/rdcpd.conf <<-EOF
		# rdcpd.conf of the rails test
		port = $PORT
		max lanes = 4
		[m]
		    path = /tmp/mod
		    auth = none
		    uid = root
	EOF
	start_daemon d --config /tmp/rdcpd.conf || return 1
	check "rdcpd (rdcpd.conf): up to 4 lanes a session" \
		grep -q "up to 4 lanes (rdcpd.conf)" /tmp/d.log
	# One address alone: eth0's (rxe0's).
	start_daemon l --port 18720 --listen "$RIG_SELF_IP" --module m=/tmp/mod2 || return 1
	check "rdcpd --listen $RIG_SELF_IP listens there alone" \
		grep -qE "listening on port 18720: $RIG_SELF_IP:18720( |\$)" /tmp/l.log
	grep -h 'listening\|each connection' /tmp/d.log /tmp/l.log | sed 's/^/    /'
	budget_server || return 1
	# sshd for the scp-like mode (the remote half listens on every address)
	mkdir -p /run/sshd /tmp/sshdst && chmod 0755 /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f /tmp/hostkey || return 1
	wait_for "$SH/client.pub" 120 || return 1
	cp "$SH/client.pub" /tmp/authorized_keys && chmod 0600 /tmp/authorized_keys
	: >/tmp/sshd_config
	/usr/sbin/sshd -f /tmp/sshd_config -E /tmp/sshd.log -o StrictModes=no \
		-o PermitRootLogin=prohibit-password -o PasswordAuthentication=no \
		-o KbdInteractiveAuthentication=no -o UsePAM=no -o PubkeyAuthentication=yes \
		-p 2222 -h /tmp/hostkey -o AuthorizedKeysFile=/tmp/authorized_keys \
		-o PidFile=/tmp/sshd.pid || return 1
	v6 1 || { fail "IPv6 addresses on a"; return 1; }
	touch "$SH/server-ready"

	# What the client pushed, byte for byte here: the first cases' files
	# when it asks (then they go: this tmpfs is small), the rest at the end.
	while [ ! -e "$SH/client-done" ] && [ ! -e "$SH/prune" ]; do nap 0.2; done
	verify_sums
	rm -rf /tmp/mod/* /tmp/mod2/* /tmp/sshdst/* /tmp/modu/*
	touch "$SH/pruned"
	wait_for "$SH/client-done" 840 || return 1
	verify_sums
	check "the client's pushes were all checked here" [ -e "$SH/sums/case1" ]
	check "the ssh-started push was checked here too" [ -e "$SH/sums/case11" ]
	check "rdcpd (every address) still alive" daemon_alive d
	check "rdcpd --listen still alive" daemon_alive l
	check "rdcpd (user nobody) still alive" daemon_alive u
	# A set of buffers that cannot register more stays smaller and the copy
	# goes on (rd_engine_bufs.c), so the three pushes pass either way: what
	# shows the limit holds them is that all three had their whole pools on
	# both rails at once.
	local pin
	wait_for /tmp/u.vmpin 30
	pin=$(cat /tmp/u.vmpin 2>/dev/null || echo 0)
	check "13. rdcpd (user nobody) pinned 3 sessions' pools on both rails at once (VmPin peak $pin KiB >= $((3 * U_CHARGED / 1024)))" \
		[ "$pin" -ge $((3 * U_CHARGED / 1024)) ]
	check "    and no more than its limit ($((U_MEMLOCK / 1024)) KiB)" [ "$pin" -le $((U_MEMLOCK / 1024)) ]
	check "rdcpd logged the lanes that failed over" \
		grep -q "lane [01] over rxe[01] failed (the peer stopped acknowledging); 1 lane went on" \
		/tmp/d.log
	sed 's/^/    d| /' /tmp/d.log | tail -20
	sed 's/^/    l| /' /tmp/l.log | tail -8
	stop_daemon d
	stop_daemon l
	stop_daemon u
	kill "$(cat /tmp/sshd.pid)" 2>/dev/null
}

client() {
	local S=$1 k
	mkdir -p /tmp/src /tmp/pull
	head -c $((48 * MIB)) /dev/urandom >/tmp/src/m48.bin

	# 1. push 48 MiB over two lanes: one on each rail
	snap
	run -v --lanes 2 /tmp/src/m48.bin "$S::m/rails.bin"
	check "1. push 48 MiB with --lanes 2" [ "$RC" -eq 0 ]
	sums case1 /tmp/src/m48.bin mod/rails.bin
	check "  over 2 lanes (-v)" out_has "^rdcp: 2 lanes (RC queue pairs): asked for 2 (--lanes)"
	check "  over 2 rails (-v: rdcp: rails: 2 (rxe0, rxe1))" out_has "^rdcp: rails: 2 (rxe0, rxe1)\$"
	check "  lane 0 wrote bytes" lane_wrote 0
	check "  lane 1 wrote bytes" lane_wrote 1
	check "  lane 0 on rxe0" lane_wrote 0 rxe0
	check "  lane 1 on rxe1" lane_wrote 1 rxe1
	# 2. the devices' own counters: both carried the data
	check "2. rxe0 sent at least $RAIL_MIN_MB MiB of it" carried rxe0 sent "$RAIL_MIN_MB"
	check "   rxe1 sent at least $RAIL_MIN_MB MiB of it" carried rxe1 sent "$RAIL_MIN_MB"

	# 1b. --lanes 1 (Soft-RoCE's default): one device, no rails line
	snap
	run -v --lanes 1 /tmp/src/m48.bin "$S::m/one-lane.bin"
	check "1b. push 48 MiB with --lanes 1" [ "$RC" -eq 0 ]
	sums case1b /tmp/src/m48.bin mod/one-lane.bin
	check "  over 1 lane (-v)" out_has "^rdcp: 1 lane (RC queue pairs): asked for 1"
	check "  no rails line" not out_has "^rdcp: rails:"
	check "  rxe0 sent it" carried rxe0 sent "$((48 * 9 / 10))"
	check "  rxe1 stayed idle" idle rxe1

	# 13. three sessions at once, each over both rails with its whole 8 MiB
	# pool, to a daemon that runs without CAP_IPC_LOCK: the locked-memory
	# limit it set itself must hold them all (server side: budget_server)
	local pids=() rc=0
	for k in 1 2 3; do
		"$RDCP" -v --lanes 2 --port "$UPORT" /tmp/src/m48.bin "$S::u/c$k.bin" \
			>"/tmp/c$k.out" 2>&1 &
		pids+=($!)
	done
	for k in 1 2 3; do
		wait "${pids[$((k - 1))]}" || rc=$?
		sed "s/^/    c$k| /" "/tmp/c$k.out" | grep -v '%' | tail -6
		sums case13 /tmp/src/m48.bin "modu/c$k.bin"
	done
	check "13. three pushes at once to rdcpd (user nobody), 2 lanes each" [ "$rc" -eq 0 ]
	check "    each over both rails" \
		[ "$(grep -l '^rdcp: rails: 2 (rxe0, rxe1)$' /tmp/c[123].out | wc -l)" -eq 3 ]

	# 3. pull it back over two lanes: the client receives on both rails
	snap
	run -v --lanes 2 "$S::m/rails.bin" /tmp/pull/rails.bin
	check "3. pull 48 MiB with --lanes 2: byte for byte" cmp /tmp/src/m48.bin /tmp/pull/rails.bin
	check "  exit 0" [ "$RC" -eq 0 ]
	check "  over 2 lanes (-v)" out_has "^rdcp: 2 lanes (RC queue pairs): asked for 2 (--lanes)"
	check "  over 2 rails (-v)" out_has "^rdcp: rails: 2 (rxe0, rxe1)\$"
	check "  rxe0 received at least $RAIL_MIN_MB MiB" carried rxe0 rcvd "$RAIL_MIN_MB"
	check "  rxe1 received at least $RAIL_MIN_MB MiB" carried rxe1 rcvd "$RAIL_MIN_MB"
	rm -f /tmp/pull/rails.bin

	# 4. four lanes over the two rails
	snap
	run -v --lanes 4 /tmp/src/m48.bin "$S::m/rails4.bin"
	check "4. push 48 MiB with --lanes 4" [ "$RC" -eq 0 ]
	sums case4 /tmp/src/m48.bin mod/rails4.bin
	check "  over 4 lanes (-v)" out_has "^rdcp: 4 lanes (RC queue pairs): asked for 4 (--lanes)"
	check "  over 2 rails (-v)" out_has "^rdcp: rails: 2 (rxe0, rxe1)\$"
	for k in 0 1 2 3; do
		check "  lane $k wrote bytes" lane_wrote "$k"
	done
	check "  lanes on rxe0 and on rxe1" both out_has "bytes written from here on rxe0\$" \
		-- out_has "bytes written from here on rxe1\$"
	check "  rxe0 sent at least $RAIL_MIN_MB MiB" carried rxe0 sent "$RAIL_MIN_MB"
	check "  rxe1 sent at least $RAIL_MIN_MB MiB" carried rxe1 sent "$RAIL_MIN_MB"
	run --lanes 4 "$S::m/rails4.bin" /tmp/pull/rails4.bin
	check "  pulled back with --lanes 4: byte for byte" cmp /tmp/src/m48.bin /tmp/pull/rails4.bin
	rm -f /tmp/pull/rails4.bin

	# 5. a daemon listening on eth0's address alone: two lanes, one rail
	snap
	run -v --lanes 2 /tmp/src/m48.bin "rdcp://$S:18720/m/one-rail.bin"
	check "5. --listen $S: push 48 MiB with --lanes 2" [ "$RC" -eq 0 ]
	sums case5 /tmp/src/m48.bin mod2/one-rail.bin
	check "  over 2 lanes (-v)" out_has "^rdcp: 2 lanes (RC queue pairs): asked for 2 (--lanes)"
	check "  no rails line" not out_has "^rdcp: rails:"
	check "  both lanes wrote bytes" both lane_wrote 0 -- lane_wrote 1
	check "  lane 1 on rxe0" lane_wrote 1 rxe0
	check "  rxe0 sent it all" carried rxe0 sent "$((48 * 9 / 10))"
	check "  rxe1 stayed idle (at most $IDLE_MAX_MB MiB)" idle rxe1
	run --lanes 2 "rdcp://$S:18720/m/one-rail.bin" /tmp/pull/one-rail.bin
	check "  pulled back byte for byte" cmp /tmp/src/m48.bin /tmp/pull/one-rail.bin
	rm -f /tmp/pull/one-rail.bin

	# 5b. --rdma-devices: rxe0 alone keeps both lanes there; rxe1 alone is
	# not where the route to the daemon goes: refused before connecting
	run -v --lanes 2 --rdma-devices rxe0 /tmp/src/m48.bin "$S::m/devs.bin"
	check "5b. --rdma-devices rxe0: push with --lanes 2" [ "$RC" -eq 0 ]
	sums case5b /tmp/src/m48.bin mod/devs.bin
	check "  no rails over 2 devices" not out_has "^rdcp: rails: 2"
	check "  lane 1 on rxe0" lane_wrote 1 rxe0
	check "  -v says why lane 1 stayed" out_has "^rdcp: rails: lane 1: .*not --rdma-devices"
	run --lanes 2 --rdma-devices rxe1 /tmp/src/m48.bin "$S::m/devs1.bin"
	check "  --rdma-devices rxe1: exit 1 (usage)" [ "$RC" -eq 1 ]
	check "  names the device the route takes" out_has "goes through RDMA device rxe0, which --rdma-devices rxe1 leaves out"
	run --lanes 2 --rdma-devices rxe0,rxe1 /tmp/src/m48.bin "$S::m/devs2.bin"
	check "  --rdma-devices rxe0,rxe1: as without it" [ "$RC" -eq 0 ]
	sums case5c /tmp/src/m48.bin mod/devs2.bin
	run --rdma-devices ',rxe0' /tmp/src/m48.bin "$S::m/devs3.bin"
	check "  --rdma-devices ',rxe0': a usage error naming the option" \
		both [ "$RC" -eq 1 ] -- out_has "rdma-devices ',rxe0'"

	# 5b'. --one-rail: both lanes on rxe0 although the server names rxe1
	snap
	run -v --lanes 2 --one-rail /tmp/src/m48.bin "$S::m/one.bin"
	check "5b'. --one-rail: push with --lanes 2" [ "$RC" -eq 0 ]
	sums case5e /tmp/src/m48.bin mod/one.bin
	check "  no rails line" not out_has "^rdcp: rails:"
	check "  lane 1 on rxe0" lane_wrote 1 rxe0
	check "  rxe1 stayed idle" idle rxe1

	# 5c. the server's rail unreachable from here (all this VM sends on
	# eth1 dropped): lane 1 gives up on it after 3 s and runs beside lane 0
	tc qdisc add dev eth1 root netem loss 100%
	snap
	run -v --lanes 2 /tmp/src/m48.bin "$S::m/unreach.bin"
	tc qdisc del dev eth1 root
	check "5c. rail 1 unreachable: push with --lanes 2 still works" [ "$RC" -eq 0 ]
	sums case5d /tmp/src/m48.bin mod/unreach.bin
	check "  -v says lane 1 could not use the server's rail" \
		out_has "^rdcp: rails: lane 1: the server's rail was unusable from here, so it runs beside lane 0"
	check "  lane 1 on rxe0" lane_wrote 1 rxe0
	reach "$RIG_PEER_IP2" eth1

	# 6. a tree with -r over two rails
	make_rails_tree /tmp/src/tree
	(cd /tmp/src && find tree -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
		sed 's,  tree/,  mod/tree/,') >"$SH/sums/case6"
	snap
	run -v -r --lanes 2 /tmp/src/tree "$S::m/"
	check "6. push a tree of $(find /tmp/src/tree -type f | wc -l) files (one of 8 MiB) with -r --lanes 2" \
		[ "$RC" -eq 0 ]
	check "  over 2 rails (-v)" out_has "^rdcp: rails: 2 (rxe0, rxe1)\$"
	check "  lane 1 wrote bytes on rxe1" lane_wrote 1 rxe1
	run -r --lanes 2 "$S::m/tree" /tmp/pull/
	check "  pulled back with --lanes 2: diff -r finds nothing" diff -r /tmp/src/tree /tmp/pull/tree
	check "  and every entry is there" same_tree /tmp/src/tree /tmp/pull/tree
}

# cut_when DEV COUNTER MIB: once the rail of netdev DEV has COUNTER
# (sent|rcvd, its rxe's packets x 4 KiB) past MIB since snap, drop
# everything this VM sends on DEV (netem loss 100%): the rail is cut
# mid-copy. Run in the background beside the copy.
cut_when() {
	local rxe=rxe0 i=0
	[ "$1" = eth1 ] && rxe=rxe1
	while [ "$i" -lt 1200 ]; do
		moved "$rxe" "$2"
		[ "$MP" -ge $(($3 * 256)) ] && break
		i=$((i + 1))
		nap 0.05
	done
	tc qdisc add dev "$1" root netem loss 100%
	echo "    (cut $1 after $rxe $2 $MP packets)"
}

# failover NAME DEV sent|rcvd SAYS ARGS...: copy ARGS with --lanes 2 while
# cut_when cuts DEV; the copy must finish, and (SAYS=1) say its lane failed
# over: the side that loses a lane is the one that was sending on it (in a
# pull with rail 1 cut, only the daemon, which logs it)
failover() {
	local what=$1 dev=$2 ctr=$3 says=$4 cutter
	shift 4
	snap
	cut_when "$dev" "$ctr" 8 &
	cutter=$!
	run -v --lanes 2 "$@"
	wait "$cutter"
	tc qdisc del dev "$dev" root 2>/dev/null
	check "$what: finished (exit 0)" [ "$RC" -eq 0 ]
	[ "$says" = 1 ] && check "  rdcp says a lane failed over" \
		out_has "^rdcp: lane [01] over rxe[01] failed (the peer stopped acknowledging); 1 lane went on"
	# the rail works again before the next case
	if [ "$dev" = eth1 ]; then reach "$RIG_PEER_IP2" eth1; else reach "$RIG_PEER_IP" eth0; fi
}

# 7-9. One rail cut mid-copy (issue 12): the copy finishes on the other.
# A lane whose peer stops acknowledging fails alone; what it had in flight
# goes again on the live lane. --checksum-choice none in two of them: only the
# transport's care (a slot written again is not overwritten by an old
# write) keeps the bytes right there.
client_failover() {
	local S=$1
	head -c $((160 * MIB)) /dev/urandom >/tmp/src/m160.bin
	failover "7. push 160 MiB, rail 1 (eth1) cut mid-copy" eth1 sent 1 \
		/tmp/src/m160.bin "$S::m/cut1.bin"
	sums case7 /tmp/src/m160.bin mod/cut1.bin
	failover "8. push 160 MiB --checksum-choice none, rail 0 (eth0, lane 0's) cut mid-copy" \
		eth0 sent 1 --checksum-choice none /tmp/src/m160.bin "$S::m/cut0.bin"
	sums case8 /tmp/src/m160.bin mod/cut0.bin
	failover "9. pull 160 MiB --checksum-choice none, rail 0 cut mid-copy" eth0 rcvd 1 \
		--checksum-choice none "$S::m/cut1.bin" /tmp/pull/cut1.bin
	check "  pulled byte for byte" cmp /tmp/src/m160.bin /tmp/pull/cut1.bin
	rm -f /tmp/pull/cut1.bin
	failover "10. pull 160 MiB, rail 1 cut mid-copy" eth1 rcvd 0 \
		"$S::m/cut0.bin" /tmp/pull/cut0.bin
	check "  pulled byte for byte" cmp /tmp/src/m160.bin /tmp/pull/cut0.bin
	rm -f /tmp/pull/cut0.bin /tmp/src/m160.bin
}

# v6 N: this VM's IPv6 addresses on both wires (fd10::N on eth0, fd11::N
# on eth1), and wait until each rxe has the GID for it
v6() {
	local i
	ip -6 addr add "fd10::$1/64" dev eth0 nodad || return 1
	ip -6 addr add "fd11::$1/64" dev eth1 nodad || return 1
	for i in $(seq 1 100); do
		grep -qs '^fd10:' /sys/class/infiniband/rxe0/ports/1/gids/* &&
			grep -qs '^fd11:' /sys/class/infiniband/rxe1/ports/1/gids/* && return 0
		nap 0.1
	done
	return 1
}

# 12. Rails over IPv6: lane 0 to fd10::1, the server names fd11::1
client_v6() {
	check "12. IPv6 on both wires (fd10::2, fd11::2) with their GIDs" v6 2
	reach fd11::1
	# (16 MiB: a's tmpfs holds the failover cases' files after this)
	head -c $((16 * MIB)) /tmp/src/m48.bin >/tmp/src/m16.bin
	run -v --lanes 2 /tmp/src/m16.bin "[fd10::1]::m/v6.bin"
	check "  push 16 MiB to [fd10::1] with --lanes 2" [ "$RC" -eq 0 ]
	sums case12 /tmp/src/m16.bin mod/v6.bin
	check "  over 2 rails (-v)" out_has "^rdcp: rails: 2 (rxe0, rxe1)\$"
	check "  lane 1 wrote bytes on rxe1" lane_wrote 1 rxe1
}

# 11. The scp-like mode: the remote half, started over ssh, listens on
# every address of a and names its other rail too.
client_ssh() {
	local S=$1 SSHE="ssh -p 2222 -i /tmp/key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=20"
	run -v --lanes 2 -e "$SSHE" --remote-rdcp "$RDCP" /tmp/src/m48.bin "$S:/tmp/sshdst/ssh.bin"
	check "11. ssh mode: push 48 MiB with --lanes 2" [ "$RC" -eq 0 ]
	sums case11 /tmp/src/m48.bin sshdst/ssh.bin
	check "  over 2 rails (-v)" out_has "^rdcp: rails: 2 (rxe0, rxe1)\$"
	check "  lane 1 wrote bytes on rxe1" lane_wrote 1 rxe1
	run --lanes 2 -e "$SSHE" --remote-rdcp "$RDCP" "$S:/tmp/sshdst/ssh.bin" /tmp/pull/ssh.bin
	check "  pulled back over ssh, byte for byte" cmp /tmp/src/m48.bin /tmp/pull/ssh.bin
	rm -f /tmp/pull/ssh.bin
}

case "$RIG_ROLE" in
a)
	server || {
		touch "$SH/server-failed" "$SH/server-ready"
		fail "server side"
	}
	;;
b)
	# whatever happens here, a stops waiting (set -u ends a script early)
	trap 'touch "$SH/client-done"' EXIT
	ssh-keygen -q -t ed25519 -N '' -f /tmp/key && cp /tmp/key.pub "$SH/client.pub"
	if ! wait_for "$SH/server-ready" 120 || [ -e "$SH/server-failed" ]; then
		fail "no server"
	elif [ ! -e /sys/class/infiniband/rxe1 ]; then
		fail "no rxe1 here (rig.sh --rails 2)"
	else
		client "$(br "$RIG_PEER_IP")"
		client_ssh "$RIG_PEER_IP"
		client_v6
		# a checks what came so far and makes room for the big files
		touch "$SH/prune"
		wait_for "$SH/pruned" 120
		client_failover "$(br "$RIG_PEER_IP")"
	fi
	;;
esac
finish
