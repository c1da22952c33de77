/* SPDX-License-Identifier: MIT */
/*
 * unit.h - the systemd unit of a box's owner (format 2.1): unit.c writes
 * it, reader_unit.c reads it.
 * Internal, do not use.
 */
#ifndef BB_UNIT_H
#define BB_UNIT_H

#include <stdbool.h>
#include <stddef.h>

struct bb_header;
struct bb_box_info;

/* bb_init: the cgroup path and $INVOCATION_ID into a fresh header.  Never
 * fails; what cannot be read stays zero. */
void bb__unit_record(struct bb_header *h);

/* Reader: the 2.1 fields of @h (a private copy), validated, into @in. */
void bb__unit_info(struct bb_box_info *in, const struct bb_header *h);

/* systemd's unit and user-manager unit of the cgroup @path ("" each when
 * there is none). */
void bb__unit_from_cgroup(const char *path, char *unit, size_t unitlen, char *user_unit,
			  size_t userlen);

/* 32 hex digits: what systemd puts in $INVOCATION_ID (reader_unit.c). */
bool bb__id128_hex(const char *s, size_t n);

/* A plain or instance unit name as systemd accepts it (@n bytes). */
bool bb__unit_name_valid(const char *s, size_t n);

#endif /* BB_UNIT_H */
