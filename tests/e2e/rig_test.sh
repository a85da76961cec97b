#!/usr/bin/env bash
# Host side of an end-to-end test: boot the Soft-RoCE rig (one VM or two)
# and run a guest script there with the built binaries.
#   rig_test.sh 1|2 GUEST_SCRIPT [--rig=RIG_OPTION ...] [VAR=value ...]
# Binaries come from Bazel runfiles, resolved to real paths (the guests see
# the host's / read-only, but not Bazel's sandbox or symlink forest). The
# guests mount tmpfs over /tmp, /root, ...: --bind-runfiles binds the
# checkout (and output base) the runfiles point into when it is there.
set -euo pipefail

mode=$1
script=$2
shift 2

runfiles=${TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/${TEST_WORKSPACE:-rdcp}
real() { readlink -f "$runfiles/$1"; }

rig=$(real tests/rig/rig.sh)
guest=$(real "tests/e2e/$script")
lib=$(real tests/e2e/guest_lib.sh)
rdcp=$(real cmd/rdcp/rdcp_testhooks)
rdcpd=$(real cmd/rdcpd/rdcpd_testhooks)
evil=$(real tests/hostile/rdcp_evil)
for f in "$rig" "$guest" "$lib" "$rdcp" "$rdcpd"; do
	[ -e "$f" ] || { echo "missing $f"; exit 1; }
done

env_args=()
extra_rig=()
for kv in "$@"; do
	case "$kv" in
	--rig=*) extra_rig+=("${kv#--rig=}") ;;
	*) env_args+=("$kv") ;;
	esac
done

timeout_s=${RIG_TEST_TIMEOUT:-600}
rig_opts=(--timeout "$timeout_s" --bind-runfiles="${TEST_SRCDIR:-$runfiles/..}" "${extra_rig[@]}")
# OpenSSL's start-up floor, for the tests that have it among their data
floor=$(real tests/bench/tls_floor || true)
[ -x "$floor" ] && env_args=(TLS_FLOOR="$floor" "${env_args[@]}")
cmd=(env RIG_MODE="$mode" EVIL="$evil" "${env_args[@]}" bash "$guest" "$rdcp" "$rdcpd" "$lib")
if [ "$mode" = 1 ]; then
	exec bash "$rig" run1 "${rig_opts[@]}" -- "${cmd[@]}"
fi
printf -v qcmd '%q ' "${cmd[@]}"
exec bash "$rig" run2 "${rig_opts[@]}" --a "$qcmd" --b "$qcmd"
