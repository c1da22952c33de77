/* SPDX-License-Identifier: MIT */
/*
 * reader_snapshot.c - bring the reader's private copy of a box up to date
 * from the box file with pread(2): at open (BB_OPEN_SNAPSHOT: once), and
 * for a live reader at every walk (each ring's live part) or save.  Each
 * copied ring's tail is raised past what the writer overwrote while it
 * was copied, so the copy holds only records that were intact.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"
#include "reader_int.h"

/* Raise a copied ring's tail to @now (a tail read after the copy), so the
 * copy excludes what the writer overwrote while we copied. */
static void patch_tail(struct bb_ring_desc *copy, uint64_t now)
{
	if (bb__pos_diff(now, copy->tail) <= 0)
		return;
	/* lapped past everything we copied: the copied ring is empty */
	copy->tail = bb__pos_diff(now, copy->head) > 0 ? copy->head : now;
}

/* Read exactly @len bytes at @off.  0, -ESTALE when the file ends before
 * (it shrank since it was measured), or -errno. */
int bb__rdr_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ESTALE;
		done += (size_t)n;
	}
	return 0;
}

/* Bytes [off, off + n) of the box file into the same place of the copy;
 * every caller's range lies below r->len (validated geometry). */
int bb__rdr_fetch(struct bb_reader *r, uint64_t off, uint64_t n)
{
	return bb__rdr_pread_all(r->fd, r->base + off, (size_t)n, off);
}

/* A ring whose live part alone a snapshot copies. */
struct hole {
	uint64_t off;        /* its data in the file */
	uint64_t len;        /* its bytes */
	uint64_t tail, head; /* what the copied descriptor says is live */
	bool segs;           /* 3.0: the segment data, copied by load_segs() */
};

static int hole_cmp(const void *a, const void *b)
{
	const struct hole *x = a, *y = b;

	return (x->off > y->off) - (x->off < y->off);
}

/* Does a copied descriptor's [tail, head] make sense for a ring of @size
 * bytes: 8-aligned, head not behind tail, less than a ring apart (the
 * seq word at head lies inside the ring's bytes as well)? */
static bool live_part_sane(uint64_t head, uint64_t tail, uint64_t size)
{
	return !((head | tail) % 8) && bb__pos_diff(head, tail) >= 0 &&
	       head - tail <= size - 8;
}

/*
 * The rings of the copied table (r->base) whose descriptor is sane enough
 * to copy only [tail, head] of: data inside the box past the table, page
 * aligned, not overlapping another such ring nor the state table or the
 * module area, head and tail 8-aligned and at most a ring apart.  Anything
 * else is copied whole and judged by bb__rdr_setup() and the walk as before.
 * Returns the count (sorted by offset).
 */
static uint32_t plan_holes(const struct bb_reader *r, struct hole *holes)
{
	uint64_t size = r->info.ring_size, len = r->len;
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->table_rings; i++) {
		const struct bb_ring_desc *d = bb__rdr_desc(r, r->base, i);
		struct hole h;

		/* our private copy: plain loads */
		memcpy(&h.off, &d->data_offset, sizeof(h.off));
		memcpy(&h.head, &d->head, sizeof(h.head));
		memcpy(&h.tail, &d->tail, sizeof(h.tail));
		if (h.off < r->table_end || h.off > len || size > len - h.off ||
		    h.off % r->page_size || !live_part_sane(h.head, h.tail, size))
			continue;
		/* a (crafted) state table or module area inside ring data */
		if ((r->info.state_slot_count &&
		     r->state_off < h.off + size &&
		     h.off < r->state_off + (uint64_t)r->info.state_slot_count * r->slot_size) ||
		    (r->info.modules_size &&
		     r->modules_off < h.off + size && h.off < r->modules_off + r->info.modules_size))
			continue;
		h.len = size;
		h.segs = false;
		holes[n++] = h;
	}
	if (r->seg_count) /* validated: inside the box, after every table */
		holes[n++] = (struct hole){ .off = r->seg_data_off, .segs = true,
					    .len = (uint64_t)r->seg_count * r->seg_size };
	qsort(holes, n, sizeof(*holes), hole_cmp);
	for (uint32_t k = 1; k < n; k++)
		if (holes[k].off - holes[k - 1].off < holes[k - 1].len)
			return 0; /* overlapping descriptors: copy everything */
	return n;
}

/*
 * Where the last byte anything reads lies: the end of the last ring whose
 * descriptor places it inside the box, or of the state table or module
 * area.  A snapshot copies nothing past it (a header may claim any
 * box_size, and a sparse file of that size costs nothing to make).
 */
static uint64_t used_end(const struct bb_reader *r)
{
	uint64_t size = r->info.ring_size, len = r->len, end = r->table_end;

	for (uint32_t i = 0; i < r->table_rings; i++) {
		uint64_t off;

		memcpy(&off, &bb__rdr_desc(r, r->base, i)->data_offset, sizeof(off));
		if (off >= r->table_end && off <= len && size <= len - off && off + size > end)
			end = off + size;
	}
	if (r->info.state_slot_count &&
	    r->state_off + (uint64_t)r->info.state_slot_count * r->slot_size > end)
		end = r->state_off + (uint64_t)r->info.state_slot_count * r->slot_size;
	if (r->info.modules_size && r->modules_off + r->info.modules_size > end)
		end = r->modules_off + r->info.modules_size;
	if (r->seg_count && r->seg_data_off + (uint64_t)r->seg_count * r->seg_size > end)
		end = r->seg_data_off + (uint64_t)r->seg_count * r->seg_size;
	return end;
}

/* Copy ring positions [from, head + 8) of the ring whose data lies at @off:
 * its records and the seq word at head (a torn record's busy seq),
 * wrapping around the ring's end.  head - from <= ring_size - 8. */
static int copy_live(struct bb_reader *r, uint64_t off, uint64_t from, uint64_t head)
{
	uint64_t size = r->info.ring_size, at = from & (size - 1);
	uint64_t n = head - from + 8, first = n < size - at ? n : size - at;
	int rc;

	rc = bb__rdr_fetch(r, off + at, first);
	if (!rc && n > first)
		rc = bb__rdr_fetch(r, off, n - first);
	return rc;
}

/*
 * Re-read every ring's tail after the ring bytes were copied, and raise
 * the copy's tail past whatever the live writer overwrote during the copy.
 * The tails come from a later read(2) than the ring bytes: the kernel
 * copies from the shared pages in program order of our calls, a system
 * call is a full barrier on every Linux architecture, and the acquire
 * fence below orders the two in our program as well.  It pairs with the
 * writer's release fence after it publishes a new tail and before it
 * overwrites the bytes that tail released (bb__ring_make_room()): if our copy
 * holds any byte of an overwrite, the new tail is seen here (the role of
 * the acquire fence in bb__extent_read()).
 */
static int fix_tails(struct bb_reader *r)
{
	size_t tlen = (size_t)(r->table_end - r->table_off);
	uint8_t *t = malloc(tlen);
	int rc;

	if (!t)
		return -ENOMEM;
	BB__FENCE_ACQUIRE();
	rc = bb__rdr_pread_all(r->fd, t, tlen, r->table_off);
	for (uint32_t i = 0; !rc && i < r->table_rings; i++) {
		uint64_t now;

		memcpy(&now, t + (size_t)i * r->desc_size + offsetof(struct bb_ring_desc, tail),
		       sizeof(now));
		patch_tail((struct bb_ring_desc *)(uintptr_t)bb__rdr_desc(r, r->base, i), now);
	}
	free(t);
	return rc;
}

/* ---- segments (3.0, FORMAT.md §13 "Reading a log") ------------------- */

/* The owner words of segments [from, to) in the box file now, into @own
 * (indexed from 0 = segment @from), through @t (to - from descriptors). */
static int read_owns(struct bb_reader *r, uint32_t from, uint32_t to, uint8_t *t,
		     uint64_t *own)
{
	int rc = bb__rdr_pread_all(r->fd, t, (size_t)(to - from) * BB_SEG_DESC_SIZE,
				   r->seg_off + (uint64_t)from * BB_SEG_DESC_SIZE);

	for (uint32_t i = 0; !rc && i < to - from; i++)
		memcpy(&own[i], t + (size_t)i * BB_SEG_DESC_SIZE +
		       offsetof(struct bb_seg_desc, own), sizeof(own[i]));
	return rc;
}

/* The copy of segment descriptor @i, writable (our copy, not the box). */
static struct bb_seg_desc *seg_copy(struct bb_reader *r, uint32_t i)
{
	return (struct bb_seg_desc *)(uintptr_t)bb__rdr_seg(r, r->base, i);
}

/* Where a FOLLOW walk resumes in the log @log (*from), if it does. */
static bool log_next(const struct bb_reader *r, uint32_t log, uint64_t *from)
{
	for (size_t lo = 0, hi = r->nlogs; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->logs[mid].log == log) {
			const struct rstream *rr = &r->streams[r->logs[mid].stream];

			*from = rr->next;
			return rr->has_next;
		}
		if (r->logs[mid].log < log)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Copy segment @i's live part as its descriptor in the copy gives it:
 * [start, head + 8) (the seq word at head, for a torn record), from where
 * a FOLLOW walk resumes with @follow. */
static int copy_seg(struct bb_reader *r, uint32_t i, bool follow)
{
	const struct bb_seg_desc *d = seg_copy(r, i);
	uint64_t own = d->own, start = d->start, head = d->head, from = start, n;
	uint32_t st = BB_SEG_STATE(own);

	if ((st != BB_SEG_OPEN && st != BB_SEG_SEALED) || (start | head) % 8 ||
	    bb__pos_diff(head, start) < 0 || head - start > r->seg_size)
		return 0; /* nothing of a log in it (the walk judges the rest) */
	if (!(follow && log_next(r, BB_SEG_LOG(own), &from) && bb__pos_diff(from, start) > 0 &&
	      bb__pos_diff(head, from) >= 0 && !(from % 8)))
		from = start;   /* else older bytes were walked already */
	n = r->seg_size - (from - start);
	if (head - from + 8 < n)
		n = head - from + 8;
	return bb__rdr_fetch(r, r->seg_data_off + (uint64_t)i * r->seg_size + (from - start), n);
}

/* Segments per read of owner words (a few KiB of descriptors). */
#define SEG_WINDOW 32u

/* Every segment's owner word now, into @own (seg_count of them). */
static int read_all_owns(struct bb_reader *r, uint64_t *own)
{
	uint8_t t[SEG_WINDOW * BB_SEG_DESC_SIZE];
	int rc = 0;

	for (uint32_t w0 = 0; w0 < r->seg_count && !rc; w0 += SEG_WINDOW) {
		uint32_t w1 = r->seg_count - w0 < SEG_WINDOW ? r->seg_count : w0 + SEG_WINDOW;

		rc = read_owns(r, w0, w1, t, own + w0);
	}
	return rc;
}

/* Segments in the order their bytes are copied: by log, then position. */
struct seg_order {
	uint32_t log, idx;
	uint64_t start;
};

static int seg_order_cmp(const void *a, const void *b)
{
	const struct seg_order *x = a, *y = b;

	if (x->log != y->log)
		return x->log < y->log ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* Segment @i once more, alone: its owner word (A), its descriptor (B),
 * its live part, its owner word again (C).  False when it was handed
 * over meanwhile, again. */
static int reload_seg(struct bb_reader *r, uint32_t i, bool follow, bool *same)
{
	struct bb_seg_desc *d = seg_copy(r, i);
	uint8_t t[BB_SEG_DESC_SIZE];
	uint64_t a, c;
	int rc = read_owns(r, i, i + 1, t, &a);

	/* Each fence orders our reads as in load_segments(). */
	BB__FENCE_ACQUIRE();
	if (!rc)
		rc = bb__rdr_fetch(r, r->seg_off + (uint64_t)i * BB_SEG_DESC_SIZE, BB_SEG_DESC_SIZE);
	BB__FENCE_ACQUIRE();
	if (!rc)
		rc = copy_seg(r, i, follow);
	BB__FENCE_ACQUIRE();
	if (!rc)
		rc = read_owns(r, i, i + 1, t, &c);
	*same = !rc && BB_SEG_SAME_USE(a, d->own) && BB_SEG_SAME_USE(c, d->own);
	return rc;
}

/*
 * load_segments - bring the segments of the copy up to date: every owner
 * word first (A), then the segment table into the copy (B), then of each
 * segment that holds a log its live part (copy_seg()), oldest first in
 * each log (as a thread takes its own oldest segment back first, the
 * copy keeps ahead of it, as a ring's copy does of its writer), each
 * followed by its owner word again (C).  A segment whose owner word in A
 * or C names another hand-over than in B (a thread took it while we
 * copied: its start, head and bytes may be another log's) is read once
 * more alone (reload_seg()), then, if it changed again, dropped from the
 * copy: marked CLAIMING, which every walk skips.  With @data_done (LOAD_ALL:
 * every byte was read already, after @before, its A), C only.
 *
 * The reads of A, B, the bytes and C are pread(2)s, in this order (a
 * system call is a full barrier), and the acquire fences order them in
 * our program as well.  The fence before C pairs with the release fence
 * a thread issues after its CLAIMING store and before it writes a byte
 * of the segment (bb__seg_use()): a copy holding any such byte sees the
 * new word in C.  The one after A pairs with the release store of OPEN
 * that ends a hand-over: start and head of that hand-over are then in B.
 */
static int load_segments(struct bb_reader *r, bool follow, const uint64_t *before,
			 bool data_done)
{
	uint64_t *a = malloc(r->seg_count * sizeof(*a));
	struct seg_order *order = malloc(r->seg_count * sizeof(*order));
	uint8_t t[BB_SEG_DESC_SIZE];
	uint32_t n = 0;
	int rc = a && order ? 0 : -ENOMEM;

	if (!rc && data_done)
		memcpy(a, before, r->seg_count * sizeof(*a));
	else if (!rc)
		rc = read_all_owns(r, a);
	BB__FENCE_ACQUIRE();
	if (!rc && !data_done)
		rc = bb__rdr_fetch(r, r->seg_off, (uint64_t)r->seg_count * BB_SEG_DESC_SIZE);
	for (uint32_t i = 0; !rc && i < r->seg_count; i++) {
		const struct bb_seg_desc *d = seg_copy(r, i);
		uint32_t st = BB_SEG_STATE(d->own);

		if (st == BB_SEG_OPEN || st == BB_SEG_SEALED || !BB_SEG_SAME_USE(a[i], d->own))
			order[n++] = (struct seg_order){ .log = BB_SEG_LOG(d->own), .idx = i,
							 .start = d->start };
	}
	if (n > 1)
		qsort(order, n, sizeof(*order), seg_order_cmp);
	for (uint32_t k = 0; !rc && k < n; k++) {
		uint32_t i = order[k].idx;
		struct bb_seg_desc *d = seg_copy(r, i);
		uint64_t c;
		bool same;

		BB__FENCE_ACQUIRE();
		if (!data_done && BB_SEG_SAME_USE(a[i], d->own))
			rc = copy_seg(r, i, follow);
		BB__FENCE_ACQUIRE();
		if (!rc)
			rc = read_owns(r, i, i + 1, t, &c);
		if (rc || (BB_SEG_SAME_USE(a[i], d->own) && BB_SEG_SAME_USE(c, d->own)))
			continue;
		/* handed over while we copied: once more, alone */
		same = false;
		if (!data_done)
			rc = reload_seg(r, i, follow, &same);
		if (!rc && !same)
			d->own = BB_SEG_OWN(BB_SEG_CLAIMING, BB_SEG_GEN(d->own), BB_SEG_LOG(d->own));
	}
	free(a);
	free(order);
	return rc;
}

/* load_segments() of LOAD_WALK and LOAD_SNAPSHOT (@before NULL), and of
 * LOAD_ALL, whose bytes are read (@before: the owner words read before
 * them). */
static int load_segs(struct bb_reader *r, bool follow, bool data_done, const uint64_t *before)
{
	if (!r->seg_count)
		return 0;
	return load_segments(r, follow, before, data_done);
}

/*
 * One ring of a live reader, as it is now: its head and tail read again
 * just before its bytes, the tail once more after them.  A writer that
 * laps the whole copy (a busy writer, a reader descheduled in the middle)
 * leaves nothing: the ring is read again, up to three times in all.
 */
static int load_ring(struct bb_reader *r, uint32_t i, bool follow)
{
	struct rstream *rr = &r->streams[i];
	struct bb_ring_desc *d = (struct bb_ring_desc *)(uintptr_t)bb__rdr_desc(r, r->base, i);
	uint64_t off = (uint64_t)(rr->v.data - r->base), at = (uint64_t)((uint8_t *)d - r->base);
	uint64_t ht[2], head, tail, from, now;
	bool sane;
	int rc;

	for (int tries = 0;; tries++) {
		rc = bb__rdr_pread_all(r->fd, ht, sizeof(ht), at); /* head, tail: offsets 0, 8 */
		if (rc)
			return rc;
		head = ht[0];
		tail = ht[1];
		memcpy(&d->head, &head, sizeof(head));
		memcpy(&d->tail, &tail, sizeof(tail));
		/* Orders the head loaded above before the ring bytes copied
		 * below: pairs with the writer's release store of head (FORMAT
		 * §7 step 4), which follows its records' bytes and seq words. */
		BB__FENCE_ACQUIRE();
		sane = live_part_sane(head, tail, r->info.ring_size);
		if (!sane) {
			/* a full ring (head - tail = ring_size), a tail that
			 * passed the head just read, or a scribble: the whole
			 * ring, judged by the walk */
			rc = bb__rdr_fetch(r, off, r->info.ring_size);
		} else {
			from = tail;
			if (follow && rr->has_next && bb__pos_diff(rr->next, tail) >= 0 &&
			    bb__pos_diff(head, rr->next) >= 0 && !(rr->next % 8))
				from = rr->next; /* older bytes were walked already */
			rc = copy_live(r, off, from, head);
		}
		if (rc)
			return rc;
		/* Pairs with the writer's release fence between publishing a new
		 * tail and overwriting the bytes it released (bb__ring_make_room()):
		 * if the copy holds any byte of an overwrite, the new tail is
		 * seen below and the copy's tail raised past it (fix_tails()). */
		BB__FENCE_ACQUIRE();
		rc = bb__rdr_pread_all(r->fd, &now, sizeof(now), at + offsetof(struct bb_ring_desc, tail));
		if (rc)
			return rc;
		patch_tail(d, now);
		/* again only when a writer moved the tail past all we copied */
		if (!sane || now == tail || bb__pos_diff(head, now) > 0 || tries == 2)
			return 0;
	}
}

/*
 * load - bring the copy up to date for a live reader (r->fd >= 0).  Every
 * read is bounded by r->len = min(box_size, file size) as measured at
 * open: the file's apparent size never matters after that.  A file that
 * shrank since gives -ESTALE, never a fault.  Other errors: -ENOMEM, -EIO.
 */
int bb__rdr_load(struct bb_reader *r, enum load_what what, bool follow)
{
	struct hole *holes;
	uint32_t n;
	uint64_t at, stop;
	int rc = 0;

	if (what == LOAD_ALL) {
		uint64_t *before = NULL;

		if (r->seg_count) {
			before = malloc(r->seg_count * sizeof(*before));
			rc = before ? read_all_owns(r, before) : -ENOMEM;
		}
		if (!rc)
			rc = bb__rdr_fetch(r, 0, r->len);
		if (!rc)
			rc = fix_tails(r);
		if (!rc && before)
			rc = load_segs(r, false, true, before);
		free(before);
		return rc;
	}
	if (what == LOAD_WALK) {
		rc = bb__rdr_fetch(r, 0, r->table_end);
		for (uint32_t i = 0; i < r->table_rings && !rc; i++)
			if (!r->streams[i].bad)
				rc = load_ring(r, i, follow);
		if (!rc)
			rc = load_segs(r, follow, false, NULL);
		return rc;
	}
	/* LOAD_SNAPSHOT: the header and tables are in the copy (open) */
	holes = malloc((r->table_rings + 1) * sizeof(*holes));
	if (!holes)
		return -ENOMEM;
	n = plan_holes(r, holes);
	stop = used_end(r);
	at = r->table_end;
	for (uint32_t k = 0; k <= n && !rc; k++) {
		uint64_t end = k < n ? holes[k].off : stop;

		if (end > at)
			rc = bb__rdr_fetch(r, at, end - at);
		if (!rc && k < n && !holes[k].segs)
			rc = copy_live(r, holes[k].off, holes[k].tail, holes[k].head);
		if (k < n)
			at = holes[k].off + holes[k].len;
	}
	free(holes);
	if (!rc)
		rc = fix_tails(r);
	if (!rc)
		rc = load_segs(r, false, false, NULL);
	/* the areas again, in case a (crafted) header put one inside the
	 * segment data, whose dead bytes the copy left as zeros */
	if (!rc && r->seg_count && r->info.state_slot_count)
		rc = bb__rdr_fetch(r, r->state_off, (uint64_t)r->info.state_slot_count * r->slot_size);
	if (!rc && r->seg_count && r->info.modules_size)
		rc = bb__rdr_fetch(r, r->modules_off, r->info.modules_size);
	return rc;
}

/* The message for a failed bb__rdr_load(). */
int bb__rdr_load_failed(char *err, size_t errlen, const char *label, int rc)
{
	if (rc == -ESTALE)
		return bb__rdr_say(err, errlen, rc, "%s: box changed size while being read", label);
	return bb__rdr_say(err, errlen, rc, "%s: %s", label, strerror(-rc));
}
