/* SPDX-License-Identifier: MIT */
/*
 * Description: the box at scale, with the default options.
 *  - 256 threads write at once into the default box: every write succeeds,
 *    nothing is dropped nor sent to the shared ring (the header's counters
 *    stay 0), and each of 240 quiet threads, all started after 16 chatty
 *    ones that then write 100 times more, each enough to fill the box
 *    again, keeps its last 20 records, intact and in order.
 *  - One thread that writes several boxes' worth keeps at least 80 % of
 *    the box's bytes for its own records, and the box file is exactly
 *    BB_DEFAULT_SIZE bytes.  (The rest is tables and the evidence of other
 *    threads: 256 crash slots for every thread's stack at a crash, and a
 *    last words entry per thread slot; README "Sizes".)
 * Only the public API (the writers, the reader): the same test built
 * against an earlier libblackbox (format 2.x: no overflow counter) measures
 * that one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"

TestSuite(scale, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 240);

#define CHATTY  16
#define QUIET   240
#define THREADS (CHATTY + QUIET)
#define QUIET_RECORDS 200          /* each quiet thread */
#define CHATTY_RECORDS 20000       /* 100 times as many: ~640 KB each */
#define KEEP    20                 /* a quiet thread's last records that must survive */

static pthread_barrier_t started, quiet_done, checked;
static atomic_ulong failed_writes;
static int32_t tids[THREADS];

/* The value of record @seq of thread @k: "<k>:<seq>". */
static int value(char *buf, size_t n, int k, unsigned seq)
{
	return snprintf(buf, n, "%d:%u", k, seq);
}

/* Threads 0..15 are chatty, 16..255 quiet.  Everyone writes a first
 * record (its first segment), waits for all; the quiet threads write
 * their 200 records and wait; then the chatty ones write 100 times as
 * many while the quiet threads stay alive; all wait until the box is
 * read. */
static void *writer(void *arg)
{
	int k = (int)(intptr_t)arg;
	unsigned n = k < CHATTY ? CHATTY_RECORDS : QUIET_RECORDS, seq = 0;
	char v[32];

	tids[k] = (int32_t)syscall(SYS_gettid);
	value(v, sizeof(v), k, seq++);
	if (bb_write_kv("w", v))
		atomic_fetch_add(&failed_writes, 1);
	pthread_barrier_wait(&started);
	if (k >= CHATTY)
		for (; seq < n; seq++) {
			value(v, sizeof(v), k, seq);
			if (bb_write_kv("w", v))
				atomic_fetch_add(&failed_writes, 1);
		}
	pthread_barrier_wait(&quiet_done);
	if (k < CHATTY)
		for (; seq < n; seq++) {
			value(v, sizeof(v), k, seq);
			if (bb_write_kv("w", v))
				atomic_fetch_add(&failed_writes, 1);
		}
	pthread_barrier_wait(&checked);
	return NULL;
}

struct seen {
	long last[THREADS];     /* newest seq seen per thread, -1 none */
	unsigned run[THREADS];  /* records in a row ending at last */
	unsigned misattributed, bad;
};

static int seen_cb(const struct bb_record *rec, void *arg)
{
	struct seen *s = arg;
	char v[64];
	unsigned seq;
	int k;

	if (rec->tag != BB_TAG_KV)
		return 0;
	/* [ "w", "<k>:<seq>" ]: 82 61 77 6n <n bytes> */
	if (rec->value_len < 5 || rec->value_len - 4 >= sizeof(v) ||
	    memcmp(rec->value, "\x82\x61w", 3) || rec->value[3] != (0x60 | (rec->value_len - 4))) {
		s->bad++;
		return 0;
	}
	memcpy(v, rec->value + 4, rec->value_len - 4);
	v[rec->value_len - 4] = '\0';
	if (sscanf(v, "%d:%u", &k, &seq) != 2 || k < 0 || k >= THREADS) {
		s->bad++;
		return 0;
	}
	if (rec->tid != tids[k])
		s->misattributed++;
	/* Per thread, records come in order (ring by ring, one thread's in
	 * one log): count the run of consecutive ones ending at the newest. */
	s->run[k] = s->last[k] >= 0 && seq == (unsigned)s->last[k] + 1 ? s->run[k] + 1 : 1;
	if ((long)seq > s->last[k])
		s->last[k] = seq;
	return 0;
}

Test(scale, threads_256_none_dropped_quiet_threads_keep_their_last_records)
{
	pthread_t th[THREADS];
	struct bb_reader *r;
	const struct bb_box_info *in;
	struct bb_stream_stats st;
	struct seen s;
	char path[4096], err[256];
	unsigned short_kept = 0;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	pthread_barrier_init(&started, NULL, THREADS);
	pthread_barrier_init(&quiet_done, NULL, THREADS + 1);
	pthread_barrier_init(&checked, NULL, THREADS + 1);
	/* the chatty threads first: the quiet ones are threads 17 to 256 */
	for (int k = 0; k < THREADS; k++)
		cr_assert_eq(pthread_create(&th[k], NULL, writer, (void *)(intptr_t)k), 0);
	pthread_barrier_wait(&quiet_done);
	/* the chatty threads write their 20000 records each meanwhile; all
	 * threads are alive while the box is read */
	while (1) {
		cr_assert_eq(bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, err, sizeof(err)), 0,
			     "%s", err);
		memset(&s, 0, sizeof(s));
		for (int k = 0; k < THREADS; k++)
			s.last[k] = -1;
		cr_assert_eq(bb_reader_walk(r, 0, seen_cb, &s), 0);
		if (s.last[0] == CHATTY_RECORDS - 1 && s.last[CHATTY - 1] == CHATTY_RECORDS - 1)
			break; /* the chatty threads are done */
		bb_reader_close(r);
		usleep(20000);
	}
	in = bb_reader_info(r);
	bb_reader_total_stats(r, &st);
	cr_assert_eq(atomic_load(&failed_writes), 0, "%lu writes failed",
		     (unsigned long)atomic_load(&failed_writes));
	cr_assert_eq(in->dropped_busy + in->dropped_nested + in->dropped_toobig, 0,
		     "dropped: busy %llu nested %llu too big %llu",
		     (unsigned long long)in->dropped_busy, (unsigned long long)in->dropped_nested,
		     (unsigned long long)in->dropped_toobig);
#if BB_FORMAT_MAJOR >= 3
	cr_assert_eq(in->overflow, 0, "%llu records went to the shared ring",
		     (unsigned long long)in->overflow);
#endif
	cr_assert_eq(st.corrupt + st.torn, 0);
	cr_assert_eq(s.bad, 0);
	cr_assert_eq(s.misattributed, 0);
	/* The chatty threads wrote several boxes' worth: their oldest records
	 * are gone. */
	cr_assert_gt((uint64_t)CHATTY * CHATTY_RECORDS * 32, 2 * in->box_size);
	for (int k = CHATTY; k < THREADS; k++)
		if (s.last[k] != QUIET_RECORDS - 1 || s.run[k] < KEEP)
			short_kept++;
	cr_assert_eq(short_kept, 0, "%u of %d quiet threads lost some of their last %d records",
		     short_kept, QUIET, KEEP);
	bb_reader_close(r);
	pthread_barrier_wait(&checked);
	for (int k = 0; k < THREADS; k++)
		pthread_join(th[k], NULL);
}

/* Bytes of a record whose value is @vlen bytes: envelope, value, CRC, to 8. */
static uint64_t stride(size_t vlen)
{
	return BB_RECORD_STRIDE(BB_RECORD_HDR_SIZE + vlen + BB_CRC_SIZE);
}

struct held {
	int32_t tid;
	uint64_t bytes, records;
};

static int held_cb(const struct bb_record *rec, void *arg)
{
	struct held *h = arg;

	if (rec->tid == h->tid) {
		h->bytes += stride(rec->value_len);
		h->records++;
	}
	return 0;
}

Test(scale, one_thread_keeps_most_of_the_default_box)
{
	struct held h = { .tid = (int32_t)syscall(SYS_gettid) };
	struct bb_reader *r;
	struct stat sb;
	char path[4096], err[256], v[64];
	uint64_t written = 0;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_size, BB_DEFAULT_SIZE, "the default box is %lld bytes, not %u",
		     (long long)sb.st_size, BB_DEFAULT_SIZE);
	/* three boxes' worth of records of 40 to 80 bytes */
	for (unsigned i = 0; written < 3ull * BB_DEFAULT_SIZE; i++) {
		int n = snprintf(v, sizeof(v), "%u:%.*s", i, (int)(i % 40),
				 "0123456789012345678901234567890123456789");

		cr_assert_eq(bb_write_kv("request", v), 0);
		written += stride(2 + 8 + 1 + (size_t)n);
	}
	cr_assert_eq(bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(bb_reader_info(r)->box_size, BB_DEFAULT_SIZE);
	cr_assert_eq(bb_reader_walk(r, 0, held_cb, &h), 0);
	cr_log_info("one thread keeps %llu records, %llu bytes: %.1f %% of the %u-byte box",
		    (unsigned long long)h.records, (unsigned long long)h.bytes,
		    100.0 * (double)h.bytes / BB_DEFAULT_SIZE, BB_DEFAULT_SIZE);
	cr_assert_geq(h.bytes * 100, 80ull * BB_DEFAULT_SIZE,
		      "the thread keeps %llu bytes of records, %.1f %% of the box",
		      (unsigned long long)h.bytes, 100.0 * (double)h.bytes / BB_DEFAULT_SIZE);
	bb_reader_close(r);
}
