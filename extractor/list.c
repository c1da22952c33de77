/* SPDX-License-Identifier: MIT */
/*
 * list.c - bb-extract --list: one line per box of a directory, from its
 * header and ring table only, with what bb_reader_scan() found about its
 * claim; and the scan --all starts from.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "extract.h"
#include "signames.h"

/*
 * Both start from bb_reader_scan(): every entry under the prefix, opened
 * by the library and judged by its header and file owner (header and ring
 * table only, nothing else read), in pid and creation order.
 */
int bbx_scan(const struct bbx_opts *o, struct bb_box_entry **v, size_t *n)
{
	char err[512] = "";
	int ret = bb_reader_scan(o->dir, v, n, err, sizeof(err));

	if (ret == -ENOMEM) {
		bbx_msg(NULL, "out of memory");
		return BBX_EXIT_FAILURE;
	}
	if (ret < 0) {
		bbx_msg(NULL, "%s", err);
		return BBX_EXIT_NOBOX;
	}
	return BBX_EXIT_CLEAN;
}

/* Say why an entry is not a box, as opening it would (a box still being
 * created, -ENODATA, is not worth a message). */
void bbx_say_not_a_box(const struct bb_box_entry *e)
{
	if (e->error != -ENODATA)
		bbx_msg(NULL, "%s", e->problem);
}

static void fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char unit[] = "BKMGT";
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f%c", d, unit[u]);
}

void bbx_fmt_age(char *buf, size_t len, uint64_t sec)
{
	if (sec < 120)
		snprintf(buf, len, "%llus", (unsigned long long)sec);
	else if (sec < 7200)
		snprintf(buf, len, "%llum", (unsigned long long)(sec / 60));
	else if (sec < 172800)
		snprintf(buf, len, "%lluh", (unsigned long long)(sec / 3600));
	else
		snprintf(buf, len, "%llud", (unsigned long long)(sec / 86400));
}

/* What bb_reader_scan() found about a box's claim, for --list. */
static const struct {
	unsigned flag;
	const char *key;  /* JSON / CBOR "flags" member */
	const char *text; /* text table, after the path */
} claim_flags[] = {
	{ BB_BOX_UID_MISMATCH, "uid-mismatch",
	  "file owner is not the header's uid: never chosen" },
	{ BB_BOX_FOREIGN, "foreign",
	  "claims a running process whose box is another owner's" },
	{ BB_BOX_AMBIGUOUS, "ambiguous",
	  "boxes of different owners claim this pid: none chosen" },
};

static void list_one(const struct bbx_opts *o, struct bbx_out *out, struct bbx_em *em,
		     const struct bb_box_entry *e, uint64_t nowns)
{
	const struct bb_box_info *in = &e->info;
	const char *dir = o->dir ? o->dir : BB_DEFAULT_DIR;
	uint64_t age = nowns > in->created_ns ? (nowns - in->created_ns) / 1000000000u : 0;
	const char *live = bb_liveness_name(e->liveness);
	int signal = in->phase == BB_PHASE_CRASHED ? in->phase_signal : 0;
	const char *sig = e->liveness == BB_LIVENESS_CRASHED ? bbx_signal_name(signal) : NULL;
	uint64_t dropped = in->dropped_busy + in->dropped_nested + in->dropped_toobig +
			   in->dropped_important;
	char path[4400], line[512], size[16], used[16], rings[24], agebuf[16];
	char t[BBX_TIME_MAX], st[48], comm[16 * 4 + 1];
	int n;

	snprintf(path, sizeof(path), "%s/%s", dir, e->name);
	/* "crashed (SIGSEGV)"; "crashed" alone after bb_crash_record() with
	 * no fatal signal after it (signal 0) */
	if (e->liveness == BB_LIVENESS_CRASHED && sig)
		snprintf(st, sizeof(st), "%s (%s)", live, sig);
	else if (e->liveness == BB_LIVENESS_CRASHED && signal)
		snprintf(st, sizeof(st), "%s (signal %d)", live, signal);
	else
		snprintf(st, sizeof(st), "%s", live);

	if (o->fmt != BBX_FMT_TEXT) {
		bbx_em_map(em);
		bbx_em_kv_i64(em, "pid", in->pid);
		bbx_em_kv_str(em, "comm", in->comm);
		bbx_em_kv_str(em, "liveness", live);
		if (e->liveness == BB_LIVENESS_CRASHED) {
			bbx_em_kv_i64(em, "signal", signal);
			if (sig)
				bbx_em_kv_str(em, "signal_name", sig);
		}
		bbx_em_kv_str(em, "clock", bbx_clock_desc(in));
		bbx_em_kv_str(em, "clock_reason", bbx_clock_reason(in, false));
		bbx_em_kv_u64(em, "size", in->box_size);
		bbx_em_kv_u64(em, "streams_used", in->streams_used);
		bbx_em_kv_u64(em, "stream_count", in->stream_count);
		bbx_em_kv_u64(em, "used_bytes", in->used_bytes);
		bbx_em_kv_u64(em, "dropped", dropped);
		bbx_em_key(em, "created");
		bbx_em_str(em, t, bbx_fmt_time(t, (int64_t)in->created_ns));
		bbx_em_kv_u64(em, "age_s", age);
		bbx_em_kv_u64(em, "uid", in->uid);
		bbx_em_kv_u64(em, "file_uid", in->file_uid);
		bbx_em_kv_str(em, "path", path);
		bbx_unit_struct(em, in);
		if (e->flags & (BB_BOX_UID_MISMATCH | BB_BOX_FOREIGN | BB_BOX_AMBIGUOUS)) {
			bbx_em_key(em, "flags");
			bbx_em_array(em);
			for (size_t k = 0; k < sizeof(claim_flags) / sizeof(claim_flags[0]); k++)
				if (e->flags & claim_flags[k].flag)
					bbx_em_cstr(em, claim_flags[k].key);
			bbx_em_end(em);
		}
		bbx_em_end(em);
		bbx_em_eol(em);
		return;
	}
	fmt_size(size, sizeof(size), in->box_size);
	fmt_size(used, sizeof(used), in->used_bytes);
	snprintf(rings, sizeof(rings), "%u/%u", in->streams_used, in->stream_count);
	bbx_fmt_age(agebuf, sizeof(agebuf), age);
	/* the first 16 bytes of comm (anyone's bytes), escaped */
	if (in->comm[0])
		bb_escape_text(in->comm, strnlen(in->comm, 16), comm, sizeof(comm));
	else
		strcpy(comm, "-");
	n = snprintf(line, sizeof(line), "%-8d ", (int)in->pid);
	bbx_out_put(out, line, (size_t)n);
	bbx_out_str(out, comm);
	for (size_t k = strlen(comm); k < 16; k++)
		bbx_out_char(out, ' ');
	bbx_out_char(out, ' ');
	/* a unit name is checked for systemd's characters: nothing to escape */
	n = snprintf(line, sizeof(line), "%-18s %-8s %-7s %-8s %-8llu %-6s %-10s %-8u %-24s ", st,
		     size, rings, used, (unsigned long long)dropped, agebuf, bbx_clock_desc(in),
		     in->file_uid, in->unit[0] ? in->unit : "-");
	bbx_out_put(out, line, n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	bbx_put_escaped(out, path, strlen(path));
	for (size_t k = 0; k < sizeof(claim_flags) / sizeof(claim_flags[0]); k++)
		if (e->flags & claim_flags[k].flag) {
			bbx_out_str(out, "  [");
			bbx_out_str(out, claim_flags[k].text);
			bbx_out_char(out, ']');
		}
	bbx_out_char(out, '\n');
}

/*
 * --list: one line per box, from its header and ring table only (a box's
 * records are never read here: the work is the same for a box of any
 * size, and nothing follows a file's apparent size).  Boxes whose claim is
 * in doubt are listed with what is wrong.
 */
int bbx_list(const struct bbx_opts *o, struct bbx_out *out)
{
	struct bb_box_entry *v = NULL;
	struct timespec now;
	struct bbx_em em;
	uint64_t nowns;
	size_t n = 0;
	int code = bbx_scan(o, &v, &n);

	if (code)
		return code;
	clock_gettime(CLOCK_REALTIME, &now);
	nowns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	bbx_em_init(&em, out, o->fmt == BBX_FMT_CBOR);
	if (o->fmt == BBX_FMT_TEXT)
		bbx_out_str(out, "PID      COMM             LIVENESS           SIZE     STREAMS "
			    "USED     DROPPED  AGE    CLOCK      OWNER    UNIT                     PATH\n");
	for (size_t i = 0; i < n; i++) {
		if (v[i].error)
			bbx_say_not_a_box(&v[i]);
		else
			list_one(o, out, &em, &v[i], nowns);
	}
	bb_reader_scan_free(v);
	return BBX_EXIT_CLEAN;
}
