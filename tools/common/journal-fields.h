/* SPDX-License-Identifier: MIT */
/*
 * journal-fields.h - what bb-reap --journal writes (reaper/journal.c) and
 * bb-extract --journal reads (extractor/journal.c): the one MESSAGE_ID of
 * those entries.  The fields themselves: bb-reap(8), FIELDS.
 */
#ifndef BBX_JOURNAL_FIELDS_H
#define BBX_JOURNAL_FIELDS_H

/* Generated once with `systemd-id128 new`; never to change (the catalog,
 * systemd/blackbox.catalog, and every query use it). */
#define BB_JOURNAL_MESSAGE_ID "541b7f4a9be94cee9da4b63740198349"

#endif /* BBX_JOURNAL_FIELDS_H */
