/* SPDX-License-Identifier: MIT */
/*
 * names.c - names of record tags and of liveness verdicts, for output.
 * AS-safe.
 */
#include <blackbox/reader.h>

#include "internal.h"

BB_EXPORT const char *bb_tag_name(unsigned tag)
{
	static const char *const names[] = {
		[BB_TAG_STR] = "str",     [BB_TAG_I64] = "i64",
		[BB_TAG_U64] = "u64",     [BB_TAG_F64] = "f64",
		[BB_TAG_BOOL] = "bool",   [BB_TAG_BYTES] = "bytes",
		[BB_TAG_KV] = "kv",       [BB_TAG_EVENT] = "event",
		[BB_TAG_OWNER] = "owner", [BB_TAG_CRASH] = "crash",
		[BB_TAG_STATE] = "state",
		[BB_TAG_SPAN_BEGIN] = "span_begin", [BB_TAG_SPAN_END] = "span_end",
	};

	if (tag < sizeof(names) / sizeof(names[0]) && names[tag])
		return names[tag];
	return "unknown";
}

BB_EXPORT const char *bb_liveness_name(int liveness)
{
	switch (liveness) {
	case BB_LIVENESS_ALIVE:    return "alive";
	case BB_LIVENESS_EXITED:   return "exited";
	case BB_LIVENESS_CRASHED:  return "crashed";
	case BB_LIVENESS_CLOSED:   return "closed";
	case BB_LIVENESS_ORPHANED: return "orphaned";
	default:                   return "unknown";
	}
}
