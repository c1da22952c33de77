/* SPDX-License-Identifier: MIT */
/*
 * header_use.c - every inline path of <blackbox.h>, as a program uses them:
 * compiled (not run) by header_strict.sh as C and as C++ with strict
 * warnings, which must find nothing to say.
 */
#include <blackbox.h>

int bbt_use(int64_t v, double d, const char *s, const char *const *runtime);

int bbt_use(int64_t v, double d, const char *s, const char *const *runtime)
{
	struct bb_field f[3];
	int r;

	r = bb_write_kv("literal", "pair");
	r |= bb_write_kv(runtime[0], s);
	r |= bb_write_kv("k", (const char *)0);
	r |= bb_write_kv_i64("n", v);
	r |= bb_write_kv_u64(s, (uint64_t)v);
	r |= bb_write_kv_f64("d", d);
	f[0].key = "a";
	f[0].type = BB_TYPE_STR;
	f[0].v.s = s;
	f[1].key = "b";
	f[1].type = BB_TYPE_F64;
	f[1].v.f64 = d;
	f[2].key = runtime[1];
	f[2].type = BB_TYPE_BOOL;
	f[2].v.b = v != 0;
	r |= bb_write_event("event", f, 3);
	r |= bb_write_event(s, f, (size_t)v);
	return r;
}
