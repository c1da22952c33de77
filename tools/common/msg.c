/* SPDX-License-Identifier: MIT */
/*
 * msg.c - the tools' messages and escaped names (msg.h).
 */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <blackbox/reader.h>

const char *bbx_prog = "";

/*
 * Messages quote file names and strings from boxes (comm, thread names,
 * the reader's messages): the whole line goes through the library's
 * terminal escaper, so none of them reaches the terminal raw.
 */
void bbx_msg(const char *what, const char *fmt, ...)
{
	char line[8192], safe[4 * sizeof(line) + 1];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s: %s%s", bbx_prog, what ? what : "",
		     what ? ": " : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	bb_escape_text(line, strlen(line), safe, sizeof(safe));
	fprintf(stderr, "%s\n", safe);
}

/* The longest path is 4 KiB: 8 KiB is more than any name; 4 bytes out per
 * input byte at most. */
void bbx_put_escaped(struct bbx_out *o, const char *s, size_t n)
{
	if (n > 8192)
		n = 8192;
	bbx_out_commit(o, bb_escape_text(s, n, bbx_out_reserve(o, 4 * n + 1), 4 * n + 1));
}
