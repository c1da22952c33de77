/* SPDX-License-Identifier: MIT */
/*
 * follow_bench BB_EXTRACT [ROUNDS] [CALLS] - writer cost while
 * `bb-extract --follow` streams the same box (issue 3: at most 5% above
 * the idle write benchmark).
 *
 * One process, one box (BLACKBOX_DIR if set, else /dev/shm): ROUNDS times,
 * a timed loop of CALLS bb_write_kv("req", "GET /index") with nobody
 * reading, then the same loop while `BB_EXTRACT --follow PID --json`
 * (output to /dev/null) follows this box, started before the loop and
 * stopped after it.  Idle and follow rounds alternate so that drift of a
 * loaded machine hits both.  Prints ns per call for each round, the
 * medians and their ratio.  Benchmark, not a test: nothing is asserted.
 */
#include <blackbox.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per bb_write_kv over @calls calls. */
static double loop(unsigned long calls)
{
	double t0 = now_ns();

	for (unsigned long i = 0; i < calls; i++)
		bb_write_kv("req", "GET /index");
	return (now_ns() - t0) / (double)calls;
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
	unsigned long calls = argc > 3 ? strtoul(argv[3], NULL, 0) : 2000000;
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
	printf("round  idle ns/call  --follow ns/call\n");
	for (unsigned r = 0; r < rounds; r++) {
		struct timespec settle = { 0, 200 * 1000 * 1000 };
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
		follow[r] = loop(calls);
		kill(p, SIGTERM);
		waitpid(p, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
			fprintf(stderr, "cannot run %s\n", argv[1]);
			return 1;
		}
		printf("%5u  %12.2f  %16.2f\n", r + 1, idle[r], follow[r]);
	}
	double mi = median(idle, rounds), mf = median(follow, rounds);

	printf("median idle %.2f ns/call, with --follow %.2f ns/call: ratio %.3f\n",
	       mi, mf, mf / mi);
	bb_close();
	return 0;
}
