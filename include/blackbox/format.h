/* SPDX-License-Identifier: MIT */
/*
 * blackbox/format.h - the byte-level layout of a box, shared by the writer
 * (libblackbox) and every reader (the reader API, bb-extract, bb-reap).
 *
 * docs/FORMAT.md is the prose contract; this header is its C transcription.
 * Everything here is plain data: offsets, never pointers, so a box can be
 * read by another process, a copy on disk, or a later version of the tools.
 *
 * Fields that change while the owner runs (head, tail, ring claim, header
 * phase and counters) are accessed with atomics by the library; they are
 * declared as plain integers so this header stays usable from C++ and from
 * tools that only read copies.
 */
#ifndef BLACKBOX_FORMAT_H
#define BLACKBOX_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "BLACKBOX" read as a little-endian u64: bytes 42 4c 41 43 4b 42 4f 58. */
#define BB_MAGIC            UINT64_C(0x584f424b43414c42)
#define BB_FORMAT_MAJOR     3   /* a reader refuses a newer major */
#define BB_FORMAT_MINOR     3   /* a reader reads any minor of its major */
#define BB_FORMAT_MAJOR_OLDEST 2 /* the oldest major a reader still reads (2.x:
                                  * private rings, no segments) */
#define BB_BYTE_ORDER_MARK  UINT32_C(0x01020304) /* stored in writer order */

#define BB_HEADER_SIZE      4096u /* the header occupies exactly one 4 KiB block */
#define BB_RING_DESC_SIZE   128u  /* two cache lines per ring descriptor */
#define BB_RECORD_HDR_SIZE  16u   /* the record envelope */
#define BB_RECORD_ALIGN     8u    /* records start on 8-byte boundaries */
#define BB_RECORD_MAX       65528u /* len is a u16; largest 8-aligned length */
#define BB_RING_MIN_SIZE    4096u
#define BB_RING_MAX_SIZE    (UINT64_C(1) << 30)
#define BB_RING_MAX_COUNT   1024u

/* Segments (3.0): thread storage handed out as threads write
 * (docs/FORMAT.md §13). */
#define BB_SEG_DESC_SIZE    64u   /* one cache line per segment descriptor */
#define BB_THREAD_SLOT_SIZE 64u   /* one cache line per thread slot */
#define BB_LAST_WORDS_SIZE  128u  /* 3.2: a thread slot's last words entry */
#define BB_SEG_MIN_SIZE     4096u
#define BB_SEG_MAX_SIZE     (UINT32_C(1) << 30)
#define BB_SEG_MAX_COUNT    4096u /* segments, and thread slots, per box */
#define BB_SEG_NONE         UINT32_C(0xffffffff) /* no segment (an index) */

/* The crash area inside the header (2.0). */
#define BB_CRASH_OFFSET     2048u
#define BB_CRASH_SIZE       2048u
#define BB_CRASH_SEQ_EMPTY  0u
#define BB_CRASH_SEQ_BUSY   1u
#define BB_CRASH_SEQ_DONE   2u
/* The crash stacks (3.1): one slot of BB_CRASH_SIZE bytes per thread the
 * crashing thread asked for its stack (docs/FORMAT.md §11).  A slot's
 * seq word also takes: */
#define BB_CRASH_SEQ_ASKED  3u  /* asked, no answer yet: the slot's bytes
                                 * 16..19 hold the thread id asked (i32),
                                 * 20..35 its name (NUL-padded) */
#define BB_CRASH_SEQ_NO_ANSWER 4u /* as ASKED; the crashing thread stopped
                                   * waiting for the answer */
#define BB_CRASH_SEQ_NOT_ASKED 5u /* as ASKED, but never asked: the program
                                   * had replaced the handler of the stack
                                   * signal (its own, or the default) */
#define BB_CRASH_STACKS_MAX 32u /* slots at most */
/* The crash slots (3.2): the crash stacks in slots of BB_CRASH_SLOT_SIZE
 * bytes, seq words as above (docs/FORMAT.md §11).  A 3.2 writer fills
 * these and leaves the 3.1 fields 0. */
#define BB_CRASH_SLOT_SIZE  1024u
#define BB_CRASH_SLOTS_MAX  256u  /* slots at most */

/* A dump request (3.3): sigqueue(2) of header.dump_signal to the owner
 * with sival_int = BB_DUMP_REQUEST(kind, id): kind BB_DUMP_HANG writes
 * every thread's stack into the crash stacks area, kind BB_DUMP_SNAPSHOT
 * does what bb_snapshot() does; the owner then stores id in
 * header.dump_seq.  id: 1 .. BB_DUMP_ID_MAX. */
#define BB_DUMP_HANG        1u
#define BB_DUMP_SNAPSHOT    2u
#define BB_DUMP_ID_MAX      0xffffffu
#define BB_DUMP_REQUEST(kind, id) ((int)(0x40000000u | (uint32_t)(kind) << 24 | \
					 ((uint32_t)(id) & BB_DUMP_ID_MAX)))
#define BB_DUMP_IS_REQUEST(v) (((uint32_t)(v) & 0xf0000000u) == 0x40000000u)
#define BB_DUMP_KIND(v)     (((uint32_t)(v) >> 24) & 0x3fu)
#define BB_DUMP_VALUE(v)    ((uint32_t)(v) & BB_DUMP_ID_MAX)

/* Box file name: <BB_NAME_PREFIX><pid>.<starttime>.<n>, n = 0, 1, ... */
#define BB_NAME_PREFIX      "blackbox."
/* A copy bb-reap --archive made:
 * <BB_ARCHIVE_PREFIX><uid>-<comm>-<pid>-<YYYYmmddTHHMMSSZ>[.<n>].box */
#define BB_ARCHIVE_PREFIX   "blackbox-"

/* bb_header.clock */
enum bb_clock {
	BB_CLOCK_MONOTONIC = 1, /* CLOCK_MONOTONIC, nanoseconds */
	BB_CLOCK_REALTIME  = 2, /* CLOCK_REALTIME, nanoseconds */
	BB_CLOCK_BOOTTIME  = 3, /* CLOCK_BOOTTIME, nanoseconds */
	BB_CLOCK_TSC       = 4, /* raw x86-64 TSC ticks; header tsc_* convert (2.0) */
};

/*
 * bb_header.clock_reason (3.2): why the writer stamps records with the
 * clock it does (docs/FORMAT.md §11 "TSC clock").  0: not recorded (a box
 * of an older writer).
 */
enum bb_clock_reason {
	BB_CLOCK_WHY_UNKNOWN        = 0, /* not recorded */
	BB_CLOCK_WHY_TRUSTED        = 1, /* default: the kernel's clocksource is the
	                                  * TSC and the CPU's TSC is invariant: TSC */
	BB_CLOCK_WHY_CLOCKSOURCE    = 2, /* default: the kernel's clocksource is not
	                                  * the TSC (or unreadable): monotonic */
	BB_CLOCK_WHY_NOT_INVARIANT  = 3, /* default or asked TSC: the CPU reports no
	                                  * invariant TSC: monotonic */
	BB_CLOCK_WHY_ASKED          = 4, /* the clock asked for (bb_options.clock,
	                                  * BLACKBOX_CLOCK); a TSC the kernel trusts */
	BB_CLOCK_WHY_ASKED_UNTRUSTED = 5, /* TSC asked for and used although the
	                                  * kernel's clocksource is not the TSC */
	BB_CLOCK_WHY_CALIBRATION    = 6, /* the TSC failed calibration: monotonic */
	BB_CLOCK_WHY_NO_TSC         = 7, /* not x86-64: no TSC clock: monotonic */
};

/* bb_header.cgroup_hierarchy (2.1): which line of /proc/self/cgroup
 * bb_header.cgroup comes from. */
enum bb_cgroup_hierarchy {
	BB_CGROUP_NONE    = 0, /* not recorded */
	BB_CGROUP_UNIFIED = 1, /* "0::<path>": cgroup v2 (unified or hybrid mode) */
	BB_CGROUP_LEGACY  = 2, /* "<n>:name=systemd:<path>": cgroup v1 */
};

/* bb_header.flags (2.0) */
#define BB_HF_CRC32C      0x0001u /* the writer puts a CRC32C in every record (BB_RF_CRC) */

/* bb_header.phase: what became of the owner, as far as the box knows. */
enum bb_owner_phase {
	BB_PHASE_INIT    = 0, /* header being written (never seen with magic set) */
	BB_PHASE_RUNNING = 1, /* owner running, or died without a word */
	BB_PHASE_EXITED  = 2, /* exit()/return from main ran the atexit handler */
	BB_PHASE_CRASHED = 3, /* crash handler ran; phase_signal says which */
	BB_PHASE_CLOSED  = 4, /* bb_close() was called */
};

/*
 * The header: first 4096 bytes of the box.  Offsets are part of the format
 * (docs/FORMAT.md §3; the static assertions at the end of this header pin
 * them); new fields go into reserved space with a minor version bump.
 */
struct bb_header {
	uint64_t magic;              /*   0 BB_MAGIC; stored last, with release */
	uint16_t version_major;      /*   8 */
	uint16_t version_minor;      /*  10 */
	uint32_t header_size;        /*  12 BB_HEADER_SIZE */
	uint32_t byte_order;         /*  16 BB_BYTE_ORDER_MARK in writer order */
	uint8_t  word_size;          /*  20 sizeof(void *) of the writer */
	uint8_t  clock;              /*  21 enum bb_clock of record timestamps */
	uint16_t flags;              /*  22 BB_HF_* (BB_HF_CRC32C); other bits 0 */
	uint64_t box_size;           /*  24 bytes of the whole segment */
	uint32_t ring_count;         /*  32 descriptors in the ring table */
	uint32_t ring_desc_size;     /*  36 BB_RING_DESC_SIZE */
	uint64_t ring_table_offset;  /*  40 from the start of the box */
	uint64_t ring_size;          /*  48 data bytes per ring, power of two */
	uint32_t max_record;         /*  56 largest record len the writer makes */
	uint32_t page_size;          /*  60 writer's page size */

	/* owner identity (docs/DESIGN.md §6: pid + start time + boot id) */
	int32_t  pid;                /*  64 */
	uint32_t uid;                /*  68 */
	uint64_t starttime;          /*  72 /proc/<pid>/stat field 22, clock ticks */
	char     boot_id[40];        /*  80 /proc/sys/kernel/random/boot_id, NUL-terminated */
	char     comm[32];           /* 120 NUL-terminated */
	char     cmdline[256];       /* 152 argv joined by spaces, NUL-terminated, truncated */

	/* clocks: wall = anchor_realtime_ns + (ts - anchor_clock_ns) */
	int64_t  anchor_realtime_ns; /* 408 CLOCK_REALTIME at bb_init */
	int64_t  anchor_clock_ns;    /* 416 the record clock at the same instant */
	uint64_t created_ns;         /* 424 CLOCK_REALTIME when the box was created */
	uint32_t sequence;           /* 432 n of the file name (boxes of one incarnation) */
	uint32_t reserved0;          /* 436 */

	/* changed at run time (atomically) */
	uint32_t phase;              /* 440 enum bb_owner_phase */
	int32_t  phase_signal;       /* 444 signal number when CRASHED */
	uint64_t phase_ns;           /* 448 CLOCK_REALTIME of the last phase change */
	uint64_t dropped_busy;       /* 456 shared ring lock not acquired in bounded spin */
	uint64_t dropped_nested;     /* 464 nested write while this thread held the shared ring */
	uint64_t truncated;          /* 472 records truncated to max_record */
	uint64_t retire_counter;     /* 480 LRU clock for retired rings */
	uint64_t dropped_toobig;     /* 488 records that could not fit even truncated */

	/*
	 * Format 2.0 additions (over the pre-release 1.0).  Zero always
	 * means "absent".
	 */
	/* TSC clock (clock == BB_CLOCK_TSC): monotonic_ns =
	 *   anchor_clock_ns + (((unsigned __int128)(ts - tsc_anchor) * tsc_mult) >> tsc_shift)
	 * where ts - tsc_anchor is computed as a signed 64-bit difference (a
	 * record stamped before calibration ends gives a small negative value). */
	uint64_t tsc_anchor;         /* 496 TSC value at the instant anchor_clock_ns was read */
	uint64_t tsc_hz;             /* 504 calibrated TSC frequency, informational */
	uint32_t tsc_mult;           /* 512 */
	uint32_t tsc_shift;          /* 516 */
	uint8_t  clock_requested;    /* 520 enum bb_clock asked for (env/options); 0 = default.
	                              *     clock != clock_requested means a fallback */
	uint8_t  clock_reason;       /* 521 enum bb_clock_reason (3.2); 0 = not recorded */
	uint8_t  reserved1[2];       /* 522 */
	uint32_t state_slot_count;   /* 524 slots in the state table, 0 = no table */
	uint64_t state_table_offset; /* 528 from the start of the box */
	uint32_t state_slot_size;    /* 536 bytes per slot, multiple of 8, >= 64 */
	uint32_t modules_size;       /* 540 bytes of the module area, 0 = none */
	uint64_t modules_offset;     /* 544 from the start of the box */
	uint64_t dropped_important;  /* 552 important copies dropped: important ring busy */
	uint64_t state_errors;       /* 560 bb_set() calls that failed (busy slot, table full) */

	/*
	 * Format 2.1 additions: the systemd unit the owner ran in, as it
	 * saw itself at bb_init (docs/FORMAT.md §12).  Claims of the owner,
	 * like comm.  Zero always means "not recorded".
	 */
	uint8_t  cgroup_hierarchy;   /* 568 enum bb_cgroup_hierarchy of cgroup[] */
	uint8_t  reserved2[7];       /* 569 */
	char     invocation_id[40];  /* 576 $INVOCATION_ID (32 hex digits), NUL-terminated */
	char     cgroup[512];        /* 616 the owner's cgroup path in systemd's hierarchy
	                              *     (/proc/self/cgroup), NUL-terminated; "" when
	                              *     unknown or longer than 511 bytes */

	/*
	 * Format 3.0 additions: segments, the thread storage, and the
	 * thread table (docs/FORMAT.md §13).  All zero in a 2.x box.
	 */
	uint32_t seg_count;          /* 1128 segments */
	uint32_t seg_size;           /* 1132 data bytes per segment: power of two */
	uint64_t seg_table_offset;   /* 1136 seg_count descriptors of seg_desc_size */
	uint64_t seg_data_offset;    /* 1144 segment i at seg_data_offset + i * seg_size */
	uint32_t thread_count;       /* 1152 slots in the thread table */
	uint32_t seg_desc_size;      /* 1156 BB_SEG_DESC_SIZE */
	uint64_t thread_table_offset;/* 1160 thread_count slots of thread_slot_size */
	uint32_t thread_slot_size;   /* 1168 BB_THREAD_SLOT_SIZE */
	uint32_t reserved3;          /* 1172 */
	uint64_t seg_next;           /* 1176 never-used segments handed out (bump counter) */
	uint64_t log_next;           /* 1184 thread logs started: the newest log id */
	uint64_t seg_stolen;         /* 1192 segments taken from another thread's log */
	uint64_t seg_restarted;      /* 1200 a thread with one segment started it over */
	uint64_t overflow;           /* 1208 records a thread wrote to the shared ring
	                              *      because it had no segment */
	/*
	 * Format 3.1: every thread's stack at a crash (docs/FORMAT.md §11).
	 * Zero: no crash stacks area.
	 */
	uint64_t crash_stacks_offset;/* 1216 crash_stacks_count slots of BB_CRASH_SIZE */
	uint32_t crash_stacks_count; /* 1224 at most BB_CRASH_STACKS_MAX */
	uint32_t crash_stacks_asked; /* 1228 threads asked (may exceed count: those
	                              *      beyond it were not asked, no room) */
	/*
	 * Format 3.2: the threads the process had at a crash, the crashing
	 * one included, as it found them (/proc/self/task); 0: not counted
	 * (a writer before 3.2, or no /proc).  The crash slots: the crash
	 * stacks in smaller slots, which a 3.1 reader does not know of (it
	 * sees crash_stacks_count 0).
	 */
	uint32_t crash_threads;      /* 1232 */
	uint32_t crash_slot_size;    /* 1236 BB_CRASH_SLOT_SIZE */
	uint64_t crash_slots_offset; /* 1240 crash_slots_count slots of crash_slot_size */
	uint32_t crash_slots_count;  /* 1248 at most BB_CRASH_SLOTS_MAX */
	uint32_t reserved4;          /* 1252 */
	/*
	 * Format 3.2: last words and recycling (docs/FORMAT.md §13).  Zero:
	 * no last words table (3.0, 3.1).
	 */
	uint64_t last_words_offset;  /* 1256 thread_count entries of last_words_size */
	uint32_t last_words_size;    /* 1264 BB_LAST_WORDS_SIZE */
	uint32_t reserved5;          /* 1268 */
	uint64_t recycled_gone;      /* 1272 records of logs no longer in the box:
	                              *      their thread slot went to another
	                              *      thread (each log's recycled and last
	                              *      words, added when its slot is reused) */
	uint64_t logs_gone;          /* 1280 such logs */
	/*
	 * Format 3.3: heartbeats, hang dumps and snapshots (docs/FORMAT.md
	 * §14).  Zero: none declared, none asked.
	 */
	uint32_t watchdog_ms;        /* 1288 smallest deadline a thread declared
	                              *      (bb_watchdog()); 0: none */
	int32_t  dump_signal;        /* 1292 the real-time signal that asks the
	                              *      owner for a dump (the crash stacks'
	                              *      signal); 0: none */
	uint32_t snapshot_seq;       /* 1296 snapshots asked (bb_snapshot()) */
	uint32_t dump_seq;           /* 1300 the id of the last dump answered
	                              *      (BB_DUMP_VALUE() of the request) */
	uint8_t  reserved[BB_CRASH_OFFSET - 1304];

	/* The crash area: written once by the crash handler (first fatal
	 * signal wins), a record envelope + value exactly like a ring record,
	 * tag BB_TAG_CRASH.  seq: 0 = empty, 1 = being written, 2 = complete. */
	uint8_t  crash[BB_CRASH_SIZE];  /* 2048 */
};

/* bb_ring_desc.kind */
enum bb_ring_kind {
	BB_RING_PRIVATE = 1, /* one thread writes it at a time */
	BB_RING_SHARED  = 2, /* serialised by the lock word; records carry a tid */
	BB_RING_IMPORTANT = 3, /* 2.0: copies of BB_RF_IMPORTANT records only; locked
	                        * like the shared ring; records carry a tid */
};

/* bb_ring_desc.claim (private rings, 2.x) and bb_thread_slot.claim (3.0) */
enum bb_ring_claim {
	BB_RING_FREE    = 0, /* never used */
	BB_RING_OWNED   = 1, /* a live thread writes it */
	BB_RING_RETIRED = 2, /* its thread exited; data kept, may be recycled */
};

/*
 * Ring descriptor, 128 bytes.  Cache line 0 is written by the ring's writer
 * on every record; cache line 1 only when the ring changes hands.
 */
struct bb_ring_desc {
	uint64_t head;        /*   0 end of the newest committed record (byte counter) */
	uint64_t tail;        /*   8 start of the oldest intact record (byte counter) */
	uint64_t pad0[6];     /*  16 */
	uint32_t claim;       /*  64 enum bb_ring_claim */
	uint32_t kind;        /*  68 enum bb_ring_kind */
	int32_t  tid;         /*  72 current (or last) owner thread id; 0 = none */
	uint32_t generation;  /*  76 times the ring was claimed */
	uint64_t data_offset; /*  80 from the start of the box; page aligned */
	uint64_t retired_at;  /*  88 header.retire_counter value when retired */
	char     thread_name[16]; /* 96 owner's name at claim, NUL-terminated */
	int32_t  lock;        /* 112 shared ring: tid of the holder, 0 = free */
	uint32_t reserved0;   /* 116 */
	uint64_t reserved1;   /* 120 */
};

/*
 * Segments (3.0, docs/FORMAT.md §13).  A thread's records form its *log*:
 * a sequence of byte positions (free-running, starting at 0, never reused
 * by the log) stored in a chain of segments.  A segment holds the log's
 * positions [start, head) at its data bytes [0, head - start); records
 * never span segments.  The owner word says who holds the segment:
 */
enum bb_seg_state {
	BB_SEG_FREE     = 0, /* never used */
	BB_SEG_CLAIMING = 1, /* being handed to a thread: nothing in it is valid */
	BB_SEG_OPEN     = 2, /* its thread's current segment: written, never taken */
	BB_SEG_SEALED   = 3, /* its thread moved on (or exited): complete, may be taken */
};
/* own = log id << 32 | generation << 2 | state.  The generation (30 bits,
 * wrapping) counts the segment's hand-overs: a reader compares it before
 * and after a copy (a seqlock). */
#define BB_SEG_STATE(own)  ((uint32_t)(own) & 3u)
#define BB_SEG_GEN(own)    ((uint32_t)(own) >> 2)
#define BB_SEG_LOG(own)    ((uint32_t)((uint64_t)(own) >> 32))
#define BB_SEG_OWN(state, gen, log) \
	((uint64_t)(uint32_t)(log) << 32 | (uint64_t)((uint32_t)(gen) & 0x3fffffffu) << 2 | \
	 (uint64_t)((state) & 3u))
/* The same hand-over: equal but for the state (OPEN -> SEALED). */
#define BB_SEG_SAME_USE(a, b) ((((uint64_t)(a) ^ (uint64_t)(b)) & ~(uint64_t)3u) == 0)

/* Segment descriptor, 64 bytes: one cache line, written by its owner on
 * every record (head) and by the thread that takes it over. */
struct bb_seg_desc {
	uint64_t own;         /*   0 BB_SEG_OWN(state, generation, log id) */
	uint64_t head;        /*   8 log position just past the newest committed record */
	uint64_t start;       /*  16 log position of the segment's first byte */
	uint32_t ord;         /*  24 ordinal in its thread slot's sequence of segments */
	uint32_t next;        /*  28 the segment its log continued in; BB_SEG_NONE */
	int32_t  tid;         /*  32 the log's thread */
	uint32_t slot;        /*  36 the log's thread slot */
	char     thread_name[16]; /* 40 the thread's name when it took the segment */
	uint64_t reserved0;   /*  56 */
};

/*
 * Thread slot, 64 bytes: the thread table lists the threads whose logs
 * hold segments, live (OWNED) or exited (RETIRED).  queue names the
 * log's oldest segment; the log's segments follow by bb_seg_desc.next up
 * to current.
 */
struct bb_thread_slot {
	uint64_t queue;       /*   0 oldest segment: index (low 32 bits; BB_SEG_NONE:
	                       *     none) | its ordinal << 32 */
	uint32_t claim;       /*   8 enum bb_ring_claim: FREE, OWNED, RETIRED */
	uint32_t log;         /*  12 log id of its thread (current or last) */
	int32_t  tid;         /*  16 */
	uint32_t current;     /*  20 the log's newest segment; BB_SEG_NONE */
	uint32_t cur_ord;     /*  24 its ordinal */
	uint32_t watchdog_ms; /*  28 3.3: its deadline; 0: none declared */
	char     thread_name[16]; /* 32 */
	uint64_t recycled;    /*  48 3.2: records of the log taken out of the box
	                       *     with its segments (the last words kept are
	                       *     not counted) */
	uint64_t heartbeat;   /*  56 3.3: record clock stamp of the thread's
	                       *     last bb_heartbeat() or bb_watchdog() */
};

/*
 * Last words (3.2), one entry per thread slot, BB_LAST_WORDS_SIZE bytes:
 * the newest record of a log whose last segment was taken, copied by the
 * thread that took it, at its log position.  The same seqlock as a
 * segment's: own goes CLAIMING (next generation), a release fence, start,
 * head and data, then own SEALED with release.  Valid when own is SEALED;
 * it then holds the log positions [start, head) at data, as a segment
 * would (one record: envelope, value, CRC trailer).
 */
struct bb_last_words {
	uint64_t own;         /*   0 BB_SEG_OWN(state, generation, log id) */
	uint64_t start;       /*   8 log position of the record */
	uint64_t head;        /*  16 just past it */
	uint8_t  data[BB_LAST_WORDS_SIZE - 24]; /* 24 */
};
#define BB_LAST_WORDS_DATA (BB_LAST_WORDS_SIZE - 24u) /* the largest record kept */
#define BB_QUEUE(idx, ord)  ((uint64_t)(uint32_t)(ord) << 32 | (uint32_t)(idx))
#define BB_QUEUE_IDX(q)     ((uint32_t)(q))
#define BB_QUEUE_ORD(q)     ((uint32_t)((uint64_t)(q) >> 32))

/*
 * Record envelope (16 bytes), then the value, then zero padding to 8.
 * head, tail and every record position are free-running byte counters; a
 * record at position pos lives at data offset (pos & (ring_size - 1)).
 */
struct bb_record_hdr {
	uint32_t seq;   /* BB_SEQ_BUSY(pos) while written, BB_SEQ_DONE(pos) after */
	uint16_t len;   /* exact bytes: envelope + extensions + value (no padding) */
	uint8_t  tag;   /* enum bb_tag */
	uint8_t  flags; /* BB_RF_* */
	uint64_t ts;    /* timestamp in the header's clock */
};

/* seq: the position in 8-byte units, shifted left once, low bit = busy. */
#define BB_SEQ_DONE(pos)  ((uint32_t)(((uint64_t)(pos) >> 3) << 1))
#define BB_SEQ_BUSY(pos)  (BB_SEQ_DONE(pos) | 1u)

/* Bytes a record of exact length len occupies in the ring. */
#define BB_RECORD_STRIDE(len) (((uint64_t)(len) + 7u) & ~(uint64_t)7u)

/* bb_record_hdr.flags */
#define BB_RF_TRUNCATED  0x01u /* the value was cut to fit max_record */
#define BB_RF_TID        0x02u /* an 8-byte extension follows: i32 tid, u32 0 */
#define BB_RF_IMPORTANT  0x04u /* marked important by the writer */
#define BB_RF_CRC        0x08u /* 2.0: the record's last 4 bytes (inside len) are
                                * a CRC32C, docs/FORMAT.md §11 "Record checksum" */

/*
 * CRC32C (Castagnoli, reflected polynomial 0x82f63b78, initial value
 * 0xffffffff, final xor 0xffffffff: the iSCSI / SSE4.2 crc32 instruction
 * convention) over, in this order (docs/FORMAT.md §11, half-open ranges of
 * the record's bytes):
 *   1. the record's committed seq word BB_SEQ_DONE(pos), 4 bytes little-endian;
 *   2. [4, 8): len, tag, flags;
 *   3. [16, len - 4): the extensions and the value;
 *   4. [8, 16): ts, last.
 * Stored little-endian at offset len - 4.  A state slot uses its own
 * committed seq word the same way; the crash area uses BB_CRASH_SEQ_DONE.
 */
#define BB_CRC_SIZE      4u

/* bb_record_hdr.tag: what the CBOR value holds (docs/FORMAT.md §5). */
enum bb_tag {
	BB_TAG_STR   = 1,  /* text string */
	BB_TAG_I64   = 2,  /* integer (major type 0 or 1) */
	BB_TAG_U64   = 3,  /* unsigned integer */
	BB_TAG_F64   = 4,  /* float (double precision) */
	BB_TAG_BOOL  = 5,  /* true / false */
	BB_TAG_BYTES = 6,  /* byte string */
	BB_TAG_KV    = 7,  /* array(2): [text key, value] */
	BB_TAG_EVENT = 8,  /* array(2): [text name, map(n) {text key: value}] */
	BB_TAG_OWNER = 9,  /* array(4): [tid, thread name, previous tid, previous name] */
	BB_TAG_CRASH = 10, /* map {"signal", "code", "addr", "tid", "thread", "frames": [u64...]}
	                    * (2.0, the crash area; docs/FORMAT.md §11) */
	BB_TAG_STATE = 11, /* array(2): [text key, value] in a state slot (2.0) */
	BB_TAG_MODULES = 12, /* array of [path, bias, start, end, build id bytes] (2.0) */
	BB_TAG_SPAN_BEGIN = 13, /* array(3..5): [text name, map(n) {text key: value},
	                         * uint depth, (uint flow id | null), (bytes(24)
	                         * trace id 16 + span id 8)] (3.2, FORMAT.md §6) */
	BB_TAG_SPAN_END = 14,   /* uint depth: closes the open span of that depth (3.2) */
};

/* A span's correlation (BB_TAG_SPAN_BEGIN's 5th item): a W3C trace
 * context's trace id then its parent (span) id. */
#define BB_SPAN_TRACE_ID_SIZE 16u
#define BB_SPAN_SPAN_ID_SIZE  8u
#define BB_SPAN_CTX_SIZE      (BB_SPAN_TRACE_ID_SIZE + BB_SPAN_SPAN_ID_SIZE)

/*
 * State table (2.0): state_slot_count slots of state_slot_size bytes at
 * state_table_offset.  A slot is a record envelope + CBOR value, tag
 * BB_TAG_STATE, value [key, value]; len = 0 marks an empty or unset slot.
 * The seq word is a per-slot seqlock: even = stable, odd = being written,
 * incremented by one at the start and the end of every change.  A reader
 * copies the slot, re-reads seq, and keeps the copy only if seq is even
 * and unchanged (and the CRC matches when BB_RF_CRC is set).
 */

/*
 * Module area (2.0): modules_size bytes at modules_offset.  Starts with
 * struct bb_modules_hdr, then len bytes of CBOR: an array of arrays
 * [text path, uint load bias, uint start, uint end, bytes build id], one
 * per loaded object (dl_iterate_phdr order; the main program first).
 * Seqlocked like a state slot (seq even = stable) because a refresh after
 * dlopen rewrites it while the owner runs.
 */
struct bb_modules_hdr {
	uint32_t seq;     /* even = stable, odd = being rewritten */
	uint32_t len;     /* CBOR bytes that follow, <= modules_size - 24 */
	uint64_t ts;      /* record clock when gathered */
	uint32_t count;   /* modules in the array */
	uint32_t flags;   /* BB_MF_TRUNCATED: modules left out for lack of room */
};
#define BB_MF_TRUNCATED  0x1u

/*
 * The layout above is the format (docs/FORMAT.md §3, §4, §5, §11): pinned
 * here, so that every program including this header, a third-party reader
 * too, fails to compile where its ABI would lay the structures out
 * otherwise.  tests/lib/test_format_doc.c checks every offset of
 * FORMAT.md's tables against offsetof().
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define BB__FORMAT_ASSERT(c, name) static_assert(c, #name)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define BB__FORMAT_ASSERT(c, name) _Static_assert(c, #name)
#else
#define BB__FORMAT_ASSERT(c, name) typedef char bb__format_assert_##name[(c) ? 1 : -1]
#endif
BB__FORMAT_ASSERT(sizeof(struct bb_header) == BB_HEADER_SIZE, header_is_one_4k_block);
BB__FORMAT_ASSERT(sizeof(struct bb_ring_desc) == BB_RING_DESC_SIZE, ring_descriptor_size);
BB__FORMAT_ASSERT(sizeof(struct bb_record_hdr) == BB_RECORD_HDR_SIZE, record_envelope_size);
BB__FORMAT_ASSERT(offsetof(struct bb_header, pid) == 64, header_pid);
BB__FORMAT_ASSERT(offsetof(struct bb_header, anchor_realtime_ns) == 408, header_anchor);
BB__FORMAT_ASSERT(offsetof(struct bb_header, phase) == 440, header_phase);
BB__FORMAT_ASSERT(offsetof(struct bb_header, dropped_toobig) == 488, header_dropped_toobig);
BB__FORMAT_ASSERT(offsetof(struct bb_header, tsc_anchor) == 496, header_tsc_anchor);
BB__FORMAT_ASSERT(offsetof(struct bb_header, clock_requested) == 520, header_clock_requested);
BB__FORMAT_ASSERT(offsetof(struct bb_header, clock_reason) == 521, header_clock_reason);
BB__FORMAT_ASSERT(offsetof(struct bb_header, state_table_offset) == 528, header_state_table);
BB__FORMAT_ASSERT(offsetof(struct bb_header, modules_offset) == 544, header_modules);
BB__FORMAT_ASSERT(offsetof(struct bb_header, state_errors) == 560, header_state_errors);
BB__FORMAT_ASSERT(offsetof(struct bb_header, cgroup_hierarchy) == 568, header_cgroup_hierarchy);
BB__FORMAT_ASSERT(offsetof(struct bb_header, invocation_id) == 576, header_invocation_id);
BB__FORMAT_ASSERT(offsetof(struct bb_header, cgroup) == 616, header_cgroup);
BB__FORMAT_ASSERT(offsetof(struct bb_header, seg_count) == 1128, header_seg_count);
BB__FORMAT_ASSERT(offsetof(struct bb_header, overflow) == 1208, header_overflow);
BB__FORMAT_ASSERT(offsetof(struct bb_header, crash_stacks_offset) == 1216, header_crash_stacks);
BB__FORMAT_ASSERT(offsetof(struct bb_header, crash_threads) == 1232, header_crash_threads);
BB__FORMAT_ASSERT(offsetof(struct bb_header, crash_slots_offset) == 1240, header_crash_slots);
BB__FORMAT_ASSERT(offsetof(struct bb_header, last_words_offset) == 1256, header_last_words);
BB__FORMAT_ASSERT(offsetof(struct bb_header, logs_gone) == 1280, header_logs_gone);
BB__FORMAT_ASSERT(offsetof(struct bb_header, watchdog_ms) == 1288, header_watchdog);
BB__FORMAT_ASSERT(offsetof(struct bb_header, dump_seq) == 1300, header_dump_seq);
BB__FORMAT_ASSERT(offsetof(struct bb_header, reserved) == 1304, header_reserved_tail);
BB__FORMAT_ASSERT(offsetof(struct bb_thread_slot, watchdog_ms) == 28, slot_watchdog);
BB__FORMAT_ASSERT(offsetof(struct bb_thread_slot, recycled) == 48, slot_recycled);
BB__FORMAT_ASSERT(offsetof(struct bb_thread_slot, heartbeat) == 56, slot_heartbeat);
BB__FORMAT_ASSERT(offsetof(struct bb_header, crash) == BB_CRASH_OFFSET, header_crash_area);
BB__FORMAT_ASSERT(sizeof(struct bb_seg_desc) == BB_SEG_DESC_SIZE, segment_descriptor_size);
BB__FORMAT_ASSERT(sizeof(struct bb_thread_slot) == BB_THREAD_SLOT_SIZE, thread_slot_size);
BB__FORMAT_ASSERT(sizeof(struct bb_last_words) == BB_LAST_WORDS_SIZE, last_words_size);
BB__FORMAT_ASSERT(sizeof(struct bb_modules_hdr) == 24, module_area_header);
BB__FORMAT_ASSERT(offsetof(struct bb_ring_desc, claim) == 64, head_tail_alone_on_line_0);
BB__FORMAT_ASSERT(offsetof(struct bb_ring_desc, lock) == 112, descriptor_lock);
BB__FORMAT_ASSERT(offsetof(struct bb_record_hdr, ts) == 8, envelope_ts);

#ifdef __cplusplus
}
#endif

#endif /* BLACKBOX_FORMAT_H */
