/* SPDX-License-Identifier: MIT */
/*
 * resolve.h - bb-extract's symbolising child: the only code that opens and
 * parses the ELF and DWARF files a box names, with elfutils' libdwfl, in a
 * process confined by sandbox.c.  bb-extract becomes it when started as
 * "bb-extract BBX_SANDBOX_CHILD_ARG" (symbols.c does that, through
 * bbx_sandbox_start()).
 */
#ifndef BBX_RESOLVE_H
#define BBX_RESOLVE_H

/*
 * bbx_resolve_main - read one request (symwire.h) from standard input,
 * confine the process (bbx_sandbox_confine), symbolise the request's
 * frames of its one module and write the answer to standard output.
 * Returns the exit status: 0 when an answer was written (a module not
 * symbolised is an answer: "no" and why), 2 for a request that does not
 * decode, 1 when the answer could not be written.
 */
int bbx_resolve_main(void);

#endif /* BBX_RESOLVE_H */
