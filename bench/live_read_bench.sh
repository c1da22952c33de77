#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/live_read_bench.sh BUILD_DIR [ITER] - what reading a live box costs
# bb-extract: one box whose owner is alive (4 writer threads, 12 * ITER
# records each, default ITER 20000: the 37 MiB box fills, about 260,000
# records stay), read as text and as JSON Lines to /dev/null, and listed
# with --list.  Best CPU time (user + system, from bash's `time`) of 7 runs
# each: on a shared, loaded machine the wall clock also counts waiting for
# a CPU.  Run it against two builds to compare two ways of reading (see
# BENCHMARKS.md, "Reading a box").  Benchmark, not a test: nothing is
# asserted.
set -euo pipefail
build=${1:?usage: live_read_bench.sh BUILD_DIR [ITER]}
iter=${2:-20000}
bbx=$build/extractor/bb-extract
writer=${BBX_WRITER:-$build/tests/extract/bbx_writer}  # any build's will do
work=$(mktemp -d "${TMPDIR:-/tmp}/bbx-live.XXXXXX")
BLACKBOX_DIR=$work "$writer" -t 4 -n "$iter" -s 67108864 wait > "$work/ready" &
wpid=$!   # waits until killed
trap 'kill $wpid 2>/dev/null; wait $wpid 2>/dev/null || true; rm -rf "$work"' EXIT
until grep -q '^ready' "$work/ready"; do sleep 0.1; done
records=$("$bbx" --dir "$work" --json "$wpid" | tail -n 1 |
	  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["records"])')
echo "live box: $(du -h --apparent-size "$work"/blackbox.* | cut -f1), $records records, owner $wpid alive"
TIMEFORMAT='%6U %6S'
best() { # best CPU ms of 7 runs of "$@"
	local b= c
	for run in 1 2 3 4 5 6 7; do
		{ time "$@" > /dev/null 2>&1; } 2> "$work/time"
		c=$(awk '{ printf "%.0f\n", ($1 + $2) * 1e6 }' "$work/time")
		if [ -z "$b" ] || [ "$c" -lt "$b" ]; then b=$c; fi
	done
	awk -v c="$b" 'BEGIN { printf "%.2f", c / 1000 }'
}
printf '%-16s %10s\n' "" "best CPU ms"
printf '%-16s %10s\n' "live, text" "$(best "$bbx" --dir "$work" --quiet "$wpid")"
printf '%-16s %10s\n' "live, JSON" "$(best "$bbx" --dir "$work" --json "$wpid")"
printf '%-16s %10s\n' "--list" "$(best "$bbx" --dir "$work" --list)"
