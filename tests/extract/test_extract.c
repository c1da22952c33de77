/* SPDX-License-Identifier: MIT */
/*
 * Description: bb-extract end to end, with real processes and real
 * signals: live extraction under load, post mortem after SIGKILL, _exit()
 * and abort(), clean exit, exec(), --list states, --follow, --save,
 * --all, options around the pid, io_uring vs write(2) output, and bad
 * input (each with its documented exit status, never a crash or a hang).
 *
 * BB_EXTRACT and BBX_WRITER (environment) name the programs under test.
 * Every test has a private directory as BLACKBOX_DIR / --dir.
 */
#include <criterion/criterion.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../helpers/common.h"

#define RUN_TIMEOUT_S 60 /* bb-extract must finish within this: no hang */

static char *dir;

static void setup(void)
{
	dir = bbt_mkdtemp();
	setenv("BLACKBOX_DIR", dir, 1);
}

static void teardown(void)
{
	bbt_rmdir(dir);
	free(dir);
}

TestSuite(extract, .init = setup, .fini = teardown, .timeout = 240);

static const char *prog(const char *var)
{
	const char *p = getenv(var);

	cr_assert(p && *p, "%s is not set", var);
	return p;
}

/* ---- processes ------------------------------------------------------ */

struct writer {
	pid_t pid;      /* as forked; the box's pid is the same */
	FILE *out;      /* its stdout */
	int   in;       /* its stdin */
};

/*
 * In a child of the test, before exec: die with the test.  A test that
 * fails an assertion, or that Criterion kills on its timeout, must not
 * leave a writer or bb-extract running.  @parent: the test's pid before
 * fork (the parent may be gone already when prctl() runs).
 */
static void die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(125);
}

/* Read one line from @f within @sec seconds; NULL on timeout or EOF. */
static char *read_line(FILE *f, char *buf, size_t len, int sec)
{
	struct pollfd p = { .fd = fileno(f), .events = POLLIN };

	if (poll(&p, 1, sec * 1000) <= 0)
		return NULL;
	return fgets(buf, (int)len, f);
}

/* Start bbx_writer with @argv (NULL-terminated, without argv[0]) and wait
 * for its "ready". */
static struct writer start_writer(const char *const *args)
{
	int o[2], i[2];
	struct writer w;
	char line[128];
	const char *argv[16];
	pid_t parent;
	int n = 0;

	argv[n++] = prog("BBX_WRITER");
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	cr_assert(pipe(o) == 0 && pipe(i) == 0);
	parent = getpid();
	w.pid = fork();
	cr_assert(w.pid >= 0);
	if (w.pid == 0) {
		die_with_parent(parent);
		dup2(o[1], 1);
		dup2(i[0], 0);
		close(o[0]);
		close(o[1]);
		close(i[0]);
		close(i[1]);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(o[1]);
	close(i[0]);
	w.out = fdopen(o[0], "r");
	w.in = i[1];
	if (!read_line(w.out, line, sizeof(line), 60) || strncmp(line, "ready ", 6)) {
		/* not left running behind the failed assertion */
		kill(w.pid, SIGKILL);
		waitpid(w.pid, NULL, 0);
		cr_assert_fail("writer not ready");
	}
	cr_assert_eq(atoi(line + 6), w.pid);
	return w;
}

/* Wait for the writer to end; returns its wait status. */
static int reap_writer(struct writer *w)
{
	int st = 0;

	cr_assert_eq(waitpid(w->pid, &st, 0), w->pid);
	fclose(w->out);
	close(w->in);
	return st;
}

static void kill_writer(struct writer *w)
{
	int st;

	kill(w->pid, SIGKILL);
	st = reap_writer(w);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

struct run {
	int   status;   /* exit status, or 128 + signal */
	char *out;      /* stdout, NUL-terminated */
	size_t out_len;
	char *err;      /* stderr */
};

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	cr_assert(f, "%s: %s", path, strerror(errno));
	do {
		if (cap - n < 65536) {
			cap = cap ? 2 * cap : 65536 * 4;
			buf = realloc(buf, cap + 1);
			cr_assert(buf);
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void free_run(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Start bb-extract with its output in files of the test directory. */
static pid_t spawn_extract(const char *const *args, const char *outp, const char *errp)
{
	const char *argv[32];
	pid_t pid, parent;
	int n = 0;

	argv[n++] = prog("BB_EXTRACT");
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	parent = getpid();
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		die_with_parent(parent);
		if (fo < 0 || fe < 0)
			_exit(126);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	return pid;
}

/* Wait for @pid at most @sec seconds; kill it and fail on timeout. */
static int wait_timeout(pid_t pid, int sec)
{
	int st, i;

	for (i = 0; i < sec * 100; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		cr_assert(r >= 0);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	cr_assert_fail("bb-extract hung (killed after %d s)", sec);
	return -1;
}

static struct run run_extract_v(const char *const *args)
{
	char outp[4200], errp[4200];
	struct run r;

	snprintf(outp, sizeof(outp), "%s/../%s.out", dir, strrchr(dir, '/') + 1);
	snprintf(errp, sizeof(errp), "%s/../%s.err", dir, strrchr(dir, '/') + 1);
	r.status = wait_timeout(spawn_extract(args, outp, errp), RUN_TIMEOUT_S);
	r.out = slurp(outp, &r.out_len);
	r.err = slurp(errp, NULL);
	unlink(outp);
	unlink(errp);
	/* never a crash, whatever the input */
	cr_assert(r.status < 128, "bb-extract died of signal %d; stderr: %s",
		  r.status - 128, r.err);
	return r;
}

/* run_extract("--dir", dir, ..., NULL) */
static struct run run_extract(const char *first, ...)
{
	const char *args[32];
	va_list ap;
	int n = 0;

	args[n++] = first;
	va_start(ap, first);
	while (n < 31 && (args[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	args[n] = NULL;
	return run_extract_v(args);
}

static const char *pidstr(pid_t pid)
{
	static char buf[4][16];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%d", (int)pid);
	return buf[k];
}

/* ---- checking text output -------------------------------------------- */

/*
 * Check every line of text output: "<time> <tid> <thread> <value>", or a
 * "-- gap: ..." line where a live writer overtook the reader.  Each
 * "tick th=T seq=S pad=P" event must have P = (S % 40) x ('a' + S % 26),
 * and per tid the seq must increase.  Returns the number of ticks; fills
 * @maxseq[th] (+1) and @count[th].
 */
static long check_text(const char *out, unsigned long *maxseq, unsigned long *count)
{
	const char *line = out;
	long ticks = 0;
	struct { int tid; long last; } seen[64];
	int nseen = 0;

	while (*line) {
		const char *nl = strchr(line, '\n');
		char time[64], thread[32], value[256], one[512];
		int tid, th, k, i;
		long seq;
		char pad[64] = "";

		cr_assert(nl, "unterminated line: %s", line);
		if (!strncmp(line, "-- gap: ", 8)) {
			/* a live writer overtook the reader: records lost
			 * while it read, said (FORMAT.md §13) */
			line = nl + 1;
			continue;
		}
		/* sscanf() measures its input: give it the line, not the rest
		 * of a many-megabyte output (quadratic) */
		snprintf(one, sizeof(one), "%.*s", (int)(nl - line), line);
		cr_assert(sscanf(one, "%63s %d %31s %255[^\n]", time, &tid, thread, value) == 4,
			  "bad line: %.*s", (int)(nl - line), line);
		cr_assert_eq(strlen(time), 30, "time: %s", time);
		cr_assert(time[4] == '-' && time[10] == 'T' && time[19] == '.' && time[29] == 'Z',
			  "time: %s", time);
		if (!strncmp(value, "tick ", 5)) {
			k = sscanf(value, "tick th=%d seq=%ld pad=%63s", &th, &seq, pad);
			cr_assert(k >= 2, "tick: %s", value);
			if (!strcmp(pad, "\"\""))
				pad[0] = '\0';
			cr_assert_eq(strlen(pad), (size_t)(seq % 40), "torn tick: %s", value);
			for (k = 0; pad[k]; k++)
				cr_assert_eq(pad[k], 'a' + seq % 26, "torn tick: %s", value);
			cr_assert(th >= 0 && th < 64);
			for (i = 0; i < nseen && seen[i].tid != tid; i++)
				;
			if (i == nseen) {
				cr_assert(nseen < 64);
				seen[nseen].tid = tid;
				seen[nseen++].last = -1;
			}
			cr_assert_gt(seq, seen[i].last, "tid %d: seq %ld after %ld",
				     tid, seq, seen[i].last);
			seen[i].last = seq;
			if (maxseq && (unsigned long)seq + 1 > maxseq[th])
				maxseq[th] = (unsigned long)seq + 1;
			if (count)
				count[th]++;
			ticks++;
		} else if (!strncmp(value, "v=", 2)) {
			const char *v = value + 2 + (value[2] == '"');

			cr_assert(v[0] == 't' && strchr(v, '-'), "kv: %s", value);
		}
		line = nl + 1;
	}
	return ticks;
}

/* ---- live ------------------------------------------------------------ */

Test(extract, live_under_load_every_record_intact)
{
	const char *args[] = { "-t", "4", "-n", "2000", "spin", NULL };
	struct writer w = start_writer(args);
	unsigned long max1[64] = { 0 }, max2[64] = { 0 };
	int round, th;

	for (round = 0; round < 3; round++) {
		unsigned long *m = round ? max2 : max1;
		struct run r = run_extract("--dir", dir, pidstr(w.pid), NULL);

		cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
		cr_assert_gt(check_text(r.out, m, NULL), 100);
		cr_assert(strstr(r.err, "alive"), "report: %s", r.err);
		free_run(&r);
	}
	/* the writers kept going while we read */
	for (th = 0; th < 4; th++)
		cr_assert_gt(max2[th], max1[th], "thread %d made no progress", th);

	/* JSON while it runs: one object per line, summary last */
	{
		struct run r = run_extract("--json", pidstr(w.pid), "--dir", dir, NULL);
		char *last;

		cr_assert_eq(r.status, 0, "%s", r.err);
		r.out[r.out_len - 1] = '\0';
		last = strrchr(r.out, '\n');
		cr_assert(last && !strncmp(last + 1, "{\"summary\":", 11));
		cr_assert(strstr(last, "\"liveness\":\"alive\""));
		free_run(&r);
	}
	kill_writer(&w);
}

/* ---- post mortem ----------------------------------------------------- */

/* All 60 iterations of each of 3 threads, complete and in order. */
static void check_complete(const char *out)
{
	unsigned long maxseq[64] = { 0 }, count[64] = { 0 };
	int th;

	check_text(out, maxseq, count);
	for (th = 0; th < 3; th++) {
		cr_assert_eq(count[th], 60, "thread %d: %lu ticks", th, count[th]);
		cr_assert_eq(maxseq[th], 60);
	}
	cr_assert(strstr(out, " v=t2-59\n") || strstr(out, " v=\"t2-59\"\n"));
	cr_assert(strstr(out, " marker=before-exec\n") ||
		  strstr(out, " marker=\"before-exec\"\n"));
}

Test(extract, post_mortem_after_sigkill)
{
	const char *args[] = { "-t", "3", "-n", "60", "wait", NULL };
	struct writer w = start_writer(args);
	struct run r;

	kill_writer(&w);
	r = run_extract(pidstr(w.pid), "--dir", dir, NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
	check_complete(r.out);
	cr_assert(strstr(r.err, "orphaned"), "report: %s", r.err);
	cr_assert(strstr(r.err, " 0 corrupt"), "report: %s", r.err);
	free_run(&r);
	/* the box stays for the next reader */
	cr_assert_eq(bbt_count_prefix(dir, BB_NAME_PREFIX), 1);
}

/* A writer that ends by itself (@mode), then a post-mortem extraction. */
static void post_mortem_self(const char *mode, int want_sig)
{
	const char *args[] = { "-t", "3", "-n", "60", mode, NULL };
	struct writer w = start_writer(args);
	int st = reap_writer(&w);
	struct run r;

	if (want_sig)
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == want_sig);
	else
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	r = run_extract("--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
	check_complete(r.out);
	free_run(&r);
}

Test(extract, post_mortem_after__exit)
{
	post_mortem_self("_exit", 0);
}

Test(extract, post_mortem_after_abort)
{
	post_mortem_self("abort", SIGABRT);
}

Test(extract, clean_exit_leaves_nothing)
{
	const char *args[] = { "-t", "2", "-n", "10", "exit", NULL };
	struct writer w = start_writer(args);
	int st = reap_writer(&w);
	struct run r;

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(bbt_count_prefix(dir, BB_NAME_PREFIX), 0);
	r = run_extract("--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(r.status, 4, "status %d", r.status);
	cr_assert(!strncmp(r.err, "bb-extract: ", 12), "%s", r.err);
	cr_assert_eq(r.out_len, 0);
	free_run(&r);
}

Test(extract, exec_selects_the_new_box)
{
	const char *args[] = { "-t", "1", "-n", "5", "exec", NULL };
	struct writer w = start_writer(args);  /* "ready" comes from the new image */
	struct run r;
	char *line;

	cr_assert_eq(bbt_count_prefix(dir, BB_NAME_PREFIX), 2);
	r = run_extract("--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "marker=after-exec") || strstr(r.out, "marker=\"after-exec\""),
		  "%s", r.out);
	cr_assert(!strstr(r.out, "before-exec"), "old image's box was chosen");
	free_run(&r);

	/* --list: the new box alive, the old one orphaned, same pid */
	r = run_extract("--list", "--dir", dir, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	line = strstr(r.out, "alive");
	cr_assert(line, "%s", r.out);
	cr_assert(strstr(r.out, "orphaned"), "%s", r.out);
	free_run(&r);

	kill_writer(&w);
	/* dead now: the newest box it left is still the after-exec one */
	r = run_extract("--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strstr(r.out, "before-exec"));
	free_run(&r);
}

/* ---- --list ----------------------------------------------------------- */

/* The state column of pid's line in --list output. */
static void expect_state(const char *out, pid_t pid, const char *state)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\n%d ", (int)pid);
	p = strstr(out, want);
	cr_assert(p, "pid %d not listed:\n%s", (int)pid, out);
	p = strchr(p + 1, '\n');
	cr_assert(p);
	cr_assert(memmem(strstr(out, want), (size_t)(p - strstr(out, want)), state, strlen(state)),
		  "pid %d is not %s:\n%s", (int)pid, state, out);
}

Test(extract, list_states)
{
	const char *a_wait[] = { "-t", "1", "-n", "5", "wait", NULL };
	const char *a_exit[] = { "-t", "1", "-n", "5", "_exit", NULL };
	struct writer alive = start_writer(a_wait), killed = start_writer(a_wait);
	struct writer exited = start_writer(a_exit);
	struct run r;

	kill_writer(&killed);
	reap_writer(&exited);
	r = run_extract("--list", "--dir", dir, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(!strncmp(r.out, "PID ", 4), "%s", r.out);
	expect_state(r.out, alive.pid, "alive");
	expect_state(r.out, killed.pid, "orphaned");
	expect_state(r.out, exited.pid, "orphaned");
	free_run(&r);

	r = run_extract("--list", "--json", "--dir", dir, NULL);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "\"liveness\":\"alive\""));
	cr_assert(strstr(r.out, "\"liveness\":\"orphaned\""));
	free_run(&r);
	kill_writer(&alive);

	r = run_extract("--list", "--dir", "/nonexistent/bbx", NULL);
	cr_assert_eq(r.status, 4);
	free_run(&r);
}

/* ---- --follow --------------------------------------------------------- */

Test(extract, follow_sees_new_records_and_ends_with_the_writer)
{
	const char *args[] = { "stdin", NULL };
	struct writer w = start_writer(args);
	char outp[4200], errp[4200], line[64];
	const char *fargs[] = { "--follow", "--dir", dir, pidstr(w.pid), NULL };
	pid_t ex;
	char *out;
	int i, status;

	snprintf(outp, sizeof(outp), "%s.follow.out", dir);
	snprintf(errp, sizeof(errp), "%s.follow.err", dir);
	ex = spawn_extract(fargs, outp, errp);
	usleep(300 * 1000); /* it is polling now */
	for (i = 0; i < 20; i++) {
		dprintf(w.in, "w after-start-%d\n", i);
		cr_assert(read_line(w.out, line, sizeof(line), 10));
	}
	/* every record written after it started shows up, in order */
	for (i = 0; i < 500; i++) {
		out = slurp(outp, NULL);
		if (strstr(out, "after-start-19\n") || strstr(out, "after-start-19\"\n"))
			break;
		free(out);
		out = NULL;
		usleep(10000);
	}
	cr_assert(out, "records written after --follow started never appeared");
	cr_assert(strstr(out, "after-start-0") < strstr(out, "after-start-19"));
	free(out);
	cr_assert_eq(waitpid(ex, &status, WNOHANG), 0, "--follow ended while the writer lives");

	kill_writer(&w);
	status = wait_timeout(ex, 10);
	cr_assert_eq(status, 0, "status %d", status);
	out = slurp(errp, NULL);
	cr_assert(strstr(out, "orphaned"), "%s", out);
	free(out);
	unlink(outp);
	unlink(errp);
}

/*
 * Does @pid catch @sig yet (its handler shows in /proc/<pid>/status,
 * SigCgt)?  Waits up to @sec seconds; false if it never does or exits.
 * The readiness signal of a program that stops on a signal: sending it
 * before the handler is set kills the program instead.
 */
static bool wait_catches(pid_t pid, int sig, int sec)
{
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int i = 0; i < sec * 100; i++) {
		FILE *f = fopen(path, "r");
		unsigned long long mask = 0;

		if (!f)
			return false;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "SigCgt: %llx", &mask) == 1)
				break;
		fclose(f);
		if (mask & (1ull << (sig - 1)))
			return true;
		usleep(10000);
	}
	return false;
}

Test(extract, follow_stops_on_sigint_with_its_report)
{
	const char *args[] = { "-t", "1", "-n", "5", "wait", NULL };
	struct writer w = start_writer(args);
	char outp[4200], errp[4200];
	const char *fargs[] = { "--follow", "--dir", dir, pidstr(w.pid), NULL };
	pid_t ex;
	char *err;
	int status;

	snprintf(outp, sizeof(outp), "%s.follow.out", dir);
	snprintf(errp, sizeof(errp), "%s.follow.err", dir);
	ex = spawn_extract(fargs, outp, errp);
	cr_assert(wait_catches(ex, SIGINT, RUN_TIMEOUT_S), "bb-extract never caught SIGINT");
	kill(ex, SIGINT);
	status = wait_timeout(ex, RUN_TIMEOUT_S);
	/* not killed by it (128 + 2): it ends the follow, with the report */
	cr_assert_eq(status, 0, "status %d", status);
	err = slurp(errp, NULL);
	cr_assert(strstr(err, "records intact"), "no report:\n%s", err);
	free(err);
	kill_writer(&w);
	unlink(outp);
	unlink(errp);
}

/* The start of every record of tag @tag in ring @ring of @pid's box. */
struct positions {
	uint32_t ring;
	uint8_t tag;
	uint64_t *pos;
	size_t n, cap;
};

static int pos_cb(const struct bb_record *rec, void *arg)
{
	struct positions *p = arg;

	if (rec->stream != p->ring || rec->tag != p->tag)
		return 0;
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 1024;
		p->pos = realloc(p->pos, p->cap * sizeof(*p->pos));
		cr_assert(p->pos);
	}
	p->pos[p->n++] = rec->pos;
	return 0;
}

/* The number after "KEY": in @line, or -1. */
static long long json_num(const char *line, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(line, k);
	return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

/*
 * A writer that outpaces a throttled --follow: 100,000 records of one
 * size through a 64 KiB ring while bb-extract is blocked on a full pipe
 * nobody reads.  Whatever it missed, it says exactly: the bytes lost of
 * the writer's ring in its summary, and the gap records' lost_bytes
 * together, are the records written and not printed times their size.
 */
static void follow_misses(const char *const *args, const char *burst)
{
	struct writer w = start_writer(args);
	const char *argv[] = { prog("BB_EXTRACT"), "--follow", "--json", "--dir", dir,
			       pidstr(w.pid), NULL };
	const unsigned long n = 100000;
	struct positions pos = { .tag = BB_TAG_U64 };
	long long ring = -1, gap_bytes = 0, summary_lost = -1, stride;
	unsigned long printed = 0;
	char errp[4200], line[8192], *buf = NULL;
	size_t cap = 0, len = 0;
	struct bb_reader *r;
	pid_t ex, parent = getpid();
	FILE *f;
	int o[2], status;

	snprintf(errp, sizeof(errp), "%s.follow.err", dir);
	cr_assert_eq(pipe(o), 0);
	ex = fork();
	cr_assert(ex >= 0);
	if (ex == 0) {
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		die_with_parent(parent);
		dup2(o[1], 1);
		dup2(fe, 2);
		close(o[0]);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(o[1]);
	f = fdopen(o[0], "r");
	cr_assert(f);
	/* its first walk printed what the box holds: the last "esc" record
	 * (plain fgets: the stream buffers what poll() would not see) */
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "\"bad "))
			break;
	cr_assert(strstr(line, "\"bad "), "--follow never printed the box's records");
	/* the burst, while nobody reads bb-extract's output */
	dprintf(w.in, "%s %lu\n", burst, n);
	cr_assert(read_line(w.out, line, sizeof(line), RUN_TIMEOUT_S), "writer did not answer");
	dprintf(w.in, "q\n");
	cr_assert_eq(waitpid(w.pid, &status, 0), w.pid);
	fclose(w.out);
	close(w.in);
	/* now read it all, a little at a time */
	for (;;) {
		size_t k;

		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 1 << 20;
			buf = realloc(buf, cap + 1);
			cr_assert(buf);
		}
		k = fread(buf + len, 1, 4096, f);
		if (!k)
			break;
		len += k;
		usleep(100);
	}
	buf[len] = '\0';
	fclose(f);
	cr_assert_eq(wait_timeout(ex, RUN_TIMEOUT_S), 0);

	for (char *l = buf, *e; *l; l = e + 1) {
		e = strchr(l, '\n');
		cr_assert(e, "unterminated line");
		*e = '\0';
		/* the summary first: its "threads" hold each thread's last
		 * record, "type" and all */
		if (!strncmp(l, "{\"summary\"", 10)) {
			const char *rs = strstr(l, "\"streams\":");

			cr_assert(rs, "%s", l);
			cr_assert_geq(ring, 0, "no record of the burst printed");
			/* the writer's ring in the summary's rings array */
			for (const char *q = rs; (q = strstr(q, "{\"stream\":")); q++)
				if (json_num(q, "stream") == ring)
					summary_lost = json_num(q, "lost_bytes");
		} else if (strstr(l, "\"type\":\"u64\"")) {
			printed++;
			ring = json_num(l, "stream");
		} else if (strstr(l, "\"type\":\"gap\"")) {
			gap_bytes += json_num(l, "lost_bytes");
		}
	}
	free(buf);
	cr_assert_lt(printed, n, "the writer never outpaced --follow: the test shows nothing");

	/* the records' size: the distance between two of them in the box */
	pos.ring = (uint32_t)ring;
	cr_assert_eq(bb_reader_open_pid(w.pid, dir, BB_OPEN_SNAPSHOT, &r, NULL, 0), 0);
	bb_reader_walk(r, 0, pos_cb, &pos);
	bb_reader_close(r);
	cr_assert_geq(pos.n, 2);
	stride = (long long)(pos.pos[1] - pos.pos[0]);
	for (size_t i = 2; i < pos.n; i++)
		cr_assert_eq((long long)(pos.pos[i] - pos.pos[i - 1]), stride);
	free(pos.pos);

	cr_assert_eq(summary_lost, (long long)(n - printed) * stride,
		     "summary: %lld bytes lost, but %lu of %lu records (%lld bytes each) "
		     "were not printed", summary_lost, n - printed, n, stride);
	cr_assert_eq(gap_bytes, summary_lost, "gap records: %lld bytes, summary %lld",
		     gap_bytes, summary_lost);
	unlink(errp);
}

Test(extract, follow_reports_exactly_the_bytes_it_missed)
{
	const char *args[] = { "-c", "1", "-R", "65536", "stdin", NULL };

	follow_misses(args, "b");
}

/* The same from a thread that starts writing after --follow began: its
 * log is found by a later walk, and counted like the others. */
Test(extract, follow_counts_what_a_new_threads_log_missed)
{
	const char *args[] = { "-c", "2", "-R", "65536", "stdin", NULL };

	follow_misses(args, "B");
}

/* ---- --save, --all, options ------------------------------------------ */

Test(extract, save_then_path_reads_the_same)
{
	const char *args[] = { "-t", "3", "-n", "60", "wait", NULL };
	struct writer w = start_writer(args);
	char save[4200];
	struct run r, s;

	snprintf(save, sizeof(save), "%s/saved.box", dir);
	r = run_extract("--save", save, "--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	free_run(&r);
	/* never overwrite */
	r = run_extract("--dir", dir, pidstr(w.pid), "--save", save, NULL);
	cr_assert_eq(r.status, 1, "status %d", r.status);
	cr_assert(strstr(r.err, "exists"), "%s", r.err);
	free_run(&r);
	kill_writer(&w);

	r = run_extract("--path", save, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	check_complete(r.out);
	s = run_extract(pidstr(w.pid), "--dir", dir, NULL);
	cr_assert_eq(s.status, 0);
	cr_assert_str_eq(r.out, s.out);
	free_run(&r);
	free_run(&s);
}

Test(extract, all_extracts_every_box)
{
	const char *args[] = { "-t", "1", "-n", "7", "_exit", NULL };
	struct writer a = start_writer(args), b = start_writer(args);
	struct run r;

	reap_writer(&a);
	reap_writer(&b);
	r = run_extract("--all", "--dir", dir, "--json", NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		char want[64];

		snprintf(want, sizeof(want), "\"pid\":%d,", (int)a.pid);
		cr_assert(strstr(r.out, want));
		snprintf(want, sizeof(want), "\"pid\":%d,", (int)b.pid);
		cr_assert(strstr(r.out, want));
	}
	cr_assert(strstr(strstr(r.out, "{\"summary\"") + 1, "{\"summary\""), "two summaries");
	free_run(&r);
}

Test(extract, usage_errors)
{
	static const char *const bad[][4] = {
		{ "--dir", "/tmp", NULL },          /* nothing to read */
		{ "--bogus", "1", NULL },
		{ "--json", "--cbor", "1", NULL },
		{ "12x", NULL },
		{ "1", "2", NULL },
		{ "--follow", "--all", NULL },
		{ "--save", "/tmp/x", "--list", NULL },
		{ "--path", NULL },
	};
	struct run r;
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = run_extract_v(bad[i]);
		cr_assert_eq(r.status, 2, "%s: status %d", bad[i][0], r.status);
		cr_assert(!strncmp(r.err, "bb-extract: ", 12), "%s", r.err);
		cr_assert(strstr(r.err, "--help"), "%s", r.err);
		free_run(&r);
	}
	r = run_extract("--help", NULL);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "Exit status"));
	free_run(&r);
	r = run_extract("--version", NULL);
	cr_assert_eq(r.status, 0);
	free_run(&r);
}

Test(extract, options_before_or_after_the_pid)
{
	const char *args[] = { "-t", "1", "-n", "3", "_exit", NULL };
	struct writer w = start_writer(args);
	struct run a, b;

	reap_writer(&w);
	a = run_extract(pidstr(w.pid), "--json", "--dir", dir, NULL);
	b = run_extract("--json", "--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(a.status, 0, "%s", a.err);
	cr_assert_eq(b.status, 0, "%s", b.err);
	cr_assert(a.out[0] == '{');
	cr_assert_str_eq(a.out, b.out);
	free_run(&a);
	free_run(&b);
}

/* The io_uring and write(2) paths write the same bytes, to a file and to
 * a pipe, for an output of many buffers. */
Test(extract, uring_and_plain_write_the_same)
{
	const char *args[] = { "-t", "2", "-n", "3000", "-s", "16777216", "-R", "1048576",
			       "_exit", NULL };
	struct writer w = start_writer(args);
	const char *fmts[] = { "--json", "--cbor", "--quiet" };
	unsigned i;

	reap_writer(&w);
	for (i = 0; i < 3; i++) {
		struct run u = run_extract("--uring", fmts[i], "--dir", dir, pidstr(w.pid), NULL);
		struct run p = run_extract("--no-uring", fmts[i], "--dir", dir, pidstr(w.pid), NULL);

		cr_assert_eq(u.status, 0, "%s", u.err);
		cr_assert_eq(p.status, 0, "%s", p.err);
		cr_assert_gt(u.out_len, 4 * 65536, "only %zu bytes", u.out_len);
		cr_assert_eq(u.out_len, p.out_len);
		cr_assert(!memcmp(u.out, p.out, u.out_len), "outputs differ (%s)", fmts[i]);
		free_run(&u);
		free_run(&p);
	}
	/* through a pipe too: ordered writes */
	{
		char cmd[8192];
		int st;

		snprintf(cmd, sizeof(cmd),
			 "set -e; '%s' --uring --json --dir '%s' %d | cat > '%s/u.json'; "
			 "'%s' --no-uring --json --dir '%s' %d > '%s/p.json'; "
			 "cmp '%s/u.json' '%s/p.json'",
			 prog("BB_EXTRACT"), dir, (int)w.pid, dir,
			 prog("BB_EXTRACT"), dir, (int)w.pid, dir, dir, dir);
		st = system(cmd);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pipe output differs");
	}
}

/* ---- bad input --------------------------------------------------------- */

/* A real post-mortem box of 3 threads, saved as @path; returns its bytes. */
static char *make_box(const char *path, size_t *len)
{
	const char *args[] = { "-t", "3", "-n", "60", "_exit", NULL };
	struct writer w = start_writer(args);
	struct run r;
	char *buf;

	reap_writer(&w);
	r = run_extract("--save", path, "--dir", dir, pidstr(w.pid), NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	free_run(&r);
	buf = slurp(path, len);
	cr_assert_gt(*len, BB_HEADER_SIZE);
	return buf;
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, p, n), (ssize_t)n);
	close(fd);
}

/* bb-extract --path @path (and --json) must say so and exit @want. */
static void expect_path(const char *path, int want, const char *what)
{
	const char *fmts[] = { "--quiet", "--json", "--cbor" };
	unsigned i;

	for (i = 0; i < 3; i++) {
		struct run r = run_extract(fmts[i], "--path", path, NULL);

		cr_assert_eq(r.status, want, "%s (%s): status %d, stderr: %s",
			     what, fmts[i], r.status, r.err);
		cr_assert(!strncmp(r.err, "bb-extract: ", 12), "%s: stderr: %s", what, r.err);
		cr_assert(strchr(r.err, '\n'), "%s", what);
		if (want == 4)
			cr_assert_eq(r.out_len, 0, "%s: output for a non-box", what);
		free_run(&r);
	}
}

Test(extract, bad_files_are_refused)
{
	char box[4200], p[4200];
	size_t len;
	char *buf = make_box((snprintf(box, sizeof(box), "%s/good.box", dir), box), &len);
	struct bb_header h;

	memcpy(&h, buf, sizeof(h));

	snprintf(p, sizeof(p), "%s/empty", dir);
	write_file(p, "", 0);
	expect_path(p, 4, "empty file");

	snprintf(p, sizeof(p), "%s/short", dir);
	write_file(p, buf, 100);
	expect_path(p, 4, "shorter than a header");

	snprintf(p, sizeof(p), "%s/truncated", dir);
	write_file(p, buf, len / 2);
	{
		/* half a box: refused as a whole, or read and reported damaged */
		struct run r = run_extract("--path", p, NULL);

		cr_assert(r.status == 4 || r.status == 3, "truncated: %d %s", r.status, r.err);
		free_run(&r);
	}

	snprintf(p, sizeof(p), "%s/magic", dir);
	buf[0] ^= 0x55;
	write_file(p, buf, len);
	buf[0] ^= 0x55;
	expect_path(p, 4, "wrong magic");

	snprintf(p, sizeof(p), "%s/major", dir);
	{
		uint16_t v = BB_FORMAT_MAJOR + 1, old;

		memcpy(&old, buf + 8, 2);
		memcpy(buf + 8, &v, 2);
		write_file(p, buf, len);
		memcpy(buf + 8, &old, 2);
	}
	expect_path(p, 4, "newer major version");

	snprintf(p, sizeof(p), "%s/garbage", dir);
	{
		char *g = malloc(1 << 20);
		unsigned s = 12345;
		size_t i;

		for (i = 0; i < (1u << 20); i++)
			g[i] = (char)((s = s * 1103515245u + 12345u) >> 16);
		write_file(p, g, 1 << 20);
		free(g);
	}
	expect_path(p, 4, "random bytes");

	snprintf(p, sizeof(p), "%s/link", dir);
	cr_assert(symlink(box, p) == 0);
	expect_path(p, 4, "symlink");

	snprintf(p, sizeof(p), "%s/subdir", dir);
	cr_assert(mkdir(p, 0700) == 0);
	expect_path(p, 4, "directory");

	snprintf(p, sizeof(p), "%s/missing", dir);
	expect_path(p, 4, "no such file");

	expect_path("/dev/null", 4, "character device");

	if (geteuid() == 0) {
		/* a file another user planted, claiming to be root's box */
		snprintf(p, sizeof(p), "%s/other-user", dir);
		write_file(p, buf, len);
		cr_assert(chown(p, 12345, 12345) == 0);
		expect_path(p, 4, "other user's file");
		{
			struct run r = run_extract("--any-owner", "--path", p, NULL);

			cr_assert_eq(r.status, 0, "--any-owner: %s", r.err);
			free_run(&r);
		}
	}
	free(buf);
}

/* First record of the @nth segment (in table order) that holds a writer
 * thread's records (not the main thread's): its offset in the file. */
static size_t first_record(const char *buf, size_t len, unsigned nth)
{
	struct bb_header h;

	memcpy(&h, buf, sizeof(h));
	cr_assert_eq(h.version_major, 3);
	cr_assert_leq(h.seg_table_offset + (uint64_t)h.seg_count * BB_SEG_DESC_SIZE, len);
	for (uint32_t i = 0; i < h.seg_count; i++) {
		struct bb_seg_desc d;

		memcpy(&d, buf + h.seg_table_offset + (uint64_t)i * BB_SEG_DESC_SIZE, sizeof(d));
		if (BB_SEG_STATE(d.own) < BB_SEG_OPEN || d.tid == h.pid || d.head == d.start)
			continue;
		if (nth-- == 0)
			return (size_t)(h.seg_data_offset + (uint64_t)i * h.seg_size);
	}
	cr_assert_fail("no segment %u of a writer thread", nth);
	return 0;
}

/* Damage inside a valid box: reported, partial output, exit 3; never a crash. */
Test(extract, damaged_box_partial_output)
{
	char box[4200], p[4200];
	size_t len, off;
	char *buf = make_box((snprintf(box, sizeof(box), "%s/good.box", dir), box), &len);
	struct bb_record_hdr rh;
	int ring, kind;

	for (kind = 0; kind < 4; kind++) {
		char *b = malloc(len);

		memcpy(b, buf, len);
		/* a segment of one of the writer threads */
		ring = 1;
		off = first_record(b, len, (unsigned)ring);
		memcpy(&rh, b + off, sizeof(rh));
		switch (kind) {
		case 0: rh.seq ^= 0x100; break;        /* seq/position mismatch */
		case 1: rh.len = 65528; break;         /* length past head */
		case 2: rh.len = 3; break;             /* shorter than an envelope */
		case 3: /* value that is not the shape of its tag */
			memset(b + off + BB_RECORD_HDR_SIZE, 0xff,
			       BB_RECORD_STRIDE(rh.len) - BB_RECORD_HDR_SIZE);
			break;
		}
		memcpy(b + off, &rh, sizeof(rh));
		snprintf(p, sizeof(p), "%s/damaged%d", dir, kind);
		write_file(p, b, len);
		free(b);
		{
			struct run r = run_extract("--path", p, NULL);

			cr_assert_eq(r.status, 3, "damage %d: status %d: %s", kind, r.status, r.err);
			cr_assert(strstr(r.err, "damaged"), "%s", r.err);
			/* the other rings are intact and printed */
			cr_assert_geq(!!strstr(r.out, " v=t0-59\n") + !!strstr(r.out, " v=t1-59\n") +
				      !!strstr(r.out, " v=t2-59\n"), 2, "%s", r.out);
			free_run(&r);
			r = run_extract("--json", "--path", p, NULL);
			cr_assert_eq(r.status, 3);
			cr_assert(strstr(r.out, "\"status\":\"damaged\""));
			free_run(&r);
		}
	}
	/* every byte of ring data scrambled, one box at a time: no crash */
	{
		char *b = malloc(len);
		unsigned s = 777, i;

		for (i = 0; i < 20; i++) {
			size_t k;

			memcpy(b, buf, len);
			for (k = 0; k < 200; k++) {
				s = s * 1103515245u + 12345u;
				b[BB_HEADER_SIZE + (s >> 4) % (len - BB_HEADER_SIZE)] ^= (char)(s >> 24);
			}
			snprintf(p, sizeof(p), "%s/scrambled", dir);
			write_file(p, b, len);
			struct run r = run_extract("--json", "--path", p, NULL);

			cr_assert(r.status == 0 || r.status == 3 || r.status == 4,
				  "status %d", r.status);
			free_run(&r);
		}
		free(b);
	}
	free(buf);
}

/* ---- --threads: the hang view ----------------------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The line of the --threads table naming thread @name, or fail. */
static const char *thread_line(const char *out, const char *name, char *buf, size_t len)
{
	char key[32];
	const char *p;
	size_t n;

	snprintf(key, sizeof(key), " %-16s ", name);
	p = strstr(out, key);
	cr_assert_not_null(p, "no line for thread %s in:\n%s", name, out);
	while (p > out && p[-1] != '\n')
		p--;
	n = strcspn(p, "\n");
	cr_assert_lt(n, len);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/* "850ms", "7.3s", "12m" ... in ns (a lower bound: the printed digits). */
static uint64_t age_ns(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!strncmp(end, "ms", 2))
		return (uint64_t)(v * 1e6);
	if (*end == 's')
		return (uint64_t)(v * 1e9);
	if (*end == 'm')
		return (uint64_t)(v * 60e9);
	if (*end == 'h')
		return (uint64_t)(v * 3600e9);
	cr_assert_fail("age '%s'", s);
	return 0;
}

/* The "age_ns" of thread @name in --threads --json output. */
static long long json_thread_age(const char *out, const char *name)
{
	char key[48];
	const char *p;

	snprintf(key, sizeof(key), "\"thread\":\"%s\"", name);
	p = strstr(out, key);
	cr_assert_not_null(p, "no %s in %s", name, out);
	return json_num(p, "age_ns");
}

Test(extract, threads_alive_at_the_crash_read_running_and_the_state_table_is_beside)
{
	const char *args[] = { "cancel", NULL };
	struct writer w = start_writer(args);
	char line[512], name[32], state[16], age[16];
	unsigned long long recs;
	struct run r;
	int tid;

	/* The worker's stack was taken at the crash record; the program
	 * then cancelled it (its log retired): it was alive at the crash. */
	r = run_extract(pidstr(w.pid), "--dir", dir, "--threads", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
	thread_line(r.out, "worker", line, sizeof(line));
	cr_assert_eq(sscanf(line, "%d %31s %15s %llu %15s", &tid, name, state, &recs, age), 5,
		     "%s", line);
	cr_assert_str_eq(state, "running", "%s", r.out);
	cr_assert(strstr(line, "doing=read"), "%s", line);
	/* what the program said it was doing: the state table, beside */
	cr_assert(strstr(r.out, "state table ("), "%s", r.out);
	cr_assert(strstr(r.out, "stage=\"loading config\""), "%s", r.out);
	free_run(&r);
	kill_writer(&w);
}

Test(extract, threads_shows_how_long_each_deadlocked_thread_has_been_stuck)
{
	const char *args[] = { "deadlock", NULL };
	struct writer w = start_writer(args);
	/* lock-a and lock-b wrote their last record before "ready": from
	 * here on they have been stuck at least as long as we wait */
	uint64_t t0 = mono_ns(), stuck;
	struct timespec pause = { 1, 200 * 1000 * 1000 };
	char line[512], name[32], state[16], age[16];
	const char *names[] = { "lock-a", "lock-b" };
	const char *want[] = { "holding=\"a, want b\"", "holding=\"b, want a\"" };
	unsigned long long recs;
	struct run r, j;
	int tid;

	nanosleep(&pause, NULL);
	stuck = mono_ns() - t0;
	r = run_extract(pidstr(w.pid), "--dir", dir, "--threads", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.out, "alive: 4 threads; ages relative to now"), "%s", r.out);
	for (int i = 0; i < 2; i++) {
		thread_line(r.out, names[i], line, sizeof(line));
		cr_assert_eq(sscanf(line, "%d %31s %15s %llu %15s", &tid, name, state, &recs, age), 5,
			     "%s", line);
		cr_assert_neq(tid, w.pid);
		cr_assert_str_eq(state, "running");
		cr_assert_eq(recs, 1, "%s", line);
		cr_assert_geq(age_ns(age), stuck / 100000000 * 100000000,
			      "%s: age %s, stuck for %llu ns", names[i], age,
			      (unsigned long long)stuck);
		cr_assert(strstr(line, want[i]), "%s: last record in '%s'", names[i], line);
	}
	/* the thread that only called bb_thread_init(): listed, no record */
	thread_line(r.out, "idle", line, sizeof(line));
	cr_assert_eq(sscanf(line, "%d %31s %15s %llu %15s", &tid, name, state, &recs, age), 5);
	cr_assert_eq(recs, 0, "%s", line);
	cr_assert_str_eq(age, "-");

	/* the same in JSON, to the nanosecond */
	j = run_extract(pidstr(w.pid), "--dir", dir, "--threads", "--json", NULL);
	cr_assert_eq(j.status, 0, "status %d: %s", j.status, j.err);
	cr_assert(strstr(j.out, "\"threads_age_from\":\"now\""), "%s", j.out);
	for (int i = 0; i < 2; i++)
		cr_assert_geq(json_thread_age(j.out, names[i]), (long long)stuck,
			      "%s: %s", names[i], j.out);
	free_run(&j);
	/* and in the summary of a plain --json extraction */
	j = run_extract(pidstr(w.pid), "--dir", dir, "--json", NULL);
	cr_assert_eq(j.status, 0, "status %d: %s", j.status, j.err);
	cr_assert(strstr(j.out, "\"threads\":["), "%s", j.out);
	for (int i = 0; i < 2; i++)
		cr_assert_geq(json_thread_age(strstr(j.out, "{\"summary\""), names[i]),
			      (long long)stuck, "%s", j.out);
	free_run(&j);
	free_run(&r);

	/* post mortem: the ages count to the death, and the line says from
	 * what (SIGKILL leaves no time of death in the box) */
	kill_writer(&w);
	r = run_extract(pidstr(w.pid), "--dir", dir, "--threads", NULL);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.out, "orphaned: 4 threads; ages relative to the "), "%s", r.out);
	cr_assert(strstr(r.out, "no time of death"), "%s", r.out);
	thread_line(r.out, "lock-a", line, sizeof(line));
	cr_assert(strstr(line, want[0]), "%s", line);
	free_run(&r);
}
