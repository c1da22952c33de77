#!/bin/sh
# SPDX-License-Identifier: MIT
#
# scan_complexity.sh - bb_reader_scan() (`bb-extract --list`) and
# bb_reader_open_pid() (`bb-extract PID`) do work linear in the number of
# boxes in the directory: the instructions they execute together (valgrind
# --tool=callgrind, deterministic, unlike wall time) for 8N boxes are at
# most MAX_RATIO times those for N boxes.  Linear work gives about 8 (the
# sort adds a log factor); work that judges each pid against every entry
# gives 15 at these sizes.
#
# Usage: scan_complexity.sh DRIVER SANITIZE
#   DRIVER    scan-icount-driver (tests/perf/scan_icount.c)
#   SANITIZE  meson's get_option('b_sanitize'); counted without sanitizers
# Exit 77 (skipped) without valgrind or with sanitizers.
set -eu
unset MALLOC_PERTURB_ 2>/dev/null || true

N=500
MAX_RATIO=10

if [ $# -ne 2 ]; then
	echo "usage: scan_complexity.sh DRIVER SANITIZE" >&2
	exit 2
fi
driver=$1
if [ "$2" != none ]; then
	echo "SKIP: counted without sanitizers (b_sanitize=$2)"
	exit 77
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "SKIP: valgrind not found"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-scan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# Instructions of both functions with N boxes in a fresh directory.
count() {
	rm -rf "$tmp/box"
	mkdir "$tmp/box"
	valgrind --tool=callgrind --toggle-collect=measured_scan --toggle-collect=measured_pid \
		--callgrind-out-file="$tmp/out" "$driver" "$tmp/box" "$1" >"$tmp/log" 2>&1 ||
		{ echo "valgrind $driver $1 failed:" >&2; cat "$tmp/log" >&2; exit 1; }
	t=$(sed -n 's/^totals: *//p' "$tmp/out" | head -n 1)
	[ -n "$t" ] || { echo "no totals in callgrind output" >&2; exit 1; }
	echo "$t"
}

a=$(count $N)
b=$(count $((8 * N)))
# ratio * 100, integer arithmetic
r=$(( b * 100 / a ))
line="scan and open_pid: $a instructions for $N boxes, $b for $((8 * N)): x$((r / 100)).$(printf %02d $((r % 100)))"
if [ "$r" -gt $((MAX_RATIO * 100)) ]; then
	echo "FAIL: $line > x$MAX_RATIO (not linear)"
	exit 1
fi
echo "ok: $line <= x$MAX_RATIO"
