/* SPDX-License-Identifier: MIT */
/*
 * Description: a process with a box, driven by the tests.
 *   child exec N      bb_init, write "image" N; if N < 2 exec self with N+1,
 *                     else print "ready" and wait to be killed
 *   child records N   bb_init, write N kv records ("i", 0..N-1), "ready", wait
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox.h>

static void ready_and_wait(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	long n;

	if (argc != 3)
		return 2;
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
	if (!strcmp(argv[1], "records")) {
		for (long i = 0; i < n; i++)
			bb_write_kv_i64("i", i);
		ready_and_wait();
	}
	return 2;
}
