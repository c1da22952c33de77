/* SPDX-License-Identifier: MIT */
/*
 * gen_seeds.c - write the fuzz seeds into DIR: small format 2.x boxes (2 or
 * 3 rings of 4096 bytes) built by hand with tests/helpers/synth.h, with and
 * without CRC trailers, with an important ring, a state table, a crash
 * area, a module area and a TSC clock; and format 3.0 boxes (segments of
 * 4096 bytes, two threads' logs, holes, damage).  Run once and commit
 * the result: ninja -C build fuzz/gen-seeds && build/fuzz/gen-seeds fuzz/corpus
 * (a seed carries the pid, uid and boot id of the process that made it:
 * commit the new ones, keep the committed ones as they are).
 */
#include <stdio.h>
#include <string.h>

#include "../tests/helpers/synth.h"

static void owner_and_values(struct synth *s, uint32_t ring)
{
	uint8_t v[64];
	size_t n = 0;

	synth_owner(s, ring, 1, 10, "main", 0, "");
	synth_put(s, ring, BB_TAG_I64, 0, 2, v, cb_int(v, -42));
	synth_put(s, ring, BB_TAG_F64, 0, 3, v, cb_f64(v, 0.1));
	v[0] = 0xf5;
	synth_put(s, ring, BB_TAG_BOOL, 0, 4, v, 1);
	v[n++] = 0x82;
	n += cb_text(v + n, "key");
	n += cb_text(v + n, "a value");
	synth_put(s, ring, BB_TAG_KV, 0, 5, v, n);
	n = 0;
	v[n++] = 0x82;
	n += cb_text(v + n, "open");
	v[n++] = 0xa2;
	n += cb_text(v + n, "fd");
	n += cb_int(v + n, 3);
	n += cb_text(v + n, "b");
	n += cb_head(v + n, 2, 2);
	v[n++] = 0xde;
	v[n++] = 0xad;
	synth_put(s, ring, BB_TAG_EVENT, 0, 6, v, n);
	synth_put(s, ring, BB_TAG_STR, BB_RF_TRUNCATED, 7, "\x63" "abc", 4);
}

static int save(struct synth *s, const char *dir, const char *name)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (synth_save(s, p)) {
		perror(p);
		return 1;
	}
	synth_free(s);
	return 0;
}

/* A CRC box with every 2.0 area: important ring, state, crash, modules. */
static void full_v2(struct synth *s)
{
	static const uint64_t frames[3] = { 0x555500001234, 0x7f0000030000, 0x1 };
	static const struct synth_mod mods[2] = {
		{ "/usr/bin/prog", 0x555500000000, 0x555500001000, 0x555500009000, "\x12\x34", 0 },
		{ "/lib/libc.so.6", 0x7f0000000000, 0x7f0000028000, 0x7f00001bd000, "\xab", 0 },
	};
	uint8_t v[32];
	size_t n = cb_text(v, "important");

	synth_init(s, 3, 4096);
	synth_use_crc(s);
	synth_desc(s, 2)->kind = BB_RING_IMPORTANT;
	owner_and_values(s, 0);
	synth_put(s, 0, BB_TAG_STR, BB_RF_IMPORTANT, 8, v, n);
	synth_put_tid(s, 2, BB_TAG_STR, BB_RF_IMPORTANT | BB_RF_TID, 8, v, n, 10);
	synth_put_tid(s, 2, BB_TAG_STR, BB_RF_IMPORTANT | BB_RF_TID, 9, v, n, 101);
	synth_add_state(s, 4, 128);
	synth_state(s, 0, 2, 3, "request", v, cb_text(v, "GET /"));
	synth_state(s, 1, 5, 3, "busy", v, cb_int(v, 1));
	synth_state(s, 2, 4, 3, "n", v, cb_int(v, -7));
	synth_crash(s, 10, 11, 1, 0, 100, "main", frames, 3);
	synth_modules(s, 4096, 2, mods, 2);
}

static int v2_seeds(const char *dir)
{
	struct synth s;
	struct bb_header *h;
	int bad = 0;

	full_v2(&s);
	bad |= save(&s, dir, "v2-full");
	/* a scribbled payload (CRC mismatch) and a torn crash area */
	full_v2(&s);
	synth_data(&s, 0)[40] ^= 0x55;
	memcpy(synth_hdr(&s)->crash, &(uint32_t){ BB_CRASH_SEQ_BUSY }, 4);
	bad |= save(&s, dir, "v2-damaged");
	/* TSC clock, a ring descriptor outside the file, areas out of bounds */
	full_v2(&s);
	h = synth_hdr(&s);
	h->clock = BB_CLOCK_TSC;
	h->clock_requested = BB_CLOCK_TSC;
	h->tsc_anchor = 5;
	h->tsc_mult = 1431655765u;
	h->tsc_shift = 32;
	h->tsc_hz = 3000000000u;
	synth_desc(&s, 1)->data_offset = UINT64_MAX - 4095;
	bad |= save(&s, dir, "v2-tsc-badring");
	full_v2(&s);
	h = synth_hdr(&s);
	h->state_table_offset = s.len - 8;
	h->modules_size = 100000;
	bad |= save(&s, dir, "v2-badareas");
	return bad;
}

/* A 3.0 box: the shared and the important ring, two logs in four
 * segments (one out of table order, one after a hole), a thread slot each,
 * a shared-ring record of a thread without a segment, an important copy,
 * the 2.0 areas. */
static void full_v3(struct synth3 *x)
{
	static const uint64_t frames[2] = { 0x555500001234, 0x1 };
	static const struct synth_mod mods[1] = {
		{ "/usr/bin/prog", 0x555500000000, 0x555500001000, 0x555500009000, "\x12\x34" },
	};
	uint8_t v[32];
	size_t n = cb_text(v, "important");
	uint64_t p;

	synth3_init(x, 4, 4096, 4, 4096);
	synth_use_crc(&x->s);
	/* log 1 (tid 10 "main"): segment 2, then 0, then a hole, then 3 */
	synth3_seg(x, 2, BB_SEG_SEALED, 1, 1, 0, 10, "main", 0);
	synth3_str(x, 2, 1, "first");
	synth3_put(x, 2, BB_TAG_STR, BB_RF_IMPORTANT, 2, v, n);
	p = synth3_desc(x, 2)->head;
	synth3_desc(x, 2)->next = 0;
	synth3_seg(x, 0, BB_SEG_SEALED, 2, 1, p, 10, "main", 0);
	synth3_str(x, 0, 3, "second");
	p = synth3_desc(x, 0)->head;
	synth3_desc(x, 0)->next = 3;
	synth3_seg(x, 3, BB_SEG_OPEN, 1, 1, p + 512, 10, "main", 0);
	synth3_str(x, 3, 4, "after a hole");
	synth3_thread(x, 0, BB_RING_OWNED, 1, 10, "main", 2, 0, 3, 2);
	/* log 2 (tid 20 "worker", exited) */
	synth3_seg(x, 1, BB_SEG_SEALED, 3, 2, 96, 20, "worker", 1);
	synth3_str(x, 1, 5, "bye");
	synth3_thread(x, 1, BB_RING_RETIRED, 2, 20, "worker", 1, 0, 1, 0);
	/* a thread without a segment, and the important copy */
	synth_put_tid(&x->s, 0, BB_TAG_STR, BB_RF_TID, 6, "\x62" "hi", 3, 30);
	synth_put_tid(&x->s, 1, BB_TAG_STR, BB_RF_IMPORTANT | BB_RF_TID, 2, v, n, 10);
	synth_add_state(&x->s, 4, 128);
	synth_state(&x->s, 0, 2, 3, "request", v, cb_text(v, "GET /"));
	synth_crash(&x->s, 10, 11, 1, 0, 10, "main", frames, 2);
	synth_modules(&x->s, 4096, 2, mods, 1);
}

static int v3_seeds(const char *dir)
{
	struct synth3 x;
	uint32_t busy;
	int bad = 0;

	full_v3(&x);
	bad |= save(&x.s, dir, "v3-full");
	/* damage: a scribbled record, a torn write at a dead log's head, a
	 * descriptor past its segment, two segments over the same positions */
	full_v3(&x);
	synth3_data(&x, 2)[20] ^= 0x55;
	busy = BB_SEQ_BUSY(synth3_desc(&x, 3)->head);
	memcpy(synth3_data(&x, 3) + (synth3_desc(&x, 3)->head - synth3_desc(&x, 3)->start), &busy,
	       4);
	synth3_desc(&x, 1)->head = synth3_desc(&x, 1)->start + 4096 + 8;
	synth3_desc(&x, 0)->start = 8;
	bad |= save(&x.s, dir, "v3-damaged");
	/* geometry on the edge: segment data ends at the box's end */
	full_v3(&x);
	synth_hdr(&x.s)->seg_count = 5;
	bad |= save(&x.s, dir, "v3-badgeometry");
	return bad;
}

int main(int argc, char **argv)
{
	struct synth s;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* valid: every tag, both rings, the second one shared */
	synth_init(&s, 2, 4096);
	owner_and_values(&s, 0);
	synth_desc(&s, 1)->kind = BB_RING_SHARED;
	synth_put(&s, 1, BB_TAG_STR, BB_RF_TID, 8, "\x62" "hi", 3);
	bad |= save(&s, argv[1], "valid");
	/* wrapped: records straddle the end of ring 0 */
	synth_init(&s, 2, 4096);
	for (int i = 0; i < 300; i++)
		synth_str(&s, 0, (uint64_t)i, i % 3 ? "wrapping record" : "w");
	bad |= save(&s, argv[1], "wrapped");
	/* torn: a write cut short at head by the owner's death */
	synth_init(&s, 2, 4096);
	owner_and_values(&s, 0);
	synth_torn(&s, 0);
	bad |= save(&s, argv[1], "torn");
	/* multi-ring with an owner change and a corrupt record */
	synth_init(&s, 2, 4096);
	owner_and_values(&s, 0);
	synth_str(&s, 1, 9, "before");
	synth_owner(&s, 1, 10, 20, "worker", 10, "main");
	{
		uint64_t pos = synth_str(&s, 1, 11, "scribbled");
		uint32_t junk = 0x12345678;

		synth_copy(&s, 1, pos, &junk, 4);
	}
	synth_str(&s, 1, 12, "after");
	bad |= save(&s, argv[1], "multi");
	bad |= v2_seeds(argv[1]);
	bad |= v3_seeds(argv[1]);
	return bad;
}
