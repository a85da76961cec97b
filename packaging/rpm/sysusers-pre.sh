#!/bin/sh
# Turn a sysusers.d(5) file's "u" and "g" lines into %pre shell commands
# (groupadd/useradd when missing): the job of %sysusers_create_compat from
# systemd-rpm-macros, for building on hosts without it (see macros.compat).
#   sysusers-pre.sh FILE
set -eu
grep -v '^[[:space:]]*\(#\|$\)' "$1" | while read -r type name id rest; do
	gecos=$(printf '%s\n' "$rest" | sed -n 's/^"\([^"]*\)".*/\1/p')
	home=$(printf '%s\n' "$rest" | sed 's/^"[^"]*"[[:space:]]*//' | awk '{print $1}')
	case "$type" in
	g) echo "getent group '$name' >/dev/null || groupadd -r '$name' || :" ;;
	u)
		echo "getent group '$name' >/dev/null || groupadd -r '$name' || :"
		echo "getent passwd '$name' >/dev/null || useradd -r -g '$name' -d '${home:-/}' -s /sbin/nologin -c '$gecos' '$name' || :"
		;;
	esac
done
