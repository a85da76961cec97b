#!/usr/bin/env bash
# The short version of the host benchmarks in CI, and the charts drawn from
# what they write: host_bench.py (one file over TCP against nc and socat; the
# --threads matrix) with a small file, then charts.sh. Checks that each run
# measured and verified its copies, that the data files have their rows, and
# that each chart is a PNG of the expected size. Timings are not judged.
#
# usage: charts_test.sh HOST_BENCH CHARTS RDCP RDCPD
set -u
hb=$1 charts=$2 rdcp=$(readlink -f "$3") rdcpd=$(readlink -f "$4")
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/charts_test.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export RDCP_BENCH_RESULTS=$T/res

python3 "$hb" --mb 16 --rdcp "$rdcp" --rdcpd "$rdcpd" >"$T/host.out" 2>&1 ||
	fail "host_bench.py failed: $(tail -5 "$T/host.out")"
cat "$T/host.out"
python3 "$hb" --mb 16 --threads 1,2 --checksums none,gmac --rdcp "$rdcp" --rdcpd "$rdcpd" \
	>"$T/thr.out" 2>&1 || fail "host_bench.py --threads failed: $(tail -5 "$T/thr.out")"
cat "$T/thr.out"
# rows: 2 rdcp + nc + socat; 2 checksums x 2 thread counts
[ "$(tail -n +2 "$T/res/host.csv" 2>/dev/null | wc -l)" = 4 ] || fail "host.csv: want 4 rows: $(cat "$T/res/host.csv" 2>&1)"
[ "$(tail -n +2 "$T/res/threads.csv" 2>/dev/null | wc -l)" = 4 ] || fail "threads.csv: want 4 rows: $(cat "$T/res/threads.csv" 2>&1)"
grep -q "host_bench.py --mb 16" "$T/res/host.meta" 2>/dev/null || fail "host.meta does not name the command"
grep -q "git " "$T/res/threads.meta" 2>/dev/null || fail "threads.meta does not name the commit"

bash "$charts" "$T/res" "$T/out" || fail "charts.sh failed"
for c in host threads; do
	f=$T/out/$c.png
	if [ "$(head -c 8 "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
		fail "$c.png is not a PNG"
		continue
	fi
	# IHDR: width and height, big-endian, at bytes 16..23
	wh=$(od -An -tu1 -j16 -N8 "$f" | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
	[ "$wh" = 1000x560 ] || fail "$c.png is $wh, want 1000x560"
	[ "$(stat -c %s "$f")" -gt 5000 ] || fail "$c.png is nearly empty"
done
# no data, no chart: an empty results dir is an error
mkdir "$T/empty"
bash "$charts" "$T/empty" "$T/out2" 2>/dev/null && fail "charts.sh drew something from no data"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "charts: host benchmarks measured, data written, charts drawn"
