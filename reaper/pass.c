/* SPDX-License-Identifier: MIT */
/*
 * reaper/pass.c - one pass of bb-reap over the box directory (or, with
 * --watch, over the entries that changed): every entry is judged first
 * (judge.c); the boxes that are to go are collected here, and only then
 * is anything copied or removed, in this order:
 *
 *   plan     per owner uid, the boxes to go, newest first (the owner's
 *            last sign of life), then the owner's archives, newest first:
 *            the first ones that fit --keep and --max-archive-bytes are
 *            what the archive will hold.  A box to go beyond them is not
 *            copied (it would be pruned at once), a box larger than the
 *            quota is not copied at all (its records are not even read):
 *            both still go, and each says why it has no copy.
 *   prune    the archives beyond them, before any copy: the room the
 *            copies need is made first (reap_prune with the copies'
 *            reservations)
 *   copy     the planned copies, oldest first (so that archive times
 *            follow the boxes' order), then the boxes unlinked
 *   sync     one syncfs() of the archive when the boxes were in tmpfs
 *   prune    again, against the quotas alone: what the copies' real
 *            sizes left over (a compressed copy is smaller than planned)
 *
 * Ten thousand dead boxes of one owner with --keep 64 cost 64 copies, not
 * ten thousand copies and 9,936 prunes (BENCHMARKS.md "Reap").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blackbox/reader.h>

#include "../shared/grow.h"
#include "reap.h"

int reap_pass_add(struct reap_ctx *c, const char *name, const struct stat *st,
		  const struct reap_event *ev, int liveness, uint64_t bytes, int64_t last,
		  int64_t when)
{
	struct reap_cand *k;

	if (BB__GROW(&c->cands, &c->ccands, c->ncands + 1) < 0)
		return -ENOMEM;
	k = &c->cands[c->ncands++];
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->uid = st->st_uid;
	k->bytes = bytes;
	k->last = last;
	k->when = when;
	k->liveness = liveness;
	k->ev = *ev;
	k->ev.detail = NULL;
	snprintf(k->comm, sizeof(k->comm), "%s", ev->comm ? ev->comm : "");
	return 0;
}

/* By owner, then newest first (last sign of life), then name. */
static int newest_cmp(const void *x, const void *y)
{
	const struct reap_cand *a = *(const struct reap_cand *const *)x;
	const struct reap_cand *b = *(const struct reap_cand *const *)y;

	if (a->uid != b->uid)
		return a->uid < b->uid ? -1 : 1;
	if (a->last != b->last)
		return a->last > b->last ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Oldest first: the order copies are made and boxes removed. */
static int oldest_cmp(const void *x, const void *y)
{
	const struct reap_cand *a = x, *b = y;

	if (a->last != b->last)
		return a->last < b->last ? -1 : 1;
	return strcmp(a->name, b->name);
}

/*
 * Which boxes to go get a copy, and the room their owners' copies take
 * (@res, one per owner with a box to go; *@nres of them).  0 or -ENOMEM
 * (then nothing is copied: the boxes go as planned without a copy is not
 * what --archive asks, so they stay for the next pass).
 */
static int plan(struct reap_ctx *c, struct reap_reserve **res, size_t *nres)
{
	const uint64_t max = c->o.max_bytes;
	const long keep = c->o.keep;
	struct reap_cand **p;
	size_t n = c->ncands, i, j, r = 0;

	*res = NULL;
	*nres = 0;
	for (i = 0; i < n; i++) {
		struct reap_cand *k = &c->cands[i];

		k->copy = c->o.archive != NULL;
		if (k->copy && max && k->bytes > max) {
			k->copy = false;
			k->lost = true;
			k->why = "not archived: larger than its owner's archive quota "
				 "(--max-archive-bytes); its records were not read";
		}
	}
	if (!c->o.archive || (keep < 0 && !max) || !n)
		return 0;
	p = malloc(n * sizeof(*p));
	*res = calloc(n, sizeof(**res));
	if (!p || !*res) {
		free(p);
		free(*res);
		*res = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		p[i] = &c->cands[i];
	qsort(p, n, sizeof(*p), newest_cmp);
	for (i = 0; i < n; i = j) {
		struct reap_reserve *rv = &(*res)[r++];
		bool full = false;

		rv->uid = p[i]->uid;
		for (j = i; j < n && p[j]->uid == p[i]->uid; j++) {
			struct reap_cand *k = p[j];

			if (!k->copy)
				continue; /* larger than the quota: no room taken */
			if (!full && (keep < 0 || rv->count < keep) &&
			    (!max || rv->bytes + k->bytes <= max)) {
				rv->count++;
				rv->bytes += k->bytes;
				continue;
			}
			/* prefix of the newest: once one does not fit,
			 * no older one is kept either (what pruning does) */
			full = true;
			k->copy = false;
			k->why = "not archived: its owner's newer boxes fill its archive quota "
				 "(--keep, --max-archive-bytes)";
		}
	}
	free(p);
	*nres = r;
	return 0;
}

void reap_pass_end(struct reap_ctx *c)
{
	struct reap_reserve *res = NULL;
	size_t nres = 0;
	unsigned archived;

	if (plan(c, &res, &nres) < 0) {
		reap_log("error: out of memory planning the archive copies of %zu boxes: "
			 "they stay for the next run", c->ncands);
		c->errors++;
		c->ncands = 0;
		return;
	}
	/* the room first: archives the copies push out go before any copy */
	if (c->archfd >= 0 && nres)
		reap_prune(c, res, nres);
	free(res);
	if (c->ncands)
		qsort(c->cands, c->ncands, sizeof(*c->cands), oldest_cmp);
	archived = c->archived;
	for (size_t i = 0; i < c->ncands; i++)
		reap_finish(c, &c->cands[i]);
	c->ncands = 0;
	if (c->archived != archived && c->volatile_dir && syncfs(c->archfd) < 0) {
		reap_log("error: syncfs on %s: %s", c->o.archive, strerror(errno));
		c->errors++;
	}
	reap_prune(c, NULL, 0);
}
