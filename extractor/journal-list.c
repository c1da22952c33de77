/* SPDX-License-Identifier: MIT */
/*
 * journal-list.c - bb-extract --journal --list: one line (text) or object
 * (JSON, CBOR) per entry bb-reap sent, with its crash group
 * (journal-groups.c).  How entries are read and trusted: journal-read.c.
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
#include "groups.h"
#include "journal-read.h"
#include "journal-fields.h"
#include "symbols.h"

/* ---- --list ------------------------------------------------------------- */

static void list_text(struct bbx_out *o, const struct bbx_jentry *e, const char *sender,
		      const char *group)
{
	char line[4096], st[sizeof(e->liveness) + sizeof(e->signame) + 4], box[32], uid[24];
	char who[4 * BBX_J_SENDER_MAX + 2] = "", trust[128] = "";

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

static void list_struct(struct bbx_em *em, sd_journal *j, const struct bbx_jentry *e,
			const char *sender, const struct bbx_jgent *g)
{
	char raw[4096], *cursor = NULL;
	size_t n;

	bbx_em_map(em);
	bbx_em_kv_str(em, "time", e->time);
	if (sender[0])
		bbx_em_kv_str(em, "sender", sender);
	n = bbx_j_get(j, "_HOSTNAME", raw, 256);
	bbx_em_key(em, "host");
	bbx_em_str(em, raw, n);
	bbx_em_kv_str(em, "machine_id", e->machine);
	bbx_em_kv_str(em, "boot_id", e->boot);
	bbx_em_kv_i64(em, "pid", e->pid);
	n = bbx_j_get(j, BBJ_COMM, raw, 256);
	bbx_em_key(em, "comm");
	bbx_em_str(em, raw, n);
	bbx_em_kv_i64(em, "uid", e->uid);
	bbx_em_kv_i64(em, "starttime", e->starttime);
	n = bbx_j_get(j, BBJ_LIVENESS, raw, 32);
	bbx_em_key(em, "liveness");
	bbx_em_str(em, raw, n);
	if (e->signal > 0) {
		bbx_em_kv_i64(em, "signal", e->signal);
		n = bbx_j_get(j, BBJ_SIGNAL_NAME, raw, 32);
		if (n) {
			bbx_em_key(em, "signal_name");
			bbx_em_str(em, raw, n);
		}
	}
	n = bbx_j_get(j, BBJ_UNIT, raw, 256);
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
	n = bbx_j_get(j, "MESSAGE", raw, sizeof(raw));
	bbx_em_key(em, "message");
	bbx_em_str(em, raw, n);
	bbx_em_end(em);
	bbx_em_eol(em);
}

int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen)
{
	struct bbx_jsrcs srcs;
	struct bbx_jgset gs;
	struct bbx_jentry e;
	size_t k = 0;
	int r, code;

	if (bbx_j_check_sel(s, err, errlen) < 0)
		return BBX_EXIT_USAGE;
	if (s->opt && s->opt->group && !bbx_j_group_ok(s->opt->group)) {
		snprintf(err, errlen, "--group '%s': not a group (16 hex digits, as --groups "
			 "shows)", s->opt->group);
		return BBX_EXIT_USAGE;
	}
	r = bbx_j_load_sources(s, &srcs, err, errlen);
	if (r < 0)
		return r == -ENOMEM ? BBX_EXIT_FAILURE : BBX_EXIT_NOBOX;
	code = bbx_j_collect(s, &srcs, &gs, err, errlen);
	if (code)
		goto out;
	if (s->opt && s->opt->groups) {
		if (bbx_j_print_groups(s, &srcs, &gs, out, em, text) < 0) {
			snprintf(err, errlen, "out of memory");
			code = BBX_EXIT_FAILURE;
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
		if (bbx_j_in_group(s, &gs.v[i]))
			list_text(out, &gs.v[i].e, srcs.v[gs.v[i].src].sender, gs.v[i].sig.id);
	for (size_t i = 0; !text && i < srcs.n && !out->err; i++) {
		sd_journal *j;

		if (bbx_j_open(s, &srcs.v[i], &j, err, errlen) < 0) {
			if (!s->dir)
				break;
			bbx_msg(NULL, "%s", err); /* one sender's files: the others are read */
			err[0] = '\0';
			continue;
		}
		SD_JOURNAL_FOREACH(j) {
			const struct bbx_jgent *g = NULL;

			if (k < gs.n && gs.v[k].src == i &&
			    sd_journal_test_cursor(j, gs.v[k].cursor) > 0) {
				g = &gs.v[k++];
				e = g->e;
			} else {
				/* an entry that came in since: no group */
				bbx_j_read_entry(j, &e);
				if (!bbx_j_wanted(s, j, &e))
					continue;
			}
			if (s->opt && s->opt->group && (!g || !bbx_j_in_group(s, g)))
				continue;
			list_struct(em, j, &e, srcs.v[i].sender, g);
			if (out->err)
				break;
		}
		bbx_j_close(j);
	}
	code = err[0] ? BBX_EXIT_NOBOX : BBX_EXIT_CLEAN;
out:
	bbx_j_gset_free(&gs);
	bbx_j_srcs_free(&srcs);
	return code;
}
