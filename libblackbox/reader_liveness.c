/* SPDX-License-Identifier: MIT */
/*
 * reader_liveness.c - is a box's owner alive: boot id, pid, start time
 * (read by proc.c, as the writer read them) and its mapping of the box
 * file (FORMAT.md §2 "Liveness").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "barrier.h"
#include "internal.h"
#include "reader_int.h"

/* Does /proc/<pid>/maps name the file dev:ino?  1, 0 or -errno. */
int bb__rdr_maps_has(pid_t pid, uint64_t dev, uint64_t ino)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		unsigned long long i;

		/* start-end perms offset MAJ:MIN inode path (hex dev, decimal inode) */
		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &i) == 3)
			found = maj == major(dev) && min == minor(dev) && i == ino;
	}
	if (!found && ferror(f))
		found = -EIO;
	free(line);
	fclose(f);
	return found;
}

/* Alive by pid + start time and, when unreadable maps do not prevent it,
 * by the mapping of the file. */
BB_EXPORT bool bb_pid_maps_file(pid_t pid, uint64_t starttime, uint64_t dev, uint64_t ino)
{
	uint64_t st;
	int m;

	if (pid <= 0 || bb__proc_starttime(pid, &st) || st != starttime)
		return false;
	m = bb__rdr_maps_has(pid, dev, ino);
	if (m < 0) /* another user's process: pid + start time must do */
		return m == -EACCES || m == -EPERM;
	return m == 1;
}

static int liveness_of(const struct bb_box_info *info, int phase)
{
	char boot[64];
	bool alive = false, boot_ok = true;
	uint64_t st;

	if (bb__boot_id(boot, sizeof(boot)) == 0)
		boot_ok = !strncmp(boot, info->boot_id, sizeof(info->boot_id));
	if (boot_ok && info->pid > 0) {
		if (info->file_dev || info->file_ino)
			alive = bb_pid_maps_file(info->pid, info->starttime, info->file_dev,
						 info->file_ino);
		else
			alive = !bb__proc_starttime(info->pid, &st) && st == info->starttime;
	}
	if (alive)
		return BB_LIVENESS_ALIVE;
	switch (phase) {
	case BB_PHASE_EXITED:  return BB_LIVENESS_EXITED;
	case BB_PHASE_CRASHED: return BB_LIVENESS_CRASHED;
	case BB_PHASE_CLOSED:  return BB_LIVENESS_CLOSED;
	default:               return BB_LIVENESS_ORPHANED;
	}
}

BB_EXPORT int bb_owner_liveness(const struct bb_box_info *info)
{
	if (!info)
		return -EINVAL;
	return liveness_of(info, info->phase);
}

BB_EXPORT int bb_reader_liveness(const struct bb_reader *r)
{
	const struct bb_header *h;
	uint32_t phase;

	if (!r)
		return -EINVAL;
	h = (const struct bb_header *)(const void *)r->base;
	/* Relaxed: a phase word read for a decision, nothing read through it.
	 * A live reader takes the file's current word (one 4-byte read). */
	phase = BB__LOAD_RELAXED((uint32_t *)(uintptr_t)&h->phase);
	if (r->fd >= 0)
		(void)bb__rdr_pread_all(r->fd, &phase, sizeof(phase), offsetof(struct bb_header, phase));
	return liveness_of(&r->info, (int)phase);
}
