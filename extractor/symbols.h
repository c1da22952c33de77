/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - bb-extract's symboliser: turn a crash record's return
 * addresses into module+offset (always, from the box's module table) and,
 * when the module's file on disk is the one the crashed process ran (same
 * GNU build id), into a function name, the calls inlined at the address
 * and file:line, with elfutils' libdwfl.
 *
 * The files are named by the box, which is untrusted: they are opened and
 * parsed only in a child process (resolve.c) confined to the box owner's
 * privileges at most, with limits and a deadline (sandbox.c).  What the
 * child answers is checked like any other untrusted input (symwire.c).
 * The rules and their reasons: bb-extract(1), SYMBOLS.
 */
#ifndef BBX_SYMBOLS_H
#define BBX_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blackbox/reader.h>

/* A function and where in it; strings owned by the frame. */
struct bbx_loc {
	char    *function; /* NULL when unknown */
	char    *file;     /* NULL when unknown */
	unsigned line;     /* 0 when unknown */
};

/* One resolved frame (bbx_frames_free releases its strings). */
struct bbx_frame {
	uint64_t       addr;     /* as recorded */
	const char    *module;   /* path of the module holding addr, NULL if none
				    (points into the reader's module table) */
	const uint8_t *build_id; /* that module's build id as recorded, or NULL */
	size_t         build_id_len;
	uint64_t       offset;   /* addr - load bias of that module */
	bool           examined; /* the module's file was read: a frame without
				    a function lies in no symbol (unknown) */
	struct bbx_loc at;       /* the function (only one whose symbol contains
				    the address) and the line in it */
	bool           has_function_offset;
	uint64_t       function_offset; /* offset - the function's start */
	size_t         ninlined; /* calls inlined into it at this address ... */
	struct bbx_loc *inlined; /* ... innermost first */
};

/* Modules of one box a run symbolises at most; the frames of the others
 * stay module+offset (bb-extract(1), SYMBOLS). */
#define BBX_SYM_MODULES_MAX 64

struct bbx_sym_opts {
	bool        symbolise;   /* false: module+offset only (--no-symbols) */
	int         timeout_ms;  /* per module; the child is killed after */
	int         box_budget_ms; /* all modules of one box: no child starts
				      later, none runs longer */
	int         run_budget_ms; /* all boxes of the run, likewise */
	const char *const *debug_dirs; /* --debug-dir, absolute, searched first */
	size_t      ndebug_dirs;
	bool        debuginfod;  /* --debuginfod */
	uint32_t    owner;       /* the box's owner, whose privileges the child
				    has at most: what the caller can prove
				    (preamble.c), never a header's word alone */
	unsigned    test;        /* BBX_SYM_TEST_* (BB_EXTRACT_SYMBOL_TEST) */
};

/*
 * bbx_symbolise - fill @f[0..n) for the crash frames @addrs (innermost
 * first: frame 0 is the faulting PC, the others return addresses, looked
 * up at addr - 1 so that the function and line are the call's).
 * Never fails extraction: a module without a recorded build id, a file
 * missing, not regular, unreadable by the box's owner, with another build
 * id, a child that fails, crashes, times out or answers nonsense, a module
 * over BBX_SYM_MODULES_MAX or the budgets of @o leave its frames as
 * module+offset and append why to @note (may be NULL).
 * Returns 0 or -ENOMEM.
 */
int bbx_symbolise(struct bbx_frame *f, const uint64_t *addrs, size_t n,
		  const struct bb_module *mods, size_t nmods,
		  const struct bbx_sym_opts *o, char *note, size_t notelen);

void bbx_frames_free(struct bbx_frame *f, size_t n);

#endif /* BBX_SYMBOLS_H */
