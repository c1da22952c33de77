/* SPDX-License-Identifier: MIT */
/*
 * writer.h - the writer side of a box: process-local state and the per-record
 * seqlock write protocol (docs/DESIGN.md §3).  Internal, do not use.
 *
 * One-writer contract: a segment is written only by the thread whose
 * window is on it (and, nested, never: a write that interrupts another
 * write on the same thread goes to the shared ring); the shared and the
 * important ring only by the holder of their lock word.  Nothing here takes a lock that can be held by
 * interrupted code, calls malloc, or makes a system call.
 */
#ifndef BB_WRITER_H
#define BB_WRITER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <blackbox.h>
#include <blackbox/format.h>

#include "barrier.h"
#include "clock.h"
#include "crc32c.h"
#include "internal.h"

/*
 * struct bb__sink (one ring as its writer sees it), struct bb__fast_box,
 * struct bb__fast_tls, the BB__CRC_* modes and the seqlock write
 * primitives are in <blackbox/inline.h>: the inline paths of the kv
 * writers compiled into applications use them too, so they are ABI
 * ("fast path v1", explained there).  The structs below begin with the
 * fast-path parts (static assertions in box.c).
 */

/*
 * The ring table of a 3.0 box: rings[0] is the shared ring (nested writes,
 * and threads that got no segment), rings[1] the important ring (copies of
 * important records, FORMAT.md §11).  Both are serialised by their lock
 * word.  Every other write goes to its thread's window on a segment.
 */
#define BB__RINGS            2u
#define BB__SHARED_IDX       0u
#define BB__IMPORTANT_IDX    1u

/* State table and module area sizes (FORMAT.md §11; bounds in blackbox.h). */
#define BB__STATE_SLOTS      64u
#define BB__STATE_SLOT_SIZE  256u
#define BB__MODULES_SIZE     (16u << 10)

/* Mark segments per ring of at least BB__MARK_RING_MIN bytes
 * (<blackbox/inline.h>): a mark segment is ring_size / BB__MARKS bytes. */
#define BB__MARKS            64u

struct bb__box {
	/* First, ABI: gen, clock, tsc, crc, rflags, trailer, room; chosen at
	 * bb_init() (bb__writer_setup()), read on every write. */
	struct bb__fast_box f;
	struct bb_header *hdr;     /* header, tables, state table, module area */
	size_t hdr_map_len;
	uint8_t *reserve;          /* PROT_NONE reservation holding both rings */
	size_t reserve_len;
	uint64_t ring_size;        /* of the shared and the important ring */
	uint32_t max_record;
	pid_t pid;                 /* the process that created it */
	bool keep_on_exit;
	bool shm;                  /* POSIX shm (shm_unlink) or a file in a directory */
	char name[96];
	char path[PATH_MAX];
	uint8_t *state;            /* state table: BB__STATE_SLOTS slots */
	uint8_t *modules;          /* module area: BB__MODULES_SIZE bytes */
	uint8_t *stacks;           /* crash slots: nstacks of BB_CRASH_SLOT_SIZE */
	uint32_t nstacks;
	/* Segments (FORMAT.md §13, segment.c): the tables in the
	 * header mapping, the data mapped once (records never span
	 * segments), and one window per thread slot, the struct bb__sink
	 * its thread writes through (process-local). */
	struct bb_seg_desc *segs;
	struct bb_thread_slot *slots;
	struct bb_last_words *lw;  /* last words, one per thread slot (3.2) */
	uint8_t *segdata;
	size_t segdata_len;
	uint32_t nsegs, seg_size, nslots;
	struct bb__sink *windows;
	/* Hints for choosing where a segment comes from (segment.c),
	 * process-local, relaxed atomics, never trusted for ownership:
	 * one past the highest thread slot ever claimed (slots_hi), and
	 * how many exited threads' logs still hold segments (retired). */
	uint32_t slots_hi;
	uint32_t retired;
	/* Mark segments of each ring (bb__ring_mark(), box.c): where the
	 * first record of a mark segment starts, BB__MARKS per ring, indexed
	 * by mark segment number modulo BB__MARKS.  Process-local, in the
	 * same allocation as the box, plain loads and stores: read and
	 * written only by the ring's one writer under its lock, whose
	 * acquire CAS and release unlock order them between holders. */
	uint64_t *marks;
	struct bb__sink rings[BB__RINGS];
};

/* Per-thread state.  initial-exec TLS: one %fs-relative access, no call. */
struct bb__tls {
	struct bb__fast_tls f;     /* first, ABI: ring, gen, depth */
	int32_t tid;               /* cached gettid() */
	bool exited;               /* TLS destructor ran: shared ring from now on */
	bool named;                /* name holds PR_GET_NAME */
	void *altstack;            /* crash handler's alternate signal stack (crash.c) */
	uint32_t slot;             /* its thread slot (f.gen's box), BB_SEG_NONE */
	uint32_t log;              /* its log id */
	uint32_t seg;              /* its current segment */
	uint32_t ord;              /* its ordinal */
	uint64_t own;              /* its owner word (OPEN), as we stored it */
	uint32_t retry;            /* shared-ring writes since it last tried for a segment */
	uint32_t calm;             /* segments to take from its own log before it
	                            * looks for a richer one again (segment.c) */
	char name[16];             /* its name when it first wrote (PR_GET_NAME) */
};

/* bb__box (NULL: no box, see bb__nobox()) and bb__tls are declared in
 * <blackbox/inline.h>, under their versioned symbol names. */

/* Slow paths, out of line (box.c).  bb__begin_slow() returns the ring
 * (the shared ring, locked, is &box->rings[BB__SHARED_IDX]) or NULL for -EBUSY:
 * returning it, rather than storing through a pointer into struct bb__w,
 * lets the compiler keep the caller's struct bb__w in registers. */
int bb__nobox(void);
/* BLACKBOX_DISABLE=1 or the fork policy turned recording off (box.c);
 * a plain load: AS-safe. */
bool bb__disabled(void);
struct bb__sink *bb__begin_slow(struct bb__box *box, struct bb__tls *t);
void bb__end_shared(struct bb__box *box, struct bb__tls *t);
/* Arm the thread-exit hook for this thread (box.c; pthread_setspecific(),
 * not AS-safe: a thread's first write). */
void bb__thread_watch(struct bb__box *box);

/* Configuration at bb_init() (write.c; not AS-safe). */
int bb__writer_env(struct bb_options *o);
void bb__writer_setup(struct bb__box *box, const struct bb_options *o);

/*
 * bb__ring_trylock - the bounded try-lock of a locked ring (the shared and
 * the important ring): CAS the ring's lock word from 0 to @tid, spinning at
 * most 128 times.  Returns 1 when locked, 0 when this thread already holds
 * it (a signal handler interrupted its own locked write: waiting would
 * deadlock), -1 when another thread kept it through the spin.  Nothing ever
 * waits longer: a caller that does not get the lock drops and counts.
 * Acquire pairs with the holder's release store of 0 when it unlocks: we
 * continue from its head and tail (process-local copies and descriptor).
 */
static inline int bb__ring_trylock(int32_t *lock, int32_t tid)
{
	for (int spin = 0; spin < 128; spin++) {
		int32_t expect = 0;

		if (BB__CAS_ACQUIRE(lock, &expect, tid))
			return 1;
		if (expect == tid)
			return 0;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#endif
	}
	return -1;
}

/* A write in progress. */
struct bb__w {
	struct bb__box *box;
	struct bb__sink *r;
	uint8_t *rec;
	uint64_t pos;
	uint32_t len;
	uint32_t room;             /* bytes available for the value */
	uint8_t flags;             /* record flags besides box->f.rflags, which
	                            * bb__seal() adds: loaded there rather than
	                            * kept live across the encoding (a spill
	                            * and a reload on the fast path) */
	bool shared;
};

/*
 * bb__begin - pick the ring for this write and enter the nesting section.
 * Returns true (then bb__leave() must follow, or bb__commit(), which calls
 * it), or false with a negative errno / 0-for-disabled in *ret.
 */
static inline bool bb__begin(struct bb__w *w, int *ret)
{
	/* Acquire pairs with the release store publishing the box in
	 * bb_init(): the box struct is complete before we use it. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	struct bb__tls *t = &bb__tls;
	uint32_t depth;

	if (bb_unlikely(!box)) {
		/* Disabled (0), no box (-ENODEV), or the child of a fork that
		 * just created its own box (-EAGAIN: take it). */
		*ret = bb__nobox();
		if (*ret != -EAGAIN)
			return false;
		box = BB__LOAD_ACQUIRE(&bb__box);
		if (!box) {
			*ret = -ENODEV;
			return false;
		}
	}
	w->box = box;
	/* depth + 1 kept in a register: testing t->f.depth again would reload
	 * what we just stored, a store-to-load forwarding round trip before
	 * the clock read (BENCHMARKS.md "Write path against the clock"). */
	depth = t->f.depth + 1;
	t->f.depth = depth;
	/* The nesting mark is set before we look at the window: a signal
	 * handler that runs after this point sees depth > 1 and stays off our
	 * segment; one that ran before it completed its write before we
	 * read r->head below. */
	BB__SIGNAL_FENCE();
	if (bb_likely(depth == 1 && t->f.gen == box->f.gen && t->f.window)) {
		w->r = t->f.window;
		w->shared = false;
		w->flags = 0;
		w->room = box->f.room;
		return true;
	}
	w->r = bb__begin_slow(box, t);
	if (!w->r) {
		BB__SIGNAL_FENCE();
		t->f.depth--;
		*ret = -EBUSY;
		return false;
	}
	w->shared = w->r == &box->rings[BB__SHARED_IDX];
	w->flags = w->shared ? BB_RF_TID : 0;
	w->room = box->f.room - (w->shared ? 8 : 0);
	return true;
}

/*
 * bb__reserve - make room for a record of @vlen value bytes and mark it
 * busy.  Returns the value area; the envelope is filled by bb__commit().
 */
static inline uint8_t *bb__reserve(struct bb__w *w, uint8_t flags, uint32_t vlen)
{
	struct bb__sink *r = w->r;
	uint32_t hdr = BB_RECORD_HDR_SIZE + (w->shared ? 8u : 0u);
	uint64_t pos = r->head;
	uint64_t end = pos + BB_RECORD_STRIDE(hdr + vlen + w->box->f.trailer);
	/* Publishes a new tail, then a release fence, when it moves it;
	 * marks a segment's first record (<blackbox/inline.h>). */
	bb__sink_room(r, pos, end);
	w->pos = pos;
	w->len = hdr + vlen + w->box->f.trailer;
	w->flags |= flags;
	/* The busy mark, then a compiler barrier (<blackbox/inline.h>). */
	w->rec = bb__sink_busy(r, pos);
	if (w->shared) {
		int32_t ext[2] = { bb__tls.tid, 0 };

		memcpy(w->rec + BB_RECORD_HDR_SIZE, ext, sizeof(ext));
	}
	return w->rec + hdr;
}

/*
 * bb__seal - fill the envelope with @tag and the stamp @ts, append the CRC
 * trailer, mark the record committed and publish head: bb__sink_seal(),
 * the inline paths' seal, with the library's CRCs for a BB__CRC_SW box
 * and for long values.  Still inside the
 * nesting section (and, for the shared ring, the lock): bb__leave() next.
 * @big (a constant): the value may be long, checksum one of 64 bytes or
 * more out of line, in three streams from BB__CRC_LONG_MIN bytes
 * (crc32c.c, "Streams").  Only the text and byte writers pass it: in the
 * others the possible call made the short records measurably slower (the
 * compiler keeps fewer values in registers across it), and their long
 * values keep the inline single stream.
 */
static inline __attribute__((always_inline))
void bb__seal(struct bb__w *w, uint8_t tag, uint64_t ts, bool big)
{
	const struct bb__fast_box *fb = &w->box->f;

	bb__sink_seal(w->r, w->rec, w->pos, w->len, tag, w->flags | fb->rflags, ts, fb, 1,
		      w->len - BB_RECORD_HDR_SIZE - BB_CRC_SIZE, big ? bb__record_crc_long : NULL,
		      bb__record_crc);
}

/* bb__leave - leave the nesting section (and the shared ring's lock). */
static inline void bb__leave(struct bb__w *w)
{
	if (bb_unlikely(w->shared)) {
		bb__end_shared(w->box, &bb__tls);
	} else {
		BB__SIGNAL_FENCE();
		bb__tls.f.depth--;
	}
}

/* bb__commit - stamp, seal and publish the record, leave the nesting
 * section. */
static inline __attribute__((always_inline)) void bb__commit(struct bb__w *w, uint8_t tag)
{
	/* Stamped here, after the value is encoded.  Stamping in
	 * bb__reserve() instead (to overlap rdtsc with the encoding) made
	 * the default clock slower, the write state spilled across the
	 * clock_gettime() call (BENCHMARKS.md "Choices in the code,
	 * measured"). */
	bb__seal(w, tag, bb__now(&w->box->f), false);
	bb__leave(w);
}

/* bb__commit_big - bb__commit() of a value that may be long (see
 * bb__seal()). */
static inline __attribute__((always_inline)) void bb__commit_big(struct bb__w *w, uint8_t tag)
{
	bb__seal(w, tag, bb__now(&w->box->f), true);
	bb__leave(w);
}

/* bb__cbor_head(), bb__cbor_put_head() (CBOR heads written inline rather
 * than by libcbor), bb__cbor_put_f64() and bb__copy_small() are in
 * <blackbox/inline.h>: the inline paths of the kv writers use them too. */

/* Cut @n so that s[0..n) does not end inside a UTF-8 sequence. */
static inline size_t bb__utf8_cut(const char *s, size_t n)
{
	size_t k = n;

	while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80 && n - k < 3)
		k--;
	return ((unsigned char)s[k] & 0xc0) == 0x80 ? n : k;
}

/*
 * bb__strn_ok - a string of the length-taking calls (bb_write_kvn(),
 * bb_write_strn(), bb_setn() ...), @n bytes at *@s: NULL is the empty
 * string when @n is 0 (a default std::string_view's data(), an empty
 * span), and *@s becomes "" for it.  Returns false for NULL with a length
 * (-EINVAL).
 */
static inline bool bb__strn_ok(const char **s, size_t n)
{
	if (bb_likely(*s != NULL))
		return true;
	if (n)
		return false;
	*s = "";
	return true;
}

/* Crash handler, state table, module area (crash.c, modules.c).  Not
 * AS-safe; called from bb_init_opts(), bb__open(), bb__begin_slow() and the TLS
 * destructor. */
int bb__crash_init(const struct bb_options *o);
/* bb__crash_thread_start(): 0 (an alternate stack given, one there
 * already, or the handler off) or a negative errno. */
int bb__crash_thread_start(struct bb__tls *t);
void bb__crash_thread_exit(struct bb__tls *t);
/* Heartbeats (watchdog.c): a thread that ends withdraws its deadline. */
void bb__watchdog_thread_exit(struct bb__box *box);
/* The crash handler is on: threads get an alternate signal stack. */
bool bb__crash_altstacks_on(void);
/* A thread pthread_create() started (thread_start.c): its alternate
 * signal stack, freed at its exit (box.c). */
void bb__thread_started(void);
void bb__modules_gather(struct bb__box *box);
/* The main program's GNU build id (as the module area records it, first
 * object) into @out, at most @cap bytes: its length, 0 when it has none. */
size_t bb__main_build_id(uint8_t *out, size_t cap);

#endif /* BB_WRITER_H */
