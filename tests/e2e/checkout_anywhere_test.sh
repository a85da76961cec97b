#!/usr/bin/env bash
# The rig from any checkout (issue 8): clone this commit where a user would
# (/tmp/..., /root/...: both hidden in the rig guests by tmpfs mounts), then
# run a rig test from each clone with its own Bazel, as that user would.
# The runfiles of those tests point into the clone, so this fails unless
# rig.sh binds the clone into the guests (rig_test.sh --bind-runfiles).
#
#   ANYWHERE_REV=<commit>   clone that commit instead of HEAD (to see the
#                           test fail on a commit without the fix)
#   ANYWHERE_CASES="..."    space-separated BASE:TARGET[:TEST_ARG], default:
#     /tmp:ux_1vm_test  /root:devices_1vm_test
# The clones share .bazelrc's disk cache with the suite's own build, so they
# compile little; their tests always run (--nocache_test_results).
set -uo pipefail

self=$(readlink -f "${TEST_SRCDIR:-$(dirname "$0")/../../..}/${TEST_WORKSPACE:-rdcp}/tests/e2e/checkout_anywhere_test.sh" 2>/dev/null ||
	readlink -f "$0")
src=${self%/tests/e2e/checkout_anywhere_test.sh}
[ -f "$src/WORKSPACE" ] || { echo "FAIL: cannot find the checkout (got $src)"; exit 1; }

rev=${ANYWHERE_REV:-}
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	rev=${rev:-$(git -C "$src" rev-parse HEAD)}
	echo "source: $src at $rev"
	if [ -z "${ANYWHERE_REV:-}" ] && [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
		echo "note: $src has uncommitted changes; the clones test the commit only"
	fi
else
	[ -z "$rev" ] || { echo "FAIL: ANYWHERE_REV given but $src is not a git checkout"; exit 1; }
	echo "source: $src (not a git checkout: copied)"
fi

PASSES=0
FAILS=0
CLEAN=()
BAZEL=(bazel --max_idle_secs=120)
cleanup() {
	local d ob
	for d in "${CLEAN[@]}"; do
		if [ -d "$d/rdcp" ]; then
			ob=$(cd "$d/rdcp" && "${BAZEL[@]}" info output_base 2>/dev/null)
			(cd "$d/rdcp" && "${BAZEL[@]}" shutdown >/dev/null 2>&1)
			# Only ever an output base this test made (a fresh clone's).
			case "$ob" in /var/cache/rdcp-bazel/?*) rm -rf "$ob" ;; esac
		fi
		rm -rf "$d"
	done
}
trap cleanup EXIT

# clone_into DIR: the commit under test, as DIR/rdcp.
clone_into() {
	local d=$1
	if [ -n "$rev" ]; then
		git clone -q --no-checkout "$src" "$d/rdcp" &&
			git -C "$d/rdcp" -c advice.detachedHead=false checkout -q "$rev"
	else
		mkdir -p "$d/rdcp" && tar -C "$src" --exclude='./bazel-*' -cf - . | tar -C "$d/rdcp" -xf -
	fi
}

# one BASE TARGET [TEST_ARG]: clone under BASE, bazel test //tests/e2e:TARGET there.
one() {
	local base=$1 target=$2 targ=${3:-} d t0 rc
	d=$(mktemp -d "$base/rdcp-anywhere.XXXXXX") || { FAILS=$((FAILS + 1)); echo "FAIL: mktemp under $base"; return; }
	CLEAN+=("$d")
	if ! clone_into "$d"; then
		FAILS=$((FAILS + 1))
		echo "FAIL: clone into $d/rdcp"
		return
	fi
	local -a args=(test "//tests/e2e:$target" --test_output=errors --nocache_test_results)
	[ -n "$targ" ] && args+=("--test_arg=$targ")
	echo "== $d/rdcp: bazel ${args[*]}"
	t0=$SECONDS
	# A clean environment, as in a user's shell: nothing of this test's runfiles.
	(cd "$d/rdcp" && env -i PATH="$PATH" HOME="${HOME:-/root}" USER="${USER:-root}" \
		LANG=C.UTF-8 "${BAZEL[@]}" "${args[@]}") 2>&1 | sed 's/^/    | /'
	rc=${PIPESTATUS[0]}
	if [ "$rc" -eq 0 ]; then
		PASSES=$((PASSES + 1))
		echo "PASS: //tests/e2e:$target from a clone under $base ($((SECONDS - t0)) s)"
	else
		FAILS=$((FAILS + 1))
		echo "FAIL: //tests/e2e:$target from a clone under $base: bazel exited $rc ($((SECONDS - t0)) s)"
	fi
}

for c in ${ANYWHERE_CASES:-/tmp:ux_1vm_test /root:devices_1vm_test}; do
	IFS=: read -r base target targ <<<"$c"
	one "$base" "$target" "$targ"
done
echo "checkout_anywhere: $PASSES passed, $FAILS failed"
[ "$FAILS" -eq 0 ] && [ "$PASSES" -gt 0 ]
