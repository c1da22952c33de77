/* SPDX-License-Identifier: MIT */
/*
 * write.c - the record writers: compute the exact CBOR size, reserve, encode
 * straight into the ring, commit.  Every encoding is written inline
 * (<blackbox/inline.h>: bb__cbor_put_head(), bb__cbor_put_f64(),
 * bb__copy_small()); a PLT call into libcbor costs more (BENCHMARKS.md
 * "Choices in the code, measured"), and its cbor_encode_double() writes
 * the same 9 bytes as bb__cbor_put_f64() (the 9-byte float64 form, which
 * bb__val_size() counts on; tests/lib/test_inline.c compares them).
 *
 * The ring is mapped twice back to back (box.c), so the value area of a
 * record is contiguous even when it wraps: every encoder call below writes
 * into one linear buffer of exactly the size computed beforehand.
 *
 * No malloc, no lock, no system call; AS-safe (see blackbox.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

/*
 * BB__ON_RING(w, stmts): @stmts (reserve .. commit) twice, once where the
 * compiler knows the write goes to the thread's segment (w.shared is
 * false: the tid extension, the lock release and their branches fold away)
 * and once for the shared ring.  Without it the two ways out of bb__begin()
 * merge and the fast path tests w.shared at run time, which costs
 * instructions on every write (BENCHMARKS.md "Choices in the code,
 * measured").
 */
#define BB__ON_RING(w, ...)                                              \
	do {                                                             \
		if (bb_likely(!(w).shared)) {                            \
			__VA_ARGS__;                                     \
		} else {                                                 \
			__VA_ARGS__;                                     \
		}                                                        \
	} while (0)

/* ---- configuration (bb_init time, not AS-safe) ------------------------- */

/*
 * bb__writer_env - apply BLACKBOX_CLOCK and BLACKBOX_CRC to @o (unless
 * BB_OPT_NO_ENV) and check o->clock.  An option set by the caller wins over
 * the environment (as for size and dir): BLACKBOX_CLOCK only fills a zero
 * o->clock.  Returns 0 or -EINVAL (unknown clock name or value, BLACKBOX_CRC
 * other than 0 or 1).
 */
int bb__writer_env(struct bb_options *o)
{
	const char *env;

	if (!(o->flags & BB_OPT_NO_ENV)) {
		env = secure_getenv("BLACKBOX_CLOCK");
		if (!o->clock && env && *env) {
			if (!strcmp(env, "tsc"))
				o->clock = BB_CLOCK_TSC;
			else if (!strcmp(env, "monotonic"))
				o->clock = BB_CLOCK_MONOTONIC;
			else
				return -EINVAL;
		}
		env = secure_getenv("BLACKBOX_CRC");
		if (env && *env) {
			if (!strcmp(env, "0"))
				o->flags |= BB_OPT_NO_CRC;
			else if (strcmp(env, "1"))
				return -EINVAL;
		}
	}
	if (o->clock != 0 && o->clock != BB_CLOCK_MONOTONIC && o->clock != BB_CLOCK_TSC)
		return -EINVAL;
	return 0;
}

/*
 * bb__writer_setup - the per-box choices every write reads: the record
 * clock (clock.c: also writes the header's clock, anchor and TSC fields)
 * and the checksum (header flag BB_HF_CRC32C, record flag, trailer, the
 * room left for a value).  Called by bb__open() before the header's magic
 * is published.
 */
void bb__writer_setup(struct bb__box *box, const struct bb_options *o)
{
	struct bb_header *h = box->hdr;

	box->f.clock = CLOCK_MONOTONIC;
	box->f.tsc = bb__clock_setup(h, o->clock) == BB_CLOCK_TSC;
	if (o->flags & BB_OPT_NO_CRC) {
		box->f.crc = BB__CRC_NONE;
		box->f.rflags = 0;
		box->f.trailer = 0;
	} else {
		box->f.crc = bb__crc32c_have_hw() ? BB__CRC_HW : BB__CRC_SW;
		box->f.rflags = BB_RF_CRC;
		box->f.trailer = BB_CRC_SIZE;
		h->flags |= BB_HF_CRC32C;
	}
	box->f.room = box->max_record - BB_RECORD_HDR_SIZE - box->f.trailer;
}

/* The IEEE 754 bits of @v (bb__cbor_put_f64() writes them). */
static inline uint64_t bb__f64_bits(double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

/* Text (major 3) and byte strings (2): the encoder the event record
 * shares with the inline path (<blackbox/inline.h>), library forms. */
static inline uint8_t *bb__put_text(uint8_t *p, const char *s, size_t n)
{
	return bb__put_string(p, 3, s, n, 0);
}

static inline uint8_t *bb__put_bytes(uint8_t *p, const void *s, size_t n)
{
	return bb__put_string(p, 2, s, n, 0);
}

/* Largest payload n with head(n) + n <= room. */
static inline size_t bb__fit(size_t room)
{
	size_t h = bb__cbor_head(room);

	return room > h ? room - h : 0;
}

/* ---- important records (FORMAT.md §11 "Important ring") ---------------- */

/*
 * bb__important_copy - copy the record just sealed by @w (still inside its
 * nesting section, so no write on this thread can overwrite it, and, for the
 * shared ring, still under its lock: no other thread can either) into the
 * important ring, with the same ts, tag, flags and value plus the TID
 * extension, then leave @w's nesting section.
 *
 * The important ring is serialised by its lock word exactly like the shared
 * ring: a try-lock with a bounded spin.  When it is not acquired (another
 * thread holds it through 128 spins, or this thread holds it: a signal
 * handler interrupted an important write of its own thread) the copy is
 * dropped and counted in dropped_important, never waited for.  The original
 * is in the thread's ring either way.  No lock is held while we spin on this
 * one except, for an overflow thread, the shared ring's; no code path takes
 * the shared lock while holding the important one, so there is no cycle.
 */
static __attribute__((noinline)) void bb__important_copy(struct bb__w *w, uint8_t tag, uint64_t ts)
{
	struct bb__box *box = w->box;
	struct bb__sink *r = &box->rings[BB__IMPORTANT_IDX];
	int32_t *lock = &r->desc->lock;
	int32_t tid = bb__tls.tid;
	uint32_t vhdr = BB_RECORD_HDR_SIZE + (w->shared ? 8u : 0u);
	uint32_t vlen = w->len - vhdr - box->f.trailer;
	struct bb__w c;
	uint8_t *p;

	/* Acquire (in the try-lock) pairs with the release store of 0 below
	 * by the previous holder: we continue from its r->head and r->tail.
	 * 0 (our own interrupted copy holds it) and -1 (busy) both drop. */
	if (bb__ring_trylock(lock, tid) != 1) {
		/* Statistics: relaxed, ordered with nothing. */
		BB__FETCH_ADD(&box->hdr->dropped_important, 1);
		bb__leave(w);
		return;
	}
	c.box = box;
	c.r = r;
	c.shared = true;   /* bb__reserve() writes the TID extension */
	c.flags = (uint8_t)(w->flags | BB_RF_TID);
	p = bb__reserve(&c, 0, vlen);
	memcpy(p, w->rec + vhdr, vlen);
	bb__seal(&c, tag, ts, false);
	/* Release: our head/tail updates of the important ring (process-local
	 * and in the descriptor) are visible to the next holder's acquire CAS. */
	BB__STORE_RELEASE(lock, 0);
	bb__leave(w);
}

/* bb__commit_important - bb__commit() of an important record: seal it in
 * the thread's ring (its flags carry BB_RF_IMPORTANT), then copy it. */
static inline void bb__commit_important(struct bb__w *w, uint8_t tag)
{
	uint64_t ts = bb__now(&w->box->f);

	bb__seal(w, tag, ts, false);
	bb__important_copy(w, tag, ts);
}

/* ---- scalars ------------------------------------------------------------ */

BB_EXPORT int bb_write_i64(int64_t v)
{
	struct bb__w w;
	int ret;
	uint8_t *p;

	if (!bb__begin(&w, &ret))
		return ret;
	BB__ON_RING(w,
		p = bb__reserve(&w, 0, bb__cbor_int_size(v));
		bb__cbor_put_int(v, p);
		bb__commit(&w, BB_TAG_I64));
	return 0;
}

/* An unsigned integer as a record of @tag: a U64, or a span's end. */
static inline __attribute__((always_inline))
int bb__write_uint(uint8_t tag, uint64_t v)
{
	struct bb__w w;
	int ret;
	uint8_t *p;

	if (!bb__begin(&w, &ret))
		return ret;
	BB__ON_RING(w,
		p = bb__reserve(&w, 0, bb__cbor_head(v));
		bb__cbor_put_head(0, v, p);
		bb__commit(&w, tag));
	return 0;
}

BB_EXPORT int bb_write_u64(uint64_t v)
{
	return bb__write_uint(BB_TAG_U64, v);
}

/* A span's end (span.c): its depth. */
int bb__write_span_end(uint32_t depth)
{
	return bb__write_uint(BB_TAG_SPAN_END, depth);
}

BB_EXPORT int bb_write_f64(double v)
{
	struct bb__w w;
	int ret;
	uint8_t *p;

	if (!bb__begin(&w, &ret))
		return ret;
	BB__ON_RING(w,
		p = bb__reserve(&w, 0, 9);
		bb__cbor_put_f64(p, bb__f64_bits(v));
		bb__commit(&w, BB_TAG_F64));
	return 0;
}

BB_EXPORT int bb_write_bool(bool v)
{
	struct bb__w w;
	int ret;
	uint8_t *p;

	if (!bb__begin(&w, &ret))
		return ret;
	BB__ON_RING(w,
		p = bb__reserve(&w, 0, 1);
		*p = v ? 0xf5 : 0xf4;
		bb__commit(&w, BB_TAG_BOOL));
	return 0;
}

/* Text or bytes, truncated (and flagged) to the record's room. */
static int bb__write_blob(uint8_t tag, const void *s, size_t n)
{
	struct bb__w w;
	uint8_t flags = 0;
	int ret;
	uint8_t *p;

	if (!bb__begin(&w, &ret))
		return ret;
	if (bb_unlikely(bb__cbor_head(n) + n > w.room)) {
		size_t cut = bb__fit(w.room);

		n = tag == BB_TAG_STR ? bb__utf8_cut(s, cut) : cut;
		flags = BB_RF_TRUNCATED;
		BB__FETCH_ADD(&w.box->hdr->truncated, 1);
	}
	BB__ON_RING(w,
		p = bb__reserve(&w, flags, bb__cbor_head(n) + (uint32_t)n);
		if (tag == BB_TAG_STR)
			bb__put_text(p, s, n);
		else
			bb__put_bytes(p, s, n);
		bb__commit_big(&w, tag));
	return 0;
}

BB_EXPORT int bb_write_str(const char *s)
{
	if (bb_unlikely(!s))
		return -EINVAL;
	return bb__write_blob(BB_TAG_STR, s, strlen(s));
}

BB_EXPORT int bb_write_strn(const char *s, size_t n)
{
	if (bb_unlikely(!bb__strn_ok(&s, n)))
		return -EINVAL;
	return bb__write_blob(BB_TAG_STR, s, n);
}

BB_EXPORT int bb_write_bytes(const void *p, size_t n)
{
	if (bb_unlikely(!p && n))
		return -EINVAL;
	return bb__write_blob(BB_TAG_BYTES, p, n);
}

/* ---- typed values (key/value records and event fields) ------------------ */

struct bb__val {
	enum bb_type type;
	size_t n;            /* bytes of text/bytes payload (after truncation) */
	union {
		const char *s;
		const void *p;
		int64_t i64;
		uint64_t u64;
		double f64;
		bool b;
	} v;
};

static inline __attribute__((always_inline))
uint32_t bb__val_size(const struct bb__val *v)
{
	switch (v->type) {
	case BB_TYPE_STR:
	case BB_TYPE_STRN:
	case BB_TYPE_BYTES: return bb__cbor_head(v->n) + (uint32_t)v->n;
	case BB_TYPE_I64:   return bb__cbor_int_size(v->v.i64);
	case BB_TYPE_U64:   return bb__cbor_head(v->v.u64);
	case BB_TYPE_F64:   return 9;
	case BB_TYPE_BOOL:  return 1;
	}
	return 0;
}

static inline __attribute__((always_inline))
uint8_t *bb__put_val(uint8_t *p, const struct bb__val *v)
{
	switch (v->type) {
	case BB_TYPE_STR:
	case BB_TYPE_STRN:  return bb__put_text(p, v->v.s, v->n);
	case BB_TYPE_BYTES: return bb__put_bytes(p, v->v.p, v->n);
	case BB_TYPE_I64:   return bb__cbor_put_int(v->v.i64, p);
	case BB_TYPE_U64:   return bb__cbor_put_head(0, v->v.u64, p);
	case BB_TYPE_F64:   return bb__cbor_put_f64(p, bb__f64_bits(v->v.f64));
	case BB_TYPE_BOOL:  *p = v->v.b ? 0xf5 : 0xf4; return p + 1;
	}
	return p;
}

/* [key, value].  Inlined into each typed writer (always_inline) so that
 * the switches on v->type fold away: one specialised body per type. */
static inline __attribute__((always_inline))
int bb__write_kv(const char *key, size_t kl, struct bb__val *v, bool imp)
{
	struct bb__w w;
	uint32_t need;
	uint8_t flags = 0;
	int ret;
	uint8_t *p;

	if (!bb__begin(&w, &ret))
		return ret;
	if (imp) {
		/* Room for the copy's TID extension in the important ring. */
		w.room = w.box->f.room - 8;
		w.flags |= BB_RF_IMPORTANT;
	}
	if (bb_likely(kl < 24 && ((v->type != BB_TYPE_STR && v->type != BB_TYPE_BYTES) ||
				  v->n < 24))) {
		/* Short key and short (or scalar) value, the common case: every
		 * CBOR head is one byte (the compiler knows it here and drops
		 * the size cascades), and the record fits any ring: need <=
		 * 1 + 1 + 23 + 1 + 23 = 49 bytes, room >= 1 KiB - 28 (a ring
		 * is >= 4 KiB, max_record = ring / 4, box.c), so no truncation
		 * test. */
		need = 2 + (uint32_t)kl + bb__val_size(v);
		BB__ON_RING(w,
			p = bb__reserve(&w, 0, need);
			*p++ = 0x82;   /* array(2) */
			*p++ = (uint8_t)(0x60 | kl);
			bb__copy(p, key, kl);
			bb__put_val(p + kl, v);
			if (imp)
				bb__commit_important(&w, BB_TAG_KV);
			else
				bb__commit(&w, BB_TAG_KV));
		return 0;
	}
	need = 1 + bb__cbor_head(kl) + (uint32_t)kl + bb__val_size(v);
	if (bb_unlikely(need > w.room)) {
		/* Keep the key whole if it leaves room for a value; cut the
		 * value first, then the key. */
		size_t vroom, cut;

		if (kl > w.room / 2)
			kl = bb__utf8_cut(key, bb__fit(w.room / 2 - 1));
		vroom = w.room - 1 - bb__cbor_head(kl) - kl;
		cut = bb__fit(vroom);
		if ((v->type == BB_TYPE_STR || v->type == BB_TYPE_BYTES) && v->n > cut)
			v->n = v->type == BB_TYPE_STR ? bb__utf8_cut(v->v.s, cut) : cut;
		flags = BB_RF_TRUNCATED;
		BB__FETCH_ADD(&w.box->hdr->truncated, 1);
		need = 1 + bb__cbor_head(kl) + (uint32_t)kl + bb__val_size(v);
	}
	BB__ON_RING(w,
		p = bb__reserve(&w, flags, need);
		*p++ = 0x82;   /* array(2) */
		p = bb__put_text(p, key, kl);
		bb__put_val(p, v);
		if (imp)
			bb__commit_important(&w, BB_TAG_KV);
		else
			bb__commit(&w, BB_TAG_KV));
	return 0;
}

static inline __attribute__((always_inline))
int bb__write_kv_str(const char *key, const char *value, bool imp)
{
	struct bb__val v = { .type = BB_TYPE_STR };

	if (bb_unlikely(!key || !value))
		return -EINVAL;
	v.v.s = value;
	v.n = strlen(value);
	return bb__write_kv(key, strlen(key), &v, imp);
}

/* Parenthesised: <blackbox.h> defines bb_write_kv() and the typed
 * bb_write_kv_i64/_u64/_f64() as macros over their inline paths for
 * callers; these are the exported functions. */
BB_EXPORT int (bb_write_kv)(const char *key, const char *value)
{
	return bb__write_kv_str(key, value, false);
}

BB_EXPORT int (bb_write_kvn)(const char *key, size_t klen, const char *value, size_t vlen)
{
	struct bb__val v = { .type = BB_TYPE_STR, .n = vlen };

	if (bb_unlikely(!bb__strn_ok(&key, klen) || !bb__strn_ok(&value, vlen)))
		return -EINVAL;
	v.v.s = value;
	return bb__write_kv(key, klen, &v, false);
}

BB_EXPORT int bb_write_kv_important(const char *key, const char *value)
{
	return bb__write_kv_str(key, value, true);
}

BB_EXPORT int bb_write_kvn_important(const char *key, size_t klen, const char *value,
				     size_t vlen)
{
	struct bb__val v = { .type = BB_TYPE_STR, .n = vlen };

	if (bb_unlikely(!bb__strn_ok(&key, klen) || !bb__strn_ok(&value, vlen)))
		return -EINVAL;
	v.v.s = value;
	return bb__write_kv(key, klen, &v, true);
}

BB_EXPORT int (bb_write_kv_i64)(const char *key, int64_t x)
{
	struct bb__val v = { .type = BB_TYPE_I64, .v.i64 = x };

	if (bb_unlikely(!key))
		return -EINVAL;
	return bb__write_kv(key, strlen(key), &v, false);
}

BB_EXPORT int (bb_write_kv_u64)(const char *key, uint64_t x)
{
	struct bb__val v = { .type = BB_TYPE_U64, .v.u64 = x };

	if (bb_unlikely(!key))
		return -EINVAL;
	return bb__write_kv(key, strlen(key), &v, false);
}

BB_EXPORT int (bb_write_kv_f64)(const char *key, double x)
{
	struct bb__val v = { .type = BB_TYPE_F64, .v.f64 = x };

	if (bb_unlikely(!key))
		return -EINVAL;
	return bb__write_kv(key, strlen(key), &v, false);
}

BB_EXPORT int bb_write_kv_bool(const char *key, bool x)
{
	struct bb__val v = { .type = BB_TYPE_BOOL, .v.b = x };

	if (bb_unlikely(!key))
		return -EINVAL;
	return bb__write_kv(key, strlen(key), &v, false);
}

/* The typed writers with the key's length given (<blackbox.hpp> passes a
 * std::string_view's).  The key need not be NUL-terminated. */
BB_EXPORT int bb_write_kvn_i64(const char *key, size_t klen, int64_t x)
{
	struct bb__val v = { .type = BB_TYPE_I64, .v.i64 = x };

	if (bb_unlikely(!bb__strn_ok(&key, klen)))
		return -EINVAL;
	return bb__write_kv(key, klen, &v, false);
}

BB_EXPORT int bb_write_kvn_u64(const char *key, size_t klen, uint64_t x)
{
	struct bb__val v = { .type = BB_TYPE_U64, .v.u64 = x };

	if (bb_unlikely(!bb__strn_ok(&key, klen)))
		return -EINVAL;
	return bb__write_kv(key, klen, &v, false);
}

BB_EXPORT int bb_write_kvn_f64(const char *key, size_t klen, double x)
{
	struct bb__val v = { .type = BB_TYPE_F64, .v.f64 = x };

	if (bb_unlikely(!bb__strn_ok(&key, klen)))
		return -EINVAL;
	return bb__write_kv(key, klen, &v, false);
}

BB_EXPORT int bb_write_kvn_bool(const char *key, size_t klen, bool x)
{
	struct bb__val v = { .type = BB_TYPE_BOOL, .v.b = x };

	if (bb_unlikely(!bb__strn_ok(&key, klen)))
		return -EINVAL;
	return bb__write_kv(key, klen, &v, false);
}

/* ---- events ------------------------------------------------------------- */

/*
 * [name, {key: value, ...}] (a span's begin: and its @extra items, the
 * @tail_len bytes at @tail), checked, sized and encoded by the helpers the
 * inline path uses too (<blackbox/inline.h>: bb__evf_read(),
 * bb__evf_size(), bb__event_put_head(), bb__evf_put()).  When the whole does not fit, the longest text/bytes
 * component is cut, repeatedly, until it does: short fields survive
 * intact, a long one is shortened.  Bounded: each round shortens one
 * component to what the excess requires.
 */
static inline __attribute__((always_inline))
int bb__write_event_tail(const char *name, const struct bb_field *f, size_t n, bool imp,
			 uint8_t tag, const uint8_t *tail, uint32_t tail_len, unsigned extra)
{
	struct bb__evf e[BB_EVENT_MAX_FIELDS];
	struct bb__w w;
	size_t nl;
	uint32_t need;
	uint8_t flags = 0;
	int ret;
	uint8_t *p, *v;

	if (bb_unlikely(!bb__event_args_ok(name, f, n)))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!bb__evf_read(&e[i], &f[i], 0))
			return -EINVAL;
	}
	nl = strlen(name);

	if (!bb__begin(&w, &ret))
		return ret;
	if (imp) {
		/* Room for the copy's TID extension in the important ring. */
		w.room = w.box->f.room - 8;
		w.flags |= BB_RF_IMPORTANT;
	}
	for (int round = 0; round <= 2 * (int)n + 1; round++) {
		size_t *longest = &nl, excess;
		const char *ls = name;
		bool text = true;

		need = bb__event_head_size(nl, n, 0) + tail_len;
		for (size_t i = 0; i < n; i++)
			need += bb__evf_size(e[i], 0);
		if (need <= w.room)
			break;
		flags = BB_RF_TRUNCATED;
		for (size_t i = 0; i < n; i++) {
			if (e[i].kl > *longest) {
				longest = &e[i].kl;
				ls = e[i].key;
				text = true;
			}
			if ((e[i].type == BB_TYPE_STR || e[i].type == BB_TYPE_BYTES) &&
			    e[i].vl > *longest) {
				longest = &e[i].vl;
				ls = e[i].type == BB_TYPE_STR ? e[i].v.p : NULL;
				text = e[i].type == BB_TYPE_STR;
			}
		}
		excess = need - w.room;
		*longest = *longest > excess ? *longest - excess : 0;
		if (text && ls)
			*longest = bb__utf8_cut(ls, *longest);
	}
	if (bb_unlikely(need > w.room)) {
		/* Cannot happen with the bounds in blackbox.h (32 fields of
		 * at most 9 + 9 bytes once cut, max_record >= 1 KiB), but a
		 * record is never written past its room. */
		BB__FETCH_ADD(&w.box->hdr->dropped_toobig, 1);
		w.len = 0;
		/* Leave the nesting section without writing. */
		if (w.shared)
			bb__end_shared(w.box, &bb__tls);
		else
			bb__tls.f.depth--;
		return -E2BIG;
	}
	if (flags)
		BB__FETCH_ADD(&w.box->hdr->truncated, 1);
	BB__ON_RING(w,
		v = bb__reserve(&w, flags, need);
		p = bb__event_put_head(v, name, nl, n, 0);
		/* A span's begin: array(2 + extra), its items after the map. */
		*v = (uint8_t)(0x80 | (2 + extra));
		for (size_t i = 0; i < n; i++)
			p = bb__evf_put(p, e[i], 0);
		if (tail_len)
			memcpy(p, tail, tail_len);
		if (imp)
			bb__commit_important(&w, tag);
		else
			bb__commit(&w, tag));
	return 0;
}
static inline __attribute__((always_inline))
int bb__write_event(const char *name, const struct bb_field *f, size_t n, bool imp)
{
	return bb__write_event_tail(name, f, n, imp, BB_TAG_EVENT, NULL, 0, 0);
}

/* A span's begin (span.c): an event's record of tag @tag whose array has
 * @extra items after the map, @tail_len bytes of CBOR at @tail. */
int bb__write_span_begin(const char *name, const struct bb_field *f, size_t n,
			 const uint8_t *tail, uint32_t tail_len, unsigned extra)
{
	return bb__write_event_tail(name, f, n, false, BB_TAG_SPAN_BEGIN, tail, tail_len,
				    extra);
}

BB_EXPORT int (bb_write_event)(const char *name, const struct bb_field *f, size_t n)
{
	return bb__write_event(name, f, n, false);
}

BB_EXPORT int bb_write_event_important(const char *name, const struct bb_field *f, size_t n)
{
	return bb__write_event(name, f, n, true);
}
