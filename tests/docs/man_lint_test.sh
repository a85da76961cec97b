#!/bin/bash
# The man pages render without a warning: groff -man -ww, and man -l
# --warnings when man is installed.
# usage: man_lint_test.sh PAGE...
set -u
fails=0
if ! command -v groff >/dev/null 2>&1; then
	echo "SKIP: groff is not installed"
	exit 0
fi
for page in "$@"; do
	out=$(groff -man -ww -z "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "FAIL: groff warns about $page:" >&2
		echo "$out" >&2
		fails=$((fails + 1))
	fi
	if command -v man >/dev/null 2>&1; then
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l --warnings -E UTF-8 "$page" 2>&1 >/dev/null)
		if [ -n "$out" ]; then
			echo "FAIL: man warns about $page:" >&2
			echo "$out" >&2
			fails=$((fails + 1))
		fi
	fi
done
[ "$fails" -eq 0 ] || exit 1
echo "ok: $# page(s) render cleanly"
