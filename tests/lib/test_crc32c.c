/* SPDX-License-Identifier: MIT */
/*
 * Description: the CRC32C of long inputs in three interleaved streams
 * (libblackbox/crc32c.c: blocks joined by a carry-less multiply and a
 * crc32 reduction) is the CRC32C: equal to the table version for every
 * length from 0 to 4200 bytes at every alignment modulo 8, for longer
 * inputs up to 12 KiB, from arbitrary running values; and the writer's
 * checksum of a long record (bb__record_crc_long) equals the readers'
 * (bb__record_crc) around the stream threshold and for 4 KiB.  The
 * library's crc32c.c is compiled into this test (its functions are not
 * exported).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox/format.h>

#include "crc32c.h"

#define MAXLEN (12u << 10)

static uint8_t *buf;

static void setup(void)
{
	uint32_t x = 0x9e3779b9u;

	buf = malloc(MAXLEN + 8);
	cr_assert_not_null(buf);
	for (size_t i = 0; i < MAXLEN + 8; i++) {
		x = x * 1664525u + 1013904223u;   /* any bytes, reproducibly */
		buf[i] = (uint8_t)(x >> 24);
	}
}

static void teardown(void)
{
	free(buf);
}

TestSuite(crc32c, .init = setup, .fini = teardown, .timeout = 120);

static void check(size_t off, size_t n, uint32_t start)
{
	uint32_t want = bb__crc32c_sw(start, buf + off, n);
	uint32_t got = bb__crc32c_long(start, buf + off, n);

	cr_assert_eq(got, want, "length %zu at +%zu from 0x%08x: 0x%08x, want 0x%08x",
		     n, off, start, got, want);
	cr_assert_eq(bb__crc32c(start, buf + off, n), want, "bb__crc32c, length %zu", n);
}

Test(crc32c, streams_equal_the_table_for_every_length_and_alignment)
{
	if (!bb__crc32c_have_hw())
		cr_log_warn("no SSE4.2: bb__crc32c_long() is the table itself here");
	/* Every block size of the streams (32 .. 4096 bytes, chunks of 3x)
	 * starts, ends and combines with the others within 0..4200. */
	for (size_t n = 0; n <= 4200; n++)
		for (size_t off = 0; off < 8; off++)
			check(off, n, 0xffffffffu);
}

Test(crc32c, streams_equal_the_table_for_long_inputs_and_any_start)
{
	uint32_t start = 0x12345678u;

	for (size_t n = 4200; n <= MAXLEN; n += 61) {
		start = start * 2654435761u + 1;
		check(n % 8, n, start);
	}
	check(0, MAXLEN, 0);
	check(3, MAXLEN, 0xdeadbeefu);
}

Test(crc32c, long_record_checksum_equals_the_readers)
{
	static const uint32_t lens[] = { 0, 1, 63, 64, 65, 191, 192, 193, 200, 1000, 4099 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t n = lens[i], len = BB_RECORD_HDR_SIZE + n + BB_CRC_SIZE;
		uint8_t *rec = calloc(1, len);
		uint32_t seq = 2 * 977 + 1, w1;
		uint64_t ts = 0x0123456789abcdefull;

		cr_assert_not_null(rec);
		w1 = len | (uint32_t)BB_TAG_BYTES << 16 | (uint32_t)BB_RF_CRC << 24;
		memcpy(rec, &seq, 4);
		memcpy(rec + 4, &w1, 4);
		memcpy(rec + 8, &ts, 8);
		memcpy(rec + BB_RECORD_HDR_SIZE, buf + i, n);
#if defined(__x86_64__)
		if (bb__crc32c_have_hw())
			cr_assert_eq(bb__record_crc_long(seq, w1, ts, rec + BB_RECORD_HDR_SIZE, n),
				     bb__record_crc(seq, rec, len), "value of %u bytes", n);
#endif
		free(rec);
	}
}

Test(crc32c, short_record_checksum_with_the_folded_xor_equals_the_readers)
{
	/* bb__record_crc_hw() (<blackbox/inline.h>: the inline paths and
	 * the library's short records) applies CRC32C's final xor before
	 * the stamp's crc32q, through BB__CRC_XOROUT_PRE: that constant must
	 * be the register value the instruction maps to 0xffffffff on a zero
	 * word, and the checksum must equal the readers' for every length
	 * under 64 bytes and stamps with any bits set. */
#if defined(__x86_64__)
	if (!bb__crc32c_have_hw())
		cr_skip_test("no SSE4.2 crc32 instruction");
	cr_assert_eq((uint32_t)bb__crc_q64(BB__CRC_XOROUT_PRE, 0), 0xffffffffu);
	for (uint32_t n = 0; n < 64; n++) {
		uint32_t len = BB_RECORD_HDR_SIZE + n + BB_CRC_SIZE, seq = 2 * n, w1;
		uint8_t rec[BB_RECORD_HDR_SIZE + 64 + BB_CRC_SIZE];
		uint64_t ts = 0x8000000000000001ull * (n + 1) ^ ((uint64_t)n << 29);

		w1 = len | (uint32_t)BB_TAG_KV << 16 | (uint32_t)BB_RF_CRC << 24;
		memcpy(rec, &seq, 4);
		memcpy(rec + 4, &w1, 4);
		memcpy(rec + 8, &ts, 8);
		memcpy(rec + BB_RECORD_HDR_SIZE, buf + n, n);
		cr_assert_eq(bb__record_crc_hw(seq, w1, ts, rec + BB_RECORD_HDR_SIZE, n),
			     bb__record_crc(seq, rec, len), "value of %u bytes", n);
	}
#else
	cr_skip_test("x86-64 only");
#endif
}
