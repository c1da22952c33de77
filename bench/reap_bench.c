/* SPDX-License-Identifier: MIT */
/*
 * reap-bench - how bb-reap's scan scales with the number of boxes.
 *
 * Usage: reap-bench BB-REAP [N...]        (default N: 1000 5000 10000)
 *
 * Makes one real, small box (one 4 KiB private ring: 16 KiB) with a child
 * that calls bb_init_opts() and _exit()s, then for each N fills a fresh
 * directory on tmpfs (/dev/shm, like production) with N copies whose owner
 * pid is patched (blackbox/format.h offsets) to pids above pid_max, so every
 * owner is certainly gone.  It then times whole runs of the bb-reap binary:
 *
 *   dry     --dry-run --min-age 0   every box opened, validated, judged
 *   young   --min-age 1h            same, all kept as too young
 *   reap    --min-age 0             judged and unlinked
 *   archive --min-age 0 --archive   judged, copied to disk (fsync), unlinked
 *
 * and prints milliseconds per run and per 1,000 boxes.  Output of bb-reap
 * goes to /dev/null; a run that does not exit 0 aborts the benchmark.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>

extern char **environ;

static void die(const char *what)
{
	fprintf(stderr, "reap-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p), 0;
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* One real box, read back into memory. */
static void *template_box(size_t *len)
{
	char dir[] = "/dev/shm/reap-bench-tmpl.XXXXXX", path[512];
	struct stat st;
	void *buf;
	pid_t pid;
	int fd, status;

	if (!mkdtemp(dir))
		die("mkdtemp");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct bb_options o = { .dir = dir, .segment_count = 1, .segment_size = 4096 };

		if (bb_init_opts(&o) < 0)
			_exit(2);
		for (int i = 0; i < 20; i++)
			bb_write_kv_i64("i", i);
		_exit(0); /* no atexit: the box stays */
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("template writer");
	/* the only entry: blackbox.<pid>.<starttime>.0 */
	{
		DIR *d = opendir(dir);
		struct dirent *e;

		path[0] = '\0';
		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)))
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (d)
			closedir(d);
		if (!path[0])
			die("finding the template box");
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	if (!buf || read(fd, buf, *len) != (ssize_t)*len)
		die("reading the template box");
	close(fd);
	rm_tree(dir);
	return buf;
}

static void fill(const char *dir, unsigned n, void *box, size_t len)
{
	struct bb_header *h = box;
	long pid_max = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");

	if (f) {
		if (fscanf(f, "%ld", &pid_max) != 1)
			pid_max = 4194304;
		fclose(f);
	}
	for (unsigned i = 0; i < n; i++) {
		char path[512];
		int fd;

		h->pid = (int32_t)(pid_max + 1 + i); /* never a running process */
		snprintf(path, sizeof(path), "%s/" BB_NAME_PREFIX "%ld.%llu.0", dir, (long)h->pid,
			 (unsigned long long)h->starttime);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, box, len) != (ssize_t)len || close(fd) < 0)
			die(path);
	}
}

static double run(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	double t0, t1;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	t0 = now_ms();
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		die("posix_spawn");
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	t1 = now_ms();
	posix_spawn_file_actions_destroy(&fa);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "reap-bench: %s %s ... failed (status %#x)\n", argv[0], argv[1], st);
		exit(1);
	}
	return t1 - t0;
}

static unsigned count(const char *dir)
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

int main(int argc, char **argv)
{
	static const unsigned def[] = { 1000, 5000, 10000 };
	char *reap;
	size_t len;
	void *box;
	int nn = argc > 2 ? argc - 2 : 3;

	if (argc < 2) {
		fprintf(stderr, "usage: reap-bench BB-REAP [N...]\n");
		return 2;
	}
	reap = argv[1];
	box = template_box(&len);
	printf("box size %zu bytes; times are whole bb-reap runs (process start included)\n", len);
	printf("%8s %-8s %10s %14s\n", "boxes", "mode", "ms/run", "ms/1000 boxes");
	for (int k = 0; k < nn; k++) {
		unsigned n = argc > 2 ? (unsigned)strtoul(argv[2 + k], NULL, 10) : def[k];
		char dir[] = "/dev/shm/reap-bench.XXXXXX", arch[] = "/var/tmp/reap-bench-arch.XXXXXX";
		char *dry[] = { reap, "--dir", dir, "--min-age", "0", "--dry-run", NULL };
		char *young[] = { reap, "--dir", dir, "--min-age", "1h", NULL };
		char *reaprun[] = { reap, "--dir", dir, "--min-age", "0", NULL };
		char *archrun[] = { reap, "--dir", dir, "--min-age", "0", "--archive", arch, NULL };
		double best_dry = 1e18, best_young = 1e18, t;

		if (!n || !mkdtemp(dir) || !mkdtemp(arch))
			die("mkdtemp");
		fill(dir, n, box, len);
		for (int rep = 0; rep < 3; rep++) {
			t = run(dry);
			best_dry = t < best_dry ? t : best_dry;
			t = run(young);
			best_young = t < best_young ? t : best_young;
		}
		if (count(dir) != n) {
			fprintf(stderr, "reap-bench: a read-only run removed boxes\n");
			return 1;
		}
		printf("%8u %-8s %10.1f %14.2f\n", n, "dry", best_dry, best_dry * 1000 / n);
		printf("%8u %-8s %10.1f %14.2f\n", n, "young", best_young, best_young * 1000 / n);
		t = run(reaprun);
		if (count(dir) != 0) {
			fprintf(stderr, "reap-bench: %u boxes left after reaping\n", count(dir));
			return 1;
		}
		printf("%8u %-8s %10.1f %14.2f\n", n, "reap", t, t * 1000 / n);
		fill(dir, n, box, len);
		t = run(archrun);
		printf("%8u %-8s %10.1f %14.2f\n", n, "archive", t, t * 1000 / n);
		if (count(dir) != 0 || count(arch) != n) {
			fprintf(stderr, "reap-bench: archive run left %u boxes, %u archives\n",
				count(dir), count(arch));
			return 1;
		}
		rm_tree(dir);
		rm_tree(arch);
		fflush(stdout);
	}
	free(box);
	return 0;
}
