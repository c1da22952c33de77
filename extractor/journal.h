/* SPDX-License-Identifier: MIT */
/*
 * journal.h - bb-extract's journal source (journal.c): boxes that
 * `bb-reap --journal` put into journal entries, read from the local journal
 * (--journal) or from a directory of journal files (--journal-directory, a
 * collector's systemd-journal-remote output).  Internal to bb-extract.
 */
#ifndef BBX_JOURNAL_H
#define BBX_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "emit.h"
#include "out.h"

/* The largest BB_BOX accepted: bb-reap --journal-box-max allows no more. */
#define BBX_JOURNAL_BOX_MAX ((size_t)256 << 20)

/* Which entries. */
struct bbx_jsel {
	const char *dir;     /* --journal-directory, or NULL: the local journal */
	pid_t       pid;     /* the box's pid (BB_PID), 0 for --list */
	const char *machine; /* --machine: _MACHINE_ID, or NULL */
	const char *boot;    /* --boot: BB_BOOT_ID (with or without dashes), or NULL */
};

/* What became of a lookup: the exit code bb-extract returns, or BBX_J_BOX. */
#define BBX_J_BOX (-1)

/*
 * bbx_journal_list - --list: one line (text) or object (@em: JSON, CBOR)
 * per entry, oldest first: time, host, machine, pid, comm, state, whether
 * the box was shipped, unit.  Returns an exit code (0, or 4 when the
 * journal cannot be opened: @err says why).
 */
int bbx_journal_list(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		     bool text, char *err, size_t errlen);

/*
 * bbx_journal_box - the entry of @s->pid (and --machine, --boot): the newest
 * one, provided all that match come from one machine and boot.  Returns
 * BBX_J_BOX with *@box (malloc'ed, the caller frees) and *@len holding its
 * BB_BOX; or, for an entry without BB_BOX, prints what it carries (text
 * or @em) and returns 4 with @err saying the box was not shipped; or 4
 * (no such entry, no journal), 5 (entries of several machines or boots:
 * @err names them), 1 (out of memory).  @label gets "journal: <host> pid
 * <pid>" for messages.
 */
int bbx_journal_box(const struct bbx_jsel *s, struct bbx_out *out, struct bbx_em *em,
		    bool text, void **box, size_t *len, char *label, size_t labellen,
		    char *err, size_t errlen);

#endif /* BBX_JOURNAL_H */
