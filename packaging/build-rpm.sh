#!/usr/bin/env bash
# Build the binary RPMs rdcp and rdcpd into OUTDIR:
#   packaging/build-rpm.sh [--version V] OUTDIR
# Makes rdcp-VERSION.tar.gz from the tree, runs rpmbuild -bb on
# packaging/rpm/rdcp.spec with a private _topdir under OUTDIR, moves the
# .rpms to OUTDIR and writes rpmlint's findings to OUTDIR/rpmlint.txt
# (expected ones: packaging/README.md). Works on RHEL/Fedora and on Debian
# (rpm package): there --nodeps, since build dependencies are dpkg's, and the
# systemd macros come from packaging/rpm/macros.compat.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=""
while [ "$#" -gt 1 ]; do
	case "$1" in
	--version) version=$2; shift 2 ;;
	*) break ;;
	esac
done
[ "$#" -eq 1 ] || { sed -n '2,9s/^# \{0,1\}//p' "$0" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
[ -n "$version" ] || version=$(head -n1 "$top/VERSION")
case "$version" in
'' | *[!0-9A-Za-z.+~]*) echo "build-rpm: bad version '$version'" >&2; exit 2 ;;
esac

t="$out/rpmbuild"
rm -rf "$t"
mkdir -p "$t"/{SOURCES,SPECS,BUILD,RPMS,SRPMS,tree}
"$top/packaging/export-tree.sh" "$t/tree/rdcp-$version"
echo "$version" >"$t/tree/rdcp-$version/VERSION"
tar -C "$t/tree" -czf "$t/SOURCES/rdcp-$version.tar.gz" "rdcp-$version"
rm -rf "$t/tree"
cp "$top/packaging/systemd/rdcpd.sysusers" "$t/SOURCES/"
cp "$top/packaging/rpm/rdcp.spec" "$t/SPECS/"

args=(--define "_topdir $t" --define "rdcp_version $version"
	--define "_rdcp_packaging $top/packaging")
if [ -z "$(rpm --eval '%{?systemd_post:1}')" ]; then
	args+=(--load "$top/packaging/rpm/macros.compat")
fi
if [ -f /etc/debian_version ]; then
	args+=(--nodeps)
fi
rpmbuild -bb "${args[@]}" "$t/SPECS/rdcp.spec"
find "$t/RPMS" -name '*.rpm' -exec mv {} "$out/" \;
rm -rf "$t"
if command -v rpmlint >/dev/null; then
	rpmlint "$out"/*.rpm >"$out/rpmlint.txt" 2>&1 || true
	cat "$out/rpmlint.txt"
fi
ls -l "$out"/*.rpm
