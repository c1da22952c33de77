/* SPDX-License-Identifier: MIT */
/*
 * blackbox/inline.h - the inline fast paths of bb_write_kv(), of the
 * typed bb_write_kv_i64(), _u64() and _f64(), and of bb_write_event().
 * Included by <blackbox.h>, after the types it uses (struct bb_field),
 * and only by it; not an interface of its own: every name here begins with
 * bb__ and nothing here is to be called directly.
 *
 * Why it exists.  A key/value record is the commonest record.  Through the
 * library it costs a PLT call, the callee's register saves and a strlen()
 * per string the compiler cannot see through.  With the default clock
 * (clock_gettime through the vDSO, which reads the counter with rdtscp and
 * hides no work behind it) every instruction of the write path is on the
 * bill (BENCHMARKS.md "Write path against the clock").  So <blackbox.h> expands those calls
 * to bb__kv_str() and bb__kv_typed() below: the record is written in the
 * caller, with the library's own protocol and the same bytes.  Anything
 * else calls the library.
 *
 * What it writes, and how, is the library's, not a copy of it: the ring
 * layout, the seqlock write primitives (making room, busy mark, seal and
 * publish), the CBOR heads and the short copies are
 * defined here once and libblackbox's own writers use them too
 * (libblackbox/writer.h, write.c).
 *
 * When it runs (everything else takes the library's function, which then
 * handles the case as it always did):
 *  - GCC or Clang, C or C++, x86-64 (LP64), BB_NO_INLINE not defined;
 *  - the key, and a text value, of at most BB__INLINE_STR_MAX (64) bytes:
 *    string literals (lengths folded at compile time) or strings known
 *    only at run time, measured by bb__strlen_upto() (below: aligned
 *    16-byte blocks, never a page the string does not reach);
 *  - a box is open and this thread already writes into a segment of it
 *    through its window (its first write, which takes the segment, goes
 *    through the library);
 *  - not nested (a signal handler interrupting a write: the library sends
 *    it to the shared ring);
 *  - the box's checksum is off or done by the SSE4.2 crc32 instruction
 *    (bb_init() found it).  Taking the next segment when the current one
 *    is full is a call into the library once per segment
 *    (bb__sink_room()), not a fallback.
 *
 * The ABI it fixes ("fast path v1").  Code compiled with this header reads
 * process state the library owns: the two symbols bb__box_v1 (a pointer to
 * the open box, NULL when none) and bb__tls_v1 (per thread, initial-exec
 * TLS), and, through them, struct bb__fast_box, struct bb__fast_tls and
 * struct bb__sink as laid out below, which the library's structs begin
 * with (static assertions in libblackbox/box.c); and it calls the two
 * functions bb__ring_make_room() and bb__ring_mark().  (Format 3.0 kept
 * the layout: struct bb__sink's first word, once the descriptor whose
 * head lies at its offset 0, is now the address of that head word, the
 * same store; a window's mask and tail make the same tests mean "the
 * segment is full".)  These layouts and
 * functions are part of libblackbox.so.0's ABI (all in LIBBLACKBOX_0.1).
 * A release that must change them exports new symbol names (bb__box_v2
 * ...) for the new layout and keeps bb__box_v1 exported and NULL forever:
 * programs built against the old header then take the library call on
 * every write and stay correct, only slower.  Inline paths added later
 * read the same v1 layouts and call only functions of LIBBLACKBOX_0.1: a
 * program built with them runs against any libblackbox.so.0.
 *
 * Initial-exec TLS: a program, and any library loaded at start-up, reaches
 * bb__tls_v1 with one %fs-relative load and no call.  libblackbox itself
 * has always used initial-exec TLS, so this adds no constraint: a plugin
 * that is dlopen()ed, and pulls libblackbox in with it, needs the loader's
 * spare static TLS for libblackbox's few dozen bytes either way.
 *
 * Memory ordering: each primitive says what it orders and what it pairs
 * with on the reader side (libblackbox/ring.h), exactly as in the library,
 * with the library's primitives (<blackbox/barrier.h>, GCC's __atomic
 * built-ins, which C++ compiles too).
 */
#ifndef BLACKBOX_INLINE_H
#define BLACKBOX_INLINE_H

#if defined(__GNUC__) || defined(__clang__)

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/barrier.h>
#include <blackbox/format.h>

#if defined(__cplusplus)
/*
 * C++ programs compile this C code too, in every file that includes
 * <blackbox.h> or <blackbox.hpp>, often with -Wold-style-cast,
 * -Wzero-as-null-pointer-constant and (g++) -Wuseless-cast, which its C
 * casts and NULLs (and the casts of <blackbox/format.h>'s macros it
 * expands) would draw: quiet for this header's code only, popped at its
 * end.  tests/lib/header_strict.sh checks that a program built with them
 * sees nothing.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif
#endif

/* The library's box (struct bb__box), complete only inside it. */
struct bb__box;

/*
 * A sink: where a writer appends (docs/DESIGN.md §1).  One ring as its
 * writer sees it, or a thread's window on the segment it writes (format
 * 3.0, FORMAT.md §13).  The library's process-local view (bb__box.rings[],
 * one per ring of the ring table, and bb__box.windows[], one per thread
 * slot).  Aligned to a cache line: the
 * windows of different threads sit side by side, and head (every record)
 * is written by each one's own thread; packed, two threads would share a
 * line.
 *
 * The record at position pos lives at data + (pos & mask); a record that
 * ends at end fits when end - tail <= mask + 1, and else the library makes
 * room (bb__sink_room() below).  A ring: mask = size - 1, tail its oldest
 * record.  A window: positions are the thread's log positions, which never
 * wrap inside a segment, so mask = BB__WINDOW_MASK (every position below
 * 2^63 as it is), data = the segment's bytes - its start position, and
 * tail = the segment's end position - 2^63: a record fits exactly when it
 * ends inside the segment, and otherwise "making room" is taking the next
 * segment.  The same two tests, for both.
 */
struct __attribute__((aligned(64))) bb__sink {
	uint64_t *pub;             /* where head is published: the descriptor's
	                            * head (a ring's, or the window's segment's) */
	uint8_t *data;             /* a ring: 2 * size bytes, the ring mapped
	                            * twice; a window: see above */
	uint64_t mask;             /* size - 1, or BB__WINDOW_MASK */
	/* The writer's own copies of head and tail: the truth, published to
	 * the descriptor.  Touched only by the ring's one writer. */
	uint64_t head;
	uint64_t tail;
	/* Mark segments of a ring (bb__sink_room() below): a record [pos, end)
	 * with (pos ^ end) > segmask crosses into a new mark segment of
	 * segmask + 1 bytes, and the writer tells the library where that
	 * segment's first record starts.  UINT64_MAX: none (a ring under
	 * BB__MARK_RING_MIN bytes, a window).  Set with the ring. */
	uint64_t segmask;
	/* The library's, not read here: */
	struct bb_ring_desc *desc; /* a ring: its descriptor (tail, lock); a
	                            * window: NULL */
	struct bb__box *box;       /* a window: its box */
};

/* A window's mask: log positions below 2^63 map to data + pos. */
#define BB__WINDOW_MASK (UINT64_MAX >> 1)

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
	uint32_t room;             /* value bytes of a record in a segment:
	                            * max_record - envelope - trailer; at least
	                            * 4 KiB - 20 (a segment is >= 4 KiB and a
	                            * record may fill one) */
};

/* bb__fast_box.crc */
#define BB__CRC_NONE 0
#define BB__CRC_HW   1         /* x86-64 with SSE4.2: inline crc32 instructions */
#define BB__CRC_SW   2         /* the library's table (or dispatched) CRC32C */

/* The start of the library's per-thread struct bb__tls. */
struct bb__fast_tls {
	struct bb__sink *window;   /* this thread's window on its segment (3.0),
	                            * NULL = none (the shared ring) */
	uint32_t gen;              /* box generation of the claim; 0 = never */
	uint32_t depth;            /* writes in progress on this thread (nesting) */
};

/* The library's state, complete only inside it.  The asm labels version
 * the layout (see "The ABI" above). */
struct bb__tls;
extern struct bb__box *bb__box __asm__("bb__box_v1");
extern __thread struct bb__tls bb__tls __asm__("bb__tls_v1")
	__attribute__((tls_model("initial-exec")));

/* The box's and this thread's fast-path fields (first members: C11 6.7.2.1
 * §15, a pointer to a struct converted points to its first member). */
#define BB__FAST_BOX(b) ((const struct bb__fast_box *)(const void *)(b))
#define BB__FAST_TLS()  ((struct bb__fast_tls *)(void *)&bb__tls)

/*
 * Making room, in the library: in a thread's window, bb__ring_make_room()
 * takes the next segment (FORMAT.md §13) and points the window there, at
 * the same log position; in a ring, it advances tail over old records
 * until a record ending at @end fits, publishes it and issues the release
 * fence (FORMAT.md §7 step 1).  It never fails (a thread with nothing to
 * take starts its own segment over; a ring the process scribbled over is
 * dropped whole).  In a ring, bb__ring_mark() records that
 * the record ending at @end crossed into a new mark segment, so that @end
 * is where that segment's first record starts.  With those marks, making
 * room jumps tail to the start of a whole segment (at most 2 segments, a
 * 32nd of the ring, beyond what the record needs) instead of walking the
 * old records one by one: about once per segment, not once per record
 * (libblackbox/box.c, docs/DESIGN.md §3).  Both are AS-safe, take no lock
 * and make no system call; exported for the inline paths, not an API.
 * Their names are the ABI's (fast path v1): "ring" there means any sink.
 */
void bb__ring_make_room(struct bb__sink *r, uint64_t end);
void bb__ring_mark(struct bb__sink *r, uint64_t end);

/* Rings of at least this size get 64 mark segments; smaller ones walk. */
#define BB__MARK_RING_MIN (64u << 10)

/*
 * bb__sink_room - make room for the record [@pos, @end) about to be
 * written at head: the steady state is one test that fails (a window's
 * segmask never triggers the mark), and once per segment (a window's) or
 * mark segment (a ring's) a call.  Afterwards every byte the record
 * overwrites lies behind a hand-over's owner word or a tail, published
 * with its release fence.
 */
static inline __attribute__((always_inline))
void bb__sink_room(struct bb__sink *r, uint64_t pos, uint64_t end)
{
	if (__builtin_expect(end - r->tail > r->mask + 1, 0))
		bb__ring_make_room(r, end);
	if (__builtin_expect((pos ^ end) > r->segmask, 0))
		bb__ring_mark(r, end);
}

/*
 * bb__sink_busy - mark the record at @pos busy (room already made) and
 * return it.
 */
static inline __attribute__((always_inline))
uint8_t *bb__sink_busy(struct bb__sink *r, uint64_t pos)
{
	uint8_t *rec = r->data + (pos & r->mask);

	BB__STORE_RELAXED((uint32_t *)(void *)rec, BB_SEQ_BUSY(pos));
	/* Keeps the busy mark before the record bytes stored next, for this
	 * thread's own signal handlers (bb_dump(), the crash handler) and a
	 * post-mortem reader: a compiler barrier, no instruction.  No live
	 * reader needs a fence here: it sees our bytes only through an older
	 * record they overwrite, whose release is ordered before them by the
	 * tail fence of bb__ring_make_room() (this record's or an earlier
	 * one's), in a segment by the fence after the hand-over's CLAIMING
	 * word; those fences pair with the acquire fence in bb__extent_read().
	 * The argument: docs/DESIGN.md §5. */
	BB__SIGNAL_FENCE();
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
 * BB__CRC_XOROUT_PRE - the register value K with crc32q(K, 0) ==
 * 0xffffffff.  The crc32 instruction is linear over GF(2) in its register
 * and data operands together, so crc32q(c ^ K, ts) == crc32q(c, ts) ^
 * crc32q(K, 0) == crc32q(c, ts) ^ 0xffffffff: CRC32C's final xor, folded
 * into the register before the last step.  tests/lib/test_crc32c.c checks
 * the constant against the instruction.
 */
#define BB__CRC_XOROUT_PRE 0x20481012u

/*
 * bb__record_crc_hw - the record checksum of FORMAT.md §11 with the
 * envelope passed by value: @seq the committed seq word, @w1 bytes 4..7
 * (len, tag, flags) as a little-endian word, the @n bytes at @p
 * (extensions and value), then @ts.  The stamp comes last in the format's
 * order for this: the checksum of everything else does not wait for the
 * clock read, and one crc32q does; the final xor is applied before it
 * (BB__CRC_XOROUT_PRE), so nothing else follows the stamp (BENCHMARKS.md
 * "Write path against the clock").
 */
static inline __attribute__((always_inline))
uint32_t bb__record_crc_hw(uint32_t seq, uint32_t w1, uint64_t ts,
			   const uint8_t *p, uint32_t n)
{
	uint64_t c = bb__crc_q64(0xffffffffu, (uint64_t)seq | (uint64_t)w1 << 32);

	c = bb__crc32c_hw_update(c, p, n);
	return (uint32_t)bb__crc_q64(c ^ BB__CRC_XOROUT_PRE, ts);
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
 * bb__sink_publish - mark the record at @pos of exact length @len, whose
 * bytes are all stored, committed and publish it.
 */
static inline __attribute__((always_inline))
void bb__sink_publish(struct bb__sink *r, uint8_t *rec, uint64_t pos, uint32_t len)
{
	uint64_t end = pos + BB_RECORD_STRIDE(len);

	/* Commit mark with release: orders the envelope, value and CRC before
	 * it, for readers that validate by seq alone (post mortem, where head
	 * may not have been published yet). */
	BB__STORE_RELEASE((uint32_t *)(void *)rec, BB_SEQ_DONE(pos));
	r->head = end;
	/* Publishes the record.  Pairs with the reader's acquire load of head:
	 * every byte of every record before @end is visible to it. */
	BB__STORE_RELEASE(r->pub, end);
}

/*
 * bb__sink_envelope - fill the envelope of the busy record @rec: exact
 * length @len, @tag, @flags (all of them, the box's included), stamp @ts.
 * Returns bytes 4..7 (len, tag, flags) as a little-endian word: stored as
 * one word, and the first word of the CRC with seq.
 */
static inline __attribute__((always_inline))
uint32_t bb__sink_envelope(uint8_t *rec, uint32_t len, uint8_t tag, uint8_t flags,
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
 * The CRC32C of a record that the inline instructions of
 * bb__record_crc_hw() do not compute: the library's (libblackbox/crc32c.h)
 * for a long value in three streams (bb__record_crc_long()) and for a
 * BB__CRC_SW box (bb__record_crc(), the whole record).  Internal to the
 * library, not exported: the inline paths pass NULL for both (they write
 * short values, and never on a BB__CRC_SW box).
 */
typedef uint32_t (*bb__crc_long_fn)(uint32_t seq, uint32_t w1, uint64_t ts, const uint8_t *p,
				    uint32_t n);
typedef uint32_t (*bb__crc_table_fn)(uint32_t seq, const void *rec, uint32_t len);

/*
 * bb__sink_seal - the one seal of every writer, inline or in the library
 * (writer.h bb__seal()): fill the envelope of the busy record @rec at @pos
 * (see bb__sink_envelope()), append the CRC32C trailer as the CRC mode of
 * the box @fb says, then commit and publish it.
 *
 * The mode is BB__CRC_NONE (no trailer), BB__CRC_HW (the instruction
 * inline, or @crc_long for @n of 64 bytes or more when @crc_long is not
 * NULL) or, when @sw (a constant) allows it, BB__CRC_SW (@crc_table).  The
 * inline paths pass @sw 0 and NULL functions (they never write on a
 * BB__CRC_SW box): the other branches fold away.  With a trailer, @len is
 * BB_RECORD_HDR_SIZE + @n + BB_CRC_SIZE, @n the bytes of extensions and
 * value, passed so that a caller that knows it at compile time gets
 * straight-line CRC code.
 */
static inline __attribute__((always_inline))
void bb__sink_seal(struct bb__sink *r, uint8_t *rec, uint64_t pos, uint32_t len,
		   uint8_t tag, uint8_t flags, uint64_t ts, const struct bb__fast_box *fb,
		   int sw, uint32_t n, bb__crc_long_fn crc_long, bb__crc_table_fn crc_table)
{
	/* seq before the envelope's stores, the CRC mode after them (they
	 * may alias it, as far as the compiler knows): the order that keeps
	 * the library's writers in registers (BENCHMARKS.md "Choices in the
	 * code, measured"). */
	uint32_t seq = BB_SEQ_DONE(pos);
	uint32_t w1 = bb__sink_envelope(rec, len, tag, flags, ts);
	int crc = sw ? fb->crc : fb->crc == BB__CRC_HW ? BB__CRC_HW : BB__CRC_NONE;

	if (__builtin_expect(crc != BB__CRC_NONE, 1)) {
		/* Over the final envelope with the committed seq (FORMAT.md
		 * §11), stored before the release store of seq in
		 * bb__sink_publish(), which orders it with every other byte
		 * of the record. */
		uint32_t c;

#if defined(__x86_64__) && defined(__LP64__)
		if (__builtin_expect(crc == BB__CRC_HW, 1)) {
			/* Testing 64 costs nothing: the inline CRC's block
			 * loop then folds away. */
			if (crc_long && __builtin_expect(n >= 64, 0))
				c = crc_long(seq, w1, ts, rec + BB_RECORD_HDR_SIZE, n);
			else
				c = bb__record_crc_hw(seq, w1, ts, rec + BB_RECORD_HDR_SIZE, n);
		} else
#endif
			c = crc_table(seq, rec, len);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		c = __builtin_bswap32(c);   /* stored little-endian */
#endif
		memcpy(rec + BB_RECORD_HDR_SIZE + n, &c, BB_CRC_SIZE);
	}
	bb__sink_publish(r, rec, pos, len);
}

/* ---- CBOR heads and short copies (the library's writers use them too) -- */

/* CBOR head size for a length or integer argument (RFC 8949 §3). */
static inline uint32_t bb__cbor_head(uint64_t n)
{
	return n < 24 ? 1 : n <= 0xff ? 2 : n <= 0xffff ? 3 : n <= 0xffffffffu ? 5 : 9;
}

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define bb__be16(x) ((uint16_t)(x))
#define bb__be32(x) ((uint32_t)(x))
#define bb__be64(x) ((uint64_t)(x))
#else
#define bb__be16(x) __builtin_bswap16((uint16_t)(x))
#define bb__be32(x) __builtin_bswap32((uint32_t)(x))
#define bb__be64(x) __builtin_bswap64((uint64_t)(x))
#endif

/*
 * bb__cbor_put_head - write the CBOR head of major type @major (0..7, not
 * shifted) with argument @n at @p; returns the byte after it.
 *
 * Inline rather than libcbor's cbor_encode_uint/negint/string_start/...:
 * those are PLT calls into a second library that re-dispatch on the size
 * (cbor_encode_string_start -> _cbor_encode_uint -> _cbor_encode_uint8),
 * many more instructions for a 1-byte head than the 2-3 moves here
 * (BENCHMARKS.md "Choices in the code, measured").  A head is one byte or a byte plus a
 * big-endian argument of 1, 2, 4 or 8 bytes (RFC 8949 §3): trivial.
 */
static inline uint8_t *bb__cbor_put_head(unsigned major, uint64_t n, uint8_t *p)
{
	uint8_t mt = (uint8_t)(major << 5);

	if (__builtin_expect(n < 24, 1)) {
		*p = (uint8_t)(mt | n);
		return p + 1;
	}
	if (n <= 0xff) {
		p[0] = (uint8_t)(mt | 24);
		p[1] = (uint8_t)n;
		return p + 2;
	}
	if (n <= 0xffff) {
		uint16_t be = bb__be16(n);

		p[0] = (uint8_t)(mt | 25);
		memcpy(p + 1, &be, 2);
		return p + 3;
	}
	if (n <= 0xffffffffu) {
		uint32_t be = bb__be32(n);

		p[0] = (uint8_t)(mt | 26);
		memcpy(p + 1, &be, 4);
		return p + 5;
	}
	{
		uint64_t be = bb__be64(n);

		p[0] = (uint8_t)(mt | 27);
		memcpy(p + 1, &be, 8);
		return p + 9;
	}
}

/* bb__cbor_put_short - bb__cbor_put_head() for @n <= 255 (a key's or a
 * short text's length): one byte, or 24 + n in two. */
static inline __attribute__((always_inline))
uint8_t *bb__cbor_put_short(unsigned major, size_t n, uint8_t *p)
{
	uint8_t mt = (uint8_t)(major << 5);

	if (n < 24) {
		*p = (uint8_t)(mt | n);
		return p + 1;
	}
	p[0] = (uint8_t)(mt | 24);
	p[1] = (uint8_t)n;
	return p + 2;
}

/* bb__int_arg - the CBOR argument of the integer @v: v for major 0, -1 - v
 * (that is v ^ sign) for major 1, the negative ones. */
static inline uint64_t bb__int_arg(int64_t v)
{
	return (uint64_t)v ^ (uint64_t)(v >> 63);
}

/* bb__cbor_int_size - the bytes of the integer @v in CBOR. */
static inline uint32_t bb__cbor_int_size(int64_t v)
{
	return bb__cbor_head(bb__int_arg(v));
}

/*
 * bb__cbor_put_int - the integer @v at @p in its shortest form: major 0
 * when v >= 0, else major 1 with argument -1 - v.  Returns the byte after
 * it.  The one integer encoder of the writer, the state table, the crash
 * handler and bb-extract's CBOR output.
 */
static inline uint8_t *bb__cbor_put_int(int64_t v, uint8_t *p)
{
	return bb__cbor_put_head((unsigned)((uint64_t)v >> 63), bb__int_arg(v), p);
}

/*
 * bb__cbor_put_f64 - a double whose IEEE 754 bits are @bits, always in the
 * 9-byte float64 form (0xfb and the bits big-endian, RFC 8949 §3.3: no
 * shortening, NaN payloads kept), as libcbor's cbor_encode_double()
 * writes it.  Returns the byte after it.
 */
static inline uint8_t *bb__cbor_put_f64(uint8_t *p, uint64_t bits)
{
	uint64_t be = bb__be64(bits);

	p[0] = 0xfb;
	memcpy(p + 1, &be, 8);
	return p + 9;
}

/*
 * bb__copy16 - copy @n bytes, n <= 16: two overlapping loads and stores of
 * 8 or 4 bytes, or three bytes, never reading or writing outside [0, n).
 * A few moves where a PLT call into libc's memcpy costs more (BENCHMARKS.md
 * "Choices in the code, measured"); for a constant @n the compiler emits
 * the exact moves.
 * The library's writers use it for short strings (write.c).
 */
static inline void bb__copy16(uint8_t *d, const void *src, size_t n)
{
	const uint8_t *s = (const uint8_t *)src;

	if (n >= 8) {
		uint64_t a, b;

		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;

		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

/*
 * bb__copy_small - bb__copy16() for n <= 64: above 16, two overlapping
 * 16-byte (up to 32) or 32-byte copies (memcpy of a constant 16 or 32
 * bytes: unaligned vector moves, no call).  The inline paths' copy.
 */
static inline __attribute__((always_inline))
void bb__copy_small(uint8_t *d, const void *src, size_t n)
{
	const uint8_t *s = (const uint8_t *)src;
	uint8_t a[32], b[32];

	if (n <= 16) {
		bb__copy16(d, s, n);
	} else if (n > 32) {
		memcpy(a, s, 32);
		memcpy(b, s + n - 32, 32);
		memcpy(d, a, 32);
		memcpy(d + n - 32, b, 32);
	} else {
		memcpy(a, s, 16);
		memcpy(b, s + n - 16, 16);
		memcpy(d, a, 16);
		memcpy(d + n - 16, b, 16);
	}
}

/*
 * bb__copy - copy @n bytes, the library writers' copy: inline moves up to
 * 16 (bb__copy16(): keys and values are mostly short), libc's memcpy above
 * (the inline paths' copies up to 64 made the library's writers bigger
 * than GCC inlines well: BENCHMARKS.md "Choices in the code, measured").
 * Never reads or writes outside
 * [0, n).
 */
static inline void bb__copy(uint8_t *d, const void *src, size_t n)
{
	if (__builtin_expect(n <= 16, 1))
		bb__copy16(d, src, n);
	else
		memcpy(d, src, n);
}

/*
 * bb__opaque - @s, for a copy of @n bytes from it in an inline path.  For a
 * length known only at run time the compiler also sees bb__copy_small()'s
 * branches for longer copies, and, when it knows the object @s points to
 * (a 12-byte literal), warns (-Warray-bounds) in the caller's build that
 * they would read past it; they are never taken for it.  An empty asm
 * hides which object it is: no instruction.
 */
static inline __attribute__((always_inline))
const void *bb__opaque(const void *s, size_t n)
{
	if (!__builtin_constant_p(n))
		__asm__("" : "+r"(s));
	return s;
}

/* ---- the length of a string known only at run time ---------------------- */

/* The longest key or text value the inline paths take (2-byte CBOR heads
 * at most: 1 + 2 + 64 + 2 + 64 = 133 value bytes, under any box's room,
 * libblackbox/box.c asserts it). */
#define BB__INLINE_STR_MAX 64
#define BB__INLINE_VALUE_MAX (1 + 2 + BB__INLINE_STR_MAX + 2 + BB__INLINE_STR_MAX)

/*
 * Sanitizers check every byte a program reads.  The scan below reads whole
 * aligned blocks, past the terminator (page-safe, but outside the string),
 * which they would rightly report: built with one, the length is
 * strlen()'s, which they intercept and check.  (Valgrind's memcheck
 * accepts the aligned blocks: a naturally aligned load of which some bytes
 * are addressable is allowed, its other bytes undefined, --partial-loads-ok
 * defaults to yes, and the mask of the terminator does not depend on them;
 * tests/lib/inline_memcheck.c runs under it.)
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_HWADDRESS__)
#define BB__STRLEN_BY_LIBC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(hwaddress_sanitizer) || \
	__has_feature(memory_sanitizer)
#define BB__STRLEN_BY_LIBC 1
#endif
#endif

#if defined(__x86_64__) && defined(__LP64__) && !defined(BB__STRLEN_BY_LIBC)
typedef char bb__v16 __attribute__((vector_size(16), may_alias));

/*
 * bb__nul16 - bit i set where byte i of the 16 bytes at @a, an address
 * aligned to 16, is 0.  SSE2 (baseline x86-64) in asm: the compiler sees
 * a read of those 16 bytes and no C access beyond the string.
 */
static inline uint32_t bb__nul16(uintptr_t a)
{
	bb__v16 v, z;
	uint32_t m;

	__asm__("movdqa %3, %0\n\t"
		"pxor %1, %1\n\t"
		"pcmpeqb %0, %1\n\t"
		"pmovmskb %1, %2"
		: "=&x"(v), "=&x"(z), "=r"(m)
		: "m"(*(const bb__v16 *)a));
	return m;
}
#endif

/*
 * bb__strlen_upto - strlen(@s) when it is at most BB__INLINE_STR_MAX,
 * otherwise some value above it.  AS-safe.
 *
 * Reads @s in 16-byte blocks aligned to 16, the first one the block that
 * holds s[0], and each next one only if no terminator was found before it:
 * every block read holds a byte of the string or its terminator.  An
 * aligned block never straddles two pages, so every page it touches is a
 * page the string is in: mapped.  It never reads a page the string does
 * not reach (the test maps the string against a PROT_NONE page).  Unlike
 * a word-at-a-time loop in C, no C object is read past its end: the blocks
 * are read by the asm.  At most 5 blocks.
 */
static inline __attribute__((always_inline))
size_t bb__strlen_upto(const char *s)
{
#if defined(__x86_64__) && defined(__LP64__) && !defined(BB__STRLEN_BY_LIBC)
	uintptr_t a = (uintptr_t)s, off = a & 15;
	uint32_t m = bb__nul16(a - off) >> off;
	size_t n;

	if (m)
		return (size_t)__builtin_ctz(m);
	for (n = 16 - off; n <= BB__INLINE_STR_MAX; n += 16) {
		m = bb__nul16(a + n);   /* a + n is aligned */
		if (m)
			return n + (size_t)__builtin_ctz(m);
	}
	return n;
#else
	return __builtin_strlen(s);
#endif
}

/* ---- the event record: one argument check, one encoder ----------------- */

/*
 * An event is [text name, map {text key: value, ...}] (FORMAT.md §6).  The
 * library's bb_write_event() (write.c) and its inline path bb__event_fast()
 * (below) check the arguments with bb__event_args_ok() and bb__evf_read(),
 * size the record with bb__event_head_size() and bb__evf_size() and encode
 * it with bb__event_put_head() and bb__evf_put() for each field.  @inl, a
 * compile-time constant, picks the inline path's forms: lengths scanned
 * only up to BB__INLINE_STR_MAX (a longer string leaves the inline path),
 * text heads of one or two bytes, copies of at most 64 bytes.  The
 * library's: strlen(), any head, bb__copy().
 */

/* bb__text_size - the bytes of a text or byte string of @n <= 255 bytes:
 * a 1- or 2-byte head and the bytes. */
#define bb__text_size(n) ((uint32_t)(n) + 1 + ((n) >= 24))

/* Unroll the loop that follows completely (its count is a constant at
 * most BB__EVENT_INLINE_MAX): each field's code is then specialised for
 * its type and key. */
#if defined(__clang__)
#define BB__UNROLL _Pragma("unroll")
#else
#define BB__UNROLL _Pragma("GCC unroll 8")
#endif

/* bb__field_lit(s) - is the string @s of a field (not an argument of the
 * macro, so bb__lit() cannot test it where the macro expands) a literal?
 * GCC: its length folds after inlining.  Clang: its address is a constant
 * after inlining (a literal, or a global array, whose strlen() is then
 * called: correct either way). */
#if defined(__clang__)
#define bb__field_lit(s) __builtin_constant_p(s)
#else
#define bb__field_lit(s) __builtin_constant_p(__builtin_strlen(s))
#endif
#define bb__field_len(s) (bb__field_lit(s) ? __builtin_strlen(s) : bb__strlen_upto(s))

/*
 * One field of an event, read once from its struct bb_field and checked
 * (bb__evf_read()); bb__evf_size() and bb__evf_put() take it by value.
 * The inline path keeps the members between its two loops in one array
 * each: then GCC folds every member of a literal field into the code (in
 * an array of these structs they were reloaded after the ring stores and
 * the copies of literal keys no longer folded; tests/perf/icount_budget.sh
 * measures it).
 */
union bb__evv {
	const void *p;      /* the text or bytes */
	uint64_t    x;      /* an integer, a bool, a double's bits */
};

struct bb__evf {
	const char   *key;
	size_t        kl;   /* bytes of the key */
	size_t        vl;   /* bytes of the text or bytes, else 0 */
	union bb__evv v;
	int           type; /* enum bb_type */
};

/* bb__event_args_ok - bb_write_event()'s checks of its arguments besides
 * each field's: a name, fields unless none, at most BB_EVENT_MAX_FIELDS. */
static inline __attribute__((always_inline))
int bb__event_args_ok(const char *name, const struct bb_field *f, size_t n)
{
	return name && (f || !n) && n <= BB_EVENT_MAX_FIELDS;
}

/* bb__evf_read - @f into @e, checked: a key, a known type, a text that is
 * not NULL, bytes that are not NULL unless empty.  Returns 1, or 0 for a
 * field bb_write_event() refuses (-EINVAL). */
static inline __attribute__((always_inline))
int bb__evf_read(struct bb__evf *e, const struct bb_field *f, int inl)
{
	e->key = f->key;
	e->type = (int)f->type;
	e->vl = 0;
	if (!e->key)
		return 0;
	e->kl = inl ? bb__field_len(e->key) : strlen(e->key);
	switch (e->type) {
	case BB_TYPE_STR:
		e->v.p = f->v.s;
		if (!f->v.s)
			return 0;
		e->vl = inl ? bb__field_len(f->v.s) : strlen(f->v.s);
		return 1;
	case BB_TYPE_STRN:
		/* Text of a given length: encoded as BB_TYPE_STR is. */
		e->type = BB_TYPE_STR;
		e->v.p = f->v.strn.s;
		e->vl = f->v.strn.n;
		return f->v.strn.s || !f->v.strn.n;
	case BB_TYPE_BYTES:
		e->v.p = f->v.bytes.p;
		e->vl = f->v.bytes.n;
		return f->v.bytes.p || !f->v.bytes.n;
	case BB_TYPE_I64:
		e->v.x = (uint64_t)f->v.i64;
		return 1;
	case BB_TYPE_U64:
		e->v.x = f->v.u64;
		return 1;
	case BB_TYPE_F64:
		memcpy(&e->v.x, &f->v.f64, sizeof(e->v.x));
		return 1;
	case BB_TYPE_BOOL:
		e->v.x = f->v.b;
		return 1;
	}
	return 0;
}

/* bb__str_size - the bytes of a text or byte string of @n bytes in CBOR
 * (inline: @n <= 255). */
static inline __attribute__((always_inline))
uint32_t bb__str_size(size_t n, int inl)
{
	return inl ? bb__text_size(n) : bb__cbor_head(n) + (uint32_t)n;
}

/* bb__event_head_size - the bytes of array(2), the name and the map's head. */
static inline __attribute__((always_inline))
uint32_t bb__event_head_size(size_t nl, size_t nf, int inl)
{
	return 1 + bb__str_size(nl, inl) + bb__cbor_head(nf);
}

/* bb__evf_size - the bytes of the field @e, key and value. */
static inline __attribute__((always_inline))
uint32_t bb__evf_size(struct bb__evf e, int inl)
{
	uint32_t n = bb__str_size(e.kl, inl);

	switch (e.type) {
	case BB_TYPE_STR:
	case BB_TYPE_BYTES: return n + bb__str_size(e.vl, inl);
	case BB_TYPE_I64:   return n + bb__cbor_int_size((int64_t)e.v.x);
	case BB_TYPE_U64:   return n + bb__cbor_head(e.v.x);
	case BB_TYPE_F64:   return n + 9;
	default:            return n + 1;  /* bool */
	}
}

/* bb__put_string - a text (@major 3) or byte string (2) of @n bytes at
 * @p; returns the byte after it. */
static inline __attribute__((always_inline))
uint8_t *bb__put_string(uint8_t *p, unsigned major, const void *s, size_t n, int inl)
{
	if (inl) {
		p = bb__cbor_put_short(major, n, p);
		bb__copy_small(p, bb__opaque(s, n), n);
	} else {
		p = bb__cbor_put_head(major, n, p);
		bb__copy(p, s, n);
	}
	return p + n;
}

/* bb__event_put_head - array(2), the name and the head of the map of @nf
 * fields at @p; returns the byte after it.  Then each field with
 * bb__evf_put(). */
static inline __attribute__((always_inline))
uint8_t *bb__event_put_head(uint8_t *p, const char *name, size_t nl, size_t nf, int inl)
{
	*p++ = 0x82;  /* array(2) */
	p = bb__put_string(p, 3, name, nl, inl);
	return bb__cbor_put_head(5, nf, p);
}

/* bb__evf_put - the field @e, key and value, at @p (bb__evf_size() bytes);
 * returns the byte after it. */
static inline __attribute__((always_inline))
uint8_t *bb__evf_put(uint8_t *p, struct bb__evf e, int inl)
{
	p = bb__put_string(p, 3, e.key, e.kl, inl);
	switch (e.type) {
	case BB_TYPE_STR:
	case BB_TYPE_BYTES:
		return bb__put_string(p, e.type == BB_TYPE_STR ? 3 : 2, e.v.p, e.vl, inl);
	case BB_TYPE_I64: return bb__cbor_put_int((int64_t)e.v.x, p);
	case BB_TYPE_U64: return bb__cbor_put_head(0, e.v.x, p);
	case BB_TYPE_F64: return bb__cbor_put_f64(p, e.v.x);
	default:
		*p = e.v.x ? 0xf5 : 0xf4;  /* bool */
		return p + 1;
	}
}

/* The library's functions, declared again for the fallbacks. */
int (bb_write_kv)(const char *key, const char *value);
int (bb_write_kvn)(const char *key, size_t klen, const char *value, size_t vlen);
int bb_write_kv_i64(const char *key, int64_t v);
int bb_write_kv_u64(const char *key, uint64_t v);
int bb_write_kv_f64(const char *key, double v);
int bb_write_kvn_i64(const char *key, size_t klen, int64_t v);
int bb_write_kvn_u64(const char *key, size_t klen, uint64_t v);
int bb_write_kvn_f64(const char *key, size_t klen, double v);

#if defined(__x86_64__) && defined(__LP64__) && !defined(BB_NO_INLINE)
#define BB__HAVE_KV_FAST 1

/* What bb__kv_fast() writes as the value of the pair. */
#define BB__KV_TEXT 0              /* text: @s, @vl bytes */
#define BB__KV_I64  1              /* integer: @x as int64_t */
#define BB__KV_U64  2              /* unsigned integer: @x */
#define BB__KV_F64  3              /* double: @x holds its bits */

/* bb__kv_library - the library's function for the same record, for a
 * NULL key or one whose length @kl is not known exactly (the key's
 * terminator says it). */
static inline __attribute__((always_inline))
int bb__kv_library(const char *key, size_t kl, int kind, const char *s, size_t vl,
		   uint64_t x)
{
	double d;

	switch (kind) {
	case BB__KV_I64:
		return (bb_write_kv_i64)(key, (int64_t)x);
	case BB__KV_U64:
		return (bb_write_kv_u64)(key, x);
	case BB__KV_F64:
		memcpy(&d, &x, sizeof(d));
		return (bb_write_kv_f64)(key, d);
	default:
		return (bb_write_kvn)(key, kl, s, vl);
	}
}

/* bb__kvn_library - the same with the key's exact length @kl: the key
 * needs no terminator (a std::string_view's, from <blackbox.hpp>) and
 * the library does not measure it again. */
static inline __attribute__((always_inline))
int bb__kvn_library(const char *key, size_t kl, int kind, const char *s, size_t vl,
		    uint64_t x)
{
	double d;

	switch (kind) {
	case BB__KV_I64:
		return bb_write_kvn_i64(key, kl, (int64_t)x);
	case BB__KV_U64:
		return bb_write_kvn_u64(key, kl, x);
	case BB__KV_F64:
		memcpy(&d, &x, sizeof(d));
		return bb_write_kvn_f64(key, kl, d);
	default:
		return (bb_write_kvn)(key, kl, s, vl);
	}
}

/*
 * The inline write protocol, shared by every inline path: the library's
 * bb__begin()/bb__reserve() and bb__commit() (writer.h) for the case they
 * take here, this thread's window on its segment.
 *
 * The nesting protocol is the library's: depth is raised before the window
 * is looked at, so a signal handler that runs after that sees depth > 1
 * and stays off our segment (it takes the shared ring); one that ran before
 * it finished its write before we read head.  A fallback gives the depth
 * back first: the library call starts from depth 0, as if we had never
 * begun.
 */
struct bb__fw {
	const struct bb__fast_box *fb;
	struct bb__fast_tls *t;
	struct bb__sink *r;
	uint8_t *rec;              /* the busy record */
	uint64_t pos;              /* its position in the log */
	uint32_t len;              /* its exact length */
	uint32_t depth;            /* this write's nesting depth (1) */
};

/* The smallest room of any window (a 4 KiB segment, a record fills at
 * most one, envelope and CRC): values up to this size need no room test,
 * and every inline value is smaller (box.c asserts it for the kv paths; an
 * event of 8 fields of two 64-byte strings is about 1.1 KiB), so the test
 * folds away. */
#define BB__ROOM_MIN (BB_SEG_MIN_SIZE - BB_RECORD_HDR_SIZE - BB_CRC_SIZE)

/*
 * bb__fast_begin - enter the nesting section and reserve a record of @n
 * value bytes in this thread's segment, marked busy.  Returns the value
 * area, or NULL when the library must write it (no box, the thread's first
 * write, a nested write, the table CRC, a value over the box's room),
 * having changed nothing.
 */
static inline __attribute__((always_inline))
uint8_t *bb__fast_begin(struct bb__fw *w, uint32_t n)
{
	/* Acquire pairs with the release store publishing the box in
	 * bb_init(): the box is complete before we use it. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	uint64_t end;

	if (__builtin_expect(!box, 0))
		return NULL;
	w->fb = BB__FAST_BOX(box);
	w->t = BB__FAST_TLS();
	w->depth = w->t->depth + 1;
	w->t->depth = w->depth;
	/* Compiler-only: the depth store is emitted before the ring is read
	 * (a signal handler on this thread sees it; there is no other
	 * reader of depth). */
	BB__SIGNAL_FENCE();
	w->r = w->t->window;
	if (__builtin_expect(w->depth != 1 || w->t->gen != w->fb->gen || !w->r ||
			     w->fb->crc == BB__CRC_SW ||
			     (n > BB__ROOM_MIN && n > w->fb->room), 0))
		goto library;
	w->len = BB_RECORD_HDR_SIZE + n + w->fb->trailer;
	w->pos = w->r->head;
	end = w->pos + BB_RECORD_STRIDE(w->len);
	bb__sink_room(w->r, w->pos, end);
	w->rec = bb__sink_busy(w->r, w->pos);
	return w->rec + BB_RECORD_HDR_SIZE;
library:
	/* Compiler-only, as above: nothing of ours is in the ring yet. */
	BB__SIGNAL_FENCE();
	w->t->depth = w->depth - 1;
	return NULL;
}

/*
 * bb__fast_commit - stamp the record of bb__fast_begin(), whose @n value
 * bytes are stored, seal it with @tag (envelope, CRC, commit, publish) and
 * leave the nesting section.
 */
static inline __attribute__((always_inline))
void bb__fast_commit(struct bb__fw *w, uint8_t tag, uint32_t n)
{
	bb__sink_seal(w->r, w->rec, w->pos, w->len, tag, w->fb->rflags, bb__now(w->fb), w->fb, 0,
		      n, NULL, NULL);
	/* Compiler-only: every store of the record is emitted before the
	 * depth is given back; a signal handler that runs after that may
	 * take our ring again. */
	BB__SIGNAL_FENCE();
	w->t->depth = w->depth - 1;
}

/*
 * bb__kv_fast - the record [text(@kl) @key, value] in the caller, where the
 * value is what @kind says (a compile-time constant after inlining: one
 * specialised body per kind).  @kl and, for text, @vl are at most
 * BB__INLINE_STR_MAX (the callers check); constants for literals, and then
 * every CBOR head and copy below is folded.  Same record as the library's
 * bb_write_kvn() / bb_write_kv_i64() / _u64() / _f64(), same returns.
 */
static inline __attribute__((always_inline))
int bb__kv_fast(const char *key, size_t kl, int kind, const char *s, size_t vl, uint64_t x)
{
	struct bb__fw w;
	uint64_t arg = x;
	uint32_t n;
	unsigned major = 0;
	uint8_t *p;

	/* The value's size: a text head of 1 or 2 bytes, an integer head of
	 * 1 to 9 (major 1 takes -1 - v), a float64 of 9. */
	if (kind == BB__KV_I64) {
		major = (unsigned)(x >> 63);
		arg = bb__int_arg((int64_t)x);
	}
	n = 1 + bb__text_size(kl);
	if (kind == BB__KV_TEXT)
		n += bb__text_size(vl);
	else if (kind == BB__KV_F64)
		n += 9;
	else
		n += bb__cbor_head(arg);
	p = bb__fast_begin(&w, n);
	if (__builtin_expect(!p, 0))
		return bb__kvn_library(key, kl, kind, s, vl, x);
	/* The value, n <= BB__INLINE_VALUE_MAX bytes, under any box's room:
	 * array(2) [text(kl) key, value]. */
	*p++ = 0x82;
	p = bb__cbor_put_short(3, kl, p);
	bb__copy_small(p, bb__opaque(key, kl), kl);
	p += kl;
	if (kind == BB__KV_TEXT) {
		p = bb__cbor_put_short(3, vl, p);
		bb__copy_small(p, bb__opaque(s, vl), vl);
	} else if (kind == BB__KV_F64) {
		bb__cbor_put_f64(p, x);
	} else {
		bb__cbor_put_head(major, arg, p);
	}
	bb__fast_commit(&w, BB_TAG_KV, n);
	return 0;
}

/*
 * bb__lit(s) - 1 when the length of the string @s is a compile-time
 * constant (a literal), evaluated where the macros of <blackbox.h> expand.
 * Clang decides __builtin_constant_p of a call before inlining, so the
 * test must be made there, and is passed in; its operand is not
 * evaluated (the argument is evaluated once, as the function's).  GCC
 * decides it after inlining, inside the functions below: there 0 is
 * passed (and at the call site a NULL literal argument would draw
 * -Wnonnull warnings from the unevaluated strlen).
 */
#if defined(__clang__)
#define bb__lit(s) __builtin_constant_p(__builtin_strlen(s))
#define bb__lit_here(s, lit) (lit)
#else
#define bb__lit(s) 0
#define bb__lit_here(s, lit) __builtin_constant_p(__builtin_strlen(s))
#endif

/* bb__len - the length of @s, folded for a literal (@lit), else scanned:
 * above BB__INLINE_STR_MAX for a string too long for the inline path. */
#define bb__len(s, lit) (bb__lit_here(s, lit) ? __builtin_strlen(s) : bb__strlen_upto(s))

/*
 * bb__kv_str - bb_write_kv(@key, @value) (<blackbox.h>): inline when both
 * are at most BB__INLINE_STR_MAX bytes, through the library otherwise
 * (bb_write_kvn() with the lengths from bb__kv_fast(), the function
 * bb_write_kv() for longer or NULL strings: a NULL string keeps its
 * documented -EINVAL).
 */
static inline __attribute__((always_inline))
int bb__kv_str(const char *key, const char *value, int klit, int vlit)
{
	size_t kl, vl;

	(void)klit;
	(void)vlit;
	if (__builtin_expect(!key || !value, 0))
		return (bb_write_kv)(key, value);
	kl = bb__len(key, klit);
	vl = bb__len(value, vlit);
	/* Longer: the library measures them (a strlen() here would be
	 * merged by GCC with the one in bb__lit_here() before that is
	 * folded, and run on every call). */
	if (__builtin_expect(kl > BB__INLINE_STR_MAX || vl > BB__INLINE_STR_MAX, 0))
		return (bb_write_kv)(key, value);
	return bb__kv_fast(key, kl, BB__KV_TEXT, value, vl, 0);
}

/* bb__kv_typed - bb_write_kv_i64/_u64/_f64(@key, value): @kind, the value
 * (or its bits) in @x.  Inline when the key is at most BB__INLINE_STR_MAX
 * bytes; NULL and longer keys take the library's function. */
static inline __attribute__((always_inline))
int bb__kv_typed(const char *key, int klit, int kind, uint64_t x)
{
	size_t kl;

	(void)klit;
	if (__builtin_expect(!key, 0))
		return bb__kv_library(key, 0, kind, NULL, 0, x);
	kl = bb__len(key, klit);
	if (__builtin_expect(kl > BB__INLINE_STR_MAX, 0))
		return bb__kv_library(key, kl, kind, NULL, 0, x);
	return bb__kv_fast(key, kl, kind, NULL, 0, x);
}

/*
 * bb__kvn_str - bb_write_kvn(@key, @kl, @value, @vl) (<blackbox.h>):
 * inline when both lengths are at most BB__INLINE_STR_MAX, through the
 * library otherwise (and for a NULL string, its -EINVAL).  The strings
 * need no terminator.
 */
static inline __attribute__((always_inline))
int bb__kvn_str(const char *key, size_t kl, const char *value, size_t vl)
{
	if (__builtin_expect(!key || !value || kl > BB__INLINE_STR_MAX ||
			     vl > BB__INLINE_STR_MAX, 0))
		return (bb_write_kvn)(key, kl, value, vl);
	return bb__kv_fast(key, kl, BB__KV_TEXT, value, vl, 0);
}

/* bb__kvn_typed - bb_write_kvn_i64/_u64/_f64(@key, @kl, value) inline
 * (<blackbox.hpp>'s typed writes): @kind, the value (or its bits) in @x;
 * the key needs no terminator.  NULL and longer keys take the library. */
static inline __attribute__((always_inline))
int bb__kvn_typed(const char *key, size_t kl, int kind, uint64_t x)
{
	if (__builtin_expect(!key || kl > BB__INLINE_STR_MAX, 0))
		return bb__kvn_library(key, kl, kind, NULL, 0, x);
	return bb__kv_fast(key, kl, kind, NULL, 0, x);
}

static inline __attribute__((always_inline))
int bb__kv_i64(const char *key, int64_t v, int klit)
{
	return bb__kv_typed(key, klit, BB__KV_I64, (uint64_t)v);
}

static inline __attribute__((always_inline))
int bb__kv_u64(const char *key, uint64_t v, int klit)
{
	return bb__kv_typed(key, klit, BB__KV_U64, v);
}

static inline __attribute__((always_inline))
int bb__kv_f64(const char *key, double v, int klit)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bb__kv_typed(key, klit, BB__KV_F64, bits);
}
/* ---- events ------------------------------------------------------------------ */

/* The most fields an inline event takes; more take the library. */
#define BB__EVENT_INLINE_MAX 8

int (bb_write_event)(const char *name, const struct bb_field *f, size_t n);
int (bb_heartbeat)(void);

/*
 * Spans (bb_span_begin(), bb_span_end(), docs/FORMAT.md §6 "Spans"): this
 * thread's open spans, the library's counter (libblackbox/span.c), and the
 * library's writers of a span's records at a depth the caller has counted,
 * for the fallbacks of the inline paths below.  ABI, not API (symbols of
 * LIBBLACKBOX_0.1).
 */
extern __thread uint32_t bb__span_depth __asm__("bb__span_depth_v1")
	__attribute__((tls_model("initial-exec")));
int bb__span_write_begin(const char *name, const struct bb_field *f, size_t n,
			 uint32_t depth);
int bb__span_write_end(uint32_t depth);

int (bb_span_begin)(const char *name, const struct bb_field *f, size_t n);
int (bb_span_end)(void);

/* An event's record through the library, or with @span a span's begin:
 * at @depth once the inline path has counted it, else (0) counted by the
 * library's bb_span_begin(). */
static inline __attribute__((always_inline))
int bb__event_library(const char *name, const struct bb_field *f, size_t nf, int span,
		      uint32_t depth)
{
	if (!span)
		return (bb_write_event)(name, f, nf);
	return depth ? bb__span_write_begin(name, f, nf, depth) : (bb_span_begin)(name, f, nf);
}

/*
 * bb__event_fast - bb_write_event(@name, @f, @nf) (<blackbox.h>) in the
 * caller, the library's record, when @nf is a compile-time constant up to
 * BB__EVENT_INLINE_MAX, every field's type is a compile-time constant,
 * every string (name, keys, text and byte values) is at most
 * BB__INLINE_STR_MAX bytes and the whole fits the box's room.  The loops
 * over the fields are unrolled, so literal keys fold like the kv path's.
 * Anything else, and every invalid argument (its -EINVAL), takes the
 * library's bb_write_event().  The checks and the encoding are the
 * library's (bb__event_args_ok(), bb__evf_read(), bb__evf_put()).
 *
 * When the compiler sees the types: GCC decides __builtin_constant_p right
 * after its main inlining, so the stores of the types must be visible by
 * then: fields written where the call is (BB_STR() ..., member
 * assignments, always_inline helpers; a plain static inline helper may be
 * inlined too late in a big function), and not given since to a call that
 * might change them (another event's library fallback, say).  Under
 * AddressSanitizer the instrumented array hides them.  Either way the
 * event still takes the library, correctly.
 */
static inline __attribute__((always_inline))
int bb__event_fast_as(const char *name, const struct bb_field *f, size_t nf, int nlit,
		      int span)
{
	uint32_t depth = 0;
	const char *key[BB__EVENT_INLINE_MAX];
	size_t nl, kl[BB__EVENT_INLINE_MAX], vl[BB__EVENT_INLINE_MAX];
	union bb__evv ev[BB__EVENT_INLINE_MAX];
	int type[BB__EVENT_INLINE_MAX];
	struct bb__fw w;
	uint32_t n;
	uint8_t *p, *v;
	int fast;

	(void)nlit;
	fast = __builtin_constant_p(nf) && nf <= BB__EVENT_INLINE_MAX &&
	       bb__event_args_ok(name, f, nf);
	if (fast) {
		BB__UNROLL
		for (size_t i = 0; i < nf; i++)
			fast &= __builtin_constant_p(f[i].type);
	}
	if (!fast)
		return bb__event_library(name, f, nf, span, depth);
	nl = bb__len(name, nlit);
	n = bb__event_head_size(nl, nf, 1);
	fast = nl <= BB__INLINE_STR_MAX;
	BB__UNROLL
	for (size_t i = 0; i < nf; i++) {
		struct bb__evf e;

		if (!bb__evf_read(&e, &f[i], 1)) {
			fast = 0;
			break;
		}
		key[i] = e.key;
		kl[i] = e.kl;
		vl[i] = e.vl;
		ev[i] = e.v;
		type[i] = e.type;
		fast &= e.kl <= BB__INLINE_STR_MAX && e.vl <= BB__INLINE_STR_MAX;
		n += bb__evf_size(e, 1);
	}
	if (__builtin_expect(!fast, 0))
		return bb__event_library(name, f, nf, span, depth);
	if (span) {
		/* A span's begin: the thread's depth raised once every field
		 * is read (the fence below would hide their constant types),
		 * stored before the record is written (compiler-only: pairs
		 * with the fence in bb__span_end_fast(); a signal handler on
		 * this thread is the only other reader, and it nests its
		 * spans inside this one and gives the depth back). */
		depth = bb__span_depth + 1;
		bb__span_depth = depth;
		BB__SIGNAL_FENCE();
		/* a depth of one CBOR byte keeps the record's size a
		 * constant (the checksum's loop folds); deeper: the library */
		if (__builtin_expect(depth >= 24, 0))
			return bb__span_write_begin(name, f, nf, depth);
		n += 1;
	}
	p = bb__fast_begin(&w, n);
	if (__builtin_expect(!p, 0))
		return bb__event_library(name, f, nf, span, depth);
	v = p;
	p = bb__event_put_head(p, name, nl, nf, 1);
	BB__UNROLL
	for (size_t i = 0; i < nf; i++) {
		struct bb__evf e;

		e.key = key[i];
		e.kl = kl[i];
		e.vl = vl[i];
		e.v = ev[i];
		e.type = type[i];
		p = bb__evf_put(p, e, 1);
	}
	if (span) {
		/* a span's begin: [name, map, depth] */
		*v = 0x83;
		*p = (uint8_t)depth;
	}
	bb__fast_commit(&w, span ? BB_TAG_SPAN_BEGIN : BB_TAG_EVENT, n);
	return 0;
}

static inline __attribute__((always_inline))
int bb__event_fast(const char *name, const struct bb_field *f, size_t nf, int nlit)
{
	return bb__event_fast_as(name, f, nf, nlit, 0);
}

/*
 * bb__span_begin_fast - bb_span_begin(@name, @f, @nf) (<blackbox.h>): the
 * thread's depth raised and the begin record written as bb__event_fast()
 * writes an event, under the same conditions; the library's otherwise
 * (bb_span_begin() before the depth is counted, bb__span_write_begin() at
 * the depth counted after).
 */
static inline __attribute__((always_inline))
int bb__span_begin_fast(const char *name, const struct bb_field *f, size_t nf, int nlit)
{
	return bb__event_fast_as(name, f, nf, nlit, 1);
}

/* bb__span_end_fast - bb_span_end() (<blackbox.h>): the end record, the
 * depth as a CBOR unsigned, in the caller; the library's with nothing open
 * (its -EINVAL), 24 spans deep or more, or (bb__span_write_end()) when the
 * inline write cannot be made. */
static inline __attribute__((always_inline))
int bb__span_end_fast(void)
{
	uint32_t depth = bb__span_depth;
	struct bb__fw w;
	uint8_t *p;
	int ret = 0;

	/* nothing open (its -EINVAL), or deeper than a depth of one CBOR
	 * byte (a record of constant size here): the library's, which
	 * counts the depth itself */
	if (__builtin_expect(depth - 1 >= 23, 0))
		return (bb_span_end)();
	p = bb__fast_begin(&w, 1);
	if (__builtin_expect(!p, 0)) {
		ret = bb__span_write_end(depth);
	} else {
		*p = (uint8_t)depth;
		bb__fast_commit(&w, BB_TAG_SPAN_END, 1);
	}
	/* Compiler-only: the end is written before the depth is given back
	 * (pairs with the fence in bb__event_fast_as()). */
	BB__SIGNAL_FENCE();
	bb__span_depth = depth - 1;
	return ret;
}

/* ---- heartbeats ---------------------------------------------------------------- */

/*
 * The calling thread's heartbeat word (bb_watchdog(), libblackbox/watchdog.c):
 * its thread slot's heartbeat (FORMAT.md §14) in the box of generation
 * gen; word NULL: no deadline declared.  Library TLS under a versioned
 * name, like bb__tls: a program that beats needs a library that has it.
 */
struct bb__beat {
	uint64_t *word;
	uint32_t gen;
};
extern __thread struct bb__beat bb__beat __asm__("bb__beat_v1")
	__attribute__((tls_model("initial-exec")));

/*
 * bb__heartbeat - bb_heartbeat() (<blackbox.h>) in the caller: one stamp
 * of the box's clock stored into this thread's slot.  No record, no lock,
 * no system call (but the clock's, as every record's), AS-safe.
 */
static inline __attribute__((always_inline))
int bb__heartbeat(void)
{
	/* Acquire pairs with the release store publishing the box, as in
	 * bb__fast_begin(): the fast box fields are the box's. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

	if (__builtin_expect(!box || !bb__beat.word ||
			     bb__beat.gen != BB__FAST_BOX(box)->gen, 0))
		return (bb_heartbeat)();
	/* Relaxed: the stamp orders nothing.  Only this thread stores it;
	 * a watcher compares successive values (FORMAT.md §14), and a torn
	 * read is impossible for an aligned 8-byte store on LP64. */
	BB__STORE_RELAXED(bb__beat.word, bb__now(BB__FAST_BOX(box)));
	return 0;
}
#define BB__HAVE_HEARTBEAT_FAST 1
#endif /* x86-64, !BB_NO_INLINE */

#if defined(__cplusplus)
#pragma GCC diagnostic pop
#endif
#endif /* GNU C */
#endif /* BLACKBOX_INLINE_H */
