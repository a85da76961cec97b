#!/usr/bin/env bash
# The rig's end-to-end scripts without the rig: run one on this host over TCP,
# in fresh mount and network namespaces, so it has its own /tmp and its own
# loopback (the scripts' fixed paths and ports collide with nothing, and only
# loopback addresses are used). rdcp's auto transport picks TCP where there is
# no RDMA device; E2E_TRANSPORT=tcp makes the scripts skip the few checks that
# only hold over RDMA (device names, GIDs, locked memory).
#   host_test.sh 1|2 GUEST_SCRIPT
# 1: the script runs as RIG_ROLE a in RIG_MODE 1 (client and server here);
# 2: roles a and b run side by side, as the two VMs of the rig would.
set -euo pipefail

mode=$1
script=$2
runfiles=${TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/${TEST_WORKSPACE:-rdcp}
real() { readlink -f "$runfiles/$1"; }
guest=$(real "$script")
lib=$(real tests/e2e/guest_lib.sh)
rdcp=$(real cmd/rdcp/rdcp_testhooks)
rdcpd=$(real cmd/rdcpd/rdcpd_testhooks)
evil=$(real tests/hostile/rdcp_evil)
for f in "$guest" "$lib" "$rdcp" "$rdcpd" "$evil"; do
	[ -e "$f" ] || { echo "missing $f"; exit 1; }
done
# the cli suite's LD_PRELOAD shim (tests/e2e/vanish_preload.c), when it is a runfile
if [ -e "$runfiles/tests/e2e/vanish_preload.so" ]; then
	CLI_PRELOAD=$(real tests/e2e/vanish_preload.so)
	export CLI_PRELOAD
fi
if ! unshare --mount --net --pid --fork true 2>/dev/null; then
	echo "host_test: cannot make mount and network namespaces here (need root); skipped"
	exit 0
fi

# A pid namespace too: what the scripts leave running (daemons) ends with it.
# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --net --pid --fork --mount-proc -- bash -c '
	set -eu
	mode=$1 guest=$2 rdcp=$3 rdcpd=$4 lib=$5 evil=$6
	ip link set lo up
	mount --make-rprivate /
	mount -t tmpfs -o size=2g,mode=1777 tmpfs /tmp
	mount -t tmpfs -o mode=1777 tmpfs /var/tmp
	# as in the rig guests, the system is read-only (a test may try to write there)
	mount --bind /usr /usr
	mount -o remount,bind,ro /usr
	# The ssh suite logs in as root here: its shell reads root'"'"'s rc files,
	# which on these machines run pyenv (seconds per login under load, and a
	# stale pyenv lock made every login wait 60 s once). The rig'"'"'s /root is
	# an empty tmpfs; here the rc files are hidden, the checkout is not.
	: >/tmp/.empty-rc
	for rc in /root/.bashrc /root/.profile /root/.bash_profile /root/.bash_login; do
		if [ -f "$rc" ]; then mount --bind /tmp/.empty-rc "$rc"; fi
	done
	# The client pins daemon keys in ~/.rdcp/known_hosts and a daemon keeps
	# its host key in /var/lib/rdcpd: both private here, as in the rig, so
	# no run leaves them on this host or meets another run'"'"'s.
	mkdir -p /tmp/.home /var/lib/rdcpd
	mount -t tmpfs -o mode=0700 tmpfs /var/lib/rdcpd
	export HOME=/tmp/.home
	mkdir -p /tmp/.rig-shared
	export RIG_SHARED=/tmp/.rig-shared RIG_SELF_IP=127.0.0.1 RIG_PEER_IP=127.0.0.1
	export RIG_MODE=$mode E2E_TRANSPORT=tcp RDCP_EVIL=$evil RIG_CWD=/nonexistent
	export STRAY_DIRS="/tmp /var/tmp"
	cd /tmp
	if [ "${guest##*/}" = hostile_guest.sh ]; then
		RIG_ROLE=a sh "$guest" "$rdcp" "$rdcpd" "$evil"
		exit $?
	fi
	if [ "$mode" = 1 ]; then
		RIG_ROLE=a bash "$guest" "$rdcp" "$rdcpd" "$lib" "$evil"
		exit $?
	fi
	# logs to files: a daemon left running must not hold a pipe we wait on
	RIG_ROLE=b bash "$guest" "$rdcp" "$rdcpd" "$lib" "$evil" >/tmp/.b.log 2>&1 &
	b=$!
	ra=0
	RIG_ROLE=a bash "$guest" "$rdcp" "$rdcpd" "$lib" "$evil" >/tmp/.a.log 2>&1 || ra=$?
	rb=0
	wait $b || rb=$?
	sed "s/^/a| /" /tmp/.a.log
	sed "s/^/b| /" /tmp/.b.log
	echo "host_test: role a exit $ra, role b exit $rb"
	[ "$ra" -eq 0 ] && [ "$rb" -eq 0 ]
' host_test "$mode" "$guest" "$rdcp" "$rdcpd" "$lib" "$evil"
