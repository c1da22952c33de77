#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/extract_bench.sh BUILD_DIR [ITER] - post-mortem extraction speed of
# bb-extract: one box holding 12 * ITER records (default ITER 90000, about
# 1.08 million records), read as text, JSON Lines and CBOR, written to a
# file with io_uring and with write(2); --perfetto the same way.  Best of 5 runs each; prints
# records/s and MB/s of output, and the best CPU time (user + system of
# bb-extract, from bash's `time`) with the records/s it stands for: on a
# shared, loaded machine the wall clock also counts waiting for a CPU.
# Then --all over 8 boxes of an eighth of that each: --uring (output with
# io_uring) against --no-uring.
# Benchmark, not a test: nothing is asserted.
set -euo pipefail
build=${1:?usage: extract_bench.sh BUILD_DIR [ITER]}
iter=${2:-90000}
bbx=$build/extractor/bb-extract
writer=$build/tests/extract/bbx_writer
work=$(mktemp -d "${TMPDIR:-/tmp}/bbx-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# one thread whose log holds every record: 2048 segments of 64 KiB (the
# segment table holds at most 4096)
BLACKBOX_DIR=$work "$writer" -t 1 -n "$iter" -c 2048 -R 65536 -s 150000000 _exit >/dev/null
box=$(ls "$work"/blackbox.*)
records=$("$bbx" --path "$box" --json --no-uring | tail -n 1 |
	  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["records"])')
echo "box: $(du -h --apparent-size "$box" | cut -f1), $records records; output to $work (filesystem: $(stat -f -c %T "$work"))"

now() { date +%s%N; }
# bash's `time` keyword reports the child's user and system time (from
# its rusage, microseconds) in TIMEFORMAT: "USER SYS" in seconds.
TIMEFORMAT='%6U %6S'
printf '%-6s %-9s %10s %12s %9s %8s %12s\n' format output "best ms" "Mrecords/s" "MB/s" \
	"cpu ms" "cpu Mrec/s"
for fmt in text json cbor perfetto; do
	case $fmt in text) f=--quiet ;; json) f=--json ;; cbor) f=--cbor ;; perfetto) f="--perfetto --quiet" ;; esac
	for io in uring plain; do
		best=
		bcpu=
		for run in 1 2 3 4 5; do
			rm -f "$work/out"
			t0=$(now)
			{ time "$bbx" --path "$box" $f "$([ $io = uring ] && echo --uring || echo --no-uring)" \
				> "$work/out" 2> "$work/err"; } 2> "$work/time"
			t1=$(now)
			ns=$((t1 - t0))
			cns=$(awk '{ printf "%.0f\n", ($1 + $2) * 1e9 }' "$work/time")
			if [ -z "$best" ] || [ "$ns" -lt "$best" ]; then best=$ns; fi
			if [ -z "$bcpu" ] || [ "$cns" -lt "$bcpu" ]; then bcpu=$cns; fi
		done
		bytes=$(stat -c %s "$work/out")
		awk -v ns="$best" -v c="$bcpu" -v n="$records" -v b="$bytes" -v f="$fmt" -v io="$io" \
			'BEGIN { printf "%-6s %-9s %10.1f %12.2f %9.0f %8.1f %12.2f\n", f, io, ns / 1e6, n / (ns / 1e9) / 1e6, b / (ns / 1e9) / 1e6, c / 1e6, (c > 0 ? n / (c / 1e9) / 1e6 : 0) }'
	done
done

# --all: 8 boxes, read one by one with pread, output with io_uring or write(2)
alldir=$work/all
mkdir "$alldir"
for i in 1 2 3 4 5 6 7 8; do
	BLACKBOX_DIR=$alldir "$writer" -t 1 -n $((iter / 8)) -c 256 -R 65536 -s 20000000 _exit >/dev/null
done
allrec=$("$bbx" --dir "$alldir" --all --json --no-uring |
	 /usr/bin/python3 -c 'import json,sys; print(sum(json.loads(l)["summary"]["records"] for l in sys.stdin if l.startswith("{\"summary\"")))')
echo "--all: 8 boxes, $(du -sh --apparent-size "$alldir" | cut -f1), $allrec records"
for fmt in text json; do
	case $fmt in text) f=--quiet ;; json) f=--json ;; esac
	for io in uring plain; do
		best=
		for run in 1 2 3 4 5; do
			rm -f "$work/out"
			t0=$(now)
			"$bbx" --dir "$alldir" --all $f "$([ $io = uring ] && echo --uring || echo --no-uring)" > "$work/out"
			t1=$(now)
			ns=$((t1 - t0))
			if [ -z "$best" ] || [ "$ns" -lt "$best" ]; then best=$ns; fi
		done
		bytes=$(stat -c %s "$work/out")
		awk -v ns="$best" -v n="$allrec" -v b="$bytes" -v f="all-$fmt" -v io="$io" \
			'BEGIN { printf "%-8s %-9s %10.1f %12.2f %9.0f\n", f, io, ns / 1e6, n / (ns / 1e9) / 1e6, b / (ns / 1e9) / 1e6 }'
	done
done
