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
 * The fields read here that no entry of the journal being read has.
 * Looking up a field an entry lacks compares the name of every one of its
 * items, and libsystemd decompresses each compressed item (BB_BOX, up to
 * 128 KiB of it, with a fresh zstd context) to do so: two thirds of a
 * --list's time.  sd_journal_enumerate_fields() reads the files' field
 * objects and decompresses nothing.
 */
static const char *const our_fields[] = {
	BBJ_BOOT_ID, BBJ_BOX_ATTACHED, BBJ_BOX_SIZE, BBJ_BUILD_ID, BBJ_COMM,
	BBJ_CRASH_KIND, BBJ_LIVENESS, BBJ_PID, BBJ_RELEASE, BBJ_SIGNAL, BBJ_SIGNAL_NAME,
	BBJ_STACK, BBJ_STACK_KINDS, BBJ_STARTTIME, BBJ_SUPPRESSED, BBJ_UID, BBJ_UNIT,
	"MESSAGE", "_HOSTNAME", "_MACHINE_ID", "_TRANSPORT", "_UID", BBJ_OOM_KILL,
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
size_t bbx_j_get(sd_journal *j, const char *field, char *buf, size_t max)
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
	r = scan_dir(s, sel->dir, "", 0, &nfiles);
	if (r < 0) {
		bbx_j_srcs_free(s);
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
	if (fields_of.j == j)
		fields_of.j = NULL; /* the next journal may get its address */
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
	if (r < 0) {
		snprintf(err, errlen, "journal match: %s", strerror(-r));
		bbx_j_close(j);
		return r;
	}
	/* nothing here needs a field whole but BB_BOX (threshold 0 then) */
	sd_journal_set_data_threshold(j, BBX_J_FIELD_MAX);
	learn_fields(j);
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

void bbx_j_read_entry(sd_journal *j, struct bbx_jentry *e)
{
	char raw[64];
	const void *d;
	size_t l;

	memset(e, 0, sizeof(*e));
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
	/* is BB_BOX there?  bb-reap says so in BB_BOX_ATTACHED; asking for
	 * BB_BOX itself decompresses it whole (the threshold only cuts what
	 * is returned), so only an entry without that field is asked */
	e->has_box = bbx_j_get(j, BBJ_BOX_ATTACHED, raw, sizeof(raw)) ? !strcmp(raw, "1")
		   : sd_journal_get_data(j, BBJ_BOX, &d, &l) >= 0;
}

