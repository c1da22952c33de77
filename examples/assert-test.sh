#!/bin/sh
# assert-test.sh ASSERT_EXAMPLE BB_EXTRACT - run examples/assert.c and check
# what a failed CHECK() leaves:
#  - the process dies of SIGABRT (abort(), as assert() would);
#  - bb-extract --list shows the box crashed (SIGABRT);
#  - the text crash block says "fatal", then how it ended with the reason
#    ("aborted (SIGABRT) after: ", the condition,
#    the function and the line) and the thread "loader";
#  - bb-extract --json's crash record has kind "fatal" and the reason, and
#    (when bb-extract has libdw) its frames name check_failed, then
#    load_config, the function whose check failed.
# Boxes go to a private directory.
set -eu
prog=${1:?usage: assert-test.sh ASSERT_EXAMPLE BB_EXTRACT}
extract=${2:?usage: assert-test.sh ASSERT_EXAMPLE BB_EXTRACT}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BLACKBOX_DIR="$tmp"
unset BLACKBOX_DISABLE BLACKBOX_CRASH_HANDLER
ulimit -c 0    # the abort is deliberate: no core file
fail() { echo "FAIL: $*" >&2; exit 1; }

st=0
"$prog" >"$tmp/out" 2>"$tmp/err" || st=$?
cat "$tmp/out" "$tmp/err"
# SIGABRT is 6: a shell reports 128 + 6.
[ "$st" = 134 ] || fail "the example did not die of SIGABRT (exit status $st)"
pid=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$tmp/out")
[ -n "$pid" ] || fail "the example printed no pid"

echo "== bb-extract --list"
"$extract" --dir "$tmp" --list | tee "$tmp/list.txt"
grep -q "^$pid .* crashed (SIGABRT) " "$tmp/list.txt" || fail "--list does not show $pid crashed (SIGABRT)"

echo "== bb-extract $pid"
"$extract" --dir "$tmp" "$pid" >"$tmp/text.txt" 2>"$tmp/text.err" || fail "bb-extract exited $?"
head -n 6 "$tmp/text.txt"
sed -n 1p "$tmp/text.txt" | grep -q '^\*\*\* fatal: thread [0-9]* (loader), at ' ||
	fail "the first line is not the fatal crash of the thread loader"
sed -n 2p "$tmp/text.txt" |
	grep -q '^\*\*\* aborted (SIGABRT) after: CHECK(c->workers <= c->max_workers) failed in load_config() at assert\.c:[0-9]*$' ||
	fail "the second line is not how it ended with the reason"
grep -q 'state config.workers=64' "$tmp/text.txt" || fail "the state before the check is missing"

echo "== bb-extract --json $pid"
"$extract" --dir "$tmp" --json "$pid" >"$tmp/x.json" 2>"$tmp/x.err" || fail "bb-extract --json exited $?"
first=$(head -n 1 "$tmp/x.json")
case $first in '{"type":"crash","level":"crash","status":"complete","kind":"fatal",'*) ;; *) fail "no fatal crash record first: $first" ;; esac
case $first in *'"reason":"CHECK(c->workers <= c->max_workers) failed in load_config() at assert.c:'*) ;;
*) fail "the JSON crash record has not the reason: $first" ;; esac
case $first in *'"thread":"loader"'*) ;; *) fail "the JSON crash record does not name the thread loader" ;; esac
case $first in
*'built without libdw'*) echo "bb-extract built without libdw: frames not named" ;;
*'"frames":[{'*'"function":"check_failed"'*'"function":"load_config"'*) ;;
*) fail "the frames are not check_failed, then load_config: $first" ;;
esac
echo "assert example: ok"
