/* SPDX-License-Identifier: MIT */
/*
 * journal-field.h - one field of a journal entry as bb-extract --journal
 * shows an entry without its box (journal-box.c): no sd-journal here, so
 * that the fuzzer (fuzz/fuzz_jentry.c) runs it on any bytes.
 */
#ifndef BBX_JOURNAL_FIELD_H
#define BBX_JOURNAL_FIELD_H

#include <stdbool.h>
#include <stddef.h>

#include "emit.h"
#include "out.h"

/* The most bytes of a field shown (BB_RECORDS, a MESSAGE ...): 1 MiB. */
#define BBX_J_SHOW_MAX (1u << 20)

/*
 * bbx_j_show_field - the field "NAME=value" of @l bytes at @p, when it is
 * one an entry without its box shows (MESSAGE, BB_*, _HOSTNAME,
 * _MACHINE_ID, its name made of [A-Z0-9_]): text to @o ("NAME=value",
 * each line of the value escaped, continuation lines indented), or a
 * member of the map @em is in.  Values of any length, cut at
 * BBX_J_SHOW_MAX.  Returns whether it was shown.
 */
bool bbx_j_show_field(const char *p, size_t l, struct bbx_out *o, struct bbx_em *em, bool text);

#endif /* BBX_JOURNAL_FIELD_H */
