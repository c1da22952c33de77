/* SPDX-License-Identifier: MIT */
/*
 * bench_recorder - c3d/recorder's record() (a format and two arguments:
 * the strings are not copied, their pointers are) beside the same run's
 * bare clock_gettime() and bb_write_kv(): the recorder row of BENCHMARKS.md
 * "Write path against the clock".  Not built by meson: bench/peer_recorder.sh compiles it
 * with the recorder's sources, outside this tree.
 *
 * Usage: bench_recorder [-b BATCHES] [-n CALLS] [-r ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder.h"

#include <blackbox.h>

#include "baselines.h"

RECORDER(bb_bench, 4096, "bench_recorder: record() beside bb_write_kv()");

static unsigned long ncalls = 1000, nbatch = 3000, nround = 2;
static const char *volatile dyn_key = "req";
static const char *volatile dyn_value = "GET /index";
static struct bt_ctx ctx;

BT_OP(op_clock, ncalls, bt_base_clock(&ctx))
BT_OP(op_record, ncalls, record(bb_bench, "%s=%s", dyn_key, dyn_value))
BT_OP(op_kv, ncalls, bad |= bb_write_kv("req", "GET /index"))
BT_OP(op_kv_run, ncalls, bad |= bb_write_kv(dyn_key, dyn_value))

static void usage(void)
{
	fprintf(stderr, "usage: bench_recorder [-b BATCHES] [-n CALLS] [-r ROUNDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bb_options o;
	int ret;

	bt_batch_setup(argc, argv, "bench_recorder", &nbatch, &ncalls, &nround, usage);
	bt_pin((unsigned)bt_ncpu() - 1);
	memset(&o, 0, sizeof(o));
	o.flags = BB_OPT_NO_ENV;
	ret = bb_init_opts(&o);
	if (ret) {
		fprintf(stderr, "bench_recorder: bb_init_opts: %s\n", strerror(-ret));
		return 1;
	}
	bt_print_machine(stdout);
	printf("bench_recorder: %lu batches of %lu calls per figure, %lu round(s), pinned to CPU %d; "
	       "ns per call (min / p10 / median over batches); ratios use the min of the same "
	       "round; the box: default clock, checksums on\n", nbatch, ncalls, nround,
	       bt_ncpu() - 1);
	for (unsigned long round = 0; round < nround; round++) {
		struct bt_stat3 clk = bt_best(op_clock, nbatch, ncalls, "bench_recorder");
		const struct { const char *name; struct bt_stat3 s; } rows[] = {
			{ "clock_gettime(MONOTONIC)", clk },
			{ "recorder record(), format + 2 args",
			  bt_best(op_record, nbatch, ncalls, "bench_recorder") },
			{ "bb_write_kv(\"req\", \"GET /index\")",
			  bt_best(op_kv, nbatch, ncalls, "bench_recorder") },
			{ "bb_write_kv(k, v) run-time, 3 + 10 B",
			  bt_best(op_kv_run, nbatch, ncalls, "bench_recorder") },
		};

		printf("\nround %lu\n", round + 1);
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			printf("  %-38s %7.2f %7.2f %7.2f", rows[i].name, rows[i].s.min,
			       rows[i].s.p10, rows[i].s.p50);
			if (i)
				printf("   %.2fx clock", rows[i].s.min / clk.min);
			printf("\n");
		}
	}
	bb_close();
	return 0;
}
