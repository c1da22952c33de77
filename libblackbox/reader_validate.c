/* SPDX-License-Identifier: MIT */
/*
 * reader_validate.c - the header and ring table of a box, field by field
 * (FORMAT.md §9): what a reader may rely on before it reads anything else.
 * The geometry the walk uses is taken from the validated copy and cached,
 * never re-read from a file that could change under the reader.
 */
#include <byteswap.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "barrier.h"
#include "internal.h"
#include "reader_int.h"
#include "unit.h"

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
static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen);

/* A crash stacks area [@off, +@len): not empty, inside the box, past the
 * header, 8-aligned, not over the ring table. */
static bool stacks_fit(const struct bb_header *h, uint64_t off, uint64_t len, uint64_t lim,
		       uint64_t table_end)
{
	return len && off >= h->header_size && !(off % 8) && off <= lim && len <= lim - off &&
	       !overlap(off, len, h->ring_table_offset, table_end - h->ring_table_offset);
}

static void check_areas(struct bb_reader *r, const struct bb_header *h, uint64_t lim,
			uint64_t table_end)
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
		else if (off < table_end && h->ring_table_offset < off + len)
			snprintf(in->state_problem, sizeof(in->state_problem),
				 "state table [%" PRIu64 ", +%" PRIu64 ") overlaps the ring table%s",
				 off, len, h->version_major >= 3 ? ", thread or segment table" : "");
		else {
			in->state_slot_count = h->state_slot_count;
			r->slot_size = h->state_slot_size;
			r->state_off = off;
		}
	}
	/* The crash slots (3.2), else the crash stacks (3.1): a bad
	 * geometry leaves them out (a box of a later minor with other
	 * fields there reads as without). */
	r->stacks_off = 0;
	r->nstacks = 0;
	r->stack_size = BB_CRASH_SIZE;
	if (h->version_major > 3 || (h->version_major == 3 && h->version_minor >= 2)) {
		off = h->crash_slots_offset;
		len = (uint64_t)h->crash_slots_count * h->crash_slot_size;
		if (h->crash_slots_count <= BB_CRASH_SLOTS_MAX && h->crash_slot_size >= 256 &&
		    h->crash_slot_size <= BB_CRASH_SIZE && !(h->crash_slot_size % 8) &&
		    stacks_fit(h, off, len, lim, table_end)) {
			r->stacks_off = off;
			r->nstacks = h->crash_slots_count;
			r->stack_size = h->crash_slot_size;
		}
	}
	off = h->crash_stacks_offset;
	len = (uint64_t)h->crash_stacks_count * BB_CRASH_SIZE;
	if (!r->nstacks && (h->version_major > 3 || (h->version_major == 3 && h->version_minor >= 1)) &&
	    h->crash_stacks_count <= BB_CRASH_STACKS_MAX && stacks_fit(h, off, len, lim, table_end)) {
		r->stacks_off = off;
		r->nstacks = h->crash_stacks_count;
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

/* Do [a, a + alen) and [b, b + blen) overlap?  (Both inside the box.) */
static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/*
 * check_segments - the 3.0 geometry (FORMAT.md §13, §9.4-5): the thread
 * table, the segment table and the segment data inside the @lim bytes the
 * box has, none over the header or another table, the data after every
 * table.  On success r->table_end covers every table.  Unlike the state
 * table or the module area, segments hold the records: a box whose
 * segment geometry is impossible is not a box (-EBADMSG).
 */
static int check_segments(struct bb_reader *r, const struct bb_header *h, uint64_t lim,
			  const char *label, char *err, size_t errlen)
{
	uint64_t seg_len = (uint64_t)h->seg_count * BB_SEG_DESC_SIZE;  /* < 2^18 */
	uint64_t thr_len = (uint64_t)h->thread_count * BB_THREAD_SLOT_SIZE;
	uint64_t data_len = (uint64_t)h->seg_count * h->seg_size;     /* < 2^42 */
	uint64_t rt = h->ring_table_offset, rt_len = r->table_end - rt, end = r->table_end;

	if (h->seg_desc_size != BB_SEG_DESC_SIZE || h->thread_slot_size != BB_THREAD_SLOT_SIZE)
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: seg_desc_size %" PRIu32 " / thread_slot_size %" PRIu32
			   " (want %u / %u)", label, h->seg_desc_size, h->thread_slot_size,
			   BB_SEG_DESC_SIZE, BB_THREAD_SLOT_SIZE);
	if (h->seg_count > BB_SEG_MAX_COUNT || h->thread_count > BB_SEG_MAX_COUNT)
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: %" PRIu32 " segments and %" PRIu32 " thread slots (at most %u each)",
			   label, h->seg_count, h->thread_count, BB_SEG_MAX_COUNT);
	if (h->seg_count && (!pow2(h->seg_size) || h->seg_size < BB_SEG_MIN_SIZE ||
			     h->seg_size % h->page_size))
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: seg_size %" PRIu32 " is not a power of two >= %u and a multiple "
			   "of the page size", label, h->seg_size, BB_SEG_MIN_SIZE);
	if (seg_len && (h->seg_table_offset < h->header_size || h->seg_table_offset % 64 ||
			h->seg_table_offset > lim || seg_len > lim - h->seg_table_offset))
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: segment table [%" PRIu64 ", +%" PRIu64 ") lies outside the %" PRIu64
			   "-byte box or overlaps the header", label, h->seg_table_offset, seg_len, lim);
	if (thr_len && (h->thread_table_offset < h->header_size || h->thread_table_offset % 64 ||
			h->thread_table_offset > lim || thr_len > lim - h->thread_table_offset))
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: thread table [%" PRIu64 ", +%" PRIu64 ") lies outside the %" PRIu64
			   "-byte box or overlaps the header", label, h->thread_table_offset,
			   thr_len, lim);
	if (overlap(h->seg_table_offset, seg_len, rt, rt_len) ||
	    overlap(h->thread_table_offset, thr_len, rt, rt_len) ||
	    overlap(h->seg_table_offset, seg_len, h->thread_table_offset, thr_len))
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: the ring, thread and segment tables overlap", label);
	if (seg_len && h->seg_table_offset + seg_len > end)
		end = h->seg_table_offset + seg_len;
	if (thr_len && h->thread_table_offset + thr_len > end)
		end = h->thread_table_offset + thr_len;
	if (data_len && (h->seg_data_offset < end || h->seg_data_offset % h->page_size ||
			 h->seg_data_offset > lim || data_len > lim - h->seg_data_offset))
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: segment data [%" PRIu64 ", +%" PRIu64 ") lies outside the %" PRIu64
			   "-byte box, before a table or off a page boundary", label,
			   h->seg_data_offset, data_len, lim);
	r->seg_count = h->seg_count;
	r->seg_size = h->seg_size;
	r->seg_off = h->seg_table_offset;
	r->seg_data_off = h->seg_data_offset;
	r->thread_count = h->thread_count;
	r->thr_off = h->thread_table_offset;
	r->table_end = end;
	r->info.seg_count = h->seg_count;
	r->info.seg_size = h->seg_size;
	r->info.thread_count = h->thread_count;
	return 0;
}

/*
 * check_header - validate every field of a header copy against the
 * @size bytes available; on success fill the static part of @info and the
 * table geometry of @r.
 */
int bb__rdr_check_header(struct bb_reader *r, const struct bb_header *h, uint64_t size,
			const char *label, char *err, size_t errlen)
{
	struct bb_box_info *in = &r->info;
	uint64_t max_rec, table_len, lim;

	if (h->magic == 0)
		return bb__rdr_say(err, errlen, -ENODATA,
			   "%s: no magic yet (a box still being created, or not a box)", label);
	if (h->magic == bswap_64(BB_MAGIC))
		return bb__rdr_say(err, errlen, -EPFNOSUPPORT,
			   "%s: byte-swapped magic: box written with the other byte order", label);
	if (h->magic != BB_MAGIC)
		return bb__rdr_say(err, errlen, -EBADMSG, "%s: bad magic 0x%016" PRIx64 " (not a box)",
			   label, h->magic);
	if (h->version_major > BB_FORMAT_MAJOR)
		return bb__rdr_say(err, errlen, -EPROTONOSUPPORT,
			   "%s: format %u.%u is newer than this reader (%u.x)", label,
			   h->version_major, h->version_minor, BB_FORMAT_MAJOR);
	if (h->version_major < BB_FORMAT_MAJOR_OLDEST)
		/* 1.x was written only by pre-release builds (before 0.1.0) */
		return bb__rdr_say(err, errlen, -EPROTONOSUPPORT,
			   "%s: format %u.%u is an unreleased older format (this reader reads "
			   "%u.x to %u.x)", label, h->version_major, h->version_minor,
			   BB_FORMAT_MAJOR_OLDEST, BB_FORMAT_MAJOR);
	if (h->byte_order != BB_BYTE_ORDER_MARK)
		return bb__rdr_say(err, errlen,
			   h->byte_order == bswap_32(BB_BYTE_ORDER_MARK) ? -EPFNOSUPPORT : -EBADMSG,
			   "%s: byte order mark 0x%08" PRIx32 " (want 0x%08" PRIx32 ")", label,
			   h->byte_order, BB_BYTE_ORDER_MARK);
	if (h->word_size != sizeof(void *))
		return bb__rdr_say(err, errlen, -EPFNOSUPPORT,
			   "%s: written by a %u-byte-word process, this reader has %zu", label,
			   h->word_size, sizeof(void *));
	if (h->header_size != BB_HEADER_SIZE)
		return bb__rdr_say(err, errlen, -EBADMSG, "%s: header_size %" PRIu32 " (want %u)",
			   label, h->header_size, BB_HEADER_SIZE);
	if (h->ring_desc_size != BB_RING_DESC_SIZE)
		return bb__rdr_say(err, errlen, -EBADMSG, "%s: ring_desc_size %" PRIu32 " (want %u)",
			   label, h->ring_desc_size, BB_RING_DESC_SIZE);
	if (h->ring_count < 1 || h->ring_count > BB_RING_MAX_COUNT)
		return bb__rdr_say(err, errlen, -EBADMSG, "%s: ring_count %" PRIu32 " is outside 1..%u",
			   label, h->ring_count, BB_RING_MAX_COUNT);
	if (!pow2(h->page_size) || h->page_size < 4096)
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: page_size %" PRIu32 " is not a power of two >= 4096", label,
			   h->page_size);
	if (!pow2(h->ring_size) || h->ring_size < BB_RING_MIN_SIZE ||
	    h->ring_size > BB_RING_MAX_SIZE || h->ring_size % h->page_size)
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: ring_size %" PRIu64 " is not a power of two in [%u, %" PRIu64
			   "] and a multiple of the page size", label, h->ring_size,
			   BB_RING_MIN_SIZE, BB_RING_MAX_SIZE);
	max_rec = h->ring_size < BB_RECORD_MAX ? h->ring_size : BB_RECORD_MAX;
	/* 3.0: a record fits a segment too (records never span segments) */
	if (h->version_major >= 3 && h->seg_count && h->seg_size < max_rec)
		max_rec = h->seg_size;
	/* room for an envelope, a tid extension and a value (FORMAT §9.4) */
	if (h->max_record <= BB_RECORD_HDR_SIZE + 8 || h->max_record > max_rec)
		return bb__rdr_say(err, errlen, -EBADMSG, "%s: max_record %" PRIu32 " is outside (%u, %"
			   PRIu64 "]", label, h->max_record, BB_RECORD_HDR_SIZE + 8, max_rec);
	if (h->pid <= 0)
		return bb__rdr_say(err, errlen, -EBADMSG, "%s: owner pid %" PRId32 " is impossible",
			   label, h->pid);
	/* offsets are checked against the smaller of box_size and the file */
	lim = h->box_size < size ? h->box_size : size;
	table_len = (uint64_t)h->ring_count * h->ring_desc_size; /* < 2^18: no overflow */
	if (h->ring_table_offset < h->header_size || h->ring_table_offset % 64 ||
	    h->ring_table_offset > lim || table_len > lim - h->ring_table_offset)
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: ring table [%" PRIu64 ", +%" PRIu64 ") lies outside the %" PRIu64
			   "-byte %s or overlaps the header", label, h->ring_table_offset,
			   table_len, lim, lim < size ? "box (box_size)" : "file");

	r->table_off = h->ring_table_offset;
	r->table_end = h->ring_table_offset + table_len;
	r->table_rings = h->ring_count;
	if (h->version_major >= 3) {
		int rc = check_segments(r, h, lim, label, err, errlen);

		if (rc)
			return rc;
	}
	check_areas(r, h, lim, r->table_end);
	r->clk = *h;
	r->limit = lim;
	r->page_size = h->page_size;
	r->desc_size = h->ring_desc_size;
	in->version_major = h->version_major;
	in->version_minor = h->version_minor;
	in->box_size = h->box_size;
	in->stream_count = h->ring_count;
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
	/* runtime fields as of this copy; bb__rdr_refresh_info() reloads them live */
	in->phase = (int)h->phase;
	in->phase_signal = h->phase_signal;
	in->phase_ns = h->phase_ns;
	in->dropped_busy = h->dropped_busy;
	in->dropped_nested = h->dropped_nested;
	in->truncated = h->truncated;
	in->dropped_toobig = h->dropped_toobig;
	in->dropped_important = h->dropped_important;
	in->state_errors = h->state_errors;
	bb__unit_info(in, h); /* 2.1: the systemd unit (reader_unit.c) */
	return 0;
}

/* Runtime header fields: loaded atomically (the owner updates them). */
void bb__rdr_refresh_info(struct bb_reader *r)
{
	struct bb_header *h = (struct bb_header *)(void *)r->base;
	struct bb_box_info *in = &r->info;

	/* Acquire pairs with the writer's release store of phase (bb__atexit,
	 * bb_close, the crash handler): phase_signal and phase_ns, loaded
	 * after it, are at least as new as the phase they describe
	 * (FORMAT.md §3). */
	in->phase = (int)BB__LOAD_ACQUIRE(&h->phase);
	in->phase_signal = BB__LOAD_RELAXED(&h->phase_signal);
	in->phase_ns = BB__LOAD_RELAXED(&h->phase_ns);
	/* Relaxed: independent counters, read for display; nothing else is
	 * read through them. */
	in->dropped_busy = BB__LOAD_RELAXED(&h->dropped_busy);
	in->dropped_nested = BB__LOAD_RELAXED(&h->dropped_nested);
	in->truncated = BB__LOAD_RELAXED(&h->truncated);
	in->dropped_toobig = BB__LOAD_RELAXED(&h->dropped_toobig);
	in->dropped_important = BB__LOAD_RELAXED(&h->dropped_important);
	in->state_errors = BB__LOAD_RELAXED(&h->state_errors);
	if (in->version_major >= 3) {
		in->overflow = BB__LOAD_RELAXED(&h->overflow);
		in->seg_stolen = BB__LOAD_RELAXED(&h->seg_stolen);
		in->seg_restarted = BB__LOAD_RELAXED(&h->seg_restarted);
	}
}

void bb__rdr_refresh_ring(struct rstream *rr)
{
	struct bb_ring_desc *d = (struct bb_ring_desc *)(uintptr_t)rr->v.desc;

	/* Relaxed: descriptive fields; a torn name is cut at 15 bytes below. */
	rr->st.tid = BB__LOAD_RELAXED(&d->tid);
	rr->st.kind = BB__LOAD_RELAXED(&d->kind);
	rr->st.claim = BB__LOAD_RELAXED(&d->claim);
	copy_str(rr->st.thread_name, d->thread_name, sizeof(rr->st.thread_name));
}

/*
 * setup - validate the ring table of the box at r->base (r->len bytes),
 * cache each ring's view and finish the reader.  The header was checked.
 */
int bb__rdr_setup(struct bb_reader *r, const char *label, char *err, size_t errlen)
{
	struct bb_box_info *in = &r->info;
	uint64_t table_end = r->table_end;
	const char *what = r->limit < r->info.file_size ? "box (box_size)" : "file";
	int rc;

	for (uint32_t i = 0; i < r->table_rings; i++) {
		const struct bb_ring_desc *d = bb__rdr_desc(r, r->base, i);
		uint64_t off, head, tail;

		struct rstream *rr = &r->streams[i];
		char *why = rr->st.problem;
		size_t wl = sizeof(rr->st.problem);

		rr->v = (struct bb__extent){
			.desc = d, .size = in->ring_size, .max_record = in->max_record,
		};
		bb__rdr_refresh_ring(rr);
		/*
		 * A descriptor that points outside the box (a scribble, FORMAT
		 * §9.5) condemns its ring only: counted corrupt once, with the
		 * reason, never read; the other rings still are.
		 */
		memcpy(&off, &d->data_offset, sizeof(off)); /* validated once, cached */
		if (off < table_end || off > r->limit || in->ring_size > r->limit - off)
			snprintf(why, wl, "data [%" PRIu64 ", +%" PRIu64 ") lies outside the %"
				 PRIu64 "-byte %s or overlaps %s", off,
				 in->ring_size, r->limit, what,
				 r->seg_count ? "a table" : "the ring table");
		else if (off % r->page_size)
			snprintf(why, wl, "data offset %" PRIu64
				 " is not a multiple of the page size %" PRIu32, off, r->page_size);
		else if (overlap(off, in->ring_size, r->seg_data_off,
				 (uint64_t)r->seg_count * r->seg_size))
			snprintf(why, wl, "data [%" PRIu64 ", +%" PRIu64 ") overlaps the segments",
				 off, in->ring_size);
		/* rings are ring_size apart at least: one overlap test per pair */
		for (uint32_t j = 0; j < i && !why[0]; j++) {
			uint64_t o;

			if (r->streams[j].bad)
				continue;
			o = (uint64_t)(r->streams[j].v.data - r->base);
			if (bb__pos_diff(off, o) < (int64_t)in->ring_size &&
			    bb__pos_diff(o, off) < (int64_t)in->ring_size)
				snprintf(why, wl, "data at %" PRIu64 " overlaps ring %" PRIu32
					 " at %" PRIu64, off, j, o);
		}
		if (why[0]) {
			rr->bad = true;
			rr->st.corrupt = 1;
			in->streams_used++;
			continue;
		}
		rr->v.data = r->base + off;
		/* Relaxed: only counts rings that were ever written, and the
		 * bytes they hold (a ring's head and tail of our copy). */
		head = BB__LOAD_RELAXED((uint64_t *)(uintptr_t)&d->head);
		tail = BB__LOAD_RELAXED((uint64_t *)(uintptr_t)&d->tail);
		if (rr->st.claim != BB_RING_FREE || head)
			in->streams_used++;
		if (!((head | tail) % 8) && bb__pos_diff(head, tail) >= 0 &&
		    head - tail <= in->ring_size)
			in->used_bytes += head - tail;
	}
	/* 3.0: the thread logs in the segments, as rings after these */
	rc = bb__rdr_scan_logs(r);
	if (rc)
		return bb__rdr_say(err, errlen, rc, "%s: out of memory", label);
	for (size_t k = 0; k < r->nsegs; k++)
		in->used_bytes += r->segs[k].head - r->segs[k].start;
	in->streams_used += (uint32_t)r->nlogs;
	bb__rdr_refresh_info(r);
	return 0;
}
