/* SPDX-License-Identifier: MIT */
/*
 * Description: the crash-loop budget keeps the evidence (bb_init(3) CRASH
 * LOOPS, docs/SECURITY.md rule 17) and a process pool pays for what its
 * children write (docs/DESIGN.md §9 "Process pools").  Real processes: each
 * program is a copy of tests/reap's bbr_writer (a copy is another file, so
 * another program, whatever its name); the boxes live in a private
 * directory, on a tmpfs of its own when run as root.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "../helpers/boxdir.h"
#include "../helpers/common.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define NOBODY 65534

struct fx {
	char base[PATH_MAX], shm[PATH_MAX], bin[PATH_MAX], arch[PATH_MAX];
	bool mounted;
};

static const char *env_or_fail(const char *name)
{
	const char *v = getenv(name);

	cr_assert(v && *v, "%s must name a program (set by meson)", name);
	return v;
}

/* The fixture; as root, @tmpfs (mount options) is mounted on its box
 * directory in a mount namespace of the test's own. */
static void fx_init(struct fx *f, const char *tmpfs)
{
	char *b = bbt_mkdtemp(), lib[PATH_MAX];

	memset(f, 0, sizeof(*f));
	snprintf(f->base, sizeof(f->base), "%s", b);
	free(b);
	cr_assert_eq(chmod(f->base, 0755), 0);
	snprintf(f->shm, sizeof(f->shm), "%s/shm", f->base);
	snprintf(f->bin, sizeof(f->bin), "%s/bin", f->base);
	snprintf(f->arch, sizeof(f->arch), "%s/arch", f->base);
	cr_assert_eq(mkdir(f->shm, 0755), 0);
	cr_assert_eq(chmod(f->shm, 01777), 0);
	cr_assert_eq(mkdir(f->bin, 0755), 0);
	cr_assert_eq(chmod(f->bin, 0755), 0);
	cr_assert_eq(mkdir(f->arch, 0700), 0);
	if (geteuid() == 0 && tmpfs) {
		char opt[128];

		cr_assert_eq(unshare(CLONE_NEWNS), 0);
		cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
		snprintf(opt, sizeof(opt), "%s,mode=1777", tmpfs);
		cr_assert_eq(mount("tmpfs", f->shm, "tmpfs", 0, opt), 0, "mount: %s",
			     strerror(errno));
		f->mounted = true;
	}
	/* the library the copies load (their RUNPATH is the build tree's) */
	snprintf(lib, sizeof(lib), "%s/libblackbox.so.0", f->bin);
	bbt_copy_file(env_or_fail("BB_LIB"), lib, 0755);
	setenv("LD_LIBRARY_PATH", f->bin, 1);
}

static void fx_fini(struct fx *f)
{
	if (f->mounted)
		umount2(f->shm, MNT_DETACH);
	nftw(f->base, bbt_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A program of its own: a copy of bbr_writer at bin/@sub/@name (@sub may
 * be ""), made once.  Its path in @buf. */
static const char *program(struct fx *f, const char *sub, const char *name, char *buf,
			   size_t len)
{
	char d[PATH_MAX];
	struct stat st;

	snprintf(d, sizeof(d), "%s/%s", f->bin, sub);
	mkdir(d, 0755);
	chmod(d, 0755);
	snprintf(buf, len, "%s/%s", d, name);
	if (stat(buf, &st) < 0)
		bbt_copy_file(env_or_fail("BBR_WRITER"), buf, 0755);
	return buf;
}

/* What a spawned program gets: its box in @f->shm (NULL: the environment
 * as it is), BLACKBOX_SIZE=@size, BLACKBOX_BUDGET=@budget, the crash
 * handler on; run as @uid when >= 0. */
struct how {
	const struct fx *f;
	const char *size, *budget;
	long uid;
};

/* Run @prog (argv[0] @argv0, argv[1] @mode unless NULL) as @h says.
 * Mode "crash": waits for its death (it must die of SIGSEGV); otherwise
 * its readiness line (its pid) is read and *@in gets its stdin.  Its pid. */
static pid_t spawn(const char *prog, const char *argv0, const char *mode,
		   const struct how *h, int *in)
{
	int pin[2], pout[2], st;
	char line[64] = "";
	pid_t pid;
	FILE *rd;

	cr_assert_eq(pipe(pin), 0);
	cr_assert_eq(pipe(pout), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char asan[512];

		dup2(pin[0], 0);
		dup2(pout[1], 1);
		close(pin[0]); close(pin[1]); close(pout[0]); close(pout[1]);
		snprintf(asan, sizeof(asan), "%s:handle_segv=0",
			 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
		setenv("ASAN_OPTIONS", asan, 1);
		if (h->f) {
			setenv("BLACKBOX_DIR", h->f->shm, 1);
			setenv("BLACKBOX_SIZE", h->size, 1);
			setenv("BLACKBOX_BUDGET", h->budget, 1);
			setenv("BLACKBOX_CRASH_HANDLER", "1", 1);
		}
		if (h->uid >= 0 &&
		    (setgroups(0, NULL) || setgid((gid_t)h->uid) || setuid((uid_t)h->uid)))
			_exit(126);
		execl(prog, argv0, mode, (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	if (mode && !strcmp(mode, "crash")) {
		close(pin[1]);
		close(pout[0]);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
			  "%s did not crash (status %#x): its bb_init failed?", prog, st);
		return pid;
	}
	rd = fdopen(pout[0], "r");
	cr_assert(rd);
	cr_assert(fgets(line, sizeof(line), rd), "%s %s did not get ready", prog,
		  mode ? mode : "");
	fclose(rd);
	cr_assert_eq(atol(line), (long)pid, "%s printed '%s'", prog, line);
	*in = pin[1];
	return pid;
}

/* bbr_writer (a copy, @prog) @mode with its box in f->shm. */
static pid_t run(struct fx *f, const char *prog, const char *mode, const char *size,
		 const char *budget, int *in)
{
	struct how h = { f, size, budget, -1 };

	return spawn(prog, "bbr_writer", mode, &h, in);
}

static pid_t crash(struct fx *f, const char *prog, const char *budget)
{
	return run(f, prog, "crash", "128k", budget, NULL);
}

/* Bytes the box files of @uid hold in @dir. */
static uint64_t usage(const char *dir, uid_t uid)
{
	uint64_t total = 0;
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);

	cr_assert(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_uid == uid)
			total += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return total;
}

/* The deaths the boxes of @pids[0..n) in @dir account for: one per box
 * present, plus what each counted (blackbox.budget_removed). */
static uint64_t deaths(const char *dir, const pid_t *pids, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		const char *name = bbt_box_of(dir, pids[i]);
		char p[PATH_MAX];
		struct bb_reader *r;
		uint64_t c = 0;

		if (!name[0])
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		cr_assert_eq(bb_reader_open_path(p, BB_OPEN_SNAPSHOT | BB_OPEN_ANY_OWNER, &r,
						 NULL, 0), 0, "open %s", p);
		bb_reader_state(r, bbt_budget_removed_cb, &c, NULL);
		bb_reader_close(r);
		total += 1 + c;
	}
	return total;
}

TestSuite(budget, .timeout = 240);

/*
 * Another program that happens to have the same comm crashes once in the
 * middle of a crash loop: its only box stays (a program is its
 * executable).  The loop's own boxes still hold the budget, its first and
 * newest stay, and its deaths add up.  Before: the other program's box
 * was a "middle" box of the loop, and went.
 */
Test(budget, the_same_comm_is_not_the_same_program)
{
	struct fx f;
	char a[PATH_MAX], b[PATH_MAX];
	pid_t loop[40], other = 0;
	char first[256];

	fx_init(&f, "size=16m");
	program(&f, "", "bbr_writer", a, sizeof(a));
	program(&f, "other", "bbr_writer", b, sizeof(b));
	for (int i = 0; i < 40; i++) {
		loop[i] = crash(&f, a, "1m");
		if (i == 0)
			snprintf(first, sizeof(first), "%s", bbt_box_of(f.shm, loop[0]));
		if (i == 5)
			other = crash(&f, b, "1m");
		cr_assert_leq(usage(f.shm, geteuid()), 1u << 20, "over the budget after %d", i);
	}
	cr_expect(bbt_box_of(f.shm, other)[0], "the other program's only box was removed");
	cr_expect(bbt_box_of(f.shm, loop[0])[0], "the loop's first box was removed");
	cr_expect(bbt_box_of(f.shm, loop[39])[0], "the loop's newest box was removed");
	cr_expect_eq(deaths(f.shm, loop, 40), 40, "the loop's deaths do not add up");
	cr_expect_eq(deaths(f.shm, &other, 1), 1);
	fx_fini(&f);
}

/*
 * 17 programs of one uid crash once each, together over the budget: each
 * keeps its only box (the budget yields).  Before: the oldest programs'
 * only boxes went.
 */
Test(budget, every_program_keeps_its_only_box)
{
	struct fx f;
	char p[PATH_MAX], name[32];
	pid_t pids[17];

	fx_init(&f, "size=16m");
	for (int i = 0; i < 17; i++) {
		snprintf(name, sizeof(name), "prog%02d", i);
		pids[i] = crash(&f, program(&f, "", name, p, sizeof(p)), "1m");
	}
	for (int i = 0; i < 17; i++)
		cr_expect(bbt_box_of(f.shm, pids[i])[0], "program %d lost its only box", i);
	fx_fini(&f);
}

/*
 * Two programs crash in turns: each one's boxes and counts add up to its
 * own deaths (the budget counts what it removes in the box of the program
 * it removed).  Before: one program's deaths were counted in the other's
 * boxes.
 */
Test(budget, deaths_are_counted_per_program)
{
	struct fx f;
	char a[PATH_MAX], b[PATH_MAX];
	pid_t pa[30], pb[30];

	fx_init(&f, "size=16m");
	program(&f, "", "alpha", a, sizeof(a));
	program(&f, "", "beta", b, sizeof(b));
	for (int i = 0; i < 30; i++) {
		pa[i] = crash(&f, a, "1m");
		pb[i] = crash(&f, b, "1m");
	}
	cr_expect_eq(deaths(f.shm, pa, 30), 30, "alpha's deaths");
	cr_expect_eq(deaths(f.shm, pb, 30), 30, "beta's deaths");
	cr_expect_leq(usage(f.shm, geteuid()), 1u << 20);
	fx_fini(&f);
}

/*
 * A crash loop, then the program starts healthy with a box as large as
 * the budget: other programs' dead boxes and the loop's newest crash stay;
 * its clean exit hands the loop's count to the program's next box.
 * Before: every dead box of the uid went, and the clean exit erased the
 * count.
 */
Test(budget, a_healthy_start_keeps_the_evidence_and_the_count)
{
	struct fx f;
	char a[PATH_MAX], o[PATH_MAX], name[32];
	pid_t others[3], loop[11];
	int in, st;
	pid_t healthy;

	fx_init(&f, "size=16m");
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "other%d", i);
		others[i] = crash(&f, program(&f, "", name, o, sizeof(o)), "1m");
	}
	program(&f, "", "service", a, sizeof(a));
	for (int i = 0; i < 10; i++)
		loop[i] = crash(&f, a, "1m");
	healthy = run(&f, a, "exit", "1m", "1m", &in);
	for (int i = 0; i < 3; i++)
		cr_expect(bbt_box_of(f.shm, others[i])[0], "another program's box was removed");
	cr_expect(bbt_box_of(f.shm, loop[9])[0], "the newest crashed box was removed");
	close(in);
	cr_assert_eq(waitpid(healthy, &st, 0), healthy);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_expect(!bbt_box_of(f.shm, healthy)[0], "a clean exit left its box");
	loop[10] = crash(&f, a, "1m");
	cr_expect_eq(deaths(f.shm, loop, 11), 11, "the service's deaths do not add up");
	fx_fini(&f);
}

/*
 * A set-uid-root program that links the library, run by another user
 * under names she picks and SIGKILLed 17 times (68 MiB of root's dead
 * boxes, over the default budget): a crashed root service's box stays,
 * and so it does when root's service starts again.  Before: the set-uid
 * program's bb_init() removed it.  In /dev/shm (a set-uid program ignores
 * BLACKBOX_DIR), a tmpfs of the test's own mount namespace.
 */
Test(budget, a_set_uid_program_removes_nothing)
{
	struct fx f;
	char svc[PATH_MAX], suid[PATH_MAX], link[PATH_MAX], crashed[256];
	pid_t root_pid;
	int in, st;

	if (geteuid() != 0)
		cr_skip_test("needs root (a set-uid-root program, a tmpfs on /dev/shm)");
	fx_init(&f, NULL);
	cr_assert_eq(unshare(CLONE_NEWNS), 0);
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	cr_assert_eq(mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=96m,mode=1777"), 0,
		     "mount: %s", strerror(errno));
	snprintf(suid, sizeof(suid), "%s/suidprog", f.bin);
	bbt_copy_file(env_or_fail("BBB_SUID"), suid, 0755);
	cr_assert_eq(chown(suid, 0, 0), 0);
	cr_assert_eq(chmod(suid, 04755), 0);
	program(&f, "", "service", svc, sizeof(svc));
	/* root's service crashes once: its box in /dev/shm, the default size */
	root_pid = fork();
	cr_assert(root_pid >= 0);
	if (root_pid == 0) {
		setenv("BLACKBOX_CRASH_HANDLER", "1", 1);
		setenv("ASAN_OPTIONS", "handle_segv=0:detect_leaks=0", 1);
		unsetenv("BLACKBOX_DIR");
		unsetenv("BLACKBOX_SIZE");
		unsetenv("BLACKBOX_BUDGET");
		execl(svc, "service", "crash", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(root_pid, &st, 0), root_pid);
	cr_assert(WIFSIGNALED(st), "the service did not crash: %#x", st);
	snprintf(crashed, sizeof(crashed), "%s", bbt_box_of("/dev/shm", root_pid));
	cr_assert(crashed[0], "the service made no box");
	for (int i = 0; i < 17; i++) {
		pid_t p;

		snprintf(link, sizeof(link), "%s/name%02d", f.bin, i);
		cr_assert_eq(symlink(suid, link), 0);
		p = spawn(link, link, NULL, &(struct how){ NULL, NULL, NULL, NOBODY }, &in);
		kill(p, SIGKILL);
		close(in);
		waitpid(p, NULL, 0);
		cr_assert(bbt_box_of("/dev/shm", p)[0], "the set-uid program made no box");
		cr_expect(bbt_box_of("/dev/shm", root_pid)[0],
			  "run %d of the set-uid program removed root's crashed box", i + 1);
	}
	/* root's service starts again: its newest crash is kept */
	{
		pid_t again = fork();

		cr_assert(again >= 0);
		if (again == 0) {
			setenv("BLACKBOX_CRASH_HANDLER", "1", 1);
			setenv("ASAN_OPTIONS", "handle_segv=0:detect_leaks=0", 1);
			execl(svc, "service", "crash", (char *)NULL);
			_exit(127);
		}
		cr_assert_eq(waitpid(again, &st, 0), again);
	}
	cr_expect(bbt_box_of("/dev/shm", root_pid)[0], "root's service removed its own evidence");
	umount2("/dev/shm", MNT_DETACH);
	fx_fini(&f);
}

/* Wait (at most @sec seconds: a bound on a hang, not a figure) until
 * @name exists in @dir (or is gone, with !@want). */
static bool wait_name(const char *dir, const char *name, bool want, int sec)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	for (int i = 0; i < sec * 100; i++) {
		if ((lstat(p, &st) == 0) == want)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * While bb-reap --watch watches the directory, the budget leaves the
 * dead boxes to it (archived and reported before they go); when it stops,
 * the budget trims again.  A watcher's file that another user made is not
 * believed.  Before: the budget removed boxes under the watcher's eyes.
 */
Test(budget, the_watcher_removes_and_nobody_can_pretend_to_be_it)
{
	struct fx f;
	char a[PATH_MAX], lock[64];
	pid_t pids[20], w;
	int st;

	fx_init(&f, "size=16m");
	program(&f, "", "service", a, sizeof(a));
	snprintf(lock, sizeof(lock), ".bb-reap-watch.%lu", (unsigned long)geteuid());
	w = fork();
	cr_assert(w >= 0);
	if (w == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* --min-age: it leaves them while the loop runs */
		execl(env_or_fail("BB_REAP"), "bb-reap", "--watch", "--dir", f.shm, "--archive",
		      f.arch, "--min-age", "3600", (char *)NULL);
		_exit(127);
	}
	cr_assert(wait_name(f.shm, lock, true, 60), "bb-reap --watch made no lock");
	for (int i = 0; i < 20; i++)
		pids[i] = crash(&f, a, "1m");
	for (int i = 0; i < 20; i++)
		cr_expect(bbt_box_of(f.shm, pids[i])[0], "box %d removed under the watcher", i);
	kill(w, SIGTERM);
	cr_assert_eq(waitpid(w, &st, 0), w);
	cr_expect(wait_name(f.shm, lock, false, 10), "the watcher left its lock file");
	crash(&f, a, "1m");
	cr_expect_leq(usage(f.shm, geteuid()), 1u << 20, "no trim once the watcher is gone");
	if (geteuid() == 0) {
		/* another user's lock, held, under root's name and its own */
		int hold[2];
		pid_t liar;

		cr_assert_eq(pipe(hold), 0);
		liar = fork();
		cr_assert(liar >= 0);
		if (liar == 0) {
			char p[PATH_MAX];
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			int fd;

			close(hold[1]);
			if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
				_exit(126);
			snprintf(p, sizeof(p), "%s/.bb-reap-watch.0", f.shm);
			fd = open(p, O_RDWR | O_CREAT, 0644);
			if (fd < 0 || fcntl(fd, F_SETLK, &fl) < 0)
				_exit(2);
			(void)!read(hold[0], p, 1);
			_exit(0);
		}
		close(hold[0]);
		cr_assert(wait_name(f.shm, ".bb-reap-watch.0", true, 10));
		for (int i = 0; i < 20; i++)
			crash(&f, a, "1m");
		cr_expect_leq(usage(f.shm, 0), 1u << 20, "another user's lock stopped root's budget");
		close(hold[1]);
		waitpid(liar, NULL, 0);
	}
	fx_fini(&f);
}

/*
 * The budget's index (.bb-budget.<euid>) is the caller's own, 0600; one
 * that another user planted claiming nothing is dead is not believed.
 */
Test(budget, the_index_is_ours_and_a_planted_one_is_ignored)
{
	struct fx f;
	char a[PATH_MAX], p[PATH_MAX];
	struct stat st;

	fx_init(&f, "size=16m");
	program(&f, "", "service", a, sizeof(a));
	if (geteuid() == 0) {
		pid_t liar = fork();

		cr_assert(liar >= 0);
		if (liar == 0) {
			char zero[4096] = { 0 };
			int fd;

			if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
				_exit(126);
			snprintf(p, sizeof(p), "%s/.bb-budget.0", f.shm);
			fd = open(p, O_RDWR | O_CREAT, 0600);
			_exit(fd < 0 || write(fd, zero, sizeof(zero)) < 0);
		}
		cr_assert_eq(waitpid(liar, NULL, 0), liar);
		for (int i = 0; i < 20; i++) {
			crash(&f, a, "1m");
			cr_assert_leq(usage(f.shm, 0), 1u << 20, "a planted index stopped the budget");
		}
	} else {
		crash(&f, a, "1m");
		snprintf(p, sizeof(p), "%s/.bb-budget.%lu", f.shm, (unsigned long)geteuid());
		cr_assert_eq(lstat(p, &st), 0, "no index");
		cr_expect(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600 &&
			  st.st_uid == geteuid(), "the index is not the caller's 0600 file");
	}
	fx_fini(&f);
}

/* The index's count of full checks (FORMAT.md §2: the u64 at 16), 0
 * when there is no index. */
static uint64_t full_checks(const struct fx *f)
{
	char p[PATH_MAX];
	uint64_t gen = 0;
	int fd;

	snprintf(p, sizeof(p), "%s/.bb-budget.%lu", f->shm, (unsigned long)geteuid());
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (pread(fd, &gen, sizeof(gen), 16) != (ssize_t)sizeof(gen))
			gen = 0;
		close(fd);
	}
	return gen;
}

/*
 * Start-up cost independent of live boxes: with 100 live boxes of the uid
 * holding 12 times the budget, 50 bb_init() + bb_close() in a row check
 * the directory at most once (the index's bound fits); a crash loop then
 * still trims (the bound reaches the budget).  Before: every bb_init()
 * opened and judged the 100 live boxes.
 */
Test(budget, live_boxes_are_not_judged_at_every_start)
{
	struct fx f;
	char a[PATH_MAX];
	int in[100];
	pid_t live[100], p;
	uint64_t before, after;
	int st;

	fx_init(&f, "size=64m");
	program(&f, "", "service", a, sizeof(a));
	for (int i = 0; i < 100; i++)
		live[i] = run(&f, a, "wait", "128k", "1m", &in[i]);
	before = full_checks(&f);
	p = fork();
	cr_assert(p >= 0);
	if (p == 0) {
		for (int i = 0; i < 50; i++) {
			struct bb_options o = { .dir = f.shm, .size = 128 << 10, .budget = 1 << 20,
						.flags = BB_OPT_NO_ENV };

			if (bb_init_opts(&o) || bb_close())
				_exit(2);
		}
		_exit(0);
	}
	cr_assert_eq(waitpid(p, &st, 0), p);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	after = full_checks(&f);
	cr_expect_gt(after, 0, "no index");
	cr_expect_leq(after - before, 1, "50 starts checked the directory %llu times",
		      (unsigned long long)(after - before));
	for (int i = 0; i < 30; i++)
		crash(&f, a, "1m");
	/* the live boxes are not dead: only the loop's count */
	cr_expect_leq(usage(f.shm, geteuid()), (100u << 17) + (1u << 20),
		      "the crash loop beside live boxes is not trimmed");
	for (int i = 0; i < 100; i++) {
		kill(live[i], SIGKILL);
		close(in[i]);
		waitpid(live[i], NULL, 0);
	}
	fx_fini(&f);
}

/* ---- a process pool -------------------------------------------------- */

#define POOL_CHILDREN 50
#define POOL_RECORDS  1000

static int count_cb(const struct bb_record *rec, void *arg)
{
	(void)rec;
	(*(size_t *)arg)++;
	return 0;
}

/*
 * A prefork server: the parent's default box, 50 children that each
 * write 1,000 records.  The children's boxes hold at most a quarter of 50
 * default boxes, and each holds its 1,000 records.  Before: 50 boxes of
 * 4 MiB.
 */
Test(budget, a_pool_pays_for_what_its_children_write)
{
	struct fx f;
	pid_t server;
	int st, ready[2];

	fx_init(&f, "size=256m");
	cr_assert_eq(pipe(ready), 0);
	server = fork();
	cr_assert(server >= 0);
	if (server == 0) {
		struct bb_options o = { .dir = f.shm };
		int go[2];
		pid_t kids[POOL_CHILDREN];

		close(ready[0]);
		if (pipe(go) || bb_init_opts(&o))
			_exit(2);
		for (int i = 0; i < POOL_CHILDREN; i++) {
			kids[i] = fork();
			if (kids[i] == 0) {
				char c;

				close(go[1]);
				for (int j = 0; j < POOL_RECORDS; j++)
					if (bb_write_kv_i64("request", j) < 0)
						_exit(3);
				(void)!write(ready[1], "x", 1);
				(void)!read(go[0], &c, 1);
				_exit(0);
			}
		}
		close(go[0]);
		close(ready[1]);
		/* the test reads the boxes, then closes its end: go */
		for (int i = 0; i < POOL_CHILDREN; i++)
			waitpid(kids[i], &st, 0);
		_exit(0);
	}
	close(ready[1]);
	for (int i = 0; i < POOL_CHILDREN; i++) {
		char c;

		cr_assert_eq(read(ready[0], &c, 1), 1, "child %d did not write", i);
	}
	{
		uint64_t children = 0;
		size_t boxes = 0;
		struct dirent *e;
		DIR *d = opendir(f.shm);

		cr_assert(d);
		while ((e = readdir(d))) {
			char p[PATH_MAX];
			struct bb_reader *r;
			struct stat s;
			size_t n = 0;

			if (strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)))
				continue;
			snprintf(p, sizeof(p), "%s/%s", f.shm, e->d_name);
			cr_assert_eq(stat(p, &s), 0);
			cr_assert_eq(bb_reader_open_path(p, BB_OPEN_SNAPSHOT, &r, NULL, 0), 0);
			if (bb_reader_info(r)->pid != server) {
				children += (uint64_t)s.st_blocks * 512;
				boxes++;
				bb_reader_walk(r, 0, count_cb, &n);
				cr_expect_geq(n, POOL_RECORDS, "a child's box holds %zu records", n);
			}
			bb_reader_close(r);
		}
		closedir(d);
		cr_expect_eq(boxes, POOL_CHILDREN);
		cr_expect_leq(children, (uint64_t)POOL_CHILDREN * BB_DEFAULT_SIZE / 4,
			      "50 children hold %llu bytes", (unsigned long long)children);
	}
	close(ready[0]);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	fx_fini(&f);
}

/*
 * A full box directory: the child's box cannot be reserved, so its first
 * write fails (and the rest are dropped); never a SIGBUS in a store.
 */
Test(budget, a_full_directory_fails_a_child_at_its_box_not_in_a_store)
{
	struct fx f;
	pid_t server;
	int st;

	if (geteuid() != 0)
		cr_skip_test("needs root (a tmpfs of a given size)");
	/* the parent's 4 MiB box and the index fit, a child's box does not */
	fx_init(&f, "size=4200k");
	server = fork();
	cr_assert(server >= 0);
	if (server == 0) {
		struct bb_options o = { .dir = f.shm };
		pid_t kid;

		if (bb_init_opts(&o))
			_exit(2);
		kid = fork();
		if (kid == 0) {
			int r = bb_write_kv_i64("first", 1);

			for (int j = 0; j < 10000; j++)
				bb_write_kv_i64("request", j);
			_exit(r < 0 ? 0 : 4);
		}
		waitpid(kid, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
	}
	cr_assert_eq(waitpid(server, &st, 0), server);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the child: %d (0: its first write failed; 4: it wrote; 100+: signal)",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	fx_fini(&f);
}
