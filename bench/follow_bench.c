/* SPDX-License-Identifier: MIT */
/*
 * follow_bench BB_EXTRACT [ROUNDS] [CALLS] - writer cost while
 * `bb-extract --follow` streams the same box, against the idle write
 * benchmark (BENCHMARKS.md "Extraction").
 *
 * follow_bench BB_EXTRACT keepup [RATE] [SECONDS] [SIZE] [json] - does
 * `bb-extract --follow` keep up with a writer: one thread writes
 * bb_write_kv("req", "GET /index") at RATE records a second (default
 * 1000000, paced in batches of 1000) for SECONDS (default 5) into a box
 * of SIZE bytes (default 64m), while the follower prints them (text, or
 * JSON Lines with "json", to /dev/null).  Prints the records written,
 * those the follower delivered (its summary's intact records, less those
 * in the box before the writer started), the share delivered, and the
 * bytes it reported lost; all records being the same size, the lost
 * bytes divided by the records missed is that size when the count is
 * exact.
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
#include <blackbox/reader.h>

#include <fcntl.h>
#include <pthread.h>
#include <math.h>
#include <stdbool.h>
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

/* `BB_EXTRACT --follow PID [--json]` on this process's box, its standard
 * output to /dev/null, its standard error too; or the one that carries the
 * summary (standard output with --json, else standard error) to @summary
 * when it is not -1. */
static pid_t start_follow_to(const char *bbx, bool json, int summary)
{
	const char *dir = getenv("BLACKBOX_DIR");
	char pid[24];
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	p = fork();
	if (p == 0) {
		int fd = open("/dev/null", O_WRONLY);
		int sf = summary >= 0 ? summary : fd;

		if (fd >= 0 && sf >= 0) {
			dup2(json ? sf : fd, STDOUT_FILENO);
			dup2(json ? fd : sf, STDERR_FILENO);
		}
		if (json)
			execl(bbx, bbx, "--follow", pid, "--dir", dir ? dir : "/dev/shm", "--json",
			      (char *)NULL);
		else
			execl(bbx, bbx, "--follow", pid, "--dir", dir ? dir : "/dev/shm",
			      (char *)NULL);
		_exit(127);
	}
	return p;
}

static pid_t start_follow(const char *bbx)
{
	return start_follow_to(bbx, true, -1);
}

static int count_cb(const struct bb_record *rec, void *arg)
{
	(void)rec;
	++*(unsigned long *)arg;
	return 0;
}

/* Records in this process's box now. */
static unsigned long records_now(void)
{
	struct bb_reader *r;
	unsigned long n = 0;
	char path[4096];

	if (bb_path(path, sizeof(path)) < 0 || bb_reader_open_path(path, 0, &r, NULL, 0) < 0)
		return 0;
	bb_reader_walk(r, 0, count_cb, &n);
	bb_reader_close(r);
	return n;
}

/* The last number before @key in @text (text summary), or after "@key":
 * (JSON); 0 if absent. */
static unsigned long long find_num(const char *text, const char *key, bool json)
{
	const char *p = NULL, *q = text;
	unsigned long long v = 0;

	while ((q = strstr(q, key)))
		p = q++;
	if (!p)
		return 0;
	if (json)
		return strtoull(p + strlen(key), NULL, 10);
	while (p > text && (p[-1] == ' '))
		p--;
	while (p > text && p[-1] >= '0' && p[-1] <= '9')
		p--;
	sscanf(p, "%llu", &v);
	return v;
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

/* What a pipe carries, the last sizeof(tail) - 1 bytes of it kept. */
struct drain {
	int fd;
	char tail[1 << 16];
	size_t len;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char buf[1 << 16];
	ssize_t n;

	while ((n = read(d->fd, buf, sizeof(buf))) > 0) {
		size_t k = (size_t)n, cap = sizeof(d->tail) - 1;

		if (k >= cap) {
			memcpy(d->tail, buf + k - cap, cap);
			d->len = cap;
		} else {
			size_t keep = d->len + k > cap ? cap - k : d->len;

			memmove(d->tail, d->tail + d->len - keep, keep);
			memcpy(d->tail + keep, buf, k);
			d->len = keep + k;
		}
	}
	d->tail[d->len] = '\0';
	return NULL;
}

static int keepup(const char *bbx, int argc, char **argv)
{
	double rate = argc > 0 ? atof(argv[0]) : 1e6;
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	const char *size = argc > 2 ? argv[2] : "64m";
	bool json = argc > 3 && !strcmp(argv[3], "json");
	static struct drain d;
	unsigned long written = 0, before, delivered;
	unsigned long long intact, lost = 0;
	struct timespec settle = { 0, 300 * 1000 * 1000 };
	struct rusage ru;
	pthread_t th;
	double t0, next, cpu;
	int fds[2], st;
	pid_t p;

	setenv("BLACKBOX_SIZE", size, 1);
	if (bb_init(0) < 0 || pipe(fds) < 0) {
		fprintf(stderr, "bb_init or pipe failed\n");
		return 1;
	}
	bb_write_kv("req", "GET /index"); /* the ring claimed, its owner record written */
	before = records_now();
	p = start_follow_to(bbx, json, fds[1]);
	close(fds[1]);
	d.fd = fds[0];
	pthread_create(&th, NULL, drain_main, &d);
	nanosleep(&settle, NULL); /* it opened the box and read what is there */
	t0 = now_ns();
	next = t0;
	while (next - t0 < seconds * 1e9) {
		for (int i = 0; i < 1000; i++)
			bb_write_kv("req", "GET /index");
		written += 1000;
		next += 1000 / rate * 1e9;
		/* sleep to the next batch's time: the CPU is the follower's */
		struct timespec at = { (time_t)(next / 1e9), (long)fmod(next, 1e9) };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
	}
	nanosleep(&settle, NULL);
	kill(p, SIGINT); /* ends the follow after a last walk */
	wait4(p, &st, 0, &ru);
	pthread_join(th, NULL);
	close(fds[0]);
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	if (json) {
		const char *last = strstr(d.tail, "\"summary\"");

		intact = last ? find_num(last, "\"records\":", true) : 0;
		lost = last ? find_num(last, "\"lost_bytes\":", true) : 0;
	} else {
		const char *q = d.tail;

		intact = find_num(d.tail, " records intact", false);
		/* one line per ring that lost bytes */
		while ((q = strstr(q, " bytes of records lost while following"))) {
			const char *b = q;

			while (b > d.tail && b[-1] >= '0' && b[-1] <= '9')
				b--;
			lost += strtoull(b, NULL, 10);
			q++;
		}
	}
	delivered = intact > before ? (unsigned long)(intact - before) : 0;
	printf("%s, box %s, %.0f records/s for %.1f s: written %lu, delivered %lu (%.1f %%), "
	       "lost %llu bytes", json ? "json" : "text", size, rate, seconds, written, delivered,
	       100.0 * (double)delivered / (double)written, lost);
	if (written > delivered)
		printf(" = %.3f bytes per record missed", (double)lost / (double)(written - delivered));
	printf("; follower CPU %.2f s\n", cpu);
	bb_close();
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 7;
	unsigned long calls = argc > 3 ? strtoul(argv[3], NULL, 0) : 30000000;
	double *idle, *follow;
	int ret;

	if (argc > 2 && !strcmp(argv[2], "keepup"))
		return keepup(argv[1], argc - 3, argv + 3);
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
