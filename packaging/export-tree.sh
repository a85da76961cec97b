#!/usr/bin/env bash
# Copy the source tree as git sees it (tracked and untracked files, not
# ignored ones: no bazel-* links, no build outputs) to DEST; outside git,
# everything but bazel-* and .git. Used by build-deb.sh and build-rpm.sh.
#   packaging/export-tree.sh DEST
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dest=$1
mkdir -p "$dest"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -C "$dest" -xf -
else
	tar -C "$top" --exclude='./bazel-*' --exclude=./.git -cf - . | tar -C "$dest" -xf -
fi
