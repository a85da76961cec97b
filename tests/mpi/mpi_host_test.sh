#!/usr/bin/env bash
# rdcp-mpi on this host over TCP (issue 32): mpirun ranks push a mixed tree
# to two rdcpd servers (127.0.0.1 and 127.0.0.2, one shared module
# directory, as two data-transfer nodes on one parallel file system), in
# fresh mount, network and pid namespaces (own /tmp, own loopback; what is
# left running ends with them).
#   mpi_host_test.sh RDCP_MPI RDCP_MPI_MPICH RDCPD
# MPI_FULL=1: the full-size tree of the issue (a 1 GiB file, 10,000 small
# files) instead of the CI one (96 MiB, 1,000).
set -euo pipefail

runfiles=${TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/${TEST_WORKSPACE:-rdcp}
real() { if [ -e "$1" ]; then readlink -f "$1"; else readlink -f "$runfiles/$1"; fi; }
mpi=$(real "$1")
mpich=$(real "$2")
rdcpd=$(real "$3")
wqc=$(real "$4")
lib=$(dirname "$(readlink -f "$0")")/mpi_lib.sh
for f in "$mpi" "$mpich" "$rdcpd" "$wqc"; do
	[ -x "$f" ] || { echo "missing $f"; exit 1; }
done
command -v mpirun.openmpi >/dev/null || { echo "mpirun.openmpi missing: scripts/setup.sh installs openmpi-bin"; exit 1; }
command -v mpirun.mpich >/dev/null || { echo "mpirun.mpich missing: scripts/setup.sh installs mpich"; exit 1; }
if ! unshare --mount --net --pid --fork true 2>/dev/null; then
	echo "mpi_host_test: cannot make namespaces here (need root); skipped"
	exit 0
fi
if [ -z "${MPI_INNER:-}" ]; then
	exec env MPI_INNER=1 unshare --mount --net --pid --fork --mount-proc -- "$0" "$@"
fi

ip link set lo up
mount --make-rprivate /
mount -t tmpfs -o size=6g,mode=1777 tmpfs /tmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1
T=/tmp/mpi
mkdir -p $T/mod
cd $T
RDCPD=$rdcpd PORT=19001
# shellcheck source=tests/mpi/mpi_lib.sh
. "$lib"

# 0. the work queue alone: every item once, work stolen, whatever -np
for np in 1 2 3 5; do
	out=$(timeout 120 mpirun.openmpi -np $np "$wqc" $((np * 7919)) 2>&1) &&
		pass "work queue, $np ranks: ${out##*: }" || fail "work queue, $np ranks: $out"
done

mpi_make_tree $T/src
data=$(du -sb --apparent-size $T/src | cut -f1)
start_server 1
start_server 2
run() { # NP ARGS...: rdcp-mpi under Open MPI's mpirun
	local np=$1
	shift
	timeout 600 mpirun.openmpi -np "$np" "$mpi" --transport tcp --port 19001 "$@"
}
# kill_mid_job WHAT DIR ARGS...: 4 ranks run ARGS; once a range partial of
# big is in DIR, the last rank is killed with -9. Sets before (the bytes the
# servers had moved until then) and first (what the killed job moved).
kill_mid_job() {
	local what=$1 dir=$2 job victim=
	shift 2
	before=$(received)
	run 4 "$@" >"killed-$what.json" 2>"killed-$what.err" &
	job=$!
	for _ in $(seq 300); do
		if [ -n "$(find "$dir" -maxdepth 1 -name '.rdcp-range.*.big*' 2>/dev/null)" ]; then
			victim=$(pgrep -x rdcp-mpi | tail -1)
			break
		fi
		sleep 0.1
	done
	sleep 0.5
	[ -n "$victim" ] && kill -9 "$victim"
	wait $job && fail "killed $what: exit 0" || pass "killed $what: exit non-zero (rank $victim killed)"
	first=$(($(received) - before))
}

# 1. push the tree with 4 ranks to both servers: lands byte-exact with metadata
t0=$(date +%s.%N)
if run 4 -a -H --json --chunk-size 1M src/ '127.0.0.[1-2]::m/dst' >push.json 2>push.err; then
	pass "push with 4 ranks: exit 0"
else
	fail "push with 4 ranks: exit $?"
	cat push.err
fi
t1=$(date +%s.%N)
echo "push: $(echo "$t1 - $t0" | bc) s for $data bytes"
mpi_same_tree $T/src $T/mod/dst && pass "push: the tree lands byte-exact with modes, ns mtimes, links" ||
	fail "push: trees differ"
[ -z "$(find $T/mod -name '.rdcp-*')" ] && pass "push: no partial or record left" ||
	fail "push: litter: $(find $T/mod -name '.rdcp-*' | head -3)"
n=$(json push.json "sum(1 for r in d['ranks'] if any(x['path'] == 'dst/big' for x in r['range_list']) and r['bytes_moved'] > 0)")
[ "$n" -ge 2 ] && pass "push: big moved by $n ranks (the JSON ranks array)" ||
	fail "push: big moved by $n ranks"
[ "$(json push.json "len(d['ranks'])")" = 4 ] && [ "$(json push.json "d['files']")" -ge "$nsmall" ] &&
	pass "push: one JSON object for the job, a ranks array of 4" || fail "push: JSON $(head -c 300 push.json)"
# every directory listed once, by whichever rank; whether any was stolen
# depends on when the other ranks start asking (rank 0 may list a tree this
# small alone on a loaded host), so stealing itself is wq_check's to prove (0.)
walkers=$(json push.json "sum(1 for r in d['ranks'] if r['dirs_listed'] > 0)")
stolen=$(json push.json "sum(r['dirs_stolen'] for r in d['ranks'])")
listed=$(json push.json "sum(r['dirs_listed'] for r in d['ranks'])")
ndirs=$(find $T/src -type d | wc -l)
[ "$listed" = "$ndirs" ] &&
	pass "walk: $listed directories listed once each, by $walkers ranks, $stolen taken by stealing" ||
	fail "walk: $listed directories listed for $ndirs ($walkers ranks, $stolen stolen)"
servers=$(json push.json "len(set(r['server'] for r in d['ranks']))")
[ "$servers" = 2 ] && pass "push: ranks spread over both servers" || fail "push: $servers servers"

# 2. the same command again: nothing left to move (quick check, same-size SUM)
run 3 -a -H --json --chunk-size 1M src/ '127.0.0.[1-2]::m/dst' >again.json 2>again.err ||
	fail "rerun: exit $?"
moved=$(json again.json "d['bytes_moved']")
[ "$moved" -lt $((data / 100)) ] && pass "rerun with 3 ranks: $moved bytes moved" ||
	fail "rerun moved $moved bytes"
mpi_same_tree $T/src $T/mod/dst || fail "rerun: trees differ"
# one progress line and one summary for the job, from rank 0 alone
run 3 -a --progress src/ '127.0.0.[1-2]::m/dst' >sum.out 2>sum.err || fail "summary run: exit $?"
[ "$(grep -c 'rdcp-mpi: 3 ranks: ' sum.err)" = 1 ] && grep -q 'bytes moved, .* MB/s' sum.err &&
	[ ! -s sum.out ] && pass "one progress line and one summary (rank 0): $(grep 'ranks:' sum.err)" ||
	fail "summary: $(head -c 600 sum.err)"

# 2b. pull it back with 4 ranks from both servers into a local directory
if run 4 -a -H --json --chunk-size 1M '127.0.0.[1-2]::m/dst/' $T/pulled >pull.json 2>pull.err; then
	pass "pull with 4 ranks: exit 0"
else
	fail "pull with 4 ranks: exit $?"
	cat pull.err
fi
mpi_same_tree $T/src $T/pulled && pass "pull: the tree lands byte-exact with modes, ns mtimes, links" ||
	fail "pull: trees differ"
[ -z "$(find $T/pulled -name '.rdcp-*')" ] && pass "pull: no partial or record left" ||
	fail "pull: litter: $(find $T/pulled -name '.rdcp-*' | head -3)"
# big and big.link are one file: the server's walk says which name carries it
n=$(json pull.json "sum(1 for r in d['ranks'] if any(x['path'].startswith('big') for x in r['range_list']) and r['bytes_moved'] > 0)")
[ "$n" -ge 2 ] && pass "pull: big moved by $n ranks" || fail "pull: big moved by $n ranks"
run 3 -a -H --json --chunk-size 1M '127.0.0.[1-2]::m/dst/' $T/pulled >pull2.json 2>pull2.err ||
	fail "pull rerun: exit $?"
moved=$(json pull2.json "d['bytes_moved']")
[ "$moved" -lt $((data / 100)) ] && pass "pull rerun with 3 ranks: $moved bytes moved" ||
	fail "pull rerun moved $moved bytes"
# a pull killed mid-job, then the same command with another -np
kill_mid_job pull $T/pulled2 -a -H --json --chunk-size 1M --bwlimit 4M '127.0.0.[1-2]::m/dst/' $T/pulled2
run 2 -a -H --json --chunk-size 1M '127.0.0.[1-2]::m/dst/' $T/pulled2 >pr.json 2>pr.err ||
	{ fail "pull after the kill, -np 2: exit $?"; cat pr.err; }
mpi_same_tree $T/src $T/pulled2 && pass "pull after the kill, -np 2: byte-exact" || fail "pull after kill: differ"
both=$(($(received) - before))
[ "$first" -gt 0 ] && [ "$first" -lt $((data * 9 / 10)) ] && [ "$both" -le $((data * 12 / 10)) ] &&
	pass "pull kill and rerun: $first then $both bytes sent for $data" ||
	fail "pull kill and rerun: $first then $both bytes for $data"

# 3. kill -9 of one rank mid-job, then the same command with another -np
kill_mid_job push $T/mod/dst2 -a -H --json --chunk-size 1M --bwlimit 4M src/ '127.0.0.[1-2]::m/dst2'
# the kill must have come mid-job: some of the data moved, not all of it
[ "$first" -gt 0 ] && [ "$first" -lt $((data * 9 / 10)) ] &&
	pass "the kill came mid-job: $first of $data bytes had moved" ||
	fail "the kill did not come mid-job: $first of $data bytes moved"
run 3 -a -H --json --chunk-size 1M src/ '127.0.0.[1-2]::m/dst2' >resumed.json 2>resumed.err ||
	{ fail "after the kill, -np 3: exit $?"; cat resumed.err; }
mpi_same_tree $T/src $T/mod/dst2 && pass "after the kill, -np 3: byte-exact" || fail "after kill: trees differ"
kept=$(json resumed.json "d['bytes_resumed']")
[ "$kept" -gt 0 ] && pass "after the kill: $kept bytes of ranges kept from before (compared, not sent)" ||
	fail "after the kill: nothing kept from the first run"
both=$(($(received) - before))
echo "kill and rerun: $both bytes received for $data bytes of data"
[ "$both" -le $((data * 12 / 10)) ] && pass "kill and rerun moved $both <= 1.2 x $data" ||
	fail "kill and rerun moved $both bytes, more than 1.2 x $data"
[ -z "$(find $T/mod/dst2 -name '.rdcp-*')" ] && pass "after the rerun: no partial or record left" ||
	fail "after rerun: litter $(find $T/mod/dst2 -name '.rdcp-*' | head -3)"

# 4. a server that is down fails only its share; the rerun finishes
kill "$(cat $T/d2.pid)"
wait "$(cat $T/d2.pid)" 2>/dev/null || true
run 4 -a -H --json --chunk-size 1M src/ '127.0.0.[1-2]::m/dst3' >down.json 2>down.err &&
	fail "server down: exit 0" || pass "server down: exit $? (23 expected)"
[ "$(json down.json "d['failures'] > 0 and any('127.0.0.2' in e['error'] for e in d['errors'])")" = True ] &&
	pass "server down: the job names the failed server" || fail "server down: $(head -c 400 down.json)"
[ "$(json down.json "sum(r['bytes_moved'] for r in d['ranks'] if r['server'] == '127.0.0.1') > 0")" = True ] &&
	pass "server down: the other server's ranks moved their share" || fail "server down: nothing moved"
[ ! -e $T/mod/dst3/big ] && pass "server down: big is not named (a range is missing)" ||
	fail "server down: big named without all its ranges"
start_server 2
run 2 -a -H --json --chunk-size 1M src/ '127.0.0.[1-2]::m/dst3' >up.json 2>up.err || fail "server up: exit $?"
mpi_same_tree $T/src $T/mod/dst3 && pass "server up again, -np 2: byte-exact" || fail "server up: trees differ"

# 5. MPICH: the same program built against MPICH, run by its mpirun
rm -rf $T/src2 && mkdir -p $T/src2/a && head -c 9000000 /dev/urandom >$T/src2/a/f && echo x >$T/src2/b
if timeout 300 mpirun.mpich -np 3 "$mpich" -a --transport tcp --port 19001 --chunk-size 1M --json \
	$T/src2 '127.0.0.[1-2]::m/mpich/' >mpich.json 2>mpich.err; then
	mpi_same_tree $T/src2 $T/mod/mpich/src2 && pass "MPICH build, mpirun.mpich -np 3: byte-exact" ||
		fail "MPICH: trees differ"
else
	fail "MPICH: exit $?"
	cat mpich.err
fi

# 5b. rsync's selection options against rsync's own, and a password login
# shellcheck source=tests/mpi/mpi_select.sh
. "$(dirname "$lib")/mpi_select.sh"

# 6. bad input: one clear message, a non-zero exit
out=$(run 2 src/ /tmp/local 2>&1) && fail "local destination accepted" ||
	{ echo "$out" | grep -q "must be rdcpd servers" && pass "a local destination: refused, said why" || fail "local dest: $out"; }
out=$(run 2 -a nosuch '127.0.0.1::m/x' 2>&1) && fail "missing source accepted" ||
	{ echo "$out" | grep -q "source nosuch" && pass "a missing source: named" || fail "missing source: $out"; }
out=$(run 2 -a src 'n[3-1]::m/x' 2>&1) && fail "bad host list accepted" ||
	{ echo "$out" | grep -q "must go up" && pass "a bad host list: named" || fail "host list: $out"; }
kill -0 "$(cat $T/d1.pid)" && kill -0 "$(cat $T/d2.pid)" && pass "both servers alive" || fail "a server died"

echo "mpi_host_test: $(($(date +%s) - t_start)) s"
echo "$passes passed, $fails failed"
exit $((fails > 0))
