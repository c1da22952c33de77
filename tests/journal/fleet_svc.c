/* SPDX-License-Identifier: MIT */
/*
 * Description: a service of the simulated fleet (fleet_e2e.py compiles it
 * at test time, -O2 -g, stripped, its debug file in a build-id store):
 * two builds of one program (FLEET_BUILD 1 and 2: other code in front of
 * the bug, so every offset moves) and a second program, built under
 * another name, with the same assert().
 *
 *   fleet_svc MODE     MODE: segv | assert | wait | hog
 * prints its pid, then
 *   segv    dies of SIGSEGV in parse_header(), called from handle_request()
 *   assert  fails an assert() in check_config() (SIGABRT: the abort path
 *           is all in the C library)
 *   wait    waits to be killed
 *   hog     takes memory until the OOM killer kills it (run it in a
 *           cgroup with a small memory.max)
 */
#include <assert.h>
#include <blackbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int *volatile fleet_null;
volatile int fleet_sink;

#ifdef __SANITIZE_ADDRESS__
/* The crash handler's SIGSEGV is the subject, not ASan's. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "handle_segv=0:handle_sigbus=0:detect_leaks=0";
}
#endif

#if FLEET_BUILD == 2
/* code that build 1 does not have, laid out before the bug */
__attribute__((noipa)) int fleet_new_feature(int x)
{
	for (int i = 0; i < x; i++)
		fleet_sink += i * 7 + (fleet_sink >> 3);
	return fleet_sink;
}
#endif

__attribute__((noipa, no_sanitize("undefined"))) int parse_header(const char *req)
{
	__asm__ __volatile__("" ::: "memory");
	*fleet_null = (int)strlen(req); /* the bug */
	return 0;
}

__attribute__((noipa)) int handle_request(const char *req)
{
	int r = parse_header(req);

	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
	return r + 1;
}

__attribute__((noipa)) int check_config(int v)
{
	assert(v == 42);
	__asm__ __volatile__("" ::: "memory");
	return v;
}

int main(int argc, char **argv)
{
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER, .size = 1 << 20 };
	int rc = bb_init_opts(&o);

	if (rc || argc < 2) {
		fprintf(stderr, "usage: fleet_svc segv|assert|wait (bb_init: %d)\n", rc);
		return 2;
	}
#if FLEET_BUILD == 2
	fleet_new_feature(3);
#endif
#ifdef FLEET_OTHER
	bb_write_kv("program", "worker");
#endif
	/* the release, as bb-reap sends it (BB_RELEASE) */
	bb_set("release", FLEET_BUILD == 2 ? "1.4.3" : "1.4.2");
	bb_write_kv("phase", argv[1]);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(argv[1], "segv"))
		return handle_request("GET / HTTP/1.1");
	if (!strcmp(argv[1], "assert"))
		return check_config(argc);
	if (!strcmp(argv[1], "hog"))
		for (;;) {
			char *p = malloc(1 << 20);

			if (p)
				memset(p, 1, 1 << 20);
		}
	pause();
	return 0;
}
