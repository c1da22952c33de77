/* SPDX-License-Identifier: MIT */
/*
 * barrier.h - every memory-ordering primitive of libblackbox, on C11 atomics.
 * Internal, do not use outside the library and its tools.
 *
 * Fields shared through the box are plain integers in blackbox/format.h (so
 * the format header stays C++- and copy-friendly); these macros access them
 * as _Atomic objects of the same size.  That cast is what liburing does for
 * its SQ/CQ ring indices; it is valid on every target we support because the
 * types used (u32, i32, u64) are lock-free and have the alignment of their
 * plain counterparts (static assertions in box.c).
 *
 * Each call site says what it orders and what it pairs with.
 */
#ifndef BB_BARRIER_H
#define BB_BARRIER_H

#include <stdatomic.h>

#define bb__atomic(p) ((_Atomic __typeof__(*(p)) *)(p))

#define BB_LOAD_RELAXED(p)     atomic_load_explicit(bb__atomic(p), memory_order_relaxed)
#define BB_LOAD_ACQUIRE(p)     atomic_load_explicit(bb__atomic(p), memory_order_acquire)
#define BB_STORE_RELAXED(p, v) atomic_store_explicit(bb__atomic(p), (v), memory_order_relaxed)
#define BB_STORE_RELEASE(p, v) atomic_store_explicit(bb__atomic(p), (v), memory_order_release)
#define BB_FETCH_ADD(p, v)     atomic_fetch_add_explicit(bb__atomic(p), (v), memory_order_relaxed)
#define BB_CAS_ACQUIRE(p, expp, desired)                                     \
	atomic_compare_exchange_strong_explicit(bb__atomic(p), (expp), (desired), \
						memory_order_acquire, memory_order_relaxed)

/* Orders earlier stores before later stores (writer side of a seqlock). */
#define BB_FENCE_RELEASE()  atomic_thread_fence(memory_order_release)
/* Orders earlier loads before later loads (reader side of a seqlock). */
#define BB_FENCE_ACQUIRE()  atomic_thread_fence(memory_order_acquire)
/* Compiler-only barrier against a signal handler on the same thread. */
#define BB_SIGNAL_FENCE()   atomic_signal_fence(memory_order_seq_cst)

#define bb_likely(x)   __builtin_expect(!!(x), 1)
#define bb_unlikely(x) __builtin_expect(!!(x), 0)

#endif /* BB_BARRIER_H */
