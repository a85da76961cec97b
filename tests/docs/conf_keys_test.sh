#!/bin/bash
# rdcpd.conf.5 and the parser agree:
#  - every key of lib/conf's key table has a tag line (the line after .TP)
#    '.BI "KEY = " ...' in the right section of rdcpd.conf.5 (GLOBAL KEYS or
#    MODULE KEYS), and every key documented there is in the table;
#  - every key's entry gives its default ("Default:");
#  - the shipped sample config mentions every key ("KEY =", commented out
#    or not).
#
# usage: conf_keys_test.sh CONF_KEYS RDCPD_CONF_5 SAMPLE
set -u

keys_bin=$1 man=$2 sample=$3
fails=0
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/conf_keys_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

"$keys_bin" | sort >"$tmp/table" || fail "$keys_bin failed"

# "section<TAB>key" for each tag line of GLOBAL KEYS / MODULE KEYS.
awk '/^\.SH/ { sec = ($0 ~ /GLOBAL KEYS/) ? "global" : ($0 ~ /MODULE KEYS/) ? "module" : "" }
     sec != "" && prev == ".TP" {
	if (match($0, /^\.BI "[^"=]* = "/)) {
		key = substr($0, 6, RLENGTH - 9)
		printf "%s\t%s\n", sec, key
	} else {
		printf "BAD\t%s\n", $0
	}
     }
     { prev = $0 }' "$man" | sort >"$tmp/man"

if grep -q '^BAD' "$tmp/man"; then
	grep '^BAD' "$tmp/man" | while IFS=$'\t' read -r _ line; do
		fail "rdcpd.conf.5: tag line not in the form '.BI \"key = \" value': $line"
	done
fi
if [ ! -s "$tmp/table" ] || [ ! -s "$tmp/man" ]; then
	fail "no keys found (table: $(wc -l <"$tmp/table"), man page: $(wc -l <"$tmp/man"))"
fi

while IFS=$'\t' read -r sec key; do
	grep -qxF "$sec	$key" "$tmp/man" ||
		fail "the parser has $sec key '$key'; rdcpd.conf.5 does not document it in" \
			"$(echo "$sec" | tr a-z A-Z) KEYS"
done <"$tmp/table"
while IFS=$'\t' read -r sec key; do
	[ "$sec" = BAD ] && continue
	grep -qxF "$sec	$key" "$tmp/table" ||
		fail "rdcpd.conf.5 documents $sec key '$key'; the parser has no such key"
done <"$tmp/man"

# Each entry (tag line to the next .TP or .SH) says "Default:".
awk '/^\.SH/ { flush(); sec = ($0 ~ /GLOBAL KEYS|MODULE KEYS/) }
     /^\.TP/ { flush(); prev = $0; next }
     sec && prev == ".TP" && /^\.BI "/ { key = $0; has = 0 }
     sec && key != "" && /Default:/ { has = 1 }
     { prev = $0 }
     END { flush() }
     function flush() { if (key != "" && !has) print key; key = "" }' "$man" >"$tmp/nodefault"
while read -r line; do
	fail "rdcpd.conf.5: no 'Default:' in the entry of $line"
done <"$tmp/nodefault"

# The sample mentions every key.
while IFS=$'\t' read -r sec key; do
	grep -qiE "^[#;[:space:]]*${key}[[:space:]]*=" "$sample" ||
		fail "the sample $(basename "$sample") does not mention '$key'"
done <"$tmp/table"

if [ "$fails" -ne 0 ]; then
	echo "$fails problem(s)" >&2
	exit 1
fi
echo "ok: $(wc -l <"$tmp/table") keys documented with their section and default, all in the sample"
