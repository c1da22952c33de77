/* SPDX-License-Identifier: MIT */
/*
 * Description: a service that stops beating (tests/hang/hang_e2e.py).
 * bbh_service MODE: deadlock (two threads on two mutexes), spin (a thread
 * in a loop without a system call), read (the main thread in read() on
 * stdin, a pipe nobody writes), snapshot N (a writer at full speed and N
 * bb_snapshot() calls a second for 3 s), beat [MS] (healthy: beats every
 * MS ms, 50 by default), idle (no deadline: writes once and waits).  Prints "ready" when the hang is set up, then runs until killed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>

#define DEADLINE_MS 500

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;
static volatile unsigned long spins;

static void ms_sleep(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

static void *locker(void *arg)
{
	int first = arg != NULL;

	bb_watchdog(DEADLINE_MS);
	bb_write_kv("worker", first ? "a then b" : "b then a");
	pthread_mutex_lock(first ? &a : &b);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(first ? &b : &a);   /* never returns */
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	bb_watchdog(DEADLINE_MS);
	bb_write_kv("spinner", "start");
	for (;;)
		spins++;
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	for (unsigned long i = 0;; i++)
		bb_write_kv_u64("n", i);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	pthread_t t1, t2;
	char c;

	if (bb_init(0) < 0) {
		fprintf(stderr, "bb_init failed\n");
		return 2;
	}
	if (!strcmp(mode, "deadlock")) {
		pthread_barrier_init(&both, NULL, 2);
		pthread_create(&t1, NULL, locker, (void *)1);
		pthread_create(&t2, NULL, locker, NULL);
	} else if (!strcmp(mode, "spin")) {
		pthread_create(&t1, NULL, spinner, NULL);
	} else if (!strcmp(mode, "read")) {
		bb_watchdog(DEADLINE_MS);
		printf("ready\n");
		fflush(stdout);
		if (read(0, &c, 1) < 0)   /* stdin: a pipe nobody writes */
			return 1;
		return 0;
	} else if (!strcmp(mode, "snapshot")) {
		long n = argc > 2 ? atol(argv[2]) : 1;

		pthread_create(&t1, NULL, writer, NULL);
		printf("ready\n");
		fflush(stdout);
		for (long i = 0; i < 3 * n; i++) {
			bb_snapshot("under load");
			ms_sleep(1000 / n);
		}
		return 0;
	} else if (!strcmp(mode, "beat")) {
		long period = argc > 2 ? atol(argv[2]) : 50;

		bb_watchdog(DEADLINE_MS);
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			bb_heartbeat();
			ms_sleep(period);
		}
	} else if (!strcmp(mode, "idle")) {
		bb_write_kv("state", "idle");
	} else {
		fprintf(stderr, "usage: bbh_service deadlock|spin|read|snapshot N|beat [MS]|idle\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
