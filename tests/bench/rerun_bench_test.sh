#!/usr/bin/env bash
# The no-change rerun benchmark's short version (tests/bench/rerun_bench.py
# --short): both modes; passes when every rerun moved nothing and read next
# to nothing (the times are printed, never judged here).
set -eu
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -B "$1" --short --mode daemon --rdcp "$2" --rdcpd "$3"
"$py" -B "$1" --short --mode local --rdcp "$2" --rdcpd "$3"
