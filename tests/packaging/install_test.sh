#!/usr/bin/env bash
# The packages on a fresh machine (issue 10), as root:
#   tests/packaging/install_test.sh [--no-rig] [--keep] [WORKDIR]
#  1. build the .debs (lintian-clean, build-deb.sh) and the .rpms, and
#     compare their file lists (compare-packages.sh); build an older version
#     (VERSION with a lower number) for the upgrade;
#  2. a minimal Debian 12 root from debootstrap (cached as a tarball under
#     /var/cache/rdcp-pkgtest; apt's downloads are cached there too);
#  3. fresh install there with apt-get install ./*.deb (dependencies from the
#     archive): versions, --help, rdcpd --check-config on the shipped config,
#     man -w, systemd-analyze verify (with a ReadWritePaths= drop-in), the
#     user, the unit installed but not enabled; purge: nothing left but the
#     user (policy keeps system users) and the dependencies;
#  4. upgrade: the older version installed, unit enabled, conffile edited,
#     then the new one: conffile, user and enablement kept;
#  5. the two-VM rig booted on that root (RIG_ROOT): rdcpd started as the
#     unit starts it (its ExecStart=, User=, Group=, LimitMEMLOCK=, with a
#     NOTIFY_SOCKET that must receive READY=1 and STOPPING=1), one push and
#     one pull with the packaged rdcp, byte-exact.
# Prints "install_test: PASS" or the failed checks; exit status 0/1.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
rig=1 keep=0
while [ "$#" -gt 0 ]; do
	case "$1" in
	--no-rig) rig=0; shift ;;
	--keep) keep=1; shift ;;
	*) break ;;
	esac
done
CACHE=${RDCP_PKGTEST_CACHE:-/var/cache/rdcp-pkgtest}
MIRROR=${RDCP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${RDCP_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
SUITE=bookworm
# What the root has besides minbase: systemd (systemd-analyze, sysusers),
# man-db; for the rig guests: iproute2 (ip, rdma), busybox (ping), socat
# (the NOTIFY_SOCKET end), util-linux's setpriv is in minbase.
INCLUDE=systemd,man-db,iproute2,busybox,socat,ca-certificates
W=${1:-$(mktemp -d /var/tmp/rdcp-pkgtest.XXXXXX)}
mkdir -p "$W"
W=$(cd "$W" && pwd)
R="$W/root"
fails=0
t0=$(date +%s)

say() { printf 'install_test: %s\n' "$*"; }
fail() {
	printf 'install_test: FAIL: %s\n' "$*" >&2
	fails=$((fails + 1))
}
check() { # check WHAT CMD...: run CMD, a failure is a failed check
	local what=$1
	shift
	if "$@" >"$W/check.out" 2>&1; then
		say "ok: $what"
	else
		fail "$what: $(tail -n 5 "$W/check.out")"
	fi
}
in_root() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
	DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }

mounted=()
umount_all() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null || true
	done
	mounted=()
}
cleanup() {
	umount_all
	if [ "$keep" = 1 ]; then
		say "kept $W"
	else
		rm -rf "$W"
	fi
}
trap cleanup EXIT
mount_root() {
	mount -t proc proc "$R/proc" && mounted+=("$R/proc")
	mount --bind /dev "$R/dev" && mounted+=("$R/dev")
	mount -t tmpfs tmpfs "$R/tmp" && mounted+=("$R/tmp")
	mkdir -p "$CACHE/apt-archives/partial"
	mount --bind "$CACHE/apt-archives" "$R/var/cache/apt/archives" &&
		mounted+=("$R/var/cache/apt/archives")
	cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
}

# --- 1. packages -------------------------------------------------------------
version=$(head -n1 "$top/VERSION")
old_version=0.0.1
say "building $version and $old_version packages in $W"
"$top/packaging/build-deb.sh" "$W/new" >"$W/build-new.log" 2>&1 ||
	{ tail -n 30 "$W/build-new.log" >&2; fail "build-deb.sh (log above)"; exit 1; }
say "ok: .debs built, lintian clean ($(($(date +%s) - t0)) s)"
# dpkg-buildflags reached the compiler: PIE, stack protector, fortify,
# relro, bindnow in the binaries (hardening-check; bookworm's hardening=+all
# has no -fcf-protection), and every C compilation unit in the -dbgsym
# packages' debug info was compiled with -fstack-protector-strong (Bazel's
# own default is -fstack-protector: this is the flag from dpkg-buildflags).
hardened() {
	local x="$W/x" f n units=0
	rm -rf "$x"
	mkdir -p "$x"
	for f in "$W/new"/*.deb "$W/new"/dbgsym/*.deb; do dpkg-deb -x "$f" "$x"; done
	hardening-check --nocfprotection "$x/usr/bin/rdcp" "$x/usr/sbin/rdcpd" "$x/usr/bin/rdcp-mpi" ||
		return 1
	while IFS= read -r f; do
		n=$(readelf --debug-dump=info "$f" 2>/dev/null | grep 'DW_AT_producer.*GNU C' |
			grep -vc -- '-fstack-protector-strong') || true
		[ "$n" = 0 ] || { echo "$f: $n units without -fstack-protector-strong"; return 1; }
		units=$((units + 1))
	done < <(find "$x/usr/lib/debug" -name '*.debug')
	[ "$units" = 3 ] || { echo "expected the debug info of 3 programs, found $units"; return 1; }
	rm -rf "$x"
}
check "hardening=+all flags in the binaries" hardened
"$top/packaging/build-rpm.sh" "$W/rpm" >"$W/build-rpm.log" 2>&1 ||
	{ tail -n 30 "$W/build-rpm.log" >&2; fail "build-rpm.sh (log above)"; exit 1; }
# Every rpmlint finding is one packaging/README.md lists and justifies.
rpmlint_known() {
	local tag bad=0
	[ -s "$W/rpm/rpmlint.txt" ] || { echo "no rpmlint output"; return 1; }
	for tag in $(sed -n 's/^[^ ]*: [EW]: \([^ ]*\).*/\1/p' "$W/rpm/rpmlint.txt" | sort -u); do
		grep -q "^| [EW]: $tag " "$top/packaging/README.md" || { echo "unlisted: $tag"; bad=1; }
	done
	return "$bad"
}
check "rpmlint reports only the findings packaging/README.md justifies" rpmlint_known
check "rpm and deb ship the same files" "$top/packaging/compare-packages.sh" "$W/new" "$W/rpm"
"$top/packaging/build-deb.sh" --version "$old_version" --no-lintian "$W/old" >"$W/build-old.log" 2>&1 ||
	{ tail -n 30 "$W/build-old.log" >&2; fail "build-deb.sh --version $old_version"; exit 1; }
say "packages built ($(($(date +%s) - t0)) s)"

# --- 2. the Debian 12 root ---------------------------------------------------
key=$(printf '%s\n' "$SUITE" "$MIRROR" "$INCLUDE" minbase 2 | sha256sum | cut -c1-12)
base="$CACHE/base-$SUITE-$key.tar"
mkdir -p "$CACHE/debootstrap-debs"
if [ ! -s "$base" ]; then
	say "debootstrap $SUITE (cached as $base afterwards)"
	rm -rf "$W/boot"
	debootstrap --variant=minbase --include="$INCLUDE" --cache-dir="$CACHE/debootstrap-debs" \
		"$SUITE" "$W/boot" "$MIRROR" >"$W/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$W/debootstrap.log" >&2; fail "debootstrap"; exit 1; }
	cat >"$W/boot/etc/apt/sources.list" <<SRC
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY $SUITE-security main
SRC
	rm -f "$W/boot/var/cache/apt/archives/"*.deb
	tar -C "$W/boot" -cf "$base.tmp" . && mv "$base.tmp" "$base"
	rm -rf "$W/boot"
fi
rm -rf "$R"
mkdir -p "$R"
tar -C "$R" -xf "$base"
mount_root
# Nothing may start services in the root (there is no systemd running anyway).
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"
in_root apt-get update -qq >"$W/apt-update.log" 2>&1 ||
	say "apt-get update failed (offline?); using the cached lists: $(tail -n 2 "$W/apt-update.log")"
mkdir -p "$R/root/debs"
cp "$W/new"/*.deb "$R/root/debs/"
mkdir -p "$R/root/old"
cp "$W/old"/*.deb "$R/root/old/"
say "root ready ($(($(date +%s) - t0)) s)"

# Files of the root (not the transient ones), for "purge leaves nothing".
snapshot() {
	(cd "$R" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./tmp -o -path ./run \
		-o -path ./var/cache -o -path ./var/lib/apt -o -path ./var/log -o -path ./root \
		-o -path ./var/lib/dpkg \) -prune -o -print) | sort
}

# --- 3. fresh install, checks, purge -------------------------------------------
snapshot >"$W/before"
check "apt-get install ./rdcp_$version.deb ./rdcpd_$version.deb ./rdcp-mpi_$version.deb" \
	in_root sh -c "cd /root/debs && apt-get install -y -q ./rdcp_${version}_*.deb ./rdcpd_${version}_*.deb ./rdcp-mpi_${version}_*.deb"
check "rdcp --version says $version" sh -c "chroot '$R' rdcp --version | grep -qx 'rdcp $version (protocol .*)'"
check "rdcpd --version says $version" sh -c "chroot '$R' rdcpd --version | grep -qx 'rdcpd $version (protocol .*)'"
check "rdcp --help" in_root rdcp --help
check "rdcpd --check-config on the shipped config" in_root rdcpd --check-config
check "man -w rdcp rdcpd rdcpd.conf rdcp-mpi" in_root man -w rdcp rdcpd rdcpd.conf rdcp-mpi
# rdcp-mpi (issue 32): its own package, with the MPI runtime it depends on
check "rdcp-mpi --version says $version" sh -c "chroot '$R' rdcp-mpi --version | grep -qx 'rdcp-mpi $version (protocol .*)'"
check "openmpi-bin came with rdcp-mpi (Depends)" in_root dpkg-query -W -f='${Status}' openmpi-bin
check "mpirun -np 2 rdcp-mpi --help in the fresh root" \
	in_root env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated \
	OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
	mpirun --oversubscribe -np 2 rdcp-mpi --help
check "rdcp has no MPI dependency" sh -c "! chroot '$R' ldd /usr/bin/rdcp | grep -qi mpi"
# verify exits 0 on unknown keys and bad values (it only warns): it must say nothing.
verify_clean() {
	local out
	out=$(in_root systemd-analyze verify rdcpd.service 2>&1) || { echo "$out"; return 1; }
	[ -z "$out" ] || { echo "$out"; return 1; }
}
check "systemd-analyze verify rdcpd.service: no complaint" verify_clean
mkdir -p "$R/etc/systemd/system/rdcpd.service.d" "$R/srv/data"
cp "$R/usr/share/doc/rdcpd/examples/modules.conf.example" \
	"$R/etc/systemd/system/rdcpd.service.d/modules.conf"
check "systemd-analyze verify with the ReadWritePaths= drop-in: no complaint" verify_clean
rm -rf "$R/etc/systemd/system/rdcpd.service.d" "$R/srv/data"
check "user rdcpd exists (sysusers)" in_root getent passwd rdcpd
check "the unit is installed but not enabled" \
	sh -c "! chroot '$R' systemctl is-enabled rdcpd.service"
check "ibverbs-providers came with the packages (Recommends)" \
	in_root dpkg-query -W -f='${Status}' ibverbs-providers
check "bash completion installed" test -s "$R/usr/share/bash-completion/completions/rdcp"
new_pkgs=$(in_root dpkg-query -W -f='${Package}\n' | sort)
check "apt-get purge rdcp rdcpd rdcp-mpi" in_root apt-get purge -y -q rdcp rdcpd rdcp-mpi
check "rdcp, rdcpd and rdcp-mpi are gone from dpkg" \
	sh -c "! chroot '$R' dpkg-query -W -f='\${Status}\n' rdcp rdcpd rdcp-mpi 2>/dev/null | grep -q installed"
snapshot >"$W/after"
# Allowed: the dependencies' files, and the system user (passwd, group,
# shadow, gshadow and their backups): policy keeps system users.
for p in $new_pkgs; do
	case "$p" in rdcp | rdcpd | rdcp-mpi) continue ;; esac
	# /lib, /bin, /sbin are links into /usr (merged /usr): both spellings.
	in_root dpkg-query -L "$p" 2>/dev/null | sed -E -e 's#^#.#' -e 'p' -e 's#^\./(lib|bin|sbin)/#./usr/\1/#'
done | sort -u >"$W/deps-files"
comm -13 "$W/before" "$W/after" | grep -v -x -F -f "$W/deps-files" |
	grep -v -E '^\./etc/(passwd|group|shadow|gshadow)-?$' |
	grep -v -E '^\./etc/ld\.so\.cache$' | while IFS= read -r f; do
		# alternatives the dependencies registered (Open MPI's mpirun, ...):
		# made by update-alternatives, so dpkg -L does not list them
		case "$f" in ./etc/alternatives/*) continue ;; esac
		case "$(readlink "$R/${f#./}")" in /etc/alternatives/*) continue ;; esac
		printf '%s\n' "$f"
	done >"$W/left" || true
if [ -s "$W/left" ]; then
	fail "purge left: $(tr '\n' ' ' <"$W/left")"
else
	say "ok: purge left nothing but the user and the dependencies"
fi

# --- 4. upgrade from the older version -----------------------------------------
check "install $old_version" in_root sh -c "cd /root/old && apt-get install -y -q ./*.deb"
check "rdcpd --version says $old_version" sh -c "chroot '$R' rdcpd --version | grep -q '^rdcpd $old_version '"
uid_before=$(in_root id -u rdcpd)
check "systemctl enable rdcpd" in_root systemctl enable rdcpd.service
sed -i 's/^#port = 18710$/port = 18711\n# edited by install_test/' "$R/etc/rdcp/rdcpd.conf"
check "the conffile edit is in place" grep -q '^port = 18711$' "$R/etc/rdcp/rdcpd.conf"
check "upgrade to $version" in_root sh -c "cd /root/debs && apt-get install -y -q ./*.deb </dev/null"
check "rdcpd --version says $version after the upgrade" \
	sh -c "chroot '$R' rdcpd --version | grep -q '^rdcpd $version '"
check "conffile edit kept" grep -q '^port = 18711$' "$R/etc/rdcp/rdcpd.conf"
check "no .dpkg-new/.dpkg-dist next to it" sh -c "! ls '$R'/etc/rdcp/*.dpkg-* 2>/dev/null | grep -q ."
check "the user kept (uid $uid_before)" sh -c "[ \"\$(chroot '$R' id -u rdcpd)\" = '$uid_before' ]"
check "the unit still enabled" in_root systemctl is-enabled rdcpd.service
check "rdcpd --check-config on the edited config" in_root rdcpd --check-config

# --- 5. the rig on this root ---------------------------------------------------
if [ "$rig" = 1 ]; then
	# A module for the push and the pull: on the guests' tmpfs /var/tmp.
	cat >>"$R/etc/rdcp/rdcpd.conf" <<'CONF'
[data]
	path = /var/tmp/data
	auth = none
CONF
	umount_all
	# VM b: rdcpd as the unit runs it; VM a: rdcp push, then pull.
	# shellcheck disable=SC2016
	server='set -u
unit=/lib/systemd/system/rdcpd.service
exec_start=$(sed -n "s/^ExecStart=//p" $unit)
user=$(sed -n "s/^User=//p" $unit); group=$(sed -n "s/^Group=//p" $unit)
[ "$(sed -n "s/^LimitMEMLOCK=//p" $unit)" = infinity ] && ulimit -l unlimited
echo "unit: ExecStart=$exec_start User=$user Group=$group"
mkdir -p /var/tmp/data && chown "$user:$group" /var/tmp/data
socat -u UNIX-RECV:/run/rdcpd.notify OPEN:/run/notify.log,creat,append &
sp=$!
for _ in $(seq 50); do [ -S /run/rdcpd.notify ] && break; sleep 0.1; done
chmod 666 /run/rdcpd.notify
env -i PATH=/usr/sbin:/usr/bin NOTIFY_SOCKET=/run/rdcpd.notify \
	setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs $exec_start 2>/run/rdcpd.log &
dp=$!
for _ in $(seq 100); do grep -q READY=1 /run/notify.log 2>/dev/null && break; sleep 0.1; done
grep -q READY=1 /run/notify.log || { echo "no READY=1"; cat /run/rdcpd.log; exit 1; }
echo "rdcpd ready: $(tr "\n" " " </run/notify.log)"
sed -n "s/.*STATUS=listening on port \([0-9]*\).*/\1/p" /run/notify.log >"$RIG_SHARED/port"
echo "rdcpd runs as uid $(awk "/^Uid:/ {print \$2}" /proc/$dp/status), $user is $(id -u "$user")"
[ "$(awk "/^Uid:/ {print \$2}" /proc/$dp/status)" = "$(id -u "$user")" ] || exit 1
: >"$RIG_SHARED/ready"
for _ in $(seq 900); do [ -e "$RIG_SHARED/done" ] && break; sleep 0.2; done
kill -TERM $dp; wait $dp; st=$?
sleep 0.3; kill $sp 2>/dev/null
echo "rdcpd exited $st; notify: $(tr "\n" " " </run/notify.log)"
cat /run/rdcpd.log
grep -q STOPPING=1 /run/notify.log || { echo "no STOPPING=1"; exit 1; }
[ "$st" = 0 ] || exit 1
cmp "$RIG_SHARED/pushed" /var/tmp/data/file.bin || { echo "pushed file differs on the server"; exit 1; }
stat -c "%U %n" /var/tmp/data/file.bin'
	# shellcheck disable=SC2016
	client='set -u
for _ in $(seq 900); do [ -e "$RIG_SHARED/ready" ] && break; sleep 0.2; done
head -c 5000000 /dev/urandom >/var/tmp/file.bin && cp /var/tmp/file.bin "$RIG_SHARED/pushed"
command -v rdcp
rdcp --version
port=$(cat "$RIG_SHARED/port")
rdcp -q /var/tmp/file.bin "rdcp://$RIG_PEER_IP:$port/data/" && echo "push ok (port $port)" && \
rdcp -q "rdcp://$RIG_PEER_IP:$port/data/file.bin" /var/tmp/back.bin && echo "pull ok" && \
cmp /var/tmp/file.bin /var/tmp/back.bin && echo "pulled file identical"
st=$?
: >"$RIG_SHARED/done"
exit $st'
	say "booting the rig on the installed root"
	if flock -o /tmp/rdcp-rig-run.lock env RIG_ROOT="$R" RIG_TIMEOUT=240 \
		"$top/tests/rig/rig.sh" run2 --b "$server" --a "$client" >"$W/rig.log" 2>&1; then
		say "ok: push and pull over RDMA with the packaged rdcp and rdcpd (unit's way)"
		grep -E 'unit:|ready|push ok|pull ok|identical|exited|rdcpd ' "$W/rig.log" | sed 's/^/  /'
	else
		cat "$W/rig.log" >&2
		fail "rig push/pull with the packaged programs"
	fi
fi

say "$(($(date +%s) - t0)) s"
if [ "$fails" -ne 0 ]; then
	say "$fails check(s) failed"
	exit 1
fi
say PASS
