#!/bin/sh
# SPDX-License-Identifier: MIT
#
# icount_budget.sh - the instruction budgets of the write paths: fails when
# one of them costs more instructions per call, excluding the clock read,
# than its budget below.  Every inline path has one (bb_write_kv with
# literals, with strings known only at run time of 3 + 10 and of 16 + 64
# bytes, bb_write_kv_i64/_u64/_f64 with a literal key, bb_write_event with
# 4 fields), and so have the library's bb_write_kvn (the literal pair's
# record), bb_write_i64 and a 4 KiB bb_write_bytes (the CRC streams).
# Instruction counts
# are deterministic (valgrind --tool=callgrind), unlike wall time: this is
# the one performance figure a test asserts.  Budgets and their derivation:
# BENCHMARKS.md, "Instruction budget".
#
# And the C++ API adds nothing: blackbox::write(key, value) of
# <blackbox.hpp> with std::string_views of literals, with run-time views and
# with an int64 value costs the instructions of the C call it stands for
# (bb_write_kv() of the literals, bb_write_kvn(), bb_write_kv_i64())
# compiled in the same C++ program, at most one more (register
# allocation around the same inline path).
#
# Usage: icount_budget.sh DRIVER OPTIMIZATION SANITIZE [CXXDRIVER]
#   DRIVER        perf-icount-driver (built from bench/bench_icount.c)
#   OPTIMIZATION  meson's get_option('optimization'); budgets hold for 2, 3
#   SANITIZE      meson's get_option('b_sanitize'); budgets hold for none
#   CXXDRIVER     perf-icount-driver-cxx (bench/bench_icount_cxx.cpp), when
#                 there is a C++ compiler
# Exit 77 (skipped) without valgrind or in a build the budgets are not for.
#
# Method: callgrind collects only the measured loop (--toggle-collect=loop_*)
# after a warm-up that wraps the ring; N = 1000 and N = 2000 calls, and
# (I(2000) - I(1000)) / 1000 is the cost of one loop iteration with the
# loop's entry and exit cancelled.  Subtracting the iteration of a bare
# clock_gettime(CLOCK_MONOTONIC) loop of the same shape leaves the
# recorder's own instructions.  (Valgrind gives the client no vDSO: the
# clock is glibc's wrapper plus a system call in both loops, and cancels.)
set -eu

# Budgets: measured + ~10% (BENCHMARKS.md "Instruction budget"), with the
# format 2.0 defaults (CRC32C trailer on every record, computed inline with
# SSE4.2).
BUDGET_KV=86
BUDGET_KVLIB=198
BUDGET_KVRUN=220
BUDGET_KVRUN64=306
BUDGET_KVI64=112
BUDGET_KVU64=113
BUDGET_KVF64=91
BUDGET_I64=160
BUDGET_EVENT4=206
BUDGET_BYTES4K=2190

if [ $# -ne 3 ] && [ $# -ne 4 ]; then
	echo "usage: icount_budget.sh DRIVER OPTIMIZATION SANITIZE [CXXDRIVER]" >&2
	exit 2
fi
driver=$1
cxxdriver=${4:-}
case $2 in
2|3) ;;
*) echo "SKIP: budgets are for -O2/-O3 builds (optimization=$2)"; exit 77 ;;
esac
if [ "$3" != none ]; then
	echo "SKIP: budgets are for builds without sanitizers (b_sanitize=$3)"
	exit 77
fi
if ! command -v valgrind >/dev/null 2>&1; then
	echo "SKIP: valgrind not found"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bb-perf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/box"
BLACKBOX_DIR=$tmp/box
export BLACKBOX_DIR
unset BLACKBOX_DISABLE BLACKBOX_SIZE 2>/dev/null || true
# The budgets count a record excluding its clock read, measured by
# subtracting a clock_gettime(CLOCK_MONOTONIC) loop: they are for the
# monotonic clock, whatever bb_init() would choose by default here (valgrind
# reports an invariant TSC, and the TSC is then the default).
BLACKBOX_CLOCK=monotonic
export BLACKBOX_CLOCK

# Total collected instructions of "DRIVER OP N" (the C++ driver for the
# cxx* operations).
count() {
	d=$driver
	case $1 in cxx*) d=$cxxdriver ;; esac
	valgrind --tool=callgrind --toggle-collect='loop_*' \
		--callgrind-out-file="$tmp/out" "$d" "$1" "$2" >"$tmp/log" 2>&1 ||
		{ echo "valgrind $d $1 $2 failed:" >&2; cat "$tmp/log" >&2; exit 1; }
	t=$(sed -n 's/^totals: *//p' "$tmp/out" | head -n 1)
	[ -n "$t" ] || { echo "no totals in callgrind output" >&2; exit 1; }
	echo "$t"
}

# Instructions of one loop iteration of OP.
per_iter() {
	a=$(count "$1" 1000)
	b=$(count "$1" 2000)
	echo $(( (b - a) / 1000 ))
}

clk=$(per_iter clock)
fail=0
for op in kv kvlib kvrun kvrun64 kvi64 kvu64 kvf64 i64 event4 bytes4k; do
	case $op in
	kv) budget=$BUDGET_KV; name="bb_write_kv literals (inline)" ;;
	kvlib) budget=$BUDGET_KVLIB; name="bb_write_kvn (library)" ;;
	kvrun) budget=$BUDGET_KVRUN; name="bb_write_kv run-time 3+10 B (inline)" ;;
	kvrun64) budget=$BUDGET_KVRUN64; name="bb_write_kv run-time 16+64 B (inline)" ;;
	kvi64) budget=$BUDGET_KVI64; name="bb_write_kv_i64 (inline)" ;;
	kvu64) budget=$BUDGET_KVU64; name="bb_write_kv_u64 (inline)" ;;
	kvf64) budget=$BUDGET_KVF64; name="bb_write_kv_f64 (inline)" ;;
	i64) budget=$BUDGET_I64; name="bb_write_i64 (library)" ;;
	event4) budget=$BUDGET_EVENT4; name="bb_write_event 4 fields (inline)" ;;
	bytes4k) budget=$BUDGET_BYTES4K; name="bb_write_bytes 4 KiB (library)" ;;
	esac
	r=$(per_iter $op)
	eval "raw_$op=\$r"
	i=$(( r - clk ))
	if [ "$i" -le 0 ]; then
		echo "FAIL: $name: implausible count $i (clock loop $clk)"
		fail=1
	elif [ "$i" -gt "$budget" ]; then
		echo "FAIL: $name: $i instructions per call excl. clock > budget $budget"
		fail=1
	else
		echo "ok: $name: $i instructions per call excl. clock <= budget $budget"
	fi
done

# The C++ calls against the same C calls compiled as C++ (cxxc*): equal,
# or at most one instruction more, where the optimiser allocates registers
# differently around the same inline path.  The C calls compiled as C are
# shown beside them.
if [ -n "$cxxdriver" ]; then
	for triple in kv:cxxckv:cxxkv kvnrun:cxxckvnrun:cxxkvrun kvi64:cxxckvi64:cxxkvi64; do
		cop=${triple%%:*} rest=${triple#*:}
		ccop=${rest%%:*} xop=${rest#*:}
		eval "c=\${raw_$cop:-}"
		[ -n "$c" ] || c=$(per_iter "$cop")
		cc=$(per_iter "$ccop")
		x=$(per_iter "$xop")
		if [ "$x" -gt $((cc + 1)) ]; then
			echo "FAIL: $xop: $x instructions per call, the C call compiled as C++ $cc (as C: $c)"
			fail=1
		else
			echo "ok: $xop: $x instructions per call, the C call compiled as C++ $cc (as C: $c)"
		fi
	done
fi
exit $fail
