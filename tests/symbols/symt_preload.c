/* SPDX-License-Identifier: MIT */
/*
 * Description: an LD_PRELOAD shim that gives an unmodified program a box
 * with the crash handler on (check_symbols.py runs Debian's nginx with it).
 * The box of a fork() child is made at its first write: write one right
 * after the fork, so that each nginx worker has its own box.
 */
#include <blackbox.h>
#include <pthread.h>

static void symt_forked(void)
{
	bb_write_kv("forked", "yes");
}

__attribute__((constructor)) static void symt_preload(void)
{
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER, .size = 1 << 20 };

	if (bb_init_opts(&o) == 0)
		pthread_atfork(NULL, NULL, symt_forked);
}
