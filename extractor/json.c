/* SPDX-License-Identifier: MIT */
/*
 * json.c - JSON for bb-extract: strings (escaped, bad UTF-8 replaced by
 * U+FFFD, C0 and C1 controls as \u00XX), hex for bytes, doubles, and one
 * well-formed CBOR item as JSON (emit_int.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "emit_int.h"

/* The body of a JSON string (no quotes): escapes, U+FFFD for bad bytes. */
void bbx__json_esc(struct bbx_out *o, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, st = 0, k;

	if (n <= ESC_CHUNK) {
		bbx_out_commit(o, esc_into(bbx_out_reserve(o, ESC_MAX(n)), s, n));
		return;
	}
	/* longer: byte by byte straight into the buffer, which may spill */
	while (i < n) {
		uint8_t c = s[i];
		char *e;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		k = c >= 0x80 ? u8len(s + i, n - i) : 0;
		if (k && !(k == 2 && c == 0xc2 && s[i + 1] < 0xa0)) {
			i += k;
			continue;
		}
		bbx_out_put(o, s + st, i - st);
		if (c == 0xc2 && k == 2) { /* a C1 control: as in esc_into() */
			e = bbx_out_reserve(o, 6);
			memcpy(e, "\\u00", 4);
			e[4] = hex[s[i + 1] >> 4];
			e[5] = hex[s[i + 1] & 15];
			bbx_out_commit(o, 6);
			st = i += 2;
			continue;
		}
		e = bbx_out_reserve(o, 6);
		e[0] = '\\';
		switch (c) {
		case '"':  e[1] = '"';  bbx_out_commit(o, 2); break;
		case '\\': e[1] = '\\'; bbx_out_commit(o, 2); break;
		case '\n': e[1] = 'n';  bbx_out_commit(o, 2); break;
		case '\t': e[1] = 't';  bbx_out_commit(o, 2); break;
		case '\r': e[1] = 'r';  bbx_out_commit(o, 2); break;
		case '\b': e[1] = 'b';  bbx_out_commit(o, 2); break;
		case '\f': e[1] = 'f';  bbx_out_commit(o, 2); break;
		default:
			if (c < 0x20) {
				memcpy(e + 1, "u00", 3);
				e[4] = hex[c >> 4];
				e[5] = hex[c & 15];
			} else {
				memcpy(e + 1, "ufffd", 5);
			}
			bbx_out_commit(o, 6);
		}
		st = ++i;
	}
	bbx_out_put(o, s + st, i - st);
}

/* Bytes as lowercase hex, without quotes. */
void bbx__json_hex_body(struct bbx_out *o, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	while (n) {
		size_t k = n < 4096 ? n : 4096, i;
		char *d = bbx_out_reserve(o, 2 * k);

		for (i = 0; i < k; i++) {
			d[2 * i] = hex[p[i] >> 4];
			d[2 * i + 1] = hex[p[i] & 15];
		}
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
 * The common case without printf/strtod: v = m / 10^k with m an integer
 * below 10^15 and 1e-4 <= |v| < 1e15 (or v = 0).  m and 10^k are exact
 * doubles, so m / 10^k is correctly rounded, like strtod() of the decimal,
 * and the check below is exact.  The smallest such k gives the digits of
 * %.15g (the decimal is within half an ulp of v, far below half a unit in
 * the 15th digit), and in this range %g uses no exponent: the output is
 * byte for byte what the general path prints.  Writes at most 33 bytes at
 * @p and returns their count, or 0 when v is outside that case.
 */
static size_t fmt_double_fast(char *p, double v)
{
	static const double p10[16] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15,
	};
	double a = fabs(v);
	size_t n = 0;

	if (v == 0) {
		memcpy(p, signbit(v) ? "-0.0" : "0.0", 4);
		return signbit(v) ? 4 : 3;
	}
	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (int k = 0; k <= 15; k++) {
		double x = a * p10[k], m;
		uint64_t u, ip, fp;

		if (x >= 1e15)
			return 0;
		m = (double)(uint64_t)(x + 0.5); /* no libm: round half up */
		if (m / p10[k] != a)
			continue;
		u = (uint64_t)m;
		if (v < 0)
			p[n++] = '-';
		ip = k ? u / (uint64_t)p10[k] : u;
		fp = k ? u % (uint64_t)p10[k] : 0;
		n += bbx_fmt_u64(p + n, ip);
		p[n++] = '.';
		if (!k) {
			p[n++] = '0';
		} else {
			for (int d = k; d-- > 0;) {
				p[n + (size_t)d] = (char)('0' + fp % 10);
				fp /= 10;
			}
			n += (size_t)k;
		}
		return n;
	}
	return 0;
}

/* A double as JSON: at most FMT_DOUBLE_MAX bytes at @p; returns the count. */
size_t bbx__fmt_double(char *p, double v)
{
	char buf[40];
	int n = 0, prec;
	size_t k;

	if (isnan(v)) {
		memcpy(p, "\"NaN\"", 5);
		return 5;
	}
	if (isinf(v)) {
		memcpy(p, v > 0 ? "\"Infinity\"" : "\"-Infinity\"", v > 0 ? 10 : 11);
		return v > 0 ? 10 : 11;
	}
	k = fmt_double_fast(p, v);
	if (k)
		return k;
	/* the shortest of %.15g .. %.17g that reads back as the same double */
	for (prec = 15; prec <= 17; prec++) {
		n = snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* keep it a float for typed consumers: 0 -> 0.0, 1e+300 stays */
	if (!strpbrk(buf, ".e") && n + 2 < (int)sizeof(buf)) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	memcpy(p, buf, (size_t)n);
	return (size_t)n;
}

/* A text item (definite or chunked) as the body of a JSON string. */
static void json_text_body(struct bbx_out *o, struct cbr *c, const struct cbh *h)
{
	struct cbh k;

	if (h->ai != 31) {
		bbx__json_esc(o, c->p, (size_t)h->val);
		c->p += h->val;
		return;
	}
	while (!cbr_at_break(c) && cbr_head(c, &k)) {
		bbx__json_esc(o, c->p, (size_t)k.val);
		c->p += k.val;
	}
	c->p++;
}

/* A map key as a JSON string: text as is, integers in decimal, else "?". */
static void json_key(struct bbx_out *o, struct cbr *c)
{
	const uint8_t *save = c->p;
	struct cbh h;

	if (!cbr_head(c, &h))
		return;
	bbx_out_char(o, '"');
	if (h.major == 3) {
		json_text_body(o, c, &h);
	} else if (h.major == 0) {
		json_u64(o, h.val);
	} else if (h.major == 1 && h.val < UINT64_MAX) {
		bbx_out_char(o, '-');
		json_u64(o, h.val + 1);
	} else {
		bbx_out_char(o, '?');
		c->p = save;
		bbx__cbr_skip(c);
	}
	bbx_out_str(o, "\":");
}

void bbx__json_item(struct bbx_out *o, struct cbr *c)
{
	struct cbh h, k;
	uint64_t i;
	bool first = true;

	if (!cbr_head(c, &h))
		return;
	switch (h.major) {
	case 0:
		json_u64(o, h.val);
		return;
	case 1:
		if (h.val == UINT64_MAX) {
			bbx_out_str(o, "-18446744073709551616");
		} else {
			bbx_out_char(o, '-');
			json_u64(o, h.val + 1);
		}
		return;
	case 2:
		if (h.ai != 31) {
			bbx__json_hex(o, c->p, (size_t)h.val);
			c->p += h.val;
			return;
		}
		/* chunks: one hex string of all of them */
		bbx_out_char(o, '"');
		while (!cbr_at_break(c) && cbr_head(c, &k)) {
			bbx__json_hex_body(o, c->p, (size_t)k.val);
			c->p += k.val;
		}
		c->p++;
		bbx_out_char(o, '"');
		return;
	case 3:
		bbx_out_char(o, '"');
		json_text_body(o, c, &h);
		bbx_out_char(o, '"');
		return;
	case 4:
	case 5:
		bbx_out_char(o, h.major == 4 ? '[' : '{');
		for (i = 0; h.ai == 31 ? !cbr_at_break(c) : i < h.val; i++) {
			if (!first)
				bbx_out_char(o, ',');
			first = false;
			if (h.major == 5)
				json_key(o, c);
			bbx__json_item(o, c);
		}
		if (h.ai == 31)
			c->p++;
		bbx_out_char(o, h.major == 4 ? ']' : '}');
		return;
	case 6:
		bbx__json_item(o, c); /* the tag's meaning is not kept in JSON */
		return;
	default:
		switch (h.ai) {
		case 20: bbx_out_str(o, "false"); return;
		case 21: bbx_out_str(o, "true"); return;
		case 25: json_double(o, half_to_double((unsigned)h.val)); return;
		case 26: {
			uint32_t u = (uint32_t)h.val;
			float f;

			memcpy(&f, &u, sizeof(f));
			json_double(o, f);
			return;
		}
		case 27: {
			uint64_t u = h.val;
			double d;

			memcpy(&d, &u, sizeof(d));
			json_double(o, d);
			return;
		}
		default: /* null, undefined, other simple values */
			bbx_out_str(o, "null");
			return;
		}
	}
}
