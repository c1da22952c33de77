/* SPDX-License-Identifier: MIT */
/*
 * assert.c - an assertion that leaves the reason in the box.
 *
 *   bb-assert-example
 *       Load a (made-up) configuration in a thread named "loader" and
 *       CHECK() it.  The check fails: check_failed() records the reason
 *       with bb_crash_record(), then abort() ends the process as assert()
 *       would.  The box stays behind marked crashed, with a crash record
 *       of kind "fatal": the reason, the thread, and the stack from the
 *       function that failed outwards.
 *
 * A panic, a fatal error before exit(), a failed assertion: the process
 * ends without a signal libblackbox could catch (or with one it cannot
 * explain: abort() says "SIGABRT", not why).  Call bb_crash_record() on
 * that path.  It is async-signal-safe, so it also fits a panic path that
 * runs in a signal handler.
 *
 * Then read the box with:  bb-extract <pid>   (or --json)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox.h>

/* CHECK(cond): like assert(), always on, and the box says why. */
#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond))                                               \
			check_failed(#cond, __func__, __FILE__, __LINE__); \
	} while (0)

void check_failed(const char *what, const char *func, const char *file, int line)
	__attribute__((noreturn));

/* noinline: the crash record's first frame is in here, the function that
 * failed the check is the next one. */
__attribute__((noinline)) void check_failed(const char *what, const char *func,
					    const char *file, int line)
{
	char reason[BB_CRASH_REASON_MAX + 1];
	const char *base = strrchr(file, '/');

	snprintf(reason, sizeof(reason), "CHECK(%s) failed in %s() at %s:%d", what, func,
		 base ? base + 1 : file, line);
	/* The crash record first: whatever follows may crash too. */
	bb_crash_record(reason);
	fprintf(stderr, "%s\n", reason);
	abort();
}

struct config {
	int workers;
	int max_workers;
};

void load_config(struct config *c);

__attribute__((noinline)) void load_config(struct config *c)
{
	bb_write_kv("config", "parsed");
	bb_set_i64("config.workers", c->workers);
	CHECK(c->workers <= c->max_workers);
	bb_write_kv("config", "applied");   /* not reached */
}

static void *loader(void *arg)
{
	pthread_setname_np(pthread_self(), "loader");
	load_config(arg);
	return NULL;
}

int main(void)
{
	/* The crash handler is optional for bb_crash_record(); with it, the
	 * box also says which signal ended the process (SIGABRT). */
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER };
	static struct config c = { .workers = 64, .max_workers = 16 };
	pthread_t th;
	int ret = bb_init_opts(&o);

	if (ret < 0) {
		fprintf(stderr, "bb_init_opts: %s\n", strerror(-ret));
		return 1;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	bb_write_kv("event", "service started");
	ret = pthread_create(&th, NULL, loader, &c);
	if (ret != 0) {
		fprintf(stderr, "pthread_create: %s\n", strerror(ret));
		return 1;
	}
	pthread_join(th, NULL);
	return 0;      /* not reached: the check fails */
}
