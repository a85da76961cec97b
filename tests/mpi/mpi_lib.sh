# Shared by the rdcp-mpi tests (tests/mpi): sourced with T (work directory),
# RDCPD (the daemon) and PORT set. Counters, the mixed tree, its signature,
# two servers on 127.0.0.1 and 127.0.0.2 sharing one module directory.
# shellcheck shell=bash
fails=0
passes=0
if ! declare -F pass >/dev/null; then
	pass() {
		echo "PASS: $*"
		passes=$((passes + 1))
	}
	fail() {
		echo "FAIL: $*"
		fails=$((fails + 1))
	}
fi
t_start=$(date +%s)

# --- the mixed tree -------------------------------------------------------
if [ -n "${MPI_FULL:-}" ]; then big_mb=1024 nsmall=10000; else big_mb=96 nsmall=1000; fi
mpi_make_tree() {
	local d=$1 i
	mkdir -p "$d/small" "$d/deep"
	head -c $((big_mb << 20)) /dev/urandom >"$d/big"
	for i in $(seq 1 "$nsmall"); do
		[ $(((i - 1) % 100)) = 0 ] && mkdir -p "$d/small/s$(((i - 1) / 100))"
		head -c $((i * 7 % 9000 + 1)) /dev/urandom >"$d/small/s$(((i - 1) / 100))/f$i"
	done
	p=$d/deep
	for i in $(seq 1 40); do p=$p/d$i; done
	mkdir -p "$p"
	echo bottom >"$p/leaf"
	ln "$d/big" "$d/big.link"                      # a link group whose file moves in ranges
	ln "$d/small/s0/f1" "$d/small/s1/f1.link"      # and one of a small file
	ln "$d/small/s0/f2" "$d/deep/d1/f2.link"
	ln -s ../big "$d/small/to-big"
	printf 'x' >"$d/ro"
	chmod 0444 "$d/ro"
	chmod 0750 "$d/small/s1"
	chmod 0555 "$d/deep/d1/d2" # made writable while it fills, 0555 at the end
	find "$d" -mindepth 1 -exec touch -h -d "2021-03-04 05:06:07.123456789" {} +
	touch -d "2019-01-01 00:00:00.5" "$d/small"
}
# names, types, modes, sizes (files), ns mtimes, link targets; then link groups
mpi_sig() {
	(cd "$1" && find . -mindepth 1 -printf '%P|%y|%m|%T@|%l|' -a \( -type f -printf '%s\n' -o -printf '\n' \) | sort)
	(cd "$1" && find . -type f -links +1 -printf '%i %P\n' | sort -k2 |
		awk '{g[$1] = g[$1] " " $2} END {for (k in g) print g[k]}' | sort)
}
mpi_same_tree() {
	# files, not <(...): the rig's guests have no /dev/fd
	mpi_sig "$1" >"$T/sig.a"
	mpi_sig "$2" >"$T/sig.b"
	if diff -r --no-dereference "$1" "$2" >/dev/null && diff "$T/sig.a" "$T/sig.b" >"$T/sig.diff"; then
		return 0
	fi
	head -20 "$T/sig.diff"
	diff -r --no-dereference "$1" "$2" | head -5
	return 1
}
# --- two servers, one shared module ------------------------------------------
start_server() { # N: rdcpd on 127.0.0.N
	rm -f $T/d$1.ready
	"$RDCPD" --foreground --no-auth --transport tcp --listen "127.0.0.$1" --port "$PORT" \
		--module m=$T/mod --ready-file $T/d$1.ready 2>>$T/d$1.log &
	echo $! >$T/d$1.pid
	for _ in $(seq 100); do [ -s $T/d$1.ready ] && return 0; sleep 0.1; done
	cat $T/d$1.log
	return 1
}
# the bytes the servers received, from their log lines (every session's)
received() { cat $T/d1.log $T/d2.log | sed -n 's/.* \([0-9]*\) bytes moved in .*/\1/p' | awk '{s += $1} END {print s + 0}'; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print(eval(sys.argv[1]))" "$2"; }

