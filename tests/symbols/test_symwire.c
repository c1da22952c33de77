/* SPDX-License-Identifier: MIT */
/*
 * Description: the messages between bb-extract and its symbolising child
 * (extractor/symwire.c).  Requests and answers survive a round trip; the
 * parent's decoder of the child's answer (the child is untrusted) rejects
 * every malformed answer whole: each prefix of a valid answer, fields too
 * long or unterminated, numbers that are not plain digits or out of range,
 * indices repeated or beyond the request, too many inlined calls, a
 * linkage name without a function, bytes after the end; and 200,000 randomly damaged answers, each in a buffer
 * of exactly its size (ASan sees any read past it), never crash it and
 * never yield a field longer than its bound.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symwire.h"

static char wbuf_mem[1 << 16];

static struct bbx_wbuf fresh(void)
{
	return (struct bbx_wbuf){ wbuf_mem, 0, sizeof(wbuf_mem), false };
}

/* A valid answer of three frames to a request of four. */
static size_t sample_answer(struct bbx_wbuf *w)
{
	struct bbx_symframe f;

	*w = fresh();
	bbx_symans_head(w, true, "no DWARF found", 3);
	memset(&f, 0, sizeof(f));
	f.at = (struct bbx_symloc){ "ns::outer", "_ZN2ns5outerEv", "/src/a.c", 12 };
	f.has_offset = true;
	f.function_offset = 0x1c;
	f.ninlined = 2;
	f.inlined[0] = (struct bbx_symloc){ "inner", NULL, "/src/b.h", 3 };
	f.inlined[1] = (struct bbx_symloc){ "ns::C<int>::middle", "_ZN2ns1CIiE6middleEv",
					    "/src/a.c", 7 };
	bbx_symans_frame(w, 0, &f);
	memset(&f, 0, sizeof(f));
	bbx_symans_frame(w, 2, &f); /* examined, nothing contains it */
	f.at = (struct bbx_symloc){ "main", NULL, NULL, 0 };
	f.has_offset = true;
	f.function_offset = 5;
	bbx_symans_frame(w, 3, &f);
	bbx_symans_end(w);
	cr_assert(!w->overflow);
	return w->len;
}

/* Decode @len bytes copied into a buffer of exactly that size (kept until
 * the next call: the results point into it). */
static int decode(const char *bytes, size_t len, size_t nreq, struct bbx_symframe *out,
		  bool *got, const char **msg)
{
	static char *b;
	bool ok;
	int rc;

	free(b);
	b = malloc(len ? len : 1);
	cr_assert(b);
	memcpy(b, bytes, len);
	rc = bbx_symans_decode(b, len, nreq, &ok, msg, out, got);
	if (rc == 0) {
		/* every string lies inside the buffer and within its bound */
		for (size_t i = 0; i < nreq; i++) {
			if (!got[i])
				continue;
			cr_assert(out[i].ninlined <= BBX_SYM_INLINE_MAX);
			cr_assert(!out[i].at.function ||
				  strlen(out[i].at.function) <= BBX_SYM_NAME_MAX);
			cr_assert(!out[i].at.linkage ||
				  (out[i].at.function &&
				   strlen(out[i].at.linkage) <= BBX_SYM_NAME_MAX));
			cr_assert(!out[i].at.file || strlen(out[i].at.file) <= BBX_SYM_NAME_MAX);
			cr_assert(out[i].at.line < 100000000u);
		}
		cr_assert(strlen(*msg) <= BBX_SYM_MSG_MAX);
	}
	return rc;
}

static struct bbx_symframe out[BBX_SYM_MAX_FRAMES];
static bool got[BBX_SYM_MAX_FRAMES];

Test(symwire, request_round_trip)
{
	struct bbx_symreq q, d;
	struct bbx_wbuf w = fresh();

	memset(&q, 0, sizeof(q));
	q.uid = 65534;
	q.gid = 65534;
	q.drop = true;
	q.debuginfod = true;
	q.timeout_ms = 10000;
	q.path = "/usr/lib/x86_64-linux-gnu/libfoo.so.1 (odd name)";
	q.build_id_len = 20;
	for (int i = 0; i < 20; i++)
		q.build_id[i] = (uint8_t)(i * 13);
	q.debug_path = ":.debug:/tmp/dbg:/usr/lib/debug";
	q.test = BBX_SYM_TEST_HANG;
	q.n = BBX_SYM_MAX_FRAMES;
	for (size_t i = 0; i < q.n; i++) {
		q.off[i] = UINT64_MAX - i * 0x1000;
		q.ret[i] = i % 3 != 0;
	}
	cr_assert_eq(bbx_symreq_encode(&q, &w), 0);
	cr_assert_lt(w.len, BBX_SYM_REQ_MAX);
	cr_assert_eq(bbx_symreq_decode(w.p, w.len, &d), 0);
	cr_assert_eq(d.uid, q.uid);
	cr_assert_eq(d.gid, q.gid);
	cr_assert(d.drop && d.debuginfod);
	cr_assert_eq(d.timeout_ms, q.timeout_ms);
	cr_assert_str_eq(d.path, q.path);
	cr_assert_str_eq(d.debug_path, q.debug_path);
	cr_assert_eq(d.build_id_len, 20);
	cr_assert_arr_eq(d.build_id, q.build_id, 20);
	cr_assert_eq(d.test, BBX_SYM_TEST_HANG);
	cr_assert_eq(d.n, q.n);
	for (size_t i = 0; i < q.n; i++) {
		cr_assert_eq(d.off[i], q.off[i]);
		cr_assert_eq(d.ret[i], q.ret[i]);
	}
	/* cut anywhere, or with a byte after the end: refused */
	for (size_t k = 0; k < w.len; k++)
		cr_assert_eq(bbx_symreq_decode(w.p, k, &d), -EBADMSG, "prefix %zu", k);
	w.p[w.len] = 'x';
	cr_assert_eq(bbx_symreq_decode(w.p, w.len + 1, &d), -EBADMSG);
}

Test(symwire, answer_round_trip)
{
	struct bbx_wbuf w;
	size_t len = sample_answer(&w);
	const char *msg;

	cr_assert_eq(decode(w.p, len, 4, out, got, &msg), 0, "%s", msg);
	cr_assert_str_eq(msg, "no DWARF found");
	cr_assert(got[0] && !got[1] && got[2] && got[3]);
	cr_assert_str_eq(out[0].at.function, "ns::outer");
	cr_assert_str_eq(out[0].at.linkage, "_ZN2ns5outerEv");
	cr_assert_str_eq(out[0].at.file, "/src/a.c");
	cr_assert_eq(out[0].at.line, 12);
	cr_assert(out[0].has_offset);
	cr_assert_eq(out[0].function_offset, 0x1c);
	cr_assert_eq(out[0].ninlined, 2);
	cr_assert_str_eq(out[0].inlined[0].function, "inner");
	cr_assert_null(out[0].inlined[0].linkage);
	cr_assert_str_eq(out[0].inlined[0].file, "/src/b.h");
	cr_assert_eq(out[0].inlined[0].line, 3);
	cr_assert_str_eq(out[0].inlined[1].function, "ns::C<int>::middle");
	cr_assert_str_eq(out[0].inlined[1].linkage, "_ZN2ns1CIiE6middleEv");
	cr_assert_eq(out[0].inlined[1].line, 7);
	cr_assert_null(out[2].at.function);
	cr_assert_null(out[2].at.file);
	cr_assert(!out[2].has_offset);
	cr_assert_str_eq(out[3].at.function, "main");
	cr_assert_null(out[3].at.linkage);
	cr_assert_null(out[3].at.file);
	cr_assert_eq(out[3].function_offset, 5);
}

Test(symwire, every_prefix_is_refused)
{
	struct bbx_wbuf w;
	size_t len = sample_answer(&w);
	const char *msg;

	for (size_t k = 0; k < len; k++)
		cr_assert_eq(decode(w.p, k, 4, out, got, &msg), -EBADMSG, "prefix %zu", k);
	/* and a byte after the end */
	w.p[len] = '\0';
	cr_assert_eq(decode(w.p, len + 1, 4, out, got, &msg), -EBADMSG);
	cr_assert_str_eq(msg, "bytes after the end");
}

/* Build "bbsym2\0ok\0\0" + @n + the frames given as fields. */
static size_t answer_of(char *buf, size_t cap, const char *const *fields, size_t nf)
{
	struct bbx_wbuf w = { buf, 0, cap, false };

	for (size_t i = 0; i < nf; i++)
		bbx_wbuf_str(&w, fields[i]);
	cr_assert(!w.overflow);
	return w.len;
}

#define REFUSED(nreq, why, ...) do {						\
	static const char *const f_[] = { __VA_ARGS__ };			\
	char b_[256];								\
	const char *m_;								\
	size_t l_ = answer_of(b_, sizeof(b_), f_, sizeof(f_) / sizeof(f_[0]));	\
	cr_assert_eq(decode(b_, l_, nreq, out, got, &m_), -EBADMSG, "%s", why);	\
} while (0)

Test(symwire, malformed_answers_are_refused)
{
	/* a well-formed one first: the cases below differ from it in one place */
	static const char *const good[] = {
		"bbsym2", "ok", "", "1", "0", "f", "", "1c", "a.c", "9", "0", "end",
	};
	char b[256], long_name[BBX_SYM_NAME_MAX + 2];
	const char *m;
	size_t l = answer_of(b, sizeof(b), good, sizeof(good) / sizeof(good[0]));
	struct bbx_wbuf w = { wbuf_mem, 0, sizeof(wbuf_mem), false };

	cr_assert_eq(decode(b, l, 1, out, got, &m), 0, "%s", m);

	REFUSED(1, "magic", "bbsymX", "ok", "", "1", "0", "f", "", "1c", "a.c", "9", "0", "end");
	REFUSED(1, "status", "bbsym2", "ko", "", "1", "0", "f", "", "1c", "a.c", "9", "0", "end");
	REFUSED(1, "no with frames", "bbsym2", "no", "", "1", "0", "f", "", "1c", "a.c", "9", "0",
		"end");
	REFUSED(1, "more frames than asked", "bbsym2", "ok", "", "2", "0", "f", "", "1c", "a.c",
		"9", "0", "end");
	REFUSED(1, "index beyond", "bbsym2", "ok", "", "1", "1", "f", "", "1c", "a.c", "9", "0",
		"end");
	REFUSED(2, "index repeated", "bbsym2", "ok", "", "2", "0", "f", "", "1c", "a.c", "9", "0",
		"0", "g", "", "", "", "0", "0", "end");
	REFUSED(1, "sign", "bbsym2", "ok", "", "1", "-0", "f", "", "1c", "a.c", "9", "0", "end");
	REFUSED(1, "0x prefix", "bbsym2", "ok", "", "1", "0", "f", "", "0x1c", "a.c", "9", "0",
		"end");
	REFUSED(1, "upper-case hex", "bbsym2", "ok", "", "1", "0", "f", "", "1C", "a.c", "9", "0",
		"end");
	REFUSED(1, "offset overflow", "bbsym2", "ok", "", "1", "0", "f", "", "10000000000000000",
		"a.c", "9", "0", "end");
	REFUSED(1, "offset without function", "bbsym2", "ok", "", "1", "0", "", "", "1c", "a.c",
		"9", "0", "end");
	REFUSED(1, "linkage name without function", "bbsym2", "ok", "", "1", "0", "", "_Z1fv",
		"", "a.c", "9", "0", "end");
	REFUSED(1, "inlined linkage name without function", "bbsym2", "ok", "", "1", "0", "f",
		"", "1c", "a.c", "9", "1", "", "_Z1gv", "b.c", "3", "end");
	REFUSED(1, "line too big", "bbsym2", "ok", "", "1", "0", "f", "", "1c", "a.c", "100000000",
		"0", "end");
	REFUSED(1, "empty number", "bbsym2", "ok", "", "1", "0", "f", "", "1c", "a.c", "", "0",
		"end");
	REFUSED(1, "too many inlined", "bbsym2", "ok", "", "1", "0", "f", "", "1c", "a.c", "9",
		"33", "end");
	REFUSED(1, "inlined count beyond the fields", "bbsym2", "ok", "", "1", "0", "f", "", "1c",
		"a.c", "9", "1", "end");
	REFUSED(1, "no end", "bbsym2", "ok", "", "1", "0", "f", "", "1c", "a.c", "9", "0", "fin");
	REFUSED(0, "frames to an empty request", "bbsym2", "ok", "", "1", "0", "f", "", "1c",
		"a.c", "9", "0", "end");

	/* a name one byte over its bound: refused, at the bound: taken */
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	for (int over = 1; over >= 0; over--) {
		long_name[BBX_SYM_NAME_MAX + over] = '\0';
		w.len = 0;
		bbx_wbuf_str(&w, "bbsym2");
		bbx_wbuf_str(&w, "ok");
		bbx_wbuf_str(&w, "");
		bbx_wbuf_num(&w, 1, false);
		bbx_wbuf_num(&w, 0, false);
		bbx_wbuf_str(&w, long_name);
		bbx_wbuf_str(&w, long_name);
		bbx_wbuf_str(&w, "");
		bbx_wbuf_str(&w, "");
		bbx_wbuf_num(&w, 0, false);
		bbx_wbuf_num(&w, 0, false);
		bbx_wbuf_str(&w, "end");
		cr_assert_eq(decode(w.p, w.len, 1, out, got, &m), over ? -EBADMSG : 0,
			     "name of %u bytes", BBX_SYM_NAME_MAX + over);
	}
	/* likewise the message */
	for (int over = 1; over >= 0; over--) {
		long_name[BBX_SYM_MSG_MAX + over] = '\0';
		w.len = 0;
		bbx_wbuf_str(&w, "bbsym2");
		bbx_wbuf_str(&w, "no");
		bbx_wbuf_str(&w, long_name);
		bbx_wbuf_num(&w, 0, false);
		bbx_wbuf_str(&w, "end");
		cr_assert_eq(decode(w.p, w.len, 1, out, got, &m), over ? -EBADMSG : 0,
			     "message of %u bytes", BBX_SYM_MSG_MAX + over);
	}
}

Test(symwire, damaged_answers_never_crash_the_decoder)
{
	struct bbx_wbuf w;
	size_t len = sample_answer(&w), accepted = 0;
	char *copy = malloc(len + 16);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	const char *msg;

	cr_assert(copy);
	for (int round = 0; round < 200000; round++) {
		size_t n = len, flips;

		memcpy(copy, w.p, len);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		flips = 1 + x % 4;
		for (size_t k = 0; k < flips; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			switch (x % 4) {
			case 0: copy[x / 4 % n] = (char)(x >> 32); break;  /* any byte */
			case 1: copy[x / 4 % n] = '\0'; break;              /* split a field */
			case 2: copy[x / 4 % n] = '9'; break;               /* join fields */
			default: n = x / 4 % n + 1; break;                  /* cut */
			}
		}
		accepted += decode(copy, n, 4, out, got, &msg) == 0;
	}
	free(copy);
	cr_log_info("%zu of 200000 damaged answers still well formed", accepted);
}
