/* SPDX-License-Identifier: MIT */
/*
 * Description: fixture process for the bb-reap tests.  Creates a box with
 * bb_init() (BLACKBOX_DIR and BLACKBOX_SIZE from the environment), writes a
 * few records, prints its pid on stdout (the readiness signal), then, per
 * argv[1]:
 *   wait    block until stdin reaches EOF, then _exit(0): the box stays
 *           (the tests usually SIGKILL it before)
 *   exit    block until stdin reaches EOF, then return from main: the
 *           atexit handler unlinks the box
 *   exec    exec() this program again as "execed": same pid and start
 *           time, the box is no longer mapped
 *   execed  (after exec, no box) print the pid, wait for EOF, _exit(0)
 *   abandon _exit(0) at once (box left behind, state "running")
 *   crash   no readiness line: die of SIGSEGV at once (the crash handler
 *           records it with BLACKBOX_CRASH_HANDLER=1), no core dump: a
 *           service that crashes at start, restarted in a loop
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <blackbox.h>

static void ready(void)
{
	printf("%ld\n", (long)getpid());
	fflush(stdout);
}

static void wait_eof(void)
{
	char buf[64];
	ssize_t n;

	do
		n = read(0, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "wait";
	int r;

	if (!strcmp(mode, "execed")) {
		ready();
		wait_eof();
		_exit(0);
	}
	r = bb_init(0);
	if (r < 0) {
		fprintf(stderr, "bbr_writer: bb_init: %s\n", strerror(-r));
		return 3;
	}
	for (int i = 0; i < 100; i++) {
		bb_write_kv_i64("iteration", i);
		bb_write_str("the quick brown fox jumps over the lazy dog");
	}
	if (!strcmp(mode, "crash")) {
		/* not dumpable: no core file (nor a core_pattern helper) per crash */
		prctl(PR_SET_DUMPABLE, 0);
		raise(SIGSEGV);
		return 4;
	}
	if (!strcmp(mode, "exec")) {
		char *av[] = { argv[0], (char *)"execed", NULL };

		execv("/proc/self/exe", av);
		fprintf(stderr, "bbr_writer: exec: %s\n", strerror(errno));
		return 3;
	}
	ready();
	if (!strcmp(mode, "abandon"))
		_exit(0);
	wait_eof();
	if (!strcmp(mode, "exit"))
		return 0;
	_exit(0);
}
