/* SPDX-License-Identifier: MIT */
/*
 * worker.c - a small multi-threaded "service" instrumented with libblackbox.
 *
 * Each worker thread handles fake requests and records, per request, a
 * structured event and a few key/values.  It also keeps state annotations
 * (bb_set): the configuration version for the process, and per worker the
 * request it is handling now.  Those live in the box's state table, outside
 * the rings, so a burst of records never evicts them.  Run it, kill it
 * however you like (kill -9 included), then read what it was doing with
 * bb-extract <pid>.
 *
 *   bb-demo-worker [THREADS] [REQUESTS_PER_THREAD]   (0 = run until killed)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>

static long per_thread;

static const char *paths[] = { "/", "/login", "/api/orders", "/api/orders/42", "/static/app.js" };

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	char name[16], key_req[32], key_path[32];

	snprintf(name, sizeof(name), "worker-%ld", id);
	pthread_setname_np(pthread_self(), name);
	/* One key per worker: no two threads ever write the same slot, so
	 * bb_set() never finds it busy (-EBUSY).  A service with more workers
	 * than BB_STATE_SLOTS would get -ENOSPC for the last ones; like every
	 * blackbox call, a failure is ignored: recording never stops the work. */
	snprintf(key_req, sizeof(key_req), "%s.request", name);
	snprintf(key_path, sizeof(key_path), "%s.path", name);
	for (long n = 0; per_thread == 0 || n < per_thread; n++) {
		uint64_t req = (uint64_t)id << 32 | (uint64_t)n;
		const char *path = paths[(n + id) % 5];
		int status = n % 17 == 0 ? 500 : 200;
		struct bb_field f[] = {
			BB_U64("id", req),
			BB_STR("path", path),
			BB_I64("status", status),
			BB_F64("ms", 0.25 + (double)(n % 40) / 8),
		};

		struct bb_field rf[] = { BB_U64("id", req), BB_STR("path", path) };
		struct bb_field qf[] = { BB_STR("table", "orders") };

		bb_set_u64(key_req, req);
		bb_set(key_path, path);
		/* Spans: what this worker is inside, which bb-extract names for
		 * each thread when the process dies, and --perfetto draws. */
		bb_span_begin("request", rf, 2);
		bb_write_kv("stage", "parse");
		bb_write_kv_u64("request", req);
		bb_write_kv("stage", "handle");
		bb_span_begin("db.query", qf, 1);
		usleep(1000);
		bb_span_end();
		bb_write_event("request", f, 4);
		if (status != 200)
			bb_write_kv("error", "upstream timed out");
		bb_span_end();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc > 1 ? strtol(argv[1], NULL, 10) : 4;
	pthread_t th[64];
	char path[4096];
	int ret;

	per_thread = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "usage: %s [THREADS (1-64)] [REQUESTS_PER_THREAD]\n", argv[0]);
		return 2;
	}
	ret = bb_init(0);
	if (ret < 0) {
		fprintf(stderr, "bb_init: %s\n", strerror(-ret));
		return 1;
	}
	bb_path(path, sizeof(path));
	bb_write_kv("event", "service started");
	bb_write_kv_i64("threads", threads);
	bb_set_u64("config.version", 3);
	bb_set("service.state", "serving");
	printf("pid %d box %s\n", (int)getpid(), path);
	fflush(stdout);
	for (long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	for (long i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	bb_set("service.state", "stopping");
	bb_write_kv("event", "service stopping");
	return 0;
}
