/* SPDX-License-Identifier: MIT */
/*
 * bench_floor - what a record costs against its clock, robust to a noisy
 * host: every writer beside a bare clock_gettime() and a bare rdtsc of the
 * same run, from the BEST batches rather than the median.  The targets it
 * prints are the ratios of BENCHMARKS.md "Write path against the clock".
 *
 * Rows (the thread is pinned to one CPU):
 *  - bb_write_kv("req", "GET /index"): literals, the inline path of
 *    <blackbox/inline.h>; "the same, library call" is bb_write_kvn() with
 *    the same record, what every write took before there was an inline path;
 *  - bb_write_kv(k, v) with both strings known only at run time (read
 *    through volatile pointers): the inline path's bounded scan, once with
 *    the same 3 + 10 bytes and once with 16 + 64 (the longest it takes);
 *  - two floors of those inline paths: the run-time strings' record with
 *    their lengths known to the compiler (bb__kv_fast() of <blackbox/inline.h>,
 *    internal, called here only to show what the scan and the variable
 *    lengths cost), and bb_write_kv_i64 of a constant (its size folded);
 *  - bb_write_kv_i64/_u64/_f64 with a literal key, bb_write_i64;
 *  - bb_write_event with 4 fields (2 strings, 2 i64);
 *  - a span, bb_span_begin() of a literal name (without fields, and with
 *    one text field) and bb_span_end(): two records, against
 *    bb_write_kv();
 *  - a 4 KiB value (bb_write_bytes) against the floor of what it must do
 *    anyway: memcpy() of 4 KiB plus the CRC32C of 4 KiB at the crc32
 *    instruction's throughput (the library's own multi-stream code,
 *    libblackbox/crc32c.c, compiled in here); the single-stream CRC is
 *    shown for scale.
 *
 * Each operation runs in B batches of N calls (N / 10 for the 4 KiB rows),
 * each batch timed with the fenced TSC reads of baselines.h.  A batch
 * that shared its core with anything else is slower, never faster, so the
 * minimum over many batches estimates the cost on a quiet core; the 10th
 * percentile and the median are printed beside it.
 *
 * The box is re-created for each configuration (default clock and TSC,
 * checksums on and off) in one process, so every ratio compares figures
 * of the same run.  Benchmark, not a test: nothing is asserted.
 *
 * Usage: bench_floor [-b BATCHES] [-n CALLS] [-r ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>
#include <blackbox/format.h>

#include "baselines.h"
#include "crc32c.h"

static unsigned long ncalls = 1000, nbatch = 3000, nround = 2;
#define NBIG (ncalls / 10 ? ncalls / 10 : 1)
#define BIG 4096u

/* Not literals to the compiler: read anew on every call. */
static const char *volatile dyn_key = "req";
static const char *volatile dyn_value = "GET /index";
static const char *volatile dyn_key16 = "request.path.key";
static const char *volatile dyn_value64 =
	"/api/v2/orders/1234567890/items?expand=all&fields=id,sku,qty,pr";
static struct bt_ctx ctx;                               /* sink of the bare timer reads */
static uint8_t big_src[BIG], big_dst[BIG];

static inline int event4(unsigned long i)
{
	struct bb_field f[4] = {
		BB_STR("method", "GET"),
		BB_STR("path", "/index"),
		BB_I64("status", 200),
		BB_I64("bytes", (int64_t)i),
	};

	return bb_write_event("http", f, 4);
}

static inline int span1(void)
{
	struct bb_field f[1] = { BB_STR("table", "orders") };
	int ret = bb_span_begin("db.query", f, 1);

	return ret | bb_span_end();
}

/* The 4 KiB floor: copy it, checksum the copy. */
static inline void floor4k(void)
{
	memcpy(big_dst, big_src, BIG);
	__asm__ __volatile__("" : : "r"(big_dst) : "memory");
	ctx.sink += bb__crc32c(0xffffffffu, big_dst, BIG);
}

static inline void copy4k(void)
{
	memcpy(big_dst, big_src, BIG);
	__asm__ __volatile__("" : : "r"(big_dst) : "memory");
}

BT_OP(op_clock, ncalls, bt_base_clock(&ctx))
BT_OP(op_tick, ncalls, bt_base_rdtsc(&ctx))
BT_OP(op_kv, ncalls, bad |= bb_write_kv("req", "GET /index"))
BT_OP(op_kv_lib, ncalls, bad |= (bb_write_kvn)("req", 3, "GET /index", 10))
BT_OP(op_kv_run, ncalls, bad |= bb_write_kv(dyn_key, dyn_value))
BT_OP(op_kv_run64, ncalls, bad |= bb_write_kv(dyn_key16, dyn_value64))
BT_OP(op_kv_known, ncalls,
      bad |= bb__kv_fast(dyn_key, 3, BB__KV_TEXT, dyn_value, 10, 0))
BT_OP(op_kv_i64_const, ncalls, bad |= bb_write_kv_i64("n", 1000))
BT_OP(op_kv_i64, ncalls, bad |= bb_write_kv_i64("n", 1000 + (int64_t)i))
BT_OP(op_kv_u64, ncalls, bad |= bb_write_kv_u64("n", 1000 + (uint64_t)i))
BT_OP(op_kv_f64, ncalls, bad |= bb_write_kv_f64("x", (double)i * 0.25))
BT_OP(op_i64, ncalls, bad |= bb_write_i64(1000 + (int64_t)i))
BT_OP(op_event, ncalls, bad |= event4(i))
BT_OP(op_span, ncalls, bad |= span1())
BT_OP(op_span0, ncalls, bad |= bb_span_begin("db.query", NULL, 0) | bb_span_end())
BT_OP(op_copy4k, NBIG, copy4k())
#if BT_HAVE_RDTSC
BT_OP(op_crc4k_one, NBIG,
      ctx.sink += bb__crc32c_hw_update(0xffffffffu, big_src, BIG))
#endif
BT_OP(op_crc4k, NBIG, ctx.sink += bb__crc32c(0xffffffffu, big_src, BIG))
BT_OP(op_floor4k, NBIG, floor4k())
BT_OP(op_bytes4k, NBIG, bad |= bb_write_bytes(big_src, BIG))

static void usage(void)
{
	fprintf(stderr, "usage: bench_floor [-b BATCHES] [-n CALLS] [-r ROUNDS]\n");
	exit(2);
}

static struct bt_stat3 measure(int (*fn)(void))
{
	return bt_best(fn, nbatch, ncalls, "bench_floor");
}

static struct bt_stat3 measure_big(int (*fn)(void))
{
	return bt_best(fn, nbatch, NBIG, "bench_floor");
}

static void row(const char *name, struct bt_stat3 s, const struct bt_stat3 *clk,
		const struct bt_stat3 *tck)
{
	printf("  %-38s %7.2f %7.2f %7.2f", name, s.min, s.p10, s.p50);
	if (clk)
		printf("   %.2fx clock  %.2fx rdtsc", s.min / clk->min, s.min / tck->min);
	printf("\n");
}

static void target(const char *what, double ratio, double limit)
{
	printf("target: %-52s <= %.2fx: %.2fx, %s\n", what, limit, ratio,
	       ratio <= limit ? "met" : "NOT met");
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int clock; unsigned flags; } cfg[] = {
		{ "default clock, CRC on",  0, 0 },
		{ "default clock, CRC off", 0, BB_OPT_NO_CRC },
		{ "TSC clock, CRC on",      BB_CLOCK_TSC, 0 },
		{ "TSC clock, CRC off",     BB_CLOCK_TSC, BB_OPT_NO_CRC },
	};
	bt_batch_setup(argc, argv, "bench_floor", &nbatch, &ncalls, &nround, usage);
	bt_pin((unsigned)bt_ncpu() - 1);
	for (unsigned i = 0; i < BIG; i++)
		big_src[i] = (uint8_t)(i * 131 + (i >> 8));
	bt_print_machine(stdout);
	printf("bench_floor: %lu batches of %lu calls per figure (%lu for 4 KiB), %lu round(s), "
	       "pinned to CPU %d; ns per call (min / p10 / median over batches); ratios use "
	       "the min of the same round\n", nbatch, ncalls, NBIG, nround, bt_ncpu() - 1);
	for (unsigned long round = 0; round < nround; round++) {
		for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
			struct bb_options o = { .clock = cfg[k].clock,
						.flags = cfg[k].flags | BB_OPT_NO_ENV };
			struct bt_stat3 clk, tck, kv, kvl, kvr, kvr64, kvk, kic, ki, ku, kf, i64, ev, sp, sp0;
			struct bt_stat3 cp, crc1 = { 0, 0, 0 }, crc, flr, b4k;
			int crc_on = !(cfg[k].flags & BB_OPT_NO_CRC), tsc = cfg[k].clock != 0;
			int ret = bb_init_opts(&o);

			if (ret) {
				fprintf(stderr, "bench_floor: bb_init_opts: %s\n", strerror(-ret));
				return 1;
			}
			struct bt_box bx;
			const char *used = bt_box_read(&bx) == 0 ? bt_clock_name(bx.clock) : "?";

			clk = measure(op_clock);
			tck = measure(op_tick);
			kv = measure(op_kv);
			kvl = measure(op_kv_lib);
			kvr = measure(op_kv_run);
			kvr64 = measure(op_kv_run64);
			kvk = measure(op_kv_known);
			kic = measure(op_kv_i64_const);
			ki = measure(op_kv_i64);
			ku = measure(op_kv_u64);
			kf = measure(op_kv_f64);
			i64 = measure(op_i64);
			ev = measure(op_event);
			sp = measure(op_span);
			sp0 = measure(op_span0);
			cp = measure_big(op_copy4k);
#if BT_HAVE_RDTSC
			crc1 = measure_big(op_crc4k_one);
#endif
			crc = measure_big(op_crc4k);
			flr = measure_big(op_floor4k);
			b4k = measure_big(op_bytes4k);
			bb_close();
			printf("\nround %lu, %s (box clock: %s)\n", round + 1, cfg[k].name, used);
			row("clock_gettime(MONOTONIC)", clk, NULL, NULL);
			row(BT_HAVE_RDTSC ? "rdtsc" : "(no rdtsc: clock)", tck, NULL, NULL);
			row("bb_write_kv(\"req\", \"GET /index\")", kv, &clk, &tck);
			row("  the same, library call", kvl, &clk, &tck);
			row("bb_write_kv(k, v) run-time, 3 + 10 B", kvr, &clk, &tck);
			row("bb_write_kv(k, v) run-time, 16 + 64 B", kvr64, &clk, &tck);
			row("  floor: lengths known, 3 + 10 B", kvk, &clk, &tck);
			row("  floor: bb_write_kv_i64(\"n\", 1000)", kic, &clk, &tck);
			row("bb_write_kv_i64(\"n\", v)", ki, &clk, &tck);
			row("bb_write_kv_u64(\"n\", v)", ku, &clk, &tck);
			row("bb_write_kv_f64(\"x\", v)", kf, &clk, &tck);
			row("bb_write_i64(v)", i64, &clk, &tck);
			row("bb_write_event, 4 fields", ev, &clk, &tck);
			row("span begin + end", sp0, &clk, &tck);
			printf("  %-38s %.2fx bb_write_kv\n", "  the span", sp0.min / kv.min);
			row("span begin (1 field) + end", sp, &clk, &tck);
			printf("  %-38s %.2fx bb_write_kv\n", "  the span", sp.min / kv.min);
			row("memcpy 4 KiB", cp, NULL, NULL);
			if (BT_HAVE_RDTSC)
				row("CRC32C 4 KiB, one stream", crc1, NULL, NULL);
			row("CRC32C 4 KiB (library, streams)", crc, NULL, NULL);
			row("floor: memcpy + CRC32C 4 KiB", flr, NULL, NULL);
			printf("  %-38s %7.2f %7.2f %7.2f   %.2fx floor\n", "bb_write_bytes 4 KiB",
			       b4k.min, b4k.p10, b4k.p50, b4k.min / flr.min);
			if (!crc_on)
				continue;
			if (!tsc) {
				target("bb_write_kv literals / clock_gettime", kv.min / clk.min, 1.25);
				target("bb_write_kv run-time strings / clock_gettime", kvr.min / clk.min, 1.20);
				target("bb_write_kv_i64 literal key / clock_gettime", ki.min / clk.min, 1.15);
				target("bb_write_kv_u64 literal key / clock_gettime", ku.min / clk.min, 1.15);
				target("bb_write_kv_f64 literal key / clock_gettime", kf.min / clk.min, 1.15);
				target("bb_write_event 4 fields / clock_gettime", ev.min / clk.min, 1.5);
				target("span begin + end / bb_write_kv literals", sp0.min / kv.min, 2.0);
				target("span 1 field begin + end / bb_write_kv literals",
				       sp.min / kv.min, 2.0);
				target("bb_write_bytes 4 KiB / (memcpy + CRC32C)", b4k.min / flr.min, 2.0);
			} else {
				target("bb_write_kv literals / rdtsc", kv.min / tck.min, 1.5);
				target("bb_write_kv run-time strings / rdtsc", kvr.min / tck.min, 1.30);
			}
		}
	}
	return 0;
}
