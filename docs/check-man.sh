#!/bin/sh
# check-man.sh PAGE... - format every man page and fail on any warning.
# Pages are laid out as a man tree (manN/) in a scratch directory so that
# ".so man3/bb_write.3" aliases resolve as they will once installed.
set -eu
if command -v groff >/dev/null 2>&1; then
	check() { groff -man -ww -z "$1" 2>&1; }
elif command -v man >/dev/null 2>&1; then
	check() { man --warnings -l "$1" 2>&1 >/dev/null; }
else
	echo "neither groff nor man found: skipped"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for page in "$@"; do
	sec=${page##*.}
	mkdir -p "$tmp/man$sec"
	cp "$page" "$tmp/man$sec/"
done
cd "$tmp"
fail=0
n=0
for page in man*/*; do
	out=$(check "$page") || { echo "$page: formatter failed"; fail=1; }
	if [ -n "$out" ]; then
		printf '%s\n' "$out" | sed "s|^|$page: |"
		fail=1
	fi
	n=$((n + 1))
done
echo "$n pages checked"
exit $fail
