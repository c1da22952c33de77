/* SPDX-License-Identifier: MIT */
/*
 * value.c - render record values as text, without allocating
 * (bb_format_value), and decode owner records for the reader.
 *
 * Everything here is async-signal-safe: no malloc, no stdio, no locale, no
 * libm.  bb_dump() calls bb_format_value() from a signal handler, and the
 * reader and the fuzzer feed it untrusted bytes: it decodes with the
 * project's one CBOR decoder (shared/cbor.h: every length checked against
 * the bytes that remain, definite lengths only, no tags, nesting at most
 * BB__CBOR_MAX_DEPTH deep) and prints doubles with its one printer
 * (shared/double.h).
 *
 * It renders exactly the shapes of docs/FORMAT.md §6: unsigned and
 * negative integers, byte and text strings, arrays and maps (rendered
 * generically for tags this version does not know), float16/32/64,
 * true/false/null/undefined and simple values.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/reader.h>

#include "../shared/cbor.h"
#include "../shared/double.h"
#include "internal.h"
#include "text.h"

struct fmt {
	struct bb__cbor c;      /* the value, bounded */
	const uint8_t *start;
	struct bb__out o;
	const char *why;  /* what is wrong, when a step fails */
	bool lenient;     /* BB_RF_TRUNCATED: running out of bytes is expected */
	bool short_;      /* ran out of bytes */
};

static int fail(struct fmt *f, const char *why)
{
	if (!f->why)
		f->why = why;
	return -1;
}

static int ran_out(struct fmt *f)
{
	f->short_ = true;
	return fail(f, "value ends early");
}

/*
 * Read an item head (shared/cbor.h).  The head of a tag, or of a simple
 * value below 32 in two bytes, is returned like any other: the renderer
 * refuses it where it stands (put_body(), put_simple(), or a want*() that
 * expected another type), with the message of that place.
 */
static int rd_head(struct fmt *f, struct bb__cbor_item *h)
{
	int rc = bb__cbor_read_head(&f->c, h);

	if (rc == BB__CBOR_SHORT)
		return ran_out(f);
	if (rc && rc != BB__CBOR_TAG && rc != BB__CBOR_SIMPLE)
		return fail(f, bb__cbor_strerror(rc));
	return 0;
}

/* The payload of a string of h->arg bytes; in lenient mode a string cut
 * short yields what is there and flags the shortage. */
static int rd_bytes(struct fmt *f, const struct bb__cbor_item *h, const uint8_t **s, size_t *n)
{
	*s = f->c.p;
	if (h->arg > bb__cbor_left(&f->c)) {
		if (!f->lenient)
			return ran_out(f);
		*n = bb__cbor_left(&f->c);
		f->c.p = f->c.end;
		f->short_ = true;
		return 0;
	}
	*n = (size_t)h->arg;
	f->c.p += *n;
	return 0;
}

/* A double, as every output of the project prints one (shared/double.h). */
static void put_double(struct bb__out *o, double d)
{
	char buf[BB__DOUBLE_MAX];

	bb__out_put(o, buf, bb__fmt_double(buf, d));
}

/* Render a float or simple value (major 7). */
static int put_simple(struct fmt *f, const struct bb__cbor_item *h)
{
	switch (h->ai) {
	case 20: bb__out_puts(&f->o, "false"); return 0;
	case 21: bb__out_puts(&f->o, "true"); return 0;
	case 22: bb__out_puts(&f->o, "null"); return 0;
	case 23: bb__out_puts(&f->o, "undefined"); return 0;
	case 25:
	case 26:
	case 27:
		put_double(&f->o, bb__cbor_float(h));
		return 0;
	case 24:
		if (h->arg < 32) /* not well formed (RFC 8949 §3.3) */
			return fail(f, bb__cbor_strerror(BB__CBOR_SIMPLE));
		/* fall through */
	default:
		bb__out_puts(&f->o, "simple(");
		bb__out_u64(&f->o, h->arg);
		bb__out_putc(&f->o, ')');
		return 0;
	}
}

static int put_item(struct fmt *f, int depth);

/* Render the rest of an item whose head is already read. */
static int put_body(struct fmt *f, const struct bb__cbor_item *h, int depth)
{
	const uint8_t *s;
	size_t n;

	switch (h->major) {
	case 0:
		bb__out_u64(&f->o, h->arg);
		return 0;
	case 1: /* -1 - val, which may be below INT64_MIN */
		bb__out_putc(&f->o, '-');
		if (h->arg == UINT64_MAX)
			bb__out_puts(&f->o, "18446744073709551616");
		else
			bb__out_u64(&f->o, h->arg + 1);
		return 0;
	case 2:
		if (rd_bytes(f, h, &s, &n))
			return -1;
		bb__out_hex(&f->o, s, n);
		return f->short_ ? ran_out(f) : 0;
	case 3:
		if (rd_bytes(f, h, &s, &n))
			return -1;
		bb__out_str(&f->o, s, n);
		return f->short_ ? ran_out(f) : 0;
	case 4:
	case 5:
		if (depth >= BB__CBOR_MAX_DEPTH)
			return fail(f, bb__cbor_strerror(BB__CBOR_DEPTH));
		/* every item takes at least one byte: bound the count first */
		if (h->arg > bb__cbor_left(&f->c) / (h->major == 5 ? 2 : 1))
			return ran_out(f);
		bb__out_putc(&f->o, h->major == 4 ? '[' : '{');
		for (uint64_t i = 0; i < h->arg; i++) {
			if (i)
				bb__out_puts(&f->o, ", ");
			if (put_item(f, depth + 1))
				return -1;
			if (h->major == 5) {
				bb__out_puts(&f->o, ": ");
				if (put_item(f, depth + 1))
					return -1;
			}
		}
		bb__out_putc(&f->o, h->major == 4 ? ']' : '}');
		return 0;
	case 6: /* FORMAT.md §6: values never carry CBOR tags */
		return fail(f, bb__cbor_strerror(BB__CBOR_TAG));
	default:
		return put_simple(f, h);
	}
}

static int put_item(struct fmt *f, int depth)
{
	struct bb__cbor_item h;

	if (rd_head(f, &h))
		return -1;
	return put_body(f, &h, depth);
}

/* A KV or EVENT field value: a scalar (FORMAT.md §6), never a container. */
static int want_scalar(struct fmt *f, const char *why)
{
	struct bb__cbor_item h;

	if (rd_head(f, &h))
		return -1;
	if (h.major == 4 || h.major == 5)
		return fail(f, why);
	return put_body(f, &h, 1);
}

/* Read a head and insist on a major type (and for 7, on a set of ai). */
static int want(struct fmt *f, struct bb__cbor_item *h, int major, const char *why)
{
	if (rd_head(f, h))
		return -1;
	if (h->major != major)
		return fail(f, why);
	return 0;
}

static int want_text(struct fmt *f, const char *why)
{
	struct bb__cbor_item h;

	if (want(f, &h, 3, why))
		return -1;
	return put_body(f, &h, 1);
}

static int want_int(struct fmt *f, const char *why)
{
	struct bb__cbor_item h;

	if (rd_head(f, &h))
		return -1;
	if (h.major > 1)
		return fail(f, why);
	return put_body(f, &h, 1);
}

static int want_array(struct fmt *f, uint64_t n, const char *why)
{
	struct bb__cbor_item h;

	if (want(f, &h, 4, why))
		return -1;
	if (h.arg != n)
		return fail(f, why);
	return 0;
}

/* "<lead><tid> (<name>)" of an owner record; @tid/@name say what failed. */
static int put_thread(struct fmt *f, const char *lead, const char *tid, const char *name)
{
	bb__out_puts(&f->o, lead);
	if (want_int(f, tid))
		return -1;
	bb__out_puts(&f->o, " (");
	if (want_text(f, name))
		return -1;
	bb__out_putc(&f->o, ')');
	return 0;
}

/* An event's name and fields, after its array's head: "name k=v ...". */
static int put_event(struct fmt *f)
{
	struct bb__cbor_item h;

	if (want_text(f, "event name is not a text string") ||
	    want(f, &h, 5, "event fields are not a map"))
		return -1;
	if (h.arg > bb__cbor_left(&f->c) / 2)
		return ran_out(f);
	for (uint64_t i = 0; i < h.arg; i++) {
		bb__out_putc(&f->o, ' ');
		if (want_text(f, "event field key is not a text string"))
			return -1;
		bb__out_putc(&f->o, '=');
		if (want_scalar(f, "event field value is not a scalar"))
			return -1;
	}
	return 0;
}

/* A span's begin (docs/FORMAT.md §6 "Spans"): "begin name k=v ...
 * depth=2 flow=17 trace=<trace id>-<span id>". */
static int put_span_begin(struct fmt *f)
{
	struct bb__cbor_item h;
	const uint8_t *s;
	size_t n;

	if (want(f, &h, 4, "span begin is not an array"))
		return -1;
	if (h.arg < 3 || h.arg > 5)
		return fail(f, "span begin is not an array of 3 to 5");
	bb__out_puts(&f->o, "begin ");
	if (put_event(f))
		return -1;
	bb__out_puts(&f->o, " depth=");
	{
		struct bb__cbor_item d;

		if (want(f, &d, 0, "span depth is not an unsigned integer") ||
		    put_body(f, &d, 1))
			return -1;
	}
	if (h.arg >= 4) {
		struct bb__cbor_item fl;

		if (rd_head(f, &fl))
			return -1;
		if (fl.major == 0) {
			bb__out_puts(&f->o, " flow=");
			put_body(f, &fl, 1);
		} else if (!(fl.major == 7 && fl.ai == 22)) {
			return fail(f, "span flow id is not an unsigned integer or null");
		}
	}
	if (h.arg == 5) {
		struct bb__cbor_item t;

		if (want(f, &t, 2, "span trace context is not a byte string") ||
		    rd_bytes(f, &t, &s, &n))
			return -1;
		if (n != BB_SPAN_CTX_SIZE)
			return f->short_ ? ran_out(f)
					 : fail(f, "span trace context is not 24 bytes");
		bb__out_puts(&f->o, " trace=");
		bb__out_hex(&f->o, s, BB_SPAN_TRACE_ID_SIZE);
		bb__out_putc(&f->o, '-');
		bb__out_hex(&f->o, s + BB_SPAN_TRACE_ID_SIZE, BB_SPAN_SPAN_ID_SIZE);
	}
	return 0;
}

/* The shape each tag promises (docs/FORMAT.md §5), rendered. */
static int put_tagged(struct fmt *f, unsigned tag)
{
	struct bb__cbor_item h;

	switch (tag) {
	case BB_TAG_STR:
		return want_text(f, "str value is not a text string");
	case BB_TAG_I64:
		return want_int(f, "i64 value is not an integer");
	case BB_TAG_U64:
		if (want(f, &h, 0, "u64 value is not an unsigned integer"))
			return -1;
		return put_body(f, &h, 1);
	case BB_TAG_F64:
		if (want(f, &h, 7, "f64 value is not a float"))
			return -1;
		if (h.ai < 25 || h.ai > 27)
			return fail(f, "f64 value is not a float");
		return put_body(f, &h, 1);
	case BB_TAG_BOOL:
		if (want(f, &h, 7, "bool value is not true/false"))
			return -1;
		if (h.ai != 20 && h.ai != 21)
			return fail(f, "bool value is not true/false");
		return put_body(f, &h, 1);
	case BB_TAG_BYTES:
		if (want(f, &h, 2, "bytes value is not a byte string"))
			return -1;
		return put_body(f, &h, 1);
	case BB_TAG_KV:
		if (want_array(f, 2, "kv value is not array(2)") ||
		    want_text(f, "kv key is not a text string"))
			return -1;
		bb__out_putc(&f->o, '=');
		return want_scalar(f, "kv value is not a scalar");
	case BB_TAG_EVENT:
		if (want_array(f, 2, "event value is not array(2)"))
			return -1;
		return put_event(f);
	case BB_TAG_SPAN_BEGIN:
		return put_span_begin(f);
	case BB_TAG_SPAN_END:
		bb__out_puts(&f->o, "end depth=");
		if (want(f, &h, 0, "span end is not an unsigned depth"))
			return -1;
		return put_body(f, &h, 1);
	case BB_TAG_OWNER:
		if (want_array(f, 4, "owner value is not array(4)"))
			return -1;
		return put_thread(f, "thread ", "owner tid is not an integer",
				  "owner name is not a text string") ||
		       put_thread(f, " takes the ring from ",
				  "owner previous tid is not an integer",
				  "owner previous name is not a text string");
	default:
		return put_item(f, 0);
	}
}

BB_EXPORT int bb_format_value(unsigned tag, unsigned flags, const uint8_t *value,
		    size_t len, char *buf, size_t buflen)
{
	struct fmt f = {
		.c = { .p = value, .end = value + (value ? len : 0) }, .start = value,
		.o = { .buf = buf, .cap = buf ? buflen : 0 },
		.lenient = flags & BB_RF_TRUNCATED,
	};
	int rc = put_tagged(&f, tag);

	if (!rc && f.c.p != f.c.end)
		rc = fail(&f, "trailing bytes after the value");
	if (rc && !(f.lenient && f.short_)) {
		/* Malformed: replace what was rendered by the reason. */
		f.o.len = 0;
		f.o.cut = false;
		bb__out_puts(&f.o, "<malformed ");
		bb__out_puts(&f.o, bb_tag_name(tag));
		bb__out_puts(&f.o, " value: ");
		bb__out_puts(&f.o, f.why);
		bb__out_puts(&f.o, " at byte ");
		bb__out_u64(&f.o, (uint64_t)(f.c.p - f.start));
		bb__out_putc(&f.o, '>');
		bb__out_finish(&f.o);
		return -EBADMSG;
	}
	if (f.lenient)
		bb__out_puts(&f.o, " [truncated]");
	return (int)bb__out_finish(&f.o);
}

/* ---- owner records for the reader -------------------------------------- */

static int rd_int32(struct fmt *f, int32_t *v)
{
	struct bb__cbor_item h;

	if (rd_head(f, &h))
		return -1;
	if (h.major > 1 || h.arg > INT32_MAX)
		return fail(f, "tid");
	*v = h.major ? -1 - (int32_t)h.arg : (int32_t)h.arg;
	return 0;
}

static int rd_name(struct fmt *f, char *dst, size_t dstlen)
{
	const uint8_t *s;
	struct bb__cbor_item h;
	size_t n;

	if (want(f, &h, 3, "name") || rd_bytes(f, &h, &s, &n))
		return -1;
	if (dstlen) {
		n = n < dstlen - 1 ? n : dstlen - 1;
		memcpy(dst, s, n);
		dst[n] = '\0';
		/* a name is printed as is later: no embedded NUL surprises */
		dst[strnlen(dst, n)] = '\0';
	}
	return 0;
}

int bb__owner_decode(const uint8_t *value, size_t len,
		     int32_t *tid, char *name, size_t namelen,
		     int32_t *prev_tid, char *prev, size_t prevlen)
{
	char dummy[1];
	struct fmt f = {
		.c = { .p = value, .end = value + (value ? len : 0) }, .start = value,
		.o = { .buf = dummy, .cap = 0 },
	};

	if (want_array(&f, 4, "owner") || rd_int32(&f, tid) ||
	    rd_name(&f, name, namelen) || rd_int32(&f, prev_tid) ||
	    rd_name(&f, prev, prevlen) || f.c.p != f.c.end)
		return -EBADMSG;
	return 0;
}
