/* SPDX-License-Identifier: MIT */
/* tests/common.h - small helpers shared by the test suites (header-only). */
#ifndef BB_TESTS_COMMON_H
#define BB_TESTS_COMMON_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh private directory under /tmp (or $TMPDIR); caller frees. */
static inline char *bbt_mkdtemp(void)
{
	const char *base = getenv("TMPDIR");
	char *p;

	if (!base || !*base)
		base = "/tmp";
	if (asprintf(&p, "%s/bbtest.XXXXXX", base) < 0)
		abort();
	if (!mkdtemp(p))
		abort();
	return p;
}

/* Remove a directory created by bbt_mkdtemp() and the files directly in it. */
static inline void bbt_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			unlinkat(dirfd(d), e->d_name, 0);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		}
		closedir(d);
	}
	rmdir(dir);
}

/*
 * Criterion fixture: every test gets a fresh BLACKBOX_DIR (bbt_dir), and no
 * BLACKBOX_SIZE / BLACKBOX_DISABLE from the environment.
 *   TestSuite(name, .init = bbt_setup_dir, .fini = bbt_teardown_dir);
 */
static char *bbt_dir;

static inline void bbt_setup_dir(void)
{
	bbt_dir = bbt_mkdtemp();
	unsetenv("BLACKBOX_SIZE");
	unsetenv("BLACKBOX_DISABLE");
	setenv("BLACKBOX_DIR", bbt_dir, 1);
}

static inline void bbt_teardown_dir(void)
{
	bbt_rmdir(bbt_dir);
	free(bbt_dir);
}

/* Count entries of @dir whose name starts with @prefix. */
static inline int bbt_count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

#endif /* BB_TESTS_COMMON_H */
