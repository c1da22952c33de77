/* SPDX-License-Identifier: MIT */
/*
 * journal-read.h - bb-extract's journal browser: boxes that
 * `bb-reap --journal` put into journal entries, read from the local journal
 * (--journal) or from a directory of journal files (--journal-directory, a
 * collector's systemd-journal-remote output, one sender per file).
 * journal-read.c reads fields, sources and entries; journal-groups.c
 * filters them and groups their crashes (--groups); journal-list.c is
 * --list; journal-box.c takes one box out (bbx_journal_main()).
 * Internal to those files (extract.h declares bbx_journal_main()).
 */
#ifndef BBX_JOURNAL_READ_H
#define BBX_JOURNAL_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <systemd/sd-journal.h>

#include "emit.h"
#include "fmt.h"
#include "groups.h"
#include "msg.h"
#include "out.h"

struct bbx_opts;

/* The largest BB_BOX accepted: bb-reap --journal-box-max allows no more. */
#define BBX_JOURNAL_BOX_MAX ((size_t)256 << 20)

/* Which entries. */
struct bbx_jsel {
	const char *dir;     /* --journal-directory, or NULL: the local journal */
	const char *const *dirs; /* every --journal-directory (dirs[0] is dir) */
	size_t      ndirs;
	pid_t       pid;     /* the box's pid (BB_PID), 0 for --list or --cursor */
	const char *machine; /* --machine: _MACHINE_ID, or NULL */
	const char *boot;    /* --boot: BB_BOOT_ID (with or without dashes), or NULL */
	const char *cursor;  /* --cursor: that entry only, or NULL */
	bool        untrusted; /* --list: entries root's bb-reap did not send too */
	const struct bbx_opts *opt; /* the command line: filters, --groups, --group,
				   the symboliser's options (NULL: none) */
};

/* What became of a lookup: the exit code bb-extract returns, or BBX_J_BOX. */
#define BBX_J_BOX (-1)

/*
 * bbx_journal_list - --list: one line (text) or object (@em: JSON, CBOR)
 * per entry bb-reap sent (with @s->untrusted, every entry with its
 * MESSAGE_ID, flagged), by sender, oldest first: time, sender, host,
 * machine, pid, uid, comm, state, whether the box was shipped, unit.
 * Returns an exit code (0, or 4 when the journal cannot be opened: @err
 * says why).
 */
int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen);

/* The box of an entry, and where it came from. */
struct bbx_jbox {
	void     *box;        /* malloc'ed BB_BOX: the caller frees it */
	size_t    len;
	long long uid;        /* the entry's BB_UID, -1 if it has none */
	char      sender[256];/* the collector's journal file it is in, "" locally */
	char      label[1024];/* "journal[ SENDER]: <host> pid <pid>" for messages */
};

/*
 * bbx_journal_box - the entry of @s->pid (and --machine, --boot) or of
 * @s->cursor, among those bb-reap sent: all that match must make one
 * claim (one sender, machine, boot, owner and start time), and its newest
 * entry is taken.  Returns BBX_J_BOX with @jb filled; or, for an entry
 * without BB_BOX, prints what it carries (text or @em) and returns 4 with
 * @err saying the box was not shipped; or 4 (no such entry, no journal),
 * 5 (several claims: why, and each claim with its cursor, are said on
 * standard error), 2 (a malformed id), 1 (out of memory).
 */
int bbx_journal_box(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		    bool text, struct bbx_jbox *jb, char *err, size_t errlen);

/* ---- between the journal-*.c files --------------------------------------- */

#define BBX_J_FIELD_MAX  (64u << 10) /* bytes of a field kept (but BB_BOX) */
#define BBX_J_WORD_MAX   15          /* bytes of BB_LIVENESS and BB_SIGNAL_NAME shown:
					more than the longest liveness word ("orphaned")
					and signal name (bbx_signal_name()) */
#define BBX_J_SENDER_MAX 256         /* bytes of a sender's name */
#define BBX_J_NOBODY_UID 65534u      /* whose privileges a collector's box gets */

/* One journal read as a whole. */
struct bbx_jsrc {
	char   sender[BBX_J_SENDER_MAX]; /* "" for the local journal */
	char **files;              /* NULL-terminated, NULL for the local journal */
	size_t nfiles, fcap;
};

struct bbx_jsrcs {
	struct bbx_jsrc *v;
	size_t           n, cap;
};

/* What an entry says about itself, bounded and escaped for a terminal. */
struct bbx_jentry {
	char     host[4 * 64 + 1], machine[33], boot[33], comm[4 * 64 + 1], unit[4 * 256 + 1];
	char     liveness[4 * BBX_J_WORD_MAX + 1], signame[4 * BBX_J_WORD_MAX + 1], time[BBX_TIME_MAX];
	char     uid_raw[16], transport[16]; /* _UID, _TRANSPORT as journald (or the uploader) put them */
	long long pid, uid, starttime, signal, box_size;
	uint64_t usec;
	bool     has_box, trusted, oom; /* oom: BB_OOM_KILL=1, the kernel's OOM killer */
};

/*
 * Strings and stacks many entries share, kept once (journal-groups.c):
 * a fleet's entries name a few hundred hosts, releases and units and a
 * few thousand stacks.  bbx_jpool_intern() returns the pool's copy of the
 * @n bytes at @s (NUL-terminated) and, in *@val when @val is given, the
 * slot of a value that belongs to it (holding NULL at first; valid until
 * the next call; NULL itself for a key given a copy of its own because
 * too many keys share its hash); NULL when out of memory.
 */
struct bbx_jpool;
struct bbx_jpool *bbx_jpool_new(void);
void bbx_jpool_free(struct bbx_jpool *p);
const char *bbx_jpool_intern(struct bbx_jpool *p, const void *s, size_t n, void ***val);

/* One crash stack as its frames' modules, offsets, build ids and kinds
 * say it (the addresses of the first entry that had it), for one owner. */
struct bbx_jstack {
	struct bbx_sframe *f;
	size_t             nf;
};

/* One entry as --groups and --list see it: 300 bytes or so, its strings
 * the pool's (raw: escape them to print; "" when absent). */
struct bbx_jgent {
	size_t             src;
	uint64_t           usec;
	char              *cursor;   /* NULL for the text of --list and --groups */
	char              *message;  /* MESSAGE, for --list --json only (else NULL) */
	const struct bbx_jstack *stack; /* NULL: no BB_STACK */
	uint32_t           owner;    /* whose privileges its symbols are parsed with */
	const char        *comm, *host, *machine, *boot, *unit, *release, *build;
	const char        *reason;   /* BB_CRASH_REASON of a bb_crash_record() */
	const char        *liveness, *signame, *uid_raw, *transport; /* escaped */
	long long          pid, uid, starttime, signal, box_size, suppressed;
	long long          budget;   /* BB_BUDGET_REMOVED: deaths the budget removed */
	int                sigsig;   /* the signal the signature takes (bbx_signature()) */
	bool               crashed, has_box, trusted, oom;
	bool               incident; /* BB_LIVENESS hang or snapshot: a live owner's */
	struct {
		char        id[17];
		uint8_t     kind;    /* enum bbx_group_kind */
		bool        named;
		const char *top, *where; /* the pool's */
	} sig;
};

struct bbx_jgset {
	struct bbx_jgent    *v;
	size_t               n, cap;
	struct bbx_symcache *cache;
	struct bbx_jpool    *pool;
	struct bbx_jstack  **stacks; /* every one in the pool, to free */
	size_t               nstacks, stackcap;
};


/* journal-read.c: fields.  bbx_j_get() copies a field's value ("" when
 * absent), at most @max bytes with its NUL, and returns its length;
 * bbx_j_get_num() parses a whole decimal field, or returns @dflt;
 * bbx_j_id128() takes an id with or without dashes to 32 lowercase hex
 * digits (false: not an id). */
size_t bbx_j_get(sd_journal *j, const char *field, char *buf, size_t max);
bool bbx_j_has(sd_journal *j, const char *field);
long long bbx_j_get_num(sd_journal *j, const char *field, long long dflt);
bool bbx_j_id128(const char *s, char out[33]);

/* journal-read.c: sources.  bbx_j_load_sources() lists the journals to
 * read (the local one, or a directory's by sender): 0 or -errno, @err
 * set; bbx_j_check_sel() checks --machine and --boot (0 or -EINVAL, @err
 * set); bbx_j_open() opens one source with the matches of @s (0 or
 * -errno, @err set), bbx_j_close() closes it. */
int bbx_j_load_sources(const struct bbx_jsel *sel, struct bbx_jsrcs *s, char *err,
		       size_t errlen);
void bbx_j_srcs_free(struct bbx_jsrcs *s);
int bbx_j_check_sel(const struct bbx_jsel *s, char *err, size_t errlen);
int bbx_j_open(const struct bbx_jsel *s, const struct bbx_jsrc *src, sd_journal **jp,
	       char *err, size_t errlen);
void bbx_j_close(sd_journal *j);
/* Before the first entry of @s: the journal's head, or where --since
 * starts.  0 or -errno. */
int bbx_j_seek_first(sd_journal *j, const struct bbx_jsel *s);

/* journal-read.c: the entry @j is at into @e; how it died in the one
 * vocabulary of text, JSON and --state: "crashed", "oom-kill" (killed by
 * the kernel's OOM killer), "orphaned" (any other death without a word),
 * or what BB_LIVENESS says when it is none of those. */
void bbx_j_read_entry(sd_journal *j, struct bbx_jentry *e);
const char *bbx_j_liveness(const struct bbx_jentry *e);

/* journal-groups.c: whether @e passes the filters of @s; the entry at @j
 * into @g (0 or -ENOMEM); every entry of @s with its group into @gs (0 or
 * an exit code, @err set); --group's id checked, and whether @g is of it;
 * --groups printed (0 or -ENOMEM); --group ID alone: the cursor of its
 * newest entry with a box (0 or an exit code, @err set). */
bool bbx_j_wanted(const struct bbx_jsel *s, sd_journal *j, const struct bbx_jentry *e);
int bbx_j_take_gent(const struct bbx_jsel *s, size_t src, sd_journal *j,
		    const struct bbx_jentry *e, struct bbx_jgset *gs, struct bbx_jgent *g);
int bbx_j_gset_init(struct bbx_jgset *gs);
/* The group of @g from its stack as @gs's cache resolved it; -ENOMEM. */
int bbx_j_group_of(struct bbx_jgset *gs, struct bbx_jgent *g, struct bbx_frame *fr);
/* The vocabulary of bbx_j_liveness() for an entry taken. */
const char *bbx_j_gliveness(const struct bbx_jgent *g);
/* @usec as bbx_fmt_time() writes it, into @buf (BBX_TIME_MAX bytes). */
const char *bbx_j_time(uint64_t usec, char *buf);
int bbx_j_collect(const struct bbx_jsel *s, const struct bbx_jsrcs *srcs,
		  struct bbx_jgset *gs, char *err, size_t errlen);
void bbx_j_gset_free(struct bbx_jgset *g);
bool bbx_j_group_ok(const char *id);
bool bbx_j_in_group(const struct bbx_jsel *s, const struct bbx_jgent *g);
int bbx_j_print_groups(const struct bbx_jsel *s, const struct bbx_jsrcs *srcs,
		       const struct bbx_jgset *gs, struct bbx_out *out, struct bbx_em *em,
		       bool text);
int bbx_j_newest_of_group(const struct bbx_jsel *s, char **cursor, char *err, size_t errlen);

/* A NUL-terminated string, escaped for a terminal. */
static inline void bbx_j_put_esc(struct bbx_out *o, const char *s)
{
	bbx_put_escaped(o, s, strlen(s));
}

#endif /* BBX_JOURNAL_READ_H */
