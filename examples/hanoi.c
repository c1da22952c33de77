/* SPDX-License-Identifier: MIT */
/*
 * hanoi.c - the Towers of Hanoi of the ELFE flight-recorder article: the
 * same recursion traced with printf and with libblackbox, timed.
 *
 *   bb-hanoi [DEPTH [FILE]]     DEPTH 1-30 (default 20: 1048575 moves),
 *                               FILE for the printf trace (default /dev/null)
 *
 * Every move is traced three ways, each a full run of the recursion:
 *   printf to FILE             fprintf to a fully buffered stream
 *   printf to the terminal     printf to stdout, line buffered, when stdout
 *                              is a terminal (skipped otherwise)
 *   libblackbox                bb_write_event("move", disk, from, to)
 * and the time of each, per move, and the ratio to libblackbox printed.
 * The article measured recording ~500x cheaper than printing to a terminal.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>

typedef void trace_fn(int disk, const char *from, const char *to);

static FILE *trace_file;
static unsigned long moves;
static unsigned long failures;

static void trace_file_printf(int disk, const char *from, const char *to)
{
	fprintf(trace_file, "move disk %d from %s to %s\n", disk, from, to);
}

static void trace_terminal(int disk, const char *from, const char *to)
{
	printf("move disk %d from %s to %s\n", disk, from, to);
}

static void trace_blackbox(int disk, const char *from, const char *to)
{
	struct bb_field f[] = {
		BB_I64("disk", disk),
		BB_STR("from", from),
		BB_STR("to", to),
	};

	if (bb_write_event("move", f, 3) != 0)
		failures++;
}

static void hanoi(int n, const char *from, const char *to, const char *via,
		  trace_fn *trace)
{
	if (n == 0)
		return;
	hanoi(n - 1, from, via, to, trace);
	trace(n, from, to);
	moves++;
	hanoi(n - 1, via, to, from, trace);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double run(int depth, trace_fn *trace)
{
	double t0;

	moves = 0;
	t0 = now();
	hanoi(depth, "A", "C", "B", trace);
	return now() - t0;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 20;
	const char *file = argc > 2 ? argv[2] : "/dev/null";
	double t_file, t_tty = 0, t_bb;
	int tty = isatty(STDOUT_FILENO);
	unsigned long n;
	char label[64];
	int ret;

	if (depth < 1 || depth > 30) {
		fprintf(stderr, "usage: %s [DEPTH (1-30) [FILE]]\n", argv[0]);
		return 2;
	}
	ret = bb_init(0);
	if (ret < 0) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	trace_file = fopen(file, "w");
	if (!trace_file) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		return 1;
	}

	t_file = run(depth, trace_file_printf);
	fclose(trace_file);
	if (tty) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		t_tty = run(depth, trace_terminal);
	}
	t_bb = run(depth, trace_blackbox);
	n = moves;

	printf("\nTowers of Hanoi, %d disks, %lu moves, each traced:\n", depth, n);
	snprintf(label, sizeof(label), "printf to %s", file);
	printf("  %-28s %10.3f ms %8.1f ns/move %7.1fx libblackbox\n",
	       label, t_file * 1e3, t_file * 1e9 / (double)n, t_file / t_bb);
	if (tty)
		printf("  %-28s %10.3f ms %8.1f ns/move %7.1fx libblackbox\n",
		       "printf to the terminal", t_tty * 1e3,
		       t_tty * 1e9 / (double)n, t_tty / t_bb);
	else
		printf("  %-28s skipped, stdout is not a terminal\n",
		       "printf to the terminal");
	printf("  %-28s %10.3f ms %8.1f ns/move\n",
	       "libblackbox", t_bb * 1e3, t_bb * 1e9 / (double)n);
	if (failures) {
		fprintf(stderr, "%lu bb_write_event calls failed\n", failures);
		return 1;
	}
	return 0;
}
