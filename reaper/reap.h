/* SPDX-License-Identifier: MIT */
/*
 * reaper/reap.h - bb-reap internals shared by its source files.
 * Internal to the tool, do not use elsewhere.
 */
#ifndef BB_REAP_H
#define BB_REAP_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#define REAP_DEFAULT_MIN_AGE 3600u  /* seconds; see bb-reap(8) */
#define REAP_DEFAULT_RESCAN  900u   /* --watch: a full pass every 15 minutes */
#ifdef BB_HAVE_ZSTD
#define REAP_COMPRESS_DEFAULT true  /* --compress=zstd */
#else
#define REAP_COMPRESS_DEFAULT false
#endif
#define REAP_CLOCK_SLACK_NS  (INT64_C(60) * 1000000000) /* future stamps beyond this are untrusted */

/* --journal (journal-send.c, reported.c); see bb-reap(8) */
enum reap_journal { REAP_JOURNAL_OFF, REAP_JOURNAL_SUMMARY, REAP_JOURNAL_BOX };
/* --journal-content: whose records, state table and box go into entries */
enum reap_content { REAP_CONTENT_ROOT, REAP_CONTENT_ALL };
#define REAP_JOURNAL_BOX_MAX  (UINT64_C(8) << 20)   /* --journal-box-max */
#define REAP_JOURNAL_BOX_CAP  (UINT64_C(256) << 20) /* the largest it may be set to */
#define REAP_JOURNAL_RECORDS  50u                   /* --journal-records */
#define REAP_JOURNAL_RATE     20u                   /* --journal-rate: per owner an hour */
#define REAP_JOURNAL_BUDGET   (UINT64_C(64) << 20)  /* --journal-box-budget: per owner a day */
#define REAP_REPORTED_DEFAULT   "/var/lib/blackbox/journal-reported"
#define REAP_REPORTED_FORGET_S  (7 * 86400)  /* unseen this long: forgotten */
#define REAP_REPORTED_PER_OWNER 4096u        /* entries kept per owner uid */
#define REAP_REPORTED_MAX       65536u       /* entries kept in all */

struct reap_opts {
	const char *dir;          /* box directory (--dir) */
	uint64_t    min_age_s;    /* --min-age */
	const char *archive;      /* --archive DIR or NULL */
	long        keep;         /* --keep N, -1 = unbounded */
	uint64_t    max_bytes;    /* --max-archive-bytes, 0 = unbounded */
	bool        dry_run, verbose, json;
	bool        compress;     /* --compress=zstd: archives as .box.zst, BB_BOX
				     as a zstd frame */
	bool        watch;        /* --watch (watch.c) */
	uint64_t    rescan_s;     /* --rescan: --watch's full pass, seconds */
	int         journal;      /* enum reap_journal (--journal) */
	uint64_t    journal_box_max;  /* --journal-box-max */
	unsigned    journal_records;  /* --journal-records */
	unsigned    journal_rate;     /* --journal-rate */
	uint64_t    journal_budget;   /* --journal-box-budget */
	int         journal_content;  /* enum reap_content (--journal-content) */
	const char *journal_reported;    /* --journal-reported FILE, or NULL: the default */
};

struct reap_reported;
struct reap_cand;

struct reap_ctx {
	struct reap_opts o;
	int      dirfd;           /* the box directory (--dir) */
	int      archfd;          /* archive directory, -1 without --archive */
	uid_t    uid;             /* real uid of the caller */
	bool     root;            /* euid 0: every uid's boxes, else our own only */
	int64_t  now_ns;          /* CLOCK_REALTIME at start, one "now" per run */
	bool     volatile_dir;    /* the box directory is tmpfs/ramfs (see reap_archive_box) */
	unsigned entries, reaped, kept, skipped, errors, pruned, archived;
	unsigned young;           /* kept: owner gone, younger than --min-age */
	unsigned uncopied;        /* reaped without an archive copy (pass.c) */
	unsigned lost;            /* of those, with no copy of it anywhere: over
				     its owner's whole quota, or the archive file
				     system full (bb-reap's exit status 3) */
	struct reap_cand *cands;  /* boxes to go in this pass (pass.c) */
	size_t   ncands, ccands;
	struct reap_reported *reported_file; /* --journal: what was reported (reported.c) */
	unsigned reported;
	uint32_t rated[64];       /* owners told this run that they hit --journal-rate */
	size_t   nrated;
};

/*
 * One decision about one directory entry, as logged and as a JSON object.
 * Fields that are unknown stay at their zero value and are omitted.
 */
struct reap_event {
	const char *dir;          /* directory of the entry */
	const char *name;         /* entry name (untrusted bytes) */
	const char *decision;     /* reaped, would-reap, kept, skipped, error, pruned, would-prune */
	const char *reason;       /* short, fixed text */
	const char *detail;       /* optional free text (reader message, strerror) */
	bool        have_box;     /* the header fields below are valid */
	int32_t     pid;
	uint64_t    starttime;
	uint32_t    uid;
	const char *comm;
	const char *liveness;
	const char *phase;
	uint64_t    size;
	int64_t     age_s;        /* -1 unknown */
	const char *archive;      /* archive path, or NULL */
	const char *journal;      /* what its journal entry carries, or NULL */
	const char *nocopy;       /* --archive, and it goes without a copy: why */
};

/*
 * What one look at one entry found (judge.c), for the pass that removes it
 * and for --watch, which waits for what can change: the owner's death,
 * the end of --min-age, a header being written.
 */
enum reap_outcome_kind {
	REAP_GOING,       /* its owner is gone and it is old enough: this pass removes it */
	REAP_DONE,        /* decided for good: reaped, or not ours to judge (not a box,
			     another user's file, a symlink, vanished) */
	REAP_ALIVE,       /* its owner lives (pid, starttime) */
	REAP_YOUNG,       /* its owner is gone, its last sign of life younger than
			     --min-age: look again at due_ns */
	REAP_UNBORN,      /* no complete header yet: a box being created */
	REAP_FAILED,      /* an error: counted, logged, look again later */
};

struct reap_outcome {
	int      kind;            /* enum reap_outcome_kind */
	int32_t  pid;             /* REAP_ALIVE: the header's owner */
	uint64_t starttime;
	int64_t  due_ns;          /* REAP_YOUNG: CLOCK_REALTIME when old enough */
};

/* bb-reap.c: one pass over the whole directory; watch.c: --watch.  0,
 * or -errno when the run could not start (said) */
int  reap_run(struct reap_ctx *c);
int  reap_watch(struct reap_ctx *c);
/* watch.c: CLOCK_MONOTONIC and CLOCK_REALTIME in ns */
int64_t reap_mono_ns(void);
int64_t reap_real_ns(void);

/* judge.c: one pass over entries (pass.c collects, plans and ends it) */
int  reap_entry(struct reap_ctx *c, int dirfd, const char *name, struct reap_outcome *out);

/* pass.c: a pass: every entry judged (reap_entry), then the boxes to go
 * planned against the archive quotas (prune before copy), copied,
 * reported and removed */
int  reap_pass_add(struct reap_ctx *c, const char *name, const struct stat *st,
		   const struct reap_event *ev, int liveness, uint64_t bytes, int64_t last,
		   int64_t when);
void reap_pass_end(struct reap_ctx *c);
/* judge.c: the second half of a box that goes: copied (or why not),
 * reported, removed */
void reap_finish(struct reap_ctx *c, struct reap_cand *k);

/* A box to go, from judging to its removal (pass.c, judge.c). */
struct reap_cand {
	char     name[256];
	dev_t    dev;
	ino_t    ino;
	uid_t    uid;             /* the file's owner: whose archive quota */
	uint64_t bytes;           /* a copy's bytes: min(file size, box_size) */
	int64_t  last;            /* the owner's last sign of life, ns */
	int64_t  when;            /* the archive name's time, ns */
	int      liveness;
	bool     copy;            /* planned: archived before it goes */
	const char *why;          /* not copied although --archive: why */
	bool        lost;         /* ... because it alone is over its owner's quota */
	struct reap_event ev;     /* what judging found (name, comm: below) */
	char     comm[32];
};

/* options.c: fill @o from the command line; -1 after saying what is wrong
 * (exits after --help and --version). */
int  reap_parse_opts(int argc, char **argv, struct reap_opts *o);
/* watchlock.c: the lock by which libblackbox's budget leaves dead boxes to
 * a running --watch: a descriptor holding it (its name in @name), or
 * -errno; reap_watch_release() drops it and removes the name. */
int  reap_watch_claim(int dirfd, char *name, size_t len);
void reap_watch_release(int dirfd, int fd, const char *name);
/* options.c: digits, then an optional suffix from @suffixes (times @mult) */
/* A systemd time span ("1min", "30s", "2h", "1h 30min", "90") in seconds:
 * 0, -EINVAL or -ERANGE (options.c). */
int  reap_parse_span(const char *s, uint64_t *out);
int  reap_parse_num(const char *s, const char *suffixes, const uint64_t *mult,
		    uint64_t *out);

/* output.c */
void reap_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void reap_emit(const struct reap_ctx *c, const struct reap_event *ev, bool always_log);

/* hang.c: --watch on live boxes, heartbeats and snapshots (FORMAT.md §14) */
#define REAP_HB_TICK_MS 250   /* every live box's heartbeats are read this often */
struct reap_hb;
struct reap_hb *reap_hb_attach(struct reap_ctx *c, const char *name, pid_t pid, int pidfd);
void reap_hb_detach(struct reap_hb *h);
void reap_hb_check(struct reap_ctx *c, struct reap_hb *h);

/* journal-send.c: the entry of a hang or a snapshot of a live owner */
struct bb_reader;
struct stat;
struct bb_crash;
struct reap_incident {
	const char *event;          /* "hang" or "snapshot" (BB_EVENT) */
	int32_t  tid;               /* hang: the stuck thread */
	char     thread[16];        /* its name (untrusted) */
	uint64_t age_ms;            /* since its last heartbeat (at least) */
	uint32_t deadline_ms;       /* its deadline */
	bool     answered;          /* the owner answered the dump request */
	const struct bb_crash *stack; /* its stack, NULL: it did not answer */
	const char *kernel;         /* then its wchan / kernel stack */
	const char *reason;         /* snapshot: the reason (escaped) */
	uint64_t missed;            /* records overwritten during the copy */
	const char *archive;        /* the copy, or NULL */
};
int  reap_journal_incident(struct reap_ctx *c, struct bb_reader *r, const struct stat *st,
			   const struct reap_incident *inc);

/* archive.c */
int  reap_archive_open(struct reap_ctx *c);
struct bb_reader;
struct stat;
struct reap_copy {            /* one box's copy in --archive */
	char name[256];       /* in the archive directory */
	char path[PATH_MAX];  /* --archive DIR/name */
};
int  reap_archive_box(struct reap_ctx *c, struct bb_reader *r, const struct stat *st,
		      int64_t when_ns, struct reap_copy *a, char *err, size_t errlen);
bool reap_archive_name_ours(const char *name);
/* The @len bytes of a box at @data as one zstd frame, as an archive's
 * (window 2 MiB, content size and checksum: what reader_zstd.c accepts),
 * into *@out (malloc'ed, *@outlen bytes).  0, -ENOMEM, -EIO, or
 * -EOPNOTSUPP in a build without libzstd. */
int  reap_zstd_box(const void *data, size_t len, void **out, size_t *outlen);
/* Room an owner's copies of this pass take in its quotas: prune its
 * archives to --keep minus count and --max-archive-bytes minus bytes
 * (reap_prune: @res sorted by uid, NULL for none). */
struct reap_reserve {
	uid_t    uid;
	long     count;
	uint64_t bytes;
};
int  reap_prune(struct reap_ctx *c, const struct reap_reserve *res, size_t nres);
int  reap_unlink_same(int dirfd, const char *name, dev_t dev, ino_t ino);

/*
 * journal-send.c: the journal entry of a box whose owner is gone (crashed or
 * orphaned; nothing for a clean end), unless a run sent it before.
 * @archive: where the box was archived in this run, or NULL.  Logs what it
 * did.  Returns 0 (sent, sent before, or not sent on purpose: another
 * uid's header), REAP_JOURNAL_WITHHELD (the owner's --journal-rate: the
 * caller counts it with reap_reported_suppress() if it removes the box
 * unreported), or -errno when it could not
 * be sent (counted in c->errors): the caller keeps the box.
 */
int  reap_journal_box(struct reap_ctx *c, struct bb_reader *r, const struct stat *st,
		      int liveness, const char *archive, const struct reap_event *base);
/* reap_journal_box()'s 0 for a box its owner's --journal-rate kept out */
#define REAP_JOURNAL_WITHHELD 1

/* reported.c: the file of boxes --journal reported (--journal-reported) */
struct bb_box_info;
struct reap_key {
	uint32_t uid;             /* the box file's owner */
	char     boot[84];        /* header boot id, as a token (reported.c) */
	int32_t  pid;
	uint64_t starttime;
	uint32_t sequence;
	uint64_t created_ns;
};
void reap_key_init(struct reap_key *k, const struct bb_box_info *in, uint32_t file_uid);
int  reap_reported_open(struct reap_ctx *c);    /* load and lock; logs failures */
bool reap_reported_seen(struct reap_ctx *c, const struct reap_key *k); /* and marks it seen */
void reap_reported_usage(const struct reap_ctx *c, uint32_t uid, unsigned *last_hour,
			 uint64_t *bytes_last_day);
int  reap_reported_add(struct reap_ctx *c, const struct reap_key *k, uint64_t bytes);
int  reap_reported_close(struct reap_ctx *c);   /* compact, rewrite, unlock */
/* Deaths of @uid's program @comm (the box header's) that went unreported
 * (a box removed while --journal-rate withheld it): counted, told
 * (BB_SUPPRESSED of the next entry of that owner and program, with what
 * an older bb-reap counted for the owner alone), cleared. */
void reap_reported_suppress(struct reap_ctx *c, uint32_t uid, const char *comm);
uint64_t reap_reported_suppressed(const struct reap_ctx *c, uint32_t uid, const char *comm);
void reap_reported_clear_suppressed(struct reap_ctx *c, uint32_t uid, const char *comm);

/* unitcheck.c: may an entry carry OBJECT_SYSTEMD_UNIT for @in->unit?
 * @why says why (not). */
bool reap_unit_vouched(const struct bb_box_info *in, uint32_t file_uid, char *why, size_t len);

#endif /* BB_REAP_H */
