#!/bin/sh
# clang_inline.sh CC SRC INCDIR LIBDIR - build test_inline.c with another
# compiler (clang) against the built shared library, and run it.
#
# The inline fast path of bb_write_kv() takes a different route with
# Clang, which decides __builtin_constant_p before inlining (the literal
# test is made where the macro expands, <blackbox.h>): this checks that
# route writes inline too, and the same bytes.  Exit 77 (skipped) without
# the compiler or without Criterion's pkg-config file.
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
# shellcheck disable=SC2086 # $crit is a list of words
"$cc" -std=gnu11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -I"$inc" \
	-o "$tmp/test-inline-clang" "$src" -L"$libdir" -lblackbox $crit
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/test-inline-clang"
