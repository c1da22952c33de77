/* SPDX-License-Identifier: MIT */
/*
 * records.c - bb-extract's records: one line of text, or a JSON / CBOR
 * map through the emitter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>

#include "extract.h"
#include "spans.h"

/*
 * Thread names are the owner's bytes: escaped (bb_escape_text), and a
 * blank as '?' so that the name stays one field of the line.  @p has room
 * for 4 * 15 + 1 bytes.
 */
size_t bbx_thread_name(char *p, const char *name)
{
	size_t n, i;

	if (!name || !name[0]) {
		*p = '-';
		return 1;
	}
	/* the usual name, printable ASCII without blank or backslash, as is
	 * (once per record: the escaper's call is not free) */
	for (i = 0; i < 15 && name[i] > ' ' && name[i] < 0x7f && name[i] != '\\'; i++)
		p[i] = name[i];
	if (i == 15 || !name[i])
		return i;
	n = bb_escape_text(name, strnlen(name, 15), p, 4 * 15 + 1);
	for (i = 0; i < n; i++)
		if (p[i] == ' ')
			p[i] = '?';
	return n;
}

/*
 * Holes in a ring's history: the reader marks a record that does not start
 * where its ring's previous one ended (bb_record.gap_before: records the
 * writer overwrote before they could be read, while a live box was copied
 * or between --follow polls, or bytes that did not validate).  The hole is
 * said in the stream, right before that record, by a gap record naming
 * the ring, the thread and the bytes lost (bb-extract(1), "Gaps").
 */
/* --follow: what a ring lost and how far it got (the summary, the poll
 * period) */
static void follow_note(struct bbx_ctx *c, const struct bb_record *rec)
{
	if (!c->lost || (rec->stream >= c->nlost && bbx_follow_fit(c, rec->stream + 1)))
		return;
	c->lost[rec->stream] += rec->gap_before;
	c->last_pos[rec->stream] = rec->pos;
}

/* "-- gap: stream 1, thread 101 (t1): 48 bytes lost between positions 96
 * and 144" */
static void text_gap(struct bbx_ctx *c, const struct bb_record *rec)
{
	uint64_t lost = rec->gap_before, from = rec->pos - lost;
	struct bbx_out *o = c->out;
	char *p = bbx_out_reserve(o, 160 + 4 * 15 + 1);
	size_t n = 0;

#define LIT(s) (memcpy(p + n, s, sizeof(s) - 1), n += sizeof(s) - 1)
	LIT("-- gap: stream ");
	n += bbx_fmt_u64(p + n, rec->stream);
	LIT(", thread ");
	n += bbx_fmt_i64(p + n, rec->tid);
	LIT(" (");
	n += bbx_thread_name(p + n, rec->thread_name);
	LIT("): ");
	n += bbx_fmt_u64(p + n, lost);
	LIT(" bytes lost between positions ");
	n += bbx_fmt_u64(p + n, from);
	LIT(" and ");
	n += bbx_fmt_u64(p + n, rec->pos);
	p[n++] = '\n';
#undef LIT
	bbx_out_commit(o, n);
}

/* {"type":"gap","stream":1,"tid":101,"thread":"t1","lost_bytes":48,
 *  "from_pos":96,"to_pos":144} */
static void struct_gap(struct bbx_ctx *c, const struct bb_record *rec)
{
	struct bbx_em *em = &c->em;
	uint64_t lost = rec->gap_before, from = rec->pos - lost;

	bbx_em_map(em);
	bbx_em_key(em, "type");
	bbx_em_cstr(em, "gap");
	bbx_em_kv_u64(em, "stream", rec->stream);
	bbx_em_kv_i64(em, "tid", rec->tid);
	bbx_em_key(em, "thread");
	bbx_em_cstr(em, rec->thread_name ? rec->thread_name : "");
	bbx_em_kv_u64(em, "lost_bytes", lost);
	bbx_em_kv_u64(em, "from_pos", from);
	bbx_em_kv_u64(em, "to_pos", rec->pos);
	bbx_em_end(em);
	bbx_em_eol(em);
}

int bbx_text_record(const struct bb_record *rec, void *arg)
{
	struct bbx_ctx *c = arg;
	struct bbx_out *o = c->out;
	char *p;
	size_t n = 0;
	int v;

	if (rec->gap_before) {
		text_gap(c, rec);
		c->gaps++;
	}
	follow_note(c, rec);
	if (c->spans && bbx_spans_see(c->spans, rec))
		return -ENOMEM;
	p = bbx_out_reserve(o, BBX_TIME_MAX + 24 + 4 * 15 + 1);

	n += bbx_fmt_time(p, rec->wall_ns);
	p[n++] = ' ';
	n += bbx_fmt_i64(p + n, rec->tid);
	p[n++] = ' ';
	n += bbx_thread_name(p + n, rec->thread_name);
	p[n++] = ' ';
	bbx_out_commit(o, n);

	p = bbx_out_reserve(o, TEXT_FAST);
	v = bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len,
			    p, TEXT_FAST);
	if (v >= 0 && (size_t)v < TEXT_FAST - 1) {
		bbx_out_commit(o, (size_t)v);
	} else if (v >= 0) {
		/* possibly cut: format again with room for any record */
		if (!c->scratch && !(c->scratch = malloc(TEXT_SCRATCH)))
			return -ENOMEM;
		v = bb_format_value(rec->tag, rec->flags, rec->value,
				    rec->value_len, c->scratch, TEXT_SCRATCH);
		if (v > 0)
			bbx_out_put(o, c->scratch, (size_t)v);
	} else {
		/* p holds a short description: "<malformed ... value: why>" */
		bbx_out_commit(o, strnlen(p, TEXT_FAST - 1));
		c->bad_values++;
	}
	bbx_out_char(o, '\n');
	return o->err;
}

int bbx_struct_record(const struct bb_record *rec, void *arg)
{
	struct bbx_ctx *c = arg;
	struct bbx_em *em = &c->em;
	if (rec->gap_before) {
		struct_gap(c, rec);
		c->gaps++;
	}
	follow_note(c, rec);
	if (c->threads && bbx_threads_note(c->threads, c->r, rec))
		return -ENOMEM;
	if (c->spans && bbx_spans_see(c->spans, rec))
		return -ENOMEM;

	bbx_em_record_start(em, rec->wall_ns, rec->ts, c->with_pid, c->info->pid,
			    rec->tid, rec->thread_name ? rec->thread_name : "",
			    rec->stream, bb_tag_name(rec->tag));
	if (!bbx_em_record_value(em, rec->tag, rec->value, rec->value_len))
		c->bad_values++;
	bbx_em_record_end(em, rec->flags & BB_RF_TRUNCATED, rec->flags & BB_RF_IMPORTANT);
	return c->out->err;
}
