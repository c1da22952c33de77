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
	uint64_t tail, head; /* what the copied descriptor says is live */
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

	for (uint32_t i = 0; i < r->info.ring_count; i++) {
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
		holes[n++] = h;
	}
	qsort(holes, n, sizeof(*holes), hole_cmp);
	for (uint32_t k = 1; k < n; k++)
		if (holes[k].off - holes[k - 1].off < size)
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

	for (uint32_t i = 0; i < r->info.ring_count; i++) {
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
 * the acquire fence in bb__ring_read()).
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
	for (uint32_t i = 0; !rc && i < r->info.ring_count; i++) {
		uint64_t now;

		memcpy(&now, t + (size_t)i * r->desc_size + offsetof(struct bb_ring_desc, tail),
		       sizeof(now));
		patch_tail((struct bb_ring_desc *)(uintptr_t)bb__rdr_desc(r, r->base, i), now);
	}
	free(t);
	return rc;
}

/*
 * One ring of a live reader, as it is now: its head and tail read again
 * just before its bytes, the tail once more after them.  A writer that
 * laps the whole copy (a busy writer, a reader descheduled in the middle)
 * leaves nothing: the ring is read again, up to three times in all.
 */
static int load_ring(struct bb_reader *r, uint32_t i, bool follow)
{
	struct rring *rr = &r->rings[i];
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
		rc = bb__rdr_fetch(r, 0, r->len);
		return rc ? rc : fix_tails(r);
	}
	if (what == LOAD_WALK) {
		rc = bb__rdr_fetch(r, 0, r->table_end);
		for (uint32_t i = 0; i < r->info.ring_count && !rc; i++)
			if (!r->rings[i].bad)
				rc = load_ring(r, i, follow);
		return rc;
	}
	/* LOAD_SNAPSHOT: the header and table are in the copy (open) */
	holes = malloc(r->info.ring_count * sizeof(*holes) + 1);
	if (!holes)
		return -ENOMEM;
	n = plan_holes(r, holes);
	stop = used_end(r);
	at = r->table_end;
	for (uint32_t k = 0; k <= n && !rc; k++) {
		uint64_t end = k < n ? holes[k].off : stop;

		if (end > at)
			rc = bb__rdr_fetch(r, at, end - at);
		if (!rc && k < n) {
			rc = copy_live(r, holes[k].off, holes[k].tail, holes[k].head);
			at = holes[k].off + r->info.ring_size;
		}
	}
	free(holes);
	return rc ? rc : fix_tails(r);
}

/* The message for a failed bb__rdr_load(). */
int bb__rdr_load_failed(char *err, size_t errlen, const char *label, int rc)
{
	if (rc == -ESTALE)
		return bb__rdr_say(err, errlen, rc, "%s: box changed size while being read", label);
	return bb__rdr_say(err, errlen, rc, "%s: %s", label, strerror(-rc));
}
