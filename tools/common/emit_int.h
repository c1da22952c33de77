/* SPDX-License-Identifier: MIT */
/*
 * emit_int.h - what the files of the tools' emitter share (emit.c the
 * emitter, emit_fast.c its fast paths, json.c JSON from CBOR, cbor_out.c
 * CBOR output).  Internal to them; the tools use emit.h.  The pieces
 * every record runs through are inline.  Values are decoded with the
 * project's CBOR decoder (shared/cbor.h), strings checked and escaped with
 * its UTF-8 check and JSON escaper (shared/utf8.h, shared/json.h).
 */
#ifndef BBX_EMIT_INT_H
#define BBX_EMIT_INT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../shared/cbor.h"
#include "../../shared/double.h"
#include "../../shared/hex.h"
#include "../../shared/json.h"
#include "../../shared/utf8.h"
#include "emit.h"

#define ESC_CHUNK 4096 /* strings are escaped in pieces of this many bytes at most */

/* json.c */
void bbx__json_esc(struct bbx_out *o, const uint8_t *s, size_t n);
void bbx__json_hex_body(struct bbx_out *o, const uint8_t *p, size_t n);
void bbx__json_hex(struct bbx_out *o, const uint8_t *p, size_t n);
#define FMT_DOUBLE_MAX 48 /* bytes bbx__fmt_double() may write */
/* A double as JSON: at most FMT_DOUBLE_MAX bytes at @p; returns the count. */
size_t bbx__fmt_double(char *p, double v);

static inline void json_u64(struct bbx_out *o, uint64_t v)
{
	bbx_out_commit(o, bbx_fmt_u64(bbx_out_reserve(o, 20), v));
}

static inline void json_double(struct bbx_out *o, double v)
{
	bbx_out_commit(o, bbx__fmt_double(bbx_out_reserve(o, FMT_DOUBLE_MAX), v));
}

/* json.c: one well-formed item (bb__cbor_skip() said so) as JSON. */
void bbx__json_item(struct bbx_out *o, struct bb__cbor *c);

/* ---- CBOR out --------------------------------------------------------- */

/* A CBOR head of major type @major with argument @v, shortest form (the
 * project's encoder, <blackbox/inline.h>); returns its bytes. */
static inline size_t cb_head(char *p, unsigned major, uint64_t v)
{
	return (size_t)(bb__cbor_put_head(major, v, (uint8_t *)p) - (uint8_t *)p);
}

static inline void cb_put_head(struct bbx_out *o, unsigned major, uint64_t v)
{
	bbx_out_commit(o, cb_head(bbx_out_reserve(o, 9), major, v));
}

/* A text string whose bytes are known valid UTF-8 (constant names). */
static inline size_t cb_text(char *p, const char *s, size_t n)
{
	size_t h = cb_head(p, 3, n);

	memcpy(p + h, s, n);
	return h + n;
}

static inline size_t cb_i64(char *p, int64_t v)
{
	return (size_t)(bb__cbor_put_int(v, (uint8_t *)p) - (uint8_t *)p);
}

/* cbor_out.c */
void bbx__cbor_text(struct bbx_out *o, const uint8_t *s, size_t n);
void bbx__cbor_copy_sanitized(struct bbx_out *o, struct bb__cbor *c);

/* emit_fast.c: the members bbx_em_record_value() would write, or false. */
bool bbx__em_json_fast(struct bbx_em *em, unsigned tag, const uint8_t *value, size_t len);
bool bbx__em_cbor_fast(struct bbx_em *em, unsigned tag, const uint8_t *value, size_t len);

#endif /* BBX_EMIT_INT_H */
