/* SPDX-License-Identifier: MIT */
/*
 * bench_lttng - an LTTng-UST tracepoint with two strings beside the same
 * run's bare clock_gettime() and bb_write_kv(): the LTTng row of
 * BENCHMARKS.md "Write path against the clock".  Built only where liblttng-ust is found
 * (bench/meson.build); needs lttng-tools (lttng, lttng-sessiond) to run.
 *
 * What it does, in order:
 *  1. starts lttng-sessiond (--daemonize --no-kernel), unless one already
 *     runs for this user (then it uses it and leaves it running), with
 *     LTTNG_HOME in a temporary directory;
 *  2. creates a snapshot-mode session (the tracer's ring buffers in memory,
 *     overwritten when full, written out only on request: the closest
 *     thing to a flight recorder), enables bb_bench:* and starts it;
 *  3. runs itself again as the measured process, so that the tracer
 *     registers with that session daemon when it loads; the process waits
 *     until the tracepoint is enabled (a disabled tracepoint is a load and
 *     a branch: measuring it would be meaningless) and fails otherwise;
 *  4. stops and destroys the session and stops the daemon it started.
 * The measured process times, on a pinned thread, with bt_best() (the
 * minimum of B batches of N calls, as bench_floor): a bare clock_gettime,
 * a bare rdtsc, the tracepoint with two run-time strings ("req" and
 * "GET /index"), and bb_write_kv() of the same strings, literal and run-time,
 * in a box with the default clock and checksums.
 *
 * Usage: bench_lttng [-b BATCHES] [-n CALLS] [-r ROUNDS]
 * Exit 77 (skipped) without lttng-tools; 1 if the session cannot be set up
 * or the tracepoint never gets enabled.  Benchmark, not a test.
 */
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "bench_lttng_tp.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>

#include "baselines.h"

static unsigned long ncalls = 1000, nbatch = 3000, nround = 2;
static const char *volatile dyn_key = "req";
static const char *volatile dyn_value = "GET /index";
static struct bt_ctx ctx;

static inline void tp_kv(void)
{
	lttng_ust_tracepoint(bb_bench, kv, dyn_key, dyn_value);
}

BT_OP(op_clock, ncalls, bt_base_clock(&ctx))
BT_OP(op_tick, ncalls, bt_base_rdtsc(&ctx))
BT_OP(op_tp, ncalls, tp_kv())
BT_OP(op_kv, ncalls, bad |= bb_write_kv("req", "GET /index"))
BT_OP(op_kv_run, ncalls, bad |= bb_write_kv(dyn_key, dyn_value))

static void usage(void)
{
	fprintf(stderr, "usage: bench_lttng [-b BATCHES] [-n CALLS] [-r ROUNDS]\n");
	exit(2);
}

/* Run a command line through the shell; its exit status, -1 on failure. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* The measured process (BB_LTTNG_MEASURE set by the controller). */
static int measure(void)
{
	struct bb_options o;
	int ret;

	bt_pin((unsigned)bt_ncpu() - 1);
	/* The tracer registered when it loaded (LTTNG_UST_REGISTER_TIMEOUT
	 * lets that wait for the daemon); enabling the event follows
	 * asynchronously.  Up to 10 s. */
	for (int i = 0; !lttng_ust_tracepoint_enabled(bb_bench, kv); i++) {
		struct timespec d = { 0, 10 * 1000 * 1000 };

		if (i == 1000) {
			fprintf(stderr, "bench_lttng: bb_bench:kv never got enabled\n");
			return 1;
		}
		nanosleep(&d, NULL);
	}
	memset(&o, 0, sizeof(o));
	o.flags = BB_OPT_NO_ENV;
	ret = bb_init_opts(&o);
	if (ret) {
		fprintf(stderr, "bench_lttng: bb_init_opts: %s\n", strerror(-ret));
		return 1;
	}
	bt_print_machine(stdout);
	printf("bench_lttng: %lu batches of %lu calls per figure, %lu round(s), pinned to CPU %d; "
	       "ns per call (min / p10 / median over batches); ratios use the min of the same "
	       "round; LTTng-UST snapshot session, bb_bench:kv enabled; the box: default clock, "
	       "checksums on\n", nbatch, ncalls, nround, bt_ncpu() - 1);
	for (unsigned long round = 0; round < nround; round++) {
		struct bt_stat3 clk = bt_best(op_clock, nbatch, ncalls, "bench_lttng");
		struct bt_stat3 tck = bt_best(op_tick, nbatch, ncalls, "bench_lttng");
		struct bt_stat3 tp = bt_best(op_tp, nbatch, ncalls, "bench_lttng");
		struct bt_stat3 kv = bt_best(op_kv, nbatch, ncalls, "bench_lttng");
		struct bt_stat3 kvr = bt_best(op_kv_run, nbatch, ncalls, "bench_lttng");
		const struct { const char *name; struct bt_stat3 s; } rows[] = {
			{ "clock_gettime(MONOTONIC)", clk },
			{ "rdtsc", tck },
			{ "LTTng-UST tracepoint, 2 strings", tp },
			{ "bb_write_kv(\"req\", \"GET /index\")", kv },
			{ "bb_write_kv(k, v) run-time, 3 + 10 B", kvr },
		};

		printf("\nround %lu\n", round + 1);
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			printf("  %-38s %7.2f %7.2f %7.2f", rows[i].name, rows[i].s.min,
			       rows[i].s.p10, rows[i].s.p50);
			if (i >= 2)
				printf("   %.2fx clock", rows[i].s.min / clk.min);
			printf("\n");
		}
	}
	bb_close();
	return 0;
}

int main(int argc, char **argv)
{
	char home[] = "/tmp/bb-lttng.XXXXXX", session[64], pidfile[4096];
	int started = 0, ret = 1, st;
	pid_t pid;

	bt_batch_setup(argc, argv, "bench_lttng", &nbatch, &ncalls, &nround, usage);
	if (getenv("BB_LTTNG_MEASURE"))
		return measure();
	if (run("command -v lttng >/dev/null && command -v lttng-sessiond >/dev/null")) {
		printf("bench_lttng: lttng-tools not installed: skipped\n");
		return 77;
	}
	if (!mkdtemp(home)) {
		perror("bench_lttng: mkdtemp");
		return 1;
	}
	setenv("LTTNG_HOME", home, 1);
	snprintf(session, sizeof(session), "bbbench%ld", (long)getpid());
	/* A daemon already running for this user (root: the global one)
	 * answers `lttng list`; otherwise start ours. */
	if (run("lttng list >/dev/null 2>&1")) {
		if (run("lttng-sessiond --daemonize --no-kernel --quiet")) {
			fprintf(stderr, "bench_lttng: cannot start lttng-sessiond\n");
			goto out;
		}
		started = 1;
	}
	if (run("lttng create %s --snapshot >/dev/null", session) ||
	    run("lttng enable-event --userspace --session=%s 'bb_bench:*' >/dev/null", session) ||
	    run("lttng start %s >/dev/null", session)) {
		fprintf(stderr, "bench_lttng: cannot set up the snapshot session\n");
		goto destroy;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setenv("BB_LTTNG_MEASURE", "1", 1);
		setenv("LTTNG_UST_REGISTER_TIMEOUT", "5000", 1);
		execv("/proc/self/exe", argv);
		perror("bench_lttng: execv");
		_exit(1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		perror("bench_lttng: fork/waitpid");
	else
		ret = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	run("lttng stop %s >/dev/null", session);
destroy:
	run("lttng destroy %s >/dev/null", session);
out:
	if (started) {
		/* Our daemon: its pid file is in the run directory, the global
		 * one for root, LTTNG_HOME's otherwise. */
		FILE *f;
		long dpid = 0;

		snprintf(pidfile, sizeof(pidfile), "%s",
			 geteuid() ? "" : "/var/run/lttng/lttng-sessiond.pid");
		if (geteuid())
			snprintf(pidfile, sizeof(pidfile), "%s/.lttng/lttng-sessiond.pid", home);
		f = fopen(pidfile, "r");
		if (f && fscanf(f, "%ld", &dpid) == 1 && dpid > 1) {
			kill((pid_t)dpid, SIGTERM);
			for (int i = 0; i < 500 && kill((pid_t)dpid, 0) == 0; i++)
				usleep(10000);
		} else {
			fprintf(stderr, "bench_lttng: no pid file %s: lttng-sessiond left running\n",
				pidfile);
		}
		if (f)
			fclose(f);
	}
	run("rm -rf '%s'", home);
	return ret;
}
