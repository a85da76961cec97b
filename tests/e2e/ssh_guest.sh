# shellcheck shell=bash
# HOST:PATH operands: rdcp starts its other half over a real ssh (sshd on b,
# key auth, port 2222), then moves the data over RDMA. Two VMs: a = client,
# b = sshd + the remote half. Covers: trees both ways, -p modes, owners and
# nanosecond mtimes (and what happens without -p), several sources, a
# missing source among good ones, missing remote paths, no rdcp on the
# remote side, ssh failing, user@host, awkward remote names (quoting), a
# wrong or missing secret refused by a hand-started remote half (which then
# gives up on its own), --rdma-host and -v. At the end b checks that sshd
# still runs, that no remote half is left over and no temporary files.
# shellcheck disable=SC2016 # check ... eval '...' expands later, on purpose
set -u
RDCP=$1
RDCPD=$2
LIB=$3
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SH=$RIG_SHARED
# The hostile test peer; built next to the binaries (//tests/hostile:rdcp_evil).
EVIL=${RDCP_EVIL:-$(readlink -f "$(dirname "$RDCP")/../../tests/hostile/rdcp_evil")}
SSHE="ssh -p 2222 -i /tmp/key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=20"
umask 022

server() {
	mkdir -p /run/sshd /tmp/dst /tmp/srv || return 1
	chmod 0755 /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f /tmp/hostkey || return 1
	# What the client pulls.
	make_tree /tmp/srv/tree
	echo a >/tmp/srv/ga
	echo b >/tmp/srv/gb
	(cd /tmp/srv/tree && manifest .) >"$SH/srv-tree.manifest" 2>&1

	wait_for "$SH/client.pub" 120 || return 1
	cp "$SH/client.pub" /tmp/authorized_keys
	chmod 0600 /tmp/authorized_keys
	: >/tmp/sshd_config # the host's /etc/ssh/sshd_config is not ours
	/usr/sbin/sshd -f /tmp/sshd_config -E /tmp/sshd.log \
		-o StrictModes=no -o PermitRootLogin=prohibit-password \
		-o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
		-o UsePAM=no -o PubkeyAuthentication=yes -p 2222 -h /tmp/hostkey \
		-o AuthorizedKeysFile=/tmp/authorized_keys -o PidFile=/tmp/sshd.pid
	local i=0
	while [ ! -s /tmp/sshd.pid ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	check "sshd started on port 2222" kill -0 "$(cat /tmp/sshd.pid 2>/dev/null)"
	touch "$SH/server-ready"

	wait_for "$SH/client-done" 900
	check "sshd still alive at the end" kill -0 "$(cat /tmp/sshd.pid)"
	# A remote half whose client is gone must not linger (give the one
	# from the last failure case a few seconds to go).
	i=0
	while pgrep -f -- '--remote-serve[r]' >/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	check "no remote half left running" [ -z "$(pgrep -af -- '--remote-serve[r]')" ]
	pgrep -af -- '--remote-serve[r]' | sed 's/^/    left: /'
	check "no temporary files left in /tmp/dst or /root" \
		[ -z "$(find /tmp/dst /root -name '.rdcp*' -print -quit)" ]
	find /tmp/dst /root -name '.rdcp*' | sed 's/^/    temp: /'
	kill "$(cat /tmp/sshd.pid)"
	sed 's/^/    sshd| /' /tmp/sshd.log | tail -20
}

# Run rdcp with the ssh command and the remote rdcp's path (rdcp is not
# on the PATH on b).
rcp() { run -e "$SSHE" --remote-rdcp "$RDCP" "$@"; }
# A shell command on b.
# One multiplexed connection for these (rdcp itself always gets a fresh ssh).
on_b() { $SSHE -o ControlMaster=auto -o ControlPath=/tmp/cm.%C -o ControlPersist=900 "$S" "$1"; }
# manifest (guest_lib.sh) of a tree on b.
b_manifest() { on_b "RIG_SHARED=/nonexistent; . '$LIB'; cd '$1' && manifest ."; }
same_on_b() { # same_on_b LOCAL_TREE REMOTE_TREE
	(cd "$1" && manifest .) >/tmp/m.local 2>&1
	b_manifest "$2" >/tmp/m.remote 2>&1
	cmp -s /tmp/m.local /tmp/m.remote && return 0
	diff /tmp/m.local /tmp/m.remote | head -20
	return 1
}

# path type mode owner mtime (nanoseconds) of every entry, "." included.
META='LC_ALL=C find . -printf "%p %y %m %U:%G %TY-%Tm-%Td %TT\n" | LC_ALL=C sort'
meta() { (cd "$1" && eval "$META"); }
b_meta() { on_b "cd '$1' && $META"; }
# meta as it must be after a copy without -p: modes & ~umask (links stay
# 777), owned by root, same mtimes.
masked() { # masked UMASK < meta
	local um=$1 p y m t
	while read -r p y m _ t; do
		[ "$y" != l ] && m=$(printf '%o' $((8#$m & 8#777 & ~8#$um)))
		echo "$p $y $m 0:0 $t"
	done
}
same_text() { # same_text FILE1 FILE2
	cmp -s "$1" "$2" && return 0
	diff "$1" "$2" | head -20
	return 1
}

# -p material: modes that umask would strip, a setuid bit, an owner, and
# distinct nanosecond mtimes on files, directories and a link.
make_perm_tree() {
	local d=$1
	mkdir -p "$d/sub/deep"
	echo 640 >"$d/f640"
	echo 600 >"$d/f600"
	echo 777 >"$d/f777"
	echo 4755 >"$d/f4755"
	echo 444 >"$d/sub/deep/f444"
	ln -s f640 "$d/link"
	chmod 0640 "$d/f640"
	chmod 0600 "$d/f600"
	chmod 0777 "$d/f777"
	chmod 4755 "$d/f4755"
	chmod 0444 "$d/sub/deep/f444"
	chown 65534:65534 "$d/f600"
	find "$d" -type f -exec touch -d '2001-02-03 04:05:06.123456789' {} +
	touch -h -d '2010-01-01 00:00:00.5' "$d/link"
	chmod 0700 "$d/sub/deep"
	chmod 0751 "$d/sub"
	chmod 0775 "$d"
	find "$d" -depth -type d -exec touch -d '1999-12-31 23:59:59.987654321' {} +
}

client() {
	S=$RIG_PEER_IP
	local i
	mkdir -p /tmp/src /tmp/back
	make_tree /tmp/src/tree
	make_perm_tree /tmp/src/perm
	echo a >/tmp/src/ga
	echo b >/tmp/src/gb
	echo c >/tmp/src/gc
	head -c $((3 << 20)) /dev/urandom >/tmp/src/r3m
	check "the hostile peer rdcp_evil is there ($EVIL)" [ -x "$EVIL" ]

	check "ssh to b works" on_b true
	check "rdcp is not on b's PATH (so --remote-rdcp matters)" \
		[ "$(on_b 'command -v rdcp || echo none')" = none ]
	rumask=$(on_b umask)
	echo "    umask on b: $rumask"

	# --- 1. trees both ways ---
	rcp -r /tmp/src/tree "$S:/tmp/dst/"
	check "push a tree with -r to b:/tmp/dst/" [ "$RC" -eq 0 ]
	check "  the tree on b is identical (names, links, empty dirs, modes)" \
		same_on_b /tmp/src/tree /tmp/dst/tree
	rcp -r "$S:/tmp/dst/tree" /tmp/back/
	check "pull it back with -r" [ "$RC" -eq 0 ]
	check "  identical to the original" same_tree /tmp/src/tree /tmp/back/tree
	check "  symlinks arrive as links" [ -L /tmp/back/tree/link-to-dir ]
	rcp --lanes 2 -v -r /tmp/src/tree/ "$S:/tmp/dst/lanes-tree"
	check "push a tree over ssh with --lanes 2" [ "$RC" -eq 0 ]
	check "  identical on b" same_on_b /tmp/src/tree /tmp/dst/lanes-tree
	over_rdma && check "  over 2 lanes" out_has "rdcp: 2 lanes"
	rcp --lanes 2 -v -r "$S:/tmp/dst/lanes-tree/" /tmp/back/lanes-tree
	check "pull it back over ssh with --lanes 2" same_tree /tmp/src/tree /tmp/back/lanes-tree
	over_rdma && check "  over 2 lanes" out_has "rdcp: 2 lanes"
	rcp -r "$S:/tmp/srv/tree/" /tmp/back/srvtree
	check "pull a tree made on b onto a new name" [ "$RC" -eq 0 ]
	(cd /tmp/back/srvtree && manifest .) >/tmp/m.pulled 2>&1
	check "  identical to b's tree" same_text "$SH/srv-tree.manifest" /tmp/m.pulled
	on_b 'echo a >/root/ga'
	rcp "$S:ga" /tmp/back/ga-home
	check "pull b:ga (relative to home)" [ "$(cat /tmp/back/ga-home 2>&1)" = a ]

	# --- 2. -p -o -g: exact modes, owners, nanosecond mtimes; -p alone; without -p ---
	meta /tmp/src/perm >/tmp/meta.src
	rcp -rp -o -g /tmp/src/perm/ "$S:/tmp/dst/permp"
	check "push -rp -o -g" [ "$RC" -eq 0 ]
	b_meta /tmp/dst/permp >/tmp/meta.b 2>&1
	check "  modes (0777, 4755, 0751 dirs, ...), owners and ns mtimes kept exactly" \
		same_text /tmp/meta.src /tmp/meta.b
	check "  stat %y on b shows the nanoseconds" \
		[ "$(on_b 'stat -c %y /tmp/dst/permp/f640')" = "$(stat -c %y /tmp/src/perm/f640)" ]
	check "  and the directory's" \
		[ "$(on_b 'stat -c %y /tmp/dst/permp/sub')" = "$(stat -c %y /tmp/src/perm/sub)" ]
	if over_rdma; then
		rcp -rpog --rdma-host "$S" "$S:/tmp/dst/permp" /tmp/back/
		check "pull -rpog back (and --rdma-host $S)" [ "$RC" -eq 0 ]
	else
		rcp -rpog "$S:/tmp/dst/permp" /tmp/back/
		check "pull -rpog back" [ "$RC" -eq 0 ]
	fi
	meta /tmp/back/permp >/tmp/meta.back
	check "  modes, owners and ns mtimes kept exactly" same_text /tmp/meta.src /tmp/meta.back
	# issue 7 item 4: -p alone keeps modes and times, never owners or setuid
	rcp -rp /tmp/src/perm/ "$S:/tmp/dst/permp2"
	check "push -rp (no -o/-g)" [ "$RC" -eq 0 ]
	check "  the 4755 file arrives 755, owned by root; the 65534 file by root" \
		[ "$(on_b 'stat -c "%a %u:%g" /tmp/dst/permp2/f4755 /tmp/dst/permp2/f600' | tr '\n' ' ')" = "755 0:0 600 0:0 " ]

	rcp -r /tmp/src/perm/ "$S:/tmp/dst/permnp"
	check "push -r without -p to a fresh name" [ "$RC" -eq 0 ]
	masked "$rumask" </tmp/meta.src >/tmp/meta.want
	b_meta /tmp/dst/permnp >/tmp/meta.b 2>&1
	check "  modes are the source's minus b's umask $rumask, owner root, mtimes kept" \
		same_text /tmp/meta.want /tmp/meta.b
	check "  (0777 became $(printf '%o' $((0777 & ~8#$rumask))))" \
		[ "$(on_b 'stat -c %a /tmp/dst/permnp/f777')" = "$(printf '%o' $((0777 & ~8#$rumask)))" ]

	# --- 2b. issue 13: -aHXAS over ssh; the remote half is the user, so ACLs count ---
	make_meta_tree /tmp/src/meta
	echo "    (user.* xattrs here: $META_XATTR, ACLs: $META_ACL)"
	rcp -aHXAS /tmp/src/meta "$S:/tmp/dst/"
	check "push -aHXAS over ssh" [ "$RC" -eq 0 ]
	check "  no note" not out_has "note:"
	meta_manifest /tmp/src/meta >/tmp/mm.src 2>&1
	on_b "RIG_SHARED=/nonexistent; . '$LIB'; meta_manifest /tmp/dst/meta" >/tmp/mm.b 2>&1
	check "  on b: xattrs, ACLs, link groups, fifo, ns mtimes as the source" \
		same_text /tmp/mm.src /tmp/mm.b
	check "  the 1 GiB file with 4 KiB of data is sparse on b" \
		[ "$(on_b 'du -k /tmp/dst/meta/sparse | cut -f1')" -le 64 ]
	rcp -aHXAS "$S:/tmp/dst/meta" /tmp/back/
	check "pull -aHXAS back over ssh" [ "$RC" -eq 0 ]
	check "  identical metadata" same_meta /tmp/src/meta /tmp/back/meta
	check "  one link group" same_inode /tmp/back/meta/sub/f1 /tmp/back/meta/top-link
	check "  sparse" [ "$(kib_used /tmp/back/meta/sparse)" -le 64 ]
	rm -rf /tmp/back/meta
	on_b 'rm -rf /tmp/dst/meta'

	# --- 2c. issue 27 item 16: the ssh-started half never sends rdcp's partials ---
	on_b 'mkdir -p /tmp/srv/pp/.part && echo ok >/tmp/srv/pp/ok &&
		echo p >/tmp/srv/pp/.rdcp-partial.big && echo r >/tmp/srv/pp/.rdcp-partial.big.rec &&
		echo q >/tmp/srv/pp/.part/.rdcp-partial.x'
	rcp -r "$S:/tmp/srv/pp" /tmp/back/
	check "pull -r over ssh of a tree holding rdcp partials and records" [ "$RC" -eq 0 ]
	check "  none of them arrived" [ -z "$(find /tmp/back/pp -name '.rdcp-partial*' -print -quit)" ]
	check "  the rest did" [ "$(cat /tmp/back/pp/ok 2>&1)" = ok ]
	rm -rf /tmp/back/pp
	on_b 'rm -rf /tmp/srv/pp'

	# --- 3. several sources; a missing one among good ones ---
	on_b 'mkdir -p /tmp/dst/multi2'
	rcp /tmp/src/ga /tmp/src/nonexistent /tmp/src/gb "$S:/tmp/dst/multi2/"
	check "a missing source among good ones: exit 23" [ "$RC" -eq 23 ]
	check "  names the missing source" out_has "/tmp/src/nonexistent: No such file"
	check "  the good ones arrived" [ "$(on_b 'cat /tmp/dst/multi2/ga /tmp/dst/multi2/gb')" = "$(printf 'a\nb')" ]
	mkdir -p /tmp/back/multi2
	rcp "$S:/tmp/srv/ga" "$S:/tmp/srv/nonexistent" "$S:/tmp/srv/gb" /tmp/back/multi2/
	check "pull with a missing source among good ones: exit 23" [ "$RC" -eq 23 ]
	check "  names the missing source" out_has "/tmp/srv/nonexistent"
	check "  the good ones arrived" \
		[ "$(cat /tmp/back/multi2/ga /tmp/back/multi2/gb 2>&1)" = "$(printf 'a\nb')" ]

	# --- 4. remote paths that do not exist ---
	rcp "$S:/tmp/nope" /tmp/back/
	check "pull b:/tmp/nope (nothing else): exit 3" [ "$RC" -eq 3 ]
	check "  names it" out_has "/tmp/nope"
	check "  and nothing arrives" [ ! -e /tmp/back/nope ]
	rcp /tmp/src/ga /tmp/src/gb "$S:/tmp/nodir/sub/"
	check "push into a missing remote directory: exit 3" [ "$RC" -eq 3 ]
	check "  said once (the remote side does not repeat it)" \
		[ "$(grep -c "destination directory /tmp/nodir" /tmp/out)" -eq 1 ]
	check "  names the missing directory" out_has "destination directory /tmp/nodir: No such file"
	check "  and creates nothing" [ "$(on_b 'test -e /tmp/nodir && echo yes || echo no')" = no ]

	# --- 5. no rdcp on the remote side ---
	run -e "$SSHE" --remote-rdcp /nonexistent/rdcp /tmp/src/ga "$S:/tmp/dst/"
	check "--remote-rdcp /nonexistent/rdcp: exit 5" [ "$RC" -eq 5 ]
	check "  says rdcp could not be started there" out_has "could not start '/nonexistent/rdcp'"
	check "  with the remote shell's message passed through" \
		out_has "/nonexistent/rdcp: No such file or directory"
	check "  said once (not relayed and repeated)" \
		[ "$(grep -c "/nonexistent/rdcp: No such file or directory" /tmp/out)" -eq 1 ]
	run -e "$SSHE" /tmp/src/ga "$S:/tmp/dst/"
	check "no --remote-rdcp and no rdcp on b's PATH: exit 5" [ "$RC" -eq 5 ]
	check "  asks whether rdcp is installed" out_has "is rdcp installed"
	check "  passes 'command not found' through" out_has "not found"
	run -e "$SSHE" --remote-rdcp /bin/true /tmp/src/ga "$S:/tmp/dst/"
	check "a remote 'rdcp' that exits without a ready line: exit 5" [ "$RC" -eq 5 ]
	check "  says it exited before it was ready" out_has "before it was ready"

	# --- 6. ssh failing ---
	run -e "${SSHE/-p 2222/-p 1}" --remote-rdcp "$RDCP" /tmp/src/ga "$S:/tmp/dst/"
	check "ssh to a closed port: exit 5" [ "$RC" -eq 5 ]
	check "  says ssh failed" out_has "ssh to $S failed"
	check "  with ssh's own words" out_has "Connection refused"
	run -e /nonexistent/ssh --remote-rdcp "$RDCP" /tmp/src/ga "$S:/tmp/dst/"
	check "-e naming a missing program: exit 5" [ "$RC" -eq 5 ]
	check "  names the program" out_has "/nonexistent/ssh"

	# --- 7. user@host ---
	rcp -q /tmp/src/gb "root@$S:/tmp/dst/x"
	check "push to root@$S:/tmp/dst/x" [ "$RC" -eq 0 ]
	check "  arrived" [ "$(on_b 'cat /tmp/dst/x')" = b ]
	check "  -q: nothing printed" [ ! -s /tmp/out ]
	rcp /tmp/src/gb "nobody@$S:/tmp/dst/y"
	check "nobody@$S (no key for that user): exit 5, the user really is passed" [ "$RC" -eq 5 ]
	check "  ssh's refusal passed through" out_has "Permission denied"

	# --- awkward remote names: the remote command is quoted ---
	"$RDCP" -e "$SSHE" --remote-rdcp "$RDCP" /tmp/src/ga "$S:/tmp/dst/quiet" 2>/tmp/err >/dev/null
	if ! over_rdma; then
		check "no RDMA on either host: nothing on stderr by default" [ ! -s /tmp/err ]
	fi
	rcp -v /tmp/src/ga "$S:/tmp/dst/it's a \$HOME \`touch pwned\`;touch pwned file"
	check "push to a remote name with a quote, \$, backquotes, ';' and spaces" [ "$RC" -eq 0 ]
	check "  the file has exactly that name, nothing was run" \
		[ "$(on_b 'cd /tmp/dst && ls it*; ls /root/pwned /tmp/dst/pwned 2>/dev/null')" = "it's a \$HOME \`touch pwned\`;touch pwned file" ]
	if over_rdma; then
		check "  -v: says which RDMA address b reported" out_has "reports RDMA address $S port"
	else
		check "  -v: says b has no RDMA address, so TCP" out_has "$S has no RDMA address; using TCP"
		check "  -v: says it reaches b over TCP where ssh did" out_has "reports TCP address $S port"
	fi
	check "  and the connection" out_has "connected to"
	rcp --timeout 5 --rdma-host 10.77.2.99 /tmp/src/ga "$S:/tmp/dst/rh2"
	check "--rdma-host to an address nobody has: fails" [ "$RC" -ne 0 ]
	check "  nothing arrives" [ "$(on_b 'ls /tmp/dst/rh2 2>/dev/null | wc -l')" = 0 ]
	# The remote half cannot know the client is gone (nothing reads its
	# stdin): today it waits out its own accept timeout (30 s; the client's
	# --timeout is not passed on). HALF_GONE_S=10 asserts the better bound.
	on_b 'pgrep -af -- --remote-serve[r]' | sed 's/^/    still running on b: /'
	i=0
	while [ "$(on_b 'pgrep -f -- --remote-serve[r] | wc -l')" != 0 ] && [ $i -lt 40 ]; do
		sleep 1
		i=$((i + 1))
	done
	check "  the remote half it started is gone within ${HALF_GONE_S:-40} s (it took $i s more)" \
		[ $i -lt "${HALF_GONE_S:-40}" ]

	# --- 8. a wrong secret is refused; the listener gives up on its own ---
	# stdin stays open, as with rdcp's own ssh (a remote half may take EOF
	# there for "the client is gone").
	sleep 30 2>/dev/null | $SSHE "$S" "$RDCP --timeout 8 --remote-server recv -- /tmp/dst/w" \
		>/tmp/half.out 2>/tmp/half.err &
	local hpid=$!
	i=0
	while ! grep -q '^RDCP-READY ' /tmp/half.out && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	local ready port secret addr
	ready=$(grep '^RDCP-READY ' /tmp/half.out)
	echo "    hand-started half: $ready"
	read -r _ _ _ port secret addr <<<"$ready"
	echo "    port $port, address $addr"
	if over_rdma; then
		check "hand-started remote half prints a ready line (port, 32-hex secret, address)" \
			eval '[ -n "$port" ] && [ ${#secret} -eq 32 ] && [ "${addr%%,*}" = "$S" ]'
	else
		check "hand-started remote half prints a ready line (port, 32-hex secret, '-': no RDMA)" \
			eval '[ -n "$port" ] && [ ${#secret} -eq 32 ] && [ "$addr" = - ]'
		addr=$S
	fi
	"$EVIL" bad-secret "${addr%%,*}" "$port" >/tmp/bad.out 2>&1
	local rc=$?
	sed 's/^/    | /' /tmp/bad.out
	check "a client proving a wrong secret is refused as unauthenticated" [ $rc -eq 0 ]
	"$EVIL" bad-secret "$S" "$port" none >/tmp/bad.out 2>&1
	rc=$?
	sed 's/^/    | /' /tmp/bad.out
	check "a client with no secret at all is refused too" [ $rc -eq 0 ]
	wait $hpid
	rc=$?
	sed 's/^/    half| /' /tmp/half.err
	check "the remote half gives up when no client proves the secret (exit $rc)" [ $rc -eq 30 ]
	check "  its stderr logs the refusals" \
		[ "$(grep -c 'refused a connection from .*wrong secret or unknown user' /tmp/half.err)" -eq 2 ]
	check "  and says why it gave up" grep -q "no client proved the secret within 8 s" /tmp/half.err
	check "  nothing written" [ "$(on_b 'ls /tmp/dst/w 2>/dev/null | wc -l')" = 0 ]
	rcp /tmp/src/r3m "$S:/tmp/dst/w"
	check "a real transfer right after works" [ "$RC" -eq 0 ]
	check "  exact" [ "$(on_b 'md5sum </tmp/dst/w')" = "$(md5sum </tmp/src/r3m)" ]
	# Control: the checker itself can tell an accepted client.
	sleep 30 2>/dev/null | $SSHE "$S" "$RDCP --timeout 15 --remote-server recv -- /tmp/dst/w2" \
		>/tmp/half.out 2>/tmp/half.err &
	hpid=$!
	i=0
	while ! grep -q '^RDCP-READY ' /tmp/half.out && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	read -r _ _ _ port secret _ <<<"$(grep '^RDCP-READY ' /tmp/half.out)"
	"$EVIL" bad-secret "$S" "$port" "$secret" >/tmp/bad.out 2>&1
	rc=$?
	sed 's/^/    | /' /tmp/bad.out
	check "control: the right secret is accepted (bad-secret exits 1)" [ $rc -eq 1 ]
	wait $hpid
	sed 's/^/    half| /' /tmp/half.err

	# --- --retries over ssh (issue 11): the receiving remote half killed
	# mid-push; rdcp starts it again over ssh and the copy resumes from its
	# partial. netem holds this side of the wire to 64 Mbit/s, so the 48 MiB
	# push lasts at least 6 s whatever the machine's speed (rig only: no
	# netem on the host's loopback). With --partial-dir: the remote half
	# keeps the partial in /tmp/dst/.part (OPEN carries the name).
	if over_rdma; then
		head -c $((48 << 20)) /dev/urandom >/tmp/src/retry.bin
		tc qdisc add dev eth0 root netem rate 64mbit
		"$RDCP" -e "$SSHE" --remote-rdcp "$RDCP" --json --retries 3 --chunk-size 64K \
			--depth 2 --partial-dir .part /tmp/src/retry.bin "$S:/tmp/dst/retry.bin" \
			>/tmp/out 2>&1 &
		local rpid=$! n=0 hit=no
		until on_b "test -e /tmp/dst/.part/.rdcp-partial.retry.bin.rec" || [ $n -gt 120 ]; do
			sleep 0.25
			n=$((n + 1))
		done
		kill -0 $rpid 2>/dev/null && hit=yes
		on_b "pkill -9 -f 'remote-serve[r] recv -- /tmp/dst/retry.bin'"
		wait $rpid
		RC=$?
		tc qdisc del dev eth0 root
		sed 's/^/    | /' /tmp/out
		check "--retries over ssh: the push was running when its remote half was killed" \
			[ $hit = yes ]
		check "  it completes by itself (exit $RC)" [ "$RC" -eq 0 ]
		check "  it said it was reconnecting" out_has "reconnecting (1/3)"
		check "  and resumed the partial (bytes_resumed > 0)" \
			eval '[ "$(grep -o "\"bytes_resumed\": *[0-9]*" /tmp/out | grep -o "[0-9]*$")" -gt 0 ]'
		check "  exact" [ "$(on_b 'md5sum </tmp/dst/retry.bin')" = "$(md5sum </tmp/src/retry.bin)" ]
		check "  the partial was kept in --partial-dir .part, removed once empty" \
			eval '[ $n -le 120 ] && ! on_b "test -e /tmp/dst/.part"'
		on_b "rm -f /tmp/dst/retry.bin"
	fi

	$SSHE -o ControlPath=/tmp/cm.%C -O exit "$S" 2>/dev/null
	echo "    client took $SECONDS s"
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
