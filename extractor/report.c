/* SPDX-License-Identifier: MIT */
/*
 * report.c - bb-extract's verification report: what was intact, torn,
 * overwritten, corrupt or dropped, on stderr for text and as the final
 * {"summary": ...} object otherwise.
 */
#include <stdio.h>

#include "extract.h"

/* "tsc", "monotonic", "monotonic (tsc unavailable)", ... */
const char *bbx_clock_desc(const struct bb_box_info *in)
{
	switch (in->clock) {
	case BB_CLOCK_TSC:
		return "tsc";
	case BB_CLOCK_MONOTONIC:
		return in->clock_requested == BB_CLOCK_TSC ? "monotonic (tsc unavailable)"
							   : "monotonic";
	case BB_CLOCK_REALTIME:
		return "realtime";
	case BB_CLOCK_BOOTTIME:
		return "boottime";
	default:
		return "unknown";
	}
}

/* ---- verification report -------------------------------------------- */

static const char *ring_kind_name(uint32_t k)
{
	switch (k) {
	case BB_STREAM_THREAD:   return "private";
	case BB_STREAM_SHARED:    return "shared";
	case BB_STREAM_IMPORTANT: return "important";
	default:                return "unknown";
	}
}

static const char *ring_claim_name(uint32_t s)
{
	switch (s) {
	case BB_STREAM_FREE:    return "free";
	case BB_STREAM_OWNED:   return "owned";
	case BB_STREAM_RETIRED: return "retired";
	default:              return "unknown";
	}
}

/* Rings that were used or where something happened. */
static bool ring_worth_reporting(const struct bb_stream_stats *st)
{
	return st->tid || st->read || st->torn || st->overwritten ||
	       st->corrupt || st->skipped_bytes;
}

/* Damage: anything that could not be proven intact and is not the ring's
 * normal contract (overwritten) or the owner's death (torn record, torn
 * crash area, a state slot left busy). */
bool bbx_is_damaged(const struct bbx_ctx *c, const struct bb_stream_stats *tot)
{
	return tot->corrupt || tot->skipped_bytes || c->bad_values ||
	       c->crash.status == BB_CRASH_CORRUPT || c->state.corrupt;
}

/* Format 2.1: the systemd unit the owner recorded at bb_init, the members
 * it has (--list and the summary). */
void bbx_unit_struct(struct bbx_em *em, const struct bb_box_info *in)
{
	if (in->unit[0])
		bbx_em_kv_str(em, "unit", in->unit);
	if (in->user_unit[0])
		bbx_em_kv_str(em, "user_unit", in->user_unit);
	if (in->invocation_id[0])
		bbx_em_kv_str(em, "invocation_id", in->invocation_id);
	if (in->cgroup[0])
		bbx_em_kv_str(em, "cgroup", in->cgroup);
}

void bbx_summary_struct(struct bbx_ctx *c, int live, int code)
{
	const struct bb_box_info *in = c->info;
	struct bbx_em *em = &c->em;
	struct bb_stream_stats tot, st;
	char t[BBX_TIME_MAX], ver[16];
	uint32_t i;

	bb_reader_total_stats(c->r, &tot);
	bbx_em_map(em);
	bbx_em_key(em, "summary");
	bbx_em_map(em);
	bbx_em_kv_str(em, "path", in->path);
	bbx_em_kv_i64(em, "pid", in->pid);
	bbx_em_kv_u64(em, "uid", in->uid);
	if (c->opt->entry) /* no file: what its journal entry proves */
		bbx_em_kv_str(em, "owner_proof", c->opt->entry_proof);
	else
		bbx_em_kv_u64(em, "file_uid", in->file_uid);
	bbx_em_kv_str(em, "comm", in->comm);
	bbx_em_kv_str(em, "cmdline", in->cmdline);
	bbx_em_kv_u64(em, "starttime", in->starttime);
	bbx_em_kv_str(em, "boot_id", in->boot_id);
	bbx_em_kv_u64(em, "sequence", in->sequence);
	bbx_unit_struct(em, in);
	bbx_em_kv_str(em, "liveness", bb_liveness_name(live));
	if (in->phase == BB_PHASE_CRASHED) {
		bbx_em_kv_i64(em, "signal", in->phase_signal);
	}
	bbx_em_kv_str(em, "crash_record", bb_crash_status_name(c->crash.status));
	bbx_em_kv_str(em, "clock", bbx_clock_desc(in));
	if (in->clock == BB_CLOCK_TSC)
		bbx_em_kv_u64(em, "tsc_hz", in->tsc_hz);
	bbx_em_key(em, "created");
	bbx_em_str(em, t, bbx_fmt_time(t, (int64_t)in->created_ns));
	snprintf(ver, sizeof(ver), "%u.%u", in->version_major, in->version_minor);
	bbx_em_kv_str(em, "format", ver);
	bbx_em_kv_u64(em, "box_size", in->box_size);
	bbx_em_kv_u64(em, "ring_size", in->ring_size);
	bbx_em_kv_u64(em, "stream_count", in->stream_count);
	bbx_em_kv_u64(em, "streams_used", in->streams_used);

	bbx_em_kv_u64(em, "records", tot.read);
	bbx_em_kv_u64(em, "torn", tot.torn);
	bbx_em_kv_u64(em, "overwritten", tot.overwritten);
	bbx_em_kv_u64(em, "corrupt", tot.corrupt);
	bbx_em_kv_u64(em, "crc_bad", tot.crc_bad);
	bbx_em_kv_u64(em, "skipped_bytes", tot.skipped_bytes);
	bbx_em_kv_u64(em, "bad_values", c->bad_values);
	bbx_em_kv_u64(em, "important_duplicates", tot.dup_suppressed);
	if (c->has_state) {
		bbx_em_key(em, "state_table");
		bbx_em_map(em);
		bbx_em_kv_u64(em, "slots", c->state.slots);
		bbx_em_kv_u64(em, "used", c->state.used);
		bbx_em_kv_u64(em, "busy", c->state.busy);
		bbx_em_kv_u64(em, "corrupt", c->state.corrupt);
		bbx_em_end(em);
	}
	bbx_em_kv_u64(em, "state_errors", in->state_errors);
	if (c->lost) {
		uint64_t lost = 0;

		for (i = 0; i < c->nlost; i++)
			lost += c->lost[i];
		bbx_em_kv_u64(em, "lost_bytes", lost);
	}
	bbx_em_key(em, "dropped");
	bbx_em_map(em);
	bbx_em_kv_u64(em, "busy", in->dropped_busy);
	bbx_em_kv_u64(em, "nested", in->dropped_nested);
	bbx_em_kv_u64(em, "toobig", in->dropped_toobig);
	bbx_em_kv_u64(em, "important", in->dropped_important);
	bbx_em_end(em);
	bbx_em_kv_u64(em, "truncated", in->truncated);

	bbx_em_key(em, "streams");
	bbx_em_array(em);
	for (i = 0; i < in->stream_count; i++) {
		const struct bb_stream_stats *p = bb_reader_stream_stats(c->r, i);

		if (!p || !ring_worth_reporting(p))
			continue;
		st = *p;
		st.thread_name[sizeof(st.thread_name) - 1] = '\0';
		bbx_em_map(em);
		bbx_em_kv_u64(em, "stream", i);
		bbx_em_kv_str(em, "kind", ring_kind_name(st.kind));
		bbx_em_kv_str(em, "claim", ring_claim_name(st.claim));
		bbx_em_kv_i64(em, "tid", st.tid);
		bbx_em_kv_str(em, "thread", st.thread_name);
		bbx_em_kv_u64(em, "read", st.read);
		bbx_em_kv_u64(em, "torn", st.torn);
		bbx_em_kv_u64(em, "overwritten", st.overwritten);
		bbx_em_kv_u64(em, "corrupt", st.corrupt);
		bbx_em_kv_u64(em, "crc_bad", st.crc_bad);
		bbx_em_kv_u64(em, "skipped_bytes", st.skipped_bytes);
		if (c->lost)
			bbx_em_kv_u64(em, "lost_bytes", c->lost[i]);
		if (st.problem[0])
			bbx_em_kv_str(em, "problem", st.problem);
		bbx_em_end(em);
	}
	bbx_em_end(em);
	if (c->threads)
		bbx_threads_struct(em, c->threads);
	bbx_spans_struct(c, live);
	bbx_em_kv_str(em, "status", bbx_is_damaged(c, &tot) ? "damaged" : "intact");
	bbx_em_kv_i64(em, "exit", code);
	bbx_em_end(em);
	bbx_em_end(em);
	bbx_em_eol(em);
}

void bbx_summary_text(struct bbx_ctx *c, int live)
{
	const struct bb_box_info *in = c->info;
	struct bb_stream_stats tot, st;
	char sig[32] = "", owner[512] = "";
	uint32_t i;

	bb_reader_total_stats(c->r, &tot);
	if (c->opt->quiet && !bbx_is_damaged(c, &tot))
		return;
	/* signal 0: bb_crash_record(), and no fatal signal after it */
	if (in->phase == BB_PHASE_CRASHED && in->phase_signal)
		snprintf(sig, sizeof(sig), " (signal %d)", in->phase_signal);
	if (c->opt->entry) /* a box from a journal entry: no file owner */
		snprintf(owner, sizeof(owner), " (%s)", c->opt->entry_proof);
	else if (in->file_uid != in->uid) /* --any-owner: whose file it really is */
		snprintf(owner, sizeof(owner), " (file owner uid %u)", in->file_uid);
	bbx_msg(in->path, "pid %d (%s) uid %u%s, %s%s; format %u.%u, %u of %u streams used; "
	    "clock %s; crash record %s",
	    (int)in->pid, in->comm, in->uid, owner, bb_liveness_name(live), sig,
	    in->version_major, in->version_minor, in->streams_used, in->stream_count,
	    bbx_clock_desc(in), bb_crash_status_name(c->crash.status));
	for (i = 0; i < in->stream_count; i++) {
		const struct bb_stream_stats *p = bb_reader_stream_stats(c->r, i);

		if (!p || !ring_worth_reporting(p))
			continue;
		st = *p;
		st.thread_name[sizeof(st.thread_name) - 1] = '\0';
		bbx_msg(in->path, "stream %u %s tid %d (%s): %llu read, %llu torn, "
		    "%llu overwritten, %llu corrupt (%llu by CRC), %llu bytes skipped%s%s",
		    i, ring_kind_name(st.kind), (int)st.tid, st.thread_name,
		    (unsigned long long)st.read, (unsigned long long)st.torn,
		    (unsigned long long)st.overwritten,
		    (unsigned long long)st.corrupt, (unsigned long long)st.crc_bad,
		    (unsigned long long)st.skipped_bytes,
		    st.problem[0] ? "; descriptor rejected: " : "", st.problem);
	}
	if (c->has_state || in->state_errors)
		bbx_msg(in->path, "state table: %u slots, %u set, %u busy, %u corrupt; "
		    "%llu bb_set() calls failed in the owner",
		    c->state.slots, c->state.used, c->state.busy, c->state.corrupt,
		    (unsigned long long)in->state_errors);
	if (c->crash.status == BB_CRASH_CORRUPT || c->crash.status == BB_CRASH_TORN)
		bbx_msg(in->path, "%s", c->crash.problem);
	bbx_msg(in->path, "%llu records intact; %llu torn by the owner's death, "
	    "%llu overwritten while reading, %llu corrupt (%llu bytes skipped), "
	    "%llu malformed values; writer dropped %llu (busy %llu, nested %llu, "
	    "too big %llu, important copies %llu), truncated %llu",
	    (unsigned long long)tot.read, (unsigned long long)tot.torn,
	    (unsigned long long)tot.overwritten, (unsigned long long)tot.corrupt,
	    (unsigned long long)tot.skipped_bytes,
	    (unsigned long long)c->bad_values,
	    (unsigned long long)(in->dropped_busy + in->dropped_nested +
				 in->dropped_toobig + in->dropped_important),
	    (unsigned long long)in->dropped_busy,
	    (unsigned long long)in->dropped_nested,
	    (unsigned long long)in->dropped_toobig,
	    (unsigned long long)in->dropped_important,
	    (unsigned long long)in->truncated);
	for (i = 0; c->lost && i < c->nlost; i++) {
		const struct bb_stream_stats *p = bb_reader_stream_stats(c->r, i);

		if (!c->lost[i] || !p)
			continue;
		st = *p;
		st.thread_name[sizeof(st.thread_name) - 1] = '\0';
		bbx_msg(in->path, "stream %u %s tid %d (%s): %llu bytes of records lost while "
		    "following: overwritten before they could be read", i,
		    ring_kind_name(st.kind), (int)st.tid, st.thread_name,
		    (unsigned long long)c->lost[i]);
	}
	if (bbx_is_damaged(c, &tot))
		bbx_msg(in->path, "box damaged: the output is partial");
}
