#!/bin/bash
# The bash completion of rdcp (packaging/completion/rdcp), driven the way
# bash drives it (COMP_WORDS split at ':' as COMP_WORDBREAKS says):
# options from --help, option arguments, local paths, hosts from the ssh
# config, and HOST:PATH completed on the "remote" side through a fake ssh
# that runs the listing command locally (and through -e's command);
# HOST::MODULE/PATH and rdcp://HOST:PORT/MODULE/PATH from a real rdcpd over
# TCP (modules, then a directory's entries through rdcp --list-only).
#
# usage: completion_test.sh RDCP COMPLETION_FILE RDCPD
set -u
shopt -s extglob
rdcp=$(readlink -f "$1") comp=$(readlink -f "$2") rdcpd=$(readlink -f "$3")
bc=/usr/share/bash-completion/bash_completion
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
[ -r "$bc" ] || { echo "FAIL: $bc missing (apt-get install bash-completion)" >&2; exit 1; }

T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/completion_test.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/home/.ssh" "$T/d/sub dir" "$T/d/sub"
: >"$T/d/a file"; : >"$T/d/b"; : >"$T/d/bee"
ln -s "$rdcp" "$T/bin/rdcp"
# Fake ssh (and a fake -e command): log the argv, run the remote command here.
for s in ssh myssh; do
	cat >"$T/bin/$s" <<FAKE
#!/bin/bash
printf '%s\n' "\$0 \$*" >>"$T/ssh.log"
while [ "\$#" -gt 0 ]; do
	case \$1 in -o|-p|-i) shift 2 ;; -*) shift ;; *) break ;; esac
done
shift # the host
exec sh -c "\$*"
FAKE
	chmod +x "$T/bin/$s"
done
printf 'Host rdcptest-node1\n  HostName 192.0.2.1\n' >"$T/home/.ssh/config"
export HOME="$T/home" PATH="$T/bin:$PATH"

# shellcheck disable=SC1090
. "$bc"
# shellcheck disable=SC1090
. "$comp"

# complete_line LINE: complete at the end of LINE, with COMP_WORDS split as
# bash splits them (blanks, and ':' runs as words of their own, since ':' is
# in COMP_WORDBREAKS). No quoting in LINE. Result in COMPREPLY.
complete_line() {
	local line=$1 tok rest
	local -a toks
	COMP_WORDS=()
	read -r -a toks <<<"$line"
	[[ $line == *' ' ]] && toks+=("")
	for tok in "${toks[@]}"; do
		[ -z "$tok" ] && COMP_WORDS+=("")
		while [ -n "$tok" ]; do
			if [[ $tok == :* ]]; then
				rest=${tok##+(:)}
				COMP_WORDS+=("${tok%"$rest"}")
			else
				rest=${tok#"${tok%%:*}"}
				COMP_WORDS+=("${tok%%:*}")
			fi
			tok=$rest
		done
	done
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_rdcp rdcp "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>"$T/stderr"
	[ -s "$T/stderr" ] && fail "'$line': completion printed on stderr: $(cat "$T/stderr")"
}

has() { # has WANT: COMPREPLY contains exactly WANT
	local w
	for w in "${COMPREPLY[@]}"; do [ "$w" = "$1" ] && return 0; done
	return 1
}

expect() { # expect WHAT WANT...
	local what=$1 w
	shift
	for w in "$@"; do
		has "$w" || fail "$what: '$w' not offered; got: $(printf '[%s] ' "${COMPREPLY[@]}")"
	done
}

# 1. Every long option of --help, and nothing else, for "--".
complete_line "rdcp --"
want=$("$rdcp" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
got=$(printf '%s\n' "${COMPREPLY[@]}" | sort -u)
[ "$want" = "$got" ] || fail "options: --help has [$(echo $want)], completion gave [$(echo $got)]"
complete_line "rdcp --vers"
expect "--vers" --version
[ "${#COMPREPLY[@]}" = 1 ] || fail "--vers: expected only --version, got ${COMPREPLY[*]}"

# 2. Option arguments.
complete_line "rdcp --checksum-choice sha"
expect "--checksum-choice sha" sha256 sha512
complete_line "rdcp --cc g"
expect "--cc g" gmac
complete_line "rdcp --checksum-choice=n"
expect "--checksum-choice=n" none
complete_line "rdcp --info pro"
expect "--info pro" progress progress2
complete_line "rdcp --info=name1,st"
expect "--info=name1,st" name1,stats name1,stats2
complete_line "rdcp --transport r"
expect "--transport r" rdma
complete_line "rdcp --chmod D"
expect "--chmod D" D755
complete_line "rdcp --log-file $T/d/b"
expect "--log-file FILE" "$T/d/b" "$T/d/bee"
# --checksum takes no value: the next word is a path
complete_line "rdcp --checksum $T/d/b"
expect "--checksum then a path" "$T/d/b" "$T/d/bee"
complete_line "rdcp --port "
[ "${#COMPREPLY[@]}" = 0 ] || fail "--port offers ${COMPREPLY[*]}"
complete_line "rdcp --transport "
expect "--transport" auto rdma tcp
[ "${#COMPREPLY[@]}" = 3 ] || fail "--transport offers ${COMPREPLY[*]}"
# --lanes takes a number: never a file name (the cwd holds files here)
cd "$T/d" || exit 1
complete_line "rdcp --lanes "
expect "--lanes" 1 2 8
has b && fail "--lanes offers file names: ${COMPREPLY[*]}"
cd - >/dev/null || exit 1

# 3. Local paths.
complete_line "rdcp $T/d/b"
expect "local" "$T/d/b" "$T/d/bee"
complete_line "rdcp -r $T/d/su"
expect "local dirs" "$T/d/sub" "$T/d/sub dir"

# 4. Host names from the ssh config, offered with their ':'.
complete_line "rdcp $T/d/b rdcptest-n"
expect "host" "rdcptest-node1:"

# 5. HOST:PATH over ssh in batch mode; names escaped, dirs end in '/'.
: >"$T/ssh.log"
complete_line "rdcp $T/d/b rdcptest-node1:$T/d/"
expect "remote" "$T/d/a\\ file " "$T/d/b " "$T/d/bee " "$T/d/sub/" "$T/d/sub\\ dir/"
grep -q "^$T/bin/ssh .*BatchMode=yes.* rdcptest-node1 " "$T/ssh.log" ||
	fail "remote: ssh not run in batch mode on rdcptest-node1: $(cat "$T/ssh.log")"
complete_line "rdcp $T/d/b alice@rdcptest-node1:$T/d/be"
expect "remote user@host" "$T/d/bee "
grep -q " alice@rdcptest-node1 " "$T/ssh.log" || fail "user@host not passed to ssh"

# 6. -e CMD is the command that reaches the host.
: >"$T/ssh.log"
complete_line "rdcp -e myssh $T/d/b rdcptest-node1:$T/d/a"
expect "-e" "$T/d/a\\ file "
grep -q "^$T/bin/myssh -o BatchMode=yes " "$T/ssh.log" || fail "-e: myssh not used: $(cat "$T/ssh.log")"

# 7. HOST::MODULE and rdcp:// are not ssh paths: no ssh is run.
: >"$T/ssh.log"
complete_line "rdcp $T/d/b rdcptest-node1::data/"
complete_line "rdcp $T/d/b rdcp://rdcptest-node1/data/"
[ -s "$T/ssh.log" ] && fail "ssh run for a module path: $(cat "$T/ssh.log")"

# 8. HOST::MODULE/PATH from a real daemon over TCP: modules, then entries.
P=$((20000 + RANDOM % 20000))
mkdir -p "$T/dump"
"$rdcpd" --foreground --no-auth --transport tcp --port $P --ready-file "$T/ready" \
	--module data="$T/d",ro --module dump="$T/dump" 2>"$T/rdcpd.log" &
dpid=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
[ -e "$T/ready" ] || fail "rdcpd did not start: $(cat "$T/rdcpd.log")"
complete_line "rdcp --port $P 127.0.0.1::d"
expect "HOST::d (modules)" "data/" "dump/"
complete_line "rdcp --port $P $T/d/b 127.0.0.1::da"
expect "HOST::da" "data/"
has "dump/" && fail "HOST::da offers dump/"
complete_line "rdcp --port $P 127.0.0.1::data/b"
expect "HOST::data/b (entries)" "data/b " "data/bee "
complete_line "rdcp --port $P 127.0.0.1::data/su"
expect "HOST::data/su (directories end in /)" "data/sub/" "data/sub\\ dir/"
complete_line "rdcp --port $P 127.0.0.1::data/"
expect "HOST::data/ (all)" "data/a\\ file " "data/b " "data/sub/"
has "data/./" && fail "HOST::data/ offers '.'"
complete_line "rdcp rdcp://127.0.0.1:$P/data/be"
expect "rdcp://HOST:PORT/data/be" "$P/data/bee "
complete_line "rdcp rdcp://127.0.0.1:$P/du"
expect "rdcp://HOST:PORT/du" "$P/dump/"
kill "$dpid" 2>/dev/null
wait "$dpid" 2>/dev/null
# nothing listening: nothing offered, nothing printed, quickly
t0=$SECONDS
complete_line "rdcp --port $P 127.0.0.1::data/b"
[ "${#COMPREPLY[@]}" = 0 ] || fail "a daemon that is gone: offered ${COMPREPLY[*]}"
[ $((SECONDS - t0)) -le 6 ] || fail "a daemon that is gone: $((SECONDS - t0)) s to give up"

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "completion: all checks passed"
