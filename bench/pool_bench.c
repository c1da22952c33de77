/* SPDX-License-Identifier: MIT */
/*
 * pool-bench - what a box directory full of live boxes costs bb_init(),
 * what a prefork server's start costs with the crash-loop budget, and
 * what a process pool's boxes hold (docs/DESIGN.md §9).
 *
 * Usage: pool-bench [DIR]   (default: a fresh directory under /dev/shm)
 *
 *  init:    bb_init() + bb_close() in this process, 31 times, with 0 and
 *           with 300 live boxes of this uid in DIR (300 processes that
 *           each made a 128 KiB box and wait), under the budget (64 MiB)
 *           and over it (16 MiB): median and worst bb_init(), and the
 *           ratio of the medians with 300 and with 0;
 *  prefork: a server's bb_init(), then 400 fork()ed workers that each
 *           write one record (their box is made there) and say so: the
 *           time from the first fork() to the last worker's word, with
 *           the default budget and with none (BB_OPT_NO_BUDGET), 5 of
 *           each in turns: the medians and their ratio;
 *  pool:    50 workers that each write 1,000 records: the bytes their
 *           boxes hold (st_blocks), and the ratio to 50 default boxes.
 * Run it against another libblackbox with LD_LIBRARY_PATH for "before".
 * Benchmark, not a test: nothing is asserted.  Ratios are against the
 * baseline measured in the same run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#define LIVE     300
#define REPS     31
#define WORKERS  400
#define ROUNDS   5        /* prefork starts with the budget, and without */
#define POOL     50
#define RECORDS  1000

static const char *dir;

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Remove every entry of dir (boxes, the budget's index). */
static void clean(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
}

/* @n processes that each made a box of @size and wait for EOF on *@hold. */
static void spawn_live(int n, size_t size, size_t budget, pid_t *pids, int *hold)
{
	int go[2], ready[2];
	char c;

	if (pipe(go) || pipe(ready))
		exit(1);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct bb_options o = { .dir = dir, .size = size, .budget = budget,
						.flags = BB_OPT_NO_ENV };

			close(go[1]);
			close(ready[0]);
			if (bb_init_opts(&o))
				_exit(2);
			(void)!write(ready[1], "x", 1);
			(void)!read(go[0], &c, 1);
			_exit(0); /* the box stays: the parent cleans */
		}
	}
	close(go[0]);
	close(ready[1]);
	for (int i = 0; i < n; i++)
		if (read(ready[0], &c, 1) != 1)
			exit(1);
	close(ready[0]);
	*hold = go[1];
}

static void reap_all(int n, pid_t *pids, int hold)
{
	close(hold);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
}

/* Median and worst of REPS bb_init() with @budget. */
static void time_init(size_t budget, double *median, double *worst)
{
	double t[REPS];

	for (int i = 0; i < REPS; i++) {
		struct bb_options o = { .dir = dir, .size = 128 << 10, .budget = budget,
					.flags = BB_OPT_NO_ENV };
		double t0 = now_us();

		if (bb_init_opts(&o)) {
			fprintf(stderr, "pool-bench: bb_init failed\n");
			exit(1);
		}
		t[i] = now_us() - t0;
		bb_close();
	}
	qsort(t, REPS, sizeof(t[0]), cmp_d);
	*median = t[REPS / 2];
	*worst = t[REPS - 1];
}

static void bench_init(const char *label, size_t budget)
{
	static pid_t pids[LIVE];
	double m0, w0, m1, w1;
	int hold;

	clean();
	time_init(budget, &m0, &w0);
	spawn_live(LIVE, 128 << 10, budget, pids, &hold);
	time_init(budget, &m1, &w1);
	reap_all(LIVE, pids, hold);
	clean();
	printf("init %-12s 0 live: median %.0f us worst %.0f us | %d live: median %.0f us "
	       "worst %.0f us | ratio %.2f\n", label, m0, w0, LIVE, m1, w1, m1 / m0);
}

/* A prefork start: µs from the first fork() to the last worker's word. */
static double prefork(unsigned flags)
{
	static pid_t kids[WORKERS];
	struct bb_options o = { .dir = dir, .flags = BB_OPT_NO_ENV | flags };
	int go[2], ready[2];
	double t0, t;
	char c;

	clean();
	if (pipe(go) || pipe(ready) || bb_init_opts(&o))
		exit(1);
	t0 = now_us();
	for (int i = 0; i < WORKERS; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			close(go[1]);
			bb_write_str("worker up");
			(void)!write(ready[1], "x", 1);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
	}
	close(ready[1]);
	for (int i = 0; i < WORKERS; i++)
		if (read(ready[0], &c, 1) != 1)
			exit(1);
	t = now_us() - t0;
	close(ready[0]);
	close(go[0]);
	reap_all(WORKERS, kids, go[1]);
	bb_close();
	clean();
	return t;
}

/* The bytes POOL workers' boxes hold once each wrote RECORDS records. */
static unsigned long long pool(void)
{
	static pid_t kids[POOL];
	struct bb_options o = { .dir = dir, .flags = BB_OPT_NO_ENV };
	unsigned long long bytes = 0;
	int go[2], ready[2];
	char own[4096] = "", c;
	struct dirent *e;
	struct stat st;
	DIR *d;

	clean();
	if (pipe(go) || pipe(ready) || bb_init_opts(&o) || bb_path(own, sizeof(own)) < 0)
		exit(1);
	for (int i = 0; i < POOL; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			close(go[1]);
			for (int j = 0; j < RECORDS; j++)
				bb_write_kv_i64("request", j);
			(void)!write(ready[1], "x", 1);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
	}
	close(ready[1]);
	for (int i = 0; i < POOL; i++)
		if (read(ready[0], &c, 1) != 1)
			exit(1);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char p[4200];

		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (!strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) && strcmp(p, own) &&
		    stat(p, &st) == 0)
			bytes += (unsigned long long)st.st_blocks * 512;
	}
	if (d)
		closedir(d);
	close(ready[0]);
	close(go[0]);
	reap_all(POOL, kids, go[1]);
	bb_close();
	clean();
	return bytes;
}

int main(int argc, char **argv)
{
	char tmp[] = "/dev/shm/bb-pool-bench.XXXXXX";
	double with, without, off[ROUNDS], on[ROUNDS];
	unsigned long long bytes;

	dir = argc > 1 ? argv[1] : mkdtemp(tmp);
	if (!dir) {
		perror("pool-bench: mkdtemp");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_init("under-budget", 64u << 20);
	bench_init("over-budget", 16u << 20);
	/* alternated, medians: the machine's noise hits both */
	for (int i = 0; i < ROUNDS; i++) {
		off[i] = prefork(BB_OPT_NO_BUDGET);
		on[i] = prefork(0);
	}
	qsort(off, ROUNDS, sizeof(off[0]), cmp_d);
	qsort(on, ROUNDS, sizeof(on[0]), cmp_d);
	without = off[ROUNDS / 2];
	with = on[ROUNDS / 2];
	printf("prefork %d workers, median of %d: budget off %.0f ms | budget on %.0f ms | "
	       "ratio %.2f\n", WORKERS, ROUNDS, without / 1e3, with / 1e3, with / without);
	bytes = pool();
	printf("pool %d workers x %d records: %llu bytes | %.3f of %d default boxes\n", POOL,
	       RECORDS, bytes, (double)bytes / ((double)POOL * BB_DEFAULT_SIZE), POOL);
	clean();
	if (argc <= 1)
		rmdir(dir);
	return 0;
}
