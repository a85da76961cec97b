#!/bin/bash
# The real rdcpd reads configs: --check-config prints every problem as
# FILE:LINE: message and exits 1, or a one-line summary and exits 0; the
# daemon refuses to start on the same problems; the shipped sample passes
# and makes a daemon that exports nothing. Runs on the host (no RDMA
# needed: a daemon that gets past its config fails at the listener).
#
# usage: check_config_test.sh RDCPD SAMPLE
set -u

rdcpd=$1 sample=$2
fails=0 n=0
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/check_config.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/data/sub" "$tmp/pub" "$tmp/extra"

ok() { n=$((n + 1)); echo "ok $n - $*"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
# check DESCRIPTION COMMAND...
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}

# run ARGS...: rdcpd's stdout, stderr and status in OUT, ERR, RC.
run() {
	"$rdcpd" "$@" >"$tmp/out" 2>"$tmp/err"
	RC=$?
	OUT=$(cat "$tmp/out")
	ERR=$(cat "$tmp/err")
	sed 's/^/    | /' "$tmp/out" "$tmp/err"
}
err_has() { grep -qxF -- "$1" "$tmp/err"; }
out_is() { [ "$OUT" = "$1" ]; }

# --- the shipped sample ---
run --check-config --config "$sample"
check "the sample passes --check-config" [ "$RC" -eq 0 ]
check "  silently" [ -z "$ERR" ]
check "  with a one-line summary" \
	grep -qE "^$sample: ok: 0 modules \(0 read-only\), port 18710, all addresses \(IPv4 and IPv6\), up to [0-9]+ connections?\$" "$tmp/out"

# --- a good config ---
cat >"$tmp/good.conf" <<CONF
# a good config
port = 18999
max connections = 8
memory budget = 1G

[data]
	path = $tmp/data
	auth = none
[pub]
	path = $tmp/pub
	read only = yes
	auth = none
CONF
run --check-config --config "$tmp/good.conf"
check "a good config passes" [ "$RC" -eq 0 ]
check "  summary: modules, port, connections" \
	out_is "$tmp/good.conf: ok: 2 modules (1 read-only), port 18999, all addresses (IPv4 and IPv6), up to 8 connections"

# the command line adds and overrides
run --check-config --config "$tmp/good.conf" --module "extra=$tmp/extra,ro" --port 5000 \
	--listen "[::1]" --max-conns 2 --no-auth
check "--module adds, --port/--listen/--max-conns override" \
	out_is "$tmp/good.conf: ok: 3 modules (2 read-only), port 5000, ::1, up to 2 connections"
run --check-config --config "$tmp/good.conf" --module "data=$tmp/extra" --no-auth
check "--module cannot redefine a module of the file" [ "$RC" -eq 1 ]
check "  and says so" err_has "rdcpd: --module data: $tmp/good.conf defines [data] on line 6; the command line adds modules but cannot redefine one"

# --- every problem, each with its line ---
ln -s "$tmp/data/sub" "$tmp/hidden"
cat >"$tmp/bad.conf" <<CONF
prot = 1
path = /x
port = 99999
listen = eth0
memory budget = 4GB
[data]
path = $tmp/data
read only = maybe # writable
auth = none
[data]
[sneaky]
path = $tmp/hidden
read only = yes
auth = none
[gone]
path = $tmp/nonexistent
auth = none
[rel]
path = relative
auth = none
[noauth]
path = $tmp/pub
read only = yes
hosts allow = 10.0.0.0/8
just words
CONF
run --check-config --config "$tmp/bad.conf"
B=$tmp/bad.conf
check "a bad config: exit 1" [ "$RC" -eq 1 ]
check "  unknown key" err_has "$B:1: unknown key 'prot'"
check "  module key among the global ones" \
	err_has "$B:2: 'path' belongs in a [module] section, not among the global keys"
check "  out of range" err_has "$B:3: port: 99999 is out of range (0 to 65535)"
check "  not an address" err_has "$B:4: listen: 'eth0' is not a numeric IPv4 or IPv6 address"
check "  not a size" err_has "$B:5: memory budget: '4GB' is not a size (digits and K, M, G or T)"
check "  not a boolean, with the comment hint" \
	err_has "$B:8: read only: 'maybe # writable' is not yes, no, true, false, 1 or 0 (a comment must be on a line of its own)"
check "  duplicate module" err_has "$B:10: duplicate module [data] (first defined on line 6)"
check "  nested through a symlink" \
	err_has "$B:12: module [sneaky] ($tmp/hidden) lies inside writable module [data] ($tmp/data): its files could be changed through [data]"
check "  missing directory" \
	err_has "$B:16: module [gone]: path $tmp/nonexistent: No such file or directory"
check "  relative path" err_has "$B:19: path: 'relative' is not an absolute path"
check "  module without a path" err_has "$B:18: module [rel] has no 'path'"
check "  hosts allow is enforced: no complaint" bash -c "! grep -q \"^$B:24:\" '$tmp/err'"
check "  a module that needs authentication nobody can give" \
	err_has "$B:21: module [noauth] requires authentication, but no user can authenticate: set 'secrets file' (or 'tls client ca'), add 'auth = none' to serve it to anyone who can reach the port, or start rdcpd with --no-auth"
check "  garbage" err_has "$B:25: expected 'key = value', '[module]' or a comment"
check "  the count of problems" err_has "rdcpd: 13 problems in the configuration"
check "  nothing on stdout" [ -z "$OUT" ]

# --- the daemon refuses to start on the same problems ---
"$rdcpd" --check-config --config "$tmp/bad.conf" 2>&1 | grep -v '^rdcpd: ' >"$tmp/check.lines"
run --foreground --config "$tmp/bad.conf"
check "the daemon does not start on a bad config: exit 1" [ "$RC" -eq 1 ]
check "  and says why" err_has "rdcpd: not starting: 13 problems in the configuration (rdcpd --check-config lists them)"
missing=0
while read -r line; do
	grep -qF -- "rdcpd[" "$tmp/err" && grep -qF -- ": $line" "$tmp/err" || missing=$((missing + 1))
done <"$tmp/check.lines"
check "  logging every problem --check-config lists" [ "$missing" -eq 0 -a -s "$tmp/check.lines" ]

# --- warnings do not fail the check ---
cat >"$tmp/warn.conf" <<CONF
max connections per host = 2
max connections per user = 3
metrics hosts allow = 127.0.0.1
[w]
    path = $tmp
    auth = none
    list = no
CONF
run --check-config --config "$tmp/warn.conf"
check "warnings only: exit 0" [ "$RC" -eq 0 ]
check "  warning with its line" \
	err_has "$tmp/warn.conf:3: warning: 'metrics hosts allow' without 'metrics listen': no metrics are served"
check "  list is enforced (the module listing): no warning for it" \
	bash -c '! grep -q "'"'list'"'" "$1"' _ "$tmp/err"
check "  summary points at them" grep -q "(see the warnings)\$" "$tmp/out"
check "  max connections per host is enforced: no warning for it" \
	bash -c '! grep -q "per host" "$1"' _ "$tmp/err"
check "  max connections per user is enforced: no warning for it" \
	bash -c '! grep -q "per user" "$1"' _ "$tmp/err"
check "  and the summary says it" grep -q "up to [0-9]* connections\? (3 per user) (see the warnings)\$" "$tmp/out"
printf 'max connections per user = 4097\n' >"$tmp/user.conf"
run --check-config --config "$tmp/user.conf"
check "max connections per user = 4097: exit 1, out of range" \
	eval '[ "$RC" -eq 1 ] && err_has "$tmp/user.conf:1: max connections per user: 4097 is out of range (0 to 4096)"'

# --- max rate and delete (issue 29) ---
cat >"$tmp/mirror.conf" <<CONF
max rate = 1G
[data]
    path = $tmp/data
    auth = none
    max rate = 30M
    delete = yes
[wo]
    path = $tmp/pub
    auth = none
    write only = yes
    delete = yes
[ro]
    path = $tmp/extra
    auth = none
    read only = yes
    delete = yes
    max rate = 10
CONF
run --check-config --config "$tmp/mirror.conf"
check "max rate and delete are known; a write-only or read-only module that deletes: exit 1" \
	[ "$RC" -eq 1 ]
check "  a write-only module never deletes" \
	err_has "$tmp/mirror.conf:11: module [wo] is 'write only': it never deletes (its clients cannot see what they would delete); remove 'delete = yes'"
check "  nor one nobody may write" \
	err_has "$tmp/mirror.conf:16: module [ro] allows deleting but nobody may write to it ('read only' and no auth users entry with rw): a read-only module never deletes"
check "  max rate is enforced: no word about it" bash -c '! grep -q "max rate" "$1"' _ "$tmp/err"
check "  two problems" err_has "rdcpd: 2 problems in the configuration"
printf 'max rate = 5X\n[m]\n    path = %s\n    auth = none\n    max rate = 100b\n' "$tmp/data" \
	>"$tmp/rate.conf"
run --check-config --config "$tmp/rate.conf"
check "a rate that is no rate: exit 1, both named" \
	sh -c '[ "$1" -eq 1 ]' _ "$RC"
check "  the unit" err_has "$tmp/rate.conf:1: max rate: '5X' is not a rate (e.g. 30M, 500K, 0 for none)"
check "  too slow" err_has "$tmp/rate.conf:5: max rate: '100b' is too small (at least 512 bytes per second, or 0)"
head -11 "$tmp/mirror.conf" | sed '/^\[wo\]/,$d' >"$tmp/mirror-ok.conf"
printf '[ro]\n    path = %s\n    auth = none\n    read only = yes\n    max rate = 10\n' "$tmp/extra" \
	>>"$tmp/mirror-ok.conf"
run --check-config --config "$tmp/mirror-ok.conf"
check "without them: passes" [ "$RC" -eq 0 ]
run --dump-config --config "$tmp/mirror-ok.conf"
check "--dump-config writes them back" \
	sh -c 'grep -qx "max rate = 1G" "$1" && grep -qx "	max rate = 30M" "$1" && grep -qx "	delete = yes" "$1" && grep -qx "	max rate = 10K" "$1" && grep -qx "	delete = no" "$1"' _ "$tmp/out"

# --- the open files max connections need (issue 7 item 5) ---
printf 'max connections = 4096\nmemory budget = 16T\n' >"$tmp/fds.conf"
(ulimit -n 1024 && "$rdcpd" --check-config --config "$tmp/fds.conf") >"$tmp/out" 2>"$tmp/err"
RC=$?
sed 's/^/    | /' "$tmp/err"
check "more connections than the hard open-file limit holds: exit 1" [ "$RC" -eq 1 ]
check "  naming the numbers and what fits" \
	err_has "$tmp/fds.conf:1: 4096 connections need about 1130624 open files (276 each, 128 for the daemon), but the open-file limit is 1024 (ulimit -Hn; LimitNOFILE= under systemd): lower 'max connections' to 3 or raise the limit"

# --- files ---
run --check-config --config "$tmp/nonexistent.conf"
check "a missing config file: exit 1" [ "$RC" -eq 1 ]
check "  named" err_has "$tmp/nonexistent.conf: cannot open: No such file or directory"
cp "$tmp/good.conf" "$tmp/open.conf"
chmod 0666 "$tmp/open.conf"
run --check-config --config "$tmp/open.conf"
check "a config everyone may write is refused" \
	err_has "$tmp/open.conf: writable by every user (mode 0666): anyone could reconfigure the daemon"
printf 'alice:secret\n' >"$tmp/secrets"
chmod 0644 "$tmp/secrets"
printf 'secrets file = %s\n' "$tmp/secrets" >"$tmp/sec.conf"
run --check-config --config "$tmp/sec.conf"
check "a secrets file others can read is refused" \
	err_has "$tmp/secrets: mode 0644 lets other users read or change it; make it 0600"
check "  without quoting the secret" bash -c "! grep -q secret\$ '$tmp/err'"
chmod 0600 "$tmp/secrets"
run --check-config --config "$tmp/sec.conf"
check "  0600: fine" [ "$RC" -eq 0 ]

# --- the command line alone ---
run --check-config --module "a=$tmp/data" --module "b=$tmp/data/sub,ro" --no-auth \
	--config /dev/null
check "/dev/null is not a config file" err_has "/dev/null: not a regular file"
: >"$tmp/empty.conf"
run --check-config --config "$tmp/empty.conf" --module "a=$tmp/data" --module "b=$tmp/data/sub,ro" \
	--no-auth
check "--module nesting is checked too" \
	err_has "rdcpd: module [b] ($tmp/data/sub) lies inside writable module [a] ($tmp/data): its files could be changed through [a]"
run --check-config --config "$tmp/empty.conf" --module "a=$tmp/data"
check "--module without --no-auth: exit 1" [ "$RC" -eq 1 ]
check "  saying to pass --no-auth" \
	err_has "rdcpd: module [a] requires authentication, but no user can authenticate: give a config file with a 'secrets file', or pass --no-auth to serve it to anyone who can reach the port"
if [ ! -e /etc/rdcp/rdcpd.conf ]; then
	run --foreground --no-auth
	check "no config file and no --module: exit 1" [ "$RC" -eq 1 ]
	check "  nothing to serve" err_has "rdcpd: nothing to serve: /etc/rdcp/rdcpd.conf does not exist; give --config FILE or --module NAME=DIR"
fi

# --- threads and max lanes: the file's, else the command line's, take effect ---
# (the daemon logs what each connection gets; on TCP it runs until timeout stops it)
cat >"$tmp/shape.conf" <<CONF
threads = 3
max lanes = 2
CONF
timeout 3 "$rdcpd" --foreground --config "$tmp/shape.conf" --port 0 --transport tcp \
	--listen 127.0.0.1 >"$tmp/out" 2>"$tmp/err"
sed 's/^/    | /' "$tmp/err"
check "threads = 3, max lanes = 2 of the file are used" \
	grep -q "each connection: 3 threads (rdcpd.conf), up to 2 lanes (rdcpd.conf), a window of [0-9]* entries (open files)\$" "$tmp/err"
timeout 3 "$rdcpd" --foreground --config "$tmp/shape.conf" --port 0 --transport tcp \
	--listen 127.0.0.1 --threads 5 --max-lanes 1 >"$tmp/out" 2>"$tmp/err"
sed 's/^/    | /' "$tmp/err"
check "  --threads 5 --max-lanes 1 override them" \
	grep -q "each connection: 5 threads (command line), up to 1 lane (command line), a window of [0-9]* entries (open files)\$" "$tmp/err"
# --- the window of entries a connection gets: as wide as the open-file limit allows ---
# (16 connections: 256 entries need 16 x 1044 + 128 files, 192 need 16 x 788 + 128,
# 128 need 16 x 532 + 128, 64 need 16 x 276 + 128: rd_session.h)
for nf in 20000:256 13000:192 9000:128 5000:64; do
	(ulimit -n "${nf%%:*}" && exec timeout 3 "$rdcpd" --foreground --config "$tmp/shape.conf" --port 0 \
		--transport tcp --listen 127.0.0.1 --max-conns 16) >"$tmp/out" 2>"$tmp/err"
	sed 's/^/    | /' "$tmp/err"
	check "  open-file limit ${nf%%:*}: a window of ${nf#*:} entries" \
		grep -q "a window of ${nf#*:} entries (open files)\$" "$tmp/err"
done
printf 'threads = 65\nmax lanes = 0\n' >"$tmp/shape.conf"
run --check-config --config "$tmp/shape.conf"
check "threads = 65, max lanes = 0: exit 1" [ "$RC" -eq 1 ]
check "  threads out of range" err_has "$tmp/shape.conf:1: threads: 65 is out of range (1 to 64)"
check "  max lanes out of range" err_has "$tmp/shape.conf:2: max lanes: 0 is out of range (1 to 8)"

# --- certificate files are read when the configuration is loaded ---
# (they exist, so --check-config passes; what is in them is OpenSSL's to read)
echo "not a certificate" >"$tmp/cert.pem"
echo "not a key" >"$tmp/key.pem"
chmod 600 "$tmp/key.pem"
cat >"$tmp/tls.conf" <<CONF
tls certificate = $tmp/cert.pem
tls key = $tmp/key.pem
[data]
	path = $tmp/data
	auth = none
CONF
timeout 10 "$rdcpd" --foreground --config "$tmp/tls.conf" --port 0 --transport tcp \
	--listen 127.0.0.1 >"$tmp/out" 2>"$tmp/err"
RC=$?
sed 's/^/    | /' "$tmp/err"
check "a certificate file OpenSSL cannot read: the daemon does not start (exit 1)" [ "$RC" -eq 1 ]
check "  naming the file" grep -qF "$tmp/cert.pem" "$tmp/err"
check "  before it listens" bash -c "! grep -q 'listening on' '$tmp/err'"

# --- the sample makes a daemon that exports nothing ---
timeout 10 "$rdcpd" --foreground --config "$sample" --port 0 >"$tmp/out" 2>"$tmp/err"
RC=$?
sed 's/^/    | /' "$tmp/err"
check "the sample starts a daemon (it stops at the listener here, or runs)" \
	[ "$RC" -eq 10 -o "$RC" -eq 12 -o "$RC" -eq 124 ]
check "  that logs it exports nothing" grep -q "rdcpd\[[0-9]*\]: $sample exports no modules: every request will be refused" "$tmp/err"

echo "$n checks, $fails failed"
[ "$fails" -eq 0 ]
