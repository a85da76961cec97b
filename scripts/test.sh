#!/usr/bin/env bash
# Run every test: unit tests, the fuzz corpus test, and the Soft-RoCE rig
# tests (real RDMA in QEMU guests). Prints one final line "N passed, N failed".
# Extra arguments go to bazel test (e.g. --config=asan).
set -uo pipefail
cd "$(dirname "$0")/.."

# Idempotent: installs what a fresh Debian machine lacks (needs root).
if ! bash scripts/setup.sh; then
	echo "setup failed"
	echo "0 passed, 1 failed"
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# End-to-end tests (everything under //tests: QEMU guests, real daemons,
# kills and timeouts on a shared 2-core machine) get a second attempt; unit
# tests under //lib get one. A test that needed the second attempt counts
# as passed and is named below, so a flaky test is seen, not hidden.
bazel test --test_summary=short --flaky_test_attempts=//tests/@2 "$@" //... 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log" || true)
flaky=$(grep -cE '^//[^ ]+ +(\([^)]*\) )?FLAKY' "$log" || true)
if [ "$flaky" -gt 0 ]; then
	echo "passed only on the second attempt (flaky):"
	grep -E '^//[^ ]+ +(\([^)]*\) )?FLAKY' "$log" | sed 's/^/  /'
	# the failing lines of each first attempt, to find the cause later
	grep -oE '/[^ ]*/test_attempts/attempt_1\.log' "$log" | sort -u | while read -r f; do
		echo "--- $f (failures)"
		grep -E 'FAIL|rror' "$f" | head -20
	done
	passed=$((passed + flaky))
fi
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD|INCOMPLETE)' "$log" || true)
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	# The build itself failed, or bazel stopped before testing.
	failed=1
fi

# The packages on a fresh Debian 12 root (build, install, upgrade, purge, and
# a copy in the rig with the packaged programs): outside Bazel, as it builds
# the packages with their own Bazel and needs root and chroot.
# RDCP_SKIP_INSTALL_TEST=1 skips it.
if [ -z "${RDCP_SKIP_INSTALL_TEST:-}" ]; then
	if bash tests/packaging/install_test.sh; then
		echo "tests/packaging/install_test PASSED"
		passed=$((passed + 1))
	else
		echo "tests/packaging/install_test FAILED"
		failed=$((failed + 1))
		rc=1
	fi
fi
echo "$passed passed, $failed failed"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
