/* SPDX-License-Identifier: MIT */
/*
 * crash.c - the crash handler: on a fatal signal, write one crash
 * record into the header's crash area (docs/FORMAT.md §11 "Crash area"),
 * mark the box CRASHED, then let the signal do exactly what it would have
 * done without us (chain to the previous handler, or the default action).
 *
 * Also the per-thread alternate signal stacks that make the handler run on
 * a stack overflow.
 *
 * What runs in the handler is AS-safe in the sense that matters here: no
 * malloc, no lock the interrupted code can hold, no stdio.  System calls
 * are allowed (the process is dying): sigaction, tgkill, prctl, nanosleep.
 * The one non-POSIX-AS-safe call is backtrace(); see bb__frames() for why
 * it is safe after the warm-up in bb__crash_init().
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "writer.h"

/* Signals we catch.  SIGTRAP and SIGSYS too: a stray int3 or a seccomp
 * kill-by-signal is a death worth recording. */
static const int bb__crash_sigs[] = {
	SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
};
#define BB__NSIGS (sizeof(bb__crash_sigs) / sizeof(bb__crash_sigs[0]))

/* The dispositions we replaced, by index in bb__crash_sigs.  Written once,
 * before our handler is installed (sigaction is the barrier: a handler
 * cannot run before the sigaction call that installs it returns). */
static struct sigaction bb__prev[BB__NSIGS];
static bool bb__installed;        /* handler installed (bb_init thread only) */
static bool bb__altstacks;        /* give each claiming thread an alt stack */
static size_t bb__alt_size;       /* usable bytes of an alt stack */
static size_t bb__page;
/* tid of the thread writing the crash record; 0 = none.  Lets a second
 * crashing thread wait (bounded) for the first to finish. */
static int32_t bb__crash_tid;

/* Frames kept: 128 * 9 bytes of CBOR at most, well inside the area. */
#define BB__CRASH_FRAMES 128
_Static_assert(BB_RECORD_HDR_SIZE + 112 + 3 + BB__CRASH_FRAMES * 9 + BB_CRC_SIZE <= BB_CRASH_SIZE,
	       "crash record fits the crash area");

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

/* The faulting instruction from the kernel's saved context. */
static uint64_t bb__uc_pc(const void *ucv)
{
	const ucontext_t *uc = ucv;

	if (!uc)
		return 0;
#if defined(__x86_64__)
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
	return (uint64_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
	return (uint64_t)uc->uc_mcontext.pc;
#else
	return 0;
#endif
}

/*
 * bb__frames - the crashing thread's return addresses, innermost first,
 * frame 0 being the faulting PC from the ucontext.
 *
 * Why backtrace() and why it is safe here.  glibc's backtrace() drives
 * libgcc's _Unwind_Backtrace over the .eh_frame tables, which (unlike a
 * frame-pointer walk) works for code built without frame pointers, i.e.
 * all of Debian.  Its two hazards in a signal handler are both first-call
 * costs, paid by the warm-up call in bb__crash_init(): glibc dlopen()s
 * libgcc_s (malloc, the loader lock) and libgcc initialises its register
 * size table once.  After that a call allocates nothing and takes no lock:
 * FDE lookup goes through _dl_find_object() (glibc >= 2.35 with gcc >= 12,
 * Debian 12's pair), which is lock-free; an older libgcc would fall back
 * to dl_iterate_phdr(), whose loader lock could deadlock only if the crash
 * hit inside the loader itself.  The unwinder crosses the signal frame
 * (__restore_rt is recognised by libgcc) and reads only the crashed stack,
 * so it works on the alternate stack after a stack overflow.  A stack the
 * crash scribbled over can make the unwinder fault: that second fault is
 * blocked (sa_mask) so the kernel kills the process with it at once, never
 * a loop; the header already says CRASHED by then (bb__crash_record()).
 *
 * backtrace() starts inside this handler; the frames up to and including
 * the faulting PC (reported exactly, not as a return address, for a
 * signal frame) are dropped, and the PC itself is frame 0.  If the PC is
 * not among them (a jump to address 0 has no unwind info), every frame
 * after our own is kept.
 */
static int bb__frames(uint64_t pc, uint64_t *out, int max)
{
	void *bt[BB__CRASH_FRAMES + 8];
	int n = backtrace(bt, (int)(sizeof(bt) / sizeof(bt[0])));
	int from = n > 0 ? 1 : 0, k = 0;

	for (int i = 0; i < n; i++) {
		if ((uint64_t)(uintptr_t)bt[i] == pc) {
			from = i + 1;
			break;
		}
	}
	out[k++] = pc;
	for (int i = from; i < n && k < max; i++)
		out[k++] = (uint64_t)(uintptr_t)bt[i];
	return k;
}

static uint8_t *bb__crash_text(uint8_t *p, const char *s, size_t n)
{
	p = bb__cbor_put_head(3, n, p);
	memcpy(p, s, n);
	return p + n;
}

static uint64_t bb__realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Write the crash record and mark the header.  The first fatal signal in
 * the process wins the crash area (a CAS from EMPTY to BUSY); a later or
 * concurrent one leaves it alone.
 */
static void bb__crash_record(struct bb__box *box, int sig, const siginfo_t *si, const void *uc)
{
	struct bb_header *h = box->hdr;
	struct bb_record_hdr *rec = (struct bb_record_hdr *)(void *)h->crash;
	uint32_t *seq = &rec->seq;
	uint32_t expect = BB_CRASH_SEQ_EMPTY;
	int32_t tid = bb__tls.tid ? bb__tls.tid : bb__tid();
	uint64_t frames[BB__CRASH_FRAMES];
	char name[16] = "";
	uint64_t addr = 0;
	uint8_t *p;
	uint32_t len, crc;
	int nf;

	if (!BB__CAS_ACQUIRE(seq, &expect, (uint32_t)BB_CRASH_SEQ_BUSY)) {
		int32_t writer = BB__LOAD_RELAXED(&bb__crash_tid);

		/* Another thread crashed first and is writing: give it a
		 * bounded time (2 s) to finish before our own signal kills
		 * the process.  A crash inside our own handler never gets
		 * here: every caught signal is blocked while it runs. */
		for (int i = 0; i < 2000 && writer != tid &&
		     BB__LOAD_ACQUIRE(seq) == BB_CRASH_SEQ_BUSY; i++) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
		return;
	}
	BB__STORE_RELAXED(&bb__crash_tid, tid);

	/* The header first: if unwinding a scribbled stack faults below,
	 * the box still says "crashed by signal N" (with the crash area
	 * busy: "crash record torn", FORMAT.md §11).  phase_ns, then phase
	 * with release, as bb__atexit() does: a reader that loads phase with
	 * acquire sees the time and the signal of that phase. */
	BB__STORE_RELAXED(&h->phase_signal, (int32_t)sig);
	BB__STORE_RELAXED(&h->phase_ns, bb__realtime_ns());
	BB__STORE_RELEASE(&h->phase, (uint32_t)BB_PHASE_CRASHED);

	/* si_addr is meaningful for faults raised by the kernel (si_code >
	 * 0); for kill/raise/abort the union holds the sender's pid/uid. */
	if (si && si->si_code > 0 && sig != SIGABRT)
		addr = (uint64_t)(uintptr_t)si->si_addr;
	prctl(PR_GET_NAME, name, 0, 0, 0);
	name[15] = '\0';
	nf = bb__frames(bb__uc_pc(uc), frames, BB__CRASH_FRAMES);

	/* Orders the BUSY mark (the CAS) before the bytes below, as the
	 * release fence after a record's busy seq in bb__reserve(): a live
	 * reader whose copy saw them sees BUSY on its re-read. */
	BB__FENCE_RELEASE();
	p = h->crash + BB_RECORD_HDR_SIZE;
	*p++ = 0xa6;  /* map(6) */
	p = bb__crash_text(p, "signal", 6);
	p = bb__cbor_put_head(0, (uint64_t)sig, p);
	p = bb__crash_text(p, "code", 4);
	p = bb__cbor_put_int(si ? si->si_code : 0, p);
	p = bb__crash_text(p, "addr", 4);
	p = bb__cbor_put_head(0, addr, p);
	p = bb__crash_text(p, "tid", 3);
	p = bb__cbor_put_int(tid, p);
	p = bb__crash_text(p, "thread", 6);
	p = bb__crash_text(p, name, strlen(name));
	p = bb__crash_text(p, "frames", 6);
	p = bb__cbor_put_head(4, (uint64_t)nf, p);
	for (int i = 0; i < nf; i++)
		p = bb__cbor_put_head(0, frames[i], p);

	len = (uint32_t)(p - h->crash) + BB_CRC_SIZE;
	rec->len = (uint16_t)len;
	rec->tag = BB_TAG_CRASH;
	rec->flags = BB_RF_CRC;
	rec->ts = bb__now(&box->f);
	crc = bb__record_crc(BB_CRASH_SEQ_DONE, rec, len);
	/* Little-endian on every target (FORMAT.md §11). */
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
	/* Release: the whole record is visible to a reader that loads DONE
	 * with acquire (and to a post-mortem reader, trivially). */
	BB__STORE_RELEASE(seq, (uint32_t)BB_CRASH_SEQ_DONE);
}

/*
 * The handler.  Installed with SA_SIGINFO | SA_ONSTACK and a mask holding
 * every signal we catch, without SA_NODEFER: while it runs, all of them
 * are blocked, so
 *  - a fault inside the handler (a scribbled stack under the unwinder) is
 *    a blocked synchronous signal, which the kernel turns into the default
 *    action at once: the process dies, the handler never loops;
 *  - the re-raise below stays pending until the handler returns, and is
 *    then delivered under SIG_DFL.
 */
static void bb__crash_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	int idx = bb__sig_index(sig);
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
	if (box && box->pid == getpid())
		bb__crash_record(box, sig, si, uc);

	if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		/* Chain: the application's handler decides (it usually
		 * restores SIG_DFL and returns or re-raises).  We leave the
		 * dispositions as they are, as if it had been called
		 * directly. */
		if (prev.sa_flags & SA_RESETHAND) {
			struct sigaction dfl = { .sa_handler = SIG_DFL };

			sigemptyset(&dfl.sa_mask);
			sigaction(sig, &dfl, NULL);
		}
		errno = saved_errno;
		if (prev.sa_flags & SA_SIGINFO)
			prev.sa_sigaction(sig, si, uc);
		else
			prev.sa_handler(sig);
		return;
	}
	/* The default action, exactly: restore the previous disposition
	 * (SIG_DFL, or SIG_IGN which the kernel overrides for a fault), then
	 * make the signal happen again.  A fault raised by the kernel simply
	 * recurs when we return (the faulting instruction runs again), so
	 * the core dump and si_code are the original ones.  A sent signal,
	 * or a trap that would not recur (int3, a seccomp SIGSYS, abort()'s
	 * SIGABRT), is sent again to this thread: pending while blocked here,
	 * delivered under SIG_DFL as we return. */
	sigaction(sig, &prev, NULL);
	if (sent || sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS)
		syscall(SYS_tgkill, getpid(), bb__tid(), sig);
	errno = saved_errno;
}

/* ---- alternate signal stacks -------------------------------------------- */

void bb__crash_thread_start(struct bb__tls *t)
{
	stack_t cur, ss;
	uint8_t *m;

	if (!bb__altstacks || t->altstack)
		return;
	/* An alternate stack the application installed (or one we gave this
	 * thread before) is left alone. */
	if (sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	m = mmap(NULL, bb__alt_size + bb__page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return;   /* no alt stack: only a stack overflow goes unrecorded */
	/* Guard page below the stack (it grows down): an overflow of the
	 * alt stack itself faults instead of scribbling on a neighbour. */
	if (mprotect(m, bb__page, PROT_NONE) < 0) {
		munmap(m, bb__alt_size + bb__page);
		return;
	}
	ss.ss_sp = m + bb__page;
	ss.ss_size = bb__alt_size;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) < 0) {
		munmap(m, bb__alt_size + bb__page);
		return;
	}
	t->altstack = m;
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

int bb__crash_init(const struct bb_options *o)
{
	struct sigaction sa;
	void *warm[4];

	if (!bb__env_on(o))
		return 0;
	if (!bb__installed) {
		long ss = sysconf(_SC_SIGSTKSZ);

		bb__page = (size_t)sysconf(_SC_PAGESIZE);
		if (ss < SIGSTKSZ)
			ss = SIGSTKSZ;
		bb__alt_size = (size_t)ss * 4 < 65536 ? 65536 : (size_t)ss * 4;
		bb__alt_size = (bb__alt_size + bb__page - 1) & ~(bb__page - 1);
		/* Warm-up: the first backtrace() loads libgcc_s and sets up
		 * the unwinder; do it here, not in the handler (bb__frames). */
		backtrace(warm, 4);

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = bb__crash_handler;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		for (unsigned i = 0; i < BB__NSIGS; i++)
			sigaddset(&sa.sa_mask, bb__crash_sigs[i]);
		for (unsigned i = 0; i < BB__NSIGS; i++) {
			if (sigaction(bb__crash_sigs[i], NULL, &bb__prev[i]) < 0)
				return -errno;
		}
		for (unsigned i = 0; i < BB__NSIGS; i++) {
			if (sigaction(bb__crash_sigs[i], &sa, NULL) < 0) {
				int e = -errno;

				while (i-- > 0)
					sigaction(bb__crash_sigs[i], &bb__prev[i], NULL);
				return e;
			}
		}
		bb__installed = true;
		bb__altstacks = true;
	}
	bb__crash_thread_start(&bb__tls);
	return 0;
}
