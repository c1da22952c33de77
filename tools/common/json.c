/* SPDX-License-Identifier: MIT */
/*
 * json.c - JSON for the tools: strings (the project's escaper,
 * shared/json.h), hex for bytes, doubles (its printer, shared/double.h),
 * and one well-formed CBOR item (bb__cbor_skip() said so) as JSON.
 */
#include <math.h>

#include "emit_int.h"

/*
 * The body of a JSON string (no quotes), as the project's one escaper
 * writes it (shared/json.h), in pieces of at most ESC_CHUNK bytes cut
 * where escaping them apart changes nothing (bb__json_cut()).
 */
void bbx__json_esc(struct bbx_out *o, const uint8_t *s, size_t n)
{
	while (n) {
		size_t k = bb__json_cut(s, n, ESC_CHUNK);

		bbx_out_commit(o, bb__json_escape(bbx_out_reserve(o, BB__JSON_ESC_MAX(k)), s, k));
		s += k;
		n -= k;
	}
}

/* Bytes as lowercase hex, without quotes. */
void bbx__json_hex_body(struct bbx_out *o, const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = n < 4096 ? n : 4096;
		char *d = bbx_out_reserve(o, 2 * k);

		bb__hex(d, p, k);
		bbx_out_commit(o, 2 * k);
		p += k;
		n -= k;
	}
}

void bbx__json_hex(struct bbx_out *o, const uint8_t *p, size_t n)
{
	bbx_out_char(o, '"');
	bbx__json_hex_body(o, p, n);
	bbx_out_char(o, '"');
}

/*
 * A double as JSON: the project's one printer (shared/double.h), kept a
 * number of a float type for typed consumers ("1.0", not "1"; "1e+300"
 * stays), and the non-finite values as the strings "NaN", "Infinity",
 * "-Infinity".  At most FMT_DOUBLE_MAX bytes at @p; returns the count.
 */
size_t bbx__fmt_double(char *p, double v)
{
	size_t n;

	if (isnan(v)) {
		memcpy(p, "\"NaN\"", 5);
		return 5;
	}
	if (isinf(v)) {
		memcpy(p, v > 0 ? "\"Infinity\"" : "\"-Infinity\"", v > 0 ? 10 : 11);
		return v > 0 ? 10 : 11;
	}
	n = bb__fmt_double(p, v);
	if (!memchr(p, '.', n) && !memchr(p, 'e', n)) {
		memcpy(p + n, ".0", 2);
		n += 2;
	}
	return n;
}

/* A map key as a JSON string: text as is, integers in decimal, else "?". */
static void json_key(struct bbx_out *o, struct bb__cbor *c)
{
	const uint8_t *save = c->p;
	struct bb__cbor_item h;

	if (bb__cbor_read_head(c, &h))
		return;
	bbx_out_char(o, '"');
	if (h.major == 3) {
		bbx__json_esc(o, c->p, (size_t)h.arg);
		c->p += h.arg;
	} else if (h.major == 0) {
		json_u64(o, h.arg);
	} else if (h.major == 1 && h.arg < UINT64_MAX) {
		bbx_out_char(o, '-');
		json_u64(o, h.arg + 1);
	} else {
		bbx_out_char(o, '?');
		c->p = save;
		(void)bb__cbor_skip(c, 0, NULL);
	}
	bbx_out_str(o, "\":");
}

void bbx__json_item(struct bbx_out *o, struct bb__cbor *c)
{
	struct bb__cbor_item h;
	uint64_t i;

	if (bb__cbor_read_head(c, &h))
		return;
	switch (h.major) {
	case 0:
		json_u64(o, h.arg);
		return;
	case 1:
		if (h.arg == UINT64_MAX) {
			bbx_out_str(o, "-18446744073709551616");
		} else {
			bbx_out_char(o, '-');
			json_u64(o, h.arg + 1);
		}
		return;
	case 2:
		bbx__json_hex(o, c->p, (size_t)h.arg);
		c->p += h.arg;
		return;
	case 3:
		bbx_out_char(o, '"');
		bbx__json_esc(o, c->p, (size_t)h.arg);
		c->p += h.arg;
		bbx_out_char(o, '"');
		return;
	case 4:
	case 5:
		bbx_out_char(o, h.major == 4 ? '[' : '{');
		for (i = 0; i < h.arg; i++) {
			if (i)
				bbx_out_char(o, ',');
			if (h.major == 5)
				json_key(o, c);
			bbx__json_item(o, c);
		}
		bbx_out_char(o, h.major == 4 ? ']' : '}');
		return;
	default:
		switch (h.ai) {
		case 20: bbx_out_str(o, "false"); return;
		case 21: bbx_out_str(o, "true"); return;
		case 25:
		case 26:
		case 27: json_double(o, bb__cbor_float(&h)); return;
		default: /* null, undefined, other simple values */
			bbx_out_str(o, "null");
			return;
		}
	}
}
