/* SPDX-License-Identifier: MIT */
/*
 * spans.c - each thread's open spans as the walk goes by (spans.h), and
 * what bb-extract's text and JSON say of them after the records: for every
 * thread, the spans it was inside when its process died (or when the box
 * was read), innermost first, with their fields and how long they had been
 * open, and those whose begin was overwritten.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>

#include "../shared/cbor.h"
#include "../shared/grow.h"
#include "extract.h"
#include "spans.h"

int bbx_span_parse(const uint8_t *value, size_t len, struct bbx_span_rec *out)
{
	struct bb__cbor c = { value, value + len };
	struct bb__cbor_item h;
	uint64_t n, depth;

	if (bb__cbor_container(&c, 4, &n) || n < 3 || n > 5)
		return -1;
	out->name = c.p;
	if (bb__cbor_read_head(&c, &h) || h.major != 3 || h.arg > bb__cbor_left(&c))
		return -1;
	c.p += h.arg;
	out->fields = c.p;
	if (c.p >= c.end || *c.p >> 5 != 5 || bb__cbor_skip(&c, 0, NULL))
		return -1;
	out->end = c.p;
	if (bb__cbor_uint(&c, &depth) || depth == 0 || depth > UINT32_MAX)
		return -1;
	out->depth = (uint32_t)depth;
	out->flow = 0;
	out->ctx = NULL;
	if (n >= 4) {
		if (c.p < c.end && *c.p == 0xf6)
			c.p++;
		else if (bb__cbor_uint(&c, &out->flow))
			return -1;
	}
	if (n == 5) {
		const uint8_t *s;
		size_t sl;

		if (bb__cbor_string(&c, 2, &s, &sl) || sl != BB_SPAN_CTX_SIZE)
			return -1;
		out->ctx = s;
	}
	return c.p == c.end ? 0 : -1;
}

static size_t hash_tid(int32_t tid, size_t mask)
{
	return ((uint32_t)tid * 2654435761u) & mask;
}

static int rehash(struct bbx_spans *s, size_t nslot)
{
	uint32_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		size_t h = hash_tid(s->t[i].tid, nslot - 1);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(s->slot);
	s->slot = slot;
	s->nslot = nslot;
	return 0;
}

long bbx_spans_thread(struct bbx_spans *s, int32_t tid, const char *name)
{
	struct bbx_span_thr *t;
	size_t h;

	if (s->nslot) {
		for (h = hash_tid(tid, s->nslot - 1); s->slot[h]; h = (h + 1) & (s->nslot - 1))
			if (s->t[s->slot[h] - 1].tid == tid)
				return (long)s->slot[h] - 1;
	}
	if ((s->n + 1) * 2 > s->nslot && rehash(s, s->nslot ? 2 * s->nslot : 64))
		return -1;
	if (bb__grow((void **)&s->t, &s->cap, s->n + 1, sizeof(*s->t)))
		return -1;
	t = &s->t[s->n];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	snprintf(t->name, sizeof(t->name), "%s", name ? name : "");
	for (h = hash_tid(tid, s->nslot - 1); s->slot[h]; h = (h + 1) & (s->nslot - 1))
		;
	s->slot[h] = (uint32_t)s->n + 1;
	return (long)s->n++;
}

/* Close the spans of @t at @depth and deeper. */
static void close_from(struct bbx_span_thr *t, uint32_t depth, struct bbx_span_note *note)
{
	while (t->n && t->v[t->n - 1].depth >= depth) {
		struct bbx_span *sp = &t->v[--t->n];

		note->matched |= sp->depth == depth;
		note->closed++;
		t->blen = sp->off;
	}
	if (!t->n && !note->matched && depth > 1)
		t->unknown = depth - 1;    /* the outer ones are open, begins gone */
	else if (depth <= t->unknown)
		t->unknown = depth - 1;
}

int bbx_spans_note(struct bbx_spans *s, size_t ti, const struct bb_record *rec,
		   struct bbx_span_note *note)
{
	struct bbx_span_thr *t = &s->t[ti];
	struct bb__cbor c = { rec->value, rec->value + rec->value_len };
	uint64_t depth;

	note->what = BBX_SPAN_NONE;
	t->records++;
	if (rec->ts > s->newest_ts)
		s->newest_ts = rec->ts;
	if (rec->tag == BB_TAG_SPAN_END) {
		if (bb__cbor_uint(&c, &depth) || c.p != c.end || !depth || depth > UINT32_MAX)
			return 0;
		note->what = BBX_SPAN_CLOSED;
		note->closed = 0;
		note->matched = false;
		note->depth = (uint32_t)depth;
		close_from(t, (uint32_t)depth, note);
		return 0;
	}
	if (rec->tag != BB_TAG_SPAN_BEGIN ||
	    bbx_span_parse(rec->value, rec->value_len, &note->rec))
		return 0;
	note->depth = note->rec.depth;
	/* a begin no deeper than what is open: the thread unwound those
	 * without ending them (FORMAT.md §6) */
	if (t->n && t->v[t->n - 1].depth >= note->depth) {
		struct bbx_span_note drop = { 0 };

		close_from(t, note->depth, &drop);
	}
	if (!t->n && note->depth > 1 && t->unknown < note->depth - 1)
		t->unknown = note->depth - 1;
	if (t->n >= BBX_SPAN_KEEP) {
		t->cut++;
		note->what = BBX_SPAN_NOT_KEPT;
		return 0;
	}
	if (bb__grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) ||
	    bb__grow((void **)&t->bytes, &t->bcap, t->blen + rec->value_len, 1))
		return -ENOMEM;
	memcpy(t->bytes + t->blen, rec->value, rec->value_len);
	t->v[t->n++] = (struct bbx_span){ .depth = note->depth, .ts = rec->ts,
					  .off = t->blen, .len = rec->value_len };
	t->blen += rec->value_len;
	note->what = BBX_SPAN_OPENED;
	return 0;
}

void bbx_spans_free(struct bbx_spans *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->t[i].v);
		free(s->t[i].bytes);
	}
	free(s->t);
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* Append bb_format_value()'s text of (@tag, @v, @n) at @buf + *@w. */
static void put_formatted(char *buf, size_t len, size_t *w, unsigned tag,
			  const uint8_t *v, size_t n)
{
	int k;

	if (*w + 1 >= len)
		return;
	k = bb_format_value(tag, 0, v, n, buf + *w, len - *w);
	if (k > 0)
		*w += (size_t)k < len - *w ? (size_t)k : len - *w - 1;
}

size_t bbx_span_label(const uint8_t *value, size_t vlen, char *buf, size_t len)
{
	struct bbx_span_rec sr;
	struct bb__cbor c;
	uint8_t kv[512];
	uint64_t n;
	size_t w = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (bbx_span_parse(value, vlen, &sr))
		return (size_t)snprintf(buf, len, "?");
	put_formatted(buf, len, &w, BB_TAG_STR, sr.name, (size_t)(sr.fields - sr.name));
	c = (struct bb__cbor){ sr.fields, sr.end };
	if (bb__cbor_container(&c, 5, &n) || !n)
		return w;
	if (w + 1 < len)
		buf[w++] = '{';
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *k = c.p, *m, *e;

		if (bb__cbor_skip(&c, 1, NULL))
			break;
		m = c.p;
		if (bb__cbor_skip(&c, 1, NULL))
			break;
		e = c.p;
		if (i && w + 2 < len) {
			buf[w++] = ',';
			buf[w++] = ' ';
		}
		/* [key, value] as a kv record's value: "key=value" */
		if ((size_t)(e - k) + 1 <= sizeof(kv)) {
			kv[0] = 0x82;
			memcpy(kv + 1, k, (size_t)(e - k));
			put_formatted(buf, len, &w, BB_TAG_KV, kv, (size_t)(e - k) + 1);
		} else {
			put_formatted(buf, len, &w, BB_TAG_STR, k, (size_t)(m - k));
			if (w + 4 < len) {
				memcpy(buf + w, "=...", 4);
				w += 4;
			}
		}
	}
	if (w + 1 < len)
		buf[w++] = '}';
	buf[w < len ? w : len - 1] = '\0';
	return w;
}

int bbx_spans_see(struct bbx_spans *s, const struct bb_record *rec)
{
	struct bbx_span_note note;
	long ti;

	if (rec->ts > s->newest_ts)
		s->newest_ts = rec->ts;
	if (rec->tag != BB_TAG_SPAN_BEGIN && rec->tag != BB_TAG_SPAN_END)
		return 0;
	ti = bbx_spans_thread(s, rec->tid, rec->thread_name);
	if (ti < 0)
		return -ENOMEM;
	return bbx_spans_note(s, (size_t)ti, rec, &note);
}

/* ---- what bb-extract says after the records --------------------------- */

/* The time the open spans are measured to, and what it is. */
static uint64_t until(const struct bbx_ctx *c, int live, const char **what)
{
	if (c->crash.status == BB_CRASH_COMPLETE) {
		*what = "crash_record";
		return c->crash.ts;
	}
	*what = live == BB_LIVENESS_ALIVE ? "newest_record_alive" : "newest_record";
	return c->spans->newest_ts;
}

static bool worth(const struct bbx_span_thr *t)
{
	return t->n || t->unknown || t->cut;
}

/* "2.1 ms" */
static void fmt_dur(char *p, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(p, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(p, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(p, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(p, len, "%.1f s", (double)ns / 1e9);
}

/*
 * "== open spans at the crash (the crash record's time)" then per thread
 * "worker-3 (4242) inside db.query{table=orders} 2.1 ms < request{id=458}
 * 2.4 ms < 1 span whose begin was overwritten".
 */
void bbx_spans_text(struct bbx_ctx *c, int live)
{
	const char *what;
	uint64_t ref = until(c, live, &what);
	bool head = false;
	char label[1024], dur[32], name[4 * 15 + 2];

	for (size_t i = 0; i < c->spans->n; i++) {
		const struct bbx_span_thr *t = &c->spans->t[i];
		struct bbx_out *o = c->out;
		int k;

		if (!worth(t))
			continue;
		if (!head) {
			bbx_out_str(o, !strcmp(what, "crash_record")
				    ? "== open spans at the crash (the crash record's time)\n"
				    : live == BB_LIVENESS_ALIVE
				    ? "== open spans at the newest record (the owner is alive)\n"
				    : "== open spans at the newest record (the owner's last word)\n");
			head = true;
		}
		name[bbx_thread_name(name, t->name)] = '\0';
		k = snprintf(label, sizeof(label), "%s (%d) inside", name, (int)t->tid);
		bbx_out_put(o, label, (size_t)k);
		for (size_t j = t->n; j-- > 0;) {
			const struct bbx_span *sp = &t->v[j];

			bbx_span_label(t->bytes + sp->off, sp->len, label, sizeof(label));
			fmt_dur(dur, sizeof(dur), ref > sp->ts ? ref - sp->ts : 0);
			bbx_out_str(o, j + 1 < t->n ? " < " : " ");
			bbx_out_str(o, label);
			bbx_out_char(o, ' ');
			bbx_out_str(o, dur);
		}
		if (t->cut) {
			k = snprintf(label, sizeof(label), " (%llu deeper spans not kept)",
				     (unsigned long long)t->cut);
			bbx_out_put(o, label, (size_t)k);
		}
		if (t->unknown) {
			k = snprintf(label, sizeof(label), "%s%u span%s whose begin was overwritten",
				     t->n ? " < " : " ", t->unknown, t->unknown == 1 ? "" : "s");
			bbx_out_put(o, label, (size_t)k);
		}
		bbx_out_char(o, '\n');
	}
}

/*
 * "open_spans": {"until": "crash_record", "until_clock_ns": ..., "threads":
 * [{"tid", "thread", "spans": [{"name", "fields", "depth", "flow"?,
 * "trace_id"?, "span_id"?, "clock_ns", "open_ns"}, ...] innermost first,
 * "overwritten": n, "not_kept": n}]}
 */
void bbx_spans_struct(struct bbx_ctx *c, int live)
{
	struct bbx_em *em = &c->em;
	const char *what;
	uint64_t ref = until(c, live, &what);
	bool any = false;

	for (size_t i = 0; i < c->spans->n; i++)
		any |= worth(&c->spans->t[i]);
	if (!any)
		return;
	bbx_em_key(em, "open_spans");
	bbx_em_map(em);
	bbx_em_kv_str(em, "until", what);
	bbx_em_kv_u64(em, "until_clock_ns", ref);
	bbx_em_key(em, "threads");
	bbx_em_array(em);
	for (size_t i = 0; i < c->spans->n; i++) {
		const struct bbx_span_thr *t = &c->spans->t[i];

		if (!worth(t))
			continue;
		bbx_em_map(em);
		bbx_em_kv_i64(em, "tid", t->tid);
		bbx_em_kv_str(em, "thread", t->name);
		bbx_em_key(em, "spans");
		bbx_em_array(em);
		for (size_t j = t->n; j-- > 0;) {
			const struct bbx_span *sp = &t->v[j];

			bbx_em_map(em);
			/* the begin's own members, as its record has them */
			bbx_em_record_value(em, BB_TAG_SPAN_BEGIN, t->bytes + sp->off, sp->len);
			bbx_em_kv_u64(em, "clock_ns", sp->ts);
			bbx_em_kv_u64(em, "open_ns", ref > sp->ts ? ref - sp->ts : 0);
			bbx_em_end(em);
		}
		bbx_em_end(em);
		bbx_em_kv_u64(em, "overwritten", t->unknown);
		bbx_em_kv_u64(em, "not_kept", t->cut);
		bbx_em_end(em);
	}
	bbx_em_end(em);
	bbx_em_end(em);
}
