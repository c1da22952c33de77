/* SPDX-License-Identifier: MIT */
/*
 * clock.h - record timestamps: converting them to nanoseconds (every reader)
 * and choosing and calibrating the writer's clock (box.c).  Internal, do not
 * use outside the library and its tools.
 *
 * A box's records are stamped in the clock its header names (FORMAT.md §3,
 * §11 "TSC clock").  BB_CLOCK_TSC stamps are raw TSC ticks; the header's
 * tsc_anchor / tsc_mult / tsc_shift turn them into CLOCK_MONOTONIC
 * nanoseconds, and anchor_realtime_ns / anchor_clock_ns into wall-clock time.
 *
 * The header is untrusted input to a reader: the conversions below never
 * invoke undefined behaviour whatever the fields hold (the shift is masked,
 * results saturate), they merely give a wrong time for a wrong header.
 */
#ifndef BB_CLOCK_H
#define BB_CLOCK_H

#include <stdint.h>

#include <blackbox/format.h>

/* 128-bit products; __extension__ keeps -Wpedantic quiet (GCC, Clang). */
__extension__ typedef __int128 bb__i128;

/* Saturating int64 addition (no UB on overflow). */
static inline int64_t bb__sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/*
 * bb__tsc_to_ns - CLOCK_MONOTONIC nanoseconds of the TSC stamp @ts, with
 * the calibration of header @h:
 *   anchor_clock_ns + ((ts - tsc_anchor) as signed 64-bit * tsc_mult) >> tsc_shift
 * with a 128-bit product (no overflow for any stamp of a box's life).  Only
 * meaningful when h->clock == BB_CLOCK_TSC; see bb__ts_to_ns() for any clock.
 * Saturates instead of overflowing; tsc_shift is taken modulo 64 (a writer
 * never stores more than 32).  AS-safe, no side effects.
 */
static inline int64_t bb__tsc_to_ns(const struct bb_header *h, uint64_t ts)
{
	int64_t d = (int64_t)(ts - h->tsc_anchor);
	bb__i128 p = (bb__i128)d * (bb__i128)h->tsc_mult;

	p >>= (h->tsc_shift & 63u);   /* arithmetic: GCC and Clang define it */
	if (p > INT64_MAX)
		p = INT64_MAX;
	else if (p < INT64_MIN)
		p = INT64_MIN;
	return bb__sat_add(h->anchor_clock_ns, (int64_t)p);
}

/*
 * bb__ts_to_ns - a record stamp @ts of header @h in nanoseconds of the
 * header's base clock: converted from ticks when h->clock is BB_CLOCK_TSC,
 * unchanged (already nanoseconds) otherwise.  The result is comparable with
 * anchor_clock_ns; wall-clock time is bb__ts_to_wall_ns().  AS-safe.
 */
static inline int64_t bb__ts_to_ns(const struct bb_header *h, uint64_t ts)
{
	if (h->clock == BB_CLOCK_TSC)
		return bb__tsc_to_ns(h, ts);
	return (int64_t)ts;
}

/* bb__ts_to_wall_ns - CLOCK_REALTIME nanoseconds of the stamp @ts (FORMAT.md
 * §3: anchor_realtime_ns + (ns - anchor_clock_ns)), saturating.  AS-safe. */
static inline int64_t bb__ts_to_wall_ns(const struct bb_header *h, uint64_t ts)
{
	int64_t ns = bb__ts_to_ns(h, ts);
	int64_t d;

	if (__builtin_sub_overflow(ns, h->anchor_clock_ns, &d))
		d = ns < 0 ? INT64_MIN : INT64_MAX;
	return bb__sat_add(h->anchor_realtime_ns, d);
}

/* bb__rdtsc() (x86-64) is in <blackbox/inline.h> (which <blackbox.h>
 * includes): the inline paths of the writers stamp records with it too. */
#include <blackbox.h>

/*
 * Writer side (clock.c).
 *
 * bb__clock_setup - choose the record clock for a new box and write the
 * header's clock fields: clock, clock_requested, anchor_realtime_ns,
 * anchor_clock_ns and, for BB_CLOCK_TSC, tsc_anchor/tsc_hz/tsc_mult/
 * tsc_shift, and clock_reason (enum bb_clock_reason).  @requested is 0
 * (default), BB_CLOCK_MONOTONIC or BB_CLOCK_TSC.  Returns the clock actually
 * used: BB_CLOCK_TSC only on x86-64 with an invariant TSC (CPUID 0x80000007
 * EDX bit 8) and a sane calibration, and, by default (@requested 0), only
 * when the kernel's current clocksource is the TSC (bb__clocksource_is_tsc());
 * an explicit BB_CLOCK_TSC is honoured on any clocksource (reason
 * BB_CLOCK_WHY_ASKED_UNTRUSTED).  BB_CLOCK_MONOTONIC otherwise.  Takes
 * about 2 ms for the first TSC box of a process (calibration), microseconds
 * otherwise.  Called by bb_init() and by a fork child's first write
 * (bb__nobox()): everything it calls (clock_gettime, open, read, close)
 * is async-signal-safe, and the calibration is reused there.
 */
int bb__clock_setup(struct bb_header *h, int requested);

/* Where the kernel names its current clocksource. */
#define BB__CLOCKSOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"

/*
 * bb__clocksource_is_tsc - is the kernel's current clocksource "tsc"?
 * Reads BB__CLOCKSOURCE_PATH, or for tests the regular file that
 * BB_TEST_CLOCKSOURCE names (secure_getenv(): ignored in set-user-ID
 * programs; a non-regular file counts as "not tsc", and is never waited
 * for).  false when unreadable.
 */
int bb__clocksource_is_tsc(void);

/* bb__tsc_invariant - does this CPU advertise an invariant TSC?  false on
 * anything but x86-64, and when the test hook BB_TEST_NO_INVARIANT_TSC=1 is
 * set in the environment (exercises the fallback on any machine). */
int bb__tsc_invariant(void);

#endif /* BB_CLOCK_H */
