/* SPDX-License-Identifier: MIT */
/*
 * blackbox/barrier.h - every memory-ordering primitive of libblackbox: the
 * library (libblackbox/barrier.h adds its seqcount over them) and the
 * inline write paths of <blackbox/inline.h> use these and nothing else.
 * Not an interface of its own: every name begins with bb__ / BB__.
 *
 * GCC's __atomic builtins (GCC and Clang, C and C++ alike: the inline
 * paths are compiled into C++ programs, where <stdatomic.h> is not
 * available).  Fields shared through the box are plain integers in
 * <blackbox/format.h>; these operate on them in place, as liburing does on
 * its ring indices.  The fields used (u32, i32, u64 and pointers) are
 * lock-free on every supported target (asserted in libblackbox/box.c).
 *
 * Each call site says what it orders and what it pairs with; the pairs are
 * listed in one place, docs/DESIGN.md §5.
 */
#ifndef BLACKBOX_BARRIER_H
#define BLACKBOX_BARRIER_H

#define BB__LOAD_RELAXED(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define BB__LOAD_ACQUIRE(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define BB__STORE_RELAXED(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define BB__STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define BB__FETCH_ADD(p, v)     __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define BB__FETCH_SUB(p, v)     __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)
/* Relaxed exchange: a counter taken whole (statistics). */
#define BB__EXCHANGE(p, v)      __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
/* Strong compare-and-swap ordering nothing (a hint: a running maximum). */
#define BB__CAS_RELAXED(p, expp, desired) \
	__atomic_compare_exchange_n((p), (expp), (desired), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
/* Strong compare-and-swap: acquire on success, relaxed on failure. */
#define BB__CAS_ACQUIRE(p, expp, desired) \
	__atomic_compare_exchange_n((p), (expp), (desired), 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
/* Strong compare-and-swap: acquire and release on success, relaxed on
 * failure (a word that passes ownership along a chain: thread slot queues). */
#define BB__CAS_ACQ_REL(p, expp, desired) \
	__atomic_compare_exchange_n((p), (expp), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)

/* Orders earlier stores before later stores (writer side of a seqlock). */
#define BB__FENCE_RELEASE()     __atomic_thread_fence(__ATOMIC_RELEASE)
/* Orders earlier loads before later loads (reader side of a seqlock). */
#define BB__FENCE_ACQUIRE()     __atomic_thread_fence(__ATOMIC_ACQUIRE)
/* Compiler-only barrier, against a signal handler on the same thread. */
#define BB__SIGNAL_FENCE()      __atomic_signal_fence(__ATOMIC_SEQ_CST)

#endif /* BLACKBOX_BARRIER_H */
