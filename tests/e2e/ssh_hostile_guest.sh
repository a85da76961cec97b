# shellcheck shell=bash
# A hostile remote half for ssh-started pulls. rdcp -e runs a fake "ssh"
# that ignores the host and starts `rdcp_evil serve-evil-ssh` instead of
# `rdcp --remote-server send`: it prints a valid ready line, accepts the
# client proving the secret, answers OPEN with OPEN_OK and then sends FILE
# entries with hostile names ("../evil", "/tmp/evil", "a/../../evil", names
# never asked for, a terminal escape sequence, ...), one case per rdcp run.
# The real rdcp must refuse them: non-zero exit, nothing written outside
# DEST, names and the remote's stderr printed escaped. One VM is enough.
# shellcheck disable=SC2016 # check ... eval '...' expands later, on purpose
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
: "$RDCPD"
EVIL=${RDCP_EVIL:-$(readlink -f "$(dirname "$RDCP")/../../tests/hostile/rdcp_evil")}
IP=${RIG_SELF_IP:-10.77.1.1}

absent() { [ ! -e "$1" ] && [ ! -L "$1" ]; }
# Anything named *evil* in the writable trees outside DEST.
no_stray() {
	local stray
	stray=$(find /tmp /var/tmp /run /root \( -name '*evil*' -o -name unasked \) \
		! -name 'rdcp_evil*' ! -path '/tmp/dest/*' ! -path "${RIG_CWD:-/nonexistent}/*" \
		2>/dev/null)
	[ -z "$stray" ] && return 0
	echo "    outside DEST: $stray"
	return 1
}
no_raw_control() { ! LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" /tmp/out; }

# pull CASE DEST: one rdcp run against the evil remote half.
pull() {
	export EVIL_CASE=$1
	rm -f /tmp/fakessh.argv
	timeout 120 "$RDCP" -r --timeout 10 -e /tmp/fakessh "localhost:${3:-x}" "$2" >/tmp/out 2>&1
	RC=$?
	sed 's/^/    | /' /tmp/out | cat -v
}

[ -x "$EVIL" ] || {
	fail "no rdcp_evil at $EVIL"
	finish
	exit 1
}
# SSH_HOSTILE_SELFTEST_FAIL=1: the fake ssh itself leaves a /tmp/evil, as if
# rdcp had let one through; then every case must report FAIL.
cat >/tmp/fakessh <<EOF
#!/bin/sh
# fake ssh: HOST COMMAND; the host and the command are ignored.
printf '%s\n' "\$@" >/tmp/fakessh.argv
[ "${SSH_HOSTILE_SELFTEST_FAIL:-0}" = 1 ] && echo planted >/tmp/evil
exec "$EVIL" serve-evil-ssh "$IP" "\${EVIL_CASE:?}"
EOF
chmod 0755 /tmp/fakessh

# Harness check: the fake ssh really is what rdcp runs, with the remote
# command quoted as rd_ssh builds it.
rm -rf /tmp/dest && mkdir /tmp/dest
pull dotdot /tmp/dest/ "dir/it's"
check "the fake ssh was run with the host and the quoted remote command" \
	[ "$(cat /tmp/fakessh.argv)" = "$(printf '%s\n' localhost "rdcp --remote-server send -r -- 'dir/it'\\''s'")" ]

for c in dotdot abs-tmp inner-dotdot dot root-then-outside link-through plant plant-noroot \
	escape extra extra-rename; do
	rm -rf /tmp/dest /tmp/evil /tmp/evildir
	mkdir /tmp/dest
	dest=/tmp/dest/
	case $c in
	extra-rename) dest=/tmp/dest/new ;;
	plant) printf 'original\n' >/tmp/dest/.bashrc ;;
	esac
	pull "${c%-rename}" "$dest"
	echo "    DEST after $c:"
	(cd /tmp/dest && find . -mindepth 1 -exec ls -ld {} + 2>&1 | sed 's/^/        /' | cat -v)
	check "$c: the evil remote half served the session" out_has "ssh case ${c%-rename}: served"
	check "$c: rdcp did not hang" [ "$RC" -ne 124 ]
	case $c in
	extra)
		# Harmless names never asked for: refused, or inside DEST at most.
		check "$c: the file asked for arrived" [ "$(cat /tmp/dest/x 2>&1)" = ok ]
		;;
	extra-rename)
		check "$c: a second top-level entry fails the copy (exit $RC)" [ "$RC" -ne 0 ]
		check "$c: and is not placed" absent /tmp/dest/unasked
		;;
	plant)
		check "$c: asked for x, sent .bashrc: refused (exit $RC)" [ "$RC" -ne 0 ]
		check "$c: DEST/.bashrc left alone" [ "$(cat /tmp/dest/.bashrc)" = original ]
		;;
	plant-noroot)
		check "$c: refused (exit $RC)" [ "$RC" -ne 0 ]
		check "$c: no DEST/.ssh/authorized_keys" absent /tmp/dest/.ssh/authorized_keys
		;;
	escape)
		check "$c: refused (exit $RC)" [ "$RC" -ne 0 ]
		check "$c: nothing placed" [ -z "$(ls -A /tmp/dest)" ]
		check "$c: the name is printed escaped" out_has '\\x1b\[2J'
		;;
	*)
		check "$c: refused (exit $RC)" [ "$RC" -ne 0 ]
		;;
	esac
	check "$c: no raw control characters printed" no_raw_control
	check "$c: the remote's stderr passed through escaped" out_has 'evil stderr: \\x1b\[2J'
	check "$c: no /tmp/evil" absent /tmp/evil
	check "$c: no /tmp/dest/../evil" absent /tmp/dest/../evil
	check "$c: no /tmp/evildir" absent /tmp/evildir
	check "$c: no /evil" absent /evil
	check "$c: nothing outside DEST" no_stray
	check "$c: no temporary files left" [ -z "$(find /tmp/dest -name '.rdcp*' -print -quit)" ]
done

# Issue 7 item 3, under rsync's rules (issue 28): "." and "~/" ask for the
# remote directory's contents, so a server that answers with a file of its
# choosing (plant: a root entry .bashrc; plant-noroot: an entry under no
# asked root) is refused: non-zero exit, nothing written, DEST's dotfiles
# left alone; into a DEST that does not exist yet nothing takes its name.
for ask in . "~/"; do
	rm -rf /tmp/dest /tmp/evil /tmp/evildir
	mkdir -p /tmp/dest/.ssh
	printf 'original\n' >/tmp/dest/.bashrc
	printf 'original\n' >/tmp/dest/.ssh/authorized_keys
	for c in plant plant-noroot; do
		pull $c /tmp/dest/ "$ask"
		check "$c asking '$ask' into an existing DEST: refused (exit $RC)" [ "$RC" -ne 0 ]
		check "$c asking '$ask': DEST/.bashrc left alone" \
			[ "$(cat /tmp/dest/.bashrc)" = original ]
		check "$c asking '$ask': DEST/.ssh/authorized_keys left alone" \
			[ "$(cat /tmp/dest/.ssh/authorized_keys)" = original ]
		check "$c asking '$ask': says why" \
			out_has "its contents were asked for\|not under a requested\|not requested"
	done
	pull plant /tmp/dest/new "$ask"
	check "plant asking '$ask' into DEST/new: refused (exit $RC)" [ "$RC" -ne 0 ]
	check "plant asking '$ask': no file took DEST/new's name" [ ! -f /tmp/dest/new ]
	check "plant asking '$ask': DEST/.bashrc left alone" \
		[ "$(cat /tmp/dest/.bashrc)" = original ]
	check "plant asking '$ask': nothing outside DEST" no_stray
	sleep 1
done

# Control: a remote half that never proves itself (wrong secret in its
# ready line) gets no session, and the client says so.
cat >/tmp/fakessh-badready <<EOF
#!/bin/sh
echo "RDCP-READY 2 2 1 nothex $IP"
EOF
chmod 0755 /tmp/fakessh-badready
rm -rf /tmp/dest && mkdir /tmp/dest
timeout 60 "$RDCP" -e /tmp/fakessh-badready localhost:x /tmp/dest/ >/tmp/out 2>&1
RC=$?
sed 's/^/    | /' /tmp/out
check "a malformed ready line: exit 12 (rsync: error in the protocol data stream), says so" \
	eval '[ "$RC" -eq 12 ] && out_has "malformed ready line"'
check "no rdcp_evil left running" [ -z "$(pgrep -f 'rdcp_evil serve-evil-ss[h]')" ]
finish
