/* SPDX-License-Identifier: MIT */
/*
 * gen_seeds.c - write the fuzz seeds into DIR: small boxes (2 rings of
 * 4096 bytes) built by hand with tests/reader/synth.h.  Run once and commit
 * the result: ninja -C build fuzz/gen-seeds && build/fuzz/gen-seeds fuzz/corpus
 */
#include <stdio.h>

#include "../tests/reader/synth.h"

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
	return bad;
}
