/* SPDX-License-Identifier: MIT */
/* internal.h - private to libblackbox.  Internal, do not use. */
#ifndef BB_INTERNAL_H
#define BB_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Marks a definition as part of the exported ABI (see libblackbox.map). */
#define BB_EXPORT __attribute__((visibility("default")))

/* proc.c: what the writer and the readers read from /proc */
/* A small file into @buf (@len >= 1), NUL-terminated: bytes read or
 * -errno (then @buf is ""). */
ssize_t bb__read_file(const char *path, char *buf, size_t len);
/* Field 22 of /proc/<pid>/stat (/proc/self/stat for @pid <= 0), the start
 * time in clock ticks since boot: 0, -ESRCH (no such process) or -EINVAL. */
int bb__proc_starttime(pid_t pid, uint64_t *st);
/* This boot's /proc/sys/kernel/random/boot_id without its newline: 0, or
 * -errno and @buf "". */
int bb__boot_id(char *buf, size_t len);

/* box.c: "4m", "65536", "1G" -> bytes; 0 on error. */
size_t bb__parse_size(const char *s);

/* budget.c: the crash-loop budget (bb_init(3)).  Before a box of
 * @new_size bytes is created in @dir (NULL: POSIX shm): this uid's dead
 * boxes trimmed to the budget less @new_size, *@removed what went (with
 * what those had counted).  0, or -EINVAL for a bad BLACKBOX_BUDGET; never
 * fails otherwise.  Once the box is published: bb__budget_note() records
 * the count and this process's PID namespace in its state table. */
struct bb_options;
int bb__budget_trim(const struct bb_options *o, const char *dir, uint64_t new_size,
		    uint64_t *removed);
void bb__budget_note(uint64_t removed);
/* At a clean exit that removes the box: its bytes leave the index's bound
 * and the deaths it counted go to its program's next box (budget.c). */
void bb__budget_release(void);

/* write.c, for span.c: a span's begin, an event's record of tag
 * BB_TAG_SPAN_BEGIN whose array holds @extra more items after the map
 * (@tail_len bytes of CBOR at @tail); a span's end, its @depth.  Returns
 * as bb_write_event(); AS-safe. */
struct bb_field;
int bb__write_span_begin(const char *name, const struct bb_field *f, size_t n,
			 const uint8_t *tail, uint32_t tail_len, unsigned extra);
int bb__write_span_end(uint32_t depth);

#endif /* BB_INTERNAL_H */
