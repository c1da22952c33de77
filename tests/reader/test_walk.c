/* SPDX-License-Identifier: MIT */
/* Description: walking hand-built boxes: exact read-back, wrap-around,
 * torn writes, corruption and recovery, attribution, merge and follow. */
#include <criterion/criterion.h>
#include <errno.h>

#include <blackbox/reader.h>

#include "../helpers/synth.h"

#define MAXREC 4096

struct got {
	size_t n;
	struct {
		uint32_t ring;
		int32_t tid;
		char name[16];
		uint64_t pos, ts;
		int64_t wall;
		uint8_t tag, flags;
		char text[256];
	} r[MAXREC];
};

static int collect_fn(const struct bb_record *rec, void *arg)
{
	struct got *g = arg;

	cr_assert_lt(g->n, MAXREC);
	g->r[g->n].ring = rec->stream;
	g->r[g->n].tid = rec->tid;
	snprintf(g->r[g->n].name, 16, "%s", rec->thread_name);
	g->r[g->n].pos = rec->pos;
	g->r[g->n].ts = rec->ts;
	g->r[g->n].wall = rec->wall_ns;
	g->r[g->n].tag = rec->tag;
	g->r[g->n].flags = rec->flags;
	bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, g->r[g->n].text,
			sizeof(g->r[g->n].text));
	g->n++;
	return 0;
}

static struct got *walk(struct synth *s, unsigned flags, struct bb_stream_stats *st)
{
	static struct got g;
	struct bb_reader *r;
	char err[256];

	memset(&g, 0, sizeof(g));
	cr_assert_eq(bb_reader_open_mem(s->buf, s->len, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, flags, collect_fn, &g), 0);
	bb_reader_total_stats(r, st);
	bb_reader_close(r);
	return &g;
}

Test(walk, exact_read_back)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	char want[32];

	synth_init(&s, 2, 4096);
	for (int i = 0; i < 10; i++) {
		snprintf(want, sizeof(want), "r%d", i);
		synth_str(&s, 0, 2000 + (uint64_t)i, want);
	}
	synth_str(&s, 1, 1500, "other ring");
	g = walk(&s, 0, &st);
	cr_assert_eq(g->n, 11);
	for (int i = 0; i < 10; i++) {
		snprintf(want, sizeof(want), "r%d", i);
		cr_expect_str_eq(g->r[i].text, want);
		cr_expect_eq(g->r[i].ring, 0);
		cr_expect_eq(g->r[i].tid, 100);
		cr_expect_str_eq(g->r[i].name, "t0");
		cr_expect_eq(g->r[i].pos, (uint64_t)i * 24);
		cr_expect_eq(g->r[i].ts, 2000 + (uint64_t)i);
		cr_expect_eq(g->r[i].wall, 1000000000000 + 1000 + i);
		cr_expect_eq(g->r[i].tag, BB_TAG_STR);
	}
	cr_expect_str_eq(g->r[10].text, "\"other ring\"");
	cr_expect_eq(g->r[10].ring, 1);
	cr_expect_eq(g->r[10].tid, 101);
	cr_expect_eq(st.read, 11);
	cr_expect_eq(st.corrupt + st.torn + st.overwritten + st.skipped_bytes, 0);

	/* merged: by timestamp across rings */
	g = walk(&s, BB_WALK_MERGE, &st);
	cr_assert_eq(g->n, 11);
	cr_expect_eq(g->r[0].ring, 1);
	for (size_t i = 1; i < g->n; i++)
		cr_expect_leq(g->r[i - 1].ts, g->r[i].ts);
	synth_free(&s);
}

Test(walk, wrap_around_straddles_the_end)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	char text[128];
	int straddled = 0, first;

	synth_init(&s, 1, 4096);
	for (int i = 0; i < 500; i++) {
		uint64_t pos;

		snprintf(text, sizeof(text), "record-%04d-%.*s", i, i % 50, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		pos = synth_str(&s, 0, (uint64_t)i, text);
		if ((pos & 4095) + 16 + strlen(text) + 2 > 4096)
			straddled++;
	}
	cr_assert_gt(straddled, 3, "the test must wrap records across the end");
	g = walk(&s, 0, &st);
	cr_assert_gt(g->n, 20);
	cr_expect_eq(st.corrupt, 0);
	first = 500 - (int)g->n;
	for (size_t k = 0; k < g->n; k++) {
		int i = first + (int)k;

		snprintf(text, sizeof(text), "record-%04d-%.*s", i, i % 50, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		cr_expect_str_eq(g->r[k].text, text);
		cr_expect_eq(g->r[k].ts, (uint64_t)i);
	}
	cr_expect_eq(g->r[g->n - 1].ts, 499, "the newest record is last");
	synth_free(&s);
}

Test(walk, torn_at_head_of_dead_owner)
{
	struct synth s;
	struct bb_stream_stats st;
	struct bb_reader *r;
	struct got *g;
	char err[256];

	synth_init(&s, 1, 4096);
	synth_str(&s, 0, 1, "a");
	synth_str(&s, 0, 2, "b");
	synth_torn(&s, 0);
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 2);
	cr_expect_eq(st.torn, 1);
	cr_expect_eq(st.corrupt, 0);

	/* counted once per head, however often the reader walks */
	cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(bb_reader_walk(r, 0, collect_fn, g), 0);
	bb_reader_total_stats(r, &st);
	cr_expect_eq(st.torn, 1);
	cr_expect_eq(st.read, 6);
	bb_reader_close(r);

	/* the owner alive: a write in progress, not torn */
	synth_make_alive(&s);
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 2);
	cr_expect_eq(st.torn, 0);
	synth_free(&s);
}

Test(walk, corrupt_seq_is_counted_and_walk_recovers)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	uint64_t pos[10];
	uint32_t bad = 0xdeadbeef;

	synth_init(&s, 1, 4096);
	for (int i = 0; i < 10; i++)
		pos[i] = synth_str(&s, 0, (uint64_t)i, "0123456789abcdefghij"); /* stride 40 */
	synth_copy(&s, 0, pos[3], &bad, 4);
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 9);
	cr_expect_eq(st.corrupt, 1);
	cr_expect_eq(st.skipped_bytes, 40);
	cr_expect_eq(g->r[3].ts, 4, "the record after the corrupt one is delivered");
	synth_free(&s);
}

Test(walk, seq_of_another_position_is_stale)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	uint64_t pos[6];
	uint32_t stale;

	synth_init(&s, 1, 4096);
	for (int i = 0; i < 6; i++)
		pos[i] = synth_str(&s, 0, (uint64_t)i, "abc");
	/* a seq from an earlier lap at the same offset */
	stale = BB_SEQ_DONE(pos[2] + 4096 * 3);
	synth_copy(&s, 0, pos[2], &stale, 4);
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 5);
	cr_expect_eq(st.corrupt, 1);
	synth_free(&s);
}

Test(walk, lengths_outside_the_ring_or_head)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	uint64_t pos[8];
	uint16_t len;

	synth_init(&s, 1, 4096);
	for (int i = 0; i < 8; i++)
		pos[i] = synth_str(&s, 0, (uint64_t)i, "abc");
	len = 60000; /* above max_record */
	synth_copy(&s, 0, pos[1] + 4, &len, 2);
	len = 8; /* below the envelope */
	synth_copy(&s, 0, pos[4] + 4, &len, 2);
	len = 200; /* runs past head */
	synth_copy(&s, 0, pos[7] + 4, &len, 2);
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 5);
	cr_expect_eq(st.corrupt, 3);
	cr_expect_eq(st.skipped_bytes, 3 * 24);
	synth_free(&s);
}

Test(walk, impossible_head_and_tail)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;

	synth_init(&s, 3, 4096);
	for (int i = 0; i < 3; i++) {
		synth_str(&s, (uint32_t)i, 1, "x");
		synth_str(&s, (uint32_t)i, 2, "y");
	}
	synth_desc(&s, 0)->tail = 1000; /* past head */
	synth_desc(&s, 1)->head = 13;   /* misaligned */
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 2, "ring 2 is still read");
	cr_expect_eq(g->r[0].ring, 2);
	cr_expect_eq(st.corrupt, 2);

	/* more than a ring between tail and head: resync from one ring back */
	synth_desc(&s, 0)->tail = 0;
	synth_desc(&s, 1)->head = 48;
	synth_desc(&s, 2)->tail = 0;
	synth_desc(&s, 2)->head = 48 + 4096 * 2;
	g = walk(&s, 0, &st);
	cr_expect_geq(st.corrupt, 1);
	cr_expect_eq(g->n, 4, "nothing of ring 2 lies at a record boundary");
	synth_free(&s);
}

Test(walk, owner_records_attribute_threads)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;

	synth_init(&s, 2, 4096);
	synth_str(&s, 0, 1, "by-old-1");
	synth_str(&s, 0, 2, "by-old-2");
	synth_owner(&s, 0, 3, 200, "new", 150, "old");
	synth_str(&s, 0, 4, "by-new");
	synth_owner(&s, 0, 5, 300, "newer", 200, "new");
	synth_str(&s, 0, 6, "by-newer");
	synth_str(&s, 1, 7, "no-owner-record");
	g = walk(&s, 0, &st);
	cr_assert_eq(g->n, 7);
	cr_expect_eq(g->r[0].tid, 150);
	cr_expect_str_eq(g->r[0].name, "old");
	cr_expect_eq(g->r[1].tid, 150);
	cr_expect_eq(g->r[2].tag, BB_TAG_OWNER, "owner records are delivered");
	cr_expect_eq(g->r[2].tid, 200);
	cr_expect_str_eq(g->r[2].text, "thread 200 (new) takes the ring from 150 (old)");
	cr_expect_eq(g->r[3].tid, 200);
	cr_expect_str_eq(g->r[3].name, "new");
	cr_expect_eq(g->r[5].tid, 300);
	cr_expect_str_eq(g->r[5].name, "newer");
	cr_expect_eq(g->r[6].tid, 101);
	cr_expect_str_eq(g->r[6].name, "t1");
	synth_free(&s);
}

Test(walk, shared_ring_records_carry_their_tid)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	uint8_t v[16];
	size_t n = cb_text(v, "hi");

	synth_init(&s, 1, 4096);
	synth_desc(&s, 0)->kind = BB_RING_SHARED;
	synth_desc(&s, 0)->tid = 4242;
	synth_put(&s, 0, BB_TAG_STR, BB_RF_TID, 1, v, n);
	synth_desc(&s, 0)->tid = 77;
	synth_put(&s, 0, BB_TAG_STR, BB_RF_TID, 2, v, n);
	g = walk(&s, 0, &st);
	cr_assert_eq(g->n, 2);
	cr_expect_eq(g->r[0].tid, 4242);
	cr_expect_eq(g->r[1].tid, 77);
	cr_expect_str_eq(g->r[0].text, "hi");

	/* a ring of a kind from a later version is skipped */
	synth_desc(&s, 0)->kind = 9;
	g = walk(&s, 0, &st);
	cr_expect_eq(g->n, 0);
	synth_free(&s);
}

Test(walk, follow_delivers_only_new_records)
{
	struct synth s;
	struct bb_reader *r;
	struct bb_stream_stats st;
	static struct got g;
	char err[256];

	synth_init(&s, 1, 4096);
	synth_str(&s, 0, 1, "a");
	synth_str(&s, 0, 2, "b");
	/* the reader owns a copy: rebuild it to show new records */
	cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	cr_expect_eq(g.n, 2);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	cr_expect_eq(g.n, 2, "nothing new");
	/* copy new bytes into the reader's memory, as a live writer would */
	synth_str(&s, 0, 3, "c");
	{
		size_t len;
		uint8_t *d = (uint8_t *)(uintptr_t)bb_reader_data(r, &len);

		memcpy(d, s.buf, len);
	}
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW | BB_WALK_MERGE, collect_fn, &g), 0);
	cr_assert_eq(g.n, 3);
	cr_expect_str_eq(g.r[2].text, "c");
	/* lapped between walks: a gap is counted, the survivors delivered */
	for (int i = 0; i < 400; i++)
		synth_str(&s, 0, 10 + (uint64_t)i, "filler");
	{
		size_t len;
		uint8_t *d = (uint8_t *)(uintptr_t)bb_reader_data(r, &len);

		memcpy(d, s.buf, len);
	}
	g.n = 0;
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, collect_fn, &g), 0);
	bb_reader_total_stats(r, &st);
	cr_expect_eq(st.overwritten, 1);
	cr_expect_gt(g.n, 100);
	cr_expect_eq(g.r[g.n - 1].ts, 409);
	bb_reader_close(r);
	synth_free(&s);
}

static int stop_at_two(const struct bb_record *rec, void *arg)
{
	(void)rec;
	return ++*(int *)arg == 2 ? 42 : 0;
}

Test(walk, callback_stops_the_walk)
{
	struct synth s;
	struct bb_reader *r;
	char err[256];
	int n = 0;

	synth_init(&s, 2, 4096);
	for (int i = 0; i < 5; i++)
		synth_str(&s, (uint32_t)(i & 1), (uint64_t)i, "v");
	cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0);
	cr_expect_eq(bb_reader_walk(r, 0, stop_at_two, &n), 42);
	n = 0;
	cr_expect_eq(bb_reader_walk(r, BB_WALK_MERGE, stop_at_two, &n), 42);
	cr_expect_eq(bb_reader_stream_stats(r, 0)->read + bb_reader_stream_stats(r, 1)->read, 4);
	cr_expect_null(bb_reader_stream_stats(r, 2));
	bb_reader_close(r);
	synth_free(&s);
}

Test(walk, unknown_tags_and_malformed_values_do_not_stop_the_walk)
{
	struct synth s;
	struct bb_stream_stats st;
	struct got *g;
	static const uint8_t junk[] = { 0xff, 0x00, 0x13 };
	uint8_t v[16];

	synth_init(&s, 1, 4096);
	synth_put(&s, 0, 200, 0, 1, v, cb_int(v, 5));
	synth_put(&s, 0, BB_TAG_STR, 0, 2, junk, sizeof(junk));
	synth_str(&s, 0, 3, "after");
	g = walk(&s, 0, &st);
	cr_assert_eq(g->n, 3);
	cr_expect_str_eq(g->r[0].text, "5");
	cr_expect(strstr(g->r[1].text, "malformed"), "%s", g->r[1].text);
	cr_expect_str_eq(g->r[2].text, "after");
	synth_free(&s);
}

/*
 * Random bytes in the rings and random head/tail: never crash or hang, and
 * what is delivered is what the rules allow: only records inside their
 * ring's [tail, head), 8-aligned, whose seq says committed there and whose
 * stride ends by head; ring by ring in position order; every record
 * delivered counted read, the bytes skipped within the live parts.
 */
Test(walk, garbage_rings_terminate)
{
	struct synth s;
	struct bb_stream_stats st;
	unsigned seed = 12345;
	uint64_t delivered = 0, corrupt = 0;

	synth_init(&s, 2, 4096);
	for (int round = 0; round < 200; round++) {
		for (size_t k = 0; k < 2 * 4096; k++)
			synth_data(&s, 0)[k] = (uint8_t)rand_r(&seed);
		for (uint32_t i = 0; i < 2; i++) {
			synth_desc(&s, i)->head = ((uint64_t)rand_r(&seed) << 3) % 100000;
			synth_desc(&s, i)->tail = synth_desc(&s, i)->head - ((uint64_t)rand_r(&seed) % 5000 & ~7u);
		}
		/* make some positions look committed */
		for (uint64_t p = synth_desc(&s, 0)->tail; p < synth_desc(&s, 0)->head; p += 8)
			if (rand_r(&seed) % 4 == 0) {
				uint32_t q = BB_SEQ_DONE(p);

				synth_copy(&s, 0, p, &q, 4);
			}
		struct got *g = walk(&s, round & 1 ? BB_WALK_MERGE : 0, &st);
		uint64_t live = 0, last[2] = { 0, 0 };
		bool any[2] = { false, false };

		for (uint32_t i = 0; i < 2; i++)
			live += synth_desc(&s, i)->head - synth_desc(&s, i)->tail;
		cr_assert_eq(st.read, g->n, "round %d", round);
		cr_assert_leq(st.skipped_bytes, live, "round %d", round);
		for (size_t k = 0; k < g->n; k++) {
			uint32_t ring = g->r[k].ring, seq, len;
			uint64_t pos = g->r[k].pos, head, tail;
			uint8_t env[8];

			cr_assert_lt(ring, 2, "round %d", round);
			head = synth_desc(&s, ring)->head;
			tail = synth_desc(&s, ring)->tail;
			cr_assert_eq(pos % 8, 0, "round %d: pos %llu", round, (unsigned long long)pos);
			cr_assert((int64_t)(pos - tail) >= 0 && (int64_t)(head - pos) > 0,
				  "round %d: pos %llu outside [%llu, %llu)", round,
				  (unsigned long long)pos, (unsigned long long)tail,
				  (unsigned long long)head);
			for (int j = 0; j < 8; j++)
				env[j] = synth_data(&s, ring)[(pos + (uint64_t)j) & 4095];
			memcpy(&seq, env, 4);
			len = (uint32_t)env[4] | (uint32_t)env[5] << 8;
			cr_assert_eq(seq, BB_SEQ_DONE(pos), "round %d", round);
			cr_assert_geq(len, BB_RECORD_HDR_SIZE, "round %d", round);
			cr_assert_leq(pos + BB_RECORD_STRIDE(len), head, "round %d", round);
			if (!(round & 1)) { /* ring by ring, in position order */
				cr_assert(!any[1] || ring == 1, "round %d: ring order", round);
				cr_assert(!any[ring] || pos > last[ring], "round %d: order", round);
			}
			any[ring] = true;
			last[ring] = pos;
		}
		delivered += g->n;
		corrupt += st.corrupt;
	}
	/* the rounds exercised both outcomes */
	cr_expect_gt(delivered, 0);
	cr_expect_gt(corrupt, 0);
	synth_free(&s);
}
