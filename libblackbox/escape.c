/* SPDX-License-Identifier: MIT */
/*
 * escape.c - text safe for a terminal or a log from untrusted bytes
 * (bb_escape_text, and the strings of bb_format_value), and the end of a
 * bounded output (struct bb__out, text.h).  No malloc, no stdio, no
 * locale: AS-safe.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/reader.h>

#include "../shared/utf8.h"
#include "internal.h"
#include "text.h"

/*
 * NUL-terminate; mark a cut with "..." at the very end.  The output holds
 * ASCII and whole UTF-8 characters only: the "..." never leaves the start
 * of a character without its continuation bytes before it (that would put
 * invalid UTF-8 in front of a terminal).
 */
size_t bb__out_finish(struct bb__out *o)
{
	if (!o->cap)
		return 0;
	if (o->cut && o->cap >= 4) {
		size_t p = o->cap - 4, q = p;

		while (q > 0 && (o->buf[q - 1] & 0xc0) == 0x80)
			q--;
		if (q > 0 && (uint8_t)o->buf[q - 1] >= 0xc0) {
			uint8_t c = (uint8_t)o->buf[q - 1];
			size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

			if (q - 1 + need > p)
				p = q - 1; /* the character does not fit whole */
		}
		memcpy(o->buf + p, "...", 3);
		o->len = p + 3;
	}
	o->buf[o->len] = '\0';
	return o->len;
}

/*
 * The one terminal escaper of the project (bb_escape_text, the text of
 * bb_format_value, and through them every tool).  A box's strings and file
 * names are chosen by whoever wrote them: printed raw, an ESC or a C1 CSI
 * starts a terminal control sequence (window title, hidden text, an OSC 52
 * clipboard write), a newline forges a log line, bidirectional controls
 * make a name read as another.  So only displayable characters pass.
 */

/*
 * Code points that are valid UTF-8 yet unsafe on a terminal: the C1
 * controls U+0080..U+009F (a terminal may act on them: U+009B is CSI),
 * the line and paragraph separators, and the bidirectional formatting
 * characters, which reorder what follows them on the screen.
 */
static bool unsafe_cp(uint32_t cp)
{
	return cp <= 0x9f || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * text_char - the length of the displayable character at @s (@n > 0
 * bytes left): 1 for printable ASCII (space included), 2 to 4 for valid
 * UTF-8 that is not unsafe_cp(); 0 when s[0] must be escaped (a C0
 * control, DEL, a C1 control, a byte that does not start valid UTF-8).
 */
static size_t text_char(const uint8_t *s, size_t n)
{
	uint32_t cp;
	size_t k;

	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	if (s[0] < 0x80)
		return 0;
	k = bb__utf8_seq(s, n, &cp);
	return k && !unsafe_cp(cp) ? k : 0;
}

/*
 * Escape @n bytes as visible text: displayable characters as they are,
 * a backslash (and with @quoted a double quote) preceded by a backslash,
 * \n \t \r, and \xNN for every other byte that text_char() refuses
 * (an unsafe multi-byte character byte by byte).  An escape or a
 * character is written whole or not at all.
 */
void bb__out_escaped(struct bb__out *o, const uint8_t *s, size_t n, bool quoted)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, k;

	while (i < n && !o->cut) {
		uint8_t c = s[i];
		char e[4] = { '\\', 0, 0, 0 };
		size_t el = 2;

		k = text_char(s + i, n - i);
		if (k && c != '\\' && !(quoted && c == '"')) {
			if (o->cap <= o->len + k) { /* a character is never split */
				o->cut = true;
				break;
			}
			bb__out_put(o, (const char *)s + i, k);
			i += k;
			continue;
		}
		switch (c) {
		case '\\': case '"': e[1] = (char)c; break;
		case '\n': e[1] = 'n'; break;
		case '\t': e[1] = 't'; break;
		case '\r': e[1] = 'r'; break;
		default:
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			el = 4;
		}
		if (o->cap <= o->len + el) { /* no room for the whole escape */
			o->cut = true;
			break;
		}
		bb__out_put(o, e, el);
		i++;
	}
}

BB_EXPORT size_t bb_escape_text(const char *s, size_t len, char *buf, size_t buflen)
{
	struct bb__out o = { .buf = buf, .cap = buf ? buflen : 0 };

	if (s)
		bb__out_escaped(&o, (const uint8_t *)s, len, false);
	return bb__out_finish(&o);
}

static bool plain_byte(uint8_t c)
{
	return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* A text string as is, or quoted and escaped (put_escaped) if it is empty
 * or holds spaces, quotes, backslashes or anything put_escaped escapes. */
void bb__out_str(struct bb__out *o, const uint8_t *s, size_t n)
{
	bool quote = n == 0;
	size_t i, u;

	for (i = 0; i < n && !quote; i += u ? u : 1) {
		u = s[i] >= 0x80 ? text_char(s + i, n - i) : 0;
		if (!u && !plain_byte(s[i]))
			quote = true;
	}
	if (!quote) {
		bb__out_put(o, (const char *)s, n);
		return;
	}
	bb__out_putc(o, '"');
	bb__out_escaped(o, s, n, true);
	bb__out_putc(o, '"');
}
