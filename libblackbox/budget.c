/* SPDX-License-Identifier: MIT */
/*
 * budget.c - the crash-loop budget (bb_init(3), "CRASH LOOPS"): before it
 * creates a box, bb_init() removes dead boxes of its own uid from the box
 * directory until they hold at most the budget less the new box, so that a
 * service restarting in a loop holds a bounded amount of the directory's
 * memory (/dev/shm is RAM), whatever restarts it and whether or not
 * bb-reap runs, and other services' bb_init() keep finding room.
 *
 * What may go, and why nothing else ever does:
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
 *  - nothing at all without /proc (no owner could be judged alive).
 *
 * Which go first, while the budget is exceeded: the boxes of each program
 * (the header's comm) are ranked, the newest last to go, then the first
 * (oldest), then the others, oldest first: a crash loop keeps its first
 * box and as many of its newest as fit.
 *
 * Every death counted: the new box records in its state table (KEY_REMOVED)
 * how many boxes this budget removed before it was created, plus what each
 * removed box had counted itself, so the boxes present and the count in the
 * newest box add up to every box the uid's processes created there.
 *
 * Not the write path: this runs in bb_init() (and in a forked child's first
 * write, which creates its box), allocates, and reads the directory.  Its
 * cost when nothing is over the budget is one readdir() of the directory
 * and an fstatat() per box name; only over the budget are the uid's boxes
 * opened (BENCHMARKS.md "Box cost").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../shared/cbor.h"
#include "../shared/grow.h"
#include "internal.h"
#include "text.h"

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
	char     comm[32];
	int      rank;       /* 0 first to go .. 2 last (the program's newest) */
	bool     dead;
};

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

/* A u64 state value ([key, value] as bb_set_u64 writes it), or 0. */
static uint64_t slot_u64(const struct bb_state_entry *e)
{
	struct bb__cbor c = { e->value, e->value + e->value_len };
	const uint8_t *k;
	uint64_t n, v = 0;
	size_t kn;

	if (bb__cbor_container(&c, 4, &n) || n != 2 || bb__cbor_string(&c, 3, &k, &kn) ||
	    bb__cbor_uint(&c, &v))
		return 0;
	return v;
}

struct keys {
	uint64_t removed, pidns;
};

static int state_cb(const struct bb_state_entry *e, void *arg)
{
	struct keys *k = arg;

	if (e->status != BB_SLOT_OK)
		return 0;
	if (e->key_len == sizeof(KEY_REMOVED) - 1 && !memcmp(e->key, KEY_REMOVED, e->key_len))
		k->removed = slot_u64(e);
	else if (e->key_len == sizeof(KEY_PIDNS) - 1 && !memcmp(e->key, KEY_PIDNS, e->key_len))
		k->pidns = slot_u64(e);
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
	struct keys k = { 0, 0 };
	int live;

	m->dead = false;
	/* any header uid: the file is ours, whoever the header says */
	if (bb_reader_openat(dfd, m->name, BB_OPEN_ANY_OWNER, &r, NULL, 0) < 0)
		return; /* not a box, or one being created: never ours to remove */
	in = bb_reader_info(r);
	if (in->file_dev != (uint64_t)m->dev || in->file_ino != (uint64_t)m->ino ||
	    in->file_uid != (uint32_t)geteuid()) {
		bb_reader_close(r);
		return;
	}
	live = bb_reader_liveness(r);
	if (live > 0 && live != BB_LIVENESS_ALIVE)
		bb_reader_state(r, state_cb, &k, NULL);
	m->created_ns = in->created_ns;
	m->removed = k.removed;
	bb__strlcpy(m->comm, in->comm, sizeof(m->comm));
	/* dead, and by the rules of bb-reap: a process with the header's pid
	 * and start time that maps this inode is alive whatever the header
	 * says; another namespace's pid is nobody's here */
	m->dead = live > 0 && live != BB_LIVENESS_ALIVE &&
		  !bb_pid_maps_file(in->pid, in->starttime, in->file_dev, in->file_ino) &&
		  (k.pidns ? k.pidns : INIT_PID_NS) == our_ns;
	bb_reader_close(r);
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

/* By program, then creation (oldest first): to rank each program's boxes. */
static int by_program(const void *x, const void *y)
{
	const struct mine *a = x, *b = y;
	int c = strcmp(a->comm, b->comm);

	if (c)
		return c;
	if (a->created_ns != b->created_ns)
		return a->created_ns < b->created_ns ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* First to go first: rank, then oldest. */
static int by_victim(const void *x, const void *y)
{
	const struct mine *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank - b->rank;
	if (a->created_ns != b->created_ns)
		return a->created_ns < b->created_ns ? -1 : 1;
	return strcmp(a->name, b->name);
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
		*total += (*v)[*n].bytes;
		(*n)++;
	}
	return 0;
}

int bb__budget_trim(const struct bb_options *o, const char *dir, uint64_t new_size,
		    uint64_t *removed)
{
	int64_t budget = budget_of(o);
	uint64_t total, dead = 0, target, our_ns, add;
	struct mine *v = NULL;
	size_t n = 0, i, j, w;
	DIR *d;

	*removed = 0;
	if (budget <= 0)
		return budget < 0 ? (int)budget : 0;
	d = opendir(dir ? dir : BB_DEFAULT_DIR);
	if (!d)
		return 0; /* bb_init() says what is wrong with the directory */
	if (list_mine(d, &v, &n, &total) < 0 || total + new_size <= (uint64_t)budget)
		goto out; /* nothing to do: the usual case, no box opened */
	/* without /proc no owner can be judged alive: nothing is removed */
	our_ns = pid_ns();
	if (!our_ns)
		goto out;
	for (i = w = 0; i < n; i++) {
		judge(dirfd(d), &v[i], our_ns);
		if (v[i].dead) {
			dead += v[i].bytes;
			v[w++] = v[i];
		}
	}
	n = w;
	target = new_size < (uint64_t)budget ? (uint64_t)budget - new_size : 0;
	if (dead <= target)
		goto out;
	/* each program's newest is the last to go, its first the next */
	qsort(v, n, sizeof(*v), by_program);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !strcmp(v[j].comm, v[i].comm); j++)
			;
		v[j - 1].rank = 2;
		if (j - i > 1)
			v[i].rank = 1;
	}
	qsort(v, n, sizeof(*v), by_victim);
	for (i = 0; i < n && dead > target; i++) {
		if (remove_same(dirfd(d), &v[i]) < 0)
			continue; /* gone already (another bb_init), or replaced */
		dead -= v[i].bytes;
		/* saturating: a box's own count is its owner's word */
		add = v[i].removed == UINT64_MAX ? UINT64_MAX : v[i].removed + 1;
		*removed = *removed > UINT64_MAX - add ? UINT64_MAX : *removed + add;
	}
out:
	free(v);
	closedir(d);
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
}
