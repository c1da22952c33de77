#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh - build and run bench/peers/peers_bench.cpp: libblackbox beside the
# fastest in-process loggers (BENCHMARKS.md "The fastest loggers side by
# side").  The peers are never part of this repository: spdlog comes from
# Debian (libspdlog-dev), Quill, fmtlog and NanoLog from sources fetched
# into PEERS_DIR (default /work/scratch/peers, one directory each, named
# owner+repo as the fetch tool names them, or plain quill, fmtlog, NanoLog):
#   PEERS_DIR/odygrd+quill/include           header-only
#   PEERS_DIR/MengRao+fmtlog/fmtlog.h        header-only, with Debian's fmt
#   PEERS_DIR/PlatformLab+NanoLog/runtime    built first: make -C runtime
# Whatever is absent is skipped with a message, in the build and in the
# report.
#
# Usage: bench/peers/run.sh [BUILD_DIR] [peers_bench options]
#   BUILD_DIR  the meson build with libblackbox (default: build)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
peers=${PEERS_DIR:-/work/scratch/peers}
out=${TMPDIR:-/tmp}/bb-peers-bench
mkdir -p "$out"
find_dir() {   # first existing of the candidates under $peers
	for d in "$@"; do
		[ -e "$peers/$d" ] && { echo "$peers/$d"; return; }
	done
	echo ""
}
flags="" libs=""
if echo '#include <spdlog/spdlog.h>' | c++ -std=c++17 -x c++ -fsyntax-only - 2>/dev/null; then
	flags="$flags -DHAVE_SPDLOG=1 -DSPDLOG_FMT_EXTERNAL=1"
	libs="$libs -lspdlog -lfmt"
else
	echo "run.sh: spdlog absent (apt-get install libspdlog-dev)"
fi
q=$(find_dir odygrd+quill quill)
if [ -n "$q" ] && [ -e "$q/include/quill/Backend.h" ]; then
	flags="$flags -DHAVE_QUILL=1 -I$q/include"
else
	echo "run.sh: Quill absent from $peers"
fi
f=$(find_dir MengRao+fmtlog fmtlog)
if [ -n "$f" ] && [ -e "$f/fmtlog.h" ]; then
	# fmtlog is written for the fmt of its submodule; with another fmt
	# (Debian's 9.1) it may not compile: probe first.
	if printf '#define FMTLOG_HEADER_ONLY\n#include "fmtlog.h"\nint main(){const char *s="a";logi("{} {} {}", "req", s, 1ul);}\n' |
	   c++ -std=c++17 -I"$f" -I"$f/fmt/include" -x c++ -fsyntax-only - 2>/dev/null; then
		flags="$flags -DHAVE_FMTLOG=1 -I$f -I$f/fmt/include"
		case $libs in *-lfmt*) ;; *) libs="$libs -lfmt" ;; esac
	else
		echo "run.sh: fmtlog in $peers does not compile with this fmt (it needs the fmt of its submodule): skipped"
	fi
else
	echo "run.sh: fmtlog absent from $peers"
fi
n=$(find_dir PlatformLab+NanoLog NanoLog)
nano=""
if [ -n "$n" ] && [ -e "$n/runtime/libNanoLog.a" ]; then
	nano="-DHAVE_NANOLOG=1 -I$n/runtime $n/runtime/libNanoLog.a -lrt"
	flags="$flags -DNANOLOG_BUILT=1"
else
	echo "run.sh: NanoLog absent from $peers (or not built: make -C runtime)"
fi
cc -std=gnu11 -D_GNU_SOURCE -O2 -c -I"$src/bench" -I"$src/include" -o "$out/baselines.o" "$src/bench/baselines.c"
# shellcheck disable=SC2086
c++ -std=c++17 -O2 -pthread $flags -I"$src/bench" -I"$src/include" \
	-o "$out/peers_bench" "$src/bench/peers/peers_bench.cpp" "$out/baselines.o" \
	-L"$build/libblackbox" -Wl,-rpath,"$(cd "$build/libblackbox" && pwd)" -lblackbox $libs
if [ -n "$nano" ]; then
	# shellcheck disable=SC2086
	c++ -std=c++17 -O2 -pthread -I"$src/bench" -I"$src/include" \
		-o "$out/peers_bench_nanolog" "$src/bench/peers/peers_bench.cpp" "$out/baselines.o" \
		-L"$build/libblackbox" -Wl,-rpath,"$(cd "$build/libblackbox" && pwd)" -lblackbox $nano
fi
"$out/peers_bench" "$@"
if [ -n "$nano" ]; then
	echo "NanoLog, in a binary of its own:"
	"$out/peers_bench_nanolog" "$@" | grep -v '^machine\|^library\|^peers_bench:'
fi
