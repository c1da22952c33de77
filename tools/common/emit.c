/* SPDX-License-Identifier: MIT */
/*
 * emit.c - JSON and CBOR output for the tools (see emit.h).
 *
 * Record values arrive as CBOR bytes that the reader proved intact (the
 * record's seq checked out), but intact is not the same as well formed: a
 * crashing owner may have written garbage before committing.  Every value
 * is therefore checked in one bounded pass (bb__cbor_skip(), the project's
 * one CBOR decoder and its one rule: lengths inside the buffer, definite
 * lengths, no tags, nesting depth limited, counts bounded by the bytes
 * left) before anything of it is written, so a bad value never leaves
 * half a JSON line.
 */
#include <blackbox/format.h>

#include "emit_int.h"

/* ---- the emitter ------------------------------------------------------ */

void bbx_em_init(struct bbx_em *em, struct bbx_out *o, bool cbor)
{
	memset(em, 0, sizeof(*em));
	em->o = o;
	em->cbor = cbor;
}

/* Before a value: the JSON comma between array elements. */
static void pre_value(struct bbx_em *em)
{
	if (em->after_key) {
		em->after_key = false;
		return;
	}
	if (!em->cbor && em->depth && em->more[em->depth])
		bbx_out_char(em->o, ',');
	em->more[em->depth] = true;
}

static void open_level(struct bbx_em *em, char json, uint8_t cbor)
{
	pre_value(em);
	bbx_out_char(em->o, em->cbor ? (char)cbor : json);
	if (em->depth < BBX_EM_DEPTH - 1)
		em->depth++;
	em->more[em->depth] = false;
	em->closer[em->depth] = json == '{' ? '}' : ']';
}

void bbx_em_map(struct bbx_em *em)
{
	open_level(em, '{', 0xbf);
}

void bbx_em_array(struct bbx_em *em)
{
	open_level(em, '[', 0x9f);
}

void bbx_em_end(struct bbx_em *em)
{
	bbx_out_char(em->o, em->cbor ? (char)0xff : em->closer[em->depth]);
	if (em->depth)
		em->depth--;
}

void bbx_em_eol(struct bbx_em *em)
{
	if (!em->cbor)
		bbx_out_char(em->o, '\n');
	em->depth = 0;
	em->more[0] = false;
	em->after_key = false;
}

void bbx_em_key(struct bbx_em *em, const char *k)
{
	size_t n = strlen(k);

	if (em->cbor) {
		bbx_out_commit(em->o, cb_text(bbx_out_reserve(em->o, n + 9), k, n));
	} else {
		char *p = bbx_out_reserve(em->o, n + 4);
		size_t i = 0;

		if (em->more[em->depth])
			p[i++] = ',';
		p[i++] = '"';
		memcpy(p + i, k, n);
		i += n;
		p[i++] = '"';
		p[i++] = ':';
		bbx_out_commit(em->o, i);
	}
	em->more[em->depth] = true;
	em->after_key = true;
}

void bbx_em_u64(struct bbx_em *em, uint64_t v)
{
	pre_value(em);
	if (em->cbor)
		cb_put_head(em->o, 0, v);
	else
		json_u64(em->o, v);
}

void bbx_em_i64(struct bbx_em *em, int64_t v)
{
	pre_value(em);
	if (!em->cbor)
		bbx_out_commit(em->o, bbx_fmt_i64(bbx_out_reserve(em->o, 20), v));
	else
		bbx_out_commit(em->o, cb_i64(bbx_out_reserve(em->o, 9), v));
}

void bbx_em_bool(struct bbx_em *em, bool v)
{
	pre_value(em);
	if (em->cbor)
		bbx_out_char(em->o, (char)(v ? 0xf5 : 0xf4));
	else
		bbx_out_str(em->o, v ? "true" : "false");
}

void bbx_em_str(struct bbx_em *em, const char *s, size_t n)
{
	pre_value(em);
	if (em->cbor) {
		bbx__cbor_text(em->o, (const uint8_t *)s, n);
	} else {
		bbx_out_char(em->o, '"');
		bbx__json_esc(em->o, (const uint8_t *)s, n);
		bbx_out_char(em->o, '"');
	}
}

void bbx_em_cstr(struct bbx_em *em, const char *s)
{
	bbx_em_str(em, s, strlen(s));
}

void bbx_em_bytes(struct bbx_em *em, const uint8_t *p, size_t n)
{
	pre_value(em);
	if (em->cbor) {
		cb_put_head(em->o, 2, n);
		bbx_out_put(em->o, p, n);
	} else {
		bbx__json_hex(em->o, p, n);
	}
}

void bbx_em_record_start(struct bbx_em *em, int64_t wall_ns, uint64_t clock_ns,
			 bool with_pid, int32_t pid, int32_t tid, const char *thread,
			 uint32_t stream, const char *type)
{
	char t[BBX_TIME_MAX], *p;
	size_t n = 0, k;

#define LIT(s) (memcpy(p + n, s, sizeof(s) - 1), n += sizeof(s) - 1)
	if (em->cbor) {
		/* the same members as bbx_em_map() + bbx_em_kv_*(), in one
		 * reservation; the thread name may need U+FFFD repairs */
		pre_value(em);
		p = bbx_out_reserve(em->o, 160);
		LIT("\xbf\x62ts");
		k = bbx_fmt_time(t, wall_ns);
		/* Never true (BBX_TIME_MAX bounds it); says so to GCC, whose
		 * -Warray-bounds cannot see it in the sanitizer build. */
		if (k > sizeof(t))
			k = sizeof(t);
		n += cb_text(p + n, t, k);
		LIT("\x65ts_ns");
		n += cb_i64(p + n, wall_ns);
		LIT("\x68" "clock_ns");
		n += cb_head(p + n, 0, clock_ns);
		if (with_pid) {
			LIT("\x63pid");
			n += cb_i64(p + n, pid);
		}
		LIT("\x63tid");
		n += cb_i64(p + n, tid);
		LIT("\x66thread");
		bbx_out_commit(em->o, n);
		bbx__cbor_text(em->o, (const uint8_t *)thread, strlen(thread));
		p = bbx_out_reserve(em->o, 64);
		n = 0;
		LIT("\x66stream");
		n += cb_head(p + n, 0, stream);
		LIT("\x64type");
		n += cb_text(p + n, type, strnlen(type, 16));
		bbx_out_commit(em->o, n);
		if (em->depth < BBX_EM_DEPTH - 1)
			em->depth++;
		em->more[em->depth] = true;
		em->closer[em->depth] = '}';
		em->after_key = false;
		return;
	}
	p = bbx_out_reserve(em->o, 256);
	LIT("{\"ts\":\"");
	k = bbx_fmt_time(p + n, wall_ns);
	n += k;
	LIT("\",\"ts_ns\":");
	if (wall_ns >= 1000000000) {
		/* the 9 digits of the fraction are the ones ts just got
		 * ("...:SS.nnnnnnnnnZ"): only the seconds need digits */
		const char *frac = p + n - (sizeof("\",\"ts_ns\":") - 1) - 10;

		n += fmt_sec_cached(&em->ts_cache, p + n, (uint64_t)wall_ns / 1000000000);
		memcpy(p + n, frac, 9);
		n += 9;
	} else {
		n += bbx_fmt_i64(p + n, wall_ns);
	}
	LIT(",\"clock_ns\":");
	n += bbx_fmt_ns(&em->clock_cache, p + n, clock_ns);
	if (with_pid) {
		LIT(",\"pid\":");
		n += bbx_fmt_i64(p + n, pid);
	}
	LIT(",\"tid\":");
	n += bbx_fmt_i64(p + n, tid);
	LIT(",\"thread\":\"");
	if (thread[0]) { /* shared-ring records have none */
		bbx_out_commit(em->o, n);
		bbx__json_esc(em->o, (const uint8_t *)thread, strlen(thread));
		p = bbx_out_reserve(em->o, 64);
		n = 0;
	}
	LIT("\",\"stream\":");
	n += bbx_fmt_u64(p + n, stream);
	LIT(",\"type\":\"");
	k = strnlen(type, 16);
	memcpy(p + n, type, k);
	n += k;
	p[n++] = '"';
	bbx_out_commit(em->o, n);
#undef LIT
	/* the emitter's state, as if bbx_em_map() and members were written */
	em->depth = 1;
	em->more[1] = true;
	em->closer[1] = '}';
	em->after_key = false;
}

void bbx_em_record_end(struct bbx_em *em, bool truncated, bool important)
{
	char *p;
	size_t n = 0;

	if (em->cbor || em->depth != 1 || !em->more[1] || em->after_key) {
		bbx_em_key(em, "truncated");
		bbx_em_bool(em, truncated);
		if (important) {
			bbx_em_key(em, "important");
			bbx_em_bool(em, true);
			/* a log viewer's level (the lnav format) */
			bbx_em_key(em, "level");
			bbx_em_cstr(em, "important");
		}
		bbx_em_end(em);
		bbx_em_eol(em);
		return;
	}
	/* what the calls above write in JSON, in one reservation */
	p = bbx_out_reserve(em->o, 64);
#define LIT(s) (memcpy(p + n, s, sizeof(s) - 1), n += sizeof(s) - 1)
	if (truncated)
		LIT(",\"truncated\":true");
	else
		LIT(",\"truncated\":false");
	if (important)
		LIT(",\"important\":true,\"level\":\"important\"");
	LIT("}\n");
#undef LIT
	bbx_out_commit(em->o, n);
	em->depth = 0;
	em->more[0] = false;
	em->after_key = false;
}

/* One well-formed CBOR item [p, end) as a value. */
static void em_item(struct bbx_em *em, const uint8_t *p, const uint8_t *end,
		    bool bad_utf8)
{
	struct bb__cbor c = { p, end };

	pre_value(em);
	if (!em->cbor)
		bbx__json_item(em->o, &c);
	else if (!bad_utf8)
		bbx_out_put(em->o, p, (size_t)(end - p));
	else
		bbx__cbor_copy_sanitized(em->o, &c);
}

/*
 * The items of the array at @c (well formed), up to @max: start of each in
 * it[i], end in it[i + 1].  Returns the count, or -1 if not an array or
 * longer than @max.
 */
static int item_array(struct bb__cbor *c, const uint8_t **it, int max)
{
	struct bb__cbor_item h;
	int n = 0;

	if (bb__cbor_read_head(c, &h) || h.major != 4 || h.arg > (uint64_t)max)
		return -1;
	for (; (uint64_t)n < h.arg; n++) {
		it[n] = c->p;
		(void)bb__cbor_skip(c, 1, NULL);
	}
	it[n] = c->p;
	return n;
}

static unsigned major_of(const uint8_t *p)
{
	return *p >> 5;
}

/* NULL if @value (well formed) has the shape @tag promises, else why not. */
static const char *shape_error(unsigned tag, const uint8_t *v, const uint8_t *end,
			       const uint8_t **it, int *nit)
{
	struct bb__cbor c = { v, end };
	unsigned major = major_of(v), ai = v[0] & 31;

	switch (tag) {
	case BB_TAG_STR:
		return major == 3 ? NULL : "str record without a text value";
	case BB_TAG_I64:
		return major <= 1 ? NULL : "i64 record without an integer value";
	case BB_TAG_U64:
		return major == 0 ? NULL : "u64 record without an unsigned value";
	case BB_TAG_F64:
		return major == 7 && ai >= 25 && ai <= 27 ? NULL
			: "f64 record without a float value";
	case BB_TAG_BOOL:
		return major == 7 && (ai == 20 || ai == 21) ? NULL
			: "bool record without a boolean value";
	case BB_TAG_BYTES:
		return major == 2 ? NULL : "bytes record without a byte string";
	case BB_TAG_KV:
		*nit = item_array(&c, it, 4);
		return *nit == 2 && major_of(it[0]) == 3 ? NULL
			: "kv record that is not [text, value]";
	case BB_TAG_EVENT:
		*nit = item_array(&c, it, 4);
		return *nit == 2 && major_of(it[0]) == 3 && major_of(it[1]) == 5
			? NULL : "event record that is not [text, map]";
	case BB_TAG_OWNER:
		*nit = item_array(&c, it, 4);
		return *nit == 4 ? NULL : "owner record that is not an array of 4";
	case BB_TAG_SPAN_BEGIN:
		*nit = item_array(&c, it, 5);
		if (*nit < 3 || major_of(it[0]) != 3 || major_of(it[1]) != 5 ||
		    major_of(it[2]) != 0)
			return "span begin that is not [text, map, depth, ...]";
		if (*nit >= 4 && major_of(it[3]) != 0 && *it[3] != 0xf6)
			return "span begin whose flow id is not an unsigned integer or null";
		if (*nit == 5 && (*it[4] != (0x40 | 24) || it[5] - it[4] != 1 + BB_SPAN_CTX_SIZE))
			return "span begin whose trace context is not 24 bytes";
		return NULL;
	case BB_TAG_SPAN_END:
		return major == 0 ? NULL : "span end without an unsigned depth";
	default:
		return NULL; /* crash, state, unknown: any value */
	}
}

bool bbx_em_record_value(struct bbx_em *em, unsigned tag,
			 const uint8_t *value, size_t len)
{
	static const char *const owner_keys[4] = {
		"tid", "thread", "prev_tid", "prev_thread",
	};
	struct bb__cbor c = { value, value + len };
	const uint8_t *it[6];
	const char *why;
	bool bad_utf8 = false;
	int nit = 0, i;

	if (!em->general_only && (em->cbor ? bbx__em_cbor_fast(em, tag, value, len)
					   : bbx__em_json_fast(em, tag, value, len)))
		return true;
	if (!len)
		why = "empty value";
	else if (bb__cbor_skip(&c, 0, &bad_utf8))
		why = "malformed CBOR value";
	else if (c.p != value + len)
		why = "trailing bytes after the value";
	else
		why = shape_error(tag, value, c.p, it, &nit);
	if (why) {
		bbx_em_key(em, "error");
		bbx_em_cstr(em, why);
		bbx_em_key(em, "raw");
		bbx_em_bytes(em, value, len);
		return false;
	}
	switch (tag) {
	case BB_TAG_KV:
		bbx_em_key(em, "key");
		em_item(em, it[0], it[1], bad_utf8);
		bbx_em_key(em, "value");
		em_item(em, it[1], it[2], bad_utf8);
		break;
	case BB_TAG_EVENT:
		bbx_em_key(em, "name");
		em_item(em, it[0], it[1], bad_utf8);
		bbx_em_key(em, "fields");
		em_item(em, it[1], it[2], bad_utf8);
		break;
	case BB_TAG_SPAN_BEGIN:
		bbx_em_key(em, "name");
		em_item(em, it[0], it[1], bad_utf8);
		bbx_em_key(em, "fields");
		em_item(em, it[1], it[2], bad_utf8);
		bbx_em_key(em, "depth");
		em_item(em, it[2], it[3], bad_utf8);
		if (nit >= 4 && *it[3] != 0xf6) {
			bbx_em_key(em, "flow");
			em_item(em, it[3], it[4], bad_utf8);
		}
		if (nit == 5) {
			char hex[2 * BB_SPAN_CTX_SIZE];

			bb__hex(hex, it[4] + 1, BB_SPAN_CTX_SIZE);
			bbx_em_key(em, "trace_id");
			bbx_em_str(em, hex, 2 * BB_SPAN_TRACE_ID_SIZE);
			bbx_em_key(em, "span_id");
			bbx_em_str(em, hex + 2 * BB_SPAN_TRACE_ID_SIZE, 2 * BB_SPAN_SPAN_ID_SIZE);
		}
		break;
	case BB_TAG_SPAN_END:
		bbx_em_key(em, "depth");
		em_item(em, value, c.p, bad_utf8);
		break;
	case BB_TAG_OWNER:
		bbx_em_key(em, "value");
		bbx_em_map(em);
		for (i = 0; i < 4; i++) {
			bbx_em_key(em, owner_keys[i]);
			em_item(em, it[i], it[i + 1], bad_utf8);
		}
		bbx_em_end(em);
		break;
	default:
		bbx_em_key(em, "value");
		em_item(em, value, c.p, bad_utf8);
	}
	return true;
}
