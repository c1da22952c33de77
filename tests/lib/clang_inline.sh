#!/bin/sh
# clang_inline.sh CC SRC INCDIR LIBDIR - build test_inline.c (or, for a
# C++ compiler, test_inline_cxx.cpp) with another compiler (clang,
# clang++) against the built shared library, and run it.
#
# The inline paths take a different route with Clang, which decides
# __builtin_constant_p before inlining (the literal test is made where the
# macros expand, <blackbox.h>): this checks that route writes inline too,
# and the same bytes, in C and in C++.  Exit 77 (skipped) without the
# compiler or without Criterion's pkg-config file.
set -eu
cc=$1 src=$2 inc=$3 libdir=$4
command -v "$cc" >/dev/null 2>&1 || { echo "no $cc: skipped"; exit 77; }
crit=$(pkg-config --cflags --libs criterion 2>/dev/null) || { echo "no criterion.pc: skipped"; exit 77; }
if ldd "$libdir/libblackbox.so" 2>/dev/null | grep -q 'lib[at]san\|libubsan'; then
	echo "sanitizer build: skipped (the library needs the gcc runtime first)"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-clang.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
case $src in
*.cpp) std=-std=c++11 ;;
*) std=-std=gnu11 ;;
esac
# shellcheck disable=SC2086 # $crit is a list of words
"$cc" $std -O2 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Werror -pthread -I"$inc" \
	-o "$tmp/test-inline-clang" "$src" -L"$libdir" -lblackbox $crit
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/test-inline-clang"
