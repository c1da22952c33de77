/* SPDX-License-Identifier: MIT */
/*
 * proc.c - what the library reads from /proc, for the writer (the owner's
 * identity in the header) and the readers (is that owner still alive): a
 * small file, a process's start time, the boot id.  The liveness check
 * compares what the writer stored with what a reader reads now, so both
 * sides read them here, the same way (FORMAT.md §2 "Liveness").
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "text.h"

ssize_t bb__read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t done = 0;

	if (fd < 0) {
		buf[0] = '\0';
		return -errno;
	}
	while (done < len - 1) {
		ssize_t n = read(fd, buf + done, len - 1 - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			buf[0] = '\0';
			return n;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	buf[done] = '\0';
	return (ssize_t)done;
}

int bb__proc_starttime(pid_t pid, uint64_t *st)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	n = bb__read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	/* comm may hold ')' and spaces: fields resume after the LAST ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		if (field == 22) {
			char *end;

			errno = 0;
			*st = strtoull(p, &end, 10);
			return end == p || errno ? -EINVAL : 0;
		}
		while (*p && *p != ' ')
			p++;
	}
	return -EINVAL;
}

/* The boot id, read once: it does not change while a process runs, and
 * readers ask for it once per box (a scan of ten thousand boxes). */
static char boot_id[64];
static int boot_rc;
static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

static void boot_read(void)
{
	ssize_t n = bb__read_file("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id));

	if (n <= 0) {
		boot_id[0] = '\0';
		boot_rc = n < 0 ? (int)n : -ENODATA;
		return;
	}
	boot_id[strcspn(boot_id, "\n")] = '\0';
}

int bb__boot_id(char *buf, size_t len)
{
	/* pthread_once: the read happens-before every return of it */
	pthread_once(&boot_once, boot_read);
	if (boot_rc) {
		buf[0] = '\0';
		return boot_rc;
	}
	bb__strlcpy(buf, boot_id, len);
	return 0;
}
