/* SPDX-License-Identifier: MIT */
/*
 * test_inline.c - the inline fast path of bb_write_kv() (<blackbox/inline.h>),
 * compiled into this program as into any application linked against the
 * shared library.
 *
 * The tests must know whether a write ran inline or through the library.
 * This program defines the library's entries the inline paths fall back to
 * (bb_write_kvn(), bb_write_kv() ...) itself: its own calls bind to these
 * definitions, which count and forward to the library's through
 * dlsym(RTLD_NEXT).  A write that leaves the count alone ran inline.
 *
 * What is checked: the program sees the box through its copy relocation of
 * bb__box_v1; literal writes run inline after the thread's first write;
 * their records are byte for byte what the library writes (every key and
 * value length 0..23, checksums on and off), and pass the readers' CRC
 * check; each documented fallback (24-byte strings, nesting, a ring that
 * must free several records) takes the library and stays correct; threads
 * writing inline while a reader walks the live box; SIGKILL in the middle
 * of inline writes; a child of fork().
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../common.h"

#ifndef BB__HAVE_KV_FAST
/* Not x86-64 (or not GCC/Clang): there is no inline path to test. */
Test(inline, not_built_here)
{
	cr_skip_test("no inline fast path on this target");
}
#else

TestSuite(inline, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 120);

/* ---- the interposed library entries ------------------------------------- */

static atomic_ulong kvn_calls;

/*
 * BBT_COUNT(ret, name, params, args) - define @name here: count the call
 * and forward it to the library's @name, found with dlsym(RTLD_NEXT).  The
 * inline paths' fallbacks (and the macros for strings they do not take)
 * call these entries; this program's definitions take precedence over the
 * library's for its own calls.  Parenthesised: <blackbox.h> has macros of
 * these names.
 */
#define BBT_COUNT(ret, name, params, args)                                  \
	ret (name) params                                                   \
	{                                                                   \
		static ret (*real) params;                                  \
									    \
		if (!real) {                                                \
			*(void **)&real = dlsym(RTLD_NEXT, #name);          \
			if (!real)                                          \
				abort();                                    \
		}                                                           \
		atomic_fetch_add(&kvn_calls, 1);                            \
		return real args;                                           \
	}

BBT_COUNT(int, bb_write_kvn, (const char *key, size_t klen, const char *value, size_t vlen),
	  (key, klen, value, vlen))
BBT_COUNT(int, bb_write_kv, (const char *key, const char *value), (key, value))

static unsigned long calls(void)
{
	return atomic_load(&kvn_calls);
}

/* ---- reading a box back, raw ---------------------------------------------- */

struct raw {
	uint32_t ring;
	int32_t tid;
	uint8_t tag, flags;
	size_t vlen;
	uint8_t value[128];
};

struct raws {
	struct raw *r;
	size_t n, cap;
};

static int raw_cb(const struct bb_record *rec, void *arg)
{
	struct raws *c = arg;
	struct raw *t;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 4096;
		c->r = realloc(c->r, c->cap * sizeof(*c->r));
		cr_assert_not_null(c->r);
	}
	t = &c->r[c->n++];
	t->ring = rec->ring;
	t->tid = rec->tid;
	t->tag = rec->tag;
	t->flags = rec->flags;
	t->vlen = rec->value_len;
	memcpy(t->value, rec->value, rec->value_len < sizeof(t->value) ? rec->value_len
									 : sizeof(t->value));
	return 0;
}

/* Every record of the box at @path, ring by ring, oldest first.  The walk
 * must find no damage: a record the inline path wrote wrong (length,
 * padding, checksum, seq) is counted corrupt by the reader. */
static void read_box(const char *path, struct raws *c)
{
	struct bb_reader *r;
	struct bb_ring_stats st;
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
	struct bb_ring_stats st;
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

/* The KV records only (owner records and others dropped), in order. */
static void only_kv(struct raws *c)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->r[i].tag == BB_TAG_KV)
			c->r[k++] = c->r[i];
	c->n = k;
}

/* The CBOR bytes bb_write_kv(@key, @value) must produce (lengths < 24). */
static size_t expect_value(uint8_t *out, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);

	out[0] = 0x82;
	out[1] = (uint8_t)(0x60 | kl);
	memcpy(out + 2, key, kl);
	out[2 + kl] = (uint8_t)(0x60 | vl);
	memcpy(out + 3 + kl, value, vl);
	return 3 + kl + vl;
}

static void assert_kv(const struct raw *t, const char *key, const char *value, uint8_t flags)
{
	uint8_t want[64];
	size_t n = expect_value(want, key, value);

	cr_assert_eq(t->tag, BB_TAG_KV);
	cr_assert_eq(t->flags, flags, "flags 0x%x, want 0x%x (%s=%s)", t->flags, flags, key, value);
	cr_assert_eq(t->vlen, n, "value of %zu bytes, want %zu (%s=%s)", t->vlen, n, key, value);
	cr_assert_eq(memcmp(t->value, want, n), 0, "value bytes differ (%s=%s)", key, value);
}

static char path[4096];

static void open_box(unsigned flags, size_t ring_size, unsigned rings)
{
	struct bb_options o = { .flags = flags | BB_OPT_NO_ENV, .dir = bbt_dir,
				.ring_size = ring_size, .ring_count = rings,
				.size = ring_size ? (size_t)(rings + 2) * ring_size + (1u << 20) : 0 };

	cr_assert_eq(bb_init_opts(&o), 0);
	cr_assert_gt(bb_path(path, sizeof(path)), 0);
}

/* ---- tests ------------------------------------------------------------------ */

Test(inline, the_program_sees_the_box)
{
	/* bb__box_v1 is copy-relocated into this (PIE) program: the library
	 * must store the box pointer into our copy, through its GOT.  Were it
	 * to store into its own, every literal write would silently take the
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
	cr_assert_not_null(BB__FAST_TLS()->ring);
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

/* Literals of every length 0..23: the inline path's whole domain. */
#define BBT_LITERALS(X)                                                          \
	X("") X("a") X("ab") X("abc") X("abcd") X("abcde") X("abcdef")            \
	X("abcdefg") X("abcdefgh") X("abcdefghi") X("abcdefghij")                  \
	X("abcdefghijk") X("abcdefghijkl") X("abcdefghijklm")                      \
	X("abcdefghijklmn") X("abcdefghijklmno") X("abcdefghijklmnop")             \
	X("abcdefghijklmnopq") X("abcdefghijklmnopqr") X("abcdefghijklmnopqrs")    \
	X("abcdefghijklmnopqrst") X("abcdefghijklmnopqrstu")                       \
	X("abcdefghijklmnopqrstuv") X("abcdefghijklmnopqrstuvw")
#define BBT_STR(s) s,

static const char *const lits[] = { BBT_LITERALS(BBT_STR) };
#define NLITS (sizeof(lits) / sizeof(lits[0]))

static void write_every_length_inline(void)
{
	/* Keys of lengths 0, 1, 7, 8, 16 and 23 with values of every length,
	 * and values of lengths 0, 1, 8 and 23 with keys of every length:
	 * every constant-size copy and every CRC step the compiler emits. */
#define ONE(key, v) cr_assert_eq(bb_write_kv(key, v), 0);
#define V_ONE_0(v) ONE("", v)
#define V_ONE_1(v) ONE("a", v)
#define V_ONE_7(v) ONE("abcdefg", v)
#define V_ONE_8(v) ONE("abcdefgh", v)
#define V_ONE_16(v) ONE("abcdefghijklmnop", v)
#define V_ONE_23(v) ONE("abcdefghijklmnopqrstuvw", v)
#define K_ONE_0(k) ONE(k, "")
#define K_ONE_1(k) ONE(k, "a")
#define K_ONE_8(k) ONE(k, "abcdefgh")
#define K_ONE_23(k) ONE(k, "abcdefghijklmnopqrstuvw")
	BBT_LITERALS(V_ONE_0) BBT_LITERALS(V_ONE_1) BBT_LITERALS(V_ONE_7)
	BBT_LITERALS(V_ONE_8) BBT_LITERALS(V_ONE_16) BBT_LITERALS(V_ONE_23)
	BBT_LITERALS(K_ONE_0) BBT_LITERALS(K_ONE_1) BBT_LITERALS(K_ONE_8)
	BBT_LITERALS(K_ONE_23)
}

/* The same pairs through the library (runtime lengths). */
static void write_every_length_library(void)
{
	static const size_t vkeys[] = { 0, 1, 7, 8, 16, 23 }, kvals[] = { 0, 1, 8, 23 };

	for (size_t k = 0; k < sizeof(vkeys) / sizeof(vkeys[0]); k++)
		for (size_t v = 0; v < NLITS; v++)
			cr_assert_eq((bb_write_kv)(lits[vkeys[k]], lits[v]), 0);
	for (size_t v = 0; v < sizeof(kvals) / sizeof(kvals[0]); v++)
		for (size_t k = 0; k < NLITS; k++)
			cr_assert_eq((bb_write_kv)(lits[k], lits[kvals[v]]), 0);
}

static void same_records_as_the_library(unsigned flags)
{
	const size_t n = 10 * NLITS;
	struct raws c;
	unsigned long before;

	open_box(flags, 0, 0);
	cr_assert_eq(bb_write_kv("first", "claims the ring"), 0);
	before = calls();
	write_every_length_inline();
	cr_assert_eq(calls(), before, "%lu of the literal writes took the library call",
		     calls() - before);
	write_every_length_library();
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 1 + 2 * n, "%zu kv records", c.n);
	for (size_t i = 0; i < n; i++) {
		const struct raw *a = &c.r[1 + i], *b = &c.r[1 + n + i];

		cr_assert_eq(a->ring, b->ring);
		cr_assert_eq(a->tag, b->tag);
		cr_assert_eq(a->flags, b->flags, "record %zu: flags 0x%x inline, 0x%x library",
			     i, a->flags, b->flags);
		cr_assert_eq(a->flags, (flags & BB_OPT_NO_CRC) ? 0 : BB_RF_CRC);
		cr_assert_eq(a->vlen, b->vlen, "record %zu: %zu bytes inline, %zu library",
			     i, a->vlen, b->vlen);
		cr_assert_eq(memcmp(a->value, b->value, a->vlen), 0, "record %zu differs", i);
	}
	/* And the bytes are the ones the format defines, not merely equal. */
	for (size_t v = 0; v < NLITS; v++)
		assert_kv(&c.r[1 + v], "", lits[v], c.r[1].flags);
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
	static const char k65[] =
		"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklm";
	struct raws c;
	unsigned long before;

	cr_assert_eq(strlen(k65), 65);
	open_box(0, 0, 0);
	cr_assert_eq(bb_write_kv("k", "v"), 0);
	before = calls();
	/* 24 to 64 bytes take a 2-byte head, inline. */
	cr_assert_eq(bb_write_kv("abcdefghijklmnopqrstuvwx", "v"), 0);
	cr_assert_eq(calls(), before);
	/* 65 bytes: the library measures and writes them. */
	cr_assert_eq(bb_write_kv(k65, "v"), 0);
	cr_assert_eq(bb_write_kv("k", k65), 0);
	cr_assert_eq(calls(), before + 2);
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 4);
	cr_assert_eq(c.r[1].vlen, 1 + 2 + 24 + 1 + 1);   /* text(24) has a 2-byte head */
	cr_assert_eq(c.r[1].value[1], 0x78);
	cr_assert_eq(c.r[1].value[2], 24);
	cr_assert_eq(c.r[2].vlen, 1 + 2 + 65 + 1 + 1);
	cr_assert_eq(c.r[3].vlen, 1 + 1 + 1 + 2 + 65);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, a_nested_write_takes_the_shared_ring)
{
	struct raws c;
	unsigned long before;

	open_box(0, 0, 0);
	cr_assert_eq(bb_write_kv("outer", "1"), 0);
	before = calls();
	/* As if a signal handler ran inside a write of this thread: depth 1.
	 * The inline path must leave the private ring alone and let the
	 * library put the record on the shared ring, with the thread id. */
	BB__FAST_TLS()->depth = 1;
	cr_assert_eq(bb_write_kv("nested", "2"), 0);
	cr_assert_eq(BB__FAST_TLS()->depth, 1, "the depth was not given back");
	BB__FAST_TLS()->depth = 0;
	cr_assert_eq(calls(), before + 1, "the nested write did not take the library");
	cr_assert_eq(bb_write_kv("outer", "3"), 0);
	cr_assert_eq(calls(), before + 1);
	read_box(path, &c);
	only_kv(&c);
	cr_assert_eq(c.n, 3);
	for (size_t i = 0; i < c.n; i++) {
		if (c.r[i].flags & BB_RF_TID) {
			assert_kv(&c.r[i], "nested", "2", BB_RF_CRC | BB_RF_TID);
			cr_assert_eq(c.r[i].tid, gettid());
		} else {
			cr_assert(c.r[i].value[2] == 'o', "a private-ring record other than outer");
		}
	}
	cr_assert_eq(c.r[0].flags & BB_RF_TID, 0);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, freeing_several_old_records_takes_the_library)
{
	struct raws c;
	unsigned long before, took;

	/* One 4 KiB ring.  Fill it with 32-byte records ("a" = "b": 16 + 5
	 * + 4 = 25 bytes), wrapping it several times: each frees exactly one
	 * old record, inline.  Then 72-byte records (23 + 23 bytes): while
	 * the oldest records are 32-byte ones, each needs three freed, which
	 * is the library's job; once the ring holds only big records, one
	 * freed is enough again, inline. */
	open_box(0, 4096, 1);
	cr_assert_eq(bb_write_kv("a", "b"), 0);
	before = calls();
	for (int i = 0; i < 500; i++)
		cr_assert_eq(bb_write_kv("a", "b"), 0);
	cr_assert_eq(calls(), before, "small records in steady state took the library");
	for (int i = 1; i <= 200; i++) {
		cr_assert_eq(bb_write_kv("abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrstuvw"), 0);
		if (i > 8)
			continue;
		/* Right after the switch, the ring holds the newest small
		 * records, whole, then the i big ones: freeing fewer old
		 * records than a write covers would leave a damaged record at
		 * the tail (read_box() fails on it). */
		read_box(path, &c);
		only_kv(&c);
		cr_assert_gt(c.n, (size_t)i);
		for (size_t k = 0; k < c.n; k++)
			if (k < c.n - (size_t)i)
				assert_kv(&c.r[k], "a", "b", BB_RF_CRC);
			else
				assert_kv(&c.r[k], "abcdefghijklmnopqrstuvw",
					  "abcdefghijklmnopqrstuvw", BB_RF_CRC);
		/* ... and no more was dropped than needed: 4 KiB less one
		 * 72-byte record at most is free. */
		cr_assert_geq((c.n - (size_t)i) * 32 + (size_t)i * 72, 4096 - 72 - 32,
			      "%zu records after %d big ones", c.n, i);
		free(c.r);
	}
	took = calls() - before;
	cr_assert_gt(took, 0, "no big record needed several old ones freed");
	cr_assert_lt(took, 200, "big records in steady state still took the library");
	read_box(path, &c);
	only_kv(&c);
	/* 200 records of 72 bytes overwrote the 4 KiB ring several times:
	 * it holds the newest 4096 / 72 of them and nothing older, every one
	 * intact (read_box() found no damage). */
	cr_assert_eq(c.n, 4096 / 72, "%zu records", c.n);
	for (size_t i = 0; i < c.n; i++)
		assert_kv(&c.r[i], "abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrstuvw", BB_RF_CRC);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

/* ---- threads ----------------------------------------------------------------- */

#define NTHREADS 4
#define PER_THREAD 50000

static atomic_int writers_done;

static void *writer(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < PER_THREAD; i++) {
		int ret;

		switch (id) {   /* a literal per thread: every one runs inline */
		case 0: ret = bb_write_kv("thread", "zero"); break;
		case 1: ret = bb_write_kv("thread", "one"); break;
		case 2: ret = bb_write_kv("thread", "two"); break;
		default: ret = bb_write_kv("thread", "three"); break;
		}
		if (ret)
			return (void *)1;
	}
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static const char *const names[NTHREADS] = { "zero", "one", "two", "three" };

/* Which thread's literal the kv value of @n bytes at @v is; -1 for none. */
static int thread_of(const uint8_t *v, size_t n)
{
	uint8_t want[64];

	for (int k = 0; k < NTHREADS; k++)
		if (n == expect_value(want, "thread", names[k]) && !memcmp(v, want, n))
			return k;
	return -1;
}

static int live_cb(const struct bb_record *rec, void *arg)
{
	(void)arg;
	if (rec->tag != BB_TAG_KV)
		return 0;
	cr_assert_geq(thread_of(rec->value, rec->value_len), 0,
		      "a live reader got a kv record that no thread wrote");
	return 0;
}

Test(inline, threads_write_inline_while_a_reader_walks)
{
	pthread_t th[NTHREADS];
	struct bb_reader *r;
	struct bb_ring_stats st;
	struct raws c;
	size_t count[NTHREADS] = { 0 };
	char err[256];
	unsigned long before;
	int walks = 0;

	/* Rings of 64 KiB: each wraps many times (a record is 32 bytes). */
	open_box(0, 64 << 10, 8);
	before = calls();
	for (long i = 0; i < NTHREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, writer, (void *)i), 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	while (atomic_load(&writers_done) < NTHREADS || walks == 0) {
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
	/* One library call per thread: the claim. */
	cr_assert_eq(calls() - before, NTHREADS, "%lu library calls", calls() - before);

	read_box(path, &c);
	only_kv(&c);
	for (size_t i = 0; i < c.n; i++) {
		int k = thread_of(c.r[i].value, c.r[i].vlen);

		cr_assert_geq(k, 0, "a kv record that no thread wrote");
		count[k]++;
		/* Each thread's records sit in its own ring, contiguous. */
		if (i > 0 && c.r[i].ring == c.r[i - 1].ring)
			cr_assert_eq(memcmp(c.r[i].value, c.r[i - 1].value, c.r[i].vlen), 0);
	}
	for (int k = 0; k < NTHREADS; k++)
		cr_assert_gt(count[k], 1000, "thread %d kept only %zu records", k, count[k]);
	free(c.r);
	cr_assert_eq(bb_close(), 0);
}

Test(inline, sigkill_mid_write_leaves_intact_records)
{
	/* A child writes literal records inline as fast as it can, in a
	 * small ring that wraps all the time; SIGKILL lands at a random
	 * instruction of the inline path.  Every record left is whole and
	 * checksummed, at most the one in progress is torn, and every one
	 * is the literal. */
	for (int round = 0; round < 20; round++) {
		struct raws c;
		char box[4096] = "";
		int fds[2], status;
		pid_t pid;

		cr_assert_eq(pipe(fds), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct bb_options o = { .flags = BB_OPT_NO_ENV, .dir = bbt_dir,
						.ring_size = 8192, .ring_count = 1,
						.size = 1u << 20 };

			close(fds[0]);
			if (bb_init_opts(&o) || bb_path(box, sizeof(box)) <= 0)
				_exit(1);
			/* Wrapped many times before the parent is told (the
			 * parent's kill clock starts then, whatever the
			 * scheduler does to us before). */
			for (int i = 0; ; i++) {
				if (i == 1000 && (write(fds[1], box, strlen(box)) < 0 ||
						  close(fds[1])))
					_exit(1);
				bb_write_kv("k", "v");
				bb_write_kv("key", "a longer literal value");
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
		only_kv(&c);
		cr_assert_gt(c.n, 100, "round %d: %zu records", round, c.n);
		for (size_t i = 0; i < c.n; i++)
			if (c.r[i].vlen == 5)
				assert_kv(&c.r[i], "k", "v", BB_RF_CRC);
			else
				assert_kv(&c.r[i], "key", "a longer literal value", BB_RF_CRC);
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
		 * first literal write takes the library, which creates the
		 * child's box; the next one runs inline into it. */
		unsigned long before = calls();
		char mine[4096];
		int bad = 0;

		bad |= bb__box != NULL;
		bad |= bb_write_kv("child", "first") != 0;
		bad |= calls() != before + 1;
		bad |= bb_write_kv("child", "second") != 0;
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
