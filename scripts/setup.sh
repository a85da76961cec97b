#!/usr/bin/env bash
# Install every Debian package rdcp's build, tests and Soft-RoCE rig need.
# Idempotent: packages already present are skipped; apt-get update runs only
# when something is missing. Nothing comes from outside Debian's archive.
set -euo pipefail

PACKAGES=(
	# build
	bazel-bootstrap bazel-rules-java bazel-platforms gcc g++ libc6-dev
	libibverbs-dev librdmacm-dev libarchive-dev libssl-dev libcmocka-dev
	libsystemd-dev libmicrohttpd-dev # rdcpd: journal fields, sd_notify; /metrics
	# fuzzing / sanitizers
	clang libclang-rt-14-dev
	# Soft-RoCE rig: QEMU, initramfs parts, RDMA userspace
	qemu-system-x86 busybox-static cpio kmod iproute2 iputils-ping
	# rdcp-mpi (issue 32): Open MPI and MPICH to build and run it, Slurm and
	# munge for the srun test
	libopenmpi-dev openmpi-bin libmpich-dev mpich slurmctld slurmd slurm-client munge
	# benchmark charts (tests/bench/charts.sh)
	gnuplot-nox
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	# end-to-end tests and benchmarks
	openssh-server openssh-client rsync tmux netcat-openbsd socat python3 xz-utils
	openssl # the rig's certificate tests make a test CA
	python3-prometheus-client # the ops suite parses /metrics with it
	acl attr # getfacl/setfacl, getfattr/setfattr: the -X/-A checks
	# man page checks
	groff-base man-db
	# packaging: .deb and .rpm builds, lintian/rpmlint, the install test's
	# Debian root, the completion test
	debhelper dpkg-dev devscripts fakeroot lintian rpm rpmlint debootstrap systemd bash-completion
	ca-certificates
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
	echo "setup: all ${#PACKAGES[@]} packages present"
fi

# The rig fetches a Debian kernel package (not installed on the host) and
# builds its initramfs once; later runs reuse the cache.
bash "$(dirname "$0")/../tests/rig/rig.sh" prepare
