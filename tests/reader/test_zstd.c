/* SPDX-License-Identifier: MIT */
/* Description: a compressed box (a .box.zst archive of bb-reap) reads as
 * the box it holds, and every stream that would make the reader's memory
 * or work follow anything but the header is refused: more bytes than the
 * header's box_size, a cut stream, garbage, another owner's file, more
 * compressed bytes than such a box can need. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/stat.h>
#include <zstd.h>

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

TestSuite(zstd, .init = setup, .fini = teardown);

static char *path_of(const char *name)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* @len bytes of @buf as one zstd frame into @name. */
static size_t put_zst(const char *name, const void *buf, size_t len)
{
	size_t cap = ZSTD_compressBound(len), n;
	void *z = malloc(cap);
	int fd;

	cr_assert(z);
	n = ZSTD_compress(z, cap, buf, len, 3);
	cr_assert(!ZSTD_isError(n));
	fd = open(path_of(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, z, n), (ssize_t)n);
	close(fd);
	free(z);
	return n;
}

/* A box with records in two rings. */
static void make_box(struct synth *s)
{
	synth_init(s, 2, 4096);
	for (int i = 0; i < 40; i++)
		synth_str(s, (uint32_t)(i % 2), 1000 + (uint64_t)i, "a record of the box");
}

static int count_cb(const struct bb_record *rec, void *arg)
{
	(void)rec;
	++*(int *)arg;
	return 0;
}

Test(zstd, a_compressed_box_reads_as_the_box)
{
	struct synth s;
	struct bb_reader *r, *raw;
	const void *a, *b;
	size_t la, lb;
	int na = 0, nb = 0;

	make_box(&s);
	cr_assert_eq(synth_save(&s, path_of("box")), 0);
	put_zst("box.zst", s.buf, s.len);
	cr_assert_eq(bb_reader_open_path(path_of("box.zst"), 0, &r, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(bb_reader_open_path(path_of("box"), BB_OPEN_SNAPSHOT, &raw, err,
					 sizeof(err)), 0, "%s", err);
	cr_expect_eq(bb_reader_info(r)->file_size, s.len);
	cr_expect_eq(bb_reader_info(r)->pid, bb_reader_info(raw)->pid);
	cr_expect_str_eq(bb_reader_info(r)->path, path_of("box.zst"));
	a = bb_reader_data(r, &la);
	b = bb_reader_data(raw, &lb);
	cr_assert(a && b);
	cr_assert_eq(la, lb);
	cr_expect(!memcmp(a, b, la), "the decompressed copy differs from the box");
	bb_reader_walk(r, 0, count_cb, &na);
	bb_reader_walk(raw, 0, count_cb, &nb);
	cr_expect_eq(na, 40);
	cr_expect_eq(na, nb);
	bb_reader_close(r);
	bb_reader_close(raw);
	synth_free(&s);
}

/* Open @name and expect @want with @phrase in the message. */
static void expect_refused(const char *name, int want, const char *phrase)
{
	struct bb_reader *r = NULL;
	int rc = bb_reader_open_path(path_of(name), 0, &r, err, sizeof(err));

	cr_expect_eq(rc, want, "rc %d (%s), want %d: %s", rc, strerror(-rc), want, err);
	cr_expect_null(r);
	cr_expect(strstr(err, phrase), "message \"%s\" lacks \"%s\"", err, phrase);
	bb_reader_close(r);
}

Test(zstd, more_than_box_size_is_refused)
{
	struct synth s;
	uint8_t *big;

	make_box(&s);
	/* the box and a megabyte more in the stream: a reader stops at
	 * box_size instead of following it */
	big = calloc(1, s.len + (1u << 20));
	cr_assert(big);
	memcpy(big, s.buf, s.len);
	put_zst("grown.zst", big, s.len + (1u << 20));
	expect_refused("grown.zst", -EBADMSG, "decompresses to more than its header's box_size");
	free(big);
	synth_free(&s);
}

Test(zstd, a_stream_cut_short_is_refused)
{
	struct synth s;
	size_t n;

	make_box(&s);
	/* the box less two pages: cut */
	put_zst("short.zst", s.buf, s.len - 8192);
	expect_refused("short.zst", -EBADMSG, "cut after it was written");
	/* the compressed file cut in its middle */
	n = put_zst("cut.zst", s.buf, s.len);
	cr_assert_eq(truncate(path_of("cut.zst"), (off_t)(n / 2)), 0);
	expect_refused("cut.zst", -EBADMSG, "ends before its frame does");
	synth_free(&s);
}

Test(zstd, garbage_after_the_magic_is_refused)
{
	uint8_t junk[8192];
	int fd = open(path_of("junk.zst"), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	memset(junk, 0x5a, sizeof(junk));
	junk[0] = 0x28; junk[1] = 0xb5; junk[2] = 0x2f; junk[3] = 0xfd;
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	expect_refused("junk.zst", -EBADMSG, "compressed box:");
}

Test(zstd, a_header_that_is_not_a_box_is_refused)
{
	struct synth s;

	make_box(&s);
	synth_hdr(&s)->magic = 0x1234;
	put_zst("notabox.zst", s.buf, s.len);
	expect_refused("notabox.zst", -EBADMSG, "bad magic");
	synth_free(&s);
}

Test(zstd, more_compressed_bytes_than_the_box_can_need_are_refused)
{
	struct synth s;
	size_t n;

	make_box(&s);
	n = put_zst("padded.zst", s.buf, s.len);
	/* bytes after the frame */
	cr_assert_eq(truncate(path_of("padded.zst"), (off_t)n + 1), 0);
	expect_refused("padded.zst", -EBADMSG, "bytes after the compressed box");
	/* a (sparse) file far larger than any stream of such a box: refused
	 * by its size, nothing of it read beyond the header's frame */
	cr_assert_eq(truncate(path_of("padded.zst"), (off_t)1 << 30), 0);
	expect_refused("padded.zst", -EBADMSG, "more than a");
	synth_free(&s);
}

Test(zstd, another_owners_file_is_refused_unless_any_owner)
{
	struct synth s;
	struct bb_reader *r = NULL;

	make_box(&s);
	synth_hdr(&s)->uid = getuid() + 1;
	put_zst("other.zst", s.buf, s.len);
	expect_refused("other.zst", -EPERM, "differs from the box's uid");
	cr_expect_eq(bb_reader_open_path(path_of("other.zst"), BB_OPEN_ANY_OWNER, &r, err,
					 sizeof(err)), 0, "%s", err);
	bb_reader_close(r);
	synth_free(&s);
}

/* --list of an archive directory: the compressed archives are boxes */
Test(zstd, a_scan_lists_compressed_archives)
{
	struct synth s;
	struct bb_box_entry *v;
	size_t n;

	make_box(&s);
	put_zst("blackbox-0-synth-1-20260101T000000Z.box.zst", s.buf, s.len);
	cr_assert_eq(bb_reader_scan(dir, &v, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_expect_eq(v[0].error, 0, "%s", v[0].problem);
	cr_expect_eq(v[0].info.pid, synth_hdr(&s)->pid);
	bb_reader_scan_free(v);
	synth_free(&s);
}
