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
 * BLACKBOX_DIR (environment) says where the box goes.
 */
#include <blackbox.h>

#include <errno.h>
#include <getopt.h>
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
	if (!strcmp(mode, "crash"))
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
	if (!strcmp(mode, "crash")) /* a SIGSEGV without undefined behaviour */
		raise(SIGSEGV);
	if (!strcmp(mode, "wait"))
		wait_eof();
	_exit(0);
}
