/* SPDX-License-Identifier: MIT */
/*
 * text.h - text of the library shared by its files: the bounded string
 * copy, a bounded, NUL-terminated output buffer (struct bb__out; escape.c,
 * value.c) and the owner record decoder of value.c (the reader's walk,
 * bb_dump).  Internal, do not use outside the library.
 *
 * Everything here is async-signal-safe: no malloc, no stdio, no locale.
 */
#ifndef BB_TEXT_H
#define BB_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* strlcpy(3): copy what fits of @src, NUL-terminated when @size > 0;
 * returns strlen(@src) (a cut when >= @size). */
static inline size_t bb__strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size) {
		size_t c = n < size - 1 ? n : size - 1;

		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

struct bb__out {
	char  *buf;
	size_t cap;  /* bytes of buf, NUL included */
	size_t len;
	bool   cut;  /* something did not fit */
};

static inline void bb__out_put(struct bb__out *o, const char *s, size_t n)
{
	size_t room = o->cap > o->len + 1 ? o->cap - o->len - 1 : 0;

	if (n > room) {
		n = room;
		o->cut = true;
	}
	if (!n)
		return;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static inline void bb__out_puts(struct bb__out *o, const char *s)
{
	bb__out_put(o, s, strlen(s));
}

static inline void bb__out_putc(struct bb__out *o, char c)
{
	bb__out_put(o, &c, 1);
}

static inline void bb__out_u64(struct bb__out *o, uint64_t v)
{
	char tmp[20];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	bb__out_put(o, tmp + i, sizeof(tmp) - i);
}

static inline void bb__out_hex(struct bb__out *o, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n && !o->cut; i++) {
		char two[2] = { hex[p[i] >> 4], hex[p[i] & 15] };

		bb__out_put(o, two, 2);
	}
}

/* escape.c */
size_t bb__out_finish(struct bb__out *o);
void bb__out_escaped(struct bb__out *o, const uint8_t *s, size_t n, bool quoted);
void bb__out_str(struct bb__out *o, const uint8_t *s, size_t n);

/*
 * bb__owner_decode - decode a BB_TAG_OWNER value, CBOR array(4)
 * [tid, thread name, previous tid, previous name].  Names are copied
 * NUL-terminated and cut to their buffers.  Returns 0 or -EBADMSG.
 * Allocation-free, AS-safe (value.c).
 */
int bb__owner_decode(const uint8_t *value, size_t len,
		     int32_t *tid, char *name, size_t namelen,
		     int32_t *prev_tid, char *prev, size_t prevlen);

#endif /* BB_TEXT_H */
