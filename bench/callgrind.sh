#!/bin/sh
# SPDX-License-Identifier: MIT
#
# callgrind.sh - instructions per write-path call, counted by valgrind
# --tool=callgrind (deterministic, unlike wall time).
#
# Usage: bench/callgrind.sh [--profile] [BENCH_ICOUNT ...]
#   BENCH_ICOUNT  the bench_icount binary (default: build-bench/bench/bench_icount
#                 and build-bench/bench/bench_icount_static if they exist, else
#                 build/bench/...)
#   --profile     also print, per bb_write_kv call, the instructions of every
#                 function on the path (self cost) with its share
#
# Method: bench_icount warms up (20000 calls: ring claimed, PLT resolved, ring
# wrapped so every record frees an old one), then makes N calls inside a
# noinline loop_OP() that is the only code collected (--toggle-collect).
# N = 1000 and N = 2000; (I(2000) - I(1000)) / 1000 is the cost of one
# iteration with entry/exit cancelled.  Reported:
#   per call    iteration cost minus the empty loop's (nop)
#   excl clock  iteration cost minus a bare clock_gettime loop's iteration
#               (same loop shape), i.e. the recorder's own work
# Under valgrind glibc's clock_gettime does not reach the vDSO (valgrind gives
# the client no vDSO), so "per call" counts only glibc's wrapper around the
# system call, not the ~50-100 instructions of the vDSO read; "excl clock" is
# unaffected.
# The clock: BLACKBOX_CLOCK, monotonic unless set (the "excl clock" column
# subtracts a clock_gettime loop, which is what a monotonic box's record
# calls; with BLACKBOX_CLOCK=tsc "per call" is the figure to read).
set -eu
: "${BLACKBOX_CLOCK:=monotonic}"
export BLACKBOX_CLOCK

profile=0
if [ "${1-}" = "--profile" ]; then
	profile=1
	shift
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "callgrind.sh: valgrind not found" >&2
	exit 77
fi
if [ $# -eq 0 ]; then
	for d in build-bench build; do
		if [ -x "$d/bench/bench_icount" ]; then
			set -- "$d/bench/bench_icount"
			[ -x "$d/bench/bench_icount_static" ] && set -- "$@" "$d/bench/bench_icount_static"
			break
		fi
	done
fi
if [ $# -eq 0 ]; then
	echo "callgrind.sh: no bench_icount binary; build first (ninja -C build)" >&2
	exit 2
fi

tmp=$(mktemp -d /tmp/bb-callgrind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Total collected instructions of "BIN OP N".
count() {
	valgrind --tool=callgrind --toggle-collect='loop_*' \
		--callgrind-out-file="$tmp/out" "$1" "$2" "$3" >"$tmp/log" 2>&1 ||
		{ cat "$tmp/log" >&2; exit 1; }
	sed -n 's/^totals: *//p' "$tmp/out" | head -n 1
}

# Instructions of one loop iteration of OP.
per_iter() {
	a=$(count "$1" "$2" 1000)
	b=$(count "$1" "$2" 2000)
	echo $(( (b - a) / 1000 ))
}

for bin in "$@"; do
	echo "instructions per call, $bin (valgrind $(valgrind --version | sed 's/valgrind-//'))"
	nop=$(per_iter "$bin" nop)
	clk=$(per_iter "$bin" clock)
	printf '  %-22s %9s %11s\n' operation "per call" "excl clock"
	printf '  %-22s %9d %11s\n' "loop overhead (nop)" "$nop" "-"
	printf '  %-22s %9d %11s\n' "clock_gettime (glibc)" $((clk - nop)) "-"
	for op in kv beat i64 str16 event4 span0 span1; do
		i=$(per_iter "$bin" "$op")
		case $op in
		kv) name="bb_write_kv" ;;
		beat) name="bb_heartbeat" ;;
		i64) name="bb_write_i64" ;;
		str16) name="bb_write_str 16 B" ;;
		event4) name="bb_write_event 4 f." ;;
		span0) name="span begin+end" ;;
		span1) name="span 1 f. begin+end" ;;
		esac
		printf '  %-22s %9d %11d\n' "$name" $((i - nop)) $((i - clk))
	done
	echo
done

if [ "$profile" = 1 ]; then
	bin=$1
	n=10000
	valgrind --tool=callgrind --toggle-collect='loop_*' --dump-instr=yes \
		--callgrind-out-file="$tmp/prof" "$bin" kv $n >"$tmp/log" 2>&1 ||
		{ cat "$tmp/log" >&2; exit 1; }
	echo "bb_write_kv profile, $bin: self instructions per call by function"
	# Lines look like "  1,234,567 (12.34%)  file:function [object]".
	callgrind_annotate --inclusive=no --auto=no --threshold=100 "$tmp/prof" 2>/dev/null |
		awk -v n=$n '
		/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1; next }
		total && /^ *[0-9,]+ +\(/ {
			ir = $1; gsub(",", "", ir)
			fn = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", fn)
			sub(/^.*:/, "", fn); sub(/ \[.*$/, "", fn)
			obj = $0; if (obj ~ /\[/) { sub(/^.*\[/, "", obj); sub(/\].*$/, "", obj); sub(/^.*\//, "", obj) } else obj = ""
			printf "  %7.1f  %5.1f%%  %s %s\n", ir / n, 100 * ir / total, fn, obj ? "(" obj ")" : ""
		}
		END { printf "  %7.1f  100.0%%  total per iteration\n", total / n }'
	echo
	echo "(callgrind_annotate --auto=yes --inclusive=no on a run with --dump-instr=yes"
	echo " shows the same per source line; objdump -d shows the PLT calls.)"
fi
