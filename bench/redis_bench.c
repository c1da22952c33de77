/* SPDX-License-Identifier: MIT */
/*
 * redis_bench - what the recorder adds to a request of a Redis-style
 * server: one event per command and two state updates (the command's
 * client and the number of commands in flight), BENCHMARKS.md "Redis-style
 * request".
 *
 * One request is
 *   bb_write_event("cmd", { cmd: "GET", key: "user:1000", argc: 2 })
 *   bb_set("client", "127.0.0.1:50312")
 *   bb_set_i64("inflight", n)
 * with every string known only at run time (read through volatile
 * pointers), as a server has them.  Rows: the request, and each of its
 * three calls alone, beside a bare clock_gettime() and rdtsc of the same
 * run; min, 10th percentile and median of batches, pinned (bench/
 * baselines.h), for the default clock and for CLOCK_MONOTONIC.
 *
 * Usage: redis_bench [-b BATCHES] [-n REQUESTS] [-r ROUNDS]
 *        redis_bench -i N   N requests in loop_request() and nothing else
 *                           timed: for callgrind (bench/redis_icount.sh)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>
#include <blackbox/format.h>

#include "baselines.h"

static unsigned long ncalls = 1000, nbatch = 2000, nround = 1;
static const char *volatile cmd_name = "GET";
static const char *volatile cmd_key = "user:1000";
static const char *volatile client = "127.0.0.1:50312";
static struct bt_ctx ctx;

static inline int request(unsigned long i)
{
	struct bb_field f[3] = {
		BB_STR("cmd", cmd_name),
		BB_STR("key", cmd_key),
		BB_I64("argc", 2),
	};
	int bad = bb_write_event("cmd", f, 3);

	bad |= bb_set("client", client);
	bad |= bb_set_i64("inflight", (int64_t)(i & 7));
	return bad;
}

static inline int event_only(void)
{
	struct bb_field f[3] = {
		BB_STR("cmd", cmd_name),
		BB_STR("key", cmd_key),
		BB_I64("argc", 2),
	};

	return bb_write_event("cmd", f, 3);
}

BT_OP(op_clock, ncalls, bt_base_clock(&ctx))
BT_OP(op_tick, ncalls, bt_base_rdtsc(&ctx))
BT_OP(op_request, ncalls, bad |= request(i))
BT_OP(op_event, ncalls, bad |= event_only())
BT_OP(op_set, ncalls, bad |= bb_set("client", client))
BT_OP(op_set_i64, ncalls, bad |= bb_set_i64("inflight", (int64_t)(i & 7)))

/* The callgrind unit: N requests, collected alone (--toggle-collect). */
__attribute__((noinline)) static int loop_request(unsigned long n)
{
	int bad = 0;

	for (unsigned long i = 0; i < n; i++)
		bad |= request(i);
	return bad;
}

static void usage(void)
{
	fprintf(stderr, "usage: redis_bench [-b BATCHES] [-n REQUESTS] [-r ROUNDS] | -i N\n");
	exit(2);
}

static void row(const char *name, struct bt_stat3 s, const struct bt_stat3 *clk)
{
	printf("  %-40s %7.2f %7.2f %7.2f", name, s.min, s.p10, s.p50);
	if (clk)
		printf("   %.2fx clock", s.min / clk->min);
	printf("\n");
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int clock; } cfg[] = {
		{ "default clock", 0 },
		{ "monotonic clock", BB_CLOCK_MONOTONIC },
	};

	if (argc == 3 && !strcmp(argv[1], "-i")) {
		unsigned long n = strtoul(argv[2], NULL, 10);
		int ret = bb_init(0);

		if (ret) {
			fprintf(stderr, "redis_bench: bb_init: %s\n", strerror(-ret));
			return 1;
		}
		/* Warm-up, not collected: slots bound, the log wrapped. */
		if (loop_request(20000) | loop_request(n))
			return 1;
		return 0;
	}
	bt_batch_setup(argc, argv, "redis_bench", &nbatch, &ncalls, &nround, usage);
	bt_pin((unsigned)bt_ncpu() - 1);
	bt_print_machine(stdout);
	printf("redis_bench: %lu batches of %lu requests, %lu round(s), pinned to CPU %d; "
	       "ns per request or call (min / p10 / median over batches)\n",
	       nbatch, ncalls, nround, bt_ncpu() - 1);
	for (unsigned long round = 0; round < nround; round++) {
		for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
			struct bb_options o = { .clock = cfg[k].clock, .flags = BB_OPT_NO_ENV };
			struct bt_stat3 clk, tck, rq, ev, st, sti;
			struct bt_box bx;
			const char *used;
			int ret = bb_init_opts(&o);

			if (ret) {
				fprintf(stderr, "redis_bench: bb_init_opts: %s\n", strerror(-ret));
				return 1;
			}
			used = bt_box_read(&bx) == 0 ? bt_clock_name(bx.clock) : "?";
			clk = bt_best(op_clock, nbatch, ncalls, "redis_bench");
			tck = bt_best(op_tick, nbatch, ncalls, "redis_bench");
			rq = bt_best(op_request, nbatch, ncalls, "redis_bench");
			ev = bt_best(op_event, nbatch, ncalls, "redis_bench");
			st = bt_best(op_set, nbatch, ncalls, "redis_bench");
			sti = bt_best(op_set_i64, nbatch, ncalls, "redis_bench");
			bb_close();
			printf("\nround %lu, %s (box clock: %s)\n", round + 1, cfg[k].name, used);
			row("clock_gettime(MONOTONIC)", clk, NULL);
			row(BT_HAVE_RDTSC ? "rdtsc" : "(no rdtsc: clock)", tck, NULL);
			row("request: event + bb_set + bb_set_i64", rq, &clk);
			row("  bb_write_event, 3 fields", ev, &clk);
			row("  bb_set(\"client\", v)", st, &clk);
			row("  bb_set_i64(\"inflight\", v)", sti, &clk);
			printf("  the two bb_set: %.0f%% of the request (min: %.2f of %.2f ns)\n",
			       100 * (st.min + sti.min) / rq.min, st.min + sti.min, rq.min);
		}
	}
	return 0;
}
