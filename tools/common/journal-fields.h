/* SPDX-License-Identifier: MIT */
/*
 * journal-fields.h - the journal contract of the tools: the MESSAGE_ID of
 * the entries bb-reap --journal writes (reaper/journal-send.c) and
 * bb-extract --journal reads (extractor/journal-*.c), and the one table of
 * their BB_* field names.  What each field carries: bb-reap(8), JOURNAL.
 *
 * Either tool names a field only by its constant here (BBJ_PID is
 * "BB_PID"); tests/journal/journal_fields.c fails when a source of
 * extractor/, reaper/ or tools/ spells a BB_* field name of its own, and
 * when bb-reap(8) does not describe a field of the table.
 */
#ifndef BBX_JOURNAL_FIELDS_H
#define BBX_JOURNAL_FIELDS_H

/* Generated once with `systemd-id128 new`; never to change (the catalog,
 * systemd/blackbox.catalog, and every query use it). */
#define BB_JOURNAL_MESSAGE_ID "541b7f4a9be94cee9da4b63740198349"

/*
 * X(constant, "FIELD"): every BB_* field of an entry.  A name is what
 * journald accepts: [A-Z0-9_], at most 64 bytes, not starting with '_'.
 */
#define BB_JOURNAL_FIELDS(X)                                                  \
	/* the process and its box */                                         \
	X(BBJ_PID, "BB_PID")                                                  \
	X(BBJ_STARTTIME, "BB_STARTTIME")                                      \
	X(BBJ_BOOT_ID, "BB_BOOT_ID")                                          \
	X(BBJ_UID, "BB_UID")                                                  \
	X(BBJ_COMM, "BB_COMM")                                                \
	X(BBJ_CMDLINE, "BB_CMDLINE")                                          \
	X(BBJ_LIVENESS, "BB_LIVENESS")                                        \
	X(BBJ_FORMAT, "BB_FORMAT")                                            \
	X(BBJ_RELEASE, "BB_RELEASE")                                          \
	X(BBJ_BUILD_ID, "BB_BUILD_ID")                                        \
	X(BBJ_BOX_SIZE, "BB_BOX_SIZE")                                        \
	X(BBJ_BOX_PATH, "BB_BOX_PATH")                                        \
	X(BBJ_ARCHIVE, "BB_ARCHIVE")                                          \
	X(BBJ_NOT_ARCHIVED, "BB_NOT_ARCHIVED")                                \
	/* its unit, vouched for by systemd or only claimed */                \
	X(BBJ_UNIT, "BB_UNIT")                                                \
	X(BBJ_USER_UNIT, "BB_USER_UNIT")                                      \
	X(BBJ_CGROUP, "BB_CGROUP")                                            \
	X(BBJ_INVOCATION_ID, "BB_INVOCATION_ID")                              \
	X(BBJ_UNIT_VOUCHED, "BB_UNIT_VOUCHED")                                \
	X(BBJ_UNIT_VOUCHED_BY, "BB_UNIT_VOUCHED_BY")                          \
	X(BBJ_UNIT_CLAIM, "BB_UNIT_CLAIM")                                    \
	/* how it died */                                                     \
	X(BBJ_SIGNAL, "BB_SIGNAL")                                            \
	X(BBJ_SIGNAL_NAME, "BB_SIGNAL_NAME")                                  \
	X(BBJ_SIGNAL_CODE, "BB_SIGNAL_CODE")                                  \
	X(BBJ_SIGNAL_CODE_NAME, "BB_SIGNAL_CODE_NAME")                        \
	X(BBJ_FAULT_ADDR, "BB_FAULT_ADDR")                                    \
	X(BBJ_STACK_OVERFLOW, "BB_STACK_OVERFLOW")                            \
	X(BBJ_CRASH_RECORD, "BB_CRASH_RECORD")                                \
	X(BBJ_CRASH_KIND, "BB_CRASH_KIND")                                    \
	X(BBJ_CRASH_REASON, "BB_CRASH_REASON")                                \
	X(BBJ_CRASH_TID, "BB_CRASH_TID")                                      \
	X(BBJ_CRASH_THREAD, "BB_CRASH_THREAD")                                \
	X(BBJ_OOM_KILL, "BB_OOM_KILL")                                        \
	X(BBJ_STACK, "BB_STACK")                                              \
	X(BBJ_STACK_KINDS, "BB_STACK_KINDS")                                  \
	X(BBJ_STACK_HASH, "BB_STACK_HASH")                                    \
	/* a live owner's hang or snapshot (bb-reap --watch) */               \
	X(BBJ_EVENT, "BB_EVENT")                                              \
	X(BBJ_HANG_TID, "BB_HANG_TID")                                        \
	X(BBJ_HANG_THREAD, "BB_HANG_THREAD")                                  \
	X(BBJ_HANG_AGE_MS, "BB_HANG_AGE_MS")                                  \
	X(BBJ_HANG_DEADLINE_MS, "BB_HANG_DEADLINE_MS")                        \
	X(BBJ_HANG_KERNEL, "BB_HANG_KERNEL")                                  \
	X(BBJ_SNAPSHOT_REASON, "BB_SNAPSHOT_REASON")                          \
	X(BBJ_SNAPSHOT_MISSED, "BB_SNAPSHOT_MISSED")                          \
	/* what the box held */                                               \
	X(BBJ_RECORDS, "BB_RECORDS")                                          \
	X(BBJ_RECORDS_TOTAL, "BB_RECORDS_TOTAL")                              \
	X(BBJ_STATE_JSON, "BB_STATE_JSON")                                    \
	/* deaths not reported, and the box itself */                         \
	X(BBJ_SUPPRESSED, "BB_SUPPRESSED")                                    \
	X(BBJ_BUDGET_REMOVED, "BB_BUDGET_REMOVED")                            \
	X(BBJ_BOX_ATTACHED, "BB_BOX_ATTACHED")                                \
	X(BBJ_BOX_OMITTED, "BB_BOX_OMITTED")                                  \
	X(BBJ_BOX_ENCODING, "BB_BOX_ENCODING")                                \
	X(BBJ_BOX, "BB_BOX")

/* The constants: static const char BBJ_PID[] = "BB_PID"; and so on
 * (sizeof(BBJ_BOX) is the length of "BB_BOX=", a value's offset). */
#define BBJ__DEFINE(id, name) static const char id[] = name;
BB_JOURNAL_FIELDS(BBJ__DEFINE)
#undef BBJ__DEFINE

#endif /* BBX_JOURNAL_FIELDS_H */
