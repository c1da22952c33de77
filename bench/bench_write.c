/* SPDX-License-Identifier: MIT */
/*
 * bench_write.c - what a record costs, beside the baselines it must beat.
 *
 * For every operation: batches of BATCH calls, each batch timed with two
 * clock_gettime(CLOCK_MONOTONIC) reads (their cost, ~60 ns, is spread over
 * the batch: < 0.1 ns per call), after a warm-up.  A batch's time / BATCH
 * is one sample; the table gives the median and the 99th percentile of
 * the samples, i.e. of batch means, not of single calls (a single call
 * cannot be timed by a clock that costs as much as it does).
 *
 * Threads: every thread runs the same operation at the same time, each
 * with its own ring (and its own file for the write(2)/stdio baselines),
 * pinned to CPU (i mod ncpu).  Samples are per thread, so the figure is the
 * per-thread cost of a call while the other threads do the same.
 *
 * The whole suite is repeated REPEAT times in one process; a figure is the
 * median over the repetitions of that repetition's median (p99 likewise).
 *
 * The box is a default one (bb_init(0)) in /dev/shm, unless BLACKBOX_DIR
 * or BLACKBOX_SIZE say otherwise; BLACKBOX_CLOCK=tsc and BLACKBOX_CRC=0
 * measure the TSC clock and the write path without record checksums (the
 * box line of the report says which).  Every ring wraps many times during the
 * run: that is the steady state of a flight recorder, and the report says
 * how many times.  The box is unlinked at exit (atexit in the library, or
 * the SIGINT/SIGTERM handler below).
 *
 * Usage: bench_write [-r REPEAT] [-b BATCHES] [-n BATCH] [-t T1,T2,...]
 *
 * This is a benchmark: it never fails on a figure.  Targets are printed as
 * "met" / "NOT met" and recorded in BENCHMARKS.md, never asserted.
 */
#include <blackbox.h>
#include <blackbox/format.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#else
#define HAVE_RDTSC 0
#endif

#define MAX_THREADS 64
#define MAX_REPEAT  31

static const char kv_key[] = "req";
static const char kv_val[] = "GET /index";
static const char kv_line[] = "req=GET /index\n";   /* what the baselines write */
static char str16[17];
static char str1k[1025];

/* ---- operations --------------------------------------------------------- */

/* Per-thread context of an operation. */
struct ctx {
	int fd;          /* write(2) baseline */
	FILE *f;         /* stdio baselines */
	uint64_t sink;   /* keeps bare clock reads from being optimised out */
	int err;         /* first failure of a bb_write_* call */
};

typedef void (*batch_fn)(struct ctx *c, unsigned n);

/* Each batch function is its own loop: no indirect call per operation. */
#define CHECK(c, expr) do { int r_ = (expr); if (__builtin_expect(r_ != 0, 0) && !(c)->err) (c)->err = r_; } while (0)

static void op_clock(struct ctx *c, unsigned n)
{
	struct timespec ts;
	uint64_t s = 0;

	for (unsigned i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += (uint64_t)ts.tv_nsec;
	}
	c->sink += s;
}

#if HAVE_RDTSC
static void op_rdtsc(struct ctx *c, unsigned n)
{
	uint64_t s = 0;

	for (unsigned i = 0; i < n; i++)
		s += __rdtsc();
	c->sink += s;
}
#endif

static void op_kv(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		CHECK(c, bb_write_kv(kv_key, kv_val));
}

static void op_i64(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		CHECK(c, bb_write_i64((int64_t)i * 1000003));
}

static void op_str16(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		CHECK(c, bb_write_str(str16));
}

static void op_str1k(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		CHECK(c, bb_write_str(str1k));
}

static void op_event4(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct bb_field f[4] = {
			BB_STR("method", "GET"),
			BB_STR("path", "/index"),
			BB_I64("status", 200),
			BB_U64("bytes", 4096 + i),
		};

		CHECK(c, bb_write_event("http", f, 4));
	}
}

static void op_write(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (write(c->fd, kv_line, sizeof(kv_line) - 1) != (ssize_t)sizeof(kv_line) - 1 && !c->err)
			c->err = -errno;
}

static void op_fprintf_flush(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		fprintf(c->f, "%s=%s\n", kv_key, kv_val);
		fflush(c->f);
	}
}

static void op_fprintf(struct ctx *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		fprintf(c->f, "%s=%s\n", kv_key, kv_val);
}

struct op {
	const char *name;
	batch_fn fn;
	unsigned cost;     /* 1 = in memory, 2 = system call per call: fewer batches */
	const char *note;
};

enum { OP_CLOCK, OP_RDTSC, OP_KV, OP_I64, OP_STR16, OP_STR1K, OP_EVENT4,
       OP_WRITE, OP_FFLUSH, OP_FPRINTF, NOPS };

static const struct op ops[NOPS] = {
	[OP_CLOCK]   = { "clock_gettime(MONOTONIC)", op_clock, 1, "bare clock read (vDSO)" },
#if HAVE_RDTSC
	[OP_RDTSC]   = { "rdtsc", op_rdtsc, 1, "bare TSC read" },
#endif
	[OP_KV]      = { "bb_write_kv", op_kv, 1, "\"req\" \"GET /index\"" },
	[OP_I64]     = { "bb_write_i64", op_i64, 1, NULL },
	[OP_STR16]   = { "bb_write_str 16 B", op_str16, 1, NULL },
	[OP_STR1K]   = { "bb_write_str 1 KiB", op_str1k, 1, NULL },
	[OP_EVENT4]  = { "bb_write_event 4 fields", op_event4, 1, "2 str, i64, u64" },
	[OP_WRITE]   = { "write(2) kv line", op_write, 2, "to a file in /tmp" },
	[OP_FFLUSH]  = { "fprintf+fflush", op_fprintf_flush, 2, "to a file in /tmp" },
	[OP_FPRINTF] = { "fprintf (buffered)", op_fprintf, 1, "lost on SIGKILL" },
};

/* ---- configuration and results ------------------------------------------ */

static unsigned cfg_repeat = 3;
static unsigned cfg_batches = 1000;   /* per op per thread; / 5 for system calls */
static unsigned cfg_batch = 1000;     /* calls per batch */
static unsigned cfg_threads[8] = { 1, 2 };
static unsigned cfg_nthreads = 2;
static int ncpu = 1;

/* result[ti][op][rep] */
struct figure { double med, p99, mcps; };
static struct figure result[8][NOPS][MAX_REPEAT];

/* ---- timing ------------------------------------------------------------- */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t i;

	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/* ---- workers ------------------------------------------------------------ */

struct worker {
	pthread_t th;
	unsigned idx;
	unsigned nthreads;
	struct ctx c;
	double *samples;       /* ns per call, one per batch */
	unsigned nsamples;
	char path[64];
};

static pthread_barrier_t bar;
static int cur_op;              /* set by main between barriers */
static volatile int stop_workers;

static void pin(unsigned idx)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)(idx % (unsigned)ncpu), &set);
	/* Best effort: a cpuset may forbid it; the figures are then noisier. */
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static unsigned batches_for(const struct op *o)
{
	unsigned b = o->cost == 2 ? cfg_batches / 5 : cfg_batches;

	return b < 11 ? 11 : b;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin(w->idx);
	snprintf(w->path, sizeof(w->path), "/tmp/bench_write.%d.%u.XXXXXX", (int)getpid(), w->idx);
	w->c.fd = mkstemp(w->path);
	if (w->c.fd < 0) {
		perror("mkstemp");
		exit(1);
	}
	unlink(w->path);   /* the file lives as long as the descriptor */
	w->c.f = fdopen(dup(w->c.fd), "w");
	if (!w->c.f) {
		perror("fdopen");
		exit(1);
	}
	for (;;) {
		const struct op *o;
		unsigned nb, warm;

		pthread_barrier_wait(&bar);   /* main has set cur_op */
		if (stop_workers)
			break;
		o = &ops[cur_op];
		nb = batches_for(o);
		warm = nb / 10 + 2;
		/* Start every op with empty files: the same work each time. */
		fflush(w->c.f);
		if (ftruncate(w->c.fd, 0) < 0 || lseek(w->c.fd, 0, SEEK_SET) < 0)
			perror("ftruncate");
		fseek(w->c.f, 0, SEEK_SET);
		/* Warm up: the ring claim (first write), caches, branch
		 * predictors, page cache of the file. */
		for (unsigned b = 0; b < warm; b++)
			o->fn(&w->c, cfg_batch);
		pthread_barrier_wait(&bar);   /* all threads start together */
		for (unsigned b = 0; b < nb; b++) {
			uint64_t t0 = now_ns();

			o->fn(&w->c, cfg_batch);
			w->samples[b] = (double)(now_ns() - t0) / cfg_batch;
		}
		w->nsamples = nb;
		pthread_barrier_wait(&bar);   /* done */
	}
	fclose(w->c.f);
	close(w->c.fd);
	return NULL;
}

/* Run every op with @nt threads for repetition @rep, into result[ti]. */
static int run_threads(unsigned ti, unsigned nt, unsigned rep)
{
	struct worker *ws = calloc(nt, sizeof(*ws));
	size_t max_samples = cfg_batches < 11 ? 11 : cfg_batches;
	double *all = calloc(nt * max_samples, sizeof(double));

	if (!ws || !all)
		return -ENOMEM;
	pthread_barrier_init(&bar, NULL, nt + 1);
	stop_workers = 0;
	for (unsigned i = 0; i < nt; i++) {
		ws[i].idx = i;
		ws[i].nthreads = nt;
		ws[i].samples = calloc(max_samples, sizeof(double));
		if (!ws[i].samples)
			return -ENOMEM;
		if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i]))
			return -EAGAIN;
	}
	for (int op = 0; op < NOPS; op++) {
		size_t n = 0;

		if (!ops[op].fn)
			continue;
		cur_op = op;
		pthread_barrier_wait(&bar);   /* go: warm up */
		uint64_t t0, t1;

		pthread_barrier_wait(&bar);   /* warmed up: measure */
		t0 = now_ns();
		pthread_barrier_wait(&bar);   /* done */
		t1 = now_ns();
		for (unsigned i = 0; i < nt; i++) {
			if (ws[i].c.err) {
				fprintf(stderr, "%s: error %d (%s)\n", ops[op].name,
					ws[i].c.err, strerror(-ws[i].c.err));
				return ws[i].c.err;
			}
			memcpy(all + n, ws[i].samples, ws[i].nsamples * sizeof(double));
			n += ws[i].nsamples;
		}
		result[ti][op][rep].med = pct(all, n, 0.50);
		result[ti][op][rep].p99 = pct(all, n, 0.99);
		/* Throughput of all threads together: wall time of the measured
		 * phase, so it shows whether threads really ran in parallel
		 * (the per-thread median does not: it skips preempted batches). */
		result[ti][op][rep].mcps = (double)n * cfg_batch * 1e3 / (double)(t1 - t0);
	}
	stop_workers = 1;
	pthread_barrier_wait(&bar);
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(ws[i].th, NULL);
		free(ws[i].samples);
	}
	pthread_barrier_destroy(&bar);
	free(ws);
	free(all);
	return 0;
}

/* ---- box statistics (read through the public format header) ------------- */

static void report_box(void)
{
	char path[4096];
	struct stat st;
	const struct bb_header *h;
	void *map;
	int fd;

	if (bb_path(path, sizeof(path)) < 0)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	h = map;
	printf("box: %s, %llu bytes, %u rings of %llu bytes, max record %u bytes\n",
	       path, (unsigned long long)h->box_size, h->ring_count,
	       (unsigned long long)h->ring_size, h->max_record);
	/* What the figures were measured with (BLACKBOX_CLOCK, BLACKBOX_CRC). */
	printf("box clock: %s%s, record checksums: %s\n",
	       h->clock == BB_CLOCK_TSC ? "tsc" : "monotonic",
	       h->clock_requested == BB_CLOCK_TSC && h->clock != BB_CLOCK_TSC ?
	       " (tsc requested: no invariant TSC, fell back)" : "",
	       h->flags & BB_HF_CRC32C ? "crc32c" : "off (BLACKBOX_CRC=0)");
	for (uint32_t i = 0; i < h->ring_count; i++) {
		const struct bb_ring_desc *d = (const void *)((const char *)map +
			h->ring_table_offset + (uint64_t)i * h->ring_desc_size);

		if (!d->head)
			continue;
		printf("  ring %2u (tid %d): %llu bytes written = %.0f wraps\n", i, d->tid,
		       (unsigned long long)d->head, (double)d->head / (double)h->ring_size);
	}
	printf("  dropped: nested %llu, busy %llu; truncated %llu\n",
	       (unsigned long long)h->dropped_nested, (unsigned long long)h->dropped_busy,
	       (unsigned long long)h->truncated);
	munmap(map, (size_t)st.st_size);
}

/* ---- main --------------------------------------------------------------- */

static char box_path[4096];

static void on_signal(int sig)
{
	/* AS-safe cleanup: the box would otherwise outlive us. */
	if (box_path[0])
		unlink(box_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static double median_of(double *v, unsigned n)
{
	return pct(v, n, 0.5);
}

static struct figure fig(unsigned ti, int op)
{
	double m[MAX_REPEAT], p[MAX_REPEAT], c[MAX_REPEAT];

	for (unsigned r = 0; r < cfg_repeat; r++) {
		m[r] = result[ti][op][r].med;
		p[r] = result[ti][op][r].p99;
		c[r] = result[ti][op][r].mcps;
	}
	return (struct figure){ median_of(m, cfg_repeat), median_of(p, cfg_repeat),
				median_of(c, cfg_repeat) };
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_write [-r REPEAT] [-b BATCHES] [-n BATCH] [-t T1,T2,...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt, ret;

	while ((opt = getopt(argc, argv, "r:b:n:t:h")) != -1) {
		switch (opt) {
		case 'r':
			cfg_repeat = (unsigned)atoi(optarg);
			if (cfg_repeat < 1 || cfg_repeat > MAX_REPEAT)
				usage();
			break;
		case 'b':
			cfg_batches = (unsigned)atoi(optarg);
			if (cfg_batches < 1)
				usage();
			break;
		case 'n':
			cfg_batch = (unsigned)atoi(optarg);
			if (cfg_batch < 1)
				usage();
			break;
		case 't': {
			char *s = optarg, *end;

			cfg_nthreads = 0;
			while (*s && cfg_nthreads < 8) {
				unsigned long t = strtoul(s, &end, 10);

				if (end == s || t < 1 || t > MAX_THREADS)
					usage();
				cfg_threads[cfg_nthreads++] = (unsigned)t;
				s = *end == ',' ? end + 1 : end;
			}
			if (!cfg_nthreads)
				usage();
			break;
		}
		default:
			usage();
		}
	}
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	memset(str16, 'a', 16);
	memset(str1k, 'b', 1024);

	ret = bb_init(0);
	if (ret < 0) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	bb_path(box_path, sizeof(box_path));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	printf("bench_write: %u repetition(s) x %u batches x %u calls per op and thread "
	       "(%u batches for system-call baselines), %d CPUs, threads pinned\n",
	       cfg_repeat, cfg_batches, cfg_batch, batches_for(&ops[OP_WRITE]), ncpu);
	fflush(stdout);
	for (unsigned r = 0; r < cfg_repeat; r++)
		for (unsigned ti = 0; ti < cfg_nthreads; ti++) {
			ret = run_threads(ti, cfg_threads[ti], r);
			if (ret < 0) {
				fprintf(stderr, "run failed: %s\n", strerror(-ret));
				return 1;
			}
		}

	printf("\nns per call, per thread: median and p99 of %u-call batch means,\n"
	       "median over %u repetition(s).  x clock = median / bare clock_gettime median\n"
	       "at the same thread count.  Mcalls/s = calls of all threads / wall time of\n"
	       "the measured phase (preemption included).\n\n", cfg_batch, cfg_repeat);
	printf("%-26s %3s %9s %9s %8s %9s  %s\n", "operation", "thr", "median", "p99", "x clock",
	       "Mcalls/s", "note");
	for (int op = 0; op < NOPS; op++) {
		if (!ops[op].fn)
			continue;
		for (unsigned ti = 0; ti < cfg_nthreads; ti++) {
			struct figure f = fig(ti, op), clk = fig(ti, OP_CLOCK);
			char note[128];

			if (op == OP_KV) {
				struct figure w = fig(ti, OP_WRITE);

				snprintf(note, sizeof(note), "%s; %.0fx cheaper than write(2)",
					 ops[op].note, w.med / f.med);
			} else {
				snprintf(note, sizeof(note), "%s", ops[op].note ? ops[op].note : "");
			}
			printf("%-26s %3u %9.1f %9.1f %8.2f %9.2f  %s\n", ops[op].name,
			       cfg_threads[ti], f.med, f.p99, f.med / clk.med, f.mcps, note);
		}
	}

	/* The first targets of the write path, from the figures above. */
	printf("\ntargets:\n");
	for (unsigned ti = 0; ti < cfg_nthreads; ti++) {
		struct figure kv = fig(ti, OP_KV), clk = fig(ti, OP_CLOCK), w = fig(ti, OP_WRITE);

		printf("  %u thr: bb_write_kv / clock_gettime = %.2f (<= 1.5: %s); "
		       "write(2) / bb_write_kv = %.1f (>= 20: %s)\n", cfg_threads[ti],
		       kv.med / clk.med, kv.med / clk.med <= 1.5 ? "met" : "NOT met",
		       w.med / kv.med, w.med / kv.med >= 20 ? "met" : "NOT met");
	}
	for (unsigned ti = 1; ti < cfg_nthreads; ti++) {
		for (int op = OP_KV; op <= OP_EVENT4; op++) {
			double a = fig(0, op).med, b = fig(ti, op).med;

			printf("  %-24s %u thr / %u thr = %.2f (within 10%%: %s)\n", ops[op].name,
			       cfg_threads[ti], cfg_threads[0], b / a,
			       b / a <= 1.10 && b / a >= 0.90 ? "met" : "NOT met");
		}
	}
	printf("\n");
	report_box();
	return 0;
}
