/* SPDX-License-Identifier: MIT */
/*
 * Description: segments follow the writing (docs/FORMAT.md §13, "Who
 * keeps what"), in the default box, with real threads:
 *  - A writes 1M records and goes quiet (alive), then B writes 1M: B
 *    keeps at least 40 % of the box's record capacity, A its last record.
 *  - 500 threads write and exit, then the main thread writes 1M: it keeps
 *    at least 40 %, and each of the 500 its last record.
 *  - 100,000 short-lived threads, 3 records each: the last 100 threads
 *    are all there, and the records recycled (per thread, and of threads
 *    gone from the box) are exactly the records written less those read.
 *  - 1,024 threads, one chatty: each of the 1,023 quiet ones (written and
 *    exited) keeps at least its last record.
 * Each read is a snapshot with the public reader API.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"

TestSuite(fair, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 600);

#define MAXT 100000

/* What a walk found: per thread number k, its newest seq (-1: none) and
 * how many of its records; the bytes they take. */
struct got {
	long *last;
	unsigned long *n;
	unsigned long records, bytes_of[2];
	int watch[2];           /* two thread numbers whose bytes are summed */
	unsigned bad;
};

static void got_init(struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->last = malloc(MAXT * sizeof(*g->last));
	g->n = calloc(MAXT, sizeof(*g->n));
	cr_assert(g->last && g->n);
	for (int k = 0; k < MAXT; k++)
		g->last[k] = -1;
	g->watch[0] = g->watch[1] = -1;
}

static void got_free(struct got *g)
{
	free(g->last);
	free(g->n);
}

/* The value of record @seq of thread @k: "<k>:<seq>", key "w". */
static int put(int k, long seq)
{
	char v[32];

	snprintf(v, sizeof(v), "%d:%ld", k, seq);
	return bb_write_kv("w", v);
}

static int got_cb(const struct bb_record *rec, void *arg)
{
	struct got *g = arg;
	char v[64];
	long seq;
	int k;

	if (rec->tag != BB_TAG_KV)
		return 0;
	if (rec->value_len < 5 || rec->value_len - 4 >= sizeof(v) ||
	    memcmp(rec->value, "\x82\x61w", 3)) {
		g->bad++;
		return 0;
	}
	memcpy(v, rec->value + 4, rec->value_len - 4);
	v[rec->value_len - 4] = '\0';
	if (sscanf(v, "%d:%ld", &k, &seq) != 2 || k < 0 || k >= MAXT) {
		g->bad++;
		return 0;
	}
	g->records++;
	g->n[k]++;
	if (seq > g->last[k])
		g->last[k] = seq;
	for (int i = 0; i < 2; i++)
		if (k == g->watch[i])
			g->bytes_of[i] += BB_RECORD_STRIDE(BB_RECORD_HDR_SIZE + rec->value_len +
							   (rec->flags & BB_RF_CRC ? BB_CRC_SIZE : 0));
	return 0;
}

/* Walk a snapshot of this process's box into @g; *@in and *@tot. */
static void read_box(struct got *g, struct bb_box_info *in, struct bb_stream_stats *tot)
{
	struct bb_reader *r;
	char path[4096], err[256];

	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	cr_assert_eq(bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(bb_reader_walk(r, 0, got_cb, g), 0);
	*in = *bb_reader_info(r);
	bb_reader_total_stats(r, tot);
	bb_reader_close(r);
	cr_assert_eq(g->bad, 0);
	cr_assert_eq(tot->corrupt + tot->torn, 0);
}

/* The box's record capacity in bytes: its segments. */
static uint64_t capacity(const struct bb_box_info *in)
{
	return (uint64_t)in->seg_count * in->seg_size;
}

/* ---- A then B --------------------------------------------------------- */

static pthread_barrier_t a_done, b_done, read_done;

static void *thread_a(void *arg)
{
	(void)arg;
	for (long i = 0; i < 1000000; i++)
		cr_assert_eq(put(0, i), 0);
	pthread_barrier_wait(&a_done);   /* quiet, alive, from here */
	pthread_barrier_wait(&read_done);
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&a_done);
	for (long i = 0; i < 1000000; i++)
		cr_assert_eq(put(1, i), 0);
	pthread_barrier_wait(&b_done);
	pthread_barrier_wait(&read_done);
	return NULL;
}

Test(fair, a_then_b_b_keeps_40_percent_a_its_last_words)
{
	pthread_t a, b;
	struct bb_box_info in;
	struct bb_stream_stats tot;
	struct got g;

	cr_assert_eq(bb_init(0), 0);
	got_init(&g);
	g.watch[0] = 0;
	g.watch[1] = 1;
	pthread_barrier_init(&a_done, NULL, 2);
	pthread_barrier_init(&b_done, NULL, 2);
	pthread_barrier_init(&read_done, NULL, 3);
	cr_assert_eq(pthread_create(&a, NULL, thread_a, NULL), 0);
	cr_assert_eq(pthread_create(&b, NULL, thread_b, NULL), 0);
	pthread_barrier_wait(&b_done);
	read_box(&g, &in, &tot);
	cr_log_info("A keeps %lu records (%lu bytes), B %lu (%lu bytes) of %llu bytes",
		    g.n[0], g.bytes_of[0], g.n[1], g.bytes_of[1],
		    (unsigned long long)capacity(&in));
	cr_assert_geq(g.bytes_of[1] * 10, capacity(&in) * 4,
		      "B keeps %lu bytes of records, under 40 %% of %llu", g.bytes_of[1],
		      (unsigned long long)capacity(&in));
	cr_assert_eq(g.last[0], 999999, "A's last record is gone (newest kept %ld)", g.last[0]);
	cr_assert_eq(g.last[1], 999999);
	pthread_barrier_wait(&read_done);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	got_free(&g);
}

/* ---- 500 exited, then main -------------------------------------------- */

#define WORKERS 500
#define WORKER_RECORDS 10

static void *worker(void *arg)
{
	int k = (int)(intptr_t)arg;

	for (long i = 0; i < WORKER_RECORDS; i++)
		cr_assert_eq(put(k, i), 0);
	return NULL;
}

Test(fair, after_500_threads_exit_main_keeps_40_percent_they_their_last_words)
{
	pthread_t th[WORKERS];
	struct bb_box_info in;
	struct bb_stream_stats tot;
	struct got g;
	unsigned lost = 0;

	cr_assert_eq(bb_init(0), 0);
	got_init(&g);
	g.watch[0] = 0;
	cr_assert_eq(put(0, 0), 0);      /* main is thread 0 */
	for (int k = 1; k <= WORKERS; k++)
		cr_assert_eq(pthread_create(&th[k - 1], NULL, worker, (void *)(intptr_t)k), 0);
	for (int k = 1; k <= WORKERS; k++)
		pthread_join(th[k - 1], NULL);
	for (long i = 1; i < 1000000; i++)
		cr_assert_eq(put(0, i), 0);
	read_box(&g, &in, &tot);
	for (int k = 1; k <= WORKERS; k++)
		if (g.last[k] != WORKER_RECORDS - 1)
			lost++;
	cr_log_info("main keeps %lu records (%lu bytes of %llu); %u workers lost their last record",
		    g.n[0], g.bytes_of[0], (unsigned long long)capacity(&in), lost);
	cr_assert_geq(g.bytes_of[0] * 10, capacity(&in) * 4,
		      "main keeps %lu bytes of records, under 40 %% of %llu", g.bytes_of[0],
		      (unsigned long long)capacity(&in));
	cr_assert_eq(lost, 0, "%u of %d exited threads lost their last record", lost, WORKERS);
	got_free(&g);
}

/* ---- 100,000 short-lived threads -------------------------------------- */

#define SHORT_RECORDS 3
#define BATCH 8

/* Writes that returned 0.  A thread that got no segment writes the shared
 * ring, whose lock a loaded machine (a sanitizer build) may not give it
 * within the bounded spin: that write is dropped and counted in the
 * header's dropped_busy, which the test checks instead. */
static atomic_ulong short_ok;

static void *worker_short(void *arg)
{
	int k = (int)(intptr_t)arg;

	for (long i = 0; i < SHORT_RECORDS; i++)
		if (put(k, i) == 0)
			atomic_fetch_add(&short_ok, 1);
	return NULL;
}

Test(fair, short_lived_threads_newest_present_recycled_exact)
{
	pthread_t th[BATCH];
	struct bb_box_info in;
	struct bb_stream_stats tot;
	struct got g;
	unsigned missing = 0, present = 0;
	uint64_t written = (uint64_t)MAXT * SHORT_RECORDS;

	cr_assert_eq(bb_init(0), 0);
	got_init(&g);
	for (int k = 0; k < MAXT; k += BATCH) {
		for (int j = 0; j < BATCH; j++)
			cr_assert_eq(pthread_create(&th[j], NULL, worker_short,
						    (void *)(intptr_t)(k + j)), 0);
		for (int j = 0; j < BATCH; j++)
			pthread_join(th[j], NULL);
	}
	read_box(&g, &in, &tot);
	for (int k = 0; k < MAXT; k++)
		present += g.n[k] > 0;
	for (int k = MAXT - 100; k < MAXT; k++)
		if (g.last[k] != SHORT_RECORDS - 1)
			missing++;
	cr_log_info("%u threads present; kept %lu records; recycled %llu of threads listed, "
		    "%llu of %llu threads gone; overflow %llu", present, g.records,
		    (unsigned long long)tot.recycled, (unsigned long long)in.recycled_gone,
		    (unsigned long long)in.logs_gone, (unsigned long long)in.overflow);
	cr_assert_eq(missing, 0, "%u of the last 100 threads lost their last record", missing);
	cr_assert_eq(atomic_load(&short_ok) + in.dropped_busy, written,
		     "%lu writes succeeded, %llu dropped busy, of %llu",
		     atomic_load(&short_ok), (unsigned long long)in.dropped_busy,
		     (unsigned long long)written);
	written = atomic_load(&short_ok);
	cr_assert_eq(g.records + tot.recycled + in.recycled_gone, written,
		     "kept %lu + recycled %llu + gone %llu != written %llu", g.records,
		     (unsigned long long)tot.recycled, (unsigned long long)in.recycled_gone,
		     (unsigned long long)written);
	got_free(&g);
}

/* ---- 1,024 threads, one chatty ---------------------------------------- */

#define QUIET 1023
#define QUIET_RECORDS 5

static pthread_barrier_t quiet_done;

static void *chatty(void *arg)
{
	(void)arg;
	cr_assert_eq(put(0, 0), 0);
	pthread_barrier_wait(&quiet_done);
	for (long i = 1; i < 1000000; i++)
		cr_assert_eq(put(0, i), 0);
	return NULL;
}

static void *quiet(void *arg)
{
	int k = (int)(intptr_t)arg;

	for (long i = 0; i < QUIET_RECORDS; i++)
		cr_assert_eq(put(k, i), 0);
	return NULL;
}

Test(fair, threads_1024_one_chatty_every_quiet_thread_keeps_its_last_record)
{
	pthread_t c, *th = malloc(QUIET * sizeof(*th));
	struct bb_box_info in;
	struct bb_stream_stats tot;
	struct got g;
	unsigned lost = 0;

	cr_assert(th);
	cr_assert_eq(bb_init(0), 0);
	got_init(&g);
	pthread_barrier_init(&quiet_done, NULL, 2);
	cr_assert_eq(pthread_create(&c, NULL, chatty, NULL), 0);
	for (int k = 1; k <= QUIET; k++)
		cr_assert_eq(pthread_create(&th[k - 1], NULL, quiet, (void *)(intptr_t)k), 0);
	for (int k = 1; k <= QUIET; k++)
		pthread_join(th[k - 1], NULL);
	pthread_barrier_wait(&quiet_done);
	pthread_join(c, NULL);
	read_box(&g, &in, &tot);
	for (int k = 1; k <= QUIET; k++)
		if (g.last[k] != QUIET_RECORDS - 1)
			lost++;
	cr_log_info("the chatty thread keeps %lu records; %u of %d quiet threads lost their "
		    "last record", g.n[0], lost, QUIET);
	cr_assert_eq(lost, 0, "%u of %d quiet threads lost their last record", lost, QUIET);
	cr_assert_eq(g.last[0], 999999);
	got_free(&g);
	free(th);
}
