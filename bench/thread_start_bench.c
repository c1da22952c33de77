/* SPDX-License-Identifier: MIT */
/*
 * Description: what libblackbox's pthread_create (thread_start.c) adds to
 * starting and joining a thread: glibc's own (found in libc.so.6 with
 * dlsym), libblackbox's with the crash handler off (the call passed on),
 * and with it on (an alternate signal stack per thread: mmap, mprotect,
 * sigaltstack, munmap at exit).  Each mode runs in a child of its own,
 * rounds interleaved; the medians and the ratios to glibc's are printed.
 * Figures for BENCHMARKS.md, never asserted.
 *   thread_start_bench [threads per round] [rounds]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void *nothing(void *arg)
{
	return arg;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One round in a child: @n threads started and joined one after the
 * other; ns per thread written to @fd. */
static void round_child(int mode, int n, int fd)
{
	create_fn create = pthread_create;
	double t0, per;
	pthread_t th;

	if (mode == 0) {
		void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
		void *sym = libc ? dlsym(libc, "pthread_create") : NULL;

		if (!sym)
			_exit(2);
		memcpy(&create, &sym, sizeof(create));
	} else {
		struct bb_options o = { .flags = BB_OPT_NO_ENV |
					(mode == 2 ? BB_OPT_CRASH_HANDLER : 0) };

		if (bb_init_opts(&o) != 0)
			_exit(3);
	}
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		if (create(&th, NULL, nothing, NULL) != 0 || pthread_join(th, NULL) != 0)
			_exit(4);
	}
	per = (now_ns() - t0) / n;
	if (write(fd, &per, sizeof(per)) != (ssize_t)sizeof(per))
		_exit(5);
	_exit(0);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, rounds = argc > 2 ? atoi(argv[2]) : 9;
	static const char *const names[] = { "glibc pthread_create", "libblackbox's, handler off",
					     "libblackbox's, handler on" };
	double *t[3], med[3];

	if (n <= 0 || rounds <= 0)
		return 2;
	for (int m = 0; m < 3; m++)
		if (!(t[m] = calloc((size_t)rounds, sizeof(double))))
			return 1;
	for (int r = 0; r < rounds; r++) {
		for (int m = 0; m < 3; m++) {
			int p[2], st;
			pid_t pid;

			if (pipe(p))
				return 1;
			pid = fork();
			if (pid == 0) {
				close(p[0]);
				round_child(m, n, p[1]);
			}
			close(p[1]);
			if (pid < 0 || read(p[0], &t[m][r], sizeof(double)) != (ssize_t)sizeof(double) ||
			    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "mode %d round %d failed\n", m, r);
				return 1;
			}
			close(p[0]);
		}
	}
	printf("start and join a thread, %d per round, median of %d rounds:\n", n, rounds);
	for (int m = 0; m < 3; m++) {
		qsort(t[m], (size_t)rounds, sizeof(double), cmp);
		med[m] = t[m][rounds / 2];
		printf("  %-28s %8.0f ns  %.2fx\n", names[m], med[m], med[m] / med[0]);
	}
	return 0;
}
