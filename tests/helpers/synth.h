/* SPDX-License-Identifier: MIT */
/*
 * synth.h - build boxes by hand from blackbox/format.h, independently of the
 * writer, for the reader tests and the fuzz seed generator (header-only).
 *
 * Layout (2.x, synth_init()): header at 0, ring table at 4096, ring i's
 * data at 4096 * (1 + table pages) + i * ring_size.  Records are written
 * the way FORMAT.md §7 says (tail advanced over whole records, seq
 * DONE(pos)).
 *
 * Format 3.0 (synth3_init()): the same rings, then a thread table and a
 * segment table after the ring table, the segments' data after the rings;
 * synth3_seg() hands a segment to a log, synth3_put() appends a record to
 * it as a thread writes its log (FORMAT.md §13).
 */
#ifndef BB_TESTS_SYNTH_H
#define BB_TESTS_SYNTH_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox/format.h>

#include "common.h"

struct synth {
	uint8_t *buf;
	size_t len;
	uint32_t rings;
	uint64_t ring_size;
	int crc;         /* synth_put adds a CRC32C trailer (set by synth_use_crc) */
};

static inline struct bb_header *synth_hdr(struct synth *s)
{
	return (struct bb_header *)(void *)s->buf;
}

static inline struct bb_ring_desc *synth_desc(struct synth *s, uint32_t i)
{
	return (struct bb_ring_desc *)(void *)(s->buf + synth_hdr(s)->ring_table_offset +
					       (uint64_t)i * BB_RING_DESC_SIZE);
}

static inline uint8_t *synth_data(struct synth *s, uint32_t i)
{
	return s->buf + synth_desc(s, i)->data_offset;
}

/* This process's start time (field 22 of /proc/self/stat). */
static inline uint64_t synth_starttime(int pid)
{
	char path[64], buf[1024];
	unsigned long long st = 0;
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p)
		sscanf(p + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &st);
	return st;
}

/*
 * A box of @rings private rings of @ring_size bytes, owned by this process
 * but with a start time that does not match, so its owner counts as dead
 * (orphaned) unless synth_make_alive() is called.
 */
static inline void synth_init(struct synth *s, uint32_t rings, uint64_t ring_size)
{
	uint64_t table_pages = ((uint64_t)rings * BB_RING_DESC_SIZE + 4095) / 4096;
	uint64_t data0 = 4096 * (1 + table_pages);
	struct bb_header *h;
	FILE *f;

	s->rings = rings;
	s->ring_size = ring_size;
	s->crc = 0;
	s->len = data0 + rings * ring_size;
	s->buf = calloc(1, s->len);
	if (!s->buf)
		abort();
	h = synth_hdr(s);
	h->magic = BB_MAGIC;
	h->version_major = 2; /* the 2.x layout: private rings, no segments */
	h->version_minor = 1;
	h->header_size = BB_HEADER_SIZE;
	h->byte_order = BB_BYTE_ORDER_MARK;
	h->word_size = sizeof(void *);
	h->clock = BB_CLOCK_MONOTONIC;
	h->box_size = s->len;
	h->ring_count = rings;
	h->ring_desc_size = BB_RING_DESC_SIZE;
	h->ring_table_offset = 4096;
	h->ring_size = ring_size;
	h->max_record = ring_size < 1024 ? (uint32_t)ring_size : 1024;
	h->page_size = 4096;
	h->pid = getpid();
	h->uid = getuid();
	h->starttime = 1; /* not ours: the owner is "gone" */
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (fgets(h->boot_id, sizeof(h->boot_id), f))
			h->boot_id[strcspn(h->boot_id, "\n")] = '\0';
		fclose(f);
	}
	strcpy(h->comm, "synth");
	strcpy(h->cmdline, "synth --test");
	h->anchor_realtime_ns = 1000000000000;
	h->anchor_clock_ns = 1000;
	h->created_ns = 1;
	h->phase = BB_PHASE_RUNNING;
	for (uint32_t i = 0; i < rings; i++) {
		struct bb_ring_desc *d = synth_desc(s, i);

		d->claim = BB_RING_OWNED;
		d->kind = BB_RING_PRIVATE;
		d->tid = (int32_t)(100 + i);
		d->data_offset = data0 + i * ring_size;
		snprintf(d->thread_name, sizeof(d->thread_name), "t%u", i);
	}
}

static inline void synth_make_alive(struct synth *s)
{
	synth_hdr(s)->starttime = synth_starttime(getpid());
}

static inline void synth_free(struct synth *s)
{
	free(s->buf);
	s->buf = NULL;
}

/* Copy bytes into ring @i at position @pos, wrapping. */
static inline void synth_copy(struct synth *s, uint32_t i, uint64_t pos, const void *p, size_t n)
{
	uint8_t *d = synth_data(s, i);

	for (size_t k = 0; k < n; k++)
		d[(pos + k) & (s->ring_size - 1)] = ((const uint8_t *)p)[k];
}

static inline void synth_read(struct synth *s, uint32_t i, uint64_t pos, void *p, size_t n)
{
	uint8_t *d = synth_data(s, i);

	for (size_t k = 0; k < n; k++)
		((uint8_t *)p)[k] = d[(pos + k) & (s->ring_size - 1)];
}

/* Store the CRC trailer of the record of length @len at @rec. */
static inline void synth_seal(uint8_t *rec, uint32_t len, uint32_t seq)
{
	uint32_t c = bbt_record_crc(seq, rec, len);

	for (int k = 0; k < 4; k++)
		rec[len - 4 + k] = (uint8_t)(c >> (8 * k));
}

/* From now on records carry BB_RF_CRC and the header says BB_HF_CRC32C. */
static inline void synth_use_crc(struct synth *s)
{
	s->crc = 1;
	synth_hdr(s)->flags |= BB_HF_CRC32C;
}

static inline uint64_t synth_put_tid(struct synth *s, uint32_t i, uint8_t tag, uint8_t flags,
				     uint64_t ts, const void *val, size_t vlen, int32_t tid);

/* Append a record to ring @i as the writer does; returns its position. */
static inline uint64_t synth_put(struct synth *s, uint32_t i, uint8_t tag, uint8_t flags,
				 uint64_t ts, const void *val, size_t vlen)
{
	return synth_put_tid(s, i, tag, flags, ts, val, vlen, synth_desc(s, i)->tid);
}

/* The same with @tid in the BB_RF_TID extension (important-ring copies). */
static inline uint64_t synth_put_tid(struct synth *s, uint32_t i, uint8_t tag, uint8_t flags,
				     uint64_t ts, const void *val, size_t vlen, int32_t tid)
{
	struct bb_ring_desc *d = synth_desc(s, i);
	size_t ext = (flags & BB_RF_TID) ? 8 : 0, crc = s->crc ? 4 : 0;
	struct bb_record_hdr h = {
		.len = (uint16_t)(BB_RECORD_HDR_SIZE + ext + vlen + crc), .tag = tag,
		.flags = (uint8_t)(flags | (crc ? BB_RF_CRC : 0)), .ts = ts,
	};
	uint64_t pos = d->head, stride = BB_RECORD_STRIDE(h.len);
	static const uint8_t zero[8];
	uint8_t *lin;

	while (pos + stride - d->tail > s->ring_size) {
		struct bb_record_hdr old;

		synth_read(s, i, d->tail, &old, sizeof(old));
		d->tail += BB_RECORD_STRIDE(old.len);
	}
	h.seq = BB_SEQ_DONE(pos);
	lin = calloc(1, stride);
	if (!lin)
		abort();
	memcpy(lin, &h, sizeof(h));
	if (ext)
		memcpy(lin + 16, &tid, 4);
	memcpy(lin + 16 + ext, val, vlen);
	if (crc)
		synth_seal(lin, h.len, h.seq);
	synth_copy(s, i, pos, lin, stride);
	free(lin);
	(void)zero;
	d->head = pos + stride;
	return pos;
}

/* A write cut short at head: busy seq, head not advanced. */
static inline void synth_torn(struct synth *s, uint32_t i)
{
	struct bb_ring_desc *d = synth_desc(s, i);
	uint32_t seq = BB_SEQ_BUSY(d->head);

	synth_copy(s, i, d->head, &seq, 4);
}

/* Write the box to @path (mode 0600); 0 or -1. */
static inline int synth_save(struct synth *s, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s->buf, s->len);
	close(fd);
	return n == (ssize_t)s->len ? 0 : -1;
}

/* ---- format 3.0: segments (FORMAT.md §13) --------------------------------- */

struct synth3 {
	struct synth s;          /* header, ring table, rings (as synth_init) */
	uint32_t nsegs, nslots;
	uint64_t seg_size;
};

static inline struct bb_seg_desc *synth3_desc(struct synth3 *x, uint32_t i)
{
	return (struct bb_seg_desc *)(void *)(x->s.buf + synth_hdr(&x->s)->seg_table_offset +
					      (uint64_t)i * BB_SEG_DESC_SIZE);
}

static inline struct bb_thread_slot *synth3_slot(struct synth3 *x, uint32_t i)
{
	return (struct bb_thread_slot *)(void *)(x->s.buf +
						  synth_hdr(&x->s)->thread_table_offset +
						  (uint64_t)i * BB_THREAD_SLOT_SIZE);
}

static inline uint8_t *synth3_data(struct synth3 *x, uint32_t i)
{
	return x->s.buf + synth_hdr(&x->s)->seg_data_offset + (uint64_t)i * x->seg_size;
}

/*
 * A 3.0 box: a shared and an important ring of @ring_size bytes (the ring
 * table), @nslots thread slots (FREE, queues empty) and @nsegs FREE
 * segments of @seg_size bytes.  Its owner is "gone" as synth_init()'s.
 */
static inline void synth3_init(struct synth3 *x, uint32_t nsegs, uint64_t seg_size,
			       uint32_t nslots, uint64_t ring_size)
{
	struct synth *s = &x->s;
	uint64_t tables, table_pages, data0, seg0;
	struct bb_header *h;
	uint8_t *buf;

	synth_init(s, 2, ring_size);
	tables = 2 * BB_RING_DESC_SIZE + (uint64_t)nslots * BB_THREAD_SLOT_SIZE +
		 (uint64_t)nsegs * BB_SEG_DESC_SIZE;
	table_pages = (tables + 4095) / 4096;
	data0 = 4096 * (1 + table_pages);
	seg0 = data0 + 2 * ring_size;
	buf = calloc(1, seg0 + nsegs * seg_size);
	if (!buf)
		abort();
	memcpy(buf, s->buf, BB_HEADER_SIZE + 2 * BB_RING_DESC_SIZE);
	free(s->buf);
	s->buf = buf;
	s->len = seg0 + nsegs * seg_size;
	x->nsegs = nsegs;
	x->nslots = nslots;
	x->seg_size = seg_size;
	h = synth_hdr(s);
	h->version_major = 3;
	h->version_minor = 0;
	h->box_size = s->len;
	h->max_record = seg_size < 1024 ? (uint32_t)seg_size : 1024;
	h->thread_count = nslots;
	h->thread_slot_size = BB_THREAD_SLOT_SIZE;
	h->thread_table_offset = 4096 + 2 * BB_RING_DESC_SIZE;
	h->seg_count = nsegs;
	h->seg_size = (uint32_t)seg_size;
	h->seg_desc_size = BB_SEG_DESC_SIZE;
	h->seg_table_offset = h->thread_table_offset + (uint64_t)nslots * BB_THREAD_SLOT_SIZE;
	h->seg_data_offset = seg0;
	for (uint32_t i = 0; i < 2; i++) {
		struct bb_ring_desc *d = synth_desc(s, i);

		memset(d, 0, sizeof(*d));
		d->claim = BB_RING_OWNED;
		d->kind = i ? BB_RING_IMPORTANT : BB_RING_SHARED;
		d->data_offset = data0 + i * ring_size;
	}
	for (uint32_t i = 0; i < nslots; i++)
		synth3_slot(x, i)->queue = BB_QUEUE(BB_SEG_NONE, 0);
}

/* Hand segment @i to log @log (thread @tid "@name", slot @slot) from log
 * position @start, as bb__seg_use() leaves it: state @state (OPEN or
 * SEALED), generation @gen, empty. */
static inline void synth3_seg(struct synth3 *x, uint32_t i, uint32_t state, uint32_t gen,
			      uint32_t log, uint64_t start, int32_t tid, const char *name,
			      uint32_t slot)
{
	struct bb_seg_desc *d = synth3_desc(x, i);

	memset(d, 0, sizeof(*d));
	d->own = BB_SEG_OWN(state, gen, log);
	d->start = d->head = start;
	d->next = BB_SEG_NONE;
	d->tid = tid;
	d->slot = slot;
	snprintf(d->thread_name, sizeof(d->thread_name), "%s", name);
}

/* A thread slot, as bb__seg_join() and the thread's writes leave it. */
static inline void synth3_thread(struct synth3 *x, uint32_t k, uint32_t claim, uint32_t log,
				 int32_t tid, const char *name, uint32_t oldest, uint32_t oldest_ord,
				 uint32_t current, uint32_t cur_ord)
{
	struct bb_thread_slot *t = synth3_slot(x, k);

	memset(t, 0, sizeof(*t));
	t->queue = BB_QUEUE(oldest, oldest_ord);
	t->claim = claim;
	t->log = log;
	t->tid = tid;
	t->current = current;
	t->cur_ord = cur_ord;
	snprintf(t->thread_name, sizeof(t->thread_name), "%s", name);
}

/* Append a record to segment @i at its head, as its thread writes its log;
 * returns its log position. */
static inline uint64_t synth3_put(struct synth3 *x, uint32_t i, uint8_t tag, uint8_t flags,
				  uint64_t ts, const void *val, size_t vlen)
{
	struct bb_seg_desc *d = synth3_desc(x, i);
	size_t crc = x->s.crc ? 4 : 0;
	struct bb_record_hdr h = {
		.len = (uint16_t)(BB_RECORD_HDR_SIZE + vlen + crc), .tag = tag,
		.flags = (uint8_t)(flags | (crc ? BB_RF_CRC : 0)), .ts = ts,
	};
	uint64_t pos = d->head, stride = BB_RECORD_STRIDE(h.len);
	uint8_t *at = synth3_data(x, i) + (pos - d->start);

	if (pos - d->start + stride > x->seg_size)
		abort(); /* a record never spans segments: the test is wrong */
	h.seq = BB_SEQ_DONE(pos);
	memcpy(at, &h, sizeof(h));
	memcpy(at + BB_RECORD_HDR_SIZE, val, vlen);
	if (crc)
		synth_seal(at, h.len, h.seq);
	d->head = pos + stride;
	return pos;
}

/* A str record in segment @i. */
static inline uint64_t synth3_str(struct synth3 *x, uint32_t i, uint64_t ts, const char *str);

/* Minimal CBOR encoders for test values (definite lengths). */
static inline size_t cb_head(uint8_t *p, unsigned major, uint64_t v)
{
	if (v < 24) {
		p[0] = (uint8_t)(major << 5 | v);
		return 1;
	}
	if (v <= 0xff) {
		p[0] = (uint8_t)(major << 5 | 24);
		p[1] = (uint8_t)v;
		return 2;
	}
	if (v <= 0xffff) {
		p[0] = (uint8_t)(major << 5 | 25);
		p[1] = (uint8_t)(v >> 8);
		p[2] = (uint8_t)v;
		return 3;
	}
	p[0] = (uint8_t)(major << 5 | 27);
	for (int k = 0; k < 8; k++)
		p[1 + k] = (uint8_t)(v >> (56 - 8 * k));
	return 9;
}

static inline size_t cb_text(uint8_t *p, const char *s)
{
	size_t n = strlen(s), h = cb_head(p, 3, n);

	memcpy(p + h, s, n);
	return h + n;
}

static inline size_t cb_int(uint8_t *p, int64_t v)
{
	return v < 0 ? cb_head(p, 1, (uint64_t)(-1 - v)) : cb_head(p, 0, (uint64_t)v);
}

static inline size_t cb_f64(uint8_t *p, double d)
{
	uint64_t b;

	memcpy(&b, &d, 8);
	p[0] = 0xfb;
	for (int k = 0; k < 8; k++)
		p[1 + k] = (uint8_t)(b >> (56 - 8 * k));
	return 9;
}

/* Append a str record. */
static inline uint64_t synth_str(struct synth *s, uint32_t i, uint64_t ts, const char *str)
{
	uint8_t v[1100];
	size_t n = cb_text(v, str);

	return synth_put(s, i, BB_TAG_STR, 0, ts, v, n);
}

static inline uint64_t synth3_str(struct synth3 *x, uint32_t i, uint64_t ts, const char *str)
{
	uint8_t v[1100];
	size_t n = cb_text(v, str);

	return synth3_put(x, i, BB_TAG_STR, 0, ts, v, n);
}

/* Append an owner record: [tid, name, prev_tid, prev_name]. */
static inline uint64_t synth_owner(struct synth *s, uint32_t i, uint64_t ts, int32_t tid,
				   const char *name, int32_t ptid, const char *pname)
{
	uint8_t v[128];
	size_t n = 0;

	v[n++] = 0x84;
	n += cb_int(v + n, tid);
	n += cb_text(v + n, name);
	n += cb_int(v + n, ptid);
	n += cb_text(v + n, pname);
	return synth_put(s, i, BB_TAG_OWNER, 0, ts, v, n);
}

/* ---- format 2.0 areas ---------------------------------------------------- */

/* Append @n bytes (page rounded) at the end of the box; their offset. */
static inline uint64_t synth_grow(struct synth *s, size_t n)
{
	uint64_t off = s->len;
	size_t add = (n + 4095) & ~(size_t)4095;

	s->buf = realloc(s->buf, s->len + add);
	if (!s->buf)
		abort();
	memset(s->buf + off, 0, add);
	s->len += add;
	synth_hdr(s)->box_size = s->len;
	return off;
}

/* A state table of @slots slots of @size bytes, after the ring data. */
static inline void synth_add_state(struct synth *s, uint32_t slots, uint32_t size)
{
	uint64_t off = synth_grow(s, (size_t)slots * size);
	struct bb_header *h = synth_hdr(s);

	h->state_table_offset = off;
	h->state_slot_count = slots;
	h->state_slot_size = size;
}

static inline uint8_t *synth_slot(struct synth *s, uint32_t k)
{
	struct bb_header *h = synth_hdr(s);

	return s->buf + h->state_table_offset + (uint64_t)k * h->state_slot_size;
}

/*
 * Write slot @k as bb_set() leaves it: seq @seq (even), envelope, value
 * [key, <@vlen bytes of CBOR at @val>], CRC computed with @seq when the box
 * uses CRCs.  Returns the slot's len.
 */
static inline uint16_t synth_state(struct synth *s, uint32_t k, uint32_t seq, uint64_t ts,
				   const char *key, const void *val, size_t vlen)
{
	uint8_t *p = synth_slot(s, k);
	size_t n = BB_RECORD_HDR_SIZE;
	struct bb_record_hdr h = { .seq = seq, .tag = BB_TAG_STATE, .ts = ts };

	p[n++] = 0x82;
	n += cb_text(p + n, key);
	memcpy(p + n, val, vlen);
	n += vlen;
	if (s->crc) {
		h.flags |= BB_RF_CRC;
		n += 4;
	}
	h.len = (uint16_t)n;
	memcpy(p, &h, sizeof(h));
	if (s->crc)
		synth_seal(p, h.len, seq);
	return h.len;
}

/* The crash area as the crash handler leaves it (complete, with CRC). */
static inline void synth_crash(struct synth *s, uint64_t ts, int sig, int code, uint64_t addr,
			       int tid, const char *thread, const uint64_t *frames, size_t nf)
{
	uint8_t *p = synth_hdr(s)->crash;
	size_t n = BB_RECORD_HDR_SIZE;
	struct bb_record_hdr h = { .seq = BB_CRASH_SEQ_DONE, .tag = BB_TAG_CRASH,
				   .flags = BB_RF_CRC, .ts = ts };

	p[n++] = 0xa6;
	n += cb_text(p + n, "signal");
	n += cb_int(p + n, sig);
	n += cb_text(p + n, "code");
	n += cb_int(p + n, code);
	n += cb_text(p + n, "addr");
	n += cb_head(p + n, 0, addr);
	n += cb_text(p + n, "tid");
	n += cb_int(p + n, tid);
	n += cb_text(p + n, "thread");
	n += cb_text(p + n, thread);
	n += cb_text(p + n, "frames");
	n += cb_head(p + n, 4, nf);
	for (size_t k = 0; k < nf; k++)
		n += cb_head(p + n, 0, frames[k]);
	h.len = (uint16_t)(n + 4);
	memcpy(p, &h, sizeof(h));
	synth_seal(p, h.len, BB_CRASH_SEQ_DONE);
}

struct synth_mod {
	const char *path;
	uint64_t bias, start, end;
	const char *build_id; /* bytes ... */
	size_t build_id_len;  /* ... this many, or as a C string when 0 */
};

/* A module area of @size bytes holding @mods (seq @seq). */
static inline void synth_modules(struct synth *s, size_t size, uint32_t seq,
				 const struct synth_mod *mods, size_t n)
{
	uint64_t off = synth_grow(s, size);
	struct bb_header *h = synth_hdr(s);
	uint8_t *p = s->buf + off + sizeof(struct bb_modules_hdr), *q = p;
	struct bb_modules_hdr mh = { .seq = seq, .ts = 5, .count = (uint32_t)n };

	h->modules_offset = off;
	h->modules_size = (uint32_t)size;
	q += cb_head(q, 4, n);
	for (size_t k = 0; k < n; k++) {
		size_t bl = mods[k].build_id_len ? mods[k].build_id_len : strlen(mods[k].build_id);

		*q++ = 0x85;
		q += cb_text(q, mods[k].path);
		q += cb_head(q, 0, mods[k].bias);
		q += cb_head(q, 0, mods[k].start);
		q += cb_head(q, 0, mods[k].end);
		q += cb_head(q, 2, bl);
		memcpy(q, mods[k].build_id, bl);
		q += bl;
	}
	mh.len = (uint32_t)(q - p);
	memcpy(s->buf + off, &mh, sizeof(mh));
}

#endif /* BB_TESTS_SYNTH_H */
