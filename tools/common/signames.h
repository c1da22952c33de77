/* SPDX-License-Identifier: MIT */
/*
 * signames.h - names of signals and si_code values (signames.c), shared
 * by bb-extract and bb-reap.  Internal to the tools.
 */
#ifndef BBX_SIGNAMES_H
#define BBX_SIGNAMES_H

/* "SIGSEGV" for 11, or NULL if the number has no name here. */
const char *bbx_signal_name(int sig);
/* "SEGV_MAPERR" for (SIGSEGV, 1), "SI_USER" for (any, 0), or NULL. */
const char *bbx_sigcode_name(int sig, int code);

#endif /* BBX_SIGNAMES_H */
