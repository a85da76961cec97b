#!/usr/bin/env bash
# Host side of //tests/hostile:hostile_test: find the built programs in the
# runfiles and run hostile_guest.sh in a Soft-RoCE VM through the rig.
#
# Also runs by hand from the repo root, after
#   bazel build //tests/hostile:rdcp_evil //cmd/rdcp //cmd/rdcpd
# as  bash tests/hostile/hostile_test.sh
#
# RIG_SH overrides where rig.sh is; otherwise it is taken from the runfiles
# (//tests/rig:rig.sh) or, run by hand, from the source tree.
set -euo pipefail

if [[ -n "${TEST_SRCDIR:-}" ]]; then
	base="$TEST_SRCDIR/${TEST_WORKSPACE:-rdcp}"
else
	base="$(cd "$(dirname "$0")/../.." && pwd)"
	[[ -e "$base/bazel-bin" ]] && bin="$base/bazel-bin" || bin=""
fi

find_bin() { # runfiles-relative path
	local p
	for p in "$base/$1" "${bin:-/nonexistent}/$1"; do
		if [[ -x "$p" && -f "$p" ]]; then
			readlink -f "$p"
			return 0
		fi
	done
	echo "hostile_test: $1 not found (build it first)" >&2
	return 1
}

rdcp=$(find_bin cmd/rdcp/rdcp)
rdcpd=$(find_bin cmd/rdcpd/rdcpd)
evil=$(find_bin tests/hostile/rdcp_evil)
guest=$(readlink -f "$base/tests/hostile/hostile_guest.sh")
src="${guest%/tests/hostile/hostile_guest.sh}"

rig="${RIG_SH:-}"
for cand in "$base/tests/rig/rig.sh" "$src/tests/rig/rig.sh"; do
	[[ -z "$rig" && -f "$cand" ]] && rig=$(readlink -f "$cand")
done
if [[ -z "$rig" ]]; then
	echo "hostile_test: tests/rig/rig.sh not found; set RIG_SH" >&2
	exit 1
fi

# The guest chroots into this host's / (read-only): it sees these paths,
# except under its own tmpfs dirs; a checkout there has to be bound in.
case "$src" in
/tmp/?* | /run/?* | /var/tmp/?* | /root/?*)
	export RIG_BINDS="${RIG_BINDS:-} $src"
	;;
esac
echo "hostile_test: rig $rig"
echo "hostile_test: rdcp $rdcp"
echo "hostile_test: rdcpd $rdcpd"
echo "hostile_test: rdcp_evil $evil"
export RIG_ENV="${RIG_ENV:-} HOSTILE_SELFTEST_FAIL HOSTILE_STRICT"
exec bash "$rig" run1 --timeout "${HOSTILE_TIMEOUT:-240}" -- \
	sh "$guest" "$rdcp" "$rdcpd" "$evil"
