/* SPDX-License-Identifier: MIT */
/*
 * shared/json.h - the one JSON string escaper of the project: bb-extract's
 * JSON output and bb-reap's JSON decisions.  Internal, do not use outside
 * the project.  AS-safe (no allocation).
 */
#ifndef BB_SHARED_JSON_H
#define BB_SHARED_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "utf8.h"

/*
 * Does any of the 8 bytes in @x need a look in a JSON string: '"', '\\',
 * a control character (< 0x20) or a byte >= 0x80 (UTF-8 to validate)?
 * The classic "has a zero byte" test (x - 0x01..) & ~x & 0x80..: a borrow
 * can only flag bytes above a real hit, so "any" is exact; applied to
 * x ^ '"', x ^ '\\' and, for "< 0x20", to x with 0x20 subtracted.
 */
static inline bool bb__json_esc_needed8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
	uint64_t lt = (x - ones * 0x20) & ~x;  /* a byte below 0x20 */
	uint64_t zq = (q - ones) & ~q;         /* a '"' */
	uint64_t zb = (b - ones) & ~b;         /* a '\\' */

	/* a byte >= 0x80 has its high bit in x itself (and is masked out of
	 * lt by ~x, harmlessly: it is flagged anyway) */
	return ((lt | zq | zb | x) & high) != 0;
}

/* Bytes bb__json_escape() writes for @n bytes at most: \u00XX or \ufffd
 * for each input byte at worst. */
#define BB__JSON_ESC_MAX(n) (6 * (n))

/*
 * bb__json_escape - the body of a JSON string (no quotes) for the @n
 * untrusted bytes at @s, at @d, which has room for BB__JSON_ESC_MAX(@n)
 * bytes: '"' and '\\' escaped, C0 controls as \n \t \r \b \f or \u00XX,
 * C1 controls (U+0080..U+009F) as \u00XX too (the same value for a JSON
 * parser, nothing a terminal could act on), U+FFFD (\ufffd) for each byte
 * that is not part of valid UTF-8; everything else as it is.  Runs of 8
 * plain ASCII bytes are moved whole.  Returns the bytes written.
 */
static inline size_t bb__json_escape(char *d, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *p = d;
	size_t i = 0, k;
	uint32_t cp;

	while (i < n) {
		uint8_t c;

		while (n - i >= 8) {
			uint64_t x;

			memcpy(&x, s + i, 8);
			if (bb__json_esc_needed8(x))
				break;
			memcpy(p, &x, 8);
			p += 8;
			i += 8;
		}
		if (i == n)
			break;
		c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			*p++ = (char)c;
			i++;
			continue;
		}
		if (c >= 0x80) {
			k = bb__utf8_seq(s + i, n - i, &cp);
			if (k == 2 && cp < 0xa0) { /* a C1 control */
				memcpy(p, "\\u00", 4);
				p[4] = hex[s[i + 1] >> 4];
				p[5] = hex[s[i + 1] & 15];
				p += 6;
				i += 2;
			} else if (k) {
				memcpy(p, s + i, k);
				p += k;
				i += k;
			} else {
				memcpy(p, "\\ufffd", 6);
				p += 6;
				i++;
			}
			continue;
		}
		*p++ = '\\';
		switch (c) {
		case '"':  *p++ = '"';  break;
		case '\\': *p++ = '\\'; break;
		case '\n': *p++ = 'n';  break;
		case '\t': *p++ = 't';  break;
		case '\r': *p++ = 'r';  break;
		case '\b': *p++ = 'b';  break;
		case '\f': *p++ = 'f';  break;
		default:
			memcpy(p, "u00", 3);
			p[3] = hex[c >> 4];
			p[4] = hex[c & 15];
			p += 5;
		}
		i++;
	}
	return (size_t)(p - d);
}

/*
 * bb__json_cut - where to end a piece of the @n bytes at @s that is at
 * most @max (> 3) bytes long, so that escaping it and the rest apart
 * gives what escaping them together does: not before a byte of a UTF-8
 * sequence that started in the piece (the first byte of the rest is not
 * a continuation byte, or none of the 3 before it starts a sequence).
 */
static inline size_t bb__json_cut(const uint8_t *s, size_t n, size_t max)
{
	size_t c;

	if (n <= max)
		return n;
	for (c = max; c > max - 3 && (s[c] & 0xc0) == 0x80; c--)
		;
	return (s[c] & 0xc0) == 0x80 ? max : c;
}

#endif /* BB_SHARED_JSON_H */
