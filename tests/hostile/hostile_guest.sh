#!/bin/sh
# Runs inside a Soft-RoCE rig VM (tests/rig/rig.sh run1): hostile peers
# against the real programs.
#
#   hostile_guest.sh RDCP RDCPD RDCP_EVIL      (absolute paths)
#
# Push side: real rdcpd, rdcp_evil push-paths tries to write outside the
# module; then rdcpd must still be alive and serve a legitimate push.
# Pull side: rdcp_evil serve-evil sends hostile entries to the real rdcp;
# each hostile case must fail and nothing may land outside DEST.
# Prints PASS/FAIL per check; exits 1 if any check failed.
# HOSTILE_SELFTEST_FAIL=1 adds a check that must fail (proves the harness
# can fail). The "plant" cases (a server sending top-level names that were
# never asked for) must be refused.
set -u

RDCP=$1
RDCPD=$2
EVIL=$3
IP=${RIG_SELF_IP:-10.77.1.1}
DPORT=18710
EPORT=18600
fails=0
npass=0

pass() {
	echo "PASS: $*"
	npass=$((npass + 1))
}
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
check_absent() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		fail "$2: $1 exists: $(ls -ld "$1" 2>&1)"
	else
		pass "$2: $1 does not exist"
	fi
}
# Anything named *evil* in the writable trees, outside the allowed dir $1.
check_no_stray() {
	# shellcheck disable=SC2086 # a list of directories
	stray=$(find ${STRAY_DIRS:-/tmp /var/tmp /run /root} -name '*evil*' ! -name 'rdcp_evil*' \
		! -path "$1/*" ! -path "$1" ! -path /tmp/hostile-logs/\* \
		! -path "${RIG_CWD:-/nonexistent}/*" 2>/dev/null)
	if [ -n "$stray" ]; then
		fail "$2: entries outside $1: $(echo "$stray" | tr '\n' ' ')"
	else
		pass "$2: nothing named *evil* outside $1"
	fi
}
# still_running PID WHAT: PASS if the daemon PID is still there
still_running() {
	if kill -0 "$1" 2>/dev/null; then
		pass "$2 is still running"
	else
		fail "$2 died"
	fi
}
# rdcpd PID must still run; stop it and show LOG (its last LINES lines, or all)
stop_rdcpd() { # PID LOG WHAT [LINES]
	still_running "$1" "$3: rdcpd"
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	echo "--- rdcpd log ($3)"
	sed 's/^/    /' "$2" | tail -n "${4:-+1}"
}
wait_for() { # FILE PATTERN SECONDS
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt $(($3 * 5)) ] && return 1
		sleep 0.2
	done
	return 0
}

for b in "$RDCP" "$RDCPD" "$EVIL"; do
	if [ ! -x "$b" ]; then
		echo "FAIL: binary $b not found in the guest"
		exit 1
	fi
done
mkdir -p /tmp/hostile-logs /tmp/mod /tmp/outside
LOGS=/tmp/hostile-logs

# ---------------------------------------------------------------- push side
echo "=== push side: rdcp_evil push-paths against rdcpd"
# The attacks come one after another from one address; a refused session
# can still be winding down (flushing its ERROR) when the next one connects,
# so the per-host limit (default 4; tested in auth_guest.sh) is raised here.
"$RDCPD" --foreground --no-auth --module m=/tmp/mod --port $DPORT --timeout 10 \
	--max-conns-per-host 64 --ready-file $LOGS/rdcpd.ready 2>$LOGS/rdcpd.log &
DPID=$!
if ! wait_for $LOGS/rdcpd.ready . 30; then
	fail "rdcpd did not start"
	cat $LOGS/rdcpd.log
	exit 1
fi

# Issue 27 item 11: a file of the module a hostile push tries to hard-link.
printf 'hl\n' >/tmp/mod/hl-secret
# The self-check also makes push-paths meet an entry it cannot see refused.
RDCP_EVIL_CONTROL=${HOSTILE_SELFTEST_FAIL:-0} "$EVIL" push-paths "$IP" $DPORT m
rc=$?
if [ $rc -eq 0 ]; then
	pass "push-paths: every hostile entry refused by rdcpd"
else
	fail "push-paths: rdcp_evil exited $rc (an entry was accepted or a case went wrong)"
fi
check_absent /tmp/evil "push"
# Issue 30 item 4: listings obey the same confinement as pulls.
"$EVIL" list-paths "$IP" $DPORT m >$LOGS/list.out 2>&1
rc=$?
sed 's/^/    /' $LOGS/list.out
if [ $rc -eq 0 ]; then
	pass "list-paths: listings of m/../, ../ and reserved names refused, m itself listed"
else
	fail "list-paths: rdcp_evil exited $rc (a listing left the module, or the control failed)"
fi
check_absent /etc/evil "push"
check_absent /tmp/mod/../evil "push"
check_absent /evil "push"
check_absent /tmp/outside/evil "push via symlink"
check_absent /tmp/outside/evildir "push via symlink"
check_absent /tmp/outside/evillink "push via symlink"
check_absent /tmp/mod/hl-evil "push: an HLINK without -H agreed"
check_absent /tmp/mod/hl-pub-evil "push -H: an HLINK to a file the session did not place"
check_absent /tmp/mod/.rdcp-partial.evil "push: a planted partial"
check_absent /tmp/mod/.rdcp-partial.evil.rec "push: a planted record"
if [ -z "$(ls -A /tmp/outside)" ]; then
	pass "push: /tmp/outside is still empty"
else
	fail "push: /tmp/outside has: $(ls -A /tmp/outside)"
fi
if [ -L /tmp/mod/link ]; then
	pass "push: the legit symlink mod/link exists (the symlink cases were real)"
else
	fail "push: mod/link was not created: the symlink cases proved nothing"
fi
check_no_stray /tmp/mod "push"
echo "module after the attack:"
(cd /tmp/mod && find . -exec ls -ld {} + 2>&1 | sed 's/^/    /')

if kill -0 $DPID 2>/dev/null; then
	pass "rdcpd is still running after the attack"
else
	fail "rdcpd died during the attack"
fi
printf 'hello rdcp after the attack\n' >/tmp/legit.txt
timeout 60 "$RDCP" --timeout 10 /tmp/legit.txt "$IP::m/" >$LOGS/legit.out 2>&1
rc=$?
if [ $rc -eq 0 ] && cmp -s /tmp/legit.txt /tmp/mod/legit.txt; then
	pass "rdcpd still serves a legit push (content matches)"
else
	fail "legit push after the attack: rdcp exited $rc; $(cat $LOGS/legit.out)"
fi
if kill -0 $DPID 2>/dev/null; then
	pass "rdcpd still running after the legit push"
else
	fail "rdcpd died after the legit push"
fi
# Issue 7 item 2: rdcpd (root here) never makes setuid/setgid files and
# never chowns to wire ids for a daemon client, whatever it asks for.
mkdir -p /tmp/own
printf '#!/bin/sh\n' >/tmp/own/suid
chown 1234:2345 /tmp/own/suid
chmod 6755 /tmp/own/suid
timeout 60 "$RDCP" -p -o -g --timeout 10 /tmp/own/suid "$IP::m/" >$LOGS/own.out 2>&1
rc=$?
st=$(stat -c '%a %u %g' /tmp/mod/suid 2>&1)
if [ $rc -eq 0 ] && [ "$st" = "755 0 0" ]; then
	pass "push -p -o -g of a 6755 file owned 1234:2345 to rdcpd: lands 755 root:root"
else
	fail "push -p -o -g to rdcpd: exit $rc, got '$st': $(cat $LOGS/own.out)"
fi
RDCP_EVIL_OPEN_FLAGS=0x1b "$EVIL" push-paths "$IP" $DPORT m >$LOGS/flags.out 2>&1
if grep -q "OPEN_OK flags 0x3\$" $LOGS/flags.out && ! grep -q "OPEN_OK flags 0x1b" $LOGS/flags.out; then
	pass "OPEN asking owner+group: OPEN_OK honours only recursive+preserve (0x3)"
else
	fail "OPEN asking owner+group: $(grep OPEN $LOGS/flags.out | sort -u | tr '\n' ' ')"
fi
# Issue 7 item 11: unknown OPEN flags are refused, not echoed as honoured.
RDCP_EVIL_OPEN_FLAGS=0x40000001 "$EVIL" push-paths "$IP" $DPORT m >$LOGS/flags.out 2>&1
if grep -q "OPEN refused: .*unknown flags 0x40000000" $LOGS/flags.out &&
	! grep -q "OPEN_OK" $LOGS/flags.out; then
	pass "OPEN with an unknown flag bit refused"
else
	fail "OPEN with an unknown flag bit: $(grep OPEN $LOGS/flags.out | sort -u | tr '\n' ' ')"
fi
# Issue 28: a pull's filter rules are the client's word only where they are
# harmless: a merge file (a file of the server's), an unknown rule, more
# rules than announced, another message in their place, too many bytes:
# each refused with its reason, and the daemon serves on.
mkdir -p /tmp/mod/rules && echo r >/tmp/mod/rules/r
if "$EVIL" rules "$IP" $DPORT m/rules >$LOGS/rules.out 2>&1 &&
	[ "$(grep -c ': refused: ' $LOGS/rules.out)" -ge 8 ]; then
	pass "hostile filter rules on a pull: each refused with its reason"
else
	fail "hostile filter rules: $(cat $LOGS/rules.out)"
fi
if timeout 60 "$RDCP" -r --exclude x --timeout 10 "$IP::m/rules/" /tmp/rules.back/ \
	>>$LOGS/rules.out 2>&1 && [ -f /tmp/rules.back/r ]; then
	pass "  rdcpd serves a pull with good rules after them"
else
	fail "  a pull with good rules after the hostile ones: $(tail -3 $LOGS/rules.out)"
fi
# Protocol 14's wide batches (RD_OF_WIDE): a FILEZ whose kept prefix makes
# "../evil-wide", bad counts and prefixes, FILEZ or FILES against what was
# agreed (protocol 13 too), a pull's DONES of 65 without wide batches: each
# refused with its reason, nothing lands, the daemon serves on. The control
# (pull-wide): a wide pull of m/wide is answered in FILEZ of more than 64.
t0=$(date +%s.%N)
mkdir -p /tmp/mod/wide
i=0
while [ $i -lt 200 ]; do
	: >/tmp/mod/wide/w$i
	i=$((i + 1))
done
if "$EVIL" wide "$IP" $DPORT m >$LOGS/wide.out 2>&1 &&
	[ "$(grep -c ': refused: ' $LOGS/wide.out)" -ge 14 ]; then
	pass "hostile wide batches: each refused with its reason; a wide pull is served in FILEZ"
else
	fail "hostile wide batches: $(cat $LOGS/wide.out)"
fi
sed 's/^/    /' $LOGS/wide.out
check_absent /tmp/evil-wide "wide: a FILEZ path rebuilt as ../evil-wide"
check_absent /tmp/mod/evil-wide-u "wide: an entry of a FILEZ not agreed"
check_no_stray /tmp/mod "wide"
if [ "$(find /tmp/mod -name '*evil-w*' | wc -l)" -eq 0 ]; then
	pass "wide: no entry of a refused batch in the module"
else
	fail "wide: in the module: $(find /tmp/mod -name '*evil-w*' | tr '\n' ' ')"
fi
still_running $DPID "wide: rdcpd"
rm -rf /tmp/mod/wide
echo "    (wide batches: $(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.2f", $2 - $1 }') s)"
# Issue 7 item 4: rdcp -p keeps modes and times, never owners (and so no
# setuid/setgid); -o -g keep them, as root.
cp -p /tmp/own/suid /tmp/mod/suid2
chown 1234:2345 /tmp/mod/suid2
chmod 6755 /tmp/mod/suid2
rm -rf /tmp/ownp && mkdir /tmp/ownp
timeout 60 "$RDCP" -p --timeout 10 "$IP::m/suid2" /tmp/ownp/p >$LOGS/own.out 2>&1
timeout 60 "$RDCP" -p -o -g --timeout 10 "$IP::m/suid2" /tmp/ownp/pog >>$LOGS/own.out 2>&1
timeout 60 "$RDCP" -p -g --timeout 10 "$IP::m/suid2" /tmp/ownp/pg >>$LOGS/own.out 2>&1
st="$(stat -c '%a %u %g' /tmp/ownp/p 2>&1)/$(stat -c '%a %u %g' /tmp/ownp/pog 2>&1)/$(stat -c '%a %u %g' /tmp/ownp/pg 2>&1)"
if [ "$st" = "755 0 0/6755 1234 2345/755 0 2345" ]; then
	pass "pull -p: 755 root:root; -p -o -g: 6755 1234:2345; -p -g: 755 root:2345"
else
	fail "pull -p / -p -o -g / -p -g: got '$st': $(cat $LOGS/own.out)"
fi
rm -rf /tmp/own /tmp/ownp /tmp/mod/suid /tmp/mod/suid2

# Read side: the module now holds link -> /tmp/outside. Pulling through it
# must be refused; pulling the module must copy the link, not its target.
echo "secret" >/tmp/outside/secret
timeout 60 "$RDCP" --timeout 10 "$IP::m/link/secret" /tmp/pulled >$LOGS/pull-link.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ ! -e /tmp/pulled ]; then
	pass "pull m/link/secret through the planted symlink refused (exit $rc: $(cat $LOGS/pull-link.out))"
else
	fail "pull m/link/secret: rdcp exited $rc, /tmp/pulled: $(ls -l /tmp/pulled 2>&1)"
fi
mkdir -p /tmp/pullall
timeout 60 "$RDCP" -r --timeout 10 "$IP::m" /tmp/pullall/ >$LOGS/pull-all.out 2>&1
rc=$?
# rsync's rules (issue 28): "host::m" is the module's contents
if [ $rc -ne 124 ] && [ -L /tmp/pullall/link ] && ! grep -rqs secret /tmp/pullall; then
	pass "pull -r m: the module's contents arrived, the planted link as a link, no target data (exit $rc)"
else
	fail "pull -r m: exit $rc; $(cat $LOGS/pull-all.out); $(find /tmp/pullall -exec ls -ld {} + 2>&1)"
fi
rm -rf /tmp/outside/secret /tmp/pullall

# Issue 7 item 1: a local user swaps m/sw/x and a symlink to a secret
# outside the module (renameat2 RENAME_EXCHANGE, tight loop) while rdcp
# pulls m/sw/x and m/sw over and over: never a byte of the secret arrives.
mkdir -p /tmp/mod/sw
printf 'public\n' >/tmp/mod/sw/x
printf 'TOPSECRET\n' >/tmp/outside/secret
ln -s /tmp/outside/secret /tmp/mod/sw/y
timeout 60 "$RDCP" --timeout 10 "$IP::m/sw/y" /tmp/pulled >$LOGS/pull-y.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ ! -e /tmp/pulled ] && grep -q symlink $LOGS/pull-y.out; then
	pass "pull m/sw/y (a symlink) refused: paths through symlinks are refused (exit $rc)"
else
	fail "pull m/sw/y: exit $rc, $(cat $LOGS/pull-y.out), /tmp/pulled: $(ls -l /tmp/pulled 2>&1)"
fi
rm -f /tmp/pulled
"$EVIL" swap /tmp/mod/sw x y "${HOSTILE_SWAP_SECONDS:-40}" >$LOGS/swap.out 2>&1 &
SWPID=$!
pulls=0 okx=0 okdir=0 leaked=0
end=$(($(date +%s) + ${HOSTILE_SWAP_SECONDS:-40} - 5))
while [ "$(date +%s)" -lt $end ]; do
	rm -rf /tmp/swp
	mkdir /tmp/swp
	if [ $((pulls % 2)) -eq 0 ]; then
		timeout 30 "$RDCP" --timeout 10 "$IP::m/sw/x" /tmp/swp/ >$LOGS/swp.out 2>&1 &&
			okx=$((okx + 1))
	else
		timeout 30 "$RDCP" -r --timeout 10 "$IP::m/sw" /tmp/swp/ >$LOGS/swp.out 2>&1 &&
			okdir=$((okdir + 1))
	fi
	pulls=$((pulls + 1))
	if grep -rqs TOPSECRET /tmp/swp; then
		leaked=$((leaked + 1))
		echo "    leak on pull $pulls: $(find /tmp/swp -exec ls -ld {} + 2>&1)"
	fi
done
wait $SWPID
echo "    $(cat $LOGS/swap.out); $pulls pulls: $okx of m/sw/x and $okdir of m/sw succeeded"
# A pull of m/sw/x alone is refused whenever x is the link at the check
# (~3 in 4): requiring one of them to succeed made this flaky.
if [ $leaked -eq 0 ] && [ $pulls -ge 6 ] && [ $okdir -gt 0 ]; then
	pass "swapper: $pulls pulls during the swap, none brought the secret"
else
	fail "swapper: $leaked of $pulls pulls brought the secret ($okx/$okdir succeeded)"
fi
rm -rf /tmp/swp /tmp/mod/sw /tmp/outside/secret
stop_rdcpd $DPID $LOGS/rdcpd.log "push side"

# ------------------------------------------------------- issue 27 (data side)
echo "=== issue 27: partials, records, hard links, SUMs, write-only, --partial-dir"
# A daemon of its own: a write-only module, a small link table, a short idle
# timeout (the SUM drip), on another port.
I27PORT=$((DPORT + 2))
rm -rf /tmp/wo /tmp/pub /tmp/pub-links /tmp/i27
mkdir -p /tmp/wo /tmp/pub /tmp/pub-links /tmp/i27
cat >/tmp/i27/rdcpd.conf <<CONF
link table size = 1M
[wo]
	path = /tmp/wo
	write only = yes
	auth = none
	uid = root
[pub]
	path = /tmp/pub
	auth = none
	uid = root
CONF
"$RDCPD" --foreground --config /tmp/i27/rdcpd.conf --port $I27PORT --timeout 3 \
	--max-conns-per-host 64 --ready-file $LOGS/i27.ready 2>$LOGS/i27.log &
I27PID=$!
if ! wait_for $LOGS/i27.ready . 30; then
	fail "issue 27: rdcpd with its configuration did not start: $(tr '\n' ' ' <$LOGS/i27.log)"
fi
U=rdcp://$IP:$I27PORT
# KiB of a status line of process $1 (VmRSS, VmHWM)
kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# big-endian bytes of $1, $2 bytes long
be() {
	i=$2
	while [ "$i" -gt 0 ]; do
		i=$((i - 1))
		# shellcheck disable=SC2059 # the format is the byte
		printf "\\$(printf %03o $((($1 >> (8 * i)) & 255)))"
	done
}

# Item 14: a write-only module compares nothing it holds (no SUM); a
# normal one does (the probe can see a SUM).
printf 'probe\n' >/tmp/wo/probe.txt
printf 'probe\n' >/tmp/pub/probe.txt
"$EVIL" push-probe "$IP" $I27PORT wo >$LOGS/probe-wo.out 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	pass "push into a write-only module over an identical file: no SUM asked, data sent"
else
	fail "write-only push: rdcp_evil push-probe exited $rc: $(tr '\n' ' ' <$LOGS/probe-wo.out)"
fi
"$EVIL" push-probe "$IP" $I27PORT pub >$LOGS/probe-pub.out 2>&1
rc=$?
if [ $rc -eq 1 ]; then
	pass "the same push into a normal module is compared first (SUM): the probe sees SUMs"
else
	fail "control push-probe into pub exited $rc: $(tr '\n' ' ' <$LOGS/probe-pub.out)"
fi

# Item 12: SUMs of one chunk over and over, and a slow drip of SUMs.
head -c 1048576 /dev/urandom >/tmp/pub/sums.bin
"$EVIL" sum-flood "$IP" $I27PORT pub/sums.bin 1000 >$LOGS/sum-flood.out 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	pass "1000 SUMs of one chunk: cut short ($(tail -1 $LOGS/sum-flood.out))"
else
	fail "SUM flood: exit $rc: $(tr '\n' ' ' <$LOGS/sum-flood.out)"
fi
"$EVIL" sum-drip "$IP" $I27PORT pub/sums.bin 12 >$LOGS/sum-drip.out 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "idle\|nothing" $LOGS/sum-drip.out; then
	pass "a SUM every 0.5 s does not hold the session past --timeout 3 ($(tail -1 $LOGS/sum-drip.out))"
else
	fail "SUM drip: exit $rc: $(tr '\n' ' ' <$LOGS/sum-drip.out)"
fi

# Item 9: a sparse 2 GiB record planted beside a partial costs the daemon
# nothing when the file is pushed (peak RSS of rdcpd over the push).
head -c 1048576 /dev/urandom >/tmp/i27/rec.bin
touch -d @1700000000 /tmp/i27/rec.bin
: >/tmp/pub/.rdcp-partial.rec.bin
{
	printf RDCPPRT1
	be 1048576 8
	be 1700000000 8
	be 0 4
	be 4096 4
	printf sha256
	be 0 26
	be 256 8
} >/tmp/pub/.rdcp-partial.rec.bin.rec
truncate -s 2G /tmp/pub/.rdcp-partial.rec.bin.rec
echo 5 >/proc/$I27PID/clear_refs
rss0=$(kib $I27PID VmRSS)
timeout 60 "$RDCP" --timeout 10 /tmp/i27/rec.bin "$U/pub/" >$LOGS/rec.out 2>&1
rc=$?
grew=$(($(kib $I27PID VmHWM) - rss0))
if [ $rc -eq 0 ] && [ $grew -lt 65536 ] && cmp -s /tmp/i27/rec.bin /tmp/pub/rec.bin; then
	pass "push beside a planted 2 GiB sparse record: rdcpd's peak RSS grew $grew KiB, file exact"
else
	fail "push beside a planted 2 GiB record: exit $rc, rdcpd's peak RSS grew $grew KiB: $(tr '\n' ' ' <$LOGS/rec.out)"
fi

# Item 11: a pull -H of 4000 link groups with 3.5 KiB paths that never
# close: the daemon's link table stays within 'link table size = 1M' (its
# peak RSS over the pull); the files all arrive (the groups it could not
# remember, as copies).
mkdir /tmp/pub/lt
"$EVIL" link-tree /tmp/pub/lt /tmp/pub-links 4000 >$LOGS/lt.out 2>&1
echo 5 >/proc/$I27PID/clear_refs
rss0=$(kib $I27PID VmRSS)
timeout 120 "$RDCP" -r -H --timeout 20 "$U/pub/lt" /tmp/i27/ >>$LOGS/lt.out 2>&1
rc=$?
grew=$(($(kib $I27PID VmHWM) - rss0))
n=$(find /tmp/i27/lt -type f | wc -l)
if [ $rc -eq 0 ] && [ $grew -lt 8192 ] && [ "$n" -eq 4000 ]; then
	pass "pull -H of 4000 open link groups of 3.5 KiB paths: rdcpd's peak RSS grew $grew KiB (link table size = 1M), $n files"
else
	fail "pull -H of 4000 link groups: exit $rc, rdcpd's peak RSS grew $grew KiB, $n files: $(tail -3 $LOGS/lt.out | tr '\n' ' ')"
fi
rm -rf /tmp/i27/lt /tmp/pub/lt /tmp/pub-links

# Item 16: another client's partials are never listed nor sent.
mkdir -p /tmp/pub/pp/.part
printf 'ok\n' >/tmp/pub/pp/ok
printf 'partial\n' >/tmp/pub/pp/.rdcp-partial.big
printf 'record\n' >/tmp/pub/pp/.rdcp-partial.big.rec
printf 'partial\n' >/tmp/pub/pp/.part/.rdcp-partial.x
timeout 60 "$RDCP" -r --timeout 10 "$U/pub/pp" /tmp/i27/ >$LOGS/pp.out 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -f /tmp/i27/pp/ok ] && [ -z "$(find /tmp/i27/pp -name '.rdcp-partial*')" ]; then
	pass "pull -r of a module tree holding partials and records: none of them arrive"
else
	fail "pull -r of partials: exit $rc: $(find /tmp/i27/pp 2>&1 | tr '\n' ' ') $(tr '\n' ' ' <$LOGS/pp.out)"
fi
timeout 60 "$RDCP" --timeout 10 "$U/pub/pp/.rdcp-partial.big" /tmp/i27/one >$LOGS/pp1.out 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ ! -e /tmp/i27/one ] && grep -q "never sent" $LOGS/pp1.out; then
	pass "pull naming a partial is refused (exit $rc: $(head -1 $LOGS/pp1.out))"
else
	fail "pull naming a partial: exit $rc: $(tr '\n' ' ' <$LOGS/pp1.out)"
fi

# Item 15: --partial-dir removes only the directory it made.
mkdir /tmp/pub/keep
head -c 200000 /dev/urandom >/tmp/i27/pd.bin
timeout 60 "$RDCP" --timeout 10 --partial-dir keep /tmp/i27/pd.bin "$U/pub/" >$LOGS/pd.out 2>&1
rc=$?
timeout 60 "$RDCP" --timeout 10 --partial-dir .made /tmp/i27/pd.bin "$U/pub/pd2.bin" >>$LOGS/pd.out 2>&1
rc2=$?
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ -d /tmp/pub/keep ] && [ ! -e /tmp/pub/.made ] &&
	cmp -s /tmp/i27/pd.bin /tmp/pub/pd.bin; then
	pass "push --partial-dir keep leaves the module's own empty keep/; the .made/ it made is gone"
else
	fail "--partial-dir: exit $rc/$rc2, keep: $(ls -ld /tmp/pub/keep 2>&1), .made: $(ls -ld /tmp/pub/.made 2>&1)"
fi

stop_rdcpd $I27PID $LOGS/i27.log "issue 27" 40

# ---------------------------------------------------------------- pull side
echo "=== pull side: real rdcp against rdcp_evil serve-evil"
# Each case once into an existing DEST (entries go inside it); "extra" a
# second time into a DEST that does not exist yet (rename mode). Then the
# plant cases again for module-root requests (m, m/, m/.) into a DEST that
# holds dotfiles (issue 7 item 3: the module root must arrive named m).
# Then (issue 27) partials and records planted by name, a hard link never
# agreed to, and with -H one to a file DEST held before.
CASES="dotdot abs-tmp inner-dotdot dot root-then-outside link-through plant plant-noroot extra extra plant plant-noroot plant plant-noroot plant wide-window plant-partial hlink-unasked hlink-foreign"
# the path each case asks for (by position)
ASK="m/x m/x m/x m/x m/x m/x m/x m/x m/x m/x m m m/ m/ m/. m/x m/x m/x m/x"
# shellcheck disable=SC2086
"$EVIL" serve-evil $EPORT $CASES >$LOGS/evil.log 2>&1 &
EPID=$!
if ! wait_for $LOGS/evil.log "listening on port" 30; then
	fail "serve-evil did not start"
	cat $LOGS/evil.log
	exit 1
fi
n=0
for c in $CASES; do
	n=$((n + 1))
	rm -rf /tmp/dest
	mkdir /tmp/dest
	dest=/tmp/dest/
	[ "$c" = extra ] && [ $n -eq 10 ] && dest=/tmp/dest/new
	ask=$(echo "$ASK" | cut -d' ' -f$n)
	if [ $n -gt 10 ]; then
		printf 'original\n' >/tmp/dest/.bashrc
		mkdir /tmp/dest/.ssh
		printf 'original\n' >/tmp/dest/.ssh/authorized_keys
	fi
	[ "$c" = plant ] && printf 'original\n' >/tmp/dest/.bashrc
	opts=-r
	if [ "$c" = hlink-foreign ]; then
		opts=-rH
		mkdir /tmp/dest/x
		printf 'secret\n' >/tmp/dest/x/secret
	fi
	# --retries 0: a client the case cut off must not come back for the next case
	timeout 60 "$RDCP" $opts --retries 0 --timeout 10 "rdcp://$IP:$EPORT/$ask" "$dest" \
		>$LOGS/pull.$n.out 2>&1
	rc=$?
	echo "pull case $c asking $ask -> $dest: rdcp exited $rc: $(tr '\n' ' ' <$LOGS/pull.$n.out)"
	# The case counts only if the evil server really ran it with this client.
	if wait_for $LOGS/evil.log "^pull case #$n $c: served" 30; then
		pass "pull $c: serve-evil ran the session"
	else
		fail "pull $c: serve-evil did not run the session"
	fi
	case $c in
	plant)
		# The client must refuse top-level names it never asked for
		# (scp CVE-2019-6111 class).
		if [ "$(cat /tmp/dest/.bashrc)" = original ] && [ $rc -ne 0 ]; then
			pass "pull $c asking $ask: DEST/.bashrc left alone, exit $rc"
		else
			fail "pull $c: asked for $ask, the server replaced DEST/.bashrc (exit $rc)"
		fi
		;;
	plant-noroot)
		# The same with entries that carry no RD_FF_ROOT at all.
		if [ $n -gt 10 ] && [ "$(cat /tmp/dest/.ssh/authorized_keys)" = original ] &&
			[ $rc -ne 0 ]; then
			pass "pull $c asking $ask: DEST/.ssh/authorized_keys left alone, exit $rc"
		elif [ $n -le 10 ] && [ ! -e /tmp/dest/.ssh/authorized_keys ] && [ $rc -ne 0 ]; then
			pass "pull $c: no DEST/.ssh/authorized_keys, exit $rc"
		else
			fail "pull $c: asked for $ask, the server wrote DEST/.ssh/authorized_keys (exit $rc)"
		fi
		;;
	extra)
		if [ $rc -eq 124 ]; then
			fail "pull $c: rdcp hung"
		else
			pass "pull $c: rdcp finished (exit $rc; extra entries may be refused or land)"
		fi
		if [ $dest = /tmp/dest/ ]; then
			if [ -e /tmp/dest/unasked ]; then
				pass "pull $c: the unasked file stayed inside DEST"
			else
				pass "pull $c: the unasked file was refused"
			fi
		else
			if [ $rc -ne 0 ]; then
				pass "pull $c (rename mode): a second top-level entry failed the copy"
			else
				fail "pull $c (rename mode): a second top-level entry was accepted"
			fi
			check_absent /tmp/dest/unasked "pull $c (rename mode)"
		fi
		check_absent /tmp/unasked "pull $c"
		;;
	plant-partial | hlink-unasked | hlink-foreign)
		# issue 27: refused entries, nothing of them in DEST
		if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -z "$(find /tmp/dest -name '*evil*')" ]; then
			pass "pull $c: refused (exit $rc), nothing of it in DEST"
		else
			fail "pull $c: exit $rc; DEST has: $(find /tmp/dest -name '*evil*' | tr '\n' ' ')"
		fi
		if [ "$c" = hlink-foreign ] && [ "$(cat /tmp/dest/x/secret)" != secret ]; then
			fail "pull $c: DEST/x/secret changed"
		fi
		;;
	wide-window)
		# protocol 6: the server chooses the window, never above the offer
		# (a server breaking the protocol: rsync's 12, protocol data stream)
		if [ $rc -eq 12 ] && grep -q "chose a window of 1024 entries; we offered" \
			$LOGS/pull.$n.out && [ ! -e /tmp/dest/x ]; then
			pass "pull $c: a window wider than offered refused (exit 12), nothing written"
		else
			fail "pull $c: exit $rc: $(tr '\n' ' ' <$LOGS/pull.$n.out)"
		fi
		;;
	*)
		if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
			pass "pull $c: rdcp reported failure (exit $rc)"
		else
			fail "pull $c: rdcp exited $rc"
		fi
		;;
	esac
	check_absent /tmp/evil "pull $c"
	check_absent /tmp/dest/../evil "pull $c"
	check_absent /tmp/evildir "pull $c"
	check_absent /evil "pull $c"
	check_no_stray /tmp/dest "pull $c"
	echo "    DEST after $c:"
	(cd /tmp/dest && find . -exec ls -ld {} + 2>&1 | sed 's/^/        /')
done
i=0
while kill -0 $EPID 2>/dev/null && [ $i -lt 50 ]; do
	sleep 0.2
	i=$((i + 1))
done
if kill -0 $EPID 2>/dev/null; then
	kill $EPID
	fail "serve-evil did not finish"
else
	wait $EPID
	rc=$?
	if [ $rc -eq 0 ]; then
		pass "serve-evil served every case"
	else
		fail "serve-evil exited $rc"
	fi
fi
echo "--- serve-evil log"
sed 's/^/    /' $LOGS/evil.log

# ------------------------------------------- before authentication (RDMA)
# Issue 27 item 3: connection requests that never complete (the accept is
# never answered) held a slot for the idle timeout (30 s), each with its
# whole control ring registered (about 2 MiB). Now the auth timeout bounds
# them (3 s here), and only the handful of buffers a TLS handshake needs is
# registered before the peer authenticated. A daemon with 4 slots gets 4
# such requests; the flood tool reports how long each was held, VmPin says
# what they pinned, and a real client (retried every half second) must be
# served soon after the deadline.
if [ "${E2E_TRANSPORT:-rdma}" = rdma ]; then
	echo "=== before authentication: 4 connection requests that never complete"
	mkdir -p /tmp/fmod
	echo flood-ok >/tmp/fmod/f
	cat >$LOGS/flood.conf <<-EOF
		port = 18730
		max connections = 4
		max connections per host = 64
		auth timeout = 3
		idle timeout = 30
		[fm]
		    path = /tmp/fmod
		    read only = yes
		    auth = none
	EOF
	"$RDCPD" --foreground --config $LOGS/flood.conf --ready-file $LOGS/flood.ready \
		2>$LOGS/flood-d.log &
	FPID=$!
	wait_for $LOGS/flood.ready . 30 || fail "the flood's rdcpd did not start"
	"$EVIL" flood "$IP" 18730 4 30 >$LOGS/flood.out 2>&1 &
	EVPID=$!
	if wait_for $LOGS/flood.out "holding" 30; then
		pin=$(awk '$1 == "VmPin:" {print $2}' /proc/$FPID/status)
		t0=$(date +%s.%N)
		tries=0
		while ! timeout 30 "$RDCP" --transport rdma --timeout 10 "rdcp://$IP:18730/fm/f" \
			/tmp/flood-f >$LOGS/flood-real.out 2>&1; do
			tries=$((tries + 1))
			[ $tries -gt 60 ] && break
			sleep 0.5
		done
		took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		wait $EVPID
		rc=$?
		sed 's/^/    | /' $LOGS/flood.out
		echo "    the daemon pinned $pin KiB with the 4 requests waiting; a real client was" \
			"served after $took s ($tries tries turned away)"
		if [ $rc -eq 0 ] && grep -q "the longest held [0-3]\.[0-9] s\|the longest held 4\.[0-4] s" \
			$LOGS/flood.out; then
			pass "requests that never complete are dropped at the auth timeout (3 s), not the idle timeout"
		else
			fail "requests that never complete: rdcp_evil flood exited $rc: $(tail -1 $LOGS/flood.out)"
		fi
		if [ -n "$pin" ] && [ "$pin" -le 2048 ]; then
			pass "4 requests before authentication pin $pin KiB (at most 512 KiB each)"
		else
			fail "4 requests before authentication pin ${pin:-?} KiB (more than 512 KiB each)"
		fi
		if [ "$(cat /tmp/flood-f 2>/dev/null)" = flood-ok ] &&
			awk -v t="$took" 'BEGIN { exit !(t <= 8) }'; then
			pass "a real client behind the flood is served within 8 s ($took s)"
		else
			fail "a real client behind the flood: $took s, $(tail -2 $LOGS/flood-real.out)"
		fi
		if grep -q "connection not established within 3\.0 s of the accept\|within [0-2]\.[0-9] s of the accept" \
			$LOGS/flood-d.log; then
			pass "rdcpd logs why it dropped them"
		else
			fail "rdcpd's log does not say why: $(tail -3 $LOGS/flood-d.log)"
		fi
	else
		fail "rdcp_evil flood never held its requests: $(cat $LOGS/flood.out)"
		kill $EVPID 2>/dev/null
	fi
	still_running $FPID "the flood's rdcpd"
	kill $FPID 2>/dev/null
	wait $FPID 2>/dev/null
	grep -v "^$" $LOGS/flood-d.log | tail -8 | sed 's/^/    d| /'
fi

if [ "${HOSTILE_SELFTEST_FAIL:-0}" = 1 ]; then
	# Must fail: the legit push did put this file there.
	check_absent /tmp/mod/legit.txt "selftest (must FAIL)"
fi

echo "=== $npass passed, $fails failed"
[ $fails -eq 0 ]
