/* SPDX-License-Identifier: MIT */
/*
 * blackbox.h - libblackbox, a crash-surviving shared-memory flight recorder.
 *
 * A process calls bb_init() once; from then on every bb_write_*() appends a
 * record to the calling thread's log, in segments of a shared-memory "box"
 * that outlives the process (SIGKILL included).  bb-extract(1) reads it, live or
 * post mortem; bb-reap(8) removes boxes whose owner is gone.
 *
 * Conventions, for every function here:
 *  - the return value is 0 (or a count) on success and a negative errno on
 *    failure; errno itself is never the error channel;
 *  - each function says whether it is async-signal-safe (AS-safe);
 *  - a write function never blocks, never takes a lock that the interrupted
 *    code could hold, never calls malloc and never makes a system call,
 *    except on a thread's first write (its thread slot and first segment:
 *    one gettid(2) and one prctl(2)).  Timestamps come from clock_gettime(), which is served by
 *    the vDSO without a system call on Linux.
 *
 * Environment read by bb_init() and bb_init_opts():
 *   BLACKBOX_SIZE=BYTES      box size when the caller passes 0 (suffixes k, m, g)
 *   BLACKBOX_DIR=DIR         create the box as a file in DIR instead of POSIX
 *                            shared memory (/dev/shm); tools take --dir DIR
 *   BLACKBOX_DISABLE=1       bb_init() does nothing; every call returns 0
 *   BLACKBOX_CLOCK=tsc|monotonic  record clock when bb_options.clock is 0:
 *                            the x86-64 TSC (falls back to monotonic without
 *                            an invariant TSC), or CLOCK_MONOTONIC (default)
 *   BLACKBOX_CRC=0|1         0 = no record checksums (as BB_OPT_NO_CRC);
 *                            1 = the default, checksums on
 *   BLACKBOX_CRASH_HANDLER=1 install the crash handler (as BB_OPT_CRASH_HANDLER;
 *                            any value but "" and "0" turns it on)
 *   BLACKBOX_BUDGET=BYTES    crash-loop budget when bb_options.budget is 0
 *                            (suffixes k, m, g; default 64m; 0 = none)
 *   BLACKBOX_FORK_SIZE=BYTES the box of a child of fork() when
 *                            bb_options.fork_size is 0 (default 512k)
 *   BLACKBOX_RELEASE=TEXT    the program's release when bb_options.release is
 *                            NULL or "" (state key "release", BB_RELEASE)
 */
#ifndef BLACKBOX_H
#define BLACKBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Field types of a structured event. */
enum bb_type {
	BB_TYPE_STR = 1,
	BB_TYPE_I64,
	BB_TYPE_U64,
	BB_TYPE_F64,
	BB_TYPE_BOOL,
	BB_TYPE_BYTES,
	BB_TYPE_STRN,   /* text of a given length (v.strn): BB_STRN() */
};

struct bb_field {
	const char  *key;
	enum bb_type type;
	union {
		const char *s;
		int64_t     i64;
		uint64_t    u64;
		double      f64;
		bool        b;
		struct { const void *p; size_t n; } bytes;
		struct { const char *s; size_t n; } strn; /* n bytes, no NUL needed */
	} v;
};

/* Maximum fields in one event. */
#define BB_EVENT_MAX_FIELDS 32u

/* The inline paths (internal names, bb__*): see bb_write_kv() and
 * bb_write_event(). */
#include <blackbox/inline.h>


#define BB_VERSION_MAJOR 0
#define BB_VERSION_MINOR 1
#define BB_VERSION_PATCH 0

/* Default box size when neither the caller nor BLACKBOX_SIZE gives one:
 * the box file is exactly this big (README "Sizes"). */
#define BB_DEFAULT_SIZE        (4u << 20)
/* Default crash-loop budget: the bytes a uid's dead boxes may hold in the
 * box directory (bb_options.budget, BLACKBOX_BUDGET). */
#define BB_DEFAULT_BUDGET      (64u << 20)
/* Default size of the box of a child of fork() (BB_FORK_NEW_BOX), when
 * neither bb_options.fork_size nor BLACKBOX_FORK_SIZE gives one, and the
 * parent's box is larger: a worker of a pool writes less than the service
 * (docs/DESIGN.md §9 "Process pools"). */
#define BB_DEFAULT_FORK_SIZE   (512u << 10)

/* struct bb_options.flags */
#define BB_OPT_KEEP_ON_EXIT   0x1u /* exit() leaves the box in place */
#define BB_OPT_CRASH_HANDLER  0x2u /* install the crash handler (see "Crash
                                    * handler" below; BLACKBOX_CRASH_HANDLER=1) */
#define BB_OPT_NO_ENV         0x4u /* ignore the BLACKBOX_* environment */
#define BB_OPT_NO_CRC         0x8u /* no per-record CRC32C.  Default: every record
                                    * carries one (docs/FORMAT.md §11), which
                                    * readers verify; it costs 4 bytes and a
                                    * little time per record (BENCHMARKS.md
                                    * "Write path against the clock"), hence on
                                    * unless turned off */
#define BB_OPT_NO_BUDGET     0x10u /* no crash-loop budget (bb_options.budget):
                                    * bb_init() removes no dead box */

/* struct bb_options.fork_policy: what a child of fork() does. */
enum bb_fork_policy {
	BB_FORK_NEW_BOX = 0, /* the child gets a box of its own (default) */
	BB_FORK_DISABLE = 1, /* the child records nothing; writes return 0 */
};

/*
 * Options for bb_init_opts().  Zero-initialise and set what you need; a
 * zero field means "the default".
 */
struct bb_options {
	size_t      size;       /* the box's size in bytes (rounded down to a page);
	                         * 0 = BLACKBOX_SIZE or BB_DEFAULT_SIZE, or, with
	                         * segment_count, what the segments need */
	unsigned    segment_count; /* segments threads write into (1 .. 4096);
	                         * 0 = as many as fit in size */
	size_t      segment_size; /* bytes per segment: power of two, >= 4096; 0 =
	                         * derived from size (8 KiB for the default box) */
	const char *dir;        /* directory for the box file; NULL = POSIX shm */
	mode_t      mode;       /* permission bits, 0 = 0600; 0640 lets the group read */
	unsigned    flags;      /* BB_OPT_* */
	int         fork_policy;/* enum bb_fork_policy */
	int         clock;      /* record timestamps: 0 = BLACKBOX_CLOCK or
	                         * BB_CLOCK_MONOTONIC; BB_CLOCK_TSC (blackbox/format.h)
	                         * = rdtsc on x86-64 with an invariant TSC, calibrated
	                         * against CLOCK_MONOTONIC in bb_init() (~2 ms), and
	                         * CLOCK_MONOTONIC elsewhere (the header records the
	                         * fallback; bb-extract --list shows it) */
	size_t      budget;     /* crash-loop budget: before creating its box,
	                         * bb_init() removes dead boxes of its uid from the
	                         * box directory until they hold at most this many
	                         * bytes less the new box (bb_init(3), CRASH LOOPS);
	                         * 0 = BLACKBOX_BUDGET or BB_DEFAULT_BUDGET;
	                         * BB_OPT_NO_BUDGET: none */
	const char *release;    /* the program's release or version ("1.4.3"),
	                         * at most BB_RELEASE_MAX bytes: set as the state
	                         * key "release" of the box (bb_set()), which
	                         * bb-reap --journal sends as BB_RELEASE and
	                         * crash groups list; NULL or "" =
	                         * BLACKBOX_RELEASE, or none */
	size_t      fork_size;  /* the box of a child of fork() (BB_FORK_NEW_BOX),
	                         * created at its first write: 0 = BLACKBOX_FORK_SIZE
	                         * or BB_DEFAULT_FORK_SIZE, never more than the
	                         * parent's size; with segment_count, the parent's
	                         * size unless given */
};

/* The longest bb_options.release / BLACKBOX_RELEASE. */
#define BB_RELEASE_MAX 127

/*
 * bb_init - create this process's box with default options and @size bytes
 * (0 = BLACKBOX_SIZE or BB_DEFAULT_SIZE).  Registers an atexit handler that
 * marks the box "exited" and unlinks it.  Before it creates the box, it
 * enforces the crash-loop budget (bb_options.budget): dead boxes of its
 * own uid and its own program (its executable) in the box directory, never
 * a live owner's, never the program's newest nor its newest crashed box,
 * are removed while the uid's dead boxes hold more than the budget less
 * the new box; nothing in a set-uid process nor while bb-reap --watch
 * runs.  The new box's state table counts them (key
 * "blackbox.budget_removed") and names this process's PID namespace
 * ("blackbox.pid_ns").  bb_init(3), CRASH LOOPS, says which go and what
 * it costs.
 *
 * Returns 0, or:
 *  -EALREADY  a box is already open in this process
 *  -EINVAL    release (or BLACKBOX_RELEASE) longer than BB_RELEASE_MAX,
 *             size too small for the tables, two rings and a segment,
 *             segment_count or segment_size out of range (or more segments
 *             than size holds), bad BLACKBOX_SIZE, unknown BLACKBOX_CLOCK or options
 *             clock, BLACKBOX_CRC not 0 or 1, unknown fork_policy, bad
 *             BLACKBOX_BUDGET
 *  -ENAMETOOLONG  the directory is too long for a box path
 *  -ENOSPC    the box's memory could not be reserved (full tmpfs)
 *  -EEXIST    no free name for this process incarnation (bb_init(3) says
 *             how many are tried)
 *  other      from open/ftruncate/mmap (-EACCES, -ENOMEM, -EMFILE ...)
 * Not AS-safe.  Call it before starting threads that write, or at least
 * before their first write.
 */
int bb_init(size_t size);

/* bb_init_opts - bb_init() with options (NULL = defaults).  Same errors. */
int bb_init_opts(const struct bb_options *opts);

/*
 * bb_close - mark the box closed, unmap it and unlink it.  Must not run
 * concurrently with writes from other threads.  Later writes return
 * -ENODEV.  Returns 0, -ENODEV if no box is open.  Not AS-safe.
 */
int bb_close(void);

/*
 * bb_path - copy the box's path (e.g. "/dev/shm/blackbox.12.345.0") into
 * @buf.  Returns the path length, -ENODEV if no box is open, -ERANGE if
 * @len is too small.  AS-safe.
 */
int bb_path(char *buf, size_t len);

/*
 * Writers.  Each appends one record to the calling thread's log (its
 * current segment).
 *
 * Return 0 on success, or:
 *  -ENODEV  no box (bb_init() not called, failed, or bb_close() called)
 *  -EINVAL  a NULL pointer where a value is required
 *  -EBUSY   a nested write (signal handler), or a thread that got no
 *           segment, found the shared ring busy: the record was dropped
 *           and counted in the header
 * A value too large for one record is truncated and flagged, never dropped:
 * the call still returns 0.  With BLACKBOX_DISABLE=1 they return 0.
 *
 * AS-safe: yes, except a thread's first write (its slot and first segment)
 * which is AS-safe in practice (gettid, prctl, pthread_setspecific on a
 * preallocated key).
 * A write interrupted by a signal handler that writes again is safe: the
 * nested write goes to the shared ring.
 */
int bb_write_str(const char *s);
int bb_write_strn(const char *s, size_t n);    /* n bytes; no NUL needed;
                                                * NULL if n == 0 */
int bb_write_i64(int64_t v);
int bb_write_u64(uint64_t v);
int bb_write_f64(double v);
int bb_write_bool(bool v);
int bb_write_bytes(const void *p, size_t n);   /* p may be NULL when n == 0 */
int bb_write_kv(const char *key, const char *value);
int bb_write_kv_i64(const char *key, int64_t v);
int bb_write_kv_u64(const char *key, uint64_t v);
int bb_write_kv_f64(const char *key, double v);
int bb_write_kv_bool(const char *key, bool v);

/*
 * bb_write_kvn - bb_write_kv() with the lengths given: @klen bytes of @key
 * and @vlen bytes of @value, which need not be NUL-terminated (a NUL inside
 * is recorded as such).  Both should be UTF-8.  A NULL string with a
 * length of 0 is the empty string (a default std::string_view's data());
 * NULL with a length is -EINVAL.  Errors and AS-safety as the writers
 * above.  The other calls that take a length (bb_write_strn(),
 * bb_write_kvn_i64() ..., bb_setn() ..., BB_TYPE_STRN fields) follow the
 * same rule.
 *
 * Inline paths.  With GCC or Clang on x86-64, in C and C++, bb_write_kv(),
 * bb_write_kvn() and the typed bb_write_kv_i64(), _u64() and _f64() are
 * macros (unless BB_NO_INLINE is defined) that write the record in the
 * caller, by the
 * library's own protocol (<blackbox/inline.h>), when the key and a text
 * value are at most 64 bytes: string literals with their lengths folded at
 * compile time, strings known only at run time measured inline (aligned
 * 16-byte blocks, never a page the string does not reach).  Same record
 * bytes, same returns, same AS-safety; a thread's first write, a nested
 * write, a box without the SSE4.2 checksum, and longer or NULL strings
 * go through the library.  Cheaper than the library call, and for
 * literals close to a bare clock_gettime() (BENCHMARKS.md "Write path
 * against the clock").  Without the
 * inline paths (other targets), GCC and Clang still pass a literal's
 * length to bb_write_kvn(): no strlen().
 * The exported functions remain, for function pointers, other languages
 * and (bb_write_kv)(k, v).
 */
int bb_write_kvn(const char *key, size_t klen, const char *value, size_t vlen);

/*
 * bb_write_kvn_i64, _u64, _f64, _bool - bb_write_kv_i64() ... with the key's
 * length given (@klen bytes of @key, no NUL needed; NULL only with a
 * zero length).  Errors and AS-safety as the writers above.  Library calls, no
 * inline path (<blackbox.hpp> takes bb_write_kv_i64()'s inline path for a
 * short key itself).
 */
int bb_write_kvn_i64(const char *key, size_t klen, int64_t v);
int bb_write_kvn_u64(const char *key, size_t klen, uint64_t v);
int bb_write_kvn_f64(const char *key, size_t klen, double v);
int bb_write_kvn_bool(const char *key, size_t klen, bool v);

#if defined(BB__HAVE_KV_FAST)
/* The inline paths, <blackbox/inline.h>: bb__lit() tests for a literal
 * where the macro expands (Clang) or says 0 (GCC tests it inside). */
#define bb_write_kv(key, value) bb__kv_str((key), (value), bb__lit(key), bb__lit(value))
#define bb_write_kvn(key, klen, value, vlen) bb__kvn_str((key), (klen), (value), (vlen))
#define bb_write_kv_i64(key, v) bb__kv_i64((key), (v), bb__lit(key))
#define bb_write_kv_u64(key, v) bb__kv_u64((key), (v), bb__lit(key))
#define bb_write_kv_f64(key, v) bb__kv_f64((key), (v), bb__lit(key))
#elif (defined(__GNUC__) || defined(__clang__)) && !defined(BB_NO_INLINE)
/* No inline path for this target: the lengths, folded for literals. */
static inline __attribute__((always_inline))
int bb__write_kv_inline(const char *key, const char *value)
{
	/* NULL keeps its documented -EINVAL (strlen(NULL) would crash);
	 * the test folds away for literals. */
	if (__builtin_expect(!key || !value, 0))
		return (bb_write_kv)(key, value);
	return bb_write_kvn(key, __builtin_strlen(key), value, __builtin_strlen(value));
}
#define bb_write_kv(key, value) bb__write_kv_inline((key), (value))
#endif

/*
 * bb_write_event - one record holding @name and @n typed fields.  Fields
 * are copied in order; long strings are truncated (flagged) to fit.
 * Errors as the writers above, plus -EINVAL for n > BB_EVENT_MAX_FIELDS, a
 * NULL key, or an unknown type.  AS-safe as the writers above.
 *
 * Inline path: with GCC or Clang on x86-64 (C and C++, unless BB_NO_INLINE)
 * a macro writes the record in the caller when the compiler sees @n and
 * every field's type as constants (at most 8 fields, built where the call
 * is: BB_STR() ..., member assignments), every string is at most 64 bytes
 * and the record fits the box; otherwise, and for invalid arguments, it
 * calls the library.  Same record, same returns.  Much cheaper than the
 * library call (BENCHMARKS.md "Write path against the clock").
 */
int bb_write_event(const char *name, const struct bb_field *fields, size_t n);

#if defined(BB__HAVE_KV_FAST)
/* The inline path, <blackbox/inline.h>. */
#define bb_write_event(name, f, n) bb__event_fast((name), (f), (n), bb__lit(name))
#endif

/*
 * Spans: an interval of this thread's work, a record when it begins and
 * one when it ends (docs/FORMAT.md §6 "Spans").  Spans nest per thread:
 * bb_span_end() ends the innermost open one.  bb-extract says which spans
 * each thread was inside when the process died, and --perfetto draws them
 * as slices (bb_span_begin(3)).
 *
 * bb_span_begin - begin the span @name with @n typed fields, as
 * bb_write_event() takes them.  Every call opens the span on this thread,
 * whatever it returns (a record that is not written, for want of a box,
 * still counts for the nesting): call bb_span_end() once for each.
 *
 * bb_span_begin_ctx - the same, correlated by @ctx: spans of any threads
 * with the same flow id (not 0) are one flow (a request handed from one
 * thread to another); a trace id that is not all zero (with the id of the
 * span this one continues) ties the span to a W3C trace context.  @ctx
 * NULL is bb_span_begin().
 *
 * bb_span_end - end this thread's innermost open span: one record holding
 * its depth.  -EINVAL, and no record, when no span is open.
 *
 * Returns 0 or the errors of bb_write_event().  AS-safe: a signal handler
 * may use spans, balanced before it returns.
 */
struct bb_span_ctx {
	uint64_t flow;          /* flow id, 0 = none */
	uint8_t  trace_id[16];  /* W3C trace id, all zero = none */
	uint8_t  span_id[8];    /* the span this one continues (W3C parent id) */
};
int bb_span_begin(const char *name, const struct bb_field *fields, size_t n);
int bb_span_begin_ctx(const char *name, const struct bb_field *fields, size_t n,
		      const struct bb_span_ctx *ctx);
int bb_span_end(void);

#if defined(BB__HAVE_KV_FAST)
/* The inline paths, <blackbox/inline.h>: bb_span_begin() under the
 * conditions of bb_write_event()'s, bb_span_end() always inline. */
#define bb_span_begin(name, f, n) bb__span_begin_fast((name), (f), (n), bb__lit(name))
#define bb_span_end() bb__span_end_fast()
#endif

/*
 * bb_write_kv_important, bb_write_event_important - bb_write_kv() and
 * bb_write_event() for a record that must survive chatty traffic.  The
 * record goes to the thread's log as usual, flagged BB_RF_IMPORTANT, and a
 * copy (same timestamp, tag, value and flags, plus the thread id) goes to
 * the box's important ring, which only important records use: other
 * threads' (or this thread's) ordinary records never evict it.  Readers
 * (bb-extract, bb_dump) show each important record once.
 *
 * The important ring is shared by all threads and serialised like the
 * shared ring, by a try-lock with a bounded spin.  If the copy cannot be
 * made (another thread holds the lock through the spin, or a signal handler
 * interrupted an important write of its own thread), the copy is dropped
 * and counted in the header's dropped_important, and the call still returns
 * 0: the original record was written.  The value room is 8 bytes smaller
 * than bb_write_kv()'s (the copy's thread id); longer values are truncated
 * and flagged as usual.
 *
 * bb_write_kvn_important() takes the lengths, as bb_write_kvn().
 *
 * Returns and errors: as bb_write_kv() and bb_write_event().  AS-safe as
 * the other writers.
 */
int bb_write_kv_important(const char *key, const char *value);
int bb_write_kvn_important(const char *key, size_t klen, const char *value, size_t vlen);
int bb_write_event_important(const char *name, const struct bb_field *fields, size_t n);

/*
 * Crash handler (BB_OPT_CRASH_HANDLER or BLACKBOX_CRASH_HANDLER=1, installed
 * by bb_init() once the box exists; it stays installed after bb_close()).
 *
 * Catches SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and SIGSYS.  On
 * the first of them in the process it writes one crash record into the
 * box's header (signal, si_code, the fault address when the kernel gave
 * one, the stack pointer, thread id and name, the interrupted instruction
 * and the stack's return addresses; docs/FORMAT.md §11) and marks the box
 * CRASHED with the signal number.  Then (also after bb_crash_record()) it
 * asks every other thread that holds a thread slot for its stack, with a
 * real-time signal (the first from SIGRTMIN + 8 whose disposition was the
 * default when bb_init() installed the handler; none free: no other
 * stacks), and waits at most 100 ms in all for the answers; up to 32
 * threads, the others counted.  A call that a handler always interrupts
 * (nanosleep ...) fails with EINTR in those threads.  It runs on the thread's alternate
 * signal stack with every caught signal blocked.
 *
 * Then it steps aside: it puts back the disposition it replaced, exactly
 * as it was, and returns, and the signal happens again (a fault recurs
 * when the instruction is resumed; any other signal is queued again to the
 * thread with its original siginfo).  A handler the program installed
 * before bb_init() therefore runs as if libblackbox were not there: after
 * ours has returned, on the stack it asked for (the thread's stack, or
 * with SA_ONSTACK the alternate stack the program set up), with its own
 * mask and flags (SA_NODEFER, SA_RESETHAND ...), the same siginfo and the
 * interrupted context.  Without one, the default action happens: the exit
 * status and any core dump are unchanged.  Once it has stepped aside for a
 * signal, libblackbox is no longer that signal's handler (bb_crash_rearm()
 * installs it again, for a program that survives).  A signal the
 * application ignores that was sent with kill() is not a crash.
 *
 * Order: call bb_init() after the program installs its own handlers for
 * these signals.  A handler installed later replaces libblackbox's for
 * that signal, and that signal then leaves no crash record: call
 * bb_crash_rearm() after installing it (or bb_crash_record() from it).
 *
 * Stack overflows: the thread calling bb_init(), and every thread at its
 * first write or its bb_thread_init(), gets an alternate signal stack of
 * max(4 * SIGSTKSZ, 64 KiB) plus a guard page (mmap; unmapped when the
 * thread exits).  A thread that already has one keeps its own.  A thread
 * that neither writes nor calls bb_thread_init() has none: an overflow
 * there dies without a record.
 * The stack walk keeps the innermost 64 and the outermost 64 frames, so a
 * runaway recursion still shows where it started.
 */

/*
 * bb_crash_rearm - install the crash handler again for each signal whose
 * handler is no longer libblackbox's (the program installed its own after
 * bb_init(), or the handler stepped aside after a signal the program
 * survived).  The handler found there becomes the one libblackbox steps
 * aside to.  Call it after the program installs its handlers, from one
 * thread, while no crash is under way.
 * Returns 0 (also when the crash handler is off: nothing to do), or a
 * negative errno from sigaction(2) (the signals it had changed are
 * restored).  AS-safe (sigaction only).
 */
int bb_crash_rearm(void);

/*
 * bb_watchdog - declare that the calling thread calls bb_heartbeat() at
 * least every @timeout_ms milliseconds (bb_watchdog(3)).  The deadline and
 * the beats live in the thread's slot of the box: bb-reap --watch names
 * the thread stuck when its beat stops for longer, asks the process for
 * every thread's stack, archives a copy of the box and sends a journal
 * entry; the process keeps running.  bb_watchdog() beats once.  0
 * withdraws the deadline.  Works with or without the crash handler (the
 * stacks need it).
 * Returns 0, or:
 *  -EINVAL  @timeout_ms over BB_WATCHDOG_MAX_MS
 *  -ENODEV  no box (0 when disabled)
 *  -ENOSPC  no thread slot for this thread (bb_thread_init())
 *  -EBUSY, -ESRCH as bb_thread_init()
 * Not AS-safe (it may take the thread's slot, as bb_thread_init()).
 */
#define BB_WATCHDOG_MAX_MS 86400000u

int bb_watchdog(unsigned timeout_ms);

/*
 * bb_heartbeat - the calling thread is alive: one store of the box's clock
 * into its thread slot.  No record, no lock, no system call (but the
 * clock's vDSO read, as every record), inline with GCC or Clang on x86-64.
 * Returns 0, or -ENOENT when this thread declared no deadline in the
 * current box (bb_watchdog()), -ENODEV without a box (0 when disabled).
 * AS-safe.
 */
int bb_heartbeat(void);

#if defined(BB__HAVE_HEARTBEAT_FAST)
#define bb_heartbeat() bb__heartbeat()
#endif

/*
 * bb_snapshot - ask for a copy of the box as it is now: writes the event
 * "bb.snapshot" {reason: @reason} marked important and counts a snapshot
 * in the header; bb-reap --watch archives a consistent copy and sends a
 * journal entry with the reason (grouped and rate-limited like crashes).
 * @reason: text, NULL for "".  No system call but the clock's.
 * Returns 0, or the errors of bb_write_event().  AS-safe.
 */
int bb_snapshot(const char *reason);

/*
 * bb_thread_init - prepare the calling thread as its first write would,
 * without writing a record: its thread slot (its log, listed in the box's
 * thread table with its id and name) and, with the crash handler on, its
 * alternate signal stack.  For threads the program does not start itself
 * (another library's pool) that may crash before they write: call it at
 * the thread's start.  Calling it again changes nothing.
 * Returns 0, or:
 *  -ENODEV  no box (0 when disabled)
 *  -ENOSPC  every thread slot (or every segment) is taken: the thread's
 *           records go to the shared ring; it got its alternate stack
 *  -EBUSY   called from a signal handler that interrupted this thread's
 *           own write: nothing done
 *  -ESRCH   called from a TLS destructor, as the thread exits
 *  -ENOMEM, or another negative errno from mmap(2) or sigaltstack(2):
 *           no alternate stack (the slot was taken)
 * Not AS-safe (mmap); thread-safe.
 */
int bb_thread_init(void);

/*
 * bb_crash_record - record that the process is about to end without a
 * fatal signal reaching libblackbox: a panic, a failed assertion, a fatal
 * error before exit() or abort().  Writes the crash record (kind "fatal",
 * @reason, the calling thread's id and name, its stack from the caller of
 * bb_crash_record() outwards, the time) and marks the box CRASHED with
 * signal 0.  Works with or without the crash handler.  The box then stays
 * marked crashed: exit() and bb_close() leave it in place.
 *
 * @reason: text, at most BB_CRASH_REASON_MAX bytes are kept (cut at a
 * UTF-8 character boundary); NULL for none.
 *
 * One crash record per process, the first wins: a second call, or a call
 * after a fatal signal was recorded, changes nothing and returns -EEXIST
 * (waiting up to 2 s for another thread still writing one).  A fatal
 * signal after it (the abort() that follows) keeps the record and adds its
 * number to the header, so the box says both why and how the process died.
 *
 * Returns 0, -EEXIST, or -ENODEV without a box (0 when disabled).
 * AS-safe: no lock, no malloc; usable from a signal handler.
 */
#define BB_CRASH_REASON_MAX 255u

int bb_crash_record(const char *reason);

/*
 * State table: the latest value of each key, kept in the box outside the
 * records (never evicted by their traffic): current request id, config
 * version, build id ...
 *
 * bb_set - set @key to the text @value; bb_set_i64/_u64/_f64/_bool the
 * same with a typed value.  bb_unset - remove @key's value.
 *
 * Bounds: a key is at most BB_STATE_KEY_MAX bytes, a text value at most
 * BB_STATE_VALUE_MAX bytes (both without the NUL; text should be UTF-8).
 * The table has BB_STATE_SLOTS slots; a key keeps its slot after
 * bb_unset(), so at most BB_STATE_SLOTS distinct keys can be set over the
 * life of a box.
 *
 * Return 0, or:
 *  -E2BIG   key or value too long
 *  -ENOSPC  the table is full (BB_STATE_SLOTS other keys)
 *  -EBUSY   the key's slot (or a slot on its probe path) is being written
 *           by another thread, or by the code this signal handler
 *           interrupted: nothing was written; never waits
 *  -ENOENT  bb_unset() of a key that was never set
 *  -EINVAL  NULL key or value
 *  -ENODEV  no box
 * -E2BIG, -ENOSPC and -EBUSY are also counted in the header (state_errors).
 * With BLACKBOX_DISABLE=1 they return 0.  AS-safe: no lock, no malloc, no
 * system call; safe from any thread.
 */
#define BB_STATE_SLOTS      64u
#define BB_STATE_KEY_MAX    63u
#define BB_STATE_VALUE_MAX  160u

int bb_set(const char *key, const char *value);
int bb_set_i64(const char *key, int64_t value);
int bb_set_u64(const char *key, uint64_t value);
int bb_set_f64(const char *key, double value);
int bb_set_bool(const char *key, bool value);
int bb_unset(const char *key);

/*
 * bb_setn, bb_setn_i64/_u64/_f64/_bool, bb_unsetn - the same with the
 * lengths given: @klen bytes of @key and @vlen bytes of @value, neither
 * NUL-terminated necessarily.  Same bounds, returns and AS-safety; a NULL
 * string with a length of 0 is the empty string, NULL with a length
 * -EINVAL.
 */
int bb_setn(const char *key, size_t klen, const char *value, size_t vlen);
int bb_setn_i64(const char *key, size_t klen, int64_t value);
int bb_setn_u64(const char *key, size_t klen, uint64_t value);
int bb_setn_f64(const char *key, size_t klen, double value);
int bb_setn_bool(const char *key, size_t klen, bool value);
int bb_unsetn(const char *key, size_t klen);

/*
 * bb_refresh_modules - record the loaded objects (path, load bias, address
 * range, GNU build id) again, after dlopen()/dlclose(), so crash addresses
 * in new objects can be resolved.  bb_init() records them once.  Objects
 * that do not fit the module area (16 KiB) are left out and the area is
 * flagged truncated.  Returns 0, or -ENODEV without a box (0 when
 * disabled).  Not AS-safe (dl_iterate_phdr takes the loader lock).
 */
int bb_refresh_modules(void);

/*
 * bb_dump - write this process's own box to @fd as text, one record per
 * line, records of all segments and rings merged oldest first (newest
 * last).  Each
 * record's CRC32C is checked: a mismatch prints a "corrupt: checksum
 * mismatch" line instead of the value.  Important records are shown once
 * (the copy in the important ring only when the original is gone).  Uses no
 * malloc and no stdio: AS-safe, usable from a signal handler.  Returns 0,
 * -ENODEV without a box, -EBUSY if another bb_dump() is running, or the
 * negative errno of write(2).
 */
int bb_dump(int fd);

/*
 * bb_version - the version of the library actually loaded, "0.1.0" (the
 * BB_VERSION_* macros are the version a program was compiled against).
 * bb_version_number - the same as major * 10000 + minor * 100 + patch.
 * AS-safe.
 */
const char *bb_version(void);
int bb_version_number(void);

#ifdef __cplusplus
}
#endif

/*
 * bb_write(x) - write a scalar by its C type (C11 _Generic).  Strings
 * (char *, const char *) become text records, signed integers i64, unsigned
 * integers u64, float and double f64, bool a boolean.
 */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define bb_write(x) _Generic((x),                                       \
	char *: bb_write_str, const char *: bb_write_str,                   \
	_Bool: bb_write_bool,                                               \
	signed char: bb_write_i64, short: bb_write_i64, int: bb_write_i64,  \
	long: bb_write_i64, long long: bb_write_i64,                        \
	unsigned char: bb_write_u64, unsigned short: bb_write_u64,          \
	unsigned int: bb_write_u64, unsigned long: bb_write_u64,            \
	unsigned long long: bb_write_u64,                                   \
	float: bb_write_f64, double: bb_write_f64)(x)
#endif

/* Convenience initialisers for struct bb_field (C only). */
#ifndef __cplusplus
#define BB_STR(k, x)   ((struct bb_field){ .key = (k), .type = BB_TYPE_STR,  .v.s = (x) })
#define BB_I64(k, x)   ((struct bb_field){ .key = (k), .type = BB_TYPE_I64,  .v.i64 = (x) })
#define BB_U64(k, x)   ((struct bb_field){ .key = (k), .type = BB_TYPE_U64,  .v.u64 = (x) })
#define BB_F64(k, x)   ((struct bb_field){ .key = (k), .type = BB_TYPE_F64,  .v.f64 = (x) })
#define BB_BOOL(k, x)  ((struct bb_field){ .key = (k), .type = BB_TYPE_BOOL, .v.b = (x) })
#define BB_BYTES(k, p_, n_) ((struct bb_field){ .key = (k), .type = BB_TYPE_BYTES, \
	.v.bytes = { .p = (p_), .n = (n_) } })
#define BB_STRN(k, s_, n_) ((struct bb_field){ .key = (k), .type = BB_TYPE_STRN, \
	.v.strn = { .s = (s_), .n = (n_) } })
#endif

#endif /* BLACKBOX_H */
