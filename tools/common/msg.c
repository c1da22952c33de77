/* SPDX-License-Identifier: MIT */
/*
 * msg.c - the tools' messages and escaped names (msg.h).
 */
#include "msg.h"

#include <stdarg.h>
#include <stdbool.h>
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

size_t bbx_quote(const char *s, size_t n, char *buf, size_t len)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789._-+:/@";
	size_t k, o = 0;
	bool bare = n > 0;

	if (!len)
		return 0;
	for (k = 0; k < n && bare; k++)
		bare = s[k] && strchr(plain, s[k]);
	if (bare)
		return bb_escape_text(s, n, buf, len);
	if (len < 3) {
		buf[0] = '\0';
		return 0;
	}
	buf[o++] = '"';
	for (const char *p = s, *end = s + n; p <= end && o + 2 < len;) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		size_t seg = (size_t)((q ? q : end) - p);

		o += bb_escape_text(p, seg, buf + o, len - o - 1);
		if (!q || o + 3 >= len)
			break;
		memcpy(buf + o, "\\\"", 2);
		o += 2;
		p = q + 1;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return o;
}
