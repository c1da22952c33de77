#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/watch_bench.sh BUILD_DIR [N] - how soon `bb-reap --watch
# --min-age 0` removes a box after its owner dies: N times (default 20), a
# writer (tests/reap/bbr_writer) makes a box and is killed with SIGKILL;
# the time from the kill until the box is gone, polled every millisecond.
# Prints each, the median and the worst.  In a private directory under
# /dev/shm.  Benchmark, not a test: nothing is asserted.
set -eu
build=${1:?usage: watch_bench.sh BUILD_DIR [N]}
n=${2:-20}
reap=$build/reaper/bb-reap
writer=$build/tests/reap/bbr_writer
dir=$(mktemp -d /dev/shm/watch-bench.XXXXXX)
chmod 1777 "$dir"
"$reap" --watch --dir "$dir" --min-age 0 --rescan 1h 2>/dev/null &
watch=$!
trap 'kill $watch 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
sleep 0.5
i=0
: > "$dir.times"
while [ "$i" -lt "$n" ]; do
	fifo=$dir.in
	rm -f "$fifo" "$dir.pid"
	mkfifo "$fifo"
	BLACKBOX_DIR=$dir BLACKBOX_SIZE=128k "$writer" wait < "$fifo" > "$dir.pid" &
	exec 3> "$fifo"
	while [ ! -s "$dir.pid" ]; do sleep 0.01; done
	pid=$(cat "$dir.pid")
	sleep 0.2 # the watch took its pidfd
	t0=$(date +%s%N)
	kill -9 "$pid"
	while ls "$dir" | grep -q "^blackbox\.$pid\."; do sleep 0.001; done
	t1=$(date +%s%N)
	exec 3>&-
	wait "$pid" 2>/dev/null || true
	echo $(( (t1 - t0) / 1000 )) >> "$dir.times"
	i=$((i + 1))
done
sort -n "$dir.times" | awk '{ v[NR] = $1 } END {
	printf "%d deaths: kill to box gone, median %.1f ms, worst %.1f ms\n",
	       NR, v[int((NR + 1) / 2)] / 1000, v[NR] / 1000 }'
rm -f "$dir.times" "$dir.pid" "$dir.in"
