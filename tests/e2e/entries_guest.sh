# shellcheck shell=bash
# Memory stays bounded whatever the file count (issue 13): a tree of ENTRIES
# empty files (default 20,000; 1,000 per directory) pushed to rdcpd, every
# entry arrives, and both sides' peak RSS stays under RSS_MAX_MIB (100):
# the client's from --json (getrusage), the daemon's VmHWM from /proc.
# One host (RIG_MODE 1): //tests/e2e:entries_tcp_host_test over TCP.
# The full version, 1,000,000 entries (a few minutes; about 1 GiB of tmpfs
# inodes): tests/bench/entries.sh.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
ENTRIES=${ENTRIES:-20000}
RSS_MAX_MIB=${RSS_MAX_MIB:-100}
EPORT=18730

# make_empty_tree DIR N: N empty files, 1,000 per directory (one touch each).
make_empty_tree() {
	local d=$1 n=$2 i=0 k
	while [ "$i" -lt "$n" ]; do
		k=$((n - i < 1000 ? n - i : 1000))
		mkdir -p "$d/d$i"
		(cd "$d/d$i" && seq -f 'e%06g' 1 "$k" | xargs touch)
		i=$((i + k))
	done
}

mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

mkdir -p /tmp/emod /tmp/esrc
make_empty_tree /tmp/esrc/tree "$ENTRIES"
ndirs=$(find /tmp/esrc/tree -mindepth 1 -type d | wc -l)
start_daemon ed --module e=/tmp/emod --port $EPORT || exit 1
dpid=$(cat /tmp/ed.pid)
t0=$(date +%s.%N)
run -r --json --port $EPORT /tmp/esrc/tree "$(br "$RIG_SELF_IP")::e/"
t1=$(date +%s.%N)
check "push of $ENTRIES empty files in $ndirs directories: exit 0" [ "$RC" -eq 0 ]
got=$(find /tmp/emod/tree -type f | wc -l)
check "  all $ENTRIES arrived ($got)" [ "$got" -eq "$ENTRIES" ]
crss=$(sed -n 's/.*"rss_peak_bytes": \([0-9]*\).*/\1/p' /tmp/out)
dkb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$dpid/status")
echo "entries: $ENTRIES in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s;" \
	"peak RSS: rdcp $(mib "${crss:-0}") MiB, rdcpd $(mib $((${dkb:-0} * 1024))) MiB"
check "  rdcp peak RSS under $RSS_MAX_MIB MiB" [ "${crss:-999999999999}" -lt $((RSS_MAX_MIB << 20)) ]
check "  rdcpd peak RSS under $RSS_MAX_MIB MiB" [ "${dkb:-999999999}" -lt $((RSS_MAX_MIB << 10)) ]
stop_daemon ed
finish
