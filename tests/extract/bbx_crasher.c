/* SPDX-License-Identifier: MIT */
/*
 * bbx_crasher - a writer that dies of SIGSEGV with the crash handler on,
 * for bb-extract's format 2.0 tests (check_v2.py) and the journal tests
 * (tests/journal).  Built with -g -O0 so the symboliser has something to
 * find: the fault is in bbx_crash_here().
 *
 *   bbx_crasher [inwrite | overflow | inhandler | wait | big | sleep]
 *       sets state, writes records (one important), prints its pid, then
 *       crashes in bbx_crash_here(); with "inwrite" it crashes inside a
 *       bb_write_bytes() of a value on an inaccessible page instead, so
 *       the interrupted record must come out torn; "overflow": a runaway
 *       recursion in bbx_recurse() overflows the stack; "inhandler":
 *       bbx_crash_here() is called from a SIGUSR1 handler (a signal frame
 *       in the middle of the stack).  "wait": blocks until
 *       killed instead of crashing (a SIGKILL leaves no crash record);
 *       "big": the same with a 12 MiB box full of records; "sleep": no
 *       box at all, prints its pid and blocks (a sibling process).
 *       BLACKBOX_CLOCK=tsc for a TSC box; BBX_COMM becomes its comm
 *       (prctl) before bb_init, control characters and all.
 */
#include <blackbox.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

static int *volatile null_ptr;

/* noinline and not static: a named frame the test expects to see */
/* no_sanitize: under UBSan the NULL store must fault, not be reported. */
__attribute__((noinline)) void bbx_crash_here(int depth);
__attribute__((noinline, no_sanitize("undefined"))) void bbx_crash_here(int depth)
{
	if (depth > 0) {
		bbx_crash_here(depth - 1);
		__asm__ __volatile__("" ::: "memory"); /* not a tail call */
		return;
	}
	*null_ptr = 42;
}

static volatile int never = -1;   /* the compiler cannot see the end */

__attribute__((noinline)) int bbx_recurse(int n);
__attribute__((noinline)) int bbx_recurse(int n)
{
	volatile char pad[256];

	if (n == never)
		return 0;
	pad[0] = (char)n;
	return bbx_recurse(n + 1) + pad[0];   /* not a tail call */
}

static void on_usr1(int sig)
{
	(void)sig;
	bbx_crash_here(0);
}

int main(int argc, char **argv)
{
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER, .size = 1 << 20 };
	const char *mode = argc > 1 ? argv[1] : "", *comm = getenv("BBX_COMM");
	int rc, steps = 5;

	if (comm)
		prctl(PR_SET_NAME, comm, 0, 0, 0);
	if (!strcmp(mode, "sleep")) {
		printf("%d\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "big")) {
		o.size = 12u << 20;
		steps = 100000;
	}
	rc = bb_init_opts(&o);
	if (rc) {
		fprintf(stderr, "bb_init_opts: %d\n", rc);
		return 1;
	}
	bb_set("request", "GET /index");
	bb_set_i64("inflight", 3);
	for (int i = 0; i < steps; i++)
		bb_write_kv_i64("step", i);
	bb_write_kv_important("phase", "about to crash");
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "wait") || !strcmp(mode, "big"))
		for (;;)
			pause();
	if (!strcmp(mode, "inwrite")) {
		void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			bb_write_bytes(p, 100); /* faults while copying the value */
		return 1;
	}
	if (!strcmp(mode, "overflow"))
		return bbx_recurse(0);
	if (!strcmp(mode, "inhandler")) {
		signal(SIGUSR1, on_usr1);
		raise(SIGUSR1);
		return 1;
	}
	bbx_crash_here(2);
	return 0;
}
