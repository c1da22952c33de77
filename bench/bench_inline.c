/* SPDX-License-Identifier: MIT */
/*
 * bench_inline - what an inline fast path in <blackbox.h> would buy: a
 * prototype, measured, not a feature.
 *
 * BENCHMARKS.md "Issue 6 floor, third session" argues that the default
 * clock's 1.25x target needs a write path about a quarter shorter, and that
 * the one route to it is to inline the common case into the caller: no PLT
 * and call, no callee-saved registers, the lengths of literal strings
 * folded.  This program measures that route before anyone designs the ABI
 * it needs (the ring, box and TLS layouts would become part of the public
 * interface).  It links the static library and includes the private
 * writer.h, which an application cannot do, and writes with the library's
 * own primitives (bb__begin, bb__reserve, bb__commit): the records are the
 * same bytes bb_write_kv() writes, only the code around them differs.
 *
 * Reported, per clock (default and TSC, CRC on): a bare clock read,
 * bb_write_kv("req", "GET /index") through the library, and the inline
 * prototype, as minima of B batches of N calls (bench_floor's method) and
 * their ratios to the clock of the same run.  Benchmark, not a test.
 *
 * Usage: bench_inline [-b BATCHES] [-n CALLS] [-r ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>

#include "baselines.h"
#include "writer.h"

static unsigned long ncalls = 1000, nbatch = 3000, nround = 2;
static struct bt_ctx ctx;

/*
 * The prototype: a key and a text value whose lengths the compiler knows
 * and which are under 24 bytes (one-byte CBOR heads), written to the
 * thread's private ring; anything else (non-constant lengths, no ring yet,
 * nesting, the shared ring) takes the library function.
 */
static inline __attribute__((always_inline))
int inline_kv(const char *key, size_t kl, const char *value, size_t vl)
{
	struct bb__w w;
	int ret;
	uint8_t *p;

	if (!__builtin_constant_p(kl) || !__builtin_constant_p(vl) || kl >= 24 || vl >= 24)
		return bb_write_kvn(key, kl, value, vl);
	if (!bb__begin(&w, &ret))
		return ret;
	if (bb_unlikely(w.shared)) {
		bb__leave(&w);
		return bb_write_kvn(key, kl, value, vl);
	}
	p = bb__reserve(&w, 0, (uint32_t)(3 + kl + vl));
	p[0] = 0x82;                     /* array(2) */
	p[1] = (uint8_t)(0x60 | kl);     /* text(kl) */
	memcpy(p + 2, key, kl);          /* a constant size: a few moves */
	p[2 + kl] = (uint8_t)(0x60 | vl);
	memcpy(p + 3 + kl, value, vl);
	bb__commit(&w, BB_TAG_KV);
	return 0;
}

BT_OP(op_clock, ncalls, bt_base_clock(&ctx))
BT_OP(op_tick, ncalls, bt_base_rdtsc(&ctx))
BT_OP(op_kv, ncalls, bad |= bb_write_kv("req", "GET /index"))
BT_OP(op_inline, ncalls, bad |= inline_kv("req", 3, "GET /index", 10))

/* Minimum ns per call over the batches (the first tenth warms up). */
static double best(int (*fn)(void))
{
	double m = 1e30;

	for (unsigned long b = 0; b < nbatch + nbatch / 10; b++) {
		uint64_t t0 = bt_tick_begin();
		int bad = fn();
		uint64_t t1 = bt_tick_end();
		double per = (double)(t1 - t0) * bt_ns_per_tick / (double)ncalls;

		if (bad) {
			fprintf(stderr, "bench_inline: a write failed\n");
			exit(1);
		}
		if (b >= nbatch / 10 && per < m)
			m = per;
	}
	return m;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_inline [-b BATCHES] [-n CALLS] [-r ROUNDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int clock; } cfg[] = {
		{ "default clock, CRC on", 0 },
		{ "TSC clock, CRC on", BB_CLOCK_TSC },
	};
	bt_batch_setup(argc, argv, "bench_inline", &nbatch, &ncalls, &nround, usage);
	printf("bench_inline: prototype inline bb_write_kv (static library, private "
	       "headers); ns per call, min of %lu batches of %lu\n", nbatch, ncalls);
	for (unsigned long round = 0; round < nround; round++) {
		for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
			struct bb_options o = { .clock = cfg[k].clock, .flags = BB_OPT_NO_ENV };
			int ret = bb_init_opts(&o);

			if (ret) {
				fprintf(stderr, "bench_inline: bb_init_opts: %s\n", strerror(-ret));
				return 1;
			}
			double clk = best(op_clock), tck = best(op_tick);
			double kv = best(op_kv), inl = best(op_inline);
			double base = cfg[k].clock == BB_CLOCK_TSC ? tck : clk;
			const char *bname = cfg[k].clock == BB_CLOCK_TSC ? "rdtsc" : "clock";

			printf("round %lu, %s: clock_gettime %.2f, rdtsc %.2f\n"
			       "  bb_write_kv (library)   %6.2f  %.3fx %s\n"
			       "  inline prototype        %6.2f  %.3fx %s\n",
			       round + 1, cfg[k].name, clk, tck, kv, kv / base, bname,
			       inl, inl / base, bname);
			ret = bb_close();
			if (ret) {
				fprintf(stderr, "bench_inline: bb_close: %s\n", strerror(-ret));
				return 1;
			}
		}
	}
	return 0;
}
