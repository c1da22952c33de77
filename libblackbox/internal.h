/* SPDX-License-Identifier: MIT */
/* internal.h - private to libblackbox.  Internal, do not use. */
#ifndef BB_INTERNAL_H
#define BB_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

/* Marks a definition as part of the exported ABI (see libblackbox.map). */
#define BB_EXPORT __attribute__((visibility("default")))

/* bounded, AS-safe string helpers (no locale, no malloc) */
size_t bb__strlcpy(char *dst, const char *src, size_t size);

/* A small file (/proc) into @buf, NUL-terminated: bytes read or -errno. */
ssize_t bb__read_file(const char *path, char *buf, size_t len);

#endif /* BB_INTERNAL_H */
