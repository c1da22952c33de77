/* SPDX-License-Identifier: MIT */
/*
 * text.h - helpers of text.c shared with the reader.  Internal, do not use
 * outside the library.
 */
#ifndef BB_TEXT_H
#define BB_TEXT_H

#include <stddef.h>
#include <stdint.h>

/*
 * bb__owner_decode - decode a BB_TAG_OWNER value, CBOR array(4)
 * [tid, thread name, previous tid, previous name].  Names are copied
 * NUL-terminated and cut to their buffers.  Returns 0 or -EBADMSG.
 * Allocation-free, AS-safe.
 */
int bb__owner_decode(const uint8_t *value, size_t len,
		     int32_t *tid, char *name, size_t namelen,
		     int32_t *prev_tid, char *prev, size_t prevlen);

#endif /* BB_TEXT_H */
