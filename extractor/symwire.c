/* SPDX-License-Identifier: MIT */
/*
 * symwire.c - encode and decode the symbolising child's request and answer
 * (symwire.h).  The decoders take nothing on trust: every field is found by
 * scanning for its NUL within a bound, every number is all digits and in
 * range.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../shared/hex.h"
#include "symwire.h"

#define MAGIC "bbsym2"

/* ---- writing ------------------------------------------------------------ */

static void put(struct bbx_wbuf *w, const char *s, size_t n)
{
	if (w->overflow || w->cap - w->len < n + 1) {
		w->overflow = true;
		return;
	}
	memcpy(w->p + w->len, s, n);
	w->p[w->len + n] = '\0';
	w->len += n + 1;
}

void bbx_wbuf_str(struct bbx_wbuf *w, const char *s)
{
	put(w, s ? s : "", s ? strlen(s) : 0);
}

void bbx_wbuf_num(struct bbx_wbuf *w, uint64_t v, bool hex)
{
	static const char digits[] = "0123456789abcdef";
	unsigned base = hex ? 16 : 10;
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = digits[v % base];
		v /= base;
	} while (v);
	put(w, tmp + i, sizeof(tmp) - i);
}

int bbx_symreq_encode(const struct bbx_symreq *q, struct bbx_wbuf *w)
{
	char id[2 * BBX_SYM_BUILD_ID_MAX + 1];
	size_t i, k = q->build_id_len < BBX_SYM_BUILD_ID_MAX ? q->build_id_len
							       : BBX_SYM_BUILD_ID_MAX;

	bb__hex(id, q->build_id, k);
	id[2 * k] = '\0';
	bbx_wbuf_str(w, MAGIC);
	bbx_wbuf_num(w, q->uid, false);
	bbx_wbuf_num(w, q->gid, false);
	bbx_wbuf_num(w, q->drop, false);
	bbx_wbuf_num(w, q->debuginfod, false);
	bbx_wbuf_num(w, q->timeout_ms, false);
	bbx_wbuf_str(w, q->path);
	bbx_wbuf_str(w, id);
	bbx_wbuf_str(w, q->debug_path);
	bbx_wbuf_num(w, q->test, false);
	bbx_wbuf_num(w, q->n, false);
	for (i = 0; i < q->n && i < BBX_SYM_MAX_FRAMES; i++) {
		bbx_wbuf_num(w, q->off[i], true);
		bbx_wbuf_str(w, q->ret[i] ? "r" : "p");
	}
	bbx_wbuf_str(w, "end");
	return w->overflow ? -ENOSPC : 0;
}

/* ---- reading ------------------------------------------------------------ */

struct rd {
	const char *p, *end;
};

/* The next field, at most @max bytes before its NUL; NULL if there is none. */
static const char *field(struct rd *r, size_t max)
{
	size_t left = (size_t)(r->end - r->p);
	const char *s = r->p, *z = memchr(s, '\0', left < max + 1 ? left : max + 1);

	if (!z)
		return NULL;
	r->p = z + 1;
	return s;
}

/* A number field: 1 to 16 hex or 1 to 19 decimal digits, at most @max. */
static int num(struct rd *r, bool hex, uint64_t max, uint64_t *v)
{
	const char *s = field(r, hex ? 16 : 19);
	uint64_t x = 0;

	if (!s || !*s)
		return -EBADMSG;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (hex && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else
			return -EBADMSG;
		x = x * (hex ? 16 : 10) + d;
	}
	if (x > max)
		return -EBADMSG;
	*v = x;
	return 0;
}

static bool is(struct rd *r, const char *want)
{
	const char *s = field(r, strlen(want));

	return s && !strcmp(s, want);
}

static int hexbytes(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(s);

	if (n % 2 || n / 2 > cap)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;

		if (d > 15)
			return -EBADMSG;
		if (i % 2)
			out[i / 2] = (uint8_t)(out[i / 2] | d);
		else
			out[i / 2] = (uint8_t)(d << 4);
	}
	*len = n / 2;
	return 0;
}

int bbx_symreq_decode(const char *buf, size_t len, struct bbx_symreq *q)
{
	struct rd r = { buf, buf + len };
	const char *id;
	uint64_t v[7];

	memset(q, 0, sizeof(*q));
	if (!is(&r, MAGIC) || num(&r, false, UINT32_MAX, &v[0]) ||
	    num(&r, false, UINT32_MAX, &v[1]) || num(&r, false, 1, &v[2]) ||
	    num(&r, false, 1, &v[3]) || num(&r, false, UINT32_MAX, &v[4]) ||
	    !(q->path = field(&r, PATH_MAX - 1)) || !(id = field(&r, 2 * BBX_SYM_BUILD_ID_MAX)) ||
	    hexbytes(id, q->build_id, sizeof(q->build_id), &q->build_id_len) ||
	    !(q->debug_path = field(&r, BBX_SYM_REQ_MAX)) ||
	    num(&r, false, BBX_SYM_TEST_GARBAGE, &v[5]) ||
	    num(&r, false, BBX_SYM_MAX_FRAMES, &v[6]))
		return -EBADMSG;
	q->uid = (uint32_t)v[0];
	q->gid = (uint32_t)v[1];
	q->drop = v[2];
	q->debuginfod = v[3];
	q->timeout_ms = (uint32_t)v[4];
	q->test = (unsigned)v[5];
	q->n = (size_t)v[6];
	for (size_t i = 0; i < q->n; i++) {
		const char *kind;

		if (num(&r, true, UINT64_MAX, &q->off[i]) || !(kind = field(&r, 1)) ||
		    (strcmp(kind, "r") && strcmp(kind, "p")))
			return -EBADMSG;
		q->ret[i] = kind[0] == 'r';
	}
	return is(&r, "end") && r.p == r.end ? 0 : -EBADMSG;
}

/* ---- the answer --------------------------------------------------------- */

void bbx_symans_head(struct bbx_wbuf *w, bool ok, const char *message, size_t n)
{
	char msg[BBX_SYM_MSG_MAX + 1];

	snprintf(msg, sizeof(msg), "%s", message ? message : "");
	bbx_wbuf_str(w, MAGIC);
	bbx_wbuf_str(w, ok ? "ok" : "no");
	bbx_wbuf_str(w, msg);
	bbx_wbuf_num(w, ok ? n : 0, false);
}

/* A name cut to BBX_SYM_NAME_MAX bytes (the decoder takes no longer). */
static void put_name(struct bbx_wbuf *w, const char *s)
{
	size_t n = s ? strnlen(s, BBX_SYM_NAME_MAX) : 0;

	put(w, s ? s : "", n);
}

static void put_loc(struct bbx_wbuf *w, const struct bbx_symloc *l)
{
	put_name(w, l->function);
	put_name(w, l->function ? l->linkage : NULL);
	put_name(w, l->file);
	bbx_wbuf_num(w, l->file ? l->line : 0, false);
}

void bbx_symans_frame(struct bbx_wbuf *w, size_t index, const struct bbx_symframe *f)
{
	size_t k = f->ninlined < BBX_SYM_INLINE_MAX ? f->ninlined : BBX_SYM_INLINE_MAX;

	bbx_wbuf_num(w, index, false);
	put_name(w, f->at.function);
	put_name(w, f->at.function ? f->at.linkage : NULL);
	if (f->at.function && f->has_offset)
		bbx_wbuf_num(w, f->function_offset, true);
	else
		bbx_wbuf_str(w, "");
	put_name(w, f->at.file);
	bbx_wbuf_num(w, f->at.file ? f->at.line : 0, false);
	bbx_wbuf_num(w, k, false);
	for (size_t i = 0; i < k; i++)
		put_loc(w, &f->inlined[i]);
}

void bbx_symans_end(struct bbx_wbuf *w)
{
	bbx_wbuf_str(w, "end");
}

#define LINE_MAX_ 99999999u /* no source file has more lines */

/* A function and its linkage name: "" for none, a linkage name only
 * with a function. */
static int get_names(struct rd *r, struct bbx_symloc *l)
{
	if (!(l->function = field(r, BBX_SYM_NAME_MAX)) ||
	    !(l->linkage = field(r, BBX_SYM_NAME_MAX)) || (!*l->function && *l->linkage))
		return -EBADMSG;
	if (!*l->function)
		l->function = NULL;
	if (!*l->linkage)
		l->linkage = NULL;
	return 0;
}

static int get_loc(struct rd *r, struct bbx_symloc *l)
{
	uint64_t line;

	if (get_names(r, l) || !(l->file = field(r, BBX_SYM_NAME_MAX)) ||
	    num(r, false, LINE_MAX_, &line))
		return -EBADMSG;
	if (!*l->file)
		l->file = NULL;
	l->line = l->file ? (uint32_t)line : 0;
	return 0;
}

int bbx_symans_decode(const char *buf, size_t len, size_t nreq, bool *ok,
		      const char **message, struct bbx_symframe *out, bool *got)
{
	struct rd r = { buf, buf + len };
	const char *status, *fo;
	uint64_t n, v;

#define BAD(what) do { *message = what; return -EBADMSG; } while (0)
	memset(got, 0, nreq * sizeof(*got));
	if (!is(&r, MAGIC))
		BAD("no answer header");
	if (!(status = field(&r, 2)) || (strcmp(status, "ok") && strcmp(status, "no")))
		BAD("bad status");
	if (!(*message = field(&r, BBX_SYM_MSG_MAX)))
		BAD("message too long");
	*ok = status[0] == 'o';
	if (num(&r, false, *ok ? nreq : 0, &n))
		BAD("bad frame count");
	for (uint64_t i = 0; i < n; i++) {
		struct bbx_symframe *f;

		if (num(&r, false, nreq ? nreq - 1 : 0, &v) || !nreq || got[v])
			BAD("bad or repeated frame index");
		f = &out[v];
		got[v] = true;
		memset(f, 0, sizeof(*f));
		if (get_names(&r, &f->at) || !(fo = field(&r, 16)))
			BAD("bad function");
		if (*fo) {
			struct rd one = { fo, fo + strlen(fo) + 1 };

			if (!f->at.function || num(&one, true, UINT64_MAX, &f->function_offset))
				BAD("bad function offset");
			f->has_offset = true;
		}
		if (!(f->at.file = field(&r, BBX_SYM_NAME_MAX)) ||
		    num(&r, false, LINE_MAX_, &v))
			BAD("bad file or line");
		if (!*f->at.file)
			f->at.file = NULL;
		f->at.line = f->at.file ? (uint32_t)v : 0;
		if (num(&r, false, BBX_SYM_INLINE_MAX, &v))
			BAD("too many inlined calls");
		f->ninlined = (size_t)v;
		for (size_t k = 0; k < f->ninlined; k++)
			if (get_loc(&r, &f->inlined[k]))
				BAD("bad inlined call");
	}
	if (!is(&r, "end"))
		BAD("no end");
	if (r.p != r.end)
		BAD("bytes after the end");
	return 0;
#undef BAD
}
