/* SPDX-License-Identifier: MIT */
/*
 * state.c - the state table (docs/FORMAT.md §11 "State table"):
 * the latest value per key, in BB__STATE_SLOTS fixed slots of the box that
 * ring traffic never evicts.
 *
 * A slot: record envelope (seq, len, tag BB_TAG_STATE, flags BB_RF_CRC,
 * ts), then CBOR array(2) [text key, value], then the CRC32C trailer.  The
 * key bytes sit right after the envelope; the value follows them.
 *
 * Finding a key.  Slots are probed linearly from hash(key).  A slot goes
 * through three phases:
 *   seq == 0   never used (the file is zero-filled at creation);
 *   seq == 1   being bound to a key by its first writer;
 *   seq >= 2   bound: its key bytes never change again (an unset clears
 *              the value, len = 0, but the key keeps the slot).
 * A key K lives in the first slot of its probe sequence that is bound to K
 * or never used.  Proof that two threads setting a new key K concurrently
 * cannot bind two slots: a thread walks past a slot only when it is bound
 * to another key (immutable, so that stays true); it binds a slot only by
 * a CAS from 0 to 1, which one thread wins.  Both threads stop at the same
 * first never-used slot j: the loser of the CAS finds j busy (-EBUSY) or,
 * once the winner is done, bound to K (and updates it).  Neither can go
 * past j, so K is in j alone.  The cost of this simplicity: a key keeps
 * its slot after bb_unset(), so the table holds BB_STATE_SLOTS distinct
 * keys over the life of the box (documented in blackbox.h).
 *
 * Concurrency: a per-slot seqlock whose odd state is taken by CAS; a
 * failed CAS is "busy" and returns -EBUSY at once.  No lock, no malloc, no
 * system call: AS-safe, and a signal handler that interrupts bb_set() on
 * the same slot gets -EBUSY instead of a deadlock.
 */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "writer.h"

_Static_assert(BB__STATE_SLOTS == BB_STATE_SLOTS, "blackbox.h bound");
/* envelope + array head + key (head + 63) + string value (head + 160) + CRC */
_Static_assert(BB_RECORD_HDR_SIZE + 1 + 2 + BB_STATE_KEY_MAX + 2 + BB_STATE_VALUE_MAX +
	       BB_CRC_SIZE <= BB__STATE_SLOT_SIZE, "a maximal key and value fit a slot");
_Static_assert(BB_STATE_KEY_MAX < 256 && BB_STATE_VALUE_MAX < 256, "2-byte CBOR heads");

/* CAS retries on a slot whose seq moved on between our load and our CAS
 * (another writer finished in between).  Bounded: then -EBUSY. */
#define BB__STATE_RETRIES 4

/* FNV-1a: short keys, no allocation, good enough spread over 64 slots. */
static uint32_t bb__key_hash(const char *k, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)k[i]) * 16777619u;
	return h;
}

static int bb__state_fail(struct bb__box *box, int err)
{
	/* A statistic: relaxed, ordered with nothing. */
	BB__FETCH_ADD(&box->hdr->state_errors, 1);
	return err;
}

/* Does the bound slot at @s (key bytes immutable) hold the key encoded as
 * @kenc (array head, text head, key bytes)?  The heads are compared first
 * so that we read key bytes only of a key of our length, never the value
 * bytes a concurrent update may be writing. */
static bool bb__key_eq(const uint8_t *s, const uint8_t *kenc, uint32_t kh, uint32_t klen)
{
	if (memcmp(s, kenc, kh) != 0)
		return false;
	return memcmp(s + kh, kenc + kh, klen) == 0;
}

/*
 * Write the value (@val, @vlen bytes of CBOR; NULL = unset) into slot @s,
 * whose seq we made odd (@odd), and release it with the next even seq.
 * @bind: the slot was never used, write the key too.
 */
static void bb__slot_write(struct bb__box *box, uint8_t *s, uint32_t odd, bool bind,
			   const uint8_t *kenc, uint32_t klen_enc,
			   const uint8_t *val, uint32_t vlen)
{
	struct bb_record_hdr *h = (struct bb_record_hdr *)(void *)s;
	uint32_t next = odd + 1 ? odd + 1 : 2;   /* 0 means "never used": skip it */

	/* Orders the odd seq (our CAS) before the stores below: a slot is
	 * overwritten in place, no tail releases it first, so unlike a ring
	 * record's busy mark this one needs the fence (docs/DESIGN.md §5).
	 * Pairs with the reader's acquire fence between its copy and its
	 * re-read of seq: a copy that saw any byte written here sees an odd
	 * or newer seq. */
	bb__seqcount_write_opened();
	if (bind)
		memcpy(s + BB_RECORD_HDR_SIZE, kenc, klen_enc);
	h->tag = BB_TAG_STATE;
	h->ts = bb__now(&box->f);
	if (val) {
		uint32_t len = BB_RECORD_HDR_SIZE + klen_enc + vlen + BB_CRC_SIZE;
		uint8_t *c = s + len - BB_CRC_SIZE;
		uint32_t crc;

		memcpy(s + BB_RECORD_HDR_SIZE + klen_enc, val, vlen);
		h->len = (uint16_t)len;
		h->flags = BB_RF_CRC;
		crc = bb__record_crc(next, s, len);
		c[0] = (uint8_t)crc;
		c[1] = (uint8_t)(crc >> 8);
		c[2] = (uint8_t)(crc >> 16);
		c[3] = (uint8_t)(crc >> 24);
	} else {
		h->len = 0;     /* unset: readers skip the slot */
		h->flags = 0;
	}
	/* Release: the slot's bytes are visible to a reader (or the next
	 * writer, through its CAS) that loads this seq with acquire. */
	bb__seqcount_write_end(&h->seq, next);
}

/* The length of the NUL-terminated @key for bb__state_put(), measured no
 * further than one byte past the bound (then it is -E2BIG); 0 for NULL,
 * which bb__state_put() refuses. */
static size_t bb__key_len(const char *key)
{
	return key ? strnlen(key, BB_STATE_KEY_MAX + 1) : 0;
}

/* Set (@val, @vlen bytes of CBOR) or unset (@val NULL) the key of @kl
 * bytes at @key, which need not be NUL-terminated. */
static int bb__state_put(const char *key, size_t kl, const uint8_t *val, uint32_t vlen)
{
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	uint8_t kenc[1 + 2 + BB_STATE_KEY_MAX];
	uint32_t kh, klen, start;

	if (bb_unlikely(!box)) {
		int ret = bb__nobox();

		if (ret != -EAGAIN)
			return ret;
		/* Acquire pairs with the release store publishing the box. */
		box = BB__LOAD_ACQUIRE(&bb__box);
		if (!box)
			return -ENODEV;
	}
	if (!key)
		return -EINVAL;
	if (kl > BB_STATE_KEY_MAX)
		return bb__state_fail(box, -E2BIG);
	klen = (uint32_t)kl;
	kenc[0] = 0x82;   /* array(2) */
	kh = (uint32_t)(bb__cbor_put_head(3, klen, kenc + 1) - kenc);
	memcpy(kenc + kh, key, klen);
	start = bb__key_hash(key, klen);

	for (uint32_t i = 0; i < BB__STATE_SLOTS; i++) {
		uint8_t *s = box->state + (size_t)((start + i) % BB__STATE_SLOTS) * BB__STATE_SLOT_SIZE;
		uint32_t *seqp = &((struct bb_record_hdr *)(void *)s)->seq;
		/* Acquire pairs with the release store of an even seq in
		 * bb__slot_write(): the key bytes of a bound slot are
		 * visible.  (A later CAS to odd is a read-modify-write in that
		 * store's release sequence, so an odd seq >= 3 read here
		 * carries the same guarantee.) */
		uint32_t seq = BB__LOAD_ACQUIRE(seqp);

		for (int tries = 0;; tries++) {
			if (tries > BB__STATE_RETRIES || seq == 1)
				return bb__state_fail(box, -EBUSY);
			if (seq == 0) {
				/* Never used: the end of the key's chain. */
				if (!val)
					return -ENOENT;
				if (BB__CAS_ACQUIRE(seqp, &seq, 1u)) {
					bb__slot_write(box, s, 1u, true, kenc, kh + klen, val, vlen);
					return 0;
				}
				continue;   /* seq reloaded by the failed CAS */
			}
			/* Bound (seq >= 2): its key never changes, even while
			 * an update makes seq odd. */
			if (!bb__key_eq(s + BB_RECORD_HDR_SIZE, kenc, kh, klen))
				break;   /* another key's slot: probe on */
			if (seq & 1u)
				return bb__state_fail(box, -EBUSY);
			if (BB__CAS_ACQUIRE(seqp, &seq, seq + 1u)) {
				bb__slot_write(box, s, seq + 1u, false, kenc, kh + klen, val, vlen);
				return 0;
			}
		}
	}
	return val ? bb__state_fail(box, -ENOSPC) : -ENOENT;
}

/* A text value of @n bytes at @value (NULL: -EINVAL). */
static int bb__set_text(const char *key, size_t kl, const char *value, size_t n)
{
	uint8_t v[2 + BB_STATE_VALUE_MAX];
	uint8_t *p;

	if (!value)
		return -EINVAL;
	if (n > BB_STATE_VALUE_MAX) {
		/* Acquire pairs with the release store publishing the box. */
		struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

		return box ? bb__state_fail(box, -E2BIG) : bb__nobox() == 0 ? 0 : -E2BIG;
	}
	p = bb__cbor_put_head(3, n, v);
	memcpy(p, value, n);
	return bb__state_put(key, kl, v, (uint32_t)(p - v) + (uint32_t)n);
}

BB_EXPORT int bb_set(const char *key, const char *value)
{
	return bb__set_text(key, bb__key_len(key), value,
			    value ? strnlen(value, BB_STATE_VALUE_MAX + 1) : 0);
}

BB_EXPORT int bb_setn(const char *key, size_t klen, const char *value, size_t vlen)
{
	if (!bb__strn_ok(&value, vlen))
		return -EINVAL;
	/* A NULL key with a length stays NULL: bb__state_put()'s -EINVAL,
	 * after its box check, as for bb_set(). */
	bb__strn_ok(&key, klen);
	return bb__set_text(key, klen, value, vlen);
}

/* The typed values, for a key of @kl bytes. */
static int bb__set_i64(const char *key, size_t kl, int64_t value)
{
	uint8_t v[9];
	uint8_t *p = bb__cbor_put_int(value, v);

	return bb__state_put(key, kl, v, (uint32_t)(p - v));
}

static int bb__set_u64(const char *key, size_t kl, uint64_t value)
{
	uint8_t v[9];
	uint8_t *p = bb__cbor_put_head(0, value, v);

	return bb__state_put(key, kl, v, (uint32_t)(p - v));
}

static int bb__set_f64(const char *key, size_t kl, double value)
{
	uint8_t v[9];
	uint64_t bits;

	memcpy(&bits, &value, sizeof(bits));
	bb__cbor_put_f64(v, bits);
	return bb__state_put(key, kl, v, sizeof(v));
}

static int bb__set_bool(const char *key, size_t kl, bool value)
{
	uint8_t v = value ? 0xf5 : 0xf4;

	return bb__state_put(key, kl, &v, 1);
}

BB_EXPORT int bb_set_i64(const char *key, int64_t value)
{
	return bb__set_i64(key, bb__key_len(key), value);
}

BB_EXPORT int bb_set_u64(const char *key, uint64_t value)
{
	return bb__set_u64(key, bb__key_len(key), value);
}

BB_EXPORT int bb_set_f64(const char *key, double value)
{
	return bb__set_f64(key, bb__key_len(key), value);
}

BB_EXPORT int bb_set_bool(const char *key, bool value)
{
	return bb__set_bool(key, bb__key_len(key), value);
}

BB_EXPORT int bb_unset(const char *key)
{
	return bb__state_put(key, bb__key_len(key), NULL, 0);
}

BB_EXPORT int bb_setn_i64(const char *key, size_t klen, int64_t value)
{
	bb__strn_ok(&key, klen);   /* NULL with a length: -EINVAL below */
	return bb__set_i64(key, klen, value);
}

BB_EXPORT int bb_setn_u64(const char *key, size_t klen, uint64_t value)
{
	bb__strn_ok(&key, klen);   /* NULL with a length: -EINVAL below */
	return bb__set_u64(key, klen, value);
}

BB_EXPORT int bb_setn_f64(const char *key, size_t klen, double value)
{
	bb__strn_ok(&key, klen);   /* NULL with a length: -EINVAL below */
	return bb__set_f64(key, klen, value);
}

BB_EXPORT int bb_setn_bool(const char *key, size_t klen, bool value)
{
	bb__strn_ok(&key, klen);   /* NULL with a length: -EINVAL below */
	return bb__set_bool(key, klen, value);
}

BB_EXPORT int bb_unsetn(const char *key, size_t klen)
{
	bb__strn_ok(&key, klen);   /* NULL with a length: -EINVAL below */
	return bb__state_put(key, klen, NULL, 0);
}
