#!/bin/bash
# rdcp-mpi's man page, --help and completion agree (as options_test.sh checks
# for rdcp): every long option of --help is on a tag line of the OPTIONS
# section of rdcp-mpi.1 with its short form, and the other way round; the
# EXIT STATUS tags are the numbers of --help's "Exit status:"; the completion
# reads --help and has a case for every option that takes an argument.
# usage: mpi_options_test.sh RDCP_MPI RDCP_MPI_1 COMPLETION
set -u
bin=$1 man=$2 completion=$3
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
help=$("$bin" --help 2>&1) || fail "rdcp-mpi --help exited $?"
tags=$(awk '/^\.SH/ { insec = ($2 == "OPTIONS") } insec && prev == ".TP" { print } { prev = $0 }' "$man")
hopts=$(grep -o -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u)
mopts=$(grep -o '\\-\\-[a-z0-9]\([a-z0-9]\|\\-\)*' <<<"$tags" | sed 's/\\-/-/g' | sort -u)
[ -n "$hopts" ] && [ -n "$mopts" ] || fail "no options found"
for o in $hopts; do grep -qxF -- "$o" <<<"$mopts" || fail "--help has $o, rdcp-mpi.1 OPTIONS does not"; done
for o in $mopts; do grep -qxF -- "$o" <<<"$hopts" || fail "rdcp-mpi.1 documents $o, --help does not"; done
while read -r short opt; do
	line=$(grep -F -- "$(sed 's/-/\\-/g' <<<"$opt")" <<<"$tags" | head -n 1)
	grep -qE -- "(^|[ \"])\\\\${short%,}([ \",]|\$)" <<<"$line" || fail "the entry of $opt lacks ${short%,}"
done < <(grep -oE -- '^[[:space:]]+-[a-zA-Z], --[a-z][a-z0-9-]*' <<<"$help" | sed -E 's/^[[:space:]]+//')
hcodes=$(sed -n '/^Exit status:/,$p' <<<"$help" | grep -oE '(^|[^0-9A-Za-z])[0-9]+([^0-9A-Za-z]|$)' |
	tr -cd '0-9\n' | grep -v '^$' | sort -n -u | xargs)
mcodes=$(awk '/^\.SH/ { insec = ($0 ~ /EXIT STATUS/) } insec && prev == ".TP" { print } { prev = $0 }' "$man" |
	sed -n 's/^\.B[[:space:]]\{1,\}\([0-9]\{1,\}\)[[:space:]]*$/\1/p' | sort -n -u | xargs)
[ -n "$hcodes" ] && [ "$hcodes" = "$mcodes" ] || fail "exit statuses: --help [$hcodes], rdcp-mpi.1 [$mcodes]"
grep -q '_parse_help' "$completion" || fail "the completion does not read --help"
for o in $(grep -oE -- '--[a-z][a-z0-9-]*[ =][A-Z][A-Z_]*([^a-z]|$)' <<<"$help" | sed -E 's/[ =].*//' | sort -u); do
	grep -qE -- "(^|[[:space:](|])${o}([[:space:]|)]|\$)" "$completion" || fail "the completion has no case for $o"
done
[ "$fails" = 0 ] || exit 1
echo "ok: $(wc -w <<<"$hopts") rdcp-mpi options documented and completed; exit statuses [$hcodes] match"
