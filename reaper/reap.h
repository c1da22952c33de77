/* SPDX-License-Identifier: MIT */
/*
 * reaper/reap.h - bb-reap internals shared by its source files.
 * Internal to the tool, do not use elsewhere.
 */
#ifndef BB_REAP_H
#define BB_REAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define REAP_DEFAULT_MIN_AGE 3600u  /* seconds; see bb-reap(8) */
#define REAP_CLOCK_SLACK_NS  (INT64_C(60) * 1000000000) /* future stamps beyond this are untrusted */

struct reap_opts {
	const char *dir;          /* box directory (--dir) */
	uint64_t    min_age_s;    /* --min-age */
	const char *archive;      /* --archive DIR or NULL */
	long        keep;         /* --keep N, -1 = unbounded */
	uint64_t    max_bytes;    /* --max-archive-bytes, 0 = unbounded */
	bool        dry_run, verbose, json;
};

struct reap_ctx {
	struct reap_opts o;
	int      archfd;          /* archive directory, -1 without --archive */
	uid_t    uid;             /* real uid of the caller */
	bool     root;            /* euid 0: every uid's boxes, else our own only */
	int64_t  now_ns;          /* CLOCK_REALTIME at start, one "now" per run */
	bool     volatile_dir;    /* the box directory is tmpfs/ramfs (see archive_box) */
	unsigned entries, reaped, kept, skipped, errors, pruned, archived;
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
	const char *state;
	uint64_t    size;
	int64_t     age_s;        /* -1 unknown */
	const char *archive;      /* archive path, or NULL */
};

/* options.c: fill @o from the command line; -1 after saying what is wrong
 * (exits after --help and --version). */
int  reap_parse_opts(int argc, char **argv, struct reap_opts *o);

/* output.c */
void reap_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void reap_emit(const struct reap_ctx *c, const struct reap_event *ev, bool always_log);

/* archive.c */
int  reap_archive_open(struct reap_ctx *c);
int  reap_archive_name(uint32_t uid, const char *comm, int32_t pid, int64_t when_ns,
		       unsigned n, char *buf, size_t len);
bool reap_archive_name_ours(const char *name);
int  reap_archive_give(int fd, uid_t uid, gid_t gid, char *err, size_t errlen);
int  reap_prune(struct reap_ctx *c);
int  reap_unlink_same(int dirfd, const char *name, dev_t dev, ino_t ino);

#endif /* BB_REAP_H */
