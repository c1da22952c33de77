/* SPDX-License-Identifier: MIT */
/*
 * extractor/snapshot.c - bb-extract --snapshot PID: ask the live owner of
 * a box for a snapshot (docs/FORMAT.md §14).  The request is the box's
 * dump signal queued with BB_DUMP_REQUEST(BB_DUMP_SNAPSHOT, id); the
 * kernel lets only the owner's user and root send it.  The owner's
 * library writes the bb.snapshot record and counts it; bb-reap --watch
 * archives the copy and sends the journal entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "extract.h"

/* The header's 3.2 words, read again from the file. */
static int read_words(const char *path, struct bb_header *h)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, h, sizeof(*h), 0);
	close(fd);
	return n == (ssize_t)sizeof(*h) ? 0 : -EIO;
}

int bbx_snapshot(const struct bbx_opts *o, struct bb_reader *r, int live)
{
	const struct bb_box_info *in = bb_reader_info(r);
	static struct bb_header h;
	union sigval v;
	uint32_t before, id = (uint32_t)getpid() & BB_DUMP_ID_MAX;
	int ret;

	if (!live) {
		bbx_msg(in->path, "its owner is not running: nothing to ask");
		return BBX_EXIT_NOBOX;
	}
	if ((ret = read_words(in->path, &h)) < 0) {
		bbx_msg(in->path, "cannot read the header: %s", strerror(-ret));
		return BBX_EXIT_FAILURE;
	}
	if (h.version_major != BB_FORMAT_MAJOR || h.version_minor < 3 ||
	    h.dump_signal < SIGRTMIN || h.dump_signal > SIGRTMAX) {
		bbx_msg(in->path, "the owner takes no dump requests (format %u.%u, crash handler "
			"off?)", h.version_major, h.version_minor);
		return BBX_EXIT_FAILURE;
	}
	before = h.snapshot_seq;
	v.sival_int = BB_DUMP_REQUEST(BB_DUMP_SNAPSHOT, id ? id : 1);
	if (sigqueue(o->pid, h.dump_signal, v) < 0) {
		bbx_msg(in->path, "cannot ask pid %d: %s", (int)o->pid, strerror(errno));
		return BBX_EXIT_FAILURE;
	}
	for (int i = 0; i < 100; i++) {
		struct timespec ms10 = { 0, 10000000 };

		if (read_words(in->path, &h) == 0 && h.snapshot_seq != before) {
			if (!o->quiet)
				bbx_msg(in->path, "snapshot asked of pid %d", (int)o->pid);
			return 0;
		}
		nanosleep(&ms10, NULL);
	}
	bbx_msg(in->path, "pid %d did not answer within 1 s", (int)o->pid);
	return BBX_EXIT_FAILURE;
}
