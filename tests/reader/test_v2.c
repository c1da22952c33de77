/* SPDX-License-Identifier: MIT */
/* Description: format 2.0 on the reader side, against hand-built boxes:
 * CRC trailers, the important ring, the TSC clock, the state table, the
 * crash area, the module area, and scribbled areas that must be reported,
 * never trusted, never fatal. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "../helpers/synth.h"

static char err[512];

TestSuite(v2, .init = bbt_setup_dir, .fini = bbt_teardown_dir);

/*
 * Save @s, map the file shared and writable, open a live reader on it and
 * point s->buf at the mapping: synth_* calls then write the live box the
 * reader sees (a writer process, in effect).  Undo with live_unmap().
 */
static struct bb_reader *live_map(struct synth *s)
{
	struct bb_reader *r = NULL;
	char path[4096];
	uint8_t *m;
	int fd;

	snprintf(path, sizeof(path), "%s/box", bbt_dir);
	cr_assert_eq(synth_save(s, path), 0);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	m = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	close(fd);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	free(s->buf);
	s->buf = m;
	return r;
}

static void live_unmap(struct synth *s, struct bb_reader *r)
{
	bb_reader_close(r);
	munmap(s->buf, s->len);
	s->buf = NULL;
}

struct got {
	int n;
	char text[16][64];
	uint64_t ts[16], raw[16];
	int64_t wall[16];
	int32_t tid[16];
	bool copy[16];
	uint32_t ring[16];
	char thread[16][16];
};

static int collect_fn(const struct bb_record *rec, void *arg)
{
	struct got *g = arg;

	if (g->n < 16) {
		bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len,
				g->text[g->n], sizeof(g->text[0]));
		g->ts[g->n] = rec->ts;
		g->raw[g->n] = rec->ts_raw;
		g->wall[g->n] = rec->wall_ns;
		g->tid[g->n] = rec->tid;
		g->copy[g->n] = rec->important_copy;
		g->ring[g->n] = rec->stream;
		snprintf(g->thread[g->n], sizeof(g->thread[0]), "%s", rec->thread_name);
	}
	g->n++;
	return 0;
}

static struct bb_reader *open_synth(struct synth *s)
{
	struct bb_reader *r = NULL;
	int rc = bb_reader_open_mem(s->buf, s->len, 0, &r, err, sizeof(err));

	cr_assert_eq(rc, 0, "open: %s", err);
	return r;
}

/* ---- CRC ------------------------------------------------------------------ */

Test(v2, crc_mismatch_is_counted_and_never_shown)
{
	struct synth s;
	struct bb_reader *r;
	struct got g = { 0 };
	uint64_t pos;
	uint8_t b;

	synth_init(&s, 1, 4096);
	synth_use_crc(&s);
	synth_str(&s, 0, 10, "one");
	pos = synth_str(&s, 0, 20, "two");
	synth_str(&s, 0, 30, "three");
	/* scribble one value byte of "two": framing intact, payload not */
	synth_read(&s, 0, pos + 17, &b, 1);
	b ^= 0x20;
	synth_copy(&s, 0, pos + 17, &b, 1);
	r = open_synth(&s);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, collect_fn, &g), 0);
	cr_assert_eq(g.n, 2, "got %d records", g.n);
	/* the value excludes the trailer: it decodes as the exact string */
	cr_expect_str_eq(g.text[0], "one");
	cr_expect_str_eq(g.text[1], "three");
	cr_expect_eq(bb_reader_stream_stats(r, 0)->crc_bad, 1);
	cr_expect_eq(bb_reader_stream_stats(r, 0)->corrupt, 1);
	bb_reader_close(r);
	synth_free(&s);
}

Test(v2, crc_flag_cleared_in_a_crc_box_is_corrupt)
{
	struct synth s;
	struct bb_reader *r;
	struct got g = { 0 };
	struct bb_record_hdr h;
	uint64_t pos;

	synth_init(&s, 1, 4096);
	synth_use_crc(&s);
	pos = synth_str(&s, 0, 10, "one");
	synth_str(&s, 0, 20, "two");
	synth_read(&s, 0, pos, &h, sizeof(h));
	h.flags &= (uint8_t)~BB_RF_CRC;
	synth_copy(&s, 0, pos, &h, sizeof(h));
	r = open_synth(&s);
	cr_assert_eq(bb_reader_walk(r, 0, collect_fn, &g), 0);
	cr_assert_eq(g.n, 1);
	cr_expect_str_eq(g.text[0], "two");
	cr_expect_eq(bb_reader_stream_stats(r, 0)->crc_bad, 1);
	bb_reader_close(r);
	synth_free(&s);
}

/* A stale record of an earlier lap re-stamped with the current seq word
 * (a scribble that happens to frame correctly) fails the CRC: the seq is
 * part of what the CRC covers. */
Test(v2, crc_covers_the_seq_word)
{
	struct synth s;
	struct bb_reader *r;
	struct got g = { 0 };
	uint8_t rec[64];
	uint64_t pos;

	synth_init(&s, 1, 4096);
	synth_use_crc(&s);
	pos = synth_str(&s, 0, 10, "one");
	synth_read(&s, 0, pos, rec, 32);
	/* move the record 32 bytes on, fix seq, keep the old CRC */
	memcpy(rec, &(uint32_t){ BB_SEQ_DONE(pos + 32) }, 4);
	synth_copy(&s, 0, pos + 32, rec, 32);
	synth_desc(&s, 0)->head = pos + 64;
	r = open_synth(&s);
	cr_assert_eq(bb_reader_walk(r, 0, collect_fn, &g), 0);
	cr_expect_eq(g.n, 1);
	cr_expect_eq(bb_reader_stream_stats(r, 0)->crc_bad, 1);
	bb_reader_close(r);
	synth_free(&s);
}

/* ---- important ring --------------------------------------------------------- */

static uint8_t strval[64];

static size_t sv(const char *str)
{
	return cb_text(strval, str);
}

/* ring 0, 1 private (tids 100, 101), ring 2 the important ring */
static void important_box(struct synth *s)
{
	synth_init(s, 3, 4096);
	synth_use_crc(s);
	synth_desc(s, 2)->kind = BB_RING_IMPORTANT;
	synth_desc(s, 2)->tid = 0;
}

static void important(struct synth *s, uint32_t ring, uint64_t ts, const char *text,
		      bool original, bool copy)
{
	size_t n = sv(text);

	if (original)
		synth_put(s, ring, BB_TAG_STR, BB_RF_IMPORTANT, ts, strval, n);
	if (copy)
		synth_put_tid(s, 2, BB_TAG_STR, BB_RF_IMPORTANT | BB_RF_TID, ts, strval, n,
			      (int32_t)(100 + ring));
}

Test(v2, important_copy_shown_once_merged_and_per_ring)
{
	struct synth s;

	important_box(&s);
	synth_str(&s, 0, 5, "plain");
	important(&s, 0, 10, "kept", true, true);
	/* the original of this one was overwritten: only the copy is left */
	important(&s, 1, 20, "copy", false, true);
	/* same ts, other thread: not a twin */
	important(&s, 1, 10, "other", true, false);
	for (int merge = 0; merge < 2; merge++) {
		struct bb_reader *r = open_synth(&s);
		struct got g = { 0 };
		int copies = 0, both = 0;

		cr_assert_eq(bb_reader_walk(r, merge ? BB_WALK_MERGE : 0, collect_fn, &g), 0);
		cr_expect_eq(g.n, 4, "merge %d: %d records", merge, g.n);
		for (int k = 0; k < g.n && k < 16; k++) {
			if (!strcmp(g.text[k], "kept"))
				both++;
			if (g.copy[k]) {
				copies++;
				cr_expect_str_eq(g.text[k], "copy");
				cr_expect_eq(g.tid[k], 101);
				cr_expect_eq(g.ring[k], 2);
				/* named as tid 101's private ring (ring 1) names it */
				cr_expect_str_eq(g.thread[k], "t1");
			}
		}
		cr_expect_eq(both, 1);
		cr_expect_eq(copies, 1);
		cr_expect_eq(bb_reader_stream_stats(r, 2)->dup_suppressed, 1);
		bb_reader_close(r);
	}
	synth_free(&s);
}

Test(v2, important_copy_shown_once_in_follow_mode)
{
	struct synth s;
	struct bb_reader *r;
	struct got g = { 0 };

	important_box(&s);
	important(&s, 0, 10, "a", true, true);
	/* follow needs a live view: a shared mapping the test keeps writing */
	r = live_map(&s);

	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	cr_expect_eq(g.n, 1);
	important(&s, 1, 20, "b", true, true);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	cr_expect_eq(g.n, 2);
	/* the copy is seen first (the walk reached the important ring
	 * before the original's ring was written) ... */
	important(&s, 0, 30, "c", false, true);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	cr_expect_eq(g.n, 3);
	cr_expect(g.copy[2]);
	/* ... then the original appears: not shown a second time */
	important(&s, 0, 30, "c", true, false);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	cr_expect_eq(g.n, 3, "%d records", g.n);
	live_unmap(&s, r);
}

/* ---- TSC ----------------------------------------------------------------------- */

Test(v2, tsc_timestamps_convert_to_monotonic_and_wall)
{
	struct synth s;
	struct bb_reader *r;
	struct got g = { 0 };
	struct bb_header *h;
	const struct bb_box_info *in;
	uint64_t a = 1000000000000ull;

	synth_init(&s, 1, 4096);
	h = synth_hdr(&s);
	h->clock = BB_CLOCK_TSC;
	h->clock_requested = BB_CLOCK_TSC;
	h->tsc_hz = 3000000000ull;
	h->tsc_anchor = a;
	h->tsc_mult = 1431655765u; /* 2^32 / 3: 3 ticks per ns */
	h->tsc_shift = 32;
	h->anchor_clock_ns = 5000000000;
	h->anchor_realtime_ns = 1700000000000000000;
	synth_str(&s, 0, a - 3000, "before");
	synth_str(&s, 0, a + 3000000000ull, "after");
	r = open_synth(&s);
	in = bb_reader_info(r);
	cr_expect_eq(in->clock, BB_CLOCK_TSC);
	cr_expect_eq(in->clock_requested, BB_CLOCK_TSC);
	cr_expect_eq(in->tsc_hz, 3000000000ull);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, collect_fn, &g), 0);
	cr_assert_eq(g.n, 2);
	/* a stamp from just before the calibration ended is slightly negative */
	cr_expect(g.ts[0] >= 5000000000ull - 1001 && g.ts[0] <= 5000000000ull - 999,
		  "before: %" PRIu64, g.ts[0]);
	cr_expect(g.ts[1] >= 5999999999ull && g.ts[1] <= 6000000000ull, "after: %" PRIu64,
		  g.ts[1]);
	cr_expect_eq(g.raw[1], a + 3000000000ull);
	cr_expect(g.wall[1] >= 1700000000999999999 && g.wall[1] <= 1700000001000000000,
		  "wall %" PRId64, g.wall[1]);
	cr_expect_eq(bb_reader_ts_ns(in, a), 5000000000ull);
	bb_reader_close(r);
	synth_free(&s);
}

Test(v2, tsc_fallback_is_visible_in_info)
{
	struct synth s;
	struct bb_reader *r;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->clock_requested = BB_CLOCK_TSC; /* asked, fell back */
	r = open_synth(&s);
	cr_expect_eq(bb_reader_info(r)->clock, BB_CLOCK_MONOTONIC);
	cr_expect_eq(bb_reader_info(r)->clock_requested, BB_CLOCK_TSC);
	cr_expect_eq(bb_reader_info(r)->tsc_hz, 0);
	cr_expect_eq(bb_reader_ts_ns(bb_reader_info(r), 1234), 1234);
	bb_reader_close(r);
	synth_free(&s);
}

/* ---- state table ------------------------------------------------------------- */

struct states {
	int n;
	int status[8];
	char key[8][32];
	char text[8][64];
	char problem[8][160];
	uint32_t slot[8];
};

static int state_fn(const struct bb_state_entry *e, void *arg)
{
	struct states *st = arg;
	int k = st->n++;

	if (k >= 8)
		return 0;
	st->status[k] = e->status;
	st->slot[k] = e->slot;
	snprintf(st->problem[k], sizeof(st->problem[k]), "%s", e->problem);
	if (e->status == BB_SLOT_OK) {
		snprintf(st->key[k], sizeof(st->key[k]), "%.*s", (int)e->key_len, e->key);
		bb_format_value(BB_TAG_KV, 0, e->value, e->value_len, st->text[k],
				sizeof(st->text[k]));
	}
	return 0;
}

Test(v2, state_slots_ok_busy_crc_bad_empty)
{
	struct synth s;
	struct bb_reader *r;
	struct states st = { 0 };
	struct bb_state_stats tot;
	uint8_t v[16];
	uint8_t *p;

	synth_init(&s, 1, 4096);
	synth_use_crc(&s);
	synth_add_state(&s, 5, 128);
	synth_state(&s, 0, 4, 77, "requests", v, cb_int(v, 42));
	synth_state(&s, 1, 3, 77, "busy", v, cb_int(v, 1)); /* odd: being written */
	synth_state(&s, 2, 2, 77, "scribbled", v, cb_int(v, 1));
	synth_slot(&s, 2)[20] ^= 0xff;
	/* slot 3 empty (len 0) */
	synth_state(&s, 4, 2, 77, "mode", v, cb_text(v, "degraded"));
	/* a slot whose len runs past the slot */
	p = synth_slot(&s, 4);
	r = open_synth(&s);
	cr_assert_eq(bb_reader_state(r, state_fn, &st, &tot), 0);
	cr_assert_eq(st.n, 4);
	cr_expect_eq(st.status[0], BB_SLOT_OK);
	cr_expect_str_eq(st.key[0], "requests");
	cr_expect_str_eq(st.text[0], "requests=42");
	cr_expect_eq(st.status[1], BB_SLOT_BUSY);
	cr_expect(strstr(st.problem[1], "busy"), "%s", st.problem[1]);
	cr_expect_eq(st.status[2], BB_SLOT_CORRUPT);
	cr_expect(strstr(st.problem[2], "CRC32C"), "%s", st.problem[2]);
	cr_expect_eq(st.slot[3], 4);
	cr_expect_str_eq(st.text[3], "mode=degraded");
	cr_expect_eq(tot.slots, 5);
	cr_expect_eq(tot.used, 2);
	cr_expect_eq(tot.busy, 1);
	cr_expect_eq(tot.corrupt, 1);
	bb_reader_close(r);

	/* len past the slot, and a wrong tag */
	((struct bb_record_hdr *)(void *)p)->len = 200;
	((struct bb_record_hdr *)(void *)synth_slot(&s, 0))->tag = BB_TAG_KV;
	memset(&st, 0, sizeof(st));
	r = open_synth(&s);
	cr_assert_eq(bb_reader_state(r, state_fn, &st, &tot), 0);
	cr_expect_eq(tot.used, 0);
	cr_expect_eq(tot.corrupt, 3);
	cr_expect(strstr(st.problem[0], "tag"), "%s", st.problem[0]);
	cr_expect(strstr(st.problem[3], "length"), "%s", st.problem[3]);
	bb_reader_close(r);
	synth_free(&s);
}

Test(v2, state_table_outside_the_file_disables_it_only)
{
	struct synth s;
	struct bb_reader *r;
	struct states st = { 0 };
	struct got g = { 0 };

	synth_init(&s, 1, 4096);
	synth_str(&s, 0, 1, "still read");
	synth_hdr(&s)->state_slot_count = 1000;
	synth_hdr(&s)->state_slot_size = 128;
	synth_hdr(&s)->state_table_offset = 8192;
	r = open_synth(&s);
	cr_expect(strstr(bb_reader_info(r)->state_problem, "lies outside the 12288-byte box"),
		  "%s", bb_reader_info(r)->state_problem);
	cr_expect_eq(bb_reader_state(r, state_fn, &st, NULL), -ENODATA);
	cr_assert_eq(bb_reader_walk(r, 0, collect_fn, &g), 0);
	cr_expect_eq(g.n, 1);
	bb_reader_close(r);
	synth_hdr(&s)->state_table_offset = UINT64_MAX - 64; /* overflow attempt */
	r = open_synth(&s);
	cr_expect_neq(bb_reader_info(r)->state_problem[0], '\0');
	bb_reader_close(r);
	synth_hdr(&s)->state_slot_count = 1;
	synth_hdr(&s)->state_slot_size = 12; /* not a multiple of 8, < 64 */
	r = open_synth(&s);
	cr_expect(strstr(bb_reader_info(r)->state_problem, "slot size 12"));
	bb_reader_close(r);
	synth_free(&s);
}

/* A live writer hammering a slot through its seqlock: every read ends
 * (bounded retries), and what is delivered OK is always a consistent value
 * (its CRC matched, and it is one the writer wrote). */
struct hammer {
	uint8_t *slot;
	atomic_bool stop;
	uint64_t writes;
};

static void *hammer_fn(void *arg)
{
	struct hammer *h = arg;
	uint32_t *seqp = (uint32_t *)(void *)h->slot;
	uint8_t rec[128];

	while (!atomic_load_explicit(&h->stop, memory_order_relaxed)) {
		uint32_t seq = __atomic_load_n(seqp, __ATOMIC_RELAXED);
		size_t n = BB_RECORD_HDR_SIZE;
		struct bb_record_hdr hd = { .tag = BB_TAG_STATE, .flags = BB_RF_CRC, .ts = 1 };
		uint64_t v = __atomic_add_fetch(&h->writes, 1, __ATOMIC_RELAXED);

		rec[n++] = 0x82;
		n += cb_text(rec + n, "ctr");
		n += cb_head(rec + n, 0, v);
		hd.len = (uint16_t)(n + 4);
		hd.seq = seq + 2;
		memcpy(rec, &hd, sizeof(hd));
		synth_seal(rec, hd.len, seq + 2);
		__atomic_store_n(seqp, seq + 1, __ATOMIC_RELAXED); /* odd */
		/* orders the odd seq before the bytes (the reader's acquire
		 * fence pairs with this) */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		for (size_t k = 4; k < hd.len; k++)
			__atomic_store_n(&h->slot[k], rec[k], __ATOMIC_RELAXED);
		__atomic_store_n(seqp, seq + 2, __ATOMIC_RELEASE); /* even */
	}
	return NULL;
}

Test(v2, state_reader_never_hangs_on_a_live_writer)
{
	struct synth s;
	struct bb_reader *r;
	struct hammer h = { 0 };
	pthread_t t;
	int ok = 0, busy = 0, bad = 0;

	synth_init(&s, 1, 4096);
	synth_use_crc(&s);
	synth_add_state(&s, 1, 128);
	r = live_map(&s);
	h.slot = synth_slot(&s, 0);
	pthread_create(&t, NULL, hammer_fn, &h);
	while (__atomic_load_n(&h.writes, __ATOMIC_RELAXED) < 2)
		sched_yield(); /* let the writer start: the point is to race it */
	for (int k = 0; k < 20000; k++) {
		struct states st = { 0 };
		struct bb_state_stats tot;

		bb_reader_state(r, state_fn, &st, &tot);
		ok += tot.used;
		busy += tot.busy;
		bad += tot.corrupt;
		if (tot.used && strncmp(st.text[0], "ctr=", 4))
			bad++;
	}
	atomic_store(&h.stop, true);
	pthread_join(t, NULL);
	cr_expect_eq(bad, 0, "%d inconsistent copies delivered", bad);
	cr_expect_gt(ok + busy, 0);
	cr_log_info("ok %d busy %d writes %" PRIu64, ok, busy, h.writes);
	live_unmap(&s, r);
}

/* ---- crash area ---------------------------------------------------------------- */

Test(v2, crash_area_complete_torn_corrupt)
{
	static const uint64_t fr[3] = { 0x401000, 0x7f0000001234, 0x401999 };
	struct synth s;
	struct bb_reader *r;
	struct bb_crash c;
	uint8_t *area;

	synth_init(&s, 1, 4096);
	area = synth_hdr(&s)->crash;
	r = open_synth(&s);
	cr_assert_eq(bb_reader_crash(r, &c), 0);
	cr_expect_eq(c.status, BB_CRASH_NONE);
	bb_reader_close(r);

	synth_crash(&s, 1234, 11, 1, 0xdead, 4242, "worker", fr, 3);
	r = open_synth(&s);
	cr_assert_eq(bb_reader_crash(r, &c), 0);
	cr_expect_eq(c.status, BB_CRASH_COMPLETE, "%s", c.problem);
	cr_expect(c.crc_ok);
	cr_expect_eq(c.signal, 11);
	cr_expect_eq(c.code, 1);
	cr_expect_eq(c.addr, 0xdead);
	cr_expect_eq(c.tid, 4242);
	cr_expect_str_eq(c.thread, "worker");
	cr_expect_eq(c.nframes, 3);
	cr_expect_eq(c.frames[1], 0x7f0000001234);
	cr_expect_eq(c.ts, 1234);
	cr_expect_str_eq(bb_crash_status_name(c.status), "complete");
	bb_reader_close(r);

	/* CRC mismatch */
	area[30] ^= 1;
	r = open_synth(&s);
	bb_reader_crash(r, &c);
	cr_expect_eq(c.status, BB_CRASH_CORRUPT);
	cr_expect_not(c.crc_ok);
	cr_expect(strstr(c.problem, "CRC32C"), "%s", c.problem);
	bb_reader_close(r);
	area[30] ^= 1;

	/* torn: the handler never finished */
	memcpy(area, &(uint32_t){ BB_CRASH_SEQ_BUSY }, 4);
	r = open_synth(&s);
	bb_reader_crash(r, &c);
	cr_expect_eq(c.status, BB_CRASH_TORN);
	cr_expect(strstr(c.problem, "torn"));
	bb_reader_close(r);

	/* garbage seq word */
	memcpy(area, &(uint32_t){ 77 }, 4);
	r = open_synth(&s);
	bb_reader_crash(r, &c);
	cr_expect_eq(c.status, BB_CRASH_CORRUPT);
	bb_reader_close(r);

	/* garbage CBOR with a valid CRC: an array where a map must be */
	memcpy(area, &(uint32_t){ BB_CRASH_SEQ_DONE }, 4);
	area[16] = 0x9f; /* indefinite array: refused */
	synth_seal(area, ((struct bb_record_hdr *)(void *)area)->len, BB_CRASH_SEQ_DONE);
	r = open_synth(&s);
	bb_reader_crash(r, &c);
	cr_expect_eq(c.status, BB_CRASH_CORRUPT);
	cr_expect(c.crc_ok);
	cr_expect(strstr(c.problem, "not a CBOR map"), "%s", c.problem);
	cr_expect_eq(c.nframes, 0);
	bb_reader_close(r);

	/* a length that runs past the area */
	((struct bb_record_hdr *)(void *)area)->len = 4000;
	r = open_synth(&s);
	bb_reader_crash(r, &c);
	cr_expect_eq(c.status, BB_CRASH_CORRUPT);
	cr_expect(strstr(c.problem, "length"), "%s", c.problem);
	bb_reader_close(r);
	synth_free(&s);
}

/* ---- modules --------------------------------------------------------------------- */

static const struct synth_mod two_mods[2] = {
	{ "/usr/bin/prog", 0x555500000000, 0x555500001000, 0x555500009000, "\x12\x34", 0 },
	{ "/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000000000, 0x7f0000028000,
	  0x7f00001bd000, "\xab\xcd\xef", 0 },
};

Test(v2, modules_decode_and_find)
{
	struct synth s;
	struct bb_reader *r;
	const struct bb_module *m, *f;
	size_t n;
	unsigned fl;

	synth_init(&s, 1, 4096);
	r = open_synth(&s);
	cr_expect_eq(bb_reader_modules(r, &m, &n, &fl, err, sizeof(err)), -ENODATA);
	bb_reader_close(r);
	synth_modules(&s, 4096, 2, two_mods, 2);
	r = open_synth(&s);
	cr_assert_eq(bb_reader_modules(r, &m, &n, &fl, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 2);
	cr_expect_eq(fl, 0);
	cr_expect_str_eq(m[0].path, "/usr/bin/prog");
	cr_expect_eq(m[1].bias, 0x7f0000000000);
	cr_expect_eq(m[1].build_id_len, 3);
	cr_expect_eq(m[1].build_id[2], 0xef);
	f = bb_module_find(m, n, 0x7f0000030010);
	cr_assert_not_null(f);
	cr_expect_str_eq(f->path, "/lib/x86_64-linux-gnu/libc.so.6");
	cr_expect_null(bb_module_find(m, n, 0x1000));
	bb_reader_close(r);
	synth_free(&s);
}

Test(v2, modules_garbage_busy_and_out_of_bounds)
{
	struct synth s;
	struct bb_reader *r;
	const struct bb_module *m;
	struct bb_modules_hdr *mh;
	size_t n;

	synth_init(&s, 1, 4096);
	synth_str(&s, 0, 1, "x");
	synth_modules(&s, 4096, 2, two_mods, 2);
	mh = (struct bb_modules_hdr *)(void *)(s.buf + synth_hdr(&s)->modules_offset);

	mh->count = 3;
	r = open_synth(&s);
	cr_expect_eq(bb_reader_modules(r, &m, &n, NULL, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "header says 3 modules, the array has 2"), "%s", err);
	cr_expect_eq(n, 0);
	bb_reader_close(r);
	mh->count = 2;

	mh->len = 5000;
	r = open_synth(&s);
	cr_expect_eq(bb_reader_modules(r, &m, &n, NULL, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "do not fit"), "%s", err);
	bb_reader_close(r);

	mh->len = 10; /* cut in the middle of the first entry */
	r = open_synth(&s);
	cr_expect_eq(bb_reader_modules(r, &m, &n, NULL, err, sizeof(err)), -EBADMSG);
	bb_reader_close(r);

	memset((uint8_t *)(mh + 1), 0xff, 64); /* break codes everywhere */
	mh->len = 64;
	r = open_synth(&s);
	cr_expect_eq(bb_reader_modules(r, &m, &n, NULL, err, sizeof(err)), -EBADMSG);
	bb_reader_close(r);

	mh->seq = 3; /* a refresh that never ended */
	r = open_synth(&s);
	cr_expect_eq(bb_reader_modules(r, &m, &n, NULL, err, sizeof(err)), -EBUSY);
	bb_reader_close(r);

	synth_hdr(&s)->modules_offset = s.len - 100;
	r = open_synth(&s);
	cr_expect(strstr(bb_reader_info(r)->modules_problem, "lies outside"), "%s",
		  bb_reader_info(r)->modules_problem);
	cr_expect_eq(bb_reader_modules(r, &m, &n, NULL, err, sizeof(err)), -ENODATA);
	cr_expect(strstr(err, "lies outside"), "%s", err);
	bb_reader_close(r);
	synth_free(&s);
}
