/* SPDX-License-Identifier: MIT */
/*
 * emit.h - the tools' structured output: one emitter writes either JSON
 * or CBOR (RFC 8949) from the same calls, so records, summaries and the
 * --list table have exactly the same fields in both formats.
 *
 * JSON: objects and arrays with proper string escaping; text that is not
 * valid UTF-8 has each bad byte replaced by U+FFFD.  Byte strings become
 * lowercase hex strings.  Non-finite floats become the strings "NaN",
 * "Infinity", "-Infinity".
 *
 * CBOR: maps and arrays of indefinite length (the emitter does not know
 * counts in advance), text and byte strings definite, integers and floats
 * in their shortest form; record values are copied as the writer encoded
 * them unless a text string in them is not valid UTF-8 (then it is
 * re-encoded with U+FFFD).  A record is one top-level item, so a stream of
 * them is an RFC 8742 CBOR sequence.
 */
#ifndef BBX_EMIT_H
#define BBX_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmt.h"
#include "out.h"

#define BBX_EM_DEPTH 16

struct bbx_em {
	struct bbx_out *o;
	bool     cbor;
	bool     after_key;
	unsigned depth;
	bool     more[BBX_EM_DEPTH]; /* an element was written at this level */
	char     closer[BBX_EM_DEPTH]; /* JSON: '}' or ']' of this level */
	struct bbx_ns_cache ts_cache, clock_cache; /* record envelopes */
	bool     general_only; /* tests: no JSON fast path in bbx_em_record_value */
};

void bbx_em_init(struct bbx_em *em, struct bbx_out *o, bool cbor);

void bbx_em_map(struct bbx_em *em);    /* { */
void bbx_em_array(struct bbx_em *em);  /* [ */
void bbx_em_end(struct bbx_em *em);    /* } or ] */
/* End of a top-level item: a newline in JSON (JSON Lines), nothing in CBOR. */
void bbx_em_eol(struct bbx_em *em);

/* A map key: a constant ASCII name. */
void bbx_em_key(struct bbx_em *em, const char *k);

void bbx_em_u64(struct bbx_em *em, uint64_t v);
void bbx_em_i64(struct bbx_em *em, int64_t v);
void bbx_em_bool(struct bbx_em *em, bool v);
void bbx_em_str(struct bbx_em *em, const char *s, size_t n);
void bbx_em_cstr(struct bbx_em *em, const char *s);
void bbx_em_bytes(struct bbx_em *em, const uint8_t *p, size_t n);

/* A member: key and value in one call. */
static inline void bbx_em_kv_u64(struct bbx_em *em, const char *k, uint64_t v)
{
	bbx_em_key(em, k);
	bbx_em_u64(em, v);
}

static inline void bbx_em_kv_i64(struct bbx_em *em, const char *k, int64_t v)
{
	bbx_em_key(em, k);
	bbx_em_i64(em, v);
}

static inline void bbx_em_kv_str(struct bbx_em *em, const char *k, const char *s)
{
	bbx_em_key(em, k);
	bbx_em_cstr(em, s);
}

/*
 * Open a record's map and write its envelope members: ts (RFC 3339),
 * ts_ns, clock_ns, pid (if @with_pid), tid, thread, ring, type.  JSON takes
 * a fast path: one reservation, no per-member calls.
 */
void bbx_em_record_start(struct bbx_em *em, int64_t wall_ns, uint64_t clock_ns,
			 bool with_pid, int32_t pid, int32_t tid, const char *thread,
			 uint32_t stream, const char *type);

/*
 * Close a record opened by bbx_em_record_start(): "truncated", then
 * "important": true when @important, the end of the map and of the line
 * (JSON in one reservation).
 */
void bbx_em_record_end(struct bbx_em *em, bool truncated, bool important);

/*
 * The value part of a record: check that @value (@len bytes of CBOR) is
 * well formed and has the shape @tag says, and emit its fields ("key" and
 * "value" for kv, "name" and "fields" for events, "value" otherwise).
 * JSON checks and formats the common shapes (scalars, kv of a text key and
 * a scalar, events of text keys and scalars) in one pass; the output is
 * the same as the general path's.  A
 * value that fails the check is emitted as "error" (what is wrong) and
 * "raw" (its bytes) and false is returned.
 */
bool bbx_em_record_value(struct bbx_em *em, unsigned tag,
			 const uint8_t *value, size_t len);

#endif /* BBX_EMIT_H */
