/* SPDX-License-Identifier: MIT */
/*
 * reader_areas.c - the 2.0 areas of a box (FORMAT.md §11): the crash
 * area in the header, the state table and the module area, each copied
 * under its own protocol and decoded with the project's CBOR decoder
 * (shared/cbor.h).
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/cbor.h"
#include "barrier.h"
#include "crc32c.h"
#include "internal.h"
#include "reader_int.h"

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
	case BB_CRASH_NO_ANSWER: return "no answer";
	default:                return "unknown";
	}
}

/* A text value into @dst (@size bytes), cut to fit, NUL-terminated; its
 * length kept. */
static size_t copy_text(char *dst, size_t size, const uint8_t *t, size_t tn)
{
	if (tn >= size)
		tn = size - 1;
	memcpy(dst, t, tn);
	dst[tn] = '\0';
	return tn;
}

/* Decode the crash map of FORMAT §11 into @c; keys it does not know are
 * skipped.  Returns NULL or what is wrong. */
static const char *crash_decode(struct bb__cbor *in, struct bb_crash *c)
{
	uint64_t n, nf, u, at, cnt;
	int64_t i;
	const uint8_t *k, *t;
	size_t kn, tn;

	if (bb__cbor_container(in, 5, &n))
		return "value is not a CBOR map";
	for (uint64_t e = 0; e < n; e++) {
		if (bb__cbor_string(in, 3, &k, &kn))
			return "a key is not a text string";
		if (key_is(k, kn, "kind")) {
			if (bb__cbor_string(in, 3, &t, &tn))
				return "\"kind\" is not a text string";
			c->kind = key_is(t, tn, "signal") ? BB_CRASH_KIND_SIGNAL
				: key_is(t, tn, "fatal") ? BB_CRASH_KIND_FATAL
				: key_is(t, tn, "thread") ? BB_CRASH_KIND_THREAD
				: BB_CRASH_KIND_UNKNOWN;
		} else if (key_is(k, kn, "signal")) {
			if (bb__cbor_uint(in, &u) || u > INT32_MAX)
				return "\"signal\" is not a small unsigned integer";
			c->signal = (int32_t)u;
		} else if (key_is(k, kn, "code")) {
			if (bb__cbor_int(in, &i) || i < INT32_MIN || i > INT32_MAX)
				return "\"code\" is not a 32-bit integer";
			c->code = (int32_t)i;
		} else if (key_is(k, kn, "addr") || key_is(k, kn, "sp")) {
			bool sp = kn == 2;

			if (bb__cbor_uint(in, sp ? &c->sp : &c->addr))
				return sp ? "\"sp\" is not an unsigned integer"
					  : "\"addr\" is not an unsigned integer";
			*(sp ? &c->has_sp : &c->has_addr) = true;
		} else if (key_is(k, kn, "reason")) {
			if (bb__cbor_string(in, 3, &t, &tn))
				return "\"reason\" is not a text string";
			c->reason_len = (uint32_t)copy_text(c->reason, sizeof(c->reason), t, tn);
		} else if (key_is(k, kn, "tid")) {
			if (bb__cbor_int(in, &i) || i < INT32_MIN || i > INT32_MAX)
				return "\"tid\" is not a 32-bit integer";
			c->tid = (int32_t)i;
		} else if (key_is(k, kn, "thread")) {
			if (bb__cbor_string(in, 3, &t, &tn))
				return "\"thread\" is not a text string";
			copy_text(c->thread, sizeof(c->thread), t, tn);
		} else if (key_is(k, kn, "frames")) {
			if (bb__cbor_container(in, 4, &nf))
				return "\"frames\" is not an array";
			for (uint64_t f = 0; f < nf; f++) {
				if (bb__cbor_uint(in, &u))
					return "a frame is not an unsigned integer";
				if (c->nframes < BB_CRASH_MAX_FRAMES)
					c->frames[c->nframes++] = u;
				else
					c->frames_truncated = true;
			}
		} else if (key_is(k, kn, "omitted")) {
			if (bb__cbor_container(in, 4, &u) || u != 2 ||
			    bb__cbor_uint(in, &at) || bb__cbor_uint(in, &cnt) ||
			    at > UINT32_MAX || cnt > UINT32_MAX)
				return "\"omitted\" is not [index, count]";
			c->omitted_at = (uint32_t)at;
			c->frames_omitted = (uint32_t)cnt;
		} else if (key_is(k, kn, "trampolines")) {
			if (bb__cbor_container(in, 4, &nf))
				return "\"trampolines\" is not an array";
			for (uint64_t f = 0; f < nf; f++) {
				if (bb__cbor_uint(in, &u))
					return "a trampoline is not an unsigned integer";
				if (u < BB_CRASH_MAX_FRAMES)
					c->frame_flags[u] |= BB_CRASH_FRAME_SIGNAL;
			}
		} else if (bb__cbor_skip(in, 1, NULL)) {
			return "an unknown key's value is not well-formed CBOR";
		}
	}
	if (in->p != in->end)
		return "trailing bytes after the CBOR map";
	if (c->omitted_at > c->nframes)
		return "\"omitted\" points outside the frames";
	return NULL;
}

/* What the decoded keys imply, once all are known (they come in any
 * order): which frames are exact instructions, and whether the stack ran
 * out (FORMAT §11). */
static void crash_derive(struct bb_crash *c)
{
	uint64_t d;

	for (uint32_t i = c->nframes; i < BB_CRASH_MAX_FRAMES; i++)
		c->frame_flags[i] = 0;   /* trampolines past the frames */
	/* a signal record's frame 0 is the interrupted instruction, and so
	 * is a crash stack's (the request interrupted its thread there) */
	if ((c->kind == BB_CRASH_KIND_SIGNAL || c->kind == BB_CRASH_KIND_THREAD) && c->nframes)
		c->frame_flags[0] |= BB_CRASH_FRAME_EXACT;
	/* so is the frame a trampoline returns into, unless frames were
	 * left out between the two */
	for (uint32_t i = 0; i + 1 < c->nframes; i++)
		if ((c->frame_flags[i] & BB_CRASH_FRAME_SIGNAL) &&
		    !(c->frames_omitted && i + 1 == c->omitted_at))
			c->frame_flags[i + 1] |= BB_CRASH_FRAME_EXACT;
	if (c->kind != BB_CRASH_KIND_SIGNAL || c->signal != SIGSEGV || !c->has_addr ||
	    !c->has_sp)
		return;
	d = c->addr > c->sp ? c->addr - c->sp : c->sp - c->addr;
	c->stack_overflow = d < BB_CRASH_OVERFLOW_RANGE;
}

/*
 * Decode one crash record area (the crash area, or a crash stack slot) of
 * the box at @off into @out; @what names it in a problem.  Never fails.
 */
static void crash_area(struct bb_reader *r, uint64_t off, uint32_t size, const char *what,
		       struct bb_crash *out)
{
	uint8_t area[BB_CRASH_SIZE] = { 0 };
	struct bb_record_hdr h;
	const char *why = NULL;
	const uint8_t *v;
	struct bb__cbor c;
	int32_t tid = 0;
	uint32_t seq;
	size_t vlen;

	memset(out, 0, sizeof(*out));
	/* Acquire: pairs with the writer's release store of seq = DONE
	 * after the last byte of the area: a DONE seen here means the copy
	 * below holds the whole record.  The area is written once (the
	 * first fatal signal wins; a crash stack slot once, by the thread
	 * asked), so no re-check is needed after the copy; a concurrent
	 * second writer would be the CRC's to catch. */
	seq = BB__LOAD_ACQUIRE((uint32_t *)(uintptr_t)(r->base + off));
	memcpy(area, r->base + off, size);   /* size <= BB_CRASH_SIZE: checked at open */
	memcpy(&h, area, sizeof(h));
	h.seq = seq;
	if (seq == BB_CRASH_SEQ_EMPTY) {
		out->status = BB_CRASH_NONE;
		return;
	}
	if (seq == BB_CRASH_SEQ_BUSY) {
		out->status = BB_CRASH_TORN;
		snprintf(out->problem, sizeof(out->problem),
			 "%s torn: its writer started and did not finish", what);
		return;
	}
	if (seq == BB_CRASH_SEQ_ASKED || seq == BB_CRASH_SEQ_NO_ANSWER ||
	    seq == BB_CRASH_SEQ_NOT_ASKED) {
		/* a crash stack slot: whom the crashing thread asked */
		memcpy(&out->tid, area + BB_RECORD_HDR_SIZE, sizeof(out->tid));
		copy_text(out->thread, sizeof(out->thread), area + BB_RECORD_HDR_SIZE + 4,
			  strnlen((const char *)area + BB_RECORD_HDR_SIZE + 4, 15));
		out->kind = BB_CRASH_KIND_THREAD;
		out->status = BB_CRASH_NO_ANSWER;
		snprintf(out->problem, sizeof(out->problem), "%s", seq == BB_CRASH_SEQ_ASKED ?
			 "asked, no answer yet" : seq == BB_CRASH_SEQ_NO_ANSWER ?
			 "no answer within the bound (100 ms)" :
			 "not asked: the program had replaced the handler of the stack signal");
		return;
	}
	out->status = BB_CRASH_CORRUPT;
	if (seq != BB_CRASH_SEQ_DONE)
		why = "seq word is not empty, busy or complete";
	else if (h.len < BB_RECORD_HDR_SIZE + BB_CRC_SIZE + 1 || h.len > size)
		why = "length outside the area";
	else if (h.tag != BB_TAG_CRASH)
		why = "tag is not BB_TAG_CRASH";
	else if (!(h.flags & BB_RF_CRC))
		why = "no checksum (BB_RF_CRC missing)";
	else if (!(out->crc_ok = bb__record_crc_ok(area, h.len, BB_CRASH_SEQ_DONE, 1)))
		why = "CRC32C mismatch";
	else if (!(v = bb__record_value(area, h.len, &tid, &vlen)) || !vlen)
		why = "no room for the value";
	if (!why) {
		c = (struct bb__cbor){ .p = v, .end = v + vlen };
		why = crash_decode(&c, out);
	}
	if (why) { /* keep nothing half-decoded */
		memset(out, 0, offsetof(struct bb_crash, problem));
		out->status = BB_CRASH_CORRUPT;
		out->crc_ok = seq == BB_CRASH_SEQ_DONE && h.len >= BB_RECORD_HDR_SIZE +
			BB_CRC_SIZE && h.len <= size &&
			bb__record_crc_ok(area, h.len, BB_CRASH_SEQ_DONE, 1);
		snprintf(out->problem, sizeof(out->problem), "%s: %s", what, why);
		return;
	}
	crash_derive(out);
	out->status = BB_CRASH_COMPLETE;
	out->ts = bb__rdr_ns(r, h.ts);
	out->wall_ns = bb__rdr_wall(r, h.ts);
}

BB_EXPORT int bb_reader_crash(struct bb_reader *r, struct bb_crash *out)
{
	if (!r || !out)
		return -EINVAL;
	/* a live reader takes the header as it is now; one that cannot be
	 * read (the file shrank) leaves the copy taken at open */
	if (r->fd >= 0)
		(void)bb__rdr_fetch(r, 0, BB_HEADER_SIZE);
	crash_area(r, offsetof(struct bb_header, crash), BB_CRASH_SIZE, "crash area", out);
	if (out->status == BB_CRASH_TORN)
		snprintf(out->problem, sizeof(out->problem),
			 "crash record torn: the handler started and did not finish");
	return 0;
}

BB_EXPORT int bb_reader_crash_stacks(struct bb_reader *r, uint32_t *slots, uint32_t *asked)
{
	const struct bb_header *hd;

	if (!r || !slots || !asked)
		return -EINVAL;
	if (r->fd >= 0)
		(void)bb__rdr_fetch(r, 0, BB_HEADER_SIZE);
	hd = (const struct bb_header *)(const void *)r->base;
	*slots = r->nstacks;
	/* Relaxed: a count, ordered with nothing. */
	*asked = r->nstacks ? BB__LOAD_RELAXED((uint32_t *)(uintptr_t)&hd->crash_stacks_asked) : 0;
	return 0;
}

BB_EXPORT int bb_reader_crash_threads(struct bb_reader *r, uint32_t *threads)
{
	const struct bb_header *hd;

	if (!r || !threads)
		return -EINVAL;
	if (r->fd >= 0)
		(void)bb__rdr_fetch(r, 0, BB_HEADER_SIZE);
	hd = (const struct bb_header *)(const void *)r->base;
	/* 3.2 and later: before, the bytes were reserved.  Relaxed: a
	 * count, ordered with nothing. */
	*threads = hd->version_major > 3 || (hd->version_major == 3 && hd->version_minor >= 2) ?
		BB__LOAD_RELAXED((uint32_t *)(uintptr_t)&hd->crash_threads) : 0;
	return 0;
}

BB_EXPORT int bb_reader_crash_stack(struct bb_reader *r, uint32_t i, struct bb_crash *out)
{
	if (!r || !out)
		return -EINVAL;
	if (i >= r->nstacks)
		return -ENOENT;
	if (r->fd >= 0 && bb__rdr_fetch(r, r->stacks_off + (uint64_t)i * r->stack_size,
					 r->stack_size) < 0) {
		memset(out, 0, sizeof(*out));
		out->status = BB_CRASH_NONE;
		return 0;
	}
	crash_area(r, r->stacks_off + (uint64_t)i * r->stack_size, r->stack_size, "crash stack",
		   out);
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
			rc = bb__rdr_pread_all(r->fd, &s1, sizeof(s1), off);
			if (rc)
				return rc;
			/* The kernel's loads of each read are ordered by the
			 * system call (a full barrier) and these fences:
			 * pairs with the writer's release store that makes seq
			 * even after its last byte, and with its release fence
			 * after making seq odd, before its first byte. */
			BB__FENCE_ACQUIRE();
			if (s1 & 1)
				continue;
			rc = bb__rdr_pread_all(r->fd, dst, n, off);
			BB__FENCE_ACQUIRE();
			if (!rc)
				rc = bb__rdr_pread_all(r->fd, &s2, sizeof(s2), off);
			if (rc)
				return rc;
			if (s1 == s2)
				return s1;
			continue;
		}
		/* Acquire: pairs with the writer's release store that makes
		 * seq even after its last byte: an even seq seen here means
		 * the bytes of that change are visible to the copy. */
		s1 = bb__seqcount_read_begin(seqp);
		if (s1 & 1)
			continue;
		/* The intended seqlock race: a writer may change the bytes
		 * while we copy; the re-read below tells. */
		memcpy(dst, r->base + off, n);
		/* Pairs with the writer's release fence after it makes seq
		 * odd and before its first byte: if the copy saw any byte of
		 * a later change, the odd (or newer) seq is visible below
		 * (fence-fence synchronisation, as in bb__extent_read()). */
		if (!bb__seqcount_read_retry(seqp, s1))
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
	struct bb__cbor c;

	if (h->len < BB_RECORD_HDR_SIZE + 1 || h->len > r->slot_size)
		return "length outside the slot";
	if (h->tag != BB_TAG_STATE)
		return "tag is not BB_TAG_STATE";
	if (!bb__record_crc_ok(slot, h->len, seq, r->info.flags & BB_HF_CRC32C))
		return (h->flags & BB_RF_CRC) ? "CRC32C mismatch" : "no checksum (BB_RF_CRC missing)";
	v = bb__record_value(slot, h->len, &tid, &vlen);
	if (!v || !vlen)
		return "no room for the value";
	c = (struct bb__cbor){ .p = v, .end = v + vlen };
	if (bb__cbor_container(&c, 4, &n) || n != 2)
		return "value is not an array of 2";
	if (bb__cbor_string(&c, 3, &k, &kn))
		return "key is not a text string";
	if (bb__cbor_skip(&c, 1, NULL) || c.p != c.end)
		return "value is not one well-formed CBOR item";
	e->key = (const char *)k;
	e->key_len = kn;
	e->value = v;
	e->value_len = vlen;
	e->ts = bb__rdr_ns(r, h->ts);
	e->wall_ns = bb__rdr_wall(r, h->ts);
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
	/*
	 * A live reader first copies the whole table with one read, to skip
	 * the slots never written (seq and len 0, as the box was created:
	 * seq only grows), then reads each other slot under its seqlock: a
	 * box with a few keys costs a few reads, not three per slot.  A slot
	 * first written after that copy is left out, as if this call had
	 * come a moment earlier.
	 */
	if (r->fd >= 0 && (rc = bb__rdr_fetch(r, r->state_off,
					       (uint64_t)tot.slots * r->slot_size)))
		return rc;
	for (uint32_t i = 0; i < tot.slots && !rc; i++) {
		struct bb_state_entry e = { .slot = i, .problem = "" };
		uint64_t off = r->state_off + (uint64_t)i * r->slot_size;
		const struct bb_record_hdr *h = (const struct bb_record_hdr *)(void *)r->slot;
		const char *why;
		int64_t seq;

		if (r->fd >= 0) {
			struct bb_record_hdr fresh;

			memcpy(&fresh, r->base + off, sizeof(fresh));
			if (!fresh.seq && !fresh.len)
				continue; /* never written */
		}
		seq = copy_seqlocked(r, off, r->slot, r->slot_size);

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
	struct bb__cbor c = { .p = p, .end = p + len };
	char *str;
	uint64_t n, m;

	if (bb__cbor_container(&c, 4, &n))
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

		if (bb__cbor_container(&c, 4, &m) || m < 5)
			return "an entry is not an array of 5";
		if (bb__cbor_string(&c, 3, &s, &sn))
			return "a path is not a text string";
		memcpy(str, s, sn);
		str[sn] = '\0';
		md->path = str;
		str += sn + 1;
		if (bb__cbor_uint(&c, &md->bias) || bb__cbor_uint(&c, &md->start) ||
		    bb__cbor_uint(&c, &md->end))
			return "bias, start or end is not an unsigned integer";
		if (md->end < md->start)
			return "an entry ends before it starts";
		if (bb__cbor_string(&c, 2, &md->build_id, &md->build_id_len))
			return "a build id is not a byte string";
		for (uint64_t k = 5; k < m; k++) /* later minor versions: ignored */
			if (bb__cbor_skip(&c, 1, NULL))
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
		return bb__rdr_say(err, errlen, -EINVAL, "no reader or output");
	*mods = NULL;
	*count = 0;
	if (flags)
		*flags = 0;
	if (!r->info.modules_size)
		return bb__rdr_say(err, errlen, -ENODATA, "%s",
			   r->info.modules_problem[0] ? r->info.modules_problem
						     : "the box has no module area");
	size = r->info.modules_size;
	if (!r->modbuf && !(r->modbuf = malloc(size)))
		return bb__rdr_say(err, errlen, -ENOMEM, "out of memory");
	seq = copy_seqlocked(r, r->modules_off, r->modbuf, size);
	if (seq == -EBUSY)
		return bb__rdr_say(err, errlen, -EBUSY,
			   "module area: being rewritten through %d tries", BB_STATE_RETRIES);
	if (seq < 0)
		return bb__rdr_load_failed(err, errlen, "module area", (int)seq);
	memcpy(&mh, r->modbuf, sizeof(mh));
	if (mh.len > size - sizeof(mh))
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "module area: %" PRIu32 " bytes of CBOR do not fit its %zu bytes",
			   mh.len, size - sizeof(mh));
	why = modules_decode(r, r->modbuf + sizeof(mh), mh.len, count);
	if (why) {
		*count = 0;
		return bb__rdr_say(err, errlen, strcmp(why, "out of memory") ? -EBADMSG : -ENOMEM,
			   "module area: %s", why);
	}
	if (mh.count != *count) {
		size_t n = *count;

		*count = 0;
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "module area: header says %" PRIu32 " modules, the array has %zu",
			   mh.count, n);
	}
	if (flags && (mh.flags & BB_MF_TRUNCATED))
		*flags |= BB_MODULES_TRUNCATED;
	*mods = r->mods;
	return 0;
}
