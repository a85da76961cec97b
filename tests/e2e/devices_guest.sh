# shellcheck shell=bash
# rdcp --list-devices inside the rig: rxe0, active port, RoCE, MTU 4096,
# and a RoCE v2 GID carrying this guest's IPv4 address.
set -u
RDCP=$1
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"

"$RDCP" --list-devices >/tmp/out 2>&1
RC=$?
cat /tmp/out
check "--list-devices exits 0" [ "$RC" -eq 0 ]
check "lists rxe0" grep -q '^rxe0:' /tmp/out
check "port 1 is PORT_ACTIVE" grep -q 'port 1: PORT_ACTIVE' /tmp/out
check "link layer Ethernet (RoCE)" grep -q 'link layer Ethernet (RoCE)' /tmp/out
check "active MTU 4096" grep -q 'active MTU 4096' /tmp/out
check "RoCE v2 GID with ip $RIG_SELF_IP" \
	grep -qE "::ffff:$RIG_SELF_IP +RoCE v2 .*ip $RIG_SELF_IP\$" /tmp/out
check "shows the locked-memory limit" grep -q 'locked-memory limit' /tmp/out

ulimit -l 64
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$RDCP" --list-devices >/tmp/out 2>&1
cat /tmp/out
check "warns plainly when ulimit -l is too low" grep -q 'raise the locked-memory limit' /tmp/out
finish
