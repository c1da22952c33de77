/* SPDX-License-Identifier: MIT */
/*
 * Description: a process with a box, driven by the tests.
 *   child exec N      bb_init, write "image" N; if N < 2 exec self with N+1,
 *                     else print "ready" and wait to be killed
 *   child records N   bb_init, write N kv records ("i", 0..N-1), "ready", wait
 *   child state N     bb_init, bb_set "request" = "req-N", "n" = N, "ok" =
 *                     true, then unset "gone"; "ready", wait
 *   child crash KIND  RLIMIT_CORE 0, bb_init (crash handler as the
 *                     environment says), then die of KIND: segv (store to
 *                     address 16), bus (truncated mmap), abort, overflow
 *                     (infinite recursion), assert (glibc's assert(never >
 *                     0) fails in crash()), pool-overflow (the same in a
 *                     thread "pool-worker" that never writes but calls
 *                     bb_thread_init() first), silent-overflow (the same
 *                     in a thread "silent-worker" that never calls the
 *                     library), threads (three threads
 *                     blocked in blocked_in_read, in_cond_wait and
 *                     in_nanosleep, printed as "fn NAME 0x...", the
 *                     main thread then faults), silent-threads (the same
 *                     with threads that never call the library, and 20
 *                     idle ones), many-threads (the same with 300 idle
 *                     ones), inwrite (SIGSEGV inside
 *                     bb_write_bytes), handler (abort() in an application
 *                     SIGSEGV handler that interrupted bb_write_bytes),
 *                     chain (segv with an application handler installed
 *                     before bb_init: prints "chained N", restores SIG_DFL).
 *                     Prints "addr 0x..." (expected fault address) first.
 *                     Handlers like a server's crash reporter (Redis's):
 *                     report-before (SA_NODEFER|SA_SIGINFO handler, then
 *                     bb_init, then segv), report-after (bb_init, handler,
 *                     bb_crash_rearm, segv), report-late (the same without
 *                     bb_crash_rearm), report-onstack (SA_ONSTACK on a
 *                     2 MiB alternate stack of its own), report-onstack-noalt
 *                     (SA_ONSTACK, no alternate stack of its own),
 *                     report-nested (the handler faults once inside itself),
 *                     report-abort (a SIGABRT handler with SA_RESETHAND, then
 *                     abort()).  The handler prints what it sees ("report
 *                     ..." lines: siginfo, stack, mask, disposition), puts
 *                     1 MiB on its stack, prints "report complete", then
 *                     re-raises with kill() under SIG_DFL.
 *                     fatal (bb_crash_record in check_failed(), then abort),
 *                     fatal-exit (then exit(3)), fatal-twice (a second call,
 *                     then abort), fatal-long (a 300-byte reason).  Prints
 *                     "fn 0x..." (check_failed's address) and "record N".
 */
#undef NDEBUG   /* the assert kind needs assert() */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <blackbox.h>

static void ready_and_wait(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

static void say_addr(const void *a)
{
	printf("addr %p\n", a);
	fflush(stdout);
}

/* Three pages, the last two inaccessible: a copy of 8 KiB from here faults
 * one page in, in the middle of a write. */
static const uint8_t *fault_src(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m + pg, (size_t)pg * 2, PROT_NONE))
		exit(5);
	memset(m, 'x', (size_t)pg);
	say_addr(m + pg);
	return m;
}

static volatile int never = -1;   /* keeps the compiler from seeing the loop */

static __attribute__((noinline)) int recurse(int n)
{
	volatile char pad[512];

	if (n == never)
		return 0;
	pad[0] = (char)n;
	return recurse(n + 1) + pad[0];
}

static void chained(int sig, siginfo_t *si, void *uc)
{
	char msg[] = "chained 00\n";

	(void)si;
	(void)uc;
	msg[8] = (char)('0' + sig / 10);
	msg[9] = (char)('0' + sig % 10);
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(6);
	signal(sig, SIG_DFL);   /* the fault recurs and kills us */
}

static void abort_in_handler(int sig)
{
	(void)sig;
	bb_write_kv("in", "handler");   /* nested: the shared ring */
	abort();
}

/* ---- a crash reporter like a server's ------------------------------------ */

static uint8_t *app_alt;          /* report-onstack: the handler's own stack */
static size_t app_alt_size;
static volatile sig_atomic_t report_entries;
static bool report_nested;

/*
 * What the handler sees, as lines that must not depend on libblackbox
 * being there: the signal, its code and address (or whether a sent signal
 * names this process as its sender), whether it runs on an alternate stack
 * and whether that is its own, which crash signals are blocked, and the
 * signal's disposition now (its own handler, or SIG_DFL after
 * SA_RESETHAND).  Then 1 MiB on the stack, as Redis's memory test does.
 */
static void report_handler(int sig, siginfo_t *si, void *uc)
{
	volatile char big[1 << 20];
	int entry = ++report_entries;
	struct sigaction now;
	sigset_t blocked;
	stack_t ss;
	char here;

	(void)uc;
	if (entry == 1 && report_nested) {
		volatile uintptr_t bad = 24;

		dprintf(1, "report entry 1 faults\n");
		*(volatile int *)bad = 1;   /* SA_NODEFER: into entry 2 */
	}
	sigaltstack(NULL, &ss);
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	sigaction(sig, NULL, &now);
	dprintf(1, "report entry %d sig %d code %d\n", entry, sig, si->si_code);
	if (si->si_code > 0)
		dprintf(1, "report addr %p\n", si->si_addr);
	else
		dprintf(1, "report sender is self %d\n", si->si_pid == getpid());
	dprintf(1, "report onstack %d own stack %d\n", !!(ss.ss_flags & SS_ONSTACK),
	    app_alt && (uint8_t *)&here >= app_alt && (uint8_t *)&here < app_alt + app_alt_size);
	dprintf(1, "report blocked SEGV %d BUS %d ILL %d FPE %d ABRT %d TRAP %d\n",
	    sigismember(&blocked, SIGSEGV), sigismember(&blocked, SIGBUS),
	    sigismember(&blocked, SIGILL), sigismember(&blocked, SIGFPE),
	    sigismember(&blocked, SIGABRT), sigismember(&blocked, SIGTRAP));
	dprintf(1, "report disposition %s\n", now.sa_handler == SIG_DFL ? "default" :
	    (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == report_handler ? "own" :
	    "other");
	memset((char *)big, 'm', sizeof(big));
	dprintf(1, "report complete %d\n", big[sizeof(big) - 1] == 'm');
	if (sig == SIGABRT)
		return;   /* abort() goes on: SIG_DFL, raise again */
	signal(sig, SIG_DFL);
	kill(getpid(), sig);
}

static void install_report(int sig, int flags)
{
	struct sigaction sa = { .sa_sigaction = report_handler,
				.sa_flags = SA_SIGINFO | flags };

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/* The report-* kinds; 0, or what failed. */
static int report(const char *kind)
{
	bool before = strcmp(kind, "report-after") && strcmp(kind, "report-late");
	int sig = strcmp(kind, "report-abort") ? SIGSEGV : SIGABRT;
	int flags = sig == SIGABRT ? SA_RESETHAND : SA_NODEFER;

	if (!strncmp(kind, "report-onstack", 14))
		flags |= SA_ONSTACK;
	if (!strcmp(kind, "report-onstack")) {
		stack_t ss = { .ss_size = 2u << 20 };

		app_alt_size = ss.ss_size;
		app_alt = mmap(NULL, app_alt_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		ss.ss_sp = app_alt;
		if (app_alt == MAP_FAILED || sigaltstack(&ss, NULL))
			return 5;
	}
	if (!strcmp(kind, "report-onstack-noalt")) {
		/* no alternate stack of its own, whoever set one up before
		 * main() (a sanitizer's runtime does) */
		stack_t off = { .ss_flags = SS_DISABLE };

		if (sigaltstack(&off, NULL))
			return 5;
	}
	report_nested = !strcmp(kind, "report-nested");
	if (before)
		install_report(sig, flags);
	if (bb_init(0) != 0)
		return 3;
	if (!before)
		install_report(sig, flags);
	if (!strcmp(kind, "report-after") && bb_crash_rearm() != 0)
		return 7;
	bb_write_kv("before", kind);
	if (sig == SIGABRT) {
		say_addr(NULL);
		abort();
	}
	{
		volatile uintptr_t bad = 16;

		say_addr((void *)bad);
		*(volatile int *)bad = 1;
	}
	return 4;
}

/* ---- bb_crash_record --------------------------------------------------------- */

static const char *fatal_kind;

/* An assert's failure path: record why, then end the process. */
static __attribute__((noinline)) void check_failed(const char *expr, int line)
{
	char reason[320];
	int rc;

	if (!strcmp(fatal_kind, "fatal-long")) {
		/* 254 bytes, then a 2-byte character across the 255-byte cut */
		memset(reason, 'a', 254);
		strcpy(reason + 254, "\xc3\xa9 and more text past the limit");
	} else {
		snprintf(reason, sizeof(reason), "CHECK(%s) failed at child.c:%d", expr, line);
	}
	rc = bb_crash_record(reason);
	dprintf(1, "record %d\n", rc);
	if (!strcmp(fatal_kind, "fatal-twice"))
		dprintf(1, "again %d\n", bb_crash_record("the second reason"));
	if (!strcmp(fatal_kind, "fatal-exit"))
		exit(3);
	abort();
}

static int fatal(const char *kind)
{
	volatile int len = 7, cap = 4;

	fatal_kind = kind;
	if (bb_init(0) != 0)
		return 3;
	bb_write_kv("before", kind);
	say_addr(NULL);
	dprintf(1, "fn %#lx\n", (unsigned long)(uintptr_t)check_failed);
	if (len > cap)
		check_failed("len <= cap", __LINE__);
	return 4;
}

/* "thread": a second thread, named, claims its ring and faults. */
static void *crash_thread(void *arg)
{
	volatile uintptr_t bad = 24;

	(void)arg;
	pthread_setname_np(pthread_self(), "crasher");
	bb_write_kv("in", "thread");
	printf("tid %ld\n", (long)gettid());
	say_addr((void *)bad);
	*(volatile int *)bad = 1;
	return NULL;
}

/* ---- every thread's stack: three threads blocked, the fourth crashes ----- */

static pthread_barrier_t blocked_bar;
static int block_pipe[2];
static pthread_mutex_t block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cv = PTHREAD_COND_INITIALIZER;

static __attribute__((noinline)) void blocked_in_read(void)
{
	char c;

	pthread_barrier_wait(&blocked_bar);
	if (read(block_pipe[0], &c, 1) >= 0)   /* nobody writes */
		exit(8);
	__asm__ __volatile__("" ::: "memory");   /* not a tail call */
}

static __attribute__((noinline)) void in_cond_wait(void)
{
	pthread_mutex_lock(&block_mu);
	pthread_barrier_wait(&blocked_bar);
	for (;;)
		pthread_cond_wait(&block_cv, &block_mu);   /* nobody signals */
}

static __attribute__((noinline)) void in_nanosleep(void)
{
	struct timespec long_time = { 3600, 0 };

	pthread_barrier_wait(&blocked_bar);
	while (nanosleep(&long_time, &long_time) < 0)
		;
	__asm__ __volatile__("" ::: "memory");
}

static void (*const blocked_fns[])(void) = { blocked_in_read, in_cond_wait, in_nanosleep };

static const char *const blocked_names[] = { "reader", "waiter", "sleeper" };

static bool silent;   /* the threads never call the library */

static void *blocked_thread(void *arg)
{
	pthread_setname_np(pthread_self(), blocked_names[(uintptr_t)arg]);
	if (!silent)
		bb_write_kv("blocking", "now");   /* its slot */
	blocked_fns[(uintptr_t)arg]();
	return NULL;
}

/* An idle pool worker that never calls the library. */
static void *idle_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "idle");
	for (;;)
		pause();
	return NULL;
}

static void say_fn(const char *name, void (*fn)(void))
{
	printf("fn %s 0x%llx\n", name, (unsigned long long)(uintptr_t)fn);
}

/* A thread of another library's pool: it never writes, it calls
 * bb_thread_init() at its start, then overflows its stack. */
static void *pool_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "pool-worker");
	if (bb_thread_init() != 0 || bb_thread_init() != 0)
		exit(7);
	printf("tid %ld\n", (long)gettid());
	say_addr(NULL);
	exit(recurse(0));
}

/* A thread that never calls the library overflows its stack. */
static void *silent_overflow_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "silent-worker");
	printf("tid %ld\n", (long)gettid());
	say_addr(NULL);
	exit(recurse(0));
}

static int crash(const char *kind)
{
	struct rlimit no_core = { 0, 0 };
	long pg = sysconf(_SC_PAGESIZE);

	setrlimit(RLIMIT_CORE, &no_core);
	alarm(60);   /* a handler that loops (a bug under test) still ends */
	if (!strncmp(kind, "report-", 7))
		return report(kind);
	if (!strncmp(kind, "fatal", 5))
		return fatal(kind);
	if (!strcmp(kind, "chain")) {
		struct sigaction sa = { .sa_sigaction = chained, .sa_flags = SA_SIGINFO };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, NULL);
	}
	if (bb_init(0) != 0)
		return 3;
	bb_write_kv("before", kind);   /* claims this thread's ring */
	if (!strcmp(kind, "segv") || !strcmp(kind, "chain")) {
		volatile uintptr_t bad = 16;

		say_addr((void *)bad);
		*(volatile int *)bad = 1;
	} else if (!strcmp(kind, "bus")) {
		char path[] = "/tmp/bbchild.XXXXXX";
		int fd = mkstemp(path);
		volatile uint8_t *m;

		if (fd < 0 || ftruncate(fd, pg * 2))
			return 5;
		m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		unlink(path);
		if (m == MAP_FAILED || ftruncate(fd, 0))
			return 5;
		say_addr((const void *)(m + pg));
		m[pg] = 1;
	} else if (!strcmp(kind, "abort")) {
		say_addr(NULL);
		abort();
	} else if (!strcmp(kind, "assert")) {
		say_addr(NULL);
		assert(never > 0);
	} else if (!strcmp(kind, "overflow")) {
		say_addr(NULL);
		return recurse(0);
	} else if (!strcmp(kind, "inwrite")) {
		bb_write_bytes(fault_src(), (size_t)pg * 2);
	} else if (!strcmp(kind, "thread")) {
		pthread_t th;

		if (pthread_create(&th, NULL, crash_thread, NULL))
			return 5;
		pthread_join(th, NULL);
	} else if (!strcmp(kind, "threads") || !strcmp(kind, "silent-threads") ||
		   !strcmp(kind, "many-threads")) {
		pthread_t th;
		volatile uintptr_t bad = 32;
		int idle = !strcmp(kind, "many-threads") ? 300 : kind[0] == 's' ? 20 : 0;
		pthread_attr_t small;

		silent = strcmp(kind, "threads") != 0;
		if (pipe(block_pipe) || pthread_barrier_init(&blocked_bar, NULL, 4) ||
		    pthread_attr_init(&small) || pthread_attr_setstacksize(&small, 64 * 1024))
			return 5;
		for (int i = 0; i < 3; i++) {
			if (pthread_create(&th, NULL, blocked_thread, (void *)(uintptr_t)i))
				return 5;
		}
		/* after the three: listed (and asked) before the idle ones */
		for (int i = 0; i < idle; i++)
			if (pthread_create(&th, &small, idle_thread, NULL))
				return 5;
		say_fn("blocked_in_read", blocked_in_read);
		say_fn("in_cond_wait", in_cond_wait);
		say_fn("in_nanosleep", in_nanosleep);
		pthread_barrier_wait(&blocked_bar);
		usleep(200 * 1000);   /* into their system calls */
		say_addr((void *)bad);
		*(volatile int *)bad = 1;
	} else if (!strcmp(kind, "pool-overflow") || !strcmp(kind, "silent-overflow")) {
		pthread_t th;

		if (pthread_create(&th, NULL, kind[0] == 'p' ? pool_thread : silent_overflow_thread,
				   NULL))
			return 5;
		pthread_join(th, NULL);
#if defined(__x86_64__)
	} else if (!strcmp(kind, "fpe")) {
		/* Integer division by zero in asm: UBSan would report it in C
		 * before the CPU does. */
		uint32_t lo = 1, hi = 0, zero = 0;

		say_addr(NULL);
		__asm__ __volatile__("divl %2" : "+a"(lo), "+d"(hi) : "r"(zero));
	} else if (!strcmp(kind, "ill")) {
		say_addr(NULL);
		__asm__ __volatile__("ud2");
	} else if (!strcmp(kind, "trap")) {
		say_addr(NULL);
		__asm__ __volatile__("int3");
#endif
	} else if (!strcmp(kind, "handler")) {
		signal(SIGSEGV, abort_in_handler);   /* after bb_init: ours is replaced */
		bb_write_bytes(fault_src(), (size_t)pg * 2);
	}
	return 4;
}

int main(int argc, char **argv)
{
	long n;

	if (argc != 3)
		return 2;
	if (!strcmp(argv[1], "crash"))
		return crash(argv[2]);
	n = strtol(argv[2], NULL, 10);
	if (bb_init(0) != 0)
		return 3;
	if (!strcmp(argv[1], "exec")) {
		char next[24];

		bb_write_kv_i64("image", n);
		if (n < 2) {
			snprintf(next, sizeof(next), "%ld", n + 1);
			execl("/proc/self/exe", argv[0], "exec", next, (char *)NULL);
			return 4;
		}
		ready_and_wait();
	}
	if (!strcmp(argv[1], "state")) {
		char req[32];

		snprintf(req, sizeof(req), "req-%ld", n);
		if (bb_set("request", req) || bb_set_i64("n", n) || bb_set_bool("ok", true) ||
		    bb_set("gone", "x") || bb_unset("gone"))
			return 5;
		ready_and_wait();
	}
	if (!strcmp(argv[1], "records")) {
		for (long i = 0; i < n; i++)
			bb_write_kv_i64("i", i);
		ready_and_wait();
	}
	return 2;
}
