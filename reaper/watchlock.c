/* SPDX-License-Identifier: MIT */
/*
 * reaper/watchlock.c - the lock bb-reap --watch holds while it watches a
 * box directory, by which libblackbox's crash-loop budget leaves dead
 * boxes to it (libblackbox/budget_index.c, bb-reap(8) "THE BUDGET").
 *
 * The file is ".bb-reap-watch.<euid>" in the watched directory, mode
 * 0644, owned by the watcher's euid, with a write lock (fcntl F_WRLCK) on
 * it for as long as the watcher runs; the kernel drops the lock when the
 * watcher dies, however it dies.  It is made under a temporary name,
 * locked, then renamed into place, so the name never shows an unlocked
 * file of ours; a file another user left under the name is replaced when
 * the directory lets us (root, or not sticky), and otherwise the watcher
 * runs without the lock (the budget then trims as if it were not there).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reap.h"

#define WATCH_PREFIX ".bb-reap-watch."

int reap_watch_claim(int dirfd, char *name, size_t len)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char tmp[96];
	int fd = -1;

	snprintf(name, len, WATCH_PREFIX "%lu", (unsigned long)geteuid());
	for (int i = 0; i < 16 && fd < 0; i++) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		snprintf(tmp, sizeof(tmp), "%s.%ld.%lx", name, (long)getpid(),
			 (unsigned long)t.tv_nsec ^ (unsigned long)i);
		fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) < 0 || fcntl(fd, F_SETLK, &fl) < 0 ||
	    renameat(dirfd, tmp, dirfd, name) < 0) {
		int e = errno;

		unlinkat(dirfd, tmp, 0);
		close(fd);
		return -e;
	}
	return fd;
}

void reap_watch_release(int dirfd, int fd, const char *name)
{
	struct stat a, b;

	if (fd < 0)
		return;
	/* only while the name is still our file */
	if (fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(dirfd, name, 0);
	close(fd);
}
