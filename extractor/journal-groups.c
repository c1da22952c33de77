/* SPDX-License-Identifier: MIT */
/*
 * journal-groups.c - bb-extract --journal: the filters (--since, --until,
 * --comm, --unit, --state), the crash group of each entry (groups.c
 * computes it from the entry's BB_STACK), --groups (one line or object per
 * group, most deaths first) and --group ID alone (the newest box of a
 * group).  How entries are read and trusted: journal-read.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include <blackbox/reader.h>

#include "../shared/grow.h"
#include "extract.h"
#include "groups.h"
#include "journal-read.h"
#include "journal-fields.h"
#include "symbols.h"


/* ---- filters and crash groups ------------------------------------------ */

/* --since, --until, --comm, --unit, --state (--machine and --boot are
 * journal matches, bbx_j_open()). */
bool bbx_j_wanted(const struct bbx_jsel *s, sd_journal *j, const struct bbx_jentry *e)
{
	const struct bbx_opts *o = s->opt;
	char buf[4 * 256 + 1];

	if (!o)
		return true;
	if ((o->since_us && e->usec < (uint64_t)o->since_us) ||
	    (o->until_us && e->usec > (uint64_t)o->until_us))
		return false;
	if (o->comm && (bbx_j_get(j, BBJ_COMM, buf, sizeof(buf)), strcmp(buf, o->comm)))
		return false;
	if (o->unit && (bbx_j_get(j, BBJ_UNIT, buf, sizeof(buf)), strcmp(buf, o->unit)))
		return false;
	if (o->state && (bbx_j_get(j, BBJ_LIVENESS, buf, sizeof(buf)), strcmp(buf, o->state)))
		return false;
	return true;
}

void bbx_j_gset_free(struct bbx_jgset *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].cursor);
		bbx_stack_free(g->v[i].f, g->v[i].nf);
	}
	free(g->v);
	bbx_symcache_free(g->cache);
	memset(g, 0, sizeof(*g));
}

/* The frames of @g worth symbolising for its group: its executable's and
 * those of modules that are not the system's (groups.c). */
static int want_symbols(struct bbx_jgset *gs, const struct bbx_jgent *g)
{
	int r = 0;

	for (size_t i = 0; i < g->nf && !r; i++) {
		const struct bbx_sframe *f = &g->f[i];
		bool exe = g->exelen && f->build_id_len == g->exelen &&
			   !memcmp(f->build_id, g->exe, g->exelen);

		if (f->module && (exe || !bbx_module_is_system(f->module)))
			r = bbx_symcache_add(gs->cache, f, g->owner);
	}
	return r;
}

/* The entry at @j into @g (its stack parsed, nothing symbolised yet). */
int bbx_j_take_gent(const struct bbx_jsel *s, size_t src, sd_journal *j,
		    const struct bbx_jentry *e, struct bbx_jgent *g)
{
	char *stack = malloc(BBX_J_FIELD_MAX), kinds[BB_CRASH_MAX_FRAMES + 1], kind[16];
	size_t n;
	int r;

	memset(g, 0, sizeof(*g));
	if (!stack)
		return -ENOMEM;
	g->src = src;
	g->e = *e;
	g->usec = e->usec;
	memcpy(g->time, e->time, sizeof(g->time));
	g->incident = !strcmp(e->liveness, "hang") || !strcmp(e->liveness, "snapshot");
	/* a hang's stack is read and grouped as a crash's, in groups of
	 * their own (bbx_signature_event()) */
	g->crashed = !strcmp(e->liveness, "crashed") || !strcmp(e->liveness, "hang");
	g->has_box = e->has_box;
	/* a death without a word: whether the OOM killer did it */
	g->signal = e->signal > 0 && e->signal < 1024 ? (int)e->signal : e->oom;
	g->owner = s->dir || !e->trusted || e->uid < 0 || e->uid > UINT32_MAX
		   ? BBX_J_NOBODY_UID : (uint32_t)e->uid;
	bbx_j_get(j, BBJ_COMM, g->comm, sizeof(g->comm));
	bbx_j_get(j, "_HOSTNAME", g->host, sizeof(g->host));
	snprintf(g->machine, sizeof(g->machine), "%s", e->machine);
	bbx_j_get(j, BBJ_UNIT, g->unit, sizeof(g->unit));
	bbx_j_get(j, BBJ_RELEASE, g->release, sizeof(g->release));
	/* a build id is an even number of hex digits (at most 64 bytes);
	 * anything else is anyone's bytes: shown as "invalid", never printed
	 * raw nor used to look a file up (one byte more is read to see a
	 * longer one) */
	n = bbx_j_get(j, BBJ_BUILD_ID, stack, sizeof(g->build) + 1);
	g->exelen = n < sizeof(g->build) ? bbx_unhex(stack, n, g->exe, sizeof(g->exe)) : 0;
	snprintf(g->build, sizeof(g->build), "%s", g->exelen ? stack : n ? "invalid" : "");
	g->suppressed = bbx_j_get_num(j, BBJ_SUPPRESSED, 0);
	if (sd_journal_get_cursor(j, &g->cursor) < 0) {
		free(stack);
		return -ENOMEM;
	}
	n = 0;
	if (g->crashed) {
		n = bbx_j_get(j, BBJ_STACK, stack, BBX_J_FIELD_MAX);
		kinds[0] = kind[0] = '\0';
		if (n)
			bbx_j_get(j, BBJ_STACK_KINDS, kinds, sizeof(kinds));
		if (n)
			bbx_j_get(j, BBJ_CRASH_KIND, kind, sizeof(kind));
	}
	r = n ? bbx_stack_parse(stack, n, kinds, strcmp(kind, "fatal") != 0, &g->f) : 0;
	free(stack);
	if (r < 0)
		return r;
	g->nf = (size_t)r;
	return 0;
}

/*
 * The entries of @s (its filters applied, and --group when @by_group) with
 * their groups, in the order --list reads them: every source, oldest
 * first.  The frames that decide a group are symbolised together, each
 * module once (unless --no-symbols).  Returns 0 or an exit code (@err).
 */
int bbx_j_collect(const struct bbx_jsel *s, const struct bbx_jsrcs *srcs,
		  struct bbx_jgset *gs, char *err, size_t errlen)
{
	struct bbx_frame *fr = calloc(BB_CRASH_MAX_FRAMES, sizeof(*fr));
	struct bbx_jentry e;
	int r = 0;

	memset(gs, 0, sizeof(*gs));
	if (!fr || !(gs->cache = bbx_symcache_new())) {
		free(fr);
		snprintf(err, errlen, "out of memory");
		return BBX_EXIT_FAILURE;
	}
	for (size_t i = 0; i < srcs->n && !r; i++) {
		sd_journal *j;

		if (bbx_j_open(s, &srcs->v[i], &j, err, errlen) < 0) {
			if (!s->dir) {
				free(fr);
				return BBX_EXIT_NOBOX;
			}
			bbx_msg(NULL, "%s", err);
			err[0] = '\0';
			continue;
		}
		SD_JOURNAL_FOREACH(j) {
			bbx_j_read_entry(j, &e);
			if (!bbx_j_wanted(s, j, &e))
				continue;
			if ((r = BB__GROW(&gs->v, &gs->cap, gs->n + 1)) < 0)
				break;
			r = bbx_j_take_gent(s, i, j, &e, &gs->v[gs->n]);
			if (r < 0)
				break;
			gs->n++;
			if ((r = want_symbols(gs, &gs->v[gs->n - 1])) < 0)
				break;
		}
		bbx_j_close(j);
	}
	if (!r && s->opt && !s->opt->no_symbols) {
		struct bbx_sym_opts so;
		char note[2048] = "";

		bbx_sym_opts_init(s->opt, BBX_J_NOBODY_UID, &so);
		r = bbx_symcache_resolve(gs->cache, &so, note, sizeof(note));
		/* --list shows groups, not frames: why a module has no names is
		 * for --groups and --group to say */
		if (note[0] && !s->opt->quiet && (s->opt->groups || s->opt->group))
			bbx_msg("journal", "symbols: %s", note);
	}
	for (size_t k = 0; k < gs->n && !r; k++) {
		struct bbx_jgent *g = &gs->v[k];

		bbx_symcache_frames(gs->cache, g->f, g->nf, g->owner, fr);
		bbx_signature(fr, g->nf, g->crashed, g->exe, g->exelen, g->comm, g->signal, &g->sig);
		if (g->incident)
			bbx_signature_event(&g->sig, g->e.liveness);
	}
	free(fr);
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return BBX_EXIT_FAILURE;
	}
	return 0;
}

/* --group ID: 16 hex digits. */
bool bbx_j_group_ok(const char *id)
{
	return strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16;
}

bool bbx_j_in_group(const struct bbx_jsel *s, const struct bbx_jgent *g)
{
	return !s->opt || !s->opt->group || !strcmp(g->sig.id, s->opt->group);
}

/* ---- --groups ----------------------------------------------------------- */

/* Distinct strings, with a count each (a group's hosts, builds, units). */
struct tally {
	const char *v[64];
	const char *extra[64];  /* the release of a build */
	size_t      count[64];
	size_t      n, more;    /* kept, and distinct ones beyond those */
};

static void tally(struct tally *t, const char *v, const char *extra)
{
	if (!v[0])
		return;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i], v)) {
			t->count[i]++;
			if (!t->extra[i] || !t->extra[i][0])
				t->extra[i] = extra;
			return;
		}
	if (t->n == 64) {
		t->more++; /* counted once per entry: "at least" */
		return;
	}
	t->v[t->n] = v;
	t->extra[t->n] = extra;
	t->count[t->n++] = 1;
}

/* One group: the entries @idx[0..n) of @gs (oldest first). */
struct group {
	const size_t *idx;
	size_t        n;
	long long     suppressed;
};

static const char *kind_name(enum bbx_group_kind k)
{
	switch (k) {
	case BBX_GROUP_APP:      return "app";
	case BBX_GROUP_SYSTEM:   return "system";
	case BBX_GROUP_NOSTACK:  return "nostack";
	default:                 return "orphaned";
	}
}

static void group_text(struct bbx_out *o, const struct bbx_jgset *gs, const struct group *gr)
{
	const struct bbx_jgent *first = &gs->v[gr->idx[0]], *last = &gs->v[gr->idx[gr->n - 1]];
	struct tally hosts = { 0 }, builds = { 0 }, units = { 0 };
	char line[512];

	for (size_t i = 0; i < gr->n; i++) {
		const struct bbx_jgent *g = &gs->v[gr->idx[i]];

		tally(&hosts, g->machine, g->host);
		tally(&builds, g->build, g->release);
		tally(&units, g->unit, NULL);
	}
	snprintf(line, sizeof(line), "%s %7zu %6zu%s  %-30s %-30s %-9s ", last->sig.id, gr->n,
		 hosts.n, hosts.more ? "+" : " ", first->time, last->time,
		 last->incident ? last->e.liveness : last->crashed ? "crashed" :
		 last->e.oom ? "oom-kill" : "orphaned");
	bbx_out_str(o, line);
	bbx_j_put_esc(o, last->comm[0] ? last->comm : "-");
	bbx_out_char(o, '\n');
	bbx_out_str(o, "    frames: ");
	bbx_j_put_esc(o, last->sig.top[0] ? last->sig.top : last->e.oom
		   ? "(killed by the OOM killer: no stack)" : last->sig.kind == BBX_GROUP_ORPHANED
		   ? "(died without a word: no stack)" : "(no stack)");
	if (last->sig.kind == BBX_GROUP_SYSTEM)
		bbx_out_str(o, "  [no in-app frame]");
	else if (last->sig.kind == BBX_GROUP_APP && !last->sig.named)
		bbx_out_str(o, "  [not all named: by offset, one build]");
	bbx_out_str(o, "\n    builds: ");
	for (size_t i = 0; i < builds.n; i++) {
		snprintf(line, sizeof(line), "%s%.12s", i ? ", " : "", builds.v[i]);
		bbx_out_str(o, line);
		if (builds.extra[i] && builds.extra[i][0]) {
			bbx_out_str(o, " (");
			bbx_j_put_esc(o, builds.extra[i]);
			bbx_out_char(o, ')');
		}
		snprintf(line, sizeof(line), " x%zu", builds.count[i]);
		bbx_out_str(o, line);
	}
	if (!builds.n)
		bbx_out_char(o, '-');
	if (builds.more) {
		snprintf(line, sizeof(line), ", and %zu more", builds.more);
		bbx_out_str(o, line);
	}
	bbx_out_str(o, "\n    units: ");
	for (size_t i = 0; i < units.n; i++) {
		if (i)
			bbx_out_str(o, ", ");
		bbx_j_put_esc(o, units.v[i]);
	}
	if (!units.n)
		bbx_out_char(o, '-');
	if (gr->suppressed) {
		snprintf(line, sizeof(line), "\n    not reported: %lld more deaths (--journal-rate)",
			 gr->suppressed);
		bbx_out_str(o, line);
	}
	bbx_out_char(o, '\n');
}

static void group_struct(struct bbx_em *em, const struct bbx_jgset *gs, const struct group *gr,
			 const struct bbx_jsrcs *srcs)
{
	const struct bbx_jgent *first = &gs->v[gr->idx[0]], *last = &gs->v[gr->idx[gr->n - 1]];
	const struct bbx_jgent *boxed = NULL;
	struct tally hosts = { 0 }, builds = { 0 }, units = { 0 };

	for (size_t i = 0; i < gr->n; i++) {
		const struct bbx_jgent *g = &gs->v[gr->idx[i]];

		tally(&hosts, g->machine, g->host);
		tally(&builds, g->build, g->release);
		tally(&units, g->unit, NULL);
		if (g->has_box)
			boxed = g;
	}
	bbx_em_map(em);
	bbx_em_kv_str(em, "group", last->sig.id);
	bbx_em_kv_str(em, "kind", kind_name(last->sig.kind));
	bbx_em_kv_str(em, "liveness", last->incident ? last->e.liveness :
		      last->crashed ? "crashed" : "orphaned");
	if (!last->crashed && !last->incident) {
		bbx_em_key(em, "oom_kill");
		bbx_em_bool(em, last->e.oom);
	}
	bbx_em_kv_str(em, "comm", last->comm);
	bbx_em_kv_u64(em, "count", gr->n);
	bbx_em_kv_i64(em, "suppressed", gr->suppressed);
	bbx_em_kv_str(em, "first_seen", first->time);
	bbx_em_kv_str(em, "last_seen", last->time);
	bbx_em_kv_str(em, "top_frames", last->sig.top);
	bbx_em_key(em, "named");
	bbx_em_bool(em, last->sig.named);
	bbx_em_kv_u64(em, "machines", hosts.n + hosts.more);
	bbx_em_key(em, "hosts");
	bbx_em_array(em);
	for (size_t i = 0; i < hosts.n; i++) {
		bbx_em_map(em);
		bbx_em_kv_str(em, "machine_id", hosts.v[i]);
		bbx_em_kv_str(em, "host", hosts.extra[i] ? hosts.extra[i] : "");
		bbx_em_kv_u64(em, "count", hosts.count[i]);
		bbx_em_end(em);
	}
	bbx_em_end(em);
	bbx_em_key(em, "builds");
	bbx_em_array(em);
	for (size_t i = 0; i < builds.n; i++) {
		bbx_em_map(em);
		bbx_em_kv_str(em, "build_id", builds.v[i]);
		if (builds.extra[i] && builds.extra[i][0])
			bbx_em_kv_str(em, "release", builds.extra[i]);
		bbx_em_kv_u64(em, "count", builds.count[i]);
		bbx_em_end(em);
	}
	bbx_em_end(em);
	bbx_em_key(em, "units");
	bbx_em_array(em);
	for (size_t i = 0; i < units.n; i++)
		bbx_em_cstr(em, units.v[i]);
	bbx_em_end(em);
	if (srcs->v[last->src].sender[0])
		bbx_em_kv_str(em, "newest_sender", srcs->v[last->src].sender);
	bbx_em_kv_str(em, "newest_cursor", last->cursor);
	if (boxed)
		bbx_em_kv_str(em, "newest_box_cursor", boxed->cursor);
	bbx_em_end(em);
	bbx_em_eol(em);
}

static const struct bbx_jgset *sort_gs;

/* By group, then oldest first (the order they were read in). */
static int by_group(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sort_gs->v[x].sig.id, sort_gs->v[y].sig.id);

	if (c)
		return c;
	if (sort_gs->v[x].usec != sort_gs->v[y].usec)
		return sort_gs->v[x].usec < sort_gs->v[y].usec ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Most deaths first, then the most recent. */
static int by_count(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	uint64_t lx = sort_gs->v[x->idx[x->n - 1]].usec, ly = sort_gs->v[y->idx[y->n - 1]].usec;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return lx > ly ? -1 : lx < ly;
}

int bbx_j_print_groups(const struct bbx_jsel *s, const struct bbx_jsrcs *srcs,
		       const struct bbx_jgset *gs, struct bbx_out *out, struct bbx_em *em,
		       bool text)
{
	size_t *idx = malloc((gs->n + 1) * sizeof(*idx)), n = 0, ng = 0;
	struct group *grs = calloc(gs->n + 1, sizeof(*grs));

	if (!idx || !grs) {
		free(idx);
		free(grs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < gs->n; i++)
		if (bbx_j_in_group(s, &gs->v[i]))
			idx[n++] = i;
	sort_gs = gs;
	qsort(idx, n, sizeof(*idx), by_group);
	for (size_t i = 0; i < n; i++) {
		if (!ng || strcmp(gs->v[grs[ng - 1].idx[0]].sig.id, gs->v[idx[i]].sig.id))
			grs[ng++] = (struct group){ .idx = &idx[i] };
		grs[ng - 1].n++;
		grs[ng - 1].suppressed += gs->v[idx[i]].suppressed;
	}
	qsort(grs, ng, sizeof(*grs), by_count);
	if (text)
		bbx_out_str(out, "GROUP              DEATHS   HOSTS  FIRST SEEN                     "
			    "LAST SEEN                      LIVENESS  COMM\n");
	for (size_t i = 0; i < ng && !out->err; i++) {
		if (text)
			group_text(out, gs, &grs[i]);
		else
			group_struct(em, gs, &grs[i], srcs);
	}
	free(idx);
	free(grs);
	return 0;
}

/*
 * --group ID alone: the cursor of the newest entry of the group that has
 * its box (or of the newest entry when none has), into *@cursor.  Returns
 * 0 or an exit code (@err set).
 */
int bbx_j_newest_of_group(const struct bbx_jsel *s, char **cursor, char *err, size_t errlen)
{
	const struct bbx_jgent *best = NULL;
	struct bbx_jsrcs srcs;
	struct bbx_jgset gs;
	int code;

	if (!bbx_j_group_ok(s->opt->group)) {
		snprintf(err, errlen, "--group '%s': not a group (16 hex digits, as --groups "
			 "shows)", s->opt->group);
		return BBX_EXIT_USAGE;
	}
	if (bbx_j_check_sel(s, err, errlen) < 0)
		return BBX_EXIT_USAGE;
	code = bbx_j_load_sources(s, &srcs, err, errlen);
	if (code < 0)
		return code == -ENOMEM ? BBX_EXIT_FAILURE : BBX_EXIT_NOBOX;
	code = bbx_j_collect(s, &srcs, &gs, err, errlen);
	for (size_t i = 0; i < gs.n && !code; i++) {
		const struct bbx_jgent *g = &gs.v[i];

		if (!bbx_j_in_group(s, g))
			continue;
		/* a box beats none; then the newest */
		if (!best || (g->has_box && !best->has_box) ||
		    (g->has_box == best->has_box && g->usec >= best->usec))
			best = g;
	}
	if (!code && !best) {
		snprintf(err, errlen, "no entry of group %s%s%s", s->opt->group,
			 s->dir ? " in " : "", s->dir ? s->dir : "");
		code = BBX_EXIT_NOBOX;
	}
	if (!code && !(*cursor = strdup(best->cursor))) {
		snprintf(err, errlen, "out of memory");
		code = BBX_EXIT_FAILURE;
	}
	bbx_j_gset_free(&gs);
	bbx_j_srcs_free(&srcs);
	return code;
}

