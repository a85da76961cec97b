# shellcheck shell=bash
# IPv6 (issue 15), two VMs booted with rig.sh --ipv6: rxe0 carries
# 10.77.2.x and fd00::x. b runs one rdcpd with the default listener (no
# --listen), one with --listen for both families, and sshd; a copies over
# IPv6 ([v6]::module, rdcp://[v6]:port/, user@[v6]:path, push and pull),
# over IPv4 against the same default daemon, both at once, and checks -4/-6
# and the order in which the addresses an ssh-started half reports are tried.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SH=$RIG_SHARED
SSHE="ssh -p 2222 -i /tmp/key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=20"
: "${RIG_PEER_IP6:?boot the rig with --ipv6}"

server() {
	mkdir -p /tmp/mod /tmp/mod2 /tmp/dst /run/sshd || return 1
	start_daemon d --module m=/tmp/mod || return 1
	check "default rdcpd logs that it listens on IPv6 and IPv4" \
		grep -q 'listening on port 18710: \[::\]:18710 (IPv6 and IPv4)' /tmp/d.log
	start_daemon l --port 18720 --listen "$RIG_SELF_IP" --listen "[$RIG_SELF_IP6]" \
		--module m=/tmp/mod2 || return 1
	check "rdcpd --listen v4 --listen [v6] logs both" \
		grep -qE "listening on port 18720: $RIG_SELF_IP:18720( over [A-Za-z ]+)?, \[$RIG_SELF_IP6\]:18720" /tmp/l.log
	# The same from a config file: one 'listen' key per family.
	printf 'port = 18730\nlisten = %s\nlisten = [%s]\n[c]\n    path = /tmp/mod2\n    auth = none\n' \
		"$RIG_SELF_IP" "$RIG_SELF_IP6" >/tmp/two.conf
	start_daemon c --config /tmp/two.conf || return 1
	check "rdcpd.conf with two 'listen' keys logs both" \
		grep -qE "listening on port 18730: $RIG_SELF_IP:18730( over [A-Za-z ]+)?, \[$RIG_SELF_IP6\]:18730" /tmp/c.log
	grep listening /tmp/d.log /tmp/l.log /tmp/c.log | sed 's/^/    /'

	ssh-keygen -q -t ed25519 -N '' -f /tmp/hostkey || return 1
	wait_for "$SH/client.pub" 120 || return 1
	cp "$SH/client.pub" /tmp/authorized_keys
	chmod 0600 /tmp/authorized_keys
	: >/tmp/sshd_config
	/usr/sbin/sshd -f /tmp/sshd_config -E /tmp/sshd.log \
		-o StrictModes=no -o PermitRootLogin=prohibit-password \
		-o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
		-o UsePAM=no -o PubkeyAuthentication=yes -p 2222 -h /tmp/hostkey \
		-o AuthorizedKeysFile=/tmp/authorized_keys -o PidFile=/tmp/sshd.pid
	touch "$SH/server-ready"

	wait_for "$SH/client-done" 600
	check "default rdcpd still alive" daemon_alive d
	check "  it served an IPv6 client" grep -q "\[$RIG_PEER_IP6\]:[0-9]*: connected" /tmp/d.log
	check "  and an IPv4 client (logged as IPv4, not v4-mapped)" \
		grep -q " $RIG_PEER_IP:[0-9]*: connected" /tmp/d.log
	check "rdcpd with two --listen still alive" daemon_alive l
	stop_daemon c
	sed 's/^/    d| /' /tmp/d.log | grep -v 'refused\|warning' | tail -12
	stop_daemon d
	stop_daemon l
	kill "$(cat /tmp/sshd.pid)" 2>/dev/null
}

client() {
	local V6="[$RIG_PEER_IP6]" V4=$RIG_PEER_IP p1 p2 r1 r2
	mkdir -p /tmp/src /tmp/pull /tmp/pull4 /tmp/back
	echo "small file" >/tmp/src/small.txt
	head -c $((24 << 20)) /dev/urandom >/tmp/src/big.bin
	make_tree /tmp/src/tree

	# --- the default daemon over IPv6 ---
	run /tmp/src/small.txt "$V6::m/"
	check "push to [v6]::m (default listener)" [ "$RC" -eq 0 ]
	run "$V6::m/small.txt" /tmp/pull/
	check "pull from [v6]::m" cmp /tmp/src/small.txt /tmp/pull/small.txt
	run /tmp/src/big.bin "rdcp://$V6:18710/m/big.bin"
	check "push 24 MiB to rdcp://[v6]:18710/m/" [ "$RC" -eq 0 ]
	run "rdcp://$V6:18710/m/big.bin" /tmp/pull/
	check "pull it back from rdcp://[v6]:18710/m/, byte-exact" cmp /tmp/src/big.bin /tmp/pull/big.bin
	run -r /tmp/src/tree "$V6::m/"
	check "push a tree over IPv6" [ "$RC" -eq 0 ]
	run -r "$V6::m/tree" /tmp/pull/
	check "pull it back: identical" same_tree /tmp/src/tree /tmp/pull/tree
	run -6 "$V6::m/small.txt" /tmp/pull/six.txt
	check "-6 with an IPv6 address" cmp /tmp/src/small.txt /tmp/pull/six.txt

	# --- the same daemon over IPv4 ---
	run "$V4::m/big.bin" /tmp/pull4/
	check "IPv4 client, same default daemon: pull" cmp /tmp/src/big.bin /tmp/pull4/big.bin
	run /tmp/src/small.txt "$V4::m/from4.txt"
	check "IPv4 client: push" [ "$RC" -eq 0 ]
	run "$V6::m/from4.txt" /tmp/pull/
	check "  what IPv4 pushed, IPv6 pulls" cmp /tmp/src/small.txt /tmp/pull/from4.txt

	# --- both families at once against it ---
	"$RDCP" /tmp/src/big.bin "$V6::m/both6.bin" >/tmp/o6 2>&1 &
	p1=$!
	"$RDCP" /tmp/src/big.bin "$V4::m/both4.bin" >/tmp/o4 2>&1 &
	p2=$!
	wait $p1
	r1=$?
	wait $p2
	r2=$?
	cat /tmp/o6 /tmp/o4 | sed 's/^/    | /'
	check "an IPv6 and an IPv4 push at once both succeed" test "$r1" -eq 0 -a "$r2" -eq 0
	run "$V4::m/both6.bin" /tmp/pull4/both6.bin
	check "  the IPv6 one arrived exact" cmp /tmp/src/big.bin /tmp/pull4/both6.bin

	# --- -4/-6 refuse the other family ---
	run -4 "$V6::m/small.txt" /tmp/pull/no
	check "-4 with an IPv6 address fails" [ "$RC" -ne 0 ]
	check "  saying why" out_has "as IPv4 (-4)"
	run -6 "$V4::m/small.txt" /tmp/pull/no
	check "-6 with an IPv4 address fails" [ "$RC" -ne 0 ]
	check "  saying why" out_has "as IPv6 (-6)"

	# --- a daemon with --listen for each family ---
	run /tmp/src/small.txt "rdcp://$V6:18720/m/l6.txt"
	check "--listen [v6]: push over IPv6" [ "$RC" -eq 0 ]
	run "rdcp://$V4:18720/m/l6.txt" /tmp/pull/l4.txt
	check "--listen v4: pull over IPv4" cmp /tmp/src/small.txt /tmp/pull/l4.txt
	run "rdcp://$V6:18730/c/l6.txt" /tmp/pull/c6.txt
	check "listen keys: pull over IPv6" cmp /tmp/src/small.txt /tmp/pull/c6.txt
	run "rdcp://$V4:18730/c/l6.txt" /tmp/pull/c4.txt
	check "listen keys: pull over IPv4" cmp /tmp/src/small.txt /tmp/pull/c4.txt

	# --- ssh over IPv6 ---
	rcp() { run -e "$SSHE" --remote-rdcp "$RDCP" "$@"; }
	rcp -r /tmp/src/tree "root@$V6:/tmp/dst/"
	check "push a tree to root@[v6]:/tmp/dst/" [ "$RC" -eq 0 ]
	rcp -r "$V6:/tmp/dst/tree" /tmp/back/
	check "pull it back from [v6]:/tmp/dst/tree: identical" same_tree /tmp/src/tree /tmp/back/tree
	rcp -v /tmp/src/small.txt "$V4:/tmp/dst/order.txt"
	check "ssh over IPv4: the reported addresses in RFC 6724 order, IPv4 before fd00::/8" \
		grep -m1 'reports RDMA address' /tmp/out | grep -q "address $V4 port"
	rcp -v -6 /tmp/src/small.txt "$V4:/tmp/dst/six.txt"
	check "-6: only the IPv6 address b reports is tried" [ "$RC" -eq 0 ]
	check "  (fd00::2)" out_has "reports RDMA address $RIG_PEER_IP6 port"
	check "  and no IPv4 one" not out_has "reports RDMA address $V4 port"
	rcp -v -4 /tmp/src/small.txt "$V6:/tmp/dst/four.txt"
	check "-4 (ssh over IPv6): only the IPv4 address" [ "$RC" -eq 0 ]
	check "  (10.77.2.2)" out_has "reports RDMA address $V4 port"
	check "  and no IPv6 one" not out_has "reports RDMA address $RIG_PEER_IP6 port"
	rcp --rdma-host "$RIG_PEER_IP6" "$V4:/tmp/dst/six.txt" /tmp/back/rh6.txt
	check "--rdma-host fd00::2" cmp /tmp/src/small.txt /tmp/back/rh6.txt
	touch "$SH/client-done"
}

case "$RIG_ROLE" in
a)
	ssh-keygen -q -t ed25519 -N '' -f /tmp/key || exit 1
	cp /tmp/key.pub "$SH/client.pub"
	wait_for "$SH/server-ready" 180 || exit 1
	client
	;;
b)
	server || {
		touch "$SH/server-ready"
		exit 1
	}
	;;
esac
finish
