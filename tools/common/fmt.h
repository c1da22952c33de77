/* SPDX-License-Identifier: MIT */
/*
 * fmt.h - the tools' number and time formatting: decimal integers, the
 * nanoseconds of a record with the seconds' digits cached, RFC 3339 time.
 * They write into a caller's buffer and return the number of bytes written
 * (no NUL).  The integer formatters are inline: every record calls them.
 */
#ifndef BBX_FMT_H
#define BBX_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Nanoseconds in decimal with the seconds' digits cached: consecutive
 * records fall in the same second.  Writes up to 20 bytes
 * (reserve 32: the cached digits are moved as one 16-byte block).
 */
struct bbx_ns_cache {
	uint64_t sec;
	uint8_t  len;
	char     digits[16];
};

/* "2026-11-21T13:45:01.123456789Z" (30 bytes, more for years > 9999). */
#define BBX_TIME_MAX 48
size_t bbx_fmt_time(char *p, int64_t wall_ns);

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/*
 * Exactly 8 digits of @v (< 10^8), all at once in one 64-bit word (SWAR):
 * split into two 4-digit lanes of 32 bits (v / 10^4, v % 10^4), each lane
 * into two 2-digit lanes of 16 bits (x / 100 as x * 10486 >> 20), each of
 * those into two digits of 8 bits (y / 10 as y * 103 >> 10).  Both
 * reciprocals are exact in their ranges (x < 10^4, y < 100; checked for
 * all 10^8 inputs when written, and by tests/extract/test_emit), and no
 * lane's product reaches the next lane.  The most significant digit lands
 * in the lowest byte: the word is stored little-endian.
 */
static inline void fmt8(char *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t x = (uint64_t)(v / 10000) | (uint64_t)(v % 10000) << 32;
	uint64_t h = ((x * 10486) >> 20) & 0x0000007f0000007full;

	x = h | (x - h * 100) << 16;
	h = ((x * 103) >> 10) & 0x000f000f000f000full;
	x = h | (x - h * 10) << 8;
	x += 0x3030303030303030ull; /* '0' in every byte */
	memcpy(p, &x, 8);
#else
	for (int w = 8; w > 0; w -= 2) {
		uint32_t d = (v % 100) * 2;

		v /= 100;
		p[w - 2] = digits2[d];
		p[w - 1] = digits2[d + 1];
	}
#endif
}

/* Digits of @v (< 10^8), written from the start of @p; returns the count. */
static inline size_t fmt_u32_small(char *p, uint32_t v)
{
	size_t n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 :
		   v < 100000 ? 5 : v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
	size_t i = n;

	while (v >= 100) {
		uint32_t d = (v % 100) * 2;

		v /= 100;
		p[--i] = digits2[d + 1];
		p[--i] = digits2[d];
	}
	if (v >= 10) {
		p[--i] = digits2[v * 2 + 1];
		p[--i] = digits2[v * 2];
	} else {
		p[--i] = (char)('0' + v);
	}
	return n;
}

/* In 8-digit chunks: 32-bit divisions only below the top one. */
static inline size_t bbx_fmt_u64(char *p, uint64_t v)
{
	size_t n;

	if (v < 100000000)
		return fmt_u32_small(p, (uint32_t)v);
	if (v < 10000000000000000ull) {
		n = fmt_u32_small(p, (uint32_t)(v / 100000000));
		fmt8(p + n, (uint32_t)(v % 100000000));
		return n + 8;
	}
	n = fmt_u32_small(p, (uint32_t)(v / 10000000000000000ull));
	v %= 10000000000000000ull;
	fmt8(p + n, (uint32_t)(v / 100000000));
	fmt8(p + n + 8, (uint32_t)(v % 100000000));
	return n + 16;
}

/* Exactly 9 digits of @ns (< 10^9). */
static inline void fmt_ns9(char *p, uint32_t ns)
{
	p[0] = (char)('0' + ns / 100000000);
	fmt8(p + 1, ns % 100000000);
}

/* The digits of @sec (> 0) from the cache; writes 16 bytes, returns the count. */
static inline size_t fmt_sec_cached(struct bbx_ns_cache *c, char *p, uint64_t sec)
{
	if (sec != c->sec || !c->len) {
		c->len = (uint8_t)bbx_fmt_u64(c->digits, sec);
		c->sec = sec;
	}
	memcpy(p, c->digits, sizeof(c->digits)); /* fixed size: one move */
	return c->len;
}

static inline size_t bbx_fmt_ns(struct bbx_ns_cache *c, char *p, uint64_t v)
{
	uint64_t sec = v / 1000000000;
	size_t n;

	if (!sec)
		return bbx_fmt_u64(p, v);
	n = fmt_sec_cached(c, p, sec);
	fmt_ns9(p + n, (uint32_t)(v % 1000000000));
	return n + 9u;
}

static inline size_t bbx_fmt_i64(char *p, int64_t v)
{
	if (v >= 0)
		return bbx_fmt_u64(p, (uint64_t)v);
	*p = '-';
	/* -(v + 1) + 1 is |v| without overflowing at INT64_MIN */
	return 1 + bbx_fmt_u64(p + 1, (uint64_t)(-(v + 1)) + 1);
}

#endif /* BBX_FMT_H */
