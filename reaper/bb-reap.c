/* SPDX-License-Identifier: MIT */
/*
 * bb-reap - remove boxes whose owner is gone, optionally archiving them.
 *
 * Runs as root from a systemd timer or cron (or as a service with
 * --watch), in a world-writable directory (/dev/shm) where any user can
 * plant any file under any name.  Every entry is therefore judged from
 * what it is, never from what its name says (judge.c); a pass over the
 * directory plans the archive copies of the boxes that go against their
 * owners' quotas before making any (pass.c); the copies and their quotas
 * are archive.c's, the journal entries journal-send.c's, --watch is watch.c.
 * This file reads the command line, sets up a run and says how it went.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "reap.h"

#define EXIT_TROUBLE 1  /* something could not be handled */
#define EXIT_USAGE   2
#define EXIT_NOCOPY  3  /* a box went without the copy --archive asked for */

static int scan_cb(int dirfd, const char *name, void *arg)
{
	return reap_entry(arg, dirfd, name, NULL) == -ENOMEM ? -ENOMEM : 0;
}

/* One run over the whole directory: judge every entry, then end the pass. */
int reap_run(struct reap_ctx *c)
{
	struct timespec now;
	int r;

	clock_gettime(CLOCK_REALTIME, &now);
	c->now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
#ifdef BB_HAVE_JOURNAL
	/* what earlier runs reported, locked for this run (reported.c) */
	if (c->o.journal && reap_reported_open(c) < 0)
		return -EIO;
#endif
	r = bb_scan_dir(c->o.dir, scan_cb, c);
	if (r < 0) {
		reap_log("error: cannot scan %s: %s", c->o.dir, strerror(-r));
		c->errors++;
	}
	reap_pass_end(c);
#ifdef BB_HAVE_JOURNAL
	if (c->reported_file && reap_reported_close(c) < 0)
		c->errors++;
#endif
	return 0;
}

int main(int argc, char **argv)
{
	struct reap_ctx c = { .archfd = -1, .dirfd = -1 };
	struct statfs sf;
	int r;

	if (reap_parse_opts(argc, argv, &c.o) < 0) {
		fprintf(stderr, "Try 'bb-reap --help'.\n");
		return EXIT_USAGE;
	}
	c.uid = getuid();
	c.root = geteuid() == 0;
	/* one write(2) per log line: whole lines in the journal, and cheap */
	setvbuf(stderr, NULL, _IOLBF, BUFSIZ);
	c.volatile_dir = statfs(c.o.dir, &sf) == 0 &&
			 (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
	c.dirfd = open(c.o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dirfd < 0) {
		reap_log("error: cannot scan %s: %s", c.o.dir, strerror(errno));
		return EXIT_TROUBLE;
	}
	if (c.o.archive) {
		r = reap_archive_open(&c);
		if (r < 0 && !(c.o.dry_run && r == -ENOENT)) {
			/* without an archive nothing may be removed */
			reap_log("error: archive directory %s: %s", c.o.archive, strerror(-r));
			return EXIT_TROUBLE;
		}
	}

	r = c.o.watch ? reap_watch(&c) : reap_run(&c);
	if (r < 0) {
		if (c.archfd >= 0)
			close(c.archfd);
		return EXIT_TROUBLE;
	}

	/* a dry run that would remove nothing says why, when that is the age */
	if (c.o.dry_run && !c.reaped && c.young)
		reap_log("nothing would be reaped: %u %s whose owner is gone %s younger than "
			 "--min-age (%llu s)", c.young, c.young == 1 ? "box" : "boxes",
			 c.young == 1 ? "is" : "are", (unsigned long long)c.o.min_age_s);
	if (c.o.verbose)
		reap_log("%u entries: %u %s (%u without an archive copy), %u kept, %u skipped, "
			 "%u errors, %u archives %s, %u journal entries sent",
			 c.entries, c.reaped, c.o.dry_run ? "would be reaped" : "reaped",
			 c.uncopied, c.kept, c.skipped, c.errors, c.pruned,
			 c.o.dry_run ? "would be pruned" : "pruned", c.reported);
	if (c.archfd >= 0)
		close(c.archfd);
	close(c.dirfd);
	free(c.cands);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		reap_log("error: writing standard output: %s", strerror(errno));
		return EXIT_TROUBLE;
	}
	if (c.lost)
		reap_log("%u %s reaped without an archive copy: over %s owner's archive quota, or "
			 "the archive file system full (exit status %d)", c.lost,
			 c.lost == 1 ? "box" : "boxes", c.lost == 1 ? "its" : "their", EXIT_NOCOPY);
	return c.errors ? EXIT_TROUBLE : c.lost ? EXIT_NOCOPY : 0;
}
