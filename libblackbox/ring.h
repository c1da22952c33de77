/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the reader side of the per-record seqlock (docs/DESIGN.md §4), for one
 * record.  Internal, do not use outside the library.  Shared by the reader
 * API (reader_walk.c) and bb_dump() (dump.c), so the protocol exists once.
 *
 * Allocation-free and AS-safe.  Works on a live mapping (the owner writing
 * concurrently) and on a private snapshot alike.
 */
#ifndef BB_RING_H
#define BB_RING_H

#include <stdint.h>
#include <string.h>

#include <blackbox/format.h>

#include "barrier.h"
#include "crc32c.h"

/*
 * An extent: the reader's read-only view of one ring, or of one segment of a
 * thread's log (3.0, FORMAT.md §13; docs/DESIGN.md §1).  A ring: its descriptor (head, tail) and its data, the
 * position pos at data + (pos & (size - 1)), wrapping.  A segment (desc
 * NULL): the log positions [start, start + size) at data, never wrapping;
 * its bytes are valid while the segment's owner word, *own, still names
 * the hand-over own0 (BB_SEG_SAME_USE: the seqlock of FORMAT.md §13).
 */
struct bb__extent {
	const struct bb_ring_desc *desc; /* a ring's descriptor, in the box; NULL: a segment */
	const uint8_t *data;             /* ring data (single-mapped), or segment data */
	uint64_t size;                   /* ring_size (power of two), or seg_size */
	uint32_t max_record;             /* header's max_record (validated) */
	uint64_t start;                  /* segment: log position of data[0] */
	const uint64_t *own;             /* segment: its descriptor's owner word */
	uint64_t own0;                   /* segment: the owner word its bounds were read under */
};

enum bb__rd {
	BB__RD_OK = 0,          /* record copied and proven intact */
	BB__RD_OVERWRITTEN = 1, /* the writer lapped pos before or during the copy */
	BB__RD_CORRUPT = 2,     /* not a committed record at pos, tail did not move */
};

/* Unsigned difference of free-running counters, read as signed: counters
 * are 64-bit byte positions that cannot wrap in the life of a box, and any
 * two positions compared here are within one ring size of each other in a
 * sane box; in a corrupt box the result is merely wrong, never unsafe. */
static inline int64_t bb__pos_diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/* Copy @n bytes at ring position @pos, wrapping at the end of the ring.
 * The bytes may be changing under us (live box): that is the seqlock's
 * intended race, resolved by the re-validation in bb__extent_read().  In a
 * segment, bytes past its end (a corrupt length) read as zeros. */
static inline void bb__extent_copy(const struct bb__extent *v, uint64_t pos,
				 void *dst, size_t n)
{
	size_t off = (size_t)(pos & (v->size - 1));
	size_t first = (size_t)v->size - off;

	if (!v->desc) {
		uint64_t at = pos - v->start;

		first = at < v->size ? (size_t)(v->size - at) : 0;
		if (first > n)
			first = n;
		if (first)
			memcpy(dst, v->data + at, first);
		memset((uint8_t *)dst + first, 0, n - first);
		return;
	}
	if (first >= n) {
		memcpy(dst, v->data + off, n);
	} else {
		memcpy(dst, v->data + off, first);
		memcpy((uint8_t *)dst + first, v->data, n - first);
	}
}

static inline uint32_t bb__extent_seq(const struct bb__extent *v, uint64_t pos)
{
	/* Relaxed: ordered by the acquire load of head (first read) or by the
	 * acquire fence in bb__extent_read() (re-read).  A segment's caller
	 * keeps pos + 4 inside it (pos 8-aligned and below a head that is). */
	if (!v->desc)
		return BB__LOAD_RELAXED((uint32_t *)(uintptr_t)(v->data + (pos - v->start)));
	return BB__LOAD_RELAXED((uint32_t *)(uintptr_t)(v->data + (pos & (v->size - 1))));
}

/* Has the writer published a tail beyond @pos (a ring), or handed the
 * segment over (a segment: its owner word names another hand-over)?
 * Called after an acquire fence, so it sees any tail published (any
 * hand-over begun) before the bytes we copied were overwritten. */
static inline int bb__extent_lapped(const struct bb__extent *v, uint64_t pos)
{
	uint64_t tail;

	if (!v->desc)
		return !BB_SEG_SAME_USE(BB__LOAD_RELAXED((uint64_t *)(uintptr_t)v->own), v->own0);
	tail = BB__LOAD_RELAXED((uint64_t *)(uintptr_t)&v->desc->tail);
	return bb__pos_diff(tail, pos) > 0;
}

/*
 * bb__ring_bounds - the live part of a ring as its descriptor gives it
 * (FORMAT.md §8 step 2): loads head with acquire, then tail, reloading a
 * bounded number of times while tail is past head (a live writer lapped
 * the ring between the loads).  Returns BB__RB_OK with [*tailp, *headp)
 * to walk (a tail more than a ring behind head is raised to one ring
 * back, and BB__RB_TOO_LONG says so), BB__RB_MISALIGNED when head or tail
 * is not a multiple of 8 (nothing in the ring can be located), or
 * BB__RB_LAPPED when tail stays past head (a live writer still lapping, or
 * a scribbled descriptor).  AS-safe.
 */
enum bb__rb {
	BB__RB_OK = 0,
	BB__RB_TOO_LONG = 1,
	BB__RB_MISALIGNED = 2,
	BB__RB_LAPPED = 3,
};

static inline enum bb__rb bb__ring_bounds(const struct bb__extent *v, uint64_t *headp,
					  uint64_t *tailp)
{
	uint64_t head, tail;

	for (int tries = 0;; tries++) {
		/* Acquire: pairs with the writer's release store of head
		 * (FORMAT.md §7 step 4), which follows its release store of
		 * each record's committed seq: every record in [tail, head) is
		 * committed and its bytes are visible to later copies. */
		head = BB__LOAD_ACQUIRE((uint64_t *)(uintptr_t)&v->desc->head);
		/* Relaxed: ordered after the head load by its acquire, so this
		 * is a tail at least as new as the one published before that
		 * head; a newer one is caught per record by bb__extent_read(). */
		tail = BB__LOAD_RELAXED((uint64_t *)(uintptr_t)&v->desc->tail);
		if (bb__pos_diff(head, tail) >= 0 || tries == 3)
			break;
	}
	*headp = head;
	*tailp = tail;
	if ((head | tail) % 8)
		return BB__RB_MISALIGNED;
	if (bb__pos_diff(head, tail) < 0)
		return BB__RB_LAPPED;
	if (head - tail > v->size) {
		/* a writer never keeps more than a ring's worth: distrust the
		 * tail, resync from one ring back */
		*tailp = head - v->size;
		return BB__RB_TOO_LONG;
	}
	return BB__RB_OK;
}

/*
 * bb__seg_bounds - the live part of segment @d of a log (FORMAT.md §13
 * "Reading a log"): loads the owner word with acquire, then start and
 * head; fills @v (with @data, the segment's @size bytes, @max_record) for
 * the positions [*startp, *headp).  Returns 1 when the segment holds part
 * of a log (OPEN or SEALED, a log id, start and head 8-aligned, head - start
 * <= size), 0 when it holds none (FREE, CLAIMING), -1 when its descriptor
 * is corrupt.  The caller's reads of the bytes are then proven by
 * bb__extent_read() (the owner word again, after an acquire fence).  AS-safe.
 */
static inline int bb__seg_bounds(struct bb__extent *v, const struct bb_seg_desc *d,
				 const uint8_t *data, uint64_t size, uint32_t max_record,
				 uint64_t *startp, uint64_t *headp)
{
	/* Acquire: pairs with the release store of OPEN that ends a
	 * hand-over (start and the rest were stored before it). */
	uint64_t own = BB__LOAD_ACQUIRE((uint64_t *)(uintptr_t)&d->own), start, head;
	uint32_t st = BB_SEG_STATE(own);

	*v = (struct bb__extent){ .desc = NULL, .data = data, .size = size,
				     .max_record = max_record, .own = &d->own, .own0 = own };
	if (st != BB_SEG_OPEN && st != BB_SEG_SEALED)
		return 0;
	start = BB__LOAD_RELAXED((uint64_t *)(uintptr_t)&d->start);
	/* Acquire: pairs with the owner's release store of head (FORMAT.md
	 * §7 step 4): every record below it is visible. */
	head = BB__LOAD_ACQUIRE((uint64_t *)(uintptr_t)&d->head);
	*startp = v->start = start;
	*headp = head;
	if (!BB_SEG_LOG(own) || (start | head) % 8 || bb__pos_diff(head, start) < 0 ||
	    head - start > size)
		return -1;
	return 1;
}

/*
 * bb__extent_envelope_ok - the checks of an envelope copied from @pos (FORMAT.md
 * §8 steps 3.1-3.2): committed at pos, a sane len, a stride inside the ring
 * and inside [pos, @head).  The one envelope check of every walk.
 */
static inline int bb__extent_envelope_ok(const struct bb__extent *v, const struct bb_record_hdr *h,
				       uint64_t pos, uint64_t head)
{
	uint64_t stride = BB_RECORD_STRIDE(h->len);

	return h->seq == BB_SEQ_DONE(pos) && h->len >= BB_RECORD_HDR_SIZE &&
	       h->len <= v->max_record && stride <= v->size &&
	       bb__pos_diff(head, pos) >= (int64_t)stride;
}

/*
 * bb__extent_read - copy the record at @pos (a position in [tail, head) of a
 * head loaded with acquire) into @buf (at least max_record bytes) and prove
 * it intact.  On BB__RD_OK *lenp is the record's exact length.
 *
 * Protocol (docs/DESIGN.md §4, docs/FORMAT.md §8): check seq == DONE(pos) and a sane len, copy, acquire
 * fence, re-read tail and seq.  The fence pairs with the writer's release
 * fence after it publishes a new tail (bb__ring_make_room()), which precedes every store into the bytes that tail
 * released, the busy seq of the overwriting record included.  If our copy
 * saw any byte of such an overwrite, fence-fence synchronisation makes the
 * new tail visible to the re-read below, and we discard the copy (Boehm,
 * MSPC 2012, §3; the kernel's read_seqcount_retry()).  The busy mark has
 * no fence of its own to pair with: docs/DESIGN.md §5.  In a segment the
 * owner word plays tail's part: a thread that takes the segment over stores
 * its CLAIMING word, then a release fence, before it writes a byte
 * (bb__seg_use()), so a copy that saw such a byte sees the new word.
 */
static inline enum bb__rd bb__extent_read(const struct bb__extent *v, uint64_t pos,
					 uint64_t head, uint8_t *buf, uint32_t *lenp)
{
	struct bb_record_hdr h;
	uint32_t seq = bb__extent_seq(v, pos);

	if (seq != BB_SEQ_DONE(pos))
		goto bad;
	bb__extent_copy(v, pos, &h, sizeof(h));
	if (!bb__extent_envelope_ok(v, &h, pos, head))
		goto bad;
	bb__extent_copy(v, pos, buf, h.len);

	/* Pairs with the writer's release fence after it stores a new tail:
	 * orders our copy before the re-reads. */
	BB__FENCE_ACQUIRE();
	if (bb__extent_lapped(v, pos) || bb__extent_seq(v, pos) != seq)
		return BB__RD_OVERWRITTEN;
	*lenp = h.len;
	return BB__RD_OK;
bad:
	/* Pairs as above: a record torn by a concurrent overwrite shows up as
	 * a moved tail; otherwise the bytes really are wrong. */
	BB__FENCE_ACQUIRE();
	return bb__extent_lapped(v, pos) ? BB__RD_OVERWRITTEN : BB__RD_CORRUPT;
}

/*
 * bb__extent_resync - after the record at @pos failed validation with the
 * tail still behind it (corrupt): the next position before @head whose seq
 * says "committed here" and whose record validates (FORMAT.md §8,
 * "corrupt"), or @head when there is none.  @buf: scratch of max_record
 * bytes.  The bytes skipped are the difference.  AS-safe.
 */
static inline uint64_t bb__extent_resync(const struct bb__extent *v, uint64_t pos,
				       uint64_t head, uint8_t *buf)
{
	for (uint64_t p = pos + 8; bb__pos_diff(head, p) > 0; p += 8) {
		uint32_t len;

		if (bb__extent_seq(v, p) != BB_SEQ_DONE(p))
			continue;
		if (bb__extent_read(v, p, head, buf, &len) == BB__RD_CORRUPT)
			continue;
		return p; /* the caller reads it again and keeps or resyncs */
	}
	return head;
}

/*
 * bb__extent_after_lap - where a walk resumes after the record at @pos was
 * overwritten: the tail the writer published (made visible by the acquire
 * fence of bb__extent_read()), when it is 8-aligned and past @pos, else the
 * next 8-aligned position.
 */
static inline uint64_t bb__extent_after_lap(const struct bb__extent *v, uint64_t pos)
{
	uint64_t t;

	/* A segment handed over holds nothing of its log any more: past its
	 * end, where every walk of it stops. */
	if (!v->desc)
		return v->start + v->size;
	/* Relaxed: bb__extent_read() issued the acquire fence that made the
	 * newer tail visible. */
	t = BB__LOAD_RELAXED((uint64_t *)(uintptr_t)&v->desc->tail);

	return bb__pos_diff(t, pos) > 0 && !(t % 8) ? t : pos + 8;
}

/*
 * bb__extent_skip - where a walk resumes after the record at @pos could not
 * be read (@rd, as bb__extent_read() or a fixed-snapshot read decided): past
 * the writer's lap when it was overwritten, at the next record that
 * validates when it is corrupt (FORMAT.md §8), adding the corrupt bytes
 * passed over to *@skipped.  The one decision every walk of the library
 * makes (the reader's, reader_walk.c; bb_dump()'s, dump.c).  @buf: scratch
 * of max_record bytes.  AS-safe.
 */
static inline uint64_t bb__extent_skip(const struct bb__extent *v, uint64_t pos,
				     uint64_t head, enum bb__rd rd, uint8_t *buf,
				     uint64_t *skipped)
{
	uint64_t p;

	if (rd == BB__RD_OVERWRITTEN)
		return bb__extent_after_lap(v, pos);
	p = bb__extent_resync(v, pos, head, buf);
	*skipped += p - pos;
	return p;
}

/*
 * bb__record_crc_ok - check the CRC32C trailer of a copied record (FORMAT
 * §11) whose committed seq word is @seq.  A record without BB_RF_CRC passes
 * unless @required (the header promises BB_HF_CRC32C: a cleared flag bit
 * is then a scribble, not an old writer).  Works on the private copy only,
 * after the seqlock proved the copy consistent: a mismatch is damage, never
 * a race.  AS-safe.
 */
static inline int bb__record_crc_ok(const uint8_t *rec, uint32_t len, uint32_t seq,
				    int required)
{
	const struct bb_record_hdr *h = (const struct bb_record_hdr *)(const void *)rec;
	uint32_t min = BB_RECORD_HDR_SIZE + BB_CRC_SIZE, want;
	const uint8_t *t;

	if (!(h->flags & BB_RF_CRC))
		return !required;
	if (h->flags & BB_RF_TID)
		min += 8;
	if (len < min)
		return 0;
	t = rec + len - BB_CRC_SIZE; /* stored little-endian whatever the host */
	want = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
	       (uint32_t)t[3] << 24;
	return bb__record_crc(seq, rec, len) == want;
}

/* Value bytes of a copied record: after the envelope and, with BB_RF_TID,
 * the 8-byte tid extension, up to len or, with BB_RF_CRC, to the 4-byte
 * checksum trailer.  Returns NULL if the record is too short for them. */
static inline const uint8_t *bb__record_value(const uint8_t *rec, uint32_t len,
					      int32_t *tid, size_t *vlen)
{
	const struct bb_record_hdr *h = (const struct bb_record_hdr *)(const void *)rec;
	uint32_t off = BB_RECORD_HDR_SIZE;
	uint32_t trailer = (h->flags & BB_RF_CRC) ? BB_CRC_SIZE : 0;

	if (h->flags & BB_RF_TID) {
		if (len < BB_RECORD_HDR_SIZE + 8)
			return NULL;
		memcpy(tid, rec + BB_RECORD_HDR_SIZE, sizeof(*tid));
		off += 8;
	}
	if (len < off + trailer)
		return NULL;
	*vlen = len - off - trailer;
	return rec + off;
}

#endif /* BB_RING_H */
