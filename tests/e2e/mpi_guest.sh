#!/usr/bin/env bash
# rdcp-mpi across the rig's two VMs over RDMA (issue 32): four ranks, two on
# each VM (mpirun on a starts b's over ssh), push a mixed tree from the
# directory both VMs share (RIG_SHARED, 9p) to rdcpd on both VMs, whose
# module is one directory of that share: as nodes of a cluster pushing
# through two data-transfer nodes into one parallel file system. Rank r
# talks to server r mod 2, so ranks on a push through b and the other way.
#   a: the tree, mpirun, the checks; b: sshd (for mpirun) and rdcpd.
# MPI_FULL=1: the issue's full size (a 1 GiB file, 10,000 small files); the
# CI size is 64 MiB and 500.
set -u
RDCP=$1
RDCPD=$2
LIB=$3
MPI=$(readlink -f "$(dirname "$RDCP")/../rdcp-mpi/rdcp-mpi")
MPILIB=$(readlink -f "$(dirname "$LIB")/../mpi/mpi_lib.sh")
# shellcheck source=tests/e2e/guest_lib.sh
. "$LIB"
SH=$RIG_SHARED
T=$SH/mpi
# shellcheck source=tests/mpi/mpi_lib.sh
. "$MPILIB"
SSH_ARGS="-p 2222 -i /tmp/key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes"
if [ -n "${MPI_FULL:-}" ]; then big_mb=1024 nsmall=10000; else big_mb=${MPI_BIG_MB:-64} nsmall=500; fi

mpi_run() { # NP HOSTS ARGS...: rdcp-mpi under mpirun, ranks started over ssh
	local np=$1 hosts=$2
	shift 2
	mpirun --allow-run-as-root --oversubscribe -np "$np" --host "$hosts" \
		--mca plm_rsh_agent ssh --mca plm_rsh_args "$SSH_ARGS" \
		--mca pml ob1 --mca btl self,vader,tcp --mca osc ^ucx \
		--mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
		--mca btl_vader_single_copy_mechanism none \
		"$MPI" "$@"
}
serve() { # rdcpd on this VM, its module the shared directory
	start_daemon d --module "m=$T/mod" --listen "$RIG_SELF_IP" || return 1
}

case "$RIG_ROLE" in
b)
	mkdir -p /run/sshd && chmod 0755 /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f /tmp/hostkey
	wait_for "$SH/mpi-key.pub" 300 || exit 1
	cp "$SH/mpi-key.pub" /tmp/authorized_keys && chmod 0600 /tmp/authorized_keys
	: >/tmp/sshd_config
	/usr/sbin/sshd -f /tmp/sshd_config -E /tmp/sshd.log -o StrictModes=no \
		-o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o UsePAM=no \
		-o PubkeyAuthentication=yes -p 2222 -h /tmp/hostkey \
		-o AuthorizedKeysFile=/tmp/authorized_keys -o PidFile=/tmp/sshd.pid \
		-o AcceptEnv='OMPI_*'
	wait_for "$SH/mpi-tree-ready" 600 || exit 1
	check "rdcpd on b" serve
	touch "$SH/mpi-b-ready"
	wait_for "$SH/mpi-done" 1800
	check "rdcpd on b alive at the end" daemon_alive d
	tail -n 3 /tmp/d.log
	finish
	;;
a)
	ssh-keygen -q -t ed25519 -N '' -f /tmp/key
	cp /tmp/key.pub "$SH/mpi-key.pub"
	mkdir -p "$T/mod"
	t0=$SECONDS
	mpi_make_tree "$T/src"
	data=$(du -sb --apparent-size "$T/src" | cut -f1)
	echo "    tree of $data bytes made in $((SECONDS - t0)) s"
	touch "$SH/mpi-tree-ready"
	check "rdcpd on a" serve
	wait_for "$SH/mpi-b-ready" 300 || exit 1
	check "ssh to b for mpirun" ssh $SSH_ARGS "$RIG_PEER_IP" true
	cd /tmp || exit 1
	t0=$SECONDS
	mpi_run 4 "$RIG_SELF_IP:2,$RIG_PEER_IP:2" -a -H --json --transport rdma --chunk-size 1M \
		"$T/src/" "$RIG_SELF_IP,$RIG_PEER_IP::m/dst" >/tmp/push.json 2>/tmp/push.err
	rc=$?
	secs=$((SECONDS - t0))
	check "mpirun -np 4 over both VMs, RDMA to both servers: exit 0 ($rc) in $secs s" [ "$rc" = 0 ]
	[ "$rc" = 0 ] || tail -n 20 /tmp/push.err
	echo "    push: $data bytes in $secs s"
	check "the tree lands byte-exact with modes, ns mtimes, links" mpi_same_tree "$T/src" "$T/mod/dst"
	check "no partial or record left" [ -z "$(find "$T/mod" -name '.rdcp-*' -print -quit)" ]
	n=$(json /tmp/push.json "sum(1 for r in d['ranks'] if any(x['path'] == 'dst/big' for x in r['range_list']) and r['bytes_moved'] > 0)")
	check "big moved by $n ranks (JSON ranks array)" [ "${n:-0}" -ge 2 ]
	check "both servers used" [ "$(json /tmp/push.json "len(set(r['server'] for r in d['ranks']))")" = 2 ]
	json /tmp/push.json "'    ' + ', '.join('rank %d via %s: %d bytes' % (r['rank'], r['server'], r['bytes_moved']) for r in d['ranks'])"
	check "RDMA, not TCP: the daemons say so" grep -q "over RDMA" /tmp/d.log
	# the pull: the same four ranks take the tree back from both servers
	# into another directory both VMs share
	t0=$SECONDS
	mpi_run 4 "$RIG_SELF_IP:2,$RIG_PEER_IP:2" -a -H --json --transport rdma --chunk-size 1M \
		"$RIG_SELF_IP,$RIG_PEER_IP::m/dst/" "$T/pulled" >/tmp/pull.json 2>/tmp/pull.err
	rc=$?
	secs=$((SECONDS - t0))
	check "pull, mpirun -np 4 over both VMs: exit 0 ($rc) in $secs s" [ "$rc" = 0 ]
	[ "$rc" = 0 ] || tail -n 20 /tmp/pull.err
	echo "    pull: $data bytes in $secs s"
	check "pull: the tree lands byte-exact with modes, ns mtimes, links" mpi_same_tree "$T/src" "$T/pulled"
	n=$(json /tmp/pull.json "sum(1 for r in d['ranks'] if any(x['path'].startswith('big') for x in r['range_list']) and r['bytes_moved'] > 0)")
	check "pull: big moved by $n ranks" [ "${n:-0}" -ge 2 ]
	json /tmp/pull.json "'    ' + ', '.join('rank %d via %s: %d bytes' % (r['rank'], r['server'], r['bytes_moved']) for r in d['ranks'])"
	# rsync's selection over RDMA: anchored excludes, a dir/ rule and -u,
	# where the destination's big is newer (and smaller): every range of the
	# source's big leaves it as it is (the small files left out: a short run)
	mkdir -p "$T/mod/dsel"
	head -c 1048576 /dev/urandom >"$T/mod/dsel/big"
	touch -d "2030-01-01" "$T/mod/dsel/big"
	cp -p "$T/mod/dsel/big" /tmp/newer-big
	t0=$SECONDS
	mpi_run 4 "$RIG_SELF_IP:2,$RIG_PEER_IP:2" -a -u --exclude=/small/ --exclude=/big.link \
		--exclude=d5/ --json --transport rdma --chunk-size 1M \
		"$T/src/" "$RIG_SELF_IP,$RIG_PEER_IP::m/dsel" >/tmp/sel.json 2>/tmp/sel.err
	rc=$?
	check "push -u --exclude over both VMs: exit 0 ($rc) in $((SECONDS - t0)) s" [ "$rc" = 0 ]
	[ "$rc" = 0 ] || tail -n 20 /tmp/sel.err
	check "  the excluded names and directories are not there" \
		sh -c '[ ! -e "$1/small" ] && [ ! -e "$1/big.link" ] && [ ! -e "$1/deep/d1/d2/d3/d4/d5" ] &&
			[ -e "$1/deep/d1/d2/d3/d4" ]' _ "$T/mod/dsel"
	check "  -u: the newer big is kept (its ranges left it)" cmp -s /tmp/newer-big "$T/mod/dsel/big"
	check "  the rest is byte-exact" diff -r --no-dereference --exclude=small --exclude=big \
		--exclude=big.link --exclude=d5 "$T/src" "$T/mod/dsel"
	# MPI_BENCH=1: throughput against ranks (tests/bench/mpi_bench.sh --rig
	# reads these lines), beside one rdcp
	if [ -n "${MPI_BENCH:-}" ]; then
		bench() { # SETTING RANKS HOSTS
			local t0
			rm -rf "$T/mod/bench"
			t0=$(date +%s.%N)
			mpi_run "$2" "$3" -a -q --transport rdma "$T/src/" "$RIG_SELF_IP,$RIG_PEER_IP::m/bench" ||
				return 1
			echo "MPIBENCH,$1,$2,$data,$(echo "$(date +%s.%N) - $t0" | bc)"
		}
		bench "rdcp-mpi (2 servers)" 1 "$RIG_SELF_IP:1"
		bench "rdcp-mpi (2 servers)" 2 "$RIG_SELF_IP:1,$RIG_PEER_IP:1"
		bench "rdcp-mpi (2 servers)" 4 "$RIG_SELF_IP:2,$RIG_PEER_IP:2"
		rm -rf "$T/mod/bench"
		t0=$(date +%s.%N)
		"$RDCP" -a -q --transport rdma "$T/src/" "$RIG_PEER_IP::m/bench" &&
			echo "MPIBENCH,rdcp (1 process; 1 server),1,$data,$(echo "$(date +%s.%N) - $t0" | bc)"
	fi
	touch "$SH/mpi-done"
	finish
	;;
esac
