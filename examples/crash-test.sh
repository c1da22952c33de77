#!/bin/sh
# crash-test.sh CRASH_EXAMPLE BB_EXTRACT [SANITIZE] - run examples/crash.c
# with and without the crash handler and check what a crash leaves:
#  - both runs die of SIGSEGV with the same wait status (the handler
#    changes nothing the shell, a supervisor or systemd sees);
#  - the box is marked crashed, and its crash record (read with the reader
#    API by `bb-crash-example --inspect`) says SIGSEGV at address 0 in the
#    thread "parser", with the faulting PC inside apply_config() (checked
#    against the program's symbol table with nm, module bias applied);
#  - the state annotations (bb_set) and the records before the crash are
#    there, and bb-extract lists the box as crashed and extracts it;
#  - bb-extract --json prints the crash record first (SIGSEGV, thread
#    parser, frame 0 symbolised to apply_config when bb-extract has libdw),
#    then the state table, then the records.
# Boxes go to a private directory.  Exit 77 (skipped) in a sanitizer build:
# the sanitizer's own SIGSEGV handler decides the exit status there.
set -eu
crash=${1:?usage: crash-test.sh CRASH_EXAMPLE BB_EXTRACT [SANITIZE]}
extract=${2:?usage: crash-test.sh CRASH_EXAMPLE BB_EXTRACT [SANITIZE]}
case ${3:-none} in
none | '') ;;
*) echo "sanitizer build (${3}): skipped"; exit 77 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BLACKBOX_DIR="$tmp"
unset BLACKBOX_DISABLE BLACKBOX_CRASH_HANDLER
ulimit -c 0    # the crashes are deliberate: no core files
fail() { echo "FAIL: $*" >&2; exit 1; }

# SIGSEGV is 11 on every Linux architecture; a shell reports 128 + 11.
segv=139
st_off=0
"$crash" --no-handler >"$tmp/off.out" 2>&1 || st_off=$?
st_on=0
"$crash" >"$tmp/on.out" 2>&1 || st_on=$?
cat "$tmp/on.out"
echo "exit status without the handler $st_off, with it $st_on"
[ "$st_off" = "$segv" ] || fail "without the handler the example did not die of SIGSEGV ($st_off)"
[ "$st_on" = "$st_off" ] || fail "the crash handler changed the exit status: $st_off -> $st_on"

pid=$(sed -n 's/^pid \([0-9]*\) box .* crash handler on$/\1/p' "$tmp/on.out")
box=$(sed -n 's/^pid [0-9]* box \(.*\) crash handler on$/\1/p' "$tmp/on.out")
[ -n "$pid" ] && [ -f "$box" ] || fail "no box left by the crashed example"

echo "== bb-crash-example --inspect $box"
"$crash" --inspect "$box" >"$tmp/inspect.txt" || fail "--inspect exited $?"
cat "$tmp/inspect.txt"
has() { grep -q "$1" "$tmp/inspect.txt" || fail "--inspect: no line matching '$1'"; }
has '^owner crashed$'
has '^crash complete$'
has '^signal 11 (.*) code [0-9-]* addr 0x0 tid [0-9]* thread parser$'
has '^state request\.id=5$'
has '^state config\.version=7$'
has '^state stage="applying config"$'

# frame 0 is the faulting PC: its offset in the main program must fall
# inside apply_config as the symbol table has it.
line=$(grep '^frame 0 ' "$tmp/inspect.txt") || fail "no frame 0"
off=$(echo "$line" | sed -n 's/.*+0x\([0-9a-f]*\)$/\1/p')
[ -n "$off" ] || fail "frame 0 is in no module: $line"
sym=$(nm --defined-only -S "$crash" | awk '$4 == "apply_config" { print $1, $2 }')
[ -n "$sym" ] || fail "apply_config is not in the symbol table of $crash"
set -- $sym
in_fn=no    # POSIX shell arithmetic takes 0x hexadecimal constants
[ $((0x$off)) -ge $((0x$1)) ] && [ $((0x$off)) -lt $((0x$1 + 0x$2)) ] && in_fn=yes
[ "$in_fn" = yes ] || fail "frame 0 (offset 0x$off) is not inside apply_config (0x$1, size 0x$2)"
echo "frame 0 is inside apply_config (0x$1, size 0x$2)"

echo "== bb-extract --list"
"$extract" --dir "$tmp" --list | tee "$tmp/list.txt"
grep -q "^$pid .* crashed " "$tmp/list.txt" || fail "bb-extract --list does not show $pid crashed"
echo "== bb-extract --json $pid"
rc=0
"$extract" --dir "$tmp" --json "$pid" >"$tmp/extract.json" 2>"$tmp/extract.err" || rc=$?
head -n 3 "$tmp/extract.json"
[ "$rc" = 0 ] || { cat "$tmp/extract.err"; fail "bb-extract --json exited $rc"; }
grep -q '"about to apply config 8"' "$tmp/extract.json" || fail "the last record before the crash is missing"
# The crash record comes first, then the state table, then the records.
first=$(head -n 1 "$tmp/extract.json")
case $first in '{"type":"crash"'*) ;; *) fail "the first --json line is not the crash record: $first" ;; esac
case $first in *'"status":"complete"'*) ;; *) fail "the crash record is not complete: $first" ;; esac
case $first in *'"signal":11,'*'"signal_name":"SIGSEGV"'*) ;; *) fail "the crash record does not say SIGSEGV: $first" ;; esac
case $first in *'"thread":"parser"'*) ;; *) fail "the crash record does not name the thread parser" ;; esac
# frame 0 symbolised (unless bb-extract was built without libdw)
case $first in
*'built without libdw'*) echo "bb-extract built without libdw: frame 0 not named" ;;
*'"frames":[{'*'"function":"apply_config"'*) ;;
*) fail "frame 0 of the crash record is not apply_config: $first" ;;
esac
state=$(grep -n '"type":"state"' "$tmp/extract.json" | head -n 1 | cut -d: -f1)
record=$(grep -n '"type":"kv"' "$tmp/extract.json" | head -n 1 | cut -d: -f1)
[ -n "$state" ] && [ -n "$record" ] && [ "$state" -lt "$record" ] ||
	fail "the state table does not come before the records"
grep -q '"type":"state",.*"key":"request.id","value":5}' "$tmp/extract.json" ||
	fail "bb-extract does not show the state request.id=5"
echo "bb-extract: crash record first (SIGSEGV in apply_config), then state, then records"
echo "crash example: ok"
