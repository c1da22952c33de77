/* SPDX-License-Identifier: MIT */
/*
 * reader.c - open, validate and walk a box from outside its owner
 * (include/blackbox/reader.h, DESIGN §4 and §6).
 *
 * Trust model: every byte of the box is untrusted.  The header is copied
 * once and validated field by field; the geometry the walk relies on (ring
 * count, sizes, table and data offsets) is taken from that validated copy
 * and cached, never re-read from a live mapping that could change under
 * us.  Only head, tail, seq words, descriptor names/tids and the record
 * bytes are read live, and every use of them is masked into the ring or
 * bounds-checked.  Every loop is bounded by the ring size or the file size.
 *
 * One read mechanism: the reader never maps a box.  A box is a file that
 * its owner (any local user, for a box in /dev/shm) can truncate at any
 * moment, and a mapping of a truncated file raises SIGBUS on access,
 * killing the reader.  Every byte is read with pread(2) into private
 * memory of min(box_size, file size) bytes, so a truncation is a short
 * read and a clean error (-ESTALE, "changed size while being read"), and
 * no reader's memory or work follows a file's apparent size.  A snapshot
 * (BB_OPEN_SNAPSHOT, and every memory copy) is read once at open and never
 * changes; a live reader reads the header and ring table at open and
 * again, with the part of each ring it needs, at every walk, crash, state,
 * module, save or data call.  The seqlock protocols of FORMAT.md §8 and
 * §11 then run on pread copies: a system call is a full barrier, and the
 * copies are fenced besides (see load() and copy_seqlocked()).
 *
 * Counting conventions (documented in the report of a walk, see
 * bb_ring_stats): "overwritten" counts events, not records: one per resync
 * after the writer lapped us inside a walk, and one per gap between two
 * BB_WALK_FOLLOW walks (the records lost in a gap cannot be counted without
 * reading them).  A torn record is counted once per head, however often
 * the reader walks.  "corrupt" counts one per resync after a record that
 * failed validation (plus one for an impossible head/tail pair), and
 * "skipped_bytes" the bytes passed over to find the next valid record.
 */
#include <byteswap.h>
#include <stddef.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/reader.h>

#include "barrier.h"
#include "clock.h"
#include "crc32c.h"
#include "internal.h"
#include "ring.h"
#include "text.h"

struct rring {
	struct bb__ring_view v;
	struct bb_ring_stats st;
	uint64_t next;       /* where a BB_WALK_FOLLOW walk resumes */
	uint64_t end;        /* where the current walk's collection ended */
	uint64_t torn_head;  /* head at which a torn record was counted */
	bool has_next, torn_counted;
	bool bad;            /* descriptor rejected at open: never read */
};

/*
 * A record collected during a walk (48 bytes: a million-record box makes
 * a million of them).  Its value lives in the reader's copy of the box
 * (nothing changes it during a walk) unless the record wraps around its
 * ring's end, else in the value arena.
 */
struct ent {
	uint64_t pos, ts;
	size_t voff;         /* value: offset in r->base (inbox) or r->vals */
	uint32_t ring;
	int32_t tid;
	uint32_t name;       /* thread name: index in r->names */
	uint32_t stride;     /* the record's bytes in the ring: next = pos + stride */
	uint16_t vlen;       /* < BB_RECORD_MAX */
	uint8_t tag, flags;
	bool inbox;          /* voff is in the box, not the arena */
	bool skip;           /* important copy whose original is delivered */
	bool copy;           /* from the important ring, shown */
};

/* An important record's identity (FORMAT §11): thread and raw timestamp. */
struct ikey {
	uint64_t ts;
	int32_t tid;
};

struct bb_reader {
	struct bb_box_info info;
	struct bb_header clk;  /* validated header copy: the clock fields convert
				  timestamps (clock.h) */
	uint8_t *base;         /* private copy of the box (never a file mapping) */
	size_t len;            /* its bytes: min(box_size, file size) */
	int fd;                /* live reader: the box file, re-read by load(); else -1 */
	bool anon;             /* base is private anonymous memory (munmap), else malloc'd */
	uint64_t table_off;
	uint64_t table_end;    /* end of the ring table */
	uint64_t limit;        /* min(box_size, file size): every offset lies below */
	uint32_t desc_size, page_size;
	struct rring *rings;
	uint8_t *rec;          /* one record, max_record bytes */
	struct ent *ents;      /* records collected by the current walk */
	size_t nents, cents;
	uint8_t *vals;         /* their values (those not read in place) */
	size_t nvals, cvals;
	char (*names)[16];     /* thread names of the walk's records; [0] is "" */
	size_t nnames, cnames;
	struct ikey *shown;    /* BB_WALK_FOLLOW: important records delivered */
	size_t nshown, cshown;
	uint64_t state_off, modules_off; /* validated areas (count/size 0: none) */
	uint32_t slot_size;
	uint8_t *slot;         /* one state slot copy */
	uint8_t *modbuf;       /* module area copy */
	struct bb_module *mods;
	char *modstr;          /* NUL-terminated module paths */
};

__attribute__((format(printf, 4, 5)))
static int say(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static const struct bb_ring_desc *desc_at(const struct bb_reader *r, const uint8_t *base,
					  uint32_t i)
{
	return (const struct bb_ring_desc *)(const void *)
		(base + r->table_off + (uint64_t)i * r->desc_size);
}

/* ---- header validation -------------------------------------------------- */

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* Copy a fixed-size string field, forcing NUL termination. */
static void copy_str(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n - 1] = '\0';
}

/*
 * check_areas - bounds-check the 2.0 state table and module area against
 * the @lim bytes the box really has (overflow-safe: each size is compared
 * with lim - offset after offset <= lim).  A bad area is disabled with a
 * precise message in info, never fatal: the rings are still worth reading.
 */
static void check_areas(struct bb_reader *r, const struct bb_header *h, uint64_t lim,
			uint64_t table_len)
{
	struct bb_box_info *in = &r->info;
	uint64_t off = h->state_table_offset, len;

	in->state_slot_count = 0;
	in->modules_size = 0;
	in->state_problem[0] = in->modules_problem[0] = '\0';
	r->state_off = r->modules_off = 0;
	r->slot_size = 0;
	if (h->state_slot_count) {
		len = (uint64_t)h->state_slot_count * h->state_slot_size; /* < 2^64 */
		if (h->state_slot_size < 64 || h->state_slot_size % 8 ||
		    h->state_slot_size > BB_RECORD_MAX + 8)
			snprintf(in->state_problem, sizeof(in->state_problem),
				 "state slot size %" PRIu32 " is not a multiple of 8 in [64, %u]",
				 h->state_slot_size, BB_RECORD_MAX + 8);
		else if (off < h->header_size || off % 8 || off > lim || len > lim - off)
			snprintf(in->state_problem, sizeof(in->state_problem),
				 "state table [%" PRIu64 ", +%" PRIu64 ") lies outside the %"
				 PRIu64 "-byte box or overlaps the header", off, len, lim);
		else if (off < h->ring_table_offset + table_len &&
			 h->ring_table_offset < off + len)
			snprintf(in->state_problem, sizeof(in->state_problem),
				 "state table [%" PRIu64 ", +%" PRIu64 ") overlaps the ring table",
				 off, len);
		else {
			in->state_slot_count = h->state_slot_count;
			r->slot_size = h->state_slot_size;
			r->state_off = off;
		}
	}
	off = h->modules_offset;
	len = h->modules_size;
	if (len) {
		if (len < sizeof(struct bb_modules_hdr) + 1)
			snprintf(in->modules_problem, sizeof(in->modules_problem),
				 "module area of %" PRIu64 " bytes is smaller than its header", len);
		else if (off < h->header_size || off % 8 || off > lim || len > lim - off)
			snprintf(in->modules_problem, sizeof(in->modules_problem),
				 "module area [%" PRIu64 ", +%" PRIu64 ") lies outside the %"
				 PRIu64 "-byte box or overlaps the header", off, len, lim);
		else {
			in->modules_size = (uint32_t)len;
			r->modules_off = off;
		}
	}
}

/*
 * check_header - validate every field of a header copy against the
 * @size bytes available; on success fill the static part of @info and the
 * table geometry of @r.
 */
static int check_header(struct bb_reader *r, const struct bb_header *h, uint64_t size,
			const char *label, char *err, size_t errlen)
{
	struct bb_box_info *in = &r->info;
	uint64_t max_rec, table_len, lim;

	if (h->magic == 0)
		return say(err, errlen, -ENODATA,
			   "%s: no magic yet (a box still being created, or not a box)", label);
	if (h->magic == bswap_64(BB_MAGIC))
		return say(err, errlen, -EPFNOSUPPORT,
			   "%s: byte-swapped magic: box written with the other byte order", label);
	if (h->magic != BB_MAGIC)
		return say(err, errlen, -EBADMSG, "%s: bad magic 0x%016" PRIx64 " (not a box)",
			   label, h->magic);
	if (h->version_major > BB_FORMAT_MAJOR)
		return say(err, errlen, -EPROTONOSUPPORT,
			   "%s: format %u.%u is newer than this reader (%u.x)", label,
			   h->version_major, h->version_minor, BB_FORMAT_MAJOR);
	if (h->version_major < BB_FORMAT_MAJOR)
		/* 1.x was written only by pre-release builds (before 0.1.0) */
		return say(err, errlen, -EPROTONOSUPPORT,
			   "%s: format %u.%u is an unreleased older format (this reader reads %u.x)",
			   label, h->version_major, h->version_minor, BB_FORMAT_MAJOR);
	if (h->byte_order != BB_BYTE_ORDER_MARK)
		return say(err, errlen,
			   h->byte_order == bswap_32(BB_BYTE_ORDER_MARK) ? -EPFNOSUPPORT : -EBADMSG,
			   "%s: byte order mark 0x%08" PRIx32 " (want 0x%08" PRIx32 ")", label,
			   h->byte_order, BB_BYTE_ORDER_MARK);
	if (h->word_size != sizeof(void *))
		return say(err, errlen, -EPFNOSUPPORT,
			   "%s: written by a %u-byte-word process, this reader has %zu", label,
			   h->word_size, sizeof(void *));
	if (h->header_size != BB_HEADER_SIZE)
		return say(err, errlen, -EBADMSG, "%s: header_size %" PRIu32 " (want %u)",
			   label, h->header_size, BB_HEADER_SIZE);
	if (h->ring_desc_size != BB_RING_DESC_SIZE)
		return say(err, errlen, -EBADMSG, "%s: ring_desc_size %" PRIu32 " (want %u)",
			   label, h->ring_desc_size, BB_RING_DESC_SIZE);
	if (h->ring_count < 1 || h->ring_count > BB_RING_MAX_COUNT)
		return say(err, errlen, -EBADMSG, "%s: ring_count %" PRIu32 " is outside 1..%u",
			   label, h->ring_count, BB_RING_MAX_COUNT);
	if (!pow2(h->page_size) || h->page_size < 4096)
		return say(err, errlen, -EBADMSG,
			   "%s: page_size %" PRIu32 " is not a power of two >= 4096", label,
			   h->page_size);
	if (!pow2(h->ring_size) || h->ring_size < BB_RING_MIN_SIZE ||
	    h->ring_size > BB_RING_MAX_SIZE || h->ring_size % h->page_size)
		return say(err, errlen, -EBADMSG,
			   "%s: ring_size %" PRIu64 " is not a power of two in [%u, %" PRIu64
			   "] and a multiple of the page size", label, h->ring_size,
			   BB_RING_MIN_SIZE, BB_RING_MAX_SIZE);
	max_rec = h->ring_size < BB_RECORD_MAX ? h->ring_size : BB_RECORD_MAX;
	/* room for an envelope, a tid extension and a value (FORMAT §9.4) */
	if (h->max_record <= BB_RECORD_HDR_SIZE + 8 || h->max_record > max_rec)
		return say(err, errlen, -EBADMSG, "%s: max_record %" PRIu32 " is outside (%u, %"
			   PRIu64 "]", label, h->max_record, BB_RECORD_HDR_SIZE + 8, max_rec);
	if (h->pid <= 0)
		return say(err, errlen, -EBADMSG, "%s: owner pid %" PRId32 " is impossible",
			   label, h->pid);
	/* offsets are checked against the smaller of box_size and the file */
	lim = h->box_size < size ? h->box_size : size;
	table_len = (uint64_t)h->ring_count * h->ring_desc_size; /* < 2^18: no overflow */
	if (h->ring_table_offset < h->header_size || h->ring_table_offset % 64 ||
	    h->ring_table_offset > lim || table_len > lim - h->ring_table_offset)
		return say(err, errlen, -EBADMSG,
			   "%s: ring table [%" PRIu64 ", +%" PRIu64 ") lies outside the %" PRIu64
			   "-byte %s or overlaps the header", label, h->ring_table_offset,
			   table_len, lim, lim < size ? "box (box_size)" : "file");

	check_areas(r, h, lim, table_len);
	r->clk = *h;
	r->table_off = h->ring_table_offset;
	r->table_end = h->ring_table_offset + table_len;
	r->limit = lim;
	r->page_size = h->page_size;
	r->desc_size = h->ring_desc_size;
	in->version_major = h->version_major;
	in->version_minor = h->version_minor;
	in->box_size = h->box_size;
	in->ring_count = h->ring_count;
	in->ring_size = h->ring_size;
	in->max_record = h->max_record;
	in->pid = h->pid;
	in->uid = h->uid;
	in->starttime = h->starttime;
	in->sequence = h->sequence;
	copy_str(in->boot_id, h->boot_id, sizeof(in->boot_id));
	copy_str(in->comm, h->comm, sizeof(in->comm));
	copy_str(in->cmdline, h->cmdline, sizeof(in->cmdline));
	in->clock = h->clock;
	in->clock_requested = h->clock_requested;
	in->flags = h->flags;
	if (h->clock == BB_CLOCK_TSC) {
		in->tsc_hz = h->tsc_hz;
		in->tsc_anchor = h->tsc_anchor;
		in->tsc_mult = h->tsc_mult;
		in->tsc_shift = h->tsc_shift;
	}
	in->anchor_realtime_ns = h->anchor_realtime_ns;
	in->anchor_clock_ns = h->anchor_clock_ns;
	in->created_ns = h->created_ns;
	/* runtime fields as of this copy; refresh_info() reloads them live */
	in->state = (int)h->state;
	in->state_signal = h->state_signal;
	in->state_ns = h->state_ns;
	in->dropped_busy = h->dropped_busy;
	in->dropped_nested = h->dropped_nested;
	in->truncated = h->truncated;
	in->dropped_toobig = h->dropped_toobig;
	in->dropped_important = h->dropped_important;
	in->state_errors = h->state_errors;
	return 0;
}

/* Runtime header fields: loaded atomically (the owner updates them). */
static void refresh_info(struct bb_reader *r)
{
	struct bb_header *h = (struct bb_header *)(void *)r->base;
	struct bb_box_info *in = &r->info;

	/* Acquire pairs with the writer's release store of state (bb__atexit,
	 * bb_close): state_signal and state_ns, loaded after it, are at least
	 * as new as the state they describe (FORMAT.md §3). */
	in->state = (int)BB_LOAD_ACQUIRE(&h->state);
	in->state_signal = BB_LOAD_RELAXED(&h->state_signal);
	in->state_ns = BB_LOAD_RELAXED(&h->state_ns);
	/* Relaxed: independent counters, read for display; nothing else is
	 * read through them. */
	in->dropped_busy = BB_LOAD_RELAXED(&h->dropped_busy);
	in->dropped_nested = BB_LOAD_RELAXED(&h->dropped_nested);
	in->truncated = BB_LOAD_RELAXED(&h->truncated);
	in->dropped_toobig = BB_LOAD_RELAXED(&h->dropped_toobig);
	in->dropped_important = BB_LOAD_RELAXED(&h->dropped_important);
	in->state_errors = BB_LOAD_RELAXED(&h->state_errors);
}

static void refresh_ring(struct rring *rr)
{
	struct bb_ring_desc *d = (struct bb_ring_desc *)(uintptr_t)rr->v.desc;

	/* Relaxed: descriptive fields; a torn name is cut at 15 bytes below. */
	rr->st.tid = BB_LOAD_RELAXED(&d->tid);
	rr->st.kind = BB_LOAD_RELAXED(&d->kind);
	rr->st.state = BB_LOAD_RELAXED(&d->state);
	copy_str(rr->st.thread_name, d->thread_name, sizeof(rr->st.thread_name));
}

/*
 * setup - validate the ring table of the box at r->base (r->len bytes),
 * cache each ring's view and finish the reader.  The header was checked.
 */
static int setup(struct bb_reader *r, const char *label, char *err, size_t errlen)
{
	struct bb_box_info *in = &r->info;
	uint64_t table_end = r->table_off + (uint64_t)in->ring_count * r->desc_size;
	const char *what = r->limit < r->info.file_size ? "box (box_size)" : "file";

	for (uint32_t i = 0; i < in->ring_count; i++) {
		const struct bb_ring_desc *d = desc_at(r, r->base, i);
		uint64_t off, head, tail;

		struct rring *rr = &r->rings[i];
		char *why = rr->st.problem;
		size_t wl = sizeof(rr->st.problem);

		rr->v = (struct bb__ring_view){
			.desc = d, .size = in->ring_size, .max_record = in->max_record,
		};
		refresh_ring(rr);
		/*
		 * A descriptor that points outside the box (a scribble, FORMAT
		 * §9.5) condemns its ring only: counted corrupt once, with the
		 * reason, never read; the other rings still are.
		 */
		memcpy(&off, &d->data_offset, sizeof(off)); /* validated once, cached */
		if (off < table_end || off > r->limit || in->ring_size > r->limit - off)
			snprintf(why, wl, "data [%" PRIu64 ", +%" PRIu64 ") lies outside the %"
				 PRIu64 "-byte %s or overlaps the ring table", off,
				 in->ring_size, r->limit, what);
		else if (off % r->page_size)
			snprintf(why, wl, "data offset %" PRIu64
				 " is not a multiple of the page size %" PRIu32, off, r->page_size);
		/* rings are ring_size apart at least: one overlap test per pair */
		for (uint32_t j = 0; j < i && !why[0]; j++) {
			uint64_t o;

			if (r->rings[j].bad)
				continue;
			o = (uint64_t)(r->rings[j].v.data - r->base);
			if (bb__pos_diff(off, o) < (int64_t)in->ring_size &&
			    bb__pos_diff(o, off) < (int64_t)in->ring_size)
				snprintf(why, wl, "data at %" PRIu64 " overlaps ring %" PRIu32
					 " at %" PRIu64, off, j, o);
		}
		if (why[0]) {
			rr->bad = true;
			rr->st.corrupt = 1;
			in->rings_used++;
			continue;
		}
		rr->v.data = r->base + off;
		/* Relaxed: only counts rings that were ever written, and the
		 * bytes they hold (a ring's head and tail of our copy). */
		head = BB_LOAD_RELAXED((uint64_t *)(uintptr_t)&d->head);
		tail = BB_LOAD_RELAXED((uint64_t *)(uintptr_t)&d->tail);
		if (rr->st.state != BB_RING_FREE || head)
			in->rings_used++;
		if (!((head | tail) % 8) && bb__pos_diff(head, tail) >= 0 &&
		    head - tail <= in->ring_size)
			in->used_bytes += head - tail;
	}
	refresh_info(r);
	(void)label, (void)err, (void)errlen;
	return 0;
}

/* A reader with the geometry and info validated into @tmp. */
static struct bb_reader *reader_new(const struct bb_reader *tmp)
{
	struct bb_reader *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	*r = *tmp;
	r->fd = -1;
	r->rings = calloc(r->info.ring_count, sizeof(*r->rings));
	r->rec = malloc(r->info.max_record);
	r->slot = r->slot_size ? malloc(r->slot_size) : NULL;
	if (!r->rings || !r->rec || (r->slot_size && !r->slot)) {
		free(r->rings);
		free(r->rec);
		free(r->slot);
		free(r);
		return NULL;
	}
	return r;
}

BB_EXPORT void bb_reader_close(struct bb_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->anon)
		munmap(r->base, r->len);
	else
		free(r->base);
	free(r->rings);
	free(r->rec);
	if (r->ents)
		munmap(r->ents, r->cents * sizeof(*r->ents));
	free(r->vals);
	free(r->names);
	free(r->shown);
	free(r->slot);
	free(r->modbuf);
	free(r->mods);
	free(r->modstr);
	free(r);
}

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
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
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
static int fetch(struct bb_reader *r, uint64_t off, uint64_t n)
{
	return pread_all(r->fd, r->base + off, (size_t)n, off);
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
 * else is copied whole and judged by setup() and the walk as before.
 * Returns the count (sorted by offset).
 */
static uint32_t plan_holes(const struct bb_reader *r, struct hole *holes)
{
	uint64_t size = r->info.ring_size, len = r->len;
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->info.ring_count; i++) {
		const struct bb_ring_desc *d = desc_at(r, r->base, i);
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

		memcpy(&off, &desc_at(r, r->base, i)->data_offset, sizeof(off));
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

	rc = fetch(r, off + at, first);
	if (!rc && n > first)
		rc = fetch(r, off, n - first);
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
 * overwrites the bytes that tail released (bb__make_room()): if our copy
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
	BB_FENCE_ACQUIRE();
	rc = pread_all(r->fd, t, tlen, r->table_off);
	for (uint32_t i = 0; !rc && i < r->info.ring_count; i++) {
		uint64_t now;

		memcpy(&now, t + (size_t)i * r->desc_size + offsetof(struct bb_ring_desc, tail),
		       sizeof(now));
		patch_tail((struct bb_ring_desc *)(uintptr_t)desc_at(r, r->base, i), now);
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
	struct bb_ring_desc *d = (struct bb_ring_desc *)(uintptr_t)desc_at(r, r->base, i);
	uint64_t off = (uint64_t)(rr->v.data - r->base), at = (uint64_t)((uint8_t *)d - r->base);
	uint64_t ht[2], head, tail, from, now;
	bool sane;
	int rc;

	for (int tries = 0;; tries++) {
		rc = pread_all(r->fd, ht, sizeof(ht), at); /* head, tail: offsets 0, 8 */
		if (rc)
			return rc;
		head = ht[0];
		tail = ht[1];
		memcpy(&d->head, &head, sizeof(head));
		memcpy(&d->tail, &tail, sizeof(tail));
		/* Orders the head loaded above before the ring bytes copied
		 * below: pairs with the writer's release store of head (FORMAT
		 * §7 step 4), which follows its records' bytes and seq words. */
		BB_FENCE_ACQUIRE();
		sane = live_part_sane(head, tail, r->info.ring_size);
		if (!sane) {
			/* a full ring (head - tail = ring_size), a tail that
			 * passed the head just read, or a scribble: the whole
			 * ring, judged by the walk */
			rc = fetch(r, off, r->info.ring_size);
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
		 * tail and overwriting the bytes it released (bb__make_room()):
		 * if the copy holds any byte of an overwrite, the new tail is
		 * seen below and the copy's tail raised past it (fix_tails()). */
		BB_FENCE_ACQUIRE();
		rc = pread_all(r->fd, &now, sizeof(now), at + offsetof(struct bb_ring_desc, tail));
		if (rc)
			return rc;
		patch_tail(d, now);
		/* again only when a writer moved the tail past all we copied */
		if (!sane || now == tail || bb__pos_diff(head, now) > 0 || tries == 2)
			return 0;
	}
}

/* What load() reads from the box file into the reader's copy. */
enum load_what {
	LOAD_SNAPSHOT, /* at open, after the header and table: the rest of the
			  box up to used_end(), but of each sane ring only its
			  live part (the dead bytes read as zeros); for
			  BB_OPEN_SNAPSHOT */
	LOAD_WALK,     /* header and table again, then each ring's live part
			  (from where a follow walk resumes), load_ring(); a
			  ring whose head and tail make no sense, whole */
	LOAD_ALL,      /* every byte (bb_reader_save, bb_reader_data) */
};

/*
 * load - bring the copy up to date for a live reader (r->fd >= 0).  Every
 * read is bounded by r->len = min(box_size, file size) as measured at
 * open: the file's apparent size never matters after that.  A file that
 * shrank since gives -ESTALE, never a fault.  Other errors: -ENOMEM, -EIO.
 */
static int load(struct bb_reader *r, enum load_what what, bool follow)
{
	struct hole *holes;
	uint32_t n;
	uint64_t at, stop;
	int rc = 0;

	if (what == LOAD_ALL) {
		rc = fetch(r, 0, r->len);
		return rc ? rc : fix_tails(r);
	}
	if (what == LOAD_WALK) {
		rc = fetch(r, 0, r->table_end);
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
			rc = fetch(r, at, end - at);
		if (!rc && k < n) {
			rc = copy_live(r, holes[k].off, holes[k].tail, holes[k].head);
			at = holes[k].off + r->info.ring_size;
		}
	}
	free(holes);
	return rc ? rc : fix_tails(r);
}

/* The message for a failed load(). */
static int load_failed(char *err, size_t errlen, const char *label, int rc)
{
	if (rc == -ESTALE)
		return say(err, errlen, rc, "%s: box changed size while being read", label);
	return say(err, errlen, rc, "%s: %s", label, strerror(-rc));
}

/*
 * check_fd - everything short of reading the box: a regular file, long
 * enough, a valid header (copied to @h), owned by the header's uid, as
 * long as its header says (to within a page).  Fills @tmp (zeroed by the
 * caller) with the validated geometry and info, file identity included.
 */
static int check_fd(int fd, const char *label, unsigned flags, struct bb_reader *tmp,
		    struct bb_header *h, char *err, size_t errlen)
{
	struct bb_box_info *in = &tmp->info;
	uint64_t size, gap;
	struct stat st;
	int rc;

	if (fstat(fd, &st))
		return say(err, errlen, -errno, "%s: fstat: %s", label, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return say(err, errlen, -EISDIR, "%s: is a directory, not a box", label);
	if (!S_ISREG(st.st_mode))
		return say(err, errlen, -EINVAL,
			   "%s: not a regular file (FIFOs, sockets and devices are never read)",
			   label);
	if (st.st_size == 0)
		return say(err, errlen, -ENODATA, "%s: empty file (a box still being created?)",
			   label);
	if (st.st_size < (off_t)BB_HEADER_SIZE)
		return say(err, errlen, -ENODATA, "%s: %lld bytes, shorter than a %u-byte header",
			   label, (long long)st.st_size, BB_HEADER_SIZE);
	if ((uint64_t)st.st_size > SIZE_MAX)
		return say(err, errlen, -EFBIG, "%s: too large to read", label);
	size = (uint64_t)st.st_size;
	rc = pread_all(fd, h, sizeof(*h), 0);
	if (rc == -ESTALE)
		return say(err, errlen, rc, "%s: box changed size while being read", label);
	if (rc)
		return say(err, errlen, rc, "%s: cannot read the header: %s", label, strerror(-rc));
	rc = check_header(tmp, h, size, label, err, errlen);
	if (rc)
		return rc;
	/* A box file is exactly box_size bytes (posix_fallocate at creation,
	 * bb_reader_save for copies).  One that is not was grown or cut
	 * since: refused, so that nothing is read past what the header
	 * describes, whatever size (sparse or not) the file claims. */
	gap = size > h->box_size ? size - h->box_size : h->box_size - size;
	if (gap > h->page_size)
		return say(err, errlen, -EBADMSG,
			   "%s: the file has %" PRIu64 " bytes, its header says %" PRIu64
			   " (box_size): grown or cut after it was written, refused", label,
			   size, h->box_size);
	if (st.st_uid != h->uid && !(flags & BB_OPEN_ANY_OWNER))
		return say(err, errlen, -EPERM,
			   "%s: file owner uid %u differs from the box's uid %" PRIu32
			   " (planted file? BB_OPEN_ANY_OWNER accepts it)", label,
			   (unsigned)st.st_uid, h->uid);
	bb__strlcpy(in->path, label, sizeof(in->path));
	in->file_size = size;
	in->file_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
			    (uint64_t)st.st_mtim.tv_nsec;
	in->file_ino = st.st_ino;
	in->file_dev = st.st_dev;
	in->file_uid = st.st_uid;
	return 0;
}

/*
 * Open an fd we own (it is kept by a live reader, closed otherwise).  The
 * header validated by check_fd() is the copy the reader keeps: identity
 * and geometry never come from a later read of a file its owner may be
 * rewriting.  Then the ring table (and with BB_OPEN_SNAPSHOT the rest).
 */
static int open_owned_fd(int fd, const char *label, unsigned flags,
			 struct bb_reader **out, char *err, size_t errlen)
{
	struct bb_reader tmp = { 0 }, *r = NULL;
	struct bb_header h;
	void *m;
	int rc;

	*out = NULL;
	rc = check_fd(fd, label, flags, &tmp, &h, err, errlen);
	if (rc)
		goto fail;
	r = reader_new(&tmp);
	if (!r) {
		rc = say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
	/*
	 * Private anonymous memory rather than malloc(): a box is tens or
	 * hundreds of MiB, and with 4 KiB pages a copy spends more time
	 * taking (and zeroing) one page fault per page than copying.
	 * Transparent huge pages take one fault per 2 MiB; madvise() failing
	 * (THP disabled, old kernel) only costs that speed.  MAP_NORESERVE:
	 * a live reader touches only the pages it reads.
	 */
	r->len = (size_t)r->limit;
	m = mmap(NULL, r->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		rc = say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
#ifdef MADV_HUGEPAGE
	(void)madvise(m, r->len, MADV_HUGEPAGE);
#endif
	r->base = m;
	r->anon = true;
	r->fd = fd;
	fd = -1;
	memcpy(r->base, &h, sizeof(h));
	rc = fetch(r, BB_HEADER_SIZE, r->table_end - BB_HEADER_SIZE);
	if (!rc && (flags & BB_OPEN_SNAPSHOT))
		rc = load(r, LOAD_SNAPSHOT, false);
	if (rc) {
		rc = load_failed(err, errlen, label, rc);
		goto fail;
	}
	if (flags & BB_OPEN_SNAPSHOT) { /* read once: nothing is re-read */
		close(r->fd);
		r->fd = -1;
	}
	rc = setup(r, label, err, errlen);
	if (rc)
		goto fail;
	*out = r;
	return 0;
fail:
	bb_reader_close(r);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* openat() as FORMAT §9.1 says, with a precise message.  fd or -errno. */
static int open_nofollow(int dirfd, const char *name, const char *label, char *err,
			 size_t errlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int e = errno;

	if (fd >= 0)
		return fd;
	if (e == ELOOP)
		return say(err, errlen, -ELOOP, "%s: is a symbolic link (never followed)", label);
	if (e == ENOENT)
		return say(err, errlen, -ENOENT, "%s: no such file", label);
	if (e == EACCES)
		return say(err, errlen, -EACCES, "%s: permission denied", label);
	return say(err, errlen, -e, "%s: %s", label, strerror(e));
}

static int open_at(int dirfd, const char *name, const char *label, unsigned flags,
		   struct bb_reader **out, char *err, size_t errlen)
{
	int fd;

	*out = NULL;
	fd = open_nofollow(dirfd, name, label, err, errlen);
	if (fd < 0)
		return fd;
	return open_owned_fd(fd, label, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_open_path(const char *path, unsigned flags,
				  struct bb_reader **out, char *err, size_t errlen)
{
	if (!path || !out)
		return say(err, errlen, -EINVAL, "no path");
	return open_at(AT_FDCWD, path, path, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_openat(int dirfd, const char *name, unsigned flags,
			       struct bb_reader **out, char *err, size_t errlen)
{
	if (!name || !out)
		return say(err, errlen, -EINVAL, "no name");
	return open_at(dirfd, name, name, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_open_fd(int fd, const char *label, unsigned flags,
				struct bb_reader **out, char *err, size_t errlen)
{
	int dup_fd;

	if (!label)
		label = "<fd>";
	if (!out)
		return say(err, errlen, -EINVAL, "%s: no reader pointer", label);
	*out = NULL;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return say(err, errlen, -errno, "%s: %s", label, strerror(errno));
	return open_owned_fd(dup_fd, label, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_open_mem(const void *buf, size_t len, unsigned flags,
				 struct bb_reader **out, char *err, size_t errlen)
{
	static const char label[] = "<memory>";
	struct bb_reader tmp = { 0 }, *r;
	struct bb_header h;
	int rc;

	if (!out)
		return say(err, errlen, -EINVAL, "%s: no reader pointer", label);
	*out = NULL;
	if (!buf || len < BB_HEADER_SIZE)
		return say(err, errlen, -ENODATA, "%s: %zu bytes, shorter than a %u-byte header",
			   label, buf ? len : 0, BB_HEADER_SIZE);
	memcpy(&h, buf, sizeof(h));
	rc = check_header(&tmp, &h, len, label, err, errlen);
	if (rc)
		return rc;
	r = reader_new(&tmp);
	if (!r || !(r->base = malloc(len))) {
		bb_reader_close(r);
		return say(err, errlen, -ENOMEM, "%s: out of memory", label);
	}
	memcpy(r->base, buf, len);
	r->len = len;
	bb__strlcpy(r->info.path, label, sizeof(r->info.path));
	r->info.file_size = len;
	rc = setup(r, label, err, errlen);
	if (rc) {
		bb_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

BB_EXPORT const struct bb_box_info *bb_reader_info(const struct bb_reader *r)
{
	return &r->info;
}

BB_EXPORT const void *bb_reader_data(const struct bb_reader *r, size_t *len)
{
	if (len)
		*len = 0;
	/* A live reader reads every byte again (the reader is the caller's,
	 * only its copy changes: the cast is to keep the API's const). */
	if (r->fd >= 0 && load((struct bb_reader *)(uintptr_t)r, LOAD_ALL, false))
		return NULL;
	if (len)
		*len = r->len;
	return r->base;
}

/* ---- liveness ------------------------------------------------------------ */

/* Read a small /proc file, NUL-terminated.  Returns bytes or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len - 1) {
		ssize_t n = read(fd, buf + done, len - 1 - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	buf[done] = '\0';
	return (ssize_t)done;
}

/* Field 22 of /proc/<pid>/stat.  0, -ESRCH or -EINVAL. */
static int proc_starttime(pid_t pid, uint64_t *st)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	/* comm may hold ')' and spaces: fields resume after the LAST ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		if (field == 22) {
			char *end;

			errno = 0;
			*st = strtoull(p, &end, 10);
			return end == p || errno ? -EINVAL : 0;
		}
		while (*p && *p != ' ')
			p++;
	}
	return -EINVAL;
}

/* Does /proc/<pid>/maps name the file dev:ino?  1, 0 or -errno. */
static int maps_has(pid_t pid, uint64_t dev, uint64_t ino)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		unsigned long long i;

		/* start-end perms offset MAJ:MIN inode path (hex dev, decimal inode) */
		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &i) == 3)
			found = maj == major(dev) && min == minor(dev) && i == ino;
	}
	if (!found && ferror(f))
		found = -EIO;
	free(line);
	fclose(f);
	return found;
}

/* Alive by pid + start time and, when unreadable maps do not prevent it,
 * by the mapping of the file. */
BB_EXPORT bool bb_pid_maps_file(pid_t pid, uint64_t starttime, uint64_t dev, uint64_t ino)
{
	uint64_t st;
	int m;

	if (pid <= 0 || proc_starttime(pid, &st) || st != starttime)
		return false;
	m = maps_has(pid, dev, ino);
	if (m < 0) /* another user's process: pid + start time must do */
		return m == -EACCES || m == -EPERM;
	return m == 1;
}

static int liveness_of(const struct bb_box_info *info, int state)
{
	char boot[64];
	bool alive = false, boot_ok = true;
	uint64_t st;

	if (read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) > 0) {
		boot[strcspn(boot, "\n")] = '\0';
		boot_ok = !strncmp(boot, info->boot_id, sizeof(info->boot_id));
	}
	if (boot_ok && info->pid > 0) {
		if (info->file_dev || info->file_ino)
			alive = bb_pid_maps_file(info->pid, info->starttime, info->file_dev,
						 info->file_ino);
		else
			alive = !proc_starttime(info->pid, &st) && st == info->starttime;
	}
	if (alive)
		return BB_OWNER_ALIVE;
	switch (state) {
	case BB_STATE_EXITED:  return BB_OWNER_EXITED;
	case BB_STATE_CRASHED: return BB_OWNER_CRASHED;
	case BB_STATE_CLOSED:  return BB_OWNER_CLOSED;
	default:               return BB_OWNER_ORPHANED;
	}
}

BB_EXPORT int bb_owner_liveness(const struct bb_box_info *info)
{
	if (!info)
		return -EINVAL;
	return liveness_of(info, info->state);
}

BB_EXPORT int bb_reader_liveness(const struct bb_reader *r)
{
	const struct bb_header *h;
	uint32_t state;

	if (!r)
		return -EINVAL;
	h = (const struct bb_header *)(const void *)r->base;
	/* Relaxed: a state word read for a decision, nothing read through it.
	 * A live reader takes the file's current word (one 4-byte read). */
	state = BB_LOAD_RELAXED((uint32_t *)(uintptr_t)&h->state);
	if (r->fd >= 0)
		(void)pread_all(r->fd, &state, sizeof(state), offsetof(struct bb_header, state));
	return liveness_of(&r->info, (int)state);
}

/* ---- finding boxes: by header, never by name ---------------------------- */

/*
 * A file name in /dev/shm proves nothing: any user can create any name
 * (squatting one bb_init() wanted, or naming a copy after another
 * process).  What a reader can trust is the file's owner (nobody can
 * create a file owned by another uid) and, while the process runs, what
 * /proc says about it.  So every entry under BB_NAME_PREFIX is opened and
 * judged by its header: pid, start time and boot id say which process it
 * claims, the file owner who made that claim.
 */

/* What /proc says about a running process. */
struct proc_facts {
	bool alive;
	uint64_t starttime;
	uint32_t uids[4];      /* real, effective, saved, file system */
	bool have_uids;
};

static void proc_facts(pid_t pid, struct proc_facts *pf)
{
	char path[64], buf[4096], *u;

	memset(pf, 0, sizeof(*pf));
	if (pid <= 0 || proc_starttime(pid, &pf->starttime))
		return;
	pf->alive = true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_small(path, buf, sizeof(buf)) <= 0 || !(u = strstr(buf, "\nUid:")))
		return;
	pf->have_uids = sscanf(u + 5, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32,
			       &pf->uids[0], &pf->uids[1], &pf->uids[2], &pf->uids[3]) == 4;
}

static bool is_proc_uid(const struct proc_facts *pf, uint32_t uid)
{
	for (int i = 0; pf->have_uids && i < 4; i++)
		if (pf->uids[i] == uid)
			return true;
	return false;
}

/* Newer first: created_ns, then sequence, then name (a total order). */
static bool entry_newer(const struct bb_box_entry *a, const struct bb_box_entry *b)
{
	if (a->info.created_ns != b->info.created_ns)
		return a->info.created_ns > b->info.created_ns;
	if (a->info.sequence != b->info.sequence)
		return a->info.sequence > b->info.sequence;
	return strcmp(a->name, b->name) > 0;
}

/* By pid, then creation time, then sequence, then name. */
static int entry_cmp(const void *x, const void *y)
{
	const struct bb_box_entry *a = x, *b = y;

	if (a->error != b->error)
		return a->error ? 1 : -1; /* boxes first */
	if (a->info.pid != b->info.pid)
		return a->info.pid < b->info.pid ? -1 : 1;
	if (a->info.created_ns != b->info.created_ns)
		return a->info.created_ns < b->info.created_ns ? -1 : 1;
	if (a->info.sequence != b->info.sequence)
		return a->info.sequence < b->info.sequence ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* A candidate of bb_reader_open_pid(): a box claiming the pid whose file
 * owner is the uid its header names. */
static bool candidate(const struct bb_box_entry *e, pid_t pid)
{
	return !e->error && e->info.pid == pid && !(e->flags & BB_BOX_UID_MISMATCH);
}

/*
 * choose - the box of @pid among @v (@n entries, from scan()), marking the
 * claims that lose with BB_BOX_FOREIGN or BB_BOX_AMBIGUOUS.  Returns its
 * index, -ESRCH (no candidate) or -ENOTUNIQ (boxes of several owners claim
 * the pid and nothing tells which is the process's).
 *
 * While the process runs (same pid, start time and boot), the box it maps
 * is its box: nobody else can make it map a file.  When its maps cannot be
 * read (another user's process, no privilege), the boxes owned by one of
 * its uids are.  Otherwise, and once it is gone, the newest claim counts
 * only if every claim comes from one owner: a user can copy a box of its
 * own and patch pid, start time and creation time, and the file owner is
 * then the only thing telling the two apart.
 */
static int choose(struct bb_box_entry *v, size_t n, pid_t pid)
{
	struct proc_facts pf;
	char boot[64] = "";
	int64_t best = -1;
	bool several = false, have_boot;
	uint32_t owner = 0;

	proc_facts(pid, &pf);
	have_boot = read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) > 0;
	boot[strcspn(boot, "\n")] = '\0';
	if (pf.alive) {
		for (size_t i = 0; i < n; i++) {
			struct bb_box_entry *e = &v[i];
			int m;

			if (!candidate(e, pid) || e->info.starttime != pf.starttime ||
			    (have_boot && strncmp(boot, e->info.boot_id, sizeof(e->info.boot_id))))
				continue;
			/* its maps, or (unreadable: another user's process) its uids */
			m = maps_has(pid, e->info.file_dev, e->info.file_ino);
			if (m < 0 ? !is_proc_uid(&pf, e->info.file_uid) : m != 1)
				continue;
			if (best < 0 || entry_newer(e, &v[best]))
				best = (int64_t)i;
		}
		if (best >= 0) {
			/* other claims of this very process, by another owner */
			for (size_t i = 0; i < n; i++)
				if (candidate(&v[i], pid) && (int64_t)i != best &&
				    v[i].info.starttime == pf.starttime &&
				    v[i].info.file_uid != v[best].info.file_uid)
					v[i].flags |= BB_BOX_FOREIGN;
			v[best].flags |= BB_BOX_CHOSEN;
			return (int)best;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!candidate(&v[i], pid))
			continue;
		if (best < 0)
			owner = v[i].info.file_uid;
		else if (v[i].info.file_uid != owner)
			several = true;
		if (best < 0 || entry_newer(&v[i], &v[best]))
			best = (int64_t)i;
	}
	if (best < 0)
		return -ESRCH;
	if (several) {
		for (size_t i = 0; i < n; i++)
			if (candidate(&v[i], pid))
				v[i].flags |= BB_BOX_AMBIGUOUS;
		return -ENOTUNIQ;
	}
	v[best].flags |= BB_BOX_CHOSEN;
	return (int)best;
}

/* Every entry of the directory @d under BB_NAME_PREFIX, opened and judged
 * (any owner accepted, mismatches flagged).  0 or -ENOMEM. */
static int scan_entries(DIR *d, const char *dir, struct bb_box_entry **out, size_t *count)
{
	size_t plen = strlen(BB_NAME_PREFIX), n = 0, cap = 0;
	struct bb_box_entry *v = NULL;
	struct dirent *de;

	for (;;) {
		struct bb_box_entry *e;
		struct bb_reader *r;
		char label[4096];
		int fd;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (strncmp(de->d_name, BB_NAME_PREFIX, plen) ||
		    strlen(de->d_name) >= sizeof(v->name))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct bb_box_entry *nv = realloc(v, nc * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		e = &v[n++];
		memset(e, 0, sizeof(*e));
		bb__strlcpy(e->name, de->d_name, sizeof(e->name));
		snprintf(label, sizeof(label), "%s/%s", dir, de->d_name);
		fd = open_nofollow(dirfd(d), de->d_name, label, e->problem, sizeof(e->problem));
		if (fd < 0) {
			e->error = fd;
			continue;
		}
		/* header and ring table only: nothing else is read here */
		e->error = open_owned_fd(fd, label, BB_OPEN_ANY_OWNER, &r, e->problem,
					 sizeof(e->problem));
		if (e->error)
			continue;
		e->info = *bb_reader_info(r);
		e->liveness = bb_reader_liveness(r);
		bb_reader_close(r);
		if (e->info.file_uid != e->info.uid)
			e->flags |= BB_BOX_UID_MISMATCH;
	}
	if (v)
		qsort(v, n, sizeof(*v), entry_cmp);
	/* judge every pid's claims once */
	for (size_t i = 0; i < n; i++)
		if (!v[i].error && (i == 0 || v[i - 1].error || v[i - 1].info.pid != v[i].info.pid))
			(void)choose(v, n, v[i].info.pid);
	*out = v;
	*count = n;
	return 0;
}

BB_EXPORT int bb_reader_scan(const char *dir, struct bb_box_entry **entries, size_t *count,
			     char *err, size_t errlen)
{
	DIR *d;
	int rc;

	if (!entries || !count)
		return say(err, errlen, -EINVAL, "no output");
	*entries = NULL;
	*count = 0;
	if (!dir)
		dir = BB_DEFAULT_DIR;
	d = opendir(dir);
	if (!d)
		return say(err, errlen, -errno, "%s: cannot open directory: %s", dir,
			   strerror(errno));
	rc = scan_entries(d, dir, entries, count);
	closedir(d);
	if (rc)
		return say(err, errlen, rc, "%s: out of memory", dir);
	return 0;
}

BB_EXPORT void bb_reader_scan_free(struct bb_box_entry *entries)
{
	free(entries);
}

/* "2026-11-21T13:45:01Z" */
static void fmt_utc(char *buf, size_t len, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRIu64 " ns", ns);
}

/* The message of an ambiguous pid: every claim, its owner and age. */
static int say_ambiguous(char *err, size_t errlen, pid_t pid, const char *dir,
			 const struct bb_box_entry *v, size_t n)
{
	size_t at = 0, shown = 0, total = 0;
	int w;

	for (size_t i = 0; i < n; i++)
		total += candidate(&v[i], pid);
	if (!err || !errlen)
		return -ENOTUNIQ;
	w = snprintf(err, errlen, "pid %d: %zu boxes of different owners claim it and "
		     "nothing tells which is the process's:", (int)pid, total);
	at = w > 0 ? (size_t)w : 0;
	for (size_t i = 0; i < n && at < errlen; i++) {
		char t[32];

		if (!candidate(&v[i], pid))
			continue;
		fmt_utc(t, sizeof(t), v[i].info.created_ns);
		w = snprintf(err + at, errlen - at, "%s %s/%s (file owner uid %" PRIu32
			     ", created %s)", shown ? "," : "", dir, v[i].name,
			     v[i].info.file_uid, t);
		if (w < 0 || (size_t)w >= errlen - at)
			break;
		at += (size_t)w;
		shown++;
	}
	if (at < errlen)
		snprintf(err + at, errlen - at, "%s; read one with --path",
			 shown < total ? ", ..." : "");
	return -ENOTUNIQ;
}

BB_EXPORT int bb_reader_open_pid(pid_t pid, const char *dir, unsigned flags,
				 struct bb_reader **out, char *err, size_t errlen)
{
	char label[4096 + 256 + 2], why[256 + 96] = "";
	struct bb_box_entry *v = NULL;
	unsigned rejected = 0;
	size_t n = 0;
	DIR *d;
	int rc, k;

	if (!dir)
		dir = BB_DEFAULT_DIR;
	if (!out)
		return say(err, errlen, -EINVAL, "%s: no reader pointer", dir);
	*out = NULL;
	d = opendir(dir);
	if (!d)
		return say(err, errlen, -errno, "%s: cannot open directory: %s", dir,
			   strerror(errno));
	rc = scan_entries(d, dir, &v, &n);
	if (rc) {
		closedir(d);
		return say(err, errlen, rc, "%s: out of memory", dir);
	}
	k = choose(v, n, pid);
	if (k == -ENOTUNIQ) {
		rc = say_ambiguous(err, errlen, pid, dir, v, n);
		goto out;
	}
	if (k < 0) {
		for (size_t i = 0; i < n; i++) {
			if (v[i].error || v[i].info.pid != pid)
				continue;
			rejected++;
			snprintf(why, sizeof(why), "%s: file owner uid %" PRIu32
				 " differs from the box's uid %" PRIu32 ": never chosen",
				 v[i].name, v[i].info.file_uid, v[i].info.uid);
		}
		if (rejected)
			rc = say(err, errlen, -ESRCH, "no box of pid %d in %s (%u rejected, last: %s)",
				 (int)pid, dir, rejected, why);
		else
			rc = say(err, errlen, -ESRCH, "no box of pid %d in %s", (int)pid, dir);
		goto out;
	}
	snprintf(label, sizeof(label), "%s/%s", dir, v[k].name);
	rc = open_at(dirfd(d), v[k].name, label, flags, out, err, errlen);
	if (!rc && (bb_reader_info(*out)->file_dev != v[k].info.file_dev ||
		    bb_reader_info(*out)->file_ino != v[k].info.file_ino)) {
		/* the name now refers to another file than the one judged */
		bb_reader_close(*out);
		*out = NULL;
		rc = say(err, errlen, -ESTALE, "%s: replaced while being opened", label);
	}
out:
	free(v);
	closedir(d);
	return rc;
}

/* ---- walking --------------------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/*
 * Room for @need walk entries.  Anonymous memory advised for transparent
 * huge pages, not malloc(): a million-record box takes 48 MiB of entries,
 * and 4 KiB pages would cost a page fault (and a page zeroed) per 85
 * records, more than the walk's own work on them.  MAP_NORESERVE: collect()
 * reserves for the most records a ring could hold, and untouched pages
 * cost nothing.  Growing moves the pages (mremap), never copies them.
 */
static int grow_ents(struct bb_reader *r, size_t need)
{
	size_t n = r->cents ? r->cents : 1024, esz = sizeof(*r->ents);
	void *q;

	if (need <= r->cents)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / esz)
			return -ENOMEM;
		n *= 2;
	}
	if (r->ents)
		q = mremap(r->ents, r->cents * esz, n * esz, MREMAP_MAYMOVE);
	else
		q = mmap(NULL, n * esz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (q == MAP_FAILED)
		return -ENOMEM;
#ifdef MADV_HUGEPAGE
	(void)madvise(q, n * esz, MADV_HUGEPAGE);
#endif
	r->ents = q;
	r->cents = n;
	return 0;
}

/* The value bytes of a collected record. */
static inline const uint8_t *ent_value(const struct bb_reader *r, const struct ent *e)
{
	return (e->inbox ? r->base : r->vals) + e->voff;
}

/* Keep the record at @rec (len bytes, proven intact framing: a private
 * copy in r->rec, or the bytes of a box that cannot change): verify its
 * checksum first (FORMAT §11) so that a scribbled payload is counted
 * corrupt and never decoded.  Only a copy's value goes to the arena. */
static int keep(struct bb_reader *r, uint32_t ring, uint64_t pos, uint32_t len,
		const uint8_t *rec)
{
	const struct bb_record_hdr *h = (const struct bb_record_hdr *)(const void *)rec;
	int32_t tid = 0;
	const uint8_t *v;
	struct ent *e;
	size_t vlen;
	bool inbox = rec != r->rec;

	if (!bb__record_crc_ok(rec, len, BB_SEQ_DONE(pos), r->info.flags & BB_HF_CRC32C)) {
		r->rings[ring].st.crc_bad++;
		r->rings[ring].st.corrupt++;
		return 0;
	}
	v = bb__record_value(rec, len, &tid, &vlen);
	if (!v) { /* BB_RF_TID or BB_RF_CRC without room for them */
		r->rings[ring].st.corrupt++;
		return 0;
	}
	if ((r->nents == r->cents && grow_ents(r, r->nents + 1)) ||
	    (!inbox && grow((void **)&r->vals, &r->cvals, r->nvals + vlen, 1)))
		return -ENOMEM;
	e = &r->ents[r->nents++];
	*e = (struct ent){
		.pos = pos, .ts = h->ts, .stride = (uint32_t)BB_RECORD_STRIDE(len),
		.voff = inbox ? (size_t)(v - r->base) : r->nvals, .vlen = (uint16_t)vlen,
		.ring = ring, .tid = tid, .tag = h->tag, .flags = h->flags, .inbox = inbox,
	};
	if (!inbox && vlen)
		memcpy(r->vals + r->nvals, v, vlen);
	if (!inbox)
		r->nvals += vlen;
	return 0;
}

/*
 * read_fixed - bb__ring_read() for the reader's private copy, which nothing
 * changes during a walk (load() raised each copied tail past what the
 * writer overwrote while it was copied): the same checks of seq, len and
 * stride, but no writer can race us, so there is no copy to re-validate
 * and no fence.  Returns the record's bytes in place, or in r->rec when it wraps
 * around the ring's end; NULL (*rd says why) when it fails validation.
 */
static const uint8_t *read_fixed(struct bb_reader *r, const struct bb__ring_view *v,
				 uint64_t pos, uint64_t head, uint32_t *lenp, enum bb__rd *rd)
{
	size_t off = (size_t)(pos & (v->size - 1));
	struct bb_record_hdr h;
	uint64_t stride;

	bb__ring_copy(v, pos, &h, sizeof(h)); /* inside the ring whatever it holds */
	stride = BB_RECORD_STRIDE(h.len);
	if (h.seq == BB_SEQ_DONE(pos) && h.len >= BB_RECORD_HDR_SIZE &&
	    h.len <= v->max_record && stride <= v->size &&
	    bb__pos_diff(head, pos) >= (int64_t)stride) {
		*lenp = h.len;
		*rd = BB__RD_OK;
		if (off + h.len <= v->size)
			return v->data + off;
		bb__ring_copy(v, pos, r->rec, h.len);
		return r->rec;
	}
	/* as bb__ring_read() decides: a tail past pos means overwritten (a
	 * snapshot's tails were raised past what the copy lost) */
	*rd = bb__ring_lapped(v, pos) ? BB__RD_OVERWRITTEN : BB__RD_CORRUPT;
	return NULL;
}

/* After a record failed validation at @pos: find the next position whose
 * seq says "committed here" and whose record validates.  Bounded by head. */
static uint64_t resync(struct bb_reader *r, struct rring *rr, uint64_t pos, uint64_t head)
{
	for (uint64_t p = pos + 8; bb__pos_diff(head, p) > 0; p += 8) {
		uint32_t len;

		if (bb__ring_seq(&rr->v, p) != BB_SEQ_DONE(p))
			continue;
		if (bb__ring_read(&rr->v, p, head, r->rec, &len) == BB__RD_CORRUPT)
			continue;
		rr->st.skipped_bytes += p - pos;
		return p; /* the caller reads it again and keeps or resyncs */
	}
	rr->st.skipped_bytes += head - pos;
	return head;
}

/* Collect ring @i's intact records into the arena; *endp = where a FOLLOW
 * walk resumes. */
static int collect(struct bb_reader *r, uint32_t i, unsigned flags, bool alive,
		   uint64_t *endp)
{
	struct rring *rr = &r->rings[i];
	struct bb_ring_desc *d = (struct bb_ring_desc *)(uintptr_t)rr->v.desc;
	uint64_t head, tail, pos;
	int rc;

	*endp = 0;
	if (rr->bad)
		return 0; /* descriptor rejected at open (counted then) */
	refresh_ring(rr);
	if (rr->st.kind != BB_RING_PRIVATE && rr->st.kind != BB_RING_SHARED &&
	    rr->st.kind != BB_RING_IMPORTANT)
		return 0; /* a kind of a later minor version: skipped (FORMAT §10) */
	for (int tries = 0;; tries++) {
		/* Acquire: pairs with the writer's release store of head (§7
		 * step 4), which follows its release store of each record's
		 * committed seq: every record in [tail, head) is committed and
		 * its bytes are visible to the copies below. */
		head = BB_LOAD_ACQUIRE(&d->head);
		/* Relaxed: ordered after the head load by its acquire, so this
		 * is a tail at least as new as the one published before that
		 * head; a newer one is caught per record by bb__ring_read(). */
		tail = BB_LOAD_RELAXED(&d->tail);
		/* tail past head: a live writer lapped the ring between the
		 * two loads.  Reload a bounded number of times. */
		if (bb__pos_diff(head, tail) >= 0 || tries == 3)
			break;
	}
	*endp = head;

	if ((head | tail) % 8) {
		/* records are 8-aligned: nothing in this ring can be located */
		rr->st.corrupt++;
		return 0;
	}
	if (bb__pos_diff(head, tail) < 0) {
		/* still lapping us (live) or a scribbled descriptor (dead) */
		if (alive)
			rr->st.overwritten++;
		else
			rr->st.corrupt++;
		return 0;
	}
	if (head - tail > rr->v.size) {
		/* a writer never keeps more than a ring's worth: distrust the
		 * tail, resync from one ring back */
		rr->st.corrupt++;
		tail = head - rr->v.size;
	}
	pos = tail;
	if ((flags & BB_WALK_FOLLOW) && rr->has_next) {
		if (bb__pos_diff(rr->next, tail) >= 0 && bb__pos_diff(head, rr->next) >= 0)
			pos = rr->next;
		else if (bb__pos_diff(rr->next, tail) < 0)
			rr->st.overwritten++; /* a gap since the last walk */
	}

	/* every record takes 16 bytes at least: reserve for the most this
	 * ring can hold (a failure here is not one: keep() grows as it goes) */
	if (bb__pos_diff(head, pos) > 0)
		(void)grow_ents(r, r->nents + (size_t)((head - pos) / BB_RECORD_HDR_SIZE) + 1);
	while (bb__pos_diff(head, pos) > 0) {
		const uint8_t *rec = r->rec;
		enum bb__rd rd;
		uint32_t len;
		uint64_t t;

		rec = read_fixed(r, &rr->v, pos, head, &len, &rd);
		switch (rd) {
		case BB__RD_OK:
			rc = keep(r, i, pos, len, rec);
			if (rc)
				return rc;
			pos += BB_RECORD_STRIDE(len);
			break;
		case BB__RD_OVERWRITTEN:
			rr->st.overwritten++;
			/* Relaxed: bb__ring_read() issued the acquire fence that
			 * made the newer tail visible; resync at it. */
			t = BB_LOAD_RELAXED(&d->tail);
			pos = bb__pos_diff(t, pos) > 0 && !(t % 8) ? t : pos + 8;
			break;
		default:
			rr->st.corrupt++;
			pos = resync(r, rr, pos, head);
			break;
		}
	}
	/* A dead owner's record busy at head is the write its death cut short;
	 * a live owner's is a write in progress.  Counted once per head. */
	if (pos == head && !alive && bb__ring_seq(&rr->v, head) == BB_SEQ_BUSY(head) &&
	    !(rr->torn_counted && rr->torn_head == head)) {
		rr->st.torn++;
		rr->torn_counted = true;
		rr->torn_head = head;
	}
	*endp = pos;
	return 0;
}

/* Index of @name in r->names: the last one added when equal (names
 * change only at owner records), else a new entry; -1 without memory. */
static int64_t name_index(struct bb_reader *r, const char *name)
{
	if (r->nnames && !strncmp(r->names[r->nnames - 1], name, 16))
		return (int64_t)r->nnames - 1;
	if (grow((void **)&r->names, &r->cnames, r->nnames + 1, sizeof(*r->names)))
		return -1;
	bb__strlcpy(r->names[r->nnames], name, sizeof(*r->names));
	return (int64_t)r->nnames++;
}

/*
 * Attribute ring @i's records [first, r->nents) to threads.  Shared ring:
 * the BB_RF_TID extension.  Private ring: records after an owner record
 * belong to its new thread, records before the first visible one to its
 * previous thread; with no owner record in view, to the descriptor's.
 */
static int attribute(struct bb_reader *r, uint32_t i, size_t first)
{
	struct rring *rr = &r->rings[i];
	int32_t cur_tid = rr->st.tid, t, pt;
	char name[16], prev[16];
	int64_t cur;

	if (rr->st.kind == BB_RING_SHARED || rr->st.kind == BB_RING_IMPORTANT) {
		for (size_t k = first; k < r->nents; k++)
			r->ents[k].name = 0; /* "" */
		return 0;
	}
	cur = name_index(r, rr->st.thread_name);
	for (size_t k = first; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (e->tag == BB_TAG_OWNER &&
		    !bb__owner_decode(ent_value(r, e), e->vlen, &t, name, sizeof(name),
				      &pt, prev, sizeof(prev))) {
			cur_tid = pt;
			cur = name_index(r, prev);
			break;
		}
	}
	for (size_t k = first; k < r->nents && cur >= 0; k++) {
		struct ent *e = &r->ents[k];

		if (e->tag == BB_TAG_OWNER &&
		    !bb__owner_decode(ent_value(r, e), e->vlen, &t, name, sizeof(name),
				      &pt, prev, sizeof(prev))) {
			cur_tid = t;
			cur = name_index(r, name);
		}
		if (!(e->flags & BB_RF_TID))
			e->tid = cur_tid;
		e->name = (uint32_t)cur;
	}
	return cur < 0 ? -ENOMEM : 0;
}

static int by_time(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

BB_EXPORT uint64_t bb_reader_ts_ns(const struct bb_box_info *info, uint64_t raw)
{
	struct bb_header h = { 0 };

	if (!info || info->clock != BB_CLOCK_TSC)
		return raw;
	h.clock = BB_CLOCK_TSC;
	h.tsc_anchor = info->tsc_anchor;
	h.tsc_mult = info->tsc_mult;
	h.tsc_shift = info->tsc_shift;
	h.anchor_clock_ns = info->anchor_clock_ns;
	return (uint64_t)bb__ts_to_ns(&h, raw);
}

/* A raw stamp in ns of the box clock, and as wall-clock time (clock.h:
 * FORMAT §3 and §11, saturating, never UB on a scribbled header). */
static uint64_t ns_of(const struct bb_reader *r, uint64_t raw)
{
	return (uint64_t)bb__ts_to_ns(&r->clk, raw);
}

static int64_t wall_of(const struct bb_reader *r, uint64_t raw)
{
	return bb__ts_to_wall_ns(&r->clk, raw);
}

static int ikey_cmp(const void *a, const void *b)
{
	const struct ikey *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static bool ikey_in(const struct ikey *set, size_t n, const struct ent *e)
{
	struct ikey k = { .ts = e->ts, .tid = e->tid };

	return n && bsearch(&k, set, n, sizeof(k), ikey_cmp);
}

/* Deliver r->ents[k] (or pass over a suppressed important copy). */
static int deliver_one(struct bb_reader *r, size_t k, bb_record_fn fn, void *arg,
		       bool follow)
{
	static const uint8_t none[1];
	const struct ent *e = &r->ents[k];
	struct rring *rr = &r->rings[e->ring];
	struct bb_record rec = {
		.ring = e->ring, .tid = e->tid, .thread_name = r->names[e->name],
		.pos = e->pos, .ts = ns_of(r, e->ts), .ts_raw = e->ts,
		.wall_ns = wall_of(r, e->ts),
		.tag = e->tag, .flags = e->flags,
		.value = e->vlen ? ent_value(r, e) : none, .value_len = e->vlen,
		.important_copy = e->copy,
	};

	rr->next = e->pos + e->stride;
	rr->has_next = true;
	if (e->skip)
		return 0;
	if (follow && (e->flags & BB_RF_IMPORTANT)) {
		/* remembered so that a later walk never shows its twin */
		if (grow((void **)&r->shown, &r->cshown, r->nshown + 1, sizeof(*r->shown)))
			return -ENOMEM;
		r->shown[r->nshown++] = (struct ikey){ .ts = e->ts, .tid = e->tid };
	}
	rr->st.read++;
	return fn(&rec, arg);
}

/*
 * dedupe - FORMAT §11: every important record is shown once.  A copy in
 * the important ring is suppressed when its original (same tid and ts,
 * BB_RF_IMPORTANT) was collected from another ring by this walk or was
 * delivered by an earlier BB_WALK_FOLLOW walk; an original is suppressed
 * when an earlier follow walk already showed its copy (the copy can be
 * committed, and seen, before a walk reaches the original's ring).
 * Attribution has run: private-ring originals carry their thread's tid.
 */
static int dedupe(struct bb_reader *r, bool follow)
{
	struct ikey *orig = NULL;
	size_t n = 0;

	if (!follow)
		r->nshown = 0;
	else if (r->nshown > 1)
		qsort(r->shown, r->nshown, sizeof(*r->shown), ikey_cmp);
	for (size_t k = 0; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (!(e->flags & BB_RF_IMPORTANT) ||
		    r->rings[e->ring].st.kind == BB_RING_IMPORTANT)
			continue;
		if (follow && ikey_in(r->shown, r->nshown, e)) {
			e->skip = true;
			continue;
		}
		if (!orig && !(orig = malloc(r->nents * sizeof(*orig))))
			return -ENOMEM;
		orig[n++] = (struct ikey){ .ts = e->ts, .tid = e->tid };
	}
	if (n > 1)
		qsort(orig, n, sizeof(*orig), ikey_cmp);
	for (size_t k = 0; k < r->nents; k++) {
		struct ent *e = &r->ents[k];

		if (r->rings[e->ring].st.kind != BB_RING_IMPORTANT)
			continue;
		if (ikey_in(orig, n, e) || (follow && ikey_in(r->shown, r->nshown, e))) {
			e->skip = true;
			r->rings[e->ring].st.dup_suppressed++;
		} else {
			e->copy = true;
		}
	}
	free(orig);
	return 0;
}

/* One ring's run of collected records, [at, end) of r->ents. */
struct run {
	size_t at, end;
};

/* Is run a before run b at their current heads?  ts, then ring (runs are
 * ring ordered: the index breaks ties), as by_time() orders. */
static bool run_before(const struct bb_reader *r, const struct run *a, uint32_t ia,
		       const struct run *b, uint32_t ib)
{
	uint64_t x = r->ents[a->at].ts, y = r->ents[b->at].ts;

	return x != y ? x < y : ia < ib;
}

static void sift_down(const struct bb_reader *r, const struct run *runs, uint32_t *heap,
		      uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;

		if (l < n && run_before(r, &runs[heap[l]], heap[l], &runs[heap[m]], heap[m]))
			m = l;
		if (l + 1 < n &&
		    run_before(r, &runs[heap[l + 1]], heap[l + 1], &runs[heap[m]], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/*
 * Deliver the collected records of all rings in by_time() order.  Each
 * ring's run is in position order, which is time order for every ring whose
 * writer's clock did not step back (checked, and sorted when not), so a
 * k-way merge over the runs (a heap of ring cursors) gives the order of a
 * full sort in O(n log rings) instead of O(n log n).
 */
static int deliver_merged(struct bb_reader *r, const size_t *first, bb_record_fn fn,
			  void *arg, bool follow)
{
	uint32_t nr = r->info.ring_count, n = 0;
	struct run *runs;
	uint32_t *heap;
	int rc = 0;

	runs = malloc(nr * (sizeof(*runs) + sizeof(*heap)) + 1);
	if (!runs)
		return -ENOMEM;
	heap = (uint32_t *)(void *)(runs + nr);
	for (uint32_t i = 0; i < nr; i++) {
		runs[i].at = first[i];
		runs[i].end = i + 1 < nr ? first[i + 1] : r->nents;
		for (size_t k = runs[i].at + 1; k < runs[i].end; k++) {
			if (r->ents[k].ts < r->ents[k - 1].ts) {
				/* a clock step (or a shared ring's racing
				 * writers): order this run on its own */
				qsort(r->ents + runs[i].at, runs[i].end - runs[i].at,
				      sizeof(*r->ents), by_time);
				break;
			}
		}
		if (runs[i].at < runs[i].end)
			heap[n++] = i;
	}
	for (uint32_t i = n / 2; i-- > 0;)
		sift_down(r, runs, heap, n, i);
	while (n) {
		struct run *top = &runs[heap[0]];

		if (n == 1) { /* the last ring: no more comparisons */
			for (; top->at < top->end && !rc; top->at++)
				rc = deliver_one(r, top->at, fn, arg, follow);
			break;
		}
		rc = deliver_one(r, top->at++, fn, arg, follow);
		if (rc)
			break;
		if (top->at == top->end)
			heap[0] = heap[--n];
		sift_down(r, runs, heap, n, 0);
	}
	free(runs);
	return rc;
}

/*
 * bb_reader_walk: every ring is collected (and attributed) before anything
 * is delivered, also ring by ring, because hiding an important copy needs
 * to know whether its original is present in another ring.
 */
BB_EXPORT int bb_reader_walk(struct bb_reader *r, unsigned flags, bb_record_fn fn, void *arg)
{
	bool merge = flags & BB_WALK_MERGE, follow = flags & BB_WALK_FOLLOW, alive;
	size_t *firsts;
	int rc = 0;

	if (!r || !fn)
		return -EINVAL;
	if (r->fd >= 0) {
		/* a live reader reads what the walk needs, as it is now */
		rc = load(r, LOAD_WALK, follow);
		if (rc)
			return rc;
	}
	refresh_info(r);
	alive = bb_reader_liveness(r) == BB_OWNER_ALIVE;
	r->nents = r->nvals = r->nnames = 0;
	firsts = malloc(r->info.ring_count * sizeof(*firsts) + 1);
	if (!firsts || name_index(r, "") != 0) {
		free(firsts);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r->info.ring_count && !rc; i++) {
		firsts[i] = r->nents;
		rc = collect(r, i, flags, alive, &r->rings[i].end);
		if (!rc)
			rc = attribute(r, i, firsts[i]);
	}
	if (!rc)
		rc = dedupe(r, follow);
	if (!rc && merge) {
		rc = deliver_merged(r, firsts, fn, arg, follow);
	} else if (!rc) {
		/* ring by ring: ents are in ring order already */
		for (size_t k = 0; k < r->nents && !rc; k++)
			rc = deliver_one(r, k, fn, arg, follow);
	}
	free(firsts);
	r->nents = r->nvals = 0;
	if (rc)
		return rc;
	/* everything up to each ring's end was delivered or passed over */
	for (uint32_t i = 0; i < r->info.ring_count; i++) {
		if (r->rings[i].bad)
			continue;
		r->rings[i].next = r->rings[i].end;
		r->rings[i].has_next = true;
	}
	return 0;
}

BB_EXPORT const struct bb_ring_stats *bb_reader_ring_stats(const struct bb_reader *r,
							   uint32_t ring)
{
	if (!r || ring >= r->info.ring_count)
		return NULL;
	return &r->rings[ring].st;
}

BB_EXPORT void bb_reader_total_stats(const struct bb_reader *r, struct bb_ring_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (uint32_t i = 0; r && i < r->info.ring_count; i++) {
		const struct bb_ring_stats *s = &r->rings[i].st;

		sum->read += s->read;
		sum->torn += s->torn;
		sum->overwritten += s->overwritten;
		sum->corrupt += s->corrupt;
		sum->skipped_bytes += s->skipped_bytes;
		sum->crc_bad += s->crc_bad;
		sum->dup_suppressed += s->dup_suppressed;
	}
}

/* ---- crash area, state table, module area (FORMAT §11) ------------------ */

/*
 * A bounded CBOR cursor for the 2.0 areas: definite lengths only, no tags
 * (FORMAT §6); every length is checked against the bytes left before use.
 */
struct cur {
	const uint8_t *p, *end;
};

static size_t cur_left(const struct cur *c)
{
	return (size_t)(c->end - c->p);
}

/* Initial byte and argument.  Major 7: the argument of a float is its bits. */
static int cur_head(struct cur *c, int *major, uint64_t *arg)
{
	uint8_t ib, ai;
	size_t n;

	if (!cur_left(c))
		return -1;
	ib = *c->p++;
	*major = ib >> 5;
	ai = ib & 31;
	if (ai < 24) {
		*arg = ai;
		return 0;
	}
	if (ai > 27) /* reserved, or indefinite length: refused */
		return -1;
	n = (size_t)1 << (ai - 24);
	if (cur_left(c) < n)
		return -1;
	*arg = 0;
	while (n--)
		*arg = *arg << 8 | *c->p++;
	return 0;
}

static int cur_skip(struct cur *c, int depth)
{
	uint64_t a, n;
	int m;

	if (depth > 4 || cur_head(c, &m, &a))
		return -1;
	switch (m) {
	case 0: case 1: case 7:
		return 0;
	case 2: case 3:
		if (a > cur_left(c))
			return -1;
		c->p += a;
		return 0;
	case 4: case 5:
		/* each item takes a byte at least: bound the count first */
		if (a > cur_left(c))
			return -1;
		n = m == 5 ? 2 * a : a;
		for (uint64_t k = 0; k < n; k++)
			if (cur_skip(c, depth + 1))
				return -1;
		return 0;
	default:
		return -1;
	}
}

static int cur_uint(struct cur *c, uint64_t *v)
{
	int m;

	return cur_head(c, &m, v) || m != 0 ? -1 : 0;
}

static int cur_int(struct cur *c, int64_t *v)
{
	uint64_t a;
	int m;

	if (cur_head(c, &m, &a) || (m != 0 && m != 1) || a > INT64_MAX)
		return -1;
	*v = m == 0 ? (int64_t)a : -1 - (int64_t)a;
	return 0;
}

/* A text (major 3) or byte (major 2) string in place. */
static int cur_string(struct cur *c, int major, const uint8_t **s, size_t *n)
{
	uint64_t a;
	int m;

	if (cur_head(c, &m, &a) || m != major || a > cur_left(c))
		return -1;
	*s = c->p;
	*n = (size_t)a;
	c->p += a;
	return 0;
}

static int cur_container(struct cur *c, int major, uint64_t *n)
{
	int m;

	if (cur_head(c, &m, n) || m != major || *n > cur_left(c))
		return -1;
	return 0;
}

static bool key_is(const uint8_t *k, size_t n, const char *want)
{
	return strlen(want) == n && !memcmp(k, want, n);
}

BB_EXPORT const char *bb_crash_status_name(int status)
{
	switch (status) {
	case BB_CRASH_NONE:     return "none";
	case BB_CRASH_TORN:     return "torn";
	case BB_CRASH_COMPLETE: return "complete";
	case BB_CRASH_CORRUPT:  return "corrupt";
	default:                return "unknown";
	}
}

/* Decode the crash map of FORMAT §11 into @c; keys it does not know are
 * skipped.  Returns NULL or what is wrong. */
static const char *crash_decode(struct cur *in, struct bb_crash *c)
{
	uint64_t n, nf, u;
	int64_t i;
	const uint8_t *k, *t;
	size_t kn, tn;

	if (cur_container(in, 5, &n))
		return "value is not a CBOR map";
	for (uint64_t e = 0; e < n; e++) {
		if (cur_string(in, 3, &k, &kn))
			return "a key is not a text string";
		if (key_is(k, kn, "signal")) {
			if (cur_uint(in, &u) || u > INT32_MAX)
				return "\"signal\" is not a small unsigned integer";
			c->signal = (int32_t)u;
		} else if (key_is(k, kn, "code")) {
			if (cur_int(in, &i) || i < INT32_MIN || i > INT32_MAX)
				return "\"code\" is not a 32-bit integer";
			c->code = (int32_t)i;
		} else if (key_is(k, kn, "addr")) {
			if (cur_uint(in, &c->addr))
				return "\"addr\" is not an unsigned integer";
		} else if (key_is(k, kn, "tid")) {
			if (cur_int(in, &i) || i < INT32_MIN || i > INT32_MAX)
				return "\"tid\" is not a 32-bit integer";
			c->tid = (int32_t)i;
		} else if (key_is(k, kn, "thread")) {
			if (cur_string(in, 3, &t, &tn))
				return "\"thread\" is not a text string";
			if (tn >= sizeof(c->thread))
				tn = sizeof(c->thread) - 1;
			memcpy(c->thread, t, tn);
			c->thread[tn] = '\0';
		} else if (key_is(k, kn, "frames")) {
			if (cur_container(in, 4, &nf))
				return "\"frames\" is not an array";
			for (uint64_t f = 0; f < nf; f++) {
				if (cur_uint(in, &u))
					return "a frame is not an unsigned integer";
				if (c->nframes < BB_CRASH_MAX_FRAMES)
					c->frames[c->nframes++] = u;
				else
					c->frames_truncated = true;
			}
		} else if (cur_skip(in, 1)) {
			return "an unknown key's value is not well-formed CBOR";
		}
	}
	if (in->p != in->end)
		return "trailing bytes after the CBOR map";
	return NULL;
}

BB_EXPORT int bb_reader_crash(struct bb_reader *r, struct bb_crash *out)
{
	const struct bb_header *hd;
	uint8_t area[BB_CRASH_SIZE];
	struct bb_record_hdr h;
	const char *why = NULL;
	const uint8_t *v;
	struct cur c;
	int32_t tid = 0;
	uint32_t seq;
	size_t vlen;

	if (!r || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	/* a live reader takes the header as it is now; one that cannot be
	 * read (the file shrank) leaves the copy taken at open */
	if (r->fd >= 0)
		(void)fetch(r, 0, BB_HEADER_SIZE);
	hd = (const struct bb_header *)(const void *)r->base;
	/* Acquire: pairs with the crash handler's release store of seq =
	 * DONE after the last byte of the area: a DONE seen here means the
	 * copy below holds the whole record.  The area is written once (the
	 * first fatal signal wins), so no re-check is needed after the copy;
	 * a concurrent second writer would be the CRC's to catch. */
	seq = BB_LOAD_ACQUIRE((uint32_t *)(uintptr_t)hd->crash);
	memcpy(area, hd->crash, sizeof(area));
	memcpy(&h, area, sizeof(h));
	h.seq = seq;
	if (seq == BB_CRASH_SEQ_EMPTY) {
		out->status = BB_CRASH_NONE;
		return 0;
	}
	if (seq == BB_CRASH_SEQ_BUSY) {
		out->status = BB_CRASH_TORN;
		snprintf(out->problem, sizeof(out->problem),
			 "crash record torn: the handler started and did not finish");
		return 0;
	}
	out->status = BB_CRASH_CORRUPT;
	if (seq != BB_CRASH_SEQ_DONE)
		why = "seq word is not empty, busy or complete";
	else if (h.len < BB_RECORD_HDR_SIZE + BB_CRC_SIZE + 1 || h.len > BB_CRASH_SIZE)
		why = "length outside the crash area";
	else if (h.tag != BB_TAG_CRASH)
		why = "tag is not BB_TAG_CRASH";
	else if (!(h.flags & BB_RF_CRC))
		why = "no checksum (BB_RF_CRC missing)";
	else if (!(out->crc_ok = bb__record_crc_ok(area, h.len, BB_CRASH_SEQ_DONE, 1)))
		why = "CRC32C mismatch";
	else if (!(v = bb__record_value(area, h.len, &tid, &vlen)) || !vlen)
		why = "no room for the value";
	if (!why) {
		c = (struct cur){ .p = v, .end = v + vlen };
		why = crash_decode(&c, out);
	}
	if (why) { /* keep nothing half-decoded */
		memset(out, 0, offsetof(struct bb_crash, problem));
		out->status = BB_CRASH_CORRUPT;
		out->crc_ok = seq == BB_CRASH_SEQ_DONE && h.len >= BB_RECORD_HDR_SIZE +
			BB_CRC_SIZE && h.len <= BB_CRASH_SIZE &&
			bb__record_crc_ok(area, h.len, BB_CRASH_SEQ_DONE, 1);
		snprintf(out->problem, sizeof(out->problem), "crash area: %s", why);
		return 0;
	}
	out->status = BB_CRASH_COMPLETE;
	out->ts = ns_of(r, h.ts);
	out->wall_ns = wall_of(r, h.ts);
	return 0;
}

/*
 * copy_seqlocked - copy the @n bytes at offset @off of the box, guarded by
 * the seqlock word at their start (even = stable; FORMAT §11), into @dst.
 * Returns the stable seq; -EBUSY if the word was odd or changed on every
 * one of BB_STATE_RETRIES tries: bounded, so a live writer (or one that
 * died holding the slot) can never make the reader hang; -ESTALE (or
 * another -errno) when a live reader's file cannot be read.
 *
 * A live reader reads the word, the bytes and the word again with three
 * pread() calls; the copy of a snapshot or a memory copy is read in place
 * the same way.
 */
static int64_t copy_seqlocked(struct bb_reader *r, uint64_t off, uint8_t *dst, size_t n)
{
	const uint32_t *seqp = (const uint32_t *)(const void *)(r->base + off);

	for (int tries = 0; tries < BB_STATE_RETRIES; tries++) {
		uint32_t s1, s2;
		int rc;

		if (r->fd >= 0) {
			rc = pread_all(r->fd, &s1, sizeof(s1), off);
			if (rc)
				return rc;
			/* The kernel's loads of each read are ordered by the
			 * system call (a full barrier) and these fences:
			 * pairs with the writer's release store that makes seq
			 * even after its last byte, and with its release fence
			 * after making seq odd, before its first byte. */
			BB_FENCE_ACQUIRE();
			if (s1 & 1)
				continue;
			rc = pread_all(r->fd, dst, n, off);
			BB_FENCE_ACQUIRE();
			if (!rc)
				rc = pread_all(r->fd, &s2, sizeof(s2), off);
			if (rc)
				return rc;
			if (s1 == s2)
				return s1;
			continue;
		}
		/* Acquire: pairs with the writer's release store that makes
		 * seq even after its last byte: an even seq seen here means
		 * the bytes of that change are visible to the copy. */
		s1 = BB_LOAD_ACQUIRE((uint32_t *)(uintptr_t)seqp);
		if (s1 & 1)
			continue;
		/* The intended seqlock race: a writer may change the bytes
		 * while we copy; the re-read below tells. */
		memcpy(dst, r->base + off, n);
		/* Pairs with the writer's release fence after it makes seq
		 * odd and before its first byte: if the copy saw any byte of
		 * a later change, the odd (or newer) seq is visible below
		 * (fence-fence synchronisation, as in bb__ring_read()). */
		BB_FENCE_ACQUIRE();
		s2 = BB_LOAD_RELAXED((uint32_t *)(uintptr_t)seqp);
		if (s1 == s2)
			return s1;
	}
	return -EBUSY;
}

/* Check and decode one slot copy; NULL if fine, else what is wrong. */
static const char *slot_decode(struct bb_reader *r, const uint8_t *slot, uint32_t seq,
			       struct bb_state_entry *e)
{
	const struct bb_record_hdr *h = (const struct bb_record_hdr *)(const void *)slot;
	const uint8_t *v, *k;
	uint64_t n;
	int32_t tid = 0;
	size_t vlen, kn;
	struct cur c;

	if (h->len < BB_RECORD_HDR_SIZE + 1 || h->len > r->slot_size)
		return "length outside the slot";
	if (h->tag != BB_TAG_STATE)
		return "tag is not BB_TAG_STATE";
	if (!bb__record_crc_ok(slot, h->len, seq, r->info.flags & BB_HF_CRC32C))
		return (h->flags & BB_RF_CRC) ? "CRC32C mismatch" : "no checksum (BB_RF_CRC missing)";
	v = bb__record_value(slot, h->len, &tid, &vlen);
	if (!v || !vlen)
		return "no room for the value";
	c = (struct cur){ .p = v, .end = v + vlen };
	if (cur_container(&c, 4, &n) || n != 2)
		return "value is not an array of 2";
	if (cur_string(&c, 3, &k, &kn))
		return "key is not a text string";
	if (cur_skip(&c, 1) || c.p != c.end)
		return "value is not one well-formed CBOR item";
	e->key = (const char *)k;
	e->key_len = kn;
	e->value = v;
	e->value_len = vlen;
	e->ts = ns_of(r, h->ts);
	e->wall_ns = wall_of(r, h->ts);
	e->flags = h->flags;
	return NULL;
}

BB_EXPORT int bb_reader_state(struct bb_reader *r, bb_state_fn fn, void *arg,
			      struct bb_state_stats *st)
{
	struct bb_state_stats tot = { 0 };
	int rc = 0;

	if (st)
		memset(st, 0, sizeof(*st));
	if (!r || !fn)
		return -EINVAL;
	if (!r->info.state_slot_count)
		return -ENODATA;
	tot.slots = r->info.state_slot_count;
	for (uint32_t i = 0; i < tot.slots && !rc; i++) {
		struct bb_state_entry e = { .slot = i, .problem = "" };
		int64_t seq = copy_seqlocked(r, r->state_off + (uint64_t)i * r->slot_size, r->slot,
					     r->slot_size);
		const struct bb_record_hdr *h = (const struct bb_record_hdr *)(void *)r->slot;
		const char *why;

		if (seq < 0 && seq != -EBUSY) {
			rc = (int)seq; /* the file cannot be read (any more) */
			break;
		}
		if (seq < 0) {
			e.status = BB_SLOT_BUSY;
			e.problem = "slot busy: being written through every retry, or its "
				    "writer died mid-write";
			tot.busy++;
		} else if (h->len == 0) {
			continue; /* empty or unset */
		} else if ((why = slot_decode(r, r->slot, (uint32_t)seq, &e))) {
			e.status = BB_SLOT_CORRUPT;
			e.problem = why;
			e.key = NULL;
			e.value = NULL;
			e.key_len = e.value_len = 0;
			tot.corrupt++;
		} else {
			e.status = BB_SLOT_OK;
			tot.used++;
		}
		rc = fn(&e, arg);
	}
	if (st)
		*st = tot;
	return rc;
}

BB_EXPORT const struct bb_module *bb_module_find(const struct bb_module *mods, size_t n,
						 uint64_t addr)
{
	for (size_t i = 0; mods && i < n; i++)
		if (mods[i].start <= addr && addr < mods[i].end)
			return &mods[i];
	return NULL;
}

/* Decode the module array (r->modbuf, @len bytes) into r->mods. */
static const char *modules_decode(struct bb_reader *r, const uint8_t *p, size_t len,
				  size_t *count)
{
	struct cur c = { .p = p, .end = p + len };
	char *str;
	uint64_t n, m;

	if (cur_container(&c, 4, &n))
		return "not a CBOR array";
	free(r->mods);
	free(r->modstr);
	r->mods = calloc(n + 1, sizeof(*r->mods)); /* n <= len: bounded */
	r->modstr = malloc(len + n + 1);
	if (!r->mods || !r->modstr)
		return "out of memory";
	str = r->modstr;
	for (uint64_t i = 0; i < n; i++) {
		struct bb_module *md = &r->mods[i];
		const uint8_t *s;
		size_t sn;

		if (cur_container(&c, 4, &m) || m < 5)
			return "an entry is not an array of 5";
		if (cur_string(&c, 3, &s, &sn))
			return "a path is not a text string";
		memcpy(str, s, sn);
		str[sn] = '\0';
		md->path = str;
		str += sn + 1;
		if (cur_uint(&c, &md->bias) || cur_uint(&c, &md->start) ||
		    cur_uint(&c, &md->end))
			return "bias, start or end is not an unsigned integer";
		if (md->end < md->start)
			return "an entry ends before it starts";
		if (cur_string(&c, 2, &md->build_id, &md->build_id_len))
			return "a build id is not a byte string";
		for (uint64_t k = 5; k < m; k++) /* later minor versions: ignored */
			if (cur_skip(&c, 1))
				return "an extra field is not well-formed CBOR";
	}
	if (c.p != c.end)
		return "trailing bytes after the array";
	*count = (size_t)n;
	return NULL;
}

BB_EXPORT int bb_reader_modules(struct bb_reader *r, const struct bb_module **mods,
				size_t *count, unsigned *flags, char *err, size_t errlen)
{
	struct bb_modules_hdr mh;
	const char *why;
	size_t size;
	int64_t seq;

	if (!r || !mods || !count)
		return say(err, errlen, -EINVAL, "no reader or output");
	*mods = NULL;
	*count = 0;
	if (flags)
		*flags = 0;
	if (!r->info.modules_size)
		return say(err, errlen, -ENODATA, "%s",
			   r->info.modules_problem[0] ? r->info.modules_problem
						     : "the box has no module area");
	size = r->info.modules_size;
	if (!r->modbuf && !(r->modbuf = malloc(size)))
		return say(err, errlen, -ENOMEM, "out of memory");
	seq = copy_seqlocked(r, r->modules_off, r->modbuf, size);
	if (seq == -EBUSY)
		return say(err, errlen, -EBUSY,
			   "module area: being rewritten through %d tries", BB_STATE_RETRIES);
	if (seq < 0)
		return load_failed(err, errlen, "module area", (int)seq);
	memcpy(&mh, r->modbuf, sizeof(mh));
	if (mh.len > size - sizeof(mh))
		return say(err, errlen, -EBADMSG,
			   "module area: %" PRIu32 " bytes of CBOR do not fit its %zu bytes",
			   mh.len, size - sizeof(mh));
	why = modules_decode(r, r->modbuf + sizeof(mh), mh.len, count);
	if (why) {
		*count = 0;
		return say(err, errlen, strcmp(why, "out of memory") ? -EBADMSG : -ENOMEM,
			   "module area: %s", why);
	}
	if (mh.count != *count) {
		size_t n = *count;

		*count = 0;
		return say(err, errlen, -EBADMSG,
			   "module area: header says %" PRIu32 " modules, the array has %zu",
			   mh.count, n);
	}
	if (flags && (mh.flags & BB_MF_TRUNCATED))
		*flags |= BB_MODULES_TRUNCATED;
	*mods = r->mods;
	return 0;
}

/* ---- save and scan ----------------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

BB_EXPORT int bb_reader_save(struct bb_reader *r, int fd)
{
	int rc;

	if (!r)
		return -EINVAL;
	/* A live reader reads every byte again, each ring's tail raised past
	 * what the writer overwrote during the read (load()); a snapshot or
	 * a memory copy never changes. */
	if (r->fd >= 0 && (rc = load(r, LOAD_ALL, false)))
		return rc;
	return write_all(fd, r->base, r->len);
}

BB_EXPORT int bb_scan_dir(const char *dir, bb_scan_fn fn, void *arg)
{
	size_t plen = strlen(BB_NAME_PREFIX);
	struct dirent *e;
	DIR *d;
	int rc = 0;

	if (!fn)
		return -EINVAL;
	d = opendir(dir ? dir : BB_DEFAULT_DIR);
	if (!d)
		return -errno;
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e) {
			rc = errno ? -errno : 0;
			break;
		}
		if (strncmp(e->d_name, BB_NAME_PREFIX, plen))
			continue;
		rc = fn(dirfd(d), e->d_name, arg);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}
