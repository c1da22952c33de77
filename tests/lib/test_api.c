/* SPDX-License-Identifier: MIT */
/*
 * Description: the writer API's contract: errors before bb_init and after
 * bb_close, invalid arguments, bb_init twice, naming, file mode, the
 * environment, ENOSPC on a full tmpfs, truncation of oversize values,
 * heartbeats and snapshots (bb_watchdog).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"
#include "collect.h"


TestSuite(api, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 60);

Test(api, calls_before_init_fail_cleanly)
{
	char buf[64];

	cr_assert_eq(bb_write_str("x"), -ENODEV);
	cr_assert_eq(bb_write_i64(1), -ENODEV);
	cr_assert_eq(bb_write_kv("k", "v"), -ENODEV);
	cr_assert_eq(bb_path(buf, sizeof(buf)), -ENODEV);
	cr_assert_eq(bb_close(), -ENODEV);
	cr_assert_eq(bb_dump(1), -ENODEV);
}

Test(api, invalid_arguments)
{
	struct bb_field bad_type = { .key = "k", .type = (enum bb_type)99 };
	struct bb_field null_key = { .key = NULL, .type = BB_TYPE_I64 };
	struct bb_field null_str = { .key = "k", .type = BB_TYPE_STR, .v.s = NULL };
	struct bb_field many[BB_EVENT_MAX_FIELDS + 1];
	char small[4];

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_write_str(NULL), -EINVAL);
	cr_assert_eq(bb_write_kv(NULL, "v"), -EINVAL);
	cr_assert_eq(bb_write_kv("k", NULL), -EINVAL);
	cr_assert_eq(bb_write_kv_i64(NULL, 1), -EINVAL);
	cr_assert_eq(bb_write_kv_u64(NULL, 1), -EINVAL);
	cr_assert_eq(bb_write_kv_f64(NULL, 1), -EINVAL);
	cr_assert_eq(bb_write_kv_bool(NULL, 1), -EINVAL);
	cr_assert_eq(bb_write_bytes(NULL, 3), -EINVAL);
	cr_assert_eq(bb_write_bytes(NULL, 0), 0);
	cr_assert_eq(bb_write_event(NULL, NULL, 0), -EINVAL);
	cr_assert_eq(bb_write_event("e", &bad_type, 1), -EINVAL);
	cr_assert_eq(bb_write_event("e", &null_key, 1), -EINVAL);
	cr_assert_eq(bb_write_event("e", &null_str, 1), -EINVAL);
	for (size_t i = 0; i < BB_EVENT_MAX_FIELDS + 1; i++)
		many[i] = BB_I64("k", (int64_t)i);
	cr_assert_eq(bb_write_event("e", many, BB_EVENT_MAX_FIELDS + 1), -EINVAL);
	cr_assert_eq(bb_write_event("e", many, BB_EVENT_MAX_FIELDS), 0);
	cr_assert_eq(bb_path(small, sizeof(small)), -ERANGE);
	cr_assert_eq(bb_path(NULL, 10), -EINVAL);
}

Test(api, init_twice_and_close)
{
	char path[4096];
	struct stat st;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_init(0), -EALREADY);
	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	cr_assert_eq(strncmp(path, bbt_dir, strlen(bbt_dir)), 0, "box %s not in BLACKBOX_DIR %s", path, bbt_dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(bb_write_str("before close"), 0);
	cr_assert_eq(bb_close(), 0);
	cr_assert_eq(stat(path, &st), -1, "bb_close must unlink the box");
	cr_assert_eq(bb_write_str("after close"), -ENODEV);
	cr_assert_eq(bb_close(), -ENODEV);
	/* A new box after close works. */
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_write_str("again"), 0);
}

Test(api, mode_is_0600_by_default_and_group_on_request)
{
	char path[4096];
	struct stat st;
	struct bb_options o = { .mode = 0640 };

	umask(0);
	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
	cr_assert(S_ISREG(st.st_mode));
	bb_close();
	umask(077);  /* fchmod, not the umask, decides */
	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640, "mode %o", st.st_mode & 0777);
}

Test(api, name_says_pid_and_never_collides)
{
	char path[4096], planted[4096], expect[128];
	struct bb_reader *r;
	int fd;

	/* A file (left by an earlier image of this process after exec, or
	 * created by another user to squat the name) already holds sequence
	 * 0: bb_init takes a random one (FORMAT.md §2), O_EXCL. */
	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	snprintf(expect, sizeof(expect), "/blackbox.%d.", (int)getpid());
	cr_assert_not_null(strstr(path, expect), "%s lacks %s", path, expect);
	cr_assert_eq(strcmp(path + strlen(path) - 2, ".0"), 0, "%s", path);
	snprintf(planted, sizeof(planted), "%s", path);
	bb_close();
	fd = open(planted, O_CREAT | O_EXCL | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_str_neq(path, planted);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	cr_assert_neq(bb_reader_info(r)->sequence, 0);
	snprintf(expect, sizeof(expect), ".%" PRIu32, bb_reader_info(r)->sequence);
	cr_assert_eq(strcmp(path + strlen(path) - strlen(expect), expect), 0,
		     "%s does not end in the header's sequence %s", path, expect);
	cr_assert_eq(bb_reader_info(r)->pid, getpid());
	bb_reader_close(r);
}

Test(api, header_identity)
{
	char path[4096];
	struct bb_reader *r;
	const struct bb_box_info *in;
	char boot[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	cr_assert_not_null(f);
	cr_assert_not_null(fgets(boot, sizeof(boot), f));
	fclose(f);
	boot[strcspn(boot, "\n")] = '\0';
	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	in = bb_reader_info(r);
	cr_assert_eq(in->pid, getpid());
	cr_assert_eq(in->uid, getuid());
	cr_assert_str_eq(in->boot_id, boot);
	cr_assert_gt(in->starttime, 0);
	cr_assert_gt(strlen(in->comm), 0);
	cr_assert_gt(strlen(in->cmdline), 0);
	cr_assert_eq(in->phase, BB_PHASE_RUNNING);
	cr_assert_eq(in->version_major, BB_FORMAT_MAJOR);
	/* the default clock: the TSC where the kernel trusts it, else
	 * CLOCK_MONOTONIC (tests/lib/test_clock.c checks the choice) */
	cr_assert(in->clock == BB_CLOCK_MONOTONIC || in->clock == BB_CLOCK_TSC);
	cr_assert_eq(in->clock_requested, 0);
	cr_assert_neq(in->clock_reason, BB_CLOCK_WHY_UNKNOWN);
	/* the shared and the important ring; no thread has written yet */
	cr_assert_eq(in->stream_count, 2);
	/* the default box is the size its name says, in segments of 8 KiB */
	cr_assert_eq(in->box_size, BB_DEFAULT_SIZE);
	cr_assert_eq(in->seg_size, 8192);
	cr_assert_gt(in->seg_count, 400);
	cr_assert_eq(in->thread_count, 4 * in->seg_count);
	cr_assert_eq(bb_reader_liveness(r), BB_LIVENESS_ALIVE);
	bb_reader_close(r);
}

Test(api, environment_size_and_disable)
{
	char path[4096];
	struct bb_reader *r;

	setenv("BLACKBOX_SIZE", "bogus", 1);
	cr_assert_eq(bb_init(0), -EINVAL);
	setenv("BLACKBOX_SIZE", "1m", 1);
	cr_assert_eq(bb_init(0), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	cr_assert_eq(bb_reader_info(r)->box_size, 1u << 20);
	bb_reader_close(r);
	bb_close();

	setenv("BLACKBOX_DISABLE", "1", 1);
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_write_str("nothing"), 0);
	cr_assert_eq(bb_write_kv("k", "v"), 0);
	cr_assert_eq(bbt_count_prefix(bbt_dir, BB_NAME_PREFIX), 0, "disabled must create nothing");
}

Test(api, too_small_or_bad_segment_size)
{
	struct bb_options o = { .segment_size = 5000 };

	cr_assert_eq(bb_init(1024), -EINVAL);
	cr_assert_eq(bb_init_opts(&o), -EINVAL);
	o.segment_size = 4096;
	o.segment_count = 5000; /* more than BB_SEG_MAX_COUNT */
	cr_assert_eq(bb_init_opts(&o), -EINVAL);
	o.segment_count = 2;
	o.size = 8192;          /* too small for two segments */
	cr_assert_eq(bb_init_opts(&o), -EINVAL);
	o.size = 0;
	cr_assert_eq(bb_init_opts(&o), 0);
}

/* A full tmpfs makes bb_init fail with ENOSPC, never a write SIGBUS later. */
Test(api, full_tmpfs_gives_enospc)
{
	char mnt[4096];
	struct bb_options o = { .dir = mnt, .size = 8u << 20 };

	snprintf(mnt, sizeof(mnt), "%s/small", bbt_dir);
	cr_assert_eq(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0)
		cr_skip_test("cannot mount a tmpfs here (%s)", strerror(errno));
	cr_expect_eq(bb_init_opts(&o), -ENOSPC);
	cr_expect_eq(bbt_count_prefix(mnt, BB_NAME_PREFIX), 0, "a failed init leaves no file");
	o.size = 512u << 10;
	cr_expect_eq(bb_init_opts(&o), 0);
	for (int i = 0; i < 100000; i++)
		cr_expect_eq(bb_write_kv_i64("i", i), 0);
	bb_close();
	umount(mnt);
}

/* Oversize values are truncated and flagged, never dropped or overflowed. */
Test(api, oversize_values_truncated_and_flagged)
{
	struct bb_options o = { .segment_size = 65536, .segment_count = 8 };
	struct tcollect c;
	char path[4096];
	static char big[100000];
	struct bb_reader *r;
	uint32_t maxrec;

	memset(big, 'x', sizeof(big) - 1);
	cr_assert_eq(bb_init_opts(&o), 0);
	bb_path(path, sizeof(path));
	cr_assert_eq(bb_write_str(big), 0);
	cr_assert_eq(bb_write_kv("key", big), 0);
	cr_assert_eq(bb_write_bytes(big, sizeof(big)), 0);
	{
		struct bb_field f[] = { BB_STR("a", "short"), BB_STR("b", big), BB_I64("c", 3) };

		cr_assert_eq(bb_write_event("ev", f, 3), 0);
	}
	cr_assert_eq(bb_write_str("small"), 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, NULL, 0), 0);
	maxrec = bb_reader_info(r)->max_record;
	cr_assert_eq(bb_reader_info(r)->truncated, 4);
	bb_reader_close(r);

	/* A record of max_record bytes fills a segment (a record never
	 * spans two): the four big ones are all there, truncated and
	 * flagged, the newest intact. */
	tcollect_path(path, &c);
	cr_assert_eq(c.n, 5, "got %zu records", c.n);
	for (size_t i = 0; i + 1 < c.n; i++) {
		cr_assert(c.r[i].flags & BB_RF_TRUNCATED, "record %zu not flagged", i);
		if (c.r[i].tag != BB_TAG_EVENT)
			cr_assert_gt(c.r[i].n + 64, maxrec / 2, "truncated too much: %zu", c.r[i].n);
		cr_assert_gt(c.r[i].vlen + 64, maxrec);
		cr_assert_leq(c.r[i].vlen + 16, maxrec);
	}
	cr_assert_str_eq(c.r[c.n - 2].key, "ev");
	cr_assert_eq(c.r[c.n - 2].nfields, 3);
	cr_assert_eq(c.r[c.n - 1].flags & BB_RF_TRUNCATED, 0);
	cr_assert_str_eq(c.r[c.n - 1].text, "small");
	free(c.r);
}

/* A truncated string never ends inside a UTF-8 sequence. */
/* The one record's value and flags, whatever its length (the collector
 * keeps the first 2047 bytes of a text) */
struct one_value { uint8_t v[8192]; size_t n; unsigned flags, records; };

static int one_value_cb(const struct bb_record *rec, void *arg)
{
	struct one_value *o = arg;

	o->records++;
	o->flags = rec->flags;
	o->n = rec->value_len < sizeof(o->v) ? rec->value_len : sizeof(o->v);
	memcpy(o->v, rec->value, o->n);
	return 0;
}

Test(api, truncation_respects_utf8)
{
	struct bb_options o = { .segment_size = 4096, .segment_count = 1 };
	static char s[8192];
	static struct one_value v;
	struct bb_reader *r;
	char path[4096];

	/* An ASCII prefix of 0..2 bytes moves the cut point across the two
	 * bytes of each é. */
	for (int shift = 0; shift < 3; shift++) {
		memset(s, 'x', (size_t)shift);
		for (size_t i = (size_t)shift; i + 2 < sizeof(s); i += 2)
			memcpy(s + i, "\xc3\xa9", 2);  /* é */
		cr_assert_eq(bb_init_opts(&o), 0);
		bb_path(path, sizeof(path));
		cr_assert_eq(bb_write_str(s), 0);
		memset(&v, 0, sizeof(v));
		cr_assert_eq(bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, NULL, 0), 0);
		cr_assert_eq(bb_reader_walk(r, 0, one_value_cb, &v), 0);
		bb_reader_close(r);
		cr_assert_eq(v.records, 1);
		cr_assert(v.flags & BB_RF_TRUNCATED);
		cr_assert_lt(v.n, sizeof(v.v), "a value as long as the string");
		for (size_t i = 0; i < v.n; i++)
			if (v.v[i] == 0xc3)
				cr_assert_lt(i + 1, v.n, "cut after a lead byte");
		bb_close();
	}
}

/* The header and this thread's slot of the open box, read from its file. */
static void read_watch(struct bb_header *h, struct bb_thread_slot *mine)
{
	char path[4096];
	FILE *f;

	cr_assert_geq(bb_path(path, sizeof(path)), 0);
	cr_assert_not_null(f = fopen(path, "rb"));
	cr_assert_eq(fread(h, sizeof(*h), 1, f), 1);
	memset(mine, 0, sizeof(*mine));
	for (uint32_t i = 0; i < h->thread_count; i++) {
		struct bb_thread_slot s;

		cr_assert_eq(fseek(f, (long)(h->thread_table_offset + (uint64_t)i * sizeof(s)),
				 SEEK_SET), 0);
		cr_assert_eq(fread(&s, sizeof(s), 1, f), 1);
		if (s.claim == BB_RING_OWNED && s.tid == (int32_t)gettid())
			*mine = s;
	}
	fclose(f);
}

/* bb_watchdog(3): the deadline and the beats in this thread's slot and the
 * header (FORMAT.md §14), errors before and after, the snapshot count. */
Test(api, watchdog_heartbeat_snapshot)
{
	struct bb_header h;
	struct bb_thread_slot s;
	uint64_t first;

	cr_assert_eq(bb_heartbeat(), -ENODEV);
	cr_assert_eq(bb_watchdog(100), -ENODEV);
	cr_assert_eq(bb_snapshot("x"), -ENODEV);
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_heartbeat(), -ENOENT, "no deadline declared yet");
	cr_assert_eq(bb_watchdog(BB_WATCHDOG_MAX_MS + 1), -EINVAL);
	cr_assert_eq(bb_watchdog(300), 0);
	cr_assert_eq(bb_watchdog(200), 0);
	read_watch(&h, &s);
	cr_assert_eq(h.version_minor, BB_FORMAT_MINOR);
	cr_assert_eq(h.watchdog_ms, 200, "the box's smallest deadline");
	cr_assert_eq(s.watchdog_ms, 200);
	cr_assert_neq(s.heartbeat, 0);
	first = s.heartbeat;
	usleep(2000);
	cr_assert_eq(bb_heartbeat(), 0);
	cr_assert_eq((bb_heartbeat)(), 0, "the library's, as the inline one");
	read_watch(&h, &s);
	cr_assert_gt(s.heartbeat, first, "the beat moves the stamp");
	cr_assert_eq(bb_snapshot("why"), 0);
	cr_assert_eq(bb_snapshot(NULL), 0);
	read_watch(&h, &s);
	cr_assert_eq(h.snapshot_seq, 2);
	cr_assert_eq(bb_watchdog(0), 0);
	read_watch(&h, &s);
	cr_assert_eq(s.watchdog_ms, 0, "withdrawn");
	cr_assert_eq(bb_heartbeat(), -ENOENT);
	cr_assert_eq(bb_watchdog(100), 0);
	cr_assert_eq(bb_close(), 0);
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_heartbeat(), -ENOENT, "a deadline belongs to its box");
}
