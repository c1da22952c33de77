/* SPDX-License-Identifier: MIT */
/*
 * segment.c - the segment allocator (format 3.0): a thread's first write
 * in a box (its slot, log and first segment), taking the next segment for
 * its log, and its exit.
 *
 * A thread writes its records into its log: a chain of segments taken as
 * it writes.  The fast path appends to the thread's current segment
 * through its window (struct bb__sink, <blackbox/inline.h>) with no
 * atomic instruction and nothing shared with another thread; only a full
 * segment comes here (bb__ring_make_room() on a window), for the next one.
 *
 * Who holds what.  A segment's owner word (own: state, generation, log
 * id) says whose it is: OPEN, the current segment of its log (written,
 * never taken), or SEALED (its log moved on, or its thread exited: it may
 * be taken).  A thread slot's queue word names its log's oldest segment
 * and that segment's ordinal; the log's segments follow by next up to
 * the current one.  Only the log's thread appends (it links the old
 * current to the new one, then seals the old one with release); anyone
 * pops the oldest with one compare-and-swap of the queue word, which is
 * what makes a popped segment theirs: two threads popping, or a thread
 * popping while the owner recycles its own oldest, never both win.  The
 * ordinal in the queue word changes with every pop, so a stale value
 * never matches (no ABA short of 2^32 pops of one slot).  The current
 * segment is never popped: it is OPEN, and a pop takes only a SEALED one.
 *
 * Taking a segment: the free pool (segments never used, a bump counter)
 * first; else a thread holding 2 or more recycles its own oldest (no
 * contention: its queue is its own); else it steals the oldest segment of
 * the log holding the most: an exited thread's (any), or a live one's that
 * would keep more than the thief (so a live thread keeps its current and
 * previous segment against any thread holding one); else a thread with a
 * segment starts it over in place (its history lost, counted); a thread
 * with none writes to the shared ring (counted).  docs/DESIGN.md §10 says
 * why.
 *
 * Handing a segment over (bb__seg_use()) is a seqlock write: the owner
 * word goes CLAIMING with the next generation, a release fence, the
 * descriptor's start, head and names, the owner word OPEN with release,
 * and only then the first record.  A reader compares the owner word
 * before and after its copy (ring.h, reader_snapshot.c).
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>

#include <blackbox/format.h>

#include "barrier.h"
#include "segment.h"
#include "writer.h"

/* How many segments the log of slot @s holds: its current ordinal less its
 * oldest's, plus one (0: none).  A snapshot of two words: a guide for
 * choosing, never trusted for ownership. */
static uint32_t bb__slot_held(const struct bb_thread_slot *s)
{
	/* Acquire pairs with the release of the compare-and-swap that last
	 * popped from the queue (or the owner's first push): cur_ord is then
	 * at least as new as that pop's view. */
	uint64_t q = BB__LOAD_ACQUIRE(&s->queue);

	if (BB_QUEUE_IDX(q) == BB_SEG_NONE)
		return 0;
	return BB__LOAD_RELAXED(&s->cur_ord) - BB_QUEUE_ORD(q) + 1;
}

/*
 * bb__seg_records - the records of segment @o (log positions [@start,
 * @head)), walked by their lengths: their count, and in *@keep the offset
 * of the newest one of at most BB_LAST_WORDS_DATA bytes (UINT32_MAX:
 * none).  The segment is the caller's (popped, or its own current): its
 * bytes do not change under the walk, but they are memory a crashing
 * process may have scribbled on, so a length that makes no sense ends it.
 */
static uint64_t bb__seg_records(const struct bb__box *box, uint32_t o, uint64_t start,
				uint64_t head, uint32_t *keep)
{
	const uint8_t *d = box->segdata + (size_t)o * box->seg_size;
	uint64_t end = head - start, off = 0, n = 0;

	*keep = UINT32_MAX;
	if (end > box->seg_size)
		end = box->seg_size;
	while (off + BB_RECORD_HDR_SIZE <= end) {
		uint16_t len;
		uint64_t stride;

		memcpy(&len, d + off + 4, sizeof(len));
		stride = BB_RECORD_STRIDE(len);
		if (len < BB_RECORD_HDR_SIZE || off + stride > end)
			break;
		if (stride <= BB_LAST_WORDS_DATA)
			*keep = (uint32_t)off;
		n++;
		off += stride;
	}
	return n;
}

void bb__seg_leave(struct bb__box *box, struct bb_thread_slot *s, uint32_t o,
		   struct bb_last_words *lw, uint32_t gen, uint32_t log)
{
	const struct bb_seg_desc *d = bb__seg(box, o);
	/* Relaxed: the pop's acquire load of the SEALED word ordered them. */
	uint64_t start = BB__LOAD_RELAXED(&d->start), head = BB__LOAD_RELAXED(&d->head);
	uint32_t keep;
	uint64_t n = bb__seg_records(box, o, start, head, &keep), kept = 0;

	if (lw && keep != UINT32_MAX) {
		const uint8_t *rec = box->segdata + (size_t)o * box->seg_size + keep;
		uint16_t len;

		memcpy(&len, rec + 4, sizeof(len));
		/* Orders the CLAIMING word (the pop's compare-and-swap) before
		 * the entry's bytes.  Pairs with the reader's acquire fence
		 * before it reads the owner word again (reader_logs.c), as a
		 * segment's hand-over does. */
		BB__FENCE_RELEASE();
		BB__STORE_RELAXED(&lw->start, start + keep);
		BB__STORE_RELAXED(&lw->head, start + keep + BB_RECORD_STRIDE(len));
		memcpy(lw->data, rec, BB_RECORD_STRIDE(len));
		kept = 1;
	}
	/* Statistics for readers, and what a reused slot hands on to the
	 * header (bb__seg_join()): counted before the entry is released, so
	 * a joiner that sees it SEALED or FREE sees this count too. */
	if (n > kept)
		BB__FETCH_ADD(&s->recycled, n - kept);
	if (lw) {
		/* Release: a reader (or a joiner) that loads SEALED with
		 * acquire sees the record above; FREE: nothing kept. */
		BB__STORE_RELEASE(&lw->own, kept ? BB_SEG_OWN(BB_SEG_SEALED, gen, log)
						 : BB_SEG_OWN(BB_SEG_FREE, gen, 0));
		BB__FETCH_SUB(&box->retired, 1);
	}
}

/*
 * bb__seg_victim - the thread slot to take a segment from, for a thread
 * holding @held: an exited thread's log first (the oldest log: its
 * records are the oldest), else the live log holding the most when it
 * holds at least @held + 2 (it keeps more than we will have, and always
 * its current segment).  BB_SEG_NONE: none.  A scan of the slots ever
 * claimed, on a path taken once per segment at most.
 */
static uint32_t bb__seg_victim(struct bb__box *box, struct bb__tls *t, uint32_t held)
{
	uint32_t best = BB_SEG_NONE, best_n = 0, best_log = 0, hi;
	bool best_exited = false;

	hi = BB__LOAD_RELAXED(&box->slots_hi);
	if (hi > box->nslots)
		hi = box->nslots;
	for (uint32_t k = 0; k < hi; k++) {
		struct bb_thread_slot *s = &box->slots[k];
		uint32_t claim = BB__LOAD_RELAXED(&s->claim), n, log;
		bool exited = claim == BB_RING_RETIRED;

		if (k == t->slot || (claim != BB_RING_OWNED && !exited))
			continue;
		n = bb__slot_held(s);
		if (n > box->nsegs || !n || (!exited && n < held + 2))
			continue;
		log = BB__LOAD_RELAXED(&s->log);
		if (exited ? !best_exited || log < best_log : !best_exited && n > best_n) {
			best = k;
			best_n = n;
			best_log = log;
			best_exited = exited;
		}
	}
	return best;
}

/* Segment changes a thread makes from its own log, after a look for a
 * richer one found none, before it looks again. */
#define BB__SEG_CALM 8u

/*
 * bb__seg_next - the next segment for this thread's log, whose current
 * one is @c (BB_SEG_NONE: none yet), from log position @start: the free
 * pool; then an exited thread's log, oldest first (down to its last
 * segment, whose newest record stays as its last words); then a live
 * log holding at least 2 more than we do; then our own oldest (when it is
 * not @c: we hold 2 or more); then @c over again.  Returns false (nothing
 * changed) when there is nothing to take and no @c.  Counters:
 * statistics, relaxed.
 */
__attribute__((noinline))
bool bb__seg_next(struct bb__box *box, struct bb__tls *t, uint32_t c, uint64_t start)
{
	struct bb_thread_slot *s = &box->slots[t->slot];
	uint32_t ord = c == BB_SEG_NONE ? BB_QUEUE_ORD(BB__LOAD_RELAXED(&s->queue)) : t->ord + 1;
	uint32_t i, held = bb__slot_held(s);
	uint64_t own = 0;

	/* The pool: never-used segments, handed out once each.  Relaxed:
	 * the counter orders nothing (a fresh segment is all zeros); the
	 * load first keeps a drained pool from counting past the end. */
	if (bb_unlikely(BB__LOAD_RELAXED(&box->hdr->seg_next) < box->nsegs)) {
		uint64_t k = BB__FETCH_ADD(&box->hdr->seg_next, 1);

		if (k < box->nsegs) {
			bb__seg_use(box, t, c, (uint32_t)k, 0, start, ord);
			return true;
		}
	}
	/* Another log: some rounds, since other threads may pop first (the
	 * oldest exited log is everyone's first choice). */
	if (BB__LOAD_RELAXED(&box->retired) || !t->calm) {
		for (int round = 0; round < 32; round++) {
			uint32_t k = bb__seg_victim(box, t, held);

			if (k == BB_SEG_NONE) {
				t->calm = BB__SEG_CALM;
				break;
			}
			i = bb__seg_pop(box, &box->slots[k],
					BB__LOAD_ACQUIRE(&box->slots[k].queue), &own);
			if (i != BB_SEG_NONE) {
				BB__FETCH_ADD(&box->hdr->seg_stolen, 1);
				bb__seg_use(box, t, c, i, own, start, ord);
				return true;
			}
		}
	} else {
		t->calm--;
	}
	/* Our own oldest, unless it is our current one.  Acquire: see
	 * bb__seg_pop(). */
	for (int tries = 0; c != BB_SEG_NONE && tries < 8; tries++) {
		uint64_t q = BB__LOAD_ACQUIRE(&s->queue);

		if (BB_QUEUE_IDX(q) == c)
			break;
		i = bb__seg_pop(box, s, q, &own);
		if (bb_likely(i != BB_SEG_NONE)) {
			bb__seg_use(box, t, c, i, own, start, ord);
			return true;
		}
	}
	if (c == BB_SEG_NONE)
		return false;
	/* Nothing to take: start our own segment over, its records counted
	 * as recycled (it is ours: nobody else writes or takes it). */
	{
		const struct bb_seg_desc *d = bb__seg(box, c);
		uint32_t keep;
		uint64_t n = bb__seg_records(box, c, BB__LOAD_RELAXED(&d->start), start, &keep);

		if (n)
			BB__FETCH_ADD(&s->recycled, n);
	}
	BB__FETCH_ADD(&box->hdr->seg_restarted, 1);
	bb__seg_use(box, t, c, c, t->own, start, t->ord);
	return true;
}

/*
 * bb__slot_free - may a joining thread take slot @k, and how old is what
 * it would drop?  FREE: yes, nothing (returns 0).  RETIRED with an empty
 * log whose last words are not being written: yes, returns its log id
 * (the older, the better to drop).  Else UINT32_MAX.
 */
static uint32_t bb__slot_free(struct bb__box *box, uint32_t k)
{
	struct bb_thread_slot *s = &box->slots[k];
	uint32_t claim = BB__LOAD_RELAXED(&s->claim);

	if (claim == BB_RING_FREE)
		return 0;
	/* Acquire (both): after the last pop's compare-and-swap, and after
	 * the last words' writer (bb__seg_leave()): a CLAIMING entry is
	 * still being written. */
	if (claim != BB_RING_RETIRED || bb__slot_held(s) ||
	    BB_SEG_STATE(BB__LOAD_ACQUIRE(&box->lw[k].own)) == BB_SEG_CLAIMING)
		return UINT32_MAX;
	return BB__LOAD_RELAXED(&s->log) | 1u;
}

/*
 * bb__seg_join - this thread's first write in this box: a thread slot (a
 * free one, else the exited thread's whose log holds no segment and is the
 * oldest: its last words and counts leave the box, counted in the header's
 * recycled_gone), a log id and a first segment.  Returns its window, or
 * NULL (no slot, or no segment: the shared ring, counted in the header's
 * overflow).  The slot's fields other than claim and queue describe the
 * thread to readers.
 */
struct bb__sink *bb__seg_join(struct bb__box *box, struct bb__tls *t)
{
	uint32_t slot = BB_SEG_NONE, log, hi;
	struct bb_thread_slot *s;

	if (!t->named) {
		prctl(PR_GET_NAME, t->name, 0, 0, 0);
		t->name[15] = '\0';
		t->named = true;
	}
	for (int round = 0; round < 4 && slot == BB_SEG_NONE; round++) {
		uint32_t best = BB_SEG_NONE, best_age = UINT32_MAX;

		for (uint32_t k = 0; k < box->nslots; k++) {
			uint32_t age = bb__slot_free(box, k);

			if (age < best_age) {
				best = k;
				best_age = age;
				if (!age)
					break;
			}
		}
		if (best == BB_SEG_NONE)
			break;
		{
			uint32_t claim = best_age ? BB_RING_RETIRED : BB_RING_FREE;

			/* Acquire: after the previous holder's last stores. */
			if (BB__CAS_ACQUIRE(&box->slots[best].claim, &claim, (uint32_t)BB_RING_OWNED))
				slot = best;
		}
	}
	if (slot == BB_SEG_NONE)
		return NULL;
	s = &box->slots[slot];
	if (BB__LOAD_RELAXED(&s->log)) {
		/* The exited log leaves the box: its last words first (so a
		 * reader never counts them twice), then its counts. */
		struct bb_last_words *lw = &box->lw[slot];
		uint64_t w = BB__LOAD_RELAXED(&lw->own);
		uint64_t gone = BB__EXCHANGE(&s->recycled, 0);

		if (BB_SEG_STATE(w) == BB_SEG_SEALED)
			gone++;
		/* Release: a reader that sees FREE drops the entry. */
		BB__STORE_RELEASE(&lw->own, BB_SEG_OWN(BB_SEG_FREE, BB_SEG_GEN(w) + 1, 0));
		if (gone)
			BB__FETCH_ADD(&box->hdr->recycled_gone, gone);
		BB__FETCH_ADD(&box->hdr->logs_gone, 1);
	}
	hi = BB__LOAD_RELAXED(&box->slots_hi);
	while (hi <= slot && !BB__CAS_RELAXED(&box->slots_hi, &hi, slot + 1))
		;
	log = (uint32_t)(BB__FETCH_ADD(&box->hdr->log_next, 1) + 1);
	if (!log) /* 2^32 threads later: 0 means none */
		log = (uint32_t)(BB__FETCH_ADD(&box->hdr->log_next, 1) + 1);
	t->slot = slot;
	t->log = log;
	t->seg = BB_SEG_NONE;
	t->own = 0;
	t->calm = 0;
	box->windows[slot].mask = BB__WINDOW_MASK;
	box->windows[slot].segmask = UINT64_MAX;
	box->windows[slot].desc = NULL;
	box->windows[slot].box = box;
	BB__STORE_RELAXED(&s->log, log);
	BB__STORE_RELAXED(&s->tid, t->tid);
	BB__STORE_RELAXED(&s->current, BB_SEG_NONE);
	memcpy(s->thread_name, t->name, sizeof(s->thread_name));
	if (!bb__seg_next(box, t, BB_SEG_NONE, 0)) {
		/* Release: the next thread to claim the slot starts after us. */
		BB__STORE_RELEASE(&s->claim, (uint32_t)BB_RING_RETIRED);
		t->slot = BB_SEG_NONE;
		return NULL;
	}
	/* Crash handler on: this thread gets an alternate signal stack (an
	 * mmap; the first write is the slow path), freed by
	 * bb__thread_exit(). */
	(void)bb__crash_thread_start(t);
	bb__thread_watch(box);
	t->f.window = &box->windows[slot];
	return t->f.window;
}

/* Thread exit: our current segment SEALED (it may be taken from now on),
 * our slot RETIRED.  Release: a popper or a joiner that reads either with
 * acquire sees our last stores.  The log now holds segments nobody
 * writes: counted in the box's retired hint until its last one goes. */
void bb__seg_exit(struct bb__box *box, struct bb__tls *t)
{
	struct bb_seg_desc *d = bb__seg(box, t->seg);

	BB__FETCH_ADD(&box->retired, 1);
	BB__STORE_RELEASE(&d->own, BB_SEG_OWN(BB_SEG_SEALED, BB_SEG_GEN(t->own), t->log));
	BB__STORE_RELEASE(&box->slots[t->slot].claim, (uint32_t)BB_RING_RETIRED);
	t->slot = BB_SEG_NONE;
}
