/* SPDX-License-Identifier: MIT */
/*
 * Description: what survives what.  SIGKILL leaves the box and every
 * committed record; _exit() leaves it; exit() removes it; a forked child
 * never writes into its parent's rings and gets a box of its own; exec()
 * of a new image in the same process never collides with the old box.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "collect.h"


TestSuite(process, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 120);

/* Start tests/lib/child with @args; wait for its "ready" line. */
static pid_t start_child(const char *mode, const char *arg)
{
	const char *exe = getenv("BB_TEST_CHILD");
	int p[2];
	char buf[16] = "";
	pid_t pid;
	FILE *f;

	cr_assert_not_null(exe, "BB_TEST_CHILD not set");
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(exe, exe, mode, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	cr_assert_not_null(fgets(buf, sizeof(buf), f), "child died before ready");
	cr_assert_str_eq(buf, "ready\n");
	fclose(f);
	return pid;
}

static void kill9(pid_t pid)
{
	int st;

	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

Test(process, sigkill_leaves_every_committed_record)
{
	/* 4000 records of 32 bytes (with the CRC trailer) fit in the default
	 * box many times over: none is overwritten, every one must be there. */
	pid_t pid = start_child("records", "4000");
	struct bb_reader *r;
	struct tcollect c = { 0 };
	struct bb_stream_stats st;
	char err[256];

	kill9(pid);
	cr_assert_eq(bb_reader_open_pid(pid, bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_liveness(r), BB_LIVENESS_ORPHANED);
	cr_assert_eq(bb_reader_info(r)->phase, BB_PHASE_RUNNING);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, tcollect_cb, &c), 0);
	bb_reader_total_stats(r, &st);
	bb_reader_close(r);
	cr_assert_eq(st.corrupt + st.torn + st.overwritten, 0);
	cr_assert_eq(tcollect_count(&c, BB_TAG_KV), 4000);
	for (size_t i = 0; i < c.n; i++) {
		cr_assert_eq(c.r[i].i, (int64_t)i);
		cr_assert_eq(c.r[i].tid, pid);
	}
	free(c.r);
}

Test(process, clean_exit_removes_the_box)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (bb_init(0) || bb_write_str("bye"))
			_exit(3);
		exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(bbt_count_prefix(bbt_dir, BB_NAME_PREFIX), 0, "exit() must unlink the box");
}

Test(process, keep_on_exit_keeps_it_marked_exited)
{
	pid_t pid = fork();
	struct bb_reader *r;
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct bb_options o = { .flags = BB_OPT_KEEP_ON_EXIT };

		if (bb_init_opts(&o) || bb_write_str("bye"))
			_exit(3);
		exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(bb_reader_open_pid(pid, bbt_dir, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_info(r)->phase, BB_PHASE_EXITED);
	cr_assert_eq(bb_reader_liveness(r), BB_LIVENESS_EXITED);
	bb_reader_close(r);
}

Test(process, underscore_exit_leaves_the_box)
{
	pid_t pid = fork();
	struct bb_reader *r;
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (bb_init(0) || bb_write_str("last words"))
			_exit(3);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(bbt_count_prefix(bbt_dir, BB_NAME_PREFIX), 1);
	cr_assert_eq(bb_reader_open_pid(pid, bbt_dir, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_liveness(r), BB_LIVENESS_ORPHANED);
	bb_reader_close(r);
}

/* The child of fork() gets its own box at its first write; the parent's
 * rings hold only the parent's records. */
Test(process, fork_child_never_touches_parent_rings)
{
	char ppath[4096], cpath[4096];
	struct tcollect c;
	pid_t pid;
	int st, p[2];

	cr_assert_eq(bb_init(0), 0);
	bb_path(ppath, sizeof(ppath));
	cr_assert_eq(bb_write_str("parent before fork"), 0);
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char b[4096];
		int bad = 0;

		close(p[0]);
		bad |= bb_path(b, sizeof(b)) != -ENODEV;   /* no box before a write */
		for (int i = 0; i < 100; i++)
			bad |= bb_write_kv_i64("child", i) != 0;
		bad |= bb_path(b, sizeof(b)) <= 0;
		bad |= strcmp(b, ppath) == 0;
		if (write(p[1], b, strlen(b) + 1) < 0)
			bad = 1;
		_exit(bad ? 5 : 0);                       /* keeps the child's box */
	}
	close(p[1]);
	cr_assert_gt(read(p[0], cpath, sizeof(cpath)), 0);
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	cr_assert_eq(bb_write_str("parent after fork"), 0);

	tcollect_path(ppath, &c);
	cr_assert_eq(c.n, 2, "parent box: %zu records", c.n);
	cr_assert_str_eq(c.r[0].text, "parent before fork");
	cr_assert_str_eq(c.r[1].text, "parent after fork");
	free(c.r);
	tcollect_path(cpath, &c);
	cr_assert_eq(tcollect_count(&c, BB_TAG_KV), 100);
	for (size_t i = 0; i < c.n; i++)
		cr_assert_eq(c.r[i].tid, pid);
	free(c.r);
}

/* bb_thread_init() in the child of fork() makes the child's box and
 * says 0, as in the parent. */
Test(process, thread_init_in_a_fork_child_makes_its_box)
{
	char ppath[4096];
	pid_t pid;
	int st;

	cr_assert_eq(bb_init(0), 0);
	bb_path(ppath, sizeof(ppath));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char b[4096];
		int rc = bb_thread_init();

		if (rc != 0)
			_exit(10 + (rc < 0 ? -rc : rc) % 100);
		if (bb_path(b, sizeof(b)) <= 0 || !strcmp(b, ppath))
			_exit(5);
		_exit(bb_thread_init() == 0 ? 0 : 6);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child status %d", st);
	cr_assert_eq(WEXITSTATUS(st), 0, "child: 10 + errno (-EAGAIN: 21), 5 no box: %d",
		     WEXITSTATUS(st));
}

Test(process, fork_disable_policy)
{
	struct bb_options o = { .fork_policy = BB_FORK_DISABLE };
	pid_t pid;
	int st;

	cr_assert_eq(bb_init_opts(&o), 0);
	pid = fork();
	if (pid == 0)
		_exit(bb_write_str("x") == 0 && bb_write_i64(1) == 0 ? 0 : 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(bbt_count_prefix(bbt_dir, BB_NAME_PREFIX), 1, "only the parent's box");
}

/* exec() keeps pid and start time: each image gets a name of its own (the
 * first .0, the others a random sequence), and the reader picks the box the
 * process maps now. */
Test(process, exec_images_never_collide)
{
	pid_t pid = start_child("exec", "0");
	struct bb_reader *r;
	struct tcollect c = { 0 };
	uint32_t seq;

	cr_assert_eq(bbt_count_prefix(bbt_dir, BB_NAME_PREFIX), 3);
	cr_assert_eq(bb_reader_open_pid(pid, bbt_dir, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_liveness(r), BB_LIVENESS_ALIVE);
	seq = bb_reader_info(r)->sequence;
	cr_assert_neq(seq, 0);
	cr_assert_eq(bb_reader_walk(r, 0, tcollect_cb, &c), 0);
	bb_reader_close(r);
	cr_assert_eq(c.r[c.n - 1].i, 2, "the live image's box");
	free(c.r);
	kill9(pid);
	/* After death the newest box it left. */
	cr_assert_eq(bb_reader_open_pid(pid, bbt_dir, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_info(r)->sequence, seq);
	cr_assert_eq(bb_reader_liveness(r), BB_LIVENESS_ORPHANED);
	bb_reader_close(r);
}
