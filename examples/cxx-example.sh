#!/bin/sh
# cxx-example.sh CXX_EXAMPLE BB_EXTRACT VERSION - run examples/cxx_example.cpp
# (<blackbox.hpp>) and read the box it leaves with bb-extract: each record
# type it wrote is there (text, i64, bool, key/value of each type, events,
# the important record, the state table), and its own dump printed them;
# run again with "crash", the uncaught std::runtime_error is in the crash
# section, text and JSON.  Boxes go to a private directory.
set -eu
example=$1 extract=$2 version=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BLACKBOX_DIR="$tmp"
unset BLACKBOX_DISABLE BLACKBOX_CRASH_HANDLER
ulimit -c 0
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || { cat "$1"; fail "no '$2' in $(basename "$1")"; }; }

"$example" "$version" >"$tmp/dump.txt" || fail "bb-cxx-example failed"
expect "$tmp/dump.txt" "order.placed"
box=$(ls "$tmp"/blackbox.*)
"$extract" --path "$box" >"$tmp/out" 2>/dev/null || fail "bb-extract failed"
cat "$tmp/out"
for want in "state config.version=3" "state config.region=eu-west" ' "shop starting"' \
	" -1" " true" " retries=-2" " cache=true" " order=o-1001" " quantity=2" \
	" total=25" " order.placed id=o-1001 sku=BOOK-42 quantity=2 price=12.5 gift=false" \
	" order.placed id=o-1002 sku=PEN-7 quantity=10 price=0.99 gift=false" \
	' audit="price list reloaded"' ' begin handle id=o-1001 depth=1' ' end depth=1'; do
	expect "$tmp/out" "$want"
done
rm -f "$box"

st=0
"$example" "$version" crash >/dev/null 2>&1 || st=$?
[ "$st" = 134 ] || fail "crash: exit status $st, want 134 (SIGABRT)"
box=$(ls "$tmp"/blackbox.*)
"$extract" --path "$box" >"$tmp/out" 2>/dev/null || fail "bb-extract failed"
"$extract" --json --path "$box" >"$tmp/json" 2>/dev/null || fail "bb-extract --json failed"
sed -n '1,3p' "$tmp/out"
expect "$tmp/out" "*** aborted (SIGABRT) after: uncaught exception std::runtime_error: config missing: payment.gateway"
expect "$tmp/json" '"reason":"uncaught exception std::runtime_error: config missing: payment.gateway"'
echo "ok"
