#!/bin/sh
# corpus-check.sh OLD NEW [DIR] - run two builds of bb-extract over the same
# corpus of boxes in every output mode and show what differs.
#
# OLD and NEW are build directories (each with extractor/bb-extract).  The
# corpus is fuzz/corpus plus the boxes tests/corpus/gen_corpus.c writes
# (built in NEW): random records of every tag, tricky values, malformed
# CBOR, damaged copies.  Each box is extracted as text, --json and --cbor
# (stdout, stderr and exit status kept), then the directory with --list
# (text and JSON; the age column removed) and --all.  Output goes to DIR
# (default: a temporary directory, removed unless something differs).
# Exit 0 when every output is byte-identical, 1 otherwise (diff printed).
#
# Use it before and after a change that must not change output:
#   git worktree add /tmp/base main && meson setup /tmp/base/build /tmp/base && ninja -C /tmp/base/build
#   sh scripts/corpus-check.sh /tmp/base/build build
set -eu
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
keep=${3:-}
work=${3:-$(mktemp -d)}
mkdir -p "$work/boxes" "$work/old" "$work/new"

ninja -C "$new" tests/corpus/gen-corpus >/dev/null
"$new/tests/corpus/gen-corpus" "$work/boxes"
for f in "$root"/fuzz/corpus/*; do
	cp "$f" "$work/boxes/blackbox.seed.$(basename "$f")"
done
chmod 0600 "$work/boxes"/*

run() { # build outdir
	x=$1/extractor/bb-extract
	o=$2
	for f in "$work/boxes"/blackbox.*; do
		b=$(basename "$f")
		for m in text json cbor; do
			case $m in
			text) a="" ;;
			*) a="--$m" ;;
			esac
			rc=0
			"$x" --no-symbols $a --path "$f" >"$o/$b.$m.out" 2>"$o/$b.$m.err" || rc=$?
			echo "$rc" >"$o/$b.$m.rc"
		done
	done
	rc=0
	"$x" --list --dir "$work/boxes" 2>"$o/list.err" |
		sed -E 's/^(.{95})[0-9]+[smhd] +/\1AGE    /' >"$o/list.out" || rc=$?
	echo "$rc" >"$o/list.rc"
	"$x" --list --json --dir "$work/boxes" 2>"$o/list-json.err" |
		sed -E 's/"age_s":[0-9]+/"age_s":0/' >"$o/list-json.out" || true
	rc=0
	"$x" --all --no-symbols --dir "$work/boxes" >"$o/all.out" 2>"$o/all.err" || rc=$?
	echo "$rc" >"$o/all.rc"
}

run "$old" "$work/old"
run "$new" "$work/new"
if diff -r "$work/old" "$work/new" >"$work/diff.txt"; then
	echo "corpus-check: $(ls "$work/boxes" | wc -l) boxes, every output identical"
	[ -n "$keep" ] || rm -rf "$work"
	exit 0
fi
echo "corpus-check: outputs differ (kept in $work):"
cat "$work/diff.txt"
exit 1
