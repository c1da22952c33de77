/* SPDX-License-Identifier: MIT */
/*
 * reader_walk.c - deliver the intact records of every ring (FORMAT.md §8):
 * collect each ring's records from the reader's copy, attribute them to
 * threads, hide important copies whose original is shown, merge by time.
 *
 * Counting conventions (documented in the report of a walk, see
 * bb_stream_stats): "overwritten" counts events, not records: one per resync
 * after the writer lapped us inside a walk, and one per gap between two
 * BB_WALK_FOLLOW walks (the records lost in a gap cannot be counted without
 * reading them).  A torn record is counted once per head, however often
 * the reader walks.  "corrupt" counts one per resync after a record that
 * failed validation (plus one for an impossible head/tail pair), and
 * "skipped_bytes" the bytes passed over to find the next valid record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "barrier.h"
#include "crc32c.h"
#include "internal.h"
#include "reader_int.h"
#include "text.h"
#include "../shared/grow.h"

/* Room in *@p for @need elements of @elem bytes (the reader's arrays:
 * records, thread tables, logs): shared/grow.h. 0 or -ENOMEM. */
int bb__rdr_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	return bb__grow(p, cap, need, elem);
}

/*
 * Room for @need walk entries.  Anonymous memory advised for transparent
 * huge pages, not malloc(): a million-record box takes 48 MiB of entries,
 * and 4 KiB pages would cost a page fault (and a page zeroed) per 85
 * records, more than the walk's own work on them.  MAP_NORESERVE: collect()
 * reserves for the most records a ring could hold, and untouched pages
 * cost nothing.  Growing moves the pages (mremap), never copies them.
 */
static int grow_ents(struct bb_reader *r, size_t need)
{
	size_t n = r->cents ? r->cents : 1024, esz = sizeof(*r->ents);
	void *q;

	if (need <= r->cents)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / esz)
			return -ENOMEM;
		n *= 2;
	}
	if (r->ents)
		q = mremap(r->ents, r->cents * esz, n * esz, MREMAP_MAYMOVE);
	else
		q = mmap(NULL, n * esz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (q == MAP_FAILED)
		return -ENOMEM;
#ifdef MADV_HUGEPAGE
	(void)madvise(q, n * esz, MADV_HUGEPAGE);
#endif
	r->ents = q;
	r->cents = n;
	return 0;
}

/* The value bytes of a collected record. */
static inline const uint8_t *ent_value(const struct bb_reader *r, const struct ent *e)
{
	return (e->inbox ? r->base : r->vals) + e->voff;
}

/* Keep the record at @rec (len bytes, proven intact framing: a private
 * copy in r->rec, or the bytes of a box that cannot change): verify its
 * checksum first (FORMAT §11) so that a scribbled payload is counted
 * corrupt and never decoded.  Only a copy's value goes to the arena. */
int bb__rdr_keep(struct bb_reader *r, uint32_t ring, uint64_t pos, uint32_t len,
		 const uint8_t *rec)
{
	const struct bb_record_hdr *h = (const struct bb_record_hdr *)(const void *)rec;
	int32_t tid = 0;
	const uint8_t *v;
	struct ent *e;
	size_t vlen;
	bool inbox = rec != r->rec;

	if (!bb__record_crc_ok(rec, len, BB_SEQ_DONE(pos), r->info.flags & BB_HF_CRC32C)) {
		r->streams[ring].st.crc_bad++;
		r->streams[ring].st.corrupt++;
		return 0;
	}
	v = bb__record_value(rec, len, &tid, &vlen);
	if (!v) { /* BB_RF_TID or BB_RF_CRC without room for them */
		r->streams[ring].st.corrupt++;
		return 0;
	}
	if ((r->nents == r->cents && grow_ents(r, r->nents + 1)) ||
	    (!inbox && bb__rdr_grow((void **)&r->vals, &r->cvals, r->nvals + vlen, 1)))
		return -ENOMEM;
	e = &r->ents[r->nents++];
	*e = (struct ent){
		.pos = pos, .ts = h->ts, .stride = (uint32_t)BB_RECORD_STRIDE(len),
		.voff = inbox ? (size_t)(v - r->base) : r->nvals, .vlen = (uint16_t)vlen,
		.stream = ring, .tid = tid, .tag = h->tag, .flags = h->flags, .inbox = inbox,
	};
	if (!inbox && vlen)
		memcpy(r->vals + r->nvals, v, vlen);
	if (!inbox)
		r->nvals += vlen;
	return 0;
}

/*
 * read_fixed - bb__extent_read() for the reader's private copy, which nothing
 * changes during a walk (bb__rdr_load() raised each copied tail past what the
 * writer overwrote while it was copied): the same checks of seq, len and
 * stride, but no writer can race us, so there is no copy to re-validate
 * and no fence.  Returns the record's bytes in place, or in r->rec when it wraps
 * around the ring's end; NULL (*rd says why) when it fails validation.
 * The same for a segment of a log (v->desc NULL, FORMAT.md §13).
 */
const uint8_t *bb__rdr_read_fixed(struct bb_reader *r, const struct bb__extent *v,
				  uint64_t pos, uint64_t head, uint32_t *lenp, enum bb__rd *rd)
{
	/* a segment's positions start at v->start and never wrap (the
	 * envelope check keeps the record inside it) */
	size_t off = v->desc ? (size_t)(pos & (v->size - 1)) : (size_t)(pos - v->start);
	struct bb_record_hdr h;

	bb__extent_copy(v, pos, &h, sizeof(h)); /* inside the ring whatever it holds */
	if (bb__extent_envelope_ok(v, &h, pos, head)) {
		*lenp = h.len;
		*rd = BB__RD_OK;
		if (off + h.len <= v->size)
			return v->data + off;
		bb__extent_copy(v, pos, r->rec, h.len);
		return r->rec;
	}
	/* as bb__extent_read() decides: a tail past pos means overwritten (a
	 * snapshot's tails were raised past what the copy lost) */
	*rd = bb__extent_lapped(v, pos) ? BB__RD_OVERWRITTEN : BB__RD_CORRUPT;
	return NULL;
}

/*
 * The record just kept at @pos follows a hole when it does not start where
 * the ring's previous record (kept by this walk, or delivered by the last
 * FOLLOW walk) ended, *@expect: records overwritten before they could be
 * read, or bytes that did not validate.  Mark it, remember the bytes lost
 * (bb_record.gap_before), and expect the next record after it.
 */
int bb__rdr_note_gap(struct bb_reader *r, uint32_t ring, uint64_t pos, uint64_t *expect,
		     bool *have_expect)
{
	struct ent *e = &r->ents[r->nents - 1];

	if (*have_expect && bb__pos_diff(pos, *expect) > 0) {
		if (bb__rdr_grow((void **)&r->gaps, &r->cgaps, r->ngaps + 1, sizeof(*r->gaps)))
			return -ENOMEM;
		r->gaps[r->ngaps++] = (struct gap){ .pos = pos, .lost = pos - *expect, .stream = ring };
		e->gap = true;
	}
	*expect = pos + e->stride;
	*have_expect = true;
	return 0;
}

/*
 * bb__rdr_collect_extent - the one collect loop of rings and log segments:
 * keep the intact records of stream @i in extent @v from *@posp up to
 * @head, in position order, each checked by bb__rdr_read_fixed(), a hole
 * noted where a kept record does not start where the previous one ended
 * (bb__rdr_note_gap(), @expect / @have_expect), and after a record that
 * fails, a resync (bb__extent_skip()).  In a ring a failure is a lap
 * (counted overwritten) or corrupt, as the read says; in a segment's copy
 * (@copy) nothing changes the bytes, so every failure is corrupt.
 * *@posp: where it stopped; *@kept: true when a record was kept.  Returns
 * 0 or -ENOMEM.
 */
int bb__rdr_collect_extent(struct bb_reader *r, uint32_t i, const struct bb__extent *v,
			   uint64_t *posp, uint64_t head, bool copy, uint64_t *expect,
			   bool *have_expect, bool *kept)
{
	struct rstream *rr = &r->streams[i];
	uint64_t pos = *posp;
	int rc;

	*kept = false;
	while (bb__pos_diff(head, pos) > 0) {
		const uint8_t *rec;
		enum bb__rd rd;
		uint32_t len;

		rec = bb__rdr_read_fixed(r, v, pos, head, &len, &rd);
		if (rd == BB__RD_OK) {
			size_t before = r->nents;

			rc = bb__rdr_keep(r, i, pos, len, rec);
			if (!rc && r->nents > before) {
				rc = bb__rdr_note_gap(r, i, pos, expect, have_expect);
				*kept = true;
			}
			if (rc) {
				*posp = pos;
				return rc;
			}
			pos += BB_RECORD_STRIDE(len);
			continue;
		}
		/* overwritten: past the lap; corrupt: resync (ring.h) */
		if (copy)
			rd = BB__RD_CORRUPT;
		if (rd == BB__RD_OVERWRITTEN)
			rr->st.overwritten++;
		else
			rr->st.corrupt++;
		pos = bb__extent_skip(v, pos, head, rd, r->rec, &rr->st.skipped_bytes);
	}
	*posp = pos;
	return 0;
}

/* Collect ring @i's intact records into the arena; *endp = where a FOLLOW
 * walk resumes. */
static int collect(struct bb_reader *r, uint32_t i, unsigned flags, bool alive,
		   uint64_t *endp)
{
	struct rstream *rr = &r->streams[i];
	uint64_t head, tail, pos, expect = 0;
	bool have_expect = false, kept;
	int rc;

	*endp = 0;
	if (rr->is_log)
		return bb__rdr_collect_log(r, i, flags, alive, endp);
	if (rr->bad)
		return 0; /* descriptor rejected at open (counted then) */
	bb__rdr_refresh_ring(rr);
	if (rr->st.kind != BB_STREAM_THREAD && rr->st.kind != BB_STREAM_SHARED &&
	    rr->st.kind != BB_STREAM_IMPORTANT)
		return 0; /* a kind of a later minor version: skipped (FORMAT §10) */
	switch (bb__ring_bounds(&rr->v, &head, &tail)) {
	case BB__RB_MISALIGNED:
		/* records are 8-aligned: nothing in this ring can be located */
		*endp = head;
		rr->st.corrupt++;
		return 0;
	case BB__RB_LAPPED:
		/* still lapping us (live) or a scribbled descriptor (dead) */
		*endp = head;
		if (alive)
			rr->st.overwritten++;
		else
			rr->st.corrupt++;
		return 0;
	case BB__RB_TOO_LONG:
		rr->st.corrupt++; /* tail raised to one ring back */
		break;
	default:
		break;
	}
	*endp = head;

	pos = tail;
	if ((flags & BB_WALK_FOLLOW) && rr->has_next) {
		/* the history goes on from the last walk's end: a hole since
		 * is marked on the first record kept */
		expect = rr->next;
		have_expect = true;
		if (bb__pos_diff(rr->next, tail) >= 0 && bb__pos_diff(head, rr->next) >= 0)
			pos = rr->next;
		else if (bb__pos_diff(rr->next, tail) < 0)
			rr->st.overwritten++; /* a gap since the last walk */
	}

	/* every record takes 16 bytes at least: reserve for the most this
	 * ring can hold (a failure here is not one: bb__rdr_keep() grows as
	 * it goes) */
	if (bb__pos_diff(head, pos) > 0)
		(void)grow_ents(r, r->nents + (size_t)((head - pos) / BB_RECORD_HDR_SIZE) + 1);
	rc = bb__rdr_collect_extent(r, i, &rr->v, &pos, head, false, &expect, &have_expect,
				    &kept);
	if (rc)
		return rc;
	/* A dead owner's record busy at head is the write its death cut short;
	 * a live owner's is a write in progress.  Counted once per head. */
	if (pos == head && !alive && bb__extent_seq(&rr->v, head) == BB_SEQ_BUSY(head) &&
	    !(rr->torn_counted && rr->torn_head == head)) {
		rr->st.torn++;
		rr->torn_counted = true;
		rr->torn_head = head;
	}
	*endp = pos;
	return 0;
}

/* Index of @name in r->names: the last one added when equal (names
 * change only at owner records), else a new entry; -1 without memory. */
static int64_t name_index(struct bb_reader *r, const char *name)
{
	if (r->nnames && !strncmp(r->names[r->nnames - 1], name, 16))
		return (int64_t)r->nnames - 1;
	if (bb__rdr_grow((void **)&r->names, &r->cnames, r->nnames + 1, sizeof(*r->names)))
		return -1;
	bb__strlcpy(r->names[r->nnames], name, sizeof(*r->names));
	return (int64_t)r->nnames++;
}

struct tid_stream {
	int32_t  tid;
	uint32_t stream;
};

static int tid_stream_cmp(const void *a, const void *b)
{
	const struct tid_stream *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * Shared and important rings: each record's tid is its BB_RF_TID
 * extension; its thread's name is the one of the thread stream (3.0: its
 * log, 2.x: its private ring) that tid holds now, "" when none does.
 * Thread streams are looked up by tid in a sorted table: a ring of many
 * threads' records costs a binary search per change of tid, never a pass over the table.
 */
static int name_by_tid(struct bb_reader *r, size_t first)
{
	struct tid_stream *t = NULL, key, *hit;
	size_t nt = 0;
	int32_t last = 0;
	int64_t name = 0; /* "" */

	for (size_t k = first; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (e->tid != last) {
			last = e->tid;
			if (!t) {
				t = malloc(r->info.stream_count * sizeof(*t));
				if (!t)
					return -ENOMEM;
				for (uint32_t j = 0; j < r->info.stream_count; j++)
					if (r->streams[j].st.kind == BB_STREAM_THREAD &&
					    r->streams[j].st.tid && r->streams[j].st.thread_name[0])
						t[nt++] = (struct tid_stream){ r->streams[j].st.tid, j };
				qsort(t, nt, sizeof(*t), tid_stream_cmp);
			}
			key.tid = last;
			hit = last && nt ? bsearch(&key, t, nt, sizeof(*t), tid_stream_cmp) : NULL;
			name = hit ? name_index(r, r->streams[hit->stream].st.thread_name) : 0;
			if (name < 0) {
				free(t);
				return -ENOMEM;
			}
		}
		e->name = (uint32_t)name;
	}
	free(t);
	return 0;
}

/*
 * Attribute ring @i's records [first, r->nents) to threads.  Shared and
 * important ring: name_by_tid().  A thread's log (3.0): its thread.
 * Private ring: records after an owner record belong to its new thread,
 * records before the first visible one to its previous thread; with no
 * owner record in view, to the descriptor's.
 */
static int attribute(struct bb_reader *r, uint32_t i, size_t first)
{
	struct rstream *rr = &r->streams[i];
	int32_t cur_tid = rr->st.tid, t, pt;
	char name[16], prev[16];
	int64_t cur;

	if (rr->st.kind == BB_STREAM_SHARED || rr->st.kind == BB_STREAM_IMPORTANT)
		return name_by_tid(r, first);
	cur = name_index(r, rr->st.thread_name);
	if (rr->is_log) {
		/* 3.0: a log is one thread's, whatever it holds */
		for (size_t k = first; k < r->nents && cur >= 0; k++) {
			struct ent *e = &r->ents[k];

			if (!(e->flags & BB_RF_TID))
				e->tid = cur_tid;
			e->name = (uint32_t)cur;
		}
		return cur < 0 ? -ENOMEM : 0;
	}
	for (size_t k = first; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (e->tag == BB_TAG_OWNER &&
		    !bb__owner_decode(ent_value(r, e), e->vlen, &t, name, sizeof(name),
				      &pt, prev, sizeof(prev))) {
			cur_tid = pt;
			cur = name_index(r, prev);
			break;
		}
	}
	for (size_t k = first; k < r->nents && cur >= 0; k++) {
		struct ent *e = &r->ents[k];

		if (e->tag == BB_TAG_OWNER &&
		    !bb__owner_decode(ent_value(r, e), e->vlen, &t, name, sizeof(name),
				      &pt, prev, sizeof(prev))) {
			cur_tid = t;
			cur = name_index(r, name);
		}
		if (!(e->flags & BB_RF_TID))
			e->tid = cur_tid;
		e->name = (uint32_t)cur;
	}
	return cur < 0 ? -ENOMEM : 0;
}

static int by_time(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

BB_EXPORT uint64_t bb_reader_ts_ns(const struct bb_box_info *info, uint64_t raw)
{
	struct bb_header h = { 0 };

	if (!info || info->clock != BB_CLOCK_TSC)
		return raw;
	h.clock = BB_CLOCK_TSC;
	h.tsc_anchor = info->tsc_anchor;
	h.tsc_mult = info->tsc_mult;
	h.tsc_shift = info->tsc_shift;
	h.anchor_clock_ns = info->anchor_clock_ns;
	return (uint64_t)bb__ts_to_ns(&h, raw);
}

static int ikey_cmp(const void *a, const void *b)
{
	const struct ikey *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static bool ikey_in(const struct ikey *set, size_t n, const struct ent *e)
{
	struct ikey k = { .ts = e->ts, .tid = e->tid };

	return n && bsearch(&k, set, n, sizeof(k), ikey_cmp);
}

/* Deliver r->ents[k] (or pass over a suppressed important copy). */
static int deliver_one(struct bb_reader *r, size_t k, bb_record_fn fn, void *arg,
		       bool follow)
{
	static const uint8_t none[1];
	const struct ent *e = &r->ents[k];
	struct rstream *rr = &r->streams[e->stream];
	struct bb_record rec;

	/* member by member: an initializer zeroes the whole struct first,
	 * which costs on every record (BENCHMARKS.md "Choices in the code,
	 * measured") */
	rec.stream = e->stream;
	rec.tid = e->tid;
	rec.thread_name = r->names[e->name];
	rec.pos = e->pos;
	rec.ts = bb__rdr_ns(r, e->ts);
	rec.wall_ns = bb__rdr_wall(r, e->ts);
	rec.tag = e->tag;
	rec.flags = e->flags;
	rec.value = e->vlen ? ent_value(r, e) : none;
	rec.value_len = e->vlen;
	rec.ts_raw = e->ts;
	rec.important_copy = e->copy;
	rec.gap_before = 0;
	if (e->gap)
		for (size_t g = 0; g < r->ngaps; g++)
			if (r->gaps[g].stream == e->stream && r->gaps[g].pos == e->pos)
				rec.gap_before = r->gaps[g].lost;

	rr->next = e->pos + e->stride;
	rr->has_next = true;
	if (e->skip)
		return 0;
	if (follow && (e->flags & BB_RF_IMPORTANT)) {
		/* remembered so that a later walk never shows its twin */
		if (bb__rdr_grow((void **)&r->shown, &r->cshown, r->nshown + 1, sizeof(*r->shown)))
			return -ENOMEM;
		r->shown[r->nshown++] = (struct ikey){ .ts = e->ts, .tid = e->tid };
	}
	rr->st.read++;
	return fn(&rec, arg);
}

/*
 * dedupe - FORMAT §11: every important record is shown once.  A copy in
 * the important ring is suppressed when its original (same tid and ts,
 * BB_RF_IMPORTANT) was collected from another ring by this walk or was
 * delivered by an earlier BB_WALK_FOLLOW walk; an original is suppressed
 * when an earlier follow walk already showed its copy (the copy can be
 * committed, and seen, before a walk reaches the original's ring).
 * Attribution has run: private-ring originals carry their thread's tid.
 */
static int dedupe(struct bb_reader *r, bool follow)
{
	struct ikey *orig = NULL;
	size_t n = 0;

	if (!follow)
		r->nshown = 0;
	else if (r->nshown > 1)
		qsort(r->shown, r->nshown, sizeof(*r->shown), ikey_cmp);
	for (size_t k = 0; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (!(e->flags & BB_RF_IMPORTANT) ||
		    r->streams[e->stream].st.kind == BB_STREAM_IMPORTANT)
			continue;
		if (follow && ikey_in(r->shown, r->nshown, e)) {
			e->skip = true;
			continue;
		}
		if (!orig && !(orig = malloc(r->nents * sizeof(*orig))))
			return -ENOMEM;
		orig[n++] = (struct ikey){ .ts = e->ts, .tid = e->tid };
	}
	if (n > 1)
		qsort(orig, n, sizeof(*orig), ikey_cmp);
	for (size_t k = 0; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (r->streams[e->stream].st.kind != BB_STREAM_IMPORTANT)
			continue;
		if (ikey_in(orig, n, e) || (follow && ikey_in(r->shown, r->nshown, e))) {
			e->skip = true;
			r->streams[e->stream].st.dup_suppressed++;
		} else {
			e->copy = true;
		}
	}
	free(orig);
	return 0;
}

/* One ring's run of collected records, [at, end) of r->ents. */
struct run {
	size_t at, end;
};

/* Is run a before run b at their current heads?  ts, then ring (runs are
 * ring ordered: the index breaks ties), as by_time() orders. */
static bool run_before(const struct bb_reader *r, const struct run *a, uint32_t ia,
		       const struct run *b, uint32_t ib)
{
	uint64_t x = r->ents[a->at].ts, y = r->ents[b->at].ts;

	return x != y ? x < y : ia < ib;
}

static void sift_down(const struct bb_reader *r, const struct run *runs, uint32_t *heap,
		      uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;

		if (l < n && run_before(r, &runs[heap[l]], heap[l], &runs[heap[m]], heap[m]))
			m = l;
		if (l + 1 < n &&
		    run_before(r, &runs[heap[l + 1]], heap[l + 1], &runs[heap[m]], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/*
 * Deliver the collected records of all rings in by_time() order.  Each
 * ring's run is in position order, which is time order for every ring whose
 * writer's clock did not step back (checked, and sorted when not), so a
 * k-way merge over the runs (a heap of ring cursors) gives the order of a
 * full sort in O(n log rings) instead of O(n log n).
 */
static int deliver_merged(struct bb_reader *r, const size_t *first, bb_record_fn fn,
			  void *arg, bool follow)
{
	uint32_t nr = r->info.stream_count, n = 0;
	struct run *runs;
	uint32_t *heap;
	int rc = 0;

	runs = malloc(nr * (sizeof(*runs) + sizeof(*heap)) + 1);
	if (!runs)
		return -ENOMEM;
	heap = (uint32_t *)(void *)(runs + nr);
	for (uint32_t i = 0; i < nr; i++) {
		runs[i].at = first[i];
		runs[i].end = i + 1 < nr ? first[i + 1] : r->nents;
		for (size_t k = runs[i].at + 1; k < runs[i].end; k++) {
			if (r->ents[k].ts < r->ents[k - 1].ts) {
				/* a clock step (or a shared ring's racing
				 * writers): order this run on its own */
				qsort(r->ents + runs[i].at, runs[i].end - runs[i].at,
				      sizeof(*r->ents), by_time);
				break;
			}
		}
		if (runs[i].at < runs[i].end)
			heap[n++] = i;
	}
	for (uint32_t i = n / 2; i-- > 0;)
		sift_down(r, runs, heap, n, i);
	while (n) {
		struct run *top = &runs[heap[0]];

		if (n == 1) { /* the last ring: no more comparisons */
			for (; top->at < top->end && !rc; top->at++)
				rc = deliver_one(r, top->at, fn, arg, follow);
			break;
		}
		rc = deliver_one(r, top->at++, fn, arg, follow);
		if (rc)
			break;
		if (top->at == top->end)
			heap[0] = heap[--n];
		sift_down(r, runs, heap, n, 0);
	}
	free(runs);
	return rc;
}

/*
 * bb_reader_walk: every ring is collected (and attributed) before anything
 * is delivered, also ring by ring, because hiding an important copy needs
 * to know whether its original is present in another ring.
 */
BB_EXPORT int bb_reader_walk(struct bb_reader *r, unsigned flags, bb_record_fn fn, void *arg)
{
	bool merge = flags & BB_WALK_MERGE, follow = flags & BB_WALK_FOLLOW, alive;
	size_t *firsts;
	int rc = 0;

	if (!r || !fn)
		return -EINVAL;
	if (r->fd >= 0) {
		/* a live reader reads what the walk needs, as it is now */
		rc = bb__rdr_load(r, LOAD_WALK, follow);
		if (rc)
			return rc;
	}
	bb__rdr_refresh_info(r);
	/* 3.0: the segments of every log, as the copy holds them now */
	rc = bb__rdr_rescan_logs(r);
	if (rc)
		return rc;
	alive = bb_reader_liveness(r) == BB_LIVENESS_ALIVE;
	r->nents = r->nvals = r->nnames = r->ngaps = 0;
	firsts = malloc(r->info.stream_count * sizeof(*firsts) + 1);
	if (!firsts || name_index(r, "") != 0) {
		free(firsts);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r->info.stream_count && !rc; i++) {
		firsts[i] = r->nents;
		rc = collect(r, i, flags, alive, &r->streams[i].end);
		if (!rc)
			rc = attribute(r, i, firsts[i]);
	}
	if (!rc)
		rc = dedupe(r, follow);
	if (!rc && merge) {
		rc = deliver_merged(r, firsts, fn, arg, follow);
	} else if (!rc) {
		/* ring by ring: ents are in ring order already */
		for (size_t k = 0; k < r->nents && !rc; k++)
			rc = deliver_one(r, k, fn, arg, follow);
	}
	free(firsts);
	r->nents = r->nvals = 0;
	if (rc)
		return rc;
	/* everything up to each ring's end was delivered or passed over */
	for (uint32_t i = 0; i < r->info.stream_count; i++) {
		if (r->streams[i].bad)
			continue;
		r->streams[i].next = r->streams[i].end;
		r->streams[i].has_next = true;
	}
	r->walked = true;
	return 0;
}

BB_EXPORT const struct bb_stream_stats *bb_reader_stream_stats(const struct bb_reader *r,
							   uint32_t ring)
{
	if (!r || ring >= r->info.stream_count)
		return NULL;
	return &r->streams[ring].st;
}

BB_EXPORT void bb_reader_total_stats(const struct bb_reader *r, struct bb_stream_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (uint32_t i = 0; r && i < r->info.stream_count; i++) {
		const struct bb_stream_stats *s = &r->streams[i].st;

		sum->read += s->read;
		sum->torn += s->torn;
		sum->overwritten += s->overwritten;
		sum->corrupt += s->corrupt;
		sum->skipped_bytes += s->skipped_bytes;
		sum->crc_bad += s->crc_bad;
		sum->dup_suppressed += s->dup_suppressed;
	}
}
