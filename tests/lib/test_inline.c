/* SPDX-License-Identifier: MIT */
/*
 * test_inline.c - the inline paths of <blackbox/inline.h>: bb_write_kv()
 * with literals and with strings known only at run time, the typed
 * bb_write_kv_i64/_u64/_f64(), and bb_write_event(), compiled into this
 * program as into any application linked against the shared library.
 * The same source is built as C (GCC, Clang) and as C++ (g++, clang++:
 * test_inline_cxx.cpp includes it), so every compiler's route to the
 * inline paths is checked the same way.
 *
 * The tests must know whether a write ran inline or through the library.
 * This program defines the library's entries the inline paths fall back to
 * (bb_write_kvn(), bb_write_kv(), the typed writers with and without the
 * key's length, bb_write_event())
 * itself: its own calls bind to these definitions, which count and forward
 * to the library's through dlsym(RTLD_NEXT).  A write that leaves the count
 * alone ran inline.
 *
 * What is checked: the program sees the box through its copy relocation of
 * bb__box_v1; inline writes make no library call after the thread's first
 * write; their records are byte for byte what the library writes (kv with
 * every key and value length 0..64, literal and at every alignment at run
 * time, checksums on and off; integers at every CBOR size boundary; floats
 * with NaN payloads, infinities and signed zeros; events of every field
 * type) and what the format defines, and pass the readers' CRC check;
 * strings that end against an inaccessible page are read without a fault;
 * each documented fallback (strings over 64 bytes, nesting, event field
 * lists the compiler cannot see, invalid arguments) takes the library and
 * stays correct; a full segment is switched from the inline path; the
 * largest inline event fits any box; threads writing inline while a
 * reader walks the live box;
 * SIGKILL in the middle of inline writes; a child of fork().
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"

#ifndef BB__HAVE_KV_FAST
/* Not x86-64 (or not GCC/Clang): there is no inline path to test. */
Test(inline, not_built_here)
{
	cr_skip_test("no inline fast path on this target");
}
#else

TestSuite(inline, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 120);

/* ---- the interposed library entries ------------------------------------- */

static unsigned long lib_calls;

/*
 * BBT_COUNT(name, params, args) - define @name here: count the call and
 * forward it to the library's @name, found with dlsym(RTLD_NEXT).  The
 * inline paths' fallbacks call these entries; this program's definitions
 * take precedence over the library's for its own calls (C linkage: the
 * first declarations, in <blackbox.h>, are extern "C" in C++).
 * Parenthesised: <blackbox.h> has macros of these names.
 */
#define BBT_COUNT(name, params, args)                                        \
	int (name) params                                                    \
	{                                                                    \
		static int (*real) params;                                   \
									     \
		if (!real) {                                                 \
			*(void **)&real = dlsym(RTLD_NEXT, #name);           \
			if (!real)                                           \
				abort();                                     \
		}                                                            \
		__atomic_fetch_add(&lib_calls, 1, __ATOMIC_RELAXED);         \
		return real args;                                            \
	}

BBT_COUNT(bb_write_kvn, (const char *key, size_t klen, const char *value, size_t vlen),
	  (key, klen, value, vlen))
BBT_COUNT(bb_write_kv, (const char *key, const char *value), (key, value))
BBT_COUNT(bb_write_kv_i64, (const char *key, int64_t v), (key, v))
BBT_COUNT(bb_write_kv_u64, (const char *key, uint64_t v), (key, v))
BBT_COUNT(bb_write_kv_f64, (const char *key, double v), (key, v))
BBT_COUNT(bb_write_kvn_i64, (const char *key, size_t klen, int64_t v), (key, klen, v))
BBT_COUNT(bb_write_kvn_u64, (const char *key, size_t klen, uint64_t v), (key, klen, v))
BBT_COUNT(bb_write_kvn_f64, (const char *key, size_t klen, double v), (key, klen, v))
BBT_COUNT(bb_write_event, (const char *name, const struct bb_field *f, size_t n), (name, f, n))

static unsigned long calls(void)
{
	return __atomic_load_n(&lib_calls, __ATOMIC_RELAXED);
}

/* Inline event writes are decided by the optimiser (a field list it sees
 * as constants): without it (-O0), and under AddressSanitizer (whose
 * instrumentation of the field array hides the types), they take the
 * library, correctly. */
#if defined(__SANITIZE_ADDRESS__)
#define EVENT_INLINE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EVENT_INLINE 0
#endif
#endif
#if !defined(EVENT_INLINE) && defined(__OPTIMIZE__)
#define EVENT_INLINE 1
#elif !defined(EVENT_INLINE)
#define EVENT_INLINE 0
#endif

/* ---- reading a box back, raw ---------------------------------------------- */

struct raw {
	uint32_t ring;
	int32_t tid;
	uint8_t tag, flags;
	size_t vlen;
	uint8_t value[1280];
};

struct raws {
	struct raw *r;
	size_t n, cap;
};

static int raw_cb(const struct bb_record *rec, void *arg)
{
	struct raws *c = (struct raws *)arg;
	struct raw *t;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 4096;
		c->r = (struct raw *)realloc(c->r, c->cap * sizeof(*c->r));
		cr_assert_not_null(c->r);
	}
	t = &c->r[c->n++];
	t->ring = rec->stream;
	t->tid = rec->tid;
	t->tag = rec->tag;
	t->flags = rec->flags;
	t->vlen = rec->value_len;
	memcpy(t->value, rec->value, rec->value_len < sizeof(t->value) ? rec->value_len
									 : sizeof(t->value));
	return 0;
}

/* Every record of the box at @path, ring by ring, oldest first.  The walk
 * must find no damage: a record an inline path wrote wrong (length,
 * padding, checksum, seq) is counted corrupt by the reader. */
static void read_box(const char *path, struct raws *c)
{
	struct bb_reader *r;
	struct bb_stream_stats st;
	char err[256];
	int ret;

	memset(c, 0, sizeof(*c));
	ret = bb_reader_open_path(path, 0, &r, err, sizeof(err));
	cr_assert_eq(ret, 0, "open %s: %s", path, err);
	cr_assert_eq(bb_reader_walk(r, 0, raw_cb, c), 0);
	bb_reader_total_stats(r, &st);
	cr_assert_eq(st.corrupt, 0, "%llu corrupt records", (unsigned long long)st.corrupt);
	cr_assert_eq(st.torn, 0);
	bb_reader_close(r);
}

/* Like read_box(), for the box of a writer killed at a random instant: at
 * most one record torn (the one being written), none corrupt. */
static void read_killed_box(const char *p, struct raws *c)
{
	struct bb_reader *r;
	struct bb_stream_stats st;
	char err[256];
	int ret;

	memset(c, 0, sizeof(*c));
	ret = bb_reader_open_path(p, 0, &r, err, sizeof(err));
	cr_assert_eq(ret, 0, "open %s: %s", p, err);
	cr_assert_eq(bb_reader_walk(r, 0, raw_cb, c), 0);
	bb_reader_total_stats(r, &st);
	cr_assert_eq(st.corrupt, 0, "%llu corrupt records", (unsigned long long)st.corrupt);
	cr_assert_leq(st.torn, 1, "%llu torn records", (unsigned long long)st.torn);
	bb_reader_close(r);
}

/* The records of @tag only (owner records and others dropped), in order. */
static void only_tag(struct raws *c, uint8_t tag)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->r[i].tag == tag)
			c->r[k++] = c->r[i];
	c->n = k;
}

static void only_kv(struct raws *c)
{
	only_tag(c, BB_TAG_KV);
}

/* A CBOR text head for @n <= 255 bytes. */
static uint8_t *text_head(uint8_t *p, size_t n)
{
	if (n < 24) {
		*p++ = (uint8_t)(0x60 | n);
	} else {
		*p++ = 0x78;
		*p++ = (uint8_t)n;
	}
	return p;
}

/* The CBOR bytes bb_write_kv(@key, @value) must produce (lengths <= 255),
 * written here from RFC 8949 rather than by the library's code. */
static size_t expect_value(uint8_t *out, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	uint8_t *p = out;

	*p++ = 0x82;
	p = text_head(p, kl);
	memcpy(p, key, kl);
	p = text_head(p + kl, vl);
	memcpy(p, value, vl);
	return (size_t)(p + vl - out);
}

static void assert_kv(const struct raw *t, const char *key, const char *value, uint8_t flags)
{
	uint8_t want[sizeof(t->value) + 16];
	size_t n;

	cr_assert_leq(strlen(key) + strlen(value) + 5, sizeof(want));
	n = expect_value(want, key, value);

	cr_assert_eq(t->tag, BB_TAG_KV);
	cr_assert_eq(t->flags, flags, "flags 0x%x, want 0x%x (%s=%s)", t->flags, flags, key, value);
	cr_assert_eq(t->vlen, n, "value of %zu bytes, want %zu (%s=%s)", t->vlen, n, key, value);
	cr_assert_eq(memcmp(t->value, want, n), 0, "value bytes differ (%s=%s)", key, value);
}

/* Records a[i] and b[i], i < @n, are the same record (the inline path's
 * and the library's). */
static void assert_same(const struct raw *a, const struct raw *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(a[i].ring, b[i].ring, "record %zu", i);
		cr_assert_eq(a[i].tag, b[i].tag, "record %zu", i);
		cr_assert_eq(a[i].flags, b[i].flags, "record %zu: flags 0x%x inline, 0x%x library",
			     i, a[i].flags, b[i].flags);
		cr_assert_eq(a[i].vlen, b[i].vlen, "record %zu: %zu bytes inline, %zu library",
			     i, a[i].vlen, b[i].vlen);
		cr_assert_leq(a[i].vlen, sizeof(a[i].value));
		cr_assert_eq(memcmp(a[i].value, b[i].value, a[i].vlen), 0, "record %zu differs", i);
	}
}

static char path[4096];

/* A box of @segments segments of @seg_size bytes (0, 0: the default). */
static struct bb_options options(unsigned flags, size_t seg_size, unsigned segments)
{
	struct bb_options o;

	memset(&o, 0, sizeof(o));
	o.flags = flags | BB_OPT_NO_ENV;
	o.dir = bbt_dir;
	o.segment_size = seg_size;
	o.segment_count = segments;
	return o;
}

static void open_box(unsigned flags, size_t seg_size, unsigned segments)
{
	struct bb_options o = options(flags, seg_size, segments);

	cr_assert_eq(bb_init_opts(&o), 0);
	cr_assert_gt(bb_path(path, sizeof(path)), 0);
}

/* Fields, as C++ must build them too (no compound literals).  The inline
 * event path needs every field's type to be a constant where the call is,
 * when GCC decides __builtin_constant_p (just after its main inlining):
 * these helpers are always_inline, so their stores are seen early (plain
 * static inline ones are inlined too late in a big function, and the event
 * takes the library: correct, and slower). */
#define BBT_FIELD(name, T, TYPE, member)                                         \
	static inline __attribute__((always_inline))                              \
	struct bb_field name(const char *k, T v)                                  \
	{                                                                         \
		struct bb_field f;                                                \
										  \
		f.key = k;                                                        \
		f.type = TYPE;                                                    \
		f.v.member = v;                                                   \
		return f;                                                         \
	}

BBT_FIELD(fld_str, const char *, BB_TYPE_STR, s)
BBT_FIELD(fld_i64, int64_t, BB_TYPE_I64, i64)
BBT_FIELD(fld_u64, uint64_t, BB_TYPE_U64, u64)
BBT_FIELD(fld_f64, double, BB_TYPE_F64, f64)
BBT_FIELD(fld_bool, bool, BB_TYPE_BOOL, b)

static inline __attribute__((always_inline)) struct bb_field fld_strn(const char *k, const char *p, size_t n)
{
	struct bb_field f;

	f.key = k;
	f.type = BB_TYPE_STRN;
	f.v.strn.s = p;
	f.v.strn.n = n;
	return f;
}

static inline __attribute__((always_inline)) struct bb_field fld_bytes(const char *k, const void *p, size_t n)
{
	struct bb_field f;

	f.key = k;
	f.type = BB_TYPE_BYTES;
	f.v.bytes.p = p;
	f.v.bytes.n = n;
	return f;
}

/* ---- tests ------------------------------------------------------------------ */

Test(inline, the_program_sees_the_box)
{
	/* bb__box_v1 is copy-relocated into this (PIE) program: the library
	 * must store the box pointer into our copy, through its GOT.  Were it
	 * to store into its own, every inline write would silently take the
	 * library call. */
	cr_assert_null(bb__box);
	open_box(0, 0, 0);
	cr_assert_not_null(bb__box);
	cr_assert_neq(BB__FAST_BOX(bb__box)->gen, 0);
	cr_assert_eq(BB__FAST_BOX(bb__box)->trailer, BB_CRC_SIZE);
	cr_assert_eq(bb_close(), 0);
	cr_assert_null(bb__box);
}

Test(inline, literal_writes_run_inline)
{
	struct raws c;
	unsigned long before;

	open_box(0, 0, 0);
	before = calls();
	cr_assert_eq(bb_write_kv("req", "GET /index"), 0);   /* claims the ring */
	cr_assert_eq(calls(), before + 1, "the first write claims through the library");
	cr_assert_not_null(BB__FAST_TLS()->window);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(bb_write_kv("req", "GET /index"), 0);
	cr_assert_eq(calls(), before + 1, "%lu literal writes took the library call",
		     calls() - before - 1);
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 1001);
	for (size_t i = 0; i < c.n; i++)
		assert_kv(&c.r[i], "req", "GET /index", BB_RF_CRC);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/* Literals of every length 0..24, and the 2-byte heads' edges up to 64:
 * the literal path's domain. */
#define BBT_L16 "abcdefghijklmnop"
#define BBT_L32 BBT_L16 BBT_L16
#define BBT_LITERALS(X)                                                          \
	X("") X("a") X("ab") X("abc") X("abcd") X("abcde") X("abcdef")            \
	X("abcdefg") X("abcdefgh") X("abcdefghi") X("abcdefghij")                  \
	X("abcdefghijk") X("abcdefghijkl") X("abcdefghijklm")                      \
	X("abcdefghijklmn") X("abcdefghijklmno") X("abcdefghijklmnop")             \
	X("abcdefghijklmnopq") X("abcdefghijklmnopqr") X("abcdefghijklmnopqrs")    \
	X("abcdefghijklmnopqrst") X("abcdefghijklmnopqrstu")                       \
	X("abcdefghijklmnopqrstuv") X("abcdefghijklmnopqrstuvw")                   \
	X("abcdefghijklmnopqrstuvwx") X(BBT_L32 "a") X(BBT_L32 BBT_L16 "abcdefg")  \
	X(BBT_L32 BBT_L16 "abcdefghijklmno") X(BBT_L32 BBT_L32)
#define BBT_STR(s) s,

static const char *const lits[] = { BBT_LITERALS(BBT_STR) };
#define NLITS (sizeof(lits) / sizeof(lits[0]))

/*
 * Keys of lengths 0, 1, 7, 8, 16, 23 and 64 with values of every length,
 * and values of lengths 0, 1, 8, 23, 24 and 64 with keys of every length:
 * every constant-size copy, every head and every CRC step the compiler
 * emits.  One function per key (or value) length, kept out of line: the
 * 377 inline writes in one function made the optimiser's time grow faster
 * than the function (a minute of compilation for this file alone).
 */
#define ONE(key, v) cr_assert_eq(bb_write_kv(key, v), 0);
#define V_ONE_0(v) ONE("", v)
#define V_ONE_1(v) ONE("a", v)
#define V_ONE_7(v) ONE("abcdefg", v)
#define V_ONE_8(v) ONE("abcdefgh", v)
#define V_ONE_16(v) ONE("abcdefghijklmnop", v)
#define V_ONE_23(v) ONE("abcdefghijklmnopqrstuvw", v)
#define V_ONE_64(v) ONE(BBT_L32 BBT_L32, v)
#define K_ONE_0(k) ONE(k, "")
#define K_ONE_1(k) ONE(k, "a")
#define K_ONE_8(k) ONE(k, "abcdefgh")
#define K_ONE_23(k) ONE(k, "abcdefghijklmnopqrstuvw")
#define K_ONE_24(k) ONE(k, "abcdefghijklmnopqrstuvwx")
#define K_ONE_64(k) ONE(k, BBT_L32 BBT_L32)
#define BBT_ROW(name) \
	static __attribute__((noinline)) void every_##name(void) { BBT_LITERALS(name) }
BBT_ROW(V_ONE_0) BBT_ROW(V_ONE_1) BBT_ROW(V_ONE_7) BBT_ROW(V_ONE_8)
BBT_ROW(V_ONE_16) BBT_ROW(V_ONE_23) BBT_ROW(V_ONE_64)
BBT_ROW(K_ONE_0) BBT_ROW(K_ONE_1) BBT_ROW(K_ONE_8) BBT_ROW(K_ONE_23)
BBT_ROW(K_ONE_24) BBT_ROW(K_ONE_64)

static void write_every_length_inline(void)
{
	every_V_ONE_0(); every_V_ONE_1(); every_V_ONE_7(); every_V_ONE_8();
	every_V_ONE_16(); every_V_ONE_23(); every_V_ONE_64();
	every_K_ONE_0(); every_K_ONE_1(); every_K_ONE_8(); every_K_ONE_23();
	every_K_ONE_24(); every_K_ONE_64();
}

/* The same pairs through the library (runtime lengths). */
static const size_t vkeys[] = { 0, 1, 7, 8, 16, 23, NLITS - 1 };
static const size_t kvals[] = { 0, 1, 8, 23, 24, NLITS - 1 };
#define NVKEYS (sizeof(vkeys) / sizeof(vkeys[0]))
#define NKVALS (sizeof(kvals) / sizeof(kvals[0]))

static void write_every_length_library(void)
{
	for (size_t k = 0; k < NVKEYS; k++)
		for (size_t v = 0; v < NLITS; v++)
			cr_assert_eq((bb_write_kv)(lits[vkeys[k]], lits[v]), 0);
	for (size_t v = 0; v < NKVALS; v++)
		for (size_t k = 0; k < NLITS; k++)
			cr_assert_eq((bb_write_kv)(lits[k], lits[kvals[v]]), 0);
}

static void same_records_as_the_library(unsigned flags)
{
	const size_t n = (NVKEYS + NKVALS) * NLITS;
	struct raws c;
	unsigned long before;

	open_box(flags, 1u << 20, 1);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	before = calls();
	write_every_length_inline();
	cr_assert_eq(calls(), before, "%lu of the literal writes took the library call",
		     calls() - before);
	write_every_length_library();
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 1 + 2 * n, "%zu kv records", c.n);
	assert_same(&c.r[1], &c.r[1 + n], n);
	cr_assert_eq(c.r[1].flags, (flags & BB_OPT_NO_CRC) ? 0 : BB_RF_CRC);
	/* And the bytes are the ones the format defines, not merely equal. */
	for (size_t k = 0; k < NVKEYS; k++)
		for (size_t v = 0; v < NLITS; v++)
			assert_kv(&c.r[1 + k * NLITS + v], lits[vkeys[k]], lits[v], c.r[1].flags);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, same_records_as_the_library_with_checksums)
{
	same_records_as_the_library(0);
}

Test(inline, same_records_as_the_library_without_checksums)
{
	same_records_as_the_library(BB_OPT_NO_CRC);
}

Test(inline, strings_over_64_bytes_take_the_library)
{
	static const char k65[] = BBT_L32 BBT_L32 "x";
	char run65[80];
	struct raws c;
	unsigned long before;

	cr_assert_eq(strlen(k65), 65);
	memcpy(run65, k65, sizeof(k65));
	open_box(0, 0, 0);
	cr_assert_eq(bb_write_kv("k", "v"), 0);
	before = calls();
	/* 24 to 64 bytes take a 2-byte head, inline. */
	cr_assert_eq(bb_write_kv("abcdefghijklmnopqrstuvwx", "v"), 0);
	cr_assert_eq(calls(), before);
	/* 65 bytes, literal or not: the library measures and writes them. */
	cr_assert_eq(bb_write_kv(k65, "v"), 0);
	cr_assert_eq(bb_write_kv("k", k65), 0);
	cr_assert_eq(bb_write_kv(run65, "v"), 0);
	cr_assert_eq(bb_write_kv_i64(run65, 1), 0);
	cr_assert_eq(calls(), before + 4);
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 6);
	assert_kv(&c.r[1], "abcdefghijklmnopqrstuvwx", "v", BB_RF_CRC);
	assert_kv(&c.r[2], k65, "v", BB_RF_CRC);
	assert_kv(&c.r[3], "k", k65, BB_RF_CRC);
	assert_kv(&c.r[4], k65, "v", BB_RF_CRC);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/* ---- strings known only at run time ---------------------------------------- */

/* @len bytes of a pattern (varied by @seed) at @off mod 16 in @buf, which
 * is aligned to 16 and holds 16 + 64 + 1 bytes. */
static char *runtime_str(char *buf, size_t off, size_t len, unsigned seed)
{
	char *s = buf + off;

	memset(buf, 0x7f, 96);   /* bytes after the terminator are not zero */
	for (size_t i = 0; i < len; i++)
		s[i] = (char)('!' + (i * 7 + seed) % 90);
	s[len] = '\0';
	return s;
}

/* Every key length 0..64 at every alignment, with values of varying
 * length and alignment, then values likewise: @write(k, v) for each. */
static size_t every_runtime_pair(int (*write)(const char *, const char *))
{
	static char kb[96] __attribute__((aligned(16))), vb[96] __attribute__((aligned(16)));
	size_t n = 0;

	for (size_t len = 0; len <= 64; len++)
		for (size_t off = 0; off < 16; off++) {
			const char *k = runtime_str(kb, off, len, (unsigned)off);
			const char *v = runtime_str(vb, (off * 5 + len) % 16, (len * 7 + off) % 65, 3);

			cr_assert_eq(write(k, v), 0);
			k = runtime_str(kb, (off * 3 + len) % 16, (len * 5 + off) % 65, 5);
			v = runtime_str(vb, off, len, (unsigned)len);
			cr_assert_eq(write(v, k) | write(k, v), 0);
			n += 3;
		}
	return n;
}

/* The inline path (the macro, strings not literals) and the library. */
static int kv_inline(const char *k, const char *v)
{
	return bb_write_kv(k, v);
}

static int kv_library(const char *k, const char *v)
{
	return (bb_write_kv)(k, v);
}

static void run_time_strings_same_as_the_library(unsigned flags)
{
	struct raws c;
	unsigned long before;
	size_t n;

	open_box(flags, 4u << 20, 1);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	before = calls();
	n = every_runtime_pair(kv_inline);
	cr_assert_eq(calls(), before, "%lu of %zu run-time writes took the library call",
		     calls() - before, n);
	cr_assert_eq(every_runtime_pair(kv_library), n);
	cr_assert_eq(calls(), before + n);
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 1 + 2 * n, "%zu kv records", c.n);
	assert_same(&c.r[1], &c.r[1 + n], n);
	cr_assert_eq(c.r[1].flags, (flags & BB_OPT_NO_CRC) ? 0 : BB_RF_CRC);
	/* The format's bytes, for the first pairs written again here. */
	{
		static char kb[96] __attribute__((aligned(16))), vb[96] __attribute__((aligned(16)));

		for (size_t off = 0; off < 16; off++) {
			const char *k = runtime_str(kb, off, 0, (unsigned)off);
			const char *v = runtime_str(vb, (off * 5) % 16, off % 65, 3);

			assert_kv(&c.r[1 + 3 * off], k, v, c.r[1].flags);
		}
	}
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, run_time_strings_same_as_the_library_with_checksums)
{
	run_time_strings_same_as_the_library(0);
}

Test(inline, run_time_strings_same_as_the_library_without_checksums)
{
	run_time_strings_same_as_the_library(BB_OPT_NO_CRC);
}

Test(inline, strings_ending_against_an_inaccessible_page)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *map = (char *)mmap(NULL, (size_t)(2 * pg), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *end;
	struct raws c;
	size_t written = 0;

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
	end = map + pg;   /* the first byte that faults */
	open_box(0, 4u << 20, 1);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	/* Each string's terminator is the last accessible byte, at every
	 * alignment: a read of one byte more faults.  Up to 100 bytes, so
	 * the library's fallback (over 64) is read the same way. */
	for (size_t len = 0; len <= 100; len++) {
		char *s = end - 1 - len;
		struct bb_field f[2];

		memset(s, 'a' + (int)(len % 26), len);
		s[len] = '\0';
		f[0] = fld_str(s, s);
		f[1] = fld_i64("n", (int64_t)len);
		cr_assert_eq(bb_write_kv(s, "v"), 0);
		cr_assert_eq(bb_write_kv("k", s), 0);
		cr_assert_eq(bb_write_kv(s, s), 0);
		cr_assert_eq(bb_write_kv_i64(s, (int64_t)len), 0);
		cr_assert_eq(bb_write_kv_f64(s, 0.5), 0);
		cr_assert_eq(bb_write_event(s, f, 2), 0);
		written += 5;
	}
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 1 + written);
	for (size_t len = 0; len <= 100; len++) {
		char s[101];   /* the string of that round, overwritten since */

		memset(s, 'a' + (int)(len % 26), len);
		s[len] = '\0';
		assert_kv(&c.r[1 + 5 * len], s, "v", BB_RF_CRC);
		assert_kv(&c.r[2 + 5 * len], "k", s, BB_RF_CRC);
		assert_kv(&c.r[3 + 5 * len], s, s, BB_RF_CRC);
	}
	free(c.r);
	cr_assert_eq(bb_close(), 0);
	munmap(map, (size_t)(2 * pg));
}

/* ---- typed values ------------------------------------------------------------ */

static const int64_t ivals[] = {
	0, 1, 23, 24, 255, 256, 65535, 65536, 4294967295LL, 4294967296LL, INT64_MAX,
	-1, -24, -25, -256, -257, -65536, -65537, -4294967296LL, -4294967297LL, INT64_MIN,
};
static const uint64_t uvals[] = {
	0, 23, 24, 255, 256, 65535, 65536, 0xffffffffu, 0x100000000ull, UINT64_MAX,
};
#define NIVALS (sizeof(ivals) / sizeof(ivals[0]))
#define NUVALS (sizeof(uvals) / sizeof(uvals[0]))
#define NFVALS 12

static double fval(size_t i)
{
	static const uint64_t nan_payload = 0x7ff4000000000123ull, neg_nan = 0xfff8000000000001ull;
	double d;

	switch (i) {
	case 0: return 0.0;
	case 1: return -0.0;
	case 2: return 1.5;
	case 3: return -2.25;
	case 4: return 1e300;
	case 5: return 5e-324;
	case 6: return INFINITY;
	case 7: return -INFINITY;
	case 8: return NAN;
	case 9: memcpy(&d, &nan_payload, 8); return d;
	case 10: memcpy(&d, &neg_nan, 8); return d;
	default: return 0.1;
	}
}

/* Every value with @key: inline (@lib 0) or through the library. */
static size_t write_typed(const char *key, int lib)
{
	for (size_t i = 0; i < NIVALS; i++)
		cr_assert_eq(lib ? (bb_write_kv_i64)(key, ivals[i]) : bb_write_kv_i64(key, ivals[i]), 0);
	for (size_t i = 0; i < NUVALS; i++)
		cr_assert_eq(lib ? (bb_write_kv_u64)(key, uvals[i]) : bb_write_kv_u64(key, uvals[i]), 0);
	for (size_t i = 0; i < NFVALS; i++)
		cr_assert_eq(lib ? (bb_write_kv_f64)(key, fval(i)) : bb_write_kv_f64(key, fval(i)), 0);
	return NIVALS + NUVALS + NFVALS;
}

Test(inline, typed_values_same_as_the_library)
{
	static char kb[96] __attribute__((aligned(16)));
	static const uint8_t want_i[][10] = {
		{ 4, 0x82, 0x61, 0x6e, 0x00 },                             /* 0 */
		{ 5, 0x82, 0x61, 0x6e, 0x18, 0x18 },                       /* 24 */
		{ 8, 0x82, 0x61, 0x6e, 0x1a, 0x00, 0x01, 0x00, 0x00 },     /* 65536 */
		{ 4, 0x82, 0x61, 0x6e, 0x20 },                             /* -1 */
		{ 5, 0x82, 0x61, 0x6e, 0x38, 0x18 },                       /* -25 */
	};
	static const size_t want_at[] = { 0, 3, 7, 11, 13 };
	struct raws c;
	unsigned long before;
	size_t n = 0, per;

	open_box(0, 1u << 20, 1);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	before = calls();
	/* Literal keys (1, 24 and 64 bytes), then run-time keys of 0..64
	 * bytes at varying alignments. */
	per = write_typed("n", 0);
	write_typed("abcdefghijklmnopqrstuvwx", 0);
	write_typed(BBT_L32 BBT_L32, 0);
	n = 3 * per;
	for (size_t len = 0; len <= 64; len += 8) {
		write_typed(runtime_str(kb, len % 16, len, 1), 0);
		n += per;
	}
	cr_assert_eq(calls(), before, "%lu typed writes took the library call", calls() - before);
	write_typed("n", 1);
	write_typed("abcdefghijklmnopqrstuvwx", 1);
	write_typed(BBT_L32 BBT_L32, 1);
	for (size_t len = 0; len <= 64; len += 8)
		write_typed(runtime_str(kb, len % 16, len, 1), 1);
	cr_assert_eq(calls(), before + n);
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 1 + 2 * n);
	assert_same(&c.r[1], &c.r[1 + n], n);
	/* The format's bytes (RFC 8949 §3): written out here. */
	for (size_t i = 0; i < sizeof(want_at) / sizeof(want_at[0]); i++) {
		const struct raw *t = &c.r[1 + want_at[i]];

		cr_assert_eq(t->vlen, want_i[i][0], "value %zu: %zu bytes", i, t->vlen);
		cr_assert_eq(memcmp(t->value, &want_i[i][1], t->vlen), 0, "value %zu", i);
	}
	{
		/* u64 max, and f64 1.5: fb 3f f8 00 ... */
		static const uint8_t umax[] = { 0x82, 0x61, 0x6e, 0x1b, 0xff, 0xff, 0xff, 0xff,
						0xff, 0xff, 0xff, 0xff };
		static const uint8_t f15[] = { 0x82, 0x61, 0x6e, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0 };
		const struct raw *u = &c.r[1 + NIVALS + NUVALS - 1], *f = &c.r[1 + NIVALS + NUVALS + 2];

		cr_assert_eq(u->vlen, sizeof(umax));
		cr_assert_eq(memcmp(u->value, umax, sizeof(umax)), 0);
		cr_assert_eq(f->vlen, sizeof(f15));
		cr_assert_eq(memcmp(f->value, f15, sizeof(f15)), 0);
	}
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/*
 * bb_write_kvn() (a macro over the inline path too): strings given by
 * length, here without a terminator where they end (the byte after them
 * is not NUL), at every length 0..64 and several alignments, run inline
 * (no library call) and write the library's bytes; 65 bytes take the
 * library.
 */
Test(inline, kvn_lengths_run_inline_same_as_the_library)
{
	static char kb[96] __attribute__((aligned(16))), vb[96] __attribute__((aligned(16)));
	struct raws c;
	unsigned long before;
	size_t n = 0;

	open_box(0, 1u << 20, 1);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	before = calls();
	for (size_t len = 0; len <= 64; len++) {
		const char *k = runtime_str(kb, len % 16, 64, 3);
		const char *v = runtime_str(vb, (len * 5) % 16, 64, 9);

		cr_assert_eq(bb_write_kvn(k, len, v, 64 - len), 0);
		n++;
	}
	cr_assert_eq(bb_write_kvn("key", 3, "value", 5), 0);
	n++;
	cr_assert_eq(calls(), before, "%lu kvn writes took the library call", calls() - before);
	for (size_t len = 0; len <= 64; len++) {
		const char *k = runtime_str(kb, len % 16, 64, 3);
		const char *v = runtime_str(vb, (len * 5) % 16, 64, 9);

		cr_assert_eq((bb_write_kvn)(k, len, v, 64 - len), 0);
	}
	cr_assert_eq((bb_write_kvn)("key", 3, "value", 5), 0);
	before = calls();
	cr_assert_eq(bb_write_kvn(runtime_str(kb, 1, 80, 3), 65, "v", 1), 0);
	cr_assert_eq(calls(), before + 1, "a 65-byte key takes the library");
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 2 + 2 * n);
	assert_same(&c.r[1], &c.r[1 + n], n);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/* ---- events -------------------------------------------------------------------- */

static const uint8_t raw5[5] = { 0, 1, 0xfe, 0xff, 7 };

/*
 * The events of the tests, each written by @write_event: constant field
 * lists, so that the inline path takes them (when the macro is used).
 * Returns how many.
 */
#define EVENTS(write_event, name_rt, key_rt, val_rt)                               \
	do {                                                                        \
		struct bb_field f[8];                                               \
									            \
		f[0] = fld_str("method", "GET");                                    \
		f[1] = fld_strn("path", "/index?q=1", 6);  /* as "/index" */     \
		f[2] = fld_i64("status", 200);                                      \
		f[3] = fld_i64("bytes", 4096);                                      \
		cr_assert_eq(write_event("http", f, 4), 0);                         \
		cr_assert_eq(write_event("", f, 0), 0);                             \
		f[0] = fld_str("s", BBT_L32 BBT_L32);                               \
		f[1] = fld_i64("neg", INT64_MIN);                                   \
		f[2] = fld_u64("big", UINT64_MAX);                                  \
		f[3] = fld_f64("nan", NAN);                                         \
		f[4] = fld_bool("yes", true);                                       \
		f[5] = fld_bool("no", false);                                       \
		f[6] = fld_bytes("raw", raw5, sizeof(raw5));                        \
		f[7] = fld_bytes("none", NULL, 0);                                  \
		cr_assert_eq(write_event("every type", f, 8), 0);                   \
		f[0] = fld_str(key_rt, val_rt);                                     \
		f[1] = fld_i64(BBT_L32 BBT_L32, -300);                              \
		f[2] = fld_f64(key_rt, -0.0);                                       \
		cr_assert_eq(write_event(name_rt, f, 3), 0);                        \
		/* Set again: a call that may take the library was given f. */  \
		f[0] = fld_str(key_rt, val_rt);                                     \
		cr_assert_eq(write_event(BBT_L32 BBT_L32, f, 1), 0);                \
	} while (0)
#define NEVENTS 5

static void events_inline(const char *name_rt, const char *key_rt, const char *val_rt)
{
	EVENTS(bb_write_event, name_rt, key_rt, val_rt);
}

static void events_library(const char *name_rt, const char *key_rt, const char *val_rt)
{
	EVENTS((bb_write_event), name_rt, key_rt, val_rt);
}

Test(inline, events_same_as_the_library)
{
	static char nb[96] __attribute__((aligned(16))), kb[96] __attribute__((aligned(16))),
		vb[96] __attribute__((aligned(16)));
	static const uint8_t http[] = {
		0x82, 0x64, 'h', 't', 't', 'p', 0xa4,
		0x66, 'm', 'e', 't', 'h', 'o', 'd', 0x63, 'G', 'E', 'T',
		0x64, 'p', 'a', 't', 'h', 0x66, '/', 'i', 'n', 'd', 'e', 'x',
		0x66, 's', 't', 'a', 't', 'u', 's', 0x18, 0xc8,
		0x65, 'b', 'y', 't', 'e', 's', 0x19, 0x10, 0x00,
	};
	struct raws c;
	unsigned long before;
	size_t n = 0;

	open_box(0, 1u << 20, 1);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	before = calls();
	for (size_t len = 0; len <= 64; len += 16) {
		events_inline(runtime_str(nb, len % 16, len, 2), runtime_str(kb, 3, len, 4),
			      runtime_str(vb, 7, 64 - len, 6));
		n += NEVENTS;
	}
	if (EVENT_INLINE)
		cr_assert_eq(calls(), before, "%lu events took the library call",
			     calls() - before);
	for (size_t len = 0; len <= 64; len += 16)
		events_library(runtime_str(nb, len % 16, len, 2), runtime_str(kb, 3, len, 4),
			       runtime_str(vb, 7, 64 - len, 6));
	read_box(path, &c);
	only_tag(&c, BB_TAG_EVENT);
	cr_assert_eq(c.n, 2 * n);
	assert_same(&c.r[0], &c.r[n], n);
	cr_assert_eq(c.r[0].vlen, sizeof(http));
	cr_assert_eq(memcmp(c.r[0].value, http, sizeof(http)), 0, "the format's bytes");
	cr_assert_eq(c.r[0].flags, BB_RF_CRC);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

static volatile size_t nine = 9, two = 2;
static volatile int str_type = BB_TYPE_STR;

Test(inline, events_the_compiler_cannot_see_take_the_library)
{
	static const char k65[] = BBT_L32 BBT_L32 "x";
	struct bb_field f[9];
	struct raws c;
	unsigned long before;

	open_box(0, 0, 0);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	for (int i = 0; i < 9; i++)
		f[i] = fld_i64("k", i);
	before = calls();
	cr_assert_eq(bb_write_event("count not constant", f, two), 0);
	cr_assert_eq(bb_write_event("nine fields", f, 9), 0);
	cr_assert_eq(bb_write_event("nine, not constant", f, nine), 0);
	f[0].type = (enum bb_type)str_type;   /* a type not known to the compiler */
	f[0].v.s = "x";
	cr_assert_eq(bb_write_event("type not constant", f, 1), 0);
	f[0] = fld_str(k65, "v");
	cr_assert_eq(bb_write_event("65-byte key", f, 1), 0);
	f[0] = fld_str("k", k65);
	cr_assert_eq(bb_write_event("65-byte value", f, 1), 0);
	cr_assert_eq(bb_write_event(k65, f, 0), 0);
	cr_assert_eq(calls(), before + 7, "%lu library calls, want 7", calls() - before);
	/* And invalid arguments keep the library's -EINVAL. */
	before = calls();
	f[0] = fld_str(NULL, "v");
	cr_assert_eq(bb_write_event("null key", f, 1), -EINVAL);
	f[0] = fld_str("k", NULL);
	cr_assert_eq(bb_write_event("null text", f, 1), -EINVAL);
	f[0] = fld_bytes("k", NULL, 3);
	cr_assert_eq(bb_write_event("null bytes", f, 1), -EINVAL);
	f[0] = fld_strn("k", NULL, 1);
	cr_assert_eq(bb_write_event("null counted text", f, 1), -EINVAL);
	f[0] = fld_i64("k", 1);
	f[0].type = (enum bb_type)0;   /* no type (and in C++ in the enum's range) */
	cr_assert_eq(bb_write_event("unknown type", f, 1), -EINVAL);
	f[0] = fld_i64("k", 1);
	cr_assert_eq(bb_write_event(NULL, f, 1), -EINVAL);
	cr_assert_eq(bb_write_event("no fields", NULL, 1), -EINVAL);
	cr_assert_eq(calls(), before + 7);
	read_box(path, &c);
	only_tag(&c, BB_TAG_EVENT);
	cr_assert_eq(c.n, 7, "%zu events", c.n);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, the_largest_inline_event_fits_any_room)
{
	/* The smallest segment, 4 KiB: a record of at most 4 KiB, a value
	 * of 4076 bytes (BB__ROOM_MIN).  Eight 64-byte keys with 64-byte
	 * values, the most an inline event holds, fit: inline, untruncated,
	 * the same record as the library's. */
	struct bb_field f[8];
	struct raws c;
	unsigned long before;

	open_box(0, 4096, 2);
	cr_assert_eq(bb_write_kv("first", "takes a segment"), 0);
	before = calls();
	/* one by one, not in a loop: the compiler must see every type */
	f[0] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[1] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[2] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[3] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[4] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[5] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[6] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	f[7] = fld_str(BBT_L32 BBT_L32, BBT_L32 BBT_L32);
	cr_assert_eq(bb_write_event(BBT_L32 BBT_L32, f, 8), 0);
	if (EVENT_INLINE)
		cr_assert_eq(calls(), before, "the event took the library");
	cr_assert_eq((bb_write_event)(BBT_L32 BBT_L32, f, 8), 0);
	read_box(path, &c);
	only_tag(&c, BB_TAG_EVENT);
	cr_assert_eq(c.n, 2);
	cr_assert_not(c.r[0].flags & BB_RF_TRUNCATED);
	cr_assert_gt(c.r[0].vlen, 1000);
	cr_assert_leq(c.r[0].vlen, BB__ROOM_MIN);
	cr_assert_eq(c.r[0].vlen, c.r[1].vlen);
	cr_assert_eq(memcmp(c.r[0].value, c.r[1].value, c.r[0].vlen), 0);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/* ---- fallbacks ------------------------------------------------------------------ */

Test(inline, a_nested_write_takes_the_shared_ring)
{
	static char vb[96] __attribute__((aligned(16)));
	const char *dyn = runtime_str(vb, 5, 9, 1);
	struct bb_field f[2];
	struct raws c;
	unsigned long before;
	size_t nested = 0;

	open_box(0, 0, 0);
	cr_assert_eq(bb_write_kv("outer", "1"), 0);
	before = calls();
	f[0] = fld_str("k", "v");
	f[1] = fld_u64("n", 7);
	/* As if a signal handler ran inside a write of this thread: depth 1.
	 * Every inline path must leave the private ring alone and let the
	 * library put the record on the shared ring, with the thread id. */
	BB__FAST_TLS()->depth = 1;
	cr_assert_eq(bb_write_kv("nested", "2"), 0);
	cr_assert_eq(bb_write_kv("nested", dyn), 0);
	cr_assert_eq(bb_write_kv_i64("nested", -3), 0);
	cr_assert_eq(bb_write_kv_f64("nested", 4.5), 0);
	cr_assert_eq(bb_write_event("nested", f, 2), 0);
	cr_assert_eq(BB__FAST_TLS()->depth, 1, "the depth was not given back");
	BB__FAST_TLS()->depth = 0;
	cr_assert_eq(calls(), before + 5, "%lu of 5 nested writes took the library",
		     calls() - before);
	cr_assert_eq(bb_write_kv("outer", "3"), 0);
	cr_assert_eq(calls(), before + 5);
	read_box(path, &c);
	for (size_t i = 0; i < c.n; i++) {
		if (c.r[i].tag != BB_TAG_KV && c.r[i].tag != BB_TAG_EVENT)
			continue;
		if (c.r[i].flags & BB_RF_TID) {
			cr_assert_eq(c.r[i].tid, gettid());
			cr_assert_eq(memcmp(c.r[i].value + 2, "nested", 6), 0);
			nested++;
		} else {
			cr_assert(c.r[i].value[2] == 'o', "a private-ring record other than outer");
		}
	}
	cr_assert_eq(nested, 5);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, a_full_segment_switches_inline_and_keeps_the_newest)
{
	struct raws c;
	unsigned long before;

	/* Two 4 KiB segments.  Fill them with 32-byte records ("a" = "b":
	 * 16 + 5 + 4 = 25 bytes), many times over: whenever the current
	 * segment is full the next write takes the thread's oldest segment
	 * (bb__ring_make_room() on its window), from the inline path, never
	 * the library's write.  Then 72-byte records (23 + 23 bytes).  Every
	 * few writes the log holds, intact and in order, the newest records:
	 * a run that ends with the last one written and holds at least the
	 * previous segment, full to less than a record. */
	open_box(0, 4096, 2);
	cr_assert_eq(bb_write_kv("a", "b"), 0);
	before = calls();
	for (int i = 0; i < 500; i++)
		cr_assert_eq(bb_write_kv("a", "b"), 0);
	for (int i = 1; i <= 200; i++) {
		size_t held = 0;

		cr_assert_eq(bb_write_kv("abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrstuvw"), 0);
		if (i % 7)
			continue;
		read_box(path, &c);
		only_kv(&c);
		cr_assert_gt(c.n, 0);
		for (size_t k = 0; k < c.n; k++) {
			if (k < c.n - (size_t)(i < (int)c.n ? i : (int)c.n)) {
				assert_kv(&c.r[k], "a", "b", BB_RF_CRC);
				held += 32;
			} else {
				assert_kv(&c.r[k], "abcdefghijklmnopqrstuvw",
					  "abcdefghijklmnopqrstuvw", BB_RF_CRC);
				held += 72;
			}
		}
		cr_assert_geq(held, 4096 - 72, "%zu bytes held after %d big records", held, i);
		free(c.r);
	}
	cr_assert_eq(calls(), before, "a segment switch took the library's write");
	read_box(path, &c);
	only_kv(&c);
	/* 200 records of 72 bytes: at least a segment's worth of the newest */
	cr_assert_geq(c.n, 4096 / 72, "%zu records", c.n);
	for (size_t i = 0; i < c.n; i++)
		assert_kv(&c.r[i], "abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrstuvw", BB_RF_CRC);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/* The key and value of record @i of the mark test: run-time strings of
 * varying lengths, the key "k" and i in 6 digits, then filler. */
static void mark_kv(unsigned i, char *k, char *v)
{
	unsigned kl = 7 + i % 17, vl = (i * 7) % 65;

	snprintf(k, 8, "k%06u", i);
	memset(k + 7, 'x', kl - 7);
	k[kl] = '\0';
	memset(v, 'a' + (char)(i % 26), vl);
	v[vl] = '\0';
}

/* A thread that holds the box's only segment until told. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t hold_bar;

static void *hold_the_segment(void *arg)
{
	int ret = bb_write_kv("first", "takes the only segment");

	(void)arg;
	pthread_barrier_wait(&hold_bar); /* the segment is ours */
	pthread_mutex_lock(&hold_mu);    /* until the test is done */
	pthread_mutex_unlock(&hold_mu);
	return ret ? (void *)1 : NULL;
}

Test(inline, mark_segments_free_a_segment_at_a_time)
{
	/* The shared ring of a box of 16 KiB segments is 64 KiB
	 * (BB__MARK_RING_MIN: 64 mark segments of 1 KiB).  Another thread
	 * holds the only segment, so our writes go there, through the
	 * library.  Records of 24 to 112 bytes with run-time strings, 30
	 * laps.  Every few hundred writes the box must hold, intact and in
	 * order, exactly the newest records, in at least ring - 2 segments
	 * - one record bytes (FORMAT.md §7); and room must have been made
	 * ahead, by a jump to a segment's first record, at least once (the
	 * point of marks: a walk frees exactly, and the ring then always
	 * holds more). */
	const unsigned ring = 64u << 10, n = 24000;
	uint64_t least = ring;
	char k[32], v[80];
	struct raws c;
	pthread_t th;
	void *ret;

	open_box(0, ring / 4, 1);
	pthread_mutex_lock(&hold_mu);
	pthread_barrier_init(&hold_bar, NULL, 2);
	cr_assert_eq(pthread_create(&th, NULL, hold_the_segment, NULL), 0);
	pthread_barrier_wait(&hold_bar);
	for (unsigned i = 0; i < n; i++) {
		mark_kv(i, k, v);
		cr_assert_eq(bb_write_kv(k, v), 0);
		if (i < 2 * ring / 24 || i % 331)
			continue;
		uint64_t held = 0;
		unsigned next = 0;

		read_box(path, &c);
		for (size_t j = 0; j < c.n; j++) {
			if (c.r[j].tag != BB_TAG_KV || !(c.r[j].flags & BB_RF_TID))
				continue; /* the other thread's, in its segment */
			held += BB_RECORD_STRIDE(BB_RECORD_HDR_SIZE + 8 + c.r[j].vlen + BB_CRC_SIZE);
			unsigned idx = (unsigned)strtoul((const char *)c.r[j].value + 3, NULL, 10);
			char ek[32], ev[80];

			cr_assert(next == 0 || idx == next, "record %u follows %u", idx, next - 1);
			mark_kv(idx, ek, ev);
			assert_kv(&c.r[j], ek, ev, BB_RF_CRC | BB_RF_TID);
			next = idx + 1;
		}
		cr_assert_eq(next, i + 1, "newest record %u, written %u", next - 1, i);
		cr_assert_geq(held, ring - ring / 32 - 120, "%u: %llu bytes held", i,
			      (unsigned long long)held);
		least = held < least ? held : least;
		free(c.r);
	}
	pthread_mutex_unlock(&hold_mu);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_null(ret);
	cr_assert_lt(least, ring - 2 * 120, "room was never made a segment ahead (least %llu held)",
		     (unsigned long long)least);
	cr_assert_eq(bb_close(), 0);
}

/* ---- threads ----------------------------------------------------------------- */

#define NTHREADS 4
#define PER_THREAD 20000

static int writers_done;
static const char *const names[NTHREADS] = { "zero", "one", "two", "three" };

/* Each thread writes, in turn, a literal pair, its name known only at run
 * time, an integer and an event: every inline path. */
static void *writer(void *arg)
{
	long id = (long)arg;
	char name[16];

	strcpy(name, names[id]);
	for (int i = 0; i < PER_THREAD; i++) {
		struct bb_field f[2];
		int ret;

		f[0] = fld_str("thread", name);
		f[1] = fld_i64("i", i);
		switch (i % 4) {
		case 0:
			switch (id) {   /* a literal per thread */
			case 0: ret = bb_write_kv("thread", "zero"); break;
			case 1: ret = bb_write_kv("thread", "one"); break;
			case 2: ret = bb_write_kv("thread", "two"); break;
			default: ret = bb_write_kv("thread", "three"); break;
			}
			break;
		case 1: ret = bb_write_kv("thread", name); break;
		case 2: ret = bb_write_kv_i64(name, i); break;
		default: ret = bb_write_event("thread", f, 2); break;
		}
		if (ret)
			return (void *)1;
	}
	__atomic_fetch_add(&writers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Which thread wrote the record (@tag, @n bytes at @v); -1 for none.  A
 * kv record: "thread" and the name, or the name and an integer; an event:
 * "thread" with the fields "thread" (the name) and "i". */
static int thread_of(uint8_t tag, const uint8_t *v, size_t n)
{
	for (int k = 0; k < NTHREADS; k++) {
		uint8_t want[64];
		size_t kl = strlen(names[k]), w = expect_value(want, "thread", names[k]);

		if (tag == BB_TAG_KV && n == w && !memcmp(v, want, n))
			return k;
		if (tag == BB_TAG_KV && n > 2 + kl && v[1] == (0x60 | kl) &&
		    !memcmp(v + 2, names[k], kl) && v[2 + kl] <= 0x1a)
			return k;
		if (tag == BB_TAG_EVENT && n > 20 && !memcmp(v, "\x82\x66thread\xa2\x66thread", 16) &&
		    v[16] == (0x60 | kl) && !memcmp(v + 17, names[k], kl))
			return k;
	}
	return -1;
}

static int live_cb(const struct bb_record *rec, void *arg)
{
	(void)arg;
	if (rec->tag != BB_TAG_KV && rec->tag != BB_TAG_EVENT)
		return 0;
	cr_assert_geq(thread_of(rec->tag, rec->value, rec->value_len), 0,
		      "a live reader got a record that no thread wrote");
	return 0;
}

Test(inline, threads_write_inline_while_a_reader_walks)
{
	pthread_t th[NTHREADS];
	struct bb_reader *r;
	struct bb_stream_stats st;
	struct raws c;
	size_t count[NTHREADS] = { 0 };
	char err[256];
	unsigned long before;
	int walks = 0;

	/* Segments of 64 KiB, two per thread: each taken over many times. */
	open_box(0, 64 << 10, 8);
	before = calls();
	for (long i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, writer, (void *)i), 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < NTHREADS || walks == 0) {
		cr_assert_eq(bb_reader_walk(r, 0, live_cb, NULL), 0);
		walks++;
	}
	bb_reader_total_stats(r, &st);
	cr_assert_eq(st.corrupt, 0, "the live walks found %llu corrupt records",
		     (unsigned long long)st.corrupt);
	bb_reader_close(r);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		cr_assert_eq(pthread_join(th[i], &ret), 0);
		cr_assert_null(ret);
	}
	/* One library call per thread: its first write.  (Events need the
	 * optimiser; without it, a quarter of the writes.) */
	if (EVENT_INLINE)
		cr_assert_eq(calls() - before, NTHREADS, "%lu library calls", calls() - before);
	read_box(path, &c);
	for (size_t i = 0; i < c.n; i++) {
		int k;

		if (c.r[i].tag != BB_TAG_KV && c.r[i].tag != BB_TAG_EVENT)
			continue;
		k = thread_of(c.r[i].tag, c.r[i].value, c.r[i].vlen);
		cr_assert_geq(k, 0, "a record that no thread wrote");
		count[k]++;
	}
	for (int k = 0; k < NTHREADS; k++)
		cr_assert_gt(count[k], 1000, "thread %d kept only %zu records", k, count[k]);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, sigkill_mid_write_leaves_intact_records)
{
	/* A child writes through every inline path as fast as it can, in
	 * small segments it takes over all the time; SIGKILL lands at a random
	 * instruction of an inline path.  Every record left is whole and
	 * checksummed, at most the one in progress is torn, and every one
	 * is what was written. */
	for (int round = 0; round < 20; round++) {
		struct raws c;
		char box[4096] = "";
		int fds[2], status;
		pid_t pid;

		cr_assert_eq(pipe(fds), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct bb_options o = options(0, 4096, 4);
			char dyn[32];

			strcpy(dyn, "a run-time value");
			close(fds[0]);
			if (bb_init_opts(&o) || bb_path(box, sizeof(box)) <= 0)
				_exit(1);
			/* Wrapped many times before the parent is told (the
			 * parent's kill clock starts then, whatever the
			 * scheduler does to us before). */
			for (int i = 0; ; i++) {
				struct bb_field f[2];

				f[0] = fld_str("k", dyn);
				f[1] = fld_i64("i", 77);
				if (i == 1000 && (write(fds[1], box, strlen(box)) < 0 ||
						  close(fds[1])))
					_exit(1);
				bb_write_kv("k", "v");
				bb_write_kv("key", dyn);
				bb_write_kv_i64("key", -77);
				bb_write_event("ev", f, 2);
			}
		}
		close(fds[1]);
		cr_assert_gt(read(fds[0], box, sizeof(box) - 1), 0);
		close(fds[0]);
		usleep((useconds_t)(rand() % 5000));
		cr_assert_eq(kill(pid, SIGKILL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		read_killed_box(box, &c);
		cr_assert_gt(c.n, 100, "round %d: %zu records", round, c.n);
		for (size_t i = 0; i < c.n; i++) {
			static const uint8_t i64[] = { 0x82, 0x63, 'k', 'e', 'y', 0x38, 0x4c };
			static const uint8_t ev[] = { 0x82, 0x62, 'e', 'v', 0xa2, 0x61, 'k', 0x70,
						      'a', ' ', 'r', 'u', 'n', '-', 't', 'i', 'm',
						      'e', ' ', 'v', 'a', 'l', 'u', 'e', 0x61, 'i',
						      0x18, 0x4d };

			if (c.r[i].tag == BB_TAG_EVENT) {
				cr_assert_eq(c.r[i].vlen, sizeof(ev));
				cr_assert_eq(memcmp(c.r[i].value, ev, sizeof(ev)), 0);
			} else if (c.r[i].tag != BB_TAG_KV) {
				continue;
			} else if (c.r[i].vlen == 5) {
				assert_kv(&c.r[i], "k", "v", BB_RF_CRC);
			} else if (c.r[i].vlen == sizeof(i64)) {
				cr_assert_eq(memcmp(c.r[i].value, i64, sizeof(i64)), 0);
			} else {
				assert_kv(&c.r[i], "key", "a run-time value", BB_RF_CRC);
			}
		}
		free(c.r);
		unlink(box);
	}
}

Test(inline, a_child_of_fork_writes_to_its_own_box)
{
	char parent_path[4096];
	pid_t pid;
	int status;

	open_box(0, 0, 0);
	cr_assert_eq(bb_write_kv("parent", "before"), 0);
	strcpy(parent_path, path);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The child drops the parent's mapping (bb__box is NULL): its
		 * first write takes the library, which creates the child's
		 * box; the next ones run inline into it. */
		unsigned long before = calls();
		char mine[4096], dyn[16];
		int bad = 0;

		strcpy(dyn, "second");
		bad |= bb__box != NULL;
		bad |= bb_write_kv("child", dyn) != 0;
		bad |= calls() != before + 1;
		bad |= bb_write_kv("child", dyn) != 0;
		bad |= bb_write_kv_u64("child", 3) != 0;
		bad |= calls() != before + 1;
		bad |= bb_path(mine, sizeof(mine)) <= 0 || !strcmp(mine, parent_path);
		_exit(bad ? 1 : bb_close() == 0 ? 0 : 2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	cr_assert_eq(bb_write_kv("parent", "after"), 0);
	{
		struct raws c;

		read_box(parent_path, &c);
		only_kv(&c);
		cr_assert_eq(c.n, 2, "the child wrote into the parent's box");
		assert_kv(&c.r[1], "parent", "after", BB_RF_CRC);
		free(c.r);
	}
	cr_assert_eq(bb_close(), 0);
}

#endif /* BB__HAVE_KV_FAST */
