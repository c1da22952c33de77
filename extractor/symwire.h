/* SPDX-License-Identifier: MIT */
/*
 * symwire.h - the two messages between bb-extract and its symbolising
 * child (symbols.c asks, resolve.c answers; sandbox.c carries them).
 *
 * Both are sequences of NUL-terminated fields: text as it is (a name or a
 * path holds no NUL), numbers as ASCII digits (decimal; hexadecimal for
 * offsets), so that no field can be mistaken for another and every length
 * is found by scanning, never trusted.
 *
 * Request, written by the parent into the child's standard input:
 *   "bbsym2" uid gid drop debuginfod timeout_ms path build_id(hex)
 *   debuginfo_path test n { offset(hex) kind("p" pc | "r" return) }*n "end"
 *
 * Answer, written by the child to its standard output:
 *   "bbsym2" status("ok" | "no") message n
 *   { index function linkage function_offset(hex | "") file line
 *     ninlined { function linkage file line }*ninlined }*n  "end"
 * with "" for a function or file that is unknown and line 0, and for a
 * linkage name that is the function's name as shown (a C name) or unknown.
 * "no" means the module was not symbolised (the message says why) and n
 * is 0.
 *
 * The child is untrusted (it parses files a box names): the parent's
 * decoder bounds every field and count and rejects the whole answer at the
 * first thing out of place; it never takes part of one.
 */
#ifndef BBX_SYMWIRE_H
#define BBX_SYMWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blackbox/reader.h>

#define BBX_SYM_MAX_FRAMES  BB_CRASH_MAX_FRAMES
#define BBX_SYM_NAME_MAX    4096u         /* bytes of a function or file name */
#define BBX_SYM_MSG_MAX     512u          /* bytes of the child's message */
#define BBX_SYM_INLINE_MAX  32u           /* inlined calls kept per frame */
#define BBX_SYM_BUILD_ID_MAX 64u          /* bytes of a build id */
#define BBX_SYM_REQ_MAX     (48u * 1024u) /* a request; below a pipe's 64 KiB */
#define BBX_SYM_ANSWER_MAX  (4u << 20)    /* an answer, bytes */

/* Test hooks of the child (BB_EXTRACT_SYMBOL_TEST, bb-extract(1)). */
#define BBX_SYM_TEST_NONE    0
#define BBX_SYM_TEST_CRASH   1 /* die of SIGSEGV once confined */
#define BBX_SYM_TEST_HANG    2 /* sleep forever once confined */
#define BBX_SYM_TEST_GARBAGE 3 /* answer with a malformed message */

struct bbx_symreq {
	uint32_t    uid, gid;   /* what the child runs as ... */
	bool        drop;       /* ... after changing to it (we are root) */
	bool        debuginfod; /* libdw may ask debuginfod servers */
	uint32_t    timeout_ms; /* the parent kills the child after this */
	const char *path;       /* the module's file */
	uint8_t     build_id[BBX_SYM_BUILD_ID_MAX];
	size_t      build_id_len;
	const char *debug_path; /* libdwfl's debuginfo_path */
	unsigned    test;       /* BBX_SYM_TEST_* */
	size_t      n;
	uint64_t    off[BBX_SYM_MAX_FRAMES]; /* offsets in the module */
	bool        ret[BBX_SYM_MAX_FRAMES]; /* a return address: look up off - 1 */
};

/* One location: a function and where in it. */
struct bbx_symloc {
	const char *function;   /* as shown (a C++ name demangled); NULL when unknown */
	const char *linkage;    /* as the binary has it (mangled), when that is
				   another name; else NULL */
	const char *file;       /* NULL when unknown */
	uint32_t    line;       /* 0 when unknown */
};

/* What the child found for one frame (strings point into the answer). */
struct bbx_symframe {
	struct bbx_symloc at;   /* the out-of-line function and the line in it */
	bool        has_offset; /* at.function is named with an offset: */
	uint64_t    function_offset;
	size_t      ninlined;   /* calls inlined into it, innermost first */
	struct bbx_symloc inlined[BBX_SYM_INLINE_MAX];
};

/* A growing message (fixed capacity; overflow is sticky). */
struct bbx_wbuf {
	char  *p;
	size_t len, cap;
	bool   overflow;
};

void bbx_wbuf_str(struct bbx_wbuf *w, const char *s);
void bbx_wbuf_num(struct bbx_wbuf *w, uint64_t v, bool hex);

/* The request as bytes into @w.  Returns 0 or -ENOSPC. */
int bbx_symreq_encode(const struct bbx_symreq *q, struct bbx_wbuf *w);
/* Decode @len bytes at @buf (NUL-terminated fields stay in place: the
 * strings of @q point into @buf).  Returns 0 or -EBADMSG. */
int bbx_symreq_decode(const char *buf, size_t len, struct bbx_symreq *q);

/* Answer, child side: the head, each frame, the end. */
void bbx_symans_head(struct bbx_wbuf *w, bool ok, const char *message, size_t n);
void bbx_symans_frame(struct bbx_wbuf *w, size_t index, const struct bbx_symframe *f);
void bbx_symans_end(struct bbx_wbuf *w);

/*
 * bbx_symans_decode - check and decode an answer to a request of @nreq
 * frames.  On success returns 0 with *@ok and *@message (NUL-terminated,
 * in @buf), and @out[i] / @got[i] filled for the frames answered (each at
 * most once).  Returns -EBADMSG (*@message: what is wrong) for anything
 * out of place: a field too long or not terminated, a number that is not
 * one or out of range, an index repeated or beyond @nreq, too many inlined
 * calls, bytes after the end.
 */
int bbx_symans_decode(const char *buf, size_t len, size_t nreq, bool *ok,
		      const char **message, struct bbx_symframe *out, bool *got);

#endif /* BBX_SYMWIRE_H */
