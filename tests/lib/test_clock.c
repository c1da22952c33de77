/* SPDX-License-Identifier: MIT */
/*
 * Description: which clock bb_init() stamps records with, and why.  By
 * default the TSC where the kernel trusts it (its current clocksource is
 * "tsc") and the CPU reports it invariant, CLOCK_MONOTONIC otherwise; an
 * explicit choice always wins; the header says which and why; a TSC box's
 * records convert to the wall time read around their writes.
 *
 * The kernel's clocksource is read from the file BB_TEST_CLOCKSOURCE names
 * (the library's test hook; the real path otherwise), so every case runs on
 * any machine; the cases that need an invariant TSC skip without one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "collect.h"

TestSuite(clock, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 60);

/* CPUID.80000007H:EDX[8], as the library reads it. */
static bool cpu_invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;
#else
	return false;
#endif
}

/* A clocksource file in the test's directory saying @name; the library
 * reads it instead of sysfs. */
static void fake_clocksource(const char *name)
{
	const char *p = bbt_path("current_clocksource");
	FILE *f = fopen(p, "w");

	cr_assert_not_null(f);
	fprintf(f, "%s\n", name);
	fclose(f);
	setenv("BB_TEST_CLOCKSOURCE", p, 1);
	unsetenv("BLACKBOX_CLOCK");
	unsetenv("BB_TEST_NO_INVARIANT_TSC");
}

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The open box's header as a reader sees it (copied into @out). */
static void box_info(struct bb_box_info *out)
{
	char path[512], err[256] = "";
	struct bb_reader *r;
	int ret = bb_path(path, sizeof(path));

	cr_assert_gt(ret, 0, "bb_path: %d", ret);
	ret = bb_reader_open_path(path, 0, &r, err, sizeof(err));
	cr_assert_eq(ret, 0, "open %s: %d %s", path, ret, err);
	*out = *bb_reader_info(r);
	bb_reader_close(r);
}

static void expect_clock(int clock, int requested, int reason)
{
	struct bb_box_info in;

	box_info(&in);
	cr_expect_eq(in.clock, clock, "clock %d, want %d", in.clock, clock);
	cr_expect_eq(in.clock_requested, requested);
	cr_expect_eq(in.clock_reason, reason, "reason %d, want %d", in.clock_reason, reason);
	cr_expect_eq(in.version_major, BB_FORMAT_MAJOR);
	cr_expect_eq(in.version_minor, BB_FORMAT_MINOR);
	if (clock == BB_CLOCK_TSC)
		cr_expect_gt(in.tsc_hz, 100000000u);
	else
		cr_expect_eq(in.tsc_hz, 0);
}

Test(clock, default_is_tsc_where_the_kernel_trusts_it)
{
	fake_clocksource("tsc");
	cr_assert_eq(bb_init(0), 0);
	if (!cpu_invariant_tsc()) {
		expect_clock(BB_CLOCK_MONOTONIC, 0, BB_CLOCK_WHY_NOT_INVARIANT);
		cr_skip_test("no invariant TSC on this machine (the fallback was checked)");
	}
	expect_clock(BB_CLOCK_TSC, 0, BB_CLOCK_WHY_TRUSTED);
}

Test(clock, default_falls_back_on_an_untrusted_clocksource)
{
	fake_clocksource("hpet");
	cr_assert_eq(bb_init(0), 0);
	expect_clock(BB_CLOCK_MONOTONIC, 0,
		     cpu_invariant_tsc() ? BB_CLOCK_WHY_CLOCKSOURCE : BB_CLOCK_WHY_NOT_INVARIANT);
}

Test(clock, default_falls_back_without_an_invariant_tsc)
{
	fake_clocksource("tsc");
	setenv("BB_TEST_NO_INVARIANT_TSC", "1", 1);
	cr_assert_eq(bb_init(0), 0);
	expect_clock(BB_CLOCK_MONOTONIC, 0, BB_CLOCK_WHY_NOT_INVARIANT);
}

/* A clocksource the library cannot read - missing, a directory, a FIFO
 * nobody writes to (must not block bb_init()) - is not trusted. */
Test(clock, unreadable_clocksource_is_not_trusted)
{
	const char *paths[] = { bbt_path("missing"), bbt_dir, bbt_path("fifo") };
	int want = cpu_invariant_tsc() ? BB_CLOCK_WHY_CLOCKSOURCE : BB_CLOCK_WHY_NOT_INVARIANT;

	cr_assert_eq(mkfifo(bbt_path("fifo"), 0600), 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char p[512];

		snprintf(p, sizeof(p), "%s", paths[i]);
		unsetenv("BLACKBOX_CLOCK");
		setenv("BB_TEST_CLOCKSOURCE", p, 1);
		cr_assert_eq(bb_init(0), 0, "%s", p);
		expect_clock(BB_CLOCK_MONOTONIC, 0, want);
		cr_assert_eq(bb_close(), 0);
	}
}

Test(clock, explicit_tsc_on_an_untrusted_clocksource_is_honoured)
{
	struct bb_options o = { .clock = BB_CLOCK_TSC };

	fake_clocksource("acpi_pm");
	cr_assert_eq(bb_init_opts(&o), 0);
	if (!cpu_invariant_tsc()) {
		expect_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_TSC, BB_CLOCK_WHY_NOT_INVARIANT);
		cr_skip_test("no invariant TSC on this machine (the fallback was checked)");
	}
	expect_clock(BB_CLOCK_TSC, BB_CLOCK_TSC, BB_CLOCK_WHY_ASKED_UNTRUSTED);
}

Test(clock, environment_chooses_over_the_default)
{
	fake_clocksource("tsc");
	setenv("BLACKBOX_CLOCK", "monotonic", 1);
	cr_assert_eq(bb_init(0), 0);
	expect_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_MONOTONIC, BB_CLOCK_WHY_ASKED);
	cr_assert_eq(bb_close(), 0);

	fake_clocksource("hpet");
	setenv("BLACKBOX_CLOCK", "tsc", 1);
	cr_assert_eq(bb_init(0), 0);
	if (cpu_invariant_tsc())
		expect_clock(BB_CLOCK_TSC, BB_CLOCK_TSC, BB_CLOCK_WHY_ASKED_UNTRUSTED);
	else
		expect_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_TSC, BB_CLOCK_WHY_NOT_INVARIANT);
}

Test(clock, option_monotonic_on_a_trusted_tsc)
{
	struct bb_options o = { .clock = BB_CLOCK_MONOTONIC };

	fake_clocksource("tsc");
	cr_assert_eq(bb_init_opts(&o), 0);
	expect_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_MONOTONIC, BB_CLOCK_WHY_ASKED);
}

/*
 * A default TSC box: each record's wall time (what bb-extract prints)
 * lies between CLOCK_REALTIME read just before and just after its write,
 * up to the error bound of bb_init(3): the anchor (one clock read,
 * microseconds; 100 ms allows for a preempted bb_init() on a loaded
 * machine) plus the calibration's frequency error (a few ppm; 100 ppm
 * allowed) over the time since bb_init().  Between two records 20 ms
 * apart the anchor cancels: their distance is bracketed by the realtime
 * reads around them, up to the frequency error alone.
 */
#define WALL_WRITES 8
Test(clock, tsc_box_extracts_to_the_wall_time_of_each_write)
{
	int64_t before[WALL_WRITES], after[WALL_WRITES], wall[WALL_WRITES], t0;
	struct bb_box_info in;
	struct tcollect c;
	char path[512];
	int seen = 0;

	fake_clocksource("tsc");
	if (!cpu_invariant_tsc())
		cr_skip_test("no invariant TSC on this machine");
	t0 = now_ns(CLOCK_REALTIME);
	cr_assert_eq(bb_init(0), 0);
	box_info(&in);
	cr_assert_eq(in.clock, BB_CLOCK_TSC);
	for (int i = 0; i < WALL_WRITES; i++) {
		struct timespec d = { 0, 20000000 };

		before[i] = now_ns(CLOCK_REALTIME);
		cr_assert_eq(bb_write_kv_i64("wall", i), 0);
		after[i] = now_ns(CLOCK_REALTIME);
		nanosleep(&d, NULL);
	}
	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	tcollect_path(path, &c);
	for (size_t k = 0; k < c.n; k++) {
		const struct trec *t = &c.r[k];

		if (t->tag != BB_TAG_KV || strcmp(t->key, "wall"))
			continue;
		cr_assert(t->i >= 0 && t->i < WALL_WRITES);
		wall[t->i] = (int64_t)in.anchor_realtime_ns +
			     ((int64_t)t->ts - in.anchor_clock_ns);
		seen++;
	}
	cr_assert_eq(seen, WALL_WRITES);
	for (int i = 0; i < WALL_WRITES; i++) {
		int64_t slack = 100000000 + (after[i] - t0) / 10000;

		cr_expect_geq(wall[i], before[i] - slack, "record %d: wall %lld < before %lld",
			      i, (long long)wall[i], (long long)before[i]);
		cr_expect_leq(wall[i], after[i] + slack, "record %d: wall %lld > after %lld",
			      i, (long long)wall[i], (long long)after[i]);
		if (i > 0) {
			int64_t d = wall[i] - wall[i - 1];
			int64_t lo = before[i] - after[i - 1], hi = after[i] - before[i - 1];
			int64_t fs = hi / 10000 + 1000; /* 100 ppm + rounding */

			cr_expect_geq(d, lo - fs, "records %d..%d: %lld ns < %lld", i - 1, i,
				      (long long)d, (long long)lo);
			cr_expect_leq(d, hi + fs, "records %d..%d: %lld ns > %lld", i - 1, i,
				      (long long)d, (long long)hi);
		}
	}
	free(c.r);
}
