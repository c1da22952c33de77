/* SPDX-License-Identifier: MIT */
/* Description: bb_format_value renders every tag, flags truncation, cuts
 * long output with "...", escapes what it must, and reports malformed CBOR. */
#include <criterion/criterion.h>
#include <errno.h>
#include <float.h>
#include <math.h>

#include <blackbox/reader.h>

#include "../helpers/synth.h"

static char out[512];

static int fmt(unsigned tag, unsigned flags, const void *v, size_t n)
{
	return bb_format_value(tag, flags, v, n, out, sizeof(out));
}

#define EXPECT(tag, flags, want, ...)                                          \
	do {                                                                   \
		static const uint8_t v_[] = { __VA_ARGS__ };                   \
		int rc_ = fmt((tag), (flags), v_, sizeof(v_));                 \
		cr_expect_eq(rc_, (int)strlen(want), "rc %d for \"%s\"", rc_, out); \
		cr_expect_str_eq(out, (want));                                 \
	} while (0)

#define MALFORMED(tag, phrase, ...)                                            \
	do {                                                                   \
		static const uint8_t v_[] = { __VA_ARGS__ };                   \
		cr_expect_eq(fmt((tag), 0, v_, sizeof(v_)), -EBADMSG, "%s", out); \
		cr_expect(strstr(out, (phrase)), "\"%s\" lacks \"%s\"", out, (phrase)); \
	} while (0)

Test(format, scalars)
{
	EXPECT(BB_TAG_STR, 0, "hi", 0x62, 'h', 'i');
	EXPECT(BB_TAG_STR, 0, "\"a b\"", 0x63, 'a', ' ', 'b');
	EXPECT(BB_TAG_STR, 0, "\"\"", 0x60);
	EXPECT(BB_TAG_STR, 0, "\"q\\\"\\\\\\n\\x1b\"", 0x65, 'q', '"', '\\', '\n', 0x1b);
	EXPECT(BB_TAG_STR, 0, "caf\xc3\xa9", 0x65, 'c', 'a', 'f', 0xc3, 0xa9);
	EXPECT(BB_TAG_STR, 0, "\"\\xff\"", 0x61, 0xff);
	EXPECT(BB_TAG_I64, 0, "-5", 0x24);
	EXPECT(BB_TAG_I64, 0, "300", 0x19, 0x01, 0x2c);
	EXPECT(BB_TAG_I64, 0, "-9223372036854775808",
	       0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	EXPECT(BB_TAG_U64, 0, "18446744073709551615",
	       0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	EXPECT(BB_TAG_F64, 0, "1.5", 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0);
	EXPECT(BB_TAG_F64, 0, "1.5", 0xf9, 0x3e, 0x00); /* float16 */
	EXPECT(BB_TAG_F64, 0, "-inf", 0xfa, 0xff, 0x80, 0, 0); /* float32 */
	EXPECT(BB_TAG_BOOL, 0, "true", 0xf5);
	EXPECT(BB_TAG_BOOL, 0, "false", 0xf4);
	EXPECT(BB_TAG_BYTES, 0, "dead00", 0x43, 0xde, 0xad, 0x00);
	EXPECT(BB_TAG_BYTES, 0, "", 0x40);
}

Test(format, structured)
{
	EXPECT(BB_TAG_KV, 0, "k=7", 0x82, 0x61, 'k', 0x07);
	EXPECT(BB_TAG_KV, 0, "k=v", 0x82, 0x61, 'k', 0x61, 'v');
	EXPECT(BB_TAG_KV, 0, "k=\"a b\"", 0x82, 0x61, 'k', 0x63, 'a', ' ', 'b');
	EXPECT(BB_TAG_EVENT, 0, "open fd=3 ok=true",
	       0x82, 0x64, 'o', 'p', 'e', 'n', 0xa2, 0x62, 'f', 'd', 0x03,
	       0x62, 'o', 'k', 0xf5);
	EXPECT(BB_TAG_EVENT, 0, "tick", 0x82, 0x64, 't', 'i', 'c', 'k', 0xa0);
	EXPECT(BB_TAG_OWNER, 0, "thread 12 (w) takes the ring from 0 (\"\")",
	       0x84, 0x0c, 0x61, 'w', 0x00, 0x60);
	/* reserved and unknown tags: generic CBOR */
	EXPECT(BB_TAG_CRASH, 0, "[11, segv, {1: -2}]",
	       0x83, 0x0b, 0x64, 's', 'e', 'g', 'v', 0xa1, 0x01, 0x21);
	EXPECT(99, 0, "null", 0xf6);
	cr_expect_str_eq(bb_tag_name(BB_TAG_KV), "kv");
	cr_expect_str_eq(bb_tag_name(BB_TAG_STATE), "state");
	cr_expect_str_eq(bb_tag_name(0), "unknown");
	cr_expect_str_eq(bb_tag_name(1000), "unknown");
}

Test(format, truncated_flag)
{
	/* the writer re-encodes a truncated value: well-formed, flagged */
	EXPECT(BB_TAG_STR, BB_RF_TRUNCATED, "abc [truncated]", 0x63, 'a', 'b', 'c');
	/* a value cut in the middle of a string is still shown */
	EXPECT(BB_TAG_STR, BB_RF_TRUNCATED, "ab [truncated]", 0x65, 'a', 'b');
	EXPECT(BB_TAG_KV, BB_RF_TRUNCATED, "key=x [truncated]",
	       0x82, 0x63, 'k', 'e', 'y', 0x64, 'x');
}

Test(format, malformed)
{
	MALFORMED(BB_TAG_STR, "str value is not a text string", 0x01);
	MALFORMED(BB_TAG_STR, "value ends early", 0x65, 'a', 'b');
	MALFORMED(BB_TAG_STR, "indefinite length", 0x7f, 0x61, 'a', 0xff);
	MALFORMED(BB_TAG_U64, "not an unsigned integer", 0x20);
	MALFORMED(BB_TAG_U64, "trailing bytes", 0x01, 0x02);
	MALFORMED(BB_TAG_F64, "not a float", 0xf5);
	MALFORMED(BB_TAG_BOOL, "not true/false", 0xf6);
	MALFORMED(BB_TAG_BYTES, "not a byte string", 0x61, 'a');
	MALFORMED(BB_TAG_KV, "kv value is not array(2)", 0x83, 0x61, 'k', 1, 2);
	MALFORMED(BB_TAG_KV, "kv key is not a text string", 0x82, 0x01, 0x02);
	MALFORMED(BB_TAG_KV, "kv value is not a scalar", 0x82, 0x61, 'k', 0x80);
	MALFORMED(BB_TAG_EVENT, "event fields are not a map", 0x82, 0x61, 'e', 0x80);
	MALFORMED(BB_TAG_EVENT, "value ends early", 0x82, 0x61, 'e', 0xb8, 200);
	MALFORMED(BB_TAG_OWNER, "owner name is not a text string", 0x84, 0x01, 0x02, 0x03, 0x60);
	MALFORMED(BB_TAG_OWNER, "owner value is not array(4)", 0x82, 0x01, 0x60);
	MALFORMED(BB_TAG_I64, "reserved additional info", 0x1c);
	MALFORMED(99, "CBOR tag", 0xc1, 0x01);
	MALFORMED(99, "value ends early", 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	MALFORMED(99, "nesting deeper than 8",
		  0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x00);
	cr_expect_eq(fmt(BB_TAG_STR, 0, NULL, 0), -EBADMSG);
}

Test(format, output_is_cut_with_dots)
{
	static const uint8_t v[] = { 0x6a, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j' };
	char small[8];

	cr_expect_eq(bb_format_value(BB_TAG_STR, 0, v, sizeof(v), small, sizeof(small)), 7);
	cr_expect_str_eq(small, "abcd...");
	cr_expect_eq(bb_format_value(BB_TAG_STR, 0, v, sizeof(v), small, 1), 0);
	cr_expect_eq(small[0], '\0');
	cr_expect_eq(bb_format_value(BB_TAG_STR, 0, v, sizeof(v), NULL, 0), 0);
}

/* Doubles print as printf("%.17g") does: compare over many values. */
/*
 * Doubles print as the shortest decimal that reads back as the same double
 * (shared/double.h; bbt_check_double() says it with libc): 0.1 is "0.1",
 * as JSON prints it (extract-emit checks that the two agree).
 */
Test(format, doubles_shortest_round_trip)
{
	static const double fixed[] = {
		0.0, -0.0, 0.1, 1.0 / 3, 1e300, 1e-300, 123456789012345678.0, 1e15, 1e16, 1e17,
		0.0001, 0.00001, 5e-324, DBL_MAX, DBL_MIN, 2.5, 3.0, -7.25, 9007199254740993.0,
		0.5, 1e21, 123.456, 99999999999999999.0, -2.5e-07, 1e300 * 1.0000000000000001,
		4503599627370496.0, 0x1p-1022, 0x1p+1000,
	};
	static const struct { double d; const char *s; } exact[] = {
		{ 0.1, "0.1" }, { 1e300, "1e+300" }, { -2.5e-07, "-2.5e-07" }, { 1e15, "1e+15" },
		{ 1e14, "100000000000000" }, { 5e-324, "5e-324" }, { 0.0001, "0.0001" },
		{ 1e-5, "1e-05" }, { 1.0 / 3, "0.3333333333333333" }, { -0.0, "-0" },
		{ 123456789012345678.0, "1.2345678901234568e+17" }, { 100, "100" },
	};
	unsigned seed = 7;
	const char *why;

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		uint8_t v[9];

		cb_f64(v, exact[i].d);
		cr_assert_geq(fmt(BB_TAG_F64, 0, v, sizeof(v)), 0);
		cr_expect_str_eq(out, exact[i].s);
	}
	for (int i = 0; i < 20000; i++) {
		double d;
		uint8_t v[9];

		if (i < (int)(sizeof(fixed) / sizeof(fixed[0]))) {
			d = fixed[i];
		} else {
			uint64_t b = (uint64_t)rand_r(&seed) << 40 ^ (uint64_t)rand_r(&seed) << 20 ^
				     (uint64_t)rand_r(&seed) ^ (uint64_t)(rand_r(&seed) & 3) << 62;

			if (i % 4 == 1) /* a power of two: the finer spacing below */
				b &= UINT64_C(0xfff0000000000000);
			memcpy(&d, &b, 8);
			if (!isfinite(d))
				continue;
		}
		cb_f64(v, d);
		cr_assert_geq(fmt(BB_TAG_F64, 0, v, sizeof(v)), 0);
		why = bbt_check_double(d, out);
		cr_assert_null(why, "%a printed %s: %s", d, out, why);
	}
	{
		uint8_t v[9];

		cb_f64(v, NAN);
		fmt(BB_TAG_F64, 0, v, sizeof(v));
		cr_expect_str_eq(out, "nan");
		cb_f64(v, -INFINITY);
		fmt(BB_TAG_F64, 0, v, sizeof(v));
		cr_expect_str_eq(out, "-inf");
	}
}

/* The terminal escaper: what a box or a file name may hold reaches a
 * terminal only as visible text. */
#define ESCAPED(in, want)                                                      \
	do {                                                                   \
		size_t n_ = bb_escape_text((in), sizeof(in) - 1, out, sizeof(out)); \
		cr_expect_str_eq(out, (want));                                 \
		cr_expect_eq(n_, strlen(want));                                \
	} while (0)

Test(format, escape_text)
{
	ESCAPED("plain text, caf\xc3\xa9 \xe4\xb8\xad", "plain text, caf\xc3\xa9 \xe4\xb8\xad");
	ESCAPED("\x1b]0;title\x07", "\\x1b]0;title\\x07");          /* OSC: window title */
	ESCAPED("\x1b]52;c;cHduZWQ=\x07", "\\x1b]52;c;cHduZWQ=\\x07"); /* OSC 52: clipboard */
	ESCAPED("a\\b\nc\td\re\x7f", "a\\\\b\\nc\\td\\re\\x7f");
	ESCAPED("\x9b" "31m", "\\x9b31m");                         /* C1 CSI, raw byte */
	ESCAPED("\xc2\x9b" "31m", "\\xc2\\x9b31m");                /* C1 CSI, UTF-8 */
	ESCAPED("\xc2\xa0", "\xc2\xa0");                           /* U+00A0 is text */
	ESCAPED("\xe2\x80\xae" "txt.exe", "\\xe2\\x80\\xaetxt.exe"); /* RLO */
	ESCAPED("\xe2\x81\xa6x\xe2\x80\xa8", "\\xe2\\x81\\xa6x\\xe2\\x80\\xa8"); /* LRI, LS */
	ESCAPED("bad\xff\xc3", "bad\\xff\\xc3");                    /* invalid, cut */
	ESCAPED("\xe0\x80\x80\xed\xa0\x80\xf4\x90\x80\x80", /* overlong, surrogate, > U+10FFFF */
		"\\xe0\\x80\\x80\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80");
	ESCAPED("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");
	/* a NUL in the middle is a byte like any other */
	cr_expect_eq(bb_escape_text("a\0b", 3, out, sizeof(out)), 6);
	cr_expect_str_eq(out, "a\\x00b");
}

Test(format, escape_text_cuts_never_inside_a_character)
{
	char small[9];
	size_t n;

	/* 6 x "é" (12 bytes) into 9: "ééé" would leave no room for "..." */
	n = bb_escape_text("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 12, small,
			   sizeof(small));
	cr_expect_str_eq(small, "\xc3\xa9\xc3\xa9...");
	cr_expect_eq(n, 7);
	/* escapes only: cut, and no raw byte either */
	n = bb_escape_text("\x1b\x1b\x1b\x1b", 4, small, sizeof(small));
	cr_expect_eq(n, strlen(small));
	for (size_t i = 0; i < n; i++)
		cr_expect(small[i] >= 0x20 && small[i] < 0x7f, "raw byte %#x", small[i]);
	cr_expect_eq(bb_escape_text("x", 1, small, 0), 0);
	cr_expect_eq(bb_escape_text(NULL, 5, small, sizeof(small)), 0);
	cr_expect_str_eq(small, "");
}

/* Record values use the same rules: C1 and bidirectional controls quoted
 * and escaped like C0 (keys, values, event names alike). */
Test(format, values_escape_c1_and_bidi)
{
	EXPECT(BB_TAG_STR, 0, "\"\\xc2\\x9bx\"", 0x63, 0xc2, 0x9b, 'x');
	EXPECT(BB_TAG_STR, 0, "\"\\xe2\\x80\\xaeab\"", 0x65, 0xe2, 0x80, 0xae, 'a', 'b');
	EXPECT(BB_TAG_KV, 0, "\"k\\x1b\"=\"v\\x9b\"", 0x82, 0x62, 'k', 0x1b, 0x62, 'v', 0x9b);
	EXPECT(BB_TAG_STR, 0, "\xc2\xa0", 0x62, 0xc2, 0xa0);
}
