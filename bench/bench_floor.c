/* SPDX-License-Identifier: MIT */
/*
 * bench_floor - the write path against its clock, robust to a noisy host:
 * the issue 6 ratios (bb_write_kv <= 1.25x a bare clock_gettime with the
 * default clock, <= 1.5x a bare rdtsc with the TSC clock) from the BEST
 * batches rather than the median.
 *
 * Each operation runs in B batches of N calls, each batch timed with
 * rdtsc (converted with a frequency measured against CLOCK_MONOTONIC at
 * start).  A batch that shared its core with anything else (another
 * process, the host) is slower, never faster, so the minimum and the 10th
 * percentile over many batches estimate the cost on a quiet core; the
 * median is printed beside them.  On a shared 2-vCPU guest the median of
 * a long loop moved by 10-30% between runs while the minimum moved by
 * under 2% (BENCHMARKS.md "Issue 6 floor").
 *
 * The box is re-created for each configuration (default clock and TSC,
 * checksums on and off) in one process, so every ratio compares figures
 * of the same run.  Benchmark, not a test: nothing is asserted.
 *
 * Usage: bench_floor [-b BATCHES] [-n CALLS] [-r ROUNDS]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
static inline unsigned long long ticks(void) { return __rdtsc(); }
#else
#define HAVE_RDTSC 0
static inline unsigned long long ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
#endif

static int ncalls = 1000, nbatch = 3000, nround = 2;
static double tick_ns;                       /* ns per tick */
static const char *volatile dyn_value = "GET /index";   /* not a literal to the compiler */

#define OP(name, stmt)                                                  \
	static __attribute__((noinline)) int name(void)                 \
	{                                                               \
		int bad = 0;                                            \
		for (int i = 0; i < ncalls; i++) {                      \
			stmt;                                           \
		}                                                       \
		return bad;                                             \
	}

OP(op_clock, {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	__asm__ __volatile__("" : : "r"(ts.tv_nsec));
})
OP(op_tick, {
	unsigned long long t = ticks();
	__asm__ __volatile__("" : : "r"(t));
})
OP(op_kv, bad |= bb_write_kv("req", "GET /index"))
OP(op_kv_dyn, bad |= bb_write_kv("req", dyn_value))
OP(op_i64, bad |= bb_write_i64(1000 + i))

struct stat3 { double min, p10, p50; };

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct stat3 measure(int (*fn)(void))
{
	double *s = malloc(sizeof(*s) * (size_t)nbatch);
	struct stat3 r;

	if (!s) {
		perror("malloc");
		exit(1);
	}
	for (int b = 0; b < nbatch / 10; b++)   /* warm-up: ring claim, wraps */
		if (fn()) {
			fprintf(stderr, "bench_floor: a write failed\n");
			exit(1);
		}
	for (int b = 0; b < nbatch; b++) {
		unsigned long long t0 = ticks();

		if (fn()) {
			fprintf(stderr, "bench_floor: a write failed\n");
			exit(1);
		}
		s[b] = (double)(ticks() - t0) * tick_ns / ncalls;
	}
	qsort(s, (size_t)nbatch, sizeof(*s), cmpd);
	r.min = s[0];
	r.p10 = s[nbatch / 10];
	r.p50 = s[nbatch / 2];
	free(s);
	return r;
}

static void calibrate(void)
{
#if HAVE_RDTSC
	struct timespec a, b;
	unsigned long long t0, t1;
	double ns;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = ticks();
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	} while (ns < 50e6);
	t1 = ticks();
	tick_ns = ns / (double)(t1 - t0);
#else
	tick_ns = 1.0;
#endif
}

/* The clock the box really uses (the header says; TSC falls back). */
static const char *box_clock(void)
{
	char path[4096];
	struct bb_header h;
	int fd;
	ssize_t n;

	if (bb_path(path, sizeof(path)) < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return "?";
	n = pread(fd, &h, sizeof(h), 0);
	close(fd);
	if (n != (ssize_t)sizeof(h))
		return "?";
	return h.clock == BB_CLOCK_TSC ? "tsc" : "monotonic";
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_floor [-b BATCHES] [-n CALLS] [-r ROUNDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int clock; unsigned flags; } cfg[] = {
		{ "default clock, CRC on",  0, 0 },
		{ "default clock, CRC off", 0, BB_OPT_NO_CRC },
		{ "TSC clock, CRC on",      BB_CLOCK_TSC, 0 },
		{ "TSC clock, CRC off",     BB_CLOCK_TSC, BB_OPT_NO_CRC },
	};
	int c;

	while ((c = getopt(argc, argv, "b:n:r:")) != -1) {
		switch (c) {
		case 'b': nbatch = atoi(optarg); break;
		case 'n': ncalls = atoi(optarg); break;
		case 'r': nround = atoi(optarg); break;
		default: usage();
		}
	}
	if (nbatch < 10 || ncalls < 1 || nround < 1)
		usage();
	calibrate();
	printf("bench_floor: %d batches of %d calls per figure, %d round(s); ns per call "
	       "(min / p10 / median over batches); ratios use the min of the same round\n",
	       nbatch, ncalls, nround);
	for (int round = 0; round < nround; round++) {
		for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
			struct bb_options o = { .clock = cfg[k].clock,
						.flags = cfg[k].flags | BB_OPT_NO_ENV };
			struct stat3 clk, tck, kv, kvd, i64;
			int ret = bb_init_opts(&o);

			if (ret) {
				fprintf(stderr, "bench_floor: bb_init_opts: %s\n", strerror(-ret));
				return 1;
			}
			const char *used = box_clock();

			clk = measure(op_clock);
			tck = measure(op_tick);
			kv = measure(op_kv);
			kvd = measure(op_kv_dyn);
			i64 = measure(op_i64);
			bb_close();
			printf("\nround %d, %s (box clock: %s)\n", round + 1, cfg[k].name, used);
			printf("  %-34s %6.2f %6.2f %6.2f\n", "clock_gettime(MONOTONIC)", clk.min, clk.p10, clk.p50);
			printf("  %-34s %6.2f %6.2f %6.2f\n", HAVE_RDTSC ? "rdtsc" : "(no rdtsc: clock)",
			       tck.min, tck.p10, tck.p50);
			printf("  %-34s %6.2f %6.2f %6.2f   %.2fx clock  %.2fx rdtsc\n",
			       "bb_write_kv(\"req\", \"GET /index\")", kv.min, kv.p10, kv.p50,
			       kv.min / clk.min, kv.min / tck.min);
			printf("  %-34s %6.2f %6.2f %6.2f   %.2fx clock  %.2fx rdtsc\n",
			       "bb_write_kv(\"req\", runtime value)", kvd.min, kvd.p10, kvd.p50,
			       kvd.min / clk.min, kvd.min / tck.min);
			printf("  %-34s %6.2f %6.2f %6.2f   %.2fx clock  %.2fx rdtsc\n",
			       "bb_write_i64", i64.min, i64.p10, i64.p50,
			       i64.min / clk.min, i64.min / tck.min);
			if (cfg[k].clock == 0)
				printf("target (floor, %s): bb_write_kv <= 1.25x clock_gettime: %.2fx, %s (+%.1f ns over the clock)\n", cfg[k].name,
				       kv.min / clk.min, kv.min / clk.min <= 1.25 ? "met" : "NOT met",
				       kv.min - clk.min);
			else
				printf("target (floor, %s): bb_write_kv <= 1.5x rdtsc: %.2fx, %s\n", cfg[k].name,
				       kv.min / tck.min, kv.min / tck.min <= 1.5 ? "met" : "NOT met");
		}
	}
	return 0;
}
