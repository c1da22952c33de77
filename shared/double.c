/* SPDX-License-Identifier: MIT */
/*
 * shared/double.c - the shortest decimal that reads back as the same
 * double (double.h), computed exactly, without libm or stdio.
 *
 * A finite double is M * 2^E.  The decimals that read back as it are those
 * strictly between the midpoints to its neighbours (or on one, when M is
 * even: strtod() rounds a tie to the even significand), so with every
 * number scaled by 2^(E-2):
 *
 *	low  = 4M - 2   (4M - 1 when M = 2^52 and the neighbour below has
 *	                 a finer spacing: a power of two)
 *	v    = 4M
 *	high = 4M + 2
 *
 * Those three are integers times 2^(E-2), that is integers times a power
 * of ten: N * 2^e for e >= 0, N * 5^-e * 10^e for e < 0.  Their decimal
 * digits (at most 770, for the smallest subnormal) are computed exactly in
 * base-10^9 limbs.  Then for p = 1, 2, ... significant digits: v cut to p
 * digits (floor) and the next p-digit decimal above it (ceil) are the only
 * p-digit candidates near v; the first p where either lies in [low, high]
 * gives the answer, the nearer to v when both do (a tie to the even digit,
 * as printf rounds).  17 digits always suffice.
 *
 * Most doubles printed are short decimals of moderate size (0.5, 1234.25,
 * 0.1): for them one division checks a candidate directly (fast_fixed()).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "double.h"

#define LIMBS  90            /* base 10^9: 810 digits > 770 */
#define BASE   1000000000u
#define DIGITS (LIMBS * 9 + 2)

struct big {
	uint32_t l[LIMBS];   /* least significant first, each < BASE */
	size_t n;
};

static void big_set(struct big *b, uint64_t v)
{
	b->n = 0;
	do {
		b->l[b->n++] = (uint32_t)(v % BASE);
		v /= BASE;
	} while (v);
}

/* b *= f, f < 2^32 (a limb times f stays below 2^62). */
static void big_mul(struct big *b, uint32_t f)
{
	uint64_t carry = 0;

	for (size_t i = 0; i < b->n; i++) {
		uint64_t x = (uint64_t)b->l[i] * f + carry;

		b->l[i] = (uint32_t)(x % BASE);
		carry = x / BASE;
	}
	while (carry && b->n < LIMBS) {
		b->l[b->n++] = (uint32_t)(carry % BASE);
		carry /= BASE;
	}
}

/* a += b */
static void big_add(struct big *a, const struct big *b)
{
	uint32_t carry = 0;
	size_t n = a->n > b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++) {
		uint32_t x = (i < a->n ? a->l[i] : 0) + (i < b->n ? b->l[i] : 0) + carry;

		carry = x >= BASE;
		a->l[i] = carry ? x - BASE : x;
	}
	a->n = n;
	if (carry && a->n < LIMBS)
		a->l[a->n++] = carry;
}

/* out = p * x, x < 2^56, as (p * hi) * 2^28 + p * lo with 28-bit halves. */
static void big_mul64(struct big *out, const struct big *p, uint64_t x)
{
	struct big lo = *p;

	*out = *p;
	big_mul(&lo, (uint32_t)(x & ((1u << 28) - 1)));
	big_mul(out, (uint32_t)(x >> 28));
	big_mul(out, 1u << 28);
	big_add(out, &lo);
}

/* The decimal digits of @b, most significant first, right-aligned in
 * d[0, len) (zeros on the left). */
static void big_digits(const struct big *b, uint8_t *d, size_t len)
{
	size_t k = len;

	memset(d, 0, len);
	for (size_t i = 0; i < b->n && k; i++) {
		uint32_t v = b->l[i];

		for (int j = 0; j < 9 && k; j++) {
			d[--k] = (uint8_t)(v % 10);
			v /= 10;
		}
	}
}

/* Compare digit strings of equal length. */
static int dcmp(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* Digits and decimal exponent of the answer: d[0] != 0, nd <= 17. */
struct dec {
	char d[20];
	int nd;
	int x;   /* decimal exponent of d[0] */
};

/*
 * fast_fixed - the common case without big numbers: |v| in [1e-4, 1e15)
 * equal to m / 10^k for an integer m < 10^15 and the smallest such k.
 * m and 10^k are exact doubles, so m / 10^k is correctly rounded, like
 * strtod() of the decimal: the check is exact, and the smallest k gives
 * the fewest digits (a decimal of fewer digits is one with a smaller k).
 * A decimal with at most 15 digits in this range is within half an ulp of
 * v while its neighbours with as many digits are not (their spacing is
 * more than 2 ulps): it is the shortest and the nearest.  Its decimal
 * exponent is in [-4, 14], below the precision 15: %g's fixed layout,
 * written here straight from m (integer part m / 10^k, then k fraction
 * digits, the last one not 0).  Returns the bytes written at @p, 0 when
 * @a is outside the case.
 */
static size_t fast_fixed(char *p, double a)
{
	static const uint64_t p10[16] = {
		1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
		1000000000, 10000000000, 100000000000, 1000000000000,
		10000000000000, 100000000000000, 1000000000000000,
	};

	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (int k = 0; k <= 15; k++) {
		double x = a * (double)p10[k], m;
		uint64_t u, ip, fp;
		char t[20];
		size_t n = 0, j = 0;

		if (x >= 1e15)
			return 0;
		m = (double)(uint64_t)(x + 0.5); /* no libm: round half up */
		if (m / (double)p10[k] != a)
			continue;
		u = (uint64_t)m;
		ip = u / p10[k];
		fp = u % p10[k];
		do {
			t[j++] = (char)('0' + ip % 10);
			ip /= 10;
		} while (ip);
		while (j)
			p[n++] = t[--j];
		if (k) {
			p[n++] = '.';
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

static void shortest(uint64_t bits, struct dec *o)
{
	uint8_t v[DIGITS], lo[DIGITS], hi[DIGITS], c[DIGITS];
	struct big p, t;
	int ex = (int)((bits >> 52) & 0x7ff), e, first, dexp;
	uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
	bool asym, incl, found = false;
	size_t len;

	asym = ex > 1 && m == 0;
	if (ex)
		m |= UINT64_C(1) << 52;
	e = (ex ? ex - 1075 : -1074) - 2;
	incl = !(m & 1);
	/* p = 2^e (e >= 0) or 5^-e (then everything is times 10^e) */
	big_set(&p, 1);
	for (int k = e; k > 0; k -= 28)
		big_mul(&p, 1u << (k > 28 ? 28 : k));
	for (int k = -e; k > 0; k -= 13) {
		uint32_t f = 1;

		for (int i = 0; i < (k > 13 ? 13 : k); i++)
			f *= 5;
		big_mul(&p, f);
	}
	dexp = e < 0 ? e : 0;
	/* the largest, high, sets the length; one leading zero for a carry */
	big_mul64(&t, &p, 4 * m + 2);
	len = t.n * 9 + 1;
	big_digits(&t, hi, len);
	big_mul64(&t, &p, 4 * m);
	big_digits(&t, v, len);
	big_mul64(&t, &p, 4 * m - (asym ? 1 : 2));
	big_digits(&t, lo, len);

	for (first = 0; v[first] == 0; first++)
		;
	for (int nd = 1; nd <= 17 && !found; nd++) {
		size_t cut = (size_t)first + (size_t)nd, k;
		bool fin, cin, take_c;
		int r;

		found = true;
		if (cut >= len) { /* v itself has at most nd digits */
			memcpy(c, v, len);
			break;
		}
		/* floor: v cut; ceil: floor + 1 in the last kept digit */
		memcpy(c, v, cut);
		memset(c + cut, 0, len - cut);
		r = dcmp(c, lo, len);
		fin = r > 0 || (incl && r == 0);
		for (k = cut; k-- > 0 && c[k] == 9;)
			c[k] = 0;
		c[k]++;   /* k >= first - 1 >= 0: the leading zero takes a carry */
		r = dcmp(c, hi, len);
		cin = r < 0 || (incl && r == 0);
		if (!fin && !cin) {
			found = false;
			continue;
		}
		take_c = cin;
		if (fin && cin) {
			/* the nearer: v - floor is the tail v[cut, len); compare
			 * it with half a unit of the last kept digit, 5000... */
			int h = 0;

			if (v[cut] != 5)
				h = v[cut] < 5 ? -1 : 1;
			for (size_t i = cut + 1; !h && i < len; i++)
				h = v[i] != 0;
			take_c = h > 0 || (h == 0 && (v[cut - 1] & 1));
		}
		if (!take_c) {
			memcpy(c, v, cut);
			memset(c + cut, 0, len - cut);
		}
	}
	if (!found) { /* 17 digits always do; were it otherwise, v cut to 17 */
		memcpy(c, v, len);
		memset(c + first + 17, 0, len - (size_t)first - 17);
	}
	/* c holds the answer's digits in the frame of v */
	for (first = 0; c[first] == 0; first++)
		;
	o->x = (int)(len - 1 - (size_t)first) + dexp;
	o->nd = 0;
	for (size_t i = (size_t)first; i < len && o->nd < 17; i++)
		o->d[o->nd++] = (char)('0' + c[i]);
	while (o->nd > 1 && o->d[o->nd - 1] == '0')
		o->nd--;
}

static size_t put_exp(char *p, int x)
{
	size_t n = 0;
	int a = x < 0 ? -x : x;

	p[n++] = 'e';
	p[n++] = x < 0 ? '-' : '+';
	if (a >= 100)
		p[n++] = (char)('0' + a / 100);
	p[n++] = (char)('0' + a / 10 % 10);
	p[n++] = (char)('0' + a % 10);
	return n;
}

size_t bb__fmt_double(char *buf, double d)
{
	struct dec o;
	uint64_t bits;
	size_t n = 0, k;
	double a;
	int prec;

	memcpy(&bits, &d, sizeof(bits));
	if (((bits >> 52) & 0x7ff) == 0x7ff) {
		const char *s = bits << 12 ? "nan" : bits >> 63 ? "-inf" : "inf";

		n = strlen(s);
		memcpy(buf, s, n);
		return n;
	}
	if (bits >> 63)
		buf[n++] = '-';
	if (!(bits << 1)) {
		buf[n++] = '0';
		return n;
	}
	a = bits >> 63 ? -d : d;
	if ((k = fast_fixed(buf + n, a)))
		return n + k;
	shortest(bits & ~(UINT64_C(1) << 63), &o);
	prec = o.nd > 15 ? o.nd : 15;
	if (o.x < -4 || o.x >= prec) {
		buf[n++] = o.d[0];
		if (o.nd > 1) {
			buf[n++] = '.';
			memcpy(buf + n, o.d + 1, (size_t)o.nd - 1);
			n += (size_t)o.nd - 1;
		}
		return n + put_exp(buf + n, o.x);
	}
	if (o.x < 0) {
		buf[n++] = '0';
		buf[n++] = '.';
		for (int i = -1; i > o.x; i--)
			buf[n++] = '0';
		memcpy(buf + n, o.d, (size_t)o.nd);
		return n + (size_t)o.nd;
	}
	for (int i = 0; i <= o.x; i++)
		buf[n++] = i < o.nd ? o.d[i] : '0';
	if (o.nd > o.x + 1) {
		buf[n++] = '.';
		memcpy(buf + n, o.d + o.x + 1, (size_t)(o.nd - o.x - 1));
		n += (size_t)(o.nd - o.x - 1);
	}
	return n;
}
