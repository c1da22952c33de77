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
static void liveness_text(const struct bbx_jgent *g, char *buf, size_t len)
{
	if (g->signal > 0 && g->signame[0])
		snprintf(buf, len, "%s (%s)", bbx_j_gliveness(g), g->signame);
	else
		snprintf(buf, len, "%s", bbx_j_gliveness(g));
}

/* @s escaped for a terminal into @buf (4 * @max + 1 bytes), at most @max
 * bytes of it; "-" for "". */
static const char *esc(const char *s, size_t max, char *buf)
{
	if (!s[0])
		return "-";
	buf[bb_escape_text(s, strnlen(s, max), buf, 4 * max + 1)] = '\0';
	return buf;
}

static void list_text(struct bbx_out *o, const struct bbx_jgent *g, const char *sender,
		      bool wide)
{
	char line[4096], st[160], box[32], uid[24], tm[BBX_TIME_MAX], t[BBX_TIME_MAX];
	char who[4 * BBX_J_SENDER_MAX + 2] = "", trust[128] = "";
	char host[4 * 64 + 1], comm[4 * 64 + 1], unit[4 * 256 + 1], rel[4 * 128 + 1];
	int n;

	liveness_text(g, st, sizeof(st));
	bbx_j_time(g->usec, t);
	esc(g->host, 64, host);
	esc(g->comm, 64, comm);
	if (!g->trusted)
		snprintf(trust, sizeof(trust), " [not bb-reap's: sent by uid %s over %s]",
			 g->uid_raw[0] ? g->uid_raw : "?", g->transport[0] ? g->transport : "?");
	if (!wide) {
		/* what an SRE reads first; the rest is --wide's */
		const char *u = esc(g->unit, 256, unit);

		snprintf(tm, sizeof(tm), "%.10s %.8s", t, t + 11);
		n = snprintf(line, sizeof(line), "%-19s %-16.64s %-7lld %-15.64s %-18s %-4s %-16s ",
			     strlen(t) >= 19 ? tm : t, g->host[0] ? host : "-", g->pid,
			     g->comm[0] ? comm : "-", st, g->has_box ? "yes" : "no", g->sig.id);
		if (n > 0 && (size_t)n < sizeof(line)) {
			size_t room = n < LIST_WIDTH ? (size_t)(LIST_WIDTH - n) : 1;

			/* a unit too long for the line is cut, marked with a '+' */
			snprintf(line + n, sizeof(line) - (size_t)n, "%.*s%s%s\n",
				 (int)(strlen(u) > room ? room - 1 : room), u,
				 strlen(u) > room ? "+" : "", trust);
		}
		bbx_out_str(o, line);
		return;
	}
	if (g->has_box && g->box_size >= 0)
		snprintf(box, sizeof(box), "%lld", g->box_size);
	else
		snprintf(box, sizeof(box), "not shipped");
	if (g->uid >= 0)
		snprintf(uid, sizeof(uid), "%lld", g->uid);
	else
		snprintf(uid, sizeof(uid), "-");
	if (sender[0]) {
		size_t k = bb_escape_text(sender, strlen(sender), who, sizeof(who) - 1);

		snprintf(who + k, sizeof(who) - k, "%*s", k < 24 ? (int)(24 - k) : 1, "");
	}
	snprintf(line, sizeof(line), "%s%-30s %-16s %-8lld %-6s %-16s %-18s %-12s %-16s %.8s %.8s "
		 "%-16s %s%s\n", who, t, host, g->pid, uid, comm, st, box, g->sig.id, g->machine,
		 g->boot, esc(g->release, 128, rel), esc(g->unit, 256, unit), trust);
	bbx_out_str(o, line);
}

static void list_struct(struct bbx_em *em, const struct bbx_jgent *g, const char *sender)
{
	char t[BBX_TIME_MAX];

	bbx_em_map(em);
	bbx_em_kv_str(em, "time", bbx_j_time(g->usec, t));
	if (sender[0])
		bbx_em_kv_str(em, "sender", sender);
	bbx_em_kv_str(em, "host", g->host);
	bbx_em_kv_str(em, "machine_id", g->machine);
	bbx_em_kv_str(em, "boot_id", g->boot);
	bbx_em_kv_i64(em, "pid", g->pid);
	bbx_em_kv_str(em, "comm", g->comm);
	bbx_em_kv_i64(em, "uid", g->uid);
	bbx_em_kv_i64(em, "starttime", g->starttime);
	bbx_em_kv_str(em, "liveness", bbx_j_gliveness(g));
	if (g->signal > 0) {
		bbx_em_kv_i64(em, "signal", g->signal);
		if (g->signame[0])
			bbx_em_kv_str(em, "signal_name", g->signame);
	}
	if (g->reason[0])
		bbx_em_kv_str(em, "reason", g->reason);
	if (g->unit[0])
		bbx_em_kv_str(em, "unit", g->unit);
	if (g->release[0])
		bbx_em_kv_str(em, "release", g->release);
	bbx_em_kv_i64(em, "box_size", g->box_size);
	bbx_em_key(em, "box");
	bbx_em_bool(em, g->has_box);
	bbx_em_key(em, "trusted");
	bbx_em_bool(em, g->trusted);
	bbx_em_key(em, "oom_kill");
	bbx_em_bool(em, g->oom);
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
