/* SPDX-License-Identifier: MIT */
/*
 * span.c - bb_span_begin(), bb_span_begin_ctx(), bb_span_end(): a span's
 * two records (docs/FORMAT.md §6 "Spans") and this thread's nesting depth.
 * The records are written by write.c's writers (bb__write_span_begin(),
 * bb__write_span_end()); what is here is the depth and the correlation
 * items of a begin.
 */
#include <errno.h>
#include <string.h>

#include <blackbox.h>

#include "barrier.h"
#include "internal.h"

/*
 * This thread's open spans.  Only this thread and its signal handlers
 * touch it, and a handler's spans are balanced before it returns, so a
 * plain counter with compiler-only fences is enough: a handler that runs
 * between a change of the depth and the record sees the depth of the
 * record about to be written and leaves it as it found it.
 * Exported for the inline paths of <blackbox/inline.h> (initial-exec TLS,
 * as bb__tls_v1), which count it themselves and write through
 * bb__span_write_begin() and bb__span_write_end() when they fall back.
 */
BB_EXPORT __thread uint32_t bb__span_depth __asm__("bb__span_depth_v1")
	__attribute__((tls_model("initial-exec")));

/* The correlation items of a begin after its depth: at most a depth
 * (9 bytes), a flow id (9) and the trace context (2 + 24). */
#define SPAN_TAIL_MAX (9 + 9 + 2 + BB_SPAN_CTX_SIZE)

/* A begin record at @depth, correlated by @ctx (NULL: not). */
static int write_begin(const char *name, const struct bb_field *f, size_t n,
		       const struct bb_span_ctx *ctx, uint32_t depth)
{
	static const uint8_t zero[BB_SPAN_TRACE_ID_SIZE];
	uint8_t tail[SPAN_TAIL_MAX], *p = tail;
	unsigned extra = 1;
	bool trace;

	p = bb__cbor_put_head(0, depth, p);
	trace = ctx && memcmp(ctx->trace_id, zero, sizeof(zero)) != 0;
	if (ctx && (ctx->flow || trace)) {
		extra++;
		if (ctx->flow)
			p = bb__cbor_put_head(0, ctx->flow, p);
		else
			*p++ = 0xf6; /* null: no flow id, a trace context follows */
	}
	if (trace) {
		extra++;
		p = bb__cbor_put_head(2, BB_SPAN_CTX_SIZE, p);
		memcpy(p, ctx->trace_id, BB_SPAN_TRACE_ID_SIZE);
		memcpy(p + BB_SPAN_TRACE_ID_SIZE, ctx->span_id, BB_SPAN_SPAN_ID_SIZE);
		p += BB_SPAN_CTX_SIZE;
	}
	return bb__write_span_begin(name, f, n, tail, (uint32_t)(p - tail), extra);
}

static int span_begin(const char *name, const struct bb_field *f, size_t n,
		      const struct bb_span_ctx *ctx)
{
	uint32_t depth = bb__span_depth + 1;

	bb__span_depth = depth;
	/* Compiler-only: the depth is stored before the record is written,
	 * so a signal handler's spans nest inside this one (pairs with the
	 * same fence in bb_span_end(), which a handler runs too). */
	BB__SIGNAL_FENCE();
	return write_begin(name, f, n, ctx, depth);
}

BB_EXPORT int (bb_span_begin)(const char *name, const struct bb_field *f, size_t n)
{
	return span_begin(name, f, n, NULL);
}

BB_EXPORT int bb_span_begin_ctx(const char *name, const struct bb_field *f, size_t n,
				const struct bb_span_ctx *ctx)
{
	return span_begin(name, f, n, ctx);
}

BB_EXPORT int (bb_span_end)(void)
{
	uint32_t depth = bb__span_depth;
	int ret;

	if (depth == 0)
		return -EINVAL;
	ret = bb__write_span_end(depth);
	/* Compiler-only: the end is written before the depth is given back
	 * (pairs with the fence in span_begin()). */
	BB__SIGNAL_FENCE();
	bb__span_depth = depth - 1;
	return ret;
}

/* The inline paths' fallbacks: the records at a depth they counted. */
BB_EXPORT int bb__span_write_begin(const char *name, const struct bb_field *f, size_t n,
				   uint32_t depth)
{
	return write_begin(name, f, n, NULL, depth);
}

BB_EXPORT int bb__span_write_end(uint32_t depth)
{
	return depth ? bb__write_span_end(depth) : -EINVAL;
}
