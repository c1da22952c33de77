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
#define BB_OPEN_SNAPSHOT   0x1u /* copy the file into private memory at open:
				   a consistent, immutable view (post mortem) */
#define BB_OPEN_ANY_OWNER  0x2u /* accept a file whose owner uid differs from
				   the header's uid (default: refused, -EPERM) */

/* What became of a box's owner (DESIGN §6). */
enum bb_liveness {
	BB_OWNER_ALIVE    = 1, /* pid exists, start time matches, maps the box */
	BB_OWNER_EXITED   = 2, /* exited cleanly (atexit ran, box kept) */
	BB_OWNER_CRASHED  = 3, /* crash handler recorded a fatal signal */
	BB_OWNER_CLOSED   = 4, /* bb_close() ran (box kept by a copy) */
	BB_OWNER_ORPHANED = 5, /* gone without a word: SIGKILL, _exit, exec ... */
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
	uint32_t ring_count;
	uint32_t rings_used;   /* rings that were ever claimed / written */
	uint64_t ring_size;
	uint32_t max_record;
	int32_t  pid;
	uint32_t uid;
	uint64_t starttime;
	uint32_t sequence;
	char     boot_id[40];
	char     comm[32];
	char     cmdline[256];
	int      clock;        /* enum bb_clock */
	int64_t  anchor_realtime_ns, anchor_clock_ns;
	uint64_t created_ns;
	int      state;        /* enum bb_owner_state */
	int      state_signal;
	uint64_t state_ns;
	uint64_t dropped_busy, dropped_nested, truncated, dropped_toobig;
};

/*
 * Open a box.  On success *out holds a reader; free it with
 * bb_reader_close().  Errors (the message in @err says more):
 *  -ENOENT    no such file
 *  -ELOOP     the path is a symlink (never followed)
 *  -EISDIR / -EINVAL   not a regular file
 *  -EACCES    not readable by the caller
 *  -EPERM     file owner differs from the header's uid (see BB_OPEN_ANY_OWNER)
 *  -ENODATA   empty or shorter than a header (incl. a box still being created)
 *  -EBADMSG   bad magic, impossible sizes or offsets: not a box
 *  -EPROTONOSUPPORT  a newer major format version
 *  -EPFNOSUPPORT     another byte order or word size
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
 * Open the box of @pid in @dir (NULL = BB_DEFAULT_DIR): the box the process
 * maps now if it is alive, otherwise the newest box it left (created_ns,
 * then sequence).  -ESRCH if there is none; other errors as above.
 */
int bb_reader_open_pid(pid_t pid, const char *dir, unsigned flags,
		       struct bb_reader **out, char *err, size_t errlen);

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
	uint32_t       ring;        /* index in the ring table */
	int32_t        tid;         /* thread that wrote it; 0 if unknown */
	const char    *thread_name; /* its name at claim, "" if unknown */
	uint64_t       pos;         /* byte position in its ring */
	uint64_t       ts;          /* timestamp in the box's clock (ns) */
	int64_t        wall_ns;     /* CLOCK_REALTIME ns, from the anchors */
	uint8_t        tag;         /* enum bb_tag */
	uint8_t        flags;       /* BB_RF_* */
	const uint8_t *value;       /* CBOR item, value_len bytes; valid in the callback */
	size_t         value_len;
};

/* Per-ring verification counts, accumulated over every walk of a reader. */
struct bb_ring_stats {
	uint64_t read;         /* records delivered intact */
	uint64_t torn;         /* write interrupted by the owner's death (busy at head) */
	uint64_t overwritten;  /* lapped by the live writer before or while read */
	uint64_t corrupt;      /* failed validation: bad seq, length, position */
	uint64_t skipped_bytes;/* bytes passed over after corruption */
	int32_t  tid;          /* current / last owner */
	uint32_t kind;         /* enum bb_ring_kind */
	uint32_t state;        /* enum bb_ring_state */
	char     thread_name[16];
};

/* bb_reader_walk flags */
#define BB_WALK_MERGE   0x1u /* all rings merged by timestamp (else ring by ring) */
#define BB_WALK_FOLLOW  0x2u /* only records newer than the previous walk's */

/*
 * Callback: return 0 to continue, anything else to stop the walk (the walk
 * then returns that value).
 */
typedef int (*bb_record_fn)(const struct bb_record *rec, void *arg);

/*
 * bb_reader_walk - deliver every intact record of every ring, per DESIGN §4:
 * each record is copied, then re-validated against the ring's tail and its
 * seq; records that cannot be proven intact are counted, never delivered.
 * Returns 0, the callback's non-zero value, or -ENOMEM.
 */
int bb_reader_walk(struct bb_reader *r, unsigned flags, bb_record_fn fn, void *arg);

/* Stats of ring @ring (NULL if out of range), and the sum over all rings. */
const struct bb_ring_stats *bb_reader_ring_stats(const struct bb_reader *r, uint32_t ring);
void bb_reader_total_stats(const struct bb_reader *r, struct bb_ring_stats *sum);

/* Raw bytes of the box (the snapshot or the live mapping) for --save. */
const void *bb_reader_data(const struct bb_reader *r, size_t *len);

/*
 * bb_reader_save - write a consistent copy of the box to @fd: the header,
 * ring table and the ring data, with each ring's tail raised past anything
 * overwritten during the copy.  Returns 0 or a negative errno.
 */
int bb_reader_save(struct bb_reader *r, int fd);

/*
 * Names, for output: "str", "i64", "u64", "f64", "bool", "bytes", "kv",
 * "event", "owner", "crash", "state", or "unknown".
 */
const char *bb_tag_name(unsigned tag);
/* "alive", "exited", "crashed", "closed", "orphaned", or "unknown". */
const char *bb_liveness_name(int liveness);

/*
 * bb_format_value - render a record's value as one line of text:
 * "text" for strings (quoted and escaped when needed), numbers, true/false,
 * hex for bytes, key=value, "name k=v k=v" for events.  Never allocates:
 * AS-safe (bb_dump uses it).  Output is always NUL-terminated and cut with
 * "..." when @buflen is too small.  Returns the length written, or -EBADMSG
 * if the CBOR is malformed or not the shape @tag says (then @buf holds a
 * short description).
 */
int bb_format_value(unsigned tag, unsigned flags, const uint8_t *value,
		    size_t len, char *buf, size_t buflen);

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
