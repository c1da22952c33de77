/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h - CRC32C (Castagnoli) for record checksums, docs/FORMAT.md §11.
 * Internal, shared by the writer and every reader.
 */
#ifndef BB_CRC32C_H
#define BB_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * bb__crc32c - continue a CRC32C over @n bytes at @p.  @crc is the running
 * value without the final xor: start with 0xffffffff, xor the result with
 * 0xffffffff at the end.  Uses the SSE4.2 crc32 instruction when the CPU
 * has it (chosen once at load), a table otherwise.  AS-safe.
 */
uint32_t bb__crc32c(uint32_t crc, const void *p, size_t n);

/*
 * bb__record_crc - the checksum FORMAT.md §11 defines for a record (or a
 * state slot, or the crash area) of exact length @len at @rec whose
 * committed seq word is @seq: CRC32C over seq as 4 little-endian bytes,
 * rec[4 .. 8) (len, tag, flags), rec[16 .. len - 4) (extensions, value),
 * then rec[8 .. 16) (the stamp).  @len must be >= BB_RECORD_HDR_SIZE + 4; the
 * caller has bounds-checked it.  AS-safe.
 */
uint32_t bb__record_crc(uint32_t seq, const void *rec, uint32_t len);

/* bb__crc32c_have_hw - true when bb__crc32c() uses the SSE4.2 instruction
 * (the writer then computes record CRCs inline, writer.h).  AS-safe. */
int bb__crc32c_have_hw(void);

/* bb__crc32c_sw - the table version, always; for tests and benchmarks. */
uint32_t bb__crc32c_sw(uint32_t crc, const void *p, size_t n);

#if defined(__x86_64__)
#include <string.h>

/*
 * The SSE4.2 crc32 instruction through inline asm rather than the
 * __builtin_ia32_crc32* intrinsics: those need target("sse4.2") on the
 * calling function, and a target-specific function cannot be inlined into
 * the writers (compiled for baseline x86-64).  Execute only when the CPU
 * has SSE4.2 (bb__crc32c_have_hw()).
 */
static inline uint64_t bb__crc_q64(uint64_t c, uint64_t v)
{
	__asm__("crc32q %1, %0" : "+r"(c) : "rm"(v));
	return c;
}

/*
 * bb__crc32c_hw_update - bb__crc32c() with the instruction, inline.  The
 * running value @c is kept in a 64-bit register (crc32q's operand size): a
 * 32-bit one costs a zero-extending move per 8 bytes.
 *
 * Written for the writer's values, which are mostly under 64 bytes: whole
 * 64-byte blocks in a loop, then what is left as at most one block each of
 * 32, 16, 8, 4, 2 and 1 bytes, chosen by the bits of n.  Straight-line
 * code with constant offsets: for a 16-byte value that is 6 tests and 2
 * crc32q, against a loop's set-up, compare and pointer step per word
 * (BENCHMARKS.md "Issue 6 floor, third session").  Takes and returns the
 * running value without the final xor, like bb__crc32c().
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
#endif

#endif /* BB_CRC32C_H */
