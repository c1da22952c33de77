/* SPDX-License-Identifier: MIT */
/*
 * groups.c - crash signatures (one bug, one group) and the crash stack of
 * a journal entry read back into frames, with a cache that symbolises
 * each module's frames of many entries in one confined child (groups.h).
 *
 * A BB_STACK is the sender's word like every other field: each line is
 * parsed with bounds (addresses and offsets as hexadecimal numbers, a
 * build id of at most 64 bytes, at most BB_CRASH_MAX_FRAMES lines), and
 * a line that does not parse ends the stack.  The module path is kept as
 * sent (bb-reap escaped it); it is only a name to the symboliser, which
 * finds the module by its build id when nothing is at that path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/fnv.h"
#include "../shared/grow.h"
#include "../shared/hex.h"
#include "groups.h"
#include "symwire.h"

/* ---- the signature ------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

bool bbx_module_is_system(const char *path)
{
	static const char *const dirs[] = {
		"/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/",
	};
	static const char *const names[] = {
		"ld-linux", "ld.so", "ld64.so", "libc.so", "libc-", "libblackbox.so",
		"linux-vdso", "linux-gate", "[vdso]",
	};
	const char *b = base_name(path);

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (starts(path, dirs[i]))
			return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (starts(b, names[i]))
			return true;
	return false;
}

/*
 * Functions left out wherever they are (a static C library, libblackbox
 * linked in): the C runtime's start, the abort and assert path, and
 * libblackbox's own crash reporting.
 */
static bool system_function(const char *fn)
{
	static const char *const exact[] = {
		"_start", "abort", "raise", "__assert_fail", "__assert_fail_base",
		"__assert_perror_fail", "__libc_message", "__fortify_fail", "__stack_chk_fail",
		"__chk_fail", "bb_crash_record",
	};
	static const char *const prefix[] = {
		"__libc_start", "__GI_", "__pthread_kill", "bb__",
	};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(fn, exact[i]))
			return true;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (starts(fn, prefix[i]))
			return true;
	return false;
}

static bool is_exe(const struct bbx_frame *f, const uint8_t *id, size_t idlen)
{
	return idlen && f->build_id_len == idlen && !memcmp(f->build_id, id, idlen);
}

/* The signature being built: the key hashed, the top frames shown. */
struct sigb {
	uint64_t h;
	size_t   nframes;
	bool     named;
	char    *top;
	size_t   toplen;
	char    *where;  /* of the first frame (struct bbx_sig) */
	size_t   wherelen;
};

static void sig_str(struct sigb *b, const char *s)
{
	b->h = bb__fnv1a64(b->h, s, strlen(s) + 1); /* with the NUL: no field runs into the next */
}

static void sig_top(struct sigb *b, const char *s)
{
	size_t used = strlen(b->top);

	if (used + 1 < b->toplen)
		snprintf(b->top + used, b->toplen - used, "%s%s", used ? " < " : "", s);
}

/*
 * @name without the suffix a compiler gives a part or a copy of a
 * function (GCC's "f.cold", "f.part.0", "f.isra.0", "f.constprop.0",
 * "f.lto_priv.0", a demangled "f() [clone .cold]"): whether a function is
 * split or specialised changes with the build, the bug does not.
 */
static const char *plain_name(const char *name, char *buf, size_t len)
{
	static const char *const clones[] = {
		".cold", ".part.", ".isra.", ".constprop.", ".lto_priv.", ".localalias",
		".specialized.",
	};
	const char *cut = strstr(name, " [clone ");

	for (const char *d = strchr(name, '.'); d && !cut; d = strchr(d + 1, '.'))
		for (size_t i = 0; i < sizeof(clones) / sizeof(clones[0]) && !cut; i++)
			if (starts(d, clones[i]))
				cut = d;
	if (!cut)
		return name;
	snprintf(buf, len, "%.*s", (int)(cut - name), name);
	return buf;
}

/* One logical frame: @name in the module @module (NULL: not named, the
 * module's offset @off stands for it), at @loc (NULL: unknown). */
static void sig_frame(struct sigb *b, const char *module, const char *name, uint64_t off,
		      const struct bbx_loc *loc)
{
	char buf[64], shown[4200], plain[BBX_SYM_NAME_MAX + 1];

	if (b->nframes == BBX_GROUP_FRAMES)
		return;
	if (!b->nframes++ && b->where && loc && loc->file && loc->line)
		snprintf(b->where, b->wherelen, "%.100s:%u", base_name(loc->file), loc->line);
	sig_str(b, base_name(module));
	if (name) {
		name = plain_name(name, plain, sizeof(plain));
		sig_str(b, name);
		sig_top(b, name);
		return;
	}
	b->named = false;
	snprintf(buf, sizeof(buf), "+0x%" PRIx64, off);
	sig_str(b, buf);
	snprintf(shown, sizeof(shown), "%.4096s%s", base_name(module), buf);
	sig_top(b, shown);
}

/* The frame @f as logical frames (calls inlined at it first, innermost
 * first), those of system functions left out when @app. */
static void sig_frames_of(struct sigb *b, const struct bbx_frame *f, bool app)
{
	char plain[BBX_SYM_NAME_MAX + 1];

	for (size_t k = 0; k < f->ninlined; k++) {
		const char *fn = f->inlined[k].function;

		if (fn && !(app && system_function(plain_name(fn, plain, sizeof(plain)))))
			sig_frame(b, f->module, fn, 0, &f->inlined[k]);
	}
	if (f->at.function && app &&
	    system_function(plain_name(f->at.function, plain, sizeof(plain))))
		return;
	sig_frame(b, f->module, f->at.function, f->offset, &f->at);
}

void bbx_signature(const struct bbx_frame *f, size_t n, bool crashed, const uint8_t *exe_id,
		   size_t exe_idlen, const char *comm, int signal, struct bbx_sig *out)
{
	struct sigb b = { .h = BB__FNV64_INIT, .named = true, .top = out->top,
			  .toplen = sizeof(out->top), .where = out->where,
			  .wherelen = sizeof(out->where) };
	char sigbuf[16];

	out->top[0] = out->where[0] = '\0';
	sig_str(&b, "bbgroup1");
	if (!crashed) {
		out->kind = BBX_GROUP_ORPHANED;
		sig_str(&b, "orphaned");
		sig_str(&b, comm);
		if (signal)
			sig_str(&b, "oom"); /* the kernel's OOM killer (BB_OOM_KILL) */
		goto done;
	}
	sig_str(&b, "app");
	for (size_t i = 0; i < n && b.nframes < BBX_GROUP_FRAMES; i++) {
		if (!f[i].module || f[i].trampoline ||
		    (!is_exe(&f[i], exe_id, exe_idlen) && bbx_module_is_system(f[i].module)))
			continue;
		sig_frames_of(&b, &f[i], true);
	}
	if (b.nframes) {
		out->kind = BBX_GROUP_APP;
		goto done;
	}
	/* no in-app frame: the program's name and the top frames, whoever's */
	b = (struct sigb){ .h = BB__FNV64_INIT, .named = true, .top = out->top,
			   .toplen = sizeof(out->top), .where = out->where,
			   .wherelen = sizeof(out->where) };
	out->top[0] = out->where[0] = '\0';
	sig_str(&b, "bbgroup1");
	for (size_t i = 0; i < n && b.nframes < BBX_GROUP_FRAMES; i++) {
		if (!f[i].module || f[i].trampoline)
			continue;
		if (!b.nframes) {
			sig_str(&b, "system");
			sig_str(&b, comm);
		}
		sig_frames_of(&b, &f[i], false);
	}
	if (b.nframes) {
		out->kind = BBX_GROUP_SYSTEM;
		goto done;
	}
	out->kind = BBX_GROUP_NOSTACK;
	b.named = false;
	sig_str(&b, "nostack");
	sig_str(&b, comm);
	snprintf(sigbuf, sizeof(sigbuf), "%d", signal);
	sig_str(&b, sigbuf);
done:
	out->named = b.named && b.nframes;
	snprintf(out->id, sizeof(out->id), "%016" PRIx64, b.h);
}

void bbx_signature_event(struct bbx_sig *s, const char *event)
{
	uint64_t h = bb__fnv1a64(BB__FNV64_INIT, event, strlen(event));

	h = bb__fnv1a64(h, s->id, strlen(s->id));
	snprintf(s->id, sizeof(s->id), "%016" PRIx64, h);
}

/* ---- BB_STACK ------------------------------------------------------------ */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "0x<hex>" at @s (@n bytes): 1 to 16 digits, nothing else. */
static bool hex_num(const char *s, size_t n, uint64_t *v)
{
	if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
		return false;
	*v = 0;
	for (size_t i = 2; i < n; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return false;
		*v = *v << 4 | (uint64_t)d;
	}
	return true;
}

size_t bbx_unhex(const char *h, size_t n, uint8_t *out, size_t max)
{
	if (!n || n % 2 || n / 2 > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (hexval(h[i]) < 0)
			return 0;
	for (size_t i = 0; i < n / 2; i++)
		out[i] = (uint8_t)(hexval(h[2 * i]) << 4 | hexval(h[2 * i + 1]));
	return n / 2;
}

/* "<module>+0x<offset>[ <build id>]" of @n bytes at @s into @f. */
static int parse_module(const char *s, size_t n, struct bbx_sframe *f)
{
	const char *sp = memrchr(s, ' ', n), *plus;

	/* the last word is a build id when it is an even number of hex
	 * digits; a module path may hold spaces, never a "+0x" at its end */
	if (sp && (f->build_id_len = bbx_unhex(sp + 1, n - (size_t)(sp - s) - 1, f->build_id,
					       sizeof(f->build_id))))
		n = (size_t)(sp - s);
	plus = NULL;
	for (const char *p = s; p + 2 < s + n; p++)
		if (p[0] == '+' && p[1] == '0' && p[2] == 'x')
			plus = p;
	if (!plus || plus == s || !hex_num(plus + 1, (size_t)(s + n - plus - 1), &f->offset))
		return -EBADMSG;
	f->module = strndup(s, (size_t)(plus - s));
	return f->module ? 0 : -ENOMEM;
}

void bbx_stack_free(struct bbx_sframe *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++)
		free(f[i].module);
	free(f);
}

int bbx_stack_parse(const char *s, size_t len, const char *kinds, bool signal_crash,
		    struct bbx_sframe **out)
{
	struct bbx_sframe *f = calloc(BB_CRASH_MAX_FRAMES, sizeof(*f));
	size_t n = 0, nk = strlen(kinds);
	const char *end = s + len;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	while (s < end && n < BB_CRASH_MAX_FRAMES) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end, *a, *m;
		struct bbx_sframe *fr = &f[n];
		int r;

		/* "#<i> 0x<addr> " */
		a = memchr(s, ' ', (size_t)(le - s));
		m = a ? memchr(a + 1, ' ', (size_t)(le - a - 1)) : NULL;
		if (s[0] != '#' || !a || !m || !hex_num(a + 1, (size_t)(m - a - 1), &fr->addr))
			break;
		m++;
		if (!(le - m == 1 && m[0] == '?')) {
			r = parse_module(m, (size_t)(le - m), fr);
			if (r == -ENOMEM) {
				bbx_stack_free(f, n);
				return r;
			}
			if (r < 0)
				break;
		}
		if (n < nk)
			fr->flags = kinds[n] == 'p' ? BB_CRASH_FRAME_EXACT
				  : kinds[n] == 's' ? BB_CRASH_FRAME_SIGNAL : 0;
		else if (!nk && n == 0 && signal_crash)
			fr->flags = BB_CRASH_FRAME_EXACT;
		n++;
		s = le + 1;
	}
	/* as many as there are: a collector keeps thousands of stacks */
	*out = n ? realloc(f, n * sizeof(*f)) : f;
	if (!*out)
		*out = f;
	return (int)n;
}

/* ---- the cache ----------------------------------------------------------- */

struct skey {
	uint32_t owner;
	uint8_t  exact;
	uint8_t  idlen;
	uint8_t  id[64];
	uint64_t off;
	const char *path;       /* the first frame's module (the cache's copy) */
	struct bbx_frame fr;    /* what was found */
};

struct bbx_symcache {
	struct skey *v;
	size_t n, cap;
	bool sorted;
	char **paths;           /* module paths kept */
	size_t npaths, pathcap;
};

struct bbx_symcache *bbx_symcache_new(void)
{
	return calloc(1, sizeof(struct bbx_symcache));
}

void bbx_symcache_free(struct bbx_symcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		bbx_frames_free(&c->v[i].fr, 1);
	for (size_t i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	free(c->v);
	free(c);
}

static int key_cmp(const void *pa, const void *pb)
{
	const struct skey *a = pa, *b = pb;

	if (a->owner != b->owner)
		return a->owner < b->owner ? -1 : 1;
	if (a->idlen != b->idlen)
		return a->idlen < b->idlen ? -1 : 1;
	if (memcmp(a->id, b->id, a->idlen))
		return memcmp(a->id, b->id, a->idlen);
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return (int)a->exact - (int)b->exact;
}

/* Same module: owner and build id. */
static bool same_module(const struct skey *a, const struct skey *b)
{
	return a->owner == b->owner && a->idlen == b->idlen && !memcmp(a->id, b->id, a->idlen);
}

static void key_of(struct skey *k, const struct bbx_sframe *f, uint32_t owner)
{
	memset(k, 0, sizeof(*k));
	k->owner = owner;
	k->exact = (f->flags & BB_CRASH_FRAME_EXACT) != 0;
	k->idlen = (uint8_t)f->build_id_len;
	memcpy(k->id, f->build_id, f->build_id_len);
	k->off = f->offset;
}

int bbx_symcache_add(struct bbx_symcache *c, const struct bbx_sframe *f, uint32_t owner)
{
	struct skey k;

	if (!f->module || !f->build_id_len || (f->flags & BB_CRASH_FRAME_SIGNAL))
		return 0;
	key_of(&k, f, owner);
	if (c->sorted && c->n && bsearch(&k, c->v, c->n, sizeof(k), key_cmp))
		return 0;
	if (BB__GROW(&c->v, &c->cap, c->n + 1) < 0)
		return -ENOMEM;
	/* the path is only a name for the child: the first one seen */
	if (!c->npaths || strcmp(c->paths[c->npaths - 1], f->module)) {
		if (BB__GROW(&c->paths, &c->pathcap, c->npaths + 1) < 0)
			return -ENOMEM;
		if (!(c->paths[c->npaths] = strdup(f->module)))
			return -ENOMEM;
		c->npaths++;
	}
	k.path = c->paths[c->npaths - 1];
	c->v[c->n++] = k;
	c->sorted = false;
	return 0;
}

/* Sort and drop the repeated keys. */
static void settle(struct bbx_symcache *c)
{
	size_t w = 0;

	if (c->sorted)
		return;
	c->sorted = true;
	if (!c->n)
		return;
	qsort(c->v, c->n, sizeof(*c->v), key_cmp);
	for (size_t i = 0; i < c->n; i++)
		if (!w || key_cmp(&c->v[w - 1], &c->v[i]))
			c->v[w++] = c->v[i];
	c->n = w;
}

/* "@what; " in front of @note (what the user must see first). */
static void note_prepend(char *note, size_t len, const char *what)
{
	size_t k = strlen(what), used = note ? strnlen(note, len) : 0;

	if (!note || k + 3 >= len)
		return;
	if (used + k + 3 >= len)
		used = len - k - 3;
	memmove(note + k + (used ? 2 : 0), note, used);
	memcpy(note, what, k);
	if (used)
		memcpy(note + k, "; ", 2);
	note[k + (used ? 2 : 0) + used] = '\0';
}

int bbx_symcache_resolve(struct bbx_symcache *c, const struct bbx_sym_opts *o, char *note,
			 size_t notelen)
{
	uint64_t *addrs = malloc(BB_CRASH_MAX_FRAMES * sizeof(*addrs));
	uint8_t flags[BB_CRASH_MAX_FRAMES];
	struct bbx_frame *fr = calloc(BB_CRASH_MAX_FRAMES, sizeof(*fr));
	size_t modules = 0;
	char why[128];
	int rc = 0;

	if (!addrs || !fr) {
		free(addrs);
		free(fr);
		return -ENOMEM;
	}
	settle(c);
	for (size_t i = 0; i < c->n && !rc;) {
		struct bbx_sym_opts so = *o;
		size_t skip;
		struct bb_module m = { .path = c->v[i].path, .bias = 0, .start = 0,
				       .end = UINT64_MAX, .build_id = c->v[i].id,
				       .build_id_len = c->v[i].idlen };
		size_t k = 0;

		/* one module's frames (at most a crash record's worth) at a time */
		while (i + k < c->n && k < BB_CRASH_MAX_FRAMES && same_module(&c->v[i], &c->v[i + k])) {
			addrs[k] = c->v[i + k].off;
			flags[k] = c->v[i + k].exact ? BB_CRASH_FRAME_EXACT : 0;
			k++;
		}
		so.owner = c->v[i].owner;
		if (modules++ == BBX_GROUP_MODULES_MAX) {
			/* count the modules left, say so once */
			for (skip = 0; i < c->n; skip++) {
				size_t j = i;

				while (j < c->n && same_module(&c->v[i], &c->v[j]))
					j++;
				i = j;
			}
			snprintf(why, sizeof(why), "%zu more modules not examined: at most %d a run",
				 skip, BBX_GROUP_MODULES_MAX);
			note_prepend(note, notelen, why);
			break;
		}
		rc = bbx_symbolise(fr, addrs, flags, k, &m, 1, &so, note, notelen);
		for (size_t j = 0; j < k; j++) {
			c->v[i + j].fr = fr[j];
			/* the module's path is the cache's, not this loop's */
			c->v[i + j].fr.module = c->v[i + j].path;
			c->v[i + j].fr.build_id = c->v[i + j].id;
		}
		i += k;
	}
	free(addrs);
	free(fr);
	return rc;
}

void bbx_symcache_frames(const struct bbx_symcache *c, const struct bbx_sframe *f, size_t n,
			 uint32_t owner, struct bbx_frame *fr)
{
	memset(fr, 0, n * sizeof(*fr));
	for (size_t i = 0; i < n; i++) {
		const struct skey *hit = NULL;
		struct skey k;

		if (f[i].module && f[i].build_id_len && c && c->sorted && c->n) {
			key_of(&k, &f[i], owner);
			hit = bsearch(&k, c->v, c->n, sizeof(k), key_cmp);
		}
		if (hit)
			fr[i] = hit->fr;
		fr[i].addr = f[i].addr;
		fr[i].module = f[i].module;
		fr[i].offset = f[i].offset;
		fr[i].build_id = f[i].build_id_len ? f[i].build_id : NULL;
		fr[i].build_id_len = f[i].build_id_len;
		fr[i].exact = f[i].flags & BB_CRASH_FRAME_EXACT;
		fr[i].trampoline = f[i].flags & BB_CRASH_FRAME_SIGNAL;
	}
}
