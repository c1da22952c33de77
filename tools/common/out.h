/* SPDX-License-Identifier: MIT */
/*
 * out.h - the tools' buffered output: formatting goes into fixed 64 KiB
 * buffers; a full buffer is written either with write(2) or, when built
 * with liburing and allowed at run time, with io_uring so that the next
 * buffer is formatted while the previous ones are being written.
 *
 * One thread uses a struct bbx_out.  Errors are sticky: the first failed
 * write is kept in ->err (negative errno) and later output is discarded.
 */
#ifndef BBX_OUT_H
#define BBX_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BBX_OUT_BUFSZ  (64u * 1024u)
#define BBX_OUT_NBUF   4u

struct bbx_uring;

struct bbx_out {
	int      fd;
	char    *buf;      /* current buffer being filled */
	size_t   len;      /* bytes used in buf */
	int      err;      /* first error, negative errno; 0 if none */
	uint64_t bytes;    /* total bytes handed to the kernel (or queued) */
	struct bbx_uring *u; /* NULL: plain write(2) */
	char    *plain;    /* the single buffer of the plain path */
};

/*
 * bbx_out_open - set up output to @fd.  @want_uring asks for the io_uring
 * path; it silently falls back to write(2) when liburing is not built in or
 * io_uring_queue_init() fails (EPERM under seccomp, ENOSYS, ENOMEM ...).
 * Returns 0 or -ENOMEM.
 */
int bbx_out_open(struct bbx_out *o, int fd, bool want_uring);

/* Is the io_uring path in use? */
bool bbx_out_is_uring(const struct bbx_out *o);

/* Hand the current buffer to the kernel (internal; use the helpers below). */
void bbx__out_spill(struct bbx_out *o);

/*
 * bbx_out_flush - write everything buffered and wait until it is written.
 * Returns 0 or the sticky error.
 */
int bbx_out_flush(struct bbx_out *o);

/* Flush and release.  Returns 0 or the sticky error. */
int bbx_out_close(struct bbx_out *o);

/*
 * bbx_out_reserve - a pointer to at least @n free bytes (n <= BBX_OUT_BUFSZ)
 * in the current buffer; commit what you used with bbx_out_commit().  A
 * larger @n is a bug of the caller (text of any length goes through a
 * chunked writer: bbx_out_put(), bbx_put_escaped()): the program aborts
 * rather than write past the buffer.
 */
static inline char *bbx_out_reserve(struct bbx_out *o, size_t n)
{
	if (n > BBX_OUT_BUFSZ)
		abort();
	if (BBX_OUT_BUFSZ - o->len < n)
		bbx__out_spill(o);
	return o->buf + o->len;
}

static inline void bbx_out_commit(struct bbx_out *o, size_t n)
{
	o->len += n;
}

/* Append @n bytes of any length. */
static inline void bbx_out_put(struct bbx_out *o, const void *p, size_t n)
{
	const char *s = p;

	while (n) {
		size_t room = BBX_OUT_BUFSZ - o->len, k;

		if (!room) {
			bbx__out_spill(o);
			room = BBX_OUT_BUFSZ;
		}
		k = n < room ? n : room;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

static inline void bbx_out_str(struct bbx_out *o, const char *s)
{
	bbx_out_put(o, s, strlen(s));
}

static inline void bbx_out_char(struct bbx_out *o, char c)
{
	*bbx_out_reserve(o, 1) = c;
	o->len++;
}

#endif /* BBX_OUT_H */
