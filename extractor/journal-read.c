/* SPDX-License-Identifier: MIT */
/*
 * journal.c - bb-extract --journal / --journal-directory: the boxes that
 * bb-reap --journal put into journal entries (MESSAGE_ID
 * BB_JOURNAL_MESSAGE_ID), on this host or on a collector that
 * systemd-journal-remote fills from many hosts.  coredumpctl for boxes.
 *
 * An entry is untrusted input like a box, and who sent it decides what it
 * can prove (docs/SECURITY.md, "Journal entries"):
 *
 *  - On this host, any local user can send an entry with our MESSAGE_ID
 *    and any BB_* fields; only the fields journald itself sets cannot be
 *    forged.  An entry is bb-reap's only when journald says it came from
 *    uid 0 over the native protocol: the matches _UID=0 and
 *    _TRANSPORT=journal (open_src) are the one rule that lets an entry
 *    in (--list --untrusted drops them, and flags each entry from what
 *    sent_by_root() reads).  Then its BB_UID, the owner of the box file
 *    bb-reap read, is proven, and the box's symbols are parsed as that
 *    uid at most.
 *  - On a collector every field is the uploading host's word, the
 *    trusted ones included: what the collector knows is which journal
 *    file an entry is in, and systemd-journal-remote writes one file per
 *    sending host (remote-<host>.journal).  So each file is read alone
 *    and every entry is attributed to its sender; a lookup never mixes
 *    the entries of two senders, and a box from a collector is parsed as
 *    nobody (65534).
 *  - Entries that disagree (one machine, boot and pid, another owner or
 *    start time; or two senders) are never resolved by recency: exit 5,
 *    each named with its cursor, which --cursor reads.
 *
 * Every field is copied with a bound before it is used (FIELD_MAX; a box
 * at most BBX_JOURNAL_BOX_MAX), numbers are parsed strictly, text is
 * escaped (bb_escape_text) before it reaches a terminal, and the box
 * itself is opened by the reader API from memory (bb_reader_open_mem),
 * which checks it like any file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include <blackbox/reader.h>

#include "extract.h"
#include "groups.h"
#include "journal.h"
#include "journal-fields.h"
#include "symbols.h"

#define FIELD_MAX   (64u << 10) /* bytes of a field kept (but BB_BOX) */
#define SHOW_MAX    (1u << 20)  /* bytes of a field printed (BB_RECORDS ...) */
#define CANDIDATES  64          /* claims told apart (and named) at most */
#define WORD_MAX    15          /* bytes of BB_LIVENESS and BB_SIGNAL_NAME shown: more
				   than the longest liveness word ("orphaned") and
				   signal name (bbx_signal_name()) */
#define SENDER_MAX  256         /* bytes of a sender's name */
#define FILES_MAX   65536       /* journal files of a collector directory read */
#define NOBODY_UID  65534u      /* whose privileges a collector's box gets */

/* ---- fields ------------------------------------------------------------- */

/*
 * The fields read here that no entry of the journal being read has.
 * Looking up a field an entry lacks compares the name of every one of its
 * items, and libsystemd decompresses each compressed item (BB_BOX, up to
 * 128 KiB of it, with a fresh zstd context) to do so: two thirds of a
 * --list's time.  sd_journal_enumerate_fields() reads the files' field
 * objects and decompresses nothing.
 */
static const char *const our_fields[] = {
	"BB_BOOT_ID", "BB_BOX_ATTACHED", "BB_BOX_SIZE", "BB_BUILD_ID", "BB_COMM",
	"BB_CRASH_KIND", "BB_LIVENESS", "BB_PID", "BB_RELEASE", "BB_SIGNAL", "BB_SIGNAL_NAME",
	"BB_STACK", "BB_STACK_KINDS", "BB_STARTTIME", "BB_SUPPRESSED", "BB_UID", "BB_UNIT",
	"MESSAGE", "_HOSTNAME", "_MACHINE_ID", "_TRANSPORT", "_UID", "BB_OOM_KILL",
};
#define NOUR_FIELDS (sizeof(our_fields) / sizeof(our_fields[0]))

static struct {
	const sd_journal *j;
	bool absent[NOUR_FIELDS];
} fields_of;

/* Field names read at most: a file with more (a sender's doing) gets
 * every field looked up. */
#define FIELD_NAMES_MAX 65536

static void learn_fields(sd_journal *j)
{
	const char *f;
	size_t n = 0;
	int r;

	fields_of.j = NULL;
	for (size_t i = 0; i < NOUR_FIELDS; i++)
		fields_of.absent[i] = true;
	sd_journal_restart_fields(j);
	while ((r = sd_journal_enumerate_fields(j, &f)) > 0 && ++n <= FIELD_NAMES_MAX)
		for (size_t i = 0; i < NOUR_FIELDS; i++)
			if (!strcmp(f, our_fields[i]))
				fields_of.absent[i] = false;
	/* an error or too many names: nothing is known to be absent */
	if (r == 0)
		fields_of.j = j;
}

static bool known_absent(const sd_journal *j, const char *field)
{
	if (j != fields_of.j)
		return false;
	for (size_t i = 0; i < NOUR_FIELDS; i++)
		if (!strcmp(field, our_fields[i]))
			return fields_of.absent[i];
	return false;
}

/* A field's value ("" when absent), at most @max bytes, NUL-terminated. */
static size_t get(sd_journal *j, const char *field, char *buf, size_t max)
{
	const void *d;
	size_t l, k = strlen(field);

	buf[0] = '\0';
	if (known_absent(j, field) ||
	    sd_journal_get_data(j, field, &d, &l) < 0 || l <= k || memcmp(d, field, k) ||
	    ((const char *)d)[k] != '=')
		return 0;
	l -= k + 1;
	if (l >= max)
		l = max - 1;
	memcpy(buf, (const char *)d + k + 1, l);
	buf[l] = '\0';
	return l;
}

/* A whole decimal field, or @dflt. */
static long long get_num(sd_journal *j, const char *field, long long dflt)
{
	char buf[32], *end;
	long long v;

	if (!get(j, field, buf, sizeof(buf)) || buf[0] == '-' || buf[0] == '+')
		return dflt;
	errno = 0;
	v = strtoll(buf, &end, 10);
	return errno || end == buf || *end ? dflt : v;
}

/* 32 lowercase hex digits from an id given with or without dashes. */
static bool id128(const char *s, char out[33])
{
	size_t k = 0;

	for (; *s; s++) {
		char c = *s;

		if (c == '-')
			continue;
		if (c >= 'A' && c <= 'F')
			c = (char)(c + 32);
		if (k == 32 || !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		out[k++] = c;
	}
	out[k] = '\0';
	return k == 32;
}

/* Sent by root over the native protocol: journald's word, which no
 * sender can forge on the host that wrote the entry (what --list
 * --untrusted flags; the matches of open_src() are what filters). */
static bool sent_by_root(sd_journal *j, char *uid, size_t uidlen, char *transport,
			 size_t trlen)
{
	get(j, "_UID", uid, uidlen);
	get(j, "_TRANSPORT", transport, trlen);
	return !strcmp(uid, "0") && !strcmp(transport, "journal");
}

/* ---- sources: the local journal, or one sender's files ----------------- */

/* One journal read as a whole. */
struct jsrc {
	char   sender[SENDER_MAX]; /* "" for the local journal */
	char **files;              /* NULL-terminated, NULL for the local journal */
	size_t nfiles;
};

struct jsrcs {
	struct jsrc *v;
	size_t       n;
};

static void srcs_free(struct jsrcs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->v[i].nfiles; k++)
			free(s->v[i].files[k]);
		free(s->v[i].files);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/*
 * The sender of a journal file: its name without ".journal" or
 * ".journal~" and without the suffix a rotation adds ("@" and hex digits
 * and dashes): remote-<host>.journal and remote-<host>@<id>-<n>-<t>.journal
 * are both "remote-<host>".  NULL if @name is no journal file.
 */
static const char *sender_of(const char *name, char *out, size_t len)
{
	size_t n = strlen(name), k;
	const char *at;

	if (n > 9 && !strcmp(name + n - 9, ".journal~"))
		n -= 9;
	else if (n > 8 && !strcmp(name + n - 8, ".journal"))
		n -= 8;
	else
		return NULL;
	at = memchr(name, '@', n);
	for (const char *a = at; a; a = memchr(a + 1, '@', (size_t)(name + n - a - 1))) {
		k = (size_t)(a - name) + 1;
		if (strspn(name + k, "0123456789abcdef-") >= n - k) {
			n = (size_t)(a - name);
			break;
		}
	}
	if (!n || n >= len)
		return NULL;
	memcpy(out, name, n);
	out[n] = '\0';
	return out;
}

static int add_file(struct jsrcs *s, const char *sender, const char *path)
{
	struct jsrc *src = NULL;
	char **nf;

	for (size_t i = 0; i < s->n && !src; i++)
		if (!strcmp(s->v[i].sender, sender))
			src = &s->v[i];
	if (!src) {
		struct jsrc *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		src = &s->v[s->n++];
		memset(src, 0, sizeof(*src));
		snprintf(src->sender, sizeof(src->sender), "%s", sender);
	}
	nf = realloc(src->files, (src->nfiles + 2) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	src->files = nf;
	if (!(src->files[src->nfiles] = strdup(path)))
		return -ENOMEM;
	src->files[++src->nfiles] = NULL;
	return 0;
}

/* The journal files of @dir (and of its subdirectories named by a machine
 * id, as sd_journal_open_directory() reads them), by sender. */
static int scan_dir(struct jsrcs *s, const char *dir, const char *prefix, int depth,
		    size_t *nfiles)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (de = readdir(d))) {
		char path[4096], sender[SENDER_MAX], stem[SENDER_MAX], id[33];
		struct stat st;

		if (de->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode) && depth == 0 && id128(de->d_name, id) &&
		    strlen(de->d_name) == 32) {
			r = scan_dir(s, path, de->d_name, 1, nfiles);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !sender_of(de->d_name, stem, sizeof(stem)) ||
		    snprintf(sender, sizeof(sender), "%s%s%s", prefix, prefix[0] ? "/" : "",
			     stem) >= (int)sizeof(sender))
			continue;
		if (++*nfiles > FILES_MAX) {
			r = -E2BIG;
			break;
		}
		r = add_file(s, sender, path);
	}
	closedir(d);
	return r;
}

static int by_sender(const void *a, const void *b)
{
	return strcmp(((const struct jsrc *)a)->sender, ((const struct jsrc *)b)->sender);
}

static int load_sources(const struct bbx_jsel *sel, struct jsrcs *s, char *err, size_t errlen)
{
	size_t nfiles = 0;
	int r;

	memset(s, 0, sizeof(*s));
	if (!sel->dir) {
		if (!(s->v = calloc(1, sizeof(*s->v))))
			return -ENOMEM;
		s->n = 1;
		return 0;
	}
	r = scan_dir(s, sel->dir, "", 0, &nfiles);
	if (r < 0) {
		srcs_free(s);
		snprintf(err, errlen, "cannot read the journal in %s: %s", sel->dir,
			 r == -E2BIG ? "more than 65536 journal files" : strerror(-r));
		return r;
	}
	if (!s->n) {
		snprintf(err, errlen, "no journal file in %s", sel->dir);
		return -ENOENT;
	}
	qsort(s->v, s->n, sizeof(*s->v), by_sender);
	return 0;
}

/* FIELD=value; both ours (validated), short. */
static int match(sd_journal *j, const char *field, const char *v)
{
	char m[128];
	int n = snprintf(m, sizeof(m), "%s=%s", field, v);

	return sd_journal_add_match(j, m, (size_t)n);
}

/* Check the selection's ids; 0 or -EINVAL (@err set). */
static int check_sel(const struct bbx_jsel *s, char *err, size_t errlen)
{
	char id[33];

	if (s->machine && !id128(s->machine, id)) {
		snprintf(err, errlen, "--machine '%s': not a 128-bit id (32 hex digits)", s->machine);
		return -EINVAL;
	}
	if (s->boot && !id128(s->boot, id)) {
		snprintf(err, errlen, "--boot '%s': not a 128-bit id (32 hex digits)", s->boot);
		return -EINVAL;
	}
	return 0;
}

static void close_src(sd_journal *j)
{
	if (fields_of.j == j)
		fields_of.j = NULL; /* the next journal may get its address */
	sd_journal_close(j);
}

/* Open source @src and add the matches of @s.  0 or -errno (@err set). */
static int open_src(const struct bbx_jsel *s, const struct jsrc *src, sd_journal **jp,
		    char *err, size_t errlen)
{
	char id[33], pid[16];
	sd_journal *j;
	int r;

	r = src->files ? sd_journal_open_files(&j, (const char **)src->files, 0)
		       : sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
	if (r < 0) {
		snprintf(err, errlen, "cannot open the journal%s%s: %s", src->files ? " of " : "",
			 src->files ? src->sender : "", strerror(-r));
		return r;
	}
	r = match(j, "MESSAGE_ID", BB_JOURNAL_MESSAGE_ID);
	if (!r && !s->untrusted)
		r = match(j, "_UID", "0");
	if (!r && !s->untrusted)
		r = match(j, "_TRANSPORT", "journal");
	if (!r && s->pid) {
		snprintf(pid, sizeof(pid), "%ld", (long)s->pid);
		r = match(j, "BB_PID", pid);
	}
	if (!r && s->machine && id128(s->machine, id))
		r = match(j, "_MACHINE_ID", id);
	if (!r && s->boot && id128(s->boot, id))
		r = match(j, "BB_BOOT_ID", id);
	if (r < 0) {
		snprintf(err, errlen, "journal match: %s", strerror(-r));
		close_src(j);
		return r;
	}
	/* nothing here needs a field whole but BB_BOX (threshold 0 then) */
	sd_journal_set_data_threshold(j, FIELD_MAX);
	learn_fields(j);
	*jp = j;
	return 0;
}

/* ---- entries ------------------------------------------------------------ */

/* What an entry says about itself, bounded and escaped for a terminal. */
struct jentry {
	char     host[4 * 64 + 1], machine[33], boot[33], comm[4 * 64 + 1], unit[4 * 256 + 1];
	char     liveness[4 * WORD_MAX + 1], signame[4 * WORD_MAX + 1], time[BBX_TIME_MAX];
	char     uid_raw[16], transport[16]; /* _UID, _TRANSPORT as journald (or the uploader) put them */
	long long pid, uid, starttime, signal, box_size;
	uint64_t usec;
	bool     has_box, trusted, oom; /* oom: BB_OOM_KILL=1, the kernel's OOM killer */
};

static void esc_field(sd_journal *j, const char *field, char *out, size_t outlen, size_t max)
{
	char raw[1024];
	size_t n = get(j, field, raw, max + 1 < sizeof(raw) ? max + 1 : sizeof(raw));

	bb_escape_text(raw, n, out, outlen);
}

static void read_entry(sd_journal *j, struct jentry *e)
{
	char raw[64];
	const void *d;
	size_t l;

	memset(e, 0, sizeof(*e));
	esc_field(j, "_HOSTNAME", e->host, sizeof(e->host), 64);
	if (!get(j, "_MACHINE_ID", raw, sizeof(raw)) || !id128(raw, e->machine))
		strcpy(e->machine, "-");
	if (!get(j, "BB_BOOT_ID", raw, sizeof(raw)) || !id128(raw, e->boot))
		strcpy(e->boot, "-");
	esc_field(j, "BB_COMM", e->comm, sizeof(e->comm), 64);
	esc_field(j, "BB_UNIT", e->unit, sizeof(e->unit), 256);
	esc_field(j, "BB_LIVENESS", e->liveness, sizeof(e->liveness), WORD_MAX);
	/* a death without a word has no crash fields: not looked up */
	if (!strcmp(e->liveness, "crashed"))
		esc_field(j, "BB_SIGNAL_NAME", e->signame, sizeof(e->signame), WORD_MAX);
	else
		e->oom = get_num(j, "BB_OOM_KILL", 0) == 1;
	e->trusted = sent_by_root(j, raw, sizeof(raw), e->transport, sizeof(e->transport));
	bb_escape_text(raw, strnlen(raw, 8), e->uid_raw, sizeof(e->uid_raw));
	e->pid = get_num(j, "BB_PID", -1);
	e->uid = get_num(j, "BB_UID", -1);
	e->starttime = get_num(j, "BB_STARTTIME", -1);
	e->signal = strcmp(e->liveness, "crashed") ? -1 : get_num(j, "BB_SIGNAL", -1);
	e->box_size = get_num(j, "BB_BOX_SIZE", -1);
	if (sd_journal_get_realtime_usec(j, &e->usec) < 0)
		e->usec = 0;
	e->time[bbx_fmt_time(e->time, (int64_t)(e->usec > INT64_MAX / 1000 ? 0 : e->usec * 1000))] =
		'\0';
	/* is BB_BOX there?  bb-reap says so in BB_BOX_ATTACHED; asking for
	 * BB_BOX itself decompresses it whole (the threshold only cuts what
	 * is returned), so only an entry without that field is asked */
	e->has_box = get(j, "BB_BOX_ATTACHED", raw, sizeof(raw)) ? !strcmp(raw, "1")
		   : sd_journal_get_data(j, "BB_BOX", &d, &l) >= 0;
}


/* ---- filters and crash groups ------------------------------------------ */

/* --since, --until, --comm, --unit, --state (--machine and --boot are
 * journal matches, open_src()). */
static bool wanted(const struct bbx_jsel *s, sd_journal *j, const struct jentry *e)
{
	const struct opts *o = s->opt;
	char buf[4 * 256 + 1];

	if (!o)
		return true;
	if ((o->since_us && e->usec < (uint64_t)o->since_us) ||
	    (o->until_us && e->usec > (uint64_t)o->until_us))
		return false;
	if (o->comm && (get(j, "BB_COMM", buf, sizeof(buf)), strcmp(buf, o->comm)))
		return false;
	if (o->unit && (get(j, "BB_UNIT", buf, sizeof(buf)), strcmp(buf, o->unit)))
		return false;
	if (o->state && (get(j, "BB_LIVENESS", buf, sizeof(buf)), strcmp(buf, o->state)))
		return false;
	return true;
}

/* One entry as a group sees it. */
struct gent {
	size_t             src;
	uint64_t           usec;
	char              *cursor;
	struct bbx_sframe *f;
	size_t             nf;
	uint32_t           owner;  /* whose privileges its symbols are parsed with */
	uint8_t            exe[64];/* BB_BUILD_ID */
	size_t             exelen;
	char               comm[64 + 1], host[64 + 1], machine[33], unit[256 + 1];
	char               release[128 + 1], build[2 * 64 + 1], time[BBX_TIME_MAX];
	bool               crashed, has_box;
	int                signal;
	long long          suppressed;
	struct bbx_sig     sig;
	struct jentry      e;      /* what --list prints of it */
};

struct gset {
	struct gent *v;
	size_t       n, cap;
	struct bbx_symcache *cache;
};

static void gset_free(struct gset *g)
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
static int want_symbols(struct gset *gs, const struct gent *g)
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
static int take_gent(const struct bbx_jsel *s, size_t src, sd_journal *j,
		     const struct jentry *e, struct gent *g)
{
	char *stack = malloc(FIELD_MAX), kinds[BB_CRASH_MAX_FRAMES + 1], kind[16];
	size_t n;
	int r;

	memset(g, 0, sizeof(*g));
	if (!stack)
		return -ENOMEM;
	g->src = src;
	g->e = *e;
	g->usec = e->usec;
	memcpy(g->time, e->time, sizeof(g->time));
	g->crashed = !strcmp(e->liveness, "crashed");
	g->has_box = e->has_box;
	/* a death without a word: whether the OOM killer did it */
	g->signal = e->signal > 0 && e->signal < 1024 ? (int)e->signal : e->oom;
	g->owner = s->dir || !e->trusted || e->uid < 0 || e->uid > UINT32_MAX
		   ? NOBODY_UID : (uint32_t)e->uid;
	get(j, "BB_COMM", g->comm, sizeof(g->comm));
	get(j, "_HOSTNAME", g->host, sizeof(g->host));
	snprintf(g->machine, sizeof(g->machine), "%s", e->machine);
	get(j, "BB_UNIT", g->unit, sizeof(g->unit));
	get(j, "BB_RELEASE", g->release, sizeof(g->release));
	get(j, "BB_BUILD_ID", g->build, sizeof(g->build));
	g->exelen = bbx_unhex(g->build, strlen(g->build), g->exe, sizeof(g->exe));
	g->suppressed = get_num(j, "BB_SUPPRESSED", 0);
	if (sd_journal_get_cursor(j, &g->cursor) < 0) {
		free(stack);
		return -ENOMEM;
	}
	n = 0;
	if (g->crashed) {
		n = get(j, "BB_STACK", stack, FIELD_MAX);
		kinds[0] = kind[0] = '\0';
		if (n)
			get(j, "BB_STACK_KINDS", kinds, sizeof(kinds));
		if (n)
			get(j, "BB_CRASH_KIND", kind, sizeof(kind));
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
static int collect(const struct bbx_jsel *s, const struct jsrcs *srcs, struct gset *gs,
		   char *err, size_t errlen)
{
	struct bbx_frame *fr = calloc(BB_CRASH_MAX_FRAMES, sizeof(*fr));
	struct jentry e;
	int r = 0;

	memset(gs, 0, sizeof(*gs));
	if (!fr || !(gs->cache = bbx_symcache_new())) {
		free(fr);
		snprintf(err, errlen, "out of memory");
		return EXIT_FAILURE_;
	}
	for (size_t i = 0; i < srcs->n && !r; i++) {
		sd_journal *j;

		if (open_src(s, &srcs->v[i], &j, err, errlen) < 0) {
			if (!s->dir) {
				free(fr);
				return EXIT_NOBOX;
			}
			bbx_msg(NULL, "%s", err);
			err[0] = '\0';
			continue;
		}
		SD_JOURNAL_FOREACH(j) {
			read_entry(j, &e);
			if (!wanted(s, j, &e))
				continue;
			if (gs->n == gs->cap) {
				size_t cap = gs->cap ? 2 * gs->cap : 64;
				struct gent *v = realloc(gs->v, cap * sizeof(*v));

				if (!v) {
					r = -ENOMEM;
					break;
				}
				gs->v = v;
				gs->cap = cap;
			}
			r = take_gent(s, i, j, &e, &gs->v[gs->n]);
			if (r < 0)
				break;
			gs->n++;
			if ((r = want_symbols(gs, &gs->v[gs->n - 1])) < 0)
				break;
		}
		close_src(j);
	}
	if (!r && s->opt && !s->opt->no_symbols) {
		struct bbx_sym_opts so;
		char note[2048] = "";

		bbx_sym_opts_init(s->opt, NOBODY_UID, &so);
		r = bbx_symcache_resolve(gs->cache, &so, note, sizeof(note));
		/* --list shows groups, not frames: why a module has no names is
		 * for --groups and --group to say */
		if (note[0] && !s->opt->quiet && (s->opt->groups || s->opt->group))
			bbx_msg("journal", "symbols: %s", note);
	}
	for (size_t k = 0; k < gs->n && !r; k++) {
		struct gent *g = &gs->v[k];

		bbx_symcache_frames(gs->cache, g->f, g->nf, g->owner, fr);
		bbx_signature(fr, g->nf, g->crashed, g->exe, g->exelen, g->comm, g->signal, &g->sig);
	}
	free(fr);
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return EXIT_FAILURE_;
	}
	return 0;
}

/* --group ID: 16 hex digits. */
static bool group_ok(const char *id)
{
	return strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16;
}

static bool in_group(const struct bbx_jsel *s, const struct gent *g)
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

static void put_esc(struct bbx_out *o, const char *s)
{
	bbx_put_escaped(o, s, strlen(s));
}

static void group_text(struct bbx_out *o, const struct gset *gs, const struct group *gr)
{
	const struct gent *first = &gs->v[gr->idx[0]], *last = &gs->v[gr->idx[gr->n - 1]];
	struct tally hosts = { 0 }, builds = { 0 }, units = { 0 };
	char line[512];

	for (size_t i = 0; i < gr->n; i++) {
		const struct gent *g = &gs->v[gr->idx[i]];

		tally(&hosts, g->machine, g->host);
		tally(&builds, g->build, g->release);
		tally(&units, g->unit, NULL);
	}
	snprintf(line, sizeof(line), "%s %7zu %6zu%s  %-30s %-30s %-9s ", last->sig.id, gr->n,
		 hosts.n, hosts.more ? "+" : " ", first->time, last->time,
		 last->crashed ? "crashed" : last->e.oom ? "oom-kill" : "orphaned");
	bbx_out_str(o, line);
	put_esc(o, last->comm[0] ? last->comm : "-");
	bbx_out_char(o, '\n');
	bbx_out_str(o, "    frames: ");
	put_esc(o, last->sig.top[0] ? last->sig.top : last->e.oom
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
			put_esc(o, builds.extra[i]);
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
		put_esc(o, units.v[i]);
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

static void group_struct(struct bbx_em *em, const struct gset *gs, const struct group *gr,
			 const struct jsrcs *srcs)
{
	const struct gent *first = &gs->v[gr->idx[0]], *last = &gs->v[gr->idx[gr->n - 1]];
	const struct gent *boxed = NULL;
	struct tally hosts = { 0 }, builds = { 0 }, units = { 0 };

	for (size_t i = 0; i < gr->n; i++) {
		const struct gent *g = &gs->v[gr->idx[i]];

		tally(&hosts, g->machine, g->host);
		tally(&builds, g->build, g->release);
		tally(&units, g->unit, NULL);
		if (g->has_box)
			boxed = g;
	}
	bbx_em_map(em);
	bbx_em_kv_str(em, "group", last->sig.id);
	bbx_em_kv_str(em, "kind", kind_name(last->sig.kind));
	bbx_em_kv_str(em, "liveness", last->crashed ? "crashed" : "orphaned");
	if (!last->crashed) {
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

static const struct gset *sort_gs;

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

static int print_groups(const struct bbx_jsel *s, const struct jsrcs *srcs,
			const struct gset *gs, struct bbx_out *out, struct bbx_em *em, bool text)
{
	size_t *idx = malloc((gs->n + 1) * sizeof(*idx)), n = 0, ng = 0;
	struct group *grs = calloc(gs->n + 1, sizeof(*grs));

	if (!idx || !grs) {
		free(idx);
		free(grs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < gs->n; i++)
		if (in_group(s, &gs->v[i]))
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

/* ---- --list ------------------------------------------------------------- */

static void list_text(struct bbx_out *o, const struct jentry *e, const char *sender,
		      const char *group)
{
	char line[4096], st[sizeof(e->liveness) + sizeof(e->signame) + 4], box[32], uid[24];
	char who[4 * SENDER_MAX + 2] = "", trust[128] = "";

	if (e->signal > 0 && e->signame[0])
		snprintf(st, sizeof(st), "%s (%s)", e->liveness, e->signame);
	else if (e->oom)
		snprintf(st, sizeof(st), "%s (OOM)", e->liveness);
	else
		snprintf(st, sizeof(st), "%s", e->liveness[0] ? e->liveness : "?");
	if (e->has_box && e->box_size >= 0)
		snprintf(box, sizeof(box), "%lld", e->box_size);
	else
		snprintf(box, sizeof(box), "not shipped");
	if (e->uid >= 0)
		snprintf(uid, sizeof(uid), "%lld", e->uid);
	else
		snprintf(uid, sizeof(uid), "-");
	if (sender[0]) {
		size_t n = bb_escape_text(sender, strlen(sender), who, sizeof(who) - 1);

		snprintf(who + n, sizeof(who) - n, "%*s", n < 24 ? (int)(24 - n) : 1, "");
	}
	if (!e->trusted)
		snprintf(trust, sizeof(trust), " [not bb-reap's: sent by uid %s over %s]",
			 e->uid_raw[0] ? e->uid_raw : "?", e->transport[0] ? e->transport : "?");
	snprintf(line, sizeof(line), "%s%-30s %-16s %-8lld %-6s %-16s %-18s %-12s %-16s %.8s %.8s "
		 "%s%s\n", who, e->time, e->host[0] ? e->host : "-", e->pid, uid,
		 e->comm[0] ? e->comm : "-", st, box, group, e->machine, e->boot,
		 e->unit[0] ? e->unit : "-", trust);
	bbx_out_str(o, line);
}

static void list_struct(struct bbx_em *em, sd_journal *j, const struct jentry *e,
			const char *sender, const struct gent *g)
{
	char raw[4096], *cursor = NULL;
	size_t n;

	bbx_em_map(em);
	bbx_em_kv_str(em, "time", e->time);
	if (sender[0])
		bbx_em_kv_str(em, "sender", sender);
	n = get(j, "_HOSTNAME", raw, 256);
	bbx_em_key(em, "host");
	bbx_em_str(em, raw, n);
	bbx_em_kv_str(em, "machine_id", e->machine);
	bbx_em_kv_str(em, "boot_id", e->boot);
	bbx_em_kv_i64(em, "pid", e->pid);
	n = get(j, "BB_COMM", raw, 256);
	bbx_em_key(em, "comm");
	bbx_em_str(em, raw, n);
	bbx_em_kv_i64(em, "uid", e->uid);
	bbx_em_kv_i64(em, "starttime", e->starttime);
	n = get(j, "BB_LIVENESS", raw, 32);
	bbx_em_key(em, "liveness");
	bbx_em_str(em, raw, n);
	if (e->signal > 0) {
		bbx_em_kv_i64(em, "signal", e->signal);
		n = get(j, "BB_SIGNAL_NAME", raw, 32);
		if (n) {
			bbx_em_key(em, "signal_name");
			bbx_em_str(em, raw, n);
		}
	}
	n = get(j, "BB_UNIT", raw, 256);
	if (n) {
		bbx_em_key(em, "unit");
		bbx_em_str(em, raw, n);
	}
	bbx_em_kv_i64(em, "box_size", e->box_size);
	bbx_em_key(em, "box");
	bbx_em_bool(em, e->has_box);
	bbx_em_key(em, "trusted");
	bbx_em_bool(em, e->trusted);
	if (e->oom) {
		bbx_em_key(em, "oom_kill");
		bbx_em_bool(em, true);
	}
	if (g) {
		bbx_em_kv_str(em, "group", g->sig.id);
		bbx_em_kv_str(em, "top_frames", g->sig.top);
	}
	if (sd_journal_get_cursor(j, &cursor) >= 0) {
		bbx_em_kv_str(em, "cursor", cursor);
		free(cursor);
	}
	n = get(j, "MESSAGE", raw, sizeof(raw));
	bbx_em_key(em, "message");
	bbx_em_str(em, raw, n);
	bbx_em_end(em);
	bbx_em_eol(em);
}

int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen)
{
	struct jsrcs srcs;
	struct gset gs;
	struct jentry e;
	size_t k = 0;
	int r, code;

	if (check_sel(s, err, errlen) < 0)
		return EXIT_USAGE;
	if (s->opt && s->opt->group && !group_ok(s->opt->group)) {
		snprintf(err, errlen, "--group '%s': not a group (16 hex digits, as --groups "
			 "shows)", s->opt->group);
		return EXIT_USAGE;
	}
	r = load_sources(s, &srcs, err, errlen);
	if (r < 0)
		return r == -ENOMEM ? EXIT_FAILURE_ : EXIT_NOBOX;
	code = collect(s, &srcs, &gs, err, errlen);
	if (code)
		goto out;
	if (s->opt && s->opt->groups) {
		if (print_groups(s, &srcs, &gs, out, em, text) < 0) {
			snprintf(err, errlen, "out of memory");
			code = EXIT_FAILURE_;
		}
		goto out;
	}
	if (text)
		bbx_out_str(out, s->dir ? "SENDER                  TIME                           "
				 : "TIME                           ");
	if (text)
		bbx_out_str(out, "HOST             PID      UID    COMM             LIVENESS"
			    "           BOX          GROUP            MACHINE  BOOT     UNIT\n");
	/* text: what was read; JSON and CBOR read more of each entry: the
	 * same entries again, in the same order, each with its group */
	for (size_t i = 0; text && i < gs.n && !out->err; i++)
		if (in_group(s, &gs.v[i]))
			list_text(out, &gs.v[i].e, srcs.v[gs.v[i].src].sender, gs.v[i].sig.id);
	for (size_t i = 0; !text && i < srcs.n && !out->err; i++) {
		sd_journal *j;

		if (open_src(s, &srcs.v[i], &j, err, errlen) < 0) {
			if (!s->dir)
				break;
			bbx_msg(NULL, "%s", err); /* one sender's files: the others are read */
			err[0] = '\0';
			continue;
		}
		SD_JOURNAL_FOREACH(j) {
			const struct gent *g = NULL;

			if (k < gs.n && gs.v[k].src == i &&
			    sd_journal_test_cursor(j, gs.v[k].cursor) > 0) {
				g = &gs.v[k++];
				e = g->e;
			} else {
				/* an entry that came in since: no group */
				read_entry(j, &e);
				if (!wanted(s, j, &e))
					continue;
			}
			if (s->opt && s->opt->group && (!g || !in_group(s, g)))
				continue;
			list_struct(em, j, &e, srcs.v[i].sender, g);
			if (out->err)
				break;
		}
		close_src(j);
	}
	code = err[0] ? EXIT_NOBOX : EXIT_CLEAN;
out:
	gset_free(&gs);
	srcs_free(&srcs);
	return code;
}

/* ---- one box ------------------------------------------------------------ */

/*
 * An entry without its box: every MESSAGE and BB_* field it has (text:
 * "FIELD=value", each line of a value escaped; JSON/CBOR: one object), so
 * that what was shipped is still read.
 */
static void entry_frames(const struct bbx_jsel *s, sd_journal *j, const struct jentry *e,
			 struct bbx_out *o, struct bbx_em *em, bool text);

static void show_fields(const struct bbx_jsel *s, sd_journal *j, const struct jentry *e,
			struct bbx_out *o, struct bbx_em *em, bool text)
{
	const void *d;
	size_t l;

	sd_journal_set_data_threshold(j, SHOW_MAX);
	if (!text) {
		bbx_em_map(em);
		bbx_em_key(em, "journal_entry");
		bbx_em_map(em);
	}
	SD_JOURNAL_FOREACH_DATA(j, d, l) {
		const char *p = d, *eq = memchr(p, '=', l < 64 ? l : 64);
		size_t k;

		if (!eq || !((eq - p == 7 && !memcmp(p, "MESSAGE", 7)) ||
			     (eq - p > 3 && !memcmp(p, "BB_", 3)) ||
			     (eq - p == 9 && !memcmp(p, "_HOSTNAME", 9)) ||
			     (eq - p == 11 && !memcmp(p, "_MACHINE_ID", 11))))
			continue;
		k = (size_t)(eq - p);
		/* a name is [A-Z0-9_] in any journal journald or journal-remote
		 * wrote; a file made by other means is not trusted to be so */
		if (strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") < k)
			continue;
		if (l > SHOW_MAX)
			l = SHOW_MAX;
		if (!text) {
			char key[64];

			memcpy(key, p, k);
			key[k] = '\0';
			/* field names are [A-Z0-9_] (the journal's rule) */
			bbx_em_key(em, key);
			bbx_em_str(em, eq + 1, l - k - 1);
			continue;
		}
		bbx_out_put(o, p, k + 1);
		for (const char *v = eq + 1, *end = p + l; v < end;) {
			const char *nl = memchr(v, '\n', (size_t)(end - v));
			size_t n = (size_t)((nl ? nl : end) - v);

			bbx_out_commit(o, bb_escape_text(v, n, bbx_out_reserve(o, 4 * n + 1),
							 4 * n + 1));
			bbx_out_char(o, '\n');
			v += n + 1;
			if (nl && v < end)
				bbx_out_str(o, "    ");
		}
	}
	if (!text)
		bbx_em_end(em);
	entry_frames(s, j, e, o, em, text);
	if (!text) {
		bbx_em_end(em);
		bbx_em_eol(em);
	}
}

/*
 * An entry without its box: its BB_STACK symbolised (as the entry proves
 * the owner: nobody on a collector) and its group.  Text: after the
 * fields; JSON / CBOR: "frames", "group" and "top_frames" beside
 * "journal_entry".
 */
static void entry_frames(const struct bbx_jsel *s, sd_journal *j, const struct jentry *e,
			 struct bbx_out *o, struct bbx_em *em, bool text)
{
	struct bbx_symcache *cache = bbx_symcache_new();
	struct bb_crash *cr = calloc(1, sizeof(*cr));
	struct bbx_frame *fr = calloc(BB_CRASH_MAX_FRAMES, sizeof(*fr));
	char note[2048] = "", line[256];
	struct gent g;
	int r = -ENOMEM;

	sd_journal_set_data_threshold(j, FIELD_MAX);
	if (!cache || !cr || !fr || (r = take_gent(s, 0, j, e, &g)) < 0)
		goto out;
	for (size_t i = 0; i < g.nf && !r; i++)
		r = bbx_symcache_add(cache, &g.f[i], g.owner);
	if (!r && s->opt && !s->opt->no_symbols) {
		struct bbx_sym_opts so;

		bbx_sym_opts_init(s->opt, g.owner, &so);
		r = bbx_symcache_resolve(cache, &so, note, sizeof(note));
	}
	if (!r) {
		bbx_symcache_frames(cache, g.f, g.nf, g.owner, fr);
		bbx_signature(fr, g.nf, g.crashed, g.exe, g.exelen, g.comm, g.signal, &g.sig);
		cr->nframes = (uint32_t)g.nf;
		for (size_t i = 0; i < g.nf; i++) {
			cr->frames[i] = g.f[i].addr;
			cr->frame_flags[i] = g.f[i].flags;
		}
		if (text) {
			if (g.nf) {
				bbx_out_str(o, "*** the crash stack of the entry (BB_STACK):\n");
				bbx_crash_frames_text(o, cr, fr, s->opt && s->opt->raw_names);
			}
			snprintf(line, sizeof(line), "*** group %s: ", g.sig.id);
			bbx_out_str(o, line);
			put_esc(o, g.sig.top[0] ? g.sig.top : "-");
			bbx_out_char(o, '\n');
			if (note[0] && !(s->opt && s->opt->quiet))
				bbx_msg("journal", "symbols: %s", note);
		} else {
			bbx_em_key(em, "frames");
			bbx_em_array(em);
			for (size_t i = 0; i < g.nf; i++)
				bbx_frame_struct(em, &fr[i], s->opt && s->opt->raw_names);
			bbx_em_end(em);
			bbx_em_kv_str(em, "group", g.sig.id);
			bbx_em_kv_str(em, "top_frames", g.sig.top);
			if (note[0])
				bbx_em_kv_str(em, "symbols_note", note);
		}
	}
	free(g.cursor);
	bbx_stack_free(g.f, g.nf);
out:
	if (r < 0)
		bbx_msg("journal", "the entry's stack: %s", strerror(-r));
	bbx_symcache_free(cache);
	free(cr);
	free(fr);
}

/*
 * One claim on a pid: what entries agree on (sender, machine, boot, owner,
 * start time), with its newest entry; entries come oldest first.
 */
struct claim {
	size_t        src;
	struct jentry e;
	char         *cursor; /* of its newest entry */
	size_t        entries;
};

static bool same_claim(const struct claim *c, size_t src, const struct jentry *e)
{
	return c->src == src && !strcmp(c->e.machine, e->machine) && !strcmp(c->e.boot, e->boot) &&
	       c->e.uid == e->uid && c->e.starttime == e->starttime;
}

struct lookup {
	struct claim v[CANDIDATES];
	size_t       n, more;     /* claims kept, and claims beyond those */
	size_t       entries;
};

static int add_claim(struct lookup *l, size_t src, sd_journal *j, const struct jentry *e)
{
	struct claim *c = NULL;
	char *cursor;

	l->entries++;
	for (size_t i = 0; i < l->n && !c; i++)
		if (same_claim(&l->v[i], src, e))
			c = &l->v[i];
	if (!c) {
		if (l->n == CANDIDATES) {
			l->more++;
			return 0;
		}
		c = &l->v[l->n++];
		memset(c, 0, sizeof(*c));
		c->src = src;
	}
	if (sd_journal_get_cursor(j, &cursor) < 0)
		return -ENOMEM;
	free(c->cursor);
	c->cursor = cursor;
	c->e = *e;
	c->entries++;
	return 0;
}

/* Why the claims of @l cannot be told apart, or NULL: one claim. */
static const char *conflict(const struct lookup *l)
{
	if (l->n + l->more <= 1)
		return NULL;
	for (size_t i = 1; i < l->n; i++)
		if (strcmp(l->v[i].e.machine, l->v[0].e.machine) ||
		    strcmp(l->v[i].e.boot, l->v[0].e.boot))
			return "entries of several machines or boots (choose with --machine, "
			       "--boot, or one entry with --cursor)";
	for (size_t i = 1; i < l->n; i++)
		if (l->v[i].src != l->v[0].src)
			return "entries from several senders claim one machine, boot and pid "
			       "(a host can upload any fields): none chosen, read one with "
			       "--cursor";
	return "entries disagree on the owner or the start time of the process: none "
	       "chosen, read one with --cursor";
}

/* Each claim on a line of its own (a cursor is long). */
static void name_claims(const struct lookup *l, const struct jsrcs *srcs)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct claim *c = &l->v[i];
		const char *sender = srcs->v[c->src].sender;

		bbx_msg("journal", "%s%s%shost %s machine %s boot %s uid %lld start time %lld: "
			"%zu entr%s, the newest at %s: --cursor '%s'", sender[0] ? "sender " : "",
			sender, sender[0] ? " " : "", c->e.host[0] ? c->e.host : "-",
			c->e.machine, c->e.boot, c->e.uid, c->e.starttime, c->entries,
			c->entries == 1 ? "y" : "ies", c->e.time, c->cursor ? c->cursor : "?");
	}
	if (l->more)
		bbx_msg("journal", "and %zu more claims", l->more);
}

/* Find the claims on @s->pid (or the entry of @s->cursor) in every source. */
static int find_claims(const struct bbx_jsel *s, const struct jsrcs *srcs, struct lookup *l,
		       char *err, size_t errlen)
{
	struct jentry e;

	for (size_t i = 0; i < srcs->n; i++) {
		sd_journal *j;
		int r = open_src(s, &srcs->v[i], &j, err, errlen);

		if (r < 0) {
			if (!s->dir)
				return r;
			bbx_msg(NULL, "%s", err);
			err[0] = '\0';
			continue;
		}
		SD_JOURNAL_FOREACH(j) {
			read_entry(j, &e);
			if (s->pid && e.pid != s->pid)
				continue;
			if (s->cursor && sd_journal_test_cursor(j, s->cursor) <= 0)
				continue;
			r = add_claim(l, i, j, &e);
			if (r < 0) {
				close_src(j);
				snprintf(err, errlen, "out of memory");
				return r;
			}
		}
		close_src(j);
	}
	return 0;
}

/* The box of the chosen entry into *@box, or what it carries shown.
 * Returns BBX_J_BOX or an exit code (@err set). */
static int take_box(const struct bbx_jsel *s, const struct jsrc *src, const struct claim *c,
		    struct bbx_out *out, struct bbx_em *em, bool text, void **box,
		    size_t *len, const char *label, char *err, size_t errlen)
{
	const void *d;
	sd_journal *j;
	size_t l;
	int r, code;

	if (open_src(s, src, &j, err, errlen) < 0)
		return EXIT_NOBOX;
	if (sd_journal_seek_cursor(j, c->cursor) < 0 || sd_journal_next(j) <= 0 ||
	    sd_journal_test_cursor(j, c->cursor) <= 0) {
		snprintf(err, errlen, "%s: the entry went away while being read", label);
		code = EXIT_NOBOX;
		goto out;
	}
	if (!c->e.has_box) {
		show_fields(s, j, &c->e, out, em, text);
		snprintf(err, errlen, "%s: the box itself was not shipped (bb-reap --journal=summary, "
			 "a box not root's without --journal-content=all, or over its "
			 "--journal-box-max or --journal-box-budget): its fields are shown above",
			 label);
		code = EXIT_NOBOX;
		goto out;
	}
	sd_journal_set_data_threshold(j, 0);
	r = sd_journal_get_data(j, "BB_BOX", &d, &l);
	if (r < 0 || l < 7) {
		snprintf(err, errlen, "%s: BB_BOX: %s", label, strerror(r < 0 ? -r : EBADMSG));
		code = EXIT_NOBOX;
		goto out;
	}
	if (l - 7 > BBX_JOURNAL_BOX_MAX) {
		snprintf(err, errlen, "%s: BB_BOX of %zu bytes is larger than %zu: refused",
			 label, l - 7, BBX_JOURNAL_BOX_MAX);
		code = EXIT_NOBOX;
		goto out;
	}
	*box = malloc(l - 7 ? l - 7 : 1);
	if (!*box) {
		snprintf(err, errlen, "out of memory");
		code = EXIT_FAILURE_;
		goto out;
	}
	memcpy(*box, (const char *)d + 7, l - 7);
	*len = l - 7;
	code = BBX_J_BOX;
	err[0] = '\0';
out:
	close_src(j);
	return code;
}

int bbx_journal_box(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		    bool text, struct bbx_jbox *jb, char *err, size_t errlen)
{
	struct lookup *l = calloc(1, sizeof(*l));
	struct jsrcs srcs = { NULL, 0 };
	const struct claim *c;
	const char *why;
	int code, r;

	memset(jb, 0, sizeof(*jb));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return EXIT_FAILURE_;
	}
	if (check_sel(s, err, errlen) < 0) {
		code = EXIT_USAGE;
		goto out;
	}
	r = load_sources(s, &srcs, err, errlen);
	if (!r)
		r = find_claims(s, &srcs, l, err, errlen);
	if (r < 0) {
		code = r == -ENOMEM ? EXIT_FAILURE_ : EXIT_NOBOX;
		goto out;
	}
	if (!l->n) {
		if (s->cursor)
			snprintf(err, errlen, "no entry of bb-reap's with that cursor%s%s",
				 s->dir ? " in " : "", s->dir ? s->dir : "");
		else
			snprintf(err, errlen, "no box of pid %ld in the journal%s%s%s", (long)s->pid,
				 s->dir ? " in " : "", s->dir ? s->dir : "",
				 s->machine || s->boot ? " for that machine and boot" : "");
		code = EXIT_NOBOX;
		goto out;
	}
	if ((why = conflict(l))) {
		/* the reason first, then each claim on a line of its own */
		bbx_msg(NULL, "pid %ld: %s", (long)s->pid, why);
		name_claims(l, &srcs);
		code = EXIT_AMBIGUOUS;
		goto out;
	}
	c = &l->v[0];
	snprintf(jb->sender, sizeof(jb->sender), "%s", srcs.v[c->src].sender);
	if (jb->sender[0])
		snprintf(jb->label, sizeof(jb->label), "journal %s: %s pid %lld", jb->sender,
			 c->e.host[0] ? c->e.host : "-", c->e.pid);
	else
		snprintf(jb->label, sizeof(jb->label), "journal: %s pid %lld",
			 c->e.host[0] ? c->e.host : "-", c->e.pid);
	jb->uid = c->e.uid;
	code = take_box(s, &srcs.v[c->src], c, out, em, text, &jb->box, &jb->len, jb->label,
			err, errlen);
out:
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].cursor);
	free(l);
	srcs_free(&srcs);
	return code;
}

/* ---- bb-extract --journal ----------------------------------------------- */

/*
 * Whose box it is, as far as the entry proves: the owner the symbols are
 * parsed as, and how the report qualifies the header's uid.  Returns
 * false when the box contradicts its entry (refused).
 */
static bool entry_owner(const struct bbx_jbox *jb, const struct bb_box_info *in,
			struct opts *eo, char *proof, size_t prooflen, char *err, size_t errlen)
{
	if (jb->uid < 0 || jb->uid > UINT32_MAX || (uint32_t)jb->uid != in->uid) {
		snprintf(err, errlen, "%s: the box's header names uid %u, its entry BB_UID %lld: "
			 "refused", jb->label, in->uid, jb->uid);
		return false;
	}
	eo->entry = true;
	if (jb->sender[0]) {
		/* every field of it is the sender's word */
		eo->entry_owner = NOBODY_UID;
		snprintf(proof, prooflen, "as uploaded by %s: not proven; symbols as uid %u",
			 jb->sender, NOBODY_UID);
	} else {
		eo->entry_owner = in->uid;
		snprintf(proof, prooflen, "journal entry, trusted");
	}
	eo->entry_proof = proof;
	return true;
}

/*
 * --group ID alone: the cursor of the newest entry of the group that has
 * its box (or of the newest entry when none has), into *@cursor.  Returns
 * 0 or an exit code (@err set).
 */
static int newest_of_group(const struct bbx_jsel *s, char **cursor, char *err, size_t errlen)
{
	const struct gent *best = NULL;
	struct jsrcs srcs;
	struct gset gs;
	int code;

	if (!group_ok(s->opt->group)) {
		snprintf(err, errlen, "--group '%s': not a group (16 hex digits, as --groups "
			 "shows)", s->opt->group);
		return EXIT_USAGE;
	}
	if (check_sel(s, err, errlen) < 0)
		return EXIT_USAGE;
	code = load_sources(s, &srcs, err, errlen);
	if (code < 0)
		return code == -ENOMEM ? EXIT_FAILURE_ : EXIT_NOBOX;
	code = collect(s, &srcs, &gs, err, errlen);
	for (size_t i = 0; i < gs.n && !code; i++) {
		const struct gent *g = &gs.v[i];

		if (!in_group(s, g))
			continue;
		/* a box beats none; then the newest */
		if (!best || (g->has_box && !best->has_box) ||
		    (g->has_box == best->has_box && g->usec >= best->usec))
			best = g;
	}
	if (!code && !best) {
		snprintf(err, errlen, "no entry of group %s%s%s", s->opt->group,
			 s->dir ? " in " : "", s->dir ? s->dir : "");
		code = EXIT_NOBOX;
	}
	if (!code && !(*cursor = strdup(best->cursor))) {
		snprintf(err, errlen, "out of memory");
		code = EXIT_FAILURE_;
	}
	gset_free(&gs);
	srcs_free(&srcs);
	return code;
}

/*
 * --journal, --journal-directory: --list the entries, or take PID's box out
 * of its entry and extract it exactly as a file (the reader API checks the
 * bytes as it checks any box): same output, same exit status.
 */
int bbx_journal_main(const struct opts *o)
{
	struct bbx_jsel sel = { .dir = o->journal_dir, .pid = o->pid, .machine = o->machine,
				.boot = o->boot, .cursor = o->cursor, .untrusted = o->untrusted,
				.opt = o };
	char *chosen = NULL;
	char err[8192] = "", proof[SENDER_MAX + 96];
	struct bb_reader *r = NULL;
	struct bbx_jbox jb = { 0 };
	struct bbx_out out;
	struct bbx_em em;
	int code;

	if (bbx_out_open(&out, STDOUT_FILENO, o->uring) < 0) {
		bbx_msg(NULL, "out of memory");
		return EXIT_FAILURE_;
	}
	bbx_em_init(&em, &out, o->fmt == FMT_CBOR);
	if (o->list || o->groups) {
		code = bbx_journal_list(&sel, &out, &em, o->fmt == FMT_TEXT, err, sizeof(err));
	} else {
		code = o->group ? newest_of_group(&sel, &chosen, err, sizeof(err)) : 0;
		sel.cursor = chosen ? chosen : sel.cursor;
		if (!code)
			code = bbx_journal_box(&sel, &out, &em, o->fmt == FMT_TEXT, &jb, err,
					       sizeof(err));
		free(chosen);
	}
	if (code == BBX_J_BOX) {
		int ret = bb_reader_open_mem(jb.box, jb.len, 0, &r, err, sizeof(err));
		struct opts eo = *o;

		free(jb.box);
		if (ret < 0) {
			bbx_msg(jb.label, "%s", err);
			code = ret == -ENOMEM ? EXIT_FAILURE_ : EXIT_NOBOX;
		} else if (!entry_owner(&jb, bb_reader_info(r), &eo, proof, sizeof(proof), err,
					sizeof(err))) {
			code = EXIT_NOBOX;
			bbx_msg(NULL, "%s", err);
		} else if (o->save) {
			code = bbx_save(&eo, r);
		} else {
			code = bbx_extract(&eo, &out, r, bb_reader_liveness(r), false);
		}
		bb_reader_close(r);
		err[0] = '\0';
	}
	if (bbx_out_close(&out) < 0) {
		if (out.err != -EPIPE)
			bbx_msg("standard output", "%s", strerror(-out.err));
		return EXIT_FAILURE_;
	}
	if (err[0])
		bbx_msg(NULL, "%s", err);
	return code;
}
