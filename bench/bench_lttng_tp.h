/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_lttng_tp.h - the LTTng-UST tracepoint provider of
 * bench_lttng.c: bb_bench:kv, two strings, the record bb_write_kv() writes.
 * (LTTng-UST 2.13's provider header pattern: read once for the
 * declarations and again, in bench_lttng.c, to create the probes.)
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bb_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./bench_lttng_tp.h"

#if !defined(BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	bb_bench,
	kv,
	LTTNG_UST_TP_ARGS(const char *, key, const char *, value),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(key, key)
		lttng_ust_field_string(value, value)
	)
)

#endif /* BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
