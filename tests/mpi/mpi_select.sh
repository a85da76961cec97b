# rdcp-mpi's rsync selection options against rsync's own (the oracle): the
# same options, the same trees, `rsync -a` run here. Sourced by
# mpi_host_test.sh with T, mpi and RDCPD (the binaries), run (rdcp-mpi under
# mpirun), the two servers on 127.0.0.1 and 127.0.0.2 sharing $T/mod, and
# mpi_same_tree. About 25 s on two cores (2026-12-06).
# shellcheck shell=bash

sel_t0=$(date +%s)
# the tree: anchored and unanchored names, dir/ rules, merge files, sizes,
# and bigf, which moves in ranges (2 MB, --chunk-size 64K: it lies across ranks, cut into ranges)
sel_tree() {
	local d=$1
	mkdir -p "$d"/{a/sub,a/cache,logs,deep/logs,cache} "$d/b"
	head -c 2000000 /dev/urandom >"$d/bigf"
	echo keep >"$d/a/keep.c"
	echo obj >"$d/a/keep.o"
	echo obj >"$d/a/x.o"
	echo obj >"$d/x.o"
	echo log >"$d/logs/l1"
	echo log >"$d/deep/logs/l2"
	echo c >"$d/cache/c1"
	echo f >"$d/a/cache/c2"
	echo f >"$d/b/cache"
	echo tmp >"$d/t.tmp"
	echo tmp >"$d/a/t.tmp"
	echo s >"$d/a/secret1"
	echo s >"$d/a/sub/secret2"
	echo p >"$d/fromparent1"
	head -c 10 /dev/urandom >"$d/small"
	head -c 5000 /dev/urandom >"$d/mid"
	head -c 20000 /dev/urandom >"$d/large"
	echo same-size-A >"$d/samesize"
	echo '- *.tmp' >"$d/.rsync-filter"
	echo '- secret*' >"$d/a/.rsync-filter"
	find "$d" -exec touch -h -d "2022-02-02 02:02:02.5" {} +
}
mkdir -p $T/selp
sel_tree $T/selp/src
# a parent's merge file: -F reads it (rsync's ": /.rsync-filter"), for a push
echo '- fromparent*' >$T/selp/.rsync-filter
sel_tree $T/mod/selsrc

# what a destination holds before a case: newer, older, and same-size files
sel_prep() { # CASE DIR
	local d=$2
	rm -rf "$d"
	mkdir -p "$d/a"
	case $1 in
	update | ignore-existing | existing)
		echo newer-here >"$d/a/keep.c"
		head -c 2000000 /dev/zero | tr '\0' k >"$d/bigf"
		if [ "$1" = update ]; then
			touch -d "2023-01-01" "$d/a/keep.c" "$d/bigf"
		else
			touch -d "2020-01-01" "$d/a/keep.c" "$d/bigf"
		fi
		;;
	size-only | checksum | quick)
		# the same size and mtime (quick), or only the same size (size-only)
		echo same-size-B >"$d/samesize"
		head -c 2000000 /dev/zero | tr '\0' k >"$d/bigf"
		if [ "$1" = size-only ]; then
			touch -d "2020-01-01" "$d/samesize" "$d/bigf"
		else
			touch -d "2022-02-02 02:02:02.5" "$d/samesize" "$d/bigf"
		fi
		;;
	esac
	touch -d "2022-02-02 02:02:02.5" "$d/a" "$d"
}

# sel_case NAME OPTS...: push and pull with OPTS, each against rsync -a OPTS
sel_case() {
	local name=$1 out
	shift
	# push: src/ here to the servers
	sel_prep "$name" $T/mod/sel-$name
	sel_prep "$name" $T/or-$name
	(cd $T/selp && rsync -a "$@" src/ $T/or-$name/) || fail "rsync $name: exit $?"
	if out=$(cd $T/selp && run 3 -a --chunk-size 64K "$@" src/ "127.0.0.[1-2]::m/sel-$name" 2>&1); then
		mpi_same_tree $T/or-$name $T/mod/sel-$name && pass "push $name ($*): as rsync's" ||
			fail "push $name ($*): differs from rsync's"
	else
		fail "push $name ($*): exit non-zero: $out"
	fi
	# pull: the module's selsrc/ to here
	sel_prep "$name" $T/pl-$name
	sel_prep "$name" $T/orp-$name
	rsync -a "$@" $T/mod/selsrc/ $T/orp-$name/ || fail "rsync pull $name: exit $?"
	if out=$(run 3 -a --chunk-size 64K "$@" "127.0.0.[1-2]::m/selsrc/" $T/pl-$name 2>&1); then
		mpi_same_tree $T/orp-$name $T/pl-$name && pass "pull $name ($*): as rsync's" ||
			fail "pull $name ($*): differs from rsync's"
	else
		fail "pull $name ($*): exit non-zero: $out"
	fi
}
sel_case filters --include=/a/keep.o --exclude='*.o' --exclude=/logs --exclude='cache/' \
	--filter='- *.tmp'
printf 'small\n# a comment\n/mid\n' >$T/excl
sel_case merge -FF --exclude-from=$T/excl
sel_case update -u
sel_case ignore-existing --ignore-existing
sel_case existing --existing
sel_case sizes --min-size=1000 --max-size=6000
sel_case size-only --size-only
sel_case checksum -c
sel_case quick
# the control: without -c the same-size, same-mtime file stays (the case above changed it)
[ "$(cat $T/mod/sel-quick/samesize)" = same-size-B ] && [ "$(cat $T/mod/sel-checksum/samesize)" = same-size-A ] &&
	pass "-c replaced the same-size same-mtime file that the quick check kept" ||
	fail "-c: quick kept '$(cat $T/mod/sel-quick/samesize)', -c left '$(cat $T/mod/sel-checksum/samesize)'"

# a source named by itself: the rules see its name (anchored at its parent),
# and -F reads that parent's file too, as rsync does
named=(--exclude=/src/logs --exclude='a/' --include='deep/***' --exclude='/src/*/' -F)
(cd $T/selp && rsync -a "${named[@]}" src $T/or-named/) || fail "rsync named: exit $?"
if out=$(cd $T/selp && run 3 -a --chunk-size 64K "${named[@]}" src "127.0.0.[1-2]::m/named" 2>&1); then
	mpi_same_tree $T/or-named $T/mod/named && pass "push of a named source (${named[*]}): as rsync's" ||
		fail "push of a named source: differs from rsync's"
else
	fail "push of a named source: exit non-zero: $out"
fi

# -n: nothing changes on the receiver, push or pull
sel_prep update $T/mod/sel-dry && sig0=$(mpi_sig $T/mod/sel-dry)
out=$(cd $T/selp && run 3 -a -n src/ "127.0.0.[1-2]::m/sel-dry" 2>&1) || fail "push -n: exit $?: $out"
[ "$(mpi_sig $T/mod/sel-dry)" = "$sig0" ] && pass "push -n: the destination is as it was" ||
	fail "push -n changed the destination"
sel_prep update $T/pl-dry && sig0=$(mpi_sig $T/pl-dry)
out=$(run 3 -a -n "127.0.0.[1-2]::m/selsrc/" $T/pl-dry 2>&1) || fail "pull -n: exit $?: $out"
[ "$(mpi_sig $T/pl-dry)" = "$sig0" ] && pass "pull -n: the destination is as it was" ||
	fail "pull -n changed the destination"

# bad selection input: named, exit 1
out=$(run 2 -a --max-size=12Q src/ "127.0.0.1::m/x" 2>&1) && fail "--max-size=12Q accepted" ||
	{ echo "$out" | grep -q -- "--max-size=12Q is invalid" && pass "a bad --max-size: named" || fail "bad --max-size: $out"; }
out=$(run 2 -a --exclude-from=/nonexistent src/ "127.0.0.1::m/x" 2>&1) && fail "a missing --exclude-from accepted" ||
	{ echo "$out" | grep -q "filter file /nonexistent" && pass "a missing --exclude-from: named" || fail "exclude-from: $out"; }

out=$(run 2 -a --exclude-from=- src/ "127.0.0.1::m/x" 2>&1 </dev/null) && fail "--exclude-from=- accepted" ||
	{ echo "$out" | grep -q "name a file" && pass "--exclude-from=-: refused, said why" || fail "exclude-from -: $out"; }

# a password login: a module with auth users, the secret from RDCP_PASSWORD or --password-file
mkdir -p $T/authmod
chown nobody $T/authmod
printf 'alice:alice-secret\n' >$T/secrets
chmod 600 $T/secrets
printf 'alice-secret\n' >$T/alice.pw
chmod 600 $T/alice.pw
cat >$T/auth.conf <<EOC
secrets file = $T/secrets
host key = $T/host.key
[team]
    path = $T/authmod
    auth users = alice:rw
EOC
"$RDCPD" --foreground --transport tcp --listen 127.0.0.1 --port 19002 --config $T/auth.conf \
	--ready-file $T/auth.ready 2>>$T/auth.log &
echo $! >$T/auth.pid
for _ in $(seq 100); do [ -s $T/auth.ready ] && break; sleep 0.1; done
mkdir -p $T/lsrc/d && echo one >$T/lsrc/d/one && echo two >$T/lsrc/two
if out=$(RDCP_PASSWORD=alice-secret timeout 120 mpirun.openmpi -np 2 "$mpi" --transport tcp \
	--known-hosts $T/kh -r $T/lsrc/ "alice@127.0.0.1::team/in" --port 19002 2>&1) &&
	diff -r $T/lsrc $T/authmod/in >/dev/null; then
	pass "password login (RDCP_PASSWORD), 2 ranks: pushed"
else
	fail "password login push: $out $(tail -3 $T/auth.log)"
fi
if out=$(timeout 120 mpirun.openmpi -np 2 "$mpi" --transport tcp --known-hosts $T/kh \
	--password-file $T/alice.pw -r "alice@127.0.0.1::team/in/" $T/lpull --port 19002 2>&1) &&
	diff -r $T/lsrc $T/lpull >/dev/null; then
	pass "password login (--password-file), 2 ranks: pulled"
else
	fail "password login pull: $out"
fi
out=$(RDCP_PASSWORD=wrong timeout 120 mpirun.openmpi -np 2 "$mpi" --transport tcp --known-hosts $T/kh \
	-r $T/lsrc/ "alice@127.0.0.1::team/bad" --port 19002 2>&1) && fail "a wrong password: exit 0" ||
	{ [ ! -e $T/authmod/bad ] && pass "a wrong password: refused, nothing written" || fail "wrong password wrote"; }
kill "$(cat $T/auth.pid)" 2>/dev/null || true
echo "selection and login cases: $(($(date +%s) - sel_t0)) s"
