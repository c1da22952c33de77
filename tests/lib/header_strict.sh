#!/bin/sh
# header_strict.sh SRC INCDIR - compile SRC (header_use.c, every inline path
# of <blackbox.h>) with each C and C++ compiler found (cc, clang, c++,
# clang++), at -O0 and -O2, in the oldest and newest language standards
# the header supports, with strict warnings as errors: a program built with
# -Wall -Wextra -Wpedantic -Wconversion ... must not see a warning from the
# header.  Exit 77 (skipped) when no compiler is found.
set -eu
src=$1 inc=$2
warn="-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wcast-qual -Werror"
ran=0
for cc in cc clang; do
	command -v "$cc" >/dev/null 2>&1 || continue
	for std in c99 gnu17; do
		for opt in -O0 -O2; do
			echo "$cc -std=$std $opt"
			"$cc" -std=$std $opt $warn -I"$inc" -c -o /dev/null "$src"
			ran=1
		done
	done
done
for cxx in c++ clang++; do
	command -v "$cxx" >/dev/null 2>&1 || continue
	for std in c++11 c++20; do
		for opt in -O0 -O2; do
			echo "$cxx -std=$std $opt"
			"$cxx" -x c++ -std=$std $opt $warn -I"$inc" -c -o /dev/null "$src"
			ran=1
		done
	done
done
[ "$ran" = 1 ] || { echo "no compiler: skipped"; exit 77; }
