/* SPDX-License-Identifier: MIT */
/*
 * crc32c.c - CRC32C, hardware (SSE4.2) with a table fallback, and long
 * inputs in three interleaved streams.
 *
 * The table and the stream constants are computed by the constructor, at
 * load, so that the first use may be in a signal handler (a lazily built
 * table would not be AS-safe).  The hardware choice is made in the same
 * place, once.
 *
 * Streams.  The crc32 instruction has a latency of 3 cycles and a
 * throughput of one per cycle (Zen 4, and Intel since Nehalem): one running
 * value waits on itself, a third of the instruction's throughput
 * (BENCHMARKS.md "Write path against the clock").  Three running values
 * over three consecutive blocks A, B, C of L bytes keep it busy, and the
 * CRC's linearity joins them.  With raw register values (no final xor),
 * processing a message M from the register r gives
 *     crc(r, M) = shift(r, |M|) ^ crc(0, M),  shift(r, L) = r * x^(8L) mod P
 * so
 *     crc(r, A B C) = shift(crc(r, A), 2L) ^ shift(crc(0, B), L) ^ crc(0, C).
 * A shift by a fixed L is one carry-less multiply (PCLMULQDQ) of r by the
 * constant x^(8L - 33) mod P, reduced by one crc32 of the 64-bit product:
 * crc32q(0, d) computes d * x^32 mod P, and the product of two reflected
 * 32-bit values is the reflected product times x, whence the 33.
 * tests/lib/test_integrity.c checks every length from 0 to 10 KiB at every
 * alignment modulo 8 against the table.
 */
#include <string.h>

#include <blackbox/format.h>

#include "crc32c.h"

#define BB__CRC32C_POLY 0x82f63b78u /* reflected Castagnoli */

static uint32_t bb__crc_table[256];
static uint32_t (*bb__crc_impl)(uint32_t, const void *, size_t) = bb__crc32c_sw;

/*
 * Block sizes of the streams, largest first: a long input takes chunks of
 * 3 * L bytes for the largest L that fits, then the next smaller, ... (at
 * most one chunk per size below the largest), and the last bytes (under
 * 3 * 32) in one stream.  bb__shift_k[i] are the constants of
 * bb__stream_len[i]: x^(8L - 33) and x^(16L - 33) mod P, reflected.
 */
static const uint32_t bb__stream_len[] = { 4096, 2048, 1024, 512, 256, 128, 64, 32 };
#define BB__STREAM_SIZES (sizeof(bb__stream_len) / sizeof(bb__stream_len[0]))
static uint32_t bb__shift_k[BB__STREAM_SIZES][2];
static int bb__have_clmul;

uint32_t bb__crc32c_sw(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		crc = bb__crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* x^m mod P, reflected (bit 31 is x^0): m multiplications by x. */
static uint32_t bb__xpow(uint32_t m)
{
	uint32_t v = 0x80000000u;

	while (m--)
		v = v & 1 ? (v >> 1) ^ BB__CRC32C_POLY : v >> 1;
	return v;
}

#if defined(__x86_64__)
typedef long long bb__v2di __attribute__((vector_size(16)));

/* shift(r, L) for the constant k of L (above): PCLMULQDQ, then crc32q.
 * Executed only when the CPU has PCLMULQDQ (bb__have_clmul). */
static inline uint64_t bb__shift(uint64_t r, uint32_t k)
{
	bb__v2di a = { (long long)(uint32_t)r, 0 }, b = { (long long)k, 0 };

	__asm__("pclmulqdq $0x00, %1, %0" : "+x"(a) : "x"(b));
	return bb__crc_q64(0, (uint64_t)a[0]);
}

/* One chunk of 3 * @len bytes at @p: three streams, joined. */
static inline uint64_t bb__chunk(uint64_t c, const uint8_t *p, size_t len, const uint32_t *k)
{
	uint64_t b = 0, d = 0;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t x, y, z;

		memcpy(&x, p + i, 8);
		memcpy(&y, p + len + i, 8);
		memcpy(&z, p + 2 * len + i, 8);
		c = bb__crc_q64(c, x);
		b = bb__crc_q64(b, y);
		d = bb__crc_q64(d, z);
	}
	return bb__shift(c, k[1]) ^ bb__shift(b, k[0]) ^ d;
}

uint32_t bb__crc32c_long(uint32_t crc, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint64_t c = crc;

	if (!bb__have_clmul)
		return (uint32_t)bb__crc32c_hw_update(c, p, n);
	for (size_t i = 0; i < BB__STREAM_SIZES; i++) {
		size_t len = bb__stream_len[i];

		while (n >= 3 * len) {
			c = bb__chunk(c, p, len, bb__shift_k[i]);
			p += 3 * len;
			n -= 3 * len;
		}
	}
	return (uint32_t)bb__crc32c_hw_update(c, p, n);
}

static uint32_t bb__crc32c_hw(uint32_t crc, const void *p, size_t n)
{
	if (n >= BB__CRC_LONG_MIN)
		return bb__crc32c_long(crc, p, n);
	return (uint32_t)bb__crc32c_hw_update(crc, p, n);
}
#else
uint32_t bb__crc32c_long(uint32_t crc, const void *p, size_t n)
{
	return bb__crc32c(crc, p, n);
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
	for (size_t i = 0; i < BB__STREAM_SIZES; i++) {
		bb__shift_k[i][0] = bb__xpow(8 * bb__stream_len[i] - 33);
		bb__shift_k[i][1] = bb__xpow(16 * bb__stream_len[i] - 33);
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) {
		bb__have_clmul = __builtin_cpu_supports("pclmul");
		bb__crc_impl = bb__crc32c_hw;
	}
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

#if defined(__x86_64__)
uint32_t bb__record_crc_long(uint32_t seq, uint32_t w1, uint64_t ts, const uint8_t *p,
			     uint32_t n)
{
	uint64_t c = bb__crc_q64(0xffffffffu, (uint64_t)seq | (uint64_t)w1 << 32);

	c = n >= BB__CRC_LONG_MIN ? bb__crc32c_long((uint32_t)c, p, n) :
		bb__crc32c_hw_update(c, p, n);
	return (uint32_t)bb__crc_q64(c, ts) ^ 0xffffffffu;
}
#endif

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
