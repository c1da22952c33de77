/* SPDX-License-Identifier: MIT */
/*
 * pbwire.h - a protocol buffers wire-format encoder (varints, fixed64,
 * length-delimited fields, nested messages) into one growable buffer, for
 * bb-extract --perfetto (perfetto.c).  A nested message reserves one byte
 * for its length and moves its body when the length needs more: most
 * bodies are under 128 bytes and never move.  Out of memory is sticky
 * (->oom) and later calls do nothing.
 */
#ifndef BBX_PBWIRE_H
#define BBX_PBWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../shared/grow.h"

#define PBW_DEPTH 8   /* nested messages open at once, at most */

enum { PBW_VARINT = 0, PBW_I64 = 1, PBW_LEN = 2 };

struct pbw {
	uint8_t *p;
	size_t n, cap;
	size_t open[PBW_DEPTH];  /* where each open message's body starts */
	int depth;
	bool oom;
};

/* Room for @k more bytes; false (and ->oom) when there is none. */
static inline bool pbw_room(struct pbw *w, size_t k)
{
	if (w->oom)
		return false;
	if (w->n + k <= w->cap)
		return true;
	if (bb__grow((void **)&w->p, &w->cap, w->n + k, 1)) {
		w->oom = true;
		return false;
	}
	return true;
}

static inline size_t pbw_put_varint(uint8_t *p, uint64_t v)
{
	size_t k = 0;

	while (v >= 0x80) {
		p[k++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[k++] = (uint8_t)v;
	return k;
}

static inline void pbw_varint(struct pbw *w, uint64_t v)
{
	if (pbw_room(w, 10))
		w->n += pbw_put_varint(w->p + w->n, v);
}

static inline void pbw_tag(struct pbw *w, uint32_t field, unsigned wire)
{
	pbw_varint(w, (uint64_t)field << 3 | wire);
}

/* uint64, uint32, int32 >= 0, enums, and int64 (two's complement) */
static inline void pbw_uint(struct pbw *w, uint32_t field, uint64_t v)
{
	pbw_tag(w, field, PBW_VARINT);
	pbw_varint(w, v);
}

static inline void pbw_fixed64(struct pbw *w, uint32_t field, uint64_t v)
{
	pbw_tag(w, field, PBW_I64);
	if (pbw_room(w, 8)) {
		for (int i = 0; i < 8; i++)
			w->p[w->n++] = (uint8_t)(v >> (8 * i));
	}
}

static inline void pbw_double(struct pbw *w, uint32_t field, double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	pbw_fixed64(w, field, bits);
}

/* A string or bytes field. */
static inline void pbw_bytes(struct pbw *w, uint32_t field, const void *s, size_t n)
{
	pbw_tag(w, field, PBW_LEN);
	pbw_varint(w, n);
	if (pbw_room(w, n)) {
		memcpy(w->p + w->n, s, n);
		w->n += n;
	}
}

static inline void pbw_str(struct pbw *w, uint32_t field, const char *s)
{
	pbw_bytes(w, field, s, strlen(s));
}

/* Open a nested message as field @field; pbw_end() closes it. */
static inline void pbw_begin(struct pbw *w, uint32_t field)
{
	pbw_tag(w, field, PBW_LEN);
	if (w->depth >= PBW_DEPTH)
		w->oom = true;
	if (!pbw_room(w, 1))
		return;
	w->n++;      /* the length's first byte */
	w->open[w->depth++] = w->n;
}

static inline void pbw_end(struct pbw *w)
{
	size_t start, len, k;
	uint8_t v[10];

	if (w->oom)
		return;
	start = w->open[--w->depth];
	len = w->n - start;
	k = pbw_put_varint(v, len);
	if (k > 1) {
		if (!pbw_room(w, k - 1))
			return;
		memmove(w->p + start + k - 1, w->p + start, len);
		w->n += k - 1;
	}
	memcpy(w->p + start - 1, v, k);
}

#endif /* BBX_PBWIRE_H */
