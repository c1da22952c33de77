/* SPDX-License-Identifier: MIT */
/*
 * thread_start.c - an alternate signal stack for every thread the program
 * starts with pthread_create() while the crash handler is on, so that a
 * stack overflow in a thread that never called the library still leaves a
 * crash record (crash.c runs the handler on that stack).
 *
 * How: libblackbox defines pthread_create, exported at the version glibc
 * gives it since 2.34 (libblackbox.map, node GLIBC_2.34), so that the
 * program's calls, and those of the libraries loaded with it (libstdc++'s
 * std::thread, a pool library), reach this one first when libblackbox is
 * linked in (or preloaded).  It calls glibc's (the next definition,
 * dlsym(RTLD_NEXT)) with bb__thread_start() as the start routine, which
 * gives the new thread its alternate stack (bb__thread_started(), box.c)
 * and calls the program's routine.  With the crash handler off it passes
 * the call on unchanged.
 *
 * Cost per thread, handler on: a 16-byte malloc() and free(), and what
 * bb_thread_init() spends on the stack: an mmap() of the stack and its
 * guard page, an mprotect(), a sigaltstack(), and a munmap() at the
 * thread's exit (BENCHMARKS.md has the ratio to a bare pthread_create()).
 * Threads created before bb_init(), by a program linked against a glibc
 * before 2.34 (its calls name pthread_create@GLIBC_2.2.5), when
 * libblackbox is dlopen()ed without RTLD_GLOBAL, or under
 * ThreadSanitizer, are not seen: they get their stack from
 * bb_thread_init() or their first write, as before.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

typedef int (*bb__create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* glibc's pthread_create, found at the first call; NULL until then. */
static bb__create_fn bb__next_create;
/* ThreadSanitizer or AddressSanitizer is in the process: its interceptors
 * must see a thread's start before any call of ours does (malloc, mmap),
 * and AddressSanitizer runs its own alternate signal stacks, so threads
 * pass through unchanged (and get their stack from a write, as before). */
static bool bb__tsan;

struct bb__start {
	void *(*fn)(void *);
	void *arg;
};

static void *bb__thread_start(void *p)
{
	struct bb__start s;

	memcpy(&s, p, sizeof(s));
	free(p);
	bb__thread_started();
	return s.fn(s.arg);
}

static bb__create_fn bb__create_next(void)
{
	/* Acquire pairs with the release store below: a pointer seen is
	 * one dlsym() returned (any thread's: they are all the same). */
	bb__create_fn f = BB__LOAD_ACQUIRE(&bb__next_create);
	void *sym;

	if (f)
		return f;
	sym = dlsym(RTLD_NEXT, "pthread_create");
	if (!sym)
		return NULL;
	/* Relaxed: ordered before the release store below, which the
	 * acquire load above pairs with. */
	BB__STORE_RELAXED(&bb__tsan, dlsym(RTLD_DEFAULT, "__tsan_init") != NULL ||
					 dlsym(RTLD_DEFAULT, "__asan_init") != NULL);
	/* memcpy: ISO C has no cast from dlsym()'s object pointer to a
	 * function pointer (POSIX guarantees the representation). */
	memcpy(&f, &sym, sizeof(f));
	BB__STORE_RELEASE(&bb__next_create, f);
	return f;
}

BB_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	bb__create_fn next = bb__create_next();
	struct bb__start *s;
	int rc;

	if (!next)
		return EAGAIN;   /* no glibc pthread_create: cannot happen in a linked program */
	if (!bb__crash_altstacks_on() || BB__LOAD_RELAXED(&bb__tsan) || !(s = malloc(sizeof(*s))))
		return next(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	rc = next(th, attr, bb__thread_start, s);
	if (rc)
		free(s);
	return rc;
}
