/* SPDX-License-Identifier: MIT */
/*
 * blackbox/inline.h - the inline fast path of bb_write_kv().  Included by
 * <blackbox.h>; not an interface of its own: every name here begins with
 * bb__ and nothing here is to be called directly.
 *
 * Why it exists.  bb_write_kv("key", "literal") is the commonest record.
 * Through the library it costs a PLT call, the callee's register saves and
 * two strlen()s the compiler cannot see through.  With the default clock
 * (clock_gettime through the vDSO, which reads the counter with rdtscp and
 * hides no work behind it) every instruction of the write path is on the
 * bill: the library path measured 1.29x a bare clock_gettime(), this one
 * 1.2x (BENCHMARKS.md "Inline fast path").  So when the compiler knows
 * both lengths and both are under 24 bytes, <blackbox.h> expands
 * bb_write_kv() to bb__kv_fast() below: the record is written in the
 * caller, with the library's own protocol and the same bytes.  Anything
 * else calls the library.
 *
 * What it writes, and how, is the library's, not a copy of it: the ring
 * layout and the seqlock write primitives (busy mark, freeing one old
 * record, seal and publish) are defined here once and libblackbox's own
 * writers use them too (libblackbox/writer.h).
 *
 * When it runs (everything else takes bb_write_kvn(), which then handles
 * the case as it always did):
 *  - GCC or Clang, C (not C++), x86-64 (LP64), BB_NO_INLINE not defined;
 *  - both lengths compile-time constants under 24 (one-byte CBOR heads);
 *  - a box is open and this thread already owns a private ring in it (its
 *    first write, which claims the ring, goes through the library);
 *  - not nested (a signal handler interrupting a write: the library sends
 *    it to the shared ring);
 *  - the ring can make room by dropping at most one old record (the
 *    steady state once wrapped), and the box's checksum is off or done by
 *    the SSE4.2 crc32 instruction (bb_init() found it).
 *
 * The ABI it fixes ("fast path v1").  Code compiled with this header reads
 * process state the library owns: the two symbols bb__box_v1 (a pointer to
 * the open box, NULL when none) and bb__tls_v1 (per thread, initial-exec
 * TLS), and, through them, struct bb__fast_box, struct bb__fast_tls and
 * struct bb__ring as laid out below, which the library's structs begin
 * with (static assertions in libblackbox/box.c).  These layouts are part of
 * libblackbox.so.0's ABI.  A release that must change them exports new
 * symbol names (bb__box_v2 ...) for the new layout and keeps bb__box_v1
 * exported and NULL forever: programs built against the old header then
 * take the library call on every write and stay correct, only slower.
 *
 * Initial-exec TLS: a program, and any library loaded at start-up, reaches
 * bb__tls_v1 with one %fs-relative load and no call.  libblackbox itself
 * has always used initial-exec TLS, so this adds no constraint: a plugin
 * that is dlopen()ed, and pulls libblackbox in with it, needs the loader's
 * spare static TLS for libblackbox's few dozen bytes either way.
 *
 * Memory ordering: each primitive says what it orders and what it pairs
 * with on the reader side (libblackbox/ring.h), exactly as in the library.
 * GCC's __atomic built-ins here are the same operations as the C11
 * <stdatomic.h> ones the library uses (libblackbox/barrier.h).
 */
#ifndef BLACKBOX_INLINE_H
#define BLACKBOX_INLINE_H

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__cplusplus)

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/format.h>

/*
 * One ring as its writer sees it: the library's process-local view
 * (bb__box.rings[], one per ring of the box).  Aligned to a cache line:
 * the rings of different threads sit side by side, and head (every
 * record) and tail (every record once wrapped) are written by each ring's
 * own thread; packed, two threads' rings would share a line.
 */
struct __attribute__((aligned(64))) bb__ring {
	struct bb_ring_desc *desc; /* in the box: head and tail published here */
	uint8_t *data;             /* 2 * size bytes: the ring mapped twice */
	uint64_t mask;             /* size - 1 */
	/* The writer's own copies of head and tail: the truth, published to
	 * desc->head / desc->tail.  Touched only by the ring's one writer. */
	uint64_t head;
	uint64_t tail;
};

/* The start of the library's struct bb__box: what every write reads,
 * chosen once at bb_init(), one cache line. */
struct bb__fast_box {
	uint32_t gen;              /* bb__fast_tls.gen of threads whose claim is current */
	int32_t clock;             /* clockid_t of the stamps when tsc is 0 */
	uint8_t tsc;               /* 1: stamps are raw rdtsc ticks (BB_CLOCK_TSC) */
	uint8_t crc;               /* BB__CRC_NONE / _HW / _SW */
	uint8_t rflags;            /* flags of every record: BB_RF_CRC or 0 */
	uint8_t pad0;
	uint32_t trailer;          /* bytes after the value: BB_CRC_SIZE or 0 */
	uint32_t room;             /* value bytes of a private-ring record:
	                            * max_record - envelope - trailer; at least
	                            * 1 KiB - 20 (a ring is >= 4 KiB and
	                            * max_record is a quarter of it) */
};

/* bb__fast_box.crc */
#define BB__CRC_NONE 0
#define BB__CRC_HW   1         /* x86-64 with SSE4.2: inline crc32 instructions */
#define BB__CRC_SW   2         /* the library's table (or dispatched) CRC32C */

/* The start of the library's per-thread struct bb__tls. */
struct bb__fast_tls {
	struct bb__ring *ring;     /* claimed private ring, NULL = none/shared */
	uint32_t gen;              /* box generation of the claim; 0 = never */
	uint32_t depth;            /* writes in progress on this thread (nesting) */
};

/* The library's state, complete only inside it.  The asm labels version
 * the layout (see "The ABI" above). */
struct bb__box;
struct bb__tls;
extern struct bb__box *bb__box __asm__("bb__box_v1");
extern __thread struct bb__tls bb__tls __asm__("bb__tls_v1")
	__attribute__((tls_model("initial-exec")));

/* The box's and this thread's fast-path fields (first members: C11 6.7.2.1
 * §15, a pointer to a struct converted points to its first member). */
#define BB__FAST_BOX(b) ((const struct bb__fast_box *)(const void *)(b))
#define BB__FAST_TLS()  ((struct bb__fast_tls *)(void *)&bb__tls)

/*
 * bb__ring_free_one - the common case of making room for a record ending
 * at @end once a ring has wrapped: free exactly the oldest record.  The box
 * is memory a crashing process may have scribbled on: the old record's
 * length must be sane and it must lie inside [tail, head); and it must
 * free enough.  Returns 1 when it did (new tail published), 0 to leave the
 * case to the library (bb__make_room(): several records, or a scribble),
 * having changed nothing.  (stride <= size follows from tail + stride <=
 * head, as head - tail <= size always holds for the writer's own copies.)
 */
static inline __attribute__((always_inline))
int bb__ring_free_one(struct bb__ring *r, uint64_t end)
{
	uint64_t tail = r->tail;
	const struct bb_record_hdr *h =
		(const struct bb_record_hdr *)(const void *)(r->data + (tail & r->mask));
	uint32_t len = h->len;
	uint64_t ntail = tail + BB_RECORD_STRIDE(len);

	if (__builtin_expect(len >= BB_RECORD_HDR_SIZE && ntail <= r->head &&
			     end - ntail <= r->mask + 1, 1)) {
		r->tail = ntail;
		__atomic_store_n(&r->desc->tail, ntail, __ATOMIC_RELAXED);
		/* Orders the new tail before the busy seq and the record bytes
		 * that overwrite what it released.  Pairs with the acquire
		 * fence in bb__ring_read() (ring.h): a reader that copied
		 * overwritten bytes sees this tail and drops the copy. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		return 1;
	}
	return 0;
}

/*
 * bb__ring_busy - mark the record at @pos busy (room already made) and
 * return it.
 */
static inline __attribute__((always_inline))
uint8_t *bb__ring_busy(struct bb__ring *r, uint64_t pos)
{
	uint8_t *rec = r->data + (pos & r->mask);

	__atomic_store_n((uint32_t *)(void *)rec, BB_SEQ_BUSY(pos), __ATOMIC_RELAXED);
	/* Orders the busy mark before the record bytes stored next (a new
	 * tail was already ordered before it by the fence of
	 * bb__ring_free_one() or bb__make_room()).  Pairs with the acquire
	 * fence in bb__ring_read(): a reader whose copy saw our bytes sees the
	 * busy seq on its re-read and drops the copy. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return rec;
}

#if defined(__x86_64__) && defined(__LP64__)
/*
 * The SSE4.2 crc32 instruction through inline asm rather than the
 * __builtin_ia32_crc32* intrinsics: those need target("sse4.2") on the
 * calling function, and a target-specific function cannot be inlined into
 * code compiled for baseline x86-64.  Executed only when the box says
 * BB__CRC_HW (bb_init() checked CPUID).
 */
static inline uint64_t bb__crc_q64(uint64_t c, uint64_t v)
{
	__asm__("crc32q %1, %0" : "+r"(c) : "rm"(v));
	return c;
}

/*
 * bb__crc32c_hw_update - CRC32C of @n bytes at @p with the instruction,
 * continuing the running value @c (kept in a 64-bit register, crc32q's
 * operand size: a 32-bit one costs a zero-extending move per 8 bytes).
 * Written for record values, mostly under 64 bytes: whole 64-byte blocks
 * in a loop, then at most one block each of 32, 16, 8, 4, 2 and 1 bytes,
 * chosen by the bits of n: straight-line code with constant offsets, and
 * for a constant n (the inline path) no tests at all.  Takes and returns
 * the value without the final xor.
 */
#define BB__CRC_WORDS(c, p, k)                                          \
	do {                                                            \
		for (size_t i_ = 0; i_ < (k); i_++) {                   \
			uint64_t v_;                                    \
									\
			memcpy(&v_, (p) + 8 * i_, 8);                   \
			(c) = bb__crc_q64((c), v_);                     \
		}                                                       \
		(p) += 8 * (k);                                         \
	} while (0)

static inline __attribute__((always_inline))
uint64_t bb__crc32c_hw_update(uint64_t c, const uint8_t *p, size_t n)
{
	for (; n >= 64; n -= 64)
		BB__CRC_WORDS(c, p, 8);
	if (n & 32)
		BB__CRC_WORDS(c, p, 4);
	if (n & 16)
		BB__CRC_WORDS(c, p, 2);
	if (n & 8)
		BB__CRC_WORDS(c, p, 1);
	if (n & 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		__asm__("crc32l %1, %k0" : "+r"(c) : "rm"(v));
		p += 4;
	}
	if (n & 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		__asm__("crc32w %1, %k0" : "+r"(c) : "rm"(v));
		p += 2;
	}
	if (n & 1)
		__asm__("crc32b %1, %k0" : "+r"(c) : "rm"(*p));
	return c;
}

/*
 * bb__record_crc_hw - the record checksum of FORMAT.md §11 with the
 * envelope passed by value: @seq the committed seq word, @w1 bytes 4..7
 * (len, tag, flags) as a little-endian word, the @n bytes at @p
 * (extensions and value), then @ts.  The stamp comes last in the format's
 * order for this: the checksum of everything else does not wait for the
 * clock read, and one crc32q does (BENCHMARKS.md "Issue 6 floor").
 */
static inline __attribute__((always_inline))
uint32_t bb__record_crc_hw(uint32_t seq, uint32_t w1, uint64_t ts,
			   const uint8_t *p, uint32_t n)
{
	uint64_t c = bb__crc_q64(0xffffffffu, (uint64_t)seq | (uint64_t)w1 << 32);

	c = bb__crc32c_hw_update(c, p, n);
	return (uint32_t)bb__crc_q64(c, ts) ^ 0xffffffffu;
}

/*
 * bb__rdtsc - the time stamp counter.  Plain rdtsc, not rdtscp or a fenced
 * read: a record's stamp may be taken a few instructions early or late,
 * which no reader can observe, and per-thread order holds because the TSC
 * is invariant (synchronised across cores) whenever the writer uses it.
 */
static inline uint64_t bb__rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}
#endif /* x86-64 */

/*
 * clock_gettime() under a name of our own, so that this header needs no
 * feature-test macro (<time.h> declares clock_gettime only for POSIX
 * builds, not for -std=c11): the same symbol, with clockid_t as the int it
 * is on Linux and struct timespec as two longs.  On Linux it is served by
 * the vDSO, without a system call.
 */
struct bb__timespec {
	long sec;
	long nsec;
};
extern int bb__clock_gettime(int clock, struct bb__timespec *ts) __asm__("clock_gettime");

/* bb__now - a record stamp in the box's clock. */
static inline __attribute__((always_inline))
uint64_t bb__now(const struct bb__fast_box *fb)
{
	struct bb__timespec ts;

#if defined(__x86_64__) && defined(__LP64__)
	/* BB_CLOCK_TSC: raw ticks, converted by readers.  A predictable
	 * branch on a field of a line every write reads anyway. */
	if (fb->tsc)
		return bb__rdtsc();
#endif
	bb__clock_gettime(fb->clock, &ts);
	return (uint64_t)ts.sec * 1000000000u + (uint64_t)ts.nsec;
}

/*
 * bb__ring_publish - mark the record at @pos of exact length @len, whose
 * bytes are all stored, committed and publish it.
 */
static inline __attribute__((always_inline))
void bb__ring_publish(struct bb__ring *r, uint8_t *rec, uint64_t pos, uint32_t len)
{
	uint64_t end = pos + BB_RECORD_STRIDE(len);

	/* Commit mark with release: orders the envelope, value and CRC before
	 * it, for readers that validate by seq alone (post mortem, where head
	 * may not have been published yet). */
	__atomic_store_n((uint32_t *)(void *)rec, BB_SEQ_DONE(pos), __ATOMIC_RELEASE);
	r->head = end;
	/* Publishes the record.  Pairs with the reader's acquire load of head:
	 * every byte of every record before @end is visible to it. */
	__atomic_store_n(&r->desc->head, end, __ATOMIC_RELEASE);
}

/*
 * bb__ring_envelope - fill the envelope of the busy record @rec: exact
 * length @len, @tag, @flags (all of them, the box's included), stamp @ts.
 * Returns bytes 4..7 (len, tag, flags) as a little-endian word: stored as
 * one word, and the first word of the CRC with seq.
 */
static inline __attribute__((always_inline))
uint32_t bb__ring_envelope(uint8_t *rec, uint32_t len, uint8_t tag, uint8_t flags,
			   uint64_t ts)
{
	struct bb_record_hdr *h = (struct bb_record_hdr *)(void *)rec;
	uint32_t w1 = len | (uint32_t)tag << 16 | (uint32_t)flags << 24;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(rec + 4, &w1, 4);
#else
	h->len = (uint16_t)len;
	h->tag = tag;
	h->flags = flags;
#endif
	h->ts = ts;
	return w1;
}

/*
 * bb__ring_seal - fill the envelope of the busy record @rec at @pos (see
 * bb__ring_envelope()), append the CRC32C trailer computed with the
 * instruction when @crc_hw (the box says BB__CRC_HW and @flags has
 * BB_RF_CRC; then @len is BB_RECORD_HDR_SIZE + @n + BB_CRC_SIZE, @n the
 * bytes of extensions and value, passed so that a caller that knows it at
 * compile time gets straight-line CRC code), then commit and publish it.
 * A BB__CRC_SW box is the library's business (writer.h: bb__seal()).
 */
static inline __attribute__((always_inline))
void bb__ring_seal(struct bb__ring *r, uint8_t *rec, uint64_t pos, uint32_t len,
		   uint8_t tag, uint8_t flags, uint64_t ts, int crc_hw, uint32_t n)
{
	uint32_t w1 = bb__ring_envelope(rec, len, tag, flags, ts);

#if defined(__x86_64__) && defined(__LP64__)
	if (__builtin_expect(crc_hw, 1)) {
		/* Over the final envelope with the committed seq (FORMAT.md
		 * §11), stored before the release store of seq, which orders
		 * it with every other byte of the record. */
		uint32_t c = bb__record_crc_hw(BB_SEQ_DONE(pos), w1, ts,
					       rec + BB_RECORD_HDR_SIZE, n);

		memcpy(rec + BB_RECORD_HDR_SIZE + n, &c, BB_CRC_SIZE);
	}
#else
	(void)w1;
	(void)crc_hw;
	(void)n;
#endif
	bb__ring_publish(r, rec, pos, len);
}

/* The library's bb_write_kvn(), declared again for the fallback. */
int bb_write_kvn(const char *key, size_t klen, const char *value, size_t vlen);

#if defined(__x86_64__) && defined(__LP64__) && !defined(BB_NO_INLINE)
#define BB__HAVE_KV_FAST 1
/*
 * bb__kv_fast - bb_write_kvn(@key, @kl, @value, @vl) for compile-time
 * constant lengths under 24 (blackbox.h checks), in the caller.  Same
 * record as the library's, same returns.
 *
 * The nesting protocol is the library's bb__begin()/bb__leave()
 * (writer.h): depth is raised before the ring is looked at, so a signal
 * handler that runs after that sees depth > 1 and stays off our ring (it
 * takes the shared ring); one that ran before it finished its write before
 * we read head.  The fallbacks give the depth back first: the library
 * call starts from depth 0, as if we had never begun.
 */
static inline __attribute__((always_inline))
int bb__kv_fast(const char *key, size_t kl, const char *value, size_t vl)
{
	/* Acquire pairs with the release store publishing the box in
	 * bb_init(): the box is complete before we use it. */
	struct bb__box *box = __atomic_load_n(&bb__box, __ATOMIC_ACQUIRE);
	const struct bb__fast_box *fb = BB__FAST_BOX(box);
	struct bb__fast_tls *t = BB__FAST_TLS();
	struct bb__ring *r;
	uint32_t depth, len;
	uint64_t pos, end;
	uint8_t *rec;

	if (__builtin_expect(!box, 0))
		return bb_write_kvn(key, kl, value, vl);
	depth = t->depth + 1;
	t->depth = depth;
	/* Compiler-only: the depth store is emitted before the ring is read
	 * (a signal handler on this thread sees it; there is no other
	 * reader of depth). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r = t->ring;
	if (__builtin_expect(depth != 1 || t->gen != fb->gen || !r ||
			     fb->crc == BB__CRC_SW, 0))
		goto library;
	len = (uint32_t)(BB_RECORD_HDR_SIZE + 3 + kl + vl) + fb->trailer;
	pos = r->head;
	end = pos + BB_RECORD_STRIDE(len);
	if (__builtin_expect(end - r->tail > r->mask + 1, 0) && !bb__ring_free_one(r, end))
		goto library;
	rec = bb__ring_busy(r, pos);
	/* The value: array(2) [text(kl) key, text(vl) value], 3 + kl + vl
	 * bytes, never more than 49, under any box's room.  Constant-size
	 * copies: a few moves. */
	rec[BB_RECORD_HDR_SIZE] = 0x82;
	rec[BB_RECORD_HDR_SIZE + 1] = (uint8_t)(0x60 | kl);
	memcpy(rec + BB_RECORD_HDR_SIZE + 2, key, kl);
	rec[BB_RECORD_HDR_SIZE + 2 + kl] = (uint8_t)(0x60 | vl);
	memcpy(rec + BB_RECORD_HDR_SIZE + 3 + kl, value, vl);
	bb__ring_seal(r, rec, pos, len, BB_TAG_KV, fb->rflags, bb__now(fb),
		      fb->crc == BB__CRC_HW, (uint32_t)(3 + kl + vl));
	/* Compiler-only: every store of the record is emitted before the
	 * depth is given back; a signal handler that runs after that may
	 * take our ring again. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = depth - 1;
	return 0;
library:
	/* As above: nothing of ours is in the ring yet. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->depth = depth - 1;
	return bb_write_kvn(key, kl, value, vl);
}
#endif /* x86-64, !BB_NO_INLINE */

#endif /* GNU C */
#endif /* BLACKBOX_INLINE_H */
