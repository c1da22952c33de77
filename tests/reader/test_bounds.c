/* SPDX-License-Identifier: MIT */
/* Description: the reader reads a box with pread into memory bounded by
 * box_size, refuses a file whose size disagrees with its header, and turns
 * a file that shrinks under a live reader into -ESTALE from every call,
 * never SIGBUS (there is no mapping to fault). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "../helpers/synth.h"

static char err[512];

TestSuite(bounds, .init = bbt_setup_dir, .fini = bbt_teardown_dir);

static int count_rec(const struct bb_record *rec, void *arg)
{
	(void)rec;
	++*(int *)arg;
	return 0;
}

static void build(struct synth *s);

/* build() saved as "box", opened with @flags into *r, its 50 records walked
 * once (a follow walk). */
static void open_built(struct synth *s, unsigned flags, struct bb_reader **r)
{
	int n = 0;

	build(s);
	cr_assert_eq(synth_save(s, bbt_path("box")), 0);
	cr_assert_eq(bb_reader_open_path(bbt_path("box"), flags, r, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(bb_reader_walk(*r, BB_WALK_FOLLOW, count_rec, &n), 0);
	cr_assert_eq(n, 50);
}

/* A box with records, a state table, a module area and a crash record. */
static void build(struct synth *s)
{
	static const struct synth_mod mods[] = {
		{ "/usr/bin/prog", 0x400000, 0x400000, 0x500000, "\x01\x02", 0 },
	};
	static const uint64_t frames[] = { 0x401000 };

	synth_init(s, 2, 4096);
	synth_use_crc(s);
	for (int i = 0; i < 50; i++)
		synth_str(s, (uint32_t)(i % 2), (uint64_t)i + 1, "a record of some length");
	synth_add_state(s, 4, 128);
	synth_state(s, 0, 2, 7, "k", "\x01", 1);
	synth_modules(s, 4096, 2, mods, 1);
	synth_crash(s, 9, SIGSEGV, 1, 0, 100, "t0", frames, 1);
}

Test(bounds, file_size_must_agree_with_box_size)
{
	struct bb_reader *r = NULL;
	struct synth s;
	int n = 0;

	build(&s);
	cr_assert_eq(synth_save(&s, bbt_path("box")), 0);
	/* within a page: read (the last bytes that are not there are judged
	 * per ring, FORMAT §9) */
	cr_assert_eq(truncate(bbt_path("box"), (off_t)s.len + 4096), 0);
	cr_assert_eq(bb_reader_open_path(bbt_path("box"), 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_walk(r, 0, count_rec, &n), 0);
	cr_expect_eq(n, 50);
	bb_reader_close(r);
	/* grown by more than a page (a sparse gigabyte): refused, saying so */
	for (off_t size = (off_t)s.len + 4097; size < ((off_t)1 << 31); size *= 64) {
		cr_assert_eq(truncate(bbt_path("box"), size), 0);
		cr_expect_eq(bb_reader_open_path(bbt_path("box"), BB_OPEN_SNAPSHOT, &r, err,
						 sizeof(err)), -EBADMSG);
		cr_expect(strstr(err, "grown or cut after it was written, refused"), "%s", err);
	}
	/* cut by more than a page */
	cr_assert_eq(truncate(bbt_path("box"), (off_t)s.len - 8192), 0);
	cr_expect_eq(bb_reader_open_path(bbt_path("box"), 0, &r, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "its header says"), "%s", err);
	synth_free(&s);
}

/* A box whose header claims a gigabyte, on a sparse file of that size:
 * consistent, so read, but a snapshot copies only what the rings and areas
 * hold, and a live walk only the rings' live parts. */
Test(bounds, a_huge_box_size_costs_what_the_box_holds)
{
	struct bb_reader *r = NULL;
	struct rusage ru0, ru1;
	struct synth s;
	int n = 0;

	build(&s);
	synth_hdr(&s)->box_size = (uint64_t)1 << 30;
	cr_assert_eq(synth_save(&s, bbt_path("box")), 0);
	cr_assert_eq(truncate(bbt_path("box"), (off_t)1 << 30), 0);
	getrusage(RUSAGE_SELF, &ru0);
	for (unsigned flags = 0; flags <= BB_OPEN_SNAPSHOT; flags += BB_OPEN_SNAPSHOT) {
		cr_assert_eq(bb_reader_open_path(bbt_path("box"), flags, &r, err, sizeof(err)), 0,
			     "%s", err);
		cr_expect_eq(bb_reader_walk(r, BB_WALK_MERGE, count_rec, &n), 0);
		bb_reader_close(r);
	}
	getrusage(RUSAGE_SELF, &ru1);
	cr_expect_eq(n, 100);
	/* ru_maxrss is in KiB; a copy of the gigabyte would show */
	cr_expect_lt(ru1.ru_maxrss - ru0.ru_maxrss, 64 * 1024, "peak RSS grew by %ld KiB",
		     ru1.ru_maxrss - ru0.ru_maxrss);
	synth_free(&s);
}

Test(bounds, a_box_that_shrinks_under_a_live_reader_is_an_error_not_a_fault)
{
	struct bb_reader *r = NULL;
	struct bb_crash cr;
	const struct bb_module *mods;
	size_t nmods, len;
	struct synth s;
	int n = 0, fd;

	open_built(&s, 0, &r);
	/* the owner truncates its file: a mapping would fault on the next
	 * access; the reader's next read comes up short */
	cr_assert_eq(truncate(bbt_path("box"), 4096), 0);
	cr_expect_eq(bb_reader_walk(r, 0, count_rec, &n), -ESTALE);
	cr_expect_eq(bb_reader_walk(r, BB_WALK_FOLLOW | BB_WALK_MERGE, count_rec, &n), -ESTALE);
	cr_expect_eq(bb_reader_state(r, (bb_state_fn)count_rec, &n, NULL), -ESTALE);
	cr_expect_eq(bb_reader_modules(r, &mods, &nmods, NULL, err, sizeof(err)), -ESTALE);
	cr_expect(strstr(err, "box changed size while being read"), "%s", err);
	fd = open(bbt_path("copy"), O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_expect_eq(bb_reader_save(r, fd), -ESTALE);
	close(fd);
	cr_expect_null(bb_reader_data(r, &len));
	cr_expect_eq(len, 0);
	/* the crash area is in the header, which is still there */
	cr_expect_eq(bb_reader_crash(r, &cr), 0);
	cr_expect_eq(cr.status, BB_CRASH_COMPLETE);
	/* regrown (with zeros): read again, nothing in it proven intact */
	cr_assert_eq(truncate(bbt_path("box"), (off_t)s.len), 0);
	n = 0;
	cr_expect_eq(bb_reader_walk(r, 0, count_rec, &n), 0);
	cr_expect_eq(n, 0);
	bb_reader_close(r);

	/* a snapshot was read at open: nothing happens to it */
	cr_assert_eq(synth_save(&s, bbt_path("box2")), 0);
	cr_assert_eq(bb_reader_open_path(bbt_path("box2"), BB_OPEN_SNAPSHOT, &r, err, sizeof(err)),
		     0);
	cr_assert_eq(truncate(bbt_path("box2"), 0), 0);
	n = 0;
	cr_expect_eq(bb_reader_walk(r, 0, count_rec, &n), 0);
	cr_expect_eq(n, 50);
	bb_reader_close(r);
	synth_free(&s);
}

/* A live reader sees what was written after it opened the box. */
Test(bounds, a_live_reader_reads_again)
{
	struct bb_reader *r = NULL;
	struct synth s;
	int n = 0;

	open_built(&s, 0, &r);
	for (int i = 0; i < 5; i++)
		synth_str(&s, 0, 100 + (uint64_t)i, "later");
	cr_assert_eq(synth_save(&s, bbt_path("box")), 0); /* rewrites the same inode */
	n = 0;
	cr_assert_eq(bb_reader_walk(r, BB_WALK_FOLLOW, count_rec, &n), 0);
	cr_expect_eq(n, 5, "only the new records");
	bb_reader_close(r);
	synth_free(&s);
}
