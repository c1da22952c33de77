/* SPDX-License-Identifier: MIT */
/* tests/helpers/common.h - small helpers shared by the test suites (header-only). */
#ifndef BB_TESTS_COMMON_H
#define BB_TESTS_COMMON_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
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

/*
 * bbt_check_double - is @got (NUL-terminated) what the project's one printer
 * of doubles must print for @d (shared/double.h), checked with libc and
 * independently of it: strtod() reads it back as @d; no decimal with fewer
 * significant digits does (libc's %.*e rounds to nearest at each length, so
 * its first length that reads back is the shortest but for a power of two,
 * whose spacing below is finer: there a shorter or equal one may be
 * chosen, not a longer one); at the same length the digits are libc's (the
 * nearest); and the layout is %g's with precision max(15, digits): no
 * trailing zeros, exponent form ("1e+300", "-2.5e-07") when the exponent is
 * below -4 or at least that precision.  Finite doubles; "-0" for -0.0.
 * Returns NULL or what is wrong (a static string).
 */
static inline const char *bbt_check_double(double d, const char *got)
{
	char ref[40], dig[24], want[48], *e;
	int p, nd = 0, x, prec, n = 0, gnd = 0;
	const char *q;

	if (d == 0)
		return strcmp(got, signbit(d) ? "-0" : "0") ? "zero" : NULL;
	if (strtod(got, NULL) != d)
		return "does not read back as the double";
	for (p = 1; p <= 17; p++) {
		snprintf(ref, sizeof(ref), "%.*e", p - 1, d);
		if (strtod(ref, NULL) == d)
			break;
	}
	/* the significant digits of got (an integer's trailing zeros are not) */
	for (q = got; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9' && (gnd || *q != '0'))
			dig[gnd++] = *q;
	while (gnd > 1 && dig[gnd - 1] == '0')
		gnd--;
	/* libc's digits and exponent at length p, trailing zeros dropped */
	for (q = ref; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9')
			dig[nd++] = *q;
	x = (int)strtol(strchr(ref, 'e') + 1, &e, 10);
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	dig[nd] = '\0';
	if (gnd > nd)
		return "longer than the shortest";
	if (gnd < nd) { /* a power of two: shorter is right, layout unchecked */
		uint64_t b;

		memcpy(&b, &d, 8);
		return (b & ((UINT64_C(1) << 52) - 1)) == 0 ? NULL : "shorter than libc's shortest";
	}
	/* %g's layout of dig * 10^x with precision max(15, nd) */
	prec = nd > 15 ? nd : 15;
	if (d < 0)
		want[n++] = '-';
	if (x < -4 || x >= prec) {
		n += snprintf(want + n, sizeof(want) - (size_t)n, "%c%s%s", dig[0],
			      nd > 1 ? "." : "", dig + 1);
		snprintf(want + n, sizeof(want) - (size_t)n, "e%c%02d", x < 0 ? '-' : '+',
			 x < 0 ? -x : x);
	} else if (x < 0) {
		n += snprintf(want + n, sizeof(want) - (size_t)n, "0.");
		for (int i = -1; i > x; i--)
			want[n++] = '0';
		snprintf(want + n, sizeof(want) - (size_t)n, "%s", dig);
	} else {
		for (int i = 0; i <= x; i++)
			want[n++] = i < nd ? dig[i] : '0';
		want[n] = '\0';
		if (nd > x + 1)
			snprintf(want + n, sizeof(want) - (size_t)n, ".%s", dig + x + 1);
	}
	return strcmp(got, want) ? "not libc's digits in %g's layout" : NULL;
}

#endif /* BB_TESTS_COMMON_H */
