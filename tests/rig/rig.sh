#!/usr/bin/env bash
# rig.sh - Soft-RoCE (rdma_rxe) test rig: runs commands in QEMU guests that boot
# Debian's stock kernel and chroot into this host's / (read-only, over 9p).
#
#   rig.sh prepare                       fetch kernel, build initramfs (cached)
#   rig.sh run1 [OPTS] -- CMD...         one VM, rxe0 on veth0 (10.77.1.1)
#   rig.sh run2 [OPTS] --a CMD_A --b CMD_B
#                                        two VMs on a virtual wire, rxe0 on eth0
#                                        (a = 10.77.2.1, b = 10.77.2.2)
#   rig.sh shell [OPTS] [1|2]            interactive shell (VM a); exit or Ctrl-A x
#   rig.sh install-deps                  apt-get install the host packages
# OPTS: --timeout S; --bind DIR (a host dir hidden by a guest tmpfs, e.g. under
#   /tmp or /root, bound in read-only; repeatable); --bind-runfiles[=DIR] (the
#   Bazel runfiles tree DIR, default $RUNFILES_DIR or $TEST_SRCDIR: bind the
#   checkout and output base its links point into, where hidden); --ipv6 (also
#   fd00::1/64 on a, fd00::2/64 on b: RIG_SELF_IP6, RIG_PEER_IP6); --ipv6-only
#   (those alone, no IPv4: RIG_SELF_IP and RIG_PEER_IP are the IPv6 ones);
#   --rails 2 (run2, shell 2: a second wire, eth1 with 10.77.3.1 on a and
#   10.77.3.2 on b, rxe1 on it: RIG_SELF_IP2, RIG_PEER_IP2, RIG_RAILS);
#   --mem MIB (each VM's memory, default 1536, or RIG_MEM); --disk FILE (run1),
#   --disk-a FILE, --disk-b FILE (run2): an ext4 image (raw, or qcow2 by its
#   .qcow2 name) as the VM's /dev/vda, mounted read-write on RIG_DISK=/run/rig/disk;
#   --disk-snapshot: the VMs' writes go to QEMU's temporary overlays, the images
#   stay as they were (so both VMs can be given the same image).
#
# RIG_ROOT=DIR: the guests chroot into DIR (e.g. a debootstrap root with the
# packages installed) instead of this host's /; it needs bash, iproute2 and
# busybox. Exit status: the command's own status; 124 on timeout; 125 when the rig itself
# failed (boot, setup, missing files); 2 on usage errors.
# See tests/rig/README.md.
set -euo pipefail

readonly RIG_CACHE_DIR="${RDCP_RIG_CACHE:-/var/cache/rdcp-rig}"
readonly DEFAULT_TIMEOUT="${RIG_TIMEOUT:-300}"
readonly GUEST_ROOT="${RIG_ROOT:-/}"
readonly EXIT_TIMEOUT=124
readonly EXIT_RIG=125
readonly MSIZE=262144
# Modules wanted in the guest; dependencies are resolved with modprobe at
# prepare time. crc32_generic first: rdma_rxe needs it but does not declare it.
readonly GUEST_MODULES="crc32_generic configfs ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm
udp_tunnel ip6_udp_tunnel rdma_rxe virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev
virtio_pci 9pnet 9pnet_virtio netfs fscache 9p failover net_failover virtio_net veth sch_netem
virtio-rng"
# Loaded only in a VM given a scratch disk (--disk, --disk-a, --disk-b): the
# ext4 image appears as /dev/vda and is mounted on /run/rig/disk.
readonly DISK_MODULES="crc32c_generic virtio_blk ext4"
readonly HOST_PACKAGES="qemu-system-x86 busybox-static cpio kmod iproute2 rdma-core ibverbs-providers
ibverbs-utils rdmacm-utils perftest iputils-ping"

QEMU_PIDFILES=()
TIMEOUT_PIDS=()
RUN_TMP=""
BINDS=()
IPV6=0
RAILS=1
MEM_MIB=${RIG_MEM:-1536}
DISK_A=""
DISK_B=""
DISK_SNAP=""
KEEP_TMP="${RIG_KEEP:-0}"

log() { printf 'rig: %s\n' "$*" >&2; }
die() { printf 'rig: error: %s\n' "$*" >&2; exit "$EXIT_RIG"; }
usage() {
  sed -n '2,29s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

# Single-quote a string for sh/bash.
shq() {
  local s=$1
  printf "'%s'" "${s//\'/\'\\\'\'}"
}

# ---------------------------------------------------------------------------
# Guest /init (busybox sh, runs from the initramfs). Its text is part of the
# initramfs cache key, so editing it rebuilds the initramfs.
# ---------------------------------------------------------------------------
guest_init() {
  cat <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
msg() { echo "rig-init: $*" >/dev/console; }
fail() {
  msg "FATAL: $*"
  [ -d /rigctl/. ] && echo "guest init: $*" >>/rigctl/init.err
  poweroff -f
  sleep 10
}
while read -r m; do
  insmod "/lib/modules/$m" || fail "insmod $m"
done </modules.order
if grep -q 'rig.disk=1' /proc/cmdline; then
  while read -r m; do
    insmod "/lib/modules/$m" || fail "insmod $m"
  done </modules.disk
fi
O="trans=virtio,version=9p2000.L,msize=__MSIZE__"
mkdir -p /rigctl /mnt/host /orig
mount -t 9p -o "$O" rigctl /rigctl || fail "mount rigctl"
# The root is read-only and nothing changes it during a run: cache it as a
# host's page cache would (cache=none made every exec and library load a
# round trip per page to QEMU's 9p server: /bin/true 105 ms, 65 ms cached).
mount -t 9p -o "$O,ro,cache=loose" hostroot /mnt/host || fail "mount hostroot"
mount --bind /mnt/host /orig || fail "bind hostroot"
H=/mnt/host
mount -t tmpfs -o mode=1777 tmpfs $H/tmp || fail "tmpfs /tmp"
mount -t tmpfs -o mode=1777 tmpfs $H/var/tmp || fail "tmpfs /var/tmp"
mount -t tmpfs -o mode=755 tmpfs $H/run || fail "tmpfs /run"
mount -t tmpfs -o mode=700 tmpfs $H/root || fail "tmpfs /root"
mount -t proc proc $H/proc || fail "proc"
mount -t sysfs sys $H/sys || fail "sysfs"
mount -t devtmpfs dev $H/dev || fail "devtmpfs"
mkdir -p $H/dev/pts $H/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts $H/dev/pts || fail "devpts"
ln -sf pts/ptmx $H/dev/ptmx 2>/dev/null
mount -t tmpfs -o mode=1777 tmpfs $H/dev/shm || fail "shm"
mkdir -p $H/run/rig/ctl $H/run/rig/share $H/run/lock $H/run/sshd
mount --bind /rigctl $H/run/rig/ctl || fail "bind ctl"
if grep -q 'rig.disk=1' /proc/cmdline; then
  mkdir -p $H/run/rig/disk
  mount -t ext4 /dev/vda $H/run/rig/disk || fail "mount the scratch disk /dev/vda (ext4)"
fi
mount -t 9p -o "$O" rigshare $H/run/rig/share || fail "mount rigshare"
# Host directories hidden by the tmpfs mounts above (e.g. a cwd under /root).
if [ -f /rigctl/binds ]; then
  while read -r p; do
    [ -n "$p" ] && [ -d "/orig$p" ] || continue
    mkdir -p "$H$p" && mount --bind "/orig$p" "$H$p" || fail "bind $p"
  done </rigctl/binds
fi
chroot $H /bin/bash /run/rig/ctl/runner.sh
msg "runner exited $?"
poweroff -f
sleep 10
INIT
}

# Guest runner: runs inside the chroot (host's bash, ip, rdma); written per run.
guest_runner() {
  cat <<'RUNNER'
#!/bin/bash
# rig guest runner (generated by tests/rig/rig.sh)
C=/run/rig/ctl
set -u
# shellcheck disable=SC1091
. "$C/env"
setup_fail() {
  echo "setup: $*" >>"$C/setup.err"
  echo setup >"$C/status.tmp" && mv "$C/status.tmp" "$C/status"
  exit 1
}
hostname "rig-$RIG_ROLE" 2>/dev/null
# The open-file limits systemd gives a service (and a login) on Debian 12:
# soft 1024, hard 524288. The kernel's own for init (4096 hard) is what a
# daemon under systemd never sees; rdcpd sizes each session's window of
# entries by the hard limit.
ulimit -Hn 524288 2>/dev/null && ulimit -Sn 1024
ip link set lo up || setup_fail "lo up"
if [ "$RIG_MODE" = one ]; then
  ip link add veth0 type veth peer name veth1 || setup_fail "veth add"
  ip link set veth1 mtu 9000 up && ip link set veth0 mtu 9000 up || setup_fail "veth up"
  nd=veth0
else
  ip link set eth0 mtu 9000 up || setup_fail "eth0 up"
  nd=eth0
fi
if [ "$RIG_IPV6" != only ]; then
  ip addr add "$RIG_SELF_IP/24" dev "$nd" || setup_fail "addr $nd"
fi
if [ "$RIG_IPV6" != 0 ]; then
  # nodad: usable at once (the wire has no other host to collide with).
  ip -6 addr add "$RIG_SELF_IP6/64" dev "$nd" nodad || setup_fail "addr $RIG_SELF_IP6 on $nd"
fi
rdma link add rxe0 type rxe netdev "$nd" 2>>"$C/setup.err" || setup_fail "rdma link add rxe0 on $nd"
for _ in $(seq 100); do
  grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break
  sleep 0.1
done
grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state || setup_fail "rxe0 port not ACTIVE"
if [ "$RIG_IPV6" != 0 ]; then
  # rxe0's RoCE v2 GID for the IPv6 address (fd00:0000:...).
  for _ in $(seq 100); do
    cat /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | grep -q '^fd00:' && break
    sleep 0.1
  done
  cat /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | grep -q '^fd00:' ||
    setup_fail "rxe0 has no GID for $RIG_SELF_IP6"
fi
if [ "$RIG_MODE" = two ] && [ "${RIG_RAILS:-1}" = 2 ]; then
  # The second rail: its own wire, subnet and Soft-RoCE device.
  ip link set eth1 mtu 9000 up || setup_fail "eth1 up (--rails 2)"
  ip addr add "$RIG_SELF_IP2/24" dev eth1 || setup_fail "addr eth1"
  rdma link add rxe1 type rxe netdev eth1 2>>"$C/setup.err" || setup_fail "rdma link add rxe1 on eth1"
  for _ in $(seq 100); do
    grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state 2>/dev/null && break
    sleep 0.1
  done
  grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state || setup_fail "rxe1 port not ACTIVE"
fi
if [ "$RIG_MODE" = two ]; then
  : >"/run/rig/share/sync/ready-$RIG_ROLE"
  peer=b; [ "$RIG_ROLE" = b ] && peer=a
  for _ in $(seq 1200); do
    [ -e "/run/rig/share/sync/ready-$peer" ] && break
    [ -e "/run/rig/share/sync/done-$peer" ] && setup_fail "VM $peer ended before it was up"
    sleep 0.1
  done
  [ -e "/run/rig/share/sync/ready-$peer" ] || setup_fail "VM $peer never came up"
  rail2=""
  [ "${RIG_RAILS:-1}" = 2 ] && rail2=$RIG_PEER_IP2
  for ip in "$RIG_PEER_IP" ${RIG_PEER_IP6:+"$RIG_PEER_IP6"} ${rail2:+"$rail2"}; do
    ok=0
    for _ in $(seq 20); do
      if busybox ping -c1 -W1 "$ip" >/dev/null 2>&1; then ok=1; break; fi
    done
    if [ "$ok" != 1 ]; then
      { busybox ping -c1 -W1 "$ip"; ip addr; ip route; ip -6 route; } >>"$C/setup.err" 2>&1
      setup_fail "no IP connectivity to $ip"
    fi
  done
fi
if [ -n "${RIG_MEMLOCK:-}" ]; then
  ulimit -l "$RIG_MEMLOCK" || setup_fail "ulimit -l $RIG_MEMLOCK"
else
  ulimit -l unlimited || setup_fail "ulimit -l unlimited"
fi
export HOME=/root
cd "$RIG_CWD" 2>/dev/null || cd / || setup_fail "cd"
if [ "$RIG_SHELL" = 1 ]; then
  echo "rig: VM $RIG_ROLE ($RIG_SELF_IP, peer $RIG_PEER_IP); RIG_SHARED=$RIG_SHARED; 'exit' powers off"
  export TERM="${TERM:-vt100}" PS1="[rig-$RIG_ROLE \\w]# "
  setsid -c bash --norc -i </dev/ttyS0 >/dev/ttyS0 2>&1
  st=$?
else
  bash -c "$(cat "$C/cmd")" >"$C/out" 2>"$C/err" </dev/null
  st=$?
fi
echo "$st" >"$C/status.tmp" && mv "$C/status.tmp" "$C/status"
if [ "$RIG_MODE" = two ]; then
  # Stay up (and reachable) until the peer's command is done too; the host
  # also marks a VM done when its qemu exits, so this cannot hang forever.
  : >"/run/rig/share/sync/done-$RIG_ROLE"
  # without a fork per tick: the peer may still be measuring something
  nap=$(mktemp -u /run/nap.XXXXXX) && mkfifo "$nap" && exec {napfd}<>"$nap" && rm -f "$nap"
  until [ -e "/run/rig/share/sync/done-$peer" ]; do
    if [ -n "${napfd:-}" ]; then read -r -t 0.2 -u "$napfd" _; else sleep 0.2; fi
  done
fi
exit 0
RUNNER
}

# ---------------------------------------------------------------------------
# prepare
# ---------------------------------------------------------------------------
need_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || die "missing '$c' (run: $0 install-deps)"
  done
}

kernel_pkg() {
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
    awk '/Depends: linux-image-[0-9]/ {print $2; exit}') || true
  printf '%s' "$pkg"
}

apt_stamp() {
  find /var/lib/apt/lists -maxdepth 1 -type f -printf '%f %T@ %s\n' 2>/dev/null |
    sort | sha256sum | cut -c1-16
}

do_prepare() {
  need_cmd apt-get apt-cache dpkg depmod modprobe cpio gzip flock sha256sum qemu-system-x86_64
  [ -x /bin/busybox ] || die "/bin/busybox missing (apt-get install busybox-static)"
  mkdir -p "$RIG_CACHE_DIR"
  exec 9>"$RIG_CACHE_DIR/.lock"
  flock 9
  local pkg="" ver="" kdir="" stamp resolved="$RIG_CACHE_DIR/apt-resolved"
  # apt-cache is slow (~1.5 s); reuse its answer while the apt lists are unchanged.
  stamp=$(apt_stamp)
  if [ -f "$resolved" ]; then
    read -r s_stamp s_pkg s_ver <"$resolved" || true
    if [ "${s_stamp:-}" = "$stamp" ]; then
      pkg=$s_pkg
      ver=$s_ver
    fi
  fi
  if [ -z "$pkg" ]; then
    pkg=$(kernel_pkg)
    if [ -z "$pkg" ]; then
      log "apt cache lacks linux-image-amd64; running apt-get update"
      apt-get update >&2 || log "apt-get update failed"
      pkg=$(kernel_pkg)
      stamp=$(apt_stamp)
    fi
    if [ -n "$pkg" ]; then
      ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ {print $2; exit}')
      [ -n "$ver" ] && echo "$stamp $pkg $ver" >"$resolved"
    fi
  fi
  if [ -n "$pkg" ] && [ -n "$ver" ]; then
    kdir="$RIG_CACHE_DIR/kernel/${pkg}_${ver}"
    if [ ! -e "$kdir/.done" ]; then
      if ! prepare_kernel "$pkg" "$kdir"; then
        rm -rf "$kdir"
        kdir=""
        log "could not fetch $pkg $ver"
      fi
    fi
  fi
  if [ -z "${kdir:-}" ] || [ ! -e "$kdir/.done" ]; then
    # Offline fallback: the most recently prepared kernel.
    kdir=$(readlink -f "$RIG_CACHE_DIR/current-kernel" 2>/dev/null || true)
    if [ -z "$kdir" ] || [ ! -e "$kdir/.done" ]; then
      die "no kernel available (apt failed and nothing cached)"
    fi
    log "using cached kernel $kdir"
  fi
  ln -sfn "$kdir" "$RIG_CACHE_DIR/current-kernel.tmp"
  mv -T "$RIG_CACHE_DIR/current-kernel.tmp" "$RIG_CACHE_DIR/current-kernel"
  KVER=$(cat "$kdir/version")
  KERNEL="$kdir/root/boot/vmlinuz-$KVER"
  build_initrd "$kdir"
  exec 9>&-
}

prepare_kernel() {
  local pkg=$1 kdir=$2 kver deb
  log "fetching kernel package $pkg into $kdir"
  rm -rf "$kdir"
  mkdir -p "$kdir/dl"
  (cd "$kdir/dl" && timeout 900 apt-get download "$pkg" >&2 2>&1) || return 1
  deb=$(ls "$kdir"/dl/*.deb) || return 1
  dpkg -x "$deb" "$kdir/root" || return 1
  kver=$(ls "$kdir/root/lib/modules") || return 1
  [ -f "$kdir/root/boot/vmlinuz-$kver" ] || return 1
  depmod -b "$kdir/root" "$kver" || return 1
  echo "$kver" >"$kdir/version"
  rm -rf "$kdir/dl"
  touch "$kdir/.done"
}

build_initrd() {
  local kdir=$1 root="$1/root" key tmp dtmp dir m p rel seen=" "
  local init_text
  init_text=$(guest_init | sed "s/__MSIZE__/$MSIZE/")
  key=$(printf '%s\n%s\n%s\n%s\n' "$init_text" "$GUEST_MODULES" "$DISK_MODULES" \
    "$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null; sha256sum /bin/busybox)" |
    sha256sum | cut -c1-16)
  INITRD="$kdir/initrd-$key.cpio.gz"
  # A VM with a disk boots INITRD followed by a second archive with the disk
  # modules (the kernel unpacks both), so the others boot no larger an image.
  INITRD_DISK="$kdir/initrd-$key.disk.cpio.gz"
  [ -s "$INITRD" ] && [ -s "$INITRD_DISK" ] && return 0
  log "building initramfs $INITRD"
  tmp=$(mktemp -d "$kdir/initrd-build.XXXXXX")
  dtmp=$(mktemp -d "$kdir/initrd-build.XXXXXX")
  mkdir -p "$tmp"/{bin,dev,proc,sys,mnt,lib/modules}
  cp /bin/busybox "$tmp/bin/busybox"
  printf '%s\n' "$init_text" >"$tmp/init"
  chmod 755 "$tmp/init"
  : >"$tmp/modules.order"
  : >"$dtmp/modules.disk"
  for m in $GUEST_MODULES $DISK_MODULES; do
    local list=modules.order
    dir=$tmp
    case " $DISK_MODULES " in *" $m "*) list=modules.disk dir=$dtmp ;; esac
    while read -r p; do
      rel=${p#"$root/lib/modules/$KVER/"}
      case "$seen" in *" $rel "*) continue ;; esac
      seen="$seen$rel "
      mkdir -p "$dir/lib/modules/$(dirname "$rel")"
      case "$rel" in
        *.ko.xz) xz -dc "$p" >"$dir/lib/modules/${rel%.xz}"; rel=${rel%.xz} ;;
        *.ko.zst) zstd -qdc "$p" >"$dir/lib/modules/${rel%.zst}"; rel=${rel%.zst} ;;
        *.ko.gz) gzip -dc "$p" >"$dir/lib/modules/${rel%.gz}"; rel=${rel%.gz} ;;
        *) cp "$p" "$dir/lib/modules/$rel" ;;
      esac
      echo "$rel" >>"$dir/$list"
    done < <(modprobe -d "$root" -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" {print $2}')
  done
  grep -q rdma_rxe "$tmp/modules.order" && grep -q ext4 "$dtmp/modules.disk" ||
    { rm -rf "$tmp" "$dtmp"; die "module resolution failed"; }
  (cd "$tmp" && find . -print0 | cpio --null -o -H newc --quiet | gzip -6) >"$INITRD.tmp"
  { cat "$INITRD.tmp" &&
    (cd "$dtmp" && find . -print0 | cpio --null -o -H newc --quiet | gzip -6); } >"$INITRD_DISK.tmp"
  mv "$INITRD_DISK.tmp" "$INITRD_DISK"
  mv "$INITRD.tmp" "$INITRD"
  rm -rf "$tmp" "$dtmp"
}

# ---------------------------------------------------------------------------
# running VMs
# ---------------------------------------------------------------------------
cleanup() {
  local f pid
  for f in "${QEMU_PIDFILES[@]}"; do
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" == qemu* ]]; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  # timeout(1) forwards TERM to a qemu that had not yet written its pidfile,
  # reaps it and exits (its -k 5 escalates to KILL).
  for pid in "${TIMEOUT_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${TIMEOUT_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "$RUN_TMP" ] && [ -d "$RUN_TMP" ]; then
    if [ "$KEEP_TMP" = 1 ]; then
      log "kept $RUN_TMP"
    else
      rm -rf "$RUN_TMP"
    fi
  fi
}

on_signal() {
  log "interrupted ($1)"
  trap - EXIT
  cleanup
  exit "$2"
}

setup_traps() {
  trap cleanup EXIT
  trap 'on_signal INT 130' INT
  trap 'on_signal TERM 143' TERM
  trap 'on_signal HUP 129' HUP
}

# make_ctl ROLE MODE SELF PEER CMD SHELL -> creates $RUN_TMP/ctl-ROLE
make_ctl() {
  local role=$1 mode=$2 self=$3 peer=$4 cmd=$5 shell=$6 c n cwd
  c="$RUN_TMP/ctl-$role"
  mkdir -p "$c"
  guest_runner >"$c/runner.sh"
  printf '%s\n' "$cmd" >"$c/cmd"
  cwd=$(pwd -P)
  {
    printf 'export PATH=%s\n' "$(shq "$PATH")"
    for n in $(compgen -e | grep '^RIG_' || true) ${RIG_ENV:-}; do
      [[ "$n" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
      [ -n "${!n+x}" ] || continue
      printf 'export %s=%s\n' "$n" "$(shq "${!n}")"
    done
    [ -n "${TERM:-}" ] && printf 'export TERM=%s\n' "$(shq "$TERM")"
    if [ "$IPV6" != 0 ]; then
      # a is fd00::1, b fd00::2; one VM is fd00::1 for both.
      local self6=fd00::1 peer6=fd00::2
      [ "$role" = b ] && { self6=fd00::2; peer6=fd00::1; }
      [ "$mode" = one ] && peer6=fd00::1
      printf 'export RIG_SELF_IP6=%s RIG_PEER_IP6=%s\n' "$self6" "$peer6"
      [ "$IPV6" = only ] && { self=$self6; peer=$peer6; }
    fi
    printf 'export RIG_ROLE=%s RIG_SELF_IP=%s RIG_PEER_IP=%s RIG_MODE=%s RIG_SHELL=%s RIG_IPV6=%s\n' \
      "$role" "$self" "$peer" "$mode" "$shell" "$IPV6"
    # the second rail: 10.77.3.x beside 10.77.2.x
    printf 'export RIG_RAILS=%s RIG_SELF_IP2=%s RIG_PEER_IP2=%s\n' "$RAILS" \
      "${self/#10.77.2./10.77.3.}" "${peer/#10.77.2./10.77.3.}"
    printf 'export RIG_SHARED=/run/rig/share/data RIG_CWD=%s\n' "$(shq "$cwd")"
    local disk=$DISK_A
    [ "$role" = b ] && disk=$DISK_B
    [ -n "$disk" ] && printf 'export RIG_DISK=/run/rig/disk\n'
  } >"$c/env"
  # cwd (and a Bazel output base) under a guest tmpfs is bind-mounted from the host.
  {
    case "$cwd" in
      /tmp/?* | /run/?* | /var/tmp/?* | /root/?*)
        if [[ "$cwd" =~ ^(.*/\.cache/bazel)(/|$) ]]; then
          echo "${BASH_REMATCH[1]}"
        fi
        echo "$cwd"
        ;;
    esac
    for n in ${RIG_BINDS:-}; do echo "$n"; done
    for n in "${BINDS[@]}"; do echo "$n"; done
  } >"$c/binds"
}

# ---------------------------------------------------------------------------
# host directories the guest's tmpfs mounts hide
# ---------------------------------------------------------------------------
is_hidden() {
  case "$1" in
    /tmp/?* | /var/tmp/?* | /run/?* | /root/?* | /dev/shm/?*) return 0 ;;
  esac
  return 1
}

add_bind() {
  local p=$1
  [[ "$p" == /* ]] || { log "--bind $p: not an absolute path"; exit 2; }
  [[ "$p" != *$'\n'* ]] || { log "--bind: a path with a newline"; exit 2; }
  [ -d "$p" ] || { log "--bind $p: not a directory on this host"; exit 2; }
  p=$(readlink -f "$p")
  is_hidden "$p" && BINDS+=("$p")
  return 0
}

# The directory to bind for a hidden path TARGET that runfiles entry REL
# (path inside its repository) points to: a Bazel output base (the part
# before /execroot/), else the checkout (TARGET minus REL), else its dir.
bind_root() {
  local target=$1 rel=$2
  if [[ "$target" == */execroot/* ]]; then
    printf '%s\n' "${target%%/execroot/*}"
  elif [ -n "$rel" ] && [[ "$target" == */"$rel" ]]; then
    printf '%s\n' "${target%/"$rel"}"
  else
    dirname "$target"
  fi
}

# --bind-runfiles[=DIR]: bind everything the runfiles tree DIR leads to that
# a guest would not see: DIR itself, and the checkout and output base its
# links point into (Bazel's source links go straight into the checkout).
add_runfiles_binds() {
  local rf=${1:-${RUNFILES_DIR:-${TEST_SRCDIR:-}}} link t rel
  [ -n "$rf" ] || { log "--bind-runfiles: no DIR and no RUNFILES_DIR/TEST_SRCDIR"; exit 2; }
  [ -d "$rf" ] || { log "--bind-runfiles $rf: not a directory"; exit 2; }
  rf=$(readlink -f "$rf")
  local -A seen=()
  if is_hidden "$rf"; then
    if [[ "$rf" == */execroot/* ]]; then seen[${rf%%/execroot/*}]=1; else seen[$rf]=1; fi
  fi
  while IFS= read -r -d '' link; do
    t=$(readlink -f "$link") || continue
    is_hidden "$t" || continue
    rel=${link#"$rf"/}
    rel=${rel#*/} # drop the repository name
    seen[$(bind_root "$t" "$rel")]=1
  done < <(find "$rf" -type l -print0)
  # Outermost directories only: a bind inside another one is redundant.
  local p q inner
  for p in "${!seen[@]}"; do
    inner=0
    for q in "${!seen[@]}"; do
      [ "$p" != "$q" ] && [[ "$p" == "$q"/* ]] && inner=1
    done
    [ "$inner" = 1 ] || BINDS+=("$p")
  done
  return 0
}

# parse_common_opt ARGS...: consumes one option shared by run1/run2/shell;
# sets SHIFT to the number of arguments used (0 if not one of them).
parse_common_opt() {
  SHIFT=0
  case "$1" in
    --timeout) [ "$#" -ge 2 ] || usage; parse_timeout "$2"; SHIFT=2 ;;
    --timeout=*) parse_timeout "${1#*=}"; SHIFT=1 ;;
    --bind) [ "$#" -ge 2 ] || usage; add_bind "$2"; SHIFT=2 ;;
    --bind=*) add_bind "${1#*=}"; SHIFT=1 ;;
    --bind-runfiles) add_runfiles_binds ""; SHIFT=1 ;;
    --ipv6) IPV6=1; SHIFT=1 ;;
    --ipv6-only) IPV6=only; SHIFT=1 ;;
    --rails) [ "$#" -ge 2 ] || usage
      case "$2" in 1 | 2) RAILS=$2 ;; *) log "--rails: 1 or 2"; exit 2 ;; esac
      SHIFT=2 ;;
    --bind-runfiles=*) add_runfiles_binds "${1#*=}"; SHIFT=1 ;;
    --mem) [ "$#" -ge 2 ] || usage
      [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 512 ] || { log "--mem $2: MiB, at least 512"; exit 2; }
      MEM_MIB=$2; SHIFT=2 ;;
    --disk | --disk-a | --disk-b) [ "$#" -ge 2 ] || usage
      [ -f "$2" ] || { log "$1 $2: no such image file"; exit 2; }
      if [ "$1" = --disk-b ]; then DISK_B=$(readlink -f "$2"); else DISK_A=$(readlink -f "$2"); fi
      SHIFT=2 ;;
    --disk-snapshot) DISK_SNAP=",snapshot=on"; SHIFT=1 ;;
  esac
  return 0
}

# start_vm ROLE NETARGS... (background; sets VM_TPID)
start_vm() {
  local role=$1 to=$2 fg=$3
  shift 3
  local c="$RUN_TMP/ctl-$role" disk=$DISK_A diskarg="" fmt=raw initrd=$INITRD
  [ "$role" = b ] && disk=$DISK_B
  if [ -n "$disk" ]; then
    case "$disk" in *.qcow2) fmt=qcow2 ;; esac
    diskarg=" rig.disk=1"
    initrd=$INITRD_DISK
    set -- "$@" -drive "file=$disk,format=$fmt,if=virtio,cache=writeback$DISK_SNAP"
  fi
  [ -x "$GUEST_ROOT/bin/bash" ] || die "RIG_ROOT $GUEST_ROOT: no bin/bash there"
  # shellcheck disable=SC2054 # commas belong to qemu option values
  local -a q=(qemu-system-x86_64 -machine q35 -accel tcg,thread=multi
    -cpu qemu64,+aes,+pclmulqdq,+ssse3,+sse4.1,+sse4.2 -smp 1 -m "$MEM_MIB"
    -nographic -no-reboot -kernel "$KERNEL" -initrd "$initrd"
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rig.role=$role$diskarg"
    -virtfs "local,path=$GUEST_ROOT,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$c,mount_tag=rigctl,security_model=none"
    -virtfs "local,path=$RUN_TMP/share,mount_tag=rigshare,security_model=none"
    -device virtio-rng-pci -nic none
    -pidfile "$RUN_TMP/qemu-$role.pid" "$@")
  QEMU_PIDFILES+=("$RUN_TMP/qemu-$role.pid")
  if [ "$fg" = 1 ]; then
    if [ "$to" -gt 0 ]; then
      timeout --foreground -k 5 "$to" "${q[@]}"
    else
      "${q[@]}"
    fi
    return
  fi
  timeout -k 5 "$to" "${q[@]}" </dev/null >"$RUN_TMP/console-$role.log" 2>&1 &
  VM_TPID=$!
  TIMEOUT_PIDS+=("$VM_TPID")
}

# vm_result ROLE QEMU_STATUS -> prints guest status; sets VM_STATUS
vm_result() {
  local role=$1 qs=$2 c="$RUN_TMP/ctl-$1"
  if [ "$qs" = 124 ] || [ "$qs" = 137 ]; then
    VM_STATUS=$EXIT_TIMEOUT
    VM_WHY="timed out"
  elif [ -f "$c/status" ] && [ "$(cat "$c/status")" = setup ]; then
    VM_STATUS=$EXIT_RIG
    VM_WHY="guest setup failed: $(tr '\n' ' ' <"$c/setup.err" 2>/dev/null)"
  elif [ -f "$c/status" ]; then
    VM_STATUS=$(cat "$c/status")
    VM_WHY="command exited $VM_STATUS"
  else
    VM_STATUS=$EXIT_RIG
    VM_WHY="no result from guest (qemu status $qs; boot failure?) $(cat "$c/init.err" 2>/dev/null || true)"
  fi
  if [ "$VM_STATUS" = "$EXIT_RIG" ] || [ "$VM_STATUS" = "$EXIT_TIMEOUT" ] || [ "${RIG_VERBOSE:-0}" = 1 ]; then
    log "VM $role console (tail):"
    tail -n 30 "$RUN_TMP/console-$role.log" 2>/dev/null |
      sed -E -e $'s/\x1b(\\[[0-9;?]*[A-Za-z]|c)//g' -e "s/^/  [$role console] /" >&2 || true
  fi
}

parse_timeout() {
  [[ "$1" =~ ^[0-9]+$ ]] || { log "bad timeout '$1'"; exit 2; }
  TIMEOUT=$1
}

new_run_tmp() {
  RUN_TMP=$(mktemp -d "${TMPDIR:-/tmp}/rdcp-rig.XXXXXX")
  chmod 755 "$RUN_TMP"
  mkdir -p "$RUN_TMP/share/data" "$RUN_TMP/share/sync"
  chmod 1777 "$RUN_TMP/share/data"
}

cmd_from_args() {
  if [ "$#" -eq 1 ]; then
    printf '%s' "$1"
  else
    printf '%q ' "$@"
  fi
}

do_run1() {
  TIMEOUT=$DEFAULT_TIMEOUT
  while [ "$#" -gt 0 ]; do
    parse_common_opt "$@"
    if [ "$SHIFT" -gt 0 ]; then shift "$SHIFT"; continue; fi
    case "$1" in
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ "$#" -ge 1 ] || usage
  local cmd
  cmd=$(cmd_from_args "$@")
  do_prepare
  setup_traps
  new_run_tmp
  make_ctl a one 10.77.1.1 10.77.1.1 "$cmd" 0
  start_vm a "$TIMEOUT" 0
  local qs=0
  wait "$VM_TPID" || qs=$?
  local c="$RUN_TMP/ctl-a"
  [ -f "$c/out" ] && cat "$c/out"
  [ -f "$c/err" ] && cat "$c/err" >&2
  vm_result a "$qs"
  if [ "$VM_STATUS" = "$EXIT_TIMEOUT" ]; then
    log "timed out after ${TIMEOUT}s"
  elif [ "$VM_STATUS" = "$EXIT_RIG" ]; then
    log "VM a: $VM_WHY"
  fi
  return "$VM_STATUS"
}

port_in_use() {
  [ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
}

# wire_args ROLE: QEMU's wires for VM ROLE (b listens on PORT, and PORT + 1
# for the second rail; a connects). Sets WIRE.
wire_args() {
  local how=listen mac=02
  [ "$1" = a ] && { how=connect; mac=01; }
  WIRE=(-netdev "socket,id=n0,$how=127.0.0.1:$PORT"
    -device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:$mac,host_mtu=9000,romfile=")
  [ "$RAILS" = 2 ] && WIRE+=(-netdev "socket,id=n1,$how=127.0.0.1:$((PORT + 1))"
    -device "virtio-net-pci,netdev=n1,mac=52:54:00:00:01:$mac,host_mtu=9000,romfile=")
  return 0
}

# Start VM b listening on a free port (and the next one with --rails 2); sets PORT.
start_b_listening() {
  local to=$1 try
  for try in 1 2 3 4 5 6 7 8; do
    PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    port_in_use "$PORT" && continue
    [ "$RAILS" = 2 ] && port_in_use $((PORT + 1)) && continue
    wire_args b
    start_vm b "$to" 0 "${WIRE[@]}"
    for _ in $(seq 100); do
      if [ -n "$(ss -Htln "( sport = :$PORT )" 2>/dev/null)" ] &&
        { [ "$RAILS" != 2 ] || [ -n "$(ss -Htln "( sport = :$((PORT + 1)) )" 2>/dev/null)" ]; }; then
        return 0
      fi
      kill -0 "$VM_TPID" 2>/dev/null || break
      sleep 0.05
    done
    if kill -0 "$VM_TPID" 2>/dev/null; then
      die "qemu b did not listen on port $PORT"
    fi
    wait "$VM_TPID" || true
    log "port $PORT: qemu b failed (attempt $try), retrying"
    rm -f "$RUN_TMP/qemu-b.pid"
  done
  die "could not start VM b on a free port"
}

do_run2() {
  TIMEOUT=$DEFAULT_TIMEOUT
  local ca="" cb="" have_a=0 have_b=0
  while [ "$#" -gt 0 ]; do
    parse_common_opt "$@"
    if [ "$SHIFT" -gt 0 ]; then shift "$SHIFT"; continue; fi
    case "$1" in
      --a) [ "$#" -ge 2 ] || usage; ca=$2; have_a=1; shift 2 ;;
      --b) [ "$#" -ge 2 ] || usage; cb=$2; have_b=1; shift 2 ;;
      *) usage ;;
    esac
  done
  if [ "$have_a" != 1 ] || [ "$have_b" != 1 ]; then usage; fi
  do_prepare
  setup_traps
  new_run_tmp
  make_ctl a two 10.77.2.1 10.77.2.2 "$ca" 0
  make_ctl b two 10.77.2.2 10.77.2.1 "$cb" 0
  start_b_listening "$TIMEOUT"
  local tb=$VM_TPID
  wire_args a
  start_vm a "$TIMEOUT" 0 "${WIRE[@]}"
  local ta=$VM_TPID qa=0 qb=0 first="" st=0
  # Whichever VM ends first is marked done, so the other one stops waiting for it.
  wait -n -p first "$ta" "$tb" || st=$?
  if [ "$first" = "$ta" ]; then
    qa=$st
    : >"$RUN_TMP/share/sync/done-a"
    wait "$tb" || qb=$?
  else
    qb=$st
    : >"$RUN_TMP/share/sync/done-b"
    wait "$ta" || qa=$?
  fi
  local r
  for r in a b; do
    [ -s "$RUN_TMP/ctl-$r/out" ] && sed "s/^/[$r] /" "$RUN_TMP/ctl-$r/out"
    [ -s "$RUN_TMP/ctl-$r/err" ] && sed "s/^/[$r] /" "$RUN_TMP/ctl-$r/err" >&2
  done
  vm_result a "$qa"
  local sa=$VM_STATUS wa=$VM_WHY
  vm_result b "$qb"
  local sb=$VM_STATUS wb=$VM_WHY
  if [ "$sa" = 0 ] && [ "$sb" = 0 ]; then
    return 0
  fi
  log "VM a: $wa; VM b: $wb"
  if [ "$sa" = "$EXIT_TIMEOUT" ] || [ "$sb" = "$EXIT_TIMEOUT" ]; then
    return "$EXIT_TIMEOUT"
  fi
  if [ "$sa" != 0 ]; then return "$sa"; fi
  return "$sb"
}

do_shell() {
  TIMEOUT=${RIG_TIMEOUT:-0}
  while [ "$#" -gt 0 ]; do
    parse_common_opt "$@"
    [ "$SHIFT" -gt 0 ] || break
    shift "$SHIFT"
  done
  local n=${1:-1}
  do_prepare
  setup_traps
  new_run_tmp
  [ -t 0 ] || log "stdin is not a terminal; the shell may misbehave"
  log "booting; 'exit' in the guest powers it off (Ctrl-A x kills qemu)"
  case "$n" in
    1)
      make_ctl a one 10.77.1.1 10.77.1.1 "" 1
      start_vm a "$TIMEOUT" 1 || true
      ;;
    2)
      make_ctl a two 10.77.2.1 10.77.2.2 "" 1
      make_ctl b two 10.77.2.2 10.77.2.1 "while :; do sleep 3600; done" 0
      local bto=$TIMEOUT
      [ "$bto" -gt 0 ] || bto=86400
      start_b_listening "$bto"
      wire_args a
      start_vm a "$TIMEOUT" 1 "${WIRE[@]}" || true
      ;;
    *) usage ;;
  esac
  stty sane 2>/dev/null || true
}

# The virtual wire is a TCP connection between the two QEMUs on 127.0.0.1.
# With the host's delayed ACKs, Nagle held every second frame of an
# exchange for up to 40 ms: an RC round trip took 45 ms where ICMP took
# 1 ms (ibv_rc_pingpong: 44 ms per iteration; 1.7 ms with quick ACKs). So
# run2 and `shell 2` run QEMU in a network namespace of their own whose
# loopback routes ACK at once (`quickack 1`); nothing else of the host's
# network is needed there. Where unshare is not allowed the rig still runs,
# with the slow wire, and says so.
wire_netns() {
  local sub=${1:-}
  case "$sub" in run2 | shell) ;; *) return 0 ;; esac
  if [ "${RIG_IN_NETNS:-}" = 1 ]; then
    ip link set lo up &&
      ip route change local 127.0.0.0/8 dev lo table local proto kernel scope host \
        src 127.0.0.1 quickack 1 &&
      ip route change local 127.0.0.1 dev lo table local proto kernel scope host \
        src 127.0.0.1 quickack 1 ||
      log "could not set quick ACKs on the wire's loopback; round trips will be slow"
    return 0
  fi
  [ "${RIG_NETNS:-1}" = 0 ] && return 0
  if unshare -n true 2>/dev/null; then
    RIG_IN_NETNS=1 exec unshare -n -- bash "$0" "$@"
  fi
  log "unshare -n not allowed here: the wire keeps the host's delayed ACKs (slow round trips)"
}

main() {
  wire_netns "$@"
  [ "$#" -ge 1 ] || usage
  local sub=$1
  shift
  case "$sub" in
    prepare)
      do_prepare
      log "kernel $KVER: $KERNEL"
      log "initrd: $INITRD"
      ;;
    run1) do_run1 "$@" ;;
    run2) do_run2 "$@" ;;
    shell) do_shell "$@" ;;
    install-deps)
      # shellcheck disable=SC2086
      apt-get install -y --no-install-recommends $HOST_PACKAGES
      ;;
    -h | --help | help) usage ;;
    *) usage ;;
  esac
}

main "$@"
