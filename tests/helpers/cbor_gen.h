/* SPDX-License-Identifier: MIT */
/*
 * cbor_gen.h - a deterministic generator of CBOR values for tests: every
 * head width (shortest or not), text with quotes, backslashes, control and
 * invalid UTF-8 bytes, floats of every width and special value, simple
 * values, nesting, indefinite lengths and tags (which FORMAT.md §6
 * refuses), values shaped for a record tag, and damage (cut, extended,
 * flipped).  Used by tests/extract/test_emit.c (the JSON fast path against
 * the general path) and tests/shared/test_cbor.c (the decoder against
 * libcbor).
 */
#ifndef BBT_CBOR_GEN_H
#define BBT_CBOR_GEN_H

#include <stdint.h>
#include <string.h>

#include <blackbox/format.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *o, uint8_t c)
{
	if (o->n < sizeof(o->b))
		o->b[o->n++] = c;
}

/* A head with argument @v, in the shortest form or (sometimes) wider. */
static void head(struct buf *o, unsigned major, uint64_t v)
{
	unsigned ai = v < 24 ? (unsigned)v : v <= 0xff ? 24 : v <= 0xffff ? 25 :
		      v <= 0xffffffffu ? 26 : 27;

	if (ai < 27 && !pick(6)) {
		unsigned wider = 24 + pick(4); /* not the shortest: still well formed */

		if (wider > ai)
			ai = wider;
	}
	if (ai < 24) {
		put(o, (uint8_t)(major << 5 | ai));
		return;
	}
	put(o, (uint8_t)(major << 5 | ai));
	for (int i = (1 << (ai - 24)) - 1; i >= 0; i--)
		put(o, (uint8_t)(v >> (8 * i)));
}

static uint64_t some_int(void)
{
	switch (pick(5)) {
	case 0: return pick(24);
	case 1: return pick(256);
	case 2: return pick(70000);
	case 3: return rnd() >> pick(64);
	default: return UINT64_MAX - pick(3);
	}
}

static void text_bytes(struct buf *o, unsigned major, size_t n)
{
	static const char *const bits[] = {
		"a", "Z", " ", "\"", "\\", "\n", "\t", "\r", "\b", "\f", "\x01", "\x1f",
		"\x7f", "\xc3\xa9", "\xe2\x9c\x93", "\xf0\x9f\x98\x80", "\xff", "\xc0\xaf",
		"\xed\xa0\x80", "\xe2\x9c", "/", "abcdefgh", "0123456789",
	};
	struct buf t = { .n = 0 };

	while (t.n < n) {
		const char *b = bits[pick(sizeof(bits) / sizeof(bits[0]))];

		/* mostly plain runs, so the 8-byte path is exercised */
		if (pick(4))
			b = bits[21 + pick(2)];
		for (size_t i = 0; b[i] && t.n < n; i++)
			put(&t, (uint8_t)b[i]);
	}
	head(o, major, t.n);
	for (size_t i = 0; i < t.n; i++)
		put(o, t.b[i]);
}

static void scalar(struct buf *o)
{
	static const uint16_t halves[] = { 0x0000, 0x8000, 0x3c00, 0x7c00, 0xfc00, 0x7e00,
					   0x0001, 0x3555, 0xc400, 0x7bff };
	static const double dbl[] = { 0.5, -0.0, 1e300, 1e-300, 3.141592653589793,
				      0.1, 123456789012345.0, 1e15, 1e-5, 2.5e-4 };
	uint64_t u;
	double d;
	float f;
	uint32_t w;

	switch (pick(12)) {
	case 0: head(o, 0, some_int()); break;
	case 1: head(o, 1, some_int()); break;
	case 2: text_bytes(o, 3, pick(4) ? pick(24) : pick(300)); break;
	case 3: text_bytes(o, 2, pick(20)); break;
	case 4: put(o, (uint8_t)(0xf4 + pick(4))); break;          /* false true null undef */
	case 5:
		put(o, 0xf9);
		u = halves[pick(10)];
		put(o, (uint8_t)(u >> 8));
		put(o, (uint8_t)u);
		break;
	case 6:
		f = (float)((double)(int64_t)rnd() / (double)(1ull << pick(62)));
		memcpy(&w, &f, 4);
		put(o, 0xfa);
		for (int i = 3; i >= 0; i--)
			put(o, (uint8_t)(w >> (8 * i)));
		break;
	case 7:
		d = pick(2) ? dbl[pick(10)] : (double)(int64_t)rnd() / 1e6;
		memcpy(&u, &d, 8);
		put(o, 0xfb);
		for (int i = 7; i >= 0; i--)
			put(o, (uint8_t)(u >> (8 * i)));
		break;
	case 8: put(o, (uint8_t)(0xe0 + pick(20))); break;           /* simple 0..19 */
	case 9: put(o, 0xf8); put(o, (uint8_t)pick(256)); break;     /* simple, 1 byte */
	case 10: head(o, 0, pick(30)); break;
	default: text_bytes(o, 3, pick(10)); break;
	}
}

static void item(struct buf *o, int depth)
{
	unsigned n;

	if (depth > 3 || pick(3)) {
		scalar(o);
		return;
	}
	n = pick(5);
	switch (pick(6)) {
	case 0:
		head(o, 4, n);
		while (n--)
			item(o, depth + 1);
		break;
	case 1:
		head(o, 5, n);
		while (n--) {
			if (pick(5))
				text_bytes(o, 3, pick(8));
			else
				item(o, depth + 1);
			item(o, depth + 1);
		}
		break;
	case 2:
		put(o, 0x9f);
		while (n--)
			item(o, depth + 1);
		put(o, 0xff);
		break;
	case 3:
		put(o, 0xbf);
		while (n--) {
			text_bytes(o, 3, pick(6));
			item(o, depth + 1);
		}
		put(o, 0xff);
		break;
	case 4:
		put(o, 0x7f); /* chunked text */
		while (n--)
			text_bytes(o, 3, pick(6));
		put(o, 0xff);
		break;
	default:
		head(o, 6, pick(30)); /* a tag */
		item(o, depth + 1);
	}
}

/* A value shaped for @tag most of the time, anything some of the time. */
static void value(struct buf *o, unsigned tag)
{
	unsigned n;

	if (!pick(8)) {
		item(o, 0);
		return;
	}
	switch (tag) {
	case BB_TAG_KV:
	case BB_TAG_EVENT:
		put(o, 0x82);
		text_bytes(o, 3, pick(12));
		if (tag == BB_TAG_KV) {
			if (pick(4))
				scalar(o);
			else
				item(o, 1);
			break;
		}
		n = pick(6);
		head(o, 5, n);
		while (n--) {
			text_bytes(o, 3, pick(6));
			if (pick(5))
				scalar(o);
			else
				item(o, 2);
		}
		break;
	case BB_TAG_OWNER:
		put(o, 0x84);
		for (int i = 0; i < 4; i++)
			scalar(o);
		break;
	default:
		scalar(o);
	}
}

/* Damage: cut, extend or flip a byte (a quarter of the values). */
static void damage(struct buf *o)
{
	switch (pick(12)) {
	case 0:
		if (o->n)
			o->n -= 1 + pick((unsigned)o->n);
		break;
	case 1:
		put(o, (uint8_t)rnd());
		break;
	case 2:
		if (o->n)
			o->b[pick((unsigned)o->n)] ^= (uint8_t)(1u << pick(8));
		break;
	default:
		break;
	}
}

#endif /* BBT_CBOR_GEN_H */
