#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/run.sh - build (if needed) and run the write-path measurements, and
# print one report: latency and throughput by thread count, cost by value
# size, box creation and memory, each beside its baselines of the same run,
# then the targets.  BENCHMARKS.md "Reproduce" documents it.
#
# Usage: bench/run.sh [-q] [BUILD_DIR]
#   BUILD_DIR  a meson build directory (default: build-bench in the source
#              tree, set up with buildtype=debugoptimized if missing)
#   -q         quick: tiny counts, one repetition (checks it all runs;
#              the figures mean nothing)
# Environment: REPEAT (repetitions inside each program, default 5),
# BLACKBOX_DIR (where the boxes go), and anything the library reads.
#
# The default-clock run is followed by bb_write_kv at 64 threads in a box
# of 16 private rings (the default count: the other 48 threads write the
# shared ring, serialised by a bounded try-lock, and may drop records),
# then by the latency/throughput run again with BLACKBOX_CLOCK=tsc (the
# box header says whether the library took the TSC clock or fell back).
# The size run is repeated with BLACKBOX_CRC=0 (checksums off).  A library
# without those options ignores the variables: the "box:" lines of the
# report say what was measured.
#
# A benchmark: exits non-zero only if a program fails, never on a figure.
set -eu

quick=0
if [ "${1:-}" = "-q" ]; then
	quick=1
	shift
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-bench}
repeat=${REPEAT:-5}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" --buildtype=debugoptimized >/dev/null
fi
ninja -C "$build" bench/bench_latency bench/bench_size bench/bench_init bench/bench_floor >/dev/null

b=$build/bench
if [ "$quick" = 1 ]; then
	lat="-r 1 -n 4000 -c 20000 -t 1,2,8"
	tsc="-r 1 -n 4000 -c 20000 -t 1 -o clock,rdtsc,kv,i64,event4"
	size="-r 1 -b 20 -n 100"
	init="-r 2 -s 0,16"
	shared="-r 1 -n 4000 -c 20000 -t 64 -R 16 -o kv"
	floor="-b 20 -n 100 -r 1"
else
	lat="-r $repeat"
	tsc="-r $repeat -t 1,2 -o clock,rdtsc,kv,i64,event4"
	size="-r $repeat"
	init="-r 15"
	shared="-r $repeat -t 64 -R 16 -o kv"
	floor="-r 2"
fi

out=$(mktemp /tmp/bb-bench-run.XXXXXX)
trap 'rm -f "$out"' EXIT INT TERM

section() {
	printf '\n======== %s ========\n' "$1" | tee -a "$out"
}

section "the ratios from the best batches (bench_floor)"
# shellcheck disable=SC2086
"$b/bench_floor" $floor | tee -a "$out"
section "latency and throughput, default clock"
# shellcheck disable=SC2086 # word splitting of the option strings is wanted
"$b/bench_latency" $lat | tee -a "$out"
section "latency and throughput, BLACKBOX_CLOCK=tsc"
# shellcheck disable=SC2086
BLACKBOX_CLOCK=tsc "$b/bench_latency" $tsc | tee -a "$out"
section "64 threads on a default box (4 MiB of segments)"
# shellcheck disable=SC2086
"$b/bench_latency" $shared | tee -a "$out"
section "cost by value size, checksums as default"
# shellcheck disable=SC2086
"$b/bench_size" $size | tee -a "$out"
section "cost by value size, BLACKBOX_CRC=0"
# shellcheck disable=SC2086
BLACKBOX_CRC=0 "$b/bench_size" $size | tee -a "$out"
section "box creation and memory"
# shellcheck disable=SC2086
"$b/bench_init" $init | tee -a "$out"

section "summary"
grep -E '^(box:|ratios|target|incremental)' "$out" || true
