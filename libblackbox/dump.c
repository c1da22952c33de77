/* SPDX-License-Identifier: MIT */
/*
 * dump.c - bb_dump(): this process's own box as text, from anywhere,
 * including a signal handler.  No malloc, no stdio: static buffers guarded
 * by a flag, write(2) for output, bb_format_value() for values.
 *
 * It walks the live rings with the same ring checks, per-record seqlock
 * read and resync as every other reader (ring.h): other threads may be
 * writing while it runs, and records they overwrite under it are skipped,
 * never printed torn; a corrupt stretch is skipped up to the next record
 * that validates and said on a line of its own ("r1 corrupt: 24 bytes
 * skipped before position 96").  Records
 * of all rings are merged oldest first by peeking at each ring's next
 * timestamp.
 *
 * Checksums: every record of a box with BB_HF_CRC32C must carry a matching
 * CRC32C (FORMAT.md §11); one that does not is reported on a line of its
 * own ("checksum mismatch") and its value is not printed.
 *
 * The important ring holds copies of BB_RF_IMPORTANT records: a copy is
 * printed only if its original was not (evicted from its ring before we
 * reached it).  Originals printed are remembered by (tid, ts) in a static
 * open-addressing set of BB__SEEN_SLOTS entries, enough for every record a
 * 512 KiB important ring can hold; beyond that (huge boxes with very many
 * important records) a copy whose original could not be remembered is
 * printed too.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <blackbox/reader.h>

#include "ring.h"
#include "text.h"
#include "writer.h"

/* A ring of the ring table, or a segment of a thread's log (3.0). */
struct bb__cursor {
	struct bb__extent v;
	uint64_t pos;
	uint64_t head;
	uint64_t skipped;   /* corrupt bytes skipped by a resync, not yet said */
	uint64_t peek_pos;  /* bb__peek()'s answer for this position ... */
	uint64_t peek_ts;   /* ... is this stamp */
	uint32_t label;     /* ring index, or segment index */
	int32_t tid;
	char kind;          /* 'r' a ring, 's' a segment: the label's letter */
	bool done, peeked;
};

/* Originals of important records already printed. */
#define BB__SEEN_SLOTS 16384u  /* power of two */
struct bb__seen {
	uint64_t ts;
	int32_t tid;
	uint32_t used;
};
static struct bb__seen bb__seen[BB__SEEN_SLOTS];
static uint32_t bb__seen_n;

static int32_t bb__dump_busy; /* 1 while a dump runs: its buffers are static */
static struct bb__cursor bb__cur[BB__RINGS + BB_SEG_MAX_COUNT];
static uint8_t bb__rec[BB_RECORD_MAX];
static char bb__line[1024];

/* AS-safe decimal formatting, @w = minimum width (zero padded). */
static char *bb__put_u64(char *p, uint64_t v, int w)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n < w)
		tmp[n++] = '0';
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *bb__put_str(char *p, const char *end, const char *s)
{
	while (*s && p < end)
		*p++ = *s++;
	return p;
}

static int bb__write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

static uint32_t bb__seen_hash(int32_t tid, uint64_t ts)
{
	uint64_t k = (ts ^ (uint64_t)(uint32_t)tid * UINT64_C(0x9e3779b97f4a7c15)) *
		     UINT64_C(0xff51afd7ed558ccd);

	return (uint32_t)(k >> 40) & (BB__SEEN_SLOTS - 1);
}

/* Remember an important original; false when the set is (nearly) full. */
static bool bb__seen_add(int32_t tid, uint64_t ts)
{
	uint32_t i = bb__seen_hash(tid, ts);

	if (bb__seen_n >= BB__SEEN_SLOTS / 4 * 3)
		return false;
	while (bb__seen[i].used) {
		if (bb__seen[i].tid == tid && bb__seen[i].ts == ts)
			return true;
		i = (i + 1) & (BB__SEEN_SLOTS - 1);
	}
	bb__seen[i].used = 1;
	bb__seen[i].tid = tid;
	bb__seen[i].ts = ts;
	bb__seen_n++;
	return true;
}

static bool bb__seen_has(int32_t tid, uint64_t ts)
{
	uint32_t i = bb__seen_hash(tid, ts);

	while (bb__seen[i].used) {
		if (bb__seen[i].tid == tid && bb__seen[i].ts == ts)
			return true;
		i = (i + 1) & (BB__SEEN_SLOTS - 1);
	}
	return false;
}

/*
 * Move the cursor past what cannot be read at its position (FORMAT.md §8,
 * the walk of every reader: ring.h): a record the writer lapped resumes at
 * its new tail, a corrupt one at the next record that validates (the bytes
 * skipped are said by bb__dump_one()).  @rd: what bb__extent_read() said.
 */
static void bb__cursor_skip(struct bb__cursor *c, enum bb__rd rd)
{
	c->pos = bb__extent_skip(&c->v, c->pos, c->head, rd, bb__rec, &c->skipped);
}

/* Peek at the timestamp of the cursor's next record; false at the end. */
static bool bb__peek(struct bb__cursor *c, uint64_t *ts)
{
	struct bb_record_hdr h;

	if (c->peeked && c->peek_pos == c->pos && !c->done) {
		*ts = c->peek_ts; /* the same record as last time */
		return true;
	}
	while (!c->done) {
		if (bb__pos_diff(c->head, c->pos) <= 0) {
			c->done = true;
			break;
		}
		bb__extent_copy(&c->v, c->pos, &h, sizeof(h));
		if (bb__extent_seq(&c->v, c->pos) == BB_SEQ_DONE(c->pos) &&
		    bb__extent_envelope_ok(&c->v, &h, c->pos, c->head)) {
			*ts = c->peek_ts = h.ts;
			c->peek_pos = c->pos;
			c->peeked = true;
			return true;
		}
		/* Lapped or corrupt: as the reader decides, after its fence. */
		BB__FENCE_ACQUIRE();
		bb__cursor_skip(c, bb__extent_lapped(&c->v, c->pos) ? BB__RD_OVERWRITTEN
								    : BB__RD_CORRUPT);
	}
	return false;
}

/* "r<ring> corrupt: <n> bytes skipped before position <pos>", once per
 * resync, before the record the walk resumed at. */
static int bb__say_skipped(int fd, struct bb__cursor *c)
{
	const char *end = bb__line + sizeof(bb__line) - 2;
	char *p = bb__line;

	*p++ = c->kind;
	p = bb__put_u64(p, c->label, 1);
	p = bb__put_str(p, end, " corrupt: ");
	p = bb__put_u64(p, c->skipped, 1);
	p = bb__put_str(p, end, " bytes skipped before position ");
	p = bb__put_u64(p, c->pos, 1);
	*p++ = '\n';
	c->skipped = 0;
	return bb__write_all(fd, bb__line, (size_t)(p - bb__line));
}

static int bb__dump_one(int fd, const struct bb_header *hdr, struct bb__cursor *c,
			bool important, bool crc)
{
	const struct bb_record_hdr *h = (const void *)bb__rec;
	const char *end = bb__line + sizeof(bb__line) - 2;
	const uint8_t *val;
	uint32_t len;
	int32_t tid = c->tid;
	enum bb__rd rd;
	uint64_t ns;
	size_t vlen;
	char *p = bb__line;
	int n;

	if (c->skipped && (n = bb__say_skipped(fd, c)) < 0)
		return n;
	rd = bb__extent_read(&c->v, c->pos, c->head, bb__rec, &len);
	if (rd != BB__RD_OK) {
		bb__cursor_skip(c, rd);
		return 0;
	}
	/* Seconds.nanoseconds of the box clock: TSC stamps converted
	 * (clock.h); the merge compares raw stamps, same order. */
	ns = (uint64_t)bb__ts_to_ns(hdr, ((const struct bb_record_hdr *)(const void *)bb__rec)->ts);
	if (crc && !bb__record_crc_ok(bb__rec, len, BB_SEQ_DONE(c->pos), 1)) {
		p = bb__put_u64(p, ns / 1000000000u, 1);
		*p++ = '.';
		p = bb__put_u64(p, ns % 1000000000u, 9);
		*p++ = ' ';
		*p++ = c->kind;
		p = bb__put_u64(p, c->label, 1);
		p = bb__put_str(p, end, " corrupt: checksum mismatch at position ");
		p = bb__put_u64(p, c->pos, 1);
		*p++ = '\n';
		c->pos += BB_RECORD_STRIDE(len);
		return bb__write_all(fd, bb__line, (size_t)(p - bb__line));
	}
	c->pos += BB_RECORD_STRIDE(len);
	val = bb__record_value(bb__rec, len, &tid, &vlen);
	if (!val)
		return 0;
	if (important) {
		/* A copy: shown only when its original was not. */
		if (bb__seen_has(tid, h->ts))
			return 0;
	} else if (h->flags & BB_RF_IMPORTANT) {
		bb__seen_add(tid, h->ts);
	}
	if (h->tag == BB_TAG_OWNER) {
		char name[16], prev[16];
		int32_t prev_tid;

		if (bb__owner_decode(val, vlen, &tid, name, sizeof(name), &prev_tid,
				     prev, sizeof(prev)) == 0)
			c->tid = tid;
	}

	p = bb__put_u64(p, ns / 1000000000u, 1);
	*p++ = '.';
	p = bb__put_u64(p, ns % 1000000000u, 9);
	*p++ = ' ';
	*p++ = c->kind;
	p = bb__put_u64(p, c->label, 1);
	p = bb__put_str(p, end, " t");
	p = bb__put_u64(p, (uint64_t)(uint32_t)tid, 1);
	*p++ = ' ';
	p = bb__put_str(p, end, bb_tag_name(h->tag));
	*p++ = ' ';
	n = bb_format_value(h->tag, h->flags, val, vlen, p, (size_t)(end - p));
	p += n >= 0 ? (size_t)n : strlen(p);
	*p++ = '\n';
	return bb__write_all(fd, bb__line, (size_t)(p - bb__line));
}

BB_EXPORT int bb_dump(int fd)
{
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	enum bb__rb rb;
	uint32_t total;
	int ret = 0;

	if (!box)
		return -ENODEV;
	/* Acquire: the buffers a finished dump left are ours now (pairs
	 * with the release store below). */
	if (!BB__CAS_ACQUIRE(&bb__dump_busy, &(int32_t){ 0 }, 1))
		return -EBUSY;
	/* The shared ring, the important ring, then every segment. */
	total = 0;
	memset(bb__seen, 0, sizeof(bb__seen));
	bb__seen_n = 0;
	for (uint32_t i = 0; i < BB__RINGS; i++) {
		struct bb__cursor *c = &bb__cur[total++];
		struct bb_ring_desc *d = box->rings[i].desc;

		c->v = (struct bb__extent){ .desc = d, .data = box->rings[i].data,
					       .size = box->ring_size,
					       .max_record = box->max_record };
		/* The live part, as every reader checks it (ring.h): a ring
		 * whose head or tail is misaligned or reversed is not walked. */
		rb = bb__ring_bounds(&c->v, &c->head, &c->pos);
		c->skipped = 0;
		c->tid = BB__LOAD_RELAXED(&d->tid);
		c->kind = 'r';
		c->label = i;
		c->peeked = false;
		c->done = rb == BB__RB_MISALIGNED || rb == BB__RB_LAPPED;
	}
	for (uint32_t i = 0; i < box->nsegs && i < BB_SEG_MAX_COUNT; i++) {
		struct bb__cursor *c = &bb__cur[total];
		const struct bb_seg_desc *d = &box->segs[i];

		/* Owner word (acquire), start, head (acquire), as every reader
		 * reads a segment (ring.h); bb__extent_read() checks the owner
		 * word again after each copy. */
		if (bb__seg_bounds(&c->v, d, box->segdata + (size_t)i * box->seg_size,
				   box->seg_size, box->max_record, &c->pos, &c->head) != 1)
			continue; /* holds nothing of a log (or a scribbled descriptor) */
		c->skipped = 0;
		c->tid = BB__LOAD_RELAXED(&d->tid);
		c->kind = 's';
		c->label = i;
		c->peeked = false;
		c->done = false;
		total++;
	}
	for (;;) {
		uint64_t best_ts = UINT64_MAX, ts;
		uint32_t best = total;

		/* Ties go to the lower cursor, except that the important
		 * ring's loses them: an original (same stamp) is printed
		 * before its copy, which is then skipped. */
		for (uint32_t i = 0; i < total; i++)
			if (bb__peek(&bb__cur[i], &ts) &&
			    (ts < best_ts || (ts == best_ts && best == BB__IMPORTANT_IDX))) {
				best_ts = ts;
				best = i;
			}
		if (best == total)
			break;
		ret = bb__dump_one(fd, box->hdr, &bb__cur[best], best == BB__IMPORTANT_IDX,
				   box->f.crc != BB__CRC_NONE);
		if (ret < 0)
			break;
	}
	/* a corrupt stretch that ran to a ring's head */
	for (uint32_t i = 0; i < total && ret >= 0; i++)
		if (bb__cur[i].skipped)
			ret = bb__say_skipped(fd, &bb__cur[i]);
	/* Release: our use of the static buffers ends before the next dump
	 * may start. */
	BB__STORE_RELEASE(&bb__dump_busy, 0);
	return ret;
}
