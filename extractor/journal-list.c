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

#define LIST_WIDTH 120 /* columns of a line of --list without --wide */

/* "crashed (SIGSEGV)", "oom-kill", "orphaned". */
static void liveness_text(const struct bbx_jentry *e, char *buf, size_t len)
{
	if (e->signal > 0 && e->signame[0])
		snprintf(buf, len, "%s (%s)", bbx_j_liveness(e), e->signame);
	else
		snprintf(buf, len, "%s", bbx_j_liveness(e));
}

static void list_text(struct bbx_out *o, const struct bbx_jgent *g, const char *sender,
		      bool wide)
{
	const struct bbx_jentry *e = &g->e;
	char line[4096], st[sizeof(e->liveness) + sizeof(e->signame) + 4], box[32], uid[24];
	char who[4 * BBX_J_SENDER_MAX + 2] = "", trust[128] = "", tm[32];
	int n;

	liveness_text(e, st, sizeof(st));
	if (!e->trusted)
		snprintf(trust, sizeof(trust), " [not bb-reap's: sent by uid %s over %s]",
			 e->uid_raw[0] ? e->uid_raw : "?", e->transport[0] ? e->transport : "?");
	if (!wide) {
		/* what an SRE reads first; the rest is --wide's */
		snprintf(tm, sizeof(tm), "%.10s %.8s", e->time, e->time + 11);
		n = snprintf(line, sizeof(line), "%-19s %-16.64s %-7lld %-15.64s %-18s %-4s %-16s ",
			     strlen(e->time) >= 19 ? tm : e->time, e->host[0] ? e->host : "-",
			     e->pid, e->comm[0] ? e->comm : "-", st, e->has_box ? "yes" : "no",
			     g->sig.id);
		if (n > 0 && (size_t)n < sizeof(line)) {
			size_t room = n < LIST_WIDTH ? (size_t)(LIST_WIDTH - n) : 1;
			const char *u = e->unit[0] ? e->unit : "-";

			/* a unit too long for the line is cut, marked with a '+' */
			snprintf(line + n, sizeof(line) - (size_t)n, "%.*s%s%s\n",
				 (int)(strlen(u) > room ? room - 1 : room), u,
				 strlen(u) > room ? "+" : "", trust);
		}
		bbx_out_str(o, line);
		return;
	}
	if (e->has_box && e->box_size >= 0)
		snprintf(box, sizeof(box), "%lld", e->box_size);
	else
		snprintf(box, sizeof(box), "not shipped");
	if (e->uid >= 0)
		snprintf(uid, sizeof(uid), "%lld", e->uid);
	else
		snprintf(uid, sizeof(uid), "-");
	if (sender[0]) {
		size_t k = bb_escape_text(sender, strlen(sender), who, sizeof(who) - 1);

		snprintf(who + k, sizeof(who) - k, "%*s", k < 24 ? (int)(24 - k) : 1, "");
	}
	snprintf(line, sizeof(line), "%s%-30s %-16s %-8lld %-6s %-16s %-18s %-12s %-16s %.8s %.8s "
		 "%-16s %s%s\n", who, e->time, e->host[0] ? e->host : "-", e->pid, uid,
		 e->comm[0] ? e->comm : "-", st, box, g->sig.id, e->machine, e->boot,
		 g->release[0] ? g->release : "-", e->unit[0] ? e->unit : "-", trust);
	bbx_out_str(o, line);
}

static void list_struct(struct bbx_em *em, const struct bbx_jgent *g, const char *sender)
{
	const struct bbx_jentry *e = &g->e;

	bbx_em_map(em);
	bbx_em_kv_str(em, "time", e->time);
	if (sender[0])
		bbx_em_kv_str(em, "sender", sender);
	bbx_em_kv_str(em, "host", g->host);
	bbx_em_kv_str(em, "machine_id", e->machine);
	bbx_em_kv_str(em, "boot_id", e->boot);
	bbx_em_kv_i64(em, "pid", e->pid);
	bbx_em_kv_str(em, "comm", g->comm);
	bbx_em_kv_i64(em, "uid", e->uid);
	bbx_em_kv_i64(em, "starttime", e->starttime);
	bbx_em_kv_str(em, "liveness", bbx_j_liveness(e));
	if (e->signal > 0) {
		bbx_em_kv_i64(em, "signal", e->signal);
		if (e->signame[0])
			bbx_em_kv_str(em, "signal_name", e->signame);
	}
	if (g->reason[0])
		bbx_em_kv_str(em, "reason", g->reason);
	if (g->unit[0])
		bbx_em_kv_str(em, "unit", g->unit);
	if (g->release[0])
		bbx_em_kv_str(em, "release", g->release);
	bbx_em_kv_i64(em, "box_size", e->box_size);
	bbx_em_key(em, "box");
	bbx_em_bool(em, e->has_box);
	bbx_em_key(em, "trusted");
	bbx_em_bool(em, e->trusted);
	bbx_em_key(em, "oom_kill");
	bbx_em_bool(em, e->oom);
	bbx_em_kv_str(em, "group", g->sig.id);
	bbx_em_kv_str(em, "top_frames", g->sig.top);
	if (g->sig.where[0])
		bbx_em_kv_str(em, "where", g->sig.where);
	bbx_em_kv_str(em, "cursor", g->cursor);
	bbx_em_kv_str(em, "message", g->message ? g->message : "");
	bbx_em_end(em);
	bbx_em_eol(em);
}

static const struct bbx_jgset *sort_gs;

/* Oldest first, newest last; entries of one time in the order read. */
static int by_time(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (sort_gs->v[x].usec != sort_gs->v[y].usec)
		return sort_gs->v[x].usec < sort_gs->v[y].usec ? -1 : 1;
	return x < y ? -1 : x > y;
}

int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen)
{
	bool wide = s->opt && s->opt->wide;
	struct bbx_jsrcs srcs;
	struct bbx_jgset gs;
	size_t *idx, n = 0;
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
	if (!(idx = malloc((gs.n + 1) * sizeof(*idx)))) {
		snprintf(err, errlen, "out of memory");
		code = BBX_EXIT_FAILURE;
		goto out;
	}
	for (size_t i = 0; i < gs.n; i++)
		if (bbx_j_in_group(s, &gs.v[i]))
			idx[n++] = i;
	sort_gs = &gs;
	qsort(idx, n, sizeof(*idx), by_time);
	if (text && wide)
		bbx_out_str(out, s->dir ? "SENDER                  TIME                           "
				 : "TIME                           ");
	if (text && wide)
		bbx_out_str(out, "HOST             PID      UID    COMM             LIVENESS"
			    "           BOX          GROUP            MACHINE  BOOT     RELEASE"
			    "          UNIT\n");
	if (text && !wide) {
		char head[256];

		/* the columns of list_text() */
		snprintf(head, sizeof(head), "%-19s %-16s %-7s %-15s %-18s %-4s %-16s UNIT\n",
			 "TIME (UTC)", "HOST", "PID", "COMM", "LIVENESS", "BOX", "GROUP");
		bbx_out_str(out, head);
	}
	for (size_t i = 0; i < n && !out->err; i++) {
		const struct bbx_jgent *g = &gs.v[idx[i]];

		if (text)
			list_text(out, g, srcs.v[g->src].sender, wide);
		else
			list_struct(em, g, srcs.v[g->src].sender);
	}
	free(idx);
	code = err[0] ? BBX_EXIT_NOBOX : BBX_EXIT_CLEAN;
out:
	bbx_j_gset_free(&gs);
	bbx_j_srcs_free(&srcs);
	return code;
}
