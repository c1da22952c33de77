/* SPDX-License-Identifier: MIT */
/*
 * crash.c - the crash record: on a fatal signal (the crash handler) or when
 * the program says it is dying (bb_crash_record()), write one record into
 * the header's crash area (docs/FORMAT.md §11 "Crash area") and mark the
 * box CRASHED.  After a signal, step aside so that the signal does exactly
 * what it would have done without us: the previous disposition is put back
 * and the signal happens again, so a handler the program installed runs as
 * the kernel would have run it (its stack, mask and flags), and a default
 * action kills with the original exit status and core.
 *
 * Also every other thread's stack at a crash (the crash stacks, asked for
 * with a real-time signal), the per-thread alternate signal stacks that
 * make the handler run on a stack overflow, and bb_crash_rearm().
 *
 * What runs in the handler and in bb_crash_record() is async-signal-safe:
 * no malloc, no stdio, no lock the interrupted code can hold.  Each call
 * says why where it is made; the unwinder's case is at bb__walk().
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "crc32c.h"
#include "writer.h"

/* Signals we catch.  SIGTRAP and SIGSYS too: a stray int3 or a seccomp
 * kill-by-signal is a death worth recording. */
static const int bb__crash_sigs[] = {
	SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
};
#define BB__NSIGS (sizeof(bb__crash_sigs) / sizeof(bb__crash_sigs[0]))

/* The dispositions we replaced, by index in bb__crash_sigs.  Written
 * before our handler is installed for that signal (sigaction is the
 * barrier: a handler cannot run before the sigaction call that installs
 * it returns); bb_crash_rearm() writes one only while ours is not the
 * signal's disposition. */
static struct sigaction bb__prev[BB__NSIGS];
static bool bb__installed;        /* handler turned on (bb_init thread only) */
static bool bb__altstacks;        /* give each claiming thread an alt stack */
static size_t bb__alt_size;       /* usable bytes of an alt stack */
static size_t bb__page;
/* tid of the thread writing the crash record; 0 = none.  Lets a second
 * crashing thread wait (bounded) for the first to finish. */
static int32_t bb__crash_tid;

/*
 * Frames kept: the innermost BB__CRASH_FIRST and the outermost
 * BB__CRASH_LAST of at most BB__CRASH_WALK walked, so that a deep
 * recursion (a stack overflow) still shows where it started.  Signal
 * trampolines among them: at most BB__CRASH_TRAMPS.
 */
#define BB__CRASH_FIRST  64u
#define BB__CRASH_LAST   64u
#define BB__CRASH_FRAMES (BB__CRASH_FIRST + BB__CRASH_LAST)
#define BB__CRASH_WALK   (1u << 20)
#define BB__CRASH_TRAMPS 8u
/* Our own frames above the first kept one (handler, record writer,
 * walker, unwinder): a walk that has not found the start by then gives
 * up rather than keep a stack that is not the caller's. */
#define BB__CRASH_OWN    32u

/* Upper bound of the record: envelope, map head, every key of both kinds
 * (text key + largest value), CRC.  Widths: a uint64 is 9 bytes of CBOR,
 * an int32 5, a text head 2 up to 255 bytes, 3 for a frame count. */
#define BB__KEY(s)       (1u + sizeof(s) - 1)
_Static_assert(BB_RECORD_HDR_SIZE + 1 +
	       BB__KEY("kind") + 7 + BB__KEY("signal") + 5 + BB__KEY("code") + 5 +
	       BB__KEY("addr") + 9 + BB__KEY("sp") + 9 +
	       BB__KEY("reason") + 2 + BB_CRASH_REASON_MAX +
	       BB__KEY("tid") + 5 + BB__KEY("thread") + 16 +
	       BB__KEY("frames") + 3 + BB__CRASH_FRAMES * 9 +
	       BB__KEY("omitted") + 1 + 5 + 9 +
	       BB__KEY("trampolines") + 1 + BB__CRASH_TRAMPS * 2 +
	       BB_CRC_SIZE <= BB_CRASH_SIZE,
	       "crash record fits the crash area");

/* A crash slot's "thread" record (another thread's stack): the innermost
 * BB__SLOT_FIRST and the outermost BB__SLOT_LAST of the frames kept,
 * so that it fits a slot of BB_CRASH_SLOT_SIZE bytes. */
#define BB__SLOT_FIRST 48u
#define BB__SLOT_LAST  40u
_Static_assert(BB__SLOT_FIRST <= BB__CRASH_FIRST && BB__SLOT_LAST <= BB__CRASH_LAST,
	       "a slot keeps a part of what the walk keeps");
_Static_assert(BB_RECORD_HDR_SIZE + 1 +
	       BB__KEY("kind") + 7 + BB__KEY("sp") + 9 +
	       BB__KEY("tid") + 5 + BB__KEY("thread") + 16 +
	       BB__KEY("frames") + 3 + (BB__SLOT_FIRST + BB__SLOT_LAST) * 9 +
	       BB__KEY("omitted") + 1 + 5 + 9 +
	       BB__KEY("trampolines") + 1 + BB__CRASH_TRAMPS * 2 +
	       BB_CRC_SIZE <= BB_CRASH_SLOT_SIZE,
	       "a thread's record fits a crash slot");

static int32_t bb__tid(void)
{
	return (int32_t)syscall(SYS_gettid);
}

static int bb__sig_index(int sig)
{
	for (unsigned i = 0; i < BB__NSIGS; i++)
		if (bb__crash_sigs[i] == sig)
			return (int)i;
	return -1;
}

/* The interrupted instruction and stack pointer from the kernel's saved
 * context (0 where unknown). */
static void bb__uc_regs(const ucontext_t *uc, uint64_t *pc, uint64_t *sp)
{
	*pc = *sp = 0;
	if (!uc)
		return;
#if defined(__x86_64__)
	*pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	*sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__i386__)
	*pc = (uint64_t)uc->uc_mcontext.gregs[REG_EIP];
	*sp = (uint64_t)uc->uc_mcontext.gregs[REG_ESP];
#elif defined(__aarch64__)
	*pc = (uint64_t)uc->uc_mcontext.pc;
	*sp = (uint64_t)uc->uc_mcontext.sp;
#endif
}

/*
 * The return address of a call into a bad address, when the interrupted
 * PC lies in no loaded object (a NULL or garbage function pointer): on
 * x86 the call left it at the stack pointer, on arm64 in the link
 * register.  Read with process_vm_readv() on ourselves, a system call that
 * returns EFAULT where a load would fault again.  0 when unknown.
 */
static uint64_t bb__uc_caller(const ucontext_t *uc)
{
#if defined(__x86_64__) || defined(__i386__)
	uintptr_t ra = 0;
	uint64_t pc, sp;
	struct iovec here = { &ra, sizeof(ra) }, there;

	bb__uc_regs(uc, &pc, &sp);
	there = (struct iovec){ (void *)(uintptr_t)sp, sizeof(ra) };
	if (!uc || syscall(SYS_process_vm_readv, getpid(), &here, 1UL, &there, 1UL, 0UL) !=
	    (long)sizeof(ra))
		return 0;
	return (uint64_t)ra;
#elif defined(__aarch64__)
	return uc ? (uint64_t)uc->uc_mcontext.regs[30] : 0;
#else
	(void)uc;
	return 0;
#endif
}

/* @pc lies in a loaded object (so the unwinder can look at it without
 * faulting).  _dl_find_object() is documented async-signal-safe and
 * lock-free (glibc >= 2.35); without it, assume yes (the unwinder's own
 * lookup then decides, as before). */
static bool bb__pc_in_object(uint64_t pc)
{
#ifdef DLFO_STRUCT_HAS_EH_DBASE
	struct dl_find_object dlfo;

	return _dl_find_object((void *)(uintptr_t)pc, &dlfo) == 0;
#else
	(void)pc;
	return true;
#endif
}

/* ---- the stack walk -------------------------------------------------------- */

/* libgcc's unwinder, loaded at bb_init() (bb__unwind_load()); NULL until
 * then or when it cannot be loaded (a walk then keeps no frame). */
typedef _Unwind_Reason_Code (*bb__backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*bb__getipinfo_fn)(struct _Unwind_Context *, int *);
static bb__backtrace_fn bb__unwind_backtrace;
static bb__getipinfo_fn bb__unwind_getipinfo;

struct bb__walk {
	uint64_t from;          /* fatal: keep from the frame with this IP ... */
	bool     from_signal;   /* ... signal: from the first signal frame */
	uint64_t tramp;         /* our handler's return address (signal) */
	bool     stop_at_tramp; /* the interrupted PC is in no object: stop */
	bool     keeping;
	uint32_t own;           /* frames passed before the first kept */
	uint32_t depth;         /* frames kept or counted */
	uint64_t first[BB__CRASH_FIRST];
	uint64_t last[BB__CRASH_LAST]; /* ring: depth d at d % BB__CRASH_LAST */
	uint32_t tramps[BB__CRASH_TRAMPS]; /* depths of signal trampolines */
	uint32_t ntramps;
};

static _Unwind_Reason_Code bb__walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct bb__walk *w = arg;
	int exact = 0;
	/* exact: the frame was interrupted by a signal, its IP is the
	 * instruction itself, not a return address (libgcc knows it from the
	 * signal trampoline's unwind rule). */
	uint64_t ip = (uint64_t)bb__unwind_getipinfo(ctx, &exact);

	if (!w->keeping) {
		if (w->from_signal ? exact != 0 : ip == w->from) {
			w->keeping = true;
		} else {
			/* Unwinding on from our trampoline would make libgcc
			 * read the code at the interrupted PC, which faults
			 * when it lies in no object. */
			if (w->tramp && ip == w->tramp && w->stop_at_tramp)
				return _URC_END_OF_STACK;
			return ++w->own > BB__CRASH_OWN ? _URC_END_OF_STACK : _URC_NO_REASON;
		}
	}
	if (!ip)   /* the outermost frame's return address */
		return _URC_END_OF_STACK;
	if (exact && w->depth > 0 && w->ntramps < BB__CRASH_TRAMPS)
		w->tramps[w->ntramps++] = w->depth - 1;   /* the frame before: a trampoline */
	if (w->depth < BB__CRASH_FIRST)
		w->first[w->depth] = ip;
	else
		w->last[w->depth % BB__CRASH_LAST] = ip;
	return ++w->depth >= BB__CRASH_WALK ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/*
 * bb__walk - walk the calling thread's stack into @w.
 *
 * Why libgcc's unwinder, and why it is safe here.  _Unwind_Backtrace()
 * walks the .eh_frame tables, which (unlike a frame-pointer walk) works
 * for code built without frame pointers, i.e. all of Debian; it crosses
 * signal frames (libgcc recognises the kernel's sigreturn trampoline) and
 * reads only the stack being walked, so it works on the alternate stack
 * after a stack overflow.  Its first-call costs are paid in bb_init()
 * (bb__crash_init()): libgcc_s is dlopen()ed there, as glibc's
 * backtrace() would do at its first call (the library itself needs no
 * more than libc), and a warm-up walk sets up libgcc's register size
 * table.  After that a walk allocates nothing and takes no lock: libgcc
 * finds the unwind table of an address with
 * _dl_find_object() (glibc >= 2.35 with gcc >= 12, Debian 12's pair),
 * which is lock-free and async-signal-safe; an older pair would fall back
 * to dl_iterate_phdr(), whose loader lock could deadlock only if the crash
 * hit inside the loader itself.
 *
 * A stack the crash scribbled over can make the unwinder fault: in the
 * handler that second fault is blocked (sa_mask), so the kernel kills the
 * process with it at once, never a loop; the header already says CRASHED
 * (bb__crash_write()).  The walk is bounded (BB__CRASH_WALK frames), so a
 * stack whose frames point at each other cannot make it loop either.
 */
static __attribute__((noinline)) void bb__walk(struct bb__walk *w)
{
	/* Acquire pairs with the release store in bb__unwind_load(): both
	 * pointers are set. */
	bb__backtrace_fn bt = BB__LOAD_ACQUIRE(&bb__unwind_backtrace);

	if (bt)
		bt(bb__walk_frame, w);
}

/* Load libgcc's unwinder (not AS-safe: dlopen; bb_init() only).  The
 * handle is kept for the life of the process.  Returns true when this
 * loaded libgcc_s into the process (it was not there before). */
static bool bb__unwind_load(void)
{
	void *h, *bts, *ips;
	bb__backtrace_fn bt;
	bool loaded = false;

	if (BB__LOAD_ACQUIRE(&bb__unwind_backtrace))
		return false;
	h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h) {
		h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
		loaded = h != NULL;
	}
	if (!h)
		return false;   /* no unwinder: a crash record keeps its first frame only */
	bts = dlsym(h, "_Unwind_Backtrace");
	ips = dlsym(h, "_Unwind_GetIPInfo");
	if (!bts || !ips)
		return loaded;
	/* memcpy: ISO C has no cast from dlsym()'s object pointer to a
	 * function pointer (POSIX guarantees the representation). */
	memcpy(&bt, &bts, sizeof(bt));
	memcpy(&bb__unwind_getipinfo, &ips, sizeof(bb__unwind_getipinfo));
	/* Release: a walk that sees bt sees _Unwind_GetIPInfo too. */
	BB__STORE_RELEASE(&bb__unwind_backtrace, bt);
	return loaded;
}

/* The kept frames, in order, into @out; their count.  *@omit_at and
 * *@omitted: the frames left out between the innermost and the outermost
 * ones (0 when none). */
static uint32_t bb__walk_frames(const struct bb__walk *w, uint64_t *out, uint32_t *omit_at,
				uint32_t *omitted)
{
	uint32_t keep_from = w->depth > BB__CRASH_FRAMES ? w->depth - BB__CRASH_LAST
				: BB__CRASH_FIRST;
	uint32_t n = 0;

	for (uint32_t d = 0; d < w->depth && d < BB__CRASH_FIRST; d++)
		out[n++] = w->first[d];
	for (uint32_t d = keep_from; d < w->depth; d++)
		out[n++] = w->last[d % BB__CRASH_LAST];
	*omit_at = BB__CRASH_FIRST;
	*omitted = w->depth > BB__CRASH_FRAMES ? keep_from - BB__CRASH_FIRST : 0;
	return n;
}

/* The index among the kept frames of the frame at depth @d, or -1. */
static int bb__kept_index(const struct bb__walk *w, uint32_t d)
{
	uint32_t keep_from = w->depth > BB__CRASH_FRAMES ? w->depth - BB__CRASH_LAST
				: BB__CRASH_FIRST;

	if (d < BB__CRASH_FIRST)
		return (int)d;
	if (d >= keep_from && d < w->depth)
		return (int)(BB__CRASH_FIRST + d - keep_from);
	return -1;
}

/* ---- glibc's abort message ---------------------------------------------------- */

/*
 * glibc's assert() (and __libc_fatal(): a heap check, a stack smash)
 * writes its message, "prog: file.c:12: fn: Assertion `x > 0' failed.",
 * into a buffer it maps and publishes in __abort_msg before it calls
 * abort(), for a debugger to find in a core.  That is the assertion's own
 * words: a SIGABRT record takes them as its reason.  __abort_msg is
 * GLIBC_PRIVATE: found with dlsym() at bb_init() (bb__abort_load()), NULL
 * with another libc, and read with process_vm_readv() (a system call that
 * returns EFAULT where a load would fault), so a layout that changed
 * yields no reason, never a fault.
 */
struct bb__abort_msg {
	uint32_t size;   /* bytes of the mapping, this header included */
	char msg[];      /* NUL-terminated */
};

static struct bb__abort_msg *const *bb__abort_msgp;

static void bb__abort_load(void)
{
	void *p = dlsym(RTLD_DEFAULT, "__abort_msg");

	/* Relaxed: set before the handler is installed (sigaction is the
	 * barrier, as for bb__prev). */
	BB__STORE_RELAXED(&bb__abort_msgp, (struct bb__abort_msg *const *)p);
}

/* Copy @n bytes at @from into @to with process_vm_readv() on ourselves
 * (AS-safe: a system call); false when any of them cannot be read. */
static bool bb__peek(void *to, const void *from, size_t n)
{
	struct iovec here = { to, n }, there = { (void *)(uintptr_t)from, n };

	return syscall(SYS_process_vm_readv, getpid(), &here, 1UL, &there, 1UL, 0UL) == (long)n;
}

/* glibc's abort message into @buf (BB_CRASH_REASON_MAX + 1 bytes), its
 * trailing newline dropped, cut at a character boundary; its length, 0
 * when there is none. */
static size_t bb__abort_reason(char *buf)
{
	struct bb__abort_msg *const *pp = BB__LOAD_RELAXED(&bb__abort_msgp);
	struct bb__abort_msg *m;
	uint32_t size;
	size_t n, len;

	if (!pp || !bb__peek(&m, pp, sizeof(m)) || !m ||
	    !bb__peek(&size, &m->size, sizeof(size)) || size <= sizeof(*m))
		return 0;
	n = size - sizeof(*m);
	if (n > BB_CRASH_REASON_MAX)
		n = BB_CRASH_REASON_MAX;
	/* the mapping may end before a page does: read what can be read */
	while (n && !bb__peek(buf, m->msg, n))
		n = n > 64 ? n / 2 : 0;
	buf[n] = '\0';
	len = strnlen(buf, n);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	return bb__utf8_cut(buf, len);
}

/* ---- the record -------------------------------------------------------------- */

/* What a crash record says; the rest (thread, time, stack) is taken where
 * it is written. */
struct bb__crash_in {
	bool fatal;               /* bb_crash_record(), else a signal */
	bool thread;              /* a crash stack: another thread's, asked for */
	int sig;
	const siginfo_t *si;
	const ucontext_t *uc;
	void *tramp;              /* the handler's return address */
	const char *reason;       /* NULL or the reason, cut: fatal, or a
	                           * SIGABRT's from glibc (bb__abort_reason()) */
	size_t reason_len;
	uint64_t from;            /* fatal: the return address into the caller */
};

static uint8_t *bb__crash_text(uint8_t *p, const char *s, size_t n)
{
	p = bb__cbor_put_head(3, n, p);
	memcpy(p, s, n);
	return p + n;
}

static uint64_t bb__realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);   /* AS-safe (POSIX) */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* si_addr means something: a fault the kernel raised at an address (not
 * a signal someone sent, whose union holds the sender's pid and uid, and
 * not SI_KERNEL, which the kernel sends without an address: an int3, a
 * general protection fault). */
static bool bb__has_addr(int sig, const siginfo_t *si)
{
	if (!si || si->si_code <= 0 || si->si_code == SI_KERNEL)
		return false;
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP;
}

/*
 * Write the crash record and mark the header.  The first crash in the
 * process wins the area (a CAS from EMPTY to BUSY): a later or concurrent
 * one leaves it alone, waiting (bounded) for another thread still writing
 * it, and returns -EEXIST; a later signal only adds its number to the
 * header when the record came from bb_crash_record() (phase_signal 0).
 */
static void bb__crash_fill(struct bb__box *box, uint8_t *area, const struct bb__crash_in *in,
			   int32_t tid);
static void bb__crash_ask_all(struct bb__box *box, int32_t tid, uint32_t first);

static int bb__crash_write(struct bb__box *box, const struct bb__crash_in *in)
{
	struct bb_header *h = box->hdr;
	struct bb_record_hdr *rec = (struct bb_record_hdr *)(void *)h->crash;
	uint32_t *seq = &rec->seq;
	uint32_t expect = BB_CRASH_SEQ_EMPTY;
	int32_t tid = bb__tls.tid ? bb__tls.tid : bb__tid();

	if (!BB__CAS_ACQUIRE(seq, &expect, (uint32_t)BB_CRASH_SEQ_BUSY)) {
		int32_t writer = BB__LOAD_RELAXED(&bb__crash_tid);
		int32_t none = 0;

		/* Another thread crashed first and is writing: give it a
		 * bounded time (2 s) to finish before our own death.  A crash
		 * inside our own handler never gets here: every caught signal
		 * is blocked while it runs.  nanosleep is AS-safe. */
		for (int i = 0; i < 2000 && writer != tid &&
		     BB__LOAD_ACQUIRE(seq) == BB_CRASH_SEQ_BUSY; i++) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
		/* The record says why (bb_crash_record()); the header now
		 * also says which signal ended the process.  Nothing is
		 * ordered by this store (acquire is merely what the macro
		 * offers): a reader sees 0 or the signal. */
		if (!in->fatal)
			(void)BB__CAS_ACQUIRE(&h->phase_signal, &none, (int32_t)in->sig);
		return -EEXIST;
	}
	BB__STORE_RELAXED(&bb__crash_tid, tid);

	/* The header first: if unwinding a scribbled stack faults below,
	 * the box still says "crashed" (with the crash area busy: "crash
	 * record torn", FORMAT.md §11).  phase_ns, then phase with release,
	 * as bb__atexit() does: a reader that loads phase with acquire sees
	 * the time and the signal of that phase. */
	BB__STORE_RELAXED(&h->phase_signal, (int32_t)(in->fatal ? 0 : in->sig));
	BB__STORE_RELAXED(&h->phase_ns, bb__realtime_ns());
	BB__STORE_RELEASE(&h->phase, (uint32_t)BB_PHASE_CRASHED);

	bb__crash_fill(box, h->crash, in, tid);
	/* Then every other thread's stack (the crash stacks, 3.1). */
	bb__crash_ask_all(box, tid, 0);
	return 0;
}

/*
 * Walk the calling thread's stack and write the record @in describes into
 * @area (the crash area, or a crash stack slot), whose seq word the caller
 * made BUSY; ends with the release store of DONE.
 */
static void bb__crash_fill(struct bb__box *box, uint8_t *area, const struct bb__crash_in *in,
			   int32_t tid)
{
	struct bb_record_hdr *rec = (struct bb_record_hdr *)(void *)area;
	uint32_t *seq = &rec->seq;
	uint32_t nkeys, nf, omit_at, omitted;
	uint64_t frames[BB__CRASH_FRAMES], pc = 0, sp = 0;
	struct bb__walk w;
	char name[16] = "";
	int tramps[BB__CRASH_TRAMPS];
	uint32_t ntramps = 0;
	bool has_addr = false;
	uint8_t *p;
	uint32_t len, crc;

	prctl(PR_GET_NAME, name, 0, 0, 0);   /* a system call: AS-safe */
	name[15] = '\0';
	memset(&w, 0, sizeof(w));
	if (in->fatal) {
		w.from = in->from;
	} else {
		bb__uc_regs(in->uc, &pc, &sp);
		has_addr = !in->thread && bb__has_addr(in->sig, in->si);
		w.from_signal = true;
		w.tramp = (uint64_t)(uintptr_t)in->tramp;
		w.stop_at_tramp = in->uc && !bb__pc_in_object(pc);
	}
	bb__walk(&w);
	nf = bb__walk_frames(&w, frames, &omit_at, &omitted);
	if (!nf && !in->fatal) {
		/* The walk did not cross the signal frame: the PC alone and,
		 * for a call into no object, its caller. */
		uint64_t caller = w.stop_at_tramp ? bb__uc_caller(in->uc) : 0;

		frames[nf++] = pc;
		if (caller && bb__pc_in_object(caller))
			frames[nf++] = caller;
	} else if (!nf) {
		frames[nf++] = in->from;
	}
	for (uint32_t i = 0; i < w.ntramps; i++) {
		int k = bb__kept_index(&w, w.tramps[i]);

		if (k >= 0 && (uint32_t)k < nf)
			tramps[ntramps++] = k;
	}
	if (in->thread && nf > BB__SLOT_FIRST + BB__SLOT_LAST) {
		/* A crash slot: drop the frames between the innermost and
		 * the outermost ones.  The walk's own gap (at index
		 * BB__CRASH_FIRST) lies among them: one gap, both counted. */
		uint32_t cut = nf - BB__SLOT_FIRST - BB__SLOT_LAST;
		uint32_t n = 0;

		memmove(&frames[BB__SLOT_FIRST], &frames[nf - BB__SLOT_LAST],
			BB__SLOT_LAST * sizeof(frames[0]));
		for (uint32_t i = 0; i < ntramps; i++) {
			uint32_t k = (uint32_t)tramps[i];

			if (k < BB__SLOT_FIRST)
				tramps[n++] = (int)k;
			else if (k >= nf - BB__SLOT_LAST)
				tramps[n++] = (int)(k - cut);
		}
		ntramps = n;
		omit_at = BB__SLOT_FIRST;
		omitted += cut;
		nf = BB__SLOT_FIRST + BB__SLOT_LAST;
	}

	/* Orders the BUSY mark (the CAS) before the bytes below, as the
	 * release fence after a record's busy seq in bb__reserve(): a live
	 * reader whose copy saw them sees BUSY on its re-read. */
	BB__FENCE_RELEASE();
	nkeys = 4 + (in->fatal ? (in->reason ? 1u : 0u) :
		     in->thread ? (sp != 0) : 2u + has_addr + (sp != 0) + (in->reason_len != 0)) +
		(omitted != 0) + (ntramps != 0);
	p = area + BB_RECORD_HDR_SIZE;
	p = bb__cbor_put_head(5, nkeys, p);
	p = bb__crash_text(p, "kind", 4);
	if (in->thread) {
		p = bb__crash_text(p, "thread", 6);
		if (sp) {
			p = bb__crash_text(p, "sp", 2);
			p = bb__cbor_put_head(0, sp, p);
		}
	} else if (in->fatal) {
		p = bb__crash_text(p, "fatal", 5);
		if (in->reason) {
			p = bb__crash_text(p, "reason", 6);
			p = bb__crash_text(p, in->reason, in->reason_len);
		}
	} else {
		p = bb__crash_text(p, "signal", 6);
		p = bb__crash_text(p, "signal", 6);
		p = bb__cbor_put_head(0, (uint64_t)in->sig, p);
		p = bb__crash_text(p, "code", 4);
		p = bb__cbor_put_int(in->si ? in->si->si_code : 0, p);
		if (has_addr) {
			p = bb__crash_text(p, "addr", 4);
			p = bb__cbor_put_head(0, (uint64_t)(uintptr_t)in->si->si_addr, p);
		}
		if (sp) {
			p = bb__crash_text(p, "sp", 2);
			p = bb__cbor_put_head(0, sp, p);
		}
		if (in->reason_len) {   /* 3.2: glibc's abort message */
			p = bb__crash_text(p, "reason", 6);
			p = bb__crash_text(p, in->reason, in->reason_len);
		}
	}
	p = bb__crash_text(p, "tid", 3);
	p = bb__cbor_put_int(tid, p);
	p = bb__crash_text(p, "thread", 6);
	p = bb__crash_text(p, name, strlen(name));
	p = bb__crash_text(p, "frames", 6);
	p = bb__cbor_put_head(4, nf, p);
	for (uint32_t i = 0; i < nf; i++)
		p = bb__cbor_put_head(0, frames[i], p);
	if (omitted) {
		p = bb__crash_text(p, "omitted", 7);
		*p++ = 0x82;   /* array(2): [index, count] */
		p = bb__cbor_put_head(0, omit_at, p);
		p = bb__cbor_put_head(0, omitted, p);
	}
	if (ntramps) {
		p = bb__crash_text(p, "trampolines", 11);
		p = bb__cbor_put_head(4, ntramps, p);
		for (uint32_t i = 0; i < ntramps; i++)
			p = bb__cbor_put_head(0, (uint64_t)tramps[i], p);
	}

	len = (uint32_t)(p - area) + BB_CRC_SIZE;
	rec->len = (uint16_t)len;
	rec->tag = BB_TAG_CRASH;
	rec->flags = BB_RF_CRC;
	rec->ts = bb__now(&box->f);   /* the record clock: rdtsc or clock_gettime */
	crc = bb__record_crc(BB_CRASH_SEQ_DONE, rec, len);
	/* Little-endian on every target (FORMAT.md §11). */
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
	/* Release: the whole record is visible to a reader that loads DONE
	 * with acquire (and to a post-mortem reader, trivially), and to the
	 * crashing thread waiting for a crash stack (bb__crash_ask_all()). */
	BB__STORE_RELEASE(seq, (uint32_t)BB_CRASH_SEQ_DONE);
}

/* ---- the handler ------------------------------------------------------------- */

/*
 * Step aside after a signal: put the previous disposition back exactly as
 * it was (handler, sa_mask, SA_NODEFER, SA_RESETHAND, SA_ONSTACK ...) and
 * make the signal happen again once we return, so that it is delivered as
 * if we had never been there.
 *
 * A fault the kernel raised at an instruction (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE with si_code > 0) recurs by itself: sigreturn resumes the
 * faulting instruction, which faults again straight into the previous
 * disposition, with the kernel's own siginfo, context and core.  Any
 * other signal does not (kill(), abort()'s SIGABRT, an int3 SIGTRAP, a
 * seccomp SIGSYS, an action-optional machine check): it is queued again
 * to this thread with its original siginfo (rt_tgsigqueueinfo: a thread
 * may send itself any si_code), or sent plainly when that fails; blocked
 * while we run, it is delivered as sigreturn restores the interrupted mask.
 *
 * The stack: a previous handler installed with SA_ONSTACK runs on the
 * thread's alternate stack.  When that stack is the one libblackbox gave
 * the thread (the program set none up), the handler would have run on the
 * thread's stack without us: sigreturn is told to leave our alternate
 * stack off.  Ours is armed with SS_AUTODISARM, so the kernel switched it
 * off when it entered our handler and switches back to what uc_stack says
 * when the handler returns (the kernel refuses to change a stack that is
 * not disarmed from sigreturn, as we are still on it then).
 */
static void bb__step_aside(int sig, const struct sigaction *prev, const siginfo_t *si,
			   ucontext_t *uc)
{
	bool handler = prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN;
	bool recurs = si && si->si_code > 0 &&
		      (sig == SIGSEGV || sig == SIGILL || sig == SIGFPE ||
		       (sig == SIGBUS && si->si_code != BUS_MCEERR_AO));
	uint8_t *alt = bb__tls.altstack;

	if (handler && (prev->sa_flags & SA_ONSTACK) && uc && alt &&
	    uc->uc_stack.ss_sp == (void *)(alt + bb__page)) {
		uc->uc_stack.ss_sp = NULL;
		uc->uc_stack.ss_size = 0;
		uc->uc_stack.ss_flags = SS_DISABLE;
	}
	sigaction(sig, prev, NULL);   /* AS-safe (POSIX) */
	if (recurs)
		return;
	/* rt_tgsigqueueinfo and tgkill are system calls: AS-safe. */
	if (!si || syscall(SYS_rt_tgsigqueueinfo, getpid(), bb__tid(), sig, si) < 0)
		syscall(SYS_tgkill, getpid(), bb__tid(), sig);
}

/*
 * The handler.  Installed with SA_SIGINFO | SA_ONSTACK and a mask holding
 * every signal we catch, without SA_NODEFER: while it runs, all of them
 * are blocked, so a fault inside it (a scribbled stack under the unwinder)
 * is a blocked synchronous signal, which the kernel turns into the default
 * action at once: the process dies, the handler never loops.  It runs on
 * the thread's alternate stack (ours, or the program's own), and it writes
 * the record, then steps aside (bb__step_aside()): the previous handler,
 * if any, runs after ours has returned, on its own terms.
 */
static void bb__crash_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	int idx = bb__sig_index(sig);
	/* The kernel made the handler "return" into the sigreturn
	 * trampoline: the walk starts at the frame after it. */
	void *tramp = __builtin_return_address(0);
	struct sigaction prev;
	struct bb__box *box;
	bool sent = si && si->si_code <= 0;  /* kill, raise, abort, sigqueue */

	if (idx < 0)
		return;
	prev = bb__prev[idx];
	/* A signal someone sent that the application ignores: it would have
	 * been ignored without us, so it is no crash. */
	if (sent && prev.sa_handler == SIG_IGN && !(prev.sa_flags & SA_SIGINFO)) {
		errno = saved_errno;
		return;
	}
	/* Acquire pairs with the release store publishing the box in
	 * bb__open(): the box struct is complete. */
	box = BB__LOAD_ACQUIRE(&bb__box);
	if (box && box->pid == getpid()) {   /* getpid: AS-safe */
		struct bb__crash_in in = { .sig = sig, .si = si, .uc = ucv, .tramp = tramp };
		char why[BB_CRASH_REASON_MAX + 1];

		if (sig == SIGABRT) {
			in.reason_len = bb__abort_reason(why);
			in.reason = why;
		}
		(void)bb__crash_write(box, &in);
	}
	bb__step_aside(sig, &prev, si, ucv);
	errno = saved_errno;
}

/* ---- every thread's stack ------------------------------------------------- */

/*
 * The crash stacks (FORMAT.md §11, 3.1; every thread of the process since
 * 3.2).  The thread that wrote the crash record lists the process's
 * threads (bb__crash_ask_listed(): /proc/self/task read with getdents64;
 * without /proc, the threads holding a thread slot) and asks every other
 * one for its stack, whether or not it ever called the library: a
 * real-time signal (bb__stack_sig, chosen at bb_init()) queued to the
 * thread with rt_tgsigqueueinfo(), whose value names the slot of the
 * crash stacks area to write.  The thread's handler (bb__stack_handler())
 * walks its own stack from where the signal interrupted it into that slot;
 * the crashing thread waits at most BB__STACKS_WAIT_NS in all, then marks
 * the slots still waiting NO_ANSWER.  A slot's seq: ASKED (written by the
 * asker, with the tid), then BUSY (CAS by the thread asked, from ASKED
 * only), then DONE; or NO_ANSWER (CAS by the asker, from ASKED only), so
 * that an answer and a give-up never both win.
 */
#define BB__STACKS_WAIT_NS (100u * 1000u * 1000u)

static int bb__stack_sig;    /* 0: no crash stacks (handler off, no free signal) */

static uint64_t bb__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);   /* AS-safe (POSIX) */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void bb__stack_handler(int sig, siginfo_t *si, void *ucv);

/*
 * Is bb__stack_sig still ours?  A program may install its own handler on
 * it after bb_init(): then the signal would run that handler (or kill the
 * process, if it set SIG_DFL), never bb__stack_handler().  sigaction() to
 * read the disposition: AS-safe (POSIX).
 */
static bool bb__stack_sig_ours(int sig)
{
	struct sigaction cur;

	return sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == bb__stack_handler;
}

/* Ask thread @t (named @name, 16 bytes NUL-padded) for its stack into
 * crash slot @k; when the stack signal is not @ours any more, only say
 * that it was not asked. */
static void bb__crash_ask(struct bb__box *box, uint32_t k, int32_t t, const char *name, int sig,
			  bool ours, pid_t pid)
{
	uint8_t *area = box->stacks + (size_t)k * BB_CRASH_SLOT_SIZE;
	siginfo_t si;

	memcpy(area + BB_RECORD_HDR_SIZE, &t, sizeof(t));
	memcpy(area + BB_RECORD_HDR_SIZE + 4, name, 16);
	if (!ours) {
		/* Release: the tid and name above are there for a reader
		 * that loads the seq word with acquire. */
		BB__STORE_RELEASE((uint32_t *)(void *)area, (uint32_t)BB_CRASH_SEQ_NOT_ASKED);
		return;
	}
	/* Release: the tid and name above are there for the thread that
	 * loads ASKED with acquire (bb__stack_handler()) and for a reader. */
	BB__STORE_RELEASE((uint32_t *)(void *)area, (uint32_t)BB_CRASH_SEQ_ASKED);
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();   /* AS-safe */
	si.si_value.sival_int = (int)k;
	/* rt_tgsigqueueinfo: a system call, AS-safe; a thread may queue any
	 * si_code to a thread of its own process.  ESRCH: the thread ended
	 * since it was listed. */
	if (syscall(SYS_rt_tgsigqueueinfo, pid, t, sig, &si) < 0) {
		uint32_t expect = BB_CRASH_SEQ_ASKED;

		(void)BB__CAS_ACQUIRE((uint32_t *)(void *)area, &expect,
				      (uint32_t)BB_CRASH_SEQ_NO_ANSWER);
	}
}

/* The name of thread @t: its comm under the open /proc/self/task @dir
 * (openat, read, close: system calls, AS-safe), else the name its thread
 * slot holds, else empty.  @name: 16 bytes, NUL-padded. */
static void bb__crash_thread_name(struct bb__box *box, int dir, int32_t t, char *name)
{
	char path[24] = "";   /* "<tid>/comm" */
	char digits[12];
	int nd = 0, fd;
	ssize_t n = -1;
	uint32_t v = (uint32_t)t;

	memset(name, 0, 16);
	do
		digits[nd++] = (char)('0' + v % 10);
	while ((v /= 10) && nd < (int)sizeof(digits));
	for (int i = 0; i < nd; i++)
		path[i] = digits[nd - 1 - i];
	memcpy(path + nd, "/comm", 6);
	fd = dir >= 0 ? openat(dir, path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		n = read(fd, name, 15);
		close(fd);
	}
	if (n > 0) {
		if (name[n - 1] == '\n')   /* the kernel ends comm with one */
			name[n - 1] = '\0';
		return;
	}
	memset(name, 0, 16);
	for (uint32_t i = 0; i < box->nslots; i++) {
		struct bb_thread_slot *s = &box->slots[i];

		/* Acquire pairs with the release CAS/stores of claim: the
		 * slot's tid and name are its holder's. */
		if (BB__LOAD_ACQUIRE(&s->claim) == BB_RING_OWNED &&
		    BB__LOAD_RELAXED(&s->tid) == t) {
			memcpy(name, s->thread_name, 15);
			return;
		}
	}
}

/* A directory entry's name as a thread id; 0 when it is none. */
static int32_t bb__crash_tid_of(const char *d)
{
	int64_t v = 0;

	if (!*d)
		return 0;
	for (; *d; d++) {
		if (*d < '0' || *d > '9' || v > INT32_MAX / 10)
			return 0;
		v = v * 10 + (*d - '0');
	}
	return v <= INT32_MAX ? (int32_t)v : 0;
}

/*
 * Every thread of the process but the calling one: read /proc/self/task
 * with the getdents64 system call (what readdir() wraps, minus its
 * malloc) and ask each thread listed, up to the box's crash stack slots;
 * *@threads is the count listed, the caller included.  Returns the
 * threads asked (more than box->nstacks: the others had no room), or -1
 * when /proc/self/task cannot be opened (no /proc, no file descriptor
 * left): the caller falls back on the thread table.  open, getdents64,
 * close: system calls, AS-safe.
 */
struct bb__dirent64 {
	uint64_t d_ino;
	int64_t  d_off;
	uint16_t d_reclen;
	uint8_t  d_type;
	char     d_name[];
};

static int64_t bb__crash_ask_listed(struct bb__box *box, int32_t tid, int sig, bool ours,
				    pid_t pid, uint32_t *k, uint32_t *threads)
{
	/* 8-aligned: the kernel lays out struct linux_dirent64 records at
	 * 8-byte boundaries of the buffer. */
	_Alignas(8) char buf[2048];
	int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint32_t asked = 0;
	long n;

	*threads = 0;
	if (dir < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const struct bb__dirent64 *d = (const void *)(buf + off);
			int32_t t = bb__crash_tid_of(d->d_name);
			char name[16];

			if (d->d_reclen == 0)
				break;
			off += d->d_reclen;
			if (t <= 0)
				continue;   /* "." and ".." */
			++*threads;
			if (t == tid)
				continue;
			asked++;
			if (*k == box->nstacks)
				continue;   /* no room: counted in crash_stacks_asked */
			bb__crash_thread_name(box, dir, t, name);
			bb__crash_ask(box, (*k)++, t, name, sig, ours, pid);
		}
	}
	close(dir);
	return asked;
}

/* Slots from @first on; those before it the caller wrote (a dump's own
 * stack, bb__dump_request()), counted as asked. */
static void bb__crash_ask_all(struct bb__box *box, int32_t tid, uint32_t first)
{
	/* Relaxed: set once at bb_init(), before the handler that reads it
	 * could run (sigaction is the barrier, as for bb__prev). */
	int sig = BB__LOAD_RELAXED(&bb__stack_sig);
	pid_t pid = getpid();   /* AS-safe */
	uint32_t asked = first, k = first, threads = 0;
	int64_t listed;
	uint64_t start;
	bool ours;

	if (!sig || box->nstacks <= first)
		return;
	/* not ours any more: each thread's slot says it was not asked
	 * (BB_CRASH_SEQ_NOT_ASKED), and nothing is sent */
	ours = bb__stack_sig_ours(sig);
	listed = bb__crash_ask_listed(box, tid, sig, ours, pid, &k, &threads);
	if (listed >= 0)
		asked += (uint32_t)listed;
	for (uint32_t i = 0; listed < 0 && i < box->nslots; i++) {
		/* No /proc: the threads that hold a thread slot. */
		struct bb_thread_slot *s = &box->slots[i];
		int32_t t;

		/* Acquire pairs with the release CAS/stores of claim: the
		 * slot's tid and name are its holder's. */
		if (BB__LOAD_ACQUIRE(&s->claim) != BB_RING_OWNED)
			continue;
		t = BB__LOAD_RELAXED(&s->tid);
		if (t <= 0 || t == tid)
			continue;
		asked++;
		if (k == box->nstacks)
			continue;   /* no room: counted in crash_stacks_asked */
		bb__crash_ask(box, k++, t, s->thread_name, sig, ours, pid);
	}
	/* Nothing is ordered by these: a reader takes the counts as they
	 * are. */
	BB__STORE_RELAXED(&box->hdr->crash_threads, threads);
	BB__STORE_RELAXED(&box->hdr->crash_stacks_asked, asked);
	/* The wait, bounded in all: clock_gettime() and sched_yield() are
	 * system calls, AS-safe; nothing here waits for a lock. */
	start = bb__mono_ns();
	for (;;) {
		uint32_t waiting = 0;

		for (uint32_t i = 0; i < k; i++) {
			/* Acquire pairs with the answer's release store of
			 * DONE (bb__crash_fill()). */
			uint32_t q = BB__LOAD_ACQUIRE((uint32_t *)(void *)(box->stacks +
							(size_t)i * BB_CRASH_SLOT_SIZE));

			waiting += q == BB_CRASH_SEQ_ASKED || q == BB_CRASH_SEQ_BUSY;
		}
		if (!waiting || bb__mono_ns() - start >= BB__STACKS_WAIT_NS)
			break;
		sched_yield();
	}
	for (uint32_t i = 0; i < k; i++) {
		uint32_t expect = BB_CRASH_SEQ_ASKED;

		/* From ASKED only: a thread that took its slot (BUSY) keeps
		 * it; one that comes later finds NO_ANSWER and leaves. */
		(void)BB__CAS_ACQUIRE((uint32_t *)(void *)(box->stacks + (size_t)i * BB_CRASH_SLOT_SIZE),
				      &expect, (uint32_t)BB_CRASH_SEQ_NO_ANSWER);
	}
}

/*
 * A dump request (FORMAT.md §14): a watcher (bb-reap --watch, bb-extract
 * --snapshot) queued bb__stack_sig to the process with the value
 * BB_DUMP_REQUEST(kind, id); this thread took it.  Only the owner's user
 * and root can queue it (the kernel's kill(2) permission check).  Kind
 * HANG: this thread's stack into crash slot 0, every other thread
 * asked for its own into the next slots, as at a crash, the crash area
 * and the phase left alone; kind SNAPSHOT: bb_snapshot("operator").  Then
 * the id into dump_seq.  One dump at a time, and none once a crash record
 * is begun: the slots are the crash's.
 */
static int bb__dumping;

static void bb__dump_request(struct bb__box *box, const siginfo_t *si, void *ucv, void *tramp,
			     int32_t tid)
{
	uint32_t v = (uint32_t)si->si_value.sival_int;
	struct bb_record_hdr *rec = (struct bb_record_hdr *)(void *)box->hdr->crash;
	int idle = 0;

	if (BB_DUMP_KIND(v) == BB_DUMP_SNAPSHOT) {
		(void)bb_snapshot("operator");
	} else if (BB_DUMP_KIND(v) == BB_DUMP_HANG) {
		uint8_t *area = box->stacks;
		const char *name = bb__tls.named ? bb__tls.name : "";
		struct bb__crash_in in = { .thread = true, .si = si, .uc = ucv, .tramp = tramp };

		/* Acquire pairs with the crash writer's CAS from EMPTY: a
		 * crash under way owns the slots. */
		if (!box->nstacks || BB__LOAD_ACQUIRE(&rec->seq) != BB_CRASH_SEQ_EMPTY)
			return;
		/* Acquire: pairs with the release store that ended the
		 * previous dump, whose slots we now rewrite. */
		if (!__atomic_compare_exchange_n(&bb__dumping, &idle, 1, false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			return;
		/* A previous dump's answers go: relaxed, the stores of the
		 * slots below publish each slot again with release. */
		for (uint32_t i = 1; i < box->nstacks; i++)
			BB__STORE_RELAXED((uint32_t *)(void *)(area + (size_t)i * BB_CRASH_SLOT_SIZE),
					  (uint32_t)BB_CRASH_SEQ_EMPTY);
		memcpy(area + BB_RECORD_HDR_SIZE, &tid, sizeof(tid));
		memset(area + BB_RECORD_HDR_SIZE + 4, 0, 16);
		memcpy(area + BB_RECORD_HDR_SIZE + 4, name, strnlen(name, 15));
		/* Relaxed: BUSY orders nothing; bb__crash_fill() ends with
		 * the release store of DONE that a reader pairs with. */
		BB__STORE_RELAXED((uint32_t *)(void *)area, (uint32_t)BB_CRASH_SEQ_BUSY);
		bb__crash_fill(box, area, &in, tid);
		bb__crash_ask_all(box, tid, 1);
		/* Release: pairs with the acquire CAS of the next dump. */
		BB__STORE_RELEASE(&bb__dumping, 0);
	} else {
		return;
	}
	/* Release: a watcher that loads its id with acquire sees the slots
	 * (and the snapshot count) written above. */
	BB__STORE_RELEASE(&box->hdr->dump_seq, BB_DUMP_VALUE(v));
}

/*
 * The handler of bb__stack_sig: a crashing thread of this process asks for
 * this thread's stack (si_value: the slot), or a watcher asks for a dump
 * (BB_DUMP_IS_REQUEST(), bb__dump_request()).  Anything else sent with the
 * signal is ignored.  Runs on the thread's alternate stack when it has one
 * (SA_ONSTACK), with the crash signals blocked.
 */
static void bb__stack_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved_errno = errno;
	void *tramp = __builtin_return_address(0);
	/* Acquire pairs with the release store publishing the box. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	int32_t tid = bb__tls.tid ? bb__tls.tid : bb__tid();
	uint32_t expect = BB_CRASH_SEQ_ASKED;
	uint8_t *area;
	int32_t asked;
	int k;

	(void)sig;
	/* getpid, and gettid above: system calls, AS-safe.  The walk and
	 * the record below are the crash record's (bb__crash_fill()). */
	if (box && si && si->si_code == SI_QUEUE && BB_DUMP_IS_REQUEST(si->si_value.sival_int)) {
		bb__dump_request(box, si, ucv, tramp, tid);
		goto out;
	}
	if (!box || !si || si->si_code != SI_QUEUE || si->si_pid != getpid())
		goto out;
	k = si->si_value.sival_int;
	if (k < 0 || (uint32_t)k >= box->nstacks)
		goto out;
	area = box->stacks + (size_t)k * BB_CRASH_SLOT_SIZE;
	/* Acquire pairs with the asker's release store of ASKED: the tid
	 * read next is the one it wrote. */
	if (BB__LOAD_ACQUIRE((uint32_t *)(void *)area) != BB_CRASH_SEQ_ASKED)
		goto out;
	memcpy(&asked, area + BB_RECORD_HDR_SIZE, sizeof(asked));
	if (asked != tid || !BB__CAS_ACQUIRE((uint32_t *)(void *)area, &expect,
					     (uint32_t)BB_CRASH_SEQ_BUSY))
		goto out;
	{
		struct bb__crash_in in = { .thread = true, .si = si, .uc = ucv, .tramp = tramp };

		bb__crash_fill(box, area, &in, tid);
	}
out:
	errno = saved_errno;
}

/* Choose and install the signal of the crash stacks (bb_init(), the
 * handler on): the first real-time signal from SIGRTMIN + 8 up whose
 * disposition is the default.  None: no crash stacks. */
static void bb__stack_install(void)
{
	struct sigaction sa, cur;

	if (bb__stack_sig)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bb__stack_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < BB__NSIGS; i++)
		sigaddset(&sa.sa_mask, bb__crash_sigs[i]);
	for (int s = SIGRTMIN + 8; s <= SIGRTMAX; s++) {
		if (sigaction(s, NULL, &cur) < 0 || cur.sa_handler != SIG_DFL ||
		    (cur.sa_flags & SA_SIGINFO))
			continue;
		if (sigaction(s, &sa, NULL) == 0) {
			bb__stack_sig = s;
			return;
		}
	}
}

/* ---- bb_crash_record --------------------------------------------------------- */

BB_EXPORT __attribute__((noinline)) int bb_crash_record(const char *reason)
{
	/* The walk keeps frames from our caller's on: the return address
	 * into it. */
	uint64_t from = (uint64_t)(uintptr_t)__builtin_return_address(0);
	struct bb__crash_in in = { .fatal = true, .from = from, .reason = reason };
	/* Acquire pairs with the release store publishing the box in
	 * bb__open(), as in the handler. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	int saved_errno = errno, ret;

	if (!box || box->pid != getpid())
		return bb__disabled() ? 0 : -ENODEV;
	if (reason) {
		/* strnlen: AS-safe, and bounded by the area, not by the
		 * caller's NUL; cut at a character boundary */
		in.reason_len = strnlen(reason, BB_CRASH_REASON_MAX + 1);
		if (in.reason_len > BB_CRASH_REASON_MAX)
			in.reason_len = bb__utf8_cut(reason, BB_CRASH_REASON_MAX);
	}
	ret = bb__crash_write(box, &in);
	errno = saved_errno;
	return ret;
}

/* ---- alternate signal stacks -------------------------------------------- */

/* <linux/signal.h>'s, which glibc's <signal.h> does not define. */
#ifdef SS_AUTODISARM
#define BB__SS_AUTODISARM SS_AUTODISARM
#else
#define BB__SS_AUTODISARM ((int)(1u << 31))
#endif

int bb__crash_thread_start(struct bb__tls *t)
{
	stack_t cur, ss;
	uint8_t *m;
	int e;

	if (!bb__altstacks || t->altstack)
		return 0;
	/* An alternate stack the application installed (or one we gave this
	 * thread before) is left alone. */
	if (sigaltstack(NULL, &cur) < 0)
		return -errno;
	if (!(cur.ss_flags & SS_DISABLE))
		return 0;
	m = mmap(NULL, bb__alt_size + bb__page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return -errno;   /* no alt stack: only a stack overflow goes unrecorded */
	/* Guard page below the stack (it grows down): an overflow of the
	 * alt stack itself faults instead of scribbling on a neighbour. */
	if (mprotect(m, bb__page, PROT_NONE) < 0) {
		e = -errno;
		munmap(m, bb__alt_size + bb__page);
		return e;
	}
	ss.ss_sp = m + bb__page;
	ss.ss_size = bb__alt_size;
	/* SS_AUTODISARM (Linux >= 4.7): what lets bb__step_aside() leave it
	 * off for a previous handler; without it, only that is lost. */
	ss.ss_flags = BB__SS_AUTODISARM;
	if (sigaltstack(&ss, NULL) < 0 && (ss.ss_flags = 0, sigaltstack(&ss, NULL) < 0)) {
		e = -errno;
		munmap(m, bb__alt_size + bb__page);
		return e;
	}
	t->altstack = m;
	return 0;
}

bool bb__crash_altstacks_on(void)
{
	/* Relaxed: set once by bb_init() (bb__crash_init()); a thread
	 * created as it is set may or may not get a stack. */
	return BB__LOAD_RELAXED(&bb__altstacks);
}

void bb__crash_thread_exit(struct bb__tls *t)
{
	stack_t cur, off = { .ss_flags = SS_DISABLE };
	uint8_t *m = t->altstack;

	if (!m)
		return;
	t->altstack = NULL;
	if (sigaltstack(NULL, &cur) < 0 || (cur.ss_flags & SS_ONSTACK))
		return;   /* running on it (a destructor in a handler?): leak it */
	if (cur.ss_sp == m + bb__page && !(cur.ss_flags & SS_DISABLE))
		sigaltstack(&off, NULL);
	munmap(m, bb__alt_size + bb__page);
}

/* ---- installation -------------------------------------------------------- */

static bool bb__env_on(const struct bb_options *o)
{
	const char *env;

	if (o->flags & BB_OPT_CRASH_HANDLER)
		return true;
	if (o->flags & BB_OPT_NO_ENV)
		return false;
	env = secure_getenv("BLACKBOX_CRASH_HANDLER");
	return env && *env && strcmp(env, "0") != 0;
}

/* Install our handler for every caught signal whose disposition is not
 * ours already, keeping the one it replaces in bb__prev.  Returns 0 or a
 * negative errno (then the signals installed by this call are restored). */
static int bb__install(void)
{
	struct sigaction sa, cur[BB__NSIGS];
	bool mine[BB__NSIGS];

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bb__crash_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < BB__NSIGS; i++)
		sigaddset(&sa.sa_mask, bb__crash_sigs[i]);
	for (unsigned i = 0; i < BB__NSIGS; i++) {
		if (sigaction(bb__crash_sigs[i], NULL, &cur[i]) < 0)
			return -errno;
		mine[i] = (cur[i].sa_flags & SA_SIGINFO) &&
			  cur[i].sa_sigaction == bb__crash_handler;
	}
	for (unsigned i = 0; i < BB__NSIGS; i++) {
		if (mine[i])
			continue;
		bb__prev[i] = cur[i];
		if (sigaction(bb__crash_sigs[i], &sa, NULL) < 0) {
			int e = -errno;

			while (i-- > 0)
				if (!mine[i])
					sigaction(bb__crash_sigs[i], &cur[i], NULL);
			return e;
		}
	}
	return 0;
}

int bb__crash_init(const struct bb_options *o)
{
	struct bb__walk warm;
	int ret;

	/* Load and warm up the unwinder here, not in the handler or in
	 * bb_crash_record() (bb__walk()).  Every box gets it:
	 * bb_crash_record() works without the handler. */
	if (bb__unwind_load()) {
		/* the box's module list was gathered before: add libgcc_s.
		 * Acquire pairs with bb__open()'s release store of the box. */
		struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

		if (box)
			bb__modules_gather(box);
	}
	memset(&warm, 0, sizeof(warm));
	warm.from_signal = true;   /* no signal frame: passes our frames only */
	bb__walk(&warm);
	bb__abort_load();
	if (!bb__env_on(o))
		return 0;
	if (!bb__installed) {
		long ss = sysconf(_SC_SIGSTKSZ);

		bb__page = (size_t)sysconf(_SC_PAGESIZE);
		if (ss < SIGSTKSZ)
			ss = SIGSTKSZ;
		bb__alt_size = (size_t)ss * 4 < 65536 ? 65536 : (size_t)ss * 4;
		bb__alt_size = (bb__alt_size + bb__page - 1) & ~(bb__page - 1);
		if ((ret = bb__install()) < 0)
			return ret;
		bb__installed = true;
		/* Relaxed: see bb__crash_altstacks_on(). */
		BB__STORE_RELAXED(&bb__altstacks, true);
		bb__stack_install();
	}
	{
		/* Acquire pairs with bb__open()'s release store of the box. */
		struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

		/* Relaxed: a watcher reads it once the box is published. */
		if (box && bb__stack_sig && box->nstacks)
			BB__STORE_RELAXED(&box->hdr->dump_signal, (int32_t)bb__stack_sig);
	}
	(void)bb__crash_thread_start(&bb__tls);
	return 0;
}

BB_EXPORT int bb_crash_rearm(void)
{
	if (!bb__installed)
		return 0;   /* the handler is off (or bb_init() was not called) */
	return bb__install();
}
