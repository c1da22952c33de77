/* SPDX-License-Identifier: MIT */
/*
 * journal-field.c - one field of a journal entry shown (journal-field.h).
 * Every byte of a value is anyone's (a host uploading to a collector
 * chose it): escaped in pieces (bbx_put_escaped()), whatever its length.
 */
#include "journal-field.h"

#include <string.h>

#include "msg.h"

bool bbx_j_show_field(const char *p, size_t l, struct bbx_out *o, struct bbx_em *em, bool text)
{
	const char *eq = memchr(p, '=', l < 64 ? l : 64);
	size_t k;

	if (!eq || !((eq - p == 7 && !memcmp(p, "MESSAGE", 7)) ||
		     (eq - p > 3 && !memcmp(p, "BB_", 3)) ||
		     (eq - p == 9 && !memcmp(p, "_HOSTNAME", 9)) ||
		     (eq - p == 11 && !memcmp(p, "_MACHINE_ID", 11))))
		return false;
	k = (size_t)(eq - p);
	/* a name is [A-Z0-9_] in any journal journald or journal-remote
	 * wrote; a file made by other means is not trusted to be so */
	for (size_t i = 0; i < k; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", p[i]) || !p[i])
			return false;
	if (l > BBX_J_SHOW_MAX)
		l = BBX_J_SHOW_MAX;
	if (!text) {
		char key[64];

		memcpy(key, p, k);
		key[k] = '\0';
		bbx_em_key(em, key);
		bbx_em_str(em, eq + 1, l - k - 1);
		return true;
	}
	bbx_out_put(o, p, k + 1);
	for (const char *v = eq + 1, *end = p + l; v < end;) {
		const char *nl = memchr(v, '\n', (size_t)(end - v));
		size_t n = (size_t)((nl ? nl : end) - v);

		bbx_put_escaped(o, v, n);
		bbx_out_char(o, '\n');
		v += n + 1;
		if (nl && v < end)
			bbx_out_str(o, "    ");
	}
	return true;
}
