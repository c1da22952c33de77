/* SPDX-License-Identifier: MIT */
/*
 * follow_bench BB_EXTRACT [ROUNDS] [CALLS] - writer cost while
 * `bb-extract --follow` streams the same box, against the idle write
 * benchmark (BENCHMARKS.md "Extraction").
 *
 * One process, one box (BLACKBOX_DIR if set, else /dev/shm): ROUNDS times,
 * a loop of CALLS bb_write_kv("req", "GET /index"), timed in the writer
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), with nobody
 * reading, then the same loop while `BB_EXTRACT --follow PID --json`
 * (output to /dev/null) follows this box, started before the loop and
 * stopped after it.  Idle and follow rounds alternate so that drift of a
 * loaded machine hits both.  Prints ns per call for each round, the
 * follower's CPU time, the medians and their ratio.  A loop is 30 M calls
 * by default (about a second: some 20 polls of --follow); shorter loops
 * mostly measure the follower's start and first catch-up.  Benchmark, not a test: nothing is asserted.
 */
#include <blackbox.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns of this thread's CPU time per bb_write_kv over @calls calls: time
 * the writer spends preempted by other processes (the follower included,
 * were it on the same CPU) is not counted; what the follower costs the
 * writer through shared caches, memory bandwidth or a sibling hardware
 * thread is. */
static double loop(unsigned long calls)
{
	double t0 = cpu_ns();

	for (unsigned long i = 0; i < calls; i++)
		bb_write_kv("req", "GET /index");
	return (cpu_ns() - t0) / (double)calls;
}

static pid_t start_follow(const char *bbx)
{
	const char *dir = getenv("BLACKBOX_DIR");
	char pid[24];
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	p = fork();
	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		if (dir)
			execl(bbx, bbx, "--follow", pid, "--json", "--dir", dir, (char *)NULL);
		else
			execl(bbx, bbx, "--follow", pid, "--json", (char *)NULL);
		_exit(127);
	}
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 7;
	unsigned long calls = argc > 3 ? strtoul(argv[3], NULL, 0) : 30000000;
	double *idle, *follow;
	int ret;

	if (argc < 2 || !rounds || !calls) {
		fprintf(stderr, "usage: follow_bench BB_EXTRACT [ROUNDS] [CALLS]\n");
		return 2;
	}
	idle = calloc(rounds, sizeof(*idle));
	follow = calloc(rounds, sizeof(*follow));
	if (!idle || !follow)
		return 1;
	ret = bb_init(0);
	if (ret < 0) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	loop(calls / 4); /* warm up: wrap the ring once at least */
	printf("round  idle ns/call  --follow ns/call  follower CPU, whole life (ms, %% of the loop)\n");
	for (unsigned r = 0; r < rounds; r++) {
		struct timespec settle = { 0, 200 * 1000 * 1000 };
		struct rusage ru;
		double t0, cpu_ms, loop_ms;
		pid_t p;
		int st;

		idle[r] = loop(calls);
		p = start_follow(argv[1]);
		if (p < 0) {
			perror("fork");
			return 1;
		}
		nanosleep(&settle, NULL); /* let it open the box and catch up */
		if (waitpid(p, &st, WNOHANG) == p) {
			fprintf(stderr, "%s --follow %d exited early (status %d)\n",
				argv[1], (int)getpid(), st);
			return 1;
		}
		/* The follower's CPU time (wait4) covers its whole life:
		 * start, catching up and the loop; an upper bound for the
		 * loop's share. */
		t0 = now_ns();
		follow[r] = loop(calls);
		loop_ms = (now_ns() - t0) / 1e6;
		kill(p, SIGTERM);
		wait4(p, &st, 0, &ru);
		cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
			fprintf(stderr, "cannot run %s\n", argv[1]);
			return 1;
		}
		printf("%5u  %12.2f  %16.2f  %7.1f ms (%4.1f%%)\n", r + 1, idle[r], follow[r],
		       cpu_ms, 100.0 * cpu_ms / loop_ms);
	}
	double mi = median(idle, rounds), mf = median(follow, rounds);

	printf("median idle %.2f ns/call, with --follow %.2f ns/call: ratio %.3f\n",
	       mi, mf, mf / mi);
	bb_close();
	return 0;
}
