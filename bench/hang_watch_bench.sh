#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/hang_watch_bench.sh BUILD_DIR [N] [SECONDS] - what `bb-reap --watch`
# costs with N live owners (default 1000), all healthy: its CPU time
# (utime + stime from /proc) over SECONDS (default 20), first with owners
# that declared no deadline (the baseline: pidfds only), then with owners
# that declared a 500 ms deadline and beat every 200 ms
# (tests/hang/bbh_service beat 200).  Prints both as % of one CPU and
# their difference.  In a private directory under /dev/shm.  Benchmark,
# not a test: nothing is asserted.
set -eu
build=${1:?usage: hang_watch_bench.sh BUILD_DIR [N] [SECONDS]}
n=${2:-1000}
secs=${3:-20}
reap=$build/reaper/bb-reap
svc=$build/tests/hang/bbh_service
dir=$(mktemp -d /dev/shm/hang-bench.XXXXXX)
chmod 1777 "$dir"
pids=""
watch=""
cleanup() {
	[ -n "$watch" ] && kill "$watch" 2>/dev/null
	for p in $pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
hz=$(getconf CLK_TCK)

# CPU ticks (utime + stime) of pid $1
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

phase() {
	mode=$1
	shift
	pids=""
	i=0
	while [ "$i" -lt "$n" ]; do
		BLACKBOX_DIR=$dir BLACKBOX_SIZE=128k "$svc" "$@" > /dev/null < /dev/null &
		pids="$pids $!"
		i=$((i + 1))
	done
	"$reap" --watch --dir "$dir" --min-age 0 --rescan 1h 2>/dev/null &
	watch=$!
	sleep 5   # every box judged, every pidfd taken
	t0=$(ticks "$watch")
	sleep "$secs"
	t1=$(ticks "$watch")
	kill "$watch"
	wait "$watch" 2>/dev/null || true
	watch=""
	for p in $pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null || true
	pids=""
	rm -f "$dir"/blackbox.*
	echo "$mode $(( t1 - t0 ))"
}

a=$(phase "no-deadline" idle | awk '{ print $2 }')
b=$(phase "deadline" beat 200 | awk '{ print $2 }')
awk -v a="$a" -v b="$b" -v hz="$hz" -v s="$secs" -v n="$n" 'BEGIN {
	printf "%d live owners, %d s: watcher CPU %.2f%% without deadlines, %.2f%% with " \
	       "(%d heartbeats read every 250 ms); difference %.2f%% of one CPU\n",
	       n, s, 100 * a / hz / s, 100 * b / hz / s, n, 100 * (b - a) / hz / s }'
