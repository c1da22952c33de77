/* SPDX-License-Identifier: MIT */
/*
 * cbor_out.c - CBOR output pieces of the emitter: text strings repaired
 * to valid UTF-8 (U+FFFD for each bad byte), record values copied with
 * such repairs.
 */
#include "emit_int.h"

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

void bbx__cbor_text(struct bbx_out *o, const uint8_t *s, size_t n)
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
void bbx__cbor_copy_sanitized(struct bbx_out *o, struct cbr *c)
{
	struct cbh h, k;
	uint64_t i, n;

	if (!cbr_head(c, &h))
		return;
	if (h.major == 3) {
		if (h.ai != 31) {
			bbx__cbor_text(o, c->p, (size_t)h.val);
			c->p += h.val;
			return;
		}
		bbx_out_char(o, 0x7f);
		while (!cbr_at_break(c) && cbr_head(c, &k)) {
			bbx__cbor_text(o, c->p, (size_t)k.val);
			c->p += k.val;
		}
		c->p++;
		bbx_out_char(o, (char)0xff);
		return;
	}
	if (h.major != 4 && h.major != 5 && h.major != 6) {
		/* scalars, byte strings: as they are */
		c->p = h.start;
		bbx__cbr_skip(c);
		bbx_out_put(o, h.start, (size_t)(c->p - h.start));
		return;
	}
	bbx_out_put(o, h.start, (size_t)(c->p - h.start));
	if (h.major == 6) {
		bbx__cbor_copy_sanitized(o, c);
		return;
	}
	n = h.major == 5 ? 2 * h.val : h.val;
	for (i = 0; h.ai == 31 ? !cbr_at_break(c) : i < n; i++)
		bbx__cbor_copy_sanitized(o, c);
	if (h.ai == 31) {
		c->p++;
		bbx_out_char(o, (char)0xff);
	}
}
