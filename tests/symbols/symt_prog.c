/* SPDX-License-Identifier: MIT */
/*
 * Description: a program that dies of SIGSEGV with the crash handler on,
 * for bb-extract's symbol tests (check_symbols.py compiles it at test time
 * in several ways: stripped with -rdynamic, with its debug file split off,
 * PIE and not, without a build id, at -O2 with inlining).  The lines the
 * test expects in a stack carry a marker comment "@NAME"; the test reads
 * their numbers from this file.
 *
 *   symt_prog MODE     MODE: hidden | inline | lib | deep
 * prints its pid, then crashes:
 *   hidden  in symt_hidden(), a static function laid out after exported
 *           ones and a label of size 0 (only .symtab names it; stripped,
 *           no symbol contains it)
 *   inline  in symt_store(), inlined into symt_mid(), inlined into
 *           symt_inl_outer() (always_inline, built at -O2)
 *   lib     in a static function of the shared library libsymt.so
 *   deep    in symt_hidden() under 26 calls of symt_deep(): 32 frames in
 *           all (bench/symbols_bench.py)
 */
#include <blackbox.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int *volatile symt_null;

#ifdef __SANITIZE_ADDRESS__
/* The crash handler's SIGSEGV is the subject, not ASan's, even when the
 * sanitizer cannot read ASAN_OPTIONS (an execute-only binary run by
 * another uid is not dumpable: its /proc/self/environ is root's). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "handle_segv=0:handle_sigbus=0:detect_leaks=0";
}
#endif

int symt_lib_entry(int x); /* libsymt.so, mode "lib" only */

/* Exported (in .dynsym with -rdynamic), laid out before symt_hidden. */
__attribute__((noipa)) int symt_exported_a(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noipa)) int symt_exported_b(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return symt_exported_a(x) ^ 5;
}

/* An assembly label without a size, exported: libdwfl offers such a
 * symbol for any address after it when no sized symbol contains the
 * address.  It names no function: it must never name a frame. */
__asm__(".text\n"
	".globl symt_label\n"
	".type symt_label, @function\n"
	"symt_label:\n"
	"\tret\n");

/* Static: stripped, nothing names it; the nearest exported symbols below
 * it are symt_label (size 0) and symt_exported_b, which do not contain it. */
static __attribute__((noipa, no_sanitize("undefined"))) int symt_hidden(int x)
{
	__asm__ __volatile__("" ::: "memory");
	*symt_null = x; /* @CRASH_HIDDEN */
	return x + 1;
}

static inline __attribute__((always_inline, no_sanitize("undefined")))
void symt_store(int *p, int v)
{
	*p = v; /* @CRASH_INLINE */
}

static inline __attribute__((always_inline)) void symt_mid(int *p, int v)
{
	symt_store(p, v * 7); /* @CALL_STORE */
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noipa)) int symt_inl_outer(int v)
{
	symt_mid(symt_null, v + 2); /* @CALL_MID */
	__asm__ __volatile__("" ::: "memory");
	return v;
}

__attribute__((noipa)) int symt_deep(int n)
{
	int r;

	if (n <= 0)
		r = symt_hidden(n); /* @CALL_HIDDEN_DEEP */
	else
		r = symt_deep(n - 1); /* @CALL_DEEP */
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
	return r + 1;
}

__attribute__((noipa)) int symt_run(const char *mode)
{
	int r = 0;

	if (!strcmp(mode, "hidden"))
		r = symt_hidden(3); /* @CALL_HIDDEN */
	else if (!strcmp(mode, "inline"))
		r = symt_inl_outer(4); /* @CALL_OUTER */
	else if (!strcmp(mode, "deep"))
		r = symt_deep(25);
#ifdef SYMT_WITH_LIB
	else if (!strcmp(mode, "lib"))
		r = symt_lib_entry(5); /* @CALL_LIB */
#endif
	__asm__ __volatile__("" ::: "memory");
	return r + symt_exported_b(r);
}

int main(int argc, char **argv)
{
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER, .size = 1 << 20 };
	int rc = bb_init_opts(&o);

	if (rc || argc < 2) {
		fprintf(stderr, "usage: symt_prog hidden|inline|lib|deep (bb_init: %d)\n", rc);
		return 2;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	return symt_run(argv[1]);
}
