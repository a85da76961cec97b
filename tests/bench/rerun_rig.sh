#!/usr/bin/env bash
# rerun_rig.sh - the no-change rerun (issue 28) in the Soft-RoCE rig: rdcp -a
# against rsync -a on an unchanged tree of real data, two VMs, one boot.
#
#   bash tests/bench/rerun_rig.sh            100,000 files, 10 GiB (5-8 min in the rig,
#                                            and 1.5 min to make the image once)
#   RERUN_FILES=2000 RERUN_MB=64 RERUN_DIRS=40 bash tests/bench/rerun_rig.sh
#
# The tree (tests/bench/rerun_bench.py's make_tree: random bytes, sizes 0 to
# twice the mean, RERUN_DIRS directories) is made once on the host and packed
# into an ext4 image with `mke2fs -d` (cached in RERUN_CACHE by its size).
# Both VMs get that image as their scratch disk, each with its own
# copy-on-write overlay (rig.sh --disk-a/--disk-b --disk-snapshot, /dev/vda
# on /run/rig/disk; the image itself is never written): the
# same bytes, names, modes and mtimes on both sides (mke2fs keeps whole
# seconds: the ns parts are 0 on both). rdcpd (RDMA, rxe0), an rsync daemon and
# an sshd run on b; a runs the clients:
#   rdcp push   rdcp -a --json TREE/ b::m/tree/
#   rdcp pull   rdcp -a --json b::m/tree/ TREE/
#   rsync push  rsync -a TREE/ rsync://b:8730/m/tree/     (rsync daemon, TCP)
#   rsync pull  rsync -a rsync://b:8730/m/tree/ TREE/
#   rsync ssh   rsync -a -e ssh TREE/ root@b:DISK/tree/   (RERUN_SSH=1)
# First one cold round: page caches dropped in both VMs before each command,
# the scratch disks' sectors read (/sys/block/vda/stat) counted on both sides
# (bytes in the table) and rdcpd's /proc/PID/io (rchar: its read(2)s of
# files and sockets; read_bytes: what it had fetched from a disk). Then
# RERUN_RUNS warm rounds, the tools interleaved; medians. rdcp's --json
# bytes_moved and transferred must be 0 in every run, and the data read from
# the disks must stay below 5 % of the tree: else the run fails (exit 1).
# The report goes to stdout and tests/bench/results/rerun_rig.txt.
#
# Environment: RERUN_FILES=100000 RERUN_MB=10240 RERUN_DIRS=1000 RERUN_RUNS=5
#   RERUN_SSH=1 RERUN_MEM=1536 (MiB per VM) RERUN_CACHE=/var/cache/rdcp-rerun
#   RERUN_BUILD=1 (bazel build first) RERUN_RDCP/RERUN_RDCPD (other binaries)
#   RERUN_TIMEOUT (rig seconds; default 1800 + FILES/50)
#   RERUN_BASE_RDCP and RERUN_BASE_RDCPD: another build (say main before a
#   change), measured in the same boot as "base push" and "base pull",
#   interleaved with the others; its own rdcpd on port 18741
# Exit: 0 every rerun stat-only, 1 a rerun moved or read data, 2 a step
# failed, 3 missing host tool or build failure, 124/125 from the rig.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
FILES=${RERUN_FILES:-100000}
MB=${RERUN_MB:-10240}
DIRS=${RERUN_DIRS:-1000}
RUNS=${RERUN_RUNS:-5}
RDPORT=18740
RSPORT=8730
SSHPORT=2222

# ---------------------------------------------------------------------------
# Guest b: the servers; then it answers a's requests (drop caches, counters).
# ---------------------------------------------------------------------------
# disk: this VM's vda sectors read and written, after a sync (in R and W)
disk() {
	sync
	read -r _ _ R _ _ _ W _ </sys/block/vda/stat
}

counters() { # vda sectors read and written; rdcpd's rchar, read_bytes, VmRSS (KiB)
	local r=0 b=0 m=0 k v
	disk
	if [ -n "${DPID:-}" ] && [ -r "/proc/$DPID/io" ]; then
		while read -r k v; do
			case $k in rchar:) r=$v ;; read_bytes:) b=$v ;; esac
		done <"/proc/$DPID/io"
		while read -r k v _; do
			case $k in VmRSS:) m=$v ;; esac
		done <"/proc/$DPID/status"
	fi
	echo "$R $W $r $b $m"
}

drop() { sync && echo 3 >/proc/sys/vm/drop_caches; }

guest_b() {
	local S=$RIG_SHARED n=0 req
	mkdir -p /root/.ssh /tmp/ssh && chmod 700 /root/.ssh
	start_daemon rdcpd --module "m=$RIG_DISK" --port "$RDPORT" || { echo fail >"$S/b-ready"; return 2; }
	DPID=$(cat /tmp/rdcpd.pid)
	if [ -n "$RDCPD0" ]; then
		DAEMON_BIN=$RDCPD0 start_daemon rdcpd0 --module "m=$RIG_DISK" --port "$((RDPORT + 1))" ||
			{ echo fail >"$S/b-ready"; return 2; }
	fi
	printf 'use chroot = no\nuid = root\ngid = root\n[m]\npath = %s\nread only = no\n' \
		"$RIG_DISK" >/tmp/rsyncd.conf
	rsync --daemon --no-detach --config /tmp/rsyncd.conf --port "$RSPORT" 2>/tmp/rsyncd.log &
	if [ "${RERUN_SSH:-1}" = 1 ]; then
		wait_for "$S/client_key.pub" 60 || { echo fail >"$S/b-ready"; return 2; }
		cp "$S/client_key.pub" /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
		ssh-keygen -q -t ed25519 -N '' -f /tmp/ssh/host
		/usr/sbin/sshd -D -f /dev/null -o StrictModes=no -o PermitRootLogin=yes -p "$SSHPORT" \
			-h /tmp/ssh/host -o PasswordAuthentication=no -o UsePAM=no \
			-o AuthorizedKeysFile=/root/.ssh/authorized_keys -E /tmp/ssh/sshd.log &
	fi
	echo ok >"$S/b-ready"
	while :; do
		n=$((n + 1))
		until [ -e "$S/req.$n" ] || [ -e /run/rig/share/sync/done-a ]; do nap 0.25; done
		[ -e "$S/req.$n" ] || break
		req=$(<"$S/req.$n")
		case $req in
		drop) drop ;;
		quit) echo bye >"$S/ack.$n"; break ;;
		esac
		counters >"$S/ack.$n.tmp" && mv "$S/ack.$n.tmp" "$S/ack.$n"
	done
	stop_daemon rdcpd
	[ -z "$RDCPD0" ] || stop_daemon rdcpd0
	return 0
}

# ---------------------------------------------------------------------------
# Guest a: the clients and the measurements.
# ---------------------------------------------------------------------------
NREQ=0
ask_b() { # ask_b drop|snap|quit: b's counters (see counters) in $B
	NREQ=$((NREQ + 1))
	echo "$1" >"$RIG_SHARED/req.$NREQ.tmp" && mv "$RIG_SHARED/req.$NREQ.tmp" "$RIG_SHARED/req.$NREQ"
	wait_for "$RIG_SHARED/ack.$NREQ" 600 || return 1
	B=$(<"$RIG_SHARED/ack.$NREQ")
}

# tool_cmd NAME: the client command of a tool in CMD (array)
tool_cmd() {
	local t=$RIG_DISK/tree peer=$RIG_PEER_IP
	case $1 in
	rdcp_push) CMD=("$RDCP" -a --json --port "$RDPORT" "$t/" "$peer::m/tree/") ;;
	rdcp_pull) CMD=("$RDCP" -a --json --port "$RDPORT" "$peer::m/tree/" "$t/") ;;
	base_push) CMD=("$RDCP0" -a --json --port "$((RDPORT + 1))" "$t/" "$peer::m/tree/") ;;
	base_pull) CMD=("$RDCP0" -a --json --port "$((RDPORT + 1))" "$peer::m/tree/" "$t/") ;;
	rsync_push) CMD=(rsync -a "$t/" "rsync://$peer:$RSPORT/m/tree/") ;;
	rsync_pull) CMD=(rsync -a "rsync://$peer:$RSPORT/m/tree/" "$t/") ;;
	rsync_ssh) CMD=(rsync -a -e "ssh -p $SSHPORT -i /tmp/ssh/id -o StrictHostKeyChecking=no \
-o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR" "$t/" "root@$peer:$RIG_DISK/tree/") ;;
	esac
}

# run_tool NAME: one run, timed (SECS); rdcp's JSON checked (BAD set when it moved data)
run_tool() {
	local t0 t1 j moved xf
	tool_cmd "$1"
	t0=$EPOCHREALTIME
	"${CMD[@]}" >/tmp/out.json 2>/tmp/err.txt
	RC=$?
	t1=$EPOCHREALTIME
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
	MOVED=-
	XFER=-
	if [ "$RC" != 0 ]; then
		echo "  $1: exit $RC: $(tail -n3 /tmp/err.txt | tr '\n' ' ')"
		FAILED=1
		return 1
	fi
	case $1 in rdcp_* | base_*)
		j=$(<"/tmp/out.json")
		moved=$(sed -n 's/.*"bytes_moved": \([0-9]*\).*/\1/p' <<<"$j")
		xf=$(sed -n 's/.*"transferred": \([0-9]*\).*/\1/p' <<<"$j")
		MOVED=${moved:-?}
		XFER=${xf:-?}
		if [ "$MOVED" != 0 ] || [ "$XFER" != 0 ]; then
			echo "  $1: moved $MOVED bytes, transferred $XFER entries (expected 0, 0)"
			BAD=1
		fi
		;;
	esac
	return 0
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {
	if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
	else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

guest_a() {
	local S=$RIG_SHARED tools t r limit a0 a1 b0 b1 aw0 aw1 bw0 bw1 bc0 bc1 bb0 bb1 m files
	declare -A WARM
	WRITES=""
	RSS=""
	FAILED=0
	BAD=0
	tools="rdcp_push rdcp_pull rsync_push rsync_pull"
	[ -z "$RDCP0" ] || tools="$tools base_push base_pull"
	mkdir -p /tmp/ssh
	if [ "${RERUN_SSH:-1}" = 1 ]; then
		ssh-keygen -q -t ed25519 -N '' -f /tmp/ssh/id
		cp /tmp/ssh/id.pub "$S/client_key.pub.tmp" && mv "$S/client_key.pub.tmp" "$S/client_key.pub"
		tools="$tools rsync_ssh"
	fi
	wait_for "$S/b-ready" 120 && [ "$(<"$S/b-ready")" = ok ] || { echo "b did not start its servers"; return 2; }
	nap 1
	limit=$((MB * 1048576 / 20))
	echo "tree: $FILES files, $MB MiB of random data, $DIRS directories (ext4 image, one per VM)"
	echo "guests: 1 vCPU, ${RERUN_MEM:-1536} MiB each; rdcp over RDMA (rxe0), rsync over TCP on the same wire"
	echo
	echo "cold round: page caches dropped in both VMs before each command"
	printf '  %-11s %8s %8s %14s %14s  %s\n' tool seconds moved "a vda read" "b vda read" \
		"rdcpd /proc/PID/io"
	for t in $tools; do
		drop
		ask_b drop || { echo "b did not answer"; return 2; }
		read -r b0 bw0 bc0 bb0 _ <<<"$B"
		disk
		a0=$R aw0=$W
		run_tool "$t" || continue
		disk
		a1=$R aw1=$W
		ask_b snap || return 2
		read -r b1 bw1 bc1 bb1 _ <<<"$B"
		local ar=$(((a1 - a0) * 512)) br=$(((b1 - b0) * 512)) dr="-"
		WRITES="$WRITES $t: a $(((aw1 - aw0) * 512)), b $(((bw1 - bw0) * 512));"
		case $t in rdcp_*) dr="rchar $((bc1 - bc0)), read_bytes $((bb1 - bb0))" ;; esac
		printf '  %-11s %8s %8s %14s %14s  %s\n' "$t" "$SECS" "$MOVED" "$ar" "$br" "$dr"
		if [ "$ar" -gt "$limit" ] || [ "$br" -gt "$limit" ]; then
			echo "  $t: read more than 5 % of the tree's data from a disk"
			BAD=1
		fi
		COLD[$t]=$SECS
	done
	echo
	for r in $(seq "$RUNS"); do
		for t in $tools; do
			run_tool "$t" && WARM[$t]="${WARM[$t]:-} $SECS"
			case $t in rdcp_*)
				ask_b snap || return 2
				read -r _ _ _ _ m <<<"$B"
				RSS="$RSS $m"
				;;
			esac
		done
	done
	echo "bytes written to the disks in the cold round (after a sync):$WRITES"
	echo "rdcpd VmRSS (KiB) after each warm rdcp run:$RSS"
	echo "warm rounds ($RUNS, tools interleaved): seconds per run, median"
	for t in $tools; do
		printf '  %-11s %8s   (%s )\n' "$t" "$(median <<<"${WARM[$t]:-}")" "${WARM[$t]:-}"
	done
	# by rsync's own judgement the trees are the same (untimed)
	files=$(rsync -ani "$RIG_DISK/tree/" "rsync://$RIG_PEER_IP:$RSPORT/m/tree/" | wc -l)
	echo "rsync -ani a -> b after all runs: $files lines (0: nothing to do)"
	[ "$files" = 0 ] || BAD=1
	local rp rl sp sl bp bl
	rp=$(median <<<"${WARM[rdcp_push]:-}")
	rl=$(median <<<"${WARM[rdcp_pull]:-}")
	sp=$(median <<<"${WARM[rsync_push]:-}")
	sl=$(median <<<"${WARM[rsync_pull]:-}")
	bp=$(median <<<"${WARM[base_push]:-}")
	bl=$(median <<<"${WARM[base_pull]:-}")
	echo
	awk -v rp="$rp" -v rl="$rl" -v sp="$sp" -v sl="$sl" -v cp="${COLD[rdcp_push]:-0}" \
		-v cs="${COLD[rsync_push]:-0}" -v cl="${COLD[rdcp_pull]:-0}" -v csl="${COLD[rsync_pull]:-0}" \
		-v bp="$bp" -v bl="$bl" 'BEGIN {
		if (sp > 0) printf "ratio push rdcp / rsync daemon (warm medians): %.2f (issue: <= 1.2)\n", rp / sp
		if (sl > 0) printf "ratio pull rdcp / rsync daemon (warm medians): %.2f (issue: <= 1.2)\n", rl / sl
		if (sp > 0 && bp > 0) printf "base build: push %.2f, pull %.2f x rsync daemon\n", bp / sp, bl / sl
		if (cs > 0) printf "ratio push, cold: %.2f; ", cp / cs
		if (csl > 0) printf "pull, cold: %.2f\n", cl / csl }'
	ask_b quit || true
	echo "stat-only (0 bytes moved, < 5 % of the data read): $([ "$BAD" = 0 ] && echo yes || echo NO)"
	[ "$FAILED" = 0 ] || return 2
	[ "$BAD" = 0 ] || return 1
	return 0
}

if [ "${1:-}" = --guest ]; then
	RDCP=$2
	RDCPD=$3
	RDCP0=${4:-}
	RDCPD0=${5:-}
	declare -A COLD
	# shellcheck source=tests/e2e/guest_lib.sh
	. "$repo/tests/e2e/guest_lib.sh"
	: "${RIG_DISK:?no scratch disk}"
	if [ "$RIG_ROLE" = b ]; then guest_b; else guest_a; fi
	exit
fi

# ---------------------------------------------------------------------------
# Host: build, the tree's image, the overlays, one rig boot, the report.
# ---------------------------------------------------------------------------
for c in mke2fs python3 rsync /usr/sbin/sshd; do
	command -v "$c" >/dev/null || { echo "rerun_rig: missing $c" >&2; exit 3; }
done
if [ "${RERUN_BUILD:-1}" = 1 ]; then
	(cd "$repo" && bazel build //cmd/rdcp //cmd/rdcpd >&2) || exit 3
fi
cache=${RERUN_CACHE:-/var/cache/rdcp-rerun}
mkdir -p "$cache" || exit 3
img="$cache/tree-$FILES-$MB-$DIRS.img"
if [ ! -e "$img.done" ]; then
	echo "rerun_rig: making the tree and its image $img" >&2
	gen="$cache/gen.$$"
	rm -rf "$gen" && mkdir -p "$gen/root" || exit 3
	t0=$(date +%s)
	python3 -B -c 'import sys; sys.path.insert(0, sys.argv[1]); import rerun_bench as r
r.make_tree(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) << 20, int(sys.argv[5]))' \
		"$here" "$gen/root/tree" "$FILES" "$MB" "$DIRS" || exit 3
	# room for the data, a block's tail per file, the directories, the journal
	size=$((MB + MB / 10 + FILES / 100 + 256))
	mke2fs -q -F -t ext4 -N $((FILES + DIRS * 2 + 1024)) -E root_owner=0:0 -d "$gen/root" \
		"$img" "${size}M" >&2 || { rm -rf "$gen" "$img"; exit 3; }
	rm -rf "$gen"
	touch "$img.done"
	echo "rerun_rig: image made in $(($(date +%s) - t0)) s" >&2
fi
run=$(mktemp -d "$cache/run.XXXXXX") || exit 3
trap 'rm -rf "$run"' EXIT
cp -p "${RERUN_RDCP:-$repo/bazel-bin/cmd/rdcp/rdcp}" "$run/rdcp" &&
	cp -p "${RERUN_RDCPD:-$repo/bazel-bin/cmd/rdcpd/rdcpd}" "$run/rdcpd" || exit 3
base=()
if [ -n "${RERUN_BASE_RDCP:-}" ]; then
	cp -p "$RERUN_BASE_RDCP" "$run/base-rdcp" && cp -p "${RERUN_BASE_RDCPD:?with RERUN_BASE_RDCP}" \
		"$run/base-rdcpd" || exit 3
	base=("$run/base-rdcp" "$run/base-rdcpd")
fi
mkdir -p "$here/results"
printf -v cmd '%q ' env RERUN_FILES="$FILES" RERUN_MB="$MB" RERUN_DIRS="$DIRS" RERUN_RUNS="$RUNS" \
	RERUN_SSH="${RERUN_SSH:-1}" RERUN_MEM="${RERUN_MEM:-1536}" \
	bash "$here/rerun_rig.sh" --guest "$run/rdcp" "$run/rdcpd" "${base[@]}"
{
	echo "rerun_rig.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(sed -n 's/^model name[[:space:]]*: //p' \
		/proc/cpuinfo | head -n1), $(nproc) CPUs; git $(git -C "$repo" rev-parse --short HEAD)"
	echo "rdcp $(sha256sum "$run/rdcp" | cut -c1-12), built $(date -u -r "$run/rdcp" '+%F %T')"
	[ -z "${base[*]}" ] || echo "base rdcp $(sha256sum "$run/base-rdcp" | cut -c1-12)"
	bash "$repo/tests/rig/rig.sh" run2 --timeout "${RERUN_TIMEOUT:-$((1800 + FILES / 50))}" \
		--mem "${RERUN_MEM:-1536}" --disk-a "$img" --disk-b "$img" --disk-snapshot \
		--a "$cmd" --b "$cmd" 2>&1
	echo "exit $?"
} | tee "$here/results/rerun_rig.txt"
st=$(sed -n 's/^exit \([0-9]*\)$/\1/p' "$here/results/rerun_rig.txt" | tail -n1)
exit "${st:-2}"
