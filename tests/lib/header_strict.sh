#!/bin/sh
# header_strict.sh SRC CXXSRC INCDIR [SANITIZE] - compile SRC (header_use.c, every
# inline path of <blackbox.h>) with each C and C++ compiler found (cc,
# clang, c++, clang++), at -O0 and -O2, in the oldest and newest language
# standards the header supports, and CXXSRC (header_use.cpp, every call of
# <blackbox.hpp>) with each C++ compiler in C++17 and C++20, with strict
# warnings as errors: a program built with -Wall -Wextra -Wpedantic
# -Wconversion ..., and in C++ -Wold-style-cast
# -Wzero-as-null-pointer-constant and (g++) -Wuseless-cast, must not see a
# warning from the headers; <blackbox.hpp> also under -fno-exceptions
# -fno-rtti.  Exit 77 (skipped) when no compiler is found, and in a
# sanitizer build (SANITIZE, meson's b_sanitize, not "none"): the
# compilations do not depend on the build, and the plain build runs them.
set -eu
src=$1 cxxsrc=$2 inc=$3
[ "${4:-none}" = none ] || { echo "sanitizer build ($4): skipped (the plain build runs it)"; exit 77; }
warn="-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wcast-qual -Werror"
cxxwarn="-Wold-style-cast -Wzero-as-null-pointer-constant"
ran=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-hstrict.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
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
	extra=$cxxwarn
	# -Wuseless-cast is g++'s (clang++ does not know it).
	if "$cxx" -Werror -Wuseless-cast -x c++ -c -o /dev/null /dev/null 2>/dev/null; then
		extra="$extra -Wuseless-cast"
	fi
	for std in c++11 c++20; do
		for opt in -O0 -O2; do
			echo "$cxx -std=$std $opt $extra"
			"$cxx" -x c++ -std=$std $opt $warn $extra -I"$inc" -c -o /dev/null "$src"
			ran=1
		done
	done
	for std in c++17 c++20; do
		for opt in -O0 -O2; do
			echo "$cxx -std=$std $opt $extra (blackbox.hpp)"
			"$cxx" -std=$std $opt $warn $extra -I"$inc" -c -o /dev/null "$cxxsrc"
		done
	done
	# A program built without exceptions or RTTI includes it too.
	echo "$cxx -std=c++17 -O2 -fno-exceptions -fno-rtti $extra (blackbox.hpp)"
	"$cxx" -std=c++17 -O2 -fno-exceptions -fno-rtti $warn $extra -I"$inc" -c -o /dev/null "$cxxsrc"
	# A pointer that is not text, as a value, does not compile: the
	# static_assert's message, once for each of write(v), write(k, v),
	# set, an event field and nullptr.
	cat >"$tmp/ptr.cpp" <<'EOF'
#include <blackbox.hpp>
int f1(int *p) { return blackbox::write(p); }
int f2(void *p) { return blackbox::write("k", p); }
int f3(const double *p) { return blackbox::set("k", p); }
int f4(unsigned char *p) { return blackbox::event("e", { { "p", p } }); }
int f5() { return blackbox::write("k", nullptr); }
EOF
	echo "$cxx: pointers as values must not compile"
	if "$cxx" -std=c++17 -I"$inc" -c -o /dev/null "$tmp/ptr.cpp" 2>"$tmp/err"; then
		echo "FAIL: pointers as values compiled"; exit 1
	fi
	n=$(grep -c "a pointer is not a value" "$tmp/err" || true)
	[ "$n" -ge 5 ] || { cat "$tmp/err"; echo "FAIL: $n of 5 pointer calls said why"; exit 1; }
done
[ "$ran" = 1 ] || { echo "no compiler: skipped"; exit 77; }
