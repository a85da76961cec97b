#!/usr/bin/env bash
# Draw the benchmark charts of docs/BENCHMARKS.md from the data the
# benchmarks wrote (gnuplot, from Debian's gnuplot-nox):
#
#   bash tests/bench/charts.sh [RESULTS_DIR [OUT_DIR]]
#
# RESULTS_DIR (default tests/bench/results) holds what the benchmarks wrote:
#   big.csv    bash tests/bench/bench.sh              one big file in the rig:
#                                                     rdcp, ib_write_bw, scp, rsync, nc
#   small.csv  bash tests/bench/bench.sh --small      small-file trees: tar|nc, rdcp, rsync, scp
#   host.csv   python3 tests/bench/host_bench.py      one big file over TCP: rdcp, nc, socat
#   threads.csv python3 tests/bench/host_bench.py --threads 1,2,4
#                                                     CPU s/GiB by check and threads
#   mpi.csv    bash tests/bench/mpi_bench.sh          rdcp-mpi: job throughput against
#                                                     ranks over TCP on this host; with
#   mpi_rig.csv  (mpi_2vm_test, MPI_BENCH=1)          the same over RDMA in the rig
# each with NAME.meta: the command, date, machine and commit, printed under
# the chart. OUT_DIR (default docs/charts) gets NAME.png, and a copy of
# NAME.csv and NAME.meta so the published chart keeps its data beside it.
# A chart whose data is missing is skipped with a note; exit 1 if none was
# drawn.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd -P)
res=${1:-$top/tests/bench/results}
out=${2:-$top/docs/charts}
command -v gnuplot >/dev/null || {
	echo "charts: gnuplot is missing (apt-get install gnuplot-nox)" >&2
	exit 1
}
mkdir -p "$out"
drawn=0

# caption NAME: the meta line, quoted for gnuplot
caption() { sed 's/"/\\"/g' "$res/$1.meta" 2>/dev/null | head -n1; }

# have NAME: its data is there (a header and at least one row)
have() {
	if [ -s "$res/$1.csv" ] && [ "$(wc -l <"$res/$1.csv")" -ge 2 ]; then
		cp "$res/$1.csv" "$out/$1.csv"
		cp "$res/$1.meta" "$out/$1.meta" 2>/dev/null || : >"$out/$1.meta"
		return 0
	fi
	echo "charts: no $res/$1.csv: its chart is skipped" >&2
	return 1
}

common='set terminal pngcairo size 1000,560 font "DejaVu Sans,11" noenhanced
set datafile separator ","
set style fill solid 0.85 border -1
set grid ytics lc rgb "#dddddd"
set key top right
set bmargin 7'

# hbar NAME TITLE: one horizontal bar per row of NAME.csv (tool,mib_s,...),
# labelled with the tool and its value; rdcp's bars blue, the reference
# tools' orange, so the comparison reads at a glance
hbar() {
	local n
	n=$(($(wc -l <"$out/$1.csv") - 1))
	gnuplot <<EOF
$common
set output "$out/$1.png"
set title "$2"
set label 1 "$(caption "$1")" at screen 0.01, 0.03 font ",7"
set bmargin 5
set lmargin at screen 0.33
set rmargin at screen 0.95
set grid xtics lc rgb "#dddddd"
set grid noytics
set xlabel "MiB/s (higher is better)"
set xrange [0:*]
set offsets 0, graph 0.08, 0, 0
set yrange [$n - 0.4:-0.6]
set ytics font ",9" nomirror
set key bottom right
colour(s) = strstrt(s, "rdcp") == 1 ? 0x3b6ea8 : 0xd98c2b
plot "$out/$1.csv" skip 1 using (\$2/2):0:(\$2/2):(0.35):(colour(strcol(1))):ytic(1) \\
	with boxxyerror lc rgb variable notitle, \\
	"" skip 1 using 2:0:(sprintf(" %.1f", \$2)) with labels left font ",9" notitle, \\
	NaN with boxes lc rgb "#3b6ea8" title "rdcp", \\
	NaN with boxes lc rgb "#d98c2b" title "reference tools"
EOF
}

if have big; then
	hbar big "One big file over Soft-RoCE, two QEMU VMs: throughput"
	drawn=$((drawn + 1))
fi

if have small; then
	# rows: tree,tool,seconds -> one cluster per tree, one bar per tool
	python3 - "$out/small.csv" "$out/small.dat" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
trees = list(dict.fromkeys(r["tree"] for r in rows))
tools = list(dict.fromkeys(r["tool"] for r in rows))
val = {(r["tree"], r["tool"]): r["seconds"] for r in rows}
with open(sys.argv[2], "w") as f:
    f.write(",".join(["tree"] + tools) + "\n")
    for t in trees:
        f.write(",".join(['"%s"' % t] + [val.get((t, x), "NaN") for x in tools]) + "\n")
EOF
	ncol=$(head -n1 "$out/small.dat" | awk -F, '{print NF}')
	gnuplot <<EOF
$common
set output "$out/small.png"
set title "Small-file trees over Soft-RoCE: wall clock (s, lower is better)"
set label 1 "$(caption small)" at screen 0.01, 0.03 font ",7"
set style data histograms
set style histogram clustered gap 1
set ylabel "seconds"
set yrange [0:*]
set logscale y
set yrange [0.1:*]
plot for [i=2:$ncol] "$out/small.dat" using i:xtic(1) title columnheader(i)
EOF
	rm -f "$out/small.dat"
	drawn=$((drawn + 1))
fi

if have host; then
	hbar host "One big file over TCP on one host (127.0.0.1, tmpfs): throughput"
	drawn=$((drawn + 1))
fi

if have threads; then
	# rows: checksum,threads,... -> one cluster per checksum, one bar per thread count,
	# send and receive CPU stacked as one total (send + recv) per bar
	python3 - "$out/threads.csv" "$out/threads.dat" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cks = list(dict.fromkeys(r["checksum"] for r in rows))
ths = list(dict.fromkeys(r["threads"] for r in rows))
val = {(r["checksum"], r["threads"]):
       "%.3f" % (float(r["cpu_s_per_gib_send"]) + float(r["cpu_s_per_gib_recv"])) for r in rows}
with open(sys.argv[2], "w") as f:
    f.write(",".join(["checksum"] + ["--threads " + t for t in ths]) + "\n")
    for c in cks:
        f.write(",".join([c] + [val.get((c, t), "NaN") for t in ths]) + "\n")
EOF
	ncol=$(head -n1 "$out/threads.dat" | awk -F, '{print NF}')
	gnuplot <<EOF
$common
set output "$out/threads.png"
set title "CPU seconds per GiB, sender + receiver, by chunk check and threads (lower is better)"
set label 1 "$(caption threads)" at screen 0.01, 0.03 font ",7"
set style data histograms
set style histogram clustered gap 1
set xlabel "chunk check (--checksum-choice)"
set ylabel "CPU s / GiB"
set yrange [0:*]
plot for [i=2:$ncol] "$out/threads.dat" using i:xtic(1) title columnheader(i)
EOF
	rm -f "$out/threads.dat"
	drawn=$((drawn + 1))
fi

if have mpi; then
	# rows: setting,ranks,bytes,seconds,mb_s; one line per setting and place
	# (this host over TCP; the rig over RDMA when mpi_rig.csv is there); one
	# rdcp is one point at 1 rank
	python3 - "$out/mpi.csv" "$res/mpi_rig.csv" "$out/mpi.dat" <<'EOF'
import csv, os, sys
series = {}
for path, where in ((sys.argv[1], "host, TCP"), (sys.argv[2], "rig, RDMA")):
    if not os.path.exists(path):
        continue
    for r in csv.DictReader(open(path)):
        series.setdefault("%s (%s)" % (r["setting"], where), []).append((int(r["ranks"]), r["mb_s"]))
with open(sys.argv[3], "w") as f:
    for name, pts in series.items():
        f.write('"%s"\n' % name)
        for n, v in sorted(pts):
            f.write("%d %s\n" % (n, v))
        f.write("\n\n")
EOF
	if [ -s "$res/mpi_rig.csv" ]; then
		cp "$res/mpi_rig.csv" "$out/mpi_rig.csv"
		cp "$res/mpi_rig.meta" "$out/mpi_rig.meta" 2>/dev/null || : >"$out/mpi_rig.meta"
	fi
	nser=$(grep -c '^"' "$out/mpi.dat")
	# the widest rank count, for an x range gnuplot can take from one point up
	xmax=$(awk 'NF == 2 && $1 ~ /^[0-9]+$/ && $1 > m {m = $1} END {print (m > 1 ? m : 2) * 1.25}' "$out/mpi.dat")
	gnuplot <<EOF
$common
set output "$out/mpi.png"
set datafile separator whitespace
set title "rdcp-mpi: job throughput against ranks (MB/s, higher is better)"
set label 1 "$(caption mpi)" at screen 0.01, 0.03 font ",7"
set xlabel "MPI ranks"
set ylabel "MB/s"
set logscale x 2
set xrange [0.8:$xmax]
set yrange [0:*]
set key bottom left
set style data linespoints
plot for [i=0:$((nser - 1))] "$out/mpi.dat" index i using 1:2 title columnheader(1) lw 2 pt 7
EOF
	rm -f "$out/mpi.dat"
	drawn=$((drawn + 1))
fi

[ "$drawn" -gt 0 ] || {
	echo "charts: nothing to draw in $res (run the benchmarks first)" >&2
	exit 1
}
echo "charts: $drawn chart(s) in $out"
