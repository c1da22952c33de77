/* SPDX-License-Identifier: MIT */
/*
 * bench_size.c - what a record costs against the size of its value, next
 * to a memcpy() of the same size (it should grow at memcpy speed).
 *
 * For every size (8, 16, 32, ... 4096 bytes): bb_write_bytes() of a value
 * of that size, and memcpy() of the same size into a 128 KiB buffer (the
 * ring size of a default box) at a destination that advances by the size
 * rounded up to 8 and wraps, as records do in a ring.  Batches of BATCH
 * calls are timed with CLOCK_MONOTONIC (two reads per batch, spread over
 * the batch); a sample is batch time / BATCH, the figure is the median of
 * the batches, then the median over REPEAT repetitions.  One thread.
 *
 * Columns: ns per call, GB/s (= bytes / ns), and the writer's overhead
 * over the copy (bb - memcpy).  Below the table: the incremental cost
 * between the two largest sizes, bytes per ns of extra size, for both:
 * that slope is what "grows at memcpy speed" means.  With checksums on
 * (BB_HF_CRC32C, the default once the writer has them) the writer also
 * runs CRC32C over the value, whose speed then bounds the slope; run with
 * BLACKBOX_CRC=0 to see the copy alone.
 *
 * Usage: bench_size [-r REPEAT] [-b BATCHES] [-n BATCH] [-m MAXSIZE]
 *
 * A benchmark: it never fails on a figure.
 */
#include "baselines.h"

#include <blackbox.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPEAT 15
#define MAX_SIZES  16
#define BUF_SIZE   (128u * 1024u)

static unsigned cfg_repeat = 3, cfg_batches = 300, cfg_batch = 1000, cfg_max = 4096;

static unsigned char src[65536];
static unsigned char dst[BUF_SIZE + 65536];
static int write_err;

static void run_bb(size_t n, unsigned calls)
{
	for (unsigned i = 0; i < calls; i++) {
		int r = bb_write_bytes(src, n);

		if (__builtin_expect(r != 0, 0) && !write_err)
			write_err = r;
	}
}

static size_t copy_pos;

static void run_memcpy(size_t n, unsigned calls)
{
	size_t step = (n + 7) & ~(size_t)7;

	for (unsigned i = 0; i < calls; i++) {
		memcpy(dst + copy_pos, src, n);
		/* The copy is observable: not elided, not merged. */
		__asm__ __volatile__("" : : "r"(dst) : "memory");
		copy_pos += step;
		if (copy_pos >= BUF_SIZE)
			copy_pos = 0;
	}
}

/* Median ns per call of @fn at size @n over cfg_batches batches. */
static double measure(void (*fn)(size_t, unsigned), size_t n, double *samples)
{
	for (unsigned b = 0; b < cfg_batches / 10 + 1; b++)
		fn(n, cfg_batch);   /* warm-up */
	for (unsigned b = 0; b < cfg_batches; b++) {
		uint64_t t0 = bt_mono_ns();

		fn(n, cfg_batch);
		samples[b] = (double)(bt_mono_ns() - t0) / cfg_batch;
	}
	return bt_quantile(samples, cfg_batches, 0.5);
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr, "usage: bench_size [-r REPEAT] [-b BATCHES] [-n BATCH] [-m MAXSIZE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_SIZES];
	unsigned nsizes = 0;
	double bb[MAX_SIZES][MAX_REPEAT], mc[MAX_SIZES][MAX_REPEAT], *samples;
	double bbm[MAX_SIZES], mcm[MAX_SIZES];
	struct bt_box box;
	int opt, ret;

	while ((opt = getopt(argc, argv, "r:b:n:m:h")) != -1) {
		switch (opt) {
		case 'r': cfg_repeat = (unsigned)bt_parse_ul(optarg, 1, MAX_REPEAT, usage); break;
		case 'b': cfg_batches = (unsigned)bt_parse_ul(optarg, 1, 1u << 20, usage); break;
		case 'n': cfg_batch = (unsigned)bt_parse_ul(optarg, 1, 1u << 20, usage); break;
		case 'm': cfg_max = (unsigned)bt_parse_ul(optarg, 8, 65536, usage); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	for (size_t s = 8; s <= cfg_max && nsizes < MAX_SIZES; s *= 2)
		sizes[nsizes++] = s;
	samples = malloc(cfg_batches * sizeof(*samples));
	if (!samples)
		return 1;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 131u + 7u);
	bt_timer_init();
	bt_pin(0);
	ret = bb_init(0);
	if (ret < 0) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	bt_print_machine(stdout);
	bt_box_read(&box);
	printf("box: default (%llu KiB rings, max record %u B), clock %s, checksums %s\n",
	       (unsigned long long)box.ring_size >> 10, box.max_record,
	       bt_clock_name(box.clock), box.crc ? "on" : "off");
	printf("bench_size: %u repetition(s) x %u batches x %u calls, 1 thread pinned to CPU 0\n",
	       cfg_repeat, cfg_batches, cfg_batch);
	fflush(stdout);

	for (unsigned r = 0; r < cfg_repeat; r++)
		for (unsigned i = 0; i < nsizes; i++) {
			bb[i][r] = measure(run_bb, sizes[i], samples);
			mc[i][r] = measure(run_memcpy, sizes[i], samples);
		}
	if (write_err) {
		fprintf(stderr, "bb_write_bytes: %s\n", strerror(-write_err));
		return 1;
	}

	printf("\nCost against value size, ns per call (median of %u-call batch means,\n"
	       "median over %u repetition(s)); GB/s = value bytes / ns.\n\n",
	       cfg_batch, cfg_repeat);
	printf("| %6s | %9s | %7s | %9s | %7s | %8s |\n", "bytes", "bb ns", "bb GB/s",
	       "memcpy ns", "mc GB/s", "bb - mc");
	printf("|-------:|----------:|--------:|----------:|--------:|---------:|\n");
	for (unsigned i = 0; i < nsizes; i++) {
		bbm[i] = bt_median(bb[i], cfg_repeat);
		mcm[i] = bt_median(mc[i], cfg_repeat);
		printf("| %6zu | %9.1f | %7.2f | %9.1f | %7.2f | %8.1f |\n", sizes[i], bbm[i],
		       (double)sizes[i] / bbm[i], mcm[i], (double)sizes[i] / mcm[i],
		       bbm[i] - mcm[i]);
	}
	if (nsizes >= 3) {
		unsigned a = nsizes - 3, z = nsizes - 1;
		double dn = (double)(sizes[z] - sizes[a]);

		printf("\nincremental, %zu -> %zu B: bb_write_bytes %.2f GB/s, memcpy %.2f GB/s "
		       "(extra bytes / extra ns); bb slope / memcpy slope = %.2f\n",
		       sizes[a], sizes[z], dn / (bbm[z] - bbm[a]), dn / (mcm[z] - mcm[a]),
		       (bbm[z] - bbm[a]) / (mcm[z] - mcm[a]));
	}
	bt_box_read(&box);
	printf("box after the run: %llu records truncated, %llu dropped\n",
	       (unsigned long long)box.truncated, (unsigned long long)box.dropped);
	free(samples);
	return 0;
}
