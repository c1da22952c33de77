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

/* The index file, host byte order (FORMAT.md §2 "The budget's index"),
 * mapped shared by every bb_init() of its uid: valid, gen, dead and since
 * are read and changed with atomics (budget.c says what each orders), the
 * pending entries under the file's flock. */
struct bb__bindex {
	uint64_t magic;
	uint64_t valid;                 /* 1: dead and since hold; 0: a full
	                                   check is rewriting them, or none ran */
	uint64_t gen;                   /* full checks so far */
	uint64_t dead;                  /* dead bytes the last full check left */
	uint64_t since;                 /* bytes of boxes created since */
	struct bb__bindex_prog prog[BB__BINDEX_PROGS];
};

/*
 * bb__bindex_map - open (or create) this euid's index in the box
 * directory @dfd and map it into *@x.  The descriptor, or -1 when there is
 * none to trust (not ours, a link, writable by others): then the caller
 * checks the whole directory.
 */
int bb__bindex_map(int dfd, struct bb__bindex **x);
/* Unmap @x and close @fd (which drops the lock if held). */
void bb__bindex_unmap(int fd, struct bb__bindex *x);
/* Take the index's lock (flock, bounded retries): 0, or -1 when it stays
 * busy (a holder stopped: the caller goes on without the index). */
int bb__bindex_lock(int fd);
void bb__bindex_unlock(int fd);
/* Under the lock: the pending count of program @prog in *@x; with @add, a
 * free entry is taken for it.  NULL when there is none (or @prog is 0,
 * unknown). */
uint64_t *bb__bindex_pending(struct bb__bindex *x, uint64_t prog, bool add);
/* Does bb-reap --watch (of root or of our euid) watch the directory @dfd? */
bool bb__budget_watched(int dfd);

#endif /* BB_BUDGET_H */
