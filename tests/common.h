/* SPDX-License-Identifier: MIT */
/* tests/common.h - small helpers shared by the test suites (header-only). */
#ifndef BB_TESTS_COMMON_H
#define BB_TESTS_COMMON_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
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

/* @name in bbt_dir; static buffer. */
static inline const char *bbt_path(const char *name)
{
	static char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", bbt_dir, name);
	return p;
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

/*
 * bbt_record_crc - the FORMAT.md §11 checksum of the record (or state slot,
 * or crash area) of @len bytes at @rec whose committed seq word is @seq:
 * CRC32C over seq (4 little-endian bytes), rec[4 .. 8), rec[16 .. len-4),
 * then rec[8 .. 16) (the stamp last).  Computed
 * one bit at a time, sharing no code or table with the library, so a test
 * that compares the two checks the library's CRC independently.
 */
static inline uint32_t bbt_crc32c(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
	}
	return c;
}

static inline uint32_t bbt_record_crc(uint32_t seq, const uint8_t *rec, uint32_t len)
{
	uint8_t le[4] = { (uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)(seq >> 16),
			  (uint8_t)(seq >> 24) };

	uint32_t c = bbt_crc32c(0xffffffffu, le, 4);

	c = bbt_crc32c(c, rec + 4, 4);              /* len, tag, flags */
	c = bbt_crc32c(c, rec + 16, len - 20);      /* extensions and value */
	return bbt_crc32c(c, rec + 8, 8) ^ 0xffffffffu;   /* ts, last */
}

/* Does the record of @len bytes at @rec carry that checksum in its last 4
 * bytes (stored little-endian)? */
static inline int bbt_record_crc_ok(uint32_t seq, const uint8_t *rec, uint32_t len)
{
	const uint8_t *t = rec + len - 4;

	return bbt_record_crc(seq, rec, len) ==
	       ((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24);
}

#endif /* BB_TESTS_COMMON_H */
