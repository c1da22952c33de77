/* SPDX-License-Identifier: MIT */
/*
 * preamble.c - what bb-extract writes before the records (format 2.0):
 * the crash block, its frames symbolised when the binaries allow, then
 * the state table.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>

#include "extract.h"
#include "signames.h"
#include "symbols.h"
#include "symwire.h"

/* Longest line of a crash frame (longer ones are cut). */
#define BBX_FRAME_LINE 8192

/* Symboliser timeout per module, budget per box and per run; the
 * BB_EXTRACT_SYMBOL_* variables override them (bb-extract(1)). */
#define SYMBOL_TIMEOUT_MS    10000
#define SYMBOL_BOX_BUDGET_MS 30000
#define SYMBOL_RUN_BUDGET_MS 120000

/* The uid nobody: whose privileges a box nobody vouches for gets. */
#define NOBODY_UID 65534u

/* A positive number of milliseconds from the environment, or @dflt. */
static int env_ms(const char *name, int dflt)
{
	const char *t = getenv(name);
	long v = t && *t ? strtol(t, NULL, 10) : 0;

	return v > 0 && v < INT_MAX ? (int)v : dflt;
}

/*
 * Whose privileges the symboliser may have at most: the box's owner, as
 * far as it is proven, never by the box's bytes alone.  A file: its
 * owner (the kernel's word), or the uid its header names when the file is
 * root's (a copy root made), so root only when both say so.  A box out of
 * a journal entry has no file: journal-box.c says whose it is (a trusted
 * local entry's BB_UID; nobody on a collector, where every field is the
 * uploader's word).
 */
static uint32_t box_owner(const struct bbx_opts *o, const struct bb_box_info *info)
{
	if (o->entry)
		return o->entry_owner;
	if (!info->file_ino && !info->file_mtime_ns)
		return NOBODY_UID; /* from memory, and nobody said whose */
	return info->file_uid ? info->file_uid : info->uid;
}

static void sym_opts(const struct bbx_opts *o, const struct bb_box_info *info,
		     struct bbx_sym_opts *so)
{
	bbx_sym_opts_init(o, box_owner(o, info), so);
}

void bbx_sym_opts_init(const struct bbx_opts *o, uint32_t owner, struct bbx_sym_opts *so)
{
	const char *test = getenv("BB_EXTRACT_SYMBOL_TEST");

	so->symbolise = !o->no_symbols;
	so->timeout_ms = env_ms("BB_EXTRACT_SYMBOL_TIMEOUT_MS", SYMBOL_TIMEOUT_MS);
	so->box_budget_ms = env_ms("BB_EXTRACT_SYMBOL_BUDGET_MS", SYMBOL_BOX_BUDGET_MS);
	so->run_budget_ms = env_ms("BB_EXTRACT_SYMBOL_RUN_BUDGET_MS", SYMBOL_RUN_BUDGET_MS);
	so->debug_dirs = o->debug_dirs;
	so->ndebug_dirs = o->ndebug_dirs;
	so->debuginfod = o->debuginfod;
	so->owner = owner;
	/* test hooks: make the symbolising child misbehave */
	so->test = !test ? BBX_SYM_TEST_NONE
		 : !strcmp(test, "crash") ? BBX_SYM_TEST_CRASH
		 : !strcmp(test, "hang") ? BBX_SYM_TEST_HANG
		 : !strcmp(test, "garbage") ? BBX_SYM_TEST_GARBAGE : BBX_SYM_TEST_NONE;
}

/* One line of a frame; paths and names come from the box and the
 * binaries: escaped (bb_escape_text), so it stays one line. */
static void frame_line(struct bbx_out *o, char *line, int n)
{
	if (n < 0)
		return;
	if (n >= BBX_FRAME_LINE)
		n = BBX_FRAME_LINE - 1;
	bbx_put_escaped(o, line, (size_t)n);
	bbx_out_char(o, '\n');
}

/* The name a location is shown with: demangled, or with --raw-names as
 * the binary has it. */
static const char *loc_name(const struct bbx_loc *l, bool raw)
{
	return raw && l->linkage ? l->linkage : l->function;
}

/* "name[+0xoff] at file:line" (or "??"), appended at @n of @line. */
static int frame_loc(char *line, int n, const struct bbx_loc *l, bool raw, bool has_off,
		     uint64_t off, const char *tail)
{
	if (n < 0 || n >= BBX_FRAME_LINE)
		return n;
	n += snprintf(line + n, BBX_FRAME_LINE - (size_t)n, "%s",
		      l->function ? loc_name(l, raw) : "??");
	if (l->function && has_off && n < BBX_FRAME_LINE)
		n += snprintf(line + n, BBX_FRAME_LINE - (size_t)n, "+0x%llx",
			      (unsigned long long)off);
	if (l->file && n < BBX_FRAME_LINE)
		n += snprintf(line + n, BBX_FRAME_LINE - (size_t)n, " at %s:%u", l->file,
			      l->line);
	if (n < BBX_FRAME_LINE)
		n += snprintf(line + n, BBX_FRAME_LINE - (size_t)n, "%s", tail);
	return n;
}

/*
 * Text: "  #1  0x0000000000401136  /usr/bin/prog+0x1136  main+0x16 at /src/prog.c:12";
 * "??" when the module's file was read and no symbol contains the address.
 * Calls inlined at the address come first, innermost first, the function
 * they are inlined into last:
 *   "  #0  0x...  /usr/bin/prog+0x1149  check at /src/prog.c:7 (inlined)"
 *   "        called from main+0x19 at /src/prog.c:20"
 * A signal trampoline is "<signal handler>" (a handler ran above it).  @i
 * is the frame's depth in the stack.
 */
static void text_frame(struct bbx_out *o, uint64_t i, const struct bbx_frame *f, bool raw)
{
	char line[BBX_FRAME_LINE];
	int n;

	n = snprintf(line, sizeof(line), "  #%-2llu 0x%016llx", (unsigned long long)i,
		     (unsigned long long)f->addr);
	if (f->module)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  %s+0x%llx", f->module,
			      (unsigned long long)f->offset);
	else
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  ?");
	if (f->trampoline) {
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  <signal handler>");
		frame_line(o, line, n);
		return;
	}
	if (!f->examined && !f->at.function && !f->at.file) {
		frame_line(o, line, n);
		return;
	}
	if (n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  ");
	for (size_t k = 0; k < f->ninlined; k++) {
		n = frame_loc(line, n, &f->inlined[k], raw, false, 0, " (inlined)");
		frame_line(o, line, n);
		n = snprintf(line, sizeof(line), "        called from ");
	}
	n = frame_loc(line, n, &f->at, raw, f->has_function_offset, f->function_offset, "");
	frame_line(o, line, n);
}

/*
 * The frames as text, innermost first, numbered by their depth in the
 * stack.  A frame repeated more than twice in a row (a recursion) is
 * printed once, then
 *   "  #2-#63  (the same frame, 62 more times)"
 * and the frames the record left out (a stack deeper than it holds)
 *   "  #64-#16308  (16245 frames not recorded)"
 */
void bbx_crash_frames_text(struct bbx_out *o, const struct bb_crash *cr,
			   const struct bbx_frame *fr, bool raw)
{
	char line[128];
	uint64_t skip = 0;
	int n;

	for (uint32_t i = 0; i < cr->nframes; i++) {
		uint32_t k = i;

		if (cr->frames_omitted && i == cr->omitted_at) {
			skip = cr->frames_omitted;
			n = snprintf(line, sizeof(line), "  #%u-#%llu  (%u frames not recorded)\n",
				     i, (unsigned long long)(i + skip - 1), cr->frames_omitted);
			bbx_out_put(o, line, (size_t)n);
		}
		text_frame(o, i + skip, &fr[i], raw);
		while (k + 1 < cr->nframes && cr->frames[k + 1] == cr->frames[i] &&
		       cr->frame_flags[k + 1] == cr->frame_flags[i] &&
		       !(cr->frames_omitted && k + 1 == cr->omitted_at))
			k++;
		if (k < i + 2)
			continue;
		n = snprintf(line, sizeof(line), "  #%llu-#%llu  (the same frame, %u more times)\n",
			     (unsigned long long)(i + 1 + skip), (unsigned long long)(k + skip),
			     k - i);
		bbx_out_put(o, line, (size_t)n);
		i = k;
	}
}

/* "function" as shown, "linkage_name" when the binary's is another */
static void struct_name(struct bbx_em *em, const struct bbx_loc *l, bool raw)
{
	bbx_em_kv_str(em, "function", loc_name(l, raw));
	if (l->linkage && !raw)
		bbx_em_kv_str(em, "linkage_name", l->linkage);
}

static void struct_loc(struct bbx_em *em, const struct bbx_loc *l, bool raw)
{
	if (l->function)
		struct_name(em, l, raw);
	if (l->file) {
		bbx_em_kv_str(em, "file", l->file);
		bbx_em_kv_u64(em, "line", l->line);
	}
}

/* JSON / CBOR: addr, module, build_id, offset, function, linkage_name,
 * function_offset, file, line, inlined (innermost first); each absent when
 * unknown; "exact" for an interrupted instruction, "signal_handler" for a
 * trampoline. */
void bbx_frame_struct(struct bbx_em *em, const struct bbx_frame *f, bool raw)
{
	bbx_em_map(em);
	bbx_em_kv_u64(em, "addr", f->addr);
	if (f->module) {
		bbx_em_kv_str(em, "module", f->module);
		if (f->build_id) {
			bbx_em_key(em, "build_id");
			bbx_em_bytes(em, f->build_id, f->build_id_len);
		}
		bbx_em_kv_u64(em, "offset", f->offset);
	}
	if (f->exact) {
		bbx_em_key(em, "exact");
		bbx_em_bool(em, true);
	}
	if (f->trampoline) {
		bbx_em_key(em, "signal_handler");
		bbx_em_bool(em, true);
	}
	if (f->at.function) {
		struct_name(em, &f->at, raw);
		if (f->has_function_offset)
			bbx_em_kv_u64(em, "function_offset", f->function_offset);
	}
	if (f->at.file) {
		bbx_em_kv_str(em, "file", f->at.file);
		bbx_em_kv_u64(em, "line", f->at.line);
	}
	if (f->ninlined) {
		bbx_em_key(em, "inlined");
		bbx_em_array(em);
		for (size_t k = 0; k < f->ninlined; k++) {
			bbx_em_map(em);
			struct_loc(em, &f->inlined[k], raw);
			bbx_em_end(em);
		}
		bbx_em_end(em);
	}
	bbx_em_end(em);
}

/* The text block's first lines: what happened, to which thread, when.
 *   "*** crashed: SIGSEGV (11), code SEGV_MAPERR (1), fault address 0x10, thread 42 (w), at T"
 *   "*** stack overflow: fault address 0x7ffd1000 is 8 bytes below the stack pointer 0x7ffd1008"
 *   "*** fatal: thread 42 (w), at T"
 *   "*** reason: <the text bb_crash_record() was given>"
 *   "*** aborted (SIGABRT) after: <reason>" (a fatal record, then the
 *     signal @ended the process with: the header's phase_signal)
 *   "*** reason: <glibc's assert message>" (a SIGABRT record, 3.2)
 * The thread name and the reason are the box's: escaped, one line each. */
static void text_head(struct bbx_out *o, const struct bb_crash *cr, const char *t, int ended)
{
	const char *sig = bbx_signal_name(cr->signal), *code = bbx_sigcode_name(cr->signal, cr->code);
	char line[512], addr[48] = "";
	int n;

	if (cr->kind == BB_CRASH_KIND_FATAL) {
		n = snprintf(line, sizeof(line), "*** fatal: thread %d (%s), at %s",
			     (int)cr->tid, cr->thread[0] ? cr->thread : "-", t);
	} else {
		/* only a fault the kernel raised has an address (a record
		 * from before the writer left it out says 0 for the others) */
		if (cr->has_addr && cr->code > 0)
			snprintf(addr, sizeof(addr), ", fault address 0x%llx",
				 (unsigned long long)cr->addr);
		n = snprintf(line, sizeof(line), "*** crashed%s: %s (%d), code %s (%d)%s, "
			     "thread %d (%s), at %s",
			     cr->kind == BB_CRASH_KIND_SIGNAL ? "" : " (a crash record of an unknown kind)",
			     sig ? sig : "signal", (int)cr->signal, code ? code : "?", (int)cr->code,
			     addr, (int)cr->tid, cr->thread[0] ? cr->thread : "-", t);
	}
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	bbx_put_escaped(o, line, n > 0 ? (size_t)n : 0);
	bbx_out_char(o, '\n');
	if (cr->stack_overflow) {
		uint64_t d = cr->addr > cr->sp ? cr->addr - cr->sp : cr->sp - cr->addr;

		char where[48] = "at";

		if (d)
			snprintf(where, sizeof(where), "%llu bytes %s", (unsigned long long)d,
				 cr->addr < cr->sp ? "below" : "above");
		n = snprintf(line, sizeof(line), "*** stack overflow: fault address 0x%llx is %s "
			     "the stack pointer 0x%llx\n", (unsigned long long)cr->addr, where,
			     (unsigned long long)cr->sp);
		bbx_out_put(o, line, (size_t)n);
	}
	if (cr->kind == BB_CRASH_KIND_FATAL && ended > 0) {
		const char *name = bbx_signal_name(ended);

		n = snprintf(line, sizeof(line), "*** %s (%s) after: ",
			     ended == SIGABRT ? "aborted" : "killed", name ? name : "signal");
		bbx_out_put(o, line, (size_t)n);
		if (cr->reason_len)
			bbx_put_escaped(o, cr->reason, cr->reason_len);
		else
			bbx_out_str(o, "(no reason given)");
		bbx_out_char(o, '\n');
	} else if (cr->kind == BB_CRASH_KIND_FATAL || cr->reason_len) {
		bbx_out_str(o, "*** reason: ");
		if (cr->reason_len)
			bbx_put_escaped(o, cr->reason, cr->reason_len);
		else
			bbx_out_str(o, "(none given)");
		bbx_out_char(o, '\n');
	}
}

/* Every other thread's stack at the crash (format 3.1): the slots of the
 * crash stacks area, each decoded, and where its frames start among the
 * symbolised ones. */
struct stacks {
	struct bb_crash *v;
	size_t *first;       /* index of each one's frame 0 in the frames */
	uint32_t n, asked;
	uint32_t threads;    /* the process's threads at the crash; 0 unknown */
};

/* Text: "*** thread 42 (w), at T:" and its frames; "*** thread 43 (x): no
 * answer ..."; what was not asked. */
static void text_stacks(struct bbx_out *o, const struct stacks *s, const struct bbx_frame *fr,
			bool raw)
{
	char line[512], t[BBX_TIME_MAX];
	int n;

	for (uint32_t i = 0; i < s->n; i++) {
		const struct bb_crash *st = &s->v[i];

		if (st->status == BB_CRASH_NONE)
			continue;
		if (st->status == BB_CRASH_COMPLETE) {
			t[bbx_fmt_time(t, st->wall_ns)] = '\0';
			n = snprintf(line, sizeof(line), "*** thread %d (%s), at %s:", (int)st->tid,
				     st->thread[0] ? st->thread : "-", t);
		} else if (st->status == BB_CRASH_NO_ANSWER) {
			n = snprintf(line, sizeof(line), "*** thread %d (%s): %s", (int)st->tid,
				     st->thread[0] ? st->thread : "-", st->problem);
		} else {
			n = snprintf(line, sizeof(line), "*** crash stack %u: %s", i, st->problem);
		}
		if (n >= (int)sizeof(line))
			n = (int)sizeof(line) - 1;
		bbx_put_escaped(o, line, n > 0 ? (size_t)n : 0);
		bbx_out_char(o, '\n');
		if (st->status == BB_CRASH_COMPLETE)
			bbx_crash_frames_text(o, st, fr + s->first[i], raw);
	}
	if (s->asked > s->n) {
		n = snprintf(line, sizeof(line), "*** %u more threads not asked for their stacks: "
			     "the box has room for %u\n", s->asked - s->n, s->n);
		bbx_out_put(o, line, (size_t)n);
	}
	if (s->threads > 1) {   /* a process of one thread: nothing to add */
		n = snprintf(line, sizeof(line), "*** %u threads at the crash, the crashing one "
			     "included\n", s->threads);
		bbx_out_put(o, line, (size_t)n);
	}
}

/* JSON / CBOR: the crash record's "threads" array. */
static void struct_stacks(struct bbx_em *em, const struct stacks *s, const struct bbx_frame *fr,
			  bool raw)
{
	char t[BBX_TIME_MAX];

	bbx_em_key(em, "threads");
	bbx_em_array(em);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct bb_crash *st = &s->v[i];

		if (st->status == BB_CRASH_NONE)
			continue;
		bbx_em_map(em);
		bbx_em_kv_str(em, "status", bb_crash_status_name(st->status));
		if (st->status == BB_CRASH_COMPLETE || st->status == BB_CRASH_NO_ANSWER) {
			bbx_em_kv_i64(em, "tid", st->tid);
			bbx_em_kv_str(em, "thread", st->thread);
		}
		if (st->status == BB_CRASH_COMPLETE) {
			bbx_em_key(em, "ts");
			bbx_em_str(em, t, bbx_fmt_time(t, st->wall_ns));
			if (st->has_sp)
				bbx_em_kv_u64(em, "sp", st->sp);
			bbx_em_key(em, "frames");
			bbx_em_array(em);
			for (uint32_t k = 0; k < st->nframes; k++)
				bbx_frame_struct(em, &fr[s->first[i] + k], raw);
			bbx_em_end(em);
			if (st->frames_omitted) {
				bbx_em_kv_u64(em, "frames_omitted", st->frames_omitted);
				bbx_em_kv_u64(em, "omitted_at", st->omitted_at);
			}
		} else {
			bbx_em_kv_str(em, "problem", st->problem);
		}
		bbx_em_end(em);
	}
	bbx_em_end(em);
	if (s->asked > s->n)
		bbx_em_kv_u64(em, "threads_not_asked", s->asked - s->n);
	if (s->threads)
		bbx_em_kv_u64(em, "threads_at_crash", s->threads);
}

/* JSON / CBOR: one {"type":"crash"} record; what a kind has (FORMAT.md
 * §11), "addr" only when the kernel gave one. */
static void struct_crash(struct bbx_em *em, const struct bb_crash *cr, const char *t,
			 const struct bbx_frame *fr, const char *note, bool raw,
			 const struct stacks *s)
{
	const char *sig = bbx_signal_name(cr->signal), *code = bbx_sigcode_name(cr->signal, cr->code);

	bbx_em_map(em);
	bbx_em_kv_str(em, "type", "crash");
	bbx_em_kv_str(em, "level", "crash");
	bbx_em_kv_str(em, "status", "complete");
	bbx_em_kv_str(em, "kind", cr->kind == BB_CRASH_KIND_SIGNAL ? "signal" :
		      cr->kind == BB_CRASH_KIND_FATAL ? "fatal" : "unknown");
	bbx_em_key(em, "ts");
	bbx_em_cstr(em, t);
	if (cr->kind == BB_CRASH_KIND_FATAL) {
		bbx_em_key(em, "reason");
		bbx_em_str(em, cr->reason, cr->reason_len);
	} else {
		if (cr->reason_len) {   /* 3.2: glibc's abort message */
			bbx_em_key(em, "reason");
			bbx_em_str(em, cr->reason, cr->reason_len);
		}
		bbx_em_kv_i64(em, "signal", cr->signal);
		if (sig)
			bbx_em_kv_str(em, "signal_name", sig);
		bbx_em_kv_i64(em, "code", cr->code);
		if (code)
			bbx_em_kv_str(em, "code_name", code);
		if (cr->has_addr && cr->code > 0)
			bbx_em_kv_u64(em, "addr", cr->addr);
		if (cr->has_sp)
			bbx_em_kv_u64(em, "sp", cr->sp);
		if (cr->stack_overflow) {
			bbx_em_key(em, "stack_overflow");
			bbx_em_bool(em, true);
		}
	}
	bbx_em_kv_i64(em, "tid", cr->tid);
	bbx_em_kv_str(em, "thread", cr->thread);
	bbx_em_key(em, "frames");
	bbx_em_array(em);
	for (uint32_t i = 0; i < cr->nframes; i++)
		bbx_frame_struct(em, &fr[i], raw);
	bbx_em_end(em);
	if (cr->frames_omitted) {
		bbx_em_kv_u64(em, "frames_omitted", cr->frames_omitted);
		bbx_em_kv_u64(em, "omitted_at", cr->omitted_at);
	}
	if (s->n)
		struct_stacks(em, s, fr, raw);
	if (note[0])
		bbx_em_kv_str(em, "symbols_note", note);
	bbx_em_end(em);
	bbx_em_eol(em);
}

/*
 * The crash block, first of all output: what happened (a signal: its
 * code, fault address, a stack overflow; bb_crash_record(): the reason),
 * the thread, the frames as module+offset and, when the binaries allow,
 * function and file:line.  Text: a few lines; JSON / CBOR: one
 * {"type":"crash"} record.  A torn or corrupt crash area is reported as
 * such.
 */
static int emit_crash(struct bbx_ctx *c)
{
	const struct bb_crash *cr = &c->crash;
	const struct bb_module *mods = NULL;
	struct bbx_frame *fr = NULL;
	struct bbx_sym_opts so;
	struct stacks s = { 0 };
	char note[1024] = "", err[256] = "", t[BBX_TIME_MAX];
	uint64_t *addrs = NULL;
	uint8_t *flags = NULL;
	size_t nmods = 0, nf = cr->nframes;
	int rc = 0;

	bool dump = false;   /* no crash, but a dump's stacks (FORMAT.md §14) */

	if (cr->status == BB_CRASH_NONE) {
		struct bb_crash *first = malloc(sizeof(*first));
		uint32_t ns = 0, na = 0;

		if (!first)
			return -ENOMEM;
		bb_reader_crash_stacks(c->r, &ns, &na);
		dump = ns && bb_reader_crash_stack(c->r, 0, first) == 0 &&
		       first->status != BB_CRASH_NONE;
		free(first);
		if (!dump)
			return 0;
	}
	if (!dump && cr->status != BB_CRASH_COMPLETE) {
		if (c->opt->fmt == BBX_FMT_TEXT) {
			char line[256];
			int n = snprintf(line, sizeof(line), "*** %s\n", cr->problem);

			bbx_out_put(c->out, line, n > 0 ? (size_t)n : 0);
			return 0;
		}
		bbx_em_map(&c->em);
		bbx_em_kv_str(&c->em, "type", "crash");
		bbx_em_kv_str(&c->em, "level", "crash");
		bbx_em_kv_str(&c->em, "status", bb_crash_status_name(cr->status));
		bbx_em_kv_str(&c->em, "problem", cr->problem);
		bbx_em_end(&c->em);
		bbx_em_eol(&c->em);
		return 0;
	}
	if (bb_reader_modules(c->r, &mods, &nmods, NULL, err, sizeof(err)) < 0)
		snprintf(note, sizeof(note), "no modules: %s", err);
	sym_opts(c->opt, c->info, &so);
	/* the other threads' stacks (3.1), symbolised with the crashing
	 * thread's in one call */
	bb_reader_crash_stacks(c->r, &s.n, &s.asked);
	bb_reader_crash_threads(c->r, &s.threads);
	if (s.n && (!(s.v = calloc(s.n, sizeof(*s.v))) || !(s.first = calloc(s.n, sizeof(*s.first))))) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < s.n; i++) {
		bb_reader_crash_stack(c->r, i, &s.v[i]);
		s.first[i] = nf;
		if (s.v[i].status == BB_CRASH_COMPLETE)
			nf += s.v[i].nframes;
	}
	if (nf && (!(fr = calloc(nf, sizeof(*fr))) || !(addrs = malloc(nf * sizeof(*addrs))) ||
		   !(flags = malloc(nf)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < cr->nframes; k++) {
		addrs[k] = cr->frames[k];
		flags[k] = cr->frame_flags[k];
	}
	for (uint32_t i = 0; i < s.n; i++)
		for (uint32_t k = 0; s.v[i].status == BB_CRASH_COMPLETE && k < s.v[i].nframes; k++) {
			addrs[s.first[i] + k] = s.v[i].frames[k];
			flags[s.first[i] + k] = s.v[i].frame_flags[k];
		}
	if (fr)
		rc = bbx_symbolise(fr, addrs, flags, nf, mods, nmods, &so, note, sizeof(note));
	if (rc)
		goto out;
	t[bbx_fmt_time(t, cr->wall_ns)] = '\0';
	if (c->opt->fmt == BBX_FMT_TEXT && dump) {
		static const char head[] = "*** no crash: every thread's stack, asked while the "
					   "process ran (a hang dump, bb-reap --watch)\n";

		bbx_out_put(c->out, head, sizeof(head) - 1);
		text_stacks(c->out, &s, fr, c->opt->raw_names);
		if (note[0] && !c->opt->quiet)
			bbx_msg(c->info->path, "symbols: %s", note);
		goto out;
	}
	if (c->opt->fmt == BBX_FMT_TEXT) {
		text_head(c->out, cr, t, c->info->phase == BB_PHASE_CRASHED ? c->info->phase_signal : 0);
		bbx_crash_frames_text(c->out, cr, fr, c->opt->raw_names);
		text_stacks(c->out, &s, fr, c->opt->raw_names);
		if (note[0] && !c->opt->quiet)
			bbx_msg(c->info->path, "symbols: %s", note);
		goto out;
	}
	struct_crash(&c->em, cr, t, fr, note, c->opt->raw_names, &s);
out:
	if (fr)
		bbx_frames_free(fr, nf);
	free(fr);
	free(addrs);
	free(flags);
	free(s.v);
	free(s.first);
	return rc;
}

/* One state slot: text "state key=value", or a {"type":"state"} record. */
static int state_entry(const struct bb_state_entry *e, void *arg)
{
	struct bbx_ctx *c = arg;
	char t[BBX_TIME_MAX];

	if (c->opt->fmt == BBX_FMT_TEXT) {
		char *p = bbx_out_reserve(c->out, 64);
		int n;

		if (e->status != BB_SLOT_OK) {
			n = snprintf(p, 64, "state slot %u: ", e->slot);
			bbx_out_commit(c->out, (size_t)n);
			bbx_out_str(c->out, e->problem);
			bbx_out_char(c->out, '\n');
			return c->out->err;
		}
		n = bbx_fmt_time(p, e->wall_ns);
		memcpy(p + n, " state ", 7);
		bbx_out_commit(c->out, (size_t)n + 7);
		p = bbx_out_reserve(c->out, TEXT_FAST);
		n = bb_format_value(BB_TAG_KV, e->flags, e->value, e->value_len, p, TEXT_FAST);
		bbx_out_commit(c->out, n > 0 ? (size_t)n : strnlen(p, TEXT_FAST - 1));
		bbx_out_char(c->out, '\n');
		return c->out->err;
	}
	bbx_em_map(&c->em);
	bbx_em_kv_str(&c->em, "type", "state");
	if (e->status != BB_SLOT_OK) {
		bbx_em_kv_u64(&c->em, "slot", e->slot);
		bbx_em_kv_str(&c->em, "status", e->status == BB_SLOT_BUSY ? "busy" : "corrupt");
		bbx_em_kv_str(&c->em, "problem", e->problem);
	} else {
		bbx_em_key(&c->em, "ts");
		bbx_em_str(&c->em, t, bbx_fmt_time(t, e->wall_ns));
		if (!bbx_em_record_value(&c->em, BB_TAG_KV, e->value, e->value_len))
			c->bad_values++;
	}
	bbx_em_end(&c->em);
	bbx_em_eol(&c->em);
	return c->out->err;
}

/* Crash block, then the state table: before any record. */
int bbx_preamble(struct bbx_ctx *c)
{
	int rc;

	bb_reader_crash(c->r, &c->crash);
	rc = emit_crash(c);
	if (rc)
		return rc;
	rc = bb_reader_state(c->r, state_entry, c, &c->state);
	if (rc == -ESTALE)
		bbx_msg(c->info->path, "box changed size while being read");
	c->has_state = rc != -ENODATA;
	if (rc == -ENODATA && c->info->state_problem[0] && !c->opt->quiet)
		bbx_msg(c->info->path, "state table ignored: %s", c->info->state_problem);
	return rc == -ENODATA ? 0 : rc;
}
