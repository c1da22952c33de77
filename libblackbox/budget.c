/* SPDX-License-Identifier: MIT */
/*
 * budget.c - the crash-loop budget (bb_init(3), "CRASH LOOPS"): before it
 * creates a box, bb_init() removes dead boxes of its own program and uid
 * from the box directory while the uid's dead boxes hold more than the
 * budget less the new box, so that a service restarting in a loop holds a
 * bounded amount of the directory's memory (/dev/shm is RAM), whatever
 * restarts it and whether or not bb-reap runs, and other services'
 * bb_init() keep finding room.
 *
 * A program is its executable: its path and GNU build id, as the module
 * area's first object records them (FORMAT.md §11; prog_of()), never its
 * comm, which any program may take.  Another build, another file (a copy
 * elsewhere), another program.  A box whose module area says neither is a
 * program of its own.
 *
 * What may go, and why nothing else ever does:
 *  - only boxes of the caller's own program: the deaths it removes are
 *    counted in its own new box, where bb-reap finds them (KEY_REMOVED);
 *    another program's boxes are its own restarts' to trim, or bb-reap's;
 *  - never the newest box of the program (so never its only box), nor its
 *    newest crashed box: the evidence of the last failure stays;
 *  - only regular files the caller's effective uid owns (the kernel's word,
 *    fstat on the descriptor judged, and the name unlinked only while it
 *    still refers to that inode: remove_same());
 *  - only valid boxes (a file without a complete header may be a box being
 *    created: left alone);
 *  - only boxes whose owner is not alive by the reader's liveness check
 *    (docs/DESIGN.md §6: pid, start time, boot, and the owner mapping this
 *    inode), checked again as bb-reap does (bb_pid_maps_file on the inode
 *    opened), so a process that still maps its box keeps it;
 *  - never a box of another PID namespace than ours: its pid means
 *    another process there, and its liveness cannot be judged from here.
 *    A process outside the initial PID namespace (a container of its own)
 *    records its namespace in its box's state table (KEY_PIDNS, the inode
 *    of /proc/self/ns/pid); a box without it is of the initial namespace
 *    (hosts, where the key costs no state slot);
 *  - nothing at all without /proc (no owner could be judged alive), in a
 *    set-uid or set-gid process (AT_SECURE: its caller is another user,
 *    who picks when and as what it runs), nor while bb-reap --watch
 *    watches the directory (bb__budget_watched()): the watcher archives
 *    and reports a dead box before it removes it.
 * When the budget cannot be met within these rules, it yields: the box is
 * created anyway and the reaper's quotas take over.
 *
 * Which go first: the program's oldest box (the first of a crash loop)
 * last, the others oldest first.
 *
 * Every death counted: the new box records in its state table
 * (KEY_REMOVED) how many boxes of its program this budget removed, plus
 * what each of them had counted itself, plus what a clean exit of the
 * program handed back (bb__budget_release()), so the program's boxes
 * present and the counts in them add up to every box it created there.
 *
 * Not the write path: this runs in bb_init() (and in a forked child's first
 * write, which creates its box), allocates, and reads the directory.  Its
 * cost while the index's bound fits the budget is a compare-and-swap on
 * the mapped index (budget_index.c, bindex_add()), whatever the number of
 * boxes; a full check (a readdir() and an fstatat() per box, and, over
 * the budget, each of the uid's boxes not named after a live process
 * opened) comes once the boxes created since the last one reach the
 * budget (BENCHMARKS.md "Start-up with live boxes").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include <blackbox/barrier.h>

#include "../shared/cbor.h"
#include "../shared/grow.h"
#include "budget.h"
#include "internal.h"
#include "text.h"
#include "writer.h"

#define KEY_REMOVED "blackbox.budget_removed"
#define KEY_PIDNS   "blackbox.pid_ns"

/* One box of ours in the directory. */
struct mine {
	char     name[256];
	dev_t    dev;
	ino_t    ino;
	uint64_t bytes;      /* memory it holds: st_blocks */
	uint64_t created_ns;
	uint64_t removed;    /* what it counted (KEY_REMOVED) */
	uint64_t prog;       /* its program (prog_of()), 0 unknown */
	int      rank;       /* 0 first to go, 1 the program's first, 2 kept */
	bool     dead;
	bool     crashed;
};

/* This process's box, for bb__budget_release() at its clean exit. */
static struct {
	char     dir[PATH_MAX];
	uint64_t gen;        /* the index's full checks when it was counted */
	uint64_t size;       /* the bytes it added to the index's bound */
	uint64_t carried;    /* the deaths its state table counts */
	bool     counted;
} bb__bmine;

/* The inode of the initial PID namespace (the kernel's PROC_PID_INIT_INO,
 * fixed): the namespace of a box that records none. */
#define INIT_PID_NS 0xEFFFFFFCu

/* This process's PID namespace: the inode of /proc/self/ns/pid, 0 when
 * unknown (no /proc). */
static uint64_t pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/*
 * A program: FNV-1a (64 bits) of its executable's path, a NUL, and its
 * build id; 0 when both are empty (unknown: never the same as another).
 * A hash, not the bytes: the index keeps it in 8 bytes, and two programs
 * that collide are judged as one, which keeps every newest box of the two
 * but one.
 */
static uint64_t prog_of(const char *path, const uint8_t *id, size_t idlen)
{
	uint64_t h = 14695981039346656037u;
	size_t n = strlen(path);

	if (!n && !idlen)
		return 0;
	for (size_t i = 0; i <= n; i++)
		h = (h ^ (uint8_t)path[i]) * 1099511628211u;
	for (size_t i = 0; i < idlen; i++)
		h = (h ^ id[i]) * 1099511628211u;
	return h ? h : 1;
}

/* This process's program, as its box's module area will record it
 * (modules.c: the path of /proc/self/exe and the main program's build id).
 * Computed once: a child of fork() runs the same file. */
static uint64_t my_prog(void)
{
	static uint64_t prog;
	static bool done;
	char path[PATH_MAX];
	uint8_t id[64];
	ssize_t n;
	size_t idlen;

	if (!done) {
		n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		path[n > 0 ? n : 0] = '\0';
		idlen = bb__main_build_id(id, sizeof(id));
		prog = prog_of(path, id, idlen);
		done = true;
	}
	return prog;
}

/* This process's comm as its box's header will record it (box.c
 * bb__fill_identity()), read once per process image. */
static const char *my_comm(void)
{
	static char comm[64];
	static bool done;

	if (!done) {
		if (bb__read_file("/proc/self/comm", comm, sizeof(comm)) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		done = true;
	}
	return comm;
}

/* The budget in bytes, 0 when there is none; -EINVAL for a bad
 * BLACKBOX_BUDGET. */
static int64_t budget_of(const struct bb_options *o)
{
	const char *env;
	size_t v;

	if (o->flags & BB_OPT_NO_BUDGET)
		return 0;
	if (o->budget)
		return (int64_t)(o->budget > INT64_MAX ? INT64_MAX : o->budget);
	/* secure_getenv: ignored in a set-uid or set-gid program (bb_init(3)) */
	env = (o->flags & BB_OPT_NO_ENV) ? NULL : secure_getenv("BLACKBOX_BUDGET");
	if (!env || !*env)
		return (int64_t)BB_DEFAULT_BUDGET;
	if (!strcmp(env, "0"))
		return 0;
	v = bb__parse_size(env);
	if (!v)
		return -EINVAL;
	return (int64_t)(v > INT64_MAX ? INT64_MAX : v);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A u64 state value ([key, value] as bb_set_u64 writes it) into *@v. */
static void slot_value(const struct bb_state_entry *e, uint64_t *v)
{
	struct bb__cbor c = { e->value, e->value + e->value_len };
	const uint8_t *k;
	uint64_t n;
	size_t kn;

	if (bb__cbor_container(&c, 4, &n) || n != 2 || bb__cbor_string(&c, 3, &k, &kn) ||
	    bb__cbor_uint(&c, v))
		*v = 0;
}

struct keys {
	uint64_t removed, pidns;
};

static bool key_is(const struct bb_state_entry *e, const char *k, size_t n)
{
	return e->key_len == n && !memcmp(e->key, k, n);
}

static int state_cb(const struct bb_state_entry *e, void *arg)
{
	struct keys *k = arg;

	if (e->status != BB_SLOT_OK)
		return 0;
	if (key_is(e, KEY_REMOVED, sizeof(KEY_REMOVED) - 1))
		slot_value(e, &k->removed);
	else if (key_is(e, KEY_PIDNS, sizeof(KEY_PIDNS) - 1))
		slot_value(e, &k->pidns);
	return 0;
}

/*
 * Judge one box of ours: dead (removable) or not, and what it counted.
 * Opened without following, judged on the inode opened.
 */
static void judge(int dfd, struct mine *m, uint64_t our_ns)
{
	struct bb_reader *r;
	const struct bb_box_info *in;
	const struct bb_module *mods = NULL;
	struct keys k = { 0, 0 };
	size_t nmods = 0;
	char err[128];
	int live;

	m->dead = false;
	/* any header uid: the file is ours, whoever the header says */
	if (bb_reader_openat(dfd, m->name, BB_OPEN_ANY_OWNER | BB_OPEN_PLAIN, &r, NULL, 0) < 0)
		return; /* not a box, or one being created: never ours to remove */
	in = bb_reader_info(r);
	if (in->file_dev != (uint64_t)m->dev || in->file_ino != (uint64_t)m->ino ||
	    in->file_uid != (uint32_t)geteuid()) {
		bb_reader_close(r);
		return;
	}
	live = bb_reader_liveness(r);
	if (live > 0 && live != BB_LIVENESS_ALIVE) {
		bb_reader_state(r, state_cb, &k, NULL);
		/* its program: the module area's first object (modules.c),
		 * decoded only for a box of our comm (the same executable
		 * records the same comm unless it renames itself: then it is
		 * kept, as another program's) */
		if (!strncmp(in->comm, my_comm(), sizeof(in->comm)) &&
		    bb_reader_modules(r, &mods, &nmods, NULL, err, sizeof(err)) == 0 && nmods)
			m->prog = prog_of(mods[0].path, mods[0].build_id, mods[0].build_id_len);
	}
	m->created_ns = in->created_ns;
	m->removed = k.removed;
	m->crashed = in->phase == BB_PHASE_CRASHED;
	/* dead, and by the rules of bb-reap: a process with the header's pid
	 * and start time that maps this inode is alive whatever the header
	 * says; another namespace's pid is nobody's here */
	m->dead = live > 0 && live != BB_LIVENESS_ALIVE &&
		  !bb_pid_maps_file(in->pid, in->starttime, in->file_dev, in->file_ino) &&
		  (k.pidns ? k.pidns : INIT_PID_NS) == our_ns;
	bb_reader_close(r);
}

/*
 * Does the name of box @name say it is a live process's (FORMAT.md §2:
 * <prefix><pid>.<starttime>.<n>, and that pid has that start time now)?
 * A cheap look before judge() opens the box: a name claims, so it only
 * ever spares a box (a box of ours named after a live process is kept,
 * which its owner, our uid, could do anyway by keeping it mapped).
 */
static bool named_alive(const char *name)
{
	const char *p = name + strlen(BB_NAME_PREFIX);
	unsigned long long st;
	uint64_t now;
	char *end;
	long pid;

	errno = 0;
	pid = strtol(p, &end, 10);
	if (end == p || *end != '.' || pid <= 0 || pid > INT32_MAX || errno)
		return false;
	p = end + 1;
	st = strtoull(p, &end, 10);
	if (end == p || *end != '.' || errno)
		return false;
	return bb__proc_starttime((pid_t)pid, &now) == 0 && now == st;
}

/* Unlink @name in @dfd only if it is still the inode judged.  0 or -errno. */
static int remove_same(int dfd, const struct mine *m)
{
	struct stat st;

	if (fstatat(dfd, m->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (st.st_dev != m->dev || st.st_ino != m->ino || st.st_uid != geteuid())
		return -ESTALE;
	return unlinkat(dfd, m->name, 0) < 0 ? -errno : 0;
}

/* Newer first; the name breaks ties. */
static int newer(const struct mine *a, const struct mine *b)
{
	if (a->created_ns != b->created_ns)
		return a->created_ns > b->created_ns ? -1 : 1;
	return strcmp(b->name, a->name);
}

/* First to go first: rank, then oldest. */
static int by_victim(const void *x, const void *y)
{
	const struct mine *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank - b->rank;
	return -newer(a, b);
}

/* Our boxes in @d: *@v, *@n of them; their bytes in *@total.  0 or -ENOMEM. */
static int list_mine(DIR *d, struct mine **v, size_t *n, uint64_t *total)
{
	size_t plen = strlen(BB_NAME_PREFIX), cap = 0;
	uid_t me = geteuid();
	struct dirent *e;

	*v = NULL;
	*n = 0;
	*total = 0;
	while ((e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, BB_NAME_PREFIX, plen) || strlen(e->d_name) >= 256 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != me)
			continue;
		if (BB__GROW(v, &cap, *n + 1))
			return -ENOMEM;
		memset(&(*v)[*n], 0, sizeof(**v));
		bb__strlcpy((*v)[*n].name, e->d_name, sizeof((*v)[*n].name));
		(*v)[*n].dev = st.st_dev;
		(*v)[*n].ino = st.st_ino;
		(*v)[*n].bytes = (uint64_t)st.st_blocks * 512;
		*total = sat_add(*total, (*v)[*n].bytes);
		(*n)++;
	}
	return 0;
}

/*
 * Rank the dead boxes @v[0..n) of our program @prog: its newest and its
 * newest crashed are kept (rank 2), its oldest goes last (rank 1); the
 * boxes of other programs are kept.
 */
static void rank(struct mine *v, size_t n, uint64_t prog)
{
	struct mine *newest = NULL, *crashed = NULL, *oldest = NULL;

	for (size_t i = 0; i < n; i++) {
		struct mine *m = &v[i];

		if (!prog || m->prog != prog) {
			m->rank = 2;
			continue;
		}
		if (!newest || newer(m, newest) < 0)
			newest = m;
		if (m->crashed && (!crashed || newer(m, crashed) < 0))
			crashed = m;
		if (!oldest || newer(m, oldest) > 0)
			oldest = m;
	}
	if (oldest)
		oldest->rank = 1;
	if (newest)
		newest->rank = 2;
	if (crashed)
		crashed->rank = 2;
}

/*
 * The full check: judge the directory @dfd, remove what the rules let go
 * while the dead boxes hold more than @target.  *@dead gets the dead bytes
 * left (the uid's bytes when nothing was judged), *@removed what went.
 */
static void full_check(int dfd, uint64_t target, uint64_t *dead, uint64_t *removed)
{
	uint64_t total = 0, our_ns, add;
	struct mine *v = NULL;
	size_t n = 0, i, w;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	*dead = UINT64_MAX; /* unknown: the next bb_init() checks again */
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (list_mine(d, &v, &n, &total) < 0)
		goto out;
	*dead = total;
	if (total <= target)
		goto out; /* the usual case: no box opened */
	/* without /proc no owner can be judged alive: nothing is removed */
	our_ns = pid_ns();
	if (!our_ns)
		goto out;
	*dead = 0;
	for (i = w = 0; i < n; i++) {
		if (named_alive(v[i].name))
			continue; /* not dead: not opened */
		judge(dfd, &v[i], our_ns);
		if (v[i].dead) {
			*dead += v[i].bytes;
			v[w++] = v[i];
		}
	}
	n = w;
	/* bb-reap --watch removes them, archived and reported first */
	if (*dead <= target || bb__budget_watched(dfd))
		goto out;
	rank(v, n, my_prog());
	qsort(v, n, sizeof(*v), by_victim);
	for (i = 0; i < n && *dead > target && v[i].rank < 2; i++) {
		if (remove_same(dfd, &v[i]) < 0)
			continue; /* gone already (another bb_init), or replaced */
		*dead -= v[i].bytes;
		/* saturating: a box's own count is its owner's word */
		add = sat_add(v[i].removed, 1);
		*removed = sat_add(*removed, add);
	}
out:
	free(v);
	closedir(d);
}

/*
 * Add @add bytes to the index's bound if it then still fits @target: true,
 * and the index's generation in *@gen.  No lock: one compare-and-swap on
 * since.  A full check that rewrites the bound meanwhile may drop what we
 * add (it lists the directory before our box exists): that box is then
 * counted as one alive at the check, found at the next one.
 */
static bool bindex_add(struct bb__bindex *x, uint64_t target, uint64_t add, uint64_t *gen)
{
	uint64_t d, s;

	/* acquire: pairs with the release store of valid by full checks
	 * (bb__budget_trim()): dead and gen are that check's */
	if (!BB__LOAD_ACQUIRE(&x->valid))
		return false;
	d = BB__LOAD_RELAXED(&x->dead);
	s = BB__LOAD_RELAXED(&x->since);
	do {
		if (d > target || s > target - d)
			return false;
		/* relaxed on both sides: since orders nothing else; the CAS
		 * only keeps concurrent additions from being lost */
	} while (!__atomic_compare_exchange_n(&x->since, &s, s + add, 0, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	*gen = BB__LOAD_RELAXED(&x->gen);
	return true;
}

/* What a clean exit of our program handed back (bb__budget_release()):
 * this box carries it now.  The peek needs no lock (a count it misses is
 * taken by the next box); the take is under it. */
static uint64_t bindex_take(int fd, struct bb__bindex *x, uint64_t prog)
{
	uint64_t *p, n = 0;
	bool any = false;

	for (size_t i = 0; i < BB__BINDEX_PROGS && prog; i++)
		any |= BB__LOAD_RELAXED(&x->prog[i].prog) == prog &&
		       BB__LOAD_RELAXED(&x->prog[i].count);
	if (!any || bb__bindex_lock(fd) < 0)
		return 0;
	if ((p = bb__bindex_pending(x, prog, false))) {
		n = BB__LOAD_RELAXED(p);
		BB__STORE_RELAXED(p, 0);
	}
	bb__bindex_unlock(fd);
	return n;
}

int bb__budget_trim(const struct bb_options *o, const char *dir, uint64_t new_size,
		    uint64_t *removed)
{
	int64_t budget = budget_of(o);
	struct bb__bindex *x = NULL;
	uint64_t target, dead;
	int dfd, xfd;

	*removed = 0;
	bb__bmine.counted = false;
	bb__bmine.carried = 0;
	if (budget <= 0)
		return budget < 0 ? (int)budget : 0;
	/* a set-uid or set-gid process: its caller picks when it runs, under
	 * which names, and how it dies; it removes nothing of its owner's */
	if (getauxval(AT_SECURE))
		return 0;
	if (!dir)
		dir = BB_DEFAULT_DIR;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0; /* bb_init() says what is wrong with the directory */
	bb__strlcpy(bb__bmine.dir, dir, sizeof(bb__bmine.dir));
	target = new_size < (uint64_t)budget ? (uint64_t)budget - new_size : 0;
	xfd = bb__bindex_map(dfd, &x);
	if (xfd >= 0) {
		*removed = bindex_take(xfd, x, my_prog());
		/* the bound fits: nothing to look at */
		if (bindex_add(x, target, new_size, &bb__bmine.gen))
			goto counted;
		if (bb__bindex_lock(xfd) < 0) {
			bb__bindex_unmap(xfd, x);
			xfd = -1;
		} else if (bindex_add(x, target, new_size, &bb__bmine.gen)) {
			/* a full check ran while we waited for the lock */
			goto counted;
		}
	}
	if (xfd >= 0)
		BB__STORE_RELAXED(&x->valid, 0); /* others wait for our check */
	full_check(dfd, target, &dead, removed);
	if (xfd < 0)
		goto out;
	BB__STORE_RELAXED(&x->dead, dead);
	__atomic_store_n(&x->since, new_size, __ATOMIC_RELAXED);
	bb__bmine.gen = BB__LOAD_RELAXED(&x->gen) + 1;
	BB__STORE_RELAXED(&x->gen, bb__bmine.gen);
	/* release: pairs with the acquire load of valid in bindex_add(): who
	 * sees it sees this check's dead and gen (unknown dead: stays 0) */
	BB__STORE_RELEASE(&x->valid, dead != UINT64_MAX);
counted:
	bb__bmine.counted = true;
	bb__bmine.size = new_size;
	bb__bindex_unmap(xfd, x);
out:
	close(dfd);
	return 0;
}

void bb__budget_note(uint64_t removed)
{
	uint64_t ns = pid_ns();

	/* What later budgets need (module comment); a full table or a busy
	 * slot only costs the count, never the box. */
	if (ns && ns != INIT_PID_NS)
		(void)bb_set_u64(KEY_PIDNS, ns);
	if (removed)
		(void)bb_set_u64(KEY_REMOVED, removed);
	bb__bmine.carried = removed;
}

void bb__budget_release(void)
{
	struct bb__bindex *x;
	uint64_t *pending, s;
	int dfd, xfd;

	if (!bb__bmine.counted && !bb__bmine.carried)
		return;
	dfd = open(bb__bmine.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	xfd = bb__bindex_map(dfd, &x);
	close(dfd);
	if (xfd < 0)
		return;
	/* our bytes are in the bound only until the next full check, which
	 * judged our box alive (relaxed: a check that starts meanwhile
	 * rewrites since whatever we do) */
	if (bb__bmine.counted && BB__LOAD_RELAXED(&x->gen) == bb__bmine.gen) {
		s = BB__LOAD_RELAXED(&x->since);
		while (!__atomic_compare_exchange_n(&x->since, &s,
						    s > bb__bmine.size ? s - bb__bmine.size : 0, 0,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
	/* the deaths our box counted go to the program's next box */
	if (bb__bmine.carried && bb__bindex_lock(xfd) == 0) {
		if ((pending = bb__bindex_pending(x, my_prog(), true)))
			BB__STORE_RELAXED(pending, sat_add(BB__LOAD_RELAXED(pending),
							  bb__bmine.carried));
		bb__bindex_unlock(xfd);
	}
	bb__bindex_unmap(xfd, x);
	bb__bmine.counted = false;
	bb__bmine.carried = 0;
}
