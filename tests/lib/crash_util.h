/* SPDX-License-Identifier: MIT */
/*
 * crash_util.h - helpers of test_crash.c and test_state.c: the record CRC
 * computed independently of the library (bit by bit), and starting
 * tests/lib/child with its stdout on a pipe.
 */
#ifndef BB_TESTS_CRASH_UTIL_H
#define BB_TESTS_CRASH_UTIL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Fork and exec $BB_TEST_CHILD @mode @arg with BLACKBOX_CRASH_HANDLER set
 * to @handler (NULL: unset); returns its pid, its stdout in *@out_fd. */
static inline pid_t tspawn(const char *mode, const char *arg, const char *handler, int *out_fd)
{
	const char *exe = getenv("BB_TEST_CHILD");
	int p[2];
	pid_t pid;

	cr_assert_not_null(exe, "BB_TEST_CHILD not set");
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (handler)
			setenv("BLACKBOX_CRASH_HANDLER", handler, 1);
		else
			unsetenv("BLACKBOX_CRASH_HANDLER");
		dup2(p[1], 1);
		close(p[0]);
		execl(exe, exe, mode, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out_fd = p[0];
	return pid;
}

#endif /* BB_TESTS_CRASH_UTIL_H */
