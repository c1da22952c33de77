/* SPDX-License-Identifier: MIT */
/*
 * demangle.h - C++ names for the symbolising child (resolve.c): the one
 * call of the C++ runtime's demangler (demangle.cc).  bb-extract built
 * without a C++ compiler has none: names then stay as the binary has them.
 */
#ifndef BBX_DEMANGLE_H
#define BBX_DEMANGLE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Longest mangled name given to the demangler, bytes; longer ones stay
 * mangled (the C++ runtime's own demangler refuses names much longer). */
#define BBX_DEMANGLE_IN_MAX 1024u

/*
 * bbx_demangle - the demangled form of the mangled C++ name @name (at
 * most BBX_DEMANGLE_IN_MAX bytes: the caller checks), in memory from
 * malloc(), or NULL: not a mangled name, or out of memory.  For the
 * confined child only: the name is untrusted, and the demangler's time is
 * not bounded by the name's length (a name of 250 bytes can demangle to
 * gigabytes); the caller bounds it (resolve.c).  Not async-signal-safe.
 */
char *bbx_demangle(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* BBX_DEMANGLE_H */
