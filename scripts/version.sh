#!/usr/bin/env bash
# Print rdcp's version. VERSION (top level) is the one place the number is
# written: the programs (//lib/version), debian/changelog and the RPM spec
# (packaging/build-*.sh check or pass it) all take it from there.
#
#   scripts/version.sh             VERSION for a release: when HEAD is tagged
#                                  vVERSION, or outside git; otherwise a
#                                  snapshot version from git describe:
#                                  VERSION+gitN.gHASH (N commits since the tag,
#                                  or since VERSION last changed if untagged),
#                                  which sorts after VERSION for dpkg and rpm
#   scripts/version.sh --release   VERSION, always
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
v=$(head -n1 "$top/VERSION")
case "$v" in
'' | *[!0-9A-Za-z.~]*)
	echo "version.sh: bad version '$v' in $top/VERSION" >&2
	exit 1
	;;
esac
if [ "${1:-}" = --release ] || ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	echo "$v"
	exit 0
fi
if d=$(git -C "$top" describe --tags --long --match "v$v" 2>/dev/null); then
	# vVERSION-N-gHASH
	n=${d%-g*}
	n=${n##*-}
	h=${d##*-g}
else
	base=$(git -C "$top" log -1 --format=%H -- VERSION)
	if [ -z "$base" ]; then
		n=$(git -C "$top" rev-list --count HEAD)
	else
		n=$(git -C "$top" rev-list --count "$base..HEAD")
	fi
	h=$(git -C "$top" rev-parse --short=8 HEAD)
fi
if [ "$n" = 0 ] && git -C "$top" describe --tags --exact-match --match "v$v" >/dev/null 2>&1; then
	echo "$v"
else
	echo "$v+git$n.g$h"
fi
