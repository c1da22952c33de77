/* SPDX-License-Identifier: MIT */
/*
 * test_format_doc.c - docs/FORMAT.md and <blackbox/format.h> say the same
 * thing, and the writer does what they say:
 *  - every row of FORMAT.md's layout tables (§3 header, §4 ring
 *    descriptor, §5 record envelope, §11 module area header, §13 segment
 *    descriptor and thread slot) names a
 *    member of the struct, at its offsetof() and with its size; every
 *    member is in the table; the rows tile the struct with no gap;
 *  - the header's `flags` row names BB_HF_CRC32C with its value;
 *  - the CRC input order of §11 "Record checksum" (its numbered list of
 *    half-open byte ranges, parsed from the text) reproduces the checksum
 *    the library writes on real records of a real box.
 * Plain C (no Criterion): FORMAT.md's path is the first argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>

#include "../helpers/common.h"

struct member {
	const char *name;
	size_t off, size;
	int seen;
};

#define M(type, field) { #field, offsetof(type, field), sizeof(((type *)0)->field), 0 }

static struct member header[] = {
	M(struct bb_header, magic), M(struct bb_header, version_major),
	M(struct bb_header, version_minor), M(struct bb_header, header_size),
	M(struct bb_header, byte_order), M(struct bb_header, word_size),
	M(struct bb_header, clock), M(struct bb_header, flags),
	M(struct bb_header, box_size), M(struct bb_header, ring_count),
	M(struct bb_header, ring_desc_size), M(struct bb_header, ring_table_offset),
	M(struct bb_header, ring_size), M(struct bb_header, max_record),
	M(struct bb_header, page_size), M(struct bb_header, pid), M(struct bb_header, uid),
	M(struct bb_header, starttime), M(struct bb_header, boot_id), M(struct bb_header, comm),
	M(struct bb_header, cmdline), M(struct bb_header, anchor_realtime_ns),
	M(struct bb_header, anchor_clock_ns), M(struct bb_header, created_ns),
	M(struct bb_header, sequence), M(struct bb_header, reserved0),
	M(struct bb_header, phase), M(struct bb_header, phase_signal),
	M(struct bb_header, phase_ns), M(struct bb_header, dropped_busy),
	M(struct bb_header, dropped_nested), M(struct bb_header, truncated),
	M(struct bb_header, retire_counter), M(struct bb_header, dropped_toobig),
	M(struct bb_header, tsc_anchor), M(struct bb_header, tsc_hz),
	M(struct bb_header, tsc_mult), M(struct bb_header, tsc_shift),
	M(struct bb_header, clock_requested), M(struct bb_header, clock_reason),
	M(struct bb_header, reserved1),
	M(struct bb_header, state_slot_count), M(struct bb_header, state_table_offset),
	M(struct bb_header, state_slot_size), M(struct bb_header, modules_size),
	M(struct bb_header, modules_offset), M(struct bb_header, dropped_important),
	M(struct bb_header, state_errors), M(struct bb_header, cgroup_hierarchy),
	M(struct bb_header, reserved2), M(struct bb_header, invocation_id),
	M(struct bb_header, cgroup), M(struct bb_header, seg_count),
	M(struct bb_header, seg_size), M(struct bb_header, seg_table_offset),
	M(struct bb_header, seg_data_offset), M(struct bb_header, thread_count),
	M(struct bb_header, seg_desc_size), M(struct bb_header, thread_table_offset),
	M(struct bb_header, thread_slot_size), M(struct bb_header, reserved3),
	M(struct bb_header, seg_next), M(struct bb_header, log_next),
	M(struct bb_header, seg_stolen), M(struct bb_header, seg_restarted),
	M(struct bb_header, overflow), M(struct bb_header, crash_stacks_offset),
	M(struct bb_header, crash_stacks_count), M(struct bb_header, crash_stacks_asked),
	M(struct bb_header, crash_threads), M(struct bb_header, crash_slot_size),
	M(struct bb_header, crash_slots_offset), M(struct bb_header, crash_slots_count),
	M(struct bb_header, reserved4), M(struct bb_header, last_words_offset),
	M(struct bb_header, last_words_size), M(struct bb_header, reserved5),
	M(struct bb_header, recycled_gone), M(struct bb_header, logs_gone),
	M(struct bb_header, watchdog_ms), M(struct bb_header, dump_signal),
	M(struct bb_header, snapshot_seq), M(struct bb_header, dump_seq),
	M(struct bb_header, reserved),
	M(struct bb_header, crash),
};

static struct member seg[] = {
	M(struct bb_seg_desc, own), M(struct bb_seg_desc, head), M(struct bb_seg_desc, start),
	M(struct bb_seg_desc, ord), M(struct bb_seg_desc, next), M(struct bb_seg_desc, tid),
	M(struct bb_seg_desc, slot), M(struct bb_seg_desc, thread_name),
	M(struct bb_seg_desc, reserved0),
};

static struct member slot[] = {
	M(struct bb_thread_slot, queue), M(struct bb_thread_slot, claim),
	M(struct bb_thread_slot, log), M(struct bb_thread_slot, tid),
	M(struct bb_thread_slot, current), M(struct bb_thread_slot, cur_ord),
	M(struct bb_thread_slot, watchdog_ms), M(struct bb_thread_slot, thread_name),
	M(struct bb_thread_slot, recycled), M(struct bb_thread_slot, heartbeat),
};

static struct member last_words[] = {
	M(struct bb_last_words, own), M(struct bb_last_words, start),
	M(struct bb_last_words, head), M(struct bb_last_words, data),
};

static struct member desc[] = {
	M(struct bb_ring_desc, head), M(struct bb_ring_desc, tail), M(struct bb_ring_desc, pad0),
	M(struct bb_ring_desc, claim), M(struct bb_ring_desc, kind), M(struct bb_ring_desc, tid),
	M(struct bb_ring_desc, generation), M(struct bb_ring_desc, data_offset),
	M(struct bb_ring_desc, retired_at), M(struct bb_ring_desc, thread_name),
	M(struct bb_ring_desc, lock), M(struct bb_ring_desc, reserved0),
	M(struct bb_ring_desc, reserved1),
};

static struct member envelope[] = {
	M(struct bb_record_hdr, seq), M(struct bb_record_hdr, len), M(struct bb_record_hdr, tag),
	M(struct bb_record_hdr, flags), M(struct bb_record_hdr, ts),
};

static struct member modules[] = {
	M(struct bb_modules_hdr, seq), M(struct bb_modules_hdr, len), M(struct bb_modules_hdr, ts),
	M(struct bb_modules_hdr, count), M(struct bb_modules_hdr, flags),
};

static int failures;

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); failures++; } while (0)

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The text from the line starting with @from to the next line starting
 * with @to (or the end), as a new string. */
static char *section(const char *doc, const char *from, const char *to)
{
	const char *a = strstr(doc, from), *b;
	char *s;

	if (!a) {
		FAIL("FORMAT.md has no \"%s\"", from);
		exit(1);
	}
	b = strstr(a + strlen(from), to);
	if (!b)
		b = a + strlen(a);
	s = strndup(a, (size_t)(b - a));
	if (!s)
		exit(1);
	return s;
}

/*
 * Check the first layout table ("| off | size | type | field |" then rows
 * "| <off> | <size> | <type> | `<field>` | ...") in @text against @m.
 * Returns the number of rows.
 */
static int check_table(const char *what, const char *text, struct member *m, size_t nm,
		       size_t struct_size)
{
	const char *p = strstr(text, "| off | size | type | field |");
	size_t next = 0;
	int rows = 0;

	if (!p) {
		FAIL("%s: no layout table", what);
		return 0;
	}
	p = strchr(p, '\n') + 1;   /* the header row */
	p = strchr(p, '\n') + 1;   /* the |---:| row */
	while (*p == '|') {
		unsigned long off, size;
		char field[64];
		size_t i;

		if (sscanf(p, "| %lu | %lu | %*[^|] | `%63[^`]` |", &off, &size, field) != 3) {
			FAIL("%s: unreadable row: %.60s", what, p);
			break;
		}
		rows++;
		for (i = 0; i < nm && strcmp(m[i].name, field); i++)
			;
		if (i == nm) {
			FAIL("%s: FORMAT.md's field `%s` is not in format.h", what, field);
		} else {
			m[i].seen++;
			if (m[i].off != off)
				FAIL("%s.%s: FORMAT.md says offset %lu, offsetof() is %zu", what,
				     field, off, m[i].off);
			if (m[i].size != size)
				FAIL("%s.%s: FORMAT.md says size %lu, sizeof is %zu", what, field,
				     size, m[i].size);
		}
		if (off != next)
			FAIL("%s: `%s` at %lu, the row before ends at %zu", what, field, off, next);
		next = off + size;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	if (next != struct_size)
		FAIL("%s: the table ends at %zu, the struct is %zu bytes", what, next, struct_size);
	for (size_t i = 0; i < nm; i++)
		if (m[i].seen != 1)
			FAIL("%s.%s: documented %d times in FORMAT.md", what, m[i].name, m[i].seen);
	return rows;
}

/* ---- the CRC order -------------------------------------------------------- */

struct range {
	long a, b;   /* [a, b); b < 0: len + b */
};

/*
 * The numbered list of §11 "Record checksum": item 1 must be the seq word,
 * the others "bytes [a, b)" with b a number or "`len` − 4".
 */
static int crc_ranges(const char *doc, struct range *r, int max)
{
	char *sec = section(doc, "### Record checksum", "\n### ");
	int n = 0;
	char *p;

	p = strstr(sec, "\n1. ");
	if (!p || !strstr(p, "seq word") || strstr(p, "seq word") > strstr(p, "\n2. "))
		FAIL("§11: item 1 of the CRC order is not the seq word");
	for (int item = 2; p && n < max; item++) {
		char tag[8], *q;

		snprintf(tag, sizeof(tag), "\n%d. ", item);
		p = strstr(p, tag);
		if (!p)
			break;
		q = strstr(p, "bytes [");
		if (!q || q > strchr(p + 1, '\n')) {
			FAIL("§11: CRC item %d has no \"bytes [a, b)\"", item);
			break;
		}
		q += strlen("bytes [");
		r[n].a = strtol(q, &q, 10);
		if (strncmp(q, ", ", 2)) {
			FAIL("§11: CRC item %d: unreadable range", item);
			break;
		}
		q += 2;
		if (!strncmp(q, "`len` \u2212 ", strlen("`len` \u2212 ")))
			r[n].b = -strtol(q + strlen("`len` \u2212 "), &q, 10);
		else
			r[n].b = strtol(q, &q, 10);
		if (*q != ')') {
			FAIL("§11: CRC item %d: unreadable range end", item);
			break;
		}
		n++;
	}
	free(sec);
	return n;
}

/* Check the record at @rec (box offset), position @pos, against FORMAT.md's
 * CRC order @r; 1 when checked. */
static int check_crc(const uint8_t *rec0, uint64_t pos, const struct range *r, int nr,
		     const char *where, uint32_t i)
{
	struct bb_record_hdr e;
	uint8_t rec[BB_RECORD_MAX];
	uint32_t c, want, seq;
	uint8_t le[4];

	memcpy(&e, rec0, sizeof(e));
	if (e.seq != BB_SEQ_DONE(pos) || e.len < BB_RECORD_HDR_SIZE + 5 ||
	    !(e.flags & BB_RF_CRC)) {
		FAIL("%s %u, pos %llu: not a committed checksummed record", where, i,
		     (unsigned long long)pos);
		return -1;
	}
	memcpy(rec, rec0, e.len);
	seq = BB_SEQ_DONE(pos);
	for (int k = 0; k < 4; k++)
		le[k] = (uint8_t)(seq >> (8 * k));
	c = bbt_crc32c(0xffffffffu, le, 4);
	for (int k = 0; k < nr; k++) {
		long a = r[k].a, b = r[k].b < 0 ? (long)e.len + r[k].b : r[k].b;

		c = bbt_crc32c(c, rec + a, (size_t)(b - a));
	}
	c ^= 0xffffffffu;
	want = (uint32_t)rec[e.len - 4] | (uint32_t)rec[e.len - 3] << 8 |
	       (uint32_t)rec[e.len - 2] << 16 | (uint32_t)rec[e.len - 1] << 24;
	if (c != want)
		FAIL("%s %u, pos %llu, tag %u: FORMAT.md's order gives %08x, the "
		     "writer stored %08x", where, i, (unsigned long long)pos, e.tag, c, want);
	return (int)BB_RECORD_STRIDE(e.len);
}

/* Check every committed record of every ring and segment of the box at
 * @path. */
static int check_crcs(const char *path, const struct range *r, int nr)
{
	struct stat st;
	const uint8_t *box;
	const struct bb_header *h;
	int fd = open(path, O_RDONLY), checked = 0;

	if (fd < 0 || fstat(fd, &st)) {
		FAIL("%s: %s", path, strerror(errno));
		return 0;
	}
	box = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (box == MAP_FAILED) {
		FAIL("mmap: %s", strerror(errno));
		return 0;
	}
	h = (const struct bb_header *)(const void *)box;
	if (!(h->flags & BB_HF_CRC32C))
		FAIL("the box has no BB_HF_CRC32C");
	for (uint32_t i = 0; i < h->ring_count; i++) {
		const struct bb_ring_desc *d = (const struct bb_ring_desc *)(const void *)
			(box + h->ring_table_offset + (size_t)i * h->ring_desc_size);
		const uint8_t *data = box + d->data_offset;

		/* the writer is this process, quiescent: the rings have not wrapped */
		for (uint64_t pos = d->tail; pos < d->head;) {
			int stride = check_crc(data + pos, pos, r, nr, "ring", i);

			if (stride < 0)
				break;
			checked++;
			pos += (uint64_t)stride;
		}
	}
	for (uint32_t i = 0; i < h->seg_count; i++) {
		const struct bb_seg_desc *d = (const struct bb_seg_desc *)(const void *)
			(box + h->seg_table_offset + (size_t)i * BB_SEG_DESC_SIZE);
		const uint8_t *data = box + h->seg_data_offset + (size_t)i * h->seg_size;

		if (BB_SEG_STATE(d->own) != BB_SEG_OPEN && BB_SEG_STATE(d->own) != BB_SEG_SEALED)
			continue;
		for (uint64_t pos = d->start; pos < d->head;) {
			int stride = check_crc(data + (pos - d->start), pos, r, nr, "segment", i);

			if (stride < 0)
				break;
			checked++;
			pos += (uint64_t)stride;
		}
	}
	munmap((void *)(uintptr_t)box, (size_t)st.st_size);
	return checked;
}

int main(int argc, char **argv)
{
	struct range r[8];
	char *doc, *s, *dir, path[4096];
	int nr, checked;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FORMAT.md\n", argv[0]);
		return 2;
	}
	doc = slurp(argv[1]);

	s = section(doc, "## 3. Header", "\n## 4.");
	check_table("bb_header", s, header, sizeof(header) / sizeof(header[0]),
		    sizeof(struct bb_header));
	if (!strstr(s, "| 22 | 2 | u16 | `flags` | `BB_HF_*`: 0x0001 `BB_HF_CRC32C`") ||
	    BB_HF_CRC32C != 0x0001)
		FAIL("bb_header.flags: FORMAT.md does not say BB_HF_CRC32C = 0x0001");
	free(s);
	s = section(doc, "## 4. Ring table", "\n## 5.");
	check_table("bb_ring_desc", s, desc, sizeof(desc) / sizeof(desc[0]),
		    sizeof(struct bb_ring_desc));
	free(s);
	s = section(doc, "## 5. Records", "\n## 6.");
	check_table("bb_record_hdr", s, envelope, sizeof(envelope) / sizeof(envelope[0]),
		    sizeof(struct bb_record_hdr));
	free(s);
	s = section(doc, "### Module area", "\n### ");
	check_table("bb_modules_hdr", s, modules, sizeof(modules) / sizeof(modules[0]),
		    sizeof(struct bb_modules_hdr));
	free(s);
	s = section(doc, "### Segment descriptor", "\n### ");
	check_table("bb_seg_desc", s, seg, sizeof(seg) / sizeof(seg[0]),
		    sizeof(struct bb_seg_desc));
	free(s);
	s = section(doc, "### Thread slot", "\n### ");
	check_table("bb_thread_slot", s, slot, sizeof(slot) / sizeof(slot[0]),
		    sizeof(struct bb_thread_slot));
	free(s);
	s = section(doc, "### Last words", "\n### ");
	check_table("bb_last_words", s, last_words, sizeof(last_words) / sizeof(last_words[0]),
		    sizeof(struct bb_last_words));
	free(s);

	nr = crc_ranges(doc, r, 8);
	if (nr != 3)
		FAIL("§11: %d byte ranges in the CRC order, expected 3", nr);
	/* a real box, in a private directory, records of several shapes */
	dir = bbt_mkdtemp();
	setenv("BLACKBOX_DIR", dir, 1);
	unsetenv("BLACKBOX_CRC");
	if (bb_init(0) != 0 || bb_path(path, sizeof(path)) <= 0) {
		FAIL("bb_init or bb_path failed");
	} else {
		bb_write_str("hello");
		bb_write_kv_i64("n", -5);
		bb_write_kv("key", "a longer value, to cross a few words");
		bb_write_f64(0.1);
		checked = check_crcs(path, r, nr);
		if (checked < 4)
			FAIL("only %d records checked", checked);
		else
			printf("test_format_doc: %d records' checksums follow FORMAT.md's order\n",
			       checked);
		bb_close();
	}
	bbt_rmdir(dir);
	free(doc);
	if (failures) {
		fprintf(stderr, "test_format_doc: %d failures\n", failures);
		return 1;
	}
	printf("test_format_doc: FORMAT.md's tables match format.h\n");
	return 0;
}
