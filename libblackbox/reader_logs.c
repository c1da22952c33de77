/* SPDX-License-Identifier: MIT */
/*
 * reader_logs.c - the thread logs of a 3.0 box (FORMAT.md §13): which
 * segments hold which thread's log, each log presented as a ring after
 * the ring table's (its index stable for the reader's life), and the walk
 * of a log's records, segment by segment, with its holes measured exactly
 * in bytes of the log.
 *
 * Works on the reader's private copy (r->base): bb__rdr_load() copied the
 * segment table and each segment's live part, and marked in its copy the
 * segments handed over while they were copied (reader_snapshot.c), so
 * nothing here races a writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "reader_int.h"
#include "text.h"

/* The index in r->logs where @log is, or would be inserted. */
static size_t log_at(const struct bb_reader *r, uint32_t log)
{
	size_t lo = 0, hi = r->nlogs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->logs[mid].log < log)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The ring of log @log: found, or added after every ring known (so a live
 * reader's ring indexes never change).  -ENOMEM. */
static int64_t ring_of_log(struct bb_reader *r, uint32_t log)
{
	size_t at = log_at(r, log);
	uint32_t ring;

	if (at < r->nlogs && r->logs[at].log == log)
		return r->logs[at].stream;
	if (r->info.stream_count >= r->cap_streams) {
		size_t cap = r->cap_streams;
		struct rstream *q;

		if (bb__rdr_grow((void **)&r->streams, &cap, (size_t)r->info.stream_count + 1, sizeof(*r->streams)))
			return -ENOMEM;
		q = r->streams;
		memset(q + r->cap_streams, 0, (cap - r->cap_streams) * sizeof(*q));
		r->cap_streams = (uint32_t)cap;
	}
	if (bb__rdr_grow((void **)&r->logs, &r->clogs, r->nlogs + 1, sizeof(*r->logs)))
		return -ENOMEM;
	ring = r->info.stream_count++;
	memmove(r->logs + at + 1, r->logs + at, (r->nlogs - at) * sizeof(*r->logs));
	r->logs[at] = (struct rlog){ .log = log, .stream = ring };
	r->nlogs++;
	r->streams[ring].is_log = true;
	r->streams[ring].st.log = log;
	r->streams[ring].st.kind = BB_STREAM_THREAD;
	r->streams[ring].st.claim = BB_STREAM_RETIRED;
	/* A log first found after a walk began after it (a log is there from
	 * its thread's first record): a FOLLOW walk follows it from its
	 * first byte, position 0, as a ring that was empty at that walk. */
	if (r->walked) {
		r->streams[ring].next = 0;
		r->streams[ring].has_next = true;
	}
	return ring;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct rseg *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Name, tid and claim of log ring @rr from its newest segment @s (and the
 * thread slot it names, when that slot still holds this log). */
static void describe(struct bb_reader *r, struct rstream *rr, const struct rseg *s)
{
	const struct bb_seg_desc *d = bb__rdr_seg(r, r->base, s->idx);
	uint32_t slot;

	memcpy(&rr->st.tid, &d->tid, sizeof(rr->st.tid));
	memcpy(rr->st.thread_name, d->thread_name, sizeof(rr->st.thread_name));
	rr->st.thread_name[sizeof(rr->st.thread_name) - 1] = '\0';
	memcpy(&slot, &d->slot, sizeof(slot));
	rr->st.claim = BB_STREAM_RETIRED;
	if (slot < r->thread_count) {
		const struct bb_thread_slot *t = bb__rdr_slot(r, r->base, slot);
		uint32_t log, claim;

		memcpy(&log, &t->log, sizeof(log));
		memcpy(&claim, &t->claim, sizeof(claim));
		if (log == rr->st.log && claim == BB_RING_OWNED)
			rr->st.claim = BB_STREAM_OWNED;
	}
}

/*
 * bb__rdr_scan_logs - index the segments of the reader's copy that hold
 * part of a log (OPEN or SEALED), by log and start: r->segs, and each log
 * ring's first segment and count.  A descriptor whose bounds make no sense
 * is left out and, when @count, counted corrupt on its log's ring (every
 * walk counts what it finds, as for records).  -ENOMEM.
 */
static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Rings for the logs of the copy not known yet, by log id: in a walk, new
 * logs get the next ring indexes, the oldest thread's first. */
static int new_logs(struct bb_reader *r)
{
	uint32_t *ids = malloc(r->seg_count * sizeof(*ids) + 1);
	size_t n = 0;
	int rc = 0;

	if (!ids)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->seg_count; i++) {
		const struct bb_seg_desc *d = bb__rdr_seg(r, r->base, i);
		uint64_t own;
		uint32_t st, log;
		size_t at;

		memcpy(&own, &d->own, sizeof(own)); /* our copy: plain loads */
		st = BB_SEG_STATE(own);
		log = BB_SEG_LOG(own);
		if (st != BB_SEG_OPEN && st != BB_SEG_SEALED)
			continue;
		at = log_at(r, log);
		if (at < r->nlogs && r->logs[at].log == log)
			continue;
		ids[n++] = log;
	}
	if (n > 1)
		qsort(ids, n, sizeof(*ids), u32_cmp);
	for (size_t k = 0; k < n && rc >= 0; k++)
		if (!k || ids[k] != ids[k - 1])
			rc = (int)ring_of_log(r, ids[k]);
	free(ids);
	return rc < 0 ? rc : 0;
}

static int scan(struct bb_reader *r, bool count)
{
	int rc = new_logs(r);

	if (rc)
		return rc;
	r->nsegs = 0;
	for (uint32_t i = 0; i < r->info.stream_count; i++) {
		r->streams[i].seg_first = 0;
		r->streams[i].seg_n = 0;
	}
	for (uint32_t i = 0; i < r->seg_count; i++) {
		const struct bb_seg_desc *d = bb__rdr_seg(r, r->base, i);
		struct bb_seg_desc c;
		uint32_t st;
		int64_t ring;

		memcpy(&c, d, sizeof(c)); /* our copy: plain loads */
		st = BB_SEG_STATE(c.own);
		if (st != BB_SEG_OPEN && st != BB_SEG_SEALED)
			continue; /* free, or being handed over: holds nothing */
		ring = ring_of_log(r, BB_SEG_LOG(c.own));
		if (ring < 0)
			return (int)ring;
		if (!BB_SEG_LOG(c.own) || (c.start | c.head) % 8 ||
		    bb__pos_diff(c.head, c.start) < 0 || c.head - c.start > r->seg_size) {
			struct rstream *rr = &r->streams[ring];

			if (count) {
				rr->st.corrupt++;
				snprintf(rr->st.problem, sizeof(rr->st.problem),
					 "segment %" PRIu32 ": start %" PRIu64 " head %" PRIu64
					 " of a %" PRIu32 "-byte segment%s", i, c.start, c.head,
					 r->seg_size, BB_SEG_LOG(c.own) ? "" : ", log id 0");
			}
			continue;
		}
		if (bb__rdr_grow((void **)&r->segs, &r->csegs, r->nsegs + 1, sizeof(*r->segs)))
			return -ENOMEM;
		r->segs[r->nsegs++] = (struct rseg){
			.idx = i, .stream = (uint32_t)ring, .start = c.start, .head = c.head,
			.own = c.own, .ord = c.ord,
		};
	}
	if (r->nsegs > 1)
		qsort(r->segs, r->nsegs, sizeof(*r->segs), seg_cmp);
	for (size_t k = 0; k < r->nsegs; k++) {
		struct rstream *rr = &r->streams[r->segs[k].stream];

		if (!rr->seg_n)
			rr->seg_first = k;
		rr->seg_n++;
		describe(r, rr, &r->segs[k]); /* the last one wins: the newest */
	}
	for (uint32_t i = r->table_rings; i < r->info.stream_count; i++)
		r->streams[i].st.segments = (uint32_t)r->streams[i].seg_n;
	return 0;
}

int bb__rdr_scan_logs(struct bb_reader *r)
{
	return scan(r, false);
}

int bb__rdr_rescan_logs(struct bb_reader *r)
{
	return scan(r, true);
}

/*
 * bb__rdr_collect_log - collect the intact records of log ring @i, in
 * position order, segment after segment (FORMAT.md §13 "Reading a log"):
 * each segment by the rings' collect loop (bb__rdr_collect_extent(): the
 * same checks of every record, the resync after a corrupt one inside its
 * segment), and a hole wherever a
 * record does not start where the log's previous one ended: a segment
 * taken away from the log, or bytes that did not validate.  *@endp: where
 * a FOLLOW walk resumes.
 */
int bb__rdr_collect_log(struct bb_reader *r, uint32_t i, unsigned flags, bool alive,
			uint64_t *endp)
{
	struct rstream *rr = &r->streams[i];
	uint64_t expect = 0, end = 0;
	bool have_expect = false, have_end = false, hole = false, kept;
	int rc;

	*endp = rr->has_next ? rr->next : 0;
	if (!rr->seg_n)
		return 0;
	if ((flags & BB_WALK_FOLLOW) && rr->has_next) {
		expect = rr->next;
		have_expect = true;
		if (bb__pos_diff(r->segs[rr->seg_first].start, rr->next) > 0)
			rr->st.overwritten++; /* a gap since the last walk */
	}
	for (size_t k = rr->seg_first; k < rr->seg_first + rr->seg_n; k++) {
		const struct rseg *s = &r->segs[k];
		struct bb__extent v = {
			.desc = NULL, .size = r->seg_size, .max_record = r->info.max_record,
			.start = s->start, .own = &s->own, .own0 = s->own,
			.data = r->base + r->seg_data_off + (uint64_t)s->idx * r->seg_size,
		};
		uint64_t pos = s->start;
		bool last = k + 1 == rr->seg_first + rr->seg_n;

		/* a segment after a hole (segments taken away): the hole is
		 * the next kept record's gap_before; until one is kept, a
		 * FOLLOW walk must go on from before it */
		if (have_expect && bb__pos_diff(s->start, expect) > 0)
			hole = true;

		if (have_end && bb__pos_diff(end, s->start) > 0) {
			/* two segments of one log claim the same positions */
			rr->st.corrupt++;
			snprintf(rr->st.problem, sizeof(rr->st.problem),
				 "segment %" PRIu32 " starts at %" PRIu64 ", inside the segment "
				 "before it (to %" PRIu64 ")", s->idx, s->start, end);
			continue;
		}
		if ((flags & BB_WALK_FOLLOW) && rr->has_next &&
		    bb__pos_diff(rr->next, s->start) > 0) {
			if (bb__pos_diff(rr->next, s->head) >= 0) {
				end = s->head; /* delivered by an earlier walk */
				have_end = true;
				continue;
			}
			if (!(rr->next % 8))
				pos = rr->next;
		}
		rc = bb__rdr_collect_extent(r, i, &v, &pos, s->head, true, &expect, &have_expect,
					    &kept);
		if (kept)
			hole = false;
		if (rc)
			return rc;
		/* A dead owner's record busy at the head of its current
		 * segment is the write its death cut short (counted once). */
		if (last && !alive && BB_SEG_STATE(s->own) == BB_SEG_OPEN &&
		    s->head - s->start + 4 <= r->seg_size &&
		    bb__extent_seq(&v, s->head) == BB_SEQ_BUSY(s->head) &&
		    !(rr->torn_counted && rr->torn_head == s->head)) {
			rr->st.torn++;
			rr->torn_counted = true;
			rr->torn_head = s->head;
		}
		end = s->head;
		have_end = true;
	}
	*endp = hole ? expect : end;
	return 0;
}
