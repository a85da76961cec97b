# shellcheck shell=bash
# nap SECONDS: sleep without a fork. An external `sleep` costs tens of ms
# of emulated CPU in the rig (fork, exec, loading), taken from whatever the
# other processes of that VM are being measured on: a wait_for polling
# 10 times a second used about a fifth of the receiving VM's CPU while a
# copy ran. A read with a timeout on a FIFO that this shell holds open
# itself waits in the kernel instead (falls back to sleep where no FIFO can
# be made). Sourced by guest_lib.sh and tests/bench/bench.sh.
nap() {
	if [ -z "${NAP_FD:-}" ]; then
		local p
		p=$(mktemp -u "${TMPDIR:-/tmp}/nap.XXXXXX") && mkfifo -m 600 "$p" &&
			exec {NAP_FD}<>"$p" && rm -f "$p" || NAP_FD=none
	fi
	if [ "$NAP_FD" = none ]; then sleep "$1"; else read -r -t "$1" -u "$NAP_FD" _ || true; fi
}
