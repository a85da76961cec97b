# shellcheck shell=bash
# kill -9 during --delete (issue 29), one host (RIG_MODE 1): rdcp and an
# rdcpd here, over RDMA in the rig (over TCP with host_test.sh). KILLS
# rounds (default 20); each starts from the same prior destination (files
# changed, missing and extra, a file where the source has a directory and a
# directory where it has a file) and runs rdcp -a with a --delete mode,
# pushing or pulling, paced so the run lasts a few seconds, and kill -9s
# the client or the daemon (in turn) at a random moment. Then, before
# anything else runs:
#   - never a file lost that the source still has: every path that was a
#     regular file in the destination and is one in the source is there,
#     holding its old bytes or the source's;
#   - nothing wrong under a final name: every regular file holds the
#     source's bytes or the bytes it had before;
#   - never a destination entry deleted whose replacement was not verified:
#     a directory the source turned into a file is still that directory
#     (whole) or is the source's file;
#   - never fewer good files (equal to the source) than before.
# Then the same command without a kill: the destination equals the source,
# no partial left. Last, unreadable_case (guest_lib.sh): a source directory
# unreadable mid-walk with --delete, as nobody.
#   KILLS=20 bash tests/e2e/host_test.sh 1 tests/e2e/delkill_guest.sh
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
S=$(br "$RIG_SELF_IP")
T=/tmp/delkill
KILLS=${KILLS:-20}
# the run lasts about DATA / RATE: kills land from its first tenth on
if over_rdma; then RATE=8M; else RATE=8M; fi
rm -rf "$T"
mkdir -p "$T/mod"
cat >"$T/d.conf" <<EOF
[m]
    path = $T/mod
    uid = root
    read only = no
    delete = yes
EOF
start_daemon dk --config "$T/d.conf" --pool-size 4M || exit 1

# The source: 12 directories of small files, a few 1-2 MiB files among
# them (about 14 MiB in all), one directory that the destination has as a
# file and one file that the destination has as a directory.
mk_src() {
	local s=$1 d i
	mkdir -p "$s"
	for d in $(seq 1 12); do
		mkdir -p "$s/d$d/sub"
		for i in $(seq 1 15); do echo "file $d $i" >"$s/d$d/f$i"; done
		for i in 1 2; do echo "deep $d $i" >"$s/d$d/sub/g$i"; done
	done
	for d in 2 5 8 11; do head -c $(((d % 3 + 1) << 20)) /dev/urandom >"$s/d$d/big"; done
	head -c $((3 << 20)) /dev/urandom >"$s/d12/sub/large"
	mkdir -p "$s/was-file"
	echo inside >"$s/was-file/x"
	echo "now a file" >"$s/was-dir"
}
# The prior destination, made from the source: changed files (other
# bytes, an older mtime so the quick check sends them), missing files,
# extra files and directories in every directory, and the type changes.
mk_prior() {
	local p=$1 d
	rm -rf "$p"
	cp -a "$T/src/." "$p"
	for d in $(seq 1 12); do
		echo "old $d" >"$p/d$d/f3"
		touch -d '2001-01-01' "$p/d$d/f3"
		rm -f "$p/d$d/f7"
		echo "extra $d" >"$p/d$d/extra-$d"
		mkdir -p "$p/d$d/xdir/inner"
		echo "extra deep $d" >"$p/d$d/xdir/inner/e"
	done
	# the large files differ too (zeros, an old mtime): most of the data
	# moves again, so the paced run lasts long enough for the kills
	for f in d2/big d5/big d8/big d11/big d12/sub/large; do
		head -c "$(stat -c %s "$p/$f")" /dev/zero >"$p/$f"
		touch -d '2001-01-01' "$p/$f"
	done
	mkdir -p "$p/gone-dir/a"
	echo "extra top" >"$p/gone-dir/a/t"
	rm -rf "$p/was-file" "$p/was-dir"
	echo "a file the source has as a directory" >"$p/was-file"
	mkdir -p "$p/was-dir/keep"
	echo "inside the old directory" >"$p/was-dir/keep/k"
}
mk_src "$T/src"
mk_prior "$T/prior"
cp -a "$T/src" "$T/mod/src" # for the pulls

# every round starts from this same prior destination (its snapshot is judged against)
# snap DIR OUT: "type md5 path" per entry (find's type letters), partials
# and rdcp's own names left out. One process for the whole tree: a fork or
# two per file cost about 30 s a snapshot in the rig (TCG), most of a round.
snap() {
	python3 - "$1" >"$2" <<-'EOF'
		import hashlib, os, stat, sys
		root = os.fsencode(sys.argv[1])
		lines = []
		for dp, dns, fns in os.walk(root):
		    for n in dns + fns:
		        full = os.path.join(dp, n)
		        rel = os.path.relpath(full, root)
		        if any(c.startswith(b".rdcp") for c in rel.split(b"/")):
		            continue
		        m = os.lstat(full).st_mode
		        if stat.S_ISREG(m):
		            with open(full, "rb") as f:
		                h = hashlib.md5(f.read()).hexdigest().encode()
		            lines.append(b"f " + h + b" " + rel)
		        else:
		            y = "dlpscb"[[stat.S_ISDIR(m), stat.S_ISLNK(m), stat.S_ISFIFO(m),
		                           stat.S_ISSOCK(m), stat.S_ISCHR(m), True].index(True)]
		            lines.append(y.encode() + b" - " + rel)
		sys.stdout.buffer.write(b"".join(l + b"\n" for l in sorted(lines)))
	EOF
}
snap "$T/src" "$T/src.snap"
snap "$T/prior" "$T/prior.snap"

# judge AFTER: the invariants above, one line per breach
judge() {
	python3 - "$T/src.snap" "$T/prior.snap" "$1" <<-'EOF'
		import sys
		def load(p):
		    m = {}
		    for line in open(p, encoding="utf-8", errors="surrogateescape"):
		        y, h, path = line.rstrip("\n").split(" ", 2)
		        m[path] = (y, h)
		    return m
		src, prior, now = (load(p) for p in sys.argv[1:4])
		bad = []
		for p, (y, h) in now.items():
		    if y == "f" and h not in {src.get(p, ("", ""))[1], prior.get(p, ("", ""))[1]}:
		        bad.append("wrong bytes under a final name: " + p)
		for p, (y, h) in prior.items():
		    if y == "f" and src.get(p, ("",))[0] == "f" and now.get(p, ("",))[0] != "f":
		        bad.append("lost a file the source has: " + p)
		    if y == "d" and src.get(p, ("",))[0] == "f":
		        if now.get(p, ("",))[0] == "f":
		            continue
		        for q in prior:
		            if q.startswith(p + "/") and q not in now:
		                bad.append("a directory's entry went before its replacement "
		                           "was verified: " + q)
		good = lambda m: sum(1 for p, v in m.items() if v[0] == "f" and src.get(p) == v)
		if good(now) < good(prior):
		    bad.append("fewer good files than before: %d < %d" % (good(now), good(prior)))
		for b in bad[:20]:
		    print(b)
		sys.exit(1 if bad else 0)
	EOF
}

# DELKILL_MODES: other options in place of the four --delete modes (a check of the harness)
read -r -a modes <<<"${DELKILL_MODES:---delete --delete-after --delete-delay --delete-during}"
ok=0 landed=0
for r in $(seq 1 "$KILLS"); do
	mode=${modes[$((r % ${#modes[@]}))]}
	case $((r % 4)) in
	0 | 1) dir=push ;;
	*) dir=pull ;;
	esac
	if [ $((r % 2)) -eq 0 ]; then victim=rdcp; else victim=rdcpd; fi
	if [ $dir = push ]; then
		dst=$T/mod/dst
		args=("$T/src/" "$S::m/dst/")
	else
		dst=$T/dst
		args=("$S::m/src/" "$T/dst/")
	fi
	rm -rf "$dst"
	cp -a "$T/prior" "$dst"
	daemon_alive dk || start_daemon dk --config "$T/d.conf" --pool-size 4M || exit 1
	# kill after 5..95 % of the time the paced run takes (about 1.8 s)
	delay=$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.1 + (r % 90) / 50 }')
	# --timeout: over RDMA a peer killed mid-run is noticed by silence
	"$RDCP" -a "$mode" --retries 0 --timeout 5 --bwlimit=$RATE --chunk-size 256K "${args[@]}" \
		>"$T/out" 2>&1 &
	cpid=$!
	nap "$delay"
	if [ $victim = rdcp ]; then
		kill -9 $cpid 2>/dev/null
	else
		kill -9 "$(cat /tmp/dk.pid)" 2>/dev/null
	fi
	wait $cpid 2>/dev/null
	rc=$?
	[ $rc -eq 0 ] && landed=$((landed + 1))
	echo "    round $r: $dir $mode, kill -9 $victim after ${delay}s: exit $rc ($(date +%T))"
	snap "$dst" "$T/now.snap"
	if judge "$T/now.snap" >"$T/judge.out"; then
		ok=$((ok + 1))
	else
		fail "round $r ($dir $mode, kill -9 $victim after ${delay}s): $(head -3 "$T/judge.out" | tr '\n' ';')"
	fi
	# the same command again, to the end
	if ! daemon_alive dk; then
		start_daemon dk --config "$T/d.conf" --pool-size 4M || exit 1
		echo "    rdcpd restarted ($(date +%T))"
	fi
	timeout 120 "$RDCP" -a "$mode" "${args[@]}" >"$T/out" 2>&1
	rc=$?
	echo "    round $r: the rerun exits $rc ($(date +%T))"
	snap "$dst" "$T/end.snap"
	if [ $rc -ne 0 ] || ! cmp -s "$T/src.snap" "$T/end.snap" ||
		[ -n "$(find "$dst" -name '.rdcp-partial*' -print -quit)" ]; then
		fail "round $r ($dir $mode): the rerun exits $rc and leaves $(diff "$T/src.snap" "$T/end.snap" | grep -c '^[<>]') differences"
		sed 's/^/    | /' "$T/out" | head -5
	fi
done
check "kill -9 during --delete, $KILLS rounds: every judged state safe ($ok of $KILLS; $landed finished before the kill)" \
	[ "$ok" -eq "$KILLS" ]
check "  the kills landed mid-run (at most a quarter finished first)" [ "$landed" -le $((KILLS / 4)) ]
stop_daemon dk

# A source directory unreadable mid-walk with --delete, as nobody, local and
# through an rdcpd nobody started (over RDMA here; guest_lib.sh; the TCP
# version is in mirror_guest.sh): this rig boot is already paid for.
unreadable_case /tmp/unread 18741

# --remove-source-files over RDMA (mirror_guest.sh has the rest over TCP): a
# push and a pull of a tree, each source gone once its copy arrived, the
# server's only from a module with delete = yes; a file the receiver has
# with the same size and time, other bytes, compared before its source goes.
M=/tmp/rsf
rm -rf "$M" && mkdir -p "$M/mod" "$M/src"
make_tree "$M/src/t"
cp -a "$M/src/t" "$M/keep"
start_daemon rsf --port 18742 --module "m=$M/mod,delete" || exit 1
run -a --remove-source-files "$M/src/t" "rdcp://$S:18742/m/"
check "--remove-source-files, a push over RDMA: exit 0, the tree arrived, no file left in the source" \
	eval '[ "$RC" -eq 0 ] && same_tree "$M/keep" "$M/mod/t" && [ -z "$(find "$M/src/t" ! -type d)" ]'
mkdir -p "$M/back"
run -a --remove-source-files "rdcp://$S:18742/m/t/" "$M/back/t/"
check "  pulled back with --remove-source-files: exit 0, the tree whole, the module's files gone" \
	eval '[ "$RC" -eq 0 ] && same_tree "$M/keep" "$M/back/t" && [ -z "$(find "$M/mod/t" ! -type d)" ]'
mkdir -p "$M/mod/s" "$M/back/s"
echo aaaa >"$M/mod/s/same"
echo bbbb >"$M/back/s/same"
touch -d '2020-01-01' "$M/mod/s/same" "$M/back/s/same"
run -a --remove-source-files "rdcp://$S:18742/m/s/" "$M/back/s/"
check "  a file there with the same size and time, other bytes: compared, fixed, then its source removed" \
	eval '[ "$RC" -eq 0 ] && [ "$(cat "$M/back/s/same")" = aaaa ] && [ ! -e "$M/mod/s/same" ]'
over_rdma && check "  all over RDMA" eval '[ "$(grep -c "over rdma" /tmp/rsf.log)" -ge 3 ]'
stop_daemon rsf
finish
