#!/usr/bin/env bash
# rdcp-mpi's scaling on this host over TCP (issue 32): job throughput of one
# push against the number of ranks, two rdcpd servers (127.0.0.1, .2) sharing
# one module directory, beside one rdcp (one process, one server) on the same
# tree. Ranks, servers and the file system share the host's cores: this
# measures what the job's coordination and the per-rank work cost, not a
# cluster's bandwidth (docs/BENCHMARKS.md: the model).
#   bash tests/bench/mpi_bench.sh [--mb N] [--files N] [--np 1,2,4,8] [--repeat K]
#   bash tests/bench/mpi_bench.sh --rig [--mb N]: the same over RDMA in the rig
#     (two VMs, one CPU each: 1, 2 and 4 ranks, two servers; and one rdcp),
#     through //tests/e2e:mpi_2vm_test with MPI_BENCH=1; writes mpi_rig.csv
# Writes RESULTS/mpi.csv (setting,ranks,bytes,seconds,mb_s,cpu_s) and
# mpi.meta (RESULTS: $RDCP_BENCH_RESULTS or tests/bench/results); run as
# root (namespaces: its own /tmp and loopback). The median of K runs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd -P)
mb=512 files=2000 nps=1,2,4,8 repeat=3
rig=0
while [ $# -gt 0 ]; do
	case $1 in
	--rig) rig=1; shift ;;
	--mb) mb=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	--np) nps=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	*) echo "usage: $0 [--mb N] [--files N] [--np LIST] [--repeat K]" >&2; exit 2 ;;
	esac
done
res=${RDCP_BENCH_RESULTS:-$top/tests/bench/results}
mkdir -p "$res"
if [ "$rig" = 1 ]; then
	cd "$top"
	bazel test //tests/e2e:mpi_2vm_test --test_arg=MPI_BENCH=1 --test_arg=MPI_BIG_MB="$mb" \
		--test_output=all --nocache_test_results >"$res/mpi_rig.log" 2>&1 ||
		{ tail -n 30 "$res/mpi_rig.log"; exit 1; }
	{
		printf 'setting,ranks,bytes,seconds,mb_s\n'
		sed -n 's/.*MPIBENCH,\(.*\)/\1/p' "$res/mpi_rig.log" |
			awk -F, '{printf "%s,%s,%s,%s,%.1f\n", $1, $2, $3, $4, $3 / $4 / 1e6}'
	} >"$res/mpi_rig.csv"
	printf 'bash tests/bench/mpi_bench.sh --rig --mb %s (two QEMU VMs, 1 CPU each, Soft-RoCE); %s; git %s\n' \
		"$mb" "$(date -u +%Y-%m-%d)" "$(git rev-parse --short HEAD)" >"$res/mpi_rig.meta"
	rm -f "$res/mpi_rig.log"
	cat "$res/mpi_rig.csv"
	exit 0
fi
bin=$top/bazel-bin
mpi=$bin/cmd/rdcp-mpi/rdcp-mpi rdcp=$bin/cmd/rdcp/rdcp rdcpd=$bin/cmd/rdcpd/rdcpd
for f in "$mpi" "$rdcp" "$rdcpd"; do
	[ -x "$f" ] || { echo "mpi_bench: build first: bazel build //cmd/..." >&2; exit 1; }
done
if [ -z "${MPI_BENCH_INNER:-}" ]; then
	exec env MPI_BENCH_INNER=1 RES="$res" unshare --mount --net --pid --fork --mount-proc -- \
		bash "$0" --mb "$mb" --files "$files" --np "$nps" --repeat "$repeat"
fi
ip link set lo up
mount --make-rprivate /
mount -t tmpfs -o size=$((mb * 3 + 1024))m,mode=1777 tmpfs /tmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1
T=/tmp/mb
mkdir -p $T/src/small $T/mod
head -c $((mb << 20)) /dev/urandom >$T/src/big
for i in $(seq 1 "$files"); do
	[ $(((i - 1) % 200)) = 0 ] && mkdir -p "$T/src/small/d$(((i - 1) / 200))"
	head -c $((i * 37 % 16000 + 1)) /dev/urandom >"$T/src/small/d$(((i - 1) / 200))/f$i"
done
bytes=$(du -sb --apparent-size $T/src | cut -f1)
for i in 1 2; do
	"$rdcpd" --foreground --no-auth --transport tcp --listen 127.0.0.$i --port 19301 \
		--module m=$T/mod --ready-file $T/d$i.ready 2>$T/d$i.log &
done
for _ in $(seq 100); do [ -s $T/d1.ready ] && [ -s $T/d2.ready ] && break; sleep 0.1; done

# one run: SETTING RANKS CMD...: wall seconds and CPU seconds of the whole
# (children included) to $T/one
one() {
	local t0 t1 c0 c1
	rm -rf $T/mod/dst
	sync
	c0=$(awk '{print $14 + $15 + $16 + $17}' /proc/self/stat)
	t0=$(date +%s.%N)
	"$@" >$T/out 2>&1 || { cat $T/out >&2; return 1; }
	t1=$(date +%s.%N)
	c1=$(awk '{print $14 + $15 + $16 + $17}' /proc/self/stat)
	diff -r $T/src $T/mod/dst >/dev/null || { echo "mpi_bench: copy differs" >&2; return 1; }
	echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}' >$T/one
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf 'setting,ranks,bytes,seconds,mb_s\n' >$T/csv
measure() { # SETTING RANKS CMD...
	local s=$1 n=$2 k secs
	shift 2
	for k in $(seq 1 "$repeat"); do
		one "$@" || exit 1
		cat $T/one
	done | median >$T/med
	secs=$(cat $T/med)
	printf '%s,%s,%s,%s,%s\n' "$s" "$n" "$bytes" "$secs" \
		"$(awk -v b="$bytes" -v s="$secs" 'BEGIN {printf "%.1f", b / s / 1e6}')" | tee -a $T/csv
}
measure "rdcp (1 process; 1 server)" 1 "$rdcp" -a -q --transport tcp --port 19301 \
	$T/src/ 127.0.0.1::m/dst
for n in ${nps//,/ }; do
	measure "rdcp-mpi (2 servers)" "$n" timeout 600 mpirun.openmpi -np "$n" "$mpi" -a -q \
		--transport tcp --port 19301 --chunk-size 4M $T/src/ '127.0.0.[1-2]::m/dst'
done
# the costs the model (tests/bench/mpi_model.py) starts from: a job's fixed
# cost (one tiny file) by ranks, and small files' cost on one rank
mkdir -p $T/tiny && echo x >$T/tiny/x
mkdir -p $T/smallonly && cp -a $T/src/small $T/smallonly/
printf 'what,ranks,files,bytes,seconds\n' >$T/costs
cost() { # WHAT RANKS TREE FILES
	local k secs
	for k in $(seq 1 "$repeat"); do
		rm -rf $T/mod/c
		t0=$(date +%s.%N)
		timeout 600 mpirun.openmpi -np "$2" "$mpi" -a -q --transport tcp --port 19301 \
			"$3/" '127.0.0.[1-2]::m/c' >$T/out 2>&1 || { cat $T/out; exit 1; }
		echo "$t0 $(date +%s.%N)" | awk '{printf "%.3f\n", $2 - $1}'
	done | median >$T/med
	secs=$(cat $T/med)
	printf '%s,%s,%s,%s,%s\n' "$1" "$2" "$4" "$(du -sb --apparent-size "$3" | cut -f1)" "$secs" |
		tee -a $T/costs
}
for n in ${nps//,/ }; do
	cost overhead "$n" $T/tiny 1
done
cost files 1 $T/smallonly "$files"
cp $T/costs "$RES/mpi_costs.csv"
cp $T/csv "$RES/mpi.csv"
printf 'bash tests/bench/mpi_bench.sh --mb %s --files %s --np %s --repeat %s; %s; %s, %s cores; git %s\n' \
	"$mb" "$files" "$nps" "$repeat" "$(date -u +%Y-%m-%d)" "$(uname -r)" "$(nproc)" \
	"$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')" >"$RES/mpi.meta"
echo "mpi_bench: $RES/mpi.csv"
