/* SPDX-License-Identifier: MIT */
/*
 * fuzz_reader.c - libFuzzer target over the box parser: every input is a
 * box image handed to bb_reader_open_mem(), walked ring by ring and merged
 * (twice, the second time following), and every record value rendered by
 * bb_format_value() into a roomy and a tiny buffer; then the format 2.0
 * areas: the crash area (every frame looked up in the module table), the
 * state table (every value rendered) and the module area.  The reader must
 * never crash, hang, leak or read out of bounds, whatever the bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <blackbox/reader.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int render(const struct bb_record *rec, void *arg)
{
	char big[512], tiny[6];
	int rc;

	(void)arg;
	rc = bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, big, sizeof(big));
	if (rc >= (int)sizeof(big) || strlen(big) != (rc < 0 ? strlen(big) : (size_t)rc))
		__builtin_trap(); /* the returned length must be the string's */
	bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, tiny, sizeof(tiny));
	if (strlen(tiny) >= sizeof(tiny))
		__builtin_trap();
	(void)bb_tag_name(rec->tag);
	return 0;
}

static int state(const struct bb_state_entry *e, void *arg)
{
	char buf[256];

	(void)arg;
	if (e->status == BB_SLOT_OK) {
		if (!e->key || e->key_len > e->value_len)
			__builtin_trap(); /* the key lies inside the value */
		bb_format_value(BB_TAG_KV, e->flags, e->value, e->value_len, buf, sizeof(buf));
	} else if (!e->problem[0]) {
		__builtin_trap(); /* a bad slot always says why */
	}
	return 0;
}

/* The 2.0 areas: crash record, state table, modules. */
static void areas(struct bb_reader *r)
{
	const struct bb_module *mods = NULL;
	struct bb_state_stats st;
	struct bb_crash c;
	size_t n = 0;
	char err[256];

	bb_reader_crash(r, &c);
	if (c.status != BB_CRASH_COMPLETE && c.status != BB_CRASH_NONE && !c.problem[0])
		__builtin_trap();
	if (c.nframes > BB_CRASH_MAX_FRAMES)
		__builtin_trap();
	(void)bb_crash_status_name(c.status);
	bb_reader_state(r, state, NULL, &st);
	if (st.used + st.busy + st.corrupt > st.slots)
		__builtin_trap();
	if (bb_reader_modules(r, &mods, &n, NULL, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < n; i++)
			if (strlen(mods[i].path) > 1u << 20 || mods[i].end < mods[i].start)
				__builtin_trap();
		for (uint32_t i = 0; i < c.nframes; i++)
			(void)bb_module_find(mods, n, c.frames[i]);
	} else if (n || mods || strlen(err) >= sizeof(err)) {
		__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bb_stream_stats sum;
	struct bb_reader *r;
	char err[256];

	/* the value renderer on its own, with the first byte as the tag */
	if (size > 1) {
		char buf[128];

		bb_format_value(data[0] % 16, data[1] & 7, data + 2, size - 2, buf, sizeof(buf));
	}
	if (bb_reader_open_mem(data, size, 0, &r, err, sizeof(err)) == 0) {
		bb_reader_walk(r, 0, render, NULL);
		bb_reader_walk(r, BB_WALK_MERGE, render, NULL);
		bb_reader_walk(r, BB_WALK_MERGE | BB_WALK_FOLLOW, render, NULL);
		bb_reader_total_stats(r, &sum);
		(void)bb_reader_info(r);
		areas(r);
		bb_reader_close(r);
	} else if (strlen(err) >= sizeof(err)) {
		__builtin_trap();
	}
	return 0;
}
