# shellcheck shell=bash
# rsync's semantics (issue 28), with real rsync as the oracle: where entries
# land (dir vs dir/, DEST made, no nesting on reruns), the quick check (a
# rerun of an unchanged tree moves and reads no file data, on either side:
# strictatime mounts show any read), the transfer rules against rsync's own
# result, local copies, and an interrupted copy that resumes in place.
# RIG_MODE 1: client and daemon here; 2: role b runs the daemon.
set -u
RDCP=$1
RDCPD=$2
# shellcheck source=tests/e2e/guest_lib.sh
. "$3"
SH=$RIG_SHARED
ST=/tmp/st # strictatime: every read of a file's data shows in its atime

# mount_st: a tmpfs where reading a file always updates its atime
mount_st() {
	mkdir -p $ST
	mountpoint -q $ST || mount -t tmpfs -o strictatime,size=768m tmpfs $ST
}

# manifest_ns DIR: every entry with type, size, mode, mtime to the ns, link target, data
manifest_ns() {
	(cd "$1" && find . -mindepth 1 -printf '%y %s %m %T@ %P -> %l\n' | LC_ALL=C sort)
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
}

# same_ns A B: the same entries, modes, data and ns mtimes (directories too)
same_ns() {
	manifest_ns "$1" >/tmp/mns.1 2>&1
	manifest_ns "$2" >/tmp/mns.2 2>&1
	cmp -s /tmp/mns.1 /tmp/mns.2 && return 0
	diff /tmp/mns.1 /tmp/mns.2 | head -20
	return 1
}

# atimes DIR: the files' access times (ns), for "nothing was read"
atimes() { (cd "$1" && find . -type f -printf '%A@ %P\n' | LC_ALL=C sort); }

json_num() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" /tmp/out; }

# rsync -ani SRC DST prints nothing: nothing left to do by rsync's judgement
rsync_agrees() {
	rsync -ani "$1" "$2" >/tmp/rsync.out 2>&1 || { cat /tmp/rsync.out; return 1; }
	[ ! -s /tmp/rsync.out ] && return 0
	head -20 /tmp/rsync.out
	return 1
}

# make_src DIR: nested dirs, ns mtimes on files and dirs, symlinks, an empty
# dir, odd names, modes, a hard link
make_src() {
	local d=$1
	mkdir -p "$d/a/b/c" "$d/empty" "$d/sp ace"
	echo hello >"$d/a/hello.txt"
	head -c 200000 /dev/urandom >"$d/a/b/c/big.bin"
	head -c 3000 /dev/urandom >"$d/a/b/small"
	echo x >"$d/sp ace/$(printf 'caf\351')"
	printf 'exec' >"$d/a/run.sh"
	chmod 0755 "$d/a/run.sh"
	chmod 0640 "$d/a/b/small"
	chmod 0750 "$d/a/b"
	ln -s a/hello.txt "$d/link"
	ln -s /nonexistent "$d/dangling"
	ln "$d/a/hello.txt" "$d/hard"
	for i in 1 2 3 4 5; do echo "$i" >"$d/a/f$i"; done
	# ns mtimes, deepest first, directories last
	find "$d" -depth -exec touch -h -d "2021-03-04 05:06:07.123456789" {} +
	touch -d "2020-01-02 03:04:05.987654321" "$d/a/hello.txt" "$d/a/b"
}

server() {
	mount_st
	mkdir -p $ST/mod $ST/modd
	# above what is pulled with -F: the module's parents' files count too
	printf -- '- b.txt\n' >$ST/mod/.rsync-filter
	start_daemon d --module m=$ST/mod --module md=$ST/modd,delete || return 1
	touch "$SH/server-ready"
}

# server_atimes TAG: snapshot the module's atimes (on the daemon's host)
server_atimes() {
	if [ "${RIG_MODE:-2}" = 1 ]; then
		atimes $ST/mod >"/tmp/srv-atimes.$1"
		return
	fi
	touch "$SH/snap.$1"
	wait_for "$SH/snapped.$1" 60
}

# server_same_atimes A B: no file of the module was read between the two snapshots
server_same_atimes() {
	if [ "${RIG_MODE:-2}" = 1 ]; then
		cmp -s "/tmp/srv-atimes.$1" "/tmp/srv-atimes.$2"
		return
	fi
	touch "$SH/cmp.$1.$2"
	wait_for "$SH/cmpd.$1.$2" 60 && [ "$(cat "$SH/cmpd.$1.$2")" = same ]
}

# rchar_of PID: the bytes PID read(2) so far (files and sockets), or -
rchar_of() { sed -n 's/^rchar: //p' "/proc/$1/io" 2>/dev/null | grep . || echo -; }

# daemon_rchar: rdcpd's rchar (on the daemon's host)
RCHAR_N=0
daemon_rchar() {
	if [ "${RIG_MODE:-2}" = 1 ]; then
		rchar_of "$(cat /tmp/d.pid)"
		return
	fi
	RCHAR_N=$((RCHAR_N + 1))
	touch "$SH/rchar.$RCHAR_N"
	wait_for "$SH/rcharv.$RCHAR_N" 60 >/dev/null && cat "$SH/rcharv.$RCHAR_N" || echo -
}

# role b in RIG_MODE 2: answer the snapshot and compare requests until done
serve_snapshots() {
	local f t
	while [ ! -e "$SH/client-done" ]; do
		for f in "$SH"/snap.*; do
			[ -e "$f" ] || continue
			t=${f##*/snap.}
			atimes $ST/mod >"/tmp/srv-atimes.$t"
			rm -f "$f"
			touch "$SH/snapped.$t"
		done
		for f in "$SH"/rchar.*; do
			[ -e "$f" ] || continue
			t=${f##*/rchar.}
			rchar_of "$(cat /tmp/d.pid)" >"$SH/rcharv.$t.tmp"
			mv "$SH/rcharv.$t.tmp" "$SH/rcharv.$t"
			rm -f "$f"
		done
		for f in "$SH"/cmp.*; do
			[ -e "$f" ] || continue
			t=${f##*/cmp.}
			if cmp -s "/tmp/srv-atimes.${t%%.*}" "/tmp/srv-atimes.${t#*.}"; then
				echo same >"$SH/cmpd.$t.tmp"
			else
				diff "/tmp/srv-atimes.${t%%.*}" "/tmp/srv-atimes.${t#*.}" | head -5
				echo differ >"$SH/cmpd.$t.tmp"
			fi
			mv "$SH/cmpd.$t.tmp" "$SH/cmpd.$t"
			rm -f "$f"
		done
		nap 0.1
	done
}

# --- 1. local copies (both halves in rdcp) against rsync ---
local_copies() {
	local src=$ST/src
	make_src $src
	run -a $src/ $ST/l1/
	check "local: rdcp -a src/ dst/ (dst missing): exit 0" [ "$RC" -eq 0 ]
	check "  dst is src: names, types, data, modes, ns mtimes of files and directories" \
		same_ns $src $ST/l1
	check "  the hard link stayed one (-a has no -H: two files, as rsync)" [ -f $ST/l1/hard ]
	check "  rsync -ani src/ dst/ reports nothing to do" rsync_agrees $src/ $ST/l1/
	atimes $src >/tmp/at.src.1
	atimes $ST/l1 >/tmp/at.dst.1
	run -a --json $src/ $ST/l1/
	check "  a rerun: exit 0, 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	atimes $src >/tmp/at.src.2
	atimes $ST/l1 >/tmp/at.dst.2
	check "  and no file data read on either side (strictatime atimes unchanged)" \
		eval 'cmp -s /tmp/at.src.1 /tmp/at.src.2 && cmp -s /tmp/at.dst.1 /tmp/at.dst.2'
	check "  and nothing changed (rsync still agrees)" rsync_agrees $src/ $ST/l1/

	# the other way round: what rsync made, rdcp leaves
	rsync -a $src/ $ST/l2/
	run -a --json $src/ $ST/l2/
	check "after rsync -a src/ dst/: rdcp -a src/ dst/ moves 0 bytes" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	check "  and leaves what rsync made" rsync_agrees $src/ $ST/l2/

	# a file changed in place, same size, new mtime: sent; rsync agrees after
	head -c 3000 /dev/urandom >$src/a/b/small
	run -a --json $src/ $ST/l1/
	check "a file rewritten (same size, new mtime): moved again" \
		[ "$(json_num bytes_moved)" -ge 3000 ]
	check "  rsync agrees after" rsync_agrees $src/ $ST/l1/

	# without a slash: the directory itself, inside; twice: no nesting
	run -a $src $ST/l3
	run -a $src $ST/l3
	check "rdcp -a src dst twice: dst/src, nothing nested" \
		eval '[ "$(ls $ST/l3)" = src ] && [ ! -e $ST/l3/src/src ]'
	check "  dst/src is src" same_ns $src $ST/l3/src
	run $src/a/hello.txt $ST/newdir/
	check "a file to a missing dir/: dir made, the file inside" \
		cmp $src/a/hello.txt $ST/newdir/hello.txt
	run $src/a/hello.txt $src/a/f1 $ST/newdir2
	check "two files to a missing DEST (no slash): both land inside it" \
		eval 'cmp $src/a/hello.txt $ST/newdir2/hello.txt && cmp $src/a/f1 $ST/newdir2/f1'
	run $src/a/hello.txt $ST/renamed
	check "one file to a missing DEST: DEST is the file" cmp $src/a/hello.txt $ST/renamed
	run -r $src/a $ST/renamed
	check "  a directory onto that file: refused" [ "$RC" -ne 0 ]
	check "    saying it is not a directory" out_has "not a directory"
	run -a $src/ $ST/deep/er/dst/
	check "a missing parent: refused (only the last component is made)" [ "$RC" -ne 0 ]
	run -a --mkpath $src/ $ST/deep/er/dst/
	check "  --mkpath makes it" same_ns $src $ST/deep/er/dst
	rm -rf $ST/l2 $ST/l3 $ST/newdir $ST/newdir2 $ST/renamed $ST/deep
}

# oracle OPTS...: rdcp and rsync from the same SRC onto copies of the same
# prior DEST with the same options; the trees must end the same. rdcp
# compares mtimes to the ns by default: rsync's --modify-window=-1.
oracle() {
	local what=$1 win=--modify-window=-1
	shift
	case " $* " in *" --modify-window "*) win= ;; esac
	rm -rf $ST/o.r $ST/o.s
	cp -a $ST/prior $ST/o.r
	cp -a $ST/prior $ST/o.s
	rsync $win "$@" $ST/osrc/ $ST/o.s/ >/tmp/rsync.out 2>&1
	local rrc=$?
	run "$@" $ST/osrc/ $ST/o.r/
	check "$what: rdcp and rsync both exit 0 ($RC, $rrc)" eval '[ "$RC" -eq 0 ] && [ "$rrc" -eq 0 ]'
	check "  leave the same tree" same_ns $ST/o.s $ST/o.r
}

# --- 2. the quick check's options and the transfer rules, against rsync ---
transfer_rules() {
	local o=$ST/osrc p=$ST/prior
	mkdir -p $o/d $p/d
	echo same >$o/same
	echo newer-here >$o/newer
	echo older-here >$o/older
	echo srcsize >$o/size
	echo big-big-big-big >$o/big
	echo s >$o/small
	echo new >$o/d/new
	cp -a $o/same $p/same
	echo newer-dst >$p/newer
	echo older-dst >$p/older
	echo other-size-here >$p/size
	echo samesz-other >$p/samesz && echo samesz-xyzab >$o/samesz
	touch -d "2020-01-01 00:00:00" $o/newer $p/older $o/size $p/size
	touch -d "2022-01-01 00:00:00" $p/newer $o/older
	touch -d "2021-01-01 00:00:00.5" $o/samesz
	touch -d "2021-01-01 00:00:00.25" $p/samesz
	# directories far from now: a directory a copy writes into is newer
	# than any window then, for both (else which second "now" falls in
	# would decide what rsync and rdcp leave)
	touch -d "2019-05-05 05:05:05.5" $o/d $p/d $o $p
	oracle "-a (the quick check)" -a
	oracle "-a --size-only" -a --size-only
	oracle "-a -u" -a -u
	oracle "-a --ignore-existing" -a --ignore-existing
	oracle "-a --existing" -a --existing
	oracle "-a --max-size 10" -a --max-size 10
	oracle "-a --min-size 10" -a --min-size 10
	oracle "-a --modify-window 1" -a --modify-window 1
	oracle "-a -c" -a -c
}

# pulled SPEC OPTS...: rdcp pulls SPEC with OPTS into a fresh tree, rsync
# copies the module's source locally with OPTS; both trees must be the same
pulled() {
	local what=$1 spec=$2 lsrc=$3
	shift 3
	rm -rf $ST/p.r $ST/p.s
	rsync --modify-window=-1 "$@" "$lsrc" $ST/p.s/ >/tmp/rsync.out 2>&1
	run "$@" "$spec" $ST/p.r/
	check "$what: exit 0 ($RC)" [ "$RC" -eq 0 ]
	check "  the tree rsync makes locally with the same rules" same_ns $ST/p.s $ST/p.r
}

# --- 3. filters: local, pushed, pulled (the daemon walks with our rules) ---
filters() {
	local S=$1 f=$ST/fsrc
	mkdir -p $f/foo/sub/deep $f/bar/baz $f/keep
	for n in a.o a.c b.txt foo/x.o foo/y.c foo/sub/z foo/sub/deep/w.o bar/baz/v keep/k.o; do
		echo "$n" >"$f/$n"
	done
	printf -- '- *.c\n' >$f/foo/.rsync-filter
	printf -- '- /z\n' >$f/foo/sub/.rsync-filter
	printf -- '- b.txt\n' >$ST/.rsync-filter # above the transfer: -F reads it
	rm -rf $ST/prior $ST/osrc
	mkdir -p $ST/prior
	cp -a $f $ST/osrc
	oracle "local --exclude '*.o'" -a --exclude '*.o'
	oracle "local -f '+ */' -f '+ *.c' -f '- *'" -a -f '+ */' -f '+ *.c' -f '- *'
	oracle "local -f '- /foo/sub/' --include 'keep/***' --exclude '*.o'" \
		-a -f '- /foo/sub/' --include 'keep/***' --exclude '*.o'
	oracle "local -F (.rsync-filter files, the parent's too)" -a -F
	oracle "local -FF" -a -FF
	printf '*.o\n+ keep/\n' >$ST/excl
	oracle "local --exclude-from" -a --exclude-from $ST/excl
	printf 'a.c\0b.txt\0' >$ST/incl0
	oracle "local --include-from -0 and --exclude '*'" -a -0 --include-from $ST/incl0 --exclude '*'
	oracle "local -f 'H *.o' (hide)" -a -f 'H *.o'
	oracle "local -f 'P *.o' (protect: the receiver's only)" -a -f 'P *.o'
	run -a $f/ "$S::m/fpush/"
	run -a -f '- foo/' --exclude '*.o' $f/ "$S::m/fpush2/"
	run -a "$S::m/fpush2/" $ST/fp2
	rm -rf $ST/fp2s && rsync -a -f '- foo/' --exclude '*.o' $f/ $ST/fp2s/
	check "push with filters: what lands is what rsync leaves" same_ns $ST/fp2s $ST/fp2
	pulled "pull --exclude '*.o' (the daemon's walk leaves them)" "$S::m/fpush/" $f/ \
		-a --exclude '*.o'
	pulled "pull -f '- /foo/' -f '+ *.c' -f '- *.*'" "$S::m/fpush/" $f/ \
		-a -f '- /foo/' -f '+ *.c' -f '- *.*'
	pulled "pull -F (the daemon reads the .rsync-filter files in its module)" \
		"$S::m/fpush/" $f/ -a -F
	run -a -f 'x nonsense' "$S::m/fpush/" $ST/bad
	check "a rule that is no rule: exit 1 (usage), naming it" \
		eval '[ "$RC" -eq 1 ] && out_has "x nonsense"'
	run -a -f '. /nonexistent/rules' "$S::m/fpush/" $ST/bad
	check "a merge file that is not there: exit 1, naming it" \
		eval '[ "$RC" -eq 1 ] && out_has "/nonexistent/rules"'
	rm -rf $ST/fp2 $ST/fp2s $ST/p.r $ST/p.s $ST/bad $ST/excl $ST/incl0 $ST/.rsync-filter
}

# same_run WHAT RSYNC_CMD RDCP_ARGS...: in $ST/rel, rsync's tree and rdcp's the same
same_run() {
	local what=$1 rs=$2
	shift 2
	rm -rf $ST/r.s $ST/r.r
	mkdir -p $ST/r.s $ST/r.r
	(cd $ST/rel && eval "rsync $rs $ST/r.s/") >/tmp/rsync.out 2>&1
	cd $ST/rel
	run "$@" $ST/r.r/
	cd - >/dev/null
	# SAME_RUN_UNSTABLE=DIR: a directory whose mtime rsync itself sets or
	# not from run to run (3.5.0 on tmpfs: x implied by "../x/y" in a
	# --files-from list, unset in about 9 runs of 10); rdcp must give it the
	# source's, and the rest must be rsync's
	if [ -n "${SAME_RUN_UNSTABLE:-}" ]; then
		check "  $SAME_RUN_UNSTABLE has the source's mtime" \
			[ "$(stat -c %Y $ST/rel/$SAME_RUN_UNSTABLE)" = "$(stat -c %Y $ST/r.r/$SAME_RUN_UNSTABLE)" ]
		touch -r $ST/r.r/$SAME_RUN_UNSTABLE $ST/r.s/$SAME_RUN_UNSTABLE
	fi
	check "$what: exit 0 ($RC)" [ "$RC" -eq 0 ]
	check "  the tree rsync makes" same_ns $ST/r.s $ST/r.r
}

# --- 4. -R (/./) and --files-from, local, pushed and pulled ---
relative() {
	local S=$1 r=$ST/rel
	mkdir -p $r/a/b/c $r/x
	echo f >$r/a/b/c/f
	echo g >$r/a/b/g
	echo y >$r/x/y
	touch -d "2020-01-01 01:02:03.5" $r/a $r/a/b $r/a/b/c
	printf 'a/b/c\na/b/g\n' >$ST/list
	printf '/a/b\n../x/y\n# a comment\n\n' >$ST/list2
	same_run "local -aR a/b/c (implied a, a/b with their times)" "-aR a/b/c" -aR a/b/c
	same_run "local -aR a/./b/c (the base left out)" "-aR a/./b/c" -aR a/./b/c
	same_run "local -R a/b/c/f a/b/g" "-aR a/b/c/f a/b/g" -aR a/b/c/f a/b/g
	SAME_RUN_UNSTABLE=x same_run "local --files-from (-a does not imply -r)" \
		"-a --files-from=$ST/list2 ." -a --files-from=$ST/list2 .
	same_run "local --files-from with -r" "-ar --files-from=$ST/list ." \
		-ar --files-from=$ST/list .
	(cd $r && run -aR a/./b/c "$S::m/rel1/")
	run -a "$S::m/rel1/" $ST/r1
	rm -rf $ST/r1s && (cd $r && rsync -aR a/./b/c $ST/r1s/)
	check "push -aR a/./b/c: what lands is rsync's" same_ns $ST/r1s $ST/r1
	same_run "pull -aR m/rel1/./b/c (the daemon splits at /./)" "-aR a/./b/c" \
		-aR "$S::m/rel1/./b/c"
	(cd $r && run -a --files-from=$ST/list . "$S::m/ff/")
	run -a "$S::m/ff/" $ST/ff
	rm -rf $ST/ffs && (cd $r && rsync -a --files-from=$ST/list . $ST/ffs/)
	check "push --files-from: what lands is rsync's" same_ns $ST/ffs $ST/ff
	run -a $r/ "$S::m/relall/"
	same_run "pull --files-from (the names go to the daemon)" \
		"-a --files-from=$ST/list2 ." -a --files-from=$ST/list2 "$S::m/relall/"
	same_run "pull -r --files-from" "-ar --files-from=$ST/list ." \
		-ar --files-from=$ST/list "$S::m/relall/"
	run -aR a/../x "$S::m/bad/"
	check "-R with '..' in a path: refused (exit 1)" [ "$RC" -eq 1 ]
	rm -rf $ST/r1 $ST/r1s $ST/ff $ST/ffs $ST/r.s $ST/r.r
}

# --- 5. through the daemon: push and pull, both ways stat-only on reruns ---
daemon() {
	local S=$1 src=$ST/src
	run -a $src/ "$S::m/t1/"
	check "push src/ to a missing m/t1/: exit 0" [ "$RC" -eq 0 ]
	run -a "$S::m/t1/" $ST/back1/
	check "  pulled back: the same tree, ns mtimes of files and directories" \
		same_ns $src $ST/back1
	check "  rsync -ani src/ back/ reports nothing" rsync_agrees $src/ $ST/back1/
	atimes $src >/tmp/at.c.1
	server_atimes p1
	run -a --json $src/ "$S::m/t1/"
	check "push again: 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	atimes $src >/tmp/at.c.2
	server_atimes p2
	check "  no file data read here" cmp -s /tmp/at.c.1 /tmp/at.c.2
	check "  nor on the daemon's side" server_same_atimes p1 p2
	atimes $ST/back1 >/tmp/at.b.1
	server_atimes q1
	run -a --json "$S::m/t1/" $ST/back1/
	check "pull again: 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	atimes $ST/back1 >/tmp/at.b.2
	server_atimes q2
	check "  no file data read here" cmp -s /tmp/at.b.1 /tmp/at.b.2
	check "  nor on the daemon's side" server_same_atimes q1 q2

	run -a $src "$S::m/nest"
	run -a $src "$S::m/nest"
	run -a "$S::m/nest/" $ST/nest
	check "push src (no slash) twice: m/nest/src, nothing nested" \
		eval '[ "$(ls $ST/nest)" = src ] && [ ! -e $ST/nest/src/src ]'
	run $src/a/hello.txt "$S::m/newdir/"
	run "$S::m/newdir/hello.txt" $ST/nd.txt
	check "a file to m/newdir/ (missing): newdir is a directory holding it" \
		cmp $src/a/hello.txt $ST/nd.txt
	run $src/a/f1 $src/a/f2 $src/a/hello.txt "$S::m/multi"
	run -r "$S::m/multi/" $ST/multi
	check "three sources to a missing m/multi: all three land in it" \
		eval '[ "$(ls $ST/multi | tr "\n" " ")" = "f1 f2 hello.txt " ]'
	run -a "$S::m" $ST/modroot
	check "host::m (the module alone) pulls its contents" [ -d $ST/modroot/t1/a ]
	rm -rf $ST/back1 $ST/nest $ST/nd.txt $ST/multi $ST/modroot
}

# --- 6. an interrupted push resumes in place, moving its data once ---
# manifest_ct DIR: every entry with its mode, size, mtime and ctime (ns): any change shows
manifest_ct() { (cd "$1" && find . -printf '%y %m %s %T@ %C@ %p %l\n' | LC_ALL=C sort); }

# --- 6. -n: nothing changes anywhere, and no file data is read or moved ---
# --delete (issue 29) to and from a daemon: a module that allows it
# (",delete": delete = yes) and one that does not (refused before anything moves)
deletes() {
	local S=$1 d=$ST/del
	rm -rf $d && mkdir -p $d/s/sub $d/back
	echo a >$d/s/a && echo b >$d/s/sub/b
	cp -a $d/s $d/x && echo x >$d/x/extra && echo y >$d/x/sub/extra2
	run -a $d/x/ "$S::md/del/"
	run -a $d/x/ "$S::m/del/"
	run -a --delete $d/s/ "$S::m/del/"
	check "--delete into a module without delete = yes: refused (exit 5)" [ "$RC" -eq 5 ]
	check "  naming the module" out_has "module 'm' does not allow deleting"
	run -a "$S::m/del/" $d/back/m/
	check "  nothing was deleted there" same_tree $d/x $d/back/m
	run -a --delete -i $d/s/ "$S::md/del/"
	check "--delete into a module with delete = yes: exit 0" [ "$RC" -eq 0 ]
	check "  lists what it deleted" out_has "^\*deleting   sub/extra2$"
	run -a "$S::md/del/" $d/back/md/
	check "  the module holds the source's tree, no more" same_tree $d/s $d/back/md
	cp -a $d/x $d/x3
	run -a --delete "$S::md/del/" $d/x3/
	check "a pull with --delete: exit 0" [ "$RC" -eq 0 ]
	check "  the local extras went: the module's tree, no more" same_tree $d/s $d/x3
}

dryrun() {
	local S=$1 d=$ST/dry
	rm -rf $d && mkdir -p $d
	cp -a $ST/src $d/s
	run -a $d/s/ "$S::m/dry/"
	run -a "$S::m/dry/" $d/b1
	check "-n: a tree on the daemon and a copy here" same_ns $d/s $d/b1
	# the source changes: data, a size, a time, a mode, a new directory
	echo more >>"$d/s/a/hello.txt"
	touch -d @1 "$d/s/a/b/small"
	chmod 0700 "$d/s/a/run.sh"
	mkdir -p "$d/s/newdir/deeper" && echo n >"$d/s/newdir/deeper/n"
	cp -a $d/b1 $d/l
	manifest_ct $d/l >/tmp/dry.l1
	atimes $d/s >/tmp/dry.a1
	run -an --json $d/s/ $d/l/
	check "local -n over an older copy: exit 0, 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	manifest_ct $d/l >/tmp/dry.l2
	check "  the destination unchanged: every entry, mode, mtime and ctime" \
		cmp -s /tmp/dry.l1 /tmp/dry.l2
	atimes $d/s >/tmp/dry.a2
	check "  no file data read" cmp -s /tmp/dry.a1 /tmp/dry.a2
	run -an --mkpath $d/s/ $d/missing/sub/
	check "local -n --mkpath into a missing path: exit 0, nothing made" \
		eval '[ "$RC" -eq 0 ] && [ ! -e $d/missing ]'
	server_atimes dry1
	run -an --json $d/s/ "$S::m/dry/"
	check "push -n: exit 0, 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	server_atimes dry2
	check "  the daemon read no file data" server_same_atimes dry1 dry2
	run -a "$S::m/dry/" $d/b2
	check "  the daemon's tree unchanged" same_ns $d/b1 $d/b2
	run -an --mkpath $d/s/ "$S::m/drynew/sub/"
	check "push -n --mkpath to a missing path: exit 0" [ "$RC" -eq 0 ]
	run -a "$S::m/drynew/" $d/b3
	check "  nothing made on the daemon (pulling it fails)" [ "$RC" -ne 0 ]
	cp -a $d/s $d/s2
	manifest_ct $d/s2 >/tmp/dry.s1
	server_atimes dry3
	run -an --json "$S::m/dry/" $d/s2/
	check "pull -n onto a newer tree: exit 0, 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	manifest_ct $d/s2 >/tmp/dry.s2
	check "  the destination unchanged" cmp -s /tmp/dry.s1 /tmp/dry.s2
	server_atimes dry4
	check "  the daemon read no file data" server_same_atimes dry3 dry4
	run -an "$S::m/dry/" $d/new/
	check "pull -n into a missing directory: exit 0, nothing made" \
		eval '[ "$RC" -eq 0 ] && [ ! -e $d/new ]'
	rm -rf $d
}

resume() {
	local S=$1 a b
	mkdir -p $ST/rsrc/sub
	for i in 1 2 3 4 5 6; do head -c 4000000 /dev/urandom >$ST/rsrc/sub/f$i; done
	"$RDCP" -a --json --bwlimit 4M $ST/rsrc/ "$S::m/res/" >/tmp/out 2>&1 &
	a=$!
	nap 1.5
	kill -INT $a
	wait $a
	RC=$?
	a=$(json_num bytes_moved)
	check "a push interrupted (SIGINT): exit 20" [ "$RC" -eq 20 ]
	run -a --json --bwlimit 4M $ST/rsrc/ "$S::m/res/"
	b=$(json_num bytes_moved)
	check "  the same command again: exit 0" [ "$RC" -eq 0 ]
	check "  both runs moved $a + $b bytes: at most 1.1 x the 24000000 of data" \
		[ $((a + b)) -le 26400000 ]
	run -a "$S::m/res/" $ST/rback
	check "  pulled back: the tree, and no partial left anywhere in it" same_ns $ST/rsrc $ST/rback
	rm -rf $ST/rsrc $ST/rback
}

# --- 5b. the rerun benchmark's tiny version (tests/bench/rerun_rig.sh runs
# 100,000 files, 10 GiB): 2,000 files of real data in 20 directories, pushed
# once; the reruns, push and pull, move nothing and read no file's data on
# either side (strictatime atimes), and rdcpd's read(2)s stay far below it.
rerun_many() {
	local S=$1 t=$ST/many d r0 r1 t0=$EPOCHREALTIME
	for d in $(seq -w 0 19); do
		mkdir -p $t/d$d
		head -c 204800 /dev/urandom | (cd $t/d$d && split -b 2048 -a 3 - f)
	done
	run -a $t/ "$S::m/many/"
	check "rerun, 2,000 files: the first push, exit 0, 2,000 files" \
		eval '[ "$RC" -eq 0 ] && [ "$(find $t -type f | wc -l)" = 2000 ]'
	atimes $t >/tmp/at.m.1
	server_atimes m1
	r0=$(daemon_rchar)
	run -a --json $t/ "$S::m/many/"
	r1=$(daemon_rchar)
	check "  push rerun: 0 bytes moved, nothing transferred, 2,000 identical" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ] &&
			[ "$(json_num transferred)" = 0 ] && [ "$(json_num identical)" = 2000 ]'
	atimes $t >/tmp/at.m.2
	server_atimes m2
	check "  no file data read here" cmp -s /tmp/at.m.1 /tmp/at.m.2
	check "  nor on the daemon's side" server_same_atimes m1 m2
	# the tree is 4 MiB: a daemon reading it would show; its own reads are control
	check "  rdcpd read(2) $((r1 - r0)) bytes (< 1 MiB; the tree is 4 MiB)" \
		eval '[ "$r0" != - ] && [ "$r1" != - ] && [ $((r1 - r0)) -lt 1048576 ]'
	run -a --json "$S::m/many/" $t/
	check "  pull rerun: 0 bytes moved, nothing transferred" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ] &&
			[ "$(json_num transferred)" = 0 ]'
	atimes $t >/tmp/at.m.3
	server_atimes m3
	check "  no file data read here" cmp -s /tmp/at.m.2 /tmp/at.m.3
	check "  nor on the daemon's side" server_same_atimes m2 m3
	rm -rf $t
	echo "rerun, 2,000 files: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s"
}

# --- 7. --link-dest snapshots (issue 29) over the transport: 1,000 files ---
# inos DIR: "path inode" of its regular files, sorted by path
inos() { (cd "$1" && find . -type f -printf '%P %i\n' | LC_ALL=C sort); }
# all_linked A B: every file of B is a hard link to A's at its path, and has 2 links
all_linked() { # (files, not <(...): the rig's guests have no /dev/fd)
	inos "$1" >/tmp/inos.1
	inos "$2" >/tmp/inos.2
	[ "$(LC_ALL=C join /tmp/inos.1 /tmp/inos.2 | awk '$2 == $3' | wc -l)" = "$3" ] &&
		[ "$(cd "$2" && find . -type f -links 2 | wc -l)" = "$3" ]
}
snapshots() {
	local S=$1 src=$ST/snapsrc i n=1000
	for ((i = 0; i < n; i++)); do
		[ $((i % 100)) -eq 0 ] && mkdir -p $src/d$((i / 100))
		echo "file $i" >$src/d$((i / 100))/f$i
	done
	find $src -depth -exec touch -h -d "2022-02-03 04:05:06.123456789" {} +
	run -a $src/ "$S::m/snap1/"
	run -a --json --link-dest=../snap1 $src/ "$S::m/snap2/"
	check "a second snapshot of $n files pushed with --link-dest: 0 bytes moved" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ]'
	run -aH "$S::m/" $ST/snapback/
	check "  pulled back with -H: every file of it a hard link to the first's" \
		all_linked $ST/snapback/snap1 $ST/snapback/snap2 $n
	run -a "$S::m/snap1/" $ST/ps1/
	run -a --json --link-dest=../ps1 "$S::m/snap1/" $ST/ps2/
	check "a second snapshot pulled with --link-dest: 0 bytes moved, all hard links" \
		eval '[ "$RC" -eq 0 ] && [ "$(json_num bytes_moved)" = 0 ] && all_linked $ST/ps1 $ST/ps2 $n'
	rsync -a $src/ $ST/rs1/ && rsync -a --link-dest=../rs1 $src/ $ST/rs2/
	check "  rsync --link-dest on the same tree: the same tree (ns mtimes), the same links" \
		eval 'same_ns $ST/rs2 $ST/ps2 && all_linked $ST/rs1 $ST/rs2 $n'
	rm -rf $src $ST/snapback $ST/ps1 $ST/ps2 $ST/rs1 $ST/rs2
}

client() {
	local S=$1
	mount_st
	local_copies
	transfer_rules
	filters "$S"
	relative "$S"
	daemon "$S"
	rerun_many "$S"
	deletes "$S"
	dryrun "$S"
	resume "$S"
	snapshots "$S"
}

case "${RIG_ROLE}:${RIG_MODE:-2}" in
a:1)
	server || exit 1
	client "$(br "$RIG_SELF_IP")"
	check "daemon still alive" daemon_alive d
	;;
a:2)
	wait_for "$SH/server-ready" 60 || exit 1
	client "$(br "$RIG_PEER_IP")"
	touch "$SH/client-done"
	;;
b:2)
	server || exit 1
	serve_snapshots
	check "daemon still alive after every client" daemon_alive d
	;;
esac
finish
