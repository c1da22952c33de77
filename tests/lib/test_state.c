/* SPDX-License-Identifier: MIT */
/*
 * Description: the state table (bb_set family).  Set, overwrite, unset and
 * typed values; the documented bounds (-E2BIG, -ENOSPC, counted in the
 * header); writer threads against a reader that validates every slot with
 * the seqlock protocol and the CRC (never a torn slot); threads racing to
 * create the same keys (never two slots for one key); bb_set() from a
 * signal handler that interrupts bb_set() on the same key (-EBUSY, never a
 * deadlock); the table surviving SIGKILL.  Slots are decoded here from the
 * format.h layout, independently of the library.
 */
#include <cbor.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "crash_util.h"

TestSuite(state, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 120);

/* The box, mapped read-only like an outside reader would. */
struct view {
	const uint8_t *base;
	size_t len;
	const struct bb_header *h;
};

static void view_open(struct view *v, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(fstat(fd, &st), 0);
	v->len = (size_t)st.st_size;
	v->base = mmap(NULL, v->len, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(v->base, MAP_FAILED);
	close(fd);
	v->h = (const void *)v->base;
	cr_assert_eq(v->h->state_slot_count, BB_STATE_SLOTS);
	cr_assert(v->h->state_slot_size >= 64 && v->h->state_slot_size % 8 == 0);
	cr_assert_leq(v->h->state_table_offset + (uint64_t)v->h->state_slot_count * v->h->state_slot_size, v->len);
}

static void view_self(struct view *v)
{
	char path[4096];

	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	view_open(v, path);
}

/* One slot as a reader sees it. */
struct sv {
	int kind;            /* 0 busy/changed, 1 empty, 2 value */
	char key[BB_STATE_KEY_MAX + 1];
	cbor_item_t *val;    /* kind 2; caller decrefs */
};

/*
 * Seqlock read of slot @i: copy, acquire fence, re-read seq.  A stable copy
 * must be a valid slot: a bad length, tag, CRC or CBOR is a test failure
 * (returned as kind -1 so threads need no asserts).
 */
static int read_slot(const struct view *v, uint32_t i, struct sv *out)
{
	uint32_t size = v->h->state_slot_size;
	const uint8_t *s = v->base + v->h->state_table_offset + (uint64_t)i * size;
	_Atomic uint32_t *seqp = (_Atomic uint32_t *)(uintptr_t)s;
	uint8_t copy[1024];
	const struct bb_record_hdr *e = (const void *)copy;
	struct cbor_load_result res;
	cbor_item_t *a;
	uint32_t s1, s2;

	memset(out, 0, sizeof(*out));
	s1 = atomic_load_explicit(seqp, memory_order_acquire);
	if (s1 & 1u)
		return out->kind = 0;
	memcpy(copy, s, size < sizeof(copy) ? size : sizeof(copy));
	/* Orders the copy before the re-read (pairs with the writer's
	 * release fence after it made seq odd). */
	atomic_thread_fence(memory_order_acquire);
	s2 = atomic_load_explicit(seqp, memory_order_relaxed);
	if (s1 != s2)
		return out->kind = 0;
	if (e->len == 0)
		return out->kind = 1;
	if (e->len < BB_RECORD_HDR_SIZE + 4 || e->len > size || e->tag != BB_TAG_STATE ||
	    !(e->flags & BB_RF_CRC) || !bbt_record_crc_ok(s1, copy, e->len))
		return out->kind = -1;
	a = cbor_load(copy + BB_RECORD_HDR_SIZE, e->len - BB_RECORD_HDR_SIZE - 4, &res);
	if (!a || res.read != e->len - BB_RECORD_HDR_SIZE - 4u || !cbor_isa_array(a) ||
	    cbor_array_size(a) != 2 || !cbor_isa_string(cbor_array_handle(a)[0]) ||
	    cbor_string_length(cbor_array_handle(a)[0]) > BB_STATE_KEY_MAX) {
		if (a)
			cbor_decref(&a);
		return out->kind = -1;
	}
	memcpy(out->key, cbor_string_handle(cbor_array_handle(a)[0]),
	       cbor_string_length(cbor_array_handle(a)[0]));
	out->val = cbor_incref(cbor_array_handle(a)[1]);
	cbor_decref(&a);
	return out->kind = 2;
}

/* Find @key among stable slots (asserting none is invalid); returns how
 * many slots hold it, its value in *val (caller decrefs) if exactly one. */
static int find(const struct view *v, const char *key, cbor_item_t **val)
{
	int n = 0;

	if (val)
		*val = NULL;
	for (uint32_t i = 0; i < v->h->state_slot_count; i++) {
		struct sv s;

		cr_assert_geq(read_slot(v, i, &s), 0, "slot %u invalid", i);
		if (s.kind != 2)
			continue;
		if (!strcmp(s.key, key)) {
			n++;
			if (val && !*val) {
				*val = s.val;
				continue;
			}
		}
		cbor_decref(&s.val);
	}
	return n;
}

static void expect_str(const struct view *v, const char *key, const char *want)
{
	cbor_item_t *val;

	cr_assert_eq(find(v, key, &val), 1, "key %s", key);
	cr_assert(cbor_isa_string(val));
	cr_assert_eq(cbor_string_length(val), strlen(want));
	cr_assert(!memcmp(cbor_string_handle(val), want, strlen(want)), "key %s", key);
	cbor_decref(&val);
}

Test(state, set_overwrite_unset_and_typed_values)
{
	struct view v;
	cbor_item_t *val;

	cr_assert_eq(bb_init(0), 0);
	view_self(&v);
	cr_assert_eq(bb_set("request", "r-1"), 0);
	expect_str(&v, "request", "r-1");
	cr_assert_eq(bb_set("request", "r-2, longer"), 0);
	expect_str(&v, "request", "r-2, longer");
	cr_assert_eq(bb_set_i64("neg", -5), 0);
	cr_assert_eq(bb_set_u64("big", UINT64_MAX), 0);
	cr_assert_eq(bb_set_f64("ratio", 2.5), 0);
	cr_assert_eq(bb_set_bool("ready", true), 0);
	cr_assert_eq(bb_set("empty", ""), 0);

	cr_assert_eq(find(&v, "neg", &val), 1);
	cr_assert(cbor_isa_negint(val) && cbor_get_int(val) == 4);
	cbor_decref(&val);
	cr_assert_eq(find(&v, "big", &val), 1);
	cr_assert(cbor_isa_uint(val) && cbor_get_int(val) == UINT64_MAX);
	cbor_decref(&val);
	cr_assert_eq(find(&v, "ratio", &val), 1);
	cr_assert(cbor_isa_float_ctrl(val) && cbor_float_get_float(val) == 2.5);
	cbor_decref(&val);
	cr_assert_eq(find(&v, "ready", &val), 1);
	cr_assert(cbor_isa_float_ctrl(val) && cbor_get_bool(val));
	cbor_decref(&val);
	expect_str(&v, "empty", "");

	/* Type changes in place; unset removes; set again comes back. */
	cr_assert_eq(bb_set_i64("request", 42), 0);
	cr_assert_eq(find(&v, "request", &val), 1);
	cr_assert(cbor_isa_uint(val) && cbor_get_int(val) == 42);
	cbor_decref(&val);
	cr_assert_eq(bb_unset("request"), 0);
	cr_assert_eq(find(&v, "request", NULL), 0);
	cr_assert_eq(bb_unset("request"), 0, "unset twice is fine");
	cr_assert_eq(bb_unset("never-set"), -ENOENT);
	cr_assert_eq(bb_set("request", "r-3"), 0);
	expect_str(&v, "request", "r-3");
	cr_assert_eq(v.h->state_errors, 0);
	cr_assert_eq(bb_close(), 0);
	cr_assert_eq(bb_set("request", "r-4"), -ENODEV);
}

/* The length-taking setters take keys and values without a terminator,
 * and the same bounds: bb_setn(), bb_setn_i64/_u64/_f64/_bool(),
 * bb_unsetn().  NULL with a zero length is the empty string. */
/* The program's release: bb_options.release, else BLACKBOX_RELEASE, as the
 * state key "release" (what bb-reap sends as BB_RELEASE); too long is an
 * error, not a cut. */
Test(state, release_from_options_or_environment)
{
	char longest[BB_RELEASE_MAX + 2];
	struct bb_options o = { .release = "1.4.3" };
	struct view v;

	setenv("BLACKBOX_RELEASE", "from-env", 1);
	cr_assert_eq(bb_init_opts(&o), 0);
	view_self(&v);
	expect_str(&v, "release", "1.4.3");
	cr_assert_eq(bb_close(), 0);

	cr_assert_eq(bb_init(0), 0);
	view_self(&v);
	expect_str(&v, "release", "from-env");
	cr_assert_eq(bb_close(), 0);

	memset(longest, 'r', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	o.release = longest;
	cr_assert_eq(bb_init_opts(&o), -EINVAL);
	longest[BB_RELEASE_MAX] = '\0';
	cr_assert_eq(bb_init_opts(&o), 0);
	view_self(&v);
	expect_str(&v, "release", longest);
	unsetenv("BLACKBOX_RELEASE");
}

Test(state, length_taking_setters_need_no_terminator)
{
	char key[BB_STATE_KEY_MAX + 1], val[BB_STATE_VALUE_MAX + 1];
	struct view v;
	cbor_item_t *got;

	cr_assert_eq(bb_setn("k", 1, "v", 1), -ENODEV);
	cr_assert_eq(bb_init(0), 0);
	view_self(&v);
	memset(key, 'k', sizeof(key));
	memset(val, 'v', sizeof(val));
	cr_assert_eq(bb_setn("request-id", 7, "r-1 and more", 3), 0);
	expect_str(&v, "request", "r-1");
	cr_assert_eq(bb_setn_i64("neg-x", 3, -5), 0);
	cr_assert_eq(bb_setn_u64("big-x", 3, UINT64_MAX), 0);
	cr_assert_eq(bb_setn_f64("ratio-x", 5, 2.5), 0);
	cr_assert_eq(bb_setn_bool("ready-x", 5, true), 0);
	cr_assert_eq(find(&v, "neg", &got), 1);
	cr_assert(cbor_isa_negint(got) && cbor_get_int(got) == 4);
	cbor_decref(&got);
	cr_assert_eq(find(&v, "big", &got), 1);
	cr_assert(cbor_isa_uint(got) && cbor_get_int(got) == UINT64_MAX);
	cbor_decref(&got);
	cr_assert_eq(find(&v, "ratio", &got), 1);
	cr_assert(cbor_isa_float_ctrl(got) && cbor_float_get_float(got) == 2.5);
	cbor_decref(&got);
	cr_assert_eq(find(&v, "ready", &got), 1);
	cr_assert(cbor_isa_float_ctrl(got) && cbor_get_bool(got));
	cbor_decref(&got);
	/* The maxima, from buffers with no terminator; one byte more is
	 * -E2BIG, counted. */
	cr_assert_eq(bb_setn(key, BB_STATE_KEY_MAX, val, BB_STATE_VALUE_MAX), 0);
	cr_assert_eq(bb_setn(key, BB_STATE_KEY_MAX + 1, "v", 1), -E2BIG);
	cr_assert_eq(bb_setn("k", 1, val, BB_STATE_VALUE_MAX + 1), -E2BIG);
	cr_assert_eq(bb_setn_i64(key, BB_STATE_KEY_MAX + 1, 1), -E2BIG);
	cr_assert_eq(v.h->state_errors, 3);
	/* NULL: the empty string with a zero length, else -EINVAL. */
	cr_assert_eq(bb_setn(NULL, 1, "v", 1), -EINVAL);
	cr_assert_eq(bb_setn("k", 1, NULL, 1), -EINVAL);
	cr_assert_eq(bb_setn_bool(NULL, 1, true), -EINVAL);
	cr_assert_eq(bb_unsetn(NULL, 1), -EINVAL);
	cr_assert_eq(bb_setn("empty", 5, NULL, 0), 0);
	expect_str(&v, "empty", "");
	cr_assert_eq(bb_unsetn("request-id", 7), 0);
	cr_assert_eq(find(&v, "request", NULL), 0);
	cr_assert_eq(bb_unsetn("never", 5), -ENOENT);
	cr_assert_eq(bb_close(), 0);
}

Test(state, bounds_are_errors_and_counted)
{
	char key[BB_STATE_KEY_MAX + 2], val[BB_STATE_VALUE_MAX + 2];
	struct view v;
	int ok = 0;

	cr_assert_eq(bb_set("x", "y"), -ENODEV, "no box yet");
	cr_assert_eq(bb_init(0), 0);
	view_self(&v);
	memset(key, 'k', sizeof(key));
	memset(val, 'v', sizeof(val));
	key[BB_STATE_KEY_MAX] = '\0';
	val[BB_STATE_VALUE_MAX] = '\0';
	cr_assert_eq(bb_set(key, val), 0, "the maxima fit");
	expect_str(&v, key, val);
	key[BB_STATE_KEY_MAX] = 'k';
	key[BB_STATE_KEY_MAX + 1] = '\0';
	cr_assert_eq(bb_set(key, "v"), -E2BIG);
	cr_assert_eq(bb_set_i64(key, 1), -E2BIG);
	val[BB_STATE_VALUE_MAX] = 'v';
	val[BB_STATE_VALUE_MAX + 1] = '\0';
	cr_assert_eq(bb_set("k", val), -E2BIG);
	cr_assert_eq(bb_set(NULL, "v"), -EINVAL);
	cr_assert_eq(bb_set("k", NULL), -EINVAL);
	cr_assert_eq(v.h->state_errors, 3);

	/* The table holds BB_STATE_SLOTS keys (one is the long key above). */
	for (int i = 0; i < 1000; i++) {
		char k[16];
		int ret;

		snprintf(k, sizeof(k), "key%d", i);
		ret = bb_set_i64(k, i);
		if (ret == -ENOSPC)
			break;
		cr_assert_eq(ret, 0);
		ok++;
	}
	cr_assert_eq(ok + 1, BB_STATE_SLOTS);
	cr_assert_eq(v.h->state_errors, 4);
	cr_assert_eq(bb_set_i64("key0", -1), 0, "existing keys still update when full");
	cr_assert_eq(bb_unset("key1"), 0);
	cr_assert_eq(bb_set("another", "v"), -ENOSPC, "a key keeps its slot after unset");
	cr_assert_eq(bb_set("key1", "back"), 0);
	expect_str(&v, "key1", "back");
	cr_assert_eq(v.h->state_errors, 5);
}

/* ---- threads ------------------------------------------------------------- */

#define NTHREADS 4
#define ROUNDS   20000
#define NRACE    20

static pthread_barrier_t go;
static atomic_int thread_errors;   /* unexpected return values */
static atomic_int stop_reader;

/* Value of writer @t in round @i: "t:i:" then a letter repeated, so a
 * reader can check that a copy is not a mix of two writes. */
static void make_val(char *buf, int t, int i)
{
	int n = snprintf(buf, 128, "%d:%d:", t, i);

	memset(buf + n, 'a' + (i % 26), (size_t)(120 - n));
	buf[120] = '\0';
}

static bool val_consistent(const cbor_item_t *val)
{
	char buf[161] = "";
	int t, i, n = 0;
	size_t len;

	if (!cbor_isa_string(val) || cbor_string_length(val) != 120)
		return false;
	len = cbor_string_length(val);
	memcpy(buf, cbor_string_handle(val), len);
	if (sscanf(buf, "%d:%d:%n", &t, &i, &n) != 2 || n == 0)
		return false;
	for (size_t k = (size_t)n; k < len; k++)
		if (buf[k] != 'a' + (i % 26))
			return false;
	return true;
}

static int set_retry(const char *key, const char *val)
{
	int ret;

	/* -EBUSY is the documented answer to a concurrent writer of the
	 * slot; retrying is the caller's choice. */
	while ((ret = bb_set(key, val)) == -EBUSY)
		sched_yield();
	return ret;
}

static void *writer(void *arg)
{
	int t = (int)(intptr_t)arg;
	char key[16], val[128];

	snprintf(key, sizeof(key), "t%d", t);
	pthread_barrier_wait(&go);
	/* Every thread creates the same new keys in the same order. */
	for (int r = 0; r < NRACE; r++) {
		char rk[16];

		snprintf(rk, sizeof(rk), "race%d", r);
		make_val(val, t, r);
		if (set_retry(rk, val) != 0)
			atomic_fetch_add(&thread_errors, 1);
	}
	for (int i = 0; i < ROUNDS; i++) {
		int ret;

		make_val(val, t, i);
		if (set_retry(key, val) != 0)
			atomic_fetch_add(&thread_errors, 1);
		ret = bb_set("shared", val);
		if (ret != 0 && ret != -EBUSY)
			atomic_fetch_add(&thread_errors, 1);
	}
	make_val(val, t, ROUNDS);
	if (set_retry(key, val) != 0)
		atomic_fetch_add(&thread_errors, 1);
	return NULL;
}

Test(state, threads_never_show_a_torn_slot_nor_a_duplicate_key)
{
	pthread_t th[NTHREADS];
	struct view v;
	long stable = 0, busy = 0;

	cr_assert_eq(bb_init(0), 0);
	view_self(&v);
	cr_assert_eq(pthread_barrier_init(&go, NULL, NTHREADS + 1), 0);
	for (int t = 0; t < NTHREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t), 0);
	pthread_barrier_wait(&go);

	/* Read while they write: every stable copy is a whole slot. */
	for (int pass = 0; pass < 2000; pass++) {
		for (uint32_t i = 0; i < BB_STATE_SLOTS; i++) {
			struct sv s;
			int k = read_slot(&v, i, &s);

			cr_assert_geq(k, 0, "slot %u: a stable copy failed validation", i);
			busy += k == 0;
			if (k != 2)
				continue;
			stable++;
			if (strncmp(s.key, "t", 1) == 0 || strncmp(s.key, "race", 4) == 0 ||
			    strcmp(s.key, "shared") == 0)
				cr_assert(val_consistent(s.val), "slot %u (%s): mixed value", i, s.key);
			cbor_decref(&s.val);
		}
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	cr_assert_eq(atomic_load(&thread_errors), 0);
	cr_assert_gt(stable, 0);
	cr_log_info("reader: %ld stable slot copies, %ld busy or changed", stable, busy);

	for (int r = 0; r < NRACE; r++) {
		char rk[16];

		snprintf(rk, sizeof(rk), "race%d", r);
		cr_assert_eq(find(&v, rk, NULL), 1, "%s: one slot, whoever won", rk);
	}
	for (int t = 0; t < NTHREADS; t++) {
		char key[16], val[128];

		snprintf(key, sizeof(key), "t%d", t);
		make_val(val, t, ROUNDS);
		expect_str(&v, key, val);
	}
	cr_assert_eq(find(&v, "shared", NULL), 1);
}

/* ---- signal handler ------------------------------------------------------ */

static volatile sig_atomic_t h_ok, h_busy, h_other;

static void on_usr1(int sig)
{
	int ret = bb_set("k", "from the handler");

	(void)sig;
	if (ret == 0)
		h_ok++;
	else if (ret == -EBUSY)
		h_busy++;
	else
		h_other++;
}

static pthread_t main_thread;

static void *pester(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_reader)) {
		pthread_kill(main_thread, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

Test(state, handler_interrupting_bb_set_on_the_same_key_gets_ebusy)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	char val[BB_STATE_VALUE_MAX + 1];
	pthread_t p;
	struct view v;
	cbor_item_t *cur;
	long calls = 0;

	memset(val, 'm', BB_STATE_VALUE_MAX);
	val[BB_STATE_VALUE_MAX] = '\0';
	cr_assert_eq(bb_init(0), 0);
	view_self(&v);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	main_thread = pthread_self();
	cr_assert_eq(pthread_create(&p, NULL, pester, NULL), 0);
	/* Until the handler has both found the slot busy (it interrupted us
	 * inside bb_set) and free; bounded by a call count, not a clock. */
	while ((h_busy == 0 || h_ok == 0) && calls < 50000000) {
		cr_assert_eq(bb_set("k", val), 0, "the handler never leaves the slot busy");
		calls++;
	}
	atomic_store(&stop_reader, 1);
	pthread_join(p, NULL);
	cr_log_info("%ld calls, handler: %d ok, %d busy", calls, (int)h_ok, (int)h_busy);
	cr_assert_eq(h_other, 0);
	cr_assert_gt(h_busy, 0, "the handler never interrupted bb_set() in its slot");
	cr_assert_gt(h_ok, 0);
	cr_assert_eq(find(&v, "k", &cur), 1);
	cr_assert(cbor_isa_string(cur));
	cbor_decref(&cur);
	cr_assert_geq(v.h->state_errors, (uint64_t)h_busy);
}

/* ---- SIGKILL --------------------------------------------------------------- */

Test(state, survives_sigkill)
{
	struct bb_reader *r;
	struct view v;
	cbor_item_t *val;
	char buf[16] = "", err[256];
	int fd, st;
	pid_t pid = tspawn("state", "7", NULL, &fd);
	FILE *f = fdopen(fd, "r");

	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_str_eq(buf, "ready\n");
	fclose(f);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

	cr_assert_eq(bb_reader_open_pid(pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	view_open(&v, bb_reader_info(r)->path);
	bb_reader_close(r);
	expect_str(&v, "request", "req-7");
	cr_assert_eq(find(&v, "n", &val), 1);
	cr_assert(cbor_isa_uint(val) && cbor_get_int(val) == 7);
	cbor_decref(&val);
	cr_assert_eq(find(&v, "ok", &val), 1);
	cr_assert(cbor_get_bool(val));
	cbor_decref(&val);
	cr_assert_eq(find(&v, "gone", NULL), 0);
}
