/* SPDX-License-Identifier: MIT */
/*
 * bench_latency.c - per-call latency distribution and throughput of the
 * writers at 1, 2, 8 and 64 threads, beside the baselines.
 *
 * For every operation and thread count, in one process:
 *
 *  1. Latency: every thread times SAMPLES single calls, each between a
 *     fenced timer read before and after (baselines.h), into an array
 *     allocated before the run: no allocation, no printing, no system call
 *     inside the measured loop.  The table gives p50, p99, p99.9 and max of
 *     all threads' samples in ns.  The "timer floor" row is the same timed
 *     region around nothing: what every other row includes.
 *  2. Throughput: every thread calls the operation COUNT / threads times
 *     in a tight loop.  Per thread: its calls / its own elapsed time;
 *     total: all calls / the wall time from the common start to the last
 *     thread's end (each thread reads CLOCK_MONOTONIC around its loop).  MB/s counts the bytes the records occupy in the
 *     rings (envelope, value, padding: the sum of the ring heads before
 *     and after), or the line the baselines write.  "ns/call" is the
 *     median thread's CPU time (CLOCK_THREAD_CPUTIME_ID) per call: the
 *     cost of a call with preemption taken out, comparable across thread
 *     counts and with the bare clock and rdtsc loops (the latency rows
 *     include the timer floor; these do not).
 *
 * Threads start together (a barrier after each thread's warm-up) and
 * thread i is pinned to CPU i mod ncpu.  8 and 64 threads on 2 CPUs are
 * oversubscribed on purpose: a writer never waits for another (each thread
 * writes its own segments, the box has room for every thread), so
 * the only thing that can stretch a call is the kernel taking the CPU away
 * (preemption).  To tell the two apart each thread counts its context
 * switches (getrusage(RUSAGE_THREAD)) over its measured loop: a voluntary
 * switch is the thread blocking (waiting), an involuntary one is a
 * preemption, and the "slow" column counts samples over 10 us.  If the
 * slow samples of a writer are no more frequent, per ns of call, than
 * those of the bare clock read at the same thread count, and voluntary
 * switches are 0, nothing but preemption stretched them.
 *
 * The box: bb_init_opts() with a quarter MiB per thread (-R: per that
 * many threads), and at least the default 4 MiB, segments as the size
 * gives them, the BLACKBOX_* environment honoured (BLACKBOX_DIR,
 * and the clock and checksum variables of the writer: run the same binary
 * with BLACKBOX_CLOCK=tsc to measure the TSC clock).  The header's clock
 * and checksum flag are printed with the table.
 *
 * Usage: bench_latency [-r REPEAT] [-n SAMPLES] [-c COUNT] [-t T1,T2,...]
 *                      [-R RINGS] [-o OPS]
 *   -r  repetitions of the whole suite in one process; each figure is the
 *       median over repetitions (default 3)
 *   -n  latency samples per operation and thread count, split over the
 *       threads, at least 2000 per thread (default 200000; a tenth for
 *       the system-call baselines)
 *   -c  throughput calls per operation and thread count, split over the
 *       threads (default 2000000; a tenth for the system-call baselines)
 *   -t  thread counts (default 1,2,8,64; at most 256)
 *   -R  size the box for this many threads, a quarter MiB each, at least
 *       4 MiB (default: the largest thread count)
 *   -o  comma-separated operation names to run (default: all)
 *
 * A benchmark: it never fails on a figure.  It exits non-zero only when a
 * call fails or the box cannot be created.
 */
#include "baselines.h"

#include <blackbox.h>
#include <blackbox/format.h>

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_THREADS 256
#define MAX_TCOUNTS 8
#define MAX_REPEAT  15
#define SLOW_NS     10000.0   /* a sample this long was (almost surely) preempted */

/* ---- operations ---------------------------------------------------------- */

/* -EBUSY is not a failure: the shared ring was busy and the record was
 * dropped (only threads that got no segment write there). */
#define CHECK(c, expr) do {                                             \
	int r_ = (expr);                                                \
	if (__builtin_expect(r_ != 0, 0)) {                             \
		if (r_ == -EBUSY)                                       \
			(c)->dropped++;                                 \
		else if (!(c)->err)                                     \
			(c)->err = r_;                                  \
	}                                                               \
} while (0)

static inline void op_floor(struct bt_ctx *c, unsigned i) { (void)c; (void)i; }
static inline void op_clock(struct bt_ctx *c, unsigned i) { (void)i; bt_base_clock(c); }
static inline void op_rdtsc(struct bt_ctx *c, unsigned i) { (void)i; bt_base_rdtsc(c); }
static inline void op_kv(struct bt_ctx *c, unsigned i) { (void)i; CHECK(c, bb_write_kv(bt_key, bt_val)); }
static inline void op_i64(struct bt_ctx *c, unsigned i) { CHECK(c, bb_write_i64((int64_t)i * 1000003)); }

static inline void op_event4(struct bt_ctx *c, unsigned i)
{
	struct bb_field f[4] = {
		BB_STR("method", "GET"),
		BB_STR("path", "/index"),
		BB_I64("status", 200),
		BB_U64("bytes", 4096 + i),
	};

	CHECK(c, bb_write_event("http", f, 4));
}

static inline void op_write(struct bt_ctx *c, unsigned i) { (void)i; bt_base_write(c); }
static inline void op_fflush(struct bt_ctx *c, unsigned i) { (void)i; bt_base_fprintf_flush(c); }
static inline void op_fprintf(struct bt_ctx *c, unsigned i) { (void)i; bt_base_fprintf(c); }

/*
 * Each operation gets its own sampling loop and throughput loop, so the
 * timed region holds the call itself and no indirect call.  The compiler
 * barrier keeps the empty "floor" region from being merged or moved.
 */
#define DEFINE_LOOPS(name)                                                      \
static void sample_##name(struct bt_ctx *c, uint32_t *out, unsigned n)          \
{                                                                               \
	for (unsigned i = 0; i < n; i++) {                                      \
		uint64_t t0 = bt_tick_begin(), d;                               \
		op_##name(c, i);                                                \
		__asm__ __volatile__("" ::: "memory");                          \
		d = bt_tick_end() - t0;                                         \
		out[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;             \
	}                                                                       \
}                                                                               \
static void loop_##name(struct bt_ctx *c, unsigned n)                           \
{                                                                               \
	for (unsigned i = 0; i < n; i++)                                        \
		op_##name(c, i);                                                \
}

DEFINE_LOOPS(floor)
DEFINE_LOOPS(clock)
DEFINE_LOOPS(rdtsc)
DEFINE_LOOPS(kv)
DEFINE_LOOPS(i64)
DEFINE_LOOPS(event4)
DEFINE_LOOPS(write)
DEFINE_LOOPS(fflush)
DEFINE_LOOPS(fprintf)

enum { OP_FLOOR, OP_CLOCK, OP_RDTSC, OP_KV, OP_I64, OP_EVENT4, OP_WRITE,
       OP_FFLUSH, OP_FPRINTF, NOPS };

enum op_kind { K_TIMER, K_BOX, K_LINE };

struct op {
	const char *key;     /* for -o */
	const char *name;    /* for the table */
	void (*sample)(struct bt_ctx *, uint32_t *, unsigned);
	void (*loop)(struct bt_ctx *, unsigned);
	enum op_kind kind;   /* what MB/s counts */
	unsigned div;        /* 10 for system calls: fewer calls */
};

#define OP(k, label, fn, kind, div) { k, label, sample_##fn, loop_##fn, kind, div }
static const struct op ops[NOPS] = {
	[OP_FLOOR]   = OP("floor", "timer floor (empty region)", floor, K_TIMER, 1),
	[OP_CLOCK]   = OP("clock", "clock_gettime(MONOTONIC)", clock, K_TIMER, 1),
#if BT_HAVE_RDTSC
	[OP_RDTSC]   = OP("rdtsc", "rdtsc", rdtsc, K_TIMER, 1),
#endif
	[OP_KV]      = OP("kv", "bb_write_kv req=GET /index", kv, K_BOX, 1),
	[OP_I64]     = OP("i64", "bb_write_i64", i64, K_BOX, 1),
	[OP_EVENT4]  = OP("event4", "bb_write_event 4 fields", event4, K_BOX, 1),
	[OP_WRITE]   = OP("write", "write(2) of the line", write, K_LINE, 10),
	[OP_FFLUSH]  = OP("fflush", "fprintf+fflush", fflush, K_LINE, 10),
	[OP_FPRINTF] = OP("fprintf", "fprintf buffered (lost on SIGKILL)", fprintf, K_LINE, 1),
};

/* ---- configuration and results ------------------------------------------- */

static unsigned cfg_repeat = 3;
static unsigned cfg_samples = 200000;
static unsigned cfg_count = 4000000;
static unsigned cfg_threads[MAX_TCOUNTS] = { 1, 2, 8, 64 };
static unsigned cfg_ntc = 4;
static unsigned cfg_rings;
static int cfg_op[NOPS];

struct lat { double p50, p99, p999, max, slow_pm, vcsw_pm, ivcsw_pm; };
struct thr { double ns_call, per_thread, total, mb_thread, mb_total, drop_pm; };
static struct lat lat_res[MAX_TCOUNTS][NOPS][MAX_REPEAT];
static struct thr thr_res[MAX_TCOUNTS][NOPS][MAX_REPEAT];

static unsigned samples_per_thread(const struct op *o, unsigned nt)
{
	unsigned n = cfg_samples / o->div / nt;

	return n < 2000 ? 2000 : n;
}

static unsigned count_per_thread(const struct op *o, unsigned nt)
{
	unsigned n = cfg_count / o->div / nt;

	return n < 1000 ? 1000 : n;
}

/* ---- workers ------------------------------------------------------------- */

struct worker {
	pthread_t th;
	unsigned idx, nt;
	struct bt_ctx c;
	uint32_t *samples;     /* preallocated: samples_per_thread() at most */
	unsigned nsamples;
	long vcsw, ivcsw;      /* context switches during the latency loop */
	uint64_t t_start, t_end; /* CLOCK_MONOTONIC around the throughput loop */
	uint64_t cpu_ns;         /* CLOCK_THREAD_CPUTIME_ID spent in that loop */
	unsigned calls;
};

static pthread_barrier_t bar;
static int cur_op;            /* written by main before a barrier */
static int stop_workers;      /* likewise */

static void csw(long *v, long *iv)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	*v = ru.ru_nvcsw;
	*iv = ru.ru_nivcsw;
}

/* This thread's CPU time: the time it really ran, preemption excluded. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	bt_pin(w->idx);
	for (;;) {
		const struct op *o;
		long v0, iv0, v1, iv1;
		uint64_t cpu0;
		unsigned n, warm;

		/* The barriers order main's writes of cur_op/stop_workers
		 * before our reads (pthread_barrier_wait synchronises
		 * memory, POSIX 4.12). */
		pthread_barrier_wait(&bar);
		if (stop_workers)
			break;
		o = &ops[cur_op];
		n = samples_per_thread(o, w->nt);
		bt_ctx_reset(&w->c);
		/* Warm-up: the ring claim (first write), PLT, caches, branch
		 * predictors, the file's page cache; rings wrap many times
		 * during the run anyway. */
		warm = n / 4 < 1000 ? 1000 : n / 4;
		o->loop(&w->c, warm);
		pthread_barrier_wait(&bar);            /* start together */
		csw(&v0, &iv0);
		o->sample(&w->c, w->samples, n);
		csw(&v1, &iv1);
		w->nsamples = n;
		w->vcsw = v1 - v0;
		w->ivcsw = iv1 - iv0;
		pthread_barrier_wait(&bar);            /* latency done: main reads the box */
		w->c.dropped = 0;                      /* count the throughput loop's */
		pthread_barrier_wait(&bar);            /* throughput: start together */
		n = count_per_thread(o, w->nt);
		cpu0 = cpu_ns();
		w->t_start = bt_mono_ns();
		o->loop(&w->c, n);
		w->t_end = bt_mono_ns();
		w->cpu_ns = cpu_ns() - cpu0;
		w->calls = n;
		pthread_barrier_wait(&bar);            /* done */
	}
	return NULL;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Run every selected operation with @nt threads, repetition @rep. */
static int run_threads(unsigned ti, unsigned nt, unsigned rep, uint32_t *all)
{
	struct worker *ws = calloc(nt, sizeof(*ws));
	double *per = calloc(nt, sizeof(double)), *cpu = calloc(nt, sizeof(double));
	int ret = 0;

	if (!ws || !per || !cpu)
		return -ENOMEM;
	pthread_barrier_init(&bar, NULL, nt + 1);
	stop_workers = 0;
	for (unsigned i = 0; i < nt; i++) {
		ws[i].idx = i;
		ws[i].nt = nt;
		ws[i].samples = malloc((size_t)samples_per_thread(&ops[OP_FLOOR], nt) * sizeof(uint32_t));
		ret = ws[i].samples ? bt_ctx_open(&ws[i].c) : -ENOMEM;
		if (!ret && pthread_create(&ws[i].th, NULL, worker_main, &ws[i]))
			ret = -EAGAIN;
		if (ret < 0) {
			fprintf(stderr, "%u threads: %s\n", nt, strerror(-ret));
			return ret;
		}
	}
	for (int op = 0; op < NOPS; op++) {
		struct lat *l = &lat_res[ti][op][rep];
		struct thr *t = &thr_res[ti][op][rep];
		struct bt_box b0, b1;
		size_t n = 0, slow = 0;
		double calls = 0, vcsw = 0, ivcsw = 0, bytes, dropped = 0;
		uint64_t t0 = UINT64_MAX, t1 = 0;

		if (!ops[op].sample || !cfg_op[op])
			continue;
		cur_op = op;
		pthread_barrier_wait(&bar);   /* go: warm up */
		pthread_barrier_wait(&bar);   /* warmed up: latency */
		pthread_barrier_wait(&bar);   /* latency done */
		for (unsigned i = 0; i < nt; i++) {
			for (unsigned k = 0; k < ws[i].nsamples; k++) {
				all[n] = ws[i].samples[k];
				slow += (double)all[n] * bt_ns_per_tick > SLOW_NS;
				n++;
			}
			vcsw += (double)ws[i].vcsw;
			ivcsw += (double)ws[i].ivcsw;
		}
		l->p50 = bt_quantile_u32(all, n, 0.50) * bt_ns_per_tick;
		l->p99 = all[(size_t)(0.99 * (double)n)] * bt_ns_per_tick;
		l->p999 = all[(size_t)(0.999 * (double)n)] * bt_ns_per_tick;
		l->max = all[n - 1] * bt_ns_per_tick;
		l->slow_pm = (double)slow * 1e6 / (double)n;
		l->vcsw_pm = vcsw * 1e6 / (double)n;
		l->ivcsw_pm = ivcsw * 1e6 / (double)n;

		bt_box_read(&b0);
		pthread_barrier_wait(&bar);   /* throughput: go */
		pthread_barrier_wait(&bar);   /* done */
		bt_box_read(&b1);
		for (unsigned i = 0; i < nt; i++) {
			if (ws[i].c.err) {
				fprintf(stderr, "%s: error %d (%s)\n", ops[op].name,
					ws[i].c.err, strerror(-ws[i].c.err));
				return ws[i].c.err;
			}
			/* Mcalls/s of this thread over its own elapsed time */
			per[i] = (double)ws[i].calls * 1e3 / (double)(ws[i].t_end - ws[i].t_start);
			/* the wall time: first start to last end (main itself may
			 * be scheduled late, after the workers are done) */
			t0 = ws[i].t_start < t0 ? ws[i].t_start : t0;
			t1 = ws[i].t_end > t1 ? ws[i].t_end : t1;
			cpu[i] = (double)ws[i].cpu_ns / (double)ws[i].calls;
			calls += ws[i].calls;
			dropped += (double)ws[i].c.dropped;
			ws[i].c.dropped = 0;
		}
		qsort(per, nt, sizeof(*per), cmp_dbl);
		t->per_thread = per[nt / 2];
		t->total = calls * 1e3 / (double)(t1 - t0);
		qsort(cpu, nt, sizeof(*cpu), cmp_dbl);
		t->ns_call = cpu[nt / 2];
		/* The logs' heads summed: a log whose segments were all taken
		 * (a thread of an earlier run, exited) leaves the sum, which
		 * can then go down: no figure (-1, printed "-") rather than a
		 * wrong one. */
		bytes = ops[op].kind == K_BOX ?
			(b1.bytes >= b0.bytes ? (double)(b1.bytes - b0.bytes) / calls : -1) :
			ops[op].kind == K_LINE ? BT_LINE_LEN : 0;
		t->mb_thread = t->per_thread * bytes;   /* Mcalls/s x bytes = MB/s */
		t->mb_total = t->total * bytes;
		/* Drops in the throughput loop, per million of its calls. */
		t->drop_pm = dropped * 1e6 / calls;
	}
	stop_workers = 1;
	pthread_barrier_wait(&bar);
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(ws[i].th, NULL);
		free(ws[i].samples);
		bt_ctx_close(&ws[i].c);
	}
	pthread_barrier_destroy(&bar);
	free(ws);
	free(per);
	free(cpu);
	return ret;
}

/* ---- report -------------------------------------------------------------- */

/* Median over the repetitions of one figure (a field of struct lat/thr). */
static double lat_med(unsigned ti, int op, size_t off)
{
	double v[MAX_REPEAT];

	for (unsigned r = 0; r < cfg_repeat; r++)
		v[r] = *(const double *)(const void *)((const char *)&lat_res[ti][op][r] + off);
	return bt_median(v, cfg_repeat);
}

static double thr_med(unsigned ti, int op, size_t off)
{
	double v[MAX_REPEAT];

	for (unsigned r = 0; r < cfg_repeat; r++)
		v[r] = *(const double *)(const void *)((const char *)&thr_res[ti][op][r] + off);
	return bt_median(v, cfg_repeat);
}

#define LAT(ti, op, f) lat_med((ti), (op), offsetof(struct lat, f))
#define THR(ti, op, f) thr_med((ti), (op), offsetof(struct thr, f))

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr, "usage: bench_latency [-r REPEAT] [-n SAMPLES] [-c COUNT] "
		"[-t T1,T2,...] [-R RINGS] [-o OP,...]\n  ops:");
	for (int op = 0; op < NOPS; op++)
		if (ops[op].key)
			fprintf(stderr, " %s", ops[op].key);
	fprintf(stderr, "\n");
	exit(2);
}

static void parse_ops(char *s)
{
	memset(cfg_op, 0, sizeof(cfg_op));
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		int found = 0;

		for (int op = 0; op < NOPS; op++)
			if (ops[op].key && !strcmp(ops[op].key, tok))
				cfg_op[op] = found = 1;
		if (!found)
			usage();
	}
}

int main(int argc, char **argv)
{
	unsigned maxt = 0;
	struct bb_options o = { 0 };
	struct bt_box box;
	uint32_t *all;
	int opt, ret;

	for (int op = 0; op < NOPS; op++)
		cfg_op[op] = 1;
	while ((opt = getopt(argc, argv, "r:n:c:t:R:o:h")) != -1) {
		switch (opt) {
		case 'r': cfg_repeat = (unsigned)bt_parse_ul(optarg, 1, MAX_REPEAT, usage); break;
		case 'n': cfg_samples = (unsigned)bt_parse_ul(optarg, 1, 1u << 30, usage); break;
		case 'c': cfg_count = (unsigned)bt_parse_ul(optarg, 1, 1u << 30, usage); break;
		case 'R': cfg_rings = (unsigned)bt_parse_ul(optarg, 1, 1000, usage); break;
		case 'o': parse_ops(optarg); break;
		case 't': {
			unsigned long t[MAX_TCOUNTS];

			cfg_ntc = bt_parse_list(optarg, t, MAX_TCOUNTS, 1, MAX_THREADS, usage);
			for (unsigned i = 0; i < cfg_ntc; i++)
				cfg_threads[i] = (unsigned)t[i];
			break;
		}
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	for (unsigned i = 0; i < cfg_ntc; i++)
		maxt = cfg_threads[i] > maxt ? cfg_threads[i] : maxt;
	cfg_op[OP_FLOOR] = cfg_op[OP_CLOCK] = 1;   /* every ratio needs them */
	bt_timer_init();

	/* -R: a box of that many 128 KiB "rings" worth of segments; by
	 * default a quarter MiB per thread and at least the default box */
	o.size = (size_t)(cfg_rings ? cfg_rings : maxt) * (256u << 10);
	if (o.size < BB_DEFAULT_SIZE)
		o.size = BB_DEFAULT_SIZE;
	ret = bb_init_opts(&o);
	if (ret < 0) {
		fprintf(stderr, "bb_init_opts: %s\n", strerror(-ret));
		return 1;
	}
	/* All samples of one operation at the largest thread count. */
	all = malloc(((size_t)samples_per_thread(&ops[OP_FLOOR], maxt) * maxt +
		      (size_t)cfg_samples + 2000) * sizeof(uint32_t));
	if (!all)
		return 1;
	bt_print_machine(stdout);
	bt_box_read(&box);
	{
		char clk[64];

		if (box.clock_requested && box.clock_requested != box.clock)
			snprintf(clk, sizeof(clk), "%s (asked for %s: fallback)",
				 bt_clock_name(box.clock), bt_clock_name(box.clock_requested));
		else
			snprintf(clk, sizeof(clk), "%s", bt_clock_name(box.clock));
		printf("box: %.1f MiB, %u segments of %u KiB, max record %u B, "
		       "clock %s, checksums %s\n", (double)box.box_size / 1048576.0,
		       box.seg_count, box.seg_size >> 10, box.max_record,
		       clk, box.crc ? "on" : "off");
	}
	printf("bench_latency: %u repetition(s); latency: %u samples per op, split over "
	       "the threads; throughput: %u calls per op, split over the threads "
	       "(system calls: a tenth); threads pinned to CPU i mod %d\n",
	       cfg_repeat, cfg_samples, cfg_count, bt_ncpu());
	fflush(stdout);

	/* Repetitions outermost: a burst of load from elsewhere on the
	 * machine then spoils one repetition of everything, which the
	 * median over repetitions discards, rather than every repetition of
	 * one figure. */
	for (unsigned r = 0; r < cfg_repeat * cfg_ntc; r++)
		if (run_threads(r % cfg_ntc, cfg_threads[r % cfg_ntc], r / cfg_ntc, all) < 0)
			return 1;

	printf("\nLatency of one call, ns (timer floor included), all threads' samples;\n"
	       "slow = samples > %.0f us, vcsw/ivcsw = voluntary/involuntary context\n"
	       "switches of the threads during the loop; all three per million calls.\n"
	       "Median over %u repetition(s).\n\n", SLOW_NS / 1000, cfg_repeat);
	printf("| %-34s | %3s | %8s | %8s | %8s | %10s | %8s | %6s | %8s |\n", "operation", "thr",
	       "p50", "p99", "p99.9", "max", "slow/M", "vcsw/M", "ivcsw/M");
	printf("|%s|----:|---------:|---------:|---------:|-----------:|---------:|-------:|---------:|\n",
	       "------------------------------------");
	for (int op = 0; op < NOPS; op++) {
		if (!ops[op].sample || !cfg_op[op])
			continue;
		for (unsigned ti = 0; ti < cfg_ntc; ti++)
			printf("| %-34s | %3u | %8.1f | %8.1f | %8.1f | %10.0f | %8.1f | %6.1f | %8.1f |\n",
			       ops[op].name, cfg_threads[ti], LAT(ti, op, p50),
			       LAT(ti, op, p99), LAT(ti, op, p999),
			       LAT(ti, op, max), LAT(ti, op, slow_pm),
			       LAT(ti, op, vcsw_pm), LAT(ti, op, ivcsw_pm));
	}

	printf("\nThroughput: tight loop; per thread = median thread's calls / its own time;\n"
	       "total = all calls / wall time; ns/call = the median thread's CPU time per\n"
	       "call (preemption excluded); x clock and\n"
	       "x rdtsc = ns/call over the bare clock_gettime / rdtsc ns/call at the same\n"
	       "thread count.  MB/s: bytes the records occupy in the ring (or the line).\n\n");
	printf("| %-34s | %3s | %7s | %7s | %7s | %9s | %9s | %8s | %8s |\n", "operation", "thr",
	       "ns/call", "x clock", "x rdtsc", "Mrec/s/t", "Mrec/s", "MB/s/t", "MB/s");
	printf("|%s|----:|--------:|--------:|--------:|----------:|----------:|---------:|---------:|\n",
	       "------------------------------------");
	for (int op = OP_CLOCK; op < NOPS; op++) {
		if (!ops[op].sample || !cfg_op[op])
			continue;
		for (unsigned ti = 0; ti < cfg_ntc; ti++) {
			double ns = THR(ti, op, ns_call);
			double clk = THR(ti, OP_CLOCK, ns_call);
			double tsc = ops[OP_RDTSC].sample && cfg_op[OP_RDTSC] ?
				THR(ti, OP_RDTSC, ns_call) : 0;
			char xt[16] = "-", mbt[16] = "-", mb[16] = "-";

			if (tsc > 0)
				snprintf(xt, sizeof(xt), "%.2f", ns / tsc);
			if (ops[op].kind != K_TIMER && THR(ti, op, mb_total) >= 0) {
				snprintf(mbt, sizeof(mbt), "%.1f", THR(ti, op, mb_thread));
				snprintf(mb, sizeof(mb), "%.1f", THR(ti, op, mb_total));
			}
			printf("| %-34s | %3u | %7.1f | %7.2f | %7s | %9.2f | %9.2f | %8s | %8s |\n",
			       ops[op].name, cfg_threads[ti], ns, ns / clk, xt,
			       THR(ti, op, per_thread), THR(ti, op, total), mbt, mb);
		}
	}

	for (int op = 0; op < NOPS; op++)
		for (unsigned ti = 0; ti < cfg_ntc; ti++)
			if (ops[op].sample && cfg_op[op] && THR(ti, op, drop_pm) > 0)
				printf("%s, %u threads: %.0f records dropped per million calls "
				       "(-EBUSY: threads without a segment, shared ring busy)\n",
				       ops[op].name, cfg_threads[ti], THR(ti, op, drop_pm));
	bt_box_read(&box);
	printf("\nbox after the run: %.1f MB written over all threads' logs (%.0f box "
	       "fills), %llu records dropped, %llu truncated, %llu to the shared ring\n",
	       (double)box.bytes / 1e6,
	       (double)box.bytes / ((double)box.seg_count * box.seg_size + 1),
	       (unsigned long long)box.dropped, (unsigned long long)box.truncated,
	       (unsigned long long)box.overflow);
	if (cfg_op[OP_KV]) {
		/* The targets (BENCHMARKS.md "Write path against the clock"):
		 * with the default clock, bb_write_kv <= 1.25x a bare
		 * clock_gettime; with the TSC clock, <= 1.5x a bare rdtsc.  Both
		 * ratios are printed; the target line is the one for the clock
		 * the box really uses. */
		double kv = THR(0, OP_KV, ns_call), clk = THR(0, OP_CLOCK, ns_call);
		double tsc = ops[OP_RDTSC].sample && cfg_op[OP_RDTSC] ? THR(0, OP_RDTSC, ns_call) : 0;

		printf("ratios, %u thread(s), clock %s: bb_write_kv / clock_gettime = %.2f",
		       cfg_threads[0], bt_clock_name(box.clock), kv / clk);
		if (tsc > 0)
			printf(", bb_write_kv / rdtsc = %.2f", kv / tsc);
		printf("\n");
		if (box.clock == BB_CLOCK_TSC && tsc > 0)
			printf("target (TSC clock): bb_write_kv <= 1.5x rdtsc: %.2f, %s\n",
			       kv / tsc, kv / tsc <= 1.5 ? "met" : "NOT met");
		else
			printf("target (clock %s): bb_write_kv <= 1.25x clock_gettime: %.2f, %s\n",
			       bt_clock_name(box.clock), kv / clk, kv / clk <= 1.25 ? "met" : "NOT met");
	}
	free(all);
	return 0;
}
