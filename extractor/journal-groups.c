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

#include "../shared/fnv.h"
#include "../shared/grow.h"
#include "extract.h"
#include "groups.h"
#include "journal-read.h"
#include "journal-fields.h"
#include "symbols.h"


/* ---- filters and crash groups ------------------------------------------ */

/* --since, --until, --comm, --unit, --state, --release (--machine and --boot are
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
	if (o->state && strcmp(bbx_j_liveness(e), o->state))
		return false;
	if (o->release && (bbx_j_get(j, BBJ_RELEASE, buf, sizeof(buf)), strcmp(buf, o->release)))
		return false;
	return true;
}

/* ---- the pool ------------------------------------------------------------ */

struct pslot {
	const char *key;   /* NULL: free */
	size_t      len;
	uint64_t    h;
	void       *val;
};

struct bbx_jpool {
	struct pslot *t;
	size_t        size, used;   /* slots (a power of two), taken */
	char        **blocks;       /* the keys' bytes */
	size_t        nblocks, blockcap;
	char         *next;         /* the last block's free bytes */
	size_t        left;
};

#define POOL_BLOCK ((size_t)64 << 10)
/* Slots a lookup probes at most.  The keys are the senders' (hosts,
 * units, stacks): keys made to collide get copies of their own past this,
 * never a lookup whose work grows with the table. */
#define POOL_PROBES 64

struct bbx_jpool *bbx_jpool_new(void)
{
	struct bbx_jpool *p = calloc(1, sizeof(*p));

	if (p && !(p->t = calloc(p->size = 1024, sizeof(*p->t)))) {
		free(p);
		return NULL;
	}
	return p;
}

void bbx_jpool_free(struct bbx_jpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nblocks; i++)
		free(p->blocks[i]);
	free(p->blocks);
	free(p->t);
	free(p);
}

/* @n bytes (and a NUL) of the pool's, or NULL. */
static char *pool_bytes(struct bbx_jpool *p, size_t n)
{
	char *b;

	if (n + 1 > p->left) {
		size_t sz = n + 1 > POOL_BLOCK ? n + 1 : POOL_BLOCK;

		if (BB__GROW(&p->blocks, &p->blockcap, p->nblocks + 1) < 0 || !(b = malloc(sz)))
			return NULL;
		p->blocks[p->nblocks++] = b;
		p->next = b;
		p->left = sz;
	}
	b = p->next;
	p->next += n + 1;
	p->left -= n + 1;
	return b;
}

/* Twice the slots, every key where its hash says. */
static int pool_grow(struct bbx_jpool *p)
{
	struct pslot *t;
	size_t size = p->size * 2;

	if (size > SIZE_MAX / sizeof(*t) || !(t = calloc(size, sizeof(*t))))
		return -ENOMEM;
	for (size_t i = 0; i < p->size; i++) {
		size_t k = (size_t)p->t[i].h & (size - 1);

		if (!p->t[i].key)
			continue;
		while (t[k].key)
			k = (k + 1) & (size - 1);
		t[k] = p->t[i];
	}
	free(p->t);
	p->t = t;
	p->size = size;
	return 0;
}

const char *bbx_jpool_intern(struct bbx_jpool *p, const void *s, size_t n, void ***val)
{
	uint64_t h = bb__fnv1a64(BB__FNV64_INIT, s, n);
	size_t k, probes = 0;
	char *copy;

	if (2 * (p->used + 1) > p->size && pool_grow(p) < 0)
		return NULL;
	for (k = (size_t)h & (p->size - 1); p->t[k].key; k = (k + 1) & (p->size - 1)) {
		if (p->t[k].h == h && p->t[k].len == n && !memcmp(p->t[k].key, s, n))
			goto found;
		if (++probes == POOL_PROBES)
			break;
	}
	if (!(copy = pool_bytes(p, n)))
		return NULL;
	memcpy(copy, s, n);
	copy[n] = '\0';
	if (p->t[k].key) {
		/* too many keys on this hash: a copy of its own, no slot */
		if (val)
			*val = NULL;
		return copy;
	}
	p->t[k] = (struct pslot){ copy, n, h, NULL };
	p->used++;
found:
	if (val)
		*val = &p->t[k].val;
	return p->t[k].key;
}

/* ---- crash groups --------------------------------------------------------- */

int bbx_j_gset_init(struct bbx_jgset *gs)
{
	memset(gs, 0, sizeof(*gs));
	if (!(gs->cache = bbx_symcache_new()) || !(gs->pool = bbx_jpool_new())) {
		bbx_symcache_free(gs->cache);
		gs->cache = NULL;
		return -ENOMEM;
	}
	return 0;
}

void bbx_j_gset_free(struct bbx_jgset *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].cursor);
		free(g->v[i].message);
	}
	for (size_t i = 0; i < g->nstacks; i++) {
		bbx_stack_free(g->stacks[i]->f, g->stacks[i]->nf);
		free(g->stacks[i]);
	}
	free(g->stacks);
	free(g->v);
	bbx_symcache_free(g->cache);
	bbx_jpool_free(g->pool);
	memset(g, 0, sizeof(*g));
}

const char *bbx_j_time(uint64_t usec, char *buf)
{
	buf[bbx_fmt_time(buf, (int64_t)(usec > INT64_MAX / 1000 ? 0 : usec * 1000))] = '\0';
	return buf;
}

const char *bbx_j_gliveness(const struct bbx_jgent *g)
{
	if (g->incident)
		return g->liveness;
	if (g->crashed)
		return "crashed";
	if (g->oom)
		return "oom-kill";
	return g->liveness[0] ? g->liveness : "?";
}

/* The frames of @st worth symbolising for its group, as @owner: its
 * executable's (build id @exe) and those of modules that are not the
 * system's (groups.c). */
static int want_symbols(struct bbx_jgset *gs, const struct bbx_jstack *st, uint32_t owner,
			const uint8_t *exe, size_t exelen)
{
	int r = 0;

	for (size_t i = 0; i < st->nf && !r; i++) {
		const struct bbx_sframe *f = &st->f[i];
		bool isexe = exelen && f->build_id_len == exelen &&
			     !memcmp(f->build_id, exe, exelen);

		if (f->module && (isexe || !bbx_module_is_system(f->module)))
			r = bbx_symcache_add(gs->cache, f, owner);
	}
	return r;
}

/*
 * The stack @f[0..n) of an entry of @g->owner, once per distinct stack
 * (frames without their addresses) and owner: @g->stack is the pool's,
 * and @f is freed or kept.  Its frames are registered for the symboliser
 * when it is new.  0 or -ENOMEM.
 */
static int intern_stack(struct bbx_jgset *gs, struct bbx_jgent *g, struct bbx_sframe *f,
			size_t n)
{
	size_t len = 0, cap = 0;
	uint8_t exe[64], *key = NULL;
	struct bbx_jstack *st;
	void **slot;
	int r = -ENOMEM;

	for (size_t i = 0; i <= n; i++) {
		const char *m = i < n && f[i].module ? f[i].module : "";
		size_t ml = strlen(m) + 1, need = len + ml + 8 + 1 + 64 + 1 + 4;

		if (BB__GROW(&key, &cap, need) < 0)
			goto out;
		if (i == n) {
			memcpy(key + len, &g->owner, 4); /* and whose it is */
			len += 4;
			break;
		}
		memcpy(key + len, m, ml);
		len += ml;
		memcpy(key + len, &f[i].offset, 8);
		len += 8;
		key[len++] = (uint8_t)f[i].build_id_len;
		memcpy(key + len, f[i].build_id, f[i].build_id_len);
		len += f[i].build_id_len;
		key[len++] = f[i].flags;
	}
	if (!bbx_jpool_intern(gs->pool, key, len, &slot))
		goto out;
	if (slot && *slot) {
		bbx_stack_free(f, n);
		g->stack = *slot;
		r = 0;
		goto out;
	}
	if (!(st = malloc(sizeof(*st))) ||
	    BB__GROW(&gs->stacks, &gs->stackcap, gs->nstacks + 1) < 0) {
		free(st);
		goto out;
	}
	*st = (struct bbx_jstack){ f, n };
	gs->stacks[gs->nstacks++] = st;
	if (slot)
		*slot = st;
	g->stack = st;
	r = want_symbols(gs, st, g->owner, exe,
			 bbx_unhex(g->build, strlen(g->build), exe, sizeof(exe)));
	f = NULL;
out:
	if (r < 0 && f)
		bbx_stack_free(f, n);
	free(key);
	return r;
}

/* @s (@n bytes) as the pool has it, or NULL. */
static const char *pooled(struct bbx_jgset *gs, const char *s, size_t n)
{
	return bbx_jpool_intern(gs->pool, s, n, NULL);
}

/*
 * BB_BUILD_ID into @g->build: a build id is an even number of hex digits
 * (at most 64 bytes); anything else is anyone's bytes: "invalid", never
 * printed raw nor used to look a file up (one byte more is read to see a
 * longer one).  @buf: room for BBX_J_FIELD_MAX bytes.  false: out of
 * memory.
 */
static bool take_build(struct bbx_jgset *gs, sd_journal *j, char *buf, struct bbx_jgent *g)
{
	uint8_t exe[64];
	size_t n = bbx_j_get(j, BBJ_BUILD_ID, buf, 2 * sizeof(exe) + 2);
	size_t len = n <= 2 * sizeof(exe) ? bbx_unhex(buf, n, exe, sizeof(exe)) : 0;

	if (len)
		g->build = pooled(gs, buf, n);
	else
		g->build = pooled(gs, n ? "invalid" : "", n ? 7 : 0);
	return g->build != NULL;
}

/* The entry at @j into @g (its stack parsed and interned, nothing
 * symbolised yet). */
int bbx_j_take_gent(const struct bbx_jsel *s, size_t src, sd_journal *j,
		    const struct bbx_jentry *e, struct bbx_jgset *gs, struct bbx_jgent *g)
{
	char *buf = malloc(BBX_J_FIELD_MAX), kinds[BB_CRASH_MAX_FRAMES + 1], kind[16];
	struct bbx_sframe *f = NULL;
	size_t n;
	int r = -ENOMEM;

	memset(g, 0, sizeof(*g));
	if (!buf)
		return -ENOMEM;
	g->src = src;
	g->usec = e->usec;
	g->incident = !strcmp(e->liveness, "hang") || !strcmp(e->liveness, "snapshot");
	/* a hang's stack is read and grouped as a crash's, in groups of
	 * their own (bbx_signature_event()) */
	g->crashed = !strcmp(e->liveness, "crashed") || !strcmp(e->liveness, "hang");
	g->has_box = e->has_box;
	g->trusted = e->trusted;
	g->oom = e->oom;
	g->pid = e->pid;
	g->uid = e->uid;
	g->starttime = e->starttime;
	g->signal = e->signal;
	g->box_size = e->box_size;
	/* a death without a word: whether the OOM killer did it */
	g->sigsig = e->signal > 0 && e->signal < 1024 ? (int)e->signal : e->oom;
	g->owner = s->dir || !e->trusted || e->uid < 0 || e->uid > UINT32_MAX
		   ? BBX_J_NOBODY_UID : (uint32_t)e->uid;
	/* counts a sender chose: at most 2^32 - 1 each, so that the sums of
	 * a group (at most as many entries as memory holds) cannot wrap */
	g->suppressed = bbx_j_get_num(j, BBJ_SUPPRESSED, 0);
	g->budget = bbx_j_get_num(j, BBJ_BUDGET_REMOVED, 0);
	if (g->suppressed > UINT32_MAX)
		g->suppressed = UINT32_MAX;
	if (g->budget > UINT32_MAX)
		g->budget = UINT32_MAX;
	/* the strings: raw ones from the entry, escaped ones from @e */
#define TAKE(field, name, max) \
	((n = bbx_j_get(j, (name), buf, (max) + 1)), (g->field = pooled(gs, buf, n)) != NULL)
	if (!TAKE(comm, BBJ_COMM, 64) || !TAKE(host, "_HOSTNAME", 64) ||
	    !TAKE(unit, BBJ_UNIT, 256) || !TAKE(release, BBJ_RELEASE, 128) ||
	    !take_build(gs, j, buf, g) ||
	    !(g->machine = pooled(gs, e->machine, strlen(e->machine))) ||
	    !(g->boot = pooled(gs, e->boot, strlen(e->boot))) ||
	    !(g->liveness = pooled(gs, e->liveness, strlen(e->liveness))) ||
	    !(g->signame = pooled(gs, e->signame, strlen(e->signame))) ||
	    !(g->uid_raw = pooled(gs, e->uid_raw, strlen(e->uid_raw))) ||
	    !(g->transport = pooled(gs, e->transport, strlen(e->transport))) ||
	    !(g->reason = pooled(gs, "", 0)))
		goto out;
#undef TAKE
	/* --list --json prints the message; nothing else needs it */
	if (s->opt && s->opt->list && s->opt->fmt != BBX_FMT_TEXT) {
		bbx_j_get(j, "MESSAGE", buf, 4096);
		if (!(g->message = strdup(buf)))
			goto out;
	}
	/* the text of --list and --groups shows no cursor: 150 bytes an
	 * entry not kept (NULL) */
	if (!(s->opt && s->opt->fmt == BBX_FMT_TEXT && (s->opt->list || s->opt->groups)) &&
	    sd_journal_get_cursor(j, &g->cursor) < 0)
		goto out;
	n = 0;
	kinds[0] = kind[0] = '\0';
	if (g->crashed) {
		bbx_j_get(j, BBJ_CRASH_KIND, kind, sizeof(kind));
		if (!strcmp(kind, "fatal") &&
		    !(g->reason = pooled(gs, buf, bbx_j_get(j, BBJ_CRASH_REASON, buf, 129))))
			goto out;
		n = bbx_j_get(j, BBJ_STACK, buf, BBX_J_FIELD_MAX);
		if (n)
			bbx_j_get(j, BBJ_STACK_KINDS, kinds, sizeof(kinds));
	}
	r = n ? bbx_stack_parse(buf, n, kinds, strcmp(kind, "fatal") != 0, &f) : 0;
	if (r > 0)
		r = intern_stack(gs, g, f, (size_t)r);
out:
	free(buf);
	return r < 0 ? r : 0;
}

int bbx_j_group_of(struct bbx_jgset *gs, struct bbx_jgent *g, struct bbx_frame *fr)
{
	const struct bbx_jstack *st = g->stack;
	size_t nf = st ? st->nf : 0;
	uint8_t exe[64];
	struct bbx_sig sig;

	if (st)
		bbx_symcache_frames(gs->cache, st->f, nf, g->owner, fr);
	bbx_signature(fr, nf, g->crashed, exe, bbx_unhex(g->build, strlen(g->build), exe,
							  sizeof(exe)),
		      g->comm, g->sigsig, &sig);
	if (g->incident)
		bbx_signature_event(&sig, g->liveness);
	memcpy(g->sig.id, sig.id, sizeof(g->sig.id));
	g->sig.kind = (uint8_t)sig.kind;
	g->sig.named = sig.named;
	g->sig.top = pooled(gs, sig.top, strlen(sig.top));
	g->sig.where = pooled(gs, sig.where, strlen(sig.where));
	return g->sig.top && g->sig.where ? 0 : -ENOMEM;
}

/*
 * The symboliser's note on a run's modules ("module: why; module: why"),
 * on one line of standard error: its first part, cut to fit, and how many
 * more there are.
 */
static void say_note(const char *note)
{
	size_t parts = 1, k = strcspn(note, ";");

	for (const char *p = note; (p = strstr(p, "; ")); p += 2)
		parts++;
	if (parts > 1)
		bbx_msg("journal", "symbols: %.*s%s (and %zu more notes)", (int)(k > 64 ? 61 : k),
			note, k > 64 ? "..." : "", parts - 1);
	else
		bbx_msg("journal", "symbols: %.*s%s", (int)(k > 90 ? 87 : k), note,
			k > 90 ? "..." : "");
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

	if (bbx_j_gset_init(gs) < 0 || !fr) {
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
		if (bbx_j_seek_first(j, s) < 0) {
			bbx_j_close(j);
			continue;
		}
		while (sd_journal_next(j) > 0) {
			bbx_j_read_entry(j, &e);
			if (!bbx_j_wanted(s, j, &e))
				continue;
			if ((r = BB__GROW(&gs->v, &gs->cap, gs->n + 1)) < 0)
				break;
			r = bbx_j_take_gent(s, i, j, &e, gs, &gs->v[gs->n]);
			if (r < 0)
				break;
			gs->n++;
		}
		bbx_j_close(j);
	}
	if (!r && s->opt && !s->opt->no_symbols) {
		struct bbx_sym_opts so;
		char note[2048] = "";

		bbx_sym_opts_init(s->opt, BBX_J_NOBODY_UID, &so);
		r = bbx_symcache_resolve(gs->cache, &so, note, sizeof(note));
		/* --list shows groups, not frames: why a module has no names is
		 * for --groups and --group to say, once and short */
		if (note[0] && !s->opt->quiet && (s->opt->groups || s->opt->group))
			say_note(note);
	}
	for (size_t k = 0; k < gs->n && !r; k++)
		r = bbx_j_group_of(gs, &gs->v[k], fr);
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

/* One distinct value among a group's entries (a machine, a build, a
 * release, a unit): how many entries have it, when first and last. */
struct tval {
	const char *v;
	const char *extra;     /* the host name of a machine, the release of a build */
	uint64_t    first, last; /* usec */
	size_t      count;
};

/* Every distinct value, exactly: as many as there are. */
struct tally {
	struct tval *v;
	size_t       n, cap;
};

enum tally_key { T_MACHINE, T_BUILD, T_RELEASE, T_UNIT };

static const char *key_of(const struct bbx_jgent *g, enum tally_key k, const char **extra)
{
	*extra = NULL;
	switch (k) {
	case T_MACHINE: *extra = g->host; return g->machine;
	case T_BUILD:   *extra = g->release; return g->build;
	case T_RELEASE: return g->release;
	default:        return g->unit;
	}
}

static int by_value(const void *a, const void *b)
{
	return strcmp(((const struct tval *)a)->v, ((const struct tval *)b)->v);
}

/* Most entries first, then by value. */
static int by_tcount(const void *a, const void *b)
{
	const struct tval *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->v, y->v);
}

/* Oldest first seen first. */
static int by_tfirst(const void *a, const void *b)
{
	const struct tval *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return strcmp(x->v, y->v);
}

/* One group: the entries @idx[0..n) of @gs (oldest first). */
struct group {
	const size_t *idx;
	size_t        n;
	long long     suppressed;   /* rate-limited deaths its entries tell of */
	long long     budget;       /* deaths the crash-loop budget removed */
	size_t        deaths;       /* n + suppressed + budget */
};

/*
 * The distinct values of @k among the entries of @gr (the empty value left
 * out), sorted by sort: sorting the entries' values and counting the runs
 * is exact at any number of hosts.  0 or -ENOMEM.
 */
static int tally_of(const struct bbx_jgset *gs, const struct group *gr, enum tally_key k,
		    int (*sort)(const void *, const void *), struct tally *t)
{
	size_t n = 0;

	memset(t, 0, sizeof(*t));
	if (BB__GROW(&t->v, &t->cap, gr->n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < gr->n; i++) {
		const struct bbx_jgent *g = &gs->v[gr->idx[i]];
		const char *extra, *v = key_of(g, k, &extra);

		if (v[0])
			t->v[t->n++] = (struct tval){ v, extra, g->usec, g->usec, 1 };
	}
	qsort(t->v, t->n, sizeof(*t->v), by_value);
	for (size_t i = 0; i < t->n; i++) {
		struct tval *d = &t->v[n - (n && !strcmp(t->v[n - 1].v, t->v[i].v))];

		if (d == &t->v[n]) {
			*d = t->v[i];
			n++;
			continue;
		}
		d->count++;
		if (!d->extra || (!d->extra[0] && t->v[i].extra))
			d->extra = t->v[i].extra;
		if (t->v[i].first < d->first)
			d->first = t->v[i].first;
		if (t->v[i].last > d->last)
			d->last = t->v[i].last;
	}
	t->n = n;
	qsort(t->v, t->n, sizeof(*t->v), sort);
	return 0;
}

/*
 * The deaths of one program in one release, over every entry read (every
 * group): what "not seen in" reports for a group of that program whose
 * bug that release did not hit.
 */
struct prel {
	const char *comm, *release;
	uint64_t    first, last;
	size_t      deaths, hosts;
};

struct prels {
	struct prel *v;
	size_t       n;
};

static const struct bbx_jgset *sort_gs;

static int by_prog_release(const void *a, const void *b)
{
	const struct bbx_jgent *x = &sort_gs->v[*(const size_t *)a];
	const struct bbx_jgent *y = &sort_gs->v[*(const size_t *)b];
	int c = strcmp(x->comm, y->comm);

	if (!c)
		c = strcmp(x->release, y->release);
	return c ? c : strcmp(x->machine, y->machine);
}

/* By program, then the newest last death first. */
static int by_prog_last(const void *a, const void *b)
{
	const struct prel *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	if (c)
		return c;
	return x->last > y->last ? -1 : x->last < y->last;
}

/* Every (program, release) of the entries of @gs in @idx[0..n) with a
 * release.  0 or -ENOMEM. */
static int prels_of(const struct bbx_jgset *gs, const size_t *idx, size_t n, struct prels *p)
{
	size_t *v = malloc((n + 1) * sizeof(*v)), k = 0;

	memset(p, 0, sizeof(*p));
	if (!v || !(p->v = calloc(n + 1, sizeof(*p->v)))) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (gs->v[idx[i]].release[0])
			v[k++] = idx[i];
	sort_gs = gs;
	qsort(v, k, sizeof(*v), by_prog_release);
	for (size_t i = 0; i < k; i++) {
		const struct bbx_jgent *g = &gs->v[v[i]], *prev = i ? &gs->v[v[i - 1]] : NULL;
		struct prel *r = &p->v[p->n - 1];

		if (!prev || strcmp(prev->comm, g->comm) || strcmp(prev->release, g->release)) {
			r = &p->v[p->n++];
			*r = (struct prel){ g->comm, g->release, g->usec, g->usec, 0, 0 };
		}
		r->deaths++;
		r->hosts += !prev || strcmp(prev->comm, g->comm) ||
			    strcmp(prev->release, g->release) || strcmp(prev->machine, g->machine);
		if (g->usec < r->first)
			r->first = g->usec;
		if (g->usec > r->last)
			r->last = g->usec;
	}
	free(v);
	/* what not_seen() looks up: a program's releases, newest first */
	qsort(p->v, p->n, sizeof(*p->v), by_prog_last);
	return 0;
}

#define NOT_SEEN_MAX  8  /* releases a group's "not seen in" names at most */
#define NOT_SEEN_SCAN 64 /* of its program's newest releases looked at */

/*
 * The releases of @last's program that ran after the group's first death
 * (one of their deaths, in any group, came later) and had none of the
 * group's deaths (@releases): its bug did not show there.  The newest
 * first, into @out: their number.  Bounded (NOT_SEEN_SCAN, NOT_SEEN_MAX)
 * whatever the senders' releases and groups number.
 */
static size_t not_seen(const struct prels *pr, const struct bbx_jgent *first,
		       const struct bbx_jgent *last, const struct tally *releases,
		       const struct prel **out)
{
	size_t lo = 0, hi = pr->n, n = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(pr->v[mid].comm, last->comm) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < pr->n && i - lo < NOT_SEEN_SCAN && n < NOT_SEEN_MAX &&
	     !strcmp(pr->v[i].comm, last->comm); i++) {
		bool hit = false;

		if (pr->v[i].last <= first->usec)
			break; /* the rest are older */
		for (size_t k = 0; k < releases->n && !hit; k++)
			hit = !strcmp(releases->v[k].v, pr->v[i].release);
		if (!hit)
			out[n++] = &pr->v[i];
	}
	return n;
}

static const char *kind_name(enum bbx_group_kind k)
{
	switch (k) {
	case BBX_GROUP_APP:      return "app";
	case BBX_GROUP_SYSTEM:   return "system";
	case BBX_GROUP_NOSTACK:  return "nostack";
	default:                 return "orphaned";
	}
}

/* How the newest death of a group died: its signal's name, "fatal" for a
 * bb_crash_record() without one, "oom-kill" or "orphaned". */
static const char *how_died(const struct bbx_jgent *g)
{
	if (!g->crashed || g->incident)
		return bbx_j_gliveness(g);
	if (g->signame[0])
		return g->signame;
	return g->reason[0] ? "fatal" : "crashed";
}

/* "2026-11-21 13:45:01" (UTC) of @usec, what a line of --groups shows
 * unless --wide ("2026-11-21T13:45:01.123456000Z"). */
static const char *short_time(uint64_t usec, bool wide, char *buf)
{
	char t[BBX_TIME_MAX];

	bbx_j_time(usec, wide ? buf : t);
	if (!wide && strlen(t) >= 19)
		snprintf(buf, BBX_TIME_MAX, "%.10s %.8s", t, t + 11);
	else if (!wide)
		memcpy(buf, t, sizeof(t));
	return buf;
}

/* Text, wrapped at 120 columns: items of a list after @label. */
struct wrap {
	struct bbx_out *o;
	size_t          col;
	bool            first;
	const char     *sep;   /* between items: ", " or " < " */
};

static void wrap_start(struct wrap *w, struct bbx_out *o, const char *label, const char *sep)
{
	*w = (struct wrap){ o, 4 + strlen(label), true, sep };
	bbx_out_str(o, "    ");
	bbx_out_str(o, label);
}

/* One item, escaped (@s, @len bytes, at most 256) then as is (@tail); on
 * a line of its own, indented, when it would end past column 120. */
static void wrap_put(struct wrap *w, const char *s, size_t len, const char *tail)
{
	char esc[4 * 256 + 1];
	size_t n = bb_escape_text(s, len < 256 ? len : 256, esc, sizeof(esc)),
	       k = n + strlen(tail), sl = strlen(w->sep);

	if (!w->first && w->col + sl + k > 120) {
		/* the separator ends the line ("," or " <") */
		bbx_out_put(w->o, w->sep, w->sep[sl - 1] == ' ' ? sl - 1 : sl);
		bbx_out_str(w->o, "\n      ");
		w->col = 6;
	} else if (!w->first) {
		bbx_out_str(w->o, w->sep);
		w->col += sl;
	}
	bbx_out_put(w->o, esc, n);
	bbx_out_str(w->o, tail);
	w->col += k;
	w->first = false;
}

static void wrap_item(struct wrap *w, const char *s, const char *tail)
{
	wrap_put(w, s, strlen(s), tail);
}

struct gview {
	const struct bbx_jgent *first, *last, *boxed;
	struct tally            hosts, builds, releases, units;
};

static void gview_free(struct gview *v)
{
	free(v->hosts.v);
	free(v->builds.v);
	free(v->releases.v);
	free(v->units.v);
}

static int gview_of(const struct bbx_jgset *gs, const struct group *gr, struct gview *v)
{
	memset(v, 0, sizeof(*v));
	v->first = &gs->v[gr->idx[0]];
	v->last = &gs->v[gr->idx[gr->n - 1]];
	for (size_t i = 0; i < gr->n; i++)
		if (gs->v[gr->idx[i]].has_box)
			v->boxed = &gs->v[gr->idx[i]];
	if (tally_of(gs, gr, T_MACHINE, by_tcount, &v->hosts) < 0 ||
	    tally_of(gs, gr, T_BUILD, by_tfirst, &v->builds) < 0 ||
	    tally_of(gs, gr, T_RELEASE, by_tfirst, &v->releases) < 0 ||
	    tally_of(gs, gr, T_UNIT, by_tcount, &v->units) < 0) {
		gview_free(v);
		return -ENOMEM;
	}
	return 0;
}

/* The top frames with the first one's file:line after it. */
/* The top frames, wrapped at 120 columns, with the first one's file:line
 * after it. */
static void put_top(struct bbx_out *o, const char *top, const char *where)
{
	char tail[160] = "";
	struct wrap w;

	wrap_start(&w, o, "frames: ", " < ");
	if (where[0])
		snprintf(tail, sizeof(tail), " (%.120s)", where);
	for (const char *s = top, *lt; *s; s = lt ? lt + 3 : s + strlen(s)) {
		lt = strstr(s, " < ");
		wrap_put(&w, s, lt ? (size_t)(lt - s) : strlen(s), s == top ? tail : "");
	}
}

static void group_text(struct bbx_out *o, const struct bbx_jgset *gs, const struct group *gr,
		       const struct gview *v, const struct prels *pr, bool wide)
{
	const struct bbx_jgent *first = v->first, *last = v->last;
	char line[512], t1[BBX_TIME_MAX], t2[BBX_TIME_MAX];
	const struct prel *ns[NOT_SEEN_MAX];
	struct wrap w;
	size_t nns;

	snprintf(line, sizeof(line), "%s %7zu %6zu  %-*s  %-*s  %-9s ", last->sig.id, gr->deaths,
		 v->hosts.n, wide ? 30 : 19, short_time(first->usec, wide, t1),
		 wide ? 30 : 19, short_time(last->usec, wide, t2), how_died(last));
	bbx_out_str(o, line);
	/* within 120 columns: a command name longer than the room left is cut,
	 * marked with a '+' (15 bytes is what the kernel keeps of one) */
	if (wide || strlen(last->comm) <= 34) {
		bbx_j_put_esc(o, last->comm[0] ? last->comm : "-");
	} else {
		bbx_put_escaped(o, last->comm, 33);
		bbx_out_char(o, '+');
	}
	bbx_out_char(o, '\n');
	if (last->sig.top[0])
		put_top(o, last->sig.top, last->sig.where);
	else
		bbx_out_str(o, last->oom ? "    frames: (killed by the OOM killer: no stack)"
			    : last->sig.kind == BBX_GROUP_ORPHANED
			    ? "    frames: (died without a word: no stack)" : "    frames: (no stack)");
	if (last->sig.kind == BBX_GROUP_SYSTEM)
		bbx_out_str(o, "  [no in-app frame]");
	else if (last->sig.kind == BBX_GROUP_APP && !last->sig.named)
		bbx_out_str(o, "  [not all named: by offset, one build]");
	if (last->reason[0]) {
		size_t k = strlen(last->reason);

		bbx_out_str(o, "\n    reason: ");
		bbx_put_escaped(o, last->reason, wide || k <= 108 ? k : 107);
		if (!wide && k > 108)
			bbx_out_char(o, '+');
	}
	for (size_t i = 0; i < v->releases.n; i++) {
		const struct tval *r = &v->releases.v[i];

		bbx_out_str(o, i ? "\n              " : "\n    releases: ");
		bbx_j_put_esc(o, r->v);
		snprintf(line, sizeof(line), " x%zu, first %s, last %s", r->count,
			 short_time(r->first, wide, t1), short_time(r->last, wide, t2));
		bbx_out_str(o, line);
	}
	nns = not_seen(pr, first, last, &v->releases, ns);
	for (size_t i = 0; i < nns; i++) {
		const struct prel *p = ns[i];

		bbx_out_str(o, i ? "\n                 " : "\n    not seen in: ");
		bbx_j_put_esc(o, p->release);
		snprintf(line, sizeof(line), " (%zu death%s of ", p->deaths, p->deaths == 1 ? "" : "s");
		bbx_out_str(o, line);
		bbx_j_put_esc(o, p->comm);
		bbx_out_char(o, ' ');
		bbx_j_put_esc(o, p->release);
		snprintf(line, sizeof(line), " in other groups, on %zu host%s)", p->hosts,
			 p->hosts == 1 ? "" : "s");
		bbx_out_str(o, line);
	}
	bbx_out_char(o, '\n');
	wrap_start(&w, o, "builds: ", ", ");
	for (size_t i = 0; i < v->builds.n; i++) {
		const struct tval *b = &v->builds.v[i];
		char id[16], tail[160];

		snprintf(id, sizeof(id), "%.12s", b->v);
		if (b->extra && b->extra[0])
			snprintf(tail, sizeof(tail), " (%.128s) x%zu", b->extra, b->count);
		else
			snprintf(tail, sizeof(tail), " x%zu", b->count);
		wrap_item(&w, id, tail);
	}
	if (!v->builds.n)
		bbx_out_char(o, '-');
	bbx_out_char(o, '\n');
	wrap_start(&w, o, "units: ", ", ");
	for (size_t i = 0; i < v->units.n; i++)
		wrap_item(&w, v->units.v[i].v, "");
	if (!v->units.n)
		bbx_out_char(o, '-');
	if (wide) {
		bbx_out_char(o, '\n');
		wrap_start(&w, o, "hosts: ", ", ");
		for (size_t i = 0; i < v->hosts.n; i++) {
			char tail[32];

			snprintf(tail, sizeof(tail), " x%zu", v->hosts.v[i].count);
			wrap_item(&w, v->hosts.v[i].extra && v->hosts.v[i].extra[0]
				  ? v->hosts.v[i].extra : v->hosts.v[i].v, tail);
		}
	}
	if (gr->suppressed || gr->budget) {
		snprintf(line, sizeof(line), "\n    not reported: %lld more deaths (--journal-rate)",
			 gr->suppressed);
		if (gr->budget)
			snprintf(line, sizeof(line), "\n    not reported: %lld more deaths "
				 "(--journal-rate %lld, crash-loop budget %lld)",
				 gr->suppressed + gr->budget, gr->suppressed, gr->budget);
		bbx_out_str(o, line);
	}
	bbx_out_char(o, '\n');
}

static void tally_struct(struct bbx_em *em, const char *key, const char *vkey,
			 const char *xkey, const struct tally *t, bool times)
{
	bbx_em_key(em, key);
	bbx_em_array(em);
	for (size_t i = 0; i < t->n; i++) {
		bbx_em_map(em);
		bbx_em_kv_str(em, vkey, t->v[i].v);
		if (xkey && t->v[i].extra && (t->v[i].extra[0] || !times))
			bbx_em_kv_str(em, xkey, t->v[i].extra);
		bbx_em_kv_u64(em, "count", t->v[i].count);
		if (times) {
			char tm[BBX_TIME_MAX];

			bbx_em_kv_str(em, "first_seen", bbx_j_time(t->v[i].first, tm));
			bbx_em_kv_str(em, "last_seen", bbx_j_time(t->v[i].last, tm));
		}
		bbx_em_end(em);
	}
	bbx_em_end(em);
}

static void group_struct(struct bbx_em *em, const struct bbx_jgset *gs, const struct group *gr,
			 const struct gview *v, const struct prels *pr,
			 const struct bbx_jsrcs *srcs)
{
	const struct bbx_jgent *first = v->first, *last = v->last;
	const struct prel *ns[NOT_SEEN_MAX];
	char tm[BBX_TIME_MAX];
	size_t nns;

	bbx_em_map(em);
	bbx_em_kv_str(em, "group", last->sig.id);
	bbx_em_kv_str(em, "kind", kind_name(last->sig.kind));
	bbx_em_kv_str(em, "liveness", bbx_j_gliveness(last));
	bbx_em_key(em, "oom_kill");
	bbx_em_bool(em, last->oom);
	bbx_em_kv_str(em, "how", how_died(last));
	if (last->reason[0])
		bbx_em_kv_str(em, "reason", last->reason);
	bbx_em_kv_str(em, "comm", last->comm);
	/* every death: the entries, and those they say were not reported */
	bbx_em_kv_u64(em, "deaths", gr->deaths);
	bbx_em_kv_u64(em, "count", gr->n);
	bbx_em_kv_i64(em, "suppressed", gr->suppressed);
	bbx_em_kv_i64(em, "budget_removed", gr->budget);
	bbx_em_kv_str(em, "first_seen", bbx_j_time(first->usec, tm));
	bbx_em_kv_str(em, "last_seen", bbx_j_time(last->usec, tm));
	bbx_em_kv_str(em, "top_frames", last->sig.top);
	if (last->sig.where[0])
		bbx_em_kv_str(em, "where", last->sig.where);
	bbx_em_key(em, "named");
	bbx_em_bool(em, last->sig.named);
	bbx_em_kv_u64(em, "machines", v->hosts.n);
	tally_struct(em, "hosts", "machine_id", "host", &v->hosts, false);
	tally_struct(em, "builds", "build_id", "release", &v->builds, false);
	tally_struct(em, "releases", "release", NULL, &v->releases, true);
	bbx_em_key(em, "not_seen_in");
	bbx_em_array(em);
	nns = not_seen(pr, first, last, &v->releases, ns);
	for (size_t i = 0; i < nns; i++) {
		bbx_em_map(em);
		bbx_em_kv_str(em, "release", ns[i]->release);
		bbx_em_kv_u64(em, "deaths", ns[i]->deaths);
		bbx_em_kv_u64(em, "hosts", ns[i]->hosts);
		bbx_em_end(em);
	}
	bbx_em_end(em);
	bbx_em_key(em, "units");
	bbx_em_array(em);
	for (size_t i = 0; i < v->units.n; i++)
		bbx_em_cstr(em, v->units.v[i].v);
	bbx_em_end(em);
	if (srcs->v[last->src].sender[0])
		bbx_em_kv_str(em, "newest_sender", srcs->v[last->src].sender);
	bbx_em_kv_str(em, "newest_cursor", last->cursor);
	if (v->boxed)
		bbx_em_kv_str(em, "newest_box_cursor", v->boxed->cursor);
	bbx_em_end(em);
	bbx_em_eol(em);
}

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

	if (x->deaths != y->deaths)
		return x->deaths > y->deaths ? -1 : 1;
	return lx > ly ? -1 : lx < ly;
}

int bbx_j_print_groups(const struct bbx_jsel *s, const struct bbx_jsrcs *srcs,
		       const struct bbx_jgset *gs, struct bbx_out *out, struct bbx_em *em,
		       bool text)
{
	size_t *idx = malloc((gs->n + 1) * sizeof(*idx)), *all = malloc((gs->n + 1) * sizeof(*all));
	struct group *grs = calloc(gs->n + 1, sizeof(*grs));
	bool wide = s->opt && s->opt->wide;
	size_t n = 0, ng = 0;
	struct prels pr = { 0 };
	int r = -ENOMEM;

	if (!idx || !all || !grs)
		goto out;
	for (size_t i = 0; i < gs->n; i++) {
		all[i] = i;
		if (bbx_j_in_group(s, &gs->v[i]))
			idx[n++] = i;
	}
	/* "not seen in" counts the program's deaths in every group */
	if (prels_of(gs, all, gs->n, &pr) < 0)
		goto out;
	sort_gs = gs;
	qsort(idx, n, sizeof(*idx), by_group);
	for (size_t i = 0; i < n; i++) {
		if (!ng || strcmp(gs->v[grs[ng - 1].idx[0]].sig.id, gs->v[idx[i]].sig.id))
			grs[ng++] = (struct group){ .idx = &idx[i] };
		grs[ng - 1].n++;
		grs[ng - 1].suppressed += gs->v[idx[i]].suppressed;
		grs[ng - 1].budget += gs->v[idx[i]].budget;
		grs[ng - 1].deaths += 1 + (size_t)gs->v[idx[i]].suppressed +
				      (size_t)gs->v[idx[i]].budget;
	}
	qsort(grs, ng, sizeof(*grs), by_count);
	if (text) {
		char head[256];

		/* the columns of group_text() */
		snprintf(head, sizeof(head), "%-16s %7s %6s  %-*s  %-*s  %-9s COMM\n", "GROUP",
			 "DEATHS", "HOSTS", wide ? 30 : 19, wide ? "FIRST SEEN" : "FIRST SEEN (UTC)",
			 wide ? 30 : 19, wide ? "LAST SEEN" : "LAST SEEN (UTC)", "HOW");
		bbx_out_str(out, head);
	}
	r = 0;
	for (size_t i = 0; i < ng && !out->err && !r; i++) {
		struct gview v;

		if ((r = gview_of(gs, &grs[i], &v)) < 0)
			break;
		if (text)
			group_text(out, gs, &grs[i], &v, &pr, wide);
		else
			group_struct(em, gs, &grs[i], &v, &pr, srcs);
		gview_free(&v);
	}
out:
	free(pr.v);
	free(idx);
	free(all);
	free(grs);
	return r;
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

