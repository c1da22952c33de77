/* SPDX-License-Identifier: MIT */
/*
 * fair_bench - who keeps what in the default box (docs/FORMAT.md §13, "Who
 * keeps what"), as an operator would see it: four situations, each in a
 * process of its own with a fresh default box, read back with the reader
 * API.  Prints, per situation, the share of the box's record capacity each
 * writer keeps (a ratio against the capacity measured in the same run, no
 * clock) and how many quiet threads kept their last record.
 *
 *   ninja -C build bench/fair-bench && build/bench/fair-bench
 *
 * Builds against this tree and against trees before format 3.2 (then the
 * recycled counts print as "-"), so that before and after come from one
 * source.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#if BB_FORMAT_MAJOR > 3 || BB_FORMAT_MINOR >= 2 /* the reader API says "stream" */
#define STATS struct bb_stream_stats
#else
#define STATS struct bb_ring_stats
#endif

#define NT 100000

struct tally {
	long last[NT];          /* newest seq per thread number, -1: none */
	unsigned long bytes[NT];
	unsigned long records;
};

static struct tally *tl;

static void put(int k, long seq)
{
	char v[32];

	snprintf(v, sizeof(v), "%d:%ld", k, seq);
	if (bb_write_kv("w", v))
		abort();
}

static int tally_cb(const struct bb_record *rec, void *arg)
{
	char v[40];
	long seq;
	int k;

	(void)arg;
	if (rec->tag != BB_TAG_KV || rec->value_len < 5 || rec->value_len - 4 >= sizeof(v))
		return 0;
	memcpy(v, rec->value + 4, rec->value_len - 4);
	v[rec->value_len - 4] = '\0';
	if (sscanf(v, "%d:%ld", &k, &seq) != 2 || k < 0 || k >= NT)
		return 0;
	tl->records++;
	tl->bytes[k] += BB_RECORD_STRIDE(BB_RECORD_HDR_SIZE + rec->value_len +
					 (rec->flags & BB_RF_CRC ? BB_CRC_SIZE : 0));
	if (seq > tl->last[k])
		tl->last[k] = seq;
	return 0;
}

/* Read this process's box: the tally, the capacity in bytes, recycled. */
static double read_back(unsigned long long *recycled)
{
	struct bb_reader *r;
	char path[4096], err[256];
	STATS tot;
	double cap;

	for (int k = 0; k < NT; k++)
		tl->last[k] = -1;
	if (bb_path(path, sizeof(path)) <= 0 ||
	    bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, err, sizeof(err))) {
		fprintf(stderr, "fair-bench: open: %s\n", err);
		exit(1);
	}
	bb_reader_walk(r, 0, tally_cb, NULL);
	bb_reader_total_stats(r, &tot);
	cap = (double)bb_reader_info(r)->seg_count * bb_reader_info(r)->seg_size;
#if BB_FORMAT_MAJOR > 3 || BB_FORMAT_MINOR >= 2
	*recycled = tot.recycled + bb_reader_info(r)->recycled_gone;
#else
	*recycled = ~0ull;
#endif
	bb_reader_close(r);
	return cap;
}

static pthread_barrier_t bar;

static void *a_then_quiet(void *arg)
{
	(void)arg;
	for (long i = 0; i < 1000000; i++)
		put(0, i);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	return NULL;
}

static void *few(void *arg)
{
	for (long i = 0; i < 5; i++)
		put((int)(intptr_t)arg, i);
	return NULL;
}

static void print_recycled(unsigned long long n)
{
	if (n == ~0ull)
		printf(" recycled -\n");
	else
		printf(" recycled %llu\n", n);
}

static void a_then_b(void)
{
	pthread_t a;
	unsigned long long rec;
	double cap;

	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&a, NULL, a_then_quiet, NULL);
	pthread_barrier_wait(&bar);
	for (long i = 0; i < 1000000; i++)
		put(1, i);
	cap = read_back(&rec);
	printf("a-then-b: B keeps %.3f of the box, A %.3f, A's last record %s;",
	       tl->bytes[1] / cap, tl->bytes[0] / cap, tl->last[0] == 999999 ? "kept" : "lost");
	print_recycled(rec);
	pthread_barrier_wait(&bar);
	pthread_join(a, NULL);
}

static void exited_then_main(void)
{
	pthread_t th[500];
	unsigned long long rec;
	unsigned kept = 0;
	double cap;

	for (int k = 1; k <= 500; k++)
		pthread_create(&th[k - 1], NULL, few, (void *)(intptr_t)k);
	for (int k = 0; k < 500; k++)
		pthread_join(th[k], NULL);
	for (long i = 0; i < 1000000; i++)
		put(0, i);
	cap = read_back(&rec);
	for (int k = 1; k <= 500; k++)
		kept += tl->last[k] == 4;
	printf("500-exited: main keeps %.3f of the box; %u/500 exited threads keep their last "
	       "record;", tl->bytes[0] / cap, kept);
	print_recycled(rec);
}

static void short_lived(void)
{
	pthread_t th[8];
	unsigned long long rec;
	unsigned newest = 0, present = 0;

	for (int k = 0; k < NT; k += 8) {
		for (int j = 0; j < 8; j++)
			pthread_create(&th[j], NULL, few, (void *)(intptr_t)(k + j));
		for (int j = 0; j < 8; j++)
			pthread_join(th[j], NULL);
	}
	read_back(&rec);
	for (int k = 0; k < NT; k++)
		present += tl->last[k] >= 0;
	for (int k = NT - 100; k < NT; k++)
		newest += tl->last[k] == 4;
	printf("100k-short-lived: %u threads present, %u/100 of the newest; written %d, kept "
	       "%lu,", present, newest, NT * 5, tl->records);
	print_recycled(rec);
}

static void one_chatty(void)
{
	pthread_t th[1023];
	unsigned long long rec;
	unsigned kept = 0;
	double cap;

	put(0, 0);
	for (int k = 1; k <= 1023; k++)
		pthread_create(&th[k - 1], NULL, few, (void *)(intptr_t)k);
	for (int k = 0; k < 1023; k++)
		pthread_join(th[k], NULL);
	for (long i = 1; i < 1000000; i++)
		put(0, i);
	cap = read_back(&rec);
	for (int k = 1; k <= 1023; k++)
		kept += tl->last[k] == 4;
	printf("1024-one-chatty: %u/1023 quiet threads keep their last record; the chatty one "
	       "%.3f of the box;", kept, tl->bytes[0] / cap);
	print_recycled(rec);
}

int main(void)
{
	void (*run[])(void) = { a_then_b, exited_then_main, short_lived, one_chatty };

	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			tl = calloc(1, sizeof(*tl));
			if (!tl || bb_init(0))
				_exit(1);
			run[i]();
			fflush(stdout);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	return 0;
}
