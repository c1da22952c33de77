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

/* @n bytes of a name from a box or a path (at most 8 KiB), escaped into @o. */
void bbx_put_escaped(struct bbx_out *o, const char *s, size_t n);

#endif /* BBX_MSG_H */
