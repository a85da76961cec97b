#!/usr/bin/env bash
# The main job, start to finish: boot two Soft-RoCE hosts (QEMU guests joined
# by a virtual wire), start rdcpd on host b, generate a tree on host a, copy
# it to b with rdcp over RDMA, copy it back, verify every byte, and print
# what moved and how fast. Needs root (installs Debian packages on first run).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bazel build //cmd/rdcp //cmd/rdcpd
RDCP=$(readlink -f bazel-bin/cmd/rdcp/rdcp)
RDCPD=$(readlink -f bazel-bin/cmd/rdcpd/rdcpd)
MB=${DEMO_MB:-256}

server='
mkdir -p /tmp/module
"$RDCPD" --foreground --no-auth --module data=/tmp/module --ready-file /tmp/ready 2>/tmp/rdcpd.log &
while [ ! -s /tmp/ready ]; do sleep 0.1; done
touch "$RIG_SHARED/ready"
while [ ! -e "$RIG_SHARED/done" ]; do sleep 0.2; done
echo "rdcpd log:"; sed "s/^/  /" /tmp/rdcpd.log
'
client='
set -e
while [ ! -e "$RIG_SHARED/ready" ]; do sleep 0.1; done
echo "host a ($RIG_SELF_IP) -> host b ($RIG_PEER_IP) over Soft-RoCE"
"$RDCP" --list-devices | sed "s/^/  /"
mkdir -p /tmp/tree/docs /tmp/tree/data/nested /tmp/back
head -c $(('"$MB"' << 20)) /dev/urandom > /tmp/tree/data/big.bin
for i in $(seq 1 200); do head -c $((i * 97)) /dev/urandom > /tmp/tree/docs/file$i; done
echo "small" > "/tmp/tree/data/nested/name with spaces"
ln -s ../docs/file1 /tmp/tree/data/link
echo "push:"; "$RDCP" -r -v /tmp/tree "$RIG_PEER_IP::data/"
echo "pull back:"; "$RDCP" -r "$RIG_PEER_IP::data/tree" /tmp/back/
if diff -r --no-dereference /tmp/tree /tmp/back/tree; then
	echo "VERIFIED: the tree came back byte-for-byte"
else
	echo "MISMATCH"; touch "$RIG_SHARED/done"; exit 1
fi
touch "$RIG_SHARED/done"
'
env_prefix=$(printf 'RDCP=%q RDCPD=%q ' "$RDCP" "$RDCPD")
exec bash tests/rig/rig.sh run2 --timeout 900 --a "$env_prefix$client" --b "$env_prefix$server"
