/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - module+offset for every crash frame; function, inline chain
 * and file:line from a confined child per module (symbols.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"
#include "symbols.h"
#include "symwire.h"

/* Append "@what: @why" to @note, after "; " when it holds a note already. */
static void note_add(char *note, size_t len, const char *what, const char *why)
{
	size_t used;

	if (!note || !len)
		return;
	used = strnlen(note, len);
	if (used + 1 >= len)
		return;
	snprintf(note + used, len - used, "%s%s: %s", used ? "; " : "", what, why);
}

#ifdef BB_HAVE_LIBDW

/* ---- the child's environment -------------------------------------------- */

/*
 * The child gets no environment of ours (no LD_PRELOAD, no DEBUGINFOD_URLS
 * unless asked), only: LD_LIBRARY_PATH, so that it loads the libraries we
 * loaded (an install outside the loader's paths), the sanitizers' options
 * (they mean nothing to a build without sanitizers) and, with
 * --debuginfod, what libdw's
 * debuginfod client reads: the servers, a cache, HOME for the default
 * cache (the owner's, when the child changes to the owner), proxies, and
 * time limits under the child's own deadline so that a slow server costs
 * the debug file, not the symbol table.
 */
struct env {
	char  *v[24];
	size_t n;
	char   store[8192];
	size_t used;
};

static void env_add(struct env *e, const char *name, const char *value)
{
	size_t need = strlen(name) + strlen(value) + 2;

	if (e->n + 1 >= sizeof(e->v) / sizeof(e->v[0]) || sizeof(e->store) - e->used < need)
		return;
	e->v[e->n++] = e->store + e->used;
	e->used += (size_t)snprintf(e->store + e->used, need, "%s=%s", name, value) + 1;
	e->v[e->n] = NULL;
}

static void env_pass(struct env *e, const char *name)
{
	const char *v = getenv(name);

	if (v)
		env_add(e, name, v);
}

static void child_env(struct env *e, const struct bbx_sym_opts *o,
		      const struct bbx_sandbox_id *id)
{
	static const char *const proxies[] = {
		"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
		"no_proxy", "NO_PROXY",
	};
	char secs[16];

	e->n = 0;
	e->used = 0;
	e->v[0] = NULL;
	env_pass(e, "LD_LIBRARY_PATH");
	env_pass(e, "ASAN_OPTIONS");
	env_pass(e, "UBSAN_OPTIONS");
	env_pass(e, "LSAN_OPTIONS");
	if (!o->debuginfod || !getenv("DEBUGINFOD_URLS"))
		return;
	env_pass(e, "DEBUGINFOD_URLS");
	env_pass(e, "DEBUGINFOD_CACHE_PATH");
	if (!id->drop)
		env_pass(e, "HOME");
	else if (id->home[0])
		env_add(e, "HOME", id->home);
	for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
		env_pass(e, proxies[i]);
	/* half the child's time for one download attempt, at least a second */
	snprintf(secs, sizeof(secs), "%d", o->timeout_ms / 2000 > 0 ? o->timeout_ms / 2000 : 1);
	env_add(e, "DEBUGINFOD_TIMEOUT", secs);
	env_add(e, "DEBUGINFOD_MAXTIME", secs);
	env_add(e, "DEBUGINFOD_RETRY_LIMIT", "0");
}

/* ":.debug:DIR...:/usr/lib/debug" (libdwfl's debuginfo_path). */
static int debug_path(const struct bbx_sym_opts *o, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, ":.debug");

	for (size_t i = 0; i < o->ndebug_dirs; i++) {
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, ":%s",
					 o->debug_dirs[i]);
	}
	used += (size_t)snprintf(buf + used, used < len ? len - used : 0, ":/usr/lib/debug");
	return used < len ? 0 : -ENAMETOOLONG;
}

/* ---- one module --------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

/* The child's answer for one frame into @f (strings copied). */
static int take(struct bbx_frame *f, const struct bbx_symframe *a)
{
	bool oom = false;

	f->at.function = dup_or_null(a->at.function, &oom);
	f->at.file = dup_or_null(a->at.file, &oom);
	f->at.line = a->at.line;
	f->has_function_offset = a->has_offset;
	f->function_offset = a->function_offset;
	if (a->ninlined && !(f->inlined = calloc(a->ninlined, sizeof(*f->inlined))))
		return -ENOMEM;
	f->ninlined = a->ninlined;
	for (size_t k = 0; k < a->ninlined; k++) {
		f->inlined[k].function = dup_or_null(a->inlined[k].function, &oom);
		f->inlined[k].file = dup_or_null(a->inlined[k].file, &oom);
		f->inlined[k].line = a->inlined[k].line;
	}
	return oom ? -ENOMEM : 0;
}

/* One module's child: its request, its answer. */
struct job {
	const struct bb_module *m;
	struct bbx_symreq q;
	size_t idx[BBX_SYM_MAX_FRAMES];     /* q's frames in f[] */
	char req[BBX_SYM_REQ_MAX];
	struct bbx_symframe ans[BBX_SYM_MAX_FRAMES];
	bool got[BBX_SYM_MAX_FRAMES];
	struct bbx_child child;
	char out[BBX_SYM_ANSWER_MAX];
};

/* Start the child for the frames of module @j->m with @timeout_ms, or say
 * why not. */
static void start_module(struct job *j, struct bbx_frame *f, size_t n,
			 const struct bbx_sym_opts *o, const struct bbx_sandbox_id *id,
			 struct env *env, const char *dpath, int timeout_ms, char *note,
			 size_t notelen)
{
	const struct bb_module *m = j->m;
	struct bbx_wbuf w = { j->req, 0, sizeof(j->req) - 1, false };
	const char *why = NULL;

	j->child.rc = -ECANCELED; /* not started */
	j->child.why[0] = '\0';
	memset(&j->q, 0, sizeof(j->q));
	for (size_t i = 0; i < n && j->q.n < BBX_SYM_MAX_FRAMES; i++) {
		if (f[i].module != m->path)
			continue;
		j->idx[j->q.n] = i;
		j->q.off[j->q.n] = f[i].offset;
		j->q.ret[j->q.n++] = i > 0;
	}
	if (m->path[0] != '/')
		why = "not a file path";
	else if (strlen(m->path) >= PATH_MAX)
		why = "path too long";
	else if (!m->build_id_len)
		why = "the box records no build id for it: not symbolised";
	else if (m->build_id_len > BBX_SYM_BUILD_ID_MAX)
		why = "the recorded build id is too long: not symbolised";
	if (why) {
		note_add(note, notelen, m->path[0] == '/' && strlen(m->path) < PATH_MAX ? m->path
			 : "a module", why);
		return;
	}
	j->q.uid = (uint32_t)id->uid;
	j->q.gid = (uint32_t)id->gid;
	j->q.drop = id->drop;
	j->q.debuginfod = o->debuginfod && getenv("DEBUGINFOD_URLS");
	j->q.timeout_ms = (uint32_t)timeout_ms;
	j->q.path = m->path;
	memcpy(j->q.build_id, m->build_id, m->build_id_len);
	j->q.build_id_len = m->build_id_len;
	j->q.test = o->test;
	j->q.debug_path = dpath;
	if (bbx_symreq_encode(&j->q, &w)) {
		note_add(note, notelen, m->path, "request too long");
		return;
	}
	if (bbx_sandbox_start(&j->child, j->req, w.len, env->v, timeout_ms, j->out,
			      sizeof(j->out)))
		note_add(note, notelen, m->path, j->child.why);
}

/* The answer of a finished child into its frames. */
static int take_module(struct job *j, struct bbx_frame *f, char *note, size_t notelen)
{
	char why[BBX_SYM_MSG_MAX + 128];
	const char *msg;
	bool ok;
	int rc;

	if (j->child.rc) {
		if (j->child.rc != -ECANCELED && j->child.why[0])
			note_add(note, notelen, j->m->path, j->child.why);
		return 0;
	}
	if (bbx_symans_decode(j->out, j->child.len, j->q.n, &ok, &msg, j->ans, j->got)) {
		snprintf(why, sizeof(why), "the symboliser's answer is malformed (%s): ignored",
			 msg);
		note_add(note, notelen, j->m->path, why);
		return 0;
	}
	if (msg[0])
		note_add(note, notelen, j->m->path, msg);
	if (!ok)
		return 0;
	for (size_t k = 0; k < j->q.n; k++) {
		struct bbx_frame *fr = &f[j->idx[k]];

		fr->examined = true;
		if (j->got[k] && (rc = take(fr, &j->ans[k])))
			return rc;
	}
	return 0;
}

/* Milliseconds this run has spent symbolising, over all its boxes. */
static int64_t run_spent_ms;

static bool module_used(const struct bb_module *m, const struct bbx_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].module == m->path)
			return true;
	return false;
}

/*
 * Why modules were not examined, in front of @note (which may be full of
 * the examined modules' notes by now: this one must not be cut off).
 */
static void note_left(char *note, size_t notelen, size_t over_max, size_t over_budget,
		      const struct bbx_sym_opts *o, bool run_limited)
{
	char why[320] = "", part[160];
	size_t k, used;

	if (!note || notelen < 16 || (!over_max && !over_budget))
		return;
	if (over_budget) {
		snprintf(part, sizeof(part), "%zu module%s not examined: the symbol budget of "
			 "%d ms per %s is spent", over_budget, over_budget == 1 ? "" : "s",
			 run_limited ? o->run_budget_ms : o->box_budget_ms,
			 run_limited ? "run" : "box");
		note_add(why, sizeof(why), "symbols", part);
	}
	if (over_max) {
		snprintf(part, sizeof(part), "%zu more module%s not examined: at most %d per box",
			 over_max, over_max == 1 ? "" : "s", BBX_SYM_MODULES_MAX);
		note_add(why, sizeof(why), "symbols", part);
	}
	k = strlen(why);
	used = strnlen(note, notelen - 1);
	if (k + 2 >= notelen)
		k = notelen - 3;
	if (used + k + 2 >= notelen)
		used = notelen - k - 3; /* the last modules' notes go */
	memmove(note + k + (used ? 2 : 0), note, used);
	memcpy(note, why, k);
	if (used)
		memcpy(note + k, "; ", 2);
	note[k + (used ? 2 : 0) + used] = '\0';
}

/*
 * One child per module that holds frames, BBX_SANDBOX_PARALLEL at a time:
 * modules are independent, and a large debug file (libc's is slow to
 * decompress) need not wait for the others.  A box's first
 * BBX_SYM_MODULES_MAX modules only, and within its budgets: no child
 * starts once the box's (or the run's) budget is spent, and none may run
 * past it (its deadline is the sooner of its own timeout and the
 * budget's end), so that a box naming hundreds of modules that each hang
 * until killed costs a bounded time, not a deadline per module.
 */
static int symbolise_modules(struct bbx_frame *f, size_t n, const struct bb_module *mods,
			     size_t nmods, const struct bbx_sym_opts *o, char *note,
			     size_t notelen)
{
	struct bbx_sandbox_id id;
	char why[256], dpath[BBX_SYM_REQ_MAX / 2];
	struct bbx_child *kids[BBX_SANDBOX_PARALLEL];
	struct env env;
	struct job *j;
	size_t m = 0, started = 0, over_max = 0, over_budget = 0;
	int64_t t0 = bbx_now_ms(), end = t0 + o->box_budget_ms;
	bool run_limited = false;
	int rc = 0;

	if (t0 + (o->run_budget_ms - run_spent_ms) < end) {
		end = t0 + (o->run_budget_ms - run_spent_ms);
		run_limited = true;
	}
	if (bbx_sandbox_identity(o->owner, &id, why, sizeof(why))) {
		note_add(note, notelen, "symbols", why);
		return 0;
	}
	if (debug_path(o, dpath, sizeof(dpath))) {
		note_add(note, notelen, "symbols", "--debug-dir: too long");
		return 0;
	}
	child_env(&env, o, &id);
	if (o->debuginfod && !getenv("DEBUGINFOD_URLS"))
		note_add(note, notelen, "--debuginfod", "DEBUGINFOD_URLS is not set");
	if (!(j = malloc(BBX_SANDBOX_PARALLEL * sizeof(*j))))
		return -ENOMEM;
	while (m < nmods && !rc) {
		size_t k = 0;

		for (; m < nmods && k < BBX_SANDBOX_PARALLEL; m++) {
			int64_t left = end - bbx_now_ms();

			if (!module_used(&mods[m], f, n))
				continue;
			if (started == BBX_SYM_MODULES_MAX) {
				over_max++;
				continue;
			}
			if (left <= 0) {
				over_budget++;
				continue;
			}
			started++;
			j[k].m = &mods[m];
			start_module(&j[k], f, n, o, &id, &env, dpath,
				     left < o->timeout_ms ? (int)left : o->timeout_ms, note,
				     notelen);
			kids[k] = &j[k].child;
			k++;
		}
		bbx_sandbox_finish(kids, k);
		for (size_t i = 0; i < k && !rc; i++)
			rc = take_module(&j[i], f, note, notelen);
	}
	free(j);
	run_spent_ms += bbx_now_ms() - t0;
	note_left(note, notelen, over_max, over_budget, o, run_limited);
	return rc;
}

#else /* !BB_HAVE_LIBDW */

static int symbolise_modules(struct bbx_frame *f, size_t n, const struct bb_module *mods,
			     size_t nmods, const struct bbx_sym_opts *o, char *note,
			     size_t notelen)
{
	(void)f; (void)n; (void)mods; (void)nmods; (void)o;
	note_add(note, notelen, "symbols", "bb-extract was built without libdw");
	return 0;
}

#endif /* BB_HAVE_LIBDW */

int bbx_symbolise(struct bbx_frame *f, const uint64_t *addrs, size_t n,
		  const struct bb_module *mods, size_t nmods,
		  const struct bbx_sym_opts *o, char *note, size_t notelen)
{
	memset(f, 0, n * sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		const struct bb_module *m = bb_module_find(mods, nmods, addrs[i]);

		f[i].addr = addrs[i];
		if (m) {
			f[i].module = m->path;
			f[i].offset = addrs[i] - m->bias;
			f[i].build_id = m->build_id_len ? m->build_id : NULL;
			f[i].build_id_len = m->build_id_len;
		}
	}
	if (!o->symbolise || !n)
		return 0;
	return symbolise_modules(f, n, mods, nmods, o, note, notelen);
}

void bbx_frames_free(struct bbx_frame *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++) {
		free(f[i].at.function);
		free(f[i].at.file);
		for (size_t k = 0; k < f[i].ninlined; k++) {
			free(f[i].inlined[k].function);
			free(f[i].inlined[k].file);
		}
		free(f[i].inlined);
	}
}
