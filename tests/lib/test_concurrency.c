/* SPDX-License-Identifier: MIT */
/*
 * Description: real threads racing.  A live reader never accepts a torn
 * record while 8 threads take small segments from each other; per-thread
 * order holds; writers keep going while it reads.  A signal handler that
 * writes in the middle of a write corrupts nothing and never deadlocks.
 * More threads than segments, and exited threads' segments taken over,
 * keep every record attributed to the thread that wrote it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "collect.h"

static char path[4096];

TestSuite(concurrency, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 240);

static int32_t gettid_(void)
{
	return (int32_t)syscall(SYS_gettid);
}

/* Value of record @seq of writer @k: "k:seq:" then a filler that depends on
 * both, of a length that varies, so a torn copy cannot pass the check. */
static size_t make_value(char *buf, int k, uint64_t seq)
{
	int n = sprintf(buf, "%d:%llu:", k, (unsigned long long)seq);
	size_t len = (size_t)n + (seq * 7 + (uint64_t)k) % 200;

	for (size_t i = (size_t)n; i < len; i++)
		buf[i] = (char)('a' + (i + seq + (uint64_t)k) % 26);
	buf[len] = '\0';
	return len;
}

static bool check_value(const char *v, size_t n, int *k, uint64_t *seq)
{
	char buf[512];
	unsigned long long s;

	if (sscanf(v, "%d:%llu:", k, &s) != 2 || *k < 0 || *k >= 64)
		return false;
	*seq = s;
	return make_value(buf, *k, s) == n && memcmp(buf, v, n) == 0;
}

#define NWRITERS 8

static atomic_bool stop;
static _Atomic uint64_t progress[NWRITERS];
static _Atomic int32_t tids[NWRITERS];
static _Atomic uint64_t write_errors;  /* writes by threads that failed */

static void *writer(void *arg)
{
	int k = (int)(intptr_t)arg;
	char buf[512];

	tids[k] = gettid_();
	for (uint64_t seq = 0; !atomic_load(&stop); seq++) {
		make_value(buf, k, seq);
		if (bb_write_kv("w", buf) != 0)
			atomic_fetch_add(&write_errors, 1);
		atomic_store(&progress[k], seq + 1);
	}
	return NULL;
}

struct live_check {
	int64_t last[NWRITERS];
	uint64_t records;
};

static int live_cb(const struct bb_record *rec, void *arg)
{
	struct live_check *lc = arg;
	static struct tcollect one;   /* reused: one record at a time */
	uint64_t seq;
	int k;

	if (rec->tag == BB_TAG_OWNER)
		return 0;
	one.n = 0;
	tcollect_cb(rec, &one);
	cr_assert_eq(one.r[0].tag, BB_TAG_KV);
	cr_assert(check_value(one.r[0].text, one.r[0].n, &k, &seq),
		  "torn or corrupt record accepted: '%.60s' (%zu bytes)", one.r[0].text, one.r[0].n);
	cr_assert_eq(rec->tid, atomic_load(&tids[k]), "record of writer %d attributed to %d", k, rec->tid);
	cr_assert_gt((int64_t)seq, lc->last[k], "writer %d: seq %llu after %lld", k,
		     (unsigned long long)seq, (long long)lc->last[k]);
	lc->last[k] = (int64_t)seq;
	lc->records++;
	return 0;
}

Test(concurrency, live_reader_never_accepts_a_torn_record)
{
	/* 2 segments of 4 KiB per writer: every segment taken over again
	 * and again (recycled or stolen) while the reader copies it */
	struct bb_options o = { .segment_size = 4096, .segment_count = 2 * NWRITERS };
	pthread_t th[NWRITERS];
	struct bb_reader *r;
	struct bb_stream_stats st;
	uint64_t total = 0, walks_with_progress = 0, start[NWRITERS];
	char err[256];

	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	for (int k = 0; k < NWRITERS; k++)
		pthread_create(&th[k], NULL, writer, (void *)(intptr_t)k);
	while (atomic_load(&progress[NWRITERS - 1]) == 0)
		sched_yield();
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	for (int k = 0; k < NWRITERS; k++)
		start[k] = atomic_load(&progress[k]);
	for (int walk = 0; walk < 300; walk++) {
		struct live_check lc;
		uint64_t before[NWRITERS];
		bool moved = false;

		for (int k = 0; k < NWRITERS; k++) {
			lc.last[k] = -1;
			before[k] = atomic_load(&progress[k]);
		}
		lc.records = 0;
		cr_assert_eq(bb_reader_walk(r, walk % 2 ? BB_WALK_MERGE : 0, live_cb, &lc), 0);
		total += lc.records;
		for (int k = 0; k < NWRITERS; k++)
			moved |= atomic_load(&progress[k]) > before[k];
		walks_with_progress += moved;
	}
	/* Writers were never blocked by the reader: every one of them kept
	 * committing records while it walked.  (How many walks saw progress
	 * depends on the scheduler of a loaded 2-core machine: logged only.) */
	for (int k = 0; k < NWRITERS; k++)
		cr_assert_gt(atomic_load(&progress[k]), start[k], "writer %d made no progress "
			     "during 300 walks", k);
	atomic_store(&stop, true);
	for (int k = 0; k < NWRITERS; k++)
		pthread_join(th[k], NULL);
	bb_reader_total_stats(r, &st);
	bb_reader_close(r);
	cr_assert_eq(write_errors, 0);
	cr_assert_eq(st.corrupt, 0, "%llu corrupt records in a live box", (unsigned long long)st.corrupt);
	cr_assert_gt(total, 1000);
	cr_log_info("live: %llu records verified, %llu overwritten under the reader, "
		    "writers progressed during %llu/300 walks", (unsigned long long)total,
		    (unsigned long long)st.overwritten, (unsigned long long)walks_with_progress);
}

/* ---- signal handlers writing mid-write ----------------------------------- */

static _Atomic uint64_t sig_calls, sig_ok, sig_busy;

static void on_usr1(int sig)
{
	int e = errno;
	int ret = bb_write_kv_u64("sig", atomic_fetch_add(&sig_calls, 1));

	(void)sig;
	if (ret == 0)
		atomic_fetch_add(&sig_ok, 1);
	else if (ret == -EBUSY)
		atomic_fetch_add(&sig_busy, 1);
	errno = e;
}

struct victim {
	pthread_t self;
	atomic_bool ready;
	bool shared;   /* start by taking a ring, or not */
};

static void *victim_thread(void *arg)
{
	struct victim *v = arg;
	char buf[512];

	atomic_store(&v->ready, true);
	for (uint64_t seq = 0; !atomic_load(&stop); seq++) {
		make_value(buf, 1, seq);
		if (bb_write_kv("w", buf) != 0)
			atomic_fetch_add(&write_errors, 1);
	}
	return NULL;
}

static void signal_storm(unsigned segments)
{
	struct bb_options o = { .segment_size = 16384, .segment_count = segments };
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct victim v = { 0 };
	struct tcollect c;
	struct bb_stream_stats st;
	struct bb_reader *r;
	uint64_t sigrecs = 0;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	if (segments == 1)
		cr_assert_eq(bb_write_str("main thread takes the only segment"), 0);
	pthread_create(&v.self, NULL, victim_thread, &v);
	while (!atomic_load(&v.ready))
		sched_yield();
	for (int i = 0; i < 20000; i++) {
		pthread_kill(v.self, SIGUSR1);
		if (i % 64 == 0)
			sched_yield();
	}
	atomic_store(&stop, true);
	pthread_join(v.self, NULL);
	cr_assert_eq(sig_ok + sig_busy, sig_calls);
	/* The victim's own writes: its segment never fails; on the shared
	 * ring (1 segment) only a lock held elsewhere could make it drop,
	 * and nothing else writes there but its own handler (nested: counted
	 * as dropped_nested, returned to the handler, not the victim). */
	cr_assert_eq(write_errors, 0);

	st = tcollect_path(path, &c);
	cr_assert_eq(st.corrupt, 0);
	for (size_t i = 0; i < c.n; i++) {
		uint64_t seq;
		int k;

		if (c.r[i].tag != BB_TAG_KV)
			continue;
		if (!strcmp(c.r[i].key, "sig")) {
			sigrecs++;
			continue;
		}
		cr_assert(check_value(c.r[i].text, c.r[i].n, &k, &seq), "corrupt: %.60s", c.r[i].text);
	}
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_info(r)->dropped_nested + bb_reader_info(r)->dropped_busy, sig_busy);
	bb_reader_close(r);
	cr_assert_gt(sig_calls, 100, "handler ran %llu times", (unsigned long long)sig_calls);
	cr_assert_gt(sig_ok, 0);
	cr_assert_leq(sigrecs, sig_ok);
	/* With a segment the victim never writes the shared ring, where
	 * nested records land, so those survive (records of handlers that
	 * ran between writes went to the victim's segments and may be
	 * evicted).  With only the shared ring the victim's own records may
	 * evict all. */
	if (segments > 1)
		cr_assert_gt(sigrecs, 0, "no handler record survived (%llu written)",
			     (unsigned long long)sig_ok);
	cr_log_info("signals: %llu handled, %llu written, %llu dropped (busy)",
		    (unsigned long long)sig_calls, (unsigned long long)sig_ok,
		    (unsigned long long)sig_busy);
	free(c.r);
}

/* The victim writes its segments: a handler that interrupts its write
 * goes to the shared ring.  Nothing is ever dropped. */
Test(concurrency, signal_handler_writes_mid_write)
{
	signal_storm(4);
	cr_assert_eq(sig_busy, 0, "nested writes into the shared ring were dropped");
}

/* The victim has no segment (one segment, taken by main): a handler that
 * interrupts its shared-ring write must not deadlock on the lock its own
 * thread holds: it drops the record and counts it. */
Test(concurrency, signal_handler_interrupting_shared_ring_write)
{
	signal_storm(1);
}

/* ---- attribution: more threads than segments, taking over ---------------- */

static pthread_barrier_t bar;
static _Atomic uint64_t tid_ok, tid_busy, tid_other;

/* No Criterion assertion in threads: count, and let the test assert. */
static void *tid_writer(void *arg)
{
	int32_t tid = gettid_();

	(void)arg;
	pthread_barrier_wait(&bar);
	for (int i = 0; i < 100; i++) {
		int ret = bb_write_kv_i64("tid", tid);

		atomic_fetch_add(ret == 0 ? &tid_ok : ret == -EBUSY ? &tid_busy : &tid_other, 1);
	}
	pthread_barrier_wait(&bar);
	return NULL;
}

/* Every record in the box is attributed to the thread whose tid it holds;
 * the box holds exactly the writes that succeeded (@lost: except that many
 * of the oldest threads'). */
static void check_attribution(size_t lost)
{
	struct tcollect c;
	struct bb_reader *r;
	size_t n = 0;

	tcollect_path(path, &c);
	for (size_t i = 0; i < c.n; i++) {
		if (c.r[i].tag != BB_TAG_KV)
			continue;
		cr_assert_eq(c.r[i].tid, c.r[i].i, "record of thread %lld attributed to %d (ring %u)",
			     (long long)c.r[i].i, c.r[i].tid, c.r[i].ring);
		n++;
	}
	cr_assert_eq(tid_other, 0);
	cr_assert_eq(n + lost, tid_ok, "%zu records, %llu writes succeeded", n,
		     (unsigned long long)tid_ok);
	/* A write that found the shared ring's lock busy past the bounded
	 * spin (its holder preempted) was dropped and counted, never lost
	 * silently. */
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_info(r)->dropped_busy, tid_busy);
	bb_reader_close(r);
	free(c.r);
}

Test(concurrency, more_threads_than_segments)
{
	struct bb_options o = { .segment_size = 65536, .segment_count = 2 };
	pthread_t th[6];

	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	pthread_barrier_init(&bar, NULL, 6);
	for (int i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, tid_writer, NULL);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(tid_ok + tid_busy, 600);
	cr_assert_geq(tid_ok, 200, "the two threads with a segment never drop");
	check_attribution(0);
	cr_log_info("6 threads, 2 segments: %llu written, %llu dropped on a busy shared ring",
		    (unsigned long long)tid_ok, (unsigned long long)tid_busy);
}

static int noop_cb(const struct bb_record *rec, void *arg)
{
	(void)rec;
	(void)arg;
	return 0;
}

/* Threads one after another: each takes a segment of its own, from the
 * pool while it lasts; nothing goes to the shared ring.  With 8
 * segments, 7 threads keep every record. */
static void threads_in_turn(unsigned segments, size_t lost)
{
	struct bb_options o = { .segment_size = 65536, .segment_count = segments };
	const struct bb_stream_stats *st;
	struct bb_reader *r;
	pthread_t th;

	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	pthread_barrier_init(&bar, NULL, 1);
	for (int i = 0; i < 7; i++) {
		pthread_create(&th, NULL, tid_writer, NULL);
		pthread_join(th, NULL);
	}
	cr_assert_eq(tid_ok, 700);
	check_attribution(lost);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_walk(r, 0, noop_cb, NULL), 0);
	/* the ring table first: the shared ring, empty, and the important
	 * ring; then one log per thread whose records are still there */
	cr_assert_not_null(st = bb_reader_stream_stats(r, 0));
	cr_assert_eq(st->kind, BB_STREAM_SHARED);
	cr_assert_eq(st->read, 0);
	cr_assert_eq(bb_reader_stream_stats(r, 1)->kind, BB_STREAM_IMPORTANT);
	for (uint32_t i = 2; i < bb_reader_info(r)->stream_count; i++) {
		st = bb_reader_stream_stats(r, i);
		cr_assert_eq(st->kind, BB_STREAM_THREAD);
		cr_assert_eq(st->claim, BB_STREAM_RETIRED, "its thread exited");
		/* all its records, or (its segment taken) its last words and
		 * the other 99 counted recycled */
		cr_assert(st->read == 100 || (st->read == 1 && st->recycled == 99),
			  "log %u: %llu read, %llu recycled", st->log,
			  (unsigned long long)st->read, (unsigned long long)st->recycled);
	}
	/* every thread is there, at least by its last words */
	cr_assert_eq(bb_reader_info(r)->stream_count, 2 + 7);
	bb_reader_close(r);
}

Test(concurrency, exited_threads_keep_their_segments_while_there_are_free_ones)
{
	threads_in_turn(8, 0);
}

/* With 2 segments, each new thread takes an exited thread's: the newest
 * two threads' records are there, each attributed to its thread, and of
 * each of the 5 before them its last words. */
Test(concurrency, exited_threads_segments_taken_over_with_attribution)
{
	threads_in_turn(2, 495);
}
