/* SPDX-License-Identifier: MIT */
/*
 * crash.c - the crash handler at work, from both sides.
 *
 *   bb-crash-example [--no-handler]
 *       Turn on the crash handler (BB_OPT_CRASH_HANDLER), handle a few fake
 *       requests in a thread named "parser", keep state annotations
 *       (bb_set) up to date, and then write through a NULL pointer in
 *       apply_config().  The process dies of SIGSEGV exactly as it would
 *       without libblackbox (same exit status, same core dump); the box
 *       stays behind marked "crashed", with a crash record: signal, code,
 *       fault address, thread, and the stack's return addresses.
 *       --no-handler does the same without the crash handler (for
 *       comparing exit statuses).
 *
 *   bb-crash-example --inspect BOX
 *       Read BOX's crash record, state table and module list with
 *       <blackbox/reader.h>, the way a tool of your own would, and print
 *       them.  Each frame is printed as "module+offset", the form
 *       addr2line -e MODULE OFFSET (or bb-extract) symbolises.
 *
 * Then read the box with:  bb-extract <pid>   (or --json)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* pthread_setname_np */
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

struct config {
	int version;
	int workers;
};

/*
 * The pointer comes through a volatile object, so the compiler cannot see
 * that it is NULL: a visible NULL store would be "undefined behaviour" it
 * may compile into a trap instruction (SIGILL), not the SIGSEGV this
 * example is about.
 */
static struct config *volatile live_config;

void apply_config(struct config *c, int version);

/* The named function the crash record points into.  noinline/noclone keep
 * its name in the symbol table as it is (no "apply_config.isra.0"). */
__attribute__((noinline, noclone)) void apply_config(struct config *c, int version)
{
	c->version = version;          /* c is NULL: SIGSEGV, fault address 0 */
}

static void *parser(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "parser");
	for (uint64_t req = 1; req <= 5; req++) {
		/* state annotations: the latest value per key, outside the
		 * rings, read after the crash as "what was going on" */
		bb_set_u64("request.id", req);
		bb_set("request.path", req % 2 ? "/api/orders" : "/api/config");
		bb_write_kv_u64("request", req);
		bb_write_kv("stage", "parsed");
	}
	bb_set("stage", "applying config");
	bb_write_kv_i64("config.version", 8);
	bb_write_kv("event", "about to apply config 8");
	apply_config(live_config, 8);
	return NULL;   /* not reached */
}

static int run(bool handler)
{
	struct bb_options o = { .flags = handler ? BB_OPT_CRASH_HANDLER : 0 };
	char path[4096];
	pthread_t th;
	int ret;

	ret = bb_init_opts(&o);
	if (ret < 0) {
		fprintf(stderr, "bb_init_opts: %s\n", strerror(-ret));
		return 1;
	}
	bb_path(path, sizeof(path));
	printf("pid %d box %s crash handler %s\n", (int)getpid(), path, handler ? "on" : "off");
	fflush(stdout);
	bb_set_i64("config.version", 7);
	bb_write_kv("event", "service started");
	ret = pthread_create(&th, NULL, parser, NULL);
	if (ret != 0) {
		fprintf(stderr, "pthread_create: %s\n", strerror(ret));
		return 1;
	}
	pthread_join(th, NULL);
	return 0;      /* not reached: the parser crashes the process */
}

/* ---- the reading side ---------------------------------------------------- */

static int print_state(const struct bb_state_entry *e, void *arg)
{
	char buf[512];

	(void)arg;
	if (e->status != BB_SLOT_OK) {
		printf("state slot %" PRIu32 ": %s\n", e->slot, e->problem);
		return 0;
	}
	if (bb_format_value(BB_TAG_KV, e->flags, e->value, e->value_len, buf, sizeof(buf)) < 0)
		printf("state slot %" PRIu32 ": bad value (%s)\n", e->slot, buf);
	else
		printf("state %s\n", buf);
	return 0;
}

static int inspect(const char *box)
{
	static struct bb_crash c;      /* 2 KiB of frames: not on the stack */
	const struct bb_module *mods = NULL;
	struct bb_reader *r;
	size_t nmods = 0;
	char err[256];
	int ret;

	ret = bb_reader_open_path(box, BB_OPEN_SNAPSHOT, &r, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("owner %s\n", bb_liveness_name(bb_reader_liveness(r)));
	bb_reader_crash(r, &c);
	printf("crash %s\n", bb_crash_status_name(c.status));
	if (c.status == BB_CRASH_COMPLETE) {
		printf("signal %" PRId32 " (%s) code %" PRId32 " addr 0x%" PRIx64 " tid %" PRId32 " thread %s\n",
		       c.signal, strsignal(c.signal), c.code, c.addr, c.tid, c.thread);
		if (bb_reader_modules(r, &mods, &nmods, NULL, err, sizeof(err)) < 0) {
			printf("modules: %s\n", err);
			nmods = 0;
		}
		for (uint32_t i = 0; i < c.nframes; i++) {
			const struct bb_module *m = bb_module_find(mods, nmods, c.frames[i]);

			if (m)
				printf("frame %" PRIu32 " 0x%" PRIx64 " %s+0x%" PRIx64 "\n", i, c.frames[i],
				       m->path[0] ? m->path : "(main program)", c.frames[i] - m->bias);
			else
				printf("frame %" PRIu32 " 0x%" PRIx64 " (no module)\n", i, c.frames[i]);
		}
	} else if (c.problem[0]) {
		printf("crash problem %s\n", c.problem);
	}
	ret = bb_reader_state(r, print_state, NULL, NULL);
	if (ret < 0 && ret != -ENODATA)
		printf("state table: %s\n", strerror(-ret));
	bb_reader_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--inspect") == 0)
		return inspect(argv[2]);
	if (argc == 1 || (argc == 2 && strcmp(argv[1], "--no-handler") == 0))
		return run(argc == 1);
	fprintf(stderr, "usage: %s [--no-handler]\n       %s --inspect BOX\n", argv[0], argv[0]);
	return 2;
}
