/* SPDX-License-Identifier: MIT */
/*
 * bench_shadow - how much of a writer's own work hides behind the clock
 * read, for the default clock (clock_gettime through the vDSO) and for a
 * bare rdtsc (BB_CLOCK_TSC).  No library call: this measures the machine,
 * to explain the bench_floor ratios (BENCHMARKS.md "Write path against the clock").
 *
 * Each loop reads the clock once per iteration and does K units of
 * synthetic work next to it:
 *   after, chain   K dependent adds after the read, not using its value
 *   after, 4 ways  K adds in four independent chains after the read
 *   before, 4 ways the same before the read
 *   on the stamp   K dependent adds on the value read (the stamp's own
 *                  post-processing: conversion, checksum)
 * and the figure is the extra cost over the bare loop, in timer ticks per
 * iteration and per unit.  Work that overlaps the clock read is free;
 * work that cannot costs its throughput (about 1/4 tick per add on four
 * ALUs) or its latency (1 tick per dependent add).  Minimum of B batches of
 * N iterations, as in bench_floor.  Benchmark, not a test.
 *
 * Usage: bench_shadow [-b BATCHES] [-n CALLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "baselines.h"

static unsigned long ncalls = 1000, nbatch = 2000;
static volatile uint64_t sink;

#if BT_HAVE_RDTSC
#define READ_TSC() __rdtsc()
#else
#define READ_TSC() bt_mono_ns()
#endif

static inline uint64_t read_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One add the compiler can neither fold nor move: the work unit. */
#define ADD1(x) __asm__ __volatile__("add $1, %0" : "+r"(x))
#define ADD4(a, b, c, d)                                                 \
	__asm__ __volatile__("add $1, %0\n\tadd $1, %1\n\tadd $1, %2\n\tadd $1, %3" \
			     : "+r"(a), "+r"(b), "+r"(c), "+r"(d))

/* The loops, for both clocks.  K is a compile-time constant per instance. */
#define LOOPS(tag, READ)                                                 \
	static __attribute__((noinline)) void tag##_bare(unsigned k)     \
	{                                                                \
		(void)k;                                                 \
		for (unsigned long i = 0; i < ncalls; i++)               \
			sink += READ;                                    \
	}                                                                \
	static __attribute__((noinline)) void tag##_after_chain(unsigned k) \
	{                                                                \
		uint64_t x = sink;                                       \
		for (unsigned long i = 0; i < ncalls; i++) {             \
			sink += READ;                                    \
			for (unsigned j = 0; j < k; j++)                 \
				ADD1(x);                                 \
		}                                                        \
		sink = x;                                                \
	}                                                                \
	static __attribute__((noinline)) void tag##_after_4(unsigned k)  \
	{                                                                \
		uint64_t a = sink, b = a + 1, c = a + 2, d = a + 3;      \
		for (unsigned long i = 0; i < ncalls; i++) {             \
			sink += READ;                                    \
			for (unsigned j = 0; j < k / 4; j++)             \
				ADD4(a, b, c, d);                        \
		}                                                        \
		sink = a + b + c + d;                                    \
	}                                                                \
	static __attribute__((noinline)) void tag##_before_4(unsigned k) \
	{                                                                \
		uint64_t a = sink, b = a + 1, c = a + 2, d = a + 3;      \
		for (unsigned long i = 0; i < ncalls; i++) {             \
			for (unsigned j = 0; j < k / 4; j++)             \
				ADD4(a, b, c, d);                        \
			sink += READ;                                    \
		}                                                        \
		sink = a + b + c + d;                                    \
	}                                                                \
	static __attribute__((noinline)) void tag##_on_stamp(unsigned k) \
	{                                                                \
		for (unsigned long i = 0; i < ncalls; i++) {             \
			uint64_t x = READ;                               \
			for (unsigned j = 0; j < k; j++)                 \
				ADD1(x);                                 \
			sink += x;                                       \
		}                                                        \
	}

LOOPS(cg, read_clock())
LOOPS(tsc, READ_TSC())

typedef void (*loop_fn)(unsigned);

/* Minimum ticks per iteration over the batches. */
static double best(loop_fn f, unsigned k)
{
	double m = 1e30;

	for (unsigned long b = 0; b < nbatch + nbatch / 10; b++) {
		uint64_t t0 = bt_tick_begin();

		f(k);
		uint64_t t1 = bt_tick_end();
		double per = (double)(t1 - t0) / (double)ncalls;

		if (b >= nbatch / 10 && per < m)
			m = per;
	}
	return m;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_shadow [-b BATCHES] [-n CALLS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const unsigned ks[] = { 8, 16, 32, 64 };
	const struct {
		const char *name;
		loop_fn bare, after_chain, after_4, before_4, on_stamp;
	} clk[] = {
		{ "clock_gettime(MONOTONIC)", cg_bare, cg_after_chain, cg_after_4,
		  cg_before_4, cg_on_stamp },
		{ BT_HAVE_RDTSC ? "rdtsc" : "clock_gettime (no rdtsc here)", tsc_bare,
		  tsc_after_chain, tsc_after_4, tsc_before_4, tsc_on_stamp },
	};
	bt_batch_setup(argc, argv, "bench_shadow", &nbatch, &ncalls, NULL, usage);
	printf("bench_shadow: extra timer ticks per iteration over the bare loop "
	       "(min of %lu batches of %lu), and per add; %s\n",
	       nbatch, ncalls, bt_timer_desc);
	for (size_t i = 0; i < sizeof(clk) / sizeof(clk[0]); i++) {
		double bare = best(clk[i].bare, 0);

		printf("\n%s: bare loop %.1f ticks (%.2f ns)\n", clk[i].name, bare,
		       bare * bt_ns_per_tick);
		printf("  %-16s", "adds (K)");
		for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++)
			printf("  %13u", ks[j]);
		printf("\n");
		const struct { const char *what; loop_fn f; } rows[] = {
			{ "after, chain", clk[i].after_chain },
			{ "after, 4 ways", clk[i].after_4 },
			{ "before, 4 ways", clk[i].before_4 },
			{ "on the stamp", clk[i].on_stamp },
		};
		for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
			printf("  %-16s", rows[r].what);
			for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
				double d = best(rows[r].f, ks[j]) - bare;

				printf("  %+6.1f (%4.2f)", d, d / ks[j]);
			}
			printf("\n");
		}
	}
	return (int)(sink & 0);
}
