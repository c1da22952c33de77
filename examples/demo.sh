#!/bin/sh
# demo.sh BUILD_DIR - start the instrumented worker service, let it run a
# moment, kill it with SIGKILL, and extract its box post mortem.
set -eu
build=${1:-build}
worker="$build/examples/bb-demo-worker"
extract="$build/extractor/bb-extract"
reap="$build/reaper/bb-reap"
# Boxes live in /dev/shm, or in $BLACKBOX_DIR when set (the tools then
# take --dir).
dir=${BLACKBOX_DIR:-/dev/shm}

out=$(mktemp)
"$worker" 4 > "$out" &
pid=$!
# wait for the worker to report its box
for _ in $(seq 100); do
	[ -s "$out" ] && break
	sleep 0.05
done
cat "$out"
rm -f "$out"
sleep 0.5
echo "== kill -9 $pid"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true

echo "== bb-extract --list"
"$extract" --dir "$dir" --list
echo "== bb-extract $pid (last 25 records)"
"$extract" --dir "$dir" "$pid" > "$build/demo-extract.txt"
sed '/^== open spans/,$d' "$build/demo-extract.txt" | tail -n 25
grep -q "request" "$build/demo-extract.txt"   # the workers' events are there
# State annotations (bb_set) come before the records: the latest value of
# each key, here the request each worker was handling when it was killed.
echo "== the state table (bb_set), as bb-extract prints it before the records"
grep '^[^ ]* state ' "$build/demo-extract.txt" | sort -k 3
grep -q '^[^ ]* state config.version=3$' "$build/demo-extract.txt"
grep -q '^[^ ]* state worker-0.request=' "$build/demo-extract.txt"
echo "== $(wc -l < "$build/demo-extract.txt") records extracted to $build/demo-extract.txt"
# What each worker was inside when it was killed (bb_span_begin), after
# the records.
echo "== open spans at the kill"
sed -n '/^== open spans/,$p' "$build/demo-extract.txt"
grep -q ' inside db.query{table=orders} ' "$build/demo-extract.txt"
# The same box as a Perfetto timeline: open it in https://ui.perfetto.dev
"$extract" --dir "$dir" --perfetto "$pid" > "$build/demo-extract.pftrace"
echo "== $build/demo-extract.pftrace: $(wc -c < "$build/demo-extract.pftrace") bytes, open it in https://ui.perfetto.dev"
echo "== bb-extract --json $pid (last record)"
"$extract" --dir "$dir" --json "$pid" | tail -n 2
# The box stays for post-mortem work until bb-reap (run by its systemd
# timer) removes it; show what the reaper would do now, touching nothing.
echo "== bb-reap --dry-run --min-age 0"
"$reap" --dir "$dir" --min-age 0 --dry-run --verbose
