/* SPDX-License-Identifier: MIT */
/*
 * shared/cbor.c - skipping and typed reads of the one CBOR decoder
 * (cbor.h).  AS-safe.
 */
#include "cbor.h"
#include "utf8.h"

const char *bb__cbor_strerror(int err)
{
	switch (err) {
	case BB__CBOR_SHORT:      return "value ends early";
	case BB__CBOR_INDEFINITE: return "indefinite length";
	case BB__CBOR_RESERVED:   return "reserved additional info";
	case BB__CBOR_TAG:        return "CBOR tag (major type 6) not allowed";
	case BB__CBOR_SIMPLE:     return "simple value below 32 in two bytes";
	case BB__CBOR_DEPTH:      return "nesting deeper than 8";
	case BB__CBOR_TYPE:       return "not of the expected type";
	default:                  return "malformed";
	}
}

int bb__cbor_skip(struct bb__cbor *c, int depth, bool *bad_utf8)
{
	struct bb__cbor_item h;
	uint64_t n;
	int rc = bb__cbor_read_head(c, &h);

	if (rc)
		return rc;
	switch (h.major) {
	case 2:
	case 3:
		if (h.arg > bb__cbor_left(c))
			return BB__CBOR_SHORT;
		if (h.major == 3 && bad_utf8 && !bb__utf8_valid(c->p, (size_t)h.arg))
			*bad_utf8 = true;
		c->p += h.arg;
		return 0;
	case 4:
	case 5:
		if (depth >= BB__CBOR_MAX_DEPTH)
			return BB__CBOR_DEPTH;
		/* each item takes a byte at least: refuse impossible counts */
		if (h.arg > bb__cbor_left(c) / (h.major == 5 ? 2 : 1))
			return BB__CBOR_SHORT;
		n = h.major == 5 ? 2 * h.arg : h.arg;
		for (uint64_t i = 0; i < n; i++) {
			rc = bb__cbor_skip(c, depth + 1, bad_utf8);
			if (rc)
				return rc;
		}
		return 0;
	default: /* integers, simple values, floats: the head is all */
		return 0;
	}
}

int bb__cbor_uint(struct bb__cbor *c, uint64_t *v)
{
	struct bb__cbor_item h;
	int rc = bb__cbor_read_head(c, &h);

	if (rc)
		return rc;
	if (h.major != 0)
		return BB__CBOR_TYPE;
	*v = h.arg;
	return 0;
}

int bb__cbor_int(struct bb__cbor *c, int64_t *v)
{
	struct bb__cbor_item h;
	int rc = bb__cbor_read_head(c, &h);

	if (rc)
		return rc;
	if ((h.major != 0 && h.major != 1) || h.arg > INT64_MAX)
		return BB__CBOR_TYPE;
	*v = h.major == 0 ? (int64_t)h.arg : -1 - (int64_t)h.arg;
	return 0;
}

int bb__cbor_string(struct bb__cbor *c, int major, const uint8_t **s, size_t *n)
{
	struct bb__cbor_item h;
	int rc = bb__cbor_read_head(c, &h);

	if (rc)
		return rc;
	if (h.major != major)
		return BB__CBOR_TYPE;
	if (h.arg > bb__cbor_left(c))
		return BB__CBOR_SHORT;
	*s = c->p;
	*n = (size_t)h.arg;
	c->p += h.arg;
	return 0;
}

int bb__cbor_container(struct bb__cbor *c, int major, uint64_t *n)
{
	struct bb__cbor_item h;
	int rc = bb__cbor_read_head(c, &h);

	if (rc)
		return rc;
	if (h.major != major)
		return BB__CBOR_TYPE;
	if (h.arg > bb__cbor_left(c))
		return BB__CBOR_SHORT;
	*n = h.arg;
	return 0;
}
