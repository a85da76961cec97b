#!/bin/bash
# SPDX-License-Identifier: MIT
#
# lib/xport reads one way down (docs/DESIGN.md, "Inside lib/xport"): no
# file calls into a file that calls back into it, directly or around a
# circle, and rd_xport.c reaches the transports through their entry
# tables alone.
#
# The graph is taken from the objects the build made, not from what the
# sources say: for every object in lib/xport's archives, which global
# symbols (functions, tables) it uses that another object defines. A
# prototype written by hand to call upwards is caught as well as an
# #include of a higher layer's header (which Bazel already refuses).
#
# usage: layers_test.sh FILE... (the archives and whatever else the
# lib/xport targets put out; only the .a files are read)
set -euo pipefail

fail() {
	echo "layers_test: $*" >&2
	exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# node name of an object: its folder below lib/xport and its stem,
# e.g. rdma/rd_xport_rdma_cm; the .pic.a and .a copies give the same names
narch=0
for a in "$@"; do
	case $a in
	*.a) ;;
	*) continue ;;
	esac
	dir=$(dirname "$a")
	dir=${dir#*lib/xport}
	dir=${dir#/}
	[ -n "$dir" ] && dir="$dir/"
	[ -r "$a" ] || fail "cannot read $a"
	narch=$((narch + 1))
	# "archive:member.o: [addr] type symbol"; undefined ones have no address
	nm -A "$a" | awk -v dir="$dir" '
		{
			split($1, f, ":"); m = f[2]
			sub(/\.pic\.o$/, "", m); sub(/\.o$/, "", m)
			if (m == "") next
			type = $(NF - 1); sym = $NF
			if (type == "U")
				print "use", dir m, sym
			else if (type ~ /^[TDRBCGSV]$/)
				print "def", dir m, sym
		}' >>"$work/syms"
done
[ "$narch" -gt 0 ] || fail "no archive given"

sort -u "$work/syms" -o "$work/syms"
awk '$1 == "def" { print $3, $2 }' "$work/syms" | sort -u >"$work/defs"
# one symbol, one file: two objects defining it would make the graph lie
dups=$(awk '{ print $1 }' "$work/defs" | uniq -d)
[ -z "$dups" ] || fail "defined in more than one object: $dups"

# edges "caller callee symbol", between different objects
awk 'NR == FNR { def[$1] = $2; next }
     $1 == "use" && ($3 in def) && def[$3] != $2 { print $2, def[$3], $3 }' \
	"$work/defs" "$work/syms" | sort -u >"$work/edges"

nobj=$(awk '{ print $2 }' "$work/syms" | sort -u | wc -l)
nedge=$(awk '{ print $1, $2 }' "$work/edges" | sort -u | wc -l)
echo "lib/xport: $nobj objects, $nedge file-to-file edges:"
awk '{ k = $1 " -> " $2; s[k] = s[k] " " $3 } END { for (k in s) print "  " k ":" s[k] }' \
	"$work/edges" | sort
# A graph this small means the objects were not read, not that all is well.
[ "$nobj" -ge 10 ] || fail "only $nobj objects found: were the archives read?"
[ "$nedge" -ge 10 ] || fail "only $nedge edges found: were the archives read?"

# 1. No circle: tsort refuses a graph with a loop and names its members.
if ! awk '{ print $1, $2 }' "$work/edges" | tsort >/dev/null 2>"$work/tsort"; then
	# tsort names each loop it meets; the first few say enough
	head -n 40 "$work/tsort" >&2
	fail "lib/xport's files call each other in a circle (above)"
fi

# 2. rd_xport.c uses nothing of a transport but its entry table.
bad=$(awk '$1 == "rd_xport" && $2 ~ /^(rdma|tcp)\// && $3 !~ /^rd_xport_(rdma|tcp)$/' \
	"$work/edges")
[ -z "$bad" ] || fail "rd_xport.c goes around a transport's entry table: $bad"
grep -q '^rd_xport rdma/[^ ]* rd_xport_rdma$' "$work/edges" ||
	fail "rd_xport.c does not use rd_xport_rdma: is the graph read right?"

echo "layers_test: no circle; rd_xport.c reaches the transports through their tables"
