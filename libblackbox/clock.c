/* SPDX-License-Identifier: MIT */
/*
 * clock.c - the writer's record clock: the x86-64 TSC, calibrated against
 * CLOCK_MONOTONIC once, in bb_init() (FORMAT.md §11 "TSC clock"), or
 * CLOCK_MONOTONIC.
 *
 * The choice (bb__clock_setup()): the clock asked for (bb_options.clock,
 * BLACKBOX_CLOCK) when there is one; by default the TSC only where the
 * kernel trusts it - its current clocksource is "tsc", which the kernel
 * keeps only while its watchdog finds the TSC stable and synchronised - and
 * the CPU reports it invariant; CLOCK_MONOTONIC otherwise.  The header
 * records the reason (enum bb_clock_reason), which bb-extract prints.
 *
 * Calibration: two (TSC, CLOCK_MONOTONIC) pairs about BB__CAL_NS apart.  Each
 * pair is the best of BB__CAL_TRIES reads "rdtsc; clock_gettime; rdtsc": the
 * one with the narrowest TSC window, stamped at the window's middle, so a
 * pair is off by at most half a window (a few ns when not preempted) instead
 * of a whole clock read.  With 2 ms between the pairs that is a frequency
 * error of a few ppm; measured against the kernel's own calibration in
 * BENCHMARKS.md "TSC clock".  CPUID leaves
 * 0x15/0x16 would give the nominal frequency without waiting, but they are
 * zero on KVM guests (and on most hypervisors): the measurement is the one
 * method that works everywhere.
 *
 * Why the TSC is only used when invariant (CPUID 0x80000007 EDX bit 8):
 * only then does it tick at a constant rate through P- and C-states and
 * stays synchronised across cores, which makes one calibration valid for
 * the whole box and timestamps comparable between threads.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "clock.h"
#include "writer.h"

#define BB__CAL_NS     2000000   /* 2 ms between the calibration pairs */
#define BB__CAL_TRIES  9

static int64_t bb__clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int bb__tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	const char *hook = secure_getenv("BB_TEST_NO_INVARIANT_TSC");

	if (hook && *hook && strcmp(hook, "0"))
		return 0;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

int bb__clocksource_is_tsc(void)
{
	const char *path = secure_getenv("BB_TEST_CLOCKSOURCE");
	char buf[32];
	struct stat st;
	ssize_t n;
	int fd;

	if (!path || !*path)
		path = BB__CLOCKSOURCE_PATH;
	/* O_NONBLOCK: a FIFO named by the test hook must not block
	 * bb_init(); only a regular file (sysfs attributes are) is read. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return !strcmp(buf, "tsc\n") || !strcmp(buf, "tsc");
}

#if defined(__x86_64__)
/*
 * The calibration of this process's first TSC box, reused by later boxes
 * (bb_close() then bb_init(), and above all the child of fork(), whose box
 * is created by its first write: it must not busy-wait 2 ms there).  Only
 * the anchor is taken anew.  Written and read under bb_init()'s contract
 * (one bb_init() at a time) or in a fork child, which has one thread at
 * that point or elects one creator (box.c, bb__nobox()).
 */
static struct {
	uint64_t hz;
	uint32_t mult, shift;
} bb__tsc_cal;

/* One (TSC, CLOCK_MONOTONIC) pair, read as described at the top: the
 * tightest of BB__CAL_TRIES; the first try always sets @tsc and @ns. */
static void bb__tsc_pair(uint64_t *tsc, int64_t *ns)
{
	uint64_t best = 0;

	for (int i = 0; i < BB__CAL_TRIES; i++) {
		uint64_t t0 = bb__rdtsc();
		int64_t n = bb__clock_ns(CLOCK_MONOTONIC);
		uint64_t t1 = bb__rdtsc();

		if (i == 0 || t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

/*
 * Calibrate and anchor; false if the TSC misbehaves (went backwards, or a
 * frequency outside 100 MHz .. 100 GHz: a broken virtual TSC).
 */
static bool bb__tsc_calibrate(struct bb_header *h)
{
	uint64_t t0, t1, dt, mult;
	int64_t n0, n1, dn;
	unsigned shift;

	if (bb__tsc_cal.hz) {
		bb__tsc_pair(&t1, &n1);
		h->tsc_hz = bb__tsc_cal.hz;
		h->tsc_mult = bb__tsc_cal.mult;
		h->tsc_shift = bb__tsc_cal.shift;
		h->tsc_anchor = t1;
		h->anchor_clock_ns = n1;
		return true;
	}
	bb__tsc_pair(&t0, &n0);
	do
		n1 = bb__clock_ns(CLOCK_MONOTONIC);
	while (n1 - n0 < BB__CAL_NS);
	bb__tsc_pair(&t1, &n1);
	dt = t1 - t0;
	dn = n1 - n0;
	if ((int64_t)dt <= 0 || dn <= 0)
		return false;
	/* hz = dt * 1e9 / dn, in 128 bits (dt * 1e9 overflows 64). */
	h->tsc_hz = (uint64_t)((bb__i128)dt * 1000000000 / dn);
	if (h->tsc_hz < UINT64_C(100000000) || h->tsc_hz > UINT64_C(100000000000))
		return false;
	/* ns = ticks * mult >> shift with mult = dn / dt * 2^shift: the
	 * largest shift <= 32 whose mult fits 32 bits (shift 32 for any TSC
	 * above 1 GHz: mult ~ 2^31.6 at 2.6 GHz, a relative rounding error
	 * below 1e-9).  Readers do the product in 128 bits, so no range is
	 * lost to a small shift. */
	for (shift = 32;; shift--) {
		mult = (uint64_t)(((bb__i128)dn << shift) / (bb__i128)dt);
		if (mult <= UINT32_MAX || shift == 0)
			break;
	}
	if (mult > UINT32_MAX || mult == 0)
		return false;
	h->tsc_mult = (uint32_t)mult;
	h->tsc_shift = shift;
	bb__tsc_cal.hz = h->tsc_hz;
	bb__tsc_cal.mult = h->tsc_mult;
	bb__tsc_cal.shift = shift;
	/* The anchor is the second pair: the calibration's own end point. */
	h->tsc_anchor = t1;
	h->anchor_clock_ns = n1;
	return true;
}
#endif

int bb__clock_setup(struct bb_header *h, int requested)
{
	int clock = BB_CLOCK_MONOTONIC;
	int reason;

	h->clock_requested = (uint8_t)requested;
#if defined(__x86_64__)
	if (requested == BB_CLOCK_MONOTONIC) {
		reason = BB_CLOCK_WHY_ASKED;
	} else if (!bb__tsc_invariant()) {
		reason = BB_CLOCK_WHY_NOT_INVARIANT;
	} else if (requested == BB_CLOCK_TSC) {
		clock = BB_CLOCK_TSC;
		reason = bb__clocksource_is_tsc() ? BB_CLOCK_WHY_ASKED
						  : BB_CLOCK_WHY_ASKED_UNTRUSTED;
	} else if (bb__clocksource_is_tsc()) {
		clock = BB_CLOCK_TSC;
		reason = BB_CLOCK_WHY_TRUSTED;
	} else {
		reason = BB_CLOCK_WHY_CLOCKSOURCE;
	}
	if (clock == BB_CLOCK_TSC && !bb__tsc_calibrate(h)) {
		clock = BB_CLOCK_MONOTONIC;
		reason = BB_CLOCK_WHY_CALIBRATION;
	}
	h->clock_reason = (uint8_t)reason;
	if (clock == BB_CLOCK_TSC) {
		h->anchor_realtime_ns = bb__clock_ns(CLOCK_REALTIME);
		/* Read right after the anchor pair: the (realtime, anchor)
		 * pair is one clock read apart, as in the
		 * monotonic case below. */
		h->clock = BB_CLOCK_TSC;
		return clock;
	}
#else
	reason = requested == BB_CLOCK_MONOTONIC ? BB_CLOCK_WHY_ASKED : BB_CLOCK_WHY_NO_TSC;
	h->clock_reason = (uint8_t)reason;
#endif
	h->tsc_anchor = 0;
	h->tsc_hz = 0;
	h->tsc_mult = 0;
	h->tsc_shift = 0;
	h->anchor_realtime_ns = bb__clock_ns(CLOCK_REALTIME);
	h->anchor_clock_ns = bb__clock_ns(CLOCK_MONOTONIC);
	h->clock = (uint8_t)clock;
	return clock;
}
