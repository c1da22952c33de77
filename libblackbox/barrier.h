/* SPDX-License-Identifier: MIT */
/*
 * barrier.h - the library's names for the memory-ordering primitives of
 * <blackbox/barrier.h> (the one barrier header, shared with the inline
 * write paths of <blackbox/inline.h>).  Internal, do not use outside the
 * library and its tools.
 *
 * Each call site says what it orders and what it pairs with; the pairs are
 * listed in docs/DESIGN.md §5.
 */
#ifndef BB_BARRIER_H
#define BB_BARRIER_H

#include <stdbool.h>
#include <stdint.h>

#include <blackbox/barrier.h>

#define BB_LOAD_RELAXED(p)              BB__LOAD_RELAXED(p)
#define BB_LOAD_ACQUIRE(p)              BB__LOAD_ACQUIRE(p)
#define BB_STORE_RELAXED(p, v)          BB__STORE_RELAXED(p, v)
#define BB_STORE_RELEASE(p, v)          BB__STORE_RELEASE(p, v)
#define BB_FETCH_ADD(p, v)              BB__FETCH_ADD(p, v)
#define BB_CAS_ACQUIRE(p, expp, desired) BB__CAS_ACQUIRE(p, expp, desired)
#define BB_FENCE_RELEASE()              BB__FENCE_RELEASE()
#define BB_FENCE_ACQUIRE()              BB__FENCE_ACQUIRE()
#define BB_SIGNAL_FENCE()               BB__SIGNAL_FENCE()

#define bb_likely(x)   __builtin_expect(!!(x), 1)
#define bb_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * A seqcount (the state table's slots, the module area: FORMAT.md §11), as
 * the kernel's write_seqcount_begin()/end() and read_seqcount_begin()/
 * retry(): even = stable, odd = being written.
 *
 * Writer: make the count odd (bb__seqcount_write_begin() for a sole writer;
 * a CAS to odd where writers compete, then bb__seqcount_write_opened()),
 * store the bytes, then bb__seqcount_write_end() with the next even value.
 * The release fence after the odd value pairs with the reader's acquire
 * fence in bb__seqcount_read_retry(): a copy that saw any byte of the
 * change sees the odd (or a newer) count.  The release store of the even
 * value pairs with bb__seqcount_read_begin()'s acquire load: an even count
 * seen there means the bytes of that change are visible.
 */
static inline uint32_t bb__seqcount_write_begin(uint32_t *seq)
{
	uint32_t odd = BB_LOAD_RELAXED(seq) | 1u;

	BB_STORE_RELAXED(seq, odd);
	BB_FENCE_RELEASE();
	return odd;
}

static inline void bb__seqcount_write_opened(void)
{
	BB_FENCE_RELEASE();
}

static inline void bb__seqcount_write_end(uint32_t *seq, uint32_t even)
{
	BB_STORE_RELEASE(seq, even);
}

/* The count to copy under (retry while odd). */
static inline uint32_t bb__seqcount_read_begin(const uint32_t *seq)
{
	return BB_LOAD_ACQUIRE(seq);
}

/* After the copy: did a writer change the bytes meanwhile? */
static inline bool bb__seqcount_read_retry(const uint32_t *seq, uint32_t start)
{
	BB_FENCE_ACQUIRE();
	return BB_LOAD_RELAXED(seq) != start;
}

#endif /* BB_BARRIER_H */
