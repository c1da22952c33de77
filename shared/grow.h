/* SPDX-License-Identifier: MIT */
/*
 * shared/grow.h - the one growable-array helper of the library's reader and
 * the tools: room for a number of elements, doubling the capacity, with the
 * size overflow checked before any realloc().  Internal.  Not AS-safe
 * (realloc): never on a write path.
 */
#ifndef BB_SHARED_GROW_H
#define BB_SHARED_GROW_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * bb__grow - room in *@p for @need elements of @elem bytes (@elem > 0).
 * *@cap is the capacity in elements; it doubles from 16 until @need fits.
 * On success *@p and *@cap are updated and 0 is returned; -ENOMEM when the
 * size in bytes would overflow size_t or realloc() fails (*@p and *@cap are
 * then unchanged, and *@p still owns its elements).
 */
static inline int bb__grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* bb__grow for a typed pointer: BB__GROW(&arr, &cap, n + 1). */
#define BB__GROW(pp, capp, need) \
	bb__grow((void **)(pp), (capp), (need), sizeof(**(pp)))

#endif /* BB_SHARED_GROW_H */
