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
	uint32_t cp;

	while (i < n) {
		k = s[i] < 0x80 ? 1 : bb__utf8_seq(s + i, n - i, &cp);
		len += k ? k : 3;
		i += k ? k : 1;
	}
	return len;
}

static void put_sanitized(struct bbx_out *o, const uint8_t *s, size_t n)
{
	size_t i = 0, st = 0, k;
	uint32_t cp;

	while (i < n) {
		k = s[i] < 0x80 ? 1 : bb__utf8_seq(s + i, n - i, &cp);
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
	bool ok = bb__utf8_valid(s, n);
	size_t len = ok ? n : u8sanitized_len(s, n);

	cb_put_head(o, 3, len);
	if (ok)
		bbx_out_put(o, s, n);
	else
		put_sanitized(o, s, n);
}

/* Copy one well-formed item (bb__cbor_skip() said so), re-encoding text
 * that is not valid UTF-8. */
void bbx__cbor_copy_sanitized(struct bbx_out *o, struct bb__cbor *c)
{
	struct bb__cbor_item h;
	uint64_t i, n;

	if (bb__cbor_read_head(c, &h))
		return;
	if (h.major == 3) {
		bbx__cbor_text(o, c->p, (size_t)h.arg);
		c->p += h.arg;
		return;
	}
	if (h.major != 4 && h.major != 5) {
		/* scalars, byte strings: as they are */
		c->p = h.start;
		(void)bb__cbor_skip(c, 0, NULL);
		bbx_out_put(o, h.start, (size_t)(c->p - h.start));
		return;
	}
	bbx_out_put(o, h.start, (size_t)(c->p - h.start));
	n = h.major == 5 ? 2 * h.arg : h.arg;
	for (i = 0; i < n; i++)
		bbx__cbor_copy_sanitized(o, c);
}
