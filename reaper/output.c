/* SPDX-License-Identifier: MIT */
/*
 * reaper/output.c - bb-reap's log lines (stderr, one per action, so that
 * journald keeps a record) and JSON objects (stdout, one per decision).
 *
 * Entry names and header strings are untrusted bytes: any user can plant a
 * file in /dev/shm.  They are escaped on the way out so that a name cannot
 * forge a log line (newline, terminal escapes) or break the JSON.  Log
 * lines use the library's terminal escaper (bb_escape_text), like
 * bb-extract.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <blackbox/reader.h>

#include "../shared/json.h"
#include "msg.h"
#include "reap.h"

/* @s escaped (bb_escape_text) onto @f; strings here are names and paths. */
static void put_escaped(FILE *f, const char *s)
{
	char buf[4 * 4096 + 1];

	bb_escape_text(s, strnlen(s, 4096), buf, sizeof(buf));
	fputs(buf, f);
}

/* A name from a box or a directory entry, in quotes unless it is plain
 * (bbx_quote): "(pid 1 comm x, reaped, ...)" in a comm cannot pass for
 * the line's own words. */
static void put_quoted(FILE *f, const char *s)
{
	char buf[4 * 4096 + 3];

	bbx_quote(s, strnlen(s, 4096), buf, sizeof(buf));
	fputs(buf, f);
}

/* "bb-reap: <message>": messages may quote the directory names given and
 * the reader's messages, so the whole line is escaped. */
void reap_log(const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fputs("bb-reap: ", stderr);
	put_escaped(stderr, line);
	fputc('\n', stderr);
}

/*
 * A JSON string, escaped as bb-extract escapes one (the project's one
 * escaper, shared/json.h): UTF-8 names stay readable, C0 and C1 controls
 * become \u00XX, and each byte that is not valid UTF-8 U+FFFD, so the
 * output is always valid JSON whatever bytes a planted name holds.
 */
static void json_str(FILE *f, const char *s)
{
	char buf[BB__JSON_ESC_MAX(1024)];
	size_t n = strlen(s), k;

	fputc('"', f);
	while (n) {
		k = bb__json_cut((const uint8_t *)s, n, 1024);
		fwrite(buf, 1, bb__json_escape(buf, (const uint8_t *)s, k), f);
		s += k;
		n -= k;
	}
	fputc('"', f);
}

static void json_key_str(FILE *f, const char *key, const char *val)
{
	if (!val)
		return;
	fprintf(f, ",\"%s\":", key);
	json_str(f, val);
}

static void emit_json(const struct reap_event *ev)
{
	FILE *f = stdout;

	fputs("{\"decision\":", f);
	json_str(f, ev->decision);
	json_key_str(f, "dir", ev->dir);
	json_key_str(f, "name", ev->name);
	json_key_str(f, "reason", ev->reason);
	json_key_str(f, "detail", ev->detail);
	if (ev->have_box) {
		fprintf(f, ",\"pid\":%ld,\"starttime\":%llu,\"uid\":%lu",
			(long)ev->pid, (unsigned long long)ev->starttime,
			(unsigned long)ev->uid);
		json_key_str(f, "comm", ev->comm);
		json_key_str(f, "liveness", ev->liveness);
		json_key_str(f, "phase", ev->phase);
	}
	if (ev->size)
		fprintf(f, ",\"size\":%llu", (unsigned long long)ev->size);
	if (ev->age_s >= 0)
		fprintf(f, ",\"age_s\":%lld", (long long)ev->age_s);
	json_key_str(f, "archive", ev->archive);
	json_key_str(f, "journal", ev->journal);
	fputs("}\n", f);
}

/*
 * "bb-reap: reaped /dev/shm/blackbox.1.2.0 (pid 1 comm foo, orphaned,
 *  4194304 bytes, archived to /var/lib/blackbox/...)[: detail]"
 */
static void emit_log(const struct reap_event *ev)
{
	FILE *f = stderr;
	const char *sep = "";
	char path[2 * 4096 + 2];

	fprintf(f, "bb-reap: %s ", ev->decision);
	snprintf(path, sizeof(path), "%s%s%s", ev->dir && ev->name ? ev->dir : "",
		 ev->dir && ev->name ? "/" : "", ev->name ? ev->name : "");
	put_quoted(f, path);
	fputs(" (", f);
	if (ev->have_box) {
		fprintf(f, "pid %ld comm ", (long)ev->pid);
		put_quoted(f, ev->comm && *ev->comm ? ev->comm : "?");
		sep = ", ";
	}
	if (ev->reason) {
		fputs(sep, f);
		put_escaped(f, ev->reason);
		sep = ", ";
	}
	if (ev->size) {
		fprintf(f, "%s%llu bytes", sep, (unsigned long long)ev->size);
		sep = ", ";
	}
	if (ev->archive) {
		fprintf(f, "%sarchived to ", sep);
		put_escaped(f, ev->archive);
		sep = ", ";
	}
	if (ev->journal) {
		fprintf(f, "%sjournal entry: ", sep);
		put_escaped(f, ev->journal);
	}
	fputc(')', f);
	if (ev->detail) {
		fputs(": ", f);
		put_escaped(f, ev->detail);
	}
	fputc('\n', f);
}

void reap_emit(const struct reap_ctx *c, const struct reap_event *ev, bool always_log)
{
	if (always_log || c->o.verbose)
		emit_log(ev);
	if (c->o.json)
		emit_json(ev);
}
