#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/headlines.sh [BUILD_DIR] - the figures of BENCHMARKS.md, one after
# the other: the write path against the clock (bench_floor), box cost
# (bench_init), extraction (extract_bench.sh), reap (reap-bench).  Sets up
# BUILD_DIR (default build-bench, buildtype=debugoptimized) if missing.
# About 5 minutes on 2 CPUs.  A benchmark: exits non-zero only if a program
# fails, never on a figure.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-bench}

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" --buildtype=debugoptimized >/dev/null
fi
ninja -C "$build" bench/bench_floor bench/bench_init bench/reap-bench \
	extractor/bb-extract reaper/bb-reap tests/extract/bbx_writer >/dev/null

echo "== write path against the clock (bench_floor: minimum batch, ns per call)"
"$build/bench/bench_floor" -b 3000 -r 1
echo "== box cost (bench_init)"
"$build/bench/bench_init" -r 15
echo "== extraction (extract_bench.sh)"
bash "$src/bench/extract_bench.sh" "$build"
echo "== reap (reap-bench)"
"$build/bench/reap-bench" "$build/reaper/bb-reap" 1000 5000
