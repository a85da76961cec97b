# shellcheck shell=bash
# rdcpd SIGHUP over real RDMA (issue 9): a transfer in flight finishes under
# the old rules, new connections get the new ones; a bad new configuration
# is refused and logged, and the old one stays.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"

server() {
	mkdir -p /tmp/a /tmp/b2
	# a root rdcpd serves these modules (no uid) as nobody
	chown nobody /tmp/a /tmp/b2
	cat >/tmp/r.conf <<-EOF
		[a]
		    path = /tmp/a
		    auth = none
	EOF
	start_daemon_auth r --config /tmp/r.conf || return 1
	touch "$RIG_SHARED/server-ready"
	wait_for "$RIG_SHARED/push-started" 120 || return 1
	cat >/tmp/r.conf <<-EOF
		[a]
		    path = /tmp/a
		    read only = yes
		    auth = none
		[b2]
		    path = /tmp/b2
		    auth = none
	EOF
	kill -HUP "$(cat /tmp/r.pid)"
	sleep 1.5
	touch "$RIG_SHARED/reloaded"
	wait_for "$RIG_SHARED/step2" 300 || return 1
	printf '[b2]\n    path = /tmp/b2\n    auth = none\nbogus key = 1\n' >/tmp/r.conf
	kill -HUP "$(cat /tmp/r.pid)"
	sleep 1.5
	touch "$RIG_SHARED/reloaded2"
}

client() {
	local S=$1
	head -c $((300 * 1024 * 1024)) /dev/urandom >/tmp/big.bin
	echo small >/tmp/small.txt
	"$RDCP" -q /tmp/big.bin "$S::a/" >/tmp/big.out 2>&1 &
	local bp=$!
	sleep 1
	touch "$RIG_SHARED/push-started"
	wait_for "$RIG_SHARED/reloaded" 60
	check "the push was still running when the daemon reloaded" kill -0 $bp
	wait $bp
	RC=$?
	sed 's/^/    | /' /tmp/big.out
	check "a transfer in flight finishes under the old rules" [ "$RC" -eq 0 ]
	"$RDCP" -q "$S::a/big.bin" /tmp/back.bin
	check "  and arrived exact" cmp /tmp/big.bin /tmp/back.bin
	rm -f /tmp/back.bin
	run /tmp/small.txt "$S::a/"
	check "a new connection gets the new rules: [a] is read-only now (exit 5)" [ "$RC" -eq 5 ]
	run /tmp/small.txt "$S::b2/"
	check "  and the new module [b2] is there" [ "$RC" -eq 0 ]
	touch "$RIG_SHARED/step2"
	wait_for "$RIG_SHARED/reloaded2" 60
	run /tmp/small.txt "$S::b2/again.txt"
	check "a bad new configuration is refused: the old rules stay ([b2] still works)" [ "$RC" -eq 0 ]
	run /tmp/small.txt "$S::a/"
	check "  ([a] still read-only)" [ "$RC" -eq 5 ]
}

case "${RIG_ROLE}:${RIG_MODE:-2}" in
a:2)
	wait_for "$RIG_SHARED/server-ready" 60 || exit 1
	client "$RIG_PEER_IP"
	touch "$RIG_SHARED/client-done"
	;;
b:2)
	server || exit 1
	wait_for "$RIG_SHARED/client-done" 600
	check "daemon alive after two reloads" daemon_alive r
	check "the log says it reloaded" grep -q "SIGHUP: configuration reloaded: 2 modules" /tmp/r.log
	check "the log says the bad one was refused" grep -q "SIGHUP: the new configuration is refused" /tmp/r.log
	check "  and names the problem" grep -q "unknown key 'bogus key'" /tmp/r.log
	sed 's/^/    log| /' /tmp/r.log | tail -30
	;;
esac
finish
