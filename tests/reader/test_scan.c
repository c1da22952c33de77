/* SPDX-License-Identifier: MIT */
/* Description: boxes are found by header and judged by file owner: a
 * header that names another uid than its file's owner is never chosen; a
 * running process's box is the one it maps; once it is gone, boxes of
 * different owners claiming its pid make bb_reader_open_pid() refuse
 * (-ENOTUNIQ, naming every claim) rather than choose. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "../helpers/synth.h"

#define NOBODY 65534

static char err[8192];

TestSuite(scan, .init = bbt_setup_dir, .fini = bbt_teardown_dir);

/* @name's entry in a scan (NULL if absent). */
static const struct bb_box_entry *entry(const struct bb_box_entry *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/* A box of this process's pid saved as @name, created at @created. */
static void claim(struct synth *s, const char *name, uint64_t created, uint32_t uid)
{
	synth_hdr(s)->created_ns = created;
	synth_hdr(s)->uid = uid;
	cr_assert_eq(synth_save(s, bbt_path(name)), 0);
}

Test(scan, a_uid_mismatch_is_flagged_and_never_chosen)
{
	struct bb_box_entry *v;
	struct bb_reader *r;
	struct synth s;
	size_t n;

	synth_init(&s, 1, 4096);
	claim(&s, "blackbox.a", 100, getuid());
	claim(&s, "blackbox.b", 200, getuid() + 1); /* newer, but not the file owner's */
	cr_assert_eq(bb_reader_scan(bbt_dir, &v, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 2);
	cr_expect_eq(entry(v, n, "blackbox.b")->flags, BB_BOX_UID_MISMATCH);
	cr_expect_eq(entry(v, n, "blackbox.a")->flags, BB_BOX_CHOSEN);
	cr_expect_eq(entry(v, n, "blackbox.b")->info.file_uid, getuid());
	bb_reader_scan_free(v);
	cr_assert_eq(bb_reader_open_pid(getpid(), bbt_dir, BB_OPEN_ANY_OWNER, &r, err, sizeof(err)), 0);
	cr_expect_eq(bb_reader_info(r)->created_ns, 100, "the mismatched box was chosen");
	bb_reader_close(r);
	unlink(bbt_path("blackbox.a"));
	cr_expect_eq(bb_reader_open_pid(getpid(), bbt_dir, 0, &r, err, sizeof(err)), -ESRCH);
	cr_expect(strstr(err, "1 rejected") && strstr(err, "never chosen"), "%s", err);
	synth_free(&s);
}

Test(scan, not_boxes_are_listed_with_their_error_last)
{
	struct bb_box_entry *v;
	struct synth s;
	size_t n;
	int fd;

	synth_init(&s, 1, 4096);
	claim(&s, "blackbox.z", 100, getuid());
	fd = open(bbt_path("blackbox.empty"), O_CREAT | O_WRONLY, 0600);
	close(fd);
	cr_assert_eq(mkfifo(bbt_path("blackbox.fifo"), 0600), 0);
	cr_assert_eq(symlink("/etc/passwd", bbt_path("blackbox.link")), 0);
	cr_assert_eq(bb_reader_scan(bbt_dir, &v, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 4);
	cr_expect_str_eq(v[0].name, "blackbox.z");
	cr_expect_eq(v[0].error, 0);
	cr_expect_eq(entry(v, n, "blackbox.empty")->error, -ENODATA);
	cr_expect_eq(entry(v, n, "blackbox.fifo")->error, -EINVAL);
	cr_expect_eq(entry(v, n, "blackbox.link")->error, -ELOOP);
	cr_expect(strstr(entry(v, n, "blackbox.link")->problem, "symbolic link"), "%s",
		  entry(v, n, "blackbox.link")->problem);
	bb_reader_scan_free(v);
	cr_expect_eq(bb_reader_scan(bbt_path("nope"), &v, &n, err, sizeof(err)), -ENOENT);
	synth_free(&s);
}

Test(scan, claims_of_several_owners)
{
	struct bb_box_entry *v;
	struct bb_reader *r;
	struct synth s;
	size_t n;
	void *m;
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root to make a file owned by uid %d", NOBODY);
	synth_init(&s, 1, 4096);
	synth_make_alive(&s);   /* this process's pid and start time */
	claim(&s, "blackbox.mine", 100, 0);
	claim(&s, "blackbox.theirs", 200, NOBODY);
	cr_assert_eq(chown(bbt_path("blackbox.theirs"), NOBODY, NOBODY), 0);

	/* running, mapping neither: two owners, nothing to prefer */
	cr_expect_eq(bb_reader_open_pid(getpid(), bbt_dir, 0, &r, err, sizeof(err)), -ENOTUNIQ);
	cr_expect_null(r);
	cr_expect(strstr(err, "blackbox.mine (file owner uid 0") &&
		  strstr(err, "blackbox.theirs (file owner uid 65534") &&
		  strstr(err, "read one with --path"), "%s", err);
	cr_assert_eq(bb_reader_scan(bbt_dir, &v, &n, err, sizeof(err)), 0);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(v[i].flags, BB_BOX_AMBIGUOUS, "%s: %#x", v[i].name, v[i].flags);
	bb_reader_scan_free(v);

	/* mapping its own: that one, whatever the other claims */
	fd = open(bbt_path("blackbox.mine"), O_RDONLY);
	m = mmap(NULL, s.len, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	close(fd);
	cr_assert_eq(bb_reader_open_pid(getpid(), bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_info(r)->file_uid, 0);
	bb_reader_close(r);
	cr_assert_eq(bb_reader_scan(bbt_dir, &v, &n, err, sizeof(err)), 0);
	cr_expect_eq(entry(v, n, "blackbox.mine")->flags, BB_BOX_CHOSEN);
	cr_expect_eq(entry(v, n, "blackbox.theirs")->flags, BB_BOX_FOREIGN);
	bb_reader_scan_free(v);
	munmap(m, s.len);

	/* gone (another start time): the newest claim counts only if one
	 * owner made every claim */
	synth_hdr(&s)->starttime = 1;
	claim(&s, "blackbox.mine", 100, 0);
	claim(&s, "blackbox.theirs", 200, NOBODY);
	cr_expect_eq(bb_reader_open_pid(getpid(), bbt_dir, 0, &r, err, sizeof(err)), -ENOTUNIQ);
	unlink(bbt_path("blackbox.theirs"));
	claim(&s, "blackbox.later", 300, 0);
	cr_assert_eq(bb_reader_open_pid(getpid(), bbt_dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_info(r)->created_ns, 300);
	bb_reader_close(r);
	synth_free(&s);
}
