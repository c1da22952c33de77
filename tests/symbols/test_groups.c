/* SPDX-License-Identifier: MIT */
/*
 * Description: the crash signature (extractor/groups.c) against the rule
 * bb-extract(1) GROUPS states, one case for each thing it keeps together
 * and each thing it splits: the same named frames in another build, at
 * other addresses, over another C library, with the function split by the
 * compiler (.cold) are one group; the same function name in two programs,
 * other in-app frames, unnamed frames in two builds are two; system
 * frames (C library, loader, libblackbox, vDSO, the abort and assert
 * path, _start) never count, the executable always does wherever it is
 * installed; a crash with no in-app frame is grouped by program and top
 * frames; a death without a word by program.  And BB_STACK read back:
 * lines, build ids, frame kinds, a module path with spaces, a line that
 * does not parse ending the stack.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <blackbox/reader.h>

#include "groups.h"

static const uint8_t EXE1[] = { 0x11, 0x22, 0x33, 0x44 };
static const uint8_t EXE2[] = { 0x55, 0x66, 0x77, 0x88 };
static const uint8_t LIBC1[] = { 0xaa, 0xbb };
static const uint8_t LIBC2[] = { 0xcc, 0xdd };

/* A frame in @module at @off named @fn (NULL: unknown). */
static struct bbx_frame fr(const char *module, const uint8_t *id, size_t idlen, uint64_t off,
			   const char *fn)
{
	struct bbx_frame f;

	memset(&f, 0, sizeof(f));
	f.addr = 0x7f0000000000ull + off;
	f.module = module;
	f.build_id = id;
	f.build_id_len = idlen;
	f.offset = off;
	f.at.function = (char *)fn;
	f.examined = fn != NULL;
	return f;
}

#define EXE(path, id, off, fn) fr(path, id, sizeof(id), off, fn)
#define LIBC(id, off, fn) fr("/lib/x86_64-linux-gnu/libc.so.6", id, sizeof(id), off, fn)

/* parse_header < handle_request < main < __libc_start_call_main < _start
 * of build @exe at offsets from @base, over C library @libc */
static void segv(struct bbx_frame *f, const char *path, const uint8_t *exe, uint64_t base,
		 const uint8_t *libc, uint64_t lbase, bool named)
{
	f[0] = fr(path, exe, 4, base + 0x13, named ? "parse_header" : NULL);
	f[1] = fr(path, exe, 4, base + 0x29, named ? "handle_request" : NULL);
	f[2] = fr(path, exe, 4, base - 0x1000, named ? "main" : NULL);
	f[3] = fr("/lib/x86_64-linux-gnu/libc.so.6", libc, 2, lbase, "__libc_start_call_main");
	f[4] = fr(path, exe, 4, base + 0x200, named ? "_start" : NULL);
}

static struct bbx_sig sig_of(const struct bbx_frame *f, size_t n, const uint8_t *exe,
			     const char *comm)
{
	struct bbx_sig s;

	bbx_signature(f, n, true, exe, 4, comm, 11, &s);
	return s;
}

Test(groups, same_bug_other_build_addresses_libc)
{
	struct bbx_frame a[5], b[5];
	struct bbx_sig sa, sb;

	segv(a, "/opt/fleet/bin/api-gw", EXE1, 0x3db0, LIBC1, 0x2724a, true);
	segv(b, "/usr/local/bin/api-gw", EXE2, 0x5120, LIBC2, 0x2914a, true);
	b[0].addr += 0x1000000; /* ASLR */
	sa = sig_of(a, 5, EXE1, "api-gw");
	sb = sig_of(b, 5, EXE2, "api-gw");
	cr_expect_str_eq(sa.id, sb.id);
	cr_expect_eq(sa.kind, BBX_GROUP_APP);
	cr_expect(sa.named);
	cr_expect_str_eq(sa.top, "parse_header < handle_request < main");
	cr_expect_eq(strlen(sa.id), 16);
}

Test(groups, unnamed_frames_split_by_build)
{
	struct bbx_frame a[5], b[5], c[5];
	struct bbx_sig sa, sb, sc;

	segv(a, "/opt/fleet/bin/api-gw", EXE1, 0x3db0, LIBC1, 0x2724a, false);
	segv(b, "/opt/fleet/bin/api-gw", EXE2, 0x5120, LIBC1, 0x2724a, false);
	segv(c, "/srv/api-gw", EXE1, 0x3db0, LIBC2, 0x1111, false);
	sa = sig_of(a, 5, EXE1, "api-gw");
	sb = sig_of(b, 5, EXE2, "api-gw");
	sc = sig_of(c, 5, EXE1, "api-gw");
	cr_expect_str_neq(sa.id, sb.id);
	cr_expect(!sa.named);
	/* the same build elsewhere, over another libc: one group */
	cr_expect_str_eq(sa.id, sc.id);
	cr_expect_str_eq(sa.top, "api-gw+0x3dc3 < api-gw+0x3dd9 < api-gw+0x2db0 < api-gw+0x3fb0");
}

Test(groups, assert_in_two_programs)
{
	struct bbx_frame a[6], b[6];
	struct bbx_sig sa, sb;

	a[0] = LIBC(LIBC1, 0x8aeec, "__pthread_kill_implementation");
	a[1] = LIBC(LIBC1, 0x3bfb2, "raise");
	a[2] = LIBC(LIBC1, 0x26472, "abort");
	a[3] = LIBC(LIBC1, 0x26395, "__assert_fail_base.cold");
	a[4] = EXE("/opt/fleet/bin/api-gw", EXE1, 0x3e0b, "check_config");
	a[5] = EXE("/opt/fleet/bin/api-gw", EXE1, 0x27ee, "main");
	memcpy(b, a, sizeof(a));
	b[4] = EXE("/opt/fleet/bin/worker", EXE2, 0x3e0b, "check_config");
	b[5] = EXE("/opt/fleet/bin/worker", EXE2, 0x27ee, "main");
	sa = sig_of(a, 6, EXE1, "api-gw");
	sb = sig_of(b, 6, EXE2, "worker");
	cr_expect_str_neq(sa.id, sb.id);
	cr_expect_str_eq(sa.top, "check_config < main");
	cr_expect_str_eq(sb.top, "check_config < main");
}

Test(groups, other_caller_splits)
{
	struct bbx_frame a[3], b[3];

	a[0] = EXE("/opt/a", EXE1, 0x10, "parse_header");
	a[1] = EXE("/opt/a", EXE1, 0x20, "handle_request");
	a[2] = EXE("/opt/a", EXE1, 0x30, "main");
	memcpy(b, a, sizeof(a));
	b[1] = EXE("/opt/a", EXE1, 0x40, "handle_admin");
	cr_expect_str_neq(sig_of(a, 3, EXE1, "a").id, sig_of(b, 3, EXE1, "a").id);
}

Test(groups, only_five_frames_count)
{
	struct bbx_frame a[8], b[8];
	static const char *const names[] = { "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7" };

	for (int i = 0; i < 8; i++)
		a[i] = EXE("/opt/a", EXE1, 0x10 * (uint64_t)(i + 1), names[i]);
	memcpy(b, a, sizeof(a));
	b[6] = EXE("/opt/a", EXE1, 0x999, "another_caller");
	cr_expect_str_eq(sig_of(a, 8, EXE1, "a").id, sig_of(b, 8, EXE1, "a").id);
	b[4] = EXE("/opt/a", EXE1, 0x999, "another_caller");
	cr_expect_str_neq(sig_of(a, 8, EXE1, "a").id, sig_of(b, 8, EXE1, "a").id);
}

Test(groups, compiler_clones_and_inlined_calls)
{
	struct bbx_frame a[2], b[2];
	struct bbx_loc inl = { .function = (char *)"check_len" };

	a[0] = EXE("/opt/a", EXE1, 0x10, "parse_header");
	a[1] = EXE("/opt/a", EXE1, 0x20, "main");
	b[0] = EXE("/opt/a", EXE2, 0x90, "parse_header.cold");
	b[1] = EXE("/opt/a", EXE2, 0x20, "main.part.0");
	cr_expect_str_eq(sig_of(a, 2, EXE1, "a").id, sig_of(b, 2, EXE2, "a").id);
	cr_expect_str_eq(sig_of(b, 2, EXE2, "a").top, "parse_header < main");
	/* a call inlined at the frame is a frame of its own, innermost first */
	b[0].ninlined = 1;
	b[0].inlined = &inl;
	cr_expect_str_eq(sig_of(b, 2, EXE2, "a").top, "check_len < parse_header < main");
	cr_expect_str_neq(sig_of(a, 2, EXE1, "a").id, sig_of(b, 2, EXE2, "a").id);
}

Test(groups, system_modules_and_the_executable)
{
	struct bbx_frame a[5], b[2];
	struct bbx_sig s;

	cr_expect(bbx_module_is_system("/lib/x86_64-linux-gnu/libc.so.6"));
	cr_expect(bbx_module_is_system("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
	cr_expect(bbx_module_is_system("/lib64/ld-linux-x86-64.so.2"));
	cr_expect(bbx_module_is_system("/opt/app/lib/libblackbox.so.0"));
	cr_expect(bbx_module_is_system("[vdso]"));
	cr_expect(!bbx_module_is_system("/opt/app/lib/libparser.so"));
	cr_expect(!bbx_module_is_system("/usr/bin/api-gw"));
	/* an executable installed under /usr/lib still counts (its build id) */
	a[0] = fr("/usr/lib/postgresql/15/bin/postgres", EXE1, 4, 0x10, "ExecScan");
	a[1] = fr("/opt/app/lib/libblackbox.so.0", LIBC2, 2, 0x10, "bb_write_kv");
	a[2] = fr("/usr/lib/postgresql/15/bin/postgres", EXE1, 4, 0x20, "main");
	a[3] = fr("/opt/app/lib/libparser.so", LIBC1, 2, 0x30, NULL);
	a[4] = fr("/usr/lib/postgresql/15/bin/postgres", EXE1, 4, 0x40, "_start");
	a[1].trampoline = false;
	s = sig_of(a, 5, EXE1, "postgres");
	cr_expect_str_eq(s.top, "ExecScan < main < libparser.so+0x30");
	/* a signal trampoline never counts */
	b[0] = EXE("/opt/a", EXE1, 0x10, "handler_victim");
	b[1] = EXE("/opt/a", EXE1, 0x20, "on_signal");
	b[1].trampoline = true;
	cr_expect_str_eq(sig_of(b, 2, EXE1, "a").top, "handler_victim");
}

Test(groups, no_in_app_frame)
{
	struct bbx_frame a[2];
	struct bbx_sig x, y;

	a[0] = LIBC(LIBC1, 0x9d1a0, "__memcpy_avx_unaligned");
	a[1] = LIBC(LIBC1, 0x2724a, "__libc_start_call_main");
	x = sig_of(a, 2, EXE1, "api-gw");
	y = sig_of(a, 2, EXE2, "worker");
	cr_expect_eq(x.kind, BBX_GROUP_SYSTEM);
	cr_expect_str_neq(x.id, y.id);
	cr_expect_str_eq(x.top, "__memcpy_avx_unaligned < __libc_start_call_main");
}

Test(groups, deaths_without_a_stack)
{
	struct bbx_sig a, b, c, d;

	bbx_signature(NULL, 0, false, EXE1, 4, "api-gw", 0, &a);
	bbx_signature(NULL, 0, false, EXE2, 4, "api-gw", 0, &b);
	bbx_signature(NULL, 0, false, EXE1, 4, "worker", 0, &c);
	bbx_signature(NULL, 0, true, EXE1, 4, "api-gw", 11, &d);
	cr_expect_eq(a.kind, BBX_GROUP_ORPHANED);
	cr_expect_str_eq(a.id, b.id);
	cr_expect_str_neq(a.id, c.id);
	cr_expect_eq(d.kind, BBX_GROUP_NOSTACK);
	cr_expect_str_neq(a.id, d.id);
	cr_expect(!a.named && !d.named);
}

Test(groups, stack_parse)
{
	static const char stack[] =
		"#0 0x000055de03847db3 /opt/fleet/bin/api gw+0x3db3 33d276ed2e0a\n"
		"#1 0x00007f0000001000 ?\n"
		"#2 0x00007f14889dc24a /lib/x86_64-linux-gnu/libc.so.6+0x2724a\n"
		"#3 0x00007f14889dc24a [vdso]+0x10 abc\n"
		"#4 0x0000000000000001 /x+0x1";
	struct bbx_sframe *f;
	int n = bbx_stack_parse(stack, strlen(stack), "psr", true, &f);

	cr_assert_eq(n, 3, "a line that does not parse ends the stack (got %d)", n);
	cr_expect_str_eq(f[0].module, "/opt/fleet/bin/api gw");
	cr_expect_eq(f[0].offset, 0x3db3);
	cr_expect_eq(f[0].addr, 0x55de03847db3ull);
	cr_expect_eq(f[0].build_id_len, 6);
	cr_expect_eq(f[0].build_id[0], 0x33);
	cr_expect_eq(f[0].flags, BB_CRASH_FRAME_EXACT);
	cr_expect_null(f[1].module);
	cr_expect_eq(f[1].flags, BB_CRASH_FRAME_SIGNAL);
	cr_expect_eq(f[2].flags, 0);
	cr_expect_eq(f[2].build_id_len, 0);
	bbx_stack_free(f, (size_t)n);

	/* without BB_STACK_KINDS: frame 0 of a signal crash is the pc */
	n = bbx_stack_parse(stack, strlen(stack), "", true, &f);
	cr_expect_eq(f[0].flags, BB_CRASH_FRAME_EXACT);
	cr_expect_eq(f[1].flags, 0);
	bbx_stack_free(f, (size_t)n);
	n = bbx_stack_parse(stack, strlen(stack), "", false, &f);
	cr_expect_eq(f[0].flags, 0);
	bbx_stack_free(f, (size_t)n);
	/* garbage: no frame, no crash */
	n = bbx_stack_parse("#0 0xzz /a+0x1", 14, "", true, &f);
	cr_expect_eq(n, 0);
	bbx_stack_free(f, 0);
	n = bbx_stack_parse("#0 0x1 /a+0x11111111111111111", 29, "", true, &f);
	cr_expect_eq(n, 0);
	bbx_stack_free(f, 0);
}
