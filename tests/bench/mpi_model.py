#!/usr/bin/env python3
"""What rdcp-mpi would reach on 8, 64 and 512 nodes (issue 32): a model from
costs measured here (tests/bench/mpi_bench.sh's mpi_costs.csv) and stated
assumptions. Prints a Markdown table for docs/BENCHMARKS.md.

    python3 tests/bench/mpi_model.py [RESULTS_DIR]

The job time for D bytes in F files on N nodes (one rank per node):
    t(N) = t0(N) + F * tf / N + D / (N * r(B))
  t0(N)  fixed cost of a job: start, walk, plan, four phases' barriers;
         measured on this host for 1..8 ranks (an empty tree) and taken to
         grow with log2(N) as the collectives do (fit a + b log2 N);
  tf     per-file cost on one rank (a round trip's share, a name, a sync's
         share), measured with small files over TCP on this host;
  r(B)   one node's data rate: its NIC's B times 0.9 (ib_write_bw's share of
         the line in practice), capped by the cores the chunk work takes
         (docs/BENCHMARKS.md, cores per side: gmac 3.0 cores per 100 Gb/s)
         with CORES cores for it.
Assumptions stated below the table: the servers' NICs (as many DTNs as
needed) and the parallel file systems on both ends keep up; files are
spread evenly (the plan deals them by cost, large ones in ranges).
"""
import csv
import math
import os
import sys

CORES = 16          # cores of a node given to rdcp-mpi's chunk work
GMAC_CORES_PER_100G = 3.0
EFF = 0.9

def fit_t0(rows):
    """a + b log2(N) by least squares over the overhead rows."""
    pts = [(math.log2(int(r["ranks"])), float(r["seconds"])) for r in rows]
    if len(pts) == 1:
        return pts[0][1], 0.0
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else 0.0
    return my - b * mx, max(b, 0.0)

def main():
    res = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results")
    rows = list(csv.DictReader(open(os.path.join(res, "mpi_costs.csv"))))
    over = [r for r in rows if r["what"] == "overhead"]
    files = [r for r in rows if r["what"] == "files"]
    a, b = fit_t0(over)
    f1 = [r for r in files if r["ranks"] == "1"][0]
    tf = float(f1["seconds"]) / int(f1["files"])
    print("Measured here: t0(N) = %.2f + %.2f log2(N) s; tf = %.2f ms per file on one rank.\n"
          % (a, b, tf * 1e3))
    loads = [("24.4 TiB in 200,000 files (mpifileutils' dcp example)", 24.4 * 2**40, 200000),
             ("1 PiB in 10 million files", 2**50, 10_000_000)]
    print("| workload | NIC | 8 nodes | 64 nodes | 512 nodes |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, d, f in loads:
        for gbit in (100, 200, 400):
            line = gbit * 1e9 / 8 * EFF
            cores_cap = CORES / (GMAC_CORES_PER_100G * gbit / 100) * line
            r = min(line, cores_cap)
            cells = []
            for n in (8, 64, 512):
                t = a + b * math.log2(n) + f * tf / n + d / (n * r)
                cells.append("%.0f GB/s (%s)" % (d / t / 1e9, fmt_t(t)))
            print("| %s | %d Gb/s | %s |" % (name, gbit, " | ".join(cells)))

def fmt_t(t):
    if t < 120:
        return "%.0f s" % t
    if t < 7200:
        return "%.0f min" % (t / 60)
    return "%.1f h" % (t / 3600)

if __name__ == "__main__":
    main()
