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
 * bb__seg_steal - pop the oldest segment of the log that holds the most,
 * for a thread holding @held: an exited thread's log (any segment of it),
 * or a live one's holding at least @held + 2 (it keeps more than we will
 * have); ties go to the exited.  A few rounds, since another thread may
 * pop first.  BB_SEG_NONE when nothing may be taken.
 */
static uint32_t bb__seg_steal(struct bb__box *box, struct bb__tls *t, uint32_t held,
			      uint64_t *own)
{
	for (int round = 0; round < 4; round++) {
		uint32_t best = BB_SEG_NONE, best_n = 0, i;
		bool best_exited = false;

		for (uint32_t k = 0; k < box->nslots; k++) {
			struct bb_thread_slot *s = &box->slots[k];
			uint32_t claim = BB__LOAD_RELAXED(&s->claim), n;
			bool exited = claim == BB_RING_RETIRED;

			if (k == t->slot || (claim != BB_RING_OWNED && !exited))
				continue;
			n = bb__slot_held(s);
			if (n > box->nsegs || !n || (!exited && n < held + 2))
				continue;
			if (n > best_n || (n == best_n && exited && !best_exited)) {
				best = k;
				best_n = n;
				best_exited = exited;
			}
		}
		if (best == BB_SEG_NONE)
			return BB_SEG_NONE;
		i = bb__seg_pop(box, &box->slots[best], BB__LOAD_ACQUIRE(&box->slots[best].queue),
				own);
		if (i != BB_SEG_NONE)
			return i;
	}
	return BB_SEG_NONE;
}

/*
 * bb__seg_next - the next segment for this thread's log, whose current
 * one is @c (BB_SEG_NONE: none yet), from log position @start: the free
 * pool, then our own oldest (when it is not @c: we hold 2 or more), then
 * a steal, then @c over again.  Returns false (nothing changed) when
 * there is nothing to take and no @c.  Counters: statistics, relaxed.
 */
__attribute__((noinline))
bool bb__seg_next(struct bb__box *box, struct bb__tls *t, uint32_t c, uint64_t start)
{
	struct bb_thread_slot *s = &box->slots[t->slot];
	uint32_t ord = c == BB_SEG_NONE ? BB_QUEUE_ORD(BB__LOAD_RELAXED(&s->queue)) : t->ord + 1;
	uint32_t i, held = c == BB_SEG_NONE ? 0 : 1;
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
		held = 2; /* we held more, and someone took our oldest */
	}
	if (held == 2)
		held = bb__slot_held(s);
	i = bb__seg_steal(box, t, held, &own);
	if (i != BB_SEG_NONE) {
		BB__FETCH_ADD(&box->hdr->seg_stolen, 1);
		bb__seg_use(box, t, c, i, own, start, ord);
		return true;
	}
	if (c == BB_SEG_NONE)
		return false;
	/* Nothing to take: start our own segment over. */
	BB__FETCH_ADD(&box->hdr->seg_restarted, 1);
	bb__seg_use(box, t, c, c, t->own, start, t->ord);
	return true;
}

/*
 * bb__seg_join - this thread's first write in this box: a thread slot (a
 * free one, or an exited thread's whose log holds nothing), a log id and
 * a first segment.  Returns its window, or NULL (no slot, or no segment:
 * the shared ring, counted in the header's overflow).  The slot's fields
 * other than claim and queue describe the thread to readers.
 */
struct bb__sink *bb__seg_join(struct bb__box *box, struct bb__tls *t)
{
	uint32_t slot = BB_SEG_NONE, log;
	struct bb_thread_slot *s;

	if (!t->named) {
		prctl(PR_GET_NAME, t->name, 0, 0, 0);
		t->name[15] = '\0';
		t->named = true;
	}
	for (uint32_t k = 0; k < box->nslots && slot == BB_SEG_NONE; k++) {
		uint32_t claim = BB__LOAD_RELAXED(&box->slots[k].claim);

		/* Acquire: after the previous holder's last stores (its
		 * release store of RETIRED).  A retired slot is free once its
		 * log holds nothing; nobody pops an empty queue, and only an
		 * owner pushes, so it stays empty. */
		if ((claim == BB_RING_FREE ||
		     (claim == BB_RING_RETIRED && !bb__slot_held(&box->slots[k]))) &&
		    BB__CAS_ACQUIRE(&box->slots[k].claim, &claim, (uint32_t)BB_RING_OWNED))
			slot = k;
	}
	if (slot == BB_SEG_NONE)
		return NULL;
	s = &box->slots[slot];
	log = (uint32_t)(BB__FETCH_ADD(&box->hdr->log_next, 1) + 1);
	if (!log) /* 2^32 threads later: 0 means none */
		log = (uint32_t)(BB__FETCH_ADD(&box->hdr->log_next, 1) + 1);
	t->slot = slot;
	t->log = log;
	t->seg = BB_SEG_NONE;
	t->own = 0;
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
 * acquire sees our last stores. */
void bb__seg_exit(struct bb__box *box, struct bb__tls *t)
{
	struct bb_seg_desc *d = bb__seg(box, t->seg);

	BB__STORE_RELEASE(&d->own, BB_SEG_OWN(BB_SEG_SEALED, BB_SEG_GEN(t->own), t->log));
	BB__STORE_RELEASE(&box->slots[t->slot].claim, (uint32_t)BB_RING_RETIRED);
	t->slot = BB_SEG_NONE;
}
