/* SPDX-License-Identifier: MIT */
/*
 * bench/baselines.h - what the benchmark programs share: the timer,
 * the baselines every figure is compared with in the same run, order
 * statistics, thread pinning, and a look at the box through format.h.
 *
 * Internal to bench/: not installed, not part of the library's ABI.  Names
 * carry a bt_ prefix (bench tool) so they never collide with bb_.
 *
 * The timer: on x86-64 a TSC read fenced on both sides ("lfence; rdtsc"
 * before, "rdtscp; lfence" after: the measured code can neither start
 * before the first read nor be still running at the second), converted to
 * nanoseconds with a frequency calibrated against CLOCK_MONOTONIC at
 * start-up.  Elsewhere clock_gettime(CLOCK_MONOTONIC), ticks = ns.  Either
 * way the timer has a floor of its own (the fenced pair costs tens of
 * cycles): every program reports it as the "timer floor" row, measured the
 * same way as everything else, so that it can be read off the figures.
 */
#ifndef BENCH_BASELINES_H
#define BENCH_BASELINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#define BT_HAVE_RDTSC 1
#else
#define BT_HAVE_RDTSC 0
#endif

/* ---- timer --------------------------------------------------------------- */

/* Nanoseconds per timer tick (calibrated by bt_timer_init()). */
extern double bt_ns_per_tick;
/* Smallest step the timer was seen to take, in ns. */
extern double bt_resolution_ns;
/* What the timer is, its frequency and resolution, for the report. */
extern char bt_timer_desc[160];

/* Calibrate the timer (about 0.2 s on x86-64).  Returns 0. */
int bt_timer_init(void);

static inline uint64_t bt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Timestamps for the start and the end of one timed region. */
static inline uint64_t bt_tick_begin(void)
{
#if BT_HAVE_RDTSC
	uint64_t t;

	_mm_lfence();       /* earlier instructions have completed */
	t = __rdtsc();
	_mm_lfence();       /* the timed code does not start before the read */
	return t;
#else
	return bt_mono_ns();
#endif
}

static inline uint64_t bt_tick_end(void)
{
#if BT_HAVE_RDTSC
	unsigned aux;
	uint64_t t = __rdtscp(&aux);   /* waits for the timed code to complete */

	_mm_lfence();       /* later code does not start before the read */
	return t;
#else
	return bt_mono_ns();
#endif
}

/* ---- baselines ----------------------------------------------------------- */

/* The line every baseline writes: what bb_write_kv(bt_key, bt_val) records. */
extern const char bt_key[];     /* "req" */
extern const char bt_val[];     /* "GET /index" */
extern const char bt_line[];    /* "req=GET /index\n" */
#define BT_LINE_LEN 15u

/* Per-thread state of the baselines. */
struct bt_ctx {
	int fd;          /* write(2) baseline: a fresh unlinked file in /tmp */
	FILE *f;         /* stdio baselines: the same file through stdio */
	uint64_t sink;   /* keeps bare timer reads from being optimised out */
	int err;         /* first failure (negative errno) */
	uint64_t dropped;/* bb_write_* calls that returned -EBUSY (record dropped) */
};

/* Open @c's file in /tmp (unlinked at once).  Returns 0 or a negative errno. */
int bt_ctx_open(struct bt_ctx *c);
/* Empty the file again, so that every operation starts from the same state. */
void bt_ctx_reset(struct bt_ctx *c);
void bt_ctx_close(struct bt_ctx *c);

/* One call of each baseline.  Inline: the timed region holds only the call. */
static inline void bt_base_clock(struct bt_ctx *c)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	c->sink += (uint64_t)ts.tv_nsec;
}

static inline void bt_base_rdtsc(struct bt_ctx *c)
{
#if BT_HAVE_RDTSC
	c->sink += __rdtsc();
#else
	(void)c;
#endif
}

/*
 * BT_OP(name, count, stmt) - a noinline function name() running @stmt
 * @count times (the loop variable is i), the unit the best-batch programs
 * time.  @stmt may set the int bad (an |= of a call's result); name()
 * returns it, so a failed call is caught, not timed.
 */
#define BT_OP(name, count, stmt)                                        \
	static __attribute__((noinline)) int name(void)                 \
	{                                                               \
		int bad = 0;                                            \
		for (unsigned long i = 0; i < (count); i++) {           \
			stmt;                                           \
		}                                                       \
		return bad;                                             \
	}

void bt_base_write(struct bt_ctx *c);          /* write(2) of bt_line */
void bt_base_fprintf_flush(struct bt_ctx *c);  /* fprintf + fflush */
void bt_base_fprintf(struct bt_ctx *c);        /* fprintf, buffered: lost on SIGKILL */

/* ---- best batches -------------------------------------------------------- */

/* Per call, in ns, over the batches of bt_best(). */
struct bt_stat3 {
	double min, p10, p50;
};

/*
 * bt_best - run @fn (a BT_OP function making @calls calls) in @nbatch timed
 * batches after a warm-up of a tenth as many (the ring claim, the PLT,
 * every ring wrapped), and return the minimum, the 10th percentile and the
 * median of the per-call times.  A batch that shared its core with
 * anything else is slower, never faster: the minimum estimates the cost on
 * a quiet core.  Exits with a message naming @prog if @fn returns
 * non-zero (a call failed: nothing to time).
 */
struct bt_stat3 bt_best(int (*fn)(void), unsigned long nbatch, unsigned long calls,
			const char *prog);

/* ---- statistics ---------------------------------------------------------- */

/* Sort @v in place and return its @p quantile (0 <= p <= 1), nearest rank. */
double bt_quantile(double *v, size_t n, double p);
uint32_t bt_quantile_u32(uint32_t *v, size_t n, double p);   /* sorts v */
double bt_median(const double *v, size_t n);                 /* copies v */

/* ---- command line ------------------------------------------------------ */

/* A decimal number in [lo, hi], or @usage() (which must not return). */
unsigned long bt_parse_ul(const char *s, unsigned long lo, unsigned long hi,
			  void (*usage)(void));
/* The options of the best-batch programs (bench_floor, bench_shadow):
 * -b BATCHES into *nbatch, -n CALLS into *ncalls and, when
 * @nround is not NULL, -r ROUNDS into *nround; anything else, or an
 * operand, calls @usage().  Then calibrates the timer (bt_timer_init);
 * exits with 1 and a message naming @prog if it cannot. */
void bt_batch_setup(int argc, char **argv, const char *prog, unsigned long *nbatch,
		    unsigned long *ncalls, unsigned long *nround, void (*usage)(void));
/* A comma-separated list of such numbers into @out (at most @max; at
 * least one).  Returns the count; @s is modified (strtok). */
unsigned bt_parse_list(char *s, unsigned long *out, unsigned max, unsigned long lo,
		       unsigned long hi, void (*usage)(void));

/* ---- threads ------------------------------------------------------------- */

/* Online CPUs (>= 1). */
int bt_ncpu(void);
/* Pin the calling thread to CPU idx mod ncpu (best effort). */
void bt_pin(unsigned idx);

/* ---- the box, read through format.h -------------------------------------- */

struct bt_box {
	uint64_t box_size, ring_size;
	uint32_t ring_count, max_record;
	uint32_t seg_count, seg_size; /* format 3.0: thread storage; 0 before */
	uint64_t bytes;            /* bytes ever written: every ring's head, and
	                            * (3.0) every thread log's furthest head */
	uint64_t held;             /* bytes of records held now: rings' head - tail
	                            * and segments' head - start */
	uint32_t private_used;     /* private rings (3.0: thread logs) with a record */
	uint32_t private_full;     /* private rings written round (head >= ring_size);
	                            * 3.0: 1 when every segment was handed out */
	uint64_t dropped;          /* dropped_busy + dropped_nested + dropped_toobig */
	uint64_t overflow;         /* 3.0: records to the shared ring for want of a segment */
	uint64_t truncated;
	unsigned clock, clock_requested, crc;
};

/* Read this process's box header and ring table.  0 or a negative errno. */
int bt_box_read(struct bt_box *b);
const char *bt_clock_name(unsigned clock);

/* Print "machine: ..." lines (CPU model, CPUs, kernel, load, date). */
void bt_print_machine(FILE *out);

#endif /* BENCH_BASELINES_H */
