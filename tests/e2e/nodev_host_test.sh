#!/usr/bin/env bash
# On a host without RDMA devices, --list-devices must fail with exit 50 and
# say that no device was found and how to get one.
set -u
rdcp=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-rdcp}/cmd/rdcp/rdcp
if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
	echo "this host has RDMA devices; the no-device case cannot be checked here"
	"$rdcp" --list-devices
	exit $?
fi
out=$("$rdcp" --list-devices 2>&1)
rc=$?
echo "$out"
fails=0
[ "$rc" -eq 50 ] || { echo "FAIL: exit $rc, want 50"; fails=1; }
grep -q 'no RDMA device found' <<<"$out" || { echo "FAIL: no 'no RDMA device found'"; fails=1; }
grep -q 'rdma link add' <<<"$out" || { echo "FAIL: no Soft-RoCE hint"; fails=1; }
out=$("$rdcp" --transport rdma /etc/hostname 127.0.0.1::m/ 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 50 ] || { echo "FAIL: --transport rdma without RDMA: exit $rc, want 50"; fails=1; }
grep -qi 'rdma' <<<"$out" || { echo "FAIL: copy error does not mention RDMA"; fails=1; }
# auto falls back to TCP; with nothing listening it fails, naming both
out=$("$rdcp" --port 1 /etc/hostname 127.0.0.1::m/ 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 10 ] || { echo "FAIL: auto copy to a closed port: exit $rc, want 10"; fails=1; }
grep -q 'over TCP' <<<"$out" || { echo "FAIL: auto copy error does not say it tried TCP"; fails=1; }
grep -qi 'no RDMA route' <<<"$out" || { echo "FAIL: auto copy error does not say why not RDMA"; fails=1; }
out=$("$rdcp" --list-devices 127.0.0.1 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: --list-devices HOST without RDMA: exit $rc, want 0"; fails=1; }
grep -q 'transport to 127.0.0.1: tcp' <<<"$out" || { echo "FAIL: --list-devices HOST does not say tcp"; fails=1; }
exit $fails
