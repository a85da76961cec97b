#!/bin/bash
# One version number in one place: VERSION. The programs print it, and the
# Debian changelog's and the RPM spec's newest entries carry it (a release
# that bumps VERSION must add both; debian/rules also refuses a mismatch).
# scripts/version.sh prints it outside git (as here, in Bazel's sandbox).
#
# usage: version_test.sh VERSION RDCP RDCPD CHANGELOG SPEC VERSION_SH
set -u
v=$(head -n1 "$1")
rdcp=$2 rdcpd=$3 changelog=$4 spec=$5 version_sh=$6
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

case "$v" in '' | *[!0-9A-Za-z.~]*) fail "VERSION '$v' is not a plain version" ;; esac
got=$("$rdcp" --version) || fail "rdcp --version exited $?"
[[ $got == "rdcp $v (protocol "* ]] || fail "rdcp --version says '$got', VERSION is $v"
got=$("$rdcpd" --version) || fail "rdcpd --version exited $?"
[[ $got == "rdcpd $v (protocol "* ]] || fail "rdcpd --version says '$got', VERSION is $v"
got=$(sed -n '1s/^rdcp (\([^)]*\)).*/\1/p' "$changelog")
[ "$got" = "$v" ] || fail "debian/changelog's newest entry is '$got', VERSION is $v"
got=$(sed -n '/^%changelog/,$p' "$spec" | sed -n '2s/.* - \([^ ]*\)-[0-9]*$/\1/p')
[ "$got" = "$v" ] || fail "rdcp.spec's newest %changelog entry is '$got', VERSION is $v"
grep -q '^Version: *%{rdcp_version}$' "$spec" || fail "rdcp.spec must take Version from rdcp_version"
# version.sh reads VERSION next to its scripts/ directory.
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/version_test.XXXXXX")
mkdir -p "$tmp/scripts"
cp "$version_sh" "$tmp/scripts/version.sh"
echo "$v" >"$tmp/VERSION"
got=$(GIT_DIR=/nonexistent bash "$tmp/scripts/version.sh") || fail "version.sh exited $?"
[ "$got" = "$v" ] || fail "version.sh outside git says '$got', VERSION is $v"
echo '1.2.3; rm -rf /' >"$tmp/VERSION"
bash "$tmp/scripts/version.sh" >/dev/null 2>&1 && fail "version.sh accepted a bad VERSION"
rm -rf "$tmp"

[ "$fails" = 0 ] || exit 1
echo "version $v: programs, changelog, spec and version.sh agree"
