/* SPDX-License-Identifier: MIT */
/*
 * Description: a set-uid program that records with libblackbox, for the
 * hostile journal suite (tests/hostile/evidence.py): the suite installs a
 * copy set-uid root and runs it as uid 65534 with BLACKBOX_* variables of
 * that user's choosing.  Linked with the static library (the loader ignores
 * LD_LIBRARY_PATH and $ORIGIN in a set-uid program).  Prints what
 * bb_init(0) made of the environment, then exits (which removes the box):
 *   "box <path> <size>"   a box was created
 *   "disabled"            recording is off (bb_path() has no box)
 *   "error <errno>"       bb_init() failed
 */
#include <blackbox.h>

#include <stdio.h>
#include <sys/stat.h>

int main(void)
{
	char path[4096];
	struct stat st;
	int r = bb_init(0);

	if (r < 0) {
		printf("error %d\n", -r);
		return 1;
	}
	if (bb_path(path, sizeof(path)) < 0) {
		printf("disabled\n");
		return 0;
	}
	printf("box %s %lld\n", path, stat(path, &st) ? -1LL : (long long)st.st_size);
	return 0;
}
