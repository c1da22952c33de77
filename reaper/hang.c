/* SPDX-License-Identifier: MIT */
/*
 * reaper/hang.c - bb-reap --watch on live boxes: heartbeats and snapshots
 * (docs/FORMAT.md §14, bb-reap(8) HANGS AND SNAPSHOTS).
 *
 * Each live box whose owner the watcher holds a pidfd for gets its header
 * mapped read-only (one page); a box that declared a deadline
 * (header.watchdog_ms) gets its thread table mapped too.  Every
 * REAP_HB_TICK_MS the watcher reads, per box, two header words and, per
 * thread slot with a deadline, its heartbeat: no system call, no file
 * read.  A heartbeat that did not change for longer than its deadline, by
 * the watcher's CLOCK_MONOTONIC, names its thread stuck (once, until it
 * beats again).  Then the watcher asks the owner for every thread's stack
 * (a dump request by the pidfd: never another process that took the pid),
 * waits for the answer, archives a copy of the box and sends one journal
 * entry (journal-send.c, reap_journal_incident()).  A changed
 * header.snapshot_seq does the same without the dump, with the reason of
 * the newest bb.snapshot record.  The owner is never stopped nor killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "reap.h"

#define DUMP_WAIT_MS 1000   /* the owner's answer to a dump request: at most */
#define SNAPSHOT_GAP_S 10   /* a box's snapshots are copied at most this often */

struct reap_hb {
	char     name[256];
	pid_t    pid;
	int      pidfd;
	uid_t    uid;               /* the file's owner */
	const struct bb_header *hdr;
	size_t   maplen;            /* the header page, or header to thread table end */
	const struct bb_thread_slot *slots;
	uint32_t nslots;
	uint64_t *last;             /* per slot: the heartbeat last seen ... */
	int64_t  *since;            /* ... and since when (CLOCK_MONOTONIC ns) */
	int32_t  *tid;              /* ... and whose it was */
	bool     *named;            /* stuck, told: not again until it beats */
	uint32_t snap_seen;         /* header.snapshot_seq last acted on */
	int64_t  snap_ns;           /* when (CLOCK_MONOTONIC), 0: never */
};

/* Relaxed loads of words the owner changes (FORMAT.md §14: each is a
 * relaxed or release store there; nothing but the value is read). */
static uint32_t load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Map the thread table once the box declared a deadline: header to the
 * table's end, bounds checked against the file (a box is untrusted). */
static void map_slots(struct reap_hb *h, int fd, uint64_t file_size)
{
	uint64_t off = h->hdr->thread_table_offset, n = h->hdr->thread_count, end;
	void *m;

	if (h->hdr->version_major != BB_FORMAT_MAJOR || h->hdr->version_minor < 3 ||
	    h->hdr->thread_slot_size != BB_THREAD_SLOT_SIZE || n == 0 ||
	    n > BB_SEG_MAX_COUNT || off < BB_HEADER_SIZE || off % 64)
		return;
	end = off + n * BB_THREAD_SLOT_SIZE;
	if (end > file_size || end > h->hdr->box_size)
		return;
	if (!(h->last = calloc(n, sizeof(*h->last))) || !(h->since = calloc(n, sizeof(*h->since))) ||
	    !(h->tid = calloc(n, sizeof(*h->tid))) || !(h->named = calloc(n, sizeof(*h->named))))
		return;
	m = mmap(NULL, end, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return;
	munmap((void *)h->hdr, h->maplen);
	h->hdr = m;
	h->maplen = end;
	h->slots = (const struct bb_thread_slot *)(const void *)((const char *)m + off);
	h->nslots = (uint32_t)n;
}

struct reap_hb *reap_hb_attach(struct reap_ctx *c, const char *name, pid_t pid, int pidfd)
{
	struct reap_hb *h = calloc(1, sizeof(*h));
	int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	void *m;

	if (!h || fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < BB_HEADER_SIZE)
		goto fail;
	m = mmap(NULL, BB_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	h->hdr = m;
	h->maplen = BB_HEADER_SIZE;
	/* the file owner is the only one who may have written it; a header
	 * naming another uid is a copy or a forgery: not watched */
	if (h->hdr->magic != BB_MAGIC || h->hdr->uid != st.st_uid || h->hdr->pid != pid)
		goto fail;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->pid = pid;
	h->pidfd = pidfd;
	h->uid = st.st_uid;
	h->snap_seen = load32(&h->hdr->snapshot_seq);
	if (load32(&h->hdr->watchdog_ms))
		map_slots(h, fd, (uint64_t)st.st_size);
	close(fd);
	return h;
fail:
	if (fd >= 0)
		close(fd);
	reap_hb_detach(h);
	return NULL;
}

void reap_hb_detach(struct reap_hb *h)
{
	if (!h)
		return;
	if (h->hdr)
		munmap((void *)h->hdr, h->maplen);
	free(h->last);
	free(h->since);
	free(h->tid);
	free(h->named);
	free(h);
}

/* The kernel's view of a thread that did not answer: wchan and, where
 * readable (root), its kernel stack, on one line. */
static void kernel_state(pid_t pid, int32_t tid, char *out, size_t len)
{
	char path[96], buf[2048];
	size_t used = 0;

	out[0] = '\0';
	for (int k = 0; k < 2; k++) {
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid,
			 k ? "stack" : "wchan");
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\n')
				buf[i] = i == n - 1 ? '\0' : ';';
		used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s%s",
					 used ? " " : "", k ? "stack: " : "wchan: ", buf);
		if (used >= len)
			break;
	}
}

/* Ask the owner for every thread's stack (FORMAT.md §14) and wait for the
 * answer.  true when it answered. */
static bool ask_dump(struct reap_hb *h)
{
	static uint32_t next_id;
	int sig = (int)load32((const uint32_t *)(const void *)&h->hdr->dump_signal);
	uint32_t id = (++next_id & BB_DUMP_ID_MAX) ? next_id & BB_DUMP_ID_MAX : ++next_id;
	siginfo_t si;

	if (sig < SIGRTMIN || sig > SIGRTMAX || h->pidfd < 0)
		return false;
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = BB_DUMP_REQUEST(BB_DUMP_HANG, id);
	/* by the pidfd: the process the box belongs to, or nobody */
	if (syscall(SYS_pidfd_send_signal, h->pidfd, sig, &si, 0) < 0)
		return false;
	for (int i = 0; i < DUMP_WAIT_MS / 10; i++) {
		struct timespec ms10 = { 0, 10000000 };

		/* Acquire pairs with the owner's release store of its id
		 * (bb__dump_request()): the slots it wrote are there. */
		if (__atomic_load_n(&h->hdr->dump_seq, __ATOMIC_ACQUIRE) == id)
			return true;
		nanosleep(&ms10, NULL);
	}
	return false;
}

/* The reason of the newest "bb.snapshot" event: its CBOR value is
 * [text "bb.snapshot", {text "reason": text}] (watchdog.c). */
struct snapfind {
	char reason[256];
	bool found;
};

static int snap_cb(const struct bb_record *rec, void *arg)
{
	static const uint8_t head[] = { 0x82, 0x6b, 'b', 'b', '.', 's', 'n', 'a', 'p', 's',
					'h', 'o', 't', 0xa1, 0x66, 'r', 'e', 'a', 's', 'o', 'n' };
	struct snapfind *f = arg;
	const uint8_t *v = rec->value;
	size_t n = rec->value_len, len, at = sizeof(head) + 1;

	if (rec->tag != BB_TAG_EVENT || n < at || memcmp(v, head, sizeof(head)))
		return 0;
	len = v[sizeof(head)] & 0x1f;
	if ((v[sizeof(head)] >> 5) != 3 || len > 24)
		return 0;
	if (len == 24) {
		if (n < at + 1)
			return 0;
		len = v[at++];
	}
	if (len > n - at)
		len = n - at;
	if (len >= sizeof(f->reason))
		len = sizeof(f->reason) - 1;
	bb_escape_text((const char *)v + at, len, f->reason, sizeof(f->reason));
	f->found = true;
	return 0;
}

/* Copy, archive and report one incident of @h. */
static void incident(struct reap_ctx *c, struct reap_hb *h, struct reap_incident *inc)
{
	struct bb_reader *r = NULL;
	struct reap_copy copy;
	struct bb_crash *stk = NULL;
	struct bb_stream_stats sum;
	struct snapfind sf = { .found = false };
	struct stat st;
	char err[256], kern[1024] = "";
	uint32_t nst = 0, asked = 0;
	int fd;

	fd = openat(c->dirfd, h->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != h->uid ||
	    bb_reader_open_fd(fd, h->name, 0, &r, err, sizeof(err)) < 0) {
		if (fd >= 0)
			close(fd);
		reap_log("%s: %s: cannot read the box", h->name, inc->event);
		return;
	}
	close(fd);
	if (inc->tid) {
		bb_reader_crash_stacks(r, &nst, &asked);
		for (uint32_t i = 0; i < nst; i++) {
			struct bb_crash *x = malloc(sizeof(*x));

			if (!x)
				break;
			bb_reader_crash_stack(r, i, x);
			if (x->tid == inc->tid && x->status == BB_CRASH_COMPLETE) {
				stk = x;
				break;
			}
			free(x);
		}
		if (!stk) {
			kernel_state(h->pid, inc->tid, kern, sizeof(kern));
			inc->kernel = kern[0] ? kern : "unreadable";
		}
		inc->stack = stk;
	} else {
		bb_reader_walk(r, 0, snap_cb, &sf);
		inc->reason = sf.found ? sf.reason : "";
	}
	inc->archive = NULL;
	if (c->archfd >= 0 && reap_archive_box(c, r, &st, reap_real_ns(), &copy, err, sizeof(err)) == 0)
		inc->archive = copy.path;
	else if (c->archfd >= 0)
		reap_log("%s: %s: not archived: %s", h->name, inc->event, err);
	bb_reader_total_stats(r, &sum);
	inc->missed = sum.overwritten;
	if (c->o.verbose || !c->o.journal)
		reap_log("%s: %s%s%s%s (pid %d)", h->name, inc->event,
			 inc->archive ? ", archived as " : "", inc->archive ? inc->archive : "",
			 inc->tid ? (stk ? ", stack taken" : ", no answer") : "", (int)h->pid);
	if (c->o.journal)
		reap_journal_incident(c, r, &st, inc);
	free(stk);
	bb_reader_close(r);
}

void reap_hb_check(struct reap_ctx *c, struct reap_hb *h)
{
	int64_t now = reap_mono_ns();
	uint32_t snap = load32(&h->hdr->snapshot_seq);
	struct reap_incident stuck = { .event = "hang" };

	if (!h->nslots && load32(&h->hdr->watchdog_ms)) {
		int fd = openat(c->dirfd, h->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		struct stat st;

		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == h->uid)
			map_slots(h, fd, (uint64_t)st.st_size);
		if (fd >= 0)
			close(fd);
	}
	for (uint32_t i = 0; i < h->nslots; i++) {
		const struct bb_thread_slot *s = &h->slots[i];
		/* Acquire pairs with bb_watchdog()'s release store of the
		 * deadline: the heartbeat read next is this thread's. */
		uint32_t ms = __atomic_load_n(&s->watchdog_ms, __ATOMIC_ACQUIRE);
		uint64_t beat;
		int32_t tid;

		if (!ms || load32(&s->claim) != BB_RING_OWNED)
			continue;
		beat = load64(&s->heartbeat);
		tid = (int32_t)load32((const uint32_t *)(const void *)&s->tid);
		if (beat != h->last[i] || tid != h->tid[i] || !h->since[i]) {
			h->last[i] = beat;
			h->tid[i] = tid;
			h->since[i] = now;
			h->named[i] = false;
			continue;
		}
		if (h->named[i] || now - h->since[i] <= (int64_t)ms * 1000000)
			continue;
		/* every thread stuck now is named; one dump, one copy and
		 * one entry for the box, told by its longest silent one */
		h->named[i] = true;
		if (!stuck.tid || (uint64_t)(now - h->since[i]) / 1000000 > stuck.age_ms) {
			stuck.tid = tid;
			stuck.age_ms = (uint64_t)(now - h->since[i]) / 1000000;
			stuck.deadline_ms = ms;
			memcpy(stuck.thread, s->thread_name, sizeof(s->thread_name));
			stuck.thread[sizeof(stuck.thread) - 1] = '\0';
		}
	}
	if (stuck.tid) {
		stuck.answered = ask_dump(h);
		incident(c, h, &stuck);
	}
	/* a program that asks for snapshots in a loop gets one copy every
	 * SNAPSHOT_GAP_S seconds; the calls between are in the next one */
	if (snap != h->snap_seen &&
	    (!h->snap_ns || now - h->snap_ns >= (int64_t)SNAPSHOT_GAP_S * 1000000000)) {
		struct reap_incident inc = { .event = "snapshot" };

		h->snap_seen = snap;
		h->snap_ns = now;
		incident(c, h, &inc);
	}
}
