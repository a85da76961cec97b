#!/usr/bin/env bash
# The .deb and .rpm packages ship the same files: for rdcp and rdcpd, the
# file lists (directories left out) and the config files must match once the
# distributions' conventions are mapped: /lib/systemd -> /usr/lib/systemd
# (Debian 12 is not /usr-merged in packages), man pages without their
# compression suffix, documentation by file name (the changelog, copyright
# and license files differ by design), no /usr/lib/.build-id links (RPM)
# or lintian overrides (Debian).
#   packaging/compare-packages.sh DEBDIR RPMDIR
set -euo pipefail
debdir=$1 rpmdir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0

norm() {
	sed -E -e 's#^/lib/#/usr/lib/#' \
		-e 's#^(/usr/share/man/.*)\.(gz|bz2|xz|zst)$#\1#' \
		-e 's#^/usr/share/doc/[^/]+/(examples/)?#doc:#' \
		-e 's#^/usr/share/licenses/[^/]+/#doc:#' |
		grep -v -E '^(doc:(changelog\.gz|changelog\.Debian\.gz|copyright|LICENSE)|/usr/lib/\.build-id(/.*)?|/usr/share/lintian/.*)$' |
		sort
}

for p in rdcp rdcpd rdcp-mpi; do
	deb=$(ls "$debdir"/"${p}"_*.deb)
	rpm=$(ls "$rpmdir"/"${p}"-[0-9]*.rpm)
	dpkg-deb --fsys-tarfile "$deb" | tar -tvf - | awk '$1 !~ /^d/ {print $6}' | sed 's#^\./#/#' |
		norm >"$tmp/$p.deb"
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" | awk '$1 !~ /^d/ {print $2}' |
		norm >"$tmp/$p.rpm"
	(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles 2>/dev/null || true) | sort >"$tmp/$p.deb.conf"
	rpm -qp --configfiles "$rpm" | grep -v '^(contains no files)$' | sort >"$tmp/$p.rpm.conf" || true
	if ! diff -u "$tmp/$p.deb" "$tmp/$p.rpm"; then
		echo "compare-packages: $p: the .deb and .rpm file lists differ (- deb, + rpm)" >&2
		rc=1
	fi
	if ! diff -u "$tmp/$p.deb.conf" "$tmp/$p.rpm.conf"; then
		echo "compare-packages: $p: conffiles differ (- deb, + rpm)" >&2
		rc=1
	fi
	[ "$rc" = 0 ] && echo "compare-packages: $p: $(wc -l <"$tmp/$p.deb") files, $(wc -l <"$tmp/$p.deb.conf") conffile(s), same in both"
done
exit "$rc"
