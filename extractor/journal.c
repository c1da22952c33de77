/* SPDX-License-Identifier: MIT */
/*
 * journal.c - bb-extract --journal / --journal-directory: the boxes that
 * bb-reap --journal put into journal entries (MESSAGE_ID
 * BB_JOURNAL_MESSAGE_ID), on this host or on a collector that
 * systemd-journal-remote fills from many hosts.  coredumpctl for boxes.
 *
 * An entry is untrusted input like a box: on a collector it is another
 * host's bytes, and any host can upload anything.  Every field is copied
 * with a bound before it is used (FIELD_MAX; a box at most
 * BBX_JOURNAL_BOX_MAX), numbers are parsed strictly, text is escaped
 * (bb_escape_text) before it reaches a terminal, and the box itself is
 * opened by the reader API from memory (bb_reader_open_mem), which checks
 * it like any file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include <blackbox/reader.h>

#include "extract.h"
#include "journal.h"
#include "journal-fields.h"

#define FIELD_MAX   (64u << 10) /* bytes of a field kept (but BB_BOX) */
#define SHOW_MAX    (1u << 20)  /* bytes of a field printed (BB_RECORDS ...) */
#define CANDIDATES  64          /* named in an ambiguity message */
#define WORD_MAX    15          /* bytes of BB_LIVENESS and BB_SIGNAL_NAME shown: more
				   than the longest liveness word ("orphaned") and
				   signal name (bbx_signal_name()) */

/* A field's value ("" when absent), at most @max bytes, NUL-terminated. */
static size_t get(sd_journal *j, const char *field, char *buf, size_t max)
{
	const void *d;
	size_t l, k = strlen(field);

	buf[0] = '\0';
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

/* FIELD=value; both ours (validated), short. */
static int match(sd_journal *j, const char *field, const char *v)
{
	char m[128];
	int n = snprintf(m, sizeof(m), "%s=%s", field, v);

	return sd_journal_add_match(j, m, (size_t)n);
}

/* Open the journal and add the matches of @s.  0 or -errno (@err set). */
static int open_journal(const struct bbx_jsel *s, sd_journal **jp, char *err, size_t errlen)
{
	char id[33], pid[16];
	sd_journal *j;
	int r;

	if (s->machine && !id128(s->machine, id)) {
		snprintf(err, errlen, "--machine '%s': not a 128-bit id (32 hex digits)", s->machine);
		return -EINVAL;
	}
	if (s->boot && !id128(s->boot, id)) {
		snprintf(err, errlen, "--boot '%s': not a 128-bit id (32 hex digits)", s->boot);
		return -EINVAL;
	}
	r = s->dir ? sd_journal_open_directory(&j, s->dir, 0)
		   : sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
	if (r < 0) {
		snprintf(err, errlen, "cannot open the journal%s%s: %s", s->dir ? " in " : "",
			 s->dir ? s->dir : "", strerror(-r));
		return r;
	}
	r = match(j, "MESSAGE_ID", BB_JOURNAL_MESSAGE_ID);
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
		sd_journal_close(j);
		return r;
	}
	/* nothing here needs a field whole but BB_BOX (threshold 0 then) */
	sd_journal_set_data_threshold(j, FIELD_MAX);
	*jp = j;
	return 0;
}

/* What an entry says about itself, bounded and escaped for a terminal. */
struct jentry {
	char     host[4 * 64 + 1], machine[33], boot[33], comm[4 * 64 + 1], unit[4 * 256 + 1];
	char     liveness[4 * WORD_MAX + 1], signame[4 * WORD_MAX + 1], time[BBX_TIME_MAX];
	long long pid, signal, box_size;
	uint64_t usec;
	bool     has_box;
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
	esc_field(j, "BB_SIGNAL_NAME", e->signame, sizeof(e->signame), WORD_MAX);
	e->pid = get_num(j, "BB_PID", -1);
	e->signal = get_num(j, "BB_SIGNAL", -1);
	e->box_size = get_num(j, "BB_BOX_SIZE", -1);
	if (sd_journal_get_realtime_usec(j, &e->usec) < 0)
		e->usec = 0;
	e->time[bbx_fmt_time(e->time, (int64_t)(e->usec > INT64_MAX / 1000 ? 0 : e->usec * 1000))] =
		'\0';
	/* is BB_BOX there?  With the threshold, only its first bytes are read */
	e->has_box = sd_journal_get_data(j, "BB_BOX", &d, &l) >= 0;
}

static void list_text(struct bbx_out *o, const struct jentry *e)
{
	char line[2048], st[sizeof(e->liveness) + sizeof(e->signame) + 4], box[32];

	if (e->signal > 0 && e->signame[0])
		snprintf(st, sizeof(st), "%s (%s)", e->liveness, e->signame);
	else
		snprintf(st, sizeof(st), "%s", e->liveness[0] ? e->liveness : "?");
	if (e->has_box && e->box_size >= 0)
		snprintf(box, sizeof(box), "%lld", e->box_size);
	else
		snprintf(box, sizeof(box), "not shipped");
	snprintf(line, sizeof(line), "%-30s %-16s %-8lld %-16s %-18s %-12s %.8s %.8s %s\n",
		 e->time, e->host[0] ? e->host : "-", e->pid, e->comm[0] ? e->comm : "-", st, box,
		 e->machine, e->boot, e->unit[0] ? e->unit : "-");
	bbx_out_str(o, line);
}

static void list_struct(struct bbx_em *em, sd_journal *j, const struct jentry *e)
{
	char raw[4096];
	size_t n;

	bbx_em_map(em);
	bbx_em_kv_str(em, "time", e->time);
	n = get(j, "_HOSTNAME", raw, 256);
	bbx_em_key(em, "host");
	bbx_em_str(em, raw, n);
	bbx_em_kv_str(em, "machine_id", e->machine);
	bbx_em_kv_str(em, "boot_id", e->boot);
	bbx_em_kv_i64(em, "pid", e->pid);
	n = get(j, "BB_COMM", raw, 256);
	bbx_em_key(em, "comm");
	bbx_em_str(em, raw, n);
	bbx_em_kv_i64(em, "uid", get_num(j, "BB_UID", -1));
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
	n = get(j, "MESSAGE", raw, sizeof(raw));
	bbx_em_key(em, "message");
	bbx_em_str(em, raw, n);
	bbx_em_end(em);
	bbx_em_eol(em);
}

int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen)
{
	struct jentry e;
	sd_journal *j;

	if (open_journal(s, &j, err, errlen) < 0)
		return 4;
	if (text)
		bbx_out_str(out, "TIME                           HOST             PID      "
			    "COMM             LIVENESS           BOX          MACHINE  BOOT     "
			    "UNIT\n");
	SD_JOURNAL_FOREACH(j) {
		read_entry(j, &e);
		if (text)
			list_text(out, &e);
		else
			list_struct(em, j, &e);
		if (out->err)
			break;
	}
	sd_journal_close(j);
	return 0;
}

/*
 * An entry without its box: every MESSAGE and BB_* field it has (text:
 * "FIELD=value", each line of a value escaped; JSON/CBOR: one object), so
 * that what was shipped is still read.
 */
static void show_fields(sd_journal *j, struct bbx_out *o, struct bbx_em *em, bool text)
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
	if (!text) {
		bbx_em_end(em);
		bbx_em_end(em);
		bbx_em_eol(em);
	}
}

int bbx_journal_box(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		    bool text, void **box, size_t *len, char *label, size_t labellen,
		    char *err, size_t errlen)
{
	struct jentry e, best = { 0 };
	char *cursor = NULL;
	sd_journal *j;
	size_t n = 0, groups = 0, used = 0;
	char seen[CANDIDATES][66];
	int code;

	*box = NULL;
	*len = 0;
	if (open_journal(s, &j, err, errlen) < 0)
		return 4;
	used = (size_t)snprintf(err, errlen, "several machines or boots have a box of pid %ld "
				"in the journal (choose with --machine, --boot):", (long)s->pid);
	SD_JOURNAL_FOREACH(j) {
		char grp[66];
		bool known = false;

		read_entry(j, &e);
		if (e.pid != s->pid)
			continue;
		n++;
		snprintf(grp, sizeof(grp), "%s%s", e.machine, e.boot);
		for (size_t i = 0; i < groups && i < CANDIDATES; i++)
			known |= !strcmp(seen[i], grp);
		if (!known) {
			if (groups < CANDIDATES) {
				memcpy(seen[groups], grp, sizeof(grp));
				if (used < errlen)
					used += (size_t)snprintf(err + used, errlen - used,
							   " host %s machine %s boot %s;",
							   e.host, e.machine, e.boot);
			}
			groups++;
		}
		/* the newest: entries come oldest first */
		free(cursor);
		cursor = NULL;
		if (sd_journal_get_cursor(j, &cursor) < 0) {
			code = 1;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		best = e;
	}
	if (!n) {
		snprintf(err, errlen, "no box of pid %ld in the journal%s%s%s%s", (long)s->pid,
			 s->dir ? " in " : "", s->dir ? s->dir : "", s->machine || s->boot ?
			 " for that machine and boot" : "", "");
		code = 4;
		goto out;
	}
	if (groups > 1) {
		code = 5;
		goto out;
	}
	snprintf(label, labellen, "journal: %s pid %lld", best.host[0] ? best.host : "-", best.pid);
	if (sd_journal_seek_cursor(j, cursor) < 0 || sd_journal_next(j) <= 0) {
		snprintf(err, errlen, "%s: the entry went away while being read", label);
		code = 4;
		goto out;
	}
	if (!best.has_box) {
		show_fields(j, out, em, text);
		snprintf(err, errlen, "%s: the box itself was not shipped (bb-reap --journal=summary, "
			 "or over its --journal-box-max or --journal-box-budget): its fields are "
			 "shown above", label);
		code = 4;
		goto out;
	}
	{
		const void *d;
		size_t l;
		int r;

		sd_journal_set_data_threshold(j, 0);
		r = sd_journal_get_data(j, "BB_BOX", &d, &l);
		if (r < 0 || l < 7) {
			snprintf(err, errlen, "%s: BB_BOX: %s", label, strerror(r < 0 ? -r : EBADMSG));
			code = 4;
			goto out;
		}
		if (l - 7 > BBX_JOURNAL_BOX_MAX) {
			snprintf(err, errlen, "%s: BB_BOX of %zu bytes is larger than %zu: refused",
				 label, l - 7, BBX_JOURNAL_BOX_MAX);
			code = 4;
			goto out;
		}
		*box = malloc(l - 7 ? l - 7 : 1);
		if (!*box) {
			snprintf(err, errlen, "out of memory");
			code = 1;
			goto out;
		}
		memcpy(*box, (const char *)d + 7, l - 7);
		*len = l - 7;
		code = BBX_J_BOX;
		err[0] = '\0';
	}
out:
	free(cursor);
	sd_journal_close(j);
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
				.boot = o->boot };
	char err[8192] = "", label[512] = "";
	struct bb_reader *r = NULL;
	struct bbx_out out;
	struct bbx_em em;
	size_t len = 0;
	void *box = NULL;
	int code;

	if (bbx_out_open(&out, STDOUT_FILENO, o->uring) < 0) {
		bbx_msg(NULL, "out of memory");
		return EXIT_FAILURE_;
	}
	bbx_em_init(&em, &out, o->fmt == FMT_CBOR);
	if (o->list)
		code = bbx_journal_list(&sel, &out, &em, o->fmt == FMT_TEXT, err, sizeof(err));
	else
		code = bbx_journal_box(&sel, &out, &em, o->fmt == FMT_TEXT, &box, &len, label,
				       sizeof(label), err, sizeof(err));
	if (code == BBX_J_BOX) {
		int ret = bb_reader_open_mem(box, len, 0, &r, err, sizeof(err));

		free(box);
		if (ret < 0) {
			bbx_msg(label, "%s", err);
			code = ret == -ENOMEM ? EXIT_FAILURE_ : EXIT_NOBOX;
		} else if (o->save) {
			code = bbx_save(o, r);
		} else {
			code = bbx_extract(o, &out, r, bb_reader_liveness(r), false);
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
