/* SPDX-License-Identifier: MIT */
/*
 * journal-box.c - bb-extract --journal PID, --cursor, --group ID: the one
 * box an entry carries (every claim on the pid told apart, never resolved
 * by recency), or, for an entry without its box, every field it has and
 * its stack symbolised; then bbx_journal_main(), which extracts that box
 * exactly as a file.  How entries are read and trusted: journal-read.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include <blackbox/reader.h>

#include "extract.h"
#include "groups.h"
#include "journal-read.h"
#include "journal-field.h"
#include "journal-fields.h"
#include "symbols.h"

#define CANDIDATES  64          /* claims told apart (and named) at most */

/* ---- one box ------------------------------------------------------------ */

/*
 * An entry without its box: every MESSAGE and BB_* field it has (text:
 * "FIELD=value", each line of a value escaped; JSON/CBOR: one object), so
 * that what was shipped is still read.
 */
static void entry_frames(const struct bbx_jsel *s, sd_journal *j, const struct bbx_jentry *e,
			 struct bbx_out *o, struct bbx_em *em, bool text);

static void show_fields(const struct bbx_jsel *s, sd_journal *j, const struct bbx_jentry *e,
			struct bbx_out *o, struct bbx_em *em, bool text)
{
	const void *d;
	size_t l;

	if (!text && !em)
		return; /* --perfetto: the trace alone on the output */
	sd_journal_set_data_threshold(j, BBX_J_SHOW_MAX);
	if (!text) {
		bbx_em_map(em);
		bbx_em_key(em, "journal_entry");
		bbx_em_map(em);
	}
	SD_JOURNAL_FOREACH_DATA(j, d, l)
		bbx_j_show_field(d, l, o, em, text);
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
static void entry_frames(const struct bbx_jsel *s, sd_journal *j, const struct bbx_jentry *e,
			 struct bbx_out *o, struct bbx_em *em, bool text)
{
	struct bb_crash *cr = calloc(1, sizeof(*cr));
	struct bbx_frame *fr = calloc(BB_CRASH_MAX_FRAMES, sizeof(*fr));
	char note[2048] = "", line[256];
	const struct bbx_sframe *f = NULL;
	struct bbx_jgset gs = { 0 };
	struct bbx_jgent g = { 0 };
	size_t nf = 0;
	int r = -ENOMEM;

	sd_journal_set_data_threshold(j, BBX_J_FIELD_MAX);
	if (!cr || !fr || bbx_j_gset_init(&gs) < 0 ||
	    (r = bbx_j_take_gent(s, 0, j, e, &gs, &g)) < 0)
		goto out;
	if (g.stack) {
		f = g.stack->f;
		nf = g.stack->nf;
	}
	/* every frame of it shown, the system's too */
	for (size_t i = 0; i < nf && !r; i++)
		r = bbx_symcache_add(gs.cache, &f[i], g.owner);
	if (!r && s->opt && !s->opt->no_symbols) {
		struct bbx_sym_opts so;

		bbx_sym_opts_init(s->opt, g.owner, &so);
		r = bbx_symcache_resolve(gs.cache, &so, note, sizeof(note));
	}
	if (!r)
		r = bbx_j_group_of(&gs, &g, fr);
	if (!r) {
		cr->nframes = (uint32_t)nf;
		for (size_t i = 0; i < nf; i++) {
			cr->frames[i] = f[i].addr;
			cr->frame_flags[i] = f[i].flags;
		}
		if (text) {
			if (nf) {
				bbx_out_str(o, "*** the crash stack of the entry (BB_STACK):\n");
				bbx_crash_frames_text(o, cr, fr, s->opt && s->opt->raw_names);
			}
			snprintf(line, sizeof(line), "*** group %s: ", g.sig.id);
			bbx_out_str(o, line);
			bbx_j_put_esc(o, g.sig.top[0] ? g.sig.top : "-");
			bbx_out_char(o, '\n');
			if (note[0] && !(s->opt && s->opt->quiet))
				bbx_msg("journal", "symbols: %s", note);
		} else {
			bbx_em_key(em, "frames");
			bbx_em_array(em);
			for (size_t i = 0; i < nf; i++)
				bbx_frame_struct(em, &fr[i], s->opt && s->opt->raw_names);
			bbx_em_end(em);
			bbx_em_kv_str(em, "group", g.sig.id);
			bbx_em_kv_str(em, "top_frames", g.sig.top);
			if (note[0])
				bbx_em_kv_str(em, "symbols_note", note);
		}
	}
out:
	if (r < 0)
		bbx_msg("journal", "the entry's stack: %s", strerror(-r));
	free(g.cursor);
	free(g.message);
	bbx_j_gset_free(&gs);
	free(cr);
	free(fr);
}

/*
 * One claim on a pid: what entries agree on (sender, machine, boot, owner,
 * start time), with its newest entry; entries come oldest first.
 */
struct claim {
	size_t        src;
	struct bbx_jentry e;
	char         *cursor; /* of its newest entry */
	size_t        entries;
};

static bool same_claim(const struct claim *c, size_t src, const struct bbx_jentry *e)
{
	return c->src == src && !strcmp(c->e.machine, e->machine) && !strcmp(c->e.boot, e->boot) &&
	       c->e.uid == e->uid && c->e.starttime == e->starttime;
}

struct lookup {
	struct claim v[CANDIDATES];
	size_t       n, more;     /* claims kept, and claims beyond those */
	size_t       entries;
};

static int add_claim(struct lookup *l, size_t src, sd_journal *j, const struct bbx_jentry *e)
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
static void name_claims(const struct lookup *l, const struct bbx_jsrcs *srcs)
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
static int find_claims(const struct bbx_jsel *s, const struct bbx_jsrcs *srcs, struct lookup *l,
		       char *err, size_t errlen)
{
	struct bbx_jentry e;

	for (size_t i = 0; i < srcs->n; i++) {
		sd_journal *j;
		int r = bbx_j_open(s, &srcs->v[i], &j, err, errlen);

		if (r < 0) {
			if (!s->dir)
				return r;
			bbx_msg(NULL, "%s", err);
			err[0] = '\0';
			continue;
		}
		/* a cursor names one entry: the journal seeks to it, nothing
		 * else is read (--group ID alone comes here) */
		if (s->cursor ? sd_journal_seek_cursor(j, s->cursor) : sd_journal_seek_head(j)) {
			bbx_j_close(j);
			continue;
		}
		while (sd_journal_next(j) > 0) {
			if (s->cursor && sd_journal_test_cursor(j, s->cursor) <= 0)
				break;
			bbx_j_read_entry(j, &e);
			if (s->pid && e.pid != s->pid)
				continue;
			r = add_claim(l, i, j, &e);
			if (r < 0) {
				bbx_j_close(j);
				snprintf(err, errlen, "out of memory");
				return r;
			}
		}
		bbx_j_close(j);
	}
	return 0;
}

/* The box of the chosen entry into *@box, or what it carries shown.
 * Returns BBX_J_BOX or an exit code (@err set). */
static int take_box(const struct bbx_jsel *s, const struct bbx_jsrc *src, const struct claim *c,
		    struct bbx_out *out, struct bbx_em *em, bool text, void **box,
		    size_t *len, const char *label, char *err, size_t errlen)
{
	const void *d;
	sd_journal *j;
	size_t l;
	int r, code;

	if (bbx_j_open(s, src, &j, err, errlen) < 0)
		return BBX_EXIT_NOBOX;
	if (sd_journal_seek_cursor(j, c->cursor) < 0 || sd_journal_next(j) <= 0 ||
	    sd_journal_test_cursor(j, c->cursor) <= 0) {
		snprintf(err, errlen, "%s: the entry went away while being read", label);
		code = BBX_EXIT_NOBOX;
		goto out;
	}
	if (!c->e.has_box) {
		show_fields(s, j, &c->e, out, em, text);
		snprintf(err, errlen, "%s: the box itself was not shipped (bb-reap --journal=summary, "
			 "a box not root's without --journal-content=all, or over its "
			 "--journal-box-max or --journal-box-budget): its fields are shown above",
			 label);
		code = BBX_EXIT_NOBOX;
		goto out;
	}
	sd_journal_set_data_threshold(j, 0);
	r = sd_journal_get_data(j, BBJ_BOX, &d, &l);
	if (r < 0 || l < 7) {
		snprintf(err, errlen, "%s: BB_BOX: %s", label, strerror(r < 0 ? -r : EBADMSG));
		code = BBX_EXIT_NOBOX;
		goto out;
	}
	if (l - 7 > BBX_JOURNAL_BOX_MAX) {
		snprintf(err, errlen, "%s: BB_BOX of %zu bytes is larger than %zu: refused",
			 label, l - 7, BBX_JOURNAL_BOX_MAX);
		code = BBX_EXIT_NOBOX;
		goto out;
	}
	*box = malloc(l - 7 ? l - 7 : 1);
	if (!*box) {
		snprintf(err, errlen, "out of memory");
		code = BBX_EXIT_FAILURE;
		goto out;
	}
	memcpy(*box, (const char *)d + 7, l - 7);
	*len = l - 7;
	code = BBX_J_BOX;
	err[0] = '\0';
out:
	bbx_j_close(j);
	return code;
}

int bbx_journal_box(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		    bool text, struct bbx_jbox *jb, char *err, size_t errlen)
{
	struct lookup *l = calloc(1, sizeof(*l));
	struct bbx_jsrcs srcs = { 0 };
	const struct claim *c;
	const char *why;
	int code, r;

	memset(jb, 0, sizeof(*jb));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return BBX_EXIT_FAILURE;
	}
	if (bbx_j_check_sel(s, err, errlen) < 0) {
		code = BBX_EXIT_USAGE;
		goto out;
	}
	r = bbx_j_load_sources(s, &srcs, err, errlen);
	if (!r)
		r = find_claims(s, &srcs, l, err, errlen);
	if (r < 0) {
		code = r == -ENOMEM ? BBX_EXIT_FAILURE : BBX_EXIT_NOBOX;
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
		code = BBX_EXIT_NOBOX;
		goto out;
	}
	if ((why = conflict(l))) {
		/* the reason first, then each claim on a line of its own */
		bbx_msg(NULL, "pid %ld: %s", (long)s->pid, why);
		name_claims(l, &srcs);
		code = BBX_EXIT_AMBIGUOUS;
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
	bbx_j_srcs_free(&srcs);
	return code;
}

/* ---- bb-extract --journal ----------------------------------------------- */

/*
 * Whose box it is, as far as the entry proves: the owner the symbols are
 * parsed as, and how the report qualifies the header's uid.  Returns
 * false when the box contradicts its entry (refused).
 */
static bool entry_owner(const struct bbx_jbox *jb, const struct bb_box_info *in,
			struct bbx_opts *eo, char *proof, size_t prooflen, char *err, size_t errlen)
{
	if (jb->uid < 0 || jb->uid > UINT32_MAX || (uint32_t)jb->uid != in->uid) {
		snprintf(err, errlen, "%s: the box's header names uid %u, its entry BB_UID %lld: "
			 "refused", jb->label, in->uid, jb->uid);
		return false;
	}
	eo->entry = true;
	if (jb->sender[0]) {
		/* every field of it is the sender's word */
		eo->entry_owner = BBX_J_NOBODY_UID;
		snprintf(proof, prooflen, "as uploaded by %s: not proven; symbols as uid %u",
			 jb->sender, BBX_J_NOBODY_UID);
	} else {
		eo->entry_owner = in->uid;
		snprintf(proof, prooflen, "journal entry, trusted");
	}
	eo->entry_proof = proof;
	return true;
}

/*
 * The box of an entry: as bb-reap sent it with --compress=zstd (the
 * default: BB_BOX_ENCODING=zstd, one zstd frame) or as it was.  A frame
 * goes to the reader as a compressed archive does, through a memory file
 * (reader_zstd.c bounds and checks it as any archive); a plain box from
 * memory (bb_reader_open_mem()).  Returns what they return.
 */
static int open_box(const struct bbx_jbox *jb, struct bb_reader **r, char *err, size_t errlen)
{
	static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	const uint8_t *p = jb->box;
	size_t done = 0;
	int fd, ret;

	if (jb->len < 4 || memcmp(p, zstd_magic, 4))
		return bb_reader_open_mem(jb->box, jb->len, 0, r, err, errlen);
	fd = memfd_create("bb-extract-box", MFD_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "a compressed box: memfd_create: %s", strerror(errno));
		return -errno;
	}
	while (done < jb->len) {
		ssize_t w = write(fd, p + done, jb->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			snprintf(err, errlen, "a compressed box: %s", strerror(-ret));
			close(fd);
			return ret;
		}
		done += (size_t)w;
	}
	/* a box from memory has no file time (ages of threads count from
	 * its records), nor does this one */
	if (futimens(fd, (const struct timespec[2]){ { 0, 0 }, { 0, 0 } }) < 0) {
		ret = -errno;
		snprintf(err, errlen, "a compressed box: futimens: %s", strerror(-ret));
		close(fd);
		return ret;
	}
	/* the memory file is ours: whose box it is, the entry says and
	 * entry_owner() checks, as for a box from memory */
	ret = bb_reader_open_fd(fd, "<memory>", BB_OPEN_ANY_OWNER, r, err, errlen);
	close(fd);
	return ret;
}

/*
 * --journal, --journal-directory: --list the entries, or take PID's box out
 * of its entry and extract it exactly as a file (the reader API checks the
 * bytes as it checks any box): same output, same exit status.
 */
int bbx_journal_main(const struct bbx_opts *o)
{
	struct bbx_jsel sel = { .dir = o->journal_dir, .dirs = o->journal_dirs,
				.ndirs = o->njournal_dirs, .pid = o->pid, .machine = o->machine,
				.boot = o->boot, .cursor = o->cursor, .untrusted = o->untrusted,
				.opt = o };
	char *chosen = NULL;
	char err[8192] = "", proof[BBX_J_SENDER_MAX + 96];
	struct bb_reader *r = NULL;
	struct bbx_jbox jb = { 0 };
	struct bbx_out out;
	struct bbx_em em;
	int code;

	if (bbx_out_open(&out, STDOUT_FILENO, o->uring) < 0) {
		bbx_msg(NULL, "out of memory");
		return BBX_EXIT_FAILURE;
	}
	bbx_em_init(&em, &out, o->fmt == BBX_FMT_CBOR);
	if (o->list || o->groups) {
		code = bbx_journal_list(&sel, &out, &em, o->fmt == BBX_FMT_TEXT, err, sizeof(err));
	} else {
		code = o->group ? bbx_j_newest_of_group(&sel, &chosen, err, sizeof(err)) : 0;
		sel.cursor = chosen ? chosen : sel.cursor;
		if (!code)
			code = bbx_journal_box(&sel, &out,
					       o->fmt == BBX_FMT_PERFETTO ? NULL : &em,
					       o->fmt == BBX_FMT_TEXT, &jb, err, sizeof(err));
		free(chosen);
	}
	if (code == BBX_J_BOX) {
		int ret = open_box(&jb, &r, err, sizeof(err));
		struct bbx_opts eo = *o;

		free(jb.box);
		if (ret < 0) {
			bbx_msg(jb.label, "%s", err);
			code = ret == -ENOMEM ? BBX_EXIT_FAILURE : BBX_EXIT_NOBOX;
		} else if (!entry_owner(&jb, bb_reader_info(r), &eo, proof, sizeof(proof), err,
					sizeof(err))) {
			code = BBX_EXIT_NOBOX;
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
		return BBX_EXIT_FAILURE;
	}
	if (err[0])
		bbx_msg(NULL, "%s", err);
	return code;
}

