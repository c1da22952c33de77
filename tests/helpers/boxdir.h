/* SPDX-License-Identifier: MIT */
/* tests/helpers/boxdir.h - a box directory as the process tests see it:
 * program copies, a pid's box, the budget's count, removal of a fixture
 * tree (header-only; Criterion asserts).  Shared by tests/reap and
 * tests/budget. */
#ifndef BB_TESTS_BOXDIR_H
#define BB_TESTS_BOXDIR_H

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

/* Copy the file @src to the new file @dst, mode @mode (whatever the umask). */
static inline void bbt_copy_file(const char *src, const char *dst, mode_t mode)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	cr_assert(in >= 0, "open %s: %s", src, strerror(errno));
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	cr_assert(out >= 0, "create %s: %s", dst, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n, "write %s", dst);
	cr_assert_eq(n, 0, "read %s: %s", src, strerror(errno));
	cr_assert_eq(fchmod(out, mode), 0);
	close(in);
	close(out);
}

/* Name of the (first) box of @pid in @dir, or "" if none; static buffer. */
static inline const char *bbt_box_of(const char *dir, pid_t pid)
{
	static char name[256];
	char pre[64];
	struct dirent *e;
	DIR *d = opendir(dir);

	name[0] = '\0';
	snprintf(pre, sizeof(pre), BB_NAME_PREFIX "%ld.", (long)pid);
	cr_assert(d, "opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, pre, strlen(pre))) {
			snprintf(name, sizeof(name), "%s", e->d_name);
			break;
		}
	closedir(d);
	return name;
}

/* bb_reader_state() callback: the budget's count in a box's state table
 * (the slot rendered as bb-extract shows it: "blackbox.budget_removed=N")
 * into *(uint64_t *)@arg. */
static inline int bbt_budget_removed_cb(const struct bb_state_entry *e, void *arg)
{
	static const char key[] = "blackbox.budget_removed=";
	char text[128];

	if (e->status == BB_SLOT_OK &&
	    bb_format_value(BB_TAG_KV, 0, e->value, e->value_len, text, sizeof(text)) > 0 &&
	    !strncmp(text, key, sizeof(key) - 1))
		*(uint64_t *)arg = strtoull(text + sizeof(key) - 1, NULL, 10);
	return 0;
}

/* nftw() callback removing a tree (FTW_DEPTH | FTW_PHYS). */
static inline int bbt_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p), 0;
}

#endif /* BB_TESTS_BOXDIR_H */
