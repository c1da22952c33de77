/* SPDX-License-Identifier: MIT */
/* Description: boxes written by the library (bb_write_* in a forked child)
 * read back exactly: dead owner (post mortem) and live owner. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"

static char *dir;

static void setup(void)
{
	dir = bbt_mkdtemp();
}

static void teardown(void)
{
	bbt_rmdir(dir);
	free(dir);
}

TestSuite(writer, .init = setup, .fini = teardown);

static void child_writes(int n)
{
	struct bb_options o = { .segment_count = 2, .segment_size = 16384,
				.dir = dir, .flags = BB_OPT_NO_ENV };
	struct bb_field f[] = { BB_I64("fd", 3), BB_STR("path", "/etc/x y") };

	if (bb_init_opts(&o))
		_exit(10);
	for (int i = 0; i < n; i++)
		if (bb_write_i64(i))
			_exit(11);
	if (bb_write_str("hello") || bb_write_kv("k", "v") || bb_write_f64(0.5) ||
	    bb_write_bool(true) || bb_write_event("open", f, 2))
		_exit(12);
}

struct seen {
	int n, ints, other;
	long long first;
	char last[5][128];
};

static int seen_fn(const struct bb_record *rec, void *arg)
{
	struct seen *s = arg;
	char buf[128];

	cr_assert_geq(bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, buf,
				      sizeof(buf)), 0, "%s", buf);
	if (rec->tag == BB_TAG_OWNER)
		return 0;
	if (rec->tag == BB_TAG_I64) {
		long long v = strtoll(buf, NULL, 10);

		if (!s->ints)
			s->first = v; /* a wrapped log starts later */
		cr_expect_eq(v, s->first + s->ints, "consecutive integers");
		s->ints++;
	} else {
		memmove(s->last[0], s->last[1], sizeof(s->last[0]) * 4);
		snprintf(s->last[4], sizeof(s->last[4]), "%s", buf);
		s->other++;
	}
	cr_expect_gt(rec->tid, 0);
	s->n++;
	return 0;
}

Test(writer, dead_owner_reads_back)
{
	struct bb_reader *r;
	struct bb_stream_stats st;
	struct seen s = { 0 };
	char err[512];
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		child_writes(100);
		_exit(0); /* skips atexit: the box stays */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	cr_assert_eq(bb_reader_open_pid(pid, dir, BB_OPEN_SNAPSHOT, &r, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(bb_reader_info(r)->pid, pid);
	cr_expect_eq(bb_reader_liveness(r), BB_LIVENESS_ORPHANED);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, seen_fn, &s), 0);
	cr_expect_eq(s.ints, 100);
	cr_expect_eq(s.other, 5);
	cr_expect_str_eq(s.last[0], "hello");
	cr_expect_str_eq(s.last[1], "k=v");
	cr_expect_str_eq(s.last[2], "0.5");
	cr_expect_str_eq(s.last[3], "true");
	cr_expect_str_eq(s.last[4], "open fd=3 path=\"/etc/x y\"");
	bb_reader_total_stats(r, &st);
	cr_expect_eq(st.corrupt + st.torn + st.overwritten, 0);
	bb_reader_close(r);
}

Test(writer, live_owner_is_alive_and_saved_copy_reads_back)
{
	struct bb_reader *r;
	struct seen s = { 0 }, s2 = { 0 };
	char err[512], copy[4200];
	int go[2], ready[2], fd;
	pid_t pid;

	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;

		child_writes(3000); /* recycles its two 16 KiB segments */
		if (write(ready[1], "r", 1) != 1)
			_exit(13);
		if (read(go[0], &c, 1) < 0)
			_exit(14);
		_exit(0);
	}
	{
		char c;

		cr_assert_eq(read(ready[0], &c, 1), 1);
	}
	cr_assert_eq(bb_reader_open_pid(pid, dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_liveness(r), BB_LIVENESS_ALIVE);
	cr_assert_eq(bb_reader_walk(r, 0, seen_fn, &s), 0);
	cr_expect_gt(s.ints, 100);
	cr_expect_eq(s.other, 5);
	snprintf(copy, sizeof(copy), "%s/saved", dir);
	fd = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bb_reader_save(r, fd), 0);
	close(fd);
	bb_reader_close(r);
	cr_assert_eq(write(go[1], "g", 1), 1);
	waitpid(pid, NULL, 0);

	cr_assert_eq(bb_reader_open_path(copy, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_neq(bb_reader_liveness(r), BB_LIVENESS_ALIVE, "a copy is not the live box");
	cr_assert_eq(bb_reader_walk(r, 0, seen_fn, &s2), 0);
	cr_expect_eq(s2.n, s.n);
	bb_reader_close(r);
}
