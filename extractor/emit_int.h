/* SPDX-License-Identifier: MIT */
/*
 * emit_int.h - what the files of bb-extract's emitter share (emit.c the
 * emitter, emit_fast.c its fast paths, json.c JSON from CBOR, cbor_out.c
 * CBOR output, cbr.c the CBOR reader over untrusted bytes).  Internal to
 * them; bb-extract uses emit.h.  The pieces every record runs through
 * are inline.
 */
#ifndef BBX_EMIT_INT_H
#define BBX_EMIT_INT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "emit.h"

#define CBR_DEPTH 32 /* deepest nesting accepted in a value */

/* ---- UTF-8 ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at @s (n > 0 bytes left), 0 if invalid. */
static inline size_t u8len(const uint8_t *s, size_t n)
{
	uint8_t c = s[0];

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0; /* continuation byte, overlong lead, or beyond U+10FFFF */
	if (c < 0xe0)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c < 0xf0) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) ||  /* overlong */
		    (c == 0xed && s[1] >= 0xa0))   /* UTF-16 surrogate */
			return 0;
		return 3;
	}
	if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
	    (s[3] & 0xc0) != 0x80)
		return 0;
	if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return 4;
}

static inline bool u8valid(const uint8_t *s, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		k = u8len(s + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* ---- JSON pieces ------------------------------------------------------ */

/*
 * Does any of the 8 bytes in @x need a look in a JSON string: '"', '\\',
 * a control character (< 0x20) or a byte >= 0x80 (UTF-8 to validate)?
 * The classic "has a zero byte" test (x - 0x01..) & ~x & 0x80..: a borrow
 * can only flag bytes above a real hit, so "any" is exact; applied to
 * x ^ '"', x ^ '\\' and, for "< 0x20", to x with 0x20 subtracted.
 */
static inline bool esc_needed8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
	uint64_t lt = (x - ones * 0x20) & ~x;  /* a byte below 0x20 */
	uint64_t zq = (q - ones) & ~q;         /* a '"' */
	uint64_t zb = (b - ones) & ~b;         /* a '\\' */

	/* a byte >= 0x80 has its high bit in x itself (and is masked out of
	 * lt by ~x, harmlessly: it is flagged anyway) */
	return ((lt | zq | zb | x) & high) != 0;
}

#define ESC_MAX(n) (6 * (n)) /* \u00XX or \ufffd for each input byte at worst */

/*
 * The body of a JSON string (no quotes) at @d, which has room for
 * ESC_MAX(@n) bytes: escapes, U+FFFD for bytes that are not valid UTF-8.
 * Runs of 8 plain ASCII bytes are moved whole.  Returns the bytes written.
 */
static inline size_t esc_into(char *d, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *p = d;
	size_t i = 0, k;

	while (i < n) {
		uint8_t c;

		while (n - i >= 8) {
			uint64_t x;

			memcpy(&x, s + i, 8);
			if (esc_needed8(x))
				break;
			memcpy(p, &x, 8);
			p += 8;
			i += 8;
		}
		if (i == n)
			break;
		c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			*p++ = (char)c;
			i++;
			continue;
		}
		if (c >= 0x80) {
			k = u8len(s + i, n - i);
			if (k == 2 && c == 0xc2 && s[i + 1] < 0xa0) {
				/* a C1 control (U+0080..U+009F): escaped like
				 * C0, the same value for a JSON parser, and
				 * nothing a terminal could act on */
				memcpy(p, "\\u00", 4);
				p[4] = hex[s[i + 1] >> 4];
				p[5] = hex[s[i + 1] & 15];
				p += 6;
				i += 2;
			} else if (k) {
				memcpy(p, s + i, k);
				p += k;
				i += k;
			} else {
				memcpy(p, "\\ufffd", 6);
				p += 6;
				i++;
			}
			continue;
		}
		*p++ = '\\';
		switch (c) {
		case '"':  *p++ = '"';  break;
		case '\\': *p++ = '\\'; break;
		case '\n': *p++ = 'n';  break;
		case '\t': *p++ = 't';  break;
		case '\r': *p++ = 'r';  break;
		case '\b': *p++ = 'b';  break;
		case '\f': *p++ = 'f';  break;
		default:
			memcpy(p, "u00", 3);
			p[3] = hex[c >> 4];
			p[4] = hex[c & 15];
			p += 5;
		}
		i++;
	}
	return (size_t)(p - d);
}

#define ESC_CHUNK 4096 /* strings up to this long are escaped in one go */

/* json.c */
void bbx__json_esc(struct bbx_out *o, const uint8_t *s, size_t n);
void bbx__json_hex_body(struct bbx_out *o, const uint8_t *p, size_t n);
void bbx__json_hex(struct bbx_out *o, const uint8_t *p, size_t n);
#define FMT_DOUBLE_MAX 48 /* bytes bbx__fmt_double() may write */
/* A double as JSON: at most FMT_DOUBLE_MAX bytes at @p; returns the count. */
size_t bbx__fmt_double(char *p, double v);

static inline void json_u64(struct bbx_out *o, uint64_t v)
{
	bbx_out_commit(o, bbx_fmt_u64(bbx_out_reserve(o, 20), v));
}

static inline void json_double(struct bbx_out *o, double v)
{
	bbx_out_commit(o, bbx__fmt_double(bbx_out_reserve(o, FMT_DOUBLE_MAX), v));
}

/* ---- CBOR reader over untrusted bytes --------------------------------- */

struct cbr {
	const uint8_t *p, *end;
};

struct cbh {
	const uint8_t *start; /* first byte of the head */
	uint8_t  major, ai;
	uint64_t val;         /* argument; 0 for indefinite (ai 31) */
};

static inline bool cbr_head(struct cbr *c, struct cbh *h)
{
	uint8_t b;

	if (c->p >= c->end)
		return false;
	h->start = c->p;
	b = *c->p++;
	h->major = b >> 5;
	h->ai = b & 31;
	h->val = h->ai;
	if (h->ai >= 24 && h->ai <= 27) {
		size_t k = (size_t)1 << (h->ai - 24), i;

		if ((size_t)(c->end - c->p) < k)
			return false;
		for (h->val = 0, i = 0; i < k; i++)
			h->val = h->val << 8 | *c->p++;
	} else if (h->ai == 31) {
		/* indefinite length (2..5) or break (7); nothing else */
		if (h->major < 2 || h->major == 6)
			return false;
		h->val = 0;
	} else if (h->ai > 27) {
		return false; /* reserved */
	}
	return true;
}

static inline bool cbr_at_break(const struct cbr *c)
{
	return c->p < c->end && *c->p == 0xff;
}

/* cbr.c */
bool bbx__cbr_check(struct cbr *c, unsigned depth, bool *bad_utf8);
void bbx__cbr_skip(struct cbr *c);
int bbx__cbr_array(struct cbr *c, const uint8_t **it, int max);

static inline unsigned cbr_major(const uint8_t *p)
{
	return *p >> 5;
}

/* ---- JSON from CBOR --------------------------------------------------- */

static inline double half_to_double(unsigned h)
{
	unsigned e = (h >> 10) & 31, m = h & 1023;
	double v;

	if (e == 0)
		v = ldexp(m, -24);
	else if (e != 31)
		v = ldexp(m + 1024, (int)e - 25);
	else
		v = m ? NAN : INFINITY;
	return (h & 0x8000) ? -v : v;
}

/* json.c: one well-formed item as JSON. */
void bbx__json_item(struct bbx_out *o, struct cbr *c);

/* ---- CBOR out --------------------------------------------------------- */

/* A CBOR head of major type @major with argument @v, shortest form. */
static inline size_t cb_head(char *p, unsigned major, uint64_t v)
{
	uint8_t *q = (uint8_t *)p, m = (uint8_t)(major << 5);

	if (v < 24) {
		q[0] = (uint8_t)(m | v);
		return 1;
	}
	if (v <= 0xff) {
		q[0] = m | 24;
		q[1] = (uint8_t)v;
		return 2;
	}
	if (v <= 0xffff) {
		q[0] = m | 25;
		q[1] = (uint8_t)(v >> 8);
		q[2] = (uint8_t)v;
		return 3;
	}
	if (v <= 0xffffffff) {
		q[0] = m | 26;
		for (int i = 0; i < 4; i++)
			q[1 + i] = (uint8_t)(v >> (24 - 8 * i));
		return 5;
	}
	q[0] = m | 27;
	for (int i = 0; i < 8; i++)
		q[1 + i] = (uint8_t)(v >> (56 - 8 * i));
	return 9;
}

static inline void cb_put_head(struct bbx_out *o, unsigned major, uint64_t v)
{
	bbx_out_commit(o, cb_head(bbx_out_reserve(o, 9), major, v));
}

/* A text string whose bytes are known valid UTF-8 (constant names). */
static inline size_t cb_text(char *p, const char *s, size_t n)
{
	size_t h = cb_head(p, 3, n);

	memcpy(p + h, s, n);
	return h + n;
}

static inline size_t cb_i64(char *p, int64_t v)
{
	return v >= 0 ? cb_head(p, 0, (uint64_t)v) : cb_head(p, 1, (uint64_t)(-(v + 1)));
}

/* cbor_out.c */
void bbx__cbor_text(struct bbx_out *o, const uint8_t *s, size_t n);
void bbx__cbor_copy_sanitized(struct bbx_out *o, struct cbr *c);

/* emit_fast.c: the members bbx_em_record_value() would write, or false. */
bool bbx__em_json_fast(struct bbx_em *em, unsigned tag, const uint8_t *value, size_t len);
bool bbx__em_cbor_fast(struct bbx_em *em, unsigned tag, const uint8_t *value, size_t len);

#endif /* BBX_EMIT_INT_H */
