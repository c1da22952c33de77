/* SPDX-License-Identifier: MIT */
/*
 * sandbox.h - run bb-extract's symbolising child confined: a fresh image of
 * bb-extract (never a fork of the parent's memory, which holds the boxes
 * read so far), with an environment the parent chose, that drops to an
 * identity no more privileged than the box's owner, with no_new_privs,
 * no capabilities, limits on CPU, memory, files and processes, no core
 * dumps, and a wall-clock deadline the parent enforces by killing it.
 * The design and why: bb-extract(1), SYMBOLS.
 *
 * The parent side (bbx_sandbox_identity, bbx_sandbox_run) and the child
 * side (bbx_sandbox_confine) live here together so that what one promises
 * the other does.  Not thread-safe; bb-extract is single-threaded.
 */
#ifndef BBX_SANDBOX_H
#define BBX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* argv[1] that makes bb-extract the symbolising child (internal). */
#define BBX_SANDBOX_CHILD_ARG "--symbolizer-child"

/* Address space of the child (RLIMIT_AS): debug files are mapped whole. */
#define BBX_SANDBOX_MEM ((uint64_t)4 << 30)

/* Who the child runs as. */
struct bbx_sandbox_id {
	uid_t uid;
	gid_t gid;
	bool  drop;       /* change to uid/gid first (the caller is root) */
	char  home[256];  /* uid's home directory from passwd, "" if none */
};

/*
 * bbx_sandbox_identity - the identity that may parse the files named by a
 * box whose file belongs to @file_uid and whose header names @hdr_uid.
 * The box's owner is @file_uid (the kernel's word), or @hdr_uid when the
 * file belongs to root (a copy root made): never root unless both say so.
 * A root caller becomes the owner (keeping uid 0, without capabilities,
 * only for a box that is root's on both counts); another caller stays
 * itself when it is the owner or the owner is root (it has no more than
 * root); it cannot become a third user, and then -EPERM with @why saying
 * so.  Returns 0 or -EPERM.
 */
int bbx_sandbox_identity(uint32_t file_uid, uint32_t hdr_uid, struct bbx_sandbox_id *id,
			 char *why, size_t whylen);

/*
 * bbx_sandbox_run - start "/proc/self/exe BBX_SANDBOX_CHILD_ARG" with @in
 * (@inlen bytes) as its standard input, standard error on /dev/null, no
 * other descriptor, default signal dispositions and @env as its whole
 * environment; collect at most @cap bytes of its standard output into
 * @out.  A child still running @timeout_ms after the start is killed
 * (SIGKILL) and reaped; so is one that writes more than @cap bytes.
 * Returns 0 when the child exited with status 0 (*@outlen bytes in @out),
 * else a negative errno with @why saying what happened: -ETIMEDOUT (killed
 * at the deadline), -EINTR (killed by a signal), -EPROTO (exit status not
 * 0), -EMSGSIZE (too much output), or what starting it failed with.
 */
int bbx_sandbox_run(const void *in, size_t inlen, char *const env[], int timeout_ms,
		    char *out, size_t cap, size_t *outlen, char *why, size_t whylen);

/* What the child confines itself to (bbx_sandbox_confine). */
struct bbx_confine {
	uid_t    uid;
	gid_t    gid;
	bool     drop;      /* setgroups/setresgid/setresuid to uid/gid */
	unsigned cpu_s;     /* RLIMIT_CPU: SIGXCPU after this, SIGKILL 1 s later */
	bool     network;   /* debuginfod: may write its cache, open sockets,
			       start threads */
};

/*
 * bbx_sandbox_confine - in the child, before it reads anything a box
 * names: core dumps off, no file writes (unless @c->network), at most 64
 * descriptors (256), CPU and address-space limits, PR_SET_NO_NEW_PRIVS,
 * then the identity (supplementary groups cleared, real, effective and
 * saved ids changed and checked; uid 0 keeps no capability), no new
 * processes (unless @c->network), not dumpable (so not ptrace-able by the
 * uid it now is), killed if the parent dies.  Returns 0, or -errno with
 * @why saying which step failed: the caller must then stop.
 */
int bbx_sandbox_confine(const struct bbx_confine *c, char *why, size_t whylen);

#endif /* BBX_SANDBOX_H */
