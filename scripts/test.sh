#!/bin/sh
# test.sh - set up everything on a fresh Debian 12 (as root), build with
# -Werror (debugoptimized, and release without running it) and run the
# whole test suite; then again under ASan+UBSan, the torture suite under
# TSan, the Debian packages, then a short fuzzing run.  Exits non-zero on
# any failure.  Prints a line per stage with the seconds it took, and
# closes with "N passed, N failed, N skipped" over the three test runs.
#
# Both cores are kept busy: the release and ASan builds run (niced) while
# the plain suite runs, whose tests marked is_parallel: false leave a core
# idle; the fuzzing run, bounded in time, runs beside the Debian packages'
# build.  Each background job is this script again (--background STAGE),
# started by setsid(1) in a process group of its own, which a failure
# elsewhere ends whole.
set -eu
cd "$(dirname "$0")/.."

# stage NAME CMD...: run CMD, then say "test.sh: stage NAME: SECONDS s",
# and add that line to $BB_TEST_STAGES (the summary at the end).
stage() {
	name=$1
	shift
	t0=$(date +%s)
	echo "== test.sh: $name"
	"$@"
	line="test.sh: stage $name: $(($(date +%s) - t0)) s"
	echo "$line"
	echo "$line" >>"$BB_TEST_STAGES"
}
setup() { # setup DIR OPTIONS...: configure a fresh build directory
	dir=$1
	shift
	meson setup --wipe "$dir" "$@" >/dev/null 2>&1 || meson setup "$dir" "$@"
}
build_ci() {
	setup build-ci -Dwerror=true -Dbuildtype=debugoptimized
	ninja -C build-ci
}
# The release build (-O3) warns where -O2 does not (-Wmaybe-uninitialized):
# build it with -Werror too, without the Criterion tests (build only).
build_release() {
	setup build-release -Dwerror=true -Dbuildtype=release -Dtests=disabled
	nice -n 10 ninja -C build-release
}
build_asan() {
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
	nice -n 10 ninja -C build-asan
}
# ThreadSanitizer: the concurrency torture under TSan.  Only the 'torture'
# suite: bb-torture is a plain program (threads, fork, SIGKILL); Criterion
# itself does not start under TSan ("Could not initialize inheritable
# arena").  The seqlock's intentional races are suppressed in
# tests/tsan.supp, each one justified there.  No -Dwerror: gcc warns
# (-Wtsan) that atomic_thread_fence is not modelled.  Only the targets the
# suite needs are built.
tests_tsan() {
	setup build-tsan -Db_sanitize=thread -Db_lundef=false
	ninja -C build-tsan tests/torture/bb-torture extractor/bb-extract
	TSAN_OPTIONS="halt_on_error=1 history_size=7 suppressions=$PWD/tests/tsan.supp" \
		meson test -C build-tsan --no-rebuild --suite torture --print-errorlogs \
		--num-processes 2 --timeout-multiplier 3
}
# A short fuzzing run over the box parser and the CBOR decoder (libFuzzer,
# clang): fuzz/run.sh 60 fuzzes for 60 s and 21 s whatever the load.
fuzz() {
	sh fuzz/run.sh 60
}

case ${1:-} in
--background)
	case $2 in
	builds) stage build-release build_release; stage build-asan build_asan ;;
	fuzz) [ ! -f fuzz/run.sh ] || stage fuzz fuzz ;;
	*) echo "test.sh: no background stage $2" >&2; exit 2 ;;
	esac
	exit 0 ;;
'') ;;
*) echo "usage: sh scripts/test.sh" >&2; exit 2 ;;
esac

t_all=$(date +%s)
BB_TEST_STAGES=$(mktemp /tmp/bb-test-stages.XXXXXX)
export BB_TEST_STAGES
bglog=$(mktemp /tmp/bb-test-bg.XXXXXX)
bg=
fz=
cleanup() {
	[ -z "$bg" ] || kill -- "-$bg" 2>/dev/null || true
	[ -z "$fz" ] || kill -- "-$fz" 2>/dev/null || true
	rm -f "$BB_TEST_STAGES" "$bglog" "$bglog.fuzz"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# background STAGE LOG: this script's --background STAGE, in a session of
# its own, output to LOG; its pid (= its process group) in $!.
background() {
	setsid -w sh scripts/test.sh --background "$1" >"$2" 2>&1 </dev/null &
}
# wait_background PID LOG WHAT: wait for it; on failure show LOG and stop.
wait_background() {
	echo "== test.sh: waiting for $3"
	if ! wait "$1"; then
		cat "$2"
		echo "test.sh: $3 failed (above)" >&2
		exit 1
	fi
	grep '^test.sh: stage' "$2" || true
}

stage install-deps sh scripts/install-deps.sh
stage build-ci build_ci

# The release and ASan builds, niced, while the plain suite runs.
background builds "$bglog"
bg=$!
stage tests-plain meson test -C build-ci --print-errorlogs --num-processes 2
wait_background "$bg" "$bglog" "the release and ASan builds"
bg=

# Sanitizers: the same suite under AddressSanitizer + UBSan.  The tests
# that do not depend on the build (the headers under every compiler and
# standard) skip themselves here: the plain run ran them.
stage tests-asan meson test -C build-asan --print-errorlogs --num-processes 2 \
	--timeout-multiplier 3

stage tests-tsan tests_tsan

# The fuzzing run beside the package build: it takes what CPU that leaves.
background fuzz "$bglog.fuzz"
fz=$!

# ---- Debian packages ------------------------------------------------------
# dpkg-buildpackage -us -uc -b from a copy of the tree, lintian when it is
# installed, then libblackbox0, libblackbox-dev and blackbox-tools
# extracted into a scratch root and used from there: a program built
# against the extracted -dev, killed, its box read with the extracted
# bb-extract and bb-reap, and the crash example read back.  The package
# build runs no tests here (DEB_BUILD_OPTIONS=nocheck): its functional
# suites are the ones the plain and ASan runs above ran on the same
# sources; `sh scripts/deb-test.sh` alone still runs them with Debian's
# hardening flags.
stage deb-test env DEB_BUILD_OPTIONS="nocheck${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" \
	sh scripts/deb-test.sh
# ---- end of the Debian packages block ---------------------------------------

wait_background "$fz" "$bglog.fuzz" "the fuzzing run"
fz=
tail -n 12 "$bglog.fuzz"

# One closing block over all three runs, in the form CI reads: the stages
# with their seconds, then the counts.
count() { grep -h "^$1:" build-ci/meson-logs/testlog.txt build-asan/meson-logs/testlog.txt \
	build-tsan/meson-logs/testlog.txt |
	awk '{ s += $NF } END { print s + 0 }'; }
fail=$(( $(count Fail) + $(count Timeout) + $(count 'Unexpected Pass') ))
cat "$BB_TEST_STAGES"
echo "test.sh: total: $(($(date +%s) - t_all)) s (background stages overlap the others)"
echo "test.sh: all suites passed (plain -Werror build, ASan+UBSan build, TSan torture, fuzzing)"
echo "$(count Ok) passed, $fail failed, $(count Skipped) skipped"
