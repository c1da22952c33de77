/* SPDX-License-Identifier: MIT */
/*
 * blackbox/reader.h - open, validate and walk a box from outside its owner.
 *
 * Every byte of a box is untrusted input: the owner may have scribbled over
 * it while crashing, and another user may have planted a file.  The reader
 * bounds-checks every offset and length, never follows symlinks, refuses
 * anything that is not a regular file with a valid header, never writes to
 * the box, never blocks its writer, and always terminates.
 *
 * What it guarantees a caller about reading (docs/SECURITY.md):
 *  - It never maps a box.  Every byte is read with pread(2) into memory of
 *    the reader's own, at most min(box_size, file size) bytes, so a box
 *    whose owner truncates it cannot fault the caller (no SIGBUS), and a
 *    file that shrinks while it is read is an error (-ESTALE, "box changed
 *    size while being read") of the call that read it.
 *  - A file whose size differs from its header's box_size by more than a
 *    page is refused at open: nothing a reader does costs more than the
 *    box its header describes, whatever size (sparse) the file claims.  A
 *    reader's memory is that copy (only the parts read are touched) plus
 *    a walk's index, 48 bytes per record delivered.
 *  - A live reader (no BB_OPEN_SNAPSHOT) reads the header and ring table
 *    at open and again, with what it needs, at every walk, crash, state,
 *    module, save or data call; a snapshot is read once at open.
 *  - Strings from a box and file names are returned as they are: escape
 *    them (bb_escape_text) before a terminal or a log sees them.  The
 *    messages in @err quote them too.
 *
 * The reader is not AS-safe (it allocates).  A struct bb_reader is used by
 * one thread at a time.  Functions return 0 (or a count) or a negative
 * errno; the open functions also fill @err (if not NULL) with one line that
 * says precisely what is wrong.
 */
#ifndef BLACKBOX_READER_H
#define BLACKBOX_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <blackbox/format.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default directory of boxes (POSIX shared memory). */
#define BB_DEFAULT_DIR "/dev/shm"

struct bb_reader;

/* open flags */
#define BB_OPEN_SNAPSHOT   0x1u /* read the file once, at open: a consistent,
				   immutable view (post mortem).  Of each ring
				   whose descriptor is sane only the live part
				   [tail, head] is copied; its dead bytes, and
				   any byte past the last ring and area, read
				   as zeros (bb_reader_data) */
#define BB_OPEN_ANY_OWNER  0x2u /* accept a file whose owner uid differs from
				   the header's uid (default: refused, -EPERM) */
#define BB_OPEN_PLAIN      0x4u /* refuse a compressed box (-EMEDIUMTYPE): a
				   box directory holds the files processes
				   map, never a compressed copy (bb-reap) */

/* The largest box a compressed file is decompressed to: a compressed box
 * whose header claims more is refused (-EFBIG) before anything is
 * allocated.  bb-reap compresses no larger archive. */
#define BB_ZSTD_BOX_MAX    (UINT64_C(1) << 30)

/* What became of a box's owner (docs/DESIGN.md §6). */
enum bb_liveness {
	BB_LIVENESS_ALIVE    = 1, /* pid exists, start time matches, maps the box */
	BB_LIVENESS_EXITED   = 2, /* exited cleanly (atexit ran, box kept) */
	BB_LIVENESS_CRASHED  = 3, /* crash handler recorded a fatal signal */
	BB_LIVENESS_CLOSED   = 4, /* bb_close() ran (box kept by a copy) */
	BB_LIVENESS_ORPHANED = 5, /* gone without a word: SIGKILL, _exit, exec ... */
};

/* Everything the header says, validated and NUL-terminated. */
struct bb_box_info {
	char     path[4096];   /* as opened ("<memory>" for bb_reader_open_mem) */
	uint16_t version_major, version_minor;
	uint64_t box_size;     /* header's size */
	uint64_t file_size;    /* bytes actually available */
	uint64_t file_mtime_ns;/* 0 for memory */
	uint64_t file_ino, file_dev;
	uint32_t file_uid;
	uint32_t stream_count; /* streams: the ring table's rings, then (3.0)
				  the thread logs (docs/DESIGN.md §1) */
	uint32_t streams_used; /* streams that were ever claimed / written */
	uint64_t ring_size;    /* data bytes of each ring of the ring table */
	uint32_t max_record;
	int32_t  pid;
	uint32_t uid;
	uint64_t starttime;
	uint32_t sequence;
	char     boot_id[40];
	char     comm[32];
	char     cmdline[256];
	int      clock;        /* enum bb_clock of the record timestamps */
	int      clock_requested; /* enum bb_clock asked for, 0 = default; differs
				     from clock when the writer fell back (2.0) */
	uint64_t tsc_hz;       /* calibrated TSC frequency (BB_CLOCK_TSC), else 0 */
	uint64_t tsc_anchor;   /* TSC calibration (FORMAT.md §11); struct
				  bb_record.ts is already converted with it */
	uint32_t tsc_mult, tsc_shift;
	uint32_t flags;        /* header flags, BB_HF_* */
	int64_t  anchor_realtime_ns, anchor_clock_ns;
	uint64_t created_ns;
	int      phase;        /* enum bb_owner_phase */
	int      phase_signal;
	uint64_t phase_ns;
	uint64_t dropped_busy, dropped_nested, truncated, dropped_toobig;
	uint64_t dropped_important; /* important copies dropped (ring busy) */
	uint64_t state_errors;      /* bb_set() calls that failed in the owner */
	uint32_t state_slot_count;  /* 0: no state table */
	uint32_t modules_size;      /* 0: no module area */
	/* Areas that fail their bounds check are disabled, not fatal: the
	 * streams are still read.  "" when fine, else what is wrong. */
	char     state_problem[128];
	char     modules_problem[128];
	uint64_t used_bytes;   /* ring bytes holding records (tail to head; 3.0: and
				  segment bytes, start to head) at open */
	/* Format 2.1: the systemd unit the owner ran in, as it saw itself at
	 * bb_init ("" when not recorded: a 2.0 box, no systemd, a path that
	 * gives no valid name).  Claims of the owner, like comm: checked for
	 * shape, never proven (docs/SECURITY.md). */
	int      cgroup_hierarchy; /* enum bb_cgroup_hierarchy of cgroup */
	char     cgroup[512];   /* its cgroup path in systemd's hierarchy */
	char     unit[256];     /* its system unit, derived from cgroup as systemd
				   does: "nginx.service", "user@1000.service",
				   "session-3.scope" */
	char     user_unit[256];/* the unit of its user manager (under
				   user@UID.service or a session), or "" */
	char     invocation_id[33]; /* $INVOCATION_ID: 32 lowercase hex digits */
	/* Format 3.0: thread storage in segments (FORMAT.md §13); 0 in a 2.x
	 * box.  Each thread's log is one of the streams the reader presents
	 * (kind BB_STREAM_THREAD), after the ring table's rings: stream_count
	 * counts both, and grows as a live reader finds new threads. */
	uint32_t seg_count;    /* segments */
	uint32_t seg_size;     /* data bytes per segment */
	uint32_t thread_count; /* slots in the thread table */
	uint64_t overflow;     /* records written to the shared ring for want of
				  a segment (their thread got none) */
	uint64_t seg_stolen;   /* segments taken from another thread's log */
	uint64_t seg_restarted;/* a thread with one segment started it over */
};

/*
 * Open a box.  On success *out holds a reader; free it with
 * bb_reader_close().  Reads the header and ring table (with
 * BB_OPEN_SNAPSHOT, the box).  Errors (the message in @err says more):
 *  -ENOENT    no such file
 *  -ELOOP     the path is a symlink (never followed)
 *  -EISDIR / -EINVAL   not a regular file
 *  -EACCES    not readable by the caller
 *  -EPERM     file owner differs from the header's uid (see BB_OPEN_ANY_OWNER)
 *  -ENODATA   empty or shorter than a header (incl. a box still being created)
 *  -EBADMSG   bad magic, impossible sizes or offsets: not a box; or a file
 *             whose size differs from the header's box_size by more than a
 *             page (grown or cut after it was written)
 *  -EPROTONOSUPPORT  a newer major format version
 *  -EPFNOSUPPORT     another byte order or word size
 *  -ESTALE    the file shrank while it was being read
 *  -EFBIG     a compressed box whose header claims more than BB_ZSTD_BOX_MAX
 *  -EMEDIUMTYPE  a compressed box, and @flags has BB_OPEN_PLAIN
 *  -ENOMEM
 */
int bb_reader_open_path(const char *path, unsigned flags,
			struct bb_reader **out, char *err, size_t errlen);

/* Open a box file relative to @dirfd (openat semantics, O_NOFOLLOW). */
int bb_reader_openat(int dirfd, const char *name, unsigned flags,
		     struct bb_reader **out, char *err, size_t errlen);

/*
 * Open from an fd the caller opened (it is dup'ed; the caller keeps its
 * own).  @label names it in messages and info.path.  Same errors.
 */
int bb_reader_open_fd(int fd, const char *label, unsigned flags,
		      struct bb_reader **out, char *err, size_t errlen);

/* Open a copy held in memory (copied; used by tests and the fuzzer). */
int bb_reader_open_mem(const void *buf, size_t len, unsigned flags,
		       struct bb_reader **out, char *err, size_t errlen);

/*
 * Open the box of @pid in @dir (NULL = BB_DEFAULT_DIR), found by header,
 * never by file name (bb_reader_scan() says how a box is chosen): the box
 * the process maps now if it runs, otherwise the newest box it left
 * (created_ns, then sequence), provided every box claiming the pid has
 * the same file owner.  A box whose file owner differs from its header's
 * uid is never chosen, whatever @flags say.  Errors, besides those of
 * bb_reader_open_path():
 *  -ESRCH     no box claims the pid (@err counts the mismatched ones)
 *  -ENOTUNIQ  boxes of different owners claim the pid and nothing tells
 *             which is the process's: none is opened, @err names every
 *             claim, its file owner and creation time (open one by path)
 *  -ESTALE    the chosen file was replaced while being opened
 */
int bb_reader_open_pid(pid_t pid, const char *dir, unsigned flags,
		       struct bb_reader **out, char *err, size_t errlen);

/* bb_box_entry.flags */
#define BB_BOX_UID_MISMATCH 0x1u /* file owner != header uid: never chosen */
#define BB_BOX_FOREIGN      0x2u /* claims a running process whose box is
				    another owner's file (not chosen) */
#define BB_BOX_AMBIGUOUS    0x4u /* its pid is claimed by boxes of several
				    owners and the process is gone (or maps
				    none of them): none is chosen */
#define BB_BOX_CHOSEN       0x8u /* the box bb_reader_open_pid() opens for
				    its pid */

/* One directory entry under BB_NAME_PREFIX or BB_ARCHIVE_PREFIX, as
 * bb_reader_scan() judged it. */
struct bb_box_entry {
	char               name[256];    /* the directory entry */
	int                error;        /* 0: a box (the fields below are valid);
					    else why not, a negative errno as the
					    open functions return it */
	char               problem[256]; /* error: the reader's message */
	struct bb_box_info info;         /* header, file identity and owner; read
					    from the header and ring table only */
	int                liveness;     /* enum bb_liveness of its owner */
	unsigned           flags;        /* BB_BOX_* */
};

/*
 * bb_reader_scan - open every entry of @dir (NULL = BB_DEFAULT_DIR) whose
 * name starts with BB_NAME_PREFIX (a box) or BB_ARCHIVE_PREFIX (a copy
 * bb-reap --archive made), read its header and ring table (nothing
 * else: no ring data) and judge the claims: *@entries gets @count entries
 * (free with bb_reader_scan_free()), boxes first, by pid, then created_ns,
 * sequence and name; entries that are not boxes last, with their error.
 *
 * Which box is a process's (the rule bb_reader_open_pid() applies): the
 * file owner is the anchor, since nobody can create a file owned by
 * another uid; names prove nothing.  Candidates are the boxes whose header
 * names the pid and whose file owner is the header's uid.  While the
 * process runs (pid, start time and boot id match), the candidate it maps
 * (/proc/<pid>/maps, by device and inode) is its box; when its maps cannot
 * be read (another user's process, no privilege), the newest candidate
 * owned by one of its uids (real, effective, saved, file system).  Other
 * candidates claiming that process with another owner are BB_BOX_FOREIGN.
 * Otherwise (the process is gone, or maps none of them) the newest
 * candidate, if all candidates have one owner; if not, all are
 * BB_BOX_AMBIGUOUS and none is chosen.
 *
 * Returns 0, -ENOMEM, or the -errno of opendir() (@err says more).
 */
int bb_reader_scan(const char *dir, struct bb_box_entry **entries, size_t *count,
		   char *err, size_t errlen);
void bb_reader_scan_free(struct bb_box_entry *entries);

void bb_reader_close(struct bb_reader *r);

/* The validated header.  Never NULL for an open reader. */
const struct bb_box_info *bb_reader_info(const struct bb_reader *r);

/*
 * Liveness of the box's owner: enum bb_liveness, or a negative errno.
 * Checks boot id, /proc/<pid>/stat start time and /proc/<pid>/maps (by
 * device and inode).  When maps cannot be read (another user's process,
 * without privilege) a matching pid + start time counts as alive.
 */
int bb_reader_liveness(const struct bb_reader *r);

/*
 * The same decision from header facts and the box file's identity, for
 * tools that scan a directory.  @dev/@ino 0 skip the maps check.
 */
int bb_owner_liveness(const struct bb_box_info *info);

/* Is the process @pid (with @starttime) mapping the file dev/ino now? */
bool bb_pid_maps_file(pid_t pid, uint64_t starttime, uint64_t dev, uint64_t ino);

/* One record, as delivered to a walk callback. */
struct bb_record {
	uint32_t       stream;      /* index of its stream: the ring table's rings
				       first, in table order, then (3.0) each
				       thread's log: those found at open in the
				       order their threads first wrote, each one a
				       later walk finds after them (a reader's
				       indexes never change) */
	int32_t        tid;         /* thread that wrote it; 0 if unknown */
	const char    *thread_name; /* its name at claim, "" if unknown (shared and
				       important rings: the name of the thread
				       stream its tid holds) */
	uint64_t       pos;         /* byte position in its stream (a ring, or
				       3.0: its thread's log) */
	uint64_t       ts;          /* timestamp in ns of the box's clock; a TSC
				       box's ticks converted to CLOCK_MONOTONIC ns */
	int64_t        wall_ns;     /* CLOCK_REALTIME ns, from the anchors */
	uint8_t        tag;         /* enum bb_tag */
	uint8_t        flags;       /* BB_RF_* (BB_RF_CRC: the checksum was verified) */
	const uint8_t *value;       /* CBOR item, value_len bytes (the CRC trailer
				       excluded); valid in the callback */
	size_t         value_len;
	uint64_t       ts_raw;      /* the timestamp as stored (TSC ticks in a TSC box) */
	bool           important_copy; /* delivered from the important ring because
					  its original is gone (overwritten) */
	uint64_t       gap_before;  /* bytes of this stream lost right before this
				       record, exactly: a hole in its history
				       (records overwritten before they could be
				       read, segments taken from a thread's log,
				       or bytes that did not validate), 0 if
				       none.  The first record of a stream in a
				       walk has no hole before it (older ones
				       are simply gone), except in a FOLLOW
				       walk, which goes on from the last one's
				       end (a log first found after an earlier
				       walk: from its first byte). */
};

/*
 * What a stream is (struct bb_stream_stats.kind): the ring table's kinds
 * (enum bb_ring_kind, <blackbox/format.h>), a thread's log counting as the
 * one-thread kind.
 */
enum bb_stream_kind {
	BB_STREAM_THREAD    = BB_RING_PRIVATE,   /* one thread's: its log (3.0),
						    its private ring (2.x) */
	BB_STREAM_SHARED    = BB_RING_SHARED,    /* the shared ring */
	BB_STREAM_IMPORTANT = BB_RING_IMPORTANT, /* the important ring (2.0) */
};

/* Whether a thread holds a stream (struct bb_stream_stats.claim). */
enum bb_stream_claim {
	BB_STREAM_FREE    = BB_RING_FREE,    /* never used */
	BB_STREAM_OWNED   = BB_RING_OWNED,   /* a live thread writes it */
	BB_STREAM_RETIRED = BB_RING_RETIRED, /* its thread exited */
};

/* Per-stream verification counts, accumulated over every walk of a reader. */
struct bb_stream_stats {
	uint64_t read;         /* records delivered intact */
	uint64_t torn;         /* write interrupted by the owner's death (busy at head) */
	uint64_t overwritten;  /* lapped by the live writer before or while read */
	uint64_t corrupt;      /* failed validation: bad seq, length, position,
				  checksum (crc_bad included), bad descriptor */
	uint64_t skipped_bytes;/* bytes passed over after corruption */
	uint64_t crc_bad;      /* framing intact but the CRC32C did not match, or
				  BB_RF_CRC missing in a BB_HF_CRC32C box (2.0) */
	uint64_t dup_suppressed; /* important ring: copies not shown because
				    their original was delivered (2.0) */
	int32_t  tid;          /* current / last owner */
	uint32_t kind;         /* enum bb_stream_kind */
	uint32_t claim;        /* enum bb_stream_claim (a log: OWNED while its
				  thread lives, else RETIRED) */
	char     thread_name[16];
	/* "" or why a ring's descriptor was rejected (data outside the
	 * file, misaligned, overlapping): such a ring is never read, counted
	 * corrupt once, and the other rings are read normally (FORMAT §9.5).
	 * A log: the last segment descriptor of it rejected by a walk. */
	char     problem[128];
	uint32_t log;          /* 3.0: the log id of a thread's log; 0 for a ring */
	uint32_t segments;     /* 3.0: segments the log held at the last walk */
};

/* bb_reader_walk flags */
#define BB_WALK_MERGE   0x1u /* all streams merged by timestamp (else stream by
			      stream) */
#define BB_WALK_FOLLOW  0x2u /* only records newer than the previous walk's */

/*
 * Callback: return 0 to continue, anything else to stop the walk (the walk
 * then returns that value).
 */
typedef int (*bb_record_fn)(const struct bb_record *rec, void *arg);

/*
 * bb_reader_walk - deliver every intact record of every stream, per
 * docs/DESIGN.md §4: each record is copied, then re-validated against its
 * ring's tail (a log: its segment's owner word) and its seq; records that
 * cannot be proven intact are counted, never delivered.
 * A live reader first reads each stream's live part again (from where the
 * previous BB_WALK_FOLLOW walk stopped), each ring's head and tail just
 * before its bytes, its tail after them: records the writer overwrote
 * during the copy are counted overwritten, never delivered.
 * Returns 0, the callback's non-zero value, -ENOMEM, or -ESTALE (another
 * -errno of pread) when a live reader's file cannot be read any more.
 */
int bb_reader_walk(struct bb_reader *r, unsigned flags, bb_record_fn fn, void *arg);

/* Stats of stream @stream (NULL if out of range), and the sum over all
 * streams. */
const struct bb_stream_stats *bb_reader_stream_stats(const struct bb_reader *r, uint32_t stream);
void bb_reader_total_stats(const struct bb_reader *r, struct bb_stream_stats *sum);

/* Raw bytes of the box: the reader's copy, *len bytes (min(box_size, file
 * size)).  A live reader reads every byte again first (NULL, *len 0, when
 * it cannot); a snapshot holds zeros where a ring's dead bytes were
 * (BB_OPEN_SNAPSHOT). */
const void *bb_reader_data(const struct bb_reader *r, size_t *len);

/*
 * bb_reader_save - write a consistent copy of the box to @fd: the header,
 * tables and the ring and segment data, with each ring's tail raised past
 * anything overwritten during the copy, and each segment handed to another
 * thread during the copy left out (a live reader reads every byte again).
 * Returns 0 or a negative errno (-ESTALE: the file shrank).
 */
int bb_reader_save(struct bb_reader *r, int fd);

/* ---- crash area, state table, module area (format 2.0, FORMAT.md §11) ---- */

/* struct bb_crash.status */
enum bb_crash_status {
	BB_CRASH_NONE     = 0, /* no crash recorded (seq 0) */
	BB_CRASH_TORN     = 1, /* the handler started and never finished (seq 1),
				  or is writing right now: nothing is trusted */
	BB_CRASH_COMPLETE = 2, /* seq 2, envelope sane, CRC matches, value decoded */
	BB_CRASH_CORRUPT  = 3, /* anything else: bad seq word, envelope, CRC or
				  CBOR; ->problem says which */
	BB_CRASH_NO_ANSWER = 4, /* a crash stack (3.1): the thread ->tid (->thread)
				   was asked for its stack and did not answer
				   within the bound; ->problem says more */
};

#define BB_CRASH_MAX_FRAMES 256 /* more than a 2 KiB area can hold */

/* struct bb_crash.kind */
enum bb_crash_kind {
	BB_CRASH_KIND_SIGNAL  = 0, /* a fatal signal reached the crash handler
				      (also a record without "kind") */
	BB_CRASH_KIND_FATAL   = 1, /* bb_crash_record(): a panic, an assertion */
	BB_CRASH_KIND_UNKNOWN = 2, /* a kind this reader does not know */
	BB_CRASH_KIND_THREAD  = 3, /* a crash stack (3.1): another thread's stack,
				      frame 0 where the request interrupted it */
};

/* struct bb_crash.frame_flags[i] */
#define BB_CRASH_FRAME_EXACT  0x1u /* the address is an interrupted
				      instruction (look it up as is), not a
				      return address (look up address - 1) */
#define BB_CRASH_FRAME_SIGNAL 0x2u /* a signal trampoline: a signal handler
				      was running above this frame */

/* The crash record, decoded.  Fields other than status/problem are
 * meaningful only for BB_CRASH_COMPLETE (fields absent from the map are 0). */
struct bb_crash {
	int      status;       /* enum bb_crash_status */
	bool     crc_ok;       /* the CRC32C matched */
	int      kind;         /* enum bb_crash_kind */
	int32_t  signal;       /* signal number (kind SIGNAL) */
	int32_t  code;         /* si_code */
	bool     has_addr;     /* the record has a fault address ... */
	uint64_t addr;         /* ... this one */
	bool     has_sp;       /* the record has the stack pointer ... */
	uint64_t sp;           /* ... at the signal */
	bool     stack_overflow; /* SIGSEGV within 64 KiB of the stack pointer
				    (BB_CRASH_OVERFLOW_RANGE): the stack ran out */
	char     reason[256];  /* kind FATAL: why, cut to 255 bytes, NUL-
				  terminated ("" for none); raw box bytes */
	uint32_t reason_len;   /* bytes in reason[] (it may hold NUL bytes) */
	int32_t  tid;          /* the thread that took the signal */
	char     thread[16];   /* its name, NUL-terminated, cut to 15 bytes */
	uint64_t ts;           /* when, in ns of the box clock (TSC converted) */
	int64_t  wall_ns;      /* the same as CLOCK_REALTIME ns */
	uint32_t nframes;      /* entries of frames[] */
	bool     frames_truncated; /* more frames than BB_CRASH_MAX_FRAMES */
	uint64_t frames[BB_CRASH_MAX_FRAMES]; /* innermost first */
	uint8_t  frame_flags[BB_CRASH_MAX_FRAMES]; /* BB_CRASH_FRAME_* */
	uint32_t omitted_at;   /* frames_omitted frames were left out of the
				  record before frames[omitted_at] ... */
	uint32_t frames_omitted; /* ... (a stack deeper than the record holds) */
	char     problem[128]; /* "" or what is wrong (TORN / CORRUPT) */
};

/* A SIGSEGV whose fault address lies less than this many bytes from the
 * stack pointer (below or above) is a stack overflow: the access ran into
 * the end of the stack (its guard page or the gap below it). */
#define BB_CRASH_OVERFLOW_RANGE 65536u

/*
 * bb_reader_crash - read and decode the crash area of the box's header.
 * Never fails on a damaged box: the damage is the status.  A live owner
 * may be writing the area (first fatal signal): the area is copied once and
 * a busy seq reads as BB_CRASH_TORN.  A live reader reads the header again
 * first (the copy it has when that read fails).  Not AS-safe.
 * Returns 0, or -EINVAL if @r or @out is NULL.
 */
int bb_reader_crash(struct bb_reader *r, struct bb_crash *out);

/*
 * The crash stacks (format 3.1): at a crash, the crashing thread asks
 * every other thread of the process for its stack (3.1 writers: every
 * thread holding a thread slot), each into a slot of its own
 * (docs/FORMAT.md §11).
 * bb_reader_crash_stacks - *@slots: the box's crash stack slots (0 for a
 * box before 3.1), *@asked: the threads asked (more than @slots: the
 * others had no room).  Returns 0 or -EINVAL.
 * bb_reader_crash_stack - slot @i decoded into @out as a crash record of
 * kind BB_CRASH_KIND_THREAD: status BB_CRASH_NONE (nobody asked),
 * COMPLETE (the thread's tid, name, time and frames, innermost first),
 * NO_ANSWER (tid and name of the thread that did not answer), TORN or
 * CORRUPT (->problem).  Returns 0, -ENOENT (@i >= slots) or -EINVAL.
 * Neither fails on a damaged box.  Not AS-safe.
 */
int bb_reader_crash_stacks(struct bb_reader *r, uint32_t *slots, uint32_t *asked);
int bb_reader_crash_stack(struct bb_reader *r, uint32_t i, struct bb_crash *out);
/*
 * bb_reader_crash_threads - *@threads: the threads the process had at the
 * crash, the crashing one included (format 3.2); 0 when not counted (no
 * crash, a box before 3.2, or no /proc in the process).  Returns 0 or
 * -EINVAL.  Not AS-safe.
 */
int bb_reader_crash_threads(struct bb_reader *r, uint32_t *threads);

/* Names for output: "none", "torn", "complete", "corrupt", "no answer",
 * "unknown". */
const char *bb_crash_status_name(int status);

/* struct bb_state_entry.status */
enum bb_slot_status {
	BB_SLOT_OK      = 0, /* a consistent copy: key and value are valid */
	BB_SLOT_BUSY    = 1, /* odd or changing seq through every retry (a live
				writer, or a bb_set() that died mid-write) */
	BB_SLOT_CORRUPT = 2, /* stable but wrong: length, tag, CRC or CBOR */
};

/* One slot of the state table, as delivered to a bb_state_fn. */
struct bb_state_entry {
	uint32_t       slot;      /* index in the table */
	int            status;    /* enum bb_slot_status */
	const char    *key;       /* BB_SLOT_OK: the key (not NUL-terminated) */
	size_t         key_len;
	const uint8_t *value;     /* BB_SLOT_OK: the whole CBOR [key, value] item,
				     shaped like a BB_TAG_KV value (bb_format_value
				     with BB_TAG_KV prints it) */
	size_t         value_len;
	uint64_t       ts;        /* last change, ns of the box clock */
	int64_t        wall_ns;
	uint8_t        flags;     /* BB_RF_* of the slot */
	const char    *problem;   /* "" or what is wrong (BUSY / CORRUPT) */
};

/* Totals of one bb_reader_state() call. */
struct bb_state_stats {
	uint32_t slots;   /* slots in the table */
	uint32_t used;    /* slots delivered OK */
	uint32_t busy;    /* BB_SLOT_BUSY */
	uint32_t corrupt; /* BB_SLOT_CORRUPT */
};

typedef int (*bb_state_fn)(const struct bb_state_entry *e, void *arg);

/* Seqlock retries per slot before it is reported busy. */
#define BB_STATE_RETRIES 16

/*
 * bb_reader_state - call @fn for every used slot of the state table, in
 * slot order: a copy taken under the slot's seqlock (seq even and equal
 * before and after, FORMAT.md §11), CRC-checked, decoded.  Empty slots
 * (len 0) are skipped; busy and corrupt slots are delivered with their
 * status so a tool can report them.  A live writer can never make this
 * hang: each slot is tried BB_STATE_RETRIES times.  @st (may be NULL)
 * receives the totals.  Not AS-safe (copies into the reader's buffer).
 * Returns 0, @fn's non-zero value, -EINVAL (@r or @fn NULL),
 * -ENODATA when the box has no usable state table (see
 * info.state_problem for a table rejected by its bounds check), or
 * -ESTALE when a live reader's file shrank.
 */
int bb_reader_state(struct bb_reader *r, bb_state_fn fn, void *arg,
		    struct bb_state_stats *st);

/* One loaded object of the owner process. */
struct bb_module {
	const char    *path;      /* NUL-terminated, as the loader named it ("" for
				     the main program when the loader gave none) */
	uint64_t       bias;      /* load bias: offset = address - bias */
	uint64_t       start, end;/* [start, end) covers its loaded segments */
	const uint8_t *build_id;  /* GNU build id bytes (build_id_len may be 0) */
	size_t         build_id_len;
};

/* Module set flags */
#define BB_MODULES_TRUNCATED 0x1u /* the writer left some out (BB_MF_TRUNCATED) */

/*
 * bb_reader_modules - decode the module area: a consistent copy under its
 * seqlock (bounded retries), then the CBOR array of FORMAT.md §11.  On
 * success *@mods points to @*count entries owned by the reader, valid
 * until the next call or bb_reader_close(); @flags (may be NULL) gets
 * BB_MODULES_*.  Errors (@err says more):
 *  -ENODATA  the box has no module area (or one rejected at open)
 *  -EBUSY    the area was being rewritten through every retry
 *  -EBADMSG  the area is not what FORMAT.md §11 says (garbage)
 *  -ESTALE   a live reader's file shrank
 *  -EINVAL   @r, @mods or @count NULL;  -ENOMEM
 */
int bb_reader_modules(struct bb_reader *r, const struct bb_module **mods, size_t *count,
		      unsigned *flags, char *err, size_t errlen);

/*
 * bb_module_find - the module of @mods (@n entries) whose [start, end)
 * holds @addr, or NULL.  The offset to give a symboliser is addr - bias.
 * Pure function, AS-safe.
 */
const struct bb_module *bb_module_find(const struct bb_module *mods, size_t n,
				       uint64_t addr);

/*
 * bb_reader_ts_ns - convert a raw timestamp of the box to nanoseconds of its
 * clock: the identity unless info->clock is BB_CLOCK_TSC, then the
 * calibration of FORMAT.md §11.  Pure function, AS-safe.
 */
uint64_t bb_reader_ts_ns(const struct bb_box_info *info, uint64_t raw);

/*
 * Names, for output: "str", "i64", "u64", "f64", "bool", "bytes", "kv",
 * "event", "owner", "crash", "state", or "unknown".
 */
const char *bb_tag_name(unsigned tag);
/* "alive", "exited", "crashed", "closed", "orphaned", or "unknown". */
const char *bb_liveness_name(int liveness);

/*
 * bb_format_value - render a record's value as one line of text:
 * "text" for strings (quoted and escaped as bb_escape_text() says when they
 * hold anything but displayable characters), numbers, true/false,
 * hex for bytes, key=value, "name k=v k=v" for events.  Never allocates:
 * AS-safe (bb_dump uses it).  Output is always NUL-terminated and cut with
 * "..." when @buflen is too small.  Returns the length written, or -EBADMSG
 * if the CBOR is malformed or not the shape @tag says (then @buf holds a
 * short description).
 */
int bb_format_value(unsigned tag, unsigned flags, const uint8_t *value,
		    size_t len, char *buf, size_t buflen);

/*
 * bb_escape_text - @len bytes of untrusted text (a string from a box, a
 * file name, a message quoting them) as text safe to show on a terminal
 * or in a log: printable ASCII and valid UTF-8 characters pass unchanged;
 * a backslash becomes \\, newline, tab and carriage return \n \t \r, and
 * each other byte of a C0 control, DEL, a C1 control (U+0080..U+009F, raw
 * or UTF-8 encoded), a line or paragraph separator, a bidirectional
 * formatting character (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069)
 * or of invalid UTF-8 becomes \xNN.  The same rules quote strings in
 * bb_format_value().  Output is always NUL-terminated; when @buflen is too
 * small it is cut with "..." (never inside a UTF-8 character: a cut
 * output holds no byte the rules above would escape).
 * 4 * @len + 1 bytes always suffice.  Never allocates: AS-safe.
 * Returns the length written.
 */
size_t bb_escape_text(const char *s, size_t len, char *buf, size_t buflen);

/*
 * bb_scan_dir - call @fn for every directory entry of @dir (NULL =
 * BB_DEFAULT_DIR) whose name starts with BB_NAME_PREFIX, in no particular
 * order.  Nothing is opened or followed.  @fn returns 0 to continue.
 * Returns 0, @fn's value, or a negative errno from opendir.
 */
typedef int (*bb_scan_fn)(int dirfd, const char *name, void *arg);
int bb_scan_dir(const char *dir, bb_scan_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* BLACKBOX_READER_H */
