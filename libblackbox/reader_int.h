/* SPDX-License-Identifier: MIT */
/*
 * reader_int.h - the reader's private state and the helpers its files
 * share (reader.c: open, close, data, save; reader_validate.c: header and
 * ring table; reader_snapshot.c: copying the box file; reader_liveness.c;
 * reader_scan.c: finding a process's box; reader_walk.c: records;
 * reader_areas.c: crash area, state table, module area).  Internal, do
 * not use outside the library.
 */
#ifndef BB_READER_INT_H
#define BB_READER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <blackbox/reader.h>

#include "clock.h"
#include "ring.h"

/* A stream (docs/DESIGN.md §1): a ring of the ring table, or (3.0) a
 * thread's log (is_log: its segments are in r->segs during a walk, v is
 * unused). */
struct rstream {
	struct bb__extent v;
	struct bb_stream_stats st;
	uint64_t next;       /* where a BB_WALK_FOLLOW walk resumes */
	uint64_t end;        /* where the current walk's collection ended */
	uint64_t torn_head;  /* head at which a torn record was counted */
	bool has_next, torn_counted;
	bool bad;            /* descriptor rejected at open: never read */
	bool is_log;         /* a thread's log (3.0) */
	size_t seg_first, seg_n; /* a log: its segments in r->segs, this walk */
};

/*
 * A record collected during a walk (48 bytes: a million-record box makes
 * a million of them).  Its value lives in the reader's copy of the box
 * (nothing changes it during a walk) unless the record wraps around its
 * ring's end, else in the value arena.
 */
struct ent {
	uint64_t pos, ts;
	size_t voff;         /* value: offset in r->base (inbox) or r->vals */
	uint32_t stream;
	int32_t tid;
	uint32_t name;       /* thread name: index in r->names */
	uint32_t stride;     /* the record's bytes in its stream: next = pos + stride */
	uint16_t vlen;       /* < BB_RECORD_MAX */
	uint8_t tag, flags;
	bool inbox;          /* voff is in the box, not the arena */
	bool skip;           /* important copy whose original is delivered */
	bool copy;           /* from the important ring, shown */
	bool gap;            /* a hole before it in its stream: r->gaps says how big */
};

/* A hole in a stream's history, before the record at (stream, pos). */
struct gap {
	uint64_t pos, lost;
	uint32_t stream;
};

/* A segment holding part of a log, as a walk found it (3.0). */
struct rseg {
	uint32_t idx;        /* in the segment table */
	uint32_t stream;     /* its log's index in r->streams */
	uint64_t start, head;
	uint64_t own;
	uint32_t ord;
};

/* A log id and the index of its stream in r->streams (sorted by log id). */
struct rlog {
	uint32_t log, stream;
};

/* An important record's identity (FORMAT §11): thread and raw timestamp. */
struct ikey {
	uint64_t ts;
	int32_t tid;
};

struct bb_reader {
	struct bb_box_info info;
	struct bb_header clk;  /* validated header copy: the clock fields convert
				  timestamps (clock.h) */
	uint8_t *base;         /* private copy of the box (never a file mapping) */
	size_t len;            /* its bytes: min(box_size, file size) */
	int fd;                /* live reader: the box file, re-read by bb__rdr_load(); else -1 */
	bool anon;             /* base is private anonymous memory (munmap), else malloc'd */
	uint64_t table_off;
	uint64_t table_end;    /* end of the last table (ring table; 3.0: thread
				  and segment tables too) */
	uint32_t table_rings;  /* rings of the ring table: r->streams[0 ..) */
	uint32_t cap_streams;  /* r->streams allocated */
	/* 3.0: segments and the thread table (validated; seg_count 0: none) */
	uint64_t seg_off, seg_data_off, thr_off;
	uint32_t seg_count, seg_size, thread_count;
	struct rseg *segs;     /* the current walk's segments, by stream then start */
	size_t nsegs, csegs;
	struct rlog *logs;     /* every log found so far, by log id */
	size_t nlogs, clogs;
	bool walked;           /* a walk completed: logs found later are new */
	uint64_t limit;        /* min(box_size, file size): every offset lies below */
	uint32_t desc_size, page_size;
	struct rstream *streams;
	uint8_t *rec;          /* one record, max_record bytes */
	struct ent *ents;      /* records collected by the current walk */
	size_t nents, cents;
	uint8_t *vals;         /* their values (those not read in place) */
	size_t nvals, cvals;
	char (*names)[16];     /* thread names of the walk's records; [0] is "" */
	size_t nnames, cnames;
	struct gap *gaps;      /* holes found by the current walk (rare) */
	size_t ngaps, cgaps;
	struct ikey *shown;    /* BB_WALK_FOLLOW: important records delivered */
	size_t nshown, cshown;
	uint64_t state_off, modules_off; /* validated areas (count/size 0: none) */
	uint64_t stacks_off;  /* the crash stacks (3.1) or slots (3.2), nstacks */
	uint32_t nstacks;
	uint32_t stack_size;  /* bytes per slot: BB_CRASH_SIZE (3.1), or the
	                       * header's crash_slot_size (3.2) */
	uint32_t slot_size;
	uint8_t *slot;         /* one state slot copy */
	uint8_t *modbuf;       /* module area copy */
	struct bb_module *mods;
	char *modstr;          /* NUL-terminated module paths */
};

/* Segment descriptor @i in @base (3.0). */
static inline const struct bb_seg_desc *bb__rdr_seg(const struct bb_reader *r,
						    const uint8_t *base, uint32_t i)
{
	return (const struct bb_seg_desc *)(const void *)
		(base + r->seg_off + (uint64_t)i * BB_SEG_DESC_SIZE);
}

/* Thread slot @i in @base (3.0). */
static inline const struct bb_thread_slot *bb__rdr_slot(const struct bb_reader *r,
							const uint8_t *base, uint32_t i)
{
	return (const struct bb_thread_slot *)(const void *)
		(base + r->thr_off + (uint64_t)i * BB_THREAD_SLOT_SIZE);
}

/* Descriptor @i of the ring table in @base (the reader's copy of the box). */
static inline const struct bb_ring_desc *bb__rdr_desc(const struct bb_reader *r,
						      const uint8_t *base, uint32_t i)
{
	return (const struct bb_ring_desc *)(const void *)
		(base + r->table_off + (uint64_t)i * r->desc_size);
}

/* A raw stamp in ns of the box clock, and as wall-clock time (clock.h:
 * FORMAT §3 and §11, saturating, never UB on a scribbled header). */
static inline uint64_t bb__rdr_ns(const struct bb_reader *r, uint64_t raw)
{
	return (uint64_t)bb__ts_to_ns(&r->clk, raw);
}

static inline int64_t bb__rdr_wall(const struct bb_reader *r, uint64_t raw)
{
	return bb__ts_to_wall_ns(&r->clk, raw);
}

/* What bb__rdr_load() reads from the box file into the reader's copy. */
enum load_what {
	LOAD_SNAPSHOT, /* at open, after the header and table: the rest of the
			  box up to used_end(), but of each sane ring only its
			  live part (the dead bytes read as zeros); for
			  BB_OPEN_SNAPSHOT */
	LOAD_WALK,     /* header and table again, then each ring's live part
			  (from where a follow walk resumes), load_ring(); a
			  ring whose head and tail make no sense, whole */
	LOAD_ALL,      /* every byte (bb_reader_save, bb_reader_data) */
};

/* Internal open flag: the header and ring table are all the caller reads
 * (a scan); a compressed box is decompressed no further (reader_zstd.c). */
#define BB__OPEN_TABLE_ONLY 0x80000000u

/* reader.c */
struct bb_reader *bb__rdr_new(const struct bb_reader *tmp);
__attribute__((format(printf, 4, 5)))
int bb__rdr_say(char *err, size_t errlen, int rc, const char *fmt, ...);
int bb__rdr_open_nofollow(int dirfd, const char *name, const char *label, char *err,
			  size_t errlen);
int bb__rdr_open_owned_fd(int fd, const char *label, unsigned flags,
			  struct bb_reader **out, char *err, size_t errlen);
int bb__rdr_open_at(int dirfd, const char *name, const char *label, unsigned flags,
		    struct bb_reader **out, char *err, size_t errlen);

/* reader_zstd.c: a box bb-reap compressed (.box.zst), read whole at open */
bool bb__rdr_is_zstd(int fd);
int bb__rdr_open_zstd(int fd, const char *label, unsigned flags, struct bb_reader **out,
		      char *err, size_t errlen);

/* reader_validate.c */
int bb__rdr_check_header(struct bb_reader *r, const struct bb_header *h, uint64_t size,
			 const char *label, char *err, size_t errlen);
int bb__rdr_setup(struct bb_reader *r, const char *label, char *err, size_t errlen);
void bb__rdr_refresh_info(struct bb_reader *r);
void bb__rdr_refresh_ring(struct rstream *rr);

/* reader_snapshot.c */
int bb__rdr_pread_all(int fd, void *buf, size_t len, uint64_t off);
int bb__rdr_fetch(struct bb_reader *r, uint64_t off, uint64_t n);
int bb__rdr_load(struct bb_reader *r, enum load_what what, bool follow);
int bb__rdr_load_failed(char *err, size_t errlen, const char *label, int rc);

/* reader_logs.c (3.0) */
int bb__rdr_scan_logs(struct bb_reader *r);
int bb__rdr_rescan_logs(struct bb_reader *r);
int bb__rdr_collect_log(struct bb_reader *r, uint32_t i, unsigned flags, bool alive,
			uint64_t *endp);
int bb__rdr_keep(struct bb_reader *r, uint32_t ring, uint64_t pos, uint32_t len,
		 const uint8_t *rec);
int bb__rdr_note_gap(struct bb_reader *r, uint32_t ring, uint64_t pos, uint64_t *expect,
		     bool *have_expect);
const uint8_t *bb__rdr_read_fixed(struct bb_reader *r, const struct bb__extent *v,
				  uint64_t pos, uint64_t head, uint32_t *lenp, enum bb__rd *rd);
/* reader_walk.c: the collect loop of a ring and of a log's segment */
int bb__rdr_collect_extent(struct bb_reader *r, uint32_t i, const struct bb__extent *v,
			   uint64_t *posp, uint64_t head, bool copy, uint64_t *expect,
			   bool *have_expect, bool *kept);

/* reader_liveness.c */
int bb__rdr_maps_has(pid_t pid, uint64_t dev, uint64_t ino);

/* reader_walk.c: room for @need elements in a doubling array */
int bb__rdr_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif /* BB_READER_INT_H */
