# shellcheck shell=bash
# Many small files (issue 13), in one rig boot (run2: a = client, b = server):
# a tree of SMALL_N files of SMALL_SIZE bytes (100 per directory; 5,000 x 4 KiB
# by default) copied a -> b by `tar | nc`, `rdcp -r` to rdcpd, and `rsync -a`
# to an rsync daemon, one after another, each into b's tmpfs; wall time of
# each, ratios to tar | nc, and the target (rdcp within SMALL_TARGET = 1.5 x
# tar | nc). Run by `bash tests/bench/bench.sh --small`.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SMALL_N=${SMALL_N:-5000}
SMALL_SIZE=${SMALL_SIZE:-4096}
SMALL_TARGET=${SMALL_TARGET:-1.5}
RPORT=18740 # rdcpd
YPORT=18741 # rsync daemon
TPORT=18742 # nc for tar

server() {
	mkdir -p /tmp/in/rdcp /tmp/in/rsync /tmp/in/tar
	start_daemon d --module s=/tmp/in/rdcp --port $RPORT || return 1
	cat >/tmp/rsyncd.conf <<-EOF
		use chroot = no
		[r]
		    path = /tmp/in/rsync
		    read only = no
		    uid = root
		    gid = root
	EOF
	rsync --daemon --no-detach --port $YPORT --config /tmp/rsyncd.conf &
	echo $! >/tmp/rsyncd.pid
	(cd /tmp/in/tar && nc -d -l "$RIG_SELF_IP" $TPORT | tar xf - && touch "$RIG_SHARED/tar-done") &
	echo $! >/tmp/tarnc.pid
	sleep 1
	touch "$RIG_SHARED/server-ready"
	wait_for "$RIG_SHARED/client-done" 1800
	for t in rdcp rsync tar; do
		echo "b: $t: $(find /tmp/in/$t -type f | wc -l) files, $(du -sk /tmp/in/$t | cut -f1) KiB"
	done
	stop_daemon d
	kill "$(cat /tmp/rsyncd.pid)" 2>/dev/null
}

# secs CMD...: wall seconds of CMD (its output in /tmp/el.out, status in /tmp/el.rc)
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/tmp/el.out 2>&1
	echo $? >/tmp/el.rc
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", b - a}'
}

# until b has unpacked it all (its signal file: 0.1 s resolution)
tarnc() { tar cf - -C /tmp/src tree | nc -N "$1" $TPORT && wait_for "$RIG_SHARED/tar-done" 600; }

client() {
	local S=$1 i n=0 k t_tar t_rdcp t_rsync
	mkdir -p /tmp/src/tree
	while [ "$n" -lt "$SMALL_N" ]; do
		k=$((SMALL_N - n < 100 ? SMALL_N - n : 100))
		mkdir -p "/tmp/src/tree/d$n"
		head -c $((k * SMALL_SIZE)) /dev/urandom | split -b "$SMALL_SIZE" -a 3 - "/tmp/src/tree/d$n/f"
		n=$((n + k))
	done
	sync
	t_tar=$(secs tarnc "$S")
	check "tar | nc: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
	t_rdcp=$(secs "$RDCP" -r /tmp/src/tree "$S::s/" --port $RPORT)
	sed 's/^/    | /' /tmp/el.out
	check "rdcp -r: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
	t_rsync=$(secs rsync -a /tmp/src/tree "rsync://$S:$YPORT/r/")
	check "rsync -a: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
	printf 'small: %d files x %d B: tar|nc %.2f s, rdcp -r %.2f s (%.2f x tar|nc), rsync -a %.2f s (%.2f x tar|nc)\n' \
		"$SMALL_N" "$SMALL_SIZE" "$t_tar" "$t_rdcp" "$(awk -v a="$t_rdcp" -v b="$t_tar" 'BEGIN {print a / b}')" \
		"$t_rsync" "$(awk -v a="$t_rsync" -v b="$t_tar" 'BEGIN {print a / b}')"
	if awk -v a="$t_rdcp" -v b="$t_tar" -v x="$SMALL_TARGET" 'BEGIN {exit !(a <= x * b)}'; then
		echo "small: target rdcp <= $SMALL_TARGET x tar|nc: MET"
	else
		echo "small: target rdcp <= $SMALL_TARGET x tar|nc: NOT met"
	fi
	touch "$RIG_SHARED/client-done"
}

case "$RIG_ROLE" in
a)
	wait_for "$RIG_SHARED/server-ready" 120 || exit 1
	client "$(br "$RIG_PEER_IP")"
	;;
b)
	server || exit 1
	;;
esac
finish
