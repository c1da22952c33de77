/* SPDX-License-Identifier: MIT */
/*
 * budget_index.c - what lets the crash-loop budget (budget.c) skip its
 * scan of the box directory, and what tells it that bb-reap --watch is
 * there to remove dead boxes instead (docs/DESIGN.md §9, FORMAT.md §2).
 *
 * The index: one small file per uid in the box directory,
 * ".bb-budget.<euid>", owned by that uid, mode 0600 (struct bb__bindex,
 * FORMAT.md §2 "The budget's index").  It holds an upper bound on the
 * bytes the uid's dead boxes can hold: the dead bytes the last full check
 * left, plus the bytes of every box created since (any of them may have
 * died), less those a clean exit removed.  While that bound plus the new
 * box fits the budget, bb_init() adds its box to the bound with one
 * compare-and-swap on the mapped index and looks at nothing else: a
 * constant number of system calls and no lock, whatever the number of
 * boxes (budget.c bindex_add()).  Processes that were alive at the last
 * full check and died since are not in the bound: they are found at the
 * next full check, which comes once the boxes created since reach the
 * budget (bb_init(3) says so).  A full check runs under the file's flock,
 * so concurrent bb_init() calls of a uid judge the directory one at a
 * time and the later ones find the index fresh.
 *
 * A file the caller does not own, a link, one others may write: not used
 * (the full check runs, as without an index), never trusted.  Its owner
 * (our uid, which can do anything to us anyway) could truncate it under
 * our mapping; nobody else can.
 *
 * The watcher's lock: bb-reap --watch holds a write lock (fcntl F_WRLCK)
 * on ".bb-reap-watch.<uid>" in the directory it watches (reaper/watch.c).
 * A write lock can only be taken through a descriptor open for writing,
 * so on a file of uid U that nobody else may write (mode without group or
 * other write bits) only U (or root) can hold it: the budget of uid U
 * trusts the files of uid 0 and of U, whose watchers remove and archive
 * U's dead boxes, and nothing another user made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/barrier.h>

#include "budget.h"

#define INDEX_MAGIC UINT64_C(0x3130474455424242) /* "BBBUDG01", little-endian */

/* flock() tries before the index is given up for this call: a full check
 * of a few hundred boxes takes milliseconds; a holder that is stopped
 * must not stop every bb_init() of its uid. */
#define INDEX_LOCK_TRIES 2000
#define INDEX_LOCK_NAP_NS 1000000L

static void index_name(char *buf, size_t n, const char *pre, uid_t uid)
{
	snprintf(buf, n, "%s%lu", pre, (unsigned long)uid);
}

/* A descriptor of the file @name in @dfd if the caller's euid owns it, it
 * is a regular file and no one else may write it; -1 otherwise.  Its
 * size in *@size. */
static int open_owned(int dfd, const char *name, int flags, uid_t uid, mode_t mode,
		      off_t *size)
{
	struct stat st;
	int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -1;
	}
	*size = st.st_size;
	return fd;
}

int bb__bindex_lock(int fd)
{
	struct timespec nap = { 0, INDEX_LOCK_NAP_NS };

	for (int i = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; i++) {
		if ((errno != EWOULDBLOCK && errno != EINTR) || i == INDEX_LOCK_TRIES)
			return -1;
		nanosleep(&nap, NULL);
	}
	return 0;
}

void bb__bindex_unlock(int fd)
{
	flock(fd, LOCK_UN);
}

int bb__bindex_map(int dfd, struct bb__bindex **x)
{
	char name[64];
	uid_t me = geteuid();
	struct bb__bindex *m;
	off_t size;
	int fd;

	index_name(name, sizeof(name), BB__BINDEX_PREFIX, me);
	fd = open_owned(dfd, name, O_RDWR | O_CREAT, me, 0600, &size);
	if (fd < 0)
		return -1;
	/* new (or cut short): sized under the lock, zero-filled (valid 0) */
	if (size < (off_t)sizeof(*m) &&
	    (bb__bindex_lock(fd) < 0 || ftruncate(fd, sizeof(*m)) < 0)) {
		close(fd);
		return -1;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -1;
	}
	/* acquire: pairs with the release store below, in whichever process
	 * initialised the file: the zeroed fields are seen with the magic */
	if (BB__LOAD_ACQUIRE(&m->magic) != INDEX_MAGIC) {
		/* new or foreign: no bound known (valid 0) until a full check */
		if (bb__bindex_lock(fd) < 0) {
			bb__bindex_unmap(fd, m);
			return -1;
		}
		if (BB__LOAD_RELAXED(&m->magic) != INDEX_MAGIC) {
			memset(m, 0, sizeof(*m));
			/* release: the zeroes before the magic (pairs above) */
			BB__STORE_RELEASE(&m->magic, INDEX_MAGIC);
		}
	}
	bb__bindex_unlock(fd);
	*x = m;
	return fd;
}

void bb__bindex_unmap(int fd, struct bb__bindex *x)
{
	munmap(x, sizeof(*x));
	close(fd); /* the lock goes with the last descriptor */
}

uint64_t *bb__bindex_pending(struct bb__bindex *x, uint64_t prog, bool add)
{
	struct bb__bindex_prog *free_slot = NULL;

	if (!prog)
		return NULL;
	for (size_t i = 0; i < BB__BINDEX_PROGS; i++) {
		struct bb__bindex_prog *p = &x->prog[i];

		/* under the lock: only a relaxed peek (budget.c) reads meanwhile */
		if (BB__LOAD_RELAXED(&p->prog) == prog && BB__LOAD_RELAXED(&p->count))
			return &p->count;
		if (!BB__LOAD_RELAXED(&p->count) && !free_slot)
			free_slot = p;
	}
	if (!add || !free_slot)
		return NULL;
	BB__STORE_RELAXED(&free_slot->prog, prog);
	return &free_slot->count;
}

/* Is a write lock held on the watcher file of @uid in @dfd? */
static bool watched_by(int dfd, uid_t uid)
{
	char name[64];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	off_t size;
	int fd;
	bool held;

	index_name(name, sizeof(name), BB__WATCH_PREFIX, uid);
	fd = open_owned(dfd, name, O_RDONLY, uid, 0, &size);
	if (fd < 0)
		return false;
	/* F_GETLK reports the lock that would block a write lock on the
	 * whole file; only a write lock (only its owner could take one)
	 * says a watcher is there, a read lock anyone may take */
	held = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_WRLCK;
	close(fd);
	return held;
}

bool bb__budget_watched(int dfd)
{
	uid_t me = geteuid();

	return watched_by(dfd, 0) || (me != 0 && watched_by(dfd, me));
}
