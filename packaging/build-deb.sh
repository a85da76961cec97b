#!/usr/bin/env bash
# Build the Debian packages rdcp and rdcpd into OUTDIR:
#   packaging/build-deb.sh [--version V] [--no-lintian] OUTDIR
# Copies the source tree (tracked and new files, no build outputs) to
# OUTDIR/build/rdcp-VERSION, puts packaging/debian in place as debian/, runs
# dpkg-buildpackage -us -uc -b there (Bazel offline, its output root inside
# that tree), moves the .debs to OUTDIR (-dbgsym packages to OUTDIR/dbgsym)
# and runs lintian on them: errors and warnings fail the build.
# --version V builds version V instead of VERSION (VERSION in the copy and a
# changelog entry are written for it): snapshots use
# --version "$(scripts/version.sh)", the upgrade test an older number.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version="" lintian=1
while [ "$#" -gt 1 ]; do
	case "$1" in
	--version) version=$2; shift 2 ;;
	--no-lintian) lintian=0; shift ;;
	*) break ;;
	esac
done
[ "$#" -eq 1 ] || { sed -n '2,11s/^# \{0,1\}//p' "$0" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
[ -n "$version" ] || version=$(head -n1 "$top/VERSION")
case "$version" in
'' | *[!0-9A-Za-z.+~]*) echo "build-deb: bad version '$version'" >&2; exit 2 ;;
esac

src="$out/build/rdcp-$version"
rm -rf "$out/build"
mkdir -p "$src"
"$top/packaging/export-tree.sh" "$src"
cp -a "$top/packaging/debian" "$src/debian"
cp "$top/packaging/systemd/rdcpd.sysusers" "$src/debian/rdcpd.sysusers"
if [ "$version" != "$(head -n1 "$top/VERSION")" ]; then
	echo "$version" >"$src/VERSION"
	{
		printf 'rdcp (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * Built from %s by packaging/build-deb.sh --version.\n\n' \
			"$(git -C "$top" describe --always --dirty 2>/dev/null || echo 'a source tree')"
		printf ' -- rdcp team <team@rdcp.invalid>  %s\n\n' "$(date -R)"
		cat "$top/packaging/debian/changelog"
	} >"$src/debian/changelog"
fi

(cd "$src" && dpkg-buildpackage -us -uc -b)
mkdir -p "$out/dbgsym"
changes=$(ls "$out/build"/rdcp_"${version}"_*.changes)
if [ "$lintian" = 1 ]; then
	# Overrides (debian/*.lintian-overrides) each say why.
	lintian --fail-on error,warning --info "$changes"
fi
mv "$out"/build/*-dbgsym_*.deb "$out/dbgsym/" 2>/dev/null || true
mv "$out"/build/*.deb "$out/"
rm -rf "$out/build"
ls -l "$out"/*.deb
