/* SPDX-License-Identifier: MIT */
/* budget.h - the crash-loop budget's index and watcher check
 * (budget_index.c), private to budget.c.  Internal, do not use. */
#ifndef BB_BUDGET_H
#define BB_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BB__BINDEX_PREFIX ".bb-budget."    /* + euid: the budget's index */
#define BB__WATCH_PREFIX  ".bb-reap-watch." /* + uid: bb-reap --watch's lock */
#define BB__BINDEX_PROGS  32

/* A program's deaths handed back by a clean exit (bb__budget_release()),
 * taken by its next box. */
struct bb__bindex_prog {
	uint64_t prog;                  /* the program (budget.c prog_of()) */
	uint64_t count;                 /* 0: a free entry */
};

/* The index file, host byte order (FORMAT.md §2 "The budget's index"). */
struct bb__bindex {
	uint64_t magic;
	uint64_t valid;                 /* 1 once a full check wrote it */
	uint64_t gen;                   /* full checks so far */
	uint64_t dead;                  /* dead bytes the last full check left */
	uint64_t since;                 /* bytes of boxes created since */
	struct bb__bindex_prog prog[BB__BINDEX_PROGS];
	uint32_t crc;                   /* CRC32C of the bytes before it */
	uint32_t pad;
};

/*
 * bb__bindex_open - open (or create) this euid's index in the box
 * directory @dfd, take its lock and read it into *@x (zeroed, valid 0,
 * when new or unreadable).  The descriptor, or -1 when there is none to
 * trust (not ours, a link, busy too long): then the caller checks the
 * whole directory.
 */
int bb__bindex_open(int dfd, struct bb__bindex *x);
/* Write *@x back and drop the lock. */
void bb__bindex_close(int fd, struct bb__bindex *x);
/* The pending count of program @prog in *@x; with @add, a free entry is
 * taken for it.  NULL when there is none (or @prog is 0, unknown). */
uint64_t *bb__bindex_pending(struct bb__bindex *x, uint64_t prog, bool add);
/* Does bb-reap --watch (of root or of our euid) watch the directory @dfd? */
bool bb__budget_watched(int dfd);

#endif /* BB_BUDGET_H */
