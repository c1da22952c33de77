#!/bin/sh
# SPDX-License-Identifier: MIT
#
# redis_icount.sh - instructions per Redis-style request (one event and two
# bb_set, bench/redis_bench.c), counted by valgrind --tool=callgrind:
# (I(2000 requests) - I(1000 requests)) / 1000 of loop_request(), the
# method of bench/callgrind.sh.
#
# Usage: bench/redis_icount.sh [REDIS_BENCH]   (default build/bench/redis_bench)
# BLACKBOX_CLOCK chooses the clock as for any program (unset: the default).
set -eu
bin=${1:-build/bench/redis_bench}
if ! command -v valgrind >/dev/null 2>&1; then
	echo "redis_icount.sh: valgrind not found" >&2
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-redis-icount.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
BLACKBOX_DIR=$tmp
export BLACKBOX_DIR
count() {
	valgrind --tool=callgrind --toggle-collect='loop_request' \
		--callgrind-out-file="$tmp/out" "$bin" -i "$1" >"$tmp/log" 2>&1 ||
		{ echo "valgrind $bin -i $1 failed:" >&2; cat "$tmp/log" >&2; exit 1; }
	sed -n 's/^totals: *//p' "$tmp/out" | head -n 1
}
# The warm-up's 20000 requests are collected too (loop_request runs twice):
# the difference of two runs cancels them.
a=$(count 1000)
b=$(count 2000)
echo "redis_icount: $(( (b - a) / 1000 )) instructions per request (clock: ${BLACKBOX_CLOCK:-default})"
