/* SPDX-License-Identifier: MIT */
/*
 * groups.h - crash groups: the signature that puts the deaths of one bug
 * together across hosts, rebuilds, ASLR and library updates (the rule:
 * bb-extract(1), GROUPS), and the crash stack of a journal entry
 * (BB_STACK, BB_STACK_KINDS) read back into frames for the symboliser.
 * Internal to bb-extract.
 */
#ifndef BBX_GROUPS_H
#define BBX_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

/* In-app frames a signature is made of, at most (inlined calls count). */
#define BBX_GROUP_FRAMES 5
/* Modules a symbol cache has looked up at most (a collector's entries are
 * their senders' word: one with thousands of build ids costs no more);
 * each one within the symboliser's budgets (bb-extract(1), SYMBOLS). */
#define BBX_GROUP_MODULES_MAX 256
/* Bytes of the "top frames" text of a group. */
#define BBX_GROUP_TOP_MAX 512

/* What a death is grouped by. */
enum bbx_group_kind {
	BBX_GROUP_APP,      /* a crash with in-app frames: by those */
	BBX_GROUP_SYSTEM,   /* a crash without one: comm and the top frames */
	BBX_GROUP_NOSTACK,  /* a crash without a stack: comm and signal */
	BBX_GROUP_ORPHANED, /* died without a word: comm */
};

struct bbx_sig {
	char id[17];                 /* 16 hex digits */
	enum bbx_group_kind kind;
	bool named;                  /* every frame of it named by function */
	char top[BBX_GROUP_TOP_MAX]; /* "parse_header < handle_request", raw
					(escape it to print) */
	char where[128];             /* "parse.c:42": the file (base name) and
					line of its first frame, "" when unknown;
					not part of the id (it moves with every
					edit) */
};

/*
 * bbx_module_is_system - whether frames in the module at @path are left
 * out of a signature: the dynamic loader, the C library, libblackbox and
 * the vDSO by name; anything under /lib, /lib32, /lib64, /usr/lib,
 * /usr/lib32, /usr/lib64.  The executable is never (the caller knows it
 * by its build id).
 */
bool bbx_module_is_system(const char *path);

/*
 * bbx_signature - the group of one death: @crashed with the frames
 * @f[0..n) (symbolised or not; innermost first) of a process whose
 * executable has build id @exe_id (@exe_idlen bytes, 0 when unknown),
 * command name @comm, signal @signal (0 for bb_crash_record(); for a
 * death without a word, non-zero when the OOM killer killed it).  Never
 * fails.
 */
/* bbx_signature_event - @s made the signature of a live owner's @event
 * ("hang", "snapshot"): the same frames in a group apart from crashes. */
void bbx_signature_event(struct bbx_sig *s, const char *event);
void bbx_signature(const struct bbx_frame *f, size_t n, bool crashed, const uint8_t *exe_id,
		   size_t exe_idlen, const char *comm, int signal, struct bbx_sig *out);

/* One frame of BB_STACK. */
struct bbx_sframe {
	uint64_t addr, offset;
	char    *module;        /* as sent (escaped text), NULL for "?" */
	uint8_t  build_id[64];
	size_t   build_id_len;
	uint8_t  flags;         /* BB_CRASH_FRAME_* from BB_STACK_KINDS */
};

/*
 * bbx_stack_parse - the frames of a BB_STACK value (@len bytes at @s, one
 * line a frame: "#<i> 0x<addr> <module>+0x<offset>[ <build id>]" or
 * "#<i> 0x<addr> ?") with BB_STACK_KINDS @kinds ("" when the entry has
 * none: frame 0 is then taken as an interrupted instruction when
 * @signal_crash, every other one as a return address).  At most
 * BB_CRASH_MAX_FRAMES; a line that does not parse ends the stack.
 * Returns the number of frames in *@out (malloc'ed, bbx_stack_free), or
 * -ENOMEM.
 */
int bbx_stack_parse(const char *s, size_t len, const char *kinds, bool signal_crash,
		    struct bbx_sframe **out);
void bbx_stack_free(struct bbx_sframe *f, size_t n);

/* @n lowercase hex digits at @h as bytes into @out (at most @max): their
 * number, or 0 when they are not an even number of such digits or more. */
size_t bbx_unhex(const char *h, size_t n, uint8_t *out, size_t max);

/*
 * A cache of symbolised frames over many entries: each (owner, build id,
 * offset, kind) is looked up once, the frames of one module together in
 * one confined child (bbx_symbolise), under its budgets.
 */
struct bbx_symcache;

struct bbx_symcache *bbx_symcache_new(void);
void bbx_symcache_free(struct bbx_symcache *c);
/* Register @f (with a module and a build id) to be looked up as @owner.
 * 0 or -ENOMEM. */
int bbx_symcache_add(struct bbx_symcache *c, const struct bbx_sframe *f, uint32_t owner);
/* Look everything registered up, with @o (its owner replaced by each
 * frame's); notes on modules not symbolised go to @note.  0 or -ENOMEM. */
int bbx_symcache_resolve(struct bbx_symcache *c, const struct bbx_sym_opts *o, char *note,
			 size_t notelen);
/*
 * bbx_symcache_frames - @f[0..n) as frames in @fr (shallow: the strings
 * stay the cache's, never bbx_frames_free() them): what was found for
 * each, module+offset for the others.
 */
void bbx_symcache_frames(const struct bbx_symcache *c, const struct bbx_sframe *f, size_t n,
			 uint32_t owner, struct bbx_frame *fr);

#endif /* BBX_GROUPS_H */
