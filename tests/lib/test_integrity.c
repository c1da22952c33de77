/* SPDX-License-Identifier: MIT */
/*
 * Description: format 2.0 (and 3.0) write path.  Every record carries a correct
 * CRC32C (recomputed here bit by bit, independently of the library's
 * table and SSE4.2 code); a byte flipped in a real box is caught by
 * bb_dump() and the reader; BB_OPT_NO_CRC / BLACKBOX_CRC=0 turn checksums
 * off.  Important records survive 100 ring-fulls of chatty traffic from
 * other threads and bb_dump() shows each exactly once; important writes
 * from a signal handler never deadlock and every copy is accounted for.
 * The TSC clock: per-thread monotonic stamps, converted times between
 * clock samples taken around the write (with a generous 1 s bound), and
 * the fallback when no invariant TSC is advertised.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "collect.h"

TestSuite(integrity, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 120);

/* ---- helpers ------------------------------------------------------------ */

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The box of this process, mapped read-write (MAP_SHARED: the live box). */
struct box {
	uint8_t *base;
	size_t len;
	struct bb_header *h;
};

static void box_map(struct box *b)
{
	char path[4096];
	struct stat st;
	int fd;

	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	b->len = (size_t)st.st_size;
	b->base = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(b->base, MAP_FAILED);
	close(fd);
	b->h = (struct bb_header *)(void *)b->base;
}

static struct bb_ring_desc *box_ring(const struct box *b, uint32_t i)
{
	return (struct bb_ring_desc *)(void *)(b->base + b->h->ring_table_offset +
					       (uint64_t)i * BB_RING_DESC_SIZE);
}

/* Index of the (first) ring of @kind, or ring_count. */
static uint32_t box_find_kind(const struct box *b, uint32_t kind)
{
	uint32_t i;

	for (i = 0; i < b->h->ring_count; i++)
		if (box_ring(b, i)->kind == kind)
			break;
	return i;
}

/*
 * A run of records in the box: a ring of the ring table, or a segment
 * holding part of a thread's log (FORMAT.md §13), whose positions
 * [start, start + size) never wrap.
 */
struct run {
	const uint8_t *data;
	uint64_t size, start, from, to;   /* the records: positions [from, to) */
	bool seg;
	int32_t tid;
	uint32_t kind;                    /* a segment: BB_RING_PRIVATE */
};

/* Runs: the rings, then the segments. */
static uint32_t box_runs(const struct box *b)
{
	return b->h->ring_count + b->h->seg_count;
}

/* Run @i, or false: a segment that holds nothing. */
static bool box_run(const struct box *b, uint32_t i, struct run *r)
{
	const struct bb_seg_desc *sd;
	uint32_t st;

	if (i < b->h->ring_count) {
		struct bb_ring_desc *d = box_ring(b, i);

		*r = (struct run){ .data = b->base + d->data_offset, .size = b->h->ring_size,
				   .from = d->tail, .to = d->head, .tid = d->tid, .kind = d->kind };
		return true;
	}
	i -= b->h->ring_count;
	sd = (const struct bb_seg_desc *)(const void *)(b->base + b->h->seg_table_offset) + i;
	st = BB_SEG_STATE(sd->own);
	if (st != BB_SEG_OPEN && st != BB_SEG_SEALED)
		return false;
	*r = (struct run){ .data = b->base + b->h->seg_data_offset + (uint64_t)i * b->h->seg_size,
			   .size = b->h->seg_size, .start = sd->start, .from = sd->start,
			   .to = sd->head, .seg = true, .tid = sd->tid, .kind = BB_RING_PRIVATE };
	return true;
}

/* Pointer into the live box at position @pos of run @r (a ring's: no
 * wrap handling, tests pick records that do not straddle the end). */
static uint8_t *run_at(const struct box *b, const struct run *r, uint64_t pos)
{
	(void)b;
	return (uint8_t *)(uintptr_t)(r->seg ? r->data + (pos - r->start)
					     : r->data + (pos & (r->size - 1)));
}

/* Copy the record at @pos of run @r (it may wrap) into @buf; its length. */
static uint32_t box_record(const struct box *b, const struct run *r, uint64_t pos, uint8_t *buf)
{
	struct bb_record_hdr hdr;
	uint32_t len;

	for (uint32_t k = 0; k < BB_RECORD_HDR_SIZE; k++)
		((uint8_t *)&hdr)[k] = *run_at(b, r, pos + k);
	len = hdr.len;
	cr_assert_geq(len, BB_RECORD_HDR_SIZE);
	cr_assert_leq(len, b->h->max_record);
	for (uint32_t k = 0; k < len; k++)
		buf[k] = *run_at(b, r, pos + k);
	return len;
}

/*
 * Check every record of every ring and segment: committed seq,
 * BB_RF_CRC set iff @crc, and (if set) a correct CRC.  Returns the number
 * of records.
 */
static size_t box_check_all(const struct box *b, bool crc)
{
	static uint8_t rec[BB_RECORD_MAX];
	size_t n = 0;
	struct run r;

	for (uint32_t i = 0; i < box_runs(b); i++) {
		if (!box_run(b, i, &r))
			continue;
		for (uint64_t pos = r.from; pos < r.to;) {
			const struct bb_record_hdr *h = (const void *)rec;
			uint32_t len = box_record(b, &r, pos, rec), want;

			cr_assert_eq(h->seq, BB_SEQ_DONE(pos), "run %u pos %llu", i,
				     (unsigned long long)pos);
			if (crc) {
				cr_assert(h->flags & BB_RF_CRC, "run %u pos %llu: no BB_RF_CRC",
					  i, (unsigned long long)pos);
				memcpy(&want, rec + len - 4, 4);
				cr_assert_eq(bbt_record_crc(h->seq, rec, len), want,
					     "run %u pos %llu tag %u: bad CRC", i,
					     (unsigned long long)pos, h->tag);
			} else {
				cr_assert_not(h->flags & BB_RF_CRC);
			}
			pos += BB_RECORD_STRIDE(len);
			n++;
		}
	}
	return n;
}

/* bb_dump() into a string (caller frees). */
static char *dump_to_string(void)
{
	int fd = memfd_create("bbdump", 0);
	struct stat st;
	char *s;

	cr_assert_geq(fd, 0);
	cr_assert_eq(bb_dump(fd), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	s = calloc(1, (size_t)st.st_size + 1);
	cr_assert_not_null(s);
	cr_assert_eq(pread(fd, s, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	return s;
}

static size_t count_substr(const char *s, const char *needle)
{
	size_t n = 0, l = strlen(needle);

	while ((s = strstr(s, needle))) {
		n++;
		s += l;
	}
	return n;
}

/* ---- checksums ----------------------------------------------------------- */

static void write_one_of_each(void)
{
	const uint8_t bytes[] = { 0, 1, 0xfe, 0xff, 7 };
	struct bb_field ev[] = { BB_STR("path", "/index.html"), BB_I64("status", -404),
				 BB_F64("ms", 1.5), BB_BYTES("raw", bytes, 5) };
	char big[5000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* Every value length from 1 to 142 bytes (bb_write_str: 1..24 and
	 * 26..142, its head growing to 2 bytes at 24; the kv records of 4..44
	 * fill in 25).  The writer's inline CRC takes whole 64-byte blocks,
	 * then 32, 16, 8, 4, 2 and 1 byte steps by the bits of the length
	 * (crc32c.h), so every combination is here, checked against the
	 * test's own bytewise CRC. */
	for (int len = 0; len <= 140; len++) {
		char v[141];

		memset(v, 'a' + len % 26, (size_t)len);
		v[len] = '\0';
		if (len < 40)
			cr_assert_eq(bb_write_kv("k", v), 0);
		cr_assert_eq(bb_write_str(v), 0);
	}
	/* Values of 64 bytes and more take the out-of-line checksum, in
	 * three streams from 192 (crc32c.c); 4 KiB goes through every block
	 * size of the streams. */
	{
		static const size_t lens[] = { 64, 65, 190, 191, 192, 193, 255, 300, 1000, 4096 };

		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			cr_assert_eq(bb_write_bytes(big, lens[i]), 0);
	}
	cr_assert_eq(bb_write_i64(-5), 0);
	cr_assert_eq(bb_write_u64(UINT64_MAX), 0);
	cr_assert_eq(bb_write_f64(2.5), 0);
	cr_assert_eq(bb_write_bool(true), 0);
	cr_assert_eq(bb_write_bytes(bytes, sizeof(bytes)), 0);
	cr_assert_eq(bb_write_kv_i64("i", 1 << 20), 0);
	cr_assert_eq(bb_write_kv_u64("u", 7), 0);
	cr_assert_eq(bb_write_kv_f64("f", 0.25), 0);
	cr_assert_eq(bb_write_kv_bool("b", false), 0);
	cr_assert_eq(bb_write_event("req", ev, 4), 0);
	cr_assert_eq(bb_write_kv_important("alert", "disk full"), 0);
	cr_assert_eq(bb_write_event_important("panic", ev, 4), 0);
	cr_assert_eq(bb_write_kv("big", big), 0);   /* truncated to max_record */
}

static void *second_writer(void *arg)
{
	(void)arg;
	/* A second thread, so a second log starts too. */
	bb_write_kv("thread", "two");
	return NULL;
}

Test(integrity, every_record_has_a_correct_crc)
{
	struct box b;
	pthread_t th;
	size_t n;

	cr_assert_eq(bb_init(0), 0);
	write_one_of_each();
	cr_assert_eq(pthread_create(&th, NULL, second_writer, NULL), 0);
	pthread_join(th, NULL);
	box_map(&b);
	cr_assert(b.h->flags & BB_HF_CRC32C);
	n = box_check_all(&b, true);
	/* 181 + 10 + 13 + 2 important copies + the thread's one */
	cr_assert_eq(n, 207, "%zu records", n);
	/* The two important copies are in the important ring. */
	{
		uint32_t imp = box_find_kind(&b, BB_RING_IMPORTANT);

		cr_assert_lt(imp, b.h->ring_count);
		cr_assert_gt(box_ring(&b, imp)->head, 0);
	}
}

Test(integrity, max_record_is_respected_with_the_trailer)
{
	char big[70000];
	struct box b;
	struct tcollect c;
	char path[4096];

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(bb_init(1u << 20), 0);
	cr_assert_eq(bb_write_kv("big", big), 0);
	cr_assert_eq(bb_write_kv_important("big", big), 0);
	cr_assert_eq(bb_write_str(big), 0);
	box_map(&b);
	box_check_all(&b, true);
	bb_path(path, sizeof(path));
	tcollect_path(path, &c);
	cr_assert_geq(tcollect_count(&c, BB_TAG_KV), 2);
	for (size_t i = 0; i < c.n; i++) {
		cr_assert_leq(c.r[i].vlen + BB_RECORD_HDR_SIZE + BB_CRC_SIZE, b.h->max_record);
		if (c.r[i].tag == BB_TAG_KV || c.r[i].tag == BB_TAG_STR)
			cr_assert(c.r[i].flags & BB_RF_TRUNCATED);
	}
	free(c.r);
}

/*
 * The "needle" record of this thread's log (before, needle: the second
 * record), at byte @off of it.
 */
static uint8_t *needle(const struct box *b, uint64_t off)
{
	struct run r;

	for (uint32_t i = 0; i < box_runs(b); i++) {
		uint64_t pos;

		if (!box_run(b, i, &r) || !r.seg || r.tid != (int32_t)syscall(SYS_gettid))
			continue;
		pos = r.from + BB_RECORD_STRIDE(((struct bb_record_hdr *)(void *)
						 run_at(b, &r, r.from))->len);
		cr_assert_eq(memcmp(run_at(b, &r, pos + 16 + 1 + 1), "needle", 6), 0);
		return run_at(b, &r, pos + off);
	}
	cr_assert_fail("no segment of this thread");
	return NULL;
}

Test(integrity, flipped_payload_byte_is_detected)
{
	struct box b;
	struct bb_reader *r;
	struct bb_stream_stats st;
	struct tcollect c = { 0 };
	char path[4096], err[256], *out;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_write_kv("before", "intact-1"), 0);
	cr_assert_eq(bb_write_kv("needle", "haystack-value"), 0);
	cr_assert_eq(bb_write_kv("after", "intact-2"), 0);
	box_map(&b);
	/* A stray store into the value: 'h' -> 'H'. */
	needle(&b, 16 + 1 + 1 + 6 + 1)[0] ^= 0x20;

	out = dump_to_string();
	cr_assert_eq(count_substr(out, "checksum mismatch"), 1, "dump:\n%s", out);
	cr_assert_eq(count_substr(out, "aystack"), 0, "corrupt value printed:\n%s", out);
	cr_assert_eq(count_substr(out, "intact-1"), 1, "dump:\n%s", out);
	cr_assert_eq(count_substr(out, "intact-2"), 1, "the record after is lost:\n%s", out);
	free(out);

	/* The reader API counts it corrupt and delivers the others. */
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, tcollect_cb, &c), 0);
	bb_reader_total_stats(r, &st);
	bb_reader_close(r);
	cr_assert_eq(st.corrupt, 1);
	cr_assert_eq(tcollect_count(&c, BB_TAG_KV), 2);
	for (size_t i = 0; i < c.n; i++)
		cr_assert_str_neq(c.r[i].key, "needle");
	free(c.r);
}

/*
 * A scribbled envelope (the framing itself, not a payload byte): bb_dump()
 * resyncs at the next record that validates, as every reader does
 * (FORMAT.md §8, ring.h), says how many bytes it skipped, and prints the
 * records after it; the reader API agrees.  (bb_dump() used to stop the
 * ring at the first corrupt record.)
 */
Test(integrity, scribbled_envelope_dump_resyncs)
{
	struct box b;
	struct bb_reader *r;
	struct bb_stream_stats st;
	struct tcollect c = { 0 };
	char path[4096], err[256], *out;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_write_kv("before", "intact-1"), 0);
	cr_assert_eq(bb_write_kv("needle", "haystack-value"), 0);
	cr_assert_eq(bb_write_kv("after", "intact-2"), 0);
	cr_assert_eq(bb_write_kv("later", "intact-3"), 0);
	box_map(&b);
	/* a stray store over the seq word: not "committed here" */
	memset(needle(&b, 0), 0x5a, 4);

	out = dump_to_string();
	cr_assert_eq(count_substr(out, "aystack"), 0, "corrupt value printed:\n%s", out);
	cr_assert_eq(count_substr(out, "intact-1"), 1, "dump:\n%s", out);
	cr_assert_eq(count_substr(out, "intact-2"), 1, "no resync after the scribble:\n%s", out);
	cr_assert_eq(count_substr(out, "intact-3"), 1, "dump:\n%s", out);
	/* the needle record's stride: 16 + [text(6), text(14)] + CRC, to 8 */
	cr_assert_eq(count_substr(out, " corrupt: 48 bytes skipped before position "), 1,
		     "dump:\n%s", out);
	free(out);

	bb_path(path, sizeof(path));
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, tcollect_cb, &c), 0);
	bb_reader_total_stats(r, &st);
	bb_reader_close(r);
	cr_assert_eq(st.corrupt, 1);
	cr_assert_eq(st.skipped_bytes, 48);
	cr_assert_eq(tcollect_count(&c, BB_TAG_KV), 3);
	free(c.r);
}

static void check_no_crc_box(void)
{
	struct box b;
	struct tcollect c;
	char path[4096];

	write_one_of_each();
	box_map(&b);
	cr_assert_not(b.h->flags & BB_HF_CRC32C);
	box_check_all(&b, false);
	/* A kv of "k" and "" is exactly envelope + 4 bytes: no trailer. */
	bb_path(path, sizeof(path));
	tcollect_path(path, &c);
	for (size_t i = 0; i < c.n; i++)
		if (c.r[i].tag == BB_TAG_KV && !strcmp(c.r[i].key, "k")) {
			cr_assert_eq(c.r[i].vlen, 4);
			cr_assert_eq(c.r[i].n, 0);
			break;
		}
	free(c.r);
}

Test(integrity, option_no_crc)
{
	struct bb_options o = { .flags = BB_OPT_NO_CRC };

	cr_assert_eq(bb_init_opts(&o), 0);
	check_no_crc_box();
}

Test(integrity, env_crc_0)
{
	setenv("BLACKBOX_CRC", "0", 1);
	cr_assert_eq(bb_init(0), 0);
	check_no_crc_box();
}

Test(integrity, env_crc_bad_values)
{
	setenv("BLACKBOX_CRC", "yes", 1);
	cr_assert_eq(bb_init(0), -EINVAL);
	setenv("BLACKBOX_CRC", "1", 1);
	cr_assert_eq(bb_init(0), 0);
	{
		struct box b;

		box_map(&b);
		cr_assert(b.h->flags & BB_HF_CRC32C);
	}
}

/* ---- important records --------------------------------------------------- */

#define CHATTY_THREADS 3

static atomic_int chatty_errors;
static uint64_t chatty_per_thread;

static void *chatty(void *arg)
{
	char v[32];

	(void)arg;
	for (uint64_t i = 0; i < chatty_per_thread; i++) {
		snprintf(v, sizeof(v), "noise-%llu", (unsigned long long)i);
		if (bb_write_kv("chat", v) != 0)
			atomic_fetch_add(&chatty_errors, 1);
	}
	return NULL;
}

Test(integrity, important_records_survive_chatty_threads_once)
{
	struct bb_options o = { .segment_count = 8, .segment_size = 16384 };
	pthread_t th[CHATTY_THREADS];
	struct box b;
	char *out, v[32];
	uint64_t per_box;

	cr_assert_eq(bb_init_opts(&o), 0);
	box_map(&b);
	/* Early important records: their originals will be evicted from our
	 * own log by our chatty traffic below. */
	for (int i = 0; i < 20; i++) {
		snprintf(v, sizeof(v), "early-%02d!", i);
		cr_assert_eq(bb_write_kv_important("alarm", v), 0);
	}
	/* 10 box-fulls of chatty records per thread, from other threads
	 * and this one. */
	per_box = (uint64_t)b.h->seg_count * b.h->seg_size / 32;
	chatty_per_thread = 10 * per_box;
	for (int i = 0; i < CHATTY_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, chatty, NULL), 0);
	chatty(NULL);
	for (int i = 0; i < CHATTY_THREADS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&chatty_errors), 0);
	/* Late important records: original and copy both present. */
	for (int i = 0; i < 5; i++) {
		struct bb_field f[] = { BB_I64("n", i) };

		snprintf(v, sizeof(v), "late-%02d!", i);
		cr_assert_eq(bb_write_kv_important("alarm", v), 0);
		cr_assert_eq(bb_write_event_important("late_event", f, 1), 0);
	}
	cr_assert_eq(b.h->dropped_important, 0);
	box_check_all(&b, true);

	out = dump_to_string();
	for (int i = 0; i < 20; i++) {
		snprintf(v, sizeof(v), "early-%02d!", i);
		cr_assert_eq(count_substr(out, v), 1, "%s printed %zu times", v, count_substr(out, v));
	}
	for (int i = 0; i < 5; i++) {
		snprintf(v, sizeof(v), "late-%02d!", i);
		cr_assert_eq(count_substr(out, v), 1, "%s printed %zu times", v, count_substr(out, v));
	}
	cr_assert_eq(count_substr(out, "late_event"), 5);
	/* The chatty traffic did evict: the first noise records are gone. */
	cr_assert_eq(count_substr(out, "chat=noise-0\n"), 0);
	cr_assert_geq(count_substr(out, "chat=noise-"), 100);
	free(out);
}

/* Important writes from a signal handler interrupting important writes on
 * the same thread: no deadlock, every successful write accounted for as a
 * copy in the important ring or in dropped_important. */
static atomic_long imp_ok, imp_busy, imp_other;
static atomic_bool stop_signals;

static void count_ret(int r)
{
	if (r == 0)
		atomic_fetch_add(&imp_ok, 1);
	else if (r == -EBUSY)
		atomic_fetch_add(&imp_busy, 1);
	else
		atomic_fetch_add(&imp_other, 1);
}

static void on_usr1(int sig)
{
	int e = errno;

	(void)sig;
	count_ret(bb_write_kv_important("sig", "from handler"));
	errno = e;
}

static void *signaller(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (!atomic_load(&stop_signals)) {
		pthread_kill(target, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

Test(integrity, important_writes_nested_in_signal_handlers)
{
	/* segments of 512 KiB: rings of 2 MiB */
	struct bb_options o = { .segment_count = 2, .segment_size = 1u << 19 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t self = pthread_self(), th;
	struct box b;
	struct run r;
	uint32_t imp;
	uint64_t copies = 0;

	cr_assert_eq(bb_init_opts(&o), 0);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(pthread_create(&th, NULL, signaller, &self), 0);
	for (int i = 0; i < 20000; i++)
		count_ret(bb_write_kv_important("main", "from main"));
	atomic_store(&stop_signals, true);
	pthread_join(th, NULL);
	signal(SIGUSR1, SIG_IGN);

	box_map(&b);
	box_check_all(&b, true);
	imp = box_find_kind(&b, BB_RING_IMPORTANT);
	cr_assert_lt(imp, b.h->ring_count);
	cr_assert_eq(b.h->ring_size, 1u << 21);
	/* 2 MiB holds every copy (< 48 bytes each): none was evicted. */
	cr_assert_eq(box_ring(&b, imp)->tail, 0);
	box_run(&b, imp, &r);
	for (uint64_t pos = 0; pos < r.to; copies++)
		pos += BB_RECORD_STRIDE(((struct bb_record_hdr *)(void *)run_at(&b, &r, pos))->len);
	cr_assert_eq(atomic_load(&imp_other), 0);
	cr_assert_eq(copies + b.h->dropped_important, (uint64_t)atomic_load(&imp_ok),
		     "copies %llu + dropped %llu != successful writes %ld",
		     (unsigned long long)copies, (unsigned long long)b.h->dropped_important,
		     atomic_load(&imp_ok));
	cr_assert_geq(atomic_load(&imp_ok), 20000 - atomic_load(&imp_busy));
}

/* ---- TSC clock ------------------------------------------------------------ */

/* Independent conversion (FORMAT.md §11). */
static int64_t tsc_mono_ns(const struct bb_header *h, uint64_t ts)
{
	__extension__ __int128 p = (__int128)(int64_t)(ts - h->tsc_anchor) * h->tsc_mult;

	return h->anchor_clock_ns + (int64_t)(p >> h->tsc_shift);
}

struct tsc_sample {
	int64_t before, after;  /* CLOCK_MONOTONIC around the write */
	int64_t rt_before, rt_after;
};

#define TSC_WRITES 200
struct tsc_thread {
	struct tsc_sample s[TSC_WRITES];
	int32_t tid;
	int err;
};

static void *tsc_writer(void *arg)
{
	struct tsc_thread *t = arg;

	t->tid = (int32_t)syscall(SYS_gettid);
	for (int i = 0; i < TSC_WRITES; i++) {
		t->s[i].rt_before = now_ns(CLOCK_REALTIME);
		t->s[i].before = now_ns(CLOCK_MONOTONIC);
		if (bb_write_kv_i64("n", i))
			t->err++;
		t->s[i].after = now_ns(CLOCK_MONOTONIC);
		t->s[i].rt_after = now_ns(CLOCK_REALTIME);
	}
	return NULL;
}

static void check_clock(int want_clock, int want_requested)
{
	static struct tsc_thread th[2];
	pthread_t p[2];
	struct box b;

	box_map(&b);
	cr_assert_eq(b.h->clock, want_clock);
	cr_assert_eq(b.h->clock_requested, want_requested);
	if (want_clock == BB_CLOCK_TSC) {
		cr_assert_gt(b.h->tsc_hz, 100000000u);
		cr_assert_gt(b.h->tsc_mult, 0);
		cr_assert_leq(b.h->tsc_shift, 32);
	} else {
		cr_assert_eq(b.h->tsc_mult, 0);
	}
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&p[i], NULL, tsc_writer, &th[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(p[i], NULL);
		cr_assert_eq(th[i].err, 0);
	}
	/* Raw stamps, straight from the segments (the reader API converts):
	 * a thread's first segments are in order (from the pool). */
	for (int k = 0; k < 2; k++) {
		static uint8_t rec[BB_RECORD_MAX];
		uint64_t last = 0;
		int seen = 0;
		struct run r;

		for (uint32_t ri = 0; ri < box_runs(&b); ri++) {
			if (!box_run(&b, ri, &r) || r.kind != BB_RING_PRIVATE || r.tid != th[k].tid)
				continue;
			for (uint64_t pos = r.from; pos < r.to;) {
				const struct bb_record_hdr *h = (const void *)rec;
				uint32_t len = box_record(&b, &r, pos, rec);
				const uint8_t *v = rec + BB_RECORD_HDR_SIZE;
				const struct tsc_sample *s;
				int64_t mono, wall, i;

				pos += BB_RECORD_STRIDE(len);
				if (h->tag != BB_TAG_KV)
					continue;
				/* [ "n", i ]: 0x82 0x61 'n', then i < 200 */
				cr_assert_eq(memcmp(v, "\x82\x61n", 3), 0);
				i = v[3] < 24 ? v[3] : v[4];
				cr_assert(v[3] < 24 || v[3] == 0x18);
				cr_assert_lt(i, TSC_WRITES);
				s = &th[k].s[i];
				/* Per thread, stamps never go backwards. */
				cr_assert_geq(h->ts, last, "thread %d record %lld", k, (long long)i);
				last = h->ts;
				mono = want_clock == BB_CLOCK_TSC ? tsc_mono_ns(b.h, h->ts) : (int64_t)h->ts;
				/* Between the samples taken around the write,
				 * within a generous bound (calibration error,
				 * never a threshold on the machine's speed). */
				cr_assert_geq(mono, s->before - 1000000000, "mono %lld before %lld",
					      (long long)mono, (long long)s->before);
				cr_assert_leq(mono, s->after + 1000000000, "mono %lld after %lld",
					      (long long)mono, (long long)s->after);
				wall = b.h->anchor_realtime_ns + (mono - b.h->anchor_clock_ns);
				cr_assert_geq(wall, s->rt_before - 1000000000);
				cr_assert_leq(wall, s->rt_after + 1000000000);
				seen++;
			}
		}
		cr_assert_eq(seen, TSC_WRITES);
	}
}

Test(integrity, tsc_clock_option)
{
	struct bb_options o = { .clock = BB_CLOCK_TSC };
	struct box b;

	cr_assert_eq(bb_init_opts(&o), 0);
	box_map(&b);
	if (b.h->clock != BB_CLOCK_TSC) {
		/* No invariant TSC here: then it must say it fell back. */
		check_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_TSC);
		cr_skip_test("no invariant TSC on this machine (fallback checked)");
	}
	check_clock(BB_CLOCK_TSC, BB_CLOCK_TSC);
}

Test(integrity, tsc_clock_env)
{
	setenv("BLACKBOX_CLOCK", "tsc", 1);
	cr_assert_eq(bb_init(0), 0);
	{
		struct box b;

		box_map(&b);
		cr_assert_eq(b.h->clock_requested, BB_CLOCK_TSC);
	}
}

Test(integrity, tsc_fallback_without_invariant_tsc)
{
	struct bb_options o = { .clock = BB_CLOCK_TSC };

	setenv("BB_TEST_NO_INVARIANT_TSC", "1", 1);
	cr_assert_eq(bb_init_opts(&o), 0);
	check_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_TSC);
}

Test(integrity, monotonic_clock_default_and_explicit)
{
	struct bb_options o = { .clock = BB_CLOCK_MONOTONIC };

	setenv("BLACKBOX_CLOCK", "tsc", 1);   /* the option wins */
	cr_assert_eq(bb_init_opts(&o), 0);
	check_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_MONOTONIC);
}

Test(integrity, clock_bad_values)
{
	struct bb_options o = { .clock = 99 };

	cr_assert_eq(bb_init_opts(&o), -EINVAL);
	o.clock = BB_CLOCK_REALTIME;
	cr_assert_eq(bb_init_opts(&o), -EINVAL);
	setenv("BLACKBOX_CLOCK", "rdtsc", 1);
	cr_assert_eq(bb_init(0), -EINVAL);
	setenv("BLACKBOX_CLOCK", "monotonic", 1);
	cr_assert_eq(bb_init(0), 0);
	check_clock(BB_CLOCK_MONOTONIC, BB_CLOCK_MONOTONIC);
}

/* The child of fork() gets its own TSC box at its first write, reusing the
 * parent's calibration (no 2 ms busy-wait inside a write) with a new
 * anchor.  Checked in the child, reported by exit status. */
static int child_tsc_check(const struct bb_header *parent)
{
	struct box b;
	int64_t before = now_ns(CLOCK_MONOTONIC), after, mono;
	static uint8_t rec[BB_RECORD_MAX];
	struct run r;
	char path[4096];
	int fd;
	struct stat st;

	if (bb_write_kv("child", "tsc") != 0)
		return 10;
	after = now_ns(CLOCK_MONOTONIC);
	if (bb_path(path, sizeof(path)) <= 0)
		return 11;
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 12;
	b.len = (size_t)st.st_size;
	b.base = mmap(NULL, b.len, PROT_READ, MAP_SHARED, fd, 0);
	if (b.base == MAP_FAILED)
		return 13;
	b.h = (struct bb_header *)(void *)b.base;
	if (b.h->pid != getpid() || b.h->clock != BB_CLOCK_TSC)
		return 14;
	if (b.h->tsc_mult != parent->tsc_mult || b.h->tsc_shift != parent->tsc_shift)
		return 15;
	if (b.h->tsc_anchor == parent->tsc_anchor)
		return 16;   /* the anchor must be the child's own */
	/* our record: the first of the first segment */
	if (!box_run(&b, b.h->ring_count, &r))
		return 19;
	{
		const struct bb_record_hdr *h = (const void *)rec;

		(void)box_record(&b, &r, r.from, rec);
		if (h->tag != BB_TAG_KV)
			return 17;
		mono = tsc_mono_ns(b.h, h->ts);
		if (mono < before - 1000000000 || mono > after + 1000000000)
			return 18;
	}
	return 0;
}

Test(integrity, tsc_clock_in_a_fork_child)
{
	struct bb_options o = { .clock = BB_CLOCK_TSC };
	struct box b;
	pid_t pid;
	int st;

	cr_assert_eq(bb_init_opts(&o), 0);
	box_map(&b);
	if (b.h->clock != BB_CLOCK_TSC)
		cr_skip_test("no invariant TSC on this machine");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(child_tsc_check(b.h));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child check failed: %d",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
