/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - bb-extract's symboliser: turn a crash record's return
 * addresses into module+offset (always, from the box's module area) and,
 * when the module's file is present with debug information, into function
 * and file:line with binutils' addr2line(1).
 *
 * Why addr2line and not libdw: see bb-extract(1), SYMBOLS.  In short: it is
 * on every machine that has a compiler (binutils), needs no new build
 * dependency, and runs in a child process, so a malformed or hostile ELF
 * file can crash or hang only the child, which a timeout kills; one child
 * per module resolves all of that module's frames.
 */
#ifndef BBX_SYMBOLS_H
#define BBX_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blackbox/reader.h>

/* One resolved frame.  Strings are owned by the frame (bbx_frames_free). */
struct bbx_frame {
	uint64_t    addr;     /* as recorded */
	const char *module;   /* path of the module holding addr, NULL if none
				 (points into the reader's module table) */
	uint64_t    offset;   /* addr - load bias of that module */
	char       *function; /* NULL when unknown */
	char       *file;     /* NULL when unknown */
	unsigned    line;     /* 0 when unknown */
};

struct bbx_sym_opts {
	bool        symbolise;  /* false: module+offset only (--no-symbols) */
	const char *addr2line;  /* program to run; NULL: "addr2line" from PATH */
	int         timeout_ms; /* per module batch; the child is killed after */
};

/*
 * bbx_symbolise - fill @f[0..n) for the crash frames @addrs (innermost
 * first: frame 0 is the faulting PC, the others return addresses, looked
 * up at addr - 1 so the line is the call's, not the next statement's).
 * Never fails extraction: a missing file, a build id that differs from the
 * recorded one, a symboliser that fails, crashes or times out leaves the
 * frames with module+offset only, and appends why to @note (may be NULL).
 * Returns 0 or -ENOMEM.
 */
int bbx_symbolise(struct bbx_frame *f, const uint64_t *addrs, size_t n,
		  const struct bb_module *mods, size_t nmods,
		  const struct bbx_sym_opts *o, char *note, size_t notelen);

void bbx_frames_free(struct bbx_frame *f, size_t n);

/* "SIGSEGV" for 11, or NULL if the number has no name here. */
const char *bbx_signal_name(int sig);
/* "SEGV_MAPERR" for (SIGSEGV, 1), "SI_USER" for (any, 0), or NULL. */
const char *bbx_sigcode_name(int sig, int code);

#endif /* BBX_SYMBOLS_H */
