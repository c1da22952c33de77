/* SPDX-License-Identifier: MIT */
/*
 * perfetto.c - bb-extract --perfetto: a box as a Perfetto trace, a
 * protobuf Trace of TracePackets (pbwire.h encodes them), for
 * ui.perfetto.dev or trace_processor.  The field numbers are those of
 * Perfetto's public trace schema; docs/perfetto/blackbox_trace.proto is
 * the subset used here, which the tests decode every exported trace with.
 *
 * What is drawn (bb-extract(1), PERFETTO):
 *  - a process track (the owner: pid, comm, command line) and one track
 *    per thread (tid, name), each described before its first event;
 *  - each record an instant on its thread's track, category "record",
 *    named by its key (kv), name (event) or type, its typed fields as
 *    debug annotations;
 *  - spans as slices: a begin record a SLICE_BEGIN, its end a SLICE_END
 *    (both category "record"); spans still open at the death are closed
 *    there, flagged "open_at_death"; an end whose begin was overwritten is
 *    an instant "span end (begin overwritten)"; a span's flow id is a
 *    Perfetto flow, so spans of one flow are connected across threads;
 *  - numeric state keys as counter tracks (one sample, at the key's last
 *    change), the others as instants on the process track;
 *  - the crash as an instant on the crashing thread with its reason and
 *    stack, and each other thread's stack at the crash on its track;
 *  - holes (a record after bytes lost) as "gap" instants, and each stream's
 *    torn, overwritten and corrupt counts as instants at the death.
 * Timestamps are the box's clock (CLOCK_MONOTONIC by default; a TSC box's
 * ticks converted to it), given as that builtin clock on every packet; a
 * clock snapshot names it the trace's clock and ties it to CLOCK_REALTIME,
 * so the UI shows wall time too.  One packet sequence; its timestamps never
 * go back (a record stamped before the previous one is drawn at the
 * previous one's time, annotated "ts_clamped_ns").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../shared/cbor.h"
#include "../shared/hex.h"
#include "../shared/utf8.h"
#include "extract.h"
#include "pbwire.h"
#include "signames.h"
#include "spans.h"

/* Perfetto's field numbers (protos/perfetto/trace/...): the subset in
 * docs/perfetto/blackbox_trace.proto. */
enum {
	TRACE_PACKET = 1,
	TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQUENCE_ID = 10, TP_TRACK_EVENT = 11,
	TP_CLOCK_ID = 58, TP_TRACK_DESCRIPTOR = 60,
	CS_CLOCKS = 1, CS_PRIMARY_CLOCK = 2, CLOCK_ID = 1, CLOCK_TIMESTAMP = 2,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	PD_PID = 1, PD_CMDLINE = 2, PD_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	TE_ANNOTATION = 4, TE_TYPE = 9, TE_TRACK = 11, TE_CATEGORY = 22, TE_NAME = 23,
	TE_COUNTER = 30, TE_DOUBLE_COUNTER = 44, TE_FLOW = 47,
	DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6, DA_NAME = 10,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
/* ClockSnapshot's builtin clocks */
enum { CLK_REALTIME = 1, CLK_MONOTONIC = 3, CLK_BOOTTIME = 6 };

#define SEQ_ID       1u          /* the one packet sequence */
#define PROCESS_UUID 1u
#define THREAD_UUID  0x10000u    /* + the thread's index */
#define COUNTER_UUID 0x20000000u /* + the counter's index */

/* Something drawn at a time of its own, merged into the records' order:
 * the crash, a thread's stack at the crash, a state key. */
struct pend {
	uint64_t ts;
	int kind;                    /* PEND_* */
	uint32_t i;                  /* crash stack slot, state entry */
};
enum { PEND_CRASH, PEND_STACK, PEND_STATE };

struct state_copy {
	uint8_t *value;              /* [key, value] */
	size_t len;
	uint64_t ts;
};

struct pf {
	struct bbx_out *out;
	struct bb_reader *r;
	const struct bb_box_info *in;
	struct pbw w;
	struct bbx_spans spans;
	uint8_t *described;          /* per thread index: its track was sent */
	size_t ndescribed;
	uint32_t clock;
	uint64_t last_ts;
	bool any_ts;
	bool snapped;                /* the clock snapshot was sent */
	struct bb_crash crash;
	const struct bb_module *mods;
	size_t nmods;
	struct pend *pend;
	size_t npend, pcap, next_pend;
	struct state_copy *state;
	size_t nstate, scap;
	uint32_t ncounters;
	char *text;                  /* escaping room */
	size_t text_cap;
	uint64_t records;
	int err;
};

/* ---- text: every string of a packet is valid UTF-8 ----------------------- */

/* A protobuf string field of @n untrusted bytes: as they are when valid
 * UTF-8, escaped (bb_escape_text()) otherwise. */
static void put_text(struct pf *pf, uint32_t field, const void *s, size_t n)
{
	if (bb__utf8_valid(s, n) && !memchr(s, 0, n)) {
		pbw_bytes(&pf->w, field, s, n);
		return;
	}
	if (4 * n + 1 > pf->text_cap) {
		char *t = realloc(pf->text, 4 * n + 1);

		if (!t) {
			pf->w.oom = true;
			return;
		}
		pf->text = t;
		pf->text_cap = 4 * n + 1;
	}
	pbw_bytes(&pf->w, field, pf->text, bb_escape_text(s, n, pf->text, pf->text_cap));
}

/* ---- packets ------------------------------------------------------------ */

static void packet_begin(struct pf *pf)
{
	pf->w.n = 0;
	pf->w.depth = 0;
	pbw_begin(&pf->w, TRACE_PACKET);
}

static void packet_end(struct pf *pf)
{
	pbw_uint(&pf->w, TP_SEQUENCE_ID, SEQ_ID);
	pbw_end(&pf->w);
	if (pf->w.oom) {
		pf->err = -ENOMEM;
		return;
	}
	bbx_out_put(pf->out, pf->w.p, pf->w.n);
}

/* A packet at @ts (never before the previous one), its track event open
 * on @track: @type, @name. */
static uint64_t event_begin(struct pf *pf, uint64_t ts, uint64_t track, int type,
			    const void *name, size_t nlen)
{
	uint64_t clamped = 0;

	if (pf->any_ts && ts < pf->last_ts) {
		clamped = pf->last_ts - ts;
		ts = pf->last_ts;
	}
	pf->last_ts = ts;
	pf->any_ts = true;
	packet_begin(pf);
	pbw_uint(&pf->w, TP_TIMESTAMP, ts);
	pbw_uint(&pf->w, TP_CLOCK_ID, pf->clock);
	pbw_begin(&pf->w, TP_TRACK_EVENT);
	pbw_uint(&pf->w, TE_TYPE, (uint64_t)type);
	pbw_uint(&pf->w, TE_TRACK, track);
	if (name)
		put_text(pf, TE_NAME, name, nlen);
	return clamped;
}

static void event_end(struct pf *pf)
{
	pbw_end(&pf->w);   /* the track event */
	packet_end(pf);
}

static void category(struct pf *pf, const char *c)
{
	pbw_str(&pf->w, TE_CATEGORY, c);
}

static void annot_str(struct pf *pf, const char *name, const void *s, size_t n)
{
	pbw_begin(&pf->w, TE_ANNOTATION);
	pbw_str(&pf->w, DA_NAME, name);
	put_text(pf, DA_STRING, s, n);
	pbw_end(&pf->w);
}

static void annot_uint(struct pf *pf, const char *name, uint64_t v)
{
	pbw_begin(&pf->w, TE_ANNOTATION);
	pbw_str(&pf->w, DA_NAME, name);
	pbw_uint(&pf->w, DA_UINT, v);
	pbw_end(&pf->w);
}

static void annot_bool(struct pf *pf, const char *name, bool v)
{
	pbw_begin(&pf->w, TE_ANNOTATION);
	pbw_str(&pf->w, DA_NAME, name);
	pbw_uint(&pf->w, DA_BOOL, v);
	pbw_end(&pf->w);
}

/*
 * One CBOR scalar at *@c as the debug annotation @name (@nlen bytes): its
 * type kept (uint, int, double, bool, string; bytes as hex; anything else
 * as bb_format_value() writes it).  False when the item is not well
 * formed.
 */
static bool annot_item(struct pf *pf, const void *name, size_t nlen, struct bb__cbor *c)
{
	struct bb__cbor_item h;
	const uint8_t *start = c->p;
	char buf[256];
	int k;

	if (bb__cbor_read_head(c, &h))
		return false;
	pbw_begin(&pf->w, TE_ANNOTATION);
	put_text(pf, DA_NAME, name, nlen);
	switch (h.major) {
	case 0:
		pbw_uint(&pf->w, DA_UINT, h.arg);
		break;
	case 1:
		if (h.arg <= INT64_MAX) {
			pbw_uint(&pf->w, DA_INT, (uint64_t)(-1 - (int64_t)h.arg));
			break;
		}
		pbw_str(&pf->w, DA_STRING, "-18446744073709551616");
		break;
	case 2:
	case 3:
		if (h.arg > bb__cbor_left(c)) {
			pbw_end(&pf->w);  /* the packet stays whole */
			return false;
		}
		if (h.major == 3) {
			put_text(pf, DA_STRING, c->p, (size_t)h.arg);
		} else {
			size_t n = h.arg < 64 ? (size_t)h.arg : 64;

			bb__hex(buf, c->p, n);
			pbw_bytes(&pf->w, DA_STRING, buf, 2 * n);
		}
		c->p += h.arg;
		break;
	case 7:
		if (h.ai == 20 || h.ai == 21) {
			pbw_uint(&pf->w, DA_BOOL, h.ai == 21);
			break;
		}
		if (h.ai >= 25 && h.ai <= 27) {
			pbw_double(&pf->w, DA_DOUBLE, bb__cbor_float(&h));
			break;
		}
		/* fall through */
	default:
		c->p = start;
		if (bb__cbor_skip(c, 1, NULL)) {
			pbw_end(&pf->w);
			return false;
		}
		k = bb_format_value(0, 0, start, (size_t)(c->p - start), buf, sizeof(buf));
		pbw_bytes(&pf->w, DA_STRING, buf, k > 0 ? (size_t)k : 0);
	}
	pbw_end(&pf->w);
	return true;
}

/* Each pair of the CBOR map at *@c as an annotation; false if malformed. */
static bool annot_map(struct pf *pf, struct bb__cbor *c)
{
	uint64_t n;

	if (bb__cbor_container(c, 5, &n))
		return false;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *k;
		size_t kl;

		if (bb__cbor_string(c, 3, &k, &kl) || !annot_item(pf, k, kl, c))
			return false;
	}
	return true;
}

/* ---- tracks --------------------------------------------------------------- */

static void describe_process(struct pf *pf)
{
	const struct bb_box_info *in = pf->in;

	packet_begin(pf);
	pbw_begin(&pf->w, TP_TRACK_DESCRIPTOR);
	pbw_uint(&pf->w, TD_UUID, PROCESS_UUID);
	pbw_begin(&pf->w, TD_PROCESS);
	pbw_uint(&pf->w, PD_PID, (uint64_t)in->pid);
	put_text(pf, PD_NAME, in->comm, strlen(in->comm));
	put_text(pf, PD_CMDLINE, in->cmdline, strlen(in->cmdline));
	pbw_end(&pf->w);
	pbw_end(&pf->w);
	packet_end(pf);
}

/* The track of thread @ti, described before its first event. */
static uint64_t thread_track(struct pf *pf, size_t ti)
{
	const struct bbx_span_thr *t = &pf->spans.t[ti];

	if (ti >= pf->ndescribed) {
		size_t n = pf->ndescribed ? pf->ndescribed : 64;
		uint8_t *d;

		while (n <= ti)
			n *= 2;
		d = realloc(pf->described, n);
		if (!d) {
			pf->err = -ENOMEM;
			return THREAD_UUID + ti;
		}
		memset(d + pf->ndescribed, 0, n - pf->ndescribed);
		pf->described = d;
		pf->ndescribed = n;
	}
	if (!pf->described[ti]) {
		pf->described[ti] = 1;
		packet_begin(pf);
		pbw_begin(&pf->w, TP_TRACK_DESCRIPTOR);
		pbw_uint(&pf->w, TD_UUID, THREAD_UUID + ti);
		pbw_uint(&pf->w, TD_PARENT, PROCESS_UUID);
		if (t->tid > 0) {
			pbw_begin(&pf->w, TD_THREAD);
			pbw_uint(&pf->w, THD_PID, (uint64_t)pf->in->pid);
			pbw_uint(&pf->w, THD_TID, (uint64_t)t->tid);
			put_text(pf, THD_NAME, t->name, strlen(t->name));
			pbw_end(&pf->w);
		} else {
			pbw_str(&pf->w, TD_NAME, "thread unknown");
		}
		pbw_end(&pf->w);
		packet_end(pf);
	}
	return THREAD_UUID + ti;
}

static long thread_of(struct pf *pf, int32_t tid, const char *name)
{
	long ti = bbx_spans_thread(&pf->spans, tid, name);

	if (ti < 0)
		pf->err = -ENOMEM;
	return ti;
}

/* ---- the crash and the state table ------------------------------------ */

static void put_stack(struct pf *pf, const struct bb_crash *cr)
{
	size_t cap = (size_t)cr->nframes * 96 + 64, n = 0;
	char *s = malloc(cap);

	if (!s) {
		pf->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < cr->nframes; i++) {
		const struct bb_module *m = bb_module_find(pf->mods, pf->nmods, cr->frames[i]);
		const char *base = m ? strrchr(m->path, '/') : NULL;
		int k;

		base = base ? base + 1 : m ? m->path : NULL;
		if (m)
			k = snprintf(s + n, cap - n, "#%u 0x%llx %.40s+0x%llx\n", i,
				     (unsigned long long)cr->frames[i], base,
				     (unsigned long long)(cr->frames[i] - m->bias));
		else
			k = snprintf(s + n, cap - n, "#%u 0x%llx\n", i,
				     (unsigned long long)cr->frames[i]);
		if (k > 0 && (size_t)k < cap - n)
			n += (size_t)k;
	}
	annot_str(pf, "stack", s, n);
	annot_uint(pf, "frames", cr->nframes);
	free(s);
}

static void draw_crash(struct pf *pf)
{
	const struct bb_crash *cr = &pf->crash;
	long ti = thread_of(pf, cr->tid, cr->thread);
	char name[96];
	int k;

	if (ti < 0)
		return;
	if (cr->kind == BB_CRASH_KIND_SIGNAL)
		k = snprintf(name, sizeof(name), "crash: %s", bbx_signal_name(cr->signal));
	else
		k = snprintf(name, sizeof(name), "crash: %s", "fatal");
	event_begin(pf, cr->ts, thread_track(pf, (size_t)ti), INSTANT, name, (size_t)k);
	category(pf, "crash");
	if (cr->kind == BB_CRASH_KIND_SIGNAL) {
		const char *code = bbx_sigcode_name(cr->signal, cr->code);

		annot_uint(pf, "signal", (uint64_t)cr->signal);
		if (code)
			annot_str(pf, "code", code, strlen(code));
	}
	if (cr->reason_len)
		annot_str(pf, "reason", cr->reason, cr->reason_len);
	if (cr->has_addr)
		annot_uint(pf, "addr", cr->addr);
	if (cr->stack_overflow)
		annot_bool(pf, "stack_overflow", true);
	put_stack(pf, cr);
	event_end(pf);
}

static void draw_stack(struct pf *pf, uint32_t slot)
{
	struct bb_crash st;
	long ti;

	if (bb_reader_crash_stack(pf->r, slot, &st) || st.status != BB_CRASH_COMPLETE)
		return;
	ti = thread_of(pf, st.tid, st.thread);
	if (ti < 0)
		return;
	event_begin(pf, st.ts, thread_track(pf, (size_t)ti), INSTANT, "stack at the crash",
		    strlen("stack at the crash"));
	category(pf, "crash");
	put_stack(pf, &st);
	event_end(pf);
}

static void draw_state(struct pf *pf, const struct state_copy *s)
{
	struct bb__cbor c = { s->value, s->value + s->len };
	struct bb__cbor_item h;
	const uint8_t *k;
	size_t kl;
	uint64_t n;

	if (bb__cbor_container(&c, 4, &n) || n != 2 || bb__cbor_string(&c, 3, &k, &kl) ||
	    c.p >= c.end)
		return;
	if (*c.p >> 5 <= 1 || *c.p == 0xf9 || *c.p == 0xfa || *c.p == 0xfb) {
		/* numeric: a counter track of its own */
		uint64_t uuid = COUNTER_UUID + pf->ncounters++;
		struct bb__cbor v = c;

		if (bb__cbor_read_head(&v, &h))
			return;
		packet_begin(pf);
		pbw_begin(&pf->w, TP_TRACK_DESCRIPTOR);
		pbw_uint(&pf->w, TD_UUID, uuid);
		pbw_uint(&pf->w, TD_PARENT, PROCESS_UUID);
		put_text(pf, TD_NAME, k, kl);
		pbw_begin(&pf->w, TD_COUNTER);
		pbw_end(&pf->w);
		pbw_end(&pf->w);
		packet_end(pf);
		event_begin(pf, s->ts, uuid, COUNTER, NULL, 0);
		category(pf, "state");
		if (h.major == 0 && h.arg <= INT64_MAX)
			pbw_uint(&pf->w, TE_COUNTER, h.arg);
		else if (h.major == 1 && h.arg <= INT64_MAX)
			pbw_uint(&pf->w, TE_COUNTER, (uint64_t)(-1 - (int64_t)h.arg));
		else
			pbw_double(&pf->w, TE_DOUBLE_COUNTER,
				   h.major == 7 ? bb__cbor_float(&h) :
				   h.major == 0 ? (double)h.arg : -1.0 - (double)h.arg);
		event_end(pf);
		return;
	}
	event_begin(pf, s->ts, PROCESS_UUID, INSTANT, "state", 5);
	category(pf, "state");
	annot_item(pf, k, kl, &c);
	event_end(pf);
}

static int keep_state(const struct bb_state_entry *e, void *arg)
{
	struct pf *pf = arg;
	struct state_copy *s;

	if (e->status != BB_SLOT_OK)
		return 0;
	if (bb__grow((void **)&pf->state, &pf->scap, pf->nstate + 1, sizeof(*pf->state)))
		return -ENOMEM;
	s = &pf->state[pf->nstate];
	s->value = malloc(e->value_len ? e->value_len : 1);
	if (!s->value)
		return -ENOMEM;
	memcpy(s->value, e->value, e->value_len);
	s->len = e->value_len;
	s->ts = e->ts;
	pf->nstate++;
	return 0;
}

static int add_pend(struct pf *pf, uint64_t ts, int kind, uint32_t i)
{
	if (bb__grow((void **)&pf->pend, &pf->pcap, pf->npend + 1, sizeof(*pf->pend)))
		return -ENOMEM;
	pf->pend[pf->npend++] = (struct pend){ ts, kind, i };
	return 0;
}

static int cmp_pend(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* What is drawn at a time of its own up to @ts (UINT64_MAX: the rest). */
static void flush_pend(struct pf *pf, uint64_t ts)
{
	while (pf->next_pend < pf->npend && pf->pend[pf->next_pend].ts <= ts) {
		const struct pend *p = &pf->pend[pf->next_pend++];

		if (p->kind == PEND_CRASH)
			draw_crash(pf);
		else if (p->kind == PEND_STACK)
			draw_stack(pf, p->i);
		else
			draw_state(pf, &pf->state[p->i]);
	}
}

static int gather(struct pf *pf)
{
	uint32_t slots = 0, asked = 0;
	char err[256];
	int ret;

	if (bb_reader_modules(pf->r, &pf->mods, &pf->nmods, NULL, err, sizeof(err)) < 0) {
		pf->mods = NULL;
		pf->nmods = 0;
	}
	bb_reader_crash(pf->r, &pf->crash);
	if (pf->crash.status == BB_CRASH_COMPLETE && add_pend(pf, pf->crash.ts, PEND_CRASH, 0))
		return -ENOMEM;
	if (!bb_reader_crash_stacks(pf->r, &slots, &asked)) {
		for (uint32_t i = 0; i < slots; i++)
			if (add_pend(pf, pf->crash.status == BB_CRASH_COMPLETE ? pf->crash.ts : 0,
				     PEND_STACK, i))
				return -ENOMEM;
	}
	ret = bb_reader_state(pf->r, keep_state, pf, NULL);
	if (ret == -ENOMEM)
		return ret;
	for (size_t i = 0; i < pf->nstate; i++)
		if (add_pend(pf, pf->state[i].ts, PEND_STATE, (uint32_t)i))
			return -ENOMEM;
	if (pf->npend)   /* qsort() of no array: undefined */
		qsort(pf->pend, pf->npend, sizeof(*pf->pend), cmp_pend);
	return 0;
}

/* ---- records ------------------------------------------------------------ */

/* An end's matched and unwound slices: @n SLICE_ENDs on @track. */
static void end_slices(struct pf *pf, uint64_t ts, uint64_t track, size_t n, bool own)
{
	for (size_t i = 0; i < n; i++) {
		event_begin(pf, ts, track, SLICE_END, NULL, 0);
		if (own && i == n - 1) {
			category(pf, "record");
		} else {
			category(pf, "unwound");
			annot_bool(pf, "ended_by_outer_end", true);
		}
		event_end(pf);
	}
}

static void draw_begin(struct pf *pf, const struct bb_record *rec, uint64_t track,
		       const struct bbx_span_note *note, int type)
{
	const struct bbx_span_rec *sr = &note->rec;
	struct bb__cbor c = { sr->name, sr->fields };
	const uint8_t *name;
	size_t nl;
	char hex[2 * BB_SPAN_CTX_SIZE];

	if (bb__cbor_string(&c, 3, &name, &nl))
		return;
	event_begin(pf, rec->ts, track, type, name, nl);
	category(pf, "record");
	c = (struct bb__cbor){ sr->fields, sr->end };
	annot_map(pf, &c);
	annot_uint(pf, "depth", sr->depth);
	if (sr->flow) {
		annot_uint(pf, "flow", sr->flow);
		pbw_fixed64(&pf->w, TE_FLOW, sr->flow);
	}
	if (sr->ctx) {
		bb__hex(hex, sr->ctx, BB_SPAN_CTX_SIZE);
		annot_str(pf, "trace_id", hex, 2 * BB_SPAN_TRACE_ID_SIZE);
		annot_str(pf, "span_id", hex + 2 * BB_SPAN_TRACE_ID_SIZE,
			  2 * BB_SPAN_SPAN_ID_SIZE);
	}
	if (type == INSTANT)
		annot_bool(pf, "not_kept", true);
}

/* The instant of a record that is not a span's: name and annotations by
 * its tag. */
static void draw_instant(struct pf *pf, const struct bb_record *rec, uint64_t track)
{
	struct bb__cbor c = { rec->value, rec->value + rec->value_len };
	const char *tname = bb_tag_name(rec->tag);
	const uint8_t *name = NULL;
	size_t nl = 0;
	uint64_t n;
	bool ok = false;

	switch (rec->tag) {
	case BB_TAG_KV:
	case BB_TAG_EVENT:
		if (bb__cbor_container(&c, 4, &n) || n != 2 ||
		    bb__cbor_string(&c, 3, &name, &nl))
			break;
		event_begin(pf, rec->ts, track, INSTANT, name, nl);
		category(pf, "record");
		ok = rec->tag == BB_TAG_KV ? annot_item(pf, name, nl, &c) : annot_map(pf, &c);
		ok = ok && c.p == c.end;
		if (!ok) {
			/* drawn with what it is instead */
			pf->w.n = 0;
			pf->w.depth = 0;
			pf->w.oom = false;
		}
		break;
	case BB_TAG_STR:
	case BB_TAG_I64:
	case BB_TAG_U64:
	case BB_TAG_F64:
	case BB_TAG_BOOL:
	case BB_TAG_BYTES:
		event_begin(pf, rec->ts, track, INSTANT, tname, strlen(tname));
		category(pf, "record");
		ok = annot_item(pf, "value", 5, &c) && c.p == c.end;
		if (!ok) {
			pf->w.n = 0;
			pf->w.depth = 0;
			pf->w.oom = false;
		}
		break;
	}
	if (!ok) {
		/* owner, unknown and malformed values: as text writes them */
		char buf[512];
		int k = bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len,
					buf, sizeof(buf));

		event_begin(pf, rec->ts, track, INSTANT, tname, strlen(tname));
		category(pf, "record");
		annot_str(pf, "value", buf, k > 0 ? (size_t)k : strnlen(buf, sizeof(buf)));
	}
}

static void snapshot(struct pf *pf, const struct bb_record *rec);

static int on_record(const struct bb_record *rec, void *arg)
{
	struct pf *pf = arg;
	struct bbx_span_note note;
	uint64_t track;
	long ti;

	if (!pf->snapped)
		snapshot(pf, rec);
	flush_pend(pf, rec->ts);
	ti = thread_of(pf, rec->tid, rec->thread_name);
	if (ti < 0)
		return pf->err;
	track = thread_track(pf, (size_t)ti);
	if (rec->gap_before) {
		event_begin(pf, rec->ts, track, INSTANT, "gap", 3);
		category(pf, "gap");
		annot_uint(pf, "lost_bytes", rec->gap_before);
		annot_uint(pf, "stream", rec->stream);
		event_end(pf);
	}
	if (bbx_spans_note(&pf->spans, (size_t)ti, rec, &note))
		return pf->err = -ENOMEM;
	pf->records++;
	switch (note.what) {
	case BBX_SPAN_OPENED:
		draw_begin(pf, rec, track, &note, SLICE_BEGIN);
		break;
	case BBX_SPAN_NOT_KEPT:
		draw_begin(pf, rec, track, &note, INSTANT);
		break;
	case BBX_SPAN_CLOSED:
		if (note.matched) {
			end_slices(pf, rec->ts, track, note.closed, true);
			return pf->err ? pf->err : pf->out->err;
		}
		end_slices(pf, rec->ts, track, note.closed, false);
		event_begin(pf, rec->ts, track, INSTANT, "span end (begin overwritten)",
			    strlen("span end (begin overwritten)"));
		category(pf, "record");
		annot_uint(pf, "depth", note.depth);
		break;
	default:
		draw_instant(pf, rec, track);
	}
	if (rec->flags & BB_RF_TRUNCATED)
		annot_bool(pf, "truncated", true);
	if (rec->flags & BB_RF_IMPORTANT)
		annot_bool(pf, "important", true);
	if (rec->ts < pf->last_ts)
		annot_uint(pf, "ts_clamped_ns", pf->last_ts - rec->ts);
	event_end(pf);
	return pf->err ? pf->err : pf->out->err;
}

/* ---- the end: open spans, damage ---------------------------------------- */

static void draw_death(struct pf *pf, uint64_t death)
{
	struct bb_stream_stats tot;

	for (size_t i = 0; i < pf->spans.n; i++) {
		struct bbx_span_thr *t = &pf->spans.t[i];
		uint64_t track = THREAD_UUID + i;

		for (size_t j = t->n; j-- > 0;) {
			event_begin(pf, death, track, SLICE_END, NULL, 0);
			category(pf, "death");
			annot_bool(pf, "open_at_death", true);
			event_end(pf);
		}
		if (t->unknown) {
			event_begin(pf, death, track, INSTANT, "open spans whose begin was overwritten",
				    strlen("open spans whose begin was overwritten"));
			category(pf, "death");
			annot_uint(pf, "spans", t->unknown);
			event_end(pf);
		}
	}
	bb_reader_total_stats(pf->r, &tot);
	for (uint32_t i = 0; ; i++) {
		const struct bb_stream_stats *st = bb_reader_stream_stats(pf->r, i);
		uint64_t track = PROCESS_UUID;
		long ti;

		if (!st)
			break;
		if (!st->torn && !st->overwritten && !st->corrupt)
			continue;
		if (st->tid > 0 && (ti = thread_of(pf, st->tid, st->thread_name)) >= 0)
			track = thread_track(pf, (size_t)ti);
		event_begin(pf, death, track, INSTANT,
			    st->torn ? "torn record" : "records lost",
			    st->torn ? strlen("torn record") : strlen("records lost"));
		category(pf, "damage");
		annot_uint(pf, "stream", i);
		annot_uint(pf, "torn", st->torn);
		annot_uint(pf, "overwritten", st->overwritten);
		annot_uint(pf, "corrupt", st->corrupt);
		annot_uint(pf, "skipped_bytes", st->skipped_bytes);
		event_end(pf);
	}
}

/* The clock snapshot, before the first event: the box's clock is the trace's, and a record's pair
 * of stamps (box clock, CLOCK_REALTIME from the anchors) ties the two. */
static void snapshot(struct pf *pf, const struct bb_record *rec)
{
	pf->snapped = true;
	packet_begin(pf);
	pbw_begin(&pf->w, TP_CLOCK_SNAPSHOT);
	pbw_begin(&pf->w, CS_CLOCKS);
	pbw_uint(&pf->w, CLOCK_ID, pf->clock);
	pbw_uint(&pf->w, CLOCK_TIMESTAMP, rec->ts);
	pbw_end(&pf->w);
	if (pf->clock != CLK_REALTIME && rec->wall_ns > 0) {
		pbw_begin(&pf->w, CS_CLOCKS);
		pbw_uint(&pf->w, CLOCK_ID, CLK_REALTIME);
		pbw_uint(&pf->w, CLOCK_TIMESTAMP, (uint64_t)rec->wall_ns);
		pbw_end(&pf->w);
	}
	pbw_uint(&pf->w, CS_PRIMARY_CLOCK, pf->clock);
	pbw_end(&pf->w);
	packet_end(pf);
}

int bbx_perfetto(const struct bbx_opts *o, struct bbx_out *out, struct bb_reader *r, int live)
{
	struct pf pf = { .out = out, .r = r };
	uint64_t death;
	int ret;

	pf.in = bb_reader_info(r);
	pf.clock = pf.in->clock == BB_CLOCK_REALTIME ? CLK_REALTIME :
		   pf.in->clock == BB_CLOCK_BOOTTIME ? CLK_BOOTTIME : CLK_MONOTONIC;
	ret = gather(&pf);
	if (!ret) {
		describe_process(&pf);
		ret = bb_reader_walk(r, BB_WALK_MERGE, on_record, &pf);
	}
	if (!ret) {
		flush_pend(&pf, UINT64_MAX);
		death = pf.crash.status == BB_CRASH_COMPLETE ? pf.crash.ts : pf.spans.newest_ts;
		(void)live;
		draw_death(&pf, death);
		ret = pf.err;
	}
	free(pf.w.p);
	free(pf.described);
	free(pf.pend);
	for (size_t i = 0; i < pf.nstate; i++)
		free(pf.state[i].value);
	free(pf.state);
	free(pf.text);
	bbx_spans_free(&pf.spans);
	if (ret == -ENOMEM) {
		bbx_msg(NULL, "out of memory");
		return BBX_EXIT_FAILURE;
	}
	if (ret == -ESTALE) {
		bbx_msg(pf.in->path, "box changed size while being read");
		return BBX_EXIT_NOBOX;
	}
	if (ret < 0 && ret != out->err) {
		bbx_msg(pf.in->path, "%s", strerror(-ret));
		return BBX_EXIT_NOBOX;
	}
	if (ret < 0)
		return BBX_EXIT_FAILURE;
	if (!o->quiet)
		bbx_msg(pf.in->path, "%llu records as a Perfetto trace (clock %s)",
			(unsigned long long)pf.records,
			pf.clock == CLK_REALTIME ? "REALTIME" :
			pf.clock == CLK_BOOTTIME ? "BOOTTIME" : "MONOTONIC");
	return BBX_EXIT_CLEAN;
}
