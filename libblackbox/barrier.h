/* SPDX-License-Identifier: MIT */
/*
 * barrier.h - the library's seqcount over the memory-ordering primitives
 * of <blackbox/barrier.h> (BB__LOAD_ACQUIRE() ..., the one set, shared
 * with the inline write paths of <blackbox/inline.h>), and its branch
 * hints.  Internal, do not use outside the library and its tools.
 *
 * Each call site says what it orders and what it pairs with; the pairs are
 * listed in docs/DESIGN.md §5.
 */
#ifndef BB_BARRIER_H
#define BB_BARRIER_H

#include <stdbool.h>
#include <stdint.h>

#include <blackbox/barrier.h>

#define bb_likely(x)   __builtin_expect(!!(x), 1)
#define bb_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * A seqcount (the state table's slots, the module area: FORMAT.md §11), as
 * the kernel's write_seqcount_begin()/write_seqcount_end() and
 * read_seqcount_begin()/read_seqcount_retry(): even = stable, odd = being
 * written.
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
	uint32_t odd = BB__LOAD_RELAXED(seq) | 1u;

	BB__STORE_RELAXED(seq, odd);
	BB__FENCE_RELEASE();
	return odd;
}

static inline void bb__seqcount_write_opened(void)
{
	BB__FENCE_RELEASE();
}

static inline void bb__seqcount_write_end(uint32_t *seq, uint32_t even)
{
	BB__STORE_RELEASE(seq, even);
}

/* The count to copy under (retry while odd). */
static inline uint32_t bb__seqcount_read_begin(const uint32_t *seq)
{
	return BB__LOAD_ACQUIRE(seq);
}

/* After the copy: did a writer change the bytes meanwhile? */
static inline bool bb__seqcount_read_retry(const uint32_t *seq, uint32_t start)
{
	BB__FENCE_ACQUIRE();
	return BB__LOAD_RELAXED(seq) != start;
}

#endif /* BB_BARRIER_H */
