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

/*
 * The probe sequence's start for the key of @n bytes at @k: the key's
 * CRC32C with the instruction where bb__state_hw() (inline, a few
 * instructions for a short key), else FNV-1a.  Only the box's own writers
 * use it (readers scan every slot), and bb__state_hw() never changes for
 * a box, so a box never mixes the two.
 */
static inline uint32_t bb__key_hash(bool hw, const char *k, uint32_t n)
{
	uint32_t h = 2166136261u;

#if defined(__x86_64__) && defined(__LP64__)
	if (bb_likely(hw))
		return (uint32_t)bb__crc32c_hw_update(h, (const uint8_t *)k, n);
#else
	(void)hw;
#endif
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)k[i]) * 16777619u;
	return h;
}

/* Is the instruction's CRC32C the state table's hash and checksum here?
 * In a box that checksums with it, and in one without record checksums
 * (the state table has them still) on a CPU that has it.  A box's answer
 * never changes. */
static inline bool bb__state_hw(const struct bb__box *box)
{
	return box->f.crc == BB__CRC_HW ||
	       (box->f.crc == BB__CRC_NONE && bb__crc32c_have_hw());
}

static int bb__state_fail(struct bb__box *box, int err)
{
	/* A statistic: relaxed, ordered with nothing. */
	BB__FETCH_ADD(&box->hdr->state_errors, 1);
	return err;
}

/* Are the @n bytes at @a and @b equal?  Inline, for keys (at most 63
 * bytes): 8-byte words and one overlapping last word, or for n < 8 two
 * overlapping 4-byte words or three single bytes, as bb__copy16() copies;
 * reads nothing outside [0, n). */
static inline bool bb__bytes_eq(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	uint64_t x, y;
	uint32_t u, w;

	if (n >= 8) {
		for (uint32_t i = 0; i + 8 <= n; i += 8) {
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			if (x != y)
				return false;
		}
		memcpy(&x, a + n - 8, 8);
		memcpy(&y, b + n - 8, 8);
		return x == y;
	}
	if (n >= 4) {
		memcpy(&u, a, 4);
		memcpy(&w, b, 4);
		if (u != w)
			return false;
		memcpy(&u, a + n - 4, 4);
		memcpy(&w, b + n - 4, 4);
		return u == w;
	}
	return !n || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
}

/*
 * A value as the slot stores it: the CBOR head of hl bytes (at most 9: a
 * typed value is all head), its first 8 in the little-endian word w (byte
 * 0 first) and the ninth in w8, then @n bytes at @tail (a text value's
 * bytes; none for the others).  The head is built in registers and stored
 * and checksummed from them: a head built in memory byte by byte and read
 * back as words waits for each of its stores (store forwarding fails).
 */
struct bb__sval {
	uint64_t w;
	uint8_t w8;
	uint8_t hl;
	uint32_t n;
	const char *tail;
};

/* The CBOR head of major type @major and argument @arg into @v. */
static inline void bb__sval_head(struct bb__sval *v, unsigned major, uint64_t arg)
{
	uint64_t mt = (uint64_t)major << 5;

	if (arg < 24) {
		v->w = mt | arg;
		v->hl = 1;
	} else if (arg <= UINT8_MAX) {
		v->w = mt | 24 | arg << 8;
		v->hl = 2;
	} else if (arg <= UINT16_MAX) {
		v->w = mt | 25 | (uint64_t)__builtin_bswap16((uint16_t)arg) << 8;
		v->hl = 3;
	} else if (arg <= UINT32_MAX) {
		v->w = mt | 26 | (uint64_t)__builtin_bswap32((uint32_t)arg) << 8;
		v->hl = 5;
	} else {
		uint64_t be = __builtin_bswap64(arg);

		v->w = mt | 27 | be << 8;
		v->w8 = (uint8_t)(be >> 56);
		v->hl = 9;
	}
}

#if defined(__x86_64__) && defined(__LP64__)
/* CRC32C (the instruction) of the first @n bytes (n <= 8) of the
 * little-endian word @w, continuing @c: 4, 2, then 1 bytes in order. */
static inline uint64_t bb__crc_word(uint64_t c, uint64_t w, uint32_t n)
{
	if (n == 8)
		return bb__crc_q64(c, w);
	if (n & 4) {
		__asm__("crc32l %1, %k0" : "+r"(c) : "r"((uint32_t)w));
		w >>= 32;
	}
	if (n & 2) {
		__asm__("crc32w %1, %k0" : "+r"(c) : "r"((uint16_t)w));
		w >>= 16;
	}
	if (n & 1)
		__asm__("crc32b %1, %k0" : "+r"(c) : "r"((uint8_t)w));
	return c;
}
#endif

/*
 * Write the value @v (NULL = unset) into slot @s, whose seq we made odd
 * (@odd), and release it with the next even seq.  @bind: the slot was
 * never used, write the key (@kh head bytes @kenc, then @klen bytes at
 * @key) too.  The record checksum is the one of records (FORMAT.md §11),
 * with the instruction inline where @hw (bb__state_hw()); stamped @ts.
 */
static inline __attribute__((always_inline))
void bb__slot_write(uint8_t *s, uint32_t odd, bool bind,
		    const uint8_t *kenc, uint32_t kh, const char *key, uint32_t klen,
		    const struct bb__sval *v, uint64_t ts, bool hw)
{
	struct bb_record_hdr *h = (struct bb_record_hdr *)(void *)s;
	uint32_t next = odd + 1 ? odd + 1 : 2;   /* 0 means "never used": skip it */
	uint8_t *p = s + BB_RECORD_HDR_SIZE + kh + klen;

	/* Orders the odd seq (our CAS) before the stores below: a slot is
	 * overwritten in place, no tail releases it first, so unlike a ring
	 * record's busy mark this one needs the fence (docs/DESIGN.md §5).
	 * Pairs with the reader's acquire fence between its copy and its
	 * re-read of seq: a copy that saw any byte written here sees an odd
	 * or newer seq. */
	bb__seqcount_write_opened();
	if (bind) {
		memcpy(s + BB_RECORD_HDR_SIZE, kenc, kh);
		bb__copy(s + BB_RECORD_HDR_SIZE + kh, key, klen);
	}
	if (v) {
		uint32_t len = (uint32_t)(p - s) + v->hl + v->n + BB_CRC_SIZE;
		uint8_t *c = s + len - BB_CRC_SIZE;
		uint32_t crc;

		/* The head's word whole (the slot has room past any
		 * record: BB__STATE_SLOT_SIZE), then what follows it. */
		memcpy(p, &v->w, 8);
		if (v->hl == 9)
			p[8] = v->w8;
		bb__copy(p + v->hl, v->tail, v->n);
		h->len = (uint16_t)len;
		h->tag = BB_TAG_STATE;
		h->flags = BB_RF_CRC;
		h->ts = ts;
#if defined(__x86_64__) && defined(__LP64__)
		if (bb_likely(hw)) {
			/* The checksum of records (bb__record_crc_hw()'s
			 * order: seq, len/tag/flags, the bytes after the
			 * envelope, the stamp), over the bytes' sources rather
			 * than the slot: reading back the small stores just
			 * made would wait for each of them (a store-forwarding
			 * stall).  The key bytes equal the slot's (compared, or
			 * just copied). */
			uint64_t w1 = len | (uint32_t)BB_TAG_STATE << 16 |
				      (uint32_t)BB_RF_CRC << 24;
			uint64_t k = bb__crc_q64(0xffffffffu, (uint64_t)next | w1 << 32);

			k = bb__crc32c_hw_update(k, kenc, kh);
			k = bb__crc32c_hw_update(k, (const uint8_t *)key, klen);
			k = v->hl == 9 ? bb__crc_word(bb__crc_q64(k, v->w), v->w8, 1)
				       : bb__crc_word(k, v->w, v->hl);
			k = bb__crc32c_hw_update(k, (const uint8_t *)v->tail, v->n);
			crc = (uint32_t)bb__crc_q64(k ^ BB__CRC_XOROUT_PRE, ts);
		} else
#else
		(void)hw;
#endif
			crc = bb__record_crc(next, s, len);
		c[0] = (uint8_t)crc;
		c[1] = (uint8_t)(crc >> 8);
		c[2] = (uint8_t)(crc >> 16);
		c[3] = (uint8_t)(crc >> 24);
	} else {
		h->tag = BB_TAG_STATE;
		h->ts = ts;
		h->len = 0;     /* unset: readers skip the slot */
		h->flags = 0;
	}
	/* Release: the slot's bytes are visible to a reader (or the next
	 * writer, through its CAS) that loads this seq with acquire. */
	bb__seqcount_write_end(&h->seq, next);
}

/* The length of the NUL-terminated @key for bb__state_put(), or some
 * value above BB_STATE_KEY_MAX for a longer one (then it is -E2BIG): the
 * inline paths' bounded scan (<blackbox/inline.h>), which reads no further
 * than the string's own pages.  0 for NULL, which bb__state_put() refuses. */
_Static_assert(BB_STATE_KEY_MAX < BB__INLINE_STR_MAX, "bb__strlen_upto() bounds a key");
static inline size_t bb__key_len(const char *key)
{
	return key ? bb__strlen_upto(key) : 0;
}

/* The same for a text value: the scan, and strnlen() past its reach. */
static inline size_t bb__value_len(const char *value)
{
	size_t n = bb__strlen_upto(value);

	return n <= BB__INLINE_STR_MAX ? n : strnlen(value, BB_STATE_VALUE_MAX + 1);
}

/* Set (@v) or unset (@v NULL) the key of @kl bytes at @key, which need not
 * be NUL-terminated. */
static int bb__state_put(const char *key, size_t kl, const struct bb__sval *v)
{
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	uint8_t kenc[3];   /* array(2) and the key's text head: 2 or 3 bytes */
	uint32_t kh, klen, start;
	uint64_t ts;
	bool hw;

	if (bb_unlikely(!box)) {
		int ret = bb__nobox();

		if (ret != -EAGAIN)
			return ret;
		/* Acquire pairs with the release store publishing the box. */
		box = BB__LOAD_ACQUIRE(&bb__box);
		if (!box)
			return -ENODEV;
	}
	if (bb_unlikely(!key))
		return -EINVAL;
	if (bb_unlikely(kl > BB_STATE_KEY_MAX))
		return bb__state_fail(box, -E2BIG);
	klen = (uint32_t)kl;
	kenc[0] = 0x82;   /* array(2) */
	kh = (uint32_t)(bb__cbor_put_short(3, klen, kenc + 1) - kenc);
	hw = bb__state_hw(box);
	start = bb__key_hash(hw, key, klen);
	/* The stamp is read before the slot is taken, not inside: the
	 * clock's read (an lfence in the vDSO's) then need not wait for the
	 * locked compare-and-swap, and the slot is held for less time.  Two
	 * writers of one key may thus leave it stamped a few ns before the
	 * previous change; a stamp says when, not in which order. */
	ts = bb__now(&box->f);

	for (uint32_t i = 0; i < BB__STATE_SLOTS; i++) {
		uint8_t *s = box->state + (size_t)((start + i) % BB__STATE_SLOTS) * BB__STATE_SLOT_SIZE;
		uint32_t *seqp = &((struct bb_record_hdr *)(void *)s)->seq;
		/* Acquire pairs with the release store of an even seq in
		 * bb__slot_write(): the key bytes of a bound slot are
		 * visible.  (A later CAS to odd is a read-modify-write in that
		 * store's release sequence, so an odd seq >= 3 read here
		 * carries the same guarantee.) */
		uint32_t seq = BB__LOAD_ACQUIRE(seqp);
		const uint8_t *sk = s + BB_RECORD_HDR_SIZE;

		for (int tries = 0;; tries++) {
			if (bb_unlikely(tries > BB__STATE_RETRIES || seq == 1))
				return bb__state_fail(box, -EBUSY);
			if (seq == 0) {
				/* Never used: the end of the key's chain. */
				if (!v)
					return -ENOENT;
				if (BB__CAS_ACQUIRE(seqp, &seq, 1u)) {
					bb__slot_write(s, 1u, true, kenc, kh, key, klen, v, ts, hw);
					return 0;
				}
				continue;   /* seq reloaded by the failed CAS */
			}
			/* Bound (seq >= 2): its key never changes, even while
			 * an update makes seq odd.  The heads first, so that
			 * key bytes are read only of a key of our length, never
			 * the value bytes a concurrent update may be writing. */
			if (sk[0] != kenc[0] || sk[1] != kenc[1] || (kh == 3 && sk[2] != kenc[2]) ||
			    !bb__bytes_eq(sk + kh, (const uint8_t *)key, klen))
				break;   /* another key's slot: probe on */
			if (seq & 1u)
				return bb__state_fail(box, -EBUSY);
			if (bb_likely(BB__CAS_ACQUIRE(seqp, &seq, seq + 1u))) {
				bb__slot_write(s, seq + 1u, false, kenc, kh, key, klen, v, ts, hw);
				return 0;
			}
		}
	}
	return v ? bb__state_fail(box, -ENOSPC) : -ENOENT;
}

/* A text value of @n bytes at @value (NULL: -EINVAL). */
static int bb__set_text(const char *key, size_t kl, const char *value, size_t n)
{
	struct bb__sval v;

	if (!value)
		return -EINVAL;
	if (n > BB_STATE_VALUE_MAX) {
		/* Acquire pairs with the release store publishing the box. */
		struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

		return box ? bb__state_fail(box, -E2BIG) : bb__nobox() == 0 ? 0 : -E2BIG;
	}
	bb__sval_head(&v, 3, n);
	v.n = (uint32_t)n;
	v.tail = value;
	return bb__state_put(key, kl, &v);
}

BB_EXPORT int bb_set(const char *key, const char *value)
{
	return bb__set_text(key, bb__key_len(key), value, value ? bb__value_len(value) : 0);
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

/* The typed values, for a key of @kl bytes: all head, no tail. */
static int bb__set_i64(const char *key, size_t kl, int64_t value)
{
	struct bb__sval v = { .n = 0, .tail = "" };

	bb__sval_head(&v, (unsigned)((uint64_t)value >> 63), bb__int_arg(value));
	return bb__state_put(key, kl, &v);
}

static int bb__set_u64(const char *key, size_t kl, uint64_t value)
{
	struct bb__sval v = { .n = 0, .tail = "" };

	bb__sval_head(&v, 0, value);
	return bb__state_put(key, kl, &v);
}

static int bb__set_f64(const char *key, size_t kl, double value)
{
	struct bb__sval v = { .hl = 9, .n = 0, .tail = "" };
	uint64_t bits, be;

	memcpy(&bits, &value, sizeof(bits));
	be = __builtin_bswap64(bits);
	v.w = 0xfb | be << 8;   /* major 7, 27: a double, big-endian */
	v.w8 = (uint8_t)(be >> 56);
	return bb__state_put(key, kl, &v);
}

static int bb__set_bool(const char *key, size_t kl, bool value)
{
	struct bb__sval v = { .hl = 1, .n = 0, .tail = "" };

	v.w = value ? 0xf5 : 0xf4;
	return bb__state_put(key, kl, &v);
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
	return bb__state_put(key, bb__key_len(key), NULL);
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
	return bb__state_put(key, klen, NULL);
}
