/* SPDX-License-Identifier: MIT */
/*
 * cbr.c - the emitter's CBOR reader over untrusted bytes: check one item
 * in one bounded pass (lengths inside the buffer, nesting depth limited,
 * counts bounded by the bytes left), skip it, split an array.
 */
#include "emit_int.h"

/*
 * Check one item and move past it.  Sets *bad_utf8 when a text string is
 * not valid UTF-8 (still well formed).  Bounded: every step consumes at
 * least one byte, nesting is limited to CBR_DEPTH.
 */
bool bbx__cbr_check(struct cbr *c, unsigned depth, bool *bad_utf8)
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
				if (!bbx__cbr_check(c, depth + 1, bad_utf8))
					return false;
				if (h.major == 5 && !bbx__cbr_check(c, depth + 1, bad_utf8))
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
			if (!bbx__cbr_check(c, depth + 1, bad_utf8))
				return false;
		return true;
	case 6:
		return bbx__cbr_check(c, depth + 1, bad_utf8);
	default: /* 7 */
		if (h.ai == 31)
			return false; /* break outside an indefinite item */
		if (h.ai == 24 && h.val < 32)
			return false; /* not well formed (RFC 8949 §3.3) */
		return true;
	}
}

/* Move past one item already known to be well formed. */
void bbx__cbr_skip(struct cbr *c)
{
	bool dummy = false;

	(void)bbx__cbr_check(c, 0, &dummy);
}

/*
 * The items of the array at @c (well formed), up to @max: start of each
 * in it[i], end in it[i + 1].  Returns the count, or -1 if not an array
 * or longer than @max.
 */
int bbx__cbr_array(struct cbr *c, const uint8_t **it, int max)
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
		bbx__cbr_skip(c);
	}
	it[n] = c->p;
	return n;
}
