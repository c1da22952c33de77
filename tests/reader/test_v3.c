/* SPDX-License-Identifier: MIT */
/* Description: format 3.0 on the reader side, against hand-built boxes
 * (tests/helpers/synth.h): each thread's log, made of segments anywhere in
 * the segment table, read as one ring after the ring table's, in log
 * order, with its thread; holes between segments measured exactly in
 * gap_before; torn records at a dead log's head; and damage (descriptors
 * that make no sense, overlapping segments, a scribbled record, impossible
 * geometry) reported, never trusted, never fatal. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "../helpers/synth.h"

static char err[512];

TestSuite(v3, .init = bbt_setup_dir, .fini = bbt_teardown_dir);

#define MAXGOT 64

struct got {
	int n;
	char text[MAXGOT][64];
	uint32_t ring[MAXGOT];
	uint64_t pos[MAXGOT], gap[MAXGOT];
	int32_t tid[MAXGOT];
	char thread[MAXGOT][16];
};

static int got_cb(const struct bb_record *rec, void *arg)
{
	struct got *g = arg;
	char buf[64];

	cr_assert_lt(g->n, MAXGOT);
	bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, buf, sizeof(buf));
	snprintf(g->text[g->n], sizeof(g->text[0]), "%s", buf);
	g->ring[g->n] = rec->stream;
	g->pos[g->n] = rec->pos;
	g->gap[g->n] = rec->gap_before;
	g->tid[g->n] = rec->tid;
	snprintf(g->thread[g->n], sizeof(g->thread[0]), "%s", rec->thread_name);
	g->n++;
	return 0;
}

/* Open the box in memory; walk it (@flags) into @g. */
static struct bb_reader *walk(struct synth3 *x, unsigned flags, struct got *g)
{
	struct bb_reader *r;

	memset(g, 0, sizeof(*g));
	cr_assert_eq(bb_reader_open_mem(x->s.buf, x->s.len, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, flags, got_cb, g), 0);
	return r;
}

/* A log of three segments, out of table order, reads back in log order as
 * one ring (after the shared and the important ring), with its thread. */
Test(v3, a_log_is_one_ring_in_log_order)
{
	struct synth3 x;
	struct bb_reader *r;
	const struct bb_stream_stats *st;
	struct got g;
	uint64_t p;

	synth3_init(&x, 4, 4096, 8, 16384);
	synth_use_crc(&x.s);
	/* log 7 (thread 4242 "worker", slot 3): segments 2, 0, 3 in that
	 * order, each continuing where the one before ended */
	synth3_seg(&x, 2, BB_SEG_SEALED, 1, 7, 0, 4242, "worker", 3);
	synth3_str(&x, 2, 10, "a");
	p = synth3_str(&x, 2, 11, "b");
	p = synth3_desc(&x, 2)->head;
	synth3_desc(&x, 2)->next = 0;
	synth3_seg(&x, 0, BB_SEG_SEALED, 1, 7, p, 4242, "worker", 3);
	synth3_str(&x, 0, 12, "c");
	p = synth3_desc(&x, 0)->head;
	synth3_desc(&x, 0)->next = 3;
	synth3_seg(&x, 3, BB_SEG_OPEN, 1, 7, p, 4242, "worker", 3);
	synth3_str(&x, 3, 13, "d");
	synth3_thread(&x, 3, BB_RING_OWNED, 7, 4242, "worker", 2, 0, 3, 2);
	r = walk(&x, 0, &g);
	cr_assert_eq(g.n, 4);
	for (int i = 0; i < 4; i++) {
		char want[8];

		snprintf(want, sizeof(want), "%c", 'a' + i);
		cr_assert_str_eq(g.text[i], want, "record %d: %s", i, g.text[i]);
		cr_assert_eq(g.ring[i], 2);
		cr_assert_eq(g.tid[i], 4242);
		cr_assert_str_eq(g.thread[i], "worker");
		cr_assert_eq(g.gap[i], 0);
		if (i)
			cr_assert_gt(g.pos[i], g.pos[i - 1]);
	}
	cr_assert_eq(bb_reader_info(r)->stream_count, 3);
	cr_assert_eq(bb_reader_info(r)->version_major, 3);
	cr_assert_eq(bb_reader_info(r)->seg_count, 4);
	st = bb_reader_stream_stats(r, 2);
	cr_assert_not_null(st);
	cr_assert_eq(st->kind, BB_STREAM_THREAD);
	cr_assert_eq(st->claim, BB_STREAM_OWNED);
	cr_assert_eq(st->log, 7);
	cr_assert_eq(st->segments, 3);
	cr_assert_eq(st->tid, 4242);
	cr_assert_str_eq(st->thread_name, "worker");
	cr_assert_eq(st->read, 4);
	cr_assert_eq(bb_reader_stream_stats(r, 0)->kind, BB_STREAM_SHARED);
	cr_assert_eq(bb_reader_stream_stats(r, 1)->kind, BB_STREAM_IMPORTANT);
	cr_assert_null(bb_reader_stream_stats(r, 3));
	bb_reader_close(r);
	synth_free(&x.s);
}

/* Segments taken away from a log leave a hole: the next record says how
 * many bytes of the log are missing, exactly.  The log's claim is
 * RETIRED when its slot names another log (the thread exited, its slot
 * was reused). */
Test(v3, a_hole_between_segments_is_measured_exactly)
{
	struct synth3 x;
	struct bb_reader *r;
	struct got g;

	synth3_init(&x, 3, 4096, 4, 16384);
	synth3_seg(&x, 1, BB_SEG_SEALED, 2, 9, 800, 77, "t", 0);
	synth3_str(&x, 1, 1, "old");
	synth3_seg(&x, 0, BB_SEG_SEALED, 5, 9, 5000, 77, "t", 0);
	synth3_str(&x, 0, 2, "new");
	synth3_thread(&x, 0, BB_RING_OWNED, 10, 88, "other", BB_SEG_NONE, 0, BB_SEG_NONE, 0);
	r = walk(&x, 0, &g);
	cr_assert_eq(g.n, 2);
	cr_assert_str_eq(g.text[0], "old");
	cr_assert_eq(g.pos[0], 800);
	cr_assert_eq(g.gap[0], 0, "the first record of a walk has no hole before it");
	cr_assert_str_eq(g.text[1], "new");
	cr_assert_eq(g.pos[1], 5000);
	/* "old" is 16 + 4 = 20 bytes, stride 24: the log lost 5000 - 824 */
	cr_assert_eq(g.gap[1], 5000 - 824);
	cr_assert_eq(bb_reader_stream_stats(r, 2)->claim, BB_STREAM_RETIRED);
	bb_reader_close(r);
	synth_free(&x.s);
}

/* Two logs are two rings, by log id; a shared-ring record of a thread is
 * named by the log its tid writes; free and half-handed segments hold
 * nothing and are passed over without a word. */
Test(v3, logs_by_id_shared_ring_names_and_idle_segments)
{
	struct synth3 x;
	struct bb_reader *r;
	struct bb_stream_stats sum;
	struct got g;
	uint8_t v[32];
	size_t n;

	synth3_init(&x, 4, 4096, 4, 16384);
	synth3_seg(&x, 0, BB_SEG_OPEN, 1, 30, 0, 300, "thirty", 0);
	synth3_str(&x, 0, 5, "from 30");
	synth3_seg(&x, 1, BB_SEG_OPEN, 1, 20, 0, 200, "twenty", 1);
	synth3_str(&x, 1, 6, "from 20");
	synth3_seg(&x, 2, BB_SEG_CLAIMING, 3, 20, 9000, 200, "twenty", 1);
	synth3_str(&x, 2, 7, "half handed over");
	/* segment 3 stays FREE */
	n = cb_text(v, "nested");
	synth_put_tid(&x.s, 0, BB_TAG_STR, BB_RF_TID, 8, v, n, 300);
	r = walk(&x, BB_WALK_MERGE, &g);
	cr_assert_eq(g.n, 3);
	cr_assert_str_eq(g.text[0], "\"from 30\"");
	cr_assert_eq(g.ring[0], 3, "log 30 sorts after log 20");
	cr_assert_str_eq(g.text[1], "\"from 20\"");
	cr_assert_eq(g.ring[1], 2);
	cr_assert_str_eq(g.text[2], "nested");
	cr_assert_eq(g.ring[2], 0);
	cr_assert_eq(g.tid[2], 300);
	cr_assert_str_eq(g.thread[2], "thirty");
	bb_reader_total_stats(r, &sum);
	cr_assert_eq(sum.corrupt + sum.torn + sum.overwritten, 0);
	bb_reader_close(r);
	synth_free(&x.s);
}

/* A dead owner's record busy at the head of its log's current segment is
 * torn: counted once, never shown. */
Test(v3, torn_record_at_a_dead_logs_head)
{
	struct synth3 x;
	struct bb_reader *r;
	struct bb_stream_stats sum;
	struct got g;
	uint32_t busy;

	synth3_init(&x, 2, 4096, 2, 16384);
	synth3_seg(&x, 0, BB_SEG_OPEN, 1, 1, 64, 11, "a", 0);
	synth3_str(&x, 0, 1, "kept");
	busy = BB_SEQ_BUSY(synth3_desc(&x, 0)->head);
	memcpy(synth3_data(&x, 0) + (synth3_desc(&x, 0)->head - 64), &busy, 4);
	r = walk(&x, 0, &g);
	cr_assert_eq(g.n, 1);
	bb_reader_total_stats(r, &sum);
	cr_assert_eq(sum.torn, 1);
	cr_assert_eq(sum.corrupt, 0);
	cr_assert_eq(bb_reader_walk(r, 0, got_cb, &g), 0);
	bb_reader_total_stats(r, &sum);
	cr_assert_eq(sum.torn, 1, "counted once per head");
	bb_reader_close(r);
	synth_free(&x.s);
}

/* Damage: a descriptor whose head is past its segment, or misaligned, is
 * left out and counted corrupt on its log with a message; two segments
 * claiming the same positions: the later one is corrupt; a scribbled
 * record inside a segment: counted, the walk resyncs at the next one; the
 * other segments and logs are read. */
Test(v3, damaged_descriptors_and_records_cost_only_themselves)
{
	struct synth3 x;
	struct bb_reader *r;
	const struct bb_stream_stats *st;
	struct got g;
	uint64_t p;

	synth3_init(&x, 5, 4096, 4, 16384);
	synth_use_crc(&x.s);
	synth3_seg(&x, 0, BB_SEG_SEALED, 1, 1, 0, 10, "a", 0);
	synth3_str(&x, 0, 1, "one");
	p = synth3_str(&x, 0, 2, "two");
	synth3_str(&x, 0, 3, "three");
	/* "two" scribbled: its seq word */
	memset(synth3_data(&x, 0) + p, 0x5a, 4);
	/* a second segment of log 1 over the same positions */
	synth3_seg(&x, 1, BB_SEG_SEALED, 1, 1, 8, 10, "a", 0);
	synth3_str(&x, 1, 4, "overlap");
	/* a third one past it, fine */
	synth3_seg(&x, 2, BB_SEG_OPEN, 1, 1, 1000, 10, "a", 0);
	synth3_str(&x, 2, 5, "four");
	/* log 2: a head past its segment, and a misaligned start */
	synth3_seg(&x, 3, BB_SEG_SEALED, 1, 2, 0, 20, "b", 1);
	synth3_desc(&x, 3)->head = 4096 + 8;
	synth3_seg(&x, 4, BB_SEG_OPEN, 1, 2, 4, 20, "b", 1);
	r = walk(&x, 0, &g);
	cr_assert_eq(g.n, 3, "%d records", g.n);
	cr_assert_str_eq(g.text[0], "one");
	cr_assert_str_eq(g.text[1], "three");
	cr_assert_gt(g.gap[1], 0, "the scribbled record is a hole");
	cr_assert_str_eq(g.text[2], "four");
	st = bb_reader_stream_stats(r, 2);
	cr_assert_eq(st->log, 1);
	cr_assert_eq(st->corrupt, 2, "the scribbled record and the overlapping segment");
	cr_assert(strstr(st->problem, "inside the segment before it"), "%s", st->problem);
	st = bb_reader_stream_stats(r, 3);
	cr_assert_eq(st->log, 2);
	cr_assert_eq(st->corrupt, 2);
	cr_assert(strstr(st->problem, "segment"), "%s", st->problem);
	bb_reader_close(r);
	synth_free(&x.s);
}

/* Impossible segment geometry is not a box: refused at open with a
 * message. */
Test(v3, impossible_geometry_is_refused)
{
	struct synth3 x;
	struct bb_reader *r;
	struct bb_header *h;

	synth3_init(&x, 2, 4096, 2, 16384);
	h = synth_hdr(&x.s);
	h->seg_desc_size = 128;
	cr_assert_eq(bb_reader_open_mem(x.s.buf, x.s.len, 0, &r, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "seg_desc_size"), "%s", err);
	h->seg_desc_size = BB_SEG_DESC_SIZE;
	h->seg_size = 6000;
	cr_assert_eq(bb_reader_open_mem(x.s.buf, x.s.len, 0, &r, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "seg_size"), "%s", err);
	h->seg_size = 4096;
	h->seg_count = 3; /* the data ends past the box */
	cr_assert_eq(bb_reader_open_mem(x.s.buf, x.s.len, 0, &r, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "segment data"), "%s", err);
	h->seg_count = 2;
	h->seg_table_offset = h->ring_table_offset; /* over the ring table */
	cr_assert_eq(bb_reader_open_mem(x.s.buf, x.s.len, 0, &r, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "overlap"), "%s", err);
	synth_free(&x.s);
}

/* A FOLLOW walk of a snapshot goes on from the last one's end: nothing
 * again.  A saved copy reads back the same. */
Test(v3, follow_and_save)
{
	struct synth3 x;
	struct bb_reader *r, *r2;
	struct got g, g2;
	char path[4096];
	int fd;

	synth3_init(&x, 2, 4096, 2, 16384);
	synth3_seg(&x, 0, BB_SEG_OPEN, 1, 3, 0, 33, "c", 0);
	synth3_str(&x, 0, 1, "x");
	synth3_str(&x, 0, 2, "y");
	r = walk(&x, BB_WALK_FOLLOW, &g);
	cr_assert_eq(g.n, 2);
	memset(&g, 0, sizeof(g));
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, got_cb, &g), 0);
	cr_assert_eq(g.n, 0);
	snprintf(path, sizeof(path), "%s/saved", bbt_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bb_reader_save(r, fd), 0);
	close(fd);
	cr_assert_eq(bb_reader_open_path(path, 0, &r2, err, sizeof(err)), 0, "%s", err);
	memset(&g2, 0, sizeof(g2));
	cr_assert_eq(bb_reader_walk(r2, 0, got_cb, &g2), 0);
	cr_assert_eq(g2.n, 2);
	cr_assert_str_eq(g2.text[1], "y");
	bb_reader_close(r2);
	bb_reader_close(r);
	synth_free(&x.s);
}
