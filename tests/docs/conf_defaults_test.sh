#!/bin/bash
# The shipped sample config cannot drift from the daemon:
#  - every commented "#key = value" line of the sample whose key has a value
#    of its own in 'rdcpd --dump-config' (a fixed default) shows exactly
#    that default (the sample says "The values shown commented out are the
#    defaults");
#  - every such line whose key has no fixed default (the dump writes
#    "# key = (...)") is an example, and the example must parse: the line,
#    uncommented in its section, is a valid rdcpd.conf line;
#  - every key of the dump appears in the sample (commented or not).
# Global keys are compared with the dump's global section, the keys of the
# sample's first [module] section with a module that sets only its path
# (path itself has no default: it is an example); later module sections of
# the sample are examples, checked only to parse.
#
# usage: conf_defaults_test.sh RDCPD CONF_KEYS SAMPLE
set -u

rdcpd=$1 keys_bin=$2 sample=$3
fails=0
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/conf_defaults_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

mkdir "$tmp/mod"
printf '[m]\npath = %s\n' "$tmp/mod" >"$tmp/min.conf"
if ! "$rdcpd" --dump-config --no-auth --config "$tmp/min.conf" >"$tmp/dump" 2>"$tmp/dump.err"; then
	fail "rdcpd --dump-config failed: $(cat "$tmp/dump.err")"
fi
[ -s "$tmp/dump" ] || fail "rdcpd --dump-config printed nothing"

# "SECTION<TAB>KEY<TAB>set|unset<TAB>VALUE" per line of the dump.
awk '/^\[/ { sec = "module"; next }
     /^[[:space:]]*$/ { next }
     { line = $0; sub(/^[[:space:]]+/, "", line)
       state = "set"
       if (line ~ /^# /) { state = "unset"; sub(/^# /, "", line) }
       i = index(line, " = ")
       if (!i) { print "BAD\t" $0; next }
       printf "%s\t%s\t%s\t%s\n", sec == "" ? "global" : sec, substr(line, 1, i - 1), state,
	      substr(line, i + 3) }' "$tmp/dump" >"$tmp/dumped"
grep '^BAD' "$tmp/dumped" | while IFS=$'\t' read -r _ l; do fail "dump line not 'key = value': $l"; done

"$keys_bin" | sort >"$tmp/table"
cut -f1,2 "$tmp/dumped" | grep -v '^BAD' | sort -u >"$tmp/dumpkeys"
cmp -s "$tmp/table" "$tmp/dumpkeys" ||
	fail "the dump's keys differ from the key table: $(diff "$tmp/table" "$tmp/dumpkeys" | grep '^[<>]' | tr '\n' ' ')"

# The sample's commented settings: "SECTION<TAB>KEY<TAB>VALUE<TAB>LINE".
awk 'BEGIN { sec = "global" }
     /^[#;]?[[:space:]]*\[[^]]+\][[:space:]]*$/ { nmod++; sec = nmod == 1 ? "module" : "example"; next }
     /^#[[:space:]]*[A-Za-z][A-Za-z ]*[A-Za-z][[:space:]]*=/ {
	l = $0; sub(/^#[[:space:]]*/, "", l)
	i = index(l, "=")
	k = substr(l, 1, i - 1); v = substr(l, i + 1)
	sub(/[[:space:]]+$/, "", k); sub(/^[[:space:]]+/, "", v); sub(/[[:space:]]+$/, "", v)
	printf "%s\t%s\t%s\t%d\n", sec, tolower(k), v, NR }' "$sample" >"$tmp/samplekeys"
[ -s "$tmp/samplekeys" ] || fail "no '#key = value' lines found in $sample"

checked=0 examples=0
while IFS=$'\t' read -r sec key val lno; do
	tsec=$sec
	[ "$sec" = example ] && tsec=module
	grep -qxF "$tsec	$key" "$tmp/table" || continue # prose that looks like a key
	row=$(awk -F'\t' -v s="$tsec" -v k="$key" '$1 == s && $2 == k' "$tmp/dumped" | head -n1)
	if [ -z "$row" ]; then
		fail "$(basename "$sample"):$lno: $sec key '$key' is not in the dump"
		continue
	fi
	state=$(cut -f3 <<<"$row")
	def=$(cut -f4- <<<"$row")
	[ "$sec" = example ] || [ "$key" = path ] && state=example
	if [ "$state" = set ]; then
		checked=$((checked + 1))
		[ "$val" = "$def" ] ||
			fail "$(basename "$sample"):$lno: '#$key = $val', but rdcpd's default is '$def'"
	else
		examples=$((examples + 1))
		if [ "$sec" = global ]; then
			printf '%s = %s\n' "$key" "$val" >"$tmp/ex.conf"
		else
			{
				echo '[m]'
				[ "$key" = path ] || echo 'path = /x'
				printf '%s = %s\n' "$key" "$val"
			} >"$tmp/ex.conf"
		fi
		"$keys_bin" --parse "$tmp/ex.conf" 2>"$tmp/ex.err" ||
			fail "$(basename "$sample"):$lno: the example '$key = $val' does not parse: $(cat "$tmp/ex.err")"
	fi
done <"$tmp/samplekeys"

while IFS=$'\t' read -r sec key; do
	grep -qiE "^[#;[:space:]]*${key}[[:space:]]*=" "$sample" ||
		fail "the sample does not mention $sec key '$key'"
done <"$tmp/table"

if [ "$fails" -ne 0 ]; then
	echo "$fails problem(s)" >&2
	exit 1
fi
echo "ok: $checked defaults in the sample match rdcpd --dump-config; $examples examples parse"
