#!/bin/bash
# Print rsync's verdict for each filter case as C table rows.
set -e
T=$(mktemp -d)
mk() {
	mkdir -p $T/src/foo/sub/deep $T/src/bar/baz/foo $T/src/dir_name $T/src/.git
	for f in a.o a.c b.txt foo/bar foo/bar.c foo/sub/bar foo/sub/deep/x.o bar/foo \
		bar/baz/foo/bar dir_name/f "sp ace" x1 x2 x10 .hidden .git/config \
		'br[1]' 'star*' 'q?' foo/sub/deep/y.c; do
		echo "$f" >"$T/src/$f"
	done
	# per-directory merge files
	printf -- '- *.c\n' >$T/src/foo/.rules
	printf -- '- /bar\n+ *.o\n' >$T/src/foo/sub/.rules
	printf -- '!\n- x.o\n' >$T/src/foo/sub/deep/.rules
}
mk
case_() { # SRCFORM ARGS...
	local form=$1
	shift
	rm -rf $T/dst
	mkdir $T/dst
	(cd $T && rsync -r --dry-run --out-format='%n' "$@" $form dst/ 2>/dev/null) |
		sed 's,/$,,' | grep -v '^\.$' | LC_ALL=C sort | paste -sd'|'
}
emit() { # FORM ARGS...
	local form=$1 args="" a res
	shift
	for a in "$@"; do
		args="$args\"$(printf '%s' "$a" | sed 's/\\/\\\\/g; s/"/\\"/g')\", "
	done
	res=$(case_ "$form" "$@")
	printf '    {%d, {%sNULL}, "%s"},\n' "$([ "$form" = src/ ] && echo 1 || echo 0)" "$args" "$res"
}
emit src/ -f '- *.o'
emit src/ -f '- /foo'
emit src/ -f '- foo/'
emit src/ -f '- foo/*/bar'
emit src/ -f '- /foo/**/bar'
emit src/ -f '+ */' -f '+ *.c' -f '- *'
emit src/ -f '+ foo/' -f '+ foo/bar.c' -f '- *'
emit src/ -f '- foo'
emit src/ -f '- bar'
emit src/ -f '- **/deep'
emit src/ -f '- foo/**'
emit src/ -f '- dir_name/***'
emit src/ -f '- x?'
emit src/ -f '- x[0-9]'
emit src/ -f '- [ab].*'
emit src/ -f '- [!a]*.c'
emit src/ -f '-! */'
emit src/ --exclude '*.txt' --include 'foo/sub/' --exclude 'foo/*'
emit src/ -f '- sub/bar'
emit src/ -f 'H *.o'
emit src/ -f 'P *.o'
emit src/ -f '- *' -f '+ a.c'
emit src/ --include '*/' --include '*.c' --exclude '*'
emit src/ -f '- /a.o' -f '- /foo/sub'
emit src/ -f '-s foo' -f '-r bar'
emit src/ -f 'exclude foo' -f 'include,s bar' -f 'hide,! */'
emit src/ -f '- foo' -f '!' -f '- bar'
emit src/ -f '- star\*' -f '- q\?'
emit src/ -f '- br\[1\]'
emit src/ -f '- .*'
emit src/ -f '- *[[:digit:]]'
emit src/ -f '- [[:alpha:]]?'
emit src/ -f '- *.[oc]'
emit src/ -f '- **.o'
emit src/ -f '- foo/sub/*/'
emit src/ -f '- /foo/sub/deep/**'
emit src/ -f '- deep/' -f '+ *.o' -f '- *'
emit src/ -f '- **/foo/bar'
emit src/ -f '- bar/baz/foo/'
emit src/ -f '- sp ace'
emit src/ -f '-_x1' -f '+_a.c' -f '-_*'
emit src/ -f ': .rules'
emit src/ -f ':n .rules'
emit src/ -f ':e .rules'
emit src/ -f ':- .rules'
emit src/ -f '- foo/sub/' -f ': .rules'
emit src/ -f ': .rules' -f '- *.o'
emit src -f '- /src/foo'
emit src -f '- /foo'
emit src -f '- src/'
emit src -f '- src/foo/sub'
emit src -f '+ src/' -f '+ src/a.c' -f '- *'
emit src -f ': .rules'
rm -rf $T
