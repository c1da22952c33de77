/* SPDX-License-Identifier: MIT */
/*
 * collect.h - read a whole box back through the reader API into an array
 * of decoded records (libcbor's full decoder: tests may allocate).
 */
#ifndef BB_TESTS_COLLECT_H
#define BB_TESTS_COLLECT_H

#include <cbor.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>
#include <blackbox/reader.h>

struct trec {
	uint32_t ring;
	int32_t tid;
	uint8_t tag, flags;
	uint64_t ts;
	uint64_t pos;        /* position in its ring */
	size_t vlen;         /* bytes of the CBOR value */
	char key[64];        /* kv key / event name */
	char text[2048];     /* text or bytes value, or its first 2047 bytes (see n) */
	size_t n;            /* text/bytes length */
	int64_t i;           /* integer value (i64/u64/bool) */
	uint64_t u;
	double f;
	bool b;
	int vtype;           /* BB_TYPE_* of the (kv) value, 0 for others */
	size_t nfields;      /* events */
};

struct tcollect {
	struct trec *r;
	size_t n, cap;
};

static inline void trec_scalar(struct trec *t, cbor_item_t *it)
{
	switch (cbor_typeof(it)) {
	case CBOR_TYPE_UINT:
		t->vtype = BB_TYPE_U64;
		t->u = cbor_get_int(it);
		t->i = (int64_t)t->u;
		break;
	case CBOR_TYPE_NEGINT:
		t->vtype = BB_TYPE_I64;
		t->i = -1 - (int64_t)cbor_get_int(it);
		break;
	case CBOR_TYPE_STRING:
		t->vtype = BB_TYPE_STR;
		t->n = cbor_string_length(it);
		/* text keeps a prefix of long values; n is the whole length */
		memcpy(t->text, cbor_string_handle(it), t->n < sizeof(t->text) ? t->n : sizeof(t->text) - 1);
		t->text[t->n < sizeof(t->text) ? t->n : sizeof(t->text) - 1] = '\0';
		break;
	case CBOR_TYPE_BYTESTRING:
		t->vtype = BB_TYPE_BYTES;
		t->n = cbor_bytestring_length(it);
		memcpy(t->text, cbor_bytestring_handle(it), t->n < sizeof(t->text) ? t->n : sizeof(t->text));
		break;
	case CBOR_TYPE_FLOAT_CTRL:
		/* libcbor 0.8: cbor_is_bool() asserts on floats; check width first. */
		if (cbor_float_get_width(it) == CBOR_FLOAT_0 && cbor_is_bool(it)) {
			t->vtype = BB_TYPE_BOOL;
			t->b = cbor_get_bool(it);
		} else {
			t->vtype = BB_TYPE_F64;
			t->f = cbor_float_get_float(it);
		}
		break;
	default:
		cr_assert_fail("unexpected CBOR type %d", cbor_typeof(it));
	}
}

static inline int tcollect_cb(const struct bb_record *rec, void *arg)
{
	struct tcollect *c = arg;
	struct cbor_load_result res;
	cbor_item_t *it;
	struct trec *t;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->r = realloc(c->r, c->cap * sizeof(*c->r));
		cr_assert_not_null(c->r);
	}
	t = &c->r[c->n++];
	memset(t, 0, sizeof(*t));
	t->ring = rec->stream;
	t->tid = rec->tid;
	t->tag = rec->tag;
	t->flags = rec->flags;
	t->ts = rec->ts;
	t->pos = rec->pos;
	t->vlen = rec->value_len;
	it = cbor_load(rec->value, rec->value_len, &res);
	cr_assert_not_null(it, "record value does not decode (tag %u, %zu bytes)",
			   rec->tag, rec->value_len);
	cr_assert_eq(res.read, rec->value_len, "trailing bytes after the CBOR value");
	switch (rec->tag) {
	case BB_TAG_KV: {
		cbor_item_t *k, *v;

		cr_assert(cbor_isa_array(it) && cbor_array_size(it) == 2);
		k = cbor_array_get(it, 0);
		v = cbor_array_get(it, 1);
		cr_assert(cbor_isa_string(k));
		cr_assert_lt(cbor_string_length(k), sizeof(t->key));
		memcpy(t->key, cbor_string_handle(k), cbor_string_length(k));
		trec_scalar(t, v);
		cbor_decref(&k);
		cbor_decref(&v);
		break;
	}
	case BB_TAG_EVENT: {
		cbor_item_t *k, *m;

		cr_assert(cbor_isa_array(it) && cbor_array_size(it) == 2);
		k = cbor_array_get(it, 0);
		m = cbor_array_get(it, 1);
		cr_assert(cbor_isa_string(k) && cbor_isa_map(m));
		cr_assert_lt(cbor_string_length(k), sizeof(t->key));
		memcpy(t->key, cbor_string_handle(k), cbor_string_length(k));
		t->nfields = cbor_map_size(m);
		cbor_decref(&k);
		cbor_decref(&m);
		break;
	}
	case BB_TAG_OWNER: {
		cbor_item_t *k = cbor_array_get(it, 0);

		t->i = (int64_t)cbor_get_int(k);
		cbor_decref(&k);
		break;
	}
	default:
		trec_scalar(t, it);
		break;
	}
	cbor_decref(&it);
	return 0;
}

/* Walk @path (merged by timestamp) into @c; returns the reader's totals. */
static inline struct bb_stream_stats tcollect_path(const char *path, struct tcollect *c)
{
	struct bb_reader *r;
	struct bb_stream_stats sum;
	char err[256] = "";
	int ret = bb_reader_open_path(path, 0, &r, err, sizeof(err));

	cr_assert_eq(ret, 0, "open %s: %d %s", path, ret, err);
	memset(c, 0, sizeof(*c));
	ret = bb_reader_walk(r, BB_WALK_MERGE, tcollect_cb, c);
	cr_assert_eq(ret, 0, "walk: %d", ret);
	bb_reader_total_stats(r, &sum);
	bb_reader_close(r);
	return sum;
}

/* Records of @c with tag @tag (not owner records). */
static inline size_t tcollect_count(const struct tcollect *c, uint8_t tag)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++)
		n += c->r[i].tag == tag;
	return n;
}

#endif /* BB_TESTS_COLLECT_H */
