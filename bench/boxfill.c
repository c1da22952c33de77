/* SPDX-License-Identifier: MIT */
/*
 * bench/boxfill.c - directories full of boxes of dead owners (boxfill.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>

#include "boxfill.h"

extern char **environ;

static void die(const char *what)
{
	fprintf(stderr, "boxfill: %s: %s\n", what, strerror(errno));
	exit(1);
}

double bf_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p), 0;
}

void bf_rm_tree(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

void *bf_template(size_t size, size_t segment_size, unsigned records, size_t *len)
{
	char dir[] = "/dev/shm/boxfill-tmpl.XXXXXX", path[512] = "";
	struct stat st;
	struct dirent *e;
	void *buf;
	DIR *d;
	pid_t pid;
	int fd, status;

	if (!mkdtemp(dir))
		die("mkdtemp");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct bb_options o = { .dir = dir, .size = size, .flags = BB_OPT_NO_ENV };

		if (segment_size) {
			o.segment_count = 1;
			o.segment_size = segment_size;
		}
		if (bb_init_opts(&o) < 0)
			_exit(2);
		for (unsigned i = 0; i < records; i++)
			bb_write_kv_i64("i", i);
		_exit(0); /* no atexit: the box stays */
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("template writer");
	d = opendir(dir);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)))
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	if (d)
		closedir(d);
	if (!path[0])
		die("finding the template box");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	if (!buf || read(fd, buf, *len) != (ssize_t)*len)
		die("reading the template box");
	close(fd);
	bf_rm_tree(dir);
	return buf;
}

static bool page_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int32_t bf_fill(const char *dir, unsigned n, void *box, size_t len, int32_t first_pid,
		unsigned uids)
{
	struct bb_header *h = box;
	long pid_max = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	const size_t page = 4096;

	if (f) {
		if (fscanf(f, "%ld", &pid_max) != 1)
			pid_max = 4194304;
		fclose(f);
	}
	if (!first_pid)
		first_pid = (int32_t)(pid_max + 1);
	/* the pages to write: the header's (patched below), and those of
	 * the template that hold anything */
	bool *used = calloc(len / page + 1, sizeof(*used));

	if (!used)
		die("calloc");
	for (size_t off = 0; off < len; off += page)
		used[off / page] = !off || !page_zero((uint8_t *)box + off,
						      len - off < page ? len - off : page);
	for (unsigned i = 0; i < n; i++) {
		uint32_t uid = uids > 1 ? 70000 + i / ((n + uids - 1) / uids) : (uint32_t)geteuid();
		char path[512];
		int fd;

		h->pid = first_pid + (int32_t)i; /* never a running process */
		h->uid = uid;
		h->created_ns += 1000; /* distinct, in order */
		snprintf(path, sizeof(path), "%s/" BB_NAME_PREFIX "%ld.%llu.0", dir, (long)h->pid,
			 (unsigned long long)h->starttime);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			die(path);
		for (size_t off = 0; off < len; off += page) {
			size_t k = len - off < page ? len - off : page;

			if (!used[off / page])
				continue;
			if (pwrite(fd, (uint8_t *)box + off, k, (off_t)off) != (ssize_t)k)
				die(path);
		}
		if (ftruncate(fd, (off_t)len) < 0 || (uids > 1 && fchown(fd, uid, uid) < 0) ||
		    close(fd) < 0)
			die(path);
	}
	free(used);
	return first_pid;
}

unsigned bf_count(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return ~0u;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

void bf_usage(const char *dir, uint64_t *blocks_bytes, uint64_t *apparent)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	*blocks_bytes = *apparent = 0;
	while (d && (e = readdir(d)))
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			*blocks_bytes += (uint64_t)st.st_blocks * 512;
			*apparent += (uint64_t)st.st_size;
		}
	if (d)
		closedir(d);
}

double bf_run(char *const argv[], const char *out)
{
	posix_spawn_file_actions_t fa;
	double t0, t1;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	t0 = bf_now_ms();
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		die("posix_spawn");
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	t1 = bf_now_ms();
	posix_spawn_file_actions_destroy(&fa);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "boxfill: %s %s ... failed (status %#x)\n", argv[0],
			argv[1] ? argv[1] : "", st);
		exit(1);
	}
	return t1 - t0;
}
