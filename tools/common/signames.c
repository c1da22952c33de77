/* SPDX-License-Identifier: MIT */
/*
 * signames.c - names of signals and of their si_code values, for output
 * (bb-extract's crash block and --list, bb-reap's journal entries).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "signames.h"

const char *bbx_signal_name(int sig)
{
	static char names[65][16];
	const char *abbrev;

	if (sig <= 0 || sig > 64)
		return NULL;
	abbrev = sigabbrev_np(sig);
	if (!abbrev)
		return NULL;
	if (!names[sig][0])
		snprintf(names[sig], sizeof(names[sig]), "SIG%s", abbrev);
	return names[sig];
}

const char *bbx_sigcode_name(int sig, int code)
{
#define C(x) case x: return #x
	switch (code) { /* codes any signal can carry */
	C(SI_USER); C(SI_KERNEL); C(SI_QUEUE); C(SI_TIMER); C(SI_MESGQ);
	C(SI_ASYNCIO); C(SI_TKILL);
	default: break;
	}
	switch (sig) {
	case SIGSEGV:
		switch (code) {
		C(SEGV_MAPERR); C(SEGV_ACCERR); C(SEGV_BNDERR); C(SEGV_PKUERR);
		default: return NULL;
		}
	case SIGBUS:
		switch (code) {
		C(BUS_ADRALN); C(BUS_ADRERR); C(BUS_OBJERR); C(BUS_MCEERR_AR);
		C(BUS_MCEERR_AO);
		default: return NULL;
		}
	case SIGILL:
		switch (code) {
		C(ILL_ILLOPC); C(ILL_ILLOPN); C(ILL_ILLADR); C(ILL_ILLTRP);
		C(ILL_PRVOPC); C(ILL_PRVREG); C(ILL_COPROC); C(ILL_BADSTK);
		default: return NULL;
		}
	case SIGFPE:
		switch (code) {
		C(FPE_INTDIV); C(FPE_INTOVF); C(FPE_FLTDIV); C(FPE_FLTOVF);
		C(FPE_FLTUND); C(FPE_FLTRES); C(FPE_FLTINV); C(FPE_FLTSUB);
		default: return NULL;
		}
	case SIGTRAP:
		switch (code) {
		C(TRAP_BRKPT); C(TRAP_TRACE);
		default: return NULL;
		}
	default:
		return NULL;
	}
#undef C
}
