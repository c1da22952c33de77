#!/bin/sh
# consumer.sh - the installed library, used the way a service author uses
# it: `meson install` into a scratch DESTDIR, build examples/worker.c out of
# tree with `pkg-config --cflags --libs blackbox` against the installed
# files only, run it, kill -9 it, and extract its box with the installed
# bb-extract.
#
# Environment (set by tests/install/meson.build): MESON_BUILD_ROOT,
# MESON_SOURCE_ROOT; CC (default cc; words: a launcher such as ccache may precede it).  Exit 77 (skipped) without
# pkg-config or a C compiler.
set -eu
build=${MESON_BUILD_ROOT:?}
src=${MESON_SOURCE_ROOT:?}
cc=${CC:-cc}
command -v pkg-config >/dev/null 2>&1 || { echo "no pkg-config: skipped"; exit 77; }
command -v "${cc%% *}" >/dev/null 2>&1 || { echo "no C compiler: skipped"; exit 77; }
# A sanitizer build installs an instrumented library that an ordinary
# out-of-tree program cannot load first; the consumer test is for real
# (uninstrumented) installs.
if ldd "$MESON_BUILD_ROOT/libblackbox/libblackbox.so" 2>/dev/null | grep -q 'lib[at]san\|libubsan'; then
	echo "sanitizer build: skipped"
	exit 77
fi

tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
dest=$tmp/dest
boxes=$tmp/boxes
mkdir -p "$boxes"

fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== meson install --destdir $dest"
meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "meson install"; }

pc=$(find "$dest" -name blackbox.pc | head -n 1)
[ -n "$pc" ] || fail "no blackbox.pc installed"
extract=$(find "$dest" -type f -name bb-extract | head -n 1)
[ -n "$extract" ] || fail "no bb-extract installed"
header=$(find "$dest" -path '*/include/blackbox.h' | head -n 1)
[ -n "$header" ] || fail "no blackbox.h installed"
[ -n "$(find "$dest" -path '*/include/blackbox/reader.h')" ] || fail "no blackbox/reader.h installed"
# <blackbox.h> includes it: the inline fast path of bb_write_kv().
[ -n "$(find "$dest" -path '*/include/blackbox/inline.h')" ] || fail "no blackbox/inline.h installed"
[ -n "$(find "$dest" -path '*/man3/bb_init.3')" ] || echo "note: man pages not installed (-Dman=disabled?)"

# The .pc file names the final prefix; the sysroot puts DESTDIR in front of
# every -I and -L it prints.
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs blackbox) || fail "pkg-config --cflags --libs blackbox"
echo "== pkg-config --cflags --libs blackbox: $flags"
case "$flags" in
*"$dest"*) ;;
*) fail "pkg-config flags do not point into DESTDIR: $flags" ;;
esac
libdir=$(pkg-config --variable=libdir blackbox)
libdir=$dest${libdir#"$dest"}
[ -e "$libdir/libblackbox.so.0" ] || fail "no libblackbox.so.0 in $libdir"
# The library needs the C library only (its CBOR encoder is its own): no
# other package for a service that links it.
if command -v readelf >/dev/null 2>&1; then
	needed=$(readelf -d "$libdir/libblackbox.so.0" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	echo "== libblackbox.so.0 needs: $needed"
	[ "$needed" = "libc.so.6 " ] || fail "libblackbox.so.0 needs more than libc: $needed"
fi

# The installed tools find the library without LD_LIBRARY_PATH: a prefix
# other than /usr gives them its library directory as their run path.
prefix=$(pkg-config --variable=prefix blackbox)
prefix=${prefix#"$dest"}
reap=$(find "$dest" -type f -name bb-reap | head -n 1)
[ -n "$reap" ] || fail "no bb-reap installed"
if [ "$prefix" != /usr ] && command -v readelf >/dev/null 2>&1; then
	for bin in "$extract" "$reap"; do
		rp=$(readelf -d "$bin" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
		case ":$rp:" in
		*":${libdir#"$dest"}:"*) echo "== $(basename "$bin") run path: $rp" ;;
		*) fail "$bin: run path '$rp' lacks ${libdir#"$dest"} (prefix $prefix)" ;;
		esac
	done
fi

# Out of tree: a copy of the example, no include path into the source tree.
mkdir "$tmp/consumer"
cp "$src/examples/worker.c" "$tmp/consumer/"
echo "== $cc worker.c"
# shellcheck disable=SC2086 # $flags is a list of words
(cd "$tmp/consumer" && $cc -std=gnu11 -D_GNU_SOURCE -pthread -o worker worker.c $flags) ||
	fail "building worker.c against the installed library"

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export BLACKBOX_DIR="$boxes"
# The consumer and the installed tool load the installed library.
for bin in "$tmp/consumer/worker" "$extract"; do
	lib=$(ldd "$bin" | awk '/libblackbox\.so/ { print $3 }')
	[ "$lib" -ef "$libdir/libblackbox.so.0" ] || fail "$bin loads '$lib', not $libdir/libblackbox.so.0"
done

echo "== run the worker, kill -9 it"
"$tmp/consumer/worker" 2 0 >"$tmp/worker.out" &
pid=$!
for _ in $(seq 200); do
	[ -s "$tmp/worker.out" ] && break
	sleep 0.05
done
cat "$tmp/worker.out"
grep -q "^pid $pid box $boxes/" "$tmp/worker.out" || fail "worker did not report its box in $boxes"
sleep 0.3
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
killed=$pid
pid=

echo "== installed bb-extract --dir $boxes --list"
"$extract" --dir "$boxes" --list | tee "$tmp/list.txt"
grep -q "^$killed .* orphaned " "$tmp/list.txt" || fail "bb-extract --list does not show $killed orphaned"
echo "== installed bb-extract --dir $boxes $killed"
"$extract" --dir "$boxes" "$killed" >"$tmp/extract.txt" || fail "bb-extract exited $?"
n=$(wc -l <"$tmp/extract.txt")
tail -n 5 "$tmp/extract.txt"
grep -q "event=\"service started\"\|service started" "$tmp/extract.txt" ||
	fail "the worker's first record was not extracted"
grep -q "request" "$tmp/extract.txt" || fail "no request events extracted"
echo "== $n records extracted from the installed library's box"
