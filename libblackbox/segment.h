/* SPDX-License-Identifier: MIT */
/*
 * segment.h - the segment allocator's pieces the write slow paths inline
 * (docs/FORMAT.md §13, docs/DESIGN.md §3).  Internal, do not use outside
 * the library.  The allocator itself, and what its words mean, is
 * segment.c.
 */
#ifndef BB_SEGMENT_H
#define BB_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/format.h>

#include "barrier.h"
#include "writer.h"

/* Segment @i's descriptor. */
static inline struct bb_seg_desc *bb__seg(struct bb__box *box, uint32_t i)
{
	return &box->segs[i];
}

/*
 * bb__seg_leave - segment @o just left the log of slot @s (the caller won
 * the pop): count its records in the slot's recycled, and when @lw is not
 * NULL (it was the last segment of an exited thread's log, and the caller
 * set *@lw CLAIMING with generation @gen) keep the newest record that
 * fits as the log's last words.  Out of line, in segment.c.
 */
void bb__seg_leave(struct bb__box *box, struct bb_thread_slot *s, uint32_t o,
		   struct bb_last_words *lw, uint32_t gen, uint32_t log);

/*
 * bb__seg_pop - pop the oldest segment of slot @s's log, whose queue word
 * the caller loaded with acquire as @q (the acquire pairs with the release
 * of the pop, a compare-and-swap, or the owner's first push, that stored
 * it: the segment it names had become the log's, and was OPEN at least,
 * before).  Returns its index, and its owner word in *@own, or
 * BB_SEG_NONE when it may not be taken (it is the log's current one) or
 * another thread popped first.  The segment is then the caller's alone:
 * no queue names it any more; its records are counted as recycled, and
 * when it was an exited thread's last, that thread's newest record is
 * kept in its slot's last words first (bb__seg_leave()).
 */
static inline __attribute__((always_inline))
uint32_t bb__seg_pop(struct bb__box *box, struct bb_thread_slot *s, uint64_t q, uint64_t *own)
{
	const uint32_t nsegs = box->nsegs;
	struct bb_seg_desc *const segs = box->segs;
	struct bb_last_words *lw = NULL;
	uint32_t o = BB_QUEUE_IDX(q), m, gen = 0;
	uint64_t w, lw0 = 0;

	if (o >= nsegs)
		return BB_SEG_NONE;
	/* Acquire: pairs with the owner's release store of SEALED, which
	 * follows its store of next (bb__seg_use()). */
	w = BB__LOAD_ACQUIRE(&segs[o].own);
	if (BB_SEG_STATE(w) != BB_SEG_SEALED || BB_SEG_LOG(w) != BB__LOAD_RELAXED(&s->log))
		return BB_SEG_NONE;
	m = BB__LOAD_RELAXED(&segs[o].next);
	if (bb_unlikely(m >= nsegs)) {
		/* The last segment of an exited thread's log (a live log's
		 * newest is OPEN, never popped).  Claim its last words entry
		 * first (a compare-and-swap to CLAIMING, acquire: after the
		 * previous writer of the entry): a thread that would reuse the
		 * slot once the queue is empty sees CLAIMING and leaves it
		 * (bb__seg_join()). */
		lw = &box->lw[s - box->slots];
		lw0 = BB__LOAD_ACQUIRE(&lw->own);
		gen = BB_SEG_GEN(lw0) + 1;
		if (BB_SEG_STATE(lw0) == BB_SEG_CLAIMING ||
		    !BB__CAS_ACQUIRE(&lw->own, &lw0, BB_SEG_OWN(BB_SEG_CLAIMING, gen, BB_SEG_LOG(w))))
			return BB_SEG_NONE;
		m = BB_SEG_NONE;
	}
	/* Acquire and release: the winner owns o (acquire: after the owner's
	 * last stores to it), and the next popper, whose acquire load reads
	 * the new word, sees what we saw of m (release).  A stale q (another
	 * pop since) fails. */
	if (!BB__CAS_ACQ_REL(&s->queue, &q, BB_QUEUE(m, BB_QUEUE_ORD(q) + 1))) {
		if (lw) /* release: nothing of ours to publish; the entry as it was */
			BB__STORE_RELEASE(&lw->own, lw0);
		return BB_SEG_NONE;
	}
	bb__seg_leave(box, s, o, lw, gen, BB_SEG_LOG(w));
	*own = w;
	return o;
}

/*
 * bb__seg_use - hand segment @i (owner word @own, ours: from the pool or a
 * pop, or our own current @c over again) to this thread's log at log
 * position @start, ordinal @ord; make it the current one; point the window
 * at it.
 *
 * The hand-over is a seqlock write (see above): the CLAIMING word, a
 * release fence, the descriptor, the OPEN word with release.  A reader
 * that copied any byte we write from the fence on sees the new word after
 * its acquire fence, and drops the copy.  Then the link: the old current
 * @c gets next = i, then is SEALED with release (it may be taken from then
 * on: a popper's acquire load of the SEALED word sees next); without one
 * (the log's first) the queue names i, with release (a popper's acquire
 * load sees i OPEN).  The window: data + pos is the record at pos (the
 * segment's bytes less @start), and a record fits while it ends inside
 * the segment (<blackbox/inline.h>).
 */
static inline __attribute__((always_inline))
void bb__seg_use(struct bb__box *box, struct bb__tls *t, uint32_t c, uint32_t i,
		 uint64_t own, uint64_t start, uint32_t ord)
{
	/* The thread's fields in registers: the stores below could alias
	 * them as far as the compiler knows. */
	const uint32_t log = t->log, slot = t->slot;
	const uint64_t cur = t->own;
	struct bb_seg_desc *d = bb__seg(box, i);
	struct bb_thread_slot *s = &box->slots[slot];
	struct bb__sink *w = &box->windows[slot];
	uint32_t gen = BB_SEG_GEN(own) + 1;
	uint64_t open = BB_SEG_OWN(BB_SEG_OPEN, gen, log);

	BB__STORE_RELAXED(&d->own, BB_SEG_OWN(BB_SEG_CLAIMING, gen, log));
	/* Orders the CLAIMING word before every store below, the records
	 * included.  Pairs with a reader's acquire fence before it reads the
	 * owner word again (ring.h bb__extent_read(), reader_snapshot.c). */
	BB__FENCE_RELEASE();
	BB__STORE_RELAXED(&d->start, start);
	BB__STORE_RELAXED(&d->head, start);
	BB__STORE_RELAXED(&d->ord, ord);
	BB__STORE_RELAXED(&d->next, BB_SEG_NONE);
	if (BB_SEG_LOG(own) != log) {
		/* not one of our own: say whose it is now (descriptive,
		 * under the seqlock like the rest) */
		BB__STORE_RELAXED(&d->tid, t->tid);
		BB__STORE_RELAXED(&d->slot, slot);
		memcpy(d->thread_name, t->name, sizeof(d->thread_name));
	}
	/* Release: a reader (or a popper) that loads OPEN with acquire sees
	 * the descriptor above. */
	BB__STORE_RELEASE(&d->own, open);
	if (c != i) {
		BB__STORE_RELAXED(&s->cur_ord, ord);
		BB__STORE_RELAXED(&s->current, i);
		if (c == BB_SEG_NONE) {
			BB__STORE_RELEASE(&s->queue, BB_QUEUE(i, ord));
		} else {
			struct bb_seg_desc *o = bb__seg(box, c);

			BB__STORE_RELAXED(&o->next, i);
			BB__STORE_RELEASE(&o->own, BB_SEG_OWN(BB_SEG_SEALED, BB_SEG_GEN(cur), log));
		}
	}
	t->seg = i;
	t->ord = ord;
	t->own = open;
	w->pub = &d->head;
	w->data = (uint8_t *)((uintptr_t)(box->segdata + (size_t)i * box->seg_size) -
			      (uintptr_t)start);
	w->head = start;
	w->tail = start + box->seg_size - (BB__WINDOW_MASK + 1);
}

/*
 * The allocator's entry points (segment.c): bb__seg_next() takes the next
 * segment for a log, bb__seg_join() is a thread's first write in a box,
 * bb__seg_exit() its exit.  Each says what it returns.  AS-safe, no lock,
 * no system call, except bb__seg_join() (prctl(), and the crash handler's
 * alternate stack: a thread's first write).
 */
bool bb__seg_next(struct bb__box *box, struct bb__tls *t, uint32_t c, uint64_t start);
struct bb__sink *bb__seg_join(struct bb__box *box, struct bb__tls *t);
void bb__seg_exit(struct bb__box *box, struct bb__tls *t);

#endif
