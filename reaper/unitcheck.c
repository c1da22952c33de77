/* SPDX-License-Identifier: MIT */
/*
 * reaper/unitcheck.c - may a journal entry carry OBJECT_SYSTEMD_UNIT for the
 * unit a box names?
 *
 * `journalctl -u UNIT` shows, beside the unit's own logs, the entries that
 * a root process sent with OBJECT_SYSTEMD_UNIT=UNIT: bb-reap lends the box
 * its authority there.  The unit in a box is its owner's claim (bb_init
 * read its own cgroup; any user can write any header), so a user must not
 * be able to put a forged crash under another user's service that way.
 * The process is dead: its cgroup cannot be read any more.  What bb-reap
 * can check now, and accepts:
 *
 *  - the box file belongs to root (root can write anything anyway);
 *  - the unit is the owner's own user manager, user@<uid>.service with the
 *    box file owner's uid: a user's own units (OBJECT_SYSTEMD_USER_UNIT);
 *  - a process of the file owner's uid (real, effective, saved or file
 *    system uid) runs in the box's cgroup now: the service's other
 *    processes, or the one systemd restarted.  Only root can put a process
 *    into a cgroup outside a user's own delegated tree, so a user's
 *    process there means the unit runs that user's code.
 *
 * Anything else stays a claim (BB_UNIT, with BB_UNIT_VOUCHED=0): a crash of
 * a service that was not restarted and left nothing running is reported
 * without OBJECT_SYSTEMD_UNIT.
 *
 * Bounded: the cgroup path is the reader's (a validated unit path, at most
 * 511 bytes), opened beneath the cgroup mount only (no "..", no symlinks,
 * cgroupfs has none), at most CHECK_PIDS processes examined.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <blackbox/reader.h>

#include "reap.h"

#define PROCS_MAX   (64u << 10) /* bytes of cgroup.procs read */
#define CHECK_PIDS  4096u

/* The mount of the hierarchy the path was recorded in. */
static int cgroup_root(int hierarchy)
{
	static const struct { int h; const char *path; long magic; } roots[] = {
		{ BB_CGROUP_UNIFIED, "/sys/fs/cgroup", CGROUP2_SUPER_MAGIC },
		{ BB_CGROUP_UNIFIED, "/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC },
		{ BB_CGROUP_LEGACY, "/sys/fs/cgroup/systemd", CGROUP_SUPER_MAGIC },
	};

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		struct statfs sf;
		int fd;

		if (roots[i].h != hierarchy)
			continue;
		fd = open(roots[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstatfs(fd, &sf) == 0 && sf.f_type == roots[i].magic)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* Every component a plain name: no empty one, no "." or "..". */
static bool plain_path(const char *p)
{
	if (*p != '/')
		return false;
	while (*p == '/') {
		size_t n = strcspn(++p, "/");

		if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return !*p;
}

/* Does process @pid have @uid among its real, effective, saved, fs uids? */
static bool pid_has_uid(long pid, uint32_t uid)
{
	char path[64], buf[4096];
	int fd, n;
	char *u;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	u = strstr(buf, "\nUid:");
	if (!u)
		return false;
	u += 5;
	for (int i = 0; i < 4; i++) {
		char *end;
		unsigned long v = strtoul(u, &end, 10);

		if (end == u)
			return false;
		if (v == uid)
			return true;
		u = end;
	}
	return false;
}

/* A process of @uid in the cgroup @path (of @hierarchy) now. */
static bool uid_runs_in(int hierarchy, const char *path, uint32_t uid)
{
	int root, dfd, fd;
	char *buf;
	ssize_t n;
	bool found = false;

	if (!plain_path(path))
		return false;
	root = cgroup_root(hierarchy);
	if (root < 0)
		return false;
	dfd = path[1] ? openat(root, path + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		      : dup(root);
	close(root);
	if (dfd < 0)
		return false;
	fd = openat(dfd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return false;
	buf = malloc(PROCS_MAX + 1);
	n = buf ? read(fd, buf, PROCS_MAX) : -1;
	close(fd);
	if (n > 0) {
		unsigned seen = 0;

		buf[n] = '\0';
		for (char *p = buf, *end; *p && seen < CHECK_PIDS && !found; p = end, seen++) {
			long pid = strtol(p, &end, 10);

			if (end == p || (*end && *end != '\n'))
				break;
			if (*end)
				end++;
			found = pid > 0 && pid_has_uid(pid, uid);
		}
	}
	free(buf);
	return found;
}

bool reap_unit_vouched(const struct bb_box_info *in, uint32_t file_uid, char *why, size_t len)
{
	char mgr[32];

	if (!in->unit[0]) {
		snprintf(why, len, "no unit recorded");
		return false;
	}
	if (file_uid == 0) {
		snprintf(why, len, "the box belongs to root");
		return true;
	}
	snprintf(mgr, sizeof(mgr), "user@%lu.service", (unsigned long)file_uid);
	if (!strcmp(in->unit, mgr)) {
		snprintf(why, len, "the unit is the box owner's own user manager");
		return true;
	}
	if (uid_runs_in(in->cgroup_hierarchy, in->cgroup, file_uid)) {
		snprintf(why, len, "a process of uid %lu runs in %s", (unsigned long)file_uid,
			 in->cgroup);
		return true;
	}
	snprintf(why, len, "claimed by the box; no process of uid %lu runs in %s now",
		 (unsigned long)file_uid, in->cgroup);
	return false;
}
