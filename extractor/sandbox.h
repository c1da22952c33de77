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
 * The parent side (bbx_sandbox_identity, _start, _finish) and the child
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

/* Children bbx_sandbox_finish() runs at once, at most. */
#define BBX_SANDBOX_PARALLEL 4

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
 * box that belongs to @owner (who decides that: bbx_sym_opts.owner).
 * A root caller becomes the owner (keeping uid 0, without capabilities,
 * only for a box of root's); another caller stays itself when it is the
 * owner or the owner is root (it has no more than root); it cannot become
 * a third user, and then -EPERM with @why saying so.  Returns 0 or -EPERM.
 */
int bbx_sandbox_identity(uint32_t owner, struct bbx_sandbox_id *id, char *why,
			 size_t whylen);

/* CLOCK_MONOTONIC in milliseconds: the children's deadlines and the
 * symbol budgets (symbols.c) are counted on it. */
int64_t bbx_now_ms(void);

/* One child started by bbx_sandbox_start(), until bbx_sandbox_finish(). */
struct bbx_child {
	pid_t    pid;
	int      out;        /* its standard output, -1 once at EOF */
	int      pidfd;      /* readable when it exits; -1 if unsupported */
	char    *buf;        /* what it wrote ... */
	size_t   len, cap;   /* ... at most cap bytes */
	int      timeout_ms;
	int64_t  deadline;   /* CLOCK_MONOTONIC ms: kill at, then reap by */
	bool     killed, toobig, reaped;
	int      status;     /* waitpid() status once reaped */
	int      rc;         /* bbx_sandbox_finish(): 0 or -errno ... */
	char     why[160];   /* ... and what happened */
};

/*
 * bbx_sandbox_start - start "/proc/self/exe BBX_SANDBOX_CHILD_ARG" with @in
 * (@inlen bytes) as its standard input, standard error on /dev/null, no
 * other descriptor, default signal dispositions and @env as its whole
 * environment; its standard output will go to @buf (@cap bytes).  Returns
 * 0, or a negative errno with @c->why saying what failed (@c->rc too).
 */
int bbx_sandbox_start(struct bbx_child *c, const void *in, size_t inlen, char *const env[],
		      int timeout_ms, char *buf, size_t cap);

/*
 * bbx_sandbox_finish - collect the output of the @n children @c[0..n)
 * (n <= BBX_SANDBOX_PARALLEL; those with rc != 0 were not started and are
 * skipped) and reap
 * them, all at once.  A child still running @timeout_ms after its start is
 * killed (SIGKILL) and reaped; so is one that writes more than cap bytes;
 * one that cannot be reaped 2 s after SIGKILL (uninterruptible sleep on a
 * dead NFS server, say) is left behind rather than waited for.  Then
 * each child's rc is 0 when it exited with status 0 (len bytes in buf),
 * else a negative errno with why saying what happened: -ETIMEDOUT (killed at the
 * deadline, or left behind), -EINTR (killed by a signal), -EPROTO (exit
 * status not 0), -EMSGSIZE (too much output).
 */
void bbx_sandbox_finish(struct bbx_child *const *c, size_t n);

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
