# shellcheck shell=bash
# Many small files (issue 13), in one rig boot (run2: a = client, b = server).
# Three trees (SMALL_TREES, default "5000x4096 50000x1024 mixed"; NxSIZE is N
# files of SIZE bytes, 100 per directory; "mixed" is SMALL_MIXED_N files of
# 4 KiB with SMALL_MIXED_BIG files of SMALL_MIXED_MB MiB among them), each
# copied a -> b by `tar | nc`, `rdcp -r` to rdcpd, `rsync -a` to an rsync
# daemon and `scp -r` over ssh, one after another, each into b's tmpfs;
# wall time of each, ratios to tar | nc, and the target (rdcp within
# SMALL_TARGET = 1.5 x tar | nc). scp -r is skipped (and says so) for trees
# of more than SMALL_SCP_MAX files (5,000: it took 137 s for 5,000 in the
# rig). Run by `bash tests/bench/bench.sh --small`.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SMALL_TREES=${SMALL_TREES:-5000x4096 50000x1024 mixed}
SMALL_MIXED_N=${SMALL_MIXED_N:-5000}
SMALL_MIXED_BIG=${SMALL_MIXED_BIG:-3}
SMALL_MIXED_MB=${SMALL_MIXED_MB:-64}
SMALL_TARGET=${SMALL_TARGET:-1.5}
SMALL_SCP_MAX=${SMALL_SCP_MAX:-5000}
SH=$RIG_SHARED
RPORT=18740 # rdcpd
YPORT=18741 # rsync daemon
TPORT=18742 # nc for tar
SPORT=18743 # sshd for scp
SSHO=(-P "$SPORT" -i /tmp/bkey -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o LogLevel=ERROR -o BatchMode=yes)

start_sshd() {
	mkdir -p /run/sshd && chmod 0755 /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f /tmp/bhostkey || return 1
	wait_for "$SH/client.pub" 120 || return 1
	cp "$SH/client.pub" /tmp/bauth && chmod 0600 /tmp/bauth
	: >/tmp/bsshd_config
	/usr/sbin/sshd -f /tmp/bsshd_config -E /tmp/bsshd.log -o StrictModes=no \
		-o PermitRootLogin=prohibit-password -o PasswordAuthentication=no \
		-o KbdInteractiveAuthentication=no -o UsePAM=no -o PubkeyAuthentication=yes \
		-p $SPORT -h /tmp/bhostkey -o AuthorizedKeysFile=/tmp/bauth -o PidFile=/tmp/bsshd.pid \
		-o "Subsystem=sftp /usr/lib/openssh/sftp-server"
}

server() {
	local i=0 t
	mkdir -p /tmp/in/rdcp /tmp/in/rsync /tmp/in/tar /tmp/in/scp
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
	start_sshd || echo "b: sshd did not start (scp -r will fail)"
	for t in $SMALL_TREES; do
		(cd /tmp/in/tar && nc -d -l "$RIG_SELF_IP" $TPORT | tar xf - && touch "$SH/tar-done-$i") &
		sleep 1
		touch "$SH/ready-$i"
		# each tool's copy counted and removed before the next one runs (a
		# 50,000-file tree three times over would not fit a guest's tmpfs)
		for d in tar rdcp rsync scp; do
			wait_for "$SH/done-$i-$d" 3600 || break 2
			echo "b: $t: $d: $(find /tmp/in/$d -type f | wc -l) files, $(du -sk /tmp/in/$d | cut -f1) KiB"
			rm -rf "/tmp/in/$d/tree"
			touch "$SH/cleaned-$i-$d"
		done
		i=$((i + 1))
	done
	wait_for "$SH/client-done" 3600
	sed 's/^/b: sshd: /' /tmp/bsshd.log 2>/dev/null | tail -5
	stop_daemon d
	kill "$(cat /tmp/rsyncd.pid)" "$(cat /tmp/bsshd.pid 2>/dev/null)" 2>/dev/null
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

# make_files DIR N SIZE: N random files of SIZE bytes, 100 per directory
make_files() {
	local d=$1 n=0 k
	while [ "$n" -lt "$2" ]; do
		k=$(($2 - n < 100 ? $2 - n : 100))
		mkdir -p "$d/d$n"
		head -c $((k * $3)) /dev/urandom | split -b "$3" -a 3 - "$d/d$n/f"
		n=$((n + k))
	done
}

# make_tree SPEC: /tmp/src/tree as SPEC says (NxSIZE or mixed)
make_tree() {
	local i
	rm -rf /tmp/src/tree
	mkdir -p /tmp/src/tree
	case $1 in
	mixed)
		make_files /tmp/src/tree "$SMALL_MIXED_N" 4096
		for i in $(seq 1 "$SMALL_MIXED_BIG"); do
			head -c $((SMALL_MIXED_MB << 20)) /dev/urandom >"/tmp/src/tree/d$((i * 100))/big$i"
		done
		;;
	*x*) make_files /tmp/src/tree "${1%x*}" "${1#*x}" ;;
	*) echo "bad tree $1" && return 1 ;;
	esac
	sync
}

# tool_done I TOOL: b counts and removes TOOL's copy of tree I; wait for that
tool_done() {
	touch "$SH/done-$1-$2"
	wait_for "$SH/cleaned-$1-$2" 600
}

# the ratio a / b, 2 decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# until b has unpacked it all (its signal file: 0.1 s resolution)
tarnc() { tar cf - -C /tmp/src tree | nc -N "$1" $TPORT && wait_for "$SH/tar-done-$2" 1800; }

client() {
	local S=$1 i=0 t n t_tar t_rdcp t_rsync t_scp scp_txt
	ssh-keygen -q -t ed25519 -N '' -f /tmp/bkey && cp /tmp/bkey.pub "$SH/client.pub"
	for t in $SMALL_TREES; do
		make_tree "$t" || return 1
		n=$(find /tmp/src/tree -type f | wc -l)
		wait_for "$SH/ready-$i" 600 || return 1
		t_tar=$(secs tarnc "$S" "$i")
		check "$t: tar | nc: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
		tool_done "$i" tar
		t_rdcp=$(secs "$RDCP" -r /tmp/src/tree "$S::s/" --port $RPORT)
		sed 's/^/    | /' /tmp/el.out
		check "$t: rdcp -r: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
		tool_done "$i" rdcp
		t_rsync=$(secs rsync -a /tmp/src/tree "rsync://$S:$YPORT/r/")
		check "$t: rsync -a: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
		tool_done "$i" rsync
		if [ "$n" -le "$SMALL_SCP_MAX" ]; then
			t_scp=$(secs scp -q -r "${SSHO[@]}" /tmp/src/tree "root@$S:/tmp/in/scp/")
			check "$t: scp -r: exit $(cat /tmp/el.rc)" [ "$(cat /tmp/el.rc)" -eq 0 ]
			[ "$(cat /tmp/el.rc)" -eq 0 ] || sed 's/^/    | /' /tmp/el.out
			scp_txt="scp -r $t_scp s ($(ratio "$t_scp" "$t_tar") x)"
		else
			scp_txt="scp -r skipped ($n files > SMALL_SCP_MAX $SMALL_SCP_MAX)"
		fi
		printf 'small: %s (%d files): tar|nc %.2f s, rdcp -r %.2f s (%s x tar|nc), rsync -a %.2f s (%s x), %s\n' \
			"$t" "$n" "$t_tar" "$t_rdcp" "$(ratio "$t_rdcp" "$t_tar")" \
			"$t_rsync" "$(ratio "$t_rsync" "$t_tar")" "$scp_txt"
		if awk -v a="$t_rdcp" -v b="$t_tar" -v x="$SMALL_TARGET" 'BEGIN {exit !(a <= x * b)}'; then
			echo "small: $t: target rdcp <= $SMALL_TARGET x tar|nc: MET"
		else
			echo "small: $t: target rdcp <= $SMALL_TARGET x tar|nc: NOT met"
		fi
		tool_done "$i" scp # counted (0 files when skipped) and cleaned
		i=$((i + 1))
	done
	rm -rf /tmp/src/tree
	touch "$SH/client-done"
}

case "$RIG_ROLE" in
a)
	client "$(br "$RIG_PEER_IP")"
	;;
b)
	server || exit 1
	;;
esac
finish
