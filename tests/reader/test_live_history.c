/* SPDX-License-Identifier: MIT */
/*
 * test_live_history.c - a ring's history as a live reader delivers it has
 * no unexplained holes: a real thread writes bb_write_u64(0, 1, 2, ...) as
 * fast as it can into a small ring while this thread follows the box
 * (BB_WALK_FOLLOW walks, a short sleep between them, so the writer laps
 * the reader now and then).  Every record whose value does not follow the
 * previous one's must carry gap_before > 0 (a hole, marked), and every
 * record with gap_before > 0 must follow a real jump (no false gap); gaps
 * are whole records (multiples of 8 bytes).  Plain C (no Criterion).
 * Exit 77 (skipped) when the writer never lapped the reader: nothing
 * proven then, and said.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"

static atomic_int stop;

static void *writer(void *arg)
{
	uint64_t i = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		bb_write_u64(i++);
	return NULL;
}

struct hist {
	uint64_t n, prev, jumps, marked, unmarked, false_gaps, odd_sizes;
	bool any;
};

static int on_record(const struct bb_record *rec, void *arg)
{
	struct hist *h = arg;
	char text[32];
	uint64_t v;
	bool jump;

	if (rec->tag != BB_TAG_U64)
		return 0;
	if (bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, text,
			    sizeof(text)) < 0)
		return 0;
	v = strtoull(text, NULL, 10);
	/* the writer starts at 0: a first record above it follows a hole too */
	jump = h->any ? v != h->prev + 1 : v != 0;
	if (jump)
		h->jumps++;
	if (jump && rec->gap_before)
		h->marked++;
	if (jump && !rec->gap_before && h->unmarked++ < 5)
		fprintf(stderr, "unmarked hole: %" PRIu64 " after %" PRIu64 "\n", v, h->prev);
	if (!jump && rec->gap_before && h->false_gaps++ < 5)
		fprintf(stderr, "gap_before %" PRIu64 " without a hole at %" PRIu64 "\n",
			rec->gap_before, v);
	if (rec->gap_before % 8)
		h->odd_sizes++;
	h->any = true;
	h->prev = v;
	h->n++;
	return 0;
}

int main(void)
{
	struct bb_options o = { .segment_count = 2, .segment_size = 4096 };
	char *dir = bbt_mkdtemp(), path[4096], err[256];
	struct timespec nap = { 0, 200000 };
	struct hist h = { 0 };
	struct bb_reader *r;
	pthread_t th;
	int rc = 0;

	setenv("BLACKBOX_DIR", dir, 1);
	if (bb_init_opts(&o) || bb_path(path, sizeof(path)) <= 0) {
		fprintf(stderr, "bb_init_opts failed\n");
		return 1;
	}
	if (bb_reader_open_path(path, 0, &r, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		return 1;
	}
	/* one walk before the writer starts: its ring's history is followed
	 * from its first byte */
	if (bb_reader_walk(r, BB_WALK_FOLLOW, on_record, &h))
		rc = 1;
	pthread_create(&th, NULL, writer, NULL);
	for (int k = 0; k < 300 && !rc; k++) {
		if (bb_reader_walk(r, BB_WALK_FOLLOW, on_record, &h)) {
			fprintf(stderr, "walk failed\n");
			rc = 1;
		}
		nanosleep(&nap, NULL);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	bb_reader_close(r);
	bb_close();
	bbt_rmdir(dir);
	printf("test_live_history: %" PRIu64 " records, %" PRIu64 " holes (%" PRIu64
	       " marked), %" PRIu64 " false gaps\n", h.n, h.jumps, h.marked, h.false_gaps);
	if (rc)
		return rc;
	if (h.unmarked || h.false_gaps || h.odd_sizes) {
		fprintf(stderr, "FAIL: %" PRIu64 " unmarked holes, %" PRIu64 " false gaps, %"
			PRIu64 " gaps not a multiple of 8\n", h.unmarked, h.false_gaps, h.odd_sizes);
		return 1;
	}
	if (!h.jumps || h.n < 1000) {
		printf("the writer never lapped the reader: nothing proven (skipped)\n");
		return 77;
	}
	return 0;
}
