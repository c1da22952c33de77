/* SPDX-License-Identifier: MIT */
/*
 * shared/fnv.h - 64-bit FNV-1a, the one hash of the tools' grouping keys
 * (bb-reap's BB_STACK_HASH, bb-extract's crash groups): a key that is the
 * same wherever it is computed, not a defence against anyone.  Internal.
 * AS-safe.
 */
#ifndef BB_SHARED_FNV_H
#define BB_SHARED_FNV_H

#include <stddef.h>
#include <stdint.h>

#define BB__FNV64_INIT UINT64_C(0xcbf29ce484222325)

/* @h (BB__FNV64_INIT to start) extended by the @n bytes at @s. */
static inline uint64_t bb__fnv1a64(uint64_t h, const void *s, size_t n)
{
	const uint8_t *p = s;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

#endif /* BB_SHARED_FNV_H */
