/* SPDX-License-Identifier: MIT */
/*
 * Description: bb-extract's encoders on their own: RFC 3339 times, JSON
 * string escaping (invalid UTF-8, control characters), CBOR values to
 * JSON and CBOR (shapes, limits, malformed input), and the output buffers
 * (io_uring and write(2) produce the same bytes); the JSON fast path
 * against the general path over generated values.
 */
#include <criterion/criterion.h>

#include <blackbox/format.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <blackbox/reader.h>

#include "../helpers/cbor_gen.h"
#include "../helpers/common.h"
#include "emit.h"
#include "out.h"

struct sink {
	int fd;
	struct bbx_out o;
	struct bbx_em em;
};

static void sink_open(struct sink *s, bool cbor, bool uring)
{
	s->fd = memfd_create("emit", 0);
	cr_assert(s->fd >= 0);
	cr_assert_eq(bbx_out_open(&s->o, s->fd, uring), 0);
	bbx_em_init(&s->em, &s->o, cbor);
}

/* Close and return what was written (NUL-terminated); *len its size. */
static char *sink_close(struct sink *s, size_t *len)
{
	off_t n;
	char *buf;

	cr_assert_eq(bbx_out_close(&s->o), 0);
	n = lseek(s->fd, 0, SEEK_END);
	cr_assert(n >= 0);
	buf = malloc((size_t)n + 1);
	cr_assert_eq(pread(s->fd, buf, (size_t)n, 0), n);
	buf[n] = '\0';
	close(s->fd);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* A record value as JSON members (inside braces), and whether it decoded. */
static char *json_value(unsigned tag, const void *v, size_t n, bool *ok)
{
	struct sink s;

	sink_open(&s, false, false);
	bbx_em_map(&s.em);
	*ok = bbx_em_record_value(&s.em, tag, v, n);
	bbx_em_end(&s.em);
	return sink_close(&s, NULL);
}

#define EXPECT_JSON(tag, bytes, want_ok, want) do {                           \
	static const uint8_t v_[] = bytes;                                     \
	bool ok_;                                                              \
	char *got_ = json_value(tag, v_, sizeof(v_), &ok_);                    \
	cr_expect_eq(ok_, want_ok, "%s", got_);                                \
	cr_expect_str_eq(got_, want);                                          \
	free(got_);                                                            \
} while (0)

#define B(...) { __VA_ARGS__ }

Test(emit, time_rfc3339)
{
	char t[BBX_TIME_MAX];

	t[bbx_fmt_time(t, 0)] = '\0';
	cr_expect_str_eq(t, "1970-01-01T00:00:00.000000000Z");
	t[bbx_fmt_time(t, -1)] = '\0';
	cr_expect_str_eq(t, "1969-12-31T23:59:59.999999999Z");
	t[bbx_fmt_time(t, INT64_C(1709164800123456789))] = '\0';
	cr_expect_str_eq(t, "2024-02-29T00:00:00.123456789Z");
	t[bbx_fmt_time(t, INT64_C(1795268701123456789))] = '\0';
	cr_expect_str_eq(t, "2026-11-21T13:45:01.123456789Z");
	t[bbx_fmt_time(t, INT64_C(951782400000000000))] = '\0';
	cr_expect_str_eq(t, "2000-02-29T00:00:00.000000000Z");
	/* any int64 formats without overflow */
	cr_expect_lt(bbx_fmt_time(t, INT64_MIN), sizeof(t));
	cr_expect_lt(bbx_fmt_time(t, INT64_MAX), sizeof(t));
}

Test(emit, integers)
{
	char b[24];

	b[bbx_fmt_i64(b, INT64_MIN)] = '\0';
	cr_expect_str_eq(b, "-9223372036854775808");
	b[bbx_fmt_u64(b, UINT64_MAX)] = '\0';
	cr_expect_str_eq(b, "18446744073709551615");
	b[bbx_fmt_u64(b, 0)] = '\0';
	cr_expect_str_eq(b, "0");
	b[bbx_fmt_i64(b, -7)] = '\0';
	cr_expect_str_eq(b, "-7");
}

/* Every digit count, and the seconds cache of bbx_fmt_ns, against printf. */
/* The 8-digit blocks (written 8 digits at a time): a sweep of every
 * block value in steps of 997, each lane boundary, against printf. */
Test(emit, integers_eight_digit_blocks)
{
	static const uint32_t edges[] = { 0, 9, 10, 99, 100, 9999, 10000, 99999999,
					  10009999, 99990000, 12345678, 90000009 };
	char b[40], want[40];

	for (uint64_t v = 0; v < 100000000; v += 997) {
		b[bbx_fmt_u64(b, 100000000 + v)] = '\0';
		snprintf(want, sizeof(want), "1%08llu", (unsigned long long)v);
		cr_assert_str_eq(b, want);
	}
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		uint64_t v = 1234567890000000000ull + edges[i] * 100000000ull + edges[i];

		b[bbx_fmt_u64(b, v)] = '\0';
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
		cr_expect_str_eq(b, want);
	}
}

Test(emit, integers_all_lengths)
{
	struct bbx_ns_cache nc = { 0 };
	char b[40], want[40];
	uint64_t v = 0;

	for (int i = 0; i < 2000; i++) {
		/* 0, 9, 10, 99, 100, ... and pseudo-random values */
		v = i < 40 ? (i % 2 ? v * 10 + 9 : v + 1) :
		    v * 6364136223846793005ull + 1442695040888963407ull;
		b[bbx_fmt_u64(b, v)] = '\0';
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
		cr_expect_str_eq(b, want);
		b[bbx_fmt_ns(&nc, b, v >> (i % 64))] = '\0';
		snprintf(want, sizeof(want), "%llu", (unsigned long long)(v >> (i % 64)));
		cr_expect_str_eq(b, want);
		/* same second again, then the next nanosecond */
		b[bbx_fmt_ns(&nc, b, (v >> (i % 64)) + 1)] = '\0';
		snprintf(want, sizeof(want), "%llu", (unsigned long long)(v >> (i % 64)) + 1);
		cr_expect_str_eq(b, want);
	}
}

/*
 * Text and JSON print every double alike: the library's text of the value
 * (bb_format_value) is the JSON number, with ".0" when it has neither '.'
 * nor an exponent (a float stays a float for typed consumers), through the
 * fast path (f64 records) and the general one (any item of an unknown
 * tag); and it is the shortest decimal that reads back (bbt_check_double).
 */
static void expect_double(double d)
{
	uint8_t v[9] = { 0xfb };
	uint64_t u;
	char want[80], text[64];
	const char *why;
	bool ok;

	memcpy(&u, &d, 8);
	for (int i = 0; i < 8; i++)
		v[1 + i] = (uint8_t)(u >> (56 - 8 * i));
	cr_assert_geq(bb_format_value(BB_TAG_F64, 0, v, sizeof(v), text, sizeof(text)), 0);
	why = bbt_check_double(d, text);
	cr_expect_null(why, "%a printed %s: %s", d, text, why);
	snprintf(want, sizeof(want), "{\"value\":%s%s}", text, strpbrk(text, ".e") ? "" : ".0");
	char *got = json_value(BB_TAG_F64, v, sizeof(v), &ok);
	cr_expect_str_eq(got, want, "%a", d);
	free(got);
	got = json_value(200, v, sizeof(v), &ok);
	cr_expect_str_eq(got, want, "%a (general path)", d);
	free(got);
}

Test(emit, json_doubles_as_text)
{
	static const double fixed[] = {
		0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1e-4, 9.9999e-5, 1e15, 999999999999999.0,
		1e15 - 0.5, 123456789012345.6, 0.000123, 3.14159, 2.5e-3, 1.0 / 3,
		2.0 / 3, 1e14 + 0.1, 4503599627370496.0, 9007199254740993.0, 1e300, 5e-324,
		0.30000000000000004, 100.0, 1e-5, 12345.678, -273.15, 1e16, 1e300 * 1.0000000000000001,
		-2.5e-07, 0x1p-1074, 0x1p-1022, 0x1p+1023,
	};
	uint64_t x = 88172645463325252ull;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		expect_double(fixed[i]);
	for (int i = 0; i < 3000; i++) {
		double d;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		switch (i % 3) {
		case 0: /* few decimals, like most logged values */
			d = (double)(int64_t)(x % 2000000001) / (double)(1ull << 0) /
			    (double)(uint64_t[]){ 1, 10, 100, 1000, 10000, 1000000 }[x % 6];
			break;
		case 1: { /* any bits */
			uint64_t b = x;

			memcpy(&d, &b, 8);
			if (d != d || d - d != 0)
				d = 1.25;
			break;
		}
		default: /* any value in the fast range */
			d = (double)(x >> 11) / (double)(1ull << 53) * 1e15 / (double)(1u << (x % 32));
		}
		expect_double(d);
	}
}

Test(emit, json_scalars)
{
	EXPECT_JSON(BB_TAG_STR, B(0x62, 'h', 'i'), true, "{\"value\":\"hi\"}");
	EXPECT_JSON(BB_TAG_I64, B(0x24), true, "{\"value\":-5}");
	EXPECT_JSON(BB_TAG_I64, B(0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), true,
		    "{\"value\":-9223372036854775808}");
	EXPECT_JSON(BB_TAG_U64, B(0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), true,
		    "{\"value\":18446744073709551615}");
	EXPECT_JSON(BB_TAG_F64, B(0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0), true, "{\"value\":1.5}");
	EXPECT_JSON(BB_TAG_F64, B(0xfb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a), true,
		    "{\"value\":0.1}");
	EXPECT_JSON(BB_TAG_F64, B(0xfb, 0, 0, 0, 0, 0, 0, 0, 0), true, "{\"value\":0.0}");
	EXPECT_JSON(BB_TAG_F64, B(0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0), true, "{\"value\":\"NaN\"}");
	EXPECT_JSON(BB_TAG_F64, B(0xfb, 0xff, 0xf0, 0, 0, 0, 0, 0, 0), true,
		    "{\"value\":\"-Infinity\"}");
	EXPECT_JSON(BB_TAG_BOOL, B(0xf5), true, "{\"value\":true}");
	EXPECT_JSON(BB_TAG_BYTES, B(0x42, 0xde, 0xad), true, "{\"value\":\"dead\"}");
	/* tags we do not know: converted as they are */
	EXPECT_JSON(200, B(0x82, 0xf6, 0xf9, 0x3c, 0x00), true, "{\"value\":[null,1.0]}");
}

Test(emit, json_shapes)
{
	EXPECT_JSON(BB_TAG_KV, B(0x82, 0x61, 'k', 0x07), true, "{\"key\":\"k\",\"value\":7}");
	EXPECT_JSON(BB_TAG_EVENT, B(0x82, 0x64, 'o', 'p', 'e', 'n', 0xa2, 0x62, 'f', 'd', 0x03,
				    0x61, 'x', 0xf4), true,
		    "{\"name\":\"open\",\"fields\":{\"fd\":3,\"x\":false}}");
	EXPECT_JSON(BB_TAG_OWNER, B(0x84, 0x0c, 0x61, 'w', 0x00, 0x60), true,
		    "{\"value\":{\"tid\":12,\"thread\":\"w\",\"prev_tid\":0,\"prev_thread\":\"\"}}");
}

Test(emit, json_string_escapes)
{
	/* quote, backslash, newline, bell, DEL stays, é valid, lone 0xff, cut é */
	EXPECT_JSON(BB_TAG_STR, B(0x6a, '"', '\\', '\n', 0x07, 0x7f, 0xc3, 0xa9, 0xff, 'z', 0xc3),
		    true, "{\"value\":\"\\\"\\\\\\n\\u0007\x7f\xc3\xa9\\ufffdz\\ufffd\"}");
	/* overlong encoding and UTF-16 surrogate are not valid UTF-8 */
	EXPECT_JSON(BB_TAG_STR, B(0x65, 0xc0, 0xaf, 0xed, 0xa0, 0x80), true,
		    "{\"value\":\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"}");
	/* 4-byte sequence */
	EXPECT_JSON(BB_TAG_STR, B(0x64, 0xf0, 0x9f, 0x98, 0x80), true,
		    "{\"value\":\"\xf0\x9f\x98\x80\"}");
	/* C1 controls (U+0085, U+009B CSI) escaped like C0: the same value for
	 * a parser, nothing a terminal acts on; U+00A0 is text */
	EXPECT_JSON(BB_TAG_STR, B(0x66, 0xc2, 0x85, 0xc2, 0x9b, 0xc2, 0xa0), true,
		    "{\"value\":\"\\u0085\\u009b\xc2\xa0\"}");
}

Test(emit, malformed_values_are_reported_not_followed)
{
	/* wrong shape for the tag */
	EXPECT_JSON(BB_TAG_STR, B(0x07), false,
		    "{\"error\":\"str record without a text value\",\"raw\":\"07\"}");
	EXPECT_JSON(BB_TAG_KV, B(0x82, 0x07, 0x07), false,
		    "{\"error\":\"kv record that is not [text, value]\",\"raw\":\"820707\"}");
	/* string longer than the value */
	EXPECT_JSON(BB_TAG_STR, B(0x7a, 0xff, 0xff, 0xff, 0xff, 'x'), false,
		    "{\"error\":\"malformed CBOR value\",\"raw\":\"7affffffff78\"}");
	/* array count that cannot fit */
	EXPECT_JSON(200, B(0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00), false,
		    "{\"error\":\"malformed CBOR value\",\"raw\":\"9bffffffffffffffff00\"}");
	/* reserved additional information, break outside indefinite */
	EXPECT_JSON(200, B(0x1c), false, "{\"error\":\"malformed CBOR value\",\"raw\":\"1c\"}");
	EXPECT_JSON(200, B(0xff), false, "{\"error\":\"malformed CBOR value\",\"raw\":\"ff\"}");
	/* trailing bytes */
	EXPECT_JSON(BB_TAG_U64, B(0x01, 0x02), false,
		    "{\"error\":\"trailing bytes after the value\",\"raw\":\"0102\"}");
	{
		/* nesting bomb: 1000 nested arrays */
		uint8_t v[1001];
		bool ok;
		char *got;

		memset(v, 0x81, 1000);
		v[1000] = 0x00;
		got = json_value(200, v, sizeof(v), &ok);
		cr_expect(!ok);
		cr_expect(!strncmp(got, "{\"error\":\"malformed CBOR value\"", 31));
		free(got);
	}
	{
		/* an empty value */
		bool ok;
		char *got = json_value(BB_TAG_STR, "", 0, &ok);

		cr_expect(!ok);
		cr_expect_str_eq(got, "{\"error\":\"empty value\",\"raw\":\"\"}");
		free(got);
	}
}

Test(emit, cbor_values_copied_or_repaired)
{
	static const uint8_t kv[] = { 0x82, 0x61, 'k', 0x63, 'a', 0xff, 'b' };
	static const uint8_t ev[] = { 0x82, 0x61, 'e', 0xa1, 0x61, 'n', 0x19, 0x01, 0x2c };
	struct sink s;
	size_t n;
	char *got;

	sink_open(&s, true, false);
	bbx_em_map(&s.em);
	cr_assert(bbx_em_record_value(&s.em, BB_TAG_KV, kv, sizeof(kv)));
	cr_assert(bbx_em_record_value(&s.em, BB_TAG_EVENT, ev, sizeof(ev)));
	bbx_em_kv_i64(&s.em, "n", -300);
	bbx_em_end(&s.em);
	got = sink_close(&s, &n);
	{
		static const uint8_t want[] = {
			0xbf,
			0x63, 'k', 'e', 'y', 0x61, 'k',
			/* "a\xffb" -> "a\uFFFDb", re-encoded with its new length */
			0x65, 'v', 'a', 'l', 'u', 'e', 0x65, 'a', 0xef, 0xbf, 0xbd, 'b',
			0x64, 'n', 'a', 'm', 'e', 0x61, 'e',
			/* valid values are copied byte for byte */
			0x66, 'f', 'i', 'e', 'l', 'd', 's', 0xa1, 0x61, 'n', 0x19, 0x01, 0x2c,
			0x61, 'n', 0x39, 0x01, 0x2b,
			0xff,
		};

		cr_assert_eq(n, sizeof(want));
		cr_assert(!memcmp(got, want, n));
	}
	free(got);
}

Test(emit, json_nesting_and_lists)
{
	struct sink s;
	char *got;

	sink_open(&s, false, false);
	bbx_em_map(&s.em);
	bbx_em_kv_str(&s.em, "a", "x");
	bbx_em_key(&s.em, "l");
	bbx_em_array(&s.em);
	bbx_em_u64(&s.em, 1);
	bbx_em_map(&s.em);
	bbx_em_kv_u64(&s.em, "b", 2);
	bbx_em_end(&s.em);
	bbx_em_bool(&s.em, false);
	bbx_em_end(&s.em);
	bbx_em_end(&s.em);
	bbx_em_eol(&s.em);
	got = sink_close(&s, NULL);
	cr_expect_str_eq(got, "{\"a\":\"x\",\"l\":[1,{\"b\":2},false]}\n");
	free(got);
}

/* Many buffers' worth through both paths: the same bytes. */
Test(emit, uring_and_plain_same_bytes)
{
	char *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		struct sink s;
		unsigned i;

		sink_open(&s, false, pass == 0);
		for (i = 0; i < 200000; i++) {
			bbx_em_map(&s.em);
			bbx_em_kv_u64(&s.em, "i", i);
			bbx_em_kv_str(&s.em, "s", (i % 7) ? "short" :
				      "a longer string that spans more of the buffer \"quoted\"");
			bbx_em_end(&s.em);
			bbx_em_eol(&s.em);
			if (i % 50000 == 0)
				cr_assert_eq(bbx_out_flush(&s.o), 0);
		}
		if (pass == 0)
			a = sink_close(&s, &na);
		else
			b = sink_close(&s, &nb);
	}
	cr_assert_gt(na, 10u * BBX_OUT_BUFSZ);
	cr_assert_eq(na, nb);
	cr_assert(!memcmp(a, b, na));
	free(a);
	free(b);
}

#ifdef BB_HAVE_URING
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* io_uring_setup(2) refused (as under a container's seccomp policy): the
 * output falls back to write(2) and still writes everything. */
Test(emit, uring_refused_falls_back_to_write)
{
	pid_t pid = fork();
	int st;

	cr_assert(pid >= 0);
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { .len = 4, .filter = f };
		struct sink s;
		size_t n;
		char *got;
		unsigned i;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(77);
		sink_open(&s, false, true);
		if (bbx_out_is_uring(&s.o))
			_exit(1);
		for (i = 0; i < 100000; i++)
			bbx_em_u64(&s.em, 7);
		got = sink_close(&s, &n);
		_exit(n == 100000 && got[0] == '7' ? 0 : 2);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		cr_skip_test("seccomp not available");
	cr_assert_eq(WEXITSTATUS(st), 0, "child status %d", WEXITSTATUS(st));
}
#endif

/*
 * ---- the JSON fast path against the general path ----------------------
 *
 * bbx_em_record_value()'s one-pass paths for scalars, kv and flat events
 * (JSON, and CBOR) must write exactly what the general path (check,
 * shape, json_item or the checked copy) writes, and say the same about validity, for tens of thousands of
 * generated values: every head width (shortest or not), text with quotes,
 * backslashes, control and invalid UTF-8 bytes, floats of every width and
 * special value, simple values, nesting, indefinite lengths, then cut,
 * extended or flipped into malformed CBOR.  The 8-bytes-at-a-time string
 * escaper is checked against a byte-by-byte reference written here, around
 * every length where its paths change.
 */

/* One whole record line as bb-extract writes it, and whether the value
 * decoded. */
static char *record(bool cbor, bool general_only, unsigned tag, const uint8_t *v, size_t n,
		    bool *ok, size_t *len)
{
	struct sink s;

	sink_open(&s, cbor, false);
	s.em.general_only = general_only;
	bbx_em_record_start(&s.em, INT64_C(1795268701123456789), 5215998591844, false, 0,
			    42, "w0", 1, "kv");
	*ok = bbx_em_record_value(&s.em, tag, v, n);
	bbx_em_record_end(&s.em, false, tag == BB_TAG_STR);
	return sink_close(&s, len);
}

/* the values: tests/helpers/cbor_gen.h */

Test(emit_fast, same_bytes_as_the_general_path)
{
	static const unsigned tags[] = {
		BB_TAG_STR, BB_TAG_I64, BB_TAG_U64, BB_TAG_F64, BB_TAG_BOOL, BB_TAG_BYTES,
		BB_TAG_KV, BB_TAG_EVENT, BB_TAG_OWNER, BB_TAG_CRASH, 200,
	};
	unsigned fast_ok = 0, bad = 0;

	for (int i = 0; i < 40000; i++) {
		unsigned tag = tags[pick(sizeof(tags) / sizeof(tags[0]))];
		struct buf v = { .n = 0 };
		size_t la, lb;
		bool oka, okb;
		char *a, *b;

		bool cbor = i & 1; /* the CBOR fast path copies what it checked */

		value(&v, tag);
		damage(&v);
		a = record(cbor, false, tag, v.b, v.n, &oka, &la);
		b = record(cbor, true, tag, v.b, v.n, &okb, &lb);
		cr_assert_eq(oka, okb, "value %d (tag %u, %zu bytes): ok %d vs %d\n%s%s", i, tag,
			     v.n, oka, okb, a, b);
		if (cbor)
			cr_assert(la == lb && !memcmp(a, b, la),
				  "value %d (tag %u, %zu bytes): CBOR differs (%zu vs %zu bytes)",
				  i, tag, v.n, la, lb);
		else
			cr_assert(la == lb && !memcmp(a, b, la),
				  "value %d (tag %u, %zu bytes):\nfast    %s\ngeneral %s", i, tag,
				  v.n, a, b);
		fast_ok += oka;
		bad += !oka;
		free(a);
		free(b);
	}
	/* the generator must reach both outcomes, plenty of each */
	cr_expect_gt(fast_ok, 10000, "%u decoded", fast_ok);
	cr_expect_gt(bad, 1000, "%u refused", bad);
}

/* ---- the string escaper against a byte-by-byte reference ---------------- */

static size_t ref_u8len(const uint8_t *s, size_t n)
{
	/* RFC 3629 table 2, written out independently of emit.c */
	uint8_t c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && s[1] >= 0x80 && s[1] <= 0xbf ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		uint8_t lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return n >= 3 && s[1] >= lo && s[1] <= hi && s[2] >= 0x80 && s[2] <= 0xbf ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		uint8_t lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return n >= 4 && s[1] >= lo && s[1] <= hi && s[2] >= 0x80 && s[2] <= 0xbf &&
		       s[3] >= 0x80 && s[3] <= 0xbf ? 4 : 0;
	}
	return 0;
}

static size_t ref_escape(char *d, const uint8_t *s, size_t n)
{
	size_t w = 0, k;

	d[w++] = '"';
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];

		if (c == '"' || c == '\\') {
			d[w++] = '\\';
			d[w++] = (char)c;
		} else if (c == '\n') {
			w += (size_t)sprintf(d + w, "\\n");
		} else if (c == '\t') {
			w += (size_t)sprintf(d + w, "\\t");
		} else if (c == '\r') {
			w += (size_t)sprintf(d + w, "\\r");
		} else if (c == '\b') {
			w += (size_t)sprintf(d + w, "\\b");
		} else if (c == '\f') {
			w += (size_t)sprintf(d + w, "\\f");
		} else if (c < 0x20) {
			w += (size_t)sprintf(d + w, "\\u%04x", c);
		} else if (c >= 0x80) {
			k = ref_u8len(s + i, n - i);
			if (k == 2 && c == 0xc2 && s[i + 1] < 0xa0) { /* C1 control */
				w += (size_t)sprintf(d + w, "\\u%04x", s[i + 1]);
				i += 2;
				continue;
			}
			if (!k) {
				w += (size_t)sprintf(d + w, "\\ufffd");
				i++;
				continue;
			}
			memcpy(d + w, s + i, k);
			w += k;
			i += k;
			continue;
		} else {
			d[w++] = (char)c;
		}
		i++;
	}
	d[w++] = '"';
	return w;
}

Test(emit_fast, escaper_matches_a_reference_at_every_length)
{
	/* lengths around the 8-byte steps, and around the one-reservation
	 * limit (4096) where the long path takes over */
	static const size_t lens[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 4095, 4096,
				       4097, 5000 };
	static uint8_t s[5000];
	static char want[6 * 5000 + 4];

	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (int round = 0; round < 200; round++) {
			size_t n = lens[li], wl, gl;
			struct sink k;
			char *got;

			/* plain ASCII with a special byte here and there, at
			 * every offset inside an 8-byte block over the rounds */
			for (size_t i = 0; i < n; i++)
				s[i] = (uint8_t)(' ' + pick(95));
			for (int j = 0; n && j < (round % 4); j++) {
				static const uint8_t sp[] = { '"', '\\', 0x00, 0x1f, 0x7f, 0x80,
							      0xc3, 0xe2, 0xf0, 0xff, '\n' };

				s[pick((unsigned)n)] = sp[pick(sizeof(sp))];
			}
			if (n >= 3 && round % 5 == 0)
				memcpy(s + n - 3, "\xe2\x9c\x93", 3); /* valid at the very end */
			if (n >= 2 && round % 7 == 3) /* a C1 control, U+009B (CSI) */
				memcpy(s + pick((unsigned)n - 1), "\xc2\x9b", 2);
			wl = ref_escape(want, s, n);
			sink_open(&k, false, false);
			bbx_em_str(&k.em, (const char *)s, n);
			got = sink_close(&k, &gl);
			cr_assert(gl == wl && !memcmp(got, want, wl),
				  "length %zu round %d:\ngot  %.*s\nwant %.*s", n, round,
				  (int)(gl < 300 ? gl : 300), got, (int)(wl < 300 ? wl : 300), want);
			free(got);
		}
	}
}
