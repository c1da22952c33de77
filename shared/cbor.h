/* SPDX-License-Identifier: MIT */
/*
 * shared/cbor.h - the one CBOR decoder of libblackbox and its tools: a
 * bounded cursor, the head of an item, skipping a well-formed item, the
 * typed reads the areas of a box need, half floats.  The encoder is
 * <blackbox/inline.h>'s (bb__cbor_put_head(), bb__cbor_put_int(),
 * bb__cbor_put_f64()): the writer, its inline paths and the tools share
 * it.  Internal, do not use outside the project.
 *
 * One rule for every value a reader decodes (docs/FORMAT.md §6 and §9):
 * definite lengths only (additional information 31, indefinite lengths
 * and the break, is refused), no tags (major type 6), no reserved
 * additional information (28..30), no two-byte simple value below 32 (not
 * well formed, RFC 8949 §3.3), nesting at most BB__CBOR_MAX_DEPTH deep,
 * and every length and count checked against the bytes left before it is
 * used.  Every step consumes at least one byte.
 *
 * No malloc, no stdio, no locale: AS-safe (bb_dump() decodes values in a
 * signal handler).  tests/shared/test_cbor.c and fuzz/fuzz_cbor.c hold
 * this decoder to libcbor's (cbor_stream_decode()) on generated and
 * corrupted input.
 */
#ifndef BB_SHARED_CBOR_H
#define BB_SHARED_CBOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <blackbox.h>

/* Deepest nesting of arrays and maps in a value: the format's own shapes
 * go 2 deep (an event's fields), unknown tags may nest further. */
#define BB__CBOR_MAX_DEPTH 8

/* A bounded cursor over untrusted bytes [p, end). */
struct bb__cbor {
	const uint8_t *p, *end;
};

/* An item's head, as bb__cbor_read_head() read it. */
struct bb__cbor_item {
	const uint8_t *start; /* its first byte */
	uint8_t major;        /* 0..7 */
	uint8_t ai;           /* additional information, 0..27 */
	uint64_t arg;         /* argument: a length, a count, an integer, a
				 simple value or (major 7, ai 25..27) the
				 float's bits */
};

/* What is wrong (negative); bb__cbor_strerror() says it in words. */
enum bb__cbor_err {
	BB__CBOR_SHORT      = -1, /* the bytes end inside the item */
	BB__CBOR_INDEFINITE = -2, /* additional information 31 */
	BB__CBOR_RESERVED   = -3, /* additional information 28..30 */
	BB__CBOR_TAG        = -4, /* major type 6 */
	BB__CBOR_SIMPLE     = -5, /* simple value < 32 in two bytes */
	BB__CBOR_DEPTH      = -6, /* nested deeper than BB__CBOR_MAX_DEPTH */
	BB__CBOR_TYPE       = -7, /* not the type the caller asked for */
};

const char *bb__cbor_strerror(int err);

static inline size_t bb__cbor_left(const struct bb__cbor *c)
{
	return (size_t)(c->end - c->p);
}

/*
 * bb__cbor_read_head - read the head of the item at the cursor into @h
 * and move past it.  Returns 0 or a negative enum bb__cbor_err: SHORT, INDEFINITE
 * or RESERVED with the cursor past the initial byte, TAG or SIMPLE past
 * the whole head.  Inline: the fast paths of bb-extract read a head per
 * item.
 */
static inline int bb__cbor_read_head(struct bb__cbor *c, struct bb__cbor_item *h)
{
	uint8_t ib;
	size_t n;

	if (c->p >= c->end)
		return BB__CBOR_SHORT;
	h->start = c->p;
	ib = *c->p++;
	h->major = ib >> 5;
	h->ai = ib & 31;
	if (h->ai < 24) {
		h->arg = h->ai;
	} else {
		if (h->ai > 27)
			return h->ai == 31 ? BB__CBOR_INDEFINITE : BB__CBOR_RESERVED;
		n = (size_t)1 << (h->ai - 24);
		if (bb__cbor_left(c) < n)
			return BB__CBOR_SHORT;
		h->arg = 0;
		while (n--)
			h->arg = h->arg << 8 | *c->p++;
	}
	if (__builtin_expect(h->major == 6, 0))
		return BB__CBOR_TAG;
	if (__builtin_expect(h->major == 7 && h->ai == 24 && h->arg < 32, 0))
		return BB__CBOR_SIMPLE;
	return 0;
}

/*
 * bb__cbor_skip - move past one well-formed item (the rule above) at
 * nesting level @depth (0 for a value).  Sets *@bad_utf8 (when not NULL)
 * when a text string in it is not valid UTF-8: still well formed, but a
 * reader must not pass it on as text.  Returns 0 or a negative enum
 * bb__cbor_err, the cursor then where the decoding stopped.
 */
int bb__cbor_skip(struct bb__cbor *c, int depth, bool *bad_utf8);

/*
 * Typed reads: 0 or a negative enum bb__cbor_err (TYPE when the item is
 * of another type or out of range).
 *  bb__cbor_uint       an unsigned integer (major 0)
 *  bb__cbor_int        an integer (major 0 or 1) within int64_t
 *  bb__cbor_string     a text (major 3) or byte (major 2) string, in place
 *  bb__cbor_container  an array (4) or map (5): its count, which is at most
 *                      the bytes left (each item takes one at least)
 */
int bb__cbor_uint(struct bb__cbor *c, uint64_t *v);
int bb__cbor_int(struct bb__cbor *c, int64_t *v);
int bb__cbor_string(struct bb__cbor *c, int major, const uint8_t **s, size_t *n);
int bb__cbor_container(struct bb__cbor *c, int major, uint64_t *n);

/*
 * bb__cbor_half - the double of an IEEE 754 half-precision float (CBOR
 * major 7, additional information 25): exact, NaN payloads kept.
 */
static inline double bb__cbor_half(uint16_t hbits)
{
	uint64_t sign = (uint64_t)(hbits >> 15) << 63;
	int e = (hbits >> 10) & 31;
	uint64_t mant = hbits & 0x3ff, bits;
	double d;

	if (e == 0) { /* zero or subnormal: mant * 2^-24, exact in a double */
		d = (double)mant / 16777216.0;
		return sign ? -d : d;
	}
	if (e == 31)
		bits = sign | UINT64_C(0x7ff) << 52 | mant << 42;
	else
		bits = sign | (uint64_t)(e - 15 + 1023) << 52 | mant << 42;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* The double of a float head (major 7, ai 25..27). */
static inline double bb__cbor_float(const struct bb__cbor_item *h)
{
	double d;

	if (h->ai == 25)
		return bb__cbor_half((uint16_t)h->arg);
	if (h->ai == 26) {
		uint32_t b = (uint32_t)h->arg;
		float f;

		memcpy(&f, &b, sizeof(f));
		return f;
	}
	memcpy(&d, &h->arg, sizeof(d));
	return d;
}

#endif /* BB_SHARED_CBOR_H */
