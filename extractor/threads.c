/* SPDX-License-Identifier: MIT */
/*
 * threads.c - each thread's last record and how long ago it was written:
 * bb-extract --threads (the hang view), and the "threads" member of the
 * JSON / CBOR summary.
 *
 * A thread is a thread log (3.0; a private ring of a 2.x box), or a thread
 * id seen only in the shared or the important ring (a thread that got no
 * log, or a nested write's).  Records of the shared rings whose thread has
 * a log count with it.
 *
 * The age of a last record is measured from a reference the output names:
 * now, for a live owner (the box's own clock, read now); else the crash
 * record's time; else the time the owner's phase last changed (exit,
 * bb_close()); else the box file's modification time (an owner that died
 * without a word: its death has no time of its own), or the newest record
 * when the file time is older or unknown.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>

#include "../shared/grow.h"
#include "extract.h"

/* Ring index -> entry: not looked at yet, a shared ring (records by tid). */
#define THR_UNSEEN  (-1)
#define THR_SHARED  (-2)

/* A value kept beyond this many bytes is cut (the text line is shorter;
 * JSON and CBOR then say "truncated"). */
#define THR_VALUE_MAX 4096u

static struct bbx_thr *thr_add(struct bbx_threads *t, uint32_t ring, int32_t tid,
			       const char *name, uint32_t claim)
{
	struct bbx_thr *e;

	if (BB__GROW(&t->v, &t->cap, t->n + 1) < 0)
		return NULL;
	e = &t->v[t->n++];
	memset(e, 0, sizeof(*e));
	e->ring = ring;
	e->tid = tid;
	e->claim = claim;
	if (name)
		snprintf(e->name, sizeof(e->name), "%.15s", name);
	return e;
}

/* The entry of @rec's thread; NULL: out of memory. */
static struct bbx_thr *thr_of(struct bbx_threads *t, struct bb_reader *r,
			      const struct bb_record *rec)
{
	int32_t k;

	if (rec->stream >= t->nrings) {
		size_t n = t->nrings;

		if (BB__GROW(&t->by_ring, &n, (size_t)rec->stream + 1) < 0)
			return NULL;
		for (size_t i = t->nrings; i < n; i++)
			t->by_ring[i] = THR_UNSEEN;
		t->nrings = n;
	}
	k = t->by_ring[rec->stream];
	if (k == THR_UNSEEN) {
		const struct bb_stream_stats *st = bb_reader_stream_stats(r, rec->stream);

		if (st && st->kind == BB_STREAM_THREAD) {
			struct bbx_thr *e = thr_add(t, rec->stream, rec->tid, rec->thread_name,
						    st->claim);

			if (!e)
				return NULL;
			k = (int32_t)(t->n - 1);
		} else {
			k = THR_SHARED;
		}
		t->by_ring[rec->stream] = k;
	}
	if (k >= 0)
		return &t->v[k];
	/* the shared and important rings: by tid, an entry of its own until
	 * bbx_threads_finish() joins it to the thread's log */
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].shared_only && t->v[i].tid == rec->tid)
			return &t->v[i];
	{
		struct bbx_thr *e = thr_add(t, UINT32_MAX, rec->tid, rec->thread_name,
					    BB_STREAM_OWNED);

		if (e)
			e->shared_only = true;
		return e;
	}
}

/* Keep @rec as @e's last record when it is the newest so far. */
static int thr_keep(struct bbx_thr *e, const struct bb_record *rec)
{
	size_t n = rec->value_len < THR_VALUE_MAX ? rec->value_len : THR_VALUE_MAX;

	if (e->has_last && rec->ts < e->ts)
		return 0;
	if (n > e->cap) {
		uint8_t *p = realloc(e->value, THR_VALUE_MAX);

		if (!p)
			return -ENOMEM;
		e->value = p;
		e->cap = THR_VALUE_MAX;
	}
	if (n)
		memcpy(e->value, rec->value, n);
	e->len = n;
	e->cut = n < rec->value_len;
	e->has_last = true;
	e->ts = rec->ts;
	e->wall_ns = rec->wall_ns;
	e->tag = rec->tag;
	e->flags = rec->flags;
	return 0;
}

int bbx_threads_note(struct bbx_threads *t, struct bb_reader *r, const struct bb_record *rec)
{
	struct bbx_thr *e = thr_of(t, r, rec);

	if (!e)
		return -ENOMEM;
	e->records++;
	if (rec->wall_ns > t->newest_wall)
		t->newest_wall = rec->wall_ns;
	return thr_keep(e, rec);
}

static bool thr_merge_into(struct bbx_thr *to, struct bbx_thr *from)
{
	to->records += from->records;
	if (from->has_last && (!to->has_last || from->ts > to->ts)) {
		free(to->value);
		to->value = from->value;
		to->cap = from->cap;
		to->len = from->len;
		to->cut = from->cut;
		to->has_last = true;
		to->ts = from->ts;
		to->wall_ns = from->wall_ns;
		to->tag = from->tag;
		to->flags = from->flags;
		from->value = NULL;
	}
	return true;
}

/* The thread's log was retired and it was not alive at the crash. */
static bool thr_gone(const struct bbx_thr *e)
{
	return e->claim == BB_STREAM_RETIRED && !e->at_crash;
}

/* Silent longest first: running threads (and threads seen only in the
 * shared rings), then exited ones; within each, the oldest last record
 * first, threads without a record last; ties by ring, then tid. */
static int thr_cmp(const void *a, const void *b)
{
	const struct bbx_thr *x = a, *y = b;
	int gx = thr_gone(x), gy = thr_gone(y);

	if (gx != gy)
		return gx - gy;
	if (x->has_last != y->has_last)
		return x->has_last ? -1 : 1;
	if (x->has_last && x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int bbx_threads_finish(struct bbx_threads *t, struct bb_reader *r)
{
	const struct bb_box_info *in = bb_reader_info(r);
	size_t w = 0;

	/* logs (and 2.x private rings) that hold no record: a thread that
	 * only called bb_thread_init(), or whose records are all gone */
	for (uint32_t i = 0; i < in->stream_count; i++) {
		const struct bb_stream_stats *st = bb_reader_stream_stats(r, i);
		char name[16];

		if (!st || st->kind != BB_STREAM_THREAD || st->claim == BB_STREAM_FREE ||
		    (i < t->nrings && t->by_ring[i] != THR_UNSEEN))
			continue;
		memcpy(name, st->thread_name, sizeof(name));
		name[15] = '\0';
		if (!thr_add(t, i, st->tid, name, st->claim))
			return -ENOMEM;
	}
	/* a tid seen in the shared rings joins its running thread's log (or
	 * its newest exited one's) */
	for (size_t i = 0; i < t->n; i++) {
		struct bbx_thr *s = &t->v[i], *best = NULL;

		if (!s->shared_only)
			continue;
		for (size_t j = 0; j < t->n; j++) {
			struct bbx_thr *l = &t->v[j];

			if (l->shared_only || l->tid != s->tid)
				continue;
			if (!best || (l->claim == BB_STREAM_OWNED && best->claim != BB_STREAM_OWNED) ||
			    (l->claim == best->claim && l->ring > best->ring))
				best = l;
		}
		if (best && thr_merge_into(best, s)) {
			free(s->value);
			s->value = NULL;
			s->records = UINT64_MAX;   /* dropped below */
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].shared_only && t->v[i].records == UINT64_MAX)
			continue;
		t->v[w++] = t->v[i];
	}
	t->n = w;
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), thr_cmp);
	return 0;
}

void bbx_threads_free(struct bbx_threads *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].value);
	free(t->v);
	free(t->by_ring);
	memset(t, 0, sizeof(*t));
}

/* ---- the reference of the ages ------------------------------------------ */

static uint64_t clock_now(int clock)
{
	struct timespec ts;
	clockid_t id = clock == BB_CLOCK_REALTIME ? CLOCK_REALTIME :
		       clock == BB_CLOCK_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;

	/* a TSC box's timestamps come converted to CLOCK_MONOTONIC */
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Threads alive at the crash: the crash record's, and every one asked for
 * its stack (it answered, or was listed and did not).  A program that
 * cancels its threads after the crash handler took their stacks retires
 * their logs: they still read "running", as they were when the process
 * died.  For each tid, one log: the highest-numbered.
 */
static void thr_mark_crash(struct bbx_threads *t, const struct bb_crash *crash)
{
	uint32_t slots = 0, asked = 0;
	struct bb_crash st;

	if (!crash || crash->status != BB_CRASH_COMPLETE)
		return;
	if (t->r)
		bb_reader_crash_stacks(t->r, &slots, &asked);
	for (uint32_t i = 0; i <= slots; i++) {
		struct bbx_thr *best = NULL;
		int32_t tid = crash->tid;

		if (i < slots) {
			if (bb_reader_crash_stack(t->r, i, &st) != 0 ||
			    (st.status != BB_CRASH_COMPLETE && st.status != BB_CRASH_NO_ANSWER))
				continue;
			tid = st.tid;
		}
		for (size_t j = 0; j < t->n; j++)
			if (t->v[j].tid == tid && !t->v[j].shared_only &&
			    (!best || t->v[j].ring > best->ring))
				best = &t->v[j];
		if (best)
			best->at_crash = true;
	}
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), thr_cmp);
}

void bbx_threads_ref(struct bbx_threads *t, const struct bb_box_info *in, int live,
		     const struct bb_crash *crash)
{
	thr_mark_crash(t, crash);
	t->ref_clock = false;
	if (live == BB_LIVENESS_ALIVE) {
		struct timespec ts;

		t->ref_clock = true;
		t->ref_ts = clock_now(in->clock);
		clock_gettime(CLOCK_REALTIME, &ts);
		t->ref_wall = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		t->ref_key = "now";
		t->ref_text = "now (the owner is alive)";
	} else if (crash && crash->status == BB_CRASH_COMPLETE) {
		t->ref_clock = true;
		t->ref_ts = crash->ts;
		t->ref_wall = crash->wall_ns;
		t->ref_key = "crash_record";
		t->ref_text = "the crash (the crash record's time)";
	} else if (in->phase != BB_PHASE_RUNNING && in->phase_ns) {
		t->ref_wall = (int64_t)in->phase_ns;
		t->ref_key = "phase";
		t->ref_text = in->phase == BB_PHASE_EXITED ? "the owner's exit (the box's phase time)" :
			      in->phase == BB_PHASE_CLOSED ? "bb_close() (the box's phase time)" :
			      "the crash (the box's phase time)";
	} else if (in->file_mtime_ns && (int64_t)in->file_mtime_ns >= t->newest_wall) {
		t->ref_wall = (int64_t)in->file_mtime_ns;
		t->ref_key = "file_mtime";
		t->ref_text = "the box file's last modification (the owner died without a "
			      "word: no time of death)";
	} else {
		t->ref_wall = t->newest_wall;
		t->ref_key = "newest_record";
		t->ref_text = "the newest record (the owner died without a word: no time "
			      "of death)";
	}
}

/* @e's age in ns (0 when the reference is older: clocks disagree). */
static uint64_t thr_age(const struct bbx_threads *t, const struct bbx_thr *e)
{
	if (t->ref_clock)
		return t->ref_ts > e->ts ? t->ref_ts - e->ts : 0;
	/* unsigned: the difference of two anyone-written stamps can exceed
	 * int64_t, never uint64_t when ref_wall > wall_ns */
	return t->ref_wall > e->wall_ns ? (uint64_t)t->ref_wall - (uint64_t)e->wall_ns : 0;
}

static const char *thr_state(const struct bbx_thr *e)
{
	return e->shared_only ? "shared" : thr_gone(e) ? "exited" : "running";
}

/* ---- output ----------------------------------------------------------------- */

/* The "threads" array of the summary, and of --threads --json. */
void bbx_threads_struct(struct bbx_em *em, const struct bbx_threads *t)
{
	char tm[BBX_TIME_MAX];

	bbx_em_key(em, "threads_age_from");
	bbx_em_cstr(em, t->ref_key);
	bbx_em_key(em, "threads_age_reference");
	bbx_em_str(em, tm, bbx_fmt_time(tm, t->ref_wall));
	bbx_em_key(em, "threads");
	bbx_em_array(em);
	for (size_t i = 0; i < t->n; i++) {
		const struct bbx_thr *e = &t->v[i];

		bbx_em_map(em);
		bbx_em_kv_i64(em, "tid", e->tid);
		bbx_em_kv_str(em, "thread", e->name);
		bbx_em_kv_str(em, "state", thr_state(e));
		if (!e->shared_only)
			bbx_em_kv_u64(em, "stream", e->ring);
		bbx_em_kv_u64(em, "records", e->records);
		if (e->has_last) {
			uint64_t age = thr_age(t, e);

			bbx_em_kv_u64(em, "age_ns", age);
			bbx_em_key(em, "last");
			bbx_em_map(em);
			bbx_em_key(em, "ts");
			bbx_em_str(em, tm, bbx_fmt_time(tm, e->wall_ns));
			bbx_em_kv_u64(em, "clock_ns", e->ts);
			bbx_em_kv_str(em, "type", bb_tag_name(e->tag));
			if (e->cut) {
				bbx_em_key(em, "truncated");
				bbx_em_bool(em, true);
			} else {
				(void)bbx_em_record_value(em, e->tag, e->value, e->len);
			}
			bbx_em_end(em);
		}
		bbx_em_end(em);
	}
	bbx_em_end(em);
}

/* "850ms", "7.3s", "12m", ... */
static void fmt_age_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000000000u)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000u));
	else if (ns < 100 * UINT64_C(1000000000))
		snprintf(buf, len, "%llu.%llus", (unsigned long long)(ns / 1000000000u),
			 (unsigned long long)(ns / 100000000u % 10));
	else
		bbx_fmt_age(buf, len, ns / 1000000000u);
}

/* Bytes of @s (escaped text) that fit @cols columns, cut at a character. */
static size_t fit_cols(const char *s, size_t n, size_t cols)
{
	size_t c = 0, i;

	for (i = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue;
		if (c++ == cols)
			break;
	}
	return i;
}

/* The line's width: the terminal's, else THR_PIPE_COLS. */
#define THR_PIPE_COLS 160u

static size_t line_cols(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		return ws.ws_col;
	return THR_PIPE_COLS;
}

static void threads_text(struct bbx_out *out, const struct bb_box_info *in, int live,
			 const struct bbx_threads *t)
{
	char line[512], name[4 * 15 + 1], age[24], val[THR_VALUE_MAX + 64];
	size_t cols = line_cols(), left;
	int n;

	n = snprintf(line, sizeof(line), "threads of pid %d (", (int)in->pid);
	bbx_out_put(out, line, (size_t)n);
	bbx_put_escaped(out, in->comm, strnlen(in->comm, sizeof(in->comm)));
	n = snprintf(line, sizeof(line), "), %s: %zu thread%s; ages relative to %s\n",
		     bb_liveness_name(live), t->n, t->n == 1 ? "" : "s", t->ref_text);
	bbx_out_put(out, line, (size_t)n);
	bbx_out_str(out, "TID      THREAD           STATE    RECORDS  AGE      LAST RECORD\n");
	left = cols > 56 + 16 ? cols - 56 : 16;
	for (size_t i = 0; i < t->n; i++) {
		const struct bbx_thr *e = &t->v[i];
		size_t k = bbx_thread_name(name, e->name);
		int v;

		name[k] = '\0';
		if (e->has_last)
			fmt_age_ns(age, sizeof(age), thr_age(t, e));
		else
			strcpy(age, "-");
		n = snprintf(line, sizeof(line), "%-8d %-16s %-8s %-8llu %-8s ", (int)e->tid, name,
			     thr_state(e), (unsigned long long)e->records, age);
		bbx_out_put(out, line, n < 0 ? 0 : (size_t)n);
		if (!e->has_last) {
			bbx_out_str(out, "-\n");
			continue;
		}
		v = bb_format_value(e->tag, e->flags, e->value, e->len, val, sizeof(val));
		if (v < 0)
			v = (int)strnlen(val, sizeof(val) - 1);   /* "<malformed ...>" */
		k = fit_cols(val, (size_t)v, left);
		bbx_out_put(out, val, k);
		if (k < (size_t)v || e->cut)
			bbx_out_str(out, "...");
		bbx_out_char(out, '\n');
	}
}

/* The state table beside the threads: what the program said it is doing
 * (each key's latest value), with the age of its last change. */
struct thr_state_out {
	struct bbx_out *out;
	const struct bbx_threads *t;
	bool head;
};

static int thr_state_line(const struct bb_state_entry *e, void *arg)
{
	struct thr_state_out *s = arg;
	char val[BB_STATE_VALUE_MAX + 128], age[24];
	uint64_t ns;
	int v;

	if (e->status != BB_SLOT_OK)
		return 0;
	if (!s->head) {
		bbx_out_str(s->out, "state table (each key's latest value; AGE: of its last "
			    "change):\n");
		s->head = true;
	}
	ns = s->t->ref_clock ? (s->t->ref_ts > e->ts ? s->t->ref_ts - e->ts : 0) :
	     s->t->ref_wall > e->wall_ns ? (uint64_t)s->t->ref_wall - (uint64_t)e->wall_ns : 0;
	fmt_age_ns(age, sizeof(age), ns);
	v = bb_format_value(BB_TAG_KV, e->flags, e->value, e->value_len, val, sizeof(val));
	if (v < 0)
		v = (int)strnlen(val, sizeof(val) - 1);
	bbx_out_str(s->out, "  ");
	bbx_out_str(s->out, age);
	bbx_out_str(s->out, "  ");
	bbx_put_escaped(s->out, val, (size_t)v);
	bbx_out_char(s->out, '\n');
	return s->out->err;
}

/* bb-extract --threads: walk the box once, print the table (or, with
 * --json / --cbor, one map {"threads": ...}).  Returns an exit code. */
int bbx_threads_main(const struct bbx_opts *o, struct bbx_out *out, struct bb_reader *r, int live)
{
	const struct bb_box_info *in = bb_reader_info(r);
	struct bbx_threads t = { .r = r };
	struct bb_crash crash;
	struct bb_stream_stats tot;
	int ret;

	ret = bb_reader_walk(r, 0, bbx_threads_walk_cb, &t);
	if (!ret)
		ret = bbx_threads_finish(&t, r);
	if (ret) {
		bbx_msg(in->path, "%s", ret == -ENOMEM ? "out of memory" : ret == -ESTALE ?
			"box changed size while being read" : strerror(-ret));
		bbx_threads_free(&t);
		return ret == -ENOMEM ? BBX_EXIT_FAILURE : BBX_EXIT_NOBOX;
	}
	bb_reader_crash(r, &crash);
	if (crash.status == BB_CRASH_NONE && live != BB_LIVENESS_ALIVE &&
	    bb_reader_crash_stack(r, 0, &crash) == 0 && crash.status == BB_CRASH_COMPLETE) {
		/* a hang dump's copy (bb-reap --watch): ages from the time
		 * its stacks were taken (FORMAT.md §14) */
		bbx_threads_ref(&t, in, live, &crash);
		t.ref_key = "hang_dump";
		t.ref_text = "the hang dump (when the stacks were taken; bb-extract --path "
			     "prints them)";
	} else {
		bb_reader_crash(r, &crash);   /* the slot may have been read into it */
		bbx_threads_ref(&t, in, live, &crash);
	}
	if (o->fmt == BBX_FMT_TEXT) {
		struct thr_state_out so = { .out = out, .t = &t };

		threads_text(out, in, live, &t);
		(void)bb_reader_state(r, thr_state_line, &so, NULL);
	} else {
		struct bbx_em em;

		bbx_em_init(&em, out, o->fmt == BBX_FMT_CBOR);
		bbx_em_map(&em);
		bbx_em_kv_i64(&em, "pid", in->pid);
		bbx_em_kv_str(&em, "comm", in->comm);
		bbx_em_kv_str(&em, "liveness", bb_liveness_name(live));
		bbx_threads_struct(&em, &t);
		bbx_em_end(&em);
		bbx_em_eol(&em);
	}
	bbx_threads_free(&t);
	bb_reader_total_stats(r, &tot);
	return tot.corrupt || tot.skipped_bytes ? BBX_EXIT_DAMAGED : BBX_EXIT_CLEAN;
}

int bbx_threads_walk_cb(const struct bb_record *rec, void *arg)
{
	struct bbx_threads *t = arg;

	return bbx_threads_note(t, t->r, rec);
}
