/* SPDX-License-Identifier: MIT */
/*
 * bbx_spanner - a writer whose threads are inside nested spans when it
 * dies, for the tests of open spans and of bb-extract --perfetto.
 *
 *   bbx_spanner crash   4 threads (an acceptor and 3 workers) in nested
 *                       spans, a request's flow handed from the acceptor
 *                       to a worker, numeric and text state keys; once
 *                       all are inside, the main thread dies of SIGSEGV
 *                       with the crash handler on (every thread's stack)
 *   bbx_spanner kill    the same threads; prints its pid and waits to be
 *                       killed (SIGKILL: no crash record)
 *   bbx_spanner lost    two threads whose logs recycle the segments that
 *                       held their begins: "keeper" is inside "outer"
 *                       (begin overwritten) and "inner"; "ender" ended a
 *                       span whose begin was overwritten, then waits
 *
 * Prints its pid once every thread is inside its innermost span.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox.h>

#define WORKERS 3

static atomic_int inside;
static int *volatile null_ptr;

/* The acceptor: each request a span with a flow id, handed to a worker. */
static void *acceptor(void *arg)
{
	struct bb_span_ctx ctx = { .flow = 1000 };
	struct bb_field f[] = { BB_STR("listen", ":8080") };

	(void)arg;
	pthread_setname_np(pthread_self(), "acceptor");
	bb_span_begin("accept.loop", f, 1);
	for (int i = 0; i < 20; i++) {
		struct bb_field rf[] = { BB_U64("id", (uint64_t)i) };

		ctx.flow = 1000 + (uint64_t)i % WORKERS;
		bb_span_begin_ctx("accept", rf, 1, &ctx);
		bb_write_kv_u64("accepted", (uint64_t)i);
		bb_span_end();
	}
	/* a W3C trace context on the one it is in when the process dies */
	memcpy(ctx.trace_id, "\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36", 16);
	memcpy(ctx.span_id, "\x00\xf0\x67\xaa\x0b\xa9\x02\xb7", 8);
	ctx.flow = 0;
	bb_span_begin_ctx("accept", NULL, 0, &ctx);
	atomic_fetch_add(&inside, 1);
	for (;;)
		pause();
	return NULL;
}

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	struct bb_span_ctx ctx = { .flow = 1000 + (uint64_t)id };
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", id);
	pthread_setname_np(pthread_self(), name);
	for (int i = 0; i < 30; i++) {
		struct bb_field rf[] = { BB_U64("id", (uint64_t)i), BB_I64("worker", id) };
		struct bb_field qf[] = { BB_STR("table", "orders"), BB_F64("cost", 1.5) };

		bb_span_begin_ctx("request", rf, 2, &ctx);
		bb_write_kv("stage", "parse");
		bb_span_begin("db.query", qf, 2);
		bb_write_event("row", qf, 1);
		bb_span_end();
		bb_span_end();
	}
	{
		struct bb_field rf[] = { BB_U64("id", 458) };
		struct bb_field qf[] = { BB_STR("table", "orders") };

		bb_span_begin_ctx("request", rf, 1, &ctx);
		bb_span_begin("db.query", qf, 1);
		bb_span_begin("lock.wait", NULL, 0);
	}
	atomic_fetch_add(&inside, 1);
	for (;;)
		pause();
	return NULL;
}

/* Records enough to recycle every segment a thread held when it began. */
#define FLOOD 200000

static void *keeper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "keeper");
	bb_span_begin("outer", NULL, 0);
	for (int i = 0; i < FLOOD; i++)
		bb_write_kv_u64("n", (uint64_t)i);
	bb_span_begin("inner", NULL, 0);
	atomic_fetch_add(&inside, 1);
	for (;;)
		pause();
	return NULL;
}

static void *ender(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ender");
	bb_span_begin("gone", NULL, 0);
	for (int i = 0; i < FLOOD; i++)
		bb_write_kv_u64("n", (uint64_t)i);
	bb_span_end();
	bb_write_kv("after", "the end");
	atomic_fetch_add(&inside, 1);
	for (;;)
		pause();
	return NULL;
}

/* no_sanitize: under UBSan the NULL store must fault, not be reported. */
static __attribute__((noinline, no_sanitize("undefined"))) void crash_here(void)
{
	*null_ptr = 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "kill";
	struct bb_options o = { 0 };
	pthread_t th[WORKERS + 1];
	int ret;

	if (strcmp(mode, "crash") && strcmp(mode, "kill") && strcmp(mode, "lost")) {
		fprintf(stderr, "usage: %s crash|kill|lost\n", argv[0]);
		return 2;
	}
	o.flags |= BB_OPT_CRASH_HANDLER;
	ret = bb_init_opts(&o);
	if (ret) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	bb_set_u64("queue.depth", 7);
	bb_set_f64("load", 0.75);
	bb_set("mode", mode);
	if (!strcmp(mode, "lost")) {
		pthread_create(&th[0], NULL, keeper, NULL);
		pthread_create(&th[1], NULL, ender, NULL);
		while (atomic_load(&inside) < 2)
			usleep(1000);
		printf("%d\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	pthread_create(&th[0], NULL, acceptor, NULL);
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&th[i + 1], NULL, worker, (void *)(intptr_t)i);
	while (atomic_load(&inside) < WORKERS + 1)
		usleep(1000);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "crash")) {
		bb_span_begin("shutdown", NULL, 0);
		crash_here();
	}
	for (;;)
		pause();
}
