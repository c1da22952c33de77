/* SPDX-License-Identifier: MIT */
/*
 * header_use.c - every inline path of <blackbox.h>, as a program uses them:
 * compiled (not run) by header_strict.sh as C and as C++ with strict
 * warnings, which must find nothing to say.
 */
#include <blackbox.h>

/* The casts of this file, in the form each language's strict flags accept
 * (-Wold-style-cast, -Wzero-as-null-pointer-constant in C++). */
#ifdef __cplusplus
#define BBT_CAST(T, x) static_cast<T>(x)
#define BBT_NULL_STR nullptr
#else
#define BBT_CAST(T, x) ((T)(x))
#define BBT_NULL_STR ((const char *)0)
#endif

int bbt_use(int64_t v, double d, const char *s, const char *const *runtime);

int bbt_use(int64_t v, double d, const char *s, const char *const *runtime)
{
	struct bb_field f[3];
	int r;

	r = bb_write_kv("literal", "pair");
	r |= bb_write_kv(runtime[0], s);
	r |= bb_write_kv("k", BBT_NULL_STR);
	r |= bb_write_kv_i64("n", v);
	r |= bb_write_kv_u64(s, BBT_CAST(uint64_t, v));
	r |= bb_write_kv_f64("d", d);
	r |= bb_write_kvn(s, BBT_CAST(size_t, v), runtime[0], 3);
	r |= bb_write_kvn("key", 3, "value", 5);
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
	f[0].type = BB_TYPE_STRN;
	f[0].v.strn.s = s;
	f[0].v.strn.n = BBT_CAST(size_t, v);
	r |= bb_write_event("event", f, 3);
	r |= bb_write_event(s, f, BBT_CAST(size_t, v));
	return r;
}
