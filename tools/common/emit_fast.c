/* SPDX-License-Identifier: MIT */
/*
 * emit_fast.c - the emitter's fast paths: the common record shapes
 * checked and written in one pass, JSON and CBOR (emit_int.h).
 */
#include <blackbox/format.h>

#include "emit_int.h"

/* ---- JSON fast path for the common record shapes ------------------- */

/*
 * Most records are a scalar, a kv of a text key and a scalar, or an event
 * whose fields are text keys and scalars.  For those, one forward pass
 * both checks and formats, straight into reserved output that is committed
 * only when the whole value checked out; anything else (and anything
 * wrong) returns false having written nothing, and the general path
 * (bb__cbor_skip(), shape_error(), bbx__json_item()) decides.  The bytes written are
 * exactly the general path's: the same escaper, number and float formats.
 */

#define FAST_MAX_LEN 2048  /* longer values take the general path */
/* Output bound per input byte: a half float (3 bytes) prints at most
 * FMT_DOUBLE_MAX bytes, text 6 per byte, a one-byte map key and value
 * ("":false,) 9 per 2 bytes; 16 per byte covers them all. */
#define FAST_OUT(n) (16 * (n) + 64)

/* The head of a definite item, argument in *val (the project's decoder,
 * shared/cbor.h).  False if anything is wrong: the general path says what. */
static inline bool fast_head(const uint8_t **cp, const uint8_t *end, unsigned *major,
			     unsigned *ai, uint64_t *val)
{
	struct bb__cbor c = { *cp, end };
	struct bb__cbor_item h;

	if (bb__cbor_read_head(&c, &h))
		return false;
	*major = h.major;
	*ai = h.ai;
	*val = h.arg;
	*cp = c.p;
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
	k = 1 + bb__json_escape(p + 1, *cp, (size_t)n);
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
		if (v > (uint64_t)(end - c))
			return 0;
		p[0] = '"';
		bb__hex(p + 1, c, (size_t)v);
		k = 1 + 2 * (size_t)v;
		p[k++] = '"';
		c += v;
		break;
	}
	case 3:
		if (v > (uint64_t)(end - c))
			return 0;
		p[0] = '"';
		k = 1 + bb__json_escape(p + 1, c, (size_t)v);
		p[k++] = '"';
		c += v;
		break;
	case 7:
		switch (ai) {
		case 20: memcpy(p, "false", 5); k = 5; break;
		case 21: memcpy(p, "true", 4);  k = 4; break;
		case 22:
		case 23: memcpy(p, "null", 4);  k = 4; break;
		case 25: k = bbx__fmt_double(p, bb__cbor_half((uint16_t)v)); break;
		case 26: {
			uint32_t u = (uint32_t)v;
			float f;

			memcpy(&f, &u, sizeof(f));
			k = bbx__fmt_double(p, f);
			break;
		}
		case 27: {
			double d;

			memcpy(&d, &v, sizeof(d));
			k = bbx__fmt_double(p, d);
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
bool bbx__em_json_fast(struct bbx_em *em, unsigned tag, const uint8_t *value,
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
		if (v > (uint64_t)(end - c) || (major == 3 && !bb__utf8_valid(c, (size_t)v)))
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
bool bbx__em_cbor_fast(struct bbx_em *em, unsigned tag, const uint8_t *value,
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
