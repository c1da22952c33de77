/* SPDX-License-Identifier: MIT */
/*
 * bb-extract - read a libblackbox box, live or post mortem.
 *
 * Built only on the reader API (blackbox/reader.h): it never parses the
 * box layout itself.  Records of all rings come merged in timestamp order
 * and go out as text, JSON Lines or a CBOR sequence; the verification
 * report (what was intact, torn, overwritten, corrupt, dropped) goes to
 * stderr for text and into a final summary object otherwise.
 *
 * Exit status: see usage() and bb-extract(1).
 */
#include <blackbox.h>
#include <blackbox/reader.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emit.h"
#include "out.h"
#include "symbols.h"
#include "resolve.h"
#include "sandbox.h"
#include "symwire.h"

#define PROG "bb-extract"

enum {
	EXIT_CLEAN    = 0, /* every delivered record intact, no damage found */
	EXIT_FAILURE_ = 1, /* output or --save failed, out of memory */
	EXIT_USAGE    = 2,
	EXIT_DAMAGED  = 3, /* corrupt records or malformed values: partial output */
	EXIT_NOBOX    = 4, /* no box, not readable, not a box, changed while read */
	EXIT_AMBIGUOUS = 5, /* PID: boxes of several owners claim it, none chosen */
};

enum fmt { FMT_TEXT, FMT_JSON, FMT_CBOR };

/* Longest line of a crash frame (longer ones are cut). */
#define BBX_FRAME_LINE 8192

/* Poll period of --follow. */
#define FOLLOW_POLL_NS (50 * 1000 * 1000)

/* --debug-dir given at most this often. */
#define DEBUG_DIRS_MAX 16

struct opts {
	const char *path, *dir, *save;
	pid_t pid;
	bool  list, all, follow, quiet, any_owner, uring, no_symbols, debuginfod;
	enum fmt fmt;
	const char *debug_dirs[DEBUG_DIRS_MAX]; /* absolute */
	size_t ndebug_dirs;
};

/* Where a box comes from: a pid, a path, or an entry of a directory. */
struct src {
	enum { SRC_PID, SRC_PATH, SRC_DIRENT } kind;
	pid_t pid;
	const char *path;   /* SRC_PATH */
	const char *dir;    /* SRC_PID, SRC_DIRENT (NULL = default) */
	int dirfd;          /* SRC_DIRENT */
	const char *name;   /* SRC_DIRENT */
};

/* One extraction in progress. */
struct ctx {
	const struct opts *opt;
	struct bbx_out *out;
	struct bbx_em em;
	struct bb_reader *r;
	const struct bb_box_info *info;
	bool with_pid;       /* --all: records carry the owner's pid */
	uint64_t bad_values; /* intact records whose value did not decode */
	uint64_t lapped;     /* --follow: times the writer lapped us between polls */
	char *scratch;       /* text: room for a value too long for the fast path */
	struct bb_crash crash;       /* the crash area, read before the records */
	struct bb_state_stats state; /* the state table, likewise */
	bool has_state;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void msg(const char *what, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * "bb-extract: <what>: <message>" on stderr.  Messages quote file names
 * and strings from boxes (comm, thread names, the reader's messages): the
 * whole line goes through the library's terminal escaper, so none of them
 * reaches the terminal raw.
 */
static void msg(const char *what, const char *fmt, ...)
{
	char line[8192], safe[4 * sizeof(line) + 1];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s: %s%s", PROG, what ? what : "",
		     what ? ": " : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	bb_escape_text(line, strlen(line), safe, sizeof(safe));
	fprintf(stderr, "%s\n", safe);
}

/* A name from a box or a path (at most 8 KiB: the longest path is 4 KiB),
 * escaped into the output: 4 bytes per input byte at most. */
static void out_escaped(struct bbx_out *o, const char *s, size_t n)
{
	if (n > 8192)
		n = 8192;
	bbx_out_commit(o, bb_escape_text(s, n, bbx_out_reserve(o, 4 * n + 1), 4 * n + 1));
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... PID\n"
"       %s [OPTION]... --path FILE\n"
"       %s [OPTION]... --all | --list\n"
"Read the flight-recorder box of process PID (the box it maps now, or the\n"
"newest one it left), of a box file, or of every box in the directory.\n"
"The crash record (if any) comes first, then the state table, then the\n"
"records of all rings merged in timestamp order.\n"
"\n"
"  -p, --path FILE   read the box file FILE (e.g. a --save copy)\n"
"  -d, --dir DIR     look for boxes in DIR instead of %s\n"
"  -l, --list        list every box: pid, comm, state, size, rings, records,\n"
"                    dropped, age\n"
"  -a, --all         extract every box in the directory\n"
"  -j, --json        JSON Lines: one object per record, then {\"summary\":...}\n"
"  -c, --cbor        RFC 8742 CBOR sequence: one map per record, then summary\n"
"  -s, --save FILE   write a consistent copy of the box to FILE (never\n"
"                    overwrites an existing file)\n"
"  -f, --follow      print new records as they are committed until the owner\n"
"                    is gone (or SIGINT); report records lost in between\n"
"  -q, --quiet       no verification report on stderr unless damage is found\n"
"      --any-owner   accept a box file owned by another uid than its header's\n"
"      --no-symbols  crash frames as module+offset only (no symboliser runs)\n"
"      --debug-dir DIR  look for debug files in DIR first (DIR/.build-id/xx/\n"
"                    yyyy.debug, DIR/<module's directory>/<debuglink>); again\n"
"                    for more directories\n"
"      --debuginfod  let the symboliser ask the debuginfod servers of\n"
"                    DEBUGINFOD_URLS for missing debug files (off by default)\n"
"      --uring       write output with io_uring when the kernel allows it\n"
"      --no-uring    write output with write(2) (the default; also\n"
"                    BB_EXTRACT_NO_URING=1)\n"
"  -h, --help        this help\n"
"  -V, --version     version\n"
"\n"
"Options may stand before or after PID.\n"
"\n"
"Exit status:\n"
"  0  read cleanly: every record printed is intact (a record torn by the\n"
"     owner's death and records overwritten while reading are reported,\n"
"     they are the ring's normal contract, not damage)\n"
"  1  output or --save failed (write error, file exists, out of memory)\n"
"  2  usage error\n"
"  3  box damaged: corrupt records (CRC mismatches included), corrupt state\n"
"     slots, a corrupt crash area or malformed values were skipped; the\n"
"     output is partial (a complete crash record is not damage)\n"
"  4  box not found, not readable, not a valid box, or it changed size\n"
"     while being read\n"
"  5  PID: boxes of different owners claim it and none can be trusted over\n"
"     the others; they are named: read one with --path\n",
		PROG, PROG, PROG, BB_DEFAULT_DIR);
}

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", PROG);
	exit(EXIT_USAGE);
}

/* ---- opening -------------------------------------------------------- */

static int src_open(const struct src *s, unsigned flags, struct bb_reader **r,
		    char *err, size_t errlen)
{
	switch (s->kind) {
	case SRC_PID:
		return bb_reader_open_pid(s->pid, s->dir, flags, r, err, errlen);
	case SRC_PATH:
		return bb_reader_open_path(s->path, flags, r, err, errlen);
	default:
		return bb_reader_openat(s->dirfd, s->name, flags, r, err, errlen);
	}
}

static void src_label(const struct src *s, char *buf, size_t len)
{
	switch (s->kind) {
	case SRC_PID:
		snprintf(buf, len, "pid %d", (int)s->pid);
		break;
	case SRC_PATH:
		snprintf(buf, len, "%s", s->path);
		break;
	default:
		snprintf(buf, len, "%s/%s", s->dir ? s->dir : BB_DEFAULT_DIR, s->name);
	}
}

/*
 * Open a box and decide how to read it: the live mapping while its owner
 * is alive (or for --follow), otherwise a snapshot (BB_OPEN_SNAPSHOT), so
 * a post-mortem read sees an immutable copy that nobody can truncate or
 * rewrite under us.  Returns 0 and *live, or a negative errno after
 * saying what is wrong (unless @quiet_enodata and the box is still being
 * created).
 */
static int open_box(const struct src *s, const struct opts *o, bool follow,
		    struct bb_reader **out, int *live, bool quiet_enodata)
{
	unsigned flags = o->any_owner ? BB_OPEN_ANY_OWNER : 0;
	char err[8192] = "", label[4200];
	struct bb_reader *r, *snap;
	int ret;

	ret = src_open(s, flags, &r, err, sizeof(err));
	if (ret < 0) {
		if (ret == -ENODATA && quiet_enodata)
			return ret;
		src_label(s, label, sizeof(label));
		if (ret == -ENOTUNIQ)
			msg(NULL, "%s", err); /* names every claim */
		else if (ret == -ESRCH && s->kind == SRC_PID && !err[0])
			msg(label, "no box of this process in %s",
			    s->dir ? s->dir : BB_DEFAULT_DIR);
		else if (err[0]) /* the reader's message names the file */
			msg(NULL, "%s%s", err, ret == -EPERM && !o->any_owner
			    ? " (--any-owner reads it anyway)" : "");
		else
			msg(label, "%s", strerror(-ret));
		return ret;
	}
	*live = bb_reader_liveness(r);
	if (*live != BB_OWNER_ALIVE && !follow &&
	    src_open(s, flags | BB_OPEN_SNAPSHOT, &snap, err, sizeof(err)) == 0) {
		const struct bb_box_info *a = bb_reader_info(r), *b = bb_reader_info(snap);

		/* the same file (not a newer box of the pid, not a replacement) */
		if (a->file_dev == b->file_dev && a->file_ino == b->file_ino) {
			bb_reader_close(r);
			r = snap;
		} else {
			bb_reader_close(snap);
		}
	}
	*out = r;
	return 0;
}

/* ---- record output -------------------------------------------------- */

/*
 * Thread names are the owner's bytes: escaped (bb_escape_text), and a
 * blank as '?' so that the name stays one field of the line.  @p has room
 * for 4 * 15 + 1 bytes.
 */
static size_t put_thread_name(char *p, const char *name)
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

#define TEXT_FAST   4096u            /* try formatting in place in this much */
#define TEXT_SCRATCH (8u * 65536u)   /* any value of a max-size record fits */

static int text_record(const struct bb_record *rec, void *arg)
{
	struct ctx *c = arg;
	struct bbx_out *o = c->out;
	char *p = bbx_out_reserve(o, BBX_TIME_MAX + 24 + 4 * 15 + 1);
	size_t n = 0;
	int v;

	n += bbx_fmt_time(p, rec->wall_ns);
	p[n++] = ' ';
	n += bbx_fmt_i64(p + n, rec->tid);
	p[n++] = ' ';
	n += put_thread_name(p + n, rec->thread_name);
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

static int struct_record(const struct bb_record *rec, void *arg)
{
	struct ctx *c = arg;
	struct bbx_em *em = &c->em;

	bbx_em_record_start(em, rec->wall_ns, rec->ts, c->with_pid, c->info->pid,
			    rec->tid, rec->thread_name ? rec->thread_name : "",
			    rec->ring, bb_tag_name(rec->tag));
	if (!bbx_em_record_value(em, rec->tag, rec->value, rec->value_len))
		c->bad_values++;
	bbx_em_record_end(em, rec->flags & BB_RF_TRUNCATED, rec->flags & BB_RF_IMPORTANT);
	return c->out->err;
}

/* ---- crash record and state table (format 2.0) ----------------------- */

/* Symboliser timeout per module; BB_EXTRACT_SYMBOL_TIMEOUT_MS overrides it
 * (bb-extract(1)). */
#define SYMBOL_TIMEOUT_MS 10000

static void sym_opts(const struct opts *o, const struct bb_box_info *info,
		     struct bbx_sym_opts *so)
{
	const char *t = getenv("BB_EXTRACT_SYMBOL_TIMEOUT_MS");
	const char *test = getenv("BB_EXTRACT_SYMBOL_TEST");
	long v = t && *t ? strtol(t, NULL, 10) : 0;

	so->symbolise = !o->no_symbols;
	so->timeout_ms = v > 0 && v < INT_MAX ? (int)v : SYMBOL_TIMEOUT_MS;
	so->debug_dirs = o->debug_dirs;
	so->ndebug_dirs = o->ndebug_dirs;
	so->debuginfod = o->debuginfod;
	so->file_uid = info->file_uid;
	so->hdr_uid = info->uid;
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
	out_escaped(o, line, (size_t)n);
	bbx_out_char(o, '\n');
}

/* "name[+0xoff] at file:line" (or "??"), appended at @n of @line. */
static int frame_loc(char *line, int n, const struct bbx_loc *l, bool has_off,
		     uint64_t off, const char *tail)
{
	if (n < 0 || n >= BBX_FRAME_LINE)
		return n;
	n += snprintf(line + n, BBX_FRAME_LINE - (size_t)n, "%s",
		      l->function ? l->function : "??");
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
 */
static void text_frame(struct bbx_out *o, size_t i, const struct bbx_frame *f)
{
	char line[BBX_FRAME_LINE];
	int n;

	n = snprintf(line, sizeof(line), "  #%-2zu 0x%016llx", i, (unsigned long long)f->addr);
	if (f->module)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  %s+0x%llx", f->module,
			      (unsigned long long)f->offset);
	else
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  ?");
	if (!f->examined && !f->at.function && !f->at.file) {
		frame_line(o, line, n);
		return;
	}
	if (n < (int)sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  ");
	for (size_t k = 0; k < f->ninlined; k++) {
		n = frame_loc(line, n, &f->inlined[k], false, 0, " (inlined)");
		frame_line(o, line, n);
		n = snprintf(line, sizeof(line), "        called from ");
	}
	n = frame_loc(line, n, &f->at, f->has_function_offset, f->function_offset, "");
	frame_line(o, line, n);
}

static void struct_loc(struct bbx_em *em, const struct bbx_loc *l)
{
	if (l->function)
		bbx_em_kv_str(em, "function", l->function);
	if (l->file) {
		bbx_em_kv_str(em, "file", l->file);
		bbx_em_kv_u64(em, "line", l->line);
	}
}

/* JSON / CBOR: addr, module, build_id, offset, function, function_offset,
 * file, line, inlined (innermost first); each absent when unknown. */
static void struct_frame(struct bbx_em *em, const struct bbx_frame *f)
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
	if (f->at.function) {
		bbx_em_kv_str(em, "function", f->at.function);
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
			struct_loc(em, &f->inlined[k]);
			bbx_em_end(em);
		}
		bbx_em_end(em);
	}
	bbx_em_end(em);
}

/*
 * The crash block, first of all output: signal, code, fault address,
 * thread, frames as module+offset and, when the binaries allow, function
 * and file:line.  Text: a few lines; JSON / CBOR: one {"type":"crash"}
 * record.  A torn or corrupt crash area is reported as such.
 */
static int emit_crash(struct ctx *c)
{
	const struct bb_crash *cr = &c->crash;
	const struct bb_module *mods = NULL;
	struct bbx_frame *fr = NULL;
	struct bbx_sym_opts so;
	char note[1024] = "", err[256] = "", t[BBX_TIME_MAX];
	const char *sig, *code;
	size_t nmods = 0;
	int rc = 0;

	if (cr->status == BB_CRASH_NONE)
		return 0;
	if (cr->status != BB_CRASH_COMPLETE) {
		if (c->opt->fmt == FMT_TEXT) {
			char line[256];
			int n = snprintf(line, sizeof(line), "*** %s\n", cr->problem);

			bbx_out_put(c->out, line, n > 0 ? (size_t)n : 0);
			return 0;
		}
		bbx_em_map(&c->em);
		bbx_em_kv_str(&c->em, "type", "crash");
		bbx_em_kv_str(&c->em, "status", bb_crash_status_name(cr->status));
		bbx_em_kv_str(&c->em, "problem", cr->problem);
		bbx_em_end(&c->em);
		bbx_em_eol(&c->em);
		return 0;
	}
	if (bb_reader_modules(c->r, &mods, &nmods, NULL, err, sizeof(err)) < 0)
		snprintf(note, sizeof(note), "no modules: %s; ", err);
	sym_opts(c->opt, c->info, &so);
	if (cr->nframes && !(fr = calloc(cr->nframes, sizeof(*fr))))
		return -ENOMEM;
	if (fr)
		rc = bbx_symbolise(fr, cr->frames, cr->nframes, mods, nmods, &so, note,
				   sizeof(note));
	if (rc)
		goto out;
	sig = bbx_signal_name(cr->signal);
	code = bbx_sigcode_name(cr->signal, cr->code);
	t[bbx_fmt_time(t, cr->wall_ns)] = '\0';
	if (c->opt->fmt == FMT_TEXT) {
		char line[512];
		int n = snprintf(line, sizeof(line),
				 "*** crashed: %s (%d), code %s (%d), fault address 0x%llx, "
				 "thread %d (%s), at %s\n",
				 sig ? sig : "signal", (int)cr->signal, code ? code : "?",
				 (int)cr->code, (unsigned long long)cr->addr, (int)cr->tid,
				 cr->thread[0] ? cr->thread : "-", t);

		if (n >= (int)sizeof(line))
			n = (int)sizeof(line) - 1;
		/* the thread name is the box's: escaped, the line ends it */
		out_escaped(c->out, line, n > 0 ? (size_t)n - 1 : 0);
		bbx_out_char(c->out, '\n');
		for (uint32_t i = 0; i < cr->nframes; i++)
			text_frame(c->out, i, &fr[i]);
		if (note[0] && !c->opt->quiet)
			msg(c->info->path, "symbols: %s", note);
		goto out;
	}
	bbx_em_map(&c->em);
	bbx_em_kv_str(&c->em, "type", "crash");
	bbx_em_kv_str(&c->em, "status", "complete");
	bbx_em_key(&c->em, "ts");
	bbx_em_cstr(&c->em, t);
	bbx_em_kv_i64(&c->em, "signal", cr->signal);
	if (sig)
		bbx_em_kv_str(&c->em, "signal_name", sig);
	bbx_em_kv_i64(&c->em, "code", cr->code);
	if (code)
		bbx_em_kv_str(&c->em, "code_name", code);
	bbx_em_kv_u64(&c->em, "addr", cr->addr);
	bbx_em_kv_i64(&c->em, "tid", cr->tid);
	bbx_em_kv_str(&c->em, "thread", cr->thread);
	bbx_em_key(&c->em, "frames");
	bbx_em_array(&c->em);
	for (uint32_t i = 0; i < cr->nframes; i++)
		struct_frame(&c->em, &fr[i]);
	bbx_em_end(&c->em);
	if (note[0])
		bbx_em_kv_str(&c->em, "symbols_note", note);
	bbx_em_end(&c->em);
	bbx_em_eol(&c->em);
out:
	bbx_frames_free(fr, cr->nframes);
	free(fr);
	return rc;
}

/* One state slot: text "state key=value", or a {"type":"state"} record. */
static int state_entry(const struct bb_state_entry *e, void *arg)
{
	struct ctx *c = arg;
	char t[BBX_TIME_MAX];

	if (c->opt->fmt == FMT_TEXT) {
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

/* Crash block, then the state table: before any record (issue 5). */
static int emit_preamble(struct ctx *c)
{
	int rc;

	bb_reader_crash(c->r, &c->crash);
	rc = emit_crash(c);
	if (rc)
		return rc;
	rc = bb_reader_state(c->r, state_entry, c, &c->state);
	if (rc == -ESTALE)
		msg(c->info->path, "box changed size while being read");
	c->has_state = rc != -ENODATA;
	if (rc == -ENODATA && c->info->state_problem[0] && !c->opt->quiet)
		msg(c->info->path, "state table ignored: %s", c->info->state_problem);
	return rc == -ENODATA ? 0 : rc;
}

/* "tsc", "monotonic", "monotonic (tsc unavailable)", ... */
static const char *clock_desc(const struct bb_box_info *in)
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
	case BB_RING_PRIVATE:   return "private";
	case BB_RING_SHARED:    return "shared";
	case BB_RING_IMPORTANT: return "important";
	default:                return "unknown";
	}
}

static const char *ring_state_name(uint32_t s)
{
	switch (s) {
	case BB_RING_FREE:    return "free";
	case BB_RING_OWNED:   return "owned";
	case BB_RING_RETIRED: return "retired";
	default:              return "unknown";
	}
}

/* Rings that were used or where something happened. */
static bool ring_worth_reporting(const struct bb_ring_stats *st)
{
	return st->tid || st->read || st->torn || st->overwritten ||
	       st->corrupt || st->skipped_bytes;
}

/* Damage: anything that could not be proven intact and is not the ring's
 * normal contract (overwritten) or the owner's death (torn record, torn
 * crash area, a state slot left busy). */
static bool is_damaged(const struct ctx *c, const struct bb_ring_stats *tot)
{
	return tot->corrupt || tot->skipped_bytes || c->bad_values ||
	       c->crash.status == BB_CRASH_CORRUPT || c->state.corrupt;
}

static const char *state_name(int live)
{
	if (live > 0)
		return bb_liveness_name(live);
	return "unknown";
}

static void summary_struct(struct ctx *c, int live, int code)
{
	const struct bb_box_info *in = c->info;
	struct bbx_em *em = &c->em;
	struct bb_ring_stats tot, st;
	char t[BBX_TIME_MAX], ver[16];
	uint32_t i;

	bb_reader_total_stats(c->r, &tot);
	bbx_em_map(em);
	bbx_em_key(em, "summary");
	bbx_em_map(em);
	bbx_em_kv_str(em, "path", in->path);
	bbx_em_kv_i64(em, "pid", in->pid);
	bbx_em_kv_u64(em, "uid", in->uid);
	bbx_em_kv_u64(em, "file_uid", in->file_uid);
	bbx_em_kv_str(em, "comm", in->comm);
	bbx_em_kv_str(em, "cmdline", in->cmdline);
	bbx_em_kv_u64(em, "starttime", in->starttime);
	bbx_em_kv_str(em, "boot_id", in->boot_id);
	bbx_em_kv_u64(em, "sequence", in->sequence);
	bbx_em_kv_str(em, "state", state_name(live));
	if (in->state == BB_STATE_CRASHED) {
		bbx_em_kv_i64(em, "signal", in->state_signal);
	}
	bbx_em_kv_str(em, "crash_record", bb_crash_status_name(c->crash.status));
	bbx_em_kv_str(em, "clock", clock_desc(in));
	if (in->clock == BB_CLOCK_TSC)
		bbx_em_kv_u64(em, "tsc_hz", in->tsc_hz);
	bbx_em_key(em, "created");
	bbx_em_str(em, t, bbx_fmt_time(t, (int64_t)in->created_ns));
	snprintf(ver, sizeof(ver), "%u.%u", in->version_major, in->version_minor);
	bbx_em_kv_str(em, "format", ver);
	bbx_em_kv_u64(em, "box_size", in->box_size);
	bbx_em_kv_u64(em, "ring_size", in->ring_size);
	bbx_em_kv_u64(em, "ring_count", in->ring_count);
	bbx_em_kv_u64(em, "rings_used", in->rings_used);

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
	if (c->opt->follow) {
		bbx_em_kv_u64(em, "lapped_between_polls", c->lapped);
	}
	bbx_em_key(em, "dropped");
	bbx_em_map(em);
	bbx_em_kv_u64(em, "busy", in->dropped_busy);
	bbx_em_kv_u64(em, "nested", in->dropped_nested);
	bbx_em_kv_u64(em, "toobig", in->dropped_toobig);
	bbx_em_kv_u64(em, "important", in->dropped_important);
	bbx_em_end(em);
	bbx_em_kv_u64(em, "truncated", in->truncated);

	bbx_em_key(em, "rings");
	bbx_em_array(em);
	for (i = 0; i < in->ring_count; i++) {
		const struct bb_ring_stats *p = bb_reader_ring_stats(c->r, i);

		if (!p || !ring_worth_reporting(p))
			continue;
		st = *p;
		st.thread_name[sizeof(st.thread_name) - 1] = '\0';
		bbx_em_map(em);
		bbx_em_kv_u64(em, "ring", i);
		bbx_em_kv_str(em, "kind", ring_kind_name(st.kind));
		bbx_em_kv_str(em, "state", ring_state_name(st.state));
		bbx_em_kv_i64(em, "tid", st.tid);
		bbx_em_kv_str(em, "thread", st.thread_name);
		bbx_em_kv_u64(em, "read", st.read);
		bbx_em_kv_u64(em, "torn", st.torn);
		bbx_em_kv_u64(em, "overwritten", st.overwritten);
		bbx_em_kv_u64(em, "corrupt", st.corrupt);
		bbx_em_kv_u64(em, "crc_bad", st.crc_bad);
		bbx_em_kv_u64(em, "skipped_bytes", st.skipped_bytes);
		if (st.problem[0])
			bbx_em_kv_str(em, "problem", st.problem);
		bbx_em_end(em);
	}
	bbx_em_end(em);
	bbx_em_kv_str(em, "status", is_damaged(c, &tot) ? "damaged" : "intact");
	bbx_em_kv_i64(em, "exit", code);
	bbx_em_end(em);
	bbx_em_end(em);
	bbx_em_eol(em);
}

static void summary_text(struct ctx *c, int live)
{
	const struct bb_box_info *in = c->info;
	struct bb_ring_stats tot, st;
	char sig[32] = "", owner[48] = "";
	uint32_t i;

	bb_reader_total_stats(c->r, &tot);
	if (c->opt->quiet && !is_damaged(c, &tot))
		return;
	if (in->state == BB_STATE_CRASHED)
		snprintf(sig, sizeof(sig), " (signal %d)", in->state_signal);
	if (in->file_uid != in->uid) /* --any-owner: whose file it really is */
		snprintf(owner, sizeof(owner), " (file owner uid %u)", in->file_uid);
	msg(in->path, "pid %d (%s) uid %u%s, %s%s; format %u.%u, %u of %u rings used; "
	    "clock %s; crash record %s",
	    (int)in->pid, in->comm, in->uid, owner, state_name(live), sig,
	    in->version_major, in->version_minor, in->rings_used, in->ring_count,
	    clock_desc(in), bb_crash_status_name(c->crash.status));
	for (i = 0; i < in->ring_count; i++) {
		const struct bb_ring_stats *p = bb_reader_ring_stats(c->r, i);

		if (!p || !ring_worth_reporting(p))
			continue;
		st = *p;
		st.thread_name[sizeof(st.thread_name) - 1] = '\0';
		msg(in->path, "ring %u %s tid %d (%s): %llu read, %llu torn, "
		    "%llu overwritten, %llu corrupt (%llu by CRC), %llu bytes skipped%s%s",
		    i, ring_kind_name(st.kind), (int)st.tid, st.thread_name,
		    (unsigned long long)st.read, (unsigned long long)st.torn,
		    (unsigned long long)st.overwritten,
		    (unsigned long long)st.corrupt, (unsigned long long)st.crc_bad,
		    (unsigned long long)st.skipped_bytes,
		    st.problem[0] ? "; descriptor rejected: " : "", st.problem);
	}
	if (c->has_state || in->state_errors)
		msg(in->path, "state table: %u slots, %u set, %u busy, %u corrupt; "
		    "%llu bb_set() calls failed in the owner",
		    c->state.slots, c->state.used, c->state.busy, c->state.corrupt,
		    (unsigned long long)in->state_errors);
	if (c->crash.status == BB_CRASH_CORRUPT || c->crash.status == BB_CRASH_TORN)
		msg(in->path, "%s", c->crash.problem);
	msg(in->path, "%llu records intact; %llu torn by the owner's death, "
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
	if (c->opt->follow && c->lapped)
		msg(in->path, "records were lost: the writer lapped the reader "
		    "%llu times between polls", (unsigned long long)c->lapped);
	if (is_damaged(c, &tot))
		msg(in->path, "box damaged: the output is partial");
}

/* ---- extraction ----------------------------------------------------- */

static int walk(struct ctx *c, unsigned flags)
{
	bb_record_fn fn = c->opt->fmt == FMT_TEXT ? text_record : struct_record;
	int ret = bb_reader_walk(c->r, BB_WALK_MERGE | flags, fn, c);

	if (ret == -ENOMEM)
		msg(c->info->path, "out of memory");
	else if (ret == -ESTALE)
		msg(c->info->path, "box changed size while being read");
	else if (ret < 0 && ret != c->out->err)
		msg(c->info->path, "%s", strerror(-ret));
	return ret;
}

static void sleep_poll(void)
{
	struct timespec ts = { 0, FOLLOW_POLL_NS };

	nanosleep(&ts, NULL); /* a signal cuts it short: fine */
}

/* --follow: walk again every poll period until the owner is gone. */
static int follow(struct ctx *c)
{
	struct bb_ring_stats tot;
	uint64_t seen;
	int ret, live;

	bb_reader_total_stats(c->r, &tot);
	seen = tot.overwritten;
	for (;;) {
		if (bbx_out_flush(c->out))
			return c->out->err;
		live = bb_reader_liveness(c->r);
		sleep_poll();
		/* after the owner is gone (or on SIGINT) one last walk drains */
		ret = walk(c, BB_WALK_FOLLOW);
		if (ret)
			return ret;
		bb_reader_total_stats(c->r, &tot);
		if (tot.overwritten != seen) {
			/* stats count laps (gaps), not records: the records
			 * in a gap were overwritten before anyone read them */
			c->lapped += tot.overwritten - seen;
			msg(c->info->path, "records lost: the writer overwrote "
			    "them before they could be read");
			seen = tot.overwritten;
		}
		if (live != BB_OWNER_ALIVE || stop_requested)
			return 0;
	}
}

/* Extract one open box.  Returns an exit code. */
static int extract(const struct opts *o, struct bbx_out *out, struct bb_reader *r,
		   int live, bool with_pid)
{
	struct ctx c = { .opt = o, .out = out, .r = r, .with_pid = with_pid };
	struct bb_ring_stats tot;
	int ret, code;

	c.info = bb_reader_info(r);
	bbx_em_init(&c.em, out, o->fmt == FMT_CBOR);
	if (with_pid && o->fmt == FMT_TEXT) {
		char head[4400];
		int n = snprintf(head, sizeof(head), "== %s: pid %d (%s), %s ==",
				 c.info->path, (int)c.info->pid, c.info->comm,
				 state_name(live));

		/* path and comm are anyone's bytes */
		out_escaped(out, head, n > 0 ? (size_t)n : 0);
		bbx_out_char(out, '\n');
	}
	ret = emit_preamble(&c);
	if (!ret)
		ret = walk(&c, o->follow ? BB_WALK_FOLLOW : 0);
	if (!ret && o->follow)
		ret = follow(&c);
	free(c.scratch);
	if (ret == -ENOMEM)
		return EXIT_FAILURE_;
	if (ret < 0 && ret != out->err) /* the box, not the output: said already */
		return bbx_out_flush(out), EXIT_NOBOX;
	if (o->follow)
		live = bb_reader_liveness(r);
	bb_reader_total_stats(r, &tot);
	code = is_damaged(&c, &tot) ? EXIT_DAMAGED : EXIT_CLEAN;
	if (o->fmt == FMT_TEXT) {
		if (bbx_out_flush(out) == 0)
			summary_text(&c, live);
	} else {
		summary_struct(&c, live, code);
	}
	return code;
}

static int do_save(const struct opts *o, struct bb_reader *r)
{
	const struct bb_box_info *in = bb_reader_info(r);
	int fd, ret;

	fd = open(o->save, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		msg(o->save, "%s%s", strerror(errno),
		    errno == EEXIST ? " (never overwritten)" : "");
		return EXIT_FAILURE_;
	}
	ret = bb_reader_save(r, fd);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret) {
		msg(o->save, "cannot save %s: %s", in->path, ret == -ESTALE ?
		    "box changed size while being read" : strerror(-ret));
		unlink(o->save);
		return EXIT_FAILURE_;
	}
	if (!o->quiet)
		msg(in->path, "saved to %s", o->save);
	return EXIT_CLEAN;
}

/* ---- directory modes: --list and --all ------------------------------ */

/*
 * Both start from bb_reader_scan(): every entry under the prefix, opened
 * by the library and judged by its header and file owner (header and ring
 * table only, nothing else read), in pid and creation order.
 */
static int scan(const struct opts *o, struct bb_box_entry **v, size_t *n)
{
	char err[512] = "";
	int ret = bb_reader_scan(o->dir, v, n, err, sizeof(err));

	if (ret == -ENOMEM) {
		msg(NULL, "out of memory");
		return EXIT_FAILURE_;
	}
	if (ret < 0) {
		msg(NULL, "%s", err);
		return EXIT_NOBOX;
	}
	return EXIT_CLEAN;
}

/* Say why an entry is not a box, as opening it would (a box still being
 * created, -ENODATA, is not worth a message). */
static void say_not_a_box(const struct bb_box_entry *e)
{
	if (e->error != -ENODATA)
		msg(NULL, "%s", e->problem);
}

static void fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char unit[] = "BKMGT";
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f%c", d, unit[u]);
}

static void fmt_age(char *buf, size_t len, uint64_t sec)
{
	if (sec < 120)
		snprintf(buf, len, "%llus", (unsigned long long)sec);
	else if (sec < 7200)
		snprintf(buf, len, "%llum", (unsigned long long)(sec / 60));
	else if (sec < 172800)
		snprintf(buf, len, "%lluh", (unsigned long long)(sec / 3600));
	else
		snprintf(buf, len, "%llud", (unsigned long long)(sec / 86400));
}

/* What bb_reader_scan() found about a box's claim, for --list. */
static const struct {
	unsigned flag;
	const char *key;  /* JSON / CBOR "flags" member */
	const char *text; /* text table, after the path */
} claim_flags[] = {
	{ BB_BOX_UID_MISMATCH, "uid-mismatch",
	  "file owner is not the header's uid: never chosen" },
	{ BB_BOX_FOREIGN, "foreign",
	  "claims a running process whose box is another owner's" },
	{ BB_BOX_AMBIGUOUS, "ambiguous",
	  "boxes of different owners claim this pid: none chosen" },
};

static void list_one(const struct opts *o, struct bbx_out *out, struct bbx_em *em,
		     const struct bb_box_entry *e, uint64_t nowns)
{
	const struct bb_box_info *in = &e->info;
	const char *dir = o->dir ? o->dir : BB_DEFAULT_DIR;
	uint64_t age = nowns > in->created_ns ? (nowns - in->created_ns) / 1000000000u : 0;
	const char *state = e->liveness > 0 ? bb_liveness_name(e->liveness) : "unknown";
	int signal = in->state == BB_STATE_CRASHED ? in->state_signal : 0;
	const char *sig = e->liveness == BB_OWNER_CRASHED ? bbx_signal_name(signal) : NULL;
	uint64_t dropped = in->dropped_busy + in->dropped_nested + in->dropped_toobig +
			   in->dropped_important;
	char path[4400], line[256], size[16], used[16], rings[24], agebuf[16];
	char t[BBX_TIME_MAX], st[48], comm[16 * 4 + 1];
	int n;

	snprintf(path, sizeof(path), "%s/%s", dir, e->name);
	/* "crashed (SIGSEGV)" */
	if (e->liveness == BB_OWNER_CRASHED && sig)
		snprintf(st, sizeof(st), "%s (%s)", state, sig);
	else if (e->liveness == BB_OWNER_CRASHED)
		snprintf(st, sizeof(st), "%s (signal %d)", state, signal);
	else
		snprintf(st, sizeof(st), "%s", state);

	if (o->fmt != FMT_TEXT) {
		bbx_em_map(em);
		bbx_em_kv_i64(em, "pid", in->pid);
		bbx_em_kv_str(em, "comm", in->comm);
		bbx_em_kv_str(em, "state", state);
		if (e->liveness == BB_OWNER_CRASHED) {
			bbx_em_kv_i64(em, "signal", signal);
			if (sig)
				bbx_em_kv_str(em, "signal_name", sig);
		}
		bbx_em_kv_str(em, "clock", clock_desc(in));
		bbx_em_kv_u64(em, "size", in->box_size);
		bbx_em_kv_u64(em, "rings_used", in->rings_used);
		bbx_em_kv_u64(em, "ring_count", in->ring_count);
		bbx_em_kv_u64(em, "used_bytes", in->used_bytes);
		bbx_em_kv_u64(em, "dropped", dropped);
		bbx_em_key(em, "created");
		bbx_em_str(em, t, bbx_fmt_time(t, (int64_t)in->created_ns));
		bbx_em_kv_u64(em, "age_s", age);
		bbx_em_kv_u64(em, "uid", in->uid);
		bbx_em_kv_u64(em, "file_uid", in->file_uid);
		bbx_em_kv_str(em, "path", path);
		if (e->flags & (BB_BOX_UID_MISMATCH | BB_BOX_FOREIGN | BB_BOX_AMBIGUOUS)) {
			bbx_em_key(em, "flags");
			bbx_em_array(em);
			for (size_t k = 0; k < sizeof(claim_flags) / sizeof(claim_flags[0]); k++)
				if (e->flags & claim_flags[k].flag)
					bbx_em_cstr(em, claim_flags[k].key);
			bbx_em_end(em);
		}
		bbx_em_end(em);
		bbx_em_eol(em);
		return;
	}
	fmt_size(size, sizeof(size), in->box_size);
	fmt_size(used, sizeof(used), in->used_bytes);
	snprintf(rings, sizeof(rings), "%u/%u", in->rings_used, in->ring_count);
	fmt_age(agebuf, sizeof(agebuf), age);
	/* the first 16 bytes of comm (anyone's bytes), escaped */
	if (in->comm[0])
		bb_escape_text(in->comm, strnlen(in->comm, 16), comm, sizeof(comm));
	else
		strcpy(comm, "-");
	n = snprintf(line, sizeof(line), "%-8d ", (int)in->pid);
	bbx_out_put(out, line, (size_t)n);
	bbx_out_str(out, comm);
	for (size_t k = strlen(comm); k < 16; k++)
		bbx_out_char(out, ' ');
	bbx_out_char(out, ' ');
	n = snprintf(line, sizeof(line), "%-18s %-8s %-7s %-8s %-8llu %-6s %-10s %-8u ", st,
		     size, rings, used, (unsigned long long)dropped, agebuf, clock_desc(in),
		     in->file_uid);
	bbx_out_put(out, line, n > 0 ? (size_t)n : 0);
	out_escaped(out, path, strlen(path));
	for (size_t k = 0; k < sizeof(claim_flags) / sizeof(claim_flags[0]); k++)
		if (e->flags & claim_flags[k].flag) {
			bbx_out_str(out, "  [");
			bbx_out_str(out, claim_flags[k].text);
			bbx_out_char(out, ']');
		}
	bbx_out_char(out, '\n');
}

/*
 * --list: one line per box, from its header and ring table only (a box's
 * records are never read here: the work is the same for a box of any
 * size, and nothing follows a file's apparent size).  Boxes whose claim is
 * in doubt are listed with what is wrong.
 */
static int do_list(const struct opts *o, struct bbx_out *out)
{
	struct bb_box_entry *v = NULL;
	struct timespec now;
	struct bbx_em em;
	uint64_t nowns;
	size_t n = 0;
	int code = scan(o, &v, &n);

	if (code)
		return code;
	clock_gettime(CLOCK_REALTIME, &now);
	nowns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	bbx_em_init(&em, out, o->fmt == FMT_CBOR);
	if (o->fmt == FMT_TEXT)
		bbx_out_str(out, "PID      COMM             STATE              SIZE     RINGS   "
			    "USED     DROPPED  AGE    CLOCK      OWNER    PATH\n");
	for (size_t i = 0; i < n; i++) {
		if (v[i].error)
			say_not_a_box(&v[i]);
		else
			list_one(o, out, &em, &v[i], nowns);
	}
	bb_reader_scan_free(v);
	return EXIT_CLEAN;
}

static int do_all(const struct opts *o, struct bbx_out *out)
{
	const char *dir = o->dir ? o->dir : BB_DEFAULT_DIR;
	struct bb_box_entry *v = NULL;
	int code, worst = EXIT_CLEAN, dfd, opened = 0, failed = 0;
	size_t n = 0;

	code = scan(o, &v, &n);
	if (code)
		return code;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		msg(dir, "%s", strerror(errno));
		bb_reader_scan_free(v);
		return EXIT_NOBOX;
	}
	/* by pid and creation time (the scan's order) */
	for (size_t i = 0; i < n && !stop_requested; i++) {
		struct src src = { .kind = SRC_DIRENT, .dirfd = dfd,
				   .name = v[i].name, .dir = o->dir };
		struct bb_reader *r;
		int live;

		if (v[i].error) {
			say_not_a_box(&v[i]);
			failed += v[i].error != -ENODATA;
			continue;
		}
		if (open_box(&src, o, false, &r, &live, true) < 0) {
			failed++;
			continue;
		}
		opened++;
		code = extract(o, out, r, live, true);
		bb_reader_close(r);
		if (code == EXIT_FAILURE_ || out->err) {
			close(dfd);
			bb_reader_scan_free(v);
			return EXIT_FAILURE_;
		}
		if (code > worst)
			worst = code;
	}
	close(dfd);
	bb_reader_scan_free(v);
	if (!opened && failed)
		return EXIT_NOBOX;
	if (!opened && !o->quiet)
		msg(dir, "no boxes");
	return worst;
}

/* ---- main ----------------------------------------------------------- */

static pid_t parse_pid(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		usage_error("'%s' is not a process id", s);
	return (pid_t)v;
}

/* --debug-dir: an existing directory, made absolute (libdw reads a relative
 * entry as a subdirectory of each module's), without ':' (its separator). */
static void add_debug_dir(struct opts *o, const char *dir)
{
	struct stat st;
	char *abs;

	if (o->ndebug_dirs == DEBUG_DIRS_MAX)
		usage_error("--debug-dir given more than %d times", DEBUG_DIRS_MAX);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		usage_error("--debug-dir '%s': not a directory", dir);
	abs = realpath(dir, NULL);
	if (!abs)
		usage_error("--debug-dir '%s': %s", dir, strerror(errno));
	if (strchr(abs, ':'))
		usage_error("--debug-dir '%s': a ':' cannot be searched", abs);
	o->debug_dirs[o->ndebug_dirs++] = abs;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum { OPT_ANY_OWNER = 256, OPT_NO_URING, OPT_URING, OPT_NO_SYMBOLS, OPT_DEBUG_DIR,
	       OPT_DEBUGINFOD };
	static const struct option lopts[] = {
		{ "path",      required_argument, NULL, 'p' },
		{ "dir",       required_argument, NULL, 'd' },
		{ "list",      no_argument,       NULL, 'l' },
		{ "all",       no_argument,       NULL, 'a' },
		{ "json",      no_argument,       NULL, 'j' },
		{ "cbor",      no_argument,       NULL, 'c' },
		{ "save",      required_argument, NULL, 's' },
		{ "follow",    no_argument,       NULL, 'f' },
		{ "quiet",     no_argument,       NULL, 'q' },
		{ "any-owner", no_argument,       NULL, OPT_ANY_OWNER },
		{ "no-uring",  no_argument,       NULL, OPT_NO_URING },
		{ "uring",     no_argument,       NULL, OPT_URING },
		{ "no-symbols", no_argument,      NULL, OPT_NO_SYMBOLS },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "debuginfod", no_argument,      NULL, OPT_DEBUGINFOD },
		{ "help",      no_argument,       NULL, 'h' },
		{ "version",   no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, nsrc;

	/* "-" first: non-options come back in order as 1, whatever
	 * POSIXLY_CORRECT says, so a pid may stand anywhere */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "-p:d:lajcs:fqhV", lopts, NULL)) != -1) {
		switch (ch) {
		case 1:
			if (o->pid)
				usage_error("more than one pid ('%s')", optarg);
			o->pid = parse_pid(optarg);
			break;
		case 'p': o->path = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'l': o->list = true; break;
		case 'a': o->all = true; break;
		case 'j':
			if (o->fmt == FMT_CBOR)
				usage_error("--json and --cbor exclude each other");
			o->fmt = FMT_JSON;
			break;
		case 'c':
			if (o->fmt == FMT_JSON)
				usage_error("--json and --cbor exclude each other");
			o->fmt = FMT_CBOR;
			break;
		case 's': o->save = optarg; break;
		case 'f': o->follow = true; break;
		case 'q': o->quiet = true; break;
		case OPT_ANY_OWNER: o->any_owner = true; break;
		case OPT_NO_URING: o->uring = false; break;
		case OPT_URING: o->uring = true; break;
		case OPT_NO_SYMBOLS: o->no_symbols = true; break;
		case OPT_DEBUG_DIR: add_debug_dir(o, optarg); break;
		case OPT_DEBUGINFOD: o->debuginfod = true; break;
		case 'h':
			usage(stdout);
			exit(EXIT_CLEAN);
		case 'V':
			printf("%s (libblackbox) %d.%d.%d, box format %d.%d\n", PROG,
			       BB_VERSION_MAJOR, BB_VERSION_MINOR, BB_VERSION_PATCH,
			       BB_FORMAT_MAJOR, BB_FORMAT_MINOR);
			exit(EXIT_CLEAN);
		default:
			if (optopt && strchr("pds", optopt))
				usage_error("option '-%c' needs an argument", optopt);
			if (optopt >= 256 || optopt == 0)
				usage_error("unknown or incomplete option '%s'",
					    argv[optind - 1]);
			usage_error("unknown option '-%c'", optopt);
		}
	}
	for (; optind < argc; optind++) { /* after "--" */
		if (o->pid)
			usage_error("more than one pid ('%s')", argv[optind]);
		o->pid = parse_pid(argv[optind]);
	}

	nsrc = !!o->pid + !!o->path + o->list + o->all;
	if (nsrc == 0)
		usage_error("nothing to read: give a PID, --path FILE, --list or --all");
	if (nsrc > 1)
		usage_error("give only one of PID, --path, --list, --all");
	if (o->follow && (o->list || o->all))
		usage_error("--follow reads one box: give a PID or --path");
	if (o->save && (o->list || o->all || o->follow))
		usage_error("--save copies one box: give a PID or --path, without --follow");
	if (o->fmt == FMT_CBOR && !o->save && isatty(STDOUT_FILENO))
		usage_error("refusing to write CBOR to a terminal (redirect or pipe it)");
}

int main(int argc, char **argv)
{
	/*
	 * write(2) by default: bench/extract_bench.sh measured io_uring no
	 * faster for output to a file on this 2-CPU machine (its io-wq worker
	 * competes with formatting for the other CPU); --uring opts in.
	 */
	struct opts o = { .fmt = FMT_TEXT, .uring = false };
	struct bbx_out out;
	struct bb_reader *r = NULL;
	struct sigaction sa;
	const char *env = getenv("BB_EXTRACT_NO_URING");
	int code, live = 0;

#ifdef BB_HAVE_LIBDW
	/* the symbolising child: bb-extract started again by bbx_sandbox_start() */
	if (argc == 2 && !strcmp(argv[1], BBX_SANDBOX_CHILD_ARG))
		return bbx_resolve_main();
#endif
	if (env && *env && strcmp(env, "0"))
		o.uring = false;
	parse_args(argc, argv, &o);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (!o.list && !o.all) {
		struct src src = { .kind = o.path ? SRC_PATH : SRC_PID,
				   .pid = o.pid, .path = o.path, .dir = o.dir };

		int ret = open_box(&src, &o, o.follow, &r, &live, false);

		if (ret < 0)
			return ret == -ENOTUNIQ ? EXIT_AMBIGUOUS : EXIT_NOBOX;
		if (o.save) {
			code = do_save(&o, r);
			bb_reader_close(r);
			return code;
		}
	}
	/* --follow output is small and must appear at once: plain writes */
	if (bbx_out_open(&out, STDOUT_FILENO, o.uring && !o.follow) < 0) {
		msg(NULL, "out of memory");
		bb_reader_close(r);
		return EXIT_FAILURE_;
	}
	if (o.list)
		code = do_list(&o, &out);
	else if (o.all)
		code = do_all(&o, &out);
	else
		code = extract(&o, &out, r, live, false);
	bb_reader_close(r);
	if (bbx_out_close(&out) < 0) {
		if (out.err != -EPIPE)
			msg("standard output", "%s", strerror(-out.err));
		return EXIT_FAILURE_;
	}
	return code;
}
