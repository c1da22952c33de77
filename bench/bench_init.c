/* SPDX-License-Identifier: MIT */
/*
 * bench_init.c - what creating a box costs, in time and in memory.
 *
 * Time: bb_init(size) then bb_close(), REPEAT times per size (default box,
 * then large ones), timed separately with CLOCK_MONOTONIC; the table gives
 * the median and the minimum.  bb_init creates the shared-memory file,
 * sizes it, maps it and writes the header and ring table; bb_close marks
 * it closed, unmaps and unlinks it.
 *
 * Memory: for each size, the process's resident memory from
 * /proc/self/status (VmRSS, and RssShmem: shared-memory pages mapped by
 * this process, which is what a box's pages count as) and the pages the
 * box file really holds in tmpfs (st_blocks: pages never touched are not
 * allocated), at five points:
 *   before    no box
 *   idle      after bb_init, no record written
 *   1/thread  after one record from each of 16 threads, one after another
 *             (each takes a never-used segment)
 *   full      after one thread has written as many bytes as the box has
 *             segments (every segment handed out, each page touched)
 *   closed    after bb_close
 * Figures are differences from "before", in KiB.  The fill also gives the
 * first-touch cost: the time to write the segments once, page faults
 * included, per MiB.
 *
 * Sizes larger than half the free space of the box directory (/dev/shm,
 * or BLACKBOX_DIR) are skipped and say so.
 *
 * Usage: bench_init [-r REPEAT] [-s SIZE[,SIZE...]]   (sizes in MiB; 0 = default)
 *
 * A benchmark: it never fails on a figure.
 */
#include "baselines.h"

#include <blackbox.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAX_REPEAT 101
#define MAX_SIZES  8
#define NTHREADS   16

static unsigned cfg_repeat = 15;
static unsigned long cfg_sizes[MAX_SIZES] = { 0, 64, 256, 1024 };   /* MiB, 0 = default */
static unsigned cfg_nsizes = 4;

struct mem { long rss, shmem, file; };   /* KiB */

static long status_kib(const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static struct mem mem_now(void)
{
	struct mem m = { status_kib("VmRSS"), status_kib("RssShmem"), 0 };
	char path[4096];
	struct stat st;

	if (bb_path(path, sizeof(path)) > 0 && stat(path, &st) == 0)
		m.file = (long)st.st_blocks / 2;   /* 512-byte blocks */
	return m;
}

/* ---- ring writers -------------------------------------------------------- */

static unsigned char val[4000];
static size_t fill_records;   /* 0: one record */
static int thread_err;

static void *writer(void *arg)
{
	size_t n = fill_records ? fill_records : 1;

	(void)arg;
	for (size_t i = 0; i < n; i++) {
		int r = fill_records ? bb_write_bytes(val, sizeof(val)) : bb_write_kv("req", "GET /index");

		if (r && !thread_err)
			thread_err = r;
	}
	return NULL;
}

/* Threads one after another, each writing fill_records records. */
static int threads_in_turn(unsigned threads)
{
	for (unsigned i = 0; i < threads; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, writer, NULL))
			return -EAGAIN;
		pthread_join(th, NULL);
	}
	return thread_err;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fprintf(stderr, "usage: bench_init [-r REPEAT] [-s MIB[,MIB...]]  (0 = default size)\n");
	exit(2);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint64_t free_bytes(void)
{
	const char *dir = getenv("BLACKBOX_DIR");
	struct statvfs v;

	if (statvfs(dir && *dir ? dir : "/dev/shm", &v) < 0)
		return UINT64_MAX;   /* unknown: let bb_init say */
	return (uint64_t)v.f_bavail * v.f_frsize;
}

static const char *size_name(unsigned long mib, char *buf, size_t len)
{
	if (!mib)
		snprintf(buf, len, "default");
	else if (mib >= 1024 && !(mib % 1024))
		snprintf(buf, len, "%lu GiB", mib / 1024);
	else
		snprintf(buf, len, "%lu MiB", mib);
	return buf;
}

int main(int argc, char **argv)
{
	static double ti[MAX_REPEAT], tc[MAX_REPEAT];
	struct mem m[MAX_SIZES][5];
	double init_med[MAX_SIZES], init_min[MAX_SIZES], close_med[MAX_SIZES], close_min[MAX_SIZES];
	double fill_ms[MAX_SIZES];
	struct bt_box boxes[MAX_SIZES];
	int skipped[MAX_SIZES] = { 0 };
	int opt, ret;

	while ((opt = getopt(argc, argv, "r:s:h")) != -1) {
		switch (opt) {
		case 'r': cfg_repeat = (unsigned)bt_parse_ul(optarg, 1, MAX_REPEAT, usage); break;
		case 's':
			cfg_nsizes = bt_parse_list(optarg, cfg_sizes, MAX_SIZES, 0, 1u << 20, usage);
			break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	memset(val, 'v', sizeof(val));
	bt_print_machine(stdout);
	printf("bench_init: %u repetition(s) of bb_init + bb_close per size; then one "
	       "pass for memory\n", cfg_repeat);
	fflush(stdout);

	for (unsigned s = 0; s < cfg_nsizes; s++) {
		size_t size = (size_t)cfg_sizes[s] << 20;
		uint64_t t0, t1;

		if ((uint64_t)(size ? size : BB_DEFAULT_SIZE) > free_bytes() / 2) {
			skipped[s] = 1;
			continue;
		}
		/* Time. */
		for (unsigned r = 0; r < cfg_repeat; r++) {
			t0 = bt_mono_ns();
			ret = bb_init(size);
			t1 = bt_mono_ns();
			if (ret < 0) {
				fprintf(stderr, "bb_init(%zu): %s\n", size, strerror(-ret));
				return 1;
			}
			ti[r] = (double)(t1 - t0) / 1e3;
			t0 = bt_mono_ns();
			ret = bb_close();
			t1 = bt_mono_ns();
			if (ret < 0) {
				fprintf(stderr, "bb_close: %s\n", strerror(-ret));
				return 1;
			}
			tc[r] = (double)(t1 - t0) / 1e3;
		}
		qsort(ti, cfg_repeat, sizeof(double), cmp_dbl);
		qsort(tc, cfg_repeat, sizeof(double), cmp_dbl);
		init_med[s] = ti[cfg_repeat / 2];
		init_min[s] = ti[0];
		close_med[s] = tc[cfg_repeat / 2];
		close_min[s] = tc[0];

		/* Memory. */
		m[s][0] = mem_now();
		ret = bb_init(size);
		if (ret < 0) {
			fprintf(stderr, "bb_init(%zu): %s\n", size, strerror(-ret));
			return 1;
		}
		m[s][1] = mem_now();
		bt_box_read(&boxes[s]);
		fill_records = 0;
		ret = threads_in_turn(NTHREADS);
		m[s][2] = mem_now();
		fill_records = (size_t)boxes[s].seg_count * boxes[s].seg_size / sizeof(val) + 2;
		t0 = bt_mono_ns();
		ret = ret ? ret : threads_in_turn(1);
		fill_ms[s] = (double)(bt_mono_ns() - t0) / 1e6;
		m[s][3] = mem_now();
		bt_box_read(&boxes[s]);
		if (ret) {
			fprintf(stderr, "write: %s\n", strerror(-ret));
			return 1;
		}
		bb_close();
		m[s][4] = mem_now();
	}

	printf("\nbb_init / bb_close, us: median (min) of %u\n\n", cfg_repeat);
	printf("| %-8s | %10s | %9s | %5s | %16s | %16s |\n", "box", "box size", "segment",
	       "segs", "bb_init us", "bb_close us");
	printf("|----------|-----------:|----------:|------:|-----------------:|-----------------:|\n");
	for (unsigned s = 0; s < cfg_nsizes; s++) {
		char nm[32];

		if (skipped[s]) {
			printf("| %-8s | skipped: not enough free space for it in the box directory |\n",
			       size_name(cfg_sizes[s], nm, sizeof(nm)));
			continue;
		}
		printf("| %-8s | %6.1f MiB | %5llu KiB | %5u | %7.1f (%6.1f) | %7.1f (%6.1f) |\n",
		       size_name(cfg_sizes[s], nm, sizeof(nm)), (double)boxes[s].box_size / 1048576.0,
		       (unsigned long long)boxes[s].seg_size >> 10, boxes[s].seg_count,
		       init_med[s], init_min[s], close_med[s], close_min[s]);
	}

	printf("\nMemory, KiB over \"before\": process RSS / of which shared memory (RssShmem)\n"
	       "/ pages the box file holds in tmpfs.  1 record from each of %u threads; full =\n"
	       "every segment written by one thread with 4000-byte records.\n\n", NTHREADS);
	printf("| %-8s | %-26s | %-26s | %-26s | %-14s | %10s |\n", "box", "idle", "16 threads, 1 record",
	       "full", "closed", "fill MiB/s");
	printf("|----------|----------------------------|----------------------------|"
	       "----------------------------|----------------|-----------:|\n");
	for (unsigned s = 0; s < cfg_nsizes; s++) {
		char nm[32], cell[3][64], closed[32];
		double filled;

		if (skipped[s])
			continue;
		for (int k = 1; k <= 3; k++)
			snprintf(cell[k - 1], sizeof(cell[0]), "%ld / %ld / %ld",
				 m[s][k].rss - m[s][0].rss, m[s][k].shmem - m[s][0].shmem, m[s][k].file);
		snprintf(closed, sizeof(closed), "%ld / %ld", m[s][4].rss - m[s][0].rss,
			 m[s][4].shmem - m[s][0].shmem);
		filled = (double)boxes[s].seg_count * boxes[s].seg_size / 1048576.0;
		printf("| %-8s | %-26s | %-26s | %-26s | %-14s | %10.0f |\n",
		       size_name(cfg_sizes[s], nm, sizeof(nm)), cell[0], cell[1], cell[2], closed,
		       filled / (fill_ms[s] / 1e3));
		if (!boxes[s].private_full)
			printf("  (not every segment was handed out)\n");
	}
	printf("\n(shared and important rings are not written: their pages stay untouched)\n");
	return 0;
}
