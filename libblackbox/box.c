/* SPDX-License-Identifier: MIT */
/*
 * box.c - creating, mapping and closing a box; thread exit, atexit and
 * fork handling; the slow paths of a write: a thread's first write (the
 * segment allocator's bb__seg_join(), segment.c), the shared ring's lock,
 * making room in a sink.
 *
 * Everything here is the slow path.  The fast path is writer.h + write.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "text.h"
#include "unit.h"
#include "segment.h"
#include "writer.h"

/* The format's layout is pinned in <blackbox/format.h>. */

/* barrier.h's atomics work on these fields in place: they must be lock-free. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
	       "64- and 32-bit atomics must be lock-free (shared between processes)");

/*
 * The process's box and each thread's writer state.  Exported (as
 * bb__box_v1 and bb__tls_v1, <blackbox/inline.h>) for the inline fast path
 * of bb_write_kv() compiled into applications.  Default visibility matters
 * beyond the export: a program that reads bb__box directly gets a copy
 * relocation (the variable then lives in the program), and the library
 * must reach it through the GOT like everyone else, which GCC does for a
 * default-visibility variable under -fPIC.  (With -fvisibility=hidden it
 * would be reached PC-relative and the program would see NULL forever:
 * tests/lib/test_inline.c checks that it does not.)
 */
BB_EXPORT struct bb__box *bb__box;
BB_EXPORT __thread struct bb__tls bb__tls __attribute__((tls_model("initial-exec")));

/* The fast-path ABI: the library's structs begin with the parts the inline
 * path reads, and struct bb__sink is the public one (<blackbox/inline.h>). */
_Static_assert(offsetof(struct bb__box, f) == 0, "bb__box must begin with bb__fast_box");
_Static_assert(offsetof(struct bb__tls, f) == 0, "bb__tls must begin with bb__fast_tls");
_Static_assert(sizeof(struct bb__fast_box) == 20 && offsetof(struct bb__fast_box, room) == 16,
	       "fast path v1: struct bb__fast_box layout changed");
_Static_assert(sizeof(struct bb__fast_tls) == 16 && offsetof(struct bb__fast_tls, depth) == 12,
	       "fast path v1: struct bb__fast_tls layout changed");
_Static_assert(sizeof(struct bb__sink) == 64 && offsetof(struct bb__sink, tail) == 32 &&
	       offsetof(struct bb__sink, segmask) == 40,
	       "fast path v1: struct bb__sink layout changed");
/* The inline kv paths write values of up to BB__INLINE_VALUE_MAX bytes
 * without a room test (bb__fast_begin() tests only above BB__ROOM_MIN). */
_Static_assert(BB__ROOM_MIN >= BB__INLINE_VALUE_MAX,
	       "the smallest segment's room must hold the inline kv paths' largest value");

/* Process-wide configuration, kept for the child of fork(). */
static struct {
	struct bb_options opts;
	char dir[PATH_MAX];
	bool have_dir;
	bool disabled;             /* BLACKBOX_DISABLE=1, or fork policy */
	uint32_t gen;              /* last generation handed out */
	int fork_pending;          /* 0 none, 1 child must create lazily, 2 creating */
	pthread_key_t key;
	bool key_ok;
} bb__g;

static pthread_once_t bb__once = PTHREAD_ONCE_INIT;

static pid_t bb__gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- thread exit and fork ---------------------------------------------- */

/*
 * TLS destructor: seal this thread's current segment and retire its slot
 * (segment.c).  Its segments stay readable, and stay its log's,
 * until threads that need one take them.  Writes made after this (by
 * later destructors) go to the shared ring.
 */
static void bb__thread_exit(void *arg)
{
	struct bb__tls *t = &bb__tls;
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

	(void)arg;
	bb__watchdog_thread_exit(box);
	if (box && t->f.window && t->f.gen == box->f.gen && t->f.depth == 0)
		bb__seg_exit(box, t);
	t->f.window = NULL;
	t->exited = true;
	/* Unmap the alternate signal stack bb__seg_join() gave us (crash.c). */
	bb__crash_thread_exit(t);
}

/* bb__thread_watch - have bb__thread_exit() run at this thread's exit
 * (the TLS key's value: any non-NULL; @box).  Called on a thread's first
 * write (bb__seg_join()) and by bb_thread_init(). */
void bb__thread_watch(struct bb__box *box)
{
	if (bb__g.key_ok)
		pthread_setspecific(bb__g.key, box);
}

static void bb__unmap(struct bb__box *box)
{
	if (box->reserve)
		munmap(box->reserve, box->reserve_len);
	if (box->segdata)
		munmap(box->segdata, box->segdata_len);
	if (box->hdr)
		munmap(box->hdr, box->hdr_map_len);
	free(box);
}

/*
 * Child of fork(): the parent's segments and rings are not ours, ever (two
 * writers on one break every invariant).  Drop the mapping without
 * touching the box; the child's own box is created at its first write
 * (BB_FORK_NEW_BOX), so a fork() followed by exec() costs nothing, or never
 * (BB_FORK_DISABLE).
 */
static void bb__atfork_child(void)
{
	struct bb__box *box = bb__box;

	bb__box = NULL;
	bb__tls.f.window = NULL;
	bb__tls.f.gen = 0;
	bb__tls.tid = 0;
	bb__tls.named = false;
	if (!box)
		return;
	bb__unmap(box);
	if (bb__g.opts.fork_policy == BB_FORK_DISABLE)
		bb__g.disabled = true;
	else
		bb__g.fork_pending = 1;
}

/* exit() / return from main: mark the box and unlink it. */
static void bb__atexit(void)
{
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	struct timespec ts;

	if (!box || box->pid != getpid())
		return;
	/* A crash record was written (bb_crash_record() before exit()): the
	 * box keeps saying so, and stays for the reader.  Relaxed: only the
	 * value is used, nothing is read after it. */
	if (BB__LOAD_RELAXED(&box->hdr->phase) == BB_PHASE_CRASHED)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* phase_ns first, then phase with release: a reader that loads phase
	 * with acquire (reader_validate.c) sees the time of that phase (FORMAT.md §3). */
	BB__STORE_RELAXED(&box->hdr->phase_ns, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	BB__STORE_RELEASE(&box->hdr->phase, (uint32_t)BB_PHASE_EXITED);
	if (!box->keep_on_exit) {
		if (box->shm)
			shm_unlink(box->name);
		else
			unlink(box->path);
		bb__budget_release();
	}
	/* Not unmapped: other threads may still be writing during exit. */
}

static void bb__once_init(void)
{
	bb__g.key_ok = pthread_key_create(&bb__g.key, bb__thread_exit) == 0;
	pthread_atfork(NULL, NULL, bb__atfork_child);
	atexit(bb__atexit);
}

/* ---- identity of this process ------------------------------------------ */

/* pid, uid, boot id, comm, cmdline, unit; the start time is the caller's
 * (it named the file). */
static void bb__fill_identity(struct bb_header *h)
{
	char buf[4096];
	ssize_t n;

	h->pid = getpid();
	/* The uid that owns the file (shm_open/open create it with the
	 * effective uid): readers check the two agree (FORMAT.md §9). */
	h->uid = geteuid();
	if (bb__boot_id(buf, sizeof(buf)) == 0)
		bb__strlcpy(h->boot_id, buf, sizeof(h->boot_id));
	if (bb__read_file("/proc/self/comm", buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		bb__strlcpy(h->comm, buf, sizeof(h->comm));
	}
	n = bb__read_file("/proc/self/cmdline", buf, sizeof(buf));
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		buf[--n] = '\0';
	if (n > 0)
		bb__strlcpy(h->cmdline, buf, sizeof(h->cmdline));
	/* the systemd unit and invocation (2.1, unit.c) */
	bb__unit_record(h);
}

/* ---- sizing ------------------------------------------------------------- */

/* "4m", "65536", "1G" -> bytes; 0 on error. */
size_t bb__parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	return *end ? 0 : (size_t)v;
}

/*
 * Box layout (docs/FORMAT.md §1, §13): header | ring table (2) | thread
 * table | segment table | state table | module area | (page aligned) the
 * shared ring, the important ring | the segments.  Everything before the
 * rings is mapped once (box->hdr); each ring twice (a record wraps in one
 * copy); the segments once (a record never spans two).
 */
struct bb__layout {
	uint32_t nsegs;       /* segments */
	uint32_t nslots;      /* thread slots: bb__slots() */
	uint32_t seg_size;
	uint64_t ring_size;   /* the shared and the important ring */
	uint64_t table_off;
	uint64_t slot_off;
	uint64_t seg_off;
	uint64_t lw_off;      /* last words (3.2): one entry per thread slot */
	uint64_t state_off;
	uint64_t mod_off;
	uint64_t stk_off;     /* the crash slots (3.2) */
	uint32_t nstk;        /* their slots: bb__stacks() */
	uint64_t data_off;    /* the rings */
	uint64_t seg_data_off;
	uint64_t box_size;
};

static uint64_t bb__round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * Thread slots for @n segments: four times as many.  A slot holds a
 * thread's log while the log holds a segment or its last words, its
 * thread's life and after (segment.c): a thousand threads that wrote and
 * exited keep their last words in the default box, whose segments are a
 * few hundred.
 */
static uint32_t bb__slots(uint32_t n)
{
	return n > BB_SEG_MAX_COUNT / 4 ? BB_SEG_MAX_COUNT : 4 * n;
}

/*
 * Crash slots for a box of @size bytes (0: sized by its segments, @nslots
 * thread slots): one per 16 KiB of box, so that they take at most a
 * sixteenth of it, at least 8 and at most BB_CRASH_SLOTS_MAX (256, from a
 * 4 MiB box: the default).  Threads need no thread slot to be asked
 * (crash.c bb__crash_ask_all() lists the process's threads), so the
 * count does not follow the thread table.
 */
static uint32_t bb__stacks(uint64_t size, uint32_t nslots)
{
	uint64_t n = size ? size / (16u * BB_CRASH_SLOT_SIZE) : nslots;

	if (n < 8)
		n = 8;
	return n > BB_CRASH_SLOTS_MAX ? BB_CRASH_SLOTS_MAX : (uint32_t)n;
}

/* Fill the offsets of @l for @n segments (l->nstk set by the caller);
 * returns the bytes they need. */
static uint64_t bb__layout_for(struct bb__layout *l, uint32_t n, uint64_t page)
{
	l->nsegs = n;
	l->nslots = bb__slots(n);
	l->table_off = BB_HEADER_SIZE;
	l->slot_off = l->table_off + (uint64_t)BB__RINGS * BB_RING_DESC_SIZE;
	l->seg_off = l->slot_off + (uint64_t)l->nslots * BB_THREAD_SLOT_SIZE;
	l->lw_off = l->seg_off + (uint64_t)n * BB_SEG_DESC_SIZE;
	l->state_off = l->lw_off + (uint64_t)l->nslots * BB_LAST_WORDS_SIZE;
	l->mod_off = l->state_off + (uint64_t)BB__STATE_SLOTS * BB__STATE_SLOT_SIZE;
	l->stk_off = l->mod_off + BB__MODULES_SIZE;
	l->data_off = bb__round_up(l->stk_off + (uint64_t)l->nstk * BB_CRASH_SLOT_SIZE, page);
	l->seg_data_off = l->data_off + BB__RINGS * l->ring_size;
	return l->seg_data_off + (uint64_t)n * l->seg_size;
}

/*
 * bb__plan - the layout of a box of @size bytes (0: just what @nsegs
 * segments need) with @nsegs segments (0: as many as fit) of @seg_size
 * bytes (0: derived from the size).  The derived segment is 8 KiB (4 KiB
 * under 1 MiB), doubled while the box would hold more than 512: a few
 * hundred segments, so that hundreds of threads each get one and a
 * steal's scan stays short (docs/DESIGN.md §10).  The shared and the
 * important ring are 4 segments each; a record is at most a segment.
 * The box is @size bytes exactly (bytes after the last whole segment are
 * unused), unless @seg_size is so small that more than BB_SEG_MAX_COUNT
 * segments would fit: then it ends after the last one.
 */
static int bb__plan(size_t size, unsigned nsegs, size_t seg_size, struct bb__layout *l)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), need;
	uint64_t n;

	if (seg_size) {
		if (seg_size & (seg_size - 1) || seg_size < page || seg_size < BB_SEG_MIN_SIZE ||
		    seg_size > BB_SEG_MAX_SIZE)
			return -EINVAL;
	} else {
		seg_size = size >= (1u << 20) ? 8192 : 4096;
		if (seg_size < page)
			seg_size = page;
		while (size / seg_size > 512 && seg_size < BB_SEG_MAX_SIZE)
			seg_size *= 2;
	}
	l->seg_size = (uint32_t)seg_size;
	l->ring_size = 4 * (uint64_t)seg_size;
	if (l->ring_size > BB_RING_MAX_SIZE)
		l->ring_size = BB_RING_MAX_SIZE;
	if (nsegs) {
		if (nsegs > BB_SEG_MAX_COUNT)
			return -EINVAL;
		l->nstk = bb__stacks(size, bb__slots(nsegs));
		need = bb__layout_for(l, nsegs, page);
		if (size && need > size)
			return -EINVAL;
		l->box_size = size ? size / page * page : need;
		return 0;
	}
	if (!size)
		return -EINVAL;
	size = size / page * page;
	l->nstk = bb__stacks(size, 0);
	need = bb__layout_for(l, 0, page);
	if (size <= need)
		return -EINVAL;
	n = (size - need) / (seg_size + 4 * (BB_THREAD_SLOT_SIZE + BB_LAST_WORDS_SIZE) +
			     BB_SEG_DESC_SIZE) + 1;
	if (n > BB_SEG_MAX_COUNT)
		n = BB_SEG_MAX_COUNT;
	while (n && bb__layout_for(l, (uint32_t)n, page) > size)
		n--;
	if (!n)
		return -EINVAL;
	need = bb__layout_for(l, (uint32_t)n, page);
	l->box_size = n == BB_SEG_MAX_COUNT ? need : size;
	return 0;
}

/* ---- creation ----------------------------------------------------------- */

/* Names bb_init() tries after the first one is taken (FORMAT.md §2). */
#define BB__NAME_TRIES 64

/*
 * A name suffix nobody else can guess: getrandom(2), or when it cannot
 * give one (no entropy yet at early boot, a kernel without it) the clock
 * and this process's addresses (ASLR), which another user cannot read
 * either.  Never 0, the first name's.
 */
static uint32_t bb__name_random(void)
{
	struct timespec ts;
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ (uint32_t)((uint64_t)ts.tv_sec * 2654435761u) ^
		    (uint32_t)((uintptr_t)&ts >> 4) ^ (uint32_t)((uintptr_t)&bb__g >> 12);
	}
	return v ? v : 1;
}

/*
 * Create the box file "blackbox.<pid>.<starttime>.<n>": n = 0 first; when
 * that name is taken (an earlier image of this process after exec(), an
 * earlier bb_init/bb_close cycle, or another user who created the name to
 * keep us from having a box) a random n, up to BB__NAME_TRIES times.  Every
 * try is O_CREAT | O_EXCL: never an existing file, never a symlink.  The
 * name proves nothing to readers (they judge the header and the file
 * owner), so any free name will do.
 */
static int bb__create_file(struct bb__box *box, const char *dir, uint64_t starttime,
			   mode_t mode, uint32_t *seq)
{
	pid_t pid = getpid();

	for (uint32_t t = 0; t <= BB__NAME_TRIES; t++) {
		uint32_t n = t ? bb__name_random() : 0;
		int fd;

		snprintf(box->name, sizeof(box->name), "%s%d.%llu.%u",
			 dir ? BB_NAME_PREFIX : "/" BB_NAME_PREFIX, (int)pid,
			 (unsigned long long)starttime, n);
		if (dir) {
			snprintf(box->path, sizeof(box->path), "%s/%s", dir, box->name);
			fd = open(box->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		} else {
			snprintf(box->path, sizeof(box->path), "/dev/shm%s", box->name);
			fd = shm_open(box->name, O_RDWR | O_CREAT | O_EXCL, 0600);
		}
		if (fd >= 0) {
			/* fchmod, not the open mode: independent of umask. */
			if (fchmod(fd, mode) < 0) {
				int e = -errno;

				close(fd);
				if (dir)
					unlink(box->path);
				else
					shm_unlink(box->name);
				return e;
			}
			*seq = n;
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static void bb__remove(struct bb__box *box)
{
	if (box->shm)
		shm_unlink(box->name);
	else
		unlink(box->path);
}

static int bb__map_rings(struct bb__box *box, int fd, const struct bb__layout *l)
{
	uint64_t c = l->ring_size;

	box->reserve_len = (size_t)(2 * c * BB__RINGS);
	box->reserve = mmap(NULL, box->reserve_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (box->reserve == MAP_FAILED) {
		box->reserve = NULL;
		return -errno;
	}
	for (uint32_t i = 0; i < BB__RINGS; i++) {
		uint8_t *at = box->reserve + 2 * c * i;
		off_t off = (off_t)(l->data_off + c * i);
		struct bb__sink *r = &box->rings[i];

		/* The same file range twice, back to back: a record that
		 * wraps is contiguous in memory (docs/DESIGN.md §2). */
		if (mmap(at, c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED ||
		    mmap(at + c, c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED)
			return -errno;
		r->data = at;
		r->mask = c - 1;
		r->segmask = c >= BB__MARK_RING_MIN ? c / BB__MARKS - 1 : UINT64_MAX;
		r->desc = (struct bb_ring_desc *)(void *)
			((uint8_t *)box->hdr + l->table_off + (uint64_t)i * BB_RING_DESC_SIZE);
		r->pub = &r->desc->head;
	}
	/* The segments, once: a record never spans two. */
	box->segdata_len = (size_t)l->nsegs * l->seg_size;
	box->segdata = mmap(NULL, box->segdata_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			    (off_t)l->seg_data_off);
	if (box->segdata == MAP_FAILED) {
		box->segdata = NULL;
		return -errno;
	}
	return 0;
}

/* The process-local box, its windows and the rings' mark tables in one
 * block, aligned as struct bb__sink is, to a cache line (<blackbox/inline.h>:
 * false sharing between the windows of different threads). */
static struct bb__box *bb__box_alloc(const struct bb__layout *l)
{
	size_t wins = sizeof(struct bb__box) + (size_t)l->nslots * sizeof(struct bb__sink);
	size_t sz = wins + BB__RINGS * BB__MARKS * sizeof(uint64_t);
	struct bb__box *box;
	void *mem;

	if (posix_memalign(&mem, _Alignof(struct bb__sink), sz))
		return NULL;
	box = memset(mem, 0, sz);
	box->windows = (struct bb__sink *)(void *)((uint8_t *)mem + sizeof(struct bb__box));
	box->marks = (uint64_t *)(void *)((uint8_t *)mem + wins);
	return box;
}

/* Reserve the file's memory and map the header part, the rings and the
 * segments.  The reservation comes first: a full tmpfs fails here with
 * ENOSPC, never later as SIGBUS inside a write. */
static int bb__map_box(struct bb__box *box, int fd, const struct bb__layout *l)
{
	int ret = posix_fallocate(fd, 0, (off_t)l->box_size);

	if (ret)
		return -ret;
	box->hdr_map_len = (size_t)l->data_off;
	box->hdr = mmap(NULL, box->hdr_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (box->hdr == MAP_FAILED) {
		box->hdr = NULL;
		return -errno;
	}
	return bb__map_rings(box, fd, l);
}

/* What the writer keeps beside the mapping. */
static void bb__box_setup(struct bb__box *box, const struct bb_options *o,
			  const struct bb__layout *l)
{
	box->ring_size = l->ring_size;
	box->state = (uint8_t *)box->hdr + l->state_off;
	box->modules = (uint8_t *)box->hdr + l->mod_off;
	box->stacks = (uint8_t *)box->hdr + l->stk_off;
	box->nstacks = l->nstk;
	box->segs = (struct bb_seg_desc *)(void *)((uint8_t *)box->hdr + l->seg_off);
	box->slots = (struct bb_thread_slot *)(void *)((uint8_t *)box->hdr + l->slot_off);
	box->lw = (struct bb_last_words *)(void *)((uint8_t *)box->hdr + l->lw_off);
	box->nsegs = l->nsegs;
	box->nslots = l->nslots;
	box->seg_size = l->seg_size;
	/* A record fits a segment (it never spans two) and is at most a
	 * quarter of a ring. */
	box->max_record = l->seg_size < BB_RECORD_MAX ? l->seg_size : BB_RECORD_MAX;
	box->f.clock = CLOCK_MONOTONIC;
	box->pid = getpid();
	box->keep_on_exit = o->flags & BB_OPT_KEEP_ON_EXIT;
}

/* Every field of the header and the tables but the magic.  The file is
 * fresh (O_EXCL, fallocate zero-fills): only non-zero fields are
 * written. */
static void bb__write_header(struct bb__box *box, const struct bb_options *o,
			     const struct bb__layout *l, uint64_t starttime, uint32_t seq)
{
	struct bb_header *h = box->hdr;

	h->version_major = BB_FORMAT_MAJOR;
	h->version_minor = BB_FORMAT_MINOR;
	h->header_size = BB_HEADER_SIZE;
	h->byte_order = BB_BYTE_ORDER_MARK;
	h->word_size = (uint8_t)sizeof(void *);
	h->clock = BB_CLOCK_MONOTONIC;
	h->box_size = l->box_size;
	h->ring_count = BB__RINGS;
	h->ring_desc_size = BB_RING_DESC_SIZE;
	h->ring_table_offset = l->table_off;
	h->ring_size = l->ring_size;
	h->max_record = box->max_record;
	h->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	bb__fill_identity(h);
	h->starttime = starttime;
	h->sequence = seq;
	/* Clock (anchors, TSC calibration) and checksum choice: write.c. */
	bb__writer_setup(box, o);
	h->created_ns = (uint64_t)h->anchor_realtime_ns;
	h->phase = BB_PHASE_RUNNING;
	h->phase_ns = h->created_ns;
	h->state_slot_count = BB__STATE_SLOTS;
	h->state_slot_size = BB__STATE_SLOT_SIZE;
	h->state_table_offset = l->state_off;
	h->modules_size = BB__MODULES_SIZE;
	h->modules_offset = l->mod_off;
	/* 3.2: the crash slots; the 3.1 area stays 0 (FORMAT.md §11) */
	h->crash_slot_size = BB_CRASH_SLOT_SIZE;
	h->crash_slots_offset = l->stk_off;
	h->crash_slots_count = l->nstk;
	h->seg_count = l->nsegs;
	h->seg_size = l->seg_size;
	h->seg_table_offset = l->seg_off;
	h->seg_data_offset = l->seg_data_off;
	h->thread_count = l->nslots;
	h->seg_desc_size = BB_SEG_DESC_SIZE;
	h->thread_table_offset = l->slot_off;
	h->thread_slot_size = BB_THREAD_SLOT_SIZE;
	h->last_words_offset = l->lw_off;
	h->last_words_size = BB_LAST_WORDS_SIZE;
	for (uint32_t i = 0; i < BB__RINGS; i++) {
		struct bb_ring_desc *d = box->rings[i].desc;

		d->kind = i == BB__SHARED_IDX ? BB_RING_SHARED : BB_RING_IMPORTANT;
		d->claim = BB_RING_OWNED;
		d->data_offset = l->data_off + l->ring_size * i;
	}
	/* Every slot's log starts with no segment, at ordinal 0. */
	for (uint32_t i = 0; i < l->nslots; i++)
		box->slots[i].queue = BB_QUEUE(BB_SEG_NONE, 0);
}

/* Plan, create, map, fill in, publish. */
/* The program's release (bb_options.release or BLACKBOX_RELEASE), copied
 * at bb_init_opts(): a child of fork() that creates its box later sets it
 * too, whatever became of the caller's string. */
static char bb__release[BB_RELEASE_MAX + 1];

static int bb__open(const struct bb_options *o, const char *dir, size_t size)
{
	struct bb__layout l;
	struct bb__box *box;
	uint64_t starttime, removed;
	uint32_t seq = 0;
	mode_t mode = o->mode ? o->mode & 0777 : 0600;
	int fd, ret;

	ret = bb__plan(size, o->segment_count, o->segment_size, &l);
	if (ret < 0)
		return ret;
	/* The crash-loop budget: this uid's dead boxes first (budget.c). */
	ret = bb__budget_trim(o, dir, l.box_size, &removed);
	if (ret < 0)
		return ret;
	box = bb__box_alloc(&l);
	if (!box)
		return -ENOMEM;
	box->shm = dir == NULL;
	if (bb__proc_starttime(0, &starttime) < 0)
		starttime = 0; /* no /proc: the box still works, liveness cannot */
	fd = bb__create_file(box, dir, starttime, mode, &seq);
	if (fd < 0) {
		free(box);
		return fd;
	}
	ret = bb__map_box(box, fd, &l);
	close(fd); /* the mappings keep the file */
	if (ret < 0) {
		bb__remove(box);
		bb__unmap(box);
		return ret;
	}
	bb__box_setup(box, o, &l);
	bb__write_header(box, o, &l, starttime, seq);
	/* The loaded objects, for the crash record's addresses (modules.c). */
	bb__modules_gather(box);
	/* The ready word.  Release: a reader that sees the magic (acquire)
	 * sees the whole header and tables written above. */
	BB__STORE_RELEASE(&box->hdr->magic, BB_MAGIC);

	box->f.gen = ++bb__g.gen;
	/* Publish to writers; pairs with the acquire load in bb__begin(). */
	BB__STORE_RELEASE(&bb__box, box);
	bb__budget_note(removed);
	/* the state key bb-reap sends as BB_RELEASE (a failure to set it
	 * is counted in the header's state_errors, like any bb_set()) */
	if (bb__release[0])
		bb_set("release", bb__release);
	return 0;
}

/*
 * The box of a child of fork() (docs/DESIGN.md §9 "Process pools"): a
 * worker's records, not the service's: bb_options.fork_size, or
 * BLACKBOX_FORK_SIZE, or BB_DEFAULT_FORK_SIZE, at most @size; with
 * segment_count and no size given, the parent's.  Planned here, so that a
 * size too small fails bb_init() rather than the child's first write.
 * Stored in @o->fork_size; 0 or -EINVAL.
 */
static int bb__fork_size_of(struct bb_options *o, size_t size)
{
	const char *env = (o->flags & BB_OPT_NO_ENV) ? NULL : secure_getenv("BLACKBOX_FORK_SIZE");
	struct bb__layout l;
	size_t fs = o->fork_size;

	bool asked;
	int ret;

	if (!fs && env && *env && !(fs = bb__parse_size(env)))
		return -EINVAL;
	asked = fs != 0;
	if (!fs)
		fs = o->segment_count ? size : BB_DEFAULT_FORK_SIZE;
	if (size && fs > size)
		fs = size;
	o->fork_size = fs;
	if (fs == size)
		return 0;
	ret = bb__plan(fs, o->segment_count, o->segment_size, &l);
	/* The default child size cannot hold the caller's own segment
	 * geometry (a large segment_size): the child gets the parent's size
	 * rather than bb_init() failing over a size nobody asked for.  A
	 * fork size asked for (option or environment) that cannot be planned
	 * stays an error. */
	if (ret < 0 && !asked) {
		o->fork_size = size;
		return 0;
	}
	return ret;
}

BB_EXPORT int bb_init_opts(const struct bb_options *opts)
{
	struct bb_options o = { 0 };
	const char *env, *dir;
	size_t size;
	int ret;

	if (opts)
		o = *opts;
	pthread_once(&bb__once, bb__once_init);
	if (BB__LOAD_ACQUIRE(&bb__box))
		return -EALREADY;
	{
		const char *rel = o.release;

		if ((!rel || !*rel) && !(o.flags & BB_OPT_NO_ENV))
			rel = secure_getenv("BLACKBOX_RELEASE");
		if (rel && strlen(rel) > BB_RELEASE_MAX)
			return -EINVAL;
		snprintf(bb__release, sizeof(bb__release), "%s", rel ? rel : "");
	}
	if (o.fork_policy != BB_FORK_NEW_BOX && o.fork_policy != BB_FORK_DISABLE)
		return -EINVAL;
	/* secure_getenv, here and for every BLACKBOX_* variable: in a set-uid
	 * or set-gid program (AT_SECURE) the environment is the invoking
	 * user's, not the program's, and is ignored (bb_init(3)) */
	if (!(o.flags & BB_OPT_NO_ENV)) {
		env = secure_getenv("BLACKBOX_DISABLE");
		if (env && *env && strcmp(env, "0")) {
			bb__g.disabled = true;
			return 0;
		}
	}
	size = o.size;
	dir = o.dir;
	if (!(o.flags & BB_OPT_NO_ENV)) {
		env = secure_getenv("BLACKBOX_SIZE");
		if (!size && env && *env) {
			size = bb__parse_size(env);
			if (!size)
				return -EINVAL;
		}
		env = secure_getenv("BLACKBOX_DIR");
		if (!dir && env && *env)
			dir = env;
	}
	/* BLACKBOX_CLOCK, BLACKBOX_CRC, the clock option (write.c). */
	if (bb__writer_env(&o) < 0)
		return -EINVAL;
	if (!size && !o.segment_count)
		size = BB_DEFAULT_SIZE;
	ret = bb__fork_size_of(&o, size);
	if (ret < 0)
		return ret;
	if (dir && strlen(dir) >= sizeof(bb__g.dir) - 96)
		return -ENAMETOOLONG;

	/* Remember the resolved configuration for a child of fork(). */
	bb__g.opts = o;
	bb__g.opts.size = size;
	bb__g.have_dir = dir != NULL;
	if (dir) {
		bb__strlcpy(bb__g.dir, dir, sizeof(bb__g.dir));
		bb__g.opts.dir = bb__g.dir;
	}
	bb__g.disabled = false;
	bb__g.fork_pending = 0;
	ret = bb__open(&bb__g.opts, bb__g.opts.dir, size);
	/* The crash handler (crash.c), once the box exists. */
	if (ret == 0 && (ret = bb__crash_init(&bb__g.opts)) < 0)
		bb_close();
	return ret;
}

BB_EXPORT int bb_init(size_t size)
{
	struct bb_options o = { .size = size };

	return bb_init_opts(&o);
}

BB_EXPORT int bb_close(void)
{
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	struct timespec ts;

	if (!box)
		return bb__g.disabled ? 0 : -ENODEV;
	/* Writers that load NULL from here on return -ENODEV; the caller
	 * guarantees none is mid-write (blackbox.h), so unmapping is safe. */
	BB__STORE_RELEASE(&bb__box, (struct bb__box *)NULL);
	/* A crashed box (bb_crash_record(), then a clean-up path) keeps its
	 * phase and its file, as in bb__atexit() (relaxed, as there). */
	if (BB__LOAD_RELAXED(&box->hdr->phase) != BB_PHASE_CRASHED) {
		clock_gettime(CLOCK_REALTIME, &ts);
		/* As in bb__atexit(): the time, then the phase with release. */
		BB__STORE_RELAXED(&box->hdr->phase_ns,
				  (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
		BB__STORE_RELEASE(&box->hdr->phase, (uint32_t)BB_PHASE_CLOSED);
		bb__remove(box);
		bb__budget_release();
	}
	bb__unmap(box);
	bb__tls.f.window = NULL;
	return 0;
}

BB_EXPORT int bb_path(char *buf, size_t len)
{
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	size_t n;

	if (!box)
		return -ENODEV;
	if (!buf)
		return -EINVAL;
	n = strlen(box->path);
	if (n >= len)
		return -ERANGE;
	memcpy(buf, box->path, n + 1);
	return (int)n;
}

/* ---- slow paths of a write ---------------------------------------------- */

bool bb__disabled(void)
{
	return bb__g.disabled;
}

/* No box: disabled (0), the child of a fork creating its box lazily, or an
 * error. */
int bb__nobox(void)
{
	int expect = 1;

	if (bb__g.disabled)
		return 0;
	/* The child of a fork may have started threads before its first
	 * write: the CAS elects the one thread that creates the box; the
	 * others return -ENODEV (record dropped) meanwhile.  The new box is
	 * published by bb__open()'s release store of bb__box, which the
	 * acquire load in bb__begin() pairs with; fork_pending itself guards
	 * nothing else, so its later plain reset needs no ordering. */
	if (bb__g.fork_pending == 1 &&
	    BB__CAS_ACQUIRE(&bb__g.fork_pending, &expect, 2)) {
		int ret = bb__open(&bb__g.opts, bb__g.have_dir ? bb__g.dir : NULL,
				   bb__g.opts.fork_size);

		if (ret < 0) {
			bb__g.disabled = true;   /* say it once, then stay quiet */
			return ret;
		}
		bb__g.fork_pending = 0;
		return -EAGAIN;  /* bb__begin() picks up the new box */
	}
	return -ENODEV;
}

/* Shared-ring writes between two tries for a segment by a thread that got
 * none. */
#define BB__SEG_RETRY 256u

/*
 * Slow path of bb__begin(): the thread has no window in this box yet (it
 * joins), has none to get (shared ring), or is nested (shared ring).  The
 * caller has entered the nesting section (depth >= 1).
 * Returns the thread's window, the shared ring locked
 * (&box->rings[BB__SHARED_IDX]), or NULL for -EBUSY.
 */
struct bb__sink *bb__begin_slow(struct bb__box *box, struct bb__tls *t)
{
	struct bb__sink *shared = &box->rings[BB__SHARED_IDX];
	int32_t *lock = &shared->desc->lock;
	bool overflow = false;

	if (!t->tid)
		t->tid = bb__gettid();
	if (t->f.depth == 1 && !t->exited &&
	    (t->f.gen != box->f.gen || (!t->f.window && ++t->retry >= BB__SEG_RETRY))) {
		struct bb__sink *w;

		t->f.gen = box->f.gen;
		t->f.window = NULL;
		t->retry = 0;
		w = bb__seg_join(box, t);
		if (w)
			return w;
	}
	overflow = t->f.depth == 1 && !t->exited;
	/* The shared ring: a bounded try-lock (its acquire pairs with the
	 * release store of 0 in bb__end_shared()).  Drop counters are
	 * statistics: relaxed, ordered with nothing (readers report whatever
	 * value they see). */
	switch (bb__ring_trylock(lock, t->tid)) {
	case 1:
		if (overflow)
			BB__FETCH_ADD(&box->hdr->overflow, 1);
		return shared;
	case 0:   /* we interrupted our own shared-ring write */
		BB__FETCH_ADD(&box->hdr->dropped_nested, 1);
		return NULL;
	default:
		BB__FETCH_ADD(&box->hdr->dropped_busy, 1);
		return NULL;
	}
}

/*
 * bb_thread_init - what this thread's first write does, without a
 * record: its thread slot and first segment (bb__seg_join()), and, with
 * the crash handler on, its alternate signal stack.
 */
BB_EXPORT int bb_thread_init(void)
{
	/* Acquire pairs with the release store publishing the box, as in
	 * bb__begin(). */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	struct bb__tls *t = &bb__tls;
	int ret = 0, alt;

	if (!box) {
		/* Disabled (0), no box (-ENODEV), or the child of a fork
		 * whose box is made now (-EAGAIN: take it). */
		ret = bb__nobox();
		if (ret != -EAGAIN)
			return ret;
		box = BB__LOAD_ACQUIRE(&bb__box);
		if (!box)
			return -ENODEV;
		ret = 0;   /* the box is made: this call goes on as in the parent */
	}
	if (t->f.depth)
		return -EBUSY;   /* a signal handler interrupted a write of ours */
	if (!t->tid)
		t->tid = bb__gettid();
	/* The nesting section, as a write's: a signal handler that writes
	 * while we join goes to the shared ring, never to a window we are
	 * setting up. */
	t->f.depth = 1;
	BB__SIGNAL_FENCE();
	if (!t->exited && (t->f.gen != box->f.gen || !t->f.window)) {
		t->f.gen = box->f.gen;
		t->f.window = NULL;
		t->retry = 0;
		if (!bb__seg_join(box, t))
			ret = -ENOSPC;
	}
	BB__SIGNAL_FENCE();
	t->f.depth = 0;
	if (t->exited)
		return -ESRCH;   /* in a TLS destructor: the thread is leaving */
	/* The alternate stack: given by the join above (whose failure to
	 * make one it ignores: a write goes on without), or now, when there
	 * was no slot (its records go to the shared ring).  Freed at the
	 * thread's exit by bb__thread_exit(). */
	alt = bb__crash_thread_start(t);
	if (t->altstack)
		bb__thread_watch(box);
	return alt < 0 ? alt : ret;
}

void bb__thread_started(void)
{
	/* Acquire pairs with the release store publishing the box. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

	/* The key's value only makes bb__thread_exit() run at the thread's
	 * exit, which frees the stack. */
	if (bb__crash_thread_start(&bb__tls) == 0 && bb__tls.altstack && bb__g.key_ok)
		pthread_setspecific(bb__g.key, box ? (void *)box : (void *)&bb__g);
}

void bb__end_shared(struct bb__box *box, struct bb__tls *t)
{
	/* Release: our head/tail updates (process-local copies and the
	 * descriptor) are visible to the next holder's acquire CAS. */
	BB__STORE_RELEASE(&box->rings[BB__SHARED_IDX].desc->lock, 0);
	BB__SIGNAL_FENCE();
	t->f.depth--;
}

/*
 * bb__ring_marks - the mark table of @r, a ring of the open box, or NULL
 * (a ring without segments, or not of the open box: the caller walks).
 */
static uint64_t *bb__ring_marks(const struct bb__sink *r)
{
	/* Acquire pairs with the release store publishing the box in
	 * bb_init(), as in bb__begin(): the box, its rings and its mark table
	 * are complete before we use them. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	uintptr_t off;

	if (!box || r->segmask == UINT64_MAX)
		return NULL;
	/* Which ring of the box, by address (integers: comparing pointers
	 * into different objects would be undefined). */
	off = (uintptr_t)r - (uintptr_t)box->rings;
	if (off % sizeof(*r) || off / sizeof(*r) >= BB__RINGS)
		return NULL;
	return box->marks + off / sizeof(*r) * BB__MARKS;
}

/* log2 of the segment size of @r, a ring with segments (a power of two:
 * a shift, not a division, on a path every segment takes). */
static inline unsigned bb__ring_segshift(const struct bb__sink *r)
{
	return (unsigned)__builtin_ctzll(r->segmask + 1);
}

/*
 * bb__ring_mark - the record ending at @end crossed into segment
 * end / seg (seg = segmask + 1): the first record of that segment starts
 * at @end, the next write's position.  Called by the ring's one writer,
 * before the record is written (bb__sink_room()).  AS-safe.
 */
BB_EXPORT void bb__ring_mark(struct bb__sink *r, uint64_t end)
{
	uint64_t *m = bb__ring_marks(r);

	if (m)
		m[(end >> bb__ring_segshift(r)) % BB__MARKS] = end;
}

/*
 * bb__ring_make_room - advance tail until a record ending at @end fits
 * (end - tail <= ring size) and publish it before any old byte is
 * overwritten (FORMAT.md §7 step 1).  AS-safe, no lock, no system call.
 *
 * With mark segments, tail jumps to the first record of the segment at or
 * after the first byte the record needs, end - size: at most a segment
 * plus one record beyond it (accepted up to 2 segments: a 32nd of the
 * ring or less freed early),
 * and the next calls come a segment later.  The mark is the writer's own
 * process-local note, but it is checked before it is used: a record start
 * of this lap (not below end - size), not freed (>= tail), written (<=
 * head), 8-aligned, and at most 2 segments past what is needed.  A mark
 * that fails (the first lap, a segment a long record jumped over, a ring
 * written by code built before marks) leaves the walk below.
 *
 * The walk: over the oldest records, one by one.  They are committed (we
 * are their only writer), but the box is memory a crashing process may
 * have scribbled on: a length that makes no sense drops the whole ring
 * instead of looping.
 */
BB_EXPORT void bb__ring_make_room(struct bb__sink *r, uint64_t end)
{
	uint64_t size, need, tail;
	const uint64_t *m;

	if (!r->desc) {
		/* A thread's window (only its thread writes through it): its
		 * segment is full, the record goes to the next one, from the
		 * same log position (segment.c).  The steady state,
		 * once the pool is drained, of a thread holding 2 or more
		 * segments is its own oldest: here, without a call. */
		struct bb__tls *t = &bb__tls;
		struct bb__box *box = r->box;
		struct bb_thread_slot *s = &box->slots[t->slot];
		const uint32_t c = t->seg;
		/* Acquire: see bb__seg_pop(). */
		uint64_t q = BB__LOAD_ACQUIRE(&s->queue), own;
		uint32_t i;

		/* Only when no other log should give first (segment.c,
		 * bb__seg_next()): no exited thread's log holds a segment,
		 * and no live log can hold 2 more than we do (we hold more
		 * than half the box), or we looked lately and none did. */
		if (bb_likely(BB_QUEUE_IDX(q) != c &&
			      BB__LOAD_RELAXED(&box->hdr->seg_next) >= box->nsegs &&
			      !BB__LOAD_RELAXED(&box->retired) &&
			      (2 * (t->ord - BB_QUEUE_ORD(q) + 1) + 2 > box->nsegs || t->calm))) {
			if (t->calm)
				t->calm--;
			i = bb__seg_pop(box, s, q, &own);
			if (bb_likely(i != BB_SEG_NONE)) {
				bb__seg_use(box, t, c, i, own, r->head, t->ord + 1);
				return;
			}
		}
		bb__seg_next(box, t, c, r->head);
		return;
	}
	size = r->mask + 1;
	need = end - size;
	tail = r->tail;
	m = bb__ring_marks(r);

	if (m) {
		uint64_t seg = r->segmask + 1;
		uint64_t b = m[((need + seg - 1) >> bb__ring_segshift(r)) % BB__MARKS];

		if (b - need <= 2 * seg && b - tail <= r->head - tail && !(b & 7)) {
			tail = b;
			goto publish;
		}
	}
	while (end - tail > size) {
		const struct bb_record_hdr *h = (const void *)(r->data + (tail & r->mask));
		uint64_t stride = BB_RECORD_STRIDE(h->len);

		if (h->len < BB_RECORD_HDR_SIZE || stride > size || tail + stride > r->head) {
			tail = r->head;  /* drop every old record */
			break;
		}
		tail += stride;
	}
publish:
	r->tail = tail;
	BB__STORE_RELAXED(&r->desc->tail, tail);
	/* Orders the new tail before the busy seq and the record bytes that
	 * overwrite what it released.  Pairs with the acquire fence in
	 * bb__extent_read(): a reader that copied overwritten bytes sees this
	 * tail and drops the copy. */
	BB__FENCE_RELEASE();
}
