/* SPDX-License-Identifier: MIT */
/*
 * reaper/judge.c - one entry of the box directory, judged from what it is,
 * never from what its name says, in two halves:
 *
 *   reap_entry()   fstatat(NOFOLLOW): a regular file ours to judge (root,
 *                  or our own uid)?  openat(O_NOFOLLOW | O_NONBLOCK), then
 *                  fstat() on the descriptor: the inode every later
 *                  decision is about.  bb_reader_open_fd: a valid header,
 *                  else left alone (a file shorter than a header may be a
 *                  box being created).  bb_reader_liveness: pid exists,
 *                  start time matches, maps the box: alive, left alone.
 *                  Age: time since the owner's last sign of life >=
 *                  --min-age, else kept.  A box that is to go is handed to
 *                  the pass (pass.c), which plans the archive copies of all
 *                  of them against the quotas before any is made.
 *   reap_finish()  the box opened again (the same inode, or left alone),
 *                  copied into --archive when the plan says so, told to
 *                  the journal, unlinked only if the name still refers to
 *                  the same inode, and reported.
 *
 * The box is never parsed here: the reader API (blackbox/reader.h) does all
 * the validation, bounds checks and liveness tests, and reads every box
 * with pread(2) into memory bounded by its box_size: a user who truncates
 * or grows a box under us gets a clean error for that entry, never a
 * fault of the run and never work that follows the file's size.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "reap.h"

static const char *phase_name(int phase)
{
	switch (phase) {
	case BB_PHASE_INIT:    return "init";
	case BB_PHASE_RUNNING: return "running";
	case BB_PHASE_EXITED:  return "exited";
	case BB_PHASE_CRASHED: return "crashed";
	case BB_PHASE_CLOSED:  return "closed";
	default:               return "unknown";
	}
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/*
 * A time stamp from the box (untrusted) or its file counts only if it is
 * positive and not in the future: a corrupt or planted far-future stamp
 * must not keep a box forever.
 */
static int64_t plausible(int64_t t, int64_t now)
{
	return (t > 0 && t <= now + REAP_CLOCK_SLACK_NS) ? t : 0;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

struct newest {
	int64_t now, ns;
};

static int newest_cb(const struct bb_record *rec, void *arg)
{
	struct newest *n = arg;

	n->ns = max64(n->ns, plausible(rec->wall_ns, n->now));
	return 0;
}

/* What one examination of one entry found. */
struct box {
	struct reap_ctx  *c;
	int               dirfd;
	const char       *name;
	int               fd;
	struct stat       st;
	struct bb_reader *r;
	int               liveness;
	int64_t           last;         /* the owner's last sign of life, ns */
	int64_t           when;         /* the archive name's time, ns */
	struct reap_copy  copy;         /* its archive copy (reap_archive_box) */
	char              err[768];
	char              comm[sizeof(((struct bb_box_info *)0)->comm)];
	struct reap_outcome *out;
	struct reap_event ev;           /* strings point into this struct */
};

/*
 * V_SKIP_LOG: skipped, and worth a log line without --verbose.  A step of
 * the examination returns V_REAP when it found no reason to keep the box
 * (the next step decides), anything else ends it.
 */
enum verdict { V_KEEP, V_SKIP, V_SKIP_LOG, V_ERROR, V_REAP };

/* Open the reader on the examined descriptor: V_REAP, or why not. */
static enum verdict open_reader(struct box *b)
{
	struct reap_event *ev = &b->ev;
	int r;

	/*
	 * BB_OPEN_ANY_OWNER: the reader by default refuses a file whose owner
	 * differs from the uid in its header, to keep bb-extract from showing
	 * a planted file as somebody else's box.  Here it does not matter who
	 * the header claims to be: root may remove any file of /dev/shm, a
	 * user only files it owns (checked on the descriptor by the caller),
	 * and removing a planted file is harmless.  It also covers boxes of
	 * set-uid programs and boxes that were chown'ed.  BB_OPEN_PLAIN: a
	 * process maps a plain box; a compressed file here is anyone's, and
	 * a few kilobytes of it may claim gigabytes: never decompressed.
	 */
	r = bb_reader_open_fd(b->fd, ev->name, BB_OPEN_ANY_OWNER | BB_OPEN_PLAIN, &b->r, b->err,
			      sizeof(b->err));
	if (r >= 0)
		return V_REAP;
	ev->detail = b->err[0] ? b->err : strerror(-r);
	switch (r) {
	case -ENODATA:
		/* bb_init() writes the header before its magic: a
		 * short file may be a box being born.  Leave it. */
		ev->reason = "no complete header (yet): maybe a box being created";
		b->out->kind = REAP_UNBORN;
		return V_SKIP;
	case -EMEDIUMTYPE: /* BB_OPEN_PLAIN: compressed, never read; said */
		ev->reason = "not a valid box";
		return V_SKIP_LOG;
	case -EBADMSG: case -EPROTONOSUPPORT: case -EPFNOSUPPORT:
	case -EPERM: case -EINVAL: case -EISDIR: case -ELOOP:
		ev->reason = "not a valid box";
		return V_SKIP;
	default:
		ev->reason = "cannot open";
		return V_ERROR;
	}
}

/* The header's facts into the event (copied: the event outlives the
 * reader, closed before logging). */
static void describe(struct box *b, const struct bb_box_info *info)
{
	struct reap_event *ev = &b->ev;

	ev->have_box = true;
	ev->pid = info->pid;
	ev->starttime = info->starttime;
	ev->uid = info->uid;
	snprintf(b->comm, sizeof(b->comm), "%s", info->comm);
	ev->comm = b->comm;
	ev->phase = phase_name(info->phase);
}

/* Is the owner gone?  V_REAP, or V_KEEP (alive), V_ERROR (cannot tell). */
static enum verdict judge_owner(struct box *b, const struct bb_box_info *info)
{
	struct reap_event *ev = &b->ev;

	b->liveness = bb_reader_liveness(b->r);
	if (b->liveness < 0) {
		ev->reason = "liveness unknown";
		ev->detail = strerror(-b->liveness);
		return V_ERROR;
	}
	/*
	 * Belt and braces for the one rule that must never break: whatever
	 * the header's state word says (the owner's own bytes), a process
	 * with the header's pid and start time that maps this very inode is
	 * alive.
	 */
	if (b->liveness != BB_LIVENESS_ALIVE &&
	    bb_pid_maps_file(info->pid, info->starttime, (uint64_t)b->st.st_dev,
			     (uint64_t)b->st.st_ino))
		b->liveness = BB_LIVENESS_ALIVE;
	ev->liveness = bb_liveness_name(b->liveness);
	if (b->liveness == BB_LIVENESS_ALIVE) {
		ev->reason = "owner alive";
		b->out->kind = REAP_ALIVE;
		b->out->pid = info->pid;
		b->out->starttime = info->starttime;
		return V_KEEP;
	}
	return V_REAP;
}

/* V_KEEP when the owner's last sign of life @last is younger than --min-age. */
static enum verdict young(struct box *b, int64_t last)
{
	int64_t now = b->c->now_ns, min = (int64_t)b->c->o.min_age_s * 1000000000;

	if (b->c->o.min_age_s && now - last < min) {
		b->ev.age_s = (now - last) / 1000000000;
		b->ev.reason = "younger than --min-age";
		b->c->young++;
		b->out->kind = REAP_YOUNG;
		b->out->due_ns = last + min;
		return V_KEEP;
	}
	return V_REAP;
}

/* A box larger than its owner's archive quota: its records are never read
 * (no run reads more of a box than the quota), nor is it copied. */
static bool over_quota(const struct reap_ctx *c, uint64_t bytes)
{
	return c->o.archive && c->o.max_bytes && bytes > c->o.max_bytes;
}

static uint64_t copy_bytes(const struct bb_box_info *info)
{
	return info->file_size < info->box_size ? info->file_size : info->box_size;
}

/* Owner gone, old enough?  V_REAP (b->last, b->when set), or why not. */
static enum verdict examine(struct box *b)
{
	const struct bb_box_info *info;
	int64_t now = b->c->now_ns, last;
	enum verdict v;

	if ((v = open_reader(b)) != V_REAP)
		return v;
	info = bb_reader_info(b->r);
	describe(b, info);
	if ((v = judge_owner(b, info)) != V_REAP)
		return v;
	/*
	 * Age: time since the last sign of life of the owner, the latest of
	 * the file's mtime (creation; stores through a tmpfs mapping do not
	 * update it), the header's created and state-change times (exit and
	 * crash stamp it), and, for a box orphaned without a word (SIGKILL,
	 * OOM killer, _exit, exec), the newest record's wall-clock time.  A
	 * service that ran for days and was killed a minute ago is a minute
	 * old: the grace period is for the human who investigates.  The walk
	 * is only paid for a box that is old enough by the cheap stamps, and
	 * within its owner's archive quota (a larger box is judged by its
	 * stamps alone: no run reads more of a box than the quota).
	 */
	last = max64(plausible(ts_ns(&b->st.st_mtim), now),
		     max64(plausible((int64_t)info->created_ns, now),
			   plausible((int64_t)info->phase_ns, now)));
	if ((v = young(b, last)) != V_REAP)
		return v;
	if (b->c->o.min_age_s && b->liveness == BB_LIVENESS_ORPHANED &&
	    !over_quota(b->c, copy_bytes(info))) {
		struct newest nw = { .now = now, .ns = 0 };

		bb_reader_walk(b->r, 0, newest_cb, &nw);
		last = max64(last, nw.ns);
		if ((v = young(b, last)) != V_REAP)
			return v;
	}
	b->last = last;
	b->ev.age_s = last ? (now - last) / 1000000000 : -1;
	b->ev.reason = b->ev.liveness;
	b->when = plausible((int64_t)info->created_ns, now);
	if (!b->when)
		b->when = ts_ns(&b->st.st_mtim);
	return V_REAP;
}

/*
 * A first look without following or opening anything, then the entry
 * opened (O_NOFOLLOW: a symlink swapped in since fails with ELOOP;
 * O_NONBLOCK: a FIFO swapped in cannot block the run) and looked at again
 * on the descriptor: from here on every decision is about this inode.
 * V_REAP when it is a regular file ours to judge, else why not.
 */
static enum verdict open_entry(struct box *b)
{
	struct reap_ctx *c = b->c;
	struct reap_event *ev = &b->ev;
	struct stat st;

	if (fstatat(b->dirfd, b->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ev->reason = errno == ENOENT ? "vanished" : "cannot stat";
		ev->detail = strerror(errno);
		return errno == ENOENT ? V_SKIP : V_ERROR;
	}
	if (!S_ISREG(st.st_mode)) {
		ev->reason = S_ISLNK(st.st_mode) ? "symlink, not followed" :
			     S_ISDIR(st.st_mode) ? "directory" : "not a regular file";
		return V_SKIP;
	}
	if (!c->root && st.st_uid != c->uid) {
		ev->reason = "another user's file";
		return V_SKIP;
	}
	b->fd = openat(b->dirfd, b->name,
		       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (b->fd < 0) {
		int e = errno;

		ev->detail = strerror(e);
		ev->reason = e == ENOENT ? "vanished" : e == ELOOP ? "symlink, not followed" :
			     "cannot open";
		return (e == ENOENT || e == ELOOP || e == ENXIO) ? V_SKIP : V_ERROR;
	}
	if (fstat(b->fd, &b->st) < 0) {
		ev->reason = "cannot stat";
		ev->detail = strerror(errno);
		return V_ERROR;
	}
	if (!S_ISREG(b->st.st_mode)) {
		ev->reason = "not a regular file";
		return V_SKIP;
	}
	if (!c->root && b->st.st_uid != c->uid) {
		ev->reason = "another user's file";
		return V_SKIP;
	}
	ev->size = (uint64_t)b->st.st_size;
	return V_REAP;
}

#ifdef BB_HAVE_JOURNAL
/* --journal: its entry (journal-send.c), once, before the box can go: one that
 * cannot be sent keeps the box for the next run, archive undone. */
static enum verdict journal(struct box *b, enum verdict v)
{
	struct reap_ctx *c = b->c;
	int r;

	if (!c->o.journal || !b->r || b->liveness <= 0)
		return v;
	r = reap_journal_box(c, b->r, &b->st, b->liveness, b->ev.archive, &b->ev);
	/* withheld by --journal-rate and removed now: a death no entry
	 * tells of, counted for the owner's next one */
	if (r == REAP_JOURNAL_WITHHELD && v == V_REAP && !c->o.dry_run)
		reap_reported_suppress(c, (uint32_t)b->st.st_uid, bb_reader_info(b->r)->comm);
	if (r >= 0 || v != V_REAP)
		return v;
	if (b->ev.archive && !c->o.dry_run) {
		unlinkat(c->archfd, b->copy.name, 0);
		c->archived--;
	}
	b->ev.archive = NULL;
	b->ev.reason = "kept: its journal entry could not be sent";
	return V_KEEP;
}
#else
static enum verdict journal(struct box *b, enum verdict v)
{
	(void)b;
	return v;
}
#endif

/*
 * Remove the box (--dry-run: say it would) and say so.  V_REAP when done
 * and said, else what became of it.
 *
 * Unlink only the inode we examined.  reap_unlink_same() re-reads the
 * name with fstatat(AT_SYMLINK_NOFOLLOW) and compares dev/ino with our
 * descriptor's.  A window remains between that fstatat() and the
 * unlinkat(): a name cannot be removed atomically "if it is still inode X"
 * on Linux.  What can a racer do in it?  unlinkat() never follows a
 * symlink and removes a directory entry, never an inode another name still
 * holds.  In a sticky directory (/dev/shm is 1777) only the owner of an
 * entry (or of the directory, or CAP_FOWNER) may remove or rename it, and
 * rename() over an existing name needs that right on the name being
 * replaced too; so swapping what this name refers to requires owning the
 * entry that was there, i.e. the box's owner, who may unlink it anyway.
 * With protected_hardlinks, a user cannot make a name for another user's
 * 0600 box either.  In a world-writable directory without the sticky bit
 * anyone may remove any entry already.  Either way the race gains the
 * racer nothing they could not do themselves.
 */
static enum verdict remove_box(struct box *b)
{
	struct reap_ctx *c = b->c;
	int r;

	if (c->o.dry_run) {
		b->ev.decision = "would-reap";
		c->reaped++;
		reap_emit(c, &b->ev, true);
		return V_REAP;
	}
	r = reap_unlink_same(b->dirfd, b->name, b->st.st_dev, b->st.st_ino);
	if (r == 0) {
		b->ev.decision = "reaped";
		c->reaped++;
		reap_emit(c, &b->ev, true);
		return V_REAP;
	}
	if (r == -ENOENT || r == -ESTALE) {
		b->ev.reason = r == -ENOENT ? "vanished before unlink" :
			       "name replaced by another file before unlink, left alone";
		b->ev.decision = "skipped";
		c->skipped++;
		reap_emit(c, &b->ev, true);
		return V_REAP;
	}
	b->ev.reason = "cannot unlink";
	b->ev.detail = strerror(-r);
	return V_ERROR;
}

/* Count and say a decision other than a removal (said by remove_box). */
static void report(struct box *b, enum verdict v)
{
	struct reap_ctx *c = b->c;

	switch (v) {
	case V_KEEP:
		b->ev.decision = "kept";
		c->kept++;
		reap_emit(c, &b->ev, false);
		break;
	case V_SKIP:
	case V_SKIP_LOG:
		b->ev.decision = "skipped";
		c->skipped++;
		reap_emit(c, &b->ev, v == V_SKIP_LOG);
		break;
	case V_ERROR:
	default:
		b->ev.decision = "error";
		c->errors++;
		b->out->kind = REAP_FAILED;
		reap_emit(c, &b->ev, true);
		break;
	case V_REAP:
		break;
	}
}

static void box_close(struct box *b)
{
	if (b->r) {
		bb_reader_close(b->r);
		b->r = NULL;
	}
	if (b->fd >= 0) {
		close(b->fd);
		b->fd = -1;
	}
}

int reap_entry(struct reap_ctx *c, int dirfd, const char *name, struct reap_outcome *out)
{
	struct reap_outcome ignored;
	struct box b = {
		.c = c, .dirfd = dirfd, .name = name, .fd = -1, .out = out ? out : &ignored,
		.ev = { .dir = c->o.dir, .name = name, .age_s = -1 },
	};
	enum verdict v;

	*b.out = (struct reap_outcome){ .kind = REAP_DONE };
	c->entries++;
	v = open_entry(&b);
	if (v == V_REAP)
		v = examine(&b);
	if (v == V_REAP) {
		/* to go: its copy is planned with the pass's other boxes */
		int r = reap_pass_add(c, name, &b.st, &b.ev, b.liveness,
				      copy_bytes(bb_reader_info(b.r)), b.last, b.when);

		box_close(&b);
		if (r < 0) {
			b.ev.reason = "out of memory";
			report(&b, V_ERROR);
			return r;
		}
		b.out->kind = REAP_GOING;
		return 0;
	}
	v = journal(&b, v);
	box_close(&b);
	report(&b, v);
	return 0;
}

/* The same inode as judged, opened again: V_REAP, or what became of it. */
static enum verdict reopen(struct box *b, const struct reap_cand *k)
{
	enum verdict v = open_entry(b);

	if (v != V_REAP)
		return v;
	if (b->st.st_dev != k->dev || b->st.st_ino != k->ino) {
		b->ev.reason = "name replaced by another file since it was judged, left alone";
		return V_SKIP;
	}
	return open_reader(b);
}

/* --archive: the copy planned (reap_archive_box).  V_REAP, or V_ERROR:
 * box kept.  A full archive file system does not keep it: the box goes
 * without its copy (said), or /dev/shm would fill while the disk is. */
static enum verdict archive(struct box *b)
{
	struct reap_ctx *c = b->c;
	int r;

	if (c->archfd < 0 && !(c->o.archive && c->o.dry_run))
		return V_REAP;
	r = reap_archive_box(c, b->r, &b->st, b->when, &b->copy, b->err, sizeof(b->err));
	if (r == -ENOSPC || r == -EDQUOT) {
		c->uncopied++;
		c->lost++;
		snprintf(b->err, sizeof(b->err), "not archived: the archive file system is full (%s)",
			 strerror(-r));
		b->ev.detail = b->ev.nocopy = b->err;
		return V_REAP;
	}
	if (r < 0) {
		b->ev.reason = "archive failed, box kept";
		b->ev.detail = b->err;
		return V_ERROR;
	}
	b->ev.archive = b->copy.path;
	return V_REAP;
}

void reap_finish(struct reap_ctx *c, struct reap_cand *k)
{
	struct reap_outcome ignored;
	struct box b = {
		.c = c, .dirfd = c->dirfd, .name = k->name, .fd = -1, .out = &ignored,
		.ev = k->ev, .liveness = k->liveness, .last = k->last, .when = k->when,
	};
	enum verdict v = V_REAP;
	bool journaled = c->o.journal && (k->liveness == BB_LIVENESS_CRASHED ||
					  k->liveness == BB_LIVENESS_ORPHANED);

	snprintf(b.comm, sizeof(b.comm), "%s", k->comm);
	b.ev.name = k->name;
	b.ev.comm = b.comm;
	b.st.st_dev = k->dev;
	b.st.st_ino = k->ino;
	if (k->copy || journaled) {
		v = reopen(&b, k);
		/* the verdict of judging stands: the owner was gone, and stays */
		b.ev.liveness = k->ev.liveness;
	}
	if (v == V_REAP && k->copy)
		v = archive(&b);
	else if (v == V_REAP && k->why) {
		c->uncopied++;
		c->lost += k->lost;
		b.ev.detail = b.ev.nocopy = k->why;
	}
	v = journal(&b, v);
	if (b.r) {
		bb_reader_close(b.r);
		b.r = NULL;
	}
	if (v == V_REAP)
		v = remove_box(&b);
	report(&b, v);
	box_close(&b);
}
