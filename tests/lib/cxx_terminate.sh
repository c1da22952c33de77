#!/bin/sh
# cxx_terminate.sh EXTRACT PROG | EXTRACT CXX SRC INCDIR LIBDIR - the
# uncaught exception that kills a C++ program built with <blackbox.hpp>
# shows in bb-extract's crash section, text and JSON: its type, demangled,
# and what(); the program's own terminate handler still runs after
# libblackbox's; the process dies of SIGABRT as without the library.
# With CXX SRC INCDIR LIBDIR, builds SRC (cxx_terminate.cpp) with CXX
# (clang++) first; exit 77 (skipped) without it.
set -eu
extract=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-cxxterm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
if [ $# -eq 4 ]; then
	cxx=$1 src=$2 inc=$3 libdir=$4
	command -v "$cxx" >/dev/null 2>&1 || { echo "no $cxx: skipped"; exit 77; }
	if ldd "$libdir/libblackbox.so" 2>/dev/null | grep -q 'lib[at]san\|libubsan'; then
		echo "sanitizer build: skipped (the library needs the gcc runtime first)"
		exit 77
	fi
	"$cxx" -std=c++17 -O2 -g -Wall -Wextra -Wpedantic -Werror -I"$inc" \
		-o "$tmp/prog" "$src" -L"$libdir" -lblackbox
	prog=$tmp/prog
	LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
else
	prog=$1
fi
fail() { echo "FAIL: $*"; exit 1; }

# run MODE: run the program in a fresh box directory; $out, $json, $err.
run() {
	rm -rf "$tmp/box"
	mkdir "$tmp/box"
	st=0
	BLACKBOX_DIR=$tmp/box "$prog" "$1" 2>"$tmp/stderr" || st=$?
	# 134: killed by SIGABRT (128 + 6), as without libblackbox.
	[ "$st" = 134 ] || fail "$1: exit status $st, want 134 (SIGABRT)"
	grep -q "the program's own terminate handler ran" "$tmp/stderr" ||
		fail "$1: the program's terminate handler did not run"
	box=$(ls "$tmp/box"/blackbox.*)
	"$extract" --path "$box" >"$tmp/out" 2>"$tmp/err" || fail "$1: bb-extract failed: $(cat "$tmp/err")"
	"$extract" --json --path "$box" >"$tmp/json" 2>/dev/null || fail "$1: bb-extract --json failed"
}

# expect FILE TEXT: TEXT is in FILE.
expect() {
	grep -qF -- "$2" "$1" || { cat "$1"; fail "no '$2' in $(basename "$1")"; }
}

run runtime_error
expect "$tmp/out" "*** aborted (SIGABRT) after: uncaught exception std::runtime_error: config missing: foo"
expect "$tmp/out" 'terminate="std::runtime_error: config missing: foo"'
expect "$tmp/out" 'loading=runtime_error'
expect "$tmp/json" '"kind":"fatal"'
expect "$tmp/json" '"reason":"uncaught exception std::runtime_error: config missing: foo"'
expect "$tmp/json" '"key":"terminate","value":"std::runtime_error: config missing: foo"'
expect "$tmp/json" '"signal":6'
echo "ok: std::runtime_error"

run int
expect "$tmp/out" "*** aborted (SIGABRT) after: uncaught exception int"
expect "$tmp/json" '"reason":"uncaught exception int"'
echo "ok: int"

run none
expect "$tmp/out" "*** aborted (SIGABRT) after: std::terminate without an active exception"
echo "ok: no exception"

run nested
expect "$tmp/out" "*** aborted (SIGABRT) after: uncaught exception std::_Nested_exception<std::logic_error>: starting; caused by: reading config; caused by: open: ENOENT"
echo "ok: nested exceptions"

run long
expect "$tmp/out" "*** aborted (SIGABRT) after: uncaught exception std::runtime_error: xxxxxxxx"
expect "$tmp/out" 'xxx...[cut]'
expect "$tmp/json" '...[cut]"'
echo "ok: a 1 MiB what() cut, and marked"

run recorded
expect "$tmp/out" "*** aborted (SIGABRT) after: own panic"
if grep -q 'terminate=' "$tmp/out"; then cat "$tmp/out"; fail "recorded: a second terminate record"; fi
echo "ok: recorded once"
