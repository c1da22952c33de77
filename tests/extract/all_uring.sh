#!/bin/sh
# SPDX-License-Identifier: MIT
# --all --uring (output written with io_uring, or the plain fallback when
# io_uring is refused; boxes are read as always, with pread) prints exactly
# what --all --no-uring prints, in every format, messages included.
set -eu
bbx=${BB_EXTRACT:?} writer=${BBX_WRITER:?}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bbx-all.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for i in 1 2 3 4 5; do
	BLACKBOX_DIR=$dir "$writer" -t 2 -n 3000 -c 3 -s 1048576 _exit >/dev/null
done
BLACKBOX_DIR=$dir "$writer" -t 1 -n 100 -c 1 -s 131072 _exit >/dev/null
for fmt in --json --cbor --quiet ""; do
	rc1=0 rc2=0
	"$bbx" --dir "$dir" --all $fmt --no-uring >"$dir/p.out" 2>"$dir/p.err" || rc1=$?
	"$bbx" --dir "$dir" --all $fmt --uring >"$dir/u.out" 2>"$dir/u.err" || rc2=$?
	[ "$rc1" = "$rc2" ] || { echo "exit $rc1 vs $rc2 ($fmt)"; exit 1; }
	cmp "$dir/p.out" "$dir/u.out" || { echo "stdout differs ($fmt)"; exit 1; }
	cmp "$dir/p.err" "$dir/u.err" || { echo "stderr differs ($fmt)"; exit 1; }
	[ -s "$dir/p.out" ] || [ "$fmt" = --quiet ] || { echo "no output ($fmt)"; exit 1; }
done
echo ok
