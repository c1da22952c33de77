/* SPDX-License-Identifier: MIT */
/*
 * sandbox.c - the symbolising child's confinement (sandbox.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

/* The sanitizers reserve terabytes of address space: no RLIMIT_AS there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BBX_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BBX_SANITIZED 1
#endif
#endif

/* A uid with no passwd entry gets this group ("nogroup" on Debian). */
#define NOGROUP ((gid_t)65534)

/* ---- parent ------------------------------------------------------------- */

int bbx_sandbox_identity(uint32_t owner, struct bbx_sandbox_id *id, char *why,
			 size_t whylen)
{
	uid_t me = geteuid();
	struct passwd *pw;

	memset(id, 0, sizeof(*id));
	if (me != 0) {
		/* we cannot change identity: parse as ourselves, which is
		 * the owner, or less than root */
		if (owner != me && owner != 0) {
			snprintf(why, whylen, "the box belongs to uid %u and we are uid %u: "
				 "its files are parsed only as their owner (run as root or "
				 "as uid %u)", (unsigned)owner, (unsigned)me, (unsigned)owner);
			return -EPERM;
		}
		id->uid = me;
		id->gid = getegid();
		return 0;
	}
	id->uid = owner;
	id->drop = true;
	pw = getpwuid(owner);
	id->gid = pw ? pw->pw_gid : NOGROUP;
	if (pw && pw->pw_dir && strlen(pw->pw_dir) < sizeof(id->home))
		snprintf(id->home, sizeof(id->home), "%s", pw->pw_dir);
	return 0;
}

int64_t bbx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* @fd moved to a descriptor >= 3 (0-2 are the child's stdio), or -1. */
static int above_stdio(int fd)
{
	int nfd;

	if (fd < 0 || fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd;
}

int bbx_sandbox_start(struct bbx_child *c, const void *in, size_t inlen, char *const env[],
		      int timeout_ms, char *buf, size_t cap)
{
	static char *const argv[] = { "bb-extract", BBX_SANDBOX_CHILD_ARG, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	struct sigaction old;
	sigset_t none, all;
	int infd, p[2] = { -1, -1 }, rc;

	memset(c, 0, sizeof(*c));
	c->out = c->pidfd = -1;
	c->buf = buf;
	c->cap = cap;
	c->timeout_ms = timeout_ms;
	c->deadline = bbx_now_ms() + timeout_ms;
	/* an inherited SIGCHLD = SIG_IGN would reap the child for us, and its
	 * status would be lost */
	if (sigaction(SIGCHLD, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		signal(SIGCHLD, SIG_DFL);
	/* the request in a memory file: written whole before the child
	 * exists, so no pipe capacity or SIGPIPE to think about */
	infd = above_stdio(memfd_create("bb-extract-request", MFD_CLOEXEC));
	if (infd < 0 || write(infd, in, inlen) != (ssize_t)inlen ||
	    lseek(infd, 0, SEEK_SET) != 0 || pipe2(p, O_CLOEXEC)) {
		c->rc = -errno;
		snprintf(c->why, sizeof(c->why), "cannot set up the symboliser: %s",
			 strerror(errno));
		if (infd >= 0)
			close(infd);
		return c->rc;
	}
	p[0] = above_stdio(p[0]);
	p[1] = above_stdio(p[1]);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&sa);
	posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&sa, &none);
	posix_spawnattr_setsigdefault(&sa, &all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, infd, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = p[0] < 0 || p[1] < 0 ? EMFILE
				  : posix_spawn(&c->pid, "/proc/self/exe", &fa, &sa, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&sa);
	close(infd);
	if (p[1] >= 0)
		close(p[1]);
	if (rc) {
		if (p[0] >= 0)
			close(p[0]);
		c->rc = -rc;
		snprintf(c->why, sizeof(c->why), "cannot start the symboliser: %s", strerror(rc));
		return c->rc;
	}
	c->out = p[0];
	/* a descriptor that polls readable when the child exits (Linux 5.3) */
	c->pidfd = above_stdio((int)syscall(SYS_pidfd_open, c->pid, 0));
	return 0;
}

static bool finished(const struct bbx_child *c)
{
	return c->rc || c->reaped;
}

/* Read what @c wrote; at EOF, close its end. */
static void drain(struct bbx_child *c)
{
	ssize_t r;

	if (c->len == c->cap) {
		c->toobig = true;
		kill(c->pid, SIGKILL);
		c->killed = true;
		r = 0;
	} else {
		r = read(c->out, c->buf + c->len, c->cap - c->len);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			return;
	}
	if (r <= 0) {
		close(c->out);
		c->out = -1;
		return;
	}
	c->len += (size_t)r;
}

static void try_reap(struct bbx_child *c)
{
	pid_t r = waitpid(c->pid, &c->status, WNOHANG);

	if (r == c->pid || (r < 0 && errno == ECHILD))
		c->reaped = true; /* ECHILD: not ours any more, status unknown */
}

/* The deadline of @c passed: kill it, or give up on reaping it. */
static void expire(struct bbx_child *c, int64_t now)
{
	if (!c->killed) {
		kill(c->pid, SIGKILL);
		c->killed = true;
		c->deadline = now + 2000;
		return;
	}
	c->rc = -ETIMEDOUT;
	snprintf(c->why, sizeof(c->why), "the symboliser did not end 2 s after it was "
		 "killed: left behind");
}

/* After the child is reaped: what happened, in c->rc and c->why. */
static void verdict(struct bbx_child *c)
{
	int st = c->status;

	if (c->out >= 0)
		close(c->out);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->out = c->pidfd = -1;
	if (c->rc)
		return;
	if (c->toobig) {
		c->rc = -EMSGSIZE;
		snprintf(c->why, sizeof(c->why), "the symboliser wrote more than %zu bytes and "
			 "was killed", c->cap);
	} else if (c->killed) {
		c->rc = -ETIMEDOUT;
		snprintf(c->why, sizeof(c->why), "the symboliser timed out after %d ms and was "
			 "killed", c->timeout_ms);
	} else if (WIFSIGNALED(st)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(st));

		c->rc = -EINTR;
		snprintf(c->why, sizeof(c->why), "the symboliser was killed by SIG%s",
			 abbrev ? abbrev : "?");
	} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		c->rc = -EPROTO;
		snprintf(c->why, sizeof(c->why), "the symboliser failed (exit status %d)",
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

void bbx_sandbox_finish(struct bbx_child *const *c, size_t n)
{
	struct pollfd pf[BBX_SANDBOX_PARALLEL];
	struct bbx_child *who[BBX_SANDBOX_PARALLEL];

	if (n > BBX_SANDBOX_PARALLEL)
		n = BBX_SANDBOX_PARALLEL;
	for (;;) {
		int64_t now = bbx_now_ms(), wake = INT64_MAX;
		size_t k = 0;
		int r;

		for (size_t i = 0; i < n; i++) {
			struct bbx_child *x = c[i];

			if (finished(x))
				continue;
			if (x->out < 0 && x->pidfd < 0)
				try_reap(x); /* no pidfd: look again in a millisecond */
			if (!finished(x) && now >= x->deadline)
				expire(x, now);
			if (finished(x))
				continue;
			wake = x->deadline < wake ? x->deadline : wake;
			if (x->out < 0 && x->pidfd < 0 && now + 1 < wake)
				wake = now + 1;
			if (k < sizeof(pf) / sizeof(pf[0]) && (x->out >= 0 || x->pidfd >= 0)) {
				pf[k] = (struct pollfd){ x->out >= 0 ? x->out : x->pidfd, POLLIN, 0 };
				who[k++] = x;
			}
		}
		if (wake == INT64_MAX)
			break;
		r = poll(pf, k, (int)(wake - now));
		for (size_t i = 0; r > 0 && i < k; i++) {
			if (!pf[i].revents)
				continue;
			if (pf[i].fd == who[i]->out)
				drain(who[i]);
			else
				try_reap(who[i]);
		}
	}
	for (size_t i = 0; i < n; i++)
		verdict(c[i]);
}

/* ---- child -------------------------------------------------------------- */

static int limit(int res, rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };

	return setrlimit(res, &rl) ? -errno : 0;
}

/* uid 0 without a single capability: what root owns, nothing else. */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	return d[0].effective | d[0].permitted | d[1].effective | d[1].permitted ? -EPERM : 0;
}

static int change_identity(const struct bbx_confine *c)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (setgroups(0, NULL) || setresgid(c->gid, c->gid, c->gid) ||
	    setresuid(c->uid, c->uid, c->uid))
		return -errno;
	if (getresuid(&r, &e, &s) || getresgid(&rg, &eg, &sg) || getgroups(0, NULL) != 0 ||
	    r != c->uid || e != c->uid || s != c->uid ||
	    rg != c->gid || eg != c->gid || sg != c->gid)
		return -EPERM;
	if (c->uid != 0 && setuid(0) == 0)
		return -EPERM; /* root must be gone for good */
	return c->uid == 0 ? drop_capabilities() : 0;
}

int bbx_sandbox_confine(const struct bbx_confine *c, char *why, size_t whylen)
{
	pid_t parent = getppid();
	const char *step;
	int rc;

#define STEP(what, call) do { step = what; if ((rc = (call))) goto fail; } while (0)
	STEP("RLIMIT_CORE", limit(RLIMIT_CORE, 0, 0));
	STEP("RLIMIT_FSIZE", c->network ? 0 : limit(RLIMIT_FSIZE, 0, 0));
	STEP("RLIMIT_NOFILE", c->network ? limit(RLIMIT_NOFILE, 256, 256)
					 : limit(RLIMIT_NOFILE, 64, 64));
	STEP("RLIMIT_CPU", limit(RLIMIT_CPU, c->cpu_s, c->cpu_s + 1));
#ifndef BBX_SANITIZED
	STEP("RLIMIT_AS", limit(RLIMIT_AS, BBX_SANDBOX_MEM, BBX_SANDBOX_MEM));
#endif
	STEP("PR_SET_NO_NEW_PRIVS", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0);
	if (c->drop)
		STEP("changing to the box owner's uid", change_identity(c));
	else if (geteuid() == 0)
		STEP("dropping capabilities", drop_capabilities());
	/* after the identity: the limit counts the new uid's processes */
	STEP("RLIMIT_NPROC", c->network ? 0 : limit(RLIMIT_NPROC, 0, 0));
	STEP("PR_SET_DUMPABLE", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) ? -errno : 0);
	/* set after the identity change, which clears it */
	STEP("PR_SET_PDEATHSIG", prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) ? -errno : 0);
	STEP("the parent is gone", getppid() != parent ? -ESRCH : 0);
	return 0;
#undef STEP
fail:
	snprintf(why, whylen, "cannot confine the symboliser (%s): %s", step, strerror(-rc));
	return rc;
}
