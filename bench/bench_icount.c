/* SPDX-License-Identifier: MIT */
/*
 * bench_icount.c - a fixed number of write-path calls, for instruction
 * counting under valgrind --tool=callgrind (bench/callgrind.sh, and the
 * instruction budget test tests/perf/icount_budget.sh, which runs it with
 * BLACKBOX_DIR set to a private temporary directory).
 *
 * Usage: bench_icount OP N
 *   OP: clock | kv | kvlib | kvrun | kvnrun | kvrun64 | kvi64 | kvu64 | kvf64 | i64 |
 *       str16 | event4 | bytes4k | span0 | span1 | nop
 *   (kv: bb_write_kv() of two literals, the inline fast path; kvlib: the
 *   same record through the library, bb_write_kvn(); kvrun: the same two
 *   strings known only at run time, the inline path's scan; kvnrun: the
 *   same with their lengths given, bb_write_kvn(); kvrun64: run-time
 *   strings of 16 and 64 bytes; kvi64/kvu64/kvf64: the typed writers with a
 *   literal key, inline; event4: bb_write_event() with 4 fields, 2 strings
 *   and 2 i64; bytes4k: bb_write_bytes() of 4 KiB; span0: bb_span_begin() of
 *   a literal name without fields and bb_span_end(), span1: the same with
 *   one literal text field, a span's two records)
 *
 * bb_init(0), then a warm-up of WARMUP calls of OP (claims the thread's ring,
 * resolves lazy PLT bindings, and wraps the ring several times so that the
 * measured calls are in the steady state: every record frees an old one),
 * then N calls inside loop_<OP>(), a noinline function that callgrind.sh
 * collects alone (--toggle-collect=loop_*).  Running N = 1000 and N = 2000
 * and taking the difference / 1000 cancels the loop entry and exit.
 *
 * "clock" is the bare clock_gettime(CLOCK_MONOTONIC) the writers call once
 * per record; "nop" is the empty loop (its cost per iteration is the loop
 * overhead included in every other figure).
 */
#include <blackbox.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMUP 20000u

static const char str16[] = "aaaaaaaaaaaaaaaa";
static volatile uint64_t sink;
/* Not literals to the compiler: read anew on every call. */
static const char *volatile dyn_key = "req";
static const char *volatile dyn_value = "GET /index";
static volatile size_t dyn_klen = 3, dyn_vlen = 10;
static const char *volatile dyn_key16 = "request.path.key";
static const char *volatile dyn_value64 =
	"/api/v2/orders/1234567890/items?expand=all&fields=id,sku,qty,pr";
static uint8_t big[4096];

#define NOINLINE __attribute__((noinline, noclone))

/*
 * Each operation is defined twice from one body: warm_OP (not collected)
 * and loop_OP (collected).  Both are noinline so that the toggle sees
 * exactly the N measured calls.
 */
#define DEFINE_OP(name, body)                                            \
	NOINLINE static void warm_##name(unsigned n)                     \
	{ for (unsigned i = 0; i < n; i++) { body; } }                   \
	NOINLINE static void loop_##name(unsigned n)                     \
	{ for (unsigned i = 0; i < n; i++) { body; } }

static void do_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sink += (uint64_t)ts.tv_nsec;
}

static void do_event4(unsigned i)
{
	struct bb_field f[4] = {
		BB_STR("method", "GET"),
		BB_STR("path", "/index"),
		BB_I64("status", 200),
		BB_I64("bytes", (int64_t)i),
	};

	bb_write_event("http", f, 4);
}

static void do_span1(void)
{
	struct bb_field f[1] = { BB_STR("table", "orders") };

	bb_span_begin("db.query", f, 1);
	bb_span_end();
}

DEFINE_OP(nop, __asm__ __volatile__("" ::: "memory"))
DEFINE_OP(clock, do_clock())
DEFINE_OP(kv, bb_write_kv("req", "GET /index"))
DEFINE_OP(kvlib, (bb_write_kvn)("req", 3, "GET /index", 10))
DEFINE_OP(beat, bb_heartbeat())
DEFINE_OP(kvrun, bb_write_kv(dyn_key, dyn_value))
DEFINE_OP(kvnrun, bb_write_kvn(dyn_key, dyn_klen, dyn_value, dyn_vlen))
DEFINE_OP(kvrun64, bb_write_kv(dyn_key16, dyn_value64))
DEFINE_OP(kvi64, bb_write_kv_i64("n", 1000 + (int64_t)i))
DEFINE_OP(kvu64, bb_write_kv_u64("n", 1000 + (uint64_t)i))
DEFINE_OP(kvf64, bb_write_kv_f64("x", (double)i * 0.25))
DEFINE_OP(i64, bb_write_i64((int64_t)i))
DEFINE_OP(str16, bb_write_str(str16))
DEFINE_OP(event4, do_event4(i))
DEFINE_OP(bytes4k, bb_write_bytes(big, sizeof(big)))
DEFINE_OP(span0, (bb_span_begin("db.query", NULL, 0), bb_span_end()))
DEFINE_OP(span1, do_span1())

static const struct {
	const char *name;
	void (*warm)(unsigned);
	void (*fn)(unsigned);
} ops[] = {
	{ "nop", warm_nop, loop_nop },
	{ "clock", warm_clock, loop_clock },
	{ "kv", warm_kv, loop_kv },
	{ "kvlib", warm_kvlib, loop_kvlib },
	{ "beat", warm_beat, loop_beat },
	{ "kvrun", warm_kvrun, loop_kvrun },
	{ "kvnrun", warm_kvnrun, loop_kvnrun },
	{ "kvrun64", warm_kvrun64, loop_kvrun64 },
	{ "kvi64", warm_kvi64, loop_kvi64 },
	{ "kvu64", warm_kvu64, loop_kvu64 },
	{ "kvf64", warm_kvf64, loop_kvf64 },
	{ "i64", warm_i64, loop_i64 },
	{ "str16", warm_str16, loop_str16 },
	{ "event4", warm_event4, loop_event4 },
	{ "bytes4k", warm_bytes4k, loop_bytes4k },
	{ "span0", warm_span0, loop_span0 },
	{ "span1", warm_span1, loop_span1 },
};

int main(int argc, char **argv)
{
	void (*warm)(unsigned) = NULL, (*fn)(unsigned) = NULL;
	unsigned long n;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_icount nop|clock|kv|kvlib|beat|kvrun|kvnrun|kvrun64|kvi64|kvu64|"
			"kvf64|i64|str16|event4|bytes4k|span0|span1 N\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(argv[1], ops[i].name)) {
			warm = ops[i].warm;
			fn = ops[i].fn;
		}
	n = strtoul(argv[2], NULL, 10);
	if (!fn || !n) {
		fprintf(stderr, "bench_icount: bad operation or count\n");
		return 2;
	}
	ret = bb_init(0);
	if (ret < 0) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	if (!strcmp(argv[1], "beat") && (ret = bb_watchdog(1000)) < 0) {
		fprintf(stderr, "bb_watchdog: %s\n", strerror(-ret));
		return 1;
	}
	warm(WARMUP);
	fn((unsigned)n);
	return 0;
}
