/* SPDX-License-Identifier: MIT */
/*
 * msg.h - what the tools say about what they read: messages on stderr and
 * names from a box or a path in the output, both through the library's
 * terminal escaper (bb_escape_text) so that no byte of a box reaches a
 * terminal raw.  Internal to the tools.
 */
#ifndef BBX_MSG_H
#define BBX_MSG_H

#include <stddef.h>

#include "out.h"

/* The program's name at the start of every message: set by main() first. */
extern const char *bbx_prog;

/* "<bbx_prog>: <what>: <message>" (or "<bbx_prog>: <message>" when @what is
 * NULL) on stderr, the whole line escaped. */
void bbx_msg(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * bbx_quote - @n bytes of a name from a box (a comm, a file name) for a
 * line whose other words it must not pass for: as it is when made only of
 * letters, digits and "._-+:/@" (and not empty), else in double quotes,
 * escaped by bb_escape_text() with each double quote as \".  So
 * "sshd[812] (uid 0) crashed: SEGV" cannot read as a prefix of the line.
 * @buf gets it NUL-terminated (4 * @n + 3 bytes always suffice; a smaller
 * @len cuts it as bb_escape_text() does).  Returns the length written.
 */
size_t bbx_quote(const char *s, size_t n, char *buf, size_t len);

/* @n bytes of anyone's text (any length), escaped into @o as bb_escape_text()
 * does, in pieces that each fit one output buffer. */
void bbx_put_escaped(struct bbx_out *o, const char *s, size_t n);

#endif /* BBX_MSG_H */
