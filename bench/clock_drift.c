/* SPDX-License-Identifier: MIT */
/*
 * clock_drift - how far a TSC box's timestamps wander from CLOCK_MONOTONIC
 * over time (BENCHMARKS.md "TSC clock: drift").
 *
 * Creates a box with bb_options.clock = BB_CLOCK_TSC (so bb_init()
 * calibrates the TSC exactly as it does for any box), opens it with the
 * reader to get the calibration the header stores, and then every INTERVAL
 * seconds for DURATION seconds takes one (TSC, CLOCK_MONOTONIC) pair, the
 * tightest of 9 reads "rdtsc; clock_gettime; rdtsc" stamped at the middle of
 * its TSC window, and converts the TSC with bb_reader_ts_ns() - what
 * bb-extract does with every record.  The offset (converted - monotonic) at
 * each step is printed; the summary gives the offset at the end, its largest
 * magnitude, and the drift rate in ppm (least-squares slope of offset
 * against elapsed time).  Each step also writes a record, so the box holds
 * the same stamps for inspection with bb-extract.
 *
 * CLOCK_MONOTONIC is slewed by NTP (adjtimex) while the TSC is not: the
 * drift measured here is the calibration's frequency error plus whatever
 * NTP did to CLOCK_MONOTONIC during the run, which is exactly the error a
 * TSC box's wall times carry against a monotonic box's.
 *
 * Usage: clock_drift [-d DURATION_S] [-i INTERVAL_S]   (defaults 60 and 5)
 * Exits 77 (skipped) where there is no TSC clock (not x86-64, or no
 * invariant TSC: the box fell back).  Benchmark, not a test.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#if defined(__x86_64__)
#include <x86intrin.h>

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One (TSC, monotonic) pair; returns the TSC window's width in ticks. */
static uint64_t pair(uint64_t *tsc, int64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 9; i++) {
		uint64_t t0 = __rdtsc();
		int64_t n = mono_ns();
		uint64_t t1 = __rdtsc();

		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
	return best;
}

int main(int argc, char **argv)
{
	double duration = 60, interval = 5;
	struct bb_options o = { .clock = BB_CLOCK_TSC, .size = 1u << 20,
				.flags = BB_OPT_NO_ENV };
	struct bb_reader *r = NULL;
	const struct bb_box_info *in;
	char path[256], err[256];
	double sx = 0, sy = 0, sxx = 0, sxy = 0, maxabs = 0;
	int64_t start, off = 0;
	unsigned long n = 0;
	int c, rc;

	while ((c = getopt(argc, argv, "d:i:")) != -1) {
		switch (c) {
		case 'd': duration = strtod(optarg, NULL); break;
		case 'i': interval = strtod(optarg, NULL); break;
		default:
			fprintf(stderr, "usage: %s [-d DURATION_S] [-i INTERVAL_S]\n", argv[0]);
			return 2;
		}
	}
	if (duration <= 0 || interval <= 0) {
		fprintf(stderr, "clock_drift: duration and interval must be > 0\n");
		return 2;
	}
	rc = bb_init_opts(&o);
	if (rc < 0) {
		fprintf(stderr, "clock_drift: bb_init_opts: %s\n", strerror(-rc));
		return 1;
	}
	rc = bb_path(path, sizeof(path));
	if (rc >= 0)
		rc = bb_reader_open_path(path, 0, &r, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "clock_drift: open %s: %s\n", path, strerror(-rc));
		return 1;
	}
	in = bb_reader_info(r);
	if (in->clock != BB_CLOCK_TSC) {
		printf("clock_drift: skipped: the box fell back to CLOCK_MONOTONIC "
		       "(no invariant TSC)\n");
		bb_reader_close(r);
		bb_close();
		return 77;
	}
	printf("clock_drift: TSC %" PRIu64 " Hz (calibrated by bb_init), "
	       "%.0f s every %.1f s\n", in->tsc_hz, duration, interval);
	printf("%10s %14s %8s\n", "elapsed_s", "offset_ns", "window");
	start = mono_ns();
	for (;;) {
		uint64_t tsc = 0;
		int64_t ns = 0;
		uint64_t w = pair(&tsc, &ns);
		double x = (double)(ns - start) / 1e9, y;

		off = (int64_t)bb_reader_ts_ns(in, tsc) - ns;
		y = (double)off;
		bb_write_kv_i64("drift_ns", off);
		sx += x; sy += y; sxx += x * x; sxy += x * y; n++;
		if (y > maxabs || -y > maxabs)
			maxabs = y < 0 ? -y : y;
		printf("%10.1f %14" PRId64 " %8" PRIu64 "\n", x, off, w);
		fflush(stdout);
		if (x >= duration)
			break;
		struct timespec d = { (time_t)interval,
				      (long)((interval - (double)(time_t)interval) * 1e9) };
		while (nanosleep(&d, &d) < 0 && errno == EINTR)
			;
	}
	{
		double den = (double)n * sxx - sx * sx;
		double slope = den > 0 ? ((double)n * sxy - sx * sy) / den : 0; /* ns per s */

		printf("clock_drift: %.0f s, %lu samples: offset at end %" PRId64
		       " ns, largest |offset| %.0f ns, drift %.3f ppm "
		       "(least-squares slope)\n",
		       (double)(mono_ns() - start) / 1e9, n, off, maxabs, slope / 1e3);
	}
	bb_reader_close(r);
	bb_close();
	return 0;
}
#else
int main(void)
{
	printf("clock_drift: skipped: the TSC clock exists on x86-64 only\n");
	return 77;
}
#endif
