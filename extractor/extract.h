/* SPDX-License-Identifier: MIT */
/*
 * extract.h - what the files of bb-extract share: options, the state of
 * one extraction.  bb-extract.c reads the command line; extract.c opens
 * boxes and drives an extraction; records.c writes records, preamble.c
 * the crash block and the state table, report.c the verification report,
 * list.c the --list table, journal-*.c the boxes in journal entries.
 */
#ifndef BBX_EXTRACT_H
#define BBX_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include <blackbox/reader.h>

#include "emit.h"
#include "msg.h"
#include "out.h"

#define PROG "bb-extract"

enum {
	BBX_EXIT_CLEAN     = 0, /* every delivered record intact, no damage found */
	BBX_EXIT_FAILURE   = 1, /* output or --save failed, out of memory */
	BBX_EXIT_USAGE     = 2,
	BBX_EXIT_DAMAGED   = 3, /* corrupt records or malformed values: partial output */
	BBX_EXIT_NOBOX     = 4, /* no box, not readable, not a box, changed while read */
	BBX_EXIT_AMBIGUOUS = 5, /* PID: boxes of several owners claim it, none chosen */
};

enum bbx_format { BBX_FMT_TEXT, BBX_FMT_JSON, BBX_FMT_CBOR, BBX_FMT_PERFETTO };

/* --journal-directory given at most this often. */
#define BBX_JOURNAL_DIRS_MAX 16

/* --debug-dir given at most this often. */
#define DEBUG_DIRS_MAX 16

struct bbx_opts {
	const char *path, *dir, *save;
	pid_t pid;
	bool  list, all, follow, quiet, any_owner, uring, no_symbols, debuginfod, raw_names;
	bool  threads;       /* --threads: threads.c */
	bool  snapshot;      /* --snapshot PID: snapshot.c */
	enum bbx_format fmt;
	const char *debug_dirs[DEBUG_DIRS_MAX]; /* absolute */
	size_t ndebug_dirs;
	bool journal;        /* --journal, --journal-directory: journal-*.c */
	const char *journal_dir, *machine, *boot, *cursor; /* journal_dir: the first */
	const char *journal_dirs[BBX_JOURNAL_DIRS_MAX]; /* every --journal-directory */
	size_t njournal_dirs;
	bool untrusted;      /* --untrusted: --list shows entries not from bb-reap too */
	bool groups;         /* --groups: the crash groups of the entries */
	const char *group;   /* --group ID: those of a group; alone, its newest box */
	const char *comm, *unit, *state, *release; /* --comm, --unit, --state,
						      --release: filters */
	bool wide;           /* --wide: --list and --groups with every column */
	int64_t since_us, until_us; /* --since, --until (0: none), CLOCK_REALTIME us */
	/* A box taken out of a journal entry (journal-box.c) has no file, so no
	 * file owner: whose it is comes from what the entry proves. */
	bool entry;
	uint32_t entry_owner;     /* the uid its symbols are parsed as, at most */
	const char *entry_proof;  /* how the report qualifies the owner */
};

/* threads.c: each thread's last record (--threads; the summary's
 * "threads").  bbx_threads_note() per record (0 or -ENOMEM), then
 * bbx_threads_finish() (threads without records, shared-ring tids joined
 * to their logs, sorted), then bbx_threads_ref() (what ages count from). */
struct bbx_thr {
	uint32_t ring;       /* its log (UINT32_MAX: seen only in a shared ring) */
	int32_t  tid;
	char     name[16];
	uint32_t claim;      /* enum bb_ring_claim of its log */
	bool     shared_only;
	bool     at_crash;   /* alive at the crash: the crash record's thread,
	                      * or one asked for its stack (bbx_threads_ref()) */
	uint64_t records;
	bool     has_last, cut;
	uint64_t ts;         /* its last record: box clock ns, */
	int64_t  wall_ns;    /* wall clock, */
	uint8_t  tag, flags; /* and value (cut to 4 KiB: cut) */
	uint8_t *value;
	size_t   len, cap;
};
struct bbx_threads {
	struct bb_reader *r;
	struct bbx_thr *v;
	size_t n, cap;
	int32_t *by_ring;    /* ring index -> entry, or THR_* */
	size_t nrings;       /* entries of by_ring */
	int64_t newest_wall; /* of any record */
	bool ref_clock;      /* ages from ref_ts (box clock), else from ref_wall */
	uint64_t ref_ts;
	int64_t ref_wall;
	const char *ref_key, *ref_text;
};
int bbx_threads_note(struct bbx_threads *t, struct bb_reader *r, const struct bb_record *rec);
int bbx_threads_walk_cb(const struct bb_record *rec, void *arg);
int bbx_threads_finish(struct bbx_threads *t, struct bb_reader *r);
void bbx_threads_ref(struct bbx_threads *t, const struct bb_box_info *in, int live,
		     const struct bb_crash *crash);
void bbx_threads_struct(struct bbx_em *em, const struct bbx_threads *t);
void bbx_threads_free(struct bbx_threads *t);
/* snapshot.c: --snapshot PID, an exit code */
int bbx_snapshot(const struct bbx_opts *o, struct bb_reader *r, int live);
int bbx_threads_main(const struct bbx_opts *o, struct bbx_out *out, struct bb_reader *r, int live);

/* One extraction in progress. */
struct bbx_ctx {
	const struct bbx_opts *opt;
	struct bbx_out *out;
	struct bbx_em em;
	struct bb_reader *r;
	const struct bb_box_info *info;
	bool with_pid;       /* --all: records carry the owner's pid */
	uint64_t bad_values; /* intact records whose value did not decode */
	/* --follow: per ring (nlost entries, NULL otherwise; grown by
	 * bbx_follow_fit() as a live reader finds the logs of new threads),
	 * the bytes lost in holes since following began (the gap records'
	 * lost_bytes), and where the ring's newest delivered record starts */
	uint64_t *lost, *last_pos;
	uint32_t nlost;
	char *scratch;       /* text: room for a value too long for the fast path */
	struct bb_crash crash;       /* the crash area, read before the records */
	struct bb_state_stats state; /* the state table, likewise */
	bool has_state;
	uint64_t gaps;       /* gap records written (records.c) */
	struct bbx_threads *threads; /* JSON / CBOR: each thread's last record,
					for the summary (records.c, threads.c) */
	struct bbx_spans *spans;     /* each thread's open spans (spans.c) */
};

#define TEXT_FAST   4096u            /* try formatting in place in this much */
#define TEXT_SCRATCH (8u * 65536u)   /* any value of a max-size record fits */

/* extract.c; bbx_extract(), bbx_save() and bbx_all() return an exit code */
extern volatile sig_atomic_t bbx_stop_requested; /* SIGINT, SIGTERM: main's handler */
int bbx_open_one(const struct bbx_opts *o, struct bb_reader **r, int *live);
int bbx_extract(const struct bbx_opts *o, struct bbx_out *out, struct bb_reader *r, int live,
		bool with_pid);
int bbx_save(const struct bbx_opts *o, struct bb_reader *r);
int bbx_all(const struct bbx_opts *o, struct bbx_out *out);

/* perfetto.c: --perfetto, the box as a Perfetto trace on @out; an exit
 * code */
int bbx_perfetto(const struct bbx_opts *o, struct bbx_out *out, struct bb_reader *r, int live);

/* records.c: bb_record_fn callbacks, arg a struct bbx_ctx */
int bbx_text_record(const struct bb_record *rec, void *arg);
int bbx_struct_record(const struct bb_record *rec, void *arg);
/* A thread name, escaped, a blank as '?', "-" for none, into @p (room for
 * 4 * 15 + 1 bytes, not terminated); its length. */
size_t bbx_thread_name(char *p, const char *name);


/* spans.c: after the records, each thread's open spans (text: lines on
 * the output; JSON / CBOR: the summary's "open_spans") */
struct bbx_spans;
void bbx_spans_text(struct bbx_ctx *c, int live);
void bbx_spans_struct(struct bbx_ctx *c, int live);

/* preamble.c: the crash block, then the state table, before any record */
int bbx_preamble(struct bbx_ctx *c);
struct bbx_sym_opts;
struct bbx_frame;
/* The symboliser's options from the command line, for a box of @owner
 * (who proves it: preamble.c, box_owner()). */
void bbx_sym_opts_init(const struct bbx_opts *o, uint32_t owner, struct bbx_sym_opts *so);
/* The frames of @cr (resolved in @fr) as the crash block prints them. */
void bbx_crash_frames_text(struct bbx_out *o, const struct bb_crash *cr,
			   const struct bbx_frame *fr, bool raw);
/* One frame as a JSON / CBOR map, as the crash record has it. */
void bbx_frame_struct(struct bbx_em *em, const struct bbx_frame *f, bool raw);

/* report.c */
const char *bbx_clock_desc(const struct bb_box_info *in);
const char *bbx_clock_reason(const struct bb_box_info *in, bool text);
bool bbx_is_damaged(const struct bbx_ctx *c, const struct bb_stream_stats *tot);
void bbx_unit_struct(struct bbx_em *em, const struct bb_box_info *in);
void bbx_summary_struct(struct bbx_ctx *c, int live, int code);
void bbx_summary_text(struct bbx_ctx *c, int live);

/* list.c; bbx_fmt_age(): "42s", "17m", "5h", "3d" */
void bbx_fmt_age(char *buf, size_t len, uint64_t sec);
int bbx_scan(const struct bbx_opts *o, struct bb_box_entry **v, size_t *n);
void bbx_say_not_a_box(const struct bb_box_entry *e);
int bbx_list(const struct bbx_opts *o, struct bbx_out *out);

/* journal-box.c (built with libsystemd): --journal, --journal-directory */
int bbx_journal_main(const struct bbx_opts *o);

/* --follow: room in ctx.lost and ctx.last_pos for @n rings (zeroed);
 * 0 or -ENOMEM (the arrays are kept as they were). */
int bbx_follow_fit(struct bbx_ctx *c, uint32_t n);

#endif /* BBX_EXTRACT_H */
