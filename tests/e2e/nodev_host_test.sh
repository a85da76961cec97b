#!/usr/bin/env bash
# On a host without RDMA devices, --list-devices must fail with exit 12 and
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
[ "$rc" -eq 12 ] || { echo "FAIL: exit $rc, want 12"; fails=1; }
grep -q 'no RDMA device found' <<<"$out" || { echo "FAIL: no 'no RDMA device found'"; fails=1; }
grep -q 'rdma link add' <<<"$out" || { echo "FAIL: no Soft-RoCE hint"; fails=1; }
out=$("$rdcp" /etc/hostname 127.0.0.1::m/ 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "FAIL: a copy without RDMA succeeded"; fails=1; }
grep -qi 'rdma' <<<"$out" || { echo "FAIL: copy error does not mention RDMA"; fails=1; }
exit $fails
