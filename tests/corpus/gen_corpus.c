/* SPDX-License-Identifier: MIT */
/*
 * gen_corpus.c - write a deterministic corpus of boxes into DIR for
 * scripts/corpus-check.sh, which runs two builds of bb-extract over it in
 * every output mode and compares what they print.
 *
 * Boxes are built by hand (tests/helpers/synth.h), so they hold what the
 * writer would never write as well as what it writes: every tag with
 * values at every CBOR size boundary, doubles that print differently in
 * shortest and 17-digit form, halves and singles, text with invalid
 * UTF-8, C0/C1 controls and bidirectional characters, byte strings,
 * events, owner records, unknown tags carrying any CBOR (maps with
 * integer and byte keys, nesting up to 40), and malformed values:
 * indefinite lengths, tags, reserved additional information, simple
 * values below 32 in two bytes, items cut short, trailing bytes.  Then
 * the same boxes with bytes flipped (a fixed seed), and state tables,
 * crash and module areas, good and bad.
 *
 * Usage: gen-corpus DIR [COUNT]  (COUNT boxes of random records, default 40)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../helpers/synth.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* Doubles that tell printers apart: shortest vs %.17g, exponents,
 * subnormals, integers, powers of two, non-finite values. */
static double tricky_double(void)
{
	static const double fixed[] = {
		0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e300 * 1.0000000000000001, 1e-300,
		-2.5e-07, -2.4999999999999999e-07, 1e15, 1e16, 1e17, 1e21, 1e22, 1e23,
		123456789012345678.0, 0.000123, 0.0001, 0.00001, 5e-324, 2.2250738585072014e-308,
		2.2250738585072009e-308, 1.7976931348623157e308, 4503599627370496.0,
		9007199254740993.0, 0.5, 1.5, 100.0, 1e-5, 9.999999999999999e22, 0.0,
		-0.0, 1.0, -1.0, 3.141592653589793, 2.718281828459045, 299792458.0,
		1.2345678901234567e-10, 6.02214076e23, 1.602176634e-19,
	};
	uint64_t bits;
	double d;

	switch (below(6)) {
	case 0: case 1: case 2:
		return fixed[below(sizeof(fixed) / sizeof(fixed[0]))];
	case 3: /* any bit pattern, NaNs and infinities included */
		bits = rnd();
		memcpy(&d, &bits, 8);
		return d;
	case 4: /* a decimal of a few digits */
		return (double)(int64_t)(rnd() % 2000000 - 1000000) / pow(10, below(12));
	default: /* around a power of two */
		bits = (uint64_t)(below(2046) + 1) << 52 | (below(2) ? 0 : (rnd() & 3));
		memcpy(&d, &bits, 8);
		return d;
	}
}

static size_t put_f64(uint8_t *p, double d)
{
	return cb_f64(p, d);
}

/* Integers at the CBOR argument boundaries. */
static uint64_t tricky_uint(void)
{
	static const uint64_t b[] = { 0, 1, 23, 24, 255, 256, 65535, 65536, 4294967295u,
				      4294967296u, UINT64_MAX, (uint64_t)INT64_MAX,
				      (uint64_t)INT64_MAX + 1 };

	return below(3) ? b[below(sizeof(b) / sizeof(b[0]))] : rnd() >> below(64);
}

/* Text bytes: mostly ASCII, sometimes UTF-8 (valid or not), controls. */
static size_t tricky_text(uint8_t *p, size_t max)
{
	static const char *const pieces[] = {
		"hello", " ", "a=b", "\"q\"", "back\\slash", "\n", "\t", "\r", "\x1b[31m",
		"\xc2\x9b", "\x9b", "\xe2\x80\xae", "\xe2\x80\x8f", "\xd8\x9c", "\xc3\xa9",
		"\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\xc0\xaf", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xe2\x80", "\x7f", "\x01", "", "x", "long text value ",
		"\xe2\x80\xa8", "\xef\xbf\xbd",
	};
	size_t n = 0, k = below(8);

	for (size_t i = 0; i < k; i++) {
		const char *s = pieces[below(sizeof(pieces) / sizeof(pieces[0]))];
		size_t l = strlen(s);

		if (n + l > max)
			break;
		memcpy(p + n, s, l);
		n += l;
	}
	return n;
}

static size_t put_text(uint8_t *p, size_t max)
{
	uint8_t t[96];
	size_t n = tricky_text(t, max < 80 ? max : 80), h = cb_head(p, 3, n);

	memcpy(p + h, t, n);
	return h + n;
}

/* A scalar of any kind (what kv values and event fields hold). */
static size_t put_scalar(uint8_t *p)
{
	uint8_t b[8];
	size_t n;

	switch (below(9)) {
	case 0: return cb_head(p, 0, tricky_uint());
	case 1: return cb_head(p, 1, tricky_uint());
	case 2: return put_f64(p, tricky_double());
	case 3: /* half */
		p[0] = 0xf9;
		p[1] = (uint8_t)rnd();
		p[2] = (uint8_t)rnd();
		return 3;
	case 4: { /* single */
		float f = (float)tricky_double();
		uint32_t u;

		memcpy(&u, &f, 4);
		p[0] = 0xfa;
		for (int k = 0; k < 4; k++)
			p[1 + k] = (uint8_t)(u >> (24 - 8 * k));
		return 5;
	}
	case 5: p[0] = below(2) ? 0xf5 : 0xf4; return 1;
	case 6:
		n = below(8);
		for (size_t k = 0; k < n; k++)
			b[k] = (uint8_t)rnd();
		p += cb_head(p, 2, n);
		memcpy(p, b, n);
		return (n < 24 ? 1 : 2) + n;
	default: return put_text(p, 60);
	}
}

/* Any CBOR item (unknown tags): nested arrays and maps, keys of any kind. */
static size_t put_any(uint8_t *p, int depth)
{
	size_t n = 0, k;

	switch (depth > 3 ? 0 : below(4)) {
	case 0:
		return put_scalar(p);
	case 1:
		k = below(4);
		n += cb_head(p, 4, k);
		for (size_t i = 0; i < k; i++)
			n += put_any(p + n, depth + 1);
		return n;
	case 2:
		k = below(4);
		n += cb_head(p, 5, k);
		for (size_t i = 0; i < k; i++) {
			n += below(2) ? put_text(p + n, 20) : put_scalar(p + n);
			n += put_any(p + n, depth + 1);
		}
		return n;
	default:
		p[0] = (uint8_t)(0xe0 | below(20)); /* simple(0..19) */
		return 1;
	}
}

/* A value the writer would not write, or garbage. */
static size_t put_malformed(uint8_t *p)
{
	size_t n = 0, k;

	switch (below(10)) {
	case 0: /* indefinite text */
		p[n++] = 0x7f;
		n += cb_text(p + n, "ab");
		n += cb_text(p + n, "cd");
		p[n++] = 0xff;
		return n;
	case 1: /* indefinite array and map */
		p[n++] = 0x82;
		n += cb_text(p + n, "k");
		p[n++] = below(2) ? 0x9f : 0xbf;
		p[n++] = 0x01;
		p[n++] = 0x02;
		p[n++] = 0xff;
		return n;
	case 2: /* a tag */
		p[n++] = 0xc1;
		n += cb_head(p + n, 0, 1700000000);
		return n;
	case 3: /* deep nesting */
		k = 1 + below(40);
		for (size_t i = 0; i < k; i++)
			p[n++] = 0x81;
		p[n++] = 0x00;
		return n;
	case 4: /* simple(N < 32) in two bytes, reserved ai */
		p[n++] = below(2) ? 0xf8 : (uint8_t)(0xfc + below(3));
		p[n++] = (uint8_t)below(40);
		return n;
	case 5: /* cut short */
		n = put_any(p, 0);
		return n > 1 ? n - 1 : n;
	case 6: /* trailing bytes */
		n = put_scalar(p);
		p[n++] = 0x00;
		return n;
	case 7: /* a break alone */
		p[n++] = 0xff;
		return n;
	default: /* random bytes */
		k = 1 + below(24);
		for (size_t i = 0; i < k; i++)
			p[n++] = (uint8_t)rnd();
		return n;
	}
}

/* One random record's tag and value. */
static size_t random_value(uint8_t *v, uint8_t *tag)
{
	size_t n = 0, k;

	if (!below(6)) {
		*tag = (uint8_t)(1 + below(12));
		return put_malformed(v);
	}
	*tag = (uint8_t)(1 + below(14));
	switch (*tag) {
	case BB_TAG_STR: return put_text(v, 200);
	case BB_TAG_I64: return below(2) ? cb_head(v, 0, tricky_uint()) : cb_head(v, 1, tricky_uint());
	case BB_TAG_U64: return cb_head(v, 0, tricky_uint());
	case BB_TAG_F64:
		if (!below(4)) { /* half or single */
			k = put_scalar(v);
			if (v[0] >= 0xf9 && v[0] <= 0xfa)
				return k;
		}
		return put_f64(v, tricky_double());
	case BB_TAG_BOOL: v[0] = below(2) ? 0xf5 : 0xf4; return 1;
	case BB_TAG_BYTES:
		k = below(40);
		n = cb_head(v, 2, k);
		for (size_t i = 0; i < k; i++)
			v[n++] = (uint8_t)rnd();
		return n;
	case BB_TAG_KV:
		v[n++] = 0x82;
		n += put_text(v + n, 40);
		n += put_scalar(v + n);
		return n;
	case BB_TAG_EVENT:
		v[n++] = 0x82;
		n += put_text(v + n, 30);
		k = below(7);
		n += cb_head(v + n, 5, k);
		for (size_t i = 0; i < k; i++) {
			n += put_text(v + n, 20);
			n += put_scalar(v + n);
		}
		return n;
	case BB_TAG_OWNER:
		v[n++] = 0x84;
		n += cb_int(v + n, (int64_t)below(100000) - 10);
		n += put_text(v + n, 15);
		n += cb_int(v + n, (int64_t)below(100000));
		n += put_text(v + n, 15);
		return n;
	default: /* crash, state, modules and unknown tags in a ring: any item */
		return put_any(v, 0);
	}
}

static int save(struct synth *s, const char *dir, const char *name)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/blackbox.%s", dir, name);
	if (synth_save(s, p)) {
		perror(p);
		return 1;
	}
	return 0;
}

static void random_box(struct synth *s, unsigned i)
{
	uint32_t rings = 2 + below(3);
	uint64_t ts = 1000;
	uint8_t v[1024];

	synth_init(s, rings, below(3) ? 4096 : 8192);
	if (below(3))
		synth_use_crc(s);
	if (rings > 2 && below(2))
		synth_desc(s, rings - 1)->kind = BB_RING_SHARED;
	snprintf(synth_hdr(s)->comm, sizeof(synth_hdr(s)->comm), "%s",
		 i % 5 == 1 ? "evil\x1b]0;x\x07" : i % 5 == 2 ? "caf\xc3\xa9" : "synth");
	snprintf(synth_desc(s, 0)->thread_name, 16, "%s",
		 i % 4 == 1 ? "t h\\r" : i % 4 == 2 ? "\xe2\x80\xaert" : "t0");
	for (unsigned k = 0, n = 20 + below(200); k < n; k++) {
		uint32_t ring = below(rings);
		uint8_t tag, flags = 0;
		size_t len = random_value(v, &tag);

		if (!below(20))
			flags |= BB_RF_TRUNCATED;
		if (synth_desc(s, ring)->kind == BB_RING_SHARED)
			synth_put_tid(s, ring, tag, flags | BB_RF_TID, ts, v, len,
				      (int32_t)(200 + below(5)));
		else
			synth_put(s, ring, tag, flags, ts, v, len);
		ts += below(3) ? 1 + below(1000000) : 0;
		if (!below(50))
			ts -= below(1000); /* a clock step back */
	}
	if (below(2)) {
		uint32_t slots = 4 + below(8);

		synth_add_state(s, slots, 128);
		for (uint32_t k = 0; k < slots; k++) {
			size_t len;

			if (!below(3))
				continue;
			len = below(6) ? put_scalar(v) : put_malformed(v);
			if (len > 60)
				len = put_scalar(v);
			synth_state(s, k, 2 + 2 * below(3), ts + k, below(2) ? "key" : "k\xc2\x9b",
				    v, len);
		}
	}
	if (below(3)) {
		static const uint64_t frames[] = { 0x555500001234, 0x7f0000030000, 1 };

		synth_crash(s, ts, 11, 1, 0xdead, 101, i % 2 ? "main" : "m\x1b[2J", frames, 3);
	}
	if (below(2)) {
		static const struct synth_mod mods[] = {
			{ "/usr/bin/prog", 0x555500000000, 0x555500001000, 0x555500009000, "\x12", 0 },
			{ "/lib/x\xc2\x9b.so", 0x7f0000000000, 0x7f0000028000, 0x7f00001bd000, "", 0 },
		};

		synth_modules(s, 4096, 2, mods, 2);
	}
}

/* Flip a few bytes past the header (descriptors, ring data, areas). */
static void mutate(struct synth *s)
{
	for (unsigned k = 0, n = 1 + below(8); k < n; k++) {
		size_t at = 4096 + (size_t)(rnd() % (s->len - 4096));

		s->buf[at] ^= (uint8_t)(1u << below(8));
	}
}

int main(int argc, char **argv)
{
	unsigned count = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 40;
	struct synth s;
	char name[64];
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [COUNT]\n", argv[0]);
		return 2;
	}
	for (unsigned i = 0; i < count; i++) {
		uint64_t seed = rng;

		random_box(&s, i);
		snprintf(name, sizeof(name), "random.%u", i);
		bad |= save(&s, argv[1], name);
		synth_free(&s);
		/* the same box, damaged */
		rng = seed;
		random_box(&s, i);
		mutate(&s);
		snprintf(name, sizeof(name), "mutated.%u", i);
		bad |= save(&s, argv[1], name);
		synth_free(&s);
	}
	return bad;
}
