/* SPDX-License-Identifier: MIT */
/* version.c - the library's version, as built (BB_VERSION_* in blackbox.h
 * are the version a program was compiled against). */
#include <blackbox.h>
#include "internal.h"

#define BB_STR_(x) #x
#define BB_XSTR_(x) BB_STR_(x)

BB_EXPORT const char *bb_version(void)
{
	return BB_XSTR_(BB_VERSION_MAJOR) "." BB_XSTR_(BB_VERSION_MINOR) "."
	       BB_XSTR_(BB_VERSION_PATCH);
}

BB_EXPORT int bb_version_number(void)
{
	return BB_VERSION_MAJOR * 10000 + BB_VERSION_MINOR * 100 + BB_VERSION_PATCH;
}
