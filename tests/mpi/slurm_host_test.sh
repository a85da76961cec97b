#!/usr/bin/env bash
# rdcp-mpi under Slurm (issue 32): the test starts munge, a single-host
# slurmctld and slurmd of its own, then `srun -n 4 --mpi=pmix rdcp-mpi`
# pushes the mixed tree (tests/mpi/mpi_lib.sh) to two rdcpd servers on
# 127.0.0.1 and 127.0.0.2 sharing one module directory: byte-exact with
# metadata and links, the large file moved by several ranks.
# In fresh mount and pid namespaces (its files on a tmpfs, everything it
# started ends with it), but on the host's network: Slurm resolves names
# with AI_ADDRCONFIG, which finds nothing where loopback is the only
# interface (a fresh network namespace), and this sandbox cannot make a
# dummy one. Only 127.0.0.1 is used, on ports no other test uses.
#   slurm_host_test.sh RDCP_MPI RDCPD
set -euo pipefail

runfiles=${TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/${TEST_WORKSPACE:-rdcp}
real() { if [ -e "$1" ]; then readlink -f "$1"; else readlink -f "$runfiles/$1"; fi; }
mpi=$(real "$1")
rdcpd=$(real "$2")
lib=$(dirname "$(readlink -f "$0")")/mpi_lib.sh
for c in slurmctld slurmd srun munged munge; do
	command -v "$c" >/dev/null || { echo "FAIL: $c missing (scripts/setup.sh installs Slurm and munge)"; exit 1; }
done
[ -r /etc/munge/munge.key ] || { echo "FAIL: /etc/munge/munge.key missing (the munge package makes it)"; exit 1; }
if ! unshare --mount --pid --fork true 2>/dev/null; then
	echo "slurm_host_test: cannot make namespaces here (need root); skipped"
	exit 0
fi
if [ -z "${SLURM_INNER:-}" ]; then
	exec env SLURM_INNER=1 unshare --mount --pid --fork --mount-proc -- "$0" "$@"
fi

mount --make-rprivate /
T=/tmp/rdcp-slurm-test
mkdir -p $T /run/munge
mount -t tmpfs -o size=2g tmpfs $T
mount -t tmpfs tmpfs /run/munge
chown munge:munge /run/munge
mkdir -p $T/mod $T/state $T/spool $T/log
cd $T
RDCPD=$rdcpd PORT=27001
# shellcheck source=tests/mpi/mpi_lib.sh
. "$lib"

# munge (Slurm's authentication) as its own user, its socket where Slurm looks
runuser -u munge -- munged --force 2>$T/log/munged.err ||
	{ echo "FAIL: munged: $(cat $T/log/munged.err)"; exit 1; }
h=$(hostname)
cat >$T/slurm.conf <<CONF
ClusterName=rdcptest
SlurmctldHost=$h(127.0.0.1)
SlurmctldPort=26817
SlurmdPort=26818
SrunPortRange=26900-26999
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
NodeName=$h NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=$h Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$T/slurm.conf
slurmctld -c
slurmd -c
for _ in $(seq 100); do
	sinfo -h -o %t 2>/dev/null | grep -q idle && break
	sleep 0.2
done
sinfo -h -o %t | grep -q idle && pass "slurmctld and slurmd up: $(sinfo -h -o '%P %t %N')" ||
	{ fail "Slurm did not come up: $(tail -n 5 $T/log/slurmctld.log $T/log/slurmd.log)"; exit 1; }

big_mb=32 nsmall=300
mpi_make_tree $T/src
start_server 1
start_server 2
t0=$(date +%s.%N)
if timeout 600 srun -n 4 --mpi=pmix "$mpi" -a -H --json --transport tcp --port $PORT \
	--chunk-size 1M src/ '127.0.0.[1-2]::m/dst' >srun.json 2>srun.err; then
	pass "srun -n 4 rdcp-mpi: exit 0 ($(echo "$(date +%s.%N) - $t0" | bc) s)"
else
	fail "srun -n 4 rdcp-mpi: exit $?: $(tail -n 5 srun.err)"
fi
mpi_same_tree $T/src $T/mod/dst && pass "srun: the tree lands byte-exact with modes, ns mtimes, links" ||
	fail "srun: trees differ"
n=$(json srun.json "sum(1 for r in d['ranks'] if any(x['path'] == 'dst/big' for x in r['range_list']) and r['bytes_moved'] > 0)")
[ "$(json srun.json "len(d['ranks'])")" = 4 ] && [ "$n" -ge 2 ] &&
	pass "srun: 4 ranks, big moved by $n of them" || fail "srun: $(head -c 300 srun.json)"
echo "slurm_host_test: $(($(date +%s) - t_start)) s"
echo "$passes passed, $fails failed"
exit $((fails > 0))
