/* SPDX-License-Identifier: MIT */
/*
 * shared/utf8.h - the one UTF-8 check of libblackbox and its tools (the
 * terminal escaper, JSON and CBOR output, the CBOR decoder's text check).
 * Internal, do not use outside the project.  AS-safe.
 */
#ifndef BB_SHARED_UTF8_H
#define BB_SHARED_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * bb__utf8_seq - the length (2 to 4) of the valid UTF-8 sequence at @s,
 * whose first byte is 0x80 or more, with @n > 0 bytes left; 0 when it is
 * not one: strictly RFC 3629, no overlong forms, no UTF-16 surrogates,
 * nothing above U+10FFFF.  *@cp gets the code point.
 */
static inline size_t bb__utf8_seq(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t c = s[0];
	size_t len;
	uint32_t v;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, v = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Is @s (@n bytes) valid UTF-8 throughout? */
static inline bool bb__utf8_valid(const uint8_t *s, size_t n)
{
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k) {
		k = s[i] < 0x80 ? 1 : bb__utf8_seq(s + i, n - i, &cp);
		if (!k)
			return false;
	}
	return true;
}

#endif /* BB_SHARED_UTF8_H */
