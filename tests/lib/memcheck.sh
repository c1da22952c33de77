#!/bin/sh
# memcheck.sh PROGRAM SANITIZE - run PROGRAM (inline_memcheck.c) under
# valgrind's memcheck, failing on any error it reports.  Exit 77 (skipped)
# without valgrind, and in a sanitizer build (SANITIZE, meson's b_sanitize,
# not "none"), which valgrind cannot run.
set -eu
prog=$1
[ "$2" = none ] || { echo "sanitizer build ($2): skipped"; exit 77; }
command -v valgrind >/dev/null 2>&1 || { echo "no valgrind: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-memcheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
BLACKBOX_DIR=$tmp valgrind --tool=memcheck --error-exitcode=3 --leak-check=no -q "$prog"
