/* SPDX-License-Identifier: MIT */
/*
 * icount_driver.c - N write-path calls for the instruction budget test
 * (icount_budget.sh, suite 'perf'), counted by valgrind --tool=callgrind.
 *
 * Usage: perf-icount-driver OP N     OP: nop | clock | kv | i64
 *
 * bb_init(0) in $BLACKBOX_DIR, a warm-up of WARMUP calls (claims the
 * thread's ring, resolves lazy PLT bindings, wraps the ring so that every
 * measured record frees an old one: the steady state), then N calls inside
 * loop_OP(), the only code collected (--toggle-collect=loop_*).  The same
 * shape as bench/bench_icount.c, so the figures are comparable with
 * BENCHMARKS.md.
 */
#include <blackbox.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMUP 20000u
#define NOINLINE __attribute__((noinline, noclone))

static volatile uint64_t sink;

static void do_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sink += (uint64_t)ts.tv_nsec;
}

#define DEFINE_OP(name, body)                                            \
	NOINLINE static void warm_##name(unsigned n)                     \
	{ for (unsigned i = 0; i < n; i++) { body; } }                   \
	NOINLINE static void loop_##name(unsigned n)                     \
	{ for (unsigned i = 0; i < n; i++) { body; } }

DEFINE_OP(nop, __asm__ __volatile__("" ::: "memory"))
DEFINE_OP(clock, do_clock())
DEFINE_OP(kv, bb_write_kv("req", "GET /index"))
DEFINE_OP(i64, bb_write_i64((int64_t)i))

static const struct {
	const char *name;
	void (*warm)(unsigned);
	void (*fn)(unsigned);
} ops[] = {
	{ "nop", warm_nop, loop_nop },
	{ "clock", warm_clock, loop_clock },
	{ "kv", warm_kv, loop_kv },
	{ "i64", warm_i64, loop_i64 },
};

int main(int argc, char **argv)
{
	unsigned long n;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: perf-icount-driver nop|clock|kv|i64 N\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(argv[1], ops[i].name) || !n)
			continue;
		ret = bb_init(0);
		if (ret < 0) {
			fprintf(stderr, "bb_init: %s\n", strerror(-ret));
			return 1;
		}
		ops[i].warm(WARMUP);
		ops[i].fn((unsigned)n);
		return 0;
	}
	fprintf(stderr, "perf-icount-driver: bad operation or count\n");
	return 2;
}
