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
	char out[512];
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
	uint64_t addr;
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

/* Validate and decode the crash area like a reader must. */
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

		cr_assert(cbor_isa_string(pr.key) && cbor_string_length(pr.key) < sizeof(key));
		memcpy(key, cbor_string_handle(pr.key), cbor_string_length(pr.key));
		c->keys++;
		if (!strcmp(key, "signal"))
			c->signal = int_of(pr.value);
		else if (!strcmp(key, "code"))
			c->code = int_of(pr.value);
		else if (!strcmp(key, "addr"))
			c->addr = (uint64_t)int_of(pr.value);
		else if (!strcmp(key, "tid"))
			c->tid = int_of(pr.value);
		else if (!strcmp(key, "thread")) {
			cr_assert(cbor_isa_string(pr.value) && cbor_string_length(pr.value) < sizeof(c->thread));
			memcpy(c->thread, cbor_string_handle(pr.value), cbor_string_length(pr.value));
		} else if (!strcmp(key, "frames")) {
			cr_assert(cbor_isa_array(pr.value));
			c->nframes = cbor_array_size(pr.value);
			cr_assert_leq(c->nframes, 256);
			for (size_t k = 0; k < c->nframes; k++)
				c->frames[k] = (uint64_t)int_of(cbor_array_handle(pr.value)[k]);
		} else {
			cr_assert_fail("unknown key %s", key);
		}
	}
	cbor_decref(&m);
	cr_assert_eq(c->keys, 6);
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

/*
 * One kind of crash: same wait status with and without the handler; the
 * record as described at the top.  Returns the number of torn records.
 */
static uint64_t check_crash_in(const char *kind, int sig, int64_t code, bool addr_exact,
			       const char *thread)
{
	struct run off, on;
	struct bb_reader *r;
	const struct bb_box_info *info;
	const uint8_t *box;
	const struct bb_header *h;
	struct crash c;
	struct bb_ring_stats st;
	uint64_t start, end;
	char err[256], path[4096];
	size_t len;
	bool in_main = false;
	int nrec = 0;

	run_child(kind, false, &off);
	run_child(kind, true, &on);
	cr_assert(WIFSIGNALED(on.status) && WTERMSIG(on.status) == sig,
		  "%s: status %#x, output %s", kind, on.status, on.out);
	cr_assert_eq(on.status, off.status, "%s: status %#x with the handler, %#x without",
		     kind, on.status, off.status);
	cr_assert(!WCOREDUMP(on.status), "RLIMIT_CORE is 0: no core");

	/* Without the handler: no crash record, the box says nothing. */
	cr_assert_eq(bb_reader_open_pid(off.pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_info(r)->phase, BB_PHASE_RUNNING);
	h = bb_reader_data(r, &len);
	cr_assert_eq(((const struct bb_record_hdr *)(const void *)h->crash)->seq, BB_CRASH_SEQ_EMPTY);
	bb_reader_close(r);

	cr_assert_eq(bb_reader_open_pid(on.pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	info = bb_reader_info(r);
	cr_assert_eq(info->phase, BB_PHASE_CRASHED, "%s: phase %d", kind, info->phase);
	cr_assert_eq(info->phase_signal, sig);
	box = bb_reader_data(r, &len);
	cr_assert_geq(len, BB_HEADER_SIZE);
	decode_crash((const void *)box, &c);
	cr_assert_eq(c.signal, sig);
	cr_assert_eq(c.code, code, "%s: si_code %lld", kind, (long long)c.code);
	if (sig == SIGABRT)
		cr_assert_eq(c.addr, 0, "a sent signal has no fault address");
	else if (addr_exact)
		cr_assert_eq(c.addr, on.addr, "%s: addr %#llx, expected %#llx", kind,
			     (unsigned long long)c.addr, (unsigned long long)on.addr);
	if (thread) {
		/* A second thread crashed: its tid (the child printed it) and
		 * its name, not the process's. */
		const char *t = strstr(on.out, "tid ");

		cr_assert_not_null(t, "child said: %s", on.out);
		cr_assert_eq(c.tid, strtoll(t + 4, NULL, 10), "%s: tid %lld", kind, (long long)c.tid);
		cr_assert_neq(c.tid, on.pid);
		cr_assert_str_eq(c.thread, thread);
	} else {
		cr_assert_eq(c.tid, on.pid, "the main thread crashed");
		cr_assert_str_eq(c.thread, info->comm);
	}
	cr_assert_geq(c.nframes, 2, "%s: %zu frames", kind, c.nframes);
	main_module(box, len, &start, &end, path, sizeof(path));
	cr_assert(strstr(path, "bb-test-child"), "main module %s", path);
	for (size_t i = 0; i < c.nframes; i++)
		in_main |= c.frames[i] >= start && c.frames[i] < end;
	cr_assert(in_main, "%s: no frame in the main program [%#llx, %#llx)", kind,
		  (unsigned long long)start, (unsigned long long)end);

	/* The records before the crash are intact; one interrupted by it
	 * (if any) is torn, never data. */
	cr_assert_eq(bb_reader_walk(r, 0, count_cb, &nrec), 0);
	bb_reader_total_stats(r, &st);
	cr_assert_geq(nrec, 1, "'before' is there");
	cr_assert_eq(st.corrupt, 0);
	bb_reader_close(r);
	return st.torn;
}

static uint64_t check_crash(const char *kind, int sig, int64_t code, bool addr_exact)
{
	return check_crash_in(kind, sig, code, addr_exact, NULL);
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

Test(crash, segv_in_a_second_thread)
{
	/* The record names the thread that faulted (tid and name), and the
	 * process dies of it as it would without the handler. */
	cr_assert_eq(check_crash_in("thread", SIGSEGV, SEGV_MAPERR, true, "crasher"), 0);
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
	 * itself for the process to die of it. si_code SI_KERNEL. */
	cr_assert_eq(check_crash("trap", SIGTRAP, SI_KERNEL, false), 0);
}
#endif

Test(crash, stack_overflow_on_the_alternate_stack)
{
	/* Without an alternate stack the kernel cannot run the handler and
	 * kills the process: no record, and check_crash() fails. */
	cr_assert_eq(check_crash("overflow", SIGSEGV, SEGV_MAPERR, false), 0);
}

Test(crash, fault_inside_a_write_leaves_it_torn)
{
	/* SIGSEGV in the middle of bb_write_bytes()'s copy: the crash record
	 * is complete and the interrupted record is reported torn. */
	cr_assert_eq(check_crash("inwrite", SIGSEGV, SEGV_ACCERR, true), 1);
}

Test(crash, abort_in_a_handler_that_interrupted_a_write)
{
	/* The application's SIGSEGV handler (installed after bb_init, so it
	 * replaced ours) interrupted bb_write_bytes(), wrote a nested record
	 * and called abort(): recorded as SIGABRT, the write stays torn. */
	cr_assert_eq(check_crash("handler", SIGABRT, SI_TKILL, false), 1);
}

Test(crash, chains_to_the_application_handler)
{
	struct run on;

	cr_assert_eq(check_crash("chain", SIGSEGV, SEGV_MAPERR, true), 0);
	run_child("chain", true, &on);
	cr_assert(strstr(on.out, "chained 11"), "the application's handler ran: %s", on.out);
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
