/* SPDX-License-Identifier: MIT */
/*
 * shared/double.h - the one printer of doubles of libblackbox and its
 * tools: the text of a value (bb_format_value, bb_dump, bb-extract's text)
 * and its JSON print a double alike.  Internal, do not use outside the
 * project.
 */
#ifndef BB_SHARED_DOUBLE_H
#define BB_SHARED_DOUBLE_H

#include <stddef.h>

/* Bytes bb__fmt_double() writes at most ("-1.2345678901234567e-308"). */
#define BB__DOUBLE_MAX 32

/*
 * bb__fmt_double - @d as the shortest decimal that reads back as the same
 * double (strtod() of the output gives @d again, and no decimal with fewer
 * significant digits does; among the shortest, the nearest to @d): 0.1 is
 * "0.1", not "0.10000000000000001".  Laid out as printf's %g with a
 * precision of 15 or the digit count when larger: trailing zeros dropped,
 * no '.' for an integer, exponent notation ("1e+300", "-2.5e-07") when
 * the decimal exponent is below -4 or at least that precision.  "-0" for
 * negative zero, "nan", "inf", "-inf" for the others (JSON says them in
 * its own way: json.c).  At most BB__DOUBLE_MAX bytes at @buf, no NUL;
 * returns their count.
 *
 * No malloc, no stdio, no locale, no libm, a bounded stack: AS-safe
 * (bb_dump() prints values from a signal handler).
 */
size_t bb__fmt_double(char *buf, double d);

#endif /* BB_SHARED_DOUBLE_H */
