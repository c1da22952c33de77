/* SPDX-License-Identifier: MIT */
/*
 * cbor_diff.h - the project's CBOR decoder (shared/cbor.h) and the
 * decoders built on it, held to libcbor: bbt_cbor_diff() decodes the same
 * bytes with libcbor's allocation-free streaming decoder
 * (cbor_stream_decode(), one head at a time) under the rule of
 * docs/FORMAT.md §6 and says where the two disagree.  Used by
 * tests/shared/test_cbor.c (generated and corrupted input) and by
 * fuzz/fuzz_cbor.c (libFuzzer).
 *
 * What is compared, for one value at the start of the bytes:
 *  - accepted or refused, and where an accepted item ends (bb__cbor_skip());
 *  - every head, in order: major type and argument, a float's value (half
 *    floats through bb__cbor_half(), libcbor's float2) and a string's
 *    bytes (bb__cbor_read_head() in a walk of its own);
 *  - whether a text string is valid UTF-8 (skip's bad_utf8) against
 *    iconv(3)'s UTF-8 decoder;
 *  - bb_format_value() of the bytes as a value of an unknown tag (the
 *    renderer of the text output): it refuses exactly what skip refuses or
 *    what has bytes after the item;
 *  - every float printed by bb__fmt_double() reads back (strtod) as itself.
 * The emitter of bb-extract checks with bb__cbor_skip() too, and its fast
 * paths are held to its general path byte for byte (tests/extract,
 * emit_fast.same_bytes_as_the_general_path).
 *
 * libcbor 0.8 refuses the unassigned simple values (0xe0..0xf3, 0xf8 xx)
 * that RFC 8949 calls well formed and the project accepts: the oracle takes
 * them itself (one byte, or two when the second is 32 or more).  It refuses
 * indefinite lengths, breaks and tags when libcbor reports them, and a
 * container at depth BB__CBOR_MAX_DEPTH, as the rule says.
 */
#ifndef BBT_CBOR_DIFF_H
#define BBT_CBOR_DIFF_H

#include <cbor.h>
#include <errno.h>
#include <iconv.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox/reader.h>

#include "../../shared/cbor.h"
#include "../../shared/double.h"
#include "../../shared/utf8.h"

/* One head as both sides see it. */
struct bbt_ev {
	int major;          /* 0..7 */
	uint64_t arg;       /* integer, length, count; for floats the double's bits */
	const uint8_t *s;   /* a string's bytes */
};

#define BBT_EV_MAX 4096

struct bbt_oracle {
	struct bbt_ev ev[BBT_EV_MAX];
	size_t nev;
	bool overflow;
	bool bad_utf8;
	/* the event of the last cbor_stream_decode() call */
	int kind;           /* see enum below */
	uint64_t v;
	double d;
	const uint8_t *s;
	size_t sn;
};

enum { K_NONE, K_UINT, K_NEG, K_BYTES, K_TEXT, K_ARRAY, K_MAP, K_FLOAT, K_SIMPLE, K_REFUSED };

#define BBT_O(ctx) ((struct bbt_oracle *)(ctx))
static void bbt_o_u8(void *c, uint8_t v) { BBT_O(c)->kind = K_UINT; BBT_O(c)->v = v; }
static void bbt_o_u16(void *c, uint16_t v) { BBT_O(c)->kind = K_UINT; BBT_O(c)->v = v; }
static void bbt_o_u32(void *c, uint32_t v) { BBT_O(c)->kind = K_UINT; BBT_O(c)->v = v; }
static void bbt_o_u64(void *c, uint64_t v) { BBT_O(c)->kind = K_UINT; BBT_O(c)->v = v; }
static void bbt_o_n8(void *c, uint8_t v) { BBT_O(c)->kind = K_NEG; BBT_O(c)->v = v; }
static void bbt_o_n16(void *c, uint16_t v) { BBT_O(c)->kind = K_NEG; BBT_O(c)->v = v; }
static void bbt_o_n32(void *c, uint32_t v) { BBT_O(c)->kind = K_NEG; BBT_O(c)->v = v; }
static void bbt_o_n64(void *c, uint64_t v) { BBT_O(c)->kind = K_NEG; BBT_O(c)->v = v; }
static void bbt_o_bytes(void *c, cbor_data s, size_t n)
{
	BBT_O(c)->kind = K_BYTES; BBT_O(c)->s = s; BBT_O(c)->sn = n;
}
static void bbt_o_text(void *c, cbor_data s, size_t n)
{
	BBT_O(c)->kind = K_TEXT; BBT_O(c)->s = s; BBT_O(c)->sn = n;
}
static void bbt_o_refuse(void *c) { BBT_O(c)->kind = K_REFUSED; }
static void bbt_o_tag(void *c, uint64_t v) { (void)v; BBT_O(c)->kind = K_REFUSED; }
static void bbt_o_array(void *c, size_t n) { BBT_O(c)->kind = K_ARRAY; BBT_O(c)->v = n; }
static void bbt_o_map(void *c, size_t n) { BBT_O(c)->kind = K_MAP; BBT_O(c)->v = n; }
static void bbt_o_f4(void *c, float f) { BBT_O(c)->kind = K_FLOAT; BBT_O(c)->d = f; }
static void bbt_o_f8(void *c, double d) { BBT_O(c)->kind = K_FLOAT; BBT_O(c)->d = d; }
static void bbt_o_null(void *c) { BBT_O(c)->kind = K_SIMPLE; BBT_O(c)->v = 22; }
static void bbt_o_undef(void *c) { BBT_O(c)->kind = K_SIMPLE; BBT_O(c)->v = 23; }
static void bbt_o_bool(void *c, bool b) { BBT_O(c)->kind = K_SIMPLE; BBT_O(c)->v = b ? 21 : 20; }

static const struct cbor_callbacks bbt_cb = {
	.uint8 = bbt_o_u8, .uint16 = bbt_o_u16, .uint32 = bbt_o_u32, .uint64 = bbt_o_u64,
	.negint8 = bbt_o_n8, .negint16 = bbt_o_n16, .negint32 = bbt_o_n32,
	.negint64 = bbt_o_n64,
	.byte_string_start = bbt_o_refuse, .byte_string = bbt_o_bytes,
	.string = bbt_o_text, .string_start = bbt_o_refuse,
	.indef_array_start = bbt_o_refuse, .array_start = bbt_o_array,
	.indef_map_start = bbt_o_refuse, .map_start = bbt_o_map,
	.tag = bbt_o_tag,
	.float2 = bbt_o_f4, .float4 = bbt_o_f4, .float8 = bbt_o_f8,
	.undefined = bbt_o_undef, .null = bbt_o_null, .boolean = bbt_o_bool,
	.indef_break = bbt_o_refuse,
};

static inline uint64_t bbt_dbits(double d)
{
	uint64_t b;

	if (isnan(d))
		return 0x7ff8000000000000ull; /* NaN payloads: libcbor's float2 keeps none */
	memcpy(&b, &d, sizeof(b));
	return b;
}

static void bbt_o_push(struct bbt_oracle *o, int major, uint64_t arg, const uint8_t *s)
{
	if (o->nev == BBT_EV_MAX) {
		o->overflow = true;
		return;
	}
	o->ev[o->nev++] = (struct bbt_ev){ major, arg, s };
}

/* UTF-8 validity by iconv(3) (glibc: strict, no surrogates, <= U+10FFFF). */
static bool bbt_iconv_utf8(const uint8_t *s, size_t n)
{
	static iconv_t cd = (iconv_t)-1;
	char out[4 * 256];
	char *in = (char *)(uintptr_t)s;
	size_t left = n;

	if (cd == (iconv_t)-1 && (cd = iconv_open("UTF-32LE", "UTF-8")) == (iconv_t)-1)
		abort();
	iconv(cd, NULL, NULL, NULL, NULL);
	while (left) {
		char *o = out;
		size_t ol = sizeof(out);

		if (iconv(cd, &in, &left, &o, &ol) == (size_t)-1 && errno != E2BIG)
			return false;
	}
	return true;
}

/* One item at *pos by libcbor; 0 or -1 (refused, cut short). */
static int bbt_oracle_item(struct bbt_oracle *o, const uint8_t *d, size_t n, size_t *pos,
			   int depth)
{
	struct cbor_decoder_result r;
	uint8_t b;

	if (*pos >= n)
		return -1;
	b = d[*pos];
	o->kind = K_NONE;
	r = cbor_stream_decode(d + *pos, n - *pos, &bbt_cb, o);
	if (r.status == CBOR_DECODER_ERROR && ((b >= 0xe0 && b <= 0xf3) || b == 0xf8)) {
		/* an unassigned simple value: well formed, libcbor refuses it */
		if (b == 0xf8 && (n - *pos < 2 || d[*pos + 1] < 32))
			return -1;
		bbt_o_push(o, 7, b == 0xf8 ? d[*pos + 1] : (uint64_t)(b & 31), NULL);
		*pos += b == 0xf8 ? 2 : 1;
		return 0;
	}
	if (r.status != CBOR_DECODER_FINISHED || o->kind == K_NONE || o->kind == K_REFUSED)
		return -1;
	*pos += r.read;
	switch (o->kind) {
	case K_UINT:
		bbt_o_push(o, 0, o->v, NULL);
		return 0;
	case K_NEG:
		bbt_o_push(o, 1, o->v, NULL);
		return 0;
	case K_BYTES:
	case K_TEXT:
		bbt_o_push(o, o->kind == K_BYTES ? 2 : 3, o->sn, o->s);
		if (o->kind == K_TEXT && !bbt_iconv_utf8(o->s, o->sn))
			o->bad_utf8 = true;
		return 0;
	case K_FLOAT:
		bbt_o_push(o, 7, bbt_dbits(o->d), NULL);
		return 0;
	case K_SIMPLE:
		bbt_o_push(o, 7, o->v, NULL);
		return 0;
	default: { /* K_ARRAY, K_MAP */
		uint64_t cnt = o->v <= n ? o->v * (o->kind == K_MAP ? 2 : 1) : 0;

		bbt_o_push(o, o->kind == K_ARRAY ? 4 : 5, o->v, NULL);
		if (depth >= BB__CBOR_MAX_DEPTH || o->v > n) /* an item takes a byte */
			return -1;
		for (uint64_t i = 0; i < cnt; i++)
			if (bbt_oracle_item(o, d, n, pos, depth + 1))
				return -1;
		return 0;
	}
	}
}

/* The same walk on bb__cbor_read_head(): the heads it decodes. */
static int bbt_ours_item(struct bbt_oracle *o, struct bb__cbor *c, int depth)
{
	struct bb__cbor_item h;

	if (bb__cbor_read_head(c, &h))
		return -1;
	switch (h.major) {
	case 2:
	case 3:
		if (h.arg > bb__cbor_left(c))
			return -1;
		bbt_o_push(o, h.major, h.arg, c->p);
		c->p += h.arg;
		return 0;
	case 4:
	case 5:
		bbt_o_push(o, h.major, h.arg, NULL);
		if (depth >= BB__CBOR_MAX_DEPTH || h.arg > bb__cbor_left(c))
			return -1;
		for (uint64_t i = 0; i < h.arg * (h.major == 5 ? 2 : 1); i++)
			if (bbt_ours_item(o, c, depth + 1))
				return -1;
		return 0;
	case 7:
		if (h.ai >= 25 && h.ai <= 27)
			bbt_o_push(o, 7, bbt_dbits(bb__cbor_float(&h)), NULL);
		else
			bbt_o_push(o, 7, h.arg, NULL);
		return 0;
	default:
		bbt_o_push(o, h.major, h.arg, NULL);
		return 0;
	}
}

/*
 * bbt_cbor_diff - decode @d (@n bytes) both ways; NULL when everything
 * agrees, else what differs (in @why).  *@accepted tells the caller
 * (statistics) whether the value was accepted.
 */
static const char *bbt_cbor_diff(const uint8_t *d, size_t n, bool *accepted, char *why,
				 size_t whylen)
{
	static struct bbt_oracle lib, ours;
	struct bb__cbor c = { d, d + n };
	size_t pos = 0;
	bool bad = false, lib_ok, ours_ok, ours_walk_ok;
	char text[96];
	int rc;

	lib.nev = ours.nev = 0;
	lib.overflow = ours.overflow = false;
	lib.bad_utf8 = false;
	lib_ok = bbt_oracle_item(&lib, d, n, &pos, 0) == 0;
	ours_ok = bb__cbor_skip(&c, 0, &bad) == 0;
	*accepted = ours_ok;
	if (lib_ok != ours_ok) {
		snprintf(why, whylen, "libcbor %s, bb__cbor_skip() %s (rc at byte %zu)",
			 lib_ok ? "accepts" : "refuses", ours_ok ? "accepts" : "refuses",
			 (size_t)(c.p - d));
		return why;
	}
	if (ours_ok && (size_t)(c.p - d) != pos) {
		snprintf(why, whylen, "item ends at %zu for libcbor, %zu for skip", pos,
			 (size_t)(c.p - d));
		return why;
	}
	if (ours_ok && bad != lib.bad_utf8) {
		snprintf(why, whylen, "UTF-8: iconv says %s, skip says %s",
			 lib.bad_utf8 ? "invalid" : "valid", bad ? "invalid" : "valid");
		return why;
	}
	c = (struct bb__cbor){ d, d + n };
	ours_walk_ok = bbt_ours_item(&ours, &c, 0) == 0;
	if (ours_walk_ok != ours_ok) {
		snprintf(why, whylen, "the head walk and skip disagree");
		return why;
	}
	/* a refused value: the heads up to where libcbor stopped agree */
	for (size_t i = 0; i < lib.nev && i < ours.nev; i++) {
		const struct bbt_ev *a = &lib.ev[i], *b = &ours.ev[i];

		if (a->major != b->major || a->arg != b->arg ||
		    (a->s && (a->s != b->s))) {
			snprintf(why, whylen,
				 "head %zu: libcbor major %d arg %#llx, ours major %d arg %#llx",
				 i, a->major, (unsigned long long)a->arg, b->major,
				 (unsigned long long)b->arg);
			return why;
		}
		if (a->major == 7 && b->major == 7 && a->arg > 255) { /* a float */
			double v;
			char buf[BB__DOUBLE_MAX + 1];

			memcpy(&v, &a->arg, sizeof(v));
			if (isfinite(v)) {
				buf[bb__fmt_double(buf, v)] = '\0';
				if (strtod(buf, NULL) != v) {
					snprintf(why, whylen, "%a printed as %s", v, buf);
					return why;
				}
			}
		}
	}
	if (ours_ok && (lib.nev != ours.nev || lib.overflow != ours.overflow)) {
		snprintf(why, whylen, "%zu heads for libcbor, %zu for ours", lib.nev, ours.nev);
		return why;
	}
	/* the text renderer: refuses what skip refuses, or trailing bytes */
	rc = bb_format_value(200, 0, d, n, text, sizeof(text));
	if ((rc >= 0) != (ours_ok && pos == n)) {
		snprintf(why, whylen, "bb_format_value() %s (%s), skip %s with %zu of %zu bytes",
			 rc >= 0 ? "accepts" : "refuses", text,
			 ours_ok ? "accepts" : "refuses", pos, n);
		return why;
	}
	return NULL;
}

#endif /* BBT_CBOR_DIFF_H */
