#!/bin/sh
# redis-crash.sh BUILD_DIR SOURCE_DIR - libblackbox in a real server with
# its own crash reporter: Redis, built from its source with libblackbox
# linked in (tests/redis/redis.patch: bb_init_opts(BB_OPT_CRASH_HANDLER)
# after Redis installs its signal handlers, bb_crash_record() in its
# serverPanic and serverAssert paths), then crashed three ways:
#  - DEBUG SEGFAULT: Redis's own crash report is complete (its "REDIS BUG
#    REPORT END" line, after its memory test) and the process dies of
#    SIGSEGV, as with libblackbox off; the box holds our crash record,
#    SIGSEGV in debugCommand (symbolised when bb-extract has libdw);
#  - DEBUG PANIC and DEBUG ASSERT: Redis's report is complete, the process
#    dies of SIGABRT; the box holds a "fatal" crash record whose reason is
#    the panic message or the failed assertion;
#  - DEBUG SEGFAULT again with BB_REDIS_INIT_EARLY=1 (bb_init_opts() before
#    Redis's handlers, bb_crash_rearm() after them): the same.
# Each crash is also run with BLACKBOX_DISABLE=1: same exit status, same
# complete report (Redis's report itself is not deterministic: see
# check()).
#
# The Redis source is not fetched here (CI has no network): set
# BB_REDIS_SRC to a clone of https://github.com/redis/redis (git clone
# --depth 1 https://github.com/redis/redis; building it once first with
# `make MALLOC=libc` makes this run rebuild only the patched files).  It is
# copied (never modified) to BB_REDIS_WORK (default: a temporary
# directory, removed after).  Without BB_REDIS_SRC the test is skipped
# (exit 77).  Needs make, a C compiler and the libblackbox build in
# BUILD_DIR (libblackbox.so, bb-extract).
set -eu
build=$(cd "${1:?usage: redis-crash.sh BUILD_DIR SOURCE_DIR}" && pwd)
root=$(cd "${2:?usage: redis-crash.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=${BB_REDIS_SRC:-}
if [ -z "$src" ] || [ ! -f "$src/src/server.c" ]; then
	echo "skipped: no Redis source (set BB_REDIS_SRC to a clone of" \
		"https://github.com/redis/redis; this test does not fetch it)"
	exit 77
fi
for t in make cc tar patch; do
	command -v "$t" >/dev/null 2>&1 || { echo "skipped: $t not found"; exit 77; }
done
extract=$build/extractor/bb-extract
lib=$build/libblackbox
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ -n "${BB_REDIS_WORK:-}" ]; then
	work=$BB_REDIS_WORK
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
ulimit -c 0    # the crashes are deliberate: no core files

echo "== copy $src to $work/redis, patch, build"
rm -rf "$work/redis" "$work/run"
mkdir -p "$work/redis" "$work/run"
# tar keeps the times: what was built before is not built again
(cd "$src" && tar --exclude=./.git -cf - .) | (cd "$work/redis" && tar -xf -)
patch -d "$work/redis" -p1 <"$root/tests/redis/redis.patch"
CPATH=$root/include${CPATH:+:$CPATH} \
	make -C "$work/redis/src" -j2 MALLOC=libc \
	BB_LIBS="-L$lib -Wl,-rpath,$lib -lblackbox" redis-server >"$work/build.log" 2>&1 ||
	{ tail -n 30 "$work/build.log"; fail "the Redis build failed"; }
server=$work/redis/src/redis-server
cli=$work/redis/src/redis-cli
[ -x "$cli" ] || make -C "$work/redis/src" -j2 MALLOC=libc redis-cli >>"$work/build.log" 2>&1 ||
	fail "no redis-cli"
ldd "$server" | grep -q "$lib/libblackbox.so" || fail "redis-server does not use $lib/libblackbox.so"

# crash NAME COMMAND [ENV=VALUE...]: start Redis in $work/run/NAME with
# the environment given, send DEBUG COMMAND, wait for its death; its exit
# status in $status, its pid in $pid, its log in $work/run/NAME/log.
crash() {
	c_dir=$work/run/$1 c_cmd=$2
	shift 2
	mkdir -p "$c_dir/boxes"
	env BLACKBOX_DIR="$c_dir/boxes" "$@" "$server" --port 0 --unixsocket "$c_dir/sock" \
		--enable-debug-command yes --save "" --appendonly no --dir "$c_dir" \
		--logfile "$c_dir/log" &
	pid=$!
	i=0
	until [ "$("$cli" -s "$c_dir/sock" ping 2>/dev/null)" = PONG ]; do
		i=$((i + 1))
		[ $i -lt 200 ] || { kill -9 "$pid"; fail "$c_dir: Redis did not start"; }
		sleep 0.05
	done
	"$cli" -s "$c_dir/sock" debug "$c_cmd" >/dev/null 2>&1 || true
	status=0
	wait "$pid" 2>/dev/null || status=$?
}

# complete NAME WANT: the run NAME died with exit status WANT, after
# Redis's complete crash report; else why not in $why
complete() {
	why=
	if [ "$status" != "$2" ]; then
		why="$1: exit status $status, not $2"
	elif ! grep -q 'REDIS BUG REPORT END' "$work/run/$1/log"; then
		why="$1: Redis's crash report is cut off"
	fi
	[ -z "$why" ]
}

# check NAME COMMAND STATUS [ENV=VALUE]: the crash without libblackbox,
# then with it: both end with exit status STATUS after Redis's complete
# report.  Redis's own crash report is not deterministic (its fast memory
# test scans the mappings of threads it is stopping, and once in a while
# dies of SIGSEGV with libblackbox disabled too): a pair where either run
# ends otherwise is tried again, three times at most.
check() {
	name=$1 cmd=$2 want=$3
	for try in 1 2 3; do
		rm -rf "$work/run/$name-off" "$work/run/$name"
		crash "$name-off" "$cmd" BLACKBOX_DISABLE=1
		if complete "$name-off" "$want"; then
			[ -z "$(ls "$work/run/$name-off/boxes")" ] ||
				fail "$name: BLACKBOX_DISABLE=1 left a box"
			crash "$name" "$cmd" ${4:+"$4"}
			complete "$name" "$want" && break
		fi
		echo "note: try $try: $why"
		tail -n 3 "$work/run/$name-off/log" "$work/run/$name/log" 2>/dev/null | cut -c1-160
		[ "$try" -lt 3 ] || fail "$why (three tries)"
	done
	echo "== $name: Redis's report (its end), exit status $status"
	grep -E 'crashed by signal|Guru Meditation|ASSERTION FAILED|==> |REDIS BUG REPORT END' \
		"$work/run/$name/log" | sed 's/^[0-9]*:M [^*#]*[*#] //' | head -n 6
	echo "== $name: bb-extract $pid"
	"$extract" --dir "$work/run/$name/boxes" "$pid" >"$work/run/$name/box.txt" \
		2>"$work/run/$name/box.err" || { cat "$work/run/$name/box.err"; fail "$name: bb-extract exited $?"; }
	sed -n '/^\*\*\*/,/^[0-9]/p' "$work/run/$name/box.txt" | head -n 16
	"$extract" --dir "$work/run/$name/boxes" --json "$pid" | head -n 1 >"$work/run/$name/crash.json"
}

# frame FILE NAME: the crash record's frames name NAME (when symbolised)
frame() {
	case $(cat "$1") in
	*'built without libdw'*) echo "bb-extract built without libdw: frames not named" ;;
	*"\"function\":\"$2\""*) ;;
	*) fail "no frame in $2: $(cut -c1-400 "$1")" ;;
	esac
}

check segv segfault 139
grep -q '^\*\*\* crashed: SIGSEGV (11), code SEGV_ACCERR (2), fault address 0x[0-9a-f]*, thread' \
	"$work/run/segv/box.txt" || fail "segv: no SIGSEGV crash record"
frame "$work/run/segv/crash.json" debugCommand

check panic panic 134
grep -q '^\*\*\* reason: panic: DEBUG PANIC called at Unix time [0-9]* (debug\.c:[0-9]*)$' \
	"$work/run/panic/box.txt" || fail "panic: no crash record with the panic's reason"
frame "$work/run/panic/crash.json" _serverPanic

check assert assert 134
grep -q "^\*\*\* reason: assertion failed: 1 == 2 (debug\.c:[0-9]*)$" \
	"$work/run/assert/box.txt" || fail "assert: no crash record with the assertion"
frame "$work/run/assert/crash.json" _serverAssert

check segv-early segfault 139 BB_REDIS_INIT_EARLY=1
grep -q '^\*\*\* crashed: SIGSEGV (11)' "$work/run/segv-early/box.txt" ||
	fail "segv-early: no SIGSEGV crash record (bb_crash_rearm)"
echo "redis: ok"
