/* SPDX-License-Identifier: MIT */
/*
 * scan-bench - how `bb-extract --list` and `bb-extract PID` scale with the
 * number of boxes in the directory.
 *
 * Usage: scan-bench BB-EXTRACT [N...]        (default N: 1000 10000)
 *
 * For each N, a fresh directory on tmpfs (/dev/shm) gets N copies of one
 * real default-size box (boxfill.h: each claims its own dead pid), then
 * whole runs of the binary are timed, best of 3:
 *
 *   list    --list --dir D          every header read, every claim judged
 *   pid     --dir D PID             the box of one pid (the middle one)
 *
 * and milliseconds per run and per 1,000 boxes are printed.  Output goes
 * to /dev/null; a run that does not exit 0 aborts the benchmark.
 * Benchmark, not a test: nothing is asserted.
 */
#include <stdio.h>
#include <stdlib.h>

#include "boxfill.h"

static double best_of(int reps, char *const argv[])
{
	double best = 1e18;

	for (int i = 0; i < reps; i++) {
		double t = bf_run(argv, NULL);

		best = t < best ? t : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const unsigned def[] = { 1000, 10000 };
	int nn = argc > 2 ? argc - 2 : 2;
	size_t len;
	void *box;

	if (argc < 2) {
		fprintf(stderr, "usage: scan-bench BB-EXTRACT [N...]\n");
		return 2;
	}
	box = bf_template(0, 0, 100, &len);
	printf("box size %zu bytes; times are whole bb-extract runs (process start included)\n",
	       len);
	printf("%8s %-6s %10s %14s\n", "boxes", "mode", "ms/run", "ms/1000 boxes");
	for (int k = 0; k < nn; k++) {
		unsigned n = argc > 2 ? (unsigned)strtoul(argv[2 + k], NULL, 10) : def[k];
		char dir[] = "/dev/shm/scan-bench.XXXXXX", pid[24];
		char *list[] = { argv[1], "--list", "--dir", dir, NULL };
		char *one[] = { argv[1], "--dir", dir, pid, NULL };
		int32_t first;
		double t;

		if (!n || !mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
		first = bf_fill(dir, n, box, len, 0, 1);
		snprintf(pid, sizeof(pid), "%d", (int)(first + (int32_t)(n / 2)));
		t = best_of(3, list);
		printf("%8u %-6s %10.1f %14.2f\n", n, "list", t, t * 1000 / n);
		t = best_of(3, one);
		printf("%8u %-6s %10.1f %14.2f\n", n, "pid", t, t * 1000 / n);
		fflush(stdout);
		bf_rm_tree(dir);
	}
	free(box);
	return 0;
}
