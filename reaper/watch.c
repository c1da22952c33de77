/* SPDX-License-Identifier: MIT */
/*
 * reaper/watch.c - bb-reap --watch: reap each box as soon as its owner is
 * gone and --min-age has passed, instead of at the next run of a timer.
 *
 * What it waits for, with one epoll set:
 *  - inotify on the box directory (IN_CREATE, IN_MOVED_TO): a new entry
 *    is judged at once, and again a little later while it has no complete
 *    header (a box being created: bb_init() stores the magic last);
 *  - a pidfd (pidfd_open(2)) for each box whose owner lives: readable the
 *    moment that process ends, then its box is judged;
 *  - time: a box whose owner is gone but younger than --min-age is judged
 *    again when it is old enough; the whole directory every --rescan
 *    seconds (and on SIGHUP, and when inotify overflows), which also
 *    catches what the events cannot show (an owner that exec()ed: its
 *    pid lives on, its box is no longer mapped);
 *  - SIGTERM, SIGINT: a clean stop.
 * Every judgment is the one a run makes (judge.c), in a pass (pass.c):
 * the archive quotas, the journal and every rule of bb-reap(8) hold as
 * for the timer's runs.  Nothing is ever removed on an event's word: an
 * event only says when to look.
 *
 * A pidfd is taken after the owner was judged alive, then the box is
 * judged once more: if it is still alive, the pid named that very process
 * when the pidfd was taken (a pid cannot be reused while its process
 * exists), so the pidfd cannot be another process's.  Without pidfd_open
 * (before Linux 5.3), or out of descriptors, a live box is polled instead:
 * every POLL_MS its owner's pid and start time are checked
 * (/proc/<pid>/stat, owner_runs()), and the box is judged once they no
 * longer match.  The descriptor limit is raised to its hard limit at start
 * (the watch unit's LimitNOFILE= sets that), and pidfds stop FD_RESERVE
 * short of it, so that boxes, archives and the journal can still be
 * opened; running out is said once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/reader.h>

#include "../shared/grow.h"
#include "reap.h"

#define UNBORN_FIRST_MS 20     /* a box being created: looked at again after */
#define UNBORN_TRIES    10     /* ... doubling each time (20 ms .. 10 s) */
#define POLL_MS         500    /* a live box without a pidfd: its owner checked */
#define FD_RESERVE      256    /* descriptors never taken by pidfds */
#define FAILED_RETRY_S  60     /* an entry that could not be judged */

/* epoll tags: the fixed descriptors, then a watched entry's index +
 * TAG_FIRST_ENTRY */
enum { TAG_INOTIFY, TAG_SIGNAL, TAG_FIRST_ENTRY };

/* An entry being watched: what it waits for. */
struct watched {
	char     name[256];    /* "" when the slot is free */
	int      pidfd;        /* its owner's, or -1 */
	int64_t  due_ns;       /* CLOCK_MONOTONIC: look again then (0: never) */
	unsigned tries;        /* REAP_UNBORN: looks so far */
	struct reap_hb *hb;    /* its live owner's heartbeats (hang.c), or NULL */
	pid_t    pid;          /* polled (no pidfd): its live owner, else 0 */
	uint64_t start;        /* ... and that owner's start time */
};

struct watch {
	struct reap_ctx *c;
	int ep, in, sig;
	int lock;              /* reap_watch_claim(): the budget's sign */
	char lock_name[64];
	struct watched *v;
	size_t n, cap;         /* slots used (free ones have name "") */
	size_t *hash;          /* open addressing, index + 1 (0: empty) */
	size_t hcap;           /* a power of two, > 2 * live entries */
	size_t live;           /* slots with a name */
	int64_t rescan_ns;     /* CLOCK_MONOTONIC of the next full pass */
	int64_t hb_ns;         /* CLOCK_MONOTONIC of the next heartbeat check */
	size_t npidfd;         /* pidfds open ... */
	size_t pidfd_max;      /* ... and how many may be (FD_RESERVE short of the limit) */
	bool said_no_pidfd;    /* polling instead was said */
	bool stop, rescan;     /* SIGTERM or SIGINT; SIGHUP or an overflow */
};

int64_t reap_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t reap_real_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211u;
	return h;
}

/* The slot of @name's index in the hash table: where it is, or the empty
 * slot where it would go. */
static size_t *hash_slot(struct watch *w, const char *name)
{
	size_t mask = w->hcap - 1, i = name_hash(name) & mask;

	while (w->hash[i] && strcmp(w->v[w->hash[i] - 1].name, name))
		i = (i + 1) & mask;
	return &w->hash[i];
}

/* Rebuild the hash table with room for twice the live entries. */
static int rehash(struct watch *w)
{
	size_t cap = 64;

	while (cap < 4 * (w->live + 1))
		cap *= 2;
	free(w->hash);
	w->hash = calloc(cap, sizeof(*w->hash));
	if (!w->hash)
		return -ENOMEM;
	w->hcap = cap;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].name[0])
			*hash_slot(w, w->v[i].name) = i + 1;
	return 0;
}

static struct watched *find(struct watch *w, const char *name)
{
	size_t k = w->hcap ? *hash_slot(w, name) : 0;

	return k ? &w->v[k - 1] : NULL;
}

/* Take @name out of the hash table: linear probing's deletion, each later
 * entry of the cluster moved back into the hole when its home allows. */
static void hash_remove(struct watch *w, const char *name)
{
	size_t mask = w->hcap - 1, *hole = hash_slot(w, name), i, j;

	if (!*hole)
		return;
	i = (size_t)(hole - w->hash);
	w->hash[i] = 0;
	for (j = (i + 1) & mask; w->hash[j]; j = (j + 1) & mask) {
		size_t home = name_hash(w->v[w->hash[j] - 1].name) & mask;

		/* j's entry may fill the hole at i unless its home lies in
		 * (i, j], cyclically */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		w->hash[i] = w->hash[j];
		w->hash[j] = 0;
		i = j;
	}
}

/* Does the process @pid with start time @start (clock ticks since boot,
 * /proc/<pid>/stat field 22) still run?  When /proc cannot tell (a read
 * error other than its absence), yes: the box is judged at the rescan. */
static bool owner_runs(pid_t pid, uint64_t start)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT && errno != ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 && errno != ESRCH;
	buf[n] = '\0';
	/* after the last ')': the command name may hold anything */
	if (!(p = strrchr(buf, ')')))
		return true;
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu", &st) != 1)
		return true;
	return st == start;
}

static void close_pidfd(struct watch *w, struct watched *e)
{
	/* the heartbeats were asked by this pidfd (hang.c) */
	reap_hb_detach(e->hb);
	e->hb = NULL;
	epoll_ctl(w->ep, EPOLL_CTL_DEL, e->pidfd, NULL);
	close(e->pidfd);
	e->pidfd = -1;
	w->npidfd--;
}

static void forget(struct watch *w, struct watched *e)
{
	if (e->pidfd >= 0)
		close_pidfd(w, e);
	hash_remove(w, e->name);
	e->name[0] = '\0';
	e->pid = 0;
	w->live--;
}

/* @name's entry, added when new; NULL when out of memory. */
static struct watched *track(struct watch *w, const char *name)
{
	struct watched *e = find(w, name);
	size_t i;

	if (e)
		return e;
	for (i = 0; i < w->n && w->v[i].name[0]; i++)
		;
	if (i == w->n) {
		if (BB__GROW(&w->v, &w->cap, w->n + 1) < 0)
			return NULL;
		w->n++;
	}
	e = &w->v[i];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->pidfd = -1;
	w->live++;
	if (4 * (w->live + 1) > w->hcap) {
		if (rehash(w) < 0)
			return NULL;
	} else {
		*hash_slot(w, name) = i + 1;
	}
	return e;
}

/* Poll @e's owner (@o's pid and start time) every POLL_MS. */
static void poll_owner(struct watched *e, const struct reap_outcome *o)
{
	e->pid = o->pid;
	e->start = o->starttime;
	e->due_ns = reap_mono_ns() + (int64_t)POLL_MS * 1000000;
}

/* Wait for @e's owner (@o) to end: a pidfd in the epoll set, or a poll
 * (poll_owner()).  true when the pidfd was taken. */
static bool wait_owner(struct watch *w, struct watched *e, const struct reap_outcome *o)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = w->npidfd < w->pidfd_max ? pidfd_open_(o->pid) : (errno = EMFILE, -1);

	if (fd >= 0) {
		ev.data.u64 = (uint64_t)(e - w->v) + TAG_FIRST_ENTRY;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) == 0) {
			e->pidfd = fd;
			e->pid = 0;
			e->due_ns = 0;
			w->npidfd++;
			/* its heartbeats and snapshots (hang.c): asked by
			 * this pidfd, so only for an owner that has one */
			reap_hb_detach(e->hb);
			e->hb = reap_hb_attach(w->c, e->name, o->pid, fd);
			return true;
		}
		close(fd);
	}
	if (!w->said_no_pidfd) {
		w->said_no_pidfd = true;
		reap_log("warning: %s after %zu owners' pidfds: the boxes of further live "
			 "owners are polled (their owner checked every %d ms)",
			 errno == EMFILE || errno == ENFILE || errno == ENOSPC ?
			 "out of descriptors" : strerror(errno), w->npidfd, POLL_MS);
	}
	poll_owner(e, o);
	return false;
}

/*
 * What to wait for now that @name was judged @o.  A live owner's pidfd is
 * taken, then the box judged again (module comment): the caller does that
 * when this returns true.
 */
static bool follow_up(struct watch *w, const char *name, const struct reap_outcome *o)
{
	struct watched *e = find(w, name);
	int64_t now = reap_mono_ns();

	switch (o->kind) {
	case REAP_ALIVE:
		if (!e && !(e = track(w, name)))
			return false;
		if (e->pidfd >= 0)
			return false; /* already waiting on it */
		if (e->pid) { /* polled: its owner lives on */
			poll_owner(e, o);
			return false;
		}
		return wait_owner(w, e, o);
	case REAP_YOUNG:
		if (!e && !(e = track(w, name)))
			return false;
		e->pid = 0;
		/* due in CLOCK_REALTIME (the box's stamps), waited on the
		 * monotonic clock; a second late rather than early */
		e->due_ns = now + (o->due_ns - reap_real_ns()) + 1000000;
		if (e->due_ns <= now)
			e->due_ns = now + 1000000;
		return false;
	case REAP_UNBORN:
		if (!e && !(e = track(w, name)))
			return false;
		if (e->tries >= UNBORN_TRIES) {
			forget(w, e); /* not a box being born: the rescan decides */
			return false;
		}
		e->due_ns = now + ((int64_t)UNBORN_FIRST_MS << e->tries) * 1000000;
		e->tries++;
		return false;
	case REAP_FAILED:
		if (!e && !(e = track(w, name)))
			return false;
		e->due_ns = now + (int64_t)FAILED_RETRY_S * 1000000000;
		return false;
	default: /* REAP_GOING, REAP_DONE */
		if (e)
			forget(w, e);
		return false;
	}
}

/* Append @name to the list *@v (*@n names, room for *@cap).  false when
 * out of memory. */
static bool names_add(char (**v)[256], size_t *n, size_t *cap, const char *name)
{
	if (BB__GROW(v, cap, *n + 1) < 0)
		return false;
	snprintf((*v)[(*n)++], sizeof((*v)[0]), "%s", name);
	return true;
}

/* The box names of the directory: *@n of them (malloc'd), NULL on error
 * (said). */
static char (*list_dir(struct reap_ctx *c, size_t *n))[256]
{
	int fd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char (*names)[256] = NULL;
	struct dirent *de;
	size_t cap = 0;

	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		reap_log("error: cannot scan %s: %s", c->o.dir, strerror(errno));
		c->errors++;
		return NULL;
	}
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) &&
		    !names_add(&names, n, &cap, de->d_name))
			break;
	closedir(d);
	return names;
}

/*
 * A pass over @names (@n of them): each judged, the boxes to go planned,
 * copied and removed (pass.c), then what each of the others waits for.
 */
static void pass(struct watch *w, char (*names)[256], size_t n)
{
	struct reap_ctx *c = w->c;
	struct reap_outcome *out = calloc(n ? n : 1, sizeof(*out));
	char (*again)[256] = calloc(n ? n : 1, sizeof(*again));
	size_t nagain = 0;

	if (!out || !again) {
		reap_log("error: out of memory");
		c->errors++;
		goto out;
	}
	c->now_ns = reap_real_ns();
	/* --journal: the reported file is opened, locked and read by the
	 * first report of the pass (reap_journal_box()), not here: a flood
	 * of entries created and removed, or of live boxes, costs no
	 * reading and rewriting of it, and leaves the lock to the timer's
	 * runs */
	for (size_t i = 0; i < n; i++)
		reap_entry(c, c->dirfd, names[i], &out[i]);
	reap_pass_end(c);
	/* live owners: their pidfds, then their boxes judged once more */
	for (size_t i = 0; i < n; i++)
		if (follow_up(w, names[i], &out[i]))
			snprintf(again[nagain++], sizeof(again[0]), "%s", names[i]);
	for (size_t i = 0; i < nagain; i++) {
		struct reap_outcome o;

		reap_entry(c, c->dirfd, again[i], &o);
		if (o.kind != REAP_ALIVE)
			follow_up(w, again[i], &o);
	}
	if (nagain)
		reap_pass_end(c);
#ifdef BB_HAVE_JOURNAL
	if (c->reported_file && reap_reported_close(c) < 0)
		c->errors++;
#endif
out:
	free(again);
	free(out);
}

/* One name, judged at once. */
static void pass_one(struct watch *w, const char *name)
{
	char one[1][256];

	snprintf(one[0], sizeof(one[0]), "%s", name);
	pass(w, one, 1);
}

static void full_pass(struct watch *w)
{
	size_t n;
	char (*names)[256] = list_dir(w->c, &n);

	pass(w, names, n);
	free(names);
	w->rescan = false;
	w->rescan_ns = reap_mono_ns() + (int64_t)w->c->o.rescan_s * 1000000000;
}

/*
 * One read of inotify events (up to 64 KiB of them), their names judged
 * in one pass: a flood of entries created by anyone costs one pass per
 * read, and the loop gets back to the pidfds and timers between reads
 * (the rest is read at the next turn, epoll being level-triggered).
 */
static void on_inotify(struct watch *w)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	char (*names)[256] = NULL;
	size_t n = 0, cap = 0;
	ssize_t len = read(w->in, buf, sizeof(buf));

	for (char *p = buf; len > 0 && p < buf + len;) {
		struct inotify_event *ev = (struct inotify_event *)(void *)p;

		p += sizeof(*ev) + ev->len;
		if (ev->mask & IN_Q_OVERFLOW)
			w->rescan = true;
		else if (ev->len && !strncmp(ev->name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) &&
			 !names_add(&names, &n, &cap, ev->name))
			w->rescan = true; /* out of memory: the full pass sees it */
	}
	if (n)
		pass(w, names, n);
	free(names);
}

static void on_signal(struct watch *w)
{
	struct signalfd_siginfo si;

	while (read(w->sig, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			w->rescan = true;
		else
			w->stop = true;
	}
}

/* Entries due now: judged, in one pass. */
static void on_time(struct watch *w)
{
	int64_t now = reap_mono_ns();
	char (*due)[256] = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < w->n; i++) {
		struct watched *e = &w->v[i];

		if (!e->name[0] || !e->due_ns || e->due_ns > now)
			continue;
		if (e->pid && owner_runs(e->pid, e->start)) {
			e->due_ns = now + (int64_t)POLL_MS * 1000000;
			continue; /* polled, and its owner lives on */
		}
		if (!names_add(&due, &n, &cap, e->name))
			break;
		e->due_ns = 0;
	}
	if (n)
		pass(w, due, n);
	free(due);
}

/* Every REAP_HB_TICK_MS: the heartbeats and snapshot counts of the live
 * boxes (hang.c). */
static void on_heartbeats(struct watch *w)
{
	int64_t now = reap_mono_ns();

	if (now < w->hb_ns)
		return;
	w->hb_ns = now + (int64_t)REAP_HB_TICK_MS * 1000000;
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].name[0] && w->v[i].hb)
			reap_hb_check(w->c, w->v[i].hb);
}

/* Milliseconds until the next thing due, for epoll_wait. */
static int next_timeout(const struct watch *w)
{
	int64_t now = reap_mono_ns(), next = w->rescan_ns;

	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i].name[0] && w->v[i].due_ns && w->v[i].due_ns < next)
			next = w->v[i].due_ns;
		if (w->v[i].hb && w->hb_ns < next)
			next = w->hb_ns;
	}
	if (next <= now)
		return 0;
	return (next - now) / 1000000 > 60000 ? 60000 : (int)((next - now) / 1000000) + 1;
}

/* A pidfd became readable: its process ended. */
static void on_pidfd(struct watch *w, size_t i)
{
	char name[256];

	if (i >= w->n || !w->v[i].name[0])
		return;
	snprintf(name, sizeof(name), "%s", w->v[i].name);
	close_pidfd(w, &w->v[i]);
	pass_one(w, name);
}

static int setup(struct watch *w)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rlimit rl;
	sigset_t set;

	/* one descriptor per live owner: as many as we may, FD_RESERVE
	 * kept for the rest (boxes, archives, the journal, the reported file) */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = 1u << 20;
	w->pidfd_max = rl.rlim_cur > 2 * FD_RESERVE ? (size_t)rl.rlim_cur - FD_RESERVE
		       : (size_t)rl.rlim_cur / 2;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (w->sig = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
	    (w->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (w->in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0)
		return -errno;
	if (inotify_add_watch(w->in, w->c->o.dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0)
		return -errno;
	ev.data.u64 = TAG_INOTIFY;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->in, &ev) < 0)
		return -errno;
	ev.data.u64 = TAG_SIGNAL;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->sig, &ev) < 0)
		return -errno;
	return 0;
}

int reap_watch(struct reap_ctx *c)
{
	struct watch w = { .c = c, .ep = -1, .in = -1, .sig = -1, .lock = -1 };
	int r = setup(&w);

	if (r < 0) {
		reap_log("error: --watch %s: %s", c->o.dir, strerror(-r));
		goto out;
	}
	/* libblackbox's budget leaves dead boxes to us from now on (a dry
	 * run removes nothing: the budget still does) */
	if (!c->o.dry_run &&
	    (w.lock = reap_watch_claim(c->dirfd, w.lock_name, sizeof(w.lock_name))) < 0)
		reap_log("warning: --watch %s: no lock for the crash-loop budget: %s", c->o.dir,
			 strerror(-w.lock));
	if (c->o.verbose)
		reap_log("watching %s (a full pass every %llu s)", c->o.dir,
			 (unsigned long long)c->o.rescan_s);
	/* the watch is set before the first pass: nothing created meanwhile
	 * goes unseen */
	full_pass(&w);
	while (!w.stop) {
		struct epoll_event evs[64];
		int n = epoll_wait(w.ep, evs, 64, next_timeout(&w));

		if (n < 0 && errno != EINTR) {
			r = -errno;
			reap_log("error: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n && !w.stop; i++) {
			uint64_t tag = evs[i].data.u64;

			if (tag == TAG_INOTIFY)
				on_inotify(&w);
			else if (tag == TAG_SIGNAL)
				on_signal(&w);
			else
				on_pidfd(&w, (size_t)(tag - TAG_FIRST_ENTRY));
		}
		if (w.stop)
			break;
		on_time(&w);
		on_heartbeats(&w);
		if (w.rescan || reap_mono_ns() >= w.rescan_ns)
			full_pass(&w);
		fflush(stdout);
	}
	r = 0;
out:
	reap_watch_release(c->dirfd, w.lock, w.lock_name);
	for (size_t i = 0; i < w.n; i++) {
		reap_hb_detach(w.v[i].hb);
		if (w.v[i].pidfd >= 0)
			close(w.v[i].pidfd);
	}
	free(w.v);
	free(w.hash);
	if (w.in >= 0)
		close(w.in);
	if (w.sig >= 0)
		close(w.sig);
	if (w.ep >= 0)
		close(w.ep);
	return r;
}
