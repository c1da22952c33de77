/* SPDX-License-Identifier: MIT */
/*
 * value.c - render record values as text, without allocating
 * (bb_format_value), and decode owner records for the reader.
 *
 * Everything here is async-signal-safe: no malloc, no stdio, no locale, no
 * libm.  bb_dump() calls bb_format_value() from a signal handler, and the
 * reader and the fuzzer feed it untrusted bytes, so the CBOR decoder below
 * bounds-checks every length against the bytes that remain, accepts only
 * definite lengths and a bounded nesting depth, and never recurses deeper
 * than BB_CBOR_MAX_DEPTH.
 *
 * The decoder covers exactly the shapes of docs/FORMAT.md §5: unsigned and
 * negative integers, byte and text strings, arrays and maps (rendered
 * generically for tags this version does not know), float16/32/64,
 * true/false/null/undefined and simple values.  CBOR tags (major type 6)
 * and indefinite lengths are refused as FORMAT.md §6 says.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/reader.h>

#include "internal.h"
#include "text.h"

#define BB_CBOR_MAX_DEPTH 8

/* ---- doubles ------------------------------------------------------------ */

/*
 * put_double - the output of printf("%.17g"), computed exactly: the double
 * m * 2^k is turned into the big integer m * 2^k (k >= 0) or m * 5^-k with
 * a decimal exponent of k (k < 0), in base-10^9 limbs, then its decimal
 * digits are rounded half-even to 17 significant digits (enough for every
 * double to read back to itself) and laid out as %g does: trailing zeros
 * removed, exponent notation when the exponent is < -4 or >= 17.  At most
 * 767 digits (the smallest subnormal), so the stack bounds are fixed.
 */
#define BIG_LIMBS 90 /* 90 * 9 decimal digits > 767 */
#define P_DIGITS  17
static void big_mul(uint32_t *l, size_t *n, uint32_t f)
{
	uint64_t carry = 0;

	for (size_t i = 0; i < *n; i++) {
		uint64_t x = (uint64_t)l[i] * f + carry;

		l[i] = (uint32_t)(x % 1000000000u);
		carry = x / 1000000000u;
	}
	while (carry && *n < BIG_LIMBS) {
		l[(*n)++] = (uint32_t)(carry % 1000000000u);
		carry /= 1000000000u;
	}
}

static void put_double(struct bb__out *o, double d)
{
	uint32_t limb[BIG_LIMBS];
	char dg[BIG_LIMBS * 9 + 1];
	size_t n = 0, nd = 0;
	uint64_t bits, m;
	int k, ex, x;

	memcpy(&bits, &d, sizeof(bits));
	ex = (int)((bits >> 52) & 0x7ff);
	m = bits & ((UINT64_C(1) << 52) - 1);
	if (ex == 0x7ff) {
		bb__out_puts(o, m ? "nan" : (bits >> 63) ? "-inf" : "inf");
		return;
	}
	if (bits >> 63)
		bb__out_putc(o, '-');
	if (!ex && !m) {
		bb__out_putc(o, '0');
		return;
	}
	k = ex ? ex - 1075 : -1074;
	if (ex)
		m |= UINT64_C(1) << 52;
	while (!(m & 1)) {
		m >>= 1;
		k++;
	}
	while (m) {
		limb[n++] = (uint32_t)(m % 1000000000u);
		m /= 1000000000u;
	}
	for (int e = k; e > 0; e -= 28)
		big_mul(limb, &n, UINT32_C(1) << (e > 28 ? 28 : e));
	for (int e = -k; e > 0; e -= 13) {
		uint32_t f = 1;

		for (int i = 0; i < (e > 13 ? 13 : e); i++)
			f *= 5;
		big_mul(limb, &n, f);
	}
	/* digits, most significant first */
	for (size_t i = n; i-- > 0;) {
		char nine[9];
		uint32_t v = limb[i];

		for (int j = 8; j >= 0; j--) {
			nine[j] = (char)('0' + v % 10);
			v /= 10;
		}
		for (int j = 0; j < 9; j++)
			if (nd || nine[j] != '0')
				dg[nd++] = nine[j];
	}
	x = (int)nd - 1 + (k < 0 ? k : 0); /* decimal exponent of dg[0] */

	if (nd > P_DIGITS) {
		bool up = dg[P_DIGITS] > '5';

		if (dg[P_DIGITS] == '5') {
			bool rest = false;

			for (size_t i = P_DIGITS + 1; i < nd; i++)
				rest |= dg[i] != '0';
			up = rest || ((dg[P_DIGITS - 1] - '0') & 1);
		}
		nd = P_DIGITS;
		for (size_t i = nd; up && i-- > 0;) {
			if (dg[i] == '9') {
				dg[i] = '0';
			} else {
				dg[i]++;
				up = false;
			}
		}
		if (up) { /* 99..9 rounded to 100..0 */
			dg[0] = '1';
			x++;
		}
	}
	while (nd > 1 && dg[nd - 1] == '0')
		nd--;

	if (x < -4 || x >= P_DIGITS) {
		bb__out_putc(o, dg[0]);
		if (nd > 1) {
			bb__out_putc(o, '.');
			bb__out_put(o, dg + 1, nd - 1);
		}
		bb__out_putc(o, 'e');
		bb__out_putc(o, x < 0 ? '-' : '+');
		if (x > -10 && x < 10)
			bb__out_putc(o, '0');
		bb__out_u64(o, (uint64_t)(x < 0 ? -x : x));
	} else if (x >= 0) {
		size_t ip = (size_t)x + 1; /* integer digits */

		bb__out_put(o, dg, nd < ip ? nd : ip);
		for (size_t i = nd; i < ip; i++)
			bb__out_putc(o, '0');
		if (nd > ip) {
			bb__out_putc(o, '.');
			bb__out_put(o, dg + ip, nd - ip);
		}
	} else {
		bb__out_puts(o, "0.");
		for (int i = -1; i > x; i--)
			bb__out_putc(o, '0');
		bb__out_put(o, dg, nd);
	}
}

struct fmt {
	const uint8_t *p, *start, *end;
	struct bb__out o;
	const char *why;  /* what is wrong, when a step fails */
	bool lenient;     /* BB_RF_TRUNCATED: running out of bytes is expected */
	bool short_;      /* ran out of bytes */
};

struct hd {
	uint8_t major, ai;
	uint64_t val;
};

static int fail(struct fmt *f, const char *why)
{
	if (!f->why)
		f->why = why;
	return -1;
}

static int ran_out(struct fmt *f)
{
	f->short_ = true;
	return fail(f, "value ends early");
}

static size_t left(const struct fmt *f)
{
	return (size_t)(f->end - f->p);
}

/* Read an item head; for major 7 the float bits stay in val. */
static int rd_head(struct fmt *f, struct hd *h)
{
	static const uint8_t extra[4] = { 1, 2, 4, 8 };
	size_t n;

	if (!left(f))
		return ran_out(f);
	h->major = *f->p >> 5;
	h->ai = *f->p & 31;
	f->p++;
	if (h->ai < 24) {
		h->val = h->ai;
		return 0;
	}
	if (h->ai > 27)
		return fail(f, h->ai == 31 ? "indefinite length" : "reserved additional info");
	n = extra[h->ai - 24];
	if (left(f) < n)
		return ran_out(f);
	h->val = 0;
	for (size_t i = 0; i < n; i++)
		h->val = h->val << 8 | *f->p++;
	return 0;
}

/* The payload of a string of h->val bytes; in lenient mode a string cut
 * short yields what is there and flags the shortage. */
static int rd_bytes(struct fmt *f, const struct hd *h, const uint8_t **s, size_t *n)
{
	*s = f->p;
	if (h->val > left(f)) {
		if (!f->lenient)
			return ran_out(f);
		*n = left(f);
		f->p = f->end;
		f->short_ = true;
		return 0;
	}
	*n = (size_t)h->val;
	f->p += *n;
	return 0;
}

static double half_to_double(uint16_t hbits)
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

/* Render a float or simple value (major 7). */
static int put_simple(struct fmt *f, const struct hd *h)
{
	switch (h->ai) {
	case 20: bb__out_puts(&f->o, "false"); return 0;
	case 21: bb__out_puts(&f->o, "true"); return 0;
	case 22: bb__out_puts(&f->o, "null"); return 0;
	case 23: bb__out_puts(&f->o, "undefined"); return 0;
	case 25:
		put_double(&f->o, half_to_double((uint16_t)h->val));
		return 0;
	case 26: {
		uint32_t b = (uint32_t)h->val;
		float fl;

		memcpy(&fl, &b, sizeof(fl));
		put_double(&f->o, fl);
		return 0;
	}
	case 27: {
		double d;

		memcpy(&d, &h->val, sizeof(d));
		put_double(&f->o, d);
		return 0;
	}
	default:
		bb__out_puts(&f->o, "simple(");
		bb__out_u64(&f->o, h->val);
		bb__out_putc(&f->o, ')');
		return 0;
	}
}

static int put_item(struct fmt *f, int depth);

/* Render the rest of an item whose head is already read. */
static int put_body(struct fmt *f, const struct hd *h, int depth)
{
	const uint8_t *s;
	size_t n;

	switch (h->major) {
	case 0:
		bb__out_u64(&f->o, h->val);
		return 0;
	case 1: /* -1 - val, which may be below INT64_MIN */
		bb__out_putc(&f->o, '-');
		if (h->val == UINT64_MAX)
			bb__out_puts(&f->o, "18446744073709551616");
		else
			bb__out_u64(&f->o, h->val + 1);
		return 0;
	case 2:
		if (rd_bytes(f, h, &s, &n))
			return -1;
		bb__out_hex(&f->o, s, n);
		return f->short_ ? ran_out(f) : 0;
	case 3:
		if (rd_bytes(f, h, &s, &n))
			return -1;
		bb__out_str(&f->o, s, n);
		return f->short_ ? ran_out(f) : 0;
	case 4:
	case 5:
		if (depth >= BB_CBOR_MAX_DEPTH)
			return fail(f, "nesting deeper than 8");
		/* every item takes at least one byte: bound the count first */
		if (h->val > left(f) || (h->major == 5 && h->val > left(f) / 2))
			return ran_out(f);
		bb__out_putc(&f->o, h->major == 4 ? '[' : '{');
		for (uint64_t i = 0; i < h->val; i++) {
			if (i)
				bb__out_puts(&f->o, ", ");
			if (put_item(f, depth + 1))
				return -1;
			if (h->major == 5) {
				bb__out_puts(&f->o, ": ");
				if (put_item(f, depth + 1))
					return -1;
			}
		}
		bb__out_putc(&f->o, h->major == 4 ? ']' : '}');
		return 0;
	case 6: /* FORMAT.md §6: values never carry CBOR tags */
		return fail(f, "CBOR tag (major type 6) not allowed");
	default:
		return put_simple(f, h);
	}
}

static int put_item(struct fmt *f, int depth)
{
	struct hd h;

	if (rd_head(f, &h))
		return -1;
	return put_body(f, &h, depth);
}

/* A KV or EVENT field value: a scalar (FORMAT.md §6), never a container. */
static int want_scalar(struct fmt *f, const char *why)
{
	struct hd h;

	if (rd_head(f, &h))
		return -1;
	if (h.major == 4 || h.major == 5)
		return fail(f, why);
	return put_body(f, &h, 1);
}

/* Read a head and insist on a major type (and for 7, on a set of ai). */
static int want(struct fmt *f, struct hd *h, int major, const char *why)
{
	if (rd_head(f, h))
		return -1;
	if (h->major != major)
		return fail(f, why);
	return 0;
}

static int want_text(struct fmt *f, const char *why)
{
	struct hd h;

	if (want(f, &h, 3, why))
		return -1;
	return put_body(f, &h, 1);
}

static int want_int(struct fmt *f, const char *why)
{
	struct hd h;

	if (rd_head(f, &h))
		return -1;
	if (h.major > 1)
		return fail(f, why);
	return put_body(f, &h, 1);
}

static int want_array(struct fmt *f, uint64_t n, const char *why)
{
	struct hd h;

	if (want(f, &h, 4, why))
		return -1;
	if (h.val != n)
		return fail(f, why);
	return 0;
}

/* "<lead><tid> (<name>)" of an owner record; @tid/@name say what failed. */
static int put_thread(struct fmt *f, const char *lead, const char *tid, const char *name)
{
	bb__out_puts(&f->o, lead);
	if (want_int(f, tid))
		return -1;
	bb__out_puts(&f->o, " (");
	if (want_text(f, name))
		return -1;
	bb__out_putc(&f->o, ')');
	return 0;
}

/* The shape each tag promises (docs/FORMAT.md §5), rendered. */
static int put_tagged(struct fmt *f, unsigned tag)
{
	struct hd h;

	switch (tag) {
	case BB_TAG_STR:
		return want_text(f, "str value is not a text string");
	case BB_TAG_I64:
		return want_int(f, "i64 value is not an integer");
	case BB_TAG_U64:
		if (want(f, &h, 0, "u64 value is not an unsigned integer"))
			return -1;
		return put_body(f, &h, 1);
	case BB_TAG_F64:
		if (want(f, &h, 7, "f64 value is not a float"))
			return -1;
		if (h.ai < 25 || h.ai > 27)
			return fail(f, "f64 value is not a float");
		return put_body(f, &h, 1);
	case BB_TAG_BOOL:
		if (want(f, &h, 7, "bool value is not true/false"))
			return -1;
		if (h.ai != 20 && h.ai != 21)
			return fail(f, "bool value is not true/false");
		return put_body(f, &h, 1);
	case BB_TAG_BYTES:
		if (want(f, &h, 2, "bytes value is not a byte string"))
			return -1;
		return put_body(f, &h, 1);
	case BB_TAG_KV:
		if (want_array(f, 2, "kv value is not array(2)") ||
		    want_text(f, "kv key is not a text string"))
			return -1;
		bb__out_putc(&f->o, '=');
		return want_scalar(f, "kv value is not a scalar");
	case BB_TAG_EVENT:
		if (want_array(f, 2, "event value is not array(2)") ||
		    want_text(f, "event name is not a text string") ||
		    want(f, &h, 5, "event fields are not a map"))
			return -1;
		if (h.val > left(f) / 2)
			return ran_out(f);
		for (uint64_t i = 0; i < h.val; i++) {
			bb__out_putc(&f->o, ' ');
			if (want_text(f, "event field key is not a text string"))
				return -1;
			bb__out_putc(&f->o, '=');
			if (want_scalar(f, "event field value is not a scalar"))
				return -1;
		}
		return 0;
	case BB_TAG_OWNER:
		if (want_array(f, 4, "owner value is not array(4)"))
			return -1;
		return put_thread(f, "thread ", "owner tid is not an integer",
				  "owner name is not a text string") ||
		       put_thread(f, " takes the ring from ",
				  "owner previous tid is not an integer",
				  "owner previous name is not a text string");
	default:
		return put_item(f, 0);
	}
}

BB_EXPORT int bb_format_value(unsigned tag, unsigned flags, const uint8_t *value,
		    size_t len, char *buf, size_t buflen)
{
	struct fmt f = {
		.p = value, .start = value, .end = value + (value ? len : 0),
		.o = { .buf = buf, .cap = buf ? buflen : 0 },
		.lenient = flags & BB_RF_TRUNCATED,
	};
	int rc = put_tagged(&f, tag);

	if (!rc && f.p != f.end)
		rc = fail(&f, "trailing bytes after the value");
	if (rc && !(f.lenient && f.short_)) {
		/* Malformed: replace what was rendered by the reason. */
		f.o.len = 0;
		f.o.cut = false;
		bb__out_puts(&f.o, "<malformed ");
		bb__out_puts(&f.o, bb_tag_name(tag));
		bb__out_puts(&f.o, " value: ");
		bb__out_puts(&f.o, f.why);
		bb__out_puts(&f.o, " at byte ");
		bb__out_u64(&f.o, (uint64_t)(f.p - f.start));
		bb__out_putc(&f.o, '>');
		bb__out_finish(&f.o);
		return -EBADMSG;
	}
	if (f.lenient)
		bb__out_puts(&f.o, " [truncated]");
	return (int)bb__out_finish(&f.o);
}

/* ---- owner records for the reader -------------------------------------- */

static int rd_int32(struct fmt *f, int32_t *v)
{
	struct hd h;

	if (rd_head(f, &h))
		return -1;
	if (h.major > 1 || h.val > INT32_MAX)
		return fail(f, "tid");
	*v = h.major ? -1 - (int32_t)h.val : (int32_t)h.val;
	return 0;
}

static int rd_name(struct fmt *f, char *dst, size_t dstlen)
{
	const uint8_t *s;
	struct hd h;
	size_t n;

	if (want(f, &h, 3, "name") || rd_bytes(f, &h, &s, &n))
		return -1;
	if (dstlen) {
		n = n < dstlen - 1 ? n : dstlen - 1;
		memcpy(dst, s, n);
		dst[n] = '\0';
		/* a name is printed as is later: no embedded NUL surprises */
		dst[strnlen(dst, n)] = '\0';
	}
	return 0;
}

int bb__owner_decode(const uint8_t *value, size_t len,
		     int32_t *tid, char *name, size_t namelen,
		     int32_t *prev_tid, char *prev, size_t prevlen)
{
	char dummy[1];
	struct fmt f = {
		.p = value, .start = value, .end = value + (value ? len : 0),
		.o = { .buf = dummy, .cap = 0 },
	};

	if (want_array(&f, 4, "owner") || rd_int32(&f, tid) ||
	    rd_name(&f, name, namelen) || rd_int32(&f, prev_tid) ||
	    rd_name(&f, prev, prevlen) || f.p != f.end)
		return -EBADMSG;
	return 0;
}
