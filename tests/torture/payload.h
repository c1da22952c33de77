/* SPDX-License-Identifier: MIT */
/*
 * tests/torture/payload.h - self-verifying record payloads for bb-torture.
 *
 * Every record bb-torture writes is a byte string (BB_TAG_BYTES) whose
 * bytes prove themselves: a 32-byte head (magic, thread serial, tid, total
 * length, per-thread sequence number, kind, and a check word over those),
 * then filler bytes that are a pseudo-random stream seeded by (serial, seq).
 * A copy that mixes two records, a record cut short or lengthened, a byte
 * flipped anywhere, or a record attributed to the wrong thread, fails
 * tt_verify().  Header-only; used by the writer child and by the checker.
 */
#ifndef BB_TORTURE_PAYLOAD_H
#define BB_TORTURE_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TT_MAGIC     UINT32_C(0x52545254) /* "TRTR" */
#define TT_HEAD      32u                  /* bytes of struct tt_head */
#define TT_KIND_DATA 0u                   /* an ordinary record */
#define TT_KIND_BYE  1u                   /* the thread's last record: seq = records before it */

struct tt_head {
	uint32_t magic;
	uint32_t serial; /* thread serial, unique in one writer child */
	int32_t  tid;    /* gettid() of the writing thread */
	uint32_t len;    /* total payload bytes, head included */
	uint64_t seq;    /* per-thread sequence number, 0, 1, 2, ... */
	uint32_t kind;   /* TT_KIND_* */
	uint32_t check;  /* tt_check() of the fields above */
};

_Static_assert(sizeof(struct tt_head) == TT_HEAD, "payload head is 32 bytes");

static inline uint64_t tt_mix(uint64_t x)
{
	/* splitmix64 finaliser: every input bit affects every output bit */
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static inline uint32_t tt_check(const struct tt_head *h)
{
	uint64_t x = tt_mix(((uint64_t)h->magic << 32) ^ h->serial);

	x = tt_mix(x ^ ((uint64_t)(uint32_t)h->tid << 32) ^ h->len);
	x = tt_mix(x ^ h->seq);
	x = tt_mix(x ^ h->kind);
	return (uint32_t)(x ^ (x >> 32));
}

/* Filler: 8 bytes of stream per step, seeded by serial and seq. */
static inline void tt_fill(uint8_t *p, size_t n, uint32_t serial, uint64_t seq)
{
	uint64_t s = tt_mix(((uint64_t)serial << 40) ^ seq ^ UINT64_C(0x5eed));

	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = tt_mix(s + i);
		size_t k = n - i < 8 ? n - i : 8;

		memcpy(p + i, &v, k);
	}
}

/* Build a payload of @len (>= TT_HEAD) bytes into @p. */
static inline void tt_make(uint8_t *p, size_t len, uint32_t serial, int32_t tid,
			   uint64_t seq, uint32_t kind)
{
	struct tt_head h = {
		.magic = TT_MAGIC, .serial = serial, .tid = tid,
		.len = (uint32_t)len, .seq = seq, .kind = kind,
	};

	h.check = tt_check(&h);
	memcpy(p, &h, sizeof(h));
	tt_fill(p + TT_HEAD, len - TT_HEAD, serial, seq);
}

/*
 * Verify a payload.  Returns NULL and fills *out when every byte is what
 * the writer made; otherwise a short reason.
 */
static inline const char *tt_verify(const uint8_t *p, size_t n, struct tt_head *out)
{
	uint8_t tmp[8];
	struct tt_head h;

	if (n < TT_HEAD)
		return "payload shorter than its head";
	memcpy(&h, p, sizeof(h));
	if (h.magic != TT_MAGIC)
		return "bad payload magic";
	if (h.check != tt_check(&h))
		return "payload head check word mismatch";
	if (h.len != n)
		return "payload length differs from the record's";
	if (h.kind != TT_KIND_DATA && h.kind != TT_KIND_BYE)
		return "bad payload kind";
	/* compare the filler 8 bytes at a time without a big buffer */
	{
		uint64_t s = tt_mix(((uint64_t)h.serial << 40) ^ h.seq ^ UINT64_C(0x5eed));

		for (size_t i = 0; i < n - TT_HEAD; i += 8) {
			uint64_t v = tt_mix(s + i);
			size_t k = n - TT_HEAD - i < 8 ? n - TT_HEAD - i : 8;

			memcpy(tmp, &v, k);
			if (memcmp(tmp, p + TT_HEAD + i, k))
				return "payload filler mismatch";
		}
	}
	*out = h;
	return NULL;
}

/*
 * The byte string inside a BB_TAG_BYTES value: CBOR major type 2 with a
 * definite length, nothing after it.  NULL if the value is anything else.
 */
static inline const uint8_t *tt_cbor_bytes(const uint8_t *v, size_t vlen, size_t *n)
{
	uint64_t len;
	size_t hl;

	if (vlen < 1 || (v[0] >> 5) != 2)
		return NULL;
	switch (v[0] & 31) {
	case 24: hl = 2; break;
	case 25: hl = 3; break;
	case 26: hl = 5; break;
	case 27: hl = 9; break;
	default:
		if ((v[0] & 31) > 23)
			return NULL;
		hl = 1;
	}
	if (vlen < hl)
		return NULL;
	if (hl == 1) {
		len = v[0] & 31;
	} else {
		len = 0;
		for (size_t i = 1; i < hl; i++)
			len = len << 8 | v[i];
	}
	if (len != vlen - hl)
		return NULL;
	*n = (size_t)len;
	return v + hl;
}

#endif /* BB_TORTURE_PAYLOAD_H */
