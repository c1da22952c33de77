/* SPDX-License-Identifier: MIT */
/*
 * Description: the crash handler with real crashes in real processes
 * (tests/lib/child.c "crash" modes): SIGSEGV, SIGBUS, abort(), a stack
 * overflow, a fault inside bb_write_bytes(), abort() in an application
 * handler that interrupted a write, and chaining to an application handler
 * installed before bb_init().  Each kind runs twice, with the handler off
 * (BLACKBOX_CRASH_HANDLER=0) and on: the wait status must be identical;
 * with it on, the header says CRASHED with the signal and the crash area
 * holds a complete, CRC-valid record with the right signal, code, address,
 * thread and >= 2 frames, one inside the main program's range in the
 * module area.
 */
#include <cbor.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "crash_util.h"

TestSuite(crash, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 120);

struct run {
	pid_t pid;
	int status;
	char out[1024];
	uint64_t addr;     /* from the child's "addr 0x..." line */
};

/* Run tests/lib/child crash @kind with the handler @on or off. */
static void run_child(const char *kind, bool on, struct run *r)
{
	size_t got = 0;
	ssize_t n;
	int fd;
	char *a;

	r->pid = tspawn("crash", kind, on ? "1" : "0", &fd);
	while ((n = read(fd, r->out + got, sizeof(r->out) - 1 - got)) > 0)
		got += (size_t)n;
	r->out[got] = '\0';
	close(fd);
	cr_assert_eq(waitpid(r->pid, &r->status, 0), r->pid);
	a = strstr(r->out, "addr ");
	cr_assert_not_null(a, "child said: %s", r->out);
	r->addr = strncmp(a + 5, "(nil)", 5) ? strtoull(a + 5, NULL, 16) : 0;
}

struct crash {
	int64_t signal, code, tid;
	uint64_t addr, sp;
	bool has_addr, has_sp;
	char kind[16];
	char reason[512];
	char thread[32];
	uint64_t frames[256];
	size_t nframes;
	int keys;
};

static int64_t int_of(cbor_item_t *it)
{
	if (cbor_isa_uint(it))
		return (int64_t)cbor_get_int(it);
	cr_assert(cbor_isa_negint(it));
	return -1 - (int64_t)cbor_get_int(it);
}

static void text_of(cbor_item_t *it, char *out, size_t len)
{
	cr_assert(cbor_isa_string(it) && cbor_string_length(it) < len);
	memcpy(out, cbor_string_handle(it), cbor_string_length(it));
	out[cbor_string_length(it)] = '\0';
}

/* Validate and decode the crash area like a reader must (with libcbor,
 * independently of the library's reader). */
static void decode_crash(const struct bb_header *h, struct crash *c)
{
	const struct bb_record_hdr *e = (const void *)h->crash;
	struct cbor_load_result res;
	cbor_item_t *m;

	memset(c, 0, sizeof(*c));
	cr_assert_eq(e->seq, BB_CRASH_SEQ_DONE, "crash area seq %u", e->seq);
	cr_assert_eq(e->tag, BB_TAG_CRASH);
	cr_assert(e->flags & BB_RF_CRC);
	cr_assert(e->len > BB_RECORD_HDR_SIZE + BB_CRC_SIZE && e->len <= BB_CRASH_SIZE, "len %u", e->len);
	cr_assert(bbt_record_crc_ok(BB_CRASH_SEQ_DONE, h->crash, e->len), "crash record CRC");
	m = cbor_load(h->crash + BB_RECORD_HDR_SIZE, e->len - BB_RECORD_HDR_SIZE - BB_CRC_SIZE, &res);
	cr_assert_not_null(m);
	cr_assert_eq(res.read, e->len - BB_RECORD_HDR_SIZE - BB_CRC_SIZE, "value fills the record");
	cr_assert(cbor_isa_map(m));
	for (size_t i = 0; i < cbor_map_size(m); i++) {
		struct cbor_pair pr = cbor_map_handle(m)[i];
		char key[16] = "";

		text_of(pr.key, key, sizeof(key));
		c->keys++;
		if (!strcmp(key, "kind"))
			text_of(pr.value, c->kind, sizeof(c->kind));
		else if (!strcmp(key, "signal"))
			c->signal = int_of(pr.value);
		else if (!strcmp(key, "code"))
			c->code = int_of(pr.value);
		else if (!strcmp(key, "addr"))
			c->addr = (uint64_t)int_of(pr.value), c->has_addr = true;
		else if (!strcmp(key, "sp"))
			c->sp = (uint64_t)int_of(pr.value), c->has_sp = true;
		else if (!strcmp(key, "tid"))
			c->tid = int_of(pr.value);
		else if (!strcmp(key, "thread"))
			text_of(pr.value, c->thread, sizeof(c->thread));
		else if (!strcmp(key, "reason"))
			text_of(pr.value, c->reason, sizeof(c->reason));
		else if (!strcmp(key, "frames")) {
			cr_assert(cbor_isa_array(pr.value));
			c->nframes = cbor_array_size(pr.value);
			cr_assert_leq(c->nframes, 128, "at most 64 + 64 frames kept");
			for (size_t k = 0; k < c->nframes; k++)
				c->frames[k] = (uint64_t)int_of(cbor_array_handle(pr.value)[k]);
		} else if (!strcmp(key, "omitted") || !strcmp(key, "trampolines")) {
			cr_assert(cbor_isa_array(pr.value));   /* checked through the reader */
		} else {
			cr_assert_fail("unknown key %s", key);
		}
	}
	cbor_decref(&m);
}

/* The main program's [start, end) and path from the module area. */
static void main_module(const uint8_t *box, size_t len, uint64_t *start, uint64_t *end, char *path, size_t plen)
{
	const struct bb_header *h = (const void *)box;
	const struct bb_modules_hdr *mh;
	struct cbor_load_result res;
	cbor_item_t *a, *m0;

	cr_assert(h->modules_size > sizeof(*mh) && h->modules_offset + h->modules_size <= len);
	mh = (const void *)(box + h->modules_offset);
	cr_assert_eq(mh->seq % 2, 0);
	cr_assert(mh->seq >= 2 && mh->len <= h->modules_size - sizeof(*mh) && mh->count >= 2);
	a = cbor_load(box + h->modules_offset + sizeof(*mh), mh->len, &res);
	cr_assert_not_null(a);
	cr_assert_eq(res.read, mh->len);
	cr_assert(cbor_isa_array(a) && cbor_array_size(a) == mh->count);
	m0 = cbor_array_handle(a)[0];
	cr_assert(cbor_isa_array(m0) && cbor_array_size(m0) == 5);
	cr_assert(cbor_isa_string(cbor_array_handle(m0)[0]));
	cr_assert_lt(cbor_string_length(cbor_array_handle(m0)[0]), plen);
	memset(path, 0, plen);
	memcpy(path, cbor_string_handle(cbor_array_handle(m0)[0]), cbor_string_length(cbor_array_handle(m0)[0]));
	*start = (uint64_t)int_of(cbor_array_handle(m0)[2]);
	*end = (uint64_t)int_of(cbor_array_handle(m0)[3]);
	cr_assert(cbor_isa_bytestring(cbor_array_handle(m0)[4]));
	cr_assert_geq(cbor_bytestring_length(cbor_array_handle(m0)[4]), 8, "main program has a build id");
	cbor_decref(&a);
}

static int count_cb(const struct bb_record *rec, void *arg)
{
	(void)rec;
	++*(int *)arg;
	return 0;
}

/* What check_crash_in() saw, for the checks particular to a kind. */
struct seen {
	struct run on;
	struct bb_crash rc;   /* the library's reader's view of the record */
	uint64_t start, end;  /* the main program's address range */
	uint64_t torn;        /* records torn by the crash */
};

static bool in_range(uint64_t a, const struct seen *v)
{
	return a >= v->start && a < v->end;
}

/*
 * One kind of crash: same wait status with and without the handler; the
 * record as described at the top, decoded with libcbor and by the
 * library's reader.  @thread: the name of the thread that crashed (NULL:
 * the main thread).
 */
static void check_crash_in(const char *kind, int sig, int64_t code, bool addr_exact,
			   const char *thread, struct seen *v)
{
	struct run off, *on = &v->on;
	struct bb_reader *r;
	const struct bb_box_info *info;
	const uint8_t *box;
	const struct bb_header *h;
	struct crash c;
	struct bb_stream_stats st;
	char err[256], path[4096];
	size_t len;
	bool in_main = false;
	int nrec = 0;

	run_child(kind, false, &off);
	run_child(kind, true, on);
	cr_assert(WIFSIGNALED(on->status) && WTERMSIG(on->status) == sig,
		  "%s: status %#x, output %s", kind, on->status, on->out);
	cr_assert_eq(on->status, off.status, "%s: status %#x with the handler, %#x without",
		     kind, on->status, off.status);
	cr_assert(!WCOREDUMP(on->status), "RLIMIT_CORE is 0: no core");

	/* Without the handler: no crash record, the box says nothing. */
	cr_assert_eq(bb_reader_open_pid(off.pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_info(r)->phase, BB_PHASE_RUNNING);
	h = bb_reader_data(r, &len);
	cr_assert_eq(((const struct bb_record_hdr *)(const void *)h->crash)->seq, BB_CRASH_SEQ_EMPTY);
	bb_reader_close(r);

	cr_assert_eq(bb_reader_open_pid(on->pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	info = bb_reader_info(r);
	cr_assert_eq(info->phase, BB_PHASE_CRASHED, "%s: phase %d", kind, info->phase);
	cr_assert_eq(info->phase_signal, sig);
	box = bb_reader_data(r, &len);
	cr_assert_geq(len, BB_HEADER_SIZE);
	decode_crash((const void *)box, &c);
	cr_assert_str_eq(c.kind, "signal");
	cr_assert_eq(c.signal, sig);
	cr_assert_eq(c.code, code, "%s: si_code %lld", kind, (long long)c.code);
	/* a fault address only where the kernel gave one */
	if (code <= 0 || code == SI_KERNEL)
		cr_assert_not(c.has_addr, "%s: a signal without a fault address has no addr", kind);
	else
		cr_assert(c.has_addr, "%s: a fault has its address", kind);
	if (addr_exact)
		cr_assert_eq(c.addr, on->addr, "%s: addr %#llx, expected %#llx", kind,
			     (unsigned long long)c.addr, (unsigned long long)on->addr);
#if defined(__x86_64__) || defined(__aarch64__)
	cr_assert(c.has_sp && c.sp, "%s: the stack pointer is recorded", kind);
#endif
	if (thread) {
		/* A second thread crashed: its tid (the child printed it) and
		 * its name, not the process's. */
		const char *t = strstr(on->out, "tid ");

		cr_assert_not_null(t, "child said: %s", on->out);
		cr_assert_eq(c.tid, strtoll(t + 4, NULL, 10), "%s: tid %lld", kind, (long long)c.tid);
		cr_assert_neq(c.tid, on->pid);
		cr_assert_str_eq(c.thread, thread);
	} else {
		cr_assert_eq(c.tid, on->pid, "the main thread crashed");
		cr_assert_str_eq(c.thread, info->comm);
	}
	cr_assert_geq(c.nframes, 2, "%s: %zu frames", kind, c.nframes);
	main_module(box, len, &v->start, &v->end, path, sizeof(path));
	cr_assert(strstr(path, "bb-test-child"), "main module %s", path);
	for (size_t i = 0; i < c.nframes; i++)
		in_main |= in_range(c.frames[i], v);
	cr_assert(in_main, "%s: no frame in the main program [%#llx, %#llx)", kind,
		  (unsigned long long)v->start, (unsigned long long)v->end);

	/* The library's reader agrees; frame 0 is the interrupted
	 * instruction, not a return address. */
	cr_assert_eq(bb_reader_crash(r, &v->rc), 0);
	cr_assert_eq(v->rc.status, BB_CRASH_COMPLETE, "%s", v->rc.problem);
	cr_assert_eq(v->rc.kind, BB_CRASH_KIND_SIGNAL);
	cr_assert_eq(v->rc.nframes, c.nframes);
	cr_assert_eq(v->rc.frames[0], c.frames[0]);
	cr_assert(v->rc.frame_flags[0] & BB_CRASH_FRAME_EXACT);

	/* The records before the crash are intact; one interrupted by it
	 * (if any) is torn, never data. */
	cr_assert_eq(bb_reader_walk(r, 0, count_cb, &nrec), 0);
	bb_reader_total_stats(r, &st);
	cr_assert_geq(nrec, 1, "'before' is there");
	cr_assert_eq(st.corrupt, 0);
	v->torn = st.torn;
	bb_reader_close(r);
}

static uint64_t check_crash(const char *kind, int sig, int64_t code, bool addr_exact)
{
	static struct seen v;

	check_crash_in(kind, sig, code, addr_exact, NULL, &v);
	cr_assert_not(v.rc.stack_overflow, "%s: not a stack overflow", kind);
	return v.torn;
}

Test(crash, segv_null_page)
{
	cr_assert_eq(check_crash("segv", SIGSEGV, SEGV_MAPERR, true), 0);
}

Test(crash, sigbus_truncated_mapping)
{
	cr_assert_eq(check_crash("bus", SIGBUS, BUS_ADRERR, true), 0);
}

Test(crash, abort)
{
	/* abort() raises with tgkill: SI_TKILL, no address. */
	cr_assert_eq(check_crash("abort", SIGABRT, SI_TKILL, true), 0);
}

Test(crash, glibc_assert_keeps_its_own_words)
{
	static struct seen v;
	const struct bb_crash *c = &v.rc;

	/* glibc's assert() aborts: a SIGABRT record whose reason is the
	 * assertion's message (glibc's __abort_msg): expression, file, line
	 * and function, as gdb shows them. */
	check_crash_in("assert", SIGABRT, SI_TKILL, false, NULL, &v);
	cr_assert_gt(c->reason_len, 0, "no reason in a SIGABRT record of a failed assert");
	cr_assert(strstr(c->reason, "Assertion `never > 0' failed"), "reason: %s", c->reason);
	cr_assert(strstr(c->reason, "child.c:"), "reason: %s", c->reason);
	cr_assert(strstr(c->reason, ": crash: "), "the function: %s", c->reason);
	cr_assert_neq(c->reason[c->reason_len - 1], '\n');
}

Test(crash, abort_without_assert_has_no_reason)
{
	static struct seen v;

	check_crash_in("abort", SIGABRT, SI_TKILL, false, NULL, &v);
	cr_assert_eq(v.rc.reason_len, 0, "reason: %s", v.rc.reason);
}

Test(crash, segv_in_a_second_thread)
{
	static struct seen v;

	/* The record names the thread that faulted (tid and name), and the
	 * process dies of it as it would without the handler. */
	check_crash_in("thread", SIGSEGV, SEGV_MAPERR, true, "crasher", &v);
	cr_assert_eq(v.torn, 0);
}

#if defined(__x86_64__)
Test(crash, sigfpe_integer_division_by_zero)
{
	cr_assert_eq(check_crash("fpe", SIGFPE, FPE_INTDIV, false), 0);
}

Test(crash, sigill_undefined_instruction)
{
	cr_assert_eq(check_crash("ill", SIGILL, ILL_ILLOPN, false), 0);
}

Test(crash, sigtrap_breakpoint)
{
	/* int3 is a trap, not a fault: the instruction is not executed
	 * again on return, so the handler must raise the signal again
	 * itself for the process to die of it. si_code SI_KERNEL, which
	 * carries no address. */
	cr_assert_eq(check_crash("trap", SIGTRAP, SI_KERNEL, false), 0);
}
#endif

Test(crash, stack_overflow_on_the_alternate_stack)
{
	static struct seen v;
	const struct bb_crash *c = &v.rc;
	bool outside = false;

	/* Without an alternate stack the kernel cannot run the handler and
	 * kills the process: no record, and check_crash_in() fails. */
	check_crash_in("overflow", SIGSEGV, SEGV_MAPERR, false, NULL, &v);
	cr_assert_eq(v.torn, 0);
	/* The reader labels it: the fault is next to the stack pointer. */
	cr_assert(c->stack_overflow, "addr %#llx sp %#llx", (unsigned long long)c->addr,
		  (unsigned long long)c->sp);
	/* Thousands of recursive frames: the innermost 64 and the outermost
	 * 64 are kept, the rest counted, so the record still ends where the
	 * thread started (_start in the program, libc's start-up before
	 * it), not in the middle of the recursion. */
	cr_assert_eq(c->nframes, 128);
	cr_assert_eq(c->omitted_at, 64);
	cr_assert_gt(c->frames_omitted, 1000, "%u frames left out", c->frames_omitted);
	cr_assert_eq(c->frames[1], c->frames[63], "the recursion's return address repeats");
	cr_assert(in_range(c->frames[127], &v), "the outermost frame is _start");
	for (uint32_t i = 124; i < 127; i++)
		outside |= !in_range(c->frames[i], &v);
	cr_assert(outside, "libc's start-up frames are among the outermost ones");
}

Test(crash, stack_overflow_in_a_thread_that_only_called_bb_thread_init)
{
	static struct seen v;

	/* A pool thread that never wrote: bb_thread_init() gave it its
	 * alternate stack, so its overflow leaves a record naming it
	 * (SEGV_ACCERR: a thread's stack ends in a guard page that is
	 * mapped, where the main thread's ends in nothing). */
	check_crash_in("pool-overflow", SIGSEGV, SEGV_ACCERR, false, "pool-worker", &v);
	cr_assert(v.rc.stack_overflow, "addr %#llx sp %#llx", (unsigned long long)v.rc.addr,
		  (unsigned long long)v.rc.sp);
}

Test(crash, stack_overflow_in_a_thread_that_never_called_the_library)
{
	static struct seen v;

	/* The thread was started after bb_init() by pthread_create(), which
	 * libblackbox's own (thread_start.c) gave an alternate stack. */
	check_crash_in("silent-overflow", SIGSEGV, SEGV_ACCERR, false, "silent-worker", &v);
	cr_assert(v.rc.stack_overflow, "addr %#llx sp %#llx", (unsigned long long)v.rc.addr,
		  (unsigned long long)v.rc.sp);
}

/* A frame of @st lies in [@fn, @end): the function at @fn (the child
 * printed the addresses; @end the next of them, or fn + 1 KiB). */
static bool stack_names(const struct bb_crash *st, uint64_t fn, uint64_t end)
{
	for (uint32_t k = 0; k < st->nframes; k++)
		if (st->frames[k] >= fn && st->frames[k] < end)
			return true;
	return false;
}

/*
 * Run child crash @kind: the main thread faults while three threads are
 * blocked in a read, a condition wait and a sleep, with @idle more idle
 * ones.  The crash record is the main thread's; each of the three answered
 * with its own stack, which names the function it was blocked in; the box
 * counts every thread (the three, the idle ones and the main one).
 */
static void check_every_thread(const char *kind, uint32_t idle)
{
	static struct seen v;
	static const char *fns[] = { "blocked_in_read", "in_cond_wait", "in_nanosleep" };
	static const char *names[] = { "reader", "waiter", "sleeper" };
	struct bb_reader *r;
	struct bb_crash st;
	uint32_t slots, asked, threads, found = 0, answered = 0;
	uint64_t addr[3];
	char err[256];

	check_crash_in(kind, SIGSEGV, SEGV_MAPERR, true, NULL, &v);
	cr_assert_eq(bb_reader_open_pid(v.on.pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_crash_stacks(r, &slots, &asked), 0);
	cr_assert_eq(bb_reader_crash_threads(r, &threads), 0);
	cr_assert_eq(threads, 4 + idle, "threads at the crash: %u", threads);
	cr_assert_eq(asked, 3 + idle, "every other thread was asked: %u", asked);
	/* the default 4 MiB box: 256 slots */
	cr_assert_eq(slots, BB_CRASH_SLOTS_MAX);
	cr_assert_eq(bb_reader_crash_stack(r, slots, &st), -ENOENT);
	for (int k = 0; k < 3; k++) {
		const char *at = strstr(v.on.out, fns[k]);

		cr_assert_not_null(at, "%s", v.on.out);
		addr[k] = strtoull(at + strlen(fns[k]) + 1, NULL, 16);
	}
	for (uint32_t i = 0; i < slots; i++) {
		cr_assert_eq(bb_reader_crash_stack(r, i, &st), 0);
		if (i >= asked) {
			cr_assert_eq(st.status, BB_CRASH_NONE, "slot %u", i);
			continue;
		}
		/* Every slot asked names its thread; an idle thread that a
		 * loaded machine kept from answering within the bound says
		 * so.  The three below answer first (asked first). */
		cr_assert(st.status == BB_CRASH_COMPLETE || st.status == BB_CRASH_NO_ANSWER,
			  "stack %u: %s", i, st.problem);
		cr_assert_gt(st.tid, 0);
		cr_assert_neq(st.tid, v.on.pid);
		if (st.status != BB_CRASH_COMPLETE)
			continue;
		answered++;
		cr_assert_eq(st.kind, BB_CRASH_KIND_THREAD);
		cr_assert(st.frame_flags[0] & BB_CRASH_FRAME_EXACT);
		for (int k = 0; k < 3; k++) {
			uint64_t end = addr[k] + 1024;

			if (strcmp(st.thread, names[k]))
				continue;
			for (int o = 0; o < 3; o++)
				if (addr[o] > addr[k] && addr[o] < end)
					end = addr[o];
			cr_assert(stack_names(&st, addr[k], end), "thread %s: no frame in %s",
				  names[k], fns[k]);
			found |= 1u << k;
		}
	}
	cr_assert_eq(found, 7u, "stacks of threads found: %#x (%u answered)", found, answered);
	bb_reader_close(r);
}

Test(crash, every_threads_stack_at_a_crash)
{
	check_every_thread("threads", 0);
}

Test(crash, stacks_of_threads_that_never_called_the_library)
{
	/* Pool workers that never wrote: no thread slot, still asked (the
	 * process's threads are listed at the crash). */
	check_every_thread("silent-threads", 20);
}

Test(crash, more_threads_than_crash_stack_slots)
{
	/* 304 threads, 256 slots: the first 255 others asked, 48 counted as
	 * not asked, all 304 counted. */
	check_every_thread("many-threads", 300);
}

Test(crash, fault_inside_a_write_leaves_it_torn)
{
	/* SIGSEGV in the middle of bb_write_bytes()'s copy: the crash record
	 * is complete and the interrupted record is reported torn. */
	cr_assert_eq(check_crash("inwrite", SIGSEGV, SEGV_ACCERR, true), 1);
}

Test(crash, abort_in_a_handler_that_interrupted_a_write)
{
	static struct seen v;
	const struct bb_crash *c = &v.rc;
	int tramps = 0;

	/* The application's SIGSEGV handler (installed after bb_init, so it
	 * replaced ours) interrupted bb_write_bytes(), wrote a nested record
	 * and called abort(): recorded as SIGABRT, the write stays torn. */
	check_crash_in("handler", SIGABRT, SI_TKILL, false, NULL, &v);
	cr_assert_eq(v.torn, 1);
	/* The stack crosses the SIGSEGV's signal frame: one trampoline,
	 * and the frame after it is the faulting instruction (exact). */
	for (uint32_t i = 1; i + 1 < c->nframes; i++) {
		if (!(c->frame_flags[i] & BB_CRASH_FRAME_SIGNAL))
			continue;
		tramps++;
		cr_assert(c->frame_flags[i + 1] & BB_CRASH_FRAME_EXACT);
		cr_assert(in_range(c->frames[i - 1], &v), "the handler (main program) calls abort");
	}
	cr_assert_eq(tramps, 1);
}

Test(crash, chains_to_the_application_handler)
{
	struct run on;

	cr_assert_eq(check_crash("chain", SIGSEGV, SEGV_MAPERR, true), 0);
	run_child("chain", true, &on);
	cr_assert(strstr(on.out, "chained 11"), "the application's handler ran: %s", on.out);
}

/* ---- handlers like a server's crash reporter -------------------------------- */

/* Run tests/lib/child's report @kind with the handler off and on; @buf
 * gets the output with it on.  The application's handler must see exactly
 * the same with libblackbox as without (its stack, mask, disposition,
 * siginfo: child.c report_handler()), finish its report with 1 MiB on its
 * stack, and the process must die the same way. */
static void check_report(const char *kind, int sig, bool recorded, struct run *on)
{
	struct run off;
	struct bb_reader *r;
	struct bb_crash c;
	char err[256];

	run_child(kind, false, &off);
	run_child(kind, true, on);
	cr_assert(WIFSIGNALED(on->status) && WTERMSIG(on->status) == sig,
		  "%s: status %#x, output %s", kind, on->status, on->out);
	cr_assert_eq(on->status, off.status, "%s: status %#x, without libblackbox %#x", kind,
		     on->status, off.status);
	cr_assert(strstr(off.out, "report complete 1\n"), "%s without libblackbox: %s", kind,
		  off.out);
	cr_assert_str_eq(on->out, off.out, "%s: the handler saw something else", kind);

	cr_assert_eq(bb_reader_open_pid(on->pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_crash(r, &c), 0);
	if (!recorded) {
		cr_assert_eq(c.status, BB_CRASH_NONE);
		cr_assert_eq(bb_reader_info(r)->phase, BB_PHASE_RUNNING);
		bb_reader_close(r);
		return;
	}
	cr_assert_eq(bb_reader_info(r)->phase, BB_PHASE_CRASHED);
	cr_assert_eq(c.status, BB_CRASH_COMPLETE, "%s", c.problem);
	cr_assert_eq(c.signal, sig);
	if (sig == SIGSEGV)
		cr_assert(c.has_addr && c.addr == 16, "the first fault's address: %#llx",
			  (unsigned long long)c.addr);
	cr_assert_geq(c.nframes, 2);
	bb_reader_close(r);
}

/* The report-* kinds of tests/lib/child.c, with what their report must
 * say (besides being the same with libblackbox as without). */
static const struct report_case {
	const char *kind;
	int sig;
	bool recorded;          /* the box holds a crash record */
	const char *says[2];    /* in the report */
} report_cases[] = {
	/* Redis's order: its SA_NODEFER handler first, then bb_init().  It
	 * runs after ours returned, on the thread's stack, SIGSEGV not
	 * blocked, still its disposition. */
	{ "report-before", SIGSEGV, true,
	  { "report onstack 0 own stack 0\nreport blocked SEGV 0 BUS 0",
	    "report disposition own\n" } },
	/* bb_init() first, the program's handler after it, then
	 * bb_crash_rearm(): as the other order. */
	{ "report-after", SIGSEGV, true, { "report blocked SEGV 0 BUS 0", NULL } },
	/* Without bb_crash_rearm() the program's handler is the only one:
	 * its report, no crash record (documented). */
	{ "report-late", SIGSEGV, false, { NULL, NULL } },
	/* SA_ONSTACK with a 2 MiB alternate stack of its own (set up before
	 * bb_init(), which leaves it alone): the handler runs on it. */
	{ "report-onstack", SIGSEGV, true, { "report onstack 1 own stack 1\n", NULL } },
	/* SA_ONSTACK but no alternate stack of its own: without libblackbox
	 * it runs on the thread's stack; libblackbox's 64 KiB alternate stack
	 * must not become its stack (1 MiB would not fit). */
	{ "report-onstack-noalt", SIGSEGV, true, { "report onstack 0 own stack 0\n", NULL } },
	/* SA_NODEFER lets the handler survive a fault of its own (Redis's
	 * "crashed running signal handler"): entry 2 reports it.  The crash
	 * record is the first fault's (check_report()). */
	{ "report-nested", SIGSEGV, true,
	  { "report entry 1 faults\nreport entry 2 sig 11 code 1\nreport addr 0x18\n", NULL } },
	/* abort()'s SIGABRT is a sent signal: queued again with its siginfo,
	 * the handler sees this process as the sender, SA_RESETHAND reset the
	 * disposition, SIGABRT is blocked while it runs. */
	{ "report-abort", SIGABRT, true,
	  { "report entry 1 sig 6 code -6\nreport sender is self 1\n",
	    "ABRT 1 TRAP 0\nreport disposition default\n" } },
};

static void report_case(const char *kind)
{
	const struct report_case *rc = NULL;
	struct run on;

	for (size_t i = 0; i < sizeof(report_cases) / sizeof(report_cases[0]); i++)
		if (!strcmp(report_cases[i].kind, kind))
			rc = &report_cases[i];
	cr_assert_not_null(rc, "no case %s", kind);
	check_report(kind, rc->sig, rc->recorded, &on);
	for (size_t i = 0; i < 2; i++)
		cr_assert(!rc->says[i] || strstr(on.out, rc->says[i]), "%s: no \"%s\" in\n%s", kind,
			  rc->says[i], on.out);
}

Test(crash, report_handler_installed_before_bb_init) { report_case("report-before"); }
Test(crash, report_handler_installed_after_bb_init_and_rearmed) { report_case("report-after"); }
Test(crash, report_handler_installed_after_bb_init_replaces_ours) { report_case("report-late"); }
Test(crash, report_handler_on_its_own_alternate_stack) { report_case("report-onstack"); }
Test(crash, report_handler_with_sa_onstack_and_no_alternate_stack)
{
	report_case("report-onstack-noalt");
}
Test(crash, report_handler_that_faults_inside_itself) { report_case("report-nested"); }
Test(crash, report_handler_for_abort) { report_case("report-abort"); }

/* ---- bb_crash_record ---------------------------------------------------------- */

/* Run the child's fatal @kind with the crash handler @on; the reader's
 * view of its box in @c, the info in @in, check_failed()'s address in
 * *@fn. */
static void run_fatal(const char *kind, bool on, struct run *run, struct bb_crash *c,
		      struct bb_box_info *in, uint64_t *fn)
{
	struct bb_reader *r;
	char err[256];
	const char *f;

	run_child(kind, on, run);
	f = strstr(run->out, "fn ");
	cr_assert_not_null(f, "child said: %s", run->out);
	*fn = strtoull(f + 3, NULL, 16);
	cr_assert_eq(bb_reader_open_pid(run->pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	*in = *bb_reader_info(r);
	cr_assert_eq(bb_reader_crash(r, c), 0);
	bb_reader_close(r);
}

Test(crash, crash_record_then_abort)
{
	static struct bb_crash c;
	struct bb_box_info in;
	struct run run;
	uint64_t fn;

	for (int on = 0; on < 2; on++) {
		run_fatal("fatal", on, &run, &c, &in, &fn);
		cr_assert(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGABRT,
			  "status %#x", run.status);
		cr_assert(strstr(run.out, "record 0\n"), "%s", run.out);
		cr_assert_eq(in.phase, BB_PHASE_CRASHED);
		/* with the handler, the abort() that followed adds its
		 * signal; without it, nothing reaches libblackbox */
		cr_assert_eq(in.phase_signal, on ? SIGABRT : 0);
		cr_assert_eq(c.status, BB_CRASH_COMPLETE, "%s", c.problem);
		cr_assert_eq(c.kind, BB_CRASH_KIND_FATAL);
		cr_assert(!strncmp(c.reason, "CHECK(len <= cap) failed at child.c:", 36), "%s",
			  c.reason);
		cr_assert_eq(c.reason_len, strlen(c.reason));
		cr_assert_eq(c.signal, 0);
		cr_assert_not(c.has_addr);
		cr_assert_eq(c.tid, run.pid);
		cr_assert_str_eq(c.thread, in.comm);
		/* frame 0: the return address into the caller of
		 * bb_crash_record(), check_failed() (a return address, not
		 * an instruction: looked up at address - 1) */
		cr_assert_geq(c.nframes, 3);
		cr_assert(c.frames[0] > fn && c.frames[0] < fn + 4096,
			  "frame 0 %#llx, check_failed at %#llx", (unsigned long long)c.frames[0],
			  (unsigned long long)fn);
		cr_assert_eq(c.frame_flags[0], 0);
		cr_assert_gt(c.ts, 0);
	}
}

Test(crash, crash_record_then_exit)
{
	static struct bb_crash c;
	struct bb_box_info in;
	struct run run;
	uint64_t fn;

	/* exit() after it: the atexit handler leaves a crashed box alone
	 * (it would mark it exited and remove it). */
	run_fatal("fatal-exit", true, &run, &c, &in, &fn);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 3, "status %#x",
		  run.status);
	cr_assert_eq(in.phase, BB_PHASE_CRASHED);
	cr_assert_eq(in.phase_signal, 0);
	cr_assert_eq(c.status, BB_CRASH_COMPLETE, "%s", c.problem);
	cr_assert_eq(c.kind, BB_CRASH_KIND_FATAL);
}

Test(crash, crash_record_first_wins)
{
	static struct bb_crash c;
	struct bb_box_info in;
	struct run run;
	uint64_t fn;
	char again[32];

	run_fatal("fatal-twice", true, &run, &c, &in, &fn);
	snprintf(again, sizeof(again), "again %d\n", -EEXIST);
	cr_assert(strstr(run.out, "record 0\n") && strstr(run.out, again), "%s", run.out);
	cr_assert(!strncmp(c.reason, "CHECK(", 6), "the first reason: %s", c.reason);
}

Test(crash, crash_record_reason_cut_at_a_character)
{
	static struct bb_crash c;
	struct bb_box_info in;
	struct run run;
	uint64_t fn;

	/* 254 bytes, then a 2-byte character across the 255-byte limit:
	 * cut before it. */
	run_fatal("fatal-long", true, &run, &c, &in, &fn);
	cr_assert_eq(c.reason_len, 254);
	cr_assert_eq(strspn(c.reason, "a"), 254);
}

Test(crash, crash_record_without_a_box)
{
	cr_assert_eq(bb_crash_record("no box"), -ENODEV);
	setenv("BLACKBOX_DISABLE", "1", 1);
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_crash_record("disabled"), 0);
	cr_assert_eq(bb_crash_rearm(), 0);
}

static volatile sig_atomic_t app_segv;

static void app_handler(int sig)
{
	(void)sig;
	app_segv++;
}

Test(crash, rearm_after_the_program_replaced_the_handler)
{
	struct sigaction sa = { .sa_handler = app_handler }, cur;
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER };

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(bb_crash_rearm(), 0, "before bb_init: nothing to do");
	cr_assert_eq(bb_init_opts(&o), 0);
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);   /* replaces ours */
	cr_assert_eq(bb_crash_rearm(), 0);
	cr_assert_eq(bb_crash_rearm(), 0, "twice: ours is not chained to itself");
	cr_assert_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	cr_assert_neq(cur.sa_handler, app_handler, "ours is installed again");
	/* A sent SIGSEGV the program survives: recorded, then the program's
	 * handler runs once (queued again), and is the disposition again. */
	cr_assert_eq(raise(SIGSEGV), 0);
	cr_assert_eq(app_segv, 1);
	cr_assert_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	cr_assert_eq(cur.sa_handler, app_handler, "stepped aside");
	cr_assert_eq(bb_crash_rearm(), 0);
	cr_assert_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	cr_assert_neq(cur.sa_handler, app_handler, "installed again");
	cr_assert_eq(bb_crash_record("after a signal"), -EEXIST, "one crash record: the first");
}

/* Modules of this process's own box whose path contains @needle; the
 * total in *@count. */
static int own_modules(const char *needle, uint32_t *count)
{
	struct bb_reader *r;
	const uint8_t *box;
	const struct bb_header *h;
	const struct bb_modules_hdr *mh;
	struct cbor_load_result res;
	cbor_item_t *a;
	char path[4096], err[256];
	size_t len;
	int hits = 0;

	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	box = bb_reader_data(r, &len);
	h = (const void *)box;
	mh = (const void *)(box + h->modules_offset);
	cr_assert(mh->seq >= 2 && mh->seq % 2 == 0 && mh->len <= h->modules_size - sizeof(*mh));
	cr_assert_eq(mh->flags & BB_MF_TRUNCATED, 0);
	a = cbor_load(box + h->modules_offset + sizeof(*mh), mh->len, &res);
	cr_assert(a && cbor_isa_array(a) && cbor_array_size(a) == mh->count);
	for (size_t i = 0; i < cbor_array_size(a); i++) {
		cbor_item_t *p0 = cbor_array_handle(cbor_array_handle(a)[i])[0];
		char name[4096] = "";

		cr_assert(cbor_isa_string(p0) && cbor_string_length(p0) < sizeof(name));
		memcpy(name, cbor_string_handle(p0), cbor_string_length(p0));
		hits += strstr(name, needle) != NULL;
	}
	*count = mh->count;
	cbor_decref(&a);
	bb_reader_close(r);
	return hits;
}

Test(crash, refresh_modules_after_dlopen)
{
	uint32_t before, after;
	void *lib;

	cr_assert_eq(bb_refresh_modules(), -ENODEV, "no box yet");
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(own_modules("libanl", &before), 0);
	cr_assert_eq(own_modules("test-lib-crash", &before), 1, "the main program is listed");
	lib = dlopen("libanl.so.1", RTLD_NOW);
	cr_assert_not_null(lib, "%s", dlerror());
	cr_assert_eq(own_modules("libanl", &after), 0, "not before the refresh");
	cr_assert_eq(bb_refresh_modules(), 0);
	cr_assert_eq(own_modules("libanl", &after), 1);
	cr_assert_eq(after, before + 1);
	dlclose(lib);
}
