/* SPDX-License-Identifier: MIT */
/* Description: the reader refuses every malformed or unsafe box with the
 * right errno and a precise message, and accepts what the format allows. */
#include <byteswap.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "../helpers/synth.h"

static char *dir;
static char err[512];

static void setup(void)
{
	dir = bbt_mkdtemp();
	err[0] = '\0';
}

static void teardown(void)
{
	bbt_rmdir(dir);
	free(dir);
}

TestSuite(open, .init = setup, .fini = teardown);

static char *path_of(const char *name)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* Open @s saved as a file and expect @rc and @phrase in the message. */
static void expect_file(struct synth *s, int want, const char *phrase)
{
	struct bb_reader *r = NULL;
	int rc;

	cr_assert_eq(synth_save(s, path_of("box")), 0);
	rc = bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err));
	cr_expect_eq(rc, want, "rc %d (%s), want %d", rc, strerror(-rc), want);
	cr_expect_null(r);
	cr_expect(strstr(err, phrase), "message \"%s\" lacks \"%s\"", err, phrase);
	/* the same bytes from memory must be refused the same way */
	rc = bb_reader_open_mem(s->buf, s->len, 0, &r, err, sizeof(err));
	cr_expect_eq(rc, want, "mem: rc %d, want %d", rc, want);
	cr_expect(strstr(err, phrase), "mem: message \"%s\" lacks \"%s\"", err, phrase);
	bb_reader_close(r);
}

Test(open, valid_box_opens_and_reports_header)
{
	struct synth s;
	struct bb_reader *r;
	const struct bb_box_info *in;

	synth_init(&s, 2, 4096);
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	cr_assert_eq(bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err)), 0, "%s", err);
	in = bb_reader_info(r);
	cr_expect_str_eq(in->path, path_of("box"));
	cr_expect_eq(in->stream_count, 2);
	cr_expect_eq(in->ring_size, 4096);
	cr_expect_eq(in->pid, getpid());
	cr_expect_str_eq(in->comm, "synth");
	cr_expect_eq(in->file_size, s.len);
	cr_expect_neq(in->file_ino, 0);
	cr_expect_eq(in->streams_used, 2);
	bb_reader_close(r);
	synth_free(&s);
}

Test(open, missing_file)
{
	struct bb_reader *r;

	cr_expect_eq(bb_reader_open_path(path_of("nope"), 0, &r, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "no such file"), "%s", err);
}

Test(open, empty_file)
{
	struct bb_reader *r;
	int fd = open(path_of("box"), O_CREAT | O_WRONLY, 0600);

	close(fd);
	cr_expect_eq(bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err)), -ENODATA);
	cr_expect(strstr(err, "empty file"), "%s", err);
}

Test(open, shorter_than_header)
{
	struct synth s;
	struct bb_reader *r;

	synth_init(&s, 1, 4096);
	s.len = 1000;
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	cr_expect_eq(bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err)), -ENODATA);
	cr_expect(strstr(err, "1000 bytes, shorter than a 4096-byte header"), "%s", err);
	cr_expect_eq(bb_reader_open_mem(s.buf, 1000, 0, &r, err, sizeof(err)), -ENODATA);
	synth_free(&s);
}

Test(open, magic_not_yet_written)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->magic = 0;
	expect_file(&s, -ENODATA, "no magic yet");
	synth_free(&s);
}

Test(open, wrong_magic)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->magic = 0x1122334455667788;
	expect_file(&s, -EBADMSG, "bad magic 0x1122334455667788 (not a box)");
	synth_free(&s);
}

Test(open, byte_swapped_magic)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->magic = bswap_64(BB_MAGIC);
	expect_file(&s, -EPFNOSUPPORT, "byte-swapped magic");
	synth_free(&s);
}

Test(open, byte_swapped_order_mark)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->byte_order = bswap_32(BB_BYTE_ORDER_MARK);
	expect_file(&s, -EPFNOSUPPORT, "byte order mark 0x04030201");
	synth_free(&s);
}

Test(open, other_word_size)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->word_size = sizeof(void *) == 8 ? 4 : 8;
	expect_file(&s, -EPFNOSUPPORT, "-byte-word process");
	synth_free(&s);
}

Test(open, newer_major_refused)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->version_major = BB_FORMAT_MAJOR + 1;
	synth_hdr(&s)->version_minor = 0;
	expect_file(&s, -EPROTONOSUPPORT, "format 4.0 is newer than this reader (3.x)");
	synth_free(&s);
}

Test(open, newer_minor_accepted)
{
	struct synth s;
	struct bb_reader *r;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->version_minor = 7;
	synth_hdr(&s)->clock = 9; /* a clock of a later minor: read, printed raw */
	cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_info(r)->version_minor, 7);
	bb_reader_close(r);
	synth_free(&s);
}

Test(open, ring_size_not_power_of_two)
{
	struct synth s;

	synth_init(&s, 1, 8192);
	synth_hdr(&s)->ring_size = 6144;
	expect_file(&s, -EBADMSG, "ring_size 6144 is not a power of two");
	synth_free(&s);
}

Test(open, ring_count_zero_and_huge)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->ring_count = 0;
	expect_file(&s, -EBADMSG, "ring_count 0 is outside 1..1024");
	synth_hdr(&s)->ring_count = 5000;
	expect_file(&s, -EBADMSG, "ring_count 5000 is outside 1..1024");
	synth_free(&s);
}

Test(open, max_record_out_of_range)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->max_record = 8192;
	expect_file(&s, -EBADMSG, "max_record 8192 is outside");
	synth_hdr(&s)->max_record = 16;
	expect_file(&s, -EBADMSG, "max_record 16 is outside");
	synth_free(&s);
}

Test(open, header_and_desc_sizes)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->header_size = 100;
	expect_file(&s, -EBADMSG, "header_size 100");
	synth_hdr(&s)->header_size = BB_HEADER_SIZE;
	synth_hdr(&s)->ring_desc_size = 64;
	expect_file(&s, -EBADMSG, "ring_desc_size 64");
	synth_free(&s);
}

Test(open, ring_table_outside_file)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->ring_table_offset = UINT64_C(1) << 62; /* no overflow either */
	expect_file(&s, -EBADMSG, "ring table [4611686018427387904, +128) lies outside");
	synth_free(&s);
}

/*
 * A descriptor whose ring cannot be located condemns that ring only
 * (FORMAT §9.5, 2.0): the box opens, the ring is reported with the reason
 * and counted corrupt, and ring 0's record is still delivered.
 */
static int count_rec(const struct bb_record *rec, void *arg)
{
	(void)rec;
	++*(int *)arg;
	return 0;
}

static void expect_ring_bad(struct synth *s, uint32_t ring, const char *phrase)
{
	for (int mem = 0; mem < 2; mem++) {
		struct bb_reader *r = NULL;
		const struct bb_stream_stats *st;
		int rc, n = 0;

		if (mem) {
			rc = bb_reader_open_mem(s->buf, s->len, 0, &r, err, sizeof(err));
		} else {
			cr_assert_eq(synth_save(s, path_of("box")), 0);
			rc = bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err));
		}
		cr_assert_eq(rc, 0, "open: %s", err);
		cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, count_rec, &n), 0);
		cr_expect_eq(n, 1, "the good ring's record is read (got %d)", n);
		st = bb_reader_stream_stats(r, ring);
		cr_expect(strstr(st->problem, phrase), "problem \"%s\" lacks \"%s\"",
			  st->problem, phrase);
		cr_expect_eq(st->corrupt, 1);
		cr_expect_eq(bb_reader_stream_stats(r, 0)->problem[0], '\0');
		bb_reader_close(r);
	}
}

Test(open, truncated_rings)
{
	struct synth s;

	synth_init(&s, 2, 4096);
	synth_str(&s, 0, 5, "kept");
	s.len -= 100; /* the last ring no longer fits: only it is lost */
	expect_ring_bad(&s, 1, "data [12288, +4096) lies outside the 16284-byte file");
	synth_free(&s);
}

Test(open, ring_offset_outside_file)
{
	struct synth s;

	synth_init(&s, 2, 4096);
	synth_str(&s, 0, 5, "kept");
	synth_desc(&s, 1)->data_offset = 8192 + 4096 * 10;
	expect_ring_bad(&s, 1, "data [49152, +4096) lies outside the 16384-byte file");
	/* an offset that overflows offset + size */
	synth_desc(&s, 1)->data_offset = UINT64_MAX - 100;
	expect_ring_bad(&s, 1, "data [");
	synth_free(&s);
}

Test(open, ring_offset_misaligned_or_overlapping)
{
	struct synth s;

	synth_init(&s, 2, 4096);
	synth_str(&s, 0, 5, "kept");
	synth_desc(&s, 1)->data_offset = 8192 + 8;
	expect_ring_bad(&s, 1, "not a multiple of the page size");
	synth_desc(&s, 1)->data_offset = 8192;
	expect_ring_bad(&s, 1, "data at 8192 overlaps ring 0");
	synth_desc(&s, 1)->data_offset = 0;
	expect_ring_bad(&s, 1, "overlaps the ring table");
	synth_free(&s);
}

Test(open, impossible_pid)
{
	struct synth s;

	synth_init(&s, 1, 4096);
	synth_hdr(&s)->pid = -5;
	expect_file(&s, -EBADMSG, "owner pid -5 is impossible");
	synth_free(&s);
}

Test(open, symlink_never_followed)
{
	struct synth s;
	struct bb_reader *r;

	synth_init(&s, 1, 4096);
	cr_assert_eq(synth_save(&s, path_of("real")), 0);
	{
		char real[4096];

		snprintf(real, sizeof(real), "%s", path_of("real"));
		cr_assert_eq(symlink(real, path_of("link")), 0);
	}
	cr_expect_eq(bb_reader_open_path(path_of("link"), 0, &r, err, sizeof(err)), -ELOOP);
	cr_expect(strstr(err, "symbolic link"), "%s", err);
	synth_free(&s);
}

Test(open, directory_refused)
{
	struct bb_reader *r;

	cr_expect_eq(bb_reader_open_path(dir, 0, &r, err, sizeof(err)), -EISDIR);
	cr_expect(strstr(err, "is a directory"), "%s", err);
}

Test(open, fifo_refused_without_blocking)
{
	struct bb_reader *r;

	cr_assert_eq(mkfifo(path_of("fifo"), 0600), 0);
	cr_expect_eq(bb_reader_open_path(path_of("fifo"), 0, &r, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "not a regular file"), "%s", err);
}

Test(open, other_owner_refused)
{
	struct synth s;
	struct bb_reader *r;

	if (geteuid() != 0)
		cr_skip_test("needs root to chown");
	synth_init(&s, 1, 4096);
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	cr_assert_eq(chown(path_of("box"), 65534, 65534), 0);
	cr_expect_eq(bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "file owner uid 65534 differs from the box's uid 0"), "%s", err);
	/* explicitly accepted */
	cr_expect_eq(bb_reader_open_path(path_of("box"), BB_OPEN_ANY_OWNER, &r, err,
					 sizeof(err)), 0, "%s", err);
	bb_reader_close(r);
	synth_free(&s);
}

Test(open, open_fd_and_openat_and_snapshot)
{
	struct synth s;
	struct bb_reader *r;
	size_t len;
	const uint8_t *data;
	int fd, dfd;

	synth_init(&s, 1, 4096);
	synth_str(&s, 0, 5, "x");
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	fd = open(path_of("box"), O_RDONLY);
	cr_assert_eq(bb_reader_open_fd(fd, "label", BB_OPEN_SNAPSHOT, &r, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(bb_reader_info(r)->path, "label");
	data = bb_reader_data(r, &len);
	cr_expect_eq(len, s.len);
	cr_expect_eq(memcmp(data, s.buf, len), 0);
	bb_reader_close(r);
	cr_expect_geq(fcntl(fd, F_GETFD), 0, "the caller keeps its fd");
	close(fd);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(bb_reader_openat(dfd, "box", 0, &r, err, sizeof(err)), 0, "%s", err);
	bb_reader_close(r);
	cr_expect_eq(bb_reader_openat(dfd, "nope", 0, &r, err, sizeof(err)), -ENOENT);
	close(dfd);
	synth_free(&s);
}

/* A box named as the writer names it, mapped by this process: alive. */
Test(open, open_pid_prefers_mapped_box)
{
	struct synth s;
	struct bb_reader *r;
	char name[128];
	void *m;
	int fd;

	synth_init(&s, 1, 4096);
	synth_make_alive(&s);
	/* an older box left by the same incarnation, not mapped */
	synth_hdr(&s)->sequence = 0;
	synth_hdr(&s)->created_ns = 50;
	snprintf(name, sizeof(name), "blackbox.%d.%llu.0", getpid(),
		 (unsigned long long)synth_hdr(&s)->starttime);
	cr_assert_eq(synth_save(&s, path_of(name)), 0);
	/* a newer one, not mapped either: newest wins while nothing is mapped */
	synth_hdr(&s)->sequence = 1;
	synth_hdr(&s)->created_ns = 100;
	snprintf(name, sizeof(name), "blackbox.%d.%llu.1", getpid(),
		 (unsigned long long)synth_hdr(&s)->starttime);
	cr_assert_eq(synth_save(&s, path_of(name)), 0);
	/* the name says our pid, the header another one: not ours */
	synth_hdr(&s)->pid = 1;
	synth_hdr(&s)->sequence = 7;
	synth_hdr(&s)->created_ns = 200;
	snprintf(name, sizeof(name), "blackbox.%d.%llu.7", getpid(),
		 (unsigned long long)synth_hdr(&s)->starttime);
	cr_assert_eq(synth_save(&s, path_of(name)), 0);
	synth_hdr(&s)->pid = getpid();

	/* no reader maps a box: opening it never makes its owner look alive */
	cr_assert_eq(bb_reader_open_pid(getpid(), dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_info(r)->sequence, 1);
	cr_expect_neq(bb_reader_liveness(r), BB_LIVENESS_ALIVE);
	bb_reader_close(r);

	/* boxes are found by header, whatever their name (same owner: a
	 * claim the process could have made) */
	synth_hdr(&s)->sequence = 9;
	cr_assert_eq(synth_save(&s, path_of("blackbox.1.2.3")), 0);
	cr_assert_eq(bb_reader_open_pid(getpid(), dir, BB_OPEN_SNAPSHOT, &r, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(bb_reader_info(r)->sequence, 9);
	bb_reader_close(r);

	/* map the older one: now it is the box the process maps */
	snprintf(name, sizeof(name), "blackbox.%d.%llu.0", getpid(),
		 (unsigned long long)synth_hdr(&s)->starttime);
	fd = open(path_of(name), O_RDONLY);
	m = mmap(NULL, s.len, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	close(fd);
	cr_assert_eq(bb_reader_open_pid(getpid(), dir, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_info(r)->sequence, 0);
	cr_expect_eq(bb_reader_liveness(r), BB_LIVENESS_ALIVE);
	cr_expect(strstr(bb_reader_info(r)->path, name));
	bb_reader_close(r);
	munmap(m, s.len);

	cr_expect_eq(bb_reader_open_pid(999999999, dir, 0, &r, err, sizeof(err)), -ESRCH);
	cr_expect(strstr(err, "no box of pid 999999999"), "%s", err);
	synth_free(&s);
}

Test(open, liveness_by_phase)
{
	struct synth s;
	struct bb_reader *r;
	static const struct { uint32_t phase; int want; } cases[] = {
		{ BB_PHASE_RUNNING, BB_LIVENESS_ORPHANED }, { BB_PHASE_EXITED, BB_LIVENESS_EXITED },
		{ BB_PHASE_CRASHED, BB_LIVENESS_CRASHED }, { BB_PHASE_CLOSED, BB_LIVENESS_CLOSED },
	};

	synth_init(&s, 1, 4096);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		synth_hdr(&s)->phase = cases[i].phase;
		cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0);
		cr_expect_eq(bb_reader_liveness(r), cases[i].want, "phase %u", cases[i].phase);
		bb_reader_close(r);
	}
	/* memory copy: pid + start time decide */
	synth_hdr(&s)->phase = BB_PHASE_RUNNING;
	synth_make_alive(&s);
	cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0);
	cr_expect_eq(bb_reader_liveness(r), BB_LIVENESS_ALIVE);
	bb_reader_close(r);
	/* another boot: never alive */
	strcpy(synth_hdr(&s)->boot_id, "00000000-0000-0000-0000-000000000000");
	cr_assert_eq(bb_reader_open_mem(s.buf, s.len, 0, &r, err, sizeof(err)), 0);
	cr_expect_eq(bb_reader_liveness(r), BB_LIVENESS_ORPHANED);
	bb_reader_close(r);
	/* a file nobody maps: not alive even with pid + start time right */
	synth_make_alive(&s);
	{
		FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

		cr_assert(fgets(synth_hdr(&s)->boot_id, 40, f));
		synth_hdr(&s)->boot_id[36] = '\0';
		fclose(f);
	}
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	cr_assert_eq(bb_reader_open_path(path_of("box"), BB_OPEN_SNAPSHOT, &r, err, sizeof(err)),
		     0);
	cr_expect_eq(bb_reader_liveness(r), BB_LIVENESS_ORPHANED);
	bb_reader_close(r);
	cr_expect_str_eq(bb_liveness_name(BB_LIVENESS_ALIVE), "alive");
	cr_expect_str_eq(bb_liveness_name(BB_LIVENESS_ORPHANED), "orphaned");
	cr_expect_str_eq(bb_liveness_name(42), "unknown");
	synth_free(&s);
}

static int count_names(int dfd, const char *name, void *arg)
{
	(void)dfd;
	cr_expect(!strncmp(name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)), "%s", name);
	(*(int *)arg)++;
	return 0;
}

Test(open, scan_dir_lists_prefixed_names_only)
{
	int n = 0, fd;

	fd = open(path_of("blackbox.1.2.0"), O_CREAT | O_WRONLY, 0600);
	close(fd);
	fd = open(path_of("other"), O_CREAT | O_WRONLY, 0600);
	close(fd);
	cr_assert_eq(symlink("/nonexistent", path_of("blackbox.dangling")), 0);
	cr_expect_eq(bb_scan_dir(dir, count_names, &n), 0);
	cr_expect_eq(n, 2);
	cr_expect_eq(bb_scan_dir(path_of("nope"), count_names, &n), -ENOENT);
}

Test(open, save_reads_back)
{
	struct synth s;
	struct bb_reader *r;
	int fd, n1 = 0, n2 = 0;

	synth_init(&s, 2, 4096);
	for (int i = 0; i < 300; i++) /* wraps ring 0 */
		synth_str(&s, 0, (uint64_t)i, "some text of a record");
	synth_str(&s, 1, 1, "one");
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	cr_assert_eq(bb_reader_open_path(path_of("box"), 0, &r, err, sizeof(err)), 0);
	cr_assert_eq(bb_reader_walk(r, 0, count_rec, &n1), 0);
	fd = open(path_of("copy"), O_WRONLY | O_CREAT, 0600);
	cr_assert_eq(bb_reader_save(r, fd), 0);
	close(fd);
	bb_reader_close(r);
	cr_assert_eq(bb_reader_open_path(path_of("copy"), 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, 0, count_rec, &n2), 0);
	cr_expect_eq(n1, n2);
	cr_expect_gt(n1, 100);
	bb_reader_close(r);
	synth_free(&s);
}
