/* SPDX-License-Identifier: MIT */
/*
 * journal-read.c - bb-extract --journal / --journal-directory: reading the
 * journal (its fields, its sources, its entries) for the boxes that
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
 *    _TRANSPORT=journal (bbx_j_open()) are the one rule that lets an entry
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
 * Every field is copied with a bound before it is used (BBX_J_FIELD_MAX; a box
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

#include "../shared/grow.h"
#include "extract.h"
#include "journal-read.h"
#include "journal-fields.h"

#define FILES_MAX   65536       /* journal files of a collector directory read */

/* ---- fields ------------------------------------------------------------- */

/*
 * The fields read here, each entry's read in one pass.  Looking a field up
 * (sd_journal_get_data()) walks the entry's items and, for each
 * compressed one (BB_BOX, BB_RECORDS, BB_STATE_JSON), decompresses its
 * start with a fresh zstd context to compare the name: done for each of
 * the ~25 fields an entry is read for, that was most of a --groups' time.
 * bbx_j_read_entry() enumerates the items once instead, with a small data
 * threshold (a compressed item is decompressed that far only), and keeps
 * the values of these fields; bbx_j_get() answers from them, and looks up
 * only a value that was cut by the threshold and is wanted longer.
 */
static const char *const our_fields[] = {
	BBJ_BOOT_ID, BBJ_BOX_ATTACHED, BBJ_BOX_SIZE, BBJ_BUILD_ID, BBJ_COMM,
	BBJ_CRASH_KIND, BBJ_CRASH_REASON, BBJ_LIVENESS, BBJ_PID, BBJ_RELEASE, BBJ_SIGNAL,
	BBJ_SIGNAL_NAME, BBJ_STACK, BBJ_STACK_KINDS, BBJ_STARTTIME, BBJ_SUPPRESSED, BBJ_UID,
	BBJ_UNIT, BBJ_OOM_KILL, BBJ_BOX, BBJ_BUDGET_REMOVED, "MESSAGE", "_HOSTNAME",
	"_MACHINE_ID", "_TRANSPORT", "_UID",
};
#define NOUR_FIELDS (sizeof(our_fields) / sizeof(our_fields[0]))
#define ENTRY_THRESHOLD 2048 /* bytes of a value the one pass keeps */

/* The entry read last, by its journal and where it is (the journal's
 * timestamps and boot: what tells entries of one journal apart cheaply). */
static struct {
	const sd_journal *j;
	bool        valid;
	uint64_t    rt, mono;
	sd_id128_t  boot;
	bool        present[NOUR_FIELDS], cut[NOUR_FIELDS];
	uint16_t    len[NOUR_FIELDS];
	char        v[NOUR_FIELDS][ENTRY_THRESHOLD];
} cur;

static int field_index(const char *name, size_t k)
{
	static size_t len[NOUR_FIELDS];

	if (!len[0])
		for (size_t i = 0; i < NOUR_FIELDS; i++)
			len[i] = strlen(our_fields[i]);
	/* an entry's every item is looked up here: the length first */
	for (size_t i = 0; i < NOUR_FIELDS; i++)
		if (len[i] == k && !memcmp(our_fields[i], name, k))
			return (int)i;
	return -1;
}

static int where_of(sd_journal *j, uint64_t *rt, uint64_t *mono, sd_id128_t *boot)
{
	int r = sd_journal_get_realtime_usec(j, rt);

	return r < 0 ? r : sd_journal_get_monotonic_usec(j, mono, boot);
}

/* Whether the values kept are those of the entry @j is at. */
static bool cached(sd_journal *j)
{
	uint64_t rt, mono;
	sd_id128_t boot;

	return cur.valid && cur.j == j && where_of(j, &rt, &mono, &boot) >= 0 &&
	       rt == cur.rt && mono == cur.mono && sd_id128_equal(boot, cur.boot);
}

/* Every item of the entry @j is at, once: our fields' values kept. */
static void load_entry(sd_journal *j)
{
	const void *d;
	size_t l;

	cur.valid = false;
	if (where_of(j, &cur.rt, &cur.mono, &cur.boot) < 0)
		return;
	memset(cur.present, 0, sizeof(cur.present));
	sd_journal_set_data_threshold(j, ENTRY_THRESHOLD);
	SD_JOURNAL_FOREACH_DATA(j, d, l) {
		const char *p = d, *eq = memchr(p, '=', l < 64 ? l : 64);
		int i = eq ? field_index(p, (size_t)(eq - p)) : -1;
		size_t n;

		/* the first of a field, as sd_journal_get_data() finds it */
		if (i < 0 || cur.present[i])
			continue;
		n = l - (size_t)(eq - p) - 1;
		if (n >= ENTRY_THRESHOLD)
			n = ENTRY_THRESHOLD - 1;
		memcpy(cur.v[i], eq + 1, n);
		cur.len[i] = (uint16_t)n;
		cur.cut[i] = l >= ENTRY_THRESHOLD;
		cur.present[i] = true;
	}
	/* what is looked up afterwards is wanted whole (BB_STACK) */
	sd_journal_set_data_threshold(j, BBX_J_FIELD_MAX);
	cur.j = j;
	cur.valid = true;
}

bool bbx_j_has(sd_journal *j, const char *field)
{
	int i = field_index(field, strlen(field));
	const void *d;
	size_t l;

	if (i >= 0 && cached(j))
		return cur.present[i];
	return sd_journal_get_data(j, field, &d, &l) >= 0;
}

/* A field's value ("" when absent), at most @max bytes, NUL-terminated. */
size_t bbx_j_get(sd_journal *j, const char *field, char *buf, size_t max)
{
	size_t l, k = strlen(field);
	int i = field_index(field, k);
	const void *d;

	buf[0] = '\0';
	if (i >= 0 && cached(j) && (!cur.present[i] || !cur.cut[i] || cur.len[i] + 1u >= max)) {
		l = cur.present[i] ? cur.len[i] : 0;
		if (l >= max)
			l = max - 1;
		memcpy(buf, cur.v[i], l);
		buf[l] = '\0';
		return l;
	}
	if (sd_journal_get_data(j, field, &d, &l) < 0 || l <= k || memcmp(d, field, k) ||
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
long long bbx_j_get_num(sd_journal *j, const char *field, long long dflt)
{
	char buf[32], *end;
	long long v;

	if (!bbx_j_get(j, field, buf, sizeof(buf)) || buf[0] == '-' || buf[0] == '+')
		return dflt;
	errno = 0;
	v = strtoll(buf, &end, 10);
	return errno || end == buf || *end ? dflt : v;
}

/* 32 lowercase hex digits from an id given with or without dashes. */
bool bbx_j_id128(const char *s, char out[33])
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
 * --untrusted flags; the matches of bbx_j_open() are what filters). */
static bool sent_by_root(sd_journal *j, char *uid, size_t uidlen, char *transport,
			 size_t trlen)
{
	bbx_j_get(j, "_UID", uid, uidlen);
	bbx_j_get(j, "_TRANSPORT", transport, trlen);
	return !strcmp(uid, "0") && !strcmp(transport, "journal");
}

/* ---- sources: the local journal, or one sender's files ----------------- */

void bbx_j_srcs_free(struct bbx_jsrcs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->v[i].nfiles; k++)
			free(s->v[i].files[k]);
		free(s->v[i].files);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
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

static int add_file(struct bbx_jsrcs *s, const char *sender, const char *path)
{
	struct bbx_jsrc *src = NULL;

	for (size_t i = 0; i < s->n && !src; i++)
		if (!strcmp(s->v[i].sender, sender))
			src = &s->v[i];
	if (!src) {
		if (BB__GROW(&s->v, &s->cap, s->n + 1) < 0)
			return -ENOMEM;
		src = &s->v[s->n++];
		memset(src, 0, sizeof(*src));
		snprintf(src->sender, sizeof(src->sender), "%s", sender);
	}
	/* and its NULL */
	if (BB__GROW(&src->files, &src->fcap, src->nfiles + 2) < 0)
		return -ENOMEM;
	if (!(src->files[src->nfiles] = strdup(path)))
		return -ENOMEM;
	src->files[++src->nfiles] = NULL;
	return 0;
}

/* The journal files of @dir (and of its subdirectories named by a machine
 * id, as sd_journal_open_directory() reads them), by sender. */
static int scan_dir(struct bbx_jsrcs *s, const char *dir, const char *prefix, int depth,
		    size_t *nfiles)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (de = readdir(d))) {
		char path[4096], sender[BBX_J_SENDER_MAX], stem[BBX_J_SENDER_MAX], id[33];
		struct stat st;

		if (de->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode) && depth == 0 && bbx_j_id128(de->d_name, id) &&
		    strlen(de->d_name) == 32) {
			char sub[BBX_J_SENDER_MAX];

			if (snprintf(sub, sizeof(sub), "%s%s%s", prefix, prefix[0] ? "/" : "",
				     de->d_name) < (int)sizeof(sub))
				r = scan_dir(s, path, sub, 1, nfiles);
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
	return strcmp(((const struct bbx_jsrc *)a)->sender, ((const struct bbx_jsrc *)b)->sender);
}

int bbx_j_load_sources(const struct bbx_jsel *sel, struct bbx_jsrcs *s, char *err,
		       size_t errlen)
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
	/* several directories (collectors): a sender is named with its
	 * directory, so that two collectors' files of one host stay apart */
	for (size_t i = 0; i < (sel->ndirs ? sel->ndirs : 1); i++) {
		const char *dir = sel->ndirs ? sel->dirs[i] : sel->dir;

		r = scan_dir(s, dir, sel->ndirs > 1 ? dir : "", 0, &nfiles);
		if (r < 0) {
			bbx_j_srcs_free(s);
			snprintf(err, errlen, "cannot read the journal in %s: %s", dir,
				 r == -E2BIG ? "more than 65536 journal files" : strerror(-r));
			return r;
		}
	}
	if (!s->n) {
		snprintf(err, errlen, "no journal file in %s%s", sel->dir,
			 sel->ndirs > 1 ? " and the other directories" : "");
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

/*
 * The filters of the command line as journal matches, so that the
 * journal's own index of each field's values chooses the entries
 * (bbx_j_wanted() still checks every one): --comm, --unit, --release
 * given up to 256 bytes, --state as BB_LIVENESS (and BB_OOM_KILL=1 for
 * oom-kill).  0 or -errno.
 */
static int match_filters(sd_journal *j, const struct bbx_opts *o)
{
	const char *const fv[][2] = {
		{ BBJ_COMM, o->comm }, { BBJ_UNIT, o->unit }, { BBJ_RELEASE, o->release },
		{ BBJ_LIVENESS, o->state && !strcmp(o->state, "crashed") ? "crashed"
				: o->state ? "orphaned" : NULL },
		{ BBJ_OOM_KILL, o->state && !strcmp(o->state, "oom-kill") ? "1" : NULL },
	};
	int r = 0;

	for (size_t i = 0; i < sizeof(fv) / sizeof(fv[0]) && !r; i++) {
		char m[320];
		int n;

		if (!fv[i][1] || strlen(fv[i][1]) > 256)
			continue;
		n = snprintf(m, sizeof(m), "%s=%s", fv[i][0], fv[i][1]);
		r = sd_journal_add_match(j, m, (size_t)n);
	}
	return r;
}

int bbx_j_seek_first(sd_journal *j, const struct bbx_jsel *s)
{
	/* the journal's index by time: entries before --since are not read */
	if (s->opt && s->opt->since_us > 0)
		return sd_journal_seek_realtime_usec(j, (uint64_t)s->opt->since_us);
	return sd_journal_seek_head(j);
}

/* Check the selection's ids; 0 or -EINVAL (@err set). */
int bbx_j_check_sel(const struct bbx_jsel *s, char *err, size_t errlen)
{
	char id[33];

	if (s->machine && !bbx_j_id128(s->machine, id)) {
		snprintf(err, errlen, "--machine '%s': not a 128-bit id (32 hex digits)", s->machine);
		return -EINVAL;
	}
	if (s->boot && !bbx_j_id128(s->boot, id)) {
		snprintf(err, errlen, "--boot '%s': not a 128-bit id (32 hex digits)", s->boot);
		return -EINVAL;
	}
	return 0;
}

void bbx_j_close(sd_journal *j)
{
	if (cur.j == j)
		cur.valid = false; /* the next journal may get its address */
	sd_journal_close(j);
}

/* Open source @src and add the matches of @s.  0 or -errno (@err set). */
int bbx_j_open(const struct bbx_jsel *s, const struct bbx_jsrc *src, sd_journal **jp,
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
		r = match(j, BBJ_PID, pid);
	}
	if (!r && s->machine && bbx_j_id128(s->machine, id))
		r = match(j, "_MACHINE_ID", id);
	if (!r && s->boot && bbx_j_id128(s->boot, id))
		r = match(j, BBJ_BOOT_ID, id);
	if (!r && s->opt)
		r = match_filters(j, s->opt);
	if (r < 0) {
		snprintf(err, errlen, "journal match: %s", strerror(-r));
		bbx_j_close(j);
		return r;
	}
	/* nothing here needs a field whole but BB_BOX (threshold 0 then) */
	sd_journal_set_data_threshold(j, BBX_J_FIELD_MAX);
	*jp = j;
	return 0;
}

/* ---- entries ------------------------------------------------------------ */

static void esc_field(sd_journal *j, const char *field, char *out, size_t outlen, size_t max)
{
	char raw[1024];
	size_t n = bbx_j_get(j, field, raw, max + 1 < sizeof(raw) ? max + 1 : sizeof(raw));

	bb_escape_text(raw, n, out, outlen);
}

const char *bbx_j_liveness(const struct bbx_jentry *e)
{
	if (!strcmp(e->liveness, "crashed"))
		return "crashed";
	if (e->oom)
		return "oom-kill";
	return e->liveness[0] ? e->liveness : "?";
}

void bbx_j_read_entry(sd_journal *j, struct bbx_jentry *e)
{
	char raw[64];

	memset(e, 0, sizeof(*e));
	load_entry(j);
	esc_field(j, "_HOSTNAME", e->host, sizeof(e->host), 64);
	if (!bbx_j_get(j, "_MACHINE_ID", raw, sizeof(raw)) || !bbx_j_id128(raw, e->machine))
		strcpy(e->machine, "-");
	if (!bbx_j_get(j, BBJ_BOOT_ID, raw, sizeof(raw)) || !bbx_j_id128(raw, e->boot))
		strcpy(e->boot, "-");
	esc_field(j, BBJ_COMM, e->comm, sizeof(e->comm), 64);
	esc_field(j, BBJ_UNIT, e->unit, sizeof(e->unit), 256);
	esc_field(j, BBJ_LIVENESS, e->liveness, sizeof(e->liveness), BBX_J_WORD_MAX);
	/* a death without a word has no crash fields: not looked up */
	if (!strcmp(e->liveness, "crashed"))
		esc_field(j, BBJ_SIGNAL_NAME, e->signame, sizeof(e->signame), BBX_J_WORD_MAX);
	else
		e->oom = bbx_j_get_num(j, BBJ_OOM_KILL, 0) == 1;
	e->trusted = sent_by_root(j, raw, sizeof(raw), e->transport, sizeof(e->transport));
	bb_escape_text(raw, strnlen(raw, 8), e->uid_raw, sizeof(e->uid_raw));
	e->pid = bbx_j_get_num(j, BBJ_PID, -1);
	e->uid = bbx_j_get_num(j, BBJ_UID, -1);
	e->starttime = bbx_j_get_num(j, BBJ_STARTTIME, -1);
	e->signal = strcmp(e->liveness, "crashed") ? -1 : bbx_j_get_num(j, BBJ_SIGNAL, -1);
	e->box_size = bbx_j_get_num(j, BBJ_BOX_SIZE, -1);
	if (sd_journal_get_realtime_usec(j, &e->usec) < 0)
		e->usec = 0;
	e->time[bbx_fmt_time(e->time, (int64_t)(e->usec > INT64_MAX / 1000 ? 0 : e->usec * 1000))] =
		'\0';
	/* is BB_BOX there?  bb-reap says so in BB_BOX_ATTACHED; an entry
	 * without that field has it when the one pass saw it */
	e->has_box = bbx_j_get(j, BBJ_BOX_ATTACHED, raw, sizeof(raw)) ? !strcmp(raw, "1")
		   : bbx_j_has(j, BBJ_BOX);
}

