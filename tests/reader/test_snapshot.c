/* SPDX-License-Identifier: MIT */
/* Description: BB_OPEN_SNAPSHOT copies only each ring's live bytes: the
 * records it delivers (and the counts) are exactly those of a full copy of
 * the same file, wrap-around, torn head and scribbled descriptors included;
 * header, table and areas are copied whole; dead ring bytes read as zero. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>

#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "../helpers/synth.h"

static char *dir;
static char err[512];

static void setup(void)
{
	dir = bbt_mkdtemp();
	cr_assert(dir);
}

static void teardown(void)
{
	bbt_rmdir(dir);
	free(dir);
}

TestSuite(snapshot, .init = setup, .fini = teardown);

#define MAXREC 2048

struct rec {
	uint32_t ring;
	int32_t tid;
	char name[16];
	uint64_t pos, ts;
	uint8_t tag, flags;
	char text[128];
};

struct got {
	size_t n;
	struct rec r[MAXREC];
};

static int collect_fn(const struct bb_record *rec, void *arg)
{
	struct got *g = arg;
	struct rec *x;

	if (g->n == MAXREC)
		return 1; /* the caller's walk then fails its == 0 assert */
	x = &g->r[g->n++];
	x->ring = rec->stream;
	x->tid = rec->tid;
	snprintf(x->name, sizeof(x->name), "%s", rec->thread_name);
	x->pos = rec->pos;
	x->ts = rec->ts;
	x->tag = rec->tag;
	x->flags = rec->flags;
	bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, x->text,
			sizeof(x->text));
	return 0;
}

/* Walk @r merged into @g; the total counts into @st. */
static void walk(struct bb_reader *r, struct got *g, struct bb_stream_stats *st)
{
	memset(g, 0, sizeof(*g));
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, collect_fn, g), 0);
	bb_reader_total_stats(r, st);
}

/* Save @s, read it as a snapshot and as a full memory copy: the same
 * records in the same order, the same counts.  Returns the record count;
 * the snapshot stays open in *snap. */
static size_t same_as_full_copy(struct synth *s, struct bb_reader **snap)
{
	static struct got a, b;
	struct bb_stream_stats sa, sb;
	struct bb_reader *full;
	char path[4200];

	snprintf(path, sizeof(path), "%s/box", dir);
	cr_assert_eq(synth_save(s, path), 0);
	cr_assert_eq(bb_reader_open_path(path, BB_OPEN_SNAPSHOT, snap, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(bb_reader_open_mem(s->buf, s->len, 0, &full, err, sizeof(err)), 0,
		     "%s", err);
	walk(*snap, &a, &sa);
	walk(full, &b, &sb);
	cr_assert_eq(a.n, b.n, "snapshot %zu records, full copy %zu", a.n, b.n);
	for (size_t k = 0; k < a.n; k++) {
		cr_expect_eq(a.r[k].ring, b.r[k].ring, "record %zu", k);
		cr_expect_eq(a.r[k].pos, b.r[k].pos, "record %zu", k);
		cr_expect_eq(a.r[k].ts, b.r[k].ts, "record %zu", k);
		cr_expect_eq(a.r[k].tid, b.r[k].tid, "record %zu", k);
		cr_expect_eq(a.r[k].tag, b.r[k].tag, "record %zu", k);
		cr_expect_eq(a.r[k].flags, b.r[k].flags, "record %zu", k);
		cr_expect_str_eq(a.r[k].name, b.r[k].name, "record %zu", k);
		cr_expect_str_eq(a.r[k].text, b.r[k].text, "record %zu", k);
	}
	cr_expect_eq(sa.read, sb.read);
	cr_expect_eq(sa.torn, sb.torn);
	cr_expect_eq(sa.corrupt, sb.corrupt);
	cr_expect_eq(sa.overwritten, sb.overwritten);
	cr_expect_eq(sa.skipped_bytes, sb.skipped_bytes);
	bb_reader_close(full);
	return a.n;
}

/* Ring 0 wrapped many times (records straddle its end), ring 1 a few
 * records and a torn one at head, ring 2 never written, a state table. */
static void build(struct synth *s)
{
	char text[96];

	synth_init(s, 3, 4096);
	synth_add_state(s, 4, 64);
	for (int i = 0; i < 400; i++) {
		snprintf(text, sizeof(text), "wrapped-%04d-%.*s", i, i % 40,
			 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		synth_str(s, 0, 10 + (uint64_t)i * 2, text);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(text, sizeof(text), "ring1-%d", i);
		synth_str(s, 1, 11 + (uint64_t)i * 100, text);
	}
	synth_torn(s, 1);
}

Test(snapshot, delivers_what_a_full_copy_delivers)
{
	struct bb_stream_stats st;
	struct bb_reader *r;
	struct synth s;

	build(&s);
	cr_assert_gt(synth_desc(&s, 0)->tail, 0, "ring 0 must have wrapped");
	cr_assert_gt(same_as_full_copy(&s, &r), 20);
	bb_reader_total_stats(r, &st);
	cr_expect_eq(st.torn, 1, "the busy seq at ring 1's head is copied");
	cr_expect_eq(st.corrupt, 0);
	bb_reader_close(r);
	synth_free(&s);
}

Test(snapshot, copies_live_bytes_and_zeroes_dead_ones)
{
	struct bb_reader *r;
	struct synth s;
	const uint8_t *d;
	size_t len, first;
	int live = 0, dead_zero = 0, dead_nonzero_in_file = 0;

	build(&s);
	/* free 20 records of ring 0 as a writer making room would: their
	 * bytes stay in the file, dead */
	for (int k = 0; k < 20; k++) {
		struct bb_record_hdr old;

		synth_read(&s, 0, synth_desc(&s, 0)->tail, &old, sizeof(old));
		synth_desc(&s, 0)->tail += BB_RECORD_STRIDE(old.len);
	}
	same_as_full_copy(&s, &r);
	d = bb_reader_data(r, &len);
	cr_assert_eq(len, s.len);
	/* everything before the first ring's data: header, table, areas */
	first = synth_desc(&s, 0)->data_offset;
	cr_expect_eq(memcmp(d, s.buf, first), 0, "header, ring table and state table whole");
	for (uint32_t i = 0; i < 3; i++) {
		const struct bb_ring_desc *sd = synth_desc(&s, i);
		uint64_t tail = sd->tail, head = sd->head, size = s.ring_size;
		const uint8_t *fd = synth_data(&s, i), *cd = d + sd->data_offset;

		for (uint64_t p = 0; p < size; p++) {
			/* is ring offset p inside [tail, head + 8) (mod size)? */
			bool in = ((p - tail) & (size - 1)) < head + 8 - tail;

			if (in) {
				cr_expect_eq(cd[p], fd[p], "ring %u offset %" PRIu64, i, p);
				live++;
			} else {
				dead_zero += cd[p] == 0;
				dead_nonzero_in_file += fd[p] != 0;
				cr_expect_eq(cd[p], 0, "ring %u dead offset %" PRIu64, i, p);
			}
		}
	}
	cr_expect_gt(live, 1000);
	cr_expect_gt(dead_nonzero_in_file, 100, "the file's dead bytes are old records");
	cr_expect_gt(dead_zero, 100);
	bb_reader_close(r);
	synth_free(&s);
}

/* Descriptors the sparse copy cannot trust are copied whole, and the
 * reader judges them as it always did. */
Test(snapshot, scribbled_descriptors_are_copied_whole)
{
	struct bb_reader *r;
	struct synth s;
	const uint8_t *d;
	size_t len;

	/* ring 0: tail past head; ring 1: misaligned head */
	build(&s);
	synth_desc(&s, 0)->tail = synth_desc(&s, 0)->head + 64;
	synth_desc(&s, 1)->head += 4;
	same_as_full_copy(&s, &r);
	d = bb_reader_data(r, &len);
	cr_expect_eq(memcmp(d, s.buf, (size_t)synth_desc(&s, 2)->data_offset), 0,
		     "rings 0 and 1 copied byte for byte");
	bb_reader_close(r);
	synth_free(&s);

	/* ring 1 claims ring 0's data: overlapping descriptors, all copied */
	build(&s);
	synth_desc(&s, 1)->data_offset = synth_desc(&s, 0)->data_offset;
	same_as_full_copy(&s, &r);
	d = bb_reader_data(r, &len);
	cr_expect_eq(memcmp(d, s.buf, len), 0, "the whole file");
	bb_reader_close(r);
	synth_free(&s);

	/* a state table placed inside ring 2's data: that ring copied whole */
	build(&s);
	synth_hdr(&s)->state_table_offset = synth_desc(&s, 2)->data_offset + 512;
	memset(s.buf + synth_desc(&s, 2)->data_offset, 0x5a, 512);
	same_as_full_copy(&s, &r);
	d = bb_reader_data(r, &len);
	cr_expect_eq(memcmp(d + synth_desc(&s, 2)->data_offset,
			    s.buf + synth_desc(&s, 2)->data_offset, (size_t)s.ring_size), 0);
	bb_reader_close(r);
	synth_free(&s);
}
