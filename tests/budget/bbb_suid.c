/* SPDX-License-Identifier: MIT */
/*
 * Description: a set-uid program that links libblackbox (statically: the
 * loader ignores LD_LIBRARY_PATH in a set-uid program), for the budget
 * suite: tests/budget installs a copy set-uid root and runs it as uid 65534
 * under names of that user's choosing.  bb_init(0), prints its pid, waits
 * for EOF on stdin (the test SIGKILLs it before), then _exit(0): its box
 * stays behind, a dead box of root.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <blackbox.h>

int main(void)
{
	char buf[64];
	ssize_t n;
	int r = bb_init(0);

	if (r < 0) {
		printf("error %d\n", -r);
		return 1;
	}
	bb_write_str("a set-uid program started");
	printf("%ld\n", (long)getpid());
	fflush(stdout);
	do
		n = read(0, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
	_exit(0);
}
