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

#include "../../shared/json.h"

#define ESC_PIECE 4096u /* 4 * ESC_PIECE + 1 <= BBX_OUT_BUFSZ */

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

/*
 * Any length: escaped in pieces of at most ESC_PIECE bytes (4 bytes out per
 * input byte at most, so a piece always fits one reservation), each cut
 * where escaping the pieces apart gives what escaping the whole does
 * (bb__json_cut(): never inside a UTF-8 character).
 */
void bbx_put_escaped(struct bbx_out *o, const char *s, size_t n)
{
	while (n) {
		size_t k = bb__json_cut((const uint8_t *)s, n, ESC_PIECE);

		bbx_out_commit(o, bb_escape_text(s, k, bbx_out_reserve(o, 4 * k + 1), 4 * k + 1));
		s += k;
		n -= k;
	}
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
