#!/usr/bin/env bash
# Issue 7 item 12: every numeric option of rdcp and rdcpd takes only a whole
# decimal number in range ("80abc", "-1", "0x10", " 5" are usage errors,
# exit 1, naming the option), and good values still pass the parser.
# usage: numbers_test.sh RDCP RDCPD
set -u
rdcp=$1 rdcpd=$2
fails=0
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/numbers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

bad() { # PROG OPTION VALUE
	local out rc
	out=$("$1" "$2" "$3" "${@:4}" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && grep -qF -- "$2 '$3'" <<<"$out"; then
		echo "ok: $(basename "$1") $2 '$3': exit 1"
	else
		echo "FAIL: $(basename "$1") $2 '$3': exit $rc: $out"
		fails=$((fails + 1))
	fi
}
for v in 80abc -1 0x10 " 5" 5.0 "" 99999999999999999999999 0 65536; do
	bad "$rdcp" --port "$v" /etc/hostname 127.0.0.1::m/
done
for v in 8x -1 0 257 " 8"; do
	bad "$rdcp" --depth "$v" /etc/hostname 127.0.0.1::m/
done
for v in 5s -5 0 1e3 86401; do
	bad "$rdcp" --timeout "$v" /etc/hostname 127.0.0.1::m/
done
for v in 4Mx 4MBB 1K 128M -4M 4.5M; do
	bad "$rdcp" --chunk-size "$v" /etc/hostname 127.0.0.1::m/
done
for v in 64Q 1K -64M 2048G; do
	bad "$rdcp" --pool-size "$v" /etc/hostname 127.0.0.1::m/
done
for v in 16x -1 0 4097; do
	bad "$rdcpd" --max-conns "$v" --check-config --no-auth --module "m=$tmp"
done
for v in 64Mx 1K -1M; do
	bad "$rdcpd" --pool-size "$v" --check-config --no-auth --module "m=$tmp"
done
for v in 30s 0 -1 86401; do
	bad "$rdcpd" --timeout "$v" --check-config --no-auth --module "m=$tmp"
done
# Good values get past the parser (the copy then fails for want of RDMA or
# a server, never with a usage error).
out=$("$rdcp" --port 18999 --depth 8 --timeout 1 --chunk-size 4MiB --pool-size 64M \
	/etc/hostname 127.0.0.1::m/ 2>&1)
rc=$?
if [ "$rc" -ne 1 ]; then
	echo "ok: good numbers accepted (then exit $rc)"
else
	echo "FAIL: good numbers refused: $out"
	fails=$((fails + 1))
fi
if "$rdcpd" --check-config --no-auth --module "m=$tmp" --max-conns 4 --pool-size 16M \
	--timeout 30 >/dev/null 2>&1; then
	echo "ok: rdcpd good numbers accepted"
else
	echo "FAIL: rdcpd --check-config with good numbers failed"
	fails=$((fails + 1))
fi
exit $((fails > 0))
