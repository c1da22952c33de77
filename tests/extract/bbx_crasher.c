/* SPDX-License-Identifier: MIT */
/*
 * bbx_crasher - a writer that dies of SIGSEGV with the crash handler on,
 * for bb-extract's format 2.0 tests (check_v2.py).  Built with -g -O0 so
 * the symboliser has something to find: the fault is in bbx_crash_here().
 *
 *   bbx_crasher   - sets state, writes records, prints its pid, then
 *                   crashes (BLACKBOX_CLOCK=tsc for a TSC box)
 */
#include <blackbox.h>
#include <stdio.h>
#include <unistd.h>

static int *volatile null_ptr;

/* noinline and not static: a named frame the test expects to see */
__attribute__((noinline)) void bbx_crash_here(int depth);
__attribute__((noinline)) void bbx_crash_here(int depth)
{
	if (depth > 0) {
		bbx_crash_here(depth - 1);
		__asm__ __volatile__("" ::: "memory"); /* not a tail call */
		return;
	}
	*null_ptr = 42;
}

int main(void)
{
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER, .size = 1 << 20 };
	int rc;

	rc = bb_init_opts(&o);
	if (rc) {
		fprintf(stderr, "bb_init_opts: %d\n", rc);
		return 1;
	}
	bb_set("request", "GET /index");
	bb_set_i64("inflight", 3);
	for (int i = 0; i < 5; i++)
		bb_write_kv_i64("step", i);
	bb_write_kv("phase", "about to crash");
	printf("%d\n", (int)getpid());
	fflush(stdout);
	bbx_crash_here(2);
	return 0;
}
