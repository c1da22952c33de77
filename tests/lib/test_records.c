/* SPDX-License-Identifier: MIT */
/*
 * Description: every writer produces a record that reads back through the
 * reader API with the right tag, value and thread id; a thread's log
 * filled many times keeps exactly the newest records; records that
 * straddle the end of the shared ring read back intact.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "collect.h"

static char path[4096];

TestSuite(records, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 60);

Test(records, every_writer_reads_back)
{
	const uint8_t bytes[] = { 0, 1, 0xfe, 0xff };
	struct bb_field ev[] = {
		BB_STR("path", "/index"), BB_I64("status", -404), BB_U64("bytes", UINT64_MAX),
		BB_F64("ms", 1.25), BB_BOOL("cached", true), BB_BYTES("raw", bytes, 4),
	};
	struct tcollect c;
	struct trec *t;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_write_str("hello \"world\""), 0);
	cr_assert_eq(bb_write_str(""), 0);
	cr_assert_eq(bb_write_i64(INT64_MIN), 0);
	cr_assert_eq(bb_write_i64(-1), 0);
	cr_assert_eq(bb_write_i64(INT64_MAX), 0);
	cr_assert_eq(bb_write_u64(UINT64_MAX), 0);
	cr_assert_eq(bb_write_f64(-0.1), 0);
	cr_assert_eq(bb_write_bool(false), 0);
	cr_assert_eq(bb_write_bytes(bytes, sizeof(bytes)), 0);
	cr_assert_eq(bb_write_kv("user", "alice"), 0);
	cr_assert_eq(bb_write_kv_i64("delta", -7), 0);
	cr_assert_eq(bb_write_kv_u64("count", 1ull << 40), 0);
	cr_assert_eq(bb_write_kv_f64("ratio", DBL_MAX), 0);
	cr_assert_eq(bb_write_kv_bool("ok", true), 0);
	cr_assert_eq(bb_write_event("request", ev, 6), 0);
	cr_assert_eq(bb_write(12), 0);
	cr_assert_eq(bb_write(12u), 0);
	cr_assert_eq(bb_write("generic"), 0);
	cr_assert_eq(bb_write(2.5), 0);

	tcollect_path(path, &c);
	cr_assert_eq(c.n, 19, "got %zu records", c.n);
	for (size_t i = 0; i < c.n; i++) {
		cr_assert_eq(c.r[i].tid, tid, "record %zu tid %d, want %d", i, c.r[i].tid, tid);
		cr_assert_eq(c.r[i].flags & BB_RF_TRUNCATED, 0);
		if (i)
			cr_assert_geq(c.r[i].ts, c.r[i - 1].ts);
	}
	t = c.r;
	cr_assert_eq(t[0].tag, BB_TAG_STR); cr_assert_str_eq(t[0].text, "hello \"world\"");
	cr_assert_eq(t[1].tag, BB_TAG_STR); cr_assert_eq(t[1].n, 0);
	cr_assert_eq(t[2].tag, BB_TAG_I64); cr_assert_eq(t[2].i, INT64_MIN);
	cr_assert_eq(t[3].tag, BB_TAG_I64); cr_assert_eq(t[3].i, -1);
	cr_assert_eq(t[4].tag, BB_TAG_I64); cr_assert_eq(t[4].i, INT64_MAX);
	cr_assert_eq(t[5].tag, BB_TAG_U64); cr_assert_eq(t[5].u, UINT64_MAX);
	cr_assert_eq(t[6].tag, BB_TAG_F64); cr_assert_eq(t[6].f, -0.1);
	cr_assert_eq(t[7].tag, BB_TAG_BOOL); cr_assert_eq(t[7].b, false);
	cr_assert_eq(t[8].tag, BB_TAG_BYTES); cr_assert_eq(t[8].n, 4);
	cr_assert_eq(memcmp(t[8].text, bytes, 4), 0);
	cr_assert_eq(t[9].tag, BB_TAG_KV); cr_assert_str_eq(t[9].key, "user");
	cr_assert_eq(t[9].vtype, BB_TYPE_STR); cr_assert_str_eq(t[9].text, "alice");
	cr_assert_str_eq(t[10].key, "delta"); cr_assert_eq(t[10].i, -7);
	cr_assert_str_eq(t[11].key, "count"); cr_assert_eq(t[11].u, 1ull << 40);
	cr_assert_str_eq(t[12].key, "ratio"); cr_assert_eq(t[12].f, DBL_MAX);
	cr_assert_str_eq(t[13].key, "ok"); cr_assert_eq(t[13].vtype, BB_TYPE_BOOL);
	cr_assert(t[13].b);
	cr_assert_eq(t[14].tag, BB_TAG_EVENT); cr_assert_str_eq(t[14].key, "request");
	cr_assert_eq(t[14].nfields, 6);
	cr_assert_eq(t[15].tag, BB_TAG_I64); cr_assert_eq(t[15].i, 12);
	cr_assert_eq(t[16].tag, BB_TAG_U64); cr_assert_eq(t[16].u, 12);
	cr_assert_eq(t[17].tag, BB_TAG_STR); cr_assert_str_eq(t[17].text, "generic");
	cr_assert_eq(t[18].tag, BB_TAG_F64); cr_assert_eq(t[18].f, 2.5);
	free(c.r);
}

/*
 * Two 4 KiB segments written 10,000 times with records of varying size:
 * what reads back is a contiguous run of the newest records ending with
 * the last one written, every value intact, and at least the previous
 * segment nearly full (the thread recycles its own oldest segment).
 */
Test(records, wraparound_keeps_exactly_the_newest)
{
	struct bb_options o = { .segment_size = 4096, .segment_count = 2 };
	char val[200];
	struct tcollect c;
	struct bb_stream_stats st;
	size_t bytes = 0, first;
	const int n = 10000;

	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	for (int i = 0; i < n; i++) {
		int len = 1 + (i * 37) % 150;

		memset(val, 'a' + i % 26, (size_t)len);
		val[len] = '\0';
		cr_assert_eq(bb_write_kv("seq", val), 0);
		cr_assert_eq(bb_write_kv_i64("i", i), 0);
	}
	st = tcollect_path(path, &c);
	cr_assert_eq(st.corrupt, 0);
	cr_assert_eq(st.overwritten, 0, "nobody wrote during the read");
	cr_assert_gt(c.n, 10);
	/* The newest record is the last i. */
	cr_assert_str_eq(c.r[c.n - 1].key, "i");
	cr_assert_eq(c.r[c.n - 1].i, n - 1);
	/* Contiguous: pairs (seq, i) with i decreasing by one going back. */
	first = c.r[0].key[0] == 'i' ? 1 : 0;
	for (size_t k = first; k + 1 < c.n; k += 2) {
		int64_t i = c.r[k + 1].i;
		int len = 1 + (int)((i * 37) % 150);

		cr_assert_str_eq(c.r[k].key, "seq");
		cr_assert_eq(c.r[k].n, (size_t)len, "record of i=%ld has %zu bytes", (long)i, c.r[k].n);
		for (int j = 0; j < len; j++)
			cr_assert_eq(c.r[k].text[j], 'a' + i % 26);
		if (k >= 2)
			cr_assert_eq(i, c.r[k - 1].i + 1, "gap before i=%ld", (long)i);
		bytes += ((16 + 1 + 4 + 2 + (size_t)len + 7) & ~(size_t)7) + 24;
	}
	/* At least 3/4 of a segment holds live records: the previous one,
	 * full but for less than a record's stride. */
	cr_assert_gt(bytes, 4096 * 3 / 4, "only %zu bytes of records kept", bytes);
	free(c.r);
}

/* stride of a shared-ring record whose value is @vlen bytes (tid
 * extension and CRC included) */
static uint64_t shared_stride(size_t vlen)
{
	return (16 + 8 + vlen + 4 + 7) & ~(uint64_t)7;
}

/* Writes of a thread that gets no segment (the box's only one is taken):
 * they go to the shared ring. */
static void *straddle_writer(void *arg)
{
	int *straddled = arg;
	uint64_t size = 0;
	struct tcollect c;
	char v[700];

	for (int i = 0; i < 600; i++) {
		size_t len = 300 + (size_t)(i * 13) % 390;
		struct bb_reader *r;

		for (size_t j = 0; j < len; j++)
			v[j] = (char)('A' + (i + j) % 26);
		v[len] = '\0';
		cr_assert_eq(bb_write_str(v), 0);
		if (!size) {
			cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
			size = bb_reader_info(r)->ring_size;
			bb_reader_close(r);
		}
		tcollect_path(path, &c);
		for (size_t k = 0; k < c.n; k++) {
			if (c.r[k].tag != BB_TAG_STR || c.r[k].ring != 0)
				continue; /* the main thread's, in its segment */
			for (size_t j = 1; j < c.r[k].n; j++)
				cr_assert_eq((c.r[k].text[j] - 'A') % 26, (c.r[k].text[j - 1] - 'A' + 1) % 26,
					     "record %zu corrupt at byte %zu", k, j);
		}
		if (c.n) {
			struct trec *last = &c.r[c.n - 1];

			cr_assert_eq(last->ring, 0, "a thread without a segment writes the shared ring");
			cr_assert_eq(last->n, len);
			*straddled += (last->pos & (size - 1)) + shared_stride(last->vlen) > size;
		}
		free(c.r);
	}
	return NULL;
}

/* Records that straddle the end of a ring (the shared ring: a thread
 * without a segment) are contiguous to the writer (double mapping) and
 * read back intact. */
Test(records, records_straddling_the_wrap)
{
	struct bb_options o = { .segment_size = 4096, .segment_count = 1 };
	int straddled = 0;
	pthread_t th;

	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_write_str("the only segment is ours"), 0);
	cr_assert_eq(pthread_create(&th, NULL, straddle_writer, &straddled), 0);
	pthread_join(th, NULL);
	cr_assert_gt(straddled, 5, "only %d records straddled the wrap", straddled);
}

/*
 * bb_write_kvn() records exactly the bytes it is given (no NUL needed, a
 * NUL inside kept; NULL with a length is -EINVAL), and bb_write_kv() - a macro over it in <blackbox.h> -
 * behaves as the function did: literal and run-time strings, NULL rejected,
 * the exported function callable by name and through a pointer.
 */
Test(records, kvn_lengths_and_the_kv_macro)
{
	const char buf[] = "user-idXXXX";          /* key: the first 7 bytes */
	const char val[] = { 'a', '\0', 'b', 'c' };  /* 4 bytes, NUL inside, no terminator */
	char dyn[32];
	int (*fn)(const char *, const char *) = bb_write_kv;
	struct tcollect c;
	struct trec *t;

	snprintf(dyn, sizeof(dyn), "v%d", 42);
	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_write_kvn(buf, 7, val, sizeof(val)), 0);
	cr_assert_eq(bb_write_kvn("k", 1, "", 0), 0);
	cr_assert_eq(bb_write_kvn(NULL, 1, "v", 1), -EINVAL);
	cr_assert_eq(bb_write_kvn("k", 1, NULL, 1), -EINVAL);
	cr_assert_eq(bb_write_kv("lit", dyn), 0);         /* the macro */
	cr_assert_eq((bb_write_kv)(dyn, "lit"), 0);       /* the function */
	cr_assert_eq(fn("ptr", dyn), 0);
	cr_assert_eq(bb_write_kv((const char *)NULL, dyn), -EINVAL);

	tcollect_path(path, &c);
	cr_assert_eq(c.n, 5, "got %zu records", c.n);
	t = c.r;
	cr_assert_eq(t[0].tag, BB_TAG_KV);
	cr_assert_str_eq(t[0].key, "user-id");
	cr_assert_eq(t[0].vtype, BB_TYPE_STR);
	cr_assert_eq(t[0].n, 4);
	cr_assert_eq(memcmp(t[0].text, val, 4), 0);
	cr_assert_str_eq(t[1].key, "k");
	cr_assert_eq(t[1].n, 0);
	cr_assert_str_eq(t[2].key, "lit"); cr_assert_str_eq(t[2].text, "v42");
	cr_assert_str_eq(t[3].key, "v42"); cr_assert_str_eq(t[3].text, "lit");
	cr_assert_str_eq(t[4].key, "ptr"); cr_assert_str_eq(t[4].text, "v42");
	for (size_t i = 0; i < c.n; i++)
		cr_assert_eq(c.r[i].flags & BB_RF_TRUNCATED, 0);
	free(c.r);
}

/*
 * The length-taking writers record exactly the bytes they are given, from
 * buffers with no terminator (a std::string_view's): bb_write_strn(), the
 * typed bb_write_kvn_i64/_u64/_f64/_bool() and bb_write_kvn_important().
 * A NULL string is the empty string with a zero length, -EINVAL with a
 * length.
 */
Test(records, length_taking_writers_need_no_terminator)
{
	const char key[] = { 'k', 'e', 'y', '-', 'x', 'y', 'z' };  /* no NUL anywhere */
	const char val[] = { 'a', '\0', 'b' };
	struct tcollect c;
	struct trec *t;

	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_write_strn(val, sizeof(val)), 0);
	cr_assert_eq(bb_write_strn(key, 3), 0);
	cr_assert_eq(bb_write_strn(key, 0), 0);
	cr_assert_eq(bb_write_kvn_i64(key, 3, -7), 0);
	cr_assert_eq(bb_write_kvn_u64(key, 5, UINT64_MAX), 0);
	cr_assert_eq(bb_write_kvn_f64(key, 4, 0.5), 0);
	cr_assert_eq(bb_write_kvn_bool(key, 7, true), 0);
	cr_assert_eq(bb_write_kvn_important(key, 3, val, sizeof(val)), 0);
	/* NULL with a zero length is the empty string (a default
	 * std::string_view's data()); with a length, -EINVAL. */
	cr_assert_eq(bb_write_strn(NULL, 0), 0);
	cr_assert_eq(bb_write_kvn(NULL, 0, NULL, 0), 0);
	cr_assert_eq(bb_write_kvn_i64(NULL, 0, 1), 0);
	cr_assert_eq(bb_write_strn(NULL, 1), -EINVAL);
	cr_assert_eq(bb_write_kvn_i64(NULL, 1, 1), -EINVAL);
	cr_assert_eq(bb_write_kvn_u64(NULL, 1, 1), -EINVAL);
	cr_assert_eq(bb_write_kvn_f64(NULL, 1, 1), -EINVAL);
	cr_assert_eq(bb_write_kvn_bool(NULL, 1, true), -EINVAL);
	cr_assert_eq(bb_write_kvn_important(NULL, 1, "v", 1), -EINVAL);
	cr_assert_eq(bb_write_kvn_important("k", 1, NULL, 1), -EINVAL);

	tcollect_path(path, &c);
	cr_assert_eq(c.n, 11, "got %zu records", c.n);
	t = c.r;
	cr_assert_eq(t[0].tag, BB_TAG_STR);
	cr_assert_eq(t[0].n, 3);
	cr_assert_eq(memcmp(t[0].text, val, 3), 0);
	cr_assert_str_eq(t[1].text, "key");
	cr_assert_eq(t[2].n, 0);
	cr_assert_eq(t[2].tag, BB_TAG_STR);
	cr_assert_str_eq(t[3].key, "key");
	cr_assert_eq(t[3].vtype, BB_TYPE_I64);
	cr_assert_eq(t[3].i, -7);
	cr_assert_str_eq(t[4].key, "key-x");
	cr_assert_eq(t[4].u, UINT64_MAX);
	cr_assert_str_eq(t[5].key, "key-");
	cr_assert_eq(t[5].f, 0.5);
	cr_assert_str_eq(t[6].key, "key-xyz");
	cr_assert_eq(t[6].vtype, BB_TYPE_BOOL);
	cr_assert(t[6].b);
	cr_assert_str_eq(t[7].key, "key");
	cr_assert_eq(t[7].n, 3);
	cr_assert_eq(memcmp(t[7].text, val, 3), 0);
	cr_assert(t[7].flags & BB_RF_IMPORTANT);
	cr_assert_eq(t[8].tag, BB_TAG_STR);
	cr_assert_eq(t[8].n, 0);
	cr_assert_str_eq(t[9].key, "");
	cr_assert_eq(t[9].n, 0);
	cr_assert_str_eq(t[10].key, "");
	cr_assert_eq(t[10].i, 1);
	for (size_t i = 0; i < c.n; i++)
		cr_assert_eq(c.r[i].flags & BB_RF_TRUNCATED, 0);
	free(c.r);
}
