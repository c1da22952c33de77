/* SPDX-License-Identifier: MIT */
/*
 * Description: bb-reap end to end, with real processes and real files.
 *
 * Each test builds its fixtures in a private directory (base/shm, mode 1777
 * like /dev/shm), runs the installed-to-be binary ($BB_REAP) on it with
 * --dir, and checks which entries are gone.  Boxes come from real writer
 * processes ($BBR_WRITER, tests/reap/bbr_writer.c) that are left running,
 * killed with SIGKILL, or exec()ed; the pid-reused, corrupt and truncated
 * boxes are copies of a real box patched through blackbox/format.h.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/boxdir.h"
#include "../helpers/common.h"

/* Paths here are short temporary names; a cut one would fail an assertion. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define NOBODY 65534

/* ---- environment ------------------------------------------------------ */

static const char *env_or_fail(const char *name)
{
	const char *v = getenv(name);

	cr_assert(v && *v, "%s must name a program (set by meson)", name);
	return v;
}

struct fx {
	char base[PATH_MAX], shm[PATH_MAX], arch[PATH_MAX], out[PATH_MAX], bin[PATH_MAX];
	pid_t live[16];
	int   live_in[16];
	int   nlive;
};

/* Copy the file @src to @dir/@name, mode 0755. */
static void copy_exec(const char *src, const char *dir, const char *name)
{
	char dst[PATH_MAX];

	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	bbt_copy_file(src, dst, 0755);
}

static void fx_init(struct fx *f)
{
	char *b = bbt_mkdtemp();

	memset(f, 0, sizeof(*f));
	snprintf(f->base, sizeof(f->base), "%s", b);
	free(b);
	chmod(f->base, 0755);
	snprintf(f->shm, sizeof(f->shm), "%s/shm", f->base);
	snprintf(f->arch, sizeof(f->arch), "%s/arch", f->base);
	snprintf(f->out, sizeof(f->out), "%s/out", f->base);
	cr_assert_eq(mkdir(f->shm, 0755), 0);
	cr_assert_eq(chmod(f->shm, 01777), 0); /* like /dev/shm */
	cr_assert_eq(mkdir(f->out, 0755), 0);
	/*
	 * What runs as another uid (nobody) must be reachable by it: the build
	 * tree may sit in a 0700 directory (root's clone in /root).  Copies of
	 * the programs and of libblackbox.so.0 (found through LD_LIBRARY_PATH:
	 * the build tree's RUNPATH is relative to the original) go to a 0755
	 * directory of the fixture.
	 */
	snprintf(f->bin, sizeof(f->bin), "%s/bin", f->base);
	cr_assert_eq(mkdir(f->bin, 0755), 0);
	cr_assert_eq(chmod(f->bin, 0755), 0);
	copy_exec(env_or_fail("BBR_WRITER"), f->bin, "bbr_writer");
	copy_exec(env_or_fail("BB_REAP"), f->bin, "bb-reap");
	copy_exec(env_or_fail("BB_LIB"), f->bin, "libblackbox.so.0");
}

/* The program to exec as @uid: the build tree's, or the fixture's copy. */
static const char *prog_for(struct fx *f, const char *env, const char *name, long uid,
			    char *buf, size_t size)
{
	if (uid < 0)
		return env_or_fail(env);
	snprintf(buf, size, "%s/%s", f->bin, name);
	setenv("LD_LIBRARY_PATH", f->bin, 1);
	return buf;
}

static void fx_fini(struct fx *f)
{
	for (int i = 0; i < f->nlive; i++) {
		kill(f->live[i], SIGKILL);
		close(f->live_in[i]);
		waitpid(f->live[i], NULL, 0);
	}
	nftw(f->base, bbt_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- writer processes --------------------------------------------------- */

/*
 * Start bbr_writer @mode with its box in f->shm (as @uid when >= 0), wait
 * for its readiness line, return its pid.  *in gets its stdin (close it to
 * let the writer go on).
 */
static pid_t spawn_writer(struct fx *f, const char *mode, long uid, int *in)
{
	int pin[2], pout[2];
	char line[64] = "", exe[PATH_MAX];
	FILE *rd;
	pid_t pid;

	cr_assert_eq(pipe(pin), 0);
	cr_assert_eq(pipe(pout), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		close(pin[0]); close(pin[1]); close(pout[0]); close(pout[1]);
		setenv("BLACKBOX_DIR", f->shm, 1);
		setenv("BLACKBOX_SIZE", "128k", 1);
		const char *prog = prog_for(f, "BBR_WRITER", "bbr_writer", uid, exe, sizeof(exe));

		if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
			_exit(126);
		execl(prog, "bbr_writer", mode, (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	rd = fdopen(pout[0], "r");
	cr_assert(rd);
	cr_assert(fgets(line, sizeof(line), rd), "writer %s did not get ready", mode);
	fclose(rd);
	cr_assert_eq(atol(line), (long)pid, "writer printed '%s', pid is %ld", line, (long)pid);
	*in = pin[1];
	return pid;
}

/* A writer that keeps running until the fixture is torn down. */
static pid_t spawn_live(struct fx *f, const char *mode)
{
	int in;
	pid_t pid = spawn_writer(f, mode, -1, &in);

	cr_assert_lt(f->nlive, 16);
	f->live[f->nlive] = pid;
	f->live_in[f->nlive++] = in;
	return pid;
}

/* A writer killed with SIGKILL: its box is left behind. */
static pid_t spawn_killed(struct fx *f, long uid)
{
	int in, st;
	pid_t pid = spawn_writer(f, "wait", uid, &in);

	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(in);
	return pid;
}

/* A writer that exits cleanly: its atexit handler removes the box. */
static pid_t spawn_clean_exit(struct fx *f)
{
	int in, st;
	pid_t pid = spawn_writer(f, "exit", -1, &in);

	close(in);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return pid;
}

/* ---- files -------------------------------------------------------------- */

static bool exists(const char *dir, const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static void *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!fp)
		return NULL;
	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			cr_assert(buf);
		}
		r = fread(buf + n, 1, cap - n, fp);
		n += r;
	} while (r > 0);
	fclose(fp);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void spew(const char *path, const void *buf, size_t len, mode_t mode)
{
	FILE *fp = fopen(path, "wb");

	cr_assert(fp, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(buf, 1, len, fp), len);
	cr_assert_eq(fclose(fp), 0);
	chmod(path, mode);
}

static void *read_box(const struct fx *f, const char *name, size_t *len)
{
	char p[PATH_MAX];
	void *b;

	snprintf(p, sizeof(p), "%s/%s", f->shm, name);
	b = slurp(p, len);
	cr_assert(b && *len >= BB_HEADER_SIZE, "cannot read box %s", p);
	return b;
}

static void put(const struct fx *f, const char *name, const void *buf, size_t len)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", f->shm, name);
	spew(p, buf, len, 0600);
}

/* Start time (clock ticks since boot) of this process, /proc/self/stat field 22. */
static uint64_t my_starttime(void)
{
	size_t len;
	char *s = slurp("/proc/self/stat", &len), *p;
	unsigned long long v = 0;

	cr_assert(s);
	p = strrchr(s, ')');
	cr_assert(p);
	/* after ") ": field 3 (state) is the first; field 22 is the 20th */
	p += 2;
	for (int i = 3; i < 22; i++) {
		p = strchr(p, ' ');
		cr_assert(p);
		p++;
	}
	v = strtoull(p, NULL, 10);
	free(s);
	return v;
}

/* ---- running bb-reap ---------------------------------------------------- */

struct run {
	int   status;     /* exit status, or 128 + signal */
	char *out, *err;  /* captured stdout / stderr */
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Run bb-reap (as @uid when >= 0) with NULL-terminated arguments. */
static struct run run_reap_as(struct fx *f, long uid, ...)
{
	char outp[PATH_MAX], errp[PATH_MAX], exe[PATH_MAX];
	const char *argv[32];
	struct run r = { 0 };
	size_t n = 0, len;
	va_list ap;
	pid_t pid;
	int st;

	argv[n++] = "bb-reap";
	va_start(ap, uid);
	for (const char *a; (a = va_arg(ap, const char *)) && n < 31;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	snprintf(outp, sizeof(outp), "%s/stdout", f->out);
	snprintf(errp, sizeof(errp), "%s/stderr", f->out);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		if (!freopen(outp, "w", stdout) || !freopen(errp, "w", stderr))
			_exit(125);
		const char *prog = prog_for(f, "BB_REAP", "bb-reap", uid, exe, sizeof(exe));

		if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
			_exit(126);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = slurp(outp, &len);
	r.err = slurp(errp, &len);
	cr_assert(r.out && r.err);
	return r;
}

#define run_reap(f, ...) run_reap_as((f), -1, __VA_ARGS__, (char *)NULL)

static unsigned count_str(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Offset of the first ring's data: after the ring table, page aligned. */
static size_t data_start(const struct bb_header *h)
{
	uint64_t end = h->ring_table_offset + (uint64_t)h->ring_count * h->ring_desc_size;
	uint64_t page = h->page_size ? h->page_size : 4096;

	return (size_t)((end + page - 1) / page * page);
}

/* ---- the fixture zoo ------------------------------------------------------ */

struct zoo {
	char live[256], killed1[256], killed2[256], execed[256], reused[256];
	char corrupt[256], trunc[256], shortf[256], badhdr[256], link[256];
	char dir[256], fifo[256], nobody[256], chowned[256];
	char target[PATH_MAX];
	bool trunc_is_box;  /* the reader accepts the truncated box (header intact) */
	bool have_nobody;
};

static void build_zoo(struct fx *f, struct zoo *z)
{
	struct bb_header *h;
	size_t len;
	uint8_t *box;
	pid_t p;

	memset(z, 0, sizeof(*z));
	snprintf(z->live, sizeof(z->live), "%s", bbt_box_of(f->shm, spawn_live(f, "wait")));
	snprintf(z->killed1, sizeof(z->killed1), "%s", bbt_box_of(f->shm, spawn_killed(f, -1)));
	snprintf(z->killed2, sizeof(z->killed2), "%s", bbt_box_of(f->shm, spawn_killed(f, -1)));
	snprintf(z->execed, sizeof(z->execed), "%s", bbt_box_of(f->shm, spawn_live(f, "exec")));
	p = spawn_clean_exit(f);
	cr_assert_str_empty(bbt_box_of(f->shm, p), "a clean exit must leave nothing");
	cr_assert_str_not_empty(z->live);
	cr_assert_str_not_empty(z->killed1);
	cr_assert_str_not_empty(z->killed2);
	cr_assert_str_not_empty(z->execed);

	/* pid reuse: our own (live) pid, another start time */
	box = read_box(f, z->killed1, &len);
	h = (struct bb_header *)box;
	h->pid = (int32_t)getpid();
	h->starttime = my_starttime() + 12345;
	snprintf(z->reused, sizeof(z->reused), BB_NAME_PREFIX "%ld.%llu.0", (long)getpid(),
		 (unsigned long long)h->starttime);
	put(f, z->reused, box, len);
	free(box);

	/* a dead owner's box with scribbled rings (header intact) */
	box = read_box(f, z->killed1, &len);
	h = (struct bb_header *)box;
	cr_assert_lt(data_start(h), len);
	memset(box + h->ring_table_offset, 0xa5, 16);     /* ring 0 head and tail */
	memset(box + data_start(h), 0xa5, len - data_start(h));
	snprintf(z->corrupt, sizeof(z->corrupt), BB_NAME_PREFIX "%ld.%llu.7", (long)h->pid,
		 (unsigned long long)h->starttime);
	put(f, z->corrupt, box, len);

	/* truncated: header and half the rest */
	snprintf(z->trunc, sizeof(z->trunc), BB_NAME_PREFIX "%ld.%llu.8", (long)h->pid,
		 (unsigned long long)h->starttime);
	free(box);
	box = read_box(f, z->killed1, &len);
	h = (struct bb_header *)box;
	put(f, z->trunc, box, len / 2);
	{
		char p2[PATH_MAX];
		struct bb_reader *r = NULL;

		snprintf(p2, sizeof(p2), "%s/%s", f->shm, z->trunc);
		z->trunc_is_box = bb_reader_open_path(p2, BB_OPEN_ANY_OWNER, &r, NULL, 0) == 0;
		if (r)
			bb_reader_close(r);
	}

	/* shorter than a header: maybe a box being born, left alone */
	snprintf(z->shortf, sizeof(z->shortf), BB_NAME_PREFIX "%ld.%llu.9", (long)h->pid,
		 (unsigned long long)h->starttime);
	put(f, z->shortf, box, 2000);

	/* the prefix, and no header (zeros: no magic) */
	snprintf(z->badhdr, sizeof(z->badhdr), BB_NAME_PREFIX "999999.1.0");
	{
		uint8_t junk[8192];

		memset(junk, 0, sizeof(junk));
		put(f, z->badhdr, junk, sizeof(junk));
	}

	/* a symlink to a dead box outside the directory: neither may go */
	snprintf(z->target, sizeof(z->target), "%s/target.box", f->base);
	spew(z->target, box, len, 0600);
	snprintf(z->link, sizeof(z->link), BB_NAME_PREFIX "1.1.0");
	{
		char p2[PATH_MAX];

		snprintf(p2, sizeof(p2), "%s/%s", f->shm, z->link);
		cr_assert_eq(symlink(z->target, p2), 0);
		snprintf(z->dir, sizeof(z->dir), BB_NAME_PREFIX "2.2.0");
		snprintf(p2, sizeof(p2), "%s/%s", f->shm, z->dir);
		cr_assert_eq(mkdir(p2, 0700), 0);
		snprintf(z->fifo, sizeof(z->fifo), BB_NAME_PREFIX "3.3.0");
		snprintf(p2, sizeof(p2), "%s/%s", f->shm, z->fifo);
		cr_assert_eq(mkfifo(p2, 0600), 0);
	}

	/* another user's boxes: one of a process of that user, one chown'ed */
	if (geteuid() == 0) {
		char p2[PATH_MAX];

		z->have_nobody = true;
		snprintf(z->nobody, sizeof(z->nobody), "%s",
			 bbt_box_of(f->shm, spawn_killed(f, NOBODY)));
		cr_assert_str_not_empty(z->nobody);
		snprintf(z->chowned, sizeof(z->chowned), BB_NAME_PREFIX "%ld.%llu.5", (long)h->pid,
			 (unsigned long long)h->starttime);
		put(f, z->chowned, box, len);
		snprintf(p2, sizeof(p2), "%s/%s", f->shm, z->chowned);
		cr_assert_eq(chown(p2, NOBODY, NOBODY), 0);
	}
	free(box);
}

/* Everything that must survive any run as root. */
static void assert_untouchables(const struct fx *f, const struct zoo *z)
{
	cr_expect(exists(f->shm, z->live), "live box removed");
	cr_expect(exists(f->shm, z->shortf), "short file removed");
	cr_expect(exists(f->shm, z->badhdr), "file with a bad header removed");
	cr_expect(exists(f->shm, z->link), "symlink removed");
	cr_expect(access(z->target, F_OK) == 0, "symlink target removed");
	cr_expect(exists(f->shm, z->dir), "directory removed");
	cr_expect(exists(f->shm, z->fifo), "fifo removed");
	if (!z->trunc_is_box)
		cr_expect(exists(f->shm, z->trunc), "truncated non-box removed");
}

static void assert_stale_gone(const struct fx *f, const struct zoo *z)
{
	cr_expect(!exists(f->shm, z->killed1), "SIGKILLed box kept");
	cr_expect(!exists(f->shm, z->killed2), "SIGKILLed box kept");
	cr_expect(!exists(f->shm, z->execed), "box of an exec()ed process kept");
	cr_expect(!exists(f->shm, z->reused), "pid-reused box kept");
	cr_expect(!exists(f->shm, z->corrupt), "damaged box of a dead owner kept");
	if (z->trunc_is_box)
		cr_expect(!exists(f->shm, z->trunc), "truncated box of a dead owner kept");
	if (z->have_nobody) {
		cr_expect(!exists(f->shm, z->nobody), "dead box of another uid kept (root)");
		cr_expect(!exists(f->shm, z->chowned), "chown'ed dead box kept (root)");
	}
}

static unsigned stale_count(const struct zoo *z)
{
	return 5u + z->trunc_is_box + 2u * z->have_nobody;
}

/* A listing that changes if anything in the directory is touched. */
static char *listing(const char *dir)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);

	cr_assert(m && n >= 0);
	for (int i = 0; i < n; i++) {
		struct stat st;

		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/%s", dir, v[i]->d_name);
		if (lstat(p, &st) == 0)
			fprintf(m, "%s %lu %o %lld %ld.%09ld\n", v[i]->d_name,
				(unsigned long)st.st_ino, st.st_mode, (long long)st.st_size,
				(long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		free(v[i]);
	}
	free(v);
	fclose(m);
	return buf;
}

/* ---- tests ---------------------------------------------------------------- */

TestSuite(reap, .timeout = 120);

Test(reap, exactly_the_stale_boxes)
{
	struct fx f;
	struct zoo z;
	struct run r;

	fx_init(&f);
	build_zoo(&f, &z);
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--verbose");
	cr_expect_eq(r.status, 0, "exit %d, stderr:\n%s", r.status, r.err);
	cr_expect_eq(count_str(r.err, "bb-reap: reaped "), stale_count(&z), "stderr:\n%s", r.err);
	assert_stale_gone(&f, &z);
	assert_untouchables(&f, &z);
	/* one line per action names the box, its owner and why */
	{
		char want[512];

		snprintf(want, sizeof(want), "bb-reap: reaped %s/%s (pid ", f.shm, z.killed1);
		cr_expect(strstr(r.err, want), "no log line for %s in:\n%s", z.killed1, r.err);
		cr_expect(strstr(r.err, "comm bbr_writer, orphaned, "), "stderr:\n%s", r.err);
	}
	run_free(&r);

	/* nothing left to do */
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0");
	cr_expect_eq(r.status, 0, "second run exit %d:\n%s", r.status, r.err);
	cr_expect_str_empty(r.err, "second run logged:\n%s", r.err);
	assert_untouchables(&f, &z);
	run_free(&r);
	fx_fini(&f);
}

Test(reap, dry_run_touches_nothing)
{
	struct fx f;
	struct zoo z;
	struct run r;
	char *before, *after;

	fx_init(&f);
	build_zoo(&f, &z);
	before = listing(f.shm);
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--dry-run", "--archive", f.arch,
		     "--keep", "1");
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect_eq(count_str(r.err, "bb-reap: would-reap "), stale_count(&z), "stderr:\n%s", r.err);
	after = listing(f.shm);
	cr_expect_str_eq(after, before, "--dry-run changed the directory");
	cr_expect(access(f.arch, F_OK) != 0, "--dry-run created the archive directory");
	free(before);
	free(after);
	run_free(&r);
	fx_fini(&f);
}

/* Open an archive with the reader and check it is @pid's box. */
static void check_archive(const char *path, long pid)
{
	struct bb_reader *rd = NULL;
	char err[256] = "";
	int rc = bb_reader_open_path(path, 0, &rd, err, sizeof(err));

	cr_assert_eq(rc, 0, "archive %s does not open: %s", path, err);
	if (pid)
		cr_expect_eq(bb_reader_info(rd)->pid, pid);
	cr_expect_str_eq(bb_reader_info(rd)->comm, "bbr_writer");
	bb_reader_close(rd);
}

/* "blackbox-<uid>-bbr_writer-": the archives of our writers' boxes (their
 * file owner is the test's euid); static buffer. */
static const char *arch_prefix(void)
{
	static char p[64];

	snprintf(p, sizeof(p), "blackbox-%lu-bbr_writer-", (unsigned long)geteuid());
	return p;
}

static unsigned count_archives(const char *dir)
{
	struct dirent *e;
	unsigned n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, arch_prefix(), strlen(arch_prefix())))
			n++;
	closedir(d);
	return n;
}

Test(reap, archives_read_back)
{
	struct fx f;
	struct run r;
	char corrupt[256], p[PATH_MAX];
	pid_t k1, k2;
	size_t len;
	uint8_t *box;
	struct dirent *e;
	DIR *d;
	unsigned n = 0;

	fx_init(&f);
	k1 = spawn_killed(&f, -1);
	k2 = spawn_killed(&f, -1);
	/* a damaged box is evidence: archived too */
	box = read_box(&f, bbt_box_of(f.shm, k2), &len);
	cr_assert_lt(data_start((struct bb_header *)box), len);
	memset(box + data_start((struct bb_header *)box), 0x5a,
	       len - data_start((struct bb_header *)box));
	snprintf(corrupt, sizeof(corrupt), "%s.damaged", bbt_box_of(f.shm, k2));
	put(&f, corrupt, box, len);
	free(box);

	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--archive", f.arch);
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect_eq(count_str(r.err, ", archived to "), 3, "stderr:\n%s", r.err);
	cr_expect_eq(bbt_count_prefix(f.shm, BB_NAME_PREFIX), 0);
	cr_expect_eq(count_archives(f.arch), 3);

	d = opendir(f.arch);
	cr_assert(d);
	while ((e = readdir(d))) {
		struct stat st;
		long pid;
		const char *pp;

		if (e->d_name[0] == '.')
			continue;
		n++;
		/* blackbox-<uid>-<comm>-<pid>-<YYYYmmddTHHMMSSZ>[.<n>].box */
		cr_expect(!strncmp(e->d_name, arch_prefix(), strlen(arch_prefix())), "name %s",
			  e->d_name);
		pid = strtol(e->d_name + strlen(arch_prefix()), NULL, 10);
		cr_expect(pid == k1 || pid == k2, "name %s", e->d_name);
		pp = strchr(e->d_name + strlen(arch_prefix()), '-');
		cr_expect(pp && strlen(pp) >= 21 && pp[9] == 'T' && pp[16] == 'Z', "name %s", e->d_name);
		snprintf(p, sizeof(p), "%s/%s", f.arch, e->d_name);
		cr_assert_eq(lstat(p, &st), 0);
		cr_expect(S_ISREG(st.st_mode) && (st.st_mode & 077) == 0, "archive mode %o", st.st_mode);
		check_archive(p, pid);
		if (getenv("BB_EXTRACT") && *getenv("BB_EXTRACT")) {
			char cmd[2 * PATH_MAX];

			int ws;

			/* 0: read cleanly, 3: read, damage reported (the scribbled box) */
			snprintf(cmd, sizeof(cmd), "'%s' --path '%s' >/dev/null 2>&1",
				 getenv("BB_EXTRACT"), p);
			ws = system(cmd);
			cr_expect(WIFEXITED(ws) && (WEXITSTATUS(ws) == 0 || WEXITSTATUS(ws) == 3),
				  "bb-extract --path %s exited %d", p, WEXITSTATUS(ws));
		}
	}
	closedir(d);
	cr_expect_eq(n, 3);
	/* bb-extract --list --dir ARCHIVE lists the copies: a header line and
	 * one line per archive, each naming its file */
	if (getenv("BB_EXTRACT") && *getenv("BB_EXTRACT")) {
		char cmd[2 * PATH_MAX], line[8192];
		unsigned lines = 0, named = 0;
		FILE *l;

		snprintf(cmd, sizeof(cmd), "'%s' --list --dir '%s' 2>&1", getenv("BB_EXTRACT"),
			 f.arch);
		l = popen(cmd, "r");
		cr_assert(l);
		while (fgets(line, sizeof(line), l)) {
			lines++;
			named += strstr(line, arch_prefix()) != NULL;
		}
		cr_expect_eq(pclose(l), 0, "bb-extract --list --dir %s failed", f.arch);
		cr_expect_eq(lines, 4, "%u lines, not a header and 3 archives", lines);
		cr_expect_eq(named, 3, "%u archives listed, not 3", named);
	}
	run_free(&r);
	fx_fini(&f);
}

static void touch_old(const char *path, time_t when)
{
	struct timespec ts[2] = { { .tv_sec = when }, { .tv_sec = when } };

	cr_assert_eq(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

Test(reap, keep_and_max_bytes_prune_only_ours)
{
	struct fx f;
	struct run r;
	char p[PATH_MAX], q[PATH_MAX], target[PATH_MAX];
	struct stat st;
	char size[32], old[64], oldlink[64];

	fx_init(&f);
	/* the names bb-reap gives, with the uid of the files' owner (ours) */
	snprintf(old, sizeof(old), "blackbox-%lu-old-1-20000101T000000Z.box",
		 (unsigned long)geteuid());
	snprintf(oldlink, sizeof(oldlink), "blackbox-%lu-lnk-2-20000101T000000Z.box",
		 (unsigned long)geteuid());
	cr_assert_eq(mkdir(f.arch, 0700), 0);
	/* ours and old: pruned first */
	snprintf(p, sizeof(p), "%s/%s", f.arch, old);
	spew(p, "old", 3, 0600);
	touch_old(p, 946684800);
	/* not ours: other names, a symlink with our pattern */
	snprintf(p, sizeof(p), "%s/notes.txt", f.arch);
	spew(p, "keep me", 7, 0644);
	touch_old(p, 946684800);
	snprintf(p, sizeof(p), "%s/blackbox-foo.box", f.arch);
	spew(p, "keep me", 7, 0644);
	touch_old(p, 946684800);
	snprintf(target, sizeof(target), "%s/precious", f.base);
	spew(target, "precious", 8, 0644);
	snprintf(p, sizeof(p), "%s/%s", f.arch, oldlink);
	cr_assert_eq(symlink(target, p), 0);

	for (int i = 0; i < 3; i++) {
		spawn_killed(&f, -1);
		r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--archive", f.arch, "--keep", "2");
		cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
		if (i == 1)
			cr_expect(strstr(r.err, "bb-reap: pruned "), "the old archive was not pruned:\n%s", r.err);
		run_free(&r);
	}
	cr_expect_eq(count_archives(f.arch), 2, "--keep 2 left %u", count_archives(f.arch));
	cr_expect(!exists(f.arch, old));
	cr_expect(exists(f.arch, "notes.txt"));
	cr_expect(exists(f.arch, "blackbox-foo.box"));
	cr_expect(exists(f.arch, oldlink));
	cr_expect(access(target, F_OK) == 0);

	/* byte bound: room for one archive only (the larger: compressed
	 * copies differ by a few bytes) */
	{
		struct dirent *e;
		DIR *d = opendir(f.arch);
		long long most = 0;

		cr_assert(d);
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, arch_prefix(), strlen(arch_prefix()))) {
				snprintf(q, sizeof(q), "%s/%s", f.arch, e->d_name);
				cr_assert_eq(stat(q, &st), 0);
				most = st.st_size > most ? st.st_size : most;
			}
		closedir(d);
		cr_assert_gt(most, 0);
		snprintf(size, sizeof(size), "%lld", most);
	}
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--archive", f.arch,
		     "--max-archive-bytes", size, "--dry-run");
	cr_expect_eq(count_archives(f.arch), 2, "--dry-run pruned");
	cr_expect_eq(count_str(r.err, "would-prune"), 1, "stderr:\n%s", r.err);
	run_free(&r);
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--archive", f.arch,
		     "--max-archive-bytes", size);
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect_eq(count_archives(f.arch), 1);
	cr_expect(exists(f.arch, "notes.txt"));
	cr_expect(exists(f.arch, oldlink));
	run_free(&r);
	fx_fini(&f);
}

/*
 * A box larger than its owner's archive quota is not copied, and its
 * records are not read, but it goes all the same, with a line saying why
 * it has no copy: left in place, it would hold its memory forever.  The
 * exit status says a box went without any copy (3, bb-reap(8)).
 */
Test(reap, a_box_over_the_quota_goes_without_a_copy)
{
	struct fx f;
	struct run r;
	char name[256];
	pid_t k;

	fx_init(&f);
	k = spawn_killed(&f, -1);
	snprintf(name, sizeof(name), "%s", bbt_box_of(f.shm, k));
	cr_assert(name[0]);
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--archive", f.arch,
		     "--max-archive-bytes", "16k", "--json");
	cr_expect_eq(r.status, 3, "exit %d:\n%s", r.status, r.err);
	cr_expect(strstr(r.err, "1 box reaped without an archive copy"), "stderr:\n%s", r.err);
	cr_expect(!exists(f.shm, name), "the box over the quota was left in place:\n%s", r.err);
	cr_expect_eq(count_archives(f.arch), 0, "a box over the quota was archived");
	cr_expect(strstr(r.err, "bb-reap: reaped ") &&
		  strstr(r.err, "not archived: larger than its owner's archive quota"),
		  "stderr:\n%s", r.err);
	cr_expect(strstr(r.out, "\"decision\":\"reaped\"") &&
		  strstr(r.out, "\"detail\":\"not archived: larger than"), "stdout:\n%s", r.out);
	run_free(&r);
	fx_fini(&f);
}

/*
 * With --keep N, a run over more than N dead boxes of one owner copies
 * the newest N and no other (not every one, to prune all but N after),
 * and makes their room first: an older archive of that owner goes before
 * any copy is written.  The others go without a copy, saying why.
 */
Test(reap, prune_before_copy_and_copy_only_what_the_quota_keeps)
{
	struct fx f;
	struct run r;
	char old[128], p[PATH_MAX], want[64];
	const char *pruned, *archived;
	pid_t k[6];

	fx_init(&f);
	cr_assert_eq(mkdir(f.arch, 0700), 0);
	snprintf(old, sizeof(old), "blackbox-%lu-bbr_writer-1-20000101T000000Z.box",
		 (unsigned long)geteuid());
	snprintf(p, sizeof(p), "%s/%s", f.arch, old);
	spew(p, "old", 3, 0400);
	touch_old(p, 946684800);
	for (int i = 0; i < 6; i++) {
		k[i] = spawn_killed(&f, -1);
		usleep(20000); /* distinct creation times: the last two are the newest */
	}
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--archive", f.arch, "--keep", "2");
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect_eq(bbt_count_prefix(f.shm, BB_NAME_PREFIX), 0, "boxes left:\n%s", r.err);
	cr_expect_eq(count_str(r.err, ", archived to "), 2, "stderr:\n%s", r.err);
	cr_expect_eq(count_str(r.err, "not archived: its owner's newer boxes fill"), 4,
		     "stderr:\n%s", r.err);
	cr_expect_eq(count_archives(f.arch), 2);
	cr_expect(!exists(f.arch, old), "the old archive was not pruned");
	/* the old archive went before the first copy was written */
	pruned = strstr(r.err, "bb-reap: pruned ");
	archived = strstr(r.err, ", archived to ");
	cr_expect(pruned && archived && pruned < archived, "stderr:\n%s", r.err);
	/* the copies are of the two newest boxes */
	for (int i = 4; i < 6; i++) {
		snprintf(want, sizeof(want), "bbr_writer-%ld-", (long)k[i]);
		cr_expect(strstr(r.err, want), "no archive of pid %ld:\n%s", (long)k[i], r.err);
	}
	run_free(&r);
	fx_fini(&f);
}

Test(reap, min_age_counts_from_the_last_sign_of_life)
{
	struct fx f;
	struct run r;
	char name[256], old[256], p[PATH_MAX];
	struct bb_header *h;
	uint8_t *box;
	size_t len;
	pid_t k;
	int64_t two_hours_ago = ((int64_t)time(NULL) - 7200) * 1000000000;

	fx_init(&f);
	k = spawn_killed(&f, -1);
	snprintf(name, sizeof(name), "%s", bbt_box_of(f.shm, k));

	r = run_reap(&f, "--dir", f.shm, "--json");
	cr_expect_eq(r.status, 0);
	cr_expect(exists(f.shm, name), "default --min-age reaped a fresh box");
	cr_expect(strstr(r.out, "\"decision\":\"kept\""), "stdout:\n%s", r.out);
	cr_expect(strstr(r.out, "younger than --min-age"), "stdout:\n%s", r.out);
	run_free(&r);

	/* a dry run that would reap nothing says that the age is why */
	r = run_reap(&f, "--dir", f.shm, "--dry-run");
	cr_expect_eq(r.status, 0);
	cr_expect(strstr(r.err, "bb-reap: nothing would be reaped: 1 box whose owner is gone "
			  "is younger than --min-age (3600 s)\n"), "stderr:\n%s", r.err);
	run_free(&r);
	r = run_reap(&f, "--dir", f.shm);
	cr_expect_str_empty(r.err, "a run that is not dry said:\n%s", r.err);
	run_free(&r);

	/*
	 * A service created two hours ago (header and file times), killed
	 * just now: its records are recent, so it is still young.
	 */
	box = read_box(&f, name, &len);
	h = (struct bb_header *)box;
	h->created_ns = (uint64_t)two_hours_ago;
	h->phase_ns = (uint64_t)two_hours_ago;
	snprintf(old, sizeof(old), "%s.1", name);
	put(&f, old, box, len);
	snprintf(p, sizeof(p), "%s/%s", f.shm, old);
	touch_old(p, time(NULL) - 7200);
	free(box);
	r = run_reap(&f, "--dir", f.shm, "--min-age", "1h");
	cr_expect(exists(f.shm, old), "recent records did not count as a sign of life:\n%s", r.err);
	run_free(&r);

	r = run_reap(&f, "--dir", f.shm, "--min-age", "0");
	cr_expect_eq(r.status, 0);
	cr_expect(!exists(f.shm, name));
	cr_expect(!exists(f.shm, old));
	run_free(&r);
	fx_fini(&f);
}

Test(reap, non_root_reaps_only_its_own)
{
	struct fx f;
	struct run r;
	char mine[256], theirs[256];

	if (geteuid() != 0)
		cr_skip_test("needs root to run processes as uid %d", NOBODY);
	fx_init(&f);
	chmod(f.out, 01777);
	snprintf(theirs, sizeof(theirs), "%s", bbt_box_of(f.shm, spawn_killed(&f, -1)));
	snprintf(mine, sizeof(mine), "%s", bbt_box_of(f.shm, spawn_killed(&f, NOBODY)));
	spawn_live(&f, "wait");

	r = run_reap_as(&f, NOBODY, "--dir", f.shm, "--min-age", "0", "--verbose", (char *)NULL);
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect(!exists(f.shm, mine), "non-root did not reap its own dead box:\n%s", r.err);
	cr_expect(exists(f.shm, theirs), "non-root reaped root's box:\n%s", r.err);
	cr_expect(strstr(r.err, "another user's file"), "stderr:\n%s", r.err);
	run_free(&r);

	r = run_reap(&f, "--dir", f.shm, "--min-age", "0");
	cr_expect(!exists(f.shm, theirs), "root did not reap:\n%s", r.err);
	cr_expect_eq(bbt_count_prefix(f.shm, BB_NAME_PREFIX), 1, "the live box must stay");
	run_free(&r);
	fx_fini(&f);
}

Test(reap, json_one_object_per_decision)
{
	struct fx f;
	struct zoo z;
	struct run r;
	unsigned lines = 0, entries;
	const char *py = getenv("PYTHON3");

	fx_init(&f);
	build_zoo(&f, &z);
	entries = (unsigned)bbt_count_prefix(f.shm, BB_NAME_PREFIX);
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--json");
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	for (char *l = r.out; *l;) {
		char *nl = strchr(l, '\n');

		cr_assert(nl, "unterminated line");
		cr_expect(l[0] == '{' && nl[-1] == '}', "not an object: %.*s", (int)(nl - l), l);
		cr_expect(!strncmp(l, "{\"decision\":", 12));
		lines++;
		l = nl + 1;
	}
	cr_expect_eq(lines, entries, "%u objects for %u entries:\n%s", lines, entries, r.out);
	cr_expect_eq(count_str(r.out, "\"decision\":\"reaped\""), stale_count(&z));
	if (py && *py) {
		char cmd[2 * PATH_MAX];

		snprintf(cmd, sizeof(cmd),
			 "'%s' -c 'import json,sys\nfor l in sys.stdin: json.loads(l)' < '%s/stdout'",
			 py, f.out);
		cr_expect_eq(system(cmd), 0, "python3 could not parse the JSON:\n%s", r.out);
	}
	run_free(&r);
	fx_fini(&f);
}

/*
 * Garbage under the prefix (any user can plant it) is left alone and is
 * not a failure: a planted file must not make every run exit 1 (a failed
 * unit under systemd).  Fill bytes make every header field huge.
 */
Test(reap, planted_garbage_is_skipped_not_an_error)
{
	struct fx f;
	struct run r;
	static const uint8_t fills[] = { 'x', 0xff, 0x00, 0x7f };

	fx_init(&f);
	for (size_t i = 0; i < sizeof(fills); i++) {
		uint8_t junk[8192];
		char name[64];

		memset(junk, fills[i], sizeof(junk));
		snprintf(name, sizeof(name), BB_NAME_PREFIX "%zu.1.0", 900000 + i);
		put(&f, name, junk, sizeof(junk));
	}
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--json");
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect_eq(count_str(r.out, "\"decision\":\"skipped\""), sizeof(fills), "%s", r.out);
	cr_expect_eq(bbt_count_prefix(f.shm, BB_NAME_PREFIX), (int)sizeof(fills));
	run_free(&r);
	fx_fini(&f);
}

/*
 * JSON strings are escaped as bb-extract escapes them (shared/json.h): a
 * planted name's UTF-8 stays readable, an escape byte becomes \u001b and
 * a byte that is not UTF-8 \ufffd.
 */
Test(reap, json_names_escaped_as_bb_extract_does)
{
	struct fx f;
	struct run r;
	uint8_t junk[8192];

	fx_init(&f);
	memset(junk, 'x', sizeof(junk));
	put(&f, BB_NAME_PREFIX "caf\xc3\xa9\x1b\xff.1.0", junk, sizeof(junk));
	r = run_reap(&f, "--dir", f.shm, "--min-age", "0", "--json");
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.err);
	cr_expect(strstr(r.out, "caf\xc3\xa9\\u001b\\ufffd"), "stdout:\n%s", r.out);
	run_free(&r);
	fx_fini(&f);
}

Test(reap, usage_and_exit_codes)
{
	struct fx f;
	struct run r;
	char missing[PATH_MAX];

	fx_init(&f);
	r = run_reap(&f, "--help");
	cr_expect_eq(r.status, 0);
	cr_expect(strstr(r.out, "Usage: bb-reap"));
	run_free(&r);
	r = run_reap(&f, "--version");
	cr_expect_eq(r.status, 0);
	cr_expect(strstr(r.out, "bb-reap"));
	run_free(&r);

	static const char *bad[][3] = {
		{ "--bogus", NULL, NULL },
		{ "--min-age", "-1", NULL },
		{ "--min-age", "12x", NULL },
		{ "--keep", "0", NULL },
		{ "--keep", "3", NULL },                  /* without --archive */
		{ "--max-archive-bytes", "10", NULL },    /* without --archive */
		{ "--dir", "", NULL },
		{ "stray", NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = run_reap(&f, bad[i][0], bad[i][1]);
		cr_expect_eq(r.status, 2, "'%s %s' exited %d", bad[i][0],
			     bad[i][1] ? bad[i][1] : "", r.status);
		run_free(&r);
	}
	snprintf(missing, sizeof(missing), "%s/no-such-dir", f.base);
	r = run_reap(&f, "--dir", missing);
	cr_expect_eq(r.status, 1, "missing --dir exited %d", r.status);
	cr_expect(strstr(r.err, "cannot scan"), "stderr:\n%s", r.err);
	run_free(&r);
	/* an empty directory is success */
	r = run_reap(&f, "--dir", f.shm);
	cr_expect_eq(r.status, 0);
	run_free(&r);
	fx_fini(&f);
}

/* ---- --watch ------------------------------------------------------------ */

/* bb-reap --watch with @args (NULL-terminated), in the background. */
static pid_t start_watch(struct fx *f, const char *const *args)
{
	char outp[PATH_MAX], errp[PATH_MAX];
	const char *argv[32] = { "bb-reap", "--watch" };
	size_t n = 2;
	pid_t pid;

	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	snprintf(outp, sizeof(outp), "%s/watch.out", f->out);
	snprintf(errp, sizeof(errp), "%s/watch.err", f->out);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		if (!freopen(outp, "w", stdout) || !freopen(errp, "w", stderr))
			_exit(125);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(env_or_fail("BB_REAP"), (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Wait (at most @sec seconds: a bound on a hang, not a figure) until
 * @name is gone from @dir. */
static bool wait_gone(const char *dir, const char *name, int sec)
{
	for (int i = 0; i < sec * 100; i++) {
		if (!exists(dir, name))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * bb-reap --watch reaps a box when its owner dies, found by events alone
 * (its full pass is an hour away): a box there when it started, and one
 * created after; with --min-age, once the box is old enough; a live
 * owner's box stays; SIGTERM ends it with status 0.
 */
Test(reap, watch_reaps_a_box_when_its_owner_dies)
{
	const char *args[] = { "--dir", NULL, "--min-age", "0", "--rescan", "1h", "--archive",
			       NULL, "--json", NULL };
	const char *aged[] = { "--dir", NULL, "--min-age", "1", "--rescan", "1h", NULL };
	char before[256], after[256], live_box[256], late[256], *out;
	struct fx f;
	pid_t w, k, live;
	int in, st;
	size_t len;

	fx_init(&f);
	args[1] = aged[1] = f.shm;
	args[7] = f.arch;
	live = spawn_live(&f, "wait");
	snprintf(live_box, sizeof(live_box), "%s", bbt_box_of(f.shm, live));
	k = spawn_writer(&f, "wait", -1, &in);
	snprintf(before, sizeof(before), "%s", bbt_box_of(f.shm, k));
	w = start_watch(&f, args);
	usleep(300000); /* its first pass took a pidfd of each owner */
	cr_assert_eq(kill(k, SIGKILL), 0);
	waitpid(k, NULL, 0);
	close(in);
	cr_expect(wait_gone(f.shm, before, 30), "the box of an owner killed while watched stayed");
	/* a box created while it watches */
	k = spawn_writer(&f, "wait", -1, &in);
	snprintf(after, sizeof(after), "%s", bbt_box_of(f.shm, k));
	usleep(300000);
	cr_assert_eq(kill(k, SIGKILL), 0);
	waitpid(k, NULL, 0);
	close(in);
	cr_expect(wait_gone(f.shm, after, 30), "the box of an owner that came later stayed");
	cr_expect(exists(f.shm, live_box), "a live owner's box was reaped");
	cr_expect_eq(count_archives(f.arch), 2);
	cr_assert_eq(kill(w, SIGTERM), 0);
	cr_assert_eq(waitpid(w, &st, 0), w);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--watch ended with status %#x", st);
	{
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/watch.out", f.out);
		out = slurp(p, &len);
		cr_expect_eq(count_str(out, "\"decision\":\"reaped\""), 2, "%s", out);
		free(out);
	}

	/* --min-age 1: reaped once old enough, by its timer */
	w = start_watch(&f, aged);
	k = spawn_writer(&f, "wait", -1, &in);
	snprintf(late, sizeof(late), "%s", bbt_box_of(f.shm, k));
	usleep(300000);
	cr_assert_eq(kill(k, SIGKILL), 0);
	waitpid(k, NULL, 0);
	close(in);
	cr_expect(wait_gone(f.shm, late, 30), "a box was not reaped once --min-age passed");
	kill(w, SIGTERM);
	waitpid(w, NULL, 0);
	fx_fini(&f);
}

/* ---- the crash-loop budget (bb_init, libblackbox/budget.c) -------------- */

TestSuite(budget, .timeout = 240);

#define LOOP_RUNS   500
#define LOOP_BUDGET (2u << 20)   /* BLACKBOX_BUDGET of the loop */
#define SHM_SIZE    "size=4m"    /* the tmpfs it runs in, when root */

/* One run of a service that crashes at start (bbr_writer crash), its box
 * in f->shm, BLACKBOX_BUDGET=@budget; its wait status in *@st. */
static pid_t run_crasher_with(struct fx *f, const char *budget, int *st)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		char asan[512];

		/* a sanitizer build: the SIGSEGV is the test's, not ASan's */
		snprintf(asan, sizeof(asan), "%s:handle_segv=0",
			 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
		setenv("ASAN_OPTIONS", asan, 1);
		setenv("BLACKBOX_DIR", f->shm, 1);
		setenv("BLACKBOX_SIZE", "128k", 1);
		setenv("BLACKBOX_CRASH_HANDLER", "1", 1);
		setenv("BLACKBOX_BUDGET", budget, 1);
		execl(env_or_fail("BBR_WRITER"), "bbr_writer", "crash", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, st, 0), pid);
	return pid;
}

/* The same with the loop's budget; it must have crashed. */
static pid_t run_crasher(struct fx *f)
{
	int st;
	pid_t pid = run_crasher_with(f, "2m", &st);

	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
		  "run %ld did not crash (status %#x): its bb_init failed?", (long)pid, st);
	return pid;
}

/* BLACKBOX_BUDGET=0 turns the budget off; a value that is not a size
 * fails bb_init() (-EINVAL: the crasher exits 3 instead of crashing). */
Test(budget, zero_turns_it_off_and_garbage_is_refused)
{
	struct fx f;
	int st;

	fx_init(&f);
	for (int i = 0; i < 20; i++) {
		run_crasher_with(&f, "0", &st);
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %#x", st);
	}
	/* 20 boxes of 128k: ten times a budget of 256k, all kept */
	run_crasher_with(&f, "0", &st);
	cr_expect_eq(bbt_count_prefix(f.shm, BB_NAME_PREFIX), 21);
	run_crasher_with(&f, "256k", &st);
	cr_expect_leq(bbt_count_prefix(f.shm, BB_NAME_PREFIX), 2, "the budget removed nothing");
	run_crasher_with(&f, "12q", &st);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "bad BLACKBOX_BUDGET: status %#x", st);
	fx_fini(&f);
}

/* Bytes the box files of @uid in @dir hold, but the names in @except
 * (the budget's index, .bb-budget.<uid>, is not a box). */
static uint64_t usage_of(const char *dir, uid_t uid, const char *const *except)
{
	uint64_t total = 0;
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);

	cr_assert(d);
	while ((e = readdir(d))) {
		bool skip = false;

		for (const char *const *x = except; *x; x++)
			skip |= !strcmp(*x, e->d_name);
		skip |= strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) != 0;
		if (!skip && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_uid == uid)
			total += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return total;
}

/* A box of a live process in a PID namespace of its own (its pid 1 there
 * is another process here): the grandchild's pid as we see it.  It runs
 * until *@in (its stdin) is closed, by the test or by its end. */
static pid_t spawn_in_pid_ns(struct fx *f, pid_t *middle, int *in)
{
	int p[2], hold[2];
	pid_t g = -1;

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe(hold), 0);
	*middle = fork();
	cr_assert(*middle >= 0);
	if (*middle == 0) {
		pid_t c;

		if (unshare(CLONE_NEWPID) < 0)
			_exit(2);
		c = fork();
		if (c == 0) {
			int null = open("/dev/null", O_RDWR);

			dup2(hold[0], 0);
			dup2(null, 1);
			/* nothing else of the test's: its pipes must end with it */
			close_range(3, ~0u, 0);
			setenv("BLACKBOX_DIR", f->shm, 1);
			setenv("BLACKBOX_SIZE", "128k", 1);
			execl(env_or_fail("BBR_WRITER"), "bbr_writer", "wait", (char *)NULL);
			_exit(127);
		}
		if (write(p[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(4);
		close_range(0, ~0u, 0);
		waitpid(c, NULL, 0);
		_exit(0);
	}
	close(hold[0]);
	*in = hold[1];
	close(p[1]);
	cr_assert_eq(read(p[0], &g, sizeof(g)), (ssize_t)sizeof(g));
	close(p[0]);
	cr_assert_gt(g, 0);
	/* its box exists once it printed its readiness (to /dev/null): wait
	 * for a box claiming pid 1 */
	for (int i = 0; i < 500 && !bbt_box_of(f->shm, 1)[0]; i++)
		usleep(10000);
	cr_assert(bbt_box_of(f->shm, 1)[0], "the writer in its PID namespace made no box");
	return g;
}

/*
 * A service that crashes at start, restarted 500 times, with a budget of
 * 2 MiB: after every death its uid's dead boxes hold at most the budget;
 * the first box of the loop and the newest stay; the boxes left and the
 * count in the newest add up to every death.  As root, in a 4 MiB tmpfs
 * of its own (where the loop without a budget runs out of room after a
 * few dozen restarts), the budget never removes another uid's dead box, a
 * live owner's box of the same uid, nor the box of a live process of
 * another PID namespace, and another uid's bb_init() still finds room.
 */
Test(budget, a_crash_loop_holds_the_budget_and_counts_every_death)
{
	struct fx f;
	bool root = geteuid() == 0;
	char first[256], live_name[256] = "", nobody_name[256] = "", ns_name[256] = "";
	const char *except[4] = { NULL };
	pid_t pids[LOOP_RUNS], live = 0, nsmid = 0, ns = 0;
	int nsin = -1;
	uint64_t most = 0, counted = 0;
	size_t ne = 0;
	struct dirent *e;
	DIR *d;

	fx_init(&f);
	if (root) {
		cr_assert_eq(unshare(CLONE_NEWNS), 0);
		cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
		cr_assert_eq(mount("tmpfs", f.shm, "tmpfs", 0, SHM_SIZE ",mode=1777"), 0,
			     "mount: %s", strerror(errno));
	}
	for (int i = 0; i < LOOP_RUNS; i++) {
		uint64_t u;

		pids[i] = run_crasher(&f);
		if (i == 0)
			snprintf(first, sizeof(first), "%s", bbt_box_of(f.shm, pids[0]));
		if (i == 0 && root) {
			/* what the budget must never touch, of the same program
			 * and younger than the loop's first box: the first to go
			 * if the rules let them */
			usleep(10000);
			snprintf(nobody_name, sizeof(nobody_name), "%s",
				 bbt_box_of(f.shm, spawn_killed(&f, NOBODY)));
			live = spawn_live(&f, "wait");
			snprintf(live_name, sizeof(live_name), "%s", bbt_box_of(f.shm, live));
			ns = spawn_in_pid_ns(&f, &nsmid, &nsin);
			snprintf(ns_name, sizeof(ns_name), "%s", bbt_box_of(f.shm, 1));
			except[ne++] = live_name;
			except[ne++] = ns_name;
		}
		u = usage_of(f.shm, geteuid(), except);
		most = u > most ? u : most;
		cr_assert_leq(u, LOOP_BUDGET, "after %d restarts the uid's dead boxes hold %llu "
			      "bytes, over the budget of %u", i + 1, (unsigned long long)u,
			      LOOP_BUDGET);
	}
	cr_expect(exists(f.shm, first), "the first box of the crash loop is gone");
	cr_expect(bbt_box_of(f.shm, pids[LOOP_RUNS - 1])[0], "the newest box is gone");
	/* every death counted: the loop's boxes left, and what they counted */
	d = opendir(f.shm);
	cr_assert(d);
	while ((e = readdir(d))) {
		char p[PATH_MAX];
		struct bb_reader *r;
		uint64_t n = 0;
		bool ours = false;

		if (strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)))
			continue;
		snprintf(p, sizeof(p), "%s/%s", f.shm, e->d_name);
		if (bb_reader_open_path(p, BB_OPEN_SNAPSHOT | BB_OPEN_ANY_OWNER, &r, NULL, 0))
			continue;
		for (int i = 0; i < LOOP_RUNS && !ours; i++)
			ours = bb_reader_info(r)->pid == pids[i];
		if (ours) {
			bb_reader_state(r, bbt_budget_removed_cb, &n, NULL);
			counted += 1 + n;
		}
		bb_reader_close(r);
	}
	closedir(d);
	cr_expect_eq(counted, LOOP_RUNS, "%llu deaths counted of %d",
		     (unsigned long long)counted, LOOP_RUNS);
	if (root) {
		int in;
		pid_t other;

		cr_expect(exists(f.shm, nobody_name), "another uid's dead box was removed");
		cr_expect(exists(f.shm, live_name), "a live owner's box was removed");
		cr_expect(exists(f.shm, ns_name),
			  "the box of a live process of another PID namespace was removed");
		/* another uid's bb_init() finds room (it would not without the budget) */
		other = spawn_writer(&f, "wait", NOBODY, &in);
		cr_expect_gt(other, 0);
		kill(other, SIGKILL);
		close(in);
		waitpid(other, NULL, 0);
		close(nsin);
		kill(ns, SIGKILL);
		waitpid(nsmid, NULL, 0);
	}
	if (root)
		umount2(f.shm, MNT_DETACH); /* (the live writers' boxes go with it) */
	fx_fini(&f);
}
