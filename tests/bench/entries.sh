#!/usr/bin/env bash
# entries.sh - the full "memory stays bounded" run of issue 13 on this host:
# a tree of ENTRIES (default 1,000,000) empty files pushed to rdcpd over TCP,
# in private mount, network and pid namespaces (own tmpfs /tmp with room for
# two copies' inodes, own loopback); both sides' peak RSS reported and held
# under RSS_MAX_MIB (100). Needs root (unshare). About 5-10 minutes on the
# 2-CPU build VM; CI runs the 20,000-entry version (entries_tcp_host_test).
#
#   bazel build //cmd/rdcp //cmd/rdcpd && bash tests/bench/entries.sh
#   ENTRIES=200000 bash tests/bench/entries.sh      (RDCP=, RDCPD=: other binaries)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
rdcp=${RDCP:-$(readlink -f "$repo/bazel-bin/cmd/rdcp/rdcp")}
rdcpd=${RDCPD:-$(readlink -f "$repo/bazel-bin/cmd/rdcpd/rdcpd")}
[ -x "$rdcp" ] && [ -x "$rdcpd" ] || { echo "entries: build first: bazel build //cmd/rdcp //cmd/rdcpd"; exit 3; }
export ENTRIES=${ENTRIES:-1000000} RSS_MAX_MIB=${RSS_MAX_MIB:-100}
# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --net --pid --fork --mount-proc -- bash -c '
	set -eu
	cd /
	ip link set lo up
	mount --make-rprivate /
	mount -t tmpfs -o size=4g,nr_inodes=$((3 * ENTRIES + 100000)),mode=1777 tmpfs /tmp
	mkdir -p /tmp/.rig-shared
	export RIG_SHARED=/tmp/.rig-shared RIG_SELF_IP=127.0.0.1 RIG_PEER_IP=127.0.0.1
	export RIG_MODE=1 RIG_ROLE=a E2E_TRANSPORT=tcp
	cd /tmp
	bash "$1/tests/e2e/entries_guest.sh" "$2" "$3" "$1/tests/e2e/guest_lib.sh"
' entries "$repo" "$rdcp" "$rdcpd"
