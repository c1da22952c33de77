/* SPDX-License-Identifier: MIT */
/*
 * shared/hex.h - bytes as lowercase hex digits, the one encoder of build
 * ids and byte strings in the tools' output.  Internal.  AS-safe.
 */
#ifndef BB_SHARED_HEX_H
#define BB_SHARED_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Write the 2 * @n hex digits of the @n bytes at @p to @out (no NUL). */
static inline void bb__hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
}

#endif /* BB_SHARED_HEX_H */
