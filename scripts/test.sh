#!/bin/sh
# test.sh - set up everything on a fresh Debian 12 (as root), build with
# -Werror (debugoptimized, and release without running it) and run the
# whole test suite; then again under ASan+UBSan, then a short fuzzing run.
# Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh

meson setup --wipe build-ci -Dwerror=true -Dbuildtype=debugoptimized 2>/dev/null ||
	meson setup build-ci -Dwerror=true -Dbuildtype=debugoptimized
ninja -C build-ci
meson test -C build-ci --print-errorlogs --num-processes 2

# The release build (-O3) warns where -O2 does not (-Wmaybe-uninitialized):
# build it with -Werror too, without the Criterion tests (build only).
meson setup --wipe build-release -Dwerror=true -Dbuildtype=release -Dtests=disabled 2>/dev/null ||
	meson setup build-release -Dwerror=true -Dbuildtype=release -Dtests=disabled
ninja -C build-release

# Sanitizers: the same suite under AddressSanitizer + UBSan.
meson setup --wipe build-asan -Db_sanitize=address,undefined -Db_lundef=false 2>/dev/null ||
	meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-asan
meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3

# ---- ThreadSanitizer: the concurrency torture under TSan -----------------
# Only the 'torture' suite: bb-torture is a plain program (threads, fork,
# SIGKILL); Criterion itself does not start under TSan ("Could not
# initialize inheritable arena").  The seqlock's intentional races are
# suppressed in tests/tsan.supp, each one justified there.  No -Dwerror:
# gcc warns (-Wtsan) that atomic_thread_fence is not modelled.  Only the
# targets the suite needs are built; about 2 minutes on 2 cores.
meson setup --wipe build-tsan -Db_sanitize=thread -Db_lundef=false 2>/dev/null ||
	meson setup build-tsan -Db_sanitize=thread -Db_lundef=false
ninja -C build-tsan tests/torture/bb-torture extractor/bb-extract
TSAN_OPTIONS="halt_on_error=1 history_size=7 suppressions=$PWD/tests/tsan.supp" \
	meson test -C build-tsan --no-rebuild --suite torture --print-errorlogs \
	--num-processes 2 --timeout-multiplier 3
# ---- end of the ThreadSanitizer block -------------------------------------

# ---- Debian packages ------------------------------------------------------
# dpkg-buildpackage -us -uc -b from a copy of the tree (the package build
# runs the functional suites again, with Debian's hardening flags), lintian
# when it is installed, then libblackbox0, libblackbox-dev and
# blackbox-tools extracted into a scratch root and used from there: a
# program built against the extracted -dev, killed, its box read with the
# extracted bb-extract and bb-reap, and the crash example read back.
# 33-45 s on 2 cores here (27-39 s of it the package build with its tests).
sh scripts/deb-test.sh
# ---- end of the Debian packages block ---------------------------------------

# A short fuzzing run over the box parser (libFuzzer, clang).
if [ -f fuzz/run.sh ]; then
	sh fuzz/run.sh 60
fi
# One closing line over all three runs, in the form CI reads.
count() { grep -h "^$1:" build-ci/meson-logs/testlog.txt build-asan/meson-logs/testlog.txt \
	build-tsan/meson-logs/testlog.txt |
	awk '{ s += $NF } END { print s + 0 }'; }
fail=$(( $(count Fail) + $(count Timeout) + $(count 'Unexpected Pass') ))
echo "test.sh: all suites passed (plain -Werror build, ASan+UBSan build, TSan torture, fuzzing)"
echo "$(count Ok) passed, $fail failed, $(count Skipped) skipped"
