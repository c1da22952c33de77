/* SPDX-License-Identifier: MIT */
/*
 * prefetch.h - bb-extract --all: read the box files ahead with io_uring
 * (several reads in flight, across boxes) while earlier boxes are being
 * decoded.  Without io_uring (not built, refused by the kernel or a
 * policy) bbx_pf_init() fails and the caller reads each box the plain way;
 * any error on one box makes bbx_pf_take() fail for that box alone, and
 * the caller falls back to the plain path for it.  Never a hard failure.
 */
#ifndef BBX_PREFETCH_H
#define BBX_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

struct bbx_pf;

/* Read the files @names[0..n) of directory @dfd, at most @depth ahead.
 * NULL if io_uring is unavailable. */
struct bbx_pf *bbx_pf_init(int dfd, char *const *names, size_t n, unsigned depth);

/*
 * Wait for box @i (taken in increasing order) and hand over its bytes
 * (*buf, free() it) with the identity of the file read.  Returns 0, or a
 * negative errno (nothing handed over).
 */
int bbx_pf_take(struct bbx_pf *pf, size_t i, void **buf, size_t *len,
		uint64_t *dev, uint64_t *ino);

void bbx_pf_free(struct bbx_pf *pf);

#endif /* BBX_PREFETCH_H */
