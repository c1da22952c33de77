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

/*
 * bb__crc32c_long - bb__crc32c() with the instruction for a long input, in
 * three interleaved streams when the CPU has PCLMULQDQ (crc32c.c), in one
 * otherwise; bb__crc32c() takes it for BB__CRC_LONG_MIN bytes and more.
 * The table version where there is no SSE4.2 or no x86-64.  AS-safe.
 */
uint32_t bb__crc32c_long(uint32_t crc, const void *p, size_t n);
#define BB__CRC_LONG_MIN 192

/* bb__record_crc_long - bb__record_crc_hw() (<blackbox/inline.h>, envelope
 * passed by value) out of line, with bb__crc32c_long() for @n value bytes
 * from BB__CRC_LONG_MIN on: the writer's checksum of a long record (x86-64
 * with SSE4.2 only).  AS-safe. */
uint32_t bb__record_crc_long(uint32_t seq, uint32_t w1, uint64_t ts, const uint8_t *p,
			     uint32_t n);

/* bb__crc32c_have_hw - true when bb__crc32c() uses the SSE4.2 instruction
 * (the writer then computes record CRCs inline, writer.h).  AS-safe. */
int bb__crc32c_have_hw(void);

/* bb__crc32c_sw - the table version, always; for tests and benchmarks. */
uint32_t bb__crc32c_sw(uint32_t crc, const void *p, size_t n);

/* bb__crc_q64() and bb__crc32c_hw_update(), the instruction inline (x86-64
 * only), are in <blackbox/inline.h> (which <blackbox.h> includes): the
 * inline paths of the writers use them too. */
#include <blackbox.h>

#endif /* BB_CRC32C_H */
