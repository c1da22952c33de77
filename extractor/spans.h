/* SPDX-License-Identifier: MIT */
/*
 * spans.h - each thread's open spans as bb-extract's walk goes by
 * (docs/FORMAT.md §6 "Spans"): what text and JSON say a thread was inside
 * when its process died (spans.c), and what --perfetto draws as slices
 * (perfetto.c).  Threads are told apart by tid; every byte kept is a copy.
 */
#ifndef BBX_SPANS_H
#define BBX_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <blackbox/reader.h>

/* Open spans kept per thread (the outermost ones); deeper begins are
 * counted in bbx_span_thr.cut and not matched. */
#define BBX_SPAN_KEEP 64

/* A span's begin record, decoded in place (bbx_span_parse()). */
struct bbx_span_rec {
	const uint8_t *name, *fields, *end; /* name item, fields map, end of the map */
	uint32_t depth;
	uint64_t flow;         /* 0: none */
	const uint8_t *ctx;    /* BB_SPAN_CTX_SIZE bytes, or NULL */
};

/* One open span: its begin record's value, copied. */
struct bbx_span {
	uint32_t depth;
	uint64_t ts;           /* its begin, box clock ns */
	size_t off, len;       /* its value in bbx_span_thr.bytes */
};

struct bbx_span_thr {
	int32_t tid;
	char name[16];
	struct bbx_span *v;    /* open spans, outermost first */
	size_t n, cap;
	uint8_t *bytes;
	size_t blen, bcap;
	uint32_t unknown;      /* depths 1..unknown are open, their begins gone */
	uint64_t cut;          /* begins beyond BBX_SPAN_KEEP, not kept */
	uint64_t records;      /* records of this thread seen */
	uint32_t track;        /* the caller's: perfetto.c's track index */
};

struct bbx_spans {
	struct bbx_span_thr *t;
	size_t n, cap;
	uint32_t *slot;        /* tid hash: index + 1, 0 empty */
	size_t nslot;
	uint64_t newest_ts;    /* of any record seen */
};

/* What bbx_spans_note() did with a record. */
enum bbx_span_what {
	BBX_SPAN_NONE,         /* not a span record (or a malformed one) */
	BBX_SPAN_OPENED,       /* a begin, kept: v[n - 1] */
	BBX_SPAN_NOT_KEPT,     /* a begin beyond BBX_SPAN_KEEP */
	BBX_SPAN_CLOSED,       /* an end: closed spans (its own among them
				  when matched) */
};
struct bbx_span_note {
	enum bbx_span_what what;
	size_t closed;         /* CLOSED: spans popped, innermost first */
	bool matched;          /* CLOSED: its begin was among them */
	struct bbx_span_rec rec; /* OPENED, NOT_KEPT: the begin */
	uint32_t depth;        /* the record's depth */
};

/* 0 and *@out, or -1 when @value is not a span begin's shape. */
int bbx_span_parse(const uint8_t *value, size_t len, struct bbx_span_rec *out);
/* The thread of @tid (made, named @name, when new): its index, or -1 out
 * of memory.  Pointers into s->t are valid until the next call. */
long bbx_spans_thread(struct bbx_spans *s, int32_t tid, const char *name);
/* Note @rec of thread @ti: 0, or -ENOMEM. */
int bbx_spans_note(struct bbx_spans *s, size_t ti, const struct bb_record *rec,
		   struct bbx_span_note *note);
void bbx_spans_free(struct bbx_spans *s);
/* What text and JSON need of @rec: its time, and a span record noted.
 * 0, or -ENOMEM. */
int bbx_spans_see(struct bbx_spans *s, const struct bb_record *rec);

/* "name{k=v, k2=v2}" of a span begin's value, escaped, into @buf (@len
 * bytes, NUL-terminated, cut to fit); its length. */
size_t bbx_span_label(const uint8_t *value, size_t vlen, char *buf, size_t len);

#endif /* BBX_SPANS_H */
