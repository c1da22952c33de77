/* SPDX-License-Identifier: MIT */
/*
 * crc32c.c - CRC32C, hardware (SSE4.2) with a table fallback.
 *
 * The table is computed by the constructor, at load, so that the first use
 * may be in a signal handler (a lazily built table would not be AS-safe).
 * The hardware choice is made in the same place, once.
 */
#include <string.h>

#include <blackbox/format.h>

#include "crc32c.h"

#define BB__CRC32C_POLY 0x82f63b78u /* reflected Castagnoli */

static uint32_t bb__crc_table[256];
static uint32_t (*bb__crc_impl)(uint32_t, const void *, size_t) = bb__crc32c_sw;

uint32_t bb__crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		crc = bb__crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
static uint32_t bb__crc32c_hw(uint32_t crc, const void *p, size_t n)
{
	return (uint32_t)bb__crc32c_hw_update(crc, p, n);
}
#endif

__attribute__((constructor))
static void bb__crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ BB__CRC32C_POLY : c >> 1;
		bb__crc_table[i] = c;
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		bb__crc_impl = bb__crc32c_hw;
#endif
}

int bb__crc32c_have_hw(void)
{
#if defined(__x86_64__)
	return bb__crc_impl == bb__crc32c_hw;
#else
	return 0;
#endif
}

uint32_t bb__crc32c(uint32_t crc, const void *p, size_t n)
{
	return bb__crc_impl(crc, p, n);
}

uint32_t bb__record_crc(uint32_t seq, const void *rec, uint32_t len)
{
	uint8_t le[4] = { (uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)(seq >> 16),
			  (uint8_t)(seq >> 24) };
	const uint8_t *b = rec;
	uint32_t crc = bb__crc32c(0xffffffffu, le, 4);

	/* FORMAT.md §11: len/tag/flags, extensions and value, then the stamp
	 * (last, so the writer folds it in after the clock read). */
	crc = bb__crc32c(crc, b + 4, 4);
	crc = bb__crc32c(crc, b + 16, len - 16 - BB_CRC_SIZE);
	crc = bb__crc32c(crc, b + 8, 8);
	return crc ^ 0xffffffffu;
}
