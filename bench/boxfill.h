/* SPDX-License-Identifier: MIT */
/*
 * bench/boxfill.h - directories full of boxes of dead owners, for the
 * benchmarks of the tools (reap-bench, scan-bench).  Benchmark code only.
 */
#ifndef BB_BENCH_BOXFILL_H
#define BB_BENCH_BOXFILL_H

#include <stddef.h>
#include <stdint.h>

/*
 * One real box: a child calls bb_init_opts() with @size bytes (0: the
 * default box) or, when @segment_size is not 0, one segment of that
 * size (and the box that one segment needs), writes @records records and _exit()s (its box stays).  Returns
 * the box read back into memory (malloc'd), its length in *len.  Exits
 * the program on failure.
 */
void *bf_template(size_t size, size_t segment_size, unsigned records, size_t *len);

/*
 * Fill @dir with @n copies of @box, each claiming a distinct pid above
 * pid_max (so that no owner can be alive): pids @first_pid + i when
 * @first_pid is not 0, else pid_max + 1 + i.  Only the pages of @box that
 * are not all zeros are written (the rest are holes: the same bytes to a
 * reader, little memory for ten thousand copies).  With @uids > 1 the
 * copies are spread over the owners 70000 .. 70000 + @uids - 1 (fchown:
 * needs root), @uids copies in a row each, so every owner has about
 * @n / @uids boxes.  Returns the first pid used.
 */
int32_t bf_fill(const char *dir, unsigned n, void *box, size_t len, int32_t first_pid,
		unsigned uids);

/* Entries of @dir other than "." and "..", ~0u if it cannot be read. */
unsigned bf_count(const char *dir);
/* Bytes the files of @dir take (st_blocks), and their apparent size. */
void bf_usage(const char *dir, uint64_t *blocks_bytes, uint64_t *apparent);
/* rm -r @dir */
void bf_rm_tree(const char *dir);
/* CLOCK_MONOTONIC in ms */
double bf_now_ms(void);
/* Run @argv (stdout and stderr to /dev/null, or stdout to @out when not
 * NULL), wait; the wall time in ms.  Exits the program when the child
 * does not exit 0. */
double bf_run(char *const argv[], const char *out);

#endif /* BB_BENCH_BOXFILL_H */
