#!/bin/bash
# Words that go stale: the man pages and the shipped sample config must not
# promise or excuse by version ("this version", "not implemented", "not yet",
# "TODO", "issue N"). What the program does is said as a fact; what it does
# not do, as a fact too ("rdcp does not ...").
#
# usage: stale_phrases_test.sh FILE...
set -u
fails=0
re='this version|not (yet )?implemented|not yet (supported|available|done|built|enforced)|\bTODO\b|\bFIXME\b|\bissue [0-9]+'
for f in "$@"; do
	# troff: \- and \(em etc. do not hide words; join nothing, look per line
	while IFS= read -r hit; do
		echo "FAIL: $(basename "$f"):$hit" >&2
		fails=$((fails + 1))
	done < <(sed 's/\\-/-/g' "$f" | grep -niE "$re")
done
[ "$fails" -eq 0 ] || { echo "$fails stale phrase(s)" >&2; exit 1; }
echo "ok: no stale phrases in $# files"
