#!/bin/bash
# The man pages and --help must agree:
#  - every long option in 'rdcp --help' / 'rdcpd --help' is documented on a
#    tag line of the OPTIONS section of rdcp.1 / rdcpd.8 (with its short
#    form, if --help gives one);
#  - every option documented there is in --help, or listed in
#    pending_options.txt (options documented ahead of their code);
#  - a pending option that is already in --help fails the test (remove it
#    from the list), and so does one documented nowhere;
#  - the exit statuses of rdcp.1 are exactly those of 'rdcp --help';
#  - the bash completion completes every option from --help (it reads
#    --help), and every rdcp option that takes an argument ("--name ARG" in
#    --help) has its own case in the completion, so its argument is not
#    completed as a file name unless the completion says so;
#  - every rsync option that rdcp refuses (O_REFUSED in opts.c) is listed in
#    the RSYNC OPTIONS NOT OFFERED section of rdcp.1, and rdcp refuses every
#    option listed there, by name, with exit status 1.
#
# usage: options_test.sh RDCP RDCPD RDCP_1 RDCPD_8 PENDING COMPLETION OPTS_C
set -u

rdcp=$1 rdcpd=$2 rdcp_man=$3 rdcpd_man=$4 pending_file=$5 completion=$6 opts_c=$7
fails=0
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/options_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# Long options mentioned anywhere in --help (the usage lines included).
help_longopts() {
	grep -o -- '--[a-z0-9][a-z0-9-]*' "$1" | sort -u
}

# Tag lines (the line after .TP) of the OPTIONS section of a man page.
man_option_tags() {
	awk '/^\.SH/ { insec = ($2 == "OPTIONS") }
	     insec && prev == ".TP" { print }
	     { prev = $0 }' "$1"
}

# Long options on those tag lines, written \-\-name in troff.
man_longopts() {
	man_option_tags "$1" | grep -o '\\-\\-[a-z0-9]\([a-z0-9]\|\\-\)*' | sed 's/\\-/-/g' |
		sort -u
}

pending=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$pending_file" | grep -v '^$' | sort -u)

is_pending() {
	printf '%s\n' "$pending" | grep -qxF -- "$1"
}

# check NAME BINARY MANPAGE
check() {
	local name=$1 bin=$2 man=$3 opt short line esc

	if ! "$bin" --help >"$tmp/$name.help" 2>&1; then
		fail "$name --help exited with status $?"
		return
	fi
	help_longopts "$tmp/$name.help" >"$tmp/$name.help.opts"
	man_longopts "$man" >"$tmp/$name.man.opts"
	man_option_tags "$man" >"$tmp/$name.man.tags"
	if [ ! -s "$tmp/$name.help.opts" ] || [ ! -s "$tmp/$name.man.opts" ]; then
		fail "$name: no options found in --help or in the OPTIONS section of $(basename "$man")"
		return
	fi

	while read -r opt; do
		grep -qxF -- "$opt" "$tmp/$name.man.opts" ||
			fail "$name --help has $opt, $(basename "$man") OPTIONS does not"
	done <"$tmp/$name.help.opts"

	while read -r opt; do
		grep -qxF -- "$opt" "$tmp/$name.help.opts" && continue
		is_pending "$opt" && continue
		fail "$(basename "$man") documents $opt, $name --help does not" \
			"(if it is coming, list it in tests/docs/pending_options.txt)"
	done <"$tmp/$name.man.opts"

	# "-r, --recursive" in --help: the man tag line of --recursive has \-r too
	grep -oE -- '^[[:space:]]+-[a-zA-Z0-9], --[a-z0-9][a-z0-9-]*' "$tmp/$name.help" |
		sed -E 's/^[[:space:]]+//' >"$tmp/$name.help.pairs"
	while read -r short opt; do
		short=${short%,}
		esc=$(printf '%s' "$opt" | sed 's/-/\\-/g')
		line=$(grep -F -- "$esc" "$tmp/$name.man.tags" | head -n 1)
		[ -n "$line" ] || continue # reported above
		printf '%s\n' "$line" | grep -qE -- "(^|[ \"])\\\\${short}([ \",]|\$)" ||
			fail "$(basename "$man"): the entry of $opt does not give its short form $short"
	done <"$tmp/$name.help.pairs"
}

check rdcp "$rdcp" "$rdcp_man"
check rdcpd "$rdcpd" "$rdcpd_man"

# The pending list must not go stale.
cat "$tmp/rdcp.help.opts" "$tmp/rdcpd.help.opts" 2>/dev/null | sort -u >"$tmp/all.help.opts"
cat "$tmp/rdcp.man.opts" "$tmp/rdcpd.man.opts" 2>/dev/null | sort -u >"$tmp/all.man.opts"
for opt in $pending; do
	grep -qxF -- "$opt" "$tmp/all.help.opts" &&
		fail "$opt is in --help now: remove it from tests/docs/pending_options.txt"
	grep -qxF -- "$opt" "$tmp/all.man.opts" ||
		fail "$opt is in tests/docs/pending_options.txt but in no man page's OPTIONS"
done

# Exit statuses: the numbers after "Exit status:" in --help, and the tags of
# the EXIT STATUS section of rdcp.1.
sed -n '/^Exit status:/,$p' "$tmp/rdcp.help" | grep -oE '(^|[^0-9A-Za-z])[0-9]+([^0-9A-Za-z]|$)' |
	tr -cd '0-9\n' | grep -v '^$' | sort -n -u >"$tmp/help.codes"
awk '/^\.SH/ { insec = ($0 ~ /EXIT STATUS/) }
     insec && prev == ".TP" { print }
     { prev = $0 }' "$rdcp_man" | sed -n 's/^\.B[[:space:]]\{1,\}\([0-9]\{1,\}\)[[:space:]]*$/\1/p' |
	sort -n -u >"$tmp/man.codes"
if [ ! -s "$tmp/help.codes" ]; then
	fail "no exit statuses found in rdcp --help"
elif ! cmp -s "$tmp/help.codes" "$tmp/man.codes"; then
	fail "exit statuses differ: rdcp --help has [$(echo $(cat "$tmp/help.codes"))]," \
		"rdcp.1 has [$(echo $(cat "$tmp/man.codes"))]"
fi

# Options with an argument: "  -e, --rsh CMD" or "      --port PORT".
grep -oE -- '--[a-z][a-z0-9-]*[ =][A-Z][A-Z_]*([^a-z]|$)' "$tmp/rdcp.help" |
	sed -E 's/[ =].*//' | sort -u >"$tmp/argopts"
grep -q -- '--help' "$completion" ||
	fail "$(basename "$completion") does not take the options from --help"
while read -r opt; do
	grep -qE -- "(^|[[:space:](|])${opt}([[:space:]|)]|\$)" "$completion" ||
		fail "$(basename "$completion") has no case for the argument of $opt"
done <"$tmp/argopts"
[ -s "$tmp/argopts" ] || fail "no options with an argument found in rdcp --help"

# Refused rsync options: the table and the man page name the same ones.
grep -oE '\{"[a-z0-9-]+", ('"'"'.'"'"'|0), A_(NONE|REQ), 0, O_REFUSED' "$opts_c" |
	sed -E 's/^\{"([a-z0-9-]+)".*/--\1/' | sort -u >"$tmp/refused.table"
awk '/^\.SH/ { insec = ($0 ~ /RSYNC OPTIONS NOT OFFERED/) }
     insec && prev == ".TP" { print }
     { prev = $0 }' "$rdcp_man" | grep -o '\\-\\-[a-z0-9]\([a-z0-9]\|\\-\)*' |
	sed 's/\\-/-/g' | sort -u >"$tmp/refused.man"
if [ ! -s "$tmp/refused.table" ] || [ ! -s "$tmp/refused.man" ]; then
	fail "no refused options found (opts.c: $(wc -l <"$tmp/refused.table"), rdcp.1: $(wc -l <"$tmp/refused.man"))"
fi
while read -r opt; do
	grep -qxF -- "$opt" "$tmp/refused.man" ||
		fail "rdcp refuses $opt; rdcp.1 does not list it under RSYNC OPTIONS NOT OFFERED"
done <"$tmp/refused.table"
while read -r opt; do
	out=$("$rdcp" "$opt" src dst 2>&1)
	rc=$?
	[ "$rc" -eq 1 ] && grep -qF -- "$opt is not offered: " <<<"$out" ||
		fail "rdcp.1 lists $opt as not offered; rdcp $opt gave exit $rc: $out"
done <"$tmp/refused.man"
n_refused=$(wc -l <"$tmp/refused.man")

n_rdcp=$(wc -l <"$tmp/rdcp.help.opts")
n_rdcpd=$(wc -l <"$tmp/rdcpd.help.opts")
n_codes=$(wc -l <"$tmp/help.codes")
if [ "$fails" -ne 0 ]; then
	echo "$fails problem(s)" >&2
	exit 1
fi
echo "ok: $n_rdcp rdcp and $n_rdcpd rdcpd options documented, $n_codes exit statuses match," \
	"$(echo $pending | wc -w) pending, $n_refused rsync options refused and listed"
