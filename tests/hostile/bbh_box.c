/* SPDX-License-Identifier: MIT */
/*
 * Description: a process with a box, for the hostile-user suite
 * (tests/hostile/hostile.py): the victim services and the attacker's own
 * boxes.  The suite runs a copy of it, with a copy of the library, from a
 * world-readable directory, so that it runs as any uid whatever the build
 * tree's permissions.
 *
 *   bbh_box [--size BYTES] [--comm NAME] [--thread NAME] [--key K]
 *           [--value V] [--marker M] [--wait-before-init] MODE
 *
 * A value "env:NAME" is the environment variable NAME's (a secret a test
 * keeps out of the command line, which every user reads in /proc).
 * Names and strings are taken byte for byte (escape bytes included): the
 * process sets its comm to NAME before bb_init() (the header's comm), then
 * its thread name to --thread (the ring's thread name), and writes kv
 * "marker"=M, kv K=V, str V, event V {K: V}, and the state K=V.  With
 * --wait-before-init it prints "pid <pid>" and waits for a line on stdin
 * before bb_init() (the suite squats names in between).  Then it prints
 * "ready <pid> <box path>" and, per MODE:
 *   wait   waits for EOF on stdin, then _exit(0): the box stays
 *   exit   _exit(0) at once: the box stays, its owner gone
 *   crash  raise(SIGSEGV) with the crash handler on: a crash record and
 *          modules (frames in libc and in this program)
 *   crash-threads   as crash, with a second thread (named "bbh-waiter")
 *          that wrote a record and waits: its stack is asked for
 *   crash-stolen    as crash-threads, after installing a handler of its
 *          own on each real-time signal whose handler is not the default
 *          (the library's stack signal among them), as a program may
 * BLACKBOX_DIR (environment) says where the box goes.
 */
#include <blackbox.h>

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void wait_eof(void)
{
	char buf[64];
	ssize_t n;

	do
		n = read(0, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
}

static int waiter_ready[2]; /* a pipe: the waiter has its slot */

static void *waiter(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "bbh-waiter", 0, 0, 0);
	bb_write_str("waiter");
	if (write(waiter_ready[1], "r", 1) != 1)
		_exit(6);
	for (;;)
		pause();
	return NULL;
}

static void own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)si; (void)uc;
}

/* The program's own handler on every real-time signal someone handles. */
static void steal_rt_signals(void)
{
	struct sigaction sa, cur;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = own_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		if (sigaction(s, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL &&
		    cur.sa_handler != SIG_IGN)
			sigaction(s, &sa, NULL);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "comm", required_argument, NULL, 'c' },
		{ "thread", required_argument, NULL, 't' },
		{ "key", required_argument, NULL, 'k' },
		{ "value", required_argument, NULL, 'v' },
		{ "marker", required_argument, NULL, 'm' },
		{ "wait-before-init", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	const char *comm = NULL, *thread = NULL, *key = "key", *value = "value";
	const char *marker = "box", *mode;
	struct bb_options o = { .flags = BB_OPT_KEEP_ON_EXIT };
	bool wait_init = false;
	char path[4096];
	int ch, r;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.size = strtoul(optarg, NULL, 0); break;
		case 'c': comm = optarg; break;
		case 't': thread = optarg; break;
		case 'k': key = optarg; break;
		case 'v':
			value = strncmp(optarg, "env:", 4) ? optarg : getenv(optarg + 4);
			if (!value)
				return 2;
			break;
		case 'm': marker = optarg; break;
		case 'w': wait_init = true; break;
		default: return 2;
		}
	}
	if (optind != argc - 1)
		return 2;
	mode = argv[optind];
	if (!strncmp(mode, "crash", 5))
		o.flags |= BB_OPT_CRASH_HANDLER;
	if (comm)
		prctl(PR_SET_NAME, comm, 0, 0, 0);
	if (wait_init) {
		char line[16];

		printf("pid %ld\n", (long)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}
	r = bb_init_opts(&o);
	if (r < 0) {
		fprintf(stderr, "bbh_box: bb_init: %s\n", strerror(-r));
		return 4;
	}
	if (thread)
		prctl(PR_SET_NAME, thread, 0, 0, 0);
	bb_write_kv("marker", marker);
	for (int i = 0; i < 20; i++) {
		struct bb_field f[1] = { { .key = key, .type = BB_TYPE_STR, .v.s = value } };

		bb_write_kv(key, value);
		bb_write_str(value);
		bb_write_event(value, f, 1);
	}
	bb_set(key, value);
	if (bb_path(path, sizeof(path)) < 0)
		strcpy(path, "?");
	printf("ready %ld %s\n", (long)getpid(), path);
	fflush(stdout);
	if (!strcmp(mode, "crash-threads") || !strcmp(mode, "crash-stolen")) {
		pthread_t t;
		char c;

		if (pipe(waiter_ready) || pthread_create(&t, NULL, waiter, NULL) ||
		    read(waiter_ready[0], &c, 1) != 1)
			return 5;
		if (!strcmp(mode, "crash-stolen"))
			steal_rt_signals();
	}
	if (!strncmp(mode, "crash", 5)) /* a SIGSEGV without undefined behaviour */
		raise(SIGSEGV);
	if (!strcmp(mode, "wait"))
		wait_eof();
	_exit(0);
}
