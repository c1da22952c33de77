/* SPDX-License-Identifier: MIT */
/*
 * Description: proof by torture.  Kill a multi-threaded writer
 * with SIGKILL at random moments and prove what survives; let a writer
 * scribble over its own box and prove the readers never crash, never hang,
 * report the damage and print nothing that is not intact.
 *
 *   bb-torture [--kills N] [--scribbles N] [--seed S] [--threads T]
 *              [--segments N] [--segment-size BYTES] [--dir D] [--max-delay US]
 *              [--live] [--extract PATH] [--from I] [-v]
 *
 * Kill runs (--kills N).  A child creates a box (N segments of
 * --segment-size bytes, 0 and 0: the default 4 MiB box; the shared and the
 * important ring) and keeps T writer threads busy with records of mixed
 * sizes, some larger than an eighth of a segment so segments fill fast.
 * Threads churn: each writes a random number of records, then a "bye"
 * record, and exits; a new thread (new serial) takes its place, so
 * segments are taken from the pool, recycled, stolen from threads that
 * hold more and from exited threads, started over in place, and threads
 * that get none use the shared ring.  Every record is self-verifying
 * (payload.h).  After a random delay the parent SIGKILLs the child and
 * checks the box with the reader API:
 *   - every record delivered verifies by content, and is attributed to the
 *     thread (tid) that wrote it, across segment hand-overs;
 *   - nothing is counted corrupt or overwritten (nobody scribbled, nobody
 *     wrote while we read), at most one record per ring or log is torn;
 *   - per ring, the delivered records chain without gaps from the
 *     descriptor's tail to its head; per thread's log, from each
 *     segment's start to its head;
 *   - per thread, a thread's records live in one log (and, before it got
 *     a segment, the shared ring), sequence numbers increase, without a
 *     gap inside a segment, and where a log has a hole (segments taken
 *     away) the reader's gap_before is exactly the bytes of the records
 *     missing (each record's size is known from the run's seed), and so
 *     is the distance between the two segments;
 *   - a segment its thread moved on from holds more than seg_size -
 *     stride(max_record) bytes of records (it was left only when the next
 *     record did not fit).
 * With --live, a reader thread inside the child walks the box while the
 * writers run and requires every delivered record to verify and nothing
 * to be called corrupt or torn; another thread calls bb_dump() in a loop,
 * which reads the writers' own mapping: the seqlock race TSan sees.
 *
 * Scribble runs (--scribbles N).  A child writes records, then overwrites
 * random parts of its own box through a shared mapping of the file (header
 * fields, ring descriptors, record envelopes, payloads, random ranges) as
 * a memory-corruption bug would, and dies by _exit() or SIGKILL.  The
 * reader API (in a child with an alarm) and bb-extract --json and text
 * (--extract PATH, each with an alarm) must: never die of a signal, never
 * hang, exit 0, 3 or 4 only; deliver/print only records that verify by
 * content when the box carries CRCs (BB_RF_CRC); and report damage (a
 * corrupt count, exit 3 or 4) when a scribble changed a byte of a live
 * record while leaving header and ring table alone.  Without CRCs only a
 * scribble over a record's framing (seq, len) is provably detectable; a
 * scribbled payload or timestamp is then printed as data (counted, not a
 * failure).  A scribble of the header or ring table can shrink what a
 * reader sees without a trace (e.g. a smaller head): there we only
 * require no crash, no hang, a valid exit status and verified content.
 *
 * Any violation prints the run's seed and a command that replays it; the
 * exit status is then 1.  Local long run: bb-torture --kills 10000.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "payload.h"

/* ---- options and small helpers ---------------------------------------------- */

static struct {
	long kills, scribbles, from;
	uint64_t seed;
	unsigned threads, segments, seg_size, max_delay_us;
	const char *dir, *extract;
	bool live, verbose;
} opt = {
	.threads = 6, .segments = 6, .seg_size = 4096, .max_delay_us = 20000,
};

static long violations;

/* Figures over all runs, summed by the checking children (MAP_SHARED). */
struct figures {
	_Atomic uint64_t records, logs, holes, handovers, torn, serials;
	_Atomic uint64_t no_box, unfinished, shared_records;
	_Atomic uint64_t live_walks, live_records, live_dumps, live_gaps; /* --live */
};
static struct figures *fig;
static char argv0[256] = "bb-torture";

static uint64_t run_seed(long i)
{
	return tt_mix(opt.seed ^ tt_mix((uint64_t)i * UINT64_C(0x9e3779b97f4a7c15)));
}

/* xorshift64*: a per-run and per-thread stream; never zero. */
struct rng {
	uint64_t s;
};

static void rng_init(struct rng *g, uint64_t seed)
{
	g->s = tt_mix(seed) | 1;
}

static uint64_t rnd(struct rng *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return g->s * UINT64_C(2685821657736338717);
}

static uint64_t rnd_in(struct rng *g, uint64_t lo, uint64_t hi) /* [lo, hi] */
{
	return lo + rnd(g) % (hi - lo + 1);
}

static const char *run_mode;
static long run_index;

/* One violation: say what, and how to replay it. */
static void fail(const char *fmt, ...)
{
	va_list ap;

	violations++;
	fprintf(stderr, "VIOLATION (%s run %ld, seed %" PRIu64 "): ", run_mode, run_index,
		opt.seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  replay: %s --%s 1 --from %ld --seed %" PRIu64 " --threads %u"
		" --segments %u --segment-size %u%s\n", argv0, run_mode, run_index, opt.seed,
		opt.threads, opt.segments, opt.seg_size, opt.live ? " --live" : "");
}

static int32_t gettid_(void)
{
	return (int32_t)syscall(SYS_gettid);
}

/* Remove every box left in the work directory. */
static void clean_dir(void)
{
	DIR *d = opendir(opt.dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

/* The box left by @pid in the work directory: 1 found, 0 none, -1 several. */
static int find_box(pid_t pid, char *path, size_t len)
{
	char prefix[64];
	DIR *d = opendir(opt.dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	snprintf(prefix, sizeof(prefix), "%s%d.", BB_NAME_PREFIX, (int)pid);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, len, "%s/%s", opt.dir, e->d_name);
		n++;
	}
	closedir(d);
	return n > 1 ? -1 : n;
}

/* Exact record length from what the reader delivers (FORMAT §5, §11). */
static uint64_t rec_len(const struct bb_record *rec)
{
	return BB_RECORD_HDR_SIZE + ((rec->flags & BB_RF_TID) ? 8u : 0u) + rec->value_len +
	       ((rec->flags & BB_RF_CRC) ? BB_CRC_SIZE : 0u);
}

/* The segment size of the box (the default box's when --segment-size 0). */
static unsigned seg_size(void)
{
	return opt.seg_size ? opt.seg_size : 8192;
}

/* Payload sizes: mostly small, some medium, some larger than an eighth of
 * a segment. */
static size_t pick_size(struct rng *g)
{
	unsigned r = (unsigned)(rnd(g) % 100);
	/* largest record: envelope 16 + tid 8 + CBOR head 3 + payload + CRC 4
	 * must stay within max_record (a segment, a quarter of the shared
	 * ring: never truncated) */
	size_t big_max = seg_size() / 2 - 48;
	size_t big_min = seg_size() / 8 + 64;

	if (r < 60)
		return (size_t)rnd_in(g, TT_HEAD, 96);
	if (r < 92 || big_min >= big_max)
		return (size_t)rnd_in(g, 97, 600 < big_max ? 600 : big_max);
	return (size_t)rnd_in(g, big_min, big_max);
}

/* ---- the writer child ------------------------------------------------------- */

struct worker {
	pthread_t th;
	uint32_t serial;
	uint64_t seed;
	uint64_t count; /* records before the bye record */
};

static _Atomic int write_errors;

/*
 * A thread without a segment writes to the shared ring behind a
 * bounded try-lock; when the holder is preempted the write is dropped with
 * -EBUSY (by design, counted in the header).  The checker wants each
 * thread's sequence contiguous, so a dropped record is written again: the
 * box must then hold it exactly once.
 */
static int write_retry(const void *buf, size_t n)
{
	int rc;

	while ((rc = bb_write_bytes(buf, n)) == -EBUSY)
		sched_yield();
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[BB_RECORD_MAX];
	int32_t tid = gettid_();
	char name[16];
	struct rng g;

	rng_init(&g, w->seed);
	snprintf(name, sizeof(name), "tt%u", w->serial);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	for (uint64_t seq = 0; seq < w->count; seq++) {
		size_t n = pick_size(&g);

		tt_make(buf, n, w->serial, tid, seq, TT_KIND_DATA);
		if (write_retry(buf, n) != 0)
			atomic_fetch_add(&write_errors, 1);
	}
	tt_make(buf, TT_HEAD, w->serial, tid, w->count, TT_KIND_BYE);
	if (write_retry(buf, TT_HEAD) != 0)
		atomic_fetch_add(&write_errors, 1);
	return NULL;
}

/* Worker @serial's seed and record count, as the run's @seed makes them
 * (the checker computes them again to know every record's size). */
static void worker_plan(uint64_t seed, uint32_t serial, uint64_t *wseed, uint64_t *count)
{
	struct rng g;

	rng_init(&g, seed ^ serial);
	*wseed = rnd(&g);
	/* most threads are short-lived (churn), some write for long */
	*count = rnd(&g) % 8 == 0 ? rnd_in(&g, 500, 5000) : rnd_in(&g, 0, 200);
}

static void start_worker(struct worker *w, uint32_t serial, uint64_t seed)
{
	w->serial = serial;
	worker_plan(seed, serial, &w->seed, &w->count);
	if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
		fprintf(stderr, "bb-torture: pthread_create failed\n");
		_exit(3);
	}
}

static struct bb_box_info live_info;
static uint64_t live_seed;   /* the run's seed: every record's size */
static bool live_follow;     /* the walk under way is a FOLLOW walk */

/* What the live reader saw last of each thread (serial), and in which walk. */
struct live_seen {
	uint32_t ring;
	uint64_t seq;
	unsigned walk;
	bool seen;
};
static unsigned live_walk;
static struct live_seen *live_seen;
static size_t live_nseen;

static uint64_t strides(uint64_t seed, uint32_t serial, uint64_t from, uint64_t to);

/*
 * Live reader (--live): walk the box while it is written.  Every record
 * must verify.  In a FOLLOW walk, a record of a thread's log that does not
 * follow the last one the reader saw of that thread (in the same log, by
 * this walk or the one before: a FOLLOW walk goes on from where the
 * previous walk, of any kind, ended) must say in gap_before exactly the
 * bytes of the records between: the holes the reader could not read in
 * time, measured in the log's bytes whatever segments were taken away
 * meanwhile.
 */
static int live_cb(const struct bb_record *rec, void *arg)
{
	const uint8_t *p;
	struct tt_head h;
	struct live_seen *ls;
	const char *why;
	size_t n;

	(void)arg;
	if (rec->tag == BB_TAG_OWNER)
		return 0;
	if (rec->tag != BB_TAG_BYTES || !(p = tt_cbor_bytes(rec->value, rec->value_len, &n))) {
		fprintf(stderr, "bb-torture: live reader: ring %u pos %" PRIu64
			": unexpected tag %u or value\n", rec->stream, rec->pos, rec->tag);
		_exit(99);
	}
	if ((why = tt_verify(p, n, &h))) {
		fprintf(stderr, "bb-torture: live reader: ring %u pos %" PRIu64 ": %s\n",
			rec->stream, rec->pos, why);
		_exit(99);
	}
	if (h.serial >= live_nseen) {
		size_t c = live_nseen ? live_nseen : 256;

		while (c <= h.serial)
			c *= 2;
		live_seen = realloc(live_seen, c * sizeof(*live_seen));
		if (!live_seen)
			_exit(98);
		memset(live_seen + live_nseen, 0, (c - live_nseen) * sizeof(*live_seen));
		live_nseen = c;
	}
	ls = &live_seen[h.serial];
	if (live_follow && ls->seen && ls->ring == rec->stream && h.seq > ls->seq &&
	    ls->walk + 1 >= live_walk && !(rec->flags & BB_RF_TID)) {
		uint64_t want = h.seq == ls->seq + 1 ? 0 : strides(live_seed, h.serial, ls->seq + 1, h.seq);

		if (rec->gap_before != want) {
			fprintf(stderr, "bb-torture: live reader: ring %u serial %u seq %" PRIu64
				" after %" PRIu64 ": gap_before %" PRIu64 ", the records between "
				"took %" PRIu64 "\n", rec->stream, h.serial, h.seq, ls->seq,
				rec->gap_before, want);
			_exit(99);
		}
		fig->live_gaps += want > 0;
	}
	if (!ls->seen || ls->ring != rec->stream || h.seq > ls->seq) {
		ls->seen = true;
		ls->ring = rec->stream;
		ls->seq = h.seq;
		ls->walk = live_walk;
	}
	fig->live_records++;
	return 0;
}

static void *live_main(void *arg)
{
	const char *path = arg;
	struct bb_reader *r;
	char err[256];

	if (bb_reader_open_path(path, 0, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "bb-torture: live reader: %s\n", err);
		_exit(99);
	}
	live_info = *bb_reader_info(r);
	for (unsigned k = 0;; k++) {
		struct bb_stream_stats sum;
		unsigned flags = k % 3 == 0 ? 0 : k % 3 == 1 ? BB_WALK_MERGE :
					      BB_WALK_FOLLOW | BB_WALK_MERGE;
		int rc;

		live_follow = flags & BB_WALK_FOLLOW;
		live_walk = k;
		rc = bb_reader_walk(r, flags, live_cb, NULL);
		if (rc) {
			fprintf(stderr, "bb-torture: live reader: walk: %d\n", rc);
			_exit(99);
		}
		bb_reader_total_stats(r, &sum);
		fig->live_walks++;
		/* A live reader sees lapped records as "overwritten" (FORMAT
		 * §8: it re-reads tail after the fence before it calls
		 * anything corrupt); corrupt or torn in a live box is a bug. */
		if (sum.corrupt || sum.torn) {
			fprintf(stderr, "bb-torture: live reader: corrupt %" PRIu64 " torn %"
				PRIu64 " in a live, unscribbled box\n", sum.corrupt, sum.torn);
			_exit(99);
		}
	}
	return NULL;
}

/*
 * Live dumper (--live): bb_dump() copies records from the writers' own
 * mapping while they write, the seqlock's intentional race, which TSan
 * sees (tests/tsan.supp).  A thread of its own: TSan keeps a bounded
 * history per thread, and a thread that does nothing else keeps the stack
 * of its racing read restorable, so the suppression can match it.
 */
static void *dump_main(void *arg)
{
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)arg;
	for (;;) {
		int d = bb_dump(devnull);

		if (d != 0 && d != -EBUSY) {
			fprintf(stderr, "bb-torture: live dumper: bb_dump: %d\n", d);
			_exit(99);
		}
		fig->live_dumps++;
	}
	return NULL;
}

static void writer_child(uint64_t seed, int ready_fd)
{
	struct bb_options o = {
		.dir = opt.dir, .segment_count = opt.segments, .segment_size = opt.seg_size,
		.flags = BB_OPT_NO_ENV,
	};
	struct worker *w = calloc(opt.threads, sizeof(*w));
	static char path[4096];
	uint32_t serial = 1;
	pthread_t live;
	int rc;

	/* never outlive a parent that failed to kill us */
	alarm(120);
	live_seed = seed;
	rc = bb_init_opts(&o);
	if (rc || !w) {
		fprintf(stderr, "bb-torture: bb_init_opts: %s\n", strerror(-rc));
		_exit(2);
	}
	for (unsigned i = 0; i < opt.threads; i++)
		start_worker(&w[i], serial++, seed);
	if (opt.live) {
		if (bb_path(path, sizeof(path)) < 0 ||
		    pthread_create(&live, NULL, live_main, path) != 0 ||
		    pthread_create(&live, NULL, dump_main, NULL) != 0)
			_exit(3);
	}
	if (write(ready_fd, "R", 1) != 1)
		_exit(3);
	for (unsigned i = 0;; i = (i + 1) % opt.threads) {
		pthread_join(w[i].th, NULL);
		start_worker(&w[i], serial++, seed);
	}
}

/* ---- checking a killed writer's box ---------------------------------------------- */

/* What the check saw of one thread (serial): in its log, and in the shared
 * ring (where it writes while it has no segment). */
struct seen {
	bool seen, in_log, in_shared, ended;
	uint32_t log_ring;
	uint64_t last_log, last_shared;
};

struct rec {
	uint32_t ring;
	int32_t tid;
	uint8_t tag, flags;
	uint64_t pos, len, gap;
	bool ok;           /* BYTES verified, or OWNER decoded */
	struct tt_head h;  /* BYTES */
	int32_t owner_tid; /* OWNER */
};

struct walk {
	struct rec *v;
	size_t n, cap;
	long bad; /* records that failed to verify */
};

/* OWNER value: array(4) [tid, name, prev_tid, prev_name]; the new tid. */
static bool owner_tid(const uint8_t *v, size_t n, int32_t *tid)
{
	if (n < 2 || v[0] != 0x84)
		return false;
	if ((v[1] >> 5) == 0 && (v[1] & 31) < 24) {
		*tid = v[1] & 31;
		return true;
	}
	if ((v[1] >> 5) != 0 || (v[1] & 31) < 24 || (v[1] & 31) > 26)
		return false;
	{
		size_t hl = (size_t)1 << ((v[1] & 31) - 24);
		uint32_t t = 0;

		if (n < 2 + hl)
			return false;
		for (size_t i = 0; i < hl; i++)
			t = t << 8 | v[2 + i];
		*tid = (int32_t)t;
	}
	return true;
}

static int check_cb(const struct bb_record *rec, void *arg)
{
	struct walk *w = arg;
	struct rec *x;
	const uint8_t *p;
	const char *why = NULL;
	size_t n;

	if (w->n == w->cap) {
		size_t c = w->cap ? w->cap * 2 : 1024;
		struct rec *v = realloc(w->v, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = c;
	}
	x = &w->v[w->n++];
	*x = (struct rec){
		.ring = rec->stream, .tid = rec->tid, .tag = rec->tag, .flags = rec->flags,
		.pos = rec->pos, .len = rec_len(rec), .gap = rec->gap_before,
	};
	if (rec->tag == BB_TAG_OWNER) {
		x->ok = owner_tid(rec->value, rec->value_len, &x->owner_tid);
		why = x->ok ? NULL : "owner record does not decode";
	} else if (rec->tag != BB_TAG_BYTES) {
		why = "a tag bb-torture never writes";
	} else if (!(p = tt_cbor_bytes(rec->value, rec->value_len, &n))) {
		why = "value is not one CBOR byte string";
	} else {
		why = tt_verify(p, n, &x->h);
		x->ok = !why;
	}
	if (why) {
		w->bad++;
		if (opt.verbose || (w->bad <= 3 && !strcmp(run_mode, "kills")))
			fprintf(stderr, "  ring %u pos %" PRIu64 " tag %u flags 0x%x: %s\n",
				rec->stream, rec->pos, rec->tag, rec->flags, why);
	}
	return 0;
}

static struct seen *seen_at(struct seen **v, size_t *cap, uint32_t serial)
{
	if (serial >= *cap) {
		size_t c = *cap ? *cap : 256;
		struct seen *q;

		while (c <= serial)
			c *= 2;
		q = realloc(*v, c * sizeof(*q));
		if (!q)
			abort();
		memset(q + *cap, 0, (c - *cap) * sizeof(*q));
		*v = q;
		*cap = c;
	}
	return &(*v)[serial];
}

static const struct bb_ring_desc *desc_of(const uint8_t *data, uint32_t i)
{
	const struct bb_header *h = (const void *)data;

	return (const void *)(data + h->ring_table_offset + (uint64_t)i * h->ring_desc_size);
}

static const struct bb_seg_desc *seg_of(const uint8_t *data, uint32_t i)
{
	const struct bb_header *h = (const void *)data;

	return (const void *)(data + h->seg_table_offset + (uint64_t)i * BB_SEG_DESC_SIZE);
}

/* Bytes a record of serial @serial's log takes for a payload of @n bytes:
 * envelope, CBOR head, payload, CRC, to 8. */
static uint64_t payload_stride(size_t n)
{
	size_t head = n < 24 ? 1 : n < 256 ? 2 : 3;

	return BB_RECORD_STRIDE(BB_RECORD_HDR_SIZE + head + n + BB_CRC_SIZE);
}

/* Bytes the records [from, to) of serial @serial of the run @seed took in
 * its log: their sizes again, from the worker's seed (start_worker()). */
static uint64_t strides(uint64_t seed, uint32_t serial, uint64_t from, uint64_t to)
{
	uint64_t wseed, count, sum = 0;
	struct rng g;

	worker_plan(seed, serial, &wseed, &count);
	rng_init(&g, wseed);
	for (uint64_t k = 0; k < to; k++) {
		size_t n = k < count ? pick_size(&g) : TT_HEAD; /* seq count: the bye record */

		if (k >= from)
			sum += payload_stride(n);
	}
	return sum;
}

/* A segment holding part of a log, from the box's bytes. */
struct segx {
	uint32_t log, idx, next, state;
	uint64_t start, head;
};

static int segx_cmp(const void *a, const void *b)
{
	const struct segx *x = a, *y = b;

	if (x->log != y->log)
		return x->log < y->log ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* The first segment of log @log in @v (sorted), or NULL. */
static const struct segx *segs_of(const struct segx *v, size_t n, uint32_t log, size_t *count)
{
	size_t k = 0;

	while (k < n && v[k].log < log)
		k++;
	*count = 0;
	while (k + *count < n && v[k + *count].log == log)
		(*count)++;
	return *count ? &v[k] : NULL;
}

/* Check the box of a killed writer.  Runs in a child of its own (alarm),
 * so a reader that crashes or hangs is reported, not fatal.  Exit status:
 * number of violations (capped), 0 = all good. */
static uint64_t check_seed; /* the run's seed (kill_run()) */

static int check_killed(pid_t pid, bool early)
{
	char path[4096], err[256];
	struct bb_reader *r;
	struct walk w = { 0 };
	struct seen *seen = NULL;
	struct segx *sx = NULL;
	size_t nseen = 0, len, k = 0, nsx = 0;
	const uint8_t *data;
	const struct bb_header *hdr;
	const struct bb_box_info *info;
	uint64_t max_stride, rec_total = 0;
	int rc, found = find_box(pid, path, sizeof(path));

	if (found < 0) {
		fail("several boxes for pid %d", (int)pid);
		return 1;
	}
	if (found == 0) {
		if (!early)
			fail("no box left by pid %d after it reported bb_init() done", (int)pid);
		fig->no_box++;
		return (int)violations;
	}
	rc = bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, err, sizeof(err));
	if (rc) {
		/* killed inside bb_init(): the box may be unfinished (magic 0) */
		if (!(early && rc == -ENODATA))
			fail("open %s: %s (%d)", path, err, rc);
		fig->unfinished++;
		return (int)violations;
	}
	info = bb_reader_info(r);
	if (info->pid != pid)
		fail("header pid %d, expected %d", info->pid, (int)pid);
	if (bb_reader_liveness(r) == BB_LIVENESS_ALIVE)
		fail("a SIGKILLed and reaped owner is reported alive");
	rc = bb_reader_walk(r, 0, check_cb, &w);
	if (rc)
		fail("bb_reader_walk: %d", rc);
	if (w.bad)
		fail("%ld delivered record(s) do not verify by content", w.bad);
	data = bb_reader_data(r, &len);
	hdr = (const void *)data;
	max_stride = BB_RECORD_STRIDE(info->max_record);
	if (info->version_major != 3 || !info->seg_count)
		fail("format %u.%u with %u segments: not a 3.0 box", info->version_major,
		     info->version_minor, info->seg_count);
	fig->handovers += hdr->seg_stolen + hdr->seg_restarted;

	/* The segments that hold part of a log, by log and start. */
	sx = calloc(info->seg_count + 1, sizeof(*sx));
	if (!sx)
		abort();
	for (uint32_t i = 0; i < info->seg_count; i++) {
		const struct bb_seg_desc *d = seg_of(data, i);
		uint32_t st = BB_SEG_STATE(d->own);

		if (st != BB_SEG_OPEN && st != BB_SEG_SEALED)
			continue;
		sx[nsx++] = (struct segx){ .log = BB_SEG_LOG(d->own), .idx = i, .next = d->next,
					   .state = st, .start = d->start, .head = d->head };
		/* A segment its thread moved on from (it linked the next one)
		 * was full: the next record did not fit. */
		if (d->next != BB_SEG_NONE &&
		    d->head - d->start <= (uint64_t)info->seg_size - max_stride)
			fail("segment %u: left holding only %" PRIu64 " of %u bytes", i,
			     d->head - d->start, info->seg_size);
	}
	/* Last words (3.2): a one-record segment of an exited thread's log,
	 * in its slot, unless a segment still in the box holds the record. */
	if (hdr->last_words_offset) {
		struct segx *m = realloc(sx, (nsx + hdr->thread_count + 1) * sizeof(*sx));

		if (!m)
			abort();
		sx = m;
		for (uint32_t i = 0, n0 = (uint32_t)nsx; i < hdr->thread_count; i++) {
			const struct bb_last_words *e = (const void *)(data + hdr->last_words_offset +
								       (uint64_t)i * BB_LAST_WORDS_SIZE);
			bool held = false;

			if (BB_SEG_STATE(e->own) != BB_SEG_SEALED)
				continue;
			for (uint32_t j = 0; j < n0 && !held; j++)
				held = sx[j].log == BB_SEG_LOG(e->own) && sx[j].start <= e->start &&
				       e->start < sx[j].head;
			if (!held)
				sx[nsx++] = (struct segx){ .log = BB_SEG_LOG(e->own), .idx = BB_SEG_NONE,
							   .next = BB_SEG_NONE, .state = BB_SEG_SEALED,
							   .start = e->start, .head = e->head };
		}
	}
	qsort(sx, nsx, sizeof(*sx), segx_cmp);

	for (uint32_t i = 0; i < info->stream_count; i++) {
		const struct bb_stream_stats *st = bb_reader_stream_stats(r, i);
		bool log = st->log != 0;
		uint64_t expect = 0;
		const struct segx *segs = NULL, *cur = NULL;
		size_t nsegs = 0, si = 0;
		uint32_t shown = 0; /* log: serial whose records we saw last, 0 = none */

		if (!log && st->kind != BB_STREAM_SHARED) {
			/* the important ring gets no records from us */
			continue;
		}
		if (st->corrupt || st->overwritten || st->skipped_bytes)
			fail("ring %u: corrupt %" PRIu64 " overwritten %" PRIu64 " skipped %" PRIu64
			     " bytes in a SIGKILLed, unscribbled box (%s)", i, st->corrupt,
			     st->overwritten, st->skipped_bytes, st->problem);
		if (st->torn > 1)
			fail("ring %u: %" PRIu64 " torn records (at most 1)", i, st->torn);
		fig->torn += st->torn;
		if (log) {
			fig->logs++;
			segs = segs_of(sx, nsx, st->log, &nsegs);
			if (st->read && !segs)
				fail("ring %u: log %u has records but no segment", i, st->log);
		} else {
			expect = desc_of(data, i)->tail;
		}
		for (; k < w.n && w.v[k].ring == i; k++) {
			struct rec *x = &w.v[k];
			struct seen *sn;

			rec_total++;
			if (!log)
				fig->shared_records++;
			if (log) {
				/* the segment it lies in: records chain from each
				 * segment's start to its head */
				while (si < nsegs && segs[si].head <= x->pos) {
					if (cur == &segs[si] && expect != cur->head)
						fail("log %u segment %u: records end at %" PRIu64
						     ", head %" PRIu64, st->log, cur->idx, expect,
						     cur->head);
					si++;
				}
				if (si == nsegs || x->pos < segs[si].start) {
					fail("log %u: record at %" PRIu64 " outside its segments", st->log,
					     x->pos);
					continue;
				}
				if (cur != &segs[si]) {
					/* a new segment: its first record at its start */
					uint64_t hole = cur ? segs[si].start - cur->head : 0;

					if (x->pos != segs[si].start)
						fail("log %u segment %u: first record at %" PRIu64
						     ", start %" PRIu64, st->log, segs[si].idx, x->pos,
						     segs[si].start);
					if (cur && x->gap != hole)
						fail("log %u: %" PRIu64 " bytes between segments %u and %u, "
						     "gap_before says %" PRIu64, st->log, hole, cur->idx,
						     segs[si].idx, x->gap);
					fig->holes += hole > 0;
					cur = &segs[si];
					expect = x->pos;
				}
			}
			if (x->pos != expect) {
				fail("ring %u: record at %" PRIu64 ", expected %" PRIu64
				     " (a gap in the chain)", i, x->pos, expect);
				expect = x->pos;
			}
			expect += BB_RECORD_STRIDE(x->len);
			if (!x->ok || x->tag != BB_TAG_BYTES) {
				if (x->tag == BB_TAG_OWNER)
					fail("ring %u: an owner record in a 3.0 box", i);
				continue;
			}
			if (x->tid != x->h.tid)
				fail("ring %u pos %" PRIu64 ": record of tid %d (serial %u seq %" PRIu64
				     ") attributed to tid %d", i, x->pos, x->h.tid, x->h.serial,
				     x->h.seq, x->tid);
			sn = seen_at(&seen, &nseen, x->h.serial);
			if (log && shown && shown != x->h.serial)
				fail("log %u: serials %u and %u in one log", st->log, shown,
				     x->h.serial);
			shown = x->h.serial;
			if (sn->ended)
				fail("ring %u: serial %u writes after its bye record", i, x->h.serial);
			if (log && sn->in_log && sn->log_ring != i)
				fail("serial %u in the logs of rings %u and %u", x->h.serial,
				     sn->log_ring, i);
			if (log && sn->in_log) {
				uint64_t want = x->h.seq == sn->last_log + 1 ? 0 :
						strides(check_seed, x->h.serial, sn->last_log + 1,
							x->h.seq);

				if (x->h.seq <= sn->last_log)
					fail("log %u pos %" PRIu64 ": serial %u seq %" PRIu64 " after %"
					     PRIu64, st->log, x->pos, x->h.serial, x->h.seq, sn->last_log);
				else if (x->gap != want)
					fail("log %u pos %" PRIu64 ": serial %u seq %" PRIu64 " after %"
					     PRIu64 ": gap_before %" PRIu64 ", the records between took %"
					     PRIu64, st->log, x->pos, x->h.serial, x->h.seq, sn->last_log,
					     x->gap, want);
			}
			if (!log && sn->in_shared && x->h.seq != sn->last_shared + 1)
				fail("ring %u pos %" PRIu64 ": serial %u seq %" PRIu64 " after %" PRIu64
				     " (not contiguous)", i, x->pos, x->h.serial, x->h.seq,
				     sn->last_shared);
			if (!log && sn->in_log)
				fail("ring %u: serial %u writes the shared ring after its log", i,
				     x->h.serial);
			sn->seen = true;
			if (log) {
				sn->in_log = true;
				sn->log_ring = i;
				sn->last_log = x->h.seq;
			} else {
				sn->in_shared = true;
				sn->last_shared = x->h.seq;
			}
			sn->ended = x->h.kind == TT_KIND_BYE;
		}
		if (log && cur && expect != cur->head)
			fail("log %u segment %u: records end at %" PRIu64 ", head %" PRIu64, st->log,
			     cur->idx, expect, cur->head);
		else if (!log && expect != desc_of(data, i)->head)
			fail("ring %u: records end at %" PRIu64 ", head is %" PRIu64, i, expect,
			     desc_of(data, i)->head);
	}
	if (k != w.n)
		fail("records delivered out of ring order");
	fig->records += rec_total;
	for (size_t k2 = 0; k2 < nseen; k2++)
		fig->serials += seen[k2].seen;
	if (opt.verbose)
		fprintf(stderr, "  pid %d: %" PRIu64 " records\n", (int)pid, rec_total);
	free(w.v);
	free(seen);
	free(sx);
	bb_reader_close(r);
	return violations > 100 ? 100 : (int)violations;
}

/* Run @fn in a child with an alarm; a signal or a hang is a violation. */
static void in_child(const char *what, int (*fn)(pid_t, bool), pid_t pid, bool early)
{
	pid_t c;
	int st;

	fflush(stderr);
	c = fork();
	if (c == 0) {
		violations = 0; /* the child counts its own */
		alarm(60);
		_exit(fn(pid, early));
	}
	if (c < 0 || waitpid(c, &st, 0) != c) {
		fail("%s: fork/wait failed", what);
		return;
	}
	if (WIFSIGNALED(st))
		fail("%s died of signal %d (%s)%s", what, WTERMSIG(st), strsignal(WTERMSIG(st)),
		     WTERMSIG(st) == SIGALRM ? ": a hang" : "");
	else if (WEXITSTATUS(st))
		violations += WEXITSTATUS(st); /* already printed by the child */
}

/* Fork a child that runs @body(seed, write end of a pipe); returns its pid
 * and the read end in *rfd. */
static pid_t spawn(void (*body)(uint64_t, int), uint64_t seed, int *rfd)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		abort();
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		close(fds[0]);
		body(seed, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

static void kill_run(long i)
{
	uint64_t seed = run_seed(i);
	struct rng g;
	int rfd, st;
	bool early;
	pid_t pid;
	char c;

	rng_init(&g, seed);
	run_index = i;
	pid = spawn(writer_child, seed, &rfd);
	/* one run in 16 is killed without waiting for bb_init(): the box may
	 * be missing or unfinished, never wrong */
	early = rnd(&g) % 16 == 0;
	if (!early && read(rfd, &c, 1) != 1)
		fail("writer child died before it was ready");
	{
		uint64_t r = rnd(&g) % 4;
		/* a quarter of kills land in the first 200 us (claims, first
		 * laps), the rest anywhere up to --max-delay */
		uint64_t us = r == 0 ? rnd(&g) % 200 : rnd(&g) % (opt.max_delay_us + 1);
		struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	close(rfd);
	if (waitpid(pid, &st, 0) != pid)
		abort();
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		fail("writer child ended by %s %d, not SIGKILL", WIFSIGNALED(st) ? "signal" :
		     "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	check_seed = seed;
	in_child("reader check", check_killed, pid, early);
	clean_dir();
}

/* ---- scribble runs --------------------------------------------------------------- */

/* What the scribbling child did, sent to the parent before it dies. */
struct scribble_report {
	uint32_t crc;         /* the writer checksummed its records (BB_HF_CRC32C) */
	uint32_t hit_live;    /* changed a byte of a live record */
	uint32_t hit_framing; /* changed a live record's seq or len */
	uint32_t hit_meta;    /* changed a byte of the header or a table */
	uint32_t nscribbles;
	uint32_t classes;     /* bit per class used */
	uint64_t live_records;
};

/* Mark the live record at box offset @off (@len bytes, no wrap: the
 * caller maps each byte with @at). */
static void mark_rec(uint8_t *live, uint64_t first, uint64_t len, uint64_t *nrec,
		     uint64_t **recs, size_t *nrecs)
{
	*recs = realloc(*recs, (*nrecs + 1) * sizeof(**recs));
	(*recs)[(*nrecs)++] = first;
	(*nrec)++;
	(void)live;
	(void)len;
}

/* live[off]: 1 = byte of a live record's payload area, 2 = its seq or len */
static void mark_live(const uint8_t *base, uint64_t size, uint8_t *live, uint64_t *nrec,
		      uint64_t **recs, size_t *nrecs)
{
	const struct bb_header *h = (const void *)base;

	/* the segments of the threads' logs (FORMAT.md §13) */
	for (uint32_t i = 0; i < h->seg_count; i++) {
		const struct bb_seg_desc *d = seg_of(base, i);
		uint64_t data = h->seg_data_offset + (uint64_t)i * h->seg_size;
		uint32_t st = BB_SEG_STATE(d->own);

		if ((st != BB_SEG_OPEN && st != BB_SEG_SEALED) || data + h->seg_size > size)
			continue;
		for (uint64_t pos = d->start; pos < d->head;) {
			const struct bb_record_hdr *rh = (const void *)(base + data + (pos - d->start));
			uint64_t len = rh->len;

			if (len < BB_RECORD_HDR_SIZE || pos - d->start + len > h->seg_size)
				break;
			for (uint64_t b = 0; b < len; b++)
				live[data + (pos - d->start) + b] = b < 6 ? 2 : 1;
			mark_rec(live, data + (pos - d->start), len, nrec, recs, nrecs);
			pos += BB_RECORD_STRIDE(len);
		}
	}
	for (uint32_t i = 0; i < h->ring_count; i++) {
		const struct bb_ring_desc *d = desc_of(base, i);
		uint64_t c = h->ring_size;

		if (d->kind != BB_RING_PRIVATE && d->kind != BB_RING_SHARED)
			continue;
		for (uint64_t pos = d->tail; pos < d->head;) {
			const struct bb_record_hdr *rh =
				(const void *)(base + d->data_offset + (pos & (c - 1)));
			uint64_t len = rh->len;

			if (len < BB_RECORD_HDR_SIZE || d->data_offset + c > size)
				break;
			for (uint64_t b = 0; b < len; b++)
				live[d->data_offset + ((pos + b) & (c - 1))] = b < 6 ? 2 : 1;
			mark_rec(live, d->data_offset + (pos & (c - 1)), len, nrec, recs, nrecs);
			pos += BB_RECORD_STRIDE(len);
		}
	}
}

static void scribble_child(uint64_t seed, int fd_report)
{
	struct bb_options o = {
		.dir = opt.dir, .segment_count = opt.segments, .segment_size = opt.seg_size,
		.flags = BB_OPT_NO_ENV,
	};
	struct scribble_report rep = { 0 };
	struct worker w[4];
	unsigned nw;
	struct rng g;
	char path[4096];
	uint8_t *base, *live;
	uint64_t *recs = NULL;
	size_t nrecs = 0;
	struct stat sb;
	int fd;

	alarm(60);
	rng_init(&g, seed);
	if (bb_init_opts(&o))
		_exit(2);
	nw = (unsigned)rnd_in(&g, 1, 4);
	for (unsigned i = 0; i < nw; i++)
		start_worker(&w[i], i + 1, seed);
	for (unsigned i = 0; i < nw; i++)
		pthread_join(w[i].th, NULL);
	if (rnd(&g) % 2) { /* the main thread keeps an OPEN segment */
		uint8_t buf[128];

		for (uint64_t s = 0; s < 5; s++) {
			tt_make(buf, 64, 99, gettid_(), s, TT_KIND_DATA);
			bb_write_bytes(buf, 64);
		}
	}

	if (bb_path(path, sizeof(path)) < 0 || (fd = open(path, O_RDWR | O_CLOEXEC)) < 0 ||
	    fstat(fd, &sb) || !(live = calloc(1, (size_t)sb.st_size)))
		_exit(3);
	base = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		_exit(3);
	rep.crc = !!(((const struct bb_header *)(void *)base)->flags & BB_HF_CRC32C);
	mark_live(base, (uint64_t)sb.st_size, live, &rep.live_records, &recs, &nrecs);
	{
		const struct bb_header *h = (const void *)base;
		/* header, ring table, thread table, segment table (FORMAT.md §1) */
		uint64_t meta_end = h->seg_table_offset + (uint64_t)h->seg_count * BB_SEG_DESC_SIZE;
		uint64_t data0 = desc_of(base, 0)->data_offset;

		rep.nscribbles = (uint32_t)rnd_in(&g, 1, 4);
		for (uint32_t s = 0; s < rep.nscribbles; s++) {
			unsigned cls = (unsigned)(rnd(&g) % 6);
			uint64_t off, n;

			switch (cls) {
			case 0: /* header fields (not the reserved space, not the crash
				 * area): 0..567, and 3.0's 1128..1223 */
				off = rnd(&g) % (568 + 96);
				off = off < 568 ? off : 1128 + (off - 568);
				n = rnd_in(&g, 1, 8);
				break;
			case 1: /* a ring or segment descriptor, or a thread slot */
				switch (rnd(&g) % 3) {
				case 0:
					off = h->ring_table_offset +
					      (rnd(&g) % h->ring_count) * h->ring_desc_size;
					off += rnd(&g) % 128;
					break;
				case 1:
					off = h->seg_table_offset +
					      (rnd(&g) % h->seg_count) * BB_SEG_DESC_SIZE;
					off += rnd(&g) % 64;
					break;
				default:
					off = h->thread_table_offset +
					      (rnd(&g) % h->thread_count) * BB_THREAD_SLOT_SIZE;
					off += rnd(&g) % 64;
					break;
				}
				n = rnd_in(&g, 1, 8);
				break;
			case 2: /* a live record's envelope */
			case 3: /* a live record's value */
				if (!nrecs) {
					cls = 4;
					off = data0 + rnd(&g) % ((uint64_t)sb.st_size - data0);
					n = 1;
					break;
				}
				off = recs[rnd(&g) % nrecs];
				if (cls == 2) {
					off += rnd(&g) % 16;
					n = rnd_in(&g, 1, 4);
				} else {
					off += 16 + rnd(&g) % 32;
					n = rnd_in(&g, 1, 16);
				}
				break;
			case 4: /* a random range anywhere */
				off = rnd(&g) % (uint64_t)sb.st_size;
				n = rnd_in(&g, 1, 256);
				break;
			default: /* many single bytes in the ring data */
				off = 0;
				n = 0;
				for (uint64_t k = rnd_in(&g, 1, 64); k; k--) {
					uint64_t b = data0 + rnd(&g) % ((uint64_t)sb.st_size - data0);

					base[b] ^= (uint8_t)rnd_in(&g, 1, 255);
					rep.hit_live |= live[b] != 0;
					rep.hit_framing |= live[b] == 2;
				}
				break;
			}
			rep.classes |= 1u << cls;
			for (uint64_t b = off; b < off + n && b < (uint64_t)sb.st_size; b++) {
				/* xor with non-zero: every chosen byte really changes */
				base[b] ^= (uint8_t)rnd_in(&g, 1, 255);
				rep.hit_live |= live[b] != 0;
				rep.hit_framing |= live[b] == 2;
				rep.hit_meta |= b < meta_end;
			}
		}
	}
	if (write(fd_report, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(3);
	/* die as a crashing process would, without the atexit handler */
	if (rnd(&g) % 2)
		_exit(0);
	raise(SIGKILL);
	_exit(4);
}

static struct scribble_report srep;
static char sbox[4096];

/* The reader API on a scribbled box; in its own child (alarm).  Exit:
 * violations (capped); 0 fine. */
static int check_scribbled_api(pid_t pid, bool unused)
{
	struct walk w = { 0 };
	struct bb_stream_stats sum;
	struct bb_reader *r;
	char err[256];
	size_t len;
	int rc;

	(void)pid;
	(void)unused;
	rc = bb_reader_open_path(sbox, BB_OPEN_SNAPSHOT, &r, err, sizeof(err));
	if (rc) {
		/* refusing the box is a report of damage; only these errnos
		 * describe a damaged file (reader.h) */
		if (rc != -EBADMSG && rc != -ENODATA && rc != -EPROTONOSUPPORT &&
		    rc != -EPFNOSUPPORT && rc != -EPERM)
			fail("open of a scribbled box: unexpected %d (%s)", rc, err);
		if (!srep.hit_meta)
			fail("box refused (%s) though only ring data was scribbled", err);
		return violations > 100 ? 100 : (int)violations;
	}
	rc = bb_reader_walk(r, 0, check_cb, &w);
	if (rc)
		fail("walk of a scribbled box: %d", rc);
	w.bad = 0;
	for (size_t k = 0; k < w.n; k++) {
		if (w.v[k].ok)
			continue;
		/* With CRCs (the writer set BB_HF_CRC32C), a record that does
		 * not verify by content must not be delivered: the CRC covers
		 * every byte we check.  A record without BB_RF_CRC in a box
		 * whose header still says every record carries one was not
		 * written that way either.  Before CRCs (srep.crc == 0) a
		 * scribbled payload, ts or tag is undetectable and is printed
		 * as data: counted by nothing, not a failure; even a scribble
		 * that sets the BB_RF_CRC bit is then just an unknown flag. */
		if (srep.crc && ((w.v[k].flags & BB_RF_CRC) ||
		    (((const struct bb_header *)bb_reader_data(r, &len))->flags & BB_HF_CRC32C)))
			w.bad++;
	}
	if (w.bad)
		fail("%ld record(s) delivered from a scribbled CRC box do not verify", w.bad);
	bb_reader_total_stats(r, &sum);
	if (srep.hit_live && !srep.hit_meta && srep.crc && !sum.corrupt)
		fail("a live record was scribbled (CRC box) but the reader reports no corruption");
	if (srep.hit_framing && !srep.hit_meta && !sum.corrupt && !sum.skipped_bytes)
		fail("a live record's seq/len was scribbled but the reader reports no corruption");
	free(w.v);
	bb_reader_close(r);
	return violations > 100 ? 100 : (int)violations;
}

/* Verify every "bytes" value that bb-extract --json printed. */
static long check_json(FILE *f, bool crc)
{
	char *line = NULL;
	size_t cap = 0;
	long bad = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, f)) > 0) {
		char *v = strstr(line, "\"type\":\"bytes\"");
		uint8_t buf[BB_RECORD_MAX];
		struct tt_head h;
		size_t k = 0;

		if (!v || !(v = strstr(line, "\"value\":\"")))
			continue;
		for (v += 9; v[0] && v[1] && v[0] != '"' && k < sizeof(buf); v += 2) {
			unsigned x;

			if (sscanf(v, "%2x", &x) != 1)
				break;
			buf[k++] = (uint8_t)x;
		}
		if (tt_verify(buf, k, &h) && crc)
			bad++;
	}
	free(line);
	return bad;
}

/* Run bb-extract on the scribbled box; return its exit status (or -1). */
static int run_extract(bool json, FILE **out)
{
	FILE *f = tmpfile();
	pid_t c;
	int st;

	if (!f)
		abort();
	fflush(stderr);
	c = fork();
	if (c == 0) {
		int dn = open("/dev/null", O_WRONLY);

		dup2(fileno(f), 1);
		dup2(dn, 2);
		alarm(30); /* survives execve: a hang dies of SIGALRM */
		if (json)
			execl(opt.extract, "bb-extract", "--path", sbox, "--json", (char *)NULL);
		else
			execl(opt.extract, "bb-extract", "--path", sbox, (char *)NULL);
		_exit(127);
	}
	if (c < 0 || waitpid(c, &st, 0) != c)
		abort();
	rewind(f);
	*out = f;
	if (WIFSIGNALED(st)) {
		fail("bb-extract%s died of signal %d (%s)%s", json ? " --json" : "", WTERMSIG(st),
		     strsignal(WTERMSIG(st)), WTERMSIG(st) == SIGALRM ? ": a hang" : "");
		return -1;
	}
	st = WEXITSTATUS(st);
	if (st != 0 && st != 3 && st != 4)
		fail("bb-extract%s exit status %d (0, 3 or 4 only)", json ? " --json" : "", st);
	return st;
}

static long scr_stats[3]; /* exit 0, 3, 4 from bb-extract --json */

static void scribble_run(long i)
{
	uint64_t seed = run_seed(i);
	int rfd, st;
	pid_t pid;

	run_index = i;
	pid = spawn(scribble_child, seed, &rfd);
	memset(&srep, 0, sizeof(srep));
	if (read(rfd, &srep, sizeof(srep)) != (ssize_t)sizeof(srep))
		fail("scribbling child failed before it scribbled");
	close(rfd);
	if (waitpid(pid, &st, 0) != pid)
		abort();
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
		fail("scribbling child ended with status 0x%x", st);
	if (find_box(pid, sbox, sizeof(sbox)) != 1) {
		fail("no (single) box left by the scribbling child");
		clean_dir();
		return;
	}
	in_child("reader API on a scribbled box", check_scribbled_api, pid, false);
	if (opt.extract) {
		FILE *fj = NULL, *ft = NULL;
		int sj = run_extract(true, &fj), stxt = run_extract(false, &ft);
		long bad = fj ? check_json(fj, srep.crc) : 0;

		if (bad)
			fail("bb-extract --json printed %ld record(s) that do not verify "
			     "(CRC box)", bad);
		if (sj >= 0 && stxt >= 0 && sj != stxt)
			fail("bb-extract exit %d with --json, %d without", sj, stxt);
		if (srep.hit_live && !srep.hit_meta && srep.crc && sj == 0)
			fail("a live record was scribbled (CRC box) but bb-extract exits 0");
		if (srep.hit_framing && !srep.hit_meta && sj == 0)
			fail("a live record's seq/len was scribbled but bb-extract exits 0");
		if (sj == 0 || sj == 3 || sj == 4)
			scr_stats[sj == 0 ? 0 : sj == 3 ? 1 : 2]++;
		if (fj)
			fclose(fj);
		if (ft)
			fclose(ft);
	}
	if (opt.verbose)
		fprintf(stderr, "  scribble %ld: crc %u live %u framing %u meta %u classes 0x%x\n", i,
			srep.crc, srep.hit_live, srep.hit_framing, srep.hit_meta, srep.classes);
	clean_dir();
}

/* ---- main --------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bb-torture [--kills N] [--scribbles N] [--seed S] [--threads T]\n"
		"                  [--segments N] [--segment-size BYTES] [--dir DIR]\n"
		"                  [--max-delay US]\n"
		"                  [--live] [--extract PATH-TO-bb-extract] [--from I] [-v]\n"
		"Environment: BB_TORTURE_KILLS, BB_TORTURE_SCRIBBLES, BB_TORTURE_SEED\n"
		"override the counts and the seed.  Exit 0: no violation; 1: violations\n"
		"(each printed with a replay command); 2: usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "kills", required_argument, NULL, 'k' },
		{ "scribbles", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "threads", required_argument, NULL, 't' },
		{ "segments", required_argument, NULL, 'r' },
		{ "segment-size", required_argument, NULL, 'z' },
		{ "dir", required_argument, NULL, 'd' },
		{ "max-delay", required_argument, NULL, 'D' },
		{ "live", no_argument, NULL, 'l' },
		{ "extract", required_argument, NULL, 'x' },
		{ "from", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool seeded = false, own_dir = false;
	char tmpl[] = "/tmp/bb-torture.XXXXXX";
	struct timespec t0;
	const char *e;
	int c;

	snprintf(argv0, sizeof(argv0), "%s", argv[0]);
	while ((c = getopt_long(argc, argv, "k:s:S:t:r:z:d:D:lx:f:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'k': opt.kills = atol(optarg); break;
		case 's': opt.scribbles = atol(optarg); break;
		case 'S': opt.seed = strtoull(optarg, NULL, 0); seeded = true; break;
		case 't': opt.threads = (unsigned)atoi(optarg); break;
		case 'r': opt.segments = (unsigned)atoi(optarg); break;
		case 'z': opt.seg_size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': opt.dir = optarg; break;
		case 'D': opt.max_delay_us = (unsigned)atoi(optarg); break;
		case 'l': opt.live = true; break;
		case 'x': opt.extract = optarg; break;
		case 'f': opt.from = atol(optarg); break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if ((e = getenv("BB_TORTURE_KILLS")) && *e)
		opt.kills = atol(e);
	if ((e = getenv("BB_TORTURE_SCRIBBLES")) && *e)
		opt.scribbles = atol(e);
	if ((e = getenv("BB_TORTURE_SEED")) && *e) {
		opt.seed = strtoull(e, NULL, 0);
		seeded = true;
	}
	/* --segments 0 --segment-size 0: the default box */
	if (opt.threads < 1 || opt.threads > 256 || opt.segments > BB_SEG_MAX_COUNT ||
	    (opt.seg_size && (opt.seg_size < 4096 || (opt.seg_size & (opt.seg_size - 1)))) ||
	    !opt.segments != !opt.seg_size ||
	    opt.seg_size > (1u << 20) || opt.kills < 0 || opt.scribbles < 0 || opt.from < 0) {
		usage(stderr);
		return 2;
	}
	if (!seeded) {
		clock_gettime(CLOCK_REALTIME, &t0);
		opt.seed = tt_mix((uint64_t)t0.tv_nsec ^ ((uint64_t)t0.tv_sec << 30) ^
				  (uint64_t)getpid()) % 1000000000u;
	}
	if (!opt.dir) {
		if (!mkdtemp(tmpl)) {
			perror("bb-torture: mkdtemp");
			return 2;
		}
		opt.dir = tmpl;
		own_dir = true;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("bb-torture: seed %" PRIu64 ", %ld kills, %ld scribbles from run %ld, "
	       "%u threads, %u segments of %u bytes%s%s, dir %s\n", opt.seed, opt.kills,
	       opt.scribbles, opt.from, opt.threads, opt.segments, opt.seg_size,
	       opt.segments ? "" : " (the default box)", opt.live ? ", live reader" : "",
	       opt.dir);

	fig = mmap(NULL, sizeof(*fig), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fig == MAP_FAILED) {
		perror("bb-torture: mmap");
		return 2;
	}
	run_mode = "kills";
	for (long i = opt.from; i < opt.from + opt.kills; i++) {
		kill_run(i);
		if ((i - opt.from + 1) % 1000 == 0)
			printf("bb-torture: %ld kills, %ld violations\n", i - opt.from + 1, violations);
	}
	if (opt.kills)
		printf("bb-torture: kills checked %" PRIu64 " records of %" PRIu64 " threads "
		       "(%" PRIu64 " in the shared ring) in %" PRIu64 " logs; %" PRIu64
		       " segments stolen or started over, %" PRIu64 " holes measured, %" PRIu64 " torn records; "
		       "killed before bb_init() finished: %" PRIu64 " no box, %" PRIu64
		       " unfinished box\n", (uint64_t)fig->records, (uint64_t)fig->serials,
		       (uint64_t)fig->shared_records, (uint64_t)fig->logs,
		       (uint64_t)fig->handovers, (uint64_t)fig->holes,
		       (uint64_t)fig->torn, (uint64_t)fig->no_box, (uint64_t)fig->unfinished);
	if (opt.live)
		printf("bb-torture: live reader: %" PRIu64 " walks verified %" PRIu64 " records "
		       "while written, %" PRIu64 " holes measured exactly; %" PRIu64
		       " bb_dump() calls\n", (uint64_t)fig->live_walks,
		       (uint64_t)fig->live_records, (uint64_t)fig->live_gaps,
		       (uint64_t)fig->live_dumps);
	run_mode = "scribbles";
	for (long i = opt.from; i < opt.from + opt.scribbles; i++)
		scribble_run(i);
	if (opt.scribbles && opt.extract)
		printf("bb-torture: bb-extract on scribbled boxes: %ld clean (exit 0), %ld damaged "
		       "(3), %ld refused (4)\n", scr_stats[0], scr_stats[1], scr_stats[2]);
	printf("bb-torture: %ld kills, %ld scribbles, %ld violations (seed %" PRIu64 ")\n",
	       opt.kills, opt.scribbles, violations, opt.seed);
	if (own_dir) {
		clean_dir();
		rmdir(opt.dir);
	}
	return violations ? 1 : 0;
}
