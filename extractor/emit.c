/* SPDX-License-Identifier: MIT */
/*
 * emit.c - JSON and CBOR output for bb-extract (see emit.h).
 *
 * Record values arrive as CBOR bytes that the reader proved intact (the
 * record's seq checked out), but intact is not the same as well formed: a
 * crashing owner may have written garbage before committing.  Every value
 * is therefore checked in one bounded pass (cbr_check: lengths inside the
 * buffer, nesting depth limited, counts bounded by the bytes left) before
 * anything of it is written, so a bad value never leaves half a JSON line.
 */
#include "emit.h"

#include <blackbox/format.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CBR_DEPTH 32 /* deepest nesting accepted in a value */

/* ---- numbers and time ------------------------------------------------- */

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/*
 * Exactly 8 digits of @v (< 10^8), all at once in one 64-bit word (SWAR):
 * split into two 4-digit lanes of 32 bits (v / 10^4, v % 10^4), each lane
 * into two 2-digit lanes of 16 bits (x / 100 as x * 10486 >> 20), each of
 * those into two digits of 8 bits (y / 10 as y * 103 >> 10).  Both
 * reciprocals are exact in their ranges (x < 10^4, y < 100; checked for
 * all 10^8 inputs when written, and by tests/extract/test_emit), and no
 * lane's product reaches the next lane.  The most significant digit lands
 * in the lowest byte: the word is stored little-endian.
 */
static inline void fmt8(char *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t x = (uint64_t)(v / 10000) | (uint64_t)(v % 10000) << 32;
	uint64_t h = ((x * 10486) >> 20) & 0x0000007f0000007full;

	x = h | (x - h * 100) << 16;
	h = ((x * 103) >> 10) & 0x000f000f000f000full;
	x = h | (x - h * 10) << 8;
	x += 0x3030303030303030ull; /* '0' in every byte */
	memcpy(p, &x, 8);
#else
	for (int w = 8; w > 0; w -= 2) {
		uint32_t d = (v % 100) * 2;

		v /= 100;
		p[w - 2] = digits2[d];
		p[w - 1] = digits2[d + 1];
	}
#endif
}

/* Digits of @v (< 10^8), written from the start of @p; returns the count. */
static inline size_t fmt_u32_small(char *p, uint32_t v)
{
	size_t n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 :
		   v < 100000 ? 5 : v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
	size_t i = n;

	while (v >= 100) {
		uint32_t d = (v % 100) * 2;

		v /= 100;
		p[--i] = digits2[d + 1];
		p[--i] = digits2[d];
	}
	if (v >= 10) {
		p[--i] = digits2[v * 2 + 1];
		p[--i] = digits2[v * 2];
	} else {
		p[--i] = (char)('0' + v);
	}
	return n;
}

/* In 8-digit chunks: 32-bit divisions only below the top one. */
size_t bbx_fmt_u64(char *p, uint64_t v)
{
	size_t n;

	if (v < 100000000)
		return fmt_u32_small(p, (uint32_t)v);
	if (v < 10000000000000000ull) {
		n = fmt_u32_small(p, (uint32_t)(v / 100000000));
		fmt8(p + n, (uint32_t)(v % 100000000));
		return n + 8;
	}
	n = fmt_u32_small(p, (uint32_t)(v / 10000000000000000ull));
	v %= 10000000000000000ull;
	fmt8(p + n, (uint32_t)(v / 100000000));
	fmt8(p + n + 8, (uint32_t)(v % 100000000));
	return n + 16;
}

/* Exactly 9 digits of @ns (< 10^9). */
static inline void fmt_ns9(char *p, uint32_t ns)
{
	p[0] = (char)('0' + ns / 100000000);
	fmt8(p + 1, ns % 100000000);
}

/* The digits of @sec (> 0) from the cache; writes 16 bytes, returns the count. */
static inline size_t fmt_sec_cached(struct bbx_ns_cache *c, char *p, uint64_t sec)
{
	if (sec != c->sec || !c->len) {
		c->len = (uint8_t)bbx_fmt_u64(c->digits, sec);
		c->sec = sec;
	}
	memcpy(p, c->digits, sizeof(c->digits)); /* fixed size: one move */
	return c->len;
}

size_t bbx_fmt_ns(struct bbx_ns_cache *c, char *p, uint64_t v)
{
	uint64_t sec = v / 1000000000;
	size_t n;

	if (!sec)
		return bbx_fmt_u64(p, v);
	n = fmt_sec_cached(c, p, sec);
	fmt_ns9(p + n, (uint32_t)(v % 1000000000));
	return n + 9u;
}

size_t bbx_fmt_i64(char *p, int64_t v)
{
	if (v >= 0)
		return bbx_fmt_u64(p, (uint64_t)v);
	*p = '-';
	/* -(v + 1) + 1 is |v| without overflowing at INT64_MIN */
	return 1 + bbx_fmt_u64(p + 1, (uint64_t)(-(v + 1)) + 1);
}

/* Fixed-width decimal, @w digits. */
static void fmt_fixed(char *p, uint64_t v, int w)
{
	while (w-- > 0) {
		p[w] = (char)('0' + v % 10);
		v /= 10;
	}
}

/*
 * Proleptic Gregorian date of day @z (days since 1970-01-01), by counting
 * 400-year eras of 146097 days from 0000-03-01 (so the leap day ends a
 * year).
 */
static void civil_date(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, yy;
	uint64_t doe, yoe, doy, mp;

	z += 719468; /* days from 0000-03-01 to 1970-01-01 */
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (uint64_t)(z - era * 146097);                            /* [0, 146096] */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;    /* [0, 399] */
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                  /* [0, 365] */
	mp = (5 * doy + 2) / 153;                                       /* March = 0 */
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	yy = (int64_t)yoe + era * 400;
	*y = yy + (*m <= 2);
}

size_t bbx_fmt_time(char *p, int64_t wall_ns)
{
	/* The date part changes once a second: keep the last one. */
	static int64_t csec = INT64_MIN;
	static char cbuf[40];
	static size_t clen;
	int64_t sec = wall_ns / 1000000000, ns = wall_ns % 1000000000;

	if (ns < 0) {
		ns += 1000000000;
		sec--;
	}
	if (sec != csec) {
		int64_t day = sec / 86400, rem = sec % 86400, y;
		unsigned m, d;

		if (rem < 0) {
			rem += 86400;
			day--;
		}
		civil_date(day, &y, &m, &d);
		if (y >= 0 && y <= 9999) {
			fmt_fixed(cbuf, (uint64_t)y, 4);
			clen = 4;
		} else {
			clen = (size_t)snprintf(cbuf, 24, "%lld", (long long)y);
		}
		cbuf[clen] = '-';
		fmt_fixed(cbuf + clen + 1, m, 2);
		cbuf[clen + 3] = '-';
		fmt_fixed(cbuf + clen + 4, d, 2);
		cbuf[clen + 6] = 'T';
		fmt_fixed(cbuf + clen + 7, (uint64_t)(rem / 3600), 2);
		cbuf[clen + 9] = ':';
		fmt_fixed(cbuf + clen + 10, (uint64_t)(rem / 60 % 60), 2);
		cbuf[clen + 12] = ':';
		fmt_fixed(cbuf + clen + 13, (uint64_t)(rem % 60), 2);
		clen += 15;
		csec = sec;
	}
	if (clen <= 24)
		memcpy(p, cbuf, 24); /* years 0-9999 (19 bytes): one fixed-size move */
	else
		memcpy(p, cbuf, clen);
	p[clen] = '.';
	fmt_ns9(p + clen + 1, (uint32_t)ns);
	p[clen + 10] = 'Z';
	return clen + 11;
}

/* ---- UTF-8 ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at @s (n > 0 bytes left), 0 if invalid. */
static size_t u8len(const uint8_t *s, size_t n)
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

static bool u8valid(const uint8_t *s, size_t n)
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

/* Bytes of @s once each invalid byte is replaced by U+FFFD (3 bytes). */
static size_t u8sanitized_len(const uint8_t *s, size_t n)
{
	size_t i = 0, len = 0, k;

	while (i < n) {
		k = u8len(s + i, n - i);
		len += k ? k : 3;
		i += k ? k : 1;
	}
	return len;
}

static void put_sanitized(struct bbx_out *o, const uint8_t *s, size_t n)
{
	size_t i = 0, st = 0, k;

	while (i < n) {
		k = s[i] < 0x80 ? 1 : u8len(s + i, n - i);
		if (k) {
			i += k;
			continue;
		}
		bbx_out_put(o, s + st, i - st);
		bbx_out_put(o, "\xef\xbf\xbd", 3);
		st = ++i;
	}
	bbx_out_put(o, s + st, i - st);
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
static size_t esc_into(char *d, const uint8_t *s, size_t n)
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

/* The body of a JSON string (no quotes): escapes, U+FFFD for bad bytes. */
static void json_esc(struct bbx_out *o, const uint8_t *s, size_t n)
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
static void json_hex_body(struct bbx_out *o, const uint8_t *p, size_t n)
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

static void json_hex(struct bbx_out *o, const uint8_t *p, size_t n)
{
	bbx_out_char(o, '"');
	json_hex_body(o, p, n);
	bbx_out_char(o, '"');
}

static void json_u64(struct bbx_out *o, uint64_t v)
{
	bbx_out_commit(o, bbx_fmt_u64(bbx_out_reserve(o, 20), v));
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

#define FMT_DOUBLE_MAX 48 /* bytes fmt_double() may write */

/* A double as JSON: at most FMT_DOUBLE_MAX bytes at @p; returns the count. */
static size_t fmt_double(char *p, double v)
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

static void json_double(struct bbx_out *o, double v)
{
	bbx_out_commit(o, fmt_double(bbx_out_reserve(o, FMT_DOUBLE_MAX), v));
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

static bool cbr_head(struct cbr *c, struct cbh *h)
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

static bool cbr_at_break(const struct cbr *c)
{
	return c->p < c->end && *c->p == 0xff;
}

/*
 * Check one item and move past it.  Sets *bad_utf8 when a text string is
 * not valid UTF-8 (still well formed).  Bounded: every step consumes at
 * least one byte, nesting is limited to CBR_DEPTH.
 */
static bool cbr_check(struct cbr *c, unsigned depth, bool *bad_utf8)
{
	struct cbh h, k;
	uint64_t i, n;

	if (depth > CBR_DEPTH || !cbr_head(c, &h))
		return false;
	switch (h.major) {
	case 0:
	case 1:
		return true;
	case 2:
	case 3:
		if (h.ai != 31) {
			if (h.val > (uint64_t)(c->end - c->p))
				return false;
			if (h.major == 3 && !u8valid(c->p, (size_t)h.val))
				*bad_utf8 = true;
			c->p += h.val;
			return true;
		}
		/* indefinite: definite chunks of the same major type, then break */
		while (!cbr_at_break(c)) {
			if (!cbr_head(c, &k) || k.major != h.major || k.ai == 31 ||
			    k.val > (uint64_t)(c->end - c->p))
				return false;
			if (k.major == 3 && !u8valid(c->p, (size_t)k.val))
				*bad_utf8 = true;
			c->p += k.val;
		}
		c->p++;
		return true;
	case 4:
	case 5:
		if (h.ai == 31) {
			while (!cbr_at_break(c)) {
				if (!cbr_check(c, depth + 1, bad_utf8))
					return false;
				if (h.major == 5 && !cbr_check(c, depth + 1, bad_utf8))
					return false;
			}
			c->p++;
			return true;
		}
		n = h.val;
		/* each item takes a byte at least: refuse impossible counts */
		if (n > (uint64_t)(c->end - c->p) / (h.major == 5 ? 2 : 1))
			return false;
		if (h.major == 5)
			n *= 2;
		for (i = 0; i < n; i++)
			if (!cbr_check(c, depth + 1, bad_utf8))
				return false;
		return true;
	case 6:
		return cbr_check(c, depth + 1, bad_utf8);
	default: /* 7 */
		if (h.ai == 31)
			return false; /* break outside an indefinite item */
		if (h.ai == 24 && h.val < 32)
			return false; /* not well formed (RFC 8949 §3.3) */
		return true;
	}
}

/* Move past one item already known to be well formed. */
static void cbr_skip(struct cbr *c)
{
	bool dummy = false;

	(void)cbr_check(c, 0, &dummy);
}

/*
 * The items of the array at @c (well formed), up to @max: start of each
 * in it[i], end in it[i + 1].  Returns the count, or -1 if not an array
 * or longer than @max.
 */
static int cbr_array(struct cbr *c, const uint8_t **it, int max)
{
	struct cbh h;
	int n = 0;

	if (!cbr_head(c, &h) || h.major != 4)
		return -1;
	for (;;) {
		if (h.ai == 31 ? cbr_at_break(c) : (uint64_t)n == h.val)
			break;
		if (n == max)
			return -1;
		it[n++] = c->p;
		cbr_skip(c);
	}
	it[n] = c->p;
	return n;
}

static unsigned cbr_major(const uint8_t *p)
{
	return *p >> 5;
}

/* ---- JSON from CBOR --------------------------------------------------- */

static double half_to_double(unsigned h)
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

static void json_item(struct bbx_out *o, struct cbr *c);

/* A text item (definite or chunked) as the body of a JSON string. */
static void json_text_body(struct bbx_out *o, struct cbr *c, const struct cbh *h)
{
	struct cbh k;

	if (h->ai != 31) {
		json_esc(o, c->p, (size_t)h->val);
		c->p += h->val;
		return;
	}
	while (!cbr_at_break(c) && cbr_head(c, &k)) {
		json_esc(o, c->p, (size_t)k.val);
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
		cbr_skip(c);
	}
	bbx_out_str(o, "\":");
}

static void json_item(struct bbx_out *o, struct cbr *c)
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
			json_hex(o, c->p, (size_t)h.val);
			c->p += h.val;
			return;
		}
		/* chunks: one hex string of all of them */
		bbx_out_char(o, '"');
		while (!cbr_at_break(c) && cbr_head(c, &k)) {
			json_hex_body(o, c->p, (size_t)k.val);
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
			json_item(o, c);
		}
		if (h.ai == 31)
			c->p++;
		bbx_out_char(o, h.major == 4 ? ']' : '}');
		return;
	case 6:
		json_item(o, c); /* the tag's meaning is not kept in JSON */
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

typedef size_t (*cbor_head_fn)(size_t, unsigned char *, size_t);

static void cbor_text(struct bbx_out *o, const uint8_t *s, size_t n)
{
	bool ok = u8valid(s, n);
	size_t len = ok ? n : u8sanitized_len(s, n);

	cb_put_head(o, 3, len);
	if (ok)
		bbx_out_put(o, s, n);
	else
		put_sanitized(o, s, n);
}

/* Copy one well-formed item, re-encoding text that is not valid UTF-8. */
static void cbor_copy_sanitized(struct bbx_out *o, struct cbr *c)
{
	struct cbh h, k;
	uint64_t i, n;

	if (!cbr_head(c, &h))
		return;
	if (h.major == 3) {
		if (h.ai != 31) {
			cbor_text(o, c->p, (size_t)h.val);
			c->p += h.val;
			return;
		}
		bbx_out_char(o, 0x7f);
		while (!cbr_at_break(c) && cbr_head(c, &k)) {
			cbor_text(o, c->p, (size_t)k.val);
			c->p += k.val;
		}
		c->p++;
		bbx_out_char(o, (char)0xff);
		return;
	}
	if (h.major != 4 && h.major != 5 && h.major != 6) {
		/* scalars, byte strings: as they are */
		c->p = h.start;
		cbr_skip(c);
		bbx_out_put(o, h.start, (size_t)(c->p - h.start));
		return;
	}
	bbx_out_put(o, h.start, (size_t)(c->p - h.start));
	if (h.major == 6) {
		cbor_copy_sanitized(o, c);
		return;
	}
	n = h.major == 5 ? 2 * h.val : h.val;
	for (i = 0; h.ai == 31 ? !cbr_at_break(c) : i < n; i++)
		cbor_copy_sanitized(o, c);
	if (h.ai == 31) {
		c->p++;
		bbx_out_char(o, (char)0xff);
	}
}

/* ---- the emitter ------------------------------------------------------ */

void bbx_em_init(struct bbx_em *em, struct bbx_out *o, bool cbor)
{
	memset(em, 0, sizeof(*em));
	em->o = o;
	em->cbor = cbor;
}

/* Before a value: the JSON comma between array elements. */
static void pre_value(struct bbx_em *em)
{
	if (em->after_key) {
		em->after_key = false;
		return;
	}
	if (!em->cbor && em->depth && em->more[em->depth])
		bbx_out_char(em->o, ',');
	em->more[em->depth] = true;
}

static void open_level(struct bbx_em *em, char json, uint8_t cbor)
{
	pre_value(em);
	bbx_out_char(em->o, em->cbor ? (char)cbor : json);
	if (em->depth < BBX_EM_DEPTH - 1)
		em->depth++;
	em->more[em->depth] = false;
	em->closer[em->depth] = json == '{' ? '}' : ']';
}

void bbx_em_map(struct bbx_em *em)
{
	open_level(em, '{', 0xbf);
}

void bbx_em_array(struct bbx_em *em)
{
	open_level(em, '[', 0x9f);
}

void bbx_em_end(struct bbx_em *em)
{
	bbx_out_char(em->o, em->cbor ? (char)0xff : em->closer[em->depth]);
	if (em->depth)
		em->depth--;
}

void bbx_em_eol(struct bbx_em *em)
{
	if (!em->cbor)
		bbx_out_char(em->o, '\n');
	em->depth = 0;
	em->more[0] = false;
	em->after_key = false;
}

void bbx_em_key(struct bbx_em *em, const char *k)
{
	size_t n = strlen(k);

	if (em->cbor) {
		bbx_out_commit(em->o, cb_text(bbx_out_reserve(em->o, n + 9), k, n));
	} else {
		char *p = bbx_out_reserve(em->o, n + 4);
		size_t i = 0;

		if (em->more[em->depth])
			p[i++] = ',';
		p[i++] = '"';
		memcpy(p + i, k, n);
		i += n;
		p[i++] = '"';
		p[i++] = ':';
		bbx_out_commit(em->o, i);
	}
	em->more[em->depth] = true;
	em->after_key = true;
}

void bbx_em_u64(struct bbx_em *em, uint64_t v)
{
	pre_value(em);
	if (em->cbor)
		cb_put_head(em->o, 0, v);
	else
		json_u64(em->o, v);
}

void bbx_em_i64(struct bbx_em *em, int64_t v)
{
	pre_value(em);
	if (!em->cbor)
		bbx_out_commit(em->o, bbx_fmt_i64(bbx_out_reserve(em->o, 20), v));
	else
		bbx_out_commit(em->o, cb_i64(bbx_out_reserve(em->o, 9), v));
}

void bbx_em_bool(struct bbx_em *em, bool v)
{
	pre_value(em);
	if (em->cbor)
		bbx_out_char(em->o, (char)(v ? 0xf5 : 0xf4));
	else
		bbx_out_str(em->o, v ? "true" : "false");
}

void bbx_em_str(struct bbx_em *em, const char *s, size_t n)
{
	pre_value(em);
	if (em->cbor) {
		cbor_text(em->o, (const uint8_t *)s, n);
	} else {
		bbx_out_char(em->o, '"');
		json_esc(em->o, (const uint8_t *)s, n);
		bbx_out_char(em->o, '"');
	}
}

void bbx_em_cstr(struct bbx_em *em, const char *s)
{
	bbx_em_str(em, s, strlen(s));
}

void bbx_em_bytes(struct bbx_em *em, const uint8_t *p, size_t n)
{
	pre_value(em);
	if (em->cbor) {
		cb_put_head(em->o, 2, n);
		bbx_out_put(em->o, p, n);
	} else {
		json_hex(em->o, p, n);
	}
}

void bbx_em_record_start(struct bbx_em *em, int64_t wall_ns, uint64_t clock_ns,
			 bool with_pid, int32_t pid, int32_t tid, const char *thread,
			 uint32_t ring, const char *type)
{
	char t[BBX_TIME_MAX], *p;
	size_t n = 0, k;

#define LIT(s) (memcpy(p + n, s, sizeof(s) - 1), n += sizeof(s) - 1)
	if (em->cbor) {
		/* the same members as bbx_em_map() + bbx_em_kv_*(), in one
		 * reservation; the thread name may need U+FFFD repairs */
		pre_value(em);
		p = bbx_out_reserve(em->o, 160);
		LIT("\xbf\x62ts");
		k = bbx_fmt_time(t, wall_ns);
		n += cb_text(p + n, t, k);
		LIT("\x65ts_ns");
		n += cb_i64(p + n, wall_ns);
		LIT("\x68" "clock_ns");
		n += cb_head(p + n, 0, clock_ns);
		if (with_pid) {
			LIT("\x63pid");
			n += cb_i64(p + n, pid);
		}
		LIT("\x63tid");
		n += cb_i64(p + n, tid);
		LIT("\x66thread");
		bbx_out_commit(em->o, n);
		cbor_text(em->o, (const uint8_t *)thread, strlen(thread));
		p = bbx_out_reserve(em->o, 64);
		n = 0;
		LIT("\x64ring");
		n += cb_head(p + n, 0, ring);
		LIT("\x64type");
		n += cb_text(p + n, type, strnlen(type, 16));
		bbx_out_commit(em->o, n);
		if (em->depth < BBX_EM_DEPTH - 1)
			em->depth++;
		em->more[em->depth] = true;
		em->closer[em->depth] = '}';
		em->after_key = false;
		return;
	}
	p = bbx_out_reserve(em->o, 256);
	LIT("{\"ts\":\"");
	k = bbx_fmt_time(p + n, wall_ns);
	n += k;
	LIT("\",\"ts_ns\":");
	if (wall_ns >= 1000000000) {
		/* the 9 digits of the fraction are the ones ts just got
		 * ("...:SS.nnnnnnnnnZ"): only the seconds need digits */
		const char *frac = p + n - (sizeof("\",\"ts_ns\":") - 1) - 10;

		n += fmt_sec_cached(&em->ts_cache, p + n, (uint64_t)wall_ns / 1000000000);
		memcpy(p + n, frac, 9);
		n += 9;
	} else {
		n += bbx_fmt_i64(p + n, wall_ns);
	}
	LIT(",\"clock_ns\":");
	n += bbx_fmt_ns(&em->clock_cache, p + n, clock_ns);
	if (with_pid) {
		LIT(",\"pid\":");
		n += bbx_fmt_i64(p + n, pid);
	}
	LIT(",\"tid\":");
	n += bbx_fmt_i64(p + n, tid);
	LIT(",\"thread\":\"");
	if (thread[0]) { /* shared-ring records have none */
		bbx_out_commit(em->o, n);
		json_esc(em->o, (const uint8_t *)thread, strlen(thread));
		p = bbx_out_reserve(em->o, 64);
		n = 0;
	}
	LIT("\",\"ring\":");
	n += bbx_fmt_u64(p + n, ring);
	LIT(",\"type\":\"");
	k = strnlen(type, 16);
	memcpy(p + n, type, k);
	n += k;
	p[n++] = '"';
	bbx_out_commit(em->o, n);
#undef LIT
	/* the emitter's state, as if bbx_em_map() and members were written */
	em->depth = 1;
	em->more[1] = true;
	em->closer[1] = '}';
	em->after_key = false;
}

void bbx_em_record_end(struct bbx_em *em, bool truncated, bool important)
{
	char *p;
	size_t n = 0;

	if (em->cbor || em->depth != 1 || !em->more[1] || em->after_key) {
		bbx_em_key(em, "truncated");
		bbx_em_bool(em, truncated);
		if (important) {
			bbx_em_key(em, "important");
			bbx_em_bool(em, true);
		}
		bbx_em_end(em);
		bbx_em_eol(em);
		return;
	}
	/* what the calls above write in JSON, in one reservation */
	p = bbx_out_reserve(em->o, 64);
#define LIT(s) (memcpy(p + n, s, sizeof(s) - 1), n += sizeof(s) - 1)
	if (truncated)
		LIT(",\"truncated\":true");
	else
		LIT(",\"truncated\":false");
	if (important)
		LIT(",\"important\":true");
	LIT("}\n");
#undef LIT
	bbx_out_commit(em->o, n);
	em->depth = 0;
	em->more[0] = false;
	em->after_key = false;
}

/* One well-formed CBOR item [p, end) as a value. */
static void em_item(struct bbx_em *em, const uint8_t *p, const uint8_t *end,
		    bool bad_utf8)
{
	struct cbr c = { p, end };

	pre_value(em);
	if (!em->cbor)
		json_item(em->o, &c);
	else if (!bad_utf8)
		bbx_out_put(em->o, p, (size_t)(end - p));
	else
		cbor_copy_sanitized(em->o, &c);
}

/* NULL if @value (well formed) has the shape @tag promises, else why not. */
static const char *shape_error(unsigned tag, const uint8_t *v, const uint8_t *end,
			       const uint8_t **it, int *nit)
{
	struct cbr c = { v, end };
	unsigned major = cbr_major(v), ai = v[0] & 31;

	switch (tag) {
	case BB_TAG_STR:
		return major == 3 ? NULL : "str record without a text value";
	case BB_TAG_I64:
		return major <= 1 ? NULL : "i64 record without an integer value";
	case BB_TAG_U64:
		return major == 0 ? NULL : "u64 record without an unsigned value";
	case BB_TAG_F64:
		return major == 7 && ai >= 25 && ai <= 27 ? NULL
			: "f64 record without a float value";
	case BB_TAG_BOOL:
		return major == 7 && (ai == 20 || ai == 21) ? NULL
			: "bool record without a boolean value";
	case BB_TAG_BYTES:
		return major == 2 ? NULL : "bytes record without a byte string";
	case BB_TAG_KV:
		*nit = cbr_array(&c, it, 4);
		return *nit == 2 && cbr_major(it[0]) == 3 ? NULL
			: "kv record that is not [text, value]";
	case BB_TAG_EVENT:
		*nit = cbr_array(&c, it, 4);
		return *nit == 2 && cbr_major(it[0]) == 3 && cbr_major(it[1]) == 5
			? NULL : "event record that is not [text, map]";
	case BB_TAG_OWNER:
		*nit = cbr_array(&c, it, 4);
		return *nit == 4 ? NULL : "owner record that is not an array of 4";
	default:
		return NULL; /* crash, state, unknown: any value */
	}
}

/* ---- JSON fast path for the common record shapes ------------------- */

/*
 * Most records are a scalar, a kv of a text key and a scalar, or an event
 * whose fields are text keys and scalars.  For those, one forward pass
 * both checks and formats, straight into reserved output that is committed
 * only when the whole value checked out; anything else (and anything
 * wrong) returns false having written nothing, and the general path
 * (cbr_check, shape_error, json_item) decides.  The bytes written are
 * exactly the general path's: the same escaper, number and float formats.
 */

#define FAST_MAX_LEN 2048  /* longer values take the general path */
/* Output bound per input byte: a half float (3 bytes) prints at most
 * FMT_DOUBLE_MAX bytes, text 6 per byte, a one-byte map key and value
 * ("":false,) 9 per 2 bytes; 16 per byte covers them all. */
#define FAST_OUT(n) (16 * (n) + 64)

/* A definite-length head, argument in *val.  False if indefinite, reserved
 * or cut short. */
static inline bool fast_head(const uint8_t **cp, const uint8_t *end, unsigned *major,
			     unsigned *ai, uint64_t *val)
{
	const uint8_t *c = *cp;
	uint64_t v;
	uint8_t b;

	if (c >= end)
		return false;
	b = *c++;
	*major = b >> 5;
	*ai = b & 31;
	v = *ai;
	if (*ai >= 24) {
		size_t k;

		if (*ai > 27)
			return false;
		k = (size_t)1 << (*ai - 24);
		if ((size_t)(end - c) < k)
			return false;
		for (v = 0; k--;)
			v = v << 8 | *c++;
	}
	*val = v;
	*cp = c;
	return true;
}

/* A definite text string as a quoted JSON string at @p; 0 if not one. */
static inline size_t fast_text(char *p, const uint8_t **cp, const uint8_t *end)
{
	unsigned major, ai;
	uint64_t n;
	size_t k;

	if (!fast_head(cp, end, &major, &ai, &n) || major != 3 ||
	    n > (uint64_t)(end - *cp))
		return 0;
	p[0] = '"';
	k = 1 + esc_into(p + 1, *cp, (size_t)n);
	p[k++] = '"';
	*cp += n;
	return k;
}

/*
 * A scalar item (integer, definite byte or text string, false, true,
 * null, undefined, float) as JSON at @p; 0 for anything else.  @mask
 * says which majors are acceptable (bit per major type).
 */
static inline size_t fast_scalar(char *p, const uint8_t **cp, const uint8_t *end,
				 unsigned mask)
{
	const uint8_t *c = *cp;
	unsigned major, ai;
	uint64_t v;
	size_t k;

	if (!fast_head(&c, end, &major, &ai, &v) || !(mask & (1u << major)))
		return 0;
	switch (major) {
	case 0:
		k = bbx_fmt_u64(p, v);
		break;
	case 1:
		if (v == UINT64_MAX) {
			memcpy(p, "-18446744073709551616", 21);
			k = 21;
		} else {
			p[0] = '-';
			k = 1 + bbx_fmt_u64(p + 1, v + 1);
		}
		break;
	case 2: {
		static const char hex[] = "0123456789abcdef";

		if (v > (uint64_t)(end - c))
			return 0;
		p[0] = '"';
		for (k = 0; k < v; k++) {
			p[1 + 2 * k] = hex[c[k] >> 4];
			p[2 + 2 * k] = hex[c[k] & 15];
		}
		k = 1 + 2 * (size_t)v;
		p[k++] = '"';
		c += v;
		break;
	}
	case 3:
		if (v > (uint64_t)(end - c))
			return 0;
		p[0] = '"';
		k = 1 + esc_into(p + 1, c, (size_t)v);
		p[k++] = '"';
		c += v;
		break;
	case 7:
		switch (ai) {
		case 20: memcpy(p, "false", 5); k = 5; break;
		case 21: memcpy(p, "true", 4);  k = 4; break;
		case 22:
		case 23: memcpy(p, "null", 4);  k = 4; break;
		case 25: k = fmt_double(p, half_to_double((unsigned)v)); break;
		case 26: {
			uint32_t u = (uint32_t)v;
			float f;

			memcpy(&f, &u, sizeof(f));
			k = fmt_double(p, f);
			break;
		}
		case 27: {
			double d;

			memcpy(&d, &v, sizeof(d));
			k = fmt_double(p, d);
			break;
		}
		default:
			return 0; /* other simple values: the general path */
		}
		break;
	default:
		return 0;
	}
	*cp = c;
	return k;
}

#define M_ANY_SCALAR ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 7))

/*
 * The major types (bit per type) a scalar record of @tag may hold, as
 * shape_error() says, its first byte @v checked for f64 and bool; 0 for a
 * tag that is not a scalar (or a value that cannot be one).
 */
static inline unsigned scalar_mask(unsigned tag, const uint8_t *v)
{
	switch (tag) {
	case BB_TAG_STR:   return 1u << 3;
	case BB_TAG_I64:   return (1u << 0) | (1u << 1);
	case BB_TAG_U64:   return 1u << 0;
	case BB_TAG_BYTES: return 1u << 2;
	case BB_TAG_F64:   /* a half, single or double float */
		return *v >= 0xf9 && *v <= 0xfb ? 1u << 7 : 0;
	case BB_TAG_BOOL:  return *v == 0xf4 || *v == 0xf5 ? 1u << 7 : 0;
	default:           return 0;
	}
}

/* The members bbx_em_record_value() would write for @tag, or false. */
static bool json_fast_value(struct bbx_em *em, unsigned tag, const uint8_t *value,
			    size_t len)
{
	const uint8_t *c = value, *end = value + len;
	unsigned mask, major, ai;
	uint64_t n;
	size_t k, w = 0;
	char *p;

#define LIT(s) (memcpy(p + w, s, sizeof(s) - 1), w += sizeof(s) - 1)
	if (!len || len > FAST_MAX_LEN || em->depth != 1 || !em->more[1] || em->after_key)
		return false;
	p = bbx_out_reserve(em->o, FAST_OUT(len));
	switch (tag) {
	case BB_TAG_KV:
	case BB_TAG_EVENT:
		if (*c++ != 0x82) /* array of 2: a text, then a value or a map */
			return false;
		if (tag == BB_TAG_KV)
			LIT(",\"key\":");
		else
			LIT(",\"name\":");
		if (!(k = fast_text(p + w, &c, end)))
			return false;
		w += k;
		if (tag == BB_TAG_KV) {
			LIT(",\"value\":");
			if (!(k = fast_scalar(p + w, &c, end, M_ANY_SCALAR)))
				return false;
			w += k;
			break;
		}
		LIT(",\"fields\":{");
		if (!fast_head(&c, end, &major, &ai, &n) || major != 5 ||
		    n > (uint64_t)(end - c) / 2)
			return false;
		for (uint64_t i = 0; i < n; i++) {
			if (i)
				p[w++] = ',';
			if (!(k = fast_text(p + w, &c, end)))
				return false;
			w += k;
			p[w++] = ':';
			if (!(k = fast_scalar(p + w, &c, end, M_ANY_SCALAR)))
				return false;
			w += k;
		}
		p[w++] = '}';
		break;
	default:
		if (!(mask = scalar_mask(tag, c)))
			return false;
		LIT(",\"value\":");
		if (!(k = fast_scalar(p + w, &c, end, mask)))
			return false;
		w += k;
		break;
	}
#undef LIT
	if (c != end)
		return false; /* trailing bytes: the general path says so */
	bbx_out_commit(em->o, w);
	return true;
}

/*
 * CBOR: the same shapes are checked in one pass (text must be valid UTF-8:
 * anything to repair takes the general path) and copied as they are.
 * Moves *cp past one scalar item of a major in @mask; false otherwise.
 */
static inline bool fast_skip_scalar(const uint8_t **cp, const uint8_t *end, unsigned mask)
{
	const uint8_t *c = *cp;
	unsigned major, ai;
	uint64_t v;

	if (!fast_head(&c, end, &major, &ai, &v) || !(mask & (1u << major)))
		return false;
	switch (major) {
	case 0:
	case 1:
		break;
	case 2:
	case 3:
		if (v > (uint64_t)(end - c) || (major == 3 && !u8valid(c, (size_t)v)))
			return false;
		c += v;
		break;
	case 7:
		if (ai < 20 || ai == 24 || ai > 27)
			return false; /* other simple values: the general path */
		break;
	default:
		return false;
	}
	*cp = c;
	return true;
}

/* A key and the raw item [p, end) after it, as em_item() copies it. */
static inline size_t cbor_member(char *o, const char *key, size_t klen, const uint8_t *p,
				 const uint8_t *end)
{
	size_t n = cb_text(o, key, klen);

	memcpy(o + n, p, (size_t)(end - p));
	return n + (size_t)(end - p);
}

/* The members bbx_em_record_value() would write in CBOR for @tag, or false. */
static bool cbor_fast_value(struct bbx_em *em, unsigned tag, const uint8_t *value,
			    size_t len)
{
	const uint8_t *c = value, *end = value + len, *mid;
	unsigned mask, major, ai;
	uint64_t n;
	size_t w;
	char *p;

	if (!len || len > FAST_MAX_LEN || em->after_key)
		return false;
	switch (tag) {
	case BB_TAG_KV:
	case BB_TAG_EVENT:
		if (*c++ != 0x82 || !fast_skip_scalar(&c, end, 1u << 3))
			return false;
		mid = c;
		if (tag == BB_TAG_KV) {
			if (!fast_skip_scalar(&c, end, M_ANY_SCALAR) || c != end)
				return false;
			p = bbx_out_reserve(em->o, len + 16);
			w = cbor_member(p, "key", 3, value + 1, mid);
			w += cbor_member(p + w, "value", 5, mid, end);
			break;
		}
		if (!fast_head(&c, end, &major, &ai, &n) || major != 5 ||
		    n > (uint64_t)(end - c) / 2)
			return false;
		for (uint64_t i = 0; i < n; i++)
			if (!fast_skip_scalar(&c, end, 1u << 3) ||
			    !fast_skip_scalar(&c, end, M_ANY_SCALAR))
				return false;
		if (c != end)
			return false;
		p = bbx_out_reserve(em->o, len + 16);
		w = cbor_member(p, "name", 4, value + 1, mid);
		w += cbor_member(p + w, "fields", 6, mid, end);
		break;
	default:
		if (!(mask = scalar_mask(tag, c)) || !fast_skip_scalar(&c, end, mask) ||
		    c != end)
			return false;
		p = bbx_out_reserve(em->o, len + 16);
		w = cbor_member(p, "value", 5, value, end);
		break;
	}
	bbx_out_commit(em->o, w);
	return true;
}

bool bbx_em_record_value(struct bbx_em *em, unsigned tag,
			 const uint8_t *value, size_t len)
{
	static const char *const owner_keys[4] = {
		"tid", "thread", "prev_tid", "prev_thread",
	};
	struct cbr c = { value, value + len };
	const uint8_t *it[5];
	const char *why;
	bool bad_utf8 = false;
	int nit = 0, i;

	if (!em->general_only && (em->cbor ? cbor_fast_value(em, tag, value, len)
					   : json_fast_value(em, tag, value, len)))
		return true;
	if (!len)
		why = "empty value";
	else if (!cbr_check(&c, 0, &bad_utf8))
		why = "malformed CBOR value";
	else if (c.p != value + len)
		why = "trailing bytes after the value";
	else
		why = shape_error(tag, value, c.p, it, &nit);
	if (why) {
		bbx_em_key(em, "error");
		bbx_em_cstr(em, why);
		bbx_em_key(em, "raw");
		bbx_em_bytes(em, value, len);
		return false;
	}
	switch (tag) {
	case BB_TAG_KV:
		bbx_em_key(em, "key");
		em_item(em, it[0], it[1], bad_utf8);
		bbx_em_key(em, "value");
		em_item(em, it[1], it[2], bad_utf8);
		break;
	case BB_TAG_EVENT:
		bbx_em_key(em, "name");
		em_item(em, it[0], it[1], bad_utf8);
		bbx_em_key(em, "fields");
		em_item(em, it[1], it[2], bad_utf8);
		break;
	case BB_TAG_OWNER:
		bbx_em_key(em, "value");
		bbx_em_map(em);
		for (i = 0; i < 4; i++) {
			bbx_em_key(em, owner_keys[i]);
			em_item(em, it[i], it[i + 1], bad_utf8);
		}
		bbx_em_end(em);
		break;
	default:
		bbx_em_key(em, "value");
		em_item(em, value, c.p, bad_utf8);
	}
	return true;
}
