/* SPDX-License-Identifier: MIT */
/*
 * journal.h - bb-extract's journal source (journal.c): boxes that
 * `bb-reap --journal` put into journal entries, read from the local journal
 * (--journal) or from a directory of journal files (--journal-directory, a
 * collector's systemd-journal-remote output, one sender per file).
 * Internal to bb-extract.
 */
#ifndef BBX_JOURNAL_H
#define BBX_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "emit.h"
#include "out.h"

struct opts;

/* The largest BB_BOX accepted: bb-reap --journal-box-max allows no more. */
#define BBX_JOURNAL_BOX_MAX ((size_t)256 << 20)

/* Which entries. */
struct bbx_jsel {
	const char *dir;     /* --journal-directory, or NULL: the local journal */
	pid_t       pid;     /* the box's pid (BB_PID), 0 for --list or --cursor */
	const char *machine; /* --machine: _MACHINE_ID, or NULL */
	const char *boot;    /* --boot: BB_BOOT_ID (with or without dashes), or NULL */
	const char *cursor;  /* --cursor: that entry only, or NULL */
	bool        untrusted; /* --list: entries root's bb-reap did not send too */
	const struct opts *opt; /* the command line: filters, --groups, --group,
				   the symboliser's options (NULL: none) */
};

/* What became of a lookup: the exit code bb-extract returns, or BBX_J_BOX. */
#define BBX_J_BOX (-1)

/*
 * bbx_journal_list - --list: one line (text) or object (@em: JSON, CBOR)
 * per entry bb-reap sent (with @s->untrusted, every entry with its
 * MESSAGE_ID, flagged), by sender, oldest first: time, sender, host,
 * machine, pid, uid, comm, state, whether the box was shipped, unit.
 * Returns an exit code (0, or 4 when the journal cannot be opened: @err
 * says why).
 */
int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen);

/* The box of an entry, and where it came from. */
struct bbx_jbox {
	void     *box;        /* malloc'ed BB_BOX: the caller frees it */
	size_t    len;
	long long uid;        /* the entry's BB_UID, -1 if it has none */
	char      sender[256];/* the collector's journal file it is in, "" locally */
	char      label[1024];/* "journal[ SENDER]: <host> pid <pid>" for messages */
};

/*
 * bbx_journal_box - the entry of @s->pid (and --machine, --boot) or of
 * @s->cursor, among those bb-reap sent: all that match must make one
 * claim (one sender, machine, boot, owner and start time), and its newest
 * entry is taken.  Returns BBX_J_BOX with @jb filled; or, for an entry
 * without BB_BOX, prints what it carries (text or @em) and returns 4 with
 * @err saying the box was not shipped; or 4 (no such entry, no journal),
 * 5 (several claims: why, and each claim with its cursor, are said on
 * standard error), 2 (a malformed id), 1 (out of memory).
 */
int bbx_journal_box(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		    bool text, struct bbx_jbox *jb, char *err, size_t errlen);

#endif /* BBX_JOURNAL_H */
