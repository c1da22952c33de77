#!/bin/sh
# deb-test.sh - build the Debian packages from a copy of the tree with
# `dpkg-buildpackage -us -uc -b`, run lintian on them when it is installed,
# extract libblackbox0, libblackbox-dev and blackbox-tools into a scratch
# root, and prove they work from there: file lists, relationships, symbols
# against the library's real exports, maintainer scripts, systemd units,
# then a program built with the extracted -dev files only (pkg-config with
# a sysroot, shared and static), run, killed with SIGKILL, and its box read
# back with the extracted bb-extract and bb-reap; and the crash example,
# whose crash record the extracted bb-extract must print first.
#
#   sh scripts/deb-test.sh [--head] [--keep DIR]
#     --head      build what is committed (git archive HEAD) instead of the
#                 working tree (tracked and untracked, not ignored, files)
#     --keep DIR  copy the built .deb files to DIR
#
# DEB_BUILD_OPTIONS is passed through: the package build runs the Criterion
# suite (with Debian's compiler flags) unless it contains nocheck, which
# scripts/test.sh passes (its plain and ASan runs have run those suites on
# the same sources just before).  Needs
# dpkg-dev, debhelper and the Build-Depends of debian/control; exits 77
# (skipped) without dpkg-buildpackage or dh.  Run from anywhere.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
head=0
keep=
while [ $# -gt 0 ]; do
	case $1 in
	--head) head=1 ;;
	--keep) keep=${2:?--keep needs a directory}; shift ;;
	*) echo "usage: $0 [--head] [--keep DIR]" >&2; exit 2 ;;
	esac
	shift
done
for tool in dpkg-buildpackage dh dpkg-deb pkg-config cc; do
	command -v "$tool" >/dev/null 2>&1 || { echo "deb-test: no $tool: skipped"; exit 77; }
done

start=$(date +%s)
tmp=$(mktemp -d /tmp/bb-deb-test.XXXXXX)
# mktemp makes it 0700; the reaper tests run writers as another uid, which
# must be able to reach the built programs in the tree below.
chmod 755 "$tmp"
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "deb-test: FAIL: $*" >&2; exit 1; }
step() { echo "== deb-test: $*"; }

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
upstream=${version%-*}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
tree=$tmp/libblackbox-$upstream

step "copy of the tree in $tree"
mkdir "$tree"
if [ "$head" = 1 ]; then
	git -C "$src" archive HEAD | tar xf - -C "$tree"
else
	(cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 tar cf - --no-recursion) |
		tar xf - -C "$tree"
fi
[ -f "$tree/debian/control" ] || fail "no debian/ in the tree copy"

step "dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}')"
t0=$(date +%s)
(cd "$tree" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 ||
	{ tail -n 60 "$tmp/build.log"; cp "$tmp/build.log" /tmp/bb-deb-test-build.log
	  fail "dpkg-buildpackage (whole log: /tmp/bb-deb-test-build.log)"; }
t1=$(date +%s)
grep -E '^(Ok|Fail|Skipped|Timeout):' "$tmp/build.log" | tr -s ' ' | paste -sd' ' - || true
echo "packages built in $((t1 - t0)) s"

lib=$tmp/libblackbox0_${version}_$arch.deb
dev=$tmp/libblackbox-dev_${version}_$arch.deb
tools=$tmp/blackbox-tools_${version}_$arch.deb
for deb in "$lib" "$dev" "$tools"; do
	[ -f "$deb" ] || fail "$(basename "$deb") was not built"
done
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp "$tmp"/*.deb "$keep"/
fi

if command -v lintian >/dev/null 2>&1; then
	step "lintian (fails on errors; warnings are listed)"
	# initial-upload-closes-no-bugs: there is no Debian ITP bug to close.
	lintian --fail-on error --suppress-tags initial-upload-closes-no-bugs \
		"$tmp/libblackbox_${version}_$arch.changes" 2>&1 |
		grep -v 'running with root privileges' | tee "$tmp/lintian.txt" || true
	grep -q '^E: ' "$tmp/lintian.txt" && fail "lintian errors"
else
	step "lintian not installed: not run"
fi

step "relationships"
field() { dpkg-deb -f "$1" "$2"; }
echo "libblackbox0:    $(field "$lib" Depends)"
echo "libblackbox-dev: $(field "$dev" Depends)"
echo "blackbox-tools:  $(field "$tools" Depends)"
field "$dev" Depends | grep -q "libblackbox0 (= $version)" || fail "-dev does not pin libblackbox0 (= $version)"
! field "$dev" Depends | grep -q "libcbor" || fail "-dev depends on libcbor (libblackbox does not use it)"
field "$tools" Depends | grep -q "libblackbox0 (>= " || fail "blackbox-tools does not depend on libblackbox0"
! field "$lib" Depends | grep -q "libcbor" || fail "libblackbox0 depends on libcbor (libblackbox.so does not need it)"
[ "$(field "$lib" Multi-Arch)" = same ] || fail "libblackbox0 is not Multi-Arch: same"

step "extract into a scratch root"
root=$tmp/root
mkdir "$root"
for deb in "$lib" "$dev" "$tools"; do
	dpkg-deb -x "$deb" "$root"
	echo "$(basename "$deb"): $(dpkg-deb -c "$deb" | grep -vc '/$') files"
done
libdir=$root/usr/lib/$triplet
# what goes where: a file in the wrong package is a file missing here
in_pkg() { dpkg-deb -c "$1" | awk '{ print $6 }' | grep -qx "./$2" || fail "$(basename "$1") lacks /$2"; }
in_pkg "$lib" "usr/lib/$triplet/libblackbox.so.0"
in_pkg "$lib" "usr/lib/$triplet/libblackbox.so.$upstream"
in_pkg "$dev" "usr/lib/$triplet/libblackbox.so"
in_pkg "$dev" "usr/lib/$triplet/libblackbox.a"
in_pkg "$dev" "usr/lib/$triplet/pkgconfig/blackbox.pc"
in_pkg "$dev" "usr/include/blackbox.h"
in_pkg "$dev" "usr/include/blackbox.hpp"
in_pkg "$dev" "usr/include/blackbox/reader.h"
in_pkg "$dev" "usr/include/blackbox/format.h"
in_pkg "$dev" "usr/share/man/man3/bb_init.3.gz"
in_pkg "$dev" "usr/share/man/man3/bb_write_kv.3.gz"
in_pkg "$dev" "usr/share/man/man3/blackbox.hpp.3.gz"
in_pkg "$tools" "usr/bin/bb-extract"
in_pkg "$tools" "usr/sbin/bb-reap"
in_pkg "$tools" "usr/share/man/man1/bb-extract.1.gz"
in_pkg "$tools" "usr/share/man/man8/bb-reap.8.gz"
in_pkg "$tools" "usr/share/man/man7/blackbox.7.gz"
in_pkg "$tools" "lib/systemd/system/bb-reap.service"
in_pkg "$tools" "lib/systemd/system/bb-reap.timer"
in_pkg "$tools" "usr/lib/systemd/catalog/blackbox.catalog"
dpkg-deb -c "$lib" | awk '{ print $6 }' | grep -q 'man\|include\|\.a$\|/libblackbox\.so$' &&
	fail "libblackbox0 carries development files"
# every symlink (libblackbox.so, .so.0, man page aliases) resolves
broken=$(find "$root" -xtype l)
[ -z "$broken" ] || fail "dangling symlinks: $broken"
# every man3 alias page opens
n=0
for page in "$root"/usr/share/man/man3/*.3.gz; do
	zcat "$page" | grep -q '^\.TH ' || fail "$(basename "$page") does not open on a .TH page"
	n=$((n + 1))
done
echo "$n section 3 man pages open"

step "symbols file against the library's exports"
dpkg-deb -e "$lib" "$tmp/lib-control"
[ -f "$tmp/lib-control/symbols" ] || fail "libblackbox0 has no symbols file"
grep '^ ' "$tmp/lib-control/symbols" | awk '{ print $1 }' | sort >"$tmp/symbols.pkg"
nm -D --defined-only "$libdir/libblackbox.so.0" |
	awk '{ s = $3; sub(/@@/, "@", s); if (s !~ /@/) s = s "@" s; print s }' | sort >"$tmp/symbols.so"
diff "$tmp/symbols.pkg" "$tmp/symbols.so" || fail "symbols file and exported symbols differ (< symbols file, > library)"
echo "$(wc -l <"$tmp/symbols.so") exported symbols, all versioned, all in the symbols file"

step "maintainer scripts: bb-reap.timer enabled and started, bb-reap.service never started"
dpkg-deb -e "$tools" "$tmp/tools-control"
grep -q "deb-systemd-helper enable 'bb-reap.timer'" "$tmp/tools-control/postinst" || fail "postinst does not enable bb-reap.timer"
grep -q "deb-systemd-invoke \$_dh_action 'bb-reap.timer'" "$tmp/tools-control/postinst" || fail "postinst does not start bb-reap.timer"
grep -q "bb-reap.service" "$tmp/tools-control/postinst" && fail "postinst touches bb-reap.service"
grep -q 'rm -rf "${DPKG_ROOT:-}/var/lib/blackbox"' "$tmp/tools-control/postrm" || fail "postrm does not purge /var/lib/blackbox"

step "systemd units"
grep -qx 'ExecStart=/usr/sbin/bb-reap .*' "$root/lib/systemd/system/bb-reap.service" ||
	fail "bb-reap.service does not run /usr/sbin/bb-reap"
grep -qx 'ExecStart=/usr/sbin/bb-reap .* --journal' "$root/lib/systemd/system/bb-reap.service" ||
	fail "bb-reap.service does not run bb-reap --journal"
LD_LIBRARY_PATH="$libdir" "$root/usr/sbin/bb-reap" --help | grep -q -- '--journal' || fail "the packaged bb-reap has no --journal"
[ -x "$root/usr/sbin/bb-reap" ] || fail "no executable /usr/sbin/bb-reap"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify checks that ExecStart= exists: point it into the scratch root
	mkdir "$tmp/units"
	sed "s|^ExecStart=/usr/sbin/bb-reap|ExecStart=$root/usr/sbin/bb-reap|" \
		"$root/lib/systemd/system/bb-reap.service" >"$tmp/units/bb-reap.service"
	cp "$root/lib/systemd/system/bb-reap.timer" "$tmp/units/"
	SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
		"$tmp/units/bb-reap.service" "$tmp/units/bb-reap.timer" || fail "systemd-analyze verify"
	echo "systemd-analyze verify: ok"
fi

step "build a service against the extracted -dev package"
export PKG_CONFIG_SYSROOT_DIR="$root"
export PKG_CONFIG_LIBDIR="$libdir/pkgconfig:/usr/lib/$triplet/pkgconfig:/usr/share/pkgconfig"
flags=$(pkg-config --cflags --libs blackbox) || fail "pkg-config --cflags --libs blackbox"
echo "pkg-config: $flags"
case "$flags" in *"-L$libdir"*) ;; *) fail "pkg-config does not point into the scratch root" ;; esac
[ "$(pkg-config --modversion blackbox)" = "$upstream" ] || fail "blackbox.pc version is not $upstream"
# pkg-config needs every module blackbox.pc requires (Requires.private too,
# for --cflags): where only the -dev package and its dependencies are
# installed, each such module's .pc must come from a package it depends on
# (here the host has them all, so ask dpkg which package ships each)
devdeps=$(dpkg-deb -f "$dev" Depends | tr ',' '\n' | sed 's/^ *//; s/[ (:].*//' | sed '/^$/d')
for mod in $(sed -n 's/^Requires\(\.private\)\{0,1\}: *//p' "$libdir/pkgconfig/blackbox.pc" |
	     tr ', ' '\n\n' | sed -n '/^[A-Za-z]/p'); do
	pc=$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=pcfiledir "$mod")/$mod.pc ||
		fail "blackbox.pc requires $mod, which pkg-config cannot find"
	owner=$(dpkg -S "$pc" 2>/dev/null | sed -n '1s/[:,].*//p')
	[ -n "$owner" ] || fail "blackbox.pc requires $mod ($pc), which no package ships"
	echo "$devdeps" | grep -qx "$owner" ||
		fail "blackbox.pc requires $mod, but libblackbox-dev does not depend on $owner"
	echo "pkg-config module $mod: from $owner, a dependency of libblackbox-dev"
done
mkdir "$tmp/app"
cp "$src/examples/worker.c" "$tmp/app/"
# shellcheck disable=SC2086 # $flags is a list of words
(cd "$tmp/app" && cc -std=gnu11 -Wall -Werror -pthread -o worker worker.c $flags) ||
	fail "worker.c does not build against the extracted package"
# the static library: everything from libblackbox.a, nothing else
(cd "$tmp/app" && cc -std=gnu11 -Wall -Werror -pthread -I"$root/usr/include" -o worker-static worker.c \
	"$libdir/libblackbox.a") ||
	fail "worker.c does not link against the extracted libblackbox.a"
nm "$tmp/app/worker-static" | grep -q ' T bb_write_event$' || fail "worker-static did not take bb_write_event from libblackbox.a"

export LD_LIBRARY_PATH="$libdir"
boxes=$tmp/boxes
mkdir "$boxes"
export BLACKBOX_DIR="$boxes"
for bin in "$tmp/app/worker" "$root/usr/bin/bb-extract" "$root/usr/sbin/bb-reap"; do
	so=$(ldd "$bin" | awk '/libblackbox\.so/ { print $3 }')
	[ "$so" -ef "$libdir/libblackbox.so.0" ] || fail "$bin loads '$so', not the extracted libblackbox.so.0"
done

step "run it, kill -9 it, read its box with the extracted tools"
# poll a condition, at most 10 s: the waits are for events, not for time
within_10s() {
	for _ in $(seq 200); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
reported() { grep -q "^pid $pid box $boxes/" "$tmp/worker.out"; }
recorded() { "$root/usr/bin/bb-extract" --dir "$boxes" "$pid" 2>/dev/null | grep -q request; }
"$tmp/app/worker" 2 0 >"$tmp/worker.out" &
pid=$!
within_10s reported || fail "the worker did not report a box in $boxes"
within_10s recorded || fail "no request recorded in the live box"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
killed=$pid
pid=
"$root/usr/bin/bb-extract" --dir "$boxes" --list | tee "$tmp/list.txt"
grep -q "^$killed .* orphaned " "$tmp/list.txt" || fail "bb-extract --list does not show $killed orphaned"
"$root/usr/bin/bb-extract" --dir "$boxes" --json "$killed" >"$tmp/extract.json" ||
	fail "bb-extract --json exited $?"
grep -q '"service started"' "$tmp/extract.json" || fail "the first record is missing"
grep -q '"request"' "$tmp/extract.json" || fail "no request events"
tail -n 1 "$tmp/extract.json" | grep -q '^{"summary"' || fail "no summary line"
echo "$(($(wc -l <"$tmp/extract.json") - 1)) JSON lines before the summary"
"$root/usr/sbin/bb-reap" --dir "$boxes" --min-age 0 --dry-run --verbose 2>&1 | tee "$tmp/reap.txt"
grep -q "$killed" "$tmp/reap.txt" || fail "bb-reap --dry-run would not reap the box of $killed"
[ -n "$(ls "$boxes")" ] || fail "bb-reap --dry-run removed the box"

step "the crash example against the extracted packages: crash record first"
cp "$src/examples/crash.c" "$tmp/app/"
# shellcheck disable=SC2086 # $flags is a list of words
(cd "$tmp/app" && cc -std=gnu11 -Wall -Werror -pthread -g -o crash crash.c $flags) ||
	fail "crash.c does not build against the extracted package"
st=0
(ulimit -c 0; exec "$tmp/app/crash") >"$tmp/crash.out" 2>&1 || st=$?
[ "$st" = 139 ] || fail "the crash example exited $st, not 128 + SIGSEGV"
cpid=$(sed -n 's/^pid \([0-9]*\) box .*/\1/p' "$tmp/crash.out")
"$root/usr/bin/bb-extract" --dir "$boxes" --json "$cpid" >"$tmp/crash.json" || fail "bb-extract --json exited $?"
first=$(head -n 1 "$tmp/crash.json")
case $first in '{"type":"crash"'*'"signal_name":"SIGSEGV"'*) ;; *) fail "no SIGSEGV crash record first: $first" ;; esac
# the package's bb-extract is built with libdw: frame 0 is always named
case $first in *'"function":"apply_config"'*) ;; *) fail "frame 0 is not apply_config: $first" ;; esac
echo "crash record first: SIGSEGV in apply_config"

echo "deb-test: all checks passed in $(($(date +%s) - start)) s (package build $((t1 - t0)) s)"
