/* SPDX-License-Identifier: MIT */
/*
 * extract.c - bb-extract's work on boxes: open one (live or a snapshot),
 * extract it (preamble, records, --follow, the report), save a copy
 * (--save), extract every box of a directory (--all).  bb-extract.c reads
 * the command line and calls these; journal-box.c calls them for a box from a
 * journal entry.
 */
#include <blackbox.h>
#include <blackbox/reader.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "extract.h"
#include "spans.h"

/*
 * Poll period of --follow: from FOLLOW_POLL_MAX_NS down to
 * FOLLOW_POLL_MIN_NS while a writer fills its ring fast, back up when it
 * is quiet (next_period()).  The owner's liveness is asked about every
 * FOLLOW_LIVE_NS (its /proc/<pid>/maps is read each time).
 */
#define FOLLOW_POLL_MAX_NS (50 * 1000 * 1000)
#define FOLLOW_POLL_MIN_NS (500 * 1000)
#define FOLLOW_LIVE_NS     (50 * 1000 * 1000)

/* Where a box comes from: a pid, a path, or an entry of a directory. */
struct src {
	enum { SRC_PID, SRC_PATH, SRC_DIRENT } kind;
	pid_t pid;
	const char *path;   /* SRC_PATH */
	const char *dir;    /* SRC_PID, SRC_DIRENT (NULL = default) */
	int dirfd;          /* SRC_DIRENT */
	const char *name;   /* SRC_DIRENT */
};

volatile sig_atomic_t bbx_stop_requested;

/* ---- opening -------------------------------------------------------- */

static int src_open(const struct src *s, unsigned flags, struct bb_reader **r,
		    char *err, size_t errlen)
{
	switch (s->kind) {
	case SRC_PID:
		return bb_reader_open_pid(s->pid, s->dir, flags, r, err, errlen);
	case SRC_PATH:
		return bb_reader_open_path(s->path, flags, r, err, errlen);
	default:
		return bb_reader_openat(s->dirfd, s->name, flags, r, err, errlen);
	}
}

static void src_label(const struct src *s, char *buf, size_t len)
{
	switch (s->kind) {
	case SRC_PID:
		snprintf(buf, len, "pid %d", (int)s->pid);
		break;
	case SRC_PATH:
		snprintf(buf, len, "%s", s->path);
		break;
	default:
		snprintf(buf, len, "%s/%s", s->dir ? s->dir : BB_DEFAULT_DIR, s->name);
	}
}

/*
 * Open a box and decide how to read it: the live mapping while its owner
 * is alive (or for --follow), otherwise a snapshot (BB_OPEN_SNAPSHOT), so
 * a post-mortem read sees an immutable copy that nobody can truncate or
 * rewrite under us.  Returns 0 and *live, or a negative errno after
 * saying what is wrong (unless @quiet_enodata and the box is still being
 * created).
 */
static int open_box(const struct src *s, const struct bbx_opts *o, bool follow,
		    struct bb_reader **out, int *live, bool quiet_enodata)
{
	unsigned flags = o->any_owner ? BB_OPEN_ANY_OWNER : 0;
	char err[8192] = "", label[4200];
	struct bb_reader *r, *snap;
	int ret;

	ret = src_open(s, flags, &r, err, sizeof(err));
	if (ret < 0) {
		if (ret == -ENODATA && quiet_enodata)
			return ret;
		src_label(s, label, sizeof(label));
		if (ret == -ENOTUNIQ)
			bbx_msg(NULL, "%s", err); /* names every claim */
		else if (ret == -ESRCH && s->kind == SRC_PID && !err[0])
			bbx_msg(label, "no box of this process in %s",
			    s->dir ? s->dir : BB_DEFAULT_DIR);
		else if (err[0]) /* the reader's message names the file */
			bbx_msg(NULL, "%s%s", err, ret == -EPERM && !o->any_owner
			    ? " (--any-owner reads it anyway)" : "");
		else
			bbx_msg(label, "%s", strerror(-ret));
		return ret;
	}
	*live = bb_reader_liveness(r);
	/* the snapshot of the file just opened: a pid's by the path its box
	 * was found at (no second scan of the directory) */
	if (*live != BB_LIVENESS_ALIVE && !follow &&
	    (s->kind == SRC_PID ?
	     bb_reader_open_path(bb_reader_info(r)->path, flags | BB_OPEN_SNAPSHOT, &snap, err,
				 sizeof(err)) :
	     src_open(s, flags | BB_OPEN_SNAPSHOT, &snap, err, sizeof(err))) == 0) {
		const struct bb_box_info *a = bb_reader_info(r), *b = bb_reader_info(snap);

		/* the same file (not a newer box of the pid, not a replacement) */
		if (a->file_dev == b->file_dev && a->file_ino == b->file_ino) {
			bb_reader_close(r);
			r = snap;
		} else {
			bb_reader_close(snap);
		}
	}
	*out = r;
	return 0;
}

/* The box of o->path, or of o->pid.  0, or a negative errno after saying
 * what is wrong. */
int bbx_open_one(const struct bbx_opts *o, struct bb_reader **r, int *live)
{
	struct src src = { .kind = o->path ? SRC_PATH : SRC_PID,
			   .pid = o->pid, .path = o->path, .dir = o->dir };

	return open_box(&src, o, o->follow, r, live, false);
}

/* ---- extraction ----------------------------------------------------- */

static int walk(struct bbx_ctx *c, unsigned flags)
{
	bb_record_fn fn = c->opt->fmt == BBX_FMT_TEXT ? bbx_text_record : bbx_struct_record;
	int ret = bb_reader_walk(c->r, BB_WALK_MERGE | flags, fn, c);

	if (ret == -ENOMEM)
		bbx_msg(c->info->path, "out of memory");
	else if (ret == -ESTALE)
		bbx_msg(c->info->path, "box changed size while being read");
	else if (ret < 0 && ret != c->out->err)
		bbx_msg(c->info->path, "%s", strerror(-ret));
	return ret;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL); /* a signal cuts it short: fine */
}

/*
 * The next poll period: halved when a walk lost bytes or found a ring
 * advanced by more than an eighth of its size since the walk before
 * (the writer could lap the reader within a few more periods), doubled
 * when every ring advanced by less than a 64th.  @prev: each ring's
 * last_pos before the walk.  A ring's positions are byte counters of
 * everything written to it, so the differences are exact.
 */
static uint64_t next_period(const struct bbx_ctx *c, const uint64_t *prev, uint32_t nprev,
			    uint64_t lost_before, uint64_t lost_now, uint64_t period)
{
	bool fast = lost_now != lost_before, slow = true;

	for (uint32_t i = 0; i < c->nlost; i++) {
		const struct bb_stream_stats *st = bb_reader_stream_stats(c->r, i);
		uint64_t from = i < nprev ? prev[i] : 0, size = c->info->ring_size, d;

		/* a thread's log holds the segments it held at the last walk */
		if (st && st->log)
			size = (uint64_t)c->info->seg_size * (st->segments ? st->segments : 1);
		d = c->last_pos[i] > from ? c->last_pos[i] - from : 0;
		fast |= d > size / 8;
		slow &= d < size / 64;
	}
	if (fast)
		return period / 2 > FOLLOW_POLL_MIN_NS ? period / 2 : FOLLOW_POLL_MIN_NS;
	if (slow)
		return period * 2 < FOLLOW_POLL_MAX_NS ? period * 2 : FOLLOW_POLL_MAX_NS;
	return period;
}

static uint64_t lost_total(const struct bbx_ctx *c)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < c->nlost; i++)
		t += c->lost[i];
	return t;
}

int bbx_follow_fit(struct bbx_ctx *c, uint32_t n)
{
	uint64_t *lost, *pos;

	if (n <= c->nlost)
		return 0;
	lost = realloc(c->lost, n * sizeof(*lost));
	if (!lost)
		return -ENOMEM;
	c->lost = lost;
	pos = realloc(c->last_pos, n * sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	c->last_pos = pos;
	memset(lost + c->nlost, 0, (n - c->nlost) * sizeof(*lost));
	memset(pos + c->nlost, 0, (n - c->nlost) * sizeof(*pos));
	c->nlost = n;
	return 0;
}

/*
 * --follow: walk again every poll period until the owner is gone.  What
 * the writer overwrote before a walk could read it shows as a gap record
 * in the stream (its exact bytes, bb_record.gap_before), is counted per
 * ring for the summary (ctx.lost) and said on standard error once per
 * walk that lost any.
 */
static int follow(struct bbx_ctx *c)
{
	uint64_t period = FOLLOW_POLL_MAX_NS, since_live = FOLLOW_LIVE_NS, lost, now;
	uint64_t *prev = NULL;
	uint32_t nprev = 0;
	int ret = 0, live = BB_LIVENESS_ALIVE;

	lost = lost_total(c);
	for (;;) {
		if (bbx_out_flush(c->out)) {
			ret = c->out->err;
			break;
		}
		if (since_live >= FOLLOW_LIVE_NS) {
			live = bb_reader_liveness(c->r);
			since_live = 0;
		}
		if (nprev < c->nlost) {
			uint64_t *p = realloc(prev, c->nlost * sizeof(*prev));

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			prev = p;
		}
		nprev = c->nlost;
		memcpy(prev, c->last_pos, nprev * sizeof(*prev));
		sleep_ns(period);
		since_live += period;
		/* after the owner is gone (or on SIGINT) one last walk drains */
		ret = walk(c, BB_WALK_FOLLOW);
		if (ret)
			break;
		now = lost_total(c);
		if (now != lost)
			bbx_msg(c->info->path, "%llu bytes of records lost: the writer overwrote "
			    "them before they could be read (gap records in the output)",
			    (unsigned long long)(now - lost));
		period = next_period(c, prev, nprev, lost, now, period);
		lost = now;
		if (live != BB_LIVENESS_ALIVE || bbx_stop_requested)
			break;
	}
	free(prev);
	return ret;
}

/* Extract one open box.  Returns an exit code. */
int bbx_extract(const struct bbx_opts *o, struct bbx_out *out, struct bb_reader *r, int live,
		bool with_pid)
{
	struct bbx_ctx c = { .opt = o, .out = out, .r = r, .with_pid = with_pid };
	struct bbx_threads thr = { .r = r };
	struct bbx_spans spans = { 0 };
	struct bb_stream_stats tot;
	int ret, code;

	if (o->fmt == BBX_FMT_PERFETTO)
		return bbx_perfetto(o, out, r, live);
	c.info = bb_reader_info(r);
	bbx_em_init(&c.em, out, o->fmt == BBX_FMT_CBOR);
	if (o->fmt != BBX_FMT_TEXT)
		c.threads = &thr;
	c.spans = &spans;
	if (with_pid && o->fmt == BBX_FMT_TEXT) {
		char head[4400];
		int n = snprintf(head, sizeof(head), "== %s: pid %d (%s), %s ==",
				 c.info->path, (int)c.info->pid, c.info->comm,
				 bb_liveness_name(live));

		/* path and comm are anyone's bytes */
		bbx_put_escaped(out, head, n > 0 ? (size_t)n : 0);
		bbx_out_char(out, '\n');
	}
	if (o->follow) {
		if (bbx_follow_fit(&c, c.info->stream_count ? c.info->stream_count : 1)) {
			free(c.lost);
			free(c.last_pos);
			bbx_msg(NULL, "out of memory");
			return BBX_EXIT_FAILURE;
		}
	}
	ret = bbx_preamble(&c);
	if (!ret)
		ret = walk(&c, o->follow ? BB_WALK_FOLLOW : 0);
	if (!ret && o->follow)
		ret = follow(&c);
	free(c.scratch);
	if (!ret && c.threads && (ret = bbx_threads_finish(&thr, r)) == -ENOMEM)
		bbx_msg(NULL, "out of memory");
	if (ret == -ENOMEM || (ret < 0 && ret != out->err)) {
		free(c.lost);
		free(c.last_pos);
		bbx_threads_free(&thr);
		bbx_spans_free(&spans);
	}
	if (ret == -ENOMEM)
		return BBX_EXIT_FAILURE;
	if (ret < 0 && ret != out->err) /* the box, not the output: said already */
		return bbx_out_flush(out), BBX_EXIT_NOBOX;
	if (o->follow)
		live = bb_reader_liveness(r);
	bb_reader_total_stats(r, &tot);
	code = bbx_is_damaged(&c, &tot) ? BBX_EXIT_DAMAGED : BBX_EXIT_CLEAN;
	if (o->fmt == BBX_FMT_TEXT) {
		bbx_spans_text(&c, live);
		if (bbx_out_flush(out) == 0)
			bbx_summary_text(&c, live);
	} else {
		bbx_threads_ref(&thr, c.info, live, &c.crash);
		bbx_summary_struct(&c, live, code);
	}
	free(c.lost);
	free(c.last_pos);
	bbx_threads_free(&thr);
	bbx_spans_free(&spans);
	return code;
}

int bbx_save(const struct bbx_opts *o, struct bb_reader *r)
{
	const struct bb_box_info *in = bb_reader_info(r);
	int fd, ret;

	fd = open(o->save, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		bbx_msg(o->save, "%s%s", strerror(errno),
		    errno == EEXIST ? " (never overwritten)" : "");
		return BBX_EXIT_FAILURE;
	}
	ret = bb_reader_save(r, fd);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret) {
		bbx_msg(o->save, "cannot save %s: %s", in->path, ret == -ESTALE ?
		    "box changed size while being read" : strerror(-ret));
		unlink(o->save);
		return BBX_EXIT_FAILURE;
	}
	if (!o->quiet)
		bbx_msg(in->path, "saved to %s", o->save);
	return BBX_EXIT_CLEAN;
}

int bbx_all(const struct bbx_opts *o, struct bbx_out *out)
{
	const char *dir = o->dir ? o->dir : BB_DEFAULT_DIR;
	struct bb_box_entry *v = NULL;
	int code, worst = BBX_EXIT_CLEAN, dfd, opened = 0, failed = 0;
	size_t n = 0;

	code = bbx_scan(o, &v, &n);
	if (code)
		return code;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		bbx_msg(dir, "%s", strerror(errno));
		bb_reader_scan_free(v);
		return BBX_EXIT_NOBOX;
	}
	/* by pid and creation time (the scan's order) */
	for (size_t i = 0; i < n && !bbx_stop_requested; i++) {
		struct src src = { .kind = SRC_DIRENT, .dirfd = dfd,
				   .name = v[i].name, .dir = o->dir };
		struct bb_reader *r;
		int live;

		if (v[i].error) {
			bbx_say_not_a_box(&v[i]);
			failed += v[i].error != -ENODATA;
			continue;
		}
		if (open_box(&src, o, false, &r, &live, true) < 0) {
			failed++;
			continue;
		}
		opened++;
		code = bbx_extract(o, out, r, live, true);
		bb_reader_close(r);
		if (code == BBX_EXIT_FAILURE || out->err) {
			close(dfd);
			bb_reader_scan_free(v);
			return BBX_EXIT_FAILURE;
		}
		if (code > worst)
			worst = code;
	}
	close(dfd);
	bb_reader_scan_free(v);
	if (!opened && failed)
		return BBX_EXIT_NOBOX;
	if (!opened && !o->quiet)
		bbx_msg(dir, "no boxes");
	return worst;
}
