#!/bin/sh
# SPDX-License-Identifier: MIT
#
# peer_recorder.sh RECORDER_SRC [BUILD_DIR] [-- ARGS...] - build c3d/recorder
# (https://github.com/c3d/recorder, LGPL) from its source directory, outside
# this tree, with bench/bench_recorder.c, against BUILD_DIR's libblackbox
# (default: build), and run it with ARGS: the recorder row of BENCHMARKS.md
# "Write path against the clock".  Nothing of the recorder is copied here; its own build
# (make-it-quick) is not needed: recorder.c and recorder_ring.c are
# compiled with the few HAVE_* answers it asks for on Linux.
set -eu
src=${1:?usage: peer_recorder.sh RECORDER_SRC [BUILD_DIR] [-- ARGS...]}
shift
build=build
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	build=$1
	shift
fi
[ "${1:-}" = -- ] && shift
here=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$here/$build ;; esac
[ -f "$src/recorder.h" ] || { echo "no recorder.h in $src" >&2; exit 2; }
[ -e "$build/libblackbox/libblackbox.so" ] || { echo "build $build first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/bb-recorder.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
printf '#define HAVE_REGEX_H 1\n#define HAVE_SYS_MMAN_H 1\n#define HAVE_SIGSTKSZ 1\n#define HAVE_STRSIGNAL 1\n#define HAVE_SIGACTION 1\n#define HAVE_SETLINEBUF 1\n' >"$tmp/config.h"
# _DEFAULT_SOURCE, not _GNU_SOURCE: the recorder sizes a static table with
# SIGSTKSZ, which glibc makes a run-time value under _GNU_SOURCE.
for f in recorder recorder_ring; do
	cc -O2 -D_DEFAULT_SOURCE -I"$tmp" -I"$src" -c -o "$tmp/$f.o" "$src/$f.c"
done
cc -O2 -D_GNU_SOURCE -I"$src" -I"$here/include" -I"$here/bench" -o "$tmp/bench_recorder" \
	"$here/bench/bench_recorder.c" "$here/bench/baselines.c" "$tmp/recorder.o" \
	"$tmp/recorder_ring.o" -L"$build/libblackbox" -lblackbox -lpthread -lm \
	-Wl,-rpath,"$build/libblackbox"
echo "c3d/recorder: $(git -C "$src" log -1 --format='%h %cs' 2>/dev/null || echo "$src")"
"$tmp/bench_recorder" "$@"
